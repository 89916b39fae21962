//! Task cards: the agent's list, opening, claim, progress, finish, fail and relay; the
//! person's list, opening, confirm and reopen. The rules are `fleetdesk_tasks::rules`; each
//! write runs whole in the adapter's transaction.

use super::common::{CodeInput, CursorInput, IsoTimeInput};
use super::decisions::EvidenceIn;
use super::drafts::IdPath;
use super::relay::{OnBehalfOf, Origin, RelayRecord, StaffOnBehalfOf};
use crate::ctx::Ctx;
use crate::error::ApiError;
use crate::fields::{Cursor, Limit, List, Text, Utc, inline_schema, limit_or};
use crate::input::{Nothing, Req};
use crate::op::{ErasedOp, HttpMethod, OpSpec, Reply, operation};
use fleetdesk_kernel::Platform;
use fleetdesk_tasks::ports::{
    Actor, ListQuery, MoveRequest, Moved, OpenRequest, Opened, Opener, TargetRef, TaskRecord,
    TaskScope,
};
use fleetdesk_tasks::rules::{Move, TaskRefusal};
use fleetdesk_tasks::{TargetType, TaskKind, TaskStatus};
use fleetdesk_tenancy::{AgentCaller, MemberCaller, PersonalAccess, Scope};
use jiff::Timestamp;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use std::borrow::Cow;
use utoipa::openapi::{RefOr, Schema};
use utoipa::{PartialSchema, ToSchema};
use uuid::Uuid;
use validator::Validate;

const LIST_RULES: &str = "Filter `status` (comma-separated statuses among pending_pickup, \
in_progress, pending_confirmation, done, failed, cancelled; default \
pending_pickup,in_progress,pending_confirmation) and `kind`; newest first, paged with limit \
1-200 (default 50) and cursor (`next_cursor`, null on the last page). Each card carries its \
flags: `stale` (in_progress with no progress for over 2 hours), `overdue` (past due_at and not \
done, failed or cancelled), `confirm_overdue` (pending_confirmation for over 24 hours).";

const OPEN_RULES: &str = "kind (enum), title (one sentence, 1-200 characters), detail (up to \
2000, no credentials), target {type: slot|persona, code (current or legacy account code, \
1-40), platform (only when a legacy code is ambiguous, else 409)} or {type: post|issue, id}; \
due_at (ISO with zone, or market-local `YYYY-MM-DD HH:MM[:SS]` read in the target account's \
market zone), origin (platform feishu, dingtalk, telegram, discord, cli or other). Answers 201 \
`{id, created: true, task}` for a new card (pending_pickup); when an open card of the same kind \
on the same target (the same account, persona, post or decision) is already there, 200 with \
`created: false` and that card, the requester (origin.requester, else the caller's name) added \
to its also_wanted_by (at most 50 names; past them the request joins unrecorded).";

