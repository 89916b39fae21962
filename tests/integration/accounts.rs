//! Agent API: work and accounts — GET /accounts, POST /accounts, POST /accounts/{code}/state,
//! POST /accounts/{code}/avatar, POST /heartbeat and GET /work/today, over the standard tenant.

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use fleetdesk_tests::assert::{assert_error, assert_error_in, case_prefix};
use fleetdesk_tests::{AppOptions, Response, TestApp, spawn_app, spawn_app_with};
use serde_json::{Value, json};
use sha2::{Digest, Sha256};
use uuid::Uuid;

const API: &str = "/api/agent/v1";

/// A valid 1x1 PNG (the same bytes as the accounts crate's own tests).
const PNG_1X1: &[u8] = &[
    0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A, 0x00, 0x00, 0x00, 0x0D, 0x49, 0x48, 0x44, 0x52,
    0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x01, 0x08, 0x06, 0x00, 0x00, 0x00, 0x1F, 0x15, 0xC4,
    0x89, 0x00, 0x00, 0x00, 0x0A, 0x49, 0x44, 0x41, 0x54, 0x78, 0x9C, 0x63, 0x00, 0x01, 0x00, 0x00,
    0x05, 0x00, 0x01, 0x0D, 0x0A, 0x2D, 0xB4, 0x00, 0x00, 0x00, 0x00, 0x49, 0x45, 0x4E, 0x44, 0xAE,
    0x42, 0x60, 0x82,
];

const MAX_AVATAR: usize = 5 * 1024 * 1024;

// ---------------------------------------------------------------------------------------------
// helpers

async fn get(app: &TestApp, key: &str, path: &str) -> Response {
    app.client.get(&format!("{API}{path}"), key).await
}

async fn post(app: &TestApp, key: &str, path: &str, body: Value) -> Response {
    app.client.post(&format!("{API}{path}"), key, &body).await
}

#[track_caller]
fn assert_status(res: &Response, status: u16) {
    assert_eq!(res.status, status, "body: {}", res.text());
}

/// 400 invalid_request naming `field`.
#[track_caller]
fn assert_invalid(res: &Response, field: &str) {
    assert_invalid_in("", res, field);
}

/// [`assert_invalid`] for one case of a table: every failure message starts with `case`.
#[track_caller]
fn assert_invalid_in(case: &str, res: &Response, field: &str) {
    let at = case_prefix(case);
    assert_eq!(
        res.status,
        400,
        "{at}expected 400 on {field}, body: {}",
        res.text()
    );
    let v = res.json();
    assert_eq!(v["code"], "invalid_request", "{at}{v}");
    assert_eq!(v["field"], field, "{at}{v}");
    assert!(
        v["message"].as_str().is_some_and(|m| !m.is_empty()),
        "{at}{v}"
    );
}

/// POSTs each body to `path` and expects a 400 invalid_request naming the field. A failure names
/// the path and the body of its case.
async fn assert_each_invalid(app: &TestApp, key: &str, path: &str, cases: &[(Value, &str)]) {
    for (body, field) in cases {
        let res = post(app, key, path, body.clone()).await;
        assert_invalid_in(&format!("POST {path} {body}"), &res, field);
    }
}

async fn accounts(app: &TestApp, agent: &str) -> Vec<Value> {
    let res = get(app, &app.agent_key(agent), "/accounts").await;
    assert_status(&res, 200);
    res.json()["accounts"]
        .as_array()
        .expect("accounts[]")
        .clone()
}

async fn account(app: &TestApp, agent: &str, code: &str, platform: &str) -> Value {
    accounts(app, agent)
        .await
        .into_iter()
        .find(|a| a["code"] == code && a["platform"] == platform)
        .unwrap_or_else(|| panic!("{agent} has no {code} on {platform}"))
}

fn codes(list: &[Value]) -> Vec<String> {
    let mut out: Vec<String> = list
        .iter()
        .map(|a| {
            format!(
                "{}/{}",
                a["code"].as_str().unwrap(),
                a["platform"].as_str().unwrap()
            )
        })
        .collect();
    out.sort();
    out
}

/// The ids the tenant file printed for an account of a persona.
fn tenant_account(app: &TestApp, persona: &str, code: &str) -> (Uuid, Uuid) {
    let a = app
        .tenant
        .organizations
        .iter()
        .flat_map(|o| &o.workspaces)
        .flat_map(|w| &w.personas)
        .filter(|p| p.name == persona)
        .flat_map(|p| &p.accounts)
        .find(|a| a.code == code)
        .unwrap_or_else(|| panic!("{persona} has no {code}"));
    (a.slot_id, a.account_id)
}

/// `/accounts/{code}/{action}`, where `code` may carry a query (`OLD1?platform=tiktok`).
fn code_path(code: &str, action: &str) -> String {
    match code.split_once('?') {
        Some((code, query)) => format!("/accounts/{code}/{action}?{query}"),
        None => format!("/accounts/{code}/{action}"),
    }
}

async fn report(app: &TestApp, agent: &str, code: &str, body: Value) -> Response {
    post(app, &app.agent_key(agent), &code_path(code, "state"), body).await
}

async fn avatar(app: &TestApp, agent: &str, code: &str, data: &str) -> Response {
    post(
        app,
        &app.agent_key(agent),
        &code_path(code, "avatar"),
        json!({"data": data}),
    )
    .await
}

fn b64(bytes: &[u8]) -> String {
    STANDARD.encode(bytes)
}

