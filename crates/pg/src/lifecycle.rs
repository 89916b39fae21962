//! The lifecycle port over PostgreSQL: review lists and moves, the approved list, report
//! batches and metrics. Every batch runs a fixed number of statements whatever its size: the
//! rows it may touch are loaded at once, the domain plans every item, and the plan is written
//! with one statement per table.

use crate::accounts::SlotCodes;
use crate::db::{PgStore, Ts, Tx, column};
use crate::record::Entry;
use crate::rows::{Json, JsonOrDefault, Stored};
use crate::schema::{post_reports, posts, review_events};
use diesel::dsl::{self, max};
use diesel::prelude::*;
use diesel_async::RunQueryDsl;
use fleetdesk_accounts::Publishing;
use fleetdesk_kernel::{AgentRef, BoxFuture, Platform};
use fleetdesk_posts::approval::{ApprovalPin, PublishedDiffers};
use fleetdesk_posts::batch::{LoadedSlot, Lookups, read_items, report_codes, resolve};
use fleetdesk_posts::metrics::{
    MetricsPost, MetricsSlot, PostCounters, plan_metrics, read_captured_at,
};
use fleetdesk_posts::ports::*;
use fleetdesk_posts::post::Character;
use fleetdesk_posts::post::PostStatus;
use fleetdesk_posts::report::{
    ItemError, KnownPost, PostFields, ReportPlan, adoptable, plan_report, to_stored_precision,
};
use fleetdesk_posts::review::{
    MovingPost, PlannedMove, client_visible_texts, plan_move, record_for, review_stages,
};
use jiff::Timestamp;
use serde_json::Value;
use uuid::Uuid;

fn ts(t: Option<Timestamp>) -> Option<Ts> {
    t.map(Ts::from)
}

// ---------------------------------------------------------------------------------------------
// Post cards: one statement shape for every list

/// The columns of a post card, with its media in publishing order and its latest metrics.
macro_rules! card_sql {
    ($sort:literal, $($rest:tt)+) => {
        concat!(
            "SELECT p.id, p.status, w.name AS workspace, pr.name AS project, s.code, s.platform, \
                    pe.name AS persona, s.handle, s.timezone, p.body, p.topic, p.sponsored, p.planned_at, \
                    p.characters, a.name AS agent, p.created_at, p.scheduled_for, p.published_at, \
                    p.platform_post_id, p.permalink, p.failure_reason, p.last_reported_at, \
                    w.client_review, p.stocked_at, p.stock_reason, p.approved_pin AS approved, \
                    p.published_differs, \
                    (SELECT COALESCE(jsonb_agg(jsonb_build_object('id', m.id, 'kind', m.kind, \
                        'mime_type', m.mime_type, 'caption', m.caption, \
                        'duration_ms', m.duration_ms) ORDER BY pm.position), '[]'::jsonb) \
                       FROM post_media pm JOIN media m ON m.id = pm.media_id \
                      WHERE pm.post_id = p.id) AS media, \
                    (SELECT to_jsonb(x) FROM (SELECT \
                        to_timestamp(extract(epoch FROM captured_at)::bigint) AS captured_at, \
                        views, likes, replies, reposts, shares \
                        FROM post_metrics WHERE post_id = p.id \
                        ORDER BY captured_at DESC LIMIT 1) x) AS metrics, ",
            $sort,
            " AS sort_at \
             FROM posts p \
             JOIN account_slots s ON s.id = p.slot_id \
             JOIN personas pe ON pe.id = p.persona_id \
             JOIN workspaces w ON w.id = p.workspace_id \
             JOIN projects pr ON pr.id = p.project_id \
             LEFT JOIN agents a ON a.id = p.agent_id ",
            $($rest)+
        )
    };
}

/// What a client sees ([`fleetdesk_posts::review::visible`]): a post in one of the statuses
/// bound at `$statuses`, or one whose record holds one of the actions bound at `$actions`
/// ([`fleetdesk_posts::review::client_visible_texts`]). In SQL so that pages are whole.
macro_rules! client_visible {
    ($statuses:literal, $actions:literal) => {
        concat!(
            "(p.status = ANY(",
            $statuses,
            ") OR EXISTS (SELECT 1 FROM review_events ce \
              WHERE ce.post_id = p.id AND ce.action = ANY(",
            $actions,
            ")))"
        )
    };
}

const REVIEW_QUEUE: &str = card_sql!(
    "COALESCE(p.planned_at, p.created_at)",
    "WHERE ($1::uuid IS NULL OR p.organization_id = $1) AND p.status = ANY($2) \
       AND ($3::timestamptz IS NULL OR (COALESCE(p.planned_at, p.created_at), p.id) > ($3, $4)) \
     ORDER BY COALESCE(p.planned_at, p.created_at), p.id \
     LIMIT $5"
);

