//! Agent API: drafts.

use super::common::{
    Base64Data, CodeInput, CursorInput, PickInput, TimeInput, maybe_lookup, naming,
};
use crate::ctx::Ctx;
use crate::error::ApiError;
use crate::fields::{Cursor, Ids, Limit, List, Text, Utc, component_items, limit_or};
use crate::input::{Nothing, Req};
use crate::op::{ErasedOp, HttpMethod, OpSpec, Reply, operation};
use fleetdesk_accounts::ports::CodeRef;
use fleetdesk_ads::pick::PickProblem;
use fleetdesk_drafts::draft::{Character, CharacterError, CharacterPick, InlineImageError};
use fleetdesk_drafts::ports::{
    Attach, DraftContent, DraftEdit, DraftRefusal, DraftView, NewDraft, RedoDraft,
};
use fleetdesk_drafts::service::{DraftError, SubmitRequest};
use fleetdesk_kernel::{ErrorCode, Platform};
use fleetdesk_posts::post::PostStatus;
use fleetdesk_tenancy::{AgentCaller, Scope};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use utoipa::ToSchema;
use uuid::Uuid;
use validator::Validate;

/// Inline images are base64: 3 MB of images is about 4 MB of JSON.
const SUBMIT_MAX_BODY: usize = 6 * 1024 * 1024;

component_items!(CharacterIn, InlineImageIn);

pub fn register(all: &mut Vec<Box<dyn ErasedOp>>) {
    use HttpMethod::{Get, Post, Put};
    let write = |method, path| OpSpec::agent(method, path, Scope::DraftsWrite).idempotent();
    all.push(operation(
        OpSpec::agent(Get, "/drafts", Scope::DraftsRead)
            .tool("list_redo")
            .summary("Drafts waiting for a rewrite or sent back, with every review comment")
            .description(
                "Oldest returned first. Each has its current body, the rewrite instruction or \
                 send-back comment, all review comments (oldest first) and its characters. \
                 Answer with update_draft.",
            ),
        list_redo,
    ));
    all.push(operation(
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
            ),
        submit_draft,
    ));
    all.push(operation(
        write(Put, "/drafts/{id}")
            .tool("update_draft")
            .summary("Rewrite one of your drafts and send it to review again")
            .description(
                "Only posts of your own accounts still in draft (draft, sent_back, rewrite_requested). \
                 A changed body answers the rewrite request (rewrite_answered true); the very body \
                 that was sent back is 422.",
            ),
        update_draft,
    ));
    all.push(operation(
        write(Post, "/drafts/{id}/images")
            .tool("attach_images")
            .summary("Append finished uploads to a draft")
            .description(
                "Only while the post is a draft or in internal review. All or nothing: any bad id \
                 rejects the request. Items already on the post are skipped.",
            ),
        attach_images,
    ));
    all.push(operation(
        write(Post, "/drafts/{id}/media")
            .tool("attach_media")
            .summary("Append media library items to a draft")
            .description(
                "Only while the post is a draft or in internal review. Items already on the post are \
                 skipped; archived items and items of another project are rejected; all or nothing.",
            ),
        attach_media,
    ));
    all.push(operation(
        write(Post, "/drafts/{id}/notes")
            .tool("add_note")
            .summary("Leave a note for the reviewers on a post's review record")
            .description("Appears as an 'added note' entry with you as the actor."),
        add_note,
    ));
}

// ---------------------------------------------------------------------------------------------
// Shared pieces

pub use fleetdesk_kernel::wire::fields::IdPath;

#[derive(Debug, Clone, Serialize, Deserialize, Validate, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct CharacterIn {
    /// A code from the cast of the account's persona, 1-24 characters.
    pub code: Text<1, 24>,
    /// The post is told from this character's point of view; at most one.
    #[serde(default)]
    pub pov: bool,
}

