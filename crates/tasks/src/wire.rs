//! The task cards' part of the interface (feature `wire`): each operation's handle with its
//! description, and the request and response types the server parses and a client sends.
//! The agent's operations are in [`agent`], the person's in [`personal`].

use crate::ports::{Opened, TargetRef, TaskRecord};
use crate::{TargetType, TaskKind, TaskStatus};
use fleetdesk_kernel::Platform;
use fleetdesk_kernel::wire::fields::{
    Cursor, INLINE, Invalid, Limit, List, Text, Utc, inline_schema,
};
use fleetdesk_kernel::wire::relay::{OnBehalfOf, Origin, StaffOnBehalfOf};
use fleetdesk_kernel::wire::strings::{CodeInput, CursorInput, IsoTimeInput, LinkInput, TimeInput};
use jiff::Timestamp;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use std::borrow::Cow;
use utoipa::openapi::{RefOr, Schema};
use utoipa::{PartialSchema, ToSchema};
use uuid::Uuid;
use validator::Validate;

fleetdesk_kernel::component_items!(EvidenceIn);

const LIST_RULES: &str = "Filter `status` (comma-separated statuses among pending_pickup, \
in_progress, pending_confirmation, done, failed, cancelled; default \
pending_pickup,in_progress,pending_confirmation) and `kind`; newest first, paged with limit \
1-200 (default 50) and cursor (`next_cursor`, null on the last page). Each card carries its \
flags: `stale` (in_progress with no progress for over 2 hours), `overdue` (past due_at and not \
done, failed or cancelled), `confirm_overdue` (pending_confirmation for over 24 hours). A card in the list carries its \
latest 3 notes (oldest first) and `notes_count`; GET /tasks/{id} reads every note.";

pub(crate) const OPEN_RULES: &str = "kind (enum), title (one sentence, 1-200 characters), detail (up to \
2000, no credentials), target {type: slot|persona, code (current or legacy account code, \
1-40), platform (only when a legacy code is ambiguous, else 409)} or {type: post|issue, id}; \
due_at (ISO with zone, or market-local `YYYY-MM-DD HH:MM[:SS]` read in the target account's \
market zone), origin (platform feishu, dingtalk, telegram, discord, cli or other). Answers 201 \
`{id, created: true, task}` for a new card (pending_pickup); when an open card of the same kind \
on the same target (the same account, persona, post or decision) is already there, 200 with \
`created: false` and that card, the requester (origin.requester, else the caller's name) added \
to its also_wanted_by (at most 50 names; past them the request joins unrecorded).";

// ---------------------------------------------------------------------------------------------
// The record

#[derive(Debug, Serialize, Deserialize, ToSchema)]
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
    /// Oldest first: every note when the card is read alone or answers a move; in a list the
    /// latest 3 only.
    pub notes: Vec<TaskNote>,
    /// How many notes the card has (the list's `notes` may be fewer).
    pub notes_count: i64,
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

#[derive(Debug, Serialize, Deserialize, ToSchema)]
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

#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct TaskNamed {
    pub id: Uuid,
    pub name: String,
}

#[derive(Debug, Serialize, Deserialize, ToSchema)]
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

