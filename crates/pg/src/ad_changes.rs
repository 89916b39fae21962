//! The ads ports over PostgreSQL: what `GET /ads` reads (the last sync's data, summed in one
//! statement per part), a proposal checked and stored with its `ad_change` decision in one
//! transaction, a person's approval or refusal inside the decision's transaction (the cap
//! judged on the synced spend), and the background work: storing a sync, expiring proposals,
//! and executing an approved change under its job's lease.

use crate::db::{PgStore, prepared};
use crate::jobs::{enqueue_in, finish_in, hold};
use diesel::sql_types::{
    Array, BigInt, Bool, Date, Integer, Jsonb, Nullable, Text, Timestamptz, Uuid as SqlUuid,
};
use diesel::{OptionalExtension, QueryableByName};
use diesel_async::{AsyncPgConnection, RunQueryDsl};
use fleetdesk_ads::AdsRefusal;
use fleetdesk_ads::platform::{AccountSnapshot, AdAccountRef, CHANGE_JOB, Executed, Execution};
use fleetdesk_ads::ports::{
    AdAccountView, AdView, AdWorkRepo, AdsRepo, AdsView, CampaignView, CapView, ChangeStep,
    NewProposal, ProposalRecord,
};
use fleetdesk_ads::proposal::{
    ADS_DISABLED, AdStatus, BudgetType, CapState, Change, EXPIRED_NOTE, GIVEN_UP as GIVEN_UP_MOVE,
    KnownAd, PROPOSAL_VALIDITY, PROPOSALS_SHOWN, ProposalKind, ProposalStatus, boost_period,
    check_ad_state, check_boost_account, check_boost_post, check_cap, committed,
    days_left_in_month, decision_title, dismissed, expired, expiry, given_up_result, month_start,
    ratios,
};
use fleetdesk_decisions::rules::dismissed_by_service;
use fleetdesk_kernel::jobs::{Job, JobStatus, NewJob};
use fleetdesk_kernel::money::Cents;
use fleetdesk_kernel::{AgentRef, BoxFuture};
use jiff::Timestamp;
use serde_json::{Value, json};
use uuid::Uuid;

type Ts = jiff_diesel::Timestamp;
type Tx<'c> = &'c mut AsyncPgConnection;

statements!(
    WORKSPACE,
    WORKSPACE_READ,
    ACCOUNTS,
    SPENT,
    CAMPAIGNS,
    SERVICE_ADS,
    PROPOSALS,
    AD,
    ACCOUNT,
    POST,
    WAITING,
    OPEN_DECISION,
    INSERT_PROPOSAL,
    PROPOSAL_BY_ID,
    LOCK_EXPIRED,
    EXPIRE,
    GIVEN_UP,
    FAIL_GIVEN_UP,
    CLOSE_EXPIRED,
    LOCK_BY_DECISION,
    RUNNING_ADS,
    APPROVE,
    SYNC_TARGETS,
    LOCK_ACCOUNT,
    SYNCED,
    SYNC_FAILED,
    UPSERT_CAMPAIGNS,
    CLEAR_DAYS,
    INSERT_DAYS,
    UPSERT_ADS,
    DROP_ADS,
    CHANGE,
    START_CHANGE,
    SETTLE_CHANGE,
    SERVICE_CAMPAIGN,
    SERVICE_AD,
);

/// The workspace's ads switch and cap, locked against concurrent proposals (`FOR NO KEY
/// UPDATE`: foreign-key checks of other writes still pass).
const WORKSPACE: &str = r#"
SELECT ads_enabled, (monthly_ad_cap * 100)::int8 AS cap, ad_cap_currency FROM workspaces
WHERE id = $1
FOR NO KEY UPDATE
"#;

/// The same, read without a lock (`GET /ads`), of the organization `$2` (any when null) and
/// not archived.
const WORKSPACE_READ: &str = r#"
SELECT ads_enabled, (monthly_ad_cap * 100)::int8 AS cap, ad_cap_currency FROM workspaces
WHERE id = $1 AND ($2::uuid IS NULL OR organization_id = $2) AND archived_at IS NULL
"#;

const ACCOUNTS: &str = r#"
SELECT id, name, currency, status, synced_at, sync_error FROM ad_accounts
WHERE workspace_id = $1 ORDER BY id
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

const ACCOUNT: &str =
    "SELECT currency, instagram_user_id FROM ad_accounts WHERE workspace_id = $1 AND id = $2";

const POST: &str = r#"
SELECT platform, status, platform_post_id FROM posts WHERE id = $1 AND workspace_id = $2
"#;

/// A proposal of the kind for the target still waiting (created after `$4`: within its 7 days).
const WAITING: &str = r#"
SELECT decision_id FROM ad_proposals
WHERE workspace_id = $1 AND kind = $2 AND target = $3 AND status = 'waiting' AND created_at > $4
"#;

const OPEN_DECISION: &str = r#"
INSERT INTO decisions (organization_id, workspace_id, kind, status, title, options, detail,
                       post_id, opened_by_type, opened_by_agent)
VALUES ($1, $2, 'ad_change', 'open', $3, '[]'::jsonb, $4, $5, 'agent', $6)
RETURNING id
"#;

const INSERT_PROPOSAL: &str = r#"
INSERT INTO ad_proposals (id, organization_id, workspace_id, agent_id, kind, target, ad_id,
                          post_id, ad_account_id, budget_type, amount, days, countries, reason,
                          decision_id, created_at)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, ($11::int8 / 100.0)::numeric(14, 2), $12, $13, $14,
        $15, $16)
"#;

/// The decisions of waiting proposals created before `$1` (of the workspace `$2`, or all when
/// null), locked first: a person's move locks the decision, then its proposal, and so does
/// expiry, so the two never wait on each other in opposite orders.
const LOCK_EXPIRED: &str = r#"
SELECT d.id FROM decisions d JOIN ad_proposals p ON p.decision_id = d.id
WHERE p.status = $3 AND p.created_at <= $1 AND ($2::uuid IS NULL OR p.workspace_id = $2)
ORDER BY d.id
FOR UPDATE OF d
"#;

/// Those proposals expire.
const EXPIRE: &str = r#"
UPDATE ad_proposals SET status = $3 WHERE decision_id = ANY($1) AND status = $2
"#;

/// Their decisions are dismissed by the service (`fleetdesk_decisions::rules::
/// dismissed_by_service`).
const CLOSE_EXPIRED: &str = r#"
UPDATE decisions
SET status = $3, decided_by = $4, decided_at = $2, updated_at = $2, notes = notes || $5
WHERE id = ANY($1) AND status = ANY($6)
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

#[derive(QueryableByName)]
struct GivenUpRow {
    #[diesel(sql_type = SqlUuid)]
    id: Uuid,
    #[diesel(sql_type = Nullable<Text>)]
    last_error: Option<String>,
    #[diesel(sql_type = Timestamptz)]
    at: Ts,
}

