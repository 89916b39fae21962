//! `GET /ads`, `POST /ads/proposals`, and a person's move on an `ad_change` decision (inside
//! the decision's transaction): each loads the facts [`fleetdesk_ads::change`] judges and
//! writes its plan.

use super::{KnownAdRow, SyncedAdRow, Ts, Tx};
use crate::db::PgStore;
use crate::decisions::open_decision;
use crate::jobs::enqueue_in;
use crate::rows::Stored;
use crate::schema::{ad_accounts, ad_proposals, posts, workspaces};
use diesel::prelude::*;
use diesel_async::RunQueryDsl;
use fleetdesk_ads::change::{
    ApprovalRefusal, BoostAccount, BoostPost, CapFacts, LockedProposal, ProposalFacts, SyncedAd,
    TargetFacts, check_enabled, plan_approval, plan_proposal, waiting_since,
};
use fleetdesk_ads::ports::{
    AdAccountView, AdView, AdsRepo, AdsView, CampaignTotals, CapView, NewProposal, ProposalRecord,
};
use fleetdesk_ads::proposal::{
    AdStatus, BudgetType, Change, PROPOSALS_SHOWN, ProposalKind, ProposalStatus, dismissed,
    first_day, month_start,
};
use fleetdesk_ads::{AdsMissing, AdsRefusal};
use fleetdesk_kernel::money::Cents;
use fleetdesk_kernel::{AgentRef, BoxFuture};
use jiff::Timestamp;
use serde_json::Value;
use uuid::Uuid;

statements!(
    WORKSPACE_READ => WorkspaceRow,
    SPENT => SpentRow,
    CAMPAIGNS => CampaignRow,
    SERVICE_ADS => AdRow,
    PROPOSALS => ProposalRow,
    PROPOSAL_BY_ID => ProposalRow,
    AD => SyncedAdRow,
    INSERT_PROPOSAL,
    LOCK_BY_DECISION => LockedRow,
    RUNNING_ADS => KnownAdRow,
);

/// The workspace's ads switch and cap (`GET /ads`), of the organization `$2` (any when null)
/// and not archived.
const WORKSPACE_READ: &str = r#"
SELECT ads_enabled, (monthly_ad_cap * 100)::int8 AS cap, ad_cap_currency FROM workspaces
WHERE id = $1 AND ($2::uuid IS NULL OR organization_id = $2) AND archived_at IS NULL
"#;

/// What the workspace's ad accounts in the currency `$3` spent from the day `$2`.
const SPENT: &str = r#"
SELECT (coalesce(sum(d.spend), 0) * 100)::int8 AS spent
FROM ad_campaign_days d
JOIN ad_campaigns c ON c.workspace_id = d.workspace_id AND c.id = d.campaign_id
JOIN ad_accounts a ON a.workspace_id = c.workspace_id AND a.id = c.ad_account_id
WHERE d.workspace_id = $1 AND d.day >= $2 AND a.currency = $3
"#;

/// Every campaign with its numbers summed from the day `$2`, the most spent first.
const CAMPAIGNS: &str = r#"
SELECT c.id, c.ad_account_id, c.name, c.status, c.by_fleetdesk,
       (coalesce(sum(d.spend), 0) * 100)::int8 AS spend,
       coalesce(sum(d.impressions), 0)::bigint AS impressions,
       coalesce(sum(d.reach), 0)::bigint AS reach,
       coalesce(sum(d.clicks), 0)::bigint AS clicks,
       coalesce(sum(d.results), 0)::bigint AS results
FROM ad_campaigns c
LEFT JOIN ad_campaign_days d
       ON d.workspace_id = c.workspace_id AND d.campaign_id = c.id AND d.day >= $2
WHERE c.workspace_id = $1
GROUP BY c.workspace_id, c.id
ORDER BY spend DESC, c.id
"#;

const SERVICE_ADS: &str = r#"
SELECT id, ad_account_id, campaign_id, kind, status, budget_type, (budget * 100)::int8 AS budget,
       starts_at, ends_at, post_id, story_id
