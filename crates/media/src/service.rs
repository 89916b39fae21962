//! The upload and library use cases. Handlers call these; the rules are in the sibling modules
//! and the I/O behind the ports.

use crate::image_size;
use crate::ports::*;
use crate::probe::{ProbeError, VideoInfo, probe_video};
use crate::thumbs::{self, Made, ThumbRef};
use crate::upload::{
    ChunkStep, PlanError, ResumableHash, UploadMode, UploadPlan, chunk_step, distinct_tags,
    new_token, plan, token_matches,
};
use bytes::Bytes;
use fleetdesk_kernel::AgentRef;
use fleetdesk_kernel::blob::{BlobError, BlobStore, BlobWriter};
use fleetdesk_kernel::body::{self, Body, BodyError};
use fleetdesk_kernel::digest::sha256_hex;
use fleetdesk_kernel::media::{
    MediaKind, MediaType, POSTER_MAX_BYTES, SINGLE_MAX_BYTES, SNIFF_BYTES,
};
use futures_util::StreamExt as _;
use jiff::Timestamp;
use std::io::{Read, Seek, SeekFrom};
use std::sync::Arc;
use uuid::Uuid;

fn blob_error(e: BlobError) -> anyhow::Error {
    anyhow::anyhow!(e)
}

/// Content-addressed key of a file stored whole.
pub fn media_key(sha256: &str, t: MediaType) -> String {
    format!("media/{}/{sha256}.{}", &sha256[..2], t.extension())
}

fn poster_key(sha256: &str, t: MediaType) -> String {
    format!("posters/{}/{sha256}.{}", &sha256[..2], t.extension())
}

fn upload_prefix(id: Uuid) -> String {
    format!("uploads/{id}")
}

// ---------------------------------------------------------------------------------------------
// Uploads

#[derive(Clone)]
pub struct MediaService {
    repo: Arc<dyn MediaRepo>,
    blobs: Arc<dyn BlobStore>,
}

/// `POST /uploads` as the agent sent it.
#[derive(Debug, Clone)]
pub struct UploadRequest {
    pub code: fleetdesk_accounts::ports::CodeRef,
    pub caption: Option<String>,
    pub character: Option<String>,
    pub tags: Vec<String>,
    pub project: Option<String>,
    pub bytes: Option<u64>,
    pub mime_type: Option<MediaType>,
}

/// A created upload: the one time its token is seen.
#[derive(Debug, Clone)]
pub struct CreatedUpload {
    pub id: Uuid,
    pub token: String,
    pub plan: UploadPlan,
    pub bytes: Option<u64>,
}

#[derive(Debug, thiserror::Error)]
pub enum CreateUploadError {
    #[error("{0}")]
    Plan(PlanError),
    #[error("{0:?}")]
    Refused(UploadRefusal),
    #[error(transparent)]
    Unexpected(#[from] anyhow::Error),
}

/// Why a file PUT is refused.
#[derive(Debug, thiserror::Error)]
pub enum PutError {
    #[error("no such upload")]
    NotFound,
    #[error("the upload token does not match")]
    BadToken,
    #[error("this upload link expired at {0}; create a new upload")]
    Expired(Timestamp),
    #[error("this upload link was already used")]
    Used(Option<Uuid>),
    #[error("this is a {0} upload; {1}")]
    WrongMode(&'static str, &'static str),
    /// Malformed file: 400 naming `body`.
    #[error("{0}")]
    Body(String),
    /// A chunk beyond the next one.
    #[error("chunk {next_chunk} is the next one to send")]
    Skipped { next_chunk: i32 },
    #[error("n must be between 0 and {0}")]
    OutOfRange(i32),
    #[error("a poster is only for videos")]
    PosterForImage,
    /// The body stopped before its end: past the operation's limit (413), or cut short.
    #[error(transparent)]
    Stream(#[from] BodyError),
    #[error(transparent)]
    Unexpected(#[from] anyhow::Error),
}

/// A thumbnail as its link serves it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ThumbBody {
    /// A small image (or a poster standing as its own thumbnail), read whole.
    Bytes(Bytes, MediaType),
    /// The file itself, streamed as its file link streams it: an image that cannot be made
    /// small stands as its own thumbnail.
    File(Layout, MediaType),
}

/// A finished single upload or the last chunk.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Stored {
    pub media_id: Uuid,
    pub media_type: MediaType,
    pub bytes: i64,
    pub existing: bool,
}

/// Progress of a chunked upload.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChunkProgress {
    pub media_id: Option<Uuid>,
    pub received_bytes: i64,
    pub total_bytes: i64,
    /// `None` once done.
    pub next_chunk: Option<i32>,
    pub done: bool,
}

