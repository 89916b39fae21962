//! The scenario, end to end through both APIs: an agent creates a persona and a person
//! confirms it; the agent proposes a fact and a contradiction and uploads two images; a person
//! decides each (the fact is then by decision in get_persona, an image approved and chosen as
//! the avatar); the agent sees the change_avatar follow-up in work_today and completes it; the
//! decision is then handled and its card waits for a person's confirmation.

use fleetdesk_tests::client::Request;
use fleetdesk_tests::{Response, TestApp, spawn_app};
use image::{DynamicImage, ImageFormat, Rgb, RgbImage};
use serde_json::{Value, json};
use std::io::Cursor;

const AGENT: &str = "/api/agent/v1";
const PERSONAL: &str = "/api/user/v1";

#[track_caller]
fn ok(res: &Response, status: u16) -> Value {
    assert_eq!(res.status, status, "body: {}", res.text());
    res.json()
}

/// A PNG of one colour, `width` by `height`.
fn png(width: u32, height: u32, colour: [u8; 3]) -> String {
    use base64::Engine;
    let mut out = Cursor::new(Vec::new());
    DynamicImage::ImageRgb8(RgbImage::from_pixel(width, height, Rgb(colour)))
        .write_to(&mut out, ImageFormat::Png)
        .expect("encode");
    base64::engine::general_purpose::STANDARD.encode(out.into_inner())
}

async fn agent_post(app: &TestApp, path: &str, body: Value) -> Response {
    let key = app.agent_key("op1");
    app.client
        .post(&format!("{AGENT}{path}"), &key, &body)
        .await
}

async fn agent_get(app: &TestApp, path: &str) -> Response {
    app.client
        .get(&format!("{AGENT}{path}"), &app.agent_key("op1"))
        .await
}

async fn person_post(app: &TestApp, path: &str, body: Value) -> Response {
    let key = app.personal_key("ann@acme.test");
    app.client
        .post(&format!("{PERSONAL}{path}"), &key, &body)
        .await
}

/// The open decisions of Ann's organization, of one kind.
async fn open_decisions(app: &TestApp, kind: &str) -> Vec<Value> {
    let key = app.personal_key("ann@acme.test");
    let res = app
        .client
        .get(&format!("{PERSONAL}/decisions?kind={kind}"), &key)
        .await;
    ok(&res, 200)["decisions"]
        .as_array()
        .cloned()
        .unwrap_or_default()
}

