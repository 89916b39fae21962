//! Reports people read (Personal API GET /reports, GET /reports/{id}, POST /reports, POST
//! /reports/{id}/issue, and their MCP tools) over the standard tenant, built from what agents
//! reported (POST /posts/report, POST /metrics); and the Monday build on the job queue: once
//! over two instances, after a restart, and again when the instance holding it died. (Agent
//! post reports are `reports.rs`.)

use fleetdesk::worker::{RETENTION, Worker, weekly_job};
use fleetdesk_kernel::jobs::{JobQueue, LEASE, MAX_ATTEMPTS};
use fleetdesk_pg::PgStore;
use fleetdesk_tests::assert::{assert_error, ok, tool_result};
use fleetdesk_tests::client::Request;
use fleetdesk_tests::{Client, Response, TestApp, spawn_app};
use jiff::civil::Date;
use jiff::{SignedDuration, Timestamp, ToSpan};
use serde_json::{Value, json};
use std::time::Duration;

const AGENT: &str = "/api/agent/v1";
const USER: &str = "/api/user/v1";
const ANN: &str = "ann@acme.test";
const CLI: &str = "cli@brand.test";
const CID: &str = "cid@brand.test";
const OLGA: &str = "olga@other.test";
const ROOT: &str = "root@example.com";

// ---------------------------------------------------------------------------------------------
// helpers

fn today() -> Date {
    Timestamp::now().in_tz("Asia/Taipei").unwrap().date()
}

fn ago(secs: i64) -> String {
    (Timestamp::now() - SignedDuration::from_secs(secs)).to_string()
}

async fn create(app: &TestApp, who: &str, body: Value) -> Response {
    app.client
        .post(&format!("{USER}/reports"), &app.personal_key(who), &body)
        .await
}

async fn create_ok(app: &TestApp, who: &str, body: Value) -> Value {
    let r = create(app, who, body).await;
    assert_eq!(r.status, 201, "{}", r.text());
    r.json()
}

/// A report of Taiwan over the last three days.
async fn taiwan(app: &TestApp) -> Value {
    taiwan_to(app, today()).await
}

/// A report of Taiwan over the three days to `day` (today read once: Taipei's midnight may
/// pass between two reads).
async fn taiwan_to(app: &TestApp, day: Date) -> Value {
    let from = day.checked_sub(2.days()).unwrap();
    create_ok(
        app,
        ANN,
        json!({"workspace": "Taiwan", "from": from.to_string(), "to": day.to_string()}),
    )
    .await
}

async fn get(app: &TestApp, who: &str, path: &str) -> Response {
    app.client
        .get(&format!("{USER}{path}"), &app.personal_key(who))
        .await
}

async fn issue(app: &TestApp, who: &str, id: &Value) -> Response {
    app.client
        .post(
            &format!("{USER}/reports/{}/issue", id.as_str().unwrap()),
            &app.personal_key(who),
            &json!({}),
        )
        .await
}

fn ids(list: &Value) -> Vec<Value> {
    list["reports"]
        .as_array()
        .expect("reports[]")
        .iter()
        .map(|r| r["id"].clone())
        .collect()
}

/// Posts published by `agent`, each (code, platform_post_id, published_at); their ids.
async fn publish(app: &TestApp, agent: &str, posts: &[(&str, &str, &str)]) -> Vec<String> {
    let items: Vec<Value> = posts
        .iter()
        .map(|(code, pid, at)| {
            json!({"code": code, "status": "published", "body": format!("Post {pid} of the week"),
                   "platform_post_id": pid, "published_at": at,
                   "permalink": format!("https://threads.net/p/{pid}")})
        })
        .collect();
    let r = app
        .client
        .post(
            &format!("{AGENT}/posts/report"),
            &app.agent_key(agent),
            &json!({ "posts": items }),
        )
        .await;
    let v = ok(&r);
    v["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|x| {
            assert_eq!(x["ok"], true, "{v}");
            x["post_id"].as_str().unwrap().to_owned()
        })
        .collect()
}

async fn metrics(app: &TestApp, agent: &str, body: Value) {
    let r = app
        .client
        .post(&format!("{AGENT}/metrics"), &app.agent_key(agent), &body)
        .await;
    let v = ok(&r);
    assert_eq!(v["refused"], json!([]), "{v}");
}

async fn rpc(app: &TestApp, key: &str, name: &str, arguments: Value) -> Value {
    let res = app
        .client
        .send(
            Request::mcp(&json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                              "params": {"name": name, "arguments": arguments}}))
            .bearer(key),
        )
        .await;
    assert_eq!(res.status, 200, "{name}: {}", res.text());
    tool_result(name, &res.json())
}

fn account<'a>(report: &'a Value, code: &str) -> &'a Value {
    report["accounts"]
        .as_array()
        .expect("accounts[]")
        .iter()
        .find(|a| a["code"] == code)
        .unwrap_or_else(|| panic!("no account {code} in {report}"))
}

// ---------------------------------------------------------------------------------------------
// What a report says

