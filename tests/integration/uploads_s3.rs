//! Uploads and the media library end to end on S3-compatible storage: the app runs against a
//! moto server (`fleetdesk_storage::testing::Moto`, a child process), and
//! the test checks that every byte went through the bucket.

use std::collections::BTreeSet;

use fleetdesk_kernel::blob::BlobStore;
use fleetdesk_storage::testing::Moto;
use fleetdesk_storage::{ObjectBlobStore, S3Config};
use fleetdesk_tests::client::Request;
use fleetdesk_tests::{Response, TestApp, spawn_app};
use futures_util::StreamExt as _;
use serde_json::{Value, json};

const BUCKET: &str = "fleetdesk-uploads";
const KEY_ID: &str = "fleetdesk-test-key-id";
const SECRET: &str = "fleetdesk-test-secret";
const CHUNK: usize = 3_145_728;

/// A valid 3x2 PNG.
const PNG_3X2: &[u8] = &[
    0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A, 0x00, 0x00, 0x00, 0x0D, 0x49, 0x48, 0x44, 0x52,
    0x00, 0x00, 0x00, 0x03, 0x00, 0x00, 0x00, 0x02, 0x08, 0x02, 0x00, 0x00, 0x00, 0x12, 0x16, 0xF1,
    0x4D, 0x00, 0x00, 0x00, 0x1C, 0x49, 0x44, 0x41, 0x54, 0x78, 0x9C, 0x63, 0x60, 0x60, 0x60, 0x08,
    0x08, 0x08, 0x58, 0xB0, 0x60, 0x01, 0x83, 0x86, 0x86, 0x46, 0x45, 0x45, 0xC5, 0x89, 0x13, 0x27,
    0x00, 0x34, 0x1C, 0x07, 0x09, 0x56, 0x98, 0xCD, 0xC8, 0x00, 0x00, 0x00, 0x00, 0x49, 0x45, 0x4E,
    0x44, 0xAE, 0x42, 0x60, 0x82,
];

/// The 64x48, 1.52 s test clip (moov after mdat) grown past 4 MiB by a `free` box of zeros
/// after `ftyp`. The box ends 1 KiB before the second chunk boundary, so the first boundary
/// falls in zeros and the second in the clip's own bytes. (The chunk offsets in `moov` now
/// point 6 MiB short; the probe reads only durations and sizes, which do not move.)
fn padded_clip() -> Vec<u8> {
    let clip = include_bytes!("../../crates/media/tests/fixtures/moov_at_end.mp4");
    let ftyp = u32::from_be_bytes(clip[..4].try_into().unwrap()) as usize;
    assert_eq!(&clip[4..8], b"ftyp");
    let free = 2 * CHUNK - ftyp - 1024;
    let mut video = Vec::with_capacity(clip.len() + free);
    video.extend_from_slice(&clip[..ftyp]);
    video.extend_from_slice(&(free as u32).to_be_bytes());
    video.extend_from_slice(b"free");
    video.resize(ftyp + free, 0);
    video.extend_from_slice(&clip[ftyp..]);
    video
}

/// The path and query of an absolute link the app handed out.
fn path_of(app: &TestApp, url: &Value) -> String {
    let url = url.as_str().unwrap_or_else(|| panic!("not a link: {url}"));
    url.strip_prefix(&app.base)
        .unwrap_or_else(|| panic!("{url} is not on {}", app.base))
        .to_owned()
}

fn body(res: &Response) -> String {
    String::from_utf8_lossy(&res.body).into_owned()
}

async fn put(app: &TestApp, path: &str, bytes: &[u8]) -> Response {
    app.client
        .send(
            Request::new("PUT", path)
                .header("Content-Type", "application/octet-stream")
                .raw(bytes.to_vec()),
        )
        .await
}

