//! The inventory port over PostgreSQL, and the stocking that comes with an account leaving
//! rotation (called from the state-change transaction).

use crate::accounts::day_statuses;
use crate::db::{PgStore, Ts, Tx, coalesce};
use crate::record::Entry;
use crate::rows::Stored;
use crate::schema::posts;
use diesel::dsl;
use diesel::prelude::*;
use diesel_async::RunQueryDsl;
use fleetdesk_accounts::{AccountState, Publishing};
use fleetdesk_inventory::*;
use fleetdesk_kernel::{AgentRef, BoxFuture, Platform, TimeInput};
use fleetdesk_posts::post::PostStatus;
use jiff::Timestamp;
use serde_json::{Value, json};
use uuid::Uuid;

/// Moves an account's unfinished posts to inventory, with a review-record entry each, in one
/// statement, and returns them: the status each left and its persona's agent. Posts the agent
/// scheduled in its own tool are listed for unscheduling; posts scheduled on the service side
/// are simply dropped from its schedule; a post the service is already publishing goes on.
const STOCK_SLOT: &str = r#"
WITH moved AS (
    UPDATE posts p
    SET from_status = p.status, planned_was = COALESCE(p.scheduled_for, p.planned_at), status = $6,
        stocked_at = now(), stock_reason = $2,
        unschedule_pending = p.unschedule_pending OR (p.status = ANY($7) AND s.publishing = $8),
        updated_at = now()
    FROM account_slots s, personas pe
    WHERE s.id = p.slot_id AND pe.id = p.persona_id AND p.slot_id = $1 AND p.status = ANY($3)
      AND p.discarded_at IS NULL
    RETURNING p.id, p.from_status, pe.agent_id AS persona_agent
), recorded AS (
    INSERT INTO review_events (post_id, action, reason, actor_kind, actor_id, actor_name, detail)
    SELECT m.id, 'stocked', $2, 'agent', a.id, a.name, $5
    FROM moved m CROSS JOIN agents a WHERE a.id = $4
)
SELECT id, from_status, persona_agent FROM moved ORDER BY id
"#;

row! {
    struct LeftRow {
        id: Uuid,
        /// The status before, as the move kept it.
        from_status: Stored<PostStatus>,
        persona_agent: Option<Uuid>,
    }
}

/// Moves the account's unfinished posts to inventory ([`STOCK_SLOT`]): the posts moved, in
/// id order.
pub(crate) async fn stock_slot_posts(
    conn: Tx<'_>,
    slot_id: Uuid,
    agent_id: Uuid,
    reason: Option<&str>,
    state: &str,
) -> anyhow::Result<Vec<plan::LeftRotation>> {
    let rows: Vec<LeftRow> = sql!(
        STOCK_SLOT,
        slot_id,
        reason,
        PostStatus::stockable_all(),
        agent_id,
        json!({"account_state": state}),
        PostStatus::Stocked.as_str(),
        unschedule_statuses(),
        Publishing::Agent.as_str()
    )
    .load(conn)
    .await?;
    Ok(rows
        .into_iter()
        .map(|r| plan::LeftRotation {
            id: r.id,
            from: r.from_status.0,
            persona_agent: r.persona_agent,
        })
        .collect())
}

const INVENTORY_ACCOUNTS: &str = r#"
SELECT s.id AS slot_id, s.code, s.platform, g.state, count(p.id) AS n
FROM account_slots s
JOIN personas pe ON pe.id = s.persona_id
LEFT JOIN account_generations g ON g.slot_id = s.id AND g.closed_at IS NULL
JOIN posts p ON p.slot_id = s.id AND p.status = $5
WHERE s.workspace_id = $1 AND pe.agent_id = $2
  AND ($3::bool IS NULL OR p.sponsored = $3) AND ($4::uuid IS NULL OR s.id = $4)
GROUP BY s.id, s.code, s.platform, g.state
ORDER BY s.code, s.platform
"#;

row! {
    struct AccountRow {
        slot_id: Uuid,
        code: String,
        platform: Stored<Platform>,
        state: Option<String>,
        n: i64,
    }
}

const INVENTORY_POSTS: &str = r#"
SELECT p.id, p.slot_id, p.body, p.topic, p.sponsored, p.from_status, p.planned_was,
       p.stock_reason AS reason, p.awaiting_rewrite AS waiting_rewrite, p.unschedule_pending,
       COALESCE(p.stocked_at, p.updated_at) AS stocked_at
