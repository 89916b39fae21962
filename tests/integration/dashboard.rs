//! The dashboard in a real browser: Playwright (tests/browser, `playwright-core` without a
//! browser download) drives Debian's Chromium through `tests/browser/dashboard.mjs` over a
//! server seeded through the Agent and Personal APIs. This file seeds, runs the script, then
//! checks in the database what the clicks did. The script writes a screenshot of each page at
//! desktop and phone width into `<target>/dashboard-screenshots/`.
//!
//! The sessions and forms without a browser (cookie flags, CSRF and origin refusals, a revoked
//! key ending its session, one code path with the Personal API) are tested here over plain
//! HTTP.

use crate::personas::png;
use crate::uploads::{faststart_mp4, new_upload, put};
use base64::Engine;
use fleetdesk_tests::assert::ok;
use fleetdesk_tests::client::Request;
use fleetdesk_tests::{Response, TestApp, spawn_app};
use jiff::{SignedDuration, Timestamp, ToSpan};
use serde_json::{Value, json};
use std::path::Path;

const AGENT: &str = "/api/agent/v1";
const USER: &str = "/api/user/v1";
const ANN: &str = "ann@acme.test";
const CLI: &str = "cli@brand.test";
const ROOT: &str = "root@example.com";
const BROWSER_DIR: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/browser");
const CHROMIUM: &str = "/usr/bin/chromium";

// ---------------------------------------------------------------------------------------------
// helpers: seeding through the APIs

async fn agent_post(app: &TestApp, path: &str, body: Value) -> Value {
    ok(&app
        .client
        .post(&format!("{AGENT}{path}"), &app.agent_key("op1"), &body)
        .await)
}

async fn person_post(app: &TestApp, who: &str, path: &str, body: Value) -> Value {
    ok(&app
        .client
        .post(&format!("{USER}{path}"), &app.personal_key(who), &body)
        .await)
}

/// A finished single-file upload of op1 for TW-T001 (a video gets `poster`): its upload id.
async fn uploaded(app: &TestApp, body: Value, bytes: Vec<u8>, poster: Option<Vec<u8>>) -> String {
    let key = app.agent_key("op1");
    let up = new_upload(app, &key, &body).await;
    if let Some(poster) = poster {
        let res = put(app, up["poster_url"].as_str().expect("poster_url"), poster).await;
        assert_eq!(res.status, 200, "poster: {}", res.text());
    }
    let res = put(app, up["upload_url"].as_str().expect("upload_url"), bytes).await;
    assert_eq!(res.status, 200, "file: {}", res.text());
    up["upload_id"].as_str().expect("upload_id").to_owned()
}

/// A draft of op1 on TW-T001, in internal review: its id.
async fn draft(app: &TestApp, body: &str, topic: &str, upload_ids: &[String]) -> String {
    let mut draft = json!({"code": "TW-T001", "body": body, "topic": topic});
    if !upload_ids.is_empty() {
        draft["upload_ids"] = json!(upload_ids);
    }
    let v = agent_post(app, "/drafts", draft).await;
    assert_eq!(v["draft"]["status"], "internal_review", "{v}");
    v["draft"]["id"].as_str().expect("draft id").to_owned()
}

async fn one(app: &TestApp, query: &str) -> String {
    use diesel::QueryableByName;
    use diesel_async::RunQueryDsl;
    #[derive(QueryableByName)]
    struct Row {
        #[diesel(sql_type = diesel::sql_types::Text)]
        v: String,
    }
    let mut conn = app.connect().await;
    diesel::sql_query(query)
        .get_result::<Row>(&mut conn)
        .await
        .unwrap_or_else(|e| panic!("{query}: {e}"))
        .v
}

/// What the browser script is told: where, who, and what was seeded.
struct Seeded {
    image_post: String,
    video_post: String,
    client_post: String,
    ban: String,
    images: String,
    avatar_image: String,
    card: String,
    report: String,
    ticket: String,
}

