//! What an instance keeps between requests: the account list serialized (GET /accounts) and
//! the open task cards a heartbeat answers with. They answer without reading while the
//! workspace's revision stands, and every committed change to what they show is in the next
//! answer on every instance, whatever wrote it (the API, the tenant file, SQL by hand).

use fleetdesk_tests::assert::plain_trips;
use fleetdesk_tests::client::Client;
use fleetdesk_tests::{Response, TestApp, spawn_app};
use serde_json::json;

const ACCOUNTS: &str = "/api/agent/v1/accounts";

fn round_trips(res: &Response) -> u32 {
    res.header("x-db-round-trips")
        .expect("X-Db-Round-Trips header")
        .parse()
        .expect("an integer")
}

/// The accounts `client` lists for `key`, each as `code/platform` with the field asked for.
async fn listed(client: &Client, key: &str, field: &str) -> Vec<String> {
    let res = client.get(ACCOUNTS, key).await;
    assert_eq!(res.status, 200, "{}", res.text());
    let mut out: Vec<String> = res.json()["accounts"]
        .as_array()
        .expect("accounts[]")
        .iter()
        .map(|a| {
            format!(
                "{}/{} {}={}",
                a["code"].as_str().unwrap(),
                a["platform"].as_str().unwrap(),
                field,
                a[field]
            )
        })
        .collect();
    out.sort();
    out
}

/// `sql` with `{mia}`, `{op1}` and `{op2}` replaced by the standard tenant's ids: other
/// organizations have accounts of the same codes and agents of the same names.
fn scoped(app: &TestApp, sql: &str) -> String {
    sql.replace("{mia}", &app.persona_id("Mia").to_string())
        .replace("{op1}", &app.agent_id("op1").to_string())
        .replace("{op2}", &app.agent_id("op2").to_string())
}

async fn run(app: &TestApp, sql: &str) {
    app.sql(&scoped(app, sql)).await;
}

/// op1's workspace's `accounts_revision` or `tasks_revision`.
async fn revision_of(app: &TestApp, column: &str) -> i64 {
    app.count(&scoped(
        app,
        &format!(
            "SELECT {column} AS n FROM workspaces w JOIN agents a ON a.workspace_id = w.id \
             WHERE a.id = '{{op1}}'"
        ),
    ))
    .await
}

async fn revision(app: &TestApp) -> i64 {
    revision_of(app, "accounts_revision").await
}

async fn tasks_revision(app: &TestApp) -> i64 {
    revision_of(app, "tasks_revision").await
}

/// A heartbeat's open cards on `client`, each as `title status`, and its round trips.
async fn heartbeat(client: &Client, key: &str) -> (Vec<String>, u32) {
    let res = client
        .post(
            "/api/agent/v1/heartbeat",
            key,
            &json!({"run_id": uuid::Uuid::new_v4().to_string()}),
        )
        .await;
    assert_eq!(res.status, 200, "{}", res.text());
    let cards = res.json()["tasks"]
        .as_array()
        .expect("tasks[]")
        .iter()
        .map(|t| {
            format!(
                "{} {}",
                t["title"].as_str().unwrap(),
                t["status"].as_str().unwrap()
            )
        })
        .collect();
    (cards, round_trips(&res))
}

/// The open cards both instances answer with, which must agree.
async fn cards(clients: &[Client; 2], key: &str) -> Vec<String> {
    let (a, _) = heartbeat(&clients[0], key).await;
    let (b, _) = heartbeat(&clients[1], key).await;
    assert_eq!(a, b, "the two instances disagree");
    a
}

/// What `field` of `code/platform` shows on both instances, which must agree.
async fn shown(clients: &[Client; 2], key: &str, code: &str, field: &str) -> Option<String> {
    let a = listed(&clients[0], key, field).await;
    let b = listed(&clients[1], key, field).await;
    assert_eq!(a, b, "the two instances disagree");
    a.into_iter()
        .find(|l| l.starts_with(&format!("{code} ")))
        .map(|l| l.split_once('=').expect("field").1.to_owned())
}