/// Those proposals fail, each with its result.
const FAIL_GIVEN_UP: &str = r#"
UPDATE ad_proposals p SET status = $1, executed_at = t.at, result = t.result
FROM unnest($2::uuid[], $3::timestamptz[], $4::jsonb[]) AS t(id, at, result)
WHERE p.id = t.id
"#;

/// The proposal an `ad_change` decision opened, locked, with the workspace's cap.
const LOCK_BY_DECISION: &str = r#"
SELECT p.id, p.workspace_id, p.kind, p.status, p.ad_id, (p.amount * 100)::int8 AS amount,
       p.created_at, (w.monthly_ad_cap * 100)::int8 AS cap, w.ad_cap_currency
FROM ad_proposals p JOIN workspaces w ON w.id = p.workspace_id
WHERE p.decision_id = $1
FOR UPDATE OF p
"#;

/// The running ads of the workspace's accounts in the currency `$2`, one per ad set: a
/// budget is its ad set's, counted once however many of its ads run.
const RUNNING_ADS: &str = r#"
SELECT DISTINCT ON (a.adset_id) a.status, a.budget_type, (a.budget * 100)::int8 AS budget, acc.currency
FROM ads a JOIN ad_accounts acc ON acc.workspace_id = a.workspace_id AND acc.id = a.ad_account_id
WHERE a.workspace_id = $1 AND a.status = 'running' AND acc.currency = $2
ORDER BY a.adset_id
"#;

const APPROVE: &str = r#"
UPDATE ad_proposals SET status = 'approved', decided_by = $2, decided_at = $3 WHERE id = $1
"#;

const SYNC_TARGETS: &str = r#"
SELECT a.workspace_id, a.id, a.currency, a.token_env
FROM ad_accounts a JOIN workspaces w ON w.id = a.workspace_id
WHERE w.ads_enabled AND w.archived_at IS NULL
ORDER BY a.workspace_id, a.id
"#;

const LOCK_ACCOUNT: &str =
    "SELECT 1 FROM ad_accounts WHERE workspace_id = $1 AND id = $2 FOR UPDATE";

const SYNCED: &str = r#"
UPDATE ad_accounts SET status = $3, synced_at = $4, sync_error = NULL
WHERE workspace_id = $1 AND id = $2
"#;

const SYNC_FAILED: &str =
    "UPDATE ad_accounts SET sync_error = $3 WHERE workspace_id = $1 AND id = $2";

const UPSERT_CAMPAIGNS: &str = r#"
INSERT INTO ad_campaigns (workspace_id, id, ad_account_id, name, status, synced_at)
SELECT $1, c.id, $2, c.name, c.status, $6
FROM unnest($3::text[], $4::text[], $5::text[]) AS c(id, name, status)
ON CONFLICT (workspace_id, id) DO UPDATE
SET name = EXCLUDED.name, status = EXCLUDED.status, synced_at = EXCLUDED.synced_at
"#;

/// The account's days from `$3` on, which the sync reads anew.
const CLEAR_DAYS: &str = r#"
DELETE FROM ad_campaign_days d
USING ad_campaigns c
WHERE c.workspace_id = d.workspace_id AND c.id = d.campaign_id
  AND d.workspace_id = $1 AND c.ad_account_id = $2 AND d.day >= $3
"#;

const INSERT_DAYS: &str = r#"
INSERT INTO ad_campaign_days (workspace_id, campaign_id, day, spend, impressions, reach, clicks,
                              results)
SELECT $1, d.campaign_id, d.day, (d.spend / 100.0)::numeric(14, 2), d.impressions, d.reach, d.clicks,
       d.results
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

/// Ads of the account the sync no longer saw (deleted, archived or in review), but the
/// service's own: a boost in review, or made after the sync read the account, stays listed.
const DROP_ADS: &str = r#"
DELETE FROM ads
WHERE workspace_id = $1 AND ad_account_id = $2 AND NOT (id = ANY($3)) AND NOT by_fleetdesk
"#;

/// An approved proposal with what executing it needs, locked.
const CHANGE: &str = r#"
SELECT p.id, p.workspace_id, p.kind, p.status, p.ad_id, p.post_id, (p.amount * 100)::int8 AS amount,
       p.budget_type AS proposed_budget_type, p.days, p.countries, p.result, p.decided_at,
       coalesce(a.ad_account_id, p.ad_account_id) AS account_id, acc.currency, acc.token_env,
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

const START_CHANGE: &str = "UPDATE ad_proposals SET result = $2 WHERE id = $1";

const SETTLE_CHANGE: &str = r#"
UPDATE ad_proposals SET status = $2, result = $3, executed_at = $4 WHERE id = $1
"#;

const SERVICE_CAMPAIGN: &str = r#"
INSERT INTO ad_campaigns (workspace_id, id, ad_account_id, name, status, by_fleetdesk, synced_at)
VALUES ($1, $2, $3, $4, 'paused', true, $5)
ON CONFLICT (workspace_id, id) DO UPDATE SET by_fleetdesk = true
"#;

const SERVICE_AD: &str = r#"
INSERT INTO ads (workspace_id, id, ad_account_id, campaign_id, adset_id, name, kind, status,
                 budget_type, budget, starts_at, ends_at, story_id, post_id, by_fleetdesk,
                 synced_at)
VALUES ($1, $2, $3, $4, $5, $6, 'boost', 'paused', $7, ($8::int8 / 100.0)::numeric(14, 2), $9, $10, $11,
        $12, true, $13)
ON CONFLICT (workspace_id, id) DO UPDATE SET by_fleetdesk = true, kind = 'boost',
    post_id = EXCLUDED.post_id
"#;

// ---------------------------------------------------------------------------------------------
// Rows

#[derive(QueryableByName)]
struct WorkspaceRow {
    #[diesel(sql_type = Bool)]
    ads_enabled: bool,
    #[diesel(sql_type = Nullable<BigInt>)]
    cap: Option<i64>,
    #[diesel(sql_type = Nullable<Text>)]
    ad_cap_currency: Option<String>,
}

#[derive(QueryableByName)]
struct AccountRow {
    #[diesel(sql_type = Text)]
    id: String,
    #[diesel(sql_type = Text)]
    name: String,
    #[diesel(sql_type = Text)]
    currency: String,
    #[diesel(sql_type = Nullable<Text>)]
    status: Option<String>,
    #[diesel(sql_type = Nullable<Timestamptz>)]
    synced_at: Option<Ts>,
    #[diesel(sql_type = Nullable<Text>)]
    sync_error: Option<String>,
}

#[derive(QueryableByName)]
struct SpentRow {
    #[diesel(sql_type = BigInt)]
    spent: i64,
}