/// Posts in review (one with an image, one with a video and its poster, one in client review
/// whose body is Chinese), a ban, persona images, a card to confirm, a published post with
/// its metrics and a report over it.
async fn seed(app: &TestApp) -> Seeded {
    // The image post is submitted first: the queue shows it first.
    let image = uploaded(
        app,
        json!({"code": "TW-T001", "mime_type": "image/png", "caption": "the serum bottle"}),
        png(640, 480, 1),
        None,
    )
    .await;
    let image_post = draft(app, "New serum, first look.", "serum", &[image]).await;
    let mp4 = faststart_mp4();
    let video = uploaded(
        app,
        json!({"code": "TW-T001", "mime_type": "video/mp4", "bytes": mp4.len(),
               "caption": "unboxing clip"}),
        mp4,
        Some(png(64, 48, 2)),
    )
    .await;
    let video_post = draft(app, "Unboxing the night mask.", "mask", &[video]).await;

    // A post in client review: moved there while client review was on.
    app.sql("UPDATE workspaces SET client_review = true WHERE name = 'Taiwan'")
        .await;
    let client_post = draft(app, "保濕精華液，秋冬必備。", "精華液", &[]).await;
    person_post(
        app,
        ANN,
        &format!("/posts/{client_post}/transition"),
        json!({"to": "client_review"}),
    )
    .await;
    app.sql("UPDATE workspaces SET client_review = false WHERE name = 'Taiwan'")
        .await;

    let ban = agent_post(
        app,
        "/accounts/TW-I001/state",
        json!({"state": "banned", "reason": "the platform said so",
               "occurred_at": Timestamp::now().to_string()}),
    )
    .await["decision"]["id"]
        .as_str()
        .expect("ban decision")
        .to_owned();

    let b64 = |bytes: Vec<u8>| base64::engine::general_purpose::STANDARD.encode(bytes);
    let avatar = agent_post(
        app,
        "/personas/TW-T001/images",
        json!({"data": b64(png(96, 96, 3)), "category": "avatar",
               "caption": "new avatar"}),
    )
    .await;
    agent_post(
        app,
        "/personas/TW-T001/images",
        json!({"data": b64(png(120, 80, 4)), "category": "portrait",
               "caption": "autumn portrait"}),
    )
    .await;
    let avatar_image = avatar["image"]["id"].as_str().expect("image id").to_owned();
    let images = one(
        app,
        &format!("SELECT decision_id::text AS v FROM persona_images WHERE id = '{avatar_image}'"),
    )
    .await;

    // A new persona to confirm on its fields.
    agent_post(
        app,
        "/personas",
        json!({"name": "Nora", "project": "beauty", "bio": "Night-shift nurse who loves 保養.",
               "voice": "calm, dry humour"}),
    )
    .await;

    // A post kept in TW-T001's inventory.
    let stock = draft(app, "For a quiet day.", "stock", &[]).await;
    agent_post(
        app,
        &format!("/posts/{stock}/stock"),
        json!({"reason": "evergreen"}),
    )
    .await;

    // Ads synced from the sandbox platform, and a pause to decide with the ad's numbers.
    let worker = fleetdesk::worker::Worker::new(app.store.clone())
        .tokens(|name| (name == "ACME_META_TOKEN").then(|| "sandbox-token".to_owned()));
    worker.schedule_ad_sync().await.expect("enqueue the sync");
    worker.run_due().await.expect("run the sync");
    agent_post(
        app,
        "/ads/proposals",
        json!({"kind": "pause", "ad_id": "100111", "reason": "CTR fell to 0.4%"}),
    )
    .await;

    // Research whose card a person picks.
    app.finished_research("op1", &["111111"]).await;

    // A knowledge-base entry in traditional Chinese.
    agent_post(
        app,
        "/wiki",
        json!({"category": "lesson", "title": "貓咪的照顧", "summary": "每天梳毛",
               "body": "每天梳毛，貓咪會很開心。", "sources": [{"kind": "agent", "ref": "tests"}]}),
    )
    .await;

    // A fact to decide next to the persona's facts.
    agent_post(
        app,
        "/personas/TW-T001/proposals",
        json!({"kind": "fact", "category": "pet", "label": "cat", "value": "a grey cat named 默默"}),
    )
    .await;

    let card = agent_post(
        app,
        "/tasks",
        json!({"kind": "other", "title": "Refresh the pinned post", "target":
               {"type": "slot", "code": "TW-T001"}}),
    )
    .await["id"]
        .as_str()
        .expect("card id")
        .to_owned();
    agent_post(app, &format!("/tasks/{card}/claim"), json!({})).await;
    agent_post(
        app,
        &format!("/tasks/{card}/finish"),
        json!({"result": "Pinned the serum post."}),
    )
    .await;

    // Published yesterday with its numbers, and a report of the last week over it.
    let yesterday = Timestamp::now() - SignedDuration::from_hours(24);
    let published = agent_post(
        app,
        "/posts/report",
        json!({"posts": [{"code": "TW-T001", "status": "published", "body": "Serum day",
                          "platform_post_id": "p-dash", "published_at": yesterday.to_string(),
                          "permalink": "https://threads.net/@mia/post/p-dash"}]}),
    )
    .await;
    let post = published["results"][0]["post_id"]
        .as_str()
        .expect("post id");
    agent_post(
        app,
        "/metrics",
        json!({"captured_at": Timestamp::now().to_string(),
               "posts": [{"post_id": post, "views": 1234, "likes": 56}],
               "accounts": [{"code": "TW-T001", "followers": 789}]}),
    )
    .await;
    let today = Timestamp::now()
        .to_zoned(jiff::tz::TimeZone::get("Asia/Taipei").expect("zone"))
        .date();
    let report = person_post(
        app,
        ANN,
        "/reports",
        json!({"workspace": "Taiwan", "from": (today - 6.days()).to_string(),
               "to": today.to_string(), "title": "Taiwan this week"}),
    )
    .await["id"]
        .as_str()
        .expect("report id")
        .to_owned();

    // A ticket the community assistant opened in Mia fans.
    let space = app.space_id("Mia fans");
    let ticket = ok(&app
        .client
        .post(
            &format!("{AGENT}/community/tickets"),
            &app.agent_key("bot"),
            &json!({"channel": "whatsapp", "space_id": space, "member_external_id": "amy",
                    "category": "complaint", "summary": "The serum leaked in the box."}),
        )
        .await)["ticket_id"]
        .as_str()
        .expect("ticket id")
        .to_owned();

    Seeded {
        image_post,
        video_post,
        client_post,
        ban,
        images,
        avatar_image,
        card,
        report,
        ticket,
    }
}