impl TaskOut {
    /// A card as the interface answers it, its flags read at `now`.
    pub fn of(c: TaskRecord, now: Timestamp) -> TaskOut {
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
            notes_count: c.notes_count,
            result: c.result,
            evidence: c.evidence,
            decision_id: c.decision_id,
            created_at: Utc(c.created_at),
            updated_at: Utc(c.updated_at),
            finished_at: c.finished_at.map(Utc),
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Listing

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

impl Serialize for StatusList {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let names: Vec<&str> = self.0.iter().map(|s| s.as_str()).collect();
        s.collect_str(&names.join(","))
    }
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

#[derive(Debug, Clone, Default, Serialize, Deserialize, Validate, ToSchema)]
pub struct TaskQueryIn {
    /// Comma-separated; default pending_pickup,in_progress,pending_confirmation.
    pub status: Option<StatusList>,
    pub kind: Option<TaskKind>,
    /// 1-200, default 50.
    pub limit: Option<Limit<200>>,
    /// `next_cursor` of the previous page.
    pub cursor: Option<CursorInput>,
}

#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct TaskPage {
    pub tasks: Vec<TaskOut>,
    /// Pass as `cursor` for the next page; null on the last page.
    pub next_cursor: Option<Cursor>,
}

/// Both lists of cards page the same way.
macro_rules! paged_tasks {
    ($($op:ty),*) => {$(
        impl fleetdesk_kernel::wire::Paged for $op {
            type Item = TaskOut;

            fn page(out: TaskPage) -> (Vec<TaskOut>, Option<Cursor>) {
                (out.tasks, out.next_cursor)
            }

            fn after(query: &mut TaskQueryIn, cursor: Cursor) {
                query.cursor = Some(cursor.input());
            }
        }
    )*};
}

paged_tasks!(agent::ListTasks, personal::ListTasks);

// ---------------------------------------------------------------------------------------------
// Opening

/// What a card is about: an account or a persona by account code, a post or a decision by id.
#[derive(Debug, Clone, Serialize, Deserialize, Validate, ToSchema)]
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
    /// The target the card names: `code` (and maybe `platform`) for a slot or persona, `id`
    /// for a post or decision, nothing else.
    pub fn to_ref(&self) -> Result<TargetRef, Invalid> {
        let code = || match (&self.code, self.id) {
            (Some(c), None) => Ok(c.0.clone()),
            (None, _) => Err(Invalid::new(
                "target.code",
                format!("a {} target needs its account code", self.kind),
            )),
            (Some(_), Some(_)) => Err(Invalid::new(
                "target.id",
                format!("a {} target is named by code, not id", self.kind),
            )),
        };
        let id = || match (self.id, &self.code, self.platform) {
            (Some(id), None, None) => Ok(id),
            (None, _, _) => Err(Invalid::new(
                "target.id",
                format!("a {} target needs its id", self.kind),
            )),
            (Some(_), _, _) => Err(Invalid::new(
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
pub type DueAtInput = TimeInput;

#[derive(Debug, Serialize, Deserialize, Validate, ToSchema)]
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

#[derive(Debug, Serialize, Deserialize, Validate, ToSchema)]
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

#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct OpenTaskReply {
    pub id: Uuid,
    /// False when the request joined an open card of the same kind on the same target.
    pub created: bool,
    pub task: TaskOut,
}

impl OpenTaskReply {
    /// The answer to an opening: the card, and whether it is new.
    pub fn of(o: Opened, now: Timestamp) -> OpenTaskReply {
        OpenTaskReply {
            id: o.card.id,
            created: o.created,
            task: TaskOut::of(o.card, now),
        }
    }
}

// ---------------------------------------------------------------------------------------------
// The moves

#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct TaskMoveReply {
    pub task: TaskOut,
    /// `changed`, or `unchanged` when the same move was already made.
    pub result: String,
}

#[derive(Debug, Serialize, Deserialize, Validate, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct TaskProgressBody {
    /// One or two sentences, 1-1000 characters.
    pub note: Text<1, 1000>,
}

#[derive(Debug, Serialize, Deserialize, Validate, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct TaskFinishBody {
    /// What was done, 1-2000 characters.
    pub result: Text<1, 2000>,
    /// At most 20 items.
    pub evidence: Option<List<EvidenceIn, 0, 20>>,
}

#[derive(Debug, Serialize, Deserialize, Validate, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct TaskFailBody {
    /// Why the card cannot be done, 1-1000 characters.
    pub reason: Text<1, 1000>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum RelayTaskAction {
    Confirm,
    SendBack,
}

#[derive(Debug, Serialize, Deserialize, Validate, ToSchema)]
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

#[derive(Debug, Serialize, Deserialize, Validate, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct TaskConfirmBody {
    /// Added to the card's notes, 1-1000 characters.
    pub note: Option<Text<1, 1000>>,
}

#[derive(Debug, Serialize, Deserialize, Validate, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct TaskReopenBody {
    /// What still needs doing, 1-1000 characters.
    pub note: Text<1, 1000>,
}