pub fn register(all: &mut Vec<Box<dyn ErasedOp>>) {
    use HttpMethod::{Get, Post};
    all.push(operation(
        OpSpec::agent(Get, "/tasks", Scope::AccountsRead)
            .tool("list_tasks")
            .summary("Your task cards: assigned to you, or unassigned on your personas")
            .description(LIST_RULES),
        agent_list,
    ));
    all.push(operation(
        OpSpec::agent(Post, "/tasks", Scope::TasksWrite)
            .tool("open_task")
            .idempotent()
            .created()
            .also_answers(&[404, 409])
            .summary("Open a task card on one of your personas")
            .description(
                "The target must be of your own personas: unknown or of another workspace is \
                 404, another agent's persona is 403. The card is assigned to you. Do not \
                 open cards for cron runs. Rules: kind (enum), title (one sentence, 1-200 \
                 characters), detail (up to 2000, no credentials), target {type: \
                 slot|persona, code (current or legacy account code, 1-40), platform (only \
                 when a legacy code is ambiguous, else 409)} or {type: post|issue, id}; due_at \
                 (ISO with zone, or market-local read in the target account's market zone), \
                 origin. 201 `{id, created: true, task}` for a new card; when you already have \
                 an open card of the same kind on the same target, 200 with created false and \
                 the requester (origin.requester, else your name) added to its \
                 also_wanted_by (at most 50 names; past them the request joins unrecorded).",
            ),
        agent_open,
    ));
    all.push(operation(
        OpSpec::agent(Post, "/tasks/{id}/claim", Scope::TasksWrite)
            .tool("claim_task")
            .summary("Claim a task card: it becomes in_progress and yours")
            .description(
                "A card assigned to you, or unassigned on your persona (another agent's card: \
                 403; not yours to see: 404). pending_pickup becomes in_progress; a card you \
                 already claimed answers `result: unchanged` (resend harmless); any other \
                 status is 422.",
            ),
        claim,
    ));
    all.push(operation(
        OpSpec::agent(Post, "/tasks/{id}/progress", Scope::TasksWrite)
            .tool("report_task")
            .idempotent()
            .summary("Report progress on your task card")
            .description(
                "Only the card's assignee (else 403; unseen 404); only in_progress (else 422: \
                 claim first). note 1-1000 characters (one or two sentences) is added to the \
                 card's notes and restarts the stale clock.",
            ),
        progress,
    ));
    all.push(operation(
        OpSpec::agent(Post, "/tasks/{id}/finish", Scope::TasksWrite)
            .tool("finish_task")
            .summary("Finish your task card: a person confirms it")
            .description(
                "Only the card's assignee (else 403); in_progress becomes \
                 pending_confirmation with result (1-2000 characters) and evidence (at most \
                 20: {type: link, url, label} or {type: asset, asset_id} of a media library \
                 item of the card's workspace, else 422 naming evidence). The same result \
                 resent answers `result: unchanged`; another result once finished, or another \
                 status, is 422. A follow-up's card finished makes its decision handled.",
            ),
        finish,
    ));
    all.push(operation(
        OpSpec::agent(Post, "/tasks/{id}/fail", Scope::TasksWrite)
            .tool("fail_task")
            .summary("Give up your task card: it ends as failed")
            .description(
                "Only the card's assignee (else 403); pending_pickup or in_progress becomes \
                 failed with reason (1-1000 characters, also added to the notes); the same \
                 reason resent answers `result: unchanged`; another status is 422. The same \
                 matter may then be opened again as a new card. A follow-up's card (one with \
                 decision_id) is never failed (422): report it with complete_issue, or a person \
                 dismisses its decision.",
            ),
        fail,
    ));
    all.push(operation(
        OpSpec::agent(Post, "/tasks/{id}/relay", Scope::RelayWrite)
            .tool("relay_task")
            .idempotent()
            .summary("Confirm or send back a task card for a person who said so")
            .description(
                "on_behalf_of and origin are required (400 without); the person's role must \
                 be agency or admin (else 422) and must not be this agent. The cards your task \
                 list reaches: assigned to you, or on your own personas (anything else: 404). \
                 action confirm moves \
                 pending_confirmation to done (done already: `result: unchanged`); send_back \
                 (note required, 1-1000 characters) moves pending_confirmation or done back to \
                 in_progress; any other status is 422. An agent never relays the confirmation \
                 of a card assigned to itself (422). The note records the relay as relay_issue \
                 records decided_by: {type: relay, name, role, agent, origin, effective_at}. \
                 Confirming a follow-up's card resolves its decision in the same transaction.",
            ),
        relay_task,
    ));
    all.push(operation(
        OpSpec::personal(Get, "/tasks", PersonalAccess::Agency)
            .tool("list_tasks")
            .summary("Task cards of the organization")
            .description(
                "Agency people and platform admins; clients are refused (403). Only the \
                 member's organization's cards (a platform admin outside any organization \
                 sees every organization's). Filter `status` (comma-separated; default \
                 pending_pickup,in_progress,pending_confirmation) and `kind`; newest first, \
                 paged with limit 1-200 (default 50) and cursor. Each card carries stale, \
                 overdue and confirm_overdue.",
            ),
        person_list,
    ));
    all.push(operation(
        OpSpec::personal(Post, "/tasks", PersonalAccess::Agency)
            .tool("open_task")
            .idempotent()
            .created()
            .also_answers(&[404, 409])
            .summary("Open a task card for an agent")
            .description(OPEN_RULES),
        person_open,
    ));
    all.push(operation(
        OpSpec::personal(Post, "/tasks/{id}/confirm", PersonalAccess::Agency)
            .tool("confirm_task")
            .idempotent()
            .summary("Confirm a finished task card: it is done")
            .description(
                "Agency people and platform admins; clients 403; another organization's card \
                 404. pending_confirmation becomes done (done already: `result: unchanged`); \
                 any other status is 422. Confirming a follow-up's card resolves its decision \
                 in the same transaction. An optional note (1-1000) is added to the notes.",
            ),
        confirm,
    ));
    all.push(operation(
        OpSpec::personal(Post, "/tasks/{id}/reopen", PersonalAccess::Agency)
            .tool("reopen_task")
            .idempotent()
            .summary("Reopen a task card with a note: it goes back to in_progress")
            .description(
                "Agency people and platform admins; clients 403; another organization's card \
                 404. note (required, 1-1000 characters) is added to the notes; \
                 pending_confirmation or done becomes in_progress; any other status is 422. A \
                 follow-up's decision waits again (open).",
            ),
        reopen,
    ));
}