const PUBLISHED: &str = card_sql!(
    "p.published_at",
    "WHERE ($1::uuid IS NULL OR p.organization_id = $1) AND p.status = $8 \
       AND (NOT $2 OR ",
    client_visible!("$9", "$10"),
    ") AND ($3::text IS NULL OR s.code = $3 OR s.legacy_code = $3) \
       AND ($4::timestamptz IS NULL OR p.published_at >= $4) \
       AND ($5::timestamptz IS NULL OR (p.published_at, p.id) < ($5, $6)) \
     ORDER BY p.published_at DESC, p.id DESC \
     LIMIT $7"
);

const ONE_POST: &str = card_sql!(
    "p.created_at",
    "WHERE p.id = $1 AND ($2::uuid IS NULL OR p.organization_id = $2) AND (NOT $3 OR ",
    client_visible!("$4", "$5"),
    ")"
);

const APPROVED: &str = card_sql!(
    "COALESCE(p.planned_at, p.created_at)",
    "WHERE p.workspace_id = $1 AND pe.agent_id = $2 AND p.status = $4 \
       AND s.publishing = $5 \
     ORDER BY p.planned_at NULLS LAST, p.created_at, p.id \
     LIMIT $3"
);

row! {
    /// A post card, as every card statement ([`card_sql!`]) reads it.
    struct CardRow into PostCard {
        id: Uuid,
        status: Stored<PostStatus>,
        workspace: String,
        project: String,
        code: String,
        platform: Stored<Platform>,
        persona: String,
        handle: Option<String>,
        timezone: String,
        body: String,
        topic: Option<String>,
        sponsored: bool,
        planned_at: Option<Ts>,
        characters: JsonOrDefault<Vec<Character>>,
        media: Json<Vec<PostMedia>>,
        agent: Option<String>,
        created_at: Ts,
        #[diesel(embed)]
        reported: ReportedRow,
        metrics: Option<Json<LatestMetrics>>,
        sort_at: Ts,
        approved: Option<Json<ApprovalPin>>,
        published_differs: Option<Json<PublishedDiffers>>,
    }
}

row! {
    struct ReportedRow into Reported {
        scheduled_for: Option<Ts>,
        published_at: Option<Ts>,
        platform_post_id: Option<String>,
        permalink: Option<String>,
        failure_reason: Option<String>,
        last_reported_at: Option<Ts>,
    }
}

row! {
    /// A post's card with what its detail adds ([`ONE_POST`]).
    struct DetailRow {
        #[diesel(embed)]
        card: CardRow,
        client_review: bool,
        stocked_at: Option<Ts>,
        stock_reason: Option<String>,
    }
}

fn cards(rows: Vec<CardRow>) -> Vec<PostCard> {
    rows.into_iter().map(Into::into).collect()
}

/// A page of cards: `limit + 1` rows were asked for, the extra one says there is more.
fn page(rows: Vec<CardRow>, limit: i64) -> Page<PostCard> {
    Page::probed(cards(rows), limit, |c| (c.sort_at, c.id))
}

// ---------------------------------------------------------------------------------------------
// Review moves

selectable! {
    /// A post's review record, oldest entry first.
    #[diesel(table_name = review_events)]
    struct RecordRow into RecordEntry {
        action: String,
        reason: Option<String>,
        actor_kind: String,
        actor_name: String,
        detail: Value,
        #[diesel(column_name = created_at)]
        at: Ts,
    }
}

const POST_FOR_MOVE: &str = r#"
SELECT p.status, p.organization_id, p.workspace_id, w.client_review, s.timezone,
       (pe.agent_id IS NOT DISTINCT FROM $2) AS mine, pe.agent_id AS persona_agent, s.code,
       s.platform,
       EXISTS (SELECT 1 FROM review_events ce
                WHERE ce.post_id = p.id AND ce.action = ANY($3)) AS went_through_client,
       p.body, p.characters,
       ARRAY(SELECT m.sha256 FROM post_media pm JOIN media m ON m.id = pm.media_id
             WHERE pm.post_id = p.id ORDER BY pm.position) AS media
FROM posts p
JOIN workspaces w ON w.id = p.workspace_id
JOIN account_slots s ON s.id = p.slot_id
JOIN personas pe ON pe.id = p.persona_id
WHERE p.id = $1
FOR UPDATE OF p
"#;

row! {
    struct MoveRow {
        #[diesel(embed)]
        post: MovingRow,
        timezone: String,
    }
}

row! {
    struct MovingRow into MovingPost {
        status: Stored<PostStatus>,
        organization_id: Uuid,
        workspace_id: Uuid,
        client_review: bool,
        mine: bool,
        went_through_client: bool,
        persona_agent: Option<Uuid>,
        code: String,
        platform: Stored<Platform>,
        body: String,
        media: Vec<String>,
        characters: JsonOrDefault<Vec<Character>>,
    }
}

/// What an approval pinned, kept on the post ([`fleetdesk_posts::approval::ApprovalPin`]).
const PIN_APPROVAL: &str = "UPDATE posts SET approved_pin = $2 WHERE id = $1";

