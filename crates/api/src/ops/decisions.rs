//! Decisions: the Personal API's inbox and moves, and the agent's follow-ups and relays.
//! The rules are `fleetdesk_decisions::rules`; each move runs whole in the adapter's
//! transaction with its effect.

use super::drafts::IdPath;
use super::relay::{RelayRecord, StaffOnly};
use crate::ctx::Ctx;
use crate::error::ApiError;
use crate::fields::{Cursor, List, Text, Utc, limit_or};
use crate::input::{Nothing, Req};
use crate::links::{Links, PersonaSigner, PersonaVariant};
use crate::op::bind;
use crate::op::{ErasedOp, Reply};
use fleetdesk_decisions::ports::{
    DecisionRecord, DecisionScope, DoneReport, ListQuery, MoveRequest, Moved,
};
use fleetdesk_decisions::rules::{Action, DecisionRefusal, Move};
pub use fleetdesk_decisions::wire::{
    DecisionAccount, DecisionChooseBody, DecisionDismissBody, DecisionMoveReply, DecisionNote,
    DecisionOpener, DecisionOut, DecisionPage, DecisionPersona, DecisionQueryIn,
    DecisionResolveBody, DecisionStatusFilter, DecisionWorkspace, IssueDoneBody, RelayIssueBody,
};
use fleetdesk_decisions::wire::{agent, personal};
use fleetdesk_decisions::{DecisionKind, DecisionStatus};
use fleetdesk_personas::rules::ImageLock;
use fleetdesk_tenancy::{AgentCaller, MemberCaller};
use jiff::Timestamp;
use serde_json::{Value, json};
use uuid::Uuid;

pub fn register(all: &mut Vec<Box<dyn ErasedOp>>) {
    all.push(bind::<personal::ListDecisions, _, _, _>(list_decisions));
    all.push(bind::<personal::ResolveIssue, _, _, _>(resolve));
    all.push(bind::<personal::DismissIssue, _, _, _>(dismiss));
    all.push(bind::<personal::ChooseIssue, _, _, _>(choose));
    all.push(bind::<agent::CompleteIssue, _, _, _>(complete_issue));
    all.push(bind::<agent::RelayIssue, _, _, _>(relay_issue));
}

pub use fleetdesk_tasks::wire::{EvidenceIn, evidence_rules};

impl From<DecisionRefusal> for ApiError {
    fn from(r: DecisionRefusal) -> ApiError {
        let message = r.to_string();
        let field = match &r {
            DecisionRefusal::NotFound => return ApiError::not_found(message),
            DecisionRefusal::NoOptions(_)
            | DecisionRefusal::UnknownOption { .. }
            | DecisionRefusal::OptionWithoutChoose
            | DecisionRefusal::NoPost => Some("option"),
            DecisionRefusal::ImageIdsNotExpected
            | DecisionRefusal::ImageIdsMissing
            | DecisionRefusal::UnknownImage(_) => Some("image_ids"),
            DecisionRefusal::SetAvatarNotExpected | DecisionRefusal::AvatarNotApproved(_) => {
                Some("set_avatar")
            }
            DecisionRefusal::OtherResult => Some("result"),
            DecisionRefusal::UnknownAsset(_) => Some("evidence"),
            DecisionRefusal::AlreadyDecided(_)
            | DecisionRefusal::NotReportedYet
            | DecisionRefusal::OwnCard
            | DecisionRefusal::CardIs(..)
            | DecisionRefusal::AsksQuestion(_)
            | DecisionRefusal::ApprovedInPerson
            | DecisionRefusal::AdChangeRefused(_)
            | DecisionRefusal::GenerationGone
            | DecisionRefusal::WikiDraftGone(_)
            | DecisionRefusal::NotFollowUp(_) => None,
        };
        let e = ApiError::rejected(message);
        match field {
            Some(f) => e.with_field(f),
            None => e,
        }
    }
}

// ---------------------------------------------------------------------------------------------
// The record

