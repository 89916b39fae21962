//! What operators measure of the store: the connection pool's use, whether the database carries
//! every migration of this binary, and the job queue. `/readyz` and the metrics listener read
//! it; the rules of readiness are here, the adapter only reports what it sees.

use crate::BoxFuture;

/// The connection pool as it stands (deadpool's status): connections allowed, made, free, and
/// the requests waiting for one.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct PoolUse {
    pub max_size: usize,
    pub size: usize,
    pub available: usize,
    pub waiting: usize,
}

impl PoolUse {
    /// Exhausted: every connection the pool may make is made and in use, and requests wait for
    /// one. A pool merely busy (all in use, nobody waiting) still serves.
    pub fn exhausted(&self) -> bool {
        self.size >= self.max_size && self.available == 0 && self.waiting > 0
    }
}

/// Why an instance should receive no traffic.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NotReady {
    /// Every connection in use and requests waiting ([`PoolUse::exhausted`]).
    PoolExhausted(PoolUse),
    /// The database lacks migrations this binary embeds (oldest first): another instance
    /// rolled back, or this binary is newer than the schema.
    MigrationsBehind { missing: Vec<String> },
    /// The database did not answer (the detail is logged, never answered).
    Database,
}

impl NotReady {
    /// The check that failed, as `/readyz` names it.
    pub fn check(&self) -> &'static str {
        match self {
            NotReady::PoolExhausted(_) => "pool",
            NotReady::MigrationsBehind { .. } => "migrations",
            NotReady::Database => "database",
        }
    }
}

/// The embedded migrations (`embedded`, by version) the database has not applied, in the
/// order of `embedded`. Applied versions the binary does not know (a newer instance migrated
/// further) do not count: an older binary keeps serving a schema that only grew.
pub fn missing_migrations(embedded: &[String], applied: &[String]) -> Vec<String> {
    embedded
        .iter()
        .filter(|v| !applied.contains(v))
        .cloned()
        .collect()
}

/// The jobs of one kind by status, as the queue holds them now.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct JobCounts {
    pub kind: String,
    pub queued: i64,
    pub running: i64,
    pub failed: i64,
}

/// The store as operators see it.
pub trait Health: Send + Sync {
    /// The pool's use, read without a connection.
    fn pool_use(&self) -> PoolUse;

    /// Whether the instance can serve: the pool is not exhausted (judged without taking a
    /// connection), then the database answers and carries every embedded migration.
    fn readiness(&self) -> BoxFuture<'_, Result<(), NotReady>>;

    /// The job queue by kind (one statement). Never waits for a connection: when none is free
    /// it is an error, and the scrape leaves the queue out.
    fn job_counts(&self) -> BoxFuture<'_, anyhow::Result<Vec<JobCounts>>>;
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pool(max_size: usize, size: usize, available: usize, waiting: usize) -> PoolUse {
        PoolUse {
            max_size,
            size,
            available,
            waiting,
        }
    }

    #[test]
    fn a_pool_is_exhausted_only_when_full_in_use_and_waited_for() {
        assert!(pool(1, 1, 0, 1).exhausted());
        assert!(pool(16, 16, 0, 3).exhausted());
        // All in use, nobody waiting: busy, still serving.
        assert!(!pool(16, 16, 0, 0).exhausted());
        // A connection being made for a waiting request: the pool may still grow.
        assert!(!pool(16, 3, 0, 1).exhausted());
        assert!(!pool(16, 16, 2, 0).exhausted());
        assert!(!pool(16, 0, 0, 0).exhausted());
    }

    #[test]
    fn missing_migrations_are_the_embedded_ones_not_applied() {
        let v = |s: &[&str]| s.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        let embedded = v(&["20260101000001", "20260101000002", "20260101000003"]);
        assert!(missing_migrations(&embedded, &embedded).is_empty());
        assert_eq!(
            missing_migrations(&embedded, &v(&["20260101000001", "20260101000002"])),
            v(&["20260101000003"])
        );
        assert_eq!(
            missing_migrations(&embedded, &v(&["20260101000003"])),
            v(&["20260101000001", "20260101000002"])
        );
        // A schema migrated further by a newer binary is not behind.
        let ahead = v(&[
            "20260101000001",
            "20260101000002",
            "20260101000003",
            "20270101000001",
        ]);
        assert!(missing_migrations(&embedded, &ahead).is_empty());
        assert_eq!(missing_migrations(&embedded, &[]), embedded);
    }

    #[test]
    fn each_refusal_names_its_check() {
        assert_eq!(NotReady::PoolExhausted(pool(1, 1, 0, 1)).check(), "pool");
        assert_eq!(
            NotReady::MigrationsBehind { missing: vec![] }.check(),
            "migrations"
        );
        assert_eq!(NotReady::Database.check(), "database");
    }
}
