//! Webhooks through the Personal API and a local receiver: endpoints registered, changed,
//! rotated and deleted; events delivered signed (Standard Webhooks) in commit order per
//! object; a receiver that fails twice gets the delivery three times and the log shows each
//! attempt; replays; every limit at and one past; another organization sees nothing; a
//! `fleetdesk serve` killed with SIGKILL in the middle of a delivery loses nothing.

use actix_web::{App, HttpRequest, HttpResponse, HttpServer, web};
use fleetdesk_tests::assert::{assert_error, ok};
use fleetdesk_tests::{AppOptions, Response, TestApp, spawn_app_with};
use serde_json::{Value, json};
use std::sync::{Arc, Mutex};
use uuid::Uuid;

const USER: &str = "/api/user/v1";
const AGENT: &str = "/api/agent/v1";
const ANN: &str = "ann@acme.test";
const CLI: &str = "cli@brand.test";
const OLGA: &str = "olga@other.test";

/// A request as the receiver got it: its headers (lower-cased) and body.
type Got = (Vec<(String, String)>, Vec<u8>);

/// What the receiver got.
#[derive(Clone, Default)]
struct Received {
    requests: Arc<Mutex<Vec<Got>>>,
    /// Answers 500 to this many requests first.
    fail_first: Arc<Mutex<usize>>,
    /// Holds this many requests first for a minute without answering.
    hang_first: Arc<Mutex<usize>>,
}

impl Received {
    fn count(&self) -> usize {
        self.requests.lock().unwrap().len()
    }

    fn bodies(&self) -> Vec<Value> {
        let requests = self.requests.lock().unwrap();
        requests
            .iter()
            .map(|(_, body)| serde_json::from_slice(body).unwrap())
            .collect()
    }
}

async fn hook(req: HttpRequest, body: web::Bytes, got: web::Data<Received>) -> HttpResponse {
    let headers = req
        .headers()
        .iter()
        .map(|(k, v)| (k.as_str().to_owned(), v.to_str().unwrap_or("").to_owned()))
        .collect();
    got.requests.lock().unwrap().push((headers, body.to_vec()));
    let hang = {
        let mut hang = got.hang_first.lock().unwrap();
        let now = *hang > 0;
        *hang = hang.saturating_sub(1);
        now
    };
    if hang {
        tokio::time::sleep(std::time::Duration::from_secs(60)).await;
    }
    let mut fail = got.fail_first.lock().unwrap();
    if *fail > 0 {
        *fail -= 1;
        return HttpResponse::InternalServerError().body("not now");
    }
    HttpResponse::NoContent().finish()
}

/// A receiver on 127.0.0.1: its URL and what it gets.
fn receiver() -> (String, Received) {
    let got = Received::default();
    let data = web::Data::new(got.clone());
    let server = HttpServer::new(move || {
        App::new()
            .app_data(data.clone())
            .route("/hook", web::post().to(hook))
    })
    .workers(1)
    .bind("127.0.0.1:0")
    .expect("bind the receiver");
    let addr = server.addrs()[0];
    tokio::spawn(server.run());
    (format!("http://{addr}/hook"), got)
}

/// Where the receivers of the standardwebhooks packages live.
const RECEIVERS: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/webhook_receivers");

