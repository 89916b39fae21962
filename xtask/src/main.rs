//! Developer tasks: `cargo xtask <task>`.
//!
//! - `test`: the boundary check, then every test of the workspace with cargo-nextest, against
//!   a PostgreSQL of its own (`test_db.rs`) unless `FLEETDESK_TEST_DATABASE_URL` names one.
//! - `check-boundaries`: fails when a crate of ours depends on one of ours outside the layers it
//!   may use, or a domain crate depends on diesel, actix-web or object_store.
//! - `loc`: production lines per crate group (`loc.rs`), as issue closing notes measure them.
//! - `lint`: rustfmt check, rustdoc and clippy with warnings denied.
//! - `bench [upload|lifecycle|today|wiki|events]`: runs the benchmarks of the
//!   `fleetdesk_bench` package (bench/), `cargo run -p fleetdesk_bench -- <args>`.

mod loc;
mod peers;
mod test_db;

use anyhow::{Context, bail};
use std::process::Command;

/// Where a crate of the workspace sits.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Layer {
    /// The shared vocabulary: depends on none of our crates.
    Kernel,
    /// Other Rust services link these, so they stay free of adapters.
    Domain,
    /// `fleetdesk_api`: the operation catalogue and the pipeline.
    Application,
    /// Inbound and outbound adapters.
    Adapter,
    /// `fleetdesk`: the composition and the binary.
    App,
    /// The integration tests.
    Tests,
    /// Developer tools: they run the binary and link none of our crates but each other (and
    /// `fleetdesk_local_pg`, see `EXTRA_EDGES`).
    Tool,
}

/// Every crate of the workspace and its layer. A crate missing here fails the check, so a new
/// crate is placed deliberately.
const CRATES: &[(&str, Layer)] = &[
    ("fleetdesk_kernel", Layer::Kernel),
    // Data only (CC-CEDICT, CC BY-SA 4.0), kept apart so that its licence stays with it.
    ("fleetdesk_cedict", Layer::Kernel),
    ("fleetdesk_tenancy", Layer::Domain),
    ("fleetdesk_accounts", Layer::Domain),
    ("fleetdesk_media", Layer::Domain),
    ("fleetdesk_posts", Layer::Domain),
    ("fleetdesk_drafts", Layer::Domain),
    ("fleetdesk_inventory", Layer::Domain),
    ("fleetdesk_tasks", Layer::Domain),
    ("fleetdesk_decisions", Layer::Domain),
    ("fleetdesk_personas", Layer::Domain),
    ("fleetdesk_cron", Layer::Domain),
    ("fleetdesk_events", Layer::Domain),
    ("fleetdesk_reports", Layer::Domain),
    ("fleetdesk_wiki", Layer::Domain),
    ("fleetdesk_community", Layer::Domain),
    ("fleetdesk_ads", Layer::Domain),
    ("fleetdesk_webhooks", Layer::Domain),
    ("fleetdesk_api", Layer::Application),
    ("fleetdesk_pg", Layer::Adapter),
    ("fleetdesk_storage", Layer::Adapter),
    ("fleetdesk_vendors", Layer::Adapter),
    ("fleetdesk_http", Layer::Adapter),
    ("fleetdesk_mcp", Layer::Adapter),
    ("fleetdesk_dashboard", Layer::Adapter),
    ("fleetdesk_local_pg", Layer::Adapter),
    ("fleetdesk_client", Layer::Adapter),
    ("fleetdesk", Layer::App),
    ("fleetdesk_tests", Layer::Tests),
    ("xtask", Layer::Tool),
    ("fleetdesk_bench", Layer::Tool),
];

/// The layers each layer may depend on, for normal, build and dev dependencies alike: inward
/// only, and nothing but the tests on the app crate.
const LAYER_EDGES: &[(Layer, &[Layer])] = {
    use Layer::*;
    &[
        (Kernel, &[]),
        (Domain, &[Kernel, Domain]),
        (Application, &[Kernel, Domain]),
        (Adapter, &[Kernel, Domain, Application]),
        (App, &[Kernel, Domain, Application, Adapter]),
        (Tests, &[Kernel, Domain, Application, Adapter, App]),
        (Tool, &[Tool]),
    ]
};

