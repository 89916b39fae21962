//! Ads through HTTP over the standard tenant: GET /ads and POST /ads/proposals, the
//! `ad_change` decision a person resolves or dismisses, and the ad work (sync, execution,
//! expiry) with the sandbox platform. Acme / Taiwan has ads enabled with the ad account
//! act_1001 (TWD; its token in ACME_META_TOKEN) and a monthly cap of 50 000 TWD; Acme /
//! Japan has ads disabled. The sandbox's act_1001 has ad 100111 running at 300 a day (ad set
//! 100121) and ad 100112 paused at 200 a day.

use fleetdesk_kernel::money::Cents;
use fleetdesk_tests::assert::{assert_error, assert_error_in, ok};
use fleetdesk_tests::{Response, TestApp, spawn_app};
use jiff::{SignedDuration, Timestamp};
use serde_json::{Value, json};

const AGENT: &str = "/api/agent/v1";
const USER: &str = "/api/user/v1";

/// A worker over the sandbox platform that finds act_1001's token, at `now`.
fn ad_worker(app: &TestApp, now: Timestamp) -> fleetdesk::worker::Worker {
    fleetdesk::worker::Worker::new(app.store.clone())
        .tokens(|name| (name == "ACME_META_TOKEN").then(|| "sandbox-token".to_owned()))
        .with_clock(move || now)
}

/// The hour's sync and whatever else is due. A sync is one job per hour of the worker's clock,
/// due at the hour's start by the database's clock: a second sync in a test runs on a clock an
/// hour back.
async fn sync(worker: &fleetdesk::worker::Worker) {
    worker.schedule_ad_sync().await.expect("enqueue the sync");
    worker.run_due().await.expect("run the due jobs");
}

async fn ads(app: &TestApp, key: &str, query: &str) -> Response {
    app.client.get(&format!("{AGENT}/ads{query}"), key).await
}

async fn propose(app: &TestApp, key: &str, body: &Value) -> Response {
    app.client
        .post(&format!("{AGENT}/ads/proposals"), key, body)
        .await
}

async fn decide(app: &TestApp, id: &str, action: &str) -> Response {
    app.client
        .post(
            &format!("{USER}/decisions/{id}/{action}"),
            &app.personal_key("ann@acme.test"),
            &json!({}),
        )
        .await
}

fn proposal(kind: &str, extra: Value) -> Value {
    let mut body = json!({"kind": kind, "reason": "CTR fell from 1.2% to 0.4% over 7 days"});
    for (k, v) in extra.as_object().cloned().unwrap_or_default() {
        body[k] = v;
    }
    body
}

/// A proposal op1 makes that must be accepted: its record.
async fn proposed(app: &TestApp, body: &Value) -> Value {
    let res = propose(app, &app.agent_key("op1"), body).await;
    assert_eq!(res.status, 201, "{}", res.text());
    res.json()
}

async fn proposal_status(app: &TestApp, id: &str) -> String {
    let op1 = app.agent_key("op1");
    let listed = ok(&ads(app, &op1, "").await);
    listed["proposals"]
        .as_array()
        .and_then(|all| all.iter().find(|p| p["id"] == id))
        .map(|p| p["status"].as_str().unwrap_or_default().to_owned())
        .unwrap_or_else(|| panic!("no proposal {id}: {listed}"))
}

/// A post of op1's instagram account, reported published as `platform_post_id`.
async fn published_instagram_post(app: &TestApp, platform_post_id: &str) -> String {
    let op1 = app.agent_key("op1");
    let made = ok(&app
        .client
        .post(
            &format!("{AGENT}/drafts"),
            &op1,
            &json!({"code": "TW-I001", "body": format!("look {platform_post_id}")}),
        )
        .await);
    let id = made["draft"]["id"].as_str().expect("id").to_owned();
    ok(&app
        .client
        .post(
            &format!("{USER}/posts/{id}/transition"),
            &app.personal_key("ann@acme.test"),
            &json!({"to": "approved"}),
        )
        .await);
    let report = ok(&app
        .client
        .post(
            &format!("{AGENT}/posts/report"),
            &op1,
            &json!({"posts": [{"code": "TW-I001", "status": "published", "post_id": id,
                               "platform_post_id": platform_post_id,
                               "permalink": "https://instagram.com/p/x"}]}),
        )
        .await);
    assert_eq!(report["updated"], 1, "{report}");
    id
}

#[tokio::test(flavor = "multi_thread")]
async fn ads_are_forbidden_until_the_workspace_enables_them() {
    let app = spawn_app().await;
    let jp1 = app.agent_key("jp1");
    let e = assert_error(&ads(&app, &jp1, "").await, 403, "forbidden");
    let message = e["message"].as_str().unwrap_or_default();
    assert!(message.contains("ads_enabled"), "{e}");
    assert!(message.contains("tenant file"), "{e}");
    let body = proposal("pause", json!({"ad_id": "100111"}));
    assert_error(&propose(&app, &jp1, &body).await, 403, "forbidden");
    assert_eq!(app.count("SELECT count(*) AS n FROM ad_proposals").await, 0);
    // Once enabled, the same key reads them.
    app.sql("UPDATE workspaces SET ads_enabled = true WHERE name = 'Japan'")
        .await;
    let listed = ok(&ads(&app, &jp1, "").await);
    assert_eq!(listed["cap"], Value::Null, "{listed}");
    assert_eq!(listed["ad_accounts"], json!([]), "{listed}");
    // A community agent has no accounts scopes.
    let bot = app.agent_key("bot");
    assert_eq!(ads(&app, &bot, "").await.status, 403);
}

