//! The blob-storage port: avatars now, media and persona images later.

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
    fn get(&self, key: &str) -> BoxFuture<'_, Result<Bytes, BlobError>>;
    /// Reads bytes `range` of the blob at `key`; the range must lie within the blob.
    fn get_range(
        &self,
        key: &str,
        range: std::ops::Range<u64>,
    ) -> BoxFuture<'_, Result<Bytes, BlobError>>;
    fn delete(&self, key: &str) -> BoxFuture<'_, Result<(), BlobError>>;
}
