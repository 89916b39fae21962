//! Agent API: uploads — POST /uploads and the three token PUTs (whole file, chunks, poster),
//! over the standard tenant. The helpers here (files, upload calls, raw requests) are shared
//! with the media library tests.

use fleetdesk_api::Config;
pub(crate) use fleetdesk_tests::assert::{assert_error, assert_error_in};
use fleetdesk_tests::client::{Client, Request, read_response};
use fleetdesk_tests::{Response, TestApp, spawn_app};
use serde_json::{Value, json};
use sha2::{Digest, Sha256};
use std::collections::BTreeSet;
use uuid::Uuid;

pub(crate) const API: &str = "/api/agent/v1";
/// Every chunk but the last.
pub(crate) const CHUNK: usize = 3_145_728;
/// The largest single file and the largest poster.
pub(crate) const SINGLE_MAX: usize = 4_194_304;

const FASTSTART_MP4: &[u8] = include_bytes!("../../crates/media/tests/fixtures/faststart.mp4");
const MOOV_AT_END_MP4: &[u8] = include_bytes!("../../crates/media/tests/fixtures/moov_at_end.mp4");
const CLIP_MOV: &[u8] = include_bytes!("../../crates/media/tests/fixtures/clip.mov");
const CLIP_WEBM: &[u8] = include_bytes!("../../crates/media/tests/fixtures/clip.webm");

// ---------------------------------------------------------------------------------------------
// Files. The service reads only headers (type, size, container boxes), so the images carry
// zero CRCs and no pixels; `salt` makes otherwise equal files differ.

fn png_chunk(out: &mut Vec<u8>, kind: &[u8; 4], data: &[u8]) {
    out.extend_from_slice(&(data.len() as u32).to_be_bytes());
    out.extend_from_slice(kind);
    out.extend_from_slice(data);
    out.extend_from_slice(&[0; 4]);
}

/// A PNG of `w` x `h` whose text chunk holds `salt`.
pub(crate) fn png(w: u32, h: u32, salt: &[u8]) -> Vec<u8> {
    let mut ihdr = Vec::with_capacity(13);
    ihdr.extend_from_slice(&w.to_be_bytes());
    ihdr.extend_from_slice(&h.to_be_bytes());
    ihdr.extend_from_slice(&[8, 6, 0, 0, 0]);
    let mut out = b"\x89PNG\r\n\x1a\n".to_vec();
    png_chunk(&mut out, b"IHDR", &ihdr);
    png_chunk(&mut out, b"tEXt", salt);
    png_chunk(&mut out, b"IEND", &[]);
    out
}

/// A 2 x 2 PNG of exactly `len` bytes.
pub(crate) fn png_of_len(len: usize, salt: &[u8]) -> Vec<u8> {
    let overhead = png(2, 2, b"").len();
    let mut text = salt.to_vec();
    text.resize(len - overhead, b'.');
    let out = png(2, 2, &text);
    assert_eq!(out.len(), len);
    out
}

/// A baseline JPEG header of `w` x `h` with `salt` in a comment.
pub(crate) fn jpeg(w: u16, h: u16, salt: &[u8]) -> Vec<u8> {
    let mut out = vec![0xFF, 0xD8];
    out.extend_from_slice(&[0xFF, 0xE0, 0x00, 0x10]);
    out.extend_from_slice(b"JFIF\0\x01\x01\0\0\x01\0\x01\0\0");
    out.extend_from_slice(&[0xFF, 0xFE]);
    out.extend_from_slice(&((salt.len() + 2) as u16).to_be_bytes());
    out.extend_from_slice(salt);
    out.extend_from_slice(&[0xFF, 0xC0, 0x00, 0x11, 0x08]);
    out.extend_from_slice(&h.to_be_bytes());
    out.extend_from_slice(&w.to_be_bytes());
    out.extend_from_slice(&[0x03, 0x01, 0x22, 0x00, 0x02, 0x11, 0x01, 0x03, 0x11, 0x01]);
    out.extend_from_slice(&[0xFF, 0xD9]);
    out
}

/// An extended WebP (VP8X) of `w` x `h` with `salt` in an EXIF chunk.
pub(crate) fn webp(w: u32, h: u32, salt: &[u8]) -> Vec<u8> {
    let mut body = b"WEBPVP8X".to_vec();
    body.extend_from_slice(&10u32.to_le_bytes());
    body.extend_from_slice(&[0; 4]);
    body.extend_from_slice(&(w - 1).to_le_bytes()[..3]);
    body.extend_from_slice(&(h - 1).to_le_bytes()[..3]);
    let mut salt = salt.to_vec();
    if salt.len() % 2 == 1 {
        salt.push(0);
    }
    body.extend_from_slice(b"EXIF");
    body.extend_from_slice(&(salt.len() as u32).to_le_bytes());
    body.extend_from_slice(&salt);
    let mut out = b"RIFF".to_vec();
    out.extend_from_slice(&(body.len() as u32).to_le_bytes());
    out.extend_from_slice(&body);
    out
}

pub(crate) fn faststart_mp4() -> Vec<u8> {
    FASTSTART_MP4.to_vec()
}

/// The 64x48, 1520 ms MP4 grown to `total` bytes by a `free` box right after `ftyp`, its
/// zeros broken by `salt`; moov stays at the end.
pub(crate) fn big_video(total: usize, salt: &[u8]) -> Vec<u8> {
    let ftyp = u32::from_be_bytes(MOOV_AT_END_MP4[..4].try_into().unwrap()) as usize;
    assert_eq!(&MOOV_AT_END_MP4[4..8], b"ftyp");
    let free = total - MOOV_AT_END_MP4.len();
    let mut out = Vec::with_capacity(total);
    out.extend_from_slice(&MOOV_AT_END_MP4[..ftyp]);
    out.extend_from_slice(&(free as u32).to_be_bytes());
    out.extend_from_slice(b"free");
    let filler_at = out.len();
    out.resize(ftyp + free, 0);
    out[filler_at..filler_at + salt.len()].copy_from_slice(salt);
    // Something that differs from part to part, to catch a part served in the wrong place.
    for (i, b) in out[filler_at + salt.len()..].iter_mut().enumerate() {
        if i % 4096 == 0 {
            *b = (i / 4096) as u8 | 1;
        }
    }
    out.extend_from_slice(&MOOV_AT_END_MP4[ftyp..]);
    assert_eq!(out.len(), total);
    out
}

/// An MP4 header followed by zeros: no movie box to read.
fn no_moov(len: usize) -> Vec<u8> {
    let mut out = MOOV_AT_END_MP4[..32].to_vec();
    out.resize(len, 0);
    out
}