impl From<TaskRefusal> for ApiError {
    fn from(r: TaskRefusal) -> ApiError {
        let message = r.to_string();
        match r {
            TaskRefusal::NotFound | TaskRefusal::TargetNotFound(_) => ApiError::not_found(message),
            TaskRefusal::NotYours | TaskRefusal::NotAssignee | TaskRefusal::TargetNotYours(_) => {
                ApiError::forbidden(message)
            }
            TaskRefusal::TargetAmbiguous => {
                ApiError::new(fleetdesk_kernel::ErrorCode::AmbiguousCode, message)
                    .with_field("target.platform")
            }
            TaskRefusal::TargetInSeveralOrganizations => {
                ApiError::new(fleetdesk_kernel::ErrorCode::AmbiguousCode, message)
                    .with_field("target.code")
            }
            TaskRefusal::BadDueAt(_) | TaskRefusal::UnknownZone(_) => {
                ApiError::invalid("due_at", message)
            }
            TaskRefusal::UnknownAgent(_) | TaskRefusal::AgentCannotWork(_) => {
                ApiError::rejected(message).with_field("agent")
            }
            TaskRefusal::UnknownAsset(_) => ApiError::rejected(message).with_field("evidence"),
            TaskRefusal::OtherResult => ApiError::rejected(message).with_field("result"),
            TaskRefusal::OtherReason => ApiError::rejected(message).with_field("reason"),
            TaskRefusal::TargetWithoutPersona(_) => {
                ApiError::rejected(message).with_field("target")
            }
            TaskRefusal::CardIs(..) | TaskRefusal::OwnCard | TaskRefusal::FollowUpFail => {
                ApiError::rejected(message)
            }
        }
    }
}

// ---------------------------------------------------------------------------------------------
// The record

