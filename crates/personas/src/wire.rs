//! The personas part of the interface (feature `wire`): each operation's handle with its
//! description, and the request and response types the server parses and a client sends.

use crate::ports::{CreatedPersona, PersonaSummary, Proposed, RecentPost};
use crate::{ImageCategory, ImageLock, ProposalKind};
use fleetdesk_accounts::wire::Account;
use fleetdesk_kernel::Platform;
use fleetdesk_kernel::persona::{FactCategory, FactStatus, PersonaStatus};
use fleetdesk_kernel::wire::fields::{CodePath, PlatformQuery};
use fleetdesk_kernel::wire::fields::{Cursor, Int, Limit, Text, Utc};
use fleetdesk_kernel::wire::strings::Base64Data;
use fleetdesk_kernel::wire::strings::CursorInput;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use utoipa::ToSchema;
use uuid::Uuid;
use validator::Validate;

// ---------------------------------------------------------------------------------------------
// Refusals

// ---------------------------------------------------------------------------------------------
// Records

#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct PersonaOut {
    pub id: Uuid,
    pub name: String,
    /// The project's name.
    pub project: String,
    pub track: Option<String>,
    pub background: Option<String>,
    pub bio: Option<String>,
    pub voice: Option<String>,
    /// True only when both bio and voice are present.
    pub setup_complete: bool,
    pub status: PersonaStatus,
}

#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct FactOut {
    pub id: Uuid,
    pub category: FactCategory,
    pub label: String,
    pub value: String,
    pub detail: Option<String>,
    /// True: decided by a person, takes priority. False: a draft waiting for a person.
    pub by_decision: bool,
    pub post_id: Option<Uuid>,
    pub created_at: Utc,
}

/// An approved persona image with signed links valid 15 minutes.
#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct PersonaImageOut {
    pub id: Uuid,
    pub category: ImageCategory,
    pub caption: Option<String>,
    pub mime_type: String,
    pub url: String,
    /// A small image: longest side at most 320 px.
    pub thumb_url: String,
    pub lock: ImageLock,
    /// The current code of the account the path named.
    pub code: String,
    /// The cast code the image is a reference of, if any.
    pub character: Option<String>,
}

#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct CastImageOut {
    pub id: Uuid,
    pub category: ImageCategory,
    pub caption: Option<String>,
    pub mime_type: String,
    pub url: String,
}

#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct CastEntryOut {
    /// 1-24 characters.
    pub code: String,
    pub name: String,
    pub summary: Option<String>,
    /// The canon `character` wiki entry titled as the character's name (its project's before
    /// a shared one); null while there is none.
    pub wiki_entry_id: Option<Uuid>,
    pub wiki_title: Option<String>,
    /// At most 6 approved images marked with this character.
    pub images: Vec<CastImageOut>,
}

// ---------------------------------------------------------------------------------------------
// GET /personas/{code}

/// `include`: only `drafts`.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum PersonaInclude {
    Drafts,
}

#[derive(Debug, Serialize, Deserialize, Validate, ToSchema)]
pub struct GetPersonaQuery {
    /// Only needed when a legacy code is repeated across platforms.
    pub platform: Option<Platform>,
    /// `drafts`: also return draft facts.
    pub include: Option<PersonaInclude>,
    /// Recent published posts to return, 0-30 (default 10).
    pub posts: Option<Int<0, 30>>,
}

#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct PersonaRead {
    pub persona: PersonaOut,
    /// The persona's accounts, as list_accounts shows them.
    pub accounts: Vec<Account>,
    pub facts: Vec<FactOut>,
    pub speech_rules: Vec<String>,
    pub forbidden: Vec<String>,
    pub images: Vec<PersonaImageOut>,
    pub recent_posts: Vec<RecentPost>,
    pub cast: Vec<CastEntryOut>,
    /// How long the image links stay valid: 900.
    pub images_expire_in_seconds: i64,
}

// ---------------------------------------------------------------------------------------------
// POST /personas

#[derive(Debug, Serialize, Deserialize, Validate, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct CreatePersonaBody {
    /// Display name, 1-80 characters, not only spaces.
    pub name: Text<1, 80>,
    /// A project name of the key's workspace, up to 200 characters; may be omitted only when
    /// the workspace has exactly one project.
    pub project: Option<Text<1, 200>>,
    pub track: Option<Text<0, 200>>,
    pub background: Option<Text<0, 2000>>,
    pub bio: Option<Text<0, 2000>>,
    pub voice: Option<Text<0, 4000>>,
}

// ---------------------------------------------------------------------------------------------
// GET /personas/{code}/images