fn require_browser() {
    assert!(
        Path::new(BROWSER_DIR)
            .join("node_modules/playwright-core/package.json")
            .is_file(),
        "tests/browser/node_modules is missing: run `cargo xtask test` or `npm ci --prefix tests/browser`"
    );
    assert!(
        Path::new(CHROMIUM).is_file(),
        "{CHROMIUM} is missing: run `cargo xtask test`, which installs Debian's chromium and \
         fonts-noto-cjk (or apt-get install chromium fonts-noto-cjk)"
    );
}

// ---------------------------------------------------------------------------------------------
// the browser

#[tokio::test(flavor = "multi_thread")]
async fn people_review_decide_confirm_and_read_the_day_in_chromium() {
    require_browser();
    let app = spawn_app().await;
    let seeded = seed(&app).await;
    let shots = fleetdesk_tests::peers::target_dir().join("dashboard-screenshots");
    std::fs::create_dir_all(&shots).expect("the screenshots' folder");
    let plan = json!({
        "base": app.base,
        "chromium": CHROMIUM,
        "screenshots": shots,
        "keys": {"agency": app.personal_key(ANN), "client": app.personal_key(CLI),
                 "admin": app.personal_key(ROOT)},
        "image_post": seeded.image_post,
        "video_post": seeded.video_post,
        "client_post": seeded.client_post,
        "ban": seeded.ban,
        "images": seeded.images,
        "avatar_image": seeded.avatar_image,
        "card": seeded.card,
        "report": seeded.report,
        "ticket": seeded.ticket,
        "persona": app.persona_id("Mia"),
    });
    let out = tokio::time::timeout(
        std::time::Duration::from_secs(240),
        tokio::process::Command::new("node")
            .arg(Path::new(BROWSER_DIR).join("dashboard.mjs"))
            .env("FLEETDESK_DASHBOARD_PLAN", plan.to_string())
            .current_dir(BROWSER_DIR)
            .kill_on_drop(true)
            .output(),
    )
    .await
    .expect("the browser script finished within 4 minutes")
    .expect("node runs");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    println!("{stdout}");
    assert!(
        out.status.success(),
        "the browser script failed ({}):\n{stdout}\n{stderr}",
        out.status
    );

    // What the clicks did, as the database holds it.
    assert_eq!(
        one(
            &app,
            &format!(
                "SELECT status || ': ' || handled_note AS v FROM community_tickets \
                 WHERE id = '{}'",
                seeded.ticket
            )
        )
        .await,
        "resolved: Sent a new bottle; she is happy."
    );
    let status = |id: &str| format!("SELECT status AS v FROM posts WHERE id = '{id}'");
    assert_eq!(one(&app, &status(&seeded.image_post)).await, "approved");
    assert_eq!(
        one(&app, &status(&seeded.video_post)).await,
        "sent_back",
        "sent back with the keyboard"
    );
    assert_eq!(
        one(
            &app,
            &format!(
                "SELECT string_agg(action || ':' || coalesce(reason, ''), ',' ORDER BY id) AS v \
                 FROM review_events WHERE post_id = '{}' AND actor_kind = 'member'",
                seeded.video_post
            )
        )
        .await,
        "sent_back:Show the mask on the face first.",
        "the forged posts moved nothing; the one real move is recorded with its comment"
    );
    assert_eq!(
        one(&app, "SELECT status AS v FROM personas WHERE name = 'Nora'").await,
        "confirmed"
    );
    assert_eq!(
        one(
            &app,
            "SELECT (k.revoked_at IS NOT NULL)::text AS v FROM api_keys k \
             JOIN people p ON p.id = k.person_id WHERE p.email = 'cid@brand.test'"
        )
        .await,
        "true",
        "the admin revoked Cid's key"
    );
    assert_eq!(
        one(&app, &status(&seeded.client_post)).await,
        "client_review"
    );
    let decision = |id: &str| format!("SELECT status AS v FROM decisions WHERE id = '{id}'");
    assert_eq!(one(&app, &decision(&seeded.ban)).await, "resolved");
    assert_eq!(
        one(
            &app,
            "SELECT count(*)::text AS v FROM account_generations g JOIN account_slots s \
             ON s.id = g.slot_id WHERE s.code = 'TW-I001'"
        )
        .await,
        "2",
        "open_new_generation opened the next generation"
    );
    assert_eq!(one(&app, &decision(&seeded.images)).await, "resolved");
    assert_eq!(
        one(
            &app,
            &format!(
                "SELECT string_agg(category || ':' || lock, ',' ORDER BY category) AS v \
                 FROM persona_images WHERE decision_id = '{}'",
                seeded.images
            )
        )
        .await,
        "avatar:approved,portrait:refused"
    );
    assert_eq!(
        one(
            &app,
            "SELECT count(*)::text AS v FROM decisions WHERE kind = 'change_avatar'"
        )
        .await,
        "1",
        "the avatar picked opened its follow-up"
    );
    assert_eq!(
        one(
            &app,
            &format!(
                "SELECT status AS v FROM task_cards WHERE id = '{}'",
                seeded.card
            )
        )
        .await,
        "in_progress",
        "confirmed, then reopened"
    );
    assert_eq!(
        one(
            &app,
            &format!(
                "SELECT (issued_at IS NOT NULL)::text AS v FROM reports WHERE id = '{}'",
                seeded.report
            )
        )
        .await,
        "true",
        "issued with one click"
    );
    // The approval is the Personal API's: the same review record entry, by the person.
    assert_eq!(
        one(
            &app,
            &format!(
                "SELECT count(*)::text AS v FROM review_events WHERE post_id = '{}' \
                 AND action = 'approved' AND actor_kind = 'member'",
                seeded.image_post
            )
        )
        .await,
        "1"
    );
    assert_eq!(
        one(
            &app,
            "SELECT count(*)::text AS v FROM ad_picks p JOIN account_slots s ON s.id = p.slot_id \
             WHERE s.code = 'TW-T001' AND p.card->>'item' = '111111'"
        )
        .await,
        "1",
        "the card was picked for TW-T001"
    );
    for page in [
        "sign-in",
        "today",
        "review",
        "post",
        "decisions",
        "tasks",
        "metrics",
        "reports",
        "report",
        "keys",
        "client-review",
    ] {
        for width in ["desktop", "phone"] {
            let shot = shots.join(format!("{page}-{width}.png"));
            let bytes = std::fs::metadata(&shot)
                .unwrap_or_else(|_| panic!("{} was not written", shot.display()))
                .len();
            assert!(bytes > 5_000, "{} is {bytes} bytes", shot.display());
        }
    }
    app.stop().await;
}

