//! Blob storage over [`object_store`]: the local file system by default, any
//! S3-compatible service when configured, and an in-memory store for tests.
//!
//! [`ObjectBlobStore`] implements the kernel's [`BlobStore`] port. Keys are
//! `/`-separated relative paths such as `avatars/<id>/<sha256>.png`.

#[cfg(feature = "testing")]
pub mod testing;

use std::fmt;
use std::path::Path as FsPath;
use std::sync::Arc;

use anyhow::Context as _;
use bytes::Bytes;
use fleetdesk_kernel::BoxFuture;
use fleetdesk_kernel::blob::{BlobError, BlobStore, BlobWriter};
use object_store::aws::AmazonS3Builder;
use object_store::buffered::BufWriter;
use object_store::local::LocalFileSystem;
use object_store::memory::InMemory;
use object_store::path::Path;
use object_store::{GetOptions, ObjectStore, ObjectStoreExt as _, PutPayload};

/// A [`BlobStore`] backed by any [`ObjectStore`].
#[derive(Clone)]
pub struct ObjectBlobStore {
    inner: Arc<dyn ObjectStore>,
    /// Credentials scrubbed from error messages (S3 error bodies can echo the key id).
    secrets: Arc<[String]>,
    /// How much of a streamed blob ([`BlobStore::put_stream`]) is held before it is written:
    /// a blob up to this size is stored with one put when it ends, a larger one as a multipart
    /// upload of parts of this size.
    part_bytes: usize,
    /// The directory of a local store, where a streamed blob is staged beside its key.
    local_root: Option<std::path::PathBuf>,
}

/// The part size of streamed blobs on object stores: S3's smallest part but the last is 5 MiB
/// (some stores also want every part but the last of one size), so a blob up to 5 MiB (an upload
/// chunk is 3 MiB) is held and stored with one PUT, and a longer one goes in parts of 5 MiB.
pub const OBJECT_PART_BYTES: usize = 5 * 1024 * 1024;

/// The part size of streamed blobs on the local file system, which takes parts of any size:
/// every 256 KiB is written to the blob's staging file as it arrives (object_store's
/// `LocalFileSystem` renames the staging file into place when the blob ends).
pub const LOCAL_PART_BYTES: usize = 256 * 1024;

/// Parts of one streamed blob being written at once; `write` waits for one to end beyond that.
const PARTS_IN_FLIGHT: usize = 2;

/// Connection settings for an S3-compatible bucket.
#[derive(Clone, PartialEq, Eq)]
pub struct S3Config {
    /// Bucket name; it must already exist.
    pub bucket: String,
    /// Endpoint of an S3-compatible server (`http://127.0.0.1:9000`); `None` means AWS.
    /// When set, requests use path style (`<endpoint>/<bucket>/<key>`).
    pub endpoint: Option<String>,
    /// Region used for request signing; AWS's default `us-east-1` when `None`.
    pub region: Option<String>,
    /// Static access key id; with neither key set, credentials come from the instance metadata service.
    pub access_key_id: Option<String>,
    /// Static secret access key, paired with `access_key_id`.
    pub secret_access_key: Option<String>,
    /// Allow plain-HTTP endpoints (S3 itself is HTTPS only).
    pub allow_http: bool,
}

impl S3Config {
    /// Reads the configuration from the environment, or `None` when
    /// `FLEETDESK_S3_BUCKET` is unset (blobs then stay on the local file system).
    ///
    /// Also reads `FLEETDESK_S3_ENDPOINT`, `AWS_ACCESS_KEY_ID`, `AWS_SECRET_ACCESS_KEY`
    /// and `AWS_REGION` (default `us-east-1`). Empty values count as unset.
    pub fn from_env() -> Option<S3Config> {
        Self::from_lookup(|name| std::env::var(name).ok())
    }

