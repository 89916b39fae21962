//! Task cards through HTTP over the standard tenant: GET/POST /tasks and claim, progress,
//! finish, fail, relay (Agent API); GET/POST /tasks, confirm and reopen (Personal API); the
//! cards in the heartbeat's answer and in work_today; a follow-up's card confirmed resolves its
//! decision.

use fleetdesk_tests::assert::{assert_error, ok};
use fleetdesk_tests::{Response, TestApp, spawn_app};
use serde_json::{Value, json};
use uuid::Uuid;

const AGENT: &str = "/api/agent/v1";
const USER: &str = "/api/user/v1";
const ANN: &str = "ann@acme.test";
const CLI: &str = "cli@brand.test";
const OLGA: &str = "olga@other.test";

// ---------------------------------------------------------------------------------------------
// helpers

#[track_caller]
fn assert_invalid(res: &Response, field: &str) -> Value {
    let v = assert_error(res, 400, "invalid_request");
    assert_eq!(v["field"], field, "{v}");
    v
}

#[track_caller]
fn assert_rejected(res: &Response) -> Value {
    assert_error(res, 422, "rejected")
}

async fn agent_post(app: &TestApp, agent: &str, path: &str, body: Value) -> Response {
    app.client
        .post(&format!("{AGENT}{path}"), &app.agent_key(agent), &body)
        .await
}

async fn person_post(app: &TestApp, who: &str, path: &str, body: Value) -> Response {
    app.client
        .post(&format!("{USER}{path}"), &app.personal_key(who), &body)
        .await
}

async fn agent_list(app: &TestApp, agent: &str, query: &str) -> Response {
    app.client
        .get(&format!("{AGENT}/tasks{query}"), &app.agent_key(agent))
        .await
}

async fn person_list(app: &TestApp, who: &str, query: &str) -> Response {
    app.client
        .get(&format!("{USER}/tasks{query}"), &app.personal_key(who))
        .await
}

fn card(kind: &str, title: &str, target: Value) -> Value {
    json!({"kind": kind, "title": title, "target": target})
}

fn slot(code: &str) -> Value {
    json!({"type": "slot", "code": code})
}

/// op1 opens a card on one of Mia's accounts; returns its id.
async fn open_by_op1(app: &TestApp, kind: &str, code: &str) -> Uuid {
    let v = ok(&agent_post(app, "op1", "/tasks", card(kind, "Do it", slot(code))).await);
    assert_eq!(v["created"], true, "{v}");
    uuid_of(&v["id"])
}

async fn mv(app: &TestApp, agent: &str, id: Uuid, action: &str, body: Value) -> Response {
    agent_post(app, agent, &format!("/tasks/{id}/{action}"), body).await
}

fn uuid_of(v: &Value) -> Uuid {
    v.as_str().expect("an id").parse().expect("a uuid")
}

fn ids(page: &Value) -> Vec<Uuid> {
    page["tasks"]
        .as_array()
        .expect("tasks")
        .iter()
        .map(|t| uuid_of(&t["id"]))
        .collect()
}

fn relay_body(action: &str, note: Option<&str>) -> Value {
    let mut b = json!({
        "action": action,
        "on_behalf_of": {"name": "Ann", "role": "agency"},
        "origin": {"platform": "telegram", "requester": "Ann"},
        "effective_at": "2026-11-25T10:00:00+08:00",
    });
    if let Some(n) = note {
        b["note"] = json!(n);
    }
    b
}

/// A card of op1 claimed and finished: pending_confirmation.
async fn finished_by_op1(app: &TestApp, code: &str) -> Uuid {
    let id = open_by_op1(app, "other", code).await;
    ok(&mv(app, "op1", id, "claim", json!({})).await);
    ok(&mv(app, "op1", id, "finish", json!({"result": "done"})).await);
    id
}

// ---------------------------------------------------------------------------------------------
// The flow

#[tokio::test(flavor = "multi_thread")]
async fn a_person_opens_a_card_the_agent_works_it_and_the_person_confirms() {
    let app = spawn_app().await;
    let made = person_post(
        &app,
        ANN,
        "/tasks",
        json!({"kind": "change_bio", "title": "Update Mia's bio for the new season.",
               "detail": "Mention the autumn collection.",
               "target": {"type": "persona", "code": "TW-T001"}, "agent": "op1",
               "due_at": "2099-01-01 10:00"}),
    )
    .await;
    assert_eq!(made.status, 201, "{}", made.text());
    let v = made.json();
    let id = uuid_of(&v["id"]);
    let t = &v["task"];
    assert_eq!(t["status"], "pending_pickup");
    assert_eq!(t["assignee"]["name"], "op1");
    assert_eq!(t["persona"]["name"], "Mia");
    assert_eq!(
        t["target"],
        json!({"type": "persona", "code": "TW-T001", "id": app.persona_id("Mia")})
    );
    assert_eq!(t["opened_by"], json!({"type": "person", "name": "Ann"}));
    // Market-local due_at is read in the account's zone (Asia/Taipei).
    assert_eq!(t["due_at"], "2099-01-01T02:00:00Z");
    assert_eq!(
        (
            t["stale"].clone(),
            t["overdue"].clone(),
            t["confirm_overdue"].clone()
        ),
        (json!(false), json!(false), json!(false))
    );

    // The agent sees it in its list, its heartbeat and its day.
    assert_eq!(ids(&ok(&agent_list(&app, "op1", "").await)), vec![id]);
    let hb = ok(&agent_post(&app, "op1", "/heartbeat", json!({"run_id": "r1"})).await);
    assert_eq!(hb["tasks"][0]["id"], id.to_string());
    assert_eq!(hb["tasks"][0]["kind"], "change_bio");
    assert_eq!(hb["tasks"][0]["stale"], false);
    let day = ok(&app
        .client
        .get(&format!("{AGENT}/work/today"), &app.agent_key("op1"))
        .await);
    assert_eq!(day["summary"]["tasks"], 1);
    assert_eq!(day["tasks"][0]["id"], id.to_string());
    // op2 has none.
    let hb = ok(&agent_post(&app, "op2", "/heartbeat", json!({"run_id": "r1"})).await);
    assert_eq!(hb["tasks"], json!([]));

    let v = ok(&mv(&app, "op1", id, "claim", json!({})).await);
    assert_eq!(
        (v["result"].as_str(), v["task"]["status"].as_str()),
        (Some("changed"), Some("in_progress"))
    );
    let v = ok(&mv(
        &app,
        "op1",
        id,
        "progress",
        json!({"note": "Drafted the new bio."}),
    )
    .await);
    assert_eq!(v["task"]["notes"][0]["by"], "op1");
    assert_eq!(v["task"]["notes"][0]["text"], "Drafted the new bio.");
    let evidence = json!([{"type": "link", "url": "https://threads.net/@mia", "label": "profile"}]);
    let v = ok(&mv(
        &app,
        "op1",
        id,
        "finish",
        json!({"result": "Bio changed.", "evidence": evidence}),
    )
    .await);
    assert_eq!(v["task"]["status"], "pending_confirmation");
    assert_eq!(v["task"]["evidence"], evidence);
    assert!(v["task"]["finished_at"].is_string());

    let v = ok(&person_post(
        &app,
        ANN,
        &format!("/tasks/{id}/reopen"),
        json!({"note": "Add the hashtag."}),
    )
    .await);
    assert_eq!(v["task"]["status"], "in_progress");
    assert_eq!(
        v["task"]["notes"][1],
        json!({"by": "Ann", "text": "Add the hashtag.", "at": v["task"]["notes"][1]["at"]})
    );
    assert_eq!(v["task"]["finished_at"], Value::Null);
    ok(&mv(
        &app,
        "op1",
        id,
        "finish",
        json!({"result": "Bio changed, hashtag added."}),
    )
    .await);
    let v = ok(&person_post(&app, ANN, &format!("/tasks/{id}/confirm"), json!({})).await);
    assert_eq!(
        (v["result"].as_str(), v["task"]["status"].as_str()),
        (Some("changed"), Some("done"))
    );
    // Confirming again is harmless; a done card can still be reopened.
    let v = ok(&person_post(&app, ANN, &format!("/tasks/{id}/confirm"), json!({})).await);
    assert_eq!(v["result"], "unchanged");
    // Done leaves the default list and the agent's day.
    assert!(ids(&ok(&agent_list(&app, "op1", "").await)).is_empty());
    assert_eq!(
        ids(&ok(&agent_list(&app, "op1", "?status=done").await)),
        vec![id]
    );
    let hb = ok(&agent_post(&app, "op1", "/heartbeat", json!({"run_id": "r2"})).await);
    assert_eq!(hb["tasks"], json!([]));
    let v = ok(&person_post(
        &app,
        ANN,
        &format!("/tasks/{id}/reopen"),
        json!({"note": "Once more."}),
    )
    .await);
    assert_eq!(v["task"]["status"], "in_progress");
}