#[tokio::test(flavor = "multi_thread")]
async fn a_kept_list_is_answered_with_the_authentication_alone() {
    let app = spawn_app().await;
    let key = app.agent_key("op1");
    let first = app.client.get(ACCOUNTS, &key).await;
    assert_eq!(first.status, 200);
    // Authentication and the list (and a lease on a key's first request).
    assert_eq!(
        plain_trips(round_trips(&first), 2),
        2,
        "{:?}",
        first.header("x-db-round-trips")
    );
    let mut bodies = vec![first.json()];
    for _ in 0..3 {
        let res = app.client.get(ACCOUNTS, &key).await;
        assert_eq!(res.status, 200);
        assert_eq!(
            plain_trips(round_trips(&res), 1),
            1,
            "the kept list needs no read"
        );
        bodies.push(res.json());
    }
    assert!(
        bodies.iter().all(|b| *b == bodies[0]),
        "the kept list is the list"
    );
    // The same agent's other key shares the kept list; another agent has its own.
    let other_key = &app.agent_keys("op1")[1];
    let res = app.client.get(ACCOUNTS, other_key).await;
    assert_eq!(res.json()["accounts"], bodies[0]["accounts"]);
    let op2 = app.agent_key("op2");
    let res = app.client.get(ACCOUNTS, &op2).await;
    assert_eq!(res.json()["agent"]["name"], "op2");
    assert_eq!(
        listed(&app.client, &op2, "code").await,
        ["TW-T002/threads code=\"TW-T002\""]
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn every_change_the_list_shows_is_in_the_next_answer_on_every_instance() {
    let app = spawn_app().await;
    let (second, handle) = app.another_instance(10_000).await;
    let clients = [app.client.clone(), second];
    let key = app.agent_key("op1");
    assert_eq!(
        shown(&clients, &key, "TW-T001/threads", "handle")
            .await
            .as_deref(),
        Some("\"mia\"")
    );

    // Through the API, on the second instance: a state report.
    let res = clients[1]
        .post(&format!("{}/TW-T001/state?platform=threads", ACCOUNTS), &key, &json!({"state": "paused", "reason": "a pause", "occurred_at": "2026-11-27T10:00:00+08:00"}))
        .await;
    assert_eq!(res.status, 200, "{}", res.text());
    assert_eq!(
        shown(&clients, &key, "TW-T001/threads", "state")
            .await
            .as_deref(),
        Some("\"paused\"")
    );

    // By hand, every column the list shows.
    let changes: &[(&str, &str, &str, &str)] = &[
        (
            "UPDATE account_slots SET handle = 'mia2' WHERE code = 'TW-T001' AND persona_id = '{mia}'",
            "TW-T001/threads",
            "handle",
            "\"mia2\"",
        ),
        (
            "UPDATE account_slots SET daily_target = 7 WHERE code = 'TW-T001' AND persona_id = '{mia}'",
            "TW-T001/threads",
            "daily_target",
            "7",
        ),
        (
            "UPDATE account_slots SET legacy_code = 'OLD9' WHERE code = 'TW-T001' AND persona_id = '{mia}'",
            "TW-T001/threads",
            "legacy_code",
            "\"OLD9\"",
        ),
        (
            "UPDATE account_slots SET publishing = 'fleetdesk' WHERE code = 'TW-T001' AND persona_id = '{mia}'",
            "TW-T001/threads",
            "publishing",
            "\"fleetdesk\"",
        ),
        (
            "UPDATE account_slots SET market = 'JP', timezone = 'Asia/Tokyo' WHERE code = 'TW-T001' AND persona_id = '{mia}'",
            "TW-T001/threads",
            "market",
            "\"JP\"",
        ),
        (
            "UPDATE account_generations SET state = 'warming' WHERE slot_id = (SELECT id FROM account_slots WHERE code = 'TW-T001' AND persona_id = '{mia}')",
            "TW-T001/threads",
            "state",
            "\"warming\"",
        ),
        (
            "UPDATE personas SET name = 'Mia Two' WHERE id = '{mia}'",
            "TW-T001/threads",
            "persona",
            "\"Mia Two\"",
        ),
        (
            "UPDATE account_generations SET closed_at = now() WHERE slot_id = (SELECT id FROM account_slots WHERE code = 'TW-T001' AND persona_id = '{mia}')",
            "TW-T001/threads",
            "state",
            "null",
        ),
        (
            "INSERT INTO account_generations (slot_id, generation, state) SELECT id, 2, 'active' FROM account_slots WHERE code = 'TW-T001' AND persona_id = '{mia}'",
            "TW-T001/threads",
            "generation",
            "2",
        ),
    ];
    for (sql, account, field, want) in changes {
        let before = revision(&app).await;
        run(&app, sql).await;
        assert!(revision(&app).await > before, "{sql} raised no revision");
        assert_eq!(
            shown(&clients, &key, account, field).await.as_deref(),
            Some(*want),
            "after {sql}"
        );
    }

    // A new account through the API, on the first instance.
    let persona = app.persona_id("Mia");
    let res = clients[0]
        .post(
            ACCOUNTS,
            &key,
            &json!({"persona_id": persona, "platform": "threads", "code": "TW-NEW1"}),
        )
        .await;
    assert_eq!(res.status, 201, "{}", res.text());
    assert_eq!(
        shown(&clients, &key, "TW-NEW1/threads", "state")
            .await
            .as_deref(),
        Some("\"warming\"")
    );

    // The persona moves to another agent: its accounts leave op1's list for op2's.
    run(
        &app,
        "UPDATE personas SET agent_id = '{op2}' WHERE id = '{mia}'",
    )
    .await;
    assert_eq!(
        listed(&clients[0], &key, "code").await,
        Vec::<String>::new()
    );
    assert_eq!(
        listed(&clients[1], &key, "code").await,
        Vec::<String>::new()
    );
    let op2 = app.agent_key("op2");
    assert!(
        shown(&clients, &op2, "TW-NEW1/threads", "code")
            .await
            .is_some()
    );

    // A deleted account leaves the list (nothing deletes accounts today; the trigger covers it).
    run(&app, "DELETE FROM account_generations WHERE slot_id = (SELECT id FROM account_slots WHERE code = 'TW-NEW1' AND persona_id = '{mia}')").await;
    run(
        &app,
        "DELETE FROM account_slots WHERE code = 'TW-NEW1' AND persona_id = '{mia}'",
    )
    .await;
    assert!(
        shown(&clients, &op2, "TW-NEW1/threads", "code")
            .await
            .is_none()
    );
    handle.stop(true).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn changes_the_list_does_not_show_keep_it() {
    let app = spawn_app().await;
    let key = app.agent_key("op1");
    let _ = app.client.get(ACCOUNTS, &key).await;
    let before = revision(&app).await;
    // An avatar, a persona's bio, an account's onboarding date, another workspace's accounts.
    let png = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==";
    let res = app
        .client
        .post(
            &format!("{ACCOUNTS}/TW-T001/avatar?platform=threads"),
            &key,
            &json!({"data": png}),
        )
        .await;
    assert_eq!(res.status, 200, "{}", res.text());
    run(
        &app,
        "UPDATE personas SET bio = 'another bio' WHERE id = '{mia}'",
    )
    .await;
    run(&app, "UPDATE account_generations SET onboarded_at = '2026-01-01' WHERE slot_id = (SELECT id FROM account_slots WHERE code = 'TW-T001' AND persona_id = '{mia}')").await;
    run(
        &app,
        "UPDATE account_slots SET handle = handle WHERE code = 'TW-T001' AND persona_id = '{mia}'",
    )
    .await;
    assert_eq!(
        revision(&app).await,
        before,
        "nothing the list shows changed"
    );
    let res = app.client.get(ACCOUNTS, &key).await;
    assert_eq!(
        plain_trips(round_trips(&res), 1),
        1,
        "the kept list still answers"
    );
    // The same statement writing many rows raises the revision once.
    run(&app, "UPDATE account_slots SET daily_target = daily_target + 1 WHERE workspace_id = (SELECT workspace_id FROM agents WHERE id = '{op1}')").await;
    assert_eq!(revision(&app).await, before + 1);
    let targets = listed(&app.client, &key, "daily_target").await;
    assert!(
        targets
            .iter()
            .any(|t| t.starts_with("TW-T001/threads") && t.ends_with("=3")),
        "{targets:?}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_heartbeat_answers_with_the_open_cards_as_they_are_on_every_instance() {
    let app = spawn_app().await;
    let (second, handle) = app.another_instance(10_000).await;
    let clients = [app.client.clone(), second];
    let key = app.agent_key("op1");
    assert_eq!(cards(&clients, &key).await, Vec::<String>::new());
    // Kept: the heartbeat's own upsert and the authentication (and a lease now and then).
    let (_, trips) = heartbeat(&clients[0], &key).await;
    assert_eq!(plain_trips(trips, 2), 2, "the kept cards need no read");

    // Opened on one instance, worked on the other.
    let res = clients[1]
        .post("/api/agent/v1/tasks", &key, &json!({"kind": "other", "title": "Do it", "target": {"type": "slot", "code": "TW-T001"}}))
        .await;
    assert_eq!(res.status, 201, "{}", res.text());
    let id = res.json()["id"].as_str().expect("id").to_owned();
    assert_eq!(cards(&clients, &key).await, ["Do it pending_pickup"]);
    let res = clients[0]
        .post(&format!("/api/agent/v1/tasks/{id}/claim"), &key, &json!({}))
        .await;
    assert_eq!(res.status, 200, "{}", res.text());
    assert_eq!(cards(&clients, &key).await, ["Do it in_progress"]);

    // By hand: what a card shows changes the answer; a note does not.
    let before = tasks_revision(&app).await;
    run(&app, "UPDATE task_cards SET notes = '[{\"by\": \"x\", \"text\": \"t\", \"at\": \"2026-11-27T00:00:00Z\"}]'").await;
    assert_eq!(
        tasks_revision(&app).await,
        before,
        "a note changes no heartbeat"
    );
    run(&app, "UPDATE task_cards SET title = 'Do it now'").await;
    assert!(tasks_revision(&app).await > before);
    assert_eq!(cards(&clients, &key).await, ["Do it now in_progress"]);

    // An unassigned card follows its persona's agent.
    run(
        &app,
        "UPDATE task_cards SET assignee_agent = NULL, status = 'pending_pickup'",
    )
    .await;
    assert_eq!(cards(&clients, &key).await, ["Do it now pending_pickup"]);
    run(
        &app,
        "UPDATE personas SET agent_id = '{op2}' WHERE id = '{mia}'",
    )
    .await;
    assert_eq!(cards(&clients, &key).await, Vec::<String>::new());
    assert_eq!(
        cards(&clients, &app.agent_key("op2")).await,
        ["Do it now pending_pickup"]
    );

    // A card that is done leaves the answer.
    run(
        &app,
        "UPDATE task_cards SET status = 'done', finished_at = now()",
    )
    .await;
    assert_eq!(
        cards(&clients, &app.agent_key("op2")).await,
        Vec::<String>::new()
    );
    handle.stop(true).await;
}