#[tokio::test(flavor = "multi_thread")]
async fn list_ads_shows_what_the_last_sync_stored() {
    let app = spawn_app().await;
    let op1 = app.agent_key("op1");
    let before = ok(&ads(&app, &op1, "").await);
    assert_eq!(before["ad_accounts"][0]["id"], "act_1001", "{before}");
    assert_eq!(
        before["ad_accounts"][0]["synced_at"],
        Value::Null,
        "{before}"
    );
    assert_eq!(before["campaigns"], json!([]), "{before}");
    assert_eq!(before["cap"]["monthly_limit"], 50000.0, "{before}");
    assert_eq!(before["cap"]["currency"], "TWD", "{before}");
    assert_eq!(before["cap"]["spent_this_month"], 0.0, "{before}");

    let now = Timestamp::now();
    sync(&ad_worker(&app, now)).await;
    let after = ok(&ads(&app, &op1, "").await);
    let account = &after["ad_accounts"][0];
    assert_eq!(account["status"], "active", "{after}");
    assert!(account["synced_at"].is_string(), "{after}");
    assert_eq!(account["sync_error"], Value::Null, "{after}");
    let campaigns = after["campaigns"].as_array().expect("campaigns");
    assert_eq!(campaigns.len(), 2, "{after}");
    // Only the ads the service made are listed: none yet.
    assert_eq!(after["ads"], json!([]), "{after}");
    assert_eq!(after["proposals"], json!([]), "{after}");

    // The numbers are the stored days summed: checked against the table itself.
    let stored = |days: i64| {
        format!(
            "SELECT (sum(spend) * 100)::bigint AS n FROM ad_campaign_days \
             WHERE day >= (now() AT TIME ZONE 'Asia/Taipei')::date - {}",
            days - 1
        )
    };
    for (query, days) in [("", 30), ("?days=1", 1), ("?days=90", 90)] {
        let listed = ok(&ads(&app, &op1, query).await);
        let spend: f64 = listed["campaigns"]
            .as_array()
            .expect("campaigns")
            .iter()
            .map(|c| c["spend"].as_f64().expect("spend"))
            .sum();
        assert_eq!(
            (spend * 100.0).round() as i64,
            app.count(&stored(days)).await,
            "{query}"
        );
        for c in listed["campaigns"].as_array().expect("campaigns") {
            let (impressions, clicks) = (
                c["impressions"].as_i64().unwrap(),
                c["clicks"].as_i64().unwrap(),
            );
            if impressions > 0 {
                let ctr = (clicks as f64 * 10000.0 / impressions as f64).round() / 100.0;
                assert_eq!(c["ctr"].as_f64(), Some(ctr), "{c}");
            }
            assert_eq!(c["by_fleetdesk"], false, "{c}");
        }
    }
    let month = app
        .count(
            "SELECT (sum(spend) * 100)::bigint AS n FROM ad_campaign_days \
             WHERE day >= date_trunc('month', now() AT TIME ZONE 'Asia/Taipei')::date",
        )
        .await;
    let cap = ok(&ads(&app, &op1, "").await)["cap"].clone();
    assert_eq!(
        (cap["spent_this_month"].as_f64().expect("spent") * 100.0).round() as i64,
        month,
        "{cap}"
    );
    // 90 days were synced (today included), no more.
    assert_eq!(
        app.count("SELECT count(DISTINCT day) AS n FROM ad_campaign_days")
            .await,
        90
    );
    for bad in ["?days=0", "?days=91", "?days=x"] {
        let e = assert_error_in(bad, &ads(&app, &op1, bad).await, 400, "invalid_request");
        assert_eq!(e["field"], "days", "{bad}: {e}");
    }

    // A sync that fails keeps the data and says why; the token never shows. Meta needs the
    // token its variable holds: unset, the sync fails before any request (the address is
    // never reached).
    let meta = fleetdesk_vendors::meta_ads::MetaAds::new(
        "http://127.0.0.1:9",
        std::time::Duration::from_secs(1),
    )
    .expect("a Meta client");
    let broken = fleetdesk::worker::Worker::new(app.store.clone())
        .ad_platform(std::sync::Arc::new(meta))
        .tokens(|_| None)
        .with_clock(move || now - SignedDuration::from_hours(1));
    sync(&broken).await;
    let listed = ok(&ads(&app, &op1, "").await);
    let error = listed["ad_accounts"][0]["sync_error"]
        .as_str()
        .unwrap_or_default();
    assert!(error.contains("ACME_META_TOKEN"), "{listed}");
    assert_eq!(listed["campaigns"].as_array().map(Vec::len), Some(2));

    // The sandbox needs no token: with none set, its sync succeeds again.
    let tokenless = fleetdesk::worker::Worker::new(app.store.clone())
        .tokens(|_| None)
        .with_clock(move || now - SignedDuration::from_hours(2));
    sync(&tokenless).await;
    let listed = ok(&ads(&app, &op1, "").await);
    assert_eq!(
        listed["ad_accounts"][0]["sync_error"],
        Value::Null,
        "{listed}"
    );
    assert_eq!(listed["campaigns"].as_array().map(Vec::len), Some(2));
}

