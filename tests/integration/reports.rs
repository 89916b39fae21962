//! Agent API: the approved list (`GET /posts/approved`), post reports (`POST /posts/report`)
//! and metrics (`POST /metrics`), through HTTP and MCP over the standard tenant: the post
//! state table end to end, matching across accounts, workspaces and organizations, what is
//! written to the database, idempotency and concurrent reports.

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use fleetdesk_tests::assert::assert_error;
use fleetdesk_tests::client::Request;
use fleetdesk_tests::{Response, TestApp, spawn_app};
use jiff::Timestamp;
use serde_json::{Value, json};

const AGENT: &str = "/api/agent/v1";
const USER: &str = "/api/user/v1";
const APPROVED: &str = "/api/agent/v1/posts/approved";
const REPORT: &str = "/api/agent/v1/posts/report";
const METRICS: &str = "/api/agent/v1/metrics";

// ---------------------------------------------------------------------------------------------
// helpers

fn ok(r: &Response) -> Value {
    assert!(
        (200..300).contains(&r.status),
        "{} {}",
        r.status,
        String::from_utf8_lossy(&r.body)
    );
    r.json()
}

fn now() -> Timestamp {
    Timestamp::now()
}

/// An ISO time with a zone, `secs` from now, in whole seconds.
fn at(secs: i64) -> String {
    Timestamp::from_second(now().as_second() + secs)
        .expect("a time")
        .to_string()
}

/// A draft of `code` written by `key`; returns its id.
async fn draft(app: &TestApp, key: &str, code: &str, body: &str) -> String {
    draft_with(app, key, json!({"code": code, "body": body})).await
}

async fn draft_with(app: &TestApp, key: &str, body: Value) -> String {
    let v = ok(&app
        .client
        .post(&format!("{AGENT}/drafts"), key, &body)
        .await);
    v["draft"]["id"].as_str().expect("draft id").to_owned()
}

/// Ann (agency) approves a post.
async fn approve(app: &TestApp, id: &str) {
    let ann = app.personal_key("ann@acme.test");
    let v = ok(&app
        .client
        .post(
            &format!("{USER}/posts/{id}/transition"),
            &ann,
            &json!({"to": "approved"}),
        )
        .await);
    assert_eq!(v["post"]["status"], "approved", "{v}");
}

/// A draft written by `key` on `code` and approved by Ann.
async fn approved_post(app: &TestApp, key: &str, code: &str, body: &str) -> String {
    let id = draft(app, key, code, body).await;
    approve(app, &id).await;
    id
}

async fn report(app: &TestApp, key: &str, posts: Value) -> Response {
    app.client
        .post(REPORT, key, &json!({ "posts": posts }))
        .await
}

/// A report that must answer 200; returns the body.
async fn report_ok(app: &TestApp, key: &str, posts: Value) -> Value {
    let r = report(app, key, posts).await;
    assert_eq!(r.status, 200, "{}", String::from_utf8_lossy(&r.body));
    r.json()
}

/// The result of item `i`, checked to carry its index.
fn result(v: &Value, i: usize) -> &Value {
    let r = &v["results"][i];
    assert_eq!(r["index"], i, "results[{i}] of {v}");
    r
}

/// A successful item: ok, its action and status.
fn assert_item(v: &Value, i: usize, action: &str, status: &str) -> String {
    let r = result(v, i);
    assert_eq!(r["ok"], true, "results[{i}]: {v}");
    assert_eq!(r["error"], Value::Null, "results[{i}]: {v}");
    assert_eq!(r["action"], action, "results[{i}]: {v}");
    assert_eq!(r["status"], status, "results[{i}]: {v}");
    r["post_id"].as_str().unwrap_or_default().to_owned()
}

/// A refused item: not ok, no action, its error code (and field when given).
fn assert_refused(v: &Value, i: usize, code: &str, field: Option<&str>) {
    let r = result(v, i);
    assert_eq!(r["ok"], false, "results[{i}]: {v}");
    assert_eq!(r["action"], Value::Null, "results[{i}]: {v}");
    assert_eq!(r["error"]["code"], code, "results[{i}]: {v}");
    assert!(r["error"]["message"].is_string(), "results[{i}]: {v}");
    if let Some(f) = field {
        assert_eq!(r["error"]["field"], f, "results[{i}]: {v}");
    }
}

/// `SELECT count(*) AS n FROM <rest>`.
async fn rows(app: &TestApp, rest: &str) -> i64 {
    app.count(&format!("SELECT count(*) AS n FROM {rest}"))
        .await
}

/// One nullable text value (`SELECT ... AS t`); None when null or when there is no row.
async fn text(app: &TestApp, query: &str) -> Option<String> {
    use diesel_async::RunQueryDsl;
    #[derive(diesel::QueryableByName)]
    struct T {
        #[diesel(sql_type = diesel::sql_types::Nullable<diesel::sql_types::Text>)]
        t: Option<String>,
    }
    let rows: Vec<T> = diesel::sql_query(query)
        .load(&mut app.connect().await)
        .await
        .unwrap_or_else(|e| panic!("{query}: {e}"));
    assert!(rows.len() <= 1, "{query}: {} rows", rows.len());
    rows.into_iter().next().and_then(|r| r.t)
}

/// A column of a post as text.
async fn post_col(app: &TestApp, id: &str, column: &str) -> Option<String> {
    text(
        app,
        &format!("SELECT {column}::text AS t FROM posts WHERE id = '{id}'"),
    )
    .await
}

async fn post_status(app: &TestApp, id: &str) -> String {
    post_col(app, id, "status").await.expect("post status")
}

fn ids_of(list: &Value) -> Vec<String> {
    list["posts"]
        .as_array()
        .expect("posts[]")
        .iter()
        .map(|p| p["id"].as_str().expect("id").to_owned())
        .collect()
}

/// A PNG header of width `seed + 1`: judged a PNG, a different file for every seed.
fn png(seed: u32) -> Vec<u8> {
    let mut b = b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR".to_vec();
    b.extend_from_slice(&(seed + 1).to_be_bytes());
    b.extend_from_slice(&[0, 0, 0, 1, 8, 6, 0, 0, 0, 0x1F, 0x15, 0xC4, 0x89]);
    b
}

/// GET of a signed link of this app (no key: the link is the credential).
async fn fetch(app: &TestApp, url: &str) -> Response {
    let path = url
        .strip_prefix(&app.base)
        .unwrap_or_else(|| panic!("{url} is not on {}", app.base));
    app.client.send(Request::new("GET", path)).await
}

// ---------------------------------------------------------------------------------------------
// GET /posts/approved

#[tokio::test(flavor = "multi_thread")]
async fn approved_list_holds_only_the_callers_approved_unscheduled_posts() {
    let app = spawn_app().await;
    let op1 = app.agent_key("op1");
    let op2 = app.agent_key("op2");
    let jp1 = app.agent_key("jp1");

    let mine = approved_post(&app, &op1, "TW-T001", "Mine, approved").await;
    let mine_ig = approved_post(&app, &op1, "TW-I001", "Mine on instagram").await;
    let in_review = draft(&app, &op1, "TW-T001", "Mine, still in review").await;
    let scheduled = approved_post(&app, &op1, "TW-T001", "Mine, to be scheduled").await;
    let leo = approved_post(&app, &op2, "TW-T002", "Leo's approved post").await;
    let yui = approved_post(&app, &jp1, "JP-T001", "Yui's approved post").await;

    let list = ok(&app.client.get(APPROVED, &op1).await);
    let ids = ids_of(&list);
    assert_eq!(ids.len(), 3, "{list}");
    for id in [&mine, &mine_ig, &scheduled] {
        assert!(ids.contains(id), "{id} missing: {list}");
    }
    for id in [&in_review, &leo, &yui] {
        assert!(!ids.contains(id), "{id} listed: {list}");
    }
    assert!(list["links_expire_in_seconds"].as_i64().unwrap() > 0);
    let card = list["posts"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["id"] == mine.as_str())
        .unwrap();
    let mut keys: Vec<&str> = card
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    keys.sort_unstable();
    assert_eq!(
        keys,
        [
            "body",
            "characters",
            "code",
            "handle",
            "id",
            "images",
            "persona",
            "planned_at",
            "platform",
            "sponsored",
            "topic"
        ],
        "{card}"
    );
    assert_eq!(card["code"], "TW-T001", "{card}");
    assert_eq!(card["platform"], "threads", "{card}");
    assert_eq!(card["persona"], "Mia", "{card}");
    assert_eq!(card["handle"], "mia", "{card}");
    assert_eq!(card["body"], "Mine, approved", "{card}");
    assert_eq!(card["sponsored"], false, "{card}");
    assert_eq!(card["images"], json!([]), "{card}");

    // Reporting one scheduled with its post_id takes it off the list.
    let v = report_ok(
        &app,
        &op1,
        json!([{"code": "TW-T001", "status": "scheduled", "post_id": scheduled,
                "scheduled_for": at(3600)}]),
    )
    .await;
    assert_item(&v, 0, "updated", "scheduled");
    let ids = ids_of(&ok(&app.client.get(APPROVED, &op1).await));
    assert_eq!(ids.len(), 2, "{ids:?}");
    assert!(!ids.contains(&scheduled));

    // The other agents see their own.
    assert_eq!(ids_of(&ok(&app.client.get(APPROVED, &op2).await)), [leo]);
    assert_eq!(ids_of(&ok(&app.client.get(APPROVED, &jp1).await)), [yui]);
}

#[tokio::test(flavor = "multi_thread")]
async fn approved_list_is_earliest_planned_first_unplanned_last() {
    let app = spawn_app().await;
    let op1 = app.agent_key("op1");
    let late = approved_post(&app, &op1, "TW-T001", "Planned late").await;
    let unplanned = approved_post(&app, &op1, "TW-T001", "Not planned").await;
    let early = approved_post(&app, &op1, "TW-I001", "Planned early").await;
    app.sql(&format!(
        "UPDATE posts SET planned_at = now() + interval '5 hours' WHERE id = '{late}'"
    ))
    .await;
    app.sql(&format!(
        "UPDATE posts SET planned_at = now() + interval '1 hour' WHERE id = '{early}'"
    ))
    .await;
    app.sql(&format!(
        "UPDATE posts SET planned_at = NULL WHERE id = '{unplanned}'"
    ))
    .await;
    let list = ok(&app.client.get(APPROVED, &op1).await);
    assert_eq!(ids_of(&list), [early, late, unplanned.clone()], "{list}");
    assert!(list["posts"][0]["planned_at"].is_string(), "{list}");
    assert_eq!(list["posts"][2]["planned_at"], Value::Null, "{list}");
}