pub(crate) fn sha256_hex(bytes: &[u8]) -> String {
    Sha256::digest(bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

// ---------------------------------------------------------------------------------------------
// Requests

#[track_caller]
pub(crate) fn assert_status(res: &Response, status: u16) {
    assert_eq!(res.status, status, "body: {}", res.text());
}

/// An error naming `field`.
#[track_caller]
pub(crate) fn assert_field_in(case: &str, res: &Response, status: u16, code: &str, field: &str) {
    let v = assert_error_in(case, res, status, code);
    assert_eq!(v["field"], field, "{case}: {v}");
}

/// 400 invalid_request naming `field`.
#[track_caller]
pub(crate) fn assert_invalid(res: &Response, field: &str) {
    assert_field_in("", res, 400, "invalid_request", field);
}

pub(crate) async fn create(app: &TestApp, key: &str, body: &Value) -> Response {
    app.client.post(&format!("{API}/uploads"), key, body).await
}

/// A created upload (201).
pub(crate) async fn new_upload(app: &TestApp, key: &str, body: &Value) -> Value {
    let res = create(app, key, body).await;
    assert_eq!(res.status, 201, "POST /uploads {body}: {}", res.text());
    res.json()
}

/// The path and query of an absolute link of this app.
pub(crate) fn path_of(app: &TestApp, url: &str) -> String {
    url.strip_prefix(&app.base)
        .unwrap_or_else(|| panic!("{url} is not under {}", app.base))
        .to_owned()
}

/// A PUT of raw bytes to a link, without a key.
pub(crate) async fn put(app: &TestApp, url: &str, bytes: Vec<u8>) -> Response {
    put_to(&app.client, &path_of(app, url), bytes).await
}

pub(crate) async fn put_to(client: &Client, path: &str, bytes: Vec<u8>) -> Response {
    client
        .send(
            Request::new("PUT", path)
                .header("Content-Type", "application/octet-stream")
                .raw(bytes),
        )
        .await
}

/// Chunk `n` of a chunked upload.
pub(crate) async fn put_chunk(app: &TestApp, upload: &Value, n: i64, bytes: Vec<u8>) -> Response {
    let url = format!("{}{n}", upload["chunk_url"].as_str().expect("chunk_url"));
    put(app, &url, bytes).await
}

/// A PUT whose body the server may refuse before reading it all: the body is written while the
/// answer is read, and a write cut short by the server is not a failure.
pub(crate) async fn put_refusable(app: &TestApp, url: &str, bytes: Vec<u8>) -> Response {
    let request = Request::new("PUT", &path_of(app, url))
        .header("Content-Type", "application/octet-stream")
        .raw(bytes);
    send_refusable(app, request.encode(app.client.host())).await
}

/// Writes a request's bytes on a new connection while its answer is read (see
/// [`put_refusable`]).
async fn send_refusable(app: &TestApp, wire: Vec<u8>) -> Response {
    use tokio::io::{AsyncWriteExt, BufReader};
    let stream = tokio::net::TcpStream::connect(app.client.host())
        .await
        .expect("connect");
    let (read, mut write) = stream.into_split();
    let writer = tokio::spawn(async move {
        let _ = write.write_all(&wire).await;
        write
    });
    let res = read_response(&mut BufReader::new(read))
        .await
        .expect("response");
    drop(writer.await);
    res
}

/// Creates a single upload for `bytes` and PUTs them; returns the 200 body.
pub(crate) async fn upload_file(app: &TestApp, key: &str, body: &Value, bytes: Vec<u8>) -> Value {
    let upload = new_upload(app, key, body).await;
    assert_eq!(upload["mode"], "single", "{upload}");
    let res = put(
        app,
        upload["upload_url"].as_str().expect("upload_url"),
        bytes,
    )
    .await;
    assert_eq!(res.status, 200, "PUT for {body}: {}", res.text());
    res.json()
}

/// Creates a chunked upload for `bytes` and sends every chunk; returns the last 200 body.
pub(crate) async fn upload_chunked(app: &TestApp, key: &str, body: &Value, bytes: &[u8]) -> Value {
    let upload = new_upload(app, key, body).await;
    assert_eq!(upload["mode"], "chunked", "{upload}");
    let mut last = Value::Null;
    for (n, chunk) in bytes.chunks(CHUNK).enumerate() {
        let res = put_chunk(app, &upload, n as i64, chunk.to_vec()).await;
        assert_eq!(res.status, 200, "chunk {n}: {}", res.text());
        last = res.json();
    }
    assert_eq!(last["done"], true, "{last}");
    last
}

/// GET /media with a query string (without the `?`).
pub(crate) async fn list(app: &TestApp, key: &str, query: &str) -> Response {
    app.client.get(&format!("{API}/media?{query}"), key).await
}

/// The items of a 200 list.
pub(crate) async fn items(app: &TestApp, key: &str, query: &str) -> Vec<Value> {
    let res = list(app, key, query).await;
    assert_eq!(res.status, 200, "GET /media?{query}: {}", res.text());
    res.json()["media"].as_array().expect("media[]").clone()
}

/// The library item with this id as `key` sees it.
pub(crate) async fn item(app: &TestApp, key: &str, id: &Value) -> Value {
    items(app, key, "limit=100")
        .await
        .into_iter()
        .find(|m| m["id"] == *id)
        .unwrap_or_else(|| panic!("{id} is not listed"))
}

/// A GET of a signed link, without a key, with an optional Range header.
pub(crate) async fn fetch(app: &TestApp, url: &str, range: Option<&str>) -> Response {
    let mut req = Request::new("GET", &path_of(app, url));
    if let Some(r) = range {
        req = req.header("Range", r);
    }
    app.client.send(req).await
}

/// A second running instance over the same database and the same data directory (so the same
/// blob store): what a restart of the service looks like to a client.
async fn second_instance(app: &TestApp) -> (Client, actix_web::dev::ServerHandle) {
    let config = Config {
        rate_limit_per_minute: 10_000,
        base_url: None,
        ..Config::default()
    };
    let (state, _store) = fleetdesk::compose(&app.db.url, &app.data_dir, config, 4, true, None)
        .await
        .expect("compose a second instance");
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let base = format!("http://{}", listener.local_addr().expect("addr"));
    let server = fleetdesk_http::server(state, listener, 1).expect("server");
    let handle = server.handle();
    tokio::spawn(server);
    (Client::new(&base), handle)
}

fn upload_id(upload: &Value) -> Uuid {
    Uuid::parse_str(upload["upload_id"].as_str().expect("upload_id")).expect("uuid")
}

fn seconds_from_now(v: &Value) -> i64 {
    let at: jiff::Timestamp = v.as_str().expect("a time").parse().expect("UTC time");
    at.as_second() - jiff::Timestamp::now().as_second()
}

async fn media_rows(app: &TestApp) -> i64 {
    app.count("SELECT count(*) AS n FROM media").await
}

// ---------------------------------------------------------------------------------------------
// POST /uploads: plans

#[tokio::test(flavor = "multi_thread")]
async fn an_image_gets_a_single_link_valid_one_hour() {
    let app = spawn_app().await;
    let key = app.agent_key("op1");
    let up = new_upload(
        &app,
        &key,
        &json!({"code": "TW-T001", "mime_type": "image/png", "caption": "c"}),
    )
    .await;
    let id = upload_id(&up);
    assert_eq!(up["mode"], "single");
    assert_eq!(up["method"], "PUT");
    assert_eq!(up["max_bytes"], SINGLE_MAX);
    let base = format!("{}{API}/uploads/{id}", app.base);
    let url = up["upload_url"].as_str().unwrap();
    let token = url
        .strip_prefix(&format!("{base}?t="))
        .unwrap_or_else(|| panic!("upload_url {url}"));
    assert!(token.len() >= 32, "{url}");
    assert_eq!(up["poster_url"], format!("{base}/poster?t={token}"));
    assert_eq!(
        up["accepts"],
        json!([
            "image/jpeg",
            "image/png",
            "image/webp",
            "video/mp4",
            "video/quicktime",
            "video/webm"
        ])
    );
    assert!(
        up["how"].as_str().is_some_and(|h| h.contains("PUT")),
        "{up}"
    );
    let left = seconds_from_now(&up["expires_at"]);
    assert!((3590..=3600).contains(&left), "expires in {left} s");
    assert!(up.get("chunk_url").is_none(), "{up}");
    assert!(up["media_id"].is_null(), "{up}");
    // Only the token's hash is kept; the upload is Mia's, in her project.
    assert_eq!(
        app.count(&format!(
            "SELECT count(*) AS n FROM uploads u JOIN projects p ON p.id = u.project_id
             JOIN personas pe ON pe.id = u.persona_id
             WHERE u.id = '{id}' AND p.name = 'beauty' AND pe.name = 'Mia' AND u.mode = 'single'
               AND u.token_hash = sha256(convert_to('{token}', 'UTF8')) AND u.caption = 'c'"
        ))
        .await,
        1
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_file_of_unknown_type_may_be_up_to_four_megabytes() {
    let app = spawn_app().await;
    let key = app.agent_key("op1");
    for body in [
        json!({"code": "TW-T001"}),
        json!({"code": "TW-T001", "bytes": SINGLE_MAX}),
        json!({"code": "TW-T001", "bytes": 1}),
    ] {
        let up = new_upload(&app, &key, &body).await;
        assert_eq!(up["mode"], "single", "{body}: {up}");
    }
    let res = create(
        &app,
        &key,
        &json!({"code": "TW-T001", "bytes": SINGLE_MAX + 1}),
    )
    .await;
    assert_invalid(&res, "mime_type");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_video_over_four_megabytes_goes_in_chunks_for_23_hours() {
    let app = spawn_app().await;
    let key = app.agent_key("op1");
    let small = new_upload(
        &app,
        &key,
        &json!({"code": "TW-T001", "mime_type": "video/mp4", "bytes": SINGLE_MAX}),
    )
    .await;
    assert_eq!(small["mode"], "single", "{small}");
    assert!(small["upload_url"].is_string());

    let up = new_upload(
        &app,
        &key,
        &json!({"code": "TW-T001", "mime_type": "video/webm", "bytes": SINGLE_MAX + 1}),
    )
    .await;
    let id = upload_id(&up);
    assert_eq!(up["mode"], "chunked");
    assert_eq!(up["chunk_bytes"], CHUNK);
    assert_eq!(up["chunks"], 2);
    assert_eq!(up["method"], "PUT");
    let chunk_url = up["chunk_url"].as_str().unwrap();
    let prefix = format!("{}{API}/uploads/{id}/chunks?t=", app.base);
    assert!(chunk_url.starts_with(&prefix), "{chunk_url}");
    assert!(chunk_url.ends_with("&n="), "{chunk_url}");
    let token = &chunk_url[prefix.len()..chunk_url.len() - 3];
    assert_eq!(
        up["poster_url"],
        format!("{}{API}/uploads/{id}/poster?t={token}", app.base)
    );
    assert_eq!(
        up["accepts"],
        json!(["video/mp4", "video/quicktime", "video/webm"])
    );
    assert!(up.get("upload_url").is_none(), "{up}");
    assert!(up.get("max_bytes").is_none(), "{up}");
    assert!(up["how"].as_str().is_some_and(|h| !h.is_empty()));
    let left = seconds_from_now(&up["expires_at"]);
    assert!(
        (23 * 3600 - 10..=23 * 3600).contains(&left),
        "expires in {left} s"
    );

    // The largest video, and chunks = ceil(bytes / chunk).
    for (bytes, chunks) in [
        (524_288_000u64, 167),
        (CHUNK as u64 * 3, 3),
        (CHUNK as u64 * 3 + 1, 4),
    ] {
        let up = new_upload(
            &app,
            &key,
            &json!({"code": "TW-T001", "mime_type": "video/quicktime", "bytes": bytes}),
        )
        .await;
        assert_eq!(up["chunks"], chunks, "{bytes}: {up}");
    }
    assert_eq!(
        app.count("SELECT count(*) AS n FROM uploads WHERE mode = 'chunked' AND chunks = 167 AND declared_bytes = 524288000")
            .await,
        1
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn sizes_at_their_limits_and_one_past() {
    let app = spawn_app().await;
    let key = app.agent_key("op1");
    let video = |bytes: Value| json!({"code": "TW-T001", "mime_type": "video/mp4", "bytes": bytes});
    let res = create(&app, &key, &video(json!(524_288_001u64))).await;
    assert_invalid(&res, "bytes");
    let res = create(&app, &key, &video(json!(0))).await;
    assert_invalid(&res, "bytes");
    let res = create(
        &app,
        &key,
        &json!({"code": "TW-T001", "mime_type": "video/mp4"}),
    )
    .await;
    assert_invalid(&res, "bytes");
    let res = create(&app, &key, &json!({"code": "TW-T001", "bytes": -1})).await;
    assert_invalid(&res, "bytes");

    // An image may not be larger than one PUT.
    let image =
        |bytes: usize| json!({"code": "TW-T001", "mime_type": "image/jpeg", "bytes": bytes});
    let up = new_upload(&app, &key, &image(SINGLE_MAX)).await;
    assert_eq!(up["mode"], "single");
    let res = create(&app, &key, &image(SINGLE_MAX + 1)).await;
    assert_field_in("image", &res, 413, "payload_too_large", "bytes");
    assert_eq!(app.count("SELECT count(*) AS n FROM uploads").await, 1);
}

#[tokio::test(flavor = "multi_thread")]
async fn every_field_at_its_limit_and_one_past() {
    let app = spawn_app().await;
    let key = app.agent_key("op1");
    let tags = |n: usize| (0..n).map(|i| format!("t{i}")).collect::<Vec<_>>();
    let ok = [
        json!({"code": "TW-T001", "caption": "c".repeat(200)}),
        json!({"code": "TW-T001", "caption": "貓".repeat(200)}),
        json!({"code": "TW-T001", "character": "momo"}),
        json!({"code": "TW-T001", "tags": tags(20)}),
        json!({"code": "TW-T001", "tags": ["x".repeat(30), "貓".repeat(30)]}),
        json!({"code": "TW-T001", "tags": [format!("  {}  ", "y".repeat(30))]}),
        json!({"code": "TW-T001", "tags": []}),
        json!({"code": "TW-T001", "project": "beauty"}),
        json!({"code": "tw-t001"}),
    ];
    for body in &ok {
        let res = create(&app, &key, body).await;
        assert_eq!(res.status, 201, "{body}: {}", res.text());
    }
    let bad = [
        (json!({"code": ""}), "code"),
        (json!({"code": "X".repeat(41)}), "code"),
        (json!({}), "code"),
        (
            json!({"code": "TW-T001", "caption": "c".repeat(201)}),
            "caption",
        ),
        (json!({"code": "TW-T001", "character": ""}), "character"),
        (
            json!({"code": "TW-T001", "character": "c".repeat(25)}),
            "character",
        ),
        (json!({"code": "TW-T001", "tags": tags(21)}), "tags"),
        // A bad tag is named by its index.
        (
            json!({"code": "TW-T001", "tags": ["x".repeat(31)]}),
            "tags[0]",
        ),
        (
            json!({"code": "TW-T001", "tags": [format!(" {} ", "x".repeat(31))]}),
            "tags[0]",
        ),
        (json!({"code": "TW-T001", "tags": ["cat", ""]}), "tags[1]"),
        (json!({"code": "TW-T001", "tags": ["  "]}), "tags[0]"),
        (json!({"code": "TW-T001", "project": ""}), "project"),
        (
            json!({"code": "TW-T001", "project": "p".repeat(81)}),
            "project",
        ),
        (
            json!({"code": "TW-T001", "mime_type": "image/gif"}),
            "mime_type",
        ),
        (
            json!({"code": "TW-T001", "platform": "myspace"}),
            "platform",
        ),
        (json!({"code": "TW-T001", "bytes": "12"}), "bytes"),
    ];
    for (body, field) in &bad {
        let res = create(&app, &key, body).await;
        assert_field_in(&body.to_string(), &res, 400, "invalid_request", field);
    }
    assert_eq!(
        app.count("SELECT count(*) AS n FROM uploads").await,
        ok.len() as i64
    );
    let trimmed = format!(
        "SELECT count(*) AS n FROM uploads WHERE tags = ARRAY['{}']",
        "y".repeat(30)
    );
    assert_eq!(app.count(&trimmed).await, 1);
}

#[tokio::test(flavor = "multi_thread")]
async fn the_character_must_be_in_the_personas_cast() {
    let app = spawn_app().await;
    let key = app.agent_key("op1");
    let up = new_upload(&app, &key, &json!({"code": "TW-T001", "character": "lulu"})).await;
    assert_eq!(
        app.count(&format!(
            "SELECT count(*) AS n FROM uploads WHERE id = '{}' AND character = 'lulu'",
            upload_id(&up)
        ))
        .await,
        1
    );
    // Leo's cast, a 24-character code nobody has, and a code in another case.
    for character in ["chef", &"c".repeat(24), "MOMO"] {
        let res = create(
            &app,
            &key,
            &json!({"code": "TW-T001", "character": character}),
        )
        .await;
        assert_field_in(character, &res, 422, "rejected", "character");
    }
    let res = create(
        &app,
        &app.agent_key("op2"),
        &json!({"code": "TW-T002", "character": "chef"}),
    )
    .await;
    assert_status(&res, 201);
    assert_eq!(app.count("SELECT count(*) AS n FROM uploads").await, 2);
}

#[tokio::test(flavor = "multi_thread")]
async fn the_project_defaults_to_the_personas_and_must_be_of_the_workspace() {
    let app = spawn_app().await;
    let op1 = app.agent_key("op1");
    let project_of = |id: Uuid| {
        format!(
            "SELECT count(*) AS n FROM uploads u JOIN projects p ON p.id = u.project_id
             JOIN workspaces w ON w.id = p.workspace_id
             WHERE u.id = '{id}' AND p.name = '{{p}}' AND w.name = '{{w}}'"
        )
    };
    let up = new_upload(&app, &op1, &json!({"code": "TW-T001"})).await;
    let q = project_of(upload_id(&up))
        .replace("{p}", "beauty")
        .replace("{w}", "Taiwan");
    assert_eq!(app.count(&q).await, 1);
    // Another project of the same workspace.
    let up = new_upload(&app, &op1, &json!({"code": "TW-T001", "project": "food"})).await;
    let q = project_of(upload_id(&up))
        .replace("{p}", "food")
        .replace("{w}", "Taiwan");
    assert_eq!(app.count(&q).await, 1);
    // Japan's agent names "beauty": its own workspace's, never Taiwan's.
    let jp = app.agent_key("jp1");
    let up = new_upload(&app, &jp, &json!({"code": "JP-T001", "project": "beauty"})).await;
    let q = project_of(upload_id(&up))
        .replace("{p}", "beauty")
        .replace("{w}", "Japan");
    assert_eq!(app.count(&q).await, 1);

    let before = app.count("SELECT count(*) AS n FROM uploads").await;
    // A project no workspace of the organization has (another organization's included) is
    // 404; another workspace's of the organization is 422 (the specification's decision).
    for (key, body, status, code) in [
        (
            &op1,
            json!({"code": "TW-T001", "project": "nope"}),
            404,
            "not_found",
        ),
        (
            &op1,
            json!({"code": "TW-T001", "project": "general"}),
            404,
            "not_found",
        ),
        (
            &op1,
            json!({"code": "TW-T001", "project": "p".repeat(80)}),
            404,
            "not_found",
        ),
        (
            &op1,
            json!({"code": "TW-T001", "project": "Beauty"}),
            404,
            "not_found",
        ),
        (
            &jp,
            json!({"code": "JP-T001", "project": "food"}),
            422,
            "rejected",
        ),
    ] {
        let res = create(&app, key, &body).await;
        assert_field_in(&body.to_string(), &res, status, code, "project");
    }
    assert_eq!(app.count("SELECT count(*) AS n FROM uploads").await, before);
}

#[tokio::test(flavor = "multi_thread")]
async fn the_account_must_be_the_callers() {
    let app = spawn_app().await;
    let op1 = app.agent_key("op1");
    let cases = [
        ("op1", json!({"code": "NOPE-1"}), 404, "not_found"),
        ("op1", json!({"code": "TW-T002"}), 403, "forbidden"),
        ("op2", json!({"code": "TW-T001"}), 403, "forbidden"),
        ("op1", json!({"code": "JP-T001"}), 404, "not_found"),
        ("jp1", json!({"code": "TW-T001"}), 404, "not_found"),
        ("op1", json!({"code": "OLD1"}), 409, "ambiguous_code"),
        (
            "op1",
            json!({"code": "TW-T001", "platform": "tiktok"}),
            404,
            "not_found",
        ),
        ("bot", json!({"code": "TW-T001"}), 403, "forbidden"),
    ];
    for (agent, body, status, code) in &cases {
        let res = create(&app, &app.agent_key(agent), body).await;
        assert_error_in(&format!("{agent} {body}"), &res, *status, code);
    }
    let res = app
        .client
        .send(Request::new("POST", &format!("{API}/uploads")).json(&json!({"code": "TW-T001"})))
        .await;
    assert_error(&res, 401, "unauthorized");
    assert_eq!(app.count("SELECT count(*) AS n FROM uploads").await, 0);

    // A legacy code with its platform, and another organization's own TW-T001.
    let up = new_upload(&app, &op1, &json!({"code": "OLD1", "platform": "tiktok"})).await;
    let id = upload_id(&up);
    assert_eq!(
        app.count(&format!(
            "SELECT count(*) AS n FROM uploads u JOIN account_slots s ON s.id = u.slot_id
             WHERE u.id = '{id}' AND s.code = 'TW-L002'"
        ))
        .await,
        1
    );
    let up = new_upload(&app, &app.agent_key("other1"), &json!({"code": "TW-T001"})).await;
    let id = upload_id(&up);
    assert_eq!(
        app.count(&format!(
            "SELECT count(*) AS n FROM uploads u JOIN personas p ON p.id = u.persona_id
             WHERE u.id = '{id}' AND p.name = 'Zoe'"
        ))
        .await,
        1
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_resent_create_answers_the_same_upload() {
    let app = spawn_app().await;
    let key = app.agent_key("op1");
    let body = json!({"code": "TW-T001", "mime_type": "image/png", "tags": ["a"]});
    let path = format!("{API}/uploads");
    let first = app.client.post_idem(&path, &key, "up-1", &body).await;
    assert_status(&first, 201);
    assert!(first.header("idempotent-replayed").is_none());
    let again = app.client.post_idem(&path, &key, "up-1", &body).await;
    assert_status(&again, 201);
    assert_eq!(again.header("idempotent-replayed"), Some("true"));
    assert_eq!(again.json(), first.json());
    assert_eq!(app.count("SELECT count(*) AS n FROM uploads").await, 1);

    // The replayed link is the one that works.
    let url = first.json()["upload_url"].as_str().unwrap().to_owned();
    let res = put(&app, &url, png(3, 3, b"idem")).await;
    assert_status(&res, 200);

    let other = app
        .client
        .post_idem(
            &path,
            &key,
            "up-1",
            &json!({"code": "TW-T001", "tags": ["b"]}),
        )
        .await;
    assert_error(&other, 422, "idempotency_mismatch");
    // Another Idempotency-Key is another upload.
    let fresh = app.client.post_idem(&path, &key, "up-2", &body).await;
    assert_status(&fresh, 201);
    assert_ne!(fresh.json()["upload_id"], first.json()["upload_id"]);
    assert_eq!(app.count("SELECT count(*) AS n FROM uploads").await, 2);
    // The key belongs to the agent: op1's second key replays, op2's same key is its own.
    let second_key = app.agent_keys("op1")[1].clone();
    let replay = app
        .client
        .post_idem(&path, &second_key, "up-1", &body)
        .await;
    assert_eq!(replay.header("idempotent-replayed"), Some("true"));
    assert_eq!(replay.json()["upload_id"], first.json()["upload_id"]);
    let op2 = app
        .client
        .post_idem(
            &path,
            &app.agent_key("op2"),
            "up-1",
            &json!({"code": "TW-T002", "mime_type": "image/png", "tags": ["a"]}),
        )
        .await;
    assert_status(&op2, 201);
    assert!(op2.header("idempotent-replayed").is_none());
    assert_ne!(op2.json()["upload_id"], first.json()["upload_id"]);
    assert_eq!(app.count("SELECT count(*) AS n FROM uploads").await, 3);
}

// ---------------------------------------------------------------------------------------------
// PUT /uploads/{id}: the whole file

#[tokio::test(flavor = "multi_thread")]
async fn an_image_put_enters_the_library() {
    let app = spawn_app().await;
    let key = app.agent_key("op1");
    let up = new_upload(
        &app,
        &key,
        &json!({"code": "TW-T001", "caption": "grey cat", "character": "momo",
                "tags": ["cat", "Home"]}),
    )
    .await;
    let file = png(640, 480, b"first");
    // No Authorization: the token is the credential.
    let res = put(&app, up["upload_url"].as_str().unwrap(), file.clone()).await;
    assert_status(&res, 200);
    let v = res.json();
    assert_eq!(v["upload_id"], up["upload_id"]);
    assert_eq!(v["mime_type"], "image/png");
    assert_eq!(v["kind"], "image");
    assert_eq!(v["bytes"], file.len());
    assert_eq!(v["duplicate"], false);
    let media_id = v["media_id"].as_str().unwrap();
    assert_eq!(
        app.count(&format!(
            "SELECT count(*) AS n FROM media m JOIN projects p ON p.id = m.project_id
             WHERE m.id = '{media_id}' AND m.kind = 'image' AND m.mime_type = 'image/png'
               AND m.width = 640 AND m.height = 480 AND m.duration_ms IS NULL
               AND m.bytes = {} AND m.sha256 = '{}' AND m.caption = 'grey cat'
               AND m.character = 'momo' AND m.tags = ARRAY['cat', 'Home'] AND p.name = 'beauty'
               AND m.source = 'upload' AND m.archived_at IS NULL",
            file.len(),
            sha256_hex(&file)
        ))
        .await,
        1
    );
    assert_eq!(
        app.count(&format!(
            "SELECT count(*) AS n FROM uploads WHERE id = '{}' AND media_id = '{media_id}'
               AND completed_at IS NOT NULL",
            up["upload_id"].as_str().unwrap()
        ))
        .await,
        1
    );
    let listed = item(&app, &key, &v["media_id"]).await;
    let got = fetch(&app, listed["url"].as_str().unwrap(), None).await;
    assert_status(&got, 200);
    assert_eq!(got.body, file);
    assert_eq!(got.header("content-type"), Some("image/png"));

    // What a client sends besides the bytes does not matter: no or another Content-Type, a key.
    let headers: [&[(&str, &str)]; 4] = [
        &[],
        &[("Content-Type", "application/x-www-form-urlencoded")],
        &[("Content-Type", "image/png")],
        &[("Authorization", "Bearer not-a-key")],
    ];
    for (i, headers) in headers.into_iter().enumerate() {
        let up = new_upload(&app, &key, &json!({"code": "TW-T001"})).await;
        let mut req = Request::new("PUT", &path_of(&app, up["upload_url"].as_str().unwrap()))
            .raw(png(2, 2, format!("headers {i}").as_bytes()));
        for (k, v) in headers {
            req = req.header(k, v);
        }
        let res = app.client.send(req).await;
        assert_eq!(res.status, 200, "{headers:?}: {}", res.text());
    }
    let up = new_upload(&app, &key, &json!({"code": "TW-T001"})).await;
    let req = Request::new("PUT", &path_of(&app, up["upload_url"].as_str().unwrap()))
        .bearer(&key)
        .raw(png(2, 2, b"with a key"));
    assert_status(&app.client.send(req).await, 200);

    // Tags are trimmed and kept once whatever their case, in their first spelling.
    let v = upload_file(
        &app,
        &key,
        &json!({"code": "TW-T001", "tags": ["Cat", " cat", "dog ", "CAT", "貓", "貓"]}),
        png(2, 2, b"tags"),
    )
    .await;
    let listed = item(&app, &key, &v["media_id"]).await;
    assert_eq!(listed["tags"], json!(["Cat", "dog", "貓"]));
}

#[tokio::test(flavor = "multi_thread")]
async fn a_client_that_waits_for_100_continue_gets_it() {
    use tokio::io::{AsyncWriteExt, BufReader};
    let app = spawn_app().await;
    let key = app.agent_key("op1");
    let up = new_upload(&app, &key, &json!({"code": "TW-T001"})).await;
    let file = png(2, 2, b"expect");
    // What curl -T does: the headers, then the body once the server says to go on.
    let request = Request::new("PUT", &path_of(&app, up["upload_url"].as_str().unwrap()))
        .header("Expect", "100-continue")
        .raw(file.clone());
    let wire = request.encode(app.client.host());
    let head_len = wire.windows(4).position(|w| w == b"\r\n\r\n").unwrap() + 4;
    let stream = tokio::net::TcpStream::connect(app.client.host())
        .await
        .expect("connect");
    let (read, mut write) = stream.into_split();
    let mut reader = BufReader::new(read);
    write.write_all(&wire[..head_len]).await.expect("write");
    let interim = tokio::time::timeout(
        std::time::Duration::from_secs(5),
        read_response(&mut reader),
    )
    .await
    .expect("an answer to Expect: 100-continue")
    .expect("response");
    assert_eq!(interim.status, 100);
    write.write_all(&wire[head_len..]).await.expect("write");
    let res = read_response(&mut reader).await.expect("response");
    assert_eq!(res.status, 200, "{}", res.text());
    assert_eq!(res.json()["bytes"], file.len());
}

#[tokio::test(flavor = "multi_thread")]
async fn every_type_is_judged_from_its_header() {
    let app = spawn_app().await;
    let key = app.agent_key("op1");
    // Each file with its declared type, then what the library must say: type, width, height
    // and duration.
    let expect = |mime: &str, w: i64, h: i64, duration: Option<i64>| json!({"mime_type": mime, "width": w, "height": h, "duration_ms": duration});
    let cases: Vec<(Vec<u8>, Option<&str>, Value)> = vec![
        (
            jpeg(320, 200, b"j"),
            None,
            expect("image/jpeg", 320, 200, None),
        ),
        (
            png(1, 1, b"p"),
            Some("image/png"),
            expect("image/png", 1, 1, None),
        ),
        (
            webp(100, 50, b"w"),
            None,
            expect("image/webp", 100, 50, None),
        ),
        (
            faststart_mp4(),
            Some("video/mp4"),
            expect("video/mp4", 64, 48, Some(1520)),
        ),
        (
            MOOV_AT_END_MP4.to_vec(),
            None,
            expect("video/mp4", 64, 48, Some(1520)),
        ),
        (
            CLIP_MOV.to_vec(),
            Some("video/quicktime"),
            expect("video/quicktime", 64, 48, Some(1520)),
        ),
        (
            CLIP_WEBM.to_vec(),
            Some("video/webm"),
            expect("video/webm", 64, 48, Some(1527)),
        ),
    ];
    for (bytes, declared, want) in cases {
        let mime = want["mime_type"].as_str().unwrap();
        let mut body = json!({"code": "TW-T001"});
        if let Some(d) = declared {
            body["mime_type"] = json!(d);
            if d.starts_with("video/") {
                body["bytes"] = json!(bytes.len());
            }
        }
        let v = upload_file(&app, &key, &body, bytes.clone()).await;
        assert_eq!(v["mime_type"], mime, "{body}: {v}");
        let kind = mime.split('/').next().unwrap();
        assert_eq!(v["kind"], kind, "{v}");
        let listed = item(&app, &key, &v["media_id"]).await;
        assert_eq!(listed["mime_type"], mime, "{listed}");
        assert_eq!(listed["kind"], kind, "{listed}");
        for field in ["width", "height", "duration_ms"] {
            assert_eq!(listed[field], want[field], "{mime} {field}: {listed}");
        }
        assert_eq!(listed["bytes"], bytes.len(), "{listed}");
    }
    assert_eq!(media_rows(&app).await, 7);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_file_that_is_none_of_the_six_types_is_refused() {
    let app = spawn_app().await;
    let key = app.agent_key("op1");
    let matroska = {
        let mut m = CLIP_WEBM.to_vec();
        let at = m.windows(4).position(|w| w == b"webm").unwrap();
        m[at..at + 4].copy_from_slice(b"mkvx");
        m
    };
    for (name, bytes) in [
        ("gif", b"GIF89a\x01\0\x01\0\0\0\0;".to_vec()),
        ("pdf", b"%PDF-1.7\n%\xe2\xe3\xcf\xd3\n".to_vec()),
        ("text", b"hello".to_vec()),
        ("matroska", matroska),
        ("empty", Vec::new()),
    ] {
        let up = new_upload(&app, &key, &json!({"code": "TW-T001"})).await;
        let res = put(&app, up["upload_url"].as_str().unwrap(), bytes).await;
        assert_field_in(name, &res, 400, "invalid_request", "body");
        // A refused file does not use up the link.
        let res = put(
            &app,
            up["upload_url"].as_str().unwrap(),
            png(2, 2, name.as_bytes()),
        )
        .await;
        assert_eq!(res.status, 200, "{name}: {}", res.text());
    }
    assert_eq!(media_rows(&app).await, 5);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_single_file_may_be_four_megabytes_and_not_one_byte_more() {
    let app = spawn_app().await;
    let key = app.agent_key("op1");
    let up = new_upload(&app, &key, &json!({"code": "TW-T001"})).await;
    let url = up["upload_url"].as_str().unwrap().to_owned();
    let res = put_refusable(&app, &url, png_of_len(SINGLE_MAX + 1, b"big")).await;
    assert_error(&res, 413, "payload_too_large");
    assert_eq!(media_rows(&app).await, 0);
    let file = png_of_len(SINGLE_MAX, b"big");
    let res = put(&app, &url, file.clone()).await;
    assert_status(&res, 200);
    assert_eq!(res.json()["bytes"], SINGLE_MAX);
    let listed = item(&app, &key, &res.json()["media_id"]).await;
    let got = fetch(&app, listed["url"].as_str().unwrap(), None).await;
    assert_eq!(got.body.len(), SINGLE_MAX);
    assert!(got.body == file, "the stored file differs");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_link_works_only_with_its_token_before_it_expires_and_once() {
    let app = spawn_app().await;
    let key = app.agent_key("op1");
    let up = new_upload(&app, &key, &json!({"code": "TW-T001"})).await;
    let id = upload_id(&up);
    let url = up["upload_url"].as_str().unwrap().to_owned();
    let file = png(8, 8, b"once");

    let wrong = format!("{}{API}/uploads/{id}?t=not-the-token", app.base);
    assert_error(&put(&app, &wrong, file.clone()).await, 401, "unauthorized");
    let no_token = format!("{}{API}/uploads/{id}", app.base);
    let res = put(&app, &no_token, file.clone()).await;
    assert_invalid(&res, "t");
    let token = url.split("?t=").nth(1).unwrap();
    // An id no upload has is answered as a wrong token, word for word: a stranger cannot
    // tell which ids exist.
    let unknown = format!("{}{API}/uploads/{}?t={token}", app.base, Uuid::new_v4());
    let stranger = put(&app, &unknown, file.clone()).await;
    let mut stranger = assert_error(&stranger, 401, "unauthorized");
    let mut mismatch = assert_error(&put(&app, &wrong, file.clone()).await, 401, "unauthorized");
    for body in [&mut stranger, &mut mismatch] {
        body.as_object_mut().expect("object").remove("request_id");
    }
    assert_eq!(stranger, mismatch);
    // Another upload's token does not open this one.
    let other = new_upload(&app, &key, &json!({"code": "TW-T001"})).await;
    let other_token = other["upload_url"]
        .as_str()
        .unwrap()
        .split("?t=")
        .nth(1)
        .unwrap();
    let crossed = format!("{}{API}/uploads/{id}?t={other_token}", app.base);
    assert_error(
        &put(&app, &crossed, file.clone()).await,
        401,
        "unauthorized",
    );
    assert_eq!(media_rows(&app).await, 0);

    let first = put(&app, &url, file.clone()).await;
    assert_status(&first, 200);
    let media_id = first.json()["media_id"].clone();
    let second = put(&app, &url, png(8, 8, b"twice")).await;
    let v = assert_error(&second, 422, "rejected");
    assert_eq!(v["media_id"], media_id, "{v}");
    let same = put(&app, &url, file).await;
    assert_eq!(assert_error(&same, 422, "rejected")["media_id"], media_id);
    assert_eq!(media_rows(&app).await, 1);

    // The same link used several times at once: one stores, the others name its item.
    let raced = new_upload(&app, &key, &json!({"code": "TW-T001"})).await;
    let url = raced["upload_url"].as_str().unwrap();
    let sends = (0..4).map(|i| put(&app, url, png(8, 8, format!("race {}", i % 2).as_bytes())));
    let answers = futures_util::future::join_all(sends).await;
    let stored: Vec<&Response> = answers.iter().filter(|r| r.status == 200).collect();
    assert_eq!(
        stored.len(),
        1,
        "{:?}",
        answers.iter().map(Response::text).collect::<Vec<_>>()
    );
    let raced_id = stored[0].json()["media_id"].clone();
    for res in answers.iter().filter(|r| r.status != 200) {
        assert_eq!(assert_error(res, 422, "rejected")["media_id"], raced_id);
    }
    assert_eq!(media_rows(&app).await, 2);

    // An expired link is refused, whatever it carries.
    let later = new_upload(&app, &key, &json!({"code": "TW-T001"})).await;
    app.sql(&format!(
        "UPDATE uploads SET expires_at = now() - interval '1 minute' WHERE id = '{}'",
        upload_id(&later)
    ))
    .await;
    let res = put(
        &app,
        later["upload_url"].as_str().unwrap(),
        png(8, 8, b"late"),
    )
    .await;
    assert_error(&res, 401, "unauthorized");
    let res = put(
        &app,
        later["poster_url"].as_str().unwrap(),
        png(8, 8, b"late"),
    )
    .await;
    assert_error(&res, 401, "unauthorized");
    assert_eq!(media_rows(&app).await, 2);
}

#[tokio::test(flavor = "multi_thread")]
async fn the_file_header_decides_its_type_and_another_kind_is_refused() {
    let app = spawn_app().await;
    let key = app.agent_key("op1");
    let cases: Vec<(Value, Vec<u8>)> = vec![
        (
            json!({"code": "TW-T001", "mime_type": "image/png"}),
            faststart_mp4(),
        ),
        (
            json!({"code": "TW-T001", "mime_type": "video/mp4", "bytes": png(2, 2, b"v").len()}),
            png(2, 2, b"v"),
        ),
        (json!({"code": "TW-T001"}), no_moov(4096)),
        (json!({"code": "TW-T001"}), CLIP_WEBM[..200].to_vec()),
        (json!({"code": "TW-T001", "bytes": 10}), png(2, 2, b"b")),
        (
            json!({"code": "TW-T001", "mime_type": "video/mp4", "bytes": FASTSTART_MP4.len() + 1}),
            faststart_mp4(),
        ),
        (
            json!({"code": "TW-T001", "mime_type": "video/mp4", "bytes": FASTSTART_MP4.len() - 1}),
            faststart_mp4(),
        ),
    ];
    for (body, bytes) in cases {
        let up = new_upload(&app, &key, &body).await;
        let res = put(&app, up["upload_url"].as_str().unwrap(), bytes).await;
        assert_field_in(&body.to_string(), &res, 400, "invalid_request", "body");
    }
    assert_eq!(media_rows(&app).await, 0);

    // Another type of the same kind than declared: stored as the file says.
    let accepted: Vec<(Value, Vec<u8>, &str)> = vec![
        (
            json!({"code": "TW-T001", "mime_type": "image/jpeg"}),
            png(2, 2, b"a"),
            "image/png",
        ),
        (
            json!({"code": "TW-T001", "mime_type": "video/webm", "bytes": FASTSTART_MP4.len()}),
            faststart_mp4(),
            "video/mp4",
        ),
        (
            json!({"code": "TW-T001", "mime_type": "video/mp4", "bytes": CLIP_WEBM.len()}),
            CLIP_WEBM.to_vec(),
            "video/webm",
        ),
        (
            json!({"code": "TW-T001", "mime_type": "video/mp4", "bytes": CLIP_MOV.len()}),
            CLIP_MOV.to_vec(),
            "video/quicktime",
        ),
    ];
    for (body, bytes, want) in accepted {
        let v = upload_file(&app, &key, &body, bytes).await;
        assert_eq!(v["mime_type"], want, "{body}: {v}");
        let id = v["media_id"].as_str().expect("media_id");
        assert_eq!(
            app.count(&format!(
                "SELECT count(*) AS n FROM media WHERE id = '{id}' AND mime_type = '{want}'"
            ))
            .await,
            1,
            "{body}"
        );
    }
    // The exact declared size is fine.
    let file = png(2, 2, b"exact");
    let body = json!({"code": "TW-T001", "bytes": file.len()});
    upload_file(&app, &key, &body, file).await;
    assert_eq!(media_rows(&app).await, 5);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_file_already_in_the_library_answers_its_item() {
    let app = spawn_app().await;
    let op1 = app.agent_key("op1");
    let file = png(5, 5, b"same");
    let first = upload_file(&app, &op1, &json!({"code": "TW-T001"}), file.clone()).await;
    assert_eq!(first["duplicate"], false);
    let second = upload_file(
        &app,
        &op1,
        &json!({"code": "TW-I001", "caption": "later caption", "character": "kiki",
                "tags": ["new", "other"]}),
        file.clone(),
    )
    .await;
    assert_eq!(second["duplicate"], true, "{second}");
    assert_eq!(second["media_id"], first["media_id"]);
    assert_ne!(second["upload_id"], first["upload_id"]);
    assert_eq!(media_rows(&app).await, 1);
    // The item gained what it lacked.
    let listed = item(&app, &op1, &first["media_id"]).await;
    assert_eq!(listed["caption"], "later caption", "{listed}");
    assert_eq!(listed["character"], "kiki", "{listed}");
    assert_eq!(listed["tags"], json!(["new", "other"]), "{listed}");
    // ... and keeps what it has: a third upload neither replaces the caption nor drops tags.
    let third = upload_file(
        &app,
        &op1,
        &json!({"code": "TW-T001", "caption": "third", "character": "momo",
                "tags": ["Other", "third"]}),
        file.clone(),
    )
    .await;
    assert_eq!(third["media_id"], first["media_id"]);
    let listed = item(&app, &op1, &first["media_id"]).await;
    assert_eq!(listed["caption"], "later caption");
    assert_eq!(listed["character"], "kiki");
    assert_eq!(listed["tags"], json!(["new", "other", "third"]));
    // Both uploads point at the item.
    assert_eq!(
        app.count(&format!(
            "SELECT count(*) AS n FROM uploads WHERE media_id = '{}'",
            first["media_id"].as_str().unwrap()
        ))
        .await,
        3
    );

    // The same file in another project, or another workspace, is another item.
    let food = upload_file(
        &app,
        &app.agent_key("op2"),
        &json!({"code": "TW-T002"}),
        file.clone(),
    )
    .await;
    assert_eq!(food["duplicate"], false);
    let japan = upload_file(
        &app,
        &app.agent_key("jp1"),
        &json!({"code": "JP-T001"}),
        file,
    )
    .await;
    assert_eq!(japan["duplicate"], false);
    assert_eq!(media_rows(&app).await, 3);
    // An archived item is not found again: the file becomes a new item.
    app.sql(&format!(
        "UPDATE media SET archived_at = now() WHERE id = '{}'",
        first["media_id"].as_str().unwrap()
    ))
    .await;
    let again = upload_file(&app, &op1, &json!({"code": "TW-T001"}), png(5, 5, b"same")).await;
    assert_eq!(again["duplicate"], false);
    assert_ne!(again["media_id"], first["media_id"]);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_single_link_takes_no_chunks_and_a_chunked_link_no_whole_file() {
    let app = spawn_app().await;
    let key = app.agent_key("op1");
    let single = new_upload(&app, &key, &json!({"code": "TW-T001"})).await;
    let url = single["upload_url"].as_str().unwrap();
    let chunk = url.replacen("?t=", "/chunks?t=", 1) + "&n=0";
    let res = put(&app, &chunk, png(2, 2, b"x")).await;
    assert_error(&res, 422, "rejected");

    let video = big_video(SINGLE_MAX + 100, b"mode");
    let chunked = new_upload(
        &app,
        &key,
        &json!({"code": "TW-T001", "mime_type": "video/mp4", "bytes": video.len()}),
    )
    .await;
    let whole = chunked["chunk_url"]
        .as_str()
        .unwrap()
        .replacen("/chunks?t=", "?t=", 1)
        .trim_end_matches("&n=")
        .to_owned();
    let res = put(&app, &whole, faststart_mp4()).await;
    assert_error(&res, 422, "rejected");
    assert_eq!(media_rows(&app).await, 0);
    // Both links still work the right way.
    let res = put(&app, url, png(2, 2, b"x")).await;
    assert_status(&res, 200);
    let res = put_chunk(&app, &chunked, 0, video[..CHUNK].to_vec()).await;
    assert_status(&res, 200);
}

// ---------------------------------------------------------------------------------------------
// PUT /uploads/{id}/chunks

#[tokio::test(flavor = "multi_thread")]
async fn chunks_arrive_in_order_and_make_the_file() {
    let app = spawn_app().await;
    let key = app.agent_key("op1");
    let video = big_video(CHUNK * 2 + 12_345, b"in order");
    let total = video.len();
    let up = new_upload(
        &app,
        &key,
        &json!({"code": "TW-T001", "mime_type": "video/mp4", "bytes": total,
                "caption": "long clip", "tags": ["clip"]}),
    )
    .await;
    let id = upload_id(&up);
    assert_eq!(up["chunks"], 3);
    let part = |n: usize| video[n * CHUNK..((n + 1) * CHUNK).min(total)].to_vec();

    // Chunk 1 before chunk 0: 422 naming the next chunk.
    let res = put_chunk(&app, &up, 1, part(1)).await;
    let v = assert_error(&res, 422, "rejected");
    assert_eq!(v["field"], "n", "{v}");
    assert_eq!(v["next_chunk"], 0, "{v}");

    let res = put_chunk(&app, &up, 0, part(0)).await;
    assert_status(&res, 200);
    assert_eq!(
        res.json(),
        json!({"upload_id": id, "media_id": null, "received_bytes": CHUNK,
               "total_bytes": total, "next_chunk": 1, "done": false})
    );
    assert_eq!(
        app.count(&format!(
            "SELECT count(*) AS n FROM uploads WHERE id = '{id}' AND next_chunk = 1
               AND received_bytes = {CHUNK} AND hash_state IS NOT NULL
               AND detected_mime = 'video/mp4'"
        ))
        .await,
        1
    );

    // Resending chunk 0, even with other bytes, only answers the progress.
    let mut altered = part(0);
    altered[100] ^= 0xFF;
    let res = put_chunk(&app, &up, 0, altered).await;
    assert_status(&res, 200);
    assert_eq!(res.json()["received_bytes"], CHUNK);
    assert_eq!(res.json()["next_chunk"], 1);
    assert_eq!(res.json()["done"], false);

    // Skipped, past the end, wrong sizes.
    let v = assert_error(&put_chunk(&app, &up, 2, part(2)).await, 422, "rejected");
    assert_eq!(v["next_chunk"], 1, "{v}");
    assert_eq!(v["field"], "n");
    let res = put_chunk(&app, &up, 3, part(2)).await;
    assert_invalid(&res, "n");
    let res = put_chunk(&app, &up, -1, part(2)).await;
    assert_invalid(&res, "n");
    let res = put_chunk(&app, &up, 1, part(1)[..CHUNK - 1].to_vec()).await;
    assert_invalid(&res, "body");
    let res = put_chunk(&app, &up, 1, Vec::new()).await;
    assert_invalid(&res, "body");
    let mut over = part(1);
    over.push(0);
    let chunk1 = format!("{}1", up["chunk_url"].as_str().unwrap());
    let res = put_refusable(&app, &chunk1, over).await;
    assert_error(&res, 413, "payload_too_large");
    assert_eq!(
        app.count(&format!(
            "SELECT count(*) AS n FROM uploads WHERE id = '{id}' AND next_chunk = 1"
        ))
        .await,
        1
    );

    let res = put_chunk(&app, &up, 1, part(1)).await;
    assert_status(&res, 200);
    assert_eq!(res.json()["received_bytes"], CHUNK * 2);
    assert_eq!(res.json()["next_chunk"], 2);
    // The last chunk must be exactly the rest.
    let mut long_last = part(2);
    long_last.push(0);
    assert_invalid(&put_chunk(&app, &up, 2, long_last).await, "body");
    assert_invalid(
        &put_chunk(&app, &up, 2, part(2)[1..].to_vec()).await,
        "body",
    );
    assert_eq!(media_rows(&app).await, 0);

    let res = put_chunk(&app, &up, 2, part(2)).await;
    assert_status(&res, 200);
    let done = res.json();
    assert_eq!(done["done"], true, "{done}");
    assert_eq!(done["received_bytes"], total);
    assert_eq!(done["total_bytes"], total);
    assert!(done["next_chunk"].is_null(), "{done}");
    let media_id = done["media_id"].clone();
    assert!(media_id.is_string(), "{done}");

    // Done: any chunk answers the final state; the single PUT refuses.
    let again = put_chunk(&app, &up, 0, part(0)).await;
    assert_status(&again, 200);
    assert_eq!(again.json(), done);
    let again = put_chunk(&app, &up, 2, part(2)).await;
    assert_eq!(again.json(), done);

    let listed = item(&app, &key, &media_id).await;
    assert_eq!(listed["kind"], "video");
    assert_eq!(listed["mime_type"], "video/mp4");
    assert_eq!(listed["bytes"], total);
    assert_eq!(listed["width"], 64);
    assert_eq!(listed["height"], 48);
    assert_eq!(listed["duration_ms"], 1520);
    assert_eq!(listed["caption"], "long clip");
    assert!(listed["thumb_url"].is_null(), "{listed}");
    let got = fetch(&app, listed["url"].as_str().unwrap(), None).await;
    assert_status(&got, 200);
    assert_eq!(got.header("content-type"), Some("video/mp4"));
    assert_eq!(got.body.len(), total);
    assert!(
        got.body == video,
        "the stored file differs from the sent one"
    );
    assert_eq!(
        app.count(&format!(
            "SELECT count(*) AS n FROM media WHERE id = '{}' AND sha256 = '{}' AND parts = 3
               AND part_bytes = {CHUNK}",
            media_id.as_str().unwrap(),
            sha256_hex(&video)
        ))
        .await,
        1
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_file_of_exactly_two_chunks_ends_with_a_full_chunk() {
    let app = spawn_app().await;
    let key = app.agent_key("op1");
    let video = big_video(CHUNK * 2, b"exact");
    let done = upload_chunked(
        &app,
        &key,
        &json!({"code": "TW-T001", "mime_type": "video/mp4", "bytes": video.len()}),
        &video,
    )
    .await;
    assert_eq!(done["received_bytes"], CHUNK * 2);
    let listed = item(&app, &key, &done["media_id"]).await;
    assert_eq!(listed["duration_ms"], 1520);
    let got = fetch(&app, listed["url"].as_str().unwrap(), None).await;
    assert!(got.body == video);
}

#[tokio::test(flavor = "multi_thread")]
async fn progress_survives_a_restart_of_the_service() {
    let app = spawn_app().await;
    let key = app.agent_key("op1");
    let video = big_video(CHUNK * 2 + 777, b"restart");
    let up = new_upload(
        &app,
        &key,
        &json!({"code": "TW-T001", "mime_type": "video/mp4", "bytes": video.len()}),
    )
    .await;
    let id = upload_id(&up);
    let res = put_chunk(&app, &up, 0, video[..CHUNK].to_vec()).await;
    assert_status(&res, 200);
    assert_eq!(
        app.count(&format!(
            "SELECT count(*) AS n FROM uploads WHERE id = '{id}' AND length(hash_state) > 0"
        ))
        .await,
        1
    );

    let (client, handle) = second_instance(&app).await;
    let chunk_path = path_of(&app, up["chunk_url"].as_str().unwrap());
    // The new instance knows where the upload stands.
    let res = put_to(
        &client,
        &format!("{chunk_path}2"),
        video[CHUNK * 2..].to_vec(),
    )
    .await;
    assert_eq!(assert_error(&res, 422, "rejected")["next_chunk"], 1);
    let res = put_to(
        &client,
        &format!("{chunk_path}1"),
        video[CHUNK..CHUNK * 2].to_vec(),
    )
    .await;
    assert_status(&res, 200);
    assert_eq!(res.json()["next_chunk"], 2);
    let res = put_to(
        &client,
        &format!("{chunk_path}2"),
        video[CHUNK * 2..].to_vec(),
    )
    .await;
    assert_status(&res, 200);
    let done = res.json();
    assert_eq!(done["done"], true, "{done}");
    // Both instances sign links with the same key.
    let listed = item(&app, &key, &done["media_id"]).await;
    let file_path = path_of(&app, listed["url"].as_str().unwrap());
    let got = client
        .send(Request::new("GET", &file_path).header("Range", "bytes=0-99"))
        .await;
    assert_eq!(got.status, 206, "{}", got.text());
    assert_eq!(got.body, video[..100]);
    handle.stop(true).await;

    let listed = item(&app, &key, &done["media_id"]).await;
    assert_eq!(listed["duration_ms"], 1520);
    assert_eq!(listed["width"], 64);
    let got = fetch(&app, listed["url"].as_str().unwrap(), None).await;
    assert_eq!(sha256_hex(&got.body), sha256_hex(&video));
    assert_eq!(
        app.count(&format!(
            "SELECT count(*) AS n FROM media WHERE id = '{}' AND sha256 = '{}'",
            done["media_id"].as_str().unwrap(),
            sha256_hex(&video)
        ))
        .await,
        1
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn the_same_chunk_sent_several_times_at_once_is_taken_once() {
    let app = spawn_app().await;
    let key = app.agent_key("op1");
    let video = big_video(CHUNK * 2 + 99, b"at once");
    let up = new_upload(
        &app,
        &key,
        &json!({"code": "TW-T001", "mime_type": "video/mp4", "bytes": video.len()}),
    )
    .await;
    let id = upload_id(&up);
    let part = |n: usize| video[n * CHUNK..((n + 1) * CHUNK).min(video.len())].to_vec();
    for n in 0..3 {
        let sends = (0..4).map(|_| put_chunk(&app, &up, n as i64, part(n)));
        let answers = futures_util::future::join_all(sends).await;
        for res in &answers {
            assert_eq!(res.status, 200, "chunk {n}: {}", res.text());
        }
        let state = format!(
            "SELECT count(*) AS n FROM uploads WHERE id = '{id}' AND next_chunk = {}
               AND received_bytes = {}",
            n + 1,
            ((n + 1) * CHUNK).min(video.len())
        );
        assert_eq!(app.count(&state).await, 1, "after chunk {n}");
        if n == 2 {
            let ids: BTreeSet<String> = answers
                .iter()
                .map(|r| r.json()["media_id"].as_str().expect("media_id").to_owned())
                .collect();
            assert_eq!(ids.len(), 1, "{ids:?}");
            assert!(answers.iter().all(|r| r.json()["done"] == true));
        }
    }
    assert_eq!(media_rows(&app).await, 1);
    let items = items(&app, &key, "").await;
    let got = fetch(&app, items[0]["url"].as_str().unwrap(), None).await;
    assert!(got.body == video, "the stored file differs");
    assert_eq!(
        app.count(&format!(
            "SELECT count(*) AS n FROM media WHERE sha256 = '{}'",
            sha256_hex(&video)
        ))
        .await,
        1
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn the_same_chunked_file_twice_is_one_item_and_the_copy_is_removed() {
    let app = spawn_app().await;
    let key = app.agent_key("op1");
    let video = big_video(SINGLE_MAX + 4096, b"twice");
    let body = json!({"code": "TW-T001", "mime_type": "video/mp4", "bytes": video.len()});
    let first = upload_chunked(&app, &key, &body, &video).await;

    let up = new_upload(
        &app,
        &key,
        &json!({"code": "TW-I001", "mime_type": "video/mp4", "bytes": video.len(),
                "tags": ["again"]}),
    )
    .await;
    let id = upload_id(&up);
    let parts = app
        .data_dir
        .join("media")
        .join("uploads")
        .join(id.to_string());
    let res = put_chunk(&app, &up, 0, video[..CHUNK].to_vec()).await;
    assert_status(&res, 200);
    assert!(
        parts.join("0").exists(),
        "{} holds chunk 0",
        parts.display()
    );
    let res = put_chunk(&app, &up, 1, video[CHUNK..].to_vec()).await;
    assert_status(&res, 200);
    let second = res.json();
    assert_eq!(second["done"], true);
    assert_eq!(second["media_id"], first["media_id"]);
    assert_eq!(media_rows(&app).await, 1);
    assert!(
        !parts.join("0").exists() && !parts.join("1").exists(),
        "the copy's parts are deleted"
    );
    let listed = item(&app, &key, &first["media_id"]).await;
    assert_eq!(listed["tags"], json!(["again"]));

    // A third copy whose last chunk is sent several times at once.
    let up = new_upload(&app, &key, &body).await;
    assert_status(&put_chunk(&app, &up, 0, video[..CHUNK].to_vec()).await, 200);
    let sends = (0..4).map(|_| put_chunk(&app, &up, 1, video[CHUNK..].to_vec()));
    for res in futures_util::future::join_all(sends).await {
        assert_eq!(res.status, 200, "{}", res.text());
        assert_eq!(res.json()["media_id"], first["media_id"]);
        assert_eq!(res.json()["done"], true);
    }
    assert_eq!(media_rows(&app).await, 1);
    let parts = app
        .data_dir
        .join("media")
        .join("uploads")
        .join(upload_id(&up).to_string());
    assert!(
        !parts.join("0").exists() && !parts.join("1").exists(),
        "no part of the third copy is left behind"
    );
    let got = fetch(&app, listed["url"].as_str().unwrap(), None).await;
    assert!(got.body == video, "the first copy is still served whole");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_chunked_video_of_another_type_than_declared_is_stored_as_the_file_says() {
    let app = spawn_app().await;
    let key = app.agent_key("op1");
    let total = SINGLE_MAX + 10;
    let body = json!({"code": "TW-T001", "mime_type": "video/webm", "bytes": total});
    let done = upload_chunked(&app, &key, &body, &big_video(total, b"declared webm")).await;
    let id = done["media_id"].as_str().expect("media_id");
    let item = items(&app, &key, "kind=video")
        .await
        .into_iter()
        .find(|m| m["id"] == id)
        .expect("the video is in the library");
    assert_eq!(item["mime_type"], "video/mp4", "{item}");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_chunked_upload_takes_only_a_video() {
    let app = spawn_app().await;
    let key = app.agent_key("op1");
    let total = SINGLE_MAX + 10;
    let up = new_upload(
        &app,
        &key,
        &json!({"code": "TW-T001", "mime_type": "video/webm", "bytes": total}),
    )
    .await;
    // An image where a video was declared.
    let res = put_chunk(&app, &up, 0, png_of_len(CHUNK, b"img")).await;
    assert_invalid(&res, "body");
    let res = put_chunk(&app, &up, 0, vec![0x42; CHUNK]).await;
    assert_invalid(&res, "body");
    assert_eq!(
        app.count(&format!(
            "SELECT count(*) AS n FROM uploads WHERE id = '{}' AND next_chunk = 0",
            upload_id(&up)
        ))
        .await,
        1
    );

    // n is required; a video whose container cannot be read is refused at the last chunk.
    let no_n = up["chunk_url"]
        .as_str()
        .unwrap()
        .trim_end_matches("&n=")
        .to_owned();
    assert_invalid(&put(&app, &no_n, vec![0; 10]).await, "n");
    assert_invalid(&put_chunk(&app, &up, 1001, vec![0; 10]).await, "n");
    let junk = {
        let mut v = CLIP_WEBM[..64].to_vec();
        v.resize(total, 0);
        v
    };
    assert_status(&put_chunk(&app, &up, 0, junk[..CHUNK].to_vec()).await, 200);
    let res = put_chunk(&app, &up, 1, junk[CHUNK..].to_vec()).await;
    assert_invalid(&res, "body");
    let junk = no_moov(total);
    let mp4 = new_upload(
        &app,
        &key,
        &json!({"code": "TW-T001", "mime_type": "video/mp4", "bytes": total}),
    )
    .await;
    assert_status(&put_chunk(&app, &mp4, 0, junk[..CHUNK].to_vec()).await, 200);
    assert_invalid(
        &put_chunk(&app, &mp4, 1, junk[CHUNK..].to_vec()).await,
        "body",
    );
    assert_eq!(media_rows(&app).await, 0);

    // A wrong token and an expired link.
    let video = big_video(total, b"t");
    let up = new_upload(
        &app,
        &key,
        &json!({"code": "TW-T001", "mime_type": "video/mp4", "bytes": total}),
    )
    .await;
    let bad = format!(
        "{}{API}/uploads/{}/chunks?t=wrong&n=0",
        app.base,
        upload_id(&up)
    );
    assert_error(
        &put(&app, &bad, video[..CHUNK].to_vec()).await,
        401,
        "unauthorized",
    );
    assert_status(&put_chunk(&app, &up, 0, video[..CHUNK].to_vec()).await, 200);
    app.sql(&format!(
        "UPDATE uploads SET expires_at = now() - interval '1 minute' WHERE id = '{}'",
        upload_id(&up)
    ))
    .await;
    let res = put_chunk(&app, &up, 1, video[CHUNK..].to_vec()).await;
    assert_error(&res, 401, "unauthorized");
    assert_eq!(media_rows(&app).await, 0);
}

// ---------------------------------------------------------------------------------------------
// PUT /uploads/{id}/poster

#[tokio::test(flavor = "multi_thread")]
async fn a_poster_sent_before_the_video_becomes_its_thumbnail() {
    let app = spawn_app().await;
    let key = app.agent_key("op1");
    let up = new_upload(
        &app,
        &key,
        &json!({"code": "TW-T001", "mime_type": "video/mp4", "bytes": FASTSTART_MP4.len()}),
    )
    .await;
    let poster = jpeg(64, 48, b"poster");
    let res = put(&app, up["poster_url"].as_str().unwrap(), poster.clone()).await;
    assert_status(&res, 200);
    assert_eq!(
        res.json(),
        json!({"upload_id": up["upload_id"], "poster": true})
    );
    let res = put(&app, up["upload_url"].as_str().unwrap(), faststart_mp4()).await;
    assert_status(&res, 200);
    let listed = item(&app, &key, &res.json()["media_id"]).await;
    let thumb = listed["thumb_url"].as_str().expect("thumb_url");
    assert!(thumb.contains("/thumb?"), "{thumb}");
    let got = fetch(&app, thumb, None).await;
    assert_status(&got, 200);
    assert_eq!(got.header("content-type"), Some("image/jpeg"));
    assert_eq!(got.body, poster);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_poster_sent_while_the_video_arrives_is_kept() {
    let app = spawn_app().await;
    let key = app.agent_key("op1");
    for i in 0..12u8 {
        let video = big_video(SINGLE_MAX - 64, &[b'v', i]);
        let up = new_upload(
            &app,
            &key,
            &json!({"code": "TW-T001", "mime_type": "video/mp4", "bytes": video.len()}),
        )
        .await;
        let poster = png(64, 48, &[b'p', i]);
        let (stored, posted) = tokio::join!(
            put(&app, up["upload_url"].as_str().unwrap(), video),
            put(&app, up["poster_url"].as_str().unwrap(), poster.clone()),
        );
        assert_status(&stored, 200);
        assert_status(&posted, 200);
        let listed = item(&app, &key, &stored.json()["media_id"]).await;
        let thumb = listed["thumb_url"]
            .as_str()
            .unwrap_or_else(|| panic!("round {i}: the poster was lost: {listed}"));
        assert_eq!(fetch(&app, thumb, None).await.body, poster, "round {i}");
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_poster_sent_after_the_video_replaces_the_thumbnail() {
    let app = spawn_app().await;
    let key = app.agent_key("op1");
    let video = big_video(SINGLE_MAX + 1, b"poster after");
    let up = new_upload(
        &app,
        &key,
        &json!({"code": "TW-T001", "mime_type": "video/mp4", "bytes": video.len()}),
    )
    .await;
    assert_status(&put_chunk(&app, &up, 0, video[..CHUNK].to_vec()).await, 200);
    let done = put_chunk(&app, &up, 1, video[CHUNK..].to_vec())
        .await
        .json();
    let listed = item(&app, &key, &done["media_id"]).await;
    assert!(listed["thumb_url"].is_null(), "{listed}");

    let poster_url = up["poster_url"].as_str().unwrap();
    let first = png(64, 48, b"one");
    assert_status(&put(&app, poster_url, first.clone()).await, 200);
    let listed = item(&app, &key, &done["media_id"]).await;
    let got = fetch(&app, listed["thumb_url"].as_str().unwrap(), None).await;
    assert_eq!(got.body, first);
    assert_eq!(got.header("content-type"), Some("image/png"));
    let second = webp(64, 48, b"two");
    assert_status(&put(&app, poster_url, second.clone()).await, 200);
    let listed = item(&app, &key, &done["media_id"]).await;
    let got = fetch(&app, listed["thumb_url"].as_str().unwrap(), None).await;
    assert_eq!(got.body, second);
    // The file itself is unchanged.
    let got = fetch(&app, listed["url"].as_str().unwrap(), None).await;
    assert!(got.body == video);

    // Still allowed once the draft carrying the video is submitted.
    let res = app
        .client
        .post(
            &format!("{API}/drafts"),
            &key,
            &json!({"code": "TW-T001", "body": "with a video", "upload_ids": [up["upload_id"]]}),
        )
        .await;
    assert_status(&res, 201);
    assert_eq!(
        app.count(&format!(
            "SELECT count(*) AS n FROM post_media WHERE media_id = '{}'",
            done["media_id"].as_str().unwrap()
        ))
        .await,
        1
    );
    let third = jpeg(64, 48, b"three");
    assert_status(&put(&app, poster_url, third.clone()).await, 200);
    let listed = item(&app, &key, &done["media_id"]).await;
    assert_eq!(listed["used_count"], 1);
    let got = fetch(&app, listed["thumb_url"].as_str().unwrap(), None).await;
    assert_eq!(got.body, third);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_poster_is_a_small_image_for_a_video_only() {
    let app = spawn_app().await;
    let key = app.agent_key("op1");
    let up = new_upload(
        &app,
        &key,
        &json!({"code": "TW-T001", "mime_type": "video/mp4", "bytes": FASTSTART_MP4.len()}),
    )
    .await;
    let url = up["poster_url"].as_str().unwrap().to_owned();
    for (name, bytes) in [
        ("video", faststart_mp4()),
        ("gif", b"GIF89a\x01\0\x01\0\0\0\0;".to_vec()),
        ("empty", Vec::new()),
    ] {
        let res = put(&app, &url, bytes).await;
        assert_field_in(name, &res, 400, "invalid_request", "body");
    }
    let res = put_refusable(&app, &url, png_of_len(SINGLE_MAX + 1, b"p")).await;
    assert_error(&res, 413, "payload_too_large");
    let largest = png_of_len(SINGLE_MAX, b"p");
    assert_status(&put(&app, &url, largest.clone()).await, 200);
    let wrong = url.replace("?t=", "?t=x");
    assert_error(
        &put(&app, &wrong, png(1, 1, b"")).await,
        401,
        "unauthorized",
    );
    let done = put(&app, up["upload_url"].as_str().unwrap(), faststart_mp4()).await;
    let listed = item(&app, &key, &done.json()["media_id"]).await;
    let got = fetch(&app, listed["thumb_url"].as_str().unwrap(), None).await;
    assert!(got.body == largest);

    // Images have no poster, whether declared or judged from the file.
    let declared = new_upload(
        &app,
        &key,
        &json!({"code": "TW-T001", "mime_type": "image/png"}),
    )
    .await;
    let res = put(
        &app,
        declared["poster_url"].as_str().unwrap(),
        png(1, 1, b"a"),
    )
    .await;
    assert_error(&res, 422, "rejected");
    let judged = new_upload(&app, &key, &json!({"code": "TW-T001"})).await;
    let image = png(9, 9, b"judged");
    let stored = put(&app, judged["upload_url"].as_str().unwrap(), image.clone()).await;
    assert_status(&stored, 200);
    let res = put(
        &app,
        judged["poster_url"].as_str().unwrap(),
        jpeg(1, 1, b"b"),
    )
    .await;
    assert_error(&res, 422, "rejected");
    let listed = item(&app, &key, &stored.json()["media_id"]).await;
    let got = fetch(&app, listed["thumb_url"].as_str().unwrap(), None).await;
    assert!(got.body == image, "an image is its own thumbnail");
    // A poster sent before an undeclared file that turns out to be an image is dropped.
    let early = new_upload(&app, &key, &json!({"code": "TW-T001"})).await;
    let res = put(
        &app,
        early["poster_url"].as_str().unwrap(),
        jpeg(1, 1, b"c"),
    )
    .await;
    assert_status(&res, 200);
    let image = png(7, 7, b"early");
    let stored = put(&app, early["upload_url"].as_str().unwrap(), image.clone()).await;
    assert_status(&stored, 200);
    let listed = item(&app, &key, &stored.json()["media_id"]).await;
    let got = fetch(&app, listed["thumb_url"].as_str().unwrap(), None).await;
    assert!(got.body == image, "an image is its own thumbnail");
    assert_eq!(
        app.count(
            "SELECT count(*) AS n FROM media WHERE kind = 'image' AND poster_key IS NOT NULL"
        )
        .await,
        0
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn the_chunks_of_an_abandoned_upload_are_removed_after_its_link_expires() {
    let app = spawn_app().await;
    let key = app.agent_key("op1");
    let video = big_video(CHUNK * 2 + 10, b"abandoned");
    let body = json!({"code": "TW-T001", "mime_type": "video/mp4", "bytes": video.len()});
    let (left, kept) = (
        new_upload(&app, &key, &body).await,
        new_upload(&app, &key, &body).await,
    );
    for up in [&left, &kept] {
        assert_status(&put_chunk(&app, up, 0, video[..CHUNK].to_vec()).await, 200);
    }
    let part = |up: &Value| {
        app.data_dir
            .join("media/uploads")
            .join(upload_id(up).to_string())
            .join("0")
    };
    assert!(part(&left).exists() && part(&kept).exists());
    // The first link expired two hours ago; the second is still valid.
    app.sql(&format!(
        "UPDATE uploads SET expires_at = now() - interval '2 hours' WHERE id = '{}'",
        upload_id(&left)
    ))
    .await;

    let config = Config {
        rate_limit_per_minute: 10_000,
        base_url: None,
        ..Config::default()
    };
    let (state, store) = fleetdesk::compose(&app.db.url, &app.data_dir, config, 2, false, None)
        .await
        .expect("compose");
    // The minute's sweep job of the background worker clears it.
    fleetdesk::worker::Worker::new(store)
        .media(state.ctx.media.clone())
        .tick()
        .await;
    assert_eq!(
        app.count("SELECT count(*) AS n FROM jobs WHERE kind = 'sweep' AND status = 'done'")
            .await,
        1
    );
    assert!(!part(&left).exists(), "the abandoned chunk is gone");
    assert!(part(&kept).exists(), "a live upload keeps its chunks");
    assert_eq!(
        app.count(&format!(
            "SELECT count(*) AS n FROM uploads WHERE id = '{}' AND next_chunk = 0 \
             AND hash_state IS NULL",
            upload_id(&left)
        ))
        .await,
        1
    );
    // Nothing left to do the second time; the live upload still finishes.
    assert_eq!(state.ctx.media.sweep_abandoned_uploads().await.unwrap(), 0);
    assert_status(
        &put_chunk(&app, &kept, 1, video[CHUNK..CHUNK * 2].to_vec()).await,
        200,
    );
    let done = put_chunk(&app, &kept, 2, video[CHUNK * 2..].to_vec()).await;
    assert_eq!(done.json()["done"], true);
}

// ---------------------------------------------------------------------------------------------
// Chunks are written as they arrive: a body that is not the chunk leaves nothing

/// The files under an upload's parts directory, staging files (`<n>#<k>`) included, sorted.
fn part_files(app: &TestApp, upload: &Value) -> Vec<String> {
    let dir = app
        .data_dir
        .join("media/uploads")
        .join(upload_id(upload).to_string());
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

/// Waits until the upload's directory holds exactly `expected` (a refused or cut chunk's
/// staging file is removed as the request ends, which a client does not see when its
/// connection is gone).
async fn wait_for_parts(app: &TestApp, upload: &Value, expected: &[&str]) {
    for _ in 0..200 {
        if part_files(app, upload) == expected {
            return;
        }
        tokio::time::sleep(std::time::Duration::from_millis(25)).await;
    }
    assert_eq!(part_files(app, upload), expected);
}

/// Where the upload stands: (next_chunk, received_bytes).
async fn progress_of(app: &TestApp, upload: &Value) -> (i64, i64) {
    let id = upload_id(upload);
    let next = app
        .count(&format!(
            "SELECT next_chunk::bigint AS n FROM uploads WHERE id = '{id}'"
        ))
        .await;
    let received = app
        .count(&format!(
            "SELECT received_bytes::bigint AS n FROM uploads WHERE id = '{id}'"
        ))
        .await;
    (next, received)
}

/// A PUT of `bytes` in chunked transfer encoding (no Content-Length), 64 KiB a piece, written
/// while the answer is read (the server may answer before it is all written).
async fn put_chunked_encoding(app: &TestApp, url: &str, bytes: Vec<u8>) -> Response {
    let host = app.client.host().to_owned();
    let mut wire = format!(
        "PUT {} HTTP/1.1\r\nHost: {host}\r\nContent-Type: application/octet-stream\r\n\
         Transfer-Encoding: chunked\r\n\r\n",
        path_of(app, url)
    )
    .into_bytes();
    for piece in bytes.chunks(64 * 1024) {
        wire.extend_from_slice(format!("{:x}\r\n", piece.len()).as_bytes());
        wire.extend_from_slice(piece);
        wire.extend_from_slice(b"\r\n");
    }
    wire.extend_from_slice(b"0\r\n\r\n");
    send_refusable(app, wire).await
}

/// A video of two chunks and `rest` bytes, its chunked upload and chunk 0 taken.
async fn three_chunks_one_sent(
    app: &TestApp,
    key: &str,
    rest: usize,
    salt: &[u8],
) -> (Vec<u8>, Value) {
    let video = big_video(CHUNK * 2 + rest, salt);
    let up = new_upload(
        app,
        key,
        &json!({"code": "TW-T001", "mime_type": "video/mp4", "bytes": video.len()}),
    )
    .await;
    assert_status(&put_chunk(app, &up, 0, video[..CHUNK].to_vec()).await, 200);
    (video, up)
}

#[tokio::test(flavor = "multi_thread")]
async fn a_chunk_longer_than_its_size_is_refused_and_nothing_is_stored() {
    let app = spawn_app().await;
    let key = app.agent_key("op1");
    let (video, up) = three_chunks_one_sent(&app, &key, 5000, b"longer").await;
    let part = |n: usize| video[n * CHUNK..((n + 1) * CHUNK).min(video.len())].to_vec();
    let chunk_url = |n: usize| format!("{}{n}", up["chunk_url"].as_str().unwrap());

    // Past the operation's limit without a Content-Length: the body is cut off at the limit
    // as it streams, 413, and the bytes written so far are discarded.
    let mut over = part(1);
    over.extend_from_slice(&[7; 70_000]);
    let res = put_chunked_encoding(&app, &chunk_url(1), over.clone()).await;
    assert_error(&res, 413, "payload_too_large");
    wait_for_parts(&app, &up, &["0"]).await;
    assert_eq!(progress_of(&app, &up).await, (1, CHUNK as i64));
    // With a Content-Length past the limit: 413 before anything is read.
    let res = put_refusable(&app, &chunk_url(1), over).await;
    assert_error(&res, 413, "payload_too_large");
    assert_eq!(part_files(&app, &up), ["0"]);

    // A wrong token, or a chunk after the next one, is refused before the body is read.
    let wrong = chunk_url(1).replace("t=", "t=x");
    let res = put(&app, &wrong, part(1)).await;
    assert_error(&res, 401, "unauthorized");
    let res = put_chunk(&app, &up, 2, part(2)).await;
    assert_eq!(assert_error(&res, 422, "rejected")["next_chunk"], 1);
    assert_eq!(part_files(&app, &up), ["0"]);
    assert_eq!(progress_of(&app, &up).await, (1, CHUNK as i64));

    assert_status(&put_chunk(&app, &up, 1, part(1)).await, 200);
    // The last chunk one byte longer than the rest, within the limit: 400 saying how long it
    // was, chunked encoding or not, and nothing stored.
    let mut long_last = part(2);
    long_last.push(0);
    for res in [
        put_chunk(&app, &up, 2, long_last.clone()).await,
        put_chunked_encoding(&app, &chunk_url(2), long_last.clone()).await,
    ] {
        let v = assert_error(&res, 400, "invalid_request");
        assert_eq!(v["field"], "body", "{v}");
        let message = v["message"].as_str().unwrap();
        assert!(message.contains("is 5001 bytes"), "{message}");
    }
    assert_eq!(part_files(&app, &up), ["0", "1"]);
    assert_eq!(progress_of(&app, &up).await, (2, 2 * CHUNK as i64));
    assert_eq!(media_rows(&app).await, 0);

    // The right bytes finish the file.
    let done = put_chunk(&app, &up, 2, part(2)).await;
    assert_status(&done, 200);
    assert_eq!(done.json()["done"], true);
    let listed = item(&app, &key, &done.json()["media_id"]).await;
    let got = fetch(&app, listed["url"].as_str().unwrap(), None).await;
    assert!(
        got.body == video,
        "the stored file differs from the sent one"
    );
    assert_eq!(part_files(&app, &up), ["0", "1", "2"]);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_chunk_cut_short_is_not_stored_and_can_be_sent_again() {
    use tokio::io::{AsyncWriteExt, BufReader};
    let app = spawn_app().await;
    let key = app.agent_key("op1");
    let (video, up) = three_chunks_one_sent(&app, &key, 4321, b"cut short").await;
    let part = |n: usize| video[n * CHUNK..((n + 1) * CHUNK).min(video.len())].to_vec();
    let chunk_path = path_of(&app, &format!("{}1", up["chunk_url"].as_str().unwrap()));
    let host = app.client.host().to_owned();
    let wire = Request::new("PUT", &chunk_path)
        .header("Content-Type", "application/octet-stream")
        .raw(part(1))
        .encode(&host);
    // Headers promising the whole chunk, then a bit over half of it (more than one part of
    // the local store is written), then the connection ends: once half-closed (the answer is
    // read, if any), once dropped.
    let cut = wire.len() - CHUNK / 2 + 12_345;
    for half_close in [true, false] {
        let stream = tokio::net::TcpStream::connect(&host)
            .await
            .expect("connect");
        let (read, mut write) = stream.into_split();
        write.write_all(&wire[..cut]).await.expect("write");
        // Let the server take what was sent before the connection ends.
        tokio::time::sleep(std::time::Duration::from_millis(300)).await;
        if half_close {
            write.shutdown().await.expect("shutdown");
            let answer = tokio::time::timeout(
                std::time::Duration::from_secs(10),
                read_response(&mut BufReader::new(read)),
            )
            .await
            .expect("the server ends the request");
            // Whether the server still answers a half-closed connection is actix's choice;
            // an answer is a 400 about the body.
            if let Ok(res) = answer {
                assert_error(&res, 400, "invalid_request");
            }
        } else {
            drop((read, write));
        }
        wait_for_parts(&app, &up, &["0"]).await;
        assert_eq!(progress_of(&app, &up).await, (1, CHUNK as i64));
    }

    // Sent again whole, it is taken, and the file is whole.
    let res = put_chunk(&app, &up, 1, part(1)).await;
    assert_status(&res, 200);
    assert_eq!(res.json()["next_chunk"], 2);
    let done = put_chunk(&app, &up, 2, part(2)).await;
    assert_status(&done, 200);
    let listed = item(&app, &key, &done.json()["media_id"]).await;
    assert_eq!(listed["duration_ms"], 1520);
    let got = fetch(&app, listed["url"].as_str().unwrap(), None).await;
    assert!(
        got.body == video,
        "the stored file differs from the sent one"
    );
    assert_eq!(
        app.count(&format!(
            "SELECT count(*) AS n FROM media WHERE sha256 = '{}'",
            sha256_hex(&video)
        ))
        .await,
        1
    );
}
