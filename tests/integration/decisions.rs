//! Human decisions through HTTP over the standard tenant: GET /decisions, POST
//! /decisions/{id}/resolve, /dismiss and /choose (Personal API), POST /issues/{id}/done and
//! /issues/{id}/relay (Agent API), and the follow-ups in work_today. Decisions other than the
//! ban are opened here by SQL (their endpoints belong to the personas area).

use fleetdesk_tests::assert::{assert_error, ok};
use fleetdesk_tests::{Response, TestApp, spawn_app};
use jiff::Timestamp;
use serde_json::{Value, json};
use uuid::Uuid;

const AGENT: &str = "/api/agent/v1";
const USER: &str = "/api/user/v1";
const ANN: &str = "ann@acme.test";
const CLI: &str = "cli@brand.test";
const OLGA: &str = "olga@other.test";
const ROOT: &str = "root@example.com";

// ---------------------------------------------------------------------------------------------
// helpers

#[track_caller]
fn assert_rejected(res: &Response, field: Option<&str>) -> Value {
    let v = assert_error(res, 422, "rejected");
    if let Some(f) = field {
        assert_eq!(v["field"], f, "{v}");
    }
    v
}

#[track_caller]
fn assert_invalid(res: &Response, field: &str) -> Value {
    let v = assert_error(res, 400, "invalid_request");
    assert_eq!(v["field"], field, "{v}");
    v
}

async fn list(app: &TestApp, who: &str, query: &str) -> Response {
    app.client
        .get(&format!("{USER}/decisions{query}"), &app.personal_key(who))
        .await
}

/// A person's move: `resolve`, `dismiss` or `choose`.
async fn decide(app: &TestApp, who: &str, id: Uuid, action: &str, body: Value) -> Response {
    app.client
        .post(
            &format!("{USER}/decisions/{id}/{action}"),
            &app.personal_key(who),
            &body,
        )
        .await
}

async fn agent_post(app: &TestApp, agent: &str, path: &str, body: Value) -> Response {
    app.client
        .post(&format!("{AGENT}{path}"), &app.agent_key(agent), &body)
        .await
}

async fn done(app: &TestApp, agent: &str, id: Uuid, body: Value) -> Response {
    agent_post(app, agent, &format!("/issues/{id}/done"), body).await
}

async fn relay(app: &TestApp, agent: &str, id: Uuid, body: Value) -> Response {
    agent_post(app, agent, &format!("/issues/{id}/relay"), body).await
}

fn uuid_of(v: &Value) -> Uuid {
    v.as_str().expect("an id").parse().expect("a uuid")
}

/// Bans an account of op1's Mia: the service opens the account_banned decision.
async fn ban(app: &TestApp, code: &str) -> Uuid {
    let v = ok(&agent_post(
        app,
        "op1",
        &format!("/accounts/{code}/state"),
        json!({"state": "banned", "reason": "the platform said so",
               "occurred_at": Timestamp::now().to_string()}),
    )
    .await);
    uuid_of(&v["decision"]["id"])
}

/// Opens a decision of `kind` on `persona` by SQL, as the personas endpoints do.
async fn open(
    app: &TestApp,
    persona: Uuid,
    kind: &str,
    options: Value,
    detail: Value,
    post_id: Option<&str>,
) -> Uuid {
    let id = Uuid::new_v4();
    let question = if options.as_array().is_some_and(|o| !o.is_empty()) && kind != "persona_images"
    {
        "'What should change?'"
    } else {
        "NULL"
    };
    let post = post_id.map_or("NULL".to_owned(), |p| format!("'{p}'"));
    app.sql(&format!(
        "INSERT INTO decisions (id, organization_id, workspace_id, kind, persona_id, title, \
           question, options, detail, opened_by_agent, post_id) \
         SELECT '{id}', w.organization_id, pe.workspace_id, '{kind}', pe.id, 'About ' || pe.name, \
           {question}, '{options}'::jsonb, '{detail}'::jsonb, pe.agent_id, {post} \
         FROM personas pe JOIN workspaces w ON w.id = pe.workspace_id WHERE pe.id = '{persona}'"
    ))
    .await;
    id
}

/// A new persona of op1 waiting for a person.
async fn pending_persona(app: &TestApp, name: &str) -> Uuid {
    let id = Uuid::new_v4();
    app.sql(&format!(
        "INSERT INTO personas (id, workspace_id, project_id, agent_id, name, status, \
           created_by_agent) \
         SELECT '{id}', workspace_id, project_id, agent_id, '{name}', 'pending', agent_id \
         FROM personas WHERE name = 'Mia'"
    ))
    .await;
    id
}

async fn image(app: &TestApp, persona: Uuid, decision: Uuid, category: &str) -> Uuid {
    let id = Uuid::new_v4();
    app.sql(&format!(
        "INSERT INTO persona_images (id, persona_id, sha256, mime_type, bytes, width, height, \
           storage_key, thumb_key, thumb_mime, category, caption, decision_id) \
         VALUES ('{id}', '{persona}', '{id}', 'image/png', 10, 1, 1, 'k', 'tk', 'image/png', \
           '{category}', 'a caption', '{decision}')"
    ))
    .await;
    id
}

async fn one_text(app: &TestApp, query: &str) -> String {
    use diesel_async::RunQueryDsl;
    #[derive(diesel::QueryableByName)]
    struct T {
        #[diesel(sql_type = diesel::sql_types::Text)]
        t: String,
    }
    let row: T = diesel::sql_query(query)
        .get_result(&mut app.connect().await)
        .await
        .unwrap_or_else(|e| panic!("{query}: {e}"));
    row.t
}

async fn work_today(app: &TestApp, agent: &str) -> Value {
    ok(&app
        .client
        .get(&format!("{AGENT}/work/today"), &app.agent_key(agent))
        .await)
}

/// A change_bio follow-up of Mia (op1), opened by Ann choosing on a contradiction.
async fn change_bio(app: &TestApp) -> (Uuid, Uuid) {
    let mia = app.persona_id("Mia");
    let c = open(
        app,
        mia,
        "contradiction",
        json!(["change_bio", "delete_post", "keep"]),
        json!({"label": "age", "value": "says 30 in a post"}),
        None,
    )
    .await;
    let v = ok(&decide(app, ANN, c, "choose", json!({"option": "change_bio"})).await);
    (c, uuid_of(&v["follow_up_id"]))
}

