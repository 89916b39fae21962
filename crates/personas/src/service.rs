//! The persona use cases that need more than the port: the account lookup of `{code}`, the
//! blob store and thumbnails.

use crate::ports::{
    AddedImage, CastRow, CreatedPersona, ImageRow, NewImage, NewPersona, OrgPersonaQuery,
    PersonaHead, PersonaSummary, PersonasRepo, Proposed, RecentPost,
};
use crate::rules::{self, Fact, ImageCategory, PersonaRefusal, Proposal};
use fleetdesk_accounts::AvatarError;
use fleetdesk_accounts::models::avatar::AvatarImage;
use fleetdesk_accounts::ports::{AccountView, AccountsRepo, CodeRef, LookupError, ResolvedAccount};
use fleetdesk_kernel::AgentRef;
use fleetdesk_kernel::blob::BlobStore;
use std::sync::Arc;
use uuid::Uuid;

#[derive(Clone)]
pub struct PersonasService {
    repo: Arc<dyn PersonasRepo>,
    accounts: Arc<dyn AccountsRepo>,
    blobs: Arc<dyn BlobStore>,
}

/// Why a persona use case did not happen.
#[derive(Debug, thiserror::Error)]
pub enum PersonaError {
    #[error("account lookup: {0:?}")]
    Lookup(LookupError),
    #[error("{}: {}", .0.field(), .0)]
    Refused(PersonaRefusal),
    #[error("data: {0}")]
    Image(AvatarError),
    #[error("data: the image cannot be read: {0}")]
    Unreadable(String),
    #[error(transparent)]
    Unexpected(#[from] anyhow::Error),
}

impl From<PersonaRefusal> for PersonaError {
    fn from(r: PersonaRefusal) -> Self {
        PersonaError::Refused(r)
    }
}

/// A persona as an agent reads it: the account asked for, the persona and everything around it.
#[derive(Debug, Clone)]
pub struct PersonaRecord {
    pub account: ResolvedAccount,
    pub persona: PersonaHead,
    pub accounts: Vec<AccountView>,
    /// Visible facts in order ([`rules::visible_facts`]).
    pub facts: Vec<Fact>,
    /// The persona's list and the decided speech facts.
    pub speech_rules: Vec<String>,
    pub images: Vec<ImageRow>,
    pub recent_posts: Vec<RecentPost>,
    pub cast: Vec<(CastRow, Vec<ImageRow>)>,
}

/// A persona as its organization's people read it (`view_persona`).
#[derive(Debug, Clone)]
pub struct PersonaView {
    pub summary: PersonaSummary,
    pub persona: PersonaHead,
    /// Decided facts, then drafts waiting for a person ([`rules::visible_facts`]).
    pub facts: Vec<Fact>,
    /// The persona's list and the decided speech facts.
    pub speech_rules: Vec<String>,
    /// Every image, whatever its lock, oldest first.
    pub images: Vec<ImageRow>,
    /// Each character with its approved images.
    pub cast: Vec<(CastRow, Vec<ImageRow>)>,
}

/// The cast of a persona with each character's images.
#[derive(Debug, Clone)]
pub struct CastRecord {
    pub account: ResolvedAccount,
    pub persona: PersonaHead,
    pub cast: Vec<(CastRow, Vec<ImageRow>)>,
}

/// What an agent uploads as a persona image.
#[derive(Debug, Clone)]
pub struct ImageUpload {
    pub data: String,
    pub category: ImageCategory,
    pub caption: Option<String>,
    pub prompt: Option<String>,
    pub character: Option<String>,
}

fn with_images(cast: Vec<CastRow>, images: &[ImageRow]) -> Vec<(CastRow, Vec<ImageRow>)> {
    let mut by = rules::cast_images(images);
    cast.into_iter()
        .map(|c| {
            let imgs = by.remove(&c.code).unwrap_or_default();
            (c, imgs)
        })
        .collect()
}

impl PersonasService {
    pub fn new(
        repo: Arc<dyn PersonasRepo>,
        accounts: Arc<dyn AccountsRepo>,
        blobs: Arc<dyn BlobStore>,
    ) -> Self {
        PersonasService {
            repo,
            accounts,
            blobs,
        }
    }

