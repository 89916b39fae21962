//! Agent API: ads. `GET /ads` reads what the last sync of the workspace's ad accounts stored;
//! `POST /ads/proposals` asks a person for a change, which changes nothing until they approve
//! it (the `ad_change` decision). Disabled unless the workspace has ads enabled. The operations
//! and their types are `fleetdesk_ads::wire`, the rules `fleetdesk_ads::proposal`; each request
//! runs whole in the adapter's transaction.

use crate::ctx::Ctx;
use crate::error::ApiError;
use crate::fields::Int;
use crate::input::{Nothing, Req};
use crate::op::{ErasedOp, Reply, bind};
use fleetdesk_ads::ports::{AdsView, NewProposal};
use fleetdesk_ads::proposal::{Change, ProposalKind, check_amount, check_countries, check_days};
use fleetdesk_ads::wire::{
    AdsOut, AdsQuery, PersonAdsQuery, ProposalOut, ProposeBody, agent, personal,
};
use fleetdesk_kernel::money::Cents;
use fleetdesk_tenancy::{AgentCaller, MemberCaller};
use jiff::Timestamp;
use uuid::Uuid;

pub use fleetdesk_ads::wire::propose_rules;

/// The Personal API's read of a workspace's ads, for the people who approve changes.
pub fn register_personal(all: &mut Vec<Box<dyn ErasedOp>>) {
    all.push(bind::<personal::ViewAds, _, _, _>(view_ads));
}

pub fn register(all: &mut Vec<Box<dyn ErasedOp>>) {
    all.push(bind::<agent::ListAds, _, _, _>(list_ads));
    all.push(bind::<agent::ProposeAdChange, _, _, _>(propose));
}

// ---------------------------------------------------------------------------------------------
// GET /ads

async fn list_ads(
    ctx: Ctx,
    agent: AgentCaller,
    req: Req<Nothing, AdsQuery, Nothing>,
) -> Result<Reply<AdsOut>, ApiError> {
    let view = ads_of(
        &ctx,
        Some(agent.organization_id),
        agent.workspace_id,
        req.query.days,
    )
    .await??;
    Ok(Reply::ok(view.into()))
}

/// A workspace's ads over `days` (default 30) days to now.
async fn ads_of(
    ctx: &Ctx,
    organization: Option<Uuid>,
    workspace: Uuid,
    days: Option<Int<1, 90>>,
) -> anyhow::Result<Result<AdsView, fleetdesk_ads::AdsRefusal>> {
    let days = days.map_or(30, Int::get);
    ctx.ads
        .view(organization, workspace, days, Timestamp::now())
        .await
}

async fn view_ads(
    ctx: Ctx,
    m: MemberCaller,
    req: Req<Nothing, PersonAdsQuery, Nothing>,
) -> Result<Reply<AdsOut>, ApiError> {
    let view = ads_of(&ctx, m.organization_id, req.query.workspace, req.query.days)
        .await?
        .map_err(|r| {
            let e = ApiError::from(r);
            if e.status() == 404 {
                e.with_field("workspace")
            } else {
                e
            }
        })?;
    Ok(Reply::ok(view.into()))
}

// ---------------------------------------------------------------------------------------------
// POST /ads/proposals

/// The body read as a change: what each kind needs and takes ([`propose_rules`]), the amount,
/// days and countries checked.
fn change(b: ProposeBody) -> Result<Change, ApiError> {
    let kind = b.kind;
    let missing = |field: &str| ApiError::invalid(field, format!("required for a {kind} proposal"));
    let extra = |field: &str, given: bool| {
        if given {
            Err(ApiError::invalid(
                field,
                format!("not taken by a {kind} proposal"),
            ))
        } else {
            Ok(())
        }
    };
    let boost_only = [
        ("post_id", b.post_id.is_some()),
        ("ad_account_id", b.ad_account_id.is_some()),
        ("budget_type", b.budget_type.is_some()),
        ("days", b.days.is_some()),
        ("countries", b.countries.is_some()),
    ];
    let ad = || b.ad_id.clone().map(|a| a.0).ok_or_else(|| missing("ad_id"));
    let amount = || {
        let a = b.amount.ok_or_else(|| missing("amount"))?;
        Ok::<Cents, ApiError>(check_amount("amount", a)?)
    };
    match kind {
        ProposalKind::Pause | ProposalKind::Resume | ProposalKind::Budget => {
            for (field, given) in boost_only {
                extra(field, given)?;
            }
            match kind {
                ProposalKind::Budget => Ok(Change::Budget {
                    ad_id: ad()?,
                    amount: amount()?,
                }),
                _ => {
                    extra("amount", b.amount.is_some())?;
                    let ad_id = ad()?;
                    Ok(if kind == ProposalKind::Pause {
                        Change::Pause { ad_id }
                    } else {
                        Change::Resume { ad_id }
                    })
                }
            }
        }
        ProposalKind::Boost => {
            extra("ad_id", b.ad_id.is_some())?;
            let countries: Vec<String> = b
                .countries
                .clone()
                .map(|c| c.0.into_iter().map(|c| c.0).collect())
                .unwrap_or_default();
            Ok(Change::Boost {
                post_id: b.post_id.ok_or_else(|| missing("post_id"))?,
                ad_account_id: b
                    .ad_account_id
                    .clone()
                    .map(|a| a.0)
                    .ok_or_else(|| missing("ad_account_id"))?,
                budget_type: b.budget_type.ok_or_else(|| missing("budget_type"))?,
                amount: amount()?,
                days: check_days(b.days.map(Int::get).ok_or_else(|| missing("days"))?)?,
                countries: check_countries(&countries)?,
            })
        }
    }
}

async fn propose(
    ctx: Ctx,
    agent: AgentCaller,
    req: Req<Nothing, Nothing, ProposeBody>,
) -> Result<Reply<ProposalOut>, ApiError> {
    let reason = req.body.reason.0.trim().to_owned();
    let proposal = NewProposal {
        change: change(req.body)?,
        reason,
        now: Timestamp::now(),
    };
    let made = ctx.ads.propose(agent.agent_ref(), &proposal).await??;
    Ok(Reply::created(made.into()))
}
