//! Ad picks through HTTP over the standard tenant: people make and cancel them from research
//! cards (POST /api/user/v1/ad-picks, /ad-picks/{pick}/cancel), the agent of the account reads
//! them (GET /api/agent/v1/ad-picks, /ad-picks/{pick}) and drafts a sponsored post with one
//! (`pick` of POST /drafts). op1 has TW-T001 and TW-I001 (Mia), op2 TW-T002 (Leo), all in Acme /
//! Taiwan; jp1 works in Acme / Japan, other1 in Other Agency. The sandbox provider finds every
//! item but those ending in 404 (not found) or 500 (failed).

use fleetdesk_tests::assert::{assert_error, assert_error_in, ok};
use fleetdesk_tests::{Response, TestApp, spawn_app};
use serde_json::{Value, json};

const AGENT: &str = "/api/agent/v1";
const USER: &str = "/api/user/v1";

async fn make(app: &TestApp, key: &str, body: &Value) -> Response {
    app.client
        .post(&format!("{USER}/ad-picks"), key, body)
        .await
}

async fn cancel(app: &TestApp, key: &str, pick: &str) -> Response {
    app.client
        .post(&format!("{USER}/ad-picks/{pick}/cancel"), key, &json!({}))
        .await
}

async fn get(app: &TestApp, key: &str, pick: &str) -> Response {
    app.client
        .get(&format!("{AGENT}/ad-picks/{pick}"), key)
        .await
}

async fn list(app: &TestApp, key: &str, query: &str) -> Vec<String> {
    let res = app
        .client
        .get(&format!("{AGENT}/ad-picks{query}"), key)
        .await;
    ok(&res)["picks"]
        .as_array()
        .expect("picks")
        .iter()
        .map(|p| p["pick"].as_str().expect("pick").to_owned())
        .collect()
}

async fn draft(app: &TestApp, key: &str, body: &Value) -> Response {
    app.client.post(&format!("{AGENT}/drafts"), key, body).await
}

/// A pick Ann makes of `item` for `code`: its `SP-<n>`.
async fn picked(app: &TestApp, research: &str, item: &str, code: &str) -> String {
    let res = make(
        app,
        &app.personal_key("ann@acme.test"),
        &json!({"research_id": research, "item": item, "code": code, "note": "lead with the price"}),
    )
    .await;
    assert_eq!(res.status, 201, "{}", res.text());
    res.json()["pick"].as_str().expect("pick").to_owned()
}

async fn sponsored(app: &TestApp, post_id: &str) -> bool {
    app.count(&format!(
        "SELECT count(*) AS n FROM posts WHERE id = '{post_id}' AND sponsored"
    ))
    .await
        == 1
}

