//! Personas through HTTP over the standard tenant: GET /personas/{code}, POST /personas,
//! GET and POST /personas/{code}/images, POST /personas/{code}/proposals, GET
//! /personas/{code}/cast, and the signed persona image links.

use fleetdesk_tests::assert::assert_error;
use fleetdesk_tests::client::Request;
use fleetdesk_tests::{Response, TestApp, spawn_app};
use serde_json::{Value, json};

const AGENT: &str = "/api/agent/v1";
const ANN: &str = "ann@acme.test";
const USER: &str = "/api/user/v1";

// ---------------------------------------------------------------------------------------------
// helpers

async fn get(app: &TestApp, key: &str, path: &str) -> Response {
    app.client.get(&format!("{AGENT}{path}"), key).await
}

async fn post(app: &TestApp, key: &str, path: &str, body: Value) -> Response {
    app.client.post(&format!("{AGENT}{path}"), key, &body).await
}

async fn post_idem(app: &TestApp, key: &str, path: &str, idem: &str, body: Value) -> Response {
    app.client
        .post_idem(&format!("{AGENT}{path}"), key, idem, &body)
        .await
}

#[track_caller]
fn status(res: &Response, want: u16) -> Value {
    assert_eq!(res.status, want, "expected {want}: {}", res.text());
    res.json()
}

/// 400 invalid_request naming `field`.
#[track_caller]
fn assert_invalid(res: &Response, field: &str) {
    let v = assert_error(res, 400, "invalid_request");
    assert_eq!(v["field"], field, "{v}");
}

/// 422 rejected naming `field`.
#[track_caller]
fn assert_rejected(res: &Response, field: &str) {
    let v = assert_error(res, 422, "rejected");
    assert_eq!(v["field"], field, "{v}");
}

/// 404 naming the field whose object is not there.
#[track_caller]
fn assert_missing(res: &Response, field: &str) {
    let v = assert_error(res, 404, "not_found");
    assert_eq!(v["field"], field, "{v}");
}

fn chars(n: usize) -> String {
    "a".repeat(n)
}