#[derive(Debug, Serialize, ToSchema)]
pub struct TaskOut {
    pub id: Uuid,
    pub kind: TaskKind,
    pub title: String,
    pub detail: Option<String>,
    pub status: TaskStatus,
    pub target: TaskTarget,
    pub persona: Option<TaskNamed>,
    /// The agent working it; null while unassigned.
    pub assignee: Option<TaskNamed>,
    pub opened_by: TaskOpener,
    /// Who else asked for this card: at most 50 names.
    #[schema(max_items = 50)]
    pub also_wanted_by: Vec<String>,
    pub due_at: Option<Utc>,
    /// In progress with no progress for over 2 hours.
    pub stale: bool,
    /// Past due_at and not done, failed or cancelled.
    pub overdue: bool,
    /// Waiting for confirmation for over 24 hours.
    pub confirm_overdue: bool,
    /// Oldest first.
    pub notes: Vec<TaskNote>,
    pub result: Option<String>,
    /// `[{type: link, url, label} | {type: asset, asset_id}]`.
    pub evidence: Value,
    /// The decision whose follow-up this card is; absent on other cards.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub decision_id: Option<Uuid>,
    pub created_at: Utc,
    pub updated_at: Utc,
    /// When the agent finished or failed it; null while open or reopened.
    pub finished_at: Option<Utc>,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct TaskTarget {
    /// slot, persona, post or issue.
    #[serde(rename = "type")]
    pub kind: TargetType,
    /// The account code of a slot or persona target.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub code: Option<String>,
    /// The slot, persona, post or decision id.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub id: Option<Uuid>,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct TaskNamed {
    pub id: Uuid,
    pub name: String,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct TaskOpener {
    /// agent, person or service.
    #[serde(rename = "type")]
    pub kind: String,
    pub name: String,
}

#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct TaskNote {
    pub by: String,
    pub text: String,
    pub at: String,
    /// On a relayed move: the relay record (agent, on_behalf_of, origin, effective_at).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub via: Option<Value>,
}

pub fn task_out(c: TaskRecord, now: Timestamp) -> TaskOut {
    let flags = c.flags(now);
    TaskOut {
        id: c.id,
        kind: c.kind,
        title: c.title,
        detail: c.detail,
        status: c.status,
        target: TaskTarget {
            kind: c.target_type,
            code: c.target_code,
            id: c.target_id,
        },
        persona: c.persona.map(|(id, name)| TaskNamed { id, name }),
        assignee: c.assignee.map(|(id, name)| TaskNamed { id, name }),
        opened_by: TaskOpener {
            kind: c.opened_by.0,
            name: c.opened_by.1,
        },
        also_wanted_by: c.also_wanted_by,
        due_at: c.due_at.map(Utc),
        stale: flags.stale,
        overdue: flags.overdue,
        confirm_overdue: flags.confirm_overdue,
        notes: serde_json::from_value(c.notes).unwrap_or_default(),
        result: c.result,
        evidence: c.evidence,
        decision_id: c.decision_id,
        created_at: Utc(c.created_at),
        updated_at: Utc(c.updated_at),
        finished_at: c.finished_at.map(Utc),
    }
}

// ---------------------------------------------------------------------------------------------
// GET /tasks

/// Comma-separated card statuses.
#[derive(Debug, Clone, PartialEq)]
pub struct StatusList(pub Vec<TaskStatus>);

impl<'de> Deserialize<'de> for StatusList {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let raw = String::deserialize(d)?;
        let mut all = Vec::new();
        for part in raw.split(',') {
            let s = TaskStatus::parse(part.trim()).ok_or_else(|| {
                serde::de::Error::custom(format!(
                    "{part:?} is not a card status: comma-separated among {}",
                    status_names().join(", ")
                ))
            })?;
            if !all.contains(&s) {
                all.push(s);
            }
        }
        Ok(StatusList(all))
    }
}

fn status_names() -> Vec<&'static str> {
    TaskStatus::ALL.iter().map(|s| s.as_str()).collect()
}

impl PartialSchema for StatusList {
    fn schema() -> RefOr<Schema> {
        let one = format!("(?:{})", status_names().join("|"));
        inline_schema(json!({
            "type": "string",
            "minLength": 4,
            "maxLength": 200,
            "pattern": format!("^ *{one} *(?:, *{one} *)*$"),
            "description": "Comma-separated card statuses.",
            "examples": ["pending_pickup,in_progress"],
        }))
    }
}

