//! `fleetdesk upload`: the real binary uploading through the public API of a running service,
//! chunked and resumable.

use crate::uploads::{big_video, sha256_hex};
use fleetdesk_tests::binary::{Proc, TempDir, fleetdesk, run};
use fleetdesk_tests::{TestApp, spawn_app};
use serde_json::Value;
use std::path::Path;
use std::time::Duration;

const CHUNK: usize = 3_145_728;

fn upload(app: &TestApp, key: &str, file: &Path, extra: &[&str]) -> std::process::Command {
    let mut args = vec![
        "upload",
        file.to_str().expect("a path"),
        "--code",
        "tw-t001",
    ];
    args.extend_from_slice(extra);
    let mut cmd = fleetdesk(&args);
    cmd.env("FLEETDESK_URL", &app.base)
        .env("FLEETDESK_AGENT_KEY", key);
    cmd
}

async fn received(app: &TestApp) -> i64 {
    app.count("SELECT coalesce(max(received_bytes), 0)::bigint AS n FROM uploads")
        .await
}

#[tokio::test(flavor = "multi_thread")]
async fn an_upload_killed_mid_file_resumes_from_the_next_chunk() {
    let app = spawn_app().await;
    let key = app.agent_key("op1");
    let dir = TempDir::new("upl");
    // Five chunks: four of 3 MiB and the rest.
    let video = big_video(4 * CHUNK + 1000, b"resumable upload");
    let file = dir.path().join("clip.mp4");
    std::fs::write(&file, &video).expect("write the video");

    // Slowed to 1 MiB/s, it is killed once the service has two chunks (a resend of chunk 0
    // answers next_chunk 2 or more: the sign that an earlier run got that far).
    let mut first = Proc::spawn(upload(&app, &key, &file, &["--limit-rate", "1M"]));
    for _ in 0..300 {
        if received(&app).await >= 2 * CHUNK as i64 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    first.kill().await;
    let before = received(&app).await;
    assert!(
        (2 * CHUNK as i64..video.len() as i64).contains(&before),
        "killed after {before} bytes\n{}",
        first.output()
    );

    let (status, out, err) = run(upload(&app, &key, &file, &[]), Duration::from_secs(120)).await;
    assert!(status.success(), "{out}\n{err}");
    let next = (before as usize) / CHUNK;
    assert!(
        err.contains(&format!("resuming at chunk {next} of 5")),
        "{err}"
    );
    let printed: Value = serde_json::from_str(out.trim()).expect("JSON on stdout");
    assert_eq!(printed["bytes"], video.len() as u64, "{printed}");
    let media_id = printed["media_id"].as_str().expect("media_id");
    // One upload, finished, and the library holds exactly the file.
    assert_eq!(app.count("SELECT count(*) AS n FROM uploads").await, 1);
    assert_eq!(
        app.count(&format!(
            "SELECT count(*) AS n FROM media WHERE id = '{media_id}' AND sha256 = '{}' \
             AND bytes = {}",
            sha256_hex(&video),
            video.len()
        ))
        .await,
        1
    );
    assert!(!err.contains(&key) && !out.contains(&key));
    // Run once more, it is the same upload, already done.
    let (status, out, err) = run(upload(&app, &key, &file, &[]), Duration::from_secs(60)).await;
    assert!(status.success(), "{out}\n{err}");
    let again: Value = serde_json::from_str(out.trim()).expect("JSON on stdout");
    assert_eq!(again["media_id"], media_id);
    assert_eq!(app.count("SELECT count(*) AS n FROM uploads").await, 1);
}

#[tokio::test(flavor = "multi_thread")]
async fn an_image_goes_in_one_request_and_refusals_name_the_cause_not_the_key() {
    let app = spawn_app().await;
    let key = app.agent_key("op1");
    let dir = TempDir::new("upi");
    let image = crate::uploads::jpeg(8, 8, b"cli image");
    let file = dir.path().join("photo.jpg");
    std::fs::write(&file, &image).expect("write the image");
    let (status, out, err) = run(
        upload(&app, &key, &file, &["--caption", "cat"]),
        Duration::from_secs(60),
    )
    .await;
    assert!(status.success(), "{out}\n{err}");
    let printed: Value = serde_json::from_str(out.trim()).expect("JSON on stdout");
    assert_eq!(
        app.count(&format!(
            "SELECT count(*) AS n FROM media WHERE id = '{}' AND caption = 'cat'",
            printed["media_id"].as_str().expect("media_id")
        ))
        .await,
        1
    );

    // A key the service refuses: exit non-zero with the service's answer, never the key.
    let wrong = "fda_0000000000000000000000000000000000000000";
    let (status, out, err) = run(upload(&app, wrong, &file, &[]), Duration::from_secs(60)).await;
    assert!(!status.success(), "{out}");
    assert!(err.contains("401"), "{err}");
    assert!(!err.contains(wrong), "{err}");
    // A file that is no image or video.
    let text = dir.path().join("notes.txt");
    std::fs::write(&text, "hello").expect("write");
    let (status, _, err) = run(upload(&app, &key, &text, &[]), Duration::from_secs(60)).await;
    assert!(!status.success());
    assert!(err.contains("not an image or video"), "{err}");
    // No key at all.
    let mut cmd = upload(&app, &key, &file, &[]);
    cmd.env_remove("FLEETDESK_AGENT_KEY");
    let (status, _, err) = run(cmd, Duration::from_secs(60)).await;
    assert!(!status.success());
    assert!(err.contains("FLEETDESK_AGENT_KEY"), "{err}");
}
