//! What drafts and media need from the outside: one method per atomic use case. The adapter
//! runs each in one transaction and calls this crate's rule functions inside it, so a check and
//! the write it guards see the same rows. Errors are infrastructure failures (`anyhow::Error`);
//! expected refusals are values.

use crate::draft::{Character, CharacterError, CharacterPick};
use crate::media::{CapError, MediaKind, MediaType};
use crate::post::PostStatus;
use crate::upload::UploadMode;
use fleetdesk_accounts::ports::{CodeRef, LookupError};
use fleetdesk_kernel::{AgentRef, BoxFuture, Platform, TimeInputError};
use jiff::Timestamp;
use uuid::Uuid;

/// An inline image already written to the blob store.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoredImage {
    pub media_type: MediaType,
    pub sha256: String,
    pub bytes: i64,
    pub width: Option<i32>,
    pub height: Option<i32>,
    pub caption: Option<String>,
    pub storage_key: String,
}

/// What a submit or rewrite may add besides the body.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DraftContent {
    /// `Some` replaces the set (an empty array clears it).
    pub characters: Option<Vec<CharacterPick>>,
    pub images: Vec<StoredImage>,
    pub upload_ids: Vec<Uuid>,
    pub media_ids: Vec<Uuid>,
    pub note: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewDraft {
    pub code: CodeRef,
    pub body: String,
    pub topic: Option<String>,
    pub sponsored: bool,
    /// Time input, read in the account market's zone when it has none.
    pub planned_at: Option<String>,
    pub submit: bool,
    pub content: DraftContent,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DraftEdit {
    pub post_id: Uuid,
    pub body: String,
    pub topic: Option<String>,
    pub submit: bool,
    pub content: DraftContent,
}

/// Library items to append to a post.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Attach {
    /// Finished uploads (`POST /drafts/{id}/images`).
    Uploads(Vec<Uuid>),
    /// Library items (`POST /drafts/{id}/media`).
    Media(Vec<Uuid>),
}

/// Why one upload or library item cannot go on a post.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ItemProblem {
    Unknown,
    NotFinished,
    Archived,
    OtherProject,
}

impl ItemProblem {
    pub fn describe(self, id: Uuid) -> String {
        match self {
            ItemProblem::Unknown => format!("{id} is not in this workspace's library"),
            ItemProblem::NotFinished => format!("upload {id} has no file yet"),
            ItemProblem::Archived => format!("{id} is archived"),
            ItemProblem::OtherProject => format!("{id} belongs to another project"),
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DraftRefusal {
    Account(LookupError),
    PostNotFound,
    PostNotYours,
    /// `PUT` on a post no longer in draft.
    NotEditable(PostStatus),
    /// Media attached after internal review.
    MediaClosed(PostStatus),
    /// The rewrite repeats the body that was sent back.
    SameAsReturned,
    PlannedAt(TimeInputError),
    Character(Option<usize>, CharacterError),
    Item {
        field: &'static str,
        index: usize,
        id: Uuid,
        problem: ItemProblem,
    },
    Caps(CapError),
}

/// A draft as the write endpoints answer it.
#[derive(Debug, Clone, PartialEq)]
pub struct DraftView {
    pub id: Uuid,
    pub status: PostStatus,
    pub code: String,
    pub platform: Platform,
    pub planned_at: Option<Timestamp>,
    pub images: i64,
    pub videos: i64,
    pub duplicate: bool,
    pub characters: Vec<Character>,
    pub rewrite_answered: bool,
    /// Set when this call stocked the post: the account's state at the time.
    pub stocked_because: Option<Option<String>>,
    /// Other stocked posts of the account.
    pub inventory: i64,
}

/// A draft waiting for a rewrite or sent back, for the redo list.
#[derive(Debug, Clone, PartialEq)]
pub struct RedoDraft {
    pub id: Uuid,
    pub status: PostStatus,
    pub code: String,
    pub platform: Platform,
    pub body: String,
    pub topic: Option<String>,
    pub planned_at: Option<Timestamp>,
    pub instruction: Option<String>,
    pub returned_at: Timestamp,
    pub comments: Vec<ReviewComment>,
    pub characters: Vec<Character>,
    pub media: i64,
}

#[derive(Debug, Clone, PartialEq)]
pub struct ReviewComment {
    pub action: String,
    pub comment: String,
    pub by: String,
    pub at: Timestamp,
}

/// One page of the redo list, oldest returned first.
#[derive(Debug, Clone, PartialEq)]
pub struct RedoPage {
    pub items: Vec<RedoDraft>,
    /// Where the next page starts: the last item's (returned_at, id).
    pub next: Option<(Timestamp, Uuid)>,
}

pub trait DraftsRepo: Send + Sync + 'static {
    fn submit<'a>(
        &'a self,
        agent: AgentRef,
        draft: &'a NewDraft,
    ) -> BoxFuture<'a, anyhow::Result<Result<DraftView, DraftRefusal>>>;

    fn update<'a>(
        &'a self,
        agent: AgentRef,
        edit: &'a DraftEdit,
    ) -> BoxFuture<'a, anyhow::Result<Result<DraftView, DraftRefusal>>>;

