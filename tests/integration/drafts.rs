//! Agent API: drafts — GET /drafts, POST /drafts, PUT /drafts/{id}, POST /drafts/{id}/images,
//! POST /drafts/{id}/media and POST /drafts/{id}/notes (MCP list_redo, submit_draft,
//! update_draft, attach_images, attach_media, add_note), over the standard tenant.
//!
//! No endpoint moves a post through review yet: sending back, asking for a rewrite, approving
//! and publishing are done here with SQL, the way a reviewer's move will leave the rows.

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use fleetdesk_tests::assert::case_prefix;
use fleetdesk_tests::client::Request;
use fleetdesk_tests::{Response, TestApp, spawn_app};
use serde_json::{Value, json};
use uuid::Uuid;

const API: &str = "/api/agent/v1";

/// The MP4 the video probe's own tests read (moov before mdat).
const MP4: &[u8] = include_bytes!("../../crates/media/tests/fixtures/faststart.mp4");

/// 3 MiB: the total of inline images a submit may carry.
const MAX_INLINE: usize = 3 * 1024 * 1024;

// ---------------------------------------------------------------------------------------------
// helpers: requests

async fn get(app: &TestApp, key: &str, path: &str) -> Response {
    app.client.get(&format!("{API}{path}"), key).await
}

async fn post(app: &TestApp, key: &str, path: &str, body: Value) -> Response {
    app.client.post(&format!("{API}{path}"), key, &body).await
}

async fn put(app: &TestApp, key: &str, path: &str, body: Value) -> Response {
    app.client
        .send(
            Request::new("PUT", &format!("{API}{path}"))
                .bearer(key)
                .json(&body),
        )
        .await
}

/// A write with an Idempotency-Key.
async fn send_idem(
    app: &TestApp,
    method: &str,
    key: &str,
    path: &str,
    idem: &str,
    body: &Value,
) -> Response {
    app.client
        .send(
            Request::new(method, &format!("{API}{path}"))
                .bearer(key)
                .header("Idempotency-Key", idem)
                .json(body),
        )
        .await
}

/// POST /drafts as an agent of the tenant.
async fn submit(app: &TestApp, agent: &str, body: Value) -> Response {
    post(app, &app.agent_key(agent), "/drafts", body).await
}

/// POST /drafts that must create a post; returns its id.
async fn submit_ok(app: &TestApp, agent: &str, body: Value) -> String {
    let res = submit(app, agent, body.clone()).await;
    assert_eq!(res.status, 201, "submit {body}: {}", res.text());
    id_of(&res)
}

fn id_of(res: &Response) -> String {
    res.json()["draft"]["id"]
        .as_str()
        .unwrap_or_else(|| panic!("no draft id: {}", res.text()))
        .to_owned()
}

// ---------------------------------------------------------------------------------------------
// helpers: assertions

#[track_caller]
fn assert_status(res: &Response, status: u16) {
    assert_eq!(res.status, status, "body: {}", res.text());
}

/// An error with its status, code and (when given) field, a message and the request id.
#[track_caller]
fn assert_error_in(case: &str, res: &Response, status: u16, code: &str, field: Option<&str>) {
    let v = fleetdesk_tests::assert::assert_error_in(case, res, status, code);
    if let Some(field) = field {
        assert_eq!(v["field"], field, "{}{v}", case_prefix(case));
    }
}

#[track_caller]
fn assert_error(res: &Response, status: u16, code: &str) {
    assert_error_in("", res, status, code, None);
}

/// 400 invalid_request naming `field`.
#[track_caller]
fn assert_invalid_in(case: &str, res: &Response, field: &str) {
    assert_error_in(case, res, 400, "invalid_request", Some(field));
}

/// 422 rejected naming `field`.
#[track_caller]
fn assert_rejected_in(case: &str, res: &Response, field: &str) {
    assert_error_in(case, res, 422, "rejected", Some(field));
}

// ---------------------------------------------------------------------------------------------
// helpers: the database

/// The number of rows of a table.
async fn rows(app: &TestApp, table: &str) -> i64 {
    app.count(&format!("SELECT count(*) AS n FROM {table}"))
        .await
}

/// The rows posts, post_media, media and review_events hold: what a refused request must leave
/// as it was.
async fn written(app: &TestApp) -> [i64; 4] {
    [
        rows(app, "posts").await,
        rows(app, "post_media").await,
        rows(app, "media").await,
        rows(app, "review_events").await,
    ]
}

/// One text column (`v`) of each row of a query.
pub(crate) async fn texts(app: &TestApp, query: &str) -> Vec<String> {
    use diesel_async::RunQueryDsl;
    #[derive(diesel::QueryableByName)]
    struct V {
        #[diesel(sql_type = diesel::sql_types::Text)]
        v: String,
    }
    let rows: Vec<V> = diesel::sql_query(query)
        .load(&mut app.connect().await)
        .await
        .unwrap_or_else(|e| panic!("{query}: {e}"));
    rows.into_iter().map(|r| r.v).collect()
}

/// One text value.
async fn value(app: &TestApp, query: &str) -> String {
    let mut all = texts(app, query).await;
    assert_eq!(all.len(), 1, "{query} gave {all:?}");
    all.remove(0)
}

/// A column of a post, as text (`<null>` for NULL).
async fn post_field(app: &TestApp, post: &str, column: &str) -> String {
    value(
        app,
        &format!("SELECT COALESCE({column}::text, '<null>') AS v FROM posts WHERE id = '{post}'"),
    )
    .await
}

/// The media ids on a post, in publishing order.
async fn post_media(app: &TestApp, post: &str) -> Vec<String> {
    texts(
        app,
        &format!(
            "SELECT media_id::text AS v FROM post_media WHERE post_id = '{post}' ORDER BY position"
        ),
    )
    .await
}

/// The review record of a post, oldest first: `action|reason|actor_kind|actor_name`.
async fn events(app: &TestApp, post: &str) -> Vec<String> {
    texts(
        app,
        &format!(
            "SELECT action || '|' || COALESCE(reason, '') || '|' || actor_kind || '|' || actor_name AS v \
             FROM review_events WHERE post_id = '{post}' ORDER BY id"
        ),
    )
    .await
}

async fn set_status(app: &TestApp, post: &str, status: &str) {
    app.sql(&format!(
        "UPDATE posts SET status = '{status}' WHERE id = '{post}'"
    ))
    .await;
}

/// What a reviewer's send-back (`sent_back`) or rewrite request (`rewrite_requested`) leaves:
/// the status, the waiting flag, the body as returned, and Ann's event with the reason.
async fn return_post(app: &TestApp, post: &str, status: &str, reason: &str, minutes_ago: i64) {
    app.sql(&format!(
        "UPDATE posts SET status = '{status}', awaiting_rewrite = true, returned_body = body, \
         returned_at = now() - interval '{minutes_ago} minutes' WHERE id = '{post}'"
    ))
    .await;
    app.sql(&format!(
        "INSERT INTO review_events (post_id, action, reason, actor_kind, actor_name, created_at) \
         VALUES ('{post}', '{status}', '{reason}', 'member', 'Ann', now() - interval '{minutes_ago} minutes')"
    ))
    .await;
}

// ---------------------------------------------------------------------------------------------
// helpers: files and uploads

/// A PNG header (signature and IHDR) of width `seed + 1`: enough to be judged a PNG, and a
/// different file for every seed (identical bytes are one library item).
fn png(seed: u32) -> Vec<u8> {
    let mut b = b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR".to_vec();
    b.extend_from_slice(&(seed + 1).to_be_bytes());
    b.extend_from_slice(&[0, 0, 0, 1, 8, 6, 0, 0, 0, 0x1F, 0x15, 0xC4, 0x89]);
    b
}

/// A PNG of exactly `len` bytes.
fn png_of(seed: u32, len: usize) -> Vec<u8> {
    let mut b = png(seed);
    assert!(len >= b.len());
    b.resize(len, 0);
    b
}

fn b64(bytes: &[u8]) -> String {
    STANDARD.encode(bytes)
}

/// An inline image entry of a submit.
fn inline(seed: u32) -> Value {
    json!({"data": b64(&png(seed))})
}

/// The path of an absolute link the service gave out.
fn local(app: &TestApp, url: &str) -> String {
    url.strip_prefix(&app.base)
        .unwrap_or_else(|| panic!("{url} is not on {}", app.base))
        .to_owned()
}

/// POST /uploads for `code`; returns the upload id and its link.
async fn create_upload(app: &TestApp, agent: &str, body: Value) -> (String, String) {
    let res = post(app, &app.agent_key(agent), "/uploads", body.clone()).await;
    assert_eq!(res.status, 201, "create upload {body}: {}", res.text());
    let v = res.json();
    (
        v["upload_id"].as_str().expect("upload_id").to_owned(),
        v["upload_url"].as_str().expect("upload_url").to_owned(),
    )
}

/// PUTs the file to an upload link; returns the library item.
async fn put_file(app: &TestApp, url: &str, bytes: Vec<u8>) -> String {
    let res = app
        .client
        .send(
            Request::new("PUT", &local(app, url))
                .header("Content-Type", "application/octet-stream")
                .raw(bytes),
        )
        .await;
    assert_eq!(res.status, 200, "PUT {url}: {}", res.text());
    res.json()["media_id"]
        .as_str()
        .expect("media_id")
        .to_owned()
}

/// A finished image upload by `agent` for `code`: (upload id, media id).
async fn uploaded(app: &TestApp, agent: &str, code: &str, seed: u32) -> (String, String) {
    let (id, url) = create_upload(app, agent, json!({"code": code})).await;
    let media = put_file(app, &url, png(seed)).await;
    (id, media)
}

/// Finished image uploads by op1 for TW-T001 (project beauty).
async fn uploads(app: &TestApp, seeds: std::ops::Range<u32>) -> Vec<(String, String)> {
    let mut out = Vec::new();
    for seed in seeds {
        out.push(uploaded(app, "op1", "TW-T001", seed).await);
    }
    out
}

/// A finished MP4 upload by op1 for TW-T001: (upload id, media id).
async fn uploaded_video(app: &TestApp) -> (String, String) {
    let (id, url) = create_upload(
        app,
        "op1",
        json!({"code": "TW-T001", "mime_type": "video/mp4", "bytes": MP4.len()}),
    )
    .await;
    let media = put_file(app, &url, MP4.to_vec()).await;
    (id, media)
}

/// An upload whose file was never sent.
async fn pending_upload(app: &TestApp) -> String {
    create_upload(app, "op1", json!({"code": "TW-T001"}))
        .await
        .0
}

/// Mia's reddit account TW-R001, active.
async fn add_reddit(app: &TestApp) {
    let res = post(
        app,
        &app.agent_key("op1"),
        "/accounts",
        json!({"persona_id": app.persona_id("Mia"), "platform": "reddit", "code": "TW-R001",
               "state": "active"}),
    )
    .await;
    assert_status(&res, 201);
}

fn ids(pairs: &[(String, String)], pick: impl Fn(&(String, String)) -> &String) -> Vec<String> {
    pairs.iter().map(|p| pick(p).clone()).collect()
}

fn upload_ids(pairs: &[(String, String)]) -> Vec<String> {
    ids(pairs, |p| &p.0)
}

fn media_ids(pairs: &[(String, String)]) -> Vec<String> {
    ids(pairs, |p| &p.1)
}

// ---------------------------------------------------------------------------------------------
// helpers: MCP

/// `tools/call` on /api/mcp; returns the whole JSON-RPC message.
async fn rpc_call(app: &TestApp, key: &str, name: &str, arguments: Value) -> Value {
    let res = app
        .client
        .send(
            Request::mcp(&json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                              "params": {"name": name, "arguments": arguments}}))
            .bearer(key),
        )
        .await;
    assert_eq!(res.status, 200, "{name}: {}", res.text());
    res.json()
}

/// `tools/call` that must answer a tool result (a REST error is `isError: true`); returns it.
async fn call_tool(app: &TestApp, key: &str, name: &str, arguments: Value) -> Value {
    let msg = rpc_call(app, key, name, arguments).await;
    fleetdesk_tests::assert::tool_result(name, &msg)
}

// ---------------------------------------------------------------------------------------------
// POST /drafts

#[tokio::test(flavor = "multi_thread")]
async fn submit_sends_a_post_of_an_active_account_to_internal_review() {
    let app = spawn_app().await;
    let res = submit(
        &app,
        "op1",
        json!({"code": "TW-T001", "body": "Morning light on the balcony", "topic": "morning",
               "sponsored": true, "note": "first of the week"}),
    )
    .await;
    assert_status(&res, 201);
    let v = res.json();
    assert!(v.get("message").is_none(), "{v}");
    assert!(v.get("heads_up").is_none(), "{v}");
    let d = &v["draft"];
    let id = d["id"].as_str().unwrap().to_owned();
    assert!(Uuid::parse_str(&id).is_ok(), "{v}");
    assert_eq!(
        d,
        &json!({"id": id, "status": "internal_review", "code": "TW-T001", "platform": "threads",
                "planned_at": null, "images": 0, "media": 0, "duplicate": false,
                "characters": [], "rewrite_answered": false, "stocked": false, "noted": true})
    );
    for (column, want) in [
        ("status", "internal_review"),
        ("body", "Morning light on the balcony"),
        ("topic", "morning"),
        ("sponsored", "true"),
        ("planned_at", "<null>"),
        ("stocked_at", "<null>"),
        ("stock_reason", "<null>"),
        ("awaiting_rewrite", "false"),
        ("agent_id", &app.agent_id("op1").to_string()),
        ("persona_id", &app.persona_id("Mia").to_string()),
    ] {
        assert_eq!(post_field(&app, &id, column).await, want, "{column}");
    }
    assert_eq!(
        events(&app, &id).await,
        [
            "submitted||agent|op1",
            "added note|first of the week|agent|op1"
        ]
    );
    // The account is the one of the caller's workspace, not Other Agency's TW-T001.
    assert_eq!(
        app.count(&format!(
            "SELECT count(*) AS n FROM posts p JOIN account_slots s ON s.id = p.slot_id \
             JOIN personas pe ON pe.id = s.persona_id WHERE p.id = '{id}' AND pe.name = 'Mia'"
        ))
        .await,
        1
    );

    // A code in lower case with blanks around is the same account.
    let lower = submit(&app, "op1", json!({"code": "  tw-i001 ", "body": "b"})).await;
    assert_status(&lower, 201);
    assert_eq!(lower.json()["draft"]["code"], "TW-I001");
    assert_eq!(lower.json()["draft"]["platform"], "instagram");
    assert_eq!(lower.json()["draft"]["noted"], false);
    assert_eq!(events(&app, &id_of(&lower)).await, ["submitted||agent|op1"]);
}

