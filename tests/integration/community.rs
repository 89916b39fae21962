//! The community assistant (role `community`) through HTTP and MCP over the standard tenant:
//! POST /community/space, /wiki, /products, /digest, /tickets, and the community part of the
//! person's day. The bot `bot` is in Acme / Taiwan (spaces Mia fans: whatsapp, TW, track
//! beauty, location taipei; Beauty lounge: discord, TW; Old group: archived).

use fleetdesk_tests::assert::{assert_error, assert_error_in, ok};
use fleetdesk_tests::client::Request;
use fleetdesk_tests::{Response, TestApp, spawn_app};
use jiff::civil::Date;
use jiff::{Timestamp, ToSpan};
use serde_json::{Value, json};

const AGENT: &str = "/api/agent/v1";

fn space_id(app: &TestApp, name: &str) -> String {
    app.space_id(name).to_string()
}

async fn post(app: &TestApp, what: &str, body: &Value) -> Response {
    app.client
        .post(
            &format!("{AGENT}/community/{what}"),
            &app.agent_key("bot"),
            body,
        )
        .await
}

fn taipei_day(days: i64) -> Date {
    let zone = jiff::tz::TimeZone::get("Asia/Taipei").expect("zone");
    Timestamp::now()
        .to_zoned(zone)
        .date()
        .checked_add(days.days())
        .expect("date")
}

/// The spaces a community call must not reach: unknown, archived, of another workspace of the
/// organization, of another organization.
fn foreign_spaces(app: &TestApp) -> Vec<(&'static str, String)> {
    vec![
        ("unknown", "00000000-0000-4000-8000-000000000000".to_owned()),
        ("archived", space_id(app, "Old group")),
        ("other workspace", space_id(app, "Yui fans")),
        ("other organization", space_id(app, "Zoe fans")),
    ]
}

/// Each case's body is refused 400 naming its field; nothing is written.
async fn assert_invalid_fields(app: &TestApp, what: &str, cases: Vec<(&str, Value, &str)>) {
    for (case, body, field) in cases {
        let res = post(app, what, &body).await;
        let e = assert_error_in(case, &res, 400, "invalid_request");
        assert_eq!(e["field"], field, "{case}: {e}");
    }
}

/// Every space the bot must not reach is 404 for the body `make(space_id)`.
async fn assert_foreign_404(app: &TestApp, what: &str, make: impl Fn(&str) -> Value) {
    for (case, id) in foreign_spaces(app) {
        assert_error_in(case, &post(app, what, &make(&id)).await, 404, "not_found");
    }
}

// ---------------------------------------------------------------------------------------------
// Spaces and scope

