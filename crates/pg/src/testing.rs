//! Isolation for tests that run in parallel: a database per test, or a schema per test.
//!
//! The template database is migrated once per set of migrations (its name carries their
//! fingerprint) under an advisory lock, so parallel test processes share it.
//!
//! - [`TestDb::new`]: `CREATE DATABASE ... TEMPLATE`, dropped again when the [`TestDb`] is
//!   dropped (for tests that run `pg_dump`, revert migrations or take the database away).
//! - [`TestDb::schema`]: a schema of its own in one shared database (also named by the
//!   fingerprint), made by replaying the migrations' SQL in one transaction; its URL puts
//!   that schema alone on the `search_path` (`options=-c search_path=...`), so every
//!   connection made from it, the app's pool included, sees only its own tables.
//!
//! Either is dropped with the [`TestDb`], however the test ends (a panic unwinds through
//! it): the schema's connections are ended first (they carry its name as
//! `application_name`), so a request a failed test left mid-transaction cannot hold the drop
//! up, and a server too busy to take the dropping connection is asked again for a while.
//! Only a killed test process leaves its database behind; `cargo xtask test` drops those of
//! its own server before and after a run.

use diesel::migration::MigrationSource;
use diesel::sql_types::Text;
use diesel_async::{AsyncConnection, AsyncPgConnection, RunQueryDsl, SimpleAsyncConnection};
use sha2::{Digest, Sha256};

/// The server the tests use: `FLEETDESK_TEST_DATABASE_URL`, else the machine's PostgreSQL.
pub fn server_url() -> String {
    std::env::var("FLEETDESK_TEST_DATABASE_URL")
        .unwrap_or_else(|_| "postgres://postgres@127.0.0.1:5432/postgres".to_owned())
}

fn with_database(server: &str, db: &str) -> String {
    let (base, query) = match server.split_once('?') {
        Some((b, q)) => (b, Some(q)),
        None => (server, None),
    };
    let prefix = match base.rfind('/') {
        Some(i) if base[..i].contains("://") && i > base.find("://").unwrap_or(0) + 2 => &base[..i],
        _ => base,
    };
    match query {
        Some(q) => format!("{prefix}/{db}?{q}"),
        None => format!("{prefix}/{db}"),
    }
}

fn template_name() -> anyhow::Result<String> {
    let migrations: Vec<_> = MigrationSource::<diesel::pg::Pg>::migrations(&crate::db::MIGRATIONS)
        .map_err(|e| anyhow::anyhow!("listing migrations: {e}"))?;
    let mut h = Sha256::new();
    // Names and SQL: a migration edited before it is released makes a new template.
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../migrations");
    for m in &migrations {
        let name = m.name().to_string();
        h.update(name.as_bytes());
        h.update([0]);
        for file in ["up.sql", "down.sql"] {
            if let Ok(sql) = std::fs::read(dir.join(&name).join(file)) {
                h.update(&sql);
            }
            h.update([0]);
        }
    }
    let digest = h.finalize();
    Ok(format!(
        "fleetdesk_tpl_{}",
        digest[..6]
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect::<String>()
    ))
}

row! {
    struct Exists {
        exists: bool,
    }
}

/// A fresh, migrated database or schema for one test.
pub struct TestDb {
    /// Connects to the test's tables (for a schema, with it as the `search_path`).
    pub url: String,
    name: String,
    server: String,
    /// The shared database that holds the schema, for [`TestDb::schema`].
    shared: Option<String>,
}

/// How [`TestDb::isolated`] isolates a test.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Isolation {
    /// A database of its own, copied from the template.
    Database,
    /// A schema of its own in a shared database.
    Schema,
}

impl Isolation {
    /// `FLEETDESK_TEST_ISOLATION` (`database` or `schema`), else `default`.
    pub fn from_env(default: Isolation) -> Isolation {
        match std::env::var("FLEETDESK_TEST_ISOLATION").as_deref() {
            Ok("database") => Isolation::Database,
            Ok("schema") => Isolation::Schema,
            _ => default,
        }
    }
}

