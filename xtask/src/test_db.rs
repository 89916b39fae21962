//! The PostgreSQL the tests run against: `FLEETDESK_TEST_DATABASE_URL` when set, else a cluster
//! of the test command's own under `<target>/test-postgres`, started (or reused) with
//! `fleetdesk_local_pg`, as `fleetdesk serve` starts its own: reached through a Unix socket
//! only, with connections enough for every test nextest runs at once, so a busy shared server
//! cannot fail the suite.
//!
//! Each test drops its database or schema when it ends (`fleetdesk_pg::testing::TestDb`);
//! one killed, or one whose drop failed, leaves it behind, so on its own cluster the command
//! drops every test database and schema before and after the run (the migrated templates
//! stay: they are the next run's head start). One run at a time uses the cluster: a second
//! `cargo xtask test` in the same checkout waits for the first.

use anyhow::{Context, bail};
use std::fs::{File, TryLockError};
use std::path::Path;
use std::process::Command;
use std::time::Duration;

/// The variable the tests' support code reads for the server (`fleetdesk_pg::testing`).
pub const URL_VAR: &str = "FLEETDESK_TEST_DATABASE_URL";

/// The prefix of every test database and schema (`fleetdesk_pg::testing::TestDb`).
const TEST_PREFIX: &str = "fleetdesk_test_";
/// The suffix of the databases that hold the tests' schemas, one per migration set.
const SCHEMAS_SUFFIX: &str = "_schemas";

/// Connections each test nextest runs at once may hold: the app's pool (8), a second
/// instance's (4), the instance lock, the test's own SQL, a served binary's pool (16) at the
/// busiest, with room to spare.
const CONNECTIONS_PER_TEST: usize = 40;

/// The server the run uses.
pub enum TestServer {
    /// `FLEETDESK_TEST_DATABASE_URL`: the caller's, left as it is.
    Given,
    /// The test command's own cluster, held for the run.
    Own {
        pg: fleetdesk_local_pg::LocalPostgres,
        _lock: File,
    },
}

/// `max_connections` of the own cluster: enough for `threads` tests at once, at least 200.
fn max_connections(threads: usize) -> usize {
    (threads * CONNECTIONS_PER_TEST).max(200)
}

/// The settings of the own cluster: connections for every test at once, and no waiting on the
/// disk (a crash loses nothing worth keeping: each run makes its databases afresh).
/// `synchronous_commit` stays on: tests check that the service turns it off only for its own
/// transactions, and with `fsync` off a durable commit costs no disk wait anyway.
fn settings(threads: usize) -> Vec<(&'static str, String)> {
    vec![
        ("max_connections", max_connections(threads).to_string()),
        ("fsync", "off".into()),
        ("synchronous_commit", "on".into()),
        ("full_page_writes", "off".into()),
    ]
}

impl TestServer {
    /// The server named by `FLEETDESK_TEST_DATABASE_URL`, or the own cluster under
    /// `target/test-postgres`, started when it is not running and swept of what earlier runs
    /// left.
    pub fn start(target: &Path) -> anyhow::Result<TestServer> {
        if std::env::var_os(URL_VAR).is_some_and(|v| !v.is_empty()) {
            eprintln!("tests use the PostgreSQL {URL_VAR} names");
            return Ok(TestServer::Given);
        }
        TestServer::own(target)
    }

    /// The own cluster under `target/test-postgres`.
    fn own(target: &Path) -> anyhow::Result<TestServer> {
        let dir = target.join("test-postgres");
        std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
        let lock = hold(&dir.join("xtask-test.lock"))?;
        let threads = std::thread::available_parallelism().map_or(2, |n| n.get());
        let settings = settings(threads);
        let borrowed: Vec<(&str, &str)> = settings.iter().map(|(n, v)| (*n, v.as_str())).collect();
        let pg = runtime()?
            .block_on(fleetdesk_local_pg::ensure_local_postgres_with(
                &dir, &borrowed,
            ))
            .with_context(|| {
                format!(
                    "starting the tests' PostgreSQL under {} (set {URL_VAR} to use another)",
                    dir.display()
                )
            })?;
        eprintln!(
            "tests use their own PostgreSQL ({}, max_connections {}; {URL_VAR} picks another)",
            pg.pgdata.display(),
            max_connections(threads)
        );
        let server = TestServer::Own { pg, _lock: lock };
        let left = server.sweep()?;
        if !left.is_empty() {
            eprintln!(
                "dropped {} test databases and schemas an earlier run left",
                left.len()
            );
        }
        Ok(server)
    }

    /// Points `cmd` (the test run) at the server.
    pub fn apply(&self, cmd: &mut Command) {
        if let TestServer::Own { pg, .. } = self {
            cmd.env(URL_VAR, pg.url_of("postgres"));
        }
    }