    fn from_lookup(lookup: impl Fn(&str) -> Option<String>) -> Option<S3Config> {
        let var = |name: &str| lookup(name).filter(|value| !value.is_empty());
        let endpoint = var("FLEETDESK_S3_ENDPOINT");
        Some(S3Config {
            bucket: var("FLEETDESK_S3_BUCKET")?,
            allow_http: endpoint
                .as_deref()
                .is_some_and(|e| e.starts_with("http://")),
            endpoint,
            region: Some(var("AWS_REGION").unwrap_or_else(|| "us-east-1".to_owned())),
            access_key_id: var("AWS_ACCESS_KEY_ID"),
            secret_access_key: var("AWS_SECRET_ACCESS_KEY"),
        })
    }
}

impl fmt::Debug for S3Config {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let redacted = |set: &Option<String>| set.as_ref().map(|_| "<redacted>");
        f.debug_struct("S3Config")
            .field("bucket", &self.bucket)
            .field("endpoint", &self.endpoint)
            .field("region", &self.region)
            .field("access_key_id", &redacted(&self.access_key_id))
            .field("secret_access_key", &redacted(&self.secret_access_key))
            .field("allow_http", &self.allow_http)
            .finish()
    }
}

impl fmt::Debug for ObjectBlobStore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ObjectBlobStore")
            .field("inner", &self.inner)
            .finish_non_exhaustive()
    }
}

impl ObjectBlobStore {
    /// Wraps an existing [`ObjectStore`].
    pub fn new(inner: Arc<dyn ObjectStore>) -> Self {
        ObjectBlobStore {
            inner,
            secrets: Arc::from([]),
            part_bytes: OBJECT_PART_BYTES,
            local_root: None,
        }
    }

    /// The same store with streamed blobs held and written in parts of `bytes` (at least 1).
    /// S3 refuses parts under 5 MiB but the last.
    pub fn with_part_bytes(mut self, bytes: usize) -> Self {
        self.part_bytes = bytes.max(1);
        self
    }

    /// Stores blobs as files under `dir`, creating it if needed.
    pub fn local(dir: &FsPath) -> anyhow::Result<Self> {
        std::fs::create_dir_all(dir)
            .with_context(|| format!("creating blob directory {}", dir.display()))?;
        let fs = LocalFileSystem::new_with_prefix(dir)
            .with_context(|| format!("opening blob directory {}", dir.display()))?
            .with_automatic_cleanup(true);
        Ok(ObjectBlobStore {
            local_root: Some(dir.to_owned()),
            ..Self::new(Arc::new(fs)).with_part_bytes(LOCAL_PART_BYTES)
        })
    }

    /// Stores blobs in an S3 bucket (or an S3-compatible server when `cfg.endpoint` is set).
    ///
    /// Nothing is contacted here; a missing bucket or bad credentials surface on first use.
    pub fn s3(cfg: S3Config) -> anyhow::Result<Self> {
        let mut builder = AmazonS3Builder::new()
            .with_bucket_name(&cfg.bucket)
            .with_allow_http(cfg.allow_http)
            // AWS wants virtual-hosted style; S3-compatible servers are addressed by path.
            .with_virtual_hosted_style_request(cfg.endpoint.is_none());
        if let Some(endpoint) = &cfg.endpoint {
            builder = builder.with_endpoint(endpoint);
        }
        if let Some(region) = &cfg.region {
            builder = builder.with_region(region);
        }
        if let Some(key_id) = &cfg.access_key_id {
            builder = builder.with_access_key_id(key_id);
        }
        if let Some(secret) = &cfg.secret_access_key {
            builder = builder.with_secret_access_key(secret);
        }
        let store = builder
            .build()
            .with_context(|| format!("configuring S3 bucket {}", cfg.bucket))?;
        let secrets = [cfg.access_key_id, cfg.secret_access_key]
            .into_iter()
            .flatten()
            .filter(|s| !s.is_empty())
            .collect();
        Ok(ObjectBlobStore {
            inner: Arc::new(store),
            secrets,
            part_bytes: OBJECT_PART_BYTES,
            local_root: None,
        })
    }

    /// A process-local store that forgets everything on drop; for tests.
    pub fn in_memory() -> Self {
        Self::new(Arc::new(InMemory::new()))
    }

