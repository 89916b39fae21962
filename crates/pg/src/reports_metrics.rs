//! `GET /metrics` reads: the accounts in scope, then their posts, post captures and follower
//! captures within the window's UTC bounds, in one `REPEATABLE READ READ ONLY` transaction.
//! At most five statements whatever the scope; which account a code names and which capture
//! counts on which day are decided by `fleetdesk_reports::metrics`.

use crate::db::{PgStore, Ts};
use crate::reports::CaptureRow;
use crate::schema::account_metrics;
use diesel::prelude::*;
use diesel_async::{AsyncPgConnection, RunQueryDsl};
use fleetdesk_kernel::BoxFuture;
use fleetdesk_reports::metrics::{
    AccountCapture, MetricsAccount, MetricsData, MetricsPostInfo, MetricsQuery, MetricsRefusal,
    MetricsRepo, PUBLISHED_STATUSES, PostCapture, narrow_to_code,
};
use uuid::Uuid;

/// A workspace in the caller's scope (any organization's when $2 is null).
const METRICS_WORKSPACE: &str = r#"
SELECT EXISTS (
    SELECT 1 FROM workspaces WHERE id = $1 AND ($2::uuid IS NULL OR organization_id = $2)
) AS found
"#;

/// An organization named by a caller (only asked when no account is in scope).
const METRICS_ORGANIZATION: &str = r#"
SELECT EXISTS (SELECT 1 FROM organizations WHERE id = $1) AS found
"#;

/// The accounts in scope, by workspace name then code and platform; with a code, those whose
/// current or legacy code it is (`narrow_to_code` picks among them).
const METRICS_ACCOUNTS: &str = r#"
SELECT s.id AS slot_id, s.code, s.legacy_code, s.platform, s.timezone, w.id AS workspace_id,
       w.name AS workspace_name
FROM account_slots s JOIN workspaces w ON w.id = s.workspace_id
WHERE ($1::uuid IS NULL OR s.organization_id = $1)
  AND ($2::uuid IS NULL OR s.workspace_id = $2)
  AND ($3::text IS NULL OR s.code = $3 OR s.legacy_code = $3)
  AND ($4::text IS NULL OR s.platform = $4)
ORDER BY w.name, w.id, s.code, s.platform
"#;

/// Posts of those accounts published (in a status of $4), or captured, within the bounds;
/// first published first.
const METRICS_POSTS: &str = r#"
SELECT p.id AS post_id, p.slot_id, p.status, p.platform_post_id, p.permalink, p.published_at
FROM posts p
WHERE p.slot_id = ANY($1)
  AND ((p.status = ANY($4) AND p.published_at >= $2 AND p.published_at < $3)
       OR EXISTS (SELECT 1 FROM post_metrics m
                  WHERE m.post_id = p.id AND m.captured_at >= $2 AND m.captured_at < $3))
ORDER BY p.published_at NULLS LAST, p.id
"#;

const METRICS_POST_CAPTURES: &str = r#"
SELECT m.post_id, m.captured_at, m.views, m.likes, m.replies, m.reposts, m.shares
FROM post_metrics m JOIN posts p ON p.id = m.post_id
WHERE p.slot_id = ANY($1) AND m.captured_at >= $2 AND m.captured_at < $3
"#;

statements!(
    METRICS_ORGANIZATION => FoundRow,
    METRICS_WORKSPACE => FoundRow,
    METRICS_ACCOUNTS => AccountRow,
    METRICS_POSTS => PostRow,
    METRICS_POST_CAPTURES => CaptureRow,
);

row! {
    struct FoundRow {
        found: bool,
    }
}

row! {
    struct AccountRow into MetricsAccount {
        slot_id: Uuid,
        code: String,
        legacy_code: Option<String>,
        platform: String,
        timezone: String,
        workspace_id: Uuid,
        workspace_name: String,
    }
}

row! {
    struct PostRow into MetricsPostInfo {
        post_id: Uuid,
        slot_id: Uuid,
        status: String,
        platform_post_id: Option<String>,
        permalink: Option<String>,
        published_at: Option<Ts>,
    }
}

selectable! {
    #[diesel(table_name = account_metrics)]
    struct AccountCaptureRow into AccountCapture {
        slot_id: Uuid,
        captured_at: Ts,
        followers: i64,
    }
}

async fn load(
    conn: &mut AsyncPgConnection,
    query: &MetricsQuery,
) -> anyhow::Result<Result<MetricsData, MetricsRefusal>> {
    if let Some(workspace) = query.workspace {
        let row: FoundRow = sql!(METRICS_WORKSPACE, workspace, query.organization)
            .get_result(conn)
            .await?;
        if !row.found {
            return Ok(Err(MetricsRefusal::UnknownWorkspace));
        }
    }
    let rows: Vec<AccountRow> = sql!(
        METRICS_ACCOUNTS,
        query.organization,
        query.workspace,
        query.code.as_deref(),
        query.platform.as_deref()
    )
    .load(conn)
    .await?;
    if rows.is_empty()
        && let Some(organization) = query.organization
    {
        let row: FoundRow = sql!(METRICS_ORGANIZATION, organization)
            .get_result(conn)
            .await?;
        if !row.found {
            return Ok(Err(MetricsRefusal::UnknownOrganization));
        }
    }
    let accounts = rows.into_iter().map(Into::into).collect();
    let accounts = match narrow_to_code(accounts, query.code.as_deref()) {
        Ok(accounts) => accounts,
        Err(refusal) => return Ok(Err(refusal)),
    };
    if accounts.is_empty() {
        return Ok(Ok(MetricsData::default()));
    }
    let slots: Vec<Uuid> = accounts.iter().map(|a| a.slot_id).collect();
    let (start, end) = query.window.utc_bounds();
    let (start, end) = (Ts::from(start), Ts::from(end));
    let posts: Vec<PostRow> = sql!(METRICS_POSTS, &slots, start, end, &PUBLISHED_STATUSES[..])
        .load(conn)
        .await?;
    let post_captures: Vec<CaptureRow> = sql!(METRICS_POST_CAPTURES, &slots, start, end)
        .load(conn)
        .await?;
    let account_captures: Vec<AccountCaptureRow> = account_metrics::table
        .filter(account_metrics::slot_id.eq_any(&slots))
        .filter(account_metrics::captured_at.ge(start))
        .filter(account_metrics::captured_at.lt(end))
        .select(AccountCaptureRow::as_select())
        .load(conn)
        .await?;
    Ok(Ok(MetricsData {
        accounts,
        posts: posts.into_iter().map(Into::into).collect(),
        post_captures: post_captures
            .into_iter()
            .map(|c| PostCapture {
                post_id: c.post_id,
                captured_at: c.captured_at.into(),
                counters: [c.views, c.likes, c.replies, c.reposts, c.shares],
            })
            .collect(),
        account_captures: account_captures.into_iter().map(Into::into).collect(),
    }))
}

impl MetricsRepo for PgStore {
    fn load<'a>(
        &'a self,
        query: &'a MetricsQuery,
    ) -> BoxFuture<'a, anyhow::Result<Result<MetricsData, MetricsRefusal>>> {
        self.snapshot(async move |conn| load(conn, query).await)
    }
}

#[cfg(test)]
mod tests {
    use fleetdesk_posts::post::PostStatus;
    use fleetdesk_reports::metrics::PUBLISHED_STATUSES;

    #[test]
    fn the_published_statuses_are_post_statuses() {
        assert_eq!(
            PUBLISHED_STATUSES.map(PostStatus::parse),
            [Some(PostStatus::Published), Some(PostStatus::Deleted)]
        );
    }
}