// ---------------------------------------------------------------------------------------------
// sessions and forms over plain HTTP

/// Signs in with `key`: the answer.
async fn sign_in(app: &TestApp, key: &str) -> Response {
    app.client
        .send(
            Request::new("POST", "/dashboard/sign-in")
                .header("Content-Type", "application/x-www-form-urlencoded")
                .raw(format!("key={key}&next=%2Fdashboard%2Freview").into_bytes()),
        )
        .await
}

/// The session cookie a sign-in set.
fn session_cookie(res: &Response) -> String {
    let set = res.header("set-cookie").expect("a Set-Cookie");
    set.split(';').next().expect("name=value").to_owned()
}

async fn page(app: &TestApp, cookie: &str, path: &str) -> Response {
    app.client
        .send(Request::new("GET", path).header("Cookie", cookie))
        .await
}

fn csrf_of(html: &str) -> String {
    let at = html.find(r#"name="_csrf" value=""#).expect("a CSRF field") + 20;
    html[at..at + html[at..].find('"').expect("its end")].to_owned()
}

async fn form_post(
    app: &TestApp,
    cookie: &str,
    path: &str,
    form: &str,
    origin: Option<&str>,
) -> Response {
    let mut req = Request::new("POST", path)
        .header("Cookie", cookie)
        .header("Content-Type", "application/x-www-form-urlencoded")
        .raw(form.as_bytes().to_vec());
    if let Some(o) = origin {
        req = req.header("Origin", o);
    }
    app.client.send(req).await
}

#[tokio::test(flavor = "multi_thread")]
async fn a_session_is_an_httponly_strict_cookie_whose_forms_need_its_csrf_token() {
    let app = spawn_app().await;
    let post = draft(&app, "A post to approve.", "t", &[]).await;

    // A page without a session sends the browser to sign in, and back after.
    let res = app
        .client
        .send(Request::new("GET", "/dashboard/review"))
        .await;
    assert_eq!(res.status, 303);
    assert_eq!(
        res.header("location"),
        Some("/dashboard/sign-in?next=%2Fdashboard%2Freview")
    );

    // A wrong key, an agent key: 401 with the form again, no cookie.
    for key in ["fdp_nope", &app.agent_key("op1")] {
        let res = sign_in(&app, key).await;
        assert_eq!(res.status, 401, "{}", res.text());
        assert!(res.header("set-cookie").is_none());
        assert!(res.text().contains(r#"name="key""#));
    }

    let res = sign_in(&app, &app.personal_key(ANN)).await;
    assert_eq!(res.status, 303, "{}", res.text());
    assert_eq!(res.header("location"), Some("/dashboard/review"));
    let set = res
        .header("set-cookie")
        .expect("the session cookie")
        .to_owned();
    for flag in [
        "HttpOnly",
        "SameSite=Strict",
        "Path=/dashboard",
        "Max-Age=43200",
    ] {
        assert!(set.contains(flag), "{set} lacks {flag}");
    }
    assert!(!set.contains("Secure"), "plain HTTP: {set}");
    assert!(
        !set.contains(&app.personal_key(ANN)),
        "the key is never in the cookie"
    );
    let cookie = session_cookie(&res);
    assert_eq!(
        app.count("SELECT count(*) AS n FROM dashboard_sessions")
            .await,
        1
    );

    let review = page(&app, &cookie, "/dashboard/review").await;
    assert_eq!(review.status, 200);
    assert_eq!(review.header("cache-control"), Some("no-store"));
    assert!(
        review
            .header("content-security-policy")
            .is_some_and(|c| c.contains("frame-ancestors 'none'"))
    );
    let html = String::from_utf8_lossy(&review.body).into_owned();
    assert!(html.contains("A post to approve."), "{html}");
    let csrf = csrf_of(&html);
    let act = format!("/dashboard/act/posts/{post}/transition");

    // Without the token, with another's, and from another origin: 403, nothing moves.
    let refused = [
        ("to=approved&_idem=k1".to_owned(), None),
        (
            format!("to=approved&_idem=k2&_csrf={}", "A".repeat(43)),
            None,
        ),
        (
            format!("to=approved&_idem=k3&_csrf={csrf}"),
            Some("https://evil.test"),
        ),
    ];
    for (form, origin) in refused {
        let res = form_post(&app, &cookie, &act, &form, origin).await;
        assert_eq!(res.status, 403, "{form}: {}", res.text());
    }
    assert_eq!(
        app.count(&format!(
            "SELECT count(*) AS n FROM posts WHERE id = '{post}' AND status = 'internal_review'"
        ))
        .await,
        1
    );

    // With it: the Personal API's move, then back with what happened.
    let form = format!(
        "to=approved&_idem=dashboard-once&_csrf={csrf}&_back=%2Fdashboard%2Freview&_done=Approved."
    );
    let own = app.base.clone();
    let res = form_post(&app, &cookie, &act, &form, Some(&own)).await;
    assert_eq!(res.status, 303, "{}", res.text());
    assert_eq!(res.header("location"), Some("/dashboard/review"));
    let flash = res.header("set-cookie").expect("the flash").to_owned();
    assert!(flash.starts_with("fleetdesk_flash=ok=Approved."), "{flash}");
    // The same form sent twice acts once: its Idempotency-Key replays.
    let again = form_post(&app, &cookie, &act, &form, Some(&own)).await;
    assert_eq!(again.status, 303);
    let replayed = again.header("set-cookie").expect("the flash").to_owned();
    assert!(
        replayed.starts_with("fleetdesk_flash=ok=Approved.;"),
        "the first answer, replayed (a second approval would be refused): {replayed}"
    );
    assert_eq!(
        app.count(&format!(
            "SELECT count(*) AS n FROM review_events WHERE post_id = '{post}' AND action = 'approved'"
        ))
        .await,
        1
    );
    // A refusal of the operation comes back as the flash, naming why.
    let refused = format!("to=sent_back&_idem=k4&_csrf={csrf}&_back=%2Fdashboard%2Freview");
    let res = form_post(&app, &cookie, &act, &refused, None).await;
    assert_eq!(res.status, 303);
    let flash = res.header("set-cookie").expect("the flash").to_owned();
    assert!(flash.starts_with("fleetdesk_flash=error="), "{flash}");
    // A field the operation's typed body cannot read is its 400, naming the field, as the
    // flash; nothing moves.
    let bad = format!("to=nowhere&_idem=k5&_csrf={csrf}&_back=%2Fdashboard%2Freview");
    let res = form_post(&app, &cookie, &act, &bad, None).await;
    assert_eq!(res.status, 303);
    let flash = res.header("set-cookie").expect("the flash").to_owned();
    assert!(flash.starts_with("fleetdesk_flash=error=to%3A+"), "{flash}");
    // A path parameter that is not the operation's type is refused the same way.
    let res = form_post(
        &app,
        &cookie,
        "/dashboard/act/posts/not-a-uuid/transition",
        &format!("to=approved&_idem=k6&_csrf={csrf}&_back=%2Fdashboard%2Freview"),
        None,
    )
    .await;
    assert_eq!(res.status, 303);
    let flash = res.header("set-cookie").expect("the flash").to_owned();
    assert!(flash.starts_with("fleetdesk_flash=error=id%3A+"), "{flash}");
    // Only the dashboard's actions are routes: another Personal API write is no page.
    let res = form_post(
        &app,
        &cookie,
        "/dashboard/act/tasks",
        &format!("title=x&_idem=k7&_csrf={csrf}"),
        None,
    )
    .await;
    assert_eq!(res.status, 404);
    assert_eq!(
        app.count(&format!(
            "SELECT count(*) AS n FROM review_events WHERE post_id = '{post}'"
        ))
        .await,
        app.count(&format!(
            "SELECT count(*) AS n FROM review_events WHERE post_id = '{post}' AND action <> 'sent_back'"
        ))
        .await,
        "no refused form moved the post"
    );

    // A client: the review queue, and 403 on an agency page.
    let client = session_cookie(&sign_in(&app, &app.personal_key(CLI)).await);
    let res = page(&app, &client, "/dashboard/decisions").await;
    assert_eq!(res.status, 403, "{}", res.text());
    let queue = page(&app, &client, "/dashboard/review").await;
    assert!(!String::from_utf8_lossy(&queue.body).contains(">Decisions<"));

    // Signing out ends the session: the cookie no longer opens a page.
    let res = form_post(
        &app,
        &cookie,
        "/dashboard/sign-out",
        &format!("_csrf={csrf}"),
        None,
    )
    .await;
    assert_eq!(res.status, 303);
    assert_eq!(page(&app, &cookie, "/dashboard/review").await.status, 303);

    // Revoking the key ends its sessions at their next request.
    let key_id = one(
        &app,
        "SELECT k.id::text AS v FROM api_keys k JOIN people p ON p.id = k.person_id \
         WHERE p.email = 'cli@brand.test'",
    )
    .await;
    let res = app
        .client
        .post(
            &format!("{USER}/admin/keys/user/{key_id}/revoke"),
            &app.personal_key(ROOT),
            &json!({}),
        )
        .await;
    assert_eq!(res.status, 200, "{}", res.text());
    let res = page(&app, &client, "/dashboard/review").await;
    assert_eq!(res.status, 303);
    assert!(
        res.header("set-cookie")
            .is_some_and(|c| c.contains("Max-Age=0"))
    );
    app.stop().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn the_knowledge_page_reads_its_workspace_and_search_as_the_operations_do() {
    let app = spawn_app().await;
    agent_post(
        &app,
        "/wiki",
        json!({"category": "lesson", "title": "貓咪的照顧", "summary": "每天梳毛",
               "body": "每天梳毛，貓咪會很開心。", "sources": [{"kind": "agent", "ref": "tests"}]}),
    )
    .await;
    let workspace = one(
        &app,
        "SELECT id::text AS v FROM workspaces WHERE name = 'Taiwan'",
    )
    .await;
    let ann = session_cookie(&sign_in(&app, &app.personal_key(ANN)).await);
    // The page at `query` in Taiwan's knowledge base: its status and whole HTML.
    let knowledge = async |query: &str| {
        let path = format!("/dashboard/knowledge?workspace={workspace}&{query}");
        let res = page(&app, &ann, &path).await;
        (res.status, String::from_utf8_lossy(&res.body).into_owned())
    };

    // A search in simplified Chinese finds the traditional entry, with its snippet and a link
    // to it in the workspace picked.
    let (status, html) = knowledge("q=%E7%8C%AB%E5%92%AA").await;
    assert_eq!(status, 200, "{html}");
    assert!(html.contains(&format!(
        "/dashboard/knowledge/entry?workspace={workspace}&amp;id="
    )));
    assert!(html.contains(">貓咪的照顧</a>"), "{html}");
    assert!(html.contains("貓咪會很開心"), "the hit's snippet: {html}");
    // Which words matched, as typed, and the dictionary's attribution.
    assert!(
        html.contains(r#"Matched: <mark lang="und">猫咪</mark>"#),
        "{html}"
    );
    assert!(
        html.contains("CC-CEDICT") && html.contains("CC BY-SA 4.0"),
        "{html}"
    );
    // An English search finds the Chinese entry, through the English of its words
    // (梳毛 is not in the dictionary; 每天 is "every day").
    let (status, html) = knowledge("q=every+day").await;
    assert_eq!(status, 200, "{html}");
    assert!(html.contains(">貓咪的照顧</a>"), "{html}");
    assert!(
        html.contains(r#"Matched: <mark lang="und">every</mark>, <mark lang="und">day</mark>"#),
        "{html}"
    );

    // Blank after trimming is no search: the index, with the entry's summary.
    let (status, html) = knowledge("q=%20%20").await;
    assert_eq!(status, 200);
    assert!(
        html.contains(r#"<p class="body" lang="und">每天梳毛</p>"#),
        "{html}"
    );

    // q is the operation's bounded text: 200 characters are searched, 201 are its 400 naming
    // q, shown in the page with the operation's words.
    let (status, html) = knowledge(&format!("q={}", "a".repeat(200))).await;
    assert_eq!(status, 200);
    assert!(html.contains("Nothing found."), "{html}");
    let (status, html) = knowledge(&format!("q={}", "a".repeat(201))).await;
    assert_eq!(status, 400);
    assert!(html.contains("q: must be 1-200 characters long"), "{html}");

    // The index's cursor and an entry's id are read by their operations' parsers too.
    let (status, html) = knowledge("cursor=bogus").await;
    assert_eq!(status, 400);
    assert!(html.contains(">cursor: "), "{html}");
    let entry = format!("/dashboard/knowledge/entry?workspace={workspace}&id=nope");
    let res = page(&app, &ann, &entry).await;
    assert_eq!(res.status, 400);
    assert!(String::from_utf8_lossy(&res.body).contains(">id: "));
    app.stop().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn signing_in_again_ends_the_session_before_and_a_key_keeps_twenty() {
    let app = spawn_app().await;
    let first = session_cookie(&sign_in(&app, &app.personal_key(ANN)).await);
    assert_eq!(page(&app, &first, "/dashboard/review").await.status, 200);
    // The same browser signs in again (as after a link from another site): the old token ends.
    let again = app
        .client
        .send(
            Request::new("POST", "/dashboard/sign-in")
                .header("Content-Type", "application/x-www-form-urlencoded")
                .header("Cookie", &first)
                .raw(format!("key={}", app.personal_key(ANN)).into_bytes()),
        )
        .await;
    assert_eq!(again.status, 303);
    let second = session_cookie(&again);
    assert_ne!(second, first);
    assert_eq!(page(&app, &first, "/dashboard/review").await.status, 303);
    assert_eq!(page(&app, &second, "/dashboard/review").await.status, 200);
    // Other browsers signing in: at most 20 live sessions for one key, the oldest ending.
    for _ in 0..25 {
        assert_eq!(sign_in(&app, &app.personal_key(ANN)).await.status, 303);
    }
    assert_eq!(
        app.count("SELECT count(*) AS n FROM dashboard_sessions")
            .await,
        20
    );
    assert_eq!(
        page(&app, &second, "/dashboard/review").await.status,
        303,
        "the oldest ended"
    );
    // An unknown page of the dashboard is a page, with the dashboard's headers.
    let res = page(&app, "", "/dashboard/nowhere").await;
    assert_eq!(res.status, 404);
    assert_eq!(res.header("cache-control"), Some("no-store"));
    assert!(res.header("content-security-policy").is_some());
    app.stop().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn over_https_the_session_cookie_is_secure() {
    // Behind the proxy the operator named (the tests connect from 127.0.0.1), which says the
    // browser came over HTTPS; from anyone else the same header is not believed.
    let proxied = fleetdesk_tests::spawn_app_with(fleetdesk_tests::AppOptions {
        trusted_proxies: vec!["127.0.0.1".parse().expect("ip")],
        ..Default::default()
    })
    .await;
    let direct = spawn_app().await;
    for (app, secure) in [(&proxied, true), (&direct, false)] {
        let res = app
            .client
            .send(
                Request::new("POST", "/dashboard/sign-in")
                    .header("Content-Type", "application/x-www-form-urlencoded")
                    .header("X-Forwarded-Proto", "https")
                    .raw(format!("key={}", app.personal_key(ANN)).into_bytes()),
            )
            .await;
        assert_eq!(res.status, 303, "{}", res.text());
        let set = res.header("set-cookie").expect("the session cookie");
        assert_eq!(set.contains("; Secure"), secure, "{set}");
        assert_eq!(res.header("location"), Some("/dashboard/"));
    }
    proxied.stop().await;
    direct.stop().await;
}

/// A page's whole HTML (`Response::text` keeps only its start).
fn html_of(res: &Response) -> String {
    String::from_utf8_lossy(&res.body).into_owned()
}

/// A form of the dashboard sent as the browser sends it: the session's token, a fresh
/// Idempotency-Key, the page to go back to; `fields` url-encoded already.
async fn act(app: &TestApp, cookie: &str, csrf: &str, path: &str, fields: &str) -> Response {
    let form = format!(
        "{fields}&_csrf={csrf}&_idem=dashboard-{}&_back=%2Fdashboard%2Fwebhooks&_done=Done.",
        uuid::Uuid::new_v4()
    );
    let own = app.base.clone();
    form_post(app, cookie, path, &form, Some(&own)).await
}

#[tokio::test(flavor = "multi_thread")]
async fn webhooks_are_registered_managed_and_replayed_from_the_dashboard() {
    let app = spawn_app().await;
    let cookie = session_cookie(&sign_in(&app, &app.personal_key(ANN)).await);
    let list = page(&app, &cookie, "/dashboard/webhooks").await;
    assert_eq!(list.status, 200, "{}", html_of(&list));
    let html = html_of(&list);
    assert!(html.contains("No endpoint yet."), "{html}");
    assert!(html.contains(r#"value="post.published_differs""#), "{html}");
    let csrf = csrf_of(&html);

    // Registering shows the secret on the page the form leads to, once, never stored in a
    // cookie; the list shows the endpoint without it.
    let ws = app.workspace_id("Taiwan");
    let fields = format!(
        "workspace_id={ws}&url=https%3A%2F%2Fhooks.acme.test%2Ffleet&description=ops\
         &types%5B%5D=task.opened&types%5B%5D=post.published_differs"
    );
    let made = act(&app, &cookie, &csrf, "/dashboard/act/webhooks", &fields).await;
    assert_eq!(made.status, 200, "{}", html_of(&made));
    assert_eq!(made.header("cache-control"), Some("no-store"));
    assert!(
        made.header("set-cookie")
            .is_none_or(|c| !c.contains("whsec_"))
    );
    let shown = html_of(&made);
    let at = shown.find("whsec_").expect("the secret is shown");
    let secret: String = shown[at..].chars().take_while(|c| *c != '<').collect();
    assert!(
        fleetdesk_webhooks::WebhookSecret::parse(&secret).is_ok(),
        "{secret}"
    );
    let listed = ok(&app
        .client
        .get(&format!("{USER}/webhooks"), &app.personal_key(ANN))
        .await);
    let e = &listed["endpoints"][0];
    assert_eq!(e["types"], json!(["post.published_differs", "task.opened"]));
    assert_eq!(e["description"], "ops");
    let id = e["id"].as_str().unwrap().to_owned();
    let html = html_of(&page(&app, &cookie, "/dashboard/webhooks").await);
    assert!(html.contains("https://hooks.acme.test/fleet"), "{html}");
    assert!(!html.contains(&secret), "the list never shows the secret");

    // Turned off and on by its form.
    let update = format!("/dashboard/act/webhooks/{id}");
    let off = act(&app, &cookie, &csrf, &update, "enabled%3Abool=false").await;
    assert_eq!(off.status, 303, "{}", off.text());
    let enabled = |on: bool| {
        format!("SELECT count(*) AS n FROM webhook_endpoints WHERE id = '{id}' AND enabled = {on}")
    };
    assert_eq!(app.count(&enabled(false)).await, 1);
    act(&app, &cookie, &csrf, &update, "enabled%3Abool=true").await;
    assert_eq!(app.count(&enabled(true)).await, 1);

    // A delivery in the log (its host does not resolve: no answer), replayed from it.
    person_post(
        &app,
        ANN,
        "/tasks",
        json!({"kind": "other", "title": "Fix the bio", "target": {"type": "slot", "code": "TW-T001"}}),
    )
    .await;
    app.ctx
        .webhooks
        .deliver_round(Timestamp::now, || 500)
        .await
        .expect("a round");
    let log = page(&app, &cookie, &format!("/dashboard/webhooks/{id}")).await;
    assert_eq!(log.status, 200, "{}", html_of(&log));
    let html = html_of(&log);
    assert!(
        html.contains("task.opened") && html.contains("no answer"),
        "{html}"
    );
    let tried = "SELECT count(*) AS n FROM webhook_deliveries WHERE attempts = 1";
    assert_eq!(app.count(tried).await, 1);
    let delivery: String = {
        let at = html
            .find(r#"name="delivery_id" value=""#)
            .expect("a replay form")
            + 26;
        html[at..at + 36].to_owned()
    };
    let replay = format!("/dashboard/act/webhooks/{id}/replay");
    let res = act(
        &app,
        &cookie,
        &csrf,
        &replay,
        &format!("delivery_id={delivery}"),
    )
    .await;
    assert_eq!(res.status, 303, "{}", html_of(&res));
    let fresh = format!(
        "SELECT count(*) AS n FROM webhook_deliveries WHERE id = '{delivery}' AND attempts = 0"
    );
    assert_eq!(app.count(&fresh).await, 1, "a replay starts a new series");

    // Rotating shows the new secret once; deleting removes the endpoint.
    let rotated = act(
        &app,
        &cookie,
        &csrf,
        &format!("/dashboard/act/webhooks/{id}/rotate"),
        "",
    )
    .await;
    assert_eq!(rotated.status, 200, "{}", html_of(&rotated));
    assert!(html_of(&rotated).contains("whsec_") && !html_of(&rotated).contains(&secret));
    let gone = act(
        &app,
        &cookie,
        &csrf,
        &format!("/dashboard/act/webhooks/{id}/delete"),
        "",
    )
    .await;
    assert_eq!(gone.status, 303, "{}", gone.text());
    assert_eq!(
        app.count("SELECT count(*) AS n FROM webhook_endpoints")
            .await,
        0
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_post_published_otherwise_than_approved_is_shown_side_by_side() {
    let app = spawn_app().await;
    let id = draft(&app, "Evening rain on the bridge", "t", &[]).await;
    person_post(
        &app,
        ANN,
        &format!("/posts/{id}/transition"),
        json!({"to": "approved"}),
    )
    .await;
    agent_post(
        &app,
        "/posts/report",
        json!({"posts": [{"code": "TW-T001", "status": "published", "post_id": id,
            "permalink": "https://t.net/p/1", "body": "Evening rain on the old bridge"}]}),
    )
    .await;
    let cookie = session_cookie(&sign_in(&app, &app.personal_key(ANN)).await);
    for path in [
        "/dashboard/today".to_owned(),
        format!("/dashboard/posts/{id}"),
    ] {
        let res = page(&app, &cookie, &path).await;
        assert_eq!(res.status, 200, "{path}: {}", html_of(&res));
        let html = html_of(&res);
        assert!(
            html.contains("Published otherwise than approved"),
            "{path}: {html}"
        );
        assert!(html.contains("<ins>old </ins>bridge"), "{path}: {html}");
    }
    let post = html_of(&page(&app, &cookie, &format!("/dashboard/posts/{id}")).await);
    assert!(post.contains("What was approved"), "{post}");
}

/// The research page suggests the account codes of the newest 200 personas and takes any code
/// typed: with 200 personas Mia's TW-T001 is suggested; with 201 (Mia the oldest) it is not,
/// the page says to type it, and the pick made with it typed is made all the same.
#[tokio::test(flavor = "multi_thread")]
async fn the_research_page_reaches_accounts_past_the_first_200_personas() {
    let app = spawn_app().await;
    let research = app.finished_research("op1", &["111111"]).await;
    let cookie = session_cookie(&sign_in(&app, &app.personal_key(ANN)).await);
    // Mia is the oldest persona; the rest of the organization's personas come to 200.
    app.sql("UPDATE personas SET created_at = '2000-01-01T00:00:00Z' WHERE name = 'Mia'")
        .await;
    let acme = "SELECT count(*) AS n FROM personas p JOIN workspaces w ON w.id = p.workspace_id \
                JOIN organizations o ON o.id = w.organization_id \
                WHERE o.name = 'Acme' AND w.archived_at IS NULL";
    let more = |n: i64, from: i64| {
        format!(
            "INSERT INTO personas (workspace_id, project_id, name, status, speech_rules, \
             forbidden) SELECT workspace_id, project_id, 'Extra ' || g, status, '{{}}', '{{}}' \
             FROM personas, generate_series({from}, {}) g WHERE name = 'Mia'",
            from + n - 1
        )
    };
    let have = app.count(acme).await;
    app.sql(&more(200 - have, 1)).await;
    assert_eq!(app.count(acme).await, 200);
    let suggested = r#"<option value="TW-T001">"#;
    let hint = "type any other account";
    let html = html_of(&page(&app, &cookie, "/dashboard/research").await);
    assert!(
        html.contains(suggested),
        "TW-T001 is suggested at 200 personas"
    );
    assert!(!html.contains(hint));
    // One past: Mia is the 201st.
    app.sql(&more(1, 1000)).await;
    let html = html_of(&page(&app, &cookie, "/dashboard/research").await);
    assert!(!html.contains(suggested), "not suggested at 201 personas");
    assert!(html.contains(hint), "the page says to type it");
    assert!(
        html.contains(r#"name="code" required maxlength="40""#),
        "the code is typed"
    );
    let res = act(
        &app,
        &cookie,
        &csrf_of(&html),
        "/dashboard/act/ad-picks",
        &format!("research_id={research}&item=111111&code=TW-T001"),
    )
    .await;
    assert_eq!(res.status, 303, "{}", res.text());
    assert_eq!(
        app.count(&format!(
            "SELECT count(*) AS n FROM ad_picks p JOIN account_slots s ON s.id = p.slot_id \
             WHERE p.research_id = '{research}' AND s.code = 'TW-T001'"
        ))
        .await,
        1
    );
}