impl MediaService {
    pub fn new(repo: Arc<dyn MediaRepo>, blobs: Arc<dyn BlobStore>) -> Self {
        MediaService { repo, blobs }
    }

    pub async fn create_upload(
        &self,
        agent: AgentRef,
        req: UploadRequest,
        now: Timestamp,
    ) -> Result<CreatedUpload, CreateUploadError> {
        let plan = plan(req.mime_type, req.bytes, now).map_err(CreateUploadError::Plan)?;
        let (token, token_hash) = new_token();
        let upload = NewUpload {
            code: req.code,
            caption: req.caption,
            character: req.character,
            tags: distinct_tags(req.tags),
            project: req.project,
            mode: plan.mode,
            mime_type: req.mime_type,
            bytes: req.bytes.map(|b| b as i64),
            chunks: plan.chunks,
            token_hash,
            expires_at: plan.expires_at,
        };
        let id = self
            .repo
            .create_upload(agent, &upload)
            .await?
            .map_err(CreateUploadError::Refused)?;
        Ok(CreatedUpload {
            id,
            token,
            plan,
            bytes: req.bytes,
        })
    }

    /// The upload behind a link, with its token checked. An id no upload has is answered as a
    /// token that does not match: a caller without the link learns nothing, not even whether
    /// the id exists (in another tenant, say).
    async fn open(&self, id: Uuid, token: &str, now: Timestamp) -> Result<UploadState, PutError> {
        let upload = self.repo.upload(id).await?.ok_or(PutError::BadToken)?;
        if !token_matches(token, &upload.token_hash) {
            return Err(PutError::BadToken);
        }
        if now >= upload.expires_at {
            return Err(PutError::Expired(upload.expires_at));
        }
        Ok(upload)
    }

    /// `PUT /uploads/{id}`: the whole file, at most 4 MiB, its type judged from its header.
    ///
    /// The link is checked before the body is read; the file is then read whole (an image is
    /// decoded for its thumbnail, and the file is stored under its SHA-256).
    pub async fn put_single(
        &self,
        id: Uuid,
        token: &str,
        body: Body,
        now: Timestamp,
    ) -> Result<Stored, PutError> {
        let upload = self.open(id, token, now).await?;
        if upload.mode != UploadMode::Single {
            return Err(PutError::WrongMode(
                "chunked",
                "send the file in chunks to chunk_url",
            ));
        }
        if upload.media_id.is_some() {
            return Err(PutError::Used(upload.media_id));
        }
        let body = body::read_to_end(body, SINGLE_MAX_BYTES).await?;
        if body.is_empty() {
            return Err(PutError::Body("is empty".into()));
        }
        if body.len() as u64 > SINGLE_MAX_BYTES {
            return Err(PutError::Body(format!(
                "is {} bytes; at most {SINGLE_MAX_BYTES}",
                body.len()
            )));
        }
        let media_type = judge(&body, upload.mime_type)?;
        if let Some(declared) = upload.declared_bytes
            && declared != body.len() as i64
        {
            return Err(PutError::Body(format!(
                "is {} bytes but the upload declared {declared}",
                body.len()
            )));
        }
        let (width, height, duration_ms) = match media_type.kind() {
            MediaKind::Image => {
                let (w, h) = image_size(&body);
                (w, h, None)
            }
            MediaKind::Video => {
                let len = body.len() as u64;
                let info = probe_video(std::io::Cursor::new(body.clone()), len, media_type)
                    .map_err(probe_error)?;
                (info.width, info.height, info.duration_ms)
            }
        };
        let sha256 = sha256_hex(&body);
        let key = media_key(&sha256, media_type);
        let bytes = body.len() as i64;
        // The file is written while its thumbnail is made: an image's from itself, a video's
        // from the poster its upload holds.
        let (written, (thumb, thumb_poster)) = tokio::join!(
            self.blobs.put(&key, body.clone()),
            self.new_thumb(&upload, media_type, &key, &sha256, body)
        );
        written.map_err(blob_error)?;
        let media = NewMedia {
            media_type,
            sha256,
            layout: Layout::single(key, bytes),
            width,
            height,
            duration_ms,
            thumb,
            thumb_poster,
        };
        let Some(done) = self.repo.complete(&upload, &media).await? else {
            // The same link used twice at once: the other request stored its file first.
            let winner = self.repo.upload(id).await?.ok_or(PutError::NotFound)?;
            return Err(PutError::Used(winner.media_id));
        };
        Ok(Stored {
            media_id: done.media_id,
            media_type,
            bytes,
            existing: done.existing,
        })
    }

