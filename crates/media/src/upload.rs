//! Upload links: single or chunked, and the rules a chunk must meet.

use fleetdesk_kernel::media::{
    CHUNK_BYTES, MediaKind, MediaType, SINGLE_MAX_BYTES, VIDEO_MAX_BYTES,
};
use jiff::{SignedDuration, Timestamp};
use serde::{Deserialize, Serialize};
use sha2::digest::common::hazmat::SerializableState;
use sha2::{Digest, Sha256};

/// A single link lives 1 hour and works once.
pub const SINGLE_LIFETIME: SignedDuration = SignedDuration::from_hours(1);
/// A chunked link lives 23 hours.
pub const CHUNKED_LIFETIME: SignedDuration = SignedDuration::from_hours(23);

fleetdesk_kernel::text_enum! {
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
    #[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
    #[serde(rename_all = "lowercase")]
    pub enum UploadMode {
        Single => "single",
        Chunked => "chunked",
    }
}

/// How a declared file will be sent.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct UploadPlan {
    pub mode: UploadMode,
    /// Chunks to send (chunked only).
    pub chunks: Option<i32>,
    pub expires_at: Timestamp,
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PlanError {
    #[error("is required for videos and for files over {SINGLE_MAX_BYTES} bytes")]
    BytesRequired,
    #[error("is required for files over {SINGLE_MAX_BYTES} bytes (only videos may be larger)")]
    MimeRequired,
    #[error("an image may be at most {SINGLE_MAX_BYTES} bytes; this one is {0}")]
    ImageTooLarge(u64),
    #[error("a video may be at most {VIDEO_MAX_BYTES} bytes; this one is {0}")]
    VideoTooLarge(u64),
}

impl PlanError {
    /// The input field at fault.
    pub fn field(&self) -> &'static str {
        match self {
            PlanError::MimeRequired => "mime_type",
            _ => "bytes",
        }
    }

    /// Too large for its kind: 413 rather than 400.
    pub fn is_too_large(&self) -> bool {
        matches!(
            self,
            PlanError::ImageTooLarge(_) | PlanError::VideoTooLarge(_)
        )
    }
}

/// Plans an upload: images, and videos up to 4 MiB, go in one PUT; larger videos in chunks.
pub fn plan(
    mime: Option<MediaType>,
    bytes: Option<u64>,
    now: Timestamp,
) -> Result<UploadPlan, PlanError> {
    let kind = mime.map(MediaType::kind);
    let single = |now: Timestamp| UploadPlan {
        mode: UploadMode::Single,
        chunks: None,
        expires_at: now + SINGLE_LIFETIME,
    };
    match (kind, bytes) {
        (Some(MediaKind::Video), None) => Err(PlanError::BytesRequired),
        (Some(MediaKind::Video), Some(b)) if b > VIDEO_MAX_BYTES => {
            Err(PlanError::VideoTooLarge(b))
        }
        (Some(MediaKind::Video), Some(b)) if b > SINGLE_MAX_BYTES => Ok(UploadPlan {
            mode: UploadMode::Chunked,
            chunks: Some(b.div_ceil(CHUNK_BYTES) as i32),
            expires_at: now + CHUNKED_LIFETIME,
        }),
        (Some(MediaKind::Image), Some(b)) if b > SINGLE_MAX_BYTES => {
            Err(PlanError::ImageTooLarge(b))
        }
        (None, Some(b)) if b > SINGLE_MAX_BYTES => Err(PlanError::MimeRequired),
        _ => Ok(single(now)),
    }
}

/// An item's tags are a set, as the tag filter reads them: a tag in another case is the same
/// tag, and its first spelling stays.
pub fn distinct_tags(tags: impl IntoIterator<Item = String>) -> Vec<String> {
    let mut seen = std::collections::HashSet::new();
    tags.into_iter()
        .filter(|t| seen.insert(t.to_lowercase()))
        .collect()
}

/// What a chunk request is, given the upload's progress.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ChunkStep {
    /// Already received: answer the progress, store nothing.
    Resent,
    /// The next chunk: it must be exactly this many bytes.
    Next { expected_bytes: u64, last: bool },
    /// A chunk past the next one: 422 naming `next_chunk`.
    Skipped { next_chunk: i32 },
    /// Past the end of the file.
    OutOfRange { chunks: i32 },
}

/// Classifies chunk `n` of an upload of `total` bytes whose chunks before `next` arrived.
pub fn chunk_step(n: i64, next: i32, total: u64) -> ChunkStep {
    let chunks = total.div_ceil(CHUNK_BYTES) as i32;
    if n < 0 || n >= i64::from(chunks) {
        return ChunkStep::OutOfRange { chunks };
    }
    let n = n as i32;
    if n < next {
        return ChunkStep::Resent;
    }
    if n > next {
        return ChunkStep::Skipped { next_chunk: next };
    }
    let last = n == chunks - 1;
    let expected_bytes = if last {
        total - CHUNK_BYTES * n as u64
    } else {
        CHUNK_BYTES
    };
    ChunkStep::Next {
        expected_bytes,
        last,
    }
}

/// A SHA-256 that can be stopped after any chunk and resumed, even by another process: its
/// state is saved with the upload's progress.
#[derive(Clone, Default)]
pub struct ResumableHash(Sha256);

impl ResumableHash {
    pub fn new() -> Self {
        ResumableHash(Sha256::new())
    }

    /// Restores a saved state; `None` when the bytes are not one.
    pub fn restore(state: &[u8]) -> Option<Self> {
        let array = state.try_into().ok()?;
        Sha256::deserialize(array).ok().map(ResumableHash)
    }

