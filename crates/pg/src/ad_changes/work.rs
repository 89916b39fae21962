//! The ad work's writes: a sync stored, proposals expired or failed when the queue gave up,
//! and an approved change executed under its job's lease ([`plan_step`], [`made_boost`]).

use super::{IdRow, Ts, Tx};
use crate::db::{PgStore, column};
use crate::jobs::{finish_in, hold};
use crate::rows::Stored;
use crate::schema::{ad_accounts, ad_campaign_days, ad_campaigns, ad_proposals, ads, decisions};
use diesel::dsl;
use diesel::prelude::*;
use diesel_async::RunQueryDsl;
use fleetdesk_ads::change::{
    ChangeFacts, Settled, StepPlan, failure, made_boost, plan_step, proposal_of,
};
use fleetdesk_ads::platform::{AccountSnapshot, AdAccountRef, CHANGE_JOB, Executed, PlatformError};
use fleetdesk_ads::ports::{AdWorkRepo, ChangeStep};
use fleetdesk_ads::proposal::{
    BudgetType, EXPIRED_NOTE, GIVEN_UP as GIVEN_UP_MOVE, ProposalKind, ProposalStatus, expiry,
    given_up_result,
};
use fleetdesk_decisions::rules::dismissed_by_service;
use fleetdesk_kernel::BoxFuture;
use fleetdesk_kernel::jobs::{Job, JobStatus};
use jiff::Timestamp;
use serde_json::Value;
use uuid::Uuid;

statements!(
    LOCK_EXPIRED => IdRow,
    GIVEN_UP => GivenUpRow,
    FAIL_GIVEN_UP => SettledRow,
    SYNC_TARGETS => TargetRow,
    UPSERT_CAMPAIGNS,
    INSERT_DAYS,
    UPSERT_ADS,
    CHANGE => ChangeRow,
    SERVICE_AD,
);

/// The decisions of waiting proposals created before `$1` (of the workspace `$2`, or all when
/// null), locked first: a person's move locks the decision, then its proposal, and so does
/// expiry, so the two never wait on each other in opposite orders.
const LOCK_EXPIRED: &str = r#"
SELECT d.id FROM decisions d JOIN ad_proposals p ON p.decision_id = d.id
WHERE p.status = $3 AND p.created_at <= $1 AND ($2::uuid IS NULL OR p.workspace_id = $2)
ORDER BY d.id
FOR UPDATE OF d
"#;

/// Approved proposals (`$3`) whose change job (`$1`) the queue gave up (`$2`), locked, with the
/// queue's last error and when it gave up.
const GIVEN_UP: &str = r#"
SELECT p.id, j.last_error, coalesce(j.finished_at, $4) AS at
FROM ad_proposals p JOIN jobs j ON j.kind = $1 AND j.key = p.id::text AND j.status = $2
WHERE p.status = $3
ORDER BY p.id
FOR UPDATE OF p
"#;

row! {
    struct GivenUpRow {
        id: Uuid,
        last_error: Option<String>,
        at: Ts,
    }
}

/// Those proposals fail, each with its result; answers them as settled.
const FAIL_GIVEN_UP: &str = r#"
UPDATE ad_proposals p SET status = $1, executed_at = t.at, result = t.result
FROM unnest($2::uuid[], $3::timestamptz[], $4::jsonb[]) AS t(id, at, result)
WHERE p.id = t.id
RETURNING p.id, p.workspace_id, p.agent_id, p.kind, p.ad_id, p.post_id, p.status, p.result
"#;

row! {
    /// A proposal as it settled (by raw SQL, or diesel's `returning` in column order).
    #[derive(diesel::Queryable)]
    struct SettledRow {
        id: Uuid,
        workspace_id: Uuid,
        agent_id: Uuid,
        kind: String,
        ad_id: Option<String>,
        post_id: Option<Uuid>,
        status: Stored<ProposalStatus>,
        result: Option<Value>,
    }
}