async fn transition_tx(
    conn: Tx<'_>,
    scope: ReviewScope,
    reviewer: &Reviewer,
    request: &TransitionRequest,
    now: Timestamp,
) -> anyhow::Result<Result<Transitioned, TransitionRefusal>> {
    let agent_id = match scope {
        ReviewScope::Agent(a) => a.agent_id,
        ReviewScope::Member(_) => Uuid::nil(),
    };
    let (_, client_actions) = client_visible_texts();
    let Some(row): Option<MoveRow> = sql!(POST_FOR_MOVE, request.post_id, agent_id, client_actions)
        .get_result(conn)
        .await
        .optional()?
    else {
        return Ok(Err(TransitionRefusal::NotFound));
    };
    let post = MovingPost::from(row.post);
    // The account's zone is read only for a planned time, the one input it reads.
    let zone = match request.planned_at {
        Some(_) => jiff::tz::TimeZone::get(&row.timezone)?,
        None => jiff::tz::TimeZone::UTC,
    };
    let planned = match plan_move(scope, reviewer.role, &post, request, &zone, now) {
        Ok(p) => p,
        Err(r) => return Ok(Err(r)),
    };
    let detail = planned.detail(reviewer);
    let PlannedMove {
        from,
        the_move,
        to,
        planned_at,
        event,
        pin,
    } = planned;
    if let Some(pin) = pin {
        sql!(PIN_APPROVAL, request.post_id, serde_json::to_value(pin)?)
            .execute(conn)
            .await?;
    }
    let rewrite = the_move.rewrite();
    // A time or flag the move leaves out keeps its stored value; a post sent back keeps the
    // body it was sent back with.
    let keeps = rewrite.keeps_returned_body().then(|| {
        (
            posts::returned_body.eq(posts::body.nullable()),
            posts::returned_at.eq(dsl::now),
        )
    });
    let stored_plan: Option<Ts> = diesel::update(posts::table.find(request.post_id))
        .set((
            posts::status.eq(to.as_str()),
            ts(planned_at).map(|t| posts::planned_at.eq(t)),
            rewrite
                .awaiting_rewrite()
                .map(|b| posts::awaiting_rewrite.eq(b)),
            rewrite
                .rewrite_answered()
                .map(|b| posts::rewrite_answered.eq(b)),
            keeps,
            posts::updated_at.eq(dsl::now),
        ))
        .returning(posts::planned_at)
        .get_result(conn)
        .await?;
    crate::record::by_member(
        conn,
        Entry {
            post_id: request.post_id,
            action: the_move.action(),
            reason: request.comment.as_deref(),
            detail: &detail,
        },
        reviewer.person_id,
        &reviewer.name,
    )
    .await?;
    crate::events::write(conn, event.as_slice()).await?;
    Ok(Ok(Transitioned {
        id: request.post_id,
        from,
        status: to,
        planned_at: stored_plan.map(Into::into),
    }))
}

// ---------------------------------------------------------------------------------------------
// Reports

/// The accounts a batch names, locked so that reports, metrics and drafts of one account run
/// one at a time (matching and the zero rule must see the previous batch's writes).
const REPORT_SLOTS: &str = r#"
SELECT s.id AS slot_id, s.code, s.legacy_code, s.platform, s.timezone, s.workspace_id,
       s.persona_id, pe.agent_id AS persona_agent, pe.project_id, g.id AS generation_id,
       (pe.agent_id IS NOT DISTINCT FROM $2) AS mine
FROM account_slots s
JOIN personas pe ON pe.id = s.persona_id
LEFT JOIN account_generations g ON g.slot_id = s.id AND g.closed_at IS NULL
WHERE s.workspace_id = $1 AND (s.code = ANY($3) OR s.legacy_code = ANY($3))
ORDER BY s.id
FOR UPDATE OF s
"#;

row! {
    struct SlotRow {
        #[diesel(embed)]
        slot: SlotCodes,
        timezone: String,
        workspace_id: Uuid,
        persona_id: Uuid,
        persona_agent: Option<Uuid>,
        project_id: Uuid,
        generation_id: Option<Uuid>,
    }
}

/// Each locked account's latest followers at or before the capture. A statement of its own,
/// after the lock: a statement's snapshot is taken before it waits on a row lock, so followers
/// read by the locking statement would miss a batch committed while this one waited.
const LATEST_FOLLOWERS: &str = r#"
SELECT DISTINCT ON (slot_id) slot_id, followers
FROM account_metrics WHERE slot_id = ANY($1) AND captured_at <= $2
ORDER BY slot_id, captured_at DESC
"#;

row! {
    struct FollowersRow {
        slot_id: Uuid,
        followers: i64,
    }
}

