//! Ad picks: people make and cancel them from research cards (Personal API); an agent reads
//! those on its own accounts and drafts a sponsored post with one (`pick` of POST /drafts).
//! The operations and their types are `fleetdesk_ads::wire`, the rules `fleetdesk_ads::pick`;
//! each request runs whole in the adapter's transaction.

use super::common::MoveResult;
use crate::ctx::Ctx;
use crate::error::ApiError;
use crate::input::{Nothing, Req};
use crate::op::{ErasedOp, Reply, bind};
use fleetdesk_ads::ports::{NewPick, PickPerson};
use fleetdesk_ads::wire::{
    CancelPickReply, CreatePickBody, PickOut, PickPath, PicksQuery, PicksReply, agent, personal,
};
use fleetdesk_tenancy::{AgentCaller, MemberCaller};
use jiff::Timestamp;

pub fn register(all: &mut Vec<Box<dyn ErasedOp>>) {
    all.push(bind::<agent::GetAdPick, _, _, _>(get_pick));
    all.push(bind::<agent::ListAdPicks, _, _, _>(list_picks));
    all.push(bind::<personal::CreateAdPick, _, _, _>(create_pick));
    all.push(bind::<personal::CancelAdPick, _, _, _>(cancel_pick));
}

fn person(m: &MemberCaller) -> PickPerson {
    PickPerson {
        person_id: m.person_id,
        organization_id: m.organization_id,
    }
}

async fn get_pick(
    ctx: Ctx,
    agent: AgentCaller,
    req: Req<PickPath, Nothing, Nothing>,
) -> Result<Reply<PickOut>, ApiError> {
    let pick = ctx.picks.get(agent.agent_ref(), req.path.pick.0).await??;
    Ok(Reply::ok(pick.into()))
}

async fn list_picks(
    ctx: Ctx,
    agent: AgentCaller,
    req: Req<Nothing, PicksQuery, Nothing>,
) -> Result<Reply<PicksReply>, ApiError> {
    let filter = req.query.status.unwrap_or_default();
    let picks = ctx.picks.list(agent.agent_ref(), filter).await?;
    Ok(Reply::ok(PicksReply {
        picks: picks.into_iter().map(PickOut::from).collect(),
    }))
}

async fn create_pick(
    ctx: Ctx,
    m: MemberCaller,
    req: Req<Nothing, Nothing, CreatePickBody>,
) -> Result<Reply<PickOut>, ApiError> {
    let b = req.body;
    let pick = NewPick {
        research_id: b.research_id,
        item: b.item.0,
        code: b.code.0.as_str().to_owned(),
        platform: b.platform,
        note: b.note.map(|n| n.0.trim().to_owned()),
        now: Timestamp::now(),
    };
    let made = ctx.picks.create(person(&m), &pick).await??;
    Ok(Reply::created(made.into()))
}

async fn cancel_pick(
    ctx: Ctx,
    m: MemberCaller,
    req: Req<PickPath, Nothing, Nothing>,
) -> Result<Reply<CancelPickReply>, ApiError> {
    let (pick, changed) = ctx
        .picks
        .cancel(person(&m), req.path.pick.0, Timestamp::now())
        .await??;
    Ok(Reply::ok(CancelPickReply {
        pick: pick.into(),
        result: MoveResult::of(changed),
    }))
}