impl TestDb {
    /// Must run on a multi-threaded tokio runtime (the migration harness blocks in place).
    pub async fn new() -> anyhow::Result<TestDb> {
        let server = server_url();
        let template = template_name()?;
        let mut admin = AsyncPgConnection::establish(&server).await?;
        diesel::sql_query("SELECT pg_advisory_lock(8127341)")
            .execute(&mut admin)
            .await?;
        let ready = ensure_template(&mut admin, &server, &template).await;
        diesel::sql_query("SELECT pg_advisory_unlock(8127341)")
            .execute(&mut admin)
            .await?;
        ready?;
        let name = format!("fleetdesk_test_{}", uuid::Uuid::new_v4().simple());
        diesel::sql_query(format!("CREATE DATABASE {name} TEMPLATE {template}"))
            .execute(&mut admin)
            .await?;
        Ok(TestDb {
            url: with_database(&server, &name),
            name,
            server,
            shared: None,
        })
    }

    /// A database or a schema, as asked.
    pub async fn isolated(isolation: Isolation) -> anyhow::Result<TestDb> {
        match isolation {
            Isolation::Database => TestDb::new().await,
            Isolation::Schema => TestDb::schema().await,
        }
    }

    /// A fresh, migrated schema in the shared database. One connection per test: the shared
    /// database is made (under the advisory lock) only by the first test that misses it.
    pub async fn schema() -> anyhow::Result<TestDb> {
        let server = server_url();
        let shared = format!("{}_schemas", template_name()?);
        let shared_url = with_database(&server, &shared);
        let mut conn = match AsyncPgConnection::establish(&shared_url).await {
            Ok(conn) => conn,
            Err(_) => {
                ensure_shared(&server, &shared).await?;
                AsyncPgConnection::establish(&shared_url).await?
            }
        };
        let name = format!("fleetdesk_test_{}", uuid::Uuid::new_v4().simple());
        let ddl = schema_ddl()?;
        conn.batch_execute(&format!(
            "BEGIN; CREATE SCHEMA {name}; SET LOCAL search_path TO {name}; {ddl} COMMIT;"
        ))
        .await?;
        // Housekeeping: a failed vacuum must not fail the test, nor leave its schema behind.
        if let Err(e) = vacuum_catalogs_when_due(&mut conn).await {
            eprintln!("fleetdesk test database: the catalog vacuum failed: {e}");
        }
        Ok(TestDb {
            url: with_search_path(&shared_url, &name),
            name,
            server,
            shared: Some(shared),
        })
    }

    /// The database's name, or the schema's.
    pub fn name(&self) -> &str {
        &self.name
    }
}

/// `url` with `options=-c search_path=<schema>`, and the schema's name as the
/// `application_name` of every connection made from it (so its drop finds them).
fn with_search_path(url: &str, schema: &str) -> String {
    let sep = if url.contains('?') { '&' } else { '?' };
    format!("{url}{sep}options=-c%20search_path%3D{schema}&application_name={schema}")
}

/// The SQL that gives an empty schema what the migrations give a database: every `up.sql`
/// in order, then diesel's table of the migrations that ran (so the app's own `migrate`
/// finds nothing to do). Read once per process.
fn schema_ddl() -> anyhow::Result<&'static str> {
    static DDL: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    if let Some(ddl) = DDL.get() {
        return Ok(ddl);
    }
    let migrations: Vec<_> = MigrationSource::<diesel::pg::Pg>::migrations(&crate::db::MIGRATIONS)
        .map_err(|e| anyhow::anyhow!("listing migrations: {e}"))?;
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../migrations");
    let mut ddl = String::new();
    let mut versions = Vec::new();
    for m in &migrations {
        let name = m.name().to_string();
        let file = dir.join(&name).join("up.sql");
        let sql = std::fs::read_to_string(&file)
            .map_err(|e| anyhow::anyhow!("reading {}: {e}", file.display()))?;
        ddl.push_str(&sql);
        ddl.push_str("\n;\n");
        versions.push(format!("('{}')", m.name().version()));
    }
    ddl.push_str(
        "CREATE TABLE __diesel_schema_migrations (version VARCHAR(50) PRIMARY KEY NOT NULL, \
         run_on TIMESTAMP NOT NULL DEFAULT CURRENT_TIMESTAMP);\n",
    );
    if !versions.is_empty() {
        ddl.push_str(&format!(
            "INSERT INTO __diesel_schema_migrations (version) VALUES {};\n",
            versions.join(", ")
        ));
    }
    Ok(DDL.get_or_init(|| ddl))
}

