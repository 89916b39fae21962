//! The ad research port over PostgreSQL: a quote stored with its items in one transaction, an
//! approval judged on the locked request with the organization's month of charges and the
//! provider's quota of the day, and the work queued in the same transaction. Requests are
//! scoped to the caller's organization.

use crate::db::{PgStore, prepared};
use crate::jobs::enqueue_in;
use diesel::sql_types::{
    Array, BigInt, Bool, Date, Jsonb, Nullable, Text, Timestamptz, Uuid as SqlUuid,
};
use diesel::{OptionalExtension, QueryableByName};
use diesel_async::{AsyncPgConnection, RunQueryDsl};
use fleetdesk_ads::AdsRefusal;
use fleetdesk_ads::ports::{
    Approval, Charge, ItemState, NewQuote, QuotedRequest, ResearchRecord, ResearchRepo,
};
use fleetdesk_ads::product::Marketplace;
use fleetdesk_ads::research::{
    self, ApprovalState, RESEARCH_JOB, ResearchKind, ResearchStatus, check_items,
};
use fleetdesk_kernel::jobs::NewJob;
use fleetdesk_kernel::{AgentRef, BoxFuture};
use jiff::Timestamp;
use serde_json::{Value, json};
use std::collections::HashSet;
use uuid::Uuid;

type Ts = jiff_diesel::Timestamp;

statements!(
    SETTINGS,
    CACHED_KEYS,
    INSERT_RESEARCH,
    INSERT_ITEMS,
    LOCK_RESEARCH,
    QUOTA_USED,
    APPROVE,
    RESEARCH,
    ITEMS,
    CHARGES,
);

/// The workspace's marketplace and the organization's prices.
const SETTINGS: &str = r#"
SELECT w.marketplace, o.price_product_brief, o.price_topic_keyword
FROM workspaces w JOIN organizations o ON o.id = w.organization_id
WHERE w.id = $1
"#;

/// The keys among `$2` the organization (`$1`) found since `$3`: the cache.
const CACHED_KEYS: &str = r#"
SELECT DISTINCT key FROM ad_research_items
WHERE organization_id = $1 AND key = ANY($2) AND outcome = 'found' AND done_at >= $3
"#;

const INSERT_RESEARCH: &str = r#"
INSERT INTO ad_research (id, organization_id, workspace_id, agent_id, kind, lane, price,
                         credits_quoted, created_at, expires_at)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)
"#;

/// Every item of a request in one statement, in the order given.
const INSERT_ITEMS: &str = r#"
INSERT INTO ad_research_items (research_id, position, organization_id, item, key, searched,
                               cached_at_quote)
SELECT $1, (i.ord - 1)::smallint, $2, i.item, i.key, i.searched, i.cached
FROM unnest($3::text[], $4::text[], $5::text[], $6::bool[])
     WITH ORDINALITY AS i(item, key, searched, cached, ord)
"#;

/// The request of the organization (`$2`), locked for its approval, with what the approval is
/// judged on: the organization's state and the credits charged since `$3` (the month's start).
const LOCK_RESEARCH: &str = r#"
SELECT r.status, r.expires_at, r.message_ref, o.suspended, o.monthly_credit_limit,
       (SELECT coalesce(sum(l.credits), 0)::bigint FROM ad_credit_ledger l
        WHERE l.organization_id = r.organization_id AND l.charged_at >= $3) AS charged
FROM ad_research r JOIN organizations o ON o.id = r.organization_id
WHERE r.id = $1 AND r.organization_id = $2
FOR UPDATE OF r
"#;

/// The provider's lookups on a day.
const QUOTA_USED: &str = "SELECT used FROM ad_research_quota WHERE day = $1";

const APPROVE: &str = r#"
UPDATE ad_research SET status = $2, approved_at = $3, approved_by = $4, message_ref = $5
WHERE id = $1
"#;

/// A request of the organization (`$2`).
const RESEARCH: &str = r#"
SELECT id, kind, lane, status, price, credits_quoted, created_at, expires_at, approved_at,
       approved_by, finished_at