    /// The underlying store, for operations the port does not cover (multipart uploads, listing).
    pub fn inner(&self) -> Arc<dyn ObjectStore> {
        Arc::clone(&self.inner)
    }

    fn backend_error(&self, op: &str, key: &str, err: impl fmt::Display) -> BlobError {
        let mut message = format!("{op} {key}: {err}");
        for secret in self.secrets.iter() {
            message = message.replace(secret.as_str(), "<redacted>");
        }
        BlobError::Backend(message)
    }

    /// `NotFound` becomes [`BlobError::NotFound`] unless it is S3 saying the *bucket* is
    /// missing (object_store reports every 404 as `NotFound`): that is a configuration
    /// fault, not an absent blob.
    fn map_error(&self, op: &str, key: &str, err: object_store::Error) -> BlobError {
        match err {
            object_store::Error::NotFound { .. } if !err.to_string().contains("NoSuchBucket") => {
                BlobError::NotFound(key.to_owned())
            }
            err => self.backend_error(op, key, err),
        }
    }

    /// The size of the blob at `path`. A GET whose body is dropped unread rather than a HEAD:
    /// S3 answers a HEAD without a body, so a missing bucket would pass for a missing blob.
    async fn size(&self, op: &str, key: &str, path: &Path) -> Result<u64, BlobError> {
        let result = self
            .inner
            .get_opts(path, GetOptions::new())
            .await
            .map_err(|e| self.map_error(op, key, e))?;
        Ok(result.meta.size)
    }
}

/// The error for a range that does not lie within a blob of `size` bytes.
fn outside(key: &str, range: &std::ops::Range<u64>, size: u64) -> BlobError {
    BlobError::Backend(format!(
        "get_range {key}: bytes {}..{} are not within the blob's {size} bytes",
        range.start, range.end
    ))
}

/// Parses a blob key, refusing the empty key (the store root) and `.`/`..` segments.
fn parse_key(key: &str) -> Result<Path, BlobError> {
    match Path::parse(key) {
        Ok(path) if !path.is_root() => Ok(path),
        Ok(_) => Err(BlobError::Backend("invalid blob key: empty".to_owned())),
        Err(err) => Err(BlobError::Backend(format!("invalid blob key: {err}"))),
    }
}