impl SettledRow {
    fn settled(self) -> Settled {
        Settled {
            id: self.id,
            workspace_id: self.workspace_id,
            agent_id: self.agent_id,
            kind: self.kind,
            ad_id: self.ad_id,
            post_id: self.post_id,
            status: self.status.0,
            result: self.result.unwrap_or_default(),
        }
    }
}

/// The events of settled proposals, written in the settling transaction.
async fn tell_settled(conn: Tx<'_>, rows: Vec<SettledRow>) -> anyhow::Result<()> {
    let events: Vec<_> = rows
        .into_iter()
        .filter_map(|r| r.settled().event())
        .collect();
    crate::events::write(conn, &events).await
}

const SYNC_TARGETS: &str = r#"
SELECT a.workspace_id, a.id, a.currency, a.token_env
FROM ad_accounts a JOIN workspaces w ON w.id = a.workspace_id
WHERE w.ads_enabled AND w.archived_at IS NULL
ORDER BY a.workspace_id, a.id
"#;

const UPSERT_CAMPAIGNS: &str = r#"
INSERT INTO ad_campaigns (workspace_id, id, ad_account_id, name, status, synced_at)
SELECT $1, c.id, $2, c.name, c.status, $6
FROM unnest($3::text[], $4::text[], $5::text[]) AS c(id, name, status)
ON CONFLICT (workspace_id, id) DO UPDATE
SET name = EXCLUDED.name, status = EXCLUDED.status, synced_at = EXCLUDED.synced_at
"#;

const INSERT_DAYS: &str = r#"
INSERT INTO ad_campaign_days (workspace_id, campaign_id, day, spend, impressions, reach, clicks,
                              results)
SELECT $1, d.campaign_id, d.day, (d.spend / 100.0)::numeric(14, 2), d.impressions, d.reach,
       d.clicks, d.results
FROM unnest($2::text[], $3::date[], $4::int8[], $5::bigint[], $6::bigint[], $7::bigint[],
            $8::bigint[]) AS d(campaign_id, day, spend, impressions, reach, clicks, results)
"#;

/// The account's ads as synced; an ad promoting a post of the workspace is linked to it. What
/// the service made stays marked so (an ad of a campaign the service made is the service's).
const UPSERT_ADS: &str = r#"
INSERT INTO ads (workspace_id, id, ad_account_id, campaign_id, adset_id, name, kind, status,
                 budget_type, budget, starts_at, ends_at, story_id, post_id, synced_at,
                 by_fleetdesk)
SELECT $1, a.id, $2, a.campaign_id, a.adset_id, a.name,
       CASE WHEN a.story_id IS NULL THEN 'other' ELSE 'boost' END, a.status, a.budget_type,
       (a.budget / 100.0)::numeric(14, 2), a.starts_at, a.ends_at, a.story_id,
       (SELECT p.id FROM posts p
        WHERE p.workspace_id = $1 AND p.platform_post_id = a.story_id
        ORDER BY p.created_at LIMIT 1),
       $13,
       EXISTS (SELECT 1 FROM ad_campaigns c
               WHERE c.workspace_id = $1 AND c.id = a.campaign_id AND c.by_fleetdesk)
FROM unnest($3::text[], $4::text[], $5::text[], $6::text[], $7::text[], $8::text[],
            $9::int8[], $10::timestamptz[], $11::timestamptz[], $12::text[])
     AS a(id, campaign_id, adset_id, name, status, budget_type, budget, starts_at, ends_at,
          story_id)
ON CONFLICT (workspace_id, id) DO UPDATE
SET campaign_id = EXCLUDED.campaign_id, adset_id = EXCLUDED.adset_id, name = EXCLUDED.name,
    status = EXCLUDED.status, budget_type = EXCLUDED.budget_type, budget = EXCLUDED.budget,
    starts_at = EXCLUDED.starts_at, ends_at = EXCLUDED.ends_at, story_id = EXCLUDED.story_id,
    post_id = coalesce(EXCLUDED.post_id, ads.post_id), synced_at = EXCLUDED.synced_at,
    kind = CASE WHEN ads.by_fleetdesk THEN ads.kind ELSE EXCLUDED.kind END
