//! Secrets and hostile input: nothing secret in the logs of the real binary at any level, log
//! lines fit for a pipe, key-shaped text redacted in every free-text field before it is stored,
//! Idempotency-Keys stored hashed, and error messages that never echo a sent value.

use crate::drafts::texts;
use crate::uploads::put_to;
use base64::Engine;
use fleetdesk_pg::testing::TestDb;
use fleetdesk_tests::binary::{
    Proc, SERVE, Served, TempDir, all_keys, demo_agent_key, demo_report, fleetdesk_over, serve,
};
use fleetdesk_tests::client::Request;
use fleetdesk_tests::{Client, spawn_app, spawn_app_in_own_database};
use serde_json::{Value, json};
use sha2::{Digest, Sha256};
use std::process::Command;
use std::time::Duration;

const API: &str = "/api/agent/v1";
/// Key-shaped, but no key of any tenant.
const FAKE_KEY: &str = "fda_AbCd1234_abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQ";
const REDACTED: &str = "[redacted key]";

// ---------------------------------------------------------------------------------------------
// The real binary

/// A first start of `fleetdesk serve` over a fresh database, and what it printed. The server is
/// the first field: it is stopped before its database goes.
struct FirstStart {
    server: Proc,
    client: Client,
    /// The demo tenant's report.
    report: Value,
    data: TempDir,
    db: TestDb,
}

/// `fleetdesk serve` on a free port over a fresh database, logging at `rust_log` when given.
async fn first_start(rust_log: Option<&str>) -> FirstStart {
    let db = TestDb::new().await.expect("a test database");
    let data = TempDir::new("secrets");
    let mut cmd = fleetdesk_over(SERVE, &db, data.path());
    if let Some(filter) = rust_log {
        cmd.env("RUST_LOG", filter);
    }
    let Served {
        proc,
        client,
        banner,
    } = serve(cmd, Duration::from_secs(90)).await;
    FirstStart {
        server: proc,
        client,
        report: demo_report(&banner).expect("the demo tenant was loaded"),
        data,
        db,
    }
}

// ---------------------------------------------------------------------------------------------
// Reading what the database holds

async fn bytea_column(url: &str, query: &str) -> Vec<Vec<u8>> {
    use diesel_async::{AsyncConnection, RunQueryDsl};
    #[derive(diesel::QueryableByName)]
    struct Row {
        #[diesel(sql_type = diesel::sql_types::Bytea)]
        v: Vec<u8>,
    }
    let mut conn = diesel_async::AsyncPgConnection::establish(url)
        .await
        .expect("connect");
    let rows: Vec<Row> = diesel::sql_query(query)
        .load(&mut conn)
        .await
        .unwrap_or_else(|e| panic!("{query}: {e}"));
    rows.into_iter().map(|r| r.v).collect()
}

/// Every way a driver or a formatter could write these bytes: as they are (when text), as
/// the list of decimal bytes a `Debug` of a byte slice prints (what tokio-postgres logs for a
/// bind value), hex, and base64.
fn spellings(bytes: &[u8]) -> Vec<String> {
    let mut out = vec![
        bytes
            .iter()
            .map(u8::to_string)
            .collect::<Vec<_>>()
            .join(", "),
        bytes.iter().map(|b| format!("{b:02x}")).collect(),
        bytes.iter().map(|b| format!("{b:02X}")).collect(),
        base64::engine::general_purpose::STANDARD_NO_PAD.encode(bytes),
        base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes),
    ];
    if let Ok(text) = std::str::from_utf8(bytes) {
        out.push(text.to_owned());
    }
    out
}

/// A secret and what it is, for the failure message.
struct Secret {
    what: String,
    bytes: Vec<u8>,
}

fn secret(what: impl Into<String>, bytes: impl AsRef<[u8]>) -> Secret {
    Secret {
        what: what.into(),
        bytes: bytes.as_ref().to_vec(),
    }
}

/// Asserts that no spelling of any secret occurs in `log`.
fn assert_absent(log: &str, secrets: &[Secret]) {
    for s in secrets {
        assert!(s.bytes.len() >= 16, "{} is too short to search for", s.what);
        for form in spellings(&s.bytes) {
            if let Some(at) = log.find(&form) {
                let line_start = log[..at].rfind('\n').map_or(0, |i| i + 1);
                let line_end = log[at..].find('\n').map_or(log.len(), |i| at + i);
                panic!(
                    "{} appears in the log as {form:?}:\n{}",
                    s.what,
                    &log[line_start..line_end]
                );
            }
        }
    }
}

