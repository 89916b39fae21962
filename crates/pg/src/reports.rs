//! Reports: the list and one report as a viewer sees them, issuing, and building (one now, or
//! the Monday build of every workspace with its job done in the same transaction). A build
//! reads its rows for all its workspaces at once (four statements whatever their number) and
//! `fleetdesk_reports::report::build` decides what the report says.

use crate::db::{PgStore, Ts, Tx};
use crate::jobs::{finish_in, hold};
use crate::rows::Json;
use crate::schema::{account_slots, post_metrics, posts, reports, workspaces};
use diesel::dsl;
use diesel::prelude::*;
use diesel_async::RunQueryDsl;
use fleetdesk_kernel::jobs::Job;
use fleetdesk_kernel::{BoxFuture, Page, Position};
use fleetdesk_posts::post::PostStatus;
use fleetdesk_reports::period::Period;
use fleetdesk_reports::ports::*;
use fleetdesk_reports::report::{
    AccountRow, FollowerCapture, Inputs, PostCapture, PostRow, ReportBody, build, title,
};
use std::collections::HashMap;
use uuid::Uuid;

macro_rules! report_sql {
    ($body:literal, $($tail:expr),*) => {
        concat!(
            "SELECT r.id, r.organization_id, r.title, r.workspace_id, w.name AS workspace_name, \
                    r.period_from, r.period_to, \
                    r.weekly, r.issued_at, r.created_at, ", $body, " AS body \
             FROM reports r JOIN workspaces w ON w.id = r.workspace_id \
             WHERE ($1::uuid IS NULL OR r.organization_id = $1) \
               AND (NOT $2 OR r.issued_at IS NOT NULL) ",
            $($tail),*
        )
    };
}

/// A page of the reports a viewer sees (`$1` the organization or null for every one, `$2`
/// issued only), newest first.
const LIST: &str = report_sql!(
    "NULL::jsonb",
    "AND ($3::timestamptz IS NULL OR (r.created_at, r.id) < ($3, $4)) \
     ORDER BY r.created_at DESC, r.id DESC LIMIT $5"
);

const ONE: &str = report_sql!("r.body", "AND r.id = $3");

const LOCK: &str = report_sql!("r.body", "AND r.id = $3 FOR UPDATE OF r");

/// The live workspaces with no weekly report of the week starting `$1` yet, with when each was
/// created (the week reports only those created before it ended: `Period::reports_workspace_created`).
const WEEKLY_DUE: &str = r#"
SELECT w.id, w.organization_id, w.name, w.created_at FROM workspaces w
WHERE w.archived_at IS NULL
  AND NOT EXISTS (SELECT 1 FROM reports r
                  WHERE r.workspace_id = w.id AND r.weekly AND r.period_from = $1::date)
ORDER BY w.id
"#;

/// Follower captures within the period, and each account's last one before it.
const FOLLOWERS: &str = r#"
SELECT slot_id, captured_at, followers FROM account_metrics
WHERE slot_id = ANY($1) AND captured_at > $2 AND captured_at < $3
UNION ALL
(SELECT DISTINCT ON (slot_id) slot_id, captured_at, followers FROM account_metrics
 WHERE slot_id = ANY($1) AND captured_at <= $2
 ORDER BY slot_id, captured_at DESC)
"#;

/// The weekly reports of several workspaces; the unique index on (workspace, week) is the
/// second guard against a second build.
const INSERT_WEEKLY: &str = r#"
INSERT INTO reports (organization_id, workspace_id, title, period_from, period_to, weekly, body,
                     created_by)
SELECT t.org, t.ws, t.title, $4::date, $5::date, true, t.body, 'fleetdesk'
FROM unnest($1::uuid[], $2::uuid[], $3::text[], $6::jsonb[]) AS t(org, ws, title, body)
ON CONFLICT (workspace_id, period_from) WHERE weekly DO NOTHING
"#;

statements!(
    LIST => ReportRow,
    ONE => ReportRow,
    LOCK => ReportRow,
    WEEKLY_DUE => WorkspaceRow,
    FOLLOWERS => FollowerRow,
    INSERT_WEEKLY,
);