"#;

/// An approved proposal with what executing it needs, locked.
const CHANGE: &str = r#"
SELECT p.workspace_id, p.id, p.kind, p.status, p.ad_id, p.post_id, (p.amount * 100)::int8 AS amount,
       p.budget_type AS proposed_budget_type, p.days, p.countries, p.result, p.decided_at,
       coalesce(a.ad_account_id, p.ad_account_id) AS ad_account_id, acc.currency, acc.token_env,
       acc.instagram_user_id,
       a.adset_id, a.campaign_id, a.budget_type AS ad_budget_type, po.platform,
       po.platform_post_id,
       (SELECT s.market FROM account_slots s WHERE s.id = po.slot_id) AS market
FROM ad_proposals p
LEFT JOIN ads a ON a.workspace_id = p.workspace_id AND a.id = p.ad_id
LEFT JOIN ad_accounts acc
       ON acc.workspace_id = p.workspace_id AND acc.id = coalesce(a.ad_account_id, p.ad_account_id)
LEFT JOIN posts po ON po.id = p.post_id
WHERE p.id = $1
FOR UPDATE OF p
"#;

const SERVICE_AD: &str = r#"
INSERT INTO ads (workspace_id, id, ad_account_id, campaign_id, adset_id, name, kind, status,
                 budget_type, budget, starts_at, ends_at, story_id, post_id, by_fleetdesk,
                 synced_at)
VALUES ($1, $2, $3, $4, $5, $6, $14, $15, $7, ($8::int8 / 100.0)::numeric(14, 2), $9, $10, $11,
        $12, true, $13)
ON CONFLICT (workspace_id, id) DO UPDATE SET by_fleetdesk = true, kind = EXCLUDED.kind,
    post_id = EXCLUDED.post_id
"#;

row! {
    struct TargetRow {
        workspace_id: Uuid,
        #[diesel(embed)]
        account: AccountRow,
    }
}

row! {
    struct AccountRow into AdAccountRef {
        id: String,
        currency: String,
        token_env: String,
    }
}

row! {
    struct ChangeRow {
        workspace_id: Uuid,
        #[diesel(embed)]
        facts: FactsRow,
    }
}

row! {
    struct FactsRow into ChangeFacts {
        id: Uuid,
        kind: Option<Stored<ProposalKind>>,
        status: Option<Stored<ProposalStatus>>,
        ad_id: Option<String>,
        post_id: Option<Uuid>,
        amount: Option<i64>,
        proposed_budget_type: Option<Stored<BudgetType>>,
        days: Option<i32>,
        countries: Vec<String>,
        result: Option<Value>,
        decided_at: Option<Ts>,
        ad_account_id: Option<String>,
        currency: Option<String>,
        token_env: Option<String>,
        instagram_user_id: Option<String>,
        adset_id: Option<String>,
        campaign_id: Option<String>,
        ad_budget_type: Option<Stored<BudgetType>>,
        platform: Option<String>,
        platform_post_id: Option<String>,
        /// The boosted post's market: the countries of a boost that names none.
        market: Option<String>,
    }
}

