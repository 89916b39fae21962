//! The command line as a new user meets it: `fleetdesk --help` and every subcommand's help
//! describe each flag with its environment variable (secrets' values never shown), the
//! variables read without a flag are listed, `admin apply --help` says where the file format
//! is described, and `cargo xtask --help` lists the tasks.
//!
//! The binary comes from [`fleetdesk_tests::binary`]: built once per test process (never a
//! stale one), run with a clean environment.

use fleetdesk_tests::binary::{cargo, fleetdesk, workspace_root};
use std::process::{Command, Output, Stdio};

/// Runs a help command to its end; its standard output.
fn help(mut cmd: Command, what: &str) -> String {
    let out = cmd
        .output()
        .unwrap_or_else(|e| panic!("running {what}: {e}"));
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "{what} exited with {}:\n{stdout}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    stdout
}

/// The subcommands listed under `Commands:` (without `help`).
fn subcommands(help: &str) -> Vec<String> {
    help.lines()
        .skip_while(|l| l.trim() != "Commands:")
        .skip(1)
        .take_while(|l| l.starts_with("  "))
        .filter_map(|l| l.split_whitespace().next())
        .filter(|c| *c != "help")
        .map(str::to_owned)
        .collect()
}

/// One option of a long help: its long name, and the text up to the next option.
struct Flag {
    long: String,
    text: String,
}

/// The options of a `--help` (long form: each option on its own line, its text below).
fn flags(help: &str) -> Vec<Flag> {
    let mut out: Vec<Flag> = Vec::new();
    let mut in_options = false;
    for line in help.lines() {
        if line.trim_end() == "Options:" {
            in_options = true;
            continue;
        }
        if !in_options {
            continue;
        }
        if !line.is_empty() && !line.starts_with(' ') {
            // The next section (the after-help text).
            break;
        }
        let trimmed = line.trim_start();
        let indent = line.len() - trimmed.len();
        let starts_option = indent <= 6 && trimmed.starts_with('-');
        if starts_option {
            // Short help puts the description on the option's own line, after two spaces.
            let (spec, rest) = trimmed.split_once("  ").unwrap_or((trimmed, ""));
            let long = spec
                .split([' ', ','])
                .find(|w| w.starts_with("--"))
                .unwrap_or(spec)
                .to_owned();
            let rest = rest.trim();
            out.push(Flag {
                long,
                text: if rest.is_empty() {
                    String::new()
                } else {
                    format!("{rest}\n")
                },
            });
        } else if let Some(last) = out.last_mut() {
            last.text.push_str(trimmed);
            last.text.push('\n');
        }
    }
    out
}

/// Every flag but --help/--version has a description and an environment variable.
fn assert_flags_described(path: &str, help: &str) -> Vec<Flag> {
    let flags = flags(help);
    for flag in &flags {
        if flag.long == "--help" || flag.long == "--version" {
            continue;
        }
        let description = flag
            .text
            .lines()
            .find(|l| !l.trim().is_empty())
            .unwrap_or_default();
        assert!(
            !description.starts_with('[') && !description.is_empty(),
            "`fleetdesk {path} --help`: {} has no description:\n{help}",
            flag.long
        );
        assert!(
            flag.text.contains("[env: "),
            "`fleetdesk {path} --help`: {} names no environment variable:\n{help}",
            flag.long
        );
    }
    flags
}

fn env_of<'a>(flags: &'a [Flag], long: &str) -> &'a str {
    let flag = flags
        .iter()
        .find(|f| f.long == long)
        .unwrap_or_else(|| panic!("no {long} flag"));
    let start = flag.text.find("[env: ").expect("an env line") + "[env: ".len();
    let rest = &flag.text[start..];
    let end = rest.find([']', '=']).unwrap_or(rest.len());
    &rest[..end]
}

const S3_AND_LOG_VARS: &[&str] = &[
    "FLEETDESK_S3_BUCKET",
    "FLEETDESK_S3_ENDPOINT",
    "AWS_ACCESS_KEY_ID",
    "AWS_SECRET_ACCESS_KEY",
    "AWS_REGION",
    "RUST_LOG",
    "FLEETDESK_LOG_FORMAT",
];

