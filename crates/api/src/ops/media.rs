//! Agent API: uploads and the media library.

use super::common::{maybe_lookup, naming};
use super::drafts::IdPath;
use crate::ctx::Ctx;
use crate::error::ApiError;
use crate::fields::{Utc, limit_or};
use crate::input::REQUEST_BODY;
use crate::input::{Nothing, Req};
use crate::links::{Links, Variant};
use crate::op::{ErasedOp, Reply};
use crate::op::{bind, bind_raw};
use fleetdesk_accounts::ports::CodeRef;
use fleetdesk_kernel::ErrorCode;
use fleetdesk_kernel::body::{Body, BodyError};
use fleetdesk_kernel::media::{CHUNK_BYTES, MediaKind, MediaType, SINGLE_MAX_BYTES};
use fleetdesk_kernel::project::ProjectMiss;
use fleetdesk_media::ports::{ListRefusal, MediaItem as Item, MediaQuery, UploadRefusal};
use fleetdesk_media::service::{CreateUploadError, PutError, UploadRequest};
use fleetdesk_media::upload::UploadMode;
pub use fleetdesk_media::wire::upload_rules;
use fleetdesk_media::wire::{
    ChunkProgress, ChunkQuery, CreateUploadBody, MediaItem, MediaList, MediaListQuery, MediaSort,
    PosterStored, StoredFile, TokenQuery, Upload, agent,
};
use fleetdesk_tenancy::AgentCaller;
use jiff::Timestamp;

pub fn register(all: &mut Vec<Box<dyn ErasedOp>>) {
    all.push(bind::<agent::CreateUpload, _, _, _>(create_upload));
    all.push(bind_raw::<agent::PutUpload, _, _>(put_upload));
    all.push(bind_raw::<agent::PutChunk, _, _>(put_chunk));
    all.push(bind_raw::<agent::PutPoster, _, _>(put_poster));
    all.push(bind::<agent::ListMedia, _, _, _>(list_media));
}

// ---------------------------------------------------------------------------------------------
// POST /uploads

async fn create_upload(
    ctx: Ctx,
    agent: AgentCaller,
    req: Req<Nothing, Nothing, CreateUploadBody>,
) -> Result<Reply<Upload>, ApiError> {
    let b = req.body;
    let code = b.code.0;
    let code_text = code.as_str().to_owned();
    let request = UploadRequest {
        code: CodeRef {
            code,
            platform: b.platform,
        },
        caption: b.caption.map(String::from),
        character: b.character.map(String::from),
        tags: b
            .tags
            .unwrap_or_default()
            .into_iter()
            .map(|t| t.0)
            .collect(),
        project: b.project.map(String::from),
        bytes: b.bytes.map(|b| b.get() as u64),
        mime_type: b.mime_type,
    };
    let created = ctx
        .media
        .create_upload(agent.agent_ref(), request, Timestamp::now())
        .await
        .map_err(naming(&code_text))?;
    let base = format!("{}/api/agent/v1/uploads/{}", ctx.base_url(), created.id);
    let t = &created.token;
    let accepts: Vec<String> = MediaType::ALL
        .into_iter()
        .filter(|m| created.plan.mode == UploadMode::Single || m.kind() == MediaKind::Video)
        .map(|m| m.mime().to_owned())
        .collect();
    let expires_at = Utc(created.plan.expires_at);
    let upload = match created.plan.mode {
        UploadMode::Single => Upload {
            upload_id: created.id,
            mode: UploadMode::Single,
            upload_url: Some(format!("{base}?t={t}")),
            chunk_url: None,
            poster_url: format!("{base}/poster?t={t}"),
            method: "PUT".into(),
            max_bytes: Some(SINGLE_MAX_BYTES),
            accepts,
            chunk_bytes: None,
            chunks: None,
            how: format!(
                "PUT the raw file (Content-Type: application/octet-stream, no Authorization) to \
                 upload_url before {expires_at}; the link works once. For a video, a thumbnail \
                 may go to poster_url."
            ),
            expires_at,
            media_id: None,
        },
        UploadMode::Chunked => {
            let chunks = created.plan.chunks.unwrap_or_default();
            Upload {
                upload_id: created.id,
                mode: UploadMode::Chunked,
                upload_url: None,
                chunk_url: Some(format!("{base}/chunks?t={t}&n=")),
                poster_url: format!("{base}/poster?t={t}"),
                method: "PUT".into(),
                max_bytes: None,
                accepts,
                chunk_bytes: Some(CHUNK_BYTES),
                chunks: Some(chunks),
                how: format!(
                    "Split the file into {chunks} chunks of exactly {CHUNK_BYTES} bytes (the last \
                     holds the rest) and PUT chunk n as raw bytes to chunk_url followed by n, \
                     from 0 in order, before {expires_at}. Resending a received chunk is harmless; \
                     the last answers done true with media_id. A thumbnail may go to poster_url."
                ),
                expires_at,
                media_id: None,
            }
        }
    };
    Ok(Reply::created(upload))
}

