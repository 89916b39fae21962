//! Personal API: `GET /metrics` (tool `metrics`) over metrics reported through the Agent API:
//! the latest capture of each post per day in the account's own zone, sums per day, account
//! and post, the window's defaults and limits, filters, organization isolation and roles.

use fleetdesk_tests::assert::{assert_error, plain_trips, tool_result};
use fleetdesk_tests::client::Request;
use fleetdesk_tests::{Response, TestApp, spawn_app};
use jiff::civil::Date;
use jiff::{Timestamp, ToSpan};
use serde_json::{Value, json};

const METRICS: &str = "/api/user/v1/metrics";

fn ok(r: &Response) -> Value {
    assert!(
        (200..300).contains(&r.status),
        "{} {}",
        r.status,
        String::from_utf8_lossy(&r.body)
    );
    r.json()
}

fn today() -> Date {
    Timestamp::now().in_tz("Asia/Taipei").unwrap().date()
}

fn day(offset: i64) -> Date {
    today().checked_add(offset.days()).unwrap()
}

async fn get(app: &TestApp, key: &str, query: &str) -> Response {
    app.client.get(&format!("{METRICS}?{query}"), key).await
}

async fn get_ok(app: &TestApp, key: &str, query: &str) -> Value {
    ok(&get(app, key, query).await)
}

/// A post reported published on `code` at `published_at`; returns its id.
async fn published(app: &TestApp, key: &str, code: &str, pid: &str, published_at: &str) -> String {
    let v = ok(&app
        .client
        .post(
            "/api/agent/v1/posts/report",
            key,
            &json!({"posts": [{"code": code, "status": "published", "body": format!("Post {pid}"),
                    "platform_post_id": pid, "published_at": published_at,
                    "permalink": format!("https://threads.net/p/{pid}")}]}),
        )
        .await);
    assert_eq!(v["results"][0]["ok"], true, "{v}");
    v["results"][0]["post_id"].as_str().unwrap().to_owned()
}

async fn capture(app: &TestApp, key: &str, body: Value) {
    let v = ok(&app.client.post("/api/agent/v1/metrics", key, &body).await);
    assert_eq!(v["refused"], json!([]), "{v}");
}

fn org_id(app: &TestApp, name: &str) -> String {
    app.tenant
        .organizations
        .iter()
        .find(|o| o.name == name)
        .unwrap()
        .id
        .to_string()
}

/// The days of one series as `date: views/likes/posts_published/followers` ("-" for null).
fn days(series: &Value) -> Vec<String> {
    let n = |v: &Value| v.as_i64().map_or("-".to_owned(), |n| n.to_string());
    series["days"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| {
            format!(
                "{}: {}/{}/{}/{}",
                d["date"].as_str().unwrap(),
                n(&d["views"]),
                n(&d["likes"]),
                n(&d["posts_published"]),
                n(&d["followers"])
            )
        })
        .collect()
}

/// Day D (three days ago) and D+1 in Taipei: op1's TW-T001 and TW-I001 (Asia/Taipei) and
/// jp1's JP-T001 (Asia/Tokyo), with several captures a day and one at 23:30 Taipei, which is
/// already the next day in Tokyo. Returns (D, the TW-T001 post's id).
async fn reported(app: &TestApp) -> (Date, String) {
    let op1 = app.agent_key("op1");
    let jp1 = app.agent_key("jp1");
    let d = day(-3);
    let d1 = day(-2);
    let p1 = published(app, &op1, "TW-T001", "p1", &format!("{d}T09:00:00+08:00")).await;
    let p2 = published(app, &op1, "TW-I001", "p2", &format!("{d}T09:30:00+08:00")).await;
    let p3 = published(app, &jp1, "JP-T001", "p3", &format!("{d}T09:00:00+09:00")).await;
    capture(
        app,
        &op1,
        json!({"captured_at": format!("{d}T10:00:00+08:00"),
        "posts": [{"post_id": p1, "views": 10, "likes": 1}, {"post_id": p2, "views": 100}],
        "accounts": [{"code": "TW-T001", "followers": 500}]}),
    )
    .await;
    // Later the same day: the latest capture of D is this one (likes not carried: the 10:00
    // value stays).
    capture(
        app,
        &op1,
        json!({"captured_at": format!("{d}T22:00:00+08:00"),
        "posts": [{"post_id": p1, "views": 20}],
        "accounts": [{"code": "TW-T001", "followers": 510}]}),
    )
    .await;
    capture(
        app,
        &op1,
        json!({"captured_at": format!("{d1}T08:00:00+08:00"),
        "posts": [{"post_id": p1, "views": 30}]}),
    )
    .await;
    // 23:30 in Taipei on D is 00:30 on D+1 in Tokyo: JP-T001 counts it on D+1.
    capture(
        app,
        &jp1,
        json!({"captured_at": format!("{d}T23:30:00+08:00"),
        "posts": [{"post_id": p3, "views": 1000}],
        "accounts": [{"code": "JP-T001", "followers": 50}]}),
    )
    .await;
    (d, p1)
}

