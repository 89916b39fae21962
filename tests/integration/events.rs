//! The event log through the agent feed (`GET /api/agent/v1/events`, MCP `wait_events`): the
//! events of a card and of a decision arrive in commit order to the agent that owns them and
//! to no other; a waiting read answers when an event commits; every query limit at and one
//! past.

use fleetdesk_tests::assert::{assert_error, ok};
use fleetdesk_tests::{Response, TestApp, spawn_app};
use serde_json::{Value, json};
use uuid::Uuid;

const AGENT: &str = "/api/agent/v1";
const USER: &str = "/api/user/v1";
const ANN: &str = "ann@acme.test";

async fn feed(app: &TestApp, agent: &str, query: &str) -> Response {
    app.client
        .get(&format!("{AGENT}/events{query}"), &app.agent_key(agent))
        .await
}

/// The feed's events as (type, object_id) and its next cursor.
async fn read(app: &TestApp, agent: &str, query: &str) -> (Vec<(String, Uuid)>, String) {
    let v = ok(&feed(app, agent, query).await);
    let events = v["events"]
        .as_array()
        .expect("events")
        .iter()
        .map(|e| {
            let kind = e["type"].as_str().expect("type").to_owned();
            (kind, e["object_id"].as_str().unwrap().parse().unwrap())
        })
        .collect();
    let next = v["next_cursor"].as_str().expect("next_cursor").to_owned();
    (events, next)
}

/// The types of the events about `id`, in feed order.
fn types_of(events: &[(String, Uuid)], id: Uuid) -> Vec<&str> {
    events
        .iter()
        .filter(|(_, object)| *object == id)
        .map(|(kind, _)| kind.as_str())
        .collect()
}

/// Ann opens a card on Mia's (op1's) account: its id.
async fn card_for_op1(app: &TestApp) -> Uuid {
    let body = json!({"kind": "other", "title": "Fix the bio",
        "target": {"type": "slot", "code": "TW-T001"}});
    let v = ok(&app
        .client
        .post(&format!("{USER}/tasks"), &app.personal_key(ANN), &body)
        .await);
    v["id"].as_str().unwrap().parse().unwrap()
}

