//! Personal API review: GET /me, GET /review, GET /posts/{id}, POST /posts/{id}/transition and
//! GET /posts/published (MCP whoami, review_queue, get_post, review_post, published_posts), and
//! the agent's relay of a person's decision (POST /api/agent/v1/posts/{id}/transition,
//! relay_post_status), over the standard tenant.

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use fleetdesk_tests::assert::ok;
use fleetdesk_tests::client::Request;
use fleetdesk_tests::{Response, TestApp, spawn_app};
use jiff::{SignedDuration, Timestamp};
use serde_json::{Value, json};

const AGENT: &str = "/api/agent/v1";
const USER: &str = "/api/user/v1";

const ANN: &str = "ann@acme.test";
const CLI: &str = "cli@brand.test";
const CID: &str = "cid@brand.test";
const OLGA: &str = "olga@other.test";
const ROOT: &str = "root@example.com";

// ---------------------------------------------------------------------------------------------
// helpers: requests

/// An error with its status, code, (when given) field, a message and the request id.
#[track_caller]
fn assert_error(case: &str, res: &Response, status: u16, code: &str, field: Option<&str>) {
    let v = fleetdesk_tests::assert::assert_error_in(case, res, status, code);
    if let Some(field) = field {
        assert_eq!(v["field"], field, "{case}: {v}");
    }
}

#[track_caller]
fn message(res: &Response) -> String {
    res.json()["message"]
        .as_str()
        .unwrap_or_default()
        .to_owned()
}

async fn user_get(app: &TestApp, who: &str, path: &str) -> Response {
    app.client
        .get(&format!("{USER}{path}"), &app.personal_key(who))
        .await
}

/// POST /posts/{id}/transition as a person.
async fn transition(app: &TestApp, who: &str, post: &str, body: Value) -> Response {
    app.client
        .post(
            &format!("{USER}/posts/{post}/transition"),
            &app.personal_key(who),
            &body,
        )
        .await
}

/// POST /posts/{id}/transition as a person with an Idempotency-Key.
async fn transition_idem(
    app: &TestApp,
    who: &str,
    post: &str,
    idem: &str,
    body: Value,
) -> Response {
    app.client
        .post_idem(
            &format!("{USER}/posts/{post}/transition"),
            &app.personal_key(who),
            idem,
            &body,
        )
        .await
}

/// A review move that must succeed; returns the moved post.
async fn moved(app: &TestApp, who: &str, post: &str, body: Value) -> Value {
    let res = transition(app, who, post, body.clone()).await;
    assert_eq!(res.status, 200, "{who} {body}: {}", res.text());
    res.json()["post"].clone()
}

/// The agent's relay of a person's decision.
async fn relay(app: &TestApp, agent: &str, post: &str, body: Value) -> Response {
    app.client
        .post(
            &format!("{AGENT}/posts/{post}/transition"),
            &app.agent_key(agent),
            &body,
        )
        .await
}

/// A draft submitted by an agent; returns its id.
async fn submit(app: &TestApp, agent: &str, body: Value) -> String {
    let res = app
        .client
        .post(&format!("{AGENT}/drafts"), &app.agent_key(agent), &body)
        .await;
    assert_eq!(res.status, 201, "submit {body}: {}", res.text());
    let v = res.json();
    assert_eq!(v["draft"]["status"], "internal_review", "{v}");
    v["draft"]["id"].as_str().expect("draft id").to_owned()
}

/// A draft of op1 for TW-T001 with this body.
async fn draft(app: &TestApp, body: &str) -> String {
    submit(app, "op1", json!({"code": "TW-T001", "body": body})).await
}

async fn client_review(app: &TestApp, on: bool) {
    app.sql(&format!(
        "UPDATE workspaces SET client_review = {on} WHERE name = 'Taiwan'"
    ))
    .await;
}

/// Reports an approved post of op1 published at `at`.
async fn publish(app: &TestApp, post: &str, code: &str, n: u32, at: Timestamp) {
    let res = app
        .client
        .post(
            &format!("{AGENT}/posts/report"),
            &app.agent_key("op1"),
            &json!({"posts": [{"code": code, "status": "published", "post_id": post,
                               "platform_post_id": format!("pp-{n}"),
                               "permalink": format!("https://threads.net/@mia/post/{n}"),
                               "published_at": at.to_string()}]}),
        )
        .await;
    let v = ok(&res);
    assert_eq!(v["results"][0]["status"], "published", "{v}");
}

/// A post approved by Ann (client review off) and reported published at `at`.
async fn published_post(app: &TestApp, code: &str, body: &str, n: u32, at: Timestamp) -> String {
    let id = submit(app, "op1", json!({"code": code, "body": body})).await;
    moved(app, ANN, &id, json!({"to": "approved"})).await;
    publish(app, &id, code, n, at).await;
    id
}

// ---------------------------------------------------------------------------------------------
// helpers: the database

async fn status_of(app: &TestApp, post: &str) -> String {
    for s in [
        "draft",
        "internal_review",
        "client_review",
        "approved",
        "rewrite_requested",
        "sent_back",
        "stocked",
        "scheduled",
        "published",
        "failed",
        "cancelled",
    ] {
        if app
            .count(&format!(
                "SELECT count(*) AS n FROM posts WHERE id = '{post}' AND status = '{s}'"
            ))
            .await
            == 1
        {
            return s.to_owned();
        }
    }
    panic!("post {post} has no known status");
}

/// Member review events of a post (every action).
async fn member_events(app: &TestApp, post: &str) -> i64 {
    app.count(&format!(
        "SELECT count(*) AS n FROM review_events WHERE post_id = '{post}' AND actor_kind = 'member'"
    ))
    .await
}

async fn all_events(app: &TestApp) -> i64 {
    app.count("SELECT count(*) AS n FROM review_events").await
}

/// The ids of a list answer's `posts`.
fn ids(v: &Value) -> Vec<String> {
    v["posts"]
        .as_array()
        .unwrap_or_else(|| panic!("no posts[]: {v}"))
        .iter()
        .map(|p| p["id"].as_str().expect("id").to_owned())
        .collect()
}

fn strs(list: &[&String]) -> Vec<String> {
    list.iter().map(|s| (*s).clone()).collect()
}

/// A PNG header (signature and IHDR): enough to be judged a PNG.
fn png(seed: u32) -> Vec<u8> {
    let mut b = b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR".to_vec();
    b.extend_from_slice(&(seed + 1).to_be_bytes());
    b.extend_from_slice(&[0, 0, 0, 1, 8, 6, 0, 0, 0, 0x1F, 0x15, 0xC4, 0x89]);
    b
}

/// The path of an absolute link the service gave out.
fn local(app: &TestApp, url: &str) -> String {
    url.strip_prefix(&app.base)
        .unwrap_or_else(|| panic!("{url} is not on {}", app.base))
        .to_owned()
}

// ---------------------------------------------------------------------------------------------
// GET /me

#[tokio::test(flavor = "multi_thread")]
async fn me_names_the_person_role_review_right_and_admin_flag() {
    let app = spawn_app().await;
    for (email, name, role, review) in [
        (ANN, "Ann", "agency", true),
        (CLI, "Cli", "client", true),
        (CID, "Cid", "client", false),
        (OLGA, "Olga", "agency", true),
    ] {
        let v = ok(&user_get(&app, email, "/me").await);
        assert_eq!(v["person"]["email"], email, "{v}");
        assert_eq!(v["person"]["name"], name, "{v}");
        assert!(v["person"]["id"].is_string(), "{v}");
        assert!(v["organization_id"].is_string(), "{email}: {v}");
        assert_eq!(v["role"], role, "{email}: {v}");
        assert_eq!(v["review"], review, "{email}: {v}");
        assert_eq!(v["platform_admin"], false, "{email}: {v}");
    }
    // Ann and Cli are of one organization, Olga of another.
    let ann = ok(&user_get(&app, ANN, "/me").await);
    let cli = ok(&user_get(&app, CLI, "/me").await);
    let olga = ok(&user_get(&app, OLGA, "/me").await);
    assert_eq!(ann["organization_id"], cli["organization_id"]);
    assert_ne!(ann["organization_id"], olga["organization_id"]);

    let root = ok(&user_get(&app, ROOT, "/me").await);
    assert_eq!(root["person"]["name"], "Root", "{root}");
    assert_eq!(root["platform_admin"], true, "{root}");
    assert_eq!(root["review"], true, "{root}");
    assert_eq!(root["role"], Value::Null, "{root}");
    assert_eq!(root["organization_id"], Value::Null, "{root}");

    // An agent key is not a personal key.
    let agent = app
        .client
        .get(&format!("{USER}/me"), &app.agent_key("op1"))
        .await;
    assert_error("agent key on /me", &agent, 403, "forbidden", None);
    // No key at all.
    let none = app
        .client
        .send(Request::new("GET", &format!("{USER}/me")))
        .await;
    assert_error("no key", &none, 401, "unauthorized", None);
}

// ---------------------------------------------------------------------------------------------
// GET /review

#[tokio::test(flavor = "multi_thread")]
async fn the_review_queue_shows_agency_both_stages_and_clients_only_client_review() {
    let app = spawn_app().await;
    client_review(&app, true).await;
    let a = draft(&app, "queue a").await;
    let b = draft(&app, "queue b").await;
    let leo = submit(&app, "op2", json!({"code": "TW-T002", "body": "queue leo"})).await;
    let jp = submit(&app, "jp1", json!({"code": "JP-T001", "body": "queue jp"})).await;
    let zoe = submit(
        &app,
        "other1",
        json!({"code": "TW-T001", "body": "queue zoe"}),
    )
    .await;
    let c = moved(&app, ANN, &b, json!({"to": "client_review"})).await;
    assert_eq!(c["status"], "client_review", "{c}");

    let sorted = |mut v: Vec<String>| {
        v.sort();
        v
    };
    let all = ok(&user_get(&app, ANN, "/review").await);
    assert_eq!(
        sorted(ids(&all)),
        sorted(strs(&[&a, &b, &leo, &jp])),
        "agency sees both stages of every workspace of its organization: {all}"
    );
    assert_eq!(all["next_cursor"], Value::Null, "{all}");
    assert_eq!(all["links_expire_in_seconds"], 86_400, "{all}");
    let card = all["posts"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["id"] == a.as_str())
        .unwrap();
    assert_eq!(card["status"], "internal_review", "{card}");
    assert_eq!(card["code"], "TW-T001", "{card}");
    assert_eq!(card["platform"], "threads", "{card}");
    assert_eq!(card["persona"], "Mia", "{card}");
    assert_eq!(card["workspace"], "Taiwan", "{card}");
    assert_eq!(card["project"], "beauty", "{card}");
    assert_eq!(card["handle"], "mia", "{card}");
    assert_eq!(card["agent"], "op1", "{card}");
    assert_eq!(card["body"], "queue a", "{card}");
    assert_eq!(card["media"], json!([]), "{card}");

    let internal = ok(&user_get(&app, ANN, "/review?stage=internal_review").await);
    assert_eq!(
        sorted(ids(&internal)),
        sorted(strs(&[&a, &leo, &jp])),
        "{internal}"
    );
    let client = ok(&user_get(&app, ANN, "/review?stage=client_review").await);
    assert_eq!(ids(&client), [b.as_str()], "{client}");

    // A client sees only client review, whatever stage it asks for.
    for who in [CLI, CID] {
        for query in ["", "?stage=internal_review", "?stage=client_review"] {
            let v = ok(&user_get(&app, who, &format!("/review{query}")).await);
            assert_eq!(ids(&v), [b.as_str()], "{who} {query}: {v}");
            assert_eq!(v["posts"][0]["status"], "client_review", "{v}");
        }
    }

    // Another organization's member sees only its own posts; the admin sees every one.
    let olga = ok(&user_get(&app, OLGA, "/review").await);
    assert_eq!(ids(&olga), [zoe.as_str()], "{olga}");
    let root = ok(&user_get(&app, ROOT, "/review").await);
    assert_eq!(
        sorted(ids(&root)),
        sorted(strs(&[&a, &b, &leo, &jp, &zoe])),
        "{root}"
    );

    // A stage outside the two.
    let bad = user_get(&app, ANN, "/review?stage=approved").await;
    assert_error(
        "stage approved",
        &bad,
        400,
        "invalid_request",
        Some("stage"),
    );
    // An agent key is refused.
    let agent = app
        .client
        .get(&format!("{USER}/review"), &app.agent_key("op1"))
        .await;
    assert_error("agent key", &agent, 403, "forbidden", None);
}

