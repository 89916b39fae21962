//! The blob-storage port: avatars, media, their chunks and thumbnails, persona images.

use crate::BoxFuture;
use bytes::Bytes;

#[derive(Debug, thiserror::Error)]
pub enum BlobError {
    #[error("blob {0} not found")]
    NotFound(String),
    #[error("storage failed: {0}")]
    Backend(String),
}

/// Where bytes live. Keys are relative paths such as `avatars/<id>/<sha256>.png`.
pub trait BlobStore: Send + Sync + 'static {
    fn put(&self, key: &str, bytes: Bytes) -> BoxFuture<'_, Result<(), BlobError>>;
    /// Starts writing a blob at `key` piece by piece, as its bytes arrive: nothing is visible
    /// at `key` until [`BlobWriter::finish`], and [`BlobWriter::abort`] (or dropping the writer)
    /// leaves whatever was there before.
    fn put_stream(&self, key: &str) -> Result<Box<dyn BlobWriter>, BlobError>;
    fn get(&self, key: &str) -> BoxFuture<'_, Result<Bytes, BlobError>>;
    /// Reads bytes `range` of the blob at `key`; the range must lie within the blob.
    fn get_range(
        &self,
        key: &str,
        range: std::ops::Range<u64>,
    ) -> BoxFuture<'_, Result<Bytes, BlobError>>;
    fn delete(&self, key: &str) -> BoxFuture<'_, Result<(), BlobError>>;
    /// Removes what streamed blobs left half written when their process died (a write that
    /// ended, finished or aborted, leaves nothing), untouched for longer than `older_than`:
    /// how many. A store that leaves nothing behind has nothing to remove.
    fn sweep_unfinished(
        &self,
        older_than: std::time::Duration,
    ) -> BoxFuture<'_, Result<usize, BlobError>> {
        let _ = older_than;
        Box::pin(async { Ok(0) })
    }
}

/// A blob being written (see [`BlobStore::put_stream`]). It holds a bounded part of what was
/// written: `write` waits while earlier pieces are still being stored.
pub trait BlobWriter: Send {
    /// Appends `bytes` to the blob.
    fn write(&mut self, bytes: Bytes) -> BoxFuture<'_, Result<(), BlobError>>;
    /// Stores what remains and makes the blob visible at its key, whole, replacing any blob
    /// there.
    fn finish(self: Box<Self>) -> BoxFuture<'static, Result<(), BlobError>>;
    /// Discards what was written; the key keeps what it held before.
    fn abort(self: Box<Self>) -> BoxFuture<'static, Result<(), BlobError>>;
}