FROM posts p
JOIN personas pe ON pe.id = p.persona_id
WHERE p.workspace_id = $1 AND pe.agent_id = $2 AND p.status = $8
  AND ($3::bool IS NULL OR p.sponsored = $3) AND ($4::uuid IS NULL OR p.slot_id = $4)
  AND ($5::timestamptz IS NULL OR (COALESCE(p.stocked_at, p.updated_at), p.id) > ($5, $6))
ORDER BY COALESCE(p.stocked_at, p.updated_at), p.id
LIMIT $7
"#;

row! {
    struct StockedRow into StockedPost {
        id: Uuid,
        slot_id: Uuid,
        body: String,
        topic: Option<String>,
        sponsored: bool,
        from_status: Option<Stored<PostStatus>>,
        planned_was: Option<Ts>,
        reason: Option<String>,
        waiting_rewrite: bool,
        unschedule_pending: bool,
        stocked_at: Ts,
    }
}

/// A post of the caller's workspace with its account, locked for an inventory move.
const POST_FOR_INVENTORY: &str = r#"
SELECT p.id, p.status, p.workspace_id, p.slot_id, s.code, s.platform,
       pe.agent_id AS persona_agent, p.planned_at, (p.discarded_at IS NOT NULL) AS discarded,
       p.awaiting_rewrite, p.from_status, p.unschedule_pending, s.publishing, s.timezone,
       s.daily_target, g.state, (pe.agent_id IS NOT DISTINCT FROM $2) AS mine
FROM posts p
JOIN account_slots s ON s.id = p.slot_id
JOIN personas pe ON pe.id = p.persona_id
LEFT JOIN account_generations g ON g.slot_id = s.id AND g.closed_at IS NULL
WHERE p.id = $1 AND p.workspace_id = $3
FOR UPDATE OF p
"#;

row! {
    struct PostRow {
        id: Uuid,
        status: Stored<PostStatus>,
        workspace_id: Uuid,
        slot_id: Uuid,
        code: String,
        platform: Stored<Platform>,
        persona_agent: Option<Uuid>,
        planned_at: Option<Ts>,
        discarded: bool,
        awaiting_rewrite: bool,
        from_status: Option<String>,
        unschedule_pending: bool,
        publishing: String,
        timezone: String,
        daily_target: i32,
        state: Option<Stored<AccountState>>,
        mine: bool,
    }
}

/// The post a move names, locked, as the plans read it (`None`: not in the workspace).
async fn post_fact(
    conn: Tx<'_>,
    agent: AgentRef,
    post_id: Uuid,
) -> anyhow::Result<Option<plan::PostFact>> {
    let row: Option<PostRow> = sql!(
        POST_FOR_INVENTORY,
        post_id,
        agent.agent_id,
        agent.workspace_id
    )
    .get_result(conn)
    .await
    .optional()?;
    let Some(r) = row else {
        return Ok(None);
    };
    Ok(Some(plan::PostFact {
        id: r.id,
        status: r.status.0,
        workspace_id: r.workspace_id,
        slot_id: r.slot_id,
        code: r.code,
        platform: r.platform.0,
        persona_agent: r.persona_agent,
        planned_at: r.planned_at.map(Into::into),
        discarded: r.discarded,
        awaiting_rewrite: r.awaiting_rewrite,
        from_status: r.from_status.as_deref().and_then(PostStatus::parse),
        unschedule_pending: r.unschedule_pending,
        agent_publishes: Publishing::by_agent(&r.publishing),
        zone: jiff::tz::TimeZone::get(&r.timezone)?,
        daily_target: r.daily_target,
        state: r.state.map(|s| s.0),
        mine: r.mine,
    }))
}