#[derive(QueryableByName)]
struct CampaignRow {
    #[diesel(sql_type = Text)]
    id: String,
    #[diesel(sql_type = Text)]
    ad_account_id: String,
    #[diesel(sql_type = Text)]
    name: String,
    #[diesel(sql_type = Text)]
    status: String,
    #[diesel(sql_type = Bool)]
    by_fleetdesk: bool,
    #[diesel(sql_type = BigInt)]
    spend: i64,
    #[diesel(sql_type = BigInt)]
    impressions: i64,
    #[diesel(sql_type = BigInt)]
    reach: i64,
    #[diesel(sql_type = BigInt)]
    clicks: i64,
    #[diesel(sql_type = BigInt)]
    results: i64,
}

#[derive(QueryableByName)]
struct AdRow {
    #[diesel(sql_type = Text)]
    id: String,
    #[diesel(sql_type = Text)]
    ad_account_id: String,
    #[diesel(sql_type = Text)]
    campaign_id: String,
    #[diesel(sql_type = Text)]
    kind: String,
    #[diesel(sql_type = Text)]
    status: String,
    #[diesel(sql_type = Text)]
    budget_type: String,
    #[diesel(sql_type = BigInt)]
    budget: i64,
    #[diesel(sql_type = Nullable<Timestamptz>)]
    starts_at: Option<Ts>,
    #[diesel(sql_type = Nullable<Timestamptz>)]
    ends_at: Option<Ts>,
    #[diesel(sql_type = Nullable<SqlUuid>)]
    post_id: Option<Uuid>,
    #[diesel(sql_type = Nullable<Text>)]
    story_id: Option<String>,
}

#[derive(QueryableByName)]
struct ProposalRow {
    #[diesel(sql_type = SqlUuid)]
    id: Uuid,
    #[diesel(sql_type = Text)]
    kind: String,
    #[diesel(sql_type = Text)]
    status: String,
    #[diesel(sql_type = Nullable<Text>)]
    ad_id: Option<String>,
    #[diesel(sql_type = Nullable<SqlUuid>)]
    post_id: Option<Uuid>,
    #[diesel(sql_type = Nullable<Text>)]
    ad_account_id: Option<String>,
    #[diesel(sql_type = Nullable<Text>)]
    budget_type: Option<String>,
    #[diesel(sql_type = Nullable<BigInt>)]
    amount: Option<i64>,
    #[diesel(sql_type = Nullable<Integer>)]
    days: Option<i32>,
    #[diesel(sql_type = Array<Text>)]
    countries: Vec<String>,
    #[diesel(sql_type = Text)]
    reason: String,
    #[diesel(sql_type = SqlUuid)]
    decision_id: Uuid,
    #[diesel(sql_type = Nullable<Jsonb>)]
    result: Option<Value>,
    #[diesel(sql_type = Timestamptz)]
    created_at: Ts,
    #[diesel(sql_type = Nullable<Jsonb>)]
    decided_by: Option<Value>,
    #[diesel(sql_type = Nullable<Timestamptz>)]
    decided_at: Option<Ts>,
    #[diesel(sql_type = Nullable<Timestamptz>)]
    executed_at: Option<Ts>,
}

#[derive(QueryableByName)]
struct KnownAdRow {
    #[diesel(sql_type = Text)]
    status: String,
    #[diesel(sql_type = Text)]
    budget_type: String,
    #[diesel(sql_type = BigInt)]
    budget: i64,
    #[diesel(sql_type = Text)]
    currency: String,
}

#[derive(QueryableByName)]
struct CurrencyRow {
    #[diesel(sql_type = Text)]
    currency: String,
    #[diesel(sql_type = Nullable<Text>)]
    instagram_user_id: Option<String>,
}

#[derive(QueryableByName)]
struct PostRow {
    #[diesel(sql_type = Text)]
    platform: String,
    #[diesel(sql_type = Text)]
    status: String,
    #[diesel(sql_type = Nullable<Text>)]
    platform_post_id: Option<String>,
}

#[derive(QueryableByName)]
struct DecisionIdRow {
    #[diesel(sql_type = SqlUuid)]
    decision_id: Uuid,
}

#[derive(QueryableByName)]
struct IdRow {
    #[diesel(sql_type = SqlUuid)]
    id: Uuid,
}

#[derive(QueryableByName)]
struct LockedRow {
    #[diesel(sql_type = SqlUuid)]
    id: Uuid,
    #[diesel(sql_type = SqlUuid)]
    workspace_id: Uuid,
    #[diesel(sql_type = Text)]
    kind: String,
    #[diesel(sql_type = Text)]
    status: String,
    #[diesel(sql_type = Nullable<Text>)]
    ad_id: Option<String>,
    #[diesel(sql_type = Nullable<BigInt>)]
    amount: Option<i64>,
    #[diesel(sql_type = Timestamptz)]
    created_at: Ts,
    #[diesel(sql_type = Nullable<BigInt>)]
    cap: Option<i64>,
    #[diesel(sql_type = Nullable<Text>)]
    ad_cap_currency: Option<String>,
}

#[derive(QueryableByName)]
struct TargetRow {
    #[diesel(sql_type = SqlUuid)]
    workspace_id: Uuid,
    #[diesel(sql_type = Text)]
    id: String,
    #[diesel(sql_type = Text)]
    currency: String,
    #[diesel(sql_type = Text)]
    token_env: String,
}

#[derive(QueryableByName)]
struct ChangeRow {
    #[diesel(sql_type = SqlUuid)]
    id: Uuid,
    #[diesel(sql_type = SqlUuid)]
    workspace_id: Uuid,
    #[diesel(sql_type = Text)]
    kind: String,
    #[diesel(sql_type = Text)]
    status: String,
    #[diesel(sql_type = Nullable<Text>)]
    ad_id: Option<String>,
    #[diesel(sql_type = Nullable<SqlUuid>)]
    post_id: Option<Uuid>,
    #[diesel(sql_type = Nullable<BigInt>)]
    amount: Option<i64>,
    #[diesel(sql_type = Nullable<Text>)]
    proposed_budget_type: Option<String>,
    #[diesel(sql_type = Nullable<Integer>)]
    days: Option<i32>,
    #[diesel(sql_type = Array<Text>)]
    countries: Vec<String>,
    #[diesel(sql_type = Nullable<Jsonb>)]
    result: Option<Value>,
    #[diesel(sql_type = Nullable<Timestamptz>)]
    decided_at: Option<Ts>,
    #[diesel(sql_type = Nullable<Text>)]
    account_id: Option<String>,
    #[diesel(sql_type = Nullable<Text>)]
    currency: Option<String>,
    #[diesel(sql_type = Nullable<Text>)]
    token_env: Option<String>,
    #[diesel(sql_type = Nullable<Text>)]
    instagram_user_id: Option<String>,
    #[diesel(sql_type = Nullable<Text>)]
    adset_id: Option<String>,
    #[diesel(sql_type = Nullable<Text>)]
    campaign_id: Option<String>,
    #[diesel(sql_type = Nullable<Text>)]
    ad_budget_type: Option<String>,
    #[diesel(sql_type = Nullable<Text>)]
    platform: Option<String>,
    #[diesel(sql_type = Nullable<Text>)]
    platform_post_id: Option<String>,
    /// The boosted post's market: the countries of a boost that names none.
    #[diesel(sql_type = Nullable<Text>)]
    market: Option<String>,
}

