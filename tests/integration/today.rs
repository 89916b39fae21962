//! The person's day through HTTP and MCP over the standard tenant: GET /today (today).

use fleetdesk_tests::assert::{assert_error, ok};
use fleetdesk_tests::client::Request;
use fleetdesk_tests::{TestApp, spawn_app};
use jiff::{SignedDuration, Timestamp};
use serde_json::{Value, json};

const AGENT: &str = "/api/agent/v1";
const USER: &str = "/api/user/v1";

async fn agent_post(app: &TestApp, agent: &str, path: &str, body: Value) -> Value {
    ok(&app
        .client
        .post(&format!("{AGENT}{path}"), &app.agent_key(agent), &body)
        .await)
}

async fn today(app: &TestApp, who: &str, query: &str) -> fleetdesk_tests::Response {
    app.client
        .get(&format!("{USER}/today{query}"), &app.personal_key(who))
        .await
}

fn workspace<'a>(day: &'a Value, name: &str) -> &'a Value {
    day["workspaces"]
        .as_array()
        .unwrap()
        .iter()
        .find(|w| w["name"] == name)
        .unwrap_or_else(|| panic!("no workspace {name}: {day}"))
}

fn agent<'a>(ws: &'a Value, name: &str) -> &'a Value {
    ws["agents"]
        .as_array()
        .unwrap()
        .iter()
        .find(|a| a["name"] == name)
        .unwrap_or_else(|| panic!("no agent {name}: {ws}"))
}

fn names(day: &Value) -> Vec<String> {
    let mut n: Vec<String> = day["workspaces"]
        .as_array()
        .unwrap()
        .iter()
        .map(|w| {
            format!(
                "{}/{}",
                w["organization"]["name"].as_str().unwrap(),
                w["name"].as_str().unwrap()
            )
        })
        .collect();
    n.sort();
    n
}

