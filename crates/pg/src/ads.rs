//! The ad research port over PostgreSQL: a quote stored with its items in one transaction, an
//! approval judged on the locked request with the organization's month of charges and the
//! provider's quota of the day, and the work queued in the same transaction. Requests are
//! scoped to the caller's organization.

use crate::db::{PgStore, Ts, column};
use crate::jobs::{enqueue_in, finish_in, hold};
use crate::rows::Stored;
use crate::schema::{ad_research, ad_research_items};
use diesel::prelude::*;
use diesel_async::{AsyncPgConnection, RunQueryDsl};
use fleetdesk_ads::ports::{
    Approval, CreditTotals, ItemState, LEDGER_LINES, LedgerLine, LookupOutcome, NewQuote, NextStep,
    OrganizationCredits, QuotedRequest, ResearchListQuery, ResearchRecord, ResearchRepo,
    Settlement, StoredResearch,
};
use fleetdesk_ads::product::Marketplace;
use fleetdesk_ads::provider::cached_card;
use fleetdesk_ads::research::{
    self, ApprovalState, ItemOutcome, ResearchKind, ResearchStatus, check_items, research_of,
};
use fleetdesk_ads::{AdsMissing, AdsRefusal};
use fleetdesk_kernel::jobs::Job;
use fleetdesk_kernel::{AgentRef, BoxFuture, Page};
use jiff::Timestamp;
use serde_json::Value;
use std::collections::HashSet;
use uuid::Uuid;

statements!(
    SETTINGS => SettingsRow,
    INSERT_ITEMS,
    LOCK_RESEARCH => LockedRow,
    RESEARCH => ResearchRow,
    RESEARCH_PAGE => ResearchRow,
    CHARGES => LineRow,
    NEXT_ITEM => NextRow,
    COUNT_LOOKUP,
    CHARGE,
    CREDITS => CreditsRow,
    LEDGER => LedgerRow,
);

/// The organizations in view (`$1`, or every one when null) with their limit and the
/// credits charged since `$2`.
const CREDITS: &str = r#"
SELECT o.id AS organization_id, o.name AS organization_name, o.monthly_credit_limit, o.suspended,
       coalesce((SELECT sum(l.credits) FROM ad_credit_ledger l
                 WHERE l.organization_id = o.id AND l.charged_at >= $2), 0)::bigint AS charged
FROM organizations o
WHERE $1::uuid IS NULL OR o.id = $1
ORDER BY o.name
"#;

/// The ledger lines since `$2` of the organizations in view, newest first, at most `$3` each.
const LEDGER: &str = r#"
SELECT organization_id, research_id, item, credits, reason, charged_at FROM (
    SELECT l.organization_id, l.research_id, i.item, l.credits, l.reason, l.charged_at,
           row_number() OVER (PARTITION BY l.organization_id
                              ORDER BY l.charged_at DESC, l.id DESC) AS n
    FROM ad_credit_ledger l
    JOIN ad_research_items i ON i.research_id = l.research_id AND i.position = l.position
    WHERE ($1::uuid IS NULL OR l.organization_id = $1) AND l.charged_at >= $2
) lines
WHERE n <= $3
ORDER BY organization_id, charged_at DESC, research_id
"#;

row! {
    struct CreditsRow into CreditTotals {
        organization_id: Uuid,
        organization_name: String,
        monthly_credit_limit: i64,
        suspended: bool,
        charged: i64,
    }
}

row! {
    struct LedgerRow {
        organization_id: Uuid,
        #[diesel(embed)]
        line: LineRow,
    }
}

row! {
    struct LineRow into LedgerLine {
        research_id: Uuid,
        item: String,
        credits: i64,
        reason: String,
        charged_at: Ts,
    }
}