// ---------------------------------------------------------------------------------------------
// No secret in the log at RUST_LOG=trace

const PROBE_TENANT: &str = r#"{
  "organizations": [{
    "name": "Probe Agency",
    "members": [{"email": "pam@probe.test", "name": "Pam", "role": "agency", "keys": 1}],
    "workspaces": [{
      "name": "Probe",
      "projects": [{"name": "general"}],
      "agents": [{"name": "prober", "role": "operator", "keys": 2}]
    }]
  }]
}"#;

#[tokio::test(flavor = "multi_thread")]
async fn no_secret_reaches_the_log_even_at_trace_level() {
    // First start: the link-signing key is created and the demo tenant's keys are issued.
    // (Bound database first: dropped last, after the server.)
    let FirstStart {
        db,
        data,
        mut server,
        client,
        report,
    } = first_start(Some("trace")).await;
    let writer = demo_agent_key(&report);
    let mut issued = all_keys(&report);
    assert!(issued.len() >= 4, "the demo issued keys: {report}");

    // admin apply issues more keys (a separate process, logging at trace too).
    let file = data.path().join("probe.json");
    std::fs::write(&file, PROBE_TENANT).expect("write the tenant file");
    let mut apply_cmd = fleetdesk_over(&["admin", "apply"], &db, data.path());
    apply_cmd.arg(&file).env("RUST_LOG", "trace");
    let mut apply = Proc::spawn(apply_cmd);
    let status = apply.finish(Duration::from_secs(60)).await;
    assert!(status.success(), "admin apply failed:\n{}", apply.stderr());
    let applied: Value = serde_json::from_str(&apply.stdout()).expect("apply printed JSON");
    let applied_keys = all_keys(&applied);
    assert_eq!(applied_keys.len(), 3, "{applied}");
    issued.extend(applied_keys.iter().cloned());

    // Authenticated calls, and failed ones: a wrong secret of a real lookup id, an unknown key.
    let ok = client.get(&format!("{API}/accounts"), &writer).await;
    assert_eq!(ok.status, 200, "{}", ok.text());
    let wrong = format!("{}{}", &writer[..writer.len() - 4], "AAAA");
    let refused = client.get(&format!("{API}/accounts"), &wrong).await;
    assert_eq!(refused.status, 401);
    let unknown = client.get(&format!("{API}/accounts"), FAKE_KEY).await;
    assert_eq!(unknown.status, 401);
    let prober = applied["organizations"][0]["workspaces"][0]["agents"][0]["keys"][0]
        .as_str()
        .expect("prober's key");
    let other = client.get(&format!("{API}/accounts"), prober).await;
    assert_eq!(other.status, 200, "{}", other.text());

    // An upload: POST /uploads (with an Idempotency-Key), then the file PUT to its link.
    let idem = "trace-probe-upload-0001";
    let created = client
        .post_idem(
            &format!("{API}/uploads"),
            &writer,
            idem,
            &json!({"code": "TW-T001", "mime_type": "image/png", "caption": "probe"}),
        )
        .await;
    assert_eq!(created.status, 201, "{}", created.text());
    let upload_url = created.json()["upload_url"]
        .as_str()
        .expect("upload_url")
        .to_owned();
    let token = upload_url.rsplit("t=").next().expect("token").to_owned();
    let file = crate::uploads::png(5, 5, b"trace");
    let put = put_to(&client, &client.path_of(&upload_url), file.clone()).await;
    assert_eq!(put.status, 200, "{}", put.text());

    // The signed media link, fetched.
    let listed = client.get(&format!("{API}/media"), &writer).await;
    assert_eq!(listed.status, 200, "{}", listed.text());
    let link = listed.json()["media"][0]["url"]
        .as_str()
        .expect("a link")
        .to_owned();
    let signature = link.rsplit("s=").next().expect("s").to_owned();
    let fetched = client
        .send(Request::new("GET", &client.path_of(&link)))
        .await;
    assert_eq!(fetched.status, 200);
    assert_eq!(fetched.body, file);

    // The dashboard: sign in with a personal key, open a page with the session cookie, post a
    // form with its CSRF token.
    let personal = issued
        .iter()
        .find(|k| k.starts_with("fdp_"))
        .expect("a personal key")
        .clone();
    let signed_in = client
        .send(
            Request::new("POST", "/dashboard/sign-in")
                .header("Content-Type", "application/x-www-form-urlencoded")
                .raw(format!("key={personal}").into_bytes()),
        )
        .await;
    assert_eq!(signed_in.status, 303, "{}", signed_in.text());
    let session = signed_in
        .header("set-cookie")
        .and_then(|c| c.split(';').next())
        .and_then(|c| c.strip_prefix("fleetdesk_session="))
        .expect("the session cookie")
        .to_owned();
    let review = client
        .send(
            Request::new("GET", "/dashboard/review")
                .header("Cookie", &format!("fleetdesk_session={session}")),
        )
        .await;
    assert_eq!(review.status, 200);
    let html = String::from_utf8_lossy(&review.body).into_owned();
    let at = html.find(r#"name="_csrf" value=""#).expect("a CSRF field") + 20;
    let csrf = html[at..at + 43].to_owned();
    let out = client
        .send(
            Request::new("POST", "/dashboard/sign-out")
                .header("Cookie", &format!("fleetdesk_session={session}"))
                .header("Content-Type", "application/x-www-form-urlencoded")
                .raw(format!("_csrf={csrf}").into_bytes()),
        )
        .await;
    assert_eq!(out.status, 303, "{}", out.text());

    let status = server.terminate(Duration::from_secs(60)).await;
    assert!(status.success(), "serve exited with {status}");

    // What must not be in the log.
    let link_key = bytea_column(
        &db.url,
        "SELECT value AS v FROM service_secrets WHERE name = 'link_signing'",
    )
    .await;
    assert_eq!(link_key.len(), 1, "the link-signing key exists");
    let key_hashes = bytea_column(&db.url, "SELECT secret_hash AS v FROM api_keys").await;
    assert_eq!(key_hashes.len(), issued.len(), "a hash per issued key");
    let token_hashes = bytea_column(&db.url, "SELECT token_hash AS v FROM uploads").await;
    assert_eq!(
        token_hashes,
        vec![Sha256::digest(token.as_bytes()).to_vec()]
    );
    let idem_hashes = bytea_column(&db.url, "SELECT key_hash AS v FROM idempotency_keys").await;
    assert_eq!(idem_hashes.len(), 1);
    let mut secrets = vec![
        secret("the link-signing key", &link_key[0]),
        secret("the upload token", &token),
        secret("the upload token's hash", &token_hashes[0]),
        secret("the link's signature", &signature),
        secret(
            "the link's signature bytes",
            base64::engine::general_purpose::URL_SAFE_NO_PAD
                .decode(&signature)
                .expect("base64url signature"),
        ),
        secret("the Idempotency-Key's hash", &idem_hashes[0]),
        secret("the Idempotency-Key", idem),
        secret("the refused key", &wrong),
        secret("the dashboard's session token", &session),
        secret(
            "the session token's hash",
            Sha256::digest(session.as_bytes()),
        ),
        secret("the session's CSRF token", &csrf),
        secret("the unknown key", FAKE_KEY),
    ];
    for (i, k) in issued.iter().enumerate() {
        secrets.push(secret(format!("issued key {i}"), k));
        secrets.push(secret(
            format!("issued key {i}'s secret part"),
            &k[k.len() - 43..],
        ));
    }
    for (i, h) in key_hashes.iter().enumerate() {
        secrets.push(secret(format!("key hash {i}"), h));
    }
    secrets.push(secret(
        "the refused key's hash",
        Sha256::digest(wrong.as_bytes()),
    ));

    let logs = [
        ("serve", server.stderr_bytes()),
        ("admin apply", apply.stderr_bytes()),
    ];
    let mut lines = 0;
    let mut bytes = 0;
    for (what, raw) in &logs {
        let log = String::from_utf8_lossy(raw);
        lines += log.lines().count();
        bytes += raw.len();
        // Trace level was really on in the server (admin apply has little to say but what the
        // capped driver would).
        if *what == "serve" {
            assert!(
                log.contains(" TRACE "),
                "no trace-level line at RUST_LOG=trace"
            );
            assert!(
                log.contains(" DEBUG "),
                "no debug-level line at RUST_LOG=trace"
            );
        }
        // The driver writes bind values at debug: capped, none of its lines below info.
        for line in log.lines().filter(|l| l.contains("tokio_postgres")) {
            assert!(
                !line.contains(" DEBUG ") && !line.contains(" TRACE "),
                "{what}: the PostgreSQL driver logged below info: {line}"
            );
        }
        assert_absent(&log, &secrets);
    }
    let serve_log = String::from_utf8_lossy(&logs[0].1);
    assert!(
        serve_log.contains("handled") && serve_log.contains("error_code=unauthorized"),
        "the request lines are in the scanned log"
    );
    let spelled: usize = secrets.iter().map(|s| spellings(&s.bytes).len()).sum();
    eprintln!(
        "trace-level log check: {lines} lines, {bytes} bytes scanned for {} secrets \
         ({spelled} spellings); none found",
        secrets.len()
    );
}

// ---------------------------------------------------------------------------------------------
// Log lines for a pipe

#[tokio::test(flavor = "multi_thread")]
async fn log_lines_are_plain_with_error_codes_and_rounded_latency() {
    let mut start = first_start(None).await;
    let (server, client) = (&mut start.server, &start.client);
    let writer = demo_agent_key(&start.report);
    assert_eq!(
        client.get(&format!("{API}/accounts"), &writer).await.status,
        200
    );
    assert_eq!(
        client.get(&format!("{API}/accounts"), "x").await.status,
        401
    );
    assert_eq!(client.get("/nowhere", &writer).await.status, 404);
    let bad = client
        .post(&format!("{API}/heartbeat"), &writer, &json!({"run_id": ""}))
        .await;
    assert_eq!(bad.status, 400, "{}", bad.text());
    server.terminate(Duration::from_secs(60)).await;
    let raw = server.stderr_bytes();
    let log = String::from_utf8_lossy(&raw);

    assert!(
        !raw.contains(&0x1b),
        "colour codes in a log written to a pipe:\n{log}"
    );
    let handled: Vec<&str> = log.lines().filter(|l| l.contains("handled")).collect();
    assert!(handled.len() >= 4, "{log}");
    for (status, code) in [
        ("401", "unauthorized"),
        ("404", "not_found"),
        ("400", "invalid_request"),
    ] {
        assert!(
            handled
                .iter()
                .any(|l| l.contains(&format!("status={status}"))
                    && l.contains(&format!("error_code={code}"))),
            "no {status} line with error_code={code}:\n{}",
            handled.join("\n")
        );
    }
    for line in &handled {
        if line.contains("status=200") {
            assert!(!line.contains("error_code"), "{line}");
        }
        let ms = line
            .split_whitespace()
            .find_map(|f| f.strip_prefix("elapsed_ms="))
            .unwrap_or_else(|| panic!("no elapsed_ms: {line}"));
        let decimals = ms.split_once('.').map_or(0, |(_, d)| d.len());
        assert!(
            decimals <= 1 && ms.parse::<f64>().is_ok(),
            "elapsed_ms={ms} is not rounded: {line}"
        );
    }
}

// ---------------------------------------------------------------------------------------------
// Redaction in one place, before anything is stored

/// Everything the database holds, as `pg_dump --data-only` writes it.
fn data_dump(url: &str) -> String {
    let out = Command::new("pg_dump")
        .args(["--data-only", "--no-owner", url])
        .output()
        .expect("pg_dump (PostgreSQL's client tools) must be installed");
    assert!(
        out.status.success(),
        "pg_dump: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn ok(res: &fleetdesk_tests::Response, status: u16) -> Value {
    assert_eq!(res.status, status, "{}", res.text());
    res.json()
}

#[tokio::test(flavor = "multi_thread")]
async fn key_shaped_text_is_redacted_in_every_free_text_field_before_it_is_stored() {
    let app = spawn_app_in_own_database().await;
    let op1 = app.agent_key("op1");
    // A real key of another agent, pasted into text, and a key-shaped string.
    let real = app.agent_key("op2");
    let with = |what: &str| format!("{what}: {real} and {FAKE_KEY}");
    let both_redacted = |what: &str| format!("{what}: {REDACTED} and {REDACTED}");

    // Heartbeat: run_id, summary and the name of a counter.
    let hb = ok(
        &app.client
            .post(
                &format!("{API}/heartbeat"),
                &op1,
                &json!({"run_id": format!("run {FAKE_KEY}"), "summary": with("summary"),
                        "counts": {FAKE_KEY: 1}}),
            )
            .await,
        200,
    );
    assert_eq!(hb["run"]["run_id"], format!("run {REDACTED}"), "{hb}");
    assert_eq!(
        texts(
            &app,
            "SELECT run_id || '|' || summary || '|' || counts::text AS v FROM agent_runs"
        )
        .await,
        [format!(
            "run {REDACTED}|{}|{{\"{REDACTED}\": 1}}",
            both_redacted("summary")
        )]
    );

    // A draft with a note, then a note added on its own.
    let draft = ok(
        &app.client
            .post(
                &format!("{API}/drafts"),
                &op1,
                &json!({"code": "TW-T001", "body": with("body"), "topic": with("topic"),
                        "note": with("note")}),
            )
            .await,
        201,
    );
    let id = draft["draft"]["id"].as_str().expect("draft id").to_owned();
    ok(
        &app.client
            .post(
                &format!("{API}/drafts/{id}/notes"),
                &op1,
                &json!({"note": with("later note")}),
            )
            .await,
        200,
    );
    assert_eq!(
        texts(
            &app,
            &format!("SELECT body || '|' || topic AS v FROM posts WHERE id = '{id}'")
        )
        .await,
        [format!(
            "{}|{}",
            both_redacted("body"),
            both_redacted("topic")
        )]
    );
    assert_eq!(
        texts(
            &app,
            &format!(
                "SELECT reason AS v FROM review_events WHERE post_id = '{id}' \
                 AND action = 'added note' ORDER BY id"
            )
        )
        .await,
        [both_redacted("note"), both_redacted("later note")]
    );

    // A report: an approved post failed, with its failure reason.
    let approved = ok(
        &app.client
            .post(
                &format!("{API}/drafts"),
                &op1,
                &json!({"code": "TW-T001", "body": "will fail"}),
            )
            .await,
        201,
    );
    let reported = approved["draft"]["id"].as_str().expect("id").to_owned();
    let ann = app.personal_key("ann@acme.test");
    ok(
        &app.client
            .post(
                &format!("/api/user/v1/posts/{reported}/transition"),
                &ann,
                &json!({"to": "approved"}),
            )
            .await,
        200,
    );
    let report = ok(
        &app.client
            .post(
                &format!("{API}/posts/report"),
                &op1,
                &json!({"posts": [{"code": "TW-T001", "status": "failed",
                                   "post_id": reported,
                                   "failure_reason": with("failure")}]}),
            )
            .await,
        200,
    );
    assert_eq!(report["results"][0]["ok"], true, "{report}");
    assert_eq!(
        texts(
            &app,
            &format!("SELECT failure_reason AS v FROM posts WHERE id = '{reported}'")
        )
        .await,
        [both_redacted("failure")]
    );

    // A state report's reason.
    ok(
        &app.client
            .post(
                &format!("{API}/accounts/TW-T001/state"),
                &op1,
                &json!({"state": "paused", "reason": with("reason"),
                        "occurred_at": "2026-11-21 10:00"}),
            )
            .await,
        200,
    );
    assert_eq!(
        texts(&app, "SELECT reason AS v FROM account_state_changes").await,
        [both_redacted("reason")]
    );

    // Over MCP the same: a note through add_note.
    let call = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                      "params": {"name": "add_note",
                                 "arguments": {"id": id, "note": with("mcp note")}}});
    let res = app.client.send(Request::mcp(&call).bearer(&op1)).await;
    assert_eq!(res.status, 200, "{}", res.text());
    assert_eq!(
        texts(
            &app,
            &format!(
                "SELECT reason AS v FROM review_events WHERE post_id = '{id}' \
                 AND reason LIKE 'mcp note%'"
            )
        )
        .await,
        [both_redacted("mcp note")]
    );

    // Nowhere in the database, in any table.
    let dump = data_dump(&app.db.url);
    assert!(!dump.contains(FAKE_KEY), "a key-shaped string was stored");
    assert!(!dump.contains(&real), "a pasted key was stored");
    assert!(dump.contains(REDACTED));
}

