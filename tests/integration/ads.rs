//! Paid ad research through HTTP over the standard tenant: POST /ad-research/quote, POST
//! /ad-research/{id}/approve and GET /ad-research/{id}. Acme's monthly credit limit is 100;
//! op1 works in Acme / Taiwan, jp1 in Acme / Japan, other1 in Other Agency.

use fleetdesk_tests::assert::{assert_error, assert_error_in, ok};
use fleetdesk_tests::{AppOptions, Response, TestApp, spawn_app, spawn_app_with};
use jiff::{SignedDuration, Timestamp};
use serde_json::{Value, json};

const AGENT: &str = "/api/agent/v1";

async fn quote(app: &TestApp, key: &str, body: &Value) -> Response {
    app.client
        .post(&format!("{AGENT}/ad-research/quote"), key, body)
        .await
}

async fn approve(app: &TestApp, key: &str, id: &str, body: &Value) -> Response {
    app.client
        .post(&format!("{AGENT}/ad-research/{id}/approve"), key, body)
        .await
}

async fn get(app: &TestApp, key: &str, id: &str) -> Response {
    app.client
        .get(&format!("{AGENT}/ad-research/{id}"), key)
        .await
}

fn products(items: &[&str]) -> Value {
    json!({"kind": "product_brief", "items": items})
}

/// A quote of op1 that must succeed: its request id.
async fn quoted(app: &TestApp, body: &Value) -> String {
    let res = quote(app, &app.agent_key("op1"), body).await;
    assert_eq!(res.status, 201, "{}", res.text());
    res.json()["request_id"]
        .as_str()
        .expect("request_id")
        .to_owned()
}

fn by_ann(message_ref: &str) -> Value {
    json!({
        "on_behalf_of": {"name": "Ann", "role": "agency"},
        "origin": {"platform": "telegram", "message_ref": message_ref},
        "effective_at": "2026-11-27T10:00:00+08:00",
    })
}

async fn research_jobs(app: &TestApp, id: &str) -> i64 {
    app.count(&format!(
        "SELECT count(*) AS n FROM jobs WHERE kind = 'ad_research' AND key = '{id}'"
    ))
    .await
}

fn at(t: Timestamp) -> String {
    t.to_string()
}

#[tokio::test(flavor = "multi_thread")]
async fn a_quote_reads_products_and_keywords_and_costs_the_uncached_items() {
    let app = spawn_app().await;
    let key = app.agent_key("op1");
    let before = Timestamp::now();
    let res = quote(
        &app,
        &key,
        &json!({"kind": "product_brief", "lane": "spring serum", "items": [
            "https://shopee.tw/product/123456/7890123?utm_source=x",
            "5551234",
            "www.amazon.co.jp/dp/B08N5WRWNW",
        ]}),
    )
    .await;
    assert_eq!(res.status, 201, "{}", res.text());
    let v = res.json();
    assert_eq!(v["kind"], "product_brief");
    assert_eq!(v["lane"], "spring serum");
    assert_eq!(
        v["quote"]["items"],
        json!([
            {"item": "https://shopee.tw/product/123456/7890123?utm_source=x", "searched": "shopee:123456.7890123", "cached": false},
            {"item": "5551234", "searched": "shopee:5551234", "cached": false},
            {"item": "www.amazon.co.jp/dp/B08N5WRWNW", "searched": "amazon:B08N5WRWNW", "cached": false},
        ])
    );
    assert_eq!(v["quote"]["credits"], 3);
    assert_eq!(v["quote"]["price_per_item"], 1);
    let expires: Timestamp = v["quote"]["expires_at"].as_str().unwrap().parse().unwrap();
    let after = Timestamp::now();
    assert!(
        expires >= before + SignedDuration::from_mins(30) - SignedDuration::from_secs(1)
            && expires <= after + SignedDuration::from_mins(30),
        "{expires}"
    );
    let id = v["request_id"].as_str().unwrap();
    assert_eq!(
        app.count(&format!(
            "SELECT count(*) AS n FROM ad_research_items WHERE research_id = '{id}'"
        ))
        .await,
        3
    );
    // Nothing is queried, charged or queued by a quote.
    assert_eq!(
        app.count("SELECT count(*) AS n FROM ad_credit_ledger")
            .await,
        0
    );
    assert_eq!(
        app.count("SELECT count(*) AS n FROM jobs WHERE kind = 'ad_research'")
            .await,
        0
    );

    // Keywords: traditional to simplified, `searched` shows the term used.
    let res = quote(
        &app,
        &key,
        &json!({"kind": "topic_scout", "items": ["保濕精華", "Sunscreen"]}),
    )
    .await;
    assert_eq!(res.status, 201, "{}", res.text());
    let v = res.json();
    assert_eq!(v["lane"], Value::Null);
    assert_eq!(v["quote"]["items"][0]["searched"], "保湿精华");
    assert_eq!(v["quote"]["items"][1]["searched"], "Sunscreen");
    assert_eq!(v["quote"]["credits"], 2);
}

