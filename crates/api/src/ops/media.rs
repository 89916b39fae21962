//! Agent API: uploads and the media library.

use super::common::{CodeInput, TagInput, maybe_lookup, naming};
use super::drafts::IdPath;
use crate::ctx::Ctx;
use crate::error::ApiError;
use crate::fields::{Int, Limit, List, Text, Utc, limit_or};
use crate::input::REQUEST_BODY;
use crate::input::{Nothing, Req};
use crate::links::{Links, Variant};
use crate::op::{ErasedOp, HttpMethod, OpSpec, Reply, operation, raw_operation};
use fleetdesk_accounts::ports::CodeRef;
use fleetdesk_kernel::body::{Body, BodyError};
use fleetdesk_kernel::media::{
    CHUNK_BYTES, MediaKind, MediaType, POSTER_MAX_BYTES, SINGLE_MAX_BYTES,
};
use fleetdesk_kernel::project::ProjectMiss;
use fleetdesk_kernel::{ErrorCode, Platform};
use fleetdesk_media::ports::{ListRefusal, MediaItem as Item, MediaQuery, UploadRefusal};
use fleetdesk_media::service::{CreateUploadError, PutError, UploadRequest};
use fleetdesk_media::upload::UploadMode;
use fleetdesk_tenancy::{AgentCaller, Scope};
use jiff::Timestamp;
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;
use uuid::Uuid;
use validator::Validate;

pub fn register(all: &mut Vec<Box<dyn ErasedOp>>) {
    use HttpMethod::{Get, Post};
    all.push(operation(
        OpSpec::agent(Post, "/uploads", Scope::DraftsWrite)
            .tool("create_upload")
            .idempotent()
            .created()
            .also_answers(&[404])
            .summary("Get a link to upload an image or a video")
            .description(
                "Images, and videos up to 4 MB: `mode: single`, PUT the file to upload_url \
                (valid 1 hour, once). Videos over 4 MB (up to 500 MB): `mode: chunked`, PUT chunks \
                of exactly 3145728 bytes (the last may be smaller) in order from 0 to chunk_url \
                followed by the chunk index (valid 23 hours). A poster (thumbnail) may go to \
                poster_url any time the link is valid. The file becomes a media library item.",
            ),
        create_upload,
    ));
    all.push(raw_operation(
        OpSpec::token_put("/uploads/{id}", SINGLE_MAX_BYTES)
            .summary("Send the whole file of a single upload")
            .description(
                "Raw bytes (application/octet-stream), JPEG, PNG, WebP, MP4, MOV or WebM up to 4 MB, \
                 the type judged from the file header. No key: the one-time token `t` is the \
                 credential. An identical file already in the library answers with that item's id.",
            ),
        put_upload,
    ));
    all.push(raw_operation(
        OpSpec::token_put("/uploads/{id}/chunks", CHUNK_BYTES)
            .summary("Send one chunk of a chunked upload")
            .description(
                "Chunks go in order from n=0, each exactly 3145728 bytes except the last. Resending a \
                 received chunk only answers the progress; a skipped chunk is 422 naming next_chunk. \
                 The last chunk answers done true with media_id. Progress survives a restart of the \
                 service.",
            ),
        put_chunk,
    ));
    all.push(raw_operation(
        OpSpec::token_put("/uploads/{id}/poster", POSTER_MAX_BYTES)
            .summary("Send a video's poster (thumbnail)")
            .description(
                "A JPEG, PNG or WebP up to 4 MB, before or after the video and after the draft is \
                 submitted, while the link is valid.",
            ),
        put_poster,
    ));
    all.push(operation(
        OpSpec::agent(Get, "/media", Scope::DraftsRead)
            .tool("list_media")
            .also_answers(&[404])
            .summary("Search the media library")
            .description("Items of every project of your workspace plus unscoped shared ones; \
                archived items are excluded. Links are valid at least links_expire_in_seconds; videos answer HTTP \
                Range requests."),
        list_media,
    ));
}

// ---------------------------------------------------------------------------------------------
// POST /uploads

#[derive(Debug, Deserialize, Validate, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct CreateUploadBody {
    /// The account the file is for (current or legacy code, 1-40).
    pub code: CodeInput,
    pub platform: Option<Platform>,
    pub caption: Option<Text<0, 200>>,
    /// A cast code of the account's persona, 1-24.
    pub character: Option<Text<1, 24>>,
    /// Up to 20 tags of 1-30 characters (spaces around a tag are dropped).
    pub tags: Option<List<TagInput, 0, 20>>,
    /// A project of this workspace, 1-80; default the persona's project. A project of no
    /// workspace of your organization is 404, another workspace's 422.
    pub project: Option<Text<1, 80>>,
    /// Size of the file: required for videos and files over 4 MB.
    pub bytes: Option<Int<1, 524_288_000>>,
    /// Required for videos.
    pub mime_type: Option<MediaType>,
}

