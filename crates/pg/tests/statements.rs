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

/// `&str` constants in `src/` that are not SQL: the channel the event log notifies.
const NOT_SQL: &[&str] = &["fleetdesk_pg::events::CHANNEL"];

/// Statements handed on to a function that runs them (so the source scan cannot see how) and
/// paired with no row type: each must return no columns, which the describing test checks.
const HANDED_ON_WITHOUT_ROWS: &[&str] = &["fleetdesk_pg::cron::UPDATE_RUNS"];

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
    for name in HANDED_ON_WITHOUT_ROWS {
        let sql = statements.get(name).expect("a listed statement");
        match client.prepare(sql).await {
            Ok(statement) if statement.columns().is_empty() => {}
            Ok(_) => failures.push(format!(
                "{name} returns columns: pair it with its row type instead of listing it in \
                 HANDED_ON_WITHOUT_ROWS"
            )),
            Err(e) => failures.push(format!("{name}: does not prepare: {e}")),
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
    let mut found = BTreeSet::new();
    let mut missing = Vec::new();
    let mut inline = Vec::new();
    let mut files = 0;
    for Source { module, path, text } in adapter_sources() {
        files += 1;
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
    assert!(files >= 8, "only {files} source files under src/");
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

#[test]
fn every_statement_read_into_rows_is_paired_with_its_row_type() {
    let checks = fleetdesk_pg::all_row_checks();
    // "fleetdesk_pg::module::NAME" -> the row type's name without its path.
    let pairs: BTreeMap<&str, &str> = checks
        .iter()
        .map(|c| (c.statement, c.row.rsplit("::").next().expect("a name")))
        .collect();
    let sources: Vec<(Source, String)> = adapter_sources()
        .into_iter()
        .map(|s| {
            let code = code_only(&s.text);
            (s, code)
        })
        .collect();
    let rows: BTreeSet<String> = sources
        .iter()
        .flat_map(|(_, code)| row_structs(code))
        .collect();
    let mut failures = Vec::new();
    let mut uses = 0;
    for (Source { module, path, text }, code) in &sources {
        let at = |i: usize| format!("{}:{}", path.display(), code[..i].matches('\n').count() + 1);
        // The list itself names every constant; it is not a use.
        let list = code
            .find("statements!(")
            .map(|i| (i, i + code[i..].find(')').expect("the list's end")));
        for name in str_constants(text) {
            let full = format!("fleetdesk_pg::{module}::{name}");
            let paired = pairs.get(full.as_str()).copied();
            for i in word_at(code, &name) {
                if code[..i].trim_end().ends_with("const")
                    || list.is_some_and(|(a, b)| a < i && i < b)
                {
                    continue;
                }
                uses += 1;
                let before = code[..i].trim_end();
                let direct = before.ends_with("sql_query(") || before.ends_with("sql!(");
                let run = if direct { runs_with(code, i) } else { None };
                match paired {
                    // Run where it is named and its rows are not read: nothing to pair.
                    None if run == Some("execute") => {}
                    None if !direct && HANDED_ON_WITHOUT_ROWS.contains(&full.as_str()) => {}
                    None => failures.push(format!(
                        "{}: {name} is {}, but its statements! list pairs it with no row type \
                         (`{name} => ItsRow`)",
                        at(i),
                        match run {
                            Some(run) => format!("read with .{run}"),
                            None => "handed on (its rows may be read elsewhere)".to_owned(),
                        }
                    )),
                    Some(row) => {
                        // A row type the statement names (`Vec<KeyRow>`, `::<KeyRow>`) must be
                        // the one it is paired with.
                        let (start, end) = statement_around(code, i);
                        let named: Vec<&String> = rows
                            .iter()
                            .filter(|r| !word_at(&code[start..end], r).is_empty())
                            .collect();
                        if run.is_some_and(|r| READS.contains(&r))
                            && !named.is_empty()
                            && !named.iter().any(|r| *r == row)
                        {
                            failures.push(format!(
                                "{}: {name} is read into {named:?} but paired with {row}",
                                at(i)
                            ));
                        }
                    }
                }
            }
        }
    }
    // Every row type is some statement's, or part of one (embedded).
    let embeds: BTreeSet<String> = sources
        .iter()
        .flat_map(|(_, code)| embedded(code))
        .collect();
    let paired_rows: BTreeSet<&str> = checks.iter().map(|c| c.row).collect();
    for (Source { module, .. }, code) in &sources {
        for row in row_structs(code) {
            let full = format!("fleetdesk_pg::{module}::{row}");
            if !checks.iter().any(|c| c.row == full) && !embeds.contains(&row) {
                failures.push(format!(
                    "{full} is declared with row! but paired with no statement"
                ));
            }
        }
    }
    assert!(
        failures.is_empty(),
        "{} reads of SQL constants or row types without their pairs:\n{}",
        failures.len(),
        failures.join("\n")
    );
    assert!(uses >= 150, "only {uses} uses of SQL constants found");
    assert!(
        paired_rows.len() >= 100,
        "only {} paired row types",
        paired_rows.len()
    );
    println!("{uses} uses of SQL constants: every read is paired with its row type");
}

#[test]
fn every_queryable_by_name_struct_is_declared_with_row() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut found = Vec::new();
    let mut rows = 0;
    for path in rust_files(&src) {
        if path.ends_with("rows.rs") {
            continue;
        }
        let code = code_only(&std::fs::read_to_string(&path).expect("read source file"));
        rows += row_structs(&code).len();
        for i in word_at(&code, "QueryableByName") {
            found.push(format!(
                "{}:{}",
                path.display(),
                code[..i].matches('\n').count() + 1
            ));
        }
    }
    assert!(
        found.is_empty(),
        "QueryableByName derived without row! (declare the struct in `row! {{ .. }}`, which \
         derives it and records its columns for the test that compares them with the \
         statement's):\n{}",
        found.join("\n")
    );
    assert!(rows >= 100, "only {rows} row! structs found");
}

#[test]
fn the_scan_reads_code_only() {
    let code = code_only(
        "let a = \"LIST\"; // LIST\nlet b = r#\"LIST \"x\" \"#; /* LIST */ \
         f('\\'', 'L', LIST);\nfn g<'a>(x: &'a str) {}",
    );
    assert_eq!(word_at(&code, "LIST").len(), 1, "{code}");
    assert!(code.contains("fn g<'a>(x: &'a str) {}"), "{code}");
    assert_eq!(code.lines().count(), 3);
    let text = "let x: Vec<KeyRow> = prepared(diesel::sql_query(LIST).bind::<Text, _>(a))\n    \
                .load(conn)\n    .await?;\nlet y = sql_query(LOCK).execute(conn);\n\
                let z = sql!(ONE, id)\n    .get_result(conn);";
    let list = text.find("LIST").expect("LIST");
    assert_eq!(runs_with(text, list), Some("load"));
    assert_eq!(
        runs_with(text, text.find("LOCK").expect("LOCK")),
        Some("execute")
    );
    assert_eq!(
        runs_with(text, text.find("ONE").expect("ONE")),
        Some("get_result")
    );
    let (start, end) = statement_around(text, list);
    assert!(text[start..end].starts_with("let x: Vec<KeyRow>"));
    assert_eq!(
        row_structs("row! {\n    #[derive(Clone)]\n    pub(crate) struct KeyRow {"),
        ["KeyRow"]
    );
    assert_eq!(
        embedded("#[diesel(embed)]\n        head: super::HeadRow,"),
        ["HeadRow"]
    );
}

/// One file of `src/`: its module (`a/b.rs` is `a::b`, `a/mod.rs` is `a`) and its text.
struct Source {
    module: String,
    path: std::path::PathBuf,
    text: String,
}

/// The adapter's source files: `src/` but the per-test database helper, which builds its DDL
/// at run time, and `rows.rs`, which declares `row!`.
fn adapter_sources() -> Vec<Source> {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    rust_files(&src)
        .into_iter()
        .filter_map(|path| {
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
            if module == "testing" || module == "rows" {
                return None;
            }
            let text = std::fs::read_to_string(&path).expect("read source file");
            Some(Source { module, path, text })
        })
        .collect()
}

/// `text` with its comments and the insides of its string and character literals blanked
/// (line breaks kept), so a scan reads code only, at the same offsets and lines.
fn code_only(text: &str) -> String {
    let chars: Vec<char> = text.chars().collect();
    let mut out = String::with_capacity(text.len());
    let blank = |c: char| if c == '\n' { '\n' } else { ' ' };
    let mut i = 0;
    while i < chars.len() {
        let rest = &chars[i..];
        if rest.starts_with(&['/', '/']) {
            while i < chars.len() && chars[i] != '\n' {
                out.push(' ');
                i += 1;
            }
        } else if rest.starts_with(&['/', '*']) {
            let mut depth = 0;
            while i < chars.len() {
                if chars[i..].starts_with(&['/', '*']) {
                    depth += 1;
                    out.push_str("  ");
                    i += 2;
                } else if chars[i..].starts_with(&['*', '/']) {
                    depth -= 1;
                    out.push_str("  ");
                    i += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    out.push(blank(chars[i]));
                    i += 1;
                }
            }
        } else if let Some(hashes) = raw_string_start(rest) {
            // r"..", r#".."#, br".." ...: up to the quote followed by as many hashes.
            let open = rest.iter().position(|c| *c == '"').expect("a quote") + 1;
            out.extend(std::iter::repeat_n(' ', open));
            i += open;
            while i < chars.len() {
                if chars[i] == '"'
                    && chars[i + 1..].iter().take_while(|c| **c == '#').count() >= hashes
                {
                    out.extend(std::iter::repeat_n(' ', hashes + 1));
                    i += hashes + 1;
                    break;
                }
                out.push(blank(chars[i]));
                i += 1;
            }
        } else if chars[i] == '"' {
            out.push(' ');
            i += 1;
            while i < chars.len() && chars[i] != '"' {
                if chars[i] == '\\' {
                    out.push(' ');
                    i += 1;
                }
                if i < chars.len() {
                    out.push(blank(chars[i]));
                    i += 1;
                }
            }
            out.push(' ');
            i += 1;
        } else if chars[i] == '\'' && (rest.get(1) == Some(&'\\') || rest.get(2) == Some(&'\'')) {
            // A character literal ('x', '\n', '"'); a lifetime has no closing quote.
            let len = rest[1..]
                .iter()
                .skip(1)
                .position(|c| *c == '\'')
                .expect("a quote")
                + 3;
            out.extend(std::iter::repeat_n(' ', len));
            i += len;
        } else {
            out.push(chars[i]);
            i += 1;
        }
    }
    out
}

/// How many `#` a raw string starting at `rest` has, if one does (`r"`, `r#"`, `br##"` ...).
fn raw_string_start(rest: &[char]) -> Option<usize> {
    let after = match rest {
        ['b', 'r', after @ ..] | ['r', after @ ..] => after,
        _ => return None,
    };
    let hashes = after.iter().take_while(|c| **c == '#').count();
    (after.get(hashes) == Some(&'"')).then_some(hashes)
}

/// The offsets where `word` stands as a whole identifier in `code`.
fn word_at(code: &str, word: &str) -> Vec<usize> {
    let ident = |c: char| c.is_alphanumeric() || c == '_';
    code.match_indices(word)
        .filter(|(i, _)| !code[..*i].ends_with(ident) && !code[i + word.len()..].starts_with(ident))
        .map(|(i, _)| i)
        .collect()
}

/// The statement of `code` that holds `at`, as offsets: from after the `;`, `{` or `}` before
/// it to the `;` that ends it or the `}` that closes its block.
fn statement_around(code: &str, at: usize) -> (usize, usize) {
    let start = code[..at].rfind([';', '{', '}']).map_or(0, |i| i + 1);
    let mut depth = 0i32;
    for (i, c) in code[at..].char_indices() {
        match c {
            '{' => depth += 1,
            '}' if depth == 0 => return (start, at + i),
            '}' => depth -= 1,
            ';' if depth == 0 => return (start, at + i),
            _ => {}
        }
    }
    (start, code.len())
}

/// Diesel's methods that run a query, and those of them that read rows.
const RUNS: &[&str] = &["execute", "load", "get_result", "get_results", "first"];
const READS: &[&str] = &["load", "get_result", "get_results", "first"];

/// The method that runs the query whose SQL is named at `at`: the first of [`RUNS`] called
/// after it in its statement, if any.
fn runs_with(code: &str, at: usize) -> Option<&'static str> {
    let (_, end) = statement_around(code, at);
    let tail = &code[at..end];
    tail.match_indices('.').find_map(|(i, _)| {
        let method = &tail[i + 1..];
        RUNS.iter().copied().find(|run| {
            method.strip_prefix(run).is_some_and(|after| {
                let after = after.trim_start();
                after.starts_with('(') || after.starts_with("::")
            })
        })
    })
}

/// The structs `row!` declares in `text`.
fn row_structs(code: &str) -> Vec<String> {
    code.match_indices("row! {")
        .filter_map(|(i, _)| {
            let after = &code[i..];
            let name = after[after.find("struct ")? + "struct ".len()..]
                .split(|c: char| !(c.is_alphanumeric() || c == '_'))
                .next()?;
            Some(name.to_owned())
        })
        .collect()
}

/// The types of the `#[diesel(embed)]` fields in `code`.
fn embedded(code: &str) -> Vec<String> {
    code.match_indices("#[diesel(embed)]")
        .filter_map(|(i, _)| {
            let field = &code[i + "#[diesel(embed)]".len()..];
            let ty = field[field.find(':')? + 1..field.find(',')?].trim();
            // An optional embedded row (`Option<PendingRow>`) is its row's.
            let ty = ty
                .strip_prefix("Option<")
                .map_or(ty, |t| t.trim_end_matches('>'));
            Some(ty.rsplit("::").next()?.to_owned())
        })
        .collect()
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