fn b64(bytes: &[u8]) -> String {
    use base64::Engine;
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

/// A real opaque PNG of `w` x `h` whose pixels depend on `seed`.
pub(crate) fn png(w: u32, h: u32, seed: u8) -> Vec<u8> {
    let img = image::RgbImage::from_fn(w, h, |x, y| {
        image::Rgb([(x as u8).wrapping_add(seed), (y as u8) ^ seed, seed])
    });
    let mut out = std::io::Cursor::new(Vec::new());
    img.write_to(&mut out, image::ImageFormat::Png)
        .expect("encode png");
    out.into_inner()
}

fn jpeg(w: u32, h: u32, seed: u8) -> Vec<u8> {
    let img = image::RgbImage::from_fn(w, h, |x, _| image::Rgb([x as u8, seed, 9]));
    let mut out = std::io::Cursor::new(Vec::new());
    img.write_to(&mut out, image::ImageFormat::Jpeg)
        .expect("encode jpeg");
    out.into_inner()
}

fn webp(w: u32, h: u32, seed: u8) -> Vec<u8> {
    let img = image::RgbaImage::from_fn(w, h, |x, _| image::Rgba([x as u8, seed, 3, 255]));
    let mut out = std::io::Cursor::new(Vec::new());
    img.write_to(&mut out, image::ImageFormat::WebP)
        .expect("encode webp");
    out.into_inner()
}

fn crc32(bytes: &[u8]) -> u32 {
    let mut crc = 0xFFFF_FFFFu32;
    for &b in bytes {
        crc ^= u32::from(b);
        for _ in 0..8 {
            crc = if crc & 1 == 1 {
                (crc >> 1) ^ 0xEDB8_8320
            } else {
                crc >> 1
            };
        }
    }
    !crc
}

/// A real PNG padded (by a text chunk before its end) to exactly `len` bytes.
fn png_of_len(len: usize, seed: u8) -> Vec<u8> {
    let small = png(4, 4, seed);
    let iend = small.len() - 12;
    let text_len = len - small.len() - 12;
    let mut chunk = b"tEXt".to_vec();
    chunk.extend_from_slice(b"pad\0");
    chunk.resize(4 + text_len, b'.');
    let mut out = small[..iend].to_vec();
    out.extend_from_slice(&(text_len as u32).to_be_bytes());
    out.extend_from_slice(&chunk);
    out.extend_from_slice(&crc32(&chunk).to_be_bytes());
    out.extend_from_slice(&small[iend..]);
    assert_eq!(out.len(), len);
    out
}

/// Approves every image of a persona, as a person's decision will.
async fn approve_all(app: &TestApp) {
    app.sql("UPDATE persona_images SET lock = 'approved', decided_at = now()")
        .await;
}

async fn upload(app: &TestApp, key: &str, code: &str, body: Value) -> Response {
    post(app, key, &format!("/personas/{code}/images"), body).await
}

async fn create(app: &TestApp, key: &str, body: Value) -> Response {
    post(app, key, "/personas", body).await
}

/// The usual answers of a `{code}` lookup for op1: a legacy code without its platform, an
/// unknown code, another agent's account, another workspace's, another organization's (by
/// other1).
async fn assert_lookups(app: &TestApp, method: &str, suffix: &str, body: Option<Value>) {
    let call = |key: String, code: &str| {
        let mut r = Request::new(method, &format!("{AGENT}/personas/{code}{suffix}")).bearer(&key);
        if let Some(b) = &body {
            r = r.json(b);
        }
        r
    };
    let op1 = app.agent_key("op1");
    for (key, code, want, err) in [
        (op1.clone(), "OLD1", 409, "ambiguous_code"),
        (op1.clone(), "NOPE", 404, "not_found"),
        (op1.clone(), "TW-T002", 403, "forbidden"),
        (op1, "JP-T001", 404, "not_found"),
        (app.agent_key("other1"), "TW-I001", 404, "not_found"),
    ] {
        let res = app.client.send(call(key, code)).await;
        assert_error(&res, want, err);
    }
}

/// An Idempotency-Key replayed gives the first answer; other content under it is refused.
async fn assert_idempotency(app: &TestApp, path: &str, body: Value, other: Value, want: u16) {
    let op1 = app.agent_key("op1");
    let key = format!("idem-{path}");
    let first = status(&post_idem(app, &op1, path, &key, body.clone()).await, want);
    let replay = post_idem(app, &op1, path, &key, body).await;
    assert_eq!(status(&replay, want), first);
    assert_eq!(replay.header("idempotent-replayed"), Some("true"));
    assert_error(
        &post_idem(app, &op1, path, &key, other).await,
        422,
        "idempotency_mismatch",
    );
}

/// The persona image files (and thumbnails) in the blob store of the test app, sorted.
fn stored_persona_files(app: &TestApp) -> Vec<String> {
    fn walk(dir: &std::path::Path, out: &mut Vec<String>) {
        let Ok(entries) = std::fs::read_dir(dir) else {
            return;
        };
        for e in entries.flatten() {
            let path = e.path();
            if path.is_dir() {
                walk(&path, out);
            } else if path.to_string_lossy().contains("persona-images") {
                out.push(path.to_string_lossy().into_owned());
            }
        }
    }
    let mut out = Vec::new();
    walk(&app.data_dir, &mut out);
    out.sort();
    out
}

/// Fetches a link of this server without a key.
async fn fetch(app: &TestApp, url: &str) -> Response {
    app.client
        .send(Request::new("GET", &app.client.path_of(url)))
        .await
}

// ---------------------------------------------------------------------------------------------
// GET /personas/{code}

#[tokio::test(flavor = "multi_thread")]
async fn get_persona_answers_the_record_and_its_lookups() {
    let app = spawn_app().await;
    let op1 = app.agent_key("op1");
    let mia = app.persona_id("Mia");
    app.sql(&format!(
        "UPDATE personas SET speech_rules = '{{\"no slang\"}}', forbidden = '{{\"politics\"}}' \
         WHERE id = '{mia}'"
    ))
    .await;
    app.sql(&format!(
        "INSERT INTO persona_facts (persona_id, category, label, value, status) VALUES \
         ('{mia}', 'speech', 'tone', 'short sentences', 'decided'), \
         ('{mia}', 'pet', 'cat', 'Momo', 'decided'), \
         ('{mia}', 'home', 'city', 'Taipei', 'draft'), \
         ('{mia}', 'home', 'street', 'gone', 'refused'), \
         ('{mia}', 'home', 'town', 'old', 'replaced')"
    ))
    .await;

    let v = status(&get(&app, &op1, "/personas/TW-T001").await, 200);
    assert_eq!(v["persona"]["id"], mia.to_string());
    assert_eq!(v["persona"]["name"], "Mia");
    assert_eq!(v["persona"]["project"], "beauty");
    assert_eq!(v["persona"]["setup_complete"], true);
    assert_eq!(v["persona"]["status"], "confirmed");
    let codes: Vec<&str> = v["accounts"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a["code"].as_str().unwrap())
        .collect();
    assert_eq!(codes.len(), 5, "{v}");
    assert!(
        codes.contains(&"TW-K001") && !codes.contains(&"TW-T002"),
        "{codes:?}"
    );
    assert!(v["accounts"][0]["persona"] == "Mia" && v["accounts"][0]["slot_id"].is_string());
    let facts = v["facts"].as_array().unwrap();
    assert_eq!(facts.len(), 2, "{v}");
    assert!(facts.iter().all(|f| f["by_decision"] == true));
    assert_eq!(v["speech_rules"], json!(["no slang", "short sentences"]));
    assert_eq!(v["forbidden"], json!(["politics"]));
    assert_eq!(v["images"], json!([]));
    assert_eq!(v["recent_posts"], json!([]));
    assert_eq!(v["cast"].as_array().unwrap().len(), 7);
    assert_eq!(v["cast"][0]["wiki_entry_id"], Value::Null);
    assert_eq!(v["images_expire_in_seconds"], 900);

    // Draft facts only with include=drafts, after the facts by decision.
    let v = status(
        &get(&app, &op1, "/personas/TW-T001?include=drafts").await,
        200,
    );
    let facts = v["facts"].as_array().unwrap();
    assert_eq!(facts.len(), 3, "{v}");
    assert_eq!(facts[2]["label"], "city");
    assert_eq!(facts[2]["by_decision"], false);
    assert_invalid(
        &get(&app, &op1, "/personas/TW-T001?include=all").await,
        "include",
    );

    // posts: 0-30.
    assert_eq!(
        status(&get(&app, &op1, "/personas/TW-T001?posts=0").await, 200)["recent_posts"],
        json!([])
    );
    status(&get(&app, &op1, "/personas/TW-T001?posts=30").await, 200);
    assert_invalid(
        &get(&app, &op1, "/personas/TW-T001?posts=31").await,
        "posts",
    );
    assert_invalid(
        &get(&app, &op1, "/personas/TW-T001?posts=-1").await,
        "posts",
    );

    // Legacy codes, with the platform when ambiguous; another agent's persona in the
    // workspace: 403; another workspace's or organization's: 404.
    assert_lookups(&app, "GET", "", None).await;
    let v = status(
        &get(&app, &op1, "/personas/OLD1?platform=tiktok").await,
        200,
    );
    assert_eq!(v["persona"]["name"], "Mia");
    let zoe = status(
        &get(&app, &app.agent_key("other1"), "/personas/TW-T001").await,
        200,
    );
    assert_eq!(zoe["persona"]["name"], "Zoe");
    assert_eq!(zoe["facts"], json!([]));
    // A community agent lacks personas:read.
    assert_error(
        &get(&app, &app.agent_key("bot"), "/personas/TW-T001").await,
        403,
        "forbidden",
    );

    // A retired persona is hidden.
    app.sql(&format!(
        "UPDATE personas SET status = 'retired' WHERE id = '{mia}'"
    ))
    .await;
    assert_error(
        &get(&app, &op1, "/personas/TW-T001").await,
        404,
        "not_found",
    );
    assert_error(
        &get(&app, &op1, "/personas/TW-T001/cast").await,
        404,
        "not_found",
    );
    assert_error(
        &get(&app, &op1, "/personas/TW-T001/images").await,
        404,
        "not_found",
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn recent_posts_are_the_newest_published_ones_of_the_persona() {
    let app = spawn_app().await;
    let op1 = app.agent_key("op1");
    let ann = app.personal_key(ANN);
    let mut ids = Vec::new();
    for n in 0..3 {
        let d = status(
            &post(
                &app,
                &op1,
                "/drafts",
                json!({"code": "TW-T001", "body": format!("post {n}")}),
            )
            .await,
            201,
        );
        let id = d["draft"]["id"].as_str().unwrap().to_owned();
        status(
            &app.client
                .post(
                    &format!("{USER}/posts/{id}/transition"),
                    &ann,
                    &json!({"to": "approved"}),
                )
                .await,
            200,
        );
        let r = status(
            &post(
                &app,
                &op1,
                "/posts/report",
                json!({"posts": [{"code": "TW-T001", "status": "published", "post_id": id,
                    "platform_post_id": format!("p{n}"),
                    "permalink": format!("https://threads.net/p/{n}"),
                    "published_at": format!("2026-11-2{n}T10:00:00Z")}]}),
            )
            .await,
            200,
        );
        assert_eq!(r["results"][0]["status"], "published", "{r}");
        ids.push(id);
    }
    let v = status(&get(&app, &op1, "/personas/TW-I001?posts=2").await, 200);
    let posts = v["recent_posts"].as_array().unwrap();
    assert_eq!(posts.len(), 2, "{v}");
    assert_eq!(posts[0]["id"], ids[2]);
    assert_eq!(posts[1]["id"], ids[1]);
    assert_eq!(posts[0]["code"], "TW-T001");
    assert_eq!(posts[0]["platform"], "threads");
    assert_eq!(posts[0]["body"], "post 2");
    assert_eq!(posts[0]["permalink"], "https://threads.net/p/2");
    assert!(posts[0]["published_at"].is_string());
    // Leo's agent sees none of Mia's posts.
    let leo = status(
        &get(&app, &app.agent_key("op2"), "/personas/TW-T002").await,
        200,
    );
    assert_eq!(leo["recent_posts"], json!([]));

    // propose_fact's post_id: a post of this persona only (404 naming post_id otherwise).
    let path = "/personas/TW-T001/proposals";
    let body = |post_id: &str| {
        json!({"kind": "contradiction", "label": "age", "value": "the post says 30",
               "post_id": post_id})
    };
    let made = status(&post(&app, &op1, path, body(&ids[0])).await, 201);
    assert_eq!(made["kind"], "contradiction");
    assert_eq!(
        app.count(&format!(
            "SELECT count(*) AS n FROM decisions WHERE post_id = '{}' AND kind = 'contradiction'",
            ids[0]
        ))
        .await,
        1
    );
    // Mia's post (op1's) named by Leo's agent: not the caller's post, 403.
    let v = assert_error(
        &post(
            &app,
            &app.agent_key("op2"),
            "/personas/TW-T002/proposals",
            body(&ids[0]),
        )
        .await,
        403,
        "forbidden",
    );
    assert_eq!(v["field"], "post_id");
    // Unknown, or another workspace's (jp1) or organization's (other1): 404.
    for (key, code, post_id) in [
        (
            op1.clone(),
            "TW-T001",
            "00000000-0000-4000-8000-000000000000",
        ),
        (app.agent_key("jp1"), "JP-T001", ids[0].as_str()),
        (app.agent_key("other1"), "TW-T001", ids[0].as_str()),
    ] {
        let v = assert_error(
            &post(
                &app,
                &key,
                &format!("/personas/{code}/proposals"),
                body(post_id),
            )
            .await,
            404,
            "not_found",
        );
        assert_eq!(v["field"], "post_id", "{code}");
    }
    // op1's own post, proposed about another of op1's personas (Leo, given to op1): 422.
    app.sql(&format!(
        "UPDATE personas SET agent_id = '{}' WHERE name = 'Leo'",
        app.agent_id("op1")
    ))
    .await;
    assert_rejected(
        &post(&app, &op1, "/personas/TW-T002/proposals", body(&ids[0])).await,
        "post_id",
    );
}

// ---------------------------------------------------------------------------------------------
// POST /personas

#[tokio::test(flavor = "multi_thread")]
async fn create_persona_checks_every_field_and_opens_its_decision() {
    let app = spawn_app().await;
    let op1 = app.agent_key("op1");
    let op1_id = app.agent_id("op1");

    // Every limit, and one past.
    let full = json!({"name": chars(80), "project": "beauty", "track": chars(200),
        "background": chars(2000), "bio": chars(2000), "voice": chars(4000)});
    let v = status(&create(&app, &op1, full.clone()).await, 201);
    assert_eq!(v["created"], true);
    assert_eq!(v["project"], "beauty");
    assert_eq!(v["setup_complete"], true);
    let id = v["id"].as_str().unwrap().to_owned();
    let issue = v["issue_id"].as_str().unwrap().to_owned();
    for (field, n) in [
        ("name", 81),
        ("track", 201),
        ("background", 2001),
        ("bio", 2001),
        ("voice", 4001),
        ("project", 201),
    ] {
        let mut b = json!({"name": "Past", "project": "beauty"});
        b[field] = json!(chars(n));
        assert_invalid(&create(&app, &op1, b).await, field);
    }
    assert_invalid(&create(&app, &op1, json!({"name": ""})).await, "name");
    assert_invalid(
        &create(&app, &op1, json!({"name": "  ", "project": "beauty"})).await,
        "name",
    );
    assert_invalid(
        &create(&app, &op1, json!({"project": "beauty"})).await,
        "name",
    );

    // The row and its decision, in the one format.
    assert_eq!(
        app.count(&format!(
            "SELECT count(*) AS n FROM personas WHERE id = '{id}' AND status = 'pending' \
             AND agent_id = '{op1_id}' AND created_by_agent = '{op1_id}'"
        ))
        .await,
        1
    );
    assert_eq!(
        app.count(&format!(
            "SELECT count(*) AS n FROM decisions WHERE id = '{issue}' AND kind = 'persona_new' \
             AND status = 'open' AND persona_id = '{id}' AND opened_by_type = 'agent' \
             AND opened_by_agent = '{op1_id}' AND options = '[]' AND question IS NULL \
             AND detail = '{{\"project\": \"beauty\"}}' \
             AND title = 'New persona to confirm: {}'",
            chars(80)
        ))
        .await,
        1
    );

    // The same project and name again: 200, created false, the same decision.
    let again = status(&create(&app, &op1, full).await, 200);
    assert_eq!(again["created"], false);
    assert_eq!(again["id"], id.as_str());
    assert_eq!(again["issue_id"], issue.as_str());

    // setup_complete needs bio and voice that say something.
    let v = status(
        &create(
            &app,
            &op1,
            json!({"name": "Ava", "project": "food", "bio": "b", "voice": " "}),
        )
        .await,
        201,
    );
    assert_eq!(v["setup_complete"], false);
    assert_eq!(v["project"], "food");

    // project: required when the workspace has several (422); another organization's or
    // none is 404, another workspace's of the organization 422.
    assert_rejected(&create(&app, &op1, json!({"name": "Bea"})).await, "project");
    assert_missing(
        &create(&app, &op1, json!({"name": "Bea", "project": "general"})).await,
        "project",
    );
    assert_rejected(
        &create(
            &app,
            &app.agent_key("jp1"),
            json!({"name": "Bea", "project": "food"}),
        )
        .await,
        "project",
    );
    assert_missing(
        &create(&app, &op1, json!({"name": "Bea", "project": "nope"})).await,
        "project",
    );
    // Japan has one project: it may be omitted there.
    let jp = status(
        &create(&app, &app.agent_key("jp1"), json!({"name": "Bea"})).await,
        201,
    );
    assert_eq!(jp["project"], "beauty");

    // A live persona of that name in the project that is not this agent's: 422.
    assert_rejected(
        &create(
            &app,
            &app.agent_key("op2"),
            json!({"name": "Ava", "project": "food"}),
        )
        .await,
        "name",
    );
    assert_rejected(
        &create(&app, &op1, json!({"name": "Leo", "project": "food"})).await,
        "name",
    );
    // The same name in another organization is another persona.
    let other = status(
        &create(&app, &app.agent_key("other1"), json!({"name": "Ava"})).await,
        201,
    );
    assert_eq!(other["project"], "general");
    // A retired persona's name is free again.
    app.sql("UPDATE personas SET status = 'retired' WHERE name = 'Ava' AND agent_id IS NOT NULL")
        .await;
    status(
        &create(
            &app,
            &app.agent_key("op2"),
            json!({"name": "Ava", "project": "food"}),
        )
        .await,
        201,
    );

    // Idempotency-Key: replay and mismatch.
    assert_idempotency(
        &app,
        "/personas",
        json!({"name": "Cid", "project": "beauty"}),
        json!({"name": "Dee", "project": "beauty"}),
        201,
    )
    .await;
}

// ---------------------------------------------------------------------------------------------
// Images

#[tokio::test(flavor = "multi_thread")]
async fn upload_persona_image_stores_it_with_a_real_thumbnail_and_one_decision() {
    let app = spawn_app().await;
    let op1 = app.agent_key("op1");
    let mia = app.persona_id("Mia");
    let big = png(1000, 600, 1);
    // The prompt is a text found nowhere else, so no answer can carry it under any name.
    let marker = "zq-PROMPT-MARKER-7f3a91";
    let prompt = format!("{marker}{}", chars(8000 - marker.len()));
    let leaks = |v: &Value| v.to_string().contains(marker);

    let body = json!({"data": format!("data:image/png;base64,{}", b64(&big)),
        "category": "portrait", "caption": chars(500), "prompt": prompt, "character": "momo"});
    let v = status(&upload(&app, &op1, "TW-T001", body.clone()).await, 201);
    assert!(!leaks(&v), "{v}");
    let image = &v["image"];
    assert_eq!(image["created"], true);
    assert_eq!(image["lock"], "draft");
    assert_eq!(image["code"], "TW-T001");
    assert_eq!(image["character"], "momo");
    let id = image["id"].as_str().unwrap().to_owned();
    // The same bytes again (by a legacy code, another category): 200, no extra row.
    let again = post(
        &app,
        &op1,
        "/personas/OLD1/images?platform=threads",
        json!({"data": b64(&big), "category": "other"}),
    )
    .await;
    let again = status(&again, 200);
    assert!(!leaks(&again));
    // The person deciding sees the drafts, never their prompt.
    let decisions = status(
        &app.client
            .get(&format!("{USER}/decisions"), &app.personal_key(ANN))
            .await,
        200,
    );
    assert!(
        decisions.to_string().contains(id.as_str()),
        "the images decision lists the image: {decisions}"
    );
    assert!(!leaks(&decisions));
    assert_eq!(again["image"]["id"], id.as_str());
    assert_eq!(again["image"]["created"], false);
    assert_eq!(again["image"]["code"], "TW-L001");
    assert_eq!(
        app.count(&format!(
            "SELECT count(*) AS n FROM persona_images WHERE persona_id = '{mia}'"
        ))
        .await,
        1
    );

    // JPEG and WebP, judged from the bytes; every image joins the one open decision.
    let v = status(
        &upload(
            &app,
            &op1,
            "TW-T001",
            json!({"data": b64(&jpeg(40, 30, 2)), "category": "avatar"}),
        )
        .await,
        201,
    );
    assert_eq!(v["image"]["character"], Value::Null);
    status(
        &upload(
            &app,
            &op1,
            "TW-I001",
            json!({"data": b64(&webp(20, 20, 3))}),
        )
        .await,
        201,
    );
    assert_eq!(
        app.count(&format!(
            "SELECT count(*) AS n FROM decisions WHERE persona_id = '{mia}' \
             AND kind = 'persona_images' AND status = 'open' AND options = '[]' \
             AND title = 'Images of Mia awaiting approval' AND opened_by_type = 'agent'"
        ))
        .await,
        1
    );
    assert_eq!(
        app.count(&format!(
            "SELECT count(*) AS n FROM persona_images i JOIN decisions d ON d.id = i.decision_id \
             WHERE i.persona_id = '{mia}' AND d.kind = 'persona_images' AND i.lock = 'draft'"
        ))
        .await,
        3
    );
    assert_eq!(
        app.count(&format!(
            "SELECT count(*) AS n FROM persona_images WHERE persona_id = '{mia}' \
             AND category = 'other' AND mime_type = 'image/webp'"
        ))
        .await,
        1
    );
    // A decided images decision: the next image opens a new one.
    app.sql("UPDATE decisions SET status = 'resolved' WHERE kind = 'persona_images'")
        .await;
    status(
        &upload(&app, &op1, "TW-T001", json!({"data": b64(&png(8, 8, 4))})).await,
        201,
    );
    assert_eq!(
        app.count(&format!(
            "SELECT count(*) AS n FROM decisions WHERE persona_id = '{mia}' \
             AND kind = 'persona_images'"
        ))
        .await,
        2
    );

    // Drafts are not listed; approved ones are, with signed links, and never the prompt.
    let v = status(&get(&app, &op1, "/personas/TW-T001/images").await, 200);
    assert_eq!(v["images"], json!([]));
    approve_all(&app).await;
    let v = status(&get(&app, &op1, "/personas/TW-T001/images").await, 200);
    assert_eq!(v["images_expire_in_seconds"], 900);
    assert_eq!(v["images"].as_array().unwrap().len(), 4, "{v}");
    assert!(!v.to_string().contains("prompt"));
    assert!(!leaks(&v));
    let first = &v["images"][0];
    assert_eq!(first["id"], id.as_str());
    assert_eq!(first["category"], "portrait");
    assert_eq!(first["caption"], chars(500));
    assert_eq!(first["mime_type"], "image/png");
    assert_eq!(first["lock"], "approved");
    assert_eq!(first["code"], "TW-T001");
    assert_eq!(first["character"], "momo");
    let v = status(
        &get(&app, &op1, "/personas/TW-T001/images?category=avatar").await,
        200,
    );
    assert_eq!(v["images"].as_array().unwrap().len(), 1);
    assert_eq!(v["images"][0]["mime_type"], "image/jpeg");
    assert_invalid(
        &get(&app, &op1, "/personas/TW-T001/images?category=selfie").await,
        "category",
    );
    let persona = status(&get(&app, &op1, "/personas/TW-T001").await, 200);
    assert_eq!(persona["images"].as_array().unwrap().len(), 4);
    assert!(!persona.to_string().contains("prompt"));
    assert!(!leaks(&persona));
    let cast = status(&get(&app, &op1, "/personas/TW-T001/cast").await, 200);
    assert!(
        cast.to_string().contains(id.as_str()),
        "momo's images list the image: {cast}"
    );
    assert!(!leaks(&cast));

    // The file as stored, and a real small thumbnail, with the file headers.
    let file = fetch(&app, first["url"].as_str().unwrap()).await;
    assert_eq!(file.status, 200, "{}", file.text());
    assert_eq!(file.body, big);
    assert_eq!(file.header("content-type"), Some("image/png"));
    assert_eq!(file.header("x-content-type-options"), Some("nosniff"));
    assert!(
        file.header("content-security-policy")
            .unwrap()
            .contains("sandbox")
    );
    let thumb = fetch(&app, first["thumb_url"].as_str().unwrap()).await;
    assert_eq!(thumb.status, 200, "{}", thumb.text());
    assert_eq!(thumb.header("x-content-type-options"), Some("nosniff"));
    let decoded = image::load_from_memory(&thumb.body).expect("the thumbnail decodes");
    assert_eq!((decoded.width(), decoded.height()), (320, 192));

    // Tampered links are refused.
    let url = first["url"].as_str().unwrap();
    let path = app.client.path_of(url);
    let (head, sig) = path.split_once("&s=").unwrap();
    let e: i64 = head.rsplit("e=").next().unwrap().parse().unwrap();
    for bad in [
        format!("{head}&s=AAAA{}", &sig[4..]),
        format!("{}e={}&s={sig}", head.rsplit_once("e=").unwrap().0, e + 60),
        path.replace("/file?", "/thumb?"),
        path.replace("/files/persona/", "/files/"),
        head.to_owned(),
    ] {
        let res = app.client.send(Request::new("GET", &bad)).await;
        assert_eq!(res.status, 403, "{bad}: {}", res.text());
        assert_eq!(res.header("x-content-type-options"), Some("nosniff"));
    }
    // A refused image is no longer served, even through a link made before.
    app.sql(&format!(
        "UPDATE persona_images SET lock = 'refused' WHERE id = '{id}'"
    ))
    .await;
    assert_error(&fetch(&app, url).await, 404, "not_found");
}

#[tokio::test(flavor = "multi_thread")]
async fn upload_persona_image_refuses_what_breaks_a_rule() {
    let app = spawn_app().await;
    let op1 = app.agent_key("op1");
    let data = b64(&png(4, 4, 7));

    // 5 MB exactly is taken; one byte more is 413 naming data.
    let at = png_of_len(5 * 1024 * 1024, 1);
    status(
        &upload(&app, &op1, "TW-T001", json!({"data": b64(&at)})).await,
        201,
    );
    let past = png_of_len(5 * 1024 * 1024 + 1, 2);
    let v = assert_error(
        &upload(&app, &op1, "TW-T001", json!({"data": b64(&past)})).await,
        413,
        "payload_too_large",
    );
    assert_eq!(v["field"], "data");

    // Not an image, not base64, empty, missing.
    assert_rejected(
        &upload(
            &app,
            &op1,
            "TW-T001",
            json!({"data": b64(b"GIF89a not taken")}),
        )
        .await,
        "data",
    );
    assert_invalid(
        &upload(&app, &op1, "TW-T001", json!({"data": "***"})).await,
        "data",
    );
    assert_invalid(
        &upload(&app, &op1, "TW-T001", json!({"data": ""})).await,
        "data",
    );
    assert_invalid(&upload(&app, &op1, "TW-T001", json!({})).await, "data");

    // Field limits, and one past.
    for (field, value) in [
        ("caption", json!(chars(501))),
        ("prompt", json!(chars(8001))),
        ("character", json!(chars(25))),
        ("character", json!("")),
        ("category", json!("selfie")),
    ] {
        let mut b = json!({"data": data});
        b[field] = value;
        assert_invalid(&upload(&app, &op1, "TW-T001", b).await, field);
    }
    // A character that is not of the persona's cast (Leo's chef is not Mia's): refused
    // before anything is stored.
    let stored_before = stored_persona_files(&app);
    assert_rejected(
        &upload(
            &app,
            &op1,
            "TW-T001",
            json!({"data": b64(&png(6, 6, 11)), "character": "chef"}),
        )
        .await,
        "character",
    );
    assert_eq!(stored_persona_files(&app), stored_before);
    assert_rejected(
        &upload(
            &app,
            &op1,
            "TW-T001",
            json!({"data": data, "character": "chef"}),
        )
        .await,
        "character",
    );
    let v = status(
        &upload(
            &app,
            &app.agent_key("op2"),
            "TW-T002",
            json!({"data": data, "character": "chef"}),
        )
        .await,
        201,
    );
    assert_eq!(v["image"]["character"], "chef");
    assert_eq!(
        app.count("SELECT count(*) AS n FROM persona_images").await,
        2
    );

    // Lookups and isolation.
    assert_lookups(&app, "POST", "/images", Some(json!({"data": data}))).await;

    // Idempotency-Key: replay and mismatch.
    assert_idempotency(
        &app,
        "/personas/TW-T001/images",
        json!({"data": b64(&png(5, 5, 9))}),
        json!({"data": data}),
        201,
    )
    .await;
}

// ---------------------------------------------------------------------------------------------
// POST /personas/{code}/proposals

#[tokio::test(flavor = "multi_thread")]
async fn propose_fact_opens_decisions_and_never_decides() {
    let app = spawn_app().await;
    let op1 = app.agent_key("op1");
    let op1_id = app.agent_id("op1");
    let mia = app.persona_id("Mia");
    let path = "/personas/TW-T001/proposals";

    let fact = json!({"kind": "fact", "category": "pet", "label": chars(200),
        "value": chars(2000), "detail": chars(2000)});
    let v = status(&post(&app, &op1, path, fact.clone()).await, 201);
    assert_eq!(v["kind"], "fact");
    assert_eq!(v["created"], true);
    assert_eq!(v["status"], "draft");
    let fact_id = v["id"].as_str().unwrap().to_owned();
    let issue = v["issue_id"].as_str().unwrap().to_owned();
    assert_eq!(
        app.count(&format!(
            "SELECT count(*) AS n FROM persona_facts WHERE id = '{fact_id}' \
             AND persona_id = '{mia}' AND status = 'draft' AND decision_id = '{issue}' \
             AND proposed_by_agent = '{op1_id}' AND category = 'pet'"
        ))
        .await,
        1
    );
    assert_eq!(
        app.count(&format!(
            "SELECT count(*) AS n FROM decisions WHERE id = '{issue}' AND kind = 'fact_proposal' \
             AND status = 'open' AND persona_id = '{mia}' AND options = '[]' \
             AND detail->>'fact_id' = '{fact_id}' AND detail->>'category' = 'pet' \
             AND opened_by_agent = '{op1_id}'"
        ))
        .await,
        1
    );
    // Resent (another detail does not make it another proposal): 200, the same ids.
    let mut resent = fact.clone();
    resent["detail"] = json!("another basis");
    let again = status(&post(&app, &op1, path, resent).await, 200);
    assert_eq!(again["created"], false);
    assert_eq!(again["id"], fact_id.as_str());
    assert_eq!(again["issue_id"], issue.as_str());
    // Never an official setting: get_persona shows it only as a draft.
    let p = status(&get(&app, &op1, "/personas/TW-T001").await, 200);
    assert_eq!(p["facts"], json!([]));
    let p = status(
        &get(&app, &op1, "/personas/TW-T001?include=drafts").await,
        200,
    );
    assert_eq!(p["facts"][0]["id"], fact_id.as_str());
    assert_eq!(p["facts"][0]["by_decision"], false);
    // Once decided, the same proposal answers the decided fact; once refused, a new one.
    app.sql(&format!(
        "UPDATE persona_facts SET status = 'decided' WHERE id = '{fact_id}'"
    ))
    .await;
    let decided = status(&post(&app, &op1, path, fact.clone()).await, 200);
    assert_eq!(decided["status"], "decided");
    app.sql(&format!(
        "UPDATE persona_facts SET status = 'refused' WHERE id = '{fact_id}'"
    ))
    .await;
    let new = status(&post(&app, &op1, path, fact).await, 201);
    assert_ne!(new["id"], fact_id.as_str());

    // A contradiction: a decision asking what should change.
    let c = json!({"kind": "contradiction", "label": "age", "value": "bio says 25, post says 30"});
    let v = status(&post(&app, &op1, path, c.clone()).await, 201);
    assert_eq!(v["kind"], "contradiction");
    assert_eq!(v["status"], "open");
    assert_eq!(v["id"], v["issue_id"]);
    let cid = v["id"].as_str().unwrap().to_owned();
    assert_eq!(
        app.count(&format!(
            "SELECT count(*) AS n FROM decisions WHERE id = '{cid}' AND kind = 'contradiction' \
             AND question = 'What should change?' \
             AND options = '[\"change_bio\", \"delete_post\", \"keep\"]' \
             AND detail->>'label' = 'age' AND post_id IS NULL"
        ))
        .await,
        1
    );
    let again = status(&post(&app, &op1, path, c).await, 200);
    assert_eq!(again["id"], cid.as_str());
    assert_eq!(again["created"], false);

    // The conditional category, blank text, limits and one past.
    for (body, field) in [
        (
            json!({"kind": "fact", "label": "l", "value": "v"}),
            "category",
        ),
        (
            json!({"kind": "contradiction", "category": "pet", "label": "l", "value": "v"}),
            "category",
        ),
        (
            json!({"kind": "fact", "category": "cats", "label": "l", "value": "v"}),
            "category",
        ),
        (
            json!({"kind": "rumour", "label": "l", "value": "v"}),
            "kind",
        ),
    ] {
        assert_invalid(&post(&app, &op1, path, body).await, field);
    }
    for (field, value) in [
        ("label", json!(chars(201))),
        ("label", json!("")),
        ("label", json!("   ")),
        ("value", json!(chars(2001))),
        ("value", json!("")),
        ("value", json!("\t")),
        ("detail", json!(chars(2001))),
        ("post_id", json!("not-a-uuid")),
    ] {
        let mut b = json!({"kind": "contradiction", "label": "l", "value": "v"});
        b[field] = value;
        assert_invalid(&post(&app, &op1, path, b).await, field);
    }

    // Lookups and isolation.
    let c = json!({"kind": "contradiction", "label": "x", "value": "y"});
    assert_lookups(&app, "POST", "/proposals", Some(c.clone())).await;

    // Idempotency-Key: replay and mismatch.
    let other = json!({"kind": "contradiction", "label": "x", "value": "z"});
    assert_idempotency(&app, path, c, other, 201).await;
}

// ---------------------------------------------------------------------------------------------
// GET /personas/{code}/cast

#[tokio::test(flavor = "multi_thread")]
async fn list_cast_gives_each_character_at_most_six_approved_images() {
    let app = spawn_app().await;
    let op1 = app.agent_key("op1");
    for n in 0..8u8 {
        status(
            &upload(&app, &op1, "TW-T001", json!({"data": b64(&png(6, 6, n)), "character": "momo", "caption": format!("m{n}")}))
                .await,
            201,
        );
    }
    status(
        &upload(
            &app,
            &op1,
            "TW-T001",
            json!({"data": b64(&png(6, 6, 100)), "character": "lulu"}),
        )
        .await,
        201,
    );
    // Before approval: no images.
    let v = status(&get(&app, &op1, "/personas/TW-T001/cast").await, 200);
    assert!(
        v["cast"]
            .as_array()
            .unwrap()
            .iter()
            .all(|c| c["images"] == json!([]))
    );
    approve_all(&app).await;
    app.sql("UPDATE persona_images SET lock = 'refused' WHERE character = 'lulu'")
        .await;

    let v = status(
        &get(&app, &op1, "/personas/OLD1/cast?platform=threads").await,
        200,
    );
    assert_eq!(v["code"], "TW-L001");
    assert_eq!(v["persona"], "Mia");
    assert_eq!(v["images_expire_in_seconds"], 900);
    let cast = v["cast"].as_array().unwrap();
    assert_eq!(cast.len(), 7);
    let momo = cast.iter().find(|c| c["code"] == "momo").unwrap();
    assert_eq!(momo["name"], "Momo");
    assert_eq!(momo["summary"], "grey cat");
    assert_eq!(momo["wiki_entry_id"], Value::Null);
    assert_eq!(momo["wiki_title"], Value::Null);
    let images = momo["images"].as_array().unwrap();
    assert_eq!(images.len(), 6);
    assert_eq!(images[0]["caption"], "m0");
    assert_eq!(images[0]["category"], "other");
    assert_eq!(images[0]["mime_type"], "image/png");
    let served = fetch(&app, images[0]["url"].as_str().unwrap()).await;
    assert_eq!(served.status, 200);
    let lulu = cast.iter().find(|c| c["code"] == "lulu").unwrap();
    assert_eq!(lulu["images"], json!([]));
    // get_persona's cast is the same list.
    let p = status(&get(&app, &op1, "/personas/TW-T001").await, 200);
    assert_eq!(p["cast"].as_array().unwrap().len(), 7);
    assert_eq!(p["images"].as_array().unwrap().len(), 8);

    // Lookups and isolation.
    assert_lookups(&app, "GET", "/cast", None).await;
    assert_lookups(&app, "GET", "/images", None).await;
    let zoe = status(
        &get(&app, &app.agent_key("other1"), "/personas/TW-T001/cast").await,
        200,
    );
    assert_eq!(zoe["persona"], "Zoe");
    assert_eq!(zoe["cast"], json!([]));
    let leo = status(
        &get(&app, &app.agent_key("op2"), "/personas/TW-T002/cast").await,
        200,
    );
    assert_eq!(leo["cast"][0]["code"], "chef");
    assert_eq!(leo["cast"][0]["images"], json!([]));
    // Another agent's images never show.
    let leo_images = status(
        &get(&app, &app.agent_key("op2"), "/personas/TW-T002/images").await,
        200,
    );
    assert_eq!(leo_images["images"], json!([]));
}

#[tokio::test(flavor = "multi_thread")]
async fn images_uploaded_at_once_join_one_decision_and_the_same_bytes_one_row() {
    let app = spawn_app().await;
    let op1 = app.agent_key("op1");
    let mia = app.persona_id("Mia");
    let same = b64(&png(9, 9, 42));
    let calls = (0..6u8).map(|n| {
        let data = if n % 2 == 0 {
            same.clone()
        } else {
            b64(&png(9, 9, n))
        };
        let (app, op1) = (&app, &op1);
        async move { upload(app, op1, "TW-T001", json!({"data": data})).await }
    });
    let answers = futures_util::future::join_all(calls).await;
    let created = answers
        .iter()
        .map(|r| {
            assert!(r.status == 200 || r.status == 201, "{}", r.text());
            r.json()["image"]["created"] == true
        })
        .filter(|c| *c)
        .count();
    assert_eq!(created, 4);
    assert_eq!(
        app.count(&format!(
            "SELECT count(*) AS n FROM persona_images WHERE persona_id = '{mia}'"
        ))
        .await,
        4
    );
    assert_eq!(
        app.count(&format!(
            "SELECT count(*) AS n FROM decisions WHERE persona_id = '{mia}' AND kind = 'persona_images'"
        ))
        .await,
        1
    );
}

// ---------------------------------------------------------------------------------------------
// Trimming, resends that store nothing, recent posts

#[tokio::test(flavor = "multi_thread")]
async fn names_projects_labels_and_values_are_matched_trimmed() {
    let app = spawn_app().await;
    let op1 = app.agent_key("op1");
    let mia = app.persona_id("Mia");

    // " Mia " in " beauty " is the tenant's Mia: 200, created false, no second live persona.
    let v = status(
        &create(&app, &op1, json!({"name": " Mia ", "project": " beauty "})).await,
        200,
    );
    assert_eq!(v["created"], false, "{v}");
    assert_eq!(v["id"], mia.to_string());
    assert_eq!(v["project"], "beauty");
    assert_eq!(v["issue_id"], Value::Null);
    assert_eq!(
        app.count("SELECT count(*) AS n FROM personas WHERE name LIKE '%Mia%'")
            .await,
        1
    );
    // A new name is stored trimmed, and found again with other spaces.
    let v = status(
        &create(&app, &op1, json!({"name": "\tAva ", "project": "beauty"})).await,
        201,
    );
    let ava = v["id"].as_str().unwrap().to_owned();
    // The name as stored, and in its decision's title.
    let stored = format!(
        "SELECT count(*) AS n FROM personas pe JOIN decisions d ON d.persona_id = pe.id \
         WHERE pe.id = '{ava}' AND pe.name = 'Ava' AND d.title = 'New persona to confirm: Ava'"
    );
    assert_eq!(app.count(&stored).await, 1);
    let again = status(
        &create(&app, &op1, json!({"name": "Ava", "project": "beauty"})).await,
        200,
    );
    assert_eq!(again["id"], ava.as_str());

    // A proposal resent with spaces around label and value is the same proposal.
    let path = "/personas/TW-T001/proposals";
    for kind in ["fact", "contradiction"] {
        let body = |label: &str, value: &str| {
            let mut b = json!({"kind": kind, "label": label, "value": value});
            if kind == "fact" {
                b["category"] = json!("pet");
            }
            b
        };
        let first = status(&post(&app, &op1, path, body("cat", "Momo")).await, 201);
        let again = status(
            &post(&app, &op1, path, body("  cat ", "\tMomo  ")).await,
            200,
        );
        assert_eq!(again["created"], false, "{kind}");
        assert_eq!(again["id"], first["id"], "{kind}");
        // Stored trimmed: spaces first, then the plain text, is still the one proposal.
        let label = format!("{kind} label");
        let spaced = status(
            &post(&app, &op1, path, body(&format!(" {label} "), " v ")).await,
            201,
        );
        let plain = status(&post(&app, &op1, path, body(&label, "v")).await, 200);
        assert_eq!(plain["id"], spaced["id"], "{kind}");
    }
    assert_eq!(
        app.count(&format!(
            "SELECT count(*) AS n FROM persona_facts WHERE persona_id = '{mia}' \
             AND label IN ('cat', 'fact label') AND value IN ('Momo', 'v')"
        ))
        .await,
        2
    );
    assert_eq!(
        app.count(&format!(
            "SELECT count(*) AS n FROM decisions WHERE persona_id = '{mia}' \
             AND kind = 'contradiction' AND detail->>'label' IN ('cat', 'contradiction label') \
             AND detail->>'value' IN ('Momo', 'v')"
        ))
        .await,
        2
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_resent_image_is_answered_without_storing_its_files_again() {
    let app = spawn_app().await;
    let op1 = app.agent_key("op1");
    let bytes = png(64, 48, 21);
    let v = status(
        &upload(&app, &op1, "TW-T001", json!({"data": b64(&bytes)})).await,
        201,
    );
    let id = v["image"]["id"].as_str().unwrap().to_owned();
    let files = stored_persona_files(&app);
    assert_eq!(files.len(), 2, "the file and its thumbnail: {files:?}");
    // Remove them: a resend that wrote them again would bring them back.
    for f in &files {
        std::fs::remove_file(f).unwrap();
    }
    let again = status(
        &upload(
            &app,
            &op1,
            "TW-T001",
            json!({"data": b64(&bytes), "character": "momo"}),
        )
        .await,
        200,
    );
    assert_eq!(again["image"]["id"], id.as_str());
    assert_eq!(again["image"]["created"], false);
    assert_eq!(again["image"]["character"], Value::Null);
    assert_eq!(stored_persona_files(&app), Vec::<String>::new());
    // A character not of the cast is refused even for bytes already stored.
    assert_rejected(
        &upload(
            &app,
            &op1,
            "TW-T001",
            json!({"data": b64(&bytes), "character": "chef"}),
        )
        .await,
        "character",
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn recent_posts_default_to_ten_and_only_published_ones_show() {
    let app = spawn_app().await;
    let op1 = app.agent_key("op1");
    // Twelve published posts of Mia's TW-T001, an hour apart (post 1 newest), and newer posts
    // of every other status.
    let insert = |status: &str, body: &str, published: &str| {
        format!(
            "INSERT INTO posts (organization_id, workspace_id, project_id, persona_id, slot_id, \
             agent_id, platform, status, body, published_at) \
             SELECT w.organization_id, pe.workspace_id, pe.project_id, pe.id, s.id, pe.agent_id, \
             s.platform, \
             '{status}', {body}, {published} \
             FROM account_slots s JOIN personas pe ON pe.id = s.persona_id \
             JOIN workspaces w ON w.id = pe.workspace_id \
             WHERE s.code = 'TW-T001' AND pe.name = 'Mia'"
        )
    };
    for n in 1..=12 {
        app.sql(&insert(
            "published",
            &format!("'published {n}'"),
            &format!("now() - interval '{n} hours'"),
        ))
        .await;
    }
    for st in [
        "draft",
        "internal_review",
        "client_review",
        "approved",
        "scheduled",
        "publishing",
        "failed",
        "cancelled",
        "deleted",
        "stocked",
    ] {
        app.sql(&insert(st, &format!("'{st}'"), "now()")).await;
    }
    let v = status(&get(&app, &op1, "/personas/TW-T001").await, 200);
    let posts = v["recent_posts"].as_array().unwrap();
    assert_eq!(posts.len(), 10, "{v}");
    let bodies: Vec<&str> = posts.iter().map(|p| p["body"].as_str().unwrap()).collect();
    let want: Vec<String> = (1..=10).map(|n| format!("published {n}")).collect();
    assert_eq!(bodies, want);
    let v = status(&get(&app, &op1, "/personas/TW-T001?posts=30").await, 200);
    assert_eq!(v["recent_posts"].as_array().unwrap().len(), 12, "{v}");
}

// ---------------------------------------------------------------------------------------------
// Personal API: GET /personas and GET /personas/{id}

async fn person_get(app: &TestApp, email: &str, path: &str) -> Response {
    app.client
        .get(&format!("{USER}{path}"), &app.personal_key(email))
        .await
}

fn names(v: &Value) -> Vec<String> {
    v["personas"]
        .as_array()
        .expect("personas")
        .iter()
        .map(|p| p["name"].as_str().expect("name").to_owned())
        .collect()
}

#[tokio::test(flavor = "multi_thread")]
async fn people_list_their_organizations_personas_newest_first_in_pages() {
    let app = spawn_app().await;
    // Creation times set apart, so the order is known.
    app.sql(
        "UPDATE personas SET created_at = now() - CASE name WHEN 'Mia' THEN interval '3 days' \
         WHEN 'Leo' THEN interval '2 days' ELSE interval '1 day' END",
    )
    .await;
    let all = status(&person_get(&app, ANN, "/personas").await, 200);
    assert_eq!(names(&all), ["Yui", "Leo", "Mia"], "{all}");
    assert_eq!(all["next_cursor"], Value::Null);
    let mia = &all["personas"][2];
    assert_eq!(mia["workspace"]["name"], "Taiwan");
    assert_eq!(mia["project"], "beauty");
    assert_eq!(mia["agent"], "op1");
    assert_eq!(mia["status"], "confirmed", "{mia}");
    assert_eq!(mia["setup_complete"], true);
    assert_eq!(
        mia["accounts"][0],
        json!({"code": "TW-I001", "platform": "instagram", "state": "active"})
    );
    assert_eq!(mia["accounts"].as_array().unwrap().len(), 5);

    // Pages of one, joined, are the whole list.
    let mut seen = Vec::new();
    let mut path = "/personas?limit=1".to_owned();
    loop {
        let page = status(&person_get(&app, ANN, &path).await, 200);
        seen.extend(names(&page));
        match page["next_cursor"].as_str() {
            Some(c) => path = format!("/personas?limit=1&cursor={c}"),
            None => break,
        }
    }
    assert_eq!(seen, ["Yui", "Leo", "Mia"]);

    // One workspace; another organization's workspace lists nothing.
    let taiwan = mia["workspace"]["id"].as_str().unwrap().to_owned();
    let v = status(
        &person_get(&app, ANN, &format!("/personas?workspace={taiwan}")).await,
        200,
    );
    assert_eq!(names(&v), ["Leo", "Mia"]);
    let v = status(
        &person_get(
            &app,
            "olga@other.test",
            &format!("/personas?workspace={taiwan}"),
        )
        .await,
        200,
    );
    assert_eq!(names(&v), Vec::<String>::new());
    let v = status(&person_get(&app, "olga@other.test", "/personas").await, 200);
    assert_eq!(names(&v), ["Zoe"]);
    // A platform admin outside any organization sees every one.
    let v = status(
        &person_get(&app, "root@example.com", "/personas").await,
        200,
    );
    assert_eq!(v["personas"].as_array().unwrap().len(), 4, "{v}");

    // Clients are refused; a bad limit names it.
    assert_error(
        &person_get(&app, "cli@brand.test", "/personas").await,
        403,
        "forbidden",
    );
    assert_invalid(&person_get(&app, ANN, "/personas?limit=0").await, "limit");
    assert_invalid(&person_get(&app, ANN, "/personas?limit=201").await, "limit");
    assert_invalid(
        &person_get(&app, ANN, "/personas?workspace=nope").await,
        "workspace",
    );
    app.stop().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_person_sees_a_personas_facts_drafts_and_images_with_their_locks() {
    let app = spawn_app().await;
    let op1 = app.agent_key("op1");
    let mia = app.persona_id("Mia");
    // A draft fact waiting, a decided one, a refused one.
    for (label, value) in [("pet", "a grey cat"), ("city", "Taipei"), ("age", "30")] {
        status(
            &post(
                &app,
                &op1,
                "/personas/TW-T001/proposals",
                json!({"kind": "fact", "category": "identity", "label": label, "value": value}),
            )
            .await,
            201,
        );
    }
    app.sql(&format!(
        "UPDATE persona_facts SET status = CASE label WHEN 'city' THEN 'decided' \
         WHEN 'age' THEN 'refused' ELSE status END WHERE persona_id = '{mia}'"
    ))
    .await;
    // Two images: one stays a draft, one is refused.
    let draft = status(
        &upload(
            &app,
            &op1,
            "TW-T001",
            json!({"data": b64(&png(8, 8, 1)), "category": "portrait"}),
        )
        .await,
        201,
    );
    let refused = status(
        &upload(
            &app,
            &op1,
            "TW-T001",
            json!({"data": b64(&png(8, 8, 2)), "category": "pet"}),
        )
        .await,
        201,
    );
    let refused_id = refused["image"]["id"].as_str().unwrap();
    app.sql(&format!(
        "UPDATE persona_images SET lock = 'refused' WHERE id = '{refused_id}'"
    ))
    .await;

    let v = status(
        &person_get(&app, ANN, &format!("/personas/{mia}")).await,
        200,
    );
    assert_eq!(v["persona"]["name"], "Mia");
    assert_eq!(v["bio"], "b");
    let facts: Vec<(String, String)> = v["facts"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| {
            (
                f["label"].as_str().unwrap().to_owned(),
                f["status"].as_str().unwrap().to_owned(),
            )
        })
        .collect();
    assert_eq!(
        facts,
        [
            ("city".to_owned(), "decided".to_owned()),
            ("pet".to_owned(), "draft".to_owned())
        ],
        "decided first, then drafts; refused not listed: {v}"
    );
    let images = v["images"].as_array().unwrap();
    assert_eq!(images.len(), 2);
    assert_eq!(images[0]["id"], draft["image"]["id"]);
    assert_eq!(images[0]["lock"], "draft");
    let thumb = images[0]["thumb_url"].as_str().expect("a draft's link");
    let served = app
        .client
        .send(Request::new("GET", thumb.strip_prefix(&app.base).unwrap()))
        .await;
    assert_eq!(served.status, 200, "the person sees the draft image");
    assert_eq!(images[1]["lock"], "refused");
    assert_eq!(images[1]["url"], Value::Null);
    assert_eq!(images[1]["thumb_url"], Value::Null);
    assert_eq!(v["images_expire_in_seconds"], 900);
    assert_eq!(v["cast"][0]["code"], "bebe", "{v}");

    // Another organization's persona is 404, as is an unknown one; clients are refused.
    assert_error(
        &person_get(&app, "olga@other.test", &format!("/personas/{mia}")).await,
        404,
        "not_found",
    );
    assert_error(
        &person_get(&app, ANN, &format!("/personas/{}", uuid::Uuid::new_v4())).await,
        404,
        "not_found",
    );
    assert_error(
        &person_get(&app, "cli@brand.test", &format!("/personas/{mia}")).await,
        403,
        "forbidden",
    );
    assert_invalid(&person_get(&app, ANN, "/personas/not-a-uuid").await, "id");
    app.stop().await;
}