/// Whether a file name is `LocalFileSystem`'s staging file of a streamed blob: `<name>#<n>`,
/// `n` all digits (object_store's own test of the names it writes and never lists).
fn is_staging(name: &str) -> bool {
    name.rsplit_once('#')
        .is_some_and(|(_, n)| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
}

/// Removes the staging files under `root` untouched for `older_than`: a streamed blob's file
/// is written every part (256 KiB) and renamed into place or deleted when it ends, so one
/// left past that belongs to a process that died mid-write. Blocking: walks the directory.
fn sweep_staging(root: &FsPath, older_than: std::time::Duration) -> std::io::Result<usize> {
    let mut removed = 0;
    let mut dirs = vec![root.to_owned()];
    while let Some(dir) = dirs.pop() {
        for entry in std::fs::read_dir(&dir)? {
            let entry = entry?;
            let kind = entry.file_type()?;
            if kind.is_dir() {
                dirs.push(entry.path());
                continue;
            }
            let stale = entry
                .metadata()?
                .modified()?
                .elapsed()
                .is_ok_and(|age| age > older_than);
            if kind.is_file() && stale && entry.file_name().to_str().is_some_and(is_staging) {
                match std::fs::remove_file(entry.path()) {
                    Ok(()) => removed += 1,
                    // Renamed into place or removed by its writer meanwhile.
                    Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                    Err(e) => return Err(e),
                }
            }
        }
    }
    Ok(removed)
}

impl BlobStore for ObjectBlobStore {
    /// On local storage, the staging files of writes a crash cut off (S3 keeps a chunk in
    /// memory until it ends; a larger blob's unfinished multipart upload is the bucket's
    /// lifecycle rule's to abort).
    fn sweep_unfinished(
        &self,
        older_than: std::time::Duration,
    ) -> BoxFuture<'_, Result<usize, BlobError>> {
        let root = self.local_root.clone();
        Box::pin(async move {
            let Some(root) = root else { return Ok(0) };
            tokio::task::spawn_blocking(move || sweep_staging(&root, older_than))
                .await
                .map_err(|e| BlobError::Backend(e.to_string()))?
                .map_err(|e| BlobError::Backend(format!("sweeping staged blobs: {e}")))
        })
    }

    /// Writes `bytes` at `key` atomically, replacing any existing blob.
    fn put(&self, key: &str, bytes: Bytes) -> BoxFuture<'_, Result<(), BlobError>> {
        let key = key.to_owned();
        Box::pin(async move {
            let path = parse_key(&key)?;
            self.inner
                .put(&path, PutPayload::from(bytes))
                .await
                .map_err(|e| self.map_error("put", &key, e))?;
            Ok(())
        })
    }

    /// Starts a blob at `key` written as it arrives (object_store's [`BufWriter`]): up to the
    /// store's part size it is held and stored with one put when it ends; past it, a multipart
    /// upload of parts of that size, at most two being written at once. Only `finish` makes it
    /// visible (the multipart upload completes, or the local staging file is renamed into
    /// place); `abort` or a drop discards the parts (a dropped S3 multipart upload leaves its
    /// parts to the bucket's lifecycle rule; `abort` removes them).
    fn put_stream(&self, key: &str) -> Result<Box<dyn BlobWriter>, BlobError> {
        let path = parse_key(key)?;
        let inner = BufWriter::with_capacity(self.inner(), path, self.part_bytes)
            .with_max_concurrency(PARTS_IN_FLIGHT);
        Ok(Box::new(ObjectBlobWriter {
            store: self.clone(),
            key: key.to_owned(),
            inner,
        }))
    }

    /// Reads the whole blob at `key`; [`BlobError::NotFound`] when there is none.
    fn get(&self, key: &str) -> BoxFuture<'_, Result<Bytes, BlobError>> {
        let key = key.to_owned();
        Box::pin(async move {
            let path = parse_key(&key)?;
            let result = self
                .inner
                .get(&path)
                .await
                .map_err(|e| self.map_error("get", &key, e))?;
            result
                .bytes()
                .await
                .map_err(|e| self.map_error("get", &key, e))
        })
    }

    /// Reads `range` of the blob at `key`, without fetching the rest.
    ///
    /// The range must lie within the blob. One that does not (it runs past the end, or ends
    /// before it starts) is a [`BlobError::Backend`] naming the blob's size, on every backend:
    /// object_store alone would shorten a range running past the end without a word and
    /// refuse one starting past it in each backend's own terms. An empty range reads nothing
    /// but still answers [`BlobError::NotFound`] for a missing blob.
    fn get_range(
        &self,
        key: &str,
        range: std::ops::Range<u64>,
    ) -> BoxFuture<'_, Result<Bytes, BlobError>> {
        let key = key.to_owned();
        Box::pin(async move {
            let path = parse_key(&key)?;
            if range.start > range.end {
                return Err(BlobError::Backend(format!(
                    "get_range {key}: bytes {}..{} end before they start",
                    range.start, range.end
                )));
            }
            if range.is_empty() {
                // object_store refuses empty ranges: check the blob instead.
                let size = self.size("get_range", &key, &path).await?;
                return if range.start <= size {
                    Ok(Bytes::new())
                } else {
                    Err(outside(&key, &range, size))
                };
            }
            let options = GetOptions::new().with_range(Some(range.clone()));
            let result = match self.inner.get_opts(&path, options).await {
                Ok(result) => result,
                Err(e) => {
                    let err = self.map_error("get_range", &key, e);
                    // A range starting past the end fails differently on each backend (S3
                    // answers 416): if that is what happened, say so the same way everywhere.
                    if matches!(err, BlobError::Backend(_))
                        && let Ok(size) = self.size("get_range", &key, &path).await
                        && range.end > size
                    {
                        return Err(outside(&key, &range, size));
                    }
                    return Err(err);
                }
            };
            // A range running past the end comes back shortened rather than refused.
            if result.range != range {
                return Err(outside(&key, &range, result.meta.size));
            }
            let bytes = result
                .bytes()
                .await
                .map_err(|e| self.map_error("get_range", &key, e))?;
            if bytes.len() as u64 != range.end - range.start {
                return Err(BlobError::Backend(format!(
                    "get_range {key}: asked for bytes {}..{}, got {} bytes",
                    range.start,
                    range.end,
                    bytes.len()
                )));
            }
            Ok(bytes)
        })
    }

    /// Removes the blob at `key`. Idempotent: deleting a missing key succeeds on
    /// every backend (S3 cannot tell the difference anyway).
    fn delete(&self, key: &str) -> BoxFuture<'_, Result<(), BlobError>> {
        let key = key.to_owned();
        Box::pin(async move {
            let path = parse_key(&key)?;
            match self.inner.delete(&path).await {
                Ok(()) => Ok(()),
                Err(e) => match self.map_error("delete", &key, e) {
                    BlobError::NotFound(_) => Ok(()),
                    err => Err(err),
                },
            }
        })
    }
}

