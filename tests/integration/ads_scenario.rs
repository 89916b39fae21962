//! Issue 15's scenario through the real binary, with a local research provider and a local
//! stand-in of Meta's Marketing API: an agent quotes three products (one cached, one not
//! found), a person's approval is relayed, the service is killed in the middle of the work
//! and started again, and the ledger shows exactly the charges of the items found uncached; a
//! person makes a pick and the agent drafts with it; the agent proposes a budget raise past
//! the monthly cap (refused at approval) and a pause (executed on the platform).

use fleetdesk_pg::testing::TestDb;
use fleetdesk_tests::assert::{assert_error, ok};
use fleetdesk_tests::binary::{SERVE, Served, TempDir, fleetdesk_over, run, serve};
use fleetdesk_tests::client::Client;
use fleetdesk_tests::meta::FakeMeta;
use fleetdesk_tests::{count_at, sql_at};
use serde_json::{Value, json};
use std::collections::BTreeMap;
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::Duration;

const AGENT: &str = "/api/agent/v1";
const USER: &str = "/api/user/v1";
const PROVIDER_KEY: &str = "sk-scenario-provider-0123456789";
const META_TOKEN: &str = "EAAB-scenario-token-0123456789";

const TENANT: &str = r#"{
  "organizations": [{
    "name": "Scenario Agency",
    "monthly_credit_limit": 100,
    "members": [{"email": "ann@scn.test", "name": "Ann", "role": "agency", "keys": 1}],
    "workspaces": [{
      "name": "Taiwan",
      "ads_enabled": true,
      "ad_accounts": [{"id": "act_1001", "name": "Scenario TW", "currency": "TWD",
                       "token_env": "SCENARIO_META_TOKEN"}],
      "monthly_ad_cap": {"amount": 1000, "currency": "TWD"},
      "projects": [{"name": "beauty"}],
      "agents": [{"name": "writer", "role": "operator", "keys": 1}],
      "personas": [{"name": "Mia", "agent": "writer",
                    "accounts": [{"code": "TW-T001", "platform": "threads", "state": "active"}]}]
    }]
  }]
}"#;

/// The research provider: 111111 and 333333 found, 222222 not found; the first lookup of
/// 333333 never answers (the service is killed while it waits). Counts lookups per item.
async fn provider(
    lookups: Arc<Mutex<BTreeMap<String, usize>>>,
) -> (String, actix_web::dev::ServerHandle) {
    use actix_web::{App, HttpRequest, HttpResponse, HttpServer, web};
    type Lookups = Arc<Mutex<BTreeMap<String, usize>>>;
    async fn lookup(
        req: HttpRequest,
        body: web::Json<Value>,
        seen: web::Data<Lookups>,
    ) -> HttpResponse {
        if req
            .headers()
            .get("authorization")
            .and_then(|v| v.to_str().ok())
            != Some(&format!("Bearer {PROVIDER_KEY}"))
        {
            return HttpResponse::Unauthorized().finish();
        }
        let id = body.0["item_id"].as_str().unwrap_or_default().to_owned();
        let n = {
            let mut seen = seen.lock().unwrap();
            let n = seen.entry(id.clone()).or_default();
            *n += 1;
            *n
        };
        let found = |title: &str| {
            HttpResponse::Ok().json(json!({"found": true, "item": {
                "title": title, "price": 590, "currency": "TWD", "sales": 100, "rating": 4.7,
                "shop": "Glow", "url": format!("https://shopee.tw/product/1/{id}"),
                "selling_points": ["hydrating"]}}))
        };
        match (id.as_str(), n) {
            ("111111", _) => found("Glow Serum"),
            ("333333", 1) => {
                tokio::time::sleep(Duration::from_secs(600)).await;
                HttpResponse::ServiceUnavailable().finish()
            }
            ("333333", _) => found("Night Mask"),
            _ => HttpResponse::Ok().json(json!({"found": false})),
        }
    }
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    let data = web::Data::new(lookups);
    let server = HttpServer::new(move || {
        App::new()
            .app_data(data.clone())
            .route("/v1/lookups", web::post().to(lookup))
    })
    .workers(2)
    .listen(listener)
    .unwrap()
    .run();
    let handle = server.handle();
    tokio::spawn(server);
    (base, handle)
}

fn key_of(v: &Value) -> String {
    v["keys"][0].as_str().expect("a key").to_owned()
}

