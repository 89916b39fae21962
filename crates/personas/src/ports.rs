//! What the persona use cases need from storage. Each method that writes is one transaction;
//! expected refusals are values ([`PersonaRefusal`]), failures `anyhow::Error`.

use crate::rules::{
    Fact, ImageCategory, ImageLock, PersonaFields, PersonaRefusal, Proposal, ProposalKind,
};
use fleetdesk_kernel::persona::PersonaStatus;
use fleetdesk_kernel::time::utc;
use fleetdesk_kernel::{AgentRef, BoxFuture, Platform};
use jiff::Timestamp;
use serde::Serialize;
use uuid::Uuid;

/// A live (not retired) persona, as the account an agent named leads to it.
#[derive(Debug, Clone, PartialEq)]
pub struct PersonaHead {
    pub id: Uuid,
    pub name: String,
    /// The project's name.
    pub project: String,
    pub track: Option<String>,
    pub background: Option<String>,
    pub bio: Option<String>,
    pub voice: Option<String>,
    pub status: PersonaStatus,
    pub speech_rules: Vec<String>,
    pub forbidden: Vec<String>,
    /// Every account slot of the persona.
    pub slot_ids: Vec<Uuid>,
}

/// A stored persona image (the prompt stays in storage: no endpoint returns it).
#[derive(Debug, Clone, PartialEq)]
pub struct ImageRow {
    pub id: Uuid,
    pub category: ImageCategory,
    pub caption: Option<String>,
    pub mime_type: String,
    pub lock: ImageLock,
    pub character: Option<String>,
    pub created_at: Timestamp,
}

impl crate::rules::CastImage for ImageRow {
    fn character(&self) -> Option<&str> {
        self.character.as_deref()
    }
    fn lock(&self) -> ImageLock {
        self.lock
    }
}

/// Where a persona image's file and thumbnail are stored.
#[derive(Debug, Clone, PartialEq)]
pub struct ImageFile {
    pub storage_key: String,
    pub mime_type: String,
    pub thumb_key: String,
    pub thumb_mime: String,
    pub lock: ImageLock,
}

/// A character the persona's accounts may feature.
#[derive(Debug, Clone, PartialEq)]
pub struct CastRow {
    pub code: String,
    pub name: String,
    pub summary: Option<String>,
    /// The canon `character` wiki entry of the same title (as titles match) in the persona's
    /// scope (its project's before a shared one): id and title.
    pub wiki: Option<(Uuid, String)>,
}

/// A published post of one of the persona's accounts.
#[derive(Debug, Clone, PartialEq, Serialize, serde::Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema), schema(as = RecentPostOut))]
pub struct RecentPost {
    pub id: Uuid,
    pub code: String,
    pub platform: Platform,
    pub body: String,
    #[serde(with = "utc::option")]
    #[cfg_attr(feature = "openapi", schema(value_type = Option<String>))]
    pub published_at: Option<Timestamp>,
    pub permalink: Option<String>,
}

/// A workspace as a person's list names it.
#[derive(Debug, Clone, PartialEq, Serialize, serde::Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema), schema(as = PersonaWorkspaceOut))]
pub struct WorkspaceName {
    pub id: Uuid,
    pub name: String,
}

/// One account of a persona as its people see it.
#[derive(Debug, Clone, PartialEq, Serialize, serde::Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema), schema(as = PersonaAccountOut))]
pub struct PersonaAccount {
    pub code: String,
    pub platform: Platform,
    /// The current generation's state (warming, active, banned, …).
    pub state: String,
}

/// A persona in the list of an organization's people (`GET /api/user/v1/personas`).
#[derive(Debug, Clone, PartialEq, Serialize, serde::Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema), schema(as = PersonaSummaryOut))]
pub struct PersonaSummary {
    pub id: Uuid,
    pub name: String,
    pub status: PersonaStatus,
    /// True only when both bio and voice are present.
    pub setup_complete: bool,
    pub workspace: WorkspaceName,
    /// The project's name.
    pub project: String,
    /// The agent the persona is assigned to.
    pub agent: Option<String>,
    /// Its accounts, by code.
    pub accounts: Vec<PersonaAccount>,
    #[serde(with = "utc")]
    #[cfg_attr(feature = "openapi", schema(value_type = String))]
    pub created_at: Timestamp,
}