fn parsed<T>(what: &str, text: &str, parse: impl Fn(&str) -> Option<T>) -> anyhow::Result<T> {
    parse(text).ok_or_else(|| anyhow::anyhow!("stored {what} {text:?}"))
}

fn budget_type(text: &str) -> anyhow::Result<BudgetType> {
    parsed("budget type", text, BudgetType::parse)
}

impl KnownAdRow {
    fn known(&self) -> anyhow::Result<KnownAd> {
        Ok(KnownAd {
            status: parsed("ad status", &self.status, AdStatus::parse)?,
            budget_type: budget_type(&self.budget_type)?,
            budget: Cents(self.budget),
        })
    }
}

impl ProposalRow {
    /// The record as it stands at `now`: a waiting proposal past its 7 days shows expired.
    fn record(self, now: Timestamp) -> anyhow::Result<ProposalRecord> {
        let created_at = self.created_at.to_jiff();
        let mut status = parsed("proposal status", &self.status, ProposalStatus::parse)?;
        if status == ProposalStatus::Waiting && expired(created_at, now) {
            status = ProposalStatus::Expired;
        }
        Ok(ProposalRecord {
            id: self.id,
            kind: parsed("proposal kind", &self.kind, ProposalKind::parse)?,
            status,
            ad_id: self.ad_id,
            post_id: self.post_id,
            ad_account_id: self.ad_account_id,
            budget_type: self.budget_type.as_deref().map(budget_type).transpose()?,
            amount: self.amount.map(Cents),
            days: self.days,
            countries: self.countries,
            reason: self.reason,
            decision_id: self.decision_id,
            result: self.result,
            created_at,
            decided_by: self.decided_by,
            decided_at: self.decided_at.map(Ts::to_jiff),
            executed_at: self.executed_at.map(Ts::to_jiff),
        })
    }
}

fn day_of(t: Timestamp) -> jiff_diesel::Date {
    jiff_diesel::Date::from(fleetdesk_ads::research::quota_day(t))
}

// ---------------------------------------------------------------------------------------------
// Agents: GET /ads, POST /ads/proposals

/// The workspace's switch and cap (locked for a write): 403 when ads are disabled.
/// The agent's own workspace, locked, when it has ads enabled.
async fn workspace(conn: Tx<'_>, id: Uuid) -> anyhow::Result<Result<WorkspaceRow, AdsRefusal>> {
    let ws: WorkspaceRow = prepared(diesel::sql_query(WORKSPACE).bind::<SqlUuid, _>(id))
        .get_result(conn)
        .await?;
    Ok(enabled(ws))
}

fn enabled(ws: WorkspaceRow) -> Result<WorkspaceRow, AdsRefusal> {
    if ws.ads_enabled {
        Ok(ws)
    } else {
        Err(AdsRefusal::Forbidden(ADS_DISABLED.to_owned()))
    }
}

async fn spent(conn: Tx<'_>, ws: Uuid, since: Timestamp, currency: &str) -> anyhow::Result<Cents> {
    let row: SpentRow = prepared(
        diesel::sql_query(SPENT)
            .bind::<SqlUuid, _>(ws)
            .bind::<Date, _>(day_of(since))
            .bind::<Text, _>(currency),
    )
    .get_result(conn)
    .await?;
    Ok(Cents(row.spent))
}

async fn view_tx(
    conn: Tx<'_>,
    organization: Option<Uuid>,
    workspace_id: Uuid,
    days: i64,
    now: Timestamp,
) -> anyhow::Result<Result<AdsView, AdsRefusal>> {
    let found: Option<WorkspaceRow> = prepared(
        diesel::sql_query(WORKSPACE_READ)
            .bind::<SqlUuid, _>(workspace_id)
            .bind::<Nullable<SqlUuid>, _>(organization),
    )
    .get_result(conn)
    .await
    .optional()?;
    let Some(found) = found else {
        return Ok(Err(AdsRefusal::NotFound(
            "no such workspace in this organization".to_owned(),
        )));
    };
    let ws = match enabled(found) {
        Ok(ws) => ws,
        Err(refusal) => return Ok(Err(refusal)),
    };
    let cap = match (ws.cap, ws.ad_cap_currency) {
        (Some(limit), Some(currency)) => Some(CapView {
            spent_this_month: spent(conn, workspace_id, month_start(now), &currency).await?,
            monthly_limit: Cents(limit),
            currency,
        }),
        _ => None,
    };
    let accounts: Vec<AccountRow> =
        prepared(diesel::sql_query(ACCOUNTS).bind::<SqlUuid, _>(workspace_id))
            .load(conn)
            .await?;
    // `days` days, today (Taipei) included.
    let first_day = now - jiff::SignedDuration::from_hours(24 * (days - 1));
    let campaigns: Vec<CampaignRow> = prepared(
        diesel::sql_query(CAMPAIGNS)
            .bind::<SqlUuid, _>(workspace_id)
            .bind::<Date, _>(day_of(first_day)),
    )
    .load(conn)
    .await?;
    let ads: Vec<AdRow> = prepared(diesel::sql_query(SERVICE_ADS).bind::<SqlUuid, _>(workspace_id))
        .load(conn)
        .await?;
    let proposals: Vec<ProposalRow> = prepared(
        diesel::sql_query(PROPOSALS)
            .bind::<SqlUuid, _>(workspace_id)
            .bind::<Timestamptz, _>(Ts::from(now - PROPOSALS_SHOWN)),
    )
    .load(conn)
    .await?;
    Ok(Ok(AdsView {
        cap,
        ad_accounts: accounts
            .into_iter()
            .map(|a| AdAccountView {
                id: a.id,
                name: a.name,
                currency: a.currency,
                status: a.status,
                synced_at: a.synced_at.map(Ts::to_jiff),
                sync_error: a.sync_error,
            })
            .collect(),
        campaigns: campaigns
            .into_iter()
            .map(|c| {
                let (ctr, cpc) = ratios(Cents(c.spend), c.impressions, c.clicks);
                CampaignView {
                    id: c.id,
                    ad_account_id: c.ad_account_id,
                    name: c.name,
                    status: c.status,
                    spend: Cents(c.spend),
                    impressions: c.impressions,
                    reach: c.reach,
                    clicks: c.clicks,
                    ctr,
                    cpc,
                    results: c.results,
                    by_fleetdesk: c.by_fleetdesk,
                }
            })
            .collect(),
        ads: ads
            .into_iter()
            .map(|a| {
                Ok(AdView {
                    status: parsed("ad status", &a.status, AdStatus::parse)?,
                    budget_type: budget_type(&a.budget_type)?,
                    id: a.id,
                    ad_account_id: a.ad_account_id,
                    campaign_id: a.campaign_id,
                    kind: a.kind,
                    budget: Cents(a.budget),
                    starts_at: a.starts_at.map(Ts::to_jiff),
                    ends_at: a.ends_at.map(Ts::to_jiff),
                    post_id: a.post_id,
                    story_id: a.story_id,
                })
            })
            .collect::<anyhow::Result<_>>()?,
        proposals: proposals
            .into_iter()
            .map(|p| p.record(now))
            .collect::<anyhow::Result<_>>()?,
    }))
}