/// What the standardwebhooks package of PyPI (`python`) or npm (`node`) makes of `got`'s
/// requests signed with `secret`: `{verified, refused}`.
async fn verified_by(runtime: &str, secret: &str, got: &[Got]) -> Value {
    let cases: Vec<Value> = got
        .iter()
        .map(|(headers, body)| {
            let headers: serde_json::Map<String, Value> =
                headers.iter().map(|(k, v)| (k.clone(), json!(v))).collect();
            json!({"secret": secret, "headers": headers,
                   "body": String::from_utf8(body.clone()).unwrap()})
        })
        .collect();
    let file = std::env::temp_dir().join(format!("fleetdesk-webhooks-{}.json", Uuid::new_v4()));
    std::fs::write(&file, serde_json::to_vec(&cases).unwrap()).unwrap();
    let (program, script) = match runtime {
        "python" => (fleetdesk_tests::peers::python(), "verify.py"),
        _ => {
            assert!(
                std::path::Path::new(RECEIVERS)
                    .join("node_modules")
                    .is_dir(),
                "tests/webhook_receivers/node_modules is missing: run `cargo xtask test`"
            );
            (std::path::PathBuf::from("node"), "verify.mjs")
        }
    };
    let out = tokio::process::Command::new(program)
        .arg(std::path::Path::new(RECEIVERS).join(script))
        .arg(&file)
        .current_dir(RECEIVERS)
        .output()
        .await
        .unwrap_or_else(|e| panic!("running the {runtime} receiver: {e}"));
    let _ = std::fs::remove_file(&file);
    assert!(
        out.status.success(),
        "the {runtime} receiver failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("the receiver's answer")
}

async fn local_app() -> TestApp {
    spawn_app_with(AppOptions {
        local_webhooks: true,
        ..Default::default()
    })
    .await
}

async fn post(app: &TestApp, who: &str, path: &str, body: Value) -> Response {
    app.client
        .post(&format!("{USER}{path}"), &app.personal_key(who), &body)
        .await
}

async fn create(app: &TestApp, url: &str, types: Value) -> Value {
    let body = json!({"workspace_id": app.workspace_id("Taiwan"), "url": url, "types": types,
        "description": "ops chat"});
    let res = post(app, ANN, "/webhooks", body).await;
    assert_eq!(res.status, 201, "{}", res.text());
    res.json()
}

/// Rounds of delivery until the receiver has `n` requests (or the rounds run out).
async fn deliver_until(app: &TestApp, got: &Received, n: usize) {
    for _ in 0..50 {
        app.ctx
            .webhooks
            .deliver_round(jiff::Timestamp::now, || 500)
            .await
            .expect("a round");
        if got.count() >= n {
            return;
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    panic!("the receiver got {} requests, not {n}", got.count());
}

/// Ann opens a card on Mia's account; op1 claims it: two events about the card.
async fn card_claimed(app: &TestApp) -> Uuid {
    let body = json!({"kind": "other", "title": "Fix the bio",
        "target": {"type": "slot", "code": "TW-T001"}});
    let id: Uuid = ok(&post(app, ANN, "/tasks", body).await)["id"]
        .as_str()
        .unwrap()
        .parse()
        .unwrap();
    ok(&app
        .client
        .post(
            &format!("{AGENT}/tasks/{id}/claim"),
            &app.agent_key("op1"),
            &json!({}),
        )
        .await);
    id
}

#[tokio::test(flavor = "multi_thread")]
async fn events_arrive_signed_in_commit_order_and_the_secret_is_shown_once() {
    let app = local_app().await;
    let (url, got) = receiver();
    let made = create(&app, &url, json!([])).await;
    let secret = made["secret"].as_str().unwrap().to_owned();
    assert!(secret.starts_with("whsec_"), "{made}");
    let id = made["endpoint"]["id"].as_str().unwrap().to_owned();
    assert_eq!(made["endpoint"]["types"], json!([]));
    assert_eq!(made["endpoint"]["description"], "ops chat");
    // Never again: not in the list.
    let listed = ok(&app
        .client
        .get(&format!("{USER}/webhooks"), &app.personal_key(ANN))
        .await);
    assert_eq!(listed["endpoints"][0]["id"], id.as_str());
    assert!(!listed.to_string().contains(&secret));

    let card = card_claimed(&app).await;
    deliver_until(&app, &got, 2).await;
    let requests = got.requests.lock().unwrap().clone();
    let bodies = got.bodies();
    let types: Vec<&str> = bodies.iter().map(|b| b["type"].as_str().unwrap()).collect();
    assert_eq!(types, ["task.opened", "task.claimed"]);
    assert!(bodies.iter().all(|b| b["object_id"] == card.to_string()));
    assert_eq!(bodies[1]["data"]["status"], "in_progress");
    let secret = fleetdesk_webhooks::WebhookSecret::parse(&secret).unwrap();
    for (headers, body) in &requests {
        let header = |name: &str| {
            headers
                .iter()
                .find(|(k, _)| k == name)
                .map(|(_, v)| v.clone())
                .unwrap_or_else(|| panic!("no {name}"))
        };
        let msg_id = header("webhook-id");
        let ts: i64 = header("webhook-timestamp").parse().unwrap();
        let signature = header("webhook-signature");
        assert!(msg_id.starts_with("msg_"));
        assert!(fleetdesk_webhooks::verify(
            &signature,
            &[&secret],
            &msg_id,
            ts,
            body
        ));
        assert_eq!(header("content-type"), "application/json");
    }
    // The reference libraries, as receivers: each verifies both; a changed body fails.
    let secret_text = made["secret"].as_str().unwrap();
    let mut tampered = requests.clone();
    tampered[0].1 = b"{\"type\":\"forged\"}".to_vec();
    for runtime in ["python", "node"] {
        let v = verified_by(runtime, secret_text, &requests).await;
        assert_eq!(v, json!({"verified": 2, "refused": []}), "{runtime}");
        let v = verified_by(runtime, secret_text, &tampered).await;
        assert_eq!(v["verified"], 1, "{runtime}: {v}");
        assert_eq!(v["refused"].as_array().unwrap().len(), 1, "{runtime}: {v}");
    }
    // The log: each delivered once.
    let log = ok(&app
        .client
        .get(
            &format!("{USER}/webhooks/{id}/deliveries"),
            &app.personal_key(ANN),
        )
        .await);
    let deliveries = log["deliveries"].as_array().unwrap();
    assert_eq!(deliveries.len(), 2, "{log}");
    for d in deliveries {
        assert_eq!(d["status"], "delivered");
        assert_eq!(d["attempts"], 1);
        assert_eq!(d["log"].as_array().unwrap().len(), 1);
        assert_eq!(d["log"][0]["status_code"], 204);
        assert_eq!(d["next_attempt_at"], Value::Null);
    }
    // Nothing more to send.
    let round = app
        .ctx
        .webhooks
        .deliver_round(jiff::Timestamp::now, || 500)
        .await
        .unwrap();
    assert!(round.idle(), "{round:?}");
    assert_eq!(got.count(), 2);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_receiver_that_fails_twice_gets_the_delivery_three_times() {
    let app = local_app().await;
    let (url, got) = receiver();
    *got.fail_first.lock().unwrap() = 2;
    let made = create(&app, &url, json!(["task.opened"])).await;
    let id = made["endpoint"]["id"].as_str().unwrap().to_owned();
    card_claimed(&app).await;
    for n in 1..=3 {
        deliver_until(&app, &got, n).await;
        // The retry's time comes at once.
        app.sql("UPDATE webhook_deliveries SET next_at = now()")
            .await;
    }
    let log = ok(&app
        .client
        .get(
            &format!("{USER}/webhooks/{id}/deliveries"),
            &app.personal_key(ANN),
        )
        .await);
    let d = &log["deliveries"][0];
    assert_eq!(log["deliveries"].as_array().unwrap().len(), 1, "{log}");
    assert_eq!(d["status"], "delivered");
    assert_eq!(d["attempts"], 3);
    let codes: Vec<&Value> = d["log"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| &a["status_code"])
        .collect();
    assert_eq!(codes, [&json!(500), &json!(500), &json!(204)]);
    assert_eq!(d["log"][0]["body_excerpt"], "not now");
    // Only task.opened was asked for: the claim was not sent.
    assert!(got.bodies().iter().all(|b| b["type"] == "task.opened"));
    // While it failed, the endpoint said since when; the success cleared it.
    let listed = ok(&app
        .client
        .get(&format!("{USER}/webhooks"), &app.personal_key(ANN))
        .await);
    assert_eq!(listed["endpoints"][0]["failing_since"], Value::Null);

    // A replay of the delivery sends it again, as a new series.
    let delivery = d["id"].as_str().unwrap();
    let replayed = ok(&post(
        &app,
        ANN,
        &format!("/webhooks/{id}/replay"),
        json!({"delivery_id": delivery}),
    )
    .await);
    assert_eq!(replayed["replayed"], 1);
    deliver_until(&app, &got, 4).await;
    // Everything since an hour ago: the one event of its types.
    let since = (jiff::Timestamp::now() - jiff::SignedDuration::from_hours(1)).to_string();
    let replayed = ok(&post(
        &app,
        ANN,
        &format!("/webhooks/{id}/replay"),
        json!({"since": since}),
    )
    .await);
    assert_eq!(replayed["replayed"], 1);
    deliver_until(&app, &got, 5).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn private_and_plain_http_targets_are_refused_by_default() {
    let app = fleetdesk_tests::spawn_app().await;
    let body = |url: &str| json!({"workspace_id": app.workspace_id("Taiwan"), "url": url});
    // http is refused at registration without the serve flag.
    let v = assert_error(
        &post(&app, ANN, "/webhooks", body("http://hooks.example.com/in")).await,
        422,
        "rejected",
    );
    assert_eq!(v["field"], "url");
    assert!(
        v["message"]
            .as_str()
            .unwrap()
            .contains("--allow-http-webhooks"),
        "{v}"
    );
    // An https endpoint on loopback registers, but no attempt reaches it.
    let made = ok(&post(&app, ANN, "/webhooks", body("https://127.0.0.1:9/in")).await);
    let id = made["endpoint"]["id"].as_str().unwrap().to_owned();
    card_claimed(&app).await;
    app.ctx
        .webhooks
        .deliver_round(jiff::Timestamp::now, || 500)
        .await
        .unwrap();
    let log = ok(&app
        .client
        .get(
            &format!("{USER}/webhooks/{id}/deliveries"),
            &app.personal_key(ANN),
        )
        .await);
    // Newest first: the claim waits behind the opening, the card's earlier event.
    let (claimed, opened) = (&log["deliveries"][0], &log["deliveries"][1]);
    assert_eq!(claimed["event_type"], "task.claimed", "{log}");
    assert_eq!(
        (&claimed["attempts"], &claimed["log"]),
        (&json!(0), &json!([]))
    );
    assert_eq!(opened["event_type"], "task.opened", "{log}");
    assert_eq!(opened["status"], "pending");
    assert_eq!(opened["log"][0]["status_code"], Value::Null);
    let error = opened["log"][0]["error"].as_str().expect("an error");
    assert_eq!(error, "refused: the address is a loopback address");
    assert!(opened["next_attempt_at"].is_string());
}

#[tokio::test(flavor = "multi_thread")]
async fn endpoint_fields_at_their_limits_and_one_past() {
    let app = local_app().await;
    let ws = app.workspace_id("Taiwan");
    let long_url = format!("https://hooks.example.com/{}", "a".repeat(2000 - 26));
    assert_eq!(long_url.len(), 2000);
    let at_limits = json!({"workspace_id": ws, "url": long_url, "description": "d".repeat(500),
        "types": fleetdesk_kernel::events::EventKind::ALL.map(|k| k.as_str()), "enabled": false});
    let made = post(&app, ANN, "/webhooks", at_limits).await;
    assert_eq!(made.status, 201, "{}", made.text());
    for (body, field) in [
        (
            json!({"workspace_id": ws, "url": format!("{long_url}a")}),
            "url",
        ),
        (json!({"workspace_id": ws, "url": ""}), "url"),
        (
            json!({"workspace_id": ws, "url": "https://x.test/", "description": "d".repeat(501)}),
            "description",
        ),
        (
            json!({"workspace_id": ws, "url": "https://x.test/", "types": ["post.eaten"]}),
            "types[0]",
        ),
        (json!({"workspace_id": ws, "url": "not a url"}), "url"),
        (
            json!({"workspace_id": ws, "url": "https://x.test/ in"}),
            "url",
        ),
        (
            json!({"workspace_id": ws, "url": "https://x.test/", "extra": 1}),
            "extra",
        ),
    ] {
        let v = assert_error(
            &post(&app, ANN, "/webhooks", body).await,
            400,
            "invalid_request",
        );
        assert_eq!(v["field"], field, "{v}");
    }
    // What no schema says: 422 naming url.
    for url in [
        "https://user:pw@x.test/",
        "https://x.test/#frag",
        "https://[::1/",
    ] {
        let body = json!({"workspace_id": ws, "url": url});
        let v = assert_error(&post(&app, ANN, "/webhooks", body).await, 422, "rejected");
        assert_eq!(v["field"], "url", "{url}: {v}");
    }
    // 20 endpoints per workspace; the 21st is refused.
    for n in 1..20 {
        let body = json!({"workspace_id": ws, "url": format!("https://x.test/{n}")});
        assert_eq!(post(&app, ANN, "/webhooks", body).await.status, 201);
    }
    let body = json!({"workspace_id": ws, "url": "https://x.test/21"});
    assert_error(&post(&app, ANN, "/webhooks", body).await, 422, "rejected");
    // Replay: not both delivery_id and since; neither replays the failed deliveries (none).
    let id = made.json()["endpoint"]["id"].as_str().unwrap().to_owned();
    let both = json!({"delivery_id": Uuid::nil(), "since": "2026-12-01T00:00:00Z"});
    assert_error(
        &post(&app, ANN, &format!("/webhooks/{id}/replay"), both).await,
        400,
        "invalid_request",
    );
    let none = ok(&post(&app, ANN, &format!("/webhooks/{id}/replay"), json!({})).await);
    assert_eq!(none["replayed"], 0);
    let v = assert_error(
        &post(
            &app,
            ANN,
            &format!("/webhooks/{id}/replay"),
            json!({"delivery_id": Uuid::nil()}),
        )
        .await,
        404,
        "not_found",
    );
    assert_eq!(v["field"], "delivery_id");
}

#[tokio::test(flavor = "multi_thread")]
async fn only_the_organizations_agency_people_manage_its_endpoints() {
    let app = local_app().await;
    let made = create(&app, "https://hooks.example.com/in", json!(["post.moved"])).await;
    let id = made["endpoint"]["id"].as_str().unwrap().to_owned();
    // A client is refused; another organization's person finds nothing.
    assert_error(
        &app.client
            .get(&format!("{USER}/webhooks"), &app.personal_key(CLI))
            .await,
        403,
        "forbidden",
    );
    let theirs = ok(&app
        .client
        .get(&format!("{USER}/webhooks"), &app.personal_key(OLGA))
        .await);
    assert_eq!(theirs["endpoints"], json!([]));
    for path in ["delete", "rotate"] {
        assert_error(
            &post(&app, OLGA, &format!("/webhooks/{id}/{path}"), json!({})).await,
            404,
            "not_found",
        );
    }
    let other_ws = json!({"workspace_id": app.workspace_id("Taiwan"), "url": "https://x.test/"});
    let v = assert_error(
        &post(&app, OLGA, "/webhooks", other_ws).await,
        404,
        "not_found",
    );
    assert_eq!(v["field"], "workspace_id");

    // Ann changes it, rotates its secret, deletes it.
    let changed = app
        .client
        .send(
            fleetdesk_tests::Request::new("PUT", &format!("{USER}/webhooks/{id}"))
                .bearer(&app.personal_key(ANN))
                .json(&json!({"types": [], "enabled": false, "description": "paused"})),
        )
        .await;
    let changed = ok(&changed);
    assert_eq!(changed["enabled"], false);
    assert_eq!(changed["types"], json!([]));
    assert_eq!(changed["description"], "paused");
    let rotated = ok(&post(&app, ANN, &format!("/webhooks/{id}/rotate"), json!({})).await);
    assert!(rotated["secret"].as_str().unwrap().starts_with("whsec_"));
    assert_ne!(rotated["secret"], made["secret"]);
    assert!(rotated["endpoint"]["previous_secret_until"].is_string());
    ok(&post(&app, ANN, &format!("/webhooks/{id}/delete"), json!({})).await);
    assert_error(
        &post(&app, ANN, &format!("/webhooks/{id}/rotate"), json!({})).await,
        404,
        "not_found",
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn after_a_rotation_the_old_secret_signs_beside_the_new_one() {
    let app = local_app().await;
    let (url, got) = receiver();
    let made = create(&app, &url, json!(["task.opened"])).await;
    let id = made["endpoint"]["id"].as_str().unwrap().to_owned();
    let old = made["secret"].as_str().unwrap().to_owned();
    let rotated = ok(&post(&app, ANN, &format!("/webhooks/{id}/rotate"), json!({})).await);
    let new = rotated["secret"].as_str().unwrap().to_owned();
    card_claimed(&app).await;
    deliver_until(&app, &got, 1).await;
    let requests = got.requests.lock().unwrap().clone();
    let signature = &requests[0]
        .0
        .iter()
        .find(|(k, _)| k == "webhook-signature")
        .unwrap()
        .1;
    assert_eq!(signature.split(' ').count(), 2, "{signature}");
    for secret in [&old, &new] {
        let v = verified_by("python", secret, &requests).await;
        assert_eq!(v["verified"], 1, "{v}");
    }
    // Once the overlap ends, only the new one signs.
    app.sql("UPDATE webhook_endpoints SET previous_until = now() - interval '1 second'")
        .await;
    ok(&post(
        &app,
        ANN,
        &format!("/webhooks/{id}/replay"),
        json!({"since": "2026-01-01T00:00:00Z"}),
    )
    .await);
    deliver_until(&app, &got, 2).await;
    let again = got.requests.lock().unwrap()[1..].to_vec();
    assert_eq!(verified_by("python", &new, &again).await["verified"], 1);
    assert_eq!(verified_by("python", &old, &again).await["verified"], 0);
}

#[tokio::test(flavor = "multi_thread")]
async fn three_instances_deliver_each_event_once() {
    let app = local_app().await;
    let (url, got) = receiver();
    create(&app, &url, json!([])).await;
    // Two more instances over the same database, each with its own pool and instance lock.
    let mut services = vec![app.ctx.webhooks.clone()];
    for n in 0..2 {
        let config = fleetdesk_api::Config {
            allow_http_webhooks: true,
            allow_private_webhooks: true,
            ..Default::default()
        };
        let dir = app.data_dir.join(format!("instance-{n}"));
        let (state, _store) = fleetdesk::compose(&app.db.url, &dir, config, 4, true, None)
            .await
            .expect("another instance");
        services.push(state.ctx.webhooks.clone());
    }
    // 10 cards: 20 events, delivered while the three run rounds at once.
    let mut cards = Vec::new();
    for _ in 0..10 {
        cards.push(card_claimed(&app).await);
    }
    let rounds = services.into_iter().map(|service| {
        let got = got.clone();
        tokio::spawn(async move {
            for _ in 0..100 {
                service
                    .deliver_round(jiff::Timestamp::now, || 500)
                    .await
                    .expect("a round");
                if got.count() >= 20 {
                    return;
                }
                tokio::time::sleep(std::time::Duration::from_millis(20)).await;
            }
        })
    });
    for round in rounds.collect::<Vec<_>>() {
        round.await.unwrap();
    }
    let sent = message_ids(&got);
    let ids: std::collections::BTreeSet<&String> = sent.iter().collect();
    assert_eq!((sent.len(), ids.len()), (20, 20));
    // Each card's two events in commit order.
    let bodies = got.bodies();
    for card in cards {
        let types: Vec<&str> = bodies
            .iter()
            .filter(|b| b["object_id"] == card.to_string())
            .map(|b| b["type"].as_str().unwrap())
            .collect();
        assert_eq!(types, ["task.opened", "task.claimed"], "{card}");
    }
}

/// The Taiwan workspace's endpoints `GET /today` tells Ann of.
async fn today_webhooks(app: &TestApp) -> Vec<Value> {
    let ws = app.today_workspace(ANN, "Taiwan").await;
    ws["webhooks"].as_array().expect("webhooks").clone()
}

#[tokio::test(flavor = "multi_thread")]
async fn a_failing_endpoint_is_told_in_today_and_disabled_after_five_days() {
    let app = local_app().await;
    let (url, got) = receiver();
    *got.fail_first.lock().unwrap() = 100;
    let made = create(&app, &url, json!(["task.opened"])).await;
    let id = made["endpoint"]["id"].as_str().unwrap().to_owned();
    assert_eq!(today_webhooks(&app).await, Vec::<Value>::new());
    card_claimed(&app).await;
    deliver_until(&app, &got, 1).await;
    let told = today_webhooks(&app).await;
    assert_eq!(told.len(), 1, "{told:?}");
    assert_eq!(
        (&told[0]["id"], &told[0]["enabled"]),
        (&json!(id), &json!(true))
    );
    assert!(told[0]["failing_since"].is_string(), "{told:?}");
    assert_eq!(told[0]["disabled_reason"], Value::Null);

    // As if it had failed for five days: the next failure disables it.
    app.sql("UPDATE webhook_endpoints SET failing_since = now() - interval '5 days 1 minute'")
        .await;
    app.sql("UPDATE webhook_deliveries SET next_at = now()")
        .await;
    deliver_until(&app, &got, 2).await;
    let told = today_webhooks(&app).await;
    assert_eq!(told.len(), 1, "{told:?}");
    assert_eq!(told[0]["enabled"], false, "{told:?}");
    assert!(told[0]["disabled_reason"].is_string(), "{told:?}");
    // Turned on again by a person: what the service noted is cleared, and nothing is told.
    let on = app
        .client
        .send(
            fleetdesk_tests::client::Request::new("PUT", &format!("{USER}/webhooks/{id}"))
                .bearer(&app.personal_key(ANN))
                .json(&json!({"enabled": true})),
        )
        .await;
    assert_eq!(on.status, 200, "{}", on.text());
    assert_eq!(today_webhooks(&app).await, Vec::<Value>::new());
}

#[tokio::test(flavor = "multi_thread")]
async fn the_tenant_file_registers_endpoints_by_url_and_shows_a_new_secret_once() {
    let app = spawn_app_with(AppOptions::default()).await;
    let file = |hooks: &str| {
        fleetdesk_tests::TEST_TENANT.replacen(
            r#""name": "Taiwan","#,
            &format!(r#""name": "Taiwan", "webhooks": {hooks},"#),
            1,
        )
    };
    let hooks_of = |report: &fleetdesk_tenancy::tenant_file::ApplyReport| {
        let v = serde_json::to_value(report).unwrap();
        v["organizations"][0]["workspaces"]
            .as_array()
            .unwrap()
            .iter()
            .find(|w| w["name"] == "Taiwan")
            .unwrap()["webhooks"]
            .clone()
    };
    let first = file(
        r#"[{"url": "https://hooks.acme.test/fleet", "types": ["task.opened"],
             "description": "ops chat"}]"#,
    );
    assert_ne!(first, fleetdesk_tests::TEST_TENANT);
    let applied = hooks_of(&app.apply(&first).await);
    let secret = applied[0]["secret"]
        .as_str()
        .expect("a new endpoint's secret");
    assert!(
        fleetdesk_webhooks::WebhookSecret::parse(secret).is_ok(),
        "{applied}"
    );
    let id = applied[0]["id"].as_str().unwrap().to_owned();
    let listed = ok(&app
        .client
        .get(&format!("{USER}/webhooks"), &app.personal_key(ANN))
        .await);
    let e = &listed["endpoints"][0];
    assert_eq!(listed["endpoints"].as_array().unwrap().len(), 1, "{listed}");
    assert_eq!(
        (&e["id"], &e["url"]),
        (&json!(id), &json!("https://hooks.acme.test/fleet"))
    );
    assert_eq!(
        (&e["types"], &e["enabled"]),
        (&json!(["task.opened"]), &json!(true))
    );
    assert_eq!(e["description"], "ops chat");
    assert!(
        !listed.to_string().contains(secret),
        "the secret is never read back"
    );

    // Applying it again makes nothing and shows no secret; changed attributes follow.
    let again = hooks_of(&app.apply(&first).await);
    assert_eq!(
        again,
        json!([{"id": id, "url": "https://hooks.acme.test/fleet", "secret": null}])
    );
    let off = file(r#"[{"url": "https://hooks.acme.test/fleet", "enabled": false}]"#);
    app.apply(&off).await;
    let listed = ok(&app
        .client
        .get(&format!("{USER}/webhooks"), &app.personal_key(ANN))
        .await);
    let e = &listed["endpoints"][0];
    assert_eq!(
        (&e["enabled"], &e["types"], &e["description"]),
        (&json!(false), &json!([]), &Value::Null)
    );
    assert_eq!(listed["endpoints"].as_array().unwrap().len(), 1);
}

/// The `webhook-id` of each request the receiver got, in arrival order.
fn message_ids(got: &Received) -> Vec<String> {
    let requests = got.requests.lock().unwrap();
    requests
        .iter()
        .map(|(headers, _)| {
            let id = headers.iter().find(|(k, _)| k == "webhook-id");
            id.map(|(_, v)| v.clone()).expect("a webhook-id")
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread")]
async fn a_delivery_cut_short_by_kill_9_is_delivered_after_all() {
    use fleetdesk_tests::binary::{fleetdesk_over, fresh_dir, serve};
    use std::time::{Duration, Instant};
    let app = spawn_app_with(AppOptions {
        isolation: fleetdesk_tests::Isolation::Database,
        local_webhooks: true,
        ..Default::default()
    })
    .await;
    let (url, got) = receiver();
    // The first request is held: the instance that sent it waits for its answer.
    *got.hang_first.lock().unwrap() = 1;
    create(&app, &url, json!(["task.opened", "task.claimed"])).await;
    let dir = fresh_dir(&app.data_dir, "killed");
    let args = [
        "serve",
        "--bind",
        "127.0.0.1:0",
        "--no-demo",
        "--allow-http-webhooks",
        "--allow-private-webhooks",
    ];
    let mut killed = serve(
        fleetdesk_over(&args, &app.db, &dir),
        Duration::from_secs(60),
    )
    .await;
    let card = card_claimed(&app).await;
    let deadline = Instant::now() + Duration::from_secs(30);
    while got.count() == 0 {
        assert!(
            Instant::now() < deadline,
            "the instance sent nothing within 30 s"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let leased = "SELECT count(*) AS n FROM webhook_deliveries \
                  WHERE status = 'pending' AND locked_until > now()";
    assert_eq!(
        app.count(leased).await,
        1,
        "the first delivery is under the instance's lease"
    );
    // kill -9 while it waits for the answer.
    let status = std::process::Command::new("kill")
        .args(["-KILL", &killed.proc.pid().to_string()])
        .status()
        .expect("run kill");
    assert!(status.success());
    killed
        .proc
        .wait_exit(Duration::from_secs(10))
        .await
        .expect("the process ended");

    // Another instance takes the dead one's lease over at once and delivers everything, the
    // card's events in commit order, the cut one again under the same webhook-id.
    deliver_until(&app, &got, 3).await;
    let ids = message_ids(&got);
    assert_eq!(ids.len(), 3, "{ids:?}");
    assert_eq!(ids[0], ids[1], "the cut delivery is sent again: {ids:?}");
    assert_ne!(ids[1], ids[2]);
    let bodies = got.bodies();
    let types: Vec<&str> = bodies.iter().map(|b| b["type"].as_str().unwrap()).collect();
    assert_eq!(types, ["task.opened", "task.opened", "task.claimed"]);
    assert!(bodies.iter().all(|b| b["object_id"] == card.to_string()));
    let delivered = "SELECT count(*) AS n FROM webhook_deliveries WHERE status = 'delivered'";
    assert_eq!(app.count(delivered).await, 2, "nothing is lost");
}

/// op1 writes: POST on the Agent API, the answer's body.
async fn op1_post(app: &TestApp, path: &str, body: Value) -> Value {
    let res = app
        .client
        .post(&format!("{AGENT}{path}"), &app.agent_key("op1"), &body)
        .await;
    ok(&res)
}

#[tokio::test(flavor = "multi_thread")]
async fn a_days_events_arrive_in_the_feed_and_at_real_receivers_in_commit_order() {
    let app = local_app().await;
    let (url, got) = receiver();
    let made = create(&app, &url, json!([])).await;
    let secret = made["secret"].as_str().unwrap().to_owned();

    // A draft through review, published with a changed body.
    let draft = op1_post(
        &app,
        "/drafts",
        json!({"code": "TW-T001", "body": "Rain on the bridge"}),
    )
    .await;
    let post = draft["draft"]["id"].as_str().unwrap().to_owned();
    ok(&post_as(
        &app,
        &format!("/posts/{post}/transition"),
        json!({"to": "approved"}),
    )
    .await);
    let published = json!({"posts": [{"code": "TW-T001", "status": "published", "post_id": post,
        "permalink": "https://t.net/p/1", "body": "Rain on the old bridge"}]});
    op1_post(&app, "/posts/report", published).await;
    // A decision, opened by op1 and decided by Ann.
    let persona = op1_post(
        &app,
        "/personas",
        json!({"name": "Nova", "project": "beauty"}),
    )
    .await;
    let issue = persona["issue_id"].as_str().unwrap().to_owned();
    ok(&post_as(
        &app,
        &format!("/decisions/{issue}/resolve"),
        json!({"note": "welcome"}),
    )
    .await);
    // A task card opened by Ann, claimed by op1.
    let card = card_claimed(&app).await.to_string();

    let expected = [
        (post.as_str(), "post.submitted"),
        (post.as_str(), "post.moved"),
        (post.as_str(), "post.reported"),
        (post.as_str(), "post.published_differs"),
        (issue.as_str(), "decision.opened"),
        (issue.as_str(), "decision.decided"),
        (card.as_str(), "task.opened"),
        (card.as_str(), "task.claimed"),
    ];
    let per_object = |events: &[Value], object: &str| -> Vec<String> {
        events
            .iter()
            .filter(|e| e["object_id"] == object)
            .map(|e| e["type"].as_str().unwrap().to_owned())
            .collect()
    };
    let of = |object: &str| -> Vec<String> {
        expected
            .iter()
            .filter(|(o, _)| *o == object)
            .map(|(_, t)| (*t).to_owned())
            .collect()
    };
    // The feed: op1's, in commit order.
    let feed = app.feed("op1", "").await;
    for object in [&post, &issue, &card] {
        assert_eq!(per_object(&feed, object), of(object), "feed, {object}");
    }
    let cursors: Vec<u64> = feed
        .iter()
        .map(|e| {
            let cursor = e["cursor"].as_str().expect("a cursor");
            cursor.parse().expect("digits")
        })
        .collect();
    assert!(cursors.windows(2).all(|w| w[0] < w[1]), "{cursors:?}");
    // The receiver: every event once, each object's in commit order.
    deliver_until(&app, &got, expected.len()).await;
    let bodies = got.bodies();
    assert_eq!(bodies.len(), expected.len(), "{bodies:?}");
    for object in [&post, &issue, &card] {
        assert_eq!(
            per_object(&bodies, object),
            of(object),
            "receiver, {object}"
        );
    }
    let differs = bodies
        .iter()
        .find(|b| b["type"] == "post.published_differs")
        .unwrap();
    assert_eq!(differs["data"]["reason"], "changed", "{differs}");
    // Verified by the standardwebhooks packages of PyPI and npm.
    let requests = got.requests.lock().unwrap().clone();
    for runtime in ["python", "node"] {
        let v = verified_by(runtime, &secret, &requests).await;
        assert_eq!(
            v,
            json!({"verified": expected.len(), "refused": []}),
            "{runtime}"
        );
    }
}

/// Ann writes on the Personal API.
async fn post_as(app: &TestApp, path: &str, body: Value) -> Response {
    post(app, ANN, path, body).await
}

#[tokio::test(flavor = "multi_thread")]
async fn an_endpoint_receives_only_the_changes_made_after_it_was_registered() {
    let app = local_app().await;
    // No endpoint yet: rounds hand nothing on (and the cursor stays behind).
    let before = card_claimed(&app).await;
    let round = app
        .ctx
        .webhooks
        .deliver_round(jiff::Timestamp::now, || 500)
        .await
        .expect("a round");
    assert_eq!(round.dispatched, 0, "{round:?}");
    let (url, got) = receiver();
    create(&app, &url, json!([])).await;
    let after = card_claimed(&app).await;
    deliver_until(&app, &got, 2).await;
    let bodies = got.bodies();
    assert_eq!(bodies.len(), 2, "{bodies:?}");
    assert!(
        bodies.iter().all(|b| b["object_id"] == after.to_string()),
        "{bodies:?}"
    );
    assert!(bodies.iter().all(|b| b["object_id"] != before.to_string()));
    // A replay since before brings the older changes on purpose.
    let since = (jiff::Timestamp::now() - jiff::SignedDuration::from_hours(1)).to_string();
    let id = ok(&app
        .client
        .get(&format!("{USER}/webhooks"), &app.personal_key(ANN))
        .await)["endpoints"][0]["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let replayed = ok(&post(
        &app,
        ANN,
        &format!("/webhooks/{id}/replay"),
        json!({"since": since}),
    )
    .await);
    assert_eq!(replayed["replayed"], 4, "{replayed}");
}
