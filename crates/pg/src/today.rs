//! The person's day over PostgreSQL, in one snapshot: four statements whatever the number of
//! workspaces, accounts, agents or jobs (workspaces with their counts, accounts with their day
//! counts, agents with their last heartbeat, cron jobs with their latest run), and two more for
//! its community part in the same snapshot (`crate::community::community_day`).

use crate::accounts::day_statuses;
use crate::db::{PgStore, Ts, column};
use crate::rows::Json;
use diesel_async::{AsyncPgConnection, RunQueryDsl};
use fleetdesk_community::ports::{CommunityDay, PersonDayWithCommunity};
use fleetdesk_cron::ports::{
    DayAccount, DayAgent, DayDiffering, DayJob, DayRows, DayWebhook, DayWorkspace, PersonDayRepo,
};
use fleetdesk_decisions::DecisionStatus;
use fleetdesk_kernel::BoxFuture;
use fleetdesk_kernel::persona::PersonaStatus;
use fleetdesk_posts::post::PostStatus;
use fleetdesk_tasks::TaskStatus;
use fleetdesk_tasks::rules::CONFIRM_WITHIN;
use fleetdesk_tenancy::roles::{AgentRole, Scope};
use uuid::Uuid;

statements!(
    DAY_WORKSPACES => WorkspaceRow,
    DAY_ACCOUNTS => AccountRow,
    DAY_AGENTS => AgentRow,
    DAY_JOBS => JobRow,
    DAY_DIFFERING => DifferingRow,
    DAY_WEBHOOKS => WebhookRow,
);

/// The posts of those workspaces marked published differing from their approval and
/// published since `$2`, newest first, at most `$3` per workspace (on
/// `posts_published_differs`).
const DAY_DIFFERING: &str = r#"
SELECT workspace_id, post_id, code, platform, permalink, reason, approved_body,
       published_body, reported_at
FROM (
    SELECT p.workspace_id, p.id AS post_id, s.code, s.platform, p.permalink,
           p.published_differs ->> 'reason' AS reason,
           p.published_differs ->> 'approved_body' AS approved_body,
           p.published_differs ->> 'published_body' AS published_body,
           (p.published_differs ->> 'reported_at')::timestamptz AS reported_at,
           row_number() OVER (PARTITION BY p.workspace_id
                              ORDER BY p.published_at DESC, p.id) AS n
    FROM posts p
    JOIN workspaces w ON w.id = p.workspace_id
    JOIN account_slots s ON s.id = p.slot_id
    WHERE ($1::uuid IS NULL OR w.organization_id = $1) AND w.archived_at IS NULL
      AND p.published_differs IS NOT NULL AND p.published_at >= $2
) d
WHERE n <= $3
ORDER BY workspace_id, reported_at DESC, post_id
"#;

row! {
    struct DifferingRow into DayDiffering {
        workspace_id: Uuid,
        post_id: Uuid,
        code: String,
        platform: String,
        permalink: Option<String>,
        reason: String,
        approved_body: Option<String>,
        published_body: String,
        reported_at: Ts,
    }
}

/// The webhook endpoints of those workspaces (at most 20 each).
const DAY_WEBHOOKS: &str = r#"
SELECT e.workspace_id, e.id, e.url, e.enabled, e.disabled_reason, e.failing_since
FROM webhook_endpoints e
JOIN workspaces w ON w.id = e.workspace_id
WHERE ($1::uuid IS NULL OR w.organization_id = $1) AND w.archived_at IS NULL
ORDER BY e.workspace_id, e.created_at, e.id
"#;

row! {
    struct WebhookRow into DayWebhook {
        workspace_id: Uuid,
        id: Uuid,
        url: String,
        enabled: bool,
        disabled_reason: Option<String>,
        failing_since: Option<Ts>,
    }
}

/// The workspaces of the organization (`$1`, or every one when null), not archived, with the
/// review queue (`$2`, `$3`), cards waiting for confirmation (`$4`; overdue when waiting since
/// before `$5`, the rule of `fleetdesk_tasks::rules::flags` with its fallbacks) and decisions
/// waiting for a person (`$6`).
const DAY_WORKSPACES: &str = r#"
SELECT w.id, w.name, o.id AS organization_id, o.name AS organization,
       (SELECT count(*) FROM posts p WHERE p.workspace_id = w.id AND p.status = $2)
           AS internal_review,
       (SELECT count(*) FROM posts p WHERE p.workspace_id = w.id AND p.status = $3)
           AS client_review,
       (SELECT count(*) FROM task_cards t
         WHERE t.workspace_id = w.id AND t.status = $4) AS cards_pending_confirmation,
       (SELECT count(*) FROM task_cards t
         WHERE t.workspace_id = w.id AND t.status = $4
           AND COALESCE(t.confirmation_since, t.last_progress_at, t.created_at) < $5)
           AS cards_confirm_overdue,
       COALESCE((SELECT jsonb_agg(jsonb_build_array(kind, n) ORDER BY kind)
                 FROM (SELECT d.kind, count(*) AS n FROM decisions d
                       WHERE d.workspace_id = w.id AND d.status = ANY($6)
                       GROUP BY d.kind) k), '[]'::jsonb) AS decisions