async fn expire(conn: Tx<'_>, workspace: Option<Uuid>, now: Timestamp) -> anyhow::Result<u64> {
    let expiry = expiry(now);
    let locked: Vec<IdRow> = prepared(
        diesel::sql_query(LOCK_EXPIRED)
            .bind::<Timestamptz, _>(Ts::from(expiry.created_by))
            .bind::<Nullable<SqlUuid>, _>(workspace)
            .bind::<Text, _>(expiry.from.as_str()),
    )
    .load(conn)
    .await?;
    if locked.is_empty() {
        return Ok(0);
    }
    let ids: Vec<Uuid> = locked.into_iter().map(|r| r.id).collect();
    let n = prepared(
        diesel::sql_query(EXPIRE)
            .bind::<Array<SqlUuid>, _>(&ids)
            .bind::<Text, _>(expiry.from.as_str())
            .bind::<Text, _>(expiry.to.as_str()),
    )
    .execute(conn)
    .await?;
    let close = dismissed_by_service(EXPIRED_NOTE, now);
    prepared(
        diesel::sql_query(CLOSE_EXPIRED)
            .bind::<Array<SqlUuid>, _>(&ids)
            .bind::<Timestamptz, _>(Ts::from(close.at))
            .bind::<Text, _>(close.status.as_str())
            .bind::<Jsonb, _>(&close.decided_by)
            .bind::<Jsonb, _>(&close.notes)
            .bind::<Array<Text>, _>(close.from.iter().map(|s| s.as_str()).collect::<Vec<_>>()),
    )
    .execute(conn)
    .await?;
    Ok(n as u64)
}

/// Approved proposals whose change the job queue gave up on fail
/// ([`fleetdesk_ads::proposal::given_up`]): how many.
async fn fail_given_up(conn: Tx<'_>, now: Timestamp) -> anyhow::Result<u64> {
    let rows: Vec<GivenUpRow> = prepared(
        diesel::sql_query(GIVEN_UP)
            .bind::<Text, _>(CHANGE_JOB)
            .bind::<Text, _>(JobStatus::Failed.as_str())
            .bind::<Text, _>(GIVEN_UP_MOVE.0.as_str())
            .bind::<Timestamptz, _>(Ts::from(now)),
    )
    .load(conn)
    .await?;
    if rows.is_empty() {
        return Ok(0);
    }
    let results: Vec<Value> = rows
        .iter()
        .map(|r| given_up_result(r.last_error.as_deref()))
        .collect();
    prepared(
        diesel::sql_query(FAIL_GIVEN_UP)
            .bind::<Text, _>(GIVEN_UP_MOVE.1.as_str())
            .bind::<Array<SqlUuid>, _>(rows.iter().map(|r| r.id).collect::<Vec<_>>())
            .bind::<Array<Timestamptz>, _>(rows.iter().map(|r| r.at).collect::<Vec<_>>())
            .bind::<Array<Jsonb>, _>(&results),
    )
    .execute(conn)
    .await?;
    Ok(rows.len() as u64)
}

/// A synced ad of the workspace, with its account's currency.
async fn synced_ad(conn: Tx<'_>, ws: Uuid, ad_id: &str) -> anyhow::Result<Option<KnownAdRow>> {
    Ok(prepared(
        diesel::sql_query(AD)
            .bind::<SqlUuid, _>(ws)
            .bind::<Text, _>(ad_id),
    )
    .get_result(conn)
    .await
    .optional()?)
}

/// What the proposal names, checked against the workspace: the ad (as synced) or the post and
/// ad account; answers the currency its amounts are in.
async fn check_target(
    conn: Tx<'_>,
    ws: Uuid,
    change: &Change,
) -> anyhow::Result<Result<String, AdsRefusal>> {
    match change {
        Change::Pause { ad_id } | Change::Resume { ad_id } | Change::Budget { ad_id, .. } => {
            let Some(ad) = synced_ad(conn, ws, ad_id).await? else {
                return Ok(Err(AdsRefusal::not_there(
                    "ad_id",
                    format!("no ad {ad_id} in this workspace's ad accounts (as last synced)"),
                )));
            };
            Ok(check_ad_state(change, &ad.known()?).map(|()| ad.currency))
        }
        Change::Boost {
            post_id,
            ad_account_id,
            ..
        } => {
            let post: Option<PostRow> = prepared(
                diesel::sql_query(POST)
                    .bind::<SqlUuid, _>(post_id)
                    .bind::<SqlUuid, _>(ws),
            )
            .get_result(conn)
            .await
            .optional()?;
            let Some(post) = post else {
                return Ok(Err(AdsRefusal::not_there(
                    "post_id",
                    format!("no post {post_id} in this workspace"),
                )));
            };
            if let Err(refusal) = check_boost_post(
                &post.platform,
                &post.status,
                post.platform_post_id.as_deref(),
            ) {
                return Ok(Err(refusal));
            }
            let account: Option<CurrencyRow> = prepared(
                diesel::sql_query(ACCOUNT)
                    .bind::<SqlUuid, _>(ws)
                    .bind::<Text, _>(ad_account_id),
            )
            .get_result(conn)
            .await
            .optional()?;
            let Some(account) = account else {
                return Ok(Err(AdsRefusal::not_there(
                    "ad_account_id",
                    format!("{ad_account_id} is not an ad account of this workspace"),
                )));
            };
            Ok(
                check_boost_account(&post.platform, account.instagram_user_id.as_deref())
                    .map(|()| account.currency),
            )
        }
    }
}

