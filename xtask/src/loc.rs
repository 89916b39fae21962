//! `cargo xtask loc`: how the production code divides between the crates, measured the same way
//! every time.
//!
//! A production line is a line of `crates/*/src` that holds code: not blank, not only a comment,
//! not inside an item compiled only for tests (`#[cfg(test)]`, `#[cfg(feature = "testing")]`,
//! `#[cfg(any(test, feature = "testing"))]`, a module file such an attribute declares), and not in the generated `schema.rs`. The crates'
//! `tests/` folders, the `tests` package, xtask and the benchmarks are not production code.

use anyhow::Context;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// Attributes that make the item after them test-only.
const TEST_ONLY: &[&str] = &[
    "#[cfg(test)]",
    "#[cfg(feature = \"testing\")]",
    "#[cfg(any(test, feature = \"testing\"))]",
];

/// Files produced by a tool, not written.
const GENERATED: &[&str] = &["crates/pg/src/schema.rs"];

/// What one file holds.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Counted {
    /// Production lines.
    pub lines: usize,
    /// Test-only module files the file declares (`#[cfg(test)] mod tests;`), by module name.
    pub test_modules: Vec<String>,
}

/// The lexer's state between characters.
#[derive(Clone, Copy, PartialEq, Eq)]
enum State {
    Code,
    LineComment,
    BlockComment(u32),
    Str,
    RawStr(usize),
}

/// A test-only item being skipped: the nesting it started at, and whether its body (a `{`) has
/// been entered.
struct Skip {
    nesting: usize,
    in_body: bool,
}

/// Counts one file's production lines.
pub fn count(source: &str) -> Counted {
    let chars: Vec<char> = source.chars().collect();
    let mut counted = Counted::default();
    let mut state = State::Code;
    let mut nesting = 0usize;
    let mut skip: Option<Skip> = None;
    // The line's code so far, and whether any of it lies outside a test-only item.
    let mut line_has_code = false;
    let mut line_counted = false;
    let mut pending_mod = false;
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        if c == '\n' {
            if line_has_code && line_counted {
                counted.lines += 1;
            }
            line_has_code = false;
            line_counted = false;
            if state == State::LineComment {
                state = State::Code;
            }
            i += 1;
            continue;
        }
        let rest = || chars[i..].iter().collect::<String>();
        let starts = |s: &str| {
            chars[i..]
                .iter()
                .take(s.chars().count())
                .copied()
                .eq(s.chars())
        };
        let mut code = |skip: &Option<Skip>| {
            line_has_code = true;
            if skip.is_none() {
                line_counted = true;
            }
        };
        match state {
            State::LineComment => {}
            State::BlockComment(depth) => {
                if starts("*/") {
                    state = if depth == 1 {
                        State::Code
                    } else {
                        State::BlockComment(depth - 1)
                    };
                    i += 1;
                } else if starts("/*") {
                    state = State::BlockComment(depth + 1);
                    i += 1;
                }
            }
            State::Str => {
                code(&skip);
                if c == '\\' {
                    i += 1;
                } else if c == '"' {
                    state = State::Code;
                }
            }
            State::RawStr(hashes) => {
                code(&skip);
                if c == '"'
                    && chars[i + 1..]
                        .iter()
                        .take(hashes)
                        .filter(|&&h| h == '#')
                        .count()
                        == hashes
                {
                    state = State::Code;
                    i += hashes;
                }
            }
            State::Code => {
                if starts("//") {
                    state = State::LineComment;
                    i += 1;
                } else if starts("/*") {
                    state = State::BlockComment(1);
                    i += 1;
                } else if c.is_whitespace() {
                } else {
                    if skip.is_none() && TEST_ONLY.iter().any(|a| starts(a)) {
                        skip = Some(Skip {
                            nesting,
                            in_body: false,
                        });
                        pending_mod = rest().split_once(']').is_some_and(|(_, after)| {
                            let after = after.trim_start();
                            after.starts_with("mod ") || after.starts_with("pub mod ")
                        });
                    }
                    code(&skip);
                    if c == '"' {
                        state = State::Str;
                    } else if (c == 'r' || c == 'b')
                        && !chars
                            .get(i.wrapping_sub(1))
                            .is_some_and(|p| p.is_alphanumeric() || *p == '_')
                        && let Some(hashes) = raw_string_start(&chars[i..])
                    {
                        state = State::RawStr(hashes);
                        i += hashes
                            + if c == 'b' && chars.get(i + 1) == Some(&'r') {
                                2
                            } else {
                                1
                            };
                    } else if c == '\'' {
                        i += char_literal_len(&chars[i..]).saturating_sub(1);
                    } else if matches!(c, '{' | '(' | '[') {
                        if let Some(s) = &mut skip
                            && c == '{'
                            && nesting == s.nesting
                        {
                            s.in_body = true;
                        }
                        nesting += 1;
                    } else if matches!(c, '}' | ')' | ']') {
                        nesting = nesting.saturating_sub(1);
                        if skip
                            .as_ref()
                            .is_some_and(|s| s.in_body && nesting == s.nesting)
                        {
                            skip = None;
                            pending_mod = false;
                        }
                    } else if c == ';'
                        && let Some(s) = &skip
                        && !s.in_body
                        && nesting == s.nesting
                    {
                        if pending_mod {
                            let line_start = chars[..i]
                                .iter()
                                .rposition(|&c| c == '\n')
                                .map_or(0, |p| p + 1);
                            let line: String = chars[line_start..i].iter().collect();
                            if let Some(name) = line
                                .trim()
                                .strip_prefix("mod ")
                                .or_else(|| line.trim().strip_prefix("pub mod "))
                            {
                                counted.test_modules.push(name.trim().to_string());
                            }
                        }
                        skip = None;
                        pending_mod = false;
                    }
                }
            }
        }
        i += 1;
    }
    if line_has_code && line_counted {
        counted.lines += 1;
    }
    counted
}