FROM workspaces w
JOIN organizations o ON o.id = w.organization_id
WHERE ($1::uuid IS NULL OR w.organization_id = $1) AND w.archived_at IS NULL
ORDER BY o.name, o.id, w.name, w.id
"#;

/// Every account slot of those workspaces with its live state, what is reported published
/// or scheduled on its market's date (`$2`, `$3`), each read in the account's zone (the rule
/// of the agent's day, `fleetdesk_pg::accounts::DAY_COUNTS`), and its stocked posts (`$7`).
const DAY_ACCOUNTS: &str = r#"
SELECT s.workspace_id, s.id AS slot_id, s.code, s.platform, s.market, pe.name AS persona,
       g.state, s.daily_target,
       (SELECT count(*) FROM posts p
         WHERE p.slot_id = s.id AND p.status = ANY($4)
           AND p.published_at >= d.lo AND p.published_at < d.hi) AS published,
       (SELECT count(*) FROM posts p
         WHERE p.slot_id = s.id AND p.status = ANY($5)
           AND p.scheduled_for >= d.lo AND p.scheduled_for < d.hi) AS scheduled,
       (SELECT count(*) FROM posts p WHERE p.slot_id = s.id AND p.status = $7) AS inventory
FROM account_slots s
JOIN workspaces w ON w.id = s.workspace_id
JOIN personas pe ON pe.id = s.persona_id
LEFT JOIN account_generations g ON g.slot_id = s.id AND g.closed_at IS NULL
CROSS JOIN LATERAL (
    SELECT (t.day::timestamp AT TIME ZONE s.timezone) AS lo,
           ((t.day + 1)::timestamp AT TIME ZONE s.timezone) AS hi
    FROM unnest($2::text[], $3::date[]) AS t(market, day)
    WHERE t.market = s.market
) d
WHERE ($1::uuid IS NULL OR s.organization_id = $1) AND w.archived_at IS NULL
  AND pe.status <> $6
ORDER BY s.code, s.platform
"#;

/// The agents of those workspaces (or of every live workspace, for the sweep's silence check)
/// whose role reports runs (`$2`: the others never send a heartbeat, so they would always show
/// silent), with their last heartbeat: one probe of `agent_runs_agent_latest` each.
pub(crate) const DAY_AGENTS: &str = r#"
SELECT a.workspace_id, a.id, a.name, h.recorded_at AS last_heartbeat_at, a.silent_after_hours,
       a.created_at, a.silent_told_at
FROM agents a
JOIN workspaces w ON w.id = a.workspace_id
LEFT JOIN LATERAL (
    SELECT r.recorded_at FROM agent_runs r WHERE r.agent_id = a.id
    ORDER BY r.recorded_at DESC LIMIT 1
) h ON true
WHERE ($1::uuid IS NULL OR w.organization_id = $1) AND w.archived_at IS NULL
  AND a.role = ANY($2)
ORDER BY a.name, a.id
"#;

/// The cron jobs of those agents, each with its latest run: one probe of
/// `cron_runs_day_latest`, whose expression is this ORDER BY (change both together).
const DAY_JOBS: &str = r#"
SELECT j.agent_id, j.job_id, j.name, j.schedule, j.timezone, j.enabled,
       j.created_at AS reported_at,
       l.status AS last_status, l.at AS last_at
FROM cron_jobs j
JOIN agents a ON a.id = j.agent_id
JOIN workspaces w ON w.id = a.workspace_id
LEFT JOIN LATERAL (
    SELECT r.status, COALESCE(r.started_at, r.finished_at, r.created_at) AS at
    FROM cron_runs r WHERE r.job = j.id
    ORDER BY COALESCE(r.started_at, r.finished_at, r.created_at) DESC, r.updated_at DESC
    LIMIT 1
) l ON true
WHERE ($1::uuid IS NULL OR w.organization_id = $1) AND w.archived_at IS NULL
ORDER BY j.job_id
"#;

row! {
    struct WorkspaceRow into DayWorkspace {
        id: Uuid,
        name: String,
        organization_id: Uuid,
        organization: String,
        internal_review: i64,
        client_review: i64,
        cards_pending_confirmation: i64,
        cards_confirm_overdue: i64,
        decisions: Json<Vec<(String, i64)>>,
    }
}

row! {
    struct AccountRow into DayAccount {
        workspace_id: Uuid,
        slot_id: Uuid,
        code: String,
        platform: String,
        market: String,
        persona: String,
        state: Option<String>,
        daily_target: i32,
        published: i64,
        scheduled: i64,
        inventory: i64,
    }
}

row! {
    pub(crate) struct AgentRow {
        pub(crate) workspace_id: Uuid,
        pub(crate) id: Uuid,
        pub(crate) name: String,
        pub(crate) last_heartbeat_at: Option<Ts>,
        pub(crate) silent_after_hours: i16,
        pub(crate) created_at: Ts,
        pub(crate) silent_told_at: Option<Ts>,
    }
}

