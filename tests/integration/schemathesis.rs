//! Schemathesis (pinned in tests/requirements.txt) over every operation of `/openapi.json`,
//! once with an operator's agent key, once with the community agent's key (the only role with
//! the community scopes) and once with a personal key: every check (positive_data_acceptance
//! included), the four phases (examples, coverage, fuzzing, stateful), a fixed seed and a
//! bounded number of examples. The run must find nothing: the description states every rule the
//! server enforces and every status it answers. Settings: tests/schemathesis/ (why they are what
//! they are: docs/decisions.md, "Schemathesis").
//!
//! Below the runs, the input rules the description states, checked directly: unknown body
//! fields, malformed times, the messages of a few refusals.

use fleetdesk_tests::{Client, TestApp, spawn_app};
use serde_json::{Value, json};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// The same cases on every run.
const SEED: &str = "20261007";
/// Test cases per operation and phase: the whole suite (two runs) stays within a few minutes
/// on two cores.
const MAX_EXAMPLES: &str = "25";
/// A run that takes longer than this is stuck.
const RUN_LIMIT: Duration = Duration::from_secs(900);

fn settings_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("schemathesis")
}

/// What one run found, read from its JUnit report and its summary.
#[derive(Debug)]
struct Outcome {
    operations: u64,
    cases: u64,
    failures: u64,
    errors: u64,
    wall: Duration,
    output: String,
}

/// The value of `name="..."` in the first tag that carries it.
fn attribute(xml: &str, tag: &str, name: &str) -> Option<u64> {
    let start = xml.find(&format!("<{tag} "))?;
    let end = start + xml[start..].find('>')?;
    let head = &xml[start..end];
    let at = head.find(&format!(" {name}=\""))? + name.len() + 3;
    head[at..].split('"').next()?.parse().ok()
}

/// "Test cases:\n  3410 generated, ..." in the summary.
fn generated_cases(output: &str) -> Option<u64> {
    let after = &output[output.rfind("Test cases:")?..];
    after
        .split_whitespace()
        .nth(2)
        .filter(|_| after.split_whitespace().nth(3) == Some("generated,"))
        .and_then(|n| n.parse().ok())
}

async fn schemathesis_is_installed() {
    let probe = tokio::process::Command::new(fleetdesk_tests::peers::python())
        .args(["-c", "import schemathesis; print(schemathesis.__version__)"])
        .output()
        .await;
    match probe {
        Ok(out) if out.status.success() => {}
        Ok(out) => panic!(
            "schemathesis is missing: pip install -r tests/requirements.txt (cargo xtask test does) ({})",
            String::from_utf8_lossy(&out.stderr).trim()
        ),
        Err(e) => panic!("python3 is needed to run schemathesis ({e})"),
    }
}

/// Runs the Schemathesis CLI against the app with one key.
async fn run(app: &TestApp, label: &str, key: &str) -> Outcome {
    schemathesis_is_installed().await;
    let dir = std::env::temp_dir().join(format!(
        "fleetdesk-schemathesis-{label}-{}",
        uuid::Uuid::new_v4().simple()
    ));
    std::fs::create_dir_all(&dir).expect("a report directory");
    let junit = dir.join("junit.xml");
    let started = Instant::now();
    let child = tokio::process::Command::new(fleetdesk_tests::peers::python())
        .args(["-m", "schemathesis.cli", "--no-color", "--config-file"])
        .arg(settings_dir().join("schemathesis.toml"))
        .args(["run", &format!("{}/openapi.json", app.base)])
        .args(["--checks", "all"])
        .args(["--phases", "examples,coverage,fuzzing,stateful"])
        .args(["--seed", SEED, "--max-examples", MAX_EXAMPLES])
        .args(["--workers", "2", "--generation-database", "none"])
        .args(["--header", &format!("Authorization: Bearer {key}")])
        .args(["--report", "junit", "--report-junit-path"])
        .arg(&junit)
        .env("SCHEMATHESIS_HOOKS", settings_dir().join("hooks.py"))
        .current_dir(&dir)
        .kill_on_drop(true)
        .output();
    let out = tokio::time::timeout(RUN_LIMIT, child)
        .await
        .unwrap_or_else(|_| panic!("schemathesis ({label}) ran longer than {RUN_LIMIT:?}"))
        .expect("run python3 -m schemathesis.cli");
    let wall = started.elapsed();
    let output = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    let xml = std::fs::read_to_string(&junit)
        .unwrap_or_else(|e| panic!("no JUnit report from schemathesis ({e}):\n{output}"));
    let _ = std::fs::remove_dir_all(&dir);
    let outcome = Outcome {
        operations: attribute(&xml, "testsuites", "tests").expect("tests in the JUnit report"),
        cases: generated_cases(&output).unwrap_or_else(|| panic!("no summary:\n{output}")),
        failures: attribute(&xml, "testsuites", "failures").expect("failures"),
        errors: attribute(&xml, "testsuites", "errors").expect("errors"),
        wall,
        output,
    };
    println!(
        "schemathesis with the {label} key: {} test cases over {} operations, {} failures, {} errors, {:.0} s",
        outcome.cases,
        outcome.operations,
        outcome.failures,
        outcome.errors,
        outcome.wall.as_secs_f64()
    );
    assert!(
        out.status.success() && outcome.failures == 0 && outcome.errors == 0,
        "schemathesis ({label}) found {} failures and {} errors (exit {}):\n{}",
        outcome.failures,
        outcome.errors,
        out.status,
        outcome.output
    );
    outcome
}