FROM ads
WHERE workspace_id = $1 AND by_fleetdesk
ORDER BY starts_at DESC NULLS LAST, id
"#;

macro_rules! proposal_select {
    () => {
        r#"
SELECT id, kind, status, ad_id, post_id, ad_account_id, budget_type, (amount * 100)::int8 AS amount,
       days, countries, reason, decision_id, result, created_at, decided_by, decided_at,
       executed_at
FROM ad_proposals
"#
    };
}

const PROPOSALS: &str = concat!(
    proposal_select!(),
    "WHERE workspace_id = $1 AND created_at >= $2 ORDER BY created_at DESC, id"
);

const PROPOSAL_BY_ID: &str = concat!(proposal_select!(), "WHERE id = $1");

/// A synced ad of the workspace with its account's currency.
const AD: &str = r#"
SELECT a.status, a.budget_type, (a.budget * 100)::int8 AS budget, acc.currency
FROM ads a JOIN ad_accounts acc ON acc.workspace_id = a.workspace_id AND acc.id = a.ad_account_id
WHERE a.workspace_id = $1 AND a.id = $2
"#;

const INSERT_PROPOSAL: &str = r#"
INSERT INTO ad_proposals (id, organization_id, workspace_id, agent_id, kind, target, ad_id,
                          post_id, ad_account_id, budget_type, amount, days, countries, reason,
                          decision_id, created_at)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, ($11::int8 / 100.0)::numeric(14, 2), $12, $13, $14,
        $15, $16)
"#;

/// The proposal an `ad_change` decision opened, locked, with the workspace's cap.
const LOCK_BY_DECISION: &str = r#"
SELECT p.workspace_id, (w.monthly_ad_cap * 100)::int8 AS cap, w.ad_cap_currency, p.id, p.kind,
       p.status, p.ad_id, (p.amount * 100)::int8 AS amount, p.created_at
FROM ad_proposals p JOIN workspaces w ON w.id = p.workspace_id
WHERE p.decision_id = $1
FOR UPDATE OF p
"#;

/// The running ads of the workspace's accounts in the currency `$2`, one per ad set: a
/// budget is its ad set's, counted once however many of its ads run.
const RUNNING_ADS: &str = r#"
SELECT DISTINCT ON (a.adset_id) a.status, a.budget_type, (a.budget * 100)::int8 AS budget
FROM ads a JOIN ad_accounts acc ON acc.workspace_id = a.workspace_id AND acc.id = a.ad_account_id
WHERE a.workspace_id = $1 AND a.status = $3 AND acc.currency = $2
ORDER BY a.adset_id
"#;

row! {
    struct WorkspaceRow {
        ads_enabled: bool,
        cap: Option<i64>,
        ad_cap_currency: Option<String>,
    }
}

selectable! {
    #[diesel(table_name = ad_accounts)]
    struct AccountRow into AdAccountView {
        id: String,
        name: String,
        currency: String,
        status: Option<String>,
        synced_at: Option<Ts>,
        sync_error: Option<String>,
    }
}

selectable! {
    #[diesel(table_name = ad_accounts)]
    struct BoostAccountRow into BoostAccount {
        currency: String,
        instagram_user_id: Option<String>,
    }
}

selectable! {
    #[diesel(table_name = posts)]
    struct BoostPostRow into BoostPost {
        platform: String,
        status: String,
        platform_post_id: Option<String>,
    }
}

row! {
    struct SpentRow {
        spent: i64,
    }
}

row! {
    struct CampaignRow into CampaignTotals {
        id: String,
        ad_account_id: String,
        name: String,
        status: String,
        by_fleetdesk: bool,
        spend: i64,
        impressions: i64,
        reach: i64,
        clicks: i64,
        results: i64,
    }
}