/// Dead catalog rows (in `pg_attribute`) past which a test vacuums the shared database's
/// catalogs: about 60 schemas made and dropped (each leaves about 1,000).
const DEAD_CATALOG_ROWS: i64 = 60_000;

/// Every schema made and dropped leaves its catalog rows dead, and nothing else reclaims them
/// when autovacuum is off (as on the test machines): unvacuumed, about 1,500 schemas left the
/// shared database's `pg_attribute` at 250 MB. The test that finds its dead rows past
/// [`DEAD_CATALOG_ROWS`] vacuums the catalogs that DDL writes, unless another test already is.
async fn vacuum_catalogs_when_due(conn: &mut AsyncPgConnection) -> anyhow::Result<()> {
    row! {
        struct Dead {
            dead: i64,
        }
    }
    let found: Dead = diesel::sql_query(
        "SELECT coalesce(sum(n_dead_tup), 0)::bigint AS dead FROM pg_stat_sys_tables \
         WHERE relid = 'pg_catalog.pg_attribute'::regclass",
    )
    .get_result(conn)
    .await?;
    if found.dead < DEAD_CATALOG_ROWS {
        return Ok(());
    }
    let locked: Exists = diesel::sql_query("SELECT pg_try_advisory_lock(8127342) AS exists")
        .get_result(conn)
        .await?;
    if !locked.exists {
        return Ok(());
    }
    let vacuumed = conn
        .batch_execute(
            "VACUUM pg_catalog.pg_attribute, pg_catalog.pg_class, pg_catalog.pg_type, \
             pg_catalog.pg_depend, pg_catalog.pg_constraint, pg_catalog.pg_index, \
             pg_catalog.pg_attrdef, pg_catalog.pg_trigger, pg_catalog.pg_namespace, \
             pg_catalog.pg_sequence, pg_catalog.pg_description, pg_catalog.pg_statistic",
        )
        .await;
    diesel::sql_query("SELECT pg_advisory_unlock(8127342)")
        .execute(conn)
        .await?;
    Ok(vacuumed?)
}

/// Creates the shared database of the schemas if no other test did (under the lock).
async fn ensure_shared(server: &str, shared: &str) -> anyhow::Result<()> {
    let mut admin = AsyncPgConnection::establish(server).await?;
    diesel::sql_query("SELECT pg_advisory_lock(8127341)")
        .execute(&mut admin)
        .await?;
    let made = async {
        let found: Exists = diesel::sql_query(
            "SELECT EXISTS (SELECT 1 FROM pg_database WHERE datname = $1) AS exists",
        )
        .bind::<Text, _>(shared)
        .get_result(&mut admin)
        .await?;
        if !found.exists {
            diesel::sql_query(format!("CREATE DATABASE {shared}"))
                .execute(&mut admin)
                .await?;
        }
        anyhow::Ok(())
    }
    .await;
    diesel::sql_query("SELECT pg_advisory_unlock(8127341)")
        .execute(&mut admin)
        .await?;
    made
}

async fn ensure_template(
    admin: &mut AsyncPgConnection,
    server: &str,
    template: &str,
) -> anyhow::Result<()> {
    let found: Exists =
        diesel::sql_query("SELECT EXISTS (SELECT 1 FROM pg_database WHERE datname = $1) AS exists")
            .bind::<Text, _>(template)
            .get_result(admin)
            .await?;
    if found.exists {
        return Ok(());
    }
    let building = format!("{template}_building");
    diesel::sql_query(format!("DROP DATABASE IF EXISTS {building} WITH (FORCE)"))
        .execute(admin)
        .await?;
    diesel::sql_query(format!("CREATE DATABASE {building}"))
        .execute(admin)
        .await?;
    crate::migrate(&with_database(server, &building)).await?;
    diesel::sql_query(format!("ALTER DATABASE {building} RENAME TO {template}"))
        .execute(admin)
        .await?;
    Ok(())
}

