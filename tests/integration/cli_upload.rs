//! `fleetdesk upload`: the real binary uploading through the public API of a running service,
//! chunked, resumable and paced, its progress in MiB, its failures one line that says why.

use crate::uploads::{big_video, sha256_hex};
use fleetdesk_tests::binary::{Proc, TempDir, fleetdesk, run};
use fleetdesk_tests::{TestApp, spawn_app};
use serde_json::Value;
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

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
    // Sizes in MiB; the rate is that of the chunks this run sent, so the resend of chunk 0
    // (answered with where the upload stood) shows none.
    assert!(err.contains(" MiB") && !err.contains(" MB"), "{err}");
    let resumed_at = err
        .lines()
        .find(|l| l.contains('%'))
        .expect("a progress line");
    assert!(!resumed_at.contains("/s"), "{err}");
    assert!(
        err.lines().last().unwrap_or_default().contains("MiB/s"),
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
    // Nothing was sent: no rate, and it says so.
    assert!(err.contains("holds this file already"), "{err}");
    assert!(!err.contains("/s"), "{err}");
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
    let (status, out, err) = run(
        backtraced(upload(&app, wrong, &file, &[])),
        Duration::from_secs(60),
    )
    .await;
    assert!(!status.success(), "{out}");
    assert_one_line_error(&err);
    assert!(err.contains("401"), "{err}");
    assert!(!err.contains(wrong), "{err}");
    // A file that is not there.
    let missing = dir.path().join("nowhere.jpg");
    let (status, _, err) = run(
        backtraced(upload(&app, &key, &missing, &[])),
        Duration::from_secs(60),
    )
    .await;
    assert_eq!(status.code(), Some(1), "{err}");
    assert_one_line_error(&err);
    assert!(
        err.contains("nowhere.jpg") && err.contains("No such file"),
        "{err}"
    );
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

/// A user's mistake is one line, `error: ...`, even with backtraces asked for.
#[track_caller]
fn assert_one_line_error(err: &str) {
    assert_eq!(err.trim_end().lines().count(), 1, "{err}");
    assert!(err.starts_with("error: "), "{err}");
    assert!(
        !err.contains("backtrace") && !err.contains("panicked"),
        "{err}"
    );
}

fn backtraced(mut cmd: std::process::Command) -> std::process::Command {
    cmd.env("RUST_BACKTRACE", "1");
    cmd
}

/// A TCP proxy in front of the app that notes when the client's bytes arrive, and cuts every
/// connection once `cut_after` bytes went through (when set).
struct Proxy {
    base: String,
    arrived: Arc<Mutex<Vec<(Instant, usize)>>>,
}

impl Proxy {
    async fn start(app: &TestApp, cut_after: Option<usize>) -> Proxy {
        let upstream = app.base.trim_start_matches("http://").to_owned();
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let base = format!("http://{}", listener.local_addr().expect("addr"));
        let arrived: Arc<Mutex<Vec<(Instant, usize)>>> = Arc::default();
        let noted = arrived.clone();
        tokio::spawn(async move {
            while let Ok((client, _)) = listener.accept().await {
                let server = TcpStream::connect(&upstream).await.expect("the app");
                let noted = noted.clone();
                tokio::spawn(async move {
                    let (mut client_read, mut client_write) = client.into_split();
                    let (mut server_read, mut server_write) = server.into_split();
                    let back = tokio::spawn(async move {
                        let _ = tokio::io::copy(&mut server_read, &mut client_write).await;
                    });
                    let mut buf = vec![0u8; 64 << 10];
                    loop {
                        let n = match client_read.read(&mut buf).await {
                            Ok(0) | Err(_) => break,
                            Ok(n) => n,
                        };
                        let total = {
                            let mut noted = noted.lock().unwrap();
                            noted.push((Instant::now(), n));
                            noted.iter().map(|(_, n)| n).sum::<usize>()
                        };
                        if cut_after.is_some_and(|cut| total > cut)
                            || server_write.write_all(&buf[..n]).await.is_err()
                        {
                            break;
                        }
                    }
                    back.abort();
                });
            }
        });
        Proxy { base, arrived }
    }

    /// The most bytes that arrived within any `window`.
    fn busiest(&self, window: Duration) -> usize {
        let arrived = self.arrived.lock().unwrap();
        (0..arrived.len())
            .map(|i| {
                arrived[i..]
                    .iter()
                    .take_while(|(at, _)| at.duration_since(arrived[i].0) < window)
                    .map(|(_, n)| n)
                    .sum()
            })
            .max()
            .unwrap_or(0)
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn the_limit_rate_holds_in_every_second_not_only_on_average() {
    let app = spawn_app().await;
    let key = app.agent_key("op1");
    let proxy = Proxy::start(&app, None).await;
    let dir = TempDir::new("upr");
    // 768 KiB: one request (no chunks), at 256 KiB/s.
    let video = big_video(768 << 10, b"paced upload");
    let file = dir.path().join("paced.mp4");
    std::fs::write(&file, &video).expect("write the video");
    let mut cmd = upload(&app, &key, &file, &["--limit-rate", "256K"]);
    cmd.env("FLEETDESK_URL", &proxy.base);
    let started = Instant::now();
    let (status, out, err) = run(cmd, Duration::from_secs(60)).await;
    let took = started.elapsed();
    assert!(status.success(), "{out}\n{err}");
    let sent: usize = proxy.arrived.lock().unwrap().iter().map(|(_, n)| n).sum();
    assert!(sent > video.len(), "{sent}");
    // 768 KiB at 256 KiB/s: the last 752 KiB (past the first burst) take about 2.9 s.
    assert!(took > Duration::from_millis(2500), "{took:?}");
    // No second carries much more than the rate: the bucket holds 16 KiB, the requests'
    // heads a few hundred bytes; 128 KiB of room for a busy machine's scheduling.
    let busiest = proxy.busiest(Duration::from_secs(1));
    assert!(
        busiest <= (256 + 128) << 10,
        "{busiest} bytes within one second at --limit-rate 256K"
    );
    assert!(err.contains("MiB/s"), "{err}");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_cut_upload_says_why_and_to_run_it_again_and_keeps_the_chunks_it_took() {
    let app = spawn_app().await;
    let key = app.agent_key("op1");
    let dir = TempDir::new("upc");
    // Three chunks: 3 MiB, 3 MiB and 1 MiB; the connection is cut inside the third.
    let video = big_video(2 * CHUNK + (1 << 20), b"cut upload");
    let file = dir.path().join("cut.mp4");
    std::fs::write(&file, &video).expect("write the video");
    let proxy = Proxy::start(&app, Some(2 * CHUNK + (512 << 10))).await;
    let mut cmd = backtraced(upload(&app, &key, &file, &[]));
    cmd.env("FLEETDESK_URL", &proxy.base);
    let (status, _, err) = run(cmd, Duration::from_secs(60)).await;
    assert_eq!(status.code(), Some(1), "{err}");
    let last = err.trim_end().lines().last().unwrap_or_default();
    assert!(
        last.starts_with("error: sending chunk 3 of 3 failed: ")
            && last.ends_with("run the same command again to resume from that chunk"),
        "{err}"
    );
    // Why: more than reqwest's "error sending request".
    assert!(last.matches(": ").count() > 2, "{last}");

    // The service kept the two chunks it took (running it again resumes from there:
    // `an_upload_killed_mid_file_resumes_from_the_next_chunk`).
    assert_eq!(received(&app).await, 2 * CHUNK as i64);

    // No service at all: it says so, in one line.
    let mut cmd = backtraced(upload(&app, &key, &file, &[]));
    cmd.env("FLEETDESK_URL", "http://127.0.0.1:9");
    let (status, _, err) = run(cmd, Duration::from_secs(60)).await;
    assert_eq!(status.code(), Some(1), "{err}");
    assert_one_line_error(&err);
    assert!(
        err.contains("could not reach the service") && err.contains("refused"),
        "{err}"
    );
}
