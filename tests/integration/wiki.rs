//! The knowledge base through HTTP over the standard tenant: GET /wiki (wiki_index), GET
//! /wiki/entry (wiki_get), GET /wiki/search (wiki_search), POST /wiki (propose_wiki): every
//! limit at the limit and one past, search across scripts and languages, tenant isolation,
//! idempotency, manual review through the Personal API decisions (wiki_draft), and the cast's
//! link to its character entries.

use fleetdesk_tests::assert::{assert_error, ok};
use fleetdesk_tests::client::Request;
use fleetdesk_tests::{Response, TestApp, spawn_app};
use serde_json::{Value, json};

const AGENT: &str = "/api/agent/v1";
const USER: &str = "/api/user/v1";
const ANN: &str = "ann@acme.test";
const OLGA: &str = "olga@other.test";
/// Every source kind.
const KINDS: [&str; 7] = [
    "vault", "notion", "post", "review", "agent", "person", "other",
];

// ---------------------------------------------------------------------------------------------
// helpers

#[track_caller]
fn assert_invalid(res: &Response, field: &str) -> Value {
    let v = assert_error(res, 400, "invalid_request");
    assert_eq!(v["field"], field, "{v}");
    v
}

#[track_caller]
fn assert_rejected(res: &Response, field: &str) -> Value {
    let v = assert_error(res, 422, "rejected");
    assert_eq!(v["field"], field, "{v}");
    v
}

/// 404 naming the field whose object is not there.
#[track_caller]
fn assert_missing(res: &Response, field: &str) -> Value {
    let v = assert_error(res, 404, "not_found");
    assert_eq!(v["field"], field, "{v}");
    v
}

/// Percent-encodes a query value (every byte but ASCII letters and digits).
fn enc(v: &str) -> String {
    v.bytes()
        .map(|b| {
            if b.is_ascii_alphanumeric() {
                (b as char).to_string()
            } else {
                format!("%{b:02X}")
            }
        })
        .collect()
}

fn n(c: char, count: usize) -> String {
    std::iter::repeat_n(c, count).collect()
}

/// A valid proposal: a lesson with one source.
fn entry(title: &str, body: &str) -> Value {
    json!({
        "category": "lesson",
        "title": title,
        "summary": "",
        "body": body,
        "sources": [{"kind": "agent", "ref": "tests", "title": "the test suite"}],
    })
}

async fn propose(app: &TestApp, agent: &str, body: &Value) -> Response {
    app.client
        .post(&format!("{AGENT}/wiki"), &app.agent_key(agent), body)
        .await
}

/// Proposes and expects success; returns the answer.
async fn proposed(app: &TestApp, agent: &str, body: Value) -> Value {
    ok(&propose(app, agent, &body).await)
}

async fn get(app: &TestApp, agent: &str, path_and_query: &str) -> Response {
    app.client
        .get(&format!("{AGENT}{path_and_query}"), &app.agent_key(agent))
        .await
}

async fn search(app: &TestApp, agent: &str, q: &str, extra: &str) -> Response {
    get(app, agent, &format!("/wiki/search?q={}{extra}", enc(q))).await
}

/// The titles of a search's results, best first.
async fn found(app: &TestApp, agent: &str, q: &str) -> Vec<String> {
    titles(&ok(&search(app, agent, q, "").await)["results"])
}

fn titles(list: &Value) -> Vec<String> {
    list.as_array()
        .expect("a list")
        .iter()
        .map(|e| e["title"].as_str().expect("title").to_owned())
        .collect()
}

async fn index(app: &TestApp, agent: &str, query: &str) -> Value {
    ok(&get(app, agent, &format!("/wiki{query}")).await)
}

async fn person_post(app: &TestApp, who: &str, path: &str, body: Value) -> Response {
    app.client
        .post(&format!("{USER}{path}"), &app.personal_key(who), &body)
        .await
}

async fn set_review(app: &TestApp, review: &str) {
    app.sql(&format!(
        "UPDATE organizations SET wiki_review = '{review}' WHERE name = 'Acme'"
    ))
    .await;
}

fn id_of(v: &Value) -> String {
    v["id"].as_str().expect("id").to_owned()
}

// ---------------------------------------------------------------------------------------------
// Search

#[tokio::test(flavor = "multi_thread")]
async fn search_finds_chinese_in_either_script() {
    let app = spawn_app().await;
    proposed(
        &app,
        "op1",
        entry("猫咪护理", "猫咪每天需要新鲜的水和适量的饲料。"),
    )
    .await;
    proposed(
        &app,
        "op1",
        entry("貓咪拍照技巧", "拍貓咪的時候要用自然光，不要用閃光燈。"),
    )
    .await;
    // A traditional query finds the simplified entry and the other way round.
    let t = found(&app, "op1", "貓咪").await;
    assert_eq!(t.len(), 2, "{t:?}");
    assert!(
        found(&app, "op1", "饲料")
            .await
            .contains(&"猫咪护理".to_owned())
    );
    assert_eq!(found(&app, "op1", "飼料").await, vec!["猫咪护理"]);
    assert_eq!(found(&app, "op1", "闪光灯").await, vec!["貓咪拍照技巧"]);
    // The snippet is the body as written, around the hit.
    let v = ok(&search(&app, "op1", "閃光燈", "").await);
    assert!(
        v["results"][0]["snippet"]
            .as_str()
            .unwrap()
            .contains("閃光燈"),
        "{v}"
    );
    // Words are segmented: a word inside a sentence is found, a mere character pair across
    // two words is not needed.
    assert_eq!(found(&app, "op1", "自然光").await, vec!["貓咪拍照技巧"]);
    assert!(found(&app, "op1", "狗狗").await.is_empty());
}

#[tokio::test(flavor = "multi_thread")]
async fn search_finds_english_and_mixed_text() {
    let app = spawn_app().await;
    proposed(
        &app,
        "op1",
        entry(
            "Posting schedule",
            "We post twice a day on Threads; schedules move with the market's holidays.",
        ),
    )
    .await;
    proposed(
        &app,
        "op1",
        entry("iPhone15手機殼推薦", "透明的 MagSafe 手機殼最受歡迎。"),
    )
    .await;
    // Stemmed English: "posts" and "scheduling" reach "post" and "schedules".
    assert_eq!(
        found(&app, "op1", "posts scheduling").await,
        vec!["Posting schedule"]
    );
    assert_eq!(
        found(&app, "op1", "HOLIDAY").await,
        vec!["Posting schedule"]
    );
    // Mixed: Latin and Chinese split where they meet; either script.
    assert_eq!(
        found(&app, "op1", "iphone15 手机壳").await,
        vec!["iPhone15手機殼推薦"]
    );
    assert_eq!(
        found(&app, "op1", "magsafe").await,
        vec!["iPhone15手機殼推薦"]
    );
    // Full-width letters fold to ASCII.
    assert_eq!(
        found(&app, "op1", "ＭａｇＳａｆｅ").await,
        vec!["iPhone15手機殼推薦"]
    );
    // A query with no term at all finds nothing (200, empty).
    let v = ok(&search(&app, "op1", " ... 的 the ", "").await);
    assert_eq!(v["results"], json!([]));
}

