//! What operators measure: the Prometheus metrics on a listener of their own (never on the
//! public one), with real values after real calls over REST and MCP, and `/readyz` refusing
//! traffic while the database lacks a migration of the binary or the pool is exhausted.

use crate::uploads::{png, upload_file};
use fleetdesk_pg::testing::TestDb;
use fleetdesk_tests::assert::assert_error;
use fleetdesk_tests::binary::{TempDir, demo_agent_key, demo_report, fleetdesk_over, serve};
use fleetdesk_tests::client::Request;
use fleetdesk_tests::{AppOptions, Client, TestApp, spawn_app, spawn_app_with};
use serde_json::{Value, json};
use std::collections::BTreeMap;
use std::time::Duration;

const ACCOUNTS: &str = "/api/agent/v1/accounts";
const LIST_ACCOUNTS: &str = "agent GET /accounts";

/// A metrics listener over the running app's services, on a port of its own.
async fn metrics_listener(app: &TestApp) -> (Client, actix_web::dev::ServerHandle) {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let base = format!("http://{}", listener.local_addr().expect("addr"));
    let server = fleetdesk_http::metrics_server(app.ctx.clone(), listener).expect("server");
    let handle = server.handle();
    tokio::spawn(server);
    (Client::new(&base), handle)
}

/// One scrape: 200, OpenMetrics text, complete.
async fn scrape(metrics: &Client) -> Exposition {
    let res = metrics.send(Request::new("GET", "/metrics")).await;
    assert_eq!(res.status, 200, "{}", res.text());
    assert!(
        res.header("content-type")
            .is_some_and(|t| t.starts_with("application/openmetrics-text")),
        "{:?}",
        res.header("content-type")
    );
    let text = String::from_utf8(res.body).expect("UTF-8");
    assert!(text.ends_with("# EOF\n"), "{text}");
    Exposition::parse(&text)
}

/// The samples of an exposition: name, labels, value.
struct Exposition {
    text: String,
    samples: Vec<(String, BTreeMap<String, String>, f64)>,
}

impl Exposition {
    fn parse(text: &str) -> Exposition {
        let samples = text
            .lines()
            .filter(|l| !l.starts_with('#') && !l.is_empty())
            .map(|line| sample(line).unwrap_or_else(|| panic!("not a sample: {line:?}")))
            .collect();
        Exposition {
            text: text.to_owned(),
            samples,
        }
    }

    /// The value of the sample `name` whose labels are exactly `labels`.
    fn value(&self, name: &str, labels: &[(&str, &str)]) -> Option<f64> {
        let want: BTreeMap<String, String> = labels
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        self.samples
            .iter()
            .find(|(n, l, _)| n == name && *l == want)
            .map(|(_, _, v)| *v)
    }

    /// [`Exposition::value`], required.
    #[track_caller]
    fn get(&self, name: &str, labels: &[(&str, &str)]) -> f64 {
        self.value(name, labels)
            .unwrap_or_else(|| panic!("no {name} {labels:?} in\n{}", self.text))
    }

    /// Every value the label `label` takes among the samples of `name`.
    fn label_values(&self, name: &str, label: &str) -> Vec<String> {
        self.samples
            .iter()
            .filter(|(n, _, _)| n == name)
            .filter_map(|(_, l, _)| l.get(label).cloned())
            .collect()
    }
}

/// `name{k="v",...} value` (label values may hold braces, spaces and escapes).
fn sample(line: &str) -> Option<(String, BTreeMap<String, String>, f64)> {
    let name_end = line.find(['{', ' '])?;
    let name = line[..name_end].to_owned();
    let mut labels = BTreeMap::new();
    let mut rest = &line[name_end..];
    if let Some(inner) = rest.strip_prefix('{') {
        let mut chars = inner.char_indices();
        let mut key = String::new();
        loop {
            let (i, c) = chars.next()?;
            match c {
                '}' => {
                    rest = &inner[i + 1..];
                    break;
                }
                ',' => {}
                '=' => {
                    if chars.next()?.1 != '"' {
                        return None;
                    }
                    let mut value = String::new();
                    loop {
                        match chars.next()?.1 {
                            '\\' => value.push(chars.next()?.1),
                            '"' => break,
                            c => value.push(c),
                        }
                    }
                    labels.insert(std::mem::take(&mut key), value);
                }
                c => key.push(c),
            }
        }
    }
    let value = rest.split_whitespace().next()?.parse().ok()?;
    Some((name, labels, value))
}

