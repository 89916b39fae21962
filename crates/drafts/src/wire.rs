//! The drafts part of the interface (feature `wire`): each operation's handle with its
//! description, and the request and response types the server parses and a client sends.

use crate::draft::Character;
use crate::ports::RedoDraft;
use fleetdesk_ads::wire::PickInput;
use fleetdesk_kernel::Platform;
use fleetdesk_kernel::wire::fields::{Cursor, Ids, Limit, List, Text, Utc};
use fleetdesk_kernel::wire::strings::{Base64Data, CodeInput, CursorInput, TimeInput};
use fleetdesk_posts::post::PostStatus;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use utoipa::ToSchema;
use uuid::Uuid;
use validator::Validate;

/// Inline images are base64: 3 MB of images is about 4 MB of JSON.
const SUBMIT_MAX_BODY: usize = 6 * 1024 * 1024;

fleetdesk_kernel::component_items!(CharacterIn, InlineImageIn);

// ---------------------------------------------------------------------------------------------
// Shared pieces

#[derive(Debug, Clone, Serialize, Deserialize, Validate, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct CharacterIn {
    /// A code from the cast of the account's persona, 1-24 characters.
    pub code: Text<1, 24>,
    /// The post is told from this character's point of view; at most one.
    #[serde(default)]
    pub pov: bool,
}

#[derive(Debug, Clone, Serialize, Deserialize, Validate, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct InlineImageIn {
    /// Base64 of a JPEG, PNG or WebP (a `data:` prefix is allowed); the type is judged from the
    /// bytes.
    pub data: Base64Data,
    pub caption: Option<Text<0, 200>>,
}

/// A draft as the write endpoints answer it.
#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct Draft {
    pub id: Uuid,
    pub status: PostStatus,
    pub code: String,
    pub platform: Platform,
    /// ISO UTC.
    pub planned_at: Option<Utc>,
    /// Images on the post.
    pub images: i64,
    /// Media items on the post, images and videos together.
    pub media: i64,
    /// True when an identical body for the same code answered instead of a new post.
    pub duplicate: bool,
    /// Main character first.
    pub characters: Vec<Character>,
    /// The body changed since the post was sent back or asked to be rewritten.
    pub rewrite_answered: bool,
    /// The post went to inventory instead of review.
    pub stocked: bool,
    /// A note went on the review record with this call.
    pub noted: bool,
}

#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct DraftReply {
    pub draft: Draft,
    /// Why the post was stocked, when it was.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub heads_up: Option<HeadsUp>,
}

/// Things worth knowing before writing more.
#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct HeadsUp {
    pub inventory: InventoryHeadsUp,
}

/// The account still has finished posts in inventory.
#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct InventoryHeadsUp {
    /// Other stocked posts of this account.
    pub stocked: i64,
    pub message: String,
}

// ---------------------------------------------------------------------------------------------
// Refusals: how the API answers each refusal of drafting

// ---------------------------------------------------------------------------------------------
// GET /drafts

#[derive(Debug, Clone, Copy, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum RedoStatus {
    RewriteRequested,
    SentBack,
}

#[derive(Debug, Serialize, Deserialize, Validate, ToSchema)]
pub struct RedoQuery {
    /// rewrite_requested or sent_back; default both.
    pub status: Option<RedoStatus>,
    /// 1-200, default 50.
    pub limit: Option<Limit<200>>,
    /// `next_cursor` of the previous page.
    pub cursor: Option<CursorInput>,
}

#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct RedoList {
    pub drafts: Vec<RedoDraft>,
    /// Pass as `cursor` for the next page; null on the last page.
    pub next_cursor: Option<Cursor>,
}

// ---------------------------------------------------------------------------------------------
// POST /drafts

#[derive(Debug, Serialize, Deserialize, Validate, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct SubmitDraftBody {
    /// Current or legacy account code, 1-40 characters.
    pub code: CodeInput,
    /// Only when a legacy code is repeated across platforms.
    pub platform: Option<Platform>,
    pub body: Text<1, 10000>,
    /// A short topic for the reviewer.
    pub topic: Option<Text<0, 200>>,
    /// True for paid-partnership posts.
    pub sponsored: Option<bool>,
    /// ISO with zone, or market-local `YYYY-MM-DD HH:MM[:SS]`.
    pub planned_at: Option<TimeInput>,
    /// Small images inline: at most 4 and 3 MB in total.
    pub images: Option<List<InlineImageIn, 0, 4>>,
    /// Finished uploads, in publishing order.
    pub upload_ids: Option<Ids<1, 10>>,
    /// Library items, placed after upload_ids in the given order.
    pub media_ids: Option<Ids<1, 10>>,
    /// Up to 6, main character first, at most one pov; replaces the set, empty clears it.
    pub characters: Option<List<CharacterIn, 0, 6>>,
    /// Goes on the review record.
    pub note: Option<Text<1, 1000>>,
    /// Default true: send to internal review; false: save as a draft only.
    pub submit: Option<bool>,
    /// An ad pick of the account (`SP-<n>` or `<n>`): marks the post sponsored and links the
    /// pick, which becomes drafted.
    pub pick: Option<PickInput>,
}

/// At most one character is the point of view (`check_character_shape`).
fn one_pov_rule() -> Value {
    serde_json::json!({"properties": {"characters": {
        "contains": {"type": "object", "properties": {"pov": {"const": true}}, "required": ["pov"]},
        "minContains": 0,
        "maxContains": 1,
    }}})
}

/// What the submit body's types cannot say: one pov.
pub fn submit_rules() -> Value {
    serde_json::json!({"allOf": [one_pov_rule()]})
}