pub(super) async fn expire(
    conn: Tx<'_>,
    workspace: Option<Uuid>,
    now: Timestamp,
) -> anyhow::Result<u64> {
    let expiry = expiry(now);
    let locked: Vec<IdRow> = sql!(
        LOCK_EXPIRED,
        Ts::from(expiry.created_by),
        workspace,
        expiry.from.as_str()
    )
    .load(conn)
    .await?;
    if locked.is_empty() {
        return Ok(0);
    }
    let ids: Vec<Uuid> = locked.into_iter().map(|r| r.id).collect();
    // Those proposals expire.
    let n = diesel::update(
        ad_proposals::table
            .filter(ad_proposals::decision_id.eq_any(&ids))
            .filter(ad_proposals::status.eq(expiry.from.as_str())),
    )
    .set(ad_proposals::status.eq(expiry.to.as_str()))
    .execute(conn)
    .await?;
    // Their decisions are dismissed by the service (`fleetdesk_decisions::rules::
    // dismissed_by_service`).
    let close = dismissed_by_service(EXPIRED_NOTE, now);
    let at = Ts::from(close.at);
    diesel::update(decisions::table.filter(decisions::id.eq_any(&ids)).filter(
        decisions::status.eq_any(close.from.iter().map(|s| s.as_str()).collect::<Vec<_>>()),
    ))
    .set((
        decisions::status.eq(close.status.as_str()),
        decisions::decided_by.eq(close.decided_by.to_json()),
        decisions::decided_at.eq(at),
        decisions::updated_at.eq(at),
        decisions::notes.eq(decisions::notes.concat(&close.notes)),
    ))
    .execute(conn)
    .await?;
    Ok(n as u64)
}

/// Approved proposals whose change the job queue gave up on fail
/// ([`fleetdesk_ads::proposal::given_up`]): how many.
async fn fail_given_up(conn: Tx<'_>, now: Timestamp) -> anyhow::Result<u64> {
    let rows: Vec<GivenUpRow> = sql!(
        GIVEN_UP,
        CHANGE_JOB,
        JobStatus::Failed.as_str(),
        GIVEN_UP_MOVE.0.as_str(),
        Ts::from(now)
    )
    .load(conn)
    .await?;
    if rows.is_empty() {
        return Ok(0);
    }
    let failed: Vec<SettledRow> = sql!(
        FAIL_GIVEN_UP,
        GIVEN_UP_MOVE.1.as_str(),
        column(&rows, |r| r.id),
        column(&rows, |r| r.at),
        column(&rows, |r| given_up_result(r.last_error.as_deref()))
    )
    .load(conn)
    .await?;
    tell_settled(conn, failed).await?;
    Ok(rows.len() as u64)
}

async fn store_sync_tx(
    conn: Tx<'_>,
    ws: Uuid,
    account: &str,
    since: jiff::civil::Date,
    outcome: &Result<AccountSnapshot, PlatformError>,
    now: Timestamp,
) -> anyhow::Result<()> {
    let snapshot = match outcome {
        Ok(s) => s,
        Err(error) => {
            diesel::update(ad_accounts::table.find((ws, account)))
                .set(ad_accounts::sync_error.eq(&error.0))
                .execute(conn)
                .await?;
            return Ok(());
        }
    };
    let at = Ts::from(now);
    // One sync of an account at a time: a second (an instance whose lease ran out) waits.
    ad_accounts::table
        .find((ws, account))
        .select(ad_accounts::id)
        .for_update()
        .load::<String>(conn)
        .await?;
    diesel::update(ad_accounts::table.find((ws, account)))
        .set((
            ad_accounts::status.eq(&snapshot.status),
            ad_accounts::synced_at.eq(at),
            ad_accounts::sync_error.eq(None::<String>),
        ))
        .execute(conn)
        .await?;
    let c = &snapshot.campaigns;
    sql!(
        UPSERT_CAMPAIGNS,
        ws,
        account,
        column(c, |c| c.id.as_str()),
        column(c, |c| c.name.as_str()),
        column(c, |c| c.status.as_str()),
        at
    )
    .execute(conn)
    .await?;
    // The account's days from `since` on, which the sync reads anew.
    diesel::delete(
        ad_campaign_days::table
            .filter(ad_campaign_days::workspace_id.eq(ws))
            .filter(ad_campaign_days::day.ge(jiff_diesel::Date::from(since)))
            .filter(
                ad_campaign_days::campaign_id.eq_any(
                    ad_campaigns::table
                        .filter(ad_campaigns::workspace_id.eq(ws))
                        .filter(ad_campaigns::ad_account_id.eq(account))
                        .select(ad_campaigns::id),
                ),
            ),
    )
    .execute(conn)
    .await?;
    let days = snapshot.days_from(since);
    sql!(
        INSERT_DAYS,
        ws,
        column(&days, |(c, _)| *c),
        column(&days, |(_, d)| jiff_diesel::Date::from(d.day)),
        column(&days, |(_, d)| d.spend.0),
        column(&days, |(_, d)| d.impressions),
        column(&days, |(_, d)| d.reach),
        column(&days, |(_, d)| d.clicks),
        column(&days, |(_, d)| d.results)
    )
    .execute(conn)
    .await?;
    let a = &snapshot.ads;
    sql!(
        UPSERT_ADS,
        ws,
        account,
        column(a, |a| a.id.as_str()),
        column(a, |a| a.campaign_id.as_str()),
        column(a, |a| a.adset_id.as_str()),
        column(a, |a| a.name.as_str()),
        column(a, |a| a.status.as_str()),
        column(a, |a| a.budget_type.as_str()),
        column(a, |a| a.budget.0),
        column(a, |a| a.starts_at.map(Ts::from)),
        column(a, |a| a.ends_at.map(Ts::from)),
        column(a, |a| a.story_id.as_deref()),
        at
    )
    .execute(conn)
    .await?;
    // Ads of the account the sync no longer saw (deleted, archived or in review), but the
    // service's own: a boost in review, or made after the sync read the account, stays listed.
    diesel::delete(
        ads::table
            .filter(ads::workspace_id.eq(ws))
            .filter(ads::ad_account_id.eq(account))
            // One array bind (`<> ALL($n)`), whatever the number of ads seen.
            .filter(ads::id.ne_all(column(a, |a| a.id.as_str())))
            .filter(dsl::not(ads::by_fleetdesk)),
    )
    .execute(conn)
    .await?;
    Ok(())
}

