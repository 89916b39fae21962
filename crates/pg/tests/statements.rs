//! Every constant SQL statement of the adapter prepares against the migrated schema, so a typo
//! or a column a migration renamed fails here, not in a request; and every SQL constant in
//! `src/` is on the list the first test prepares.
//!
//! A statement loaded into a row type is paired with it in its module's `statements!` list
//! (`LIST => ListRow`), and the row's fields (names and PostgreSQL types, from their
//! `#[diesel(sql_type = ..)]`) are compared with the columns PostgreSQL describes for the
//! statement. Nullability is not compared: PostgreSQL describes no nullability for a result
//! column, so a `NULL` where a field is not `Nullable` still fails only when it is read. The
//! source scans below keep the pairs whole: a statement loaded (or handed on) without a pair,
//! a pair that names another row than the one loaded, and a `QueryableByName` struct declared
//! without `row!` all fail.

use diesel_async::{AsyncConnection, AsyncPgConnection, SimpleAsyncConnection};
use fleetdesk_pg::testing::TestDb;
use fleetdesk_pg::{Column, RowCheck};
use std::collections::{BTreeMap, BTreeSet};
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

const TEXT: u32 = 25;
const VARCHAR: u32 = 1043;

/// A column PostgreSQL describes for a statement's result.
#[derive(Debug, Clone)]
struct Described {
    name: String,
    oid: u32,
}

/// What is wrong with `check`'s row type for the columns its statement returns: each field
/// must be a returned column of the field's type (the first column of that name, as diesel
/// reads it). Columns the row does not read are fine. The one type allowed for another is
/// `varchar` for `Text` (diesel's `VarChar` is `Text`; diesel's own migrations table has one).
fn mismatches(check: &RowCheck, returned: &[Described]) -> Vec<String> {
    let type_name = |oid: u32| {
        tokio_postgres::types::Type::from_oid(oid)
            .map_or_else(|| format!("oid {oid}"), |t| t.name().to_owned())
    };
    let mut found = Vec::new();
    let mut seen = BTreeSet::new();
    for Column {
        name,
        oid,
        sql_type,
    } in &check.columns
    {
        let head = format!("{} into {}: field `{name}`", check.statement, check.row);
        if !seen.insert(*name) {
            found.push(format!("{head} is read twice"));
            continue;
        }
        let Some(oid) = oid else {
            found.push(format!(
                "{head} is {sql_type}, a type defined in the database: not checked here"
            ));
            continue;
        };
        match returned.iter().find(|c| c.name == *name) {
            None => found.push(format!(
                "{head} is not a column the statement returns ({})",
                if returned.is_empty() {
                    "it returns none".to_owned()
                } else {
                    returned
                        .iter()
                        .map(|c| c.name.as_str())
                        .collect::<Vec<_>>()
                        .join(", ")
                }
            )),
            Some(c) if c.oid != *oid && !(*oid == TEXT && c.oid == VARCHAR) => found.push(format!(
                "{head} is {} ({sql_type}) but the statement returns {}",
                type_name(*oid),
                type_name(c.oid)
            )),
            Some(_) => {}
        }
    }
    found
}

#[tokio::test(flavor = "multi_thread")]
async fn every_row_type_reads_columns_its_statement_returns() {
    let db = TestDb::new().await.expect("test database");
    let (client, connection) = tokio_postgres::connect(&db.url, tokio_postgres::NoTls)
        .await
        .expect("connect to the test database");
    let connection = tokio::spawn(connection);
    let checks = fleetdesk_pg::all_row_checks();
    let statements: BTreeMap<&str, &str> = fleetdesk_pg::all_statements().into_iter().collect();
    let mut failures = Vec::new();
    let mut paired = BTreeSet::new();
    for check in &checks {
        if !paired.insert(check.statement) {
            failures.push(format!("{} is paired twice", check.statement));
        }
        assert_eq!(
            statements.get(check.statement),
            Some(&check.sql),
            "a pair's statement is on the list"
        );
        // The extended protocol's Parse and Describe, parameter types left to PostgreSQL: the
        // result columns as the server will send them, without running the statement.
        match client.prepare(check.sql).await {
            Ok(statement) => {
                let returned: Vec<Described> = statement
                    .columns()
                    .iter()
                    .map(|c| Described {
                        name: c.name().to_owned(),
                        oid: c.type_().oid(),
                    })
                    .collect();
                failures.extend(mismatches(check, &returned));
            }
            Err(e) => failures.push(format!("{}: does not prepare: {e}", check.statement)),
        }
    }
    drop(client);
    connection
        .await
        .expect("the connection task")
        .expect("the connection");
    let rows: BTreeMap<&str, usize> = checks.iter().map(|c| (c.row, c.columns.len())).collect();
    let compared: usize = checks.iter().map(|c| c.columns.len()).sum();
    assert!(
        failures.is_empty(),
        "{} row type mismatches (of {} statements paired with {} row types):\n{}",
        failures.len(),
        checks.len(),
        rows.len(),
        failures.join("\n")
    );
    assert!(checks.len() >= 100, "only {} pairs", checks.len());
    println!(
        "{} statements paired with {} row types of {} fields: {compared} fields compared with \
         their columns",
        checks.len(),
        rows.len(),
        rows.values().sum::<usize>()
    );
}

#[test]
fn a_row_that_does_not_fit_its_statement_says_how() {
    let check = RowCheck {
        statement: "fleetdesk_pg::m::LIST",
        sql: "",
        row: "fleetdesk_pg::m::ListRow",
        columns: vec![
            Column {
                name: "id",
                oid: Some(2950),
                sql_type: "diesel::sql_types::Uuid",
            },
            Column {
                name: "count",
                oid: Some(20),
                sql_type: "diesel::sql_types::BigInt",
            },
            Column {
                name: "title",
                oid: Some(25),
                sql_type: "diesel::sql_types::Text",
            },
        ],
    };
    let returned = |cols: &[(&str, u32)]| -> Vec<Described> {
        cols.iter()
            .map(|(name, oid)| Described {
                name: (*name).to_owned(),
                oid: *oid,
            })
            .collect()
    };
    // Every field returned with its type, and a column the row does not read.
    assert!(
        mismatches(
            &check,
            &returned(&[
                ("id", 2950),
                ("count", 20),
                ("title", VARCHAR),
                ("extra", 16)
            ])
        )
        .is_empty()
    );
    // A renamed column and an int4 count.
    assert_eq!(
        mismatches(
            &check,
            &returned(&[("id", 2950), ("count", 23), ("name", 25)])
        ),
        [
            "fleetdesk_pg::m::LIST into fleetdesk_pg::m::ListRow: field `count` is int8 \
             (diesel::sql_types::BigInt) but the statement returns int4",
            "fleetdesk_pg::m::LIST into fleetdesk_pg::m::ListRow: field `title` is not a column \
             the statement returns (id, count, name)",
        ]
    );
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