#[tokio::test(flavor = "multi_thread")]
async fn idempotency_keys_are_stored_hashed() {
    let app = spawn_app_in_own_database().await;
    let key = app.agent_key("op1");
    let idem = "ban-tw-t001-secret-7f3a9c";
    let path = format!("{API}/accounts/TW-T001/state");
    let body = json!({"state": "paused", "reason": "checks", "occurred_at": "2026-11-21 10:00"});
    let first = app.client.post_idem(&path, &key, idem, &body).await;
    assert_eq!(first.status, 200, "{}", first.text());
    let again = app.client.post_idem(&path, &key, idem, &body).await;
    assert_eq!(again.status, 200, "{}", again.text());
    assert_eq!(again.header("idempotent-replayed"), Some("true"));
    assert_eq!(again.json(), first.json());
    let other = app
        .client
        .post_idem(
            &path,
            &key,
            idem,
            &json!({"state": "banned", "reason": "x", "occurred_at": "2026-11-21 10:00"}),
        )
        .await;
    assert_eq!(other.status, 422, "{}", other.text());

    assert_eq!(
        app.count(&format!(
            "SELECT count(*) AS n FROM idempotency_keys \
             WHERE key_hash = sha256(convert_to('{idem}', 'UTF8'))"
        ))
        .await,
        1
    );
    let dump = data_dump(&app.db.url);
    assert!(
        !dump.contains(idem),
        "the Idempotency-Key is stored in plain text"
    );
}