    /// `PUT /uploads/{id}/chunks?n=`: chunk `n`, in order from 0. The content hash goes on as
    /// chunks arrive and is saved with the progress, so a restart loses nothing acknowledged.
    ///
    /// The link, the upload's state and the chunk's place are checked before the body is read;
    /// the body is then hashed and written to `uploads/<id>/<n>` piece by piece as it arrives,
    /// and only a body of exactly the chunk's size (and, for the first, a video) is stored and
    /// acknowledged: any other is discarded, progress unchanged.
    pub async fn put_chunk(
        &self,
        id: Uuid,
        token: &str,
        n: i64,
        body: Body,
        now: Timestamp,
    ) -> Result<ChunkProgress, PutError> {
        let upload = self.open(id, token, now).await?;
        if upload.mode != UploadMode::Chunked {
            return Err(PutError::WrongMode(
                "single",
                "PUT the whole file to upload_url",
            ));
        }
        let total = upload.declared_bytes.unwrap_or_default();
        let progress = |u: &UploadState| ChunkProgress {
            media_id: u.media_id,
            received_bytes: u.received_bytes,
            total_bytes: total,
            next_chunk: u.media_id.is_none().then_some(u.next_chunk),
            done: u.media_id.is_some(),
        };
        let step = chunk_step(n, upload.next_chunk, total as u64);
        let (expected, last) = match step {
            ChunkStep::Resent => return Ok(progress(&upload)),
            _ if upload.media_id.is_some() => return Ok(progress(&upload)),
            ChunkStep::Skipped { next_chunk } => return Err(PutError::Skipped { next_chunk }),
            ChunkStep::OutOfRange { chunks } => return Err(PutError::OutOfRange(chunks - 1)),
            ChunkStep::Next {
                expected_bytes,
                last,
            } => (expected_bytes, last),
        };
        let n = n as i32;
        let mut hash = match &upload.hash_state {
            Some(state) => ResumableHash::restore(state)
                .ok_or_else(|| anyhow::anyhow!("upload {id}: saved hash state is unreadable"))?,
            None => ResumableHash::new(),
        };
        let key = format!("{}/{n}", upload_prefix(id));
        let writer = self.blobs.put_stream(&key).map_err(blob_error)?;
        let chunk = Chunk {
            n,
            expected,
            detected: upload.detected_mime,
            declared: upload.mime_type,
        };
        let detected = chunk.receive(body, writer, &mut hash).await?;
        let received = upload.received_bytes + expected as i64;

        if !last {
            let saved = hash.save();
            if !self
                .repo
                .chunk_received(id, n, received, &saved, detected)
                .await?
            {
                // Another request took this chunk first; report where things stand.
                let now_state = self.repo.upload(id).await?.ok_or(PutError::NotFound)?;
                return Ok(progress(&now_state));
            }
            return Ok(ChunkProgress {
                media_id: None,
                received_bytes: received,
                total_bytes: total,
                next_chunk: Some(n + 1),
                done: false,
            });
        }

        let layout = Layout {
            key: upload_prefix(id),
            parts: n + 1,
            part_bytes: fleetdesk_kernel::media::CHUNK_BYTES as i64,
            bytes: total,
        };
        let (probed, (thumb, thumb_poster)) = tokio::join!(
            self.probe_stored(&layout, detected),
            self.poster_thumb(&upload)
        );
        let info = match probed {
            Ok(info) => info,
            // The same last chunk sent twice at once: the other request may have finished the
            // upload and, the library having the file already, removed the parts read here.
            Err(e) => match self.finished_elsewhere(id, &layout).await? {
                Some(state) => return Ok(progress(&state)),
                None => return Err(e),
            },
        };
        let media = NewMedia {
            media_type: detected,
            sha256: hash.finish_hex(),
            layout: layout.clone(),
            width: info.width,
            height: info.height,
            duration_ms: info.duration_ms,
            thumb,
            thumb_poster,
        };
        let mut closing = upload.clone();
        closing.next_chunk = n;
        let Some(done) = self.repo.complete(&closing, &media).await? else {
            let now_state = self
                .finished_elsewhere(id, &layout)
                .await?
                .ok_or_else(|| anyhow::anyhow!("upload {id}: closed, yet without an item"))?;
            return Ok(progress(&now_state));
        };
        if done.existing {
            // The library already had this file: its parts are not needed.
            self.remove_parts(&layout).await;
        }
        Ok(ChunkProgress {
            media_id: Some(done.media_id),
            received_bytes: total,
            total_bytes: total,
            next_chunk: None,
            done: true,
        })
    }

