//! The post and account events through the agent feed (`GET /api/agent/v1/events`): a draft
//! submitted, moved in review, reported, stocked and unstocked, and an account's state
//! changed, each told to the agent of the persona it belongs to, in commit order, with its
//! body; a change that changes nothing tells nothing. Over the standard tenant: op1 works Mia
//! (TW-T001 on threads), op2 works Leo.

use fleetdesk_tests::assert::ok;
use fleetdesk_tests::{Response, TestApp, spawn_app};
use jiff::{SignedDuration, Timestamp};
use serde_json::{Value, json};

const AGENT: &str = "/api/agent/v1";
const USER: &str = "/api/user/v1";
const ANN: &str = "ann@acme.test";

async fn agent_post(app: &TestApp, agent: &str, path: &str, body: Value) -> Response {
    app.client
        .post(&format!("{AGENT}{path}"), &app.agent_key(agent), &body)
        .await
}

/// Every event of `agent`'s feed about `object`, oldest first, as (type, data).
async fn told(app: &TestApp, agent: &str, object: &str) -> Vec<(String, Value)> {
    let events = app.feed(agent, "").await;
    let about = events.into_iter().filter(|e| e["object_id"] == object);
    about
        .map(|e| {
            (
                e["type"].as_str().expect("type").to_owned(),
                e["data"].clone(),
            )
        })
        .collect()
}

/// A post change's body on TW-T001.
fn t001(from: Option<&str>, status: &str, note: Option<&str>) -> Value {
    json!({"code": "TW-T001", "platform": "threads", "from": from, "status": status,
           "note": note})
}

fn event(kind: &str, data: Value) -> (String, Value) {
    (kind.to_owned(), data)
}

/// op1 submits a draft on TW-T001 to review: its id.
async fn submitted(app: &TestApp, body: Value) -> String {
    let v = ok(&agent_post(app, "op1", "/drafts", body).await);
    assert_eq!(v["draft"]["status"], "internal_review", "{v}");
    v["draft"]["id"].as_str().expect("id").to_owned()
}

/// Ann moves a post in review.
async fn review(app: &TestApp, post: &str, body: Value) -> Value {
    let path = format!("{USER}/posts/{post}/transition");
    ok(&app.client.post(&path, &app.personal_key(ANN), &body).await)
}

/// op1 reports one post of TW-T001: the item's result.
async fn report(app: &TestApp, item: Value) -> Value {
    let mut item = item;
    item["code"] = json!("TW-T001");
    let v = ok(&agent_post(app, "op1", "/posts/report", json!({"posts": [item]})).await);
    v["results"][0].clone()
}