    /// `{code}` to the agent's account and its live persona (a retired persona is not found).
    pub async fn resolve(
        &self,
        agent: AgentRef,
        code: &CodeRef,
    ) -> Result<(ResolvedAccount, PersonaHead), PersonaError> {
        let account = self
            .accounts
            .resolve(agent, code)
            .await?
            .map_err(PersonaError::Lookup)?;
        let persona = self
            .repo
            .persona_of_slot(agent, account.slot_id)
            .await?
            .ok_or(PersonaError::Lookup(LookupError::NotFound))?;
        Ok((account, persona))
    }

    /// `get_persona`: the independent reads run at once, one statement each.
    pub async fn get(
        &self,
        agent: AgentRef,
        code: &CodeRef,
        posts: i64,
        include_drafts: bool,
    ) -> Result<PersonaRecord, PersonaError> {
        let (account, persona) = self.resolve(agent, code).await?;
        let id = persona.id;
        let (accounts, facts, images, cast, recent_posts) = tokio::try_join!(
            self.accounts.list_accounts(agent),
            self.repo.facts(id),
            self.repo.shown_images(id, None),
            self.repo.cast(id),
            async {
                if posts > 0 {
                    self.repo.recent_posts(id, posts).await
                } else {
                    Ok(Vec::new())
                }
            },
        )?;
        let accounts = accounts
            .into_iter()
            .filter(|a| persona.slot_ids.contains(&a.slot_id))
            .collect();
        let speech_rules = rules::speech_rules(&persona.speech_rules, &facts);
        let facts = rules::visible_facts(facts, include_drafts);
        let cast = with_images(cast, &images);
        Ok(PersonaRecord {
            account,
            persona,
            accounts,
            facts,
            speech_rules,
            images,
            recent_posts,
            cast,
        })
    }

    /// `view_persona`: one persona of the organization (`None`: any, for a platform admin)
    /// with its facts (drafts included), speech rules, every image and the cast; its reads run
    /// at once, one statement each.
    pub async fn view(
        &self,
        organization: Option<uuid::Uuid>,
        id: uuid::Uuid,
    ) -> anyhow::Result<Option<PersonaView>> {
        let Some((summary, persona)) = self.repo.org_persona(organization, id).await? else {
            return Ok(None);
        };
        let (facts, images, cast) = tokio::try_join!(
            self.repo.facts(id),
            self.repo.all_images(id),
            self.repo.cast(id),
        )?;
        let speech_rules = rules::speech_rules(&persona.speech_rules, &facts);
        Ok(Some(PersonaView {
            summary,
            persona,
            facts: rules::visible_facts(facts, true),
            speech_rules,
            // Only approved images join a character ([`rules::cast_images`]).
            cast: with_images(cast, &images),
            images,
        }))
    }

    /// `list_persona_images`: approved images, optionally of one category.
    pub async fn images(
        &self,
        agent: AgentRef,
        code: &CodeRef,
        category: Option<ImageCategory>,
    ) -> Result<(ResolvedAccount, Vec<ImageRow>), PersonaError> {
        let (account, persona) = self.resolve(agent, code).await?;
        let images = self.repo.shown_images(persona.id, category).await?;
        Ok((account, images))
    }

    /// `list_cast`: each character with at most six approved images marked with it.
    pub async fn cast(&self, agent: AgentRef, code: &CodeRef) -> Result<CastRecord, PersonaError> {
        let (account, persona) = self.resolve(agent, code).await?;
        let (cast, images) = tokio::try_join!(
            self.repo.cast(persona.id),
            self.repo.shown_images(persona.id, None)
        )?;
        Ok(CastRecord {
            account,
            persona,
            cast: with_images(cast, &images),
        })
    }

    /// `propose_fact`.
    pub async fn propose(
        &self,
        agent: AgentRef,
        code: &CodeRef,
        proposal: &Proposal,
    ) -> Result<(ResolvedAccount, Proposed), PersonaError> {
        let (account, persona) = self.resolve(agent, code).await?;
        let proposed = self.repo.propose(agent, persona.id, proposal).await??;
        Ok((account, proposed))
    }