/// The accounts the codes name, locked (a platform the service does not know names none).
async fn load_slots(conn: Tx<'_>, agent: AgentRef, codes: &[&str]) -> QueryResult<Vec<LoadedSlot>> {
    if codes.is_empty() {
        return Ok(Vec::new());
    }
    let rows: Vec<SlotRow> = sql!(REPORT_SLOTS, agent.workspace_id, agent.agent_id, codes)
        .load(conn)
        .await?;
    Ok(rows
        .into_iter()
        .filter_map(|r| {
            Some(LoadedSlot {
                name: r.slot.name()?,
                timezone: r.timezone,
                workspace_id: r.workspace_id,
                persona_id: r.persona_id,
                persona_agent: r.persona_agent,
                project_id: r.project_id,
                generation_id: r.generation_id,
            })
        })
        .collect())
}

/// Every post a batch may match: by id (this organization; the planner tells workspaces
/// apart), by exact (platform, platform id) pairs of the organization, or by exact (account,
/// body key) pairs among the posts the matching rules look at. Exact pairs keep each lookup on
/// an index whatever the organization's history.
const KNOWN_POSTS: &str = r#"
WITH wanted AS (
    SELECT p.id FROM posts p WHERE p.organization_id = $1 AND p.id = ANY($4)
    UNION
    SELECT p.id
    FROM unnest($5::text[], $6::text[]) AS k(platform, platform_post_id)
    JOIN posts p ON p.organization_id = $1 AND p.platform = k.platform
                AND p.platform_post_id = k.platform_post_id
    UNION
    SELECT p.id
    FROM unnest($7::uuid[], $8::text[]) AS k(slot_id, body_key)
    JOIN posts p ON p.slot_id = k.slot_id AND p.body_key = k.body_key
    WHERE p.status = ANY($10) OR (p.status = $11 AND p.published_at >= $9)
)
SELECT p.id, p.slot_id, p.platform, (p.workspace_id = $2) AS in_workspace,
       (p.workspace_id = $2 AND pe.agent_id IS NOT DISTINCT FROM $3) AS mine,
       (p.origin = 'report') AS from_report, (p.discarded_at IS NOT NULL) AS discarded,
       p.planned_at, pe.agent_id AS persona_agent, p.status, p.body,
       COALESCE(p.body_key, '') AS body_key, p.topic, p.sponsored,
       p.scheduled_for, p.published_at, p.platform_post_id, p.scheduler_ref, p.permalink,
       p.has_media, p.failure_reason, p.unschedule_pending, p.approved_pin AS approved,
       (p.published_differs IS NOT NULL) AS marked
FROM wanted w
JOIN posts p ON p.id = w.id
JOIN personas pe ON pe.id = p.persona_id
WHERE p.organization_id = $1
ORDER BY p.id
FOR UPDATE OF p
"#;

row! {
    struct KnownRow into KnownPost {
        id: Uuid,
        slot_id: Uuid,
        platform: Stored<Platform>,
        in_workspace: bool,
        mine: bool,
        from_report: bool,
        discarded: bool,
        planned_at: Option<Ts>,
        persona_agent: Option<Uuid>,
        #[diesel(embed)]
        fields: FieldsRow,
        approved: Option<Json<ApprovalPin>>,
        marked: bool,
    }
}

row! {
    struct FieldsRow into PostFields {
        status: Stored<PostStatus>,
        body: String,
        body_key: String,
        topic: Option<String>,
        sponsored: bool,
        scheduled_for: Option<Ts>,
        published_at: Option<Ts>,
        platform_post_id: Option<String>,
        scheduler_ref: Option<String>,
        permalink: Option<String>,
        has_media: Option<bool>,
        failure_reason: Option<String>,
        unschedule_pending: bool,
    }
}

const INSERT_REPORTED: &str = r#"
INSERT INTO posts (id, organization_id, workspace_id, agent_id, last_reported_at, origin,
                   project_id, persona_id, slot_id, generation_id, platform, status, body,
                   body_key, topic, sponsored, scheduled_for, published_at, platform_post_id,
                   permalink, has_media, failure_reason)
SELECT t.id, $1, $2, $3, $4, 'report', t.project_id, t.persona_id, t.slot_id, t.generation_id,
       t.platform, t.status, t.body, t.body_key, t.topic, t.sponsored, t.scheduled_for,
       t.published_at, t.platform_post_id, t.permalink, t.has_media, t.failure_reason
FROM unnest($5::uuid[], $6::uuid[], $7::uuid[], $8::uuid[], $9::uuid[], $10::text[],
            $11::text[], $12::text[], $13::text[], $14::text[], $15::bool[],
            $16::timestamptz[], $17::timestamptz[], $18::text[], $19::text[], $20::bool[],
            $21::text[])
     AS t(id, project_id, persona_id, slot_id, generation_id, platform, status, body, body_key,
          topic, sponsored, scheduled_for, published_at, platform_post_id, permalink, has_media,
          failure_reason)
"#;