#[derive(Debug, Serialize, Deserialize, Validate, ToSchema)]
pub struct PersonaImagesQuery {
    /// Only needed when a legacy code is repeated across platforms.
    pub platform: Option<Platform>,
    /// Only images of this category.
    pub category: Option<ImageCategory>,
}

#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct PersonaImageList {
    pub code: String,
    pub images: Vec<PersonaImageOut>,
    /// How long the links stay valid: 900.
    pub images_expire_in_seconds: i64,
}

// ---------------------------------------------------------------------------------------------
// POST /personas/{code}/images

#[derive(Debug, Serialize, Deserialize, Validate, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct UploadPersonaImageBody {
    /// Base64 of the image, optional `data:` prefix; JPEG, PNG or WebP up to 5 MB.
    pub data: Base64Data,
    /// Default other.
    pub category: Option<ImageCategory>,
    pub caption: Option<Text<0, 500>>,
    /// How the image was made: kept internal, never returned.
    pub prompt: Option<Text<0, 8000>>,
    /// A code of the persona's cast (1-24): marks a character reference image.
    pub character: Option<Text<1, 24>>,
}

#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct UploadedPersonaImage {
    pub image: UploadedImageOut,
}

#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct UploadedImageOut {
    pub id: Uuid,
    /// False when the same image was delivered before (no extra row).
    pub created: bool,
    /// `draft` until a person approves it.
    pub lock: ImageLock,
    pub code: String,
    pub character: Option<String>,
}

// ---------------------------------------------------------------------------------------------
// POST /personas/{code}/proposals

#[derive(Debug, Serialize, Deserialize, Validate, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ProposeFactBody {
    /// fact: a draft fact for a person to decide; contradiction: a pending decision.
    pub kind: ProposalKind,
    /// Required for a fact; refused for a contradiction.
    pub category: Option<FactCategory>,
    /// A fact item name, or a contradiction title; 1-200, not only spaces.
    pub label: Text<1, 200>,
    /// 1-2000, not only spaces.
    pub value: Text<1, 2000>,
    /// The basis, up to 2000.
    pub detail: Option<Text<0, 2000>>,
    /// A post of this persona's accounts the proposal is based on.
    pub post_id: Option<Uuid>,
}

/// `category` is required for a fact and refused for a contradiction (`Proposal::new` checks
/// the same).
pub fn proposal_rules() -> Value {
    serde_json::json!({"allOf": [
        {
            "if": {"properties": {"kind": {"const": ProposalKind::Fact.as_str()}}, "required": ["kind"]},
            "then": {"required": ["category"], "properties": {"category": {"not": {"type": "null"}}}},
        },
        {
            "if": {"properties": {"kind": {"const": ProposalKind::Contradiction.as_str()}}, "required": ["kind"]},
            "then": {"properties": {"category": {"type": "null"}}},
        },
        {"properties": {
            "label": {"type": "string", "pattern": fleetdesk_kernel::wire::strings::not_blank_pattern()},
            "value": {"type": "string", "pattern": fleetdesk_kernel::wire::strings::not_blank_pattern()},
        }},
    ]})
}

/// `name` must not be only spaces.
pub fn create_persona_rules() -> Value {
    serde_json::json!({"allOf": [{"properties": {
        "name": {"type": "string", "pattern": fleetdesk_kernel::wire::strings::not_blank_pattern()},
    }}]})
}

// ---------------------------------------------------------------------------------------------
// GET /personas/{code}/cast

#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct CastList {
    /// The current code of the account the path named.
    pub code: String,
    /// The persona's name.
    pub persona: String,
    pub cast: Vec<CastEntryOut>,
    /// How long the image links stay valid: 900.
    pub images_expire_in_seconds: i64,
}

// ---------------------------------------------------------------------------------------------
// GET /api/user/v1/personas

#[derive(Debug, Serialize, Deserialize, Validate, ToSchema)]
pub struct OrgPersonaQueryIn {
    /// Only this workspace's personas.
    pub workspace: Option<Uuid>,
    /// 1-200, default 50.
    pub limit: Option<Limit<200>>,
    /// `next_cursor` of the previous page.
    pub cursor: Option<CursorInput>,
}

#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct PersonaListOut {
    pub personas: Vec<PersonaSummary>,
    /// Pass as `cursor` for the next page; null on the last page.
    pub next_cursor: Option<Cursor>,
}

// ---------------------------------------------------------------------------------------------
// GET /api/user/v1/personas/{id}

/// A fact as the persona's people see it.
#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct PersonFactOut {
    pub id: Uuid,
    pub category: FactCategory,
    pub label: String,
    pub value: String,
    pub detail: Option<String>,
    /// decided (by a person; takes priority) or draft (waiting for a person).
    #[schema(value_type = String)]
    pub status: FactStatus,
    pub post_id: Option<Uuid>,
    pub created_at: Utc,
}