/// Signs the image links of one answer's decisions: persona image links of 15 minutes, so the
/// person deciding sees the draft images.
pub fn image_links(ctx: &Ctx) -> PersonaSigner<'_> {
    PersonaSigner::new(&ctx.links, ctx.base_url(), jiff::Timestamp::now())
}

pub fn decision_out(d: DecisionRecord, links: &PersonaSigner) -> DecisionOut {
    let mut detail = d.detail;
    if d.kind == DecisionKind::PersonaImages {
        let images: Vec<Value> = d
            .images
            .iter()
            .map(|i| {
                let mut image = json!({"id": i.id, "category": i.category, "caption": i.caption,
                       "character": i.character, "lock": i.lock});
                // A refused image is never served: it gets no links.
                if i.lock != ImageLock::Refused.as_str() {
                    image["url"] = json!(links.url(i.id, PersonaVariant::File));
                    image["thumb_url"] = json!(links.url(i.id, PersonaVariant::Thumb));
                }
                image
            })
            .collect();
        if !detail.is_object() {
            detail = json!({});
        }
        detail["images"] = Value::Array(images);
        detail["images_expire_in_seconds"] = json!(Links::PERSONA_LIFETIME_SECONDS);
    }
    DecisionOut {
        id: d.id,
        workspace: DecisionWorkspace {
            id: d.workspace.0,
            name: d.workspace.1,
        },
        kind: d.kind,
        status: d.status,
        title: d.title,
        question: d.question,
        options: serde_json::from_value(d.options).unwrap_or_default(),
        persona: d.persona.map(|(id, name)| DecisionPersona { id, name }),
        account: d
            .account
            .map(|(code, platform)| DecisionAccount { code, platform }),
        post_id: d.post_id,
        detail,
        task_id: d.task_id,
        opened_by: DecisionOpener {
            kind: d.opened_by.0,
            name: d.opened_by.1,
        },
        notes: serde_json::from_value(d.notes).unwrap_or_default(),
        result: d.result,
        evidence: d.evidence,
        created_at: Utc(d.created_at),
        updated_at: Utc(d.updated_at),
        decided_by: d.decided_by,
        decided_at: d.decided_at.map(Utc),
    }
}

// ---------------------------------------------------------------------------------------------
// GET /decisions

fn member_scope(m: &MemberCaller) -> DecisionScope {
    DecisionScope::Organization(m.organization_id)
}

async fn list_decisions(
    ctx: Ctx,
    m: MemberCaller,
    req: Req<Nothing, DecisionQueryIn, Nothing>,
) -> Result<Reply<DecisionPage>, ApiError> {
    use DecisionStatus as S;
    let q = req.query;
    let statuses = match q.status {
        None => vec![S::Open, S::Handled],
        Some(DecisionStatusFilter::Open) => vec![S::Open],
        Some(DecisionStatusFilter::Handled) => vec![S::Handled],
        Some(DecisionStatusFilter::Resolved) => vec![S::Resolved],
        Some(DecisionStatusFilter::Dismissed) => vec![S::Dismissed],
        Some(DecisionStatusFilter::All) => vec![S::Open, S::Handled, S::Resolved, S::Dismissed],
    };
    let query = ListQuery {
        statuses,
        kind: q.kind,
        after: q.cursor.map(|c| c.0),
        limit: limit_or(q.limit, 50),
    };
    let page = ctx.decisions.list(m.organization_id, &query).await?;
    Ok(Reply::ok(DecisionPage {
        decisions: {
            let links = image_links(&ctx);
            page.items
                .into_iter()
                .map(|d| decision_out(d, &links))
                .collect()
        },
        next_cursor: page.next.map(Cursor),
    }))
}

// ---------------------------------------------------------------------------------------------
// The moves

fn move_reply(ctx: &Ctx, moved: Moved) -> Reply<DecisionMoveReply> {
    Reply::ok(DecisionMoveReply {
        result: if moved.unchanged {
            "unchanged"
        } else {
            "changed"
        }
        .to_owned(),
        follow_up_id: moved.follow_up,
        decision: decision_out(moved.decision, &image_links(ctx)),
    })
}