    /// The upload's state when another request completed it; when its item is stored elsewhere
    /// (the library had the file), the parts this request wrote are removed too.
    async fn finished_elsewhere(
        &self,
        id: Uuid,
        layout: &Layout,
    ) -> Result<Option<UploadState>, PutError> {
        let state = self.repo.upload(id).await?.ok_or(PutError::NotFound)?;
        let Some(media_id) = state.media_id else {
            return Ok(None);
        };
        if self
            .repo
            .file(media_id)
            .await?
            .is_some_and(|f| f.layout.key != layout.key)
        {
            self.remove_parts(layout).await;
        }
        Ok(Some(state))
    }

    async fn remove_parts(&self, layout: &Layout) {
        for i in 0..layout.parts {
            if let Err(e) = self.blobs.delete(&layout.part_key(i)).await {
                tracing::warn!(error = %e, "removing a part of a duplicate upload failed");
            }
        }
    }

    /// Reads a video stored in parts through a blocking reader that fetches only the ranges
    /// the container parser asks for.
    async fn probe_stored(&self, layout: &Layout, t: MediaType) -> Result<VideoInfo, PutError> {
        let reader = PartsReader {
            blobs: self.blobs.clone(),
            layout: layout.clone(),
            pos: 0,
            buf: Bytes::new(),
            buf_at: 0,
            handle: tokio::runtime::Handle::current(),
        };
        let size = layout.bytes as u64;
        tokio::task::spawn_blocking(move || probe_video(reader, size, t))
            .await
            .map_err(|e| anyhow::anyhow!("probe task failed: {e}"))?
            .map_err(probe_error)
    }