row! {
    struct ReportRow {
        id: Uuid,
        organization_id: Uuid,
        title: String,
        workspace_id: Uuid,
        workspace_name: String,
        period_from: jiff_diesel::Date,
        period_to: jiff_diesel::Date,
        weekly: bool,
        issued_at: Option<Ts>,
        created_at: Ts,
        body: Option<Json<ReportBody>>,
    }
}

impl ReportRow {
    fn summary(&self) -> anyhow::Result<ReportSummary> {
        let period = Period::new(self.period_from.into(), self.period_to.into())
            .map_err(|e| anyhow::anyhow!("stored report period: {e}"))?;
        Ok(ReportSummary {
            id: self.id,
            organization_id: self.organization_id,
            title: self.title.clone(),
            workspace: (self.workspace_id, self.workspace_name.clone()),
            period,
            weekly: self.weekly,
            issued_at: self.issued_at.map(Into::into),
            created_at: self.created_at.into(),
        })
    }

    fn record(self) -> anyhow::Result<ReportRecord> {
        Ok(ReportRecord {
            summary: self.summary()?,
            body: self.body.map(|b| b.0).unwrap_or_default(),
        })
    }
}

async fn one(
    conn: Tx<'_>,
    sql: &'static str,
    viewer: Viewer,
    id: Uuid,
) -> anyhow::Result<Option<ReportRow>> {
    Ok(sql!(sql, viewer.organization(), viewer.issued_only(), id)
        .get_result(conn)
        .await
        .optional()?)
}

row! {
    #[derive(Queryable)]
    struct WorkspaceRow {
        id: Uuid,
        organization_id: Uuid,
        name: String,
        created_at: Ts,
    }
}

#[derive(Queryable, Selectable)]
#[diesel(table_name = account_slots, check_for_backend(diesel::pg::Pg))]
struct SlotRow {
    #[diesel(column_name = id)]
    slot_id: Uuid,
    workspace_id: Uuid,
    code: String,
    platform: String,
}

/// A post that went out in the period (its `published_at` is set: the filter needs it).
#[derive(Queryable, Selectable)]
#[diesel(table_name = posts, check_for_backend(diesel::pg::Pg))]
struct PostDbRow {
    id: Uuid,
    slot_id: Uuid,
    #[diesel(select_expression = posts::published_at.assume_not_null())]
    published_at: Ts,
    permalink: Option<String>,
    body: String,
}

row! {
    /// One capture of a post's counters, as the reports (a typed query) and the metrics (SQL)
    /// read them.
    #[derive(Queryable, Selectable)]
    #[diesel(table_name = post_metrics, check_for_backend(diesel::pg::Pg))]
    pub(crate) struct CaptureRow {
        pub(crate) post_id: Uuid,
        pub(crate) captured_at: Ts,
        pub(crate) views: Option<i64>,
        pub(crate) likes: Option<i64>,
        pub(crate) replies: Option<i64>,
        pub(crate) reposts: Option<i64>,
        pub(crate) shares: Option<i64>,
    }
}

row! {
    struct FollowerRow into FollowerCapture {
        slot_id: Uuid,
        captured_at: Ts,
        followers: i64,
    }
}