    pub fn save(&self) -> Vec<u8> {
        self.0.serialize().to_vec()
    }

    pub fn update(&mut self, bytes: &[u8]) {
        self.0.update(bytes);
    }

    pub fn finish_hex(self) -> String {
        fleetdesk_kernel::digest::hex(&self.0.finalize())
    }
}

/// A fresh upload token (the link's credential) and its SHA-256, which is all that is stored.
pub fn new_token() -> (String, Vec<u8>) {
    use base64::Engine;
    let mut raw = [0u8; 32];
    getrandom::fill(&mut raw).expect("the operating system's random source");
    let token = base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(raw);
    let hash = token_hash(&token);
    (token, hash)
}

pub fn token_hash(token: &str) -> Vec<u8> {
    Sha256::digest(token.as_bytes()).to_vec()
}

/// Compares a presented token with the stored hash in constant time.
pub fn token_matches(token: &str, stored: &[u8]) -> bool {
    let presented = token_hash(token);
    presented.len() == stored.len()
        && presented
            .iter()
            .zip(stored)
            .fold(0u8, |acc, (a, b)| acc | (a ^ b))
            == 0
}

#[cfg(test)]
mod tests {
    use super::*;

    fn now() -> Timestamp {
        "2026-11-21T00:00:00Z".parse().unwrap()
    }

    #[test]
    fn images_and_small_videos_go_in_one_put() {
        let p = plan(Some(MediaType::Png), None, now()).unwrap();
        assert_eq!(p.mode, UploadMode::Single);
        assert_eq!(p.expires_at, now() + SignedDuration::from_hours(1));
        let p = plan(Some(MediaType::Mp4), Some(SINGLE_MAX_BYTES), now()).unwrap();
        assert_eq!(p.mode, UploadMode::Single);
        assert_eq!(
            plan(None, Some(SINGLE_MAX_BYTES), now()).unwrap().mode,
            UploadMode::Single
        );
    }

    #[test]
    fn videos_over_four_megabytes_go_in_chunks() {
        let p = plan(Some(MediaType::Webm), Some(SINGLE_MAX_BYTES + 1), now()).unwrap();
        assert_eq!(p.mode, UploadMode::Chunked);
        assert_eq!(p.chunks, Some(2));
        assert_eq!(p.expires_at, now() + SignedDuration::from_hours(23));
        let p = plan(Some(MediaType::Mp4), Some(VIDEO_MAX_BYTES), now()).unwrap();
        assert_eq!(p.chunks, Some(167));
        assert_eq!(
            plan(Some(MediaType::Mp4), Some(VIDEO_MAX_BYTES + 1), now()),
            Err(PlanError::VideoTooLarge(VIDEO_MAX_BYTES + 1))
        );
    }

    #[test]
    fn what_a_plan_needs_to_know() {
        assert_eq!(
            plan(Some(MediaType::Mov), None, now()),
            Err(PlanError::BytesRequired)
        );
        assert_eq!(
            plan(None, Some(SINGLE_MAX_BYTES + 1), now()),
            Err(PlanError::MimeRequired)
        );
        let e = plan(Some(MediaType::Jpeg), Some(SINGLE_MAX_BYTES + 1), now()).unwrap_err();
        assert!(e.is_too_large());
        assert_eq!(e.field(), "bytes");
    }

    #[test]
    fn chunks_arrive_in_order_with_exact_sizes() {
        let total = CHUNK_BYTES * 2 + 10;
        assert_eq!(
            chunk_step(0, 0, total),
            ChunkStep::Next {
                expected_bytes: CHUNK_BYTES,
                last: false
            }
        );
        assert_eq!(
            chunk_step(2, 2, total),
            ChunkStep::Next {
                expected_bytes: 10,
                last: true
            }
        );
        assert_eq!(chunk_step(0, 1, total), ChunkStep::Resent);
        assert_eq!(
            chunk_step(2, 1, total),
            ChunkStep::Skipped { next_chunk: 1 }
        );
        assert_eq!(chunk_step(3, 1, total), ChunkStep::OutOfRange { chunks: 3 });
        assert_eq!(
            chunk_step(-1, 0, total),
            ChunkStep::OutOfRange { chunks: 3 }
        );
        // A file of exactly two chunks: the last is full-size.
        assert_eq!(
            chunk_step(1, 1, CHUNK_BYTES * 2),
            ChunkStep::Next {
                expected_bytes: CHUNK_BYTES,
                last: true
            }
        );
    }

    #[test]
    fn tags_are_a_set_whatever_their_case() {
        let tags = ["Cat", "home", "cat", "CAT", "Home", "dog"].map(String::from);
        assert_eq!(distinct_tags(tags), ["Cat", "home", "dog"]);
        assert_eq!(distinct_tags(["貓", "貓"].map(String::from)), ["貓"]);
        assert!(distinct_tags(Vec::new()).is_empty());
    }

    #[test]
    fn a_saved_hash_resumes_where_it_stopped() {
        let whole = fleetdesk_kernel::digest::sha256_hex(b"hello, world");
        let mut h = ResumableHash::new();
        h.update(b"hello, ");
        let saved = h.save();
        let mut resumed = ResumableHash::restore(&saved).unwrap();
        resumed.update(b"world");
        assert_eq!(resumed.finish_hex(), whole);
        assert!(ResumableHash::restore(b"short").is_none());
    }

    #[test]
    fn tokens_match_only_themselves() {
        let (token, hash) = new_token();
        assert_eq!(token.len(), 43);
        assert!(token_matches(&token, &hash));
        assert!(!token_matches("other", &hash));
        let (other, _) = new_token();
        assert_ne!(token, other);
    }
}