    /// `PUT /uploads/{id}/poster`: a JPEG, PNG or WebP thumbnail for a video, before or after
    /// the video itself.
    pub async fn put_poster(
        &self,
        id: Uuid,
        token: &str,
        body: Body,
        now: Timestamp,
    ) -> Result<(), PutError> {
        let upload = self.open(id, token, now).await?;
        let kind = upload
            .detected_mime
            .or(upload.mime_type)
            .map(MediaType::kind);
        if kind == Some(MediaKind::Image) {
            return Err(PutError::PosterForImage);
        }
        // Read whole: it is decoded for the video's thumbnail and stored under its SHA-256.
        let body = body::read_to_end(body, POSTER_MAX_BYTES).await?;
        if body.is_empty() {
            return Err(PutError::Body("is empty".into()));
        }
        if body.len() as u64 > POSTER_MAX_BYTES {
            return Err(PutError::Body(format!(
                "is {} bytes; a poster is at most {POSTER_MAX_BYTES}",
                body.len()
            )));
        }
        let t = MediaType::sniff(&body[..body.len().min(SNIFF_BYTES)])
            .filter(|t| t.kind() == MediaKind::Image)
            .ok_or_else(|| PutError::Body("is not a JPEG, PNG or WebP image".into()))?;
        let sha = sha256_hex(&body);
        let key = poster_key(&sha, t);
        self.blobs
            .put(&key, body.clone())
            .await
            .map_err(blob_error)?;
        // The video's thumbnail is made when its poster joins the item: now when the item
        // exists, else when the video's last bytes arrive (from the poster the upload then
        // holds).
        let thumb = match upload.media_id {
            Some(_) => thumbs::make_and_store(&*self.blobs, body, &key, t, Some(sha)).await,
            None => None,
        };
        self.repo.set_poster(id, &key, t, thumb.as_ref()).await?;
        Ok(())
    }

    /// The thumbnail of a file entering the library, and for a video the poster it was made
    /// from (`None`s when there is none, or it could not be stored).
    async fn new_thumb(
        &self,
        upload: &UploadState,
        media_type: MediaType,
        key: &str,
        sha256: &str,
        body: Bytes,
    ) -> (Option<ThumbRef>, Option<String>) {
        match media_type.kind() {
            MediaKind::Image => {
                let thumb = thumbs::make_and_store(
                    &*self.blobs,
                    body,
                    key,
                    media_type,
                    Some(sha256.to_owned()),
                )
                .await;
                (thumb, None)
            }
            MediaKind::Video => self.poster_thumb(upload).await,
        }
    }

    /// A video's thumbnail, made from the poster its upload held when the request began.
    async fn poster_thumb(&self, upload: &UploadState) -> (Option<ThumbRef>, Option<String>) {
        let Some((key, t)) = upload.poster() else {
            return (None, None);
        };
        match self.blobs.get(key).await {
            Ok(poster) => (
                thumbs::make_and_store(&*self.blobs, poster, key, t, None).await,
                Some(key.to_owned()),
            ),
            Err(e) => {
                tracing::warn!(key, error = %e, "reading a poster for its thumbnail failed");
                (None, None)
            }
        }
    }

    /// The thumbnail of a stored file for its thumb link: the recorded one, else one made now,
    /// stored and recorded (an item from before thumbnails, or whose thumbnail could not be
    /// stored). `None` for a video without a poster.
    pub async fn thumbnail(&self, id: Uuid, file: StoredFile) -> anyhow::Result<Option<ThumbBody>> {
        let Some((source_key, source_type)) =
            thumbs::source_of(file.mime_type, &file.layout.key, file.poster.as_ref())
        else {
            return Ok(None);
        };
        if let Some(thumb) = &file.thumb {
            if thumb.key == file.layout.key {
                // An image that stands as its own thumbnail streams as its file does.
                return Ok(Some(ThumbBody::File(file.layout, thumb.mime_type)));
            }
            match self.blobs.get(&thumb.key).await {
                Ok(bytes) => return Ok(Some(ThumbBody::Bytes(bytes, thumb.mime_type))),
                // Lost from storage: made again below, at the same key.
                Err(BlobError::NotFound(key)) => {
                    tracing::warn!(%id, key, "a recorded thumbnail is missing; making it again");
                }
                Err(e) => return Err(blob_error(e)),
            }
        }
        let source = if source_key == file.layout.key {
            self.read_layout(&file.layout).await?
        } else {
            self.read_whole(&source_key).await?
        };
        let made = thumbs::make(source.clone(), &source_key, source_type, None).await;
        match thumbs::store(&*self.blobs, &made).await {
            Ok(()) if file.thumb.is_none() => {
                let poster = match file.mime_type.kind() {
                    MediaKind::Video => Some(source_key.as_str()),
                    MediaKind::Image => None,
                };
                // Another request making it at the same time records the same thumbnail.
                self.repo
                    .record_thumb(id, poster, &made.thumb_ref())
                    .await?;
            }
            Ok(()) => {}
            // Served all the same; the next request tries again.
            Err(e) => tracing::warn!(%id, error = %e, "storing a thumbnail failed"),
        }
        let mime_type = made.thumb_ref().mime_type;
        Ok(Some(match made {
            Made::Small { thumbnail, .. } => {
                ThumbBody::Bytes(Bytes::from(thumbnail.bytes), mime_type)
            }
            Made::Source(_) => ThumbBody::Bytes(source, mime_type),
        }))
    }