/// What `fleetdesk_media::upload::plan` requires of the declared file: a video gives its size;
/// a file over the single-upload size is a video that says so; a video stays within the video
/// limit (the `bytes` maximum).
pub fn upload_rules() -> serde_json::Value {
    let videos: Vec<&str> = MediaType::ALL
        .into_iter()
        .filter(|m| m.kind() == MediaKind::Video)
        .map(MediaType::mime)
        .collect();
    serde_json::json!({"allOf": [
        {
            "if": {"properties": {"mime_type": {"enum": videos}}, "required": ["mime_type"]},
            "then": {"required": ["bytes"], "properties": {"bytes": {"type": "integer"}}},
        },
        {
            "if": {
                "properties": {"bytes": {"type": "integer", "minimum": SINGLE_MAX_BYTES + 1}},
                "required": ["bytes"],
            },
            "then": {"required": ["mime_type"], "properties": {"mime_type": {"enum": videos}}},
        },
    ]})
}

#[derive(Debug, Serialize, ToSchema)]
pub struct Upload {
    pub upload_id: Uuid,
    pub mode: UploadMode,
    /// Single mode: PUT the whole file here.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub upload_url: Option<String>,
    /// Chunked mode: PUT chunk n to this URL followed by n.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub chunk_url: Option<String>,
    /// PUT a JPEG, PNG or WebP thumbnail of a video here.
    pub poster_url: String,
    pub method: String,
    /// Single mode: the largest file.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_bytes: Option<u64>,
    pub accepts: Vec<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub chunk_bytes: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub chunks: Option<i32>,
    pub expires_at: Utc,
    pub how: String,
    /// Present once the file is stored.
    pub media_id: Option<Uuid>,
}

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

#[derive(Debug, Deserialize, Validate, ToSchema)]
pub struct TokenQuery {
    /// The token from the upload link.
    pub t: Text<1, 200>,
}

#[derive(Debug, Deserialize, Validate, ToSchema)]
pub struct ChunkQuery {
    /// The token from the upload link.
    pub t: Text<1, 200>,
    /// The chunk index, from 0.
    pub n: Int<0, 1000>,
}

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

#[derive(Debug, Serialize, ToSchema)]
pub struct StoredFile {
    pub upload_id: Uuid,
    pub media_id: Uuid,
    pub mime_type: MediaType,
    pub kind: MediaKind,
    pub bytes: i64,
    /// The library already held this very file; its item is returned.
    pub duplicate: bool,
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

#[derive(Debug, Serialize, ToSchema)]
pub struct ChunkProgress {
    pub upload_id: Uuid,
    /// Present once done.
    pub media_id: Option<Uuid>,
    pub received_bytes: i64,
    pub total_bytes: i64,
    /// The chunk to send next; null once done.
    pub next_chunk: Option<i32>,
    pub done: bool,
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

#[derive(Debug, Serialize, ToSchema)]
pub struct PosterStored {
    pub upload_id: Uuid,
    pub poster: bool,
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

#[derive(Debug, Clone, Copy, Default, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum MediaSort {
    #[default]
    Newest,
    MostUsed,
}

#[derive(Debug, Deserialize, Validate, ToSchema)]
pub struct MediaListQuery {
    /// A project of this workspace: its items plus unscoped ones.
    pub project: Option<Text<1, 80>>,
    /// A cast code.
    pub character: Option<Text<1, 24>>,
    pub tag: Option<Text<1, 30>>,
    pub kind: Option<MediaKind>,
    /// Searches captions and tags.
    pub q: Option<Text<1, 100>>,
    /// newest (default) or most_used.
    pub sort: Option<MediaSort>,
    /// 1-100, default 30.
    pub limit: Option<Limit<100>>,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct MediaList {
    pub media: Vec<MediaItem>,
    /// Every link in this answer stays valid at least this long.
    pub links_expire_in_seconds: i64,
}

#[derive(Debug, Serialize, ToSchema)]
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
    /// Null for images.
    pub duration_ms: Option<i64>,
    /// Posts using the item.
    pub used_count: i64,
    pub created_at: Utc,
    pub url: String,
    /// A small copy of the image, or of a video's poster (longest side at most 320 px; JPEG, or
    /// PNG when transparent); null for a video without a poster.
    pub thumb_url: Option<String>,
}

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