#[tokio::test(flavor = "multi_thread")]
async fn a_persona_from_creation_to_a_completed_avatar_follow_up() {
    let app = spawn_app().await;

    // The agent creates a persona; a person confirms it.
    let created = ok(
        &agent_post(
            &app,
            "/personas",
            json!({"name": "Nova", "project": "beauty", "bio": "A night owl.", "voice": "dry"}),
        )
        .await,
        201,
    );
    assert_eq!(created["setup_complete"], true);
    let persona_id = created["id"].as_str().unwrap().to_owned();
    let new_persona = open_decisions(&app, "persona_new").await;
    assert_eq!(new_persona.len(), 1);
    assert_eq!(new_persona[0]["id"], created["issue_id"]);
    ok(
        &person_post(
            &app,
            &format!(
                "/decisions/{}/resolve",
                created["issue_id"].as_str().unwrap()
            ),
            json!({"note": "welcome"}),
        )
        .await,
        200,
    );
    assert_eq!(
        app.count(&format!(
            "SELECT count(*) AS n FROM personas WHERE id = '{persona_id}' AND status = 'confirmed'"
        ))
        .await,
        1
    );

    // It gets an account, so its code names it.
    ok(
        &agent_post(
            &app,
            "/accounts",
            json!({"persona_id": persona_id, "platform": "threads", "code": "TW-T077", "state": "active"}),
        )
        .await,
        201,
    );

    // A fact and a contradiction.
    let fact = ok(
        &agent_post(
            &app,
            "/personas/TW-T077/proposals",
            json!({"kind": "fact", "category": "pet", "label": "cat", "value": "Momo, a grey cat"}),
        )
        .await,
        201,
    );
    let contradiction = ok(
        &agent_post(
            &app,
            "/personas/TW-T077/proposals",
            json!({"kind": "contradiction", "label": "Two cats?", "value": "A post says she has two cats"}),
        )
        .await,
        201,
    );

    // Two images: an avatar and a portrait, both waiting in one decision.
    let avatar = ok(
        &agent_post(
            &app,
            "/personas/TW-T077/images",
            json!({"data": png(800, 800, [10, 120, 200]), "category": "avatar", "caption": "round"}),
        )
        .await,
        201,
    );
    let portrait = ok(
        &agent_post(
            &app,
            "/personas/TW-T077/images",
            json!({"data": png(600, 900, [200, 20, 20]), "category": "portrait"}),
        )
        .await,
        201,
    );
    assert_eq!(avatar["image"]["lock"], "draft");
    let avatar_id = avatar["image"]["id"].as_str().unwrap().to_owned();
    let images = open_decisions(&app, "persona_images").await;
    assert_eq!(images.len(), 1, "one decision gathers the persona's images");
    let listed: Vec<&str> = images[0]["detail"]["images"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["id"].as_str().unwrap())
        .collect();
    assert_eq!(listed.len(), 2);
    assert!(listed.contains(&avatar_id.as_str()));
    // The person deciding sees the draft images through their signed links.
    let draft_links: Vec<String> = images[0]["detail"]["images"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| app.client.path_of(i["thumb_url"].as_str().unwrap()))
        .collect();
    for path in &draft_links {
        let res = app.client.send(Request::new("GET", path)).await;
        assert_eq!(res.status, 200, "{path}");
        assert!(image::load_from_memory(&res.body).is_ok());
    }
    // Nothing is approved yet: the agent sees no image.
    let none = ok(&agent_get(&app, "/personas/TW-T077/images").await, 200);
    assert_eq!(none["images"], json!([]));

    // A person decides each.
    ok(
        &person_post(
            &app,
            &format!("/decisions/{}/resolve", fact["issue_id"].as_str().unwrap()),
            json!({}),
        )
        .await,
        200,
    );
    ok(
        &person_post(
            &app,
            &format!(
                "/decisions/{}/choose",
                contradiction["issue_id"].as_str().unwrap()
            ),
            json!({"option": "keep", "note": "one cat is right"}),
        )
        .await,
        200,
    );
    let chosen = ok(
        &person_post(
            &app,
            &format!("/decisions/{}/choose", images[0]["id"].as_str().unwrap()),
            json!({"option": "approve_some", "image_ids": [avatar_id], "set_avatar": avatar_id}),
        )
        .await,
        200,
    );
    let follow_up = chosen["follow_up_id"]
        .as_str()
        .expect("a follow-up")
        .to_owned();

    // The fact is now by decision; only the approved image is listed, with a small thumbnail.
    let persona = ok(&agent_get(&app, "/personas/TW-T077").await, 200);
    let facts = persona["facts"].as_array().unwrap();
    assert_eq!(facts.len(), 1, "{facts:?}");
    assert_eq!(facts[0]["label"], "cat");
    assert_eq!(facts[0]["by_decision"], true);
    let listed = ok(&agent_get(&app, "/personas/TW-T077/images").await, 200);
    let listed = listed["images"].as_array().unwrap();
    assert_eq!(listed.len(), 1);
    assert_eq!(listed[0]["id"], avatar_id.as_str());
    assert_eq!(listed[0]["lock"], "approved");
    let thumb_path = app.client.path_of(listed[0]["thumb_url"].as_str().unwrap());
    let thumb = app.client.send(Request::new("GET", &thumb_path)).await;
    assert_eq!(thumb.status, 200);
    let small = image::load_from_memory(&thumb.body).expect("the thumbnail is an image");
    assert_eq!((small.width(), small.height()), (320, 320));
    assert_eq!(thumb.header("x-content-type-options"), Some("nosniff"));
    // Ranges are answered as the library's files answer them.
    let head = app
        .client
        .send(Request::new("GET", &thumb_path).header("range", "bytes=0-9"))
        .await;
    assert_eq!(head.status, 206);
    assert_eq!(head.body, thumb.body[..10]);
    assert_eq!(
        app.count(&format!(
            "SELECT count(*) AS n FROM persona_images WHERE id = '{}' AND lock = 'refused'",
            portrait["image"]["id"].as_str().unwrap()
        ))
        .await,
        1
    );
    // The refused portrait's link, made while it waited, no longer serves it.
    let served: Vec<u16> = {
        let mut all = Vec::new();
        for path in &draft_links {
            all.push(app.client.send(Request::new("GET", path)).await.status);
        }
        all
    };
    let mut served = served;
    served.sort();
    assert_eq!(served, [200, 404]);

    // The agent sees the change_avatar follow-up in its day and completes it.
    let day = ok(&agent_get(&app, "/work/today").await, 200);
    let follow_ups = day["follow_ups"].as_array().unwrap();
    assert_eq!(follow_ups.len(), 1, "{follow_ups:?}");
    assert_eq!(follow_ups[0]["id"], follow_up.as_str());
    assert_eq!(follow_ups[0]["kind"], "change_avatar");
    assert_eq!(day["summary"]["follow_ups"], 1);
    let task_id = follow_ups[0]["task_id"].as_str().unwrap().to_owned();
    let done = json!({"result": "Avatar changed on threads",
                      "evidence": [{"type": "link", "url": "https://threads.net/@nova", "label": "profile"}]});
    ok(
        &agent_post(&app, &format!("/issues/{follow_up}/done"), done.clone()).await,
        200,
    );
    // Sent again: unchanged.
    let again = ok(
        &agent_post(&app, &format!("/issues/{follow_up}/done"), done).await,
        200,
    );
    assert_eq!(again["result"], "unchanged");

    // The decision is handled and its card waits for a person's confirmation.
    assert_eq!(
        app.count(&format!(
            "SELECT count(*) AS n FROM decisions WHERE id = '{follow_up}' AND status = 'handled'"
        ))
        .await,
        1
    );
    assert_eq!(
        app.count(&format!(
            "SELECT count(*) AS n FROM task_cards WHERE id = '{task_id}' \
             AND status = 'pending_confirmation' AND jsonb_array_length(evidence) = 1"
        ))
        .await,
        1
    );
    let day = ok(&agent_get(&app, "/work/today").await, 200);
    assert_eq!(
        day["summary"]["follow_ups"], 0,
        "a handled follow-up is done for the agent"
    );
}