#[tokio::test(flavor = "multi_thread")]
async fn a_proposal_names_an_ad_or_post_of_the_workspace_in_the_state_its_kind_needs() {
    let app = spawn_app().await;
    sync(&ad_worker(&app, Timestamp::now())).await;
    let op1 = app.agent_key("op1");
    let threads = ok(&app
        .client
        .post(
            &format!("{AGENT}/drafts"),
            &op1,
            &json!({"code": "TW-T001", "body": "no boost"}),
        )
        .await)["draft"]["id"]
        .clone();
    let draft_ig = ok(&app
        .client
        .post(
            &format!("{AGENT}/drafts"),
            &op1,
            &json!({"code": "TW-I001", "body": "not yet"}),
        )
        .await)["draft"]["id"]
        .clone();
    let boost = |post: &Value, account: &str| {
        proposal(
            "boost",
            json!({"post_id": post, "ad_account_id": account, "budget_type": "daily",
                   "amount": 500, "days": 7}),
        )
    };
    for (case, body, field) in [
        (
            "pause a paused ad",
            proposal("pause", json!({"ad_id": "100112"})),
            None,
        ),
        (
            "resume a running ad",
            proposal("resume", json!({"ad_id": "100111"})),
            None,
        ),
        (
            "the budget it has",
            proposal("budget", json!({"ad_id": "100111", "amount": 300})),
            None,
        ),
        (
            "a threads post",
            boost(&threads, "act_1001"),
            Some("post_id"),
        ),
        (
            "a post not published",
            boost(&draft_ig, "act_1001"),
            Some("post_id"),
        ),
        (
            "twice the same country",
            {
                let mut b = boost(&draft_ig, "act_1001");
                b["countries"] = json!(["TW", "tw"]);
                b
            },
            Some("countries[1]"),
        ),
    ] {
        let e = assert_error_in(case, &propose(&app, &op1, &body).await, 422, "rejected");
        if let Some(field) = field {
            assert_eq!(e["field"], field, "{case}: {e}");
        }
    }
    // An ad, post or ad account the workspace does not have is 404 naming it.
    let post = published_instagram_post(&app, "ig-501").await;
    for (case, body, field) in [
        (
            "an unknown ad",
            proposal("pause", json!({"ad_id": "999"})),
            "ad_id",
        ),
        (
            "an unknown post",
            boost(&json!("00000000-0000-4000-8000-000000000000"), "act_1001"),
            "post_id",
        ),
        (
            "an unknown ad account",
            boost(&json!(post), "act_999"),
            "ad_account_id",
        ),
    ] {
        let e = assert_error_in(case, &propose(&app, &op1, &body).await, 404, "not_found");
        assert_eq!(e["field"], field, "{case}: {e}");
    }
    // An instagram post is boosted as the account's Instagram user: none named, 422.
    app.sql("UPDATE ad_accounts SET instagram_user_id = NULL")
        .await;
    let e = assert_error(
        &propose(&app, &op1, &boost(&json!(post), "act_1001")).await,
        422,
        "rejected",
    );
    assert_eq!(e["field"], "ad_account_id", "{e}");
    assert!(
        e["message"]
            .as_str()
            .unwrap_or_default()
            .contains("instagram_user_id"),
        "{e}"
    );
    app.sql("UPDATE ad_accounts SET instagram_user_id = '17841400000000001'")
        .await;

    // The shape: 400 naming the field.
    for (case, body, field) in [
        (
            "no reason",
            json!({"kind": "pause", "ad_id": "100111"}),
            "reason",
        ),
        (
            "a blank reason",
            proposal("pause", json!({"ad_id": "100111", "reason": "   "})),
            "reason",
        ),
        (
            "a reason of 2001",
            proposal(
                "pause",
                json!({"ad_id": "100111", "reason": "x".repeat(2001)}),
            ),
            "reason",
        ),
        ("no ad", proposal("pause", json!({})), "ad_id"),
        (
            "a budget without amount",
            proposal("budget", json!({"ad_id": "100111"})),
            "amount",
        ),
        (
            "a pause with an amount",
            proposal("pause", json!({"ad_id": "100111", "amount": 5})),
            "amount",
        ),
        (
            "a pause with a post",
            proposal("pause", json!({"ad_id": "100111", "post_id": post})),
            "post_id",
        ),
        (
            "an amount of 0",
            proposal("budget", json!({"ad_id": "100111", "amount": 0})),
            "amount",
        ),
        (
            "an amount of a billion",
            proposal("budget", json!({"ad_id": "100111", "amount": 1e9})),
            "amount",
        ),
        (
            "three decimals (the schema's multipleOf 0.01)",
            proposal("budget", json!({"ad_id": "100111", "amount": 300.001})),
            "amount",
        ),
        (
            "one day",
            {
                let mut b = boost(&json!(post), "act_1001");
                b["days"] = json!(1);
                b
            },
            "days",
        ),
        (
            "91 days",
            {
                let mut b = boost(&json!(post), "act_1001");
                b["days"] = json!(91);
                b
            },
            "days",
        ),
        (
            "a boost with an ad",
            {
                let mut b = boost(&json!(post), "act_1001");
                b["ad_id"] = json!("100111");
                b
            },
            "ad_id",
        ),
        (
            "a boost without days",
            {
                let mut b = boost(&json!(post), "act_1001");
                b.as_object_mut().unwrap().remove("days");
                b
            },
            "days",
        ),
        (
            "26 countries",
            {
                let mut b = boost(&json!(post), "act_1001");
                b["countries"] = json!(
                    (0..26)
                        .map(|i| format!("A{}", (b'A' + i) as char))
                        .collect::<Vec<_>>()
                );
                b
            },
            "countries",
        ),
        (
            "an ad id of letters",
            proposal("pause", json!({"ad_id": "ad-1"})),
            "ad_id",
        ),
        (
            "an unknown kind",
            proposal("stop", json!({"ad_id": "100111"})),
            "kind",
        ),
    ] {
        let e = assert_error_in(
            case,
            &propose(&app, &op1, &body).await,
            400,
            "invalid_request",
        );
        assert_eq!(e["field"], field, "{case}: {e}");
    }
    // Boundaries that pass: 2 and 90 days, 25 countries, a reason of 2000.
    let mut two = boost(&json!(post), "act_1001");
    two["days"] = json!(2);
    two["countries"] = json!(
        (0..25)
            .map(|i| format!("A{}", (b'A' + i) as char))
            .collect::<Vec<_>>()
    );
    two["reason"] = json!("r".repeat(2000));
    let made = proposed(&app, &two).await;
    assert_eq!(made["status"], "waiting", "{made}");
    assert_eq!(made["countries"][0], "AA", "{made}");
    // A second boost of the same post waits behind the first: 422.
    let mut ninety = boost(&json!(post), "act_1001");
    ninety["days"] = json!(90);
    let e = assert_error(&propose(&app, &op1, &ninety).await, 422, "rejected");
    assert!(
        e["message"]
            .as_str()
            .unwrap_or_default()
            .contains("already waiting"),
        "{e}"
    );
    assert_eq!(app.count("SELECT count(*) AS n FROM ad_proposals").await, 1);
    assert_eq!(
        app.count("SELECT count(*) AS n FROM decisions WHERE kind = 'ad_change'")
            .await,
        1
    );
    // Another workspace's agent reaches none of it.
    app.sql("UPDATE workspaces SET ads_enabled = true WHERE name = 'Japan'")
        .await;
    let jp1 = app.agent_key("jp1");
    let e = assert_error(
        &propose(&app, &jp1, &proposal("pause", json!({"ad_id": "100111"}))).await,
        404,
        "not_found",
    );
    assert_eq!(e["field"], "ad_id", "{e}");
    let e = assert_error(
        &propose(&app, &jp1, &boost(&json!(post), "act_1001")).await,
        404,
        "not_found",
    );
    assert_eq!(e["field"], "post_id", "{e}");
    assert_eq!(ok(&ads(&app, &jp1, "").await)["proposals"], json!([]));
}