/// The workspace's marketplace and the organization's prices.
const SETTINGS: &str = r#"
SELECT w.marketplace, o.price_product_brief, o.price_topic_keyword
FROM workspaces w JOIN organizations o ON o.id = w.organization_id
WHERE w.id = $1
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
/// judged on: the organization's state, the credits charged since `$3` (the month's start) and
/// the provider's lookups on the day `$4`.
const LOCK_RESEARCH: &str = r#"
SELECT r.status, r.expires_at, r.message_ref AS approved_ref, o.suspended, o.monthly_credit_limit,
       (SELECT coalesce(sum(l.credits), 0)::bigint FROM ad_credit_ledger l
        WHERE l.organization_id = r.organization_id AND l.charged_at >= $3) AS charged_this_month,
       coalesce((SELECT q.used FROM ad_research_quota q WHERE q.day = $4), 0) AS quota_used
FROM ad_research r JOIN organizations o ON o.id = r.organization_id
WHERE r.id = $1 AND r.organization_id = $2
FOR UPDATE OF r
"#;

/// The columns of a request, with its workspace's name.
macro_rules! research_sql {
    ($($where:tt)+) => {
        concat!(
            "SELECT r.id, r.workspace_id, w.name AS workspace, r.kind, r.lane, r.status, r.price, \
                    r.credits_quoted, r.created_at, r.expires_at, r.approved_at, r.approved_by, \
                    r.finished_at \
             FROM ad_research r JOIN workspaces w ON w.id = r.workspace_id ",
            $($where)+
        )
    };
}

/// A request of the organization (`$2`).
const RESEARCH: &str = research_sql!("WHERE r.id = $1 AND r.organization_id = $2");

/// A page of requests of an organization (`$1`, every one when null), of one workspace (`$2`,
/// not archived) and status (`$3`), newest first after `($4, $5)`.
const RESEARCH_PAGE: &str = research_sql!(
    "WHERE ($1::uuid IS NULL OR r.organization_id = $1) \
       AND ($2::uuid IS NULL OR r.workspace_id = $2) \
       AND w.archived_at IS NULL AND ($3::text IS NULL OR r.status = $3) \
       AND ($4::timestamptz IS NULL OR (r.created_at, r.id) < ($4, $5)) \
     ORDER BY r.created_at DESC, r.id DESC LIMIT $6"
);

/// The ledger lines of the requests `$1`, as [`LEDGER`] reads them.
const CHARGES: &str = r#"
SELECT l.research_id, i.item, l.credits, l.reason, l.charged_at
FROM ad_credit_ledger l
JOIN ad_research_items i ON i.research_id = l.research_id AND i.position = l.position
WHERE l.research_id = ANY($1) ORDER BY l.research_id, l.position
"#;

/// The first unsettled item of a request, locked, with what its lookup needs.
const NEXT_ITEM: &str = r#"
SELECT i.position, i.item, i.key, i.searched, r.kind, r.organization_id, r.price
FROM ad_research_items i JOIN ad_research r ON r.id = i.research_id
WHERE i.research_id = $1 AND i.outcome IS NULL
ORDER BY i.position LIMIT 1
FOR UPDATE OF i
"#;

/// Counts one lookup against the day's quota (`$2`), unless it is used up: no row then.
const COUNT_LOOKUP: &str = r#"
INSERT INTO ad_research_quota AS q (day, used) VALUES ($1, 1)
ON CONFLICT (day) DO UPDATE SET used = q.used + 1 WHERE q.used < $2
RETURNING q.used
"#;

/// The charge of an item found, at the request's price, once.
const CHARGE: &str = r#"
INSERT INTO ad_credit_ledger (organization_id, research_id, position, credits, reason, charged_at)
SELECT organization_id, id, $2, $3, $4, $5 FROM ad_research WHERE id = $1
ON CONFLICT (research_id, position) DO NOTHING
"#;

row! {
    struct NextRow {
        position: i16,
        item: String,
        key: String,
        searched: String,
        kind: Stored<ResearchKind>,
        organization_id: Uuid,
        price: i64,
    }
}

row! {
    struct SettingsRow {
        marketplace: String,
        price_product_brief: i64,
        price_topic_keyword: i64,
    }
}

row! {
    struct LockedRow into ApprovalState {
        status: Stored<ResearchStatus>,
        expires_at: Ts,
        approved_ref: Option<String>,
        suspended: bool,
        monthly_credit_limit: i64,
        charged_this_month: i64,
        quota_used: i64,
    }
}