#[tokio::test(flavor = "multi_thread")]
async fn quote_limits_hold_at_the_limit_and_one_past_it() {
    let app = spawn_app().await;
    let key = app.agent_key("op1");
    let ids = |n: usize| -> Vec<String> { (0..n).map(|i| format!("{}", 100_000 + i)).collect() };
    let keywords = |n: usize| -> Vec<String> { (0..n).map(|i| format!("kw{i}")).collect() };
    for (case, body) in [
        (
            "20 products",
            json!({"kind": "product_brief", "items": ids(20)}),
        ),
        (
            "10 keywords",
            json!({"kind": "topic_scout", "items": keywords(10)}),
        ),
        (
            "a keyword of 40",
            json!({"kind": "topic_scout", "items": ["字".repeat(40)]}),
        ),
        (
            "a lane of 80",
            json!({"kind": "topic_scout", "items": ["a"], "lane": "l".repeat(80)}),
        ),
    ] {
        let res = quote(&app, &key, &body).await;
        assert_eq!(res.status, 201, "{case}: {}", res.text());
    }
    let cases = [
        (
            "21 products",
            json!({"kind": "product_brief", "items": ids(21)}),
            "items",
        ),
        (
            "11 keywords",
            json!({"kind": "topic_scout", "items": keywords(11)}),
            "items",
        ),
        (
            "no items",
            json!({"kind": "topic_scout", "items": []}),
            "items",
        ),
        (
            "a keyword of 41",
            json!({"kind": "topic_scout", "items": ["字".repeat(41)]}),
            "items[0]",
        ),
        (
            "a blank keyword",
            json!({"kind": "topic_scout", "items": ["ok", "  "]}),
            "items[1]",
        ),
        (
            "a lane of 81",
            json!({"kind": "topic_scout", "items": ["a"], "lane": "l".repeat(81)}),
            "lane",
        ),
        (
            "another site",
            products(&["123456", "https://example.com/product/1/2"]),
            "items[1]",
        ),
        (
            "a look-alike host",
            products(&["https://shopee.tw.evil.net/product/1/2"]),
            "items[0]",
        ),
        ("a short id", products(&["12345"]), "items[0]"),
        (
            "white space around an id",
            products(&[" 123456"]),
            "items[0]",
        ),
        (
            "an upper-case host",
            products(&["https://Shopee.tw/product/1/2"]),
            "items[0]",
        ),
        (
            "a keyword of 41 with its spaces",
            json!({"kind": "topic_scout", "items": [format!(" {} ", "字".repeat(39))]}),
            "items[0]",
        ),
        (
            "an unknown kind",
            json!({"kind": "ad_spy", "items": ["a"]}),
            "kind",
        ),
    ];
    for (case, body, field) in cases {
        let res = quote(&app, &key, &body).await;
        let e = assert_error_in(case, &res, 400, "invalid_request");
        assert_eq!(e["field"], field, "{case}: {e}");
    }
    // Right in shape, refused by content: 422 naming the item.
    let rejected = [
        (
            "a marketplace page without a product",
            products(&["123456", "https://shopee.tw/"]),
            "items[1]",
        ),
        (
            "one product twice",
            products(&[
                "https://shopee.tw/product/1/2",
                "shopee.tw/x-i.1.2?from=share",
            ]),
            "items[1]",
        ),
        (
            "one keyword in two scripts",
            json!({"kind": "topic_scout", "items": ["保濕", "保湿"]}),
            "items[1]",
        ),
        (
            "one keyword in two cases",
            json!({"kind": "topic_scout", "items": ["a", "Serum", " SERUM"]}),
            "items[2]",
        ),
    ];
    for (case, body, field) in rejected {
        let res = quote(&app, &key, &body).await;
        let e = assert_error_in(case, &res, 422, "rejected");
        assert_eq!(e["field"], field, "{case}: {e}");
    }
    // Only the four good quotes were stored.
    assert_eq!(app.count("SELECT count(*) AS n FROM ad_research").await, 4);
}