fn picks(c: &Option<List<CharacterIn, 0, 6>>) -> Option<Vec<CharacterPick>> {
    c.as_ref().map(|v| {
        v.iter()
            .map(|c| CharacterPick {
                code: c.code.to_string(),
                pov: c.pov,
            })
            .collect()
    })
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
#[derive(Debug, Serialize, ToSchema)]
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

fn draft(v: DraftView, noted: bool) -> Draft {
    Draft {
        id: v.id,
        stocked: v.status == PostStatus::Stocked,
        status: v.status,
        code: v.code,
        platform: v.platform,
        planned_at: v.planned_at.map(Utc),
        images: v.images,
        media: v.images + v.videos,
        duplicate: v.duplicate,
        characters: v.characters,
        rewrite_answered: v.rewrite_answered,
        noted,
    }
}

#[derive(Debug, Serialize, ToSchema)]
pub struct DraftReply {
    pub draft: Draft,
    /// Why the post was stocked, when it was.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub heads_up: Option<HeadsUp>,
}

/// Things worth knowing before writing more.
#[derive(Debug, Serialize, ToSchema)]
pub struct HeadsUp {
    pub inventory: InventoryHeadsUp,
}

/// The account still has finished posts in inventory.
#[derive(Debug, Serialize, ToSchema)]
pub struct InventoryHeadsUp {
    /// Other stocked posts of this account.
    pub stocked: i64,
    pub message: String,
}

fn reply(v: DraftView, noted: bool) -> DraftReply {
    let message = v.stocked_because.as_ref().map(|reason| {
        format!(
            "{}: the post was stocked, not sent to review, and counts for no day; unstock it once \
             the account is active",
            reason.as_deref().unwrap_or("the account is not active")
        )
    });
    let heads_up = (v.inventory > 0).then(|| HeadsUp {
        inventory: InventoryHeadsUp {
            stocked: v.inventory,
            message: format!(
                "account {} has {} stocked post(s) in inventory; consider unstocking one instead \
                 of writing new",
                v.code, v.inventory
            ),
        },
    });
    DraftReply {
        draft: draft(v, noted),
        message,
        heads_up,
    }
}

// ---------------------------------------------------------------------------------------------
// Refusals: how the API answers each refusal of drafting

impl From<DraftError> for ApiError {
    fn from(e: DraftError) -> ApiError {
        match e {
            DraftError::Inline(i, e) => {
                let field = match i {
                    Some(i) if !matches!(e, InlineImageError::TooLarge(_)) => {
                        format!("images[{i}].data")
                    }
                    _ => "images".to_owned(),
                };
                match e {
                    InlineImageError::TooLarge(_) => {
                        ApiError::new(ErrorCode::PayloadTooLarge, format!("{field}: {e}"))
                            .with_field(field)
                    }
                    // Well-formed base64 of something else: the rule of the field, not its shape.
                    e @ InlineImageError::NotAnImage => {
                        ApiError::rejected(format!("{field}: {e}")).with_field(field)
                    }
                    e => ApiError::invalid(field, e),
                }
            }
            DraftError::Refused(r) => r.into(),
            DraftError::Unexpected(e) => e.into(),
        }
    }
}

impl From<DraftRefusal> for ApiError {
    fn from(r: DraftRefusal) -> ApiError {
        match r {
        DraftRefusal::Account(e) => e.into(),
        DraftRefusal::PostNotFound => ApiError::not_found("no such post in this workspace"),
        DraftRefusal::PostNotYours => {
            ApiError::forbidden("this post belongs to another agent's account")
        }
        DraftRefusal::NotEditable(s) => ApiError::rejected(format!(
            "the post is {s}; only drafts (draft, sent_back, rewrite_requested) can be rewritten"
        )),
        DraftRefusal::MediaClosed(s) => ApiError::rejected(format!(
            "the post is {s}; media can be added only while it is a draft or in internal review"
        )),
        DraftRefusal::SameAsReturned => ApiError::rejected(
            "body is identical to the one that was sent back; rewrite it as the instruction asks",
        )
        .with_field("body"),
        DraftRefusal::PlannedAt(e) => ApiError::invalid("planned_at", e),
        DraftRefusal::Character(i, e) => {
            let field = match i {
                Some(i) => format!("characters[{i}].code"),
                None => "characters".to_owned(),
            };
            // A character named twice is a rule of the list no JSON Schema can state (unique
            // by code), like a code outside the cast: 422. Count and pov are in the schema.
            if e.is_rule() || matches!(e, CharacterError::Repeated(_)) {
                ApiError::rejected(format!("{field}: {e}")).with_field(field)
            } else {
                ApiError::invalid(field, e)
            }
        }
        DraftRefusal::Item {
            field,
            index,
            id,
            problem,
        } => {
            let field = format!("{field}[{index}]");
            ApiError::rejected(format!("{field}: {}", problem.describe(id))).with_field(field)
        }
        DraftRefusal::Caps(e) => ApiError::rejected(e.to_string()),
        // The specification's statuses: a pick of another account or a cancelled one is 400;
        // one that is not there is 404, one another post drafted is 422.
        DraftRefusal::Pick(p) => match p {
            PickProblem::Unknown(_) => ApiError::not_found(p.to_string()),
            PickProblem::OtherAccount { .. } | PickProblem::Cancelled(_) => {
                ApiError::invalid("pick", p.to_string())
            }
            PickProblem::DraftedBy { .. } | PickProblem::PostHasPick { .. } => {
                ApiError::rejected(p.to_string()).with_field("pick")
            }
        },
    }
    }
}

maybe_lookup!(DraftError, DraftError::Refused(DraftRefusal::Account(l)) => l);

// ---------------------------------------------------------------------------------------------
// GET /drafts

#[derive(Debug, Clone, Copy, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum RedoStatus {
    RewriteRequested,
    SentBack,
}