#[tokio::test(flavor = "multi_thread")]
async fn a_report_sums_the_reported_posts_and_the_latest_metrics_of_its_workspace() {
    let app = spawn_app().await;
    let (h3, h2, h1) = (ago(3 * 3600), ago(2 * 3600), ago(3600));
    let mia = publish(
        &app,
        "op1",
        &[
            ("TW-T001", "p1", &h3),
            ("TW-T001", "p2", &h3),
            ("TW-I001", "p3", &h3),
        ],
    )
    .await;
    let leo = publish(&app, "op2", &[("TW-T002", "p4", &h3)]).await;
    // Japan's post is another workspace's.
    publish(&app, "jp1", &[("JP-T001", "p5", &h3)]).await;
    // p1: views 100 then 150 with likes only in the first capture: each counter its latest.
    metrics(
        &app,
        "op1",
        json!({"captured_at": h2, "posts": [
                   {"post_id": mia[0], "views": 100, "likes": 7},
                   {"post_id": mia[1], "views": 30, "replies": 2},
                   {"post_id": mia[2], "views": 500, "shares": 4}],
               "accounts": [{"code": "TW-T001", "followers": 1000}]}),
    )
    .await;
    metrics(
        &app,
        "op1",
        json!({"captured_at": h1, "posts": [{"post_id": mia[0], "views": 150, "reposts": 1}],
               "accounts": [{"code": "TW-T001", "followers": 1040}]}),
    )
    .await;
    metrics(
        &app,
        "op2",
        json!({"captured_at": h1, "posts": [{"post_id": leo[0], "views": 80}]}),
    )
    .await;

    let day = today();
    let r = taiwan_to(&app, day).await;
    assert_eq!(r["workspace"]["name"], "Taiwan");
    assert_eq!(r["issued"], false);
    assert_eq!(r["issued_at"], Value::Null);
    let from = day.checked_sub(2.days()).unwrap().to_string();
    assert_eq!(r["from"], from);
    assert_eq!(r["to"], day.to_string());
    assert_eq!(r["title"], format!("Taiwan report {from} to {day}"));
    assert_eq!(
        r["totals"],
        json!({"posts_published": 4, "followers_start": 1000, "followers_end": 1040,
               "views": 760, "likes": 7, "replies": 2, "reposts": 1, "shares": 4})
    );
    let t001 = account(&r, "TW-T001");
    assert_eq!(t001["posts_published"], 2);
    assert_eq!(t001["views"], 180);
    assert_eq!(
        (&t001["followers_start"], &t001["followers_end"]),
        (&json!(1000), &json!(1040))
    );
    let i001 = account(&r, "TW-I001");
    assert_eq!((&i001["views"], &i001["shares"]), (&json!(500), &json!(4)));
    assert_eq!(i001["followers_start"], Value::Null);
    assert_eq!(account(&r, "TW-T002")["views"], 80);
    // Every account of the workspace, none of Japan's.
    assert_eq!(r["accounts"].as_array().unwrap().len(), 6, "{r}");
    assert!(
        r["accounts"]
            .as_array()
            .unwrap()
            .iter()
            .all(|a| a["code"] != "JP-T001")
    );
    let top: Vec<&Value> = r["top_posts"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| &p["views"])
        .collect();
    assert_eq!(top, [&json!(500), &json!(150), &json!(80), &json!(30)]);
    assert_eq!(r["top_posts"][0]["id"], mia[2]);
    assert_eq!(r["top_posts"][0]["code"], "TW-I001");
    assert_eq!(r["top_posts"][0]["permalink"], "https://threads.net/p/p3");
    assert_eq!(r["top_posts"][0]["excerpt"], "Post p3 of the week");

    // The same report read back, and through MCP.
    let id = r["id"].as_str().unwrap();
    let again = ok(&get(&app, ANN, &format!("/reports/{id}")).await);
    assert_eq!(again, r);
    let tool = rpc(
        &app,
        &app.personal_key(ANN),
        "get_report",
        json!({"id": id}),
    )
    .await;
    assert_eq!(tool["body"], r);
    // A period before the posts: nothing published, the followers unknown.
    let before = day.checked_sub(30.days()).unwrap().to_string();
    let empty = create_ok(
        &app,
        ANN,
        json!({"workspace": "Taiwan", "from": before, "to": before}),
    )
    .await;
    assert_eq!(empty["totals"]["posts_published"], 0);
    assert_eq!(empty["totals"]["followers_end"], Value::Null);
    assert_eq!(empty["top_posts"], json!([]));
}

#[tokio::test(flavor = "multi_thread")]
async fn the_top_posts_are_ten_by_views() {
    let app = spawn_app().await;
    let h3 = ago(3 * 3600);
    let pids: Vec<String> = (1..=11).map(|i| format!("t{i}")).collect();
    let posts: Vec<(&str, &str, &str)> = pids
        .iter()
        .map(|p| ("TW-T001", p.as_str(), h3.as_str()))
        .collect();
    let ids = publish(&app, "op1", &posts).await;
    let items: Vec<Value> = ids
        .iter()
        .enumerate()
        .map(|(i, id)| json!({"post_id": id, "views": (i as i64 + 1) * 10}))
        .collect();
    metrics(
        &app,
        "op1",
        json!({"captured_at": ago(3600), "posts": items}),
    )
    .await;
    let r = taiwan(&app).await;
    let views: Vec<i64> = r["top_posts"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["views"].as_i64().unwrap())
        .collect();
    assert_eq!(views, [110, 100, 90, 80, 70, 60, 50, 40, 30, 20]);
    assert_eq!(r["totals"]["posts_published"], 11);
}

// ---------------------------------------------------------------------------------------------
// Who sees which report