// ---------------------------------------------------------------------------------------------
// Refusals: how the API answers each refusal of the media library

impl From<CreateUploadError> for ApiError {
    fn from(e: CreateUploadError) -> ApiError {
        match e {
            CreateUploadError::Plan(p) if p.is_too_large() => {
                ApiError::new(ErrorCode::PayloadTooLarge, format!("{}: {p}", p.field()))
                    .with_field(p.field())
            }
            CreateUploadError::Plan(p) => ApiError::invalid(p.field(), p),
            CreateUploadError::Refused(UploadRefusal::Account(l)) => l.into(),
            CreateUploadError::Refused(UploadRefusal::Project(p, miss)) => project_miss(&p, miss),
            CreateUploadError::Refused(UploadRefusal::Character(c)) => ApiError::rejected(format!(
                "character: {c} is not in the cast of this account's persona"
            ))
            .with_field("character"),
            CreateUploadError::Unexpected(e) => e.into(),
        }
    }
}

/// A project a write names that is not one of the caller's workspace: 404 when the
/// organization has none of that name, 422 when another workspace has it.
pub fn project_miss(name: &str, miss: ProjectMiss) -> ApiError {
    let message = format!("project: {}", miss.message(name));
    let e = if miss.is_not_found() {
        ApiError::not_found(message)
    } else {
        ApiError::rejected(message)
    };
    e.with_field("project")
}

maybe_lookup!(CreateUploadError, CreateUploadError::Refused(UploadRefusal::Account(l)) => l);

// ---------------------------------------------------------------------------------------------
// The three file PUTs

impl From<PutError> for ApiError {
    fn from(e: PutError) -> ApiError {
        match e {
            PutError::NotFound => ApiError::not_found("no such upload"),
            PutError::BadToken => {
                ApiError::unauthorized("no upload has this id and token; ask for a new link")
            }
            PutError::Expired(at) => ApiError::unauthorized(format!(
                "this upload link expired at {}; create a new upload",
                Utc(at)
            )),
            PutError::Used(media_id) => {
                let e = ApiError::rejected("this upload link was already used; it works once");
                match media_id {
                    Some(id) => e.with_extra("media_id", id),
                    None => e,
                }
            }
            PutError::WrongMode(..) | PutError::PosterForImage => ApiError::rejected(e.to_string()),
            PutError::Body(m) => ApiError::invalid("body", m),
            PutError::Skipped { next_chunk } => ApiError::rejected(format!(
                "n: chunks go in order; send chunk {next_chunk} next"
            ))
            .with_field("n")
            .with_extra("next_chunk", next_chunk),
            PutError::OutOfRange(last) => {
                ApiError::invalid("n", format!("must be between 0 and {last}"))
            }
            PutError::Stream(e @ BodyError::TooLarge { .. }) => {
                ApiError::new(ErrorCode::PayloadTooLarge, e.to_string())
            }
            PutError::Stream(e @ BodyError::TooSlow { .. }) => {
                ApiError::new(ErrorCode::RequestTimeout, e.to_string()).with_field(REQUEST_BODY)
            }
            PutError::Stream(e @ BodyError::Read(_)) => {
                ApiError::new(ErrorCode::InvalidRequest, e.to_string()).with_field(REQUEST_BODY)
            }
            PutError::Unexpected(e) => e.into(),
        }
    }
}

