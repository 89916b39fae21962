//! Agent API: the media library — GET /media (list_media) with its filters, sorts, limits and
//! tenant walls, the signed file links it hands out (no key, HTTP Range), and the media tools
//! over MCP.

use crate::uploads::{
    API, CHUNK, SINGLE_MAX, assert_error, assert_error_in, assert_field_in, assert_status,
    big_video, faststart_mp4, fetch, item, items, jpeg, list, new_upload, path_of, png, put,
    upload_chunked, upload_file, webp,
};
use fleetdesk_api::links::{Links, Variant};
use fleetdesk_tests::client::Request;
use fleetdesk_tests::{TestApp, spawn_app};
use serde_json::{Value, json};
use std::collections::BTreeSet;
use uuid::Uuid;

// ---------------------------------------------------------------------------------------------
// helpers

fn ids(list: &[Value]) -> Vec<String> {
    list.iter()
        .map(|m| m["id"].as_str().expect("id").to_owned())
        .collect()
}

fn id_of(v: &Value) -> String {
    v["media_id"].as_str().expect("media_id").to_owned()
}

/// The ids listed for `query`, as a set.
async fn listed(app: &TestApp, key: &str, query: &str) -> BTreeSet<String> {
    ids(&items(app, key, query).await).into_iter().collect()
}

fn set(ids: &[&String]) -> BTreeSet<String> {
    ids.iter().map(|s| (*s).clone()).collect()
}

/// An image for TW-T001 (Mia, project beauty) with these upload fields.
async fn image(app: &TestApp, fields: Value, salt: &[u8]) -> String {
    let mut body = json!({"code": "TW-T001"});
    for (k, v) in fields.as_object().expect("fields") {
        body[k] = v.clone();
    }
    id_of(&upload_file(app, &app.agent_key("op1"), &body, png(4, 4, salt)).await)
}

/// A draft on TW-T001 carrying library items.
async fn draft_with(app: &TestApp, body: &str, media: &[&String]) {
    let res = app
        .client
        .post(
            &format!("{API}/drafts"),
            &app.agent_key("op1"),
            &json!({"code": "TW-T001", "body": body, "media_ids": media}),
        )
        .await;
    assert_eq!(res.status, 201, "POST /drafts: {}", res.text());
}

/// The service's link-signing key, to make links the service would make.
pub(crate) async fn link_key(app: &TestApp) -> Vec<u8> {
    use diesel_async::RunQueryDsl;
    #[derive(diesel::QueryableByName)]
    struct Secret {
        #[diesel(sql_type = diesel::sql_types::Bytea)]
        value: Vec<u8>,
    }
    let row: Secret =
        diesel::sql_query("SELECT value FROM service_secrets WHERE name = 'link_signing'")
            .get_result(&mut app.connect().await)
            .await
            .expect("the link-signing key");
    row.value
}

/// The `e` of a link.
fn expiry(url: &str) -> i64 {
    url.split(['?', '&'])
        .find_map(|p| p.strip_prefix("e="))
        .and_then(|e| e.parse().ok())
        .unwrap_or_else(|| panic!("no e in {url}"))
}

// ---------------------------------------------------------------------------------------------
// The list