    /// A whole stored file, part after part.
    async fn read_layout(&self, layout: &Layout) -> anyhow::Result<Bytes> {
        let mut out = Vec::with_capacity(layout.bytes.max(0) as usize);
        for (key, range) in layout.pieces(0..layout.bytes as u64) {
            out.extend_from_slice(&self.read(&key, range).await?);
        }
        Ok(Bytes::from(out))
    }

    /// Deletes the stored chunks of uploads abandoned before their last chunk (their link
    /// expired over an hour ago); returns how many uploads were cleared.
    pub async fn sweep_abandoned_uploads(&self) -> anyhow::Result<usize> {
        let abandoned = self.repo.abandoned_uploads(100).await?;
        for (id, stored) in &abandoned {
            for n in 0..=*stored {
                // Chunk `stored` may have been written without being acknowledged.
                self.blobs
                    .delete(&format!("{}/{n}", upload_prefix(*id)))
                    .await
                    .map_err(blob_error)?;
            }
            self.repo.forget_progress(*id).await?;
        }
        Ok(abandoned.len())
    }

    /// Removes what writes cut off by a crash left half written in storage (a chunk being
    /// stored when the process died), once untouched for [`UNFINISHED_AFTER`]: how many.
    pub async fn sweep_unfinished_writes(&self) -> anyhow::Result<usize> {
        self.blobs
            .sweep_unfinished(UNFINISHED_AFTER)
            .await
            .map_err(blob_error)
    }

    /// Reads `range` of one stored part (a piece from [`Layout::pieces`]).
    pub async fn read(&self, key: &str, range: std::ops::Range<u64>) -> anyhow::Result<Bytes> {
        self.blobs.get_range(key, range).await.map_err(blob_error)
    }

    pub async fn read_whole(&self, key: &str) -> anyhow::Result<Bytes> {
        self.blobs.get(key).await.map_err(blob_error)
    }
}

/// How long a half-written blob is left alone before it counts as cut off: a write going on
/// touches its file at least every part, and a body has at most minutes to arrive.
pub const UNFINISHED_AFTER: std::time::Duration = std::time::Duration::from_secs(3600);

/// The bytes the type of a file is judged from ([`judge`]).
const HEAD_BYTES: usize = if SNIFF_BYTES > 64 { SNIFF_BYTES } else { 64 };

/// What the body of chunk `n` must be: exactly `expected` bytes and, while the upload's type is
/// not known (`detected`), a video judged from its first bytes.
struct Chunk {
    n: i32,
    expected: u64,
    detected: Option<MediaType>,
    declared: Option<MediaType>,
}