FROM ad_research WHERE id = $1 AND organization_id = $2
"#;

const ITEMS: &str = r#"
SELECT item, searched, cached_at_quote, outcome, card
FROM ad_research_items WHERE research_id = $1 ORDER BY position
"#;

const CHARGES: &str = r#"
SELECT i.item, l.credits, l.reason, l.charged_at
FROM ad_credit_ledger l
JOIN ad_research_items i ON i.research_id = l.research_id AND i.position = l.position
WHERE l.research_id = $1 ORDER BY l.position
"#;

#[derive(QueryableByName)]
struct SettingsRow {
    #[diesel(sql_type = Text)]
    marketplace: String,
    #[diesel(sql_type = BigInt)]
    price_product_brief: i64,
    #[diesel(sql_type = BigInt)]
    price_topic_keyword: i64,
}

#[derive(QueryableByName)]
struct KeyRow {
    #[diesel(sql_type = Text)]
    key: String,
}

#[derive(QueryableByName)]
struct LockedRow {
    #[diesel(sql_type = Text)]
    status: String,
    #[diesel(sql_type = Timestamptz)]
    expires_at: Ts,
    #[diesel(sql_type = Nullable<Text>)]
    message_ref: Option<String>,
    #[diesel(sql_type = Bool)]
    suspended: bool,
    #[diesel(sql_type = BigInt)]
    monthly_credit_limit: i64,
    #[diesel(sql_type = BigInt)]
    charged: i64,
}

#[derive(QueryableByName)]
struct UsedRow {
    #[diesel(sql_type = BigInt)]
    used: i64,
}

#[derive(QueryableByName)]
struct ResearchRow {
    #[diesel(sql_type = SqlUuid)]
    id: Uuid,
    #[diesel(sql_type = Text)]
    kind: String,
    #[diesel(sql_type = Nullable<Text>)]
    lane: Option<String>,
    #[diesel(sql_type = Text)]
    status: String,
    #[diesel(sql_type = BigInt)]
    price: i64,
    #[diesel(sql_type = BigInt)]
    credits_quoted: i64,
    #[diesel(sql_type = Timestamptz)]
    created_at: Ts,
    #[diesel(sql_type = Timestamptz)]
    expires_at: Ts,
    #[diesel(sql_type = Nullable<Timestamptz>)]
    approved_at: Option<Ts>,
    #[diesel(sql_type = Nullable<Jsonb>)]
    approved_by: Option<Value>,
    #[diesel(sql_type = Nullable<Timestamptz>)]
    finished_at: Option<Ts>,
}

#[derive(QueryableByName)]
struct ItemRow {
    #[diesel(sql_type = Text)]
    item: String,
    #[diesel(sql_type = Text)]
    searched: String,
    #[diesel(sql_type = Bool)]
    cached_at_quote: bool,
    #[diesel(sql_type = Nullable<Text>)]
    outcome: Option<String>,
    #[diesel(sql_type = Nullable<Jsonb>)]
    card: Option<Value>,
}

#[derive(QueryableByName)]
struct ChargeRow {
    #[diesel(sql_type = Text)]
    item: String,
    #[diesel(sql_type = BigInt)]
    credits: i64,
    #[diesel(sql_type = Text)]
    reason: String,
    #[diesel(sql_type = Timestamptz)]
    charged_at: Ts,
}

fn not_found() -> AdsRefusal {
    AdsRefusal::NotFound("no such research request in this organization".into())
}

/// The day the provider's quota counts in: Taipei's, like every other day of the service.
fn quota_day(now: Timestamp) -> jiff::civil::Date {
    now.to_zoned(fleetdesk_kernel::market::zone(research::ZONE))
        .date()
}