impl ToSchema for StatusList {
    fn name() -> Cow<'static, str> {
        Cow::Borrowed("TaskStatusList")
    }
}

#[derive(Debug, Deserialize, Validate, ToSchema)]
pub struct TaskQueryIn {
    /// Comma-separated; default pending_pickup,in_progress,pending_confirmation.
    pub status: Option<StatusList>,
    pub kind: Option<TaskKind>,
    /// 1-200, default 50.
    pub limit: Option<Limit<200>>,
    /// `next_cursor` of the previous page.
    pub cursor: Option<CursorInput>,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct TaskPage {
    pub tasks: Vec<TaskOut>,
    /// Pass as `cursor` for the next page; null on the last page.
    pub next_cursor: Option<Cursor>,
}

async fn list(ctx: Ctx, scope: TaskScope, q: TaskQueryIn) -> Result<Reply<TaskPage>, ApiError> {
    let query = ListQuery {
        statuses: q
            .status
            .map(|s| s.0)
            .unwrap_or_else(|| TaskStatus::OPEN.to_vec()),
        kind: q.kind,
        after: q.cursor.map(|c| c.0),
        limit: limit_or(q.limit, 50),
    };
    let page = ctx.tasks.list(scope, &query).await?;
    let now = Timestamp::now();
    Ok(Reply::ok(TaskPage {
        tasks: page.items.into_iter().map(|c| task_out(c, now)).collect(),
        next_cursor: page.next.map(Cursor),
    }))
}

async fn agent_list(
    ctx: Ctx,
    agent: AgentCaller,
    req: Req<Nothing, TaskQueryIn, Nothing>,
) -> Result<Reply<TaskPage>, ApiError> {
    list(ctx, TaskScope::Agent(agent.agent_ref()), req.query).await
}

async fn person_list(
    ctx: Ctx,
    m: MemberCaller,
    req: Req<Nothing, TaskQueryIn, Nothing>,
) -> Result<Reply<TaskPage>, ApiError> {
    list(ctx, TaskScope::Organization(m.organization_id), req.query).await
}

// ---------------------------------------------------------------------------------------------
// POST /tasks

/// What a card is about: an account or a persona by account code, a post or a decision by id.
#[derive(Debug, Clone, Deserialize, Validate, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct TaskTargetIn {
    #[serde(rename = "type")]
    pub kind: TargetType,
    /// slot and persona: a current or legacy account code, 1-40 characters.
    pub code: Option<CodeInput>,
    /// slot and persona: only when a legacy code is repeated across platforms.
    pub platform: Option<Platform>,
    /// post and issue: the post's or decision's id.
    pub id: Option<Uuid>,
}

/// slot and persona take `code` (and maybe `platform`), post and issue take `id`.
pub fn target_rules() -> Value {
    json!({"allOf": [
        {
            "if": {"properties": {"type": {"enum": ["slot", "persona"]}}, "required": ["type"]},
            "then": {
                "required": ["code"],
                "properties": {"code": {"type": "string"}, "id": {"type": "null"}},
            },
        },
        {
            "if": {"properties": {"type": {"enum": ["post", "issue"]}}, "required": ["type"]},
            "then": {
                "required": ["id"],
                "properties": {
                    "id": {"type": "string"},
                    "code": {"type": "null"},
                    "platform": {"type": "null"},
                },
            },
        },
    ]})
}