/// Evidence of work done: a link, or a media library item.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(tag = "type", rename_all = "snake_case", deny_unknown_fields)]
pub enum EvidenceIn {
    Link {
        url: LinkInput,
        label: Option<Text<0, 200>>,
    },
    Asset {
        asset_id: Uuid,
    },
}

impl EvidenceIn {
    /// The media library items among `evidence`.
    pub fn asset_ids(evidence: &[EvidenceIn]) -> Vec<Uuid> {
        evidence
            .iter()
            .filter_map(|e| match e {
                EvidenceIn::Asset { asset_id } => Some(*asset_id),
                EvidenceIn::Link { .. } => None,
            })
            .collect()
    }
}

/// Each evidence variant takes only its own fields (the derive leaves them open); the rules
/// are merged after components are written in place, so the fields' schemas are spelled out.
pub fn evidence_rules() -> Value {
    use utoipa::PartialSchema;
    fn plain(schema: utoipa::openapi::RefOr<utoipa::openapi::schema::Schema>) -> Value {
        let mut v = serde_json::to_value(schema).unwrap_or_default();
        if let Value::Object(map) = &mut v {
            map.remove(INLINE);
        }
        v
    }
    let mut label = plain(Text::<0, 200>::schema());
    label["type"] = json!(["string", "null"]);
    // Text holds no NUL (what the describer adds to every derived text field).
    label["pattern"] = json!("^[^\\x00]*$");
    json!({"oneOf": [
        {
            "type": "object",
            "additionalProperties": false,
            "required": ["type", "url"],
            "properties": {
                "type": {"type": "string", "enum": ["link"]},
                "url": plain(LinkInput::schema()),
                "label": label,
            },
        },
        {
            "type": "object",
            "additionalProperties": false,
            "required": ["type", "asset_id"],
            "properties": {
                "type": {"type": "string", "enum": ["asset"]},
                "asset_id": {"type": "string", "format": "uuid"},
            },
        },
    ]})
}

/// The agent's task operations (`/api/agent/v1`).
pub mod agent {
    use super::*;
    use fleetdesk_kernel::access::Scope;
    use fleetdesk_kernel::op::{
        HttpMethod::{Get, Post},
        Nothing, OpSpec,
    };
    use fleetdesk_kernel::wire::fields::IdPath;

    fleetdesk_kernel::operations! {
        /// Your task cards.
        pub ListTasks(Nothing, TaskQueryIn, Nothing) -> TaskPage =
            OpSpec::agent(Get, "/tasks", Scope::AccountsRead)
                .tool("list_tasks")
                .summary("Your task cards: assigned to you, or unassigned on your personas")
                .description(LIST_RULES);

        /// One of your task cards, with every note.
        pub GetTask(IdPath, Nothing, Nothing) -> TaskOut =
            OpSpec::agent(Get, "/tasks/{id}", Scope::AccountsRead)
                .tool("get_task")
                .summary("One of your task cards, with every note")
                .description(concat!(
                    "Cards assigned to you, or unassigned on your personas (another's: 404). ",
                    "The card with every note (oldest first), its flags and notes_count."
                ));

        /// Open a card on one of your personas.
        pub OpenTask(Nothing, Nothing, OpenTaskBody) -> OpenTaskReply =
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
                );

        /// Claim a card.
        pub ClaimTask(IdPath, Nothing, Nothing) -> TaskMoveReply =
            OpSpec::agent(Post, "/tasks/{id}/claim", Scope::TasksWrite)
                .tool("claim_task")
                .summary("Claim a task card: it becomes in_progress and yours")
                .description(
                    "A card assigned to you, or unassigned on your persona (another agent's card: \
                     403; not yours to see: 404). pending_pickup becomes in_progress; a card you \
                     already claimed answers `result: unchanged` (resend harmless); any other \
                     status is 422.",
                );