#[tokio::test(flavor = "multi_thread")]
async fn a_person_picks_a_card_and_the_agent_drafts_a_sponsored_post_with_it() {
    let app = spawn_app().await;
    let op1 = app.agent_key("op1");
    let ann = app.personal_key("ann@acme.test");
    let research = app
        .finished_research("op1", &["123456", "https://shopee.tw/product/1/2"])
        .await;

    let res = make(
        &app,
        &ann,
        &json!({"research_id": research, "item": "123456", "code": " tw-t001 ",
                "note": "  lead with the price  "}),
    )
    .await;
    assert_eq!(res.status, 201, "{}", res.text());
    let made = res.json();
    let first = made["number"].as_i64().expect("number");
    assert_eq!(made["pick"], format!("SP-{first}"), "{made}");
    assert_eq!(made["status"], "open", "{made}");
    assert_eq!(made["code"], "TW-T001", "{made}");
    assert_eq!(made["platform"], "threads", "{made}");
    assert_eq!(made["persona"]["name"], "Mia", "{made}");
    assert_eq!(made["note"], "lead with the price", "{made}");
    assert_eq!(made["item"], "123456", "{made}");
    assert_eq!(made["research_id"], research.as_str(), "{made}");
    assert_eq!(made["card"]["item"], "123456", "{made}");
    assert_eq!(made["card"]["found"], true, "{made}");
    assert_eq!(made["card"]["third_party"], true, "{made}");
    assert_eq!(made["created_by"]["name"], "Ann", "{made}");
    assert_eq!(made["post_id"], Value::Null, "{made}");

    // Numbered in the organization, one after another.
    let second = picked(&app, &research, "https://shopee.tw/product/1/2", "TW-I001").await;
    assert_eq!(second, format!("SP-{}", first + 1));

    // The agent reads it by SP-<n>, in any letter case, or by the bare number.
    let sp = format!("SP-{first}");
    for asked in [
        sp.clone(),
        format!("sp-{first}"),
        first.to_string(),
        format!("SP-00{first}"),
    ] {
        let got = ok(&get(&app, &op1, &asked).await);
        assert_eq!(got["pick"], sp.as_str(), "{asked}: {got}");
        assert_eq!(got["card"], made["card"], "{asked}");
    }
    assert_eq!(list(&app, &op1, "").await, [second.as_str(), sp.as_str()]);

    // The draft with the pick is sponsored (sponsored left out) and the pick drafted.
    let body = json!({"code": "TW-T001", "body": "Our serum, finally on sale", "pick": sp});
    let res = draft(&app, &op1, &body).await;
    assert_eq!(res.status, 201, "{}", res.text());
    let post_id = res.json()["draft"]["id"].as_str().expect("id").to_owned();
    assert!(sponsored(&app, &post_id).await);
    let got = ok(&get(&app, &op1, &sp).await);
    assert_eq!(got["status"], "drafted", "{got}");
    assert_eq!(got["post_id"], post_id.as_str(), "{got}");
    assert!(got["drafted_at"].is_string(), "{got}");
    assert_eq!(list(&app, &op1, "").await, [second.as_str()]);
    assert_eq!(list(&app, &op1, "?status=drafted").await, [sp.as_str()]);
    assert_eq!(
        list(&app, &op1, "?status=all").await,
        [second.clone(), sp.clone()]
    );
    assert_eq!(list(&app, &op1, "?status=open").await, [second.as_str()]);

    // Resent, the same draft answers the original; the pick stays with it.
    let again = draft(&app, &op1, &body).await;
    assert_eq!(again.status, 200, "{}", again.text());
    assert_eq!(again.json()["draft"]["id"], post_id.as_str());
    // Another draft cannot take a pick a post drafted already.
    let other = json!({"code": "TW-T001", "body": "Another take", "pick": sp});
    let e = assert_error(&draft(&app, &op1, &other).await, 422, "rejected");
    assert_eq!(e["field"], "pick", "{e}");
    assert_eq!(
        app.count("SELECT count(*) AS n FROM posts WHERE body = 'Another take'")
            .await,
        0
    );

    // Cancelling the drafted pick leaves its post as it is; cancelling again changes nothing.
    let res = ok(&cancel(&app, &ann, &sp).await);
    assert_eq!(res["result"], "changed", "{res}");
    assert_eq!(res["pick"]["status"], "cancelled", "{res}");
    assert_eq!(res["pick"]["cancelled_by"]["name"], "Ann", "{res}");
    assert_eq!(res["pick"]["post_id"], post_id.as_str(), "{res}");
    assert!(sponsored(&app, &post_id).await);
    let res = ok(&cancel(&app, &ann, &first.to_string()).await);
    assert_eq!(res["result"], "unchanged", "{res}");
    assert_eq!(list(&app, &op1, "?status=cancelled").await, [sp.as_str()]);

    // Resent with another open pick of the account, a draft that drafted a pick keeps its
    // own: one pick per post. (The first pick is drafted again for this: a cancelled pick no
    // longer holds its post.)
    app.sql(
        "UPDATE ad_picks SET status = 'drafted', cancelled_at = NULL, cancelled_by = NULL \
         WHERE post_id IS NOT NULL",
    )
    .await;
    let third = picked(&app, &research, "123456", "TW-T001").await;
    let with_third =
        json!({"code": "TW-T001", "body": "Our serum, finally on sale", "pick": third});
    let e = assert_error(&draft(&app, &op1, &with_third).await, 422, "rejected");
    assert_eq!(e["field"], "pick", "{e}");
    assert_eq!(ok(&get(&app, &op1, &third).await)["status"], "open");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_draft_refuses_a_pick_of_another_account_or_cancelled_with_400_and_an_unknown_one_404() {
    let app = spawn_app().await;
    let op1 = app.agent_key("op1");
    let ann = app.personal_key("ann@acme.test");
    let research = app.finished_research("op1", &["223456"]).await;
    let for_instagram = picked(&app, &research, "223456", "TW-I001").await;
    let for_leo = picked(&app, &research, "223456", "TW-T002").await;
    let to_cancel = picked(&app, &research, "223456", "TW-T001").await;
    ok(&cancel(&app, &ann, &to_cancel).await);

    for (case, pick, status, code) in [
        (
            "another account of the agent",
            &for_instagram,
            400,
            "invalid_request",
        ),
        ("another agent's account", &for_leo, 400, "invalid_request"),
        ("cancelled", &to_cancel, 400, "invalid_request"),
        ("no such pick", &"SP-999999".to_owned(), 404, "not_found"),
    ] {
        let body = json!({"code": "TW-T001", "body": format!("sponsored {case}"), "pick": pick});
        let e = assert_error_in(case, &draft(&app, &op1, &body).await, status, code);
        if status == 400 {
            assert_eq!(e["field"], "pick", "{case}: {e}");
        }
    }
    // Shapes that are no pick number: 400 naming pick.
    for bad in [
        "SP-0",
        "0",
        "SP-",
        "SP-1a",
        " 7",
        "PS-1",
        "1234567890123456",
    ] {
        let body = json!({"code": "TW-T001", "body": "shape", "pick": bad});
        let e = assert_error_in(bad, &draft(&app, &op1, &body).await, 400, "invalid_request");
        assert_eq!(e["field"], "pick", "{bad}: {e}");
    }
    // Nothing was written, and the picks stand as they were.
    assert_eq!(
        app.count(
            "SELECT count(*) AS n FROM posts WHERE body LIKE 'sponsored %' OR body = 'shape'"
        )
        .await,
        0
    );
    assert_eq!(
        app.count("SELECT count(*) AS n FROM ad_picks WHERE status = 'open'")
            .await,
        2
    );
    // The pick of another workspace's account is not there for this one.
    let japan = app.finished_research("jp1", &["323456"]).await;
    let jp_pick = picked(&app, &japan, "323456", "JP-T001").await;
    let body = json!({"code": "TW-T001", "body": "across workspaces", "pick": jp_pick});
    assert_error(&draft(&app, &op1, &body).await, 404, "not_found");
}

#[tokio::test(flavor = "multi_thread")]
async fn an_agent_reads_only_the_picks_on_its_own_accounts() {
    let app = spawn_app().await;
    let research = app.finished_research("op1", &["423456"]).await;
    let mia = picked(&app, &research, "423456", "TW-T001").await;
    let leo = picked(&app, &research, "423456", "TW-T002").await;
    let op1 = app.agent_key("op1");
    let op2 = app.agent_key("op2");
    assert_eq!(list(&app, &op1, "?status=all").await, [mia.as_str()]);
    assert_eq!(list(&app, &op2, "?status=all").await, [leo.as_str()]);
    ok(&get(&app, &op1, &mia).await);
    for (who, key, pick) in [
        ("op1 reads Leo's", &op1, &leo),
        ("op2 reads Mia's", &op2, &mia),
        ("jp1 (another workspace)", &app.agent_key("jp1"), &mia),
        (
            "other1 (another organization)",
            &app.agent_key("other1"),
            &mia,
        ),
    ] {
        assert_error_in(who, &get(&app, key, pick).await, 404, "not_found");
    }
    assert!(
        list(&app, &app.agent_key("other1"), "?status=all")
            .await
            .is_empty()
    );
    // Shapes that are no pick, and filters that are none.
    for bad in ["SP-0", "abc", "SP-1.5"] {
        assert_error_in(bad, &get(&app, &op1, bad).await, 400, "invalid_request");
    }
    let res = app
        .client
        .get(&format!("{AGENT}/ad-picks?status=undone"), &op1)
        .await;
    assert_error(&res, 400, "invalid_request");
    // A person's key is no agent's.
    let ann = app.personal_key("ann@acme.test");
    assert_eq!(get(&app, &ann, &mia).await.status, 403);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_pick_names_a_card_of_a_research_request_and_an_account_of_its_workspace() {
    let app = spawn_app().await;
    let ann = app.personal_key("ann@acme.test");
    let research = app
        .finished_research("op1", &["523456", "523404", "523500"])
        .await;
    let others = app.finished_research("jp1", &["623456"]).await;
    let pick =
        |item: &str, code: &str| json!({"research_id": research, "item": item, "code": code});

    // An object the body names that is not there is 404; a rule of what is there 422.
    for (case, body, field, status) in [
        ("an item not found", pick("523404", "TW-T001"), "item", 422),
        (
            "an item that failed",
            pick("523500", "TW-T001"),
            "item",
            422,
        ),
        (
            "an item not asked for",
            pick("999999", "TW-T001"),
            "item",
            422,
        ),
        ("an unknown account", pick("523456", "TW-X999"), "code", 404),
        (
            "an account of another workspace",
            pick("523456", "JP-T001"),
            "code",
            404,
        ),
        (
            "a legacy code on two platforms",
            pick("523456", "OLD1"),
            "platform",
            422,
        ),
        (
            "an unknown request",
            json!({"research_id": "00000000-0000-4000-8000-000000000000", "item": "523456",
                   "code": "TW-T001"}),
            "research_id",
            404,
        ),
    ] {
        let code = if status == 404 {
            "not_found"
        } else {
            "rejected"
        };
        let e = assert_error_in(case, &make(&app, &ann, &body).await, status, code);
        assert_eq!(e["field"], field, "{case}: {e}");
    }
    // Named with its platform, the legacy code is one account.
    let body =
        json!({"research_id": research, "item": "523456", "code": "OLD1", "platform": "tiktok"});
    let made = ok(&make(&app, &ann, &body).await);
    assert_eq!(made["code"], "TW-L002", "{made}");
    // Another organization's person reaches none of Acme's requests or picks.
    let olga = app.personal_key("olga@other.test");
    let e = assert_error(
        &make(&app, &olga, &pick("523456", "TW-T001")).await,
        404,
        "not_found",
    );
    assert_eq!(e["field"], "research_id", "{e}");
    let sp = made["pick"].as_str().expect("pick");
    assert_error(&cancel(&app, &olga, sp).await, 404, "not_found");
    // Clients make and cancel none.
    let cli = app.personal_key("cli@brand.test");
    assert_error(
        &make(&app, &cli, &pick("523456", "TW-T001")).await,
        403,
        "forbidden",
    );
    assert_error(&cancel(&app, &cli, sp).await, 403, "forbidden");
    // A platform admin outside any organization reaches every organization's.
    let root = app.personal_key("root@example.com");
    let made = ok(&make(
        &app,
        &root,
        &json!({"research_id": others, "item": "623456", "code": "JP-T001"}),
    )
    .await);
    assert_eq!(made["created_by"]["name"], "Root", "{made}");

    // The note: 2000 characters, not one more; white space alone is none.
    let note = |n: usize| json!({"research_id": research, "item": "523456", "code": "TW-T001", "note": "字".repeat(n)});
    assert_eq!(make(&app, &ann, &note(2000)).await.status, 201);
    let e = assert_error(&make(&app, &ann, &note(2001)).await, 400, "invalid_request");
    assert_eq!(e["field"], "note", "{e}");
    let blank = json!({"research_id": research, "item": "523456", "code": "TW-T001", "note": "  "});
    let e = assert_error(&make(&app, &ann, &blank).await, 400, "invalid_request");
    assert_eq!(e["field"], "note", "{e}");
    for missing in ["research_id", "item", "code"] {
        let mut body = pick("523456", "TW-T001");
        body.as_object_mut().expect("object").remove(missing);
        let e = assert_error_in(
            missing,
            &make(&app, &ann, &body).await,
            400,
            "invalid_request",
        );
        assert_eq!(e["field"], missing, "{e}");
    }
    // Nothing refused was stored: Ann's three picks, Root's one.
    assert_eq!(app.count("SELECT count(*) AS n FROM ad_picks").await, 3);
}

#[tokio::test(flavor = "multi_thread")]
async fn making_a_pick_again_with_its_idempotency_key_answers_the_first_pick() {
    let app = spawn_app().await;
    let ann = app.personal_key("ann@acme.test");
    let research = app.finished_research("op1", &["723456"]).await;
    let body = json!({"research_id": research, "item": "723456", "code": "TW-T001"});
    let path = format!("{USER}/ad-picks");
    let first = app.client.post_idem(&path, &ann, "pick-1", &body).await;
    assert_eq!(first.status, 201, "{}", first.text());
    let again = app.client.post_idem(&path, &ann, "pick-1", &body).await;
    assert_eq!(again.status, 201, "{}", again.text());
    assert_eq!(again.json()["pick"], first.json()["pick"]);
    assert_eq!(app.count("SELECT count(*) AS n FROM ad_picks").await, 1);
    let other = json!({"research_id": research, "item": "723456", "code": "TW-I001"});
    let e = app.client.post_idem(&path, &ann, "pick-1", &other).await;
    assert_error(&e, 422, "idempotency_mismatch");
    // Cancelling resent with its key answers the first answer.
    let sp = first.json()["pick"].as_str().expect("pick").to_owned();
    let cancel_path = format!("{USER}/ad-picks/{sp}/cancel");
    let once = app
        .client
        .post_idem(&cancel_path, &ann, "cancel-1", &json!({}))
        .await;
    let twice = app
        .client
        .post_idem(&cancel_path, &ann, "cancel-1", &json!({}))
        .await;
    assert_eq!(ok(&once)["result"], "changed");
    assert_eq!(ok(&twice)["result"], "changed");
    // Concurrent picks of one organization take distinct numbers.
    let made = futures_util::future::join_all((0..8).map(|_| make(&app, &ann, &body))).await;
    let mut numbers: Vec<i64> = made
        .iter()
        .map(|r| ok(r)["number"].as_i64().expect("number"))
        .collect();
    numbers.sort_unstable();
    numbers.dedup();
    assert_eq!(numbers.len(), 8, "{numbers:?}");
}

// ---------------------------------------------------------------------------------------------
// Personal API: GET /ad-research (list_ad_research)

#[tokio::test(flavor = "multi_thread")]
async fn people_list_their_organizations_research_with_its_cards() {
    let app = spawn_app().await;
    app.sql("UPDATE organizations SET monthly_credit_limit = 100 WHERE name = 'Other Agency'")
        .await;
    let first = app.finished_research("op1", &["111111", "222404"]).await;
    let second = app.finished_research("jp1", &["333333"]).await;
    let others = app.finished_research("other1", &["444444"]).await;
    let ann = app.personal_key("ann@acme.test");
    let list = |key: String, query: &'static str| {
        let app = &app;
        async move {
            app.client
                .get(&format!("{USER}/ad-research{query}"), &key)
                .await
        }
    };
    let ids = |v: &Value| -> Vec<String> {
        v["research"]
            .as_array()
            .expect("research")
            .iter()
            .map(|r| r["id"].as_str().unwrap().to_owned())
            .collect()
    };

    let v = ok(&list(ann.clone(), "").await);
    assert_eq!(
        ids(&v),
        [second.clone(), first.clone()],
        "newest first, the organization's only"
    );
    let r = &v["research"][1];
    assert_eq!(r["workspace"]["name"], "Taiwan");
    assert_eq!(r["status"], "done");
    assert_eq!(r["progress"], json!({"done": 2, "total": 2}));
    let cards = r["result"]["items"].as_array().expect("the cards");
    assert_eq!(cards.len(), 1, "the item not found has no card: {r}");
    assert_eq!(r["items"][1]["outcome"], "not_found");

    // One page at a time; one workspace; one status.
    let v = ok(&list(ann.clone(), "?limit=1").await);
    assert_eq!(ids(&v), [second.as_str()]);
    let cursor = v["next_cursor"].as_str().expect("a next page").to_owned();
    let v = ok(&app
        .client
        .get(&format!("{USER}/ad-research?limit=1&cursor={cursor}"), &ann)
        .await);
    assert_eq!(ids(&v), [first.as_str()]);
    assert_eq!(v["next_cursor"], Value::Null);
    let taiwan = app.workspace_id("Taiwan");
    let v = ok(&app
        .client
        .get(&format!("{USER}/ad-research?workspace={taiwan}"), &ann)
        .await);
    assert_eq!(ids(&v), [first.as_str()]);
    let v = ok(&list(ann.clone(), "?status=quoted").await);
    assert_eq!(ids(&v), Vec::<String>::new());

    // Another organization's people see theirs; a platform admin every one; clients none.
    let v = ok(&list(app.personal_key("olga@other.test"), "").await);
    assert_eq!(ids(&v), [others.as_str()]);
    let v = ok(&list(app.personal_key("root@example.com"), "").await);
    assert_eq!(ids(&v).len(), 3);
    assert_error(
        &list(app.personal_key("cli@brand.test"), "").await,
        403,
        "forbidden",
    );
    for bad in ["?limit=0", "?limit=51", "?status=lost", "?workspace=x"] {
        let res = list(ann.clone(), bad).await;
        assert_error_in(bad, &res, 400, "invalid_request");
    }
    app.stop().await;
}