    fn attach<'a>(
        &'a self,
        agent: AgentRef,
        post_id: Uuid,
        items: &'a Attach,
        note: Option<&'a str>,
    ) -> BoxFuture<'a, anyhow::Result<Result<DraftView, DraftRefusal>>>;

    fn add_note<'a>(
        &'a self,
        agent: AgentRef,
        post_id: Uuid,
        note: &'a str,
    ) -> BoxFuture<'a, anyhow::Result<Result<(), DraftRefusal>>>;

    fn redo<'a>(
        &'a self,
        agent: AgentRef,
        statuses: &'a [PostStatus],
        after: Option<(Timestamp, Uuid)>,
        limit: i64,
    ) -> BoxFuture<'a, anyhow::Result<RedoPage>>;
}

// ---------------------------------------------------------------------------------------------
// Uploads and the library

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewUpload {
    pub code: CodeRef,
    pub caption: Option<String>,
    pub character: Option<String>,
    pub tags: Vec<String>,
    /// Project name; `None` means the persona's project.
    pub project: Option<String>,
    pub mode: UploadMode,
    pub mime_type: Option<MediaType>,
    pub bytes: Option<i64>,
    pub chunks: Option<i32>,
    pub token_hash: Vec<u8>,
    pub expires_at: Timestamp,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum UploadRefusal {
    Account(LookupError),
    /// The project is not one of the key's workspace.
    Project(String),
    /// The character is not in the persona's cast.
    Character(String),
}

/// An upload as the file PUTs need it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UploadState {
    pub id: Uuid,
    pub workspace_id: Uuid,
    pub project_id: Option<Uuid>,
    pub persona_id: Uuid,
    pub agent_id: Uuid,
    pub character: Option<String>,
    pub caption: Option<String>,
    pub tags: Vec<String>,
    pub mode: UploadMode,
    pub mime_type: Option<MediaType>,
    pub declared_bytes: Option<i64>,
    pub chunks: Option<i32>,
    pub token_hash: Vec<u8>,
    pub expires_at: Timestamp,
    pub next_chunk: i32,
    pub received_bytes: i64,
    pub hash_state: Option<Vec<u8>>,
    pub detected_mime: Option<MediaType>,
    pub poster: Option<(String, MediaType)>,
    pub media_id: Option<Uuid>,
}

/// Where a file's bytes are: one object, or `parts` objects `<key>/<i>` of `part_bytes` each.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Layout {
    pub key: String,
    pub parts: i32,
    pub part_bytes: i64,
    pub bytes: i64,
}

impl Layout {
    pub fn single(key: String, bytes: i64) -> Layout {
        Layout {
            key,
            parts: 1,
            part_bytes: bytes,
            bytes,
        }
    }

    pub fn part_key(&self, index: i32) -> String {
        if self.parts == 1 {
            self.key.clone()
        } else {
            format!("{}/{index}", self.key)
        }
    }

    /// The pieces `(part key, range within the part)` that hold `range` of the file.
    pub fn pieces(&self, range: std::ops::Range<u64>) -> Vec<(String, std::ops::Range<u64>)> {
        let part = self.part_bytes.max(1) as u64;
        let mut out = Vec::new();
        let end = range.end.min(self.bytes as u64);
        let mut at = range.start;
        while at < end {
            let index = at / part;
            let within = at % part;
            let take = (part - within).min(end - at);
            out.push((self.part_key(index as i32), within..within + take));
            at += take;
        }
        out
    }
}

