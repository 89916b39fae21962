//! The wiki sources port over PostgreSQL: a workspace's sources with their sync state, and a
//! sync run recorded (wiki_sync_runs) with the source's state in one transaction.

use crate::db::{PgStore, Ts};
use crate::rows::Stored;
use crate::schema::{wiki_sources, wiki_sync_runs};
use diesel::prelude::*;
use diesel_async::{AsyncPgConnection, RunQueryDsl};
use fleetdesk_kernel::{AgentRef, BoxFuture};
use fleetdesk_wiki::sources::{
    Recorded, SourceRow, SyncRefusal, SyncReport, SyncStatus, WikiSourcesRepo, may_report,
};
use uuid::Uuid;

statements!(WORKSPACE_SOURCES => Row, LOCK_SOURCE => Row);

/// Sources with their project's and agent's names.
macro_rules! sources_sql {
    ($tail:literal) => {
        concat!(
            "SELECT s.id, s.kind, s.name, s.locator, s.scope_note, p.name AS project, s.agent_id,
       a.name AS agent, s.every_hours, s.last_run_at, s.last_status, s.cursor
FROM wiki_sources s
LEFT JOIN projects p ON p.id = s.project_id
LEFT JOIN agents a ON a.id = s.agent_id
",
            $tail
        )
    };
}

/// The workspace's sources.
const WORKSPACE_SOURCES: &str = sources_sql!("WHERE s.workspace_id = $1 ORDER BY s.name, s.id");

/// The source, locked until the run is recorded, so two reports of one source apply one after
/// the other.
const LOCK_SOURCE: &str = sources_sql!("WHERE s.id = $1 AND s.workspace_id = $2 FOR UPDATE OF s");

row! {
    struct Row into SourceRow {
        id: Uuid,
        kind: String,
        name: String,
        locator: String,
        scope_note: Option<String>,
        project: Option<String>,
        agent_id: Option<Uuid>,
        agent: Option<String>,
        every_hours: i32,
        last_run_at: Option<Ts>,
        last_status: Option<Stored<SyncStatus>>,
        cursor: Option<String>,
    }
}

async fn record_tx(
    conn: &mut AsyncPgConnection,
    agent: AgentRef,
    source_id: Uuid,
    report: &SyncReport,
) -> anyhow::Result<Result<Recorded, SyncRefusal>> {
    let row: Option<Row> = sql!(LOCK_SOURCE, source_id, agent.workspace_id)
        .get_result(conn)
        .await
        .optional()?;
    let Some(source) = row.map(SourceRow::from) else {
        return Ok(Err(SyncRefusal::NotFound));
    };
    if let Err(refusal) = may_report(source.agent_id, agent.agent_id) {
        return Ok(Err(refusal));
    }
    let c = report.counts;
    let (run_id, at): (Uuid, Ts) = diesel::insert_into(wiki_sync_runs::table)
        .values((
            wiki_sync_runs::source_id.eq(source_id),
            wiki_sync_runs::agent_id.eq(agent.agent_id),
            wiki_sync_runs::status.eq(report.status.as_str()),
            wiki_sync_runs::summary.eq(report.summary.as_deref()),
            wiki_sync_runs::read.eq(count(c.read)?),
            wiki_sync_runs::created.eq(count(c.created)?),
            wiki_sync_runs::revised.eq(count(c.revised)?),
            wiki_sync_runs::unchanged.eq(count(c.unchanged)?),
            wiki_sync_runs::skipped.eq(count(c.skipped)?),
            wiki_sync_runs::cursor.eq(report.cursor.as_deref()),
        ))
        .returning((wiki_sync_runs::id, wiki_sync_runs::created_at))
        .get_result(conn)
        .await?;
    // The run's time is the source's last_run_at; the cursor is the one the domain keeps
    // (`SyncReport::applied`).
    let source = report.applied(source, at.to_jiff());
    diesel::update(wiki_sources::table.find(source.id))
        .set((
            wiki_sources::last_run_at.eq(at),
            wiki_sources::last_status.eq(report.status.as_str()),
            wiki_sources::cursor.eq(source.cursor.as_deref()),
        ))
        .execute(conn)
        .await?;
    Ok(Ok(Recorded { run_id, source }))
}

/// A count as stored (the column is an integer; the API bounds it below 2^31).
fn count(n: i64) -> anyhow::Result<i32> {
    i32::try_from(n).map_err(|_| anyhow::anyhow!("count {n} out of range"))
}

impl WikiSourcesRepo for PgStore {
    fn workspace_sources<'a>(
        &'a self,
        agent: AgentRef,
    ) -> BoxFuture<'a, anyhow::Result<Vec<SourceRow>>> {
        self.read(async move |conn| {
            let rows: Vec<Row> = sql!(WORKSPACE_SOURCES, agent.workspace_id)
                .load(conn)
                .await?;
            Ok(rows.into_iter().map(Into::into).collect())
        })
    }

    fn record_sync<'a>(
        &'a self,
        agent: AgentRef,
        source: Uuid,
        report: &'a SyncReport,
    ) -> BoxFuture<'a, anyhow::Result<Result<Recorded, SyncRefusal>>> {
        self.tx(async move |conn| record_tx(conn, agent, source, report).await)
    }
}