async fn propose_tx(
    conn: Tx<'_>,
    agent: AgentRef,
    p: &NewProposal,
) -> anyhow::Result<Result<ProposalRecord, AdsRefusal>> {
    if let Err(refusal) = workspace(conn, agent.workspace_id).await? {
        return Ok(Err(refusal));
    }
    let currency = match check_target(conn, agent.workspace_id, &p.change).await? {
        Ok(c) => c,
        Err(refusal) => return Ok(Err(refusal)),
    };
    let kind = p.change.kind();
    let target = p.change.target();
    let waiting: Option<DecisionIdRow> = prepared(
        diesel::sql_query(WAITING)
            .bind::<SqlUuid, _>(agent.workspace_id)
            .bind::<Text, _>(kind.as_str())
            .bind::<Text, _>(&target)
            .bind::<Timestamptz, _>(Ts::from(p.now - PROPOSAL_VALIDITY)),
    )
    .get_result(conn)
    .await
    .optional()?;
    if let Some(w) = waiting {
        return Ok(Err(AdsRefusal::Rejected(format!(
            "a {kind} proposal for the same {} is already waiting for a person (decision {})",
            if target.starts_with("post:") {
                "post"
            } else {
                "ad"
            },
            w.decision_id
        ))));
    }
    let (ad_id, post_id, ad_account_id, budget_type, amount, days, countries) = match &p.change {
        Change::Pause { ad_id } | Change::Resume { ad_id } => (
            Some(ad_id.as_str()),
            None,
            None,
            None,
            None,
            None,
            Vec::new(),
        ),
        Change::Budget { ad_id, amount } => (
            Some(ad_id.as_str()),
            None,
            None,
            None,
            Some(*amount),
            None,
            Vec::new(),
        ),
        Change::Boost {
            post_id,
            ad_account_id,
            budget_type,
            amount,
            days,
            countries,
        } => (
            None,
            Some(*post_id),
            Some(ad_account_id.as_str()),
            Some(budget_type.as_str()),
            Some(*amount),
            Some(*days as i32),
            countries.clone(),
        ),
    };
    // Accepted: a waiting proposal past its 7 days gives its place up (the workspace's are
    // marked expired, their decisions dismissed), so the unique index admits the new one.
    expire(conn, Some(agent.workspace_id), p.now).await?;
    let id = Uuid::new_v4();
    let detail = json!({
        "proposal_id": id, "kind": kind, "ad_id": ad_id, "post_id": post_id,
        "ad_account_id": ad_account_id, "budget_type": budget_type, "amount": amount,
        "currency": currency, "days": days, "countries": countries, "reason": p.reason,
    });
    let decision: IdRow = prepared(
        diesel::sql_query(OPEN_DECISION)
            .bind::<SqlUuid, _>(agent.organization_id)
            .bind::<SqlUuid, _>(agent.workspace_id)
            .bind::<Text, _>(decision_title(&p.change, Some(&currency)))
            .bind::<Jsonb, _>(&detail)
            .bind::<Nullable<SqlUuid>, _>(post_id)
            .bind::<SqlUuid, _>(agent.agent_id),
    )
    .get_result(conn)
    .await?;
    prepared(
        diesel::sql_query(INSERT_PROPOSAL)
            .bind::<SqlUuid, _>(id)
            .bind::<SqlUuid, _>(agent.organization_id)
            .bind::<SqlUuid, _>(agent.workspace_id)
            .bind::<SqlUuid, _>(agent.agent_id)
            .bind::<Text, _>(kind.as_str())
            .bind::<Text, _>(&target)
            .bind::<Nullable<Text>, _>(ad_id)
            .bind::<Nullable<SqlUuid>, _>(post_id)
            .bind::<Nullable<Text>, _>(ad_account_id)
            .bind::<Nullable<Text>, _>(budget_type)
            .bind::<Nullable<BigInt>, _>(amount.map(|a| a.0))
            .bind::<Nullable<Integer>, _>(days)
            .bind::<Array<Text>, _>(&countries)
            .bind::<Text, _>(&p.reason)
            .bind::<SqlUuid, _>(decision.id)
            .bind::<Timestamptz, _>(Ts::from(p.now)),
    )
    .execute(conn)
    .await?;
    let row: ProposalRow = prepared(diesel::sql_query(PROPOSAL_BY_ID).bind::<SqlUuid, _>(id))
        .get_result(conn)
        .await?;
    Ok(Ok(row.record(p.now)?))
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

/// Resolving: the proposal, still waiting and within its 7 days, is judged against the
/// workspace's monthly cap on the synced spend; approved, its change is queued for the ad
/// work, executed as `decided_by`. `Err` is why it cannot be approved.
pub(crate) async fn approve_change(
    conn: Tx<'_>,
    decision_id: Uuid,
    decided_by: &Value,
    now: Timestamp,
) -> anyhow::Result<Result<(), String>> {
    let p: LockedRow =
        prepared(diesel::sql_query(LOCK_BY_DECISION).bind::<SqlUuid, _>(decision_id))
            .get_result(conn)
            .await?;
    if p.status != ProposalStatus::Waiting.as_str() {
        return Ok(Err(format!("the proposal is {}", p.status)));
    }
    if expired(p.created_at.to_jiff(), now) {
        return Ok(Err(
            "the proposal expired: nobody approved it within 7 days; the agent may propose it again"
                .into(),
        ));
    }
    let kind = parsed("proposal kind", &p.kind, ProposalKind::parse)?;
    if matches!(kind, ProposalKind::Resume | ProposalKind::Budget) {
        let ad_id = p.ad_id.clone().unwrap_or_default();
        let Some(ad) = synced_ad(conn, p.workspace_id, &ad_id).await? else {
            return Ok(Err(format!(
                "ad {ad_id} is no longer among the synced ads of the workspace"
            )));
        };
        let change = if kind == ProposalKind::Resume {
            Change::Resume { ad_id }
        } else {
            Change::Budget {
                ad_id,
                amount: Cents(p.amount.unwrap_or_default()),
            }
        };
        let known = ad.known()?;
        if let (Some(limit), Some(currency)) = (p.cap, p.ad_cap_currency.as_deref()) {
            if ad.currency != currency {
                return Ok(Err(format!(
                    "the ad spends {} but the monthly cap is in {currency}: they cannot be compared",
                    ad.currency
                )));
            }
            let running: Vec<KnownAdRow> = prepared(
                diesel::sql_query(RUNNING_ADS)
                    .bind::<SqlUuid, _>(p.workspace_id)
                    .bind::<Text, _>(currency),
            )
            .load(conn)
            .await?;
            let running = running
                .iter()
                .map(KnownAdRow::known)
                .collect::<anyhow::Result<Vec<_>>>()?;
            let days_left = days_left_in_month(now);
            let cap = CapState {
                cap: Some(Cents(limit)),
                spent: spent(conn, p.workspace_id, month_start(now), currency).await?,
                committed: committed(&running, days_left),
                days_left,
            };
            if let Err(refusal) = check_cap(&change, Some(&known), &cap) {
                return Ok(Err(refusal.to_string()));
            }
        }
    }
    prepared(
        diesel::sql_query(APPROVE)
            .bind::<SqlUuid, _>(p.id)
            .bind::<Jsonb, _>(decided_by)
            .bind::<Timestamptz, _>(Ts::from(now)),
    )
    .execute(conn)
    .await?;
    enqueue_in(
        conn,
        &NewJob {
            kind: CHANGE_JOB.to_owned(),
            key: p.id.to_string(),
            payload: json!({"proposal_id": p.id}),
            run_at: now,
        },
    )
    .await?;
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
    use crate::schema::ad_proposals as p;
    use diesel::{ExpressionMethods, QueryDsl};
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

// ---------------------------------------------------------------------------------------------
// The ad work

async fn store_sync_tx(
    conn: Tx<'_>,
    ws: Uuid,
    account: &str,
    since: jiff::civil::Date,
    outcome: &Result<AccountSnapshot, String>,
    now: Timestamp,
) -> anyhow::Result<()> {
    let snapshot = match outcome {
        Ok(s) => s,
        Err(error) => {
            prepared(
                diesel::sql_query(SYNC_FAILED)
                    .bind::<SqlUuid, _>(ws)
                    .bind::<Text, _>(account)
                    .bind::<Text, _>(error),
            )
            .execute(conn)
            .await?;
            return Ok(());
        }
    };
    let at = Ts::from(now);
    // One sync of an account at a time: a second (an instance whose lease ran out) waits.
    prepared(
        diesel::sql_query(LOCK_ACCOUNT)
            .bind::<SqlUuid, _>(ws)
            .bind::<Text, _>(account),
    )
    .execute(conn)
    .await?;
    prepared(
        diesel::sql_query(SYNCED)
            .bind::<SqlUuid, _>(ws)
            .bind::<Text, _>(account)
            .bind::<Text, _>(&snapshot.status)
            .bind::<Timestamptz, _>(at),
    )
    .execute(conn)
    .await?;
    let c = &snapshot.campaigns;
    prepared(
        diesel::sql_query(UPSERT_CAMPAIGNS)
            .bind::<SqlUuid, _>(ws)
            .bind::<Text, _>(account)
            .bind::<Array<Text>, _>(c.iter().map(|c| c.id.as_str()).collect::<Vec<_>>())
            .bind::<Array<Text>, _>(c.iter().map(|c| c.name.as_str()).collect::<Vec<_>>())
            .bind::<Array<Text>, _>(c.iter().map(|c| c.status.as_str()).collect::<Vec<_>>())
            .bind::<Timestamptz, _>(at),
    )
    .execute(conn)
    .await?;
    prepared(
        diesel::sql_query(CLEAR_DAYS)
            .bind::<SqlUuid, _>(ws)
            .bind::<Text, _>(account)
            .bind::<Date, _>(jiff_diesel::Date::from(since)),
    )
    .execute(conn)
    .await?;
    let days: Vec<(&str, &fleetdesk_ads::platform::CampaignDay)> = c
        .iter()
        .flat_map(|c| {
            c.days
                .iter()
                .filter(|d| d.day >= since)
                .map(move |d| (c.id.as_str(), d))
        })
        .collect();
    prepared(
        diesel::sql_query(INSERT_DAYS)
            .bind::<SqlUuid, _>(ws)
            .bind::<Array<Text>, _>(days.iter().map(|(c, _)| *c).collect::<Vec<_>>())
            .bind::<Array<Date>, _>(
                days.iter()
                    .map(|(_, d)| jiff_diesel::Date::from(d.day))
                    .collect::<Vec<_>>(),
            )
            .bind::<Array<BigInt>, _>(days.iter().map(|(_, d)| d.spend.0).collect::<Vec<_>>())
            .bind::<Array<BigInt>, _>(days.iter().map(|(_, d)| d.impressions).collect::<Vec<_>>())
            .bind::<Array<BigInt>, _>(days.iter().map(|(_, d)| d.reach).collect::<Vec<_>>())
            .bind::<Array<BigInt>, _>(days.iter().map(|(_, d)| d.clicks).collect::<Vec<_>>())
            .bind::<Array<BigInt>, _>(days.iter().map(|(_, d)| d.results).collect::<Vec<_>>()),
    )
    .execute(conn)
    .await?;
    let a = &snapshot.ads;
    let ts = |t: Option<Timestamp>| t.map(Ts::from);
    prepared(
        diesel::sql_query(UPSERT_ADS)
            .bind::<SqlUuid, _>(ws)
            .bind::<Text, _>(account)
            .bind::<Array<Text>, _>(a.iter().map(|a| a.id.as_str()).collect::<Vec<_>>())
            .bind::<Array<Text>, _>(a.iter().map(|a| a.campaign_id.as_str()).collect::<Vec<_>>())
            .bind::<Array<Text>, _>(a.iter().map(|a| a.adset_id.as_str()).collect::<Vec<_>>())
            .bind::<Array<Text>, _>(a.iter().map(|a| a.name.as_str()).collect::<Vec<_>>())
            .bind::<Array<Text>, _>(a.iter().map(|a| a.status.as_str()).collect::<Vec<_>>())
            .bind::<Array<Text>, _>(a.iter().map(|a| a.budget_type.as_str()).collect::<Vec<_>>())
            .bind::<Array<BigInt>, _>(a.iter().map(|a| a.budget.0).collect::<Vec<_>>())
            .bind::<Array<Nullable<Timestamptz>>, _>(
                a.iter().map(|a| ts(a.starts_at)).collect::<Vec<_>>(),
            )
            .bind::<Array<Nullable<Timestamptz>>, _>(
                a.iter().map(|a| ts(a.ends_at)).collect::<Vec<_>>(),
            )
            .bind::<Array<Nullable<Text>>, _>(
                a.iter().map(|a| a.story_id.as_deref()).collect::<Vec<_>>(),
            )
            .bind::<Timestamptz, _>(at),
    )
    .execute(conn)
    .await?;
    prepared(
        diesel::sql_query(DROP_ADS)
            .bind::<SqlUuid, _>(ws)
            .bind::<Text, _>(account)
            .bind::<Array<Text>, _>(a.iter().map(|a| a.id.as_str()).collect::<Vec<_>>()),
    )
    .execute(conn)
    .await?;
    Ok(())
}

/// The failure recorded on a proposal, and the job finished.
fn failure(message: impl Into<String>) -> Value {
    json!({"error": message.into()})
}

async fn settle(
    conn: Tx<'_>,
    id: Uuid,
    status: ProposalStatus,
    result: &Value,
    now: Timestamp,
) -> anyhow::Result<()> {
    prepared(
        diesel::sql_query(SETTLE_CHANGE)
            .bind::<SqlUuid, _>(id)
            .bind::<Text, _>(status.as_str())
            .bind::<Jsonb, _>(result)
            .bind::<Timestamptz, _>(Ts::from(now)),
    )
    .execute(conn)
    .await?;
    Ok(())
}

fn proposal_of(job: &Job) -> anyhow::Result<Uuid> {
    job.key
        .parse()
        .map_err(|e| anyhow::anyhow!("ad change job {}: {e}", job.key))
}

/// The name a boost's campaign, ad set and ad carry: a person finds them by it.
fn boost_name(proposal: Uuid) -> String {
    format!("fleetdesk boost {proposal}")
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
    let row: Option<ChangeRow> = prepared(diesel::sql_query(CHANGE).bind::<SqlUuid, _>(id))
        .get_result(conn)
        .await
        .optional()?;
    let done = async |conn: Tx<'_>| -> anyhow::Result<Option<ChangeStep>> {
        Ok(finish_in(conn, job).await?.then_some(ChangeStep::Done))
    };
    let Some(row) = row else {
        return done(conn).await;
    };
    if row.status != ProposalStatus::Approved.as_str() {
        return done(conn).await;
    }
    let kind = parsed("proposal kind", &row.kind, ProposalKind::parse)?;
    let started = row
        .result
        .as_ref()
        .is_some_and(|r| r.get("started_at").is_some());
    if kind == ProposalKind::Boost && started {
        let message = format!(
            "an earlier attempt was cut short after it reached the ad platform: look in the ad \
             account for a paused campaign named \"{}\" before proposing the boost again",
            boost_name(row.id)
        );
        settle(conn, row.id, ProposalStatus::Failed, &failure(message), now).await?;
        return done(conn).await;
    }
    let (Some(account_id), Some(currency), Some(token_env)) = (
        row.account_id.clone(),
        row.currency.clone(),
        row.token_env.clone(),
    ) else {
        let message = match &row.ad_id {
            Some(ad) => format!("ad {ad} is no longer among the synced ads of the workspace"),
            None => "the ad account is no longer the workspace's".to_owned(),
        };
        settle(conn, row.id, ProposalStatus::Failed, &failure(message), now).await?;
        return done(conn).await;
    };
    let ad_id = row.ad_id.clone().unwrap_or_default();
    let change = match kind {
        ProposalKind::Pause => Execution::Pause { ad_id },
        ProposalKind::Resume => Execution::Resume {
            ad_id,
            adset_id: row.adset_id.clone().unwrap_or_default(),
            campaign_id: row.campaign_id.clone().unwrap_or_default(),
        },
        ProposalKind::Budget => Execution::Budget {
            adset_id: row.adset_id.clone().unwrap_or_default(),
            budget_type: budget_type(row.ad_budget_type.as_deref().unwrap_or("daily"))?,
            amount: Cents(row.amount.unwrap_or_default()),
        },
        ProposalKind::Boost => {
            let approved = row.decided_at.map(Ts::to_jiff).unwrap_or(now);
            let (starts_at, ends_at) = boost_period(approved, i64::from(row.days.unwrap_or(2)));
            Execution::Boost {
                platform: row.platform.clone().unwrap_or_default(),
                story_id: row.platform_post_id.clone().unwrap_or_default(),
                instagram_user_id: row.instagram_user_id.clone(),
                name: boost_name(row.id),
                budget_type: budget_type(row.proposed_budget_type.as_deref().unwrap_or("daily"))?,
                amount: Cents(row.amount.unwrap_or_default()),
                starts_at,
                ends_at,
                countries: if row.countries.is_empty() {
                    row.market.iter().cloned().collect()
                } else {
                    row.countries.clone()
                },
            }
        }
    };
    prepared(
        diesel::sql_query(START_CHANGE)
            .bind::<SqlUuid, _>(row.id)
            .bind::<Jsonb, _>(json!({"started_at": fleetdesk_kernel::time::format_utc(now)})),
    )
    .execute(conn)
    .await?;
    Ok(Some(ChangeStep::Execute {
        proposal_id: row.id,
        account: AdAccountRef {
            id: account_id,
            currency,
            token_env,
        },
        change: Box::new(change),
    }))
}

async fn record_execution_tx(
    conn: Tx<'_>,
    job: &Job,
    id: Uuid,
    outcome: &Result<Executed, String>,
    now: Timestamp,
) -> anyhow::Result<bool> {
    if !hold(conn, job).await? {
        return Ok(false);
    }
    match outcome {
        Err(error) => settle(conn, id, ProposalStatus::Failed, &failure(error), now).await?,
        Ok(executed) => {
            settle(conn, id, ProposalStatus::Executed, &executed.result, now).await?;
            if let Some(created) = &executed.created {
                let row: ChangeRow = prepared(diesel::sql_query(CHANGE).bind::<SqlUuid, _>(id))
                    .get_result(conn)
                    .await?;
                let account = row.account_id.clone().unwrap_or_default();
                let at = Ts::from(now);
                prepared(
                    diesel::sql_query(SERVICE_CAMPAIGN)
                        .bind::<SqlUuid, _>(row.workspace_id)
                        .bind::<Text, _>(&created.campaign_id)
                        .bind::<Text, _>(&account)
                        .bind::<Text, _>(boost_name(id))
                        .bind::<Timestamptz, _>(at),
                )
                .execute(conn)
                .await?;
                let approved = row.decided_at.map(Ts::to_jiff).unwrap_or(now);
                let (starts_at, ends_at) = boost_period(approved, i64::from(row.days.unwrap_or(2)));
                prepared(
                    diesel::sql_query(SERVICE_AD)
                        .bind::<SqlUuid, _>(row.workspace_id)
                        .bind::<Text, _>(&created.ad_id)
                        .bind::<Text, _>(&account)
                        .bind::<Text, _>(&created.campaign_id)
                        .bind::<Text, _>(&created.adset_id)
                        .bind::<Text, _>(boost_name(id))
                        .bind::<Text, _>(row.proposed_budget_type.as_deref().unwrap_or("daily"))
                        .bind::<BigInt, _>(row.amount.unwrap_or_default())
                        .bind::<Timestamptz, _>(Ts::from(starts_at))
                        .bind::<Timestamptz, _>(Ts::from(ends_at))
                        .bind::<Nullable<Text>, _>(row.platform_post_id.as_deref())
                        .bind::<Nullable<SqlUuid>, _>(row.post_id)
                        .bind::<Timestamptz, _>(at),
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
            let rows: Vec<TargetRow> = prepared(diesel::sql_query(SYNC_TARGETS)).load(conn).await?;
            Ok(rows
                .into_iter()
                .map(|r| {
                    (
                        r.workspace_id,
                        AdAccountRef {
                            id: r.id,
                            currency: r.currency,
                            token_env: r.token_env,
                        },
                    )
                })
                .collect())
        })
    }

    fn store_sync<'a>(
        &'a self,
        workspace_id: Uuid,
        account_id: &'a str,
        since: jiff::civil::Date,
        outcome: &'a Result<AccountSnapshot, String>,
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
        outcome: &'a Result<Executed, String>,
        now: Timestamp,
    ) -> BoxFuture<'a, anyhow::Result<bool>> {
        self.tx(async move |conn| record_execution_tx(conn, job, proposal_id, outcome, now).await)
    }
}