#[tokio::test(flavor = "multi_thread")]
async fn an_item_lists_with_every_field_and_links_valid_a_day() {
    let app = spawn_app().await;
    let key = app.agent_key("op1");
    let img = upload_file(
        &app,
        &key,
        &json!({"code": "TW-T001", "caption": "grey cat", "character": "momo",
                "tags": ["cat", "home"]}),
        webp(300, 200, b"fields"),
    )
    .await;
    let video_body = json!({"code": "TW-T001", "mime_type": "video/mp4",
                            "bytes": faststart_mp4().len()});
    let up = new_upload(&app, &key, &video_body).await;
    assert_status(
        &put(&app, up["poster_url"].as_str().unwrap(), jpeg(64, 48, b"p")).await,
        200,
    );
    let vid = put(&app, up["upload_url"].as_str().unwrap(), faststart_mp4()).await;
    assert_status(&vid, 200);
    let vid = vid.json();

    let res = list(&app, &key, "").await;
    assert_status(&res, 200);
    let body = res.json();
    assert_eq!(body["links_expire_in_seconds"], 86_400);
    let keys: BTreeSet<&str> = body
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    assert_eq!(keys, BTreeSet::from(["media", "links_expire_in_seconds"]));
    let media = body["media"].as_array().unwrap();
    // Newest first.
    assert_eq!(ids(media), vec![id_of(&vid), id_of(&img)]);

    let now = jiff::Timestamp::now().as_second();
    for m in media {
        let members: BTreeSet<&str> = m.as_object().unwrap().keys().map(String::as_str).collect();
        assert_eq!(
            members,
            BTreeSet::from([
                "id",
                "kind",
                "caption",
                "tags",
                "project",
                "character",
                "mime_type",
                "bytes",
                "width",
                "height",
                "duration_ms",
                "used_count",
                "created_at",
                "url",
                "thumb_url"
            ]),
            "{m}"
        );
        let id = m["id"].as_str().unwrap();
        let url = m["url"].as_str().unwrap();
        let prefix = format!("{}/files/{id}/file?e=", app.base);
        assert!(url.starts_with(&prefix) && url.contains("&s="), "{url}");
        let e = expiry(url);
        assert!(
            e - now >= 86_400 && e - now <= 86_400 + 3_600 + 5,
            "the link lives {} s",
            e - now
        );
        let thumb = m["thumb_url"].as_str().expect("thumb_url");
        assert!(
            thumb.starts_with(&format!("{}/files/{id}/thumb?e=", app.base)),
            "{thumb}"
        );
        let created: jiff::Timestamp = m["created_at"].as_str().unwrap().parse().unwrap();
        assert!((now - created.as_second()).abs() < 60, "{m}");
        assert!(m["created_at"].as_str().unwrap().ends_with('Z'));
        assert_eq!(m["project"], "beauty");
        assert_eq!(m["used_count"], 0);
    }
    let image = &media[1];
    assert_eq!(image["kind"], "image");
    assert_eq!(image["mime_type"], "image/webp");
    assert_eq!(image["caption"], "grey cat");
    assert_eq!(image["tags"], json!(["cat", "home"]));
    assert_eq!(image["character"], "momo");
    assert_eq!(image["width"], 300);
    assert_eq!(image["height"], 200);
    assert!(image["duration_ms"].is_null());
    assert_eq!(image["bytes"], webp(300, 200, b"fields").len());
    let video = &media[0];
    assert_eq!(video["kind"], "video");
    assert_eq!(video["mime_type"], "video/mp4");
    assert!(video["caption"].is_null());
    assert_eq!(video["tags"], json!([]));
    assert!(video["character"].is_null());
    assert_eq!(video["duration_ms"], 1520);
    assert_eq!(video["width"], 64);
    assert_eq!(video["height"], 48);
    assert_eq!(video["bytes"], faststart_mp4().len());
}