async fn op1_moves(app: &TestApp, id: Uuid, action: &str, body: Value) {
    ok(&app
        .client
        .post(
            &format!("{AGENT}/tasks/{id}/{action}"),
            &app.agent_key("op1"),
            &body,
        )
        .await);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_cards_moves_reach_its_agent_in_commit_order_and_no_one_else() {
    let app = spawn_app().await;
    let id = card_for_op1(&app).await;
    op1_moves(&app, id, "claim", json!({})).await;
    op1_moves(&app, id, "progress", json!({"note": "halfway"})).await;
    op1_moves(&app, id, "finish", json!({"result": "bio fixed"})).await;
    ok(&app
        .client
        .post(
            &format!("{USER}/tasks/{id}/confirm"),
            &app.personal_key(ANN),
            &json!({}),
        )
        .await);

    let v = ok(&feed(&app, "op1", "").await);
    let events = v["events"].as_array().unwrap();
    let mine: Vec<&Value> = events
        .iter()
        .filter(|e| e["object_id"] == id.to_string())
        .collect();
    let types: Vec<&str> = mine.iter().map(|e| e["type"].as_str().unwrap()).collect();
    // A progress report tells nothing.
    assert_eq!(
        types,
        [
            "task.opened",
            "task.claimed",
            "task.finished",
            "task.confirmed"
        ]
    );
    let cursors: Vec<u64> = mine
        .iter()
        .map(|e| e["cursor"].as_str().unwrap().parse().unwrap())
        .collect();
    assert!(cursors.windows(2).all(|w| w[0] < w[1]), "{cursors:?}");
    assert_eq!(
        mine[0]["workspace_id"],
        app.workspace_id("Taiwan").to_string()
    );
    assert_eq!(
        mine[0]["data"],
        json!({"kind": "other", "title": "Fix the bio", "status": "pending_pickup",
               "note": null})
    );
    assert_eq!(mine[2]["data"]["note"], "bio fixed");
    assert_eq!(mine[2]["data"]["status"], "pending_confirmation");
    assert_eq!(mine[3]["data"]["status"], "done");
    assert!(mine[0]["occurred_at"].as_str().unwrap().ends_with('Z'));
    assert!(mine[0]["id"].as_str().unwrap().parse::<Uuid>().is_ok());

    // Nothing after the last one; the cursor stays.
    let next = v["next_cursor"].as_str().unwrap();
    let (after, again) = read(&app, "op1", &format!("?after={next}")).await;
    assert!(after.is_empty(), "{after:?}");
    assert_eq!(again, next);

    // Only the kinds asked for.
    let (claimed, _) = read(&app, "op1", "?types=task.claimed,task.failed").await;
    assert_eq!(types_of(&claimed, id), ["task.claimed"]);

    // Not op2's card, another workspace's agent, nor another organization's.
    for agent in ["op2", "jp1", "other1"] {
        let (events, _) = read(&app, agent, "").await;
        assert!(types_of(&events, id).is_empty(), "{agent}: {events:?}");
    }
    // The community assistant's role reads none of these (no accounts:read).
    assert_error(&feed(&app, "bot", "").await, 403, "forbidden");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_decision_opened_and_decided_reaches_the_agent_it_concerns() {
    let app = spawn_app().await;
    let op1 = app.agent_key("op1");
    let v = ok(&app
        .client
        .post(
            &format!("{AGENT}/personas"),
            &op1,
            &json!({"name": "Nova", "project": "beauty"}),
        )
        .await);
    let issue: Uuid = v["issue_id"].as_str().unwrap().parse().unwrap();
    ok(&app
        .client
        .post(
            &format!("{USER}/decisions/{issue}/resolve"),
            &app.personal_key(ANN),
            &json!({"note": "welcome"}),
        )
        .await);
    let v = ok(&feed(&app, "op1", "?types=decision.opened,decision.decided").await);
    let about: Vec<&Value> = v["events"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["object_id"] == issue.to_string())
        .collect();
    assert_eq!(about.len(), 2, "{v}");
    assert_eq!(about[0]["type"], "decision.opened");
    assert_eq!(about[0]["data"]["kind"], "persona_new");
    assert_eq!(about[0]["data"]["status"], "open");
    assert_eq!(about[1]["type"], "decision.decided");
    assert_eq!(about[1]["data"]["status"], "resolved");
    let (other, _) = read(&app, "op2", "").await;
    assert!(types_of(&other, issue).is_empty(), "{other:?}");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_waiting_read_answers_when_an_event_commits() {
    let app = spawn_app().await;
    let (_, head) = read(&app, "op1", "").await;
    // Nothing arrives: the wait runs out and answers an empty page at the same cursor.
    let (none, same) = read(&app, "op1", &format!("?after={head}&wait=1")).await;
    assert!(none.is_empty());
    assert_eq!(same, head);

    let client = app.client.clone();
    let key = app.agent_key("op1");
    let path = format!("{AGENT}/events?after={head}&wait=30");
    let waiting = tokio::spawn(async move { client.get(&path, &key).await });
    // Let the read start waiting, then commit an event it may see.
    tokio::time::sleep(std::time::Duration::from_millis(300)).await;
    let id = card_for_op1(&app).await;
    let res = waiting.await.unwrap();
    let v = ok(&res);
    let events = v["events"].as_array().unwrap();
    assert_eq!(events.len(), 1, "{v}");
    assert_eq!(events[0]["type"], "task.opened");
    assert_eq!(events[0]["object_id"], id.to_string());
    assert_eq!(v["next_cursor"], events[0]["cursor"]);
}

#[tokio::test(flavor = "multi_thread")]
async fn query_limits_at_and_one_past() {
    let app = spawn_app().await;
    for query in [
        "?wait=0",
        "?wait=1",
        "?limit=1",
        "?limit=200",
        "?after=0",
        "?after=999999999999999999",
        "?types=post.moved",
    ] {
        ok(&feed(&app, "op1", query).await);
    }
    for (query, field) in [
        ("?wait=31", "wait"),
        ("?wait=-1", "wait"),
        ("?limit=0", "limit"),
        ("?limit=201", "limit"),
        ("?after=abc", "after"),
        ("?after=-1", "after"),
        ("?after=1234567890123456789", "after"),
        ("?types=post.eaten", "types"),
        ("?types=post.moved,", "types"),
    ] {
        let v = assert_error(&feed(&app, "op1", query).await, 400, "invalid_request");
        assert_eq!(v["field"], field, "{query}: {v}");
    }
    // A personal key is not an agent's.
    let res = app
        .client
        .get(&format!("{AGENT}/events"), &app.personal_key(ANN))
        .await;
    assert!(matches!(res.status, 401 | 403), "{}", res.status);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_page_resumes_where_the_last_ended() {
    let app = spawn_app().await;
    let mut ids = Vec::new();
    for _ in 0..3 {
        let id = card_for_op1(&app).await;
        op1_moves(&app, id, "claim", json!({})).await;
        ids.push(id);
    }
    let mut seen = Vec::new();
    let mut cursor = String::from("0");
    loop {
        let (events, next) = read(&app, "op1", &format!("?after={cursor}&limit=2")).await;
        if events.is_empty() {
            break;
        }
        assert!(events.len() <= 2);
        seen.extend(events);
        cursor = next;
    }
    for id in ids {
        assert_eq!(types_of(&seen, id), ["task.opened", "task.claimed"]);
    }
}