#[tokio::test(flavor = "multi_thread")]
async fn today_shows_coverage_queue_decisions_cards_heartbeats_and_cron_health() {
    let app = spawn_app().await;
    let now = Timestamp::now();
    // Published a minute ago, but never before Taipei's midnight: the post counts on TW's
    // date of `now` whenever the test runs (16:00 UTC included).
    let taipei_day = now
        .to_zoned(jiff::tz::TimeZone::get("Asia/Taipei").unwrap())
        .start_of_day()
        .unwrap()
        .timestamp();
    let published_at =
        (now - SignedDuration::from_secs(60)).max(taipei_day + SignedDuration::from_secs(1));
    // One of TW-T001's two posts is out; a draft waits in review.
    agent_post(
        &app,
        "op1",
        "/posts/report",
        json!({"posts": [{"code": "TW-T001", "status": "published", "body": "Out today",
                          "platform_post_id": "thr-1", "permalink": "https://threads.net/@mia/post/1",
                          "published_at": published_at.to_string()}]}),
    )
    .await;
    agent_post(
        &app,
        "op1",
        "/drafts",
        json!({"code": "TW-T001", "body": "Waiting for review"}),
    )
    .await;
    // TW-I001 is banned: an account_banned decision opens and it leaves the coverage.
    agent_post(
        &app,
        "op1",
        "/accounts/TW-I001/state",
        json!({"state": "banned", "reason": "the platform said so",
               "occurred_at": now.to_string()}),
    )
    .await;
    // A card waiting for confirmation for two days.
    let (org, ws) = (
        app.tenant.organizations[0].id,
        app.tenant.organizations[0].workspaces[0].id,
    );
    app.sql(&format!(
        "INSERT INTO task_cards (organization_id, workspace_id, kind, title, status, target_type, \
         opened_by_type, opened_by_name, confirmation_since) VALUES ('{org}', '{ws}', \
         'write_posts', 'Write more', 'pending_confirmation', 'persona', 'person', 'Ann', \
         now() - interval '2 days')"
    ))
    .await;
    // Two more: one never marked (its last progress two days ago stands in, as in the tasks'
    // flags), one waiting for 23 hours (not overdue yet).
    app.sql(&format!(
        "INSERT INTO task_cards (organization_id, workspace_id, kind, title, status, target_type, \
         opened_by_type, opened_by_name, last_progress_at, confirmation_since) VALUES \
         ('{org}', '{ws}', 'write_posts', 'Old', 'pending_confirmation', 'persona', 'person', \
          'Ann', now() - interval '2 days', NULL), \
         ('{org}', '{ws}', 'write_posts', 'Recent', 'pending_confirmation', 'persona', 'person', \
          'Ann', NULL, now() - interval '23 hours')"
    ))
    .await;
    // op1 is alive; op2 never sent a heartbeat.
    agent_post(&app, "op1", "/heartbeat", json!({"run_id": "round-1"})).await;
    // op1's cron: a job whose last run failed, and an hourly job reported long ago never run.
    agent_post(
        &app,
        "op1",
        "/cron/jobs",
        json!({"jobs": [
            {"job_id": "backup", "name": "Backup", "schedule": "0 3 * * *",
             "timezone": "Asia/Taipei"},
            {"job_id": "poll", "name": "Poll", "schedule": "0 * * * *", "timezone": "UTC"},
            {"job_id": "off", "name": "Off", "schedule": "0 * * * *", "timezone": "UTC",
             "enabled": false}
        ]}),
    )
    .await;
    app.sql("UPDATE cron_jobs SET created_at = now() - interval '3 days'")
        .await;
    agent_post(
        &app,
        "op1",
        "/cron/runs",
        json!({"runs": [{"job_id": "backup", "run_id": "b1", "status": "failed",
                         "started_at": (now - SignedDuration::from_secs(600)).to_string(),
                         "summary": "disk full"}]}),
    )
    .await;

    let day = ok(&today(&app, "ann@acme.test", "").await);
    assert_eq!(names(&day), ["Acme/Japan", "Acme/Taiwan"], "{day}");
    let tw = workspace(&day, "Taiwan");
    let t001 = tw["coverage"]["accounts"]
        .as_array()
        .unwrap()
        .iter()
        .find(|a| a["code"] == "TW-T001")
        .expect("TW-T001 is active");
    assert_eq!(
        (&t001["target"], &t001["published"], &t001["missing"]),
        (&json!(2), &json!(1), &json!(1)),
        "{t001}"
    );
    let codes: Vec<&str> = tw["coverage"]["accounts"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a["code"].as_str().unwrap())
        .collect();
    assert!(
        !codes.contains(&"TW-I001"),
        "banned is not active: {codes:?}"
    );
    assert!(
        !codes.contains(&"TW-K001"),
        "warming is not active: {codes:?}"
    );
    assert_eq!(tw["review_queue"]["internal_review"], 1, "{tw}");
    assert_eq!(
        tw["decisions"]["by_kind"],
        json!([{"kind": "account_banned", "count": 1}])
    );
    assert_eq!(
        tw["cards"],
        json!({"pending_confirmation": 3, "confirm_overdue": 2})
    );
    let op1 = agent(tw, "op1");
    assert_eq!(op1["silent"], false, "{op1}");
    assert!(op1["last_heartbeat_at"].is_string());
    assert_eq!(agent(tw, "op2")["silent"], true);
    assert_eq!(agent(tw, "op2")["last_heartbeat_at"], Value::Null);
    // bot (community) sends no heartbeats: it is not listed, rather than always silent.
    assert!(
        tw["agents"]
            .as_array()
            .unwrap()
            .iter()
            .all(|a| a["name"] != "bot"),
        "{tw}"
    );
    assert_eq!(op1["cron"]["jobs"], 3);
    assert_eq!(op1["cron"]["enabled"], 2);
    assert_eq!(op1["cron"]["failed"][0]["job_id"], "backup", "{op1}");
    let missed: Vec<&str> = op1["cron"]["missed"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["job_id"].as_str().unwrap())
        .collect();
    assert_eq!(missed, ["poll"], "{op1}");
    // Japan has its own agent and accounts.
    let jp = workspace(&day, "Japan");
    assert_eq!(jp["coverage"]["accounts"][0]["code"], "JP-T001");
    assert_eq!(jp["coverage"]["dates"][0]["market"], "JP");

    // The same through MCP.
    let res = app
        .client
        .send(
            Request::mcp(&json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                              "params": {"name": "today", "arguments": {}}}))
            .bearer(&app.personal_key("ann@acme.test")),
        )
        .await;
    let r = fleetdesk_tests::assert::tool_result("today", &res.json());
    assert_eq!(names(&r["body"]), ["Acme/Japan", "Acme/Taiwan"]);
}

#[tokio::test(flavor = "multi_thread")]
async fn today_is_for_agency_and_admins_of_their_organizations() {
    let app = spawn_app().await;
    assert_error(&today(&app, "cli@brand.test", "").await, 403, "forbidden");
    let olga = ok(&today(&app, "olga@other.test", "").await);
    assert_eq!(names(&olga), ["Other Agency/Main"]);
    // Naming another organization is not a way in.
    let acme = app.tenant.organizations[0].id;
    let refused = assert_error(
        &today(&app, "olga@other.test", &format!("?organization={acme}")).await,
        404,
        "not_found",
    );
    assert_eq!(refused["field"], "organization", "{refused}");
    let root = ok(&today(&app, "root@example.com", "").await);
    assert_eq!(
        names(&root),
        ["Acme/Japan", "Acme/Taiwan", "Other Agency/Main"]
    );
    let root = ok(&today(&app, "root@example.com", &format!("?organization={acme}")).await);
    assert_eq!(names(&root), ["Acme/Japan", "Acme/Taiwan"]);
    // An agent's cron jobs show only under its own organization.
    agent_post(
        &app,
        "other1",
        "/cron/jobs",
        json!({"jobs": [{"job_id": "x", "name": "X", "schedule": "@daily", "timezone": "UTC"}]}),
    )
    .await;
    let ann = ok(&today(&app, "ann@acme.test", "").await);
    assert_eq!(agent(workspace(&ann, "Taiwan"), "op1")["cron"]["jobs"], 0);
    let olga = ok(&today(&app, "olga@other.test", "").await);
    assert_eq!(agent(workspace(&olga, "Main"), "other1")["cron"]["jobs"], 1);
}
