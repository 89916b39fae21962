//! The scenario, end to end through both APIs: a person opens a card for an agent; the
//! agent claims it, reports progress and finishes it with evidence; the person reopens it, the
//! agent finishes again and the person confirms. The agent reports its cron jobs and a failed
//! run and sends a heartbeat; at each step the person's day (`GET /today`) shows where the card
//! stands, the failed job and the agents' heartbeats.

use fleetdesk_tests::{Response, TestApp, spawn_app};
use jiff::{SignedDuration, Timestamp};
use serde_json::{Value, json};

const AGENT: &str = "/api/agent/v1";
const PERSONAL: &str = "/api/user/v1";
const ANN: &str = "ann@acme.test";

#[track_caller]
fn ok(res: &Response, status: u16) -> Value {
    assert_eq!(res.status, status, "body: {}", res.text());
    res.json()
}

async fn agent_post(app: &TestApp, path: &str, body: Value) -> Response {
    app.client
        .post(&format!("{AGENT}{path}"), &app.agent_key("op1"), &body)
        .await
}

async fn person_post(app: &TestApp, path: &str, body: Value) -> Response {
    app.client
        .post(&format!("{PERSONAL}{path}"), &app.personal_key(ANN), &body)
        .await
}

/// Ann's day, the Taiwan workspace of it.
async fn taiwan_today(app: &TestApp) -> Value {
    let res = app
        .client
        .get(&format!("{PERSONAL}/today"), &app.personal_key(ANN))
        .await;
    let day = ok(&res, 200);
    day["workspaces"]
        .as_array()
        .expect("workspaces")
        .iter()
        .find(|w| w["name"] == "Taiwan")
        .cloned()
        .unwrap_or_else(|| panic!("no Taiwan workspace in {day}"))
}

fn agent_of(workspace: &Value, name: &str) -> Value {
    workspace["agents"]
        .as_array()
        .expect("agents")
        .iter()
        .find(|a| a["name"] == name)
        .cloned()
        .unwrap_or_else(|| panic!("no agent {name} in {workspace}"))
}

/// The card as the agent's list shows it.
async fn agent_card(app: &TestApp, id: &str) -> Value {
    let res = app
        .client
        .get(
            &format!("{AGENT}/tasks?status=pending_pickup,in_progress,pending_confirmation,done"),
            &app.agent_key("op1"),
        )
        .await;
    let page = ok(&res, 200);
    page["tasks"]
        .as_array()
        .expect("tasks")
        .iter()
        .find(|t| t["id"] == id)
        .cloned()
        .unwrap_or_else(|| panic!("card {id} not in {page}"))
}