#[tokio::test(flavor = "multi_thread")]
async fn results_are_ranked_with_a_score_and_a_snippet_of_at_most_160_characters() {
    let app = spawn_app().await;
    // The term in the title weighs more than in the body alone.
    proposed(
        &app,
        "op1",
        entry(
            "Unrelated note",
            &format!("{} hydration {}", n('x', 10), n('y', 10)),
        ),
    )
    .await;
    proposed(
        &app,
        "op1",
        entry("Hydration basics", "Drink water. Hydration matters."),
    )
    .await;
    let long = format!(
        "{}保濕的關鍵是睡前敷面膜。{}",
        "這是很長的開頭。".repeat(300),
        "結尾。".repeat(300)
    );
    assert!(long.chars().count() <= 6000, "{}", long.chars().count());
    proposed(&app, "op1", entry("Long guide", &long)).await;
    let v = ok(&search(&app, "op1", "hydration", "").await);
    let r = v["results"].as_array().unwrap();
    assert_eq!(
        titles(&v["results"]),
        vec!["Hydration basics", "Unrelated note"]
    );
    let scores: Vec<f64> = r.iter().map(|h| h["score"].as_f64().unwrap()).collect();
    assert!(scores[0] > scores[1] && scores[1] > 0.0, "{scores:?}");
    for key in [
        "id", "category", "summary", "tags", "version", "project", "snippet",
    ] {
        assert!(r[0].get(key).is_some(), "{key}: {}", r[0]);
    }
    assert!(r[0].get("body").is_none());
    // A long body's snippet: at most 160 characters around the hit, ellipses included.
    let v = ok(&search(&app, "op1", "面膜", "").await);
    let snippet = v["results"][0]["snippet"].as_str().unwrap();
    assert!(
        snippet.chars().count() <= 160,
        "{}",
        snippet.chars().count()
    );
    assert!(snippet.contains("面膜"), "{snippet}");
    assert!(
        snippet.starts_with('…') && snippet.ends_with('…'),
        "{snippet}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn search_crosses_languages_both_ways_and_says_which_words_matched() {
    let app = spawn_app().await;
    proposed(
        &app,
        "op1",
        entry("夜市小吃推薦", "台灣夜市的小吃：臭豆腐、蚵仔煎和珍珠奶茶。"),
    )
    .await;
    proposed(
        &app,
        "op1",
        entry(
            "Sunscreen reminders",
            "Reapply sunscreen every two hours at the beach.",
        ),
    )
    .await;
    proposed(&app, "op1", entry("Meetups", "Meetups are on Saturdays.")).await;
    // English finds the Chinese entry through the English CC-CEDICT gives its words.
    let v = ok(&search(&app, "op1", "Night market", "").await);
    assert_eq!(titles(&v["results"]), ["夜市小吃推薦"]);
    assert_eq!(
        v["results"][0]["matched"],
        json!(["Night", "market"]),
        "{v}"
    );
    // Chinese of either script finds the English entry; the words are shown as written.
    for q in ["防曬霜", "防晒霜"] {
        let v = ok(&search(&app, "op1", q, "").await);
        assert_eq!(titles(&v["results"]), ["Sunscreen reminders"], "{q}");
        assert_eq!(v["results"][0]["matched"], json!([q]), "{v}");
    }
    // A Chinese query still finds its Chinese entry first, by its own words.
    assert_eq!(found(&app, "op1", "夜市").await[0], "夜市小吃推薦");
    app.stop().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_glossary_s_synonyms_find_what_is_written_with_the_other_name() {
    let app = spawn_app().await;
    let mut glossary = entry(
        "別名對照",
        "A醇 = 視黃醇\n限動 = 限時動態\n乾貨：實用內容（不是別名，沒有等號）",
    );
    glossary["category"] = json!("glossary");
    proposed(&app, "op1", glossary).await;
    proposed(
        &app,
        "op1",
        entry("视黄醇使用须知", "视黄醇要晚上用，白天记得防晒。"),
    )
    .await;
    proposed(
        &app,
        "op1",
        entry("Stories stickers", "限時動態的投票貼紙能提高互動。"),
    )
    .await;
    // The other name finds the entry that never writes it, in either script.
    for q in ["A醇晚上用", "a醇 晚上用"] {
        let t = found(&app, "op1", q).await;
        assert_eq!(
            t.first().map(String::as_str),
            Some("视黄醇使用须知"),
            "{q}: {t:?}"
        );
    }
    let t = found(&app, "op1", "限動 投票").await;
    assert_eq!(
        t.first().map(String::as_str),
        Some("Stories stickers"),
        "{t:?}"
    );
    // A lesson's `=` declares nothing: only glossary entries do.
    proposed(&app, "op1", entry("Not a glossary", "暗號 = 週末特賣")).await;
    assert!(
        !found(&app, "op1", "暗號")
            .await
            .contains(&"Stories stickers".to_owned())
    );
    assert!(found(&app, "op1", "週末特賣").await == ["Not a glossary"]);
    app.stop().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn the_tenant_file_s_synonyms_serve_every_search_of_the_organization() {
    let app = spawn_app().await;
    proposed(&app, "op1", entry("脆的經營", "在脆上發文要短，多問問題。")).await;
    assert!(found(&app, "op1", "Threads tips").await.is_empty());
    let with = |synonyms: &str| {
        fleetdesk_tests::TEST_TENANT.replace(
            r#""monthly_credit_limit": 100,"#,
            &format!(r#""monthly_credit_limit": 100, "wiki_synonyms": {synonyms},"#),
        )
    };
    let file = with(r#"["脆 = Threads = meta threads"]"#);
    assert_ne!(file, fleetdesk_tests::TEST_TENANT);
    app.apply(&file).await;
    let v = ok(&search(&app, "op1", "Threads tips", "").await);
    assert_eq!(titles(&v["results"]), ["脆的經營"]);
    assert_eq!(v["results"][0]["matched"], json!(["Threads"]), "{v}");
    // A file that states none keeps them; an empty list clears them.
    app.apply(fleetdesk_tests::TEST_TENANT).await;
    assert_eq!(found(&app, "op1", "Threads").await, ["脆的經營"]);
    app.apply(&with("[]")).await;
    assert!(found(&app, "op1", "Threads").await.is_empty());
    // Another organization's synonyms serve only it.
    let other = fleetdesk_tests::TEST_TENANT.replace(
        r#""name": "Other Agency","#,
        r#""name": "Other Agency", "wiki_synonyms": ["脆 = Threads"],"#,
    );
    assert_ne!(other, fleetdesk_tests::TEST_TENANT);
    app.apply(&other).await;
    assert!(found(&app, "op1", "Threads").await.is_empty());
    proposed(&app, "other1", entry("脆", "脆的貼文。")).await;
    assert_eq!(found(&app, "other1", "Threads").await, ["脆"]);
    app.stop().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn entries_indexed_by_an_earlier_pipeline_are_indexed_again() {
    let app = spawn_app().await;
    proposed(&app, "op1", entry("夜市小吃", "台灣夜市的小吃。")).await;
    // As an earlier version stored it: no English (and here no terms at all).
    app.sql(
        "UPDATE wiki_entries SET terms_title = '', terms_summary = '', terms_pivot = '', \
           terms_body = '', terms_version = 1, updated_at = '2026-01-02T03:04:05Z'",
    )
    .await;
    assert!(found(&app, "op1", "night market").await.is_empty());
    assert_eq!(app.store.index_wiki_again().await.unwrap(), 1);
    assert_eq!(found(&app, "op1", "night market").await, ["夜市小吃"]);
    assert_eq!(found(&app, "op1", "夜市").await, ["夜市小吃"]);
    // Indexing changes no entry's own fields, and is done once.
    let kept = format!(
        "SELECT count(*) AS n FROM wiki_entries \
         WHERE updated_at = '2026-01-02T03:04:05Z' AND terms_version = {}",
        fleetdesk_wiki::entry::TERMS_VERSION
    );
    assert_eq!(app.count(&kept).await, 1);
    assert_eq!(app.store.index_wiki_again().await.unwrap(), 0);
    app.stop().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn search_limit_defaults_to_8_and_stops_at_30() {
    let app = spawn_app().await;
    // 31 matching entries: more than the maximum.
    for i in 0..31 {
        proposed(&app, "op1", entry(&format!("Serum tip {i}"), "serum serum")).await;
    }
    let count = |v: Value| v["results"].as_array().unwrap().len();
    assert_eq!(count(ok(&search(&app, "op1", "serum", "").await)), 8);
    assert_eq!(
        count(ok(&search(&app, "op1", "serum", "&limit=1").await)),
        1
    );
    assert_eq!(
        count(ok(&search(&app, "op1", "serum", "&limit=30").await)),
        30
    );
    assert_eq!(
        count(ok(&search(&app, "op1", "serum", "&limit=29").await)),
        29
    );
    assert_invalid(&search(&app, "op1", "serum", "&limit=31").await, "limit");
    assert_invalid(&search(&app, "op1", "serum", "&limit=0").await, "limit");
    // q: 1-200 characters.
    ok(&search(&app, "op1", &n('字', 200), "").await);
    assert_invalid(&search(&app, "op1", &n('字', 201), "").await, "q");
    assert_invalid(&get(&app, "op1", "/wiki/search?q=").await, "q");
    assert_invalid(&get(&app, "op1", "/wiki/search").await, "q");
}

#[tokio::test(flavor = "multi_thread")]
async fn search_finds_only_canon_entries() {
    let app = spawn_app().await;
    proposed(&app, "op1", entry("Canon mango", "mango season")).await;
    set_review(&app, "manual").await;
    let draft = proposed(&app, "op1", entry("Draft mango", "mango draft")).await;
    assert_eq!(draft["status"], "draft");
    assert_eq!(found(&app, "op1", "mango").await, vec!["Canon mango"]);
    // Dismissed: rejected, still not found.
    let d = draft["decision_id"].as_str().unwrap();
    ok(&person_post(&app, ANN, &format!("/decisions/{d}/dismiss"), json!({})).await);
    assert_eq!(found(&app, "op1", "mango").await, vec!["Canon mango"]);
}

// ---------------------------------------------------------------------------------------------
// Scope and tenant isolation

/// Shared, beauty and food entries of Acme/Taiwan, and one of Other Agency.
async fn scoped_entries(app: &TestApp) {
    proposed(app, "op1", entry("Shared lychee", "lychee for everyone")).await;
    let mut beauty = entry("Beauty lychee", "lychee mask");
    beauty["project"] = json!("beauty");
    proposed(app, "op1", beauty).await;
    let mut food = entry("Food lychee", "lychee dessert");
    food["project"] = json!("food");
    proposed(app, "op2", food).await;
    proposed(app, "other1", entry("Other lychee", "lychee elsewhere")).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn an_agent_sees_shared_entries_and_its_workspaces_projects_only() {
    let app = spawn_app().await;
    scoped_entries(&app).await;
    let mut all = found(&app, "op1", "lychee").await;
    all.sort();
    assert_eq!(all, vec!["Beauty lychee", "Food lychee", "Shared lychee"]);
    // project: that project plus the shared ones.
    let v = ok(&search(&app, "op1", "lychee", "&project=beauty").await);
    let mut t = titles(&v["results"]);
    t.sort();
    assert_eq!(t, vec!["Beauty lychee", "Shared lychee"]);
    let v = index(&app, "op2", "?project=food").await;
    let mut t = titles(&v["entries"]);
    t.sort();
    assert_eq!(t, vec!["Food lychee", "Shared lychee"]);
    // A project of another organization, or of none: 404 naming project, in a filter as
    // for any object a query names; another workspace's too (Japan's are not there for op1).
    for project in ["general", "nope"] {
        assert_missing(
            &search(&app, "op1", "lychee", &format!("&project={project}")).await,
            "project",
        );
        assert_missing(
            &get(&app, "op1", &format!("/wiki?project={project}")).await,
            "project",
        );
    }
    assert_missing(&get(&app, "jp1", "/wiki?project=food").await, "project");
    // Acme/Japan (jp1) sees Acme's shared entry, not Taiwan's projects, even its namesake
    // project "beauty".
    assert_eq!(found(&app, "jp1", "lychee").await, vec!["Shared lychee"]);
    let v = ok(&search(&app, "jp1", "lychee", "&project=beauty").await);
    assert_eq!(titles(&v["results"]), vec!["Shared lychee"]);
    assert_eq!(
        titles(&index(&app, "jp1", "?status=all").await["entries"]),
        vec!["Shared lychee"]
    );
    // Another organization sees only its own.
    assert_eq!(found(&app, "other1", "lychee").await, vec!["Other lychee"]);
    assert_eq!(
        titles(&index(&app, "other1", "").await["entries"]),
        vec!["Other lychee"]
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn another_workspaces_or_organizations_entry_is_not_found() {
    let app = spawn_app().await;
    scoped_entries(&app).await;
    let ids = index(&app, "op1", "?status=all").await;
    let beauty = ids["entries"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["title"] == "Beauty lychee")
        .map(id_of)
        .unwrap();
    let other = id_of(&index(&app, "other1", "").await["entries"][0]);
    assert_error(
        &get(&app, "jp1", &format!("/wiki/entry?id={beauty}")).await,
        404,
        "not_found",
    );
    assert_error(
        &get(&app, "op1", &format!("/wiki/entry?id={other}")).await,
        404,
        "not_found",
    );
    assert_error(
        &get(
            &app,
            "jp1",
            &format!("/wiki/entry?title={}", enc("Beauty lychee")),
        )
        .await,
        404,
        "not_found",
    );
    // revises of an entry not seen: 404 naming revises.
    let mut body = entry("Other lychee", "mine now");
    body["revises"] = json!(other);
    let v = assert_error(&propose(&app, "op1", &body).await, 404, "not_found");
    assert_eq!(v["field"], "revises");
    // A project of another organization, or of none, in a proposal: 404 naming project.
    for project in ["general", "nope"] {
        let mut body = entry("Project of another", "x");
        body["project"] = json!(project);
        assert_missing(&propose(&app, "op1", &body).await, "project");
    }
    // The same title in another organization is another entry.
    let v = proposed(&app, "op1", entry("Other lychee", "Acme's own")).await;
    assert_eq!(
        (v["created"].clone(), v["version"].clone()),
        (json!(true), json!(1))
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn namesake_projects_of_two_workspaces_stay_apart() {
    let app = spawn_app().await;
    scoped_entries(&app).await;
    // A project of another workspace of the same organization: 422 naming project.
    let mut body = entry("Japan food", "x");
    body["project"] = json!("food");
    let v = assert_rejected(&propose(&app, "jp1", &body).await, "project");
    assert!(v["message"].as_str().unwrap().contains("food"), "{v}");
    // Both workspaces have a project named beauty: jp1's lands in Japan's.
    let mut body = entry("Beauty lychee", "Japan's lychee mask");
    body["project"] = json!("beauty");
    let japan = propose(&app, "jp1", &body).await;
    assert_eq!(japan.status, 201, "another entry: {}", japan.text());
    let japan = japan.json();
    // Through the project filter each workspace sees its own beauty entries plus shared:
    // the titles listed, and the id of the one titled "Beauty lychee".
    let seen = |v: &Value, key: &str| {
        let list = v[key].as_array().unwrap();
        let mut t = titles(&v[key]);
        t.sort();
        let beauty = list
            .iter()
            .find(|e| e["title"] == "Beauty lychee")
            .map(id_of);
        (t, beauty)
    };
    let both = vec!["Beauty lychee".to_owned(), "Shared lychee".to_owned()];
    let japans = Some(id_of(&japan));
    let v = ok(&search(&app, "jp1", "lychee", "&project=beauty").await);
    assert_eq!(seen(&v, "results"), (both.clone(), japans.clone()), "{v}");
    let v = index(&app, "jp1", "?project=beauty").await;
    assert_eq!(seen(&v, "entries"), (both.clone(), japans.clone()), "{v}");
    let v = index(&app, "op1", "?project=beauty").await;
    let (t, taiwan) = seen(&v, "entries");
    assert_eq!(t, both, "{v}");
    assert_ne!(taiwan, japans, "Taiwan's beauty entry, not Japan's");
    let e = ok(&get(
        &app,
        "jp1",
        &format!("/wiki/entry?title={}&project=beauty", enc("Beauty lychee")),
    )
    .await);
    assert_eq!(e["id"], japan["id"]);
    assert_eq!(e["body"], "Japan's lychee mask");
    // revises naming an entry of another workspace's project: 404 naming revises.
    let taiwan = taiwan.expect("Taiwan's beauty entry");
    for (agent, other) in [("jp1", taiwan), ("op1", id_of(&japan))] {
        let mut rev = entry("Beauty lychee", "taken over");
        rev["revises"] = json!(other);
        let v = assert_error(&propose(&app, agent, &rev).await, 404, "not_found");
        assert_eq!(v["field"], "revises", "{agent}: {v}");
    }
    assert_eq!(
        app.count("SELECT count(*)::bigint AS n FROM wiki_versions WHERE body = 'taken over'")
            .await,
        0
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn the_community_role_has_no_wiki_scope() {
    let app = spawn_app().await;
    assert_error(&search(&app, "bot", "lychee", "").await, 403, "forbidden");
    assert_error(
        &propose(&app, "bot", &entry("x", "y")).await,
        403,
        "forbidden",
    );
    assert_error(&get(&app, "bot", "/wiki").await, 403, "forbidden");
}

// ---------------------------------------------------------------------------------------------
// The index

#[tokio::test(flavor = "multi_thread")]
async fn the_index_lists_canon_by_default_filters_by_status_and_pages() {
    let app = spawn_app().await;
    for i in 0..3 {
        proposed(&app, "op1", entry(&format!("Canon {i}"), "canon body")).await;
    }
    set_review(&app, "manual").await;
    let draft = proposed(&app, "op1", entry("Waiting", "draft body")).await;
    let dismissed = proposed(&app, "op1", entry("Dismissed", "no")).await;
    let d = dismissed["decision_id"].as_str().unwrap();
    ok(&person_post(&app, ANN, &format!("/decisions/{d}/dismiss"), json!({})).await);

    let v = index(&app, "op1", "").await;
    assert_eq!(titles(&v["entries"]), vec!["Canon 2", "Canon 1", "Canon 0"]);
    let first = &v["entries"][0];
    for key in [
        "id",
        "title",
        "category",
        "summary",
        "tags",
        "version",
        "status",
        "project",
        "created_at",
        "updated_at",
    ] {
        assert!(first.get(key).is_some(), "{key}: {first}");
    }
    assert!(first.get("body").is_none(), "no body in the index: {first}");
    assert_eq!(v["next_cursor"], Value::Null);
    assert_eq!(
        titles(&index(&app, "op1", "?status=canon").await["entries"]).len(),
        3
    );
    assert_eq!(
        titles(&index(&app, "op1", "?status=draft").await["entries"]),
        vec!["Waiting"]
    );
    assert_eq!(
        index(&app, "op1", "?status=draft").await["entries"][0]["id"],
        draft["id"]
    );
    assert_eq!(
        titles(&index(&app, "op1", "?status=rejected").await["entries"]),
        vec!["Dismissed"]
    );
    // all: every status but retired.
    app.sql("UPDATE wiki_entries SET status = 'retired' WHERE title = 'Canon 0'")
        .await;
    assert_eq!(
        titles(&index(&app, "op1", "?status=all").await["entries"]),
        vec!["Dismissed", "Waiting", "Canon 2", "Canon 1"]
    );
    assert_invalid(&get(&app, "op1", "/wiki?status=retired").await, "status");
    // Paging: limit 1-200 and the cursor.
    let page1 = index(&app, "op1", "?status=all&limit=3").await;
    assert_eq!(
        titles(&page1["entries"]),
        vec!["Dismissed", "Waiting", "Canon 2"]
    );
    let cursor = page1["next_cursor"].as_str().expect("a next page");
    let page2 = index(&app, "op1", &format!("?status=all&limit=3&cursor={cursor}")).await;
    assert_eq!(titles(&page2["entries"]), vec!["Canon 1"]);
    assert_eq!(page2["next_cursor"], Value::Null);
    ok(&get(&app, "op1", "/wiki?limit=200").await);
    assert_invalid(&get(&app, "op1", "/wiki?limit=201").await, "limit");
    assert_invalid(&get(&app, "op1", "/wiki?limit=0").await, "limit");
    assert_invalid(&get(&app, "op1", "/wiki?cursor=nope").await, "cursor");
    // project: 1-200 characters, a project of the workspace.
    let long = n('p', 200);
    assert_missing(
        &get(&app, "op1", &format!("/wiki?project={long}")).await,
        "project",
    );
    assert_invalid(
        &get(&app, "op1", &format!("/wiki?project={long}p")).await,
        "project",
    );
    assert_invalid(
        &get(&app, "op1", &format!("/wiki/search?q=x&project={long}p")).await,
        "project",
    );
}

// ---------------------------------------------------------------------------------------------
// One entry

#[tokio::test(flavor = "multi_thread")]
async fn an_entry_is_read_by_id_or_title_with_its_sources_and_versions() {
    let app = spawn_app().await;
    let mut body = entry("Mia 的語氣", "溫暖、俏皮、句子短。");
    body["category"] = json!("voice");
    body["summary"] = json!("How Mia talks");
    body["tags"] = json!(["voice", "Mia"]);
    body["project"] = json!("beauty");
    body["sources"] = json!([
        {"kind": "notion", "ref": "https://notion.so/acme/voice", "title": "Voice notes"},
        {"kind": "person", "ref": "Ann"},
    ]);
    let made = ok(&propose(&app, "op1", &body).await);
    let id = id_of(&made);
    let mut again = body.clone();
    again["body"] = json!("溫暖、俏皮、句子短，偶爾用表情符號。");
    again["note"] = json!("emoji are fine now");
    ok(&propose(&app, "op1", &again).await);

    let v = ok(&get(&app, "op1", &format!("/wiki/entry?id={id}")).await);
    assert_eq!(v["title"], "Mia 的語氣");
    assert_eq!(v["category"], "voice");
    assert_eq!(v["project"], "beauty");
    assert_eq!(v["status"], "canon");
    assert_eq!(v["version"], 2);
    assert_eq!(v["body"], "溫暖、俏皮、句子短，偶爾用表情符號。");
    assert_eq!(v["tags"], json!(["voice", "Mia"]));
    assert_eq!(
        v["sources"],
        json!([
            {"kind": "notion", "ref": "https://notion.so/acme/voice", "title": "Voice notes"},
            {"kind": "person", "ref": "Ann", "title": null},
        ])
    );
    let versions = v["versions"].as_array().unwrap();
    assert_eq!(versions.len(), 2);
    assert_eq!(versions[0]["version"], 2);
    assert_eq!(versions[0]["status"], "canon");
    assert_eq!(versions[0]["note"], "emoji are fine now");
    assert_eq!(versions[0]["proposed_by"], "op1");
    assert_eq!(versions[1]["status"], "superseded");
    // By title: any case, width or script; in the project or, without one, the only match.
    for t in ["Mia 的語氣", "mia   的语气", "ＭＩＡ 的語氣"] {
        let q = format!("/wiki/entry?title={}&project=beauty", enc(t));
        assert_eq!(ok(&get(&app, "op1", &q).await)["id"], json!(id), "{t}");
        let q = format!("/wiki/entry?title={}", enc(t));
        assert_eq!(ok(&get(&app, "op1", &q).await)["id"], json!(id), "{t}");
    }
    // A shared entry of the same title is taken before it without a project.
    let shared = ok(&propose(&app, "op1", &entry("Mia 的語氣", "shared text")).await);
    assert_eq!(shared["created"], true, "another scope: another entry");
    let q = format!("/wiki/entry?title={}", enc("Mia 的語氣"));
    assert_eq!(ok(&get(&app, "op1", &q).await)["id"], shared["id"]);
    let q = format!("/wiki/entry?title={}&project=food", enc("Mia 的語氣"));
    assert_eq!(ok(&get(&app, "op1", &q).await)["id"], shared["id"]);
    let q = format!("/wiki/entry?title={}&project=general", enc("Mia 的語氣"));
    assert_missing(&get(&app, "op1", &q).await, "project");
    // Entries of several projects and no shared one: name the project.
    let mut food = entry("Twin", "food twin");
    food["project"] = json!("food");
    ok(&propose(&app, "op1", &food).await);
    let mut beauty = entry("Twin", "beauty twin");
    beauty["project"] = json!("beauty");
    ok(&propose(&app, "op1", &beauty).await);
    assert_rejected(&get(&app, "op1", "/wiki/entry?title=Twin").await, "project");
    let v = ok(&get(&app, "op1", "/wiki/entry?title=Twin&project=food").await);
    assert_eq!(v["body"], "food twin");
    // Exactly one of id and title.
    assert_rejected(&get(&app, "op1", "/wiki/entry").await, "id");
    assert_rejected(
        &get(&app, "op1", &format!("/wiki/entry?id={id}&title=Twin")).await,
        "id",
    );
    assert_error(
        &get(
            &app,
            "op1",
            "/wiki/entry?id=00000000-0000-4000-8000-000000000000",
        )
        .await,
        404,
        "not_found",
    );
    assert_invalid(&get(&app, "op1", "/wiki/entry?id=nope").await, "id");
    assert_error(
        &get(&app, "op1", "/wiki/entry?title=Nothing").await,
        404,
        "not_found",
    );
    assert_invalid(
        &get(&app, "op1", &format!("/wiki/entry?title={}", n('t', 81))).await,
        "title",
    );
}

// ---------------------------------------------------------------------------------------------
// Proposals: limits

#[tokio::test(flavor = "multi_thread")]
async fn every_proposal_limit_holds_at_the_limit_and_refuses_one_past() {
    let app = spawn_app().await;
    let at_limit = json!({
        "category": "glossary",
        "title": n('題', 80),
        "summary": n('s', 200),
        "body": n('字', 6000),
        "tags": (0..12).map(|i| format!("{i:02}{}", n('t', 98))).collect::<Vec<_>>(),
        "sources": (0..20).map(|i| json!({
            "kind": KINDS[i % 7],
            "ref": format!("{i:02}{}", n('r', 1998)),
            "title": n('T', 200),
        })).collect::<Vec<_>>(),
        "note": n('n', 1000),
    });
    let made = propose(&app, "op1", &at_limit).await;
    assert_eq!(made.status, 201, "{}", made.text());
    let v = made.json();
    assert_eq!(
        (
            v["status"].clone(),
            v["auto"].clone(),
            v["created"].clone(),
            v["revised"].clone()
        ),
        (json!("canon"), json!(true), json!(true), json!(false))
    );
    let e = ok(&get(&app, "op1", &format!("/wiki/entry?id={}", id_of(&v))).await);
    assert_eq!(e["body"].as_str().unwrap().chars().count(), 6000);
    // Canon at once: decided by the database's clock, in the proposal's transaction.
    assert_eq!(
        e["versions"][0]["decided_at"], e["versions"][0]["created_at"],
        "{e}"
    );
    assert_eq!(e["tags"].as_array().unwrap().len(), 12);
    assert_eq!(e["sources"].as_array().unwrap().len(), 20);

    let past = |field: &str, value: Value| {
        let mut b = at_limit.clone();
        b["title"] = json!("One past");
        b[field] = value;
        b
    };
    for (field, body) in [
        ("title", past("title", json!(n('題', 81)))),
        ("title", past("title", json!(""))),
        ("title", past("title", json!("   "))),
        ("summary", past("summary", json!(n('s', 201)))),
        ("body", past("body", json!(n('字', 6001)))),
        ("body", past("body", json!(""))),
        ("body", past("body", json!(" \n "))),
        (
            "tags",
            past(
                "tags",
                json!((0..13).map(|i| format!("t{i}")).collect::<Vec<_>>()),
            ),
        ),
        ("tags[1]", past("tags", json!(["ok", n('t', 101)]))),
        ("tags[0]", past("tags", json!(["  "]))),
        ("sources", past("sources", json!([]))),
        (
            "sources",
            past(
                "sources",
                json!(vec![json!({"kind": "agent", "ref": "x"}); 21]),
            ),
        ),
        (
            "sources[0].ref",
            past("sources", json!([{"kind": "agent", "ref": n('r', 2001)}])),
        ),
        (
            "sources[0].ref",
            past("sources", json!([{"kind": "agent", "ref": " "}])),
        ),
        (
            "sources[0].title",
            past(
                "sources",
                json!([{"kind": "agent", "ref": "x", "title": n('T', 201)}]),
            ),
        ),
        (
            "sources[0].kind",
            past("sources", json!([{"kind": "slack", "ref": "x"}])),
        ),
        (
            "sources[0].ref",
            past("sources", json!([{"kind": "agent"}])),
        ),
        ("note", past("note", json!(n('n', 1001)))),
        ("category", past("category", json!("recipe"))),
        ("project", past("project", json!(n('p', 201)))),
        ("revises", past("revises", json!("not-a-uuid"))),
    ] {
        assert_invalid(&propose(&app, "op1", &body).await, field);
    }
    let mut b = at_limit.clone();
    b["colour"] = json!("red");
    assert_error(&propose(&app, "op1", &b).await, 400, "invalid_request");
    let mut b = at_limit.clone();
    b.as_object_mut().unwrap().remove("category");
    assert_invalid(&propose(&app, "op1", &b).await, "category");
    assert_eq!(
        app.count("SELECT count(*)::bigint AS n FROM wiki_versions")
            .await,
        1,
        "nothing refused was written"
    );
    // Every category of the list.
    for c in [
        "worldview",
        "character",
        "voice",
        "format",
        "audience",
        "strategy",
        "playbook",
        "lesson",
        "glossary",
        "other",
    ] {
        let mut b = entry(&format!("Category {c}"), "x");
        b["category"] = json!(c);
        assert_eq!(proposed(&app, "op1", b).await["status"], "canon", "{c}");
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn project_name_tag_source_title_and_note_at_the_limit_and_one_past() {
    let app = spawn_app().await;
    // A project name of 200 characters (the longest a request may name) is accepted.
    let long = n('p', 200);
    app.sql(&format!(
        "INSERT INTO projects (workspace_id, name) SELECT id, '{long}' FROM workspaces \
         WHERE name = 'Taiwan'"
    ))
    .await;
    let mut b = entry("Long project", "x");
    b["project"] = json!(long);
    let v = proposed(&app, "op1", b.clone()).await;
    assert_eq!(v["created"], true);
    let listed = index(&app, "op1", &format!("?project={long}")).await;
    assert_eq!(listed["entries"][0]["project"], json!(long));
    b["project"] = json!(format!("{long}p"));
    assert_invalid(&propose(&app, "op1", &b).await, "project");
    // A tag of exactly 100 characters (spaces around it dropped); 101 is refused.
    let tag = n('標', 100);
    let mut b = entry("Long tag", "x");
    b["tags"] = json!([format!("  {tag} ")]);
    let v = proposed(&app, "op1", b.clone()).await;
    let e = ok(&get(&app, "op1", &format!("/wiki/entry?id={}", id_of(&v))).await);
    assert_eq!(e["tags"], json!([tag]));
    b["tags"] = json!([format!("{tag}x")]);
    assert_invalid(&propose(&app, "op1", &b).await, "tags[0]");
    // A source title of exactly 200 characters; 201 is refused.
    let title = n('源', 200);
    let mut b = entry("Long source title", "x");
    b["sources"] = json!([{"kind": "vault", "ref": "vault/notes.md", "title": title}]);
    let v = proposed(&app, "op1", b.clone()).await;
    let e = ok(&get(&app, "op1", &format!("/wiki/entry?id={}", id_of(&v))).await);
    assert_eq!(e["sources"][0]["title"], json!(title));
    b["sources"][0]["title"] = json!(format!("{title}x"));
    assert_invalid(&propose(&app, "op1", &b).await, "sources[0].title");
    // A note of exactly 1000 characters; 1001 is refused.
    let note = n('註', 1000);
    let mut b = entry("Long note", "x");
    b["note"] = json!(note);
    let v = proposed(&app, "op1", b.clone()).await;
    let e = ok(&get(&app, "op1", &format!("/wiki/entry?id={}", id_of(&v))).await);
    assert_eq!(e["versions"][0]["note"], json!(note));
    b["note"] = json!(format!("{note}x"));
    assert_invalid(&propose(&app, "op1", &b).await, "note");
}

#[tokio::test(flavor = "multi_thread")]
async fn folded_tags_are_written_with_every_shown_version() {
    let app = spawn_app().await;
    let folded = |id: String, tags: &'static str| {
        let app = &app;
        async move {
            app.count(&format!(
                "SELECT count(*)::bigint AS n FROM wiki_entries WHERE id = '{id}' \
                 AND folded_tags = ARRAY[{tags}]::text[]"
            ))
            .await
        }
    };
    // Canon at once.
    let mut b = entry("Community FAQ", "x");
    b["tags"] = json!([" Market: TW ", "Community", "track:Beauty"]);
    let v = proposed(&app, "op1", b).await;
    assert_eq!(
        folded(id_of(&v), "'market:tw', 'community', 'track:beauty'").await,
        1
    );
    // A new canon version: its tags.
    let mut b = entry("Community FAQ", "y");
    b["tags"] = json!(["Location: Taipei"]);
    proposed(&app, "op1", b).await;
    assert_eq!(folded(id_of(&v), "'location:taipei'").await, 1);
    // A draft revision leaves the shown (canon) tags; resolving it shows the draft's.
    set_review(&app, "manual").await;
    let mut b = entry("Community FAQ", "z");
    b["tags"] = json!(["COMMUNITY"]);
    let rev = proposed(&app, "op1", b).await;
    assert_eq!(folded(id_of(&v), "'location:taipei'").await, 1);
    let d = rev["decision_id"].as_str().unwrap();
    ok(&person_post(&app, ANN, &format!("/decisions/{d}/resolve"), json!({})).await);
    assert_eq!(folded(id_of(&v), "'community'").await, 1);
    // A new draft entry (the row shows the draft).
    let mut b = entry("Draft FAQ", "x");
    b["tags"] = json!(["Market:JP"]);
    let draft = proposed(&app, "op1", b).await;
    assert_eq!(folded(id_of(&draft), "'market:jp'").await, 1);
}

#[tokio::test(flavor = "multi_thread")]
async fn the_draft_index_lists_waiting_revisions_shown_as_the_draft_and_pages() {
    let app = spawn_app().await;
    let canon = proposed(&app, "op1", entry("Brand voice", "calm")).await;
    proposed(&app, "op1", entry("Untouched", "x")).await;
    set_review(&app, "manual").await;
    let new = proposed(&app, "op1", entry("New idea", "draft entry")).await;
    let mut b = entry("BRAND VOICE", "lively");
    b["category"] = json!("voice");
    b["summary"] = json!("Lively now");
    b["tags"] = json!(["voice"]);
    let rev = proposed(&app, "op1", b).await;
    assert_eq!(rev["version"], 2);
    let v = index(&app, "op1", "?status=draft").await;
    assert_eq!(titles(&v["entries"]), vec!["New idea", "BRAND VOICE"]);
    let listed = &v["entries"][1];
    assert_eq!(listed["id"], canon["id"]);
    assert_eq!(
        (
            listed["status"].clone(),
            listed["version"].clone(),
            listed["category"].clone(),
            listed["summary"].clone(),
            listed["tags"].clone()
        ),
        (
            json!("draft"),
            json!(2),
            json!("voice"),
            json!("Lively now"),
            json!(["voice"])
        ),
        "the waiting draft version: {listed}"
    );
    assert_eq!(v["entries"][0]["id"], new["id"]);
    // canon and all list it as its canon version, once.
    let c = index(&app, "op1", "").await;
    assert_eq!(titles(&c["entries"]), vec!["Untouched", "Brand voice"]);
    assert_eq!(c["entries"][1]["version"], 1);
    let all = index(&app, "op1", "?status=all").await;
    assert_eq!(
        titles(&all["entries"]),
        vec!["New idea", "Untouched", "Brand voice"]
    );
    // Paging through the drafts one by one: each once, then the end.
    let p1 = index(&app, "op1", "?status=draft&limit=1").await;
    assert_eq!(titles(&p1["entries"]), vec!["New idea"]);
    let cursor = p1["next_cursor"].as_str().expect("a next page");
    let p2 = index(
        &app,
        "op1",
        &format!("?status=draft&limit=1&cursor={cursor}"),
    )
    .await;
    assert_eq!(titles(&p2["entries"]), vec!["BRAND VOICE"]);
    assert_eq!(p2["next_cursor"], Value::Null);
    // Decided: no longer waiting.
    let d = rev["decision_id"].as_str().unwrap();
    ok(&person_post(&app, ANN, &format!("/decisions/{d}/dismiss"), json!({})).await);
    assert_eq!(
        titles(&index(&app, "op1", "?status=draft").await["entries"]),
        vec!["New idea"]
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_source_ref_carrying_an_access_token_is_refused() {
    let app = spawn_app().await;
    for link in [
        "https://notion.so/page?token=abc",
        "https://drive.test/f?id=1&access_token=xyz",
        "https://x.test/f#sig=zz",
    ] {
        let mut b = entry("Tokens", "x");
        b["sources"] = json!([{"kind": "other", "ref": "fine"}, {"kind": "notion", "ref": link}]);
        let v = assert_rejected(&propose(&app, "op1", &b).await, "sources[1].ref");
        assert!(
            v["message"].as_str().unwrap().contains("access token"),
            "{v}"
        );
    }
    // A parameter named without a value, or another parameter, is no token.
    let mut b = entry("Tokens", "x");
    b["sources"] = json!([{"kind": "notion", "ref": "https://notion.so/page?v=1&token="}]);
    ok(&propose(&app, "op1", &b).await);
    assert_eq!(
        app.count("SELECT count(*)::bigint AS n FROM wiki_entries")
            .await,
        1
    );
}

// ---------------------------------------------------------------------------------------------
// Proposals: same title, revisions

#[tokio::test(flavor = "multi_thread")]
async fn the_same_title_in_the_same_scope_is_a_new_version_of_the_entry() {
    let app = spawn_app().await;
    let first = propose(&app, "op1", &entry("貓咪 Guide", "first")).await;
    assert_eq!(first.status, 201);
    let first = first.json();
    // Another case, width and script: the same entry, version 2 (200, revised).
    let second = propose(&app, "op2", &entry("  猫咪   guide ", "second")).await;
    assert_eq!(second.status, 200, "{}", second.text());
    let second = second.json();
    assert_eq!(second["id"], first["id"]);
    assert_eq!(
        (
            second["version"].clone(),
            second["created"].clone(),
            second["revised"].clone()
        ),
        (json!(2), json!(false), json!(true))
    );
    let e = ok(&get(&app, "op1", &format!("/wiki/entry?id={}", id_of(&first))).await);
    assert_eq!(
        (e["title"].clone(), e["body"].clone()),
        (json!("猫咪   guide"), json!("second"))
    );
    assert_eq!(found(&app, "op1", "second").await, vec!["猫咪   guide"]);
    assert!(
        found(&app, "op1", "first").await.is_empty(),
        "the old text is not searched"
    );
    // Another project: another entry.
    let mut other = entry("貓咪 Guide", "beauty's");
    other["project"] = json!("beauty");
    let v = proposed(&app, "op1", other).await;
    assert_ne!(v["id"], first["id"]);
    assert_eq!(v["version"], 1);
    // revises: the canon entry of the same title.
    let mut rev = entry("貓咪 GUIDE", "third");
    rev["revises"] = json!(first["id"]);
    let v = proposed(&app, "op1", rev.clone()).await;
    assert_eq!(
        (v["id"].clone(), v["version"].clone()),
        (first["id"].clone(), json!(3))
    );
    // ... in another project: 422.
    rev["project"] = json!("food");
    assert_rejected(&propose(&app, "op1", &rev).await, "project");
    // ... of an unknown entry: 404.
    rev["project"] = Value::Null;
    rev["revises"] = json!("00000000-0000-4000-8000-000000000000");
    let v = assert_error(&propose(&app, "op1", &rev).await, 404, "not_found");
    assert_eq!(v["field"], "revises");
    // ... of a draft entry: 422.
    set_review(&app, "manual").await;
    let draft = proposed(&app, "op1", entry("Draft only", "x")).await;
    let mut rev = entry("Draft only", "y");
    rev["revises"] = draft["id"].clone();
    assert_rejected(&propose(&app, "op1", &rev).await, "revises");
}

// ---------------------------------------------------------------------------------------------
// Idempotency

#[tokio::test(flavor = "multi_thread")]
async fn a_proposal_resent_with_its_key_replays_and_other_content_is_a_mismatch() {
    let app = spawn_app().await;
    let key = app.agent_key("op1");
    let body = entry("Idempotent", "once");
    let path = format!("{AGENT}/wiki");
    let first = app.client.post_idem(&path, &key, "wiki-1", &body).await;
    assert_eq!(first.status, 201, "{}", first.text());
    let again = app.client.post_idem(&path, &key, "wiki-1", &body).await;
    assert_eq!(again.status, 201);
    assert_eq!(again.header("idempotent-replayed"), Some("true"));
    assert_eq!(again.json(), first.json());
    assert_eq!(
        app.count("SELECT count(*)::bigint AS n FROM wiki_versions")
            .await,
        1
    );
    let mut other = body.clone();
    other["body"] = json!("twice");
    assert_error(
        &app.client.post_idem(&path, &key, "wiki-1", &other).await,
        422,
        "idempotency_mismatch",
    );
    // Without the key the same content is a new version.
    let v = ok(&app.client.post(&path, &key, &body).await);
    assert_eq!(v["version"], 2);
}

/// An MCP `tools/call`; returns the tool result's JSON body and whether it is an error.
async fn mcp_call(app: &TestApp, agent: &str, tool: &str, arguments: Value) -> (Value, bool) {
    let msg = app
        .client
        .send(
            Request::mcp(&json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                                 "params": {"name": tool, "arguments": arguments}}))
            .bearer(&app.agent_key(agent)),
        )
        .await
        .json();
    let result = &msg["result"];
    let text = result["content"][0]["text"]
        .as_str()
        .unwrap_or_else(|| panic!("{msg}"));
    (
        serde_json::from_str(text).expect("a JSON body"),
        result["isError"] == true,
    )
}

#[tokio::test(flavor = "multi_thread")]
async fn propose_wiki_in_mcp_takes_request_id_in_the_role_of_the_key() {
    let app = spawn_app().await;
    let mut args = entry("Via MCP", "once");
    args["request_id"] = json!("mcp-wiki-1");
    let (first, err) = mcp_call(&app, "op1", "propose_wiki", args.clone()).await;
    assert!(!err, "{first}");
    assert_eq!(
        (first["version"].clone(), first["created"].clone()),
        (json!(1), json!(true))
    );
    let (again, err) = mcp_call(&app, "op1", "propose_wiki", args.clone()).await;
    assert!(!err, "{again}");
    assert_eq!(again, first);
    assert_eq!(
        app.count("SELECT count(*)::bigint AS n FROM wiki_versions")
            .await,
        1
    );
    args["body"] = json!("twice");
    let (mismatch, err) = mcp_call(&app, "op1", "propose_wiki", args).await;
    assert!(err);
    assert_eq!(mismatch["code"], "idempotency_mismatch", "{mismatch}");
    // The reads as tools.
    let (v, err) = mcp_call(&app, "op1", "wiki_search", json!({"q": "once"})).await;
    assert!(!err, "{v}");
    assert_eq!(titles(&v["results"]), vec!["Via MCP"]);
    let (v, err) = mcp_call(&app, "op1", "wiki_get", json!({"id": first["id"]})).await;
    assert!(!err, "{v}");
    assert_eq!(v["body"], "once");
    let (v, err) = mcp_call(&app, "op1", "wiki_index", json!({"status": "all"})).await;
    assert!(!err, "{v}");
    assert_eq!(titles(&v["entries"]), vec!["Via MCP"]);
}

// ---------------------------------------------------------------------------------------------
// Manual review: the wiki_draft decision

async fn decisions_of_kind(app: &TestApp, who: &str) -> Value {
    ok(&app
        .client
        .get(
            &format!("{USER}/decisions?kind=wiki_draft&status=all"),
            &app.personal_key(who),
        )
        .await)
}

#[tokio::test(flavor = "multi_thread")]
async fn under_manual_review_a_new_entry_waits_for_a_person_and_resolve_makes_it_canon() {
    let app = spawn_app().await;
    set_review(&app, "manual").await;
    let mut body = entry("Night routine", "Mask before sleep.");
    body["project"] = json!("beauty");
    body["note"] = json!("from the voice notes");
    let made = propose(&app, "op1", &body).await;
    assert_eq!(made.status, 201, "{}", made.text());
    let v = made.json();
    assert_eq!(
        (v["status"].clone(), v["auto"].clone(), v["version"].clone()),
        (json!("draft"), json!(false), json!(1))
    );
    let decision = v["decision_id"].as_str().expect("a decision").to_owned();
    // A draft: not in the default index, not found, listed as draft.
    assert!(titles(&index(&app, "op1", "").await["entries"]).is_empty());
    assert_eq!(
        titles(&index(&app, "op1", "?status=draft").await["entries"]),
        vec!["Night routine"]
    );
    assert!(found(&app, "op1", "mask").await.is_empty());
    // Ann sees the decision with the proposal; Olga (another organization) does not.
    let list = decisions_of_kind(&app, ANN).await;
    let d = &list["decisions"][0];
    assert_eq!(d["id"], json!(decision));
    assert_eq!(d["kind"], "wiki_draft");
    assert_eq!(d["status"], "open");
    assert_eq!(d["options"], json!([]));
    assert_eq!(d["opened_by"], json!({"type": "agent", "name": "op1"}));
    assert_eq!(d["detail"]["entry_id"], v["id"]);
    assert_eq!(d["detail"]["body"], "Mask before sleep.");
    assert_eq!(d["detail"]["project"], "beauty");
    assert_eq!(d["detail"]["note"], "from the voice notes");
    assert_eq!(d["detail"]["revision"], false);
    assert_eq!(decisions_of_kind(&app, OLGA).await["decisions"], json!([]));
    assert_error(
        &person_post(
            &app,
            OLGA,
            &format!("/decisions/{decision}/resolve"),
            json!({}),
        )
        .await,
        404,
        "not_found",
    );
    // An agent cannot decide it by relay (not a decision of its personas).
    let relay = app
        .client
        .post(
            &format!("{AGENT}/issues/{decision}/relay"),
            &app.agent_key("op1"),
            &json!({"action": "resolve", "on_behalf_of": {"name": "Ann", "role": "agency"},
                    "origin": {"platform": "telegram"}}),
        )
        .await;
    assert_error(&relay, 404, "not_found");
    // choose: no options.
    assert_error(
        &person_post(
            &app,
            ANN,
            &format!("/decisions/{decision}/choose"),
            json!({"option": "keep"}),
        )
        .await,
        422,
        "rejected",
    );
    // Resolved: canon, found, indexed; the same move again is unchanged, another is 422.
    let r = ok(&person_post(
        &app,
        ANN,
        &format!("/decisions/{decision}/resolve"),
        json!({"note": "good"}),
    )
    .await);
    assert_eq!(r["decision"]["status"], "resolved", "{r}");
    assert_eq!(found(&app, "op1", "mask").await, vec!["Night routine"]);
    let e = ok(&get(&app, "op1", &format!("/wiki/entry?id={}", id_of(&v))).await);
    assert_eq!(
        (e["status"].clone(), e["version"].clone()),
        (json!("canon"), json!(1))
    );
    assert_eq!(e["versions"][0]["status"], "canon");
    assert_eq!(e["versions"][0]["decision_id"], json!(decision));
    assert!(e["versions"][0]["decided_at"].is_string());
    let again = ok(&person_post(
        &app,
        ANN,
        &format!("/decisions/{decision}/resolve"),
        json!({}),
    )
    .await);
    assert_eq!(again["result"], "unchanged");
    assert_error(
        &person_post(
            &app,
            ANN,
            &format!("/decisions/{decision}/dismiss"),
            json!({}),
        )
        .await,
        422,
        "rejected",
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_draft_revision_leaves_the_canon_entry_shown_until_a_person_decides() {
    let app = spawn_app().await;
    let canon = proposed(&app, "op1", entry("Brand colours", "pink and white")).await;
    set_review(&app, "manual").await;
    let rev = propose(&app, "op1", &entry("Brand colours", "teal and gold")).await;
    assert_eq!(rev.status, 200, "{}", rev.text());
    let rev = rev.json();
    assert_eq!(
        (
            rev["status"].clone(),
            rev["version"].clone(),
            rev["revised"].clone()
        ),
        (json!("draft"), json!(2), json!(true))
    );
    let id = id_of(&canon);
    // The entry keeps its canon text, status and version; search finds the canon text only.
    let e = ok(&get(&app, "op1", &format!("/wiki/entry?id={id}")).await);
    assert_eq!(
        (e["status"].clone(), e["version"].clone(), e["body"].clone()),
        (json!("canon"), json!(1), json!("pink and white"))
    );
    assert_eq!(e["versions"][0]["status"], "draft");
    assert_eq!(e["versions"][0]["decision_id"], rev["decision_id"]);
    assert_eq!(found(&app, "op1", "pink").await, vec!["Brand colours"]);
    assert!(found(&app, "op1", "teal").await.is_empty());
    assert_eq!(
        titles(&index(&app, "op1", "").await["entries"]),
        vec!["Brand colours"]
    );
    let list = decisions_of_kind(&app, ANN).await;
    assert_eq!(list["decisions"][0]["detail"]["revision"], true);
    assert!(
        list["decisions"][0]["title"]
            .as_str()
            .unwrap()
            .contains("version 2"),
        "{list}"
    );
    // Dismissed: the draft is rejected, the entry stays canon at version 1.
    let d = rev["decision_id"].as_str().unwrap();
    ok(&person_post(&app, ANN, &format!("/decisions/{d}/dismiss"), json!({})).await);
    let e = ok(&get(&app, "op1", &format!("/wiki/entry?id={id}")).await);
    assert_eq!(
        (e["status"].clone(), e["version"].clone()),
        (json!("canon"), json!(1))
    );
    assert_eq!(e["versions"][0]["status"], "rejected");
    // Another revision, resolved: it becomes canon and the old canon version is superseded.
    let rev3 = proposed(&app, "op1", entry("Brand colours", "teal and gold")).await;
    assert_eq!(rev3["version"], 3);
    let d = rev3["decision_id"].as_str().unwrap();
    ok(&person_post(&app, ANN, &format!("/decisions/{d}/resolve"), json!({})).await);
    let e = ok(&get(&app, "op1", &format!("/wiki/entry?id={id}")).await);
    assert_eq!(
        (e["status"].clone(), e["version"].clone(), e["body"].clone()),
        (json!("canon"), json!(3), json!("teal and gold"))
    );
    let statuses: Vec<&str> = e["versions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v["status"].as_str().unwrap())
        .collect();
    assert_eq!(statuses, vec!["canon", "rejected", "superseded"]);
    assert_eq!(found(&app, "op1", "teal").await, vec!["Brand colours"]);
    assert!(found(&app, "op1", "pink").await.is_empty());
}

#[tokio::test(flavor = "multi_thread")]
async fn a_dismissed_new_entry_is_rejected_and_a_later_proposal_brings_it_back() {
    let app = spawn_app().await;
    set_review(&app, "manual").await;
    let v = proposed(&app, "op1", entry("Rumour", "unverified")).await;
    let d = v["decision_id"].as_str().unwrap();
    let r = ok(&person_post(&app, ANN, &format!("/decisions/{d}/dismiss"), json!({})).await);
    assert_eq!(r["decision"]["status"], "dismissed");
    let e = ok(&get(&app, "op1", &format!("/wiki/entry?id={}", id_of(&v))).await);
    assert_eq!(e["status"], "rejected");
    assert_eq!(
        titles(&index(&app, "op1", "?status=rejected").await["entries"]),
        vec!["Rumour"]
    );
    // The same title again: version 2 of that entry, a draft with a new decision.
    let again = proposed(&app, "op1", entry("Rumour", "verified now")).await;
    assert_eq!(
        (again["id"].clone(), again["version"].clone()),
        (v["id"].clone(), json!(2))
    );
    assert_ne!(again["decision_id"], v["decision_id"]);
    assert_eq!(
        ok(&get(&app, "op1", &format!("/wiki/entry?id={}", id_of(&v))).await)["status"],
        "draft"
    );
}

/// The wiki_draft decision `id` in a person's list.
async fn decision(app: &TestApp, id: &Value) -> Value {
    decisions_of_kind(app, ANN).await["decisions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|d| &d["id"] == id)
        .unwrap_or_else(|| panic!("decision {id}"))
        .clone()
}

#[tokio::test(flavor = "multi_thread")]
async fn a_second_proposal_supersedes_the_waiting_draft_and_opens_its_own_decision() {
    let app = spawn_app().await;
    set_review(&app, "manual").await;
    // A shared entry: op1 (Acme/Taiwan) proposes version 1, jp1 (Acme/Japan) version 2.
    let v1 = proposed(&app, "op1", entry("Hashtags", "use three")).await;
    let v2 = proposed(&app, "jp1", entry("Hashtags", "use five")).await;
    assert_eq!(
        (v2["id"].clone(), v2["version"].clone()),
        (v1["id"].clone(), json!(2))
    );
    assert_eq!(v2["status"], "draft");
    assert_ne!(
        v2["decision_id"], v1["decision_id"],
        "each decision decides exactly its own version"
    );
    // Version 1's decision: dismissed by the service, a note naming version 2, its detail
    // still version 1's.
    let d1 = decision(&app, &v1["decision_id"]).await;
    assert_eq!(d1["status"], "dismissed", "{d1}");
    assert_eq!(d1["decided_by"]["type"], "service");
    assert_eq!(d1["detail"]["version"], 1);
    assert_eq!(d1["detail"]["body"], "use three");
    assert_eq!(d1["opened_by"], json!({"type": "agent", "name": "op1"}));
    let note = d1["notes"][0]["text"].as_str().unwrap();
    assert!(
        note.contains("version 1") && note.contains("version 2"),
        "{note}"
    );
    // Version 2's decision: open, opened by jp1 in its own workspace, about version 2.
    let d2 = decision(&app, &v2["decision_id"]).await;
    assert_eq!(d2["status"], "open");
    assert_eq!(d2["opened_by"], json!({"type": "agent", "name": "jp1"}));
    assert_eq!(d2["detail"]["version"], 2);
    assert_eq!(d2["detail"]["body"], "use five");
    assert_eq!(
        app.count(&format!(
            "SELECT count(*)::bigint AS n FROM decisions d JOIN workspaces w \
             ON w.id = d.workspace_id WHERE d.id = '{}' AND w.name = 'Japan'",
            v2["decision_id"].as_str().unwrap()
        ))
        .await,
        1,
        "the new decision is in the proposing agent's workspace"
    );
    let e = ok(&get(&app, "op1", &format!("/wiki/entry?id={}", id_of(&v1))).await);
    let versions: Vec<(Value, Value)> = e["versions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| (v["status"].clone(), v["decision_id"].clone()))
        .collect();
    assert_eq!(
        versions,
        vec![
            (json!("draft"), v2["decision_id"].clone()),
            (json!("superseded"), v1["decision_id"].clone())
        ]
    );
    // The person who reviewed version 1 cannot approve it any more (422); version 2's own
    // decision makes version 2 canon.
    let d = v1["decision_id"].as_str().unwrap();
    assert_error(
        &person_post(&app, ANN, &format!("/decisions/{d}/resolve"), json!({})).await,
        422,
        "rejected",
    );
    let d = v2["decision_id"].as_str().unwrap();
    ok(&person_post(&app, ANN, &format!("/decisions/{d}/resolve"), json!({})).await);
    let e = ok(&get(&app, "op1", &format!("/wiki/entry?id={}", id_of(&v1))).await);
    assert_eq!(
        (e["status"].clone(), e["version"].clone(), e["body"].clone()),
        (json!("canon"), json!(2), json!("use five"))
    );
    assert_eq!(e["versions"][1]["status"], "superseded");
    // A draft revision of a canon entry superseded the same way: the entry stays canon.
    let r3 = proposed(&app, "op1", entry("Hashtags", "use four")).await;
    let r4 = proposed(&app, "op2", entry("Hashtags", "use six")).await;
    assert_ne!(r3["decision_id"], r4["decision_id"]);
    assert_eq!(
        decision(&app, &r3["decision_id"]).await["status"],
        "dismissed"
    );
    let d4 = decision(&app, &r4["decision_id"]).await;
    assert_eq!(
        (d4["status"].clone(), d4["detail"]["revision"].clone()),
        (json!("open"), json!(true))
    );
    let e = ok(&get(&app, "op1", &format!("/wiki/entry?id={}", id_of(&v1))).await);
    assert_eq!(
        (e["status"].clone(), e["version"].clone()),
        (json!("canon"), json!(2))
    );
    // Back to auto review: a proposal overtakes a waiting draft, whose decision the service
    // dismisses.
    set_review(&app, "manual").await;
    let waiting = proposed(&app, "op1", entry("Emoji", "none")).await;
    set_review(&app, "auto").await;
    let canon = proposed(&app, "op1", entry("Emoji", "one per post")).await;
    assert_eq!(
        (
            canon["status"].clone(),
            canon["auto"].clone(),
            canon["decision_id"].clone()
        ),
        (json!("canon"), json!(true), Value::Null)
    );
    let d = decision(&app, &waiting["decision_id"]).await;
    assert_eq!(d["status"], "dismissed");
    assert_eq!(d["decided_by"]["type"], "service");
    assert!(
        d["notes"][0]["text"]
            .as_str()
            .unwrap()
            .contains("canon at once"),
        "{d}"
    );
    assert_eq!(found(&app, "op1", "post").await, vec!["Emoji"]);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_decision_whose_version_no_longer_waits_or_whose_entry_is_retired_is_refused() {
    let app = spawn_app().await;
    set_review(&app, "manual").await;
    // A version that no longer waits (superseded behind its open decision's back): 422 with
    // the reason, nothing changed.
    let v = proposed(&app, "op1", entry("Stale", "x")).await;
    app.sql(&format!(
        "UPDATE wiki_versions SET status = 'superseded' WHERE decision_id = '{}'",
        v["decision_id"].as_str().unwrap()
    ))
    .await;
    for action in ["resolve", "dismiss"] {
        let d = v["decision_id"].as_str().unwrap();
        let r = assert_error(
            &person_post(&app, ANN, &format!("/decisions/{d}/{action}"), json!({})).await,
            422,
            "rejected",
        );
        let message = r["message"].as_str().unwrap();
        assert!(
            message.contains("no longer waits") && message.contains("superseded"),
            "{message}"
        );
    }
    assert_eq!(decision(&app, &v["decision_id"]).await["status"], "open");
    // A retired entry whose title a new entry took: resolving the old draft would clash
    // with the new entry; refused 422, not a 500.
    let old = proposed(&app, "op1", entry("Retired title", "old")).await;
    app.sql(&format!(
        "UPDATE wiki_entries SET status = 'retired' WHERE id = '{}'",
        id_of(&old)
    ))
    .await;
    let new = proposed(&app, "op1", entry("Retired title", "new")).await;
    assert_ne!(new["id"], old["id"]);
    let d = old["decision_id"].as_str().unwrap();
    let r = assert_error(
        &person_post(&app, ANN, &format!("/decisions/{d}/resolve"), json!({})).await,
        422,
        "rejected",
    );
    assert!(r["message"].as_str().unwrap().contains("retired"), "{r}");
    // The new entry's own decision still decides it.
    let d = new["decision_id"].as_str().unwrap();
    ok(&person_post(&app, ANN, &format!("/decisions/{d}/resolve"), json!({})).await);
    assert_eq!(found(&app, "op1", "retired").await, vec!["Retired title"]);
}

// ---------------------------------------------------------------------------------------------
// The cast's link

#[tokio::test(flavor = "multi_thread")]
async fn a_cast_character_links_to_its_canon_character_entry() {
    let app = spawn_app().await;
    let cast = |code: &'static str| {
        let app = &app;
        async move { ok(&get(app, "op1", &format!("/personas/{code}/cast")).await)["cast"].clone() }
    };
    let momo = |c: &Value| {
        c.as_array()
            .unwrap()
            .iter()
            .find(|m| m["code"] == "momo")
            .unwrap()
            .clone()
    };
    assert_eq!(momo(&cast("TW-T001").await)["wiki_entry_id"], Value::Null);
    // Not a character entry, or a character of another project: no link.
    proposed(&app, "op1", entry("Momo", "a lesson named Momo")).await;
    let character = |title: &str, project: Option<&str>| {
        let mut b = entry(title, "the grey cat");
        b["category"] = json!("character");
        if let Some(p) = project {
            b["project"] = json!(p);
        }
        b
    };
    proposed(&app, "op1", character("Momo", Some("food"))).await;
    assert_eq!(momo(&cast("TW-T001").await)["wiki_entry_id"], Value::Null);
    // The character entry of Mia's project, matched across case and script: linked.
    let linked = proposed(&app, "op1", character("ＭＯＭＯ", Some("beauty"))).await;
    let m = momo(&cast("TW-T001").await);
    assert_eq!(m["wiki_entry_id"], linked["id"]);
    assert_eq!(m["wiki_title"], "ＭＯＭＯ");
    let chef = proposed(&app, "op1", character("Chef", None)).await;
    // Leo's chef (project food) links to the shared Chef entry; get_persona's cast too.
    let leo = ok(&get(&app, "op2", "/personas/TW-T002/cast").await);
    assert_eq!(leo["cast"][0]["wiki_entry_id"], chef["id"], "{leo}");
    assert_eq!(leo["cast"][0]["wiki_title"], "Chef");
    let persona = ok(&get(&app, "op1", "/personas/TW-T001").await);
    assert_eq!(momo(&persona["cast"])["wiki_entry_id"], linked["id"]);
    // A draft character entry is not linked.
    set_review(&app, "manual").await;
    proposed(&app, "op1", character("Lulu", None)).await;
    let c = cast("TW-T001").await;
    let lulu = c
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["code"] == "lulu")
        .unwrap();
    assert_eq!(lulu["wiki_entry_id"], Value::Null);
}

// ---------------------------------------------------------------------------------------------
// Concurrency

#[tokio::test(flavor = "multi_thread")]
async fn proposals_of_one_new_title_at_once_make_one_entry_with_a_version_each() {
    let app = spawn_app().await;
    let calls = (0..6).map(|i| {
        let app = &app;
        async move { propose(app, "op1", &entry("Race", &format!("body {i}"))).await }
    });
    let answers = futures_util::future::join_all(calls).await;
    let mut versions = Vec::new();
    let mut created = 0;
    for a in &answers {
        let v = ok(a);
        versions.push(v["version"].as_i64().unwrap());
        created += usize::from(v["created"] == true);
        assert_eq!(v["id"], answers[0].json()["id"]);
    }
    versions.sort();
    assert_eq!(versions, vec![1, 2, 3, 4, 5, 6]);
    assert_eq!(created, 1);
    assert_eq!(
        app.count("SELECT count(*)::bigint AS n FROM wiki_entries")
            .await,
        1
    );
    assert_eq!(
        app.count("SELECT count(*)::bigint AS n FROM wiki_versions WHERE status = 'canon'")
            .await,
        1
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_person_deciding_while_an_agent_proposes_again_never_fails() {
    let app = spawn_app().await;
    set_review(&app, "manual").await;
    for round in 0..4 {
        let title = format!("Contended {round}");
        let first = proposed(&app, "op1", entry(&title, "first")).await;
        let d = first["decision_id"].as_str().unwrap().to_owned();
        let resolve = format!("/decisions/{d}/resolve");
        let second = entry(&title, "second");
        let (decided, again) = tokio::join!(
            person_post(&app, ANN, &resolve, json!({})),
            propose(&app, "op2", &second),
        );
        // Either order is fine; neither call fails with an error of the server.
        let again = ok(&again);
        assert_eq!(again["version"], 2);
        assert_eq!(again["status"], "draft");
        assert_ne!(
            again["decision_id"], first["decision_id"],
            "version 2 always waits for a decision of its own"
        );
        let e = ok(&get(&app, "op1", &format!("/wiki/entry?id={}", id_of(&first))).await);
        if decided.status == 200 {
            // Resolved first: version 1 is canon, version 2 a draft revision.
            assert_eq!(
                (e["status"].clone(), e["body"].clone()),
                (json!("canon"), json!("first")),
                "{e}"
            );
        } else {
            // Proposed first: version 1 was superseded and its decision dismissed, so the
            // person's resolve is refused (422); the entry is still a draft, version 2.
            let v = assert_error(&decided, 422, "rejected");
            assert!(v["message"].as_str().unwrap().contains("dismissed"), "{v}");
            assert_eq!(
                (e["status"].clone(), e["body"].clone(), e["version"].clone()),
                (json!("draft"), json!("second"), json!(2)),
                "{e}"
            );
        }
        let statuses: Vec<&str> = e["versions"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v["status"].as_str().unwrap())
            .collect();
        assert!(
            statuses == ["draft", "canon"] || statuses == ["draft", "superseded"],
            "{statuses:?}"
        );
    }
}

// ---------------------------------------------------------------------------------------------
// Personal API: GET /wiki, /wiki/entry, /wiki/search (kb_index, kb_entry, kb_search)

async fn person_get(app: &TestApp, who: &str, path_and_query: &str) -> Response {
    app.client
        .get(&format!("{USER}{path_and_query}"), &app.personal_key(who))
        .await
}

#[tokio::test(flavor = "multi_thread")]
async fn people_browse_and_search_a_workspaces_knowledge_base() {
    let app = spawn_app().await;
    let taiwan = app.workspace_id("Taiwan");
    let japan = app.workspace_id("Japan");
    proposed(&app, "op1", entry("貓咪的照顧", "每天梳毛，貓咪會很開心。")).await;
    proposed(
        &app,
        "op2",
        json!({"category": "lesson", "title": "Food photos", "summary": "",
        "body": "Shoot dumplings from above.", "project": "food",
        "sources": [{"kind": "agent", "ref": "tests"}]}),
    )
    .await;
    proposed(&app, "jp1", entry("Japan only", "Tokyo lessons.")).await;
    proposed(
        &app,
        "other1",
        entry("猫咪 elsewhere", "another agency's cats"),
    )
    .await;

    // The index of a workspace: the shared entries and its projects'; another workspace's
    // project entries only from that workspace.
    let v = ok(&person_get(&app, ANN, &format!("/wiki?workspace={taiwan}")).await);
    let mut listed = titles(&v["entries"]);
    listed.sort();
    assert_eq!(listed, ["Food photos", "Japan only", "貓咪的照顧"], "{v}");
    let v = ok(&person_get(&app, ANN, &format!("/wiki?workspace={japan}")).await);
    let mut listed = titles(&v["entries"]);
    listed.sort();
    assert_eq!(listed, ["Japan only", "貓咪的照顧"], "{v}");
    let v = ok(&person_get(&app, ANN, &format!("/wiki?workspace={taiwan}&project=food")).await);
    assert!(titles(&v["entries"]).contains(&"Food photos".to_owned()));

    // Search in the other script finds it, with its snippet; another agency's never.
    let v = ok(&person_get(
        &app,
        ANN,
        &format!("/wiki/search?workspace={taiwan}&q={}", enc("猫咪")),
    )
    .await);
    assert_eq!(titles(&v["results"]), ["貓咪的照顧"], "{v}");
    assert!(
        v["results"][0]["snippet"]
            .as_str()
            .unwrap()
            .contains("梳毛")
    );

    // One entry by title, as titles are matched.
    let v = ok(&person_get(
        &app,
        ANN,
        &format!("/wiki/entry?workspace={taiwan}&title={}", enc("猫咪的照顾")),
    )
    .await);
    assert_eq!(v["title"], "貓咪的照顧");
    assert_eq!(v["body"], "每天梳毛，貓咪會很開心。");

    // Another organization's workspace, an unknown one: 404 naming workspace; none: 400.
    for who in [OLGA] {
        let res = person_get(&app, who, &format!("/wiki?workspace={taiwan}")).await;
        assert_eq!(assert_error(&res, 404, "not_found")["field"], "workspace");
    }
    let res = person_get(
        &app,
        ANN,
        &format!("/wiki/search?workspace={}&q=x", uuid::Uuid::new_v4()),
    )
    .await;
    assert_eq!(assert_error(&res, 404, "not_found")["field"], "workspace");
    assert_invalid(
        &person_get(&app, ANN, "/wiki/search?q=x").await,
        "workspace",
    );
    assert_invalid(
        &person_get(&app, ANN, &format!("/wiki/search?workspace={taiwan}&q=")).await,
        "q",
    );
    let res = person_get(&app, ANN, &format!("/wiki?workspace={taiwan}&project=nope")).await;
    assert_missing(&res, "project");
    // A platform admin outside any organization reads any workspace; clients are refused.
    let v = ok(&person_get(
        &app,
        "root@example.com",
        &format!("/wiki?workspace={taiwan}"),
    )
    .await);
    assert_eq!(v["entries"].as_array().unwrap().len(), 3);
    assert_error(
        &person_get(&app, "cli@brand.test", &format!("/wiki?workspace={taiwan}")).await,
        403,
        "forbidden",
    );
    // An archived workspace is no longer read.
    app.sql(&format!(
        "UPDATE workspaces SET archived_at = now() WHERE id = '{japan}'"
    ))
    .await;
    let res = person_get(&app, ANN, &format!("/wiki?workspace={japan}")).await;
    assert_eq!(assert_error(&res, 404, "not_found")["field"], "workspace");
    app.stop().await;
}

// ---------------------------------------------------------------------------------------------
// Renaming through revises

#[tokio::test(flavor = "multi_thread")]
async fn a_revision_under_a_new_title_renames_its_entry_never_onto_another_entrys_title() {
    let app = spawn_app().await;
    let first = proposed(&app, "op1", entry("Cat guide", "cats first")).await;
    let dog = proposed(&app, "op1", entry("Dog guide", "dogs")).await;
    // Onto another entry's title (as matched: case aside): 422 naming title, nothing written.
    let mut rev = entry("DOG GUIDE", "cats second");
    rev["revises"] = first["id"].clone();
    let refused = assert_rejected(&propose(&app, "op1", &rev).await, "title");
    assert!(
        refused["message"]
            .as_str()
            .unwrap()
            .contains("\"Dog guide\""),
        "names the entry holding the title: {refused}"
    );
    assert_eq!(
        app.count("SELECT count(*)::bigint AS n FROM wiki_versions")
            .await,
        2
    );
    // A free title: version 2 of the same entry, under its new title.
    rev["title"] = json!("Feline guide");
    let v = proposed(&app, "op1", rev).await;
    assert_eq!(
        (v["id"].clone(), v["version"].clone(), v["title"].clone()),
        (first["id"].clone(), json!(2), json!("Feline guide"))
    );
    let e = ok(&get(&app, "op1", &format!("/wiki/entry?id={}", id_of(&first))).await);
    assert_eq!(e["title"], "Feline guide", "{e}");
    assert_eq!(e["body"], "cats second");
    let by_title = ok(&get(&app, "op1", "/wiki/entry?title=feline%20GUIDE").await);
    assert_eq!(by_title["id"], first["id"]);
    assert_error(
        &get(&app, "op1", "/wiki/entry?title=Cat%20guide").await,
        404,
        "not_found",
    );
    // The old title is free again: a proposal under it is a new entry.
    let again = proposed(&app, "op1", entry("Cat guide", "another")).await;
    assert_ne!(again["id"], first["id"]);
    assert_eq!(again["version"], 1);
    assert_ne!(again["id"], dog["id"]);

    // Under manual review the rename waits with its draft; a title taken meanwhile makes the
    // draft unresolvable (dismissing still works).
    set_review(&app, "manual").await;
    let mut rev = entry("Hound guide", "dogs second");
    rev["revises"] = dog["id"].clone();
    let draft = proposed(&app, "op1", rev).await;
    assert_eq!(draft["status"], "draft", "{draft}");
    let e = ok(&get(&app, "op1", &format!("/wiki/entry?id={}", id_of(&dog))).await);
    assert_eq!(
        e["title"], "Dog guide",
        "the canon title shows while the draft waits"
    );
    set_review(&app, "auto").await;
    proposed(
        &app,
        "op1",
        entry("Hound guide", "a hound entry of its own"),
    )
    .await;
    let decision = draft["decision_id"].as_str().unwrap().to_owned();
    let refused = assert_error(
        &person_post(
            &app,
            ANN,
            &format!("/decisions/{decision}/resolve"),
            json!({}),
        )
        .await,
        422,
        "rejected",
    );
    assert!(
        refused["message"]
            .as_str()
            .unwrap()
            .contains("\"Hound guide\""),
        "{refused}"
    );
    ok(&person_post(
        &app,
        ANN,
        &format!("/decisions/{decision}/dismiss"),
        json!({}),
    )
    .await);
    let e = ok(&get(&app, "op1", &format!("/wiki/entry?id={}", id_of(&dog))).await);
    assert_eq!(
        (e["title"].clone(), e["status"].clone()),
        (json!("Dog guide"), json!("canon"))
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_resolved_draft_renames_its_entry() {
    let app = spawn_app().await;
    let first = proposed(&app, "op1", entry("Old name", "v1")).await;
    set_review(&app, "manual").await;
    let mut rev = entry("New name", "tangerines in winter");
    rev["revises"] = first["id"].clone();
    let draft = proposed(&app, "op1", rev).await;
    let decision = draft["decision_id"].as_str().unwrap().to_owned();
    ok(&person_post(
        &app,
        ANN,
        &format!("/decisions/{decision}/resolve"),
        json!({}),
    )
    .await);
    let e = ok(&get(&app, "op1", &format!("/wiki/entry?id={}", id_of(&first))).await);
    assert_eq!(
        (
            e["title"].clone(),
            e["version"].clone(),
            e["status"].clone()
        ),
        (json!("New name"), json!(2), json!("canon"))
    );
    assert_eq!(found(&app, "op1", "tangerines").await, vec!["New name"]);
}