    /// Drops every test database and test schema of the own cluster; answers their names.
    /// Nothing on a given server: other runs may be using it.
    pub fn sweep(&self) -> anyhow::Result<Vec<String>> {
        let TestServer::Own { pg, .. } = self else {
            return Ok(Vec::new());
        };
        runtime()?.block_on(async {
            let mut dropped = Vec::new();
            let databases = pg
                .psql(
                    "postgres",
                    "SELECT datname FROM pg_database WHERE datname LIKE 'fleetdesk\\_%' \
                     ORDER BY datname",
                )
                .await?;
            for db in databases.lines() {
                if db.starts_with(TEST_PREFIX) {
                    pg.psql(
                        "postgres",
                        &format!("DROP DATABASE IF EXISTS \"{db}\" WITH (FORCE)"),
                    )
                    .await?;
                    dropped.push(db.to_owned());
                } else if db.ends_with(SCHEMAS_SUFFIX) {
                    let schemas = pg
                        .psql(
                            db,
                            &format!(
                                "SELECT nspname FROM pg_namespace WHERE nspname LIKE \
                                 '{}%' ORDER BY nspname",
                                TEST_PREFIX.replace('_', "\\_")
                            ),
                        )
                        .await?;
                    for schema in schemas.lines() {
                        pg.psql(db, &format!("DROP SCHEMA IF EXISTS \"{schema}\" CASCADE"))
                            .await?;
                        dropped.push(format!("{db}.{schema}"));
                    }
                }
            }
            anyhow::Ok(dropped)
        })
    }
}

fn runtime() -> anyhow::Result<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("a tokio runtime for the tests' PostgreSQL")
}

/// Holds `path` locked for the run, waiting while another run holds it.
fn hold(path: &Path) -> anyhow::Result<File> {
    let file = File::options()
        .create(true)
        .truncate(false)
        .write(true)
        .open(path)
        .with_context(|| format!("opening {}", path.display()))?;
    let mut told = false;
    loop {
        match file.try_lock() {
            Ok(()) => return Ok(file),
            Err(TryLockError::WouldBlock) => {
                if !told {
                    eprintln!(
                        "another cargo xtask test of this checkout runs its tests; waiting for it"
                    );
                    told = true;
                }
                std::thread::sleep(Duration::from_millis(500));
            }
            Err(TryLockError::Error(e)) => bail!("locking {}: {e}", path.display()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The own cluster in a target directory of its own: what tests left is swept, the
    /// templates stay, and the tests get the cluster's `postgres` database.
    #[test]
    fn the_own_cluster_is_swept_of_test_databases_and_schemas() {
        let target = std::env::temp_dir().join(format!("xtask-test-db-{}", std::process::id()));
        let server = TestServer::own(&target).expect("the own cluster");
        let TestServer::Own { pg, .. } = &server else {
            unreachable!("own answers the own cluster")
        };
        let sql = |db: &str, sql: &str| {
            runtime()
                .unwrap()
                .block_on(pg.psql(db, sql))
                .unwrap_or_else(|e| panic!("{sql}: {e:#}"))
        };
        assert_eq!(sql("postgres", "SHOW fsync"), "off\n");
        for db in [
            "fleetdesk_test_1",
            "fleetdesk_tpl_ab",
            "fleetdesk_tpl_ab_schemas",
        ] {
            sql("postgres", &format!("CREATE DATABASE {db}"));
        }
        sql(
            "fleetdesk_tpl_ab_schemas",
            "CREATE SCHEMA fleetdesk_test_2; CREATE TABLE fleetdesk_test_2.t (v int); \
             CREATE SCHEMA kept",
        );
        let mut cmd = Command::new("true");
        server.apply(&mut cmd);
        let url = cmd
            .get_envs()
            .find(|(k, _)| *k == URL_VAR)
            .and_then(|(_, v)| v);
        assert_eq!(url, Some(pg.url_of("postgres").as_ref()));

        assert_eq!(
            server.sweep().unwrap(),
            [
                "fleetdesk_test_1",
                "fleetdesk_tpl_ab_schemas.fleetdesk_test_2"
            ]
        );
        assert_eq!(
            sql(
                "postgres",
                "SELECT datname FROM pg_database WHERE datname LIKE 'fleetdesk%' ORDER BY 1"
            ),
            "fleetdesk\nfleetdesk_tpl_ab\nfleetdesk_tpl_ab_schemas\n"
        );
        assert_eq!(
            sql(
                "fleetdesk_tpl_ab_schemas",
                "SELECT count(*) FROM pg_namespace WHERE nspname IN ('kept', 'fleetdesk_test_2')"
            ),
            "1\n"
        );
        assert!(server.sweep().unwrap().is_empty());
        runtime().unwrap().block_on(pg.stop()).unwrap();
        drop(server);
        std::fs::remove_dir_all(&target).unwrap();
    }

    #[test]
    fn connections_grow_with_the_tests_run_at_once() {
        assert_eq!(max_connections(1), 200);
        assert_eq!(max_connections(2), 200);
        assert_eq!(max_connections(16), 640);
        assert_eq!(settings(16)[0], ("max_connections", "640".to_owned()));
    }
}