impl PersonaSummary {
    /// A persona as its people list it: its head (setup-complete by its bio and voice,
    /// [`crate::rules::setup_complete`]), workspace, agent, accounts and creation time.
    pub fn of(
        head: &PersonaHead,
        workspace: WorkspaceName,
        agent: Option<String>,
        accounts: Vec<PersonaAccount>,
        created_at: Timestamp,
    ) -> PersonaSummary {
        PersonaSummary {
            id: head.id,
            name: head.name.clone(),
            status: head.status,
            setup_complete: crate::rules::setup_complete(
                head.bio.as_deref(),
                head.voice.as_deref(),
            ),
            workspace,
            project: head.project.clone(),
            agent,
            accounts,
            created_at,
        }
    }
}

/// Which personas of an organization a person lists: newest first, in pages.
#[derive(Debug, Clone, PartialEq)]
pub struct OrgPersonaQuery {
    /// Only this workspace's.
    pub workspace: Option<Uuid>,
    /// Where the previous page ended.
    pub after: Option<fleetdesk_kernel::Position>,
    pub limit: i64,
}

#[derive(Debug, Clone, PartialEq)]
pub struct NewPersona {
    pub fields: PersonaFields,
    /// A project name of the agent's workspace; `None` means the workspace's only project.
    pub project: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema), schema(as = CreatedPersonaOut))]
pub struct CreatedPersona {
    pub id: Uuid,
    pub created: bool,
    /// The project's name.
    pub project: String,
    /// True only when both bio and voice are present.
    pub setup_complete: bool,
    /// The `persona_new` pending decision (null for a persona people made themselves).
    pub issue_id: Option<Uuid>,
}

/// An uploaded image, its file and thumbnail already stored.
#[derive(Debug, Clone, PartialEq)]
pub struct NewImage {
    pub sha256: String,
    pub mime_type: String,
    pub bytes: i64,
    pub width: i32,
    pub height: i32,
    pub storage_key: String,
    pub thumb_key: String,
    pub thumb_mime: String,
    pub category: ImageCategory,
    pub caption: Option<String>,
    pub prompt: Option<String>,
    pub character: Option<String>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct AddedImage {
    pub id: Uuid,
    pub created: bool,
    pub lock: ImageLock,
    pub character: Option<String>,
}

/// What a proposal left: the draft fact (kind fact) or the decision (kind contradiction).
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema), schema(as = ProposedOut))]
pub struct Proposed {
    /// The draft fact's id for a fact; the decision's id for a contradiction.
    pub id: Uuid,
    pub kind: ProposalKind,
    pub created: bool,
    pub issue_id: Option<Uuid>,
    /// The fact's status (draft, or decided once a person decided it), or the decision's
    /// (open).
    pub status: String,
}