const UPDATE_REPORTED: &str = r#"
UPDATE posts p
SET status = t.status, body = t.body, body_key = t.body_key, topic = t.topic,
    sponsored = t.sponsored, scheduled_for = t.scheduled_for, published_at = t.published_at,
    platform_post_id = t.platform_post_id, scheduler_ref = t.scheduler_ref,
    permalink = t.permalink, has_media = t.has_media, failure_reason = t.failure_reason,
    unschedule_pending = t.unschedule_pending, last_reported_at = $1, updated_at = now()
FROM unnest($2::uuid[], $3::text[], $4::text[], $5::text[], $6::text[], $7::bool[],
            $8::timestamptz[], $9::timestamptz[], $10::text[], $11::text[], $12::text[],
            $13::bool[], $14::text[], $15::bool[])
     AS t(id, status, body, body_key, topic, sponsored, scheduled_for, published_at,
          platform_post_id, scheduler_ref, permalink, has_media, failure_reason,
          unschedule_pending)
WHERE p.id = t.id
"#;

/// The posts a report marks published differing from their approval, each with its mark.
const MARK_DIFFERS: &str = r#"
UPDATE posts p SET published_differs = t.mark
FROM unnest($1::uuid[], $2::jsonb[]) AS t(id, mark)
WHERE p.id = t.id
"#;

async fn report_tx(
    conn: Tx<'_>,
    agent: AgentRef,
    raw: Vec<Result<RawReportItem, ItemError>>,
    now: Timestamp,
) -> anyhow::Result<ReportOutcome> {
    let now = to_stored_precision(now);
    let slots = load_slots(conn, agent, &report_codes(&raw)).await?;
    let items = read_items(raw, &slots, now);
    let known: Vec<KnownRow> = match Lookups::of(&items) {
        None => Vec::new(),
        Some(l) => {
            sql!(
                KNOWN_POSTS,
                agent.organization_id,
                agent.workspace_id,
                agent.agent_id,
                &l.post_ids,
                &l.id_platforms,
                &l.platform_ids,
                &l.body_slots,
                &l.body_keys,
                Ts::from(now - fleetdesk_posts::report::PUBLISHED_MATCH_WINDOW),
                PostStatus::texts(adoptable),
                PostStatus::Published.as_str()
            )
            .load(conn)
            .await?
        }
    };
    let known = known.into_iter().map(Into::into).collect();
    let plan = plan_report(items, known, now);
    if plan.all_rejected() {
        return Ok(ReportOutcome {
            report_id: None,
            received_at: now,
            plan,
        });
    }
    write_inserts(conn, agent, &plan, now).await?;
    write_updates(conn, &plan, now).await?;
    write_marks(conn, &plan).await?;
    write_events(conn, agent, &plan).await?;
    crate::events::write(conn, &plan.told).await?;
    let counts = plan.counts();
    let count = |n: usize| n as i32;
    let report: Uuid = diesel::insert_into(post_reports::table)
        .values((
            post_reports::agent_id.eq(agent.agent_id),
            post_reports::workspace_id.eq(agent.workspace_id),
            post_reports::received_at.eq(Ts::from(now)),
            post_reports::inserted.eq(count(counts.inserted)),
            post_reports::updated.eq(count(counts.updated)),
            post_reports::unchanged.eq(count(counts.unchanged)),
            post_reports::ignored.eq(count(counts.ignored)),
            post_reports::rejected.eq(count(counts.rejected)),
        ))
        .returning(post_reports::id)
        .get_result(conn)
        .await?;
    Ok(ReportOutcome {
        report_id: Some(report),
        received_at: now,
        plan,
    })
}

async fn write_inserts(
    conn: Tx<'_>,
    agent: AgentRef,
    plan: &ReportPlan,
    now: Timestamp,
) -> QueryResult<()> {
    let n = &plan.inserts;
    if n.is_empty() {
        return Ok(());
    }
    sql!(
        INSERT_REPORTED,
        agent.organization_id,
        agent.workspace_id,
        agent.agent_id,
        Ts::from(now),
        column(n, |i| i.id),
        column(n, |i| i.slot.project_id),
        column(n, |i| i.slot.persona_id),
        column(n, |i| i.slot.slot_id),
        column(n, |i| i.slot.generation_id),
        column(n, |i| i.slot.platform.as_str()),
        column(n, |i| i.fields.status.as_str()),
        column(n, |i| i.fields.body.as_str()),
        column(n, |i| i.fields.body_key.as_str()),
        column(n, |i| i.fields.topic.as_deref()),
        column(n, |i| i.fields.sponsored),
        column(n, |i| ts(i.fields.scheduled_for)),
        column(n, |i| ts(i.fields.published_at)),
        column(n, |i| i.fields.platform_post_id.as_deref()),
        column(n, |i| i.fields.permalink.as_deref()),
        column(n, |i| i.fields.has_media),
        column(n, |i| i.fields.failure_reason.as_deref())
    )
    .execute(conn)
    .await?;
    Ok(())
}