#[test]
fn every_command_describes_each_flag_and_its_environment_variable() {
    let top = help(fleetdesk(&["--help"]), "fleetdesk --help");
    for var in S3_AND_LOG_VARS.iter().chain(&["DATABASE_URL"]) {
        assert!(
            top.contains(var),
            "`fleetdesk --help` does not mention {var}:\n{top}"
        );
    }
    let commands = subcommands(&top);
    for expected in ["serve", "migrate", "admin"] {
        assert!(
            commands.iter().any(|c| c == expected),
            "`fleetdesk --help` lists no {expected}: {commands:?}\n{top}"
        );
    }

    // Every command, down to the leaves, each flag with a description and a variable.
    let mut pending: Vec<Vec<String>> = commands.into_iter().map(|c| vec![c]).collect();
    let mut leaves = Vec::new();
    while let Some(path) = pending.pop() {
        let mut args: Vec<&str> = path.iter().map(String::as_str).collect();
        args.push("--help");
        let text = help(fleetdesk(&args), &format!("fleetdesk {}", args.join(" ")));
        let name = path.join(" ");
        let children = subcommands(&text);
        if children.is_empty() {
            let flags = assert_flags_described(&name, &text);
            leaves.push((name, text, flags));
        } else {
            pending.extend(children.into_iter().map(|c| {
                let mut p = path.clone();
                p.push(c);
                p
            }));
        }
    }
    let leaf = |name: &str| {
        leaves
            .iter()
            .find(|(n, _, _)| n == name)
            .unwrap_or_else(|| panic!("no `fleetdesk {name}` command"))
    };

    let (_, serve, flags) = leaf("serve");
    for (long, var) in [
        ("--bind", "FLEETDESK_BIND"),
        ("--metrics-bind", "FLEETDESK_METRICS_BIND"),
        ("--base-url", "FLEETDESK_BASE_URL"),
        ("--database-url", "DATABASE_URL"),
        ("--data-dir", "FLEETDESK_DATA_DIR"),
        ("--rate-limit-per-minute", "FLEETDESK_RATE_LIMIT_PER_MINUTE"),
        ("--workers", "FLEETDESK_WORKERS"),
        ("--db-pool", "FLEETDESK_DB_POOL"),
        ("--expose-round-trips", "FLEETDESK_EXPOSE_ROUND_TRIPS"),
        ("--no-demo", "FLEETDESK_NO_DEMO"),
    ] {
        assert_eq!(env_of(flags, long), var, "serve {long}:\n{serve}");
    }
    for var in S3_AND_LOG_VARS {
        assert!(
            serve.contains(var),
            "`fleetdesk serve --help` does not mention {var}:\n{serve}"
        );
    }
    for name in ["migrate", "admin apply"] {
        let (_, text, flags) = leaf(name);
        assert_eq!(env_of(flags, "--database-url"), "DATABASE_URL", "{text}");
        assert_eq!(env_of(flags, "--data-dir"), "FLEETDESK_DATA_DIR", "{text}");
    }
    let (_, apply, _) = leaf("admin apply");
    assert!(
        apply.contains("docs/decisions.md") && apply.contains("README.md"),
        "`fleetdesk admin apply --help` does not say where the file format is described:\n{apply}"
    );
}

/// The environment variables the binary's crates read by name: every `var("NAME")`,
/// `var_os("NAME")` and clap `env = "NAME"` in `crates/*/src`, unit tests and the tests'
/// database helper left out.
fn variables_read_by_the_binary() -> Vec<(String, String)> {
    let crates = workspace_root().join("crates");
    let mut found = Vec::new();
    let mut dirs = vec![crates];
    while let Some(dir) = dirs.pop() {
        for entry in std::fs::read_dir(&dir)
            .expect("read a source folder")
            .flatten()
        {
            let path = entry.path();
            if path.is_dir() {
                if !path.ends_with("tests") {
                    dirs.push(path);
                }
                continue;
            }
            let shown = path.display().to_string();
            if !shown.ends_with(".rs") || shown.ends_with("pg/src/testing.rs") {
                continue;
            }
            let text = std::fs::read_to_string(&path).expect("read a source file");
            let code = text.split("#[cfg(test)]").next().unwrap_or_default();
            for opener in ["var(\"", "var_os(\"", "env = \""] {
                for (at, _) in code.match_indices(opener) {
                    let name: String = code[at + opener.len()..]
                        .chars()
                        .take_while(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || *c == '_')
                        .collect();
                    if name.len() > 2 && code[at + opener.len() + name.len()..].starts_with('"') {
                        found.push((name, shown.clone()));
                    }
                }
            }
        }
    }
    found.sort();
    found.dedup_by(|a, b| a.0 == b.0);
    found
}