#[tokio::test(flavor = "multi_thread")]
async fn a_post_submitted_approved_scheduled_and_published_reaches_its_agent_in_order() {
    let app = spawn_app().await;
    let draft = json!({"code": "TW-T001", "body": "morning light", "note": "first try"});
    let id = submitted(&app, draft.clone()).await;
    // The same body again answers the original: nothing changed, nothing told.
    let again = ok(&agent_post(&app, "op1", "/drafts", draft).await);
    assert_eq!(again["draft"]["duplicate"], true, "{again}");

    let v = review(&app, &id, json!({"to": "approved", "comment": "lovely"})).await;
    assert_eq!(v["post"]["status"], "approved", "{v}");
    let when = (Timestamp::now() + SignedDuration::from_hours(3)).to_string();
    let scheduled = json!({"status": "scheduled", "post_id": id, "scheduled_for": when,
                           "platform_post_id": "tool-1"});
    assert_eq!(report(&app, scheduled.clone()).await["action"], "updated");
    // The same report again changes nothing.
    assert_eq!(report(&app, scheduled).await["action"], "unchanged");
    let link = "https://threads.net/p/abc";
    let published = json!({"status": "published", "post_id": id, "platform_post_id": "thr-1",
                           "permalink": link});
    assert_eq!(report(&app, published.clone()).await["status"], "published");
    assert_eq!(report(&app, published).await["action"], "unchanged");

    assert_eq!(
        told(&app, "op1", &id).await,
        [
            event(
                "post.submitted",
                t001(None, "internal_review", Some("first try"))
            ),
            event(
                "post.moved",
                t001(Some("internal_review"), "approved", Some("lovely"))
            ),
            event("post.reported", t001(Some("approved"), "scheduled", None)),
            event(
                "post.reported",
                t001(Some("scheduled"), "published", Some(link))
            ),
        ]
    );
    // Leo's agent is not told of Mia's post.
    assert_eq!(told(&app, "op2", &id).await, []);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_send_back_and_the_rewrite_sent_to_review_again_are_told() {
    let app = spawn_app().await;
    let id = submitted(&app, json!({"code": "TW-T001", "body": "too long a text"})).await;
    review(&app, &id, json!({"to": "sent_back", "comment": "shorter"})).await;
    let path = format!("{AGENT}/drafts/{id}");
    let res = app
        .client
        .send(
            fleetdesk_tests::client::Request::new("PUT", &path)
                .bearer(&app.agent_key("op1"))
                .json(&json!({"body": "short text", "submit": true, "note": "cut it"})),
        )
        .await;
    assert_eq!(
        ok(&res)["draft"]["status"],
        "internal_review",
        "{}",
        res.text()
    );

    assert_eq!(
        told(&app, "op1", &id).await,
        [
            event("post.submitted", t001(None, "internal_review", None)),
            event(
                "post.moved",
                t001(Some("internal_review"), "sent_back", Some("shorter"))
            ),
            event(
                "post.submitted",
                t001(Some("sent_back"), "internal_review", Some("cut it"))
            ),
        ]
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn stock_and_unstock_tell_post_moved() {
    let app = spawn_app().await;
    let id = submitted(&app, json!({"code": "TW-T001", "body": "for later"})).await;
    let stock = format!("/posts/{id}/stock");
    let v = ok(&agent_post(&app, "op1", &stock, json!({"reason": "too many posts"})).await);
    assert_eq!(v["post"]["status"], "stocked");
    // Stocked already: unchanged, nothing told.
    let v = ok(&agent_post(&app, "op1", &stock, json!({})).await);
    assert_eq!(v["post"]["unchanged"], true);
    let tomorrow = (Timestamp::now() + SignedDuration::from_hours(26)).to_string();
    let unstock = format!("/posts/{id}/unstock");
    let v = ok(&agent_post(&app, "op1", &unstock, json!({"planned_at": tomorrow})).await);
    assert_eq!(v["post"]["status"], "internal_review", "{v}");

    assert_eq!(
        told(&app, "op1", &id).await,
        [
            event("post.submitted", t001(None, "internal_review", None)),
            event(
                "post.moved",
                t001(Some("internal_review"), "stocked", Some("too many posts"))
            ),
            event("post.moved", t001(Some("stocked"), "internal_review", None)),
        ]
    );
    assert_eq!(told(&app, "op2", &id).await, []);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_state_change_tells_the_account_s_agent_and_stocks_its_posts_with_their_events() {
    let app = spawn_app().await;
    let id = submitted(&app, json!({"code": "TW-T001", "body": "before the pause"})).await;
    let accounts = ok(&app
        .client
        .get(&format!("{AGENT}/accounts"), &app.agent_key("op1"))
        .await);
    let slot = accounts["accounts"]
        .as_array()
        .expect("accounts")
        .iter()
        .find(|a| a["code"] == "TW-T001")
        .expect("TW-T001")["slot_id"]
        .as_str()
        .expect("slot_id")
        .to_owned();

    let paused = json!({"state": "paused", "reason": "rate limited",
                        "occurred_at": Timestamp::now().to_string()});
    let v = ok(&agent_post(&app, "op1", "/accounts/TW-T001/state", paused.clone()).await);
    assert_eq!(
        (&v["result"], &v["stocked_posts"]),
        (&json!("changed"), &json!(1))
    );
    // The same state again: unchanged, nothing told.
    let v = ok(&agent_post(&app, "op1", "/accounts/TW-T001/state", paused).await);
    assert_eq!(v["result"], "unchanged", "{v}");

    let change = json!({"code": "TW-T001", "platform": "threads", "from": "active",
                        "to": "paused", "reason": "rate limited"});
    assert_eq!(
        told(&app, "op1", &slot).await,
        [event("account.state_changed", change)]
    );
    assert_eq!(
        told(&app, "op1", &id).await,
        [
            event("post.submitted", t001(None, "internal_review", None)),
            event(
                "post.moved",
                t001(Some("internal_review"), "stocked", Some("rate limited"))
            ),
        ]
    );
    // The state change comes first, then the post it stocked.
    let v = ok(&app
        .client
        .get(
            &format!("{AGENT}/events?types=account.state_changed,post.moved"),
            &app.agent_key("op1"),
        )
        .await);
    let order: Vec<&Value> = v["events"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| &e["object_id"])
        .collect();
    assert_eq!(order, [&json!(slot), &json!(id)]);

    // A draft submitted while the account is paused is stocked at once: not submitted to
    // review, nothing told.
    let v = ok(&agent_post(
        &app,
        "op1",
        "/drafts",
        json!({"code": "TW-T001", "body": "during the pause"}),
    )
    .await);
    assert_eq!(v["draft"]["status"], "stocked", "{v}");
    let held = v["draft"]["id"].as_str().unwrap();
    assert_eq!(told(&app, "op1", held).await, []);

    for object in [&slot, &id] {
        assert_eq!(told(&app, "op2", object).await, []);
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_ban_and_the_new_generation_a_person_opens_are_told_to_the_account_s_agent() {
    let app = spawn_app().await;
    let banned = json!({"state": "banned", "reason": "the platform said so",
                        "occurred_at": Timestamp::now().to_string()});
    let v = ok(&agent_post(&app, "op1", "/accounts/TW-I001/state", banned).await);
    let decision = v["decision"]["id"]
        .as_str()
        .expect("the ban's decision")
        .to_owned();
    let path = format!("{USER}/decisions/{decision}/choose");
    let choice = json!({"option": "open_new_generation"});
    ok(&app
        .client
        .post(&path, &app.personal_key(ANN), &choice)
        .await);

    let accounts = ok(&app
        .client
        .get(&format!("{AGENT}/accounts"), &app.agent_key("op1"))
        .await);
    let account = accounts["accounts"]
        .as_array()
        .expect("accounts")
        .iter()
        .find(|a| a["code"] == "TW-I001")
        .expect("TW-I001");
    assert_eq!(
        (&account["generation"], &account["state"]),
        (&json!(2), &json!("warming"))
    );
    let slot = account["slot_id"].as_str().expect("slot_id");
    let change = |from: &str, to: &str, reason: &str| {
        json!({"code": "TW-I001", "platform": "instagram", "from": from, "to": to,
               "reason": reason})
    };
    assert_eq!(
        told(&app, "op1", slot).await,
        [
            event(
                "account.state_changed",
                change("active", "banned", "the platform said so")
            ),
            event(
                "account.state_changed",
                change(
                    "banned",
                    "warming",
                    "generation 2 opened by a person's decision"
                )
            ),
        ]
    );
    assert_eq!(told(&app, "op2", slot).await, []);
    // The ban's decision: opened by the report, decided by Ann.
    let decision_events = told(&app, "op1", &decision).await;
    let types: Vec<&str> = decision_events
        .iter()
        .map(|(kind, _)| kind.as_str())
        .collect();
    assert_eq!(types, ["decision.opened", "decision.decided"]);
    assert_eq!(decision_events[0].1["kind"], "account_banned");
    assert_eq!(decision_events[1].1["choice"], "open_new_generation");
    assert_eq!(told(&app, "op2", &decision).await, []);
}