async fn write_updates(conn: Tx<'_>, plan: &ReportPlan, now: Timestamp) -> QueryResult<()> {
    let u = &plan.updates;
    if u.is_empty() {
        return Ok(());
    }
    sql!(
        UPDATE_REPORTED,
        Ts::from(now),
        column(u, |(id, _)| *id),
        column(u, |(_, p)| p.status.as_str()),
        column(u, |(_, p)| p.body.as_str()),
        column(u, |(_, p)| p.body_key.as_str()),
        column(u, |(_, p)| p.topic.as_deref()),
        column(u, |(_, p)| p.sponsored),
        column(u, |(_, p)| ts(p.scheduled_for)),
        column(u, |(_, p)| ts(p.published_at)),
        column(u, |(_, p)| p.platform_post_id.as_deref()),
        column(u, |(_, p)| p.scheduler_ref.as_deref()),
        column(u, |(_, p)| p.permalink.as_deref()),
        column(u, |(_, p)| p.has_media),
        column(u, |(_, p)| p.failure_reason.as_deref()),
        column(u, |(_, p)| p.unschedule_pending)
    )
    .execute(conn)
    .await?;
    Ok(())
}

async fn write_marks(conn: Tx<'_>, plan: &ReportPlan) -> anyhow::Result<()> {
    let m = &plan.marks;
    if m.is_empty() {
        return Ok(());
    }
    let marks = m
        .iter()
        .map(|(_, mark)| serde_json::to_value(mark))
        .collect::<Result<Vec<_>, _>>()?;
    sql!(MARK_DIFFERS, column(m, |(id, _)| *id), marks)
        .execute(conn)
        .await?;
    Ok(())
}

async fn write_events(conn: Tx<'_>, agent: AgentRef, plan: &ReportPlan) -> QueryResult<()> {
    let entries: Vec<Entry> = plan
        .events
        .iter()
        .map(|e| Entry {
            post_id: e.post_id,
            action: &e.action,
            reason: e.reason.as_deref(),
            detail: &e.detail,
        })
        .collect();
    crate::record::by_agent(conn, agent.agent_id, &entries).await
}

// ---------------------------------------------------------------------------------------------
// Metrics

/// The markets of the agent's accounts: one market means its zone reads local times.
const AGENT_MARKETS: &str = r#"
SELECT DISTINCT s.market AS code
FROM account_slots s JOIN personas pe ON pe.id = s.persona_id
WHERE s.workspace_id = $1 AND pe.agent_id = $2
"#;

row! {
    struct CodeRow {
        code: String,
    }
}

/// The posts a metrics batch names (by id, or by platform id in the organization), with the
/// latest value of each counter at or before the capture.
const METRIC_POSTS: &str = r#"
SELECT p.id, p.slot_id, p.platform_post_id, p.status,
       (p.workspace_id = $2) AS in_workspace,
       (p.workspace_id = $2 AND pe.agent_id IS NOT DISTINCT FROM $3) AS mine,
       l.views, l.likes, l.replies, l.reposts, l.shares
FROM posts p JOIN personas pe ON pe.id = p.persona_id
LEFT JOIN LATERAL (
    SELECT (array_agg(m.views ORDER BY m.captured_at DESC) FILTER (WHERE m.views IS NOT NULL))[1] AS views,
           (array_agg(m.likes ORDER BY m.captured_at DESC) FILTER (WHERE m.likes IS NOT NULL))[1] AS likes,
           (array_agg(m.replies ORDER BY m.captured_at DESC) FILTER (WHERE m.replies IS NOT NULL))[1] AS replies,
           (array_agg(m.reposts ORDER BY m.captured_at DESC) FILTER (WHERE m.reposts IS NOT NULL))[1] AS reposts,
           (array_agg(m.shares ORDER BY m.captured_at DESC) FILTER (WHERE m.shares IS NOT NULL))[1] AS shares
    FROM post_metrics m WHERE m.post_id = p.id AND m.captured_at <= $6
) l ON true
WHERE p.organization_id = $1 AND (p.id = ANY($4) OR p.platform_post_id = ANY($5))
"#;

row! {
    struct MetricPostRow into MetricsPost {
        id: Uuid,
        slot_id: Uuid,
        platform_post_id: Option<String>,
        status: Stored<PostStatus>,
        in_workspace: bool,
        mine: bool,
        #[diesel(embed)]
        latest: CountersRow,
    }
}

row! {
    struct CountersRow into PostCounters {
        views: Option<i64>,
        likes: Option<i64>,
        replies: Option<i64>,
        reposts: Option<i64>,
        shares: Option<i64>,
    }
}

const UPSERT_POST_METRICS: &str = r#"
INSERT INTO post_metrics (post_id, captured_at, views, likes, replies, reposts, shares, agent_id)
SELECT t.post_id, $1, t.views, t.likes, t.replies, t.reposts, t.shares, $2
FROM unnest($3::uuid[], $4::bigint[], $5::bigint[], $6::bigint[], $7::bigint[], $8::bigint[])
     AS t(post_id, views, likes, replies, reposts, shares)
