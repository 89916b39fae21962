//! Personal API: the person's day (`GET /today`). The use case is [`crate::today`].

use crate::ctx::Ctx;
use crate::error::ApiError;
use crate::input::{Nothing, Req};
use crate::op::{ErasedOp, HttpMethod, OpSpec, Reply, bind};
use crate::today::{Today, TodayCredits};
use fleetdesk_tenancy::{MemberCaller, PersonalAccess};
use jiff::Timestamp;
use serde::Deserialize;
use utoipa::ToSchema;
use uuid::Uuid;
use validator::Validate;

pub fn register(all: &mut Vec<Box<dyn ErasedOp>>) {
    all.push(bind::<GetToday, _, _, _>(get_today));
}

fleetdesk_kernel::operations! {
    /// The organization's day, bound to [`get_today`]: the dashboard's Today and task board
    /// read it through this handle.
    pub GetToday(Nothing, TodayQueryIn, Nothing) -> Today =
        OpSpec::personal(HttpMethod::Get, "/today", PersonalAccess::Agency)
        .tool("today")
        .also_answers(&[404])
        .summary("The organization's day: coverage, review queue, decisions, cards, agents")
        .description(
            "Agency people and platform admins; clients are refused (403). Per workspace \
             of the member's organization (a platform admin: the one named by \
             `organization`, else the one the key is bound to, else every organization; \
             an agency person naming another organization gets 404 naming \
             `organization`), archived workspaces left out: the market date's coverage of every \
             active account (target, published, scheduled, missing; what agents reported \
             published or scheduled on the account's market date, each account counted up \
             to its daily target, as work_today counts it), the review queue \
             (internal_review, client_review), decisions waiting for a person (open or \
             handled) by kind, task cards waiting for confirmation (and those waiting over \
             24 hours), and each agent's last heartbeat (`silent` when none for over its \
             interval: the tenant file's `silent_after_hours`, 24 by default) with its cron health: jobs whose latest run failed, and enabled jobs \
             that missed their schedule (for the last due time whose whole period has \
             passed — the next due time is at or before now — no run started from one \
             minute before it, the job being reported by then; due times from the \
             expression in the job's zone). Per workspace too, its community groups: \
             each active space with its latest digest (day, members, when reported, the \
             5 interests and 5 intents most members carry, with their member counts; \
             null when none was reported) and the open tickets of its spaces, in all and \
             by category. Beside the workspaces, `credits`: per organization in view, its \
             paid research this month (Asia/Taipei): monthly_credit_limit, stop_at (three \
             times the limit: approvals are refused once `charged` reaches it), \
             suspended, charged, and the ledger's lines, newest first, at most 200 \
             (`{research_id, item, credits, reason, charged_at}`, one per research item \
             found and not cached).",
        );
}

#[derive(Debug, Deserialize, Validate, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct TodayQueryIn {
    /// Platform admins: only this organization's workspaces.
    pub organization: Option<Uuid>,
}

async fn get_today(
    ctx: Ctx,
    m: MemberCaller,
    req: Req<Nothing, TodayQueryIn, Nothing>,
) -> Result<Reply<Today>, ApiError> {
    let organization = m.organization_in_view(req.query.organization)?;
    let now = Timestamp::now();
    let mut day = ctx.person_day.today(organization, now).await?;
    let month_start = fleetdesk_ads::research::month_start(now);
    day.credits = ctx
        .research
        .credits(organization, month_start)
        .await?
        .into_iter()
        .map(|c| TodayCredits::new(c, month_start))
        .collect();
    Ok(Reply::ok(day))
}