row! {
    struct AdRow into AdView {
        id: String,
        ad_account_id: String,
        campaign_id: String,
        kind: String,
        status: Stored<AdStatus>,
        budget_type: Stored<BudgetType>,
        budget: i64,
        starts_at: Option<Ts>,
        ends_at: Option<Ts>,
        post_id: Option<Uuid>,
        story_id: Option<String>,
    }
}

row! {
    struct ProposalRow into ProposalRecord {
        id: Uuid,
        kind: Stored<ProposalKind>,
        status: Stored<ProposalStatus>,
        ad_id: Option<String>,
        post_id: Option<Uuid>,
        ad_account_id: Option<String>,
        budget_type: Option<Stored<BudgetType>>,
        amount: Option<i64>,
        days: Option<i32>,
        countries: Vec<String>,
        reason: String,
        decision_id: Uuid,
        result: Option<Value>,
        created_at: Ts,
        decided_by: Option<Value>,
        decided_at: Option<Ts>,
        executed_at: Option<Ts>,
    }
}

row! {
    struct LockedRow {
        workspace_id: Uuid,
        cap: Option<i64>,
        ad_cap_currency: Option<String>,
        #[diesel(embed)]
        proposal: LockedProposalRow,
    }
}

row! {
    struct LockedProposalRow into LockedProposal {
        id: Uuid,
        kind: Stored<ProposalKind>,
        status: Stored<ProposalStatus>,
        ad_id: Option<String>,
        amount: Option<i64>,
        created_at: Ts,
    }
}

// ---------------------------------------------------------------------------------------------
// Agents: GET /ads, POST /ads/proposals

async fn spent(conn: Tx<'_>, ws: Uuid, since: Timestamp, currency: &str) -> anyhow::Result<Cents> {
    let since = jiff_diesel::Date::from(fleetdesk_ads::research::quota_day(since));
    let row: SpentRow = sql!(SPENT, ws, since, currency).get_result(conn).await?;
    Ok(Cents(row.spent))
}

async fn view_tx(
    conn: Tx<'_>,
    organization: Option<Uuid>,
    workspace_id: Uuid,
    days: i64,
    now: Timestamp,
) -> anyhow::Result<Result<AdsView, AdsRefusal>> {
    let found: Option<WorkspaceRow> = sql!(WORKSPACE_READ, workspace_id, organization)
        .get_result(conn)
        .await
        .optional()?;
    let Some(ws) = found else {
        return Ok(Err(AdsRefusal::NotFound(AdsMissing::Workspace)));
    };
    if let Err(refusal) = check_enabled(ws.ads_enabled) {
        return Ok(Err(refusal));
    }
    let cap = match (ws.cap, ws.ad_cap_currency) {
        (Some(limit), Some(currency)) => Some(CapView {
            spent_this_month: spent(conn, workspace_id, month_start(now), &currency).await?,
            monthly_limit: Cents(limit),
            currency,
        }),
        _ => None,
    };
    let accounts: Vec<AccountRow> = ad_accounts::table
        .filter(ad_accounts::workspace_id.eq(workspace_id))
        .order(ad_accounts::id)
        .select(AccountRow::as_select())
        .load(conn)
        .await?;
    let campaigns: Vec<CampaignRow> = sql!(
        CAMPAIGNS,
        workspace_id,
        jiff_diesel::Date::from(first_day(now, days))
    )
    .load(conn)
    .await?;
    let ads: Vec<AdRow> = sql!(SERVICE_ADS, workspace_id).load(conn).await?;
    let proposals: Vec<ProposalRow> =
        sql!(PROPOSALS, workspace_id, Ts::from(now - PROPOSALS_SHOWN))
            .load(conn)
            .await?;
    Ok(Ok(AdsView {
        cap,
        ad_accounts: accounts.into_iter().map(Into::into).collect(),
        campaigns: campaigns
            .into_iter()
            .map(|c| CampaignTotals::from(c).into())
            .collect(),
        ads: ads.into_iter().map(Into::into).collect(),
        proposals: proposals
            .into_iter()
            .map(|p| ProposalRecord::from(p).at(now))
            .collect(),
    }))
}

