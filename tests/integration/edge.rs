//! The HTTP edge, probed as a hostile or careless client would: 401 with `WWW-Authenticate`,
//! HEAD wherever GET works, duplicate Idempotency-Keys, caller request ids, MCP Origins (DNS
//! rebinding), JSON syntax errors, signed file links (expiry, nosniff, sandbox) and account
//! codes (path syntax, display spoofing, percent-decoded path segments).

use crate::media::link_key;
use crate::uploads::{item, png, upload_file};
use fleetdesk_api::Config;
use fleetdesk_api::links::{Links, Variant};
use fleetdesk_tests::assert::assert_error;
use fleetdesk_tests::client::Request;
use fleetdesk_tests::{Response, TestApp, spawn_app};
use serde_json::{Value, json};
use std::collections::BTreeMap;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

const API: &str = "/api/agent/v1";

/// An answer read to the end of its connection: what a HEAD really sends, byte for byte.
struct Raw {
    status: u16,
    headers: BTreeMap<String, String>,
    /// Every byte after the header block.
    after_headers: Vec<u8>,
}

/// Sends `head` (request line and headers, no body) with `Connection: close` on a new
/// connection and reads until the server closes it.
async fn raw(host: &str, head: &str) -> Raw {
    let mut stream = tokio::net::TcpStream::connect(host).await.expect("connect");
    let wire = format!("{head}Connection: close\r\n\r\n");
    stream.write_all(wire.as_bytes()).await.expect("write");
    let mut all = Vec::new();
    tokio::time::timeout(
        std::time::Duration::from_secs(20),
        stream.read_to_end(&mut all),
    )
    .await
    .expect("the server closes the connection")
    .expect("read");
    let end = all
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .unwrap_or_else(|| panic!("no header block: {}", String::from_utf8_lossy(&all)));
    let head = String::from_utf8_lossy(&all[..end]).into_owned();
    let mut lines = head.lines();
    let status = lines
        .next()
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|s| s.parse().ok())
        .expect("status line");
    let headers = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(k, v)| (k.trim().to_ascii_lowercase(), v.trim().to_owned()))
        .collect();
    Raw {
        status,
        headers,
        after_headers: all[end + 4..].to_vec(),
    }
}

fn bearer(key: &str) -> String {
    format!("Authorization: Bearer {key}\r\n")
}

// ---------------------------------------------------------------------------------------------
// 401 and WWW-Authenticate

