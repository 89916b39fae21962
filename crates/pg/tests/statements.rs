//! Every constant SQL statement of the adapter prepares against the migrated schema, so a typo
//! or a column a migration renamed fails here, not in a request; and every SQL constant in
//! `src/` is on the list the first test prepares.

use diesel_async::{AsyncConnection, AsyncPgConnection, SimpleAsyncConnection};
use fleetdesk_pg::testing::TestDb;
use std::collections::BTreeSet;
use std::path::Path;

/// `&str` constants in `src/` that are not SQL.
const NOT_SQL: &[&str] = &[];

#[tokio::test(flavor = "multi_thread")]
async fn every_sql_constant_prepares_against_the_migrated_schema() {
    let db = TestDb::new().await.expect("test database");
    let mut conn = AsyncPgConnection::establish(&db.url)
        .await
        .expect("connect to the test database");
    let statements = fleetdesk_pg::all_statements();
    let names: BTreeSet<&str> = statements.iter().map(|(name, _)| *name).collect();
    assert_eq!(names.len(), statements.len(), "a statement is listed twice");
    let mut failures = Vec::new();
    for (name, sql) in &statements {
        // The simple protocol: PREPARE parses, analyses and plans against the schema without
        // running the statement; DEALLOCATE frees the name for the next one.
        let check = format!("PREPARE fleetdesk_statement_check AS {sql}");
        match conn.batch_execute(&check).await {
            Ok(()) => conn
                .batch_execute("DEALLOCATE fleetdesk_statement_check")
                .await
                .expect("deallocate"),
            Err(e) => failures.push(format!("{name}: {e}")),
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {} statements do not prepare:\n{}",
        failures.len(),
        statements.len(),
        failures.join("\n")
    );
    println!("prepared {} statements", statements.len());
}

/// The `const NAME: &str =` declarations of one source file.
fn str_constants(text: &str) -> Vec<String> {
    text.lines()
        .filter_map(|line| {
            let line = line.trim_start();
            let line = line
                .strip_prefix("pub(crate) ")
                .or_else(|| line.strip_prefix("pub "))
                .unwrap_or(line);
            let (name, _) = line.strip_prefix("const ")?.split_once(": &str =")?;
            Some(name.trim().to_owned())
        })
        .collect()
}

#[test]
fn every_sql_constant_in_the_source_is_listed() {
    let listed: BTreeSet<&str> = fleetdesk_pg::all_statements()
        .into_iter()
        .map(|(name, _)| name)
        .collect();
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut found = BTreeSet::new();
    let mut missing = Vec::new();
    let mut inline = Vec::new();
    let mut files = 0;
    for path in rust_files(&src) {
        // `a/b.rs` is the module `a::b`, `a/mod.rs` the module `a`.
        let relative = path
            .strip_prefix(&src)
            .expect("under src/")
            .with_extension("");
        let mut parts: Vec<&str> = relative
            .iter()
            .map(|p| p.to_str().expect("file name"))
            .collect();
        if parts.last() == Some(&"mod") {
            parts.pop();
        }
        let module = parts.join("::");
        // The per-test database helper builds its DDL at run time; it is not the adapter.
        if module == "testing" {
            continue;
        }
        files += 1;
        let text = std::fs::read_to_string(&path).expect("read source file");
        for name in str_constants(&text) {
            let full = format!("fleetdesk_pg::{module}::{name}");
            if !listed.contains(full.as_str()) && !NOT_SQL.contains(&full.as_str()) {
                missing.push(full.clone());
            }
            found.insert(full);
        }
        for (n, line) in text.lines().enumerate() {
            if line.contains("sql_query(\"") {
                inline.push(format!("{}:{}: {}", path.display(), n + 1, line.trim()));
            }
        }
    }
    assert!(
        files >= 8,
        "only {files} source files under {}",
        src.display()
    );
    assert!(
        missing.is_empty(),
        "SQL constants missing from their module's statements!(..) list:\n{}",
        missing.join("\n")
    );
    assert!(
        inline.is_empty(),
        "SQL written inline, so no test prepares it: make it a constant and list it:\n{}",
        inline.join("\n")
    );
    let stale: Vec<_> = NOT_SQL.iter().filter(|n| !found.contains(**n)).collect();
    assert!(stale.is_empty(), "NOT_SQL names no constant: {stale:?}");
    let unseen: Vec<_> = listed.iter().filter(|n| !found.contains(**n)).collect();
    assert!(
        unseen.is_empty(),
        "listed but not found in src/: {unseen:?}"
    );
}

/// The `.rs` files under `dir`, in its folders too.
fn rust_files(dir: &Path) -> Vec<std::path::PathBuf> {
    let mut files = Vec::new();
    for entry in std::fs::read_dir(dir).expect("read a source folder") {
        let path = entry.expect("dir entry").path();
        if path.is_dir() {
            files.extend(rust_files(&path));
        } else if path.extension().is_some_and(|e| e == "rs") {
            files.push(path);
        }
    }
    files
}

#[test]
fn finds_constants_however_they_are_declared() {
    let text = "const A: &str = \"SELECT 1\";\npub(crate) const B: &str =\n    \"x\";\n    \
                const C: &str = card_sql!(\n const N: i64 = 3;\nlet d: &str = \"\";";
    assert_eq!(str_constants(text), ["A", "B", "C"]);
}
