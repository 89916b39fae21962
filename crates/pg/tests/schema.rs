//! `src/schema.rs` is exactly what `diesel print-schema` prints (with the workspace's
//! `diesel.toml`: its table filter and `schema.patch`) for a database the migrations just made,
//! so the typed queries cannot drift from the migrations.
//!
//! `diesel` is the pinned diesel_cli that `cargo xtask test` installs into `target/peers/bin`.

use fleetdesk_pg::testing::TestDb;
use std::path::{Path, PathBuf};
use std::process::Command;

/// The target directory of the running test executable (`<target>/<profile>/deps/<test>`).
fn target_dir() -> PathBuf {
    let exe = std::env::current_exe().expect("the test executable's path");
    exe.ancestors()
        .nth(3)
        .expect("the test executable sits in <target>/<profile>/deps")
        .to_path_buf()
}

fn diesel_cli() -> PathBuf {
    let path = target_dir().join("peers/bin/diesel");
    assert!(
        path.is_file(),
        "{} is missing: run `cargo xtask test`, which installs the pinned diesel_cli there",
        path.display()
    );
    path
}

/// The first lines where `expected` and `actual` part, numbered from 1.
fn first_difference(expected: &str, actual: &str) -> String {
    let (e, a): (Vec<&str>, Vec<&str>) = (expected.lines().collect(), actual.lines().collect());
    let at = e.iter().zip(&a).take_while(|(x, y)| x == y).count();
    let show = |lines: &[&str]| {
        lines
            .iter()
            .skip(at)
            .take(5)
            .map(|l| l.to_string())
            .collect::<Vec<_>>()
    };
    format!(
        "from line {}:\n  schema.rs:    {:?}\n  print-schema: {:?}",
        at + 1,
        show(&e),
        show(&a)
    )
}

#[tokio::test(flavor = "multi_thread")]
async fn schema_rs_is_what_print_schema_prints_for_the_migrations() {
    let db = TestDb::new().await.expect("test database");
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let out = Command::new(diesel_cli())
        .current_dir(&root)
        .args(["print-schema", "--database-url", &db.url])
        .output()
        .expect("run diesel print-schema");
    assert!(
        out.status.success(),
        "diesel print-schema failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let printed = String::from_utf8(out.stdout).expect("print-schema prints UTF-8");
    let file = Path::new(env!("CARGO_MANIFEST_DIR")).join("src/schema.rs");
    let checked_in = std::fs::read_to_string(&file).expect("read src/schema.rs");
    assert!(
        printed == checked_in,
        "{} differs from what the migrations make ({}); regenerate it with \
         `target/peers/bin/diesel print-schema --database-url <a migrated database> > \
         crates/pg/src/schema.rs`",
        file.display(),
        first_difference(&checked_in, &printed)
    );
}

#[test]
fn names_where_two_texts_part() {
    assert_eq!(
        first_difference("a\nb\nc", "a\nx\nc"),
        "from line 2:\n  schema.rs:    [\"b\", \"c\"]\n  print-schema: [\"x\", \"c\"]"
    );
}