/// A blob of an [`ObjectBlobStore`] being written.
struct ObjectBlobWriter {
    store: ObjectBlobStore,
    key: String,
    inner: BufWriter,
}

impl BlobWriter for ObjectBlobWriter {
    fn write(&mut self, bytes: Bytes) -> BoxFuture<'_, Result<(), BlobError>> {
        Box::pin(async move {
            self.inner
                .put(bytes)
                .await
                .map_err(|e| self.store.backend_error("put_stream", &self.key, e))
        })
    }

    fn finish(self: Box<Self>) -> BoxFuture<'static, Result<(), BlobError>> {
        Box::pin(async move {
            let mut this = *self;
            // `BufWriter` ends on shutdown: one put, or the multipart upload's last part and
            // completion (aborted by object_store when that fails).
            let ended = std::future::poll_fn(|cx| {
                tokio::io::AsyncWrite::poll_shutdown(std::pin::Pin::new(&mut this.inner), cx)
            })
            .await;
            ended.map_err(|e| this.store.backend_error("put_stream", &this.key, e))
        })
    }

    fn abort(self: Box<Self>) -> BoxFuture<'static, Result<(), BlobError>> {
        Box::pin(async move {
            let mut this = *self;
            let aborted = this.inner.abort().await;
            aborted.map_err(|e| this.store.backend_error("put_stream abort", &this.key, e))
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A write cut off by a crash leaves its staging file; the sweep removes it once it is
    /// old, and nothing else: not a fresh one (a write going on), not a blob whose name has a
    /// `#` of its own, not a finished blob.
    #[tokio::test]
    async fn a_half_written_blob_is_swept_once_it_is_stale() {
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_nanos();
        let dir =
            std::env::temp_dir().join(format!("fleetdesk-sweep-{}-{nanos}", std::process::id()));
        let store = ObjectBlobStore::local(&dir).expect("store");
        let mut writer = store.put_stream("uploads/u1/0").expect("writer");
        writer
            .write(Bytes::from(vec![7u8; LOCAL_PART_BYTES + 1]))
            .await
            .expect("write");
        // The process dies here: the writer never finishes nor aborts.
        std::mem::forget(writer);
        store
            .put("uploads/u1/done", Bytes::from_static(b"x"))
            .await
            .unwrap();
        let staged: Vec<_> = std::fs::read_dir(dir.join("uploads/u1"))
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .filter(|n| is_staging(n))
            .collect();
        assert_eq!(staged.len(), 1, "{staged:?}");
        std::fs::write(dir.join("uploads/u1/notes#draft"), b"a blob of its own").unwrap();

        let hour = std::time::Duration::from_secs(3600);
        assert_eq!(
            store.sweep_unfinished(hour).await.unwrap(),
            0,
            "still fresh"
        );
        let old = std::time::SystemTime::now() - 2 * hour;
        for name in [&staged[0], "notes#draft", "done"] {
            let file = std::fs::File::options()
                .write(true)
                .open(dir.join("uploads/u1").join(name))
                .unwrap();
            file.set_modified(old).unwrap();
        }
        assert_eq!(store.sweep_unfinished(hour).await.unwrap(), 1);
        assert!(!dir.join("uploads/u1").join(&staged[0]).exists());
        assert!(dir.join("uploads/u1/notes#draft").exists());
        assert_eq!(
            store.get("uploads/u1/done").await.unwrap(),
            Bytes::from_static(b"x")
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn staging_names_are_a_hash_and_digits() {
        assert!(is_staging("0#1") && is_staging("a.png#12"));
        assert!(!is_staging("a#") && !is_staging("a#b1") && !is_staging("plain"));
    }

    fn lookup<'a>(vars: &'a [(&'a str, &'a str)]) -> impl Fn(&str) -> Option<String> + 'a {
        |name| {
            vars.iter()
                .find(|(k, _)| *k == name)
                .map(|(_, v)| (*v).to_owned())
        }
    }

    #[test]
    fn from_env_needs_a_bucket() {
        assert_eq!(S3Config::from_lookup(lookup(&[])), None);
        assert_eq!(
            S3Config::from_lookup(lookup(&[("FLEETDESK_S3_BUCKET", "")])),
            None
        );
    }

    #[test]
    fn from_env_reads_everything() {
        let cfg = S3Config::from_lookup(lookup(&[
            ("FLEETDESK_S3_BUCKET", "blobs"),
            ("FLEETDESK_S3_ENDPOINT", "http://127.0.0.1:9000"),
            ("AWS_ACCESS_KEY_ID", "id"),
            ("AWS_SECRET_ACCESS_KEY", "secret"),
        ]))
        .unwrap();
        assert_eq!(
            cfg,
            S3Config {
                bucket: "blobs".into(),
                endpoint: Some("http://127.0.0.1:9000".into()),
                region: Some("us-east-1".into()),
                access_key_id: Some("id".into()),
                secret_access_key: Some("secret".into()),
                allow_http: true,
            }
        );
        let debug = format!("{cfg:?}");
        assert!(
            !debug.contains("secret\"") && !debug.contains("\"id\""),
            "{debug}"
        );
    }

    #[test]
    fn https_endpoint_and_region() {
        let cfg = S3Config::from_lookup(lookup(&[
            ("FLEETDESK_S3_BUCKET", "blobs"),
            ("FLEETDESK_S3_ENDPOINT", "https://s3.example.com"),
            ("AWS_REGION", "eu-west-3"),
        ]))
        .unwrap();
        assert!(!cfg.allow_http);
        assert_eq!(cfg.region.as_deref(), Some("eu-west-3"));
        assert_eq!(cfg.access_key_id, None);
    }

    #[test]
    fn rejects_bad_keys() {
        for key in ["", "/", "a/../b", "a//b", "./a"] {
            assert!(
                matches!(parse_key(key), Err(BlobError::Backend(_))),
                "{key:?}"
            );
        }
        assert_eq!(
            parse_key("avatars/ab/cd.png").unwrap().as_ref(),
            "avatars/ab/cd.png"
        );
    }

    #[test]
    fn error_messages_hide_credentials() {
        let store = ObjectBlobStore {
            secrets: Arc::from(["AKIDEXAMPLE".to_owned(), "s3cr3t".to_owned()]),
            ..ObjectBlobStore::in_memory()
        };
        let err = object_store::Error::Generic {
            store: "S3",
            source: "403 <AWSAccessKeyId>AKIDEXAMPLE</AWSAccessKeyId> s3cr3t".into(),
        };
        let BlobError::Backend(message) = store.map_error("get", "k", err) else {
            panic!("expected Backend");
        };
        assert!(
            !message.contains("AKIDEXAMPLE") && !message.contains("s3cr3t"),
            "{message}"
        );
    }
}
