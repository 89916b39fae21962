//! Every migration can be undone and redone: up, down, up gives the same schema.

use fleetdesk_pg::testing::{TestDb, revert_all};
use std::process::Command;

fn schema_dump(url: &str) -> String {
    let out = Command::new("pg_dump")
        .args([
            "--schema-only",
            "--no-owner",
            "--no-privileges",
            "--exclude-table=__diesel_schema_migrations",
            url,
        ])
        .output()
        .expect("pg_dump (PostgreSQL's client tools) must be installed");
    assert!(
        out.status.success(),
        "pg_dump failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    // pg_dump brackets its output with a random \restrict token; it is not schema.
    String::from_utf8(out.stdout)
        .expect("utf-8 dump")
        .lines()
        .filter(|l| !l.starts_with("\\restrict") && !l.starts_with("\\unrestrict"))
        .collect::<Vec<_>>()
        .join("\n")
}

/// The first line where two dumps differ, for a readable failure.
fn first_difference(a: &str, b: &str) -> Option<(usize, String, String)> {
    let (mut la, mut lb) = (a.lines(), b.lines());
    for n in 1.. {
        match (la.next(), lb.next()) {
            (None, None) => return None,
            (x, y) if x != y => {
                return Some((
                    n,
                    x.unwrap_or("<end>").to_owned(),
                    y.unwrap_or("<end>").to_owned(),
                ));
            }
            _ => {}
        }
    }
    None
}

#[tokio::test(flavor = "multi_thread")]
async fn migrations_go_down_and_up_again_to_the_same_schema() {
    let db = TestDb::new().await.expect("test database");
    let migrated = schema_dump(&db.url);
    assert!(
        migrated.contains("CREATE TABLE public.account_slots"),
        "the dump shows the schema"
    );

    let reverted = revert_all(&db.url).await.expect("down migrations");
    assert!(reverted >= 1);
    let empty = schema_dump(&db.url);
    assert!(
        !empty.contains("CREATE TABLE"),
        "down.sql left tables behind:\n{empty}"
    );

    let ran = fleetdesk_pg::migrate(&db.url).await.expect("up again");
    assert_eq!(ran, reverted);
    let again = schema_dump(&db.url);
    assert_eq!(
        first_difference(&migrated, &again),
        None,
        "up, down, up changed the schema (line, before, after)"
    );
}