pub trait PersonasRepo: Send + Sync + 'static {
    /// The live persona of an account slot of the agent's workspace (a retired one is none).
    fn persona_of_slot(
        &self,
        agent: AgentRef,
        slot_id: Uuid,
    ) -> BoxFuture<'_, anyhow::Result<Option<PersonaHead>>>;

    /// Every fact of a persona, whatever its status (the rules choose what shows).
    fn facts(&self, persona_id: Uuid) -> BoxFuture<'_, anyhow::Result<Vec<Fact>>>;

    /// The personas of an organization (`None`: every organization, for a platform admin),
    /// newest first.
    fn org_personas<'a>(
        &'a self,
        organization: Option<Uuid>,
        query: &'a OrgPersonaQuery,
    ) -> BoxFuture<'a, anyhow::Result<fleetdesk_kernel::Page<PersonaSummary>>>;

    /// One persona of an organization (`None`: any), whatever its status.
    fn org_persona(
        &self,
        organization: Option<Uuid>,
        id: Uuid,
    ) -> BoxFuture<'_, anyhow::Result<Option<(PersonaSummary, PersonaHead)>>>;

    /// Every image of a persona, whatever its lock, oldest first (a person's view).
    fn all_images(&self, persona_id: Uuid) -> BoxFuture<'_, anyhow::Result<Vec<ImageRow>>>;

    /// The images of a persona an agent is shown (the locks [`crate::rules::image_visible`]
    /// accepts), oldest first, of `category` when given.
    fn shown_images(
        &self,
        persona_id: Uuid,
        category: Option<ImageCategory>,
    ) -> BoxFuture<'_, anyhow::Result<Vec<ImageRow>>>;

    fn cast(&self, persona_id: Uuid) -> BoxFuture<'_, anyhow::Result<Vec<CastRow>>>;

    /// The newest `limit` published posts of a persona's accounts.
    fn recent_posts(
        &self,
        persona_id: Uuid,
        limit: i64,
    ) -> BoxFuture<'_, anyhow::Result<Vec<RecentPost>>>;

    /// A persona image's stored file (for its signed link; any lock).
    fn image_file(&self, image_id: Uuid) -> BoxFuture<'_, anyhow::Result<Option<ImageFile>>>;

    /// The persona's stored image of these bytes (`created: false`), if any.
    fn image_of_sha<'a>(
        &'a self,
        persona_id: Uuid,
        sha256: &'a str,
    ) -> BoxFuture<'a, anyhow::Result<Option<AddedImage>>>;

    /// Creates a pending persona assigned to the agent with its `persona_new` decision, or
    /// finds the agent's live persona of that name in that project. The persona's fields are
    /// as [`PersonaFields::checked`] answers them.
    fn create_persona<'a>(
        &'a self,
        agent: AgentRef,
        persona: &'a NewPersona,
    ) -> BoxFuture<'a, anyhow::Result<Result<CreatedPersona, PersonaRefusal>>>;

    /// Records an image of the persona (the same bytes again: the stored one) and joins it to
    /// the persona's open `persona_images` decision, opened when there is none.
    fn add_image<'a>(
        &'a self,
        agent: AgentRef,
        persona_id: Uuid,
        image: &'a NewImage,
    ) -> BoxFuture<'a, anyhow::Result<Result<AddedImage, PersonaRefusal>>>;

    /// Records a proposal: a draft fact and its `fact_proposal` decision, or a `contradiction`
    /// decision; the same proposal again answers the standing one.
    fn propose<'a>(
        &'a self,
        agent: AgentRef,
        persona_id: Uuid,
        proposal: &'a Proposal,
    ) -> BoxFuture<'a, anyhow::Result<Result<Proposed, PersonaRefusal>>>;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_listed_persona_is_setup_complete_only_with_bio_and_voice() {
        let head = PersonaHead {
            id: Uuid::from_u128(1),
            name: "Mia".into(),
            project: "beauty".into(),
            track: None,
            background: None,
            bio: Some("Taipei skincare".into()),
            voice: Some("  ".into()),
            status: PersonaStatus::Confirmed,
            speech_rules: vec![],
            forbidden: vec![],
            slot_ids: vec![],
        };
        let workspace = WorkspaceName {
            id: Uuid::from_u128(2),
            name: "Acme".into(),
        };
        let accounts = vec![PersonaAccount {
            code: "mia01".into(),
            platform: Platform::Threads,
            state: "active".into(),
        }];
        let at = Timestamp::from_second(1_800_000_000).unwrap();
        let listed = |head: &PersonaHead| {
            PersonaSummary::of(
                head,
                workspace.clone(),
                Some("a1".into()),
                accounts.clone(),
                at,
            )
        };
        assert_eq!(
            listed(&head),
            PersonaSummary {
                id: head.id,
                name: "Mia".into(),
                status: PersonaStatus::Confirmed,
                setup_complete: false,
                workspace: workspace.clone(),
                project: "beauty".into(),
                agent: Some("a1".into()),
                accounts: accounts.clone(),
                created_at: at,
            }
        );
        let voiced = PersonaHead {
            voice: Some("warm".into()),
            ..head
        };
        assert!(listed(&voiced).setup_complete);
    }
}