/// A synced ad of the workspace, with its account's currency.
async fn synced_ad(conn: Tx<'_>, ws: Uuid, ad_id: &str) -> anyhow::Result<Option<SyncedAd>> {
    let row: Option<SyncedAdRow> = sql!(AD, ws, ad_id).get_result(conn).await.optional()?;
    Ok(row.map(Into::into))
}

/// What the change names, as the workspace holds it.
async fn target(conn: Tx<'_>, ws: Uuid, change: &Change) -> anyhow::Result<TargetFacts> {
    Ok(match change {
        Change::Pause { ad_id } | Change::Resume { ad_id } | Change::Budget { ad_id, .. } => {
            TargetFacts::Ad(synced_ad(conn, ws, ad_id).await?)
        }
        Change::Boost {
            post_id,
            ad_account_id,
            ..
        } => {
            let post: Option<BoostPostRow> = posts::table
                .filter(posts::id.eq(post_id))
                .filter(posts::workspace_id.eq(ws))
                .select(BoostPostRow::as_select())
                .first(conn)
                .await
                .optional()?;
            let account: Option<BoostAccountRow> = ad_accounts::table
                .filter(ad_accounts::workspace_id.eq(ws))
                .filter(ad_accounts::id.eq(ad_account_id))
                .select(BoostAccountRow::as_select())
                .first(conn)
                .await
                .optional()?;
            TargetFacts::Boost {
                post: post.map(Into::into),
                account: account.map(Into::into),
            }
        }
    })
}

async fn propose_tx(
    conn: Tx<'_>,
    agent: AgentRef,
    p: &NewProposal,
) -> anyhow::Result<Result<ProposalRecord, AdsRefusal>> {
    // The workspace's ads switch, locked against concurrent proposals (`FOR NO KEY UPDATE`:
    // foreign-key checks of other writes still pass).
    let ads_enabled: bool = workspaces::table
        .find(agent.workspace_id)
        .select(workspaces::ads_enabled)
        .for_no_key_update()
        .get_result(conn)
        .await?;
    let target_facts = target(conn, agent.workspace_id, &p.change).await?;
    let waiting: Option<Uuid> = ad_proposals::table
        .filter(ad_proposals::workspace_id.eq(agent.workspace_id))
        .filter(ad_proposals::kind.eq(p.change.kind().as_str()))
        .filter(ad_proposals::target.eq(p.change.target()))
        .filter(ad_proposals::status.eq(ProposalStatus::Waiting.as_str()))
        .filter(ad_proposals::created_at.gt(Ts::from(waiting_since(p.now))))
        .select(ad_proposals::decision_id)
        .first(conn)
        .await
        .optional()?;
    let facts = ProposalFacts {
        ads_enabled,
        target: target_facts,
        waiting,
    };
    let plan = match plan_proposal(p, facts, Uuid::new_v4()) {
        Ok(plan) => plan,
        Err(refusal) => return Ok(Err(refusal)),
    };
    // Accepted: a waiting proposal past its 7 days gives its place up (the workspace's are
    // marked expired, their decisions dismissed), so the unique index admits the new one.
    super::work::expire(conn, Some(agent.workspace_id), p.now).await?;
    let c = &plan.columns;
    let decision = open_decision(conn, agent, &plan.decision).await?;
    sql!(
        INSERT_PROPOSAL,
        plan.id,
        agent.organization_id,
        agent.workspace_id,
        agent.agent_id,
        plan.kind.as_str(),
        &plan.target,
        c.ad_id.as_deref(),
        c.post_id,
        c.ad_account_id.as_deref(),
        c.budget_type.map(|b| b.as_str()),
        c.amount.map(|a| a.0),
        c.days,
        &c.countries,
        &p.reason,
        decision,
        Ts::from(p.now)
    )
    .execute(conn)
    .await?;
    let row: ProposalRow = sql!(PROPOSAL_BY_ID, plan.id).get_result(conn).await?;
    Ok(Ok(ProposalRecord::from(row).at(p.now)))
}

