//! A database per test, made from a migrated template, so tests run in parallel.
//!
//! The template is migrated once per set of migrations (its name carries their fingerprint)
//! under an advisory lock, so parallel test processes share it. Each test gets
//! `CREATE DATABASE ... TEMPLATE`, dropped again when the [`TestDb`] is dropped.

use diesel::migration::MigrationSource;
use diesel::sql_types::Text;
use diesel_async::{AsyncConnection, AsyncPgConnection, RunQueryDsl};
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

#[derive(diesel::QueryableByName)]
struct Exists {
    #[diesel(sql_type = diesel::sql_types::Bool)]
    exists: bool,
}

/// A fresh, migrated database for one test.
pub struct TestDb {
    pub url: String,
    name: String,
    server: String,
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
        })
    }

    pub fn name(&self) -> &str {
        &self.name
    }
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

impl Drop for TestDb {
    fn drop(&mut self) {
        let server = self.server.clone();
        let name = self.name.clone();
        // Drop cannot await; a short-lived thread with its own runtime drops the database.
        let _ = std::thread::spawn(move || {
            let rt = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .ok()?;
            rt.block_on(async move {
                let mut admin = AsyncPgConnection::establish(&server).await.ok()?;
                diesel::sql_query(format!("DROP DATABASE IF EXISTS {name} WITH (FORCE)"))
                    .execute(&mut admin)
                    .await
                    .ok()
            })
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
    use super::with_database;

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