/// An image of the persona whatever its lock; a refused one has no links.
#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct PersonImageOut {
    pub id: Uuid,
    pub category: ImageCategory,
    pub caption: Option<String>,
    pub mime_type: String,
    pub lock: ImageLock,
    pub character: Option<String>,
    /// Null for a refused image.
    pub url: Option<String>,
    /// Null for a refused image.
    pub thumb_url: Option<String>,
    pub created_at: Utc,
}

#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct PersonaViewOut {
    pub persona: PersonaSummary,
    pub track: Option<String>,
    pub background: Option<String>,
    pub bio: Option<String>,
    pub voice: Option<String>,
    pub facts: Vec<PersonFactOut>,
    pub speech_rules: Vec<String>,
    pub forbidden: Vec<String>,
    pub images: Vec<PersonImageOut>,
    pub cast: Vec<CastEntryOut>,
    /// How long the image links stay valid: 900.
    pub images_expire_in_seconds: i64,
}

/// The agent's operations (`/api/agent/v1`).
pub mod agent {
    use super::*;
    use fleetdesk_kernel::access::Scope;
    use fleetdesk_kernel::op::{
        HttpMethod::{Get, Post},
        Nothing, OpSpec,
    };

    fleetdesk_kernel::operations! {
        /// A persona as the agent writes it: facts by decision, speech rules, forbidden items, images, recent posts, the cast.
        pub GetPersona(CodePath, GetPersonaQuery, Nothing) -> PersonaRead =
            OpSpec::agent(Get, "/personas/{code}", Scope::PersonasRead)
                .tool("get_persona")
                .summary("A persona as the agent writes it: facts by decision, speech rules, forbidden items, images, recent posts, the cast")
                .description("`{code}` is any current or legacy code of one of the persona's accounts (`platform` when a legacy \
                    code repeats across platforms: 409 ambiguous_code without it); another agent's account is 403, a retired \
                    persona 404. Facts by decision (`by_decision` true; decided by a person, they take priority) come first; \
                    draft facts only with `include=drafts`; refused and replaced facts never. `speech_rules` is the persona's \
                    list plus the values of facts by decision of category speech. `images` are the approved images only, \
                    with signed links valid 15 minutes (do not store or share them). `recent_posts` are the newest `posts` \
                    (0-30, default 10) published posts of the persona's accounts. `cast` is as list_cast.");

        /// Create a persona, pending until a person confirms it.
        pub CreatePersona(Nothing, Nothing, CreatePersonaBody) -> CreatedPersona =
            OpSpec::agent(Post, "/personas", Scope::PersonasWrite)
                .tool("create_persona")
                .idempotent()
                .created()
                .also_answers(&[404])
                .summary("Create a persona, pending until a person confirms it")
                .description("201 `{id, created: true, project, setup_complete, issue_id}`: the persona is `pending`, assigned \
                    to this agent, and a pending decision `persona_new` asks a person to confirm it (`issue_id`). The same \
                    project and name again gives 200 with created false (nothing is changed). `project` is a project name \
                    of the key's workspace; it may be omitted only when the workspace has exactly one project (otherwise \
                    422 naming project, a rule of the stored workspace); a project of another workspace is 422, one no workspace of your organization has is 404. A live persona of \
                    that name in the project that is not this agent's is 422. `name` must not be only spaces; `name` and \
                    `project` are trimmed before they are matched and stored. \
                    `setup_complete` is true only when both bio and voice are present (not only spaces).");

        /// The persona's approved reference images, with signed links valid 15 minutes.
        pub ListPersonaImages(CodePath, PersonaImagesQuery, Nothing) -> PersonaImageList =
            OpSpec::agent(Get, "/personas/{code}/images", Scope::PersonasRead)
                .tool("list_persona_images")
                .summary("The persona's approved reference images, with signed links valid 15 minutes")
                .description("Only approved images are listed (a delivered image is a draft until a person approves it; \
                    refused images never show), oldest first, optionally of one `category`. `url` and `thumb_url` \
                    (a small image, longest side at most 320 px) are signed links valid `images_expire_in_seconds` \
                    (900): do not store or share them. `code` is the current code of the account the path named.");

        /// Deliver a reference image of the persona (or of a character of its cast) for a person's approval.
        pub UploadPersonaImage(CodePath, PlatformQuery, UploadPersonaImageBody) -> UploadedPersonaImage =
            OpSpec::agent(Post, "/personas/{code}/images", Scope::PersonasWrite)
                .tool("upload_persona_image")
                .idempotency_key_only()
                .created()
                .max_body(8 * 1024 * 1024)
                .summary("Deliver a reference image of the persona (or of a character of its cast) for a person's approval")
                .description("`data` is base64 (optional `data:` prefix) of a JPEG, PNG or WebP image, the type judged from \
                    the bytes (another file is 422), up to 5 MB decoded (413 naming data). `category` defaults to other; \
                    `character` (1-24) marks a character reference image and must be a code of the persona's cast (else \
                    422 naming character); `prompt` is kept internal and never returned. 201 with lock `draft`: the image \
                    joins the persona's open `persona_images` pending decision (opened when there is none). The same \
                    image bytes again for the persona give 200 with created false and no extra row.");

        /// Propose a fact about the persona, or point out a contradiction, for a person to decide.
        pub ProposeFact(CodePath, PlatformQuery, ProposeFactBody) -> Proposed =
            OpSpec::agent(Post, "/personas/{code}/proposals", Scope::PersonasWrite)
                .tool("propose_fact")
                .idempotent()
                .created()
                .also_answers(&[404])
                .summary("Propose a fact about the persona, or point out a contradiction, for a person to decide")
                .description("Never becomes an official setting directly. kind `fact` (category required, from the fact \
                    categories) adds a draft fact and opens a `fact_proposal` pending decision; kind `contradiction` (no \
                    category: 400) opens a `contradiction` pending decision asking what should change (change_bio, \
                    delete_post, keep). `label` and `value` must not be only spaces. `label` and `value` are stored and matched \
                    trimmed. `post_id` must be a post of this persona's accounts: an unknown post or another workspace's \
                    is 404, a post of another agent's persona is 403, a post of another of the caller's own personas is \
                    422 (each naming post_id). 201 `{id, kind, created: true, issue_id, status}` where id is the draft fact's id (kind fact) \
                    or the decision's (kind contradiction, id = issue_id) and status the fact's (draft, later decided) or \
                    the decision's (open). The same proposal again (same kind, category, label and value) while it stands \
                    (a draft or decided fact, an open contradiction) gives 200 with created false and the same ids.");

        /// The characters the persona's accounts may feature, with their reference images.
        pub ListCast(CodePath, PlatformQuery, Nothing) -> CastList =
            OpSpec::agent(Get, "/personas/{code}/cast", Scope::PersonasRead)
                .tool("list_cast")
                .summary("The characters the persona's accounts may feature, with their reference images")
                .description("Each character with at most 6 approved images marked with it, signed links valid \
                    `images_expire_in_seconds` (900). `wiki_entry_id` and `wiki_title` name the canon knowledge-base entry of \
                    category character whose title matches the character's name (case, width and Chinese script \
                    aside) among the entries the persona sees (its project's before a shared one); null while there is \
                    none.");
    }
}