/// An approved proposal as loaded under its job's lease, locked; `None` when it is gone.
async fn change_facts(conn: Tx<'_>, id: Uuid) -> anyhow::Result<Option<(Uuid, ChangeFacts)>> {
    let row: Option<ChangeRow> = sql!(CHANGE, id).get_result(conn).await.optional()?;
    Ok(row.map(|r| (r.workspace_id, r.facts.into())))
}

/// The proposal settles with its result, and its agent is told.
async fn settle(
    conn: Tx<'_>,
    id: Uuid,
    status: ProposalStatus,
    result: &Value,
    now: Timestamp,
) -> anyhow::Result<()> {
    let settled: Vec<SettledRow> =
        diesel::update(ad_proposals::table.filter(ad_proposals::id.eq(id)))
            .set((
                ad_proposals::status.eq(status.as_str()),
                ad_proposals::result.eq(result),
                ad_proposals::executed_at.eq(Ts::from(now)),
            ))
            .returning((
                ad_proposals::id,
                ad_proposals::workspace_id,
                ad_proposals::agent_id,
                ad_proposals::kind,
                ad_proposals::ad_id,
                ad_proposals::post_id,
                ad_proposals::status,
                ad_proposals::result,
            ))
            .load(conn)
            .await?;
    tell_settled(conn, settled).await
}

async fn change_step_tx(
    conn: Tx<'_>,
    job: &Job,
    now: Timestamp,
) -> anyhow::Result<Option<ChangeStep>> {
    if !hold(conn, job).await? {
        return Ok(None);
    }
    let id = proposal_of(job)?;
    let facts = change_facts(conn, id).await?.map(|(_, f)| f);
    let plan = facts.map_or(StepPlan::Done, |f| plan_step(&f, now));
    match plan {
        StepPlan::Done => {}
        StepPlan::Fail(result) => settle(conn, id, ProposalStatus::Failed, &result, now).await?,
        StepPlan::Execute {
            account,
            change,
            started,
        } => {
            diesel::update(ad_proposals::table.filter(ad_proposals::id.eq(id)))
                .set(ad_proposals::result.eq(started))
                .execute(conn)
                .await?;
            return Ok(Some(ChangeStep::Execute {
                proposal_id: id,
                account,
                change,
            }));
        }
    }
    Ok(finish_in(conn, job).await?.then_some(ChangeStep::Done))
}

