//! One agent's day, played through HTTP: work_today, submit, a person approves, list_approved,
//! report scheduled, report published, metrics, and work_today shows the account covered.

use fleetdesk_tests::{Response, TestApp, spawn_app};
use jiff::{SignedDuration, Timestamp};
use serde_json::{Value, json};

const AGENT: &str = "/api/agent/v1";
const USER: &str = "/api/user/v1";

fn ok(r: &Response) -> Value {
    assert!((200..300).contains(&r.status), "{} {}", r.status, r.json());
    r.json()
}

fn missing_for<'a>(day: &'a Value, code: &str) -> Option<&'a Value> {
    day["missing"]
        .as_array()
        .expect("missing[]")
        .iter()
        .find(|m| m["code"] == code)
}

/// Writes a draft, has Ann approve it and returns its id.
async fn approved_post(app: &TestApp, agent: &str, person: &str, body: &str) -> String {
    let draft = ok(&app
        .client
        .post(
            &format!("{AGENT}/drafts"),
            agent,
            &json!({"code": "TW-T001", "body": body, "topic": "coffee"}),
        )
        .await);
    let id = draft["draft"]["id"].as_str().expect("draft id").to_owned();
    let queue = ok(&app.client.get(&format!("{USER}/review"), person).await);
    assert!(
        queue["posts"]
            .as_array()
            .unwrap()
            .iter()
            .any(|p| p["id"] == id.as_str()),
        "the draft waits in the review queue: {queue}"
    );
    let moved = ok(&app
        .client
        .post(
            &format!("{USER}/posts/{id}/transition"),
            person,
            &json!({"to": "approved"}),
        )
        .await);
    assert_eq!(moved["post"]["status"], "approved");
    id
}

#[tokio::test(flavor = "multi_thread")]
async fn an_agents_day_from_missing_to_covered() {
    let app = spawn_app().await;
    let agent = app.agent_key("op1");
    let ann = app.personal_key("ann@acme.test");

    // Morning: TW-T001 wants two posts and has none.
    let day = ok(&app.client.get(&format!("{AGENT}/work/today"), &agent).await);
    let row = missing_for(&day, "TW-T001").expect("TW-T001 is missing posts");
    assert_eq!(
        (row["target"].as_i64(), row["missing"].as_i64()),
        (Some(2), Some(2))
    );
    assert_eq!(day["last_report_at"], Value::Null);

    // Two drafts, each approved by a person.
    let first = approved_post(&app, &agent, &ann, "Morning coffee on the balcony").await;
    let second = approved_post(&app, &agent, &ann, "Momo found the sunny spot again").await;

    let approved = ok(&app
        .client
        .get(&format!("{AGENT}/posts/approved"), &agent)
        .await);
    let ids: Vec<&str> = approved["posts"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["id"].as_str().unwrap())
        .collect();
    assert_eq!(ids.len(), 2, "{approved}");
    assert!(ids.contains(&first.as_str()) && ids.contains(&second.as_str()));

    // Scheduled in the agent's own tool (for now, so that the market date is today's).
    let now = Timestamp::now();
    let report = ok(&app
        .client
        .post(
            &format!("{AGENT}/posts/report"),
            &agent,
            &json!({"posts": [
                {"code": "TW-T001", "status": "scheduled", "post_id": first,
                 "scheduled_for": now.to_string(), "platform_post_id": "tool-1"},
            ]}),
        )
        .await);
    assert_eq!(report["updated"], 1, "{report}");
    assert_eq!(report["results"][0]["status"], "scheduled");
    let approved = ok(&app
        .client
        .get(&format!("{AGENT}/posts/approved"), &agent)
        .await);
    assert_eq!(
        approved["posts"].as_array().unwrap().len(),
        1,
        "scheduled left the list"
    );

    let day = ok(&app.client.get(&format!("{AGENT}/work/today"), &agent).await);
    let row = missing_for(&day, "TW-T001").expect("still one missing");
    assert_eq!(
        (row["scheduled"].as_i64(), row["missing"].as_i64()),
        (Some(1), Some(1))
    );
    assert!(day["last_report_at"].is_string());

    // Both go out: the first by its id, the second matched by account and body.
    let published_at = (now - SignedDuration::from_secs(60)).to_string();
    let report = ok(&app
        .client
        .post(
            &format!("{AGENT}/posts/report"),
            &agent,
            &json!({"posts": [
                {"code": "TW-T001", "status": "published", "post_id": first,
                 "platform_post_id": "thr-111", "permalink": "https://threads.net/@mia/post/111",
                 "published_at": published_at},
                {"code": "TW-T001", "status": "published",
                 "body": "  Momo found the sunny   spot again ",
                 "platform_post_id": "thr-222", "permalink": "https://threads.net/@mia/post/222"},
            ]}),
        )
        .await);
    assert_eq!(report["updated"], 2, "{report}");
    assert_eq!(report["results"][0]["matched_by"], "post_id");
    assert_eq!(report["results"][1]["matched_by"], "body");
    assert_eq!(report["results"][1]["post_id"], second.as_str());

    // Metrics for both, by post id and by platform id.
    let metrics = ok(&app
        .client
        .post(
            &format!("{AGENT}/metrics"),
            &agent,
            &json!({"captured_at": now.to_string(),
                    "posts": [
                        {"post_id": first, "views": 120, "likes": 8},
                        {"code": "TW-T001", "platform_post_id": "thr-222", "views": 40}
                    ],
                    "accounts": [{"code": "TW-T001", "followers": 1500}]}),
        )
        .await);
    assert_eq!(
        (
            metrics["posts_written"].as_i64(),
            metrics["accounts_written"].as_i64()
        ),
        (Some(2), Some(1)),
        "{metrics}"
    );

    // Evening: TW-T001 is covered.
    let day = ok(&app.client.get(&format!("{AGENT}/work/today"), &agent).await);
    assert!(missing_for(&day, "TW-T001").is_none(), "{day}");
    assert!(day["summary"]["covered"].as_i64().unwrap() >= 2);

    // The person sees both among published posts, with their latest metrics.
    let published = ok(&app
        .client
        .get(&format!("{USER}/posts/published"), &ann)
        .await);
    let first_out = published["posts"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["id"] == first.as_str())
        .expect("first is published");
    assert_eq!(
        first_out["reported"]["permalink"],
        "https://threads.net/@mia/post/111"
    );
    assert_eq!(first_out["metrics"]["views"], 120);
}