/// The report bodies of `workspaces` over `period`, from four statements.
async fn bodies(
    conn: Tx<'_>,
    workspaces: &[Uuid],
    period: &Period,
) -> anyhow::Result<HashMap<Uuid, ReportBody>> {
    let (start, end) = (Ts::from(period.start()), Ts::from(period.end()));
    let slots: Vec<SlotRow> = account_slots::table
        .filter(account_slots::workspace_id.eq_any(workspaces))
        .order((
            account_slots::code,
            account_slots::platform,
            account_slots::id,
        ))
        .select(SlotRow::as_select())
        .load(conn)
        .await?;
    let went_out: Vec<PostDbRow> = posts::table
        .filter(posts::workspace_id.eq_any(workspaces))
        .filter(posts::status.eq_any(PostStatus::texts(PostStatus::went_out)))
        .filter(posts::published_at.ge(start))
        .filter(posts::published_at.lt(end))
        .select(PostDbRow::as_select())
        .load(conn)
        .await?;
    let post_ids: Vec<Uuid> = went_out.iter().map(|p| p.id).collect();
    let captures: Vec<CaptureRow> = if post_ids.is_empty() {
        Vec::new()
    } else {
        post_metrics::table
            .filter(post_metrics::post_id.eq_any(&post_ids))
            .filter(post_metrics::captured_at.lt(end))
            .select(CaptureRow::as_select())
            .load(conn)
            .await?
    };
    let slot_ids: Vec<Uuid> = slots.iter().map(|s| s.slot_id).collect();
    let followers: Vec<FollowerRow> = if slot_ids.is_empty() {
        Vec::new()
    } else {
        sql!(FOLLOWERS, &slot_ids, start, end).load(conn).await?
    };
    let accounts = slots.into_iter().map(|s| {
        let account = AccountRow {
            slot_id: s.slot_id,
            code: s.code,
            platform: s.platform,
        };
        (s.workspace_id, account)
    });
    let posts = went_out.into_iter().map(|p| PostRow {
        id: p.id,
        slot_id: p.slot_id,
        published_at: p.published_at.into(),
        permalink: p.permalink,
        body: p.body,
    });
    let captures = captures.into_iter().map(|c| PostCapture {
        post_id: c.post_id,
        captured_at: c.captured_at.into(),
        values: [c.views, c.likes, c.replies, c.reposts, c.shares],
    });
    let inputs = Inputs::per_workspace(
        workspaces,
        accounts.collect(),
        posts.collect(),
        captures.collect(),
        followers.into_iter().map(Into::into).collect(),
    );
    Ok(inputs
        .into_iter()
        .map(|(ws, i)| (ws, build(period, &i)))
        .collect())
}

async fn create(
    conn: Tx<'_>,
    viewer: Viewer,
    request: &NewReport,
) -> anyhow::Result<Result<ReportRecord, CreateRefusal>> {
    let named = || match &request.workspace {
        WorkspaceRef::Id(id) => id.to_string(),
        WorkspaceRef::Name(n) => n.clone(),
    };
    // The workspaces the request may name: by id or by name, within the viewer's
    // organization (none: every one).
    let mut query = workspaces::table
        .select((
            workspaces::id,
            workspaces::organization_id,
            workspaces::name,
            workspaces::created_at,
        ))
        .order(workspaces::id)
        .limit(2)
        .into_boxed();
    if let Some(organization) = viewer.organization() {
        query = query.filter(workspaces::organization_id.eq(organization));
    }
    query = match &request.workspace {
        WorkspaceRef::Id(id) => query.filter(workspaces::id.eq(*id)),
        WorkspaceRef::Name(n) => query.filter(workspaces::name.eq(n.as_str())),
    };
    let found: Vec<WorkspaceRow> = query.load(conn).await?;
    let ws = match found.as_slice() {
        [] => return Ok(Err(CreateRefusal::UnknownWorkspace(named()))),
        [one] => one,
        _ => return Ok(Err(CreateRefusal::AmbiguousWorkspace(named()))),
    };
    let body = bodies(conn, &[ws.id], &request.period)
        .await?
        .remove(&ws.id)
        .unwrap_or_default();
    let title = title(request.title.as_deref(), &ws.name, &request.period, false);
    let id: Uuid = diesel::insert_into(reports::table)
        .values((
            reports::organization_id.eq(ws.organization_id),
            reports::workspace_id.eq(ws.id),
            reports::title.eq(&title),
            reports::period_from.eq(jiff_diesel::Date::from(request.period.from())),
            reports::period_to.eq(jiff_diesel::Date::from(request.period.to())),
            reports::weekly.eq(false),
            reports::body.eq(serde_json::to_value(&body)?),
            reports::created_by.eq(&request.created_by),
        ))
        .returning(reports::id)
        .get_result(conn)
        .await?;
    let row = one(conn, ONE, Viewer::Agency(None), id)
        .await?
        .ok_or_else(|| anyhow::anyhow!("report {id} read back"))?;
    Ok(Ok(row.record()?))
}

