//! The media library's thumbnails: every thumb link serves a real small image (longest side
//! 320 px), made once when the image (or a video's poster) enters the library, stored and
//! recorded; an item without one gets it on its first thumb request.

use crate::uploads::{
    API, assert_status, big_video, faststart_mp4, fetch, item, new_upload, png, put, sha256_hex,
    upload_file,
};
use fleetdesk_tests::{Response, TestApp, spawn_app};
use image::{DynamicImage, ImageFormat, Rgb, RgbImage, Rgba, RgbaImage};
use serde_json::{Value, json};

// ---------------------------------------------------------------------------------------------
// helpers

/// Noise: pixels that compress badly, so a file is far larger than its thumbnail.
fn noise(w: u32, h: u32, seed: u32) -> RgbImage {
    let mut x = seed.wrapping_mul(2_654_435_761) | 1;
    RgbImage::from_fn(w, h, |_, _| {
        x ^= x << 13;
        x ^= x >> 17;
        x ^= x << 5;
        Rgb([x as u8, (x >> 8) as u8, (x >> 16) as u8])
    })
}

fn encoded(image: DynamicImage, format: ImageFormat) -> Vec<u8> {
    let mut out = std::io::Cursor::new(Vec::new());
    image.write_to(&mut out, format).expect("encode a fixture");
    out.into_inner()
}

/// A `w` x `h` picture of noise in `format`.
fn picture(w: u32, h: u32, seed: u32, format: ImageFormat) -> Vec<u8> {
    encoded(DynamicImage::ImageRgb8(noise(w, h, seed)), format)
}

fn decoded(res: &Response) -> DynamicImage {
    image::load_from_memory(&res.body).unwrap_or_else(|e| panic!("the thumbnail decodes: {e}"))
}

/// What the item records: `(thumb_key, thumb_mime, storage_key)`.
async fn recorded(app: &TestApp, id: &str) -> (Option<String>, Option<String>, String) {
    use diesel::sql_types::{Nullable, Text};
    use diesel_async::RunQueryDsl;
    #[derive(diesel::QueryableByName)]
    struct Row {
        #[diesel(sql_type = Nullable<Text>)]
        thumb_key: Option<String>,
        #[diesel(sql_type = Nullable<Text>)]
        thumb_mime: Option<String>,
        #[diesel(sql_type = Text)]
        storage_key: String,
    }
    let row: Row = diesel::sql_query(format!(
        "SELECT thumb_key, thumb_mime, storage_key FROM media WHERE id = '{id}'"
    ))
    .get_result(&mut app.connect().await)
    .await
    .expect("the media row");
    (row.thumb_key, row.thumb_mime, row.storage_key)
}

fn thumb_key_of(source: &[u8], ext: &str) -> String {
    let sha = sha256_hex(source);
    format!("thumbs/{}/{sha}.{ext}", &sha[..2])
}

/// The item records this thumbnail.
async fn assert_thumb_key(app: &TestApp, id: &str, key: &str) {
    assert_eq!(
        recorded(app, id).await.0.as_deref(),
        Some(key),
        "media {id}"
    );
}

async fn forget_thumb(app: &TestApp, id: &str) {
    app.sql(&format!(
        "UPDATE media SET thumb_key = NULL, thumb_mime = NULL WHERE id = '{id}'"
    ))
    .await;
}

/// Uploads an image for TW-T001; its media id.
async fn upload_image(app: &TestApp, bytes: Vec<u8>) -> String {
    let done = upload_file(
        app,
        &app.agent_key("op1"),
        &json!({"code": "TW-T001"}),
        bytes,
    )
    .await;
    done["media_id"].as_str().expect("media_id").to_owned()
}

async fn thumb_url(app: &TestApp, id: &str) -> String {
    let listed = item(app, &app.agent_key("op1"), &json!(id)).await;
    listed["thumb_url"]
        .as_str()
        .unwrap_or_else(|| panic!("no thumb_url: {listed}"))
        .to_owned()
}

/// Status, type, caching and sandboxing of a thumbnail answer.
#[track_caller]
fn assert_thumb_answer(res: &Response, status: u16, mime: &str) {
    assert_status(res, status);
    assert_eq!(res.header("content-type"), Some(mime));
    assert_eq!(res.header("accept-ranges"), Some("bytes"));
    assert_eq!(res.header("cache-control"), Some("private, max-age=3600"));
    assert_eq!(res.header("x-content-type-options"), Some("nosniff"));
    assert_eq!(
        res.header("content-security-policy"),
        Some("sandbox; default-src 'none'")
    );
}

