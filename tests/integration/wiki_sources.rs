//! Wiki sources through HTTP and MCP over the standard tenant: GET /wiki/sources
//! (wiki_sources) and POST /wiki/sources/{id}/runs (report_wiki_sync).
//!
//! Acme / Taiwan has Voice notes (beauty, op1, every 24 h), Lessons (shared, unassigned, every
//! 168 h) and Food lore (food, op2, every 24 h); no other workspace has sources.

use fleetdesk_tests::assert::{assert_error, ok};
use fleetdesk_tests::{Response, TestApp, spawn_app};
use jiff::{SignedDuration, Timestamp};
use serde_json::{Value, json};
use uuid::Uuid;

const AGENT: &str = "/api/agent/v1";

async fn list(app: &TestApp, agent: &str, due_only: Option<bool>) -> Value {
    let query = due_only.map_or(String::new(), |d| format!("?due_only={d}"));
    ok(&app
        .client
        .get(
            &format!("{AGENT}/wiki/sources{query}"),
            &app.agent_key(agent),
        )
        .await)
}

fn names(v: &Value) -> Vec<&str> {
    v["sources"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["name"].as_str().unwrap())
        .collect()
}

async fn source_id(app: &TestApp, name: &str) -> String {
    let v = list(app, "op1", None).await;
    v["sources"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["name"] == name)
        .unwrap_or_else(|| panic!("no source {name}: {v}"))["id"]
        .as_str()
        .unwrap()
        .to_owned()
}

async fn run(app: &TestApp, agent: &str, id: &str, body: Value) -> Response {
    app.client
        .post(
            &format!("{AGENT}/wiki/sources/{id}/runs"),
            &app.agent_key(agent),
            &body,
        )
        .await
}

async fn runs_of(app: &TestApp, id: &str) -> i64 {
    app.count(&format!(
        "SELECT count(*) AS n FROM wiki_sync_runs WHERE source_id = '{id}'"
    ))
    .await
}

fn ts(v: &Value) -> Timestamp {
    v.as_str()
        .unwrap_or_else(|| panic!("a time: {v}"))
        .parse()
        .unwrap()
}