#[tokio::test(flavor = "multi_thread")]
async fn the_organizations_recent_finds_are_free_its_prices_and_marketplace_apply() {
    let app = spawn_app().await;
    let key = app.agent_key("op1");
    // Earlier finds of Acme: a product 29 days ago, another 31 days ago, a keyword an hour
    // ago; and Other Agency's find of the third product, which Acme does not get for free.
    let first = quoted(&app, &products(&["111111", "222222", "333333"])).await;
    let words = quoted(
        &app,
        &json!({"kind": "topic_scout", "items": ["serum", "mask"]}),
    )
    .await;
    let other = quote(&app, &app.agent_key("other1"), &products(&["444444"])).await;
    assert_eq!(other.status, 201, "{}", other.text());
    let other = other.json()["request_id"].as_str().unwrap().to_owned();
    let now = Timestamp::now();
    for (id, position, ago) in [
        (&first, 0, SignedDuration::from_hours(29 * 24)),
        (&first, 1, SignedDuration::from_hours(31 * 24)),
        (&words, 0, SignedDuration::from_mins(1)),
        (&other, 0, SignedDuration::from_mins(1)),
    ] {
        app.sql(&format!(
            "UPDATE ad_research_items SET outcome = 'found', card = '{{}}', done_at = '{}' \
             WHERE research_id = '{id}' AND position = {position}",
            at(now - ago)
        ))
        .await;
    }
    // The keyword's item 1 was not found: no cache.
    app.sql(&format!(
        "UPDATE ad_research_items SET outcome = 'not_found', done_at = now() \
         WHERE research_id = '{words}' AND position = 1"
    ))
    .await;
    let v = ok(&quote(&app, &key, &products(&["111111", "222222", "444444"])).await);
    assert_eq!(
        v["quote"]["items"]
            .as_array()
            .unwrap()
            .iter()
            .map(|i| i["cached"].as_bool().unwrap())
            .collect::<Vec<_>>(),
        [true, false, false]
    );
    assert_eq!(v["quote"]["credits"], 2);
    let v = ok(&quote(
        &app,
        &key,
        &json!({"kind": "topic_scout", "items": ["SERUM", "mask"]}),
    )
    .await);
    assert_eq!(v["quote"]["items"][0]["cached"], true, "{v}");
    assert_eq!(v["quote"]["items"][1]["cached"], false, "{v}");
    // A keyword found before today's start in Taipei is no longer free.
    app.sql(&format!(
        "UPDATE ad_research_items SET done_at = now() - interval '25 hours' \
         WHERE research_id = '{words}' AND position = 0"
    ))
    .await;
    let v = ok(&quote(
        &app,
        &key,
        &json!({"kind": "topic_scout", "items": ["serum"]}),
    )
    .await);
    assert_eq!(v["quote"]["items"][0]["cached"], false, "{v}");

    // The organization's prices, and the workspace's marketplace for bare ids.
    app.sql("UPDATE organizations SET price_product_brief = 3, price_topic_keyword = 0 WHERE name = 'Acme'")
        .await;
    app.sql("UPDATE workspaces SET marketplace = 'momo' WHERE name = 'Taiwan'")
        .await;
    let v = ok(&quote(&app, &key, &products(&["555555", "666666"])).await);
    assert_eq!(v["quote"]["items"][0]["searched"], "momo:555555");
    assert_eq!(
        (
            v["quote"]["credits"].as_i64(),
            v["quote"]["price_per_item"].as_i64()
        ),
        (Some(6), Some(3))
    );
    let v = ok(&quote(
        &app,
        &key,
        &json!({"kind": "topic_scout", "items": ["a", "b"]}),
    )
    .await);
    assert_eq!(v["quote"]["credits"], 0);
}