#[tokio::test(flavor = "multi_thread")]
async fn approved_list_holds_at_most_200() {
    let app = spawn_app().await;
    let op1 = app.agent_key("op1");
    let seed = approved_post(&app, &op1, "TW-T001", "The seed, unplanned").await;
    app.sql(&format!(
        "UPDATE posts SET planned_at = NULL WHERE id = '{seed}'"
    ))
    .await;
    app.sql(&format!(
        "INSERT INTO posts (organization_id, workspace_id, project_id, persona_id, slot_id, \
                            agent_id, platform, status, body, planned_at) \
         SELECT organization_id, workspace_id, project_id, persona_id, slot_id, agent_id, \
                platform, 'approved', 'bulk ' || g, now() + g * interval '1 minute' \
         FROM posts, generate_series(1, 201) g WHERE id = '{seed}'"
    ))
    .await;
    assert_eq!(rows(&app, "posts WHERE status = 'approved'").await, 202);
    let list = ok(&app.client.get(APPROVED, &op1).await);
    let posts = list["posts"].as_array().unwrap();
    assert_eq!(posts.len(), 200);
    assert_eq!(posts[0]["body"], "bulk 1");
    assert_eq!(posts[199]["body"], "bulk 200");
    assert!(
        !ids_of(&list).contains(&seed),
        "the unplanned seed comes last"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn approved_list_gives_media_in_publishing_order_with_links_that_download() {
    let app = spawn_app().await;
    let op1 = app.agent_key("op1");
    let b64 = |s| STANDARD.encode(png(s));
    let id = draft_with(
        &app,
        &op1,
        json!({"code": "TW-T001", "body": "Three pictures",
               "images": [{"data": b64(7), "caption": "first"},
                          {"data": b64(3), "caption": "second"},
                          {"data": b64(5), "caption": "third"}]}),
    )
    .await;
    approve(&app, &id).await;
    let list = ok(&app.client.get(APPROVED, &op1).await);
    let images = list["posts"][0]["images"].as_array().expect("images[]");
    let captions: Vec<&str> = images
        .iter()
        .map(|m| m["caption"].as_str().unwrap())
        .collect();
    assert_eq!(captions, ["first", "second", "third"], "{list}");
    for (m, seed) in images.iter().zip([7, 3, 5]) {
        assert_eq!(m["kind"], "image", "{m}");
        assert_eq!(m["mime_type"], "image/png", "{m}");
        assert_eq!(m["duration_ms"], Value::Null, "{m}");
        let media_id = m["id"].as_str().unwrap();
        let url = m["url"].as_str().unwrap();
        assert!(
            url.starts_with(&format!("{}/files/{media_id}/file?", app.base)),
            "{url}"
        );
        let file = fetch(&app, url).await;
        assert_eq!(file.status, 200, "{url}");
        assert_eq!(file.body, png(seed), "{url}");
        let thumb = fetch(&app, m["thumb_url"].as_str().unwrap()).await;
        assert_eq!(thumb.status, 200, "{m}");
        assert!(!thumb.body.is_empty());
    }
    // The order is the stored publishing order.
    let stored = text(
        &app,
        &format!(
            "SELECT string_agg(m.caption, ',' ORDER BY pm.position) AS t \
             FROM post_media pm JOIN media m ON m.id = pm.media_id WHERE pm.post_id = '{id}'"
        ),
    )
    .await;
    assert_eq!(stored.as_deref(), Some("first,second,third"));
}

#[tokio::test(flavor = "multi_thread")]
async fn approved_list_leaves_out_accounts_the_service_publishes() {
    let app = spawn_app().await;
    let op1 = app.agent_key("op1");
    let threads = approved_post(&app, &op1, "TW-T001", "Published by the agent").await;
    let ig = approved_post(&app, &op1, "TW-I001", "Published by fleetdesk").await;
    assert_eq!(ids_of(&ok(&app.client.get(APPROVED, &op1).await)).len(), 2);
    app.sql("UPDATE account_slots SET publishing = 'fleetdesk' WHERE code = 'TW-I001'")
        .await;
    let ids = ids_of(&ok(&app.client.get(APPROVED, &op1).await));
    assert_eq!(ids, [threads]);
    assert!(!ids.contains(&ig));
}

#[tokio::test(flavor = "multi_thread")]
async fn a_community_agent_gets_403_on_posts_and_metrics() {
    let app = spawn_app().await;
    let bot = app.agent_key("bot");
    assert_error(&app.client.get(APPROVED, &bot).await, 403, "forbidden");
    let r = report(
        &app,
        &bot,
        json!([{"code": "TW-T001", "status": "published", "body": "b",
                "permalink": "https://threads.net/p/1"}]),
    )
    .await;
    assert_error(&r, 403, "forbidden");
    let r = app
        .client
        .post(
            METRICS,
            &bot,
            &json!({"captured_at": at(0), "accounts": [{"code": "TW-T001", "followers": 1}]}),
        )
        .await;
    assert_error(&r, 403, "forbidden");
    assert_eq!(rows(&app, "posts").await, 0);
    assert_eq!(rows(&app, "account_metrics").await, 0);
}

// ---------------------------------------------------------------------------------------------
// POST /posts/report: the batch

#[tokio::test(flavor = "multi_thread")]
async fn a_report_needs_1_to_200_posts() {
    let app = spawn_app().await;
    let op1 = app.agent_key("op1");
    let v = assert_error(&report(&app, &op1, json!([])).await, 400, "invalid_request");
    assert_eq!(v["field"], "posts", "{v}");
    let many: Vec<Value> = (0..201)
        .map(|i| {
            json!({"code": "TW-T001", "status": "published", "body": format!("post {i}"),
                   "permalink": format!("https://threads.net/p/{i}")})
        })
        .collect();
    let v = assert_error(
        &report(&app, &op1, json!(many)).await,
        400,
        "invalid_request",
    );
    assert_eq!(v["field"], "posts", "{v}");
    let v = assert_error(
        &app.client.post(REPORT, &op1, &json!({})).await,
        400,
        "invalid_request",
    );
    assert_eq!(v["field"], "posts", "{v}");
    assert_eq!(rows(&app, "posts").await, 0);
    assert_eq!(rows(&app, "post_reports").await, 0);

    // 200 is the most a batch may hold.
    let v = report_ok(&app, &op1, json!(many[..200])).await;
    assert_eq!(v["inserted"], 200, "{v}");
    assert_eq!(v["results"].as_array().unwrap().len(), 200);
    assert_eq!(rows(&app, "posts WHERE origin = 'report'").await, 200);
}

// ---------------------------------------------------------------------------------------------
// The post state table, end to end

#[tokio::test(flavor = "multi_thread")]
async fn approved_to_scheduled_to_published_and_published_stays() {
    let app = spawn_app().await;
    let op1 = app.agent_key("op1");
    let id = approved_post(&app, &op1, "TW-T001", "From approved to published").await;
    let events = rows(&app, &format!("review_events WHERE post_id = '{id}'")).await;

    let v = report_ok(
        &app,
        &op1,
        json!([{"code": "TW-T001", "status": "scheduled", "post_id": id,
                "scheduled_for": "2030-05-01T10:00:00+08:00", "platform_post_id": "tool-1"}]),
    )
    .await;
    assert_eq!(
        (
            v["inserted"].as_i64(),
            v["updated"].as_i64(),
            v["rejected"].as_i64()
        ),
        (Some(0), Some(1), Some(0)),
        "{v}"
    );
    assert!(v["report_id"].is_string(), "{v}");
    assert_eq!(assert_item(&v, 0, "updated", "scheduled"), id);
    assert_eq!(result(&v, 0)["matched_by"], "post_id");
    assert_eq!(post_status(&app, &id).await, "scheduled");
    assert_eq!(
        rows(
            &app,
            &format!(
                "posts WHERE id = '{id}' AND scheduled_for = '2030-05-01T02:00:00Z' \
                 AND platform_post_id = 'tool-1' AND last_reported_at IS NOT NULL"
            )
        )
        .await,
        1
    );
    assert_eq!(
        rows(
            &app,
            &format!(
                "review_events WHERE post_id = '{id}' AND actor_kind = 'agent' \
                 AND action = 'reported scheduled'"
            )
        )
        .await,
        1
    );
    assert_eq!(
        rows(&app, &format!("review_events WHERE post_id = '{id}'")).await,
        events + 1
    );

    let v = report_ok(
        &app,
        &op1,
        json!([{"code": "TW-T001", "status": "published", "post_id": id,
                "permalink": "https://threads.net/@mia/post/1", "platform_post_id": "thr-1"}]),
    )
    .await;
    assert_item(&v, 0, "updated", "published");
    assert_eq!(post_status(&app, &id).await, "published");
    assert_eq!(
        post_col(&app, &id, "permalink").await.as_deref(),
        Some("https://threads.net/@mia/post/1")
    );
    assert_eq!(
        post_col(&app, &id, "platform_post_id").await.as_deref(),
        Some("thr-1")
    );
    assert_eq!(
        post_col(&app, &id, "scheduler_ref").await.as_deref(),
        Some("tool-1"),
        "the tool's id is kept as the scheduler's reference"
    );
    assert!(post_col(&app, &id, "published_at").await.is_some());

    // A published post stays published: scheduled, failed or cancelled are ignored.
    let v = report_ok(
        &app,
        &op1,
        json!([
            {"code": "TW-T001", "status": "scheduled", "post_id": id, "scheduled_for": at(600)},
            {"code": "TW-T001", "status": "failed", "post_id": id, "failure_reason": "oops"},
            {"code": "TW-T001", "status": "cancelled", "platform_post_id": "thr-1"},
        ]),
    )
    .await;
    assert_eq!(v["ignored"], 3, "{v}");
    for i in 0..3 {
        assert_eq!(assert_item(&v, i, "ignored", "published"), id);
        assert!(result(&v, i)["note"].is_string(), "{v}");
    }
    assert_eq!(result(&v, 2)["matched_by"], "platform_post_id");
    assert_eq!(post_status(&app, &id).await, "published");
    assert_eq!(post_col(&app, &id, "failure_reason").await, None);
    assert_eq!(
        rows(&app, &format!("review_events WHERE post_id = '{id}'")).await,
        events + 2,
        "ignored items write no review event"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn approved_to_published_and_to_failed() {
    let app = spawn_app().await;
    let op1 = app.agent_key("op1");
    let a = approved_post(&app, &op1, "TW-T001", "Straight to published").await;
    let b = approved_post(&app, &op1, "TW-T001", "Goes wrong").await;
    let c = approved_post(&app, &op1, "TW-T001", "Scheduled then fails").await;
    report_ok(
        &app,
        &op1,
        json!([{"code": "TW-T001", "status": "scheduled", "post_id": c,
                "scheduled_for": at(3600)}]),
    )
    .await;
    let v = report_ok(
        &app,
        &op1,
        json!([
            {"code": "TW-T001", "status": "published", "post_id": a,
             "permalink": "http://threads.net/p/a"},
            {"code": "TW-T001", "status": "failed", "post_id": b,
             "failure_reason": "the platform refused the text"},
            {"code": "TW-T001", "status": "failed", "post_id": c,
             "failure_reason": "token expired"},
        ]),
    )
    .await;
    assert_eq!(v["updated"], 3, "{v}");
    assert_item(&v, 0, "updated", "published");
    assert_item(&v, 1, "updated", "failed");
    assert_item(&v, 2, "updated", "failed");
    assert_eq!(post_status(&app, &a).await, "published");
    assert_eq!(post_status(&app, &b).await, "failed");
    assert_eq!(post_status(&app, &c).await, "failed");
    assert_eq!(
        post_col(&app, &b, "failure_reason").await.as_deref(),
        Some("the platform refused the text")
    );
    assert_eq!(
        rows(
            &app,
            &format!(
                "review_events WHERE post_id = '{b}' AND action = 'reported failed' \
                 AND reason = 'the platform refused the text'"
            )
        )
        .await,
        1
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn approved_cancelled_is_ignored_and_scheduled_cancelled_is_cancelled() {
    let app = spawn_app().await;
    let op1 = app.agent_key("op1");
    let approved = approved_post(&app, &op1, "TW-T001", "Never scheduled").await;
    let scheduled = approved_post(&app, &op1, "TW-T001", "Scheduled, then dropped").await;
    report_ok(
        &app,
        &op1,
        json!([{"code": "TW-T001", "status": "scheduled", "post_id": scheduled,
                "scheduled_for": at(7200)}]),
    )
    .await;
    let v = report_ok(
        &app,
        &op1,
        json!([
            {"code": "TW-T001", "status": "cancelled", "post_id": approved},
            {"code": "TW-T001", "status": "cancelled", "post_id": scheduled,
             "failure_reason": "the person changed their mind"},
        ]),
    )
    .await;
    assert_eq!(
        (v["ignored"].as_i64(), v["updated"].as_i64()),
        (Some(1), Some(1)),
        "{v}"
    );
    assert_item(&v, 0, "ignored", "approved");
    assert!(result(&v, 0)["note"].is_string(), "{v}");
    assert_item(&v, 1, "updated", "cancelled");
    assert_eq!(post_status(&app, &approved).await, "approved");
    assert_eq!(post_status(&app, &scheduled).await, "cancelled");
    assert!(ids_of(&ok(&app.client.get(APPROVED, &op1).await)).contains(&approved));
}

#[tokio::test(flavor = "multi_thread")]
async fn a_post_before_review_cannot_be_reported() {
    let app = spawn_app().await;
    let op1 = app.agent_key("op1");
    let id = draft(&app, &op1, "TW-T001", "Still in internal review").await;
    assert_eq!(post_status(&app, &id).await, "internal_review");
    let other = approved_post(&app, &op1, "TW-T001", "Approved one").await;
    let events = rows(&app, &format!("review_events WHERE post_id = '{id}'")).await;
    for status in ["scheduled", "published", "failed", "cancelled"] {
        let v = report_ok(
            &app,
            &op1,
            json!([
                {"code": "TW-T001", "status": status, "post_id": id, "scheduled_for": at(600),
                 "permalink": "https://threads.net/p/x", "failure_reason": "r"},
                {"code": "TW-T001", "status": "scheduled", "post_id": other,
                 "scheduled_for": at(600)},
            ]),
        )
        .await;
        assert_refused(&v, 0, "rejected", None);
        assert_eq!(result(&v, 0)["post_id"], Value::Null, "{v}");
        assert_eq!(v["rejected"], 1, "{v}");
        assert_eq!(post_status(&app, &id).await, "internal_review", "{status}");
    }
    assert_eq!(
        rows(&app, &format!("review_events WHERE post_id = '{id}'")).await,
        events,
        "a refused item writes no review event"
    );
}

/// Stocks a post through the agent API.
async fn stock(app: &TestApp, key: &str, id: &str) {
    let v = ok(&app
        .client
        .post(
            &format!("{AGENT}/posts/{id}/stock"),
            key,
            &json!({"reason": "the account needs a rest"}),
        )
        .await);
    assert_eq!(v["post"]["status"], "stocked", "{v}");
}

#[tokio::test(flavor = "multi_thread")]
async fn stocked_posts_in_reports() {
    let app = spawn_app().await;
    let op1 = app.agent_key("op1");
    let a = approved_post(&app, &op1, "TW-T001", "Stocked A").await;
    let b = approved_post(&app, &op1, "TW-T001", "Stocked B").await;
    let c = approved_post(&app, &op1, "TW-T001", "Stocked C").await;
    let d = approved_post(&app, &op1, "TW-T001", "Stocked D").await;
    for id in [&a, &b, &c, &d] {
        stock(&app, &op1, id).await;
    }
    let v = report_ok(
        &app,
        &op1,
        json!([
            {"code": "TW-T001", "status": "cancelled", "post_id": a},
            {"code": "TW-T001", "status": "published", "post_id": b,
             "permalink": "https://threads.net/p/b", "platform_post_id": "thr-b"},
            {"code": "TW-T001", "status": "scheduled", "post_id": c, "scheduled_for": at(900)},
            {"code": "TW-T001", "status": "failed", "post_id": d, "failure_reason": "x"},
        ]),
    )
    .await;
    assert_item(&v, 0, "unscheduled", "stocked");
    assert!(result(&v, 0)["note"].is_string(), "{v}");
    assert_item(&v, 1, "updated", "published");
    assert_eq!(result(&v, 1)["published_from_stock"], true, "{v}");
    assert!(result(&v, 1)["warning"].is_string(), "{v}");
    assert!(
        result(&v, 0).get("published_from_stock").is_none(),
        "only a publication from stock says so: {v}"
    );
    assert_refused(&v, 2, "rejected", None);
    assert_item(&v, 3, "unchanged", "stocked");
    assert_eq!(
        (
            v["updated"].as_i64(),
            v["unchanged"].as_i64(),
            v["rejected"].as_i64()
        ),
        (Some(2), Some(1), Some(1)),
        "{v}"
    );
    assert_eq!(post_status(&app, &a).await, "stocked");
    assert_eq!(post_status(&app, &b).await, "published");
    assert_eq!(post_status(&app, &c).await, "stocked");
    assert_eq!(post_status(&app, &d).await, "stocked");
    assert_eq!(post_col(&app, &d, "failure_reason").await, None);
    assert_eq!(post_col(&app, &c, "scheduled_for").await, None);
    assert_eq!(
        rows(
            &app,
            &format!("review_events WHERE post_id = '{a}' AND action = 'unscheduled'")
        )
        .await,
        1
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_cancel_of_a_post_never_reported_is_ignored_and_creates_nothing() {
    let app = spawn_app().await;
    let op1 = app.agent_key("op1");
    let v = report_ok(
        &app,
        &op1,
        json!([{"code": "TW-T001", "status": "cancelled", "body": "Never heard of it",
                "failure_reason": "dropped"}]),
    )
    .await;
    assert_eq!(v["ignored"], 1, "{v}");
    let r = result(&v, 0);
    assert_eq!(r["ok"], true, "{v}");
    assert_eq!(r["action"], "ignored", "{v}");
    assert_eq!(r["post_id"], Value::Null, "{v}");
    assert_eq!(r["matched_by"], Value::Null, "{v}");
    assert!(r["note"].is_string(), "{v}");
    assert_eq!(rows(&app, "posts").await, 0);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_report_without_a_match_creates_the_post_as_reported() {
    let app = spawn_app().await;
    let op1 = app.agent_key("op1");
    let v = report_ok(
        &app,
        &op1,
        json!([
            {"code": "TW-T001", "status": "published", "body": "Written in the tool",
             "platform_post_id": "thr-new", "permalink": "https://threads.net/p/new",
             "topic": "tea", "sponsored": true, "has_media": false,
             "published_at": at(-600)},
            {"code": "TW-I001", "status": "scheduled", "body": "Queued in the tool",
             "scheduled_for": at(3600)},
            {"code": "TW-T001", "status": "failed", "body": "Could not go out",
             "failure_reason": "rate limited"},
        ]),
    )
    .await;
    assert_eq!(v["inserted"], 3, "{v}");
    let p = assert_item(&v, 0, "inserted", "published");
    let s = assert_item(&v, 1, "inserted", "scheduled");
    let f = assert_item(&v, 2, "inserted", "failed");
    for i in 0..3 {
        assert_eq!(result(&v, i)["matched_by"], Value::Null, "{v}");
    }
    assert_eq!(
        rows(
            &app,
            &format!(
                "posts p JOIN account_slots s ON s.id = p.slot_id \
                 WHERE p.id = '{p}' AND p.origin = 'report' AND p.status = 'published' \
                   AND s.code = 'TW-T001' AND p.platform = 'threads' \
                   AND p.body = 'Written in the tool' AND p.topic = 'tea' AND p.sponsored \
                   AND p.platform_post_id = 'thr-new' AND p.has_media = false \
                   AND p.published_at < now() - interval '5 minutes'"
            )
        )
        .await,
        1
    );
    assert_eq!(post_status(&app, &s).await, "scheduled");
    assert_eq!(post_status(&app, &f).await, "failed");
    assert_eq!(rows(&app, "posts WHERE origin = 'report'").await, 3);
    assert_eq!(
        rows(&app, "review_events WHERE action LIKE 'reported %'").await,
        3
    );
    assert_eq!(rows(&app, "post_reports WHERE inserted = 3").await, 1);
    // A post created by a report was never approved: it is not on the approved list.
    assert_eq!(ids_of(&ok(&app.client.get(APPROVED, &op1).await)).len(), 0);
}

// ---------------------------------------------------------------------------------------------
// Each item on its own: what a status requires, malformed items

#[tokio::test(flavor = "multi_thread")]
async fn what_each_status_requires() {
    let app = spawn_app().await;
    let op1 = app.agent_key("op1");
    let v = report_ok(
        &app,
        &op1,
        json!([
            // 0: a new post without body
            {"code": "TW-T001", "status": "published", "permalink": "https://threads.net/p/0",
             "platform_post_id": "thr-nobody"},
            // 1: published without permalink
            {"code": "TW-T001", "status": "published", "body": "No link"},
            // 2: scheduled without scheduled_for
            {"code": "TW-T001", "status": "scheduled", "body": "No time"},
            // 3: failed without failure_reason
            {"code": "TW-T001", "status": "failed", "body": "No reason"},
            // 4: a permalink that is not http(s)
            {"code": "TW-T001", "status": "published", "body": "Odd link",
             "permalink": "ftp://threads.net/p/4"},
            // 5: a scheduled_for that is no time
            {"code": "TW-T001", "status": "scheduled", "body": "Bad time",
             "scheduled_for": "tomorrow morning"},
            // 6: published in the future
            {"code": "TW-T001", "status": "published", "body": "From the future",
             "permalink": "https://threads.net/p/6", "published_at": at(3600)},
            // 7: the one good item
            {"code": "TW-T001", "status": "published", "body": "All there",
             "permalink": "https://threads.net/p/7"},
        ]),
    )
    .await;
    assert_refused(&v, 0, "invalid", Some("body"));
    assert_refused(&v, 1, "rejected", None);
    assert!(
        result(&v, 1)["error"]["message"]
            .as_str()
            .unwrap()
            .contains("permalink"),
        "{v}"
    );
    assert_refused(&v, 2, "invalid", Some("scheduled_for"));
    assert_refused(&v, 3, "invalid", Some("failure_reason"));
    assert_refused(&v, 4, "invalid", Some("permalink"));
    assert_refused(&v, 5, "invalid", Some("scheduled_for"));
    assert_refused(&v, 6, "invalid", Some("published_at"));
    assert_item(&v, 7, "inserted", "published");
    assert_eq!(
        (v["inserted"].as_i64(), v["rejected"].as_i64()),
        (Some(1), Some(7)),
        "{v}"
    );
    assert_eq!(rows(&app, "posts").await, 1);
    assert_eq!(rows(&app, "posts WHERE body = 'All there'").await, 1);
    assert_eq!(
        rows(&app, "post_reports WHERE inserted = 1 AND rejected = 7").await,
        1
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_malformed_item_is_refused_and_the_others_are_processed() {
    let app = spawn_app().await;
    let op1 = app.agent_key("op1");
    let v = report_ok(
        &app,
        &op1,
        json!([
            {"code": "TW-T001", "status": "posted", "body": "Unknown status",
             "permalink": "https://threads.net/p/a"},
            {"code": "X".repeat(41), "status": "published", "body": "Code too long",
             "permalink": "https://threads.net/p/b"},
            {"code": "TW-T001", "status": "published", "body": "Fine",
             "permalink": "https://threads.net/p/c"},
            "not an object",
            {"code": "TW-T001", "status": "published", "body": "",
             "permalink": "https://threads.net/p/d"},
            {"code": "TW-T001", "status": "published", "body": "Fine too",
             "permalink": "https://threads.net/p/e", "post_id": "not-a-uuid"},
        ]),
    )
    .await;
    assert_refused(&v, 0, "invalid", Some("status"));
    assert_refused(&v, 1, "invalid", Some("code"));
    assert_item(&v, 2, "inserted", "published");
    assert_refused(&v, 3, "invalid", None);
    assert_refused(&v, 4, "invalid", Some("body"));
    assert_refused(&v, 5, "invalid", Some("post_id"));
    assert_eq!(v["rejected"], 5, "{v}");
    assert_eq!(rows(&app, "posts").await, 1);
}

// ---------------------------------------------------------------------------------------------
// Matching

#[tokio::test(flavor = "multi_thread")]
async fn a_later_report_matches_on_platform_post_id() {
    let app = spawn_app().await;
    let op1 = app.agent_key("op1");
    let v = report_ok(
        &app,
        &op1,
        json!([{"code": "TW-T001", "status": "scheduled", "body": "Queued elsewhere",
                "scheduled_for": at(1800), "platform_post_id": "thr-77"}]),
    )
    .await;
    let id = assert_item(&v, 0, "inserted", "scheduled");
    // No body the second time: the platform id is enough.
    let v = report_ok(
        &app,
        &op1,
        json!([{"code": "TW-T001", "status": "published", "platform_post_id": "thr-77",
                "permalink": "https://threads.net/p/77"}]),
    )
    .await;
    assert_eq!(assert_item(&v, 0, "updated", "published"), id);
    assert_eq!(result(&v, 0)["matched_by"], "platform_post_id");
    // The same report again changes nothing.
    let v = report_ok(
        &app,
        &op1,
        json!([{"code": "TW-T001", "status": "published", "platform_post_id": "thr-77",
                "permalink": "https://threads.net/p/77"}]),
    )
    .await;
    assert_eq!(assert_item(&v, 0, "unchanged", "published"), id);
    assert_eq!(v["unchanged"], 1, "{v}");
    assert_eq!(rows(&app, "posts").await, 1);
    assert_eq!(post_status(&app, &id).await, "published");
    assert_eq!(
        post_col(&app, &id, "permalink").await.as_deref(),
        Some("https://threads.net/p/77")
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_published_report_adopts_a_same_body_post_scheduled_within_a_day() {
    let app = spawn_app().await;
    let op1 = app.agent_key("op1");
    let near = approved_post(&app, &op1, "TW-T001", "Adopt me please").await;
    let far = approved_post(&app, &op1, "TW-T001", "Scheduled far away").await;
    report_ok(
        &app,
        &op1,
        json!([
            {"code": "TW-T001", "status": "scheduled", "post_id": near,
             "scheduled_for": at(3600), "platform_post_id": "tool-7"},
            {"code": "TW-T001", "status": "scheduled", "post_id": far,
             "scheduled_for": at(3 * 86_400), "platform_post_id": "tool-8"},
        ]),
    )
    .await;
    let v = report_ok(
        &app,
        &op1,
        json!([
            {"code": "TW-T001", "status": "published", "body": "  Adopt   me please ",
             "platform_post_id": "thr-7", "permalink": "https://threads.net/p/7"},
            {"code": "TW-T001", "status": "published", "body": "Scheduled far away",
             "platform_post_id": "thr-8", "permalink": "https://threads.net/p/8"},
        ]),
    )
    .await;
    assert_eq!(assert_item(&v, 0, "updated", "published"), near);
    assert_eq!(result(&v, 0)["matched_by"], "body");
    let note = result(&v, 0)["note"].as_str().expect("a note").to_owned();
    assert!(
        note.contains("thr-7") && note.contains("tool-7"),
        "the note explains the replaced id: {note}"
    );
    assert_eq!(
        post_col(&app, &near, "platform_post_id").await.as_deref(),
        Some("thr-7")
    );
    assert_eq!(
        post_col(&app, &near, "scheduler_ref").await.as_deref(),
        Some("tool-7")
    );
    assert_eq!(post_status(&app, &near).await, "published");

    // Three days away with another id is not the same post: a new one.
    let new = assert_item(&v, 1, "inserted", "published");
    assert_ne!(new, far);
    assert_eq!(result(&v, 1)["matched_by"], Value::Null);
    assert_eq!(post_status(&app, &far).await, "scheduled");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_service_post_keeps_its_body_and_a_reported_post_follows_edits() {
    let app = spawn_app().await;
    let op1 = app.agent_key("op1");
    let service = approved_post(&app, &op1, "TW-T001", "The reviewed body").await;
    app.sql(&format!(
        "UPDATE posts SET topic = 'reviewed topic' WHERE id = '{service}'"
    ))
    .await;
    let v = report_ok(
        &app,
        &op1,
        json!([
            {"code": "TW-T001", "status": "published", "post_id": service,
             "body": "Edited on the platform", "topic": "other topic", "sponsored": true,
             "permalink": "https://threads.net/p/s", "platform_post_id": "thr-s"},
            {"code": "TW-T001", "status": "published", "body": "First version",
             "topic": "t1", "permalink": "https://threads.net/p/r", "platform_post_id": "thr-r"},
        ]),
    )
    .await;
    assert_item(&v, 0, "updated", "published");
    assert!(
        result(&v, 0)["note"]
            .as_str()
            .is_some_and(|n| n.contains("body")),
        "{v}"
    );
    let reported = assert_item(&v, 1, "inserted", "published");
    assert_eq!(
        post_col(&app, &service, "body").await.as_deref(),
        Some("The reviewed body")
    );
    assert_eq!(
        post_col(&app, &service, "topic").await.as_deref(),
        Some("reviewed topic")
    );
    assert_eq!(
        post_col(&app, &service, "sponsored").await.as_deref(),
        Some("false")
    );
    assert_eq!(
        post_col(&app, &service, "origin").await.as_deref(),
        Some("service")
    );

    let v = report_ok(
        &app,
        &op1,
        json!([{"code": "TW-T001", "status": "published", "platform_post_id": "thr-r",
                "body": "Second version", "topic": "t2", "sponsored": true,
                "permalink": "https://threads.net/p/r"}]),
    )
    .await;
    assert_eq!(assert_item(&v, 0, "updated", "published"), reported);
    assert_eq!(
        post_col(&app, &reported, "body").await.as_deref(),
        Some("Second version")
    );
    assert_eq!(
        post_col(&app, &reported, "topic").await.as_deref(),
        Some("t2")
    );
    assert_eq!(
        post_col(&app, &reported, "sponsored").await.as_deref(),
        Some("true")
    );
    // The edited body is matched from now on.
    let v = report_ok(
        &app,
        &op1,
        json!([{"code": "TW-T001", "status": "published", "body": "Second  version",
                "permalink": "https://threads.net/p/r2"}]),
    )
    .await;
    assert_eq!(assert_item(&v, 0, "updated", "published"), reported);
    assert_eq!(result(&v, 0)["matched_by"], "body");
    assert_eq!(rows(&app, "posts").await, 2);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_platform_id_already_on_another_post_is_a_conflict() {
    let app = spawn_app().await;
    let op1 = app.agent_key("op1");
    let v = report_ok(
        &app,
        &op1,
        json!([{"code": "TW-T001", "status": "published", "body": "Holds the id",
                "platform_post_id": "thr-c1", "permalink": "https://threads.net/p/c1"}]),
    )
    .await;
    let holder = assert_item(&v, 0, "inserted", "published");
    let other = approved_post(&app, &op1, "TW-T001", "Wants the same id").await;
    let v = report_ok(
        &app,
        &op1,
        json!([
            {"code": "TW-T001", "status": "published", "post_id": other,
             "platform_post_id": "thr-c1", "permalink": "https://threads.net/p/c1b"},
            // TW-L001 is threads too: the id is on a post of another account.
            {"code": "TW-L001", "status": "published", "body": "Elsewhere",
             "platform_post_id": "thr-c1", "permalink": "https://threads.net/p/c1c"},
            // Instagram is another platform: the same id is another post.
            {"code": "TW-I001", "status": "published", "body": "On instagram",
             "platform_post_id": "thr-c1", "permalink": "https://instagram.com/p/c1"},
        ]),
    )
    .await;
    assert_refused(&v, 0, "conflict", None);
    assert_refused(&v, 1, "conflict", None);
    assert_item(&v, 2, "inserted", "published");
    assert_eq!(post_status(&app, &other).await, "approved");
    assert_eq!(post_col(&app, &other, "platform_post_id").await, None);
    assert_eq!(
        rows(&app, "posts WHERE platform_post_id = 'thr-c1'").await,
        2
    );
    assert_eq!(
        post_col(&app, &holder, "permalink").await.as_deref(),
        Some("https://threads.net/p/c1")
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn other_agents_accounts_and_posts_and_other_workspaces() {
    let app = spawn_app().await;
    let op1 = app.agent_key("op1");
    let op2 = app.agent_key("op2");
    let jp1 = app.agent_key("jp1");
    let leo = approved_post(&app, &op2, "TW-T002", "Leo's post").await;
    let yui = approved_post(&app, &jp1, "JP-T001", "Yui's post").await;
    let v = report_ok(
        &app,
        &op2,
        json!([{"code": "TW-T002", "status": "published", "body": "Leo's published",
                "platform_post_id": "thr-leo", "permalink": "https://threads.net/p/leo"}]),
    )
    .await;
    let leo_published = assert_item(&v, 0, "inserted", "published");

    let v = report_ok(
        &app,
        &op1,
        json!([
            // 0: another agent's account
            {"code": "TW-T002", "status": "published", "body": "Not mine",
             "permalink": "https://threads.net/p/x0"},
            // 1: another workspace's account
            {"code": "JP-T001", "status": "published", "body": "Not here",
             "permalink": "https://threads.net/p/x1"},
            // 2: another agent's post, named on my account
            {"code": "TW-T001", "status": "scheduled", "post_id": leo,
             "scheduled_for": at(600)},
            // 3: another workspace's post
            {"code": "TW-T001", "status": "scheduled", "post_id": yui,
             "scheduled_for": at(600)},
            // 4: another agent's platform id (threads, same organization)
            {"code": "TW-T001", "status": "published", "platform_post_id": "thr-leo",
             "permalink": "https://threads.net/p/x4"},
            // 5: an unknown code
            {"code": "TW-NOPE", "status": "published", "body": "Nobody",
             "permalink": "https://threads.net/p/x5"},
            // 6: a post id nobody has
            {"code": "TW-T001", "status": "scheduled",
             "post_id": "00000000-0000-4000-8000-000000000000", "scheduled_for": at(600)},
            // 7: good
            {"code": "TW-T001", "status": "published", "body": "Mine",
             "permalink": "https://threads.net/p/x7"},
        ]),
    )
    .await;
    assert_refused(&v, 0, "forbidden", None);
    assert_refused(&v, 1, "not_found", None);
    assert_refused(&v, 2, "forbidden", None);
    assert_refused(&v, 3, "not_found", None);
    assert_refused(&v, 4, "forbidden", None);
    assert_refused(&v, 5, "not_found", None);
    assert_refused(&v, 6, "not_found", None);
    assert_item(&v, 7, "inserted", "published");
    assert_eq!(post_status(&app, &leo).await, "approved");
    assert_eq!(post_status(&app, &yui).await, "approved");
    assert_eq!(
        post_col(&app, &leo_published, "permalink").await.as_deref(),
        Some("https://threads.net/p/leo")
    );
    assert_eq!(
        rows(
            &app,
            "posts p JOIN agents a ON a.id = p.agent_id WHERE a.name = 'op1'"
        )
        .await,
        1
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn another_organizations_platform_id_never_matches() {
    let app = spawn_app().await;
    let op1 = app.agent_key("op1");
    let other1 = app.agent_key("other1");
    let v = report_ok(
        &app,
        &other1,
        json!([{"code": "TW-T001", "status": "published", "body": "Zoe's post",
                "platform_post_id": "X", "permalink": "https://threads.net/p/zoe"}]),
    )
    .await;
    let zoe = assert_item(&v, 0, "inserted", "published");

    // op1 reports the same platform id on its own TW-T001: a new post of its organization.
    let v = report_ok(
        &app,
        &op1,
        json!([
            {"code": "TW-T001", "status": "published", "body": "Mia's post",
             "platform_post_id": "X", "permalink": "https://threads.net/p/mia"},
            // The other organization's post id is unknown here.
            {"code": "TW-T001", "status": "published", "post_id": zoe,
             "permalink": "https://threads.net/p/zoe2"},
        ]),
    )
    .await;
    let mia = assert_item(&v, 0, "inserted", "published");
    assert_eq!(result(&v, 0)["matched_by"], Value::Null, "{v}");
    assert_ne!(mia, zoe);
    assert_refused(&v, 1, "not_found", None);

    assert_eq!(rows(&app, "posts WHERE platform_post_id = 'X'").await, 2);
    assert_eq!(
        post_col(&app, &zoe, "body").await.as_deref(),
        Some("Zoe's post")
    );
    assert_eq!(
        post_col(&app, &zoe, "permalink").await.as_deref(),
        Some("https://threads.net/p/zoe")
    );
    assert_eq!(
        rows(
            &app,
            &format!(
                "posts p JOIN organizations o ON o.id = p.organization_id \
                 WHERE p.id = '{mia}' AND o.name = 'Acme'"
            )
        )
        .await,
        1
    );
    // Each later matches its own.
    let v = report_ok(
        &app,
        &other1,
        json!([{"code": "TW-T001", "status": "published", "platform_post_id": "X",
                "permalink": "https://threads.net/p/zoe3"}]),
    )
    .await;
    assert_eq!(assert_item(&v, 0, "updated", "published"), zoe);
    assert_eq!(
        post_col(&app, &mia, "permalink").await.as_deref(),
        Some("https://threads.net/p/mia")
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn an_ambiguous_legacy_code_needs_the_platform() {
    let app = spawn_app().await;
    let op1 = app.agent_key("op1");
    let item = json!({"code": "OLD1", "status": "published", "body": "Legacy post",
                      "platform_post_id": "tt-1", "permalink": "https://tiktok.com/v/1"});
    let r = report(&app, &op1, json!([item])).await;
    let v = assert_error(&r, 422, "rejected");
    assert_refused(&v, 0, "ambiguous_code", None);
    assert_eq!(rows(&app, "posts").await, 0);

    let mut with_platform = item.clone();
    with_platform["platform"] = json!("tiktok");
    let v = report_ok(&app, &op1, json!([with_platform])).await;
    let id = assert_item(&v, 0, "inserted", "published");
    assert_eq!(
        rows(
            &app,
            "posts WHERE slot_id = (SELECT id FROM account_slots WHERE code = 'TW-L001')"
        )
        .await,
        0
    );
    assert_eq!(
        rows(
            &app,
            &format!(
                "posts p JOIN account_slots s ON s.id = p.slot_id \
                 WHERE p.id = '{id}' AND s.code = 'TW-L002' AND p.platform = 'tiktok'"
            )
        )
        .await,
        1
    );
    // The current code needs no platform, in any case.
    let v = report_ok(
        &app,
        &op1,
        json!([{"code": " tw-l001 ", "status": "published", "body": "Current code",
                "permalink": "https://threads.net/p/l1"}]),
    )
    .await;
    assert_item(&v, 0, "inserted", "published");
}

#[tokio::test(flavor = "multi_thread")]
async fn market_local_times_are_read_in_the_accounts_zone() {
    let app = spawn_app().await;
    let op1 = app.agent_key("op1");
    let jp1 = app.agent_key("jp1");
    let v = report_ok(
        &app,
        &op1,
        json!([{"code": "TW-T001", "status": "scheduled", "body": "Taipei morning",
                "scheduled_for": "2030-01-02 09:30"}]),
    )
    .await;
    let tw = assert_item(&v, 0, "inserted", "scheduled");
    assert_eq!(
        rows(
            &app,
            &format!("posts WHERE id = '{tw}' AND scheduled_for = '2030-01-02T01:30:00Z'")
        )
        .await,
        1
    );
    let v = report_ok(
        &app,
        &jp1,
        json!([{"code": "JP-T001", "status": "scheduled", "body": "Tokyo morning",
                "scheduled_for": "2030-01-02 09:30:15"}]),
    )
    .await;
    let jp = assert_item(&v, 0, "inserted", "scheduled");
    assert_eq!(
        rows(
            &app,
            &format!("posts WHERE id = '{jp}' AND scheduled_for = '2030-01-02T00:30:15Z'")
        )
        .await,
        1
    );
    // A published_at in market-local time too (an hour ago in Taipei).
    let hour_ago = Timestamp::from_second(now().as_second() - 3600).unwrap();
    let local = hour_ago
        .in_tz("Asia/Taipei")
        .unwrap()
        .strftime("%Y-%m-%d %H:%M:%S")
        .to_string();
    let v = report_ok(
        &app,
        &op1,
        json!([{"code": "TW-T001", "status": "published", "body": "An hour ago",
                "published_at": local, "permalink": "https://threads.net/p/h"}]),
    )
    .await;
    let h = assert_item(&v, 0, "inserted", "published");
    assert_eq!(
        rows(
            &app,
            &format!("posts WHERE id = '{h}' AND published_at = '{hour_ago}'")
        )
        .await,
        1
    );
}

// ---------------------------------------------------------------------------------------------
// All rejected, idempotency, concurrency, work_today

fn report_request(key: &str, idem: &str, posts: Value) -> Request {
    Request::new("POST", REPORT)
        .bearer(key)
        .header("Idempotency-Key", idem)
        .json(&json!({ "posts": posts }))
}

/// A NUL (which no text column stores) inside one item, in a value or a key, is that item's
/// answer; the rest is written and the answer, kept for the replay, holds no NUL.
#[tokio::test(flavor = "multi_thread")]
async fn a_nul_inside_one_item_refuses_only_that_item() {
    let app = spawn_app().await;
    let op1 = app.agent_key("op1");
    let batch = json!([
        {"code": "TW-T001", "status": "published", "body": "Clean one",
         "platform_post_id": "thr-clean", "permalink": "https://threads.net/p/clean"},
        {"code": "TW-T001", "status": "published", "body": "Nul\u{0}here",
         "platform_post_id": "thr-nul", "permalink": "https://threads.net/p/nul"},
        {"code": "TW-T001", "status": "published", "body\u{0}": "key"},
    ]);
    let first = app
        .client
        .send(report_request(&op1, "k-nul", batch.clone()))
        .await;
    let v = ok(&first);
    assert_item(&v, 0, "inserted", "published");
    assert_refused(&v, 1, "invalid", Some("body"));
    assert_refused(&v, 2, "invalid", Some("body\u{FFFD}"));
    let again = app.client.send(report_request(&op1, "k-nul", batch)).await;
    assert_eq!(again.header("idempotent-replayed"), Some("true"));
    assert_eq!(again.json(), v, "the replay is the first answer");
    // Outside the batch a NUL still refuses the request, naming where.
    let one = json!([{"code": "TW-T001", "status": "published", "body": "Clean two",
                      "platform_post_id": "thr-clean-2", "permalink": "https://threads.net/p/c2"}]);
    let r = app
        .client
        .post(REPORT, &op1, &json!({"posts": one, "x\u{0}": 1}))
        .await;
    let v = assert_error(&r, 400, "invalid_request");
    assert_eq!(v["field"], "x\u{0}", "{v}");
    let r = app
        .client
        .post(REPORT, &op1, &json!({"posts": one, "request_id": "k\u{0}"}))
        .await;
    let v = assert_error(&r, 400, "invalid_request");
    assert_eq!(v["field"], "request_id", "{v}");
    assert_eq!(
        rows(&app, "post_reports").await,
        1,
        "only the first report was written"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn every_item_refused_is_422_writes_nothing_and_leaves_the_key_free() {
    let app = spawn_app().await;
    let op1 = app.agent_key("op1");
    let id = approved_post(&app, &op1, "TW-T001", "Approved, waiting").await;
    let events = rows(&app, "review_events").await;
    let bad = json!([
        {"code": "TW-T001", "status": "scheduled", "post_id": id},
        {"code": "TW-T001", "status": "published", "body": "No link"},
    ]);
    let r = app.client.send(report_request(&op1, "k-all", bad)).await;
    let v = assert_error(&r, 422, "rejected");
    assert_eq!(r.header("idempotent-replayed"), None);
    assert_eq!(v["rejected"], 2, "{v}");
    assert_eq!(v["report_id"], Value::Null, "{v}");
    assert_refused(&v, 0, "invalid", Some("scheduled_for"));
    assert_refused(&v, 1, "rejected", None);
    assert_eq!(rows(&app, "post_reports").await, 0);
    assert_eq!(rows(&app, "review_events").await, events);
    assert_eq!(rows(&app, "posts").await, 1);
    assert_eq!(post_status(&app, &id).await, "approved");

    // Fixed, under the same key: it runs.
    let fixed = json!([
        {"code": "TW-T001", "status": "scheduled", "post_id": id, "scheduled_for": at(3600)},
        {"code": "TW-T001", "status": "published", "body": "No link",
         "permalink": "https://threads.net/p/fixed"},
    ]);
    let r = app.client.send(report_request(&op1, "k-all", fixed)).await;
    let v = ok(&r);
    assert_eq!(r.header("idempotent-replayed"), None);
    assert_eq!(
        (v["updated"].as_i64(), v["inserted"].as_i64()),
        (Some(1), Some(1)),
        "{v}"
    );
    assert_eq!(rows(&app, "post_reports").await, 1);
    assert_eq!(post_status(&app, &id).await, "scheduled");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_partly_successful_report_occupies_the_key() {
    let app = spawn_app().await;
    let op1 = app.agent_key("op1");
    let batch = json!([
        {"code": "TW-T001", "status": "published", "body": "Goes in",
         "permalink": "https://threads.net/p/in", "platform_post_id": "thr-in"},
        {"code": "TW-T001", "status": "published", "body": "No link"},
    ]);
    let first = app
        .client
        .send(report_request(&op1, "k-part", batch.clone()))
        .await;
    let v = ok(&first);
    assert_eq!(
        (v["inserted"].as_i64(), v["rejected"].as_i64()),
        (Some(1), Some(1)),
        "{v}"
    );
    assert_eq!(first.header("idempotent-replayed"), None);

    let again = app
        .client
        .send(report_request(&op1, "k-part", batch.clone()))
        .await;
    assert_eq!(again.status, 200);
    assert_eq!(again.header("idempotent-replayed"), Some("true"));
    assert_eq!(again.json(), v, "the replay is the first answer");
    assert_eq!(rows(&app, "post_reports").await, 1);
    assert_eq!(rows(&app, "posts").await, 1);

    // Other content under the same key.
    let mut other = batch.clone();
    other[1]["permalink"] = json!("https://threads.net/p/fixed");
    let r = app.client.send(report_request(&op1, "k-part", other)).await;
    assert_error(&r, 422, "idempotency_mismatch");
    assert_eq!(rows(&app, "post_reports").await, 1);
    assert_eq!(rows(&app, "posts").await, 1);

    // The key belongs to the agent: another agent may use the same key.
    let other1 = app.agent_key("other1");
    let r = app
        .client
        .send(report_request(&other1, "k-part", batch))
        .await;
    assert_eq!(r.status, 200, "{}", String::from_utf8_lossy(&r.body));
    assert_eq!(r.header("idempotent-replayed"), None);
    assert_eq!(rows(&app, "post_reports").await, 2);
}

#[tokio::test(flavor = "multi_thread")]
async fn two_identical_new_post_reports_at_once_create_one_post() {
    let app = spawn_app().await;
    let op1 = app.agent_key("op1");
    for round in 0..4 {
        let body = format!("Twin post {round}");
        let posts = json!([{"code": "TW-T001", "status": "scheduled", "body": body,
                            "scheduled_for": at(7200)}]);
        let (a, b) = tokio::join!(
            report(&app, &op1, posts.clone()),
            report(&app, &op1, posts.clone())
        );
        let (a, b) = (ok(&a), ok(&b));
        assert_eq!(
            rows(&app, &format!("posts WHERE body = '{body}'")).await,
            1,
            "round {round}: {a} {b}"
        );
        let mut actions = [
            result(&a, 0)["action"].as_str().unwrap().to_owned(),
            result(&b, 0)["action"].as_str().unwrap().to_owned(),
        ];
        actions.sort();
        assert_eq!(actions, ["inserted", "unchanged"], "round {round}: {a} {b}");
        assert_eq!(
            result(&a, 0)["post_id"],
            result(&b, 0)["post_id"],
            "round {round}"
        );
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn work_today_shows_the_last_report() {
    let app = spawn_app().await;
    let op1 = app.agent_key("op1");
    let day = ok(&app.client.get(&format!("{AGENT}/work/today"), &op1).await);
    assert_eq!(day["last_report_at"], Value::Null, "{day}");

    // A report that writes nothing does not count.
    let r = report(
        &app,
        &op1,
        json!([{"code": "TW-T001", "status": "published", "body": "No link"}]),
    )
    .await;
    assert_eq!(r.status, 422);
    let day = ok(&app.client.get(&format!("{AGENT}/work/today"), &op1).await);
    assert_eq!(day["last_report_at"], Value::Null, "{day}");

    let before = now();
    let v = report_ok(
        &app,
        &op1,
        json!([{"code": "TW-T001", "status": "published", "body": "Reported",
                "permalink": "https://threads.net/p/r"}]),
    )
    .await;
    let day = ok(&app.client.get(&format!("{AGENT}/work/today"), &op1).await);
    let last: Timestamp = day["last_report_at"]
        .as_str()
        .expect("last_report_at is set")
        .parse()
        .unwrap();
    assert!(
        last.as_second() >= before.as_second() - 1 && last <= now(),
        "{last}"
    );
    let received: Timestamp = v["received_at"].as_str().unwrap().parse().unwrap();
    assert_eq!(last.as_second(), received.as_second());
    // Another agent has not reported.
    let op2 = app.agent_key("op2");
    let day = ok(&app.client.get(&format!("{AGENT}/work/today"), &op2).await);
    assert_eq!(day["last_report_at"], Value::Null, "{day}");
}

// ---------------------------------------------------------------------------------------------
// POST /metrics

/// A post of op1's TW-T001 reported published with platform id `pid`; returns its id.
async fn published(app: &TestApp, key: &str, code: &str, pid: &str) -> String {
    let v = report_ok(
        app,
        key,
        json!([{"code": code, "status": "published", "body": format!("Published {pid}"),
                "platform_post_id": pid, "permalink": format!("https://threads.net/p/{pid}")}]),
    )
    .await;
    assert_item(&v, 0, "inserted", "published")
}

async fn metrics(app: &TestApp, key: &str, body: Value) -> Response {
    app.client.post(METRICS, key, &body).await
}

async fn metrics_ok(app: &TestApp, key: &str, body: Value) -> Value {
    let r = metrics(app, key, body).await;
    assert_eq!(r.status, 200, "{}", String::from_utf8_lossy(&r.body));
    r.json()
}

/// views,likes,replies,reposts,shares of one stored capture ("-" for null); None without row.
async fn counters(app: &TestApp, post: &str, captured_at: &str) -> Option<String> {
    text(
        app,
        &format!(
            "SELECT concat_ws(',', coalesce(views::text, '-'), coalesce(likes::text, '-'), \
                    coalesce(replies::text, '-'), coalesce(reposts::text, '-'), \
                    coalesce(shares::text, '-')) AS t \
             FROM post_metrics WHERE post_id = '{post}' AND captured_at = '{captured_at}'"
        ),
    )
    .await
}

fn refused_item<'a>(v: &'a Value, list: &str, index: usize) -> &'a Value {
    v["refused"]
        .as_array()
        .expect("refused[]")
        .iter()
        .find(|r| r["list"] == list && r["index"] == index)
        .unwrap_or_else(|| panic!("{list}[{index}] is not refused: {v}"))
}

#[tokio::test(flavor = "multi_thread")]
async fn metrics_captured_at_must_be_recent_and_not_ahead() {
    let app = spawn_app().await;
    let op1 = app.agent_key("op1");
    let followers = |captured_at: String| json!({"captured_at": captured_at, "accounts": [{"code": "TW-T001", "followers": 10}]});
    for bad in [at(600), at(-61 * 86_400)] {
        let r = metrics(&app, &op1, followers(bad.clone())).await;
        let v = assert_error(&r, 422, "rejected");
        assert_eq!(v["field"], "captured_at", "{bad}: {v}");
    }
    // A malformed time: 400 naming captured_at, like every other time field.
    for bad in ["yesterday", "2026-13-45 10:00:00", "2026-11-21T10:00:00"] {
        let r = metrics(&app, &op1, followers(bad.to_owned())).await;
        let v = assert_error(&r, 400, "invalid_request");
        assert_eq!(v["field"], "captured_at", "{bad}: {v}");
    }
    let v = assert_error(
        &metrics(&app, &op1, followers(String::new())).await,
        400,
        "invalid_request",
    );
    assert_eq!(v["field"], "captured_at", "{v}");
    assert_eq!(rows(&app, "account_metrics").await, 0);

    // A little ahead (clock skew) and 59 days back are fine.
    metrics_ok(&app, &op1, followers(at(120))).await;
    metrics_ok(&app, &op1, followers(at(-59 * 86_400))).await;
    assert_eq!(rows(&app, "account_metrics").await, 2);
}

#[tokio::test(flavor = "multi_thread")]
async fn metrics_local_captured_at_is_read_in_the_market_zone() {
    let app = spawn_app().await;
    let op1 = app.agent_key("op1");
    let jp1 = app.agent_key("jp1");
    let hour_ago = Timestamp::from_second(now().as_second() - 3600).unwrap();
    let local = |zone: &str| {
        hour_ago
            .in_tz(zone)
            .unwrap()
            .strftime("%Y-%m-%d %H:%M:%S")
            .to_string()
    };
    // op1's accounts are all in Taiwan.
    let v = metrics_ok(
        &app,
        &op1,
        json!({"captured_at": local("Asia/Taipei"),
               "accounts": [{"code": "TW-T001", "followers": 100}]}),
    )
    .await;
    assert_eq!(v["captured_at"], hour_ago.to_string(), "{v}");
    // jp1's are in Japan.
    let v = metrics_ok(
        &app,
        &jp1,
        json!({"captured_at": local("Asia/Tokyo"),
               "accounts": [{"code": "JP-T001", "followers": 200}]}),
    )
    .await;
    assert_eq!(v["captured_at"], hour_ago.to_string(), "{v}");
    assert_eq!(
        rows(
            &app,
            &format!("account_metrics WHERE captured_at = '{hour_ago}'")
        )
        .await,
        2
    );

    // Once jp1's accounts span two markets, local times are read in Taipei.
    app.sql(
        "INSERT INTO account_slots (organization_id, workspace_id, persona_id, code, platform, \
                                    market, timezone) \
         SELECT organization_id, workspace_id, persona_id, 'US-T001', 'threads', 'US', \
                'America/New_York' FROM account_slots WHERE code = 'JP-T001'",
    )
    .await;
    let v = metrics_ok(
        &app,
        &jp1,
        json!({"captured_at": local("Asia/Taipei"),
               "accounts": [{"code": "JP-T001", "followers": 210}]}),
    )
    .await;
    assert_eq!(v["captured_at"], hour_ago.to_string(), "{v}");
}

#[tokio::test(flavor = "multi_thread")]
async fn the_same_captured_at_overwrites_and_omitted_counters_stay() {
    let app = spawn_app().await;
    let op1 = app.agent_key("op1");
    let post = published(&app, &op1, "TW-T001", "thr-m1").await;
    let t = at(-1800);
    let v = metrics_ok(
        &app,
        &op1,
        json!({"captured_at": t, "posts": [{"post_id": post, "views": 10, "likes": 2}],
               "accounts": [{"code": "TW-T001", "followers": 500}]}),
    )
    .await;
    assert_eq!(
        (
            v["posts_written"].as_i64(),
            v["accounts_written"].as_i64(),
            v["zeros_kept_back"].as_i64()
        ),
        (Some(1), Some(1), Some(0)),
        "{v}"
    );
    assert_eq!(v["refused"], json!([]), "{v}");
    assert_eq!(
        counters(&app, &post, &t).await.as_deref(),
        Some("10,2,-,-,-")
    );

    // Same capture: views overwritten, likes kept, replies added; followers overwritten.
    let v = metrics_ok(
        &app,
        &op1,
        json!({"captured_at": t,
               "posts": [{"code": "TW-T001", "platform_post_id": "thr-m1",
                          "views": 25, "replies": 1}],
               "accounts": [{"code": "TW-T001", "followers": 520}]}),
    )
    .await;
    assert_eq!(v["posts_written"], 1, "{v}");
    assert_eq!(
        counters(&app, &post, &t).await.as_deref(),
        Some("25,2,1,-,-")
    );
    assert_eq!(
        rows(&app, &format!("post_metrics WHERE post_id = '{post}'")).await,
        1
    );
    assert_eq!(
        rows(
            &app,
            &format!("account_metrics WHERE captured_at = '{t}' AND followers = 520")
        )
        .await,
        1
    );
    assert_eq!(rows(&app, "account_metrics").await, 1);

    // The person sees the latest numbers on the post.
    let ann = app.personal_key("ann@acme.test");
    let detail = ok(&app
        .client
        .get(&format!("{USER}/posts/published"), &ann)
        .await);
    let card = detail["posts"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["id"] == post.as_str())
        .expect("the post is listed");
    assert_eq!(card["metrics"]["views"], 25, "{card}");
    assert_eq!(card["metrics"]["likes"], 2, "{card}");
}

/// Batches of one account run one at a time, and the zero rule of a batch that waited for the
/// account reads the followers the batch before it committed meanwhile.
#[tokio::test(flavor = "multi_thread")]
async fn a_zero_that_waited_for_the_account_sees_the_followers_written_meanwhile() {
    use diesel_async::RunQueryDsl;
    let app = spawn_app().await;
    let op1 = app.agent_key("op1");
    let (t1, t2) = (at(-1800), at(-60));
    // Another batch holds TW-T001 and has written 500 followers, not yet committed.
    let mut holder = app.connect().await;
    for statement in [
        "BEGIN".to_owned(),
        "SELECT 1 FROM account_slots WHERE code = 'TW-T001' FOR UPDATE".to_owned(),
        format!(
            "INSERT INTO account_metrics (slot_id, captured_at, followers) \
             SELECT id, '{t1}', 500 FROM account_slots WHERE code = 'TW-T001'"
        ),
    ] {
        diesel::sql_query(&statement)
            .execute(&mut holder)
            .await
            .unwrap_or_else(|e| panic!("{statement}: {e}"));
    }
    #[derive(diesel::QueryableByName)]
    struct Pid {
        #[diesel(sql_type = diesel::sql_types::Integer)]
        pid: i32,
    }
    let pid = diesel::sql_query("SELECT pg_backend_pid() AS pid")
        .get_result::<Pid>(&mut holder)
        .await
        .expect("the holder's pid")
        .pid;

    let zero = metrics(
        &app,
        &op1,
        json!({"captured_at": t2, "accounts": [{"code": "TW-T001", "followers": 0}]}),
    );
    let release = async {
        // Commit only once the zero's batch waits on the holder.
        for _ in 0..500 {
            let waiting = app
                .count(&format!(
                    "SELECT count(*) AS n FROM pg_stat_activity \
                     WHERE {pid} = ANY(pg_blocking_pids(pid))"
                ))
                .await;
            if waiting > 0 {
                break;
            }
            tokio::time::sleep(std::time::Duration::from_millis(20)).await;
        }
        assert!(
            app.count(&format!(
                "SELECT count(*) AS n FROM pg_stat_activity WHERE {pid} = ANY(pg_blocking_pids(pid))"
            ))
            .await
                > 0,
            "the zero's batch never waited for the account"
        );
        diesel::sql_query("COMMIT")
            .execute(&mut holder)
            .await
            .expect("commit the holder");
    };
    let (res, ()) = tokio::join!(zero, release);
    // Its one item kept back, nothing was recorded: 422 with the refusal.
    assert_eq!(res.status, 422, "{}", res.text());
    let body = res.json();
    let r = refused_item(&body, "accounts", 0);
    assert_eq!(r["code"], "rejected", "{r}");
    assert!(
        r["reason"].as_str().unwrap().contains("followers fell"),
        "{r}"
    );
    assert_eq!(
        rows(&app, &format!("account_metrics WHERE captured_at = '{t2}'")).await,
        0
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_value_falling_from_positive_to_zero_is_kept_back() {
    let app = spawn_app().await;
    let op1 = app.agent_key("op1");
    let post = published(&app, &op1, "TW-T001", "thr-z").await;
    let (t1, t2, t3) = (at(-3600), at(-1800), at(-60));
    metrics_ok(
        &app,
        &op1,
        json!({"captured_at": t1,
               "posts": [{"post_id": post, "views": 100, "likes": 5, "shares": 0}],
               "accounts": [{"code": "TW-T001", "followers": 40}]}),
    )
    .await;
    let v = metrics_ok(
        &app,
        &op1,
        json!({"captured_at": t2,
               "posts": [{"post_id": post, "views": 0, "likes": 6, "shares": 0}],
               "accounts": [{"code": "TW-T001", "followers": 0}]}),
    )
    .await;
    assert_eq!(
        (
            v["posts_written"].as_i64(),
            v["accounts_written"].as_i64(),
            v["zeros_kept_back"].as_i64()
        ),
        (Some(1), Some(0), Some(2)),
        "{v}"
    );
    // views fell to 0: not written; shares was 0 already: written.
    assert_eq!(
        counters(&app, &post, &t2).await.as_deref(),
        Some("-,6,-,-,0")
    );
    let r = refused_item(&v, "accounts", 0);
    assert_eq!(r["code"], "rejected", "{v}");
    assert!(r["reason"].as_str().unwrap().contains("followers"), "{v}");
    assert_eq!(
        rows(&app, &format!("account_metrics WHERE captured_at = '{t2}'")).await,
        0
    );

    // Only a zero that fell: nothing is writable.
    let r = metrics(
        &app,
        &op1,
        json!({"captured_at": t3, "posts": [{"post_id": post, "views": 0}]}),
    )
    .await;
    let v = assert_error(&r, 422, "rejected");
    let item = refused_item(&v, "posts", 0);
    assert_eq!(item["code"], "rejected", "{v}");
    assert!(item["reason"].as_str().unwrap().contains("views"), "{v}");
    assert_eq!(counters(&app, &post, &t3).await, None);
}

#[tokio::test(flavor = "multi_thread")]
async fn metrics_items_are_refused_one_by_one() {
    let app = spawn_app().await;
    let op1 = app.agent_key("op1");
    let op2 = app.agent_key("op2");
    let other1 = app.agent_key("other1");
    let mine = published(&app, &op1, "TW-T001", "thr-mine").await;
    let quiet = published(&app, &op1, "TW-T001", "thr-quiet").await;
    let approved = approved_post(&app, &op1, "TW-T001", "Approved, not out yet").await;
    let leos = published(&app, &op2, "TW-T002", "thr-leo").await;
    let yuis = published(&app, &app.agent_key("jp1"), "JP-T001", "thr-yui").await;
    published(&app, &other1, "TW-T001", "thr-zoe").await;
    // Published, but reported without a platform id: reachable by post_id only.
    let v = report_ok(
        &app,
        &op1,
        json!([{"code": "TW-I001", "status": "published", "body": "No platform id",
                "permalink": "https://instagram.com/p/n"}]),
    )
    .await;
    let no_pid = assert_item(&v, 0, "inserted", "published");

    let t = at(-600);
    let v = metrics_ok(
        &app,
        &op1,
        json!({"captured_at": t,
        "posts": [
            {"post_id": quiet},
            {"post_id": approved, "views": 3},
            {"post_id": leos, "views": 3},
            {"code": "TW-T001", "platform_post_id": "thr-mine", "views": 9, "shares": 1},
            {"code": "TW-T001", "views": 3},
            {"post_id": "00000000-0000-4000-8000-000000000000", "views": 3},
            {"code": "TW-T001", "platform_post_id": "thr-zoe", "views": 3},
            {"code": "TW-T002", "platform_post_id": "thr-leo", "views": 3},
            {"post_id": no_pid, "likes": 4},
            {"post_id": yuis, "views": 3},
        ],
        "accounts": [
            {"code": "TW-T001", "followers": 1500},
            {"code": "TW-T002", "followers": 3},
            {"code": "JP-T001", "followers": 3},
            {"code": "TW-I001"},
            {"code": "OLD1", "followers": 3},
            {"code": "OLD1", "platform": "tiktok", "followers": 77},
        ]}),
    )
    .await;
    assert_eq!(
        (v["posts_written"].as_i64(), v["accounts_written"].as_i64()),
        (Some(2), Some(2)),
        "{v}"
    );
    let code = |list: &str, i: usize| refused_item(&v, list, i)["code"].clone();
    assert_eq!(code("posts", 0), "rejected");
    assert!(
        refused_item(&v, "posts", 0)["reason"]
            .as_str()
            .unwrap()
            .contains("no values"),
        "{v}"
    );
    assert_eq!(code("posts", 1), "rejected");
    assert!(
        refused_item(&v, "posts", 1)["reason"]
            .as_str()
            .unwrap()
            .contains("approved"),
        "{v}"
    );
    assert_eq!(code("posts", 2), "forbidden");
    assert_eq!(code("posts", 4), "invalid");
    assert_eq!(code("posts", 5), "not_found");
    assert_eq!(code("posts", 6), "not_found", "another organization's id");
    assert_eq!(code("posts", 7), "forbidden");
    assert_eq!(code("accounts", 1), "forbidden");
    assert_eq!(code("accounts", 2), "not_found");
    assert_eq!(code("accounts", 3), "rejected");
    assert_eq!(code("accounts", 4), "ambiguous_code");
    assert_eq!(code("posts", 9), "not_found", "another workspace's post");
    assert_eq!(v["refused"].as_array().unwrap().len(), 12, "{v}");

    assert_eq!(
        counters(&app, &mine, &t).await.as_deref(),
        Some("9,-,-,-,1")
    );
    assert_eq!(
        counters(&app, &no_pid, &t).await.as_deref(),
        Some("-,4,-,-,-")
    );
    assert_eq!(counters(&app, &quiet, &t).await, None);
    assert_eq!(rows(&app, "post_metrics").await, 2);
    assert_eq!(
        rows(
            &app,
            &format!(
                "account_metrics m JOIN account_slots s ON s.id = m.slot_id \
                 WHERE m.captured_at = '{t}' AND ((s.code = 'TW-T001' AND m.followers = 1500) \
                    OR (s.code = 'TW-L002' AND m.followers = 77))"
            )
        )
        .await,
        2
    );
    assert_eq!(rows(&app, "account_metrics").await, 2);
}

#[tokio::test(flavor = "multi_thread")]
async fn metrics_with_nothing_writable_or_malformed() {
    let app = spawn_app().await;
    let op1 = app.agent_key("op1");
    let approved = approved_post(&app, &op1, "TW-T001", "Not published").await;
    let t = at(-60);

    let r = metrics(
        &app,
        &op1,
        json!({"captured_at": t, "posts": [{"post_id": approved, "views": 1}],
               "accounts": [{"code": "TW-T002", "followers": 1}]}),
    )
    .await;
    let v = assert_error(&r, 422, "rejected");
    assert_eq!(v["refused"].as_array().unwrap().len(), 2, "{v}");
    assert_eq!(refused_item(&v, "posts", 0)["code"], "rejected");
    assert_eq!(refused_item(&v, "accounts", 0)["code"], "forbidden");

    for body in [
        json!({"captured_at": t}),
        json!({"captured_at": t, "posts": [], "accounts": []}),
    ] {
        let v = assert_error(&metrics(&app, &op1, body).await, 400, "invalid_request");
        assert_eq!(v["field"], "posts", "{v}");
    }
    // An item that cannot be read is refused on its own (invalid, naming its field): alone,
    // nothing is written (422); beside a good item, the good one is written.
    let v = assert_error(
        &metrics(
            &app,
            &op1,
            json!({"captured_at": t, "posts": [{"post_id": approved, "views": -1}]}),
        )
        .await,
        422,
        "rejected",
    );
    let item = refused_item(&v, "posts", 0);
    assert_eq!(
        (&item["code"], &item["field"]),
        (&json!("invalid"), &json!("views")),
        "{v}"
    );
    let mine = published(&app, &op1, "TW-T001", "thr-malformed").await;
    let v = metrics_ok(
        &app,
        &op1,
        json!({"captured_at": t,
               "posts": [{"post_id": mine, "views": 1.5}, {"post_id": mine, "views": 4},
                         {"post_id": mine, "views": 5, "clicks": 1}, 7],
               "accounts": [{"code": "TW-T001", "followers": -5},
                            {"code": "TW-T001", "followers": 12}]}),
    )
    .await;
    assert_eq!(
        (&v["posts_written"], &v["accounts_written"]),
        (&json!(1), &json!(1)),
        "{v}"
    );
    let refused: Vec<(&str, i64, &str, &str)> = v["refused"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            assert!(!r["reason"].as_str().unwrap().is_empty(), "{r}");
            (
                r["list"].as_str().unwrap(),
                r["index"].as_i64().unwrap(),
                r["code"].as_str().unwrap(),
                r["field"].as_str().unwrap_or("-"),
            )
        })
        .collect();
    assert_eq!(
        refused,
        [
            ("accounts", 0, "invalid", "followers"),
            ("posts", 0, "invalid", "views"),
            ("posts", 2, "invalid", "clicks"),
            ("posts", 3, "invalid", "-"),
        ],
        "{v}"
    );
    assert_eq!(
        counters(&app, &mine, &t).await.as_deref(),
        Some("4,-,-,-,-")
    );
    // Only a list that is not an array of up to 500 refuses the request.
    for posts in [
        json!({"post_id": mine}),
        json!(vec![json!({"post_id": mine}); 501]),
    ] {
        let v = assert_error(
            &metrics(&app, &op1, json!({"captured_at": t, "posts": posts})).await,
            400,
            "invalid_request",
        );
        assert_eq!(v["field"], "posts", "{v}");
    }
    let v = assert_error(
        &metrics(
            &app,
            &op1,
            json!({"accounts": [{"code": "TW-T001", "followers": 5}]}),
        )
        .await,
        400,
        "invalid_request",
    );
    assert_eq!(v["field"], "captured_at", "{v}");
    assert_eq!(rows(&app, "post_metrics").await, 1);
    assert_eq!(rows(&app, "account_metrics").await, 1);
}

#[tokio::test(flavor = "multi_thread")]
async fn metrics_resent_under_the_same_key_are_replayed() {
    let app = spawn_app().await;
    let op1 = app.agent_key("op1");
    let post = published(&app, &op1, "TW-T001", "thr-idem").await;
    let t = at(-300);
    let body = json!({"captured_at": t, "posts": [{"post_id": post, "views": 50}]});
    let send = |b: Value| {
        app.client.send(
            Request::new("POST", METRICS)
                .bearer(&op1)
                .header("Idempotency-Key", "m-1")
                .json(&b),
        )
    };
    let first = send(body.clone()).await;
    let v = ok(&first);
    assert_eq!(first.header("idempotent-replayed"), None);
    let recorded = text(
        &app,
        &format!("SELECT recorded_at::text AS t FROM post_metrics WHERE post_id = '{post}'"),
    )
    .await;

    let again = send(body.clone()).await;
    assert_eq!(again.status, 200);
    assert_eq!(again.header("idempotent-replayed"), Some("true"));
    assert_eq!(again.json(), v);
    assert_eq!(
        text(
            &app,
            &format!("SELECT recorded_at::text AS t FROM post_metrics WHERE post_id = '{post}'"),
        )
        .await,
        recorded,
        "a replay writes nothing"
    );

    let mut other = body.clone();
    other["posts"][0]["views"] = json!(60);
    assert_error(&send(other).await, 422, "idempotency_mismatch");
    assert_eq!(
        counters(&app, &post, &t).await.as_deref(),
        Some("50,-,-,-,-")
    );

    // A refusal leaves a key free.
    let refused = app
        .client
        .send(
            Request::new("POST", METRICS)
                .bearer(&op1)
                .header("Idempotency-Key", "m-2")
                .json(&json!({"captured_at": at(3600), "posts": [{"post_id": post, "views": 1}]})),
        )
        .await;
    assert_error(&refused, 422, "rejected");
    let fixed = app
        .client
        .send(
            Request::new("POST", METRICS)
                .bearer(&op1)
                .header("Idempotency-Key", "m-2")
                .json(&json!({"captured_at": at(-10), "posts": [{"post_id": post, "views": 70}]})),
        )
        .await;
    assert_eq!(
        fixed.status,
        200,
        "{}",
        String::from_utf8_lossy(&fixed.body)
    );
    assert_eq!(fixed.header("idempotent-replayed"), None);
}

// ---------------------------------------------------------------------------------------------
// MCP

async fn mcp_call(app: &TestApp, key: &str, name: &str, arguments: Value) -> Value {
    let r = app
        .client
        .send(
            Request::mcp(&json!({"jsonrpc": "2.0", "id": 7, "method": "tools/call",
                              "params": {"name": name, "arguments": arguments}}))
            .bearer(key),
        )
        .await;
    assert_eq!(r.status, 200, "{}", String::from_utf8_lossy(&r.body));
    let msg = r.json();
    assert_eq!(msg["id"], 7, "{msg}");
    fleetdesk_tests::assert::tool_result(name, &msg)
}

#[tokio::test(flavor = "multi_thread")]
async fn report_posts_over_mcp_with_request_id() {
    let app = spawn_app().await;
    let op1 = app.agent_key("op1");
    let id = approved_post(&app, &op1, "TW-T001", "Over MCP").await;
    let args = json!({"request_id": "mcp-r1", "posts": [
        {"code": "TW-T001", "status": "scheduled", "post_id": id, "scheduled_for": at(3600)},
        {"code": "TW-T001", "status": "published", "body": "New over MCP",
         "permalink": "https://threads.net/p/mcp"},
    ]});
    let first = mcp_call(&app, &op1, "report_posts", args.clone()).await;
    assert_eq!(first["isError"], false, "{first}");
    let body = &first["structuredContent"];
    assert_item(body, 0, "updated", "scheduled");
    assert_item(body, 1, "inserted", "published");
    assert_eq!(post_status(&app, &id).await, "scheduled");

    let again = mcp_call(&app, &op1, "report_posts", args.clone()).await;
    assert_eq!(again["isError"], false, "{again}");
    assert_eq!(again["structuredContent"], first["structuredContent"]);
    assert_eq!(rows(&app, "post_reports").await, 1);
    assert_eq!(rows(&app, "posts").await, 2);

    // The request_id is the REST Idempotency-Key.
    let rest = app
        .client
        .send(report_request(&op1, "mcp-r1", args["posts"].clone()))
        .await;
    assert_eq!(rest.status, 200);
    assert_eq!(rest.header("idempotent-replayed"), Some("true"));
    assert_eq!(rest.json(), first["structuredContent"]);
}

#[tokio::test(flavor = "multi_thread")]
async fn an_all_rejected_batch_over_mcp_is_an_error_result_with_the_422_body() {
    let app = spawn_app().await;
    let op1 = app.agent_key("op1");
    let posts = json!([
        {"code": "TW-T002", "status": "published", "body": "Leo's account",
         "permalink": "https://threads.net/p/l"},
        {"code": "TW-T001", "status": "scheduled", "body": "No time"},
    ]);
    let result = mcp_call(
        &app,
        &op1,
        "report_posts",
        json!({"request_id": "mcp-bad", "posts": posts}),
    )
    .await;
    assert_eq!(result["isError"], true, "{result}");
    let body = &result["body"];
    assert_eq!(body["code"], "rejected", "{body}");
    assert!(body["request_id"].is_string(), "{body}");
    assert_eq!(body["rejected"], 2, "{body}");
    assert_refused(body, 0, "forbidden", None);
    assert_refused(body, 1, "invalid", Some("scheduled_for"));
    let rest = report(&app, &op1, posts.clone()).await;
    assert_eq!(rest.status, 422);
    let strip = |mut v: Value| {
        v["request_id"] = Value::Null;
        v["received_at"] = Value::Null;
        v
    };
    assert_eq!(strip(body.clone()), strip(rest.json()));
    assert_eq!(rows(&app, "posts").await, 0);
    assert_eq!(rows(&app, "post_reports").await, 0);

    // The request_id stays free.
    let fixed = mcp_call(
        &app,
        &op1,
        "report_posts",
        json!({"request_id": "mcp-bad", "posts": [
            {"code": "TW-T001", "status": "scheduled", "body": "No time",
             "scheduled_for": at(600)}]}),
    )
    .await;
    assert_eq!(fixed["isError"], false, "{fixed}");
    assert_eq!(fixed["structuredContent"]["inserted"], 1, "{fixed}");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_refused_metrics_item_does_not_block_a_later_item_of_the_same_post() {
    let app = spawn_app().await;
    let op1 = app.agent_key("op1");
    let post = published(&app, &op1, "TW-T001", "thr-twice").await;
    let t = at(-120);
    // The first item names the post with nothing to record (refused, not written); the second
    // carries the numbers.
    let v = metrics_ok(
        &app,
        &op1,
        json!({"captured_at": t, "posts": [
            {"post_id": post},
            {"code": "TW-T001", "platform_post_id": "thr-twice", "views": 12},
        ]}),
    )
    .await;
    assert_eq!(v["posts_written"], 1, "{v}");
    assert_eq!(refused_item(&v, "posts", 0)["code"], "rejected", "{v}");
    assert_eq!(v["refused"].as_array().unwrap().len(), 1, "{v}");
    assert_eq!(
        counters(&app, &post, &t).await.as_deref(),
        Some("12,-,-,-,-")
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn metrics_by_code_and_platform_id_stay_on_the_named_account() {
    let app = spawn_app().await;
    let op1 = app.agent_key("op1");
    // A post of TW-T001; TW-L001 is op1's other threads account.
    let post = published(&app, &op1, "TW-T001", "thr-on-t001").await;
    let t = at(-120);
    let r = metrics(
        &app,
        &op1,
        json!({"captured_at": t, "posts": [
            {"code": "TW-L001", "platform_post_id": "thr-on-t001", "views": 5},
        ]}),
    )
    .await;
    let v = assert_error(&r, 422, "rejected");
    assert_eq!(refused_item(&v, "posts", 0)["code"], "not_found", "{v}");
    assert_eq!(counters(&app, &post, &t).await, None);
}

#[tokio::test(flavor = "multi_thread")]
async fn posts_the_service_publishes_deleted_or_discarded_posts() {
    let app = spawn_app().await;
    let op1 = app.agent_key("op1");
    let publishing = approved_post(&app, &op1, "TW-T001", "Being published").await;
    let deleted = approved_post(&app, &op1, "TW-T001", "Deleted on the platform").await;
    let discarded = approved_post(&app, &op1, "TW-T001", "Deleted from inventory").await;
    app.sql(&format!(
        "UPDATE posts SET status = 'publishing' WHERE id = '{publishing}'"
    ))
    .await;
    app.sql(&format!(
        "UPDATE posts SET status = 'deleted' WHERE id = '{deleted}'"
    ))
    .await;
    stock(&app, &op1, &discarded).await;
    ok(&app
        .client
        .post(
            &format!("{AGENT}/posts/{discarded}/delete-stocked"),
            &op1,
            &json!({"on_behalf_of": {"name": "Ann", "role": "agency"},
                    "origin": {"platform": "cli"}}),
        )
        .await);

    let v = report_ok(
        &app,
        &op1,
        json!([
            {"code": "TW-T001", "status": "scheduled", "post_id": publishing,
             "scheduled_for": at(600)},
            {"code": "TW-T001", "status": "cancelled", "post_id": publishing},
            {"code": "TW-T001", "status": "published", "post_id": deleted,
             "permalink": "https://threads.net/p/del"},
            {"code": "TW-T001", "status": "scheduled", "post_id": discarded,
             "scheduled_for": at(600)},
        ]),
    )
    .await;
    assert_item(&v, 0, "ignored", "publishing");
    assert_item(&v, 1, "ignored", "publishing");
    assert_item(&v, 2, "ignored", "deleted");
    assert_refused(&v, 3, "rejected", None);
    assert_eq!(post_status(&app, &publishing).await, "publishing");
    assert_eq!(post_status(&app, &deleted).await, "deleted");

    let v = report_ok(
        &app,
        &op1,
        json!([
            {"code": "TW-T001", "status": "published", "post_id": publishing,
             "permalink": "https://threads.net/p/pub", "platform_post_id": "thr-pub"},
            {"code": "TW-T001", "status": "published", "post_id": discarded,
             "permalink": "https://threads.net/p/dis"},
        ]),
    )
    .await;
    assert_item(&v, 0, "updated", "published");
    assert_item(&v, 1, "updated", "published");
    assert!(result(&v, 1)["warning"].is_string(), "{v}");
    assert_eq!(post_status(&app, &publishing).await, "published");
    assert_eq!(post_status(&app, &discarded).await, "published");
}

#[tokio::test(flavor = "multi_thread")]
async fn body_matching_takes_the_nearest_time_and_published_posts_only_within_12_hours() {
    let app = spawn_app().await;
    let op1 = app.agent_key("op1");
    // Two scheduled posts with the same body, told apart by the tool's ids.
    let v = report_ok(
        &app,
        &op1,
        json!([
            {"code": "TW-T001", "status": "scheduled", "body": "Same words",
             "platform_post_id": "tool-a", "scheduled_for": at(3600)},
            {"code": "TW-T001", "status": "scheduled", "body": "Same words",
             "platform_post_id": "tool-b", "scheduled_for": at(5 * 3600)},
        ]),
    )
    .await;
    let a = assert_item(&v, 0, "inserted", "scheduled");
    let b = assert_item(&v, 1, "inserted", "scheduled");
    assert_ne!(a, b);
    // Without ids: the one nearest to the reported time.
    let v = report_ok(
        &app,
        &op1,
        json!([{"code": "TW-T001", "status": "scheduled", "body": "Same   words",
                "scheduled_for": at(5 * 3600 - 600)}]),
    )
    .await;
    assert_eq!(assert_item(&v, 0, "updated", "scheduled"), b);
    assert_eq!(result(&v, 0)["matched_by"], "body");
    let v = report_ok(
        &app,
        &op1,
        json!([{"code": "TW-T001", "status": "failed", "body": "Same words",
                "failure_reason": "quota"}]),
    )
    .await;
    assert_eq!(
        assert_item(&v, 0, "updated", "failed"),
        a,
        "now is nearest to a"
    );
    assert_eq!(rows(&app, "posts").await, 2);

    // Published 13 hours ago: no longer matched by body; 11 hours ago: matched.
    let v = report_ok(
        &app,
        &op1,
        json!([
            {"code": "TW-I001", "status": "published", "body": "Old news",
             "published_at": at(-13 * 3600), "permalink": "https://instagram.com/p/o"},
            {"code": "TW-I001", "status": "published", "body": "Fresh news",
             "published_at": at(-11 * 3600), "permalink": "https://instagram.com/p/f"},
        ]),
    )
    .await;
    let old = assert_item(&v, 0, "inserted", "published");
    let fresh = assert_item(&v, 1, "inserted", "published");
    let v = report_ok(
        &app,
        &op1,
        json!([
            {"code": "TW-I001", "status": "published", "body": "Old news",
             "permalink": "https://instagram.com/p/o2"},
            {"code": "TW-I001", "status": "published", "body": "Fresh news",
             "permalink": "https://instagram.com/p/f2"},
        ]),
    )
    .await;
    let again = assert_item(&v, 0, "inserted", "published");
    assert_ne!(again, old);
    assert_eq!(assert_item(&v, 1, "updated", "published"), fresh);
    assert_eq!(rows(&app, "posts WHERE body = 'Old news'").await, 2);
    assert_eq!(rows(&app, "posts WHERE body = 'Fresh news'").await, 1);
}

#[tokio::test(flavor = "multi_thread")]
async fn two_reports_under_one_key_at_once_act_once() {
    let app = spawn_app().await;
    let op1 = app.agent_key("op1");
    let posts = json!([{"code": "TW-T001", "status": "published", "body": "Once only",
                        "permalink": "https://threads.net/p/once"}]);
    let (a, b) = tokio::join!(
        app.client
            .send(report_request(&op1, "k-race", posts.clone())),
        app.client
            .send(report_request(&op1, "k-race", posts.clone()))
    );
    let mut statuses = [a.status, b.status];
    statuses.sort();
    assert!(
        statuses == [200, 200] || statuses == [200, 409],
        "{statuses:?}: {} / {}",
        String::from_utf8_lossy(&a.body),
        String::from_utf8_lossy(&b.body)
    );
    for r in [&a, &b] {
        if r.status == 409 {
            assert_eq!(r.code(), "idempotency_in_progress");
        }
    }
    if statuses == [200, 200] {
        let replayed = [
            a.header("idempotent-replayed"),
            b.header("idempotent-replayed"),
        ];
        assert!(replayed.contains(&Some("true")), "{replayed:?}");
        assert_eq!(a.json(), b.json());
    }
    assert_eq!(rows(&app, "posts WHERE body = 'Once only'").await, 1);
    assert_eq!(rows(&app, "post_reports").await, 1);
}