/// Polls `check` every 100 ms for up to `secs` seconds; panics with `what` otherwise.
async fn until<F, Fut>(what: &str, secs: u64, mut check: F)
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = bool>,
{
    for _ in 0..secs * 10 {
        if check().await {
            return;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("timed out waiting until {what}");
}

async fn research(client: &Client, key: &str, id: &str) -> Value {
    ok(&client.get(&format!("{AGENT}/ad-research/{id}"), key).await)
}

fn serve_cmd(db: &TestDb, dir: &Path, provider: &str, meta: &str) -> std::process::Command {
    let mut cmd = fleetdesk_over(SERVE, db, dir);
    cmd.env("FLEETDESK_AD_RESEARCH_URL", provider)
        .env("FLEETDESK_AD_RESEARCH_KEY", PROVIDER_KEY)
        .env("FLEETDESK_AD_PLATFORM", "meta")
        .env("FLEETDESK_META_GRAPH_URL", meta)
        .env("SCENARIO_META_TOKEN", META_TOKEN);
    cmd
}

#[tokio::test(flavor = "multi_thread")]
async fn research_survives_a_crash_picks_draft_and_approved_ad_changes_reach_the_platform() {
    let db = TestDb::new().await.expect("a test database");
    let dir = TempDir::new("adscn");
    let file = dir.path().join("tenant.json");
    std::fs::write(&file, TENANT).expect("write the tenant file");
    let mut apply = fleetdesk_over(&["admin", "apply"], &db, dir.path());
    apply.arg(&file);
    let (status, out, err) = run(apply, Duration::from_secs(60)).await;
    assert!(status.success(), "apply: {out}\n{err}");
    let applied: Value = serde_json::from_str(&out).expect("apply prints JSON");
    let org = &applied["organizations"][0];
    let ann = key_of(&org["members"][0]);
    let writer = key_of(&org["workspaces"][0]["agents"][0]);

    let lookups = Arc::new(Mutex::new(BTreeMap::new()));
    let (provider_url, provider_handle) = provider(lookups.clone()).await;
    let meta = FakeMeta::start(META_TOKEN).await;
    let first: Served = serve(
        serve_cmd(&db, dir.path(), &provider_url, &meta.base),
        Duration::from_secs(60),
    )
    .await;
    let mut first = first;
    let c = first.client.clone();
    let relay = |message_ref: &str| {
        json!({"on_behalf_of": {"name": "Ann", "role": "agency"},
               "origin": {"platform": "telegram", "message_ref": message_ref}})
    };

    // 111111 found once before: cached for the organization.
    let quote = |items: Value| json!({"kind": "product_brief", "items": items});
    let earlier = ok(&c
        .post(
            &format!("{AGENT}/ad-research/quote"),
            &writer,
            &quote(json!(["111111"])),
        )
        .await);
    let earlier_id = earlier["request_id"].as_str().unwrap().to_owned();
    ok(&c
        .post(
            &format!("{AGENT}/ad-research/{earlier_id}/approve"),
            &writer,
            &relay("m-1"),
        )
        .await);
    until("the earlier research is done", 30, || async {
        research(&c, &writer, &earlier_id).await["status"] == "done"
    })
    .await;

    // The scenario's request: one cached, one not found, one found.
    let quoted = ok(&c
        .post(
            &format!("{AGENT}/ad-research/quote"),
            &writer,
            &quote(json!(["111111", "222222", "333333"])),
        )
        .await);
    let cached: Vec<bool> = quoted["quote"]["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["cached"].as_bool().unwrap())
        .collect();
    assert_eq!(cached, [true, false, false], "{quoted}");
    assert_eq!(quoted["quote"]["credits"], 2, "{quoted}");
    let id = quoted["request_id"].as_str().unwrap().to_owned();
    let approved = ok(&c
        .post(
            &format!("{AGENT}/ad-research/{id}/approve"),
            &writer,
            &relay("m-2"),
        )
        .await);
    assert_eq!(approved["status"], "running", "{approved}");

    // Killed while the provider holds the lookup of 333333.
    until("the provider is asked for 333333", 30, || async {
        lookups.lock().unwrap().get("333333").copied() == Some(1)
    })
    .await;
    first.proc.kill().await;
    let mid = count_at(&db.url, &format!(
        "SELECT count(*) AS n FROM ad_research_items WHERE research_id = '{id}' AND outcome IS NULL"
    ))
    .await;
    assert_eq!(mid, 1, "only 333333 is unsettled after the crash");
    // The dead instance's lease on the job runs 10 minutes; as if they passed.
    sql_at(
        &db.url,
        "UPDATE jobs SET locked_until = now() WHERE kind = 'ad_research' AND status = 'running'",
    )
    .await;

    let mut second = serve(
        serve_cmd(&db, dir.path(), &provider_url, &meta.base),
        Duration::from_secs(60),
    )
    .await;
    let c = second.client.clone();
    until("the research is done after the restart", 60, || async {
        research(&c, &writer, &id).await["status"] == "done"
    })
    .await;
    let done = research(&c, &writer, &id).await;
    let outcomes: Vec<&str> = done["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["outcome"].as_str().unwrap())
        .collect();
    assert_eq!(outcomes, ["cached", "not_found", "found"], "{done}");
    assert_eq!(done["credits"]["charged"], 1, "{done}");
    let charged: Vec<&str> = done["charges"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["item"].as_str().unwrap())
        .collect();
    assert_eq!(charged, ["333333"], "{done}");
    // Each item was asked once, but the one the crash cut short.
    let asked = lookups.lock().unwrap().clone();
    assert_eq!(
        asked,
        BTreeMap::from([
            ("111111".into(), 1),
            ("222222".into(), 1),
            ("333333".into(), 2)
        ])
    );
    // The ledger a person reads: the two found uncached items, one credit each.
    let today = ok(&c.get(&format!("{USER}/today"), &ann).await);
    let credits = &today["credits"][0];
    assert_eq!(credits["charged"], 2, "{today}");
    let mut lines: Vec<&str> = credits["charges"]
        .as_array()
        .unwrap()
        .iter()
        .map(|l| l["item"].as_str().unwrap())
        .collect();
    lines.sort_unstable();
    assert_eq!(lines, ["111111", "333333"], "{today}");
    assert_eq!(
        count_at(&db.url, "SELECT count(*) AS n FROM ad_credit_ledger").await,
        2
    );

    // A person picks the card; the agent drafts the sponsored post with it.
    let pick = ok(&c
        .post(
            &format!("{USER}/ad-picks"),
            &ann,
            &json!({"research_id": id, "item": "333333", "code": "TW-T001",
                    "note": "night routine, lead with the price"}),
        )
        .await);
    let sp = pick["pick"].as_str().unwrap().to_owned();
    assert_eq!(pick["card"]["title"], "Night Mask", "{pick}");
    let open = ok(&c.get(&format!("{AGENT}/ad-picks"), &writer).await);
    assert_eq!(open["picks"][0]["pick"], sp.as_str(), "{open}");
    let draft = c
        .post(
            &format!("{AGENT}/drafts"),
            &writer,
            &json!({"code": "TW-T001", "body": "My night routine: the Night Mask", "pick": sp}),
        )
        .await;
    assert_eq!(draft.status, 201, "{}", draft.text());
    let post_id = draft.json()["draft"]["id"].as_str().unwrap().to_owned();
    let drafted = ok(&c.get(&format!("{AGENT}/ad-picks/{sp}"), &writer).await);
    assert_eq!(drafted["status"], "drafted", "{drafted}");
    assert_eq!(drafted["post_id"], post_id.as_str(), "{drafted}");
    assert_eq!(
        count_at(
            &db.url,
            &format!("SELECT count(*) AS n FROM posts WHERE id = '{post_id}' AND sponsored")
        )
        .await,
        1
    );

    // Ads: the service synced act_1001 from the platform on its first round.
    until("act_1001 is synced", 30, || async {
        let listed = c.get(&format!("{AGENT}/ads"), &writer).await;
        listed.status == 200 && listed.json()["ad_accounts"][0]["synced_at"].is_string()
    })
    .await;
    let propose = |body: Value| {
        let c = c.clone();
        let writer = writer.clone();
        async move {
            c.post(&format!("{AGENT}/ads/proposals"), &writer, &body)
                .await
        }
    };
    let raise = propose(json!({"kind": "budget", "ad_id": "2001", "amount": 5000,
                               "reason": "ROAS 4.1 over 14 days; expect twice the sales"}))
    .await;
    assert_eq!(raise.status, 201, "{}", raise.text());
    let raise_decision = raise.json()["decision_id"].as_str().unwrap().to_owned();
    let refused = c
        .post(
            &format!("{USER}/decisions/{raise_decision}/resolve"),
            &ann,
            &json!({}),
        )
        .await;
    let e = assert_error(&refused, 422, "rejected");
    assert!(
        e["message"].as_str().unwrap().contains("monthly cap"),
        "{e}"
    );

    let pause = propose(json!({"kind": "pause", "ad_id": "2001",
                               "reason": "CPC doubled over the last 3 days"}))
    .await;
    assert_eq!(pause.status, 201, "{}", pause.text());
    let pause = pause.json();
    ok(&c
        .post(
            &format!(
                "{USER}/decisions/{}/resolve",
                pause["decision_id"].as_str().unwrap()
            ),
            &ann,
            &json!({}),
        )
        .await);
    until("the pause reaches the platform", 30, || async {
        meta.ad_status("2001").as_deref() == Some("PAUSED")
    })
    .await;
    until("the proposal is executed", 30, || async {
        let listed = ok(&c.get(&format!("{AGENT}/ads"), &writer).await);
        listed["proposals"]
            .as_array()
            .unwrap()
            .iter()
            .any(|p| p["id"] == pause["id"] && p["status"] == "executed")
    })
    .await;
    // The raise never reached the platform: only the pause was posted, with the token.
    let posts: Vec<_> = meta
        .seen()
        .into_iter()
        .filter(|s| s.method == "POST")
        .collect();
    assert_eq!(posts.len(), 1, "{posts:?}");
    assert_eq!(posts[0].path, "2001");
    assert_eq!(
        posts[0].form.get("status").map(String::as_str),
        Some("PAUSED")
    );
    // The token and the provider's key are in no log line.
    let status = second.proc.terminate(Duration::from_secs(35)).await;
    assert!(status.success(), "{}", second.proc.output());
    for output in [first.proc.output(), second.proc.output()] {
        assert!(!output.contains(META_TOKEN) && !output.contains(PROVIDER_KEY));
    }
    provider_handle.stop(false).await;
    meta.handle.stop(false).await;
}
