//! The request pipeline every endpoint shares: authentication, scopes, the error body, input
//! errors, body size, the rate limit, Idempotency-Key, concurrency, round trips and health.
//! Exercised through real endpoints of the accounts slice.

use base64::Engine;
use fleetdesk_tenancy::rate::COUNTED_SECONDS;
use fleetdesk_tenancy::{IssuedKey, KeyKind};
use fleetdesk_tests::assert::{
    LEASE_TRIPS, assert_error, assert_error_in, case_prefix, plain_trips,
};
use fleetdesk_tests::client::{Request, read_response};
use fleetdesk_tests::{AppOptions, Client, Response, TestApp, spawn_app, spawn_app_with};
use serde_json::{Value, json};
use std::collections::BTreeSet;
use std::sync::Arc;
use tokio::io::{AsyncWriteExt, BufReader};
use tokio::net::TcpStream;

const ACCOUNTS: &str = "/api/agent/v1/accounts";
const HEARTBEAT: &str = "/api/agent/v1/heartbeat";
const MIB: usize = 1024 * 1024;

fn state_path(code: &str) -> String {
    format!("/api/agent/v1/accounts/{code}/state")
}

/// An invalid_request naming `field`.
#[track_caller]
fn assert_invalid(res: &Response, field: &str) -> Value {
    assert_invalid_in("", res, field)
}

/// [`assert_invalid`] for one case of a table: every failure message starts with `case`.
#[track_caller]
fn assert_invalid_in(case: &str, res: &Response, field: &str) -> Value {
    let body = assert_error_in(case, res, 400, "invalid_request");
    let at = case_prefix(case);
    assert_eq!(body["field"].as_str(), Some(field), "{at}body: {body}");
    body
}

/// POSTs each body to its path and expects a 400 invalid_request naming the field. A failure
/// names the path and the body of its case.
async fn assert_each_invalid(app: &TestApp, key: &str, cases: &[(&str, Value, &str)]) {
    for (path, body, field) in cases {
        let res = app.client.post(path, key, body).await;
        assert_invalid_in(&format!("POST {path} {body}"), &res, field);
    }
}

fn members(body: &Value) -> BTreeSet<String> {
    body.as_object()
        .expect("an object")
        .keys()
        .cloned()
        .collect()
}

fn set(names: &[&str]) -> BTreeSet<String> {
    names.iter().map(|s| s.to_string()).collect()
}

/// The body has exactly these members.
#[track_caller]
fn assert_members(body: &Value, names: &[&str]) {
    assert_eq!(members(body), set(names), "body: {body}");
}

#[track_caller]
fn round_trips(res: &Response) -> u32 {
    res.header("x-db-round-trips")
        .expect("X-Db-Round-Trips header")
        .parse()
        .expect("an integer")
}

fn replayed(res: &Response) -> bool {
    res.header("idempotent-replayed") == Some("true")
}

/// The 8-character lookup id of a key `fda_<8>_<43>`.
fn lookup_of(key: &str) -> &str {
    &key[4..12]
}

fn secret_of(key: &str) -> &str {
    &key[13..]
}

/// The message of an auth error must not echo the key or any part of it.
#[track_caller]
fn assert_no_key_material(body: &Value, key: &str) {
    let message = body["message"].as_str().unwrap_or_default();
    let whole = body.to_string();
    for part in [key, secret_of(key), lookup_of(key)] {
        assert!(
            !message.contains(part),
            "the message leaks key material: {message}"
        );
        assert!(
            !whole.contains(part),
            "the error body leaks key material: {whole}"
        );
    }
}

fn heartbeat(run_id: &str) -> Value {
    json!({"run_id": run_id, "summary": "round done", "counts": {"drafts": 2}})
}

fn paused() -> Value {
    json!({"state": "paused", "reason": "x", "occurred_at": "2026-11-21 10:00"})
}

/// POST /heartbeat of `heartbeat(run_id)` under an Idempotency-Key.
async fn heartbeat_idem(client: &Client, key: &str, idem: &str, run_id: &str) -> Response {
    client
        .post_idem(HEARTBEAT, key, idem, &heartbeat(run_id))
        .await
}

/// The `paused()` state report for `code` under an Idempotency-Key.
async fn paused_idem(app: &TestApp, key: &str, code: &str, idem: &str) -> Response {
    app.client
        .post_idem(&state_path(code), key, idem, &paused())
        .await
}

/// POST /heartbeat with a raw body declared as JSON.
fn raw_heartbeat(key: &str, raw: Vec<u8>) -> Request {
    Request::new("POST", HEARTBEAT)
        .bearer(key)
        .header("Content-Type", "application/json")
        .raw(raw)
}

/// A heartbeat padded with whitespace to `size` bytes, sent over a raw connection.
async fn post_padded_heartbeat(app: &TestApp, key: &str, run_id: &str, size: usize) -> Response {
    let mut raw = serde_json::to_vec(&heartbeat(run_id)).unwrap();
    raw.resize(size, b' ');
    let host = app.client.host();
    send_raw(host, raw_heartbeat(key, raw).encode(host)).await
}

/// Sends raw bytes and reads the answer while still writing, ignoring write errors: a server
/// may answer (413) before it has read the whole body.
async fn send_raw(host: &str, bytes: Vec<u8>) -> Response {
    let stream = TcpStream::connect(host).await.expect("connect");
    let (read, mut write) = stream.into_split();
    let writer = tokio::spawn(async move {
        let _ = write.write_all(&bytes).await;
        let _ = write.flush().await;
        // Keep the write half open until the answer was read.
        std::future::pending::<()>().await;
    });
    let mut reader = BufReader::new(read);
    let res = read_response(&mut reader).await.expect("a response");
    writer.abort();
    res
}

/// The number of rows of a table.
async fn rows(app: &TestApp, table: &str) -> i64 {
    app.count(&format!("SELECT count(*) AS n FROM {table}"))
        .await
}

/// The number of account slots with a code.
async fn slots_with_code(app: &TestApp, code: &str) -> i64 {
    app.count(&format!(
        "SELECT count(*) AS n FROM account_slots WHERE code = '{code}'"
    ))
    .await
}

/// The number of generations of the accounts with a code.
async fn generations_with_code(app: &TestApp, code: &str) -> i64 {
    app.count(&format!(
        "SELECT count(*) AS n FROM account_generations g JOIN account_slots s ON s.id = g.slot_id \
         WHERE s.code = '{code}'"
    ))
    .await
}

/// An app whose rate limit is `per_minute` requests a minute per key.
async fn spawn_limited(per_minute: i64) -> TestApp {
    spawn_app_with(AppOptions {
        rate_limit_per_minute: per_minute,
        ..Default::default()
    })
    .await
}

// ---------------------------------------------------------------------------------------------
// Request ids