#[tokio::test(flavor = "multi_thread")]
async fn clients_see_only_issued_reports_of_their_organization() {
    let app = spawn_app().await;
    let r = taiwan(&app).await;
    let id = r["id"].clone();
    let path = format!("/reports/{}", id.as_str().unwrap());

    // Internal until issued: clients neither list nor read it.
    for client in [CLI, CID] {
        assert_eq!(
            ids(&ok(&get(&app, client, "/reports").await)),
            Vec::<Value>::new()
        );
        assert_error(&get(&app, client, &path).await, 404, "not_found");
    }
    assert_eq!(
        ids(&ok(&get(&app, ANN, "/reports").await)),
        vec![id.clone()]
    );
    // Clients neither build nor issue (403), whatever the report.
    assert_error(&issue(&app, CLI, &id).await, 403, "forbidden");
    let today = today().to_string();
    assert_error(
        &create(
            &app,
            CLI,
            json!({"workspace": "Taiwan", "from": today, "to": today}),
        )
        .await,
        403,
        "forbidden",
    );
    // Another organization's people see nothing of it: 404.
    assert_eq!(
        ids(&ok(&get(&app, OLGA, "/reports").await)),
        Vec::<Value>::new()
    );
    assert_error(&get(&app, OLGA, &path).await, 404, "not_found");
    assert_error(&issue(&app, OLGA, &id).await, 404, "not_found");

    let issued = ok(&issue(&app, ANN, &id).await);
    assert_eq!(issued["result"], "changed");
    assert_eq!(issued["report"]["issued"], true);
    let at = issued["report"]["issued_at"].clone();
    assert!(at.is_string(), "{issued}");
    // Issuing twice changes nothing.
    let twice = ok(&issue(&app, ANN, &id).await);
    assert_eq!(twice["result"], "unchanged");
    assert_eq!(twice["report"]["issued_at"], at);
    // The OpenAPI document says which words `result` takes.
    let doc = app
        .client
        .send(Request::new("GET", "/openapi.json"))
        .await
        .json();
    let schemas = &doc["components"]["schemas"];
    let result = &schemas["IssueReportReply"]["properties"]["result"];
    let result = match result["$ref"].as_str() {
        Some(r) => &schemas[r.rsplit('/').next().unwrap()],
        None => result,
    };
    assert_eq!(result["enum"], json!(["changed", "unchanged"]), "{result}");

    for client in [CLI, CID] {
        assert_eq!(
            ids(&ok(&get(&app, client, "/reports").await)),
            vec![id.clone()]
        );
        let seen = ok(&get(&app, client, &path).await);
        assert_eq!(seen["totals"], r["totals"]);
        assert_eq!(seen["issued"], true);
    }
    assert_error(&get(&app, OLGA, &path).await, 404, "not_found");
    // The platform admin outside any organization sees every organization's.
    assert_eq!(
        ids(&ok(&get(&app, ROOT, "/reports").await)),
        vec![id.clone()]
    );
    // Through MCP: the client's list, an agency issue.
    let listed = rpc(&app, &app.personal_key(CLI), "list_reports", json!({})).await;
    assert_eq!(ids(&listed["body"]), vec![id.clone()]);
    let again = rpc(
        &app,
        &app.personal_key(ANN),
        "issue_report",
        json!({"id": id}),
    )
    .await;
    assert_eq!(again["body"]["result"], "unchanged");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_report_is_built_only_for_a_workspace_of_the_members_organization() {
    let app = spawn_app().await;
    let today = today().to_string();
    let body = |ws: &str| json!({"workspace": ws, "from": today, "to": today});
    // By name or by id.
    let by_name = create_ok(&app, ANN, body("Japan")).await;
    let japan = by_name["workspace"]["id"].as_str().unwrap().to_owned();
    let by_id = create_ok(&app, ANN, body(&japan)).await;
    assert_eq!(by_id["workspace"]["name"], "Japan");
    // Another organization's workspace, by name or id, and a name nobody uses: 404 naming
    // workspace, as any object a body names that is not there.
    let main = create_ok(&app, OLGA, body("Main")).await;
    let main_id = main["workspace"]["id"].as_str().unwrap().to_owned();
    for ws in ["Main", main_id.as_str(), "Nowhere"] {
        let v = assert_error(&create(&app, ANN, body(ws)).await, 404, "not_found");
        assert_eq!(v["field"], "workspace", "{v}");
    }
    // A platform admin names any organization's workspace.
    let root = create_ok(&app, ROOT, body("Main")).await;
    assert_eq!(root["workspace"]["id"], main_id.as_str());
    assert_eq!(app.count("SELECT count(*) AS n FROM reports").await, 4);
}

// ---------------------------------------------------------------------------------------------
// Limits and idempotency

#[tokio::test(flavor = "multi_thread")]
async fn a_period_is_at_most_92_days_from_on_or_before_to() {
    let app = spawn_app().await;
    let d = |s: &str| s.to_owned();
    let body = |from: &str, to: &str| json!({"workspace": "Taiwan", "from": from, "to": to});
    // 92 days; one day; and 93 or reversed: 422 naming to.
    create_ok(&app, ANN, body("2026-01-01", "2026-04-02")).await;
    create_ok(&app, ANN, body("2026-01-01", "2026-01-01")).await;
    for (from, to) in [
        (d("2026-01-01"), d("2026-04-03")),
        (d("2026-01-02"), d("2026-01-01")),
    ] {
        let v = assert_error(&create(&app, ANN, body(&from, &to)).await, 422, "rejected");
        assert_eq!(v["field"], "to", "{v}");
    }
    // Not a date: 400 naming the field.
    for (from, to, field) in [
        ("2026-13-01", "2026-01-01", "from"),
        ("2026-01-01", "yesterday", "to"),
    ] {
        let v = assert_error(
            &create(&app, ANN, body(from, to)).await,
            400,
            "invalid_request",
        );
        assert_eq!(v["field"], field, "{v}");
    }
    // title 1-200 characters.
    let titled = |t: String| json!({"workspace": "Taiwan", "from": "2026-01-01", "to": "2026-01-07", "title": t});
    let r = create_ok(&app, ANN, titled("週".repeat(200))).await;
    assert_eq!(r["title"].as_str().unwrap().chars().count(), 200);
    for t in [String::new(), "週".repeat(201)] {
        let v = assert_error(&create(&app, ANN, titled(t)).await, 400, "invalid_request");
        assert_eq!(v["field"], "title", "{v}");
    }
    // workspace 1-200 characters (a tenant's names go to 200): a 200-character name nobody
    // uses is looked up (404), 201 characters are refused before.
    let named = |w: String| json!({"workspace": w, "from": "2026-01-01", "to": "2026-01-07"});
    let v = assert_error(
        &create(&app, ANN, named("台".repeat(200))).await,
        404,
        "not_found",
    );
    assert_eq!(v["field"], "workspace", "{v}");
    let v = assert_error(
        &create(&app, ANN, named("台".repeat(201))).await,
        400,
        "invalid_request",
    );
    assert_eq!(v["field"], "workspace", "{v}");
    // workspace is required, unknown fields refused.
    let v = assert_error(
        &create(&app, ANN, json!({"from": "2026-01-01", "to": "2026-01-01"})).await,
        400,
        "invalid_request",
    );
    assert_eq!(v["field"], "workspace", "{v}");
    assert_eq!(app.count("SELECT count(*) AS n FROM reports").await, 3);
}

#[tokio::test(flavor = "multi_thread")]
async fn the_list_pages_newest_first_with_limit_1_to_200() {
    let app = spawn_app().await;
    let mut made = Vec::new();
    for _ in 0..3 {
        made.push(taiwan(&app).await["id"].clone());
    }
    made.reverse();
    let first = ok(&get(&app, ANN, "/reports?limit=2").await);
    assert_eq!(ids(&first), made[..2]);
    let cursor = first["next_cursor"].as_str().expect("a cursor").to_owned();
    let second = ok(&get(&app, ANN, &format!("/reports?limit=2&cursor={cursor}")).await);
    assert_eq!(ids(&second), made[2..]);
    assert_eq!(second["next_cursor"], Value::Null);
    let all = ok(&get(&app, ANN, "/reports?limit=200").await);
    assert_eq!(ids(&all), made);
    for bad in ["limit=0", "limit=201", "cursor=zz"] {
        let v = assert_error(
            &get(&app, ANN, &format!("/reports?{bad}")).await,
            400,
            "invalid_request",
        );
        assert_eq!(v["field"], bad.split('=').next().unwrap(), "{v}");
    }
    let one = ok(&get(&app, ANN, "/reports?limit=1").await);
    assert_eq!(one["reports"][0]["workspace"]["name"], "Taiwan");
    assert!(one["reports"][0].get("totals").is_none(), "{one}");
    // A report that does not exist.
    assert_error(
        &get(&app, ANN, &format!("/reports/{}", uuid::Uuid::new_v4())).await,
        404,
        "not_found",
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn create_report_honours_the_idempotency_key() {
    let app = spawn_app().await;
    let key = app.personal_key(ANN);
    let body = json!({"workspace": "Taiwan", "from": "2026-11-01", "to": "2026-11-07"});
    let first = app
        .client
        .post_idem(&format!("{USER}/reports"), &key, "rep-1", &body)
        .await;
    assert_eq!(first.status, 201, "{}", first.text());
    let again = app
        .client
        .post_idem(&format!("{USER}/reports"), &key, "rep-1", &body)
        .await;
    assert_eq!(again.status, 201);
    assert_eq!(again.header("idempotent-replayed"), Some("true"));
    assert_eq!(again.json()["id"], first.json()["id"]);
    let other = json!({"workspace": "Taiwan", "from": "2026-11-01", "to": "2026-11-08"});
    let mismatch = app
        .client
        .post_idem(&format!("{USER}/reports"), &key, "rep-1", &other)
        .await;
    assert_error(&mismatch, 422, "idempotency_mismatch");
    // MCP: request_id plays the key's role.
    let args = json!({"workspace": "Japan", "from": "2026-11-01", "to": "2026-11-07", "request_id": "rep-2"});
    let a = rpc(&app, &key, "create_report", args.clone()).await;
    let b = rpc(&app, &key, "create_report", args).await;
    assert_eq!(a["body"]["id"], b["body"]["id"]);
    assert_eq!(app.count("SELECT count(*) AS n FROM reports").await, 2);
}

/// A report's row and the result its Idempotency-Key answers with commit together: when the
/// result cannot be stored (as when the instance dies between the two), the report is not
/// there either, and the retry runs it once; never a second report beside a replay.
#[tokio::test(flavor = "multi_thread")]
async fn a_report_and_its_stored_result_commit_together() {
    let app = spawn_app().await;
    let key = app.personal_key(ANN);
    let path = format!("{USER}/reports");
    let body = json!({"workspace": "Taiwan", "from": "2026-11-01", "to": "2026-11-07"});
    app.sql(
        "CREATE FUNCTION refuse_results() RETURNS trigger LANGUAGE plpgsql AS \
         $$ BEGIN RAISE EXCEPTION 'no result is stored today'; END $$",
    )
    .await;
    app.sql(
        "CREATE TRIGGER refuse_results BEFORE UPDATE ON idempotency_keys FOR EACH ROW \
         WHEN (NEW.state = 'done') EXECUTE FUNCTION refuse_results()",
    )
    .await;
    let failed = app.client.post_idem(&path, &key, "rep-crash", &body).await;
    assert_error(&failed, 500, "internal");
    assert_eq!(app.count("SELECT count(*) AS n FROM reports").await, 0);
    assert_eq!(
        app.count("SELECT count(*) AS n FROM idempotency_keys")
            .await,
        0,
        "the key is free for the retry"
    );

    app.sql("DROP TRIGGER refuse_results ON idempotency_keys")
        .await;
    let first = app.client.post_idem(&path, &key, "rep-crash", &body).await;
    assert_eq!(first.status, 201, "{}", first.text());
    assert_eq!(first.header("idempotent-replayed"), None);
    let again = app.client.post_idem(&path, &key, "rep-crash", &body).await;
    assert_eq!(again.header("idempotent-replayed"), Some("true"));
    assert_eq!(again.json()["id"], first.json()["id"]);
    assert_eq!(app.count("SELECT count(*) AS n FROM reports").await, 1);
}

/// A person in two organizations holds an Idempotency-Key in each: the key that created a
/// report in one never answers with it in the other, not even after leaving the first.
#[tokio::test(flavor = "multi_thread")]
async fn a_persons_idempotency_keys_are_kept_apart_per_organization() {
    let app = spawn_app().await;
    let acme = app.personal_key(ANN);
    // Ann joins Other Agency too, with a key of her own there.
    let tenant = fleetdesk_tests::TEST_TENANT.replace(
        r#"{"email": "olga@other.test", "name": "Olga", "role": "agency", "keys": 1}"#,
        r#"{"email": "olga@other.test", "name": "Olga", "role": "agency", "keys": 1},
           {"email": "ann@acme.test", "name": "Ann", "role": "agency", "keys": 1}"#,
    );
    let report = app.apply(&tenant).await;
    let other = report
        .organizations
        .iter()
        .find(|o| o.name == "Other Agency")
        .and_then(|o| o.members.iter().find(|m| m.email == ANN))
        .and_then(|m| m.keys.first().cloned())
        .expect("Ann's key in Other Agency");
    let path = format!("{USER}/reports");
    let body = json!({"workspace": "Taiwan", "from": "2026-11-01", "to": "2026-11-07"});
    let made = app.client.post_idem(&path, &acme, "rep-x", &body).await;
    assert_eq!(made.status, 201, "{}", made.text());
    // The same call through her other organization's key is that organization's own call:
    // Taiwan is none of its workspaces.
    let there = app.client.post_idem(&path, &other, "rep-x", &body).await;
    assert_error(&there, 404, "not_found");
    assert_eq!(there.header("idempotent-replayed"), None);
    // And the key is free there for a report of its own.
    let main = json!({"workspace": "Main", "from": "2026-11-01", "to": "2026-11-07"});
    let own = app.client.post_idem(&path, &other, "rep-x", &main).await;
    assert_eq!(own.status, 201, "{}", own.text());
    assert_ne!(own.json()["id"], made.json()["id"]);
    // Having left Acme, she still cannot reach its report through Other Agency's key.
    let left = tenant.replace(
        r#"{"email": "ann@acme.test", "name": "Ann", "role": "agency", "keys": 1},
        {"email": "cli@brand.test""#,
        r#"{"email": "ann@acme.test", "name": "Ann", "role": "agency", "keys": 1, "left": true},
        {"email": "cli@brand.test""#,
    );
    assert_ne!(left, tenant);
    app.apply(&left).await;
    let after = app.client.post_idem(&path, &other, "rep-x", &body).await;
    assert_ne!(after.header("idempotent-replayed"), Some("true"));
    assert_error(&after, 422, "idempotency_mismatch");
}

// ---------------------------------------------------------------------------------------------
// The Monday build on the job queue

/// Another instance of the service over the app's database: its own pool, HTTP server and
/// background worker.
struct Instance {
    client: Client,
    server: actix_web::dev::ServerHandle,
    worker: Worker,
}

async fn instance(app: &TestApp) -> Instance {
    let (state, store) = fleetdesk::compose(
        &app.db.url,
        &app.data_dir,
        fleetdesk_api::Config::default(),
        4,
        false,
        None,
    )
    .await
    .expect("compose a second instance");
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    let server = fleetdesk_http::server(state, listener, 1).expect("server");
    let handle = server.handle();
    tokio::spawn(server);
    Instance {
        client: Client::new(&base),
        server: handle,
        worker: Worker::new(store).every(Duration::from_millis(50)),
    }
}

fn worker(app: &TestApp) -> Worker {
    let pool = fleetdesk_pg::connect(&app.db.url, 2).expect("pool");
    Worker::new(PgStore::new(pool)).every(Duration::from_millis(50))
}

/// One instant for every worker of a test, `WEEKLY_GRACE` ago: the week before it is over
/// and its build due by the database's clock, and no worker sees another week than the test
/// computed (a Monday midnight passing during the test changes nothing).
fn fixed_now() -> Timestamp {
    Timestamp::now() - fleetdesk_reports::WEEKLY_GRACE
}

/// Waits until `query` (one bigint `n`) counts `want`, at most 30 seconds.
async fn until(app: &TestApp, query: &str, want: i64) {
    for _ in 0..300 {
        if app.count(query).await == want {
            return;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(app.count(query).await, want, "{query}");
}

const WORKSPACES: i64 = 3;

/// A test app whose workspaces were created at the start of 2026, as an install running since
/// then: every past week's build reports them (a week before a workspace existed reports none).
async fn running_since_january() -> TestApp {
    let app = spawn_app().await;
    app.sql("UPDATE workspaces SET created_at = '2026-01-01T00:00:00Z'")
        .await;
    app
}

/// A week's build reports the workspaces created before the week ended (one created a second
/// before its end), not one created at its end or later: a fresh install gets no empty reports
/// of the weeks before it.
#[tokio::test(flavor = "multi_thread")]
async fn a_week_is_reported_only_for_workspaces_created_before_it_ended() {
    let app = spawn_app().await;
    // The week of 2026-11-02 ends at 2026-11-09 00:00 in Taipei: 2026-11-08 16:00 UTC.
    app.sql(
        "UPDATE workspaces SET created_at = CASE name \
           WHEN 'Taiwan' THEN timestamptz '2026-11-08T15:59:59Z' \
           WHEN 'Japan' THEN timestamptz '2026-11-08T16:00:00Z' \
           ELSE timestamptz '2026-11-20T00:00:00Z' END",
    )
    .await;
    app.sql(
        "INSERT INTO jobs (kind, key, payload, run_at) VALUES ('weekly_reports', '2026-11-02', \
         '{\"from\": \"2026-11-02\", \"to\": \"2026-11-08\"}', now() - interval '1 day')",
    )
    .await;
    assert_eq!(worker(&app).run_due().await.expect("run"), 1);
    assert_eq!(
        app.count("SELECT count(*) AS n FROM jobs WHERE key = '2026-11-02' AND status = 'done'")
            .await,
        1
    );
    assert_eq!(
        app.count(
            "SELECT count(*) AS n FROM reports r JOIN workspaces w ON w.id = r.workspace_id \
             WHERE r.weekly AND r.period_from = '2026-11-02' AND w.name = 'Taiwan'"
        )
        .await,
        1
    );
    assert_eq!(
        app.count("SELECT count(*) AS n FROM reports WHERE weekly")
            .await,
        1,
        "no report for the workspaces created at the week's end or after"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn the_weekly_build_runs_once_however_many_instances_run() {
    let app = running_since_january().await;
    // A post published in the week before, with its views.
    let now = fixed_now();
    let week = weekly_job(now);
    let monday: Date = week.key.parse().unwrap();
    let wednesday = monday
        .checked_add(2.days())
        .unwrap()
        .at(12, 0, 0, 0)
        .in_tz("Asia/Taipei")
        .unwrap()
        .timestamp();
    let ids = publish(&app, "op1", &[("TW-T001", "w1", &wednesday.to_string())]).await;
    let captured = (wednesday + SignedDuration::from_hours(1)).to_string();
    metrics(
        &app,
        "op1",
        json!({"captured_at": captured, "posts": [{"post_id": ids[0], "views": 42}]}),
    )
    .await;

    let (mut one, mut two) = (instance(&app).await, instance(&app).await);
    one.worker = one.worker.with_clock(move || now);
    two.worker = two.worker.with_clock(move || now);
    // Both instances schedule and run at the same moment, twice.
    let third = worker(&app).with_clock(move || now);
    for _ in 0..2 {
        tokio::join!(one.worker.tick(), two.worker.tick(), third.tick());
    }
    // And their background loops run on for a while.
    let (a, b) = (one.worker.clone().spawn(), two.worker.clone().spawn());
    tokio::time::sleep(Duration::from_millis(400)).await;
    a.stop().await;
    b.stop().await;

    // The week before and the three before it (a week every instance missed is built late),
    // each once; and the hour's ad work (the proposals' expiry, act_1001's sync), once.
    assert_eq!(
        app.count("SELECT count(*) AS n FROM jobs WHERE kind = 'weekly_reports'")
            .await,
        4
    );
    assert_eq!(
        app.count(
            "SELECT count(*) AS n FROM jobs WHERE kind IN ('ad_expire', 'ad_sync') \
             AND status = 'done' AND attempts = 1"
        )
        .await,
        2
    );
    // And the minute's sweep, once.
    assert_eq!(
        app.count(
            "SELECT count(*) AS n FROM jobs WHERE kind = 'sweep' \
             AND status = 'done' AND attempts = 1"
        )
        .await,
        1
    );
    assert_eq!(app.count("SELECT count(*) AS n FROM jobs").await, 7);
    assert_eq!(
        app.count(
            "SELECT count(*) AS n FROM jobs WHERE kind = 'weekly_reports' \
             AND status = 'done' AND attempts = 1"
        )
        .await,
        4
    );
    assert_eq!(
        app.count(&format!(
            "SELECT count(*) AS n FROM jobs WHERE kind = 'weekly_reports' AND key = '{}' \
             AND status = 'done' AND attempts = 1",
            week.key
        ))
        .await,
        1
    );
    assert_eq!(
        app.count("SELECT count(*) AS n FROM reports").await,
        4 * WORKSPACES
    );
    assert_eq!(
        app.count(&format!(
            "SELECT count(DISTINCT workspace_id) AS n FROM reports \
             WHERE weekly AND period_from = '{}' AND created_by = 'fleetdesk'",
            week.key
        ))
        .await,
        WORKSPACES
    );
    // Read through the second instance: the weekly report with the week's post, internal.
    let list = ok(&two
        .client
        .get(&format!("{USER}/reports"), &app.personal_key(ANN))
        .await);
    let reports = list["reports"].as_array().unwrap();
    assert_eq!(reports.len(), 8, "{list}");
    let tw = reports
        .iter()
        .find(|r| r["workspace"]["name"] == "Taiwan" && r["from"] == week.key.as_str())
        .unwrap();
    assert_eq!(tw["from"], week.key);
    assert_eq!(tw["issued"], false);
    assert!(
        tw["title"]
            .as_str()
            .unwrap()
            .starts_with("Taiwan weekly report"),
        "{tw}"
    );
    let id = tw["id"].as_str().unwrap();
    let detail = ok(&one
        .client
        .get(&format!("{USER}/reports/{id}"), &app.personal_key(ANN))
        .await);
    assert_eq!(detail["totals"]["views"], 42);
    assert_eq!(detail["top_posts"][0]["id"], ids[0].as_str());
    one.server.stop(true).await;
    two.server.stop(true).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_job_queued_before_the_instance_starts_is_done_after_it() {
    let app = running_since_january().await;
    // Queued by an instance that stopped before running it: the week of 2026-11-02.
    app.sql(
        "INSERT INTO jobs (kind, key, payload, run_at) VALUES ('weekly_reports', '2026-11-02', \
         '{\"from\": \"2026-11-02\", \"to\": \"2026-11-08\"}', now() - interval '1 day')",
    )
    .await;
    // A Taiwan report of that week exists already (the index is the second guard).
    app.sql(
        "INSERT INTO reports (organization_id, workspace_id, title, period_from, period_to, \
         weekly, body, created_by) SELECT organization_id, id, 'earlier', '2026-11-02', \
         '2026-11-08', true, '{}', 'fleetdesk' FROM workspaces WHERE name = 'Taiwan'",
    )
    .await;
    let started = worker(&app).spawn();
    until(
        &app,
        "SELECT count(*) AS n FROM jobs WHERE key = '2026-11-02' AND status = 'done'",
        1,
    )
    .await;
    started.stop().await;
    assert_eq!(
        app.count("SELECT count(*) AS n FROM reports WHERE weekly AND period_from = '2026-11-02'")
            .await,
        WORKSPACES
    );
    assert_eq!(
        app.count("SELECT count(*) AS n FROM reports WHERE title = 'earlier'")
            .await,
        1
    );
}

/// A job's lease follows the instance that took it: while that instance lives (it holds its
/// advisory lock) the job is its own for the whole lease; once it is gone, the next take has
/// it at once, without waiting the 10 minutes out.
#[tokio::test(flavor = "multi_thread")]
async fn a_job_of_an_instance_that_died_is_taken_over_at_once() {
    use diesel_async::RunQueryDsl;
    let app = spawn_app().await;
    // Instance 424242 lives: a session holds its lock, as a running instance does.
    let mut instance = app.connect().await;
    diesel::sql_query("SELECT pg_advisory_lock(1717857129, 424242)")
        .execute(&mut instance)
        .await
        .expect("lock");
    app.sql(
        "INSERT INTO jobs (kind, key, payload, status, attempts, locked_until, run_at, instance) \
         VALUES ('weekly_reports', '2026-10-26', '{\"from\": \"2026-10-26\", \"to\": \"2026-11-01\"}', \
                 'running', 1, now() + interval '9 minutes', now() - interval '1 day', 424242)",
    )
    .await;
    let taken = app.store.take(&["weekly_reports"], LEASE).await.unwrap();
    assert_eq!(taken.map(|j| j.key), None, "a live instance keeps its job");
    // The instance dies: PostgreSQL ends its session and frees its lock.
    drop(instance);
    let mut taken = None;
    for _ in 0..50 {
        taken = app.store.take(&["weekly_reports"], LEASE).await.unwrap();
        if taken.is_some() {
            break;
        }
        // The server notices the closed connection a moment later.
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    let taken = taken.expect("taken over within 5 s, not after the lease");
    assert_eq!((taken.key.as_str(), taken.attempt), ("2026-10-26", 2));
}

#[tokio::test(flavor = "multi_thread")]
async fn a_job_whose_lease_passed_is_taken_again_and_a_lost_lease_writes_nothing() {
    let app = running_since_january().await;
    // Taken by an instance that died: running, its lease passed.
    app.sql(
        "INSERT INTO jobs (kind, key, payload, status, attempts, locked_until, run_at) VALUES \
         ('weekly_reports', '2026-10-26', '{\"from\": \"2026-10-26\", \"to\": \"2026-11-01\"}', \
          'running', 1, now() - interval '1 minute', now() - interval '1 day'), \
         ('weekly_reports', '2026-10-19', '{\"from\": \"2026-10-19\", \"to\": \"2026-10-25\"}', \
          'running', 1, now() + interval '5 minutes', now() - interval '1 day')",
    )
    .await;
    let w = worker(&app);
    w.run_due().await.expect("run");
    assert_eq!(
        app.count(
            "SELECT count(*) AS n FROM jobs WHERE key = '2026-10-26' AND status = 'done' \
             AND attempts = 2"
        )
        .await,
        1
    );
    assert_eq!(
        app.count("SELECT count(*) AS n FROM reports WHERE period_from = '2026-10-26'")
            .await,
        WORKSPACES
    );
    // The one whose instance still holds its lease is left alone.
    assert_eq!(
        app.count(
            "SELECT count(*) AS n FROM jobs WHERE key = '2026-10-19' AND status = 'running' \
             AND attempts = 1"
        )
        .await,
        1
    );
    assert_eq!(
        app.count("SELECT count(*) AS n FROM reports WHERE period_from = '2026-10-19'")
            .await,
        0
    );

    // A take whose lease another take replaced: its build writes nothing.
    app.sql(
        "INSERT INTO jobs (kind, key, payload) VALUES ('weekly_reports', '2026-10-12', \
         '{\"from\": \"2026-10-12\", \"to\": \"2026-10-18\"}')",
    )
    .await;
    let stale = app
        .store
        .take(&["weekly_reports"], LEASE)
        .await
        .unwrap()
        .expect("a job");
    assert_eq!(stale.key, "2026-10-12");
    app.sql("UPDATE jobs SET locked_until = now() - interval '1 second' WHERE key = '2026-10-12'")
        .await;
    let fresh = app
        .store
        .take(&["weekly_reports"], LEASE)
        .await
        .unwrap()
        .expect("retaken");
    assert_eq!((fresh.id, fresh.attempt), (stale.id, 2));
    let period = fleetdesk_reports_period("2026-10-12", "2026-10-18");
    use fleetdesk_reports::ports::ReportsRepo;
    assert_eq!(app.store.build_weekly(&stale, period).await.unwrap(), None);
    assert!(!app.store.finish(&stale).await.unwrap());
    app.store.fail(&stale, "late").await.unwrap();
    assert_eq!(
        app.count("SELECT count(*) AS n FROM reports WHERE period_from = '2026-10-12'")
            .await,
        0
    );
    assert_eq!(
        app.store.build_weekly(&fresh, period).await.unwrap(),
        Some(WORKSPACES as usize)
    );
    assert_eq!(
        app.count(
            "SELECT count(*) AS n FROM jobs WHERE key = '2026-10-12' AND status = 'done' \
             AND last_error IS NULL"
        )
        .await,
        1
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_failed_job_is_queued_again_later_with_its_error() {
    let app = spawn_app().await;
    // A payload the worker cannot read: the job fails, and waits for its retry.
    app.sql("INSERT INTO jobs (kind, key, payload) VALUES ('weekly_reports', 'broken', '{}')")
        .await;
    let w = worker(&app);
    assert_eq!(w.run_due().await.unwrap(), 1);
    assert_eq!(
        app.count(
            "SELECT count(*) AS n FROM jobs WHERE key = 'broken' AND status = 'queued' \
             AND attempts = 1 AND last_error LIKE '%has no from%' \
             AND run_at > now() + interval '20 seconds'"
        )
        .await,
        1
    );
    // Not due yet: nothing runs.
    assert_eq!(w.run_due().await.unwrap(), 0);
    // Its last attempt gives it up.
    app.sql("UPDATE jobs SET attempts = 7, run_at = now() WHERE key = 'broken'")
        .await;
    assert_eq!(w.run_due().await.unwrap(), 1);
    assert_eq!(
        app.count(
            "SELECT count(*) AS n FROM jobs WHERE key = 'broken' AND status = 'failed' \
             AND attempts = 8 AND finished_at IS NOT NULL"
        )
        .await,
        1
    );
}

fn fleetdesk_reports_period(from: &str, to: &str) -> fleetdesk_reports::period::Period {
    fleetdesk_reports::period::Period::new(from.parse().unwrap(), to.parse().unwrap()).unwrap()
}

#[tokio::test(flavor = "multi_thread")]
async fn two_served_binaries_build_each_week_once_and_report_no_week_before_the_install() {
    use fleetdesk_tests::binary::{SERVE, TempDir, fleetdesk_over, serve};
    use fleetdesk_tests::count_at;
    let db = fleetdesk_pg::testing::TestDb::new()
        .await
        .expect("a test database");
    let (d1, d2) = (TempDir::new("rep1"), TempDir::new("rep2"));
    // The first start loads the demo tenant (one workspace); the second finds it.
    let mut first = serve(
        fleetdesk_over(SERVE, &db, d1.path()),
        Duration::from_secs(60),
    )
    .await;
    let mut second = serve(
        fleetdesk_over(SERVE, &db, d2.path()),
        Duration::from_secs(60),
    )
    .await;
    // The binaries read the real clock: whichever weeks they enqueued (the last four; five
    // when a week ended meanwhile), every due one is built, once. The three older ones are
    // due whatever the time.
    let undone = "SELECT count(*) AS n FROM jobs WHERE run_at <= now() AND status <> 'done'";
    let done = "SELECT count(*) AS n FROM jobs WHERE kind = 'weekly_reports' AND status = 'done'";
    for _ in 0..300 {
        if count_at(&db.url, done).await >= 3 && count_at(&db.url, undone).await == 0 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    // Both instances looked at least once more after it was done.
    tokio::time::sleep(Duration::from_secs(6)).await;
    for served in [&mut first, &mut second] {
        let status = served.proc.terminate(Duration::from_secs(35)).await;
        assert!(status.success(), "{}", served.proc.output());
    }
    let jobs = count_at(
        &db.url,
        "SELECT count(*) AS n FROM jobs WHERE kind = 'weekly_reports'",
    )
    .await;
    assert!((4..=5).contains(&jobs), "{jobs} jobs");
    // Every job due well before they stopped is done (one that came due in their last
    // seconds may have had no round left).
    assert_eq!(
        count_at(
            &db.url,
            "SELECT count(*) AS n FROM jobs WHERE run_at <= now() - interval '30 seconds' \
             AND status <> 'done'"
        )
        .await,
        0
    );
    let built = count_at(&db.url, done).await;
    assert!(built >= 3, "{built} weeks built");
    assert_eq!(
        count_at(
            &db.url,
            "SELECT count(*) AS n FROM jobs WHERE kind = 'weekly_reports' AND status = 'done' \
             AND attempts = 1"
        )
        .await,
        built
    );
    // The install is fresh: its workspace was created after every week it built, so no week
    // reported it (no empty reports of the weeks before the install).
    assert_eq!(
        count_at(&db.url, "SELECT count(*) AS n FROM reports").await,
        0
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_job_whose_lease_expired_after_its_last_attempt_is_given_up() {
    let app = spawn_app().await;
    // Its instance died on each of its attempts (the build kills it, say).
    app.sql(&format!(
        "INSERT INTO jobs (kind, key, payload, status, attempts, locked_until, run_at) VALUES \
         ('weekly_reports', '2026-10-05', '{{\"from\": \"2026-10-05\", \"to\": \"2026-10-11\"}}', \
          'running', {MAX_ATTEMPTS}, now() - interval '1 minute', now() - interval '1 day')"
    ))
    .await;
    assert_eq!(worker(&app).run_due().await.unwrap(), 0);
    assert_eq!(
        app.count(&format!(
            "SELECT count(*) AS n FROM jobs WHERE key = '2026-10-05' AND status = 'failed' \
             AND attempts = {MAX_ATTEMPTS} AND locked_until IS NULL AND finished_at IS NOT NULL \
             AND last_error = 'lease expired {MAX_ATTEMPTS} times'"
        ))
        .await,
        1
    );
    assert_eq!(
        app.count("SELECT count(*) AS n FROM reports WHERE period_from = '2026-10-05'")
            .await,
        0
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_stopped_worker_takes_no_further_job() {
    let app = spawn_app().await;
    app.sql(
        "INSERT INTO jobs (kind, key, payload) VALUES \
         ('weekly_reports', '2026-09-28', '{\"from\": \"2026-09-28\", \"to\": \"2026-10-04\"}'), \
         ('weekly_reports', '2026-09-21', '{\"from\": \"2026-09-21\", \"to\": \"2026-09-27\"}')",
    )
    .await;
    let (stop, stopped) = tokio::sync::watch::channel(true);
    let w = worker(&app);
    assert_eq!(w.run_due_until(&stopped).await.unwrap(), 0);
    assert_eq!(
        app.count("SELECT count(*) AS n FROM jobs WHERE status = 'queued' AND attempts = 0")
            .await,
        2
    );
    stop.send(false).unwrap();
    assert_eq!(w.run_due_until(&stopped).await.unwrap(), 2);
}

/// The hourly expiry job prunes every kind's finished jobs past its stated retention: a done or
/// failed job a minute inside its time stays, one a minute past it goes; queued and running
/// jobs stay however old.
#[tokio::test(flavor = "multi_thread")]
async fn every_kind_keeps_its_finished_jobs_for_its_stated_time_then_prunes_them() {
    let app = spawn_app().await;
    let mut rows = Vec::new();
    for r in RETENTION {
        for (status, kept) in [("done", r.done), ("failed", r.failed)] {
            for (side, secs) in [
                ("inside", kept.as_secs() - 60),
                ("past", kept.as_secs() + 60),
            ] {
                rows.push(format!(
                    "('{kind}', '{status} {side}', '{{}}', '{status}', 1, \
                      now() - make_interval(secs => {secs}), now() - make_interval(secs => {secs}))",
                    kind = r.kind
                ));
            }
        }
    }
    app.sql(&format!(
        "INSERT INTO jobs (kind, key, payload, status, attempts, finished_at, run_at) VALUES {}",
        rows.join(", ")
    ))
    .await;
    // Old but unfinished: never pruned.
    app.sql(
        "INSERT INTO jobs (kind, key, payload, status, attempts, locked_until, run_at) VALUES \
         ('ad_research', 'working', '{}', 'running', 1, now() + interval '5 minutes', \
          now() - interval '400 days'), \
         ('ad_change', 'waiting', '{}', 'queued', 0, NULL, now() + interval '400 days')",
    )
    .await;
    let w = worker(&app).with_clock(Timestamp::now);
    w.schedule_ad_sync().await.expect("enqueue the expiry");
    w.run_due().await.expect("run");
    for r in RETENTION {
        for status in ["done", "failed"] {
            let left = |side: &str| {
                format!(
                    "SELECT count(*) AS n FROM jobs WHERE kind = '{}' AND key = '{status} {side}'",
                    r.kind
                )
            };
            assert_eq!(app.count(&left("inside")).await, 1, "{} {status}", r.kind);
            assert_eq!(app.count(&left("past")).await, 0, "{} {status}", r.kind);
        }
    }
    assert_eq!(
        app.count("SELECT count(*) AS n FROM jobs WHERE key IN ('working', 'waiting')")
            .await,
        2
    );
}
