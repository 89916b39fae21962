//! Agent API: drafts.

use super::common::{maybe_lookup, naming};
use crate::ctx::Ctx;
use crate::error::ApiError;
use crate::fields::{Cursor, List, Utc, limit_or};
use crate::input::{Nothing, Req};
use crate::op::bind;
use crate::op::{ErasedOp, Reply};
use fleetdesk_accounts::ports::CodeRef;
use fleetdesk_ads::pick::PickProblem;
use fleetdesk_drafts::draft::{CharacterError, CharacterPick, InlineImageError};
use fleetdesk_drafts::ports::{Attach, DraftContent, DraftEdit, DraftRefusal, DraftView, NewDraft};
use fleetdesk_drafts::service::{DraftError, SubmitRequest};
use fleetdesk_drafts::wire::agent;
pub use fleetdesk_drafts::wire::{
    AttachImagesBody, AttachMediaBody, CharacterIn, Draft, DraftReply, HeadsUp, InlineImageIn,
    InventoryHeadsUp, NoteBody, Noted, NotedDraft, RedoList, RedoQuery, RedoStatus,
    SubmitDraftBody, UpdateDraftBody,
};
pub use fleetdesk_drafts::wire::{submit_rules, update_rules};
use fleetdesk_kernel::ErrorCode;
use fleetdesk_posts::post::PostStatus;
use fleetdesk_tenancy::AgentCaller;

pub fn register(all: &mut Vec<Box<dyn ErasedOp>>) {
    all.push(bind::<agent::ListRedo, _, _, _>(list_redo));
    all.push(bind::<agent::SubmitDraft, _, _, _>(submit_draft));
    all.push(bind::<agent::UpdateDraft, _, _, _>(update_draft));
    all.push(bind::<agent::AttachImages, _, _, _>(attach_images));
    all.push(bind::<agent::AttachMedia, _, _, _>(attach_media));
    all.push(bind::<agent::AddNote, _, _, _>(add_note));
}

// ---------------------------------------------------------------------------------------------
// Shared pieces

pub use fleetdesk_kernel::wire::fields::IdPath;

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
