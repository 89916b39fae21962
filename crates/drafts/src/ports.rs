//! What drafts and media need from the outside: one method per atomic use case. The adapter
//! runs each in one transaction and calls this crate's rule functions inside it, so a check and
//! the write it guards see the same rows. Errors are infrastructure failures (`anyhow::Error`);
//! expected refusals are values.

use crate::draft::{Character, CharacterError, CharacterPick};
use fleetdesk_accounts::ports::{CodeRef, LookupError};
use fleetdesk_ads::pick::{PickNumber, PickProblem};
/// The page of the redo list.
pub use fleetdesk_kernel::Page;
use fleetdesk_kernel::media::{CapError, MediaType};
use fleetdesk_kernel::time::utc;
use fleetdesk_kernel::{AgentRef, BoxFuture, Platform, Position, TimeInput, TimeInputError};
use fleetdesk_media::thumbs::ThumbRef;
use fleetdesk_posts::post::PostStatus;
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
    /// Its stored thumbnail, when it could be stored.
    pub thumb: Option<ThumbRef>,
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
    pub planned_at: Option<TimeInput>,
    pub submit: bool,
    pub content: DraftContent,
    /// An ad pick of the account: marks the post sponsored and links the pick, which becomes
    /// drafted ([`fleetdesk_ads::pick::judge_draft`]).
    pub pick: Option<PickNumber>,
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

impl Attach {
    /// The uploads and the library items named, one list of them empty.
    pub fn ids(&self) -> (&[Uuid], &[Uuid]) {
        match self {
            Attach::Uploads(ids) => (ids, &[]),
            Attach::Media(ids) => (&[], ids),
        }
    }
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
    /// The ad pick the draft names.
    Pick(PickProblem),
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

// A draft waiting for a rewrite or sent back, for the redo list (a plain comment: the
// description of RedoItem has none).
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema), schema(as = RedoItem))]
pub struct RedoDraft {
    pub id: Uuid,
    pub status: PostStatus,
    pub code: String,
    pub platform: Platform,
    /// The current body, to rewrite.
    pub body: String,
    pub topic: Option<String>,
    #[serde(with = "utc::option")]
    #[cfg_attr(feature = "openapi", schema(value_type = Option<String>))]
    pub planned_at: Option<Timestamp>,
    /// The rewrite instruction or send-back comment.
    pub instruction: Option<String>,
    #[serde(with = "utc")]
    #[cfg_attr(feature = "openapi", schema(value_type = String))]
    pub returned_at: Timestamp,
    /// Every review comment, oldest first.
    pub comments: Vec<ReviewComment>,
    pub characters: Vec<Character>,
    /// Media items on the post.
    pub media: i64,
}

#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema), schema(as = RedoComment))]
pub struct ReviewComment {
    pub action: String,
    pub comment: String,
    pub by: String,
    #[serde(with = "utc")]
    #[cfg_attr(feature = "openapi", schema(value_type = String))]
    pub at: Timestamp,
}

/// One page of the redo list, oldest returned first; the next starts after the last item's
/// (returned_at, id).
pub type RedoPage = Page<RedoDraft>;

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
        after: Option<Position>,
        limit: i64,
    ) -> BoxFuture<'a, anyhow::Result<RedoPage>>;
}
