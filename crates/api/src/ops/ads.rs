//! Agent API: paid ad research, quote then approve. The operations and their types are
//! `fleetdesk_ads::wire`, the rules `fleetdesk_ads`; each request runs whole in the adapter's
//! transaction (or one snapshot). Agents never spend money on their own: a quote is free and
//! queries nothing; the work runs only after a person's approval, relayed by the agent.

use super::relay::{RelayRecord, StaffOnly};
use crate::ctx::Ctx;
use crate::error::ApiError;
use crate::fields::{Cursor, limit_or};
use crate::input::{Nothing, Req};
use crate::op::{ErasedOp, Reply, bind};
use fleetdesk_ads::AdsRefusal;
use fleetdesk_ads::ports::{Approval, NewQuote, ResearchListQuery};
use fleetdesk_ads::wire::{
    ApproveResearchBody, QuoteBody, QuoteReply, ResearchListIn, ResearchListOut, ResearchOut,
    agent, personal,
};
use fleetdesk_kernel::wire::fields::IdPath;
use fleetdesk_tenancy::{AgentCaller, MemberCaller};
use jiff::Timestamp;

pub use fleetdesk_ads::wire::quote_rules;

pub fn register(all: &mut Vec<Box<dyn ErasedOp>>) {
    all.push(bind::<agent::QuoteAdResearch, _, _, _>(quote));
    all.push(bind::<agent::ApproveAdResearch, _, _, _>(approve));
    all.push(bind::<agent::GetAdResearch, _, _, _>(get));
}

impl From<AdsRefusal> for ApiError {
    fn from(r: AdsRefusal) -> ApiError {
        match r {
            AdsRefusal::Invalid { field, message } => ApiError::invalid(field, message),
            AdsRefusal::AdsDisabled => ApiError::forbidden(r.to_string()),
            AdsRefusal::NotFound(missing) => ApiError::not_found(missing.to_string()),
            AdsRefusal::NotFoundField { field, message } => {
                ApiError::not_found(message).with_field(field)
            }
            AdsRefusal::Rejected(rule) => ApiError::rejected(rule.to_string()),
            AdsRefusal::RejectedField { field, message } => {
                ApiError::rejected(message).with_field(field)
            }
        }
    }
}

// ---------------------------------------------------------------------------------------------
// POST /ad-research/quote

async fn quote(
    ctx: Ctx,
    agent: AgentCaller,
    req: Req<Nothing, Nothing, QuoteBody>,
) -> Result<Reply<QuoteReply>, ApiError> {
    let b = req.body;
    let request = NewQuote {
        kind: b.kind,
        items: b.items.0.into_iter().map(String::from).collect(),
        lane: b.lane.map(|l| l.0.trim().to_owned()),
    };
    let quoted = ctx
        .research
        .quote(agent.agent_ref(), &request, Timestamp::now())
        .await??;
    Ok(Reply::created(QuoteReply {
        request_id: quoted.id,
        kind: request.kind,
        lane: request.lane,
        quote: quoted.quote,
    }))
}

// ---------------------------------------------------------------------------------------------
// POST /ad-research/{id}/approve

async fn approve(
    ctx: Ctx,
    agent: AgentCaller,
    req: Req<IdPath, Nothing, ApproveResearchBody>,
) -> Result<Reply<ResearchOut>, ApiError> {
    let b = req.body;
    b.on_behalf_of.staff_only(|| {
        ApiError::rejected(
            "clients never approve paid research: on_behalf_of.role must be agency or admin",
        )
    })?;
    let relay = RelayRecord::new(&agent, &b.on_behalf_of, &b.origin, b.effective_at.as_ref())?;
    let approval = Approval {
        id: req.path.id,
        approved_by: relay.decided_by(),
        message_ref: b.origin.message_ref.as_ref().map(|m| m.to_string()),
        daily_quota: ctx.config.ad_research_daily_quota,
        now: Timestamp::now(),
    };
    let record = ctx.research.approve(agent.agent_ref(), &approval).await??;
    Ok(Reply::ok(ResearchOut::of(record, approval.now)))
}

// ---------------------------------------------------------------------------------------------
// GET /ad-research/{id}

async fn get(
    ctx: Ctx,
    agent: AgentCaller,
    req: Req<IdPath, Nothing, Nothing>,
) -> Result<Reply<ResearchOut>, ApiError> {
    let record = ctx.research.get(agent.agent_ref(), req.path.id).await??;
    Ok(Reply::ok(ResearchOut::of(record, Timestamp::now())))
}

// ---------------------------------------------------------------------------------------------
// GET /api/user/v1/ad-research

/// The Personal API's read of research: the organization's requests, for the people who turn
/// their cards into picks.
pub fn register_personal(all: &mut Vec<Box<dyn ErasedOp>>) {
    all.push(bind::<personal::ListAdResearch, _, _, _>(list_research));
}

async fn list_research(
    ctx: Ctx,
    m: MemberCaller,
    req: Req<Nothing, ResearchListIn, Nothing>,
) -> Result<Reply<ResearchListOut>, ApiError> {
    let q = req.query;
    let query = ResearchListQuery {
        workspace: q.workspace,
        status: q.status,
        after: q.cursor.map(|c| c.0),
        limit: limit_or(q.limit, 20),
    };
    let page = ctx.research.list(m.organization_id, &query).await?;
    let now = Timestamp::now();
    Ok(Reply::ok(ResearchListOut {
        research: page
            .items
            .into_iter()
            .map(|r| ResearchOut::of(r, now))
            .collect(),
        next_cursor: page.next.map(Cursor),
    }))
}
