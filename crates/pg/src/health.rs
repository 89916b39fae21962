//! The store as operators see it (`fleetdesk_kernel::health`): the pool's status, the
//! migrations diesel recorded against the ones this binary embeds, and the job queue by kind.
//! Neither readiness nor a scrape ever waits for a connection: when none is free they do
//! without one.

use crate::db::{MIGRATIONS, PgStore};
use deadpool::managed::{PoolError, TimeoutType, Timeouts};
use diesel::migration::MigrationSource;
use diesel::pg::Pg;
use diesel_async::RunQueryDsl;
use fleetdesk_kernel::BoxFuture;
use fleetdesk_kernel::health::{Health, JobCounts, NotReady, PoolUse, missing_migrations};
use std::sync::OnceLock;
use std::time::Duration;

/// The versions diesel recorded as applied.
const APPLIED: &str = "SELECT version FROM __diesel_schema_migrations";

/// The queue by kind: one pass over a table of a few rows a week.
const JOB_COUNTS: &str = r#"
SELECT kind,
       count(*) FILTER (WHERE status = 'queued') AS queued,
       count(*) FILTER (WHERE status = 'running') AS running,
       count(*) FILTER (WHERE status = 'failed') AS failed
FROM jobs GROUP BY kind ORDER BY kind
"#;

statements!(APPLIED => Applied, JOB_COUNTS => KindCounts);

row! {
    struct Applied {
        version: String,
    }
}

row! {
    struct KindCounts into JobCounts {
        kind: String,
        queued: i64,
        running: i64,
        failed: i64,
    }
}

/// A free connection or none: no wait for one in use (deadpool's zero wait tries once).
const NO_WAIT: Timeouts = Timeouts {
    wait: Some(Duration::ZERO),
    create: Some(Duration::from_secs(5)),
    recycle: None,
};

/// The versions of the migrations this binary embeds, oldest first.
fn embedded_versions() -> &'static [String] {
    static VERSIONS: OnceLock<Vec<String>> = OnceLock::new();
    VERSIONS.get_or_init(|| {
        let mut versions: Vec<String> = MigrationSource::<Pg>::migrations(&MIGRATIONS)
            .map(|all| all.iter().map(|m| m.name().version().to_string()).collect())
            .unwrap_or_default();
        versions.sort();
        versions
    })
}

impl Health for PgStore {
    fn pool_use(&self) -> PoolUse {
        let s = self.pool.status();
        PoolUse {
            max_size: s.max_size,
            size: s.size,
            available: s.available,
            waiting: s.waiting,
        }
    }

    fn readiness(&self) -> BoxFuture<'_, Result<(), NotReady>> {
        Box::pin(async move {
            let pool = self.pool_use();
            if pool.exhausted() {
                return Err(NotReady::PoolExhausted(pool));
            }
            let mut conn = match self.pool.timeout_get(&NO_WAIT).await {
                Ok(conn) => conn,
                // Every connection in use and nobody waiting: busy, still serving. The
                // migrations are looked at by the next probe.
                Err(PoolError::Timeout(TimeoutType::Wait)) => return Ok(()),
                Err(e) => {
                    tracing::warn!(error = %e, "readiness: no database connection");
                    return Err(NotReady::Database);
                }
            };
            let applied: Vec<Applied> = sql!(APPLIED).load(&mut conn).await.map_err(|e| {
                tracing::warn!(error = %e, "readiness: reading the applied migrations");
                NotReady::Database
            })?;
            let applied: Vec<String> = applied.into_iter().map(|a| a.version).collect();
            let missing = missing_migrations(embedded_versions(), &applied);
            if missing.is_empty() {
                Ok(())
            } else {
                Err(NotReady::MigrationsBehind { missing })
            }
        })
    }

    fn job_counts(&self) -> BoxFuture<'_, anyhow::Result<Vec<JobCounts>>> {
        Box::pin(async move {
            let mut conn = self
                .pool
                .timeout_get(&NO_WAIT)
                .await
                .map_err(|e| anyhow::anyhow!("no free database connection: {e}"))?;
            let rows: Vec<KindCounts> = sql!(JOB_COUNTS).load(&mut conn).await?;
            Ok(rows.into_iter().map(Into::into).collect())
        })
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_embedded_versions_are_the_migration_directories() {
        let dirs = std::fs::read_dir(concat!(env!("CARGO_MANIFEST_DIR"), "/../../migrations"))
            .expect("the migrations directory")
            .filter_map(|d| d.ok())
            .filter(|d| d.path().join("up.sql").is_file())
            .count();
        let versions = super::embedded_versions();
        assert_eq!(versions.len(), dirs, "{versions:?}");
        assert!(
            versions
                .iter()
                .all(|v| v.bytes().all(|b| b.is_ascii_digit())),
            "{versions:?}"
        );
    }
}