/// Writes a planned move: the post's columns, its history entry and its event; answers the
/// move.
async fn write(
    conn: Tx<'_>,
    agent: AgentRef,
    planned: Result<plan::MovePlan, InventoryRefusal>,
) -> anyhow::Result<Result<Moved, InventoryRefusal>> {
    let planned = match planned {
        Ok(p) => p,
        Err(refusal) => return Ok(Err(refusal)),
    };
    let Some((post_write, entry)) = &planned.write else {
        return Ok(Ok(planned.moved));
    };
    let post = posts::table.find(planned.post_id);
    match post_write {
        plan::PostWrite::Stock {
            status,
            reason,
            unschedule_pending,
        } => {
            // Where the post was: its status, and its time (as reported, else as planned).
            diesel::update(post)
                .set((
                    posts::from_status.eq(posts::status.nullable()),
                    posts::planned_was.eq(coalesce(posts::scheduled_for, posts::planned_at)),
                    posts::status.eq(status.as_str()),
                    posts::stocked_at.eq(dsl::now),
                    posts::stock_reason.eq(reason.as_deref()),
                    // Set, never cleared here: a pending unschedule stays pending.
                    unschedule_pending.then(|| posts::unschedule_pending.eq(true)),
                    posts::updated_at.eq(dsl::now),
                ))
                .execute(conn)
                .await?
        }
        plan::PostWrite::Unstock { status, planned_at } => {
            diesel::update(post)
                .set((
                    posts::status.eq(status.as_str()),
                    posts::planned_at.eq(Ts::from(*planned_at)),
                    posts::stocked_at.eq(None::<Ts>),
                    posts::stock_reason.eq(None::<String>),
                    posts::from_status.eq(None::<String>),
                    posts::planned_was.eq(None::<Ts>),
                    posts::updated_at.eq(dsl::now),
                ))
                .execute(conn)
                .await?
        }
        plan::PostWrite::ClearUnschedule => {
            diesel::update(post)
                .set((
                    posts::unschedule_pending.eq(false),
                    posts::updated_at.eq(dsl::now),
                ))
                .execute(conn)
                .await?
        }
        plan::PostWrite::Discard { status } => {
            diesel::update(post)
                .set((
                    posts::status.eq(status.as_str()),
                    posts::discarded_at.eq(dsl::now),
                    posts::updated_at.eq(dsl::now),
                ))
                .execute(conn)
                .await?
        }
    };
    let record = Entry {
        post_id: planned.post_id,
        action: entry.action,
        reason: entry.reason.as_deref(),
        detail: &entry.detail,
    };
    match &entry.by {
        plan::By::Agent => crate::record::by_agent(conn, agent.agent_id, &[record]).await?,
        plan::By::Person(name) => crate::record::by_member(conn, record, None, name).await?,
    }
    crate::events::write(conn, planned.event.as_slice()).await?;
    Ok(Ok(planned.moved))
}

async fn unstock_tx(
    conn: Tx<'_>,
    agent: AgentRef,
    post_id: Uuid,
    planned: TimeInput,
    extra: bool,
    now: Timestamp,
) -> anyhow::Result<Result<Moved, InventoryRefusal>> {
    let post = post_fact(conn, agent, post_id).await?;
    let (post, planned_at, market) = match plan::unstock_day(post, planned)? {
        Ok(day) => day,
        Err(refusal) => return Ok(Err(refusal)),
    };
    let [published, scheduled, planned] = day_statuses();
    // Posts that hold the market date ([`fleetdesk_posts::post::DayTime`]): published or
    // scheduled on it (as reported), or approved or in review and planned for it.
    let (start, end) = (Ts::from(market.start), Ts::from(market.end));
    let committed: i64 = posts::table
        .filter(posts::slot_id.eq(post.slot_id))
        .filter(posts::id.ne(post_id))
        .filter(
            (posts::status.eq_any(published))
                .and(posts::published_at.ge(start))
                .and(posts::published_at.lt(end))
                .or(posts::status
                    .eq_any(scheduled)
                    .and(posts::scheduled_for.ge(start))
                    .and(posts::scheduled_for.lt(end)))
                .or(posts::status
                    .eq_any(planned)
                    .and(posts::planned_at.ge(start))
                    .and(posts::planned_at.lt(end))),
        )
        .count()
        .get_result(conn)
        .await?;
    let planned = plan::plan_unstock(post, planned_at, &market, committed, now, extra);
    write(conn, agent, planned).await
}

const UNSCHEDULE_LIST: &str = r#"
SELECT p.id, s.code, s.legacy_code, s.platform, p.scheduled_for,
       COALESCE(p.scheduler_ref, p.platform_post_id) AS scheduler_ref,
       p.platform_post_id AS external_id, COALESCE(p.stocked_at, p.updated_at) AS stocked_at,
       p.stock_reason AS reason, p.body
FROM posts p
JOIN account_slots s ON s.id = p.slot_id
JOIN personas pe ON pe.id = p.persona_id
WHERE p.workspace_id = $1 AND pe.agent_id = $2 AND p.unschedule_pending
ORDER BY COALESCE(p.stocked_at, p.updated_at), p.id
LIMIT $3
"#;