// ---------------------------------------------------------------------------------------------
// Opening

#[tokio::test(flavor = "multi_thread")]
async fn open_task_fields_at_their_limits_and_one_past() {
    let app = spawn_app().await;
    let open = |body: Value| {
        let app = &app;
        async move { agent_post(app, "op1", "/tasks", body).await }
    };
    let title200 = "t".repeat(200);
    let v = ok(&open(card("other", &title200, slot("TW-T001"))).await);
    assert_eq!(v["task"]["title"], title200);
    assert_invalid(
        &open(card("other", &"t".repeat(201), slot("TW-T001"))).await,
        "title",
    );
    assert_invalid(&open(card("other", "", slot("TW-T001"))).await, "title");
    let mut b = card("write_posts", "Detail", slot("TW-T001"));
    b["detail"] = json!("d".repeat(2000));
    ok(&open(b.clone()).await);
    b["detail"] = json!("d".repeat(2001));
    assert_invalid(&open(b).await, "detail");
    assert_invalid(&open(card("dance", "x", slot("TW-T001"))).await, "kind");
    // Targets: by code for slot and persona, by id for post and issue.
    assert_invalid(
        &open(card("other", "x", json!({"type": "slot"}))).await,
        "target.code",
    );
    assert_invalid(
        &open(card("other", "x", json!({"type": "post"}))).await,
        "target.id",
    );
    assert_invalid(
        &open(card(
            "other",
            "x",
            json!({"type": "post", "id": Uuid::new_v4(), "code": "TW-T001"}),
        ))
        .await,
        "target.code",
    );
    assert_invalid(
        &open(card(
            "other",
            "x",
            json!({"type": "account", "code": "TW-T001"}),
        ))
        .await,
        "target.type",
    );
    // due_at: a time, ISO with zone or market-local.
    let mut b = card("other", "due", slot("TW-I001"));
    b["due_at"] = json!("2026-11-30T10:00:00+08:00");
    assert_eq!(
        ok(&open(b.clone()).await)["task"]["due_at"],
        "2026-11-30T02:00:00Z"
    );
    b["due_at"] = json!("next week");
    assert_invalid(&open(b).await, "due_at");
    // origin.platform is a closed list.
    let mut b = card("pause_account", "origin", slot("TW-T001"));
    b["origin"] = json!({"platform": "slack"});
    assert_invalid(&open(b.clone()).await, "origin.platform");
    b["origin"] = json!({"platform": "feishu", "requester": "r".repeat(81)});
    assert_invalid(&open(b).await, "origin.requester");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_target_must_be_of_the_agents_own_personas() {
    let app = spawn_app().await;
    let open = |agent: &'static str, target: Value| {
        let app = &app;
        async move { agent_post(app, agent, "/tasks", card("other", "x", target)).await }
    };
    // Another agent's account in the workspace: 403; another workspace's or unknown: 404.
    assert_error(&open("op1", slot("TW-T002")).await, 403, "forbidden");
    assert_error(&open("op1", slot("JP-T001")).await, 404, "not_found");
    assert_error(&open("op1", slot("NOPE")).await, 404, "not_found");
    assert_error(
        &open("op1", json!({"type": "persona", "code": "TW-T002"})).await,
        403,
        "forbidden",
    );
    // A legacy code on two platforms needs the platform.
    let v = assert_error(&open("op1", slot("OLD1")).await, 409, "ambiguous_code");
    assert_eq!(v["field"], "target.platform");
    let v = ok(&open(
        "op1",
        json!({"type": "slot", "code": "OLD1", "platform": "tiktok"}),
    )
    .await);
    assert_eq!(v["task"]["target"]["code"], "TW-L002");
    // Posts: op2's post is 403 to op1, an unknown id 404.
    let draft = ok(&agent_post(
        &app,
        "op2",
        "/drafts",
        json!({"code": "TW-T002", "body": "Leo cooks."}),
    )
    .await);
    let post = draft["draft"]["id"].clone();
    assert_error(
        &open("op1", json!({"type": "post", "id": post})).await,
        403,
        "forbidden",
    );
    assert_error(
        &open("jp1", json!({"type": "post", "id": post})).await,
        404,
        "not_found",
    );
    assert_error(
        &open("op1", json!({"type": "post", "id": Uuid::new_v4()})).await,
        404,
        "not_found",
    );
    let v = ok(&open("op2", json!({"type": "post", "id": post})).await);
    assert_eq!(v["task"]["target"], json!({"type": "post", "id": post}));
    // Issues: a decision on op1's persona.
    let mia = app.persona_id("Mia");
    let d = Uuid::new_v4();
    app.sql(&format!(
        "INSERT INTO decisions (id, organization_id, workspace_id, kind, persona_id, title, options) \
         SELECT '{d}', w.organization_id, pe.workspace_id, 'fact_proposal', pe.id, 'A fact', '[]' \
         FROM personas pe JOIN workspaces w ON w.id = pe.workspace_id WHERE pe.id = '{mia}'"
    ))
    .await;
    assert_error(
        &open("op2", json!({"type": "issue", "id": d})).await,
        403,
        "forbidden",
    );
    assert_error(
        &open("other1", json!({"type": "issue", "id": d})).await,
        404,
        "not_found",
    );
    let v = ok(&open("op1", json!({"type": "issue", "id": d})).await);
    assert_eq!(v["task"]["persona"]["name"], "Mia");
    // A retired persona carries no new card, by whichever target it is named.
    app.sql("UPDATE personas SET status = 'retired' WHERE name IN ('Mia', 'Leo')")
        .await;
    for (agent, target) in [
        ("op1", slot("TW-T001")),
        ("op2", json!({"type": "post", "id": post})),
        ("op1", json!({"type": "issue", "id": d})),
    ] {
        assert_error(&open(agent, target).await, 404, "not_found");
    }
    assert_error(
        &person_post(
            &app,
            ANN,
            "/tasks",
            card("other", "x", json!({"type": "post", "id": post})),
        )
        .await,
        404,
        "not_found",
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn the_same_matter_joins_the_open_card_and_opens_anew_once_it_failed() {
    let app = spawn_app().await;
    let first = open_by_op1(&app, "change_avatar", "TW-T001").await;
    let mut again = card("change_avatar", "Change it again", slot("TW-T001"));
    again["origin"] = json!({"platform": "telegram", "requester": "Bo"});
    let res = agent_post(&app, "op1", "/tasks", again.clone()).await;
    assert_eq!(res.status, 200, "{}", res.text());
    let v = res.json();
    assert_eq!(
        (v["created"].clone(), uuid_of(&v["id"])),
        (json!(false), first)
    );
    assert_eq!(v["task"]["also_wanted_by"], json!(["Bo"]));
    // Bo again: listed once; the agent itself is the opener, never listed.
    ok(&agent_post(&app, "op1", "/tasks", again.clone()).await);
    let v = ok(&agent_post(
        &app,
        "op1",
        "/tasks",
        card("change_avatar", "x", slot("TW-T001")),
    )
    .await);
    assert_eq!(v["task"]["also_wanted_by"], json!(["Bo"]));
    // Another kind or another target is another card.
    assert_ne!(open_by_op1(&app, "change_bio", "TW-T001").await, first);
    assert_ne!(open_by_op1(&app, "change_avatar", "TW-I001").await, first);
    // The same persona named through another of its accounts is the same persona target.
    let p1 = ok(&agent_post(
        &app,
        "op1",
        "/tasks",
        card(
            "export_data",
            "x",
            json!({"type": "persona", "code": "TW-T001"}),
        ),
    )
    .await);
    let p2 = ok(&agent_post(
        &app,
        "op1",
        "/tasks",
        card(
            "export_data",
            "x",
            json!({"type": "persona", "code": "TW-I001"}),
        ),
    )
    .await);
    assert_eq!(
        (p2["created"].clone(), p2["id"].clone()),
        (json!(false), p1["id"].clone())
    );
    // Failed: the same matter opens as a new card.
    ok(&mv(&app, "op1", first, "claim", json!({})).await);
    ok(&mv(
        &app,
        "op1",
        first,
        "fail",
        json!({"reason": "No avatar image approved."}),
    )
    .await);
    let v = ok(&agent_post(&app, "op1", "/tasks", again).await);
    assert_eq!(v["created"], true);
    assert_ne!(uuid_of(&v["id"]), first);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_person_opens_for_an_agent_of_the_workspace_or_unassigned() {
    let app = spawn_app().await;
    let open = |who: &'static str, body: Value| {
        let app = &app;
        async move { person_post(app, who, "/tasks", body).await }
    };
    let mut b = card(
        "pause_account",
        "Pause TW-T002 for a week.",
        slot("TW-T002"),
    );
    b["agent"] = json!(app.agent_id("op2").to_string());
    let v = ok(&open(ANN, b.clone()).await);
    assert_eq!(v["task"]["assignee"]["name"], "op2");
    b["agent"] = json!("jp1");
    let v = assert_rejected(&open(ANN, b.clone()).await);
    assert_eq!(v["field"], "agent");
    // An agent whose role does not work cards (bot: community, no tasks:write).
    b["agent"] = json!("bot");
    let v = assert_rejected(&open(ANN, b.clone()).await);
    assert_eq!(v["field"], "agent");
    assert!(
        v["message"].as_str().unwrap().contains("tasks:write"),
        "{v}"
    );
    b["agent"] = json!("a".repeat(81));
    assert_invalid(&open(ANN, b).await, "agent");
    // Unassigned: the persona's agent sees it and may claim it.
    let v = ok(&open(ANN, card("resume_account", "Resume.", slot("TW-T001"))).await);
    assert_eq!(v["task"]["assignee"], Value::Null);
    let id = uuid_of(&v["id"]);
    assert!(ids(&ok(&agent_list(&app, "op1", "").await)).contains(&id));
    assert!(!ids(&ok(&agent_list(&app, "op2", "").await)).contains(&id));
    // Working it before claiming is refused.
    assert_error(
        &mv(&app, "op1", id, "progress", json!({"note": "n"})).await,
        403,
        "forbidden",
    );
    let v = ok(&mv(&app, "op1", id, "claim", json!({})).await);
    assert_eq!(v["task"]["assignee"]["name"], "op1");
    // Another organization's account and clients.
    assert_error(
        &open(OLGA, card("other", "x", slot("TW-T002"))).await,
        404,
        "not_found",
    );
    assert_error(
        &open(CLI, card("other", "x", slot("TW-T001"))).await,
        403,
        "forbidden",
    );
}

// ---------------------------------------------------------------------------------------------
// Moves

#[tokio::test(flavor = "multi_thread")]
async fn only_the_assignee_works_a_card_and_other_agents_do_not_see_it() {
    let app = spawn_app().await;
    // Assigned to op2 on Mia (op1's persona).
    let mut b = card("other", "For op2", slot("TW-T001"));
    b["agent"] = json!("op2");
    let id = uuid_of(&ok(&person_post(&app, ANN, "/tasks", b).await)["id"]);
    assert_error(
        &mv(&app, "op1", id, "claim", json!({})).await,
        403,
        "forbidden",
    );
    ok(&mv(&app, "op2", id, "claim", json!({})).await);
    for (action, body) in [
        ("progress", json!({"note": "n"})),
        ("finish", json!({"result": "r"})),
        ("fail", json!({"reason": "r"})),
    ] {
        assert_error(
            &mv(&app, "op1", id, action, body.clone()).await,
            403,
            "forbidden",
        );
        assert_error(
            &mv(&app, "jp1", id, action, body.clone()).await,
            404,
            "not_found",
        );
        assert_error(
            &mv(&app, "other1", id, action, body).await,
            404,
            "not_found",
        );
    }
    // op1's own card is unseen by op2, jp1 and other1.
    let mine = open_by_op1(&app, "other", "TW-T001").await;
    for agent in ["op2", "jp1", "other1"] {
        assert_error(
            &mv(&app, agent, mine, "claim", json!({})).await,
            404,
            "not_found",
        );
        assert!(
            !ids(&ok(&agent_list(
                &app,
                agent,
                "?status=pending_pickup,in_progress,done"
            )
            .await))
            .contains(&mine)
        );
    }
    assert_error(
        &mv(&app, "op1", Uuid::new_v4(), "claim", json!({})).await,
        404,
        "not_found",
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn moves_at_their_limits_and_from_where_they_may() {
    let app = spawn_app().await;
    let id = open_by_op1(&app, "other", "TW-T001").await;
    // Not claimed yet.
    assert_rejected(&mv(&app, "op1", id, "progress", json!({"note": "n"})).await);
    assert_rejected(&mv(&app, "op1", id, "finish", json!({"result": "r"})).await);
    ok(&mv(&app, "op1", id, "claim", json!({})).await);
    let v = ok(&mv(&app, "op1", id, "claim", json!({})).await);
    assert_eq!(v["result"], "unchanged");
    ok(&mv(
        &app,
        "op1",
        id,
        "progress",
        json!({"note": "n".repeat(1000)}),
    )
    .await);
    assert_invalid(
        &mv(
            &app,
            "op1",
            id,
            "progress",
            json!({"note": "n".repeat(1001)}),
        )
        .await,
        "note",
    );
    assert_invalid(
        &mv(&app, "op1", id, "progress", json!({"note": ""})).await,
        "note",
    );
    assert_invalid(
        &mv(
            &app,
            "op1",
            id,
            "finish",
            json!({"result": "r".repeat(2001)}),
        )
        .await,
        "result",
    );
    let link = json!({"type": "link", "url": "https://example.com/x", "label": "x"});
    let too_many: Vec<Value> = (0..21).map(|_| link.clone()).collect();
    assert_invalid(
        &mv(
            &app,
            "op1",
            id,
            "finish",
            json!({"result": "r", "evidence": too_many}),
        )
        .await,
        "evidence",
    );
    // An asset of no library item of the workspace.
    let v = assert_rejected(
        &mv(
            &app,
            "op1",
            id,
            "finish",
            json!({"result": "r", "evidence": [{"type": "asset", "asset_id": Uuid::new_v4()}]}),
        )
        .await,
    );
    assert_eq!(v["field"], "evidence");
    let twenty: Vec<Value> = (0..20).map(|_| link.clone()).collect();
    let result = "r".repeat(2000);
    let v = ok(&mv(
        &app,
        "op1",
        id,
        "finish",
        json!({"result": result, "evidence": twenty}),
    )
    .await);
    assert_eq!(v["task"]["evidence"].as_array().unwrap().len(), 20);
    // The same result resent is harmless; another is refused.
    let v = ok(&mv(&app, "op1", id, "finish", json!({"result": result})).await);
    assert_eq!(
        (v["result"].as_str(), v["task"]["status"].as_str()),
        (Some("unchanged"), Some("pending_confirmation"))
    );
    let v = assert_rejected(&mv(&app, "op1", id, "finish", json!({"result": "other"})).await);
    assert_eq!(v["field"], "result");
    assert_rejected(&mv(&app, "op1", id, "fail", json!({"reason": "late"})).await);
    assert_rejected(&mv(&app, "op1", id, "claim", json!({})).await);
    // Reopen needs its note; confirm only from pending_confirmation.
    assert_invalid(
        &person_post(&app, ANN, &format!("/tasks/{id}/reopen"), json!({})).await,
        "note",
    );
    assert_invalid(
        &person_post(
            &app,
            ANN,
            &format!("/tasks/{id}/reopen"),
            json!({"note": "n".repeat(1001)}),
        )
        .await,
        "note",
    );
    let other = open_by_op1(&app, "write_posts", "TW-T001").await;
    assert_rejected(&person_post(&app, ANN, &format!("/tasks/{other}/confirm"), json!({})).await);
    assert_rejected(
        &person_post(
            &app,
            ANN,
            &format!("/tasks/{other}/reopen"),
            json!({"note": "n"}),
        )
        .await,
    );
    // Fail: reason 1-1000, the same reason resent harmless, the card ends.
    assert_invalid(
        &mv(
            &app,
            "op1",
            other,
            "fail",
            json!({"reason": "r".repeat(1001)}),
        )
        .await,
        "reason",
    );
    let v = ok(&mv(
        &app,
        "op1",
        other,
        "fail",
        json!({"reason": "r".repeat(1000)}),
    )
    .await);
    assert_eq!(v["task"]["status"], "failed");
    let v = ok(&mv(
        &app,
        "op1",
        other,
        "fail",
        json!({"reason": "r".repeat(1000)}),
    )
    .await);
    assert_eq!(v["result"], "unchanged");
    assert_rejected(&mv(&app, "op1", other, "fail", json!({"reason": "other"})).await);
    assert_rejected(&mv(&app, "op1", other, "claim", json!({})).await);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_library_item_of_the_workspace_is_evidence() {
    let app = spawn_app().await;
    let id = open_by_op1(&app, "other", "TW-T001").await;
    ok(&mv(&app, "op1", id, "claim", json!({})).await);
    let (media, foreign) = (Uuid::new_v4(), Uuid::new_v4());
    for (id, persona) in [(media, "Mia"), (foreign, "Yui")] {
        app.sql(&format!(
            "INSERT INTO media (id, workspace_id, kind, mime_type, bytes, sha256, storage_key, \
               part_bytes, source) \
             SELECT '{id}', workspace_id, 'image', 'image/png', 1, '{id}', 'k', 1, 'upload' \
             FROM personas WHERE name = '{persona}'"
        ))
        .await;
    }
    // Another workspace's library item is no evidence here.
    let v = assert_rejected(
        &mv(
            &app,
            "op1",
            id,
            "finish",
            json!({"result": "r", "evidence": [{"type": "asset", "asset_id": foreign}]}),
        )
        .await,
    );
    assert_eq!(v["field"], "evidence");
    let v = ok(&mv(
        &app,
        "op1",
        id,
        "finish",
        json!({"result": "r", "evidence": [{"type": "asset", "asset_id": media}]}),
    )
    .await);
    assert_eq!(
        v["task"]["evidence"],
        json!([{"type": "asset", "asset_id": media}])
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn two_claims_at_once_claim_once() {
    let app = spawn_app().await;
    let v = ok(&person_post(&app, ANN, "/tasks", card("other", "Race", slot("TW-T001"))).await);
    let id = uuid_of(&v["id"]);
    let (a, b) = tokio::join!(
        mv(&app, "op1", id, "claim", json!({})),
        mv(&app, "op1", id, "claim", json!({}))
    );
    let mut results = vec![ok(&a)["result"].clone(), ok(&b)["result"].clone()];
    results.sort_by_key(|r| r.to_string());
    assert_eq!(results, vec![json!("changed"), json!("unchanged")]);
    assert_eq!(
        app.count(&format!(
            "SELECT count(*) AS n FROM task_cards WHERE id = '{id}' AND status = 'in_progress'"
        ))
        .await,
        1
    );
}

// ---------------------------------------------------------------------------------------------
// Relay

#[tokio::test(flavor = "multi_thread")]
async fn a_relay_confirms_or_sends_back_for_a_person_never_the_assignees_own() {
    let app = spawn_app().await;
    let id = finished_by_op1(&app, "TW-T001").await;
    let path = format!("/tasks/{id}/relay");
    let v = assert_rejected(&agent_post(&app, "op1", &path, relay_body("confirm", None)).await);
    assert!(
        v["message"]
            .as_str()
            .unwrap()
            .contains("assigned to itself"),
        "{v}"
    );
    // Required fields and the person's role.
    let mut b = relay_body("confirm", None);
    b.as_object_mut().unwrap().remove("on_behalf_of");
    assert_invalid(&agent_post(&app, "op2", &path, b).await, "on_behalf_of");
    let mut b = relay_body("confirm", None);
    b.as_object_mut().unwrap().remove("origin");
    assert_invalid(&agent_post(&app, "op2", &path, b).await, "origin");
    let mut b = relay_body("confirm", None);
    b["on_behalf_of"]["role"] = json!("client");
    assert_eq!(
        assert_rejected(&agent_post(&app, "op2", &path, b).await)["field"],
        "on_behalf_of.role"
    );
    assert_invalid(
        &agent_post(&app, "op2", &path, relay_body("send_back", None)).await,
        "note",
    );
    assert_invalid(
        &agent_post(&app, "op2", &path, relay_body("approve", None)).await,
        "action",
    );
    // Another workspace's agent does not see it.
    assert_error(
        &agent_post(&app, "jp1", &path, relay_body("confirm", None)).await,
        404,
        "not_found",
    );
    // The assignee may relay a send-back.
    let v = ok(&agent_post(
        &app,
        "op1",
        &path,
        relay_body("send_back", Some("Ann wants a photo.")),
    )
    .await);
    assert_eq!(v["task"]["status"], "in_progress");
    let note = &v["task"]["notes"][0];
    assert_eq!(
        (note["by"].as_str(), note["text"].as_str()),
        (Some("Ann"), Some("Ann wants a photo."))
    );
    assert_eq!(note["via"]["agent"]["name"], "op1");
    assert_eq!(note["via"]["origin"]["platform"], "telegram");
    ok(&mv(&app, "op1", id, "finish", json!({"result": "with photo"})).await);
    // Another agent of the workspace reaches no card of op1 on op1's persona.
    for action in ["confirm", "send_back"] {
        assert_error(
            &agent_post(&app, "op2", &path, relay_body(action, Some("n"))).await,
            404,
            "not_found",
        );
    }
    // The persona's agent relays the confirmation of a card assigned to another agent.
    let mut b = card("other", "Shoot the photo", slot("TW-T001"));
    b["agent"] = json!("op2");
    let other = uuid_of(&ok(&person_post(&app, ANN, "/tasks", b).await)["id"]);
    ok(&mv(&app, "op2", other, "claim", json!({})).await);
    ok(&mv(&app, "op2", other, "finish", json!({"result": "shot"})).await);
    let path = format!("/tasks/{other}/relay");
    assert_rejected(&agent_post(&app, "op2", &path, relay_body("confirm", None)).await);
    assert_error(
        &agent_post(&app, "jp1", &path, relay_body("confirm", None)).await,
        404,
        "not_found",
    );
    let v = ok(&agent_post(&app, "op1", &path, relay_body("confirm", None)).await);
    assert_eq!(v["task"]["status"], "done");
    let via = &v["task"]["notes"][0]["via"];
    assert_eq!(via["agent"]["name"], "op1");
    assert_eq!(
        (&via["type"], &via["name"], &via["role"]),
        (&json!("relay"), &json!("Ann"), &json!("agency")),
        "{via}"
    );
    let v = ok(&agent_post(&app, "op1", &path, relay_body("confirm", None)).await);
    assert_eq!(v["result"], "unchanged");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_relayed_confirm_records_the_person_as_relay_issue_does() {
    let app = spawn_app().await;
    // relay_issue's decided_by.
    let mia = app.persona_id("Mia");
    let d = Uuid::new_v4();
    app.sql(&format!(
        "INSERT INTO decisions (id, organization_id, workspace_id, kind, persona_id, title, \
           question, options, detail, opened_by_agent) \
         SELECT '{d}', w.organization_id, pe.workspace_id, 'contradiction', pe.id, 'Age', \
           'What should change?', '[\"change_bio\", \"delete_post\", \"keep\"]'::jsonb, \
           '{{\"label\": \"age\", \"value\": \"30\"}}'::jsonb, pe.agent_id \
         FROM personas pe JOIN workspaces w ON w.id = pe.workspace_id WHERE pe.id = '{mia}'"
    ))
    .await;
    ok(&agent_post(
        &app,
        "op1",
        &format!("/issues/{d}/relay"),
        relay_body("dismiss", None),
    )
    .await);
    let shape = "decided_by ?& array['type', 'name', 'role', 'agent', 'origin', 'effective_at'] \
                 AND NOT decided_by ? 'on_behalf_of' AND decided_by->>'type' = 'relay'";
    assert_eq!(
        app.count(&format!(
            "SELECT count(*) AS n FROM decisions WHERE id = '{d}' AND {shape}"
        ))
        .await,
        1
    );
    // A follow-up's card confirmed through a relay stores the same shape on its decision.
    let (f, card_id) = change_bio(&app).await;
    ok(&mv(&app, "op1", card_id, "claim", json!({})).await);
    ok(&mv(
        &app,
        "op1",
        card_id,
        "finish",
        json!({"result": "bio changed"}),
    )
    .await);
    // The card handed to op2 (as a person would reassign it), so op1 may relay its confirmation.
    let op2 = app.agent_id("op2");
    app.sql(&format!(
        "UPDATE task_cards SET assignee_agent = '{op2}' WHERE id = '{card_id}'"
    ))
    .await;
    let v = ok(&agent_post(
        &app,
        "op1",
        &format!("/tasks/{card_id}/relay"),
        relay_body("confirm", None),
    )
    .await);
    assert_eq!(v["task"]["status"], "done");
    assert_eq!(
        app.count(&format!(
            "SELECT count(*) AS n FROM decisions WHERE id = '{f}' AND {shape}"
        ))
        .await,
        1
    );
}

// ---------------------------------------------------------------------------------------------
// Idempotency

/// The same Idempotency-Key replays the first answer and refuses other content.
async fn assert_replays(app: &TestApp, key: &str, path: &str, body: Value, other: Value) -> Value {
    let idem = Uuid::new_v4().to_string();
    let first = app.client.post_idem(path, key, &idem, &body).await;
    let first_body = ok(&first);
    let again = app.client.post_idem(path, key, &idem, &body).await;
    assert_eq!(again.status, first.status);
    assert_eq!(again.header("idempotent-replayed"), Some("true"));
    assert_eq!(ok(&again), first_body);
    assert_error(
        &app.client.post_idem(path, key, &idem, &other).await,
        422,
        "idempotency_mismatch",
    );
    first_body
}

#[tokio::test(flavor = "multi_thread")]
async fn open_report_and_relay_replay_with_the_same_key() {
    let app = spawn_app().await;
    let op1 = app.agent_key("op1");
    let v = assert_replays(
        &app,
        &op1,
        &format!("{AGENT}/tasks"),
        card("other", "Idempotent", slot("TW-T001")),
        card("other", "Other", slot("TW-T001")),
    )
    .await;
    assert_eq!(
        app.count("SELECT count(*) AS n FROM task_cards WHERE title = 'Idempotent'")
            .await,
        1
    );
    let id = uuid_of(&v["id"]);
    ok(&mv(&app, "op1", id, "claim", json!({})).await);
    let v = assert_replays(
        &app,
        &op1,
        &format!("{AGENT}/tasks/{id}/progress"),
        json!({"note": "half"}),
        json!({"note": "more"}),
    )
    .await;
    assert_eq!(v["task"]["notes"].as_array().unwrap().len(), 1);
    ok(&mv(&app, "op1", id, "finish", json!({"result": "r"})).await);
    assert_replays(
        &app,
        &op1,
        &format!("{AGENT}/tasks/{id}/relay"),
        relay_body("send_back", Some("again")),
        relay_body("send_back", Some("other")),
    )
    .await;
    ok(&mv(&app, "op1", id, "finish", json!({"result": "r2"})).await);
    let ann = app.personal_key(ANN);
    assert_replays(
        &app,
        &ann,
        &format!("{USER}/tasks/{id}/reopen"),
        json!({"note": "n"}),
        json!({"note": "m"}),
    )
    .await;
    ok(&mv(&app, "op1", id, "finish", json!({"result": "r3"})).await);
    assert_replays(
        &app,
        &ann,
        &format!("{USER}/tasks/{id}/confirm"),
        json!({}),
        json!({"note": "n"}),
    )
    .await;
    assert_replays(
        &app,
        &ann,
        &format!("{USER}/tasks"),
        card("other", "Person idem", slot("TW-T001")),
        card("other", "Person other", slot("TW-T001")),
    )
    .await;
}

// ---------------------------------------------------------------------------------------------
// Lists and tenants

#[tokio::test(flavor = "multi_thread")]
async fn lists_filter_page_and_keep_organizations_apart() {
    let app = spawn_app().await;
    let a = open_by_op1(&app, "other", "TW-T001").await;
    let b = open_by_op1(&app, "write_posts", "TW-T001").await;
    let c = open_by_op1(&app, "other", "TW-I001").await;
    ok(&mv(&app, "op1", c, "claim", json!({})).await);
    let zoe = ok(&agent_post(
        &app,
        "other1",
        "/tasks",
        card("other", "Zoe's", slot("TW-T001")),
    )
    .await);
    let zoe = uuid_of(&zoe["id"]);

    assert_eq!(ids(&ok(&agent_list(&app, "op1", "").await)), vec![c, b, a]);
    assert_eq!(
        ids(&ok(&agent_list(&app, "op1", "?status=in_progress").await)),
        vec![c]
    );
    assert_eq!(
        ids(&ok(&agent_list(
            &app,
            "op1",
            "?status=pending_pickup,in_progress&kind=other"
        )
        .await)),
        vec![c, a]
    );
    assert_invalid(&agent_list(&app, "op1", "?status=open").await, "status");
    assert_invalid(&agent_list(&app, "op1", "?limit=0").await, "limit");
    assert_invalid(&agent_list(&app, "op1", "?limit=201").await, "limit");
    ok(&agent_list(&app, "op1", "?limit=200").await);
    let p1 = ok(&agent_list(&app, "op1", "?limit=2").await);
    assert_eq!(ids(&p1), vec![c, b]);
    let cursor = p1["next_cursor"].as_str().expect("a cursor").to_owned();
    let p2 = ok(&agent_list(&app, "op1", &format!("?limit=2&cursor={cursor}")).await);
    assert_eq!(
        (ids(&p2), p2["next_cursor"].clone()),
        (vec![a], Value::Null)
    );

    // People: only their organization's cards; clients are refused.
    let ann = ids(&ok(&person_list(&app, ANN, "").await));
    assert_eq!(ann, vec![c, b, a]);
    assert_eq!(ids(&ok(&person_list(&app, OLGA, "").await)), vec![zoe]);
    assert_error(&person_list(&app, CLI, "").await, 403, "forbidden");
    for action in ["confirm", "reopen"] {
        assert_error(
            &person_post(
                &app,
                CLI,
                &format!("/tasks/{a}/{action}"),
                json!({"note": "n"}),
            )
            .await,
            403,
            "forbidden",
        );
        assert_error(
            &person_post(
                &app,
                OLGA,
                &format!("/tasks/{a}/{action}"),
                json!({"note": "n"}),
            )
            .await,
            404,
            "not_found",
        );
    }
    // A platform admin outside any organization sees every organization's.
    let root = ids(&ok(&person_list(&app, "root@example.com", "").await));
    assert!(root.contains(&a) && root.contains(&zoe), "{root:?}");
}

// ---------------------------------------------------------------------------------------------
// Flags

async fn set(app: &TestApp, id: Uuid, assignment: &str) {
    app.sql(&format!(
        "UPDATE task_cards SET {assignment} WHERE id = '{id}'"
    ))
    .await;
}

async fn flags_of(app: &TestApp, id: Uuid) -> (bool, bool, bool) {
    let page = ok(&agent_list(
        app,
        "op1",
        "?status=pending_pickup,in_progress,pending_confirmation,done",
    )
    .await);
    let t = page["tasks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["id"] == id.to_string())
        .cloned()
        .expect("the card is listed");
    let f = |k: &str| t[k].as_bool().expect("a flag");
    (f("stale"), f("overdue"), f("confirm_overdue"))
}

#[tokio::test(flavor = "multi_thread")]
async fn flags_at_their_limits() {
    let app = spawn_app().await;
    let id = open_by_op1(&app, "other", "TW-T001").await;
    ok(&mv(&app, "op1", id, "claim", json!({})).await);
    set(
        &app,
        id,
        "last_progress_at = now() - interval '119 minutes'",
    )
    .await;
    assert_eq!(flags_of(&app, id).await, (false, false, false));
    set(
        &app,
        id,
        "last_progress_at = now() - interval '121 minutes'",
    )
    .await;
    assert_eq!(flags_of(&app, id).await, (true, false, false));
    // The heartbeat and the day carry the flags.
    let hb = ok(&agent_post(&app, "op1", "/heartbeat", json!({"run_id": "f"})).await);
    assert_eq!(hb["tasks"][0]["stale"], true);
    // Progress restarts the clock.
    ok(&mv(&app, "op1", id, "progress", json!({"note": "still on it"})).await);
    assert_eq!(flags_of(&app, id).await, (false, false, false));
    set(&app, id, "due_at = now() + interval '1 minute'").await;
    assert!(!flags_of(&app, id).await.1);
    set(&app, id, "due_at = now() - interval '1 minute'").await;
    assert!(flags_of(&app, id).await.1);
    let day = ok(&app
        .client
        .get(&format!("{AGENT}/work/today"), &app.agent_key("op1"))
        .await);
    assert_eq!(day["tasks"][0]["overdue"], true);
    ok(&mv(&app, "op1", id, "finish", json!({"result": "r"})).await);
    set(
        &app,
        id,
        "confirmation_since = now() - interval '23 hours 59 minutes'",
    )
    .await;
    assert_eq!(flags_of(&app, id).await, (false, true, false));
    set(
        &app,
        id,
        "confirmation_since = now() - interval '24 hours 1 minute'",
    )
    .await;
    assert_eq!(flags_of(&app, id).await, (false, true, true));
    let v = ok(&person_post(&app, ANN, &format!("/tasks/{id}/confirm"), json!({})).await);
    assert_eq!(
        (
            v["task"]["overdue"].clone(),
            v["task"]["confirm_overdue"].clone()
        ),
        (json!(false), json!(false))
    );
}

// ---------------------------------------------------------------------------------------------
// Follow-ups

/// A change_bio follow-up of Mia (op1), opened by Ann choosing on a contradiction: the
/// follow-up's id and its card's id.
async fn change_bio(app: &TestApp) -> (Uuid, Uuid) {
    let mia = app.persona_id("Mia");
    let c = Uuid::new_v4();
    app.sql(&format!(
        "INSERT INTO decisions (id, organization_id, workspace_id, kind, persona_id, title, \
           question, options, detail, opened_by_agent) \
         SELECT '{c}', w.organization_id, pe.workspace_id, 'contradiction', pe.id, 'Age', \
           'What should change?', '[\"change_bio\", \"delete_post\", \"keep\"]'::jsonb, \
           '{{\"label\": \"age\", \"value\": \"30\"}}'::jsonb, pe.agent_id \
         FROM personas pe JOIN workspaces w ON w.id = pe.workspace_id WHERE pe.id = '{mia}'"
    ))
    .await;
    let v = ok(&person_post(
        app,
        ANN,
        &format!("/decisions/{c}/choose"),
        json!({"option": "change_bio"}),
    )
    .await);
    let f = uuid_of(&v["follow_up_id"]);
    let list = ok(&agent_list(app, "op1", "").await);
    let card = list["tasks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["decision_id"] == f.to_string())
        .expect("the follow-up's card")
        .clone();
    (f, uuid_of(&card["id"]))
}

async fn decision_status(app: &TestApp, id: Uuid) -> Value {
    let v = ok(&app
        .client
        .get(
            &format!("{USER}/decisions?status=all&kind=change_bio"),
            &app.personal_key(ANN),
        )
        .await);
    v["decisions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|d| d["id"] == id.to_string())
        .map(|d| d["status"].clone())
        .expect("the decision")
}

#[tokio::test(flavor = "multi_thread")]
async fn confirming_a_follow_ups_card_resolves_its_decision() {
    let app = spawn_app().await;
    let (f, card) = change_bio(&app).await;
    ok(&mv(&app, "op1", card, "claim", json!({})).await);
    ok(&mv(
        &app,
        "op1",
        card,
        "finish",
        json!({"result": "bio changed"}),
    )
    .await);
    assert_eq!(decision_status(&app, f).await, "handled");
    let v = ok(&person_post(
        &app,
        ANN,
        &format!("/tasks/{card}/reopen"),
        json!({"note": "Not yet."}),
    )
    .await);
    assert_eq!(v["task"]["status"], "in_progress");
    assert_eq!(decision_status(&app, f).await, "open");
    ok(&mv(
        &app,
        "op1",
        card,
        "finish",
        json!({"result": "bio changed again"}),
    )
    .await);
    let v = ok(&person_post(&app, ANN, &format!("/tasks/{card}/confirm"), json!({})).await);
    assert_eq!(v["task"]["status"], "done");
    assert_eq!(decision_status(&app, f).await, "resolved");
    // The follow-up no longer waits in the agent's day.
    let day = ok(&app
        .client
        .get(&format!("{AGENT}/work/today"), &app.agent_key("op1"))
        .await);
    assert_eq!(day["follow_ups"], json!([]));
}

#[tokio::test(flavor = "multi_thread")]
async fn a_follow_up_completed_by_complete_issue_is_sent_back_by_relay_and_confirmed_by_a_person() {
    let app = spawn_app().await;
    let (f, card) = change_bio(&app).await;
    let done = |result: &'static str| {
        let app = &app;
        async move {
            ok(&agent_post(
                app,
                "op1",
                &format!("/issues/{f}/done"),
                json!({"result": result}),
            )
            .await);
        }
    };
    done("done").await;
    let path = format!("/tasks/{card}/relay");
    // Its own agent never confirms it; another agent does not reach it.
    assert_rejected(&agent_post(&app, "op1", &path, relay_body("confirm", None)).await);
    assert_error(
        &agent_post(&app, "op2", &path, relay_body("confirm", None)).await,
        404,
        "not_found",
    );
    // The persona's agent relays the person's send-back: the decision waits again.
    let v = ok(&agent_post(
        &app,
        "op1",
        &path,
        relay_body("send_back", Some("Ann wants the age too.")),
    )
    .await);
    assert_eq!(v["task"]["status"], "in_progress");
    assert_eq!(decision_status(&app, f).await, "open");
    done("done with the age").await;
    assert_eq!(decision_status(&app, f).await, "handled");
    let v = ok(&person_post(&app, ANN, &format!("/tasks/{card}/confirm"), json!({})).await);
    assert_eq!(v["task"]["status"], "done");
    assert_eq!(decision_status(&app, f).await, "resolved");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_follow_ups_card_is_not_failed_and_complete_issue_revives_no_ended_card() {
    let app = spawn_app().await;
    let (f, card) = change_bio(&app).await;
    ok(&mv(&app, "op1", card, "claim", json!({})).await);
    let v = assert_rejected(&mv(&app, "op1", card, "fail", json!({"reason": "blocked"})).await);
    let message = v["message"].as_str().unwrap();
    assert!(
        message.contains("complete_issue") && message.contains("dismiss"),
        "{v}"
    );
    assert_eq!(decision_status(&app, f).await, "open");
    // A card that ended another way (here cancelled) stays as it ended.
    app.sql(&format!(
        "UPDATE task_cards SET status = 'cancelled' WHERE id = '{card}'"
    ))
    .await;
    ok(&agent_post(
        &app,
        "op1",
        &format!("/issues/{f}/done"),
        json!({"result": "done"}),
    )
    .await);
    assert_eq!(
        app.count(&format!(
            "SELECT count(*) AS n FROM task_cards WHERE id = '{card}' AND status = 'cancelled' \
               AND result IS NULL"
        ))
        .await,
        1
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn finishing_a_follow_ups_card_while_a_person_dismisses_its_decision_never_fails() {
    let app = spawn_app().await;
    for round in 0..4 {
        let (f, card) = change_bio(&app).await;
        ok(&mv(&app, "op1", card, "claim", json!({})).await);
        let path = format!("/decisions/{f}/dismiss");
        let (finished, dismissed) = tokio::join!(
            mv(
                &app,
                "op1",
                card,
                "finish",
                json!({"result": format!("round {round}")})
            ),
            person_post(&app, ANN, &path, json!({"note": "Not needed."}))
        );
        for res in [&finished, &dismissed] {
            assert!(
                matches!(res.status, 200 | 409 | 422),
                "round {round}: {} {}",
                res.status,
                res.text()
            );
        }
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_code_in_several_organizations_is_refused_to_a_platform_admin_outside_any() {
    let app = spawn_app().await;
    let v = assert_error(
        &person_post(
            &app,
            "root@example.com",
            "/tasks",
            card("other", "Which one", slot("TW-T001")),
        )
        .await,
        409,
        "ambiguous_code",
    );
    assert_eq!(v["field"], "target.code", "{v}");
    assert!(
        v["message"]
            .as_str()
            .unwrap()
            .contains("several organizations"),
        "{v}"
    );
    // A code of one organization only is found.
    let res = person_post(
        &app,
        "root@example.com",
        "/tasks",
        card("other", "Leo's", slot("TW-T002")),
    )
    .await;
    assert_eq!(res.status, 201, "{}", res.text());
    // A member of an organization is not asked: its own account is meant.
    let res = person_post(
        &app,
        OLGA,
        "/tasks",
        card("other", "Zoe's", slot("TW-T001")),
    )
    .await;
    assert_eq!(res.status, 201, "{}", res.text());
}

#[tokio::test(flavor = "multi_thread")]
async fn a_request_joining_an_open_card_still_has_its_due_at_read() {
    let app = spawn_app().await;
    // A market zone with a daylight-saving gap: a well-formed local time that never happens.
    app.sql("UPDATE account_slots SET timezone = 'America/New_York' WHERE code = 'TW-T001'")
        .await;
    open_by_op1(&app, "other", "TW-T001").await;
    let mut b = card("other", "Do it", slot("TW-T001"));
    b["due_at"] = json!("2026-03-08 02:30");
    assert_invalid(&agent_post(&app, "op1", "/tasks", b).await, "due_at");
}

#[tokio::test(flavor = "multi_thread")]
async fn two_requests_for_the_same_matter_at_once_make_one_card() {
    let app = spawn_app().await;
    let body = card("change_avatar", "Same matter", slot("TW-T001"));
    let (a, b) = tokio::join!(
        agent_post(&app, "op1", "/tasks", body.clone()),
        agent_post(&app, "op1", "/tasks", body.clone())
    );
    let mut statuses = vec![a.status, b.status];
    statuses.sort();
    assert_eq!(statuses, vec![200, 201], "{} {}", a.text(), b.text());
    assert_eq!(ok(&a)["id"], ok(&b)["id"]);
    assert_eq!(
        app.count("SELECT count(*) AS n FROM task_cards WHERE title = 'Same matter'")
            .await,
        1
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn free_text_on_cards_carries_no_key() {
    let app = spawn_app().await;
    let key = app.agent_key("op2");
    let mut b = card("other", "Rotate the key", slot("TW-T001"));
    b["detail"] = json!(format!("The old key was {key}, replace it."));
    let v = ok(&agent_post(&app, "op1", "/tasks", b).await);
    let id = uuid_of(&v["id"]);
    ok(&mv(&app, "op1", id, "claim", json!({})).await);
    let v = ok(&mv(
        &app,
        "op1",
        id,
        "progress",
        json!({"note": format!("used {key}")}),
    )
    .await);
    let stored = app
        .count(&format!(
            "SELECT count(*) AS n FROM task_cards WHERE detail LIKE '%{key}%' \
             OR notes::text LIKE '%{key}%'"
        ))
        .await;
    assert_eq!(stored, 0);
    assert!(!v.to_string().contains(&key), "{v}");
}

/// A list carries each card's latest 3 notes (oldest first) and `notes_count`: a card of 3
/// notes all of them, one of 4 its last 3. The card read alone (GET /tasks/{id}, both APIs)
/// carries every note; a card out of the caller's reach is 404.
#[tokio::test(flavor = "multi_thread")]
async fn a_list_carries_the_latest_three_notes_and_the_card_read_alone_every_note() {
    let app = spawn_app().await;
    let three = open_by_op1(&app, "other", "TW-T001").await;
    let four = open_by_op1(&app, "export_data", "TW-T001").await;
    for (id, n) in [(three, 3), (four, 4)] {
        ok(&mv(&app, "op1", id, "claim", json!({})).await);
        for i in 1..=n {
            let note = json!({"note": format!("note {i}")});
            ok(&mv(&app, "op1", id, "progress", note).await);
        }
    }
    let texts = |card: &Value| -> Vec<String> {
        card["notes"]
            .as_array()
            .expect("notes")
            .iter()
            .map(|n| n["text"].as_str().expect("text").to_owned())
            .collect()
    };
    let listed = |page: &Value, id: Uuid| -> Value {
        page["tasks"]
            .as_array()
            .expect("tasks")
            .iter()
            .find(|c| uuid_of(&c["id"]) == id)
            .cloned()
            .expect("listed")
    };
    for page in [
        ok(&agent_list(&app, "op1", "").await),
        ok(&person_list(&app, ANN, "").await),
    ] {
        let card = listed(&page, three);
        assert_eq!(texts(&card), ["note 1", "note 2", "note 3"]);
        assert_eq!(card["notes_count"], 3);
        let card = listed(&page, four);
        assert_eq!(texts(&card), ["note 2", "note 3", "note 4"]);
        assert_eq!(card["notes_count"], 4);
    }
    let every = ["note 1", "note 2", "note 3", "note 4"];
    let agent_read = |agent: &str| {
        let (app, key) = (&app, app.agent_key(agent));
        async move { app.client.get(&format!("{AGENT}/tasks/{four}"), &key).await }
    };
    let person_read = |who: &str, id: Uuid| {
        let (app, key) = (&app, app.personal_key(who));
        async move { app.client.get(&format!("{USER}/tasks/{id}"), &key).await }
    };
    for card in [
        ok(&agent_read("op1").await),
        ok(&person_read(ANN, four).await),
    ] {
        assert_eq!(texts(&card), every);
        assert_eq!(card["notes_count"], 4);
        assert_eq!(card["status"], "in_progress");
    }
    // Out of reach: another agent's card, another organization's, an unknown id; a client
    // reads no cards.
    assert_error(&agent_read("op2").await, 404, "not_found");
    assert_error(&person_read(OLGA, four).await, 404, "not_found");
    assert_error(&person_read(ANN, Uuid::new_v4()).await, 404, "not_found");
    assert_error(&person_read(CLI, four).await, 403, "forbidden");
}