#[tokio::test(flavor = "multi_thread")]
async fn approval_is_relayed_for_an_agency_person_and_queues_the_work_once() {
    let app = spawn_app().await;
    let key = app.agent_key("op1");
    let id = quoted(&app, &products(&["111111", "222222"])).await;

    let refused = [
        (
            "a client",
            json!({"on_behalf_of": {"name": "Cli", "role": "client"}, "origin": {"platform": "cli"}}),
            422,
            "rejected",
            Some("on_behalf_of.role"),
        ),
        (
            "the agent itself",
            json!({"on_behalf_of": {"name": "op1", "role": "agency"}, "origin": {"platform": "cli"}}),
            422,
            "rejected",
            Some("on_behalf_of.name"),
        ),
        (
            "no on_behalf_of",
            json!({"origin": {"platform": "cli"}}),
            400,
            "invalid_request",
            Some("on_behalf_of"),
        ),
        (
            "no origin",
            json!({"on_behalf_of": {"name": "Ann", "role": "agency"}}),
            400,
            "invalid_request",
            Some("origin"),
        ),
        (
            "an origin without platform",
            json!({"on_behalf_of": {"name": "Ann", "role": "agency"}, "origin": {"message_ref": "m"}}),
            400,
            "invalid_request",
            Some("origin.platform"),
        ),
    ];
    for (case, body, status, code, field) in refused {
        let e = assert_error_in(case, &approve(&app, &key, &id, &body).await, status, code);
        if let Some(field) = field {
            assert_eq!(e["field"], field, "{case}: {e}");
        }
    }
    assert_eq!(research_jobs(&app, &id).await, 0);

    let res = approve(&app, &key, &id, &by_ann("tg-1001")).await;
    assert_eq!(res.status, 200, "{}", res.text());
    let v = res.json();
    assert_eq!(v["status"], "running");
    assert_eq!(v["approved_by"]["type"], "relay");
    assert_eq!(v["approved_by"]["name"], "Ann");
    assert_eq!(v["approved_by"]["role"], "agency");
    assert_eq!(v["approved_by"]["origin"]["message_ref"], "tg-1001");
    assert_eq!(v["approved_by"]["agent"]["name"], "op1");
    assert_eq!(v["progress"], json!({"done": 0, "total": 2}));
    assert_eq!(
        v["credits"],
        json!({"quoted": 2, "price_per_item": 1, "charged": 0})
    );
    assert_eq!(v["result"], Value::Null);
    assert_eq!(research_jobs(&app, &id).await, 1);

    // The same approval resent answers as it stands; another is refused. op2 of the same
    // organization reads it (its relay is the same request); other1's organization does not.
    let again = approve(&app, &app.agent_key("op2"), &id, &by_ann("tg-1001")).await;
    assert_eq!(again.status, 200, "{}", again.text());
    assert_eq!(again.json()["approved_at"], v["approved_at"]);
    assert_error(
        &approve(&app, &key, &id, &by_ann("tg-1002")).await,
        422,
        "rejected",
    );
    let no_ref =
        json!({"on_behalf_of": {"name": "Ann", "role": "admin"}, "origin": {"platform": "cli"}});
    assert_error(&approve(&app, &key, &id, &no_ref).await, 422, "rejected");
    assert_eq!(research_jobs(&app, &id).await, 1);
    assert_error(
        &approve(&app, &app.agent_key("other1"), &id, &by_ann("tg-1001")).await,
        404,
        "not_found",
    );
    assert_error(
        &approve(
            &app,
            &key,
            "00000000-0000-4000-8000-000000000000",
            &by_ann("x"),
        )
        .await,
        404,
        "not_found",
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn approval_is_refused_past_the_quote_when_suspended_at_three_times_the_limit_or_without_quota()
 {
    let app = spawn_app_with(AppOptions {
        ad_research_daily_quota: Some(5),
        ..Default::default()
    })
    .await;
    let key = app.agent_key("op1");

    // Past its 30 minutes.
    let id = quoted(&app, &products(&["111111"])).await;
    app.sql(&format!(
        "UPDATE ad_research SET expires_at = now() - interval '1 second' WHERE id = '{id}'"
    ))
    .await;
    let e = assert_error(
        &approve(&app, &key, &id, &by_ann("m1")).await,
        422,
        "rejected",
    );
    assert!(e["message"].as_str().unwrap().contains("expired"), "{e}");
    let v = ok(&get(&app, &key, &id).await);
    assert_eq!(
        (v["status"].as_str(), v["expired"].as_bool()),
        (Some("quoted"), Some(true))
    );

    // Suspended.
    let id = quoted(&app, &products(&["111111"])).await;
    app.sql("UPDATE organizations SET suspended = true WHERE name = 'Acme'")
        .await;
    assert_error(
        &approve(&app, &key, &id, &by_ann("m2")).await,
        422,
        "rejected",
    );
    app.sql("UPDATE organizations SET suspended = false WHERE name = 'Acme'")
        .await;

    // Charged this month: 299 of a limit of 100 passes, 300 (three times) does not. A charge
    // of last month does not count.
    let earlier = quoted(&app, &products(&["999999"])).await;
    app.sql(&format!(
        "INSERT INTO ad_credit_ledger (organization_id, research_id, position, credits, reason, charged_at) \
         SELECT organization_id, id, 0, 299, 'found', now() FROM ad_research WHERE id = '{earlier}'"
    ))
    .await;
    let last_month = quoted(&app, &products(&["888888"])).await;
    app.sql(&format!(
        "INSERT INTO ad_credit_ledger (organization_id, research_id, position, credits, reason, charged_at) \
         SELECT organization_id, id, 0, 500, 'found', now() - interval '40 days' FROM ad_research WHERE id = '{last_month}'"
    ))
    .await;
    let res = approve(&app, &key, &id, &by_ann("m3")).await;
    assert_eq!(res.status, 200, "{}", res.text());
    app.sql(&format!(
        "UPDATE ad_credit_ledger SET credits = 300 WHERE research_id = '{earlier}'"
    ))
    .await;
    let id = quoted(&app, &products(&["111111"])).await;
    let e = assert_error(
        &approve(&app, &key, &id, &by_ann("m4")).await,
        422,
        "rejected",
    );
    assert!(e["message"].as_str().unwrap().contains("300"), "{e}");
    app.sql("DELETE FROM ad_credit_ledger").await;

    // The provider's quota of the day (Taipei): 4 of 5 used passes, 5 does not.
    let today = Timestamp::now()
        .to_zoned(jiff::tz::TimeZone::get("Asia/Taipei").unwrap())
        .date();
    app.sql(&format!(
        "INSERT INTO ad_research_quota (day, used) VALUES ('{today}', 5)"
    ))
    .await;
    let e = assert_error(
        &approve(&app, &key, &id, &by_ann("m5")).await,
        422,
        "rejected",
    );
    assert!(e["message"].as_str().unwrap().contains("quota"), "{e}");
    app.sql(&format!(
        "UPDATE ad_research_quota SET used = 4 WHERE day = '{today}'"
    ))
    .await;
    let res = approve(&app, &key, &id, &by_ann("m5")).await;
    assert_eq!(res.status, 200, "{}", res.text());
    assert_eq!(research_jobs(&app, &id).await, 1);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_request_is_read_by_its_organization_only() {
    let app = spawn_app().await;
    let id = quoted(
        &app,
        &json!({"kind": "topic_scout", "items": ["保濕"], "lane": "l1"}),
    )
    .await;
    // jp1 is in another workspace of the same organization.
    for agent in ["op1", "op2", "jp1"] {
        let v = ok(&get(&app, &app.agent_key(agent), &id).await);
        assert_eq!(v["id"], id.as_str(), "{agent}");
        assert_eq!(v["kind"], "topic_scout");
        assert_eq!(v["lane"], "l1");
        assert_eq!(v["status"], "quoted");
        assert_eq!(v["expired"], false);
        assert_eq!(v["approved_at"], Value::Null);
        assert_eq!(
            v["items"],
            json!([{"item": "保濕", "searched": "保湿", "cached": false, "outcome": null}])
        );
        assert_eq!(v["progress"], json!({"done": 0, "total": 1}));
        assert_eq!(v["charges"], json!([]));
        assert_eq!(v["result"], Value::Null);
    }
    assert_error(
        &get(&app, &app.agent_key("other1"), &id).await,
        404,
        "not_found",
    );
    assert_error(
        &get(
            &app,
            &app.agent_key("op1"),
            "00000000-0000-4000-8000-000000000000",
        )
        .await,
        404,
        "not_found",
    );
    // The community role has no drafts scope.
    assert_error(
        &get(&app, &app.agent_key("bot"), &id).await,
        403,
        "forbidden",
    );
    assert_error(
        &quote(&app, &app.agent_key("bot"), &products(&["111111"])).await,
        403,
        "forbidden",
    );
}

// ---------------------------------------------------------------------------------------------
// The research work (the job an approval queues), with the sandbox provider: an id ending in
// 404 is not found, in 500 fails, anything else is found.

fn worker(app: &TestApp, quota: Option<i64>) -> fleetdesk::worker::Worker {
    fleetdesk::worker::Worker::new(app.store.clone()).research_provider(
        std::sync::Arc::new(fleetdesk_vendors::sandbox::SandboxResearch),
        quota,
    )
}

async fn approved(app: &TestApp, body: &Value, message_ref: &str) -> String {
    let id = quoted(app, body).await;
    let res = approve(app, &app.agent_key("op1"), &id, &by_ann(message_ref)).await;
    assert_eq!(res.status, 200, "{}", res.text());
    id
}

fn outcomes(v: &Value) -> Vec<String> {
    v["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["outcome"].as_str().unwrap_or("none").to_owned())
        .collect()
}

/// The sandbox provider, slowly: each lookup waits `delay` first.
struct SlowResearch {
    delay: std::time::Duration,
    lookups: std::sync::atomic::AtomicUsize,
}

impl fleetdesk_ads::provider::ResearchProvider for SlowResearch {
    fn lookup<'a>(
        &'a self,
        kind: fleetdesk_ads::research::ResearchKind,
        key: &'a str,
        searched: &'a str,
    ) -> fleetdesk_kernel::BoxFuture<
        'a,
        Result<fleetdesk_ads::provider::Lookup, fleetdesk_ads::provider::ProviderError>,
    > {
        Box::pin(async move {
            tokio::time::sleep(self.delay).await;
            self.lookups
                .fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            let sandbox = fleetdesk_vendors::sandbox::SandboxResearch;
            fleetdesk_ads::provider::ResearchProvider::lookup(&sandbox, kind, key, searched).await
        })
    }
}

/// A job that works longer than its lease keeps it: its instance renews the lease while it
/// works, so another instance asking all along never takes it, and each item is looked up
/// once (2 s of lookups under a 1 s lease).
#[tokio::test(flavor = "multi_thread")]
async fn a_job_working_past_its_lease_keeps_it_while_it_works() {
    use fleetdesk_kernel::jobs::JobQueue;
    let app = spawn_app().await;
    let id = approved(
        &app,
        &products(&["111111", "222222", "333333", "444444", "555555"]),
        "lease",
    )
    .await;
    let slow = std::sync::Arc::new(SlowResearch {
        delay: std::time::Duration::from_millis(400),
        lookups: Default::default(),
    });
    let working = fleetdesk::worker::Worker::new(app.store.clone())
        .research_provider(slow.clone(), None)
        .lease(SignedDuration::from_secs(1));
    let run = tokio::spawn(async move { working.run_due().await });
    // Another instance asks for due research all along.
    let other = fleetdesk_pg::PgStore::new(fleetdesk_pg::connect(&app.db.url, 2).expect("pool"));
    let mut asked = 0;
    while !run.is_finished() {
        let taken = other
            .take(&["ad_research"], SignedDuration::from_secs(1))
            .await
            .unwrap();
        assert_eq!(
            taken.map(|j| j.key),
            None,
            "taken while its instance worked"
        );
        asked += 1;
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    assert_eq!(run.await.unwrap().unwrap(), 1);
    assert!(asked >= 15, "asked {asked} times");
    assert_eq!(slow.lookups.load(std::sync::atomic::Ordering::SeqCst), 5);
    assert_eq!(
        app.count(&format!(
            "SELECT count(*) AS n FROM jobs WHERE kind = 'ad_research' AND key = '{id}' \
             AND status = 'done' AND attempts = 1"
        ))
        .await,
        1
    );
    let v = ok(&get(&app, &app.agent_key("op1"), &id).await);
    assert_eq!(v["status"], "done", "{v}");
}

#[tokio::test(flavor = "multi_thread")]
async fn the_work_charges_each_item_found_once_and_nothing_else() {
    let app = spawn_app().await;
    let key = app.agent_key("op1");
    // 444444 was found for Acme before: cached, free.
    let before = approved(&app, &products(&["444444"]), "m0").await;
    assert_eq!(worker(&app, None).run_due().await.unwrap(), 1);
    assert_eq!(ok(&get(&app, &key, &before).await)["status"], "done");

    let id = approved(
        &app,
        &products(&["111111", "222404", "333500", "444444"]),
        "m1",
    )
    .await;
    let v = ok(&get(&app, &key, &id).await);
    assert_eq!(v["credits"]["quoted"], 3, "{v}");
    assert_eq!(worker(&app, None).run_due().await.unwrap(), 1);
    let v = ok(&get(&app, &key, &id).await);
    assert_eq!(v["status"], "done", "{v}");
    assert!(v["finished_at"].is_string(), "{v}");
    assert_eq!(outcomes(&v), ["found", "not_found", "failed", "cached"]);
    assert_eq!(v["progress"], json!({"done": 4, "total": 4}));
    assert_eq!(v["credits"]["charged"], 1);
    assert_eq!(v["charges"].as_array().unwrap().len(), 1, "{v}");
    assert_eq!(v["charges"][0]["item"], "111111");
    assert_eq!(v["charges"][0]["credits"], 1);
    assert_eq!(v["charges"][0]["reason"], "found: 111111");
    let cards = v["result"]["items"].as_array().unwrap();
    assert_eq!(cards.len(), 2, "{v}");
    assert_eq!(cards[0]["item"], "111111");
    assert_eq!(cards[1]["item"], "444444");
    assert!(
        cards
            .iter()
            .all(|c| c["third_party"] == true && c["found"] == true)
    );
    let markdown = v["result"]["markdown"].as_str().unwrap();
    assert!(
        markdown.contains("### Sandbox product shopee:111111"),
        "{markdown}"
    );
    assert!(markdown.contains("third-party material"), "{markdown}");
    // The ledger holds exactly the charge of the one item found uncached (and the earlier one).
    assert_eq!(
        app.count(&format!(
            "SELECT count(*) AS n FROM ad_credit_ledger WHERE research_id = '{id}'"
        ))
        .await,
        1
    );
    assert_eq!(
        app.count("SELECT coalesce(sum(credits), 0)::bigint AS n FROM ad_credit_ledger")
            .await,
        2
    );
    // Done is done: nothing runs again.
    assert_eq!(worker(&app, None).run_due().await.unwrap(), 0);

    // A person reads the ledger in their day: Acme's two charges, newest first, each with
    // its reason; Other Agency's charges stay Other Agency's (its limit of 0 allows none
    // until it is raised).
    app.sql("UPDATE organizations SET monthly_credit_limit = 10 WHERE name = 'Other Agency'")
        .await;
    let other = quote(&app, &app.agent_key("other1"), &products(&["777777"])).await;
    let other = other.json()["request_id"].as_str().unwrap().to_owned();
    let res = approve(&app, &app.agent_key("other1"), &other, &json!({
        "on_behalf_of": {"name": "Olga", "role": "agency"}, "origin": {"platform": "cli", "message_ref": "o1"}
    }))
    .await;
    assert_eq!(res.status, 200, "{}", res.text());
    worker(&app, None).run_due().await.unwrap();
    let day = ok(&app
        .client
        .get("/api/user/v1/today", &app.personal_key("ann@acme.test"))
        .await);
    let credits = day["credits"].as_array().unwrap();
    assert_eq!(credits.len(), 1, "{day}");
    let acme = &credits[0];
    assert_eq!(acme["organization"]["name"], "Acme");
    assert_eq!(
        (
            acme["monthly_credit_limit"].as_i64(),
            acme["stop_at"].as_i64()
        ),
        (Some(100), Some(300))
    );
    assert_eq!(acme["suspended"], false);
    assert_eq!(acme["charged"], 2);
    let lines = acme["charges"].as_array().unwrap();
    assert_eq!(lines.len(), 2, "{acme}");
    assert_eq!(lines[0]["research_id"], id.as_str());
    assert_eq!(lines[0]["item"], "111111");
    assert_eq!(lines[0]["reason"], "found: 111111");
    assert_eq!(lines[1]["research_id"], before.as_str());
    let month_start: Timestamp = acme["month_start"].as_str().unwrap().parse().unwrap();
    assert!(month_start <= Timestamp::now(), "{acme}");
    // A platform admin sees every organization's.
    let all = ok(&app
        .client
        .get("/api/user/v1/today", &app.personal_key("root@example.com"))
        .await);
    let names: Vec<&str> = all["credits"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["organization"]["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["Acme", "Other Agency"]);
    assert_eq!(all["credits"][1]["charged"], 1);
    // Clients never see it.
    assert_error(
        &app.client
            .get("/api/user/v1/today", &app.personal_key("cli@brand.test"))
            .await,
        403,
        "forbidden",
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn once_the_quota_is_used_up_the_rest_is_left_unqueried_and_free() {
    let app = spawn_app_with(AppOptions {
        ad_research_daily_quota: Some(2),
        ..Default::default()
    })
    .await;
    let key = app.agent_key("op1");
    let id = approved(&app, &products(&["111111", "222222", "333333"]), "q1").await;
    worker(&app, Some(2)).run_due().await.unwrap();
    let v = ok(&get(&app, &key, &id).await);
    assert_eq!(v["status"], "done", "{v}");
    assert_eq!(outcomes(&v), ["found", "found", "unqueried"]);
    assert_eq!(v["credits"]["charged"], 2);
    assert_eq!(
        app.count("SELECT used AS n FROM ad_research_quota").await,
        2
    );
    // The next approval of the day is refused: the quota is used up.
    let next = quoted(&app, &products(&["555555"])).await;
    let e = assert_error(
        &approve(&app, &key, &next, &by_ann("q2")).await,
        422,
        "rejected",
    );
    assert!(e["message"].as_str().unwrap().contains("quota"), "{e}");
}

#[tokio::test(flavor = "multi_thread")]
async fn work_cut_off_by_a_crash_goes_on_after_the_lease_and_charges_once() {
    use fleetdesk_ads::ports::{LookupOutcome, NextStep, ResearchRepo};
    use fleetdesk_kernel::jobs::{JobQueue, LEASE};
    let app = spawn_app().await;
    let key = app.agent_key("op1");
    let id = approved(&app, &products(&["111111", "222222"]), "c1").await;

    // An instance takes the job, is handed the first item, looks it up, records it and is
    // handed the second, then dies before recording it.
    let job = app
        .store
        .take(&["ad_research"], LEASE)
        .await
        .unwrap()
        .expect("the queued job");
    let now = Timestamp::now();
    let Some(NextStep::Query {
        position, price, ..
    }) = app.store.next_step(&job, None, now).await.unwrap()
    else {
        panic!("the first item to look up");
    };
    assert_eq!((position, price), (0, 1));
    let found = LookupOutcome::Found {
        card: json!({"item": "111111", "found": true, "third_party": true}),
        credits: 1,
        reason: "found: 111111".into(),
    };
    assert!(app.store.record_lookup(&job, 0, &found, now).await.unwrap());
    assert!(matches!(
        app.store.next_step(&job, None, now).await.unwrap(),
        Some(NextStep::Query { position: 1, .. })
    ));
    // While its lease runs, no other instance takes the job.
    assert_eq!(worker(&app, None).run_due().await.unwrap(), 0);

    // The lease passes: another instance takes the job and finishes from the second item.
    app.sql(
        "UPDATE jobs SET locked_until = now() - interval '1 second' WHERE kind = 'ad_research'",
    )
    .await;
    assert_eq!(worker(&app, None).run_due().await.unwrap(), 1);
    let v = ok(&get(&app, &key, &id).await);
    assert_eq!(v["status"], "done", "{v}");
    assert_eq!(outcomes(&v), ["found", "found"]);
    assert_eq!(v["credits"]["charged"], 2);
    // The dead instance's late record is refused: its lease is gone; nothing is charged twice.
    assert!(!app.store.record_lookup(&job, 1, &found, now).await.unwrap());
    assert!(!app.store.record_lookup(&job, 0, &found, now).await.unwrap());
    assert_eq!(
        app.count(&format!(
            "SELECT count(*) AS n FROM ad_credit_ledger WHERE research_id = '{id}'"
        ))
        .await,
        2
    );
    assert_eq!(
        app.count("SELECT attempts::bigint AS n FROM jobs WHERE kind = 'ad_research'")
            .await,
        2
    );
}

// ---------------------------------------------------------------------------------------------
// The provider's HTTP adapter against a local fake provider.

/// A fake research provider on a port of its own: checks the bearer key, then answers by the
/// item id: 111111 found (with buyer reviews the card must drop), 222222 `found: false`,
/// 333333 503, 444444 too late, 555555 404, 666666 a body that is no JSON. Every request's
/// body is kept.
async fn fake_provider(
    seen: std::sync::Arc<std::sync::Mutex<Vec<Value>>>,
) -> (String, actix_web::dev::ServerHandle) {
    use actix_web::{App, HttpRequest, HttpResponse, HttpServer, web};
    async fn lookup(
        req: HttpRequest,
        body: web::Json<Value>,
        seen: web::Data<std::sync::Arc<std::sync::Mutex<Vec<Value>>>>,
    ) -> HttpResponse {
        seen.lock().unwrap().push(body.0.clone());
        let auth = req
            .headers()
            .get("authorization")
            .and_then(|v| v.to_str().ok());
        if auth != Some("Bearer sk-test-provider-0123456789") {
            return HttpResponse::Unauthorized().finish();
        }
        let id = body.0["item_id"].as_str().unwrap_or_default().to_owned();
        match id.as_str() {
            "111111" => HttpResponse::Ok().json(json!({"found": true, "item": {
                "title": "Glow Serum 50ml", "price": 590, "currency": "TWD", "sales": 1200,
                "rating": 4.8, "shop": "Glow Official", "url": "https://shopee.tw/product/1/111111",
                "selling_points": ["hydrating", "fragrance-free"],
                "reviews": [{"nickname": "amy_tw", "avatar": "https://cdn/amy.png", "text": "ok"}]
            }})),
            "222222" => HttpResponse::Ok().json(json!({"found": false})),
            "333333" => HttpResponse::ServiceUnavailable().finish(),
            "444444" => {
                tokio::time::sleep(std::time::Duration::from_secs(3)).await;
                HttpResponse::Ok().json(json!({"found": false}))
            }
            "555555" => HttpResponse::NotFound().finish(),
            _ => HttpResponse::Ok().body("<html>oops</html>"),
        }
    }
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    let data = web::Data::new(seen);
    let server = HttpServer::new(move || {
        App::new()
            .app_data(data.clone())
            .route("/v1/lookups", web::post().to(lookup))
    })
    .workers(1)
    .listen(listener)
    .unwrap()
    .run();
    let handle = server.handle();
    tokio::spawn(server);
    (base, handle)
}

#[tokio::test(flavor = "multi_thread")]
async fn the_http_provider_is_asked_with_its_key_and_its_failures_are_not_charged() {
    use fleetdesk_vendors::research_http::HttpResearch;
    let app = spawn_app().await;
    let key = app.agent_key("op1");
    let seen = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let (base, server) = fake_provider(seen.clone()).await;
    let secret = "sk-test-provider-0123456789";
    let provider = HttpResearch::new(&base, secret.into(), std::time::Duration::from_secs(1))
        .expect("the adapter");
    assert!(!format!("{provider:?}").contains(secret));
    let run = |provider: HttpResearch| {
        fleetdesk::worker::Worker::new(app.store.clone())
            .research_provider(std::sync::Arc::new(provider), None)
    };

    let id = approved(
        &app,
        &products(&["111111", "222222", "333333", "444444", "555555", "666666"]),
        "h1",
    )
    .await;
    assert_eq!(run(provider).run_due().await.unwrap(), 1);
    let v = ok(&get(&app, &key, &id).await);
    assert_eq!(v["status"], "done", "{v}");
    assert_eq!(
        outcomes(&v),
        [
            "found",
            "not_found",
            "failed",
            "failed",
            "not_found",
            "failed"
        ]
    );
    assert_eq!(v["credits"]["charged"], 1);
    let card = &v["result"]["items"][0];
    assert_eq!(card["title"], "Glow Serum 50ml");
    assert_eq!(card["price"], 590.0);
    assert_eq!(card["angles"], json!(["hydrating", "fragrance-free"]));
    assert_eq!(card["third_party"], true);
    let text = v.to_string();
    assert!(
        !text.contains("amy_tw") && !text.contains("avatar"),
        "{text}"
    );
    // What the provider was asked: each product by marketplace and id.
    let asked = seen.lock().unwrap().clone();
    assert_eq!(asked.len(), 6);
    assert_eq!(
        asked[0],
        json!({"kind": "product_brief", "marketplace": "shopee", "item_id": "111111"})
    );
    // Why each failed, kept with the item, never with the key.
    let errors = app
        .count(&format!(
            "SELECT count(*) AS n FROM ad_research_items WHERE research_id = '{id}' \
             AND outcome = 'failed' AND error IS NOT NULL AND error NOT LIKE '%{secret}%'"
        ))
        .await;
    assert_eq!(errors, 3);

    // A wrong key: the provider refuses, the items fail, nothing is charged.
    let id = approved(
        &app,
        &json!({"kind": "topic_scout", "items": ["保濕"]}),
        "h2",
    )
    .await;
    let wrong =
        HttpResearch::new(&base, "sk-wrong".into(), std::time::Duration::from_secs(1)).unwrap();
    run(wrong).run_due().await.unwrap();
    let v = ok(&get(&app, &key, &id).await);
    assert_eq!(outcomes(&v), ["failed"]);
    assert_eq!(v["credits"]["charged"], 0);
    assert_eq!(
        seen.lock().unwrap().last().unwrap(),
        &json!({"kind": "topic_scout", "keyword": "保湿"})
    );
    server.stop(false).await;
}