async fn record_execution_tx(
    conn: Tx<'_>,
    job: &Job,
    id: Uuid,
    outcome: &Result<Executed, PlatformError>,
    now: Timestamp,
) -> anyhow::Result<bool> {
    if !hold(conn, job).await? {
        return Ok(false);
    }
    match outcome {
        Err(error) => settle(conn, id, ProposalStatus::Failed, &failure(&error.0), now).await?,
        Ok(executed) => {
            settle(conn, id, ProposalStatus::Executed, &executed.result, now).await?;
            if let Some(created) = &executed.created {
                let (ws, facts) = change_facts(conn, id)
                    .await?
                    .ok_or_else(|| anyhow::anyhow!("ad proposal {id} vanished under its lease"))?;
                let made = made_boost(&facts, created, now);
                let at = Ts::from(now);
                diesel::insert_into(ad_campaigns::table)
                    .values((
                        ad_campaigns::workspace_id.eq(ws),
                        ad_campaigns::id.eq(&made.campaign_id),
                        ad_campaigns::ad_account_id.eq(&made.ad_account_id),
                        ad_campaigns::name.eq(&made.name),
                        ad_campaigns::status.eq(made.status.as_str()),
                        ad_campaigns::by_fleetdesk.eq(true),
                        ad_campaigns::synced_at.eq(at),
                    ))
                    .on_conflict((ad_campaigns::workspace_id, ad_campaigns::id))
                    .do_update()
                    .set(ad_campaigns::by_fleetdesk.eq(true))
                    .execute(conn)
                    .await?;
                sql!(
                    SERVICE_AD,
                    ws,
                    &made.ad_id,
                    &made.ad_account_id,
                    &made.campaign_id,
                    &made.adset_id,
                    &made.name,
                    made.budget_type.as_str(),
                    made.budget.0,
                    Ts::from(made.starts_at),
                    Ts::from(made.ends_at),
                    made.story_id.as_deref(),
                    made.post_id,
                    at,
                    made.kind,
                    made.status.as_str()
                )
                .execute(conn)
                .await?;
            }
        }
    }
    finish_in(conn, job).await
}

impl AdWorkRepo for PgStore {
    fn sync_targets(&self) -> BoxFuture<'_, anyhow::Result<Vec<(Uuid, AdAccountRef)>>> {
        self.snapshot(async move |conn| {
            let rows: Vec<TargetRow> = sql!(SYNC_TARGETS).load(conn).await?;
            Ok(rows
                .into_iter()
                .map(|r| (r.workspace_id, r.account.into()))
                .collect())
        })
    }

    fn store_sync<'a>(
        &'a self,
        workspace_id: Uuid,
        account_id: &'a str,
        since: jiff::civil::Date,
        outcome: &'a Result<AccountSnapshot, PlatformError>,
        now: Timestamp,
    ) -> BoxFuture<'a, anyhow::Result<()>> {
        self.tx(async move |conn| {
            store_sync_tx(conn, workspace_id, account_id, since, outcome, now).await
        })
    }

    fn expire_proposals(&self, now: Timestamp) -> BoxFuture<'_, anyhow::Result<u64>> {
        self.tx(async move |conn| {
            let expired = expire(conn, None, now).await?;
            Ok(expired + fail_given_up(conn, now).await?)
        })
    }

    fn change_step<'a>(
        &'a self,
        job: &'a Job,
        now: Timestamp,
    ) -> BoxFuture<'a, anyhow::Result<Option<ChangeStep>>> {
        self.tx(async move |conn| change_step_tx(conn, job, now).await)
    }

    fn record_execution<'a>(
        &'a self,
        job: &'a Job,
        proposal_id: Uuid,
        outcome: &'a Result<Executed, PlatformError>,
        now: Timestamp,
    ) -> BoxFuture<'a, anyhow::Result<bool>> {
        self.tx(async move |conn| record_execution_tx(conn, job, proposal_id, outcome, now).await)
    }
}