#[tokio::test(flavor = "multi_thread")]
async fn filters_narrow_the_list() {
    let app = spawn_app().await;
    let key = app.agent_key("op1");
    let cat = image(
        &app,
        json!({"caption": "Grey cat 貓咪 at home", "tags": ["Cat", "home"], "character": "momo"}),
        b"cat",
    )
    .await;
    let sale = image(
        &app,
        json!({"caption": "50% off_sale", "tags": ["deal"], "character": "lulu"}),
        b"sale",
    )
    .await;
    let plain = image(&app, json!({"caption": "50 percent offsale"}), b"plain").await;
    let video = id_of(
        &upload_file(
            &app,
            &key,
            &json!({"code": "TW-T001", "mime_type": "video/mp4",
                    "bytes": faststart_mp4().len(), "tags": ["cats", "a%b"]}),
            faststart_mp4(),
        )
        .await,
    );
    let all = set(&[&cat, &sale, &plain, &video]);
    assert_eq!(listed(&app, &key, "").await, all);

    let cases: Vec<(&str, BTreeSet<String>)> = vec![
        ("character=momo", set(&[&cat])),
        ("character=lulu", set(&[&sale])),
        ("character=kiki", set(&[])),
        // Tags: case-insensitive, but whole.
        ("tag=cat", set(&[&cat])),
        ("tag=CAT", set(&[&cat])),
        ("tag=cats", set(&[&video])),
        ("tag=ca", set(&[])),
        ("kind=video", set(&[&video])),
        ("kind=image", set(&[&cat, &sale, &plain])),
        // q: a piece of the caption or of a tag, any case, CJK too.
        ("q=grey", set(&[&cat])),
        ("q=GREY%20CAT", set(&[&cat])),
        ("q=%E8%B2%93", set(&[&cat])),
        ("q=cat", set(&[&cat, &video])),
        ("q=HOM", set(&[&cat])),
        ("q=dea", set(&[&sale])),
        // % and _ are themselves, not patterns.
        ("q=%25", set(&[&sale, &video])),
        ("q=50%25", set(&[&sale])),
        ("q=_", set(&[&sale])),
        ("q=off_", set(&[&sale])),
        ("q=a%25b", set(&[&video])),
        ("q=%5C", set(&[])),
        ("q=nothing", set(&[])),
        // Filters combine.
        ("kind=image&q=50", set(&[&sale, &plain])),
        ("kind=video&tag=cat", set(&[])),
        ("character=momo&tag=home&q=cat&kind=image", set(&[&cat])),
        ("project=beauty", all.clone()),
    ];
    for (query, want) in cases {
        assert_eq!(listed(&app, &key, query).await, want, "GET /media?{query}");
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn every_query_parameter_at_its_limit_and_one_past() {
    let app = spawn_app().await;
    let key = app.agent_key("op1");
    image(&app, json!({"caption": "x"}), b"x").await;
    for query in [
        format!("q={}", "q".repeat(100)),
        format!("q={}", "%E8%B2%93".repeat(100)),
        format!("tag={}", "t".repeat(30)),
        format!("character={}", "c".repeat(24)),
        format!("project={}", "beauty"),
        "limit=1".to_owned(),
        "limit=100".to_owned(),
        "sort=newest".to_owned(),
        "sort=most_used".to_owned(),
        "kind=image".to_owned(),
    ] {
        let res = list(&app, &key, &query).await;
        assert_eq!(res.status, 200, "{query}: {}", res.text());
    }
    let bad = [
        (format!("q={}", "q".repeat(101)), "q"),
        ("q=".to_owned(), "q"),
        (format!("tag={}", "t".repeat(31)), "tag"),
        ("tag=".to_owned(), "tag"),
        (format!("character={}", "c".repeat(25)), "character"),
        (format!("project={}", "p".repeat(81)), "project"),
        ("limit=0".to_owned(), "limit"),
        ("limit=101".to_owned(), "limit"),
        ("limit=-1".to_owned(), "limit"),
        ("limit=ten".to_owned(), "limit"),
        ("kind=gif".to_owned(), "kind"),
        ("sort=oldest".to_owned(), "sort"),
    ];
    for (query, field) in &bad {
        let res = list(&app, &key, query).await;
        assert_field_in(query, &res, 400, "invalid_request", field);
    }
    // A well-formed name of no project of the workspace (another organization's "general"):
    // not found.
    for query in ["project=nope", "project=general"] {
        let res = list(&app, &key, query).await;
        assert_field_in(query, &res, 404, "not_found", "project");
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn the_list_holds_30_by_default_and_at_most_100() {
    let app = spawn_app().await;
    let key = app.agent_key("op1");
    // 101 items, one second apart, g = 1 the newest.
    app.sql(
        "INSERT INTO media (workspace_id, project_id, kind, mime_type, bytes, sha256,
                            storage_key, part_bytes, source, caption, created_at)
         SELECT p.workspace_id, p.id, 'image', 'image/png', 10, md5(g::text), 'k', 10, 'upload',
                'item ' || g, now() - g * interval '1 second'
         FROM generate_series(1, 101) g, projects p JOIN workspaces w ON w.id = p.workspace_id
         WHERE p.name = 'beauty' AND w.name = 'Taiwan'",
    )
    .await;
    let captions = |list: &[Value]| -> Vec<String> {
        list.iter()
            .map(|m| m["caption"].as_str().unwrap().to_owned())
            .collect()
    };
    let default = items(&app, &key, "").await;
    assert_eq!(default.len(), 30);
    let want: Vec<String> = (1..=30).map(|g| format!("item {g}")).collect();
    assert_eq!(captions(&default), want);
    assert_eq!(items(&app, &key, "limit=1").await.len(), 1);
    let most = items(&app, &key, "limit=100").await;
    assert_eq!(most.len(), 100);
    assert_eq!(captions(&most)[99], "item 100");
}

#[tokio::test(flavor = "multi_thread")]
async fn most_used_sorts_by_the_posts_using_an_item() {
    let app = spawn_app().await;
    let key = app.agent_key("op1");
    let least = image(&app, json!({}), b"least").await;
    let middle = image(&app, json!({}), b"middle").await;
    let most = image(&app, json!({}), b"most").await;
    draft_with(&app, "first post", &[&middle, &most]).await;
    draft_with(&app, "second post", &[&most]).await;
    // Attached through a draft's media endpoint too.
    let res = app
        .client
        .post(
            &format!("{API}/drafts"),
            &key,
            &json!({"code": "TW-T001", "body": "third post"}),
        )
        .await;
    assert_status(&res, 201);
    let post = res.json()["draft"]["id"].as_str().unwrap().to_owned();
    let res = app
        .client
        .post(
            &format!("{API}/drafts/{post}/media"),
            &key,
            &json!({"media_ids": [most]}),
        )
        .await;
    assert_status(&res, 200);

    let newest = items(&app, &key, "").await;
    assert_eq!(
        ids(&newest),
        vec![most.clone(), middle.clone(), least.clone()]
    );
    let by_use = items(&app, &key, "sort=most_used").await;
    assert_eq!(
        ids(&by_use),
        vec![most.clone(), middle.clone(), least.clone()]
    );
    let counts: Vec<i64> = by_use
        .iter()
        .map(|m| m["used_count"].as_i64().unwrap())
        .collect();
    assert_eq!(counts, vec![3, 1, 0]);
    assert_eq!(
        app.count(&format!(
            "SELECT count(*) AS n FROM post_media WHERE media_id = '{most}'"
        ))
        .await,
        3
    );

    // A newer unused item goes first by date, last by use; ties keep the newest first.
    let fresh = image(&app, json!({}), b"fresh").await;
    let by_use = items(&app, &key, "sort=most_used").await;
    assert_eq!(
        ids(&by_use),
        vec![most.clone(), middle.clone(), fresh.clone(), least.clone()]
    );
    let newest = items(&app, &key, "sort=newest").await;
    assert_eq!(ids(&newest), vec![fresh, most.clone(), middle, least]);
    let top = items(&app, &key, "sort=most_used&limit=1").await;
    assert_eq!(ids(&top), vec![most]);
}

#[tokio::test(flavor = "multi_thread")]
async fn an_agent_sees_its_workspaces_projects_and_the_shared_items_only() {
    let app = spawn_app().await;
    let op1 = app.agent_key("op1");
    let op2 = app.agent_key("op2");
    let jp1 = app.agent_key("jp1");
    let other1 = app.agent_key("other1");
    let salt = |s: &str| png(3, 3, s.as_bytes());
    let mine = id_of(&upload_file(&app, &op1, &json!({"code": "TW-T001"}), salt("mine")).await);
    let food = id_of(&upload_file(&app, &op2, &json!({"code": "TW-T002"}), salt("food")).await);
    // op1 may put a file in food, where it has no persona: the item is food's, and op1 still
    // finds it (the library covers every project of the workspace, Authentication 6).
    let op1_food = id_of(
        &upload_file(
            &app,
            &op1,
            &json!({"code": "TW-T001", "project": "food"}),
            salt("op1 food"),
        )
        .await,
    );
    let shared = id_of(&upload_file(&app, &op2, &json!({"code": "TW-T002"}), salt("shared")).await);
    app.sql(&format!(
        "UPDATE media SET project_id = NULL WHERE id = '{shared}'"
    ))
    .await;
    let japan = id_of(&upload_file(&app, &jp1, &json!({"code": "JP-T001"}), salt("jp")).await);
    let other = id_of(&upload_file(&app, &other1, &json!({"code": "TW-T001"}), salt("o")).await);

    let taiwan = set(&[&mine, &food, &op1_food, &shared]);
    assert_eq!(listed(&app, &op1, "").await, taiwan);
    assert_eq!(listed(&app, &op2, "").await, taiwan);
    assert_eq!(listed(&app, &jp1, "").await, set(&[&japan]));
    assert_eq!(listed(&app, &other1, "").await, set(&[&other]));
    // Naming a project narrows to it plus the shared items, whoever's personas are there.
    let food_and_shared = set(&[&food, &op1_food, &shared]);
    assert_eq!(listed(&app, &op1, "project=food").await, food_and_shared);
    assert_eq!(listed(&app, &op2, "project=food").await, food_and_shared);
    assert_eq!(
        listed(&app, &op2, "project=beauty").await,
        set(&[&mine, &shared])
    );
    // Japan's "beauty" is its own.
    assert_eq!(listed(&app, &jp1, "project=beauty").await, set(&[&japan]));
    let shared_item = item(&app, &op1, &json!(shared)).await;
    assert!(shared_item["project"].is_null(), "{shared_item}");
    // The shared item is shared by every filter that allows it.
    assert_eq!(listed(&app, &op1, "kind=image").await, taiwan);
    assert_eq!(listed(&app, &op1, "kind=video").await, set(&[]));

    // Archived items drop out, shared or not.
    app.sql(&format!(
        "UPDATE media SET archived_at = now() WHERE id IN ('{mine}', '{shared}')"
    ))
    .await;
    assert_eq!(listed(&app, &op1, "").await, set(&[&food, &op1_food]));
    assert_eq!(listed(&app, &op2, "").await, set(&[&food, &op1_food]));

    // The community agent has no drafts scope; no key is no access.
    assert_error(
        &list(&app, &app.agent_key("bot"), "").await,
        403,
        "forbidden",
    );
    let res = app
        .client
        .send(Request::new("GET", &format!("{API}/media")))
        .await;
    assert_error(&res, 401, "unauthorized");
}

// ---------------------------------------------------------------------------------------------
// Signed links

#[tokio::test(flavor = "multi_thread")]
async fn a_signed_link_needs_no_key_and_refuses_any_change() {
    let app = spawn_app().await;
    let key = app.agent_key("op1");
    let file = png(4, 4, b"signed");
    let a = image(&app, json!({}), b"signed").await;
    let b = image(&app, json!({}), b"other").await;
    let item_a = item(&app, &key, &json!(a)).await;
    let url = item_a["url"].as_str().unwrap().to_owned();
    let got = fetch(&app, &url, None).await;
    assert_status(&got, 200);
    assert_eq!(got.body, file);
    assert_eq!(got.header("content-type"), Some("image/png"));
    assert_eq!(got.header("accept-ranges"), Some("bytes"));
    let thumb = fetch(&app, item_a["thumb_url"].as_str().unwrap(), None).await;
    assert_eq!(thumb.body, file);

    let sig = url.rsplit("&s=").next().unwrap();
    let flipped = {
        let mut chars: Vec<char> = sig.chars().collect();
        chars[0] = if chars[0] == 'A' { 'B' } else { 'A' };
        chars.into_iter().collect::<String>()
    };
    let e = expiry(&url);
    let tampered = [
        ("signature", url.replace(sig, &flipped)),
        ("short signature", url.replace(sig, &sig[..sig.len() - 2])),
        ("no signature", url.replace(&format!("&s={sig}"), "")),
        ("no expiry", url.replace(&format!("e={e}&"), "")),
        (
            "later expiry",
            url.replace(&format!("e={e}"), &format!("e={}", e + 3600)),
        ),
        ("other item", url.replace(&a, &b)),
        ("other variant", url.replace("/file?", "/thumb?")),
    ];
    for (case, bad) in &tampered {
        let res = fetch(&app, bad, None).await;
        assert_error_in(case, &res, 403, "forbidden");
    }

    // A link the service itself signed: expired, or for an item that does not exist.
    let links = Links::new(&link_key(&app).await);
    let now = jiff::Timestamp::now().as_second();
    let a_id = Uuid::parse_str(&a).unwrap();
    let expired = links.url(&app.base, a_id, Variant::File, now - 1);
    assert_error(&fetch(&app, &expired, None).await, 403, "forbidden");
    let fresh = links.url(&app.base, a_id, Variant::File, now + 120);
    assert_eq!(fetch(&app, &fresh, None).await.body, file);
    let nobody = links.url(&app.base, Uuid::new_v4(), Variant::File, now + 120);
    assert_error(&fetch(&app, &nobody, None).await, 404, "not_found");
    // A video without a poster has no thumbnail.
    let video = id_of(
        &upload_file(
            &app,
            &key,
            &json!({"code": "TW-T001", "mime_type": "video/mp4", "bytes": faststart_mp4().len()}),
            faststart_mp4(),
        )
        .await,
    );
    let v_id = Uuid::parse_str(&video).unwrap();
    let thumb = links.url(&app.base, v_id, Variant::Thumb, now + 120);
    assert_error(&fetch(&app, &thumb, None).await, 404, "not_found");
}

#[tokio::test(flavor = "multi_thread")]
async fn ranges_of_a_small_file() {
    let app = spawn_app().await;
    let key = app.agent_key("op1");
    let file = faststart_mp4();
    let size = file.len();
    let id = upload_file(
        &app,
        &key,
        &json!({"code": "TW-T001", "mime_type": "video/mp4", "bytes": size}),
        file.clone(),
    )
    .await;
    let url = item(&app, &key, &id["media_id"]).await["url"]
        .as_str()
        .unwrap()
        .to_owned();

    let whole = fetch(&app, &url, None).await;
    assert_status(&whole, 200);
    assert_eq!(
        whole.header("content-length"),
        Some(size.to_string().as_str())
    );
    assert!(whole.header("content-range").is_none());
    assert!(whole.header("x-request-id").is_some_and(|v| !v.is_empty()));

    let cases: Vec<(String, usize, usize)> = vec![
        ("bytes=0-9".into(), 0, 10),
        ("bytes=10-19".into(), 10, 20),
        (format!("bytes={}-", size - 1), size - 1, size),
        ("bytes=-5".into(), size - 5, size),
        (format!("bytes=-{}", size + 100), 0, size),
        (format!("bytes=100-{}", size + 100), 100, size),
        ("bytes=0-".into(), 0, size),
    ];
    for (range, start, end) in cases {
        let res = fetch(&app, &url, Some(&range)).await;
        assert_eq!(res.status, 206, "{range}: {}", res.text());
        assert_eq!(
            res.header("content-range"),
            Some(format!("bytes {start}-{}/{size}", end - 1).as_str()),
            "{range}"
        );
        assert_eq!(res.body, file[start..end], "{range}");
        assert!(res.header("x-request-id").is_some(), "{range}");
        assert_eq!(res.header("content-type"), Some("video/mp4"));
    }
    for range in [
        format!("bytes={size}-"),
        format!("bytes={}-{}", size + 1, size + 9),
        "bytes=-0".into(),
    ] {
        let res = fetch(&app, &url, Some(&range)).await;
        assert_error_in(&range, &res, 416, "range_not_satisfiable");
        assert_eq!(
            res.header("content-range"),
            Some(format!("bytes */{size}").as_str()),
            "{range}"
        );
    }
    // What HTTP lets a server ignore: the whole file.
    for range in ["bytes=5-1", "items=0-9", "bytes=0-1,4-5"] {
        let res = fetch(&app, &url, Some(range)).await;
        assert_eq!(res.status, 200, "{range}");
        assert_eq!(res.body, file, "{range}");
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn ranges_across_the_parts_of_a_chunked_video() {
    let app = spawn_app().await;
    let key = app.agent_key("op1");
    let video = big_video(CHUNK * 2 + 5_000, b"parts");
    let size = video.len();
    let done = upload_chunked(
        &app,
        &key,
        &json!({"code": "TW-T001", "mime_type": "video/mp4", "bytes": size}),
        &video,
    )
    .await;
    let url = item(&app, &key, &done["media_id"]).await["url"]
        .as_str()
        .unwrap()
        .to_owned();
    let cases = [
        (0, 10),
        (CHUNK - 5, CHUNK + 5),
        (CHUNK - 1, CHUNK * 2 + 1),
        (CHUNK, CHUNK + 1),
        (CHUNK * 2 - 1, size),
        (size - 5, size),
        (123, SINGLE_MAX + 7),
    ];
    for (start, end) in cases {
        let range = format!("bytes={start}-{}", end - 1);
        let res = fetch(&app, &url, Some(&range)).await;
        assert_eq!(res.status, 206, "{range}: {}", res.text());
        assert_eq!(
            res.header("content-range"),
            Some(format!("bytes {start}-{}/{size}", end - 1).as_str())
        );
        assert_eq!(res.body.len(), end - start, "{range}");
        assert!(res.body == video[start..end], "{range}: other bytes");
    }
    let res = fetch(&app, &url, Some("bytes=-5")).await;
    assert_eq!(res.body, video[size - 5..]);
    let res = fetch(&app, &url, Some(&format!("bytes={size}-"))).await;
    assert_error(&res, 416, "range_not_satisfiable");
    assert_eq!(
        res.header("content-range"),
        Some(format!("bytes */{size}").as_str())
    );
    let whole = fetch(&app, &url, None).await;
    assert_status(&whole, 200);
    assert!(whole.body == video);
}

// ---------------------------------------------------------------------------------------------
// MCP

/// `tools/call`; returns the whole JSON-RPC message.
async fn mcp_message(app: &TestApp, key: &str, name: &str, arguments: Value) -> Value {
    let call = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                      "params": {"name": name, "arguments": arguments}});
    let res = app.client.send(Request::mcp(&call).bearer(key)).await;
    assert_eq!(res.status, 200, "{name}: {}", res.text());
    res.json()
}

/// Arguments outside the tool's schema: a JSON-RPC invalid-params error carrying the REST error
/// body, naming `field`.
async fn mcp_invalid(app: &TestApp, key: &str, name: &str, arguments: Value, field: &str) {
    let msg = mcp_message(app, key, name, arguments.clone()).await;
    assert_eq!(msg["error"]["code"], -32602, "{arguments}: {msg}");
    assert_eq!(msg["error"]["data"]["code"], "invalid_request", "{msg}");
    assert_eq!(msg["error"]["data"]["field"], field, "{arguments}: {msg}");
}

/// `tools/call` answered by a tool result (success or a REST error); returns `result`.
async fn mcp_call(app: &TestApp, key: &str, name: &str, arguments: Value) -> Value {
    let msg = mcp_message(app, key, name, arguments).await;
    fleetdesk_tests::assert::tool_result(name, &msg)
}

/// Members of an object, as a set.
fn members(v: &Value) -> BTreeSet<String> {
    v.as_object().expect("object").keys().cloned().collect()
}

#[tokio::test(flavor = "multi_thread")]
async fn the_media_tools_are_listed_and_the_file_puts_are_not() {
    let app = spawn_app().await;
    let tools = |key: String| {
        let app = &app;
        async move {
            let list = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"});
            let res = app.client.send(Request::mcp(&list).bearer(&key)).await;
            assert_status(&res, 200);
            res.json()["result"]["tools"]
                .as_array()
                .expect("tools")
                .clone()
        }
    };
    let op1 = tools(app.agent_key("op1")).await;
    let names: BTreeSet<&str> = op1.iter().filter_map(|t| t["name"].as_str()).collect();
    assert!(names.contains("create_upload"), "{names:?}");
    assert!(names.contains("list_media"), "{names:?}");
    assert!(
        !names
            .iter()
            .any(|n| n.contains("chunk") || n.contains("poster")),
        "{names:?}"
    );
    let create = op1.iter().find(|t| t["name"] == "create_upload").unwrap();
    let props = members(&create["inputSchema"]["properties"]);
    for field in [
        "code",
        "platform",
        "caption",
        "character",
        "tags",
        "project",
        "bytes",
        "mime_type",
        "request_id",
    ] {
        assert!(
            props.contains(field),
            "create_upload lacks {field}: {props:?}"
        );
    }
    let list = op1.iter().find(|t| t["name"] == "list_media").unwrap();
    let props = members(&list["inputSchema"]["properties"]);
    for field in ["project", "character", "tag", "kind", "q", "sort", "limit"] {
        assert!(props.contains(field), "list_media lacks {field}: {props:?}");
    }
    let bot = tools(app.agent_key("bot")).await;
    assert!(
        !bot.iter()
            .any(|t| t["name"] == "create_upload" || t["name"] == "list_media"),
        "the community agent has no drafts scope"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn list_media_over_mcp_is_the_rest_list() {
    let app = spawn_app().await;
    let key = app.agent_key("op1");
    let cat = image(
        &app,
        json!({"caption": "貓", "tags": ["cat"], "character": "momo"}),
        b"c",
    )
    .await;
    let dog = image(&app, json!({"caption": "dog"}), b"d").await;
    let result = mcp_call(&app, &key, "list_media", json!({})).await;
    assert_eq!(result["isError"], false, "{result}");
    let rest = list(&app, &key, "").await.json();
    let strip = |mut v: Value| {
        for m in v["media"].as_array_mut().unwrap() {
            m["url"] = Value::Null;
            m["thumb_url"] = Value::Null;
        }
        v
    };
    assert_eq!(strip(result["structuredContent"].clone()), strip(rest));
    assert_eq!(
        ids(result["structuredContent"]["media"].as_array().unwrap()),
        vec![dog, cat.clone()]
    );

    let filtered = mcp_call(
        &app,
        &key,
        "list_media",
        json!({"q": "貓", "kind": "image", "limit": 5, "sort": "most_used"}),
    )
    .await;
    assert_eq!(
        ids(filtered["structuredContent"]["media"].as_array().unwrap()),
        vec![cat.clone()]
    );
    // The link works like the REST one.
    let url = filtered["structuredContent"]["media"][0]["url"]
        .as_str()
        .unwrap();
    assert_status(&fetch(&app, url, None).await, 200);

    let bad = mcp_call(&app, &key, "list_media", json!({"project": "nope"})).await;
    assert_eq!(bad["isError"], true, "{bad}");
    assert_eq!(bad["body"]["code"], "not_found");
    assert_eq!(bad["body"]["field"], "project");
    mcp_invalid(&app, &key, "list_media", json!({"limit": 101}), "limit").await;
    mcp_invalid(&app, &key, "list_media", json!({"kind": "gif"}), "kind").await;
    let denied = mcp_call(&app, &app.agent_key("bot"), "list_media", json!({})).await;
    assert_eq!(denied["isError"], true);
    assert_eq!(denied["body"]["code"], "forbidden");
}

#[tokio::test(flavor = "multi_thread")]
async fn create_upload_over_mcp_answers_the_rest_shape() {
    let app = spawn_app().await;
    let key = app.agent_key("op1");
    let args = json!({"code": "TW-T001", "mime_type": "image/png", "caption": "via mcp",
                      "tags": ["mcp"], "request_id": "mcp-up-1"});
    let result = mcp_call(&app, &key, "create_upload", args.clone()).await;
    assert_eq!(result["isError"], false, "{result}");
    let up = result["structuredContent"].clone();
    let rest = new_upload(
        &app,
        &key,
        &json!({"code": "TW-T001", "mime_type": "image/png"}),
    )
    .await;
    assert_eq!(members(&up), members(&rest));
    assert_eq!(up["mode"], "single");
    assert_eq!(up["max_bytes"], rest["max_bytes"]);
    assert_eq!(up["accepts"], rest["accepts"]);
    assert!(
        up["upload_url"].as_str().unwrap().starts_with(&format!(
            "{}{API}/uploads/{}?t=",
            app.base,
            up["upload_id"].as_str().unwrap()
        )),
        "{up}"
    );

    // The request_id is the Idempotency-Key: a resend is the same upload.
    let again = mcp_call(&app, &key, "create_upload", args).await;
    assert_eq!(again["structuredContent"], up);
    assert_eq!(app.count("SELECT count(*) AS n FROM uploads").await, 2);
    let other = mcp_call(
        &app,
        &key,
        "create_upload",
        json!({"code": "TW-T001", "request_id": "mcp-up-1"}),
    )
    .await;
    assert_eq!(other["body"]["code"], "idempotency_mismatch", "{other}");

    // The link it gave works without a key.
    let file = png(12, 12, b"mcp");
    let stored = put(&app, up["upload_url"].as_str().unwrap(), file).await;
    assert_status(&stored, 200);
    let listed = item(&app, &key, &stored.json()["media_id"]).await;
    assert_eq!(listed["caption"], "via mcp");
    assert_eq!(listed["tags"], json!(["mcp"]));

    // Chunked over MCP, and refusals as tool errors with the REST error body.
    let chunked = mcp_call(
        &app,
        &key,
        "create_upload",
        json!({"code": "TW-T001", "mime_type": "video/mp4", "bytes": SINGLE_MAX + 1}),
    )
    .await;
    let chunked = chunked["structuredContent"].clone();
    let rest = new_upload(
        &app,
        &key,
        &json!({"code": "TW-T001", "mime_type": "video/mp4", "bytes": SINGLE_MAX + 1}),
    )
    .await;
    assert_eq!(members(&chunked), members(&rest));
    assert_eq!(chunked["chunks"], 2);
    assert!(path_of(&app, chunked["chunk_url"].as_str().unwrap()).ends_with("&n="));
    for (args, code, field) in [
        (
            json!({"code": "TW-T001", "project": "nope"}),
            "not_found",
            "project",
        ),
        (
            json!({"code": "TW-T001", "character": "chef"}),
            "rejected",
            "character",
        ),
        (
            json!({"code": "TW-T001", "mime_type": "image/png", "bytes": SINGLE_MAX + 1}),
            "payload_too_large",
            "bytes",
        ),
    ] {
        let res = mcp_call(&app, &key, "create_upload", args.clone()).await;
        assert_eq!(res["isError"], true, "{args}: {res}");
        assert_eq!(res["body"]["code"], code, "{args}: {res}");
        assert_eq!(res["body"]["field"], field, "{args}: {res}");
    }
    mcp_invalid(
        &app,
        &key,
        "create_upload",
        json!({"code": "TW-T001", "tags": vec!["t"; 21]}),
        "tags",
    )
    .await;
    let res = mcp_call(&app, &key, "create_upload", json!({"code": "TW-T002"})).await;
    assert_eq!(res["body"]["code"], "forbidden", "{res}");
    assert_eq!(app.count("SELECT count(*) AS n FROM uploads").await, 4);
}
