//! Developer tasks: `cargo xtask <task>`.
//!
//! - `test`: the boundary check, then every test of the workspace with cargo-nextest.
//! - `check-boundaries`: fails when a domain crate depends on diesel, actix-web or object_store.
//! - `lint`: rustfmt check and clippy with warnings denied.
//! - `bench`: load benchmark of the real binary (see bench.rs), then the upload benchmark.
//! - `bench upload`: only the upload benchmark (see bench_upload.rs).
//! - `bench lifecycle`: report_posts and work_today (see bench_lifecycle.rs).

mod bench;
mod bench_lifecycle;
mod bench_upload;
mod peers;

use anyhow::{Context, bail};
use std::process::Command;

/// Domain crates: other Rust services link them, so they stay free of adapters.
const DOMAIN_CRATES: &[&str] = &[
    "fleetdesk_kernel",
    "fleetdesk_tenancy",
    "fleetdesk_accounts",
    "fleetdesk_drafts",
    "fleetdesk_inventory",
];
const FORBIDDEN: &[&str] = &[
    "diesel",
    "diesel-async",
    "actix-web",
    "actix-http",
    "object_store",
    "tokio-postgres",
];

const USAGE: &str = "\
usage: cargo xtask <task> [args]

tasks:
  test [nextest args]   the boundary check, then every test of the workspace with cargo-nextest
                        (installs its peers under target/peers first)
  check-boundaries      fails when a domain crate depends on diesel, actix-web or object_store
  lint                  rustfmt check and clippy with warnings denied
  bench [--help]        load benchmark of the real binary, then the upload benchmark
  bench upload          only the upload benchmark
  bench lifecycle       report_posts and work_today
  help                  this text
";

fn main() -> anyhow::Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match args.first().map(String::as_str) {
        Some("test") => {
            check_boundaries()?;
            let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
                .parent()
                .context("xtask sits inside the workspace")?;
            let peers = peers::Peers::install(root)?;
            let mut nextest = Command::new("cargo");
            nextest
                .args(["nextest", "run", "--workspace", "--no-fail-fast"])
                .args(&args[1..]);
            peers.apply(&mut nextest);
            run(&mut nextest)
        }
        Some("check-boundaries") => check_boundaries(),
        Some("lint") => {
            run(Command::new("cargo").args(["fmt", "--all", "--", "--check"]))?;
            run(Command::new("cargo").args([
                "clippy",
                "--workspace",
                "--all-targets",
                "--",
                "-D",
                "warnings",
            ]))
        }
        Some("bench") if args.get(1).is_some_and(|a| a == "upload") => {
            bench_upload::main(&args[2..])
        }
        Some("bench") if args.get(1).is_some_and(|a| a == "lifecycle") => {
            bench_lifecycle::main(&args[2..])
        }
        Some("bench") => bench::main(&args[1..]),
        Some("help" | "--help" | "-h") => {
            print!("{USAGE}");
            Ok(())
        }
        _ => {
            eprint!("{USAGE}");
            std::process::exit(2);
        }
    }
}

fn run(cmd: &mut Command) -> anyhow::Result<()> {
    let status = cmd.status().with_context(|| format!("running {cmd:?}"))?;
    if !status.success() {
        bail!("{cmd:?} failed with {status}");
    }
    Ok(())
}

/// Reads each domain crate's normal dependency tree (with and without features) and refuses
/// any adapter crate in it.
fn check_boundaries() -> anyhow::Result<()> {
    let mut problems = Vec::new();
    for krate in DOMAIN_CRATES {
        for features in [&["--no-default-features"][..], &["--all-features"][..]] {
            let out = Command::new("cargo")
                .args([
                    "tree", "--quiet", "-p", krate, "-e", "normal", "--prefix", "none", "--format",
                    "{p}",
                ])
                .args(features)
                .output()
                .context("running cargo tree")?;
            if !out.status.success() {
                bail!(
                    "cargo tree -p {krate} failed: {}",
                    String::from_utf8_lossy(&out.stderr)
                );
            }
            let tree = String::from_utf8_lossy(&out.stdout);
            for line in tree.lines() {
                let name = line.split_whitespace().next().unwrap_or("");
                if FORBIDDEN.contains(&name) {
                    problems.push(format!(
                        "{krate} ({}) depends on {name}",
                        features.join(" ")
                    ));
                }
            }
        }
    }
    problems.sort();
    problems.dedup();
    if !problems.is_empty() {
        bail!(
            "domain crates must not depend on adapters:\n  {}",
            problems.join("\n  ")
        );
    }
    println!(
        "boundaries: {} domain crates free of {}",
        DOMAIN_CRATES.len(),
        FORBIDDEN.join(", ")
    );
    Ok(())
}