#[tokio::test(flavor = "multi_thread")]
async fn a_401_says_how_to_authenticate_on_rest_and_mcp() {
    let app = spawn_app().await;
    let key = app.agent_key("op1");
    let wrong = format!("{}x", &key[..key.len() - 1]);
    let cases = [
        ("no key", Request::new("GET", &format!("{API}/accounts"))),
        (
            "malformed key",
            Request::new("GET", &format!("{API}/accounts")).bearer("nonsense"),
        ),
        (
            "unknown key",
            Request::new("GET", &format!("{API}/accounts")).bearer(&wrong),
        ),
        (
            "MCP without a key",
            Request::mcp(&json!({"jsonrpc": "2.0", "id": 1, "method": "ping"})),
        ),
        (
            "MCP with an unknown key",
            Request::mcp(&json!({"jsonrpc": "2.0", "id": 1, "method": "ping"})).bearer(&wrong),
        ),
    ];
    for (case, req) in cases {
        let res = app.client.send(req).await;
        assert_eq!(res.status, 401, "{case}: {}", res.text());
        assert_eq!(res.code(), "unauthorized", "{case}");
        assert_eq!(res.header("www-authenticate"), Some("Bearer"), "{case}");
    }
    // An upload link whose token is wrong: the token in the link is the credential that failed.
    let up = crate::uploads::new_upload(&app, &key, &json!({"code": "TW-T001"})).await;
    let link = up["upload_url"].as_str().expect("upload_url");
    let (base, _) = link.split_once("?t=").expect("a token in the link");
    let res = crate::uploads::put(&app, &format!("{base}?t=wrong"), vec![1, 2, 3]).await;
    assert_eq!(res.status, 401, "{}", res.text());
    assert_eq!(
        res.header("www-authenticate"),
        Some(r#"Bearer error="invalid_token""#)
    );
    // Other errors do not ask for credentials.
    let forbidden = app
        .client
        .get(&format!("{API}/accounts"), &app.agent_key("bot"))
        .await;
    assert_eq!(forbidden.status, 403, "{}", forbidden.text());
    assert_eq!(forbidden.header("www-authenticate"), None);
}

// ---------------------------------------------------------------------------------------------
// HEAD

#[tokio::test(flavor = "multi_thread")]
async fn head_answers_wherever_get_does_with_no_body() {
    let app = spawn_app().await;
    let host = app.client.host().to_owned();
    let key = app.agent_key("op1");
    let auth = bearer(&key);
    let personal = bearer(&app.personal_key("ann@acme.test"));
    // The platform admins' paths answer only an admin's key.
    let admin = bearer(&app.personal_key("root@example.com"));
    // The community role's reads answer only a community agent's key.
    let community = bearer(&app.agent_key("bot"));
    let mut cases: Vec<(String, String, &str)> = vec![
        ("/healthz".into(), String::new(), "application/json"),
        ("/readyz".into(), String::new(), "application/json"),
        ("/openapi.json".into(), String::new(), "application/json"),
        (
            "/openapi-agent.json".into(),
            String::new(),
            "application/json",
        ),
        ("/".into(), String::new(), "text/html"),
        ("/docs".into(), String::new(), "text/html"),
        (
            "/api/agent/v1/media?limit=5".into(),
            auth.clone(),
            "application/json",
        ),
    ];
    // Every GET operation the description lists without path parameters, with its API's key.
    let doc = app
        .client
        .send(Request::new("GET", "/openapi.json"))
        .await
        .json();
    let gets: Vec<String> = doc["paths"]
        .as_object()
        .expect("paths")
        .iter()
        .filter(|(path, item)| item.get("get").is_some() && !path.contains('{'))
        .map(|(path, _)| path.clone())
        .collect();
    assert!(gets.len() >= 10, "{gets:?}");
    // GET /wiki/entry names its entry in the query (id or title): one is made for it; search
    // needs its `q`.
    let made = app
        .client
        .post(
            &format!("{API}/wiki"),
            &key,
            &json!({"category": "voice", "title": "Edge entry", "body": "b",
                    "sources": [{"kind": "agent", "ref": "edge"}]}),
        )
        .await;
    assert!(made.status < 300, "{}", made.text());
    // The Personal API's reads of a workspace name it.
    let taiwan = app.workspace_id("Taiwan");
    for path in gets {
        let path = if path.ends_with("/wiki/entry") {
            format!("{path}?title=Edge%20entry")
        } else if path.ends_with("/wiki/search") {
            format!("{path}?q=edge")
        } else {
            path
        };
        let per_workspace = ["/api/user/v1/wiki", "/api/user/v1/ads"];
        let path = match path.split_once('?') {
            _ if !per_workspace.iter().any(|p| path.starts_with(p)) => path,
            Some(_) => format!("{path}&workspace={taiwan}"),
            None => format!("{path}?workspace={taiwan}"),
        };
        let key = if path.starts_with("/api/user/v1/admin/") {
            &admin
        } else if path.starts_with("/api/agent/v1/community/") {
            &community
        } else if path.starts_with("/api/user/") {
            &personal
        } else {
            &auth
        };
        cases.push((path, key.clone(), "application/json"));
    }
    for (path, extra, mime) in cases {
        let get = raw(
            &host,
            &format!("GET {path} HTTP/1.1\r\nHost: {host}\r\n{extra}"),
        )
        .await;
        assert_eq!(get.status, 200, "GET {path}");
        assert!(!get.after_headers.is_empty(), "GET {path} has a body");
        let head = raw(
            &host,
            &format!("HEAD {path} HTTP/1.1\r\nHost: {host}\r\n{extra}"),
        )
        .await;
        assert_eq!(head.status, 200, "HEAD {path}: {:?}", head.headers);
        assert!(
            head.after_headers.is_empty(),
            "HEAD {path} sent a body: {}",
            String::from_utf8_lossy(&head.after_headers)
        );
        assert!(
            head.headers
                .get("content-type")
                .is_some_and(|v| v.starts_with(mime)),
            "HEAD {path}: {:?}",
            head.headers
        );
        assert!(head.headers.contains_key("x-request-id"), "HEAD {path}");
    }
    // HEAD is authenticated like GET: no key, 401 and still no body.
    let head = raw(
        &host,
        &format!("HEAD /api/agent/v1/accounts HTTP/1.1\r\nHost: {host}\r\n"),
    )
    .await;
    assert_eq!(head.status, 401);
    assert_eq!(
        head.headers.get("www-authenticate").map(String::as_str),
        Some("Bearer")
    );
    assert!(head.after_headers.is_empty());
    // A method a GET path does not take lists HEAD among the allowed ones.
    let res = app
        .client
        .send(Request::new("DELETE", &format!("{API}/accounts")).bearer(&key))
        .await;
    assert_eq!(res.status, 405, "{}", res.text());
    let allow = res.header("allow").unwrap_or_default();
    assert!(
        allow.split(", ").any(|m| m == "HEAD") && allow.split(", ").any(|m| m == "GET"),
        "Allow: {allow}"
    );
    // A POST-only path does not take HEAD.
    let head = raw(
        &host,
        &format!("HEAD /api/agent/v1/heartbeat HTTP/1.1\r\nHost: {host}\r\n{auth}"),
    )
    .await;
    assert_eq!(head.status, 405);
}

// ---------------------------------------------------------------------------------------------
// Idempotency-Key and X-Request-Id headers

#[tokio::test(flavor = "multi_thread")]
async fn two_idempotency_keys_are_400_naming_the_header() {
    let app = spawn_app().await;
    let key = app.agent_key("op1");
    let body =
        json!({"state": "paused", "reason": "platform: checks", "occurred_at": "2026-11-21 10:00"});
    let path = format!("{API}/accounts/TW-T001/state");
    for (a, b) in [("k-1", "k-2"), ("same", "same")] {
        let res = app
            .client
            .send(
                Request::new("POST", &path)
                    .bearer(&key)
                    .header("Idempotency-Key", a)
                    .header("Idempotency-Key", b)
                    .json(&body),
            )
            .await;
        assert_eq!(res.status, 400, "{a}/{b}: {}", res.text());
        assert_eq!(res.code(), "invalid_request");
        assert_eq!(res.json()["field"], "Idempotency-Key");
    }
    assert_eq!(
        app.count("SELECT count(*) AS n FROM account_state_changes")
            .await,
        0,
        "a refused request changed the account"
    );
    assert_eq!(
        app.count("SELECT count(*) AS n FROM idempotency_keys")
            .await,
        0
    );
    // Without a key the caller is told nothing about its headers.
    let res = app
        .client
        .send(
            Request::new("POST", &path)
                .header("Idempotency-Key", "k-1")
                .header("Idempotency-Key", "k-2")
                .json(&body),
        )
        .await;
    assert_eq!(res.status, 401);
    // Once is fine.
    let res = app.client.post_idem(&path, &key, "k-1", &body).await;
    assert_eq!(res.status, 200, "{}", res.text());
}

#[tokio::test(flavor = "multi_thread")]
async fn a_callers_request_id_is_kept_only_when_short_and_plain() {
    let app = spawn_app().await;
    let key = app.agent_key("op1");
    let send = |ids: Vec<String>| {
        let mut req = Request::new("GET", &format!("{API}/accounts/NOPE/state"));
        for id in ids {
            req = req.header("X-Request-Id", &id);
        }
        app.client.send(req.bearer(&key))
    };
    let plain = "run-7:step.2_b";
    let sixty_four = "a".repeat(64);
    for kept in [plain, sixty_four.as_str()] {
        let res = send(vec![kept.to_owned()]).await;
        assert_eq!(res.header("x-request-id"), Some(kept));
        assert_eq!(res.json()["request_id"], kept);
    }
    let replaced = [
        "a".repeat(65),
        "two words".to_owned(),
        "status=200".to_owned(),
        "quote\"d".to_owned(),
        "fda_AbCd1234_abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQ".to_owned(),
        "%0a".to_owned(),
    ];
    for given in replaced {
        let res = send(vec![given.clone()]).await;
        let id = res.header("x-request-id").unwrap_or_default().to_owned();
        assert_ne!(id, given);
        assert!(uuid::Uuid::parse_str(&id).is_ok(), "{given:?} gave {id:?}");
        assert_eq!(res.json()["request_id"], id.as_str());
    }
    // Two ids: neither is trusted.
    let res = send(vec!["one".into(), "two".into()]).await;
    let id = res.header("x-request-id").unwrap_or_default();
    assert!(uuid::Uuid::parse_str(id).is_ok(), "{id:?}");
}

// ---------------------------------------------------------------------------------------------
// MCP Origin

fn mcp_ping(host_header: &str, origin: Option<&str>, key: &str) -> String {
    let body = r#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#;
    let origin = origin
        .map(|o| format!("Origin: {o}\r\n"))
        .unwrap_or_default();
    format!(
        "POST /api/mcp HTTP/1.1\r\nHost: {host_header}\r\n{}{origin}Content-Type: application/json\r\n\
         Accept: application/json, text/event-stream\r\nMCP-Protocol-Version: 2025-06-18\r\n\
         Content-Length: {}\r\n\r\n{body}",
        bearer(key),
        body.len()
    )
}

/// The status of an MCP ping sent with this Host header and Origin.
async fn ping_status(host: &str, host_header: &str, origin: Option<&str>, key: &str) -> u16 {
    // `raw` adds `Connection: close` and the blank line after the headers; the ping carries
    // its body, so it is sent whole here.
    let mut stream = tokio::net::TcpStream::connect(host).await.expect("connect");
    let wire =
        mcp_ping(host_header, origin, key).replacen("\r\n\r\n", "\r\nConnection: close\r\n\r\n", 1);
    stream.write_all(wire.as_bytes()).await.expect("write");
    let mut all = Vec::new();
    stream.read_to_end(&mut all).await.expect("read");
    String::from_utf8_lossy(&all)
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .expect("status")
}

#[tokio::test(flavor = "multi_thread")]
async fn without_a_base_url_mcp_takes_only_loopback_browser_origins() {
    let app = spawn_app().await;
    let host = app.client.host().to_owned();
    let port = host.rsplit(':').next().unwrap().to_owned();
    let key = app.agent_key("op1");
    // A DNS-rebinding page: its name now points at this machine, so Host and Origin agree.
    let rebound = format!("evil.example:{port}");
    assert_eq!(
        ping_status(&host, &rebound, Some(&format!("http://{rebound}")), &key).await,
        403
    );
    for refused in [
        "http://evil.example",
        "http://localhost.evil.example",
        "http://192.168.1.5",
        "null",
    ] {
        assert_eq!(
            ping_status(&host, &host, Some(refused), &key).await,
            403,
            "{refused}"
        );
    }
    for accepted in [
        "http://localhost:6274".to_owned(),
        "http://127.0.0.1".to_owned(),
        format!("http://{host}"),
        "https://127.3.2.1:8443".to_owned(),
        "http://[::1]:3000".to_owned(),
    ] {
        assert_eq!(
            ping_status(&host, &host, Some(&accepted), &key).await,
            200,
            "{accepted}"
        );
    }
    // Not a browser: no Origin, any Host.
    assert_eq!(ping_status(&host, &rebound, None, &key).await, 200);
}

#[tokio::test(flavor = "multi_thread")]
async fn with_a_base_url_mcp_takes_only_that_origin() {
    let app = spawn_app().await;
    let config = Config {
        rate_limit_per_minute: 10_000,
        base_url: Some("https://fleet.example.com/desk/".into()),
        ..Config::default()
    };
    let (state, _store) = fleetdesk::compose(&app.db.url, &app.data_dir, config, 2, false, None)
        .await
        .expect("compose");
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let host = listener.local_addr().expect("addr").to_string();
    let server = fleetdesk_http::server(state, listener, 1).expect("server");
    let handle = server.handle();
    tokio::spawn(server);
    let key = app.agent_key("op1");
    assert_eq!(
        ping_status(&host, &host, Some("https://fleet.example.com"), &key).await,
        200
    );
    for refused in [
        "http://fleet.example.com",
        "https://fleet.example.com:8443",
        "http://localhost:6274",
        "http://127.0.0.1",
    ] {
        assert_eq!(
            ping_status(&host, &host, Some(refused), &key).await,
            403,
            "{refused}"
        );
    }
    assert_eq!(ping_status(&host, &host, None, &key).await, 200);
    handle.stop(true).await;
}

// ---------------------------------------------------------------------------------------------
// JSON syntax errors

#[tokio::test(flavor = "multi_thread")]
async fn a_json_syntax_error_names_the_request_body_not_a_field() {
    let app = spawn_app().await;
    let key = app.agent_key("op1");
    let res = app
        .client
        .send(
            Request::new("POST", &format!("{API}/drafts"))
                .bearer(&key)
                .header("Content-Type", "application/json")
                .raw(br#"{"code": "TW-T001", "body": "hi""#.to_vec()),
        )
        .await;
    assert_eq!(res.status, 400, "{}", res.text());
    let v = res.json();
    assert_eq!(v["code"], "invalid_request");
    assert_eq!(v["field"], "(request body)", "{v}");
    let message = v["message"].as_str().unwrap_or_default();
    assert!(
        message.starts_with("the request body is not valid JSON"),
        "{message}"
    );
    // A draft's own `body` field is named as such: the two cannot be confused.
    let res = app
        .client
        .post(
            &format!("{API}/drafts"),
            &key,
            &json!({"code": "TW-T001", "body": 5}),
        )
        .await;
    assert_eq!(res.status, 400, "{}", res.text());
    assert_eq!(res.json()["field"], "body");
}

// ---------------------------------------------------------------------------------------------
// Signed file links

fn assert_sandboxed(case: &str, headers: &BTreeMap<String, String>) {
    assert_eq!(
        headers.get("x-content-type-options").map(String::as_str),
        Some("nosniff"),
        "{case}: {headers:?}"
    );
    let csp = headers
        .get("content-security-policy")
        .cloned()
        .unwrap_or_default();
    let directives: Vec<&str> = csp.split(';').map(str::trim).collect();
    assert!(
        directives.contains(&"sandbox") && directives.contains(&"default-src 'none'"),
        "{case}: Content-Security-Policy {csp:?}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn file_links_refuse_far_expiries_and_are_served_sandboxed() {
    let app = spawn_app().await;
    let host = app.client.host().to_owned();
    let key = app.agent_key("op1");
    let file = png(3, 3, b"edge");
    let done = upload_file(
        &app,
        &key,
        &json!({"code": "TW-T001", "mime_type": "image/png"}),
        file.clone(),
    )
    .await;
    let id = done["media_id"].clone();
    let listed = item(&app, &key, &id).await;
    let url = listed["url"].as_str().expect("url").to_owned();
    let path = url.strip_prefix(&app.base).expect("own link").to_owned();

    let get = raw(&host, &format!("GET {path} HTTP/1.1\r\nHost: {host}\r\n")).await;
    assert_eq!(get.status, 200);
    assert_eq!(get.after_headers, file);
    assert_sandboxed("GET file", &get.headers);
    let head = raw(&host, &format!("HEAD {path} HTTP/1.1\r\nHost: {host}\r\n")).await;
    assert_eq!(head.status, 200);
    assert!(head.after_headers.is_empty(), "HEAD sent a body");
    assert_sandboxed("HEAD file", &head.headers);
    let thumb = listed["thumb_url"].as_str().expect("thumb_url");
    let thumb = thumb.strip_prefix(&app.base).expect("own link");
    let res = raw(&host, &format!("GET {thumb} HTTP/1.1\r\nHost: {host}\r\n")).await;
    assert_eq!(res.status, 200);
    assert_sandboxed("GET thumb", &res.headers);

    // Links signed with the service's own key: only an expiry within a link's lifetime works.
    let links = Links::new(&link_key(&app).await);
    let media_id = uuid::Uuid::parse_str(id.as_str().unwrap()).unwrap();
    let now = jiff::Timestamp::now();
    let fetch = |e: i64| {
        let url = links.url("", media_id, Variant::File, e);
        let host = host.clone();
        async move { raw(&host, &format!("GET {url} HTTP/1.1\r\nHost: {host}\r\n")).await }
    };
    let fresh = fetch(Links::expiry(now)).await;
    assert_eq!(fresh.status, 200, "a link as the service makes it");
    for (case, e) in [
        ("year 2100", 4_102_444_800),
        (
            "an hour past the longest lifetime",
            now.as_second() + Links::MAX_AHEAD_SECONDS + 3600,
        ),
        ("ten years", now.as_second() + 10 * 365 * 86_400),
        ("expired", now.as_second() - 1),
    ] {
        let res = fetch(e).await;
        assert_eq!(res.status, 403, "{case}");
        assert_sandboxed(case, &res.headers);
        let body: Value = serde_json::from_slice(&res.after_headers).expect("error body");
        assert_eq!(body["code"], "forbidden", "{case}");
    }
}

// ---------------------------------------------------------------------------------------------
// Account codes

async fn add_account(app: &TestApp, code: &str) -> Response {
    app.client
        .post(
            &format!("{API}/accounts"),
            &app.agent_key("op1"),
            &json!({"persona_id": app.persona_id("Mia"), "platform": "x", "code": code}),
        )
        .await
}

#[tokio::test(flavor = "multi_thread")]
async fn codes_that_a_path_cannot_address_or_that_spoof_display_are_400() {
    let app = spawn_app().await;
    let before = app.count("SELECT count(*) AS n FROM account_slots").await;
    for code in [
        "TW/X001",
        "TW%2FX1",
        "TW?X1",
        "TW#X1",
        "TW\u{7}X1",
        "TW-X\u{202E}100",
        "TW\u{202D}X1",
        "TW\u{2066}X1",
        "TW\u{2069}X1",
        "TW\u{200B}X1",
        "TW\u{200D}X1",
        "TW\u{FEFF}X1",
        "..",
    ] {
        let res = add_account(&app, code).await;
        assert_eq!(res.status, 400, "{code:?}: {}", res.text());
        assert_eq!(res.code(), "invalid_request", "{code:?}");
        assert_eq!(res.json()["field"], "code", "{code:?}: {}", res.text());
    }
    assert_eq!(
        app.count("SELECT count(*) AS n FROM account_slots").await,
        before
    );

    // The tenant file refuses them too, naming where.
    let file = fleetdesk_tests::TEST_TENANT.replace(
        r#"{"code": "TW-T002", "platform": "threads", "state": "active"}"#,
        r#"{"code": "TW-T\u202e200", "platform": "threads", "state": "active"}"#,
    );
    assert_ne!(
        file,
        fleetdesk_tests::TEST_TENANT,
        "the replacement applies"
    );
    let Err(e) = fleetdesk_tenancy::tenant_file::TenantFile::parse(&file) else {
        panic!("a bidirectional override in a code was accepted");
    };
    assert!(
        e.to_string()
            .contains("organizations[0].workspaces[0].personas[1].accounts[0].code"),
        "{e}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_code_of_any_script_or_with_a_plus_is_addressed_percent_encoded() {
    let app = spawn_app().await;
    let key = app.agent_key("op1");
    let body = json!({"state": "warming", "occurred_at": "2026-11-21 10:00"});
    for (code, stored, encoded) in [
        ("tw-測試1", "TW-測試1", "TW-%E6%B8%AC%E8%A9%A61"),
        ("mia+old", "MIA+OLD", "MIA%2BOLD"),
        ("café", "CAFÉ", "caf%C3%A9"),
    ] {
        let res = add_account(&app, code).await;
        assert_eq!(res.status, 201, "{code}: {}", res.text());
        assert_eq!(res.json()["code"], stored);
        let res = app
            .client
            .post(&format!("{API}/accounts/{encoded}/state"), &key, &body)
            .await;
        assert_eq!(res.status, 200, "{encoded}: {}", res.text());
        assert_eq!(res.json()["code"], stored, "{encoded}: {}", res.text());
    }
}

// ---------------------------------------------------------------------------------------------
// Query strings

#[tokio::test(flavor = "multi_thread")]
async fn a_query_parameter_sent_twice_is_400_naming_it() {
    let app = spawn_app().await;
    let key = app.agent_key("op1");
    for (query, field) in [
        ("tag=cat&tag=dog", "tag"),
        ("limit=5&limit=6", "limit"),
        ("sort=newest&q=x&sort=newest", "sort"),
    ] {
        let res = app.client.get(&format!("{API}/media?{query}"), &key).await;
        assert_eq!(res.status, 400, "{query}: {}", res.text());
        assert_eq!(res.code(), "invalid_request", "{query}");
        assert_eq!(res.json()["field"], field, "{query}");
    }
    // Once each is fine; without a key it is still 401 first.
    let res = app
        .client
        .get(&format!("{API}/media?tag=cat&limit=5"), &key)
        .await;
    assert_eq!(res.status, 200, "{}", res.text());
    let res = app
        .client
        .send(Request::new("GET", &format!("{API}/media?tag=a&tag=b")))
        .await;
    assert_eq!(res.status, 401, "{}", res.text());
}

// ---------------------------------------------------------------------------------------------
// Bodies: JSON only, read only for a known key, in bounded time

#[tokio::test(flavor = "multi_thread")]
async fn a_body_sent_as_anything_but_json_is_415_and_does_nothing() {
    let app = spawn_app().await;
    let key = app.agent_key("op1");
    let heartbeat = |content_type: Option<&str>, run_id: &str| {
        let body = serde_json::to_vec(&json!({"run_id": run_id})).expect("json");
        let req = Request::new("POST", &format!("{API}/heartbeat"))
            .bearer(&key)
            .raw(body);
        match content_type {
            Some(t) => req.header("Content-Type", t),
            None => req,
        }
    };
    for refused in [
        "text/plain",
        "application/x-www-form-urlencoded",
        "multipart/form-data; boundary=x",
        "application/jsonp",
    ] {
        let res = app.client.send(heartbeat(Some(refused), "refused")).await;
        let v = assert_error(&res, 415, "unsupported_media_type");
        assert_eq!(v["field"], "Content-Type", "{refused}: {v}");
    }
    assert_eq!(
        app.count("SELECT count(*) AS n FROM agent_runs WHERE run_id = 'refused'")
            .await,
        0,
        "a refused body changed nothing"
    );
    for taken in [
        Some("application/json"),
        Some("Application/JSON; charset=utf-8"),
        Some("application/merge-patch+json"),
        None,
    ] {
        let res = app.client.send(heartbeat(taken, "taken")).await;
        assert_eq!(res.status, 200, "{taken:?}: {}", res.text());
    }
    // An unknown key learns nothing of the body: 401 first.
    let res = app
        .client
        .send(
            Request::new("POST", &format!("{API}/heartbeat"))
                .bearer("fda_AAAAAAAA_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA")
                .header("Content-Type", "text/plain")
                .raw(b"hi".to_vec()),
        )
        .await;
    assert_error(&res, 401, "unauthorized");
    // MCP too.
    let res = app
        .client
        .send(
            Request::new("POST", "/api/mcp")
                .bearer(&key)
                .header("Content-Type", "text/plain")
                .raw(br#"{"jsonrpc": "2.0", "id": 1, "method": "ping"}"#.to_vec()),
        )
        .await;
    assert_error(&res, 415, "unsupported_media_type");
}

/// Sends the head of a POST declaring `declared` bytes and `sent` of them, then waits (at most
/// 30 s) for the answer: its status and body.
async fn partial_post(host: &str, path: &str, key: &str, declared: usize, sent: &[u8]) -> Raw {
    let mut stream = tokio::net::TcpStream::connect(host).await.expect("connect");
    let head = format!(
        "POST {path} HTTP/1.1\r\nHost: {host}\r\n{}Content-Type: application/json\r\n\
         Content-Length: {declared}\r\n\r\n",
        bearer(key)
    );
    stream.write_all(head.as_bytes()).await.expect("write");
    stream.write_all(sent).await.expect("write");
    let mut all = Vec::new();
    let mut buf = [0u8; 4096];
    // Until the header block and the body it declares are in.
    loop {
        let n = tokio::time::timeout(std::time::Duration::from_secs(30), stream.read(&mut buf))
            .await
            .expect("the server answers within 30 s")
            .expect("read");
        all.extend_from_slice(&buf[..n]);
        if n == 0 || all.windows(4).any(|w| w == b"\r\n\r\n") && all.ends_with(b"}") {
            break;
        }
    }
    let end = all.windows(4).position(|w| w == b"\r\n\r\n").expect("head");
    let head = String::from_utf8_lossy(&all[..end]).into_owned();
    let status = head
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .expect("status");
    Raw {
        status,
        headers: BTreeMap::new(),
        after_headers: all[end + 4..].to_vec(),
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_body_is_read_only_for_a_known_key_and_only_for_so_long() {
    let app = spawn_app().await;
    let host = app.client.host().to_owned();
    let path = format!("{API}/heartbeat");
    // An unknown key is answered at once, though its body never comes: nothing waits for it.
    let started = std::time::Instant::now();
    let stranger = "fda_AAAAAAAA_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA";
    let res = partial_post(&host, &path, stranger, 1000, b"{").await;
    assert_eq!(
        res.status,
        401,
        "{}",
        String::from_utf8_lossy(&res.after_headers)
    );
    assert!(started.elapsed() < std::time::Duration::from_secs(5));
    // So is MCP.
    let res = partial_post(&host, "/api/mcp", stranger, 1000, b"{").await;
    assert_eq!(res.status, 401);
    // A known key whose body stops half way is answered 408 once the time for 1,000 bytes
    // (10 s) is up, and nothing is written.
    let runs = app.count("SELECT count(*) AS n FROM agent_runs").await;
    let started = std::time::Instant::now();
    let res = partial_post(&host, &path, &app.agent_key("op1"), 1000, b"{\"run_id\"").await;
    let waited = started.elapsed();
    assert_eq!(
        res.status,
        408,
        "{}",
        String::from_utf8_lossy(&res.after_headers)
    );
    let body: Value = serde_json::from_slice(&res.after_headers).expect("json");
    assert_eq!(body["code"], "request_timeout", "{body}");
    assert!(waited >= std::time::Duration::from_secs(10), "{waited:?}");
    assert_eq!(
        app.count("SELECT count(*) AS n FROM agent_runs").await,
        runs
    );
}

// ---------------------------------------------------------------------------------------------
// Forwarding headers: believed only from the proxies the operator names

/// The upload link `POST /uploads` answers, asked with forwarding headers that claim the
/// request was addressed to https://fleet.example.com.
async fn link_base(app: &TestApp) -> String {
    let res = app
        .client
        .send(
            Request::new("POST", &format!("{API}/uploads"))
                .bearer(&app.agent_key("op1"))
                .header("X-Forwarded-Host", "fleet.example.com")
                .header("X-Forwarded-Proto", "https")
                .json(&json!({"code": "TW-T001"})),
        )
        .await;
    assert_eq!(res.status, 201, "{}", res.text());
    let url = res.json()["upload_url"].as_str().expect("url").to_owned();
    url.split("/api/").next().expect("base").to_owned()
}

/// Ann signs in to the dashboard from a page of https://fleet.example.com, with forwarding
/// headers that say the request was addressed there.
async fn forwarded_sign_in(app: &TestApp) -> Response {
    let form = format!("key={}", app.personal_key("ann@acme.test"));
    app.client
        .send(
            Request::new("POST", "/dashboard/sign-in")
                .header("Origin", "https://fleet.example.com")
                .header("X-Forwarded-Host", "fleet.example.com")
                .header("X-Forwarded-Proto", "https")
                .header("Content-Type", "application/x-www-form-urlencoded")
                .raw(form.into_bytes()),
        )
        .await
}

#[tokio::test(flavor = "multi_thread")]
async fn forwarding_headers_count_only_from_a_trusted_proxy() {
    // From anyone: the links are made on the address the connection carries.
    let app = spawn_app().await;
    assert_eq!(link_base(&app).await, app.base);
    // The dashboard's Origin check does not follow them either: a page of another site that
    // forwards its own name is still another site.
    let res = forwarded_sign_in(&app).await;
    assert_eq!(res.status, 403, "{}", res.text());

    // From the proxy the operator named (the tests connect from 127.0.0.1): believed.
    let behind_proxy = fleetdesk_tests::spawn_app_with(fleetdesk_tests::AppOptions {
        trusted_proxies: vec!["127.0.0.1".parse().expect("ip")],
        ..Default::default()
    })
    .await;
    assert_eq!(link_base(&behind_proxy).await, "https://fleet.example.com");
    let res = forwarded_sign_in(&behind_proxy).await;
    assert_eq!(res.status, 303, "{}", res.text());
}