async fn build_weekly(conn: Tx<'_>, job: &Job, period: Period) -> anyhow::Result<Option<usize>> {
    if !hold(conn, job).await? {
        return Ok(None);
    }
    let due: Vec<WorkspaceRow> = sql!(WEEKLY_DUE, jiff_diesel::Date::from(period.from()))
        .load(conn)
        .await?;
    let due: Vec<WorkspaceRow> = due
        .into_iter()
        .filter(|w| period.reports_workspace_created(w.created_at.into()))
        .collect();
    let ids: Vec<Uuid> = due.iter().map(|w| w.id).collect();
    let mut built = 0;
    if !ids.is_empty() {
        let mut bodies = bodies(conn, &ids, &period).await?;
        let mut orgs = Vec::with_capacity(due.len());
        let mut titles = Vec::with_capacity(due.len());
        let mut values = Vec::with_capacity(due.len());
        for w in &due {
            orgs.push(w.organization_id);
            titles.push(title(None, &w.name, &period, true));
            values.push(serde_json::to_value(
                bodies.remove(&w.id).unwrap_or_default(),
            )?);
        }
        built = sql!(
            INSERT_WEEKLY,
            &orgs,
            &ids,
            &titles,
            jiff_diesel::Date::from(period.from()),
            jiff_diesel::Date::from(period.to()),
            &values
        )
        .execute(conn)
        .await?;
    }
    if !finish_in(conn, job).await? {
        anyhow::bail!("the lease of job {} was lost while it ran", job.id);
    }
    Ok(Some(built))
}

impl ReportsRepo for PgStore {
    fn list(
        &self,
        viewer: Viewer,
        after: Option<Position>,
        limit: i64,
    ) -> BoxFuture<'_, anyhow::Result<Page<ReportSummary>>> {
        self.read(async move |conn| {
            let rows: Vec<ReportRow> = sql!(
                LIST,
                viewer.organization(),
                viewer.issued_only(),
                after.map(|a| Ts::from(a.0)),
                after.map(|a| a.1).unwrap_or_default(),
                limit + 1
            )
            .load(conn)
            .await?;
            let items = rows
                .iter()
                .map(ReportRow::summary)
                .collect::<anyhow::Result<Vec<_>>>()?;
            Ok(Page::probed(items, limit, |r| (r.created_at, r.id)))
        })
    }

    fn get(&self, viewer: Viewer, id: Uuid) -> BoxFuture<'_, anyhow::Result<Option<ReportRecord>>> {
        self.read(async move |conn| {
            one(conn, ONE, viewer, id)
                .await?
                .map(ReportRow::record)
                .transpose()
        })
    }

    fn create<'a>(
        &'a self,
        viewer: Viewer,
        request: &'a NewReport,
    ) -> BoxFuture<'a, anyhow::Result<Result<ReportRecord, CreateRefusal>>> {
        self.tx(async move |conn| create(conn, viewer, request).await)
    }

    fn issue<'a>(
        &'a self,
        viewer: Viewer,
        id: Uuid,
        by: &'a str,
    ) -> BoxFuture<'a, anyhow::Result<Option<Issued>>> {
        self.tx(async move |conn| {
            let Some(row) = one(conn, LOCK, viewer, id).await? else {
                return Ok(None);
            };
            if row.issued_at.is_some() {
                return Ok(Some(Issued {
                    report: row.record()?,
                    unchanged: true,
                }));
            }
            diesel::update(reports::table.find(id))
                .set((reports::issued_at.eq(dsl::now), reports::issued_by.eq(by)))
                .execute(conn)
                .await?;
            let row = one(conn, ONE, viewer, id)
                .await?
                .ok_or_else(|| anyhow::anyhow!("report {id} read back"))?;
            let issued = Issued {
                report: row.record()?,
                unchanged: false,
            };
            crate::events::write(conn, issued.event().as_slice()).await?;
            Ok(Some(issued))
        })
    }

    fn build_weekly<'a>(
        &'a self,
        job: &'a Job,
        period: Period,
    ) -> BoxFuture<'a, anyhow::Result<Option<usize>>> {
        self.tx(async move |conn| build_weekly(conn, job, period).await)
    }
}