#[tokio::test(flavor = "multi_thread")]
async fn metrics_sum_the_latest_capture_of_each_post_per_day_in_the_accounts_zone() {
    let app = spawn_app().await;
    let ann = app.personal_key("ann@acme.test");
    let (d, p1) = reported(&app).await;
    let d1 = d.checked_add(1.day()).unwrap();
    let window = format!("from={d}&to={d1}");

    let v = get_ok(&app, &ann, &window).await;
    assert_eq!(
        (v["from"].as_str(), v["to"].as_str()),
        (Some(&*d.to_string()), Some(&*d1.to_string()))
    );
    assert_eq!(v["group"], "day");
    let series = v["series"].as_array().unwrap();
    assert_eq!(series.len(), 1, "{v}");
    assert_eq!(series[0]["account"], Value::Null);
    assert_eq!(
        days(&series[0]),
        [format!("{d}: 120/1/3/510"), format!("{d1}: 1030/-/0/50")],
        "{v}"
    );

    let v = get_ok(&app, &ann, &format!("{window}&group=account")).await;
    let series = v["series"].as_array().unwrap();
    let codes: Vec<&str> = series
        .iter()
        .map(|s| s["account"]["code"].as_str().unwrap())
        .collect();
    assert_eq!(
        codes,
        ["JP-T001", "TW-I001", "TW-T001"],
        "workspace name, then code: {v}"
    );
    assert_eq!(series[0]["account"]["timezone"], "Asia/Tokyo");
    assert_eq!(series[0]["account"]["workspace"]["name"], "Japan");
    assert_eq!(
        days(&series[0]),
        [format!("{d}: -/-/1/-"), format!("{d1}: 1000/-/0/50")]
    );
    assert_eq!(days(&series[1]), [format!("{d}: 100/-/1/-")]);
    assert_eq!(
        days(&series[2]),
        [format!("{d}: 20/1/1/510"), format!("{d1}: 30/-/0/-")]
    );

    let v = get_ok(&app, &ann, &format!("{window}&group=post&code=TW-T001")).await;
    let series = v["series"].as_array().unwrap();
    assert_eq!(series.len(), 1, "{v}");
    assert_eq!(series[0]["post"]["id"], p1);
    assert_eq!(series[0]["post"]["platform_post_id"], "p1");
    assert_eq!(series[0]["account"]["code"], "TW-T001");
    assert_eq!(
        days(&series[0]),
        [format!("{d}: 20/1/1/-"), format!("{d1}: 30/-/0/-")]
    );

    // Filters: a workspace, a platform; a window of one day.
    let japan = app.workspace_id("Japan");
    let v = get_ok(&app, &ann, &format!("{window}&workspace={japan}")).await;
    assert_eq!(
        days(&v["series"][0]),
        [format!("{d}: -/-/1/-"), format!("{d1}: 1000/-/0/50")]
    );
    let v = get_ok(
        &app,
        &ann,
        &format!("{window}&platform=instagram&group=account"),
    )
    .await;
    assert_eq!(v["series"].as_array().unwrap().len(), 1, "{v}");
    let v = get_ok(&app, &ann, &format!("from={d1}&to={d1}")).await;
    assert_eq!(days(&v["series"][0]), [format!("{d1}: 1030/-/0/50")]);

    // Names of nothing in scope: 404 naming the field.
    let r = get(&app, &ann, &format!("{window}&code=NOPE")).await;
    assert_eq!(assert_error(&r, 404, "not_found")["field"], "code");
    let r = get(&app, &ann, &format!("workspace={}", uuid::Uuid::new_v4())).await;
    assert_eq!(assert_error(&r, 404, "not_found")["field"], "workspace");

    // The same over MCP.
    let msg = ok(&app
        .client
        .send(
            Request::mcp(&json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                "params": {"name": "metrics", "arguments": {"from": d.to_string(), "to": d1.to_string()}}}))
            .bearer(&ann),
        )
        .await);
    let result = tool_result("metrics", &msg);
    assert_eq!(
        days(&result["body"]["series"][0]),
        [format!("{d}: 120/1/3/510"), format!("{d1}: 1030/-/0/50")]
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn the_window_defaults_to_the_last_seven_days_and_holds_at_most_92() {
    let app = spawn_app().await;
    let ann = app.personal_key("ann@acme.test");
    let (d, _) = reported(&app).await;
    let v = get_ok(&app, &ann, "").await;
    assert_eq!(v["from"], day(-6).to_string());
    assert_eq!(v["to"], today().to_string());
    assert_eq!(v["series"][0]["days"][0]["date"], d.to_string(), "{v}");
    // Only `to`: the seven days ending there; only `from`: up to today.
    let v = get_ok(&app, &ann, &format!("to={}", day(-10))).await;
    assert_eq!(v["from"], day(-16).to_string());
    assert_eq!(v["series"][0]["days"], json!([]));
    let v = get_ok(&app, &ann, &format!("from={}", day(-91))).await;
    assert_eq!(
        (v["from"].as_str().unwrap(), v["to"].as_str().unwrap()),
        (&*day(-91).to_string(), &*today().to_string())
    );

    // 92 days, both ends counted; one past is 422 naming from (a schema-valid request a rule
    // refuses).
    let at_limit = get_ok(&app, &ann, &format!("from={}&to={}", day(-91), today())).await;
    assert_eq!(at_limit["series"][0]["days"].as_array().unwrap().len(), 2);
    let past = get(&app, &ann, &format!("from={}&to={}", day(-92), today())).await;
    let e = assert_error(&past, 422, "rejected");
    assert_eq!(e["field"], "from", "{e}");
    assert!(e["message"].as_str().unwrap().contains("93 days"), "{e}");
    let past = get(&app, &ann, &format!("from={}", day(-92))).await;
    assert_eq!(assert_error(&past, 422, "rejected")["field"], "from");
    // from after to; malformed values are 400.
    let r = get(&app, &ann, &format!("from={}&to={}", today(), day(-1))).await;
    assert_eq!(assert_error(&r, 422, "rejected")["field"], "from");
    for (query, field) in [
        ("from=2026-02-30", "from"),
        ("to=yesterday", "to"),
        ("group=week", "group"),
        ("workspace=nope", "workspace"),
        ("platform=myspace", "platform"),
    ] {
        let r = get(&app, &ann, query).await;
        let e = assert_error(&r, 400, "invalid_request");
        assert_eq!(e["field"], field, "{query}: {e}");
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn metrics_stay_in_the_organization_and_clients_are_refused() {
    let app = spawn_app().await;
    let (d, _) = reported(&app).await;
    let other1 = app.agent_key("other1");
    let zoe = published(
        &app,
        &other1,
        "TW-T001",
        "zoe1",
        &format!("{d}T12:00:00+08:00"),
    )
    .await;
    capture(
        &app,
        &other1,
        json!({"captured_at": format!("{d}T13:00:00+08:00"),
        "posts": [{"post_id": zoe, "views": 7}]}),
    )
    .await;
    let window = format!("from={d}&to={d}");

    // Each organization sees only its own.
    let ann = app.personal_key("ann@acme.test");
    let olga = app.personal_key("olga@other.test");
    let v = get_ok(&app, &ann, &window).await;
    assert_eq!(days(&v["series"][0]), [format!("{d}: 120/1/3/510")]);
    let v = get_ok(&app, &olga, &window).await;
    assert_eq!(days(&v["series"][0]), [format!("{d}: 7/-/1/-")]);
    // Another organization's workspace or organization: 404.
    let acme = org_id(&app, "Acme");
    let r = get(
        &app,
        &olga,
        &format!("workspace={}", app.workspace_id("Taiwan")),
    )
    .await;
    assert_eq!(assert_error(&r, 404, "not_found")["field"], "workspace");
    let r = get(&app, &olga, &format!("organization={acme}")).await;
    assert_eq!(assert_error(&r, 404, "not_found")["field"], "organization");
    // Naming its own organization is fine.
    let other = org_id(&app, "Other Agency");
    get_ok(&app, &olga, &format!("organization={other}")).await;

    // A platform admin: every organization, or the one named.
    let root = app.personal_key("root@example.com");
    let v = get_ok(&app, &root, &window).await;
    assert_eq!(days(&v["series"][0]), [format!("{d}: 127/1/4/510")]);
    let v = get_ok(&app, &root, &format!("{window}&organization={other}")).await;
    assert_eq!(days(&v["series"][0]), [format!("{d}: 7/-/1/-")]);
    let v = get_ok(
        &app,
        &root,
        &format!("{window}&organization={acme}&group=account"),
    )
    .await;
    assert_eq!(v["series"].as_array().unwrap().len(), 3);

    // Clients (with or without the review right) are refused; an agent key is no personal key.
    for client in ["cli@brand.test", "cid@brand.test"] {
        let r = get(&app, &app.personal_key(client), &window).await;
        assert_error(&r, 403, "forbidden");
    }
    let r = get(&app, &app.agent_key("op1"), &window).await;
    assert_error(&r, 403, "forbidden");

    // An admin naming an organization that does not exist: 404 naming it, not an empty chart
    // (with a code too: the organization is what names nothing).
    let nowhere = uuid::Uuid::new_v4();
    for query in [
        format!("organization={nowhere}"),
        format!("organization={nowhere}&code=TW-T001"),
    ] {
        let r = get(&app, &root, &query).await;
        assert_eq!(
            assert_error(&r, 404, "not_found")["field"],
            "organization",
            "{query}"
        );
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_code_names_one_account_or_is_ambiguous() {
    let app = spawn_app().await;
    let ann = app.personal_key("ann@acme.test");
    // OLD1 is the legacy code of TW-L001 (threads) and TW-L002 (tiktok): without the platform
    // it names two accounts, which is 409 naming platform, not their sum.
    let r = get(&app, &ann, "code=OLD1&group=account").await;
    assert_eq!(assert_error(&r, 409, "ambiguous_code")["field"], "platform");
    get_ok(&app, &ann, "code=OLD1&platform=tiktok").await;
    // One account whose current code it is wins over the legacy ones.
    app.sql("UPDATE account_slots SET code = 'OLD1' WHERE code = 'TW-L001'")
        .await;
    get_ok(&app, &ann, "code=OLD1").await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_post_deleted_since_still_counts_as_published_on_its_day() {
    let app = spawn_app().await;
    let ann = app.personal_key("ann@acme.test");
    let (d, p1) = reported(&app).await;
    app.sql(&format!(
        "UPDATE posts SET status = 'deleted' WHERE id = '{p1}'"
    ))
    .await;
    let v = get_ok(&app, &ann, &format!("from={d}&to={d}")).await;
    assert_eq!(days(&v["series"][0]), [format!("{d}: 120/1/3/510")], "{v}");
    let v = get_ok(
        &app,
        &ann,
        &format!("from={d}&to={d}&group=post&code=TW-T001"),
    )
    .await;
    assert_eq!(v["series"][0]["post"]["status"], "deleted", "{v}");
    assert_eq!(days(&v["series"][0]), [format!("{d}: 20/1/1/-")]);
}

fn round_trips(res: &Response) -> u32 {
    res.header("x-db-round-trips")
        .expect("X-Db-Round-Trips header")
        .parse()
        .expect("a number")
}

#[tokio::test(flavor = "multi_thread")]
async fn the_statements_do_not_grow_with_posts_or_captures() {
    let app = spawn_app().await;
    let ann = app.personal_key("ann@acme.test");
    let (d, _) = reported(&app).await;
    let japan = app.workspace_id("Japan");
    // The key (and a lease when the key's tokens ran out), then one REPEATABLE READ READ ONLY transaction: BEGIN, the statements
    // (the workspace when named, accounts, posts, post captures, follower captures), COMMIT.
    let queries = [
        (format!("from={d}"), 7),
        (format!("from={d}&group=account"), 7),
        (format!("from={d}&group=post&workspace={japan}"), 8),
    ];
    let mut before = Vec::new();
    for (q, expected) in &queries {
        let res = get(&app, &ann, q).await;
        ok(&res);
        let trips = round_trips(&res);
        eprintln!("measured: GET /metrics?{q} = {trips} round trips");
        let trips = plain_trips(trips, *expected);
        assert_eq!(trips, *expected, "{q}: {trips} round trips besides a lease");
        before.push(trips);
    }
    let op1 = app.agent_key("op1");
    let jp1 = app.agent_key("jp1");
    for i in 0..6 {
        for (key, code) in [(&op1, "TW-T001"), (&jp1, "JP-T001")] {
            let id = published(
                &app,
                key,
                code,
                &format!("more{code}{i}"),
                &format!("{d}T11:00:00+08:00"),
            )
            .await;
            capture(
                &app,
                key,
                json!({"captured_at": format!("{d}T12:0{i}:00+08:00"),
                "posts": [{"post_id": id, "views": i}]}),
            )
            .await;
        }
    }
    for ((q, _), was) in queries.iter().zip(before) {
        let res = get(&app, &ann, q).await;
        ok(&res);
        assert_eq!(
            plain_trips(round_trips(&res), was),
            was,
            "{q}: the same statements with more posts"
        );
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn the_answers_dates_are_dates_in_the_openapi_document() {
    let app = spawn_app().await;
    let doc = ok(&app.client.get("/openapi.json", "").await);
    let schemas = &doc["components"]["schemas"];
    for (schema, field) in [
        ("MetricsPage", "from"),
        ("MetricsPage", "to"),
        ("MetricsDayOut", "date"),
    ] {
        let property = &schemas[schema]["properties"][field];
        assert_eq!(
            (&property["type"], &property["format"]),
            (&json!("string"), &json!("date")),
            "{schema}.{field}: {property}"
        );
    }
    // GET /metrics names its 409 (a code naming several accounts).
    let responses = &doc["paths"]["/api/user/v1/metrics"]["get"]["responses"];
    assert!(responses.get("409").is_some(), "{responses}");
}
