//! What uploads and the library need from the outside: one method per atomic use case, run by
//! the adapter in one transaction. Errors are infrastructure failures (`anyhow::Error`);
//! expected refusals are values.

use crate::thumbs::ThumbRef;
use crate::upload::UploadMode;
use fleetdesk_accounts::ports::{CodeRef, LookupError};
use fleetdesk_kernel::media::{MediaKind, MediaType};
use fleetdesk_kernel::{AgentRef, BoxFuture};
use jiff::Timestamp;
use uuid::Uuid;

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

/// Why an upload's project or character is refused, as [`NewUpload::project_id`] finds it;
/// the adapter then reads why a project is missing ([`UploadRefusal::Project`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum UploadMiss {
    /// The project named is not one of the workspace's.
    Project(String),
    /// The character named is not in the persona's cast.
    Character(String),
}

impl NewUpload {
    /// The project the upload goes to: the one it names, as found in the workspace (`named`),
    /// else the persona's (`persona_project`). Refused when the project named was not found,
    /// then when the character named is not in the persona's cast (`in_cast`; naming none is).
    pub fn project_id(
        &self,
        persona_project: Uuid,
        named: Option<Uuid>,
        in_cast: bool,
    ) -> Result<Uuid, UploadMiss> {
        let project_id = match (&self.project, named) {
            (None, _) => persona_project,
            (Some(_), Some(id)) => id,
            (Some(name), None) => return Err(UploadMiss::Project(name.clone())),
        };
        if !in_cast {
            let character = self.character.clone().unwrap_or_default();
            return Err(UploadMiss::Character(character));
        }
        Ok(project_id)
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum UploadRefusal {
    Account(LookupError),
    /// The project is not one of the key's workspace: another workspace's (422) or none (404).
    Project(String, fleetdesk_kernel::project::ProjectMiss),
    /// The character is not in the persona's cast.
    Character(String),
}

/// Why the library cannot be listed as asked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ListRefusal {
    /// The project filter names no project of the workspace (404 naming `project`).
    UnknownProject(String),
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
    /// The poster's key and type, as a poster PUT stored them ([`UploadState::poster`]).
    pub poster_key: Option<String>,
    pub poster_mime: Option<MediaType>,
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
    /// The stored thumbnail, when it could be stored (an item without one gets it on its first
    /// thumb request).
    pub thumb: Option<ThumbRef>,
    /// For a video, the poster `thumb` was made from: the item records `thumb` only if it takes
    /// that poster.
    pub thumb_poster: Option<String>,
}

/// What a completed upload's item records beside its file: a video's poster as the upload
/// holds it when it completes (one sent while the file was on its way counts; an image has
/// none), and the thumbnail when it goes with that poster (an image's always).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ItemFiles<'a> {
    /// The poster's key and type.
    pub poster: Option<(&'a str, &'a str)>,
    pub thumb: Option<&'a ThumbRef>,
}

impl NewMedia {
    /// The files the item records, given the poster the upload holds now.
    pub fn files<'a>(&'a self, poster: Option<(&'a str, &'a str)>) -> ItemFiles<'a> {
        let poster = match self.media_type.kind() {
            MediaKind::Video => poster,
            MediaKind::Image => None,
        };
        let thumb = self.thumb.as_ref().filter(|_| {
            self.media_type.kind() == MediaKind::Image
                || self.thumb_poster.as_deref() == poster.map(|(key, _)| key)
        });
        ItemFiles { poster, thumb }
    }
}

impl UploadState {
    /// The poster the upload holds, its key and type: there when both are stored.
    pub fn poster(&self) -> Option<(&str, MediaType)> {
        self.poster_key.as_deref().zip(self.poster_mime)
    }