impl From<AgentRow> for DayAgent {
    fn from(a: AgentRow) -> DayAgent {
        DayAgent {
            workspace_id: a.workspace_id,
            id: a.id,
            name: a.name,
            last_heartbeat_at: a.last_heartbeat_at.map(|t| t.to_jiff()),
            silent_after_hours: a.silent_after_hours,
        }
    }
}

row! {
    struct JobRow {
        agent_id: Uuid,
        job_id: String,
        name: String,
        schedule: String,
        timezone: String,
        enabled: bool,
        reported_at: Ts,
        last_status: Option<String>,
        last_at: Option<Ts>,
    }
}

/// The agent roles that send heartbeats (`runs:write`).
pub(crate) fn reporting_roles() -> Vec<&'static str> {
    AgentRole::ALL
        .iter()
        .filter(|r| r.has(Scope::RunsWrite))
        .map(|r| r.as_str())
        .collect()
}

impl PersonDayRepo for PgStore {
    fn person_day<'a>(
        &'a self,
        organization: Option<Uuid>,
        dates: &'a [(String, jiff::civil::Date)],
        now: jiff::Timestamp,
    ) -> BoxFuture<'a, anyhow::Result<DayRows>> {
        self.snapshot(async move |conn| day_rows(conn, organization, dates, now).await)
    }
}

impl PersonDayWithCommunity<DayRows> for PgStore {
    /// `DAY_WORKSPACES`, `DAY_ACCOUNTS`, `DAY_AGENTS`, `DAY_JOBS`, `DAY_DIFFERING`,
    /// `DAY_WEBHOOKS` and the community part (`crate::community::DAY_SPACES`, `DAY_TICKETS`)
    /// in one snapshot: 8 statements.
    fn person_day_with_community<'a>(
        &'a self,
        organization: Option<Uuid>,
        dates: &'a [(String, jiff::civil::Date)],
        now: jiff::Timestamp,
    ) -> BoxFuture<'a, anyhow::Result<(DayRows, CommunityDay)>> {
        self.snapshot(async move |conn| {
            let rows = day_rows(conn, organization, dates, now).await?;
            let community = crate::community::community_day(conn, organization).await?;
            Ok((rows, community))
        })
    }
}

/// The rows of the person's day in the caller's snapshot: 6 statements.
async fn day_rows(
    conn: &mut AsyncPgConnection,
    organization: Option<Uuid>,
    dates: &[(String, jiff::civil::Date)],
    now: jiff::Timestamp,
) -> anyhow::Result<DayRows> {
    let confirm_cutoff = now
        .checked_sub(CONFIRM_WITHIN)
        .map_err(|e| anyhow::anyhow!("confirmation cutoff: {e}"))?;
    let workspaces: Vec<WorkspaceRow> = sql!(
        DAY_WORKSPACES,
        organization,
        PostStatus::InternalReview.as_str(),
        PostStatus::ClientReview.as_str(),
        TaskStatus::PendingConfirmation.as_str(),
        Ts::from(confirm_cutoff),
        [DecisionStatus::Open, DecisionStatus::Handled]
            .map(|d| d.as_str())
            .to_vec()
    )
    .load(conn)
    .await?;
    let [published, scheduled, _planned] = day_statuses();
    let accounts: Vec<AccountRow> = sql!(
        DAY_ACCOUNTS,
        organization,
        column(dates, |(m, _)| m.as_str()),
        column(dates, |(_, d)| jiff_diesel::Date::from(*d)),
        published,
        scheduled,
        PersonaStatus::Retired.as_str(),
        PostStatus::Stocked.as_str()
    )
    .load(conn)
    .await?;
    let agents: Vec<AgentRow> = sql!(DAY_AGENTS, organization, reporting_roles())
        .load(conn)
        .await?;
    let jobs: Vec<JobRow> = sql!(DAY_JOBS, organization).load(conn).await?;
    let shown_since = now - fleetdesk_posts::approval::DIFFERS_SHOWN;
    let differing: Vec<DifferingRow> = sql!(
        DAY_DIFFERING,
        organization,
        Ts::from(shown_since),
        fleetdesk_posts::approval::DIFFERS_SHOWN_MAX
    )
    .load(conn)
    .await?;
    let webhooks: Vec<WebhookRow> = sql!(DAY_WEBHOOKS, organization).load(conn).await?;
    Ok(DayRows {
        differing: differing.into_iter().map(Into::into).collect(),
        webhooks: webhooks.into_iter().map(Into::into).collect(),
        workspaces: workspaces.into_iter().map(Into::into).collect(),
        accounts: accounts.into_iter().map(Into::into).collect(),
        agents: agents.into_iter().map(Into::into).collect(),
        jobs: jobs
            .into_iter()
            .map(|j| DayJob {
                agent_id: j.agent_id,
                job_id: j.job_id,
                name: j.name,
                schedule: j.schedule,
                timezone: j.timezone,
                enabled: j.enabled,
                reported_at: j.reported_at.to_jiff(),
                latest: j.last_status.zip(j.last_at.map(|t| t.to_jiff())),
            })
            .collect(),
    })
}