/// Every operation of the document was tested.
fn covers_every_operation(app_doc: &Value, outcome: &Outcome) {
    let operations: u64 = app_doc["paths"]
        .as_object()
        .expect("paths")
        .values()
        .map(|item| item.as_object().map_or(0, |m| m.len() as u64))
        .sum();
    assert!(operations >= 32, "only {operations} operations described");
    // The JUnit report has one case per operation, and one for the stateful phase.
    assert!(
        outcome.operations > operations,
        "schemathesis tested {} of {operations} operations",
        outcome.operations
    );
    assert!(outcome.cases > 1000, "only {} test cases", outcome.cases);
}

async fn document(client: &Client) -> Value {
    let res = client
        .send(fleetdesk_tests::client::Request::new(
            "GET",
            "/openapi.json",
        ))
        .await;
    assert_eq!(res.status, 200);
    res.json()
}

#[tokio::test(flavor = "multi_thread")]
async fn schemathesis_finds_nothing_with_an_agent_key() {
    let app = spawn_app().await;
    let doc = document(&app.client).await;
    let outcome = run(&app, "agent", &app.agent_key("op1")).await;
    covers_every_operation(&doc, &outcome);
    app.stop().await;
}

/// The community role reaches the five community operations (the rest answer 403): the spaces
/// Schemathesis draws are unknown (404) unless a response links one.
#[tokio::test(flavor = "multi_thread")]
async fn schemathesis_finds_nothing_with_a_community_key() {
    let app = spawn_app().await;
    let doc = document(&app.client).await;
    let outcome = run(&app, "community", &app.agent_key("bot")).await;
    covers_every_operation(&doc, &outcome);
    app.stop().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn schemathesis_finds_nothing_with_a_personal_key() {
    let app = spawn_app().await;
    // Posts waiting for review, so the Personal API has something to list and move.
    let op1 = app.agent_key("op1");
    for (code, body) in [
        ("TW-T001", "Monday again."),
        ("TW-I001", "Momo asleep."),
        ("TW-L001", "Rain."),
    ] {
        let res = app
            .client
            .post(
                "/api/agent/v1/drafts",
                &op1,
                &json!({"code": code, "body": body}),
            )
            .await;
        assert_eq!(res.status, 201, "{}", res.json());
    }
    let doc = document(&app.client).await;
    let outcome = run(&app, "personal", &app.personal_key("ann@acme.test")).await;
    covers_every_operation(&doc, &outcome);
    app.stop().await;
}

#[test]
fn the_report_readers_read_what_schemathesis_writes() {
    let xml = r#"<?xml version="1.0" encoding="utf-8"?>
<testsuites errors="1" failures="2" skipped="0" tests="33" time="83.7">
  <testsuite name="schemathesis" errors="1" failures="2" tests="33">"#;
    assert_eq!(attribute(xml, "testsuites", "tests"), Some(33));
    assert_eq!(attribute(xml, "testsuites", "failures"), Some(2));
    assert_eq!(attribute(xml, "testsuites", "errors"), Some(1));
    let summary = "Test cases:\n  3410 generated, 3410 passed, 26 skipped\n";
    assert_eq!(generated_cases(summary), Some(3410));
    assert_eq!(generated_cases("no summary"), None);
}

// ---------------------------------------------------------------------------------------------
// The input rules the description states, checked directly

fn assert_invalid(res: &fleetdesk_tests::Response, field: &str) -> Value {
    let v = res.json();
    assert_eq!(res.status, 400, "{v}");
    assert_eq!(v["code"], "invalid_request", "{v}");
    assert_eq!(v["field"], field, "{v}");
    v
}

#[tokio::test(flavor = "multi_thread")]
async fn a_misspelled_body_field_is_refused_naming_it() {
    let app = spawn_app().await;
    let op1 = app.agent_key("op1");
    let res = app
        .client
        .post(
            "/api/agent/v1/drafts",
            &op1,
            &json!({"code": "TW-T001", "body": "Monday again.", "plannedAt": "2026-12-01 09:30"}),
        )
        .await;
    let v = assert_invalid(&res, "plannedAt");
    let message = v["message"].as_str().unwrap_or_default();
    assert!(
        message.contains("planned_at"),
        "names the known fields: {v}"
    );
    assert_eq!(
        app.count("SELECT count(*) AS n FROM posts").await,
        0,
        "nothing was written"
    );

    // In a nested object too, with its path.
    let res = app
        .client
        .post(
            "/api/agent/v1/accounts/TW-T001/state",
            &op1,
            &json!({"state": "paused", "reason": "limit", "occurred_at": "2026-11-21 10:00",
                    "origin": {"platform": "cli", "chanel": "x"}}),
        )
        .await;
    assert_invalid(&res, "origin.chanel");

    // And in an operation that takes no body.
    let res = app
        .client
        .post(
            "/api/agent/v1/posts/00000000-0000-0000-0000-000000000001/unscheduled",
            &op1,
            &json!({"why": 1}),
        )
        .await;
    assert_invalid(&res, "why");
    // An empty object is no field at all.
    let res = app
        .client
        .post(
            "/api/agent/v1/posts/00000000-0000-0000-0000-000000000001/unscheduled",
            &op1,
            &json!({}),
        )
        .await;
    assert_eq!(res.status, 404, "{}", res.json());

    // Every request body of the description says so.
    let doc = document(&app.client).await;
    let mut bodies = 0;
    for item in doc["paths"].as_object().expect("paths").values() {
        for o in item.as_object().expect("path item").values() {
            let reference = &o["requestBody"]["content"]["application/json"]["schema"]["$ref"];
            let Some(name) = reference
                .as_str()
                .and_then(|r| r.strip_prefix("#/components/schemas/"))
            else {
                continue;
            };
            let schema = &doc["components"]["schemas"][name];
            assert_eq!(schema["additionalProperties"], false, "{name}: {schema}");
            bodies += 1;
        }
    }
    assert!(bodies >= 15, "only {bodies} JSON request bodies");
    app.stop().await;
}

async fn mcp_call(client: &Client, key: &str, tool: &str, arguments: Value) -> Value {
    let req = fleetdesk_tests::client::Request::mcp(
        &json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                      "params": {"name": tool, "arguments": arguments}}),
    )
    .bearer(key);
    let res = client.send(req).await;
    assert_eq!(res.status, 200, "{}", res.json());
    res.json()
}