#[tokio::test(flavor = "multi_thread")]
async fn every_response_carries_a_request_id_even_errors() {
    let app = spawn_app().await;
    let key = app.agent_key("op1");
    let ok = app.client.get("/api/agent/v1/accounts", &key).await;
    assert_eq!(ok.status, 200);
    assert!(ok.header("x-request-id").is_some_and(|v| !v.is_empty()));
    let unknown = app.client.send(Request::new("GET", "/nowhere")).await;
    assert_eq!(unknown.status, 404);
    assert_eq!(
        unknown.json()["request_id"].as_str(),
        unknown.header("x-request-id")
    );
    let wrong_method = app
        .client
        .send(Request::new("DELETE", "/api/agent/v1/accounts"))
        .await;
    assert_eq!(wrong_method.status, 405);
    assert_eq!(
        wrong_method.json()["request_id"].as_str(),
        wrong_method.header("x-request-id")
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn request_ids_differ_between_requests() {
    let app = spawn_app().await;
    let key = app.agent_key("op1");
    let a = app.client.get(ACCOUNTS, &key).await;
    let b = app.client.get(ACCOUNTS, &key).await;
    let c = app.client.send(Request::new("GET", ACCOUNTS)).await;
    let ids: BTreeSet<_> = [&a, &b, &c]
        .iter()
        .map(|r| r.header("x-request-id").expect("id").to_owned())
        .collect();
    assert_eq!(
        ids.len(),
        3,
        "each response has its own request id: {ids:?}"
    );
}

// ---------------------------------------------------------------------------------------------
// Authentication

#[tokio::test(flavor = "multi_thread")]
async fn a_request_without_authorization_is_401_with_exactly_the_error_body() {
    let app = spawn_app().await;
    let res = app.client.send(Request::new("GET", ACCOUNTS)).await;
    let body = assert_error(&res, 401, "unauthorized");
    assert_members(&body, &["code", "message", "request_id"]);

    let post = app
        .client
        .send(Request::new("POST", HEARTBEAT).json(&heartbeat("r1")))
        .await;
    let body = assert_error(&post, 401, "unauthorized");
    assert_members(&body, &["code", "message", "request_id"]);
    assert_eq!(
        rows(&app, "agent_runs").await,
        0,
        "nothing written without a key"
    );

    for value in ["Bearer", "Bearer ", ""] {
        let res = app
            .client
            .send(Request::new("GET", ACCOUNTS).header("Authorization", value))
            .await;
        assert_error_in(
            &format!("Authorization {value:?}"),
            &res,
            401,
            "unauthorized",
        );
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_wrong_scheme_is_401_even_with_a_valid_key() {
    let app = spawn_app().await;
    let key = app.agent_key("op1");
    let basic = base64::engine::general_purpose::STANDARD.encode(format!("op1:{key}"));
    for value in [
        format!("Basic {basic}"),
        format!("Token {key}"),
        key.clone(),
        format!("Bearer{key}"),
    ] {
        let res = app
            .client
            .send(Request::new("GET", ACCOUNTS).header("Authorization", &value))
            .await;
        let body = assert_error(&res, 401, "unauthorized");
        assert_members(&body, &["code", "message", "request_id"]);
        assert_no_key_material(&body, &key);
    }
    // The same key with the right scheme works.
    assert_eq!(app.client.get(ACCOUNTS, &key).await.status, 200);
}

#[tokio::test(flavor = "multi_thread")]
async fn the_bearer_scheme_name_is_case_insensitive() {
    let app = spawn_app().await;
    let key = app.agent_key("op1");
    let res = app
        .client
        .send(Request::new("GET", ACCOUNTS).header("Authorization", &format!("bearer {key}")))
        .await;
    assert_eq!(res.status, 200, "{}", res.text());
}

#[tokio::test(flavor = "multi_thread")]
async fn a_malformed_key_is_401_and_is_not_echoed() {
    let app = spawn_app().await;
    let key = app.agent_key("op1");
    let malformed = [
        key[..key.len() - 1].to_owned(), // secret one char short
        format!("{key}A"),               // secret one char long
        key.replacen("fda_", "fdx_", 1), // unknown prefix
        format!("fda_{}!_{}", &key[4..11], secret_of(&key)), // bad lookup character
        format!("fda_{}", &key[13..]),   // no lookup
        "fda_short_x".to_owned(),
        "not-a-key-at-all".to_owned(),
        format!("{}${}", &key[..20], &key[21..]), // bad secret character
    ];
    for presented in malformed {
        let res = app.client.get(ACCOUNTS, &presented).await;
        let body = assert_error(&res, 401, "unauthorized");
        assert_members(&body, &["code", "message", "request_id"]);
        let message = body["message"].as_str().unwrap();
        assert!(
            !message.contains(&presented),
            "the message echoes the presented key: {message}"
        );
        assert!(
            !message.contains(secret_of(&key)),
            "the message leaks the secret: {message}"
        );
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_well_formed_unknown_key_is_401() {
    let app = spawn_app().await;
    for kind in [KeyKind::Agent, KeyKind::Personal] {
        let unknown = IssuedKey::generate(kind);
        let res = app.client.get(ACCOUNTS, &unknown.full).await;
        let body = assert_error(&res, 401, "unauthorized");
        assert_members(&body, &["code", "message", "request_id"]);
        assert_no_key_material(&body, &unknown.full);
    }
    // A real lookup id with a wrong secret is unknown too.
    let key = app.agent_key("op1");
    let forged = format!(
        "fda_{}_{}",
        lookup_of(&key),
        secret_of(&IssuedKey::generate(KeyKind::Agent).full)
    );
    let body = assert_error(
        &app.client.get(ACCOUNTS, &forged).await,
        401,
        "unauthorized",
    );
    assert_no_key_material(&body, &forged);
    assert_eq!(
        app.client.get(ACCOUNTS, &key).await.status,
        200,
        "the real key still works"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_revoked_key_is_401_for_good_while_the_agents_other_key_works() {
    let app = spawn_app().await;
    let keys = app.agent_keys("op1");
    assert_eq!(keys.len(), 2, "op1 has two keys");
    let (revoked, other) = (&keys[0], &keys[1]);
    assert_eq!(app.client.get(ACCOUNTS, revoked).await.status, 200);
    assert_eq!(app.client.get(ACCOUNTS, other).await.status, 200);

    app.sql(&format!(
        "UPDATE api_keys SET revoked_at = now() WHERE lookup = '{}'",
        lookup_of(revoked)
    ))
    .await;

    for _ in 0..3 {
        let res = app.client.get(ACCOUNTS, revoked).await;
        let body = assert_error(&res, 401, "unauthorized");
        assert_members(&body, &["code", "message", "request_id"]);
        assert_no_key_material(&body, revoked);
        let ok = app.client.get(ACCOUNTS, other).await;
        assert_eq!(
            ok.status,
            200,
            "op1's other key keeps working: {}",
            ok.text()
        );
        assert_eq!(ok.json()["agent"]["name"], "op1");
    }
    // A write with the revoked key is refused and writes nothing.
    let res = app
        .client
        .post(HEARTBEAT, revoked, &heartbeat("after-revoke"))
        .await;
    assert_error(&res, 401, "unauthorized");
    assert_eq!(rows(&app, "agent_runs").await, 0);
    // Still refused after a while.
    tokio::time::sleep(std::time::Duration::from_millis(1100)).await;
    assert_error(
        &app.client.get(ACCOUNTS, revoked).await,
        401,
        "unauthorized",
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn an_archived_workspace_makes_its_agent_keys_401_and_restoring_revives_them() {
    let app = spawn_app().await;
    let (op1, op2, jp1) = (
        app.agent_key("op1"),
        app.agent_key("op2"),
        app.agent_key("jp1"),
    );
    assert_eq!(app.client.get(ACCOUNTS, &op1).await.status, 200);
    app.sql(
        "UPDATE workspaces SET archived_at = now() WHERE name = 'Taiwan' \
         AND organization_id = (SELECT id FROM organizations WHERE name = 'Acme')",
    )
    .await;
    for key in [&op1, &op2] {
        let body = assert_error(&app.client.get(ACCOUNTS, key).await, 401, "unauthorized");
        assert_no_key_material(&body, key);
    }
    assert_error(
        &app.client
            .post(HEARTBEAT, &op1, &heartbeat("archived"))
            .await,
        401,
        "unauthorized",
    );
    assert_eq!(
        app.client.get(ACCOUNTS, &jp1).await.status,
        200,
        "another workspace's agent is unaffected"
    );

    app.sql("UPDATE workspaces SET archived_at = NULL WHERE name = 'Taiwan'")
        .await;
    assert_eq!(
        app.client.get(ACCOUNTS, &op1).await.status,
        200,
        "restoring revives the same keys"
    );
    assert_eq!(rows(&app, "agent_runs").await, 0);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_personal_key_stops_authenticating_when_the_member_leaves() {
    let app = spawn_app().await;
    let ann = app.personal_key("ann@acme.test");
    // While a member: authenticated, but not allowed on the Agent API.
    assert_error(&app.client.get(ACCOUNTS, &ann).await, 403, "forbidden");
    app.sql("UPDATE members SET left_at = now() WHERE person_id = (SELECT id FROM people WHERE email = 'ann@acme.test')").await;
    let body = assert_error(&app.client.get(ACCOUNTS, &ann).await, 401, "unauthorized");
    assert_no_key_material(&body, &ann);

    let cli = app.personal_key("cli@brand.test");
    assert_error(&app.client.get(ACCOUNTS, &cli).await, 403, "forbidden");
    app.sql("UPDATE people SET setup_complete = false WHERE email = 'cli@brand.test'")
        .await;
    assert_error(&app.client.get(ACCOUNTS, &cli).await, 401, "unauthorized");
}

#[tokio::test(flavor = "multi_thread")]
async fn using_a_key_records_when_it_was_last_used() {
    let app = spawn_app().await;
    let keys = app.agent_keys("op1");
    let used = format!(
        "SELECT count(*) AS n FROM api_keys WHERE lookup = '{}' AND last_used_at IS NOT NULL",
        lookup_of(&keys[0])
    );
    let unused = format!(
        "SELECT count(*) AS n FROM api_keys WHERE lookup = '{}' AND last_used_at IS NULL",
        lookup_of(&keys[1])
    );
    assert_eq!(app.count(&used).await, 0);
    assert_eq!(app.client.get(ACCOUNTS, &keys[0]).await.status, 200);
    assert_eq!(app.count(&used).await, 1, "the key used has last_used_at");
    assert_eq!(app.count(&unused).await, 1, "the other key was not used");
    // A refused attempt with a forged secret for the same lookup does not touch the key.
    let forged = format!(
        "fda_{}_{}",
        lookup_of(&keys[1]),
        secret_of(&IssuedKey::generate(KeyKind::Agent).full)
    );
    assert_error(
        &app.client.get(ACCOUNTS, &forged).await,
        401,
        "unauthorized",
    );
    assert_eq!(
        app.count(&unused).await,
        1,
        "a forged secret does not count as a use"
    );
}

// ---------------------------------------------------------------------------------------------
// Scopes

#[tokio::test(flavor = "multi_thread")]
async fn a_community_agent_is_forbidden_on_operator_endpoints() {
    let app = spawn_app().await;
    let bot = app.agent_key("bot");
    let res = app.client.get(ACCOUNTS, &bot).await;
    let body = assert_error(&res, 403, "forbidden");
    assert_members(&body, &["code", "message", "request_id"]);
    assert_no_key_material(&body, &bot);

    let res = app
        .client
        .post(HEARTBEAT, &bot, &heartbeat("bot-run"))
        .await;
    assert_error(&res, 403, "forbidden");
    let res = app
        .client
        .post(&state_path("TW-T001"), &bot, &paused())
        .await;
    assert_error(&res, 403, "forbidden");
    assert_eq!(rows(&app, "agent_runs").await, 0);
    assert_eq!(rows(&app, "account_state_changes").await, 0);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_personal_key_is_forbidden_on_the_agent_api() {
    let app = spawn_app().await;
    let ann = app.personal_key("ann@acme.test");
    let body = assert_error(&app.client.get(ACCOUNTS, &ann).await, 403, "forbidden");
    assert_no_key_material(&body, &ann);
    assert_error(
        &app.client
            .post(HEARTBEAT, &ann, &heartbeat("ann-run"))
            .await,
        403,
        "forbidden",
    );
    let root = app.personal_key("root@example.com");
    assert_error(&app.client.get(ACCOUNTS, &root).await, 403, "forbidden");
    assert_eq!(rows(&app, "agent_runs").await, 0);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_role_change_applies_to_every_key_of_the_agent_at_once() {
    let app = spawn_app().await;
    let keys = app.agent_keys("op1");
    assert_eq!(keys.len(), 2);
    for k in &keys {
        assert_eq!(app.client.get(ACCOUNTS, k).await.status, 200);
    }

    app.sql("UPDATE agents SET role = 'community' WHERE name = 'op1'")
        .await;
    for k in &keys {
        assert_error(&app.client.get(ACCOUNTS, k).await, 403, "forbidden");
        assert_error(
            &app.client.post(HEARTBEAT, k, &heartbeat("demoted")).await,
            403,
            "forbidden",
        );
    }
    assert_eq!(
        app.client.get(ACCOUNTS, &app.agent_key("op2")).await.status,
        200,
        "other agents unaffected"
    );

    app.sql("UPDATE agents SET role = 'operator' WHERE name = 'op1'")
        .await;
    for k in &keys {
        assert_eq!(
            app.client.get(ACCOUNTS, k).await.status,
            200,
            "promoted back without a restart"
        );
    }
    assert_eq!(rows(&app, "agent_runs").await, 0);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_forbidden_request_does_not_occupy_its_idempotency_key() {
    let app = spawn_app().await;
    let key = app.agent_key("op1");
    app.sql("UPDATE agents SET role = 'community' WHERE name = 'op1'")
        .await;
    let res = heartbeat_idem(&app.client, &key, "forbidden-then-ok", "r1").await;
    assert_error(&res, 403, "forbidden");
    assert_eq!(
        rows(&app, "idempotency_keys").await,
        0,
        "a 403 leaves no claim"
    );

    app.sql("UPDATE agents SET role = 'operator' WHERE name = 'op1'")
        .await;
    let res = heartbeat_idem(&app.client, &key, "forbidden-then-ok", "r1").await;
    assert_eq!(res.status, 200, "{}", res.text());
    assert!(!replayed(&res), "the first success is not a replay");
    assert_eq!(rows(&app, "agent_runs").await, 1);
}

// ---------------------------------------------------------------------------------------------
// Input errors

#[tokio::test(flavor = "multi_thread")]
async fn a_json_syntax_error_is_400_naming_the_body() {
    let app = spawn_app().await;
    let key = app.agent_key("op1");
    let raws: [&[u8]; 6] = [
        b"{\"run_id\": ",
        b"{run_id: \"r\"}",
        b"{\"run_id\": \"r\",}",
        b"\xff\xfe",
        b"{\"run_id\": \"r\"} trailing",
        b"{\"run_id\": \"r\"}{}",
    ];
    for raw in raws {
        let res = app.client.send(raw_heartbeat(&key, raw.to_vec())).await;
        let case = format!("POST {HEARTBEAT} {}", String::from_utf8_lossy(raw));
        // The whole body, not a field called `body` (issue 9).
        let body = assert_invalid_in(&case, &res, "(request body)");
        assert_eq!(
            members(&body),
            set(&["code", "message", "request_id", "field"]),
            "{case}: body: {body}"
        );
    }
    assert_eq!(rows(&app, "agent_runs").await, 0);
}

#[tokio::test(flavor = "multi_thread")]
async fn the_key_is_checked_before_the_body_and_the_idempotency_key() {
    let app = spawn_app().await;
    // No key, or an unknown one, with a broken body or a malformed Idempotency-Key: 401, and
    // nothing about the body is told.
    let unknown = fleetdesk_tenancy::IssuedKey::generate(fleetdesk_tenancy::KeyKind::Agent).full;
    for (label, auth) in [("no key", None), ("unknown key", Some(unknown.as_str()))] {
        let mut broken = Request::new("POST", HEARTBEAT).raw(b"{run_id:".to_vec());
        let mut bad_idem = Request::new("POST", HEARTBEAT)
            .header("Idempotency-Key", "has space")
            .json(&json!({"run_id": "r"}));
        if let Some(k) = auth {
            broken = broken.bearer(k);
            bad_idem = bad_idem.bearer(k);
        }
        for (case, req) in [("broken body", broken), ("bad Idempotency-Key", bad_idem)] {
            let res = app.client.send(req).await;
            assert_eq!(
                res.status,
                401,
                "{label}, {case}: {}",
                String::from_utf8_lossy(&res.body)
            );
            assert_eq!(res.code(), "unauthorized", "{label}, {case}");
            assert!(
                res.json().get("field").is_none(),
                "{label}, {case}: {}",
                res.json()
            );
        }
    }
    // With a valid key the same requests are 400 naming the body and the header.
    let key = app.agent_key("op1");
    let res = app
        .client
        .send(raw_heartbeat(&key, b"{run_id:".to_vec()))
        .await;
    assert_invalid_in("broken body", &res, "(request body)");
    let res = app
        .client
        .send(
            Request::new("POST", HEARTBEAT)
                .bearer(&key)
                .header("Idempotency-Key", "has space")
                .json(&json!({"run_id": "r"})),
        )
        .await;
    assert_invalid_in("bad Idempotency-Key", &res, "Idempotency-Key");
    assert_eq!(rows(&app, "agent_runs").await, 0);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_body_that_is_not_an_object_is_400_naming_the_request_body() {
    let app = spawn_app().await;
    let key = app.agent_key("op1");
    assert_each_invalid(
        &app,
        &key,
        &[
            (HEARTBEAT, json!([1, 2]), "(request body)"),
            (HEARTBEAT, json!("run"), "(request body)"),
            (HEARTBEAT, json!(5), "(request body)"),
        ],
    )
    .await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_wrong_type_is_400_naming_the_field() {
    let app = spawn_app().await;
    let key = app.agent_key("op1");
    let res = app
        .client
        .post(HEARTBEAT, &key, &json!({"run_id": 5}))
        .await;
    let body = assert_invalid(&res, "run_id");
    assert_members(&body, &["code", "message", "request_id", "field"]);
    assert!(
        body["message"].as_str().unwrap().contains("run_id"),
        "the message names the field: {body}"
    );

    let state = state_path("TW-T001");
    let mia = app.persona_id("Mia");
    let at = "2026-11-21 10:00";
    assert_each_invalid(
        &app,
        &key,
        &[
            (HEARTBEAT, json!({"run_id": "r", "summary": 7}), "summary"),
            (
                HEARTBEAT,
                json!({"run_id": "r", "counts": "many"}),
                "counts",
            ),
            (
                HEARTBEAT,
                json!({"run_id": "r", "counts": {"drafts": -1}}),
                "counts.drafts",
            ),
            (
                HEARTBEAT,
                json!({"run_id": "r", "counts": {"drafts": 1.5}}),
                "counts.drafts",
            ),
            (
                &state,
                json!({"state": 5, "reason": "x", "occurred_at": at}),
                "state",
            ),
            (
                &state,
                json!({"state": "exploded", "reason": "x", "occurred_at": at}),
                "state",
            ),
            (
                &state,
                json!({"state": "paused", "reason": "x", "occurred_at": "yesterday-ish"}),
                "occurred_at",
            ),
            (
                ACCOUNTS,
                json!({"persona_id": "not-a-uuid", "platform": "threads", "code": "TW-T090"}),
                "persona_id",
            ),
            (
                ACCOUNTS,
                json!({"persona_id": mia, "platform": "myspace", "code": "TW-T090"}),
                "platform",
            ),
        ],
    )
    .await;

    assert_eq!(rows(&app, "agent_runs").await, 0);
    assert_eq!(rows(&app, "account_state_changes").await, 0);
    assert_eq!(slots_with_code(&app, "TW-T090").await, 0);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_missing_required_field_is_400_naming_it() {
    let app = spawn_app().await;
    let key = app.agent_key("op1");
    let res = app
        .client
        .post(HEARTBEAT, &key, &json!({"summary": "s"}))
        .await;
    let body = assert_invalid(&res, "run_id");
    assert!(
        body["message"].as_str().unwrap().contains("run_id"),
        "the message names the field: {body}"
    );
    // No body at all is an empty object: run_id is still what is missing.
    let res = app
        .client
        .send(Request::new("POST", HEARTBEAT).bearer(&key))
        .await;
    assert_invalid(&res, "run_id");

    let state = state_path("TW-T001");
    let mia = app.persona_id("Mia");
    assert_each_invalid(
        &app,
        &key,
        &[
            (
                &state,
                json!({"state": "paused", "reason": "x"}),
                "occurred_at",
            ),
            (
                &state,
                json!({"reason": "x", "occurred_at": "2026-11-21 10:00"}),
                "state",
            ),
            // reason is required for paused.
            (
                &state,
                json!({"state": "paused", "occurred_at": "2026-11-21 10:00"}),
                "reason",
            ),
            (
                ACCOUNTS,
                json!({"platform": "threads", "code": "TW-T091"}),
                "persona_id",
            ),
            (
                ACCOUNTS,
                json!({"persona_id": mia, "code": "TW-T091"}),
                "platform",
            ),
            (
                ACCOUNTS,
                json!({"persona_id": mia, "platform": "threads"}),
                "code",
            ),
        ],
    )
    .await;

    assert_eq!(rows(&app, "agent_runs").await, 0);
    assert_eq!(rows(&app, "account_state_changes").await, 0);
}

#[tokio::test(flavor = "multi_thread")]
async fn heartbeat_limits_hold_at_the_limit_and_one_past_it() {
    let app = spawn_app().await;
    let key = app.agent_key("op1");

    // At the limit: accepted. Characters, not bytes: 120 (2000) three-byte characters are
    // within the limit.
    for (what, body) in [
        (
            "run_id of 120 characters",
            json!({"run_id": "r".repeat(120)}),
        ),
        (
            "run_id of 120 multibyte characters",
            json!({"run_id": "測".repeat(120)}),
        ),
        (
            "summary of 2000 characters",
            json!({"run_id": "s1", "summary": "s".repeat(2000)}),
        ),
        (
            "summary of 2000 multibyte characters",
            json!({"run_id": "s3", "summary": "語".repeat(2000)}),
        ),
    ] {
        let res = app.client.post(HEARTBEAT, &key, &body).await;
        assert_eq!(res.status, 200, "{what}: {}", res.text());
        assert_eq!(res.json()["run"]["run_id"], body["run_id"], "{what}");
    }

    // One past it, empty or blank: refused.
    assert_each_invalid(
        &app,
        &key,
        &[
            (HEARTBEAT, json!({"run_id": "r".repeat(121)}), "run_id"),
            (HEARTBEAT, json!({"run_id": "測".repeat(121)}), "run_id"),
            (HEARTBEAT, json!({"run_id": ""}), "run_id"),
            (HEARTBEAT, json!({"run_id": "   "}), "run_id"),
            (
                HEARTBEAT,
                json!({"run_id": "s2", "summary": "s".repeat(2001)}),
                "summary",
            ),
        ],
    )
    .await;

    assert_eq!(
        rows(&app, "agent_runs").await,
        4,
        "only the four accepted heartbeats were written"
    );
    assert_eq!(
        app.count("SELECT count(*) AS n FROM agent_runs WHERE run_id IN ('s2')")
            .await,
        0
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn deeply_nested_or_null_input_is_400_not_500() {
    let app = spawn_app().await;
    let key = app.agent_key("op1");
    // Far deeper than any parser recursion limit.
    let depth = 100_000;
    let raw = format!(
        "{{\"run_id\":\"r\",\"counts\":{{\"a\":{}{}}}}}",
        "[".repeat(depth),
        "]".repeat(depth)
    );
    let res = app.client.send(raw_heartbeat(&key, raw.into_bytes())).await;
    assert_invalid(&res, "(request body)");
    assert_each_invalid(
        &app,
        &key,
        &[
            // Moderately nested: parses, then the counter is not an integer.
            (
                HEARTBEAT,
                json!({"run_id": "r", "counts": {"a": [[[[[[[[1]]]]]]]]}}),
                "counts.a",
            ),
            // null for a required field names it.
            (HEARTBEAT, json!({"run_id": null}), "run_id"),
        ],
    )
    .await;
    // null for an optional field is absent.
    let res = app
        .client
        .post(
            HEARTBEAT,
            &key,
            &json!({"run_id": "r", "summary": null, "counts": null}),
        )
        .await;
    assert_eq!(res.status, 200, "{}", res.text());
    assert_eq!(rows(&app, "agent_runs").await, 1);
}

/// A NUL character is valid JSON (`\u0000`) but cannot be stored in a PostgreSQL text or jsonb
/// value. It is a bad parameter: 400 naming the field, never a 500.
#[tokio::test(flavor = "multi_thread")]
async fn a_nul_character_in_a_string_is_400_naming_the_field_not_500() {
    let app = spawn_app().await;
    let key = app.agent_key("op1");
    let cases = [
        (HEARTBEAT.to_owned(), json!({"run_id": "r\u{0}x"}), "run_id"),
        (
            HEARTBEAT.to_owned(),
            json!({"run_id": "r", "summary": "a\u{0}b"}),
            "summary",
        ),
        (
            HEARTBEAT.to_owned(),
            json!({"run_id": "r", "counts": {"a\u{0}": 1}}),
            "counts",
        ),
        (
            state_path("TW-T001"),
            json!({"state": "paused", "reason": "a\u{0}b", "occurred_at": "2026-11-21 10:00"}),
            "reason",
        ),
        (
            state_path("TW-T001"),
            json!({"state": "paused", "reason": "r", "occurred_at": "2026-11-21 10:00",
                   "origin": {"platform": "cli", "requester": "x\u{0}"}}),
            "origin.requester",
        ),
        (
            ACCOUNTS.to_owned(),
            json!({"persona_id": app.persona_id("Mia"), "platform": "threads", "code": "TW-T011", "handle": "a\u{0}b"}),
            "handle",
        ),
    ];
    let mut failures = Vec::new();
    for (path, body, field) in &cases {
        let res = app.client.post(path, &key, body).await;
        let ok = res.status == 400
            && res.json()["code"] == "invalid_request"
            && res.json()["field"]
                .as_str()
                .is_some_and(|f| f == *field || f.starts_with(&format!("{field}.")));
        if !ok {
            failures.push(format!(
                "POST {path} {body}: expected 400 naming {field}, got {} {}",
                res.status,
                res.text()
            ));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    assert_eq!(rows(&app, "agent_runs").await, 0);
    assert_eq!(rows(&app, "account_state_changes").await, 0);
    assert_eq!(slots_with_code(&app, "TW-T011").await, 0);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_request_that_failed_on_a_nul_character_does_not_occupy_its_key() {
    let app = spawn_app().await;
    let key = app.agent_key("op1");
    let res = app
        .client
        .post_idem(
            HEARTBEAT,
            &key,
            "nul",
            &json!({"run_id": "r", "summary": "a\u{0}b"}),
        )
        .await;
    assert_ne!(
        res.status / 100,
        2,
        "the NUL request does not succeed: {}",
        res.text()
    );
    let res = app
        .client
        .post_idem(
            HEARTBEAT,
            &key,
            "nul",
            &json!({"run_id": "r", "summary": "ab"}),
        )
        .await;
    assert_eq!(res.status, 200, "{}", res.text());
    assert!(!replayed(&res));
    assert_eq!(
        app.count("SELECT count(*) AS n FROM agent_runs WHERE summary = 'ab'")
            .await,
        1
    );
}

// ---------------------------------------------------------------------------------------------
// Body size

#[tokio::test(flavor = "multi_thread")]
async fn a_body_over_one_mebibyte_is_413_with_the_error_body() {
    let app = spawn_app().await;
    let key = app.agent_key("op1");
    // A valid heartbeat padded with whitespace to one byte past 1 MiB.
    let res = post_padded_heartbeat(&app, &key, "big", MIB + 1).await;
    let body = assert_error(&res, 413, "payload_too_large");
    assert_members(&body, &["code", "message", "request_id"]);
    assert_eq!(rows(&app, "agent_runs").await, 0);

    // Much larger still answers 413, not a dropped connection.
    let res = post_padded_heartbeat(&app, &key, "bigger", 5 * MIB).await;
    assert_error(&res, 413, "payload_too_large");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_body_of_exactly_one_mebibyte_is_accepted() {
    let app = spawn_app().await;
    let key = app.agent_key("op1");
    let res = post_padded_heartbeat(&app, &key, "exact", MIB).await;
    assert_eq!(res.status, 200, "{}", res.text());
    assert_eq!(
        app.count("SELECT count(*) AS n FROM agent_runs WHERE run_id = 'exact'")
            .await,
        1
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_chunked_body_over_one_mebibyte_is_413() {
    let app = spawn_app().await;
    let key = app.agent_key("op1");
    let host = app.client.host().to_owned();
    let mut raw = format!(
        "POST {HEARTBEAT} HTTP/1.1\r\nHost: {host}\r\nAuthorization: Bearer {key}\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n"
    )
    .into_bytes();
    let mut payload = serde_json::to_vec(&heartbeat("chunked")).unwrap();
    payload.resize(MIB + 4096, b' ');
    for chunk in payload.chunks(64 * 1024) {
        raw.extend_from_slice(format!("{:x}\r\n", chunk.len()).as_bytes());
        raw.extend_from_slice(chunk);
        raw.extend_from_slice(b"\r\n");
    }
    raw.extend_from_slice(b"0\r\n\r\n");
    let res = send_raw(&host, raw).await;
    assert_error(&res, 413, "payload_too_large");
    assert_eq!(rows(&app, "agent_runs").await, 0);
}

// ---------------------------------------------------------------------------------------------
// Rate limit

#[tokio::test(flavor = "multi_thread")]
async fn the_rate_limit_answers_429_with_retry_after_and_counts_per_key() {
    let app = spawn_limited(3).await;
    let keys = app.agent_keys("op1");
    let op2 = app.agent_key("op2");

    for i in 0..3 {
        let res = app.client.get(ACCOUNTS, &keys[0]).await;
        assert_eq!(res.status, 200, "request {} of 3: {}", i + 1, res.text());
    }
    for _ in 0..2 {
        let res = app.client.get(ACCOUNTS, &keys[0]).await;
        let body = assert_error(&res, 429, "rate_limited");
        assert_members(&body, &["code", "message", "request_id", "retry_after"]);
        let header: u64 = res
            .header("retry-after")
            .expect("Retry-After header")
            .parse()
            .expect("Retry-After is integer seconds");
        assert!(
            (1..=COUNTED_SECONDS as u64).contains(&header),
            "Retry-After {header}"
        );
        assert_eq!(
            body["retry_after"].as_u64(),
            Some(header),
            "retry_after in the body matches the header"
        );
        assert_no_key_material(&body, &keys[0]);
    }
    // Writes are limited too, and a limited write writes nothing.
    let res = app
        .client
        .post(HEARTBEAT, &keys[0], &heartbeat("limited"))
        .await;
    assert_error(&res, 429, "rate_limited");
    assert_eq!(rows(&app, "agent_runs").await, 0);

    // Other keys have their own budget: op2, and op1's second key.
    let res = app.client.get(ACCOUNTS, &op2).await;
    assert_eq!(res.status, 200, "op2 is not affected: {}", res.text());
    let res = app.client.get(ACCOUNTS, &keys[1]).await;
    assert_eq!(res.status, 200, "the limit is per key: {}", res.text());
}

#[tokio::test(flavor = "multi_thread")]
async fn retrying_after_the_retry_after_seconds_succeeds() {
    let app = spawn_limited(2).await;
    let key = app.agent_key("op1");
    for _ in 0..2 {
        assert_eq!(app.client.get(ACCOUNTS, &key).await.status, 200);
    }
    let limited = app.client.get(ACCOUNTS, &key).await;
    assert_error(&limited, 429, "rate_limited");
    let wait: u64 = limited
        .header("retry-after")
        .expect("Retry-After")
        .parse()
        .expect("integer seconds");
    assert!(
        (1..=COUNTED_SECONDS as u64).contains(&wait),
        "Retry-After {wait}"
    );
    tokio::time::sleep(
        std::time::Duration::from_secs(wait) + std::time::Duration::from_millis(300),
    )
    .await;
    let res = app.client.get(ACCOUNTS, &key).await;
    assert_eq!(
        res.status,
        200,
        "after waiting Retry-After ({wait} s) the request is allowed: {}",
        res.text()
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_rate_limited_request_does_not_occupy_its_idempotency_key() {
    let app = spawn_limited(3).await;
    let keys = app.agent_keys("op1");
    for _ in 0..3 {
        assert_eq!(app.client.get(ACCOUNTS, &keys[0]).await.status, 200);
    }
    let res = heartbeat_idem(&app.client, &keys[0], "limited-key", "r1").await;
    assert_error(&res, 429, "rate_limited");
    assert_eq!(
        rows(&app, "idempotency_keys").await,
        0,
        "a 429 leaves no claim"
    );

    // The same agent through its other key (its own rate budget) may use the key now.
    let res = heartbeat_idem(&app.client, &keys[1], "limited-key", "r1").await;
    assert_eq!(res.status, 200, "{}", res.text());
    assert!(!replayed(&res));
    let again = heartbeat_idem(&app.client, &keys[1], "limited-key", "r1").await;
    assert_eq!(again.status, 200);
    assert!(replayed(&again), "the success occupies the key");
}

#[tokio::test(flavor = "multi_thread")]
async fn the_rate_limit_is_shared_by_two_running_instances() {
    let app = spawn_limited(3).await;
    let (second, handle) = app.another_instance(3).await;
    let key = app.agent_key("op1");

    let a1 = app.client.get(ACCOUNTS, &key).await;
    let b1 = second.get(ACCOUNTS, &key).await;
    let a2 = app.client.get(ACCOUNTS, &key).await;
    assert_eq!(
        (a1.status, b1.status, a2.status),
        (200, 200, 200),
        "three requests within the limit of 3"
    );
    assert_eq!(
        b1.json()["agent"]["name"],
        "op1",
        "the second instance serves the same data"
    );

    let b2 = second.get(ACCOUNTS, &key).await;
    let body = assert_error(&b2, 429, "rate_limited");
    assert!(
        b2.header("retry-after").is_some(),
        "Retry-After on the second instance"
    );
    assert!(
        body["retry_after"]
            .as_u64()
            .is_some_and(|s| (1..=COUNTED_SECONDS as u64).contains(&s))
    );
    let a3 = app.client.get(ACCOUNTS, &key).await;
    assert_error(&a3, 429, "rate_limited");

    // Another key is unaffected on either instance.
    let op2 = app.agent_key("op2");
    assert_eq!(second.get(ACCOUNTS, &op2).await.status, 200);
    assert_eq!(app.client.get(ACCOUNTS, &op2).await.status, 200);
    handle.stop(true).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn an_idempotency_key_is_honoured_across_instances() {
    let app = spawn_app().await;
    let (second, handle) = app.another_instance(10_000).await;
    let key = app.agent_key("op1");
    let first = heartbeat_idem(&app.client, &key, "cross-instance", "r1").await;
    assert_eq!(first.status, 200, "{}", first.text());
    let again = heartbeat_idem(&second, &key, "cross-instance", "r1").await;
    assert_eq!(again.status, 200);
    assert!(
        replayed(&again),
        "the second instance replays the first instance's result"
    );
    assert_eq!(again.json(), first.json());
    let other = heartbeat_idem(&second, &key, "cross-instance", "r2").await;
    assert_error(&other, 422, "idempotency_mismatch");
    assert_eq!(rows(&app, "agent_runs").await, 1);
    handle.stop(true).await;
}

// ---------------------------------------------------------------------------------------------
// Idempotency-Key

#[tokio::test(flavor = "multi_thread")]
async fn a_resent_heartbeat_is_replayed_without_running_again() {
    let app = spawn_app().await;
    let keys = app.agent_keys("op1");
    let first = heartbeat_idem(&app.client, &keys[0], "hb-1", "run-1").await;
    assert_eq!(first.status, 200, "{}", first.text());
    assert!(
        first.header("idempotent-replayed").is_none(),
        "the first answer is not marked replayed"
    );
    tokio::time::sleep(std::time::Duration::from_millis(50)).await;

    let again = heartbeat_idem(&app.client, &keys[0], "hb-1", "run-1").await;
    assert_eq!(again.status, first.status);
    assert_eq!(again.header("idempotent-replayed"), Some("true"));
    assert_eq!(again.json(), first.json(), "the replay is the first result");
    assert_ne!(
        again.header("x-request-id"),
        first.header("x-request-id"),
        "a replay is still its own request"
    );

    // The same agent through its other key: same agent, same key space.
    let other_key = heartbeat_idem(&app.client, &keys[1], "hb-1", "run-1").await;
    assert_eq!(other_key.status, 200);
    assert!(
        replayed(&other_key),
        "Idempotency-Key is scoped to the agent, not the key"
    );
    assert_eq!(other_key.json(), first.json());

    assert_eq!(rows(&app, "agent_runs").await, 1);
    assert_eq!(
        app.count("SELECT count(*) AS n FROM agent_runs WHERE recorded_at = created_at")
            .await,
        1,
        "the run was never updated again: the replays did not run the heartbeat"
    );
    assert_eq!(rows(&app, "idempotency_keys").await, 1);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_resent_state_report_is_replayed_and_written_once() {
    let app = spawn_app().await;
    let key = app.agent_key("op1");
    let path = state_path("TW-T001");
    let first = paused_idem(&app, &key, "TW-T001", "state-1").await;
    assert_eq!(first.status, 200, "{}", first.text());
    assert!(!replayed(&first));
    assert_eq!(first.json()["result"], "changed");

    let again = paused_idem(&app, &key, "TW-T001", "state-1").await;
    assert_eq!(again.status, 200);
    assert!(replayed(&again));
    assert_eq!(
        again.json(),
        first.json(),
        "the replay says changed, as the first did"
    );
    assert_eq!(rows(&app, "account_state_changes").await, 1);

    // A ban opens one decision; its replay opens none.
    let ban = json!({"state": "banned", "reason": "terms", "occurred_at": "2026-11-21 11:00"});
    let banned = app.client.post_idem(&path, &key, "state-2", &ban).await;
    assert_eq!(banned.status, 200, "{}", banned.text());
    assert!(
        banned.json()["decision"]["id"].is_string(),
        "a ban opens a decision: {}",
        banned.text()
    );
    let banned_again = app.client.post_idem(&path, &key, "state-2", &ban).await;
    assert!(replayed(&banned_again));
    assert_eq!(banned_again.json(), banned.json());
    assert_eq!(rows(&app, "account_state_changes").await, 2);
    assert_eq!(rows(&app, "decisions").await, 1);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_resent_account_creation_is_replayed_with_its_201() {
    let app = spawn_app().await;
    let key = app.agent_key("op1");
    let body =
        json!({"persona_id": app.persona_id("Mia"), "platform": "threads", "code": "TW-T080"});
    let first = app.client.post_idem(ACCOUNTS, &key, "add-1", &body).await;
    assert_eq!(first.status, 201, "{}", first.text());
    assert_eq!(first.json()["created"], true);
    let again = app.client.post_idem(ACCOUNTS, &key, "add-1", &body).await;
    assert_eq!(again.status, 201, "a replay has the first status");
    assert!(replayed(&again));
    assert_eq!(again.json(), first.json());
    assert_eq!(slots_with_code(&app, "TW-T080").await, 1);
    assert_eq!(generations_with_code(&app, "TW-T080").await, 1);
}

#[tokio::test(flavor = "multi_thread")]
async fn json_member_order_does_not_make_different_content() {
    let app = spawn_app().await;
    let key = app.agent_key("op1");
    let send = |raw: &'static str| {
        Request::new("POST", HEARTBEAT)
            .bearer(&key)
            .header("Idempotency-Key", "order")
            .header("Content-Type", "application/json")
            .raw(raw.as_bytes().to_vec())
    };
    let first = app
        .client
        .send(send(
            r#"{"run_id":"r","summary":"s","counts":{"a":1,"b":2}}"#,
        ))
        .await;
    assert_eq!(first.status, 200, "{}", first.text());
    let again = app
        .client
        .send(send(
            r#"{ "counts": {"b": 2, "a": 1}, "summary": "s", "run_id": "r" }"#,
        ))
        .await;
    assert_eq!(again.status, 200, "{}", again.text());
    assert!(
        replayed(&again),
        "the same JSON in another order is the same content"
    );
    assert_eq!(again.json(), first.json());
}

#[tokio::test(flavor = "multi_thread")]
async fn same_key_with_different_content_is_422_idempotency_mismatch() {
    let app = spawn_app().await;
    let key = app.agent_key("op1");
    let first = heartbeat_idem(&app.client, &key, "mismatch", "r1").await;
    assert_eq!(first.status, 200, "{}", first.text());

    let different = json!({"run_id": "r1", "summary": "another summary", "counts": {"drafts": 2}});
    let res = app
        .client
        .post_idem(HEARTBEAT, &key, "mismatch", &different)
        .await;
    let body = assert_error(&res, 422, "idempotency_mismatch");
    assert_members(&body, &["code", "message", "request_id"]);
    assert!(!replayed(&res));
    // The same key on another endpoint is different content too.
    let res = paused_idem(&app, &key, "TW-T001", "mismatch").await;
    assert_error(&res, 422, "idempotency_mismatch");

    // Nothing of the mismatched requests was applied.
    assert_eq!(
        app.count("SELECT count(*) AS n FROM agent_runs WHERE summary = 'round done'")
            .await,
        1
    );
    assert_eq!(rows(&app, "account_state_changes").await, 0);

    // The first content is still replayed.
    let again = heartbeat_idem(&app.client, &key, "mismatch", "r1").await;
    assert!(replayed(&again));
    assert_eq!(again.json(), first.json());
}

#[tokio::test(flavor = "multi_thread")]
async fn a_different_path_with_the_same_key_is_a_mismatch() {
    let app = spawn_app().await;
    let key = app.agent_key("op1");
    let first = paused_idem(&app, &key, "TW-T001", "path").await;
    assert_eq!(first.status, 200, "{}", first.text());
    let res = paused_idem(&app, &key, "TW-I001", "path").await;
    assert_error(&res, 422, "idempotency_mismatch");
    assert_eq!(rows(&app, "account_state_changes").await, 1);
}

#[tokio::test(flavor = "multi_thread")]
async fn idempotency_keys_are_scoped_per_agent() {
    let app = spawn_app().await;
    let op1 = app.agent_key("op1");
    let op2 = app.agent_key("op2");
    let first = heartbeat_idem(&app.client, &op1, "shared-string", "op1-run").await;
    assert_eq!(first.status, 200, "{}", first.text());

    // op2 reuses the string with other content: no mismatch, its own result.
    let res = heartbeat_idem(&app.client, &op2, "shared-string", "op2-run").await;
    assert_eq!(res.status, 200, "{}", res.text());
    assert!(!replayed(&res));
    assert_eq!(res.json()["run"]["run_id"], "op2-run");

    // And with the same content as op1: not a replay of op1's result.
    let same = heartbeat_idem(&app.client, &op1, "same-content", "common").await;
    let res = heartbeat_idem(&app.client, &op2, "same-content", "common").await;
    assert_eq!(res.status, 200);
    assert!(!replayed(&res), "op2 does not get op1's stored result");
    assert_ne!(res.json()["run"]["id"], same.json()["run"]["id"]);

    let op2_id = app.agent_id("op2");
    assert_eq!(
        app.count(&format!(
            "SELECT count(*) AS n FROM agent_runs WHERE agent_id = '{op2_id}'"
        ))
        .await,
        2
    );
    assert_eq!(rows(&app, "agent_runs").await, 4);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_failed_request_does_not_occupy_its_idempotency_key() {
    let app = spawn_app().await;
    let key = app.agent_key("op1");

    // 404 on an unknown code, then the right code with the same key.
    let res = paused_idem(&app, &key, "TW-X999", "fix-404").await;
    assert_error(&res, 404, "not_found");
    assert_eq!(
        rows(&app, "idempotency_keys").await,
        0,
        "a 404 leaves no claim"
    );
    let res = paused_idem(&app, &key, "TW-T001", "fix-404").await;
    assert_eq!(res.status, 200, "{}", res.text());
    assert!(!replayed(&res));
    assert_eq!(res.json()["result"], "changed");

    // 400 (reason missing), then fixed.
    let no_reason = json!({"state": "quarantined", "occurred_at": "2026-11-21 10:00"});
    let res = app
        .client
        .post_idem(&state_path("TW-I001"), &key, "fix-400", &no_reason)
        .await;
    assert_invalid(&res, "reason");
    let fixed =
        json!({"state": "quarantined", "reason": "review", "occurred_at": "2026-11-21 10:00"});
    let res = app
        .client
        .post_idem(&state_path("TW-I001"), &key, "fix-400", &fixed)
        .await;
    assert_eq!(res.status, 200, "{}", res.text());
    assert!(!replayed(&res));

    // 400 on a body that does not parse, then fixed.
    let res = app
        .client
        .post_idem(HEARTBEAT, &key, "fix-type", &json!({"run_id": 5}))
        .await;
    assert_invalid(&res, "run_id");
    let res = heartbeat_idem(&app.client, &key, "fix-type", "typed").await;
    assert_eq!(res.status, 200, "{}", res.text());
    assert!(!replayed(&res));

    // 422 rejected (a code of another persona: TW-T002 is Leo's), then fixed.
    let mia = app.persona_id("Mia");
    let taken = json!({"persona_id": mia, "platform": "threads", "code": "TW-T002"});
    let res = app
        .client
        .post_idem(ACCOUNTS, &key, "fix-422", &taken)
        .await;
    assert_error(&res, 422, "rejected");
    let free = json!({"persona_id": mia, "platform": "threads", "code": "TW-T070"});
    let res = app.client.post_idem(ACCOUNTS, &key, "fix-422", &free).await;
    assert_eq!(res.status, 201, "{}", res.text());
    assert!(!replayed(&res));

    assert_eq!(rows(&app, "account_state_changes").await, 2);
    assert_eq!(
        app.count("SELECT count(*) AS n FROM idempotency_keys WHERE state = 'running'")
            .await,
        0
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn invalid_idempotency_keys_are_400_naming_the_header() {
    let app = spawn_app().await;
    let key = app.agent_key("op1");
    let too_long = "k".repeat(201);
    for bad in ["", too_long.as_str(), "ключ", "two words", "tab\there"] {
        let res = heartbeat_idem(&app.client, &key, bad, "r1").await;
        let body = assert_invalid_in(&format!("heartbeat, key {bad:?}"), &res, "Idempotency-Key");
        assert_eq!(
            members(&body),
            set(&["code", "message", "request_id", "field"]),
            "key {bad:?}: {body}"
        );
        let res = paused_idem(&app, &key, "TW-T001", bad).await;
        assert_invalid_in(
            &format!("state report, key {bad:?}"),
            &res,
            "Idempotency-Key",
        );
    }
    assert_eq!(
        rows(&app, "agent_runs").await,
        0,
        "nothing runs with an invalid key"
    );
    assert_eq!(rows(&app, "account_state_changes").await, 0);
    assert_eq!(rows(&app, "idempotency_keys").await, 0);

    // 1 and 200 visible ASCII characters are fine, punctuation included.
    let longest: String = (0..200).map(|i| (b'!' + (i % 94) as u8) as char).collect();
    assert_eq!(longest.len(), 200);
    for good in ["k", longest.as_str()] {
        let run = format!("run-{}", good.len());
        let res = heartbeat_idem(&app.client, &key, good, &run).await;
        assert_eq!(
            res.status,
            200,
            "key of {} chars: {}",
            good.len(),
            res.text()
        );
        assert!(!replayed(&res));
        let again = heartbeat_idem(&app.client, &key, good, &run).await;
        assert!(
            replayed(&again),
            "key of {} chars is remembered",
            good.len()
        );
    }
    assert_eq!(rows(&app, "agent_runs").await, 2);
}

#[tokio::test(flavor = "multi_thread")]
async fn an_idempotency_key_occupies_for_24_hours() {
    let app = spawn_app().await;
    let key = app.agent_key("op1");
    let first = heartbeat_idem(&app.client, &key, "day-key", "r1").await;
    assert_eq!(first.status, 200, "{}", first.text());

    app.sql("UPDATE idempotency_keys SET created_at = now() - interval '23 hours'")
        .await;
    let res = heartbeat_idem(&app.client, &key, "day-key", "r2").await;
    assert_error(&res, 422, "idempotency_mismatch");
    let res = heartbeat_idem(&app.client, &key, "day-key", "r1").await;
    assert!(replayed(&res), "still replayed after 23 hours");

    app.sql("UPDATE idempotency_keys SET created_at = now() - interval '25 hours'")
        .await;
    let res = heartbeat_idem(&app.client, &key, "day-key", "r2").await;
    assert_eq!(
        res.status,
        200,
        "after 24 hours the key is free: {}",
        res.text()
    );
    assert!(!replayed(&res));
    assert_eq!(res.json()["run"]["run_id"], "r2");
    assert_eq!(rows(&app, "agent_runs").await, 2);

    // And it now holds the new content.
    let res = heartbeat_idem(&app.client, &key, "day-key", "r1").await;
    assert_error(&res, 422, "idempotency_mismatch");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_request_still_processing_makes_a_resend_409_idempotency_in_progress() {
    let app = spawn_app().await;
    let key = app.agent_key("op1");
    let first = heartbeat_idem(&app.client, &key, "slow", "r1").await;
    assert_eq!(first.status, 200, "{}", first.text());
    // Put the claim back to the state it had while the first request was running.
    app.sql("UPDATE idempotency_keys SET state = 'running', status = NULL, response = NULL")
        .await;
    let res = heartbeat_idem(&app.client, &key, "slow", "r1").await;
    let body = assert_error(&res, 409, "idempotency_in_progress");
    assert_members(&body, &["code", "message", "request_id"]);
    assert!(!replayed(&res));
    // Different content while it runs is still a mismatch.
    let res = heartbeat_idem(&app.client, &key, "slow", "r2").await;
    assert_error(&res, 422, "idempotency_mismatch");
    // The 409 did not take the claim away from the request that holds it.
    assert_eq!(
        app.count("SELECT count(*) AS n FROM idempotency_keys WHERE state = 'running'")
            .await,
        1
    );
    assert_eq!(rows(&app, "agent_runs").await, 1);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_claim_abandoned_by_a_crashed_request_does_not_block_the_key_for_a_day() {
    let app = spawn_app().await;
    let key = app.agent_key("op1");
    let first = heartbeat_idem(&app.client, &key, "crashed", "r1").await;
    assert_eq!(first.status, 200, "{}", first.text());
    // As if a request had claimed the key an hour ago and its process died (no result, no 2xx).
    app.sql(
        "UPDATE idempotency_keys SET state = 'running', status = NULL, response = NULL, \
         created_at = now() - interval '1 hour'",
    )
    .await;
    let res = heartbeat_idem(&app.client, &key, "crashed", "r1").await;
    assert_eq!(
        res.status,
        200,
        "the retry the 500 message asks for works: {}",
        res.text()
    );
    assert!(!replayed(&res));
    let again = heartbeat_idem(&app.client, &key, "crashed", "r1").await;
    assert!(replayed(&again), "the retry's success now occupies the key");
    assert_eq!(again.json(), res.json());
}

// ---------------------------------------------------------------------------------------------
// Concurrency

async fn fire_concurrently(
    app: &TestApp,
    n: usize,
    path: String,
    key: String,
    idem: Option<&str>,
    body: Value,
) -> Vec<Response> {
    let barrier = Arc::new(tokio::sync::Barrier::new(n));
    let mut tasks = Vec::new();
    for _ in 0..n {
        let client = app.client.clone();
        let (path, key, body, barrier) = (path.clone(), key.clone(), body.clone(), barrier.clone());
        let idem = idem.map(str::to_owned);
        tasks.push(tokio::spawn(async move {
            barrier.wait().await;
            match idem {
                Some(idem) => client.post_idem(&path, &key, &idem, &body).await,
                None => client.post(&path, &key, &body).await,
            }
        }));
    }
    let mut out = Vec::new();
    for t in tasks {
        out.push(t.await.expect("request task"));
    }
    out
}

/// Every answer is the success status (first or replayed) or 409 idempotency_in_progress;
/// exactly one ran; every success has the same body.
#[track_caller]
fn assert_one_ran(responses: &[Response], success: u16) {
    let mut bodies = BTreeSet::new();
    let mut ran = 0;
    let mut in_progress = 0;
    for res in responses {
        if res.status == success {
            bodies.insert(res.json().to_string());
            if !replayed(res) {
                ran += 1;
            }
        } else {
            assert_error(res, 409, "idempotency_in_progress");
            in_progress += 1;
        }
    }
    assert_eq!(
        ran, 1,
        "exactly one request ran (the others replayed or were in progress); {in_progress} in progress"
    );
    assert_eq!(
        bodies.len(),
        1,
        "all successes have the same body: {bodies:?}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn concurrent_state_reports_with_one_key_write_once() {
    let app = spawn_app().await;
    let key = app.agent_key("op1");
    let responses = fire_concurrently(
        &app,
        20,
        state_path("TW-T001"),
        key.clone(),
        Some("concurrent-state"),
        paused(),
    )
    .await;
    eprintln!(
        "measured: statuses {:?}",
        responses
            .iter()
            .map(|r| (r.status, replayed(r)))
            .collect::<Vec<_>>()
    );
    assert_one_ran(&responses, 200);
    assert_eq!(rows(&app, "account_state_changes").await, 1);
    let first = responses
        .iter()
        .find(|r| r.status == 200 && !replayed(r))
        .unwrap();
    assert_eq!(first.json()["result"], "changed");

    // Afterwards the key replays.
    let again = paused_idem(&app, &key, "TW-T001", "concurrent-state").await;
    assert_eq!(again.status, 200);
    assert!(replayed(&again));
    assert_eq!(again.json(), first.json());
    assert_eq!(
        app.count("SELECT count(*) AS n FROM idempotency_keys WHERE state = 'done'")
            .await,
        1
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn concurrent_heartbeats_with_one_key_run_once() {
    let app = spawn_app().await;
    let key = app.agent_key("op1");
    let responses = fire_concurrently(
        &app,
        20,
        HEARTBEAT.to_owned(),
        key,
        Some("concurrent-hb"),
        heartbeat("r1"),
    )
    .await;
    assert_one_ran(&responses, 200);
    assert_eq!(rows(&app, "agent_runs").await, 1);
    assert_eq!(
        app.count("SELECT count(*) AS n FROM agent_runs WHERE recorded_at = created_at")
            .await,
        1,
        "the heartbeat ran once"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn concurrent_account_creations_with_one_key_create_one_slot() {
    let app = spawn_app().await;
    let key = app.agent_key("op1");
    let body =
        json!({"persona_id": app.persona_id("Mia"), "platform": "threads", "code": "TW-T050"});
    let responses = fire_concurrently(
        &app,
        20,
        ACCOUNTS.to_owned(),
        key,
        Some("concurrent-add"),
        body,
    )
    .await;
    assert_one_ran(&responses, 201);
    assert_eq!(slots_with_code(&app, "TW-T050").await, 1);
    assert_eq!(generations_with_code(&app, "TW-T050").await, 1);
}

#[tokio::test(flavor = "multi_thread")]
async fn concurrent_different_contents_with_one_key_run_exactly_one() {
    let app = spawn_app().await;
    let key = app.agent_key("op1");
    let barrier = Arc::new(tokio::sync::Barrier::new(20));
    let mut tasks = Vec::new();
    for i in 0..20 {
        let client = app.client.clone();
        let (key, barrier) = (key.clone(), barrier.clone());
        tasks.push(tokio::spawn(async move {
            barrier.wait().await;
            let run = if i % 2 == 0 { "even" } else { "odd" };
            (run, heartbeat_idem(&client, &key, "contested", run).await)
        }));
    }
    let mut winners = BTreeSet::new();
    let mut ran = 0;
    for t in tasks {
        let (run, res) = t.await.expect("task");
        match res.status {
            200 => {
                assert_eq!(
                    res.json()["run"]["run_id"],
                    run,
                    "a success is for its own content"
                );
                winners.insert(run);
                if !replayed(&res) {
                    ran += 1;
                }
            }
            409 => {
                assert_error(&res, 409, "idempotency_in_progress");
            }
            _ => {
                assert_error(&res, 422, "idempotency_mismatch");
            }
        }
    }
    assert_eq!(ran, 1, "exactly one request ran");
    assert_eq!(winners.len(), 1, "only one content succeeded: {winners:?}");
    assert_eq!(rows(&app, "agent_runs").await, 1);
}

#[tokio::test(flavor = "multi_thread")]
async fn concurrent_account_creations_without_a_key_create_one_slot() {
    let app = spawn_app().await;
    let key = app.agent_key("op1");
    let body =
        json!({"persona_id": app.persona_id("Mia"), "platform": "tiktok", "code": "TW-K050"});
    let responses = fire_concurrently(&app, 20, ACCOUNTS.to_owned(), key, None, body).await;
    let created = responses.iter().filter(|r| r.status == 201).count();
    let existing = responses.iter().filter(|r| r.status == 200).count();
    assert_eq!(
        (created, existing),
        (1, 19),
        "one 201, the rest 200 created false: {:?}",
        responses.iter().map(|r| r.status).collect::<Vec<_>>()
    );
    let slot_ids: BTreeSet<_> = responses
        .iter()
        .map(|r| r.json()["slot_id"].to_string())
        .collect();
    assert_eq!(slot_ids.len(), 1, "every answer names the same slot");
    assert!(
        responses
            .iter()
            .filter(|r| r.status == 200)
            .all(|r| r.json()["created"] == false)
    );
    assert_eq!(slots_with_code(&app, "TW-K050").await, 1);
}

// ---------------------------------------------------------------------------------------------
// Round trips

#[tokio::test(flavor = "multi_thread")]
async fn listing_accounts_takes_two_round_trips_then_one_and_two_more_when_it_leases() {
    let app = spawn_app().await;
    let key = app.agent_key("op1");
    let mut trips = Vec::new();
    for _ in 0..3 {
        let res = app.client.get(ACCOUNTS, &key).await;
        assert_eq!(res.status, 200);
        assert!(!res.json()["accounts"].as_array().unwrap().is_empty());
        trips.push(round_trips(&res));
    }
    eprintln!("measured: GET /accounts = {trips:?} round trips");
    // The key, then the list, which the instance keeps (tests/integration/kept_answers.rs):
    // the next requests are the key alone. The first request leases a token, the second two.
    assert_eq!(trips[0], 2 + LEASE_TRIPS, "the first request leases");
    assert_eq!(
        trips[1],
        1 + LEASE_TRIPS,
        "the second leases again: {trips:?}"
    );
    assert!(
        trips[2] == 1 || trips[2] == 1 + LEASE_TRIPS,
        "the third request spends the second lease's other token unless it lapsed: {trips:?}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_heartbeat_takes_at_most_five_round_trips_and_a_replay_two() {
    let app = spawn_app().await;
    let key = app.agent_key("op1");
    // Leases for the key's next requests: 1, 2, then 4 tokens.
    for _ in 0..3 {
        assert_eq!(app.client.get(ACCOUNTS, &key).await.status, 200);
    }
    let first = heartbeat_idem(&app.client, &key, "trips", "r1").await;
    assert_eq!(first.status, 200, "{}", first.text());
    let trips = round_trips(&first);
    eprintln!("measured: POST /heartbeat with Idempotency-Key = {trips} round trips");
    // The key, the claim; then one transaction for the request and its result: BEGIN, the
    // upsert in a savepoint of it (three), the open cards, the result stored, COMMIT.
    assert!(
        trips <= 9 + LEASE_TRIPS,
        "POST /heartbeat with an Idempotency-Key made {trips} round trips (the key, the claim, \
         BEGIN, the upsert in a savepoint, the open cards, store the result, COMMIT)"
    );

    let replay = heartbeat_idem(&app.client, &key, "trips", "r1").await;
    assert!(replayed(&replay));
    eprintln!("measured: replay = {} round trips", round_trips(&replay));
    assert_eq!(
        plain_trips(round_trips(&replay), 2),
        2,
        "a replay is the key and the claim"
    );

    let mismatch = heartbeat_idem(&app.client, &key, "trips", "r2").await;
    assert_error(&mismatch, 422, "idempotency_mismatch");
    assert_eq!(
        plain_trips(round_trips(&mismatch), 2),
        2,
        "a mismatch is the key and the claim"
    );
}

// ---------------------------------------------------------------------------------------------
// Health

#[tokio::test(flavor = "multi_thread")]
async fn health_and_readiness_answer_without_auth() {
    let app = spawn_app().await;
    let health = app.client.send(Request::new("GET", "/healthz")).await;
    assert_eq!(health.status, 200);
    assert_eq!(health.json()["status"], "ok");
    assert!(health.header("x-request-id").is_some());
    let ready = app.client.send(Request::new("GET", "/readyz")).await;
    assert_eq!(ready.status, 200, "{}", ready.text());
    assert!(ready.header("x-request-id").is_some());
    // A bogus key does not matter to them.
    let health = app.client.get("/healthz", "not-a-key").await;
    assert_eq!(health.status, 200);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_database_that_is_gone_is_503_unavailable_not_500() {
    use diesel_async::{AsyncConnection, AsyncPgConnection, RunQueryDsl};
    let app = fleetdesk_tests::spawn_app_in_own_database().await;
    let key = app.agent_key("op1");
    assert_eq!(app.client.get(ACCOUNTS, &key).await.status, 200);
    // Take the database away under the running service.
    let mut admin = AsyncPgConnection::establish(&fleetdesk_pg::testing::server_url())
        .await
        .expect("admin connection");
    diesel::sql_query(format!("DROP DATABASE {} WITH (FORCE)", app.db.name()))
        .execute(&mut admin)
        .await
        .expect("drop the app's database");
    for path in [ACCOUNTS, "/readyz"] {
        let res = app.client.get(path, &key).await;
        assert_eq!(
            res.status,
            503,
            "{path}: {}",
            String::from_utf8_lossy(&res.body)
        );
        assert_eq!(res.code(), "unavailable", "{path}");
        assert!(
            !res.json()["message"]
                .as_str()
                .unwrap_or("")
                .contains("postgres"),
            "{path}: no internals"
        );
    }
}