    /// The chunks received once the upload completes: a chunked upload's completing PUT is
    /// its last chunk; a single upload's file is not counted in chunks.
    pub fn completed_chunks(&self) -> i32 {
        match self.mode {
            UploadMode::Single => self.next_chunk,
            UploadMode::Chunked => self.next_chunk + 1,
        }
    }
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
    /// The recorded thumbnail; `None` until one is made.
    pub thumb: Option<ThumbRef>,
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
    /// the upload, in one transaction, with its thumbnail. A video's item takes the poster the
    /// upload holds at that moment, and the thumbnail only if it was made from that poster; an
    /// identical item already there keeps its thumbnail and gains one if it had none (for a
    /// video, only when it takes this poster). `None` when another request completed it first.
    fn complete<'a>(
        &'a self,
        upload: &'a UploadState,
        media: &'a NewMedia,
    ) -> BoxFuture<'a, anyhow::Result<Option<Completed>>>;

    /// Keeps the poster on the upload and, once there is one, on its video item with `thumb`
    /// (made from this poster; `None` leaves the item without a thumbnail until its first thumb
    /// request).
    fn set_poster<'a>(
        &'a self,
        upload_id: Uuid,
        key: &'a str,
        media_type: MediaType,
        thumb: Option<&'a ThumbRef>,
    ) -> BoxFuture<'a, anyhow::Result<()>>;

    /// Records the thumbnail made on a first thumb request, only if the item still has none and
    /// still has the poster it was made from (`None` for an image); false otherwise (another
    /// request recorded one first, or the poster changed).
    fn record_thumb<'a>(
        &'a self,
        media_id: Uuid,
        poster: Option<&'a str>,
        thumb: &'a ThumbRef,
    ) -> BoxFuture<'a, anyhow::Result<bool>>;

    fn list<'a>(
        &'a self,
        agent: AgentRef,
        query: &'a MediaQuery,
    ) -> BoxFuture<'a, anyhow::Result<Result<Vec<MediaItem>, ListRefusal>>>;

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

    fn media(media_type: MediaType, thumb_poster: Option<&str>) -> NewMedia {
        NewMedia {
            media_type,
            sha256: "ab".into(),
            layout: Layout::single("k".into(), 3),
            width: None,
            height: None,
            duration_ms: None,
            thumb: Some(ThumbRef {
                key: "thumbs/x".into(),
                mime_type: MediaType::Webp,
            }),
            thumb_poster: thumb_poster.map(Into::into),
        }
    }

    #[test]
    fn a_video_records_the_poster_it_holds_and_a_thumbnail_only_made_from_it() {
        let poster = Some(("posters/p1", "image/jpeg"));
        let video = media(MediaType::Mp4, Some("posters/p1"));
        let files = video.files(poster);
        assert_eq!(files.poster, poster);
        assert_eq!(files.thumb, video.thumb.as_ref());

        let stale = media(MediaType::Mp4, Some("posters/p0"));
        let files = stale.files(poster);
        assert_eq!(files.poster, poster);
        assert_eq!(files.thumb, None, "made from a poster replaced meanwhile");
        assert!(
            media(MediaType::Mp4, None).files(None).thumb.is_some(),
            "a thumbnail made with no poster goes with an item that holds none"
        );

        let image = media(MediaType::Png, None);
        let files = image.files(poster);
        assert_eq!(files.poster, None, "an image has no poster");
        assert_eq!(files.thumb, image.thumb.as_ref());
    }

    fn upload(project: Option<&str>, character: Option<&str>) -> NewUpload {
        NewUpload {
            code: CodeRef {
                code: fleetdesk_kernel::code::AccountCode::parse("TW-T001").unwrap(),
                platform: None,
            },
            caption: None,
            character: character.map(Into::into),
            tags: Vec::new(),
            project: project.map(Into::into),
            mode: UploadMode::Single,
            mime_type: None,
            bytes: None,
            chunks: None,
            token_hash: Vec::new(),
            expires_at: Timestamp::UNIX_EPOCH,
        }
    }

    #[test]
    fn an_upload_goes_to_the_project_it_names_else_the_personas_and_its_character_is_cast() {
        let (persona, named) = (Uuid::from_u128(1), Uuid::from_u128(2));
        assert_eq!(
            upload(None, None).project_id(persona, None, true),
            Ok(persona)
        );
        let other = upload(Some("Other"), Some("lulu"));
        assert_eq!(other.project_id(persona, Some(named), true), Ok(named));
        // The project is checked first, then the character.
        assert_eq!(
            other.project_id(persona, None, false),
            Err(UploadMiss::Project("Other".into()))
        );
        assert_eq!(
            other.project_id(persona, Some(named), false),
            Err(UploadMiss::Character("lulu".into()))
        );
    }

    #[test]
    fn an_uploads_poster_is_there_when_its_key_and_type_are() {
        let mut state = UploadState {
            id: Uuid::nil(),
            workspace_id: Uuid::nil(),
            project_id: None,
            persona_id: Uuid::nil(),
            agent_id: Uuid::nil(),
            character: None,
            caption: None,
            tags: Vec::new(),
            mode: UploadMode::Chunked,
            mime_type: None,
            declared_bytes: None,
            chunks: None,
            token_hash: Vec::new(),
            expires_at: Timestamp::UNIX_EPOCH,
            next_chunk: 0,
            received_bytes: 0,
            hash_state: None,
            detected_mime: None,
            poster_key: Some("posters/p1".into()),
            poster_mime: None,
            media_id: None,
        };
        assert_eq!(state.poster(), None);
        state.poster_mime = Some(MediaType::Jpeg);
        assert_eq!(state.poster(), Some(("posters/p1", MediaType::Jpeg)));
        state.poster_key = None;
        assert_eq!(state.poster(), None);
    }

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