row! {
    struct UnscheduleRow into UnscheduleItem {
        id: Uuid,
        code: String,
        legacy_code: Option<String>,
        platform: Stored<Platform>,
        scheduled_for: Option<Ts>,
        scheduler_ref: Option<String>,
        external_id: Option<String>,
        stocked_at: Ts,
        reason: Option<String>,
        body: String,
    }
}

impl InventoryRepo for PgStore {
    fn list<'a>(
        &'a self,
        agent: AgentRef,
        query: &'a InventoryQuery,
    ) -> BoxFuture<'a, anyhow::Result<InventoryPage>> {
        self.read(async move |conn| {
            let sponsored = query.sponsored.map(|s| s == Sponsored::Only);
            let accounts: Vec<AccountRow> = sql!(
                INVENTORY_ACCOUNTS,
                agent.workspace_id,
                agent.agent_id,
                sponsored,
                query.slot,
                PostStatus::Stocked.as_str()
            )
            .load(conn)
            .await?;
            let rows: Vec<StockedRow> = sql!(
                INVENTORY_POSTS,
                agent.workspace_id,
                agent.agent_id,
                sponsored,
                query.slot,
                query.after.map(|a| Ts::from(a.0)),
                query.after.map(|a| a.1).unwrap_or_default(),
                query.limit + 1,
                PostStatus::Stocked.as_str()
            )
            .load(conn)
            .await?;
            let posts: Vec<StockedPost> = rows.into_iter().map(Into::into).collect();
            Ok(InventoryPage {
                accounts: accounts
                    .into_iter()
                    .map(|a| {
                        InventoryAccount::listed(a.slot_id, a.code, a.platform.0, a.state, a.n)
                    })
                    .collect(),
                posts: Page::probed(posts, query.limit, |p| (p.stocked_at, p.id)),
            })
        })
    }

    fn stock<'a>(
        &'a self,
        agent: AgentRef,
        post_id: Uuid,
        reason: Option<&'a str>,
    ) -> BoxFuture<'a, anyhow::Result<Result<Moved, InventoryRefusal>>> {
        self.tx(async move |conn| {
            let post = post_fact(conn, agent, post_id).await?;
            write(conn, agent, plan::plan_stock(post, reason)).await
        })
    }

    fn unstock<'a>(
        &'a self,
        agent: AgentRef,
        post_id: Uuid,
        planned_at: TimeInput,
        extra: bool,
        now: Timestamp,
    ) -> BoxFuture<'a, anyhow::Result<Result<Moved, InventoryRefusal>>> {
        self.tx(async move |conn| unstock_tx(conn, agent, post_id, planned_at, extra, now).await)
    }

    fn confirm_unscheduled(
        &self,
        agent: AgentRef,
        post_id: Uuid,
    ) -> BoxFuture<'_, anyhow::Result<Result<Moved, InventoryRefusal>>> {
        self.tx(async move |conn| {
            let post = post_fact(conn, agent, post_id).await?;
            write(conn, agent, plan::plan_confirm_unscheduled(post)).await
        })
    }

    fn delete_stocked<'a>(
        &'a self,
        agent: AgentRef,
        post_id: Uuid,
        role: OnBehalfRole,
        person: &'a str,
        reason: Option<&'a str>,
        relay: &'a Value,
    ) -> BoxFuture<'a, anyhow::Result<Result<Moved, InventoryRefusal>>> {
        self.tx(async move |conn| {
            let post = post_fact(conn, agent, post_id).await?;
            write(
                conn,
                agent,
                plan::plan_delete(post, role, person, reason, relay),
            )
            .await
        })
    }

    fn unschedule_list(
        &self,
        agent: AgentRef,
        limit: i64,
    ) -> BoxFuture<'_, anyhow::Result<Vec<UnscheduleItem>>> {
        self.read(async move |conn| {
            let rows: Vec<UnscheduleRow> =
                sql!(UNSCHEDULE_LIST, agent.workspace_id, agent.agent_id, limit)
                    .load(conn)
                    .await?;
            Ok(rows.into_iter().map(Into::into).collect())
        })
    }
}

statements!(
    STOCK_SLOT => LeftRow,
    INVENTORY_ACCOUNTS => AccountRow,
    INVENTORY_POSTS => StockedRow,
    POST_FOR_INVENTORY => PostRow,
    UNSCHEDULE_LIST => UnscheduleRow,
);