/// Edges allowed although their layers are not: the HTTP adapter serves the MCP adapter at /mcp
/// and the dashboard at /dashboard; `cargo xtask test` starts the tests' PostgreSQL as `serve`
/// starts its own.
const EXTRA_EDGES: &[(&str, &str)] = &[
    ("fleetdesk_http", "fleetdesk_mcp"),
    ("fleetdesk_http", "fleetdesk_dashboard"),
    ("xtask", "fleetdesk_local_pg"),
];

/// Edges refused although their layers allow them: the PostgreSQL adapter implements domain
/// ports only (the `Gatekeeper` port lives in tenancy, the round-trip counter in the kernel);
/// the client speaks HTTP and links none of the server.
const REFUSED_EDGES: &[(&str, &str)] = &[
    ("fleetdesk_pg", "fleetdesk_api"),
    ("fleetdesk_client", "fleetdesk_api"),
];

/// Domain crates (the kernel included): their whole dependency tree stays free of adapters.
fn domain_crates() -> impl Iterator<Item = &'static str> {
    CRATES
        .iter()
        .filter(|(_, layer)| matches!(layer, Layer::Kernel | Layer::Domain))
        .map(|(name, _)| *name)
}

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
                        (installs its peers under target/peers first), against a PostgreSQL of
                        its own under target/test-postgres unless FLEETDESK_TEST_DATABASE_URL
                        names one
  check-boundaries      fails when a crate of ours depends on one of ours its layer may not use,
                        or a domain crate depends on diesel, actix-web or object_store
  loc [crate]           production lines per crate group and crate, the largest files, raw SQL;
                        with a crate's short name (pg, api, ads, ..), each of its files
  lint                  rustfmt check, rustdoc and clippy with warnings denied
  bench [--help]        load benchmark of the real binary, then the upload benchmark
  bench upload          only the upload benchmark
  bench lifecycle       report_posts and work_today
  bench today           the person's day, GET /today, at 500 and 50 accounts
  bench wiki            knowledge-base search, GET /wiki/search over 10,000 entries
  bench events          event log: POST /drafts before and after it, the long-poll feed, and
                        webhook delivery of 10,000 events (throughput, delay, exactly once)
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
            let server = test_db::TestServer::start(&peers::target_dir(root))?;
            let mut nextest = Command::new("cargo");
            nextest
                .args(["nextest", "run", "--workspace", "--no-fail-fast"])
                .args(&args[1..]);
            peers.apply(&mut nextest);
            server.apply(&mut nextest);
            // nextest runs no doctests: the client's example is compiled here, as its readers
            // will copy it.
            let ran = run(&mut nextest).and_then(|()| {
                run(Command::new("cargo").args([
                    "test",
                    "--doc",
                    "--quiet",
                    "--package",
                    "fleetdesk_client",
                ]))
            });
            // Whatever the tests did, nothing of theirs stays behind.
            match server.sweep() {
                Ok(left) if !left.is_empty() => eprintln!(
                    "dropped {} test databases and schemas the run left: {}",
                    left.len(),
                    left.join(", ")
                ),
                Ok(_) => {}
                // The tests' failure is the news; the next run sweeps again.
                Err(e) if ran.is_err() => eprintln!("sweeping the test databases: {e:#}"),
                Err(e) => return Err(e),
            }
            ran
        }
        Some("check-boundaries") => check_boundaries(),
        Some("loc") => loc::report(
            std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
                .parent()
                .context("xtask sits inside the workspace")?,
            args.get(1).map(String::as_str),
        ),
        Some("lint") => {
            run(Command::new("cargo").args(["fmt", "--all", "--", "--check"]))?;
            run(Command::new("cargo")
                .args(["doc", "--no-deps", "--workspace", "--quiet"])
                .env("RUSTDOCFLAGS", "-D warnings"))?;
            run(Command::new("cargo").args([
                "clippy",
                "--workspace",
                "--all-targets",
                "--",
                "-D",
                "warnings",
            ]))
        }
        Some("bench") => {
            // The benchmark prints its own error; its exit code is the task's.
            let status = Command::new("cargo")
                .args(["run", "--quiet", "--package", "fleetdesk_bench", "--"])
                .args(&args[1..])
                .status()
                .context("running cargo run --package fleetdesk_bench")?;
            std::process::exit(status.code().unwrap_or(1))
        }
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