fn sha256_hex(bytes: &[u8]) -> String {
    Sha256::digest(bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

fn is_uuid(v: &Value) -> bool {
    v.as_str().is_some_and(|s| Uuid::parse_str(s).is_ok())
}

fn is_utc_second(v: &Value) -> bool {
    let Some(s) = v.as_str() else { return false };
    let b = s.as_bytes();
    s.len() == 20 && s.ends_with('Z') && b[10] == b'T' && s.parse::<jiff::Timestamp>().is_ok()
}

fn today_in(zone: &str) -> String {
    jiff::Timestamp::now()
        .to_zoned(jiff::tz::TimeZone::get(zone).unwrap())
        .date()
        .to_string()
}

/// A minimal baseline JPEG header (SOI, JFIF, SOF0 of 3x2), enough to be judged from the bytes.
fn jpeg_3x2() -> Vec<u8> {
    let mut b = vec![0xFF, 0xD8];
    b.extend_from_slice(&[
        0xFF, 0xE0, 0x00, 0x10, b'J', b'F', b'I', b'F', 0x00, 0x01, 0x01, 0x00, 0x00, 0x01, 0x00,
        0x01, 0x00, 0x00,
    ]);
    b.extend_from_slice(&[
        0xFF, 0xC0, 0x00, 0x11, 0x08, 0x00, 0x02, 0x00, 0x03, 0x03, 0x01, 0x22, 0x00, 0x02, 0x11,
        0x01, 0x03, 0x11, 0x01,
    ]);
    b.extend_from_slice(&[0xFF, 0xD9]);
    b
}

/// A minimal extended WebP header (RIFF, WEBP, VP8X of 4x5).
fn webp_4x5() -> Vec<u8> {
    let mut chunk = b"VP8X".to_vec();
    chunk.extend_from_slice(&10u32.to_le_bytes());
    chunk.extend_from_slice(&[0, 0, 0, 0, 3, 0, 0, 4, 0, 0]);
    let mut b = b"RIFF".to_vec();
    b.extend_from_slice(&((4 + chunk.len()) as u32).to_le_bytes());
    b.extend_from_slice(b"WEBP");
    b.extend_from_slice(&chunk);
    b
}

/// The 1x1 PNG with its IHDR width changed to 2: another image, judged 2x1.
fn png_2x1() -> Vec<u8> {
    let mut b = PNG_1X1.to_vec();
    b[19] = 2;
    b
}

/// The number of rows of a table.
async fn rows(app: &TestApp, table: &str) -> i64 {
    app.count(&format!("SELECT count(*) AS n FROM {table}"))
        .await
}

async fn state_changes(app: &TestApp) -> i64 {
    rows(app, "account_state_changes").await
}

// ---------------------------------------------------------------------------------------------
// GET /accounts

#[tokio::test(flavor = "multi_thread")]
async fn list_accounts_shows_the_agents_own_accounts_with_every_field() {
    let app = spawn_app().await;
    let res = get(&app, &app.agent_key("op1"), "/accounts").await;
    assert_status(&res, 200);
    let v = res.json();
    assert_eq!(v["agent"]["name"], "op1");
    assert_eq!(v["agent"]["id"], app.agent_id("op1").to_string());
    let list = v["accounts"].as_array().unwrap();
    assert_eq!(
        codes(list),
        [
            "TW-I001/instagram",
            "TW-K001/tiktok",
            "TW-L001/threads",
            "TW-L002/tiktok",
            "TW-T001/threads"
        ]
    );
    let expected = [
        json!({"code": "TW-T001", "legacy_code": null, "platform": "threads", "handle": "mia", "state": "active", "daily_target": 2}),
        json!({"code": "TW-I001", "legacy_code": null, "platform": "instagram", "handle": null, "state": "active", "daily_target": 1}),
        json!({"code": "TW-K001", "legacy_code": null, "platform": "tiktok", "handle": null, "state": "warming", "daily_target": 1}),
        json!({"code": "TW-L001", "legacy_code": "OLD1", "platform": "threads", "handle": null, "state": "active", "daily_target": 1}),
        json!({"code": "TW-L002", "legacy_code": "OLD1", "platform": "tiktok", "handle": null, "state": "active", "daily_target": 1}),
    ];
    for e in expected {
        let a = list
            .iter()
            .find(|a| a["code"] == e["code"] && a["platform"] == e["platform"])
            .unwrap();
        for (k, want) in e.as_object().unwrap() {
            assert_eq!(&a[k], want, "{k} of {a}");
        }
        assert_eq!(a["market"], "TW", "{a}");
        assert_eq!(a["timezone"], "Asia/Taipei", "{a}");
        assert_eq!(a["persona"], "Mia", "{a}");
        assert_eq!(a["generation"], 1, "{a}");
        assert_eq!(a["publishing"], "agent", "{a}");
        let (slot, gen_id) = tenant_account(&app, "Mia", e["code"].as_str().unwrap());
        assert_eq!(a["slot_id"], slot.to_string(), "{a}");
        assert_eq!(a["account_id"], gen_id.to_string(), "{a}");
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn list_accounts_never_shows_another_agents_workspaces_or_organizations_accounts() {
    let app = spawn_app().await;
    let op2 = accounts(&app, "op2").await;
    assert_eq!(codes(&op2), ["TW-T002/threads"]);
    assert_eq!(op2[0]["persona"], "Leo");
    assert_eq!(op2[0]["state"], "active");

    let jp1 = accounts(&app, "jp1").await;
    assert_eq!(codes(&jp1), ["JP-T001/threads"]);
    assert_eq!(jp1[0]["persona"], "Yui");
    assert_eq!(jp1[0]["market"], "JP");
    assert_eq!(jp1[0]["timezone"], "Asia/Tokyo");

    // Other Agency's own TW-T001, not Mia's one with the same code.
    let other1 = accounts(&app, "other1").await;
    assert_eq!(codes(&other1), ["TW-T001/threads"]);
    assert_eq!(other1[0]["persona"], "Zoe");
    assert_eq!(other1[0]["handle"], Value::Null);
    assert_eq!(other1[0]["daily_target"], 1);
    let (zoe_slot, _) = tenant_account(&app, "Zoe", "TW-T001");
    let (mia_slot, _) = tenant_account(&app, "Mia", "TW-T001");
    assert_eq!(other1[0]["slot_id"], zoe_slot.to_string());
    assert_ne!(other1[0]["slot_id"], mia_slot.to_string());

    // A community agent lacks accounts:read.
    let bot = get(&app, &app.agent_key("bot"), "/accounts").await;
    assert_error(&bot, 403, "forbidden");
}

#[tokio::test(flavor = "multi_thread")]
async fn list_accounts_needs_a_valid_key() {
    let app = spawn_app().await;
    let none = app
        .client
        .send(fleetdesk_tests::client::Request::new(
            "GET",
            &format!("{API}/accounts"),
        ))
        .await;
    assert_error(&none, 401, "unauthorized");
    let malformed = get(&app, "not-a-key", "/accounts").await;
    assert_error(&malformed, 401, "unauthorized");
    let unknown = get(
        &app,
        &format!("fda_AAAAAAAA_{}", "A".repeat(43)),
        "/accounts",
    )
    .await;
    assert_error(&unknown, 401, "unauthorized");
    // A personal key is not an agent key.
    let personal = get(&app, &app.personal_key("ann@acme.test"), "/accounts").await;
    assert_eq!(personal.status, 403, "{}", personal.text());
}

// ---------------------------------------------------------------------------------------------
// POST /accounts

#[tokio::test(flavor = "multi_thread")]
async fn add_account_creates_the_code_and_its_first_generation() {
    let app = spawn_app().await;
    let key = app.agent_key("op1");
    let mia = app.persona_id("Mia");
    let generations = rows(&app, "account_generations").await;

    let res = post(
        &app,
        &key,
        "/accounts",
        json!({"persona_id": mia, "platform": "threads", "code": "tw-t009"}),
    )
    .await;
    assert_status(&res, 201);
    let created = res.json();
    assert_eq!(created["created"], true);
    assert_eq!(created["code"], "TW-T009");
    assert_eq!(created["platform"], "threads");
    assert_eq!(created["market"], "TW");
    assert!(
        is_uuid(&created["slot_id"]) && is_uuid(&created["account_id"]),
        "{created}"
    );
    assert_eq!(rows(&app, "account_generations").await, generations + 1);

    // The same persona and code again, in any case: 200, created false, the same ids.
    for code in ["tw-t009", "TW-T009"] {
        let again = post(
            &app,
            &key,
            "/accounts",
            json!({"persona_id": mia, "platform": "threads", "code": code}),
        )
        .await;
        assert_status(&again, 200);
        let v = again.json();
        assert_eq!(v["created"], false);
        assert_eq!(v["slot_id"], created["slot_id"]);
        assert_eq!(v["account_id"], created["account_id"]);
        assert_eq!(v["code"], "TW-T009");
    }
    assert_eq!(
        app.count("SELECT count(*) AS n FROM account_slots WHERE code = 'TW-T009'")
            .await,
        1
    );
    assert_eq!(rows(&app, "account_generations").await, generations + 1);

    // It is listed, warming by default, generation 1.
    let listed = account(&app, "op1", "TW-T009", "threads").await;
    assert_eq!(listed["state"], "warming");
    assert_eq!(listed["generation"], 1);
    assert_eq!(listed["persona"], "Mia");
    assert_eq!(listed["market"], "TW");
    assert_eq!(listed["timezone"], "Asia/Taipei");
    assert_eq!(listed["slot_id"], created["slot_id"]);
    assert_eq!(listed["account_id"], created["account_id"]);
    assert_eq!(listed["publishing"], "agent");

    // An existing code of the tenant under its own persona answers its ids.
    let (slot, gen_id) = tenant_account(&app, "Mia", "TW-T001");
    let existing = post(
        &app,
        &key,
        "/accounts",
        json!({"persona_id": mia, "platform": "threads", "code": "TW-T001"}),
    )
    .await;
    assert_status(&existing, 200);
    assert_eq!(existing.json()["created"], false);
    assert_eq!(existing.json()["slot_id"], slot.to_string());
    assert_eq!(existing.json()["account_id"], gen_id.to_string());

    // The same code on another platform is another account.
    let other_platform = post(
        &app,
        &key,
        "/accounts",
        json!({"persona_id": mia, "platform": "x", "code": "TW-T009"}),
    )
    .await;
    assert_status(&other_platform, 201);
    assert_ne!(other_platform.json()["slot_id"], created["slot_id"]);
}

#[tokio::test(flavor = "multi_thread")]
async fn add_account_takes_state_market_handle_and_onboarding_date() {
    let app = spawn_app().await;
    let key = app.agent_key("op1");
    let mia = app.persona_id("Mia");
    let res = post(
        &app,
        &key,
        "/accounts",
        json!({"persona_id": mia, "platform": "instagram", "code": "jp-i001", "market": "jp",
               "handle": "@mia_jp", "state": "active", "onboarded_at": "2026-11-21"}),
    )
    .await;
    assert_status(&res, 201);
    assert_eq!(res.json()["market"], "JP");
    let listed = account(&app, "op1", "JP-I001", "instagram").await;
    assert_eq!(listed["state"], "active");
    assert_eq!(listed["market"], "JP");
    assert_eq!(listed["timezone"], "Asia/Tokyo");
    assert_eq!(listed["handle"], "mia_jp");
    assert_eq!(
        app.count(
            "SELECT count(*) AS n FROM account_generations g JOIN account_slots s ON s.id = g.slot_id \
             WHERE s.code = 'JP-I001' AND g.onboarded_at = DATE '2026-11-21' AND g.generation = 1"
        )
        .await,
        1
    );

    // Explicit warming.
    let warming = post(
        &app,
        &key,
        "/accounts",
        json!({"persona_id": mia, "platform": "x", "code": "TW-X001", "state": "warming"}),
    )
    .await;
    assert_status(&warming, 201);
    assert_eq!(
        account(&app, "op1", "TW-X001", "x").await["state"],
        "warming"
    );

    // A handle without the @ is stored as given.
    let plain = post(
        &app,
        &key,
        "/accounts",
        json!({"persona_id": mia, "platform": "x", "code": "TW-X002", "handle": "mia2"}),
    )
    .await;
    assert_status(&plain, 201);
    assert_eq!(account(&app, "op1", "TW-X002", "x").await["handle"], "mia2");
}

#[tokio::test(flavor = "multi_thread")]
async fn add_account_validates_each_field_at_the_limit_and_one_past() {
    let app = spawn_app().await;
    let key = app.agent_key("op1");
    let mia = app.persona_id("Mia");
    let body = |extra: Value| {
        let mut b = json!({"persona_id": mia, "platform": "threads"});
        for (k, v) in extra.as_object().unwrap() {
            b[k] = v.clone();
        }
        b
    };

    // code: 40 characters, stored upper-cased; 41 refused; empty refused.
    let forty = format!("tw-{}", "a".repeat(37));
    let ok = post(&app, &key, "/accounts", body(json!({"code": forty}))).await;
    assert_status(&ok, 201);
    assert_eq!(ok.json()["code"], forty.to_uppercase());
    let slots = rows(&app, "account_slots").await;
    assert_each_invalid(
        &app,
        &key,
        "/accounts",
        &[
            (
                body(json!({"code": format!("tw-{}", "a".repeat(38))})),
                "code",
            ),
            (body(json!({"code": ""})), "code"),
            (body(json!({})), "code"),
            // Codes have no blanks inside; surrounding blanks are trimmed.
            (body(json!({"code": "TW T030"})), "code"),
            (body(json!({"code": "   "})), "code"),
            // market: 2 letters of a known market.
            (body(json!({"code": "TW-M001", "market": "XX"})), "market"),
            (body(json!({"code": "TW-M001", "market": "TWN"})), "market"),
            // state: only warming or active.
            (body(json!({"code": "TW-S001", "state": "banned"})), "state"),
            (
                body(json!({"code": "TW-S001", "state": "restored"})),
                "state",
            ),
            // platform: the closed list; persona_id: a uuid, required.
            (
                body(json!({"code": "TW-P001", "platform": "myspace"})),
                "platform",
            ),
            (json!({"code": "TW-P001", "persona_id": mia}), "platform"),
            (
                json!({"code": "TW-P001", "platform": "threads"}),
                "persona_id",
            ),
            (
                json!({"code": "TW-P001", "platform": "threads", "persona_id": "mia"}),
                "persona_id",
            ),
            // handle: up to 100 characters, the leading @ not counted.
            (
                body(json!({"code": "TW-H001", "handle": "h".repeat(101)})),
                "handle",
            ),
            (
                body(json!({"code": "TW-H001", "handle": format!("@{}", "h".repeat(101))})),
                "handle",
            ),
            // onboarded_at: a date.
            (
                body(json!({"code": "TW-O001", "onboarded_at": "21/11/2026"})),
                "onboarded_at",
            ),
            (
                body(json!({"code": "TW-O001", "onboarded_at": "2026-02-30"})),
                "onboarded_at",
            ),
            (
                body(json!({"code": "TW-O001", "onboarded_at": "2026-11-21T00:00:00Z"})),
                "onboarded_at",
            ),
            (
                body(json!({"code": "TW-O001", "onboarded_at": "yesterday"})),
                "onboarded_at",
            ),
        ],
    )
    .await;
    assert_eq!(
        rows(&app, "account_slots").await,
        slots,
        "a refused request created something"
    );

    // At the limits: accepted.
    for (code, handle) in [
        ("TW-H001", "h".repeat(100)),
        ("TW-H002", format!("@{}", "h".repeat(100))),
    ] {
        let res = post(
            &app,
            &key,
            "/accounts",
            body(json!({"code": code, "handle": handle})),
        )
        .await;
        assert_eq!(res.status, 201, "{code} {handle}: {}", res.text());
    }
    let listed = accounts(&app, "op1").await;
    for code in ["TW-H001", "TW-H002"] {
        let a = listed.iter().find(|a| a["code"] == code).unwrap();
        assert_eq!(a["handle"], "h".repeat(100), "{code}");
    }
    let dated = post(
        &app,
        &key,
        "/accounts",
        body(json!({"code": "TW-O001", "onboarded_at": "2026-02-28"})),
    )
    .await;
    assert_status(&dated, 201);
    let trimmed = post(&app, &key, "/accounts", body(json!({"code": "  tw-t030 "}))).await;
    assert_status(&trimmed, 201);
    assert_eq!(trimmed.json()["code"], "TW-T030");
}

#[tokio::test(flavor = "multi_thread")]
async fn add_account_refuses_codes_and_personas_of_others() {
    let app = spawn_app().await;
    let mia = app.persona_id("Mia");
    let leo = app.persona_id("Leo");
    let yui = app.persona_id("Yui");
    let zoe = app.persona_id("Zoe");
    let slots = rows(&app, "account_slots").await;

    for (agent, persona, platform, code, status, error) in [
        // A code owned by another persona: 422 rejected.
        ("op2", leo, "threads", "TW-T001", 422, "rejected"),
        // The same in another workspace of the same organization: codes are the organization's.
        ("jp1", yui, "instagram", "tw-i001", 422, "rejected"),
        // Even the agent's own persona cannot take over another persona's code.
        ("op1", mia, "threads", "TW-T002", 422, "rejected"),
        // A persona of another agent in the same workspace: 403.
        ("op2", mia, "threads", "TW-T050", 403, "forbidden"),
        // A persona of another workspace or organization, or none at all: 404.
        ("jp1", mia, "threads", "TW-T050", 404, "not_found"),
        ("other1", mia, "threads", "TW-T050", 404, "not_found"),
        ("op1", zoe, "threads", "TW-T050", 404, "not_found"),
        ("op1", yui, "threads", "TW-T050", 404, "not_found"),
        (
            "op1",
            Uuid::new_v4(),
            "threads",
            "TW-T050",
            404,
            "not_found",
        ),
        // A community agent lacks accounts:write.
        ("bot", mia, "threads", "TW-T050", 403, "forbidden"),
    ] {
        let body = json!({"persona_id": persona, "platform": platform, "code": code});
        let res = post(&app, &app.agent_key(agent), "/accounts", body.clone()).await;
        assert_error_in(&format!("{agent} adds {body}"), &res, status, error);
    }
    assert_eq!(
        rows(&app, "account_slots").await,
        slots,
        "a refused request created something"
    );

    // Another organization's code space is its own: Other Agency can add TW-I001.
    let other_org = post(
        &app,
        &app.agent_key("other1"),
        "/accounts",
        json!({"persona_id": zoe, "platform": "instagram", "code": "TW-I001"}),
    )
    .await;
    assert_status(&other_org, 201);
    assert_eq!(other_org.json()["created"], true);
    assert_eq!(
        codes(&accounts(&app, "other1").await),
        ["TW-I001/instagram", "TW-T001/threads"]
    );
    assert_eq!(codes(&accounts(&app, "op1").await).len(), 5);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_retired_persona_and_its_accounts_are_hidden_from_agents() {
    let app = spawn_app().await;
    let mia = app.persona_id("Mia");
    assert!(
        accounts(&app, "op1")
            .await
            .iter()
            .any(|a| a["persona"] == "Mia")
    );
    // A person dismissed the persona: it is retired and no longer assigned.
    app.sql(&format!(
        "UPDATE personas SET status = 'retired', retired_at = now(), agent_id = NULL WHERE id = '{mia}'"
    ))
    .await;
    assert!(
        accounts(&app, "op1")
            .await
            .iter()
            .all(|a| a["persona"] != "Mia"),
        "a retired persona's accounts are listed"
    );
    let res = report(
        &app,
        "op1",
        "TW-T001",
        json!({"state": "paused", "reason": "x", "occurred_at": "2026-11-20 10:00"}),
    )
    .await;
    assert_error(&res, 404, "not_found");
    let res = post(
        &app,
        &app.agent_key("op1"),
        "/accounts",
        json!({"persona_id": mia, "platform": "x", "code": "TW-X050"}),
    )
    .await;
    assert_error(&res, 404, "not_found");
}

#[tokio::test(flavor = "multi_thread")]
async fn add_account_replays_the_first_result_for_the_same_idempotency_key() {
    let app = spawn_app().await;
    let key = app.agent_key("op1");
    let mia = app.persona_id("Mia");
    let body = json!({"persona_id": mia, "platform": "threads", "code": "TW-T020"});
    let path = format!("{API}/accounts");
    let first = app
        .client
        .post_idem(&path, &key, "add-tw-t020", &body)
        .await;
    assert_status(&first, 201);
    let again = app
        .client
        .post_idem(&path, &key, "add-tw-t020", &body)
        .await;
    assert_status(&again, 201);
    assert_eq!(again.header("idempotent-replayed"), Some("true"));
    assert_eq!(again.json()["slot_id"], first.json()["slot_id"]);
    assert_eq!(again.json()["created"], true);
    let other = json!({"persona_id": mia, "platform": "threads", "code": "TW-T021"});
    let mismatch = app
        .client
        .post_idem(&path, &key, "add-tw-t020", &other)
        .await;
    assert_error(&mismatch, 422, "idempotency_mismatch");
    assert_eq!(
        app.count("SELECT count(*) AS n FROM account_slots WHERE code = 'TW-T021'")
            .await,
        0
    );
}

// ---------------------------------------------------------------------------------------------
// POST /accounts/{code}/state

#[tokio::test(flavor = "multi_thread")]
async fn reporting_a_ban_opens_a_decision_and_no_new_generation() {
    let app = spawn_app().await;
    let generations = rows(&app, "account_generations").await;
    let (slot, gen_id) = tenant_account(&app, "Mia", "TW-T001");

    let res = report(&app, "op1", "TW-T001", json!({"state": "banned", "reason": "Violated community guidelines", "occurred_at": "2026-11-21 10:00"})).await;
    assert_status(&res, 200);
    let v = res.json();
    assert_eq!(v["code"], "TW-T001");
    assert_eq!(v["platform"], "threads");
    assert_eq!(v["generation"], 1);
    assert_eq!(v["previous_state"], "active");
    assert_eq!(v["state"], "banned");
    assert_eq!(v["result"], "changed");
    let d = &v["decision"];
    assert!(is_uuid(&d["id"]), "{v}");
    assert_eq!(d["kind"], "account_banned");
    assert_eq!(d["status"], "open");
    assert!(d["question"].as_str().is_some_and(|q| !q.is_empty()), "{v}");
    assert!(
        d["options"]
            .as_array()
            .is_some_and(|o| !o.is_empty() && o.iter().all(Value::is_string)),
        "{v}"
    );
    let decision_id = d["id"].as_str().unwrap().to_owned();
    assert_eq!(
        app.count(&format!(
            "SELECT count(*) AS n FROM decisions WHERE id = '{decision_id}' AND kind = 'account_banned' \
             AND status = 'open' AND slot_id = '{slot}' AND generation_id = '{gen_id}'"
        ))
        .await,
        1
    );

    // No new generation: the same live account, now banned.
    assert_eq!(rows(&app, "account_generations").await, generations);
    let listed = account(&app, "op1", "TW-T001", "threads").await;
    assert_eq!(listed["generation"], 1);
    assert_eq!(listed["state"], "banned");
    assert_eq!(listed["account_id"], gen_id.to_string());

    // The change is recorded with its reason and the time in UTC (10:00 Taipei is 02:00Z).
    assert_eq!(
        app.count(&format!(
            "SELECT count(*) AS n FROM account_state_changes WHERE generation_id = '{gen_id}' \
             AND from_state = 'active' AND to_state = 'banned' AND reported = 'banned' \
             AND reason = 'Violated community guidelines' AND occurred_at = TIMESTAMPTZ '2026-11-21T02:00:00Z' \
             AND agent_id = '{}'",
            app.agent_id("op1")
        ))
        .await,
        1
    );

    // The same state again: unchanged, no second decision, no second change row.
    let again = report(
        &app,
        "op1",
        "TW-T001",
        json!({"state": "banned", "reason": "still banned", "occurred_at": "2026-11-21 11:00"}),
    )
    .await;
    assert_status(&again, 200);
    let a = again.json();
    assert_eq!(a["result"], "unchanged");
    assert_eq!(a["state"], "banned");
    assert_eq!(a["previous_state"], "banned");
    // The answer points at the decision still waiting for a person.
    assert_eq!(a["decision"]["id"], decision_id.as_str(), "{a}");
    assert_eq!(a["decision"]["status"], "open", "{a}");
    assert_eq!(rows(&app, "decisions").await, 1);
    assert_eq!(
        app.count(&format!(
            "SELECT count(*) AS n FROM account_state_changes WHERE generation_id = '{gen_id}'"
        ))
        .await,
        1
    );
    assert_eq!(rows(&app, "account_generations").await, generations);

    // restored leads back to active, without a reason and without a decision.
    let restored = report(
        &app,
        "op1",
        "TW-T001",
        json!({"state": "restored", "occurred_at": "2026-11-22T09:00:00+08:00"}),
    )
    .await;
    assert_status(&restored, 200);
    let r = restored.json();
    assert_eq!(r["result"], "changed");
    assert_eq!(r["previous_state"], "banned");
    assert_eq!(r["state"], "active");
    assert!(r["decision"].is_null(), "{r}");
    assert_eq!(rows(&app, "decisions").await, 1);
    assert_eq!(
        account(&app, "op1", "TW-T001", "threads").await["state"],
        "active"
    );
    assert_eq!(rows(&app, "account_generations").await, generations);
}

#[tokio::test(flavor = "multi_thread")]
async fn quarantine_pause_and_warming_change_the_state_without_a_decision() {
    let app = spawn_app().await;
    let steps = [
        (
            json!({"state": "quarantined", "reason": "under review", "occurred_at": "2026-11-21 10:00"}),
            "active",
            "quarantined",
        ),
        (
            json!({"state": "paused", "reason": "rate limited", "occurred_at": "2026-11-21 11:00"}),
            "quarantined",
            "paused",
        ),
        (
            json!({"state": "warming", "occurred_at": "2026-11-21 12:00"}),
            "paused",
            "warming",
        ),
        (
            json!({"state": "restored", "occurred_at": "2026-11-21 13:00"}),
            "warming",
            "active",
        ),
    ];
    for (body, from, to) in steps {
        let res = report(&app, "op1", "TW-I001", body.clone()).await;
        assert_status(&res, 200);
        let v = res.json();
        assert_eq!(v["result"], "changed", "{body}");
        assert_eq!(v["previous_state"], from, "{body}");
        assert_eq!(v["state"], to, "{body}");
        assert!(v["decision"].is_null(), "{v}");
        assert_eq!(
            account(&app, "op1", "TW-I001", "instagram").await["state"],
            to
        );
    }
    assert_eq!(rows(&app, "decisions").await, 0);
    assert_eq!(state_changes(&app).await, 4);
    // Warming an account that is warming: unchanged.
    let same = report(
        &app,
        "op1",
        "TW-K001",
        json!({"state": "warming", "occurred_at": "2026-11-21 12:00"}),
    )
    .await;
    assert_status(&same, 200);
    assert_eq!(same.json()["result"], "unchanged");
    assert_eq!(same.json()["state"], "warming");
    assert_eq!(state_changes(&app).await, 4);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_reason_is_required_for_banned_quarantined_and_paused_only() {
    let app = spawn_app().await;
    for state in ["banned", "quarantined", "paused"] {
        for reason in [Value::Null, json!(""), json!("   ")] {
            let mut body = json!({"state": state, "occurred_at": "2026-11-21 10:00"});
            if !reason.is_null() {
                body["reason"] = reason;
            }
            let res = report(&app, "op1", "TW-T001", body.clone()).await;
            assert_invalid_in(&body.to_string(), &res, "reason");
        }
    }
    assert_eq!(state_changes(&app).await, 0);
    assert_eq!(rows(&app, "decisions").await, 0);
    assert_eq!(
        account(&app, "op1", "TW-T001", "threads").await["state"],
        "active"
    );

    let warming = report(
        &app,
        "op1",
        "TW-T001",
        json!({"state": "warming", "occurred_at": "2026-11-21 10:00"}),
    )
    .await;
    assert_status(&warming, 200);
    assert_eq!(warming.json()["state"], "warming");
    let restored = report(
        &app,
        "op1",
        "TW-T001",
        json!({"state": "restored", "occurred_at": "2026-11-21 10:05"}),
    )
    .await;
    assert_status(&restored, 200);
    assert_eq!(restored.json()["state"], "active");
    assert_eq!(state_changes(&app).await, 2);
    // Without a reason the change row holds none.
    assert_eq!(
        app.count("SELECT count(*) AS n FROM account_state_changes WHERE reason IS NULL")
            .await,
        2
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn occurred_at_takes_iso_with_a_zone_or_market_local_time() {
    let app = spawn_app().await;
    // Alternate warming and restored so that every accepted report is a recorded change.
    let forty = "   2026-11-21T14:00:00.000000000+08:00  ";
    assert_eq!(forty.chars().count(), 40);
    let accepted = [
        ("2026-11-21T10:00:00+08:00", "2026-11-21T02:00:00Z"),
        ("2026-11-21T03:00:00Z", "2026-11-21T03:00:00Z"),
        ("2026-11-21 12:00", "2026-11-21T04:00:00Z"),
        ("2026-11-21 13:00:30", "2026-11-21T05:00:30Z"),
        // 40 characters with the surrounding blanks.
        (forty, "2026-11-21T06:00:00Z"),
    ];
    for (i, (input, utc)) in accepted.iter().enumerate() {
        let state = if i % 2 == 0 { "warming" } else { "restored" };
        let res = report(
            &app,
            "op1",
            "TW-T001",
            json!({"state": state, "occurred_at": input}),
        )
        .await;
        assert_status(&res, 200);
        assert_eq!(res.json()["result"], "changed", "{input}");
        assert_eq!(
            app.count(&format!(
                "SELECT count(*) AS n FROM account_state_changes WHERE reported = '{state}' AND occurred_at = TIMESTAMPTZ '{utc}'"
            ))
            .await,
            1,
            "{input} should be stored as {utc}"
        );
    }
    let changes = state_changes(&app).await;
    let forty_one = "   2026-11-21T14:00:00.000000000+08:00   ";
    assert_eq!(forty_one.chars().count(), 41);
    let mut refused: Vec<(Value, &str)> = [
        "2026-11-21T10:00:00",
        "2026-11-21",
        "2026-11-21 10",
        "tomorrow 9am",
        "",
        forty_one,
        "2026-11-21 25:00",
    ]
    .into_iter()
    .map(|bad| {
        (
            json!({"state": "warming", "occurred_at": bad}),
            "occurred_at",
        )
    })
    .collect();
    refused.push((json!({"state": "warming"}), "occurred_at"));
    let op1 = app.agent_key("op1");
    assert_each_invalid(&app, &op1, "/accounts/TW-I001/state", &refused).await;
    assert_eq!(state_changes(&app).await, changes);

    // Market-local time is the account's market: 10:00 in Tokyo is 01:00Z.
    let jp = report(
        &app,
        "jp1",
        "JP-T001",
        json!({"state": "paused", "reason": "r", "occurred_at": "2026-11-21 10:00"}),
    )
    .await;
    assert_status(&jp, 200);
    assert_eq!(
        app.count("SELECT count(*) AS n FROM account_state_changes WHERE reported = 'paused' AND occurred_at = TIMESTAMPTZ '2026-11-21T01:00:00Z'")
            .await,
        1
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn state_reports_validate_state_reason_and_origin() {
    let app = spawn_app().await;
    let op1 = app.agent_key("op1");
    let at = "2026-11-21 10:00";
    let origin = |field: &str, value: Value| {
        let mut origin = json!({"platform": "cli"});
        origin[field] = value;
        json!({"state": "warming", "occurred_at": at, "origin": origin})
    };
    assert_each_invalid(
        &app,
        &op1,
        "/accounts/TW-T001/state",
        &[
            // reason: up to 1000 characters.
            (
                json!({"state": "paused", "reason": "r".repeat(1001), "occurred_at": at}),
                "reason",
            ),
            // state: the five report values only.
            (
                json!({"state": "deleted", "reason": "r", "occurred_at": at}),
                "state",
            ),
            (
                json!({"state": "active", "reason": "r", "occurred_at": at}),
                "state",
            ),
            (
                json!({"state": "replaced", "reason": "r", "occurred_at": at}),
                "state",
            ),
            (
                json!({"state": "", "reason": "r", "occurred_at": at}),
                "state",
            ),
            (
                json!({"state": 1, "reason": "r", "occurred_at": at}),
                "state",
            ),
            (json!({"reason": "r", "occurred_at": at}), "state"),
            // origin.platform: a closed list, required in an origin.
            (
                json!({"state": "warming", "occurred_at": at, "origin": {"platform": "slack"}}),
                "origin.platform",
            ),
            (
                json!({"state": "warming", "occurred_at": at, "origin": {"requester": "ann"}}),
                "origin.platform",
            ),
            // origin.requester up to 80, gateway/channel/thread up to 200.
            (
                origin("requester", json!("q".repeat(81))),
                "origin.requester",
            ),
            (origin("gateway", json!("g".repeat(201))), "origin.gateway"),
            (origin("channel", json!("g".repeat(201))), "origin.channel"),
            (origin("thread", json!("g".repeat(201))), "origin.thread"),
        ],
    )
    .await;
    assert_eq!(state_changes(&app).await, 0);
    assert_eq!(
        account(&app, "op1", "TW-T001", "threads").await["state"],
        "active"
    );

    // At the limits: accepted, and recorded with the reason and the origin.
    let reason = "r".repeat(1000);
    let origin = json!({"platform": "telegram", "gateway": "g".repeat(200), "channel": "c".repeat(200),
                        "thread": "t".repeat(200), "requester": "q".repeat(80)});
    let ok = report(
        &app,
        "op1",
        "TW-T001",
        json!({"state": "paused", "reason": reason, "occurred_at": at, "origin": origin}),
    )
    .await;
    assert_status(&ok, 200);
    assert_eq!(ok.json()["state"], "paused");
    assert_eq!(
        app.count(&format!(
            "SELECT count(*) AS n FROM account_state_changes WHERE reason = '{reason}' AND origin->>'platform' = 'telegram' \
             AND length(origin->>'requester') = 80"
        ))
        .await,
        1
    );
    // Every value of the closed list is accepted.
    for (i, platform) in ["feishu", "dingtalk", "telegram", "discord", "cli", "other"]
        .into_iter()
        .enumerate()
    {
        let state = if i % 2 == 0 { "restored" } else { "warming" };
        let res = report(
            &app,
            "op1",
            "TW-T001",
            json!({"state": state, "occurred_at": at, "origin": {"platform": platform}}),
        )
        .await;
        assert_status(&res, 200);
        assert_eq!(res.json()["result"], "changed", "{platform}");
    }
    assert_eq!(state_changes(&app).await, 7);
}

#[tokio::test(flavor = "multi_thread")]
async fn the_code_in_the_path_is_a_current_or_legacy_code_of_the_agents_own_accounts() {
    let app = spawn_app().await;
    let warming = json!({"state": "warming", "occurred_at": "2026-11-21 10:00"});

    // A legacy code on two platforms needs the platform.
    let ambiguous = report(&app, "op1", "OLD1", warming.clone()).await;
    assert_error(&ambiguous, 409, "ambiguous_code");
    let tiktok = report(&app, "op1", "OLD1?platform=tiktok", warming.clone()).await;
    assert_status(&tiktok, 200);
    assert_eq!(tiktok.json()["code"], "TW-L002");
    assert_eq!(tiktok.json()["platform"], "tiktok");
    assert_eq!(
        account(&app, "op1", "TW-L002", "tiktok").await["state"],
        "warming"
    );
    assert_eq!(
        account(&app, "op1", "TW-L001", "threads").await["state"],
        "active"
    );
    let threads = report(&app, "op1", "old1?platform=threads", warming.clone()).await;
    assert_status(&threads, 200);
    assert_eq!(threads.json()["code"], "TW-L001");

    // Codes are matched whatever their case.
    let lower = report(&app, "op1", "tw-t001", warming.clone()).await;
    assert_status(&lower, 200);
    assert_eq!(lower.json()["code"], "TW-T001");
    assert_eq!(lower.json()["result"], "changed");

    // A bad platform, a code too long.
    for (code, field) in [
        ("TW-T001?platform=myspace".to_owned(), "platform"),
        ("A".repeat(41), "code"),
    ] {
        let res = report(&app, "op1", &code, warming.clone()).await;
        assert_invalid_in(&format!("op1 reports on {code}"), &res, field);
    }
    for (agent, code, status, error) in [
        // Unknown codes, a code on another platform.
        ("op1", "TW-X999", 404, "not_found"),
        ("op1", "TW-T001?platform=tiktok", 404, "not_found"),
        // Another agent's account in the same workspace: 403.
        ("op2", "TW-I001", 403, "forbidden"),
        ("op2", "OLD1?platform=tiktok", 403, "forbidden"),
        // Another workspace: 404, even for a code that exists in the organization.
        ("jp1", "TW-T001", 404, "not_found"),
        ("op1", "JP-T001", 404, "not_found"),
    ] {
        let res = report(&app, agent, code, warming.clone()).await;
        assert_error_in(&format!("{agent} reports on {code}"), &res, status, error);
    }
    // Another organization's same code resolves to its own account.
    let other = report(
        &app,
        "other1",
        "TW-T001",
        json!({"state": "paused", "reason": "r", "occurred_at": "2026-11-21 10:00"}),
    )
    .await;
    assert_status(&other, 200);
    assert_eq!(other.json()["previous_state"], "active");
    assert_eq!(other.json()["state"], "paused");
    assert_eq!(
        account(&app, "other1", "TW-T001", "threads").await["state"],
        "paused"
    );
    assert_eq!(
        account(&app, "op1", "TW-T001", "threads").await["state"],
        "warming"
    );
    let (zoe_slot, _) = tenant_account(&app, "Zoe", "TW-T001");
    assert_eq!(
        app.count(&format!(
            "SELECT count(*) AS n FROM account_state_changes c JOIN account_generations g ON g.id = c.generation_id \
             WHERE g.slot_id = '{zoe_slot}' AND c.to_state = 'paused'"
        ))
        .await,
        1
    );
    // Mia's TW-I001 was not touched by op2's refused report.
    assert_eq!(
        account(&app, "op1", "TW-I001", "instagram").await["state"],
        "active"
    );
}

// ---------------------------------------------------------------------------------------------
// POST /accounts/{code}/avatar

#[tokio::test(flavor = "multi_thread")]
async fn set_avatar_stores_the_image_and_says_whether_it_changed() {
    let app = spawn_app().await;
    let sha = sha256_hex(PNG_1X1);

    let first = avatar(&app, "op1", "TW-T001", &b64(PNG_1X1)).await;
    assert_status(&first, 200);
    let v = first.json();
    assert_eq!(v["changed"], true);
    let a = &v["avatar"];
    assert_eq!(a["code"], "TW-T001");
    assert_eq!(a["platform"], "threads");
    assert_eq!(a["generation"], 1);
    assert_eq!(a["mime_type"], "image/png");
    assert_eq!(a["width"], 1);
    assert_eq!(a["height"], 1);
    assert_eq!(a["bytes"], PNG_1X1.len());
    assert_eq!(a["sha256"], sha.as_str());
    assert!(is_utc_second(&a["updated_at"]), "{a}");

    // The bytes are really stored, content-addressed, under the data dir.
    let file = app
        .data_dir
        .join("media/avatars")
        .join(format!("{sha}.png"));
    assert_eq!(
        std::fs::read(&file).unwrap_or_else(|e| panic!("{}: {e}", file.display())),
        PNG_1X1
    );
    let (_, gen_id) = tenant_account(&app, "Mia", "TW-T001");
    assert_eq!(
        app.count(&format!(
            "SELECT count(*) AS n FROM account_generations WHERE id = '{gen_id}' AND avatar_sha256 = '{sha}' AND avatar_mime = 'image/png'"
        ))
        .await,
        1
    );

    // The same image again, with a data: prefix: not changed.
    let same = avatar(
        &app,
        "op1",
        "TW-T001",
        &format!("data:image/png;base64,{}", b64(PNG_1X1)),
    )
    .await;
    assert_status(&same, 200);
    assert_eq!(same.json()["changed"], false);
    assert_eq!(same.json()["avatar"]["sha256"], sha.as_str());
    assert_eq!(same.json()["avatar"]["updated_at"], a["updated_at"]);

    // A different image: changed, and it becomes the stored one.
    let other = png_2x1();
    let changed = avatar(&app, "op1", "TW-T001", &b64(&other)).await;
    assert_status(&changed, 200);
    assert_eq!(changed.json()["changed"], true);
    assert_eq!(changed.json()["avatar"]["width"], 2);
    assert_eq!(changed.json()["avatar"]["height"], 1);
    assert_eq!(
        changed.json()["avatar"]["sha256"],
        sha256_hex(&other).as_str()
    );
    assert!(
        app.data_dir
            .join("media/avatars")
            .join(format!("{}.png", sha256_hex(&other)))
            .exists()
    );
    // Back to the first: changed again.
    let back = avatar(&app, "op1", "TW-T001", &b64(PNG_1X1)).await;
    assert_status(&back, 200);
    assert_eq!(back.json()["changed"], true);

    // Avatars are per account: the same image on another account is new there.
    let elsewhere = avatar(&app, "op1", "TW-I001", &b64(PNG_1X1)).await;
    assert_status(&elsewhere, 200);
    assert_eq!(elsewhere.json()["changed"], true);
    assert_eq!(elsewhere.json()["avatar"]["code"], "TW-I001");
}

#[tokio::test(flavor = "multi_thread")]
async fn set_avatar_judges_jpeg_png_and_webp_from_the_bytes() {
    let app = spawn_app().await;
    // A JPEG sent with a PNG data: prefix is a JPEG.
    let jpeg = jpeg_3x2();
    let res = avatar(
        &app,
        "op1",
        "TW-T001",
        &format!("data:image/png;base64,{}", b64(&jpeg)),
    )
    .await;
    assert_status(&res, 200);
    assert_eq!(res.json()["avatar"]["mime_type"], "image/jpeg");
    assert_eq!(res.json()["avatar"]["width"], 3);
    assert_eq!(res.json()["avatar"]["height"], 2);
    assert!(
        app.data_dir
            .join("media/avatars")
            .join(format!("{}.jpg", sha256_hex(&jpeg)))
            .exists()
    );

    let webp = webp_4x5();
    let res = avatar(&app, "op1", "TW-I001", &b64(&webp)).await;
    assert_status(&res, 200);
    assert_eq!(res.json()["avatar"]["mime_type"], "image/webp");
    assert_eq!(res.json()["avatar"]["width"], 4);
    assert_eq!(res.json()["avatar"]["height"], 5);
    assert!(
        app.data_dir
            .join("media/avatars")
            .join(format!("{}.webp", sha256_hex(&webp)))
            .exists()
    );

    // URL-safe base64 without padding is base64 too.
    let url_safe = base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(PNG_1X1);
    let res = avatar(&app, "op1", "TW-K001", &url_safe).await;
    assert_status(&res, 200);
    assert_eq!(res.json()["avatar"]["mime_type"], "image/png");
}

#[tokio::test(flavor = "multi_thread")]
async fn set_avatar_refuses_what_is_not_a_jpeg_png_or_webp_image() {
    let app = spawn_app().await;
    let gif = b"GIF89a\x01\x00\x01\x00\x80\x00\x00\xff\xff\xff\x00\x00\x00,\x00\x00\x00\x00\x01\x00\x01\x00\x00\x02\x02D\x01\x00;";
    // Base64 of another file: well formed, refused by the field's rule (422).
    for data in [
        b64(gif),
        format!("data:image/png;base64,{}", b64(gif)),
        b64(b"hello, this is not an image"),
    ] {
        let res = avatar(&app, "op1", "TW-T001", &data).await;
        assert_error_in(&format!("data {data:?}"), &res, 422, "rejected");
        assert_eq!(res.json()["field"], "data", "data {data:?}");
    }
    // Not base64 at all: 400.
    for data in [
        "%%%not base64%%%".to_owned(),
        String::new(),
        "data:image/png;base64,".to_owned(),
        "data:image/png;base64".to_owned(),
    ] {
        let res = avatar(&app, "op1", "TW-T001", &data).await;
        assert_invalid_in(&format!("data {data:?}"), &res, "data");
    }
    assert_invalid(
        &post(
            &app,
            &app.agent_key("op1"),
            "/accounts/TW-T001/avatar",
            json!({}),
        )
        .await,
        "data",
    );
    assert_eq!(
        app.count("SELECT count(*) AS n FROM account_generations WHERE avatar_sha256 IS NOT NULL")
            .await,
        0
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn set_avatar_takes_five_megabytes_and_not_one_byte_more() {
    let app = spawn_app().await;
    let mut image = PNG_1X1.to_vec();
    image.resize(MAX_AVATAR + 1, 0);
    let too_large = avatar(&app, "op1", "TW-T001", &b64(&image)).await;
    assert_error(&too_large, 413, "payload_too_large");
    assert_eq!(
        app.count("SELECT count(*) AS n FROM account_generations WHERE avatar_sha256 IS NOT NULL")
            .await,
        0
    );

    image.truncate(MAX_AVATAR);
    let at_limit = avatar(&app, "op1", "TW-T001", &b64(&image)).await;
    assert_status(&at_limit, 200);
    assert_eq!(at_limit.json()["avatar"]["bytes"], MAX_AVATAR);
    assert_eq!(at_limit.json()["avatar"]["mime_type"], "image/png");
    let file = app
        .data_dir
        .join("media/avatars")
        .join(format!("{}.png", sha256_hex(&image)));
    assert_eq!(
        std::fs::metadata(&file).map(|m| m.len()).unwrap_or(0),
        MAX_AVATAR as u64
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn set_avatar_follows_the_code_lookup_rules() {
    let app = spawn_app().await;
    let png = b64(PNG_1X1);
    for (agent, code, status, error) in [
        ("op1", "OLD1", 409, "ambiguous_code"),
        ("op1", "TW-X999", 404, "not_found"),
        ("op2", "TW-T001", 403, "forbidden"),
        ("jp1", "TW-T001", 404, "not_found"),
        ("bot", "TW-T001", 403, "forbidden"),
    ] {
        let res = avatar(&app, agent, code, &png).await;
        assert_error_in(
            &format!("{agent} sets the avatar of {code}"),
            &res,
            status,
            error,
        );
    }
    let tiktok = avatar(&app, "op1", "old1?platform=tiktok", &png).await;
    assert_status(&tiktok, 200);
    assert_eq!(tiktok.json()["avatar"]["code"], "TW-L002");
    let other = avatar(&app, "other1", "TW-T001", &png).await;
    assert_status(&other, 200);
    let (zoe_slot, _) = tenant_account(&app, "Zoe", "TW-T001");
    assert_eq!(
        app.count(&format!(
            "SELECT count(*) AS n FROM account_generations WHERE avatar_sha256 IS NOT NULL AND slot_id = '{zoe_slot}'"
        ))
        .await,
        1
    );
    // Only TW-L002 and Zoe's TW-T001 have an avatar.
    assert_eq!(
        app.count("SELECT count(*) AS n FROM account_generations WHERE avatar_sha256 IS NOT NULL")
            .await,
        2
    );
}

// ---------------------------------------------------------------------------------------------
// POST /heartbeat

#[tokio::test(flavor = "multi_thread")]
async fn heartbeat_records_a_run_and_the_same_run_id_updates_it() {
    let app = spawn_app().await;
    let key = app.agent_key("op1");
    let first = post(
        &app,
        &key,
        "/heartbeat",
        json!({"run_id": "round-1", "summary": "first", "counts": {"a": 1, "b": 2}}),
    )
    .await;
    assert_status(&first, 200);
    let v = first.json();
    assert!(is_uuid(&v["run"]["id"]), "{v}");
    assert_eq!(v["run"]["run_id"], "round-1");
    assert!(is_utc_second(&v["run"]["recorded_at"]), "{v}");
    assert_eq!(v["tasks"], json!([]));
    let id = v["run"]["id"].as_str().unwrap().to_owned();

    let second = post(
        &app,
        &key,
        "/heartbeat",
        json!({"run_id": "round-1", "summary": "second", "counts": {"b": 5, "c": 1}}),
    )
    .await;
    assert_status(&second, 200);
    assert_eq!(second.json()["run"]["id"], id.as_str());
    assert_eq!(second.json()["run"]["run_id"], "round-1");
    assert_eq!(
        app.count(&format!(
            "SELECT count(*) AS n FROM agent_runs WHERE id = '{id}' AND agent_id = '{}' AND summary = 'second' \
             AND counts = '{{\"a\": 1, \"b\": 5, \"c\": 1}}'::jsonb",
            app.agent_id("op1")
        ))
        .await,
        1
    );
    assert_eq!(rows(&app, "agent_runs").await, 1);

    // An empty round is recorded too.
    let empty = post(&app, &key, "/heartbeat", json!({"run_id": "round-2"})).await;
    assert_status(&empty, 200);
    assert_ne!(empty.json()["run"]["id"], id.as_str());
    assert_eq!(rows(&app, "agent_runs").await, 2);
}

#[tokio::test(flavor = "multi_thread")]
async fn heartbeat_run_ids_belong_to_each_agent() {
    let app = spawn_app().await;
    let mine = post(
        &app,
        &app.agent_key("op1"),
        "/heartbeat",
        json!({"run_id": "r1", "counts": {"a": 1}}),
    )
    .await;
    assert_status(&mine, 200);
    let theirs = post(
        &app,
        &app.agent_key("op2"),
        "/heartbeat",
        json!({"run_id": "r1", "counts": {"a": 7}}),
    )
    .await;
    assert_status(&theirs, 200);
    assert_ne!(mine.json()["run"]["id"], theirs.json()["run"]["id"]);
    assert_eq!(
        app.count("SELECT count(*) AS n FROM agent_runs WHERE run_id = 'r1'")
            .await,
        2
    );
    assert_eq!(
        app.count(&format!(
            "SELECT count(*) AS n FROM agent_runs WHERE agent_id = '{}' AND counts = '{{\"a\": 1}}'::jsonb",
            app.agent_id("op1")
        ))
        .await,
        1
    );
    // The other key of the same agent continues the same run.
    let keys = app.agent_keys("op1");
    let same_agent = post(&app, &keys[1], "/heartbeat", json!({"run_id": "r1"})).await;
    assert_status(&same_agent, 200);
    assert_eq!(same_agent.json()["run"]["id"], mine.json()["run"]["id"]);
    // A community agent lacks runs:write.
    assert_error(
        &post(
            &app,
            &app.agent_key("bot"),
            "/heartbeat",
            json!({"run_id": "r1"}),
        )
        .await,
        403,
        "forbidden",
    );
}

/// The heartbeat commits asynchronously (`set_config(..., true)` in its statement), and that
/// must end with its transaction: the pooled connection it ran on is back to durable commits
/// for whatever runs on it next.
#[tokio::test(flavor = "multi_thread")]
async fn a_heartbeats_asynchronous_commit_ends_with_its_own_transaction() {
    use diesel_async::RunQueryDsl;
    #[derive(diesel::QueryableByName)]
    struct Session {
        #[diesel(sql_type = diesel::sql_types::Integer)]
        pid: i32,
        #[diesel(sql_type = diesel::sql_types::Text)]
        synchronous_commit: String,
    }
    async fn session(app: &TestApp) -> Session {
        let mut conn = app
            .store
            .pool()
            .get()
            .await
            .expect("the pool's one connection");
        diesel::sql_query(
            "SELECT pg_backend_pid() AS pid, current_setting('synchronous_commit') AS synchronous_commit",
        )
        .get_result(&mut *conn)
        .await
        .expect("the session's settings")
    }
    let app = spawn_app_with(AppOptions {
        pool_size: 1,
        ..Default::default()
    })
    .await;
    let before = session(&app).await;
    assert_eq!(before.synchronous_commit, "on");
    let key = app.agent_key("op1");
    for round in ["round-1", "round-1", "round-2"] {
        let res = post(
            &app,
            &key,
            "/heartbeat",
            json!({"run_id": round, "counts": {"a": 1}}),
        )
        .await;
        assert_status(&res, 200);
    }
    let after = session(&app).await;
    assert_eq!(after.pid, before.pid, "the same pooled connection");
    assert_eq!(after.synchronous_commit, "on");
    assert_eq!(rows(&app, "agent_runs").await, 2);
}

#[tokio::test(flavor = "multi_thread")]
async fn heartbeat_validates_run_id_summary_and_counters() {
    let app = spawn_app().await;
    let key = app.agent_key("op1");
    assert_each_invalid(
        &app,
        &key,
        "/heartbeat",
        &[
            (
                json!({"run_id": "r", "counts": {"drafts": -1}}),
                "counts.drafts",
            ),
            (
                json!({"run_id": "r", "counts": {"posts": 1.5}}),
                "counts.posts",
            ),
            (json!({"run_id": "r", "counts": {"x": "3"}}), "counts.x"),
            (json!({"run_id": "r", "counts": {"y": null}}), "counts.y"),
            (json!({"run_id": "r", "counts": [1, 2]}), "counts"),
            (json!({"run_id": "r".repeat(121)}), "run_id"),
            (json!({"run_id": ""}), "run_id"),
            (json!({}), "run_id"),
            (
                json!({"run_id": "r", "summary": "s".repeat(2001)}),
                "summary",
            ),
        ],
    )
    .await;
    assert_eq!(rows(&app, "agent_runs").await, 0);

    let ok = post(
        &app,
        &key,
        "/heartbeat",
        json!({"run_id": "r".repeat(120), "summary": "s".repeat(2000), "counts": {"zero": 0, "big": 1_000_000}}),
    )
    .await;
    assert_status(&ok, 200);
    assert_eq!(ok.json()["run"]["run_id"], "r".repeat(120));
    assert_eq!(app.count("SELECT count(*) AS n FROM agent_runs WHERE counts = '{\"zero\": 0, \"big\": 1000000}'::jsonb").await, 1);
}

#[tokio::test(flavor = "multi_thread")]
async fn heartbeat_takes_at_most_a_hundred_counters_of_short_names() {
    let app = spawn_app().await;
    let key = app.agent_key("op1");
    let many = |n: usize| -> Value {
        (0..n)
            .map(|i| (format!("c{i}"), json!(i)))
            .collect::<serde_json::Map<_, _>>()
            .into()
    };
    assert_each_invalid(
        &app,
        &key,
        "/heartbeat",
        &[
            (json!({"run_id": "r", "counts": many(101)}), "counts"),
            (
                json!({"run_id": "r", "counts": {"n".repeat(65): 1}}),
                "counts",
            ),
            (json!({"run_id": "r", "counts": {"": 1}}), "counts"),
        ],
    )
    .await;
    assert_eq!(rows(&app, "agent_runs").await, 0);
    for body in [
        json!({"run_id": "r", "counts": many(100)}),
        json!({"run_id": "s", "counts": {"n".repeat(64): 1}}),
    ] {
        let res = post(&app, &key, "/heartbeat", body.clone()).await;
        assert_eq!(res.status, 200, "{body}: {}", res.text());
    }
    assert_eq!(app.count("SELECT count(*) AS n FROM agent_runs WHERE run_id = 'r' AND (SELECT count(*) FROM jsonb_object_keys(counts)) = 100").await, 1);
}

/// Limits are in characters: text in Chinese or Japanese is as long as its characters.
#[tokio::test(flavor = "multi_thread")]
async fn text_limits_count_characters_not_bytes() {
    let app = spawn_app().await;
    let key = app.agent_key("op1");
    let mia = app.persona_id("Mia");
    let at = "2026-11-21 10:00";
    let (t001, i001) = ("/accounts/TW-T001/state", "/accounts/TW-I001/state");
    let requester = |n: usize| {
        json!({"state": "warming", "occurred_at": at,
               "origin": {"platform": "feishu", "requester": "張".repeat(n)}})
    };
    // One character past each limit: refused.
    for (path, body, field) in [
        // reason: 1000 characters of three bytes each.
        (
            t001,
            json!({"state": "paused", "reason": "禁".repeat(1001), "occurred_at": at}),
            "reason",
        ),
        // handle: 100 characters.
        (
            "/accounts",
            json!({"persona_id": mia, "platform": "x", "code": "TW-X100", "handle": "美".repeat(101)}),
            "handle",
        ),
        // code: 40 characters.
        (
            "/accounts",
            json!({"persona_id": mia, "platform": "x", "code": "碼".repeat(41)}),
            "code",
        ),
        // heartbeat: run_id 120, summary 2000.
        ("/heartbeat", json!({"run_id": "輪".repeat(121)}), "run_id"),
        (
            "/heartbeat",
            json!({"run_id": "r", "summary": "說".repeat(2001)}),
            "summary",
        ),
        // origin.requester: 80 characters.
        (i001, requester(81), "origin.requester"),
    ] {
        let res = post(&app, &key, path, body.clone()).await;
        assert_invalid_in(&format!("POST {path} {body}"), &res, field);
    }
    // At each limit: accepted.
    for (path, body, status) in [
        (
            t001,
            json!({"state": "paused", "reason": "禁".repeat(1000), "occurred_at": at}),
            200,
        ),
        (
            "/accounts",
            json!({"persona_id": mia, "platform": "x", "code": "TW-X100", "handle": "美".repeat(100)}),
            201,
        ),
        (
            "/accounts",
            json!({"persona_id": mia, "platform": "x", "code": "碼".repeat(40)}),
            201,
        ),
        (
            "/heartbeat",
            json!({"run_id": "輪".repeat(120), "summary": "說".repeat(2000)}),
            200,
        ),
        (i001, requester(80), 200),
    ] {
        let res = post(&app, &key, path, body.clone()).await;
        assert_eq!(res.status, status, "POST {path} {body}: {}", res.text());
    }
}

// ---------------------------------------------------------------------------------------------
// GET /work/today

#[tokio::test(flavor = "multi_thread")]
async fn work_today_counts_the_targets_of_active_accounts() {
    let app = spawn_app().await;
    let before = today_in("Asia/Taipei");
    let res = get(&app, &app.agent_key("op1"), "/work/today").await;
    let after = today_in("Asia/Taipei");
    assert_status(&res, 200);
    let v = res.json();
    assert_eq!(v["agent"]["name"], "op1");
    assert_eq!(v["agent"]["id"], app.agent_id("op1").to_string());
    let dates = v["dates"].as_array().unwrap();
    assert_eq!(dates.len(), 1, "{v}");
    assert_eq!(dates[0]["market"], "TW");
    let today = dates[0]["date"].as_str().unwrap().to_owned();
    assert!(
        today == before || today == after,
        "{today} is not today in Taipei ({before})"
    );
    assert_eq!(v["last_report_at"], Value::Null);

    let s = &v["summary"];
    assert_eq!(s["expected"], 5, "{s}");
    assert_eq!(s["covered"], 0, "{s}");
    assert_eq!(s["missing_accounts"], 4, "{s}");
    assert_eq!(s["missing_posts"], 5, "{s}");
    for k in [
        "redo",
        "tasks",
        "follow_ups",
        "unschedule_stocked",
        "inventory",
    ] {
        assert_eq!(s[k], 0, "{k}");
    }
    let missing = v["missing"].as_array().unwrap();
    assert_eq!(
        codes(missing),
        [
            "TW-I001/instagram",
            "TW-L001/threads",
            "TW-L002/tiktok",
            "TW-T001/threads"
        ]
    );
    for m in missing {
        let target = if m["code"] == "TW-T001" { 2 } else { 1 };
        assert_eq!(m["target"], target, "{m}");
        assert_eq!(m["missing"], target, "{m}");
        assert_eq!(m["published"], 0, "{m}");
        assert_eq!(m["scheduled"], 0, "{m}");
        assert_eq!(m["inventory_available"], 0, "{m}");
        assert_eq!(m["market"], "TW", "{m}");
        assert_eq!(m["date"], today.as_str(), "{m}");
        assert_eq!(m["persona"], "Mia", "{m}");
    }
    assert_eq!(
        v["not_in_rotation"],
        json!([{"code": "TW-K001", "platform": "tiktok", "state": "warming", "inventory": 0}])
    );
    for k in ["redo", "tasks", "follow_ups", "unschedule_stocked"] {
        assert_eq!(v[k], json!([]), "{k}");
    }

    // Other agents see only their own day.
    let op2 = get(&app, &app.agent_key("op2"), "/work/today").await.json();
    assert_eq!(op2["summary"]["expected"], 1);
    assert_eq!(
        codes(op2["missing"].as_array().unwrap()),
        ["TW-T002/threads"]
    );
    assert_eq!(op2["not_in_rotation"], json!([]));
    let other1 = get(&app, &app.agent_key("other1"), "/work/today")
        .await
        .json();
    assert_eq!(other1["summary"]["expected"], 1);
    assert_eq!(other1["missing"][0]["persona"], "Zoe");
    assert_error(
        &get(&app, &app.agent_key("bot"), "/work/today").await,
        403,
        "forbidden",
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn work_today_moves_a_banned_account_out_of_rotation() {
    let app = spawn_app().await;
    let res = report(
        &app,
        "op1",
        "TW-T001",
        json!({"state": "banned", "reason": "ban", "occurred_at": "2026-11-21 10:00"}),
    )
    .await;
    assert_status(&res, 200);
    let v = get(&app, &app.agent_key("op1"), "/work/today").await.json();
    assert_eq!(v["summary"]["expected"], 3, "{v}");
    assert_eq!(v["summary"]["missing_posts"], 3);
    assert_eq!(v["summary"]["missing_accounts"], 3);
    assert_eq!(
        codes(v["missing"].as_array().unwrap()),
        ["TW-I001/instagram", "TW-L001/threads", "TW-L002/tiktok"]
    );
    let out = v["not_in_rotation"].as_array().unwrap();
    assert_eq!(codes(out), ["TW-K001/tiktok", "TW-T001/threads"]);
    let t = out.iter().find(|n| n["code"] == "TW-T001").unwrap();
    assert_eq!(t["state"], "banned");

    // Restored: back in rotation.
    let res = report(
        &app,
        "op1",
        "TW-T001",
        json!({"state": "restored", "occurred_at": "2026-11-21 11:00"}),
    )
    .await;
    assert_status(&res, 200);
    let v = get(&app, &app.agent_key("op1"), "/work/today").await.json();
    assert_eq!(v["summary"]["expected"], 5);
    // A new active account adds its target.
    let add = post(&app, &app.agent_key("op1"), "/accounts", json!({"persona_id": app.persona_id("Mia"), "platform": "x", "code": "TW-X001", "state": "active"})).await;
    assert_status(&add, 201);
    let v = get(&app, &app.agent_key("op1"), "/work/today").await.json();
    assert_eq!(v["summary"]["expected"], 6);
    assert!(
        v["missing"]
            .as_array()
            .unwrap()
            .iter()
            .any(|m| m["code"] == "TW-X001")
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn work_today_takes_a_market_date() {
    let app = spawn_app().await;
    let key = app.agent_key("op1");
    let res = get(&app, &key, "/work/today?date=2026-12-01").await;
    assert_status(&res, 200);
    let v = res.json();
    assert_eq!(v["dates"], json!([{"market": "TW", "date": "2026-12-01"}]));
    let missing = v["missing"].as_array().unwrap();
    assert_eq!(missing.len(), 4);
    assert!(missing.iter().all(|m| m["date"] == "2026-12-01"), "{v}");
    assert_eq!(v["summary"]["expected"], 5);

    for bad in [
        "2026-13-01",
        "2026-12-011",
        "2026-02-30",
        "01/12/2026",
        "2026-12-1",
        "today",
        "",
    ] {
        let res = get(&app, &key, &format!("/work/today?date={bad}")).await;
        assert_invalid_in(&format!("date {bad:?}"), &res, "date");
    }
    // Every market gets the same explicit date.
    let jp = get(&app, &app.agent_key("jp1"), "/work/today?date=2026-12-01")
        .await
        .json();
    assert_eq!(jp["dates"], json!([{"market": "JP", "date": "2026-12-01"}]));
}

#[tokio::test(flavor = "multi_thread")]
async fn work_today_uses_each_markets_own_date() {
    let app = spawn_app().await;
    let before = today_in("Asia/Tokyo");
    let res = get(&app, &app.agent_key("jp1"), "/work/today").await;
    let after = today_in("Asia/Tokyo");
    assert_status(&res, 200);
    let v = res.json();
    let dates = v["dates"].as_array().unwrap();
    assert_eq!(dates.len(), 1);
    assert_eq!(dates[0]["market"], "JP");
    let date = dates[0]["date"].as_str().unwrap();
    assert!(
        date == before || date == after,
        "{date} is not today in Tokyo ({before})"
    );
    assert_eq!(codes(v["missing"].as_array().unwrap()), ["JP-T001/threads"]);
    assert_eq!(v["missing"][0]["date"], date);
    assert_eq!(v["missing"][0]["market"], "JP");
    assert_eq!(v["summary"]["expected"], 1);

    // An agent with accounts in two markets gets one date per market.
    let add = post(
        &app,
        &app.agent_key("op1"),
        "/accounts",
        json!({"persona_id": app.persona_id("Mia"), "platform": "x", "code": "US-X001", "market": "US", "state": "active"}),
    )
    .await;
    assert_status(&add, 201);
    let ny_before = today_in("America/New_York");
    let v = get(&app, &app.agent_key("op1"), "/work/today").await.json();
    let ny_after = today_in("America/New_York");
    let dates = v["dates"].as_array().unwrap();
    assert_eq!(
        dates
            .iter()
            .map(|d| d["market"].as_str().unwrap())
            .collect::<Vec<_>>(),
        ["TW", "US"]
    );
    let us = dates[1]["date"].as_str().unwrap();
    assert!(
        us == ny_before || us == ny_after,
        "{us} is not today in New York"
    );
    let row = v["missing"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["code"] == "US-X001")
        .unwrap()
        .clone();
    assert_eq!(row["market"], "US");
    assert_eq!(row["date"], us);
}

#[tokio::test(flavor = "multi_thread")]
async fn stocked_posts_show_as_inventory_in_the_day_and_count_for_no_day() {
    let app = spawn_app().await;
    let key = app.agent_key("op1");
    // TW-K001 is warming: a submitted draft is stocked. TW-T001 is active: one stocked post
    // there (by SQL, as a state change would leave it) shows as inventory available.
    for (code, body) in [("TW-K001", "warming one"), ("TW-K001", "warming two")] {
        let res = post(&app, &key, "/drafts", json!({"code": code, "body": body})).await;
        assert_status(&res, 201);
        assert_eq!(res.json()["draft"]["status"], "stocked");
    }
    let res = post(
        &app,
        &key,
        "/drafts",
        json!({"code": "TW-T001", "body": "active one"}),
    )
    .await;
    assert_status(&res, 201);
    let id = res.json()["draft"]["id"].as_str().unwrap().to_owned();
    app.sql(&format!(
        "UPDATE posts SET status = 'stocked' WHERE id = '{id}'"
    ))
    .await;

    let v = get(&app, &key, "/work/today").await.json();
    assert_eq!(
        v["not_in_rotation"],
        json!([{"code": "TW-K001", "platform": "tiktok", "state": "warming", "inventory": 2}])
    );
    let t001 = v["missing"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["code"] == "TW-T001")
        .cloned()
        .unwrap();
    assert_eq!(t001["inventory_available"], 1, "{t001}");
    // Stocked posts count for no day: TW-T001 still misses its whole target.
    assert_eq!(t001["missing"], 2, "{t001}");
    assert_eq!(v["summary"]["inventory"], 3, "{v}");
    assert_eq!(v["summary"]["covered"], 0, "{v}");
}

#[tokio::test(flavor = "multi_thread")]
async fn drafts_sent_back_are_the_days_redo() {
    let app = spawn_app().await;
    let key = app.agent_key("op1");
    let long = "長".repeat(130);
    let res = post(
        &app,
        &key,
        "/drafts",
        json!({"code": "TW-T001", "body": long}),
    )
    .await;
    assert_status(&res, 201);
    let id = res.json()["draft"]["id"].as_str().unwrap().to_owned();
    app.sql(&format!(
        "UPDATE posts SET status = 'sent_back', awaiting_rewrite = true, returned_body = body, \
         returned_at = '2026-11-21T02:00:00Z' WHERE id = '{id}'"
    ))
    .await;
    app.sql(&format!(
        "INSERT INTO review_events (post_id, action, reason, actor_kind, actor_name) \
         VALUES ('{id}', 'sent_back', 'too long', 'member', 'Ann')"
    ))
    .await;

    let v = get(&app, &key, "/work/today").await.json();
    assert_eq!(v["summary"]["redo"], 1, "{v}");
    let item = &v["redo"][0];
    assert_eq!(item["id"], id.as_str());
    assert_eq!(item["kind"], "sent_back");
    assert_eq!(item["code"], "TW-T001");
    assert_eq!(item["platform"], "threads");
    assert_eq!(item["instruction"], "too long");
    assert_eq!(item["requested_at"], "2026-11-21T02:00:00Z");
    assert_eq!(item["excerpt"], format!("{}…", "長".repeat(120)));
    // Another agent's day has none of it.
    let op2 = get(&app, &app.agent_key("op2"), "/work/today").await.json();
    assert_eq!(op2["redo"], json!([]));
    assert_eq!(op2["summary"]["redo"], 0);
}