async fn quote_tx(
    conn: &mut AsyncPgConnection,
    agent: AgentRef,
    request: &NewQuote,
    now: Timestamp,
) -> anyhow::Result<Result<QuotedRequest, AdsRefusal>> {
    let settings: SettingsRow =
        prepared(diesel::sql_query(SETTINGS).bind::<SqlUuid, _>(agent.workspace_id))
            .get_result(conn)
            .await?;
    let home = Marketplace::parse(&settings.marketplace).unwrap_or(Marketplace::Shopee);
    let items = match check_items(request.kind, &request.items, home) {
        Ok(items) => items,
        Err(refusal) => return Ok(Err(refusal)),
    };
    let price = match request.kind {
        ResearchKind::ProductBrief => settings.price_product_brief,
        ResearchKind::TopicScout => settings.price_topic_keyword,
    };
    let keys: Vec<&str> = items.iter().map(|i| i.key.as_str()).collect();
    let cached: HashSet<String> = prepared(
        diesel::sql_query(CACHED_KEYS)
            .bind::<SqlUuid, _>(agent.organization_id)
            .bind::<Array<Text>, _>(&keys)
            .bind::<Timestamptz, _>(Ts::from(request.kind.cache_since(now))),
    )
    .load::<KeyRow>(conn)
    .await?
    .into_iter()
    .map(|r| r.key)
    .collect();
    let quote = research::quote(&items, &cached, price, now);
    let id = Uuid::now_v7();
    prepared(
        diesel::sql_query(INSERT_RESEARCH)
            .bind::<SqlUuid, _>(id)
            .bind::<SqlUuid, _>(agent.organization_id)
            .bind::<SqlUuid, _>(agent.workspace_id)
            .bind::<SqlUuid, _>(agent.agent_id)
            .bind::<Text, _>(request.kind.as_str())
            .bind::<Nullable<Text>, _>(request.lane.as_deref())
            .bind::<BigInt, _>(price)
            .bind::<BigInt, _>(quote.credits)
            .bind::<Timestamptz, _>(Ts::from(now))
            .bind::<Timestamptz, _>(Ts::from(quote.expires_at)),
    )
    .execute(conn)
    .await?;
    let given: Vec<&str> = items.iter().map(|i| i.item.as_str()).collect();
    let searched: Vec<&str> = items.iter().map(|i| i.searched.as_str()).collect();
    let was_cached: Vec<bool> = quote.items.iter().map(|i| i.cached).collect();
    prepared(
        diesel::sql_query(INSERT_ITEMS)
            .bind::<SqlUuid, _>(id)
            .bind::<SqlUuid, _>(agent.organization_id)
            .bind::<Array<Text>, _>(&given)
            .bind::<Array<Text>, _>(&keys)
            .bind::<Array<Text>, _>(&searched)
            .bind::<Array<Bool>, _>(&was_cached),
    )
    .execute(conn)
    .await?;
    Ok(Ok(QuotedRequest { id, quote }))
}

async fn approve_tx(
    conn: &mut AsyncPgConnection,
    agent: AgentRef,
    approval: &Approval,
) -> anyhow::Result<Result<ResearchRecord, AdsRefusal>> {
    let now = approval.now;
    let locked: Option<LockedRow> = prepared(
        diesel::sql_query(LOCK_RESEARCH)
            .bind::<SqlUuid, _>(approval.id)
            .bind::<SqlUuid, _>(agent.organization_id)
            .bind::<Timestamptz, _>(Ts::from(research::month_start(now))),
    )
    .get_result(conn)
    .await
    .optional()?;
    let Some(locked) = locked else {
        return Ok(Err(not_found()));
    };
    let quota_left = match approval.daily_quota {
        None => None,
        Some(quota) => {
            let used: Option<UsedRow> = prepared(
                diesel::sql_query(QUOTA_USED)
                    .bind::<Date, _>(jiff_diesel::Date::from(quota_day(now))),
            )
            .get_result(conn)
            .await
            .optional()?;
            Some(quota - used.map_or(0, |u| u.used))
        }
    };
    let state = ApprovalState {
        status: ResearchStatus::parse(&locked.status).unwrap_or(ResearchStatus::Done),
        expires_at: locked.expires_at.to_jiff(),
        approved_ref: locked.message_ref,
        suspended: locked.suspended,
        charged_this_month: locked.charged,
        monthly_credit_limit: locked.monthly_credit_limit,
        quota_left,
    };
    match research::judge_approval(&state, approval.message_ref.as_deref(), now) {
        Err(refusal) => return Ok(Err(refusal)),
        Ok(research::Approval::Unchanged) => {}
        Ok(research::Approval::Approve) => {
            prepared(
                diesel::sql_query(APPROVE)
                    .bind::<SqlUuid, _>(approval.id)
                    .bind::<Text, _>(ResearchStatus::Running.as_str())
                    .bind::<Timestamptz, _>(Ts::from(now))
                    .bind::<Jsonb, _>(&approval.approved_by)
                    .bind::<Nullable<Text>, _>(approval.message_ref.as_deref()),
            )
            .execute(conn)
            .await?;
            enqueue_in(
                conn,
                &NewJob {
                    kind: RESEARCH_JOB.to_owned(),
                    key: approval.id.to_string(),
                    payload: json!({"research_id": approval.id}),
                    run_at: now,
                },
            )
            .await?;
        }
    }
    load(conn, agent, approval.id).await
}

