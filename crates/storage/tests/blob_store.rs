//! The same round trip and range reads against the local file system, memory and a real
//! S3-compatible server (moto in server mode, started as a child process).

use std::path::PathBuf;
use std::time::{SystemTime, UNIX_EPOCH};

use bytes::Bytes;
use fleetdesk_kernel::blob::{BlobError, BlobStore, BlobWriter};
use fleetdesk_storage::testing::Moto;
use fleetdesk_storage::{ObjectBlobStore, S3Config};

/// Put, get, overwrite, nested keys, delete and the missing-key cases.
async fn round_trip(store: &dyn BlobStore) {
    let missing = store.get("nothing/here.png").await;
    assert!(
        matches!(&missing, Err(BlobError::NotFound(key)) if key == "nothing/here.png"),
        "{missing:?}"
    );

    store
        .put("plain.txt", Bytes::from_static(b"hello"))
        .await
        .unwrap();
    assert_eq!(store.get("plain.txt").await.unwrap(), "hello");

    store
        .put("plain.txt", Bytes::from_static(b"replaced"))
        .await
        .unwrap();
    assert_eq!(store.get("plain.txt").await.unwrap(), "replaced");

    let binary: Bytes = (0..=255u8).cycle().take(70_000).collect();
    store
        .put("avatars/ab/cd.png", binary.clone())
        .await
        .unwrap();
    assert_eq!(store.get("avatars/ab/cd.png").await.unwrap(), binary);
    store.put("avatars/ab/ef.png", Bytes::new()).await.unwrap();
    assert_eq!(store.get("avatars/ab/ef.png").await.unwrap(), "");

    store.delete("avatars/ab/cd.png").await.unwrap();
    assert!(matches!(
        store.get("avatars/ab/cd.png").await,
        Err(BlobError::NotFound(_))
    ));
    // The sibling survives, and deleting again (or something never stored) is fine.
    assert_eq!(store.get("avatars/ab/ef.png").await.unwrap(), "");
    store.delete("avatars/ab/cd.png").await.unwrap();
    store.delete("never/stored").await.unwrap();

    assert!(matches!(
        store.put("a/../b", Bytes::new()).await,
        Err(BlobError::Backend(_))
    ));

    store.delete("plain.txt").await.unwrap();
    store.delete("avatars/ab/ef.png").await.unwrap();
}

/// `get_range` holds the port's contract: the range must lie within the blob, and one that
/// does not is an error naming the blob's size (object_store alone would shorten a range
/// running past the end, and refuse one starting past it in each backend's own words).
async fn ranges(store: &dyn BlobStore) {
    let blob: Bytes = (0..=255u8).cycle().take(1000).collect();
    store.put("ranges/blob.bin", blob.clone()).await.unwrap();
    let read = |range: std::ops::Range<u64>| store.get_range("ranges/blob.bin", range);

    assert_eq!(read(100..200).await.unwrap(), blob.slice(100..200));
    assert_eq!(read(900..1000).await.unwrap(), blob.slice(900..1000));
    assert_eq!(read(999..1000).await.unwrap(), blob.slice(999..1000));
    assert_eq!(read(0..1000).await.unwrap(), blob);
    for empty in [0..0, 500..500, 1000..1000] {
        assert_eq!(read(empty.clone()).await.unwrap(), "", "{empty:?}");
    }

    for outside in [900..1001, 999..2000, 1000..1001, 2000..3000, 1001..1001] {
        match read(outside.clone()).await {
            Err(BlobError::Backend(message)) => assert!(
                message.contains(&format!(
                    "bytes {}..{} are not within the blob's 1000 bytes",
                    outside.start, outside.end
                )),
                "{outside:?}: {message}"
            ),
            other => panic!("{outside:?}: expected a backend error, got {other:?}"),
        }
    }
    #[allow(clippy::reversed_empty_ranges)]
    let backwards = read(10..5).await;
    assert!(
        matches!(&backwards, Err(BlobError::Backend(m)) if m.contains("end before they start")),
        "{backwards:?}"
    );

    for range in [0..4, 0..0] {
        let missing = store.get_range("ranges/missing.bin", range.clone()).await;
        assert!(
            matches!(&missing, Err(BlobError::NotFound(key)) if key == "ranges/missing.bin"),
            "{range:?}: {missing:?}"
        );
    }
    assert!(matches!(
        store.get_range("a/../b", 0..1).await,
        Err(BlobError::Backend(_))
    ));

    store.put("ranges/empty.bin", Bytes::new()).await.unwrap();
    assert_eq!(store.get_range("ranges/empty.bin", 0..0).await.unwrap(), "");
    assert!(matches!(
        store.get_range("ranges/empty.bin", 0..1).await,
        Err(BlobError::Backend(m)) if m.contains("within the blob's 0 bytes")
    ));

    store.delete("ranges/blob.bin").await.unwrap();
    store.delete("ranges/empty.bin").await.unwrap();
}