#[derive(Debug, Deserialize, Validate, ToSchema)]
pub struct RedoQuery {
    /// rewrite_requested or sent_back; default both.
    pub status: Option<RedoStatus>,
    /// 1-200, default 50.
    pub limit: Option<Limit<200>>,
    /// `next_cursor` of the previous page.
    pub cursor: Option<CursorInput>,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct RedoList {
    pub drafts: Vec<RedoDraft>,
    /// Pass as `cursor` for the next page; null on the last page.
    pub next_cursor: Option<Cursor>,
}

async fn list_redo(
    ctx: Ctx,
    agent: AgentCaller,
    req: Req<Nothing, RedoQuery, Nothing>,
) -> Result<Reply<RedoList>, ApiError> {
    let statuses: Vec<PostStatus> = match req.query.status {
        Some(RedoStatus::RewriteRequested) => vec![PostStatus::RewriteRequested],
        Some(RedoStatus::SentBack) => vec![PostStatus::SentBack],
        None => vec![PostStatus::RewriteRequested, PostStatus::SentBack],
    };
    let after = req.query.cursor.map(|c| c.0);
    let page = ctx
        .drafts
        .redo(
            agent.agent_ref(),
            &statuses,
            after,
            limit_or(req.query.limit, 50),
        )
        .await?;
    Ok(Reply::ok(RedoList {
        drafts: page.items,
        next_cursor: page.next.map(Cursor),
    }))
}

// ---------------------------------------------------------------------------------------------
// POST /drafts

#[derive(Debug, Deserialize, Validate, ToSchema)]
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

async fn submit_draft(
    ctx: Ctx,
    agent: AgentCaller,
    req: Req<Nothing, Nothing, SubmitDraftBody>,
) -> Result<Reply<DraftReply>, ApiError> {
    let b = req.body;
    let code = b.code.0;
    let noted = b.note.is_some();
    let code_text = code.as_str().to_owned();
    let request = SubmitRequest {
        draft: NewDraft {
            code: CodeRef {
                code,
                platform: b.platform,
            },
            body: b.body.into(),
            topic: b.topic.map(String::from),
            sponsored: b.sponsored.unwrap_or(false),
            planned_at: b.planned_at.map(|t| t.0),
            submit: b.submit.unwrap_or(true),
            content: DraftContent {
                characters: picks(&b.characters),
                images: Vec::new(),
                upload_ids: b.upload_ids.unwrap_or_default().into_vec(),
                media_ids: b.media_ids.unwrap_or_default().into_vec(),
                note: b.note.map(String::from),
            },
            pick: b.pick.map(|p| p.0),
        },
        images: b
            .images
            .unwrap_or_default()
            .into_iter()
            .map(|i| (i.data.0, i.caption.map(String::from)))
            .collect(),
    };
    let view = ctx
        .drafts
        .submit(agent.agent_ref(), request)
        .await
        .map_err(naming(&code_text))?;
    let status = if view.duplicate { 200 } else { 201 };
    Ok(Reply {
        status,
        body: reply(view, noted),
    })
}

// ---------------------------------------------------------------------------------------------
// PUT /drafts/{id}

#[derive(Debug, Deserialize, Validate, ToSchema)]
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

async fn update_draft(
    ctx: Ctx,
    agent: AgentCaller,
    req: Req<IdPath, Nothing, UpdateDraftBody>,
) -> Result<Reply<DraftReply>, ApiError> {
    let b = req.body;
    let noted = b.note.is_some();
    let edit = DraftEdit {
        post_id: req.path.id,
        body: b.body.into(),
        topic: b.topic.map(String::from),
        submit: b.submit.unwrap_or(true),
        content: DraftContent {
            characters: picks(&b.characters),
            images: Vec::new(),
            upload_ids: b.upload_ids.unwrap_or_default().into_vec(),
            media_ids: b.media_ids.unwrap_or_default().into_vec(),
            note: b.note.map(String::from),
        },
    };
    let view = ctx.drafts.update(agent.agent_ref(), edit).await?;
    Ok(Reply::ok(reply(view, noted)))
}

// ---------------------------------------------------------------------------------------------
// POST /drafts/{id}/images and /media

#[derive(Debug, Deserialize, Validate, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct AttachImagesBody {
    /// Finished uploads, 1-10, appended in this order.
    pub upload_ids: Ids<1, 10>,
    pub note: Option<Text<1, 1000>>,
}