/// Checks the edges between our own crates against their layers, then reads each domain
/// crate's normal dependency tree (with and without features) and refuses any adapter crate in
/// it.
fn check_boundaries() -> anyhow::Result<()> {
    let graph = workspace_graph()?;
    let problems = edge_problems(&graph);
    if !problems.is_empty() {
        bail!(
            "crates of the workspace break their layers (see CRATES in xtask/src/main.rs):\n  {}",
            problems.join("\n  ")
        );
    }
    let edges = (graph.iter())
        .flat_map(|(krate, deps)| deps.iter().filter(move |(dep, _)| dep != krate))
        .count();
    println!(
        "boundaries: {} crates, their {edges} edges between each other follow the layers",
        graph.len()
    );

    let mut problems = Vec::new();
    for krate in domain_crates() {
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
        domain_crates().count(),
        FORBIDDEN.join(", ")
    );
    Ok(())
}

/// Each crate of the workspace and its dependencies on crates of the workspace: (name, kind).
type Graph = Vec<(String, Vec<(String, String)>)>;

/// The workspace's own dependency graph, from `cargo metadata` (optional dependencies included).
fn workspace_graph() -> anyhow::Result<Graph> {
    let out = Command::new("cargo")
        .args(["metadata", "--format-version", "1", "--no-deps"])
        .output()
        .context("running cargo metadata")?;
    if !out.status.success() {
        bail!(
            "cargo metadata failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let meta: serde_json::Value =
        serde_json::from_slice(&out.stdout).context("reading cargo metadata")?;
    let packages = meta["packages"]
        .as_array()
        .context("cargo metadata lists no packages")?;
    let ours: Vec<&str> = packages.iter().filter_map(|p| p["name"].as_str()).collect();
    let mut graph = Graph::new();
    for package in packages {
        let name = package["name"]
            .as_str()
            .context("a package without a name")?;
        let mut deps: Vec<(String, String)> = package["dependencies"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|d| {
                let dep = d["name"].as_str().filter(|dep| ours.contains(dep))?;
                let kind = d["kind"].as_str().unwrap_or("normal");
                Some((dep.to_owned(), kind.to_owned()))
            })
            .collect();
        deps.sort();
        deps.dedup();
        graph.push((name.to_owned(), deps));
    }
    Ok(graph)
}

/// Every edge of `graph` its layers (or `EXTRA_EDGES`/`REFUSED_EDGES`) do not allow, and every
/// crate not placed in `CRATES`. A crate's dependency on itself (its own features in its tests)
/// is fine.
fn edge_problems(graph: &[(String, Vec<(String, String)>)]) -> Vec<String> {
    let layer = |name: &str| CRATES.iter().find(|(n, _)| *n == name).map(|(_, l)| *l);
    let unplaced =
        |name: &str| format!("{name} is in no layer: place it in CRATES in xtask/src/main.rs");
    let mut problems = Vec::new();
    for (krate, deps) in graph {
        let Some(from) = layer(krate) else {
            problems.push(unplaced(krate));
            continue;
        };
        for (dep, kind) in deps.iter().filter(|(dep, _)| dep != krate) {
            let Some(to) = layer(dep) else {
                problems.push(unplaced(dep));
                continue;
            };
            let edge = (krate.as_str(), dep.as_str());
            let by_layer = LAYER_EDGES
                .iter()
                .any(|(l, allowed)| *l == from && allowed.contains(&to));
            let allowed =
                EXTRA_EDGES.contains(&edge) || (by_layer && !REFUSED_EDGES.contains(&edge));
            if !allowed {
                problems.push(format!(
                    "{krate} ({from:?}) must not depend on {dep} ({to:?}), {kind} dependency"
                ));
            }
        }
    }
    problems.sort();
    problems.dedup();
    problems
}

#[cfg(test)]
mod tests {
    use super::*;

    fn graph(edges: &[(&str, &[&str])]) -> Graph {
        edges
            .iter()
            .map(|(krate, deps)| {
                let deps = deps.iter().map(|d| (d.to_string(), "normal".to_owned()));
                (krate.to_string(), deps.collect())
            })
            .collect()
    }

    #[test]
    fn the_layered_graph_passes() {
        let ok = graph(&[
            ("fleetdesk_kernel", &[]),
            ("fleetdesk_tenancy", &["fleetdesk_kernel"]),
            (
                "fleetdesk_drafts",
                &["fleetdesk_kernel", "fleetdesk_accounts"],
            ),
            ("fleetdesk_api", &["fleetdesk_kernel", "fleetdesk_tenancy"]),
            ("fleetdesk_pg", &["fleetdesk_kernel", "fleetdesk_tenancy"]),
            ("fleetdesk_http", &["fleetdesk_api", "fleetdesk_mcp"]),
            ("fleetdesk_storage", &["fleetdesk_storage"]),
            (
                "fleetdesk",
                &["fleetdesk_api", "fleetdesk_pg", "fleetdesk_local_pg"],
            ),
            ("fleetdesk_tests", &["fleetdesk", "fleetdesk_pg"]),
            ("xtask", &["fleetdesk_bench"]),
        ]);
        assert_eq!(edge_problems(&ok), Vec::<String>::new());
    }

    #[test]
    fn edges_against_the_layers_are_named() {
        let bad = graph(&[
            ("fleetdesk_kernel", &["fleetdesk_tenancy"]),
            ("fleetdesk_tenancy", &["fleetdesk_api"]),
            ("fleetdesk_accounts", &["fleetdesk_pg"]),
            ("fleetdesk_pg", &["fleetdesk_api"]),
            ("fleetdesk_mcp", &["fleetdesk_http"]),
            ("fleetdesk_storage", &["fleetdesk"]),
            ("xtask", &["fleetdesk_kernel"]),
        ]);
        assert_eq!(
            edge_problems(&bad),
            [
                "fleetdesk_accounts (Domain) must not depend on fleetdesk_pg (Adapter), normal dependency",
                "fleetdesk_kernel (Kernel) must not depend on fleetdesk_tenancy (Domain), normal dependency",
                "fleetdesk_mcp (Adapter) must not depend on fleetdesk_http (Adapter), normal dependency",
                "fleetdesk_pg (Adapter) must not depend on fleetdesk_api (Application), normal dependency",
                "fleetdesk_storage (Adapter) must not depend on fleetdesk (App), normal dependency",
                "fleetdesk_tenancy (Domain) must not depend on fleetdesk_api (Application), normal dependency",
                "xtask (Tool) must not depend on fleetdesk_kernel (Kernel), normal dependency",
            ]
        );
    }

    #[test]
    fn an_unplaced_crate_is_named_as_a_crate_and_as_a_dependency() {
        let unknown = graph(&[
            ("fleetdesk_new", &["fleetdesk_kernel"]),
            ("fleetdesk_api", &["fleetdesk_new"]),
        ]);
        assert_eq!(
            edge_problems(&unknown),
            ["fleetdesk_new is in no layer: place it in CRATES in xtask/src/main.rs"]
        );
    }

    #[test]
    fn every_layer_has_its_rule_and_the_domain_is_kernel_and_domain() {
        for (_, layer) in CRATES {
            assert!(LAYER_EDGES.iter().any(|(l, _)| l == layer), "{layer:?}");
        }
        assert_eq!(
            domain_crates().collect::<Vec<_>>(),
            [
                "fleetdesk_kernel",
                "fleetdesk_cedict",
                "fleetdesk_tenancy",
                "fleetdesk_accounts",
                "fleetdesk_media",
                "fleetdesk_posts",
                "fleetdesk_drafts",
                "fleetdesk_inventory",
                "fleetdesk_tasks",
                "fleetdesk_decisions",
                "fleetdesk_personas",
                "fleetdesk_cron",
                "fleetdesk_events",
                "fleetdesk_reports",
                "fleetdesk_wiki",
                "fleetdesk_community",
                "fleetdesk_ads",
                "fleetdesk_webhooks"
            ]
        );
    }
}