impl AdsRepo for PgStore {
    fn view(
        &self,
        organization: Option<Uuid>,
        workspace: Uuid,
        days: i64,
        now: Timestamp,
    ) -> BoxFuture<'_, anyhow::Result<Result<AdsView, AdsRefusal>>> {
        self.snapshot(async move |conn| view_tx(conn, organization, workspace, days, now).await)
    }

    fn propose<'a>(
        &'a self,
        agent: AgentRef,
        proposal: &'a NewProposal,
    ) -> BoxFuture<'a, anyhow::Result<Result<ProposalRecord, AdsRefusal>>> {
        self.tx(async move |conn| propose_tx(conn, agent, proposal).await)
    }
}

// ---------------------------------------------------------------------------------------------
// A person's move on an `ad_change` decision (inside the decision's transaction)

/// Resolving: [`plan_approval`] over the proposal, its synced ad and the workspace's cap; an
/// approval that stands queues its change for the ad work, executed as `decided_by`. `Err` is
/// why it cannot be approved.
pub(crate) async fn approve_change(
    conn: Tx<'_>,
    decision_id: Uuid,
    decided_by: &Value,
    now: Timestamp,
) -> anyhow::Result<Result<(), ApprovalRefusal>> {
    let row: LockedRow = sql!(LOCK_BY_DECISION, decision_id).get_result(conn).await?;
    let p = LockedProposal::from(row.proposal);
    let (mut ad, mut cap) = (None, None);
    if let Some(ad_id) = p.ad_to_check() {
        ad = synced_ad(conn, row.workspace_id, ad_id).await?;
        if let (Some(limit), Some(currency), Some(_)) = (row.cap, row.ad_cap_currency, &ad) {
            let running: Vec<KnownAdRow> = sql!(
                RUNNING_ADS,
                row.workspace_id,
                &currency,
                AdStatus::Running.as_str()
            )
            .load(conn)
            .await?;
            cap = Some(CapFacts {
                limit: Cents(limit),
                spent: spent(conn, row.workspace_id, month_start(now), &currency).await?,
                running: running.into_iter().map(Into::into).collect(),
                currency,
            });
        }
    }
    let approved = match plan_approval(&p, ad, cap, now) {
        Ok(approved) => approved,
        Err(refusal) => return Ok(Err(refusal)),
    };
    diesel::update(ad_proposals::table.filter(ad_proposals::id.eq(p.id)))
        .set((
            ad_proposals::status.eq(approved.status.as_str()),
            ad_proposals::decided_by.eq(decided_by),
            ad_proposals::decided_at.eq(Ts::from(now)),
        ))
        .execute(conn)
        .await?;
    enqueue_in(conn, &approved.job).await?;
    Ok(Ok(()))
}

/// Dismissing: a waiting proposal is refused (expired, when its 7 days passed); nothing
/// reaches the platform.
pub(crate) async fn refuse_change(
    conn: Tx<'_>,
    decision_id: Uuid,
    decided_by: &Value,
    now: Timestamp,
) -> anyhow::Result<()> {
    use ad_proposals as p;
    let waiting: Option<(Uuid, Ts)> = p::table
        .filter(p::decision_id.eq(decision_id))
        .filter(p::status.eq(ProposalStatus::Waiting.as_str()))
        .for_update()
        .select((p::id, p::created_at))
        .first(conn)
        .await
        .optional()?;
    let Some((id, created_at)) = waiting else {
        return Ok(());
    };
    diesel::update(p::table.filter(p::id.eq(id)))
        .set((
            p::status.eq(dismissed(created_at.into(), now).as_str()),
            p::decided_by.eq(decided_by),
            p::decided_at.eq(Ts::from(now)),
        ))
        .execute(conn)
        .await?;
    Ok(())
}