#[tokio::test(flavor = "multi_thread")]
async fn the_review_queue_is_oldest_planned_first_and_pages_with_a_cursor() {
    let app = spawn_app().await;
    let d6 = ahead(6);
    let d7 = ahead(7);
    let d9 = ahead(9);
    // Planned times in the future (Taipei), and two without a plan created earlier today.
    let late = submit(
        &app,
        "op1",
        json!({"code": "TW-T001", "body": "late", "planned_at": format!("{d9} 10:00")}),
    )
    .await;
    let unplanned_old = draft(&app, "unplanned old").await;
    let soon = submit(
        &app,
        "op1",
        json!({"code": "TW-T001", "body": "soon", "planned_at": format!("{d6}T09:00:00+08:00")}),
    )
    .await;
    let unplanned_new = draft(&app, "unplanned new").await;
    let middle = submit(
        &app,
        "op1",
        json!({"code": "TW-I001", "body": "middle", "planned_at": format!("{d7} 09:00")}),
    )
    .await;
    app.sql(&format!(
        "UPDATE posts SET created_at = now() - interval '3 hours' WHERE id = '{unplanned_old}'"
    ))
    .await;
    app.sql(&format!(
        "UPDATE posts SET created_at = now() - interval '1 hour' WHERE id = '{unplanned_new}'"
    ))
    .await;
    // A planned post created long ago still sorts by its plan.
    app.sql(&format!(
        "UPDATE posts SET created_at = now() - interval '2 days' WHERE id = '{late}'"
    ))
    .await;
    let order = vec![
        unplanned_old.clone(),
        unplanned_new.clone(),
        soon.clone(),
        middle.clone(),
        late.clone(),
    ];

    let whole = ok(&user_get(&app, ANN, "/review").await);
    assert_eq!(ids(&whole), order, "{whole}");
    assert_eq!(whole["posts"][2]["planned_at"], format!("{d6}T01:00:00Z"));
    assert_eq!(whole["posts"][0]["planned_at"], Value::Null);

    // Pages of two: the cursor carries on where the last page stopped.
    let mut seen = Vec::new();
    let mut cursor: Option<String> = None;
    let mut pages = 0;
    loop {
        let path = match &cursor {
            Some(c) => format!("/review?limit=2&cursor={c}"),
            None => "/review?limit=2".to_owned(),
        };
        let v = ok(&user_get(&app, ANN, &path).await);
        pages += 1;
        let got = ids(&v);
        assert!(got.len() <= 2, "{v}");
        seen.extend(got);
        match v["next_cursor"].as_str() {
            Some(c) => cursor = Some(c.to_owned()),
            None => break,
        }
        assert!(pages < 10, "paging does not end");
    }
    assert_eq!(pages, 3);
    assert_eq!(seen, order);

    // A page exactly as long as what is left is the last page.
    let five = ok(&user_get(&app, ANN, "/review?limit=5").await);
    assert_eq!(ids(&five), order);
    assert_eq!(five["next_cursor"], Value::Null, "{five}");
    let four = ok(&user_get(&app, ANN, "/review?limit=4").await);
    assert_eq!(ids(&four), order[..4].to_vec());
    let rest = ok(&user_get(
        &app,
        ANN,
        &format!(
            "/review?limit=4&cursor={}",
            four["next_cursor"].as_str().unwrap()
        ),
    )
    .await);
    assert_eq!(ids(&rest), [late.as_str()]);
    assert_eq!(rest["next_cursor"], Value::Null);
    let two_hundred = ok(&user_get(&app, ANN, "/review?limit=200").await);
    assert_eq!(ids(&two_hundred), order);
    let one = ok(&user_get(&app, ANN, "/review?limit=1").await);
    assert_eq!(ids(&one), [unplanned_old.as_str()]);

    for (case, query, field) in [
        ("limit 0", "limit=0", "limit"),
        ("limit 201", "limit=201", "limit"),
        ("limit not a number", "limit=ten", "limit"),
        ("cursor not base64", "cursor=%21%21%21", "cursor"),
        ("cursor of garbage", "cursor=bm9wZQ", "cursor"),
        ("empty cursor", "cursor=", "cursor"),
    ] {
        let res = user_get(&app, ANN, &format!("/review?{query}")).await;
        assert_error(case, &res, 400, "invalid_request", Some(field));
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn review_cards_carry_signed_media_links_that_download_the_image() {
    let app = spawn_app().await;
    let bytes = png(7);
    let id = submit(
        &app,
        "op1",
        json!({"code": "TW-T001", "body": "with a picture",
               "images": [{"data": STANDARD.encode(&bytes), "caption": "the balcony"}]}),
    )
    .await;
    let queue = ok(&user_get(&app, ANN, "/review").await);
    let card = &queue["posts"][0];
    assert_eq!(card["id"], id.as_str(), "{queue}");
    let media = card["media"].as_array().expect("media[]");
    assert_eq!(media.len(), 1, "{card}");
    let m = &media[0];
    assert_eq!(m["kind"], "image", "{m}");
    assert_eq!(m["mime_type"], "image/png", "{m}");
    assert_eq!(m["caption"], "the balcony", "{m}");
    assert_eq!(m["duration_ms"], Value::Null, "{m}");
    let url = m["url"].as_str().expect("url");
    assert!(
        url.starts_with(&format!("{}/files/", app.base)) && url.contains("s="),
        "{url}"
    );
    assert!(
        m["thumb_url"]
            .as_str()
            .is_some_and(|u| u.contains("/thumb?")),
        "{m}"
    );

    let file = app
        .client
        .send(Request::new("GET", &local(&app, url)))
        .await;
    assert_eq!(file.status, 200, "{}", file.text());
    assert_eq!(file.body, bytes);

    // A link whose signature was tampered with gives nothing.
    let forged = format!("{}x", local(&app, url));
    let res = app.client.send(Request::new("GET", &forged)).await;
    assert_ne!(res.status, 200, "a forged link downloads");

    // The single post carries the same media, signed.
    let one = ok(&user_get(&app, ANN, &format!("/posts/{id}")).await);
    let m1 = &one["post"]["media"][0];
    assert_eq!(m1["id"], m["id"], "{one}");
    assert_eq!(one["links_expire_in_seconds"], 86_400);
    let again = app
        .client
        .send(Request::new(
            "GET",
            &local(&app, m1["url"].as_str().unwrap()),
        ))
        .await;
    assert_eq!(again.status, 200);
    assert_eq!(again.body, bytes);
}

// ---------------------------------------------------------------------------------------------
// GET /posts/{id}

#[tokio::test(flavor = "multi_thread")]
async fn one_post_has_its_record_and_what_agents_reported() {
    let app = spawn_app().await;
    let id = submit(
        &app,
        "op1",
        json!({"code": "TW-T001", "body": "record me", "topic": "tea", "note": "first try"}),
    )
    .await;
    let v = ok(&user_get(&app, ANN, &format!("/posts/{id}")).await);
    assert_eq!(v["post"]["id"], id.as_str(), "{v}");
    assert_eq!(v["post"]["status"], "internal_review", "{v}");
    assert_eq!(v["post"]["topic"], "tea", "{v}");
    assert_eq!(v["client_review"], false, "{v}");
    assert_eq!(v["stocked_at"], Value::Null, "{v}");
    assert_eq!(v["post"]["reported"]["permalink"], Value::Null, "{v}");
    let record = v["record"].as_array().expect("record[]");
    assert_eq!(record[0]["action"], "submitted", "{v}");
    assert_eq!(
        record[0]["actor"],
        json!({"kind": "agent", "name": "op1"}),
        "{v}"
    );
    assert!(
        record
            .iter()
            .any(|r| r["reason"] == "first try" && r["actor"]["kind"] == "agent"),
        "the agent's note is on the record: {v}"
    );
    let before = record.len();

    let m = moved(
        &app,
        ANN,
        &id,
        json!({"to": "approved", "comment": "Lovely, ship it"}),
    )
    .await;
    assert_eq!(
        m,
        json!({"id": id, "from": "internal_review", "status": "approved", "planned_at": null})
    );
    let at = Timestamp::now() - SignedDuration::from_mins(5);
    publish(&app, &id, "TW-T001", 42, at).await;

    let v = ok(&user_get(&app, ANN, &format!("/posts/{id}")).await);
    assert_eq!(v["post"]["status"], "published", "{v}");
    let reported = &v["post"]["reported"];
    assert_eq!(
        reported["permalink"], "https://threads.net/@mia/post/42",
        "{v}"
    );
    assert_eq!(reported["platform_post_id"], "pp-42", "{v}");
    assert_eq!(
        reported["published_at"],
        Timestamp::from_second(at.as_second()).unwrap().to_string(),
        "{v}"
    );
    assert!(reported["last_reported_at"].is_string(), "{v}");
    let record = v["record"].as_array().expect("record[]");
    assert!(record.len() > before, "{v}");
    let approved = &record[before];
    assert_eq!(approved["action"], "approved", "{v}");
    assert_eq!(approved["reason"], "Lovely, ship it", "{v}");
    assert_eq!(
        approved["actor"],
        json!({"kind": "member", "name": "Ann"}),
        "{v}"
    );
    assert_eq!(approved["detail"]["from"], "internal_review", "{v}");
    assert_eq!(approved["detail"]["role"], "agency", "{v}");
    assert!(approved["detail"].get("relayed").is_none(), "{v}");
    assert!(approved["at"].is_string(), "{v}");
    // Oldest first.
    let times: Vec<&str> = record.iter().map(|r| r["at"].as_str().unwrap()).collect();
    let mut sorted = times.clone();
    sorted.sort();
    assert_eq!(times, sorted, "{v}");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_client_sees_a_post_only_from_client_review_on_and_strangers_never() {
    let app = spawn_app().await;
    client_review(&app, true).await;
    let id = draft(&app, "for the client").await;
    for who in [CLI, CID] {
        let res = user_get(&app, who, &format!("/posts/{id}")).await;
        assert_error(
            &format!("{who} in internal review"),
            &res,
            404,
            "not_found",
            None,
        );
    }
    let olga = user_get(&app, OLGA, &format!("/posts/{id}")).await;
    assert_error("olga", &olga, 404, "not_found", None);
    let root = ok(&user_get(&app, ROOT, &format!("/posts/{id}")).await);
    assert_eq!(root["post"]["id"], id.as_str());

    moved(&app, ANN, &id, json!({"to": "client_review"})).await;
    for who in [CLI, CID] {
        let v = ok(&user_get(&app, who, &format!("/posts/{id}")).await);
        assert_eq!(v["post"]["status"], "client_review", "{who}: {v}");
        assert_eq!(v["client_review"], true, "{v}");
    }
    moved(&app, CLI, &id, json!({"to": "approved"})).await;
    let v = ok(&user_get(&app, CID, &format!("/posts/{id}")).await);
    assert_eq!(v["post"]["status"], "approved", "after client review: {v}");
    let record = v["record"].as_array().unwrap();
    let last = record.last().unwrap();
    assert_eq!(last["action"], "approved", "{v}");
    assert_eq!(
        last["actor"],
        json!({"kind": "member", "name": "Cli"}),
        "{v}"
    );
    assert_eq!(last["detail"]["role"], "client", "{v}");
    assert!(
        record
            .iter()
            .any(|r| r["action"] == "client_review" && r["actor"]["name"] == "Ann"),
        "{v}"
    );
    let olga = user_get(&app, OLGA, &format!("/posts/{id}")).await;
    assert_error("olga after approval", &olga, 404, "not_found", None);

    let unknown = user_get(&app, ANN, &format!("/posts/{}", uuid::Uuid::new_v4())).await;
    assert_error("unknown id", &unknown, 404, "not_found", None);
    let malformed = user_get(&app, ANN, "/posts/not-a-uuid").await;
    assert_error(
        "malformed id",
        &malformed,
        400,
        "invalid_request",
        Some("id"),
    );
}

/// The actions and actors of a post's record as `who` reads it.
async fn record_seen(app: &TestApp, who: &str, post: &str) -> Value {
    ok(&user_get(app, who, &format!("/posts/{post}")).await)["record"].clone()
}

#[tokio::test(flavor = "multi_thread")]
async fn a_client_reads_the_client_stage_of_the_record_and_never_the_agencys_notes() {
    let app = spawn_app().await;
    client_review(&app, true).await;
    let id = submit(
        &app,
        "op1",
        json!({"code": "TW-T001", "body": "first text", "note": "internal: Cli hates emoji"}),
    )
    .await;
    moved(
        &app,
        ANN,
        &id,
        json!({"to": "sent_back", "comment": "internal: too salesy for Brand"}),
    )
    .await;
    let res = app
        .client
        .send(
            Request::new("PUT", &format!("{AGENT}/drafts/{id}"))
                .bearer(&app.agent_key("op1"))
                .json(&json!({"body": "second text"})),
        )
        .await;
    assert_eq!(res.status, 200, "rewrite: {}", res.text());
    moved(&app, ANN, &id, json!({"to": "client_review"})).await;
    let approve = relay_body("approved", "Cli", "client");
    let res = relay(&app, "op1", &id, approve).await;
    assert_eq!(res.status, 200, "relayed approval: {}", res.text());

    // The agency reads everything: the agent's note, the internal comment, the relay.
    let all = record_seen(&app, ANN, &id).await;
    let text = all.to_string();
    for internal in ["Cli hates emoji", "too salesy", "op1", "mia-team"] {
        assert!(text.contains(internal), "ann misses {internal}: {all}");
    }
    // A client, with or without the review right, reads the client stage only: the move into
    // client review and the client's approval, no agent, no internal comment, no relay.
    for who in [CLI, CID] {
        let seen = record_seen(&app, who, &id).await;
        let what: Vec<(&str, &str, &str)> = seen
            .as_array()
            .expect("record[]")
            .iter()
            .map(|e| {
                (
                    e["action"].as_str().unwrap_or_default(),
                    e["actor"]["kind"].as_str().unwrap_or_default(),
                    e["actor"]["name"].as_str().unwrap_or_default(),
                )
            })
            .collect();
        assert_eq!(
            what,
            [
                ("client_review", "member", "Ann"),
                ("approved", "member", "Cli")
            ],
            "{who}: {seen}"
        );
        let text = seen.to_string();
        for internal in [
            "Cli hates emoji",
            "too salesy",
            "op1",
            "mia-team",
            "relayed",
        ] {
            assert!(!text.contains(internal), "{who} reads {internal}: {seen}");
        }
        assert_eq!(seen[1]["detail"]["from"], "client_review", "{seen}");
    }
}

// ---------------------------------------------------------------------------------------------
// POST /posts/{id}/transition: from internal review

#[tokio::test(flavor = "multi_thread")]
async fn with_client_review_off_an_internal_review_post_is_approved_directly() {
    let app = spawn_app().await;
    let id = draft(&app, "approve me").await;
    let refused = transition(&app, ANN, &id, json!({"to": "client_review"})).await;
    assert_error("client_review while off", &refused, 422, "rejected", None);
    assert!(
        message(&refused).contains("client review is off"),
        "{}",
        refused.text()
    );
    assert_eq!(status_of(&app, &id).await, "internal_review");
    assert_eq!(member_events(&app, &id).await, 0);

    let m = moved(&app, ANN, &id, json!({"to": "approved"})).await;
    assert_eq!(
        m,
        json!({"id": id, "from": "internal_review", "status": "approved", "planned_at": null})
    );
    assert_eq!(status_of(&app, &id).await, "approved");
    assert_eq!(member_events(&app, &id).await, 1);
    // It is on the agent's approved list now.
    let list = ok(&app
        .client
        .get(&format!("{AGENT}/posts/approved"), &app.agent_key("op1"))
        .await);
    assert_eq!(ids(&list), [id.as_str()], "{list}");
    // And off the review queue.
    let queue = ok(&user_get(&app, ANN, "/review").await);
    assert!(ids(&queue).is_empty(), "{queue}");
}

#[tokio::test(flavor = "multi_thread")]
async fn an_internal_review_post_can_be_cancelled_and_then_moves_no_more() {
    let app = spawn_app().await;
    let id = draft(&app, "cancel me").await;
    let m = moved(
        &app,
        ANN,
        &id,
        json!({"to": "cancelled", "comment": "off brand"}),
    )
    .await;
    assert_eq!(m["from"], "internal_review");
    assert_eq!(m["status"], "cancelled");
    assert_eq!(status_of(&app, &id).await, "cancelled");
    let events = all_events(&app).await;
    for to in [
        "approved",
        "cancelled",
        "sent_back",
        "rewrite_requested",
        "client_review",
    ] {
        let res = transition(&app, ANN, &id, json!({"to": to, "comment": "again"})).await;
        assert_error(&format!("cancelled -> {to}"), &res, 422, "rejected", None);
    }
    assert_eq!(status_of(&app, &id).await, "cancelled");
    assert_eq!(all_events(&app).await, events);
}

#[tokio::test(flavor = "multi_thread")]
async fn sending_back_and_asking_for_a_rewrite_need_a_comment_and_reach_the_redo_list() {
    let app = spawn_app().await;
    let back = draft(&app, "send me back").await;
    let rewrite = draft(&app, "rewrite me").await;
    let events = all_events(&app).await;
    for (post, to) in [(&back, "sent_back"), (&rewrite, "rewrite_requested")] {
        for (case, body) in [
            ("no comment", json!({"to": to})),
            ("null comment", json!({"to": to, "comment": null})),
            ("blank comment", json!({"to": to, "comment": "   "})),
        ] {
            let res = transition(&app, ANN, post, body).await;
            assert_error(
                &format!("{to}: {case}"),
                &res,
                400,
                "invalid_request",
                Some("comment"),
            );
        }
        let empty = transition(&app, ANN, post, json!({"to": to, "comment": ""})).await;
        assert_error(
            &format!("{to}: empty comment"),
            &empty,
            400,
            "invalid_request",
            Some("comment"),
        );
        let long = transition(
            &app,
            ANN,
            post,
            json!({"to": to, "comment": "x".repeat(2001)}),
        )
        .await;
        assert_error(
            &format!("{to}: 2001 characters"),
            &long,
            400,
            "invalid_request",
            Some("comment"),
        );
        assert_eq!(status_of(&app, post).await, "internal_review");
    }
    assert_eq!(all_events(&app).await, events, "refusals wrote nothing");

    let m = moved(
        &app,
        ANN,
        &back,
        json!({"to": "sent_back", "comment": "Too salesy"}),
    )
    .await;
    assert_eq!(
        (m["from"].as_str(), m["status"].as_str()),
        (Some("internal_review"), Some("sent_back"))
    );
    let m = moved(
        &app,
        ANN,
        &rewrite,
        json!({"to": "rewrite_requested", "comment": "x".repeat(2000)}),
    )
    .await;
    assert_eq!(m["status"], "rewrite_requested");
    for post in [&back, &rewrite] {
        assert_eq!(
            app.count(&format!(
                "SELECT count(*) AS n FROM posts WHERE id = '{post}' AND awaiting_rewrite \
                 AND NOT rewrite_answered"
            ))
            .await,
            1
        );
    }

    let redo = ok(&app
        .client
        .get(&format!("{AGENT}/drafts"), &app.agent_key("op1"))
        .await);
    let drafts = redo["drafts"].as_array().expect("drafts[]");
    assert_eq!(drafts.len(), 2, "{redo}");
    let find = |id: &str| {
        drafts
            .iter()
            .find(|d| d["id"] == id)
            .unwrap_or_else(|| panic!("{id} not in {redo}"))
    };
    assert_eq!(find(&back)["status"], "sent_back");
    assert_eq!(find(&back)["instruction"], "Too salesy");
    assert_eq!(find(&rewrite)["status"], "rewrite_requested");
    assert_eq!(find(&rewrite)["instruction"], "x".repeat(2000));
    let comments = find(&back)["comments"].as_array().unwrap().clone();
    assert!(
        comments
            .iter()
            .any(|c| c["comment"] == "Too salesy" && c["by"] == "Ann"),
        "{redo}"
    );
    let only_back = ok(&app
        .client
        .get(
            &format!("{AGENT}/drafts?status=sent_back"),
            &app.agent_key("op1"),
        )
        .await);
    assert_eq!(
        only_back["drafts"]
            .as_array()
            .unwrap()
            .iter()
            .map(|d| d["id"].as_str().unwrap().to_owned())
            .collect::<Vec<_>>(),
        [back.as_str()]
    );
    // Neither is waiting for review any more.
    assert!(ids(&ok(&user_get(&app, ANN, "/review").await)).is_empty());
}

// ---------------------------------------------------------------------------------------------
// POST /posts/{id}/transition: client review

#[tokio::test(flavor = "multi_thread")]
async fn with_client_review_on_the_client_approves_and_the_agency_cannot_for_them() {
    let app = spawn_app().await;
    client_review(&app, true).await;
    let id = draft(&app, "client decides").await;

    let direct = transition(&app, ANN, &id, json!({"to": "approved"})).await;
    assert_error(
        "approve while client review on",
        &direct,
        422,
        "rejected",
        None,
    );
    assert!(
        message(&direct).contains("client_review"),
        "{}",
        direct.text()
    );
    assert_eq!(status_of(&app, &id).await, "internal_review");
    assert_eq!(member_events(&app, &id).await, 0);

    // A client cannot touch a post still in internal review: it is invisible to them.
    let early = transition(&app, CLI, &id, json!({"to": "approved"})).await;
    assert_error("client on internal review", &early, 404, "not_found", None);
    let early = transition(&app, CLI, &id, json!({"to": "sent_back", "comment": "no"})).await;
    assert_error(
        "client sends back internal review",
        &early,
        404,
        "not_found",
        None,
    );

    let m = moved(&app, ANN, &id, json!({"to": "client_review"})).await;
    assert_eq!(
        (m["from"].as_str(), m["status"].as_str()),
        (Some("internal_review"), Some("client_review"))
    );
    assert_eq!(status_of(&app, &id).await, "client_review");

    let agency = transition(&app, ANN, &id, json!({"to": "approved"})).await;
    assert_error(
        "agency approves in client review",
        &agency,
        422,
        "rejected",
        None,
    );
    assert!(
        message(&agency).contains("on behalf of the client"),
        "{}",
        agency.text()
    );
    let cid = transition(&app, CID, &id, json!({"to": "approved"})).await;
    assert_error(
        "client without the review right",
        &cid,
        403,
        "forbidden",
        None,
    );
    let cancel = transition(&app, ANN, &id, json!({"to": "cancelled"})).await;
    assert_error("cancel from client review", &cancel, 422, "rejected", None);
    let again = transition(&app, ANN, &id, json!({"to": "client_review"})).await;
    assert_error("client review again", &again, 422, "rejected", None);
    assert_eq!(status_of(&app, &id).await, "client_review");
    assert_eq!(member_events(&app, &id).await, 1);

    let m = moved(
        &app,
        CLI,
        &id,
        json!({"to": "approved", "comment": "Love it"}),
    )
    .await;
    assert_eq!(
        m,
        json!({"id": id, "from": "client_review", "status": "approved", "planned_at": null})
    );
    assert_eq!(status_of(&app, &id).await, "approved");
    assert_eq!(member_events(&app, &id).await, 2);
    // The client cannot reschedule or move it further.
    let resched = transition(
        &app,
        CLI,
        &id,
        json!({"to": "approved", "planned_at": "2026-12-24 10:00"}),
    )
    .await;
    assert_error("client reschedules", &resched, 422, "rejected", None);
    assert_eq!(member_events(&app, &id).await, 2);
}

#[tokio::test(flavor = "multi_thread")]
async fn from_client_review_posts_go_back_to_the_agent_and_admins_may_approve() {
    let app = spawn_app().await;
    client_review(&app, true).await;
    let by_client = draft(&app, "client sends back").await;
    let by_agency = draft(&app, "agency asks rewrite").await;
    let by_admin = draft(&app, "admin approves").await;
    for id in [&by_client, &by_agency, &by_admin] {
        moved(&app, ANN, id, json!({"to": "client_review"})).await;
    }
    let none = transition(&app, CLI, &by_client, json!({"to": "sent_back"})).await;
    assert_error("no comment", &none, 400, "invalid_request", Some("comment"));
    let m = moved(
        &app,
        CLI,
        &by_client,
        json!({"to": "sent_back", "comment": "Not our tone"}),
    )
    .await;
    assert_eq!(
        (m["from"].as_str(), m["status"].as_str()),
        (Some("client_review"), Some("sent_back"))
    );
    let m = moved(
        &app,
        ANN,
        &by_agency,
        json!({"to": "rewrite_requested", "comment": "Shorter please"}),
    )
    .await;
    assert_eq!(m["status"], "rewrite_requested");
    let m = moved(&app, ROOT, &by_admin, json!({"to": "approved"})).await;
    assert_eq!(
        (m["from"].as_str(), m["status"].as_str()),
        (Some("client_review"), Some("approved"))
    );
    let v = ok(&user_get(&app, ANN, &format!("/posts/{by_admin}")).await);
    let last = v["record"].as_array().unwrap().last().unwrap().clone();
    assert_eq!(
        last["actor"],
        json!({"kind": "member", "name": "Root"}),
        "{v}"
    );
    assert_eq!(last["detail"]["role"], "admin", "{v}");

    let redo = ok(&app
        .client
        .get(&format!("{AGENT}/drafts"), &app.agent_key("op1"))
        .await);
    let mut got: Vec<(String, String)> = redo["drafts"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| {
            (
                d["id"].as_str().unwrap().to_owned(),
                d["instruction"].as_str().unwrap_or_default().to_owned(),
            )
        })
        .collect();
    got.sort();
    let mut want = vec![
        (by_client.clone(), "Not our tone".to_owned()),
        (by_agency.clone(), "Shorter please".to_owned()),
    ];
    want.sort();
    assert_eq!(got, want, "{redo}");
}

#[tokio::test(flavor = "multi_thread")]
async fn the_agency_may_approve_a_client_review_post_once_client_review_was_turned_off() {
    let app = spawn_app().await;
    client_review(&app, true).await;
    let id = draft(&app, "waited too long").await;
    moved(&app, ANN, &id, json!({"to": "client_review"})).await;
    let refused = transition(&app, ANN, &id, json!({"to": "approved"})).await;
    assert_error("while on", &refused, 422, "rejected", None);
    client_review(&app, false).await;
    let m = moved(&app, ANN, &id, json!({"to": "approved"})).await;
    assert_eq!(
        (m["from"].as_str(), m["status"].as_str()),
        (Some("client_review"), Some("approved"))
    );
    assert_eq!(status_of(&app, &id).await, "approved");
}

// ---------------------------------------------------------------------------------------------
// POST /posts/{id}/transition: planned times, other moves, the body

async fn planned_at_of(app: &TestApp, post: &str) -> i64 {
    app.count(&format!(
        "SELECT COALESCE(extract(epoch FROM planned_at)::bigint, -1) AS n FROM posts WHERE id = '{post}'"
    ))
    .await
}

/// The date `days` from today (UTC) as `YYYY-MM-DD`: a plan that stays ahead whenever the
/// tests run. Every plan here is a morning in Asia (UTC+8 or +9), so its UTC date is the same.
fn ahead(days: i64) -> String {
    (Timestamp::now() + SignedDuration::from_hours(24 * days))
        .strftime("%Y-%m-%d")
        .to_string()
}

fn epoch(iso: &str) -> i64 {
    iso.parse::<Timestamp>().expect("iso").as_second()
}

#[tokio::test(flavor = "multi_thread")]
async fn an_approved_post_is_rescheduled_with_planned_at_in_the_market_zone() {
    let app = spawn_app().await;
    let d5 = ahead(5);
    let d14 = ahead(14);
    let id = draft(&app, "plan me").await;
    // Approving with a market-local time reads it in Asia/Taipei.
    let m = moved(
        &app,
        ANN,
        &id,
        json!({"to": "approved", "planned_at": format!("{d5} 10:00")}),
    )
    .await;
    assert_eq!(
        m,
        json!({"id": id, "from": "internal_review", "status": "approved",
               "planned_at": format!("{d5}T02:00:00Z")})
    );
    assert_eq!(
        planned_at_of(&app, &id).await,
        epoch(&format!("{d5}T02:00:00Z"))
    );

    // Approving an approved post again needs a planned time.
    let events = member_events(&app, &id).await;
    let bare = transition(&app, ANN, &id, json!({"to": "approved"})).await;
    assert_error(
        "approved again without planned_at",
        &bare,
        422,
        "rejected",
        None,
    );
    assert!(message(&bare).contains("planned_at"), "{}", bare.text());

    let m = moved(
        &app,
        ANN,
        &id,
        json!({"to": "approved", "planned_at": format!("{d14}T12:00:00Z"), "comment": "later"}),
    )
    .await;
    assert_eq!(
        m,
        json!({"id": id, "from": "approved", "status": "approved",
               "planned_at": format!("{d14}T12:00:00Z")})
    );
    assert_eq!(status_of(&app, &id).await, "approved");
    assert_eq!(
        planned_at_of(&app, &id).await,
        epoch(&format!("{d14}T12:00:00Z"))
    );
    let v = ok(&user_get(&app, ANN, &format!("/posts/{id}")).await);
    assert_eq!(v["post"]["planned_at"], format!("{d14}T12:00:00Z"), "{v}");
    let last = v["record"].as_array().unwrap().last().unwrap().clone();
    assert_eq!(last["action"], "rescheduled", "{v}");
    assert_eq!(last["reason"], "later", "{v}");
    assert_eq!(last["detail"]["from"], "approved", "{v}");
    assert!(last["detail"]["planned_at"].is_string(), "{v}");
    assert_eq!(member_events(&app, &id).await, events + 1);

    // Refusals change nothing.
    let events = member_events(&app, &id).await;
    let past = transition(
        &app,
        ANN,
        &id,
        json!({"to": "approved", "planned_at": "2026-01-01 10:00"}),
    )
    .await;
    assert_error(
        "planned_at in the past",
        &past,
        422,
        "rejected",
        Some("planned_at"),
    );
    let just_past = transition(
        &app,
        ANN,
        &id,
        json!({"to": "approved",
               "planned_at": (Timestamp::now() - SignedDuration::from_mins(1)).to_string()}),
    )
    .await;
    assert_error(
        "a minute ago",
        &just_past,
        422,
        "rejected",
        Some("planned_at"),
    );
    for bad in [
        "tomorrow 9am".to_owned(),
        format!("{d14}T12:00:00"),
        d14.clone(),
        format!("{d14} 25:00"),
        "10/12/2026 10:00".to_owned(),
    ] {
        let res = transition(&app, ANN, &id, json!({"to": "approved", "planned_at": bad})).await;
        assert_error(
            &format!("planned_at {bad:?}"),
            &res,
            400,
            "invalid_request",
            Some("planned_at"),
        );
    }
    let long = transition(
        &app,
        ANN,
        &id,
        json!({"to": "approved", "planned_at": "2".repeat(41)}),
    )
    .await;
    assert_error(
        "41 characters",
        &long,
        400,
        "invalid_request",
        Some("planned_at"),
    );
    let number = transition(
        &app,
        ANN,
        &id,
        json!({"to": "approved", "planned_at": 1767225600}),
    )
    .await;
    assert_error(
        "a number",
        &number,
        400,
        "invalid_request",
        Some("planned_at"),
    );
    assert_eq!(
        planned_at_of(&app, &id).await,
        epoch(&format!("{d14}T12:00:00Z"))
    );
    assert_eq!(member_events(&app, &id).await, events);

    // An approved post moves nowhere else.
    for to in [
        "sent_back",
        "rewrite_requested",
        "cancelled",
        "client_review",
    ] {
        let res = transition(&app, ANN, &id, json!({"to": to, "comment": "c"})).await;
        assert_error(&format!("approved -> {to}"), &res, 422, "rejected", None);
    }
    assert_eq!(status_of(&app, &id).await, "approved");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_market_local_planned_at_is_read_in_the_accounts_own_market() {
    let app = spawn_app().await;
    let d5 = ahead(5);
    let d7 = ahead(7);
    let d13 = ahead(13);
    let jp = submit(&app, "jp1", json!({"code": "JP-T001", "body": "tokyo"})).await;
    let m = moved(
        &app,
        ANN,
        &jp,
        json!({"to": "approved", "planned_at": format!("{d5} 10:00:30")}),
    )
    .await;
    assert_eq!(m["planned_at"], format!("{d5}T01:00:30Z"), "{m}");
    // Another move keeps the plan it had.
    let tw = submit(
        &app,
        "op1",
        json!({"code": "TW-T001", "body": "kept plan", "planned_at": format!("{d7} 08:00")}),
    )
    .await;
    let m = moved(
        &app,
        ANN,
        &tw,
        json!({"to": "sent_back", "comment": "redo", "planned_at": format!("{d13} 08:00")}),
    )
    .await;
    assert_eq!(m["status"], "sent_back");
    assert_eq!(
        planned_at_of(&app, &tw).await,
        epoch(&format!("{d7}T00:00:00Z"))
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_published_post_cannot_be_reviewed_and_to_is_one_of_five() {
    let app = spawn_app().await;
    let id = published_post(
        &app,
        "TW-T001",
        "already out",
        1,
        Timestamp::now() - SignedDuration::from_mins(10),
    )
    .await;
    let events = all_events(&app).await;
    for to in [
        "approved",
        "client_review",
        "sent_back",
        "rewrite_requested",
        "cancelled",
    ] {
        for who in [ANN, ROOT] {
            let res = transition(
                &app,
                who,
                &id,
                json!({"to": to, "comment": "c", "planned_at": "2026-12-24 10:00"}),
            )
            .await;
            assert_error(
                &format!("published -> {to} by {who}"),
                &res,
                422,
                "rejected",
                None,
            );
        }
    }
    assert_eq!(status_of(&app, &id).await, "published");
    assert_eq!(all_events(&app).await, events);

    let other = draft(&app, "bad targets").await;
    for (case, body) in [
        ("published", json!({"to": "published"})),
        ("draft", json!({"to": "draft"})),
        ("scheduled", json!({"to": "scheduled"})),
        ("capitalised", json!({"to": "Approved"})),
        ("a number", json!({"to": 1})),
        ("missing", json!({"comment": "what"})),
    ] {
        let res = transition(&app, ANN, &other, body).await;
        assert_error(
            &format!("to {case}"),
            &res,
            400,
            "invalid_request",
            Some("to"),
        );
    }
    assert_eq!(status_of(&app, &other).await, "internal_review");
    let not_json = app
        .client
        .send(
            Request::new("POST", &format!("{USER}/posts/{other}/transition"))
                .bearer(&app.personal_key(ANN))
                .header("Content-Type", "application/json")
                .raw(b"{\"to\": ".to_vec()),
        )
        .await;
    assert_error("broken JSON", &not_json, 400, "invalid_request", None);

    let unknown = transition(
        &app,
        ANN,
        &uuid::Uuid::new_v4().to_string(),
        json!({"to": "approved"}),
    )
    .await;
    assert_error("unknown post", &unknown, 404, "not_found", None);
    let malformed = transition(&app, ANN, "nope", json!({"to": "approved"})).await;
    assert_error(
        "malformed id",
        &malformed,
        400,
        "invalid_request",
        Some("id"),
    );
    let stranger = transition(&app, OLGA, &other, json!({"to": "approved"})).await;
    assert_error("another organization", &stranger, 404, "not_found", None);
    assert_eq!(status_of(&app, &other).await, "internal_review");
    let agent = app
        .client
        .post(
            &format!("{USER}/posts/{other}/transition"),
            &app.agent_key("op1"),
            &json!({"to": "approved"}),
        )
        .await;
    assert_error(
        "agent key on the personal API",
        &agent,
        403,
        "forbidden",
        None,
    );
    assert_eq!(status_of(&app, &other).await, "internal_review");
}

// ---------------------------------------------------------------------------------------------
// Idempotency and roles

#[tokio::test(flavor = "multi_thread")]
async fn a_personal_transition_replays_under_the_same_idempotency_key() {
    let app = spawn_app().await;
    let id = draft(&app, "idempotent").await;
    let body = json!({"to": "approved", "comment": "once"});
    let first = transition_idem(&app, ANN, &id, "review-1", body.clone()).await;
    assert_eq!(first.status, 200, "{}", first.text());
    assert_eq!(first.header("idempotent-replayed"), None);
    let second = transition_idem(&app, ANN, &id, "review-1", body.clone()).await;
    assert_eq!(second.status, 200, "{}", second.text());
    assert_eq!(second.header("idempotent-replayed"), Some("true"));
    assert_eq!(second.json(), first.json());
    assert_eq!(member_events(&app, &id).await, 1, "one review event");
    assert_eq!(
        app.count(&format!(
            "SELECT count(*) AS n FROM review_events WHERE post_id = '{id}' AND action = 'approved'"
        ))
        .await,
        1
    );

    let other = transition_idem(
        &app,
        ANN,
        &id,
        "review-1",
        json!({"to": "cancelled", "comment": "once"}),
    )
    .await;
    assert_error(
        "same key other body",
        &other,
        422,
        "idempotency_mismatch",
        None,
    );
    assert_eq!(status_of(&app, &id).await, "approved");

    // The key is the member's: another person using the same key is a new request.
    let second_post = draft(&app, "idempotent two").await;
    let root = transition_idem(
        &app,
        ROOT,
        &second_post,
        "review-1",
        json!({"to": "approved"}),
    )
    .await;
    assert_eq!(root.status, 200, "{}", root.text());
    assert_eq!(root.header("idempotent-replayed"), None);
    assert_eq!(root.json()["post"]["id"], second_post.as_str());

    // A refused move does not take the key.
    let third = draft(&app, "idempotent three").await;
    let refused = transition_idem(
        &app,
        ANN,
        &third,
        "review-2",
        json!({"to": "client_review"}),
    )
    .await;
    assert_error("refused", &refused, 422, "rejected", None);
    let missing = transition_idem(&app, ANN, &third, "review-2", json!({"to": "sent_back"})).await;
    assert_error(
        "no comment",
        &missing,
        400,
        "invalid_request",
        Some("comment"),
    );
    let now_ok = transition_idem(
        &app,
        ANN,
        &third,
        "review-2",
        json!({"to": "sent_back", "comment": "fix"}),
    )
    .await;
    assert_eq!(now_ok.status, 200, "{}", now_ok.text());
    assert_eq!(now_ok.header("idempotent-replayed"), None);
    assert_eq!(now_ok.json()["post"]["status"], "sent_back");
    assert_eq!(member_events(&app, &third).await, 1);

    // A malformed key is refused and nothing moves.
    let fourth = draft(&app, "idempotent four").await;
    let bad = transition_idem(&app, ANN, &fourth, "has space", json!({"to": "approved"})).await;
    assert_error("malformed key", &bad, 400, "invalid_request", None);
    assert_eq!(status_of(&app, &fourth).await, "internal_review");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_members_role_is_read_afresh_on_every_request() {
    let app = spawn_app().await;
    client_review(&app, true).await;
    let internal = draft(&app, "internal").await;
    let waiting = draft(&app, "waiting for the client").await;
    moved(&app, ANN, &waiting, json!({"to": "client_review"})).await;

    let ann_member = "person_id = (SELECT id FROM people WHERE email = 'ann@acme.test')";
    app.sql(&format!(
        "UPDATE members SET role = 'client' WHERE {ann_member}"
    ))
    .await;
    let me = ok(&user_get(&app, ANN, "/me").await);
    assert_eq!(
        (me["role"].as_str(), me["review"].as_bool()),
        (Some("client"), Some(false)),
        "{me}"
    );
    let queue = ok(&user_get(&app, ANN, "/review").await);
    assert_eq!(ids(&queue), [waiting.as_str()], "{queue}");
    let hidden = user_get(&app, ANN, &format!("/posts/{internal}")).await;
    assert_error(
        "client sees no internal review",
        &hidden,
        404,
        "not_found",
        None,
    );
    let no_right = transition(&app, ANN, &waiting, json!({"to": "approved"})).await;
    assert_error(
        "client without the right",
        &no_right,
        403,
        "forbidden",
        None,
    );

    // With the review right, Ann approves as the client.
    app.sql(&format!(
        "UPDATE members SET review = true WHERE {ann_member}"
    ))
    .await;
    let invisible = transition(&app, ANN, &internal, json!({"to": "cancelled"})).await;
    assert_error(
        "client on internal review",
        &invisible,
        404,
        "not_found",
        None,
    );
    let m = moved(&app, ANN, &waiting, json!({"to": "approved"})).await;
    assert_eq!(m["status"], "approved");
    let v = ok(&user_get(&app, ANN, &format!("/posts/{waiting}")).await);
    assert_eq!(
        v["record"].as_array().unwrap().last().unwrap()["detail"]["role"],
        "client"
    );

    // Back to agency: the whole queue again.
    app.sql(&format!(
        "UPDATE members SET role = 'agency', review = false WHERE {ann_member}"
    ))
    .await;
    let queue = ok(&user_get(&app, ANN, "/review").await);
    assert_eq!(ids(&queue), [internal.as_str()], "{queue}");
    let m = moved(&app, ANN, &internal, json!({"to": "client_review"})).await;
    assert_eq!(m["status"], "client_review");

    // A member who left has no voice at all.
    app.sql(&format!(
        "UPDATE members SET left_at = now() WHERE {ann_member}"
    ))
    .await;
    let gone = user_get(&app, ANN, "/me").await;
    assert_error("left the organization", &gone, 401, "unauthorized", None);
}

// ---------------------------------------------------------------------------------------------
// GET /posts/published

#[tokio::test(flavor = "multi_thread")]
async fn published_posts_are_newest_first_filtered_and_paged() {
    let app = spawn_app().await;
    let now = Timestamp::now();
    let h = |n: i64| now - SignedDuration::from_mins(60 * n);
    let oldest = published_post(&app, "TW-T001", "pub oldest", 1, h(3)).await;
    let insta = published_post(&app, "TW-I001", "pub insta", 2, h(2)).await;
    // One that went through client review.
    client_review(&app, true).await;
    let via_client = draft(&app, "pub via client").await;
    moved(&app, ANN, &via_client, json!({"to": "client_review"})).await;
    moved(&app, CLI, &via_client, json!({"to": "approved"})).await;
    publish(&app, &via_client, "TW-T001", 3, h(1)).await;
    // Approved but not published: not listed.
    client_review(&app, false).await;
    let approved = draft(&app, "pub not yet").await;
    moved(&app, ANN, &approved, json!({"to": "approved"})).await;
    // Another organization's published post.
    let zoe = submit(&app, "other1", json!({"code": "TW-T001", "body": "zoe"})).await;
    moved(&app, OLGA, &zoe, json!({"to": "approved"})).await;
    let res = app
        .client
        .post(
            &format!("{AGENT}/posts/report"),
            &app.agent_key("other1"),
            &json!({"posts": [{"code": "TW-T001", "status": "published", "post_id": zoe,
                               "platform_post_id": "z-1", "permalink": "https://threads.net/@zoe/post/1"}]}),
        )
        .await;
    ok(&res);

    let all = ok(&user_get(&app, ANN, "/posts/published").await);
    assert_eq!(
        ids(&all),
        [via_client.clone(), insta.clone(), oldest.clone()],
        "{all}"
    );
    assert_eq!(all["next_cursor"], Value::Null);
    assert_eq!(all["posts"][0]["status"], "published");
    assert_eq!(
        all["posts"][0]["reported"]["permalink"],
        "https://threads.net/@mia/post/3"
    );
    assert_eq!(all["posts"][1]["platform"], "instagram");
    for who in [CLI, CID] {
        let v = ok(&user_get(&app, who, "/posts/published").await);
        assert_eq!(ids(&v), [via_client.as_str()], "{who}: {v}");
    }
    let olga = ok(&user_get(&app, OLGA, "/posts/published").await);
    assert_eq!(ids(&olga), [zoe.as_str()], "{olga}");
    let root = ok(&user_get(&app, ROOT, "/posts/published").await);
    assert_eq!(ids(&root).len(), 4, "{root}");

    let code = ok(&user_get(&app, ANN, "/posts/published?code=TW-I001").await);
    assert_eq!(ids(&code), [insta.as_str()], "{code}");
    let lower = ok(&user_get(&app, ANN, "/posts/published?code=tw-t001").await);
    assert_eq!(ids(&lower), [via_client.clone(), oldest.clone()], "{lower}");
    let none = ok(&user_get(&app, ANN, "/posts/published?code=TW-K001").await);
    assert!(ids(&none).is_empty(), "{none}");
    let since = (now - SignedDuration::from_mins(150)).to_string();
    let recent = ok(&user_get(&app, ANN, &format!("/posts/published?since={since}")).await);
    assert_eq!(
        ids(&recent),
        [via_client.clone(), insta.clone()],
        "{recent}"
    );
    let both = ok(&user_get(
        &app,
        ANN,
        &format!("/posts/published?since={since}&code=TW-T001"),
    )
    .await);
    assert_eq!(ids(&both), [via_client.as_str()], "{both}");

    let first = ok(&user_get(&app, ANN, "/posts/published?limit=2").await);
    assert_eq!(ids(&first), [via_client.clone(), insta.clone()], "{first}");
    let cursor = first["next_cursor"]
        .as_str()
        .expect("a next page")
        .to_owned();
    let second = ok(&user_get(
        &app,
        ANN,
        &format!("/posts/published?limit=2&cursor={cursor}"),
    )
    .await);
    assert_eq!(ids(&second), [oldest.as_str()], "{second}");
    assert_eq!(second["next_cursor"], Value::Null, "{second}");
    let three = ok(&user_get(&app, ANN, "/posts/published?limit=3").await);
    assert_eq!(three["next_cursor"], Value::Null, "{three}");

    for (case, query, field) in [
        ("limit 0", "limit=0", "limit"),
        ("limit 201", "limit=201", "limit"),
        ("bad cursor", "cursor=zzz", "cursor"),
        ("since without zone", "since=2026-11-21T10:00:00", "since"),
        ("since not a time", "since=yesterday", "since"),
        ("code too long", &format!("code={}", "A".repeat(41)), "code"),
    ] {
        let res = user_get(&app, ANN, &format!("/posts/published?{query}")).await;
        assert_error(case, &res, 400, "invalid_request", Some(field));
    }
}

// ---------------------------------------------------------------------------------------------
// The agent's relay: POST /api/agent/v1/posts/{id}/transition

fn relay_body(to: &str, name: &str, role: &str) -> Value {
    json!({"to": to, "on_behalf_of": {"name": name, "role": role},
           "origin": {"platform": "telegram", "channel": "mia-team", "requester": name}})
}

#[tokio::test(flavor = "multi_thread")]
async fn a_relay_names_the_person_and_the_origin() {
    let app = spawn_app().await;
    let id = draft(&app, "relay me").await;
    let events = all_events(&app).await;
    let full = relay_body("approved", "Ann", "agency");
    for (case, field) in [("on_behalf_of", "on_behalf_of"), ("origin", "origin")] {
        let mut body = full.clone();
        body.as_object_mut().unwrap().remove(field);
        let res = relay(&app, "op1", &id, body).await;
        assert_error(
            &format!("missing {case}"),
            &res,
            400,
            "invalid_request",
            None,
        );
        assert!(
            res.json()["field"]
                .as_str()
                .is_some_and(|f| f.starts_with(field)),
            "missing {case} names the field: {}",
            res.text()
        );
    }
    for (case, patch, field) in [
        (
            "no name",
            json!({"on_behalf_of": {"role": "agency"}}),
            "on_behalf_of.name",
        ),
        (
            "empty name",
            json!({"on_behalf_of": {"name": "", "role": "agency"}}),
            "on_behalf_of.name",
        ),
        (
            "no role",
            json!({"on_behalf_of": {"name": "Ann"}}),
            "on_behalf_of.role",
        ),
        (
            "unknown role",
            json!({"on_behalf_of": {"name": "Ann", "role": "boss"}}),
            "on_behalf_of.role",
        ),
        (
            "no platform",
            json!({"origin": {"channel": "x"}}),
            "origin.platform",
        ),
        (
            "platform outside the list",
            json!({"origin": {"platform": "slack"}}),
            "origin.platform",
        ),
        (
            "effective_at without zone",
            json!({"effective_at": "2026-11-21T10:00:00"}),
            "effective_at",
        ),
        ("to outside the list", json!({"to": "published"}), "to"),
    ] {
        let mut body = full.clone();
        for (k, v) in patch.as_object().unwrap() {
            body[k] = v.clone();
        }
        let res = relay(&app, "op1", &id, body).await;
        assert_error(case, &res, 400, "invalid_request", Some(field));
    }
    // The agent cannot relay its own decision.
    for name in ["op1", " OP1 "] {
        let res = relay(&app, "op1", &id, relay_body("approved", name, "agency")).await;
        assert_error(
            &format!("on behalf of {name:?}"),
            &res,
            422,
            "rejected",
            Some("on_behalf_of.name"),
        );
    }
    let no_comment = relay(&app, "op1", &id, relay_body("sent_back", "Ann", "agency")).await;
    assert_error(
        "sent back without comment",
        &no_comment,
        400,
        "invalid_request",
        Some("comment"),
    );
    assert_eq!(status_of(&app, &id).await, "internal_review");
    assert_eq!(all_events(&app).await, events, "nothing was written");

    let mut body = full.clone();
    body["comment"] = json!("Ann said yes in the group");
    body["origin"]["message_ref"] = json!("msg-77");
    body["effective_at"] = json!("2026-11-21T09:30:00+08:00");
    let res = relay(&app, "op1", &id, body).await;
    let v = ok(&res);
    assert_eq!(
        v["post"],
        json!({"id": id, "from": "internal_review", "status": "approved", "planned_at": null})
    );
    assert_eq!(status_of(&app, &id).await, "approved");

    let detail = ok(&user_get(&app, ANN, &format!("/posts/{id}")).await);
    let last = detail["record"].as_array().unwrap().last().unwrap().clone();
    assert_eq!(last["action"], "approved", "{detail}");
    assert_eq!(last["reason"], "Ann said yes in the group", "{detail}");
    assert_eq!(
        last["actor"],
        json!({"kind": "member", "name": "Ann"}),
        "{detail}"
    );
    assert_eq!(last["detail"]["role"], "agency", "{detail}");
    let relayed = &last["detail"]["relayed"];
    assert_eq!(relayed["agent"]["name"], "op1", "{detail}");
    assert_eq!(
        relayed["agent"]["id"],
        app.agent_id("op1").to_string(),
        "{detail}"
    );
    assert_eq!(relayed["origin"]["platform"], "telegram", "{detail}");
    assert_eq!(relayed["origin"]["message_ref"], "msg-77", "{detail}");
    assert_eq!(
        relayed["on_behalf_of"],
        json!({"name": "Ann", "role": "agency"}),
        "{detail}"
    );
    assert_eq!(relayed["effective_at"], "2026-11-21T01:30:00Z", "{detail}");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_relay_follows_the_rules_of_the_person_it_names() {
    let app = spawn_app().await;
    client_review(&app, true).await;
    let id = draft(&app, "relay rules").await;
    let client_early = relay(&app, "op1", &id, relay_body("approved", "Cli", "client")).await;
    assert_error(
        "client on internal review",
        &client_early,
        422,
        "rejected",
        None,
    );
    let agency_direct = relay(&app, "op1", &id, relay_body("approved", "Ann", "agency")).await;
    assert_error(
        "agency approves while on",
        &agency_direct,
        422,
        "rejected",
        None,
    );
    assert_eq!(member_events(&app, &id).await, 0);

    let v = ok(&relay(
        &app,
        "op1",
        &id,
        relay_body("client_review", "Ann", "agency"),
    )
    .await);
    assert_eq!(v["post"]["status"], "client_review");
    let agency = relay(&app, "op1", &id, relay_body("approved", "Ann", "agency")).await;
    assert_error(
        "agency approves in client review",
        &agency,
        422,
        "rejected",
        None,
    );
    assert!(
        message(&agency).contains("on behalf of the client"),
        "{}",
        agency.text()
    );
    let v = ok(&relay(&app, "op1", &id, relay_body("approved", "Cli", "client")).await);
    assert_eq!(
        v["post"],
        json!({"id": id, "from": "client_review", "status": "approved", "planned_at": null})
    );
    // The agency reads who relayed it; the client reads its own move, without the agent.
    let detail = ok(&user_get(&app, ANN, &format!("/posts/{id}")).await);
    let last = detail["record"].as_array().unwrap().last().unwrap().clone();
    assert_eq!(
        last["actor"],
        json!({"kind": "member", "name": "Cli"}),
        "{detail}"
    );
    assert_eq!(last["detail"]["role"], "client", "{detail}");
    assert_eq!(
        last["detail"]["relayed"]["agent"]["name"], "op1",
        "{detail}"
    );
    let seen_by_client = ok(&user_get(&app, CLI, &format!("/posts/{id}")).await);
    let last = seen_by_client["record"]
        .as_array()
        .unwrap()
        .last()
        .unwrap()
        .clone();
    assert_eq!(last["actor"], json!({"kind": "member", "name": "Cli"}));
    assert!(
        last["detail"].get("relayed").is_none(),
        "a client never reads the agent that relayed: {seen_by_client}"
    );

    // A relayed reschedule with a market-local time.
    client_review(&app, false).await;
    let v = ok(&relay(
        &app,
        "op1",
        &id,
        json!({"to": "approved", "planned_at": "2026-12-20 18:00",
               "on_behalf_of": {"name": "Ann", "role": "agency"}, "origin": {"platform": "cli"}}),
    )
    .await);
    assert_eq!(v["post"]["planned_at"], "2026-12-20T10:00:00Z", "{v}");
    let past = relay(
        &app,
        "op1",
        &id,
        json!({"to": "approved", "planned_at": "2026-11-01 18:00",
               "on_behalf_of": {"name": "Ann", "role": "agency"}, "origin": {"platform": "cli"}}),
    )
    .await;
    assert_error(
        "relayed planned_at in the past",
        &past,
        422,
        "rejected",
        Some("planned_at"),
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_relay_reaches_only_the_agents_own_posts() {
    let app = spawn_app().await;
    let id = draft(&app, "mine only").await;
    let events = all_events(&app).await;
    let body = relay_body("approved", "Ann", "agency");
    let op2 = relay(&app, "op2", &id, body.clone()).await;
    assert_error("another agent's post", &op2, 403, "forbidden", None);
    let jp1 = relay(&app, "jp1", &id, body.clone()).await;
    assert_error("another workspace", &jp1, 404, "not_found", None);
    let other1 = relay(&app, "other1", &id, body.clone()).await;
    assert_error("another organization", &other1, 404, "not_found", None);
    let bot = relay(&app, "bot", &id, body.clone()).await;
    assert_error("community agent", &bot, 403, "forbidden", None);
    let unknown = relay(&app, "op1", &uuid::Uuid::new_v4().to_string(), body.clone()).await;
    assert_error("unknown post", &unknown, 404, "not_found", None);
    let personal = app
        .client
        .post(
            &format!("{AGENT}/posts/{id}/transition"),
            &app.personal_key(ANN),
            &body,
        )
        .await;
    assert_error(
        "personal key on the agent API",
        &personal,
        403,
        "forbidden",
        None,
    );
    assert_eq!(status_of(&app, &id).await, "internal_review");
    assert_eq!(all_events(&app).await, events);
    // op2 relays on its own post.
    let leo = submit(&app, "op2", json!({"code": "TW-T002", "body": "leo's"})).await;
    let v = ok(&relay(&app, "op2", &leo, body).await);
    assert_eq!(v["post"]["status"], "approved");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_relay_replays_under_the_same_idempotency_key() {
    let app = spawn_app().await;
    let id = draft(&app, "relay once").await;
    let key = app.agent_key("op1");
    let path = format!("{AGENT}/posts/{id}/transition");
    let mut body = relay_body("rewrite_requested", "Ann", "agency");
    body["comment"] = json!("Mention the cat");
    let first = app.client.post_idem(&path, &key, "relay-1", &body).await;
    assert_eq!(first.status, 200, "{}", first.text());
    let second = app.client.post_idem(&path, &key, "relay-1", &body).await;
    assert_eq!(second.status, 200, "{}", second.text());
    assert_eq!(second.header("idempotent-replayed"), Some("true"));
    assert_eq!(second.json(), first.json());
    assert_eq!(member_events(&app, &id).await, 1);
    // The agent's second key is the same agent: still a replay.
    let other_key = app.agent_keys("op1")[1].clone();
    let third = app
        .client
        .post_idem(&path, &other_key, "relay-1", &body)
        .await;
    assert_eq!(third.status, 200, "{}", third.text());
    assert_eq!(third.header("idempotent-replayed"), Some("true"));
    body["comment"] = json!("Mention the dog");
    let mismatch = app.client.post_idem(&path, &key, "relay-1", &body).await;
    assert_error(
        "other content",
        &mismatch,
        422,
        "idempotency_mismatch",
        None,
    );
    assert_eq!(member_events(&app, &id).await, 1);
    let redo = ok(&app.client.get(&format!("{AGENT}/drafts"), &key).await);
    assert_eq!(
        redo["drafts"][0]["instruction"], "Mention the cat",
        "{redo}"
    );
}

// ---------------------------------------------------------------------------------------------
// MCP

async fn mcp(app: &TestApp, key: &str, method: &str, params: Value) -> Value {
    let res = app
        .client
        .send(
            Request::mcp(&json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params}))
                .bearer(key),
        )
        .await;
    assert_eq!(res.status, 200, "{method}: {}", res.text());
    res.json()
}

async fn tool_names(app: &TestApp, key: &str) -> Vec<String> {
    let msg = mcp(app, key, "tools/list", json!({})).await;
    msg["result"]["tools"]
        .as_array()
        .unwrap_or_else(|| panic!("no tools: {msg}"))
        .iter()
        .map(|t| t["name"].as_str().unwrap().to_owned())
        .collect()
}

/// A tools/call answered as a tool result; returns `result`.
async fn call_tool(app: &TestApp, key: &str, name: &str, arguments: Value) -> Value {
    let msg = mcp(
        app,
        key,
        "tools/call",
        json!({"name": name, "arguments": arguments}),
    )
    .await;
    fleetdesk_tests::assert::tool_result(name, &msg)
}

const PERSONAL_REVIEW_TOOLS: [&str; 5] = [
    "whoami",
    "review_queue",
    "get_post",
    "review_post",
    "published_posts",
];

const AGENT_ONLY_TOOLS: [&str; 8] = [
    "relay_post_status",
    "submit_draft",
    "list_redo",
    "list_approved",
    "report_posts",
    "work_today",
    "list_accounts",
    "heartbeat",
];

#[tokio::test(flavor = "multi_thread")]
async fn a_personal_key_reviews_through_mcp() {
    let app = spawn_app().await;
    let ann = app.personal_key(ANN);
    let names = tool_names(&app, &ann).await;
    for t in PERSONAL_REVIEW_TOOLS {
        assert!(names.iter().any(|n| n == t), "ann lacks {t}: {names:?}");
    }
    for t in AGENT_ONLY_TOOLS {
        assert!(
            !names.iter().any(|n| n == t),
            "ann sees agent tool {t}: {names:?}"
        );
    }
    let agent_names = tool_names(&app, &app.agent_key("op1")).await;
    assert!(
        agent_names.iter().any(|n| n == "relay_post_status"),
        "{agent_names:?}"
    );
    for t in PERSONAL_REVIEW_TOOLS {
        assert!(!agent_names.iter().any(|n| n == t), "op1 sees {t}");
    }

    let who = call_tool(&app, &ann, "whoami", json!({})).await;
    assert_eq!(who["isError"], false, "{who}");
    assert_eq!(who["structuredContent"]["role"], "agency", "{who}");

    let id = draft(&app, "mcp review").await;
    let queue = call_tool(
        &app,
        &ann,
        "review_queue",
        json!({"stage": "internal_review"}),
    )
    .await;
    assert_eq!(ids(&queue["structuredContent"]), [id.as_str()], "{queue}");

    let args = json!({"id": id, "to": "approved", "comment": "via mcp", "request_id": "mcp-1"});
    let done = call_tool(&app, &ann, "review_post", args.clone()).await;
    assert_eq!(done["isError"], false, "{done}");
    assert_eq!(
        done["structuredContent"]["post"],
        json!({"id": id, "from": "internal_review", "status": "approved", "planned_at": null})
    );
    assert_eq!(status_of(&app, &id).await, "approved");
    // The same request_id replays; the post was approved once.
    let again = call_tool(&app, &ann, "review_post", args).await;
    assert_eq!(again["isError"], false, "{again}");
    assert_eq!(again["structuredContent"], done["structuredContent"]);
    assert_eq!(member_events(&app, &id).await, 1);
    // request_id plays the REST Idempotency-Key of the same member.
    let rest = transition_idem(
        &app,
        ANN,
        &id,
        "mcp-1",
        json!({"to": "approved", "comment": "via mcp"}),
    )
    .await;
    assert_eq!(rest.status, 200, "{}", rest.text());
    assert_eq!(rest.header("idempotent-replayed"), Some("true"));

    let one = call_tool(&app, &ann, "get_post", json!({"id": id})).await;
    assert_eq!(
        one["structuredContent"]["post"]["status"], "approved",
        "{one}"
    );
    let refused = call_tool(
        &app,
        &ann,
        "review_post",
        json!({"id": id, "to": "cancelled"}),
    )
    .await;
    assert_eq!(refused["isError"], true, "{refused}");
    assert_eq!(refused["body"]["code"], "rejected", "{refused}");
    let published = call_tool(&app, &ann, "published_posts", json!({})).await;
    assert_eq!(
        published["structuredContent"]["posts"],
        json!([]),
        "{published}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_client_without_the_review_right_has_no_review_post_tool() {
    let app = spawn_app().await;
    client_review(&app, true).await;
    let id = draft(&app, "mcp client").await;
    moved(&app, ANN, &id, json!({"to": "client_review"})).await;

    let cid = app.personal_key(CID);
    let names = tool_names(&app, &cid).await;
    assert!(!names.iter().any(|n| n == "review_post"), "{names:?}");
    for t in ["whoami", "review_queue", "get_post", "published_posts"] {
        assert!(names.iter().any(|n| n == t), "cid lacks {t}: {names:?}");
    }
    // Calling it anyway is refused as the REST call is.
    let res = call_tool(
        &app,
        &cid,
        "review_post",
        json!({"id": id, "to": "approved"}),
    )
    .await;
    assert_eq!(res["isError"], true, "{res}");
    assert_eq!(res["body"]["code"], "forbidden", "{res}");
    assert_eq!(status_of(&app, &id).await, "client_review");

    // The client with the review right has the tool and approves.
    let cli = app.personal_key(CLI);
    let names = tool_names(&app, &cli).await;
    assert!(names.iter().any(|n| n == "review_post"), "{names:?}");
    let queue = call_tool(&app, &cli, "review_queue", json!({})).await;
    assert_eq!(ids(&queue["structuredContent"]), [id.as_str()], "{queue}");
    let done = call_tool(
        &app,
        &cli,
        "review_post",
        json!({"id": id, "to": "approved", "request_id": "cli-1"}),
    )
    .await;
    assert_eq!(done["isError"], false, "{done}");
    assert_eq!(status_of(&app, &id).await, "approved");
}

// ---------------------------------------------------------------------------------------------
// More edges

#[tokio::test(flavor = "multi_thread")]
async fn posts_outside_review_move_nowhere_and_wait_in_no_queue() {
    let app = spawn_app().await;
    let op1 = app.agent_key("op1");
    // A draft kept back (submit false).
    let res = app
        .client
        .post(
            &format!("{AGENT}/drafts"),
            &op1,
            &json!({"code": "TW-T001", "body": "kept as draft", "submit": false}),
        )
        .await;
    let only_draft = ok(&res)["draft"]["id"].as_str().unwrap().to_owned();
    assert_eq!(status_of(&app, &only_draft).await, "draft");
    // A post moved to inventory.
    let stocked = draft(&app, "to the shelf").await;
    let res = app
        .client
        .post(
            &format!("{AGENT}/posts/{stocked}/stock"),
            &op1,
            &json!({"reason": "holiday"}),
        )
        .await;
    ok(&res);
    assert_eq!(status_of(&app, &stocked).await, "stocked");
    // An approved post the agent scheduled, and one that failed.
    let scheduled = draft(&app, "scheduled one").await;
    let failed = draft(&app, "failed one").await;
    for id in [&scheduled, &failed] {
        moved(&app, ANN, id, json!({"to": "approved"})).await;
    }
    let res = app
        .client
        .post(
            &format!("{AGENT}/posts/report"),
            &op1,
            &json!({"posts": [
                {"code": "TW-T001", "status": "scheduled", "post_id": scheduled,
                 "scheduled_for": "2026-12-01 10:00", "platform_post_id": "s-1"},
                {"code": "TW-T001", "status": "failed", "post_id": failed,
                 "failure_reason": "the app crashed"},
            ]}),
        )
        .await;
    let v = ok(&res);
    assert_eq!(v["results"][0]["status"], "scheduled", "{v}");
    assert_eq!(v["results"][1]["status"], "failed", "{v}");

    let queue = ok(&user_get(&app, ANN, "/review").await);
    assert!(ids(&queue).is_empty(), "{queue}");
    let events = all_events(&app).await;
    for (id, status) in [
        (&only_draft, "draft"),
        (&stocked, "stocked"),
        (&scheduled, "scheduled"),
        (&failed, "failed"),
    ] {
        for to in [
            "approved",
            "sent_back",
            "rewrite_requested",
            "cancelled",
            "client_review",
        ] {
            let res = transition(&app, ANN, id, json!({"to": to, "comment": "c"})).await;
            assert_error(&format!("{status} -> {to}"), &res, 422, "rejected", None);
        }
        let res = transition(
            &app,
            ANN,
            id,
            json!({"to": "approved", "planned_at": "2026-12-24 10:00"}),
        )
        .await;
        assert_error(
            &format!("{status} rescheduled"),
            &res,
            422,
            "rejected",
            None,
        );
        assert_eq!(status_of(&app, id).await, status);
    }
    assert_eq!(all_events(&app).await, events);
    // What the agents reported shows on the post.
    let v = ok(&user_get(&app, ANN, &format!("/posts/{failed}")).await);
    assert_eq!(
        v["post"]["reported"]["failure_reason"], "the app crashed",
        "{v}"
    );
    let v = ok(&user_get(&app, ANN, &format!("/posts/{scheduled}")).await);
    assert_eq!(
        v["post"]["reported"]["scheduled_for"], "2026-12-01T02:00:00Z",
        "{v}"
    );
    let v = ok(&user_get(&app, ANN, &format!("/posts/{stocked}")).await);
    assert!(v["stocked_at"].is_string(), "{v}");
    assert_eq!(v["stock_reason"], "holiday", "{v}");
}

#[tokio::test(flavor = "multi_thread")]
async fn paging_breaks_ties_of_the_same_time_without_losing_a_post() {
    let app = spawn_app().await;
    let mut posts = Vec::new();
    for i in 0..5 {
        posts.push(
            submit(
                &app,
                "op1",
                json!({"code": "TW-T001", "body": format!("tie {i}"),
                       "planned_at": "2026-12-02 12:00"}),
            )
            .await,
        );
    }
    let mut seen = Vec::new();
    let mut path = "/review?limit=2".to_owned();
    for _ in 0..5 {
        let v = ok(&user_get(&app, ANN, &path).await);
        seen.extend(ids(&v));
        match v["next_cursor"].as_str() {
            Some(c) => path = format!("/review?limit=2&cursor={c}"),
            None => break,
        }
    }
    let mut want = posts.clone();
    want.sort();
    assert_eq!(seen, want, "same time: ordered by id, each once");

    // Published at the same second, newest first then by id.
    let at = Timestamp::from_second((Timestamp::now() - SignedDuration::from_mins(30)).as_second())
        .unwrap();
    for (i, id) in posts.iter().enumerate() {
        moved(&app, ANN, id, json!({"to": "approved"})).await;
        publish(&app, id, "TW-T001", 100 + i as u32, at).await;
    }
    let mut seen = Vec::new();
    let mut path = "/posts/published?limit=2".to_owned();
    for _ in 0..5 {
        let v = ok(&user_get(&app, ANN, &path).await);
        seen.extend(ids(&v));
        match v["next_cursor"].as_str() {
            Some(c) => path = format!("/posts/published?limit=2&cursor={c}"),
            None => break,
        }
    }
    let mut want_desc = want.clone();
    want_desc.reverse();
    assert_eq!(seen, want_desc);

    // since is inclusive and takes any zone (the + sent encoded).
    let taipei = at.to_zoned(jiff::tz::TimeZone::get("Asia/Taipei").unwrap());
    let since = taipei.strftime("%Y-%m-%dT%H:%M:%S%%2B08:00").to_string();
    let v = ok(&user_get(&app, ANN, &format!("/posts/published?since={since}")).await);
    assert_eq!(ids(&v).len(), 5, "since {since}: {v}");
    let after = (at + SignedDuration::from_secs(1)).to_string();
    let v = ok(&user_get(&app, ANN, &format!("/posts/published?since={after}")).await);
    assert!(ids(&v).is_empty(), "{v}");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_relay_for_a_blank_name_names_no_person() {
    let app = spawn_app().await;
    let id = draft(&app, "whose decision").await;
    let events = all_events(&app).await;
    for name in ["   ", "\t"] {
        let res = relay(&app, "op1", &id, relay_body("approved", name, "agency")).await;
        assert_error(
            &format!("on behalf of {name:?}"),
            &res,
            400,
            "invalid_request",
            Some("on_behalf_of.name"),
        );
    }
    let blank = relay(
        &app,
        "op1",
        &id,
        json!({"to": "sent_back", "comment": "  ", "on_behalf_of": {"name": "Ann", "role": "agency"},
               "origin": {"platform": "discord"}}),
    )
    .await;
    assert_error(
        "blank comment",
        &blank,
        400,
        "invalid_request",
        Some("comment"),
    );
    assert_eq!(status_of(&app, &id).await, "internal_review");
    assert_eq!(all_events(&app).await, events);
}

#[tokio::test(flavor = "multi_thread")]
async fn concurrent_reviews_of_one_post_move_it_once() {
    let app = spawn_app().await;
    let id = draft(&app, "race").await;
    let path = format!("{USER}/posts/{id}/transition");
    let mut tasks = Vec::new();
    for who in [ANN, ROOT, ANN, ROOT, ANN, ROOT] {
        let client = app.client.clone();
        let key = app.personal_key(who);
        let path = path.clone();
        tasks.push(tokio::spawn(async move {
            client.post(&path, &key, &json!({"to": "approved"})).await
        }));
    }
    let mut statuses = Vec::new();
    for t in tasks {
        statuses.push(t.await.unwrap().status);
    }
    statuses.sort();
    assert_eq!(
        statuses,
        [200, 422, 422, 422, 422, 422],
        "one approval wins"
    );
    assert_eq!(member_events(&app, &id).await, 1);

    // The same Idempotency-Key at once: one runs, the others replay or wait.
    let other = draft(&app, "race with a key").await;
    let path = format!("{USER}/posts/{other}/transition");
    let mut tasks = Vec::new();
    for _ in 0..6 {
        let client = app.client.clone();
        let key = app.personal_key(ANN);
        let path = path.clone();
        tasks.push(tokio::spawn(async move {
            client
                .post_idem(&path, &key, "race-1", &json!({"to": "cancelled"}))
                .await
        }));
    }
    let mut fresh = 0;
    for t in tasks {
        let res = t.await.unwrap();
        match res.status {
            200 if res.header("idempotent-replayed").is_none() => fresh += 1,
            200 => {}
            409 => assert_eq!(res.code(), "idempotency_in_progress", "{}", res.text()),
            s => panic!("unexpected {s}: {}", res.text()),
        }
    }
    assert_eq!(fresh, 1);
    assert_eq!(member_events(&app, &other).await, 1);
    assert_eq!(status_of(&app, &other).await, "cancelled");
}

#[tokio::test(flavor = "multi_thread")]
async fn the_review_queue_pages_fifty_by_default() {
    let app = spawn_app().await;
    let mut posts = Vec::new();
    for i in 0..51 {
        posts.push(draft(&app, &format!("bulk {i}")).await);
    }
    let first = ok(&user_get(&app, ANN, "/review").await);
    assert_eq!(ids(&first).len(), 50);
    let cursor = first["next_cursor"].as_str().expect("more").to_owned();
    let second = ok(&user_get(&app, ANN, &format!("/review?cursor={cursor}")).await);
    assert_eq!(ids(&second).len(), 1);
    assert_eq!(second["next_cursor"], Value::Null);
    let mut all: Vec<String> = ids(&first).into_iter().chain(ids(&second)).collect();
    all.sort();
    posts.sort();
    assert_eq!(all, posts);
}