async fn put_upload(
    ctx: Ctx,
    req: Req<IdPath, TokenQuery, Nothing>,
    body: Body,
) -> Result<Reply<StoredFile>, ApiError> {
    let id = req.path.id;
    let stored = ctx
        .media
        .put_single(id, &req.query.t, body, Timestamp::now())
        .await?;
    Ok(Reply::ok(StoredFile {
        upload_id: id,
        media_id: stored.media_id,
        mime_type: stored.media_type,
        kind: stored.media_type.kind(),
        bytes: stored.bytes,
        duplicate: stored.existing,
    }))
}

async fn put_chunk(
    ctx: Ctx,
    req: Req<IdPath, ChunkQuery, Nothing>,
    body: Body,
) -> Result<Reply<ChunkProgress>, ApiError> {
    let id = req.path.id;
    let p = ctx
        .media
        .put_chunk(id, &req.query.t, req.query.n.get(), body, Timestamp::now())
        .await?;
    Ok(Reply::ok(ChunkProgress {
        upload_id: id,
        media_id: p.media_id,
        received_bytes: p.received_bytes,
        total_bytes: p.total_bytes,
        next_chunk: p.next_chunk,
        done: p.done,
    }))
}

async fn put_poster(
    ctx: Ctx,
    req: Req<IdPath, TokenQuery, Nothing>,
    body: Body,
) -> Result<Reply<PosterStored>, ApiError> {
    let id = req.path.id;
    ctx.media
        .put_poster(id, &req.query.t, body, Timestamp::now())
        .await?;
    Ok(Reply::ok(PosterStored {
        upload_id: id,
        poster: true,
    }))
}

// ---------------------------------------------------------------------------------------------
// GET /media

fn item(i: Item, links: &Links, base: &str, expires: i64) -> MediaItem {
    let thumb = (i.kind == MediaKind::Image || i.has_poster)
        .then(|| links.url(base, i.id, Variant::Thumb, expires));
    MediaItem {
        url: links.url(base, i.id, Variant::File, expires),
        thumb_url: thumb,
        id: i.id,
        kind: i.kind,
        caption: i.caption,
        tags: i.tags,
        project: i.project,
        character: i.character,
        mime_type: i.mime_type,
        bytes: i.bytes,
        width: i.width,
        height: i.height,
        duration_ms: i.duration_ms,
        used_count: i.used_count,
        created_at: Utc(i.created_at),
    }
}

async fn list_media(
    ctx: Ctx,
    agent: AgentCaller,
    req: Req<Nothing, MediaListQuery, Nothing>,
) -> Result<Reply<MediaList>, ApiError> {
    let q = req.query;
    let query = MediaQuery {
        project: q.project.map(String::from),
        character: q.character.map(String::from),
        tag: q.tag.map(String::from),
        kind: q.kind,
        q: q.q.map(String::from),
        most_used: matches!(q.sort, Some(MediaSort::MostUsed)),
        limit: limit_or(q.limit, 30),
    };
    let items = ctx.media.list(agent.agent_ref(), &query).await?.map_err(
        |ListRefusal::UnknownProject(p)| {
            ApiError::not_found(format!("project: no project {p:?} in this workspace"))
                .with_field("project")
        },
    )?;
    let base = ctx.base_url();
    let expires = Links::expiry(Timestamp::now());
    Ok(Reply::ok(MediaList {
        media: items
            .into_iter()
            .map(|i| item(i, &ctx.links, &base, expires))
            .collect(),
        links_expire_in_seconds: Links::LIFETIME_SECONDS,
    }))
}