/// Two fact_proposal decisions on Mia, with a decided fact pet/cat and a draft fact for each:
/// `(category, label, value)` of the drafts.
async fn two_fact_drafts(
    app: &TestApp,
    first: (&str, &str, &str),
    second: (&str, &str, &str),
) -> (Uuid, Uuid, Uuid) {
    let mia = app.persona_id("Mia");
    let a = open(app, mia, "fact_proposal", json!([]), json!({}), None).await;
    let b = open(app, mia, "fact_proposal", json!([]), json!({}), None).await;
    app.sql(&format!(
        "INSERT INTO persona_facts (persona_id, category, label, value, status) VALUES \
           ('{mia}', 'pet', 'cat', 'Momo', 'decided')"
    ))
    .await;
    let ((c1, l1, v1), (c2, l2, v2)) = (first, second);
    app.sql(&format!(
        "INSERT INTO persona_facts (persona_id, category, label, value, status, decision_id) VALUES \
           ('{mia}', '{c1}', '{l1}', '{v1}', 'draft', '{a}'), \
           ('{mia}', '{c2}', '{l2}', '{v2}', 'draft', '{b}')"
    ))
    .await;
    (mia, a, b)
}

/// The same Idempotency-Key replays the first answer and refuses other content.
async fn assert_replays(
    app: &TestApp,
    key: &str,
    path: &str,
    idem: &str,
    body: Value,
    other: Value,
) -> Value {
    let first = ok(&app.client.post_idem(path, key, idem, &body).await);
    assert_eq!(
        ok(&app.client.post_idem(path, key, idem, &body).await),
        first
    );
    assert_error(
        &app.client.post_idem(path, key, idem, &other).await,
        422,
        "idempotency_mismatch",
    );
    first
}

/// How many generations of account `code` match `condition` (over `g`).
async fn generations(app: &TestApp, code: &str, condition: &str) -> i64 {
    app.count(&format!(
        "SELECT count(*) AS n FROM account_generations g JOIN account_slots s \
         ON s.id = g.slot_id WHERE s.code = '{code}' AND {condition}"
    ))
    .await
}

fn relay_body(action: &str, extra: Value) -> Value {
    let mut body = json!({
        "action": action,
        "on_behalf_of": {"name": "Ann", "role": "agency"},
        "origin": {"platform": "feishu", "thread": "t-1"},
        "effective_at": "2026-11-25T10:00:00+08:00",
    });
    for (k, v) in extra.as_object().cloned().unwrap_or_default() {
        body[k] = v;
    }
    body
}

// ---------------------------------------------------------------------------------------------
// GET /decisions