// ---------------------------------------------------------------------------------------------
// Made when the image enters the library

#[tokio::test(flavor = "multi_thread")]
async fn a_large_image_has_a_small_thumbnail_made_once() {
    let app = spawn_app().await;
    for (i, (format, w, h)) in [
        (ImageFormat::Png, 900, 600),
        (ImageFormat::Jpeg, 1200, 800),
        (ImageFormat::WebP, 500, 700),
    ]
    .into_iter()
    .enumerate()
    {
        let file = picture(w, h, i as u32 + 1, format);
        let id = upload_image(&app, file.clone()).await;
        let key = thumb_key_of(&file, "jpg");
        assert_eq!(
            recorded(&app, &id).await.0.as_deref(),
            Some(key.as_str()),
            "{format:?}: recorded with the item"
        );
        assert!(app.data_dir.join("media").join(&key).is_file(), "{key}");
        let url = thumb_url(&app, &id).await;
        let got = fetch(&app, &url, None).await;
        assert_thumb_answer(&got, 200, "image/jpeg");
        let small = decoded(&got);
        assert_eq!(small.width().max(small.height()), 320, "{format:?}");
        assert_eq!(
            (small.width() as f64 / small.height() as f64 * 10.0).round(),
            (w as f64 / h as f64 * 10.0).round(),
            "{format:?}: the proportions are kept"
        );
        assert!(
            got.body.len() < file.len() / 4,
            "{format:?}: {} bytes for a file of {}",
            got.body.len(),
            file.len()
        );

        // HTTP Range as on the file itself.
        let len = got.body.len();
        let part = fetch(&app, &url, Some("bytes=0-9")).await;
        assert_thumb_answer(&part, 206, "image/jpeg");
        assert_eq!(
            part.header("content-range"),
            Some(format!("bytes 0-9/{len}").as_str())
        );
        assert_eq!(part.body, got.body[..10]);
        let tail = fetch(&app, &url, Some("bytes=-5")).await;
        assert_eq!(tail.body, got.body[len - 5..]);
        let past = fetch(&app, &url, Some(&format!("bytes={len}-"))).await;
        assert_eq!(past.status, 416, "{}", past.text());
        assert_eq!(
            past.header("content-range"),
            Some(format!("bytes */{len}").as_str())
        );

        // The second request reads the stored thumbnail: the recorded key stays, and what is
        // stored is what is served.
        std::fs::write(app.data_dir.join("media").join(&key), b"stored").unwrap();
        let again = fetch(&app, &url, None).await;
        assert_eq!(again.body, b"stored", "{format:?}");
        assert_eq!(recorded(&app, &id).await.0.as_deref(), Some(key.as_str()));
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_small_image_keeps_its_size_and_transparency_stays_png() {
    let app = spawn_app().await;
    let file = picture(200, 120, 7, ImageFormat::Jpeg);
    let id = upload_image(&app, file).await;
    let got = fetch(&app, &thumb_url(&app, &id).await, None).await;
    assert_thumb_answer(&got, 200, "image/jpeg");
    let small = decoded(&got);
    assert_eq!((small.width(), small.height()), (200, 120));

    let clear = RgbaImage::from_fn(640, 480, |x, _| Rgba([10, 20, 30, (x % 256) as u8]));
    let file = encoded(DynamicImage::ImageRgba8(clear), ImageFormat::Png);
    let id = upload_image(&app, file.clone()).await;
    assert_eq!(
        recorded(&app, &id).await.1.as_deref(),
        Some("image/png"),
        "a transparent image's thumbnail is a PNG"
    );
    let got = fetch(&app, &thumb_url(&app, &id).await, None).await;
    assert_thumb_answer(&got, 200, "image/png");
    let small = decoded(&got);
    assert_eq!((small.width(), small.height()), (320, 240));
    assert!(small.color().has_alpha());
    assert_thumb_key(&app, &id, &thumb_key_of(&file, "png")).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_video_with_a_poster_has_a_small_thumbnail() {
    let app = spawn_app().await;
    let key = app.agent_key("op1");
    let video =
        json!({"code": "TW-T001", "mime_type": "video/mp4", "bytes": faststart_mp4().len()});

    // A poster sent before the video: the thumbnail is made as the video enters the library.
    let up = new_upload(&app, &key, &video).await;
    let poster = picture(1280, 720, 11, ImageFormat::Jpeg);
    assert_status(
        &put(&app, up["poster_url"].as_str().unwrap(), poster.clone()).await,
        200,
    );
    let done = put(&app, up["upload_url"].as_str().unwrap(), faststart_mp4()).await;
    assert_status(&done, 200);
    let id = done.json()["media_id"].as_str().unwrap().to_owned();
    assert_thumb_key(&app, &id, &thumb_key_of(&poster, "jpg")).await;
    let got = fetch(&app, &thumb_url(&app, &id).await, None).await;
    assert_thumb_answer(&got, 200, "image/jpeg");
    let small = decoded(&got);
    assert_eq!((small.width(), small.height()), (320, 180));
    assert!(got.body.len() < poster.len() / 4);

    // A poster sent after (another video): made as the poster joins the item, and made again
    // from a poster that replaces it.
    let clip = big_video(300_000, b"second");
    let other = json!({"code": "TW-T001", "mime_type": "video/mp4", "bytes": clip.len()});
    let up = new_upload(&app, &key, &other).await;
    let done = put(&app, up["upload_url"].as_str().unwrap(), clip).await;
    assert_status(&done, 200);
    let id = done.json()["media_id"].as_str().unwrap().to_owned();
    assert_eq!(recorded(&app, &id).await.0, None);
    for (n, poster) in [
        picture(640, 960, 12, ImageFormat::Png),
        picture(900, 300, 13, ImageFormat::WebP),
    ]
    .into_iter()
    .enumerate()
    {
        assert_status(
            &put(&app, up["poster_url"].as_str().unwrap(), poster.clone()).await,
            200,
        );
        assert_eq!(
            recorded(&app, &id).await.0,
            Some(thumb_key_of(&poster, "jpg")),
            "poster {n}"
        );
        let got = fetch(&app, &thumb_url(&app, &id).await, None).await;
        assert_thumb_answer(&got, 200, "image/jpeg");
        let small = decoded(&got);
        let expected = [(213, 320), (320, 107)][n];
        let (w, h) = (small.width() as i64, small.height() as i64);
        assert!(
            (w - expected.0).abs() <= 1 && (h - expected.1).abs() <= 1,
            "poster {n}: {w}x{h}"
        );
    }
}

// ---------------------------------------------------------------------------------------------
// Made on the first request when missing

#[tokio::test(flavor = "multi_thread")]
async fn an_item_without_a_thumbnail_gets_one_on_its_first_request() {
    let app = spawn_app().await;
    let file = picture(1000, 500, 21, ImageFormat::Png);
    let id = upload_image(&app, file.clone()).await;
    let key = thumb_key_of(&file, "jpg");
    // As an item stored before thumbnails existed.
    forget_thumb(&app, &id).await;
    std::fs::remove_file(app.data_dir.join("media").join(&key)).unwrap();
    let url = thumb_url(&app, &id).await;

    // Two first requests at once: both are served, one thumbnail is recorded.
    let (a, b) = tokio::join!(fetch(&app, &url, None), fetch(&app, &url, None));
    assert_thumb_answer(&a, 200, "image/jpeg");
    assert_thumb_answer(&b, 200, "image/jpeg");
    assert_eq!(a.body, b.body);
    let small = decoded(&a);
    assert_eq!((small.width(), small.height()), (320, 160));
    let (thumb_key, thumb_mime, _) = recorded(&app, &id).await;
    assert_eq!(thumb_key.as_deref(), Some(key.as_str()));
    assert_eq!(thumb_mime.as_deref(), Some("image/jpeg"));
    assert!(app.data_dir.join("media").join(&key).is_file());

    // Then it is read, not made again.
    std::fs::write(app.data_dir.join("media").join(&key), b"stored").unwrap();
    assert_eq!(fetch(&app, &url, None).await.body, b"stored");
    assert_eq!(recorded(&app, &id).await.0.as_deref(), Some(key.as_str()));

    // A video's, from its poster.
    let up = new_upload(
        &app,
        &app.agent_key("op1"),
        &json!({"code": "TW-T001", "mime_type": "video/mp4", "bytes": faststart_mp4().len()}),
    )
    .await;
    let poster = picture(800, 800, 22, ImageFormat::Jpeg);
    put(&app, up["poster_url"].as_str().unwrap(), poster.clone()).await;
    let done = put(&app, up["upload_url"].as_str().unwrap(), faststart_mp4()).await;
    let video = done.json()["media_id"].as_str().unwrap().to_owned();
    forget_thumb(&app, &video).await;
    let got = fetch(&app, &thumb_url(&app, &video).await, None).await;
    assert_thumb_answer(&got, 200, "image/jpeg");
    assert_eq!(decoded(&got).width(), 320);
    assert_thumb_key(&app, &video, &thumb_key_of(&poster, "jpg")).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn an_image_that_cannot_be_decoded_stands_as_its_own_thumbnail() {
    let app = spawn_app().await;
    // A PNG header without pixels: judged a PNG, stored, but no picture can be made of it.
    let file = png(4, 4, b"no pixels");
    let id = upload_image(&app, file.clone()).await;
    let (thumb_key, thumb_mime, storage_key) = recorded(&app, &id).await;
    assert_eq!(
        thumb_key.as_ref(),
        Some(&storage_key),
        "recorded: tried once"
    );
    assert_eq!(thumb_mime.as_deref(), Some("image/png"));
    let url = thumb_url(&app, &id).await;
    let got = fetch(&app, &url, None).await;
    assert_thumb_answer(&got, 200, "image/png");
    assert_eq!(got.body, file);
    let part = fetch(&app, &url, Some("bytes=1-3")).await;
    assert_eq!(part.status, 206);
    assert_eq!(part.body, file[1..4]);
    // Found missing, it is decided on the first request the same way.
    forget_thumb(&app, &id).await;
    let got = fetch(&app, &url, None).await;
    assert_thumb_answer(&got, 200, "image/png");
    assert_eq!(got.body, file);
    assert_eq!(recorded(&app, &id).await.0, Some(storage_key));
}

// ---------------------------------------------------------------------------------------------
// The identical file and inline images

#[tokio::test(flavor = "multi_thread")]
async fn an_identical_image_and_inline_images_enter_with_their_thumbnail() {
    let app = spawn_app().await;
    let key = app.agent_key("op1");
    let file = picture(700, 350, 31, ImageFormat::Png);
    let id = upload_image(&app, file.clone()).await;
    forget_thumb(&app, &id).await;
    // The same file again finds the item, which gains the thumbnail it lacked.
    let again = upload_file(&app, &key, &json!({"code": "TW-T001"}), file.clone()).await;
    assert_eq!(again["media_id"], json!(id), "{again}");
    assert_eq!(again["duplicate"], true, "{again}");
    assert_thumb_key(&app, &id, &thumb_key_of(&file, "jpg")).await;

    // An inline image of a draft (twice in one draft, and one already in the library without
    // a thumbnail).
    use base64::Engine as _;
    let b64 = |b: &[u8]| base64::engine::general_purpose::STANDARD.encode(b);
    let inline = picture(300, 600, 32, ImageFormat::WebP);
    forget_thumb(&app, &id).await;
    let res = app
        .client
        .post(
            &format!("{API}/drafts"),
            &key,
            &json!({"code": "TW-T001", "body": "inline thumbnails", "images": [
                {"data": b64(&inline)}, {"data": b64(&inline)}, {"data": b64(&file)}
            ]}),
        )
        .await;
    assert_eq!(res.status, 201, "{}", res.text());
    let inline_key = thumb_key_of(&inline, "jpg");
    assert_eq!(
        app.count(&format!(
            "SELECT count(*) AS n FROM media WHERE source = 'inline' AND thumb_key = '{inline_key}' \
             AND thumb_mime = 'image/jpeg'"
        ))
        .await,
        1
    );
    assert_thumb_key(&app, &id, &thumb_key_of(&file, "jpg")).await;
    let items: Vec<Value> = crate::uploads::items(&app, &key, "limit=100").await;
    let listed = items
        .iter()
        .find(|m| m["width"] == 300 && m["height"] == 600)
        .expect("the inline image is listed");
    let got = fetch(&app, listed["thumb_url"].as_str().unwrap(), None).await;
    assert_thumb_answer(&got, 200, "image/jpeg");
    let small = decoded(&got);
    assert_eq!((small.width(), small.height()), (160, 320));
}