#[tokio::test(flavor = "multi_thread")]
async fn a_proposal_resent_with_its_key_answers_the_first() {
    let app = spawn_app().await;
    sync(&ad_worker(&app, Timestamp::now())).await;
    let op1 = app.agent_key("op1");
    let body = proposal("pause", json!({"ad_id": "100111"}));
    let path = format!("{AGENT}/ads/proposals");
    let first = app.client.post_idem(&path, &op1, "p-1", &body).await;
    assert_eq!(first.status, 201, "{}", first.text());
    let again = app.client.post_idem(&path, &op1, "p-1", &body).await;
    assert_eq!(again.status, 201, "{}", again.text());
    assert_eq!(again.json()["id"], first.json()["id"]);
    let other = proposal("pause", json!({"ad_id": "100111", "reason": "other"}));
    assert_error(
        &app.client.post_idem(&path, &op1, "p-1", &other).await,
        422,
        "idempotency_mismatch",
    );
    // Without the key, the same pause again is a duplicate of the waiting one.
    assert_error(&propose(&app, &op1, &body).await, 422, "rejected");
    assert_eq!(app.count("SELECT count(*) AS n FROM ad_proposals").await, 1);
}

#[tokio::test(flavor = "multi_thread")]
async fn an_approved_pause_is_executed_on_the_platform_as_the_person() {
    let app = spawn_app().await;
    let now = Timestamp::now();
    let worker = ad_worker(&app, now);
    sync(&worker).await;
    let made = proposed(&app, &proposal("pause", json!({"ad_id": "100111"}))).await;
    let id = made["id"].as_str().expect("id").to_owned();
    let decision = made["decision_id"].as_str().expect("decision").to_owned();
    assert_eq!(made["status"], "waiting", "{made}");
    assert_eq!(made["ad_id"], "100111", "{made}");

    // The decision is a person's: an agent's relay cannot approve it.
    let relay = app
        .client
        .post(
            &format!("{AGENT}/issues/{decision}/relay"),
            &app.agent_key("op1"),
            &json!({"action": "resolve", "on_behalf_of": {"name": "Ann", "role": "agency"},
                    "origin": {"platform": "telegram"}}),
        )
        .await;
    let e = assert_error(&relay, 422, "rejected");
    assert!(
        e["message"]
            .as_str()
            .unwrap_or_default()
            .contains("own key"),
        "{e}"
    );
    assert_eq!(proposal_status(&app, &id).await, "waiting");

    // The person's decisions list shows it with its detail.
    let listed = ok(&app
        .client
        .get(
            &format!("{USER}/decisions?kind=ad_change"),
            &app.personal_key("ann@acme.test"),
        )
        .await);
    let d = &listed["decisions"][0];
    assert_eq!(d["id"], decision.as_str(), "{listed}");
    assert_eq!(d["detail"]["ad_id"], "100111", "{listed}");
    assert_eq!(d["detail"]["currency"], "TWD", "{listed}");
    assert_eq!(d["title"], "Pause ad 100111", "{listed}");

    let res = ok(&decide(&app, &decision, "resolve").await);
    assert_eq!(res["decision"]["status"], "resolved", "{res}");
    assert_eq!(proposal_status(&app, &id).await, "approved");
    // The platform is reached by the ad work only.
    worker.run_due().await.expect("run");
    let listed = ok(&ads(&app, &app.agent_key("op1"), "").await);
    let p = &listed["proposals"][0];
    assert_eq!(p["status"], "executed", "{listed}");
    assert_eq!(p["decided_by"]["name"], "Ann", "{listed}");
    assert_eq!(p["result"]["status"], "paused", "{listed}");
    assert!(p["executed_at"].is_string(), "{listed}");
    // The agent that proposed it is told, once; another agent is not.
    let told = app
        .feed("op1", "types=ad_change.executed,ad_change.failed")
        .await;
    assert_eq!(told.len(), 1, "{told:?}");
    assert_eq!(told[0]["type"], "ad_change.executed");
    assert_eq!(told[0]["object_id"], id.as_str());
    assert_eq!(
        told[0]["data"],
        json!({"kind": "pause", "ad_id": "100111", "post_id": null, "status": "executed",
               "error": null})
    );
    assert_eq!(
        app.feed("op2", "types=ad_change.executed").await,
        Vec::<Value>::new()
    );
    // The next sync sees the ad paused.
    let worker_next = worker
        .clone()
        .with_clock(move || now - SignedDuration::from_hours(1));
    sync(&worker_next).await;
    assert_eq!(
        app.count("SELECT count(*) AS n FROM ads WHERE id = '100111' AND status = 'paused'")
            .await,
        1
    );
    // Resolving again is the same move: unchanged; the change ran once.
    let again = ok(&decide(&app, &decision, "resolve").await);
    assert_eq!(again["result"], "unchanged", "{again}");
    assert_eq!(
        app.count("SELECT count(*) AS n FROM jobs WHERE kind = 'ad_change'")
            .await,
        1
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_raise_past_the_monthly_cap_is_refused_at_approval_and_can_be_dismissed() {
    let app = spawn_app().await;
    let worker = ad_worker(&app, Timestamp::now());
    sync(&worker).await;
    // The running ad commits at least 300 for today: a cap of 100 leaves no room for a raise.
    app.sql("UPDATE workspaces SET monthly_ad_cap = 100 WHERE name = 'Taiwan'")
        .await;
    let raise = proposed(
        &app,
        &proposal("budget", json!({"ad_id": "100111", "amount": 301})),
    )
    .await;
    let decision = raise["decision_id"].as_str().expect("decision").to_owned();
    let e = assert_error(&decide(&app, &decision, "resolve").await, 422, "rejected");
    assert!(
        e["message"]
            .as_str()
            .unwrap_or_default()
            .contains("monthly cap"),
        "{e}"
    );
    let id = raise["id"].as_str().expect("id").to_owned();
    assert_eq!(proposal_status(&app, &id).await, "waiting");
    assert_eq!(
        app.count("SELECT count(*) AS n FROM jobs WHERE kind = 'ad_change'")
            .await,
        0
    );
    // Dismissed, the raise is refused; a lower budget adds nothing: approved under the cap.
    ok(&decide(&app, &decision, "dismiss").await);
    assert_eq!(proposal_status(&app, &id).await, "refused");
    let lower = proposed(
        &app,
        &proposal("budget", json!({"ad_id": "100111", "amount": 250})),
    )
    .await;
    ok(&decide(&app, lower["decision_id"].as_str().unwrap(), "resolve").await);
    // A resume is judged the same way: the paused ad's 200 a day against the cap.
    app.sql("UPDATE workspaces SET monthly_ad_cap = 1 WHERE name = 'Taiwan'")
        .await;
    let resume = proposed(&app, &proposal("resume", json!({"ad_id": "100112"}))).await;
    assert_error(
        &decide(&app, resume["decision_id"].as_str().unwrap(), "resolve").await,
        422,
        "rejected",
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn an_approved_boost_makes_a_paused_ad_the_service_lists_as_its_own() {
    let app = spawn_app().await;
    let now = Timestamp::now();
    let worker = ad_worker(&app, now);
    sync(&worker).await;
    let post = published_instagram_post(&app, "ig-777").await;
    let made = proposed(
        &app,
        &proposal(
            "boost",
            json!({"post_id": post, "ad_account_id": "act_1001", "budget_type": "lifetime",
                   "amount": 1500, "days": 5}),
        ),
    )
    .await;
    ok(&decide(&app, made["decision_id"].as_str().unwrap(), "resolve").await);
    worker.run_due().await.expect("run");
    let listed = ok(&ads(&app, &app.agent_key("op1"), "").await);
    assert_eq!(listed["proposals"][0]["status"], "executed", "{listed}");
    let ad = &listed["ads"][0];
    assert_eq!(ad["kind"], "boost", "{listed}");
    assert_eq!(ad["status"], "paused", "{listed}");
    assert_eq!(
        ad["budget"],
        json!({"type": "lifetime", "amount": 1500.0}),
        "{listed}"
    );
    assert_eq!(ad["post"]["id"], post.as_str(), "{listed}");
    assert_eq!(ad["post"]["platform_post_id"], "ig-777", "{listed}");
    let (from, to) = (
        ad["period"]["starts_at"]
            .as_str()
            .unwrap()
            .parse::<Timestamp>()
            .unwrap(),
        ad["period"]["ends_at"]
            .as_str()
            .unwrap()
            .parse::<Timestamp>()
            .unwrap(),
    );
    assert_eq!(to.duration_since(from), SignedDuration::from_hours(5 * 24));
    let campaign = listed["campaigns"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["id"] == ad["campaign_id"])
        .cloned()
        .unwrap_or_else(|| panic!("no campaign of the boost: {listed}"));
    assert_eq!(campaign["by_fleetdesk"], true, "{campaign}");
    // A later sync keeps it the service's, linked to the post.
    let next = worker
        .clone()
        .with_clock(move || now - SignedDuration::from_hours(1));
    sync(&next).await;
    let listed = ok(&ads(&app, &app.agent_key("op1"), "").await);
    assert_eq!(listed["ads"].as_array().map(Vec::len), Some(1), "{listed}");
    assert_eq!(listed["ads"][0]["post"]["id"], post.as_str(), "{listed}");
}

#[tokio::test(flavor = "multi_thread")]
async fn waiting_proposals_expire_after_7_days() {
    let app = spawn_app().await;
    let now = Timestamp::now();
    sync(&ad_worker(&app, now)).await;
    let old = proposed(&app, &proposal("pause", json!({"ad_id": "100111"}))).await;
    let fresh = proposed(&app, &proposal("resume", json!({"ad_id": "100112"}))).await;
    let (old_id, fresh_id) = (old["id"].as_str().unwrap(), fresh["id"].as_str().unwrap());
    app.sql(&format!(
        "UPDATE ad_proposals SET created_at = now() - interval '7 days' WHERE id = '{old_id}'"
    ))
    .await;
    // Shown expired at once, and a person can no longer approve it.
    assert_eq!(proposal_status(&app, old_id).await, "expired");
    let e = assert_error(
        &decide(&app, old["decision_id"].as_str().unwrap(), "resolve").await,
        422,
        "rejected",
    );
    assert!(
        e["message"]
            .as_str()
            .unwrap_or_default()
            .contains("expired"),
        "{e}"
    );
    // The same change may be proposed again: the expired one holds no place.
    let again = proposed(&app, &proposal("pause", json!({"ad_id": "100111"}))).await;
    assert_eq!(again["status"], "waiting");
    assert_eq!(
        app.count(&format!(
            "SELECT count(*) AS n FROM ad_proposals WHERE id = '{old_id}' AND status = 'expired'"
        ))
        .await,
        1
    );
    // The hourly work dismisses the decisions of expired proposals, as the service.
    app.sql(&format!(
        "UPDATE ad_proposals SET created_at = now() - interval '8 days' WHERE id = '{fresh_id}'"
    ))
    .await;
    sync(&ad_worker(&app, now - SignedDuration::from_hours(1))).await;
    assert_eq!(proposal_status(&app, fresh_id).await, "expired");
    let decision = fresh["decision_id"].as_str().unwrap();
    assert_eq!(
        app.count(&format!(
            "SELECT count(*) AS n FROM decisions WHERE id = '{decision}' AND status = 'dismissed' \
             AND decided_by->>'type' = 'service'"
        ))
        .await,
        1
    );
    assert_eq!(
        proposal_status(&app, again["id"].as_str().unwrap()).await,
        "waiting"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn an_approved_change_the_queue_gave_up_on_is_failed_with_its_error() {
    let app = spawn_app().await;
    let now = Timestamp::now();
    sync(&ad_worker(&app, now)).await;
    let made = proposed(&app, &proposal("pause", json!({"ad_id": "100111"}))).await;
    ok(&decide(&app, made["decision_id"].as_str().unwrap(), "resolve").await);
    let id = made["id"].as_str().unwrap();
    // As if every attempt's instance died: the queue gave the job up.
    app.sql(&format!(
        "UPDATE jobs SET status = 'failed', attempts = 8, finished_at = now(), \
         last_error = 'lease expired 8 times' WHERE kind = 'ad_change' AND key = '{id}'"
    ))
    .await;
    assert_eq!(proposal_status(&app, id).await, "approved");
    sync(&ad_worker(&app, now - SignedDuration::from_hours(1))).await;
    let listed = ok(&ads(&app, &app.agent_key("op1"), "").await);
    let p = &listed["proposals"][0];
    assert_eq!(p["status"], "failed", "{listed}");
    assert_eq!(
        p["result"]["error"], "the service gave up making the change: lease expired 8 times",
        "{listed}"
    );
    assert!(p["executed_at"].is_string(), "{listed}");
    let told = app
        .feed("op1", "types=ad_change.failed,ad_change.executed")
        .await;
    assert_eq!(told.len(), 1, "{told:?}");
    assert_eq!(
        (&told[0]["type"], &told[0]["object_id"]),
        (&json!("ad_change.failed"), &json!(id))
    );
    assert_eq!(told[0]["data"]["error"], p["result"]["error"], "{told:?}");
}

// ---------------------------------------------------------------------------------------------
// The Meta adapter against a local stand-in of the Marketing API (fleetdesk_tests::meta)

mod meta {
    use super::*;
    use fleetdesk_ads::platform::{AdAccountRef, AdPlatform, Execution};
    use fleetdesk_ads::proposal::{AdStatus, BudgetType};
    use fleetdesk_tests::meta::FakeMeta;
    use fleetdesk_vendors::meta_ads::MetaAds;
    use jiff::civil::Date;
    use std::time::Duration;

    const TOKEN: &str = "EAAB-test-token-0123456789";

    fn account(currency: &str) -> AdAccountRef {
        AdAccountRef {
            id: "act_1001".into(),
            currency: currency.into(),
            token_env: "ACME_META_TOKEN".into(),
        }
    }

    #[tokio::test(flavor = "multi_thread")]
    async fn a_sync_reads_the_account_its_campaigns_days_and_ads_page_by_page() {
        let fake = FakeMeta::start(TOKEN).await;
        let meta = MetaAds::new(&fake.base, Duration::from_secs(2)).unwrap();
        let (since, until) = (Date::constant(2026, 8, 30), Date::constant(2026, 11, 27));
        let snap = meta
            .sync(&account("TWD"), TOKEN, since, until)
            .await
            .unwrap();
        assert_eq!(snap.status, "active");
        let ids: Vec<&str> = snap.campaigns.iter().map(|c| c.id.as_str()).collect();
        // 3009 was deleted (the campaigns list leaves it out) but spent: it stays, as deleted.
        assert_eq!(ids, ["3001", "3002", "3009"]);
        assert_eq!(snap.campaigns[2].status, "deleted");
        assert_eq!(snap.campaigns[2].name, "Deleted flash sale");
        assert_eq!(snap.campaigns[2].days[0].spend, Cents(4000));
        let days = &snap.campaigns[0].days;
        assert_eq!(days.len(), 2);
        assert_eq!(days[0].spend, Cents(12050));
        assert_eq!(
            (days[0].impressions, days[0].reach, days[0].clicks),
            (4000, 3500, 80)
        );
        // Results: engagement with the post, else link clicks.
        assert_eq!((days[0].results, days[1].results), (150, 12));
        // The deleted ad is left out; budgets in TWD are whole units.
        assert_eq!(snap.ads.len(), 2);
        let (a, b) = (&snap.ads[0], &snap.ads[1]);
        assert_eq!(
            (a.id.as_str(), a.status, a.budget_type, a.budget),
            ("2001", AdStatus::Running, BudgetType::Daily, Cents(50000))
        );
        assert_eq!(a.story_id.as_deref(), Some("111_222"));
        assert_eq!(a.starts_at, Some("2026-11-01T02:00:00Z".parse().unwrap()));
        assert_eq!(
            (b.status, b.budget_type, b.budget),
            (AdStatus::Paused, BudgetType::Lifetime, Cents(3000000))
        );
        assert_eq!(b.ends_at, Some("2026-12-01T02:00:00Z".parse().unwrap()));

        let seen = fake.seen();
        assert_eq!(seen.len(), 5, "{seen:#?}");
        for s in &seen {
            assert_eq!(
                s.authorization.as_deref(),
                Some(format!("Bearer {TOKEN}").as_str())
            );
            assert!(!s.query.contains_key("access_token"), "{s:?}");
        }
        let paths: Vec<&str> = seen.iter().map(|s| s.path.as_str()).collect();
        assert_eq!(
            paths,
            [
                "act_1001",
                "act_1001/campaigns",
                "act_1001/campaigns",
                "act_1001/insights",
                "act_1001/ads"
            ]
        );
        // The second page is asked with the cursor, on the same address.
        assert_eq!(seen[2].query.get("after").map(String::as_str), Some("c1"));
        let insights = &seen[3].query;
        assert_eq!(insights.get("level").map(String::as_str), Some("campaign"));
        assert_eq!(
            insights.get("time_increment").map(String::as_str),
            Some("1")
        );
        let range: Value = serde_json::from_str(&insights["time_range"]).unwrap();
        assert_eq!(range, json!({"since": "2026-08-30", "until": "2026-11-27"}));
        assert!(seen[4].query["fields"].contains("adset{daily_budget,lifetime_budget"));
        fake.handle.stop(true).await;
    }

    #[tokio::test(flavor = "multi_thread")]
    async fn changes_are_posted_as_meta_documents_them_in_the_currencys_minor_units() {
        let fake = FakeMeta::start(TOKEN).await;
        let meta = MetaAds::new(&fake.base, Duration::from_secs(1)).unwrap();
        let done = meta
            .execute(
                &account("TWD"),
                TOKEN,
                &Execution::Pause {
                    ad_id: "2001".into(),
                },
            )
            .await
            .unwrap();
        assert_eq!(done.result["status"], "PAUSED");
        assert_eq!(fake.ad_status("2001").as_deref(), Some("PAUSED"));
        let budget = Execution::Budget {
            adset_id: "4001".into(),
            budget_type: BudgetType::Daily,
            amount: Cents(1250),
        };
        meta.execute(&account("USD"), TOKEN, &budget).await.unwrap();
        // 12.50 TWD has no whole-unit form: refused before anything is sent.
        let before = fake.seen().len();
        let e = meta
            .execute(&account("TWD"), TOKEN, &budget)
            .await
            .unwrap_err();
        assert!(e.0.contains("whole units"), "{e}");
        assert_eq!(fake.seen().len(), before);

        let boost = Execution::Boost {
            platform: "facebook".into(),
            story_id: "111_333".into(),
            instagram_user_id: Some("1784".into()),
            name: "fleetdesk boost p-1".into(),
            budget_type: BudgetType::Lifetime,
            amount: Cents(150000),
            starts_at: "2026-11-27T02:00:00Z".parse().unwrap(),
            ends_at: "2026-12-02T02:00:00Z".parse().unwrap(),
            countries: vec!["TW".into(), "HK".into()],
        };
        let made = meta.execute(&account("TWD"), TOKEN, &boost).await.unwrap();
        let created = made.created.expect("a new ad");
        let seen = fake.seen();
        let posts: Vec<_> = seen.iter().filter(|s| s.method == "POST").collect();
        let n = posts.len();
        let (campaign, adset, creative, ad) =
            (&posts[n - 4], &posts[n - 3], &posts[n - 2], &posts[n - 1]);
        assert_eq!(posts[0].path, "2001");
        assert_eq!(
            posts[0].form.get("status").map(String::as_str),
            Some("PAUSED")
        );
        assert_eq!(posts[1].path, "4001");
        assert_eq!(
            posts[1].form.get("daily_budget").map(String::as_str),
            Some("1250")
        );
        assert_eq!(campaign.path, "act_1001/campaigns");
        assert_eq!(campaign.form["objective"], "OUTCOME_ENGAGEMENT");
        assert_eq!(campaign.form["status"], "PAUSED");
        assert_eq!(campaign.form["special_ad_categories"], "[]");
        assert_eq!(adset.path, "act_1001/adsets");
        assert_eq!(adset.form["campaign_id"], created.campaign_id);
        assert_eq!(adset.form["lifetime_budget"], "1500");
        assert_eq!(adset.form["status"], "PAUSED");
        assert_eq!(adset.form["optimization_goal"], "POST_ENGAGEMENT");
        let targeting: Value = serde_json::from_str(&adset.form["targeting"]).unwrap();
        assert_eq!(
            targeting,
            json!({"geo_locations": {"countries": ["TW", "HK"]}})
        );
        assert_eq!(adset.form["start_time"], "2026-11-27T02:00:00Z");
        assert_eq!(adset.form["end_time"], "2026-12-02T02:00:00Z");
        assert_eq!(creative.path, "act_1001/adcreatives");
        assert_eq!(creative.form["object_story_id"], "111_333");
        assert_eq!(ad.path, "act_1001/ads");
        assert_eq!(ad.form["adset_id"], created.adset_id);
        assert_eq!(ad.form["status"], "PAUSED");
        let creative_ref: Value = serde_json::from_str(&ad.form["creative"]).unwrap();
        assert!(creative_ref["creative_id"].is_string());
        assert_eq!(fake.ad_status(&created.ad_id).as_deref(), Some("PAUSED"));
        // An instagram post's creative is its media, run as the account's Instagram user.
        let instagram = Execution::Boost {
            platform: "instagram".into(),
            story_id: "17900000000000001".into(),
            instagram_user_id: Some("1784".into()),
            name: "fleetdesk boost p-3".into(),
            budget_type: BudgetType::Daily,
            amount: Cents(30000),
            starts_at: "2026-11-27T02:00:00Z".parse().unwrap(),
            ends_at: "2026-11-29T02:00:00Z".parse().unwrap(),
            countries: vec!["TW".into()],
        };
        meta.execute(&account("TWD"), TOKEN, &instagram)
            .await
            .unwrap();
        let seen = fake.seen();
        let creative = seen
            .iter()
            .rev()
            .find(|s| s.path == "act_1001/adcreatives")
            .expect("a creative");
        assert_eq!(
            creative.form["source_instagram_media_id"],
            "17900000000000001"
        );
        assert_eq!(creative.form["instagram_user_id"], "1784");
        assert!(!creative.form.contains_key("object_story_id"));
        // A resume sets the campaign, the ad set and the ad active, outermost first.
        let resume = Execution::Resume {
            ad_id: "2002".into(),
            adset_id: "4002".into(),
            campaign_id: "3002".into(),
        };
        meta.execute(&account("TWD"), TOKEN, &resume).await.unwrap();
        let seen = fake.seen();
        let last: Vec<(&str, &str)> = seen[seen.len() - 3..]
            .iter()
            .map(|s| {
                (
                    s.path.as_str(),
                    s.form.get("status").map(String::as_str).unwrap_or(""),
                )
            })
            .collect();
        assert_eq!(
            last,
            [("3002", "ACTIVE"), ("4002", "ACTIVE"), ("2002", "ACTIVE")]
        );
        assert_eq!(fake.ad_status("2002").as_deref(), Some("ACTIVE"));
        fake.handle.stop(true).await;
    }

    #[tokio::test(flavor = "multi_thread")]
    async fn metas_errors_and_silence_fail_the_call_without_the_token() {
        let fake = FakeMeta::start(TOKEN).await;
        let meta = MetaAds::new(&fake.base, Duration::from_secs(1)).unwrap();
        let pause = |id: &str| Execution::Pause { ad_id: id.into() };
        let e = meta
            .execute(&account("TWD"), TOKEN, &pause("2999"))
            .await
            .unwrap_err();
        assert_eq!(
            e.0,
            "Meta answered 400: Unsupported post request. (code 100)"
        );
        let e = meta
            .execute(&account("TWD"), TOKEN, &pause("2998"))
            .await
            .unwrap_err();
        assert_eq!(e.0, "Meta did not answer in time");
        // A boost refused halfway names the parts it left behind, paused.
        let boost = Execution::Boost {
            platform: "facebook".into(),
            story_id: "111_bad".into(),
            instagram_user_id: None,
            name: "fleetdesk boost p-2".into(),
            budget_type: BudgetType::Daily,
            amount: Cents(10000),
            starts_at: "2026-11-27T02:00:00Z".parse().unwrap(),
            ends_at: "2026-11-29T02:00:00Z".parse().unwrap(),
            countries: vec!["TW".into()],
        };
        let e = meta
            .execute(&account("TWD"), TOKEN, &boost)
            .await
            .unwrap_err();
        assert!(e.0.starts_with("Meta answered 400: Invalid object_story_id (code 100); made before it, paused: campaign 9"), "{e}");
        assert!(e.0.contains(", ad set 9"), "{e}");
        let wrong = "EAAB-wrong-token-9999";
        let e = meta
            .sync(
                &account("TWD"),
                wrong,
                Date::constant(2026, 11, 1),
                Date::constant(2026, 11, 2),
            )
            .await
            .unwrap_err();
        assert_eq!(
            e.0,
            "Meta answered 401: Invalid OAuth access token. (code 190)"
        );
        assert!(!e.0.contains(wrong) && !format!("{meta:?}").contains(TOKEN));
        fake.handle.stop(true).await;
    }

    /// Through the service: the ad work syncs act_1001 from Meta, a person approves a pause,
    /// and the ad work pauses the ad on Meta with the token the environment variable holds.
    #[tokio::test(flavor = "multi_thread")]
    async fn the_ad_work_syncs_from_meta_and_executes_an_approved_pause_there() {
        let app = spawn_app().await;
        let fake = FakeMeta::start(TOKEN).await;
        let now = Timestamp::now();
        let worker = fleetdesk::worker::Worker::new(app.store.clone())
            .ad_platform(std::sync::Arc::new(
                MetaAds::new(&fake.base, Duration::from_secs(2)).unwrap(),
            ))
            .tokens(|name| (name == "ACME_META_TOKEN").then(|| TOKEN.to_owned()))
            .with_clock(move || now);
        sync(&worker).await;
        let op1 = app.agent_key("op1");
        let listed = ok(&ads(&app, &op1, "").await);
        let serum = listed["campaigns"]
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["id"] == "3001")
            .cloned()
            .unwrap();
        assert_eq!(serum["spend"], 220.0, "{listed}");
        assert_eq!(serum["clicks"], 100, "{listed}");
        assert_eq!(serum["ctr"], 2.0, "{listed}");
        assert_eq!(serum["cpc"], 2.2, "{listed}");
        let made = proposed(&app, &proposal("pause", json!({"ad_id": "2001"}))).await;
        ok(&decide(&app, made["decision_id"].as_str().unwrap(), "resolve").await);
        worker.run_due().await.unwrap();
        assert_eq!(fake.ad_status("2001").as_deref(), Some("PAUSED"));
        assert_eq!(
            proposal_status(&app, made["id"].as_str().unwrap()).await,
            "executed"
        );
        let text = ok(&ads(&app, &op1, "").await).to_string();
        assert!(!text.contains(TOKEN), "{text}");
        fake.handle.stop(true).await;
    }
}

// ---------------------------------------------------------------------------------------------
// Personal API: GET /ads (view_ads)

#[tokio::test(flavor = "multi_thread")]
async fn people_read_a_workspaces_ads_as_its_agents_do() {
    let app = spawn_app().await;
    sync(&ad_worker(&app, Timestamp::now())).await;
    let taiwan = app.workspace_id("Taiwan");
    let japan = app.workspace_id("Japan");
    let person = |who: &'static str, query: String| {
        let app = &app;
        async move {
            app.client
                .get(&format!("{USER}/ads?{query}"), &app.personal_key(who))
                .await
        }
    };
    let agent = ok(&ads(&app, &app.agent_key("op1"), "?days=7").await);
    let v = ok(&person("ann@acme.test", format!("workspace={taiwan}&days=7")).await);
    assert_eq!(v, agent, "the same answer as the workspace's agent gets");
    assert_eq!(v["campaigns"].as_array().map(Vec::len), Some(2), "{v}");
    let root = ok(&person("root@example.com", format!("workspace={taiwan}")).await);
    assert_eq!(root["cap"]["currency"], "TWD");

    // Ads not enabled: 403; another organization's, unknown: 404 naming workspace.
    assert_error(
        &person("ann@acme.test", format!("workspace={japan}")).await,
        403,
        "forbidden",
    );
    for (who, ws) in [
        ("olga@other.test", taiwan),
        ("ann@acme.test", uuid::Uuid::new_v4()),
    ] {
        let res = person(who, format!("workspace={ws}")).await;
        assert_eq!(assert_error(&res, 404, "not_found")["field"], "workspace");
    }
    assert_error(
        &person("cli@brand.test", format!("workspace={taiwan}")).await,
        403,
        "forbidden",
    );
    for bad in [
        String::new(),
        format!("workspace={taiwan}&days=0"),
        format!("workspace={taiwan}&days=91"),
    ] {
        let res = person("ann@acme.test", bad.clone()).await;
        assert_error_in(&bad, &res, 400, "invalid_request");
    }
    app.stop().await;
}