#[tokio::test(flavor = "multi_thread")]
async fn a_space_is_found_by_channel_and_group_id_within_the_workspace_only() {
    let app = spawn_app().await;
    let v = ok(&post(
        &app,
        "space",
        &json!({"channel": "whatsapp", "external_id": " 1203630@g.us "}),
    )
    .await);
    assert_eq!(v["space_id"], space_id(&app, "Mia fans"), "{v}");
    assert_eq!(
        (
            &v["name"],
            &v["channel"],
            &v["market"],
            &v["track"],
            &v["location"]
        ),
        (
            &json!("Mia fans"),
            &json!("whatsapp"),
            &json!("TW"),
            &json!("beauty"),
            &json!("taipei")
        )
    );
    assert_eq!(
        (&v["status"], &v["space_type"], &v["language"]),
        (&json!("active"), &json!("fans"), &json!("zh-TW"))
    );
    let v = ok(&post(
        &app,
        "space",
        &json!({"channel": "discord", "external_id": "998877"}),
    )
    .await);
    assert_eq!(v["track"], Value::Null);

    for (case, channel, external_id) in [
        ("wrong channel", "discord", "1203630@g.us"),
        ("unknown", "whatsapp", "nope@g.us"),
        ("archived", "whatsapp", "555@g.us"),
        ("other workspace", "discord", "jp-1"),
        ("other organization", "whatsapp", "777@g.us"),
    ] {
        let res = post(
            &app,
            "space",
            &json!({"channel": channel, "external_id": external_id}),
        )
        .await;
        assert_error_in(case, &res, 404, "not_found");
    }
    // external_id 1-200.
    let long = "x".repeat(200);
    assert_error(
        &post(
            &app,
            "space",
            &json!({"channel": "whatsapp", "external_id": long}),
        )
        .await,
        404,
        "not_found",
    );
    assert_invalid_fields(
        &app,
        "space",
        vec![
            (
                "201",
                json!({"channel": "whatsapp", "external_id": "x".repeat(201)}),
                "external_id",
            ),
            (
                "empty",
                json!({"channel": "whatsapp", "external_id": ""}),
                "external_id",
            ),
            (
                "only spaces",
                json!({"channel": "whatsapp", "external_id": " \t "}),
                "external_id",
            ),
            (
                "channel",
                json!({"channel": "telegram", "external_id": "1"}),
                "channel",
            ),
        ],
    )
    .await;
    app.stop().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn operators_lack_the_community_scope() {
    let app = spawn_app().await;
    let op1 = app.agent_key("op1");
    let mia = space_id(&app, "Mia fans");
    for (what, body) in [
        (
            "space",
            json!({"channel": "whatsapp", "external_id": "1203630@g.us"}),
        ),
        ("wiki", json!({"space_id": mia})),
        ("products", json!({"space_id": mia})),
        (
            "digest",
            json!({"channel": "whatsapp", "space_id": mia, "day": taipei_day(0).to_string(), "members": []}),
        ),
        (
            "tickets",
            json!({"channel": "whatsapp", "space_id": mia, "category": "other", "summary": "s"}),
        ),
    ] {
        let res = app
            .client
            .post(&format!("{AGENT}/community/{what}"), &op1, &body)
            .await;
        assert_error_in(what, &res, 403, "forbidden");
    }
    // And the bot has nothing else.
    let res = app
        .client
        .get(&format!("{AGENT}/accounts"), &app.agent_key("bot"))
        .await;
    assert_error(&res, 403, "forbidden");
    assert_eq!(
        app.count("SELECT count(*) AS n FROM community_digests")
            .await,
        0
    );
    assert_eq!(
        app.count("SELECT count(*) AS n FROM community_tickets")
            .await,
        0
    );
    app.stop().await;
}

// ---------------------------------------------------------------------------------------------
// Knowledge base

/// A wiki entry written straight into the table, its terms made as the wiki makes them.
async fn entry(
    app: &TestApp,
    org: &str,
    project: Option<&str>,
    status: &str,
    title: &str,
    body: &str,
    tags: &[&str],
) -> String {
    let id = uuid::Uuid::new_v4();
    let owned: Vec<String> = tags.iter().map(|t| t.to_string()).collect();
    let made = fleetdesk_wiki::entry::Terms::of(
        fleetdesk_wiki::entry::Category::Playbook,
        title,
        &format!("summary of {title}"),
        &owned,
        body,
    );
    let quoted = |t: &str| t.replace('\'', "''");
    let project = match project {
        Some(p) => format!(
            "(SELECT p.id FROM projects p JOIN workspaces w ON w.id = p.workspace_id \
             WHERE w.name || '/' || p.name = '{p}')"
        ),
        None => "NULL".to_owned(),
    };
    let list = |tags: Vec<String>| {
        tags.iter()
            .map(|t| format!("'{t}'"))
            .collect::<Vec<_>>()
            .join(",")
    };
    let folded = list(made.folded_tags.clone());
    let tags = list(owned);
    app.sql(&format!(
        "INSERT INTO wiki_entries (id, organization_id, project_id, title_key, title, category, \
           summary, body, tags, folded_tags, version, status, terms_title, terms_summary, \
           terms_pivot, terms_body, terms_version) \
         SELECT '{id}', o.id, {project}, lower('{title}'), '{title}', 'playbook', 'summary of {title}', \
           '{body}', ARRAY[{tags}]::text[], ARRAY[{folded}]::text[], 1, '{status}', '{}', '{}', \
           '{}', '{}', {} \
         FROM organizations o WHERE o.name = '{org}'",
        quoted(&made.title),
        quoted(&made.summary),
        quoted(&made.pivot),
        quoted(&made.body),
        fleetdesk_wiki::entry::TERMS_VERSION,
    ))
    .await;
    id.to_string()
}

async fn wiki_titles(app: &TestApp, body: Value) -> Vec<String> {
    let v = ok(&post(app, "wiki", &body).await);
    v["entries"]
        .as_array()
        .expect("entries")
        .iter()
        .map(|e| {
            assert!(
                e["id"].is_string() && e["summary"].is_string() && e["body"].is_string(),
                "{e}"
            );
            e["title"].as_str().expect("title").to_owned()
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread")]
async fn wiki_entries_suit_a_space_by_their_axis_tags_and_are_ranked_by_the_query() {
    let app = spawn_app().await;
    let mia = space_id(&app, "Mia fans");
    let lounge = space_id(&app, "Beauty lounge");
    entry(
        &app,
        "Acme",
        None,
        "canon",
        "退貨政策",
        "七天內可以退貨，請保留發票。",
        &["community"],
    )
    .await;
    entry(
        &app,
        "Acme",
        None,
        "canon",
        "精華液用法",
        "保濕精華液早晚各一次，搭配晚安面膜。",
        &["community", "market:TW", "Track:Beauty"],
    )
    .await;
    entry(
        &app,
        "Acme",
        None,
        "canon",
        "Japan shipping",
        "We ship to Japan in 5 days.",
        &["community", "market:JP"],
    )
    .await;
    entry(
        &app,
        "Acme",
        None,
        "canon",
        "Tainan meetup",
        "Meetup in Tainan.",
        &["community", "location:tainan"],
    )
    .await;
    entry(
        &app,
        "Acme",
        None,
        "canon",
        "Taipei meetup",
        "Meetup in Taipei at the store.",
        &["community", "location:taipei"],
    )
    .await;
    entry(
        &app,
        "Acme",
        None,
        "canon",
        "Internal voice",
        "精華液 voice notes",
        &["voice"],
    )
    .await;
    entry(
        &app,
        "Acme",
        None,
        "draft",
        "Draft answer",
        "精華液 draft",
        &["community"],
    )
    .await;
    entry(
        &app,
        "Acme",
        Some("Taiwan/food"),
        "canon",
        "Food corner",
        "Snacks we like.",
        &["community"],
    )
    .await;
    entry(
        &app,
        "Acme",
        Some("Japan/beauty"),
        "canon",
        "Japan beauty",
        "精華液 in Japan.",
        &["community"],
    )
    .await;
    entry(
        &app,
        "Other Agency",
        None,
        "canon",
        "Other answer",
        "精華液 elsewhere",
        &["community"],
    )
    .await;

    // Mia fans (TW, beauty, taipei): general entries, its market, track and location.
    let mut all = wiki_titles(&app, json!({"space_id": mia, "limit": 20})).await;
    all.sort();
    assert_eq!(
        all,
        ["Food corner", "Taipei meetup", "精華液用法", "退貨政策"]
    );
    // Beauty lounge (TW, no track or location): no entry of the track or location axes.
    let mut lounge_all = wiki_titles(&app, json!({"space_id": lounge, "query": ""})).await;
    lounge_all.sort();
    assert_eq!(lounge_all, ["Food corner", "退貨政策"]);

    // Ranked by the query, in either script.
    assert_eq!(
        wiki_titles(&app, json!({"space_id": mia, "query": "精华液怎么用"})).await[0],
        "精華液用法"
    );
    assert_eq!(
        wiki_titles(&app, json!({"space_id": mia, "query": "退货"})).await,
        ["退貨政策"]
    );
    assert_eq!(
        wiki_titles(&app, json!({"space_id": mia, "query": "meetup"})).await,
        ["Taipei meetup"]
    );
    assert!(
        wiki_titles(&app, json!({"space_id": mia, "query": "zebra quantum"}))
            .await
            .is_empty()
    );
    // Default 5, limit 1-20, query up to 200.
    assert_eq!(
        wiki_titles(&app, json!({"space_id": mia, "limit": 1}))
            .await
            .len(),
        1
    );
    assert_eq!(
        wiki_titles(&app, json!({"space_id": mia, "query": "精".repeat(200)}))
            .await
            .len(),
        0
    );
    assert_invalid_fields(
        &app,
        "wiki",
        vec![
            ("limit 21", json!({"space_id": mia, "limit": 21}), "limit"),
            ("limit 0", json!({"space_id": mia, "limit": 0}), "limit"),
            (
                "query 201",
                json!({"space_id": mia, "query": "x".repeat(201)}),
                "query",
            ),
            ("no space", json!({"query": "x"}), "space_id"),
        ],
    )
    .await;
    assert_foreign_404(&app, "wiki", |id| json!({"space_id": id})).await;
    app.stop().await;
}

/// The names of a community_products answer.
fn names(v: Value) -> Vec<String> {
    v["products"]
        .as_array()
        .expect("products")
        .iter()
        .map(|p| p["name"].as_str().unwrap().to_owned())
        .collect()
}

#[tokio::test(flavor = "multi_thread")]
async fn products_are_only_those_on_sale_found_by_the_query() {
    let app = spawn_app().await;
    let mia = space_id(&app, "Mia fans");
    let v = ok(&post(&app, "products", &json!({"space_id": mia})).await);
    assert_eq!(names(v.clone()), ["Night Mask", "Serum"]);
    let serum = &v["products"][1];
    assert_eq!(
        (&serum["price"], &serum["url"]),
        (&json!("NT$590"), &json!("https://shop.test/serum"))
    );
    // Matched on name and summary; the one not on sale never.
    for (query, expected) in [
        ("面膜", &["Night Mask"][..]),
        ("保湿 serum", &["Serum"][..]),
        ("lipstick", &[][..]),
    ] {
        let found = ok(&post(&app, "products", &json!({"space_id": mia, "query": query})).await);
        assert_eq!(names(found), expected, "{query}");
    }
    assert_eq!(
        names(ok(&post(
            &app,
            "products",
            &json!({"space_id": mia, "limit": 1})
        )
        .await))
        .len(),
        1
    );
    assert_eq!(
        names(ok(&post(
            &app,
            "products",
            &json!({"space_id": mia, "limit": 10, "query": "x".repeat(200)})
        )
        .await))
        .len(),
        0
    );
    assert_invalid_fields(
        &app,
        "products",
        vec![
            ("limit 11", json!({"space_id": mia, "limit": 11}), "limit"),
            ("limit 0", json!({"space_id": mia, "limit": 0}), "limit"),
            (
                "query 201",
                json!({"space_id": mia, "query": "x".repeat(201)}),
                "query",
            ),
        ],
    )
    .await;
    assert_foreign_404(&app, "products", |id| json!({"space_id": id})).await;
    app.stop().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn wiki_limits_cut_more_suiting_entries_than_they_allow() {
    let app = spawn_app().await;
    let mia = space_id(&app, "Mia fans");
    // 21 entries suiting Mia fans (general, of its market, track or location), and entries
    // that do not suit it, which must never fill the limit.
    for i in 0..21 {
        let tags: &[&str] = match i % 4 {
            0 => &["community"],
            1 => &["Community", "market: tw"],
            2 => &["community", "TRACK:Beauty "],
            _ => &["community", "location:taipei", "market:TW"],
        };
        entry(
            &app,
            "Acme",
            None,
            "canon",
            &format!("Suits {i:02}"),
            "面膜 tips",
            tags,
        )
        .await;
    }
    for (i, tags) in [
        &["community", "market:JP"][..],
        &["community", "track:food"],
        &["community", "location:tainan"],
        &["faq"],
    ]
    .iter()
    .enumerate()
    {
        entry(
            &app,
            "Acme",
            None,
            "canon",
            &format!("Elsewhere {i}"),
            "面膜 tips",
            tags,
        )
        .await;
    }
    for query in [json!(null), json!("面膜")] {
        let titles = wiki_titles(&app, json!({"space_id": mia, "query": query})).await;
        assert_eq!(titles.len(), 5, "{query}: {titles:?}");
        let titles = wiki_titles(&app, json!({"space_id": mia, "query": query, "limit": 20})).await;
        assert_eq!(titles.len(), 20, "{query}: {titles:?}");
        assert!(titles.iter().all(|t| t.starts_with("Suits ")), "{titles:?}");
    }
    assert_limit_past(&app, "wiki", &mia, 21).await;
    app.stop().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn the_assistant_s_wiki_search_crosses_languages_as_the_knowledge_base_does() {
    let app = spawn_app().await;
    let mia = space_id(&app, "Mia fans");
    entry(
        &app,
        "Acme",
        None,
        "canon",
        "退貨政策",
        "七天內可以退貨，請保留發票。",
        &["community"],
    )
    .await;
    entry(
        &app,
        "Acme",
        None,
        "canon",
        "Refund requests",
        "Refunds are handled in private messages within two days.",
        &["community"],
    )
    .await;
    entry(
        &app,
        "Acme",
        None,
        "canon",
        "Meetup",
        "Meetup in Taipei at the store.",
        &["community"],
    )
    .await;
    // English finds the Chinese entry (CC-CEDICT: 退貨 is "to return merchandise"), Chinese
    // of either script the English one (退款 is "to refund").
    let titles = wiki_titles(
        &app,
        json!({"space_id": mia, "query": "return merchandise"}),
    )
    .await;
    assert_eq!(titles, ["退貨政策"]);
    for q in ["退款", "退款怎麼處理"] {
        let titles = wiki_titles(&app, json!({"space_id": mia, "query": q})).await;
        assert_eq!(
            titles.first().map(String::as_str),
            Some("Refund requests"),
            "{q}"
        );
    }
    app.stop().await;
}

/// `limit` one past its maximum is 400 naming it.
async fn assert_limit_past(app: &TestApp, what: &str, space: &str, limit: i64) {
    let body = json!({"space_id": space, "limit": limit});
    assert_invalid_fields(app, what, vec![("limit one past", body, "limit")]).await;
}

/// A product written straight into the catalog, its terms made as the tenant file makes them.
async fn product(app: &TestApp, workspace: &str, name: &str, summary: &str, on_sale: bool) {
    let terms = fleetdesk_wiki::search::index_text(&format!("{name} {summary}"));
    app.sql(&format!(
        "INSERT INTO products (workspace_id, name, on_sale, summary, price, url, terms) \
         SELECT w.id, '{name}', {on_sale}, '{summary}', 'NT$100', 'https://shop.test/x', '{}' \
         FROM workspaces w WHERE w.name = '{workspace}'",
        terms.replace('\'', "''")
    ))
    .await;
}

#[tokio::test(flavor = "multi_thread")]
async fn product_limits_cut_more_matching_products_than_they_allow_within_the_workspace() {
    let app = spawn_app().await;
    let mia = space_id(&app, "Mia fans");
    // 11 more on sale in Taiwan (13 with Serum and Night Mask), one not on sale, and products
    // of Japan (same organization, another workspace) that match the same words.
    for i in 0..11 {
        product(
            &app,
            "Taiwan",
            &format!("Mask {i:02}"),
            "面膜 sheet mask",
            true,
        )
        .await;
    }
    product(&app, "Taiwan", "Mask retired", "面膜 sheet mask", false).await;
    for i in 0..12 {
        product(
            &app,
            "Japan",
            &format!("Japan mask {i:02}"),
            "面膜 sheet mask",
            true,
        )
        .await;
    }
    for query in [json!(null), json!("面膜"), json!("mask")] {
        let got = names(ok(&post(
            &app,
            "products",
            &json!({"space_id": mia, "query": query}),
        )
        .await));
        assert_eq!(got.len(), 3, "{query}: {got:?}");
        let got = names(ok(&post(
            &app,
            "products",
            &json!({"space_id": mia, "query": query, "limit": 10}),
        )
        .await));
        assert_eq!(got.len(), 10, "{query}: {got:?}");
        assert!(
            got.iter()
                .all(|n| !n.starts_with("Japan") && n != "Mask retired"),
            "{query}: {got:?}"
        );
    }
    assert_limit_past(&app, "products", &mia, 11).await;
    app.stop().await;
}

// ---------------------------------------------------------------------------------------------
// Digests

fn member(i: usize) -> Value {
    json!({"external_id": format!("m{i}"), "message_count": i % 10})
}

fn digest(space: &str, channel: &str, day: Date, members: Vec<Value>) -> Value {
    json!({"channel": channel, "space_id": space, "day": day.to_string(), "members": members})
}

#[tokio::test(flavor = "multi_thread")]
async fn a_digest_is_stored_once_per_space_and_day_with_every_field_at_its_limit() {
    let app = spawn_app().await;
    let mia = space_id(&app, "Mia fans");
    let today = taipei_day(0);
    let full = json!({
        "external_id": "e".repeat(200),
        "display_name": "d".repeat(80),
        "message_count": 10000,
        "summary": "s".repeat(200),
        "tags": (0..12).map(|i| json!({"kind": if i % 2 == 0 {"interest"} else {"intent"},
                                       "value": format!("{i}{}", "v".repeat(39 - i.to_string().len())),
                                       "confidence": if i == 0 { json!(1) } else { json!(0.5) }}))
                     .collect::<Vec<_>>(),
    });
    let mut members: Vec<Value> = (1..500).map(member).collect();
    members.insert(0, full);
    // A repeat of a member: stored once (the first listing), counted skipped.
    let mut with_repeat = members.clone();
    with_repeat.push(json!({"external_id": "m1", "message_count": 0}));
    let res = post(
        &app,
        "digest",
        &digest(&mia, "whatsapp", today, members.clone()),
    )
    .await;
    // 501 listings is one past the limit.
    let too_many = post(
        &app,
        "digest",
        &digest(&mia, "whatsapp", today, with_repeat),
    )
    .await;
    assert_eq!(
        assert_error(&too_many, 400, "invalid_request")["field"],
        "members"
    );
    assert_eq!(res.status, 201, "{}", res.text());
    let v = res.json();
    assert_eq!(
        v,
        json!({"space_id": mia, "day": today.to_string(), "members": 500, "skipped": 0})
    );
    assert_eq!(
        app.count("SELECT count(*) AS n FROM community_digest_members")
            .await,
        500
    );

    // A second digest of the day: 422, whatever its content.
    let again = post(
        &app,
        "digest",
        &digest(&mia, "whatsapp", today, vec![member(1)]),
    )
    .await;
    let e = assert_error(&again, 422, "rejected");
    assert!(e["message"].as_str().unwrap().contains("already"), "{e}");

    // Repeats are skipped; an empty list is a digest too.
    let lounge = space_id(&app, "Beauty lounge");
    let v = ok(&post(
        &app,
        "digest",
        &digest(
            &lounge,
            "discord",
            taipei_day(-1),
            vec![member(1), member(2), member(1)],
        ),
    )
    .await);
    assert_eq!((&v["members"], &v["skipped"]), (&json!(2), &json!(1)));
    let v = ok(&post(
        &app,
        "digest",
        &digest(&lounge, "discord", taipei_day(-2), vec![]),
    )
    .await);
    assert_eq!((&v["members"], &v["skipped"]), (&json!(0), &json!(0)));
    assert_eq!(
        app.count("SELECT count(*) AS n FROM community_digests")
            .await,
        3
    );
    app.stop().await;
}

/// JSON with every character beyond ASCII escaped (`\uXXXX`, surrogate pairs beyond the
/// basic plane), as clients that escape non-ASCII send it.
fn ascii_json(v: &Value) -> Vec<u8> {
    let mut out = String::new();
    for c in serde_json::to_string(v).expect("json").chars() {
        if c.is_ascii() {
            out.push(c);
        } else {
            let mut units = [0u16; 2];
            for u in c.encode_utf16(&mut units) {
                out.push_str(&format!("\\u{u:04x}"));
            }
        }
    }
    out.into_bytes()
}

/// POST /community/digest with the bot's key and these bytes as the JSON body.
async fn post_digest_bytes(app: &TestApp, body: Vec<u8>) -> Response {
    app.client
        .send(
            Request::new("POST", &format!("{AGENT}/community/digest"))
                .bearer(&app.agent_key("bot"))
                .header("Content-Type", "application/json")
                .raw(body),
        )
        .await
}

#[tokio::test(flavor = "multi_thread")]
async fn a_full_size_chinese_digest_sent_escaped_is_accepted() {
    let app = spawn_app().await;
    let mia = space_id(&app, "Mia fans");
    let han = |n: usize, seed: usize| -> String {
        (0..n)
            .map(|k| char::from_u32(0x4e00 + ((seed * 31 + k * 7) % 0x5000) as u32).unwrap())
            .collect()
    };
    let members: Vec<Value> = (0..500)
        .map(|i| {
            json!({
                "external_id": format!("{i:03}{}", han(197, i)),
                "display_name": han(80, i + 1),
                "message_count": 10000,
                "summary": han(200, i + 2),
                "tags": (0..12).map(|k| json!({
                    "kind": if k % 2 == 0 { "interest" } else { "intent" },
                    "value": han(40, i * 12 + k),
                    "confidence": 0.123456789,
                })).collect::<Vec<_>>(),
            })
        })
        .collect();
    let body = ascii_json(&digest(&mia, "whatsapp", taipei_day(0), members));
    assert!(body.len() > 2_700_000, "{} bytes", body.len());
    assert!(body.is_ascii());
    let res = post_digest_bytes(&app, body).await;
    assert_eq!(res.status, 201, "{}", res.text());
    assert_eq!(res.json()["members"], 500);
    // The bound (6 788 096 bytes: every character of every text a 12-byte surrogate pair, and
    // room for punctuation) and one past it.
    let limit = 6_788_096;
    let padded = |len: usize| {
        let mut body =
            serde_json::to_vec(&digest(&mia, "whatsapp", taipei_day(-1), vec![])).expect("json");
        body.splice(1..1, std::iter::repeat_n(b' ', len - body.len()));
        body
    };
    for (len, status) in [(limit, 201), (limit + 1, 413)] {
        let res = post_digest_bytes(&app, padded(len)).await;
        assert_eq!(res.status, status, "{len} bytes: {}", res.text());
    }
    assert_eq!(
        app.count(
            "SELECT count(*) AS n FROM community_digest_members \
             WHERE jsonb_array_length(tags) = 12 AND char_length(summary) = 200 \
               AND char_length(display_name) = 80 AND char_length(external_id) = 200"
        )
        .await,
        500
    );
    app.stop().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_display_name_that_is_a_phone_number_or_e_mail_address_is_not_stored() {
    let app = spawn_app().await;
    let mia = space_id(&app, "Mia fans");
    let named =
        |id: &str, name: &str| json!({"external_id": id, "message_count": 1, "display_name": name});
    let v = ok(&post(
        &app,
        "digest",
        &digest(
            &mia,
            "whatsapp",
            taipei_day(0),
            vec![
                named("a", "+886 912 345 678"),
                named("b", "amy@example.com"),
                named("c", " 小美 🌸 "),
                named("886912345678@s.whatsapp.net", "Amy 2"),
            ],
        ),
    )
    .await);
    assert_eq!(v["members"], 4);
    let stored = |id: &str| {
        format!(
            "SELECT count(*) AS n FROM community_digest_members WHERE external_id = '{id}' \
             AND display_name IS NULL"
        )
    };
    assert_eq!(app.count(&stored("a")).await, 1);
    assert_eq!(app.count(&stored("b")).await, 1);
    assert_eq!(
        app.count(
            "SELECT count(*) AS n FROM community_digest_members \
             WHERE external_id = 'c' AND display_name = '小美 🌸'"
        )
        .await,
        1
    );
    // The member id is the platform's, kept as given (a WhatsApp id is a phone number).
    assert_eq!(
        app.count(
            "SELECT count(*) AS n FROM community_digest_members \
             WHERE external_id = '886912345678@s.whatsapp.net' AND display_name = 'Amy 2'"
        )
        .await,
        1
    );
    app.stop().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_digest_one_past_each_limit_is_refused_naming_the_field() {
    let app = spawn_app().await;
    let mia = space_id(&app, "Mia fans");
    let today = taipei_day(0);
    let with = |patch: Value| {
        let mut m = json!({"external_id": "amy", "message_count": 1});
        for (k, v) in patch.as_object().unwrap() {
            m[k] = v.clone();
        }
        digest(&mia, "whatsapp", today, vec![member(7), m])
    };
    let tag = |kind: &str, value: &str, confidence: Value| json!({"kind": kind, "value": value, "confidence": confidence});
    assert_invalid_fields(
        &app,
        "digest",
        vec![
        (
            "external_id 201",
            with(json!({"external_id": "e".repeat(201)})),
            "members[1].external_id",
        ),
        (
            "external_id empty",
            with(json!({"external_id": ""})),
            "members[1].external_id",
        ),
        (
            "display_name 81",
            with(json!({"display_name": "d".repeat(81)})),
            "members[1].display_name",
        ),
        (
            "message_count 10001",
            with(json!({"message_count": 10001})),
            "members[1].message_count",
        ),
        (
            "message_count -1",
            with(json!({"message_count": -1})),
            "members[1].message_count",
        ),
        (
            "no message_count",
            json!({"channel": "whatsapp", "space_id": mia, "day": today.to_string(),
                                     "members": [{"external_id": "x"}]}),
            "members[0].message_count",
        ),
        (
            "summary 201",
            with(json!({"summary": "s".repeat(201)})),
            "members[1].summary",
        ),
        (
            "phone",
            with(json!({"summary": "asked to call 0912-345-678"})),
            "members[1].summary",
        ),
        (
            "e-mail",
            with(json!({"summary": "wrote from amy@example.com"})),
            "members[1].summary",
        ),
        (
            "order number",
            with(json!({"summary": "訂單編號 TW20261125001 沒到"})),
            "members[1].summary",
        ),
        (
            "13 tags",
            with(json!({"tags": vec![tag("interest", "serum", json!(0.5)); 13]})),
            "members[1].tags",
        ),
        (
            "tag kind",
            with(json!({"tags": [tag("mood", "happy", json!(0.5))]})),
            "members[1].tags[0].kind",
        ),
        (
            "tag value 41",
            with(json!({"tags": [tag("intent", &"v".repeat(41), json!(0.5))]})),
            "members[1].tags[0].value",
        ),
        (
            "tag value empty",
            with(json!({"tags": [tag("intent", "", json!(0.5))]})),
            "members[1].tags[0].value",
        ),
        (
            "tag value only spaces",
            with(json!({"tags": [tag("intent", "   ", json!(0.5))]})),
            "members[1].tags[0].value",
        ),
        (
            "tag value with a phone number",
            with(json!({"tags": [tag("interest", "serum", json!(0.5)),
                                 tag("intent", "call 0912345678", json!(0.5))]})),
            "members[1].tags[1].value",
        ),
        (
            "tag value with an e-mail address",
            with(json!({"tags": [tag("intent", "amy@example.com", json!(0.5))]})),
            "members[1].tags[0].value",
        ),
        (
            "external_id only spaces",
            with(json!({"external_id": "   "})),
            "members[1].external_id",
        ),
        (
            "confidence 1.01",
            with(json!({"tags": [tag("intent", "buy", json!(1.01))]})),
            "members[1].tags[0].confidence",
        ),
        (
            "confidence -0.1",
            with(json!({"tags": [tag("intent", "buy", json!(-0.1))]})),
            "members[1].tags[0].confidence",
        ),
        (
            "day not a date",
            json!({"channel": "whatsapp", "space_id": mia, "day": "2026-02-30", "members": []}),
            "day",
        ),
        (
            "day with a time",
            json!({"channel": "whatsapp", "space_id": mia, "day": "2026-02-03 10:00", "members": []}),
            "day",
        ),
        (
            "no members",
            json!({"channel": "whatsapp", "space_id": mia, "day": today.to_string()}),
            "members",
        ),
        (
            "no channel",
            json!({"space_id": mia, "day": today.to_string(), "members": []}),
            "channel",
        ),
        ],
    )
    .await;
    assert_eq!(
        app.count("SELECT count(*) AS n FROM community_digests")
            .await,
        0
    );
    app.stop().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_digest_needs_the_space_channel_and_a_day_of_the_space_zone() {
    let app = spawn_app().await;
    let mia = space_id(&app, "Mia fans");
    let res = post(
        &app,
        "digest",
        &digest(&mia, "discord", taipei_day(0), vec![]),
    )
    .await;
    let e = assert_error(&res, 422, "rejected");
    assert!(e["message"].as_str().unwrap().contains("channel"), "{e}");
    // Tomorrow in Taipei has not begun there; 31 days back is too old.
    let e = assert_error(
        &post(
            &app,
            "digest",
            &digest(&mia, "whatsapp", taipei_day(1), vec![]),
        )
        .await,
        422,
        "rejected",
    );
    assert!(
        e["message"].as_str().unwrap().contains("Asia/Taipei"),
        "{e}"
    );
    assert_error(
        &post(
            &app,
            "digest",
            &digest(&mia, "whatsapp", taipei_day(-31), vec![]),
        )
        .await,
        422,
        "rejected",
    );
    // Today and 30 days back in Taipei (whatever the date in UTC) are days of the space.
    ok(&post(
        &app,
        "digest",
        &digest(&mia, "whatsapp", taipei_day(0), vec![]),
    )
    .await);
    ok(&post(
        &app,
        "digest",
        &digest(&mia, "whatsapp", taipei_day(-30), vec![]),
    )
    .await);
    assert_foreign_404(&app, "digest", |id| {
        digest(id, "whatsapp", taipei_day(0), vec![])
    })
    .await;
    // The body's shape and limits (only white space included) are 400 whatever the space;
    // then the space (404 whatever the content rules, channel and day say).
    for (case, id) in foreign_spaces(&app) {
        let blank = json!({"external_id": "  ", "message_count": 1});
        let res = post(
            &app,
            "digest",
            &digest(&id, "discord", taipei_day(5), vec![blank]),
        )
        .await;
        let e = assert_error_in(case, &res, 400, "invalid_request");
        assert_eq!(e["field"], "members[0].external_id", "{case}: {e}");
    }
    assert_foreign_404(&app, "digest", |id| {
        let personal = json!({"external_id": "a", "message_count": 1,
                              "summary": "mail amy@example.com",
                              "tags": [{"kind": "intent", "value": "call 0912345678"}]});
        digest(id, "discord", taipei_day(5), vec![personal])
    })
    .await;
    assert_eq!(
        app.count("SELECT count(*) AS n FROM community_digests")
            .await,
        2
    );
    app.stop().await;
}

// ---------------------------------------------------------------------------------------------
// Tickets

fn ticket(space: &str, member: Option<&str>, category: &str, summary: &str) -> Value {
    let mut t =
        json!({"channel": "whatsapp", "space_id": space, "category": category, "summary": summary});
    if let Some(m) = member {
        t["member_external_id"] = json!(m);
    }
    t
}

#[tokio::test(flavor = "multi_thread")]
async fn a_ticket_of_the_same_member_and_category_within_24_hours_is_reused() {
    let app = spawn_app().await;
    let mia = space_id(&app, "Mia fans");
    let res = post(
        &app,
        "tickets",
        &ticket(&mia, Some("amy"), "refund", "wants her money back"),
    )
    .await;
    assert_eq!(res.status, 201, "{}", res.text());
    let first = res.json();
    assert_eq!(first["reused"], false);
    let res = post(
        &app,
        "tickets",
        &ticket(&mia, Some("amy"), "refund", "asked again"),
    )
    .await;
    assert_eq!(res.status, 200, "{}", res.text());
    let again = res.json();
    assert_eq!(
        (&again["ticket_id"], &again["reused"]),
        (&first["ticket_id"], &json!(true))
    );
    let id = first["ticket_id"].as_str().unwrap();
    assert_eq!(
        app.count(&format!(
            "SELECT count(*) AS n FROM community_tickets WHERE id = '{id}' \
             AND notes->0->>'text' = 'asked again' AND summary = 'wants her money back'"
        ))
        .await,
        1
    );
    // Another category, another member: new tickets.
    let other = ok(&post(
        &app,
        "tickets",
        &ticket(&mia, Some("amy"), "complaint", "rude reply"),
    )
    .await);
    assert_eq!(other["reused"], false);
    let bob = ok(&post(
        &app,
        "tickets",
        &ticket(&mia, Some("bob"), "refund", "wants money back"),
    )
    .await);
    assert_eq!(bob["reused"], false);
    // Without a member, never merged.
    let a = ok(&post(&app, "tickets", &ticket(&mia, None, "abuse", "spam links")).await);
    let b = ok(&post(&app, "tickets", &ticket(&mia, None, "abuse", "spam links")).await);
    assert_ne!(a["ticket_id"], b["ticket_id"]);
    assert_eq!(b["reused"], false);
    // Opened over 24 hours ago: a new ticket; handled: a new ticket.
    app.sql(&format!("UPDATE community_tickets SET created_at = now() - interval '24 hours 1 minute' WHERE id = '{id}'")).await;
    let late = ok(&post(
        &app,
        "tickets",
        &ticket(&mia, Some("amy"), "refund", "third time"),
    )
    .await);
    assert_eq!(late["reused"], false);
    let late_id = late["ticket_id"].as_str().unwrap();
    app.sql(&format!(
        "UPDATE community_tickets SET status = 'resolved' WHERE id = '{late_id}'"
    ))
    .await;
    let after_close = ok(&post(
        &app,
        "tickets",
        &ticket(&mia, Some("amy"), "refund", "fourth"),
    )
    .await);
    assert_eq!(after_close["reused"], false);
    assert_eq!(
        app.count("SELECT count(*) AS n FROM community_tickets")
            .await,
        7
    );
    app.stop().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_ticket_is_checked_at_its_limits_channel_and_space() {
    let app = spawn_app().await;
    let mia = space_id(&app, "Mia fans");
    ok(&post(
        &app,
        "tickets",
        &ticket(
            &mia,
            Some(&"m".repeat(200)),
            "data_deletion",
            &"s".repeat(500),
        ),
    )
    .await);
    assert_invalid_fields(
        &app,
        "tickets",
        vec![
            (
                "summary 501",
                ticket(&mia, None, "other", &"s".repeat(501)),
                "summary",
            ),
            ("summary empty", ticket(&mia, None, "other", ""), "summary"),
            (
                "summary spaces",
                ticket(&mia, None, "other", " \t "),
                "summary",
            ),
            (
                "member spaces",
                ticket(&mia, Some("   "), "other", "x"),
                "member_external_id",
            ),
            (
                "member 201",
                ticket(&mia, Some(&"m".repeat(201)), "other", "x"),
                "member_external_id",
            ),
            ("category", ticket(&mia, None, "billing", "x"), "category"),
            (
                "phone",
                ticket(&mia, None, "order", "call +886 912 345 678"),
                "summary",
            ),
            (
                "e-mail",
                ticket(&mia, None, "order", "mail amy@example.com"),
                "summary",
            ),
            (
                "order number",
                ticket(&mia, None, "order", "order #45210 is late"),
                "summary",
            ),
        ],
    )
    .await;
    let mut wrong = ticket(&mia, None, "other", "x");
    wrong["channel"] = json!("discord");
    assert_error(&post(&app, "tickets", &wrong).await, 422, "rejected");
    assert_foreign_404(&app, "tickets", |id| ticket(id, None, "other", "x")).await;
    // The order: the body's shape and limits (only white space included) are 400 whatever
    // the space; then the space (404 whatever the summary holds and the channel); then the
    // summary's content (400) and the channel (422).
    for (case, id) in foreign_spaces(&app) {
        let mut t = ticket(&id, Some(" "), "other", " \t ");
        t["channel"] = json!("discord");
        let e = assert_error_in(
            case,
            &post(&app, "tickets", &t).await,
            400,
            "invalid_request",
        );
        assert!(
            e["field"] == "summary" || e["field"] == "member_external_id",
            "{case}: {e}"
        );
    }
    assert_foreign_404(&app, "tickets", |id| {
        let mut t = ticket(id, None, "other", "call 0912-345-678");
        t["channel"] = json!("discord");
        t
    })
    .await;
    assert_eq!(
        app.count("SELECT count(*) AS n FROM community_tickets")
            .await,
        1
    );
    app.stop().await;
}

// ---------------------------------------------------------------------------------------------
// Idempotency

#[tokio::test(flavor = "multi_thread")]
async fn both_writes_replay_the_same_content_and_refuse_other_content_under_one_key() {
    let app = spawn_app().await;
    let bot = app.agent_key("bot");
    let mia = space_id(&app, "Mia fans");
    let path = |w: &str| format!("{AGENT}/community/{w}");
    let body = digest(&mia, "whatsapp", taipei_day(0), vec![member(1)]);
    let first = app
        .client
        .post_idem(&path("digest"), &bot, "digest-1", &body)
        .await;
    assert_eq!(first.status, 201, "{}", first.text());
    let replay = app
        .client
        .post_idem(&path("digest"), &bot, "digest-1", &body)
        .await;
    assert_eq!(replay.status, 201);
    assert_eq!(replay.header("Idempotent-Replayed"), Some("true"));
    assert_eq!(replay.json(), first.json());
    let other = digest(&mia, "whatsapp", taipei_day(-1), vec![member(1)]);
    assert_error(
        &app.client
            .post_idem(&path("digest"), &bot, "digest-1", &other)
            .await,
        422,
        "idempotency_mismatch",
    );
    assert_eq!(
        app.count("SELECT count(*) AS n FROM community_digests")
            .await,
        1
    );

    let t = ticket(&mia, Some("amy"), "refund", "money back");
    let first = app
        .client
        .post_idem(&path("tickets"), &bot, "ticket-1", &t)
        .await;
    assert_eq!(first.status, 201, "{}", first.text());
    let replay = app
        .client
        .post_idem(&path("tickets"), &bot, "ticket-1", &t)
        .await;
    assert_eq!(
        (replay.status, replay.header("Idempotent-Replayed")),
        (201, Some("true"))
    );
    assert_eq!(replay.json(), first.json());
    let t2 = ticket(&mia, Some("amy"), "refund", "other words");
    assert_error(
        &app.client
            .post_idem(&path("tickets"), &bot, "ticket-1", &t2)
            .await,
        422,
        "idempotency_mismatch",
    );
    // No note was added by the replay.
    assert_eq!(
        app.count("SELECT count(*) AS n FROM community_tickets WHERE notes = '[]'")
            .await,
        1
    );

    // MCP: request_id plays the key, for both writes: the same arguments replay the first
    // answer, other arguments under the same request_id are idempotency_mismatch.
    let call = |tool: &str, args: &Value| {
        Request::mcp(&json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                            "params": {"name": tool, "arguments": args}}))
        .bearer(&bot)
    };
    let tool = async |name: &str, args: &Value| {
        fleetdesk_tests::assert::tool_result(name, &app.client.send(call(name, args)).await.json())
    };
    let mut args = ticket(&mia, Some("cat"), "other", "via mcp");
    args["request_id"] = json!("mcp-ticket-1");
    let a = tool("community_open_ticket", &args).await;
    let b = tool("community_open_ticket", &args).await;
    assert_ne!(a["isError"], true, "{a}");
    assert_eq!(a["body"]["reused"], false, "{a}");
    assert!(a["body"]["ticket_id"].is_string(), "{a}");
    assert_eq!(a["body"], b["body"], "{a} {b}");
    let mut other = args.clone();
    other["summary"] = json!("other content");
    let c = tool("community_open_ticket", &other).await;
    assert_eq!(c["isError"], true, "{c}");
    assert_eq!(c["body"]["code"], "idempotency_mismatch", "{c}");
    assert_eq!(
        app.count("SELECT count(*) AS n FROM community_tickets")
            .await,
        2
    );
    assert_eq!(
        app.count(
            "SELECT count(*) AS n FROM community_tickets WHERE member_external_id = 'cat' \
             AND notes = '[]'::jsonb"
        )
        .await,
        1
    );

    let lounge = space_id(&app, "Beauty lounge");
    let mut args = digest(
        &lounge,
        "discord",
        taipei_day(-3),
        vec![member(1), member(2)],
    );
    args["request_id"] = json!("mcp-digest-1");
    let a = tool("community_report_digest", &args).await;
    let b = tool("community_report_digest", &args).await;
    assert_ne!(a["isError"], true, "{a}");
    assert_eq!(a["body"]["members"], 2, "{a}");
    assert_eq!(a["body"], b["body"], "{a} {b}");
    let mut other = args.clone();
    other["members"] = json!([member(3)]);
    let c = tool("community_report_digest", &other).await;
    assert_eq!(c["isError"], true, "{c}");
    assert_eq!(c["body"]["code"], "idempotency_mismatch", "{c}");
    // Another request_id for the same day is the second digest: 422.
    other["request_id"] = json!("mcp-digest-2");
    let d = tool("community_report_digest", &other).await;
    assert_eq!(d["body"]["code"], "rejected", "{d}");
    assert_eq!(
        app.count(&format!(
            "SELECT count(*) AS n FROM community_digests WHERE day = '{}'",
            taipei_day(-3)
        ))
        .await,
        1
    );
    app.stop().await;
}

// ---------------------------------------------------------------------------------------------
// The person's day

#[tokio::test(flavor = "multi_thread")]
async fn today_shows_each_space_latest_digest_and_open_tickets_by_category() {
    let app = spawn_app().await;
    let mia = space_id(&app, "Mia fans");
    let tag = |kind: &str, value: &str| json!({"kind": kind, "value": value});
    ok(&post(
        &app,
        "digest",
        &digest(&mia, "whatsapp", taipei_day(-1), vec![member(1)]),
    )
    .await);
    ok(&post(&app, "digest", &digest(&mia, "whatsapp", taipei_day(0), vec![
        json!({"external_id": "a", "message_count": 3, "tags": [tag("interest", "serum"), tag("intent", "buy")]}),
        json!({"external_id": "b", "message_count": 1, "tags": [tag("interest", "Serum"), tag("interest", "mask")]}),
        json!({"external_id": "c", "message_count": 0}),
    ])).await);
    ok(&post(&app, "tickets", &ticket(&mia, Some("a"), "refund", "r")).await);
    ok(&post(&app, "tickets", &ticket(&mia, Some("b"), "refund", "r")).await);
    ok(&post(&app, "tickets", &ticket(&mia, None, "abuse", "spam")).await);

    let day = ok(&app
        .client
        .get("/api/user/v1/today", &app.personal_key("ann@acme.test"))
        .await);
    let taiwan = day["workspaces"]
        .as_array()
        .unwrap()
        .iter()
        .find(|w| w["name"] == "Taiwan")
        .expect("Taiwan");
    let c = &taiwan["community"];
    let names: Vec<&str> = c["spaces"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["Beauty lounge", "Mia fans"], "{c}");
    assert_eq!(c["spaces"][0]["latest_digest"], Value::Null);
    let d = &c["spaces"][1]["latest_digest"];
    assert_eq!(
        (&d["day"], &d["members"]),
        (&json!(taipei_day(0).to_string()), &json!(3)),
        "{d}"
    );
    assert_eq!(
        d["interests"],
        json!([{"value": "serum", "members": 2}, {"value": "mask", "members": 1}]),
        "{d}"
    );
    assert_eq!(d["intents"], json!([{"value": "buy", "members": 1}]), "{d}");
    assert_eq!(
        c["tickets"],
        json!({"open": 3, "by_category": [{"category": "abuse", "count": 1}, {"category": "refund", "count": 2}]})
    );
    let japan = day["workspaces"]
        .as_array()
        .unwrap()
        .iter()
        .find(|w| w["name"] == "Japan")
        .expect("Japan");
    assert_eq!(japan["community"]["tickets"]["open"], 0);
    assert_eq!(japan["community"]["spaces"][0]["name"], "Yui fans");
    // Another organization sees none of it.
    let other = ok(&app
        .client
        .get("/api/user/v1/today", &app.personal_key("olga@other.test"))
        .await);
    assert_eq!(other["workspaces"][0]["community"]["tickets"]["open"], 0);
    assert_eq!(
        other["workspaces"][0]["community"]["spaces"][0]["latest_digest"],
        Value::Null
    );
    app.stop().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn today_shows_each_organization_only_its_own_digests_and_tickets() {
    let app = spawn_app().await;
    let zoe = space_id(&app, "Zoe fans");
    // Other Agency's space gets a digest (with tags) and an open ticket, written as the
    // adapter writes them (the bot cannot reach another organization's space).
    app.sql(&format!(
        "WITH d AS (INSERT INTO community_digests (space_id, day, agent_id, members, skipped) \
           SELECT '{zoe}', '{}', a.id, 2, 0 FROM agents a WHERE a.name = 'other1' RETURNING id) \
         INSERT INTO community_digest_members (digest_id, external_id, message_count, tags) \
         SELECT d.id, m.id, 1, \
           '[{{\"kind\": \"interest\", \"value\": \"Zoe merch\", \"folded\": \"zoe merch\"}}]' \
         FROM d, (VALUES ('z1'), ('z2')) AS m(id)",
        taipei_day(0)
    ))
    .await;
    app.sql(&format!(
        "INSERT INTO community_tickets (space_id, member_external_id, category, summary, \
           opened_by_agent) \
         SELECT '{zoe}', 'z1', 'complaint', 'late reply', a.id FROM agents a \
         WHERE a.name = 'other1'"
    ))
    .await;
    // Ann's organization has its own.
    let mia = space_id(&app, "Mia fans");
    ok(&post(&app, "tickets", &ticket(&mia, Some("a"), "refund", "r")).await);

    let ann = ok(&app
        .client
        .get("/api/user/v1/today", &app.personal_key("ann@acme.test"))
        .await);
    let text = ann.to_string();
    assert!(
        !text.contains(&zoe) && !text.contains("Zoe") && !text.contains("zoe merch"),
        "{ann}"
    );
    let open: i64 = ann["workspaces"]
        .as_array()
        .unwrap()
        .iter()
        .map(|w| w["community"]["tickets"]["open"].as_i64().unwrap())
        .sum();
    assert_eq!(open, 1, "{ann}");
    assert!(
        !text.contains("complaint"),
        "Other Agency's complaint is not Ann's: {ann}"
    );

    let olga = ok(&app
        .client
        .get("/api/user/v1/today", &app.personal_key("olga@other.test"))
        .await);
    let c = &olga["workspaces"][0]["community"];
    assert_eq!(c["spaces"][0]["name"], "Zoe fans", "{olga}");
    let d = &c["spaces"][0]["latest_digest"];
    assert_eq!(d["members"], 2, "{olga}");
    assert_eq!(
        d["interests"],
        json!([{"value": "zoe merch", "members": 2}]),
        "{olga}"
    );
    assert_eq!(
        c["tickets"],
        json!({"open": 1, "by_category": [{"category": "complaint", "count": 1}]})
    );
    assert!(!olga.to_string().contains(&mia), "{olga}");
    app.stop().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn the_community_key_lists_exactly_the_six_community_tools() {
    let app = spawn_app().await;
    let res = app
        .client
        .send(
            Request::mcp(&json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}))
                .bearer(&app.agent_key("bot")),
        )
        .await;
    let msg = res.json();
    let mut names: Vec<&str> = msg["result"]["tools"]
        .as_array()
        .expect("tools")
        .iter()
        .map(|t| t["name"].as_str().expect("name"))
        .collect();
    names.sort();
    assert_eq!(
        names,
        [
            "community_list_tickets",
            "community_open_ticket",
            "community_products",
            "community_report_digest",
            "community_space",
            "community_wiki_search"
        ]
    );
    app.stop().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn the_space_record_is_described_as_it_is_answered() {
    let app = spawn_app().await;
    let doc = app
        .client
        .send(Request::new("GET", "/openapi.json"))
        .await
        .json();
    let space = &doc["components"]["schemas"]["Space"];
    let mut props: Vec<&str> = space["properties"]
        .as_object()
        .unwrap_or_else(|| panic!("no Space schema: {space}"))
        .keys()
        .map(String::as_str)
        .collect();
    props.sort();
    assert_eq!(
        props,
        [
            "channel",
            "language",
            "location",
            "market",
            "name",
            "space_id",
            "space_type",
            "status",
            "track"
        ]
    );
    let answered = ok(&post(
        &app,
        "space",
        &json!({"channel": "whatsapp", "external_id": "1203630@g.us"}),
    )
    .await);
    let mut keys: Vec<&str> = answered
        .as_object()
        .expect("object")
        .keys()
        .map(String::as_str)
        .collect();
    keys.sort();
    assert_eq!(keys, props);
    app.stop().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn concurrent_reports_of_one_matter_make_one_ticket_and_one_digest_a_day() {
    let app = spawn_app().await;
    let mia = space_id(&app, "Mia fans");
    // Twelve at once: each request reads its clock before it waits for the matter's lock, so
    // a later one often commits first; still one ticket, the others its notes.
    let tickets = futures_util::future::join_all((0..12).map(|i| {
        let body = ticket(&mia, Some("amy"), "refund", &format!("report {i}"));
        let app = &app;
        async move { post(app, "tickets", &body).await }
    }))
    .await;
    let statuses: Vec<u16> = tickets.iter().map(|r| r.status).collect();
    assert_eq!(
        statuses.iter().filter(|s| **s == 201).count(),
        1,
        "{statuses:?}"
    );
    assert_eq!(
        statuses.iter().filter(|s| **s == 200).count(),
        11,
        "{statuses:?}"
    );
    assert_eq!(
        app.count("SELECT count(*) AS n FROM community_tickets")
            .await,
        1
    );
    assert_eq!(
        app.count("SELECT jsonb_array_length(notes)::bigint AS n FROM community_tickets")
            .await,
        11
    );

    let digests = futures_util::future::join_all((0..4).map(|i| {
        let body = digest(&mia, "whatsapp", taipei_day(0), vec![member(i)]);
        let app = &app;
        async move { post(app, "digest", &body).await }
    }))
    .await;
    let statuses: Vec<u16> = digests.iter().map(|r| r.status).collect();
    assert_eq!(
        statuses.iter().filter(|s| **s == 201).count(),
        1,
        "{statuses:?}"
    );
    assert_eq!(
        statuses.iter().filter(|s| **s == 422).count(),
        3,
        "{statuses:?}"
    );
    assert_eq!(
        app.count("SELECT count(*) AS n FROM community_digest_members")
            .await,
        1
    );
    app.stop().await;
}

// ---------------------------------------------------------------------------------------------
// People handle tickets (Personal API); the agent reads the outcome

const USER: &str = "/api/user/v1";
const ANN: &str = "ann@acme.test";

async fn person_get(app: &TestApp, who: &str, path: &str) -> Response {
    app.client
        .get(&format!("{USER}{path}"), &app.personal_key(who))
        .await
}

async fn person_move(app: &TestApp, who: &str, id: &str, mv: &str, body: Value) -> Response {
    app.client
        .post(
            &format!("{USER}/community/tickets/{id}/{mv}"),
            &app.personal_key(who),
            &body,
        )
        .await
}

async fn opened(app: &TestApp, body: Value) -> String {
    let v = ok(&post(app, "tickets", &body).await);
    v["ticket_id"].as_str().expect("ticket_id").to_owned()
}

fn listed_ids(page: &Value) -> Vec<&str> {
    page["tickets"]
        .as_array()
        .expect("tickets")
        .iter()
        .map(|t| t["id"].as_str().expect("id"))
        .collect()
}

async fn open_in_day(app: &TestApp) -> Value {
    let day = ok(&person_get(app, ANN, "/today").await);
    day["workspaces"]
        .as_array()
        .unwrap()
        .iter()
        .find(|w| w["name"] == "Taiwan")
        .expect("Taiwan")["community"]["tickets"]
        .clone()
}

/// People list and read their organization's tickets and resolve or dismiss them with a note;
/// a handled ticket leaves the day and takes no later report (a new ticket opens); the agent
/// that opened it reads the outcome.
#[tokio::test(flavor = "multi_thread")]
async fn people_handle_tickets_which_leave_the_day_and_take_no_later_report() {
    let app = spawn_app().await;
    let mia = space_id(&app, "Mia fans");
    let refund = opened(
        &app,
        ticket(&mia, Some("amy"), "refund", "wants her money back"),
    )
    .await;
    let again = opened(&app, ticket(&mia, Some("amy"), "refund", "asked again")).await;
    assert_eq!(again, refund, "the report joined the open ticket");
    let spam = opened(&app, ticket(&mia, None, "abuse", "spam links")).await;
    assert_eq!(open_in_day(&app).await["open"], 2);

    // The open tickets, newest first, and one with every note.
    let page = ok(&person_get(&app, ANN, "/community/tickets").await);
    assert_eq!(listed_ids(&page), [spam.as_str(), refund.as_str()]);
    let t = &page["tickets"][1];
    assert_eq!(t["status"], "open");
    assert_eq!(t["summary"], "wants her money back");
    assert_eq!(t["member_external_id"], "amy");
    assert_eq!(t["space"]["name"], "Mia fans");
    assert_eq!(t["workspace"]["name"], "Taiwan");
    assert_eq!(t["opened_by"]["name"], "bot");
    assert_eq!(t["notes_count"], 1);
    assert_eq!(t["handled"], Value::Null);
    let read = ok(&person_get(&app, ANN, &format!("/community/tickets/{refund}")).await);
    assert_eq!(read["notes"][0]["text"], "asked again");

    // Resolved with a note; the same move again changes nothing; the other move is refused.
    let moved = ok(&person_move(
        &app,
        ANN,
        &refund,
        "resolve",
        json!({"note": " Refunded in full. "}),
    )
    .await);
    assert_eq!(moved["result"], "changed");
    let t = &moved["ticket"];
    assert_eq!(t["status"], "resolved");
    assert_eq!(t["handled"]["note"], "Refunded in full.");
    assert_eq!(t["handled"]["by"]["type"], "person");
    assert_eq!(t["handled"]["by"]["name"], "Ann");
    let resent = ok(&person_move(&app, ANN, &refund, "resolve", json!({"note": "twice"})).await);
    assert_eq!(resent["result"], "unchanged");
    assert_eq!(resent["ticket"]["handled"]["note"], "Refunded in full.");
    assert_error(
        &person_move(&app, ANN, &refund, "dismiss", json!({"note": "no"})).await,
        422,
        "rejected",
    );
    let moved = ok(&person_move(&app, ANN, &spam, "dismiss", json!({"note": "Spam."})).await);
    assert_eq!(moved["ticket"]["status"], "dismissed");

    // Handled: out of the day; the member's next report opens a new ticket.
    assert_eq!(
        open_in_day(&app).await,
        json!({"open": 0, "by_category": []})
    );
    let res = post(
        &app,
        "tickets",
        &ticket(&mia, Some("amy"), "refund", "one more thing"),
    )
    .await;
    assert_eq!(res.status, 201, "{}", res.text());
    let fresh = res.json()["ticket_id"].as_str().unwrap().to_owned();
    assert_ne!(fresh, refund);
    let page = ok(&person_get(&app, ANN, "/community/tickets").await);
    assert_eq!(listed_ids(&page), [fresh.as_str()]);
    let page = ok(&person_get(&app, ANN, "/community/tickets?status=handled").await);
    assert_eq!(listed_ids(&page), [spam.as_str(), refund.as_str()]);
    let page = ok(&person_get(
        &app,
        ANN,
        "/community/tickets?status=resolved&category=refund",
    )
    .await);
    assert_eq!(listed_ids(&page), [refund.as_str()]);
    let taiwan = app.workspace_id("Taiwan");
    let page = ok(&person_get(
        &app,
        ANN,
        &format!("/community/tickets?status=all&workspace={taiwan}"),
    )
    .await);
    assert_eq!(listed_ids(&page).len(), 3);
    let japan = app.workspace_id("Japan");
    let page = ok(&person_get(
        &app,
        ANN,
        &format!("/community/tickets?status=all&workspace={japan}"),
    )
    .await);
    assert_eq!(listed_ids(&page).len(), 0);

    // The agent reads what became of the tickets it opened.
    let own = |query: &str| {
        let (app, path) = (&app, format!("{AGENT}/community/tickets{query}"));
        async move { app.client.get(&path, &app.agent_key("bot")).await }
    };
    let page = ok(&own("?status=handled").await);
    assert_eq!(listed_ids(&page), [spam.as_str(), refund.as_str()]);
    assert_eq!(page["tickets"][1]["handled"]["note"], "Refunded in full.");
    assert_eq!(listed_ids(&ok(&own("").await)).len(), 3);
    assert_eq!(
        listed_ids(&ok(&own("?status=open").await)),
        [fresh.as_str()]
    );

    // Out of reach: another organization's people (404), clients (403), operators (403).
    let path = format!("/community/tickets/{refund}");
    assert_error(
        &person_get(&app, "olga@other.test", &path).await,
        404,
        "not_found",
    );
    assert_error(
        &person_move(
            &app,
            "olga@other.test",
            &fresh,
            "resolve",
            json!({"note": "x"}),
        )
        .await,
        404,
        "not_found",
    );
    let theirs = ok(&person_get(&app, "olga@other.test", "/community/tickets?status=all").await);
    assert!(listed_ids(&theirs).is_empty(), "{theirs}");
    assert_error(
        &person_get(&app, "cli@brand.test", &path).await,
        403,
        "forbidden",
    );
    let operator = app
        .client
        .get(&format!("{AGENT}/community/tickets"), &app.agent_key("op1"))
        .await;
    assert_error(&operator, 403, "forbidden");
    let unknown = format!("/community/tickets/{}", uuid::Uuid::new_v4());
    assert_error(&person_get(&app, ANN, &unknown).await, 404, "not_found");
    app.stop().await;
}

/// A move's note: 1-1000 characters (white space around it dropped), no personal data; a list
/// carries a ticket's latest 3 notes and the count, the ticket read alone every note; pages of
/// 1-200.
#[tokio::test(flavor = "multi_thread")]
async fn ticket_notes_and_lists_at_their_limits_and_one_past() {
    let app = spawn_app().await;
    let mia = space_id(&app, "Mia fans");
    // Four reports of one matter: the ticket and 3 notes; five of another: 4 notes.
    let mut ids = Vec::new();
    for (member, reports) in [("amy", 4), ("bea", 5)] {
        let mut id = String::new();
        for i in 1..=reports {
            id = opened(
                &app,
                ticket(&mia, Some(member), "order", &format!("report {i}")),
            )
            .await;
        }
        ids.push(id);
    }
    let page = ok(&person_get(&app, ANN, "/community/tickets").await);
    let texts = |t: &Value| -> Vec<String> {
        t["notes"]
            .as_array()
            .unwrap()
            .iter()
            .map(|n| n["text"].as_str().unwrap().to_owned())
            .collect()
    };
    let (bea, amy) = (&page["tickets"][0], &page["tickets"][1]);
    assert_eq!(
        (amy["id"].as_str(), bea["id"].as_str()),
        (Some(ids[0].as_str()), Some(ids[1].as_str()))
    );
    assert_eq!(texts(amy), ["report 2", "report 3", "report 4"]);
    assert_eq!(amy["notes_count"], 3);
    assert_eq!(texts(bea), ["report 3", "report 4", "report 5"]);
    assert_eq!(bea["notes_count"], 4);
    let read = ok(&person_get(&app, ANN, &format!("/community/tickets/{}", ids[1])).await);
    assert_eq!(
        texts(&read),
        ["report 2", "report 3", "report 4", "report 5"]
    );

    // Pages: one ticket a page, then the next; 0 and 201 are refused.
    let first = ok(&person_get(&app, ANN, "/community/tickets?limit=1").await);
    assert_eq!(listed_ids(&first), [ids[1].as_str()]);
    let cursor = first["next_cursor"].as_str().expect("a next page");
    let second = ok(&person_get(
        &app,
        ANN,
        &format!("/community/tickets?limit=1&cursor={cursor}"),
    )
    .await);
    assert_eq!(listed_ids(&second), [ids[0].as_str()]);
    assert_eq!(second["next_cursor"], Value::Null);
    ok(&person_get(&app, ANN, "/community/tickets?limit=200").await);
    for bad in ["limit=0", "limit=201", "status=closed", "category=gossip"] {
        let res = person_get(&app, ANN, &format!("/community/tickets?{bad}")).await;
        assert_error_in(bad, &res, 400, "invalid_request");
    }

    // The note at its limits: 1000 characters pass; empty, only white space, 1001, personal
    // data or none at all are 400 naming note, and the ticket stays open.
    let id = &ids[0];
    for (case, body) in [
        ("empty", json!({"note": ""})),
        ("white space", json!({"note": "   "})),
        ("1001", json!({"note": "n".repeat(1001)})),
        (
            "a phone number",
            json!({"note": "called her on 0912-345-678"}),
        ),
        (
            "an e-mail address",
            json!({"note": "wrote to amy@example.com"}),
        ),
        ("missing", json!({})),
    ] {
        let e = assert_error_in(
            case,
            &person_move(&app, ANN, id, "resolve", body).await,
            400,
            "invalid_request",
        );
        assert_eq!(e["field"], "note", "{case}: {e}");
    }
    let read = ok(&person_get(&app, ANN, &format!("/community/tickets/{id}")).await);
    assert_eq!(read["status"], "open");
    let moved = ok(&person_move(&app, ANN, id, "dismiss", json!({"note": "n".repeat(1000)})).await);
    assert_eq!(
        moved["ticket"]["handled"]["note"].as_str().map(str::len),
        Some(1000)
    );
    app.stop().await;
}