#[tokio::test(flavor = "multi_thread")]
async fn the_list_shows_only_the_organizations_decisions_newest_first_in_pages() {
    let app = spawn_app().await;
    let banned = ban(&app, "TW-I001").await;
    let mia = app.persona_id("Mia");
    let mut ids = vec![banned];
    for _ in 0..2 {
        ids.push(open(&app, mia, "fact_proposal", json!([]), json!({}), None).await);
    }
    let zoe = open(
        &app,
        app.persona_id("Zoe"),
        "persona_new",
        json!([]),
        json!({}),
        None,
    )
    .await;

    let v = ok(&list(&app, ANN, "").await);
    let got: Vec<Uuid> = v["decisions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| uuid_of(&d["id"]))
        .collect();
    let mut newest_first = ids.clone();
    newest_first.reverse();
    assert_eq!(got, newest_first, "{v}");
    assert_eq!(v["next_cursor"], Value::Null);
    let ban_record = &v["decisions"][2];
    assert_eq!(ban_record["kind"], "account_banned");
    assert_eq!(ban_record["status"], "open");
    assert_eq!(
        ban_record["options"],
        json!(["open_new_generation", "keep_closed"])
    );
    assert_eq!(
        ban_record["account"],
        json!({"code": "TW-I001", "platform": "instagram"})
    );
    assert_eq!(ban_record["persona"]["name"], "Mia");
    assert_eq!(
        ban_record["opened_by"],
        json!({"type": "agent", "name": "op1"})
    );
    assert_eq!(ban_record["notes"], json!([]));
    assert_eq!(ban_record["decided_by"], Value::Null);
    assert!(ban_record["question"].is_string(), "{ban_record}");

    // Pages of 2: two pages, the last without a cursor.
    let p1 = ok(&list(&app, ANN, "?limit=2").await);
    assert_eq!(p1["decisions"].as_array().unwrap().len(), 2);
    let cursor = p1["next_cursor"].as_str().expect("a cursor").to_owned();
    let p2 = ok(&list(&app, ANN, &format!("?limit=2&cursor={cursor}")).await);
    assert_eq!(p2["decisions"].as_array().unwrap().len(), 1);
    assert_eq!(uuid_of(&p2["decisions"][0]["id"]), banned);
    assert_eq!(p2["next_cursor"], Value::Null);
    // limit 1-200.
    assert_eq!(
        ok(&list(&app, ANN, "?limit=200").await)["decisions"]
            .as_array()
            .unwrap()
            .len(),
        3
    );
    assert_eq!(
        ok(&list(&app, ANN, "?limit=1").await)["decisions"]
            .as_array()
            .unwrap()
            .len(),
        1
    );
    assert_invalid(&list(&app, ANN, "?limit=0").await, "limit");
    assert_invalid(&list(&app, ANN, "?limit=201").await, "limit");
    assert_invalid(&list(&app, ANN, "?cursor=nope").await, "cursor");
    assert_invalid(&list(&app, ANN, "?status=closed").await, "status");

    // Filters.
    let bans = ok(&list(&app, ANN, "?kind=account_banned").await);
    assert_eq!(bans["decisions"].as_array().unwrap().len(), 1);
    assert_eq!(
        ok(&list(&app, ANN, "?status=resolved").await)["decisions"],
        json!([])
    );

    // Another organization sees only its own; a platform admin sees both; clients never.
    let other = ok(&list(&app, OLGA, "").await);
    assert_eq!(other["decisions"].as_array().unwrap().len(), 1);
    assert_eq!(uuid_of(&other["decisions"][0]["id"]), zoe);
    let root = ok(&list(&app, ROOT, "?limit=200").await);
    assert!(root["decisions"].as_array().unwrap().len() >= 4, "{root}");
    assert_error(&list(&app, CLI, "").await, 403, "forbidden");
    assert_error(
        &decide(
            &app,
            CLI,
            banned,
            "choose",
            json!({"option": "keep_closed"}),
        )
        .await,
        403,
        "forbidden",
    );
}

// ---------------------------------------------------------------------------------------------
// account_banned

#[tokio::test(flavor = "multi_thread")]
async fn choosing_a_new_generation_replaces_the_banned_one_once() {
    let app = spawn_app().await;
    let id = ban(&app, "TW-I001").await;

    // Another organization's person does not find it.
    assert_error(
        &decide(
            &app,
            OLGA,
            id,
            "choose",
            json!({"option": "open_new_generation"}),
        )
        .await,
        404,
        "not_found",
    );
    assert_error(
        &decide(&app, ANN, Uuid::new_v4(), "dismiss", json!({})).await,
        404,
        "not_found",
    );
    // It asks a question: resolve is refused, and only its options are chosen.
    let v = assert_rejected(&decide(&app, ANN, id, "resolve", json!({})).await, None);
    assert!(v["message"].as_str().unwrap().contains("choose"), "{v}");
    assert_rejected(
        &decide(&app, ANN, id, "choose", json!({"option": "reopen"})).await,
        Some("option"),
    );
    assert_invalid(
        &decide(&app, ANN, id, "choose", json!({"option": ""})).await,
        "option",
    );
    assert_invalid(
        &decide(&app, ANN, id, "choose", json!({"option": "x".repeat(101)})).await,
        "option",
    );
    assert_invalid(
        &decide(
            &app,
            ANN,
            id,
            "choose",
            json!({"option": "keep_closed", "note": "n".repeat(1001)}),
        )
        .await,
        "note",
    );

    let body = json!({"option": "open_new_generation", "note": "n".repeat(1000)});
    let v = ok(&decide(&app, ANN, id, "choose", body.clone()).await);
    assert_eq!(v["result"], "changed", "{v}");
    let d = &v["decision"];
    assert_eq!(d["status"], "resolved");
    assert_eq!(d["decided_by"]["type"], "person");
    assert_eq!(d["decided_by"]["name"], "Ann");
    assert!(d["decided_at"].is_string());
    assert_eq!(d["notes"][0]["by"], "Ann");
    assert_eq!(d["notes"][0]["text"], "n".repeat(1000));
    let gens = |q: &'static str| generations(&app, "TW-I001", q);
    assert_eq!(
        gens("g.generation = 1 AND g.state = 'replaced' AND g.closed_at IS NOT NULL").await,
        1
    );
    assert_eq!(
        gens("g.generation = 2 AND g.state = 'warming' AND g.closed_at IS NULL").await,
        1
    );

    // The same move again: unchanged, nothing more opens; any other move is refused.
    let again = ok(&decide(&app, ANN, id, "choose", body).await);
    assert_eq!(again["result"], "unchanged");
    assert_eq!(again["decision"]["notes"].as_array().unwrap().len(), 1);
    assert_eq!(gens("true").await, 2);
    assert_rejected(
        &decide(&app, ANN, id, "choose", json!({"option": "keep_closed"})).await,
        None,
    );
    assert_rejected(&decide(&app, ANN, id, "dismiss", json!({})).await, None);
    // Decided decisions leave the default list.
    assert_eq!(ok(&list(&app, ANN, "").await)["decisions"], json!([]));
    assert_eq!(
        ok(&list(&app, ANN, "?status=resolved").await)["decisions"]
            .as_array()
            .unwrap()
            .len(),
        1
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn keep_closed_changes_nothing_more() {
    let app = spawn_app().await;
    let id = ban(&app, "TW-I001").await;
    let v = ok(&decide(&app, ANN, id, "choose", json!({"option": "keep_closed"})).await);
    assert_eq!(v["decision"]["status"], "resolved");
    let gens = |q: &'static str| generations(&app, "TW-I001", q);
    assert_eq!(gens("true").await, 1);
    assert_eq!(
        gens("g.generation = 1 AND g.state = 'banned' AND g.closed_at IS NULL").await,
        1
    );
    assert_eq!(gens("g.generation = 2").await, 0);
}

// ---------------------------------------------------------------------------------------------
// persona_new, fact_proposal

#[tokio::test(flavor = "multi_thread")]
async fn a_new_persona_is_confirmed_or_retired() {
    let app = spawn_app().await;
    let nova = pending_persona(&app, "Nova").await;
    let nox = pending_persona(&app, "Nox").await;
    let a = open(
        &app,
        nova,
        "persona_new",
        json!([]),
        json!({"project": "beauty"}),
        None,
    )
    .await;
    let b = open(
        &app,
        nox,
        "persona_new",
        json!([]),
        json!({"project": "beauty"}),
        None,
    )
    .await;

    assert_rejected(
        &decide(&app, ANN, a, "choose", json!({"option": "yes"})).await,
        Some("option"),
    );
    assert_rejected(
        &decide(
            &app,
            ANN,
            a,
            "resolve",
            json!({"set_avatar": Uuid::new_v4()}),
        )
        .await,
        Some("set_avatar"),
    );
    let v = ok(&decide(&app, ANN, a, "resolve", json!({"note": "welcome"})).await);
    assert_eq!(v["decision"]["status"], "resolved");
    // One clock for the move: the note's time is when it was decided.
    let d = &v["decision"];
    assert_eq!(d["notes"][0]["at"], d["decided_at"], "{d}");
    assert_eq!(
        one_text(
            &app,
            &format!("SELECT status AS t FROM personas WHERE id = '{nova}'")
        )
        .await,
        "confirmed"
    );
    let v = ok(&decide(&app, ANN, b, "dismiss", json!({})).await);
    assert_eq!(v["decision"]["status"], "dismissed");
    assert_eq!(
        app.count(&format!(
            "SELECT count(*) AS n FROM personas WHERE id = '{nox}' AND status = 'retired' \
             AND retired_at IS NOT NULL"
        ))
        .await,
        1
    );
    // Its name is free again.
    pending_persona(&app, "Nox").await;
    // Resolving what was dismissed is refused; dismissing again is unchanged.
    assert_rejected(&decide(&app, ANN, b, "resolve", json!({})).await, None);
    assert_eq!(
        ok(&decide(&app, ANN, b, "dismiss", json!({})).await)["result"],
        "unchanged"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_fact_becomes_decided_replacing_the_old_one_or_is_refused() {
    let app = spawn_app().await;
    let (mia, a, b) = two_fact_drafts(
        &app,
        ("pet", "cat", "Momo and Lulu"),
        ("home", "city", "Taipei"),
    )
    .await;
    ok(&decide(&app, ANN, a, "resolve", json!({})).await);
    assert_eq!(
        one_text(
            &app,
            &format!(
                "SELECT value AS t FROM persona_facts WHERE persona_id = '{mia}' \
                 AND label = 'cat' AND status = 'decided'"
            )
        )
        .await,
        "Momo and Lulu"
    );
    assert_eq!(
        app.count("SELECT count(*) AS n FROM persona_facts WHERE status = 'replaced'")
            .await,
        1
    );
    ok(&decide(&app, ANN, b, "dismiss", json!({})).await);
    assert_eq!(
        app.count(
            "SELECT count(*) AS n FROM persona_facts WHERE label = 'city' AND status = 'refused'"
        )
        .await,
        1
    );
}

// ---------------------------------------------------------------------------------------------
// persona_images

#[tokio::test(flavor = "multi_thread")]
async fn images_are_approved_some_refused_and_an_avatar_opens_a_follow_up() {
    let app = spawn_app().await;
    let mia = app.persona_id("Mia");
    let d = open(&app, mia, "persona_images", json!([]), json!({}), None).await;
    let avatar = image(&app, mia, d, "avatar").await;
    let pet = image(&app, mia, d, "pet").await;
    let other_avatar = image(&app, mia, d, "avatar").await;

    let v = ok(&list(&app, ANN, "?kind=persona_images").await);
    let images = v["decisions"][0]["detail"]["images"].as_array().unwrap();
    assert_eq!(images.len(), 3, "{v}");
    assert_eq!(images[0]["id"], json!(avatar));
    assert_eq!(images[0]["category"], "avatar");
    assert_eq!(images[0]["lock"], "draft");
    assert_eq!(images[0]["caption"], "a caption");

    let some = |ids: Value, avatar: Option<Uuid>| json!({"option": "approve_some", "image_ids": ids, "set_avatar": avatar});
    assert_rejected(
        &decide(&app, ANN, d, "choose", some(json!([Uuid::new_v4()]), None)).await,
        Some("image_ids"),
    );
    assert_rejected(
        &decide(&app, ANN, d, "choose", json!({"option": "approve_some"})).await,
        Some("image_ids"),
    );
    assert_rejected(
        &decide(&app, ANN, d, "choose", some(json!([pet]), Some(pet))).await,
        Some("set_avatar"),
    );
    assert_rejected(
        &decide(&app, ANN, d, "choose", some(json!([pet]), Some(avatar))).await,
        Some("set_avatar"),
    );
    assert_rejected(
        &decide(&app, ANN, d, "choose", json!({"option": "approve_all"})).await,
        Some("option"),
    );
    assert_invalid(
        &decide(&app, ANN, d, "choose", some(json!([]), None)).await,
        "image_ids",
    );
    let many: Vec<Uuid> = (0..101).map(|_| Uuid::new_v4()).collect();
    assert_invalid(
        &decide(&app, ANN, d, "choose", some(json!(many), None)).await,
        "image_ids",
    );

    let v = ok(&decide(
        &app,
        ANN,
        d,
        "choose",
        some(json!([pet, avatar]), Some(avatar)),
    )
    .await);
    assert_eq!(v["decision"]["status"], "resolved");
    let locks = &v["decision"]["detail"]["images"];
    let image_of = |id: Uuid| {
        locks
            .as_array()
            .unwrap()
            .iter()
            .find(|i| i["id"] == json!(id))
            .unwrap()
            .clone()
    };
    let lock_of = |id: Uuid| image_of(id)["lock"].clone();
    assert_eq!(lock_of(avatar), "approved");
    assert_eq!(lock_of(pet), "approved");
    assert_eq!(lock_of(other_avatar), "refused");
    // A refused image is never served: it is listed without links.
    let refused = image_of(other_avatar);
    assert!(refused.get("url").is_none(), "{refused}");
    assert!(refused.get("thumb_url").is_none(), "{refused}");
    assert_eq!(refused["category"], "avatar");
    assert!(image_of(pet)["url"].is_string());
    assert!(image_of(pet)["thumb_url"].is_string());

    // The change_avatar follow-up, with its card for op1, is in op1's day.
    let follow_up = uuid_of(&v["follow_up_id"]);
    let day = work_today(&app, "op1").await;
    assert_eq!(day["summary"]["follow_ups"], 1, "{day}");
    let f = &day["follow_ups"][0];
    assert_eq!(uuid_of(&f["id"]), follow_up);
    assert_eq!(f["kind"], "change_avatar");
    assert_eq!(f["persona"]["name"], "Mia");
    assert!(f["account"]["code"].is_string(), "{f}");
    assert!(
        f["instruction"]
            .as_str()
            .unwrap()
            .contains(&avatar.to_string()),
        "{f}"
    );
    let task = uuid_of(&f["task_id"]);
    assert_eq!(
        app.count(&format!(
            "SELECT count(*) AS n FROM task_cards c JOIN agents a ON a.id = c.assignee_agent \
             WHERE c.id = '{task}' AND c.kind = 'change_avatar' AND c.status = 'pending_pickup' \
               AND a.name = 'op1' AND c.opened_by_type = 'person' AND c.opened_by_name = 'Ann' \
               AND c.decision_id = '{follow_up}'"
        ))
        .await,
        1
    );
    let listed = ok(&list(&app, ANN, "?kind=change_avatar").await);
    let fr = &listed["decisions"][0];
    assert_eq!(fr["opened_by"], json!({"type": "person", "name": "Ann"}));
    assert_eq!(uuid_of(&fr["task_id"]), task);
    // Other agents see none of it.
    assert_eq!(work_today(&app, "op2").await["follow_ups"], json!([]));
    // op1 changes the avatar and reports it: handled, the card waits for a person.
    let v = ok(&done(&app, "op1", follow_up, json!({"result": "avatar changed"})).await);
    assert_eq!(v["decision"]["status"], "handled");
    assert_eq!(v["decision"]["result"], "avatar changed");
    assert_eq!(
        one_text(
            &app,
            &format!("SELECT status AS t FROM task_cards WHERE id = '{task}'")
        )
        .await,
        "pending_confirmation"
    );
    assert_eq!(work_today(&app, "op1").await["follow_ups"], json!([]));
    assert_eq!(
        ok(&list(&app, ANN, "?status=handled").await)["decisions"][0]["id"],
        json!(follow_up)
    );

    // A second images decision dismissed: all refused.
    let d2 = open(&app, mia, "persona_images", json!([]), json!({}), None).await;
    let x = image(&app, mia, d2, "pet").await;
    assert_rejected(
        &decide(&app, ANN, d2, "resolve", json!({"set_avatar": x})).await,
        Some("set_avatar"),
    );
    ok(&decide(&app, ANN, d2, "dismiss", json!({})).await);
    assert_eq!(
        one_text(
            &app,
            &format!("SELECT lock AS t FROM persona_images WHERE id = '{x}'")
        )
        .await,
        "refused"
    );
}

// ---------------------------------------------------------------------------------------------
// contradiction, follow-ups, complete_issue

#[tokio::test(flavor = "multi_thread")]
async fn a_contradiction_opens_its_follow_up_and_the_agent_completes_it() {
    let app = spawn_app().await;
    let mia = app.persona_id("Mia");
    let draft = ok(&agent_post(
        &app,
        "op1",
        "/drafts",
        json!({"code": "TW-T001", "body": "I am 30"}),
    )
    .await);
    let post_id = draft["draft"]["id"].as_str().unwrap().to_owned();
    let options = json!(["change_bio", "delete_post", "keep"]);
    let without_post = open(&app, mia, "contradiction", options.clone(), json!({}), None).await;
    assert_rejected(
        &decide(
            &app,
            ANN,
            without_post,
            "choose",
            json!({"option": "delete_post"}),
        )
        .await,
        Some("option"),
    );
    let keep = ok(&decide(&app, ANN, without_post, "choose", json!({"option": "keep"})).await);
    assert_eq!(keep["follow_up_id"], Value::Null);

    let c = open(
        &app,
        mia,
        "contradiction",
        options,
        json!({"label": "age", "value": "30"}),
        Some(&post_id),
    )
    .await;
    // complete_issue takes follow-ups only.
    assert_rejected(&done(&app, "op1", c, json!({"result": "done"})).await, None);
    let v = ok(&decide(&app, ANN, c, "choose", json!({"option": "delete_post"})).await);
    let f = uuid_of(&v["follow_up_id"]);
    assert_eq!(
        app.count(&format!(
            "SELECT count(*) AS n FROM decisions d JOIN task_cards t ON t.id = d.task_id \
             WHERE d.id = '{f}' AND d.kind = 'delete_post' AND d.post_id = '{post_id}' \
               AND d.parent_id = '{c}' AND t.target_type = 'post' AND t.target_id = '{post_id}'"
        ))
        .await,
        1
    );
    let day = work_today(&app, "op1").await;
    assert_eq!(day["follow_ups"][0]["account"]["code"], "TW-T001", "{day}");

    // Others' follow-ups are not found.
    assert_error(
        &done(&app, "op2", f, json!({"result": "x"})).await,
        404,
        "not_found",
    );
    assert_error(
        &done(&app, "jp1", f, json!({"result": "x"})).await,
        404,
        "not_found",
    );
    assert_error(
        &done(&app, "other1", f, json!({"result": "x"})).await,
        404,
        "not_found",
    );

    // Limits: result 1-2000, evidence at most 20, each a link or an asset of the workspace.
    assert_invalid(&done(&app, "op1", f, json!({"result": ""})).await, "result");
    assert_invalid(
        &done(&app, "op1", f, json!({"result": "r".repeat(2001)})).await,
        "result",
    );
    assert_invalid(&done(&app, "op1", f, json!({})).await, "result");
    let link = json!({"type": "link", "url": "https://threads.net/p/1", "label": "gone"});
    let links = |n: usize| Value::Array(vec![link.clone(); n]);
    assert_invalid(
        &done(
            &app,
            "op1",
            f,
            json!({"result": "r", "evidence": links(21)}),
        )
        .await,
        "evidence",
    );
    assert_invalid(
        &done(
            &app,
            "op1",
            f,
            json!({"result": "r", "evidence": [{"type": "link", "url": "ftp://x"}]}),
        )
        .await,
        "evidence[0]",
    );
    assert_invalid(
        &done(
            &app,
            "op1",
            f,
            json!({"result": "r", "evidence": [{"type": "photo"}]}),
        )
        .await,
        "evidence[0].type",
    );
    assert_rejected(
        &done(
            &app,
            "op1",
            f,
            json!({"result": "r", "evidence": [{"type": "asset", "asset_id": Uuid::new_v4()}]}),
        )
        .await,
        Some("evidence"),
    );
    let result = "r".repeat(2000);
    let body = json!({"result": result, "evidence": links(20)});
    let v = ok(&done(&app, "op1", f, body.clone()).await);
    assert_eq!(v["result"], "changed");
    assert_eq!(v["decision"]["status"], "handled");
    assert_eq!(v["decision"]["evidence"].as_array().unwrap().len(), 20);
    let task = uuid_of(&v["decision"]["task_id"]);
    assert_eq!(
        app.count(&format!(
            "SELECT count(*) AS n FROM task_cards WHERE id = '{task}' \
             AND status = 'pending_confirmation' AND result = '{result}' \
             AND jsonb_array_length(evidence) = 20"
        ))
        .await,
        1
    );
    // Handled follow-ups leave the day; the same result is unchanged; another is refused.
    assert_eq!(work_today(&app, "op1").await["summary"]["follow_ups"], 0);
    let body_done = body.clone();
    assert_eq!(ok(&done(&app, "op1", f, body).await)["result"], "unchanged");
    assert_rejected(
        &done(&app, "op1", f, json!({"result": "other"})).await,
        Some("result"),
    );
    // A person confirms it: resolved, its card done; reporting again is refused.
    let v = ok(&decide(&app, ANN, f, "resolve", json!({})).await);
    assert_eq!(v["decision"]["status"], "resolved");
    assert_eq!(
        one_text(
            &app,
            &format!("SELECT status AS t FROM task_cards WHERE id = '{task}'")
        )
        .await,
        "done"
    );
    assert_rejected(&done(&app, "op1", f, json!({"result": "r"})).await, None);
    assert_eq!(
        ok(&done(&app, "op1", f, body_done).await)["result"],
        "unchanged"
    );

    // A follow-up a person dismisses is cancelled with its card.
    let (_, bio) = change_bio(&app).await;
    ok(&decide(&app, ANN, bio, "dismiss", json!({})).await);
    assert_eq!(
        one_text(
            &app,
            &format!(
                "SELECT t.status AS t FROM task_cards t JOIN decisions d ON d.task_id = t.id \
                 WHERE d.id = '{bio}'"
            )
        )
        .await,
        "cancelled"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn an_asset_of_the_workspace_is_evidence() {
    let app = spawn_app().await;
    let (_, f) = change_bio(&app).await;
    let asset = Uuid::new_v4();
    let foreign = Uuid::new_v4();
    app.sql(&format!(
        "INSERT INTO media (id, workspace_id, kind, mime_type, bytes, sha256, storage_key, \
           part_bytes, source) \
         SELECT '{asset}', workspace_id, 'image', 'image/png', 1, 'x', 'k', 1, 'upload' \
         FROM personas WHERE name = 'Mia'"
    ))
    .await;
    app.sql(&format!(
        "INSERT INTO media (id, workspace_id, kind, mime_type, bytes, sha256, storage_key, \
           part_bytes, source) \
         SELECT '{foreign}', workspace_id, 'image', 'image/png', 1, 'y', 'k', 1, 'upload' \
         FROM personas WHERE name = 'Yui'"
    ))
    .await;
    assert_rejected(
        &done(
            &app,
            "op1",
            f,
            json!({"result": "r", "evidence": [{"type": "asset", "asset_id": foreign}]}),
        )
        .await,
        Some("evidence"),
    );
    let v = ok(&done(
        &app,
        "op1",
        f,
        json!({"result": "r", "evidence": [{"type": "asset", "asset_id": asset}]}),
    )
    .await);
    assert_eq!(
        v["decision"]["evidence"],
        json!([{"type": "asset", "asset_id": asset}])
    );
}

// ---------------------------------------------------------------------------------------------
// Idempotency

#[tokio::test(flavor = "multi_thread")]
async fn moves_and_reports_replay_with_the_same_key_and_refuse_other_content() {
    let app = spawn_app().await;
    let id = ban(&app, "TW-I001").await;
    let ann = app.personal_key(ANN);
    let path = format!("{USER}/decisions/{id}/choose");
    let body = json!({"option": "keep_closed"});
    let first = app.client.post_idem(&path, &ann, "k-1", &body).await;
    let first_body = ok(&first);
    let again = app.client.post_idem(&path, &ann, "k-1", &body).await;
    assert_eq!(ok(&again), first_body);
    assert_eq!(first_body["result"], "changed");
    let other = app
        .client
        .post_idem(
            &path,
            &ann,
            "k-1",
            &json!({"option": "open_new_generation"}),
        )
        .await;
    assert_error(&other, 422, "idempotency_mismatch");

    let (_, f) = change_bio(&app).await;
    let op1 = app.agent_key("op1");
    let path = format!("{AGENT}/issues/{f}/done");
    let body = json!({"result": "bio changed"});
    let first = ok(&app.client.post_idem(&path, &op1, "d-1", &body).await);
    let again = ok(&app.client.post_idem(&path, &op1, "d-1", &body).await);
    assert_eq!(first, again);
    assert_error(
        &app.client
            .post_idem(&path, &op1, "d-1", &json!({"result": "other"}))
            .await,
        422,
        "idempotency_mismatch",
    );

    let id2 = open(
        &app,
        app.persona_id("Mia"),
        "persona_new",
        json!([]),
        json!({}),
        None,
    )
    .await;
    let path = format!("{AGENT}/issues/{id2}/relay");
    let body = relay_body("resolve", json!({}));
    let first = ok(&app.client.post_idem(&path, &op1, "r-1", &body).await);
    assert_eq!(
        ok(&app.client.post_idem(&path, &op1, "r-1", &body).await),
        first
    );
    assert_error(
        &app.client
            .post_idem(&path, &op1, "r-1", &relay_body("dismiss", json!({})))
            .await,
        422,
        "idempotency_mismatch",
    );
}

// ---------------------------------------------------------------------------------------------
// relay_issue

#[tokio::test(flavor = "multi_thread")]
async fn a_relay_records_the_person_with_the_same_rules() {
    let app = spawn_app().await;
    let id = ban(&app, "TW-I001").await;
    let mut without = relay_body("choose", json!({"option": "keep_closed"}));
    without.as_object_mut().unwrap().remove("on_behalf_of");
    assert_invalid(&relay(&app, "op1", id, without).await, "on_behalf_of");
    let mut without = relay_body("choose", json!({"option": "keep_closed"}));
    without.as_object_mut().unwrap().remove("origin");
    assert_invalid(&relay(&app, "op1", id, without).await, "origin");
    let mut client = relay_body("choose", json!({"option": "keep_closed"}));
    client["on_behalf_of"]["role"] = json!("client");
    assert_rejected(
        &relay(&app, "op1", id, client).await,
        Some("on_behalf_of.role"),
    );
    let mut itself = relay_body("choose", json!({"option": "keep_closed"}));
    itself["on_behalf_of"]["name"] = json!("op1");
    assert_rejected(
        &relay(&app, "op1", id, itself).await,
        Some("on_behalf_of.name"),
    );
    let mut bad_origin = relay_body("choose", json!({"option": "keep_closed"}));
    bad_origin["origin"]["platform"] = json!("slack");
    assert_invalid(&relay(&app, "op1", id, bad_origin).await, "origin.platform");
    assert_rejected(
        &relay(
            &app,
            "op1",
            id,
            relay_body("resolve", json!({"option": "keep_closed"})),
        )
        .await,
        Some("option"),
    );
    assert_rejected(
        &relay(&app, "op1", id, relay_body("resolve", json!({}))).await,
        None,
    );
    // Another agent's persona, another workspace, another organization: not found.
    for agent in ["op2", "jp1", "other1"] {
        assert_error(
            &relay(
                &app,
                agent,
                id,
                relay_body("choose", json!({"option": "keep_closed"})),
            )
            .await,
            404,
            "not_found",
        );
    }

    let mut admin = relay_body(
        "choose",
        json!({"option": "keep_closed", "note": "as said"}),
    );
    admin["on_behalf_of"]["role"] = json!("admin");
    let v = ok(&relay(&app, "op1", id, admin.clone()).await);
    let d = &v["decision"];
    assert_eq!(d["status"], "resolved");
    assert_eq!(d["decided_by"]["type"], "relay");
    assert_eq!(d["decided_by"]["name"], "Ann");
    assert_eq!(d["decided_by"]["role"], "admin");
    assert_eq!(d["decided_by"]["agent"]["name"], "op1");
    assert_eq!(d["decided_by"]["origin"]["platform"], "feishu");
    assert_eq!(d["decided_by"]["effective_at"], "2026-11-25T02:00:00Z");
    assert_eq!(d["notes"][0]["by"], "Ann");
    // Resent, even by a person, the same move is unchanged; another move is refused.
    assert_eq!(
        ok(&relay(&app, "op1", id, admin).await)["result"],
        "unchanged"
    );
    assert_eq!(
        ok(&decide(&app, ANN, id, "choose", json!({"option": "keep_closed"})).await)["result"],
        "unchanged"
    );
    assert_rejected(
        &relay(&app, "op1", id, relay_body("dismiss", json!({}))).await,
        None,
    );

    // The images of a persona through a relay, with approve_some.
    let mia = app.persona_id("Mia");
    let d = open(&app, mia, "persona_images", json!([]), json!({}), None).await;
    let a = image(&app, mia, d, "avatar").await;
    let b = image(&app, mia, d, "other").await;
    let v = ok(&relay(
        &app,
        "op1",
        d,
        relay_body(
            "choose",
            json!({"option": "approve_some", "image_ids": [a], "set_avatar": a}),
        ),
    )
    .await);
    assert!(v["follow_up_id"].is_string(), "{v}");
    assert_eq!(
        one_text(
            &app,
            &format!("SELECT lock AS t FROM persona_images WHERE id = '{b}'")
        )
        .await,
        "refused"
    );
}

// ---------------------------------------------------------------------------------------------
// Follow-ups: who confirms them, and from where

async fn card_of(app: &TestApp, follow_up: Uuid) -> String {
    one_text(
        app,
        &format!(
            "SELECT t.status AS t FROM task_cards t JOIN decisions d ON d.task_id = t.id \
             WHERE d.id = '{follow_up}'"
        ),
    )
    .await
}

#[tokio::test(flavor = "multi_thread")]
async fn the_assignee_never_relays_its_own_confirmation() {
    let app = spawn_app().await;
    let (_, f) = change_bio(&app).await;
    ok(&done(&app, "op1", f, json!({"result": "bio changed"})).await);
    let v = assert_rejected(
        &relay(&app, "op1", f, relay_body("resolve", json!({}))).await,
        None,
    );
    assert!(
        v["message"]
            .as_str()
            .unwrap()
            .contains("assigned to itself"),
        "{v}"
    );
    assert_eq!(card_of(&app, f).await, "pending_confirmation");
    // A person confirms it.
    let v = ok(&decide(&app, ANN, f, "resolve", json!({})).await);
    assert_eq!(v["decision"]["status"], "resolved");
    assert_eq!(card_of(&app, f).await, "done");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_follow_up_is_confirmed_only_once_reported_done_and_its_card_moves_only_from_where_it_may()
 {
    let app = spawn_app().await;
    // Nobody reported it done: resolve is refused, the card waits; dismiss cancels it.
    let (_, f) = change_bio(&app).await;
    let v = assert_rejected(&decide(&app, ANN, f, "resolve", json!({})).await, None);
    assert!(
        v["message"].as_str().unwrap().contains("not reported"),
        "{v}"
    );
    assert_rejected(
        &relay(&app, "op1", f, relay_body("resolve", json!({}))).await,
        None,
    );
    assert_eq!(card_of(&app, f).await, "pending_pickup");
    let v = ok(&decide(&app, ANN, f, "dismiss", json!({})).await);
    assert_eq!(v["decision"]["status"], "dismissed");
    assert_eq!(card_of(&app, f).await, "cancelled");

    // Handled, but its card was sent back to work: not confirmed.
    let (_, g) = change_bio(&app).await;
    ok(&done(&app, "op1", g, json!({"result": "bio changed"})).await);
    app.sql(&format!(
        "UPDATE task_cards SET status = 'in_progress' WHERE decision_id = '{g}'"
    ))
    .await;
    let v = assert_rejected(&decide(&app, ANN, g, "resolve", json!({})).await, None);
    assert!(
        v["message"].as_str().unwrap().contains("in_progress"),
        "{v}"
    );
    assert_eq!(card_of(&app, g).await, "in_progress");
    // A card already finished is not cancelled either.
    app.sql(&format!(
        "UPDATE task_cards SET status = 'done' WHERE decision_id = '{g}'"
    ))
    .await;
    assert_rejected(&decide(&app, ANN, g, "dismiss", json!({})).await, None);
    assert_eq!(card_of(&app, g).await, "done");
}

#[tokio::test(flavor = "multi_thread")]
async fn the_same_result_resent_after_a_person_confirmed_is_unchanged() {
    let app = spawn_app().await;
    let (_, f) = change_bio(&app).await;
    let body = json!({"result": "bio changed"});
    ok(&done(&app, "op1", f, body.clone()).await);
    ok(&decide(&app, ANN, f, "resolve", json!({})).await);
    let v = ok(&done(&app, "op1", f, body).await);
    assert_eq!(v["result"], "unchanged", "{v}");
    assert_eq!(v["decision"]["status"], "resolved");
    assert_rejected(
        &done(&app, "op1", f, json!({"result": "other"})).await,
        None,
    );
}

// ---------------------------------------------------------------------------------------------
// Concurrency

#[tokio::test(flavor = "multi_thread")]
async fn two_facts_of_the_same_label_decided_at_once_leave_one_decided() {
    let app = spawn_app().await;
    let (mia, a, b) = two_fact_drafts(&app, ("pet", "cat", "Lulu"), ("pet", "cat", "Kiki")).await;
    let (ra, rb) = tokio::join!(
        decide(&app, ANN, a, "resolve", json!({})),
        decide(&app, ANN, b, "resolve", json!({}))
    );
    assert_eq!(ok(&ra)["result"], "changed");
    assert_eq!(ok(&rb)["result"], "changed");
    // One decided; the old one and the first decided are replaced.
    let statuses = format!(
        "SELECT string_agg(status, ',' ORDER BY status) AS t FROM persona_facts \
         WHERE persona_id = '{mia}' AND label = 'cat'"
    );
    assert_eq!(one_text(&app, &statuses).await, "decided,replaced,replaced");
}

#[tokio::test(flavor = "multi_thread")]
async fn two_moves_at_once_on_one_decision_decide_it_once() {
    let app = spawn_app().await;
    let id = ban(&app, "TW-I001").await;
    let (x, y) = tokio::join!(
        decide(&app, ANN, id, "choose", json!({"option": "keep_closed"})),
        decide(
            &app,
            ANN,
            id,
            "choose",
            json!({"option": "open_new_generation"})
        )
    );
    let mut statuses = [x.status, y.status];
    statuses.sort();
    assert_eq!(statuses, [200, 422], "{} / {}", x.text(), y.text());
    let winner = if x.status == 200 { &x } else { &y };
    assert_eq!(winner.json()["result"], "changed");

    // The same move twice at once: one changed, one unchanged.
    let id = ban(&app, "TW-K001").await;
    let (x, y) = tokio::join!(
        decide(&app, ANN, id, "choose", json!({"option": "keep_closed"})),
        decide(&app, ANN, id, "choose", json!({"option": "keep_closed"}))
    );
    let mut results = [
        ok(&x)["result"].as_str().unwrap().to_owned(),
        ok(&y)["result"].as_str().unwrap().to_owned(),
    ];
    results.sort();
    assert_eq!(results, ["changed", "unchanged"]);
}

// ---------------------------------------------------------------------------------------------
// Tenant isolation, idempotency and filters of resolve and dismiss

#[tokio::test(flavor = "multi_thread")]
async fn another_organizations_person_neither_resolves_nor_dismisses() {
    let app = spawn_app().await;
    let nova = pending_persona(&app, "Nova").await;
    let id = open(&app, nova, "persona_new", json!([]), json!({}), None).await;
    for action in ["resolve", "dismiss"] {
        assert_error(
            &decide(&app, OLGA, id, action, json!({})).await,
            404,
            "not_found",
        );
    }
    let still_open = format!(
        "SELECT count(*) AS n FROM decisions WHERE id = '{id}' AND status = 'open' \
         AND decided_at IS NULL"
    );
    assert_eq!(app.count(&still_open).await, 1);
}

#[tokio::test(flavor = "multi_thread")]
async fn resolve_and_dismiss_replay_with_the_same_key_and_refuse_other_content() {
    let app = spawn_app().await;
    let ann = app.personal_key(ANN);
    let nova = pending_persona(&app, "Nova").await;
    let nox = pending_persona(&app, "Nox").await;
    let a = open(&app, nova, "persona_new", json!([]), json!({}), None).await;
    let b = open(&app, nox, "persona_new", json!([]), json!({}), None).await;
    for (id, action) in [(a, "resolve"), (b, "dismiss")] {
        let path = format!("{USER}/decisions/{id}/{action}");
        let first = assert_replays(
            &app,
            &ann,
            &path,
            &format!("k-{action}"),
            json!({"note": "first"}),
            json!({"note": "second"}),
        )
        .await;
        assert_eq!(first["result"], "changed");
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn the_list_filters_all_and_dismissed() {
    let app = spawn_app().await;
    let mia = app.persona_id("Mia");
    let open_one = open(&app, mia, "fact_proposal", json!([]), json!({}), None).await;
    let dismissed = open(&app, mia, "fact_proposal", json!([]), json!({}), None).await;
    let resolved = open(&app, mia, "fact_proposal", json!([]), json!({}), None).await;
    ok(&decide(&app, ANN, dismissed, "dismiss", json!({})).await);
    ok(&decide(&app, ANN, resolved, "resolve", json!({})).await);
    let ids = |v: Value| -> Vec<Uuid> {
        v["decisions"]
            .as_array()
            .unwrap()
            .iter()
            .map(|d| uuid_of(&d["id"]))
            .collect()
    };
    assert_eq!(
        ids(ok(&list(&app, ANN, "?status=all").await)),
        vec![resolved, dismissed, open_one]
    );
    assert_eq!(
        ids(ok(&list(&app, ANN, "?status=dismissed").await)),
        vec![dismissed]
    );
    assert_eq!(ids(ok(&list(&app, ANN, "").await)), vec![open_one]);
}
