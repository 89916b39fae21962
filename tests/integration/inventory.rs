//! Post inventory, the planning view and the complete agent day, played through HTTP over the
//! standard tenant: account state changes that stock posts, GET /posts/inventory, POST
//! /posts/{id}/stock, /unstock, /unscheduled and /delete-stocked, GET /posts/planned and
//! GET /work/today.

use fleetdesk_tests::assert::{assert_error, ok};
use fleetdesk_tests::{Response, TestApp, spawn_app};
use jiff::civil::Date;
use jiff::tz::TimeZone;
use jiff::{SignedDuration, Timestamp};
use serde_json::{Value, json};

const AGENT: &str = "/api/agent/v1";
const USER: &str = "/api/user/v1";
const ANN: &str = "ann@acme.test";

// ---------------------------------------------------------------------------------------------
// helpers: requests and assertions

async fn get(app: &TestApp, key: &str, path: &str) -> Response {
    app.client.get(&format!("{AGENT}{path}"), key).await
}

async fn post(app: &TestApp, key: &str, path: &str, body: Value) -> Response {
    app.client.post(&format!("{AGENT}{path}"), key, &body).await
}

/// A 2xx answer's body.
/// 400 invalid_request naming `field`.
#[track_caller]
fn assert_invalid(res: &Response, field: &str) -> Value {
    let v = assert_error(res, 400, "invalid_request");
    assert_eq!(v["field"], field, "{v}");
    v
}

// ---------------------------------------------------------------------------------------------
// helpers: time

fn zone(name: &str) -> TimeZone {
    TimeZone::get(name).expect("time zone")
}

fn today_in(tz: &str) -> Date {
    Timestamp::now().to_zoned(zone(tz)).date()
}

fn taipei_today() -> Date {
    today_in("Asia/Taipei")
}

/// `days` after today in Taipei.
fn taipei_day(days: i64) -> Date {
    taipei_today()
        .checked_add(jiff::Span::new().days(days))
        .expect("date")
}

/// A Taipei-local time input `<date> <HH:MM>`.
fn local(date: Date, hour: u8) -> String {
    format!("{date} {hour:02}:00")
}

/// The UTC form the service answers times in, of a Taipei-local hour.
fn utc_of_taipei(date: Date, hour: i8) -> String {
    let t = date
        .at(hour, 0, 0, 0)
        .to_zoned(zone("Asia/Taipei"))
        .expect("zoned")
        .timestamp();
    fmt_utc(t)
}

fn fmt_utc(t: Timestamp) -> String {
    t.strftime("%Y-%m-%dT%H:%M:%SZ").to_string()
}

fn now_iso() -> String {
    Timestamp::now().to_string()
}

fn in_minutes(minutes: i64) -> String {
    (Timestamp::now() + SignedDuration::from_mins(minutes)).to_string()
}

// ---------------------------------------------------------------------------------------------
// helpers: posts

/// Submits a draft; returns its id and status.
async fn submit(app: &TestApp, key: &str, body: Value) -> (String, String) {
    let v = ok(&post(app, key, "/drafts", body).await);
    (
        v["draft"]["id"].as_str().expect("draft id").to_owned(),
        v["draft"]["status"].as_str().expect("status").to_owned(),
    )
}

/// A draft of `code` sent to internal review (when the account is active).
async fn in_review(app: &TestApp, key: &str, code: &str, body: &str) -> String {
    let (id, status) = submit(app, key, json!({"code": code, "body": body})).await;
    assert_eq!(status, "internal_review", "{code}: {body}");
    id
}

/// Ann (agency) moves a post.
async fn review_move(app: &TestApp, id: &str, body: Value) -> Value {
    let ann = app.personal_key(ANN);
    ok(&app
        .client
        .post(&format!("{USER}/posts/{id}/transition"), &ann, &body)
        .await)
}

async fn approve(app: &TestApp, id: &str) {
    let v = review_move(app, id, json!({"to": "approved"})).await;
    assert_eq!(v["post"]["status"], "approved", "{v}");
}

/// A post of `code` written by `key` and approved by Ann, optionally planned for a time.
async fn approved(
    app: &TestApp,
    key: &str,
    code: &str,
    body: &str,
    planned: Option<&str>,
) -> String {
    let mut draft = json!({"code": code, "body": body});
    if let Some(p) = planned {
        draft["planned_at"] = json!(p);
    }
    let (id, status) = submit(app, key, draft).await;
    assert_eq!(status, "internal_review");
    approve(app, &id).await;
    id
}

/// Reports posts; expects 200.
async fn report(app: &TestApp, key: &str, posts: Value) -> Value {
    ok(&post(app, key, "/posts/report", json!({"posts": posts})).await)
}

/// An approved post reported scheduled in the agent's tool under `tool_id`.
async fn scheduled(app: &TestApp, key: &str, code: &str, body: &str, tool_id: &str) -> String {
    let id = approved(app, key, code, body, None).await;
    let r = report(
        app,
        key,
        json!([{"code": code, "status": "scheduled", "post_id": id,
                "scheduled_for": now_iso(), "platform_post_id": tool_id}]),
    )
    .await;
    assert_eq!(r["results"][0]["status"], "scheduled", "{r}");
    id
}

/// An approved post reported published.
async fn published(app: &TestApp, key: &str, code: &str, body: &str, platform_id: &str) -> String {
    let id = approved(app, key, code, body, None).await;
    let r = report(
        app,
        key,
        json!([{"code": code, "status": "published", "post_id": id,
                "platform_post_id": platform_id,
                "permalink": format!("https://threads.net/p/{platform_id}")}]),
    )
    .await;
    assert_eq!(r["results"][0]["status"], "published", "{r}");
    id
}

async fn set_state(app: &TestApp, key: &str, code: &str, body: Value) -> Value {
    ok(&post(app, key, &format!("/accounts/{code}/state"), body).await)
}

async fn pause(app: &TestApp, key: &str, code: &str, state: &str, reason: &str) -> Value {
    set_state(
        app,
        key,
        code,
        json!({"state": state, "reason": reason, "occurred_at": now_iso()}),
    )
    .await
}

/// A text column of a post (`<null>` for null).
async fn post_field(app: &TestApp, id: &str, column: &str) -> String {
    use diesel_async::RunQueryDsl;
    #[derive(diesel::QueryableByName)]
    struct Row {
        #[diesel(sql_type = diesel::sql_types::Text)]
        v: String,
    }
    let row: Row = diesel::sql_query(format!(
        "SELECT COALESCE({column}::text, '<null>') AS v FROM posts WHERE id = '{id}'"
    ))
    .get_result(&mut app.connect().await)
    .await
    .unwrap_or_else(|e| panic!("{column} of {id}: {e}"));
    row.v
}

async fn status_of(app: &TestApp, id: &str) -> String {
    post_field(app, id, "status").await
}

/// Review events of a post with the given action.
async fn events(app: &TestApp, id: &str, action: &str) -> i64 {
    app.count(&format!(
        "SELECT count(*) AS n FROM review_events WHERE post_id = '{id}' AND action = '{action}'"
    ))
    .await
}

async fn inventory(app: &TestApp, key: &str, query: &str) -> Value {
    ok(&get(app, key, &format!("/posts/inventory{query}")).await)
}

/// The inventory account `code` (None when not listed).
fn inv_account<'a>(inv: &'a Value, code: &str) -> Option<&'a Value> {
    inv["accounts"]
        .as_array()
        .expect("accounts[]")
        .iter()
        .find(|a| a["code"] == code)
}

/// Every post id of an inventory page.
fn inv_ids(inv: &Value) -> Vec<String> {
    inv["accounts"]
        .as_array()
        .expect("accounts[]")
        .iter()
        .flat_map(|a| a["posts"].as_array().expect("posts[]").iter())
        .map(|p| p["id"].as_str().expect("id").to_owned())
        .collect()
}

fn inv_post<'a>(inv: &'a Value, id: &str) -> Option<&'a Value> {
    inv["accounts"]
        .as_array()
        .expect("accounts[]")
        .iter()
        .flat_map(|a| a["posts"].as_array().expect("posts[]").iter())
        .find(|p| p["id"] == id)
}

async fn work_today(app: &TestApp, key: &str) -> Value {
    ok(&get(app, key, "/work/today").await)
}

fn missing_row<'a>(day: &'a Value, code: &str) -> Option<&'a Value> {
    day["missing"]
        .as_array()
        .expect("missing[]")
        .iter()
        .find(|m| m["code"] == code)
}

fn unschedule_ids(day: &Value) -> Vec<String> {
    day["unschedule_stocked"]
        .as_array()
        .expect("unschedule_stocked[]")
        .iter()
        .map(|u| u["id"].as_str().expect("id").to_owned())
        .collect()
}

async fn stock(app: &TestApp, key: &str, id: &str, body: Value) -> Response {
    post(app, key, &format!("/posts/{id}/stock"), body).await
}

async fn unstock(app: &TestApp, key: &str, id: &str, body: Value) -> Response {
    post(app, key, &format!("/posts/{id}/unstock"), body).await
}

fn relay_body(role: &str) -> Value {
    json!({
        "reason": "the campaign was dropped",
        "on_behalf_of": {"name": "Ann", "role": role},
        "origin": {"platform": "telegram", "channel": "ops", "message_ref": "msg-42"}
    })
}

// ---------------------------------------------------------------------------------------------
// account state changes move posts to inventory