#[tokio::test(flavor = "multi_thread")]
async fn a_card_from_a_person_to_confirmation_with_cron_and_heartbeats_in_the_persons_day() {
    let app = spawn_app().await;
    let before = taiwan_today(&app).await;
    assert_eq!(before["cards"]["pending_confirmation"], 0, "{before}");
    assert_eq!(agent_of(&before, "op1")["silent"], true, "{before}");

    // A person opens a card for op1.
    let opened = ok(
        &person_post(
            &app,
            "/tasks",
            json!({"kind": "change_bio", "title": "Update the bio of TW-T001 for the winter.",
                   "detail": "Mention the night market.", "agent": "op1",
                   "target": {"type": "slot", "code": "TW-T001"}}),
        )
        .await,
        201,
    );
    let id = opened["id"].as_str().expect("card id").to_owned();
    assert_eq!(opened["task"]["status"], "pending_pickup", "{opened}");
    assert_eq!(opened["task"]["assignee"]["name"], "op1", "{opened}");
    assert_eq!(opened["task"]["opened_by"]["type"], "person", "{opened}");

    // The agent sees it in its day, claims it, reports progress and finishes with evidence.
    let day = ok(
        &app.client
            .get(&format!("{AGENT}/work/today"), &app.agent_key("op1"))
            .await,
        200,
    );
    assert!(
        day["tasks"]
            .as_array()
            .unwrap()
            .iter()
            .any(|t| t["id"] == id),
        "{day}"
    );
    let claimed = ok(
        &agent_post(&app, &format!("/tasks/{id}/claim"), json!({})).await,
        200,
    );
    assert_eq!(claimed["task"]["status"], "in_progress", "{claimed}");
    let progressed = ok(
        &agent_post(
            &app,
            &format!("/tasks/{id}/progress"),
            json!({"note": "Drafted the new bio."}),
        )
        .await,
        200,
    );
    assert_eq!(progressed["task"]["status"], "in_progress", "{progressed}");
    let finish = json!({"result": "Bio updated.", "evidence": [
        {"type": "link", "url": "https://example.com/tw-t001", "label": "profile"}]});
    let finished = ok(
        &agent_post(&app, &format!("/tasks/{id}/finish"), finish).await,
        200,
    );
    assert_eq!(
        finished["task"]["status"], "pending_confirmation",
        "{finished}"
    );
    assert_eq!(
        finished["task"]["evidence"][0]["label"], "profile",
        "{finished}"
    );
    assert_eq!(taiwan_today(&app).await["cards"]["pending_confirmation"], 1);

    // The person reopens it with a note; the agent finishes again; the person confirms.
    let reopened = ok(
        &person_post(
            &app,
            &format!("/tasks/{id}/reopen"),
            json!({"note": "Add the opening hours too."}),
        )
        .await,
        200,
    );
    assert_eq!(reopened["task"]["status"], "in_progress", "{reopened}");
    let card = agent_card(&app, &id).await;
    let notes: Vec<&str> = card["notes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| n["text"].as_str().unwrap())
        .collect();
    assert!(
        notes.contains(&"Drafted the new bio.") && notes.contains(&"Add the opening hours too."),
        "{card}"
    );
    assert_eq!(taiwan_today(&app).await["cards"]["pending_confirmation"], 0);
    let again = ok(
        &agent_post(
            &app,
            &format!("/tasks/{id}/finish"),
            json!({"result": "Bio updated with the opening hours."}),
        )
        .await,
        200,
    );
    assert_eq!(again["task"]["status"], "pending_confirmation", "{again}");
    let confirmed = ok(
        &person_post(&app, &format!("/tasks/{id}/confirm"), json!({})).await,
        200,
    );
    assert_eq!(confirmed["task"]["status"], "done", "{confirmed}");
    assert_eq!(agent_card(&app, &id).await["status"], "done");

    // The agent reports its cron jobs, a failed run, and a heartbeat.
    let jobs = ok(
        &agent_post(
            &app,
            "/cron/jobs",
            json!({"jobs": [
                {"job_id": "metrics", "name": "Read metrics", "schedule": "0 * * * *",
                 "timezone": "Asia/Taipei"},
                {"job_id": "backup", "name": "Back up drafts", "schedule": "30 2 * * *",
                 "timezone": "Asia/Taipei"}]}),
        )
        .await,
        200,
    );
    assert_eq!(jobs["inserted"], 2, "{jobs}");
    let started = Timestamp::now() - SignedDuration::from_mins(5);
    let runs = ok(
        &agent_post(
            &app,
            "/cron/runs",
            json!({"runs": [
                {"job_id": "metrics", "status": "success", "started_at": started.to_string(),
                 "finished_at": (started + SignedDuration::from_secs(20)).to_string()},
                {"job_id": "backup", "status": "failed", "started_at": started.to_string(),
                 "summary": "The drafts folder was not reachable."}]}),
        )
        .await,
        200,
    );
    assert_eq!(runs["inserted"], 2, "{runs}");
    ok(
        &agent_post(&app, "/heartbeat", json!({"run_id": "evening-round"})).await,
        200,
    );

    // The person's day: no card waits, op1's heartbeat is there and its backup failed.
    let tw = taiwan_today(&app).await;
    assert_eq!(tw["cards"]["pending_confirmation"], 0, "{tw}");
    let op1 = agent_of(&tw, "op1");
    assert_eq!(op1["silent"], false, "{op1}");
    assert!(op1["last_heartbeat_at"].is_string(), "{op1}");
    let failed: Vec<&str> = op1["cron"]["failed"]
        .as_array()
        .unwrap()
        .iter()
        .map(|j| j["job_id"].as_str().unwrap())
        .collect();
    assert_eq!(failed, ["backup"], "{op1}");
    assert_eq!(op1["cron"]["jobs"], 2, "{op1}");
    assert_eq!(agent_of(&tw, "op2")["silent"], true, "{tw}");
}