/// How long a drop keeps asking a busy server for a connection.
const DROP_PATIENCE: std::time::Duration = std::time::Duration::from_secs(30);

/// What a dropped [`TestDb`] leaves to drop: on `server`, the database `name`, or the schema
/// `name` in the database `shared`.
struct Leftover {
    server: String,
    name: String,
    shared: Option<String>,
}

impl Leftover {
    /// Drops the database, or the schema after ending its connections.
    async fn drop_now(&self) -> anyhow::Result<()> {
        let (url, statements) = match &self.shared {
            Some(db) => (
                with_database(&self.server, db),
                vec![
                    format!(
                        "SELECT pg_terminate_backend(pid) FROM pg_stat_activity \
                         WHERE application_name = '{}' AND pid <> pg_backend_pid()",
                        self.name
                    ),
                    format!("DROP SCHEMA IF EXISTS {} CASCADE", self.name),
                ],
            ),
            None => (
                self.server.clone(),
                vec![format!(
                    "DROP DATABASE IF EXISTS {} WITH (FORCE)",
                    self.name
                )],
            ),
        };
        let deadline = std::time::Instant::now() + DROP_PATIENCE;
        let mut admin = loop {
            match AsyncPgConnection::establish(&url).await {
                Ok(conn) => break conn,
                // "too many clients" while other tests hold the server: ask again.
                Err(_) if std::time::Instant::now() < deadline => {
                    tokio::time::sleep(std::time::Duration::from_millis(200)).await
                }
                Err(e) => anyhow::bail!("connecting to drop {}: {e}", self.name),
            }
        };
        for statement in &statements {
            diesel::sql_query(statement)
                .execute(&mut admin)
                .await
                .map_err(|e| anyhow::anyhow!("{statement}: {e}"))?;
        }
        Ok(())
    }
}

impl Drop for TestDb {
    fn drop(&mut self) {
        let db = Leftover {
            name: std::mem::take(&mut self.name),
            server: std::mem::take(&mut self.server),
            shared: self.shared.take(),
        };
        // Drop cannot await (and may run while a panic unwinds out of the test's runtime): a
        // short-lived thread with its own runtime drops the database.
        let _ = std::thread::spawn(move || {
            let rt = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .ok()?;
            let dropped = rt.block_on(db.drop_now());
            if let Err(e) = &dropped {
                eprintln!("fleetdesk test database: {e:#}");
            }
            dropped.ok()
        })
        .join();
    }
}

/// Reverts every migration (the `down.sql` files), newest first; returns how many ran.
/// Used to prove that each migration can be undone and redone to the same schema.
pub async fn revert_all(url: &str) -> anyhow::Result<usize> {
    use diesel_async::AsyncMigrationHarness;
    use diesel_migrations::MigrationHarness;
    let conn = AsyncPgConnection::establish(url).await?;
    let mut harness = AsyncMigrationHarness::new(conn);
    let reverted = harness
        .revert_all_migrations(crate::db::MIGRATIONS)
        .map_err(|e| anyhow::anyhow!("reverting migrations failed: {e}"))?;
    Ok(reverted.len())
}

#[cfg(test)]
mod tests {
    use super::{with_database, with_search_path};

    #[test]
    fn puts_a_schema_on_the_search_path_of_a_url() {
        assert_eq!(
            with_search_path("postgres://u@h:5432/db", "s1"),
            "postgres://u@h:5432/db?options=-c%20search_path%3Ds1&application_name=s1"
        );
        assert_eq!(
            with_search_path("postgres://u@h:5432/db?host=/tmp", "s1"),
            "postgres://u@h:5432/db?host=/tmp&options=-c%20search_path%3Ds1&application_name=s1"
        );
    }

    #[test]
    fn swaps_the_database_of_a_url() {
        assert_eq!(
            with_database("postgres://u@h:5432/postgres", "x"),
            "postgres://u@h:5432/x"
        );
        assert_eq!(
            with_database("postgres://u@h:5432/postgres?host=/tmp", "x"),
            "postgres://u@h:5432/x?host=/tmp"
        );
        assert_eq!(
            with_database("postgres://u@h:5432", "x"),
            "postgres://u@h:5432/x"
        );
    }
}