#[tokio::test(flavor = "multi_thread")]
async fn pausing_an_account_stocks_its_unfinished_posts_and_lists_the_agent_scheduled_one() {
    let app = spawn_app().await;
    let op1 = app.agent_key("op1");
    let tomorrow = taipei_day(1);

    let (draft, status) = submit(
        &app,
        &op1,
        json!({"code": "TW-T001", "body": "draft only", "submit": false}),
    )
    .await;
    assert_eq!(status, "draft");
    let review = in_review(&app, &op1, "TW-T001", "waiting for review").await;
    let appr = approved(
        &app,
        &op1,
        "TW-T001",
        "approved for tomorrow",
        Some(&local(tomorrow, 10)),
    )
    .await;
    let sched = scheduled(&app, &op1, "TW-T001", "scheduled in my tool", "tool-77").await;
    let out = published(&app, &op1, "TW-T001", "already out", "thr-1").await;

    let v = pause(
        &app,
        &op1,
        "TW-T001",
        "paused",
        "the platform asked for a phone check",
    )
    .await;
    assert_eq!(v["state"], "paused", "{v}");
    assert_eq!(v["result"], "changed", "{v}");
    assert_eq!(v["stocked_posts"], 4, "{v}");

    for id in [&draft, &review, &appr, &sched] {
        assert_eq!(status_of(&app, id).await, "stocked", "{id}");
        assert_eq!(events(&app, id, "stocked").await, 1, "{id}");
        assert_eq!(
            app.count(&format!(
                "SELECT count(*) AS n FROM review_events WHERE post_id = '{id}' \
                 AND action = 'stocked' AND reason = 'the platform asked for a phone check'"
            ))
            .await,
            1,
            "the stocking event keeps the reason"
        );
    }
    assert_eq!(status_of(&app, &out).await, "published");
    assert_eq!(events(&app, &out, "stocked").await, 0);

    // The inventory shows where each post came from.
    let inv = inventory(&app, &op1, "").await;
    let acc = inv_account(&inv, "TW-T001").expect("TW-T001 in inventory");
    assert_eq!(acc["platform"], "threads");
    assert_eq!(acc["state"], "paused");
    assert_eq!(acc["active"], false);
    assert_eq!(acc["count"], 4);
    let expect = [
        (&draft, "draft", false),
        (&review, "internal_review", false),
        (&appr, "approved", false),
        (&sched, "scheduled", true),
    ];
    for (id, from, pending) in expect {
        let p = inv_post(&inv, id).unwrap_or_else(|| panic!("{id} listed: {inv}"));
        assert_eq!(p["from_status"], from, "{p}");
        assert_eq!(p["unschedule_pending"], pending, "{p}");
        assert_eq!(p["reason"], "the platform asked for a phone check", "{p}");
        assert_eq!(p["waiting_rewrite"], false, "{p}");
        assert!(p["stocked_at"].is_string(), "{p}");
    }
    assert_eq!(
        inv_post(&inv, &appr).unwrap()["planned_was"],
        utc_of_taipei(tomorrow, 10)
    );
    assert_eq!(inv_post(&inv, &review).unwrap()["planned_was"], Value::Null);
    assert_eq!(
        inv_post(&inv, &appr).unwrap()["body"],
        "approved for tomorrow"
    );
    assert!(inv_post(&inv, &out).is_none());

    // The post scheduled in the agent's own tool must be removed there first.
    let day = work_today(&app, &op1).await;
    assert_eq!(unschedule_ids(&day), std::slice::from_ref(&sched), "{day}");
    let u = &day["unschedule_stocked"][0];
    assert_eq!(u["code"], "TW-T001");
    assert_eq!(u["platform"], "threads");
    assert_eq!(u["scheduler_ref"], "tool-77", "{u}");
    assert_eq!(u["reason"], "the platform asked for a phone check");
    assert_eq!(u["excerpt"], "scheduled in my tool");
    assert!(u["scheduled_for"].is_string(), "{u}");
    assert!(u["stocked_at"].is_string(), "{u}");
    let instruction = u["instruction"].as_str().expect("instruction");
    assert!(instruction.contains("tool-77"), "{instruction}");
    assert!(instruction.contains("confirm_unscheduled"), "{instruction}");
    assert_eq!(day["summary"]["unschedule_stocked"], 1, "{day}");
    assert_eq!(day["summary"]["inventory"], 4, "{day}");
    assert!(
        missing_row(&day, "TW-T001").is_none(),
        "paused: no missing row"
    );
    let nir = day["not_in_rotation"].as_array().unwrap();
    let t001 = nir
        .iter()
        .find(|n| n["code"] == "TW-T001")
        .expect("TW-T001 out of rotation");
    assert_eq!(t001["state"], "paused");
    assert_eq!(t001["inventory"], 4);

    // Restoring releases nothing.
    let v = set_state(
        &app,
        &op1,
        "TW-T001",
        json!({"state": "restored", "occurred_at": now_iso()}),
    )
    .await;
    assert_eq!(v["state"], "active", "{v}");
    assert_eq!(v["stocked_posts"], 0, "{v}");
    assert_eq!(
        app.count("SELECT count(*) AS n FROM posts WHERE status = 'stocked'")
            .await,
        4
    );
    let inv = inventory(&app, &op1, "").await;
    let acc = inv_account(&inv, "TW-T001").unwrap();
    assert_eq!(
        (acc["state"].clone(), acc["active"].clone()),
        (json!("active"), json!(true))
    );
    assert_eq!(acc["count"], 4);
    let day = work_today(&app, &op1).await;
    let row = missing_row(&day, "TW-T001").expect("active again: missing");
    assert_eq!(row["inventory_available"], 4, "{row}");
    assert_eq!(
        unschedule_ids(&day),
        [sched],
        "still to remove from the tool"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_service_publishing_account_stocks_without_unscheduling_and_keeps_a_post_being_published()
{
    let app = spawn_app().await;
    let op1 = app.agent_key("op1");
    app.sql("UPDATE account_slots SET publishing = 'fleetdesk' WHERE code = 'TW-I001'")
        .await;

    let appr = approved(
        &app,
        &op1,
        "TW-I001",
        "approved, the service will publish",
        None,
    )
    .await;
    let sched = approved(&app, &op1, "TW-I001", "scheduled by the service", None).await;
    app.sql(&format!(
        "UPDATE posts SET status = 'scheduled', scheduled_for = now() + interval '1 hour' \
         WHERE id = '{sched}'"
    ))
    .await;
    let going = approved(&app, &op1, "TW-I001", "the service is publishing it", None).await;
    app.sql(&format!(
        "UPDATE posts SET status = 'publishing', scheduled_for = now() WHERE id = '{going}'"
    ))
    .await;

    let v = pause(&app, &op1, "TW-I001", "quarantined", "shadow ban suspected").await;
    assert_eq!(v["state"], "quarantined", "{v}");
    assert_eq!(v["stocked_posts"], 2, "{v}");
    assert_eq!(status_of(&app, &appr).await, "stocked");
    assert_eq!(status_of(&app, &sched).await, "stocked");
    assert_eq!(
        status_of(&app, &going).await,
        "publishing",
        "being published goes on"
    );
    assert_eq!(events(&app, &going, "stocked").await, 0);
    for id in [&appr, &sched] {
        assert_eq!(
            post_field(&app, id, "unschedule_pending").await,
            "false",
            "{id}"
        );
    }
    let day = work_today(&app, &op1).await;
    assert_eq!(day["unschedule_stocked"], json!([]), "{day}");
    assert_eq!(day["summary"]["unschedule_stocked"], 0);
    let inv = inventory(&app, &op1, "").await;
    assert_eq!(inv_post(&inv, &sched).unwrap()["from_status"], "scheduled");
    assert_eq!(inv_post(&inv, &sched).unwrap()["unschedule_pending"], false);

    // A post being published by the service cannot be stocked by hand either.
    assert_error(&stock(&app, &op1, &going, json!({})).await, 422, "rejected");
}

#[tokio::test(flavor = "multi_thread")]
async fn banned_quarantined_and_warming_accounts_stock_their_posts() {
    let app = spawn_app().await;
    let op1 = app.agent_key("op1");
    let t = in_review(&app, &op1, "TW-T001", "threads post").await;
    let i = in_review(&app, &op1, "TW-I001", "instagram post").await;
    let l = in_review(&app, &op1, "TW-L001", "legacy threads post").await;
    let other = in_review(&app, &op1, "TW-L002", "stays in review").await;

    let v = pause(&app, &op1, "TW-T001", "banned", "account suspended").await;
    assert_eq!(v["state"], "banned", "{v}");
    assert_eq!(v["stocked_posts"], 1, "{v}");
    assert!(
        v["decision"]["id"].is_string(),
        "a ban opens a decision: {v}"
    );

    let v = pause(&app, &op1, "TW-L001", "quarantined", "limited reach").await;
    assert_eq!(v["stocked_posts"], 1, "{v}");

    let v = set_state(
        &app,
        &op1,
        "TW-I001",
        json!({"state": "warming", "occurred_at": now_iso()}),
    )
    .await;
    assert_eq!(v["state"], "warming", "{v}");
    assert_eq!(v["stocked_posts"], 1, "{v}");

    for id in [&t, &i, &l] {
        assert_eq!(status_of(&app, id).await, "stocked", "{id}");
        assert_eq!(events(&app, id, "stocked").await, 1);
    }
    // Posts already in stock are not stocked twice by a further change.
    let v = pause(&app, &op1, "TW-L001", "banned", "now banned").await;
    assert_eq!(v["stocked_posts"], 0, "{v}");
    assert_eq!(events(&app, &l, "stocked").await, 1);
    assert_eq!(status_of(&app, &other).await, "internal_review");

    // The same state again changes nothing and stocks nothing.
    let again = in_review(&app, &op1, "TW-L002", "another one in review").await;
    let v = set_state(
        &app,
        &op1,
        "TW-L002",
        json!({"state": "restored", "occurred_at": now_iso()}),
    )
    .await;
    assert_eq!(v["stocked_posts"], 0, "{v}");
    assert_eq!(status_of(&app, &again).await, "internal_review");

    let inv = inventory(&app, &op1, "").await;
    let states: Vec<(String, String, bool, i64)> = inv["accounts"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| {
            (
                a["code"].as_str().unwrap().to_owned(),
                a["state"].as_str().unwrap().to_owned(),
                a["active"].as_bool().unwrap(),
                a["count"].as_i64().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        states,
        [
            ("TW-I001".to_owned(), "warming".to_owned(), false, 1),
            ("TW-L001".to_owned(), "banned".to_owned(), false, 1),
            ("TW-T001".to_owned(), "banned".to_owned(), false, 1),
        ]
    );
}

// ---------------------------------------------------------------------------------------------
// confirm_unscheduled and report cancelled

#[tokio::test(flavor = "multi_thread")]
async fn confirming_unscheduled_takes_a_stocked_post_off_the_day() {
    let app = spawn_app().await;
    let op1 = app.agent_key("op1");
    let first = scheduled(&app, &op1, "TW-T001", "first in my tool", "tool-1").await;
    let second = scheduled(&app, &op1, "TW-T001", "second in my tool", "tool-2").await;
    for id in [&first, &second] {
        let v = ok(&stock(
            &app,
            &op1,
            id,
            json!({"reason": "client paused the campaign"}),
        )
        .await);
        assert_eq!(v["post"]["status"], "stocked", "{v}");
        assert_eq!(v["post"]["unschedule_pending"], true, "{v}");
    }
    let day = work_today(&app, &op1).await;
    assert_eq!(
        unschedule_ids(&day),
        [first.clone(), second.clone()],
        "{day}"
    );
    assert_eq!(day["summary"]["unschedule_stocked"], 2);
    assert_eq!(day["unschedule_stocked"][0]["scheduler_ref"], "tool-1");
    assert_eq!(
        day["unschedule_stocked"][0]["reason"],
        "client paused the campaign"
    );

    // Other agents cannot confirm it.
    for agent in ["op2", "jp1", "other1"] {
        let res = post(
            &app,
            &app.agent_key(agent),
            &format!("/posts/{first}/unscheduled"),
            json!({}),
        )
        .await;
        assert_error(&res, 404, "not_found");
    }
    assert_eq!(post_field(&app, &first, "unschedule_pending").await, "true");

    let res = post(
        &app,
        &op1,
        &format!("/posts/{first}/unscheduled"),
        json!({}),
    )
    .await;
    let v = ok(&res);
    assert_eq!(v["post"]["id"], first.as_str());
    assert_eq!(v["post"]["status"], "stocked", "{v}");
    assert_eq!(v["post"]["unchanged"], false, "{v}");
    assert_eq!(v["post"]["unschedule_pending"], false, "{v}");
    assert_eq!(status_of(&app, &first).await, "stocked");
    assert_eq!(events(&app, &first, "unscheduled").await, 1);
    let day = work_today(&app, &op1).await;
    assert_eq!(unschedule_ids(&day), std::slice::from_ref(&second));
    assert_eq!(day["summary"]["unschedule_stocked"], 1);

    // Resending is harmless.
    let v = ok(&post(
        &app,
        &op1,
        &format!("/posts/{first}/unscheduled"),
        json!({}),
    )
    .await);
    assert_eq!(v["post"]["unchanged"], true, "{v}");
    assert_eq!(v["post"]["status"], "stocked");
    assert_eq!(events(&app, &first, "unscheduled").await, 1);

    // A report of the second as cancelled clears it too; it stays in inventory.
    let r = report(
        &app,
        &op1,
        json!([{"code": "TW-T001", "status": "cancelled", "post_id": second,
                "failure_reason": "removed from the tool"}]),
    )
    .await;
    assert_eq!(r["results"][0]["action"], "unscheduled", "{r}");
    assert_eq!(r["results"][0]["status"], "stocked", "{r}");
    assert_eq!(r["results"][0]["ok"], true, "{r}");
    assert_eq!(status_of(&app, &second).await, "stocked");
    assert_eq!(
        post_field(&app, &second, "unschedule_pending").await,
        "false"
    );
    let day = work_today(&app, &op1).await;
    assert_eq!(day["unschedule_stocked"], json!([]), "{day}");
    assert_eq!(day["summary"]["unschedule_stocked"], 0);
    assert_eq!(day["summary"]["inventory"], 2);

    // A post neither stocked nor pending has nothing to confirm.
    let review = in_review(&app, &op1, "TW-T001", "just in review").await;
    let res = post(
        &app,
        &op1,
        &format!("/posts/{review}/unscheduled"),
        json!({}),
    )
    .await;
    assert_error(&res, 422, "rejected");
    // An unknown post is 404; the community agent lacks the scope.
    let res = post(
        &app,
        &op1,
        "/posts/00000000-0000-4000-8000-000000000000/unscheduled",
        json!({}),
    )
    .await;
    assert_error(&res, 404, "not_found");
    let res = post(
        &app,
        &app.agent_key("bot"),
        &format!("/posts/{first}/unscheduled"),
        json!({}),
    )
    .await;
    assert_error(&res, 403, "forbidden");
}

// ---------------------------------------------------------------------------------------------
// GET /posts/inventory

#[tokio::test(flavor = "multi_thread")]
async fn the_inventory_lists_each_account_with_its_stocked_posts() {
    let app = spawn_app().await;
    let op1 = app.agent_key("op1");

    // TW-K001 is warming: submitted drafts land in stock.
    let (paid, status) = submit(
        &app,
        &op1,
        json!({"code": "TW-K001", "body": "paid serum review", "topic": "serum", "sponsored": true}),
    )
    .await;
    assert_eq!(status, "stocked");
    let (plain, status) = submit(
        &app,
        &op1,
        json!({"code": "TW-K001", "body": "a walk with Momo", "topic": "walk"}),
    )
    .await;
    assert_eq!(status, "stocked");
    // TW-T001 is active: a post stocked by hand.
    let held = in_review(&app, &op1, "TW-T001", "held for the holidays").await;
    ok(&stock(&app, &op1, &held, json!({"reason": "holiday break"})).await);
    // TW-L001 (legacy OLD1 on threads).
    let legacy = in_review(&app, &op1, "TW-L001", "legacy account post").await;
    ok(&stock(&app, &op1, &legacy, json!({})).await);
    // Leo's (op2) stocked post is not op1's business.
    let leo = in_review(&app, &app.agent_key("op2"), "TW-T002", "Leo's soup").await;
    ok(&stock(&app, &app.agent_key("op2"), &leo, json!({})).await);

    let inv = inventory(&app, &op1, "").await;
    assert_eq!(inv["next_cursor"], Value::Null, "{inv}");
    let codes: Vec<&str> = inv["accounts"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a["code"].as_str().unwrap())
        .collect();
    assert_eq!(codes, ["TW-K001", "TW-L001", "TW-T001"], "{inv}");
    let k = inv_account(&inv, "TW-K001").unwrap();
    assert_eq!(k["platform"], "tiktok");
    assert_eq!(k["state"], "warming");
    assert_eq!(k["active"], false);
    assert_eq!(k["count"], 2);
    assert_eq!(k["posts"].as_array().unwrap().len(), 2);
    let p = inv_post(&inv, &paid).unwrap();
    assert_eq!(p["body"], "paid serum review");
    assert_eq!(p["topic"], "serum");
    assert_eq!(p["sponsored"], true);
    assert_eq!(p["waiting_rewrite"], false);
    assert_eq!(p["unschedule_pending"], false);
    assert!(p["reason"].is_string(), "a stocked submit says why: {p}");
    let h = inv_post(&inv, &held).unwrap();
    assert_eq!(h["reason"], "holiday break");
    assert_eq!(h["from_status"], "internal_review");
    assert_eq!(h["sponsored"], false);
    assert_eq!(h["topic"], Value::Null);
    let t = inv_account(&inv, "TW-T001").unwrap();
    assert_eq!(
        (t["active"].clone(), t["count"].clone()),
        (json!(true), json!(1))
    );
    assert!(
        inv_post(&inv, &leo).is_none(),
        "another agent's post: {inv}"
    );

    // Sponsored filters.
    let only = inventory(&app, &op1, "?sponsored=only").await;
    assert_eq!(inv_ids(&only), std::slice::from_ref(&paid), "{only}");
    assert_eq!(only["accounts"].as_array().unwrap().len(), 1);
    assert_eq!(inv_account(&only, "TW-K001").unwrap()["count"], 1);
    let exclude = inventory(&app, &op1, "?sponsored=exclude").await;
    let mut ids = inv_ids(&exclude);
    ids.sort();
    let mut want = vec![plain.clone(), held.clone(), legacy.clone()];
    want.sort();
    assert_eq!(ids, want, "{exclude}");
    assert_eq!(inv_account(&exclude, "TW-K001").unwrap()["count"], 1);
    assert_invalid(
        &get(&app, &op1, "/posts/inventory?sponsored=maybe").await,
        "sponsored",
    );

    // One account by code.
    let one = inventory(&app, &op1, "?code=TW-K001").await;
    assert_eq!(one["accounts"].as_array().unwrap().len(), 1, "{one}");
    let mut ids = inv_ids(&one);
    ids.sort();
    let mut want = vec![paid.clone(), plain.clone()];
    want.sort();
    assert_eq!(ids, want);
    let one = inventory(&app, &op1, "?code=TW-K001&sponsored=exclude").await;
    assert_eq!(inv_ids(&one), std::slice::from_ref(&plain));

    // The legacy code is ambiguous without the platform.
    let v = assert_error(
        &get(&app, &op1, "/posts/inventory?code=OLD1").await,
        409,
        "ambiguous_code",
    );
    assert_eq!(v["field"], "platform", "{v}");
    let one = inventory(&app, &op1, "?code=OLD1&platform=threads").await;
    assert_eq!(inv_ids(&one), std::slice::from_ref(&legacy), "{one}");
    assert_eq!(one["accounts"][0]["code"], "TW-L001");
    let none = inventory(&app, &op1, "?code=OLD1&platform=tiktok").await;
    assert_eq!(none["accounts"], json!([]), "TW-L002 holds nothing: {none}");

    // Another agent's code, an unknown code.
    assert_error(
        &get(&app, &op1, "/posts/inventory?code=TW-T002").await,
        403,
        "forbidden",
    );
    assert_error(
        &get(&app, &op1, "/posts/inventory?code=TW-Z999").await,
        404,
        "not_found",
    );

    // Each agent sees only its own.
    let op2 = inventory(&app, &app.agent_key("op2"), "").await;
    assert_eq!(inv_ids(&op2), std::slice::from_ref(&leo), "{op2}");
    assert_error(
        &get(&app, &app.agent_key("op2"), "/posts/inventory?code=TW-K001").await,
        403,
        "forbidden",
    );
    let jp1 = inventory(&app, &app.agent_key("jp1"), "").await;
    assert_eq!(jp1["accounts"], json!([]), "{jp1}");
    assert_error(
        &get(&app, &app.agent_key("jp1"), "/posts/inventory?code=TW-K001").await,
        404,
        "not_found",
    );
    let other1 = inventory(&app, &app.agent_key("other1"), "").await;
    assert_eq!(other1["accounts"], json!([]), "{other1}");
    let other1 = inventory(&app, &app.agent_key("other1"), "?code=TW-T001").await;
    assert_eq!(
        other1["accounts"],
        json!([]),
        "its own TW-T001 holds nothing: {other1}"
    );
    assert_error(
        &get(&app, &app.agent_key("bot"), "/posts/inventory").await,
        403,
        "forbidden",
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn the_inventory_pages_with_limit_and_cursor() {
    let app = spawn_app().await;
    let op1 = app.agent_key("op1");
    let mut all = Vec::new();
    for n in 0..5 {
        let (id, status) = submit(
            &app,
            &op1,
            json!({"code": "TW-K001", "body": format!("stocked post number {n}")}),
        )
        .await;
        assert_eq!(status, "stocked");
        all.push(id);
    }

    let mut seen = Vec::new();
    let mut cursor: Option<String> = None;
    let mut pages = 0;
    loop {
        let query = match &cursor {
            Some(c) => format!("?limit=2&cursor={c}"),
            None => "?limit=2".to_owned(),
        };
        let page = inventory(&app, &op1, &query).await;
        let ids = inv_ids(&page);
        assert!(ids.len() <= 2, "{page}");
        // The count covers every page.
        assert_eq!(inv_account(&page, "TW-K001").unwrap()["count"], 5, "{page}");
        seen.extend(ids);
        pages += 1;
        match page["next_cursor"].as_str() {
            Some(c) => cursor = Some(c.to_owned()),
            None => break,
        }
        assert!(pages < 10, "paging does not end");
    }
    assert_eq!(pages, 3);
    assert_eq!(seen, all, "oldest stocked first, each once");

    assert_invalid(&get(&app, &op1, "/posts/inventory?limit=0").await, "limit");
    assert_invalid(
        &get(&app, &op1, "/posts/inventory?limit=201").await,
        "limit",
    );
    assert_invalid(
        &get(&app, &op1, "/posts/inventory?cursor=nonsense").await,
        "cursor",
    );
    let full = inventory(&app, &op1, "?limit=200").await;
    assert_eq!(inv_ids(&full), all);
    assert_eq!(full["next_cursor"], Value::Null);
}

// ---------------------------------------------------------------------------------------------
// POST /posts/{id}/stock

#[tokio::test(flavor = "multi_thread")]
async fn stock_takes_unfinished_posts_and_refuses_finished_ones() {
    let app = spawn_app().await;
    let op1 = app.agent_key("op1");

    let (draft, _) = submit(
        &app,
        &op1,
        json!({"code": "TW-T001", "body": "only a draft", "submit": false}),
    )
    .await;
    let review = in_review(&app, &op1, "TW-T001", "in review").await;
    let appr = approved(&app, &op1, "TW-T001", "approved one", None).await;
    let sched = scheduled(&app, &op1, "TW-T001", "scheduled one", "tool-9").await;
    for (id, from, pending) in [
        (&draft, "draft", false),
        (&review, "internal_review", false),
        (&appr, "approved", false),
        (&sched, "scheduled", true),
    ] {
        let v = ok(&stock(&app, &op1, id, json!({"reason": "too many posts"})).await);
        assert_eq!(v["post"]["id"], id.as_str());
        assert_eq!(v["post"]["status"], "stocked", "{from}: {v}");
        assert_eq!(v["post"]["unchanged"], false, "{v}");
        assert_eq!(v["post"]["unschedule_pending"], pending, "{from}: {v}");
        assert_eq!(status_of(&app, id).await, "stocked");
        assert_eq!(post_field(&app, id, "from_status").await, from);
        assert_eq!(post_field(&app, id, "stock_reason").await, "too many posts");
        assert_eq!(events(&app, id, "stocked").await, 1);
    }

    // Stocked posts leave the approved list.
    let list = ok(&get(&app, &op1, "/posts/approved").await);
    assert!(
        !list["posts"]
            .as_array()
            .unwrap()
            .iter()
            .any(|p| p["id"] == appr.as_str() || p["id"] == sched.as_str()),
        "{list}"
    );

    // Already stocked: unchanged, no second event.
    let v = ok(&stock(&app, &op1, &review, json!({})).await);
    assert_eq!(v["post"]["status"], "stocked");
    assert_eq!(v["post"]["unchanged"], true, "{v}");
    assert_eq!(events(&app, &review, "stocked").await, 1);
    assert_eq!(
        post_field(&app, &review, "from_status").await,
        "internal_review"
    );

    // Finished posts cannot be stocked.
    let out = published(&app, &op1, "TW-T001", "out already", "thr-5").await;
    let failed = scheduled(&app, &op1, "TW-T001", "will fail", "tool-10").await;
    report(
        &app,
        &op1,
        json!([{"code": "TW-T001", "status": "failed", "post_id": failed,
                "failure_reason": "token expired"}]),
    )
    .await;
    let gone = scheduled(&app, &op1, "TW-T001", "will be cancelled", "tool-11").await;
    report(
        &app,
        &op1,
        json!([{"code": "TW-T001", "status": "cancelled", "post_id": gone,
                "failure_reason": "not needed"}]),
    )
    .await;
    let deleted = published(&app, &op1, "TW-T001", "deleted on the platform", "thr-6").await;
    app.sql(&format!(
        "UPDATE posts SET status = 'deleted' WHERE id = '{deleted}'"
    ))
    .await;
    for (id, status) in [
        (&out, "published"),
        (&failed, "failed"),
        (&gone, "cancelled"),
        (&deleted, "deleted"),
    ] {
        assert_eq!(status_of(&app, id).await, status);
        let v = assert_error(&stock(&app, &op1, id, json!({})).await, 422, "rejected");
        assert!(
            v["message"].as_str().unwrap().contains(status),
            "the message says why: {v}"
        );
        assert_eq!(status_of(&app, id).await, status);
        assert_eq!(events(&app, id, "stocked").await, 0);
    }

    // Someone else's post, an unknown post, a malformed id.
    let fresh = in_review(&app, &op1, "TW-T001", "nobody else may stock this").await;
    for agent in ["op2", "jp1", "other1"] {
        assert_error(
            &stock(&app, &app.agent_key(agent), &fresh, json!({})).await,
            404,
            "not_found",
        );
    }
    assert_error(
        &stock(&app, &app.agent_key("bot"), &fresh, json!({})).await,
        403,
        "forbidden",
    );
    assert_eq!(status_of(&app, &fresh).await, "internal_review");
    assert_error(
        &stock(
            &app,
            &op1,
            "00000000-0000-4000-8000-000000000000",
            json!({}),
        )
        .await,
        404,
        "not_found",
    );
    let res = stock(&app, &op1, "not-a-uuid", json!({})).await;
    assert_eq!(res.status, 400, "{}", res.text());
    assert_eq!(res.json()["code"], "invalid_request");

    // The reason is 1-1000 characters.
    assert_invalid(
        &stock(&app, &op1, &fresh, json!({"reason": "x".repeat(1001)})).await,
        "reason",
    );
    assert_eq!(status_of(&app, &fresh).await, "internal_review");
    let v = ok(&stock(&app, &op1, &fresh, json!({"reason": "x".repeat(1000)})).await);
    assert_eq!(v["post"]["status"], "stocked");
}

#[tokio::test(flavor = "multi_thread")]
async fn stock_replays_under_the_same_idempotency_key() {
    let app = spawn_app().await;
    let op1 = app.agent_key("op1");
    let id = in_review(&app, &op1, "TW-T001", "stock me once").await;
    let path = format!("{AGENT}/posts/{id}/stock");
    let body = json!({"reason": "week off"});

    let first = app
        .client
        .post_idem(&path, &op1, "stock-key-1", &body)
        .await;
    let v1 = ok(&first);
    assert_eq!(v1["post"]["unchanged"], false);
    assert_eq!(first.header("idempotent-replayed"), None);

    let again = app
        .client
        .post_idem(&path, &op1, "stock-key-1", &body)
        .await;
    assert_eq!(again.status, 200, "{}", again.text());
    assert_eq!(again.header("idempotent-replayed"), Some("true"));
    assert_eq!(again.json(), v1, "the first answer, replayed");
    assert_eq!(events(&app, &id, "stocked").await, 1);

    let other = app
        .client
        .post_idem(
            &path,
            &op1,
            "stock-key-1",
            &json!({"reason": "other reason"}),
        )
        .await;
    assert_error(&other, 422, "idempotency_mismatch");

    // A new key on the same post answers unchanged.
    let fresh = app
        .client
        .post_idem(&path, &op1, "stock-key-2", &body)
        .await;
    assert_eq!(ok(&fresh)["post"]["unchanged"], true);
}

// ---------------------------------------------------------------------------------------------
// POST /posts/{id}/unstock

#[tokio::test(flavor = "multi_thread")]
async fn unstock_releases_a_post_for_a_day_below_its_target() {
    let app = spawn_app().await;
    let op1 = app.agent_key("op1");
    let tomorrow = taipei_day(1);
    let later = taipei_day(2);

    let held = in_review(&app, &op1, "TW-T001", "held post").await;
    ok(&stock(&app, &op1, &held, json!({"reason": "wait"})).await);

    // planned_at must be a time, in the future.
    let v = assert_invalid(
        &unstock(&app, &op1, &held, json!({"planned_at": "tomorrow at noon"})).await,
        "planned_at",
    );
    assert!(v["message"].as_str().unwrap().contains("planned_at"), "{v}");
    assert_invalid(&unstock(&app, &op1, &held, json!({})).await, "planned_at");
    let v = assert_error(
        &unstock(&app, &op1, &held, json!({"planned_at": "2020-01-01 10:00"})).await,
        422,
        "rejected",
    );
    assert_eq!(v["field"], "planned_at", "{v}");
    let v = assert_error(
        &unstock(&app, &op1, &held, json!({"planned_at": in_minutes(-5)})).await,
        422,
        "rejected",
    );
    assert_eq!(v["field"], "planned_at", "{v}");

    // Not the caller's post.
    for agent in ["op2", "jp1", "other1"] {
        assert_error(
            &unstock(
                &app,
                &app.agent_key(agent),
                &held,
                json!({"planned_at": local(tomorrow, 12)}),
            )
            .await,
            404,
            "not_found",
        );
    }
    assert_error(
        &unstock(
            &app,
            &app.agent_key("bot"),
            &held,
            json!({"planned_at": local(tomorrow, 12)}),
        )
        .await,
        403,
        "forbidden",
    );
    assert_eq!(status_of(&app, &held).await, "stocked");

    // Tomorrow already holds TW-T001's two posts.
    approved(
        &app,
        &op1,
        "TW-T001",
        "tomorrow morning",
        Some(&local(tomorrow, 9)),
    )
    .await;
    approved(
        &app,
        &op1,
        "TW-T001",
        "tomorrow at ten",
        Some(&local(tomorrow, 10)),
    )
    .await;
    let v = assert_error(
        &unstock(
            &app,
            &op1,
            &held,
            json!({"planned_at": local(tomorrow, 12)}),
        )
        .await,
        409,
        "already_covered",
    );
    assert_eq!(v["extra"], false, "{v}");
    assert_eq!(status_of(&app, &held).await, "stocked");

    // A person asked for an extra post: one more fits. The body is as the specification
    // writes it: the post's `id` again, and `request_id` in the role of the Idempotency-Key.
    let other = "00000000-0000-4000-8000-000000000000";
    let as_written = |id: &str| {
        json!({"id": id, "planned_at": local(tomorrow, 12), "extra": true,
               "request_id": "unstock-held-1"})
    };
    assert_invalid(&unstock(&app, &op1, &held, as_written(other)).await, "id");
    let path = format!("{AGENT}/posts/{held}/unstock");
    assert_invalid(
        &app.client
            .post_idem(&path, &op1, "another-key", &as_written(&held))
            .await,
        "request_id",
    );
    assert_eq!(status_of(&app, &held).await, "stocked", "nothing moved");
    let first = unstock(&app, &op1, &held, as_written(&held)).await;
    let v = ok(&first);
    assert_eq!(first.header("Idempotent-Replayed"), None);
    // Resent with the same request_id, as a body field or as the header: the first result.
    for again in [
        unstock(&app, &op1, &held, as_written(&held)).await,
        app.client
            .post_idem(
                &path,
                &op1,
                "unstock-held-1",
                &json!({"planned_at": local(tomorrow, 12), "extra": true}),
            )
            .await,
    ] {
        assert_eq!(again.header("Idempotent-Replayed"), Some("true"));
        assert_eq!(ok(&again), v);
    }
    assert_eq!(v["post"]["id"], held.as_str());
    assert_eq!(v["post"]["status"], "internal_review", "{v}");
    assert_eq!(v["post"]["planned_at"], utc_of_taipei(tomorrow, 12), "{v}");
    assert_eq!(v["post"]["unchanged"], false);
    assert_eq!(status_of(&app, &held).await, "internal_review");
    assert_eq!(events(&app, &held, "unstocked").await, 1);
    assert_eq!(
        app.count(&format!(
            "SELECT count(*) AS n FROM posts WHERE id = '{held}' AND stocked_at IS NULL \
             AND planned_at = '{}'",
            utc_of_taipei(tomorrow, 12)
        ))
        .await,
        1
    );
    let inv = inventory(&app, &op1, "").await;
    assert!(inv_post(&inv, &held).is_none(), "left the inventory: {inv}");
    assert!(inv_account(&inv, "TW-T001").is_none(), "{inv}");

    // Not in stock any more.
    assert_error(
        &unstock(&app, &op1, &held, json!({"planned_at": local(later, 12)})).await,
        422,
        "rejected",
    );
    let review = in_review(&app, &op1, "TW-T001", "never stocked").await;
    assert_error(
        &unstock(&app, &op1, &review, json!({"planned_at": local(later, 12)})).await,
        422,
        "rejected",
    );

    // The extra is taken too: the next is refused, saying an extra was asked for.
    let next = in_review(&app, &op1, "TW-T001", "second held post").await;
    ok(&stock(&app, &op1, &next, json!({})).await);
    let v = assert_error(
        &unstock(
            &app,
            &op1,
            &next,
            json!({"planned_at": local(tomorrow, 15), "extra": true}),
        )
        .await,
        409,
        "already_covered",
    );
    assert_eq!(v["extra"], true, "{v}");
    let v = assert_error(
        &unstock(
            &app,
            &op1,
            &next,
            json!({"planned_at": local(tomorrow, 15)}),
        )
        .await,
        409,
        "already_covered",
    );
    assert_eq!(v["extra"], false, "{v}");

    // The day after has room; an ISO time with a zone works as well.
    let at = utc_of_taipei(later, 8);
    let v = ok(&unstock(&app, &op1, &next, json!({"planned_at": at})).await);
    assert_eq!(v["post"]["status"], "internal_review");
    assert_eq!(v["post"]["planned_at"], at.as_str());
}

#[tokio::test(flavor = "multi_thread")]
async fn unstock_needs_an_active_account() {
    let app = spawn_app().await;
    let op1 = app.agent_key("op1");
    let tomorrow = taipei_day(1);
    let (warming, status) = submit(
        &app,
        &op1,
        json!({"code": "TW-K001", "body": "for a warming account"}),
    )
    .await;
    assert_eq!(status, "stocked");
    let v = assert_error(
        &unstock(
            &app,
            &op1,
            &warming,
            json!({"planned_at": local(tomorrow, 12)}),
        )
        .await,
        422,
        "rejected",
    );
    assert!(v["message"].as_str().unwrap().contains("warming"), "{v}");
    assert_eq!(status_of(&app, &warming).await, "stocked");

    let paused = in_review(&app, &op1, "TW-T001", "paused with its account").await;
    pause(&app, &op1, "TW-T001", "paused", "verification").await;
    assert_eq!(status_of(&app, &paused).await, "stocked");
    assert_error(
        &unstock(
            &app,
            &op1,
            &paused,
            json!({"planned_at": local(tomorrow, 12)}),
        )
        .await,
        422,
        "rejected",
    );

    // Active again: it may be released (restoring released nothing by itself).
    set_state(
        &app,
        &op1,
        "TW-T001",
        json!({"state": "restored", "occurred_at": now_iso()}),
    )
    .await;
    assert_eq!(status_of(&app, &paused).await, "stocked");
    let v = ok(&unstock(
        &app,
        &op1,
        &paused,
        json!({"planned_at": local(tomorrow, 12)}),
    )
    .await);
    assert_eq!(v["post"]["status"], "internal_review");
}

#[tokio::test(flavor = "multi_thread")]
async fn an_unstocked_post_that_waited_for_a_rewrite_goes_back_to_redo() {
    let app = spawn_app().await;
    let op1 = app.agent_key("op1");
    let tomorrow = taipei_day(1);

    let back = in_review(&app, &op1, "TW-T001", "sent back body").await;
    let v = review_move(
        &app,
        &back,
        json!({"to": "sent_back", "comment": "too long"}),
    )
    .await;
    assert_eq!(v["post"]["status"], "sent_back", "{v}");
    let rewrite = in_review(&app, &op1, "TW-T001", "rewrite me").await;
    let v = review_move(
        &app,
        &rewrite,
        json!({"to": "rewrite_requested", "comment": "more emoji"}),
    )
    .await;
    assert_eq!(v["post"]["status"], "rewrite_requested", "{v}");
    let redo = ok(&get(&app, &op1, "/drafts").await);
    assert_eq!(redo["drafts"].as_array().unwrap().len(), 2, "{redo}");

    // The account is paused: both wait in inventory, flagged as waiting for a rewrite.
    let v = pause(&app, &op1, "TW-T001", "paused", "checkpoint").await;
    assert_eq!(v["stocked_posts"], 2, "{v}");
    let inv = inventory(&app, &op1, "").await;
    let b = inv_post(&inv, &back).expect("sent back one stocked");
    assert_eq!(b["waiting_rewrite"], true, "{b}");
    assert_eq!(b["from_status"], "sent_back");
    let r = inv_post(&inv, &rewrite).expect("rewrite one stocked");
    assert_eq!(r["waiting_rewrite"], true, "{r}");
    assert_eq!(r["from_status"], "rewrite_requested");
    let redo = ok(&get(&app, &op1, "/drafts").await);
    assert_eq!(
        redo["drafts"],
        json!([]),
        "stocked posts are not redo: {redo}"
    );
    let day = work_today(&app, &op1).await;
    assert_eq!(day["summary"]["redo"], 0);

    set_state(
        &app,
        &op1,
        "TW-T001",
        json!({"state": "restored", "occurred_at": now_iso()}),
    )
    .await;
    let v = ok(&unstock(
        &app,
        &op1,
        &back,
        json!({"planned_at": local(tomorrow, 12)}),
    )
    .await);
    assert_eq!(v["post"]["status"], "sent_back", "{v}");
    let v = ok(&unstock(
        &app,
        &op1,
        &rewrite,
        json!({"planned_at": local(tomorrow, 13)}),
    )
    .await);
    assert_eq!(v["post"]["status"], "rewrite_requested", "{v}");
    assert_eq!(events(&app, &back, "unstocked").await, 1);

    let redo = ok(&get(&app, &op1, "/drafts").await);
    let list = redo["drafts"].as_array().unwrap();
    let b = list
        .iter()
        .find(|d| d["id"] == back.as_str())
        .expect("sent back again in redo");
    assert_eq!(b["status"], "sent_back");
    assert_eq!(b["instruction"], "too long");
    let r = list
        .iter()
        .find(|d| d["id"] == rewrite.as_str())
        .expect("rewrite again in redo");
    assert_eq!(r["status"], "rewrite_requested");
    assert_eq!(r["instruction"], "more emoji");
    let day = work_today(&app, &op1).await;
    assert_eq!(day["summary"]["redo"], 2, "{day}");
}

// ---------------------------------------------------------------------------------------------
// POST /posts/{id}/delete-stocked

#[tokio::test(flavor = "multi_thread")]
async fn delete_stocked_on_behalf_of_an_agency_person() {
    let app = spawn_app().await;
    let op1 = app.agent_key("op1");
    let id = scheduled(&app, &op1, "TW-T001", "a post nobody wants", "tool-5").await;
    ok(&stock(&app, &op1, &id, json!({"reason": "campaign on hold"})).await);
    let path = format!("/posts/{id}/delete-stocked");

    // Who and where are required.
    let mut body = relay_body("agency");
    body.as_object_mut().unwrap().remove("on_behalf_of");
    let v = assert_invalid(&post(&app, &op1, &path, body).await, "on_behalf_of");
    assert!(
        v["message"].as_str().unwrap().contains("on_behalf_of"),
        "{v}"
    );
    let mut body = relay_body("agency");
    body.as_object_mut().unwrap().remove("origin");
    assert_invalid(&post(&app, &op1, &path, body).await, "origin");
    let mut body = relay_body("agency");
    body["origin"]["platform"] = json!("carrier-pigeon");
    let res = post(&app, &op1, &path, body).await;
    assert_eq!(res.status, 400, "{}", res.text());

    // A client may not delete stock.
    assert_error(
        &post(&app, &op1, &path, relay_body("client")).await,
        403,
        "forbidden",
    );
    // The community agent lacks the scope; other agents do not see the post.
    assert_error(
        &post(&app, &app.agent_key("bot"), &path, relay_body("agency")).await,
        403,
        "forbidden",
    );
    for agent in ["op2", "jp1", "other1"] {
        assert_error(
            &post(&app, &app.agent_key(agent), &path, relay_body("agency")).await,
            404,
            "not_found",
        );
    }
    assert_eq!(status_of(&app, &id).await, "stocked");
    assert_eq!(events(&app, &id, "deleted from inventory").await, 0);

    // On Ann's behalf it leaves the inventory; the post and its record remain.
    let v = ok(&post(&app, &op1, &path, relay_body("agency")).await);
    assert_eq!(v["post"]["id"], id.as_str());
    assert_eq!(v["post"]["status"], "cancelled", "{v}");
    assert_eq!(status_of(&app, &id).await, "cancelled");
    assert_ne!(post_field(&app, &id, "discarded_at").await, "<null>");
    assert_eq!(post_field(&app, &id, "body").await, "a post nobody wants");
    assert_eq!(
        events(&app, &id, "stocked").await,
        1,
        "the record keeps everything"
    );
    assert_eq!(
        app.count(&format!(
            "SELECT count(*) AS n FROM review_events WHERE post_id = '{id}' \
             AND action = 'deleted from inventory' AND actor_kind = 'member' \
             AND actor_name = 'Ann' AND reason = 'the campaign was dropped' \
             AND detail #>> '{{relayed,origin,message_ref}}' = 'msg-42'"
        ))
        .await,
        1
    );
    let inv = inventory(&app, &op1, "").await;
    assert!(inv_post(&inv, &id).is_none(), "{inv}");
    let day = work_today(&app, &op1).await;
    assert_eq!(day["summary"]["inventory"], 0, "{day}");
    // It is still in the agent's tool: removing it there is still asked for.
    assert_eq!(unschedule_ids(&day), std::slice::from_ref(&id), "{day}");

    // It can no longer be scheduled.
    let res = post(
        &app,
        &op1,
        "/posts/report",
        json!({"posts": [{"code": "TW-T001", "status": "scheduled", "post_id": id,
                          "scheduled_for": in_minutes(30)}]}),
    )
    .await;
    let v = assert_error(&res, 422, "rejected");
    assert_eq!(v["results"][0]["ok"], false, "{v}");
    assert_eq!(v["results"][0]["error"]["code"], "rejected", "{v}");
    assert_eq!(status_of(&app, &id).await, "cancelled");

    // Not in inventory (any more, or ever).
    assert_error(
        &post(&app, &op1, &path, relay_body("agency")).await,
        422,
        "rejected",
    );
    let review = in_review(&app, &op1, "TW-T001", "in review, not in stock").await;
    assert_error(
        &post(
            &app,
            &op1,
            &format!("/posts/{review}/delete-stocked"),
            relay_body("agency"),
        )
        .await,
        422,
        "rejected",
    );
    assert_eq!(status_of(&app, &review).await, "internal_review");
    // Nor can it be stocked again.
    assert_error(&stock(&app, &op1, &id, json!({})).await, 422, "rejected");

    // Reported cancelled (removed from the tool), it leaves the day's unschedule list.
    let r = report(
        &app,
        &op1,
        json!([{"code": "TW-T001", "status": "cancelled", "post_id": id}]),
    )
    .await;
    assert_eq!(r["results"][0]["action"], "unscheduled", "{r}");
    assert_eq!(status_of(&app, &id).await, "cancelled");
    let day = work_today(&app, &op1).await;
    assert_eq!(day["unschedule_stocked"], json!([]), "{day}");
}

// ---------------------------------------------------------------------------------------------
// GET /posts/planned

async fn planned(app: &TestApp, key: &str, query: &str) -> Value {
    ok(&get(app, key, &format!("/posts/planned{query}")).await)
}

/// The day rows of one account: (date, missing).
fn planned_rows(v: &Value, code: &str) -> Vec<Value> {
    v["days"]
        .as_array()
        .expect("days[]")
        .iter()
        .filter(|d| d["code"] == code)
        .cloned()
        .collect()
}

fn planned_inventory<'a>(v: &'a Value, code: &str) -> &'a Value {
    v["inventory"]
        .as_array()
        .expect("inventory[]")
        .iter()
        .find(|a| a["code"] == code)
        .unwrap_or_else(|| panic!("{code} in planned inventory: {v}"))
}

#[tokio::test(flavor = "multi_thread")]
async fn planned_posts_lists_the_days_that_still_need_posts() {
    let app = spawn_app().await;
    let op1 = app.agent_key("op1");
    let today = taipei_today();
    let tomorrow = taipei_day(1);

    // Nothing written yet: seven days of every active account.
    let v = planned(&app, &op1, "").await;
    let t = planned_rows(&v, "TW-T001");
    let dates: Vec<String> = t
        .iter()
        .map(|d| d["date"].as_str().unwrap().to_owned())
        .collect();
    let want: Vec<String> = (0..7).map(|n| taipei_day(n).to_string()).collect();
    assert_eq!(dates, want, "{v}");
    for d in &t {
        assert_eq!(d["target"], 2, "{d}");
        assert_eq!(d["missing"], 2, "{d}");
        assert_eq!(
            (
                d["published"].clone(),
                d["scheduled"].clone(),
                d["planned"].clone()
            ),
            (json!(0), json!(0), json!(0))
        );
        assert_eq!(d["market"], "TW");
        assert_eq!(d["persona"], "Mia");
        assert_eq!(d["platform"], "threads");
        assert_eq!(d["inventory_available"], 0);
    }
    for code in ["TW-I001", "TW-L001", "TW-L002"] {
        assert_eq!(planned_rows(&v, code).len(), 7, "{code}: {v}");
    }
    assert!(
        planned_rows(&v, "TW-K001").is_empty(),
        "warming needs no posts"
    );
    assert_eq!(v["days"].as_array().unwrap().len(), 28);
    assert!(planned_rows(&v, "TW-T002").is_empty(), "op2's account");
    let codes: Vec<&str> = v["inventory"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a["code"].as_str().unwrap())
        .collect();
    assert_eq!(
        codes,
        ["TW-I001", "TW-K001", "TW-L001", "TW-L002", "TW-T001"]
    );
    let k = planned_inventory(&v, "TW-K001");
    assert_eq!(k["active"], false, "{k}");
    assert_eq!(k["state"], "warming");
    assert_eq!(k["count"], 0);
    assert_eq!(planned_inventory(&v, "TW-T001")["active"], true);

    // days and date.
    assert_invalid(&get(&app, &op1, "/posts/planned?days=0").await, "days");
    assert_invalid(&get(&app, &op1, "/posts/planned?days=15").await, "days");
    assert_invalid(&get(&app, &op1, "/posts/planned?days=seven").await, "days");
    assert_invalid(
        &get(&app, &op1, "/posts/planned?date=2026-13-40").await,
        "date",
    );
    assert_eq!(
        planned_rows(&planned(&app, &op1, "?days=14").await, "TW-T001").len(),
        14
    );
    let one = planned(&app, &op1, &format!("?date={tomorrow}&days=1")).await;
    let rows = planned_rows(&one, "TW-T001");
    assert_eq!(rows.len(), 1, "{one}");
    assert_eq!(rows[0]["date"], tomorrow.to_string());
    let fixed = planned(&app, &op1, "?date=2030-03-01&days=2").await;
    let dates: Vec<String> = planned_rows(&fixed, "TW-T001")
        .iter()
        .map(|d| d["date"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(dates, ["2030-03-01", "2030-03-02"]);

    // Tomorrow: one approved and one in review planned for it cover TW-T001's target.
    approved(
        &app,
        &op1,
        "TW-T001",
        "approved for tomorrow",
        Some(&local(tomorrow, 9)),
    )
    .await;
    let one = planned(&app, &op1, &format!("?date={tomorrow}&days=1")).await;
    let rows = planned_rows(&one, "TW-T001");
    assert_eq!(rows.len(), 1, "{one}");
    assert_eq!(rows[0]["planned"], 1, "{one}");
    assert_eq!(rows[0]["missing"], 1, "{one}");
    let (_, status) = submit(
        &app,
        &op1,
        json!({"code": "TW-T001", "body": "in review for tomorrow", "planned_at": local(tomorrow, 18)}),
    )
    .await;
    assert_eq!(status, "internal_review");
    let one = planned(&app, &op1, &format!("?date={tomorrow}&days=1")).await;
    assert!(planned_rows(&one, "TW-T001").is_empty(), "{one}");
    // A draft or a post sent back does not hold a day.
    let (_, status) = submit(
        &app,
        &op1,
        json!({"code": "TW-I001", "body": "just a draft", "submit": false,
               "planned_at": local(tomorrow, 9)}),
    )
    .await;
    assert_eq!(status, "draft");
    let one = planned(&app, &op1, &format!("?date={tomorrow}&days=1")).await;
    assert_eq!(planned_rows(&one, "TW-I001")[0]["missing"], 1, "{one}");

    // Today: one published and one scheduled cover it.
    published(&app, &op1, "TW-T001", "out this morning", "thr-71").await;
    let v = planned(&app, &op1, "?days=1").await;
    let rows = planned_rows(&v, "TW-T001");
    assert_eq!(rows[0]["date"], today.to_string());
    assert_eq!(
        (rows[0]["published"].clone(), rows[0]["missing"].clone()),
        (json!(1), json!(1))
    );
    scheduled(&app, &op1, "TW-T001", "going out soon", "tool-71").await;
    let v = planned(&app, &op1, "?days=1").await;
    assert!(planned_rows(&v, "TW-T001").is_empty(), "{v}");

    // Inventory shows on every day row and per account.
    let held = in_review(&app, &op1, "TW-I001", "held for later").await;
    ok(&stock(&app, &op1, &held, json!({})).await);
    submit(
        &app,
        &op1,
        json!({"code": "TW-K001", "body": "warming stock"}),
    )
    .await;
    let v = planned(&app, &op1, "").await;
    for d in planned_rows(&v, "TW-I001") {
        assert_eq!(d["inventory_available"], 1, "{d}");
    }
    assert_eq!(planned_inventory(&v, "TW-I001")["count"], 1);
    assert_eq!(planned_inventory(&v, "TW-I001")["active"], true);
    assert_eq!(planned_inventory(&v, "TW-K001")["count"], 1);
    assert_eq!(planned_inventory(&v, "TW-K001")["active"], false);

    // A paused account needs nothing and shows as inactive.
    pause(&app, &op1, "TW-I001", "paused", "checkpoint").await;
    let v = planned(&app, &op1, "").await;
    assert!(planned_rows(&v, "TW-I001").is_empty(), "{v}");
    let i = planned_inventory(&v, "TW-I001");
    assert_eq!(
        (i["active"].clone(), i["state"].clone()),
        (json!(false), json!("paused"))
    );

    // Each agent plans only its own accounts.
    let op2 = planned(&app, &app.agent_key("op2"), "").await;
    let codes: Vec<&str> = op2["inventory"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a["code"].as_str().unwrap())
        .collect();
    assert_eq!(codes, ["TW-T002"]);
    assert_eq!(planned_rows(&op2, "TW-T002").len(), 7);
    assert_eq!(op2["days"].as_array().unwrap().len(), 7);
    let jp1 = planned(&app, &app.agent_key("jp1"), "").await;
    let rows = planned_rows(&jp1, "JP-T001");
    assert_eq!(rows.len(), 7, "{jp1}");
    assert_eq!(rows[0]["date"], today_in("Asia/Tokyo").to_string());
    assert_eq!(rows[0]["market"], "JP");
    assert_eq!(jp1["days"].as_array().unwrap().len(), 7);
    let other1 = planned(&app, &app.agent_key("other1"), "?days=1").await;
    let rows = planned_rows(&other1, "TW-T001");
    assert_eq!(rows.len(), 1, "{other1}");
    assert_eq!(rows[0]["persona"], "Zoe");
    assert_eq!(
        rows[0]["missing"], 1,
        "Mia's posts do not cover Zoe's day: {other1}"
    );
    assert_eq!(planned_inventory(&other1, "TW-T001")["count"], 0);
    assert_error(
        &get(&app, &app.agent_key("bot"), "/posts/planned").await,
        403,
        "forbidden",
    );
}

// ---------------------------------------------------------------------------------------------
// GET /work/today, complete

#[tokio::test(flavor = "multi_thread")]
async fn the_complete_day_counts_only_reported_posts() {
    let app = spawn_app().await;
    let op1 = app.agent_key("op1");
    let today = taipei_today();

    let day = work_today(&app, &op1).await;
    assert_eq!(
        day["dates"],
        json!([{"market": "TW", "date": today.to_string()}]),
        "{day}"
    );
    assert_eq!(day["tasks"], json!([]));
    assert_eq!(day["follow_ups"], json!([]));
    assert_eq!(day["last_report_at"], Value::Null);
    assert_eq!(day["summary"]["tasks"], 0);
    assert_eq!(day["summary"]["follow_ups"], 0);
    assert_eq!(day["agent"]["name"], "op1", "{day}");

    // An approved post planned for now does not cover the day: it was not reported.
    let appr = approved(&app, &op1, "TW-T001", "approved for today", None).await;
    app.sql(&format!(
        "UPDATE posts SET planned_at = now() WHERE id = '{appr}'"
    ))
    .await;
    let day = work_today(&app, &op1).await;
    let row = missing_row(&day, "TW-T001").expect("still missing");
    assert_eq!(row["missing"], 2, "{row}");
    assert_eq!(
        (row["published"].clone(), row["scheduled"].clone()),
        (json!(0), json!(0))
    );
    assert_eq!(row["date"], today.to_string());
    assert_eq!(day["summary"]["covered"], 0);

    // Reported published, then scheduled: covered.
    published(&app, &op1, "TW-T001", "went out today", "thr-81").await;
    let day = work_today(&app, &op1).await;
    let row = missing_row(&day, "TW-T001").expect("one missing");
    assert_eq!(
        (
            row["published"].clone(),
            row["scheduled"].clone(),
            row["missing"].clone()
        ),
        (json!(1), json!(0), json!(1))
    );
    assert_eq!(day["summary"]["covered"], 1);
    let reported_at = day["last_report_at"]
        .as_str()
        .expect("last_report_at")
        .to_owned();
    let at: Timestamp = reported_at.parse().expect("a time");
    assert!(
        Timestamp::now().duration_since(at).abs() < SignedDuration::from_mins(5),
        "{reported_at}"
    );
    report(
        &app,
        &op1,
        json!([{"code": "TW-T001", "status": "scheduled", "post_id": appr,
                "scheduled_for": in_minutes(1), "platform_post_id": "tool-81"}]),
    )
    .await;
    let day = work_today(&app, &op1).await;
    assert!(missing_row(&day, "TW-T001").is_none(), "{day}");
    assert_eq!(day["summary"]["covered"], 2);
    let s = &day["summary"];
    assert_eq!(s["expected"], 5, "{s}");
    assert_eq!(s["missing_accounts"], 3, "{s}");
    assert_eq!(s["missing_posts"], 3, "{s}");

    // Another date: nothing reported there yet.
    let tomorrow = taipei_day(1);
    let next = ok(&get(&app, &op1, &format!("/work/today?date={tomorrow}")).await);
    assert_eq!(
        next["dates"],
        json!([{"market": "TW", "date": tomorrow.to_string()}])
    );
    let row = missing_row(&next, "TW-T001").expect("tomorrow is open");
    assert_eq!(row["missing"], 2);
    assert_eq!(row["date"], tomorrow.to_string());
    assert_invalid(&get(&app, &op1, "/work/today?date=tomorrow").await, "date");

    // Inventory: the warming account is out of rotation with its stock.
    submit(
        &app,
        &op1,
        json!({"code": "TW-K001", "body": "warming stock one"}),
    )
    .await;
    submit(
        &app,
        &op1,
        json!({"code": "TW-K001", "body": "warming stock two"}),
    )
    .await;
    let held = in_review(&app, &op1, "TW-I001", "held instagram post").await;
    ok(&stock(&app, &op1, &held, json!({})).await);
    let day = work_today(&app, &op1).await;
    assert_eq!(
        day["not_in_rotation"],
        json!([{"code": "TW-K001", "platform": "tiktok", "state": "warming", "inventory": 2}])
    );
    assert_eq!(day["summary"]["inventory"], 3, "{day}");
    assert_eq!(
        missing_row(&day, "TW-I001").unwrap()["inventory_available"],
        1
    );
    assert_eq!(day["summary"]["unschedule_stocked"], 0);
    assert_eq!(day["tasks"], json!([]));
    assert_eq!(day["follow_ups"], json!([]));

    // Nobody else's day moved.
    let op2 = work_today(&app, &app.agent_key("op2")).await;
    assert_eq!(op2["last_report_at"], Value::Null, "{op2}");
    assert_eq!(op2["summary"]["inventory"], 0);
    assert_eq!(op2["unschedule_stocked"], json!([]));
    let other1 = work_today(&app, &app.agent_key("other1")).await;
    let row = missing_row(&other1, "TW-T001").expect("Zoe's TW-T001");
    assert_eq!(row["missing"], 1, "{other1}");
    assert_eq!(other1["summary"]["inventory"], 0);
    assert_eq!(other1["last_report_at"], Value::Null);
}

#[tokio::test(flavor = "multi_thread")]
async fn the_japanese_agent_counts_its_day_in_tokyo_time() {
    let app = spawn_app().await;
    let jp1 = app.agent_key("jp1");
    let tokyo = today_in("Asia/Tokyo");

    let day = work_today(&app, &jp1).await;
    assert_eq!(
        day["dates"],
        json!([{"market": "JP", "date": tokyo.to_string()}]),
        "{day}"
    );
    let row = missing_row(&day, "JP-T001").expect("JP-T001 needs a post");
    assert_eq!(row["date"], tokyo.to_string());
    assert_eq!(row["market"], "JP");
    assert_eq!(row["persona"], "Yui");
    assert_eq!(row["missing"], 1);

    // Published just after midnight in Tokyo (still the day before in Taipei).
    let r = report(
        &app,
        &jp1,
        json!([{"code": "JP-T001", "status": "published", "body": "おはよう",
                "platform_post_id": "jp-1", "permalink": "https://threads.net/@yui/post/1",
                "published_at": format!("{tokyo}T00:00:30+09:00")}]),
    )
    .await;
    assert_eq!(r["results"][0]["action"], "inserted", "{r}");
    let day = work_today(&app, &jp1).await;
    assert!(
        missing_row(&day, "JP-T001").is_none(),
        "covered in Tokyo's day: {day}"
    );
    assert_eq!(day["summary"]["covered"], 1);
    assert!(day["last_report_at"].is_string());
    assert_eq!(day["tasks"], json!([]));
    assert_eq!(day["follow_ups"], json!([]));

    // The agent of Taiwan has nothing of it.
    let op1 = work_today(&app, &app.agent_key("op1")).await;
    assert_eq!(op1["last_report_at"], Value::Null);
    assert!(missing_row(&op1, "JP-T001").is_none());
}

// ---------------------------------------------------------------------------------------------
// more of the stocked rows of the state table

#[tokio::test(flavor = "multi_thread")]
async fn reports_about_stocked_posts_follow_the_state_table() {
    let app = spawn_app().await;
    let op1 = app.agent_key("op1");
    let sched = scheduled(&app, &op1, "TW-T001", "scheduled then stocked", "tool-31").await;
    let quiet = in_review(&app, &op1, "TW-T001", "quietly stocked").await;
    pause(&app, &op1, "TW-T001", "paused", "checkpoint").await;
    assert_eq!(status_of(&app, &sched).await, "stocked");

    // Scheduled: refused, nothing written.
    let res = post(
        &app,
        &op1,
        "/posts/report",
        json!({"posts": [{"code": "TW-T001", "status": "scheduled", "post_id": sched,
                          "scheduled_for": in_minutes(60)}]}),
    )
    .await;
    let v = assert_error(&res, 422, "rejected");
    assert_eq!(v["results"][0]["error"]["code"], "rejected", "{v}");
    assert_eq!(status_of(&app, &sched).await, "stocked");

    // Failed: nothing changes.
    let r = report(
        &app,
        &op1,
        json!([{"code": "TW-T001", "status": "failed", "post_id": sched,
                "failure_reason": "the tool gave up"}]),
    )
    .await;
    assert_eq!(r["results"][0]["status"], "stocked", "{r}");
    assert_eq!(r["results"][0]["action"], "unchanged", "{r}");
    assert_eq!(status_of(&app, &sched).await, "stocked");
    assert_eq!(post_field(&app, &sched, "unschedule_pending").await, "true");

    // Published after all: it leaves inventory with a warning, and nothing is left to remove.
    let r = report(
        &app,
        &op1,
        json!([{"code": "TW-T001", "status": "published", "post_id": sched,
                "platform_post_id": "thr-31", "permalink": "https://threads.net/@mia/post/31"}]),
    )
    .await;
    let item = &r["results"][0];
    assert_eq!(item["status"], "published", "{r}");
    assert_eq!(item["published_from_stock"], true, "{r}");
    assert!(
        item["warning"].as_str().is_some_and(|w| !w.is_empty()),
        "{r}"
    );
    assert_eq!(status_of(&app, &sched).await, "published");
    let inv = inventory(&app, &op1, "").await;
    assert!(inv_post(&inv, &sched).is_none(), "{inv}");
    assert_eq!(inv_account(&inv, "TW-T001").unwrap()["count"], 1);
    assert!(inv_post(&inv, &quiet).is_some());
    let day = work_today(&app, &op1).await;
    assert_eq!(day["unschedule_stocked"], json!([]), "{day}");
    assert_eq!(day["summary"]["inventory"], 1);

    // A stocked post never scheduled has nothing to confirm: confirming answers unchanged.
    let v = ok(&post(
        &app,
        &op1,
        &format!("/posts/{quiet}/unscheduled"),
        json!({}),
    )
    .await);
    assert_eq!(v["post"]["status"], "stocked");
    assert_eq!(v["post"]["unchanged"], true, "{v}");
    assert_eq!(events(&app, &quiet, "unscheduled").await, 0);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_legacy_code_account_is_stocked_by_its_platform_and_listed_with_its_legacy_code() {
    let app = spawn_app().await;
    let op1 = app.agent_key("op1");
    let threads = scheduled(&app, &op1, "TW-L001", "legacy threads post", "tool-41").await;
    let tiktok = in_review(&app, &op1, "TW-L002", "legacy tiktok post").await;

    let res = post(
        &app,
        &op1,
        "/accounts/OLD1/state",
        json!({"state": "paused", "reason": "checkpoint", "occurred_at": now_iso()}),
    )
    .await;
    assert_error(&res, 409, "ambiguous_code");
    assert_eq!(status_of(&app, &threads).await, "scheduled");

    let v = ok(&post(
        &app,
        &op1,
        "/accounts/OLD1/state?platform=threads",
        json!({"state": "paused", "reason": "checkpoint", "occurred_at": now_iso()}),
    )
    .await);
    assert_eq!(v["code"], "TW-L001", "{v}");
    assert_eq!(v["stocked_posts"], 1, "{v}");
    assert_eq!(status_of(&app, &threads).await, "stocked");
    assert_eq!(status_of(&app, &tiktok).await, "internal_review");

    let day = work_today(&app, &op1).await;
    let u = &day["unschedule_stocked"][0];
    assert_eq!(u["id"], threads.as_str(), "{day}");
    assert_eq!(u["code"], "TW-L001");
    assert_eq!(u["legacy_code"], "OLD1");
    assert_eq!(u["platform"], "threads");
    assert_eq!(u["scheduler_ref"], "tool-41");
}

#[tokio::test(flavor = "multi_thread")]
async fn unstock_counts_the_day_in_the_accounts_own_zone() {
    let app = spawn_app().await;
    let jp1 = app.agent_key("jp1");
    let tomorrow = today_in("Asia/Tokyo")
        .tomorrow()
        .expect("tomorrow in Tokyo");

    // JP-T001 (target 1): one approved just after midnight of Tokyo's tomorrow (still the day
    // before in Taipei) fills that day.
    let (first, status) = submit(
        &app,
        &jp1,
        json!({"code": "JP-T001", "body": "early bird", "planned_at": format!("{tomorrow} 00:30")}),
    )
    .await;
    assert_eq!(status, "internal_review");
    approve(&app, &first).await;
    let held = in_review(&app, &jp1, "JP-T001", "held in Tokyo").await;
    ok(&stock(&app, &jp1, &held, json!({})).await);

    let v = assert_error(
        &unstock(
            &app,
            &jp1,
            &held,
            json!({"planned_at": format!("{tomorrow} 12:00")}),
        )
        .await,
        409,
        "already_covered",
    );
    assert_eq!(v["extra"], false);
    // Market-local times are read in Tokyo's zone.
    let v = ok(&unstock(
        &app,
        &jp1,
        &held,
        json!({"planned_at": format!("{} 12:00", tomorrow.tomorrow().unwrap())}),
    )
    .await);
    let want = tomorrow
        .tomorrow()
        .unwrap()
        .at(12, 0, 0, 0)
        .to_zoned(zone("Asia/Tokyo"))
        .unwrap()
        .timestamp();
    assert_eq!(v["post"]["planned_at"], fmt_utc(want), "{v}");
    // Other agents cannot move it.
    for agent in ["op1", "op2", "other1"] {
        assert_error(
            &stock(&app, &app.agent_key(agent), &held, json!({})).await,
            404,
            "not_found",
        );
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_day_holding_reported_posts_refuses_more_stock() {
    let app = spawn_app().await;
    let op1 = app.agent_key("op1");
    let tomorrow = taipei_day(1);
    // TW-I001 (target 1): scheduled in the tool for tomorrow evening.
    let id = approved(&app, &op1, "TW-I001", "for tomorrow evening", None).await;
    report(
        &app,
        &op1,
        json!([{"code": "TW-I001", "status": "scheduled", "post_id": id,
                "scheduled_for": local(tomorrow, 20), "platform_post_id": "ig-tool-1"}]),
    )
    .await;
    let held = in_review(&app, &op1, "TW-I001", "held instagram post").await;
    ok(&stock(&app, &op1, &held, json!({})).await);
    let v = assert_error(
        &unstock(&app, &op1, &held, json!({"planned_at": local(tomorrow, 9)})).await,
        409,
        "already_covered",
    );
    assert_eq!(v["extra"], false);

    // Replayed with the same Idempotency-Key, a release answers the same.
    let path = format!("{AGENT}/posts/{held}/unstock");
    let body = json!({"planned_at": local(taipei_day(2), 9)});
    let first = app.client.post_idem(&path, &op1, "unstock-1", &body).await;
    let v1 = ok(&first);
    assert_eq!(v1["post"]["status"], "internal_review");
    let again = app.client.post_idem(&path, &op1, "unstock-1", &body).await;
    assert_eq!(again.status, 200, "{}", again.text());
    assert_eq!(again.header("idempotent-replayed"), Some("true"));
    assert_eq!(again.json(), v1);
    assert_eq!(events(&app, &held, "unstocked").await, 1);
}

#[tokio::test(flavor = "multi_thread")]
async fn delete_stocked_checks_its_relay_fields() {
    let app = spawn_app().await;
    let op1 = app.agent_key("op1");
    let (id, status) = submit(
        &app,
        &op1,
        json!({"code": "TW-K001", "body": "warming stock"}),
    )
    .await;
    assert_eq!(status, "stocked");
    let path = format!("/posts/{id}/delete-stocked");

    let mut body = relay_body("agency");
    body["effective_at"] = json!("yesterday");
    assert_invalid(&post(&app, &op1, &path, body).await, "effective_at");
    let mut body = relay_body("agency");
    body["on_behalf_of"] = json!({"role": "agency"});
    let res = post(&app, &op1, &path, body).await;
    let v = assert_error(&res, 400, "invalid_request");
    assert!(
        v["field"]
            .as_str()
            .is_some_and(|f| f.starts_with("on_behalf_of")),
        "{v}"
    );
    let mut body = relay_body("agency");
    body["on_behalf_of"]["role"] = json!("intern");
    let v = assert_error(&post(&app, &op1, &path, body).await, 400, "invalid_request");
    assert!(
        v["field"]
            .as_str()
            .is_some_and(|f| f.starts_with("on_behalf_of")),
        "{v}"
    );
    // The agent itself is no person to relay for, in any spelling.
    for name in ["op1", " OP1 "] {
        let mut body = relay_body("agency");
        body["on_behalf_of"]["name"] = json!(name);
        let v = assert_error(&post(&app, &op1, &path, body).await, 422, "rejected");
        assert_eq!(v["field"], "on_behalf_of.name", "{v}");
    }
    assert_eq!(status_of(&app, &id).await, "stocked");

    // An admin may, with a time.
    let mut body = relay_body("admin");
    body["on_behalf_of"]["name"] = json!("Root");
    body["effective_at"] = json!("2026-11-20T10:00:00+08:00");
    let v = ok(&post(&app, &op1, &path, body).await);
    assert_eq!(v["post"]["status"], "cancelled");
    assert_eq!(
        app.count(&format!(
            "SELECT count(*) AS n FROM review_events WHERE post_id = '{id}' \
             AND action = 'deleted from inventory' AND actor_name = 'Root'"
        ))
        .await,
        1
    );
    let day = work_today(&app, &op1).await;
    assert_eq!(
        day["not_in_rotation"][0]["inventory"], 0,
        "deleted stock no longer counts: {day}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_post_released_while_still_in_the_tool_can_be_cleared_the_way_the_day_says() {
    let app = spawn_app().await;
    let op1 = app.agent_key("op1");
    let id = scheduled(&app, &op1, "TW-T001", "still in my tool", "tool-61").await;
    ok(&stock(&app, &op1, &id, json!({"reason": "hold"})).await);
    assert_eq!(
        unschedule_ids(&work_today(&app, &op1).await),
        std::slice::from_ref(&id)
    );

    // Released before the agent removed it from its tool.
    let v = ok(&unstock(
        &app,
        &op1,
        &id,
        json!({"planned_at": local(taipei_day(1), 12)}),
    )
    .await);
    assert_eq!(v["post"]["status"], "internal_review", "{v}");
    assert_eq!(status_of(&app, &id).await, "internal_review");

    // Whatever the day still lists under unschedule_stocked must be clearable as its
    // instruction says: "report it cancelled" (the state table: listed in unschedule_stocked
    // until cancelled is reported).
    let day = work_today(&app, &op1).await;
    if unschedule_ids(&day).contains(&id) {
        let res = post(
            &app,
            &op1,
            "/posts/report",
            json!({"posts": [{"code": "TW-T001", "status": "cancelled", "post_id": id}]}),
        )
        .await;
        assert_eq!(
            res.status,
            200,
            "the day lists {id} (status internal_review, no longer in inventory) under \
             unschedule_stocked with {}, but reporting it cancelled is refused: {}",
            day["unschedule_stocked"][0]["instruction"],
            res.text()
        );
        let v = res.json();
        assert_eq!(v["results"][0]["action"], "unscheduled", "{v}");
        let day = work_today(&app, &op1).await;
        assert!(!unschedule_ids(&day).contains(&id), "{day}");
    }
}
