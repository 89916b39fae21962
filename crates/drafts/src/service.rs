//! The draft use cases. Handlers call these; the rules are in [`crate::draft`] and the I/O
//! behind the ports.

use crate::draft::{InlineImageError, check_character_shape, decode_inline_images};
use crate::ports::*;
use fleetdesk_kernel::blob::{BlobError, BlobStore};
use fleetdesk_kernel::{AgentRef, Position};
use fleetdesk_media::service::media_key;
use fleetdesk_media::thumbs;
use fleetdesk_posts::post::PostStatus;
use std::sync::Arc;
use uuid::Uuid;

#[derive(Clone)]
pub struct DraftsService {
    repo: Arc<dyn DraftsRepo>,
    blobs: Arc<dyn BlobStore>,
}

/// A submit as the agent sent it, inline images still in base64.
#[derive(Debug, Clone)]
pub struct SubmitRequest {
    pub draft: NewDraft,
    /// `(base64 data, caption)`.
    pub images: Vec<(String, Option<String>)>,
}

#[derive(Debug, thiserror::Error)]
pub enum DraftError {
    #[error("images: {1}")]
    Inline(Option<usize>, InlineImageError),
    #[error("refused: {0:?}")]
    Refused(DraftRefusal),
    #[error(transparent)]
    Unexpected(#[from] anyhow::Error),
}

impl From<DraftRefusal> for DraftError {
    fn from(r: DraftRefusal) -> Self {
        DraftError::Refused(r)
    }
}

fn blob_error(e: BlobError) -> anyhow::Error {
    anyhow::anyhow!(e)
}

impl DraftsService {
    pub fn new(repo: Arc<dyn DraftsRepo>, blobs: Arc<dyn BlobStore>) -> Self {
        DraftsService { repo, blobs }
    }

    /// Checks what needs no database (characters' shape, inline images), stores inline images
    /// by content, then submits in one transaction.
    pub async fn submit(
        &self,
        agent: AgentRef,
        mut req: SubmitRequest,
    ) -> Result<DraftView, DraftError> {
        if let Some(picks) = &req.draft.content.characters {
            check_character_shape(picks)
                .map_err(|(i, e)| DraftRefusal::Character(i, e))
                .map_err(DraftError::Refused)?;
        }
        let images =
            decode_inline_images(&req.images).map_err(|(i, e)| DraftError::Inline(i, e))?;
        req.draft.content.images = self.store_images(images).await?;
        Ok(self.repo.submit(agent, &req.draft).await??)
    }

    /// Writes each image and its thumbnail: an image enters the library with its thumbnail.
    async fn store_images(
        &self,
        images: Vec<crate::draft::InlineImage>,
    ) -> anyhow::Result<Vec<StoredImage>> {
        let mut stored = Vec::with_capacity(images.len());
        for image in images {
            let key = media_key(&image.sha256, image.media_type);
            let bytes = image.bytes.len() as i64;
            self.blobs
                .put(&key, image.bytes.clone())
                .await
                .map_err(blob_error)?;
            let thumb = thumbs::make_and_store(
                &*self.blobs,
                image.bytes,
                &key,
                image.media_type,
                Some(image.sha256.clone()),
            )
            .await;
            stored.push(StoredImage {
                thumb,
                media_type: image.media_type,
                sha256: image.sha256,
                bytes,
                width: image.width,
                height: image.height,
                caption: image.caption,
                storage_key: key,
            });
        }
        Ok(stored)
    }

    pub async fn update(&self, agent: AgentRef, edit: DraftEdit) -> Result<DraftView, DraftError> {
        if let Some(picks) = &edit.content.characters {
            check_character_shape(picks)
                .map_err(|(i, e)| DraftRefusal::Character(i, e))
                .map_err(DraftError::Refused)?;
        }
        Ok(self.repo.update(agent, &edit).await??)
    }

    pub async fn attach(
        &self,
        agent: AgentRef,
        post_id: Uuid,
        items: Attach,
        note: Option<String>,
    ) -> Result<DraftView, DraftError> {
        Ok(self
            .repo
            .attach(agent, post_id, &items, note.as_deref())
            .await??)
    }

    pub async fn add_note(
        &self,
        agent: AgentRef,
        post_id: Uuid,
        note: &str,
    ) -> Result<(), DraftError> {
        Ok(self.repo.add_note(agent, post_id, note).await??)
    }
}

impl DraftsService {}

/// The use cases that are one transaction of the port as they stand: it loads the facts the
/// rules of this crate decide on and writes their plan.
impl DraftsService {
    pub async fn redo(
        &self,
        agent: AgentRef,
        statuses: &[PostStatus],
        after: Option<Position>,
        limit: i64,
    ) -> anyhow::Result<RedoPage> {
        self.repo.redo(agent, statuses, after, limit).await
    }
}