/// The number of `#` of a raw string starting here (`r"`, `r#"`, `br"`), if one does.
fn raw_string_start(chars: &[char]) -> Option<usize> {
    let after_r = match chars {
        ['b', 'r', rest @ ..] | ['r', rest @ ..] => rest,
        _ => return None,
    };
    let hashes = after_r.iter().take_while(|&&c| c == '#').count();
    (after_r.get(hashes) == Some(&'"')).then_some(hashes)
}

/// The length of a character literal starting here (`'a'`, `'\n'`, `'\u{1F600}'`), or 1 for a
/// lifetime's or label's quote.
fn char_literal_len(chars: &[char]) -> usize {
    match chars {
        ['\'', '\\', _, rest @ ..] => rest.iter().position(|&c| c == '\'').map_or(1, |p| p + 4),
        ['\'', _, '\'', ..] => 3,
        _ => 1,
    }
}

/// One production file and its lines.
pub struct FileLines {
    pub path: PathBuf,
    pub krate: String,
    pub lines: usize,
}

/// Every production file of `crates/`, with its lines.
pub fn production_files(root: &Path) -> anyhow::Result<Vec<FileLines>> {
    let mut files = Vec::new();
    let crates = root.join("crates");
    for entry in std::fs::read_dir(&crates).context("reading crates/")? {
        let dir = entry?.path();
        let src = dir.join("src");
        if !src.is_dir() {
            continue;
        }
        let krate = dir
            .file_name()
            .unwrap_or_default()
            .to_string_lossy()
            .into_owned();
        let mut test_files = Vec::new();
        let mut found = Vec::new();
        walk(&src, &mut found)?;
        found.sort();
        for path in &found {
            let source = std::fs::read_to_string(path)
                .with_context(|| format!("reading {}", path.display()))?;
            let counted = count(&source);
            for module in &counted.test_modules {
                let dir = module_dir(path);
                test_files.push(dir.join(format!("{module}.rs")));
                test_files.push(dir.join(module));
            }
            files.push((path.clone(), krate.clone(), counted.lines));
        }
        files.retain(|(path, _, _)| !test_files.iter().any(|t| path.starts_with(t)));
    }
    Ok(files
        .into_iter()
        .filter(|(path, _, _)| {
            let relative = path.strip_prefix(root).unwrap_or(path);
            !GENERATED.iter().any(|g| relative == Path::new(g))
        })
        .map(|(path, krate, lines)| FileLines {
            path: path.strip_prefix(root).unwrap_or(&path).to_path_buf(),
            krate,
            lines,
        })
        .collect())
}

/// The folder a file's child modules live in: beside `lib.rs`, `main.rs` and `mod.rs`, in a
/// folder of the file's name otherwise.
fn module_dir(file: &Path) -> PathBuf {
    let parent = file.parent().unwrap_or(Path::new(""));
    match file.file_stem().and_then(|s| s.to_str()) {
        Some("lib" | "main" | "mod") => parent.to_path_buf(),
        Some(stem) => parent.join(stem),
        None => parent.to_path_buf(),
    }
}