/// Writes `blob` to a new writer at `key` in pieces of `piece` bytes.
async fn stream(
    store: &dyn BlobStore,
    key: &str,
    blob: &Bytes,
    piece: usize,
) -> Box<dyn BlobWriter> {
    let mut writer = store.put_stream(key).unwrap();
    for at in (0..blob.len()).step_by(piece) {
        writer
            .write(blob.slice(at..(at + piece).min(blob.len())))
            .await
            .unwrap();
    }
    writer
}

/// `put_stream`: a blob written piece by piece, short (held, one put) and longer than the
/// store's part size `part` (a multipart upload), is visible only whole and only once
/// finished; an aborted or dropped one leaves the key as it was.
async fn streaming(store: &dyn BlobStore, part: usize) {
    let missing = |key: &'static str| async move {
        let got = store.get(key).await;
        assert!(
            matches!(&got, Err(BlobError::NotFound(_))),
            "{key}: {got:?}"
        );
    };
    let short: Bytes = (0..=255u8).cycle().take(part / 2 + 3).collect();
    let long: Bytes = (0..=250u8).cycle().take(2 * part + part / 3).collect();

    for (name, blob) in [("short", &short), ("long", &long)] {
        let key = if name == "short" {
            "stream/short.bin"
        } else {
            "stream/long.bin"
        };
        // Finished: there whole, and not before.
        let writer = stream(store, key, blob, 64 * 1024 + 1).await;
        missing(key).await;
        writer.finish().await.unwrap();
        assert!(store.get(key).await.unwrap() == *blob, "{name}: differs");
        assert_eq!(
            store.get_range(key, 1..3).await.unwrap(),
            blob.slice(1..3),
            "{name}"
        );

        // Aborted, or dropped, while replacing it: the blob before stays.
        let other: Bytes = blob.iter().map(|b| b ^ 0xFF).collect();
        let writer = stream(store, key, &other, 100_000).await;
        writer.abort().await.unwrap();
        assert!(store.get(key).await.unwrap() == *blob, "{name}: aborted");
        drop(stream(store, key, &other, 100_000).await);
        assert!(store.get(key).await.unwrap() == *blob, "{name}: dropped");

        // A finished stream replaces it.
        stream(store, key, &other, 7_000)
            .await
            .finish()
            .await
            .unwrap();
        assert!(store.get(key).await.unwrap() == other, "{name}: replaced");
        store.delete(key).await.unwrap();
    }

    // A new key aborted or dropped is never there.
    stream(store, "stream/aborted.bin", &long, 50_000)
        .await
        .abort()
        .await
        .unwrap();
    missing("stream/aborted.bin").await;
    drop(stream(store, "stream/dropped.bin", &short, 50_000).await);
    missing("stream/dropped.bin").await;

    // Nothing written is an empty blob.
    store
        .put_stream("stream/empty.bin")
        .unwrap()
        .finish()
        .await
        .unwrap();
    assert_eq!(store.get("stream/empty.bin").await.unwrap(), "");
    store.delete("stream/empty.bin").await.unwrap();

    assert!(matches!(
        store.put_stream("a/../b").map(|_| ()),
        Err(BlobError::Backend(_))
    ));
}

/// Every file under `dir`, relative, sorted.
fn files_under(dir: &std::path::Path) -> Vec<String> {
    let mut out = Vec::new();
    let mut todo = vec![dir.to_path_buf()];
    while let Some(d) = todo.pop() {
        for entry in std::fs::read_dir(&d).into_iter().flatten().flatten() {
            let path = entry.path();
            if path.is_dir() {
                todo.push(path);
            } else {
                out.push(
                    path.strip_prefix(dir)
                        .unwrap()
                        .to_string_lossy()
                        .into_owned(),
                );
            }
        }
    }
    out.sort();
    out
}

/// A fresh directory under the system temp dir, removed on drop.
struct TempDir(PathBuf);