/// The error body of a refused tool call: a JSON-RPC error's data, or an isError result's
/// text.
fn tool_error(answer: &Value) -> Value {
    if let Some(data) = answer["error"].get("data") {
        return data.clone();
    }
    let result = &answer["result"];
    assert_eq!(result["isError"], true, "{answer}");
    let text = result["content"][0]["text"].as_str().expect("text content");
    serde_json::from_str(text).unwrap_or_else(|_| json!({"message": text}))
}

#[tokio::test(flavor = "multi_thread")]
async fn an_unknown_tool_argument_is_refused_but_request_id_is_taken() {
    let app = spawn_app().await;
    let op1 = app.agent_key("op1");
    let answer = mcp_call(
        &app.client,
        &op1,
        "submit_draft",
        json!({"code": "TW-T001", "body": "Monday again.", "plannedAt": "2026-12-01 09:30",
               "request_id": "mcp-unknown-1"}),
    )
    .await;
    let e = tool_error(&answer);
    assert_eq!(e["field"], "plannedAt", "{answer}");
    assert_eq!(e["code"], "invalid_request", "{answer}");

    // request_id plays the Idempotency-Key: it is no unknown field, and a resend replays.
    let args = json!({"code": "TW-T001", "body": "Monday again.", "planned_at": "2026-12-01 09:30",
                      "request_id": "mcp-known-1"});
    let first = mcp_call(&app.client, &op1, "submit_draft", args.clone()).await;
    assert!(first["error"].is_null(), "{first}");
    assert_ne!(first["result"]["isError"], true, "{first}");
    let again = mcp_call(&app.client, &op1, "submit_draft", args).await;
    assert_eq!(
        first["result"]["structuredContent"]["draft"]["id"],
        again["result"]["structuredContent"]["draft"]["id"],
        "{again}"
    );
    assert_eq!(app.count("SELECT count(*) AS n FROM posts").await, 1);

    // A tool that takes no arguments names the one it was given.
    let answer = mcp_call(&app.client, &op1, "list_accounts", json!({"verbose": true})).await;
    assert_eq!(tool_error(&answer)["field"], "verbose", "{answer}");

    // The tool's inputSchema says so.
    let req = fleetdesk_tests::client::Request::mcp(
        &json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"}),
    )
    .bearer(&op1);
    let tools = app.client.send(req).await.json();
    for tool in tools["result"]["tools"].as_array().expect("tools") {
        assert_eq!(
            tool["inputSchema"]["additionalProperties"], false,
            "{}",
            tool["name"]
        );
    }
    app.stop().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_malformed_captured_at_is_invalid_request() {
    let app = spawn_app().await;
    let op1 = app.agent_key("op1");
    for bad in [
        "yesterday",
        "2026-13-45 10:00:00",
        "2026-11-21T10:00:00",
        "2026-11-21 10:00:00.5",
    ] {
        let res = app
            .client
            .post(
                "/api/agent/v1/metrics",
                &op1,
                &json!({"captured_at": bad, "accounts": [{"code": "TW-T001", "followers": 1}]}),
            )
            .await;
        let v = assert_invalid(&res, "captured_at");
        assert!(
            v["message"]
                .as_str()
                .unwrap_or_default()
                .contains("ISO 8601"),
            "{bad}: {v}"
        );
    }
    // Neither posts nor accounts: the description's anyOf, the same 400.
    let res = app
        .client
        .post(
            "/api/agent/v1/metrics",
            &op1,
            &json!({"captured_at": "2026-11-21 10:00", "posts": [], "accounts": []}),
        )
        .await;
    assert_invalid(&res, "posts");
    app.stop().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_report_outside_one_to_two_hundred_posts_counts_items() {
    let app = spawn_app().await;
    let op1 = app.agent_key("op1");
    let item = json!({"code": "TW-T001", "status": "cancelled"});
    for posts in [Vec::new(), vec![item; 201]] {
        let res = app
            .client
            .post("/api/agent/v1/posts/report", &op1, &json!({"posts": posts}))
            .await;
        let v = assert_invalid(&res, "posts");
        let message = v["message"].as_str().unwrap_or_default();
        assert!(message.contains("1-200 items"), "{v}");
        assert!(!message.contains("character"), "{v}");
    }
    app.stop().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_current_code_on_two_platforms_is_not_called_legacy() {
    let app = spawn_app().await;
    let op1 = app.agent_key("op1");
    // TW-T001 (threads) gets a namesake on tiktok: the current code names two accounts.
    let res = app
        .client
        .post(
            "/api/agent/v1/accounts",
            &op1,
            &json!({"persona_id": app.persona_id("Mia"), "platform": "tiktok", "code": "TW-T001"}),
        )
        .await;
    assert_eq!(res.status, 201, "{}", res.json());
    let res = app
        .client
        .post(
            "/api/agent/v1/accounts/TW-T001/state",
            &op1,
            &json!({"state": "paused", "reason": "limit", "occurred_at": "2026-11-21 10:00"}),
        )
        .await;
    let v = res.json();
    assert_eq!(res.status, 409, "{v}");
    assert_eq!(v["code"], "ambiguous_code", "{v}");
    assert_eq!(v["field"], "platform", "{v}");
    let message = v["message"].as_str().unwrap_or_default();
    assert!(!message.contains("legacy"), "{v}");
    assert!(message.contains("several platforms"), "{v}");
    app.stop().await;
}