fn walk(dir: &Path, out: &mut Vec<PathBuf>) -> anyhow::Result<()> {
    for entry in std::fs::read_dir(dir)? {
        let path = entry?.path();
        if path.is_dir() {
            walk(&path, out)?;
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
    Ok(())
}

/// The group a crate's lines count towards.
fn group(krate: &str, layer: Option<super::Layer>) -> &'static str {
    use super::Layer;
    match (krate, layer) {
        ("pg", _) => "pg",
        ("api", _) => "api",
        (_, Some(Layer::Kernel | Layer::Domain)) => "domain",
        (_, Some(Layer::App)) => "app",
        _ => "adapters",
    }
}

/// Prints the measure: lines per group and per crate, the largest files, raw SQL statements;
/// with a crate's short name, each of that crate's files too.
pub fn report(root: &Path, krate: Option<&str>) -> anyhow::Result<()> {
    let files = production_files(root)?;
    let total: usize = files.iter().map(|f| f.lines).sum();
    let mut per_crate: BTreeMap<&str, usize> = BTreeMap::new();
    let mut per_group: BTreeMap<&str, usize> = BTreeMap::new();
    for file in &files {
        *per_crate.entry(&file.krate).or_default() += file.lines;
        let layer = super::CRATES
            .iter()
            .find(|(name, _)| {
                name.strip_prefix("fleetdesk_").unwrap_or(name) == file.krate
                    || (*name == "fleetdesk" && file.krate == "app")
            })
            .map(|(_, layer)| *layer);
        *per_group.entry(group(&file.krate, layer)).or_default() += file.lines;
    }
    let share = |n: usize| n as f64 * 100.0 / total.max(1) as f64;
    println!(
        "production lines: {total} (non-blank, non-comment; tests and generated schema aside)"
    );
    for (group, lines) in &per_group {
        println!("  {group:<9} {lines:>6}  {:>5.1}%", share(*lines));
    }
    println!("per crate:");
    let mut crates: Vec<_> = per_crate.into_iter().collect();
    crates.sort_by_key(|c| std::cmp::Reverse(c.1));
    for (krate, lines) in crates {
        println!("  {krate:<12} {lines:>6}  {:>5.1}%", share(lines));
    }
    println!("largest files:");
    let mut largest: Vec<&FileLines> = files.iter().collect();
    largest.sort_by_key(|f| std::cmp::Reverse(f.lines));
    for file in largest.iter().take(10) {
        println!("  {:>5}  {}", file.lines, file.path.display());
    }
    if let Some(krate) = krate {
        println!("files of {krate}:");
        for file in largest.iter().filter(|f| f.krate == krate) {
            println!("  {:>5}  {}", file.lines, file.path.display());
        }
    }
    let (mut sql_query, mut row_structs) = (0, 0);
    for file in &files {
        let source = std::fs::read_to_string(root.join(&file.path))?;
        sql_query += source.matches("sql_query(").count() + source.matches("sql!(").count();
        // Every row type of raw SQL is declared with `row! { .. }` (crates/pg/src/rows.rs).
        row_structs += source
            .lines()
            .filter(|l| l.trim_start().starts_with("row! {"))
            .count();
    }
    println!(
        "raw SQL: {sql_query} sql_query and sql! calls, {row_structs} row types declared with row! (whole files, tests included)"
    );
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::count;

    #[test]
    fn blank_and_comment_lines_are_not_counted() {
        let source =
            "// a comment\n\nfn f() {\n    /* block\n still */ let x = 1; // trailing\n}\n";
        assert_eq!(count(source).lines, 3);
    }

    #[test]
    fn test_modules_and_their_files_are_left_out() {
        let source = "fn f() {}\n#[cfg(test)]\nmod tests {\n    #[test]\n    fn t() { let s = \"}\"; }\n}\nfn g() {}\n#[cfg(test)]\nmod more;\n#[cfg(feature = \"testing\")]\npub mod testing;\n";
        let counted = count(source);
        assert_eq!(counted.lines, 2);
        assert_eq!(
            counted.test_modules,
            vec!["more".to_string(), "testing".to_string()]
        );
        let either = "fn f() {}\n#[cfg(any(test, feature = \"testing\"))]\nfn g() {\n    h();\n}\n";
        assert_eq!(count(either).lines, 1);
    }

    #[test]
    fn strings_hold_code_and_braces_in_them_do_not_nest() {
        let source = "const A: &str = r#\"\n{ \"x\" \n\"#;\n#[cfg(test)]\nconst B: [u8; 2] = [1, 2];\nfn c() -> char { '{' }\nfn d<'a>(x: &'a str) {}\n";
        assert_eq!(count(source).lines, 5);
    }
}