async fn person_move(
    ctx: Ctx,
    m: MemberCaller,
    id: Uuid,
    mv: Move,
    note: Option<Text<1, 1000>>,
) -> Result<Reply<DecisionMoveReply>, ApiError> {
    let request = MoveRequest {
        id,
        mv,
        note: note.map(String::from),
        person: m.name.clone(),
        decided_by: m.decided_by(),
        now: Timestamp::now(),
    };
    let moved = ctx.decisions.decide(member_scope(&m), &request).await??;
    Ok(move_reply(&ctx, moved))
}

async fn resolve(
    ctx: Ctx,
    m: MemberCaller,
    req: Req<IdPath, Nothing, DecisionResolveBody>,
) -> Result<Reply<DecisionMoveReply>, ApiError> {
    let mv = Move::new(Action::Resolve, None, None, req.body.set_avatar);
    person_move(ctx, m, req.path.id, mv, req.body.note).await
}

async fn dismiss(
    ctx: Ctx,
    m: MemberCaller,
    req: Req<IdPath, Nothing, DecisionDismissBody>,
) -> Result<Reply<DecisionMoveReply>, ApiError> {
    let mv = Move::new(Action::Dismiss, None, None, None);
    person_move(ctx, m, req.path.id, mv, req.body.note).await
}

async fn choose(
    ctx: Ctx,
    m: MemberCaller,
    req: Req<IdPath, Nothing, DecisionChooseBody>,
) -> Result<Reply<DecisionMoveReply>, ApiError> {
    let b = req.body;
    let mv = Move::new(
        Action::Choose,
        Some(b.option.into()),
        b.image_ids.map(List::into_vec),
        b.set_avatar,
    );
    person_move(ctx, m, req.path.id, mv, b.note).await
}

// ---------------------------------------------------------------------------------------------
// POST /issues/{id}/done

async fn complete_issue(
    ctx: Ctx,
    agent: AgentCaller,
    req: Req<IdPath, Nothing, IssueDoneBody>,
) -> Result<Reply<DecisionMoveReply>, ApiError> {
    let evidence = req.body.evidence.map(List::into_vec).unwrap_or_default();
    let asset_ids = EvidenceIn::asset_ids(&evidence);
    let report = DoneReport {
        id: req.path.id,
        result: req.body.result.into(),
        evidence: serde_json::to_value(&evidence).map_err(|e| ApiError::internal(e.into()))?,
        asset_ids,
    };
    let moved = ctx.decisions.complete(agent.agent_ref(), &report).await??;
    Ok(move_reply(&ctx, moved))
}

// ---------------------------------------------------------------------------------------------
// POST /issues/{id}/relay

async fn relay_issue(
    ctx: Ctx,
    agent: AgentCaller,
    req: Req<IdPath, Nothing, RelayIssueBody>,
) -> Result<Reply<DecisionMoveReply>, ApiError> {
    let b = req.body;
    b.on_behalf_of.staff_only(|| {
        ApiError::rejected(
            "clients never decide decisions: on_behalf_of.role must be agency or admin",
        )
    })?;
    let relay = RelayRecord::new(&agent, &b.on_behalf_of, &b.origin, b.effective_at.as_ref())?;
    let decided_by = relay.decided_by();
    let request = MoveRequest {
        id: req.path.id,
        mv: Move::new(
            b.action,
            b.option.map(String::from),
            b.image_ids.map(List::into_vec),
            b.set_avatar,
        ),
        note: b.note.map(String::from),
        person: b.on_behalf_of.name.0.clone(),
        decided_by,
        now: Timestamp::now(),
    };
    let moved = ctx
        .decisions
        .decide(DecisionScope::Agent(agent.agent_ref()), &request)
        .await??;
    Ok(move_reply(&ctx, moved))
}