fn requests(transport: &str, operation: &str, status: &str) -> [(&'static str, String); 3] {
    [
        ("transport", transport.to_owned()),
        ("operation", operation.to_owned()),
        ("status", status.to_owned()),
    ]
}

/// The number of calls of `operation` answered with `status` over `transport` (0 when none).
fn calls(m: &Exposition, transport: &str, operation: &str, status: &str) -> f64 {
    let labels = requests(transport, operation, status);
    let labels: Vec<(&str, &str)> = labels.iter().map(|(k, v)| (*k, v.as_str())).collect();
    m.value("fleetdesk_requests_total", &labels).unwrap_or(0.0)
}

#[tokio::test(flavor = "multi_thread")]
async fn metrics_count_every_call_by_operation_and_status_on_their_own_listener() {
    let app = spawn_app().await;
    let (metrics, _server) = metrics_listener(&app).await;
    let key = app.agent_key("op1");
    for _ in 0..3 {
        assert_eq!(app.client.get(ACCOUNTS, &key).await.status, 200);
    }
    let refused = app
        .client
        .get(
            ACCOUNTS,
            "fda_AbCd1234_abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQ",
        )
        .await;
    assert_error(&refused, 401, "unauthorized");
    assert_eq!(
        app.client
            .send(Request::new("GET", "/healthz"))
            .await
            .status,
        200
    );
    let unknown = app
        .client
        .send(Request::new("GET", "/no/such/path-4711"))
        .await;
    assert_error(&unknown, 404, "not_found");
    // The public listener has no metrics: its usual JSON 404.
    let public = app.client.send(Request::new("GET", "/metrics")).await;
    assert_error(&public, 404, "not_found");
    // MCP: the tool's operation, and the other methods as `mcp`.
    app.call_tool(&key, "list_accounts", json!({})).await;
    let init = app
        .client
        .send(
            Request::mcp(&json!({"jsonrpc": "2.0", "id": 1, "method": "initialize",
                "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                           "clientInfo": {"name": "t", "version": "1"}}}))
            .bearer(&key),
        )
        .await;
    assert_eq!(init.status, 200, "{}", init.text());

    let m = scrape(&metrics).await;
    assert_eq!(calls(&m, "http", LIST_ACCOUNTS, "200"), 3.0);
    assert_eq!(calls(&m, "http", LIST_ACCOUNTS, "401"), 1.0);
    assert_eq!(calls(&m, "http", "health", "200"), 1.0);
    // The unknown path and the public /metrics: `other`, never their paths.
    assert_eq!(calls(&m, "http", "other", "404"), 2.0);
    assert_eq!(calls(&m, "mcp", LIST_ACCOUNTS, "200"), 1.0);
    assert_eq!(calls(&m, "mcp", "mcp", "200"), 1.0);
    // An MCP message is counted once, by the MCP adapter, not again as an HTTP request.
    assert_eq!(calls(&m, "http", "mcp", "200"), 0.0);
    let operations = m.label_values("fleetdesk_requests_total", "operation");
    assert!(
        operations
            .iter()
            .all(|o| !o.contains("4711") && !o.contains("/metrics")),
        "{operations:?}"
    );
    // Every HTTP call of the operation has its latency, in seconds.
    let latency = [("transport", "http"), ("operation", LIST_ACCOUNTS)];
    assert_eq!(
        m.get("fleetdesk_request_duration_seconds_count", &latency),
        4.0
    );
    let sum = m.get("fleetdesk_request_duration_seconds_sum", &latency);
    assert!(sum > 0.0 && sum < 30.0, "{sum}");
    let mut inf = latency.to_vec();
    inf.push(("le", "+Inf"));
    assert_eq!(
        m.get("fleetdesk_request_duration_seconds_bucket", &inf),
        4.0
    );
    // The pool, as the scrape found it: the app's 8 connections, nobody waiting.
    assert_eq!(m.get("fleetdesk_db_pool_max_size", &[]), 8.0);
    assert_eq!(m.get("fleetdesk_db_pool_waiting", &[]), 0.0);
    let size = m.get("fleetdesk_db_pool_size", &[]);
    assert!((1.0..=8.0).contains(&size), "{size}");
    assert!(m.get("fleetdesk_db_pool_available", &[]) <= size);
    // Nothing queued yet: no job gauges.
    assert!(
        m.label_values("fleetdesk_jobs", "kind").is_empty(),
        "{}",
        m.text
    );

    // The listener answers nothing but GET /metrics.
    for path in ["/readyz", ACCOUNTS, "/metrics/x"] {
        let other = metrics.send(Request::new("GET", path)).await;
        assert_eq!(other.status, 404, "{path}: {}", other.text());
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn rate_limit_refusals_are_counted_per_transport() {
    let app = spawn_app_with(AppOptions {
        rate_limit_per_minute: 2,
        ..Default::default()
    })
    .await;
    let (metrics, _server) = metrics_listener(&app).await;
    let (rest, mcp) = (app.agent_key("op1"), app.agent_key("op2"));
    let mut refused_rest = 0;
    for _ in 0..5 {
        let res = app.client.get(ACCOUNTS, &rest).await;
        if res.status == 429 {
            assert_error(&res, 429, "rate_limited");
            refused_rest += 1;
        }
    }
    let mut refused_mcp = 0;
    for id in 0..5 {
        let res = app
            .client
            .send(
                Request::mcp(&json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
                    "params": {"name": "list_accounts", "arguments": {}}}))
                .bearer(&mcp),
            )
            .await;
        // A JSON-RPC error of the call, which every SDK hands to its caller, with the wait.
        assert_eq!(res.status, 200, "{}", res.text());
        let msg = res.json();
        if msg["error"]["code"] == -32029 {
            assert_eq!(msg["id"], id, "{msg}");
            assert_eq!(msg["error"]["data"]["code"], "rate_limited", "{msg}");
            let wait = msg["error"]["data"]["retry_after"].as_u64().unwrap_or(0);
            assert!((1..=62).contains(&wait), "{msg}");
            assert_eq!(res.header("retry-after"), Some(wait.to_string().as_str()));
            refused_mcp += 1;
        } else {
            assert_eq!(msg["result"]["isError"], false, "{msg}");
        }
    }
    // Two per key and minute: at least one of five is refused even when a minute turns.
    assert!(refused_rest >= 1 && refused_mcp >= 1);
    let m = scrape(&metrics).await;
    assert_eq!(
        m.get("fleetdesk_rate_limited_total", &[("transport", "http")]),
        f64::from(refused_rest)
    );
    assert_eq!(
        m.get("fleetdesk_rate_limited_total", &[("transport", "mcp")]),
        f64::from(refused_mcp)
    );
    assert_eq!(
        calls(&m, "http", LIST_ACCOUNTS, "429"),
        f64::from(refused_rest)
    );
    assert_eq!(
        calls(&m, "mcp", LIST_ACCOUNTS, "429"),
        f64::from(refused_mcp)
    );
    assert_eq!(
        calls(&m, "http", LIST_ACCOUNTS, "200") + f64::from(refused_rest),
        5.0
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn idempotent_replays_and_mismatches_are_counted() {
    let app = spawn_app().await;
    let (metrics, _server) = metrics_listener(&app).await;
    let key = app.agent_key("op1");
    let mia = app.persona_id("Mia");
    let body = json!({"persona_id": mia, "platform": "threads", "code": "TW-T030"});
    let first = app
        .client
        .post_idem(ACCOUNTS, &key, "metrics-add", &body)
        .await;
    assert_eq!(first.status, 201, "{}", first.text());
    let again = app
        .client
        .post_idem(ACCOUNTS, &key, "metrics-add", &body)
        .await;
    assert_eq!(again.header("idempotent-replayed"), Some("true"));
    let other = json!({"persona_id": mia, "platform": "threads", "code": "TW-T031"});
    let mismatch = app
        .client
        .post_idem(ACCOUNTS, &key, "metrics-add", &other)
        .await;
    assert_error(&mismatch, 422, "idempotency_mismatch");
    // Over MCP, request_id is the key.
    let args = json!({"persona_id": mia, "platform": "threads", "code": "TW-T032",
                      "request_id": "metrics-mcp"});
    app.call_tool(&key, "add_account", args.clone()).await;
    app.call_tool(&key, "add_account", args).await;

    let m = scrape(&metrics).await;
    assert_eq!(
        m.get(
            "fleetdesk_idempotency_replays_total",
            &[("transport", "http")]
        ),
        1.0
    );
    assert_eq!(
        m.get(
            "fleetdesk_idempotency_replays_total",
            &[("transport", "mcp")]
        ),
        1.0
    );
    assert_eq!(
        m.get(
            "fleetdesk_idempotency_conflicts_total",
            &[("transport", "http"), ("code", "idempotency_mismatch")]
        ),
        1.0
    );
    assert_eq!(
        m.value(
            "fleetdesk_idempotency_conflicts_total",
            &[("transport", "http"), ("code", "idempotency_in_progress")]
        ),
        None
    );
    assert_eq!(calls(&m, "http", "agent POST /accounts", "201"), 2.0);
    assert_eq!(calls(&m, "http", "agent POST /accounts", "422"), 1.0);
    assert_eq!(calls(&m, "mcp", "agent POST /accounts", "201"), 2.0);
}

#[tokio::test(flavor = "multi_thread")]
async fn upload_bytes_and_background_jobs_are_counted() {
    let app = spawn_app().await;
    let (metrics, _server) = metrics_listener(&app).await;
    let key = app.agent_key("op1");
    let (one, two) = (png(3, 3, b"metrics-1"), png(4, 4, b"metrics-2"));
    upload_file(&app, &key, &json!({"code": "TW-T001"}), one.clone()).await;
    upload_file(&app, &key, &json!({"code": "TW-T001"}), two.clone()).await;

    // One round of a worker counting into the app's metrics: the four weekly builds and the
    // hour's ad sync it enqueues run, and a job whose payload it cannot read fails (and is
    // queued again).
    app.sql(
        "INSERT INTO jobs (kind, key, payload, run_at) \
         VALUES ('weekly_reports', 'broken', '{}', now() - interval '1 hour')",
    )
    .await;
    let now = jiff::Timestamp::now() - fleetdesk_reports::WEEKLY_GRACE;
    fleetdesk::worker::Worker::new(app.store.clone())
        .telemetry(app.ctx.telemetry.clone())
        .with_clock(move || now)
        .tick()
        .await;
    assert_eq!(
        app.count(
            "SELECT count(*) AS n FROM jobs WHERE status = 'done' AND kind = 'weekly_reports'"
        )
        .await,
        4
    );
    assert_eq!(
        app.count("SELECT count(*) AS n FROM jobs WHERE status = 'done' AND kind = 'ad_sync'")
            .await,
        1
    );
    // A job given up for good, as the table says.
    app.sql(
        "INSERT INTO jobs (kind, key, status, attempts) VALUES ('weekly_reports', 'gone', 'failed', 8)",
    )
    .await;

    let m = scrape(&metrics).await;
    let bytes = (one.len() + two.len()) as f64;
    assert_eq!(
        m.get(
            "fleetdesk_upload_bytes_total",
            &[("operation", "agent PUT /uploads/{id}")]
        ),
        bytes,
        "{}",
        m.text
    );
    let kind = [("kind", "weekly_reports")];
    assert_eq!(m.get("fleetdesk_job_runs_total", &kind), 5.0);
    assert_eq!(m.get("fleetdesk_job_failures_total", &kind), 1.0);
    assert_eq!(
        m.get("fleetdesk_job_runs_total", &[("kind", "ad_sync")]),
        1.0
    );
    let jobs = |status| {
        m.get(
            "fleetdesk_jobs",
            &[("kind", "weekly_reports"), ("status", status)],
        )
    };
    assert_eq!(jobs("queued"), 1.0);
    assert_eq!(jobs("running"), 0.0);
    assert_eq!(jobs("failed"), 1.0);
}

/// GET /readyz: its status and body.
async fn readyz(app: &TestApp) -> (u16, Value) {
    let res = app.client.send(Request::new("GET", "/readyz")).await;
    (res.status, res.json())
}

#[tokio::test(flavor = "multi_thread")]
async fn readyz_is_503_while_the_database_lacks_a_migration_of_the_binary() {
    let app = spawn_app().await;
    assert_eq!(readyz(&app).await.0, 200);
    // As if another instance rolled the newest migration back (its bookkeeping row goes).
    app.sql(
        "CREATE TABLE saved_migration AS SELECT * FROM __diesel_schema_migrations \
         WHERE version = (SELECT max(version) FROM __diesel_schema_migrations)",
    )
    .await;
    let newest = app
        .count("SELECT version::bigint AS n FROM saved_migration")
        .await;
    app.sql(
        "DELETE FROM __diesel_schema_migrations WHERE version IN (SELECT version FROM saved_migration)",
    )
    .await;
    let (status, body) = readyz(&app).await;
    assert_eq!(status, 503, "{body}");
    assert_eq!(body["code"], "unavailable", "{body}");
    assert_eq!(body["check"], "migrations", "{body}");
    assert_eq!(
        body["missing_migrations"],
        json!([newest.to_string()]),
        "{body}"
    );
    assert!(
        body["message"]
            .as_str()
            .is_some_and(|m| m.contains("fleetdesk migrate")),
        "{body}"
    );
    // The API itself still answers: only the load balancer is told to stop sending.
    assert_eq!(
        app.client.get(ACCOUNTS, &app.agent_key("op1")).await.status,
        200
    );

    app.sql("INSERT INTO __diesel_schema_migrations SELECT * FROM saved_migration")
        .await;
    let (status, body) = readyz(&app).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["migrations"], "ok", "{body}");
}

#[tokio::test(flavor = "multi_thread")]
async fn readyz_is_503_while_every_connection_is_in_use_and_requests_wait() {
    let app = spawn_app_with(AppOptions {
        pool_size: 1,
        ..Default::default()
    })
    .await;
    let (metrics, _server) = metrics_listener(&app).await;
    assert_eq!(readyz(&app).await.0, 200);
    let held = app
        .store
        .pool()
        .get()
        .await
        .expect("the pool's one connection");
    // In use, but nobody waits: still ready.
    assert_eq!(readyz(&app).await.0, 200);
    // A request that waits for the connection.
    let (base, key) = (app.base.clone(), app.agent_key("op1"));
    let waiting = tokio::spawn(async move { Client::new(&base).get(ACCOUNTS, &key).await });
    for _ in 0..200 {
        if app.store.pool().status().waiting > 0 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(app.store.pool().status().waiting, 1);

    let (status, body) = readyz(&app).await;
    assert_eq!(status, 503, "{body}");
    assert_eq!(body["code"], "unavailable", "{body}");
    assert_eq!(body["check"], "pool", "{body}");
    assert_eq!(
        body["pool"],
        json!({"max_size": 1, "size": 1, "available": 0, "waiting": 1}),
        "{body}"
    );
    // The scrape answers too, without a connection: the pool as it stands, the queue left out.
    let m = scrape(&metrics).await;
    assert_eq!(m.get("fleetdesk_db_pool_waiting", &[]), 1.0);
    assert_eq!(m.get("fleetdesk_db_pool_available", &[]), 0.0);
    assert_eq!(m.get("fleetdesk_db_pool_size", &[]), 1.0);
    assert!(m.label_values("fleetdesk_jobs", "kind").is_empty());

    drop(held);
    let served = waiting.await.expect("the waiting request");
    assert_eq!(served.status, 200, "{}", served.text());
    assert_eq!(readyz(&app).await.0, 200);
}

#[tokio::test(flavor = "multi_thread")]
async fn the_binary_serves_metrics_only_on_the_metrics_bind() {
    let db = TestDb::new().await.expect("a test database");
    let data = TempDir::new("met");
    let cmd = fleetdesk_over(
        &[
            "serve",
            "--bind",
            "127.0.0.1:0",
            "--metrics-bind",
            "127.0.0.1:0",
        ],
        &db,
        data.path(),
    );
    let mut served = serve(cmd, Duration::from_secs(60)).await;
    let at = served
        .banner
        .lines()
        .find_map(|l| l.strip_prefix(fleetdesk::METRICS_AT))
        .unwrap_or_else(|| panic!("no metrics address printed\n{}", served.banner))
        .to_owned();
    let (host, path) = at.split_once('/').expect("an address and a path");
    assert_eq!(path, "metrics");
    let addr: std::net::SocketAddr = host.parse().expect("the metrics address");
    assert!(addr.ip().is_loopback() && addr.port() != 0, "{addr}");
    assert_ne!(host, served.client.host());

    let report = demo_report(&served.banner).expect("the demo tenant's report");
    let key = demo_agent_key(&report);
    for _ in 0..3 {
        assert_eq!(served.client.get(ACCOUNTS, &key).await.status, 200);
    }
    let public = served.client.send(Request::new("GET", "/metrics")).await;
    assert_error(&public, 404, "not_found");

    let metrics = Client::new(host);
    let m = scrape(&metrics).await;
    assert_eq!(calls(&m, "http", LIST_ACCOUNTS, "200"), 3.0);
    assert_eq!(calls(&m, "http", "other", "404"), 1.0);
    assert_eq!(m.get("fleetdesk_db_pool_max_size", &[]), 4.0);
    let status = served.proc.terminate(Duration::from_secs(35)).await;
    assert!(status.success(), "{status}\n{}", served.proc.output());
}