impl TempDir {
    fn new(label: &str) -> Self {
        let nanos = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap()
            .as_nanos();
        TempDir(std::env::temp_dir().join(format!(
            "fleetdesk-storage-{label}-{}-{nanos}",
            std::process::id()
        )))
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

#[tokio::test]
async fn local_file_system_round_trip() {
    let tmp = TempDir::new("local");
    let dir = tmp.0.join("not/yet/created");
    let store = ObjectBlobStore::local(&dir).unwrap();
    round_trip(&store).await;
    ranges(&store).await;

    store
        .put("avatars/ab/cd.png", Bytes::from_static(b"png"))
        .await
        .unwrap();
    assert_eq!(
        std::fs::read(dir.join("avatars/ab/cd.png")).unwrap(),
        b"png"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn local_file_system_streaming() {
    let tmp = TempDir::new("local-stream");
    let store = ObjectBlobStore::local(&tmp.0).unwrap();
    // A blob being written lives in a staging file beside its key, removed by abort and drop
    // (a drop removes it on a blocking thread: wait for it).
    let blob: Bytes = (0..=255u8).cycle().take(600_000).collect();
    let writer = stream(&store, "stage/blob.bin", &blob, 100_000).await;
    assert_eq!(files_under(&tmp.0), ["stage/blob.bin#1"]);
    writer.abort().await.unwrap();
    assert!(files_under(&tmp.0).is_empty(), "{:?}", files_under(&tmp.0));
    drop(stream(&store, "stage/blob.bin", &blob, 100_000).await);
    for _ in 0..100 {
        if files_under(&tmp.0).is_empty() {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    }
    assert!(files_under(&tmp.0).is_empty(), "{:?}", files_under(&tmp.0));
    stream(&store, "stage/blob.bin", &blob, 100_000)
        .await
        .finish()
        .await
        .unwrap();
    assert_eq!(files_under(&tmp.0), ["stage/blob.bin"]);
    assert!(std::fs::read(tmp.0.join("stage/blob.bin")).unwrap() == blob);

    streaming(&store, fleetdesk_storage::LOCAL_PART_BYTES).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn in_memory_streaming() {
    let part = 64 * 1024;
    streaming(&ObjectBlobStore::in_memory().with_part_bytes(part), part).await;
}

#[tokio::test]
async fn in_memory_round_trip() {
    let store = ObjectBlobStore::in_memory();
    round_trip(&store).await;
    ranges(&store).await;
}

#[tokio::test]
async fn s3_round_trip_against_moto() {
    if std::env::var("FLEETDESK_SKIP_S3_TESTS").as_deref() == Ok("1") {
        eprintln!("FLEETDESK_SKIP_S3_TESTS=1: skipping the S3 test");
        return;
    }
    let moto = Moto::start();
    moto.create_bucket("fleetdesk-test");

    let cfg = S3Config {
        bucket: "fleetdesk-test".into(),
        endpoint: Some(moto.endpoint()),
        region: Some("us-east-1".into()),
        access_key_id: Some("fleetdesk-test-key-id".into()),
        secret_access_key: Some("fleetdesk-test-secret".into()),
        allow_http: true,
    };
    let store = ObjectBlobStore::s3(cfg.clone()).unwrap();
    round_trip(&store).await;
    ranges(&store).await;

    // The object really is on the server: moto's state dump lists it (anonymous
    // GETs of the object itself are refused with 403, the object being private).
    store
        .put("avatars/ab/cd.png", Bytes::from_static(b"png"))
        .await
        .unwrap();
    let (status, body) = moto.request("GET", "/moto-api/data.json");
    let state = String::from_utf8_lossy(&body);
    assert_eq!(status, 200, "{state}");
    assert!(state.contains("\"avatars/ab/cd.png\""), "{state}");

    // Streamed blobs: up to 5 MiB one PUT, past it a multipart upload of 5 MiB parts. (After
    // the state dump: moto cannot dump a multipart upload left open by a dropped writer.)
    streaming(&store, fleetdesk_storage::OBJECT_PART_BYTES).await;

    // A missing bucket is a backend failure, not a missing blob (S3 answers 404 for both).
    let nowhere = ObjectBlobStore::s3(S3Config {
        bucket: "no-such-bucket".into(),
        ..cfg
    })
    .unwrap();
    let put = nowhere
        .put("k", Bytes::from_static(b"x"))
        .await
        .map(|_| Bytes::new());
    let delete = nowhere.delete("k").await.map(|_| Bytes::new());
    let results = [
        put,
        nowhere.get("k").await,
        nowhere.get_range("k", 0..1).await,
        nowhere.get_range("k", 0..0).await,
        delete,
    ];
    for result in results {
        match result {
            Err(BlobError::Backend(message)) => {
                assert!(message.contains("NoSuchBucket"), "{message}");
                assert!(
                    !message.contains("fleetdesk-test-secret")
                        && !message.contains("fleetdesk-test-key-id"),
                    "{message}"
                );
            }
            other => panic!("expected a backend error, got {other:?}"),
        }
    }
}