impl TaskTargetIn {
    fn to_ref(&self) -> Result<TargetRef, ApiError> {
        let code = || match (&self.code, self.id) {
            (Some(c), None) => Ok(c.0.clone()),
            (None, _) => Err(ApiError::invalid(
                "target.code",
                format!("a {} target needs its account code", self.kind),
            )),
            (Some(_), Some(_)) => Err(ApiError::invalid(
                "target.id",
                format!("a {} target is named by code, not id", self.kind),
            )),
        };
        let id = || match (self.id, &self.code, self.platform) {
            (Some(id), None, None) => Ok(id),
            (None, _, _) => Err(ApiError::invalid(
                "target.id",
                format!("a {} target needs its id", self.kind),
            )),
            (Some(_), _, _) => Err(ApiError::invalid(
                if self.code.is_some() {
                    "target.code"
                } else {
                    "target.platform"
                },
                format!("a {} target is named by id only", self.kind),
            )),
        };
        Ok(match self.kind {
            TargetType::Slot => TargetRef::Slot {
                code: code()?,
                platform: self.platform,
            },
            TargetType::Persona => TargetRef::Persona {
                code: code()?,
                platform: self.platform,
            },
            TargetType::Post => TargetRef::Post(id()?),
            TargetType::Issue => TargetRef::Issue(id()?),
        })
    }
}

/// Time input of a card: ISO with a zone, or market-local read in the target account's zone.
pub type DueAtInput = super::common::TimeInput;

#[derive(Debug, Deserialize, Validate, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct OpenTaskBody {
    pub kind: TaskKind,
    /// One sentence, 1-200 characters.
    pub title: Text<1, 200>,
    /// What to do, up to 2000 characters; no credentials.
    pub detail: Option<Text<0, 2000>>,
    pub target: TaskTargetIn,
    /// ISO with a zone, or market-local read in the target account's market zone.
    pub due_at: Option<DueAtInput>,
    pub origin: Option<Origin>,
}

#[derive(Debug, Deserialize, Validate, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct PersonOpenTaskBody {
    pub kind: TaskKind,
    /// One sentence, 1-200 characters.
    pub title: Text<1, 200>,
    /// What to do, up to 2000 characters; no credentials.
    pub detail: Option<Text<0, 2000>>,
    pub target: TaskTargetIn,
    /// ISO with a zone, or market-local read in the target account's market zone.
    pub due_at: Option<DueAtInput>,
    pub origin: Option<Origin>,
    /// The agent to assign it to: a name or id of the target's workspace whose role has
    /// tasks:write (else 422); without it the card is unassigned and the persona's agent may
    /// claim it.
    pub agent: Option<Text<1, 80>>,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct OpenTaskReply {
    pub id: Uuid,
    /// False when the request joined an open card of the same kind on the same target.
    pub created: bool,
    pub task: TaskOut,
}

fn opened_reply(o: Opened) -> Reply<OpenTaskReply> {
    Reply::created_if(
        o.created,
        OpenTaskReply {
            id: o.card.id,
            created: o.created,
            task: task_out(o.card, Timestamp::now()),
        },
    )
}

fn requester(origin: &Option<Origin>, caller: &str) -> String {
    origin
        .as_ref()
        .and_then(|o| o.requester.as_ref())
        .map(|r| r.0.trim().to_owned())
        .filter(|r| !r.is_empty())
        .unwrap_or_else(|| caller.to_owned())
}

fn origin_json(origin: &Option<Origin>) -> Result<Option<Value>, ApiError> {
    origin
        .as_ref()
        .map(serde_json::to_value)
        .transpose()
        .map_err(|e| ApiError::internal(e.into()))
}

async fn agent_open(
    ctx: Ctx,
    agent: AgentCaller,
    req: Req<Nothing, Nothing, OpenTaskBody>,
) -> Result<Reply<OpenTaskReply>, ApiError> {
    let b = req.body;
    let request = OpenRequest {
        kind: b.kind,
        title: b.title.into(),
        detail: b.detail.map(String::from),
        target: b.target.to_ref()?,
        due_at: b.due_at.map(|d| d.0),
        origin: origin_json(&b.origin)?,
        requester: requester(&b.origin, &agent.agent_name),
    };
    let opener = Opener::Agent {
        agent: agent.agent_ref(),
        name: agent.agent_name.clone(),
    };
    let opened = ctx.tasks.open(&opener, &request).await??;
    Ok(opened_reply(opened))
}