#[tokio::test(flavor = "multi_thread")]
async fn submit_false_saves_a_draft_only() {
    let app = spawn_app().await;
    for (code, state) in [("TW-T001", "active"), ("TW-K001", "warming")] {
        let res = submit(
            &app,
            "op1",
            json!({"code": code, "body": "not yet", "submit": false}),
        )
        .await;
        assert_status(&res, 201);
        let v = res.json();
        assert_eq!(v["draft"]["status"], "draft", "{state}: {v}");
        assert_eq!(v["draft"]["stocked"], false, "{state}: {v}");
        assert!(v.get("message").is_none(), "{state}: {v}");
        let id = id_of(&res);
        assert_eq!(post_field(&app, &id, "status").await, "draft");
        assert_eq!(post_field(&app, &id, "stocked_at").await, "<null>");
        assert_eq!(events(&app, &id).await, ["saved_draft||agent|op1"]);
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_post_for_an_account_that_is_not_active_is_stocked_and_counts_for_no_day() {
    let app = spawn_app().await;
    let key = app.agent_key("op1");
    let before = get(&app, &key, "/work/today").await.json();

    // TW-K001 is warming.
    let res = submit(
        &app,
        "op1",
        json!({"code": "TW-K001", "body": "warming post"}),
    )
    .await;
    assert_status(&res, 201);
    let v = res.json();
    assert_eq!(v["draft"]["status"], "stocked", "{v}");
    assert_eq!(v["draft"]["stocked"], true, "{v}");
    let message = v["message"].as_str().unwrap_or_default();
    assert!(message.contains("not active"), "{v}");
    assert!(message.contains("TW-K001"), "{v}");
    assert!(
        v.get("heads_up").is_none(),
        "no other stocked post yet: {v}"
    );
    let first = id_of(&res);
    assert_eq!(post_field(&app, &first, "status").await, "stocked");
    assert_ne!(post_field(&app, &first, "stocked_at").await, "<null>");
    let reason = post_field(&app, &first, "stock_reason").await;
    assert!(reason.contains("warming"), "{reason}");
    assert_eq!(
        events(&app, &first).await,
        [format!("stocked|{reason}|agent|op1")]
    );

    // Not sent to review, counted for no day: the day's work is as it was.
    let after = get(&app, &key, "/work/today").await.json();
    assert_eq!(after["summary"]["expected"], before["summary"]["expected"]);
    assert_eq!(after["summary"]["covered"], 0, "{after}");
    assert_eq!(
        after["summary"]["missing_posts"],
        before["summary"]["missing_posts"]
    );
    assert_eq!(after["missing"], before["missing"]);
    // It waits in the account's inventory.
    assert_eq!(
        after["not_in_rotation"],
        json!([{"code": "TW-K001", "platform": "tiktok", "state": "warming", "inventory": 1}])
    );

    // A second post for the account: the first waits in inventory.
    let second = submit(&app, "op1", json!({"code": "TW-K001", "body": "another"})).await;
    assert_status(&second, 201);
    let v = second.json();
    assert_eq!(v["draft"]["status"], "stocked");
    assert_eq!(v["heads_up"]["inventory"]["stocked"], 1, "{v}");
    assert!(
        v["heads_up"]["inventory"]["message"]
            .as_str()
            .is_some_and(|m| m.contains("TW-K001")),
        "{v}"
    );

    // A banned account stocks too.
    let ban = post(
        &app,
        &key,
        "/accounts/TW-T001/state",
        json!({"state": "banned", "reason": "ban", "occurred_at": "2026-11-21 10:00"}),
    )
    .await;
    assert_status(&ban, 200);
    let banned = submit(
        &app,
        "op1",
        json!({"code": "TW-T001", "body": "banned post"}),
    )
    .await;
    assert_status(&banned, 201);
    let v = banned.json();
    assert_eq!(v["draft"]["status"], "stocked", "{v}");
    assert_eq!(v["draft"]["stocked"], true, "{v}");
    assert!(
        v["message"]
            .as_str()
            .is_some_and(|m| m.contains("not active")),
        "{v}"
    );
    assert!(
        post_field(&app, &id_of(&banned), "stock_reason")
            .await
            .contains("banned")
    );
    assert_eq!(
        get(&app, &key, "/work/today").await.json()["summary"]["covered"],
        0
    );

    // Once TW-K001 is active again a new post goes to review, with a heads-up on its inventory.
    let restore = post(
        &app,
        &key,
        "/accounts/TW-K001/state",
        json!({"state": "restored", "occurred_at": "2026-11-21 11:00"}),
    )
    .await;
    assert_status(&restore, 200);
    let active = submit(&app, "op1", json!({"code": "TW-K001", "body": "back"})).await;
    assert_status(&active, 201);
    let v = active.json();
    assert_eq!(v["draft"]["status"], "internal_review", "{v}");
    assert_eq!(v["draft"]["stocked"], false, "{v}");
    assert!(v.get("message").is_none(), "{v}");
    assert_eq!(v["heads_up"]["inventory"]["stocked"], 2, "{v}");
    assert_eq!(
        app.count("SELECT count(*) AS n FROM posts WHERE status = 'stocked'")
            .await,
        3
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn the_same_body_again_answers_the_original_and_applies_what_the_resend_adds() {
    let app = spawn_app().await;
    let items = uploads(&app, 0..3).await;
    let body = json!({"code": "TW-I001", "body": "Same words", "upload_ids": [items[0].0]});
    let first = submit(&app, "op1", body.clone()).await;
    assert_status(&first, 201);
    let id = id_of(&first);
    let posts = rows(&app, "posts").await;

    // Identical: 200, the original, duplicate true, nothing new.
    let again = submit(&app, "op1", body.clone()).await;
    assert_status(&again, 200);
    let v = again.json();
    assert_eq!(v["draft"]["id"], id.as_str());
    assert_eq!(v["draft"]["duplicate"], true);
    assert_eq!(v["draft"]["status"], "internal_review");
    assert_eq!(
        v["draft"]["images"], 1,
        "the upload already on it is skipped"
    );
    assert_eq!(rows(&app, "posts").await, posts);
    assert_eq!(post_media(&app, &id).await, [items[0].1.clone()]);

    // The resend's uploads, library items, characters and note go on the original: media
    // appended in order, the ones already there skipped.
    let resend = submit(
        &app,
        "op1",
        json!({"code": "TW-I001", "body": "Same words", "upload_ids": [items[1].0, items[0].0],
               "media_ids": [items[2].1, items[1].1], "note": "two more photos",
               "characters": [{"code": "lulu"}, {"code": "momo", "pov": true}]}),
    )
    .await;
    assert_status(&resend, 200);
    let v = resend.json();
    assert_eq!(v["draft"]["id"], id.as_str());
    assert_eq!(v["draft"]["duplicate"], true);
    assert_eq!(v["draft"]["images"], 3, "{v}");
    assert_eq!(v["draft"]["media"], 3, "{v}");
    assert_eq!(v["draft"]["noted"], true, "{v}");
    assert_eq!(
        v["draft"]["characters"],
        json!([{"code": "lulu", "name": "Lulu", "pov": false},
               {"code": "momo", "name": "Momo", "pov": true}])
    );
    assert_eq!(rows(&app, "posts").await, posts);
    assert_eq!(post_media(&app, &id).await, media_ids(&items));
    let characters = post_field(&app, &id, "characters").await;
    assert!(
        characters.find("lulu").unwrap() < characters.find("momo").unwrap(),
        "{characters}"
    );
    // Each resend is on the review record: the plain one, then this one with what it set.
    assert_eq!(
        events(&app, &id).await,
        [
            "submitted||agent|op1",
            "resubmitted_duplicate||agent|op1",
            "resubmitted_duplicate||agent|op1",
            "characters_set||agent|op1",
            "added note|two more photos|agent|op1",
        ]
    );

    // An empty characters array clears them on the original.
    let cleared = submit(
        &app,
        "op1",
        json!({"code": "TW-I001", "body": "Same words", "characters": []}),
    )
    .await;
    assert_status(&cleared, 200);
    assert_eq!(cleared.json()["draft"]["characters"], json!([]));
    assert_eq!(post_field(&app, &id, "characters").await, "[]");

    // Another body, or the same body for another account, is a new post.
    let other_body = submit(
        &app,
        "op1",
        json!({"code": "TW-I001", "body": "Other words"}),
    )
    .await;
    assert_status(&other_body, 201);
    assert_ne!(id_of(&other_body), id);
    let other_code = submit(
        &app,
        "op1",
        json!({"code": "TW-T001", "body": "Same words"}),
    )
    .await;
    assert_status(&other_code, 201);
    assert_eq!(other_code.json()["draft"]["duplicate"], false);
    assert_eq!(rows(&app, "posts").await, posts + 2);
}

#[tokio::test(flavor = "multi_thread")]
async fn the_duplicate_rule_looks_only_at_posts_not_yet_published() {
    let app = spawn_app().await;
    // Unfinished statuses: the resend is the original.
    for status in [
        "draft",
        "internal_review",
        "client_review",
        "approved",
        "rewrite_requested",
        "sent_back",
        "stocked",
        "scheduled",
        "publishing",
    ] {
        let body = format!("still {status}");
        let id = submit_ok(&app, "op1", json!({"code": "TW-T001", "body": body})).await;
        set_status(&app, &id, status).await;
        let again = submit(&app, "op1", json!({"code": "TW-T001", "body": body})).await;
        assert_eq!(again.status, 200, "{status}: {}", again.text());
        assert_eq!(again.json()["draft"]["id"], id.as_str(), "{status}");
        assert_eq!(again.json()["draft"]["duplicate"], true, "{status}");
        assert_eq!(again.json()["draft"]["status"], status, "{status}");
    }
    // Finished ones: a new post.
    for status in ["published", "failed", "cancelled", "deleted"] {
        let body = format!("was {status}");
        let id = submit_ok(&app, "op1", json!({"code": "TW-T001", "body": body})).await;
        set_status(&app, &id, status).await;
        let again = submit(&app, "op1", json!({"code": "TW-T001", "body": body})).await;
        assert_eq!(again.status, 201, "{status}: {}", again.text());
        assert_ne!(id_of(&again), id, "{status}");
        assert_eq!(again.json()["draft"]["duplicate"], false, "{status}");
    }
    // Nine originals answered their resends; four finished posts were written again.
    assert_eq!(rows(&app, "posts").await, 9 + 4 * 2);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_resend_cannot_add_media_to_an_original_past_internal_review() {
    let app = spawn_app().await;
    let items = uploads(&app, 0..2).await;
    let id = submit_ok(
        &app,
        "op1",
        json!({"code": "TW-T001", "body": "approved one", "upload_ids": [items[0].0]}),
    )
    .await;
    set_status(&app, &id, "approved").await;
    let before = written(&app).await;
    for (case, extra) in [
        ("upload", json!({"upload_ids": [items[1].0]})),
        ("library item", json!({"media_ids": [items[1].1]})),
        ("inline image", json!({"images": [inline(50)]})),
    ] {
        let mut body = json!({"code": "TW-T001", "body": "approved one"});
        for (k, v) in extra.as_object().unwrap() {
            body[k] = v.clone();
        }
        let res = submit(&app, "op1", body).await;
        assert_error_in(case, &res, 422, "rejected", None);
        assert!(
            res.json()["message"].as_str().unwrap().contains("approved"),
            "{case}: {}",
            res.text()
        );
    }
    assert_eq!(
        written(&app).await,
        before,
        "a refused resend wrote something"
    );
    assert_eq!(post_media(&app, &id).await, [items[0].1.clone()]);

    // Without new media the resend still answers the original; a media item it already has
    // is skipped, not refused.
    let plain = submit(
        &app,
        "op1",
        json!({"code": "TW-T001", "body": "approved one", "media_ids": [items[0].1]}),
    )
    .await;
    assert_status(&plain, 200);
    assert_eq!(plain.json()["draft"]["id"], id.as_str());
    assert_eq!(plain.json()["draft"]["status"], "approved");
    assert_eq!(post_media(&app, &id).await, [items[0].1.clone()]);
}

#[tokio::test(flavor = "multi_thread")]
async fn planned_at_takes_iso_with_a_zone_or_market_local_time() {
    let app = spawn_app().await;
    let forty = "   2026-11-25T10:00:00.000000000+08:00  ";
    assert_eq!(forty.chars().count(), 40);
    for (i, (input, utc)) in [
        ("2026-11-25 10:00", "2026-11-25T02:00:00Z"),
        ("2026-11-25 10:00:30", "2026-11-25T02:00:30Z"),
        ("2026-11-25T10:00:00+08:00", "2026-11-25T02:00:00Z"),
        ("2026-11-25T03:00:00Z", "2026-11-25T03:00:00Z"),
        (forty, "2026-11-25T02:00:00Z"),
    ]
    .into_iter()
    .enumerate()
    {
        let res = submit(
            &app,
            "op1",
            json!({"code": "TW-T001", "body": format!("planned {i}"), "planned_at": input}),
        )
        .await;
        assert_eq!(res.status, 201, "{input}: {}", res.text());
        assert_eq!(res.json()["draft"]["planned_at"], utc, "{input}");
        let id = id_of(&res);
        assert_eq!(
            app.count(&format!(
                "SELECT count(*) AS n FROM posts WHERE id = '{id}' AND planned_at = TIMESTAMPTZ '{utc}'"
            ))
            .await,
            1,
            "{input} should be stored as {utc}"
        );
    }
    // Market-local time is the account's market: 10:00 in Tokyo is 01:00Z.
    let jp = submit(
        &app,
        "jp1",
        json!({"code": "JP-T001", "body": "jp", "planned_at": "2026-11-25 10:00"}),
    )
    .await;
    assert_status(&jp, 201);
    assert_eq!(jp.json()["draft"]["planned_at"], "2026-11-25T01:00:00Z");
    // A US account reads New York time; a local time skipped by the clocks going forward names
    // no instant.
    let add = post(
        &app,
        &app.agent_key("op1"),
        "/accounts",
        json!({"persona_id": app.persona_id("Mia"), "platform": "x", "code": "US-X001",
               "market": "US", "state": "active"}),
    )
    .await;
    assert_status(&add, 201);
    let us = submit(
        &app,
        "op1",
        json!({"code": "US-X001", "body": "us", "planned_at": "2026-11-25 10:00"}),
    )
    .await;
    assert_status(&us, 201);
    assert_eq!(us.json()["draft"]["planned_at"], "2026-11-25T15:00:00Z");
    let gap = submit(
        &app,
        "op1",
        json!({"code": "US-X001", "body": "gap", "planned_at": "2026-03-08 02:30"}),
    )
    .await;
    assert_invalid_in("a time in the DST gap", &gap, "planned_at");

    let posts = rows(&app, "posts").await;
    let forty_one = "   2026-11-25T10:00:00.000000000+08:00   ";
    assert_eq!(forty_one.chars().count(), 41);
    for bad in [
        "2026-11-25T10:00:00",
        "2026-11-25",
        "2026-11-25 10",
        "25/11/2026 10:00",
        "tomorrow 9am",
        "2026-11-25 25:00",
        "",
        forty_one,
    ] {
        let res = submit(
            &app,
            "op1",
            json!({"code": "TW-T001", "body": "bad time", "planned_at": bad}),
        )
        .await;
        assert_invalid_in(&format!("planned_at {bad:?}"), &res, "planned_at");
    }
    assert_eq!(rows(&app, "posts").await, posts);
}

#[tokio::test(flavor = "multi_thread")]
async fn characters_are_six_at_most_from_the_cast_with_one_pov() {
    let app = spawn_app().await;
    let six = json!([{"code": "dodo"}, {"code": "momo", "pov": true}, {"code": "lulu"},
                     {"code": "kiki"}, {"code": "bebe"}, {"code": "coco"}]);
    let res = submit(
        &app,
        "op1",
        json!({"code": "TW-T001", "body": "six", "characters": six}),
    )
    .await;
    assert_status(&res, 201);
    let got = res.json()["draft"]["characters"].clone();
    assert_eq!(
        got,
        json!([{"code": "dodo", "name": "Dodo", "pov": false},
               {"code": "momo", "name": "Momo", "pov": true},
               {"code": "lulu", "name": "Lulu", "pov": false},
               {"code": "kiki", "name": "Kiki", "pov": false},
               {"code": "bebe", "name": "Bebe", "pov": false},
               {"code": "coco", "name": "Coco", "pov": false}]),
        "the main character stays first"
    );
    let stored: Value = serde_json::from_str(&post_field(&app, &id_of(&res), "characters").await)
        .expect("characters json");
    assert_eq!(stored, got);

    let before = written(&app).await;
    let seven = json!([{"code": "momo"}, {"code": "lulu"}, {"code": "kiki"}, {"code": "bebe"},
                       {"code": "coco"}, {"code": "dodo"}, {"code": "fifi"}]);
    for (characters, status, field) in [
        (seven, 400, "characters"),
        (
            json!([{"code": "momo", "pov": true}, {"code": "lulu"}, {"code": "kiki", "pov": true}]),
            400,
            "characters[2].code",
        ),
        // Named twice: a rule of the list no JSON Schema states (unique by code), 422.
        (
            json!([{"code": "momo"}, {"code": "lulu"}, {"code": "momo"}]),
            422,
            "characters[2].code",
        ),
        (json!([{"code": ""}]), 400, "characters[0].code"),
        (json!([{"code": "x".repeat(25)}]), 400, "characters[0].code"),
        // Leo's chef is not in Mia's cast.
        (
            json!([{"code": "momo"}, {"code": "chef"}]),
            422,
            "characters[1].code",
        ),
        (json!([{"code": "MOMO"}]), 422, "characters[0].code"),
    ] {
        let res = submit(
            &app,
            "op1",
            json!({"code": "TW-T001", "body": "refused", "characters": characters}),
        )
        .await;
        let code = if status == 400 {
            "invalid_request"
        } else {
            "rejected"
        };
        assert_error_in(&characters.to_string(), &res, status, code, Some(field));
    }
    assert_eq!(
        written(&app).await,
        before,
        "a refused submit wrote something"
    );

    // Leo's account takes Leo's cast.
    let leo = submit(
        &app,
        "op2",
        json!({"code": "TW-T002", "body": "chef", "characters": [{"code": "chef", "pov": true}]}),
    )
    .await;
    assert_status(&leo, 201);
    assert_eq!(
        leo.json()["draft"]["characters"],
        json!([{"code": "chef", "name": "Chef", "pov": true}])
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn body_topic_note_and_code_are_checked_at_the_limit_and_one_past() {
    let app = spawn_app().await;
    // Characters, not bytes: 10000 CJK characters are 30000 bytes.
    let body_max = "貓".repeat(10_000);
    let topic_max = "話".repeat(200);
    let note_max = "註".repeat(1000);
    let res = submit(
        &app,
        "op1",
        json!({"code": "TW-T001", "body": body_max, "topic": topic_max, "note": note_max}),
    )
    .await;
    assert_status(&res, 201);
    let id = id_of(&res);
    assert_eq!(post_field(&app, &id, "body").await, body_max);
    assert_eq!(post_field(&app, &id, "topic").await, topic_max);
    assert_eq!(
        events(&app, &id).await[1],
        format!("added note|{note_max}|agent|op1")
    );
    let one = submit(&app, "op1", json!({"code": "TW-T001", "body": "貓"})).await;
    assert_status(&one, 201);

    let before = written(&app).await;
    let base = |extra: Value| {
        let mut b = json!({"code": "TW-T001", "body": "ok"});
        for (k, v) in extra.as_object().unwrap() {
            b[k] = v.clone();
        }
        b
    };
    for (body, field) in [
        (base(json!({"body": "貓".repeat(10_001)})), "body"),
        (base(json!({"body": ""})), "body"),
        (json!({"code": "TW-T001"}), "body"),
        (base(json!({"body": 5})), "body"),
        (base(json!({"topic": "話".repeat(201)})), "topic"),
        (base(json!({"note": "註".repeat(1001)})), "note"),
        (base(json!({"note": ""})), "note"),
        (base(json!({"code": "A".repeat(41)})), "code"),
        (base(json!({"code": ""})), "code"),
        (base(json!({"code": "   "})), "code"),
        (base(json!({"code": "TW T001"})), "code"),
        (json!({"body": "no code"}), "code"),
        (base(json!({"platform": "myspace"})), "platform"),
        (base(json!({"submit": "yes"})), "submit"),
        (base(json!({"sponsored": "yes"})), "sponsored"),
        (base(json!({"body": "nul\u{0}"})), "body"),
    ] {
        let res = submit(&app, "op1", body.clone()).await;
        let case: String = body.to_string().chars().take(80).collect();
        assert_invalid_in(&case, &res, field);
    }
    // A body that is not a JSON object.
    let array = app
        .client
        .send(
            Request::new("POST", &format!("{API}/drafts"))
                .bearer(&app.agent_key("op1"))
                .json(&json!(["TW-T001"])),
        )
        .await;
    assert_error(&array, 400, "invalid_request");
    // Named as the whole body, never as the draft's field `body`.
    assert_eq!(array.json()["field"], "(request body)", "{}", array.json());
    assert_eq!(
        written(&app).await,
        before,
        "a refused submit wrote something"
    );

    // A 40-character code passes the check and names no account.
    let forty = submit(&app, "op1", base(json!({"code": "A".repeat(40)}))).await;
    assert_error_in("40-character code", &forty, 404, "not_found", None);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_pick_that_is_no_pick_number_is_400_and_an_unknown_one_404() {
    let app = spawn_app().await;
    let before = written(&app).await;
    for pick in [
        "P-0001".to_owned(),
        "x".into(),
        String::new(),
        "9".repeat(41),
    ] {
        let res = submit(
            &app,
            "op1",
            json!({"code": "TW-T001", "body": "sponsored", "pick": pick}),
        )
        .await;
        assert_invalid_in(&format!("pick {pick:?}"), &res, "pick");
    }
    // The rest of the picks' rules: tests/integration/ad_picks.rs.
    let res = submit(
        &app,
        "op1",
        json!({"code": "TW-T001", "body": "sponsored", "pick": "1"}),
    )
    .await;
    assert_error_in("pick 1", &res, 404, "not_found", None);
    assert_eq!(written(&app).await, before);
}

#[tokio::test(flavor = "multi_thread")]
async fn submit_resolves_the_code_within_the_callers_accounts() {
    let app = spawn_app().await;
    let before = written(&app).await;
    for (agent, body, status, code, field) in [
        ("op1", json!({"code": "TW-X999"}), 404, "not_found", None),
        // Leo's account: op2's.
        ("op1", json!({"code": "TW-T002"}), 403, "forbidden", None),
        ("op2", json!({"code": "TW-T001"}), 403, "forbidden", None),
        // Another workspace's and another organization's codes are not found.
        ("op1", json!({"code": "JP-T001"}), 404, "not_found", None),
        ("jp1", json!({"code": "TW-T001"}), 404, "not_found", None),
        ("other1", json!({"code": "TW-I001"}), 404, "not_found", None),
        // A legacy code on two platforms needs the platform.
        (
            "op1",
            json!({"code": "OLD1"}),
            409,
            "ambiguous_code",
            Some("platform"),
        ),
        (
            "op1",
            json!({"code": "old1"}),
            409,
            "ambiguous_code",
            Some("platform"),
        ),
        // A platform the code is not on.
        (
            "op1",
            json!({"code": "TW-T001", "platform": "instagram"}),
            404,
            "not_found",
            None,
        ),
        // The community agent has no drafts scope.
        ("bot", json!({"code": "TW-T001"}), 403, "forbidden", None),
    ] {
        let mut body = body;
        body["body"] = json!("who owns this");
        let res = submit(&app, agent, body.clone()).await;
        assert_error_in(&format!("{agent} {body}"), &res, status, code, field);
    }
    assert_eq!(
        written(&app).await,
        before,
        "a refused submit wrote something"
    );

    // With the platform the legacy code names one account.
    let legacy = submit(
        &app,
        "op1",
        json!({"code": "OLD1", "platform": "tiktok", "body": "legacy"}),
    )
    .await;
    assert_status(&legacy, 201);
    assert_eq!(legacy.json()["draft"]["code"], "TW-L002");
    assert_eq!(legacy.json()["draft"]["platform"], "tiktok");

    // Other Agency's TW-T001 is Zoe's, in its own workspace.
    let zoe = submit(&app, "other1", json!({"code": "TW-T001", "body": "zoe"})).await;
    assert_status(&zoe, 201);
    assert_eq!(
        app.count(&format!(
            "SELECT count(*) AS n FROM posts p JOIN personas pe ON pe.id = p.persona_id \
             WHERE p.id = '{}' AND pe.name = 'Zoe'",
            id_of(&zoe)
        ))
        .await,
        1
    );
    // The same body under Mia's TW-T001 is no duplicate of Zoe's post.
    let mia = submit(&app, "op1", json!({"code": "TW-T001", "body": "zoe"})).await;
    assert_status(&mia, 201);
    assert_ne!(id_of(&mia), id_of(&zoe));
}

#[tokio::test(flavor = "multi_thread")]
async fn submit_replays_the_first_result_for_the_same_idempotency_key() {
    let app = spawn_app().await;
    let key = app.agent_key("op1");
    let body = json!({"code": "TW-T001", "body": "once", "note": "n"});
    let first = send_idem(&app, "POST", &key, "/drafts", "submit-once", &body).await;
    assert_status(&first, 201);
    assert_eq!(first.header("idempotent-replayed"), None);
    let again = send_idem(&app, "POST", &key, "/drafts", "submit-once", &body).await;
    assert_status(&again, 201);
    assert_eq!(again.header("idempotent-replayed"), Some("true"));
    assert_eq!(again.json(), first.json());
    assert_eq!(again.json()["draft"]["duplicate"], false);
    assert_eq!(rows(&app, "posts").await, 1);
    assert_eq!(events(&app, &id_of(&first)).await.len(), 2);

    let other = json!({"code": "TW-T001", "body": "twice"});
    let mismatch = send_idem(&app, "POST", &key, "/drafts", "submit-once", &other).await;
    assert_error(&mismatch, 422, "idempotency_mismatch");
    assert_eq!(rows(&app, "posts").await, 1);

    // Without the key the same body is the duplicate rule's business: 200, the original.
    let plain = post(&app, &key, "/drafts", body).await;
    assert_status(&plain, 200);
    assert_eq!(plain.json()["draft"]["id"], first.json()["draft"]["id"]);
    // Keys are the caller's: another agent's key with the same Idempotency-Key is a new call.
    let op2 = send_idem(
        &app,
        "POST",
        &app.agent_key("op2"),
        "/drafts",
        "submit-once",
        &json!({"code": "TW-T002", "body": "once"}),
    )
    .await;
    assert_status(&op2, 201);
    assert_eq!(op2.header("idempotent-replayed"), None);
    assert_eq!(rows(&app, "posts").await, 2);
}

#[tokio::test(flavor = "multi_thread")]
async fn inline_images_become_library_items_four_at_most() {
    let app = spawn_app().await;
    // Four images, one with a data: prefix and a caption of 200 characters.
    let caption = "圖".repeat(200);
    let images = json!([
        {"data": format!("data:image/png;base64,{}", b64(&png(1))), "caption": caption},
        inline(2),
        inline(3),
        inline(4),
    ]);
    let res = submit(
        &app,
        "op1",
        json!({"code": "TW-T001", "body": "four", "images": images}),
    )
    .await;
    assert_status(&res, 201);
    let v = res.json();
    assert_eq!(v["draft"]["images"], 4, "{v}");
    assert_eq!(v["draft"]["media"], 4, "{v}");
    let id = id_of(&res);
    let on_post = post_media(&app, &id).await;
    assert_eq!(on_post.len(), 4);
    // In the library, in the order given, with their types, sizes, caption and project.
    let library = texts(
        &app,
        &format!(
            "SELECT m.mime_type || '|' || m.width || '|' || m.source || '|' || COALESCE(m.caption, '') \
             || '|' || pr.name || '|' || m.bytes AS v \
             FROM post_media pm JOIN media m ON m.id = pm.media_id JOIN projects pr ON pr.id = m.project_id \
             WHERE pm.post_id = '{id}' ORDER BY pm.position"
        ),
    )
    .await;
    let n = png(0).len();
    assert_eq!(
        library,
        [
            format!("image/png|2|inline|{caption}|beauty|{n}"),
            format!("image/png|3|inline||beauty|{n}"),
            format!("image/png|4|inline||beauty|{n}"),
            format!("image/png|5|inline||beauty|{n}"),
        ]
    );
    assert_eq!(rows(&app, "media").await, 4);

    // The same file inline again is the same library item.
    let again = submit(
        &app,
        "op1",
        json!({"code": "TW-I001", "body": "again", "images": [inline(2)]}),
    )
    .await;
    assert_status(&again, 201);
    assert_eq!(post_media(&app, &id_of(&again)).await, [on_post[1].clone()]);
    assert_eq!(rows(&app, "media").await, 4);

    // JPEG and WebP are images too.
    let jpeg = [
        0xFF, 0xD8, 0xFF, 0xE0, 0x00, 0x10, b'J', b'F', b'I', b'F', 0, 1, 1, 0, 0, 1, 0, 1, 0, 0,
    ];
    let mut webp = b"RIFF\x16\0\0\0WEBPVP8X\x0a\0\0\0".to_vec();
    webp.extend_from_slice(&[0, 0, 0, 0, 3, 0, 0, 4, 0, 0]);
    let kinds = submit(
        &app,
        "op1",
        json!({"code": "TW-T001", "body": "kinds", "images": [{"data": b64(&jpeg)}, {"data": b64(&webp)}]}),
    )
    .await;
    assert_status(&kinds, 201);
    assert_eq!(
        texts(
            &app,
            &format!(
                "SELECT m.mime_type AS v FROM post_media pm JOIN media m ON m.id = pm.media_id \
                 WHERE pm.post_id = '{}' ORDER BY pm.position",
                id_of(&kinds)
            )
        )
        .await,
        ["image/jpeg", "image/webp"]
    );

    // Well-formed base64 of another file (a GIF, text, a video: no inline image): refused by
    // the field's rule, 422, and nothing written.
    let before = written(&app).await;
    let gif = b64(b"GIF89a\x01\x00\x01\x00\x00\x00\x00;");
    for (images, field) in [
        (json!([inline(10), {"data": gif}]), "images[1].data"),
        (
            json!([inline(10), {"data": b64(b"plain text, valid base64")}]),
            "images[1].data",
        ),
        (json!([{"data": b64(MP4)}]), "images[0].data"),
    ] {
        let case: String = images.to_string().chars().take(80).collect();
        let res = submit(
            &app,
            "op1",
            json!({"code": "TW-I001", "body": "bad images", "images": images}),
        )
        .await;
        assert_error_in(&case, &res, 422, "rejected", Some(field));
    }
    // Five, garbage, an empty item, a long caption: 400 and nothing written.
    for (images, field) in [
        (
            json!([inline(10), inline(11), inline(12), inline(13), inline(14)]),
            "images",
        ),
        (json!([{"data": "not base64 at all!"}]), "images[0].data"),
        (json!([{"data": ""}]), "images[0].data"),
        (json!([{"caption": "no data"}]), "images[0].data"),
        (
            json!([{"data": b64(&png(10)), "caption": "c".repeat(201)}]),
            "images[0].caption",
        ),
    ] {
        let case: String = images.to_string().chars().take(80).collect();
        let res = submit(
            &app,
            "op1",
            json!({"code": "TW-I001", "body": "bad images", "images": images}),
        )
        .await;
        assert_invalid_in(&case, &res, field);
    }
    assert_eq!(
        written(&app).await,
        before,
        "a refused submit wrote something"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn inline_images_total_three_mebibytes_at_most() {
    let app = spawn_app().await;
    // Exactly 3 MiB decoded, in one image.
    let exactly = submit(
        &app,
        "op1",
        json!({"code": "TW-T001", "body": "exactly", "images": [{"data": b64(&png_of(1, MAX_INLINE))}]}),
    )
    .await;
    assert_status(&exactly, 201);
    assert_eq!(exactly.json()["draft"]["images"], 1);
    assert_eq!(
        app.count(&format!(
            "SELECT count(*) AS n FROM media WHERE bytes = {MAX_INLINE}"
        ))
        .await,
        1
    );
    // Exactly 3 MiB over four images.
    let quarter = MAX_INLINE / 4;
    let four: Vec<Value> = (2..6)
        .map(|s| json!({"data": b64(&png_of(s, quarter))}))
        .collect();
    let split = submit(
        &app,
        "op1",
        json!({"code": "TW-I001", "body": "split", "images": four}),
    )
    .await;
    assert_status(&split, 201);
    assert_eq!(split.json()["draft"]["images"], 4);

    let before = written(&app).await;
    // One byte more: 413 naming images, alone or as the sum of several.
    let one_more = [
        json!([{"data": b64(&png_of(10, MAX_INLINE + 1))}]),
        json!([{"data": format!("data:image/png;base64,{}", b64(&png_of(11, MAX_INLINE + 1)))}]),
        json!([{"data": b64(&png_of(12, quarter))}, {"data": b64(&png_of(13, quarter))},
               {"data": b64(&png_of(14, quarter))}, {"data": b64(&png_of(15, quarter + 1))}]),
    ];
    for (i, images) in one_more.into_iter().enumerate() {
        let res = submit(
            &app,
            "op1",
            json!({"code": "TW-I001", "body": "too big", "images": images}),
        )
        .await;
        assert_error_in(
            &format!("case {i}"),
            &res,
            413,
            "payload_too_large",
            Some("images"),
        );
    }
    assert_eq!(
        written(&app).await,
        before,
        "a refused submit wrote something"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn media_go_on_in_order_inline_then_uploads_then_library_items() {
    let app = spawn_app().await;
    let items = uploads(&app, 0..4).await;
    let res = submit(
        &app,
        "op1",
        json!({"code": "TW-I001", "body": "ordered", "images": [inline(100), inline(101)],
               "upload_ids": [items[1].0, items[0].0], "media_ids": [items[3].1, items[2].1]}),
    )
    .await;
    assert_status(&res, 201);
    assert_eq!(res.json()["draft"]["images"], 6);
    let id = id_of(&res);
    let on_post = post_media(&app, &id).await;
    assert_eq!(on_post.len(), 6);
    assert_eq!(
        on_post[2..],
        [
            items[1].1.clone(),
            items[0].1.clone(),
            items[3].1.clone(),
            items[2].1.clone()
        ]
    );
    let inline_widths = texts(
        &app,
        &format!(
            "SELECT m.width::text AS v FROM post_media pm JOIN media m ON m.id = pm.media_id \
             WHERE pm.post_id = '{id}' AND m.source = 'inline' ORDER BY pm.position"
        ),
    )
    .await;
    assert_eq!(inline_widths, ["101", "102"]);

    // An item named twice (as an upload and as a library item) goes on once.
    let twice = submit(
        &app,
        "op1",
        json!({"code": "TW-T001", "body": "twice", "upload_ids": [items[0].0],
               "media_ids": [items[0].1, items[1].1]}),
    )
    .await;
    assert_status(&twice, 201);
    assert_eq!(
        post_media(&app, &id_of(&twice)).await,
        [items[0].1.clone(), items[1].1.clone()]
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_post_carries_ten_media_on_instagram_four_elsewhere_and_no_video_on_reddit() {
    let app = spawn_app().await;
    add_reddit(&app).await;
    let items = uploads(&app, 0..11).await;
    let (_, video) = uploaded_video(&app).await;

    // Instagram: 10 pass (4 inline and 6 uploads), 11 do not.
    let ten = submit(
        &app,
        "op1",
        json!({"code": "TW-I001", "body": "ten", "images": [inline(200), inline(201), inline(202), inline(203)],
               "upload_ids": upload_ids(&items[..6])}),
    )
    .await;
    assert_status(&ten, 201);
    assert_eq!(ten.json()["draft"]["media"], 10);
    let all_ten = submit(
        &app,
        "op1",
        json!({"code": "TW-I001", "body": "ten uploads", "upload_ids": upload_ids(&items[..10])}),
    )
    .await;
    assert_status(&all_ten, 201);
    // Threads: 4 pass, images and videos together.
    let four = submit(
        &app,
        "op1",
        json!({"code": "TW-T001", "body": "four", "upload_ids": upload_ids(&items[..3]),
               "media_ids": [video]}),
    )
    .await;
    assert_status(&four, 201);
    assert_eq!(four.json()["draft"]["images"], 3);
    assert_eq!(four.json()["draft"]["media"], 4);
    // Reddit: images pass.
    let reddit = submit(
        &app,
        "op1",
        json!({"code": "TW-R001", "body": "reddit", "media_ids": media_ids(&items[..4])}),
    )
    .await;
    assert_status(&reddit, 201);
    assert_eq!(reddit.json()["draft"]["platform"], "reddit");

    let before = written(&app).await;
    for (case, body) in [
        (
            "11 on instagram",
            json!({"code": "TW-I001", "body": "eleven", "images": [inline(210)],
                   "upload_ids": upload_ids(&items[..10])}),
        ),
        (
            "5 on threads",
            json!({"code": "TW-T001", "body": "five", "upload_ids": upload_ids(&items[..4]),
                   "media_ids": [video]}),
        ),
        (
            "5 on threads, inline first",
            json!({"code": "TW-T001", "body": "five", "images": [inline(220)],
                   "upload_ids": upload_ids(&items[..4])}),
        ),
        (
            "5 on tiktok",
            json!({"code": "OLD1", "platform": "tiktok", "body": "five", "media_ids": media_ids(&items[..5])}),
        ),
        (
            "a video on reddit",
            json!({"code": "TW-R001", "body": "video", "media_ids": [video]}),
        ),
    ] {
        let res = submit(&app, "op1", body).await;
        assert_error_in(case, &res, 422, "rejected", None);
    }
    assert_eq!(
        written(&app).await,
        before,
        "a refused submit wrote something"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn upload_ids_and_media_ids_are_one_to_ten_each() {
    let app = spawn_app().await;
    let items = uploads(&app, 0..11).await;
    let ten = submit(
        &app,
        "op1",
        json!({"code": "TW-I001", "body": "ten", "upload_ids": upload_ids(&items[..10])}),
    )
    .await;
    assert_status(&ten, 201);
    let ten = submit(
        &app,
        "op1",
        json!({"code": "TW-I001", "body": "ten more", "media_ids": media_ids(&items[1..])}),
    )
    .await;
    assert_status(&ten, 201);
    assert_eq!(ten.json()["draft"]["media"], 10);

    let before = written(&app).await;
    for (body, field) in [
        (json!({"upload_ids": []}), "upload_ids"),
        (json!({"upload_ids": upload_ids(&items)}), "upload_ids"),
        (json!({"media_ids": []}), "media_ids"),
        (json!({"media_ids": media_ids(&items)}), "media_ids"),
        (json!({"upload_ids": ["not-a-uuid"]}), "upload_ids[0]"),
        (json!({"media_ids": [items[0].1, 7]}), "media_ids[1]"),
    ] {
        let mut body = body;
        body["code"] = json!("TW-I001");
        body["body"] = json!("counted");
        let case: String = body.to_string().chars().take(80).collect();
        let res = submit(&app, "op1", body).await;
        assert_invalid_in(&case, &res, field);
    }
    assert_eq!(
        written(&app).await,
        before,
        "a refused submit wrote something"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn an_unusable_upload_or_library_item_refuses_the_whole_submit() {
    let app = spawn_app().await;
    let items = uploads(&app, 0..3).await;
    let pending = pending_upload(&app).await;
    // Another workspace's upload and item (Japan), another project's (Leo's food).
    let (jp_upload, jp_media) = uploaded(&app, "jp1", "JP-T001", 30).await;
    let (food_upload, food_media) = uploaded(&app, "op2", "TW-T002", 31).await;
    // An archived item.
    let (archived_upload, archived_media) = uploaded(&app, "op1", "TW-T001", 32).await;
    app.sql(&format!(
        "UPDATE media SET archived_at = now() WHERE id = '{archived_media}'"
    ))
    .await;
    let unknown = Uuid::new_v4().to_string();

    let before = written(&app).await;
    let ok = items[0].0.clone();
    let ok_media = items[1].1.clone();
    for (case, upload_ids, media_ids, field, word) in [
        (
            "unknown upload",
            vec![unknown.clone()],
            vec![],
            "upload_ids[0]",
            "library",
        ),
        (
            "unknown media",
            vec![],
            vec![ok_media.clone(), unknown.clone()],
            "media_ids[1]",
            "library",
        ),
        (
            "an upload id as a media id",
            vec![],
            vec![ok.clone()],
            "media_ids[0]",
            "library",
        ),
        (
            "upload without its file",
            vec![ok.clone(), pending.clone()],
            vec![],
            "upload_ids[1]",
            "no file",
        ),
        (
            "another workspace's upload",
            vec![ok.clone(), jp_upload.clone()],
            vec![],
            "upload_ids[1]",
            "library",
        ),
        (
            "another workspace's item",
            vec![ok.clone()],
            vec![jp_media.clone()],
            "media_ids[0]",
            "library",
        ),
        (
            "archived upload",
            vec![archived_upload.clone()],
            vec![],
            "upload_ids[0]",
            "archived",
        ),
        (
            "archived item",
            vec![ok.clone()],
            vec![ok_media.clone(), archived_media.clone()],
            "media_ids[1]",
            "archived",
        ),
        (
            "another project's upload",
            vec![food_upload.clone()],
            vec![],
            "upload_ids[0]",
            "another project",
        ),
        (
            "another project's item",
            vec![],
            vec![ok_media.clone(), food_media.clone()],
            "media_ids[1]",
            "another project",
        ),
    ] {
        let mut body = json!({"code": "TW-T001", "body": case, "images": [inline(300)]});
        if !upload_ids.is_empty() {
            body["upload_ids"] = json!(upload_ids);
        }
        if !media_ids.is_empty() {
            body["media_ids"] = json!(media_ids);
        }
        let res = submit(&app, "op1", body).await;
        assert_rejected_in(case, &res, field);
        let message = res.json()["message"].as_str().unwrap().to_owned();
        assert!(message.contains(word), "{case}: {message}");
    }
    assert_eq!(
        written(&app).await,
        before,
        "a refused submit wrote something (a post, its media or the inline image)"
    );

    // The same ids are fine for the accounts they belong to.
    let leo = submit(
        &app,
        "op2",
        json!({"code": "TW-T002", "body": "food", "upload_ids": [food_upload], "media_ids": [food_media]}),
    )
    .await;
    assert_status(&leo, 201);
    let jp = submit(
        &app,
        "jp1",
        json!({"code": "JP-T001", "body": "jp", "upload_ids": [jp_upload]}),
    )
    .await;
    assert_status(&jp, 201);
    // A shared item with no project goes on any project's post.
    app.sql(&format!(
        "UPDATE media SET project_id = NULL WHERE id = '{}'",
        items[2].1
    ))
    .await;
    let shared = submit(
        &app,
        "op2",
        json!({"code": "TW-T002", "body": "shared", "media_ids": [items[2].1]}),
    )
    .await;
    assert_status(&shared, 201);
}

// ---------------------------------------------------------------------------------------------
// PUT /drafts/{id}

/// PUT /drafts/{id} as an agent of the tenant.
async fn update(app: &TestApp, agent: &str, post: &str, body: Value) -> Response {
    put(app, &app.agent_key(agent), &format!("/drafts/{post}"), body).await
}

#[tokio::test(flavor = "multi_thread")]
async fn update_rewrites_a_draft_and_sends_it_to_review() {
    let app = spawn_app().await;
    let id = submit_ok(
        &app,
        "op1",
        json!({"code": "TW-T001", "body": "first try", "topic": "t1", "submit": false,
               "planned_at": "2026-11-25 10:00", "characters": [{"code": "momo"}]}),
    )
    .await;

    // submit false keeps it a draft.
    let kept = update(
        &app,
        "op1",
        &id,
        json!({"body": "second try", "submit": false}),
    )
    .await;
    assert_status(&kept, 200);
    let v = kept.json();
    assert_eq!(v["draft"]["status"], "draft", "{v}");
    assert_eq!(post_field(&app, &id, "body").await, "second try");
    // An absent topic keeps the topic; absent characters keep the characters.
    assert_eq!(post_field(&app, &id, "topic").await, "t1");
    assert_eq!(v["draft"]["characters"][0]["code"], "momo", "{v}");

    // Default submit: internal review. Not a rewrite answer: nothing was sent back.
    let res = update(
        &app,
        "op1",
        &id,
        json!({"body": "third try", "topic": "t3", "note": "ready"}),
    )
    .await;
    assert_status(&res, 200);
    let v = res.json();
    assert_eq!(
        v["draft"],
        json!({"id": id, "status": "internal_review", "code": "TW-T001", "platform": "threads",
               "planned_at": "2026-11-25T02:00:00Z", "images": 0, "media": 0, "duplicate": false,
               "characters": [{"code": "momo", "name": "Momo", "pov": false}],
               "rewrite_answered": false, "stocked": false, "noted": true})
    );
    for (column, want) in [
        ("status", "internal_review"),
        ("body", "third try"),
        ("topic", "t3"),
        ("rewrite_answered", "false"),
    ] {
        assert_eq!(post_field(&app, &id, column).await, want, "{column}");
    }
    assert_eq!(
        events(&app, &id).await,
        [
            "saved_draft||agent|op1",
            "rewritten||agent|op1",
            "saved_draft||agent|op1",
            "rewritten||agent|op1",
            "submitted||agent|op1",
            "added note|ready|agent|op1",
        ]
    );
    assert_eq!(rows(&app, "posts").await, 1);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_changed_body_answers_a_send_back_or_a_rewrite_request() {
    let app = spawn_app().await;
    for (i, status) in ["sent_back", "rewrite_requested"].into_iter().enumerate() {
        let id = submit_ok(
            &app,
            "op1",
            json!({"code": "TW-T001", "body": format!("too long {i}")}),
        )
        .await;
        return_post(&app, &id, status, "too long", 5).await;
        let events_before = rows(&app, "review_events").await;

        // The very body that was sent back: 422 naming body, nothing changes.
        let same = update(&app, "op1", &id, json!({"body": format!("too long {i}")})).await;
        assert_rejected_in(status, &same, "body");
        assert_eq!(post_field(&app, &id, "status").await, status);
        assert_eq!(post_field(&app, &id, "awaiting_rewrite").await, "true");
        assert_eq!(rows(&app, "review_events").await, events_before);

        // A changed body: back to internal review, the rewrite answered.
        let res = update(&app, "op1", &id, json!({"body": format!("short {i}")})).await;
        assert_status(&res, 200);
        let v = res.json();
        assert_eq!(v["draft"]["status"], "internal_review", "{status}: {v}");
        assert_eq!(v["draft"]["rewrite_answered"], true, "{status}: {v}");
        assert_eq!(v["draft"]["id"], id.as_str());
        for (column, want) in [
            ("status", "internal_review"),
            ("awaiting_rewrite", "false"),
            ("rewrite_answered", "true"),
            ("body", &format!("short {i}")),
        ] {
            assert_eq!(
                post_field(&app, &id, column).await,
                want,
                "{status} {column}"
            );
        }
        let record = events(&app, &id).await;
        assert_eq!(
            record[record.len() - 2..],
            ["rewrite_answered||agent|op1", "submitted||agent|op1"],
            "{status}"
        );
    }

    // submit false answers the rewrite and keeps a draft; once answered, the old body is an
    // ordinary edit.
    let id = submit_ok(&app, "op1", json!({"code": "TW-I001", "body": "v1"})).await;
    return_post(&app, &id, "sent_back", "fix it", 5).await;
    let res = update(&app, "op1", &id, json!({"body": "v2", "submit": false})).await;
    assert_status(&res, 200);
    assert_eq!(res.json()["draft"]["status"], "draft");
    assert_eq!(res.json()["draft"]["rewrite_answered"], true);
    assert_eq!(post_field(&app, &id, "awaiting_rewrite").await, "false");
    let back = update(&app, "op1", &id, json!({"body": "v1"})).await;
    assert_status(&back, 200);
    assert_eq!(back.json()["draft"]["status"], "internal_review");
    assert_eq!(back.json()["draft"]["rewrite_answered"], true);
}

#[tokio::test(flavor = "multi_thread")]
async fn only_posts_still_in_draft_can_be_rewritten() {
    let app = spawn_app().await;
    for status in [
        "internal_review",
        "client_review",
        "approved",
        "stocked",
        "scheduled",
        "publishing",
        "published",
        "failed",
        "cancelled",
        "deleted",
    ] {
        let id = submit_ok(
            &app,
            "op1",
            json!({"code": "TW-T001", "body": format!("in {status}")}),
        )
        .await;
        set_status(&app, &id, status).await;
        let events_before = rows(&app, "review_events").await;
        let res = update(&app, "op1", &id, json!({"body": "changed"})).await;
        assert_error_in(status, &res, 422, "rejected", None);
        assert!(
            res.json()["message"].as_str().unwrap().contains(status),
            "{status}: {}",
            res.text()
        );
        assert_eq!(post_field(&app, &id, "body").await, format!("in {status}"));
        assert_eq!(post_field(&app, &id, "status").await, status);
        assert_eq!(rows(&app, "review_events").await, events_before);
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_rewrite_for_an_account_that_is_not_active_is_stocked() {
    let app = spawn_app().await;
    let id = submit_ok(
        &app,
        "op1",
        json!({"code": "TW-K001", "body": "draft", "submit": false}),
    )
    .await;
    let res = update(&app, "op1", &id, json!({"body": "done"})).await;
    assert_status(&res, 200);
    let v = res.json();
    assert_eq!(v["draft"]["status"], "stocked", "{v}");
    assert_eq!(v["draft"]["stocked"], true, "{v}");
    assert!(
        v["message"]
            .as_str()
            .is_some_and(|m| m.contains("not active")),
        "{v}"
    );
    assert_eq!(post_field(&app, &id, "status").await, "stocked");
    assert_ne!(post_field(&app, &id, "stock_reason").await, "<null>");
    assert_ne!(post_field(&app, &id, "stocked_at").await, "<null>");
}

#[tokio::test(flavor = "multi_thread")]
async fn update_characters_replace_the_set_and_an_empty_array_clears_it() {
    let app = spawn_app().await;
    let id = submit_ok(
        &app,
        "op1",
        json!({"code": "TW-T001", "body": "b", "submit": false,
               "characters": [{"code": "momo"}, {"code": "lulu"}]}),
    )
    .await;
    let six = json!([{"code": "fifi", "pov": true}, {"code": "kiki"}, {"code": "lulu"},
                     {"code": "bebe"}, {"code": "coco"}, {"code": "dodo"}]);
    let res = update(
        &app,
        "op1",
        &id,
        json!({"body": "b", "submit": false, "characters": six}),
    )
    .await;
    assert_status(&res, 200);
    let codes: Vec<String> = res.json()["draft"]["characters"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["code"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(codes, ["fifi", "kiki", "lulu", "bebe", "coco", "dodo"]);
    assert_eq!(res.json()["draft"]["characters"][0]["pov"], true);
    assert_eq!(
        events(&app, &id).await.last().unwrap(),
        "characters_set||agent|op1"
    );

    let before = written(&app).await;
    let stored = post_field(&app, &id, "characters").await;
    let seven = json!([{"code": "momo"}, {"code": "lulu"}, {"code": "kiki"}, {"code": "bebe"},
                       {"code": "coco"}, {"code": "dodo"}, {"code": "fifi"}]);
    for (characters, status, field) in [
        (seven, 400, "characters"),
        (
            json!([{"code": "momo", "pov": true}, {"code": "lulu", "pov": true}]),
            400,
            "characters[1].code",
        ),
        (
            json!([{"code": "lulu"}, {"code": "lulu"}]),
            422,
            "characters[1].code",
        ),
        (json!([{"code": "chef"}]), 422, "characters[0].code"),
    ] {
        let res = update(
            &app,
            "op1",
            &id,
            json!({"body": "changed", "characters": characters}),
        )
        .await;
        let code = if status == 400 {
            "invalid_request"
        } else {
            "rejected"
        };
        assert_error_in(&characters.to_string(), &res, status, code, Some(field));
    }
    assert_eq!(written(&app).await, before);
    assert_eq!(post_field(&app, &id, "characters").await, stored);
    assert_eq!(post_field(&app, &id, "body").await, "b");

    // Absent: kept. Empty: cleared.
    let kept = update(&app, "op1", &id, json!({"body": "b", "submit": false})).await;
    assert_eq!(
        kept.json()["draft"]["characters"].as_array().unwrap().len(),
        6
    );
    let cleared = update(
        &app,
        "op1",
        &id,
        json!({"body": "b", "submit": false, "characters": []}),
    )
    .await;
    assert_status(&cleared, 200);
    assert_eq!(cleared.json()["draft"]["characters"], json!([]));
    assert_eq!(post_field(&app, &id, "characters").await, "[]");
}

#[tokio::test(flavor = "multi_thread")]
async fn update_appends_uploads_and_library_items_within_the_caps() {
    let app = spawn_app().await;
    let items = uploads(&app, 0..5).await;
    let id = submit_ok(
        &app,
        "op1",
        json!({"code": "TW-T001", "body": "b", "submit": false, "upload_ids": [items[0].0]}),
    )
    .await;
    let res = update(
        &app,
        "op1",
        &id,
        json!({"body": "b", "submit": false, "upload_ids": [items[1].0, items[0].0],
               "media_ids": [items[2].1]}),
    )
    .await;
    assert_status(&res, 200);
    assert_eq!(res.json()["draft"]["images"], 3);
    assert_eq!(post_media(&app, &id).await, media_ids(&items[..3]));

    // A fifth item on threads, an archived one, an unknown one: nothing written.
    let pending = pending_upload(&app).await;
    let before = written(&app).await;
    let fifth = update(
        &app,
        "op1",
        &id,
        json!({"body": "c", "media_ids": [items[3].1, items[4].1]}),
    )
    .await;
    assert_error_in("fifth item", &fifth, 422, "rejected", None);
    let unknown = update(
        &app,
        "op1",
        &id,
        json!({"body": "c", "media_ids": [items[3].1, Uuid::new_v4()]}),
    )
    .await;
    assert_rejected_in("unknown", &unknown, "media_ids[1]");
    let unfinished = update(
        &app,
        "op1",
        &id,
        json!({"body": "c", "upload_ids": [pending]}),
    )
    .await;
    assert_rejected_in("unfinished", &unfinished, "upload_ids[0]");
    assert_eq!(written(&app).await, before);
    assert_eq!(post_field(&app, &id, "body").await, "b");
    assert_eq!(post_field(&app, &id, "status").await, "draft");
    assert_eq!(post_media(&app, &id).await, media_ids(&items[..3]));
}

#[tokio::test(flavor = "multi_thread")]
async fn update_checks_each_field_at_the_limit_and_one_past() {
    let app = spawn_app().await;
    let items = uploads(&app, 0..11).await;
    let id = submit_ok(
        &app,
        "op1",
        json!({"code": "TW-I001", "body": "b", "submit": false}),
    )
    .await;
    let body_max = "貓".repeat(10_000);
    let res = update(
        &app,
        "op1",
        &id,
        json!({"body": body_max, "topic": "話".repeat(200), "note": "註".repeat(1000),
               "submit": false, "upload_ids": upload_ids(&items[..10])}),
    )
    .await;
    assert_status(&res, 200);
    assert_eq!(res.json()["draft"]["media"], 10);
    assert_eq!(post_field(&app, &id, "body").await, body_max);

    let before = written(&app).await;
    let events_before = events(&app, &id).await;
    for (body, field) in [
        (json!({"body": "貓".repeat(10_001)}), "body"),
        (json!({"body": ""}), "body"),
        (json!({}), "body"),
        (json!({"body": "x", "topic": "話".repeat(201)}), "topic"),
        (json!({"body": "x", "note": "註".repeat(1001)}), "note"),
        (json!({"body": "x", "note": ""}), "note"),
        (json!({"body": "x", "upload_ids": []}), "upload_ids"),
        (
            json!({"body": "x", "upload_ids": upload_ids(&items)}),
            "upload_ids",
        ),
        (json!({"body": "x", "media_ids": []}), "media_ids"),
        (
            json!({"body": "x", "media_ids": media_ids(&items)}),
            "media_ids",
        ),
        (json!({"body": "x", "submit": 1}), "submit"),
    ] {
        let case: String = body.to_string().chars().take(80).collect();
        let res = update(&app, "op1", &id, body).await;
        assert_invalid_in(&case, &res, field);
    }
    let bad_id = update(&app, "op1", "not-a-uuid", json!({"body": "x"})).await;
    assert_invalid_in("id not a uuid", &bad_id, "id");
    assert_eq!(written(&app).await, before);
    assert_eq!(events(&app, &id).await, events_before);
    assert_eq!(post_field(&app, &id, "body").await, body_max);
}

#[tokio::test(flavor = "multi_thread")]
async fn update_is_for_the_author_agent_within_its_workspace() {
    let app = spawn_app().await;
    let id = submit_ok(
        &app,
        "op1",
        json!({"code": "TW-T001", "body": "mine", "submit": false}),
    )
    .await;
    let before = written(&app).await;
    for (agent, post, status, code) in [
        ("op2", id.clone(), 403, "forbidden"),
        ("jp1", id.clone(), 404, "not_found"),
        ("other1", id.clone(), 404, "not_found"),
        ("bot", id.clone(), 403, "forbidden"),
        ("op1", Uuid::new_v4().to_string(), 404, "not_found"),
    ] {
        let res = update(&app, agent, &post, json!({"body": "taken over"})).await;
        assert_error_in(&format!("{agent} {post}"), &res, status, code, None);
    }
    assert_eq!(written(&app).await, before);
    assert_eq!(post_field(&app, &id, "body").await, "mine");
    assert_eq!(post_field(&app, &id, "status").await, "draft");
    // Another organization's post is not found for op1 either.
    let zoe = submit_ok(
        &app,
        "other1",
        json!({"code": "TW-T001", "body": "zoe", "submit": false}),
    )
    .await;
    let res = update(&app, "op1", &zoe, json!({"body": "x"})).await;
    assert_error(&res, 404, "not_found");
    assert_eq!(post_field(&app, &zoe, "body").await, "zoe");
}

#[tokio::test(flavor = "multi_thread")]
async fn update_replays_the_first_result_for_the_same_idempotency_key() {
    let app = spawn_app().await;
    let key = app.agent_key("op1");
    let id = submit_ok(&app, "op1", json!({"code": "TW-T001", "body": "v1"})).await;
    return_post(&app, &id, "sent_back", "again", 5).await;
    let path = format!("/drafts/{id}");
    let body = json!({"body": "v2", "note": "rewritten"});
    let first = send_idem(&app, "PUT", &key, &path, "rewrite-1", &body).await;
    assert_status(&first, 200);
    assert_eq!(first.json()["draft"]["rewrite_answered"], true);
    let events_after = rows(&app, "review_events").await;

    // The post is in review now, so a second real PUT would be 422: the replay is the first
    // answer, and nothing is written.
    let again = send_idem(&app, "PUT", &key, &path, "rewrite-1", &body).await;
    assert_status(&again, 200);
    assert_eq!(again.header("idempotent-replayed"), Some("true"));
    assert_eq!(again.json(), first.json());
    assert_eq!(rows(&app, "review_events").await, events_after);

    let mismatch = send_idem(
        &app,
        "PUT",
        &key,
        &path,
        "rewrite-1",
        &json!({"body": "v3"}),
    )
    .await;
    assert_error(&mismatch, 422, "idempotency_mismatch");
    assert_eq!(post_field(&app, &id, "body").await, "v2");
    assert_eq!(rows(&app, "review_events").await, events_after);
    let fresh = send_idem(&app, "PUT", &key, &path, "rewrite-2", &body).await;
    assert_error(&fresh, 422, "rejected");
}

// ---------------------------------------------------------------------------------------------
// GET /drafts

#[tokio::test(flavor = "multi_thread")]
async fn list_redo_shows_returned_drafts_oldest_first_with_their_comments() {
    let app = spawn_app().await;
    let key = app.agent_key("op1");
    let items = uploads(&app, 0..2).await;
    let back = submit_ok(
        &app,
        "op1",
        json!({"code": "TW-T001", "body": "sent back body", "topic": "sb",
               "planned_at": "2026-11-25 10:00", "upload_ids": upload_ids(&items),
               "characters": [{"code": "momo", "pov": true}]}),
    )
    .await;
    let rewrite = submit_ok(
        &app,
        "op1",
        json!({"code": "TW-I001", "body": "rewrite body"}),
    )
    .await;
    // Drafts, posts in review and approved posts are not in the list.
    for (body, status) in [("d", "draft"), ("r", "internal_review"), ("a", "approved")] {
        let id = submit_ok(&app, "op1", json!({"code": "TW-T001", "body": body})).await;
        set_status(&app, &id, status).await;
    }
    // The rewrite request is older than the send-back; the send-back post has an earlier
    // comment from an earlier round, a note by the agent (no reviewer comment) and a member
    // event without a reason.
    app.sql(&format!(
        "INSERT INTO review_events (post_id, action, reason, actor_kind, actor_name, created_at) VALUES \
         ('{back}', 'comment', 'nice photo', 'member', 'Cli', now() - interval '30 minutes'), \
         ('{back}', 'viewed', NULL, 'member', 'Ann', now() - interval '25 minutes')"
    ))
    .await;
    let note = post(
        &app,
        &key,
        &format!("/drafts/{back}/notes"),
        json!({"note": "agent note"}),
    )
    .await;
    assert_status(&note, 200);
    return_post(&app, &rewrite, "rewrite_requested", "more emoji", 20).await;
    return_post(&app, &back, "sent_back", "too long", 10).await;

    let res = get(&app, &key, "/drafts").await;
    assert_status(&res, 200);
    let v = res.json();
    assert_eq!(v["next_cursor"], Value::Null, "{v}");
    let list = v["drafts"].as_array().unwrap();
    assert_eq!(list.len(), 2, "{v}");
    assert_eq!(list[0]["id"], rewrite.as_str());
    assert_eq!(list[1]["id"], back.as_str());

    let r = &list[0];
    assert_eq!(r["status"], "rewrite_requested");
    assert_eq!(r["code"], "TW-I001");
    assert_eq!(r["platform"], "instagram");
    assert_eq!(r["body"], "rewrite body");
    assert_eq!(r["instruction"], "more emoji");
    assert_eq!(r["media"], 0);
    assert_eq!(r["characters"], json!([]));
    assert_eq!(r["comments"].as_array().unwrap().len(), 1, "{r}");
    assert_eq!(r["comments"][0]["comment"], "more emoji");
    assert_eq!(r["comments"][0]["by"], "Ann");
    assert_eq!(r["comments"][0]["action"], "rewrite_requested");

    let b = &list[1];
    assert_eq!(b["status"], "sent_back");
    assert_eq!(b["body"], "sent back body");
    assert_eq!(b["topic"], "sb");
    assert_eq!(b["planned_at"], "2026-11-25T02:00:00Z");
    assert_eq!(b["instruction"], "too long");
    assert_eq!(b["media"], 2);
    assert_eq!(
        b["characters"],
        json!([{"code": "momo", "name": "Momo", "pov": true}])
    );
    let comments: Vec<(String, String)> = b["comments"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| {
            (
                c["comment"].as_str().unwrap().to_owned(),
                c["by"].as_str().unwrap().to_owned(),
            )
        })
        .collect();
    assert_eq!(
        comments,
        [
            ("nice photo".to_owned(), "Cli".to_owned()),
            ("too long".to_owned(), "Ann".to_owned())
        ],
        "reviewer comments only, oldest first"
    );
    for c in b["comments"].as_array().unwrap() {
        assert!(c["at"].as_str().is_some_and(|t| t.ends_with('Z')), "{c}");
    }
    assert!(
        b["returned_at"].as_str().is_some_and(|t| t.ends_with('Z')),
        "{b}"
    );

    // The filter.
    let only = get(&app, &key, "/drafts?status=sent_back").await.json();
    let only: Vec<&Value> = only["drafts"].as_array().unwrap().iter().collect();
    assert_eq!(only.len(), 1);
    assert_eq!(only[0]["id"], back.as_str());
    let only = get(&app, &key, "/drafts?status=rewrite_requested")
        .await
        .json();
    assert_eq!(only["drafts"].as_array().unwrap().len(), 1);
    assert_eq!(only["drafts"][0]["id"], rewrite.as_str());
    for bad in ["draft", "internal_review", "both", ""] {
        let res = get(&app, &key, &format!("/drafts?status={bad}")).await;
        assert_invalid_in(&format!("status {bad:?}"), &res, "status");
    }

    // Answered: it leaves the list.
    let answered = update(&app, "op1", &back, json!({"body": "short"})).await;
    assert_status(&answered, 200);
    let left = get(&app, &key, "/drafts").await.json();
    assert_eq!(left["drafts"].as_array().unwrap().len(), 1);
    assert_eq!(left["drafts"][0]["id"], rewrite.as_str());
}

#[tokio::test(flavor = "multi_thread")]
async fn list_redo_pages_with_an_opaque_cursor() {
    let app = spawn_app().await;
    let key = app.agent_key("op1");
    let mut expected = Vec::new();
    for i in 0..5 {
        let id = submit_ok(
            &app,
            "op1",
            json!({"code": "TW-T001", "body": format!("page {i}")}),
        )
        .await;
        // Older first: the first written was returned longest ago.
        return_post(&app, &id, "sent_back", &format!("r{i}"), 50 - i).await;
        expected.push(id);
    }
    let mut seen = Vec::new();
    let mut cursor: Option<String> = None;
    let mut pages = Vec::new();
    loop {
        let path = match &cursor {
            Some(c) => format!("/drafts?limit=2&cursor={c}"),
            None => "/drafts?limit=2".to_owned(),
        };
        let res = get(&app, &key, &path).await;
        assert_status(&res, 200);
        let v = res.json();
        let page: Vec<String> = v["drafts"]
            .as_array()
            .unwrap()
            .iter()
            .map(|d| d["id"].as_str().unwrap().to_owned())
            .collect();
        pages.push(page.len());
        seen.extend(page);
        match v["next_cursor"].as_str() {
            Some(c) => cursor = Some(c.to_owned()),
            None => {
                assert_eq!(v["next_cursor"], Value::Null);
                break;
            }
        }
        assert!(pages.len() < 10, "paging does not end");
    }
    assert_eq!(pages, [2, 2, 1]);
    assert_eq!(seen, expected);

    // Exactly a page: no cursor. The default and the largest limit take everything.
    let five = get(&app, &key, "/drafts?limit=5").await.json();
    assert_eq!(five["drafts"].as_array().unwrap().len(), 5);
    assert_eq!(five["next_cursor"], Value::Null);
    for path in ["/drafts", "/drafts?limit=200"] {
        let res = get(&app, &key, path).await;
        assert_status(&res, 200);
        assert_eq!(res.json()["drafts"].as_array().unwrap().len(), 5, "{path}");
        assert_eq!(res.json()["next_cursor"], Value::Null, "{path}");
    }
    let one = get(&app, &key, "/drafts?limit=1").await.json();
    assert_eq!(one["drafts"].as_array().unwrap().len(), 1);
    assert!(one["next_cursor"].is_string());

    for (query, field) in [
        ("limit=0", "limit"),
        ("limit=201", "limit"),
        ("limit=-1", "limit"),
        ("limit=ten", "limit"),
        ("cursor=garbage", "cursor"),
        ("cursor=bm90IGEgY3Vyc29y", "cursor"),
        ("cursor=", "cursor"),
    ] {
        let res = get(&app, &key, &format!("/drafts?{query}")).await;
        assert_invalid_in(query, &res, field);
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn list_redo_shows_only_the_callers_own_posts() {
    let app = spawn_app().await;
    let mia = submit_ok(&app, "op1", json!({"code": "TW-T001", "body": "mia"})).await;
    let leo = submit_ok(&app, "op2", json!({"code": "TW-T002", "body": "leo"})).await;
    let zoe = submit_ok(&app, "other1", json!({"code": "TW-T001", "body": "zoe"})).await;
    let yui = submit_ok(&app, "jp1", json!({"code": "JP-T001", "body": "yui"})).await;
    for id in [&mia, &leo, &zoe, &yui] {
        return_post(&app, id, "sent_back", "no", 5).await;
    }
    for (agent, id) in [
        ("op1", &mia),
        ("op2", &leo),
        ("other1", &zoe),
        ("jp1", &yui),
    ] {
        let res = get(&app, &app.agent_key(agent), "/drafts").await;
        assert_status(&res, 200);
        let list = res.json()["drafts"].as_array().unwrap().clone();
        assert_eq!(list.len(), 1, "{agent}: {list:?}");
        assert_eq!(list[0]["id"], id.as_str(), "{agent}");
    }
    let bot = get(&app, &app.agent_key("bot"), "/drafts").await;
    assert_error(&bot, 403, "forbidden");

    // A read is never replayed: the same Idempotency-Key sees the list as it is now.
    let key = app.agent_key("op1");
    let read = || {
        app.client.send(
            Request::new("GET", &format!("{API}/drafts"))
                .bearer(&key)
                .header("Idempotency-Key", "read-1"),
        )
    };
    let first = read().await;
    assert_status(&first, 200);
    let more = submit_ok(&app, "op1", json!({"code": "TW-I001", "body": "more"})).await;
    return_post(&app, &more, "rewrite_requested", "again", 1).await;
    let second = read().await;
    assert_status(&second, 200);
    assert_eq!(second.header("idempotent-replayed"), None);
    assert_eq!(second.json()["drafts"].as_array().unwrap().len(), 2);
}

// ---------------------------------------------------------------------------------------------
// POST /drafts/{id}/images and /media

async fn attach_images(app: &TestApp, agent: &str, post: &str, body: Value) -> Response {
    self::post(
        app,
        &app.agent_key(agent),
        &format!("/drafts/{post}/images"),
        body,
    )
    .await
}

async fn attach_media(app: &TestApp, agent: &str, post: &str, body: Value) -> Response {
    self::post(
        app,
        &app.agent_key(agent),
        &format!("/drafts/{post}/media"),
        body,
    )
    .await
}

#[tokio::test(flavor = "multi_thread")]
async fn attach_images_appends_finished_uploads_after_the_existing_media() {
    let app = spawn_app().await;
    let items = uploads(&app, 0..4).await;
    let id = submit_ok(
        &app,
        "op1",
        json!({"code": "TW-T001", "body": "b", "images": [inline(40)]}),
    )
    .await;
    let first = post_media(&app, &id).await;

    let res = attach_images(
        &app,
        "op1",
        &id,
        json!({"upload_ids": [items[1].0, items[0].0], "note": "two photos"}),
    )
    .await;
    assert_status(&res, 200);
    let v = res.json();
    assert_eq!(v["draft"]["id"], id.as_str());
    assert_eq!(v["draft"]["images"], 3, "{v}");
    assert_eq!(v["draft"]["media"], 3, "{v}");
    assert_eq!(v["draft"]["status"], "internal_review");
    assert_eq!(v["draft"]["noted"], true);
    let mut want = first.clone();
    want.extend([items[1].1.clone(), items[0].1.clone()]);
    assert_eq!(post_media(&app, &id).await, want);
    let record = events(&app, &id).await;
    assert_eq!(
        record[1..],
        [
            "images_attached||agent|op1",
            "added note|two photos|agent|op1"
        ]
    );
    assert_eq!(
        value(
            &app,
            &format!(
                "SELECT detail->>'media' AS v FROM review_events WHERE post_id = '{id}' AND action = 'images_attached'"
            )
        )
        .await,
        json!([items[1].1, items[0].1]).to_string().replace(',', ", ")
    );

    // Items already on the post are skipped, new ones appended.
    let again = attach_images(
        &app,
        "op1",
        &id,
        json!({"upload_ids": [items[0].0, items[2].0]}),
    )
    .await;
    assert_status(&again, 200);
    assert_eq!(again.json()["draft"]["images"], 4);
    assert_eq!(again.json()["draft"]["noted"], false);
    want.push(items[2].1.clone());
    assert_eq!(post_media(&app, &id).await, want);

    // A sent-back draft takes media too.
    let back = submit_ok(&app, "op1", json!({"code": "TW-I001", "body": "back"})).await;
    return_post(&app, &back, "sent_back", "add photos", 1).await;
    let res = attach_images(&app, "op1", &back, json!({"upload_ids": [items[3].0]})).await;
    assert_status(&res, 200);
    assert_eq!(res.json()["draft"]["status"], "sent_back");
    assert_eq!(post_media(&app, &back).await, [items[3].1.clone()]);
}

#[tokio::test(flavor = "multi_thread")]
async fn attach_media_appends_library_items_in_order_and_skips_those_present() {
    let app = spawn_app().await;
    let items = uploads(&app, 0..4).await;
    let (_, video) = uploaded_video(&app).await;
    let id = submit_ok(
        &app,
        "op1",
        json!({"code": "TW-T001", "body": "b", "submit": false, "media_ids": [items[0].1]}),
    )
    .await;
    let res = attach_media(
        &app,
        "op1",
        &id,
        json!({"media_ids": [items[2].1, items[0].1, video, items[2].1], "note": "order"}),
    )
    .await;
    assert_status(&res, 200);
    let v = res.json();
    assert_eq!(v["draft"]["images"], 2, "{v}");
    assert_eq!(v["draft"]["media"], 3, "{v}");
    assert_eq!(v["draft"]["status"], "draft");
    assert_eq!(
        post_media(&app, &id).await,
        [items[0].1.clone(), items[2].1.clone(), video.clone()]
    );
    let record = events(&app, &id).await;
    assert_eq!(
        record[1..],
        ["media_attached||agent|op1", "added note|order|agent|op1"]
    );
    // The video counts: a fifth item on threads is refused.
    let before = written(&app).await;
    let fifth = attach_media(
        &app,
        "op1",
        &id,
        json!({"media_ids": [items[1].1, items[3].1]}),
    )
    .await;
    assert_error_in("fifth on threads", &fifth, 422, "rejected", None);
    assert_eq!(written(&app).await, before);
    let fourth = attach_media(&app, "op1", &id, json!({"media_ids": [items[1].1]})).await;
    assert_status(&fourth, 200);
    assert_eq!(fourth.json()["draft"]["media"], 4);
}

#[tokio::test(flavor = "multi_thread")]
async fn attaching_is_only_while_a_draft_or_in_internal_review() {
    let app = spawn_app().await;
    let items = uploads(&app, 0..1).await;
    for status in ["draft", "rewrite_requested", "sent_back", "internal_review"] {
        let id = submit_ok(
            &app,
            "op1",
            json!({"code": "TW-T001", "body": format!("open {status}")}),
        )
        .await;
        set_status(&app, &id, status).await;
        let res = attach_media(&app, "op1", &id, json!({"media_ids": [items[0].1]})).await;
        assert_eq!(res.status, 200, "{status}: {}", res.text());
        let res = attach_images(&app, "op1", &id, json!({"upload_ids": [items[0].0]})).await;
        assert_eq!(res.status, 200, "{status}: {}", res.text());
        assert_eq!(
            post_media(&app, &id).await,
            [items[0].1.clone()],
            "{status}"
        );
    }
    for status in [
        "client_review",
        "approved",
        "stocked",
        "scheduled",
        "published",
        "cancelled",
    ] {
        let id = submit_ok(
            &app,
            "op1",
            json!({"code": "TW-T001", "body": format!("closed {status}")}),
        )
        .await;
        set_status(&app, &id, status).await;
        let before = written(&app).await;
        let media = attach_media(&app, "op1", &id, json!({"media_ids": [items[0].1]})).await;
        assert_error_in(&format!("media {status}"), &media, 422, "rejected", None);
        assert!(
            media.json()["message"].as_str().unwrap().contains(status),
            "{}",
            media.text()
        );
        let images = attach_images(&app, "op1", &id, json!({"upload_ids": [items[0].0]})).await;
        assert_error_in(&format!("images {status}"), &images, 422, "rejected", None);
        assert_eq!(written(&app).await, before, "{status}");
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn attaching_keeps_the_caps_and_refuses_every_bad_id_all_or_nothing() {
    let app = spawn_app().await;
    add_reddit(&app).await;
    let items = uploads(&app, 0..11).await;
    let (video_upload, video) = uploaded_video(&app).await;
    let pending = pending_upload(&app).await;
    let (jp_upload, jp_media) = uploaded(&app, "jp1", "JP-T001", 60).await;
    let (food_upload, food_media) = uploaded(&app, "op2", "TW-T002", 61).await;
    let (archived_upload, archived_media) = uploaded(&app, "op1", "TW-T001", 62).await;
    app.sql(&format!(
        "UPDATE media SET archived_at = now() WHERE id = '{archived_media}'"
    ))
    .await;
    let insta = submit_ok(&app, "op1", json!({"code": "TW-I001", "body": "insta"})).await;
    let reddit = submit_ok(&app, "op1", json!({"code": "TW-R001", "body": "reddit"})).await;

    // Instagram: ten pass, the eleventh does not.
    let ten = attach_images(
        &app,
        "op1",
        &insta,
        json!({"upload_ids": upload_ids(&items[..10])}),
    )
    .await;
    assert_status(&ten, 200);
    assert_eq!(ten.json()["draft"]["images"], 10);
    let before = written(&app).await;
    let eleventh = attach_media(&app, "op1", &insta, json!({"media_ids": [items[10].1]})).await;
    assert_error_in("eleventh", &eleventh, 422, "rejected", None);
    // Reddit: no video, by either route.
    let by_upload =
        attach_images(&app, "op1", &reddit, json!({"upload_ids": [video_upload]})).await;
    assert_error_in("reddit video upload", &by_upload, 422, "rejected", None);
    let by_item = attach_media(
        &app,
        "op1",
        &reddit,
        json!({"media_ids": [items[0].1, video]}),
    )
    .await;
    assert_error_in("reddit video item", &by_item, 422, "rejected", None);
    assert_eq!(written(&app).await, before);

    let post = submit_ok(&app, "op1", json!({"code": "TW-T001", "body": "bad ids"})).await;
    let before = written(&app).await;
    let ok_upload = items[0].0.clone();
    let ok_media = items[1].1.clone();
    let unknown = Uuid::new_v4().to_string();
    for (case, route, ids, field) in [
        (
            "unknown upload",
            "images",
            vec![ok_upload.clone(), unknown.clone()],
            "upload_ids[1]",
        ),
        (
            "upload without a file",
            "images",
            vec![pending.clone()],
            "upload_ids[0]",
        ),
        (
            "another workspace's upload",
            "images",
            vec![jp_upload.clone()],
            "upload_ids[0]",
        ),
        (
            "another project's upload",
            "images",
            vec![ok_upload.clone(), food_upload.clone()],
            "upload_ids[1]",
        ),
        (
            "archived upload",
            "images",
            vec![archived_upload.clone()],
            "upload_ids[0]",
        ),
        (
            "unknown item",
            "media",
            vec![unknown.clone()],
            "media_ids[0]",
        ),
        (
            "another workspace's item",
            "media",
            vec![ok_media.clone(), jp_media.clone()],
            "media_ids[1]",
        ),
        (
            "another project's item",
            "media",
            vec![food_media.clone()],
            "media_ids[0]",
        ),
        (
            "archived item",
            "media",
            vec![ok_media.clone(), archived_media.clone()],
            "media_ids[1]",
        ),
    ] {
        let res = if route == "images" {
            attach_images(&app, "op1", &post, json!({"upload_ids": ids, "note": case})).await
        } else {
            attach_media(&app, "op1", &post, json!({"media_ids": ids, "note": case})).await
        };
        assert_rejected_in(case, &res, field);
    }
    assert_eq!(
        written(&app).await,
        before,
        "a refused attach wrote something"
    );
    assert_eq!(post_media(&app, &post).await, Vec::<String>::new());
}

#[tokio::test(flavor = "multi_thread")]
async fn attach_bodies_are_checked_at_the_limit_and_one_past() {
    let app = spawn_app().await;
    let items = uploads(&app, 0..11).await;
    let id = submit_ok(&app, "op1", json!({"code": "TW-I001", "body": "b"})).await;
    let before = written(&app).await;
    for (route, body, field) in [
        ("images", json!({}), "upload_ids"),
        ("images", json!({"upload_ids": []}), "upload_ids"),
        (
            "images",
            json!({"upload_ids": upload_ids(&items)}),
            "upload_ids",
        ),
        ("images", json!({"upload_ids": ["x"]}), "upload_ids[0]"),
        (
            "images",
            json!({"upload_ids": [items[0].0], "note": ""}),
            "note",
        ),
        (
            "images",
            json!({"upload_ids": [items[0].0], "note": "註".repeat(1001)}),
            "note",
        ),
        ("media", json!({}), "media_ids"),
        ("media", json!({"media_ids": []}), "media_ids"),
        (
            "media",
            json!({"media_ids": media_ids(&items)}),
            "media_ids",
        ),
        (
            "media",
            json!({"media_ids": [items[0].1], "note": ""}),
            "note",
        ),
        (
            "media",
            json!({"media_ids": [items[0].1], "note": "註".repeat(1001)}),
            "note",
        ),
    ] {
        let case: String = format!("{route} {body}").chars().take(80).collect();
        let res = post(
            &app,
            &app.agent_key("op1"),
            &format!("/drafts/{id}/{route}"),
            body,
        )
        .await;
        assert_invalid_in(&case, &res, field);
    }
    for route in ["images", "media"] {
        let res = post(
            &app,
            &app.agent_key("op1"),
            &format!("/drafts/not-a-uuid/{route}"),
            json!({"upload_ids": [items[0].0], "media_ids": [items[0].1]}),
        )
        .await;
        assert_invalid_in(route, &res, "id");
    }
    assert_eq!(written(&app).await, before);

    // At the limits: ten ids and a note of 1000 characters.
    let note = "註".repeat(1000);
    let res = attach_images(
        &app,
        "op1",
        &id,
        json!({"upload_ids": upload_ids(&items[..10]), "note": note}),
    )
    .await;
    assert_status(&res, 200);
    let other = submit_ok(&app, "op1", json!({"code": "TW-I001", "body": "other"})).await;
    let res = attach_media(
        &app,
        "op1",
        &other,
        json!({"media_ids": media_ids(&items[1..]), "note": note}),
    )
    .await;
    assert_status(&res, 200);
    assert_eq!(res.json()["draft"]["media"], 10);
    assert_eq!(
        events(&app, &other).await.last().unwrap(),
        &format!("added note|{note}|agent|op1")
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn attaching_is_for_the_author_agent_within_its_workspace() {
    let app = spawn_app().await;
    let items = uploads(&app, 0..1).await;
    let id = submit_ok(&app, "op1", json!({"code": "TW-T001", "body": "mine"})).await;
    // Leo's agent attaching its own finished upload to Mia's post, and others.
    let (leo_upload, leo_media) = uploaded(&app, "op2", "TW-T002", 70).await;
    let before = written(&app).await;
    for (agent, post, status, code) in [
        ("op2", id.clone(), 403, "forbidden"),
        ("jp1", id.clone(), 404, "not_found"),
        ("other1", id.clone(), 404, "not_found"),
        ("bot", id.clone(), 403, "forbidden"),
        ("op1", Uuid::new_v4().to_string(), 404, "not_found"),
    ] {
        let (upload, media) = if agent == "op1" {
            (items[0].0.clone(), items[0].1.clone())
        } else {
            (leo_upload.clone(), leo_media.clone())
        };
        let images = attach_images(&app, agent, &post, json!({"upload_ids": [upload]})).await;
        assert_error_in(&format!("images {agent}"), &images, status, code, None);
        let media = attach_media(&app, agent, &post, json!({"media_ids": [media]})).await;
        assert_error_in(&format!("media {agent}"), &media, status, code, None);
    }
    assert_eq!(written(&app).await, before);
}

#[tokio::test(flavor = "multi_thread")]
async fn attaching_replays_the_first_result_for_the_same_idempotency_key() {
    let app = spawn_app().await;
    let key = app.agent_key("op1");
    let items = uploads(&app, 0..3).await;
    let id = submit_ok(&app, "op1", json!({"code": "TW-T001", "body": "b"})).await;
    for (route, body, other) in [
        (
            "images",
            json!({"upload_ids": [items[0].0], "note": "n"}),
            json!({"upload_ids": [items[1].0]}),
        ),
        (
            "media",
            json!({"media_ids": [items[1].1], "note": "n"}),
            json!({"media_ids": [items[2].1]}),
        ),
    ] {
        let path = format!("/drafts/{id}/{route}");
        let idem = format!("attach-{route}");
        let first = send_idem(&app, "POST", &key, &path, &idem, &body).await;
        assert_status(&first, 200);
        let events_after = rows(&app, "review_events").await;
        let media_after = post_media(&app, &id).await;
        let again = send_idem(&app, "POST", &key, &path, &idem, &body).await;
        assert_status(&again, 200);
        assert_eq!(again.header("idempotent-replayed"), Some("true"), "{route}");
        assert_eq!(again.json(), first.json(), "{route}");
        assert_eq!(rows(&app, "review_events").await, events_after, "{route}");
        let mismatch = send_idem(&app, "POST", &key, &path, &idem, &other).await;
        assert_error(&mismatch, 422, "idempotency_mismatch");
        assert_eq!(post_media(&app, &id).await, media_after, "{route}");
        assert_eq!(rows(&app, "review_events").await, events_after, "{route}");
    }
    assert_eq!(
        post_media(&app, &id).await,
        [items[0].1.clone(), items[1].1.clone()]
    );
}

// ---------------------------------------------------------------------------------------------
// POST /drafts/{id}/notes

async fn add_note(app: &TestApp, agent: &str, post: &str, body: Value) -> Response {
    self::post(
        app,
        &app.agent_key(agent),
        &format!("/drafts/{post}/notes"),
        body,
    )
    .await
}

#[tokio::test(flavor = "multi_thread")]
async fn add_note_goes_on_the_review_record() {
    let app = spawn_app().await;
    let id = submit_ok(&app, "op1", json!({"code": "TW-T001", "body": "b"})).await;
    let note = "註".repeat(1000);
    let res = add_note(&app, "op1", &id, json!({"note": note})).await;
    assert_status(&res, 200);
    assert_eq!(res.json(), json!({"draft": {"id": id, "noted": true}}));
    let short = add_note(&app, "op1", &id, json!({"note": "x"})).await;
    assert_status(&short, 200);
    assert_eq!(
        events(&app, &id).await,
        [
            "submitted||agent|op1".to_owned(),
            format!("added note|{note}|agent|op1"),
            "added note|x|agent|op1".to_owned(),
        ]
    );
    assert_eq!(
        app.count(&format!(
            "SELECT count(*) AS n FROM review_events WHERE post_id = '{id}' AND action = 'added note' \
             AND actor_id = '{}'",
            app.agent_id("op1")
        ))
        .await,
        2
    );
    // Any status takes a note.
    for status in ["approved", "published", "stocked"] {
        set_status(&app, &id, status).await;
        let res = add_note(&app, "op1", &id, json!({"note": status})).await;
        assert_eq!(res.status, 200, "{status}: {}", res.text());
    }
    assert_eq!(events(&app, &id).await.len(), 6);

    let before = written(&app).await;
    for (body, field) in [
        (json!({"note": "註".repeat(1001)}), "note"),
        (json!({"note": ""}), "note"),
        (json!({}), "note"),
        (json!({"note": 5}), "note"),
    ] {
        let case: String = body.to_string().chars().take(60).collect();
        let res = add_note(&app, "op1", &id, body).await;
        assert_invalid_in(&case, &res, field);
    }
    let bad_id = add_note(&app, "op1", "not-a-uuid", json!({"note": "x"})).await;
    assert_invalid_in("id not a uuid", &bad_id, "id");
    assert_eq!(written(&app).await, before);
}

#[tokio::test(flavor = "multi_thread")]
async fn add_note_is_for_the_author_agent_within_its_workspace() {
    let app = spawn_app().await;
    let id = submit_ok(&app, "op1", json!({"code": "TW-T001", "body": "mine"})).await;
    let before = written(&app).await;
    for (agent, post, status, code) in [
        ("op2", id.clone(), 403, "forbidden"),
        ("jp1", id.clone(), 404, "not_found"),
        ("other1", id.clone(), 404, "not_found"),
        ("bot", id.clone(), 403, "forbidden"),
        ("op1", Uuid::new_v4().to_string(), 404, "not_found"),
    ] {
        let res = add_note(&app, agent, &post, json!({"note": "hi"})).await;
        assert_error_in(agent, &res, status, code, None);
    }
    assert_eq!(written(&app).await, before);
}

#[tokio::test(flavor = "multi_thread")]
async fn add_note_replays_the_first_result_for_the_same_idempotency_key() {
    let app = spawn_app().await;
    let key = app.agent_key("op1");
    let id = submit_ok(&app, "op1", json!({"code": "TW-T001", "body": "b"})).await;
    let path = format!("/drafts/{id}/notes");
    let body = json!({"note": "once"});
    let first = send_idem(&app, "POST", &key, &path, "note-1", &body).await;
    assert_status(&first, 200);
    let again = send_idem(&app, "POST", &key, &path, "note-1", &body).await;
    assert_status(&again, 200);
    assert_eq!(again.header("idempotent-replayed"), Some("true"));
    assert_eq!(again.json(), first.json());
    let mismatch = send_idem(
        &app,
        "POST",
        &key,
        &path,
        "note-1",
        &json!({"note": "twice"}),
    )
    .await;
    assert_error(&mismatch, 422, "idempotency_mismatch");
    assert_eq!(
        events(&app, &id).await,
        ["submitted||agent|op1", "added note|once|agent|op1"]
    );
    // Another key: another note.
    let other = send_idem(&app, "POST", &key, &path, "note-2", &body).await;
    assert_status(&other, 200);
    assert_eq!(other.header("idempotent-replayed"), None);
    assert_eq!(events(&app, &id).await.len(), 3);
}

// ---------------------------------------------------------------------------------------------
// MCP

#[tokio::test(flavor = "multi_thread")]
async fn submit_draft_and_update_draft_run_as_mcp_tools() {
    let app = spawn_app().await;
    let key = app.agent_key("op1");
    let args = json!({"code": "TW-T001", "body": "via mcp", "planned_at": "2026-11-25 10:00",
                      "characters": [{"code": "momo"}], "request_id": "mcp-submit-1"});
    let first = call_tool(&app, &key, "submit_draft", args.clone()).await;
    assert_eq!(first["isError"], false, "{first}");
    let d = first["structuredContent"]["draft"].clone();
    assert_eq!(d["status"], "internal_review", "{first}");
    assert_eq!(d["planned_at"], "2026-11-25T02:00:00Z");
    assert_eq!(d["characters"][0]["name"], "Momo");
    let id = d["id"].as_str().unwrap().to_owned();
    assert_eq!(post_field(&app, &id, "body").await, "via mcp");

    // request_id is the idempotency key: the same call replays, other content is a mismatch.
    let again = call_tool(&app, &key, "submit_draft", args).await;
    assert_eq!(again["structuredContent"], first["structuredContent"]);
    assert_eq!(rows(&app, "posts").await, 1);
    let mismatch = call_tool(
        &app,
        &key,
        "submit_draft",
        json!({"code": "TW-T001", "body": "other", "request_id": "mcp-submit-1"}),
    )
    .await;
    assert_eq!(mismatch["isError"], true, "{mismatch}");
    assert_eq!(mismatch["body"]["code"], "idempotency_mismatch");
    assert_eq!(rows(&app, "posts").await, 1);

    // A REST error is a tool result with the same error body.
    let refused = call_tool(
        &app,
        &key,
        "submit_draft",
        json!({"code": "TW-T002", "body": "not mine"}),
    )
    .await;
    assert_eq!(refused["isError"], true, "{refused}");
    assert_eq!(refused["body"]["code"], "forbidden");
    // Malformed arguments are invalid params, with the error body as data.
    let too_long = rpc_call(
        &app,
        &key,
        "submit_draft",
        json!({"code": "TW-T001", "body": "貓".repeat(10_001)}),
    )
    .await;
    assert_eq!(too_long["error"]["code"], -32602, "{too_long}");
    assert_eq!(too_long["error"]["data"]["field"], "body", "{too_long}");
    assert_eq!(rows(&app, "posts").await, 1);

    // update_draft: the path's id is an argument.
    return_post(&app, &id, "sent_back", "too short", 1).await;
    let same = call_tool(
        &app,
        &key,
        "update_draft",
        json!({"id": id, "body": "via mcp"}),
    )
    .await;
    assert_eq!(same["isError"], true, "{same}");
    assert_eq!(same["body"]["code"], "rejected");
    assert_eq!(same["body"]["field"], "body");
    let upd = json!({"id": id, "body": "via mcp, longer", "characters": [],
                     "request_id": "mcp-update-1"});
    let updated = call_tool(&app, &key, "update_draft", upd.clone()).await;
    assert_eq!(updated["isError"], false, "{updated}");
    let d = &updated["structuredContent"]["draft"];
    assert_eq!(d["id"], id.as_str());
    assert_eq!(d["status"], "internal_review");
    assert_eq!(d["rewrite_answered"], true);
    assert_eq!(d["characters"], json!([]));
    assert_eq!(post_field(&app, &id, "body").await, "via mcp, longer");
    assert_eq!(post_field(&app, &id, "awaiting_rewrite").await, "false");
    let events_after = rows(&app, "review_events").await;
    let replay = call_tool(&app, &key, "update_draft", upd).await;
    assert_eq!(replay["structuredContent"], updated["structuredContent"]);
    assert_eq!(rows(&app, "review_events").await, events_after);

    // Another agent's post through MCP: forbidden; an unknown id: not found.
    let op2 = call_tool(
        &app,
        &app.agent_key("op2"),
        "update_draft",
        json!({"id": id, "body": "x"}),
    )
    .await;
    assert_eq!(op2["body"]["code"], "forbidden", "{op2}");
    let unknown = call_tool(
        &app,
        &key,
        "update_draft",
        json!({"id": Uuid::new_v4(), "body": "x"}),
    )
    .await;
    assert_eq!(unknown["body"]["code"], "not_found", "{unknown}");
    assert_eq!(post_field(&app, &id, "body").await, "via mcp, longer");
}

#[tokio::test(flavor = "multi_thread")]
async fn the_other_draft_tools_run_over_mcp_too() {
    let app = spawn_app().await;
    let key = app.agent_key("op1");
    let items = uploads(&app, 0..2).await;
    let id = submit_ok(&app, "op1", json!({"code": "TW-T001", "body": "b"})).await;
    let images = call_tool(
        &app,
        &key,
        "attach_images",
        json!({"id": id, "upload_ids": [items[0].0]}),
    )
    .await;
    assert_eq!(images["isError"], false, "{images}");
    assert_eq!(images["structuredContent"]["draft"]["images"], 1);
    let media = call_tool(
        &app,
        &key,
        "attach_media",
        json!({"id": id, "media_ids": [items[1].1]}),
    )
    .await;
    assert_eq!(media["isError"], false, "{media}");
    assert_eq!(media["structuredContent"]["draft"]["media"], 2);
    let note = call_tool(&app, &key, "add_note", json!({"id": id, "note": "via mcp"})).await;
    assert_eq!(
        note["structuredContent"],
        json!({"draft": {"id": id, "noted": true}})
    );
    assert_eq!(post_media(&app, &id).await, media_ids(&items));
    return_post(&app, &id, "sent_back", "redo", 1).await;
    let redo = call_tool(
        &app,
        &key,
        "list_redo",
        json!({"status": "sent_back", "limit": 1}),
    )
    .await;
    assert_eq!(redo["isError"], false, "{redo}");
    assert_eq!(redo["structuredContent"]["drafts"][0]["id"], id.as_str());
    assert_eq!(redo["structuredContent"]["drafts"][0]["media"], 2);
}

// ---------------------------------------------------------------------------------------------
// Concurrency and larger sets

#[tokio::test(flavor = "multi_thread")]
async fn concurrent_identical_submits_make_one_post() {
    let app = spawn_app().await;
    let key = app.agent_key("op1");
    let path = format!("{API}/drafts");
    let body = json!({"code": "TW-T001", "body": "at once", "images": [inline(1)]});
    let calls = (0..6).map(|_| app.client.post(&path, &key, &body));
    let results = futures_util::future::join_all(calls).await;
    let mut statuses: Vec<u16> = results.iter().map(|r| r.status).collect();
    statuses.sort();
    assert_eq!(statuses, [200, 200, 200, 200, 200, 201], "{results:?}");
    let ids: std::collections::BTreeSet<String> = results.iter().map(id_of).collect();
    assert_eq!(ids.len(), 1, "{ids:?}");
    assert_eq!(rows(&app, "posts").await, 1);
    assert_eq!(rows(&app, "media").await, 1);
    assert_eq!(rows(&app, "post_media").await, 1);
}

#[tokio::test(flavor = "multi_thread")]
async fn concurrent_attaches_keep_the_cap_and_the_order() {
    let app = spawn_app().await;
    let key = app.agent_key("op1");
    let items = uploads(&app, 0..5).await;
    let id = submit_ok(
        &app,
        "op1",
        json!({"code": "TW-T001", "body": "b", "media_ids": [items[0].1]}),
    )
    .await;
    let path = format!("{API}/drafts/{id}/media");
    let bodies: Vec<Value> = items[1..]
        .iter()
        .map(|i| json!({"media_ids": [i.1]}))
        .collect();
    let calls = bodies.iter().map(|b| app.client.post(&path, &key, b));
    let results = futures_util::future::join_all(calls).await;
    let mut statuses: Vec<u16> = results.iter().map(|r| r.status).collect();
    statuses.sort();
    assert_eq!(statuses, [200, 200, 200, 422], "{results:?}");
    assert_eq!(post_media(&app, &id).await.len(), 4);
    assert_eq!(
        app.count(&format!(
            "SELECT count(DISTINCT position) AS n FROM post_media WHERE post_id = '{id}'"
        ))
        .await,
        4
    );
    assert_eq!(post_media(&app, &id).await[0], items[0].1);
}

#[tokio::test(flavor = "multi_thread")]
async fn one_file_named_twice_in_a_submit_goes_on_once() {
    let app = spawn_app().await;
    let res = submit(
        &app,
        "op1",
        json!({"code": "TW-T001", "body": "twice", "images": [inline(1), inline(1)]}),
    )
    .await;
    assert_status(&res, 201);
    assert_eq!(res.json()["draft"]["images"], 1);
    assert_eq!(rows(&app, "media").await, 1);
    assert_eq!(rows(&app, "post_media").await, 1);
    let items = uploads(&app, 5..6).await;
    let res = submit(
        &app,
        "op1",
        json!({"code": "TW-T001", "body": "twice more", "upload_ids": [items[0].0, items[0].0],
               "media_ids": [items[0].1]}),
    )
    .await;
    assert_status(&res, 201);
    assert_eq!(post_media(&app, &id_of(&res)).await, [items[0].1.clone()]);
}

#[tokio::test(flavor = "multi_thread")]
async fn list_redo_pages_fifty_by_default() {
    let app = spawn_app().await;
    let key = app.agent_key("op1");
    let id = submit_ok(&app, "op1", json!({"code": "TW-T001", "body": "seed"})).await;
    return_post(&app, &id, "sent_back", "s", 100).await;
    // Fifty more returned at the same moment: the id breaks the tie.
    app.sql(&format!(
        "INSERT INTO posts (organization_id, workspace_id, project_id, persona_id, slot_id,          generation_id, agent_id, platform, status, body, awaiting_rewrite, returned_body,          returned_at)          SELECT organization_id, workspace_id, project_id, persona_id, slot_id, generation_id,          agent_id, platform, 'rewrite_requested', body || g, true, body || g, now()          FROM posts, generate_series(1, 50) AS g WHERE id = '{id}'"
    ))
    .await;
    let first = get(&app, &key, "/drafts").await;
    assert_status(&first, 200);
    let v = first.json();
    let page: Vec<String> = v["drafts"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| d["id"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(page.len(), 50);
    assert_eq!(page[0], id, "the oldest first");
    let cursor = v["next_cursor"].as_str().expect("a next page").to_owned();
    let second = get(&app, &key, &format!("/drafts?cursor={cursor}")).await;
    assert_status(&second, 200);
    let v = second.json();
    let rest: Vec<String> = v["drafts"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| d["id"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(rest.len(), 1);
    assert_eq!(v["next_cursor"], Value::Null);
    assert!(!page.contains(&rest[0]));
    let all: std::collections::BTreeSet<&String> = page.iter().chain(&rest).collect();
    assert_eq!(all.len(), 51);
}

#[tokio::test(flavor = "multi_thread")]
async fn every_draft_answer_carries_the_inventory_heads_up() {
    let app = spawn_app().await;
    let items = uploads(&app, 0..3).await;
    // TW-K001 is warming: one post stocked, another kept as a draft.
    submit_ok(&app, "op1", json!({"code": "TW-K001", "body": "stocked"})).await;
    let draft = submit_ok(
        &app,
        "op1",
        json!({"code": "TW-K001", "body": "draft", "submit": false}),
    )
    .await;
    let answers = [
        (
            "duplicate",
            submit(
                &app,
                "op1",
                json!({"code": "TW-K001", "body": "draft", "submit": false}),
            )
            .await,
        ),
        (
            "attach_images",
            attach_images(&app, "op1", &draft, json!({"upload_ids": [items[0].0]})).await,
        ),
        (
            "attach_media",
            attach_media(&app, "op1", &draft, json!({"media_ids": [items[1].1]})).await,
        ),
        (
            "update_draft",
            update(
                &app,
                "op1",
                &draft,
                json!({"body": "draft", "submit": false}),
            )
            .await,
        ),
    ];
    for (case, res) in answers {
        assert_eq!(res.status, 200, "{case}: {}", res.text());
        let v = res.json();
        assert_eq!(v["heads_up"]["inventory"]["stocked"], 1, "{case}: {v}");
        assert!(
            v["heads_up"]["inventory"]["message"]
                .as_str()
                .is_some_and(|m| m.contains("TW-K001")),
            "{case}: {v}"
        );
    }
    // An account without stock: no heads-up.
    let clean = submit_ok(&app, "op1", json!({"code": "TW-T001", "body": "clean"})).await;
    let res = attach_media(&app, "op1", &clean, json!({"media_ids": [items[2].1]})).await;
    assert_status(&res, 200);
    assert!(res.json().get("heads_up").is_none(), "{}", res.text());
}

/// A write the database refuses by a constraint the service's checks did not foresee (what a
/// concurrent request stored in between) is 422 rejected with a message that names no
/// constraint, never 500, and nothing of the request stays.
#[tokio::test(flavor = "multi_thread")]
async fn a_constraint_the_checks_did_not_foresee_is_422_and_writes_nothing() {
    let app = spawn_app().await;
    for (errcode, says) in [
        ("unique_violation", "stored meanwhile"),
        ("foreign_key_violation", "removed meanwhile"),
    ] {
        app.sql(&format!(
            "CREATE OR REPLACE FUNCTION refuse_post() RETURNS trigger LANGUAGE plpgsql AS $$ \
             BEGIN RAISE EXCEPTION 'forced' USING ERRCODE = '{errcode}', \
             CONSTRAINT = 'posts_forced_key'; END $$"
        ))
        .await;
        app.sql(
            "CREATE OR REPLACE TRIGGER refuse_post BEFORE INSERT ON posts FOR EACH ROW \
             EXECUTE FUNCTION refuse_post()",
        )
        .await;
        let body = format!("forced {errcode}");
        let res = submit(&app, "op1", json!({"code": "TW-T001", "body": body})).await;
        assert_status(&res, 422);
        let error = res.json();
        assert_eq!(error["code"], "rejected", "{errcode}: {error}");
        let message = error["message"].as_str().unwrap_or_default();
        assert!(message.contains(says), "{errcode}: {error}");
        assert!(!message.contains("posts_forced_key"), "{errcode}: {error}");
        assert_eq!(
            app.count(&format!(
                "SELECT count(*) AS n FROM posts WHERE body = '{body}'"
            ))
            .await,
            0
        );
    }
    assert_eq!(
        app.count("SELECT count(*) AS n FROM review_events").await,
        0
    );
}