        /// Report progress.
        pub ReportTask(IdPath, Nothing, TaskProgressBody) -> TaskMoveReply =
            OpSpec::agent(Post, "/tasks/{id}/progress", Scope::TasksWrite)
                .tool("report_task")
                .idempotent()
                .summary("Report progress on your task card")
                .description(
                    "Only the card's assignee (else 403; unseen 404); only in_progress (else 422: \
                     claim first). note 1-1000 characters (one or two sentences) is added to the \
                     card's notes and restarts the stale clock.",
                );

        /// Finish a card.
        pub FinishTask(IdPath, Nothing, TaskFinishBody) -> TaskMoveReply =
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
                );

        /// Give up a card.
        pub FailTask(IdPath, Nothing, TaskFailBody) -> TaskMoveReply =
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
                );

        /// Confirm or send back a card for a person.
        pub RelayTask(IdPath, Nothing, RelayTaskBody) -> TaskMoveReply =
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
                );
    }
}

/// The person's task operations (`/api/user/v1`).
pub mod personal {
    use super::*;
    use fleetdesk_kernel::access::PersonalAccess;
    use fleetdesk_kernel::op::{
        HttpMethod::{Get, Post},
        Nothing, OpSpec,
    };
    use fleetdesk_kernel::wire::fields::IdPath;

    fleetdesk_kernel::operations! {
        /// The organization's cards.
        pub ListTasks(Nothing, TaskQueryIn, Nothing) -> TaskPage =
            OpSpec::personal(Get, "/tasks", PersonalAccess::Agency)
                .tool("list_tasks")
                .summary("Task cards of the organization")
                .description(
                    "Agency people and platform admins; clients are refused (403). Only the \
                     member's organization's cards (a platform admin outside any organization \
                     sees every organization's). Filter `status` (comma-separated; default \
                     pending_pickup,in_progress,pending_confirmation) and `kind`; newest first, \
                     paged with limit 1-200 (default 50) and cursor. Each card carries stale, \
                     overdue and confirm_overdue, its latest 3 notes (oldest first) and \
                     notes_count; GET /tasks/{id} reads every note.",
                );

        /// One card of the organization, with every note.
        pub GetTask(IdPath, Nothing, Nothing) -> TaskOut =
            OpSpec::personal(Get, "/tasks/{id}", PersonalAccess::Agency)
                .tool("get_task")
                .summary("One task card of the organization, with every note")
                .description(
                    "Agency people and platform admins; clients are refused (403). A card of the \
                     member's organization (a platform admin outside any organization reads any; \
                     another organization's: 404), with every note (oldest first), its flags and \
                     notes_count.",
                );

        /// Open a card for an agent.
        pub OpenTask(Nothing, Nothing, PersonOpenTaskBody) -> OpenTaskReply =
            OpSpec::personal(Post, "/tasks", PersonalAccess::Agency)
                .tool("open_task")
                .idempotent()
                .created()
                .also_answers(&[404, 409])
                .summary("Open a task card for an agent")
                .description(OPEN_RULES);

        /// Confirm a finished card.
        pub ConfirmTask(IdPath, Nothing, TaskConfirmBody) -> TaskMoveReply =
            OpSpec::personal(Post, "/tasks/{id}/confirm", PersonalAccess::Agency)
                .tool("confirm_task")
                .idempotent()
                .summary("Confirm a finished task card: it is done")
                .description(
                    "Agency people and platform admins; clients 403; another organization's card \
                     404. pending_confirmation becomes done (done already: `result: unchanged`); \
                     any other status is 422. Confirming a follow-up's card resolves its decision \
                     in the same transaction. An optional note (1-1000) is added to the notes.",
                );

        /// Reopen a card.
        pub ReopenTask(IdPath, Nothing, TaskReopenBody) -> TaskMoveReply =
            OpSpec::personal(Post, "/tasks/{id}/reopen", PersonalAccess::Agency)
                .tool("reopen_task")
                .idempotent()
                .summary("Reopen a task card with a note: it goes back to in_progress")
                .description(
                    "Agency people and platform admins; clients 403; another organization's card \
                     404. note (required, 1-1000 characters) is added to the notes; \
                     pending_confirmation or done becomes in_progress; any other status is 422. A \
                     follow-up's decision waits again (open).",
                );
    }
}