#[tokio::test(flavor = "multi_thread")]
async fn the_list_shows_the_workspaces_sources_and_due_only_the_callers_and_unassigned() {
    let app = spawn_app().await;
    let all = list(&app, "op1", None).await;
    assert_eq!(
        names(&all),
        ["Food lore", "Lessons", "Voice notes"],
        "{all}"
    );
    let voice = &all["sources"][2];
    assert_eq!(voice["kind"], "notion");
    assert_eq!(voice["locator"], "https://notion.so/acme/voice");
    assert_eq!(voice["scope_note"], "voice and formats");
    assert_eq!(voice["project"], "beauty");
    assert_eq!(voice["agent"], "op1");
    assert_eq!(voice["every_hours"], 24);
    assert_eq!(
        (
            &voice["last_run_at"],
            &voice["last_status"],
            &voice["cursor"]
        ),
        (&Value::Null, &Value::Null, &Value::Null)
    );
    assert_eq!(
        (&voice["due"], &voice["next_due_at"]),
        (&json!(true), &Value::Null)
    );
    assert_eq!(all["sources"][1]["agent"], Value::Null);
    assert_eq!(all["sources"][1]["project"], Value::Null);
    // due_false is the same as absent.
    assert_eq!(list(&app, "op1", Some(false)).await, all);
    // Due only: op1's own and the unassigned, not op2's.
    assert_eq!(
        names(&list(&app, "op1", Some(true)).await),
        ["Lessons", "Voice notes"]
    );
    assert_eq!(
        names(&list(&app, "op2", Some(true)).await),
        ["Food lore", "Lessons"]
    );
    // Other workspaces and organizations have none of them.
    assert!(names(&list(&app, "jp1", None).await).is_empty());
    assert!(names(&list(&app, "other1", None).await).is_empty());
    // The community role has no wiki scope.
    assert_error(
        &app.client
            .get(&format!("{AGENT}/wiki/sources"), &app.agent_key("bot"))
            .await,
        403,
        "forbidden",
    );
    assert_error(
        &app.client
            .get(
                &format!("{AGENT}/wiki/sources?due_only=maybe"),
                &app.agent_key("op1"),
            )
            .await,
        400,
        "invalid_request",
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_run_updates_the_source_and_sets_when_it_is_due_next() {
    let app = spawn_app().await;
    let voice = source_id(&app, "Voice notes").await;
    let before = Timestamp::now();
    let res = run(
        &app,
        "op1",
        &voice,
        json!({"status": "success", "summary": "Read 12 notes: 2 new, 1 revised.",
               "counts": {"read": 12, "created": 2, "revised": 1, "unchanged": 8, "skipped": 1},
               "cursor": "2026-11-25T10:00:00Z"}),
    )
    .await;
    assert_eq!(res.status, 201, "{}", res.text());
    let v = res.json();
    let run_id: Uuid = v["run_id"].as_str().unwrap().parse().unwrap();
    let s = &v["source"];
    assert_eq!(s["name"], "Voice notes");
    assert_eq!(s["last_status"], "success");
    assert_eq!(s["cursor"], "2026-11-25T10:00:00Z");
    assert_eq!(s["due"], false);
    let last = ts(&s["last_run_at"]);
    assert!(
        last >= before - SignedDuration::from_secs(2),
        "{last} {before}"
    );
    assert_eq!(ts(&s["next_due_at"]), last + SignedDuration::from_hours(24));
    assert_eq!(
        app.count(&format!(
            "SELECT count(*) AS n FROM wiki_sync_runs WHERE id = '{run_id}' AND read = 12 \
             AND created = 2 AND revised = 1 AND unchanged = 8 AND skipped = 1 \
             AND status = 'success' AND cursor = '2026-11-25T10:00:00Z' \
             AND agent_id = '{}'",
            app.agent_id("op1")
        ))
        .await,
        1
    );
    // The list agrees, and due_only no longer shows it.
    let all = list(&app, "op1", None).await;
    assert_eq!(all["sources"][2], *s, "{all}");
    assert_eq!(names(&list(&app, "op1", Some(true)).await), ["Lessons"]);

    // A day later (moved back in the database) it is due again.
    app.sql(&format!(
        "UPDATE wiki_sources SET last_run_at = now() - interval '24 hours' WHERE id = '{voice}'"
    ))
    .await;
    // Never-synced Lessons first, then the overdue one.
    assert_eq!(
        names(&list(&app, "op1", Some(true)).await),
        ["Lessons", "Voice notes"]
    );
    app.sql(&format!(
        "UPDATE wiki_sources SET last_run_at = now() - interval '23 hours 59 minutes' \
         WHERE id = '{voice}'"
    ))
    .await;
    assert_eq!(names(&list(&app, "op1", Some(true)).await), ["Lessons"]);

    // A run without cursor keeps it; an empty cursor clears it; counts default to 0.
    let v = ok(&run(&app, "op1", &voice, json!({"status": "partial"})).await);
    assert_eq!(v["source"]["cursor"], "2026-11-25T10:00:00Z");
    assert_eq!(v["source"]["last_status"], "partial");
    assert_eq!(
        ts(&v["source"]["next_due_at"]),
        ts(&v["source"]["last_run_at"]) + SignedDuration::from_hours(24)
    );
    let v = ok(&run(
        &app,
        "op1",
        &voice,
        json!({"status": "success", "cursor": ""}),
    )
    .await);
    assert_eq!(v["source"]["cursor"], Value::Null);
    assert_eq!(runs_of(&app, &voice).await, 3);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_failed_run_is_retried_after_an_hour() {
    let app = spawn_app().await;
    let lessons = source_id(&app, "Lessons").await;
    // Unassigned: any agent of the workspace reports it.
    let v = ok(&run(
        &app,
        "op2",
        &lessons,
        json!({"status": "failed",
        "summary": "The vault was unreachable."}),
    )
    .await);
    let last = ts(&v["source"]["last_run_at"]);
    assert_eq!(
        ts(&v["source"]["next_due_at"]),
        last + SignedDuration::from_hours(1)
    );
    assert_eq!(v["source"]["due"], false);
    assert!(!names(&list(&app, "op1", Some(true)).await).contains(&"Lessons"));
    app.sql(&format!(
        "UPDATE wiki_sources SET last_run_at = now() - interval '1 hour' WHERE id = '{lessons}'"
    ))
    .await;
    assert!(names(&list(&app, "op1", Some(true)).await).contains(&"Lessons"));
    // A success waits the whole period (168 hours).
    let v = ok(&run(&app, "op1", &lessons, json!({"status": "success"})).await);
    assert_eq!(
        ts(&v["source"]["next_due_at"]),
        ts(&v["source"]["last_run_at"]) + SignedDuration::from_hours(168)
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn other_agents_workspaces_and_organizations_sources_are_refused() {
    let app = spawn_app().await;
    let voice = source_id(&app, "Voice notes").await;
    let body = json!({"status": "success"});
    // Assigned to op1: op2 sees it in the list but may not report it.
    assert_error(
        &run(&app, "op2", &voice, body.clone()).await,
        403,
        "forbidden",
    );
    assert_error(
        &run(&app, "jp1", &voice, body.clone()).await,
        404,
        "not_found",
    );
    assert_error(
        &run(&app, "other1", &voice, body.clone()).await,
        404,
        "not_found",
    );
    let unknown = Uuid::new_v4().to_string();
    assert_error(
        &run(&app, "op1", &unknown, body.clone()).await,
        404,
        "not_found",
    );
    assert_error(&run(&app, "bot", &voice, body).await, 403, "forbidden");
    assert_eq!(runs_of(&app, &voice).await, 0);
    assert_eq!(
        app.count(&format!(
            "SELECT count(*) AS n FROM wiki_sources WHERE id = '{voice}' AND last_run_at IS NULL"
        ))
        .await,
        1
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn every_limit_at_the_limit_and_one_past() {
    let app = spawn_app().await;
    let voice = source_id(&app, "Voice notes").await;
    let at_limit = json!({"status": "success", "summary": "s".repeat(2000),
        "cursor": "c".repeat(2000),
        "counts": {"read": 2147483647, "created": 0, "revised": 0, "unchanged": 0,
                   "skipped": 2147483647}});
    let v = ok(&run(&app, "op1", &voice, at_limit.clone()).await);
    assert_eq!(v["source"]["cursor"].as_str().unwrap().len(), 2000);
    let past: [(&str, Value); 8] = [
        ("summary", json!("s".repeat(2001))),
        ("cursor", json!("c".repeat(2001))),
        ("counts", json!({"read": -1})),
        ("counts", json!({"skipped": 2147483648u64})),
        ("counts", json!({"read": 1.5})),
        ("counts", json!({"other": 1})),
        ("status", json!("done")),
        ("status", Value::Null),
    ];
    for (field, value) in past {
        let mut body = at_limit.clone();
        body[field] = value.clone();
        let e = assert_error(
            &run(&app, "op1", &voice, body).await,
            400,
            "invalid_request",
        );
        assert!(
            e["field"].as_str().is_some_and(|f| f.starts_with(field)),
            "{field} {value}: {e}"
        );
    }
    let e = assert_error(
        &run(
            &app,
            "op1",
            &voice,
            json!({"status": "success", "extra": 1}),
        )
        .await,
        400,
        "invalid_request",
    );
    assert!(e["message"].as_str().unwrap().contains("extra"), "{e}");
    assert_eq!(runs_of(&app, &voice).await, 1);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_summary_or_cursor_carrying_an_access_token_is_refused() {
    let app = spawn_app().await;
    let voice = source_id(&app, "Voice notes").await;
    for (field, value) in [
        (
            "summary",
            "Synced https://notion.so/acme/voice?v=2&token=abc123 today",
        ),
        ("summary", "Read with access_token=ya29.a0AfH6SMB1x9"),
        ("cursor", "page=3&sig=0f0f0f0f9a8b7c6d"),
        ("cursor", "https://s3.test/vault?X-Amz-Signature=abcd"),
    ] {
        let mut body = json!({"status": "success"});
        body[field] = json!(value);
        let e = assert_error(&run(&app, "op1", &voice, body).await, 422, "rejected");
        assert_eq!(e["field"], field, "{value}: {e}");
        assert!(!e["message"].as_str().unwrap().contains("abc123"), "{e}");
    }
    assert_eq!(runs_of(&app, &voice).await, 0);
    // A link without a token, and a parameter merely named like one, are fine.
    ok(&run(
        &app,
        "op1",
        &voice,
        json!({"status": "success", "summary": "See https://notion.so/acme/voice?v=2",
               "cursor": "tokens=4&page=2"}),
    )
    .await);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_run_replays_with_the_same_key_and_request_id() {
    let app = spawn_app().await;
    let voice = source_id(&app, "Voice notes").await;
    let op1 = app.agent_key("op1");
    let path = format!("{AGENT}/wiki/sources/{voice}/runs");
    let body = json!({"status": "success", "counts": {"read": 3}});
    let idem = Uuid::new_v4().to_string();
    let first = app.client.post_idem(&path, &op1, &idem, &body).await;
    assert_eq!(first.status, 201, "{}", first.text());
    let again = app.client.post_idem(&path, &op1, &idem, &body).await;
    assert_eq!(again.status, 201);
    assert_eq!(again.header("idempotent-replayed"), Some("true"));
    assert_eq!(again.json(), first.json());
    assert_error(
        &app.client
            .post_idem(&path, &op1, &idem, &json!({"status": "failed"}))
            .await,
        422,
        "idempotency_mismatch",
    );
    assert_eq!(runs_of(&app, &voice).await, 1);

    // MCP: the path id is `source_id`, as the specification names it (`id` is unknown);
    // request_id plays the key.
    let wrong = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {
        "name": "report_wiki_sync", "arguments": {"id": voice, "status": "success"}}});
    let refused = app
        .client
        .send(fleetdesk_tests::client::Request::mcp(&wrong).bearer(&op1))
        .await
        .json();
    assert_eq!(refused["error"]["code"], -32602, "{refused}");
    assert_eq!(refused["error"]["data"]["field"], "source_id", "{refused}");
    let args = json!({"source_id": voice, "status": "partial", "summary": "Half the vault.",
                      "counts": {"read": 5, "skipped": 2}, "cursor": "notes/m",
                      "request_id": "sync-1"});
    let v = app.call_tool(&op1, "report_wiki_sync", args.clone()).await;
    assert_eq!(v["body"]["source"]["last_status"], "partial", "{v}");
    let again = app.call_tool(&op1, "report_wiki_sync", args.clone()).await;
    assert_eq!(again["body"], v["body"]);
    let mut other = args;
    other["status"] = json!("success");
    let e = app.call_tool(&op1, "report_wiki_sync", other).await;
    assert_eq!(e["isError"], true, "{e}");
    assert_eq!(e["body"]["code"], "idempotency_mismatch", "{e}");
    assert_eq!(runs_of(&app, &voice).await, 2);

    let listed = app
        .call_tool(&op1, "wiki_sources", json!({"due_only": true}))
        .await;
    assert_eq!(names(&listed["body"]), ["Lessons"], "{listed}");
}