/// The person's operations (`/api/user/v1`).
pub mod personal {
    use super::*;
    use fleetdesk_kernel::access::PersonalAccess;
    use fleetdesk_kernel::op::{HttpMethod::Get, Nothing, OpSpec};
    use fleetdesk_kernel::wire::fields::IdPath;

    fleetdesk_kernel::operations! {
        /// The organization's personas, newest first, with their accounts.
        pub ListPersonas(Nothing, OrgPersonaQueryIn, Nothing) -> PersonaListOut =
            OpSpec::personal(Get, "/personas", PersonalAccess::Agency)
                .tool("list_personas")
                .summary("The organization's personas, newest first, with their accounts")
                .description(
                    "Agency people and platform admins; clients are refused (403). Only the \
                     member's organization's personas (a platform admin outside any organization \
                     sees every organization's), of workspaces not archived, whatever their status \
                     (pending, confirmed, retired). `workspace` (an id) narrows to one workspace; one \
                     outside the organization lists nothing. Each persona has its workspace, project, \
                     agent, setup_complete and its accounts with their current state. Pages with \
                     limit 1-200 (default 50) and cursor.",
                );

        /// One persona as its people decide about it: facts, speech rules, images, cast.
        pub ViewPersona(IdPath, Nothing, Nothing) -> PersonaViewOut =
            OpSpec::personal(Get, "/personas/{id}", PersonalAccess::Agency)
                .tool("view_persona")
                .summary("One persona as its people decide about it: facts, speech rules, images, cast")
                .description(
                    "Agency people and platform admins; clients are refused (403); a persona of \
                     another organization (or of an archived workspace) is 404. `facts` are the \
                     decided facts (`status: decided`, they take priority) then the drafts waiting \
                     for a person, each by category, label and age; refused and replaced facts are \
                     not listed. `speech_rules` is the persona's list plus its decided speech \
                     facts. `images` are every image of the persona, oldest first, with its `lock` \
                     (draft, approved, refused): approved and draft images carry `url` and \
                     `thumb_url` signed for `images_expire_in_seconds` (900), a refused one none. \
                     `cast` is each character with at most 6 approved images.",
                );
    }
}