async fn person_open(
    ctx: Ctx,
    m: MemberCaller,
    req: Req<Nothing, Nothing, PersonOpenTaskBody>,
) -> Result<Reply<OpenTaskReply>, ApiError> {
    let b = req.body;
    let request = OpenRequest {
        kind: b.kind,
        title: b.title.into(),
        detail: b.detail.map(String::from),
        target: b.target.to_ref()?,
        due_at: b.due_at.map(|d| d.0),
        origin: origin_json(&b.origin)?,
        requester: requester(&b.origin, &m.name),
    };
    let opener = Opener::Person {
        organization: m.organization_id,
        name: m.name.clone(),
        assign: b.agent.map(|a| a.0.trim().to_owned()),
    };
    let opened = ctx.tasks.open(&opener, &request).await??;
    Ok(opened_reply(opened))
}

// ---------------------------------------------------------------------------------------------
// The moves

#[derive(Debug, Serialize, ToSchema)]
pub struct TaskMoveReply {
    pub task: TaskOut,
    /// `changed`, or `unchanged` when the same move was already made.
    pub result: String,
}

fn move_reply(moved: Moved) -> Reply<TaskMoveReply> {
    Reply::ok(TaskMoveReply {
        result: if moved.unchanged {
            "unchanged"
        } else {
            "changed"
        }
        .to_owned(),
        task: task_out(moved.card, Timestamp::now()),
    })
}

fn request(id: Uuid, mv: Move, note: Option<String>) -> MoveRequest {
    MoveRequest {
        id,
        mv,
        note,
        evidence: json!([]),
        asset_ids: Vec::new(),
        now: Timestamp::now(),
    }
}

async fn act(ctx: &Ctx, actor: Actor, r: MoveRequest) -> Result<Reply<TaskMoveReply>, ApiError> {
    let moved = ctx.tasks.act(&actor, &r).await??;
    Ok(move_reply(moved))
}

fn worker(agent: &AgentCaller) -> Actor {
    Actor::Agent {
        agent: agent.agent_ref(),
        name: agent.agent_name.clone(),
    }
}

async fn claim(
    ctx: Ctx,
    agent: AgentCaller,
    req: Req<IdPath, Nothing, Nothing>,
) -> Result<Reply<TaskMoveReply>, ApiError> {
    act(
        &ctx,
        worker(&agent),
        request(req.path.id, Move::Claim, None),
    )
    .await
}

#[derive(Debug, Deserialize, Validate, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct TaskProgressBody {
    /// One or two sentences, 1-1000 characters.
    pub note: Text<1, 1000>,
}

async fn progress(
    ctx: Ctx,
    agent: AgentCaller,
    req: Req<IdPath, Nothing, TaskProgressBody>,
) -> Result<Reply<TaskMoveReply>, ApiError> {
    let r = request(req.path.id, Move::Progress, Some(req.body.note.into()));
    act(&ctx, worker(&agent), r).await
}

#[derive(Debug, Deserialize, Validate, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct TaskFinishBody {
    /// What was done, 1-2000 characters.
    pub result: Text<1, 2000>,
    /// At most 20 items.
    pub evidence: Option<List<EvidenceIn, 0, 20>>,
}

async fn finish(
    ctx: Ctx,
    agent: AgentCaller,
    req: Req<IdPath, Nothing, TaskFinishBody>,
) -> Result<Reply<TaskMoveReply>, ApiError> {
    let evidence = req.body.evidence.map(List::into_vec).unwrap_or_default();
    let mut r = request(
        req.path.id,
        Move::Finish {
            result: req.body.result.into(),
        },
        None,
    );
    r.asset_ids = evidence
        .iter()
        .filter_map(|e| match e {
            EvidenceIn::Asset { asset_id } => Some(*asset_id),
            EvidenceIn::Link { .. } => None,
        })
        .collect();
    r.evidence = serde_json::to_value(&evidence).map_err(|e| ApiError::internal(e.into()))?;
    act(&ctx, worker(&agent), r).await
}

