//! What was approved is what went out (issue 29, section 4): an approval pins the body's
//! fingerprint, the body, the media's content hashes in order and the characters; a published
//! report with another body, or of a post nobody approved, marks the post with both texts in
//! its reads and tells `post.published_differs`. Nothing is refused. Over the standard tenant:
//! op1 works Mia (TW-T001 on threads, cast momo and lulu among others).

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use fleetdesk_tests::assert::ok;
use fleetdesk_tests::{Response, TestApp, spawn_app};
use serde_json::{Value, json};

const AGENT: &str = "/api/agent/v1";
const USER: &str = "/api/user/v1";
const ANN: &str = "ann@acme.test";

async fn agent_post(app: &TestApp, path: &str, body: Value) -> Response {
    app.client
        .post(&format!("{AGENT}{path}"), &app.agent_key("op1"), &body)
        .await
}

/// A PNG header of width `seed + 1`: a different file for every seed.
fn png(seed: u32) -> Vec<u8> {
    let mut b = b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR".to_vec();
    b.extend_from_slice(&(seed + 1).to_be_bytes());
    b.extend_from_slice(&[0, 0, 0, 1, 8, 6, 0, 0, 0, 0x1F, 0x15, 0xC4, 0x89]);
    b
}

fn sha256(bytes: &[u8]) -> String {
    fleetdesk_kernel::digest::sha256_hex(bytes)
}

/// Ann's read of the post: `{post, record, ...}`.
async fn read(app: &TestApp, id: &str) -> Value {
    let path = format!("{USER}/posts/{id}");
    ok(&app.client.get(&path, &app.personal_key(ANN)).await)
}

/// op1 reports one item on TW-T001: the item's result.
async fn report(app: &TestApp, mut item: Value) -> Value {
    item["code"] = json!("TW-T001");
    let v = ok(&agent_post(app, "/posts/report", json!({"posts": [item]})).await);
    assert!(v["results"][0]["error"].is_null(), "{v}");
    v["results"][0].clone()
}

/// Each `post.published_differs` of op1's feed about `id`, as its data.
async fn told(app: &TestApp, id: &str) -> Vec<Value> {
    let events = app.feed("op1", "types=post.published_differs").await;
    events
        .into_iter()
        .filter(|e| e["object_id"] == id)
        .map(|e| e["data"].clone())
        .collect()
}

/// op1's draft with two images and two characters, approved by Ann: its id.
async fn approved(app: &TestApp, body: &str) -> String {
    let draft = json!({"code": "TW-T001", "body": body,
        "images": [{"data": STANDARD.encode(png(7))}, {"data": STANDARD.encode(png(3))}],
        "characters": [{"code": "lulu"}, {"code": "momo", "pov": true}]});
    let v = ok(&agent_post(app, "/drafts", draft).await);
    let id = v["draft"]["id"].as_str().expect("id").to_owned();
    let path = format!("{USER}/posts/{id}/transition");
    let moved = app
        .client
        .post(&path, &app.personal_key(ANN), &json!({"to": "approved"}))
        .await;
    assert_eq!(ok(&moved)["post"]["status"], "approved");
    id
}