impl Chunk {
    /// Feeds `hash` and `writer` with the body piece by piece as it arrives, and stores it when
    /// it is the chunk it must be; otherwise (too long, too short, not a video, cut short) the
    /// writer is aborted, so nothing appears at its key, and `hash` must not be used. Returns
    /// the upload's type.
    async fn receive(
        &self,
        mut body: Body,
        mut writer: Box<dyn BlobWriter>,
        hash: &mut ResumableHash,
    ) -> Result<MediaType, PutError> {
        match self.feed(&mut body, &mut *writer, hash).await {
            Ok(t) => {
                writer.finish().await.map_err(blob_error)?;
                Ok(t)
            }
            Err(e) => {
                if let Err(a) = writer.abort().await {
                    tracing::warn!(error = %a, "discarding a refused chunk failed");
                }
                // A body too long is measured to the end (the transport stops it at the
                // operation's limit: 413), so the answer says how long it was.
                match e {
                    Fed::Longer(seen) => {
                        let mut len = seen;
                        while let Some(piece) = body.next().await {
                            len += piece?.len() as u64;
                        }
                        Err(self.wrong_size(len))
                    }
                    Fed::Refused(e) => Err(e),
                }
            }
        }
    }

    async fn feed(
        &self,
        body: &mut Body,
        writer: &mut dyn BlobWriter,
        hash: &mut ResumableHash,
    ) -> Result<MediaType, Fed> {
        let mut received = 0u64;
        let mut head = Vec::new();
        let mut detected = self.detected;
        while let Some(piece) = body.next().await {
            let piece = piece.map_err(PutError::Stream)?;
            received += piece.len() as u64;
            if received > self.expected {
                return Err(Fed::Longer(received));
            }
            if detected.is_none() {
                let take = piece.len().min(HEAD_BYTES - head.len());
                head.extend_from_slice(&piece[..take]);
                if head.len() == HEAD_BYTES {
                    detected = Some(self.judge_video(&head)?);
                }
            }
            hash.update(&piece);
            writer
                .write(piece)
                .await
                .map_err(|e| PutError::Unexpected(blob_error(e)))?;
        }
        if received != self.expected {
            return Err(self.wrong_size(received).into());
        }
        Ok(match detected {
            Some(t) => t,
            None => self.judge_video(&head)?,
        })
    }

    fn wrong_size(&self, len: u64) -> PutError {
        PutError::Body(format!(
            "chunk {} is {len} bytes; it must be exactly {}",
            self.n, self.expected
        ))
    }

    fn judge_video(&self, head: &[u8]) -> Result<MediaType, PutError> {
        let t = judge(head, self.declared)?;
        if t.kind() != MediaKind::Video {
            return Err(PutError::Body(format!(
                "is {} but only videos are sent in chunks",
                t.mime()
            )));
        }
        Ok(t)
    }
}

/// Why feeding a chunk stopped.
enum Fed {
    /// More than the chunk's bytes came (this many so far).
    Longer(u64),
    Refused(PutError),
}

impl From<PutError> for Fed {
    fn from(e: PutError) -> Fed {
        Fed::Refused(e)
    }
}

/// The file's type from its header (the specification judges it there): a declared type of
/// the same kind gives way to it; only another kind (a video declared, an image sent) is refused.
fn judge(body: &[u8], declared: Option<MediaType>) -> Result<MediaType, PutError> {
    let t = MediaType::sniff(&body[..body.len().min(SNIFF_BYTES.max(64))])
        .ok_or_else(|| PutError::Body("is not a JPEG, PNG, WebP, MP4, MOV or WebM file".into()))?;
    match declared {
        Some(d) if d.kind() != t.kind() => Err(PutError::Body(format!(
            "is {} ({}) but the upload declared {} ({})",
            t.mime(),
            t.kind().as_str(),
            d.mime(),
            d.kind().as_str()
        ))),
        _ => Ok(t),
    }
}

fn probe_error(e: ProbeError) -> PutError {
    match e {
        ProbeError::Io(e) => {
            PutError::Unexpected(anyhow::Error::new(e).context("reading the stored video"))
        }
        e => PutError::Body(format!("is not a readable video container ({e})")),
    }
}