#[derive(Debug, Deserialize, Validate, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct AttachMediaBody {
    /// Library items, 1-10, appended in this order.
    pub media_ids: Ids<1, 10>,
    pub note: Option<Text<1, 1000>>,
}

async fn attach_images(
    ctx: Ctx,
    agent: AgentCaller,
    req: Req<IdPath, Nothing, AttachImagesBody>,
) -> Result<Reply<DraftReply>, ApiError> {
    let noted = req.body.note.is_some();
    let view = ctx
        .drafts
        .attach(
            agent.agent_ref(),
            req.path.id,
            Attach::Uploads(req.body.upload_ids.into_vec()),
            req.body.note.map(String::from),
        )
        .await?;
    Ok(Reply::ok(reply(view, noted)))
}

async fn attach_media(
    ctx: Ctx,
    agent: AgentCaller,
    req: Req<IdPath, Nothing, AttachMediaBody>,
) -> Result<Reply<DraftReply>, ApiError> {
    let noted = req.body.note.is_some();
    let view = ctx
        .drafts
        .attach(
            agent.agent_ref(),
            req.path.id,
            Attach::Media(req.body.media_ids.into_vec()),
            req.body.note.map(String::from),
        )
        .await?;
    Ok(Reply::ok(reply(view, noted)))
}

// ---------------------------------------------------------------------------------------------
// POST /drafts/{id}/notes

#[derive(Debug, Deserialize, Validate, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct NoteBody {
    pub note: Text<1, 1000>,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct Noted {
    pub draft: NotedDraft,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct NotedDraft {
    pub id: Uuid,
    pub noted: bool,
}

async fn add_note(
    ctx: Ctx,
    agent: AgentCaller,
    req: Req<IdPath, Nothing, NoteBody>,
) -> Result<Reply<Noted>, ApiError> {
    ctx.drafts
        .add_note(agent.agent_ref(), req.path.id, &req.body.note)
        .await?;
    Ok(Reply::ok(Noted {
        draft: NotedDraft {
            id: req.path.id,
            noted: true,
        },
    }))
}
