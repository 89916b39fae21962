//! The media part of the interface (feature `wire`): each operation's handle with its
//! description, and the request and response types the server parses and a client sends.

use crate::upload::UploadMode;
use fleetdesk_kernel::Platform;
use fleetdesk_kernel::media::{
    CHUNK_BYTES, MediaKind, MediaType, POSTER_MAX_BYTES, SINGLE_MAX_BYTES,
};
use fleetdesk_kernel::wire::fields::{Int, Limit, List, Text, Utc};
use fleetdesk_kernel::wire::strings::{CodeInput, TagInput};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;
use uuid::Uuid;
use validator::Validate;

// ---------------------------------------------------------------------------------------------
// POST /uploads

#[derive(Debug, Serialize, Deserialize, Validate, ToSchema)]
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

#[derive(Debug, Serialize, Deserialize, ToSchema)]
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

// ---------------------------------------------------------------------------------------------
// Refusals: how the API answers each refusal of the media library

// ---------------------------------------------------------------------------------------------
// The three file PUTs

#[derive(Debug, Serialize, Deserialize, Validate, ToSchema)]
pub struct TokenQuery {
    /// The token from the upload link.
    pub t: Text<1, 200>,
}

#[derive(Debug, Serialize, Deserialize, Validate, ToSchema)]
pub struct ChunkQuery {
    /// The token from the upload link.
    pub t: Text<1, 200>,
    /// The chunk index, from 0.
    pub n: Int<0, 1000>,
}

#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct StoredFile {
    pub upload_id: Uuid,
    pub media_id: Uuid,
    pub mime_type: MediaType,
    pub kind: MediaKind,
    pub bytes: i64,
    /// The library already held this very file; its item is returned.
    pub duplicate: bool,
}

#[derive(Debug, Serialize, Deserialize, ToSchema)]
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

#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct PosterStored {
    pub upload_id: Uuid,
    pub poster: bool,
}

// ---------------------------------------------------------------------------------------------
// GET /media

#[derive(Debug, Clone, Copy, Default, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum MediaSort {
    #[default]
    Newest,
    MostUsed,
}

#[derive(Debug, Serialize, Deserialize, Validate, ToSchema)]
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

#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct MediaList {
    pub media: Vec<MediaItem>,
    /// Every link in this answer stays valid at least this long.
    pub links_expire_in_seconds: i64,
}

#[derive(Debug, Serialize, Deserialize, ToSchema)]
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

/// The agent's operations (`/api/agent/v1`).
pub mod agent {
    use super::*;
    use fleetdesk_kernel::access::Scope;
    use fleetdesk_kernel::op::{
        HttpMethod::{Get, Post},
        Nothing, OpSpec,
    };
    use fleetdesk_kernel::wire::fields::IdPath;

    fleetdesk_kernel::operations! {
        /// Get a link to upload an image or a video.
        pub CreateUpload(Nothing, Nothing, CreateUploadBody) -> Upload =
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
                );

        /// Send the whole file of a single upload.
        pub PutUpload(IdPath, TokenQuery, Nothing) -> StoredFile =
            OpSpec::token_put("/uploads/{id}", SINGLE_MAX_BYTES)
                .summary("Send the whole file of a single upload")
                .description(
                    "Raw bytes (application/octet-stream), JPEG, PNG, WebP, MP4, MOV or WebM up to 4 MB, \
                     the type judged from the file header. No key: the one-time token `t` is the \
                     credential. An identical file already in the library answers with that item's id.",
                );

        /// Send one chunk of a chunked upload.
        pub PutChunk(IdPath, ChunkQuery, Nothing) -> ChunkProgress =
            OpSpec::token_put("/uploads/{id}/chunks", CHUNK_BYTES)
                .summary("Send one chunk of a chunked upload")
                .description(
                    "Chunks go in order from n=0, each exactly 3145728 bytes except the last. Resending a \
                     received chunk only answers the progress; a skipped chunk is 422 naming next_chunk. \
                     The last chunk answers done true with media_id. Progress survives a restart of the \
                     service.",
                );

        /// Send a video's poster (thumbnail).
        pub PutPoster(IdPath, TokenQuery, Nothing) -> PosterStored =
            OpSpec::token_put("/uploads/{id}/poster", POSTER_MAX_BYTES)
                .summary("Send a video's poster (thumbnail)")
                .description(
                    "A JPEG, PNG or WebP up to 4 MB, before or after the video and after the draft is \
                     submitted, while the link is valid.",
                );

        /// Search the media library.
        pub ListMedia(Nothing, MediaListQuery, Nothing) -> MediaList =
            OpSpec::agent(Get, "/media", Scope::DraftsRead)
                .tool("list_media")
                .also_answers(&[404])
                .summary("Search the media library")
                .description("Items of every project of your workspace plus unscoped shared ones; \
                    archived items are excluded. Links are valid at least links_expire_in_seconds; videos answer HTTP \
                    Range requests.");
    }
}