/// A `Read + Seek` view of a stored file that fetches what is read, 256 KiB at a time.
struct PartsReader {
    blobs: Arc<dyn BlobStore>,
    layout: Layout,
    pos: u64,
    buf: Bytes,
    buf_at: u64,
    handle: tokio::runtime::Handle,
}

const READ_AHEAD: u64 = 256 * 1024;

impl Read for PartsReader {
    fn read(&mut self, out: &mut [u8]) -> std::io::Result<usize> {
        let size = self.layout.bytes as u64;
        if self.pos >= size || out.is_empty() {
            return Ok(0);
        }
        let in_buf = self.pos >= self.buf_at && self.pos < self.buf_at + self.buf.len() as u64;
        if !in_buf {
            // One piece at most: reads never cross a part boundary.
            let end = (self.pos + READ_AHEAD).min(size);
            let (key, range) = self
                .layout
                .pieces(self.pos..end)
                .into_iter()
                .next()
                .expect("a non-empty range has a piece");
            let blobs = self.blobs.clone();
            let bytes = self
                .handle
                .block_on(async move { blobs.get_range(&key, range).await })
                .map_err(std::io::Error::other)?;
            self.buf = bytes;
            self.buf_at = self.pos;
        }
        let offset = (self.pos - self.buf_at) as usize;
        let n = out.len().min(self.buf.len() - offset);
        out[..n].copy_from_slice(&self.buf[offset..offset + n]);
        self.pos += n as u64;
        Ok(n)
    }
}

impl Seek for PartsReader {
    fn seek(&mut self, to: SeekFrom) -> std::io::Result<u64> {
        let size = self.layout.bytes as i128;
        let next = match to {
            SeekFrom::Start(p) => p as i128,
            SeekFrom::End(d) => size + d as i128,
            SeekFrom::Current(d) => self.pos as i128 + d as i128,
        };
        if next < 0 {
            return Err(std::io::Error::new(
                std::io::ErrorKind::InvalidInput,
                "seek before the start",
            ));
        }
        self.pos = next as u64;
        Ok(self.pos)
    }
}

impl MediaService {}

/// The use cases that are one transaction of the port as they stand: it loads the facts the
/// rules of this crate decide on and writes their plan.
impl MediaService {
    pub async fn list(
        &self,
        agent: AgentRef,
        query: &MediaQuery,
    ) -> anyhow::Result<Result<Vec<MediaItem>, ListRefusal>> {
        self.repo.list(agent, query).await
    }

    pub async fn file(&self, id: Uuid) -> anyhow::Result<Option<StoredFile>> {
        self.repo.file(id).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const PNG: &[u8] = b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR\0\0\0\x02\0\0\0\x02\x08\x02\0\0\0";
    const MOV: &[u8] = b"\0\0\0\x14ftypqt  \0\0\x02\0qt  \0\0\0\x08free";

    #[test]
    fn the_file_header_decides_the_type_within_a_kind() {
        assert_eq!(judge(PNG, None).unwrap(), MediaType::Png);
        assert_eq!(judge(PNG, Some(MediaType::Png)).unwrap(), MediaType::Png);
        assert_eq!(judge(PNG, Some(MediaType::Jpeg)).unwrap(), MediaType::Png);
        assert_eq!(judge(PNG, Some(MediaType::Webp)).unwrap(), MediaType::Png);
        assert_eq!(judge(MOV, Some(MediaType::Mp4)).unwrap(), MediaType::Mov);
        assert_eq!(judge(MOV, Some(MediaType::Webm)).unwrap(), MediaType::Mov);
    }

    #[test]
    fn another_kind_than_declared_is_refused() {
        for (body, declared) in [(PNG, MediaType::Mp4), (MOV, MediaType::Jpeg)] {
            match judge(body, Some(declared)) {
                Err(PutError::Body(m)) => assert!(m.contains(declared.mime()), "{m}"),
                other => panic!("{declared:?}: {other:?}"),
            }
        }
        assert!(matches!(judge(b"GIF89a\0\0", None), Err(PutError::Body(_))));
    }
}
