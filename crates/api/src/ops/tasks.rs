//! Task cards: the agent's list, opening, claim, progress, finish, fail and relay; the
//! person's list, opening, confirm and reopen. The operations and their types are
//! `fleetdesk_tasks::wire`, the rules `fleetdesk_tasks::rules`; each write runs whole in the
//! adapter's transaction.

use super::relay::{RelayRecord, StaffOnly};
use crate::ctx::Ctx;
use crate::error::ApiError;
use crate::fields::{Cursor, List, limit_or};
use crate::input::{Nothing, Req};
use crate::op::{ErasedOp, Reply, bind};
use fleetdesk_kernel::wire::fields::IdPath;
use fleetdesk_kernel::wire::relay::{Origin, requester};
use fleetdesk_tasks::TaskStatus;
use fleetdesk_tasks::ports::{
    Actor, ListQuery, MoveRequest, Moved, OpenRequest, Opened, Opener, TaskScope,
};
use fleetdesk_tasks::rules::{Move, TaskRefusal};
use fleetdesk_tasks::wire::{
    EvidenceIn, OpenTaskBody, OpenTaskReply, PersonOpenTaskBody, RelayTaskAction, RelayTaskBody,
    TaskConfirmBody, TaskFailBody, TaskFinishBody, TaskMoveReply, TaskOut, TaskPage,
    TaskProgressBody, TaskQueryIn, TaskReopenBody, agent, personal,
};
use fleetdesk_tenancy::{AgentCaller, MemberCaller};
use jiff::Timestamp;
use serde_json::{Value, json};
use uuid::Uuid;

pub use fleetdesk_tasks::wire::{relay_task_rules, target_rules};

pub fn register(all: &mut Vec<Box<dyn ErasedOp>>) {
    all.push(bind::<agent::ListTasks, _, _, _>(agent_list));
    all.push(bind::<agent::GetTask, _, _, _>(agent_get));
    all.push(bind::<agent::OpenTask, _, _, _>(agent_open));
    all.push(bind::<agent::ClaimTask, _, _, _>(claim));
    all.push(bind::<agent::ReportTask, _, _, _>(progress));
    all.push(bind::<agent::FinishTask, _, _, _>(finish));
    all.push(bind::<agent::FailTask, _, _, _>(fail));
    all.push(bind::<agent::RelayTask, _, _, _>(relay_task));
    all.push(bind::<personal::ListTasks, _, _, _>(person_list));
    all.push(bind::<personal::GetTask, _, _, _>(person_get));
    all.push(bind::<personal::OpenTask, _, _, _>(person_open));
    all.push(bind::<personal::ConfirmTask, _, _, _>(confirm));
    all.push(bind::<personal::ReopenTask, _, _, _>(reopen));
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
        tasks: page
            .items
            .into_iter()
            .map(|c| TaskOut::of(c, now))
            .collect(),
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
// GET /tasks/{id}

async fn get(ctx: Ctx, scope: TaskScope, id: Uuid) -> Result<Reply<TaskOut>, ApiError> {
    match ctx.tasks.get(scope, id).await? {
        Some(card) => Ok(Reply::ok(TaskOut::of(card, Timestamp::now()))),
        None => Err(ApiError::not_found("no such task card in your reach")),
    }
}

async fn agent_get(
    ctx: Ctx,
    agent: AgentCaller,
    req: Req<IdPath, Nothing, Nothing>,
) -> Result<Reply<TaskOut>, ApiError> {
    get(ctx, TaskScope::Agent(agent.agent_ref()), req.path.id).await
}

async fn person_get(
    ctx: Ctx,
    m: MemberCaller,
    req: Req<IdPath, Nothing, Nothing>,
) -> Result<Reply<TaskOut>, ApiError> {
    get(ctx, TaskScope::Organization(m.organization_id), req.path.id).await
}

// ---------------------------------------------------------------------------------------------
// POST /tasks

fn opened_reply(o: Opened) -> Reply<OpenTaskReply> {
    Reply::created_if(o.created, OpenTaskReply::of(o, Timestamp::now()))
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
        requester: requester(b.origin.as_ref(), &agent.agent_name),
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
        requester: requester(b.origin.as_ref(), &m.name),
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

fn move_reply(moved: Moved) -> Reply<TaskMoveReply> {
    Reply::ok(TaskMoveReply {
        result: if moved.unchanged {
            "unchanged"
        } else {
            "changed"
        }
        .to_owned(),
        task: TaskOut::of(moved.card, Timestamp::now()),
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

async fn progress(
    ctx: Ctx,
    agent: AgentCaller,
    req: Req<IdPath, Nothing, TaskProgressBody>,
) -> Result<Reply<TaskMoveReply>, ApiError> {
    let r = request(req.path.id, Move::Progress, Some(req.body.note.into()));
    act(&ctx, worker(&agent), r).await
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
    r.asset_ids = EvidenceIn::asset_ids(&evidence);
    r.evidence = serde_json::to_value(&evidence).map_err(|e| ApiError::internal(e.into()))?;
    act(&ctx, worker(&agent), r).await
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

async fn confirm(
    ctx: Ctx,
    m: MemberCaller,
    req: Req<IdPath, Nothing, TaskConfirmBody>,
) -> Result<Reply<TaskMoveReply>, ApiError> {
    let r = request(req.path.id, Move::Confirm, req.body.note.map(String::from));
    act(&ctx, person(&m), r).await
}

async fn reopen(
    ctx: Ctx,
    m: MemberCaller,
    req: Req<IdPath, Nothing, TaskReopenBody>,
) -> Result<Reply<TaskMoveReply>, ApiError> {
    let r = request(req.path.id, Move::Reopen, Some(req.body.note.into()));
    act(&ctx, person(&m), r).await
}