/// A file to enter into the library.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewMedia {
    pub media_type: MediaType,
    pub sha256: String,
    pub layout: Layout,
    pub width: Option<i32>,
    pub height: Option<i32>,
    pub duration_ms: Option<i64>,
}

/// The library item an upload ended in.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Completed {
    pub media_id: Uuid,
    /// An identical file was already in the library; its item is returned.
    pub existing: bool,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MediaQuery {
    pub project: Option<String>,
    pub character: Option<String>,
    pub tag: Option<String>,
    pub kind: Option<MediaKind>,
    pub q: Option<String>,
    pub most_used: bool,
    pub limit: i64,
}

#[derive(Debug, Clone, PartialEq)]
pub struct MediaItem {
    pub id: Uuid,
    pub kind: MediaKind,
    pub caption: Option<String>,
    pub tags: Vec<String>,
    pub project: Option<String>,
    pub character: Option<String>,
    pub mime_type: MediaType,
    pub bytes: i64,
    pub width: Option<i32>,
    pub height: Option<i32>,
    pub duration_ms: Option<i64>,
    pub used_count: i64,
    pub created_at: Timestamp,
    pub has_poster: bool,
}

/// A stored file as the link server needs it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoredFile {
    pub mime_type: MediaType,
    pub layout: Layout,
    pub poster: Option<(String, MediaType)>,
}

pub trait MediaRepo: Send + Sync + 'static {
    fn create_upload<'a>(
        &'a self,
        agent: AgentRef,
        upload: &'a NewUpload,
    ) -> BoxFuture<'a, anyhow::Result<Result<Uuid, UploadRefusal>>>;

    fn upload(&self, id: Uuid) -> BoxFuture<'_, anyhow::Result<Option<UploadState>>>;

    /// Records chunk `n` as received, only if it is still the next one; false otherwise.
    fn chunk_received<'a>(
        &'a self,
        id: Uuid,
        n: i32,
        received_bytes: i64,
        hash_state: &'a [u8],
        detected: MediaType,
    ) -> BoxFuture<'a, anyhow::Result<bool>>;

    /// Enters the file into the library (or finds the identical item already there) and closes
    /// the upload, in one transaction. A video's item takes the poster the upload holds at that
    /// moment (an image is its own thumbnail). `None` when another request completed it first.
    fn complete<'a>(
        &'a self,
        upload: &'a UploadState,
        media: &'a NewMedia,
    ) -> BoxFuture<'a, anyhow::Result<Option<Completed>>>;

    fn set_poster<'a>(
        &'a self,
        upload_id: Uuid,
        key: &'a str,
        media_type: MediaType,
    ) -> BoxFuture<'a, anyhow::Result<()>>;

    /// `Err(project)` when the project filter names no project of the workspace.
    fn list<'a>(
        &'a self,
        agent: AgentRef,
        query: &'a MediaQuery,
    ) -> BoxFuture<'a, anyhow::Result<Result<Vec<MediaItem>, String>>>;

    fn file(&self, id: Uuid) -> BoxFuture<'_, anyhow::Result<Option<StoredFile>>>;

    /// Chunked uploads whose link expired before the last chunk, with how many chunks they
    /// stored: their parts can go. At most `limit`.
    fn abandoned_uploads(&self, limit: i64) -> BoxFuture<'_, anyhow::Result<Vec<(Uuid, i32)>>>;

    /// Forgets an abandoned upload's progress once its parts are deleted.
    fn forget_progress(&self, id: Uuid) -> BoxFuture<'_, anyhow::Result<()>>;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pieces_cross_part_boundaries() {
        let l = Layout {
            key: "uploads/x".into(),
            parts: 3,
            part_bytes: 10,
            bytes: 25,
        };
        assert_eq!(l.pieces(0..25).len(), 3);
        assert_eq!(
            l.pieces(8..12),
            vec![("uploads/x/0".into(), 8..10), ("uploads/x/1".into(), 0..2)]
        );
        assert_eq!(l.pieces(20..25), vec![("uploads/x/2".into(), 0..5)]);
        assert_eq!(l.pieces(24..40), vec![("uploads/x/2".into(), 4..5)]);
        let one = Layout::single("media/ab.png".into(), 7);
        assert_eq!(one.pieces(0..7), vec![("media/ab.png".into(), 0..7)]);
    }
}