/// `fleetdesk serve --help` names every variable the service reads; the upload command's own
/// (its key, its flags') are in `fleetdesk upload --help`, and `admin issue-key`'s in its own.
#[test]
fn serve_help_names_every_variable_the_binary_reads() {
    let serve = help(fleetdesk(&["serve", "--help"]), "fleetdesk serve --help");
    let upload = help(fleetdesk(&["upload", "--help"]), "fleetdesk upload --help");
    let issue = help(
        fleetdesk(&["admin", "issue-key", "--help"]),
        "fleetdesk admin issue-key --help",
    );
    let read = variables_read_by_the_binary();
    for expected in [
        "FLEETDESK_AD_RESEARCH_URL",
        "FLEETDESK_AD_PLATFORM",
        "FLEETDESK_S3_BUCKET",
        "FLEETDESK_AGENT_KEY",
    ] {
        assert!(
            read.iter().any(|(name, _)| name == expected),
            "the scan misses {expected}: {read:?}"
        );
    }
    let unnamed: Vec<_> = read
        .iter()
        .filter(|(name, _)| {
            let named = |help: &str| {
                help.split(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
                    .any(|w| w == name)
            };
            !named(&serve) && !named(&upload) && !named(&issue)
        })
        .collect();
    assert!(
        unnamed.is_empty(),
        "read but named in none of `serve --help`, `upload --help`, `admin issue-key --help`: \
         {unnamed:?}\n{serve}"
    );
}

#[test]
fn help_never_shows_a_secret_value() {
    let mut cmd = fleetdesk(&["serve", "--help"]);
    cmd.env(
        "DATABASE_URL",
        "postgres://fleet:pw-in-the-url-7731@db.internal/fleet",
    )
    .env("AWS_SECRET_ACCESS_KEY", "aws-secret-value-5512")
    .env("AWS_ACCESS_KEY_ID", "AKIAEXAMPLEKEYID")
    .env("FLEETDESK_BIND", "127.0.0.1:9999");
    let text = help(cmd, "fleetdesk serve --help");
    for secret in [
        "pw-in-the-url-7731",
        "db.internal",
        "aws-secret-value-5512",
        "AKIAEXAMPLEKEYID",
    ] {
        assert!(
            !text.contains(secret),
            "`fleetdesk serve --help` shows {secret}:\n{text}"
        );
    }
    // A plain setting's value is shown, so the check above is not vacuous.
    assert!(text.contains("FLEETDESK_BIND=127.0.0.1:9999"), "{text}");
}

/// `cargo xtask <args>` in the workspace (through the alias of .cargo/config.toml), run to
/// its end.
fn xtask(args: &[&str]) -> Output {
    Command::new(cargo())
        .arg("xtask")
        .args(args)
        .current_dir(workspace_root())
        .stdin(Stdio::null())
        .output()
        .unwrap_or_else(|e| panic!("run cargo xtask {}: {e}", args.join(" ")))
}

#[test]
fn cargo_xtask_help_lists_the_tasks_and_exits_0() {
    let out = xtask(&["--help"]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "cargo xtask --help exited with {}:\n{stdout}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    for task in ["test", "check-boundaries", "lint", "bench"] {
        assert!(
            stdout
                .lines()
                .any(|l| l.trim_start().starts_with(&format!("{task} "))),
            "cargo xtask --help does not list `{task}`:\n{stdout}"
        );
    }
    // An unknown task is an error, with the same usage on stderr.
    let out = xtask(&["no-such-task"]);
    assert_eq!(out.status.code(), Some(2), "an unknown task must exit 2");
    assert!(String::from_utf8_lossy(&out.stderr).contains("check-boundaries"));
}