/// The request with its items and charges: three statements.
async fn load(
    conn: &mut AsyncPgConnection,
    agent: AgentRef,
    id: Uuid,
) -> anyhow::Result<Result<ResearchRecord, AdsRefusal>> {
    let row: Option<ResearchRow> = prepared(
        diesel::sql_query(RESEARCH)
            .bind::<SqlUuid, _>(id)
            .bind::<SqlUuid, _>(agent.organization_id),
    )
    .get_result(conn)
    .await
    .optional()?;
    let Some(row) = row else {
        return Ok(Err(not_found()));
    };
    let items: Vec<ItemRow> = prepared(diesel::sql_query(ITEMS).bind::<SqlUuid, _>(id))
        .load(conn)
        .await?;
    let charges: Vec<ChargeRow> = prepared(diesel::sql_query(CHARGES).bind::<SqlUuid, _>(id))
        .load(conn)
        .await?;
    Ok(Ok(ResearchRecord {
        id: row.id,
        kind: ResearchKind::parse(&row.kind)
            .ok_or_else(|| anyhow::anyhow!("stored research kind {:?}", row.kind))?,
        lane: row.lane,
        status: ResearchStatus::parse(&row.status)
            .ok_or_else(|| anyhow::anyhow!("stored research status {:?}", row.status))?,
        price: row.price,
        credits_quoted: row.credits_quoted,
        created_at: row.created_at.to_jiff(),
        expires_at: row.expires_at.to_jiff(),
        approved_at: row.approved_at.map(|t| t.to_jiff()),
        approved_by: row.approved_by,
        finished_at: row.finished_at.map(|t| t.to_jiff()),
        items: items
            .into_iter()
            .map(|i| ItemState {
                item: i.item,
                searched: i.searched,
                cached_at_quote: i.cached_at_quote,
                outcome: i.outcome,
                card: i.card,
            })
            .collect(),
        charges: charges
            .into_iter()
            .map(|c| Charge {
                item: c.item,
                credits: c.credits,
                reason: c.reason,
                charged_at: c.charged_at.to_jiff(),
            })
            .collect(),
    }))
}

impl ResearchRepo for PgStore {
    fn quote<'a>(
        &'a self,
        agent: AgentRef,
        request: &'a NewQuote,
        now: Timestamp,
    ) -> BoxFuture<'a, anyhow::Result<Result<QuotedRequest, AdsRefusal>>> {
        self.tx(async move |conn| quote_tx(conn, agent, request, now).await)
    }

    fn approve<'a>(
        &'a self,
        agent: AgentRef,
        approval: &'a Approval,
    ) -> BoxFuture<'a, anyhow::Result<Result<ResearchRecord, AdsRefusal>>> {
        self.tx(async move |conn| approve_tx(conn, agent, approval).await)
    }

    fn get(
        &self,
        agent: AgentRef,
        id: Uuid,
    ) -> BoxFuture<'_, anyhow::Result<Result<ResearchRecord, AdsRefusal>>> {
        self.snapshot(async move |conn| load(conn, agent, id).await)
    }
}