#[tokio::test(flavor = "multi_thread")]
async fn uploads_and_media_live_in_the_s3_bucket() {
    if std::env::var("FLEETDESK_SKIP_S3_TESTS").as_deref() == Ok("1") {
        eprintln!("FLEETDESK_SKIP_S3_TESTS=1: skipping the S3 test");
        return;
    }
    // Setting the environment below is only sound with this test alone in its process.
    if std::env::var("NEXTEST_EXECUTION_MODE").as_deref() != Ok("process-per-test") {
        eprintln!("skipping: this test sets environment variables, run it with cargo nextest");
        return;
    }
    let moto = tokio::task::spawn_blocking(Moto::start).await.unwrap();
    moto.create_bucket(BUCKET);
    let endpoint = moto.endpoint();
    // SAFETY: nextest runs each test in a process of its own (checked above), so no other
    // test shares this environment, and nothing in this process reads or writes it while we
    // write: the runtime's workers are idle and the app, which reads these variables in
    // `fleetdesk::blob_store`, starts after this block.
    unsafe {
        std::env::set_var("FLEETDESK_S3_BUCKET", BUCKET);
        std::env::set_var("FLEETDESK_S3_ENDPOINT", &endpoint);
        std::env::set_var("AWS_ACCESS_KEY_ID", KEY_ID);
        std::env::set_var("AWS_SECRET_ACCESS_KEY", SECRET);
        std::env::set_var("AWS_REGION", "us-east-1");
    }
    let app = spawn_app().await;
    let key = app.agent_key("op1");

    // A single upload: the link, then the file without a key.
    let res = app
        .client
        .post(
            "/api/agent/v1/uploads",
            &key,
            &json!({"code": "TW-T001", "caption": "s3"}),
        )
        .await;
    assert_eq!(res.status, 201, "{}", body(&res));
    let single = res.json();
    assert_eq!(single["mode"], "single", "{single}");
    let res = put(&app, &path_of(&app, &single["upload_url"]), PNG_3X2).await;
    assert_eq!(res.status, 200, "{}", body(&res));
    let stored = res.json();
    assert_eq!(stored["kind"], "image", "{stored}");
    assert_eq!(stored["duplicate"], false, "{stored}");
    let image_id = stored["media_id"].as_str().expect("media_id").to_owned();

    // A chunked upload of a video over 4 MiB.
    let video = padded_clip();
    assert!(video.len() > 4 << 20 && video.len() < 3 * CHUNK);
    let res = app
        .client
        .post(
            "/api/agent/v1/uploads",
            &key,
            &json!({"code": "TW-T001", "mime_type": "video/mp4", "bytes": video.len()}),
        )
        .await;
    assert_eq!(res.status, 201, "{}", body(&res));
    let chunked = res.json();
    assert_eq!(chunked["mode"], "chunked", "{chunked}");
    assert_eq!(chunked["chunk_bytes"], CHUNK, "{chunked}");
    assert_eq!(chunked["chunks"], 3, "{chunked}");
    let upload_id = chunked["upload_id"].as_str().expect("upload_id").to_owned();
    let chunk_url = path_of(&app, &chunked["chunk_url"]);
    let mut video_id = None;
    for (n, chunk) in video.chunks(CHUNK).enumerate() {
        let res = put(&app, &format!("{chunk_url}{n}"), chunk).await;
        assert_eq!(res.status, 200, "chunk {n}: {}", body(&res));
        let progress = res.json();
        let last = n == 2;
        assert_eq!(progress["done"], last, "chunk {n}: {progress}");
        assert_eq!(
            progress["received_bytes"],
            (CHUNK * (n + 1)).min(video.len()),
            "chunk {n}: {progress}"
        );
        if last {
            video_id = progress["media_id"].as_str().map(str::to_owned);
        }
    }
    let video_id = video_id.expect("the last chunk answers the media_id");

    // The library lists both, the video measured from the parts in the bucket.
    let res = app.client.get("/api/agent/v1/media", &key).await;
    assert_eq!(res.status, 200, "{}", body(&res));
    let list = res.json();
    let item = |id: &str| -> Value {
        list["media"]
            .as_array()
            .expect("media")
            .iter()
            .find(|m| m["id"] == id)
            .unwrap_or_else(|| panic!("{id} is not listed: {list}"))
            .clone()
    };
    let image = item(&image_id);
    assert_eq!(
        (&image["kind"], &image["mime_type"], &image["caption"]),
        (&json!("image"), &json!("image/png"), &json!("s3")),
        "{image}"
    );
    assert_eq!(
        (&image["width"], &image["height"], &image["bytes"]),
        (&json!(3), &json!(2), &json!(PNG_3X2.len())),
        "{image}"
    );
    let clip = item(&video_id);
    assert_eq!(
        (&clip["kind"], &clip["mime_type"], &clip["bytes"]),
        (&json!("video"), &json!("video/mp4"), &json!(video.len())),
        "{clip}"
    );
    assert_eq!(
        (&clip["width"], &clip["height"], &clip["duration_ms"]),
        (&json!(64), &json!(48), &json!(1520)),
        "{clip}"
    );

    // The signed links serve the stored bytes, without a key.
    let res = app
        .client
        .send(Request::new("GET", &path_of(&app, &image["url"])))
        .await;
    assert_eq!(res.status, 200, "{}", body(&res));
    assert_eq!(res.body, PNG_3X2);
    let thumb = app
        .client
        .send(Request::new("GET", &path_of(&app, &image["thumb_url"])))
        .await;
    assert_eq!(thumb.status, 200, "{}", body(&thumb));
    assert_eq!(thumb.header("content-type"), Some("image/jpeg"));
    let small = image::load_from_memory(&thumb.body).expect("the thumbnail decodes");
    assert_eq!((small.width(), small.height()), (3, 2));
    let video_path = path_of(&app, &clip["url"]);
    let res = app.client.send(Request::new("GET", &video_path)).await;
    assert_eq!(res.status, 200, "{}", body(&res));
    assert_eq!(res.header("accept-ranges"), Some("bytes"));
    assert!(res.body == video, "the video came back different");
    // Ranges across both part boundaries: zeros of the `free` box, then the clip's own bytes.
    for at in [CHUNK, 2 * CHUNK] {
        let (first, last) = (at - 8, at + 7);
        let res = app
            .client
            .send(
                Request::new("GET", &video_path).header("Range", &format!("bytes={first}-{last}")),
            )
            .await;
        assert_eq!(res.status, 206, "{}", body(&res));
        let expected = format!("bytes {first}-{last}/{}", video.len());
        assert_eq!(res.header("content-range"), Some(expected.as_str()));
        assert_eq!(res.body, &video[first..=last], "bytes={first}-{last}");
    }
    assert!(video[2 * CHUNK - 8..2 * CHUNK + 8].iter().any(|b| *b != 0));

    // The bytes are in the bucket, read back with a client of our own, and not on disk.
    let bucket = ObjectBlobStore::s3(S3Config {
        bucket: BUCKET.into(),
        endpoint: Some(endpoint),
        region: Some("us-east-1".into()),
        access_key_id: Some(KEY_ID.into()),
        secret_access_key: Some(SECRET.into()),
        allow_http: true,
    })
    .unwrap();
    let keys: BTreeSet<String> = bucket
        .inner()
        .list(None)
        .map(|meta| meta.expect("listing the bucket").location.to_string())
        .collect()
        .await;
    let png_sha = sha256_hex(PNG_3X2);
    let png_key = format!("media/{}/{png_sha}.png", &png_sha[..2]);
    // The image's thumbnail, made as it entered the library, next to it.
    let thumb_key = format!("thumbs/{}/{png_sha}.jpg", &png_sha[..2]);
    let parts: Vec<String> = (0..3).map(|n| format!("uploads/{upload_id}/{n}")).collect();
    let expected: BTreeSet<String> = parts
        .iter()
        .cloned()
        .chain([png_key.clone(), thumb_key.clone()])
        .collect();
    assert_eq!(keys, expected);
    assert_eq!(bucket.get(&png_key).await.unwrap(), PNG_3X2);
    assert_eq!(bucket.get(&thumb_key).await.unwrap(), thumb.body);
    for (part, chunk) in parts.iter().zip(video.chunks(CHUNK)) {
        assert!(bucket.get(part).await.unwrap() == chunk, "{part} differs");
    }
    assert!(
        !app.data_dir.join("media").exists(),
        "blobs were written under {}",
        app.data_dir.display()
    );

    app.stop().await;
}

fn sha256_hex(bytes: &[u8]) -> String {
    use sha2::Digest as _;
    sha2::Sha256::digest(bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}