/// What the rewrite body's types cannot say: one pov.
pub fn update_rules() -> Value {
    serde_json::json!({"allOf": [one_pov_rule()]})
}

// ---------------------------------------------------------------------------------------------
// PUT /drafts/{id}

#[derive(Debug, Serialize, Deserialize, Validate, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct UpdateDraftBody {
    pub body: Text<1, 10000>,
    pub topic: Option<Text<0, 200>>,
    pub upload_ids: Option<Ids<1, 10>>,
    pub media_ids: Option<Ids<1, 10>>,
    /// Up to 6, main character first, at most one pov; replaces the set, empty clears it.
    pub characters: Option<List<CharacterIn, 0, 6>>,
    pub note: Option<Text<1, 1000>>,
    /// Default true: back to internal review; false: keep it as a draft.
    pub submit: Option<bool>,
}

// ---------------------------------------------------------------------------------------------
// POST /drafts/{id}/images and /media

#[derive(Debug, Serialize, Deserialize, Validate, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct AttachImagesBody {
    /// Finished uploads, 1-10, appended in this order.
    pub upload_ids: Ids<1, 10>,
    pub note: Option<Text<1, 1000>>,
}

#[derive(Debug, Serialize, Deserialize, Validate, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct AttachMediaBody {
    /// Library items, 1-10, appended in this order.
    pub media_ids: Ids<1, 10>,
    pub note: Option<Text<1, 1000>>,
}

// ---------------------------------------------------------------------------------------------
// POST /drafts/{id}/notes

#[derive(Debug, Serialize, Deserialize, Validate, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct NoteBody {
    pub note: Text<1, 1000>,
}

#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct Noted {
    pub draft: NotedDraft,
}

#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct NotedDraft {
    pub id: Uuid,
    pub noted: bool,
}

/// The agent's operations (`/api/agent/v1`).
pub mod agent {
    use super::*;
    use fleetdesk_kernel::access::Scope;
    use fleetdesk_kernel::op::{
        HttpMethod::{self, Get, Post, Put},
        Nothing, OpSpec,
    };
    use fleetdesk_kernel::wire::fields::IdPath;

    /// The agent's writes of drafts: drafts:write, each honouring an Idempotency-Key.
    const fn write(method: HttpMethod, path: &'static str) -> OpSpec {
        OpSpec::agent(method, path, Scope::DraftsWrite).idempotent()
    }

    fleetdesk_kernel::operations! {
        /// Drafts waiting for a rewrite or sent back, with every review comment.
        pub ListRedo(Nothing, RedoQuery, Nothing) -> RedoList =
            OpSpec::agent(Get, "/drafts", Scope::DraftsRead)
                .tool("list_redo")
                .summary("Drafts waiting for a rewrite or sent back, with every review comment")
                .description(
                    "Oldest returned first. Each has its current body, the rewrite instruction or \
                     send-back comment, all review comments (oldest first) and its characters. \
                     Answer with update_draft.",
                );

        /// Write a draft for an account and send it to internal review.
        pub SubmitDraft(Nothing, Nothing, SubmitDraftBody) -> DraftReply =
            write(Post, "/drafts")
                .tool("submit_draft")
                .created()
                .max_body(SUBMIT_MAX_BODY)
                .also_answers(&[404])
                .summary("Write a draft for an account and send it to internal review")
                .description(
                    "201 with the new draft. The same code with an identical body not yet published \
                     answers the original (200, duplicate true) and applies upload_ids, media_ids, \
                     characters and note to it. An account that is not active gets the post stocked: \
                     not sent to review, counted for no day, and `message` says why. submit false \
                     saves a draft only. Media go on in publishing order: inline images, then \
                     upload_ids, then media_ids; a post carries at most 10 (instagram) or 4 media, \
                     and reddit no video. `pick` names an ad pick of the account (list_ad_picks): \
                     the post is sponsored and the pick becomes drafted. A pick of another account \
                     or a cancelled one is 400 naming pick; a number no pick of the workspace has \
                     is 404; a pick another post drafted already is 422 (a resend of the draft that \
                     drafted it is not).",
                );

        /// Rewrite one of your drafts and send it to review again.
        pub UpdateDraft(IdPath, Nothing, UpdateDraftBody) -> DraftReply =
            write(Put, "/drafts/{id}")
                .tool("update_draft")
                .summary("Rewrite one of your drafts and send it to review again")
                .description(
                    "Only posts of your own accounts still in draft (draft, sent_back, rewrite_requested). \
                     A changed body answers the rewrite request (rewrite_answered true); the very body \
                     that was sent back is 422.",
                );

        /// Append finished uploads to a draft.
        pub AttachImages(IdPath, Nothing, AttachImagesBody) -> DraftReply =
            write(Post, "/drafts/{id}/images")
                .tool("attach_images")
                .summary("Append finished uploads to a draft")
                .description(
                    "Only while the post is a draft or in internal review. All or nothing: any bad id \
                     rejects the request. Items already on the post are skipped.",
                );

        /// Append media library items to a draft.
        pub AttachMedia(IdPath, Nothing, AttachMediaBody) -> DraftReply =
            write(Post, "/drafts/{id}/media")
                .tool("attach_media")
                .summary("Append media library items to a draft")
                .description(
                    "Only while the post is a draft or in internal review. Items already on the post are \
                     skipped; archived items and items of another project are rejected; all or nothing.",
                );

        /// Leave a note for the reviewers on a post's review record.
        pub AddNote(IdPath, Nothing, NoteBody) -> Noted =
            write(Post, "/drafts/{id}/notes")
                .tool("add_note")
                .summary("Leave a note for the reviewers on a post's review record")
                .description("Appears as an 'added note' entry with you as the actor.");
    }
}
