//! A client generated from the served `/openapi.json` by openapi-python-client: it generates
//! without a warning, builds and installs as a Python package, and calls GET /accounts and
//! POST /heartbeat with its own models (tests/generated_client/).

use fleetdesk_tests::client::Request;
use fleetdesk_tests::peers::{python, python_bin};
use fleetdesk_tests::spawn_app;
use serde_json::Value;
use std::path::Path;
use tokio::process::Command;

const HERE: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/generated_client");

/// Runs a command to completion; panics with its output when it fails.
async fn run(what: &str, cmd: &mut Command) -> String {
    let out = cmd.kill_on_drop(true).output().await.unwrap_or_else(|e| {
        panic!(
            "{what}: could not start ({e}); run `cargo xtask test`, which installs the test peers"
        )
    });
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success(),
        "{what} failed ({}):\n{stdout}\n{stderr}",
        out.status
    );
    stdout
}

#[tokio::test(flavor = "multi_thread")]
async fn a_generated_python_client_installs_and_calls_accounts_and_heartbeat() {
    let app = spawn_app().await;
    let key = app.agent_key("op1");
    let work = app.data_dir.join("generated-client");
    std::fs::create_dir_all(&work).expect("work dir");

    let doc = app.client.send(Request::new("GET", "/openapi.json")).await;
    assert_eq!(doc.status, 200);
    let doc_path = work.join("openapi.json");
    std::fs::write(&doc_path, &doc.body).expect("write the description");

    // Generating fails on any warning: a schema the generator cannot turn into code is a
    // defect of the description.
    let project = work.join("client");
    run(
        "openapi-python-client generate",
        Command::new(python_bin("openapi-python-client"))
            .arg("generate")
            .arg("--path")
            .arg(&doc_path)
            .arg("--config")
            .arg(Path::new(HERE).join("config.yaml"))
            .arg("--output-path")
            .arg(&project)
            .arg("--meta")
            .arg("poetry")
            .arg("--fail-on-warning"),
    )
    .await;
    let pyproject = std::fs::read_to_string(project.join("pyproject.toml")).expect("pyproject");
    assert!(pyproject.contains("version = \"2026.10.7\""), "{pyproject}");

    // Built by its own build backend (poetry-core, a pinned test peer) and installed.
    let site = work.join("site");
    run(
        "pip install of the generated client",
        Command::new(python())
            .args([
                "-m",
                "pip",
                "install",
                "--quiet",
                "--disable-pip-version-check",
                "--no-build-isolation",
                "--no-deps",
                "--target",
            ])
            .arg(&site)
            .arg(&project),
    )
    .await;
    assert!(
        site.join("fleetdesk_client-2026.10.7.dist-info").is_dir(),
        "the installed package carries its version"
    );

    let stdout = run(
        "drive.py",
        Command::new(python())
            .arg(Path::new(HERE).join("drive.py"))
            .arg(&app.base)
            .arg(&key)
            .arg("generated-1")
            .env("PYTHONPATH", &site),
    )
    .await;
    let line = stdout.lines().last().expect("a summary line");
    let summary: Value = serde_json::from_str(line).expect("JSON summary");
    assert_eq!(summary["ok"], true, "{summary}");
    assert_eq!(
        summary["list_accounts"]["parsed"], "AccountList",
        "{summary}"
    );
    let rest = app.client.get("/api/agent/v1/accounts", &key).await.json();
    let mut codes: Vec<&str> = rest["accounts"]
        .as_array()
        .expect("accounts")
        .iter()
        .filter_map(|a| a["code"].as_str())
        .collect();
    codes.sort_unstable();
    assert!(!codes.is_empty());
    assert_eq!(summary["list_accounts"]["codes"], serde_json::json!(codes));
    assert_eq!(
        summary["heartbeat"]["parsed"], "HeartbeatResult",
        "{summary}"
    );
    assert_eq!(summary["heartbeat"]["body"]["run"]["run_id"], "generated-1");
    assert_eq!(
        app.count(&format!(
            "SELECT count(*) AS n FROM agent_runs WHERE run_id = 'generated-1' AND agent_id = '{}' \
             AND summary = 'generated client' AND counts = '{{\"drafts\": 2}}'::jsonb",
            app.agent_id("op1")
        ))
        .await,
        1
    );
}