ON CONFLICT (post_id, captured_at) DO UPDATE
SET views = COALESCE(EXCLUDED.views, post_metrics.views),
    likes = COALESCE(EXCLUDED.likes, post_metrics.likes),
    replies = COALESCE(EXCLUDED.replies, post_metrics.replies),
    reposts = COALESCE(EXCLUDED.reposts, post_metrics.reposts),
    shares = COALESCE(EXCLUDED.shares, post_metrics.shares),
    agent_id = EXCLUDED.agent_id, recorded_at = now()
"#;

const UPSERT_ACCOUNT_METRICS: &str = r#"
INSERT INTO account_metrics (slot_id, captured_at, followers, agent_id)
SELECT t.slot_id, $1, t.followers, $2
FROM unnest($3::uuid[], $4::bigint[]) AS t(slot_id, followers)
ON CONFLICT (slot_id, captured_at) DO UPDATE
SET followers = EXCLUDED.followers, agent_id = EXCLUDED.agent_id, recorded_at = now()
"#;

/// Loads what the batch names (the accounts with their latest followers, the posts with their
/// latest counters), lets [`plan_metrics`] decide every item and writes the plan: at most five
/// statements whatever the batch.
async fn metrics_tx(
    conn: Tx<'_>,
    agent: AgentRef,
    report: &MetricsReport,
    now: Timestamp,
) -> anyhow::Result<Result<MetricsOutcome, MetricsRefusal>> {
    let markets: Vec<CodeRow> = sql!(AGENT_MARKETS, agent.workspace_id, agent.agent_id)
        .load(conn)
        .await?;
    let markets: Vec<&str> = markets.iter().map(|m| m.code.as_str()).collect();
    let captured_at = match read_captured_at(report.captured_at, &markets, now) {
        Ok(t) => t,
        Err(refusal) => return Ok(Err(refusal)),
    };

    // Accounts named by posts (code + platform_post_id) and by account items.
    let slots = load_slots(conn, agent, &report.codes()).await?;
    let followers: Vec<FollowersRow> =
        if report.readable_accounts().next().is_none() || slots.is_empty() {
            Vec::new()
        } else {
            let slot_ids: Vec<Uuid> = slots.iter().map(|s| s.name.slot_id).collect();
            sql!(LATEST_FOLLOWERS, &slot_ids, Ts::from(captured_at))
                .load(conn)
                .await?
        };

    let post_ids: Vec<Uuid> = report.readable_posts().filter_map(|p| p.post_id).collect();
    let pids: Vec<&str> = report
        .readable_posts()
        .filter_map(|p| p.platform_post_id.as_deref())
        .collect();
    let rows: Vec<MetricPostRow> = if post_ids.is_empty() && pids.is_empty() {
        Vec::new()
    } else {
        sql!(
            METRIC_POSTS,
            agent.organization_id,
            agent.workspace_id,
            agent.agent_id,
            &post_ids,
            &pids,
            Ts::from(captured_at)
        )
        .load(conn)
        .await?
    };
    let posts: Vec<MetricsPost> = rows.into_iter().map(Into::into).collect();

    let plan = plan_metrics(
        report,
        |code, platform| {
            resolve(&slots, code.as_str(), platform).map(|s| MetricsSlot {
                slot_id: s.name.slot_id,
                latest_followers: followers
                    .iter()
                    .find(|f| f.slot_id == s.name.slot_id)
                    .map(|f| f.followers),
            })
        },
        &posts,
    );

    let p = &plan.posts;
    if !p.is_empty() {
        sql!(
            UPSERT_POST_METRICS,
            Ts::from(captured_at),
            agent.agent_id,
            column(p, |(id, _)| *id),
            column(p, |(_, c)| c.views),
            column(p, |(_, c)| c.likes),
            column(p, |(_, c)| c.replies),
            column(p, |(_, c)| c.reposts),
            column(p, |(_, c)| c.shares)
        )
        .execute(conn)
        .await?;
    }
    let a = &plan.accounts;
    if !a.is_empty() {
        sql!(
            UPSERT_ACCOUNT_METRICS,
            Ts::from(captured_at),
            agent.agent_id,
            column(a, |(slot_id, _)| *slot_id),
            column(a, |(_, followers)| *followers)
        )
        .execute(conn)
        .await?;
    }
    Ok(Ok(MetricsOutcome {
        captured_at,
        posts_written: plan.posts.len(),
        accounts_written: plan.accounts.len(),
        zeros_kept_back: plan.zeros_kept_back,
        refused: plan.refused,
    }))
}

// ---------------------------------------------------------------------------------------------
// The port