// ---------------------------------------------------------------------------------------------
// Error messages never echo a value

#[tokio::test(flavor = "multi_thread")]
async fn error_messages_name_the_field_but_never_echo_the_value() {
    let app = spawn_app().await;
    let key = app.agent_key("op1");
    // A key-shaped value and a credential of no known shape.
    let password = "hunter2-P4ssw0rd-xyz";
    for value in [FAKE_KEY, password] {
        let cases = [
            (
                "state",
                "POST",
                format!("{API}/accounts/TW-T001/state"),
                json!({"state": value, "reason": "r", "occurred_at": "2026-11-21 10:00"}),
            ),
            (
                "platform",
                "POST",
                format!("{API}/accounts"),
                json!({"persona_id": app.persona_id("Mia"), "platform": value, "code": "TW-X009"}),
            ),
            (
                "mime_type",
                "POST",
                format!("{API}/uploads"),
                json!({"code": "TW-T001", "mime_type": value}),
            ),
            (
                "counts.done",
                "POST",
                format!("{API}/heartbeat"),
                json!({"run_id": "r", "counts": {"done": value}}),
            ),
            (
                "persona_id",
                "POST",
                format!("{API}/accounts"),
                json!({"persona_id": value, "platform": "x", "code": "TW-X009"}),
            ),
        ];
        for (field, method, path, body) in cases {
            let res = app
                .client
                .send(Request::new(method, &path).bearer(&key).json(&body))
                .await;
            let raw = res.text();
            assert_eq!(res.status, 400, "{field} = {value}: {raw}");
            assert_eq!(res.code(), "invalid_request", "{field}: {raw}");
            assert_eq!(res.json()["field"], field, "{raw}");
            assert!(!raw.contains(value), "{field}: the value is echoed: {raw}");
            assert!(!raw.contains("hunter2"), "{field}: {raw}");
        }
    }
    // The message still says what is expected.
    let res = app
        .client
        .post(
            &format!("{API}/accounts/TW-T001/state"),
            &key,
            &json!({"state": password, "reason": "r", "occurred_at": "2026-11-21 10:00"}),
        )
        .await;
    let message = res.json()["message"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    assert!(
        message.contains("banned") && message.contains("warming"),
        "{message}"
    );
    // A platform query with a bad value on a real path.
    let res = app
        .client
        .post(
            &format!("{API}/accounts/OLD1/state?platform={password}"),
            &key,
            &json!({"state": "paused", "reason": "r", "occurred_at": "2026-11-21 10:00"}),
        )
        .await;
    assert_eq!(res.status, 400, "{}", res.text());
    assert_eq!(res.json()["field"], "platform");
    assert!(!res.text().contains("hunter2"), "{}", res.text());

    // MCP's own errors name the method or tool sent, with a key redacted: an unknown tool
    // (answered before any key check would matter), an unknown method, a bad id.
    let calls = [
        json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
               "params": {"name": FAKE_KEY, "arguments": {}}}),
        json!({"jsonrpc": "2.0", "id": 2, "method": FAKE_KEY}),
        json!({"jsonrpc": "2.0", "id": [FAKE_KEY], "method": "ping"}),
    ];
    for call in calls {
        let res = app.client.send(Request::mcp(&call).bearer(&key)).await;
        let raw = res.text();
        let message = res.json()["error"]["message"]
            .as_str()
            .unwrap_or_default()
            .to_owned();
        assert!(!message.is_empty(), "{call}: {raw}");
        assert!(!raw.contains(FAKE_KEY), "{call}: the key is echoed: {raw}");
    }
}