    /// `upload_persona_image`, in this order: the image is checked (5 MB, JPEG, PNG or WebP
    /// judged from the bytes), the code resolved, the character checked against the cast
    /// ([`rules::check_character`]), and bytes the persona already has answer the stored image;
    /// only a new image is thumbnailed and its file and thumbnail stored, then recorded in one
    /// transaction (which checks the character and the bytes again under the persona lock).
    /// A refused upload or a resend stores nothing.
    pub async fn upload(
        &self,
        agent: AgentRef,
        code: &CodeRef,
        upload: ImageUpload,
    ) -> Result<(ResolvedAccount, AddedImage), PersonaError> {
        let image = AvatarImage::decode(&upload.data).map_err(PersonaError::Image)?;
        let (account, persona) = self.resolve(agent, code).await?;
        if upload.character.is_some() {
            let cast: Vec<String> = self
                .repo
                .cast(persona.id)
                .await?
                .into_iter()
                .map(|c| c.code)
                .collect();
            rules::check_character(upload.character.as_deref(), &cast)?;
        }
        if let Some(existing) = self.repo.image_of_sha(persona.id, &image.sha256).await? {
            return Ok((account, existing));
        }
        let bytes = bytes::Bytes::from(image.bytes);
        let for_thumb = bytes.clone();
        let thumb =
            tokio::task::spawn_blocking(move || fleetdesk_media::thumbnail::make(&for_thumb))
                .await
                .map_err(|e| anyhow::anyhow!("thumbnail task: {e}"))?
                .map_err(|e| PersonaError::Unreadable(e.to_string()))?;
        // The header's size; an image whose header says none was still decoded above.
        let (width, height) = (image.width.unwrap_or(0), image.height.unwrap_or(0));
        let base = format!("persona-images/{}/{}", persona.id, image.sha256);
        let storage_key = format!("{base}.{}", image.kind.extension());
        let thumb_ext = if thumb.mime_type == "image/png" {
            "png"
        } else {
            "jpg"
        };
        let thumb_key = format!("{base}-thumb.{thumb_ext}");
        let put = |key: String, b: bytes::Bytes| async move {
            self.blobs
                .put(&key, b)
                .await
                .map_err(|e| anyhow::anyhow!(e))
        };
        tokio::try_join!(
            put(storage_key.clone(), bytes.clone()),
            put(thumb_key.clone(), bytes::Bytes::from(thumb.bytes))
        )?;
        let new = NewImage {
            sha256: image.sha256,
            mime_type: image.kind.mime_type().to_owned(),
            bytes: bytes.len() as i64,
            width: i32::try_from(width).unwrap_or(i32::MAX),
            height: i32::try_from(height).unwrap_or(i32::MAX),
            storage_key,
            thumb_key,
            thumb_mime: thumb.mime_type.to_owned(),
            category: upload.category,
            caption: upload.caption,
            prompt: upload.prompt,
            character: upload.character,
        };
        let added = self.repo.add_image(agent, persona.id, &new).await??;
        Ok((account, added))
    }

    /// The stored bytes and type of a persona image's file (or its thumbnail) while a link may
    /// serve it ([`rules::image_served`]); none for a refused image or no such image.
    pub async fn served_image(
        &self,
        id: uuid::Uuid,
        thumb: bool,
    ) -> anyhow::Result<Option<(bytes::Bytes, String)>> {
        let Some(file) = self.repo.image_file(id).await? else {
            return Ok(None);
        };
        if !rules::image_served(file.lock) {
            return Ok(None);
        }
        let (key, mime) = if thumb {
            (file.thumb_key, file.thumb_mime)
        } else {
            (file.storage_key, file.mime_type)
        };
        let bytes = self.blobs.get(&key).await.map_err(|e| anyhow::anyhow!(e))?;
        Ok(Some((bytes, mime)))
    }
}

/// The use cases that are one transaction of the port as they stand: it loads the facts the
/// rules of this crate decide on and writes their plan.
impl PersonasService {
    /// Creates a pending persona assigned to the agent with its `persona_new` decision, or
    /// finds the agent's live persona of that name in that project; its fields are checked
    /// first ([`rules::PersonaFields::checked`]).
    pub async fn create_persona(
        &self,
        agent: AgentRef,
        persona: &NewPersona,
    ) -> anyhow::Result<Result<CreatedPersona, PersonaRefusal>> {
        let checked = match persona.fields.checked() {
            Ok(fields) => NewPersona {
                fields,
                project: persona.project.clone(),
            },
            Err(refusal) => return Ok(Err(refusal)),
        };
        self.repo.create_persona(agent, &checked).await
    }
    /// The personas of an organization (`None`: every organization, for a platform admin),
    /// newest first.
    pub async fn org_personas(
        &self,
        organization: Option<Uuid>,
        query: &OrgPersonaQuery,
    ) -> anyhow::Result<fleetdesk_kernel::Page<PersonaSummary>> {
        self.repo.org_personas(organization, query).await
    }
}