impl LifecycleRepo for PgStore {
    fn review_queue<'a>(
        &'a self,
        viewer: Viewer,
        query: &'a ReviewQuery,
    ) -> BoxFuture<'a, anyhow::Result<Page<PostCard>>> {
        self.read(async move |conn| {
            let stages: Vec<&str> = review_stages(viewer.client, query.stage)
                .into_iter()
                .map(PostStatus::as_str)
                .collect();
            let rows: Vec<CardRow> = sql!(
                REVIEW_QUEUE,
                viewer.organization_id,
                stages,
                query.after.map(|a| Ts::from(a.0)),
                query.after.map(|a| a.1).unwrap_or_default(),
                query.limit + 1
            )
            .load(conn)
            .await?;
            Ok(page(rows, query.limit))
        })
    }

    fn post(&self, viewer: Viewer, id: Uuid) -> BoxFuture<'_, anyhow::Result<Option<PostDetail>>> {
        self.read(async move |conn| {
            let (client_statuses, client_actions) = client_visible_texts();
            let row: Option<DetailRow> = sql!(
                ONE_POST,
                id,
                viewer.organization_id,
                viewer.client,
                client_statuses,
                client_actions
            )
            .get_result(conn)
            .await
            .optional()?;
            let Some(row) = row else {
                return Ok(None);
            };
            let record: Vec<RecordRow> = review_events::table
                .filter(review_events::post_id.eq(id))
                .order(review_events::id)
                .select(RecordRow::as_select())
                .load(conn)
                .await?;
            let record = record.into_iter().map(Into::into).collect();
            Ok(Some(PostDetail {
                client_review: row.client_review,
                stocked_at: row.stocked_at.map(Into::into),
                stock_reason: row.stock_reason,
                card: row.card.into(),
                record: record_for(viewer.client, record),
            }))
        })
    }

    fn published<'a>(
        &'a self,
        viewer: Viewer,
        query: &'a PublishedQuery,
    ) -> BoxFuture<'a, anyhow::Result<Page<PostCard>>> {
        self.read(async move |conn| {
            let (client_statuses, client_actions) = client_visible_texts();
            let rows: Vec<CardRow> = sql!(
                PUBLISHED,
                viewer.organization_id,
                viewer.client,
                query.code.as_ref().map(|c| c.as_str()),
                ts(query.since),
                query.after.map(|a| Ts::from(a.0)),
                query.after.map(|a| a.1).unwrap_or_default(),
                query.limit + 1,
                PostStatus::Published.as_str(),
                client_statuses,
                client_actions
            )
            .load(conn)
            .await?;
            Ok(page(rows, query.limit))
        })
    }

    fn transition<'a>(
        &'a self,
        scope: ReviewScope,
        reviewer: &'a Reviewer,
        request: &'a TransitionRequest,
        now: Timestamp,
    ) -> BoxFuture<'a, anyhow::Result<Result<Transitioned, TransitionRefusal>>> {
        self.tx(async move |conn| transition_tx(conn, scope, reviewer, request, now).await)
    }

    fn approved(
        &self,
        agent: AgentRef,
        limit: i64,
    ) -> BoxFuture<'_, anyhow::Result<Vec<PostCard>>> {
        self.read(async move |conn| {
            let rows: Vec<CardRow> = sql!(
                APPROVED,
                agent.workspace_id,
                agent.agent_id,
                limit,
                PostStatus::Approved.as_str(),
                Publishing::Agent.as_str()
            )
            .load(conn)
            .await?;
            Ok(cards(rows))
        })
    }

    fn report(
        &self,
        agent: AgentRef,
        items: Vec<Result<RawReportItem, ItemError>>,
        now: Timestamp,
    ) -> BoxFuture<'_, anyhow::Result<ReportOutcome>> {
        self.tx(async move |conn| report_tx(conn, agent, items, now).await)
    }

    fn report_metrics<'a>(
        &'a self,
        agent: AgentRef,
        report: &'a MetricsReport,
        now: Timestamp,
    ) -> BoxFuture<'a, anyhow::Result<Result<MetricsOutcome, MetricsRefusal>>> {
        self.tx(async move |conn| metrics_tx(conn, agent, report, now).await)
    }

    fn last_report_at(&self, agent: AgentRef) -> BoxFuture<'_, anyhow::Result<Option<Timestamp>>> {
        self.read(async move |conn| {
            let at: Option<Ts> = post_reports::table
                .filter(post_reports::agent_id.eq(agent.agent_id))
                .select(max(post_reports::received_at))
                .get_result(conn)
                .await?;
            Ok(at.map(Into::into))
        })
    }
}

statements!(
    REVIEW_QUEUE => CardRow,
    PUBLISHED => CardRow,
    ONE_POST => DetailRow,
    APPROVED => CardRow,
    POST_FOR_MOVE => MoveRow,
    PIN_APPROVAL,
    REPORT_SLOTS => SlotRow,
    LATEST_FOLLOWERS => FollowersRow,
    KNOWN_POSTS => KnownRow,
    INSERT_REPORTED,
    UPDATE_REPORTED,
    MARK_DIFFERS,
    AGENT_MARKETS => CodeRow,
    METRIC_POSTS => MetricPostRow,
    UPSERT_POST_METRICS,
    UPSERT_ACCOUNT_METRICS,
);