#[derive(Debug, Deserialize, Validate, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct TaskFailBody {
    /// Why the card cannot be done, 1-1000 characters.
    pub reason: Text<1, 1000>,
}

async fn fail(
    ctx: Ctx,
    agent: AgentCaller,
    req: Req<IdPath, Nothing, TaskFailBody>,
) -> Result<Reply<TaskMoveReply>, ApiError> {
    let r = request(
        req.path.id,
        Move::Fail {
            reason: req.body.reason.into(),
        },
        None,
    );
    act(&ctx, worker(&agent), r).await
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum RelayTaskAction {
    Confirm,
    SendBack,
}

#[derive(Debug, Deserialize, Validate, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct RelayTaskBody {
    pub action: RelayTaskAction,
    /// 1-1000 characters; required with send_back.
    pub note: Option<Text<1, 1000>>,
    #[schema(value_type = StaffOnBehalfOf)]
    pub on_behalf_of: OnBehalfOf,
    pub origin: Origin,
    /// When the person decided (ISO with zone); default now.
    pub effective_at: Option<IsoTimeInput>,
}

/// send_back takes the person's note.
pub fn relay_task_rules() -> Value {
    json!({"allOf": [{
        "if": {"properties": {"action": {"enum": ["send_back"]}}, "required": ["action"]},
        "then": {"required": ["note"], "properties": {"note": {"type": "string"}}},
    }]})
}

async fn relay_task(
    ctx: Ctx,
    agent: AgentCaller,
    req: Req<IdPath, Nothing, RelayTaskBody>,
) -> Result<Reply<TaskMoveReply>, ApiError> {
    let b = req.body;
    b.on_behalf_of.staff_only(|| {
        ApiError::rejected(
            "clients never confirm or send back cards: on_behalf_of.role must be agency or admin",
        )
    })?;
    let mv = match b.action {
        RelayTaskAction::Confirm => Move::Confirm,
        RelayTaskAction::SendBack => {
            if b.note.is_none() {
                return Err(ApiError::invalid(
                    "note",
                    "send_back needs the person's note",
                ));
            }
            Move::Reopen
        }
    };
    let relay = RelayRecord::new(&agent, &b.on_behalf_of, &b.origin, b.effective_at.as_ref())?;
    let record = relay.decided_by();
    let actor = Actor::Relay {
        agent: agent.agent_ref(),
        person: b.on_behalf_of.name.0.clone(),
        record,
    };
    act(
        &ctx,
        actor,
        request(req.path.id, mv, b.note.map(String::from)),
    )
    .await
}

fn person(m: &MemberCaller) -> Actor {
    Actor::Person {
        organization: m.organization_id,
        name: m.name.clone(),
        record: m.decided_by(),
    }
}

#[derive(Debug, Deserialize, Validate, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct TaskConfirmBody {
    /// Added to the card's notes, 1-1000 characters.
    pub note: Option<Text<1, 1000>>,
}

async fn confirm(
    ctx: Ctx,
    m: MemberCaller,
    req: Req<IdPath, Nothing, TaskConfirmBody>,
) -> Result<Reply<TaskMoveReply>, ApiError> {
    let r = request(req.path.id, Move::Confirm, req.body.note.map(String::from));
    act(&ctx, person(&m), r).await
}

#[derive(Debug, Deserialize, Validate, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct TaskReopenBody {
    /// What still needs doing, 1-1000 characters.
    pub note: Text<1, 1000>,
}

async fn reopen(
    ctx: Ctx,
    m: MemberCaller,
    req: Req<IdPath, Nothing, TaskReopenBody>,
) -> Result<Reply<TaskMoveReply>, ApiError> {
    let r = request(req.path.id, Move::Reopen, Some(req.body.note.into()));
    act(&ctx, person(&m), r).await
}