#[tokio::test(flavor = "multi_thread")]
async fn an_approval_pins_the_body_media_in_order_and_characters_in_the_post_and_its_record() {
    let app = spawn_app().await;
    let body = "  Morning light\n\non the  river ";
    let id = approved(&app, body).await;
    let v = read(&app, &id).await;
    let pin = &v["post"]["approved"];
    assert_eq!(
        pin["fingerprint"],
        sha256(b"Morning light on the river"),
        "the body normalized as matching normalizes it: {v}"
    );
    assert_eq!(pin["body"], body);
    assert_eq!(pin["media"], json!([sha256(&png(7)), sha256(&png(3))]));
    let characters: Vec<&Value> = v["post"]["characters"].as_array().unwrap().iter().collect();
    let codes: Vec<&Value> = characters.iter().map(|c| &c["code"]).collect();
    assert_eq!(pin["characters"], json!(codes), "{v}");
    assert!(v["post"]["published_differs"].is_null(), "{v}");
    // The approving entry of the review record shows what was pinned (not the body again).
    let record = v["record"].as_array().expect("record");
    let entry = record
        .iter()
        .find(|e| e["action"] == "approved")
        .unwrap_or_else(|| panic!("{v}"));
    assert_eq!(
        entry["detail"]["approved"],
        json!({"fingerprint": pin["fingerprint"], "media": pin["media"],
               "characters": pin["characters"]})
    );
    // A draft not yet approved carries no pin.
    let other = ok(&agent_post(&app, "/drafts", json!({"code": "TW-T001", "body": "later"})).await);
    let other = read(&app, other["draft"]["id"].as_str().unwrap()).await;
    assert!(other["post"]["approved"].is_null(), "{other}");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_post_published_with_another_body_is_marked_with_both_texts_and_told() {
    let app = spawn_app().await;
    let id = approved(&app, "Morning light on the river").await;
    // Whitespace is not a change.
    let same = json!({"status": "published", "post_id": id, "permalink": "https://t.net/p/1",
                      "platform_post_id": "p1", "body": " Morning light\non the river"});
    assert_eq!(report(&app, same).await["status"], "published");
    assert!(read(&app, &id).await["post"]["published_differs"].is_null());
    assert_eq!(told(&app, &id).await, Vec::<Value>::new());

    let id = approved(&app, "Evening rain on the bridge").await;
    let edited = json!({"status": "published", "post_id": id, "permalink": "https://t.net/p/2",
                        "platform_post_id": "p2", "body": "Evening rain on the old bridge"});
    let result = report(&app, edited.clone()).await;
    assert_eq!(
        (&result["action"], &result["status"]),
        (&json!("updated"), &json!("published"))
    );
    let v = read(&app, &id).await;
    let differs = &v["post"]["published_differs"];
    assert_eq!(differs["reason"], "changed", "{v}");
    assert_eq!(differs["approved_body"], "Evening rain on the bridge");
    assert_eq!(differs["published_body"], "Evening rain on the old bridge");
    assert!(differs["reported_at"].is_string(), "{v}");
    let told_once = json!({"code": "TW-T001", "platform": "threads", "reason": "changed",
        "approved_fingerprint": sha256(b"Evening rain on the bridge"),
        "published_fingerprint": sha256(b"Evening rain on the old bridge")});
    assert_eq!(told(&app, &id).await, std::slice::from_ref(&told_once));
    // The same report again marks nothing more.
    assert_eq!(report(&app, edited).await["action"], "unchanged");
    assert_eq!(told(&app, &id).await, [told_once]);
    // The published list shows the mark too.
    let listed = ok(&app
        .client
        .get(&format!("{USER}/posts/published"), &app.personal_key(ANN))
        .await);
    let card = listed["posts"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["id"] == id.as_str())
        .unwrap_or_else(|| panic!("{listed}"));
    assert_eq!(card["published_differs"]["reason"], "changed");
    // Ann's day tells of it, with both texts; the post published as approved is not there.
    let ws = app.today_workspace(ANN, "Taiwan").await;
    let differing = ws["published_differs"]
        .as_array()
        .expect("published_differs");
    assert_eq!(differing.len(), 1, "{differing:?}");
    assert_eq!(
        (&differing[0]["post_id"], &differing[0]["reason"]),
        (&json!(id), &json!("changed"))
    );
    assert_eq!(differing[0]["approved_body"], "Evening rain on the bridge");
    assert_eq!(
        differing[0]["published_body"],
        "Evening rain on the old bridge"
    );
    assert_eq!(differing[0]["permalink"], "https://t.net/p/2");
    assert_eq!(
        (&differing[0]["code"], &differing[0]["platform"]),
        (&json!("TW-T001"), &json!("threads"))
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_post_published_that_nobody_approved_is_marked_never_approved() {
    let app = spawn_app().await;
    // Matched by nothing: the report makes the post.
    let result = report(
        &app,
        json!({"status": "published", "permalink": "https://t.net/p/9",
               "platform_post_id": "p9", "body": "posted straight from the phone"}),
    )
    .await;
    assert_eq!(result["action"], "inserted", "{result}");
    let id = result["post_id"].as_str().expect("post_id").to_owned();
    let v = read(&app, &id).await;
    let differs = &v["post"]["published_differs"];
    assert_eq!(differs["reason"], "never_approved", "{v}");
    assert!(differs["approved_body"].is_null(), "{v}");
    assert_eq!(differs["published_body"], "posted straight from the phone");
    assert!(v["post"]["approved"].is_null(), "{v}");
    let told = told(&app, &id).await;
    assert_eq!(told.len(), 1, "{told:?}");
    assert_eq!(told[0]["reason"], "never_approved");
    assert!(told[0]["approved_fingerprint"].is_null(), "{told:?}");

    // A post still in review is refused by rule 6 of the report (nothing is written to it);
    // reported again without its id it matches no post (in-review posts are not matched by
    // body) and the post it makes is marked.
    let draft = ok(&agent_post(&app, "/drafts", json!({"code": "TW-T001", "body": "early"})).await);
    let in_review = draft["draft"]["id"].as_str().unwrap().to_owned();
    let early = json!({"status": "published", "post_id": in_review,
                       "permalink": "https://t.net/p/10", "body": "early"});
    let refused = agent_post(
        &app,
        "/posts/report",
        json!({"posts": [
        {"code": "TW-T001", "status": "published", "post_id": in_review,
         "permalink": "https://t.net/p/10", "body": "early"}]}),
    )
    .await;
    assert_eq!(refused.status, 422, "{}", refused.text());
    assert!(read(&app, &in_review).await["post"]["published_differs"].is_null());
    let mut without_id = early;
    without_id.as_object_mut().unwrap().remove("post_id");
    let made = report(&app, without_id).await;
    assert_eq!(made["action"], "inserted", "{made}");
    let made = read(&app, made["post_id"].as_str().unwrap()).await;
    assert_eq!(
        made["post"]["published_differs"]["reason"],
        "never_approved"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn posts_approved_before_pins_existed_get_the_pin_of_what_they_hold() {
    let app = spawn_app().await;
    let body = " Morning\u{a0}light\t on the river ";
    let id = approved(&app, body).await;
    let pinned = read(&app, &id).await["post"]["approved"].clone();
    assert!(pinned.is_object(), "{pinned}");
    // A post never approved, and the approved one as migration 20 found it: no pin.
    let draft = ok(&agent_post(&app, "/drafts", json!({"code": "TW-T001", "body": "later"})).await);
    let draft = draft["draft"]["id"].as_str().unwrap().to_owned();
    app.sql(&format!(
        "UPDATE posts SET approved_pin = NULL WHERE id = '{id}'"
    ))
    .await;
    app.sql(&format!(
        "UPDATE posts SET body_key = NULL WHERE id = '{id}'"
    ))
    .await;
    app.sql(include_str!(
        "../../migrations/2026-12-07-000021_approval_pins_backfill/up.sql"
    ))
    .await;
    // The backfill's pin is the one the approval made (its fingerprint computed in SQL, as
    // the matching key normalizes the body).
    assert_eq!(read(&app, &id).await["post"]["approved"], pinned);
    assert!(read(&app, &draft).await["post"]["approved"].is_null());
}