row! {
    struct ResearchRow into StoredResearch {
        id: Uuid,
        workspace_id: Uuid,
        workspace: String,
        kind: Stored<ResearchKind>,
        lane: Option<String>,
        status: Stored<ResearchStatus>,
        price: i64,
        credits_quoted: i64,
        created_at: Ts,
        expires_at: Ts,
        approved_at: Option<Ts>,
        approved_by: Option<Value>,
        finished_at: Option<Ts>,
    }
}

selectable! {
    #[diesel(table_name = ad_research_items)]
    struct ItemRow into ItemState {
        item: String,
        searched: String,
        cached_at_quote: bool,
        outcome: Option<Stored<ItemOutcome>>,
        card: Option<Value>,
    }
}

fn not_found() -> AdsRefusal {
    AdsRefusal::NotFound(AdsMissing::Research)
}

async fn quote_tx(
    conn: &mut AsyncPgConnection,
    agent: AgentRef,
    request: &NewQuote,
    now: Timestamp,
) -> anyhow::Result<Result<QuotedRequest, AdsRefusal>> {
    let settings: SettingsRow = sql!(SETTINGS, agent.workspace_id).get_result(conn).await?;
    let home = Marketplace::of_workspace(&settings.marketplace);
    let items = match check_items(request.kind, &request.items, home) {
        Ok(items) => items,
        Err(refusal) => return Ok(Err(refusal)),
    };
    let price = request
        .kind
        .price(settings.price_product_brief, settings.price_topic_keyword);
    let keys: Vec<&str> = items.iter().map(|i| i.key.as_str()).collect();
    // The keys among these the organization found since the cache's start: the cache.
    let cached: HashSet<String> = ad_research_items::table
        .filter(ad_research_items::organization_id.eq(agent.organization_id))
        .filter(ad_research_items::key.eq_any(&keys))
        .filter(ad_research_items::outcome.eq(ItemOutcome::Found.as_str()))
        .filter(ad_research_items::done_at.ge(Ts::from(request.kind.cache_since(now))))
        .select(ad_research_items::key)
        .distinct()
        .load::<String>(conn)
        .await?
        .into_iter()
        .collect();
    let quote = research::quote(&items, &cached, price, now);
    let id = Uuid::now_v7();
    diesel::insert_into(ad_research::table)
        .values((
            ad_research::id.eq(id),
            ad_research::organization_id.eq(agent.organization_id),
            ad_research::workspace_id.eq(agent.workspace_id),
            ad_research::agent_id.eq(agent.agent_id),
            ad_research::kind.eq(request.kind.as_str()),
            ad_research::lane.eq(request.lane.as_deref()),
            ad_research::price.eq(price),
            ad_research::credits_quoted.eq(quote.credits),
            ad_research::created_at.eq(Ts::from(now)),
            ad_research::expires_at.eq(Ts::from(quote.expires_at)),
        ))
        .execute(conn)
        .await?;
    sql!(
        INSERT_ITEMS,
        id,
        agent.organization_id,
        column(&items, |i| i.item.as_str()),
        &keys,
        column(&items, |i| i.searched.as_str()),
        column(&quote.items, |i| i.cached)
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
    let locked: Option<LockedRow> = sql!(
        LOCK_RESEARCH,
        approval.id,
        agent.organization_id,
        Ts::from(research::month_start(now)),
        jiff_diesel::Date::from(research::quota_day(now))
    )
    .get_result(conn)
    .await
    .optional()?;
    let Some(state) = locked.map(ApprovalState::from) else {
        return Ok(Err(not_found()));
    };
    let message_ref = approval.message_ref.as_deref();
    match research::judge_approval(&state, message_ref, approval.daily_quota, now) {
        Err(refusal) => return Ok(Err(refusal)),
        Ok(research::Approval::Unchanged) => {}
        Ok(research::Approval::Approve) => {
            diesel::update(ad_research::table.find(approval.id))
                .set((
                    ad_research::status.eq(ResearchStatus::Running.as_str()),
                    ad_research::approved_at.eq(Ts::from(now)),
                    ad_research::approved_by.eq(approval.approved_by.to_json()),
                    ad_research::message_ref.eq(approval.message_ref.as_deref()),
                ))
                .execute(conn)
                .await?;
            enqueue_in(conn, &research::work_job(approval.id, now)).await?;
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
    let row: Option<ResearchRow> = sql!(RESEARCH, id, agent.organization_id)
        .get_result(conn)
        .await
        .optional()?;
    let Some(row) = row else {
        return Ok(Err(not_found()));
    };
    Ok(records(conn, vec![row]).await?.pop().ok_or_else(not_found))
}

/// The requests of `rows` with their items and charges: two statements whatever their number.
async fn records(
    conn: &mut AsyncPgConnection,
    rows: Vec<ResearchRow>,
) -> anyhow::Result<Vec<ResearchRecord>> {
    let ids: Vec<Uuid> = rows.iter().map(|r| r.id).collect();
    // Each request's items in order.
    let items: Vec<(Uuid, ItemRow)> = ad_research_items::table
        .filter(ad_research_items::research_id.eq_any(&ids))
        .order((ad_research_items::research_id, ad_research_items::position))
        .select((ad_research_items::research_id, ItemRow::as_select()))
        .load(conn)
        .await?;
    let charges: Vec<LineRow> = sql!(CHARGES, &ids).load(conn).await?;
    Ok(ResearchRecord::assemble(rows, items, charges))
}

/// Settles an item as `s` says, at `now`, unless it already is.
async fn settle(
    conn: &mut AsyncPgConnection,
    id: Uuid,
    position: i16,
    s: &Settlement<'_>,
    now: Timestamp,
) -> anyhow::Result<bool> {
    let n = diesel::update(
        ad_research_items::table
            .find((id, position))
            .filter(ad_research_items::outcome.is_null()),
    )
    .set((
        ad_research_items::outcome.eq(s.outcome.as_str()),
        ad_research_items::card.eq(s.card),
        ad_research_items::error.eq(s.error),
        ad_research_items::done_at.eq(Ts::from(now)),
    ))
    .execute(conn)
    .await?;
    Ok(n == 1)
}

async fn next_step_tx(
    conn: &mut AsyncPgConnection,
    job: &Job,
    daily_quota: Option<i64>,
    now: Timestamp,
) -> anyhow::Result<Option<NextStep>> {
    if !hold(conn, job).await? {
        return Ok(None);
    }
    let id = research_of(job)?;
    let next: Option<NextRow> = sql!(NEXT_ITEM, id).get_result(conn).await.optional()?;
    let Some(next) = next else {
        let finished: Option<(Uuid, Uuid)> = diesel::update(
            ad_research::table
                .find(id)
                .filter(ad_research::finished_at.is_null()),
        )
        .set((
            ad_research::status.eq(ResearchStatus::Done.as_str()),
            ad_research::finished_at.eq(Ts::from(now)),
        ))
        .returning((ad_research::workspace_id, ad_research::agent_id))
        .get_result(conn)
        .await
        .optional()?;
        // Finished now (not before): research.done to the agent that asked.
        if let Some((workspace_id, agent_id)) = finished {
            let items: i64 = ad_research_items::table
                .filter(ad_research_items::research_id.eq(id))
                .count()
                .get_result(conn)
                .await?;
            let finished = research::Finished {
                id,
                workspace_id,
                agent_id,
                items,
            };
            crate::events::write(conn, &[finished.event()]).await?;
        }
        return Ok(finish_in(conn, job).await?.then_some(NextStep::Done));
    };
    let kind = next.kind.0;
    // The organization's latest card of the key found since the cache's start: the cache.
    let cached: Option<Option<Value>> = ad_research_items::table
        .filter(ad_research_items::organization_id.eq(next.organization_id))
        .filter(ad_research_items::key.eq(&next.key))
        .filter(ad_research_items::outcome.eq(ItemOutcome::Found.as_str()))
        .filter(ad_research_items::done_at.ge(Ts::from(kind.cache_since(now))))
        .order(ad_research_items::done_at.desc())
        .select(ad_research_items::card)
        .first(conn)
        .await
        .optional()?;
    if let Some(Some(card)) = cached {
        let card = cached_card(card, &next.item, &next.searched);
        settle(conn, id, next.position, &Settlement::cached(&card), now).await?;
        return Ok(Some(NextStep::Continue));
    }
    if let Some(quota) = daily_quota {
        // One row when the lookup was counted, none when the quota is used up.
        let counted = if quota > 0 {
            sql!(
                COUNT_LOOKUP,
                jiff_diesel::Date::from(research::quota_day(now)),
                quota
            )
            .execute(conn)
            .await?
        } else {
            0
        };
        if counted == 0 {
            // Every unsettled item of the request left unqueried (the quota ran out): not
            // charged.
            diesel::update(
                ad_research_items::table
                    .filter(ad_research_items::research_id.eq(id))
                    .filter(ad_research_items::outcome.is_null()),
            )
            .set((
                ad_research_items::outcome.eq(ItemOutcome::Unqueried.as_str()),
                ad_research_items::done_at.eq(Ts::from(now)),
            ))
            .execute(conn)
            .await?;
            return Ok(Some(NextStep::Continue));
        }
    }
    Ok(Some(NextStep::Query {
        position: next.position,
        kind,
        item: next.item,
        key: next.key,
        searched: next.searched,
        price: next.price,
    }))
}

async fn record_lookup_tx(
    conn: &mut AsyncPgConnection,
    job: &Job,
    position: i16,
    outcome: &LookupOutcome,
    now: Timestamp,
) -> anyhow::Result<bool> {
    if !hold(conn, job).await? {
        return Ok(false);
    }
    let id = research_of(job)?;
    let s = outcome.settlement();
    if settle(conn, id, position, &s, now).await?
        && let Some((credits, reason)) = s.charge
    {
        sql!(CHARGE, id, position, credits, reason, Ts::from(now))
            .execute(conn)
            .await?;
    }
    Ok(true)
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

    fn list<'a>(
        &'a self,
        organization: Option<Uuid>,
        query: &'a ResearchListQuery,
    ) -> BoxFuture<'a, anyhow::Result<Page<ResearchRecord>>> {
        self.snapshot(async move |conn| {
            let rows: Vec<ResearchRow> = sql!(
                RESEARCH_PAGE,
                organization,
                query.workspace,
                query.status.map(|s| s.as_str()),
                query.after.map(|a| Ts::from(a.0)),
                query.after.map(|a| a.1).unwrap_or_default(),
                query.limit + 1
            )
            .load(conn)
            .await?;
            let items = records(conn, rows).await?;
            Ok(Page::probed(items, query.limit, |r| (r.created_at, r.id)))
        })
    }

    fn get(
        &self,
        agent: AgentRef,
        id: Uuid,
    ) -> BoxFuture<'_, anyhow::Result<Result<ResearchRecord, AdsRefusal>>> {
        self.snapshot(async move |conn| load(conn, agent, id).await)
    }

    fn credits(
        &self,
        organization: Option<Uuid>,
        since: Timestamp,
    ) -> BoxFuture<'_, anyhow::Result<Vec<OrganizationCredits>>> {
        self.snapshot(async move |conn| {
            let orgs: Vec<CreditsRow> = sql!(CREDITS, organization, Ts::from(since))
                .load(conn)
                .await?;
            let lines: Vec<LedgerRow> = sql!(LEDGER, organization, Ts::from(since), LEDGER_LINES)
                .load(conn)
                .await?;
            let lines = lines.into_iter().map(|l| (l.organization_id, l.line));
            Ok(OrganizationCredits::assemble(orgs, lines))
        })
    }

    fn next_step<'a>(
        &'a self,
        job: &'a Job,
        daily_quota: Option<i64>,
        now: Timestamp,
    ) -> BoxFuture<'a, anyhow::Result<Option<NextStep>>> {
        self.tx(async move |conn| next_step_tx(conn, job, daily_quota, now).await)
    }

    fn record_lookup<'a>(
        &'a self,
        job: &'a Job,
        position: i16,
        outcome: &'a LookupOutcome,
        now: Timestamp,
    ) -> BoxFuture<'a, anyhow::Result<bool>> {
        self.tx(async move |conn| record_lookup_tx(conn, job, position, outcome, now).await)
    }
}
