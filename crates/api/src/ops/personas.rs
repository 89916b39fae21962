//! Agent API: personas, their images, fact proposals and the cast.

use super::accounts::Account;
use super::common::{CodePath, PlatformQuery, maybe_lookup, naming};
use super::drafts::IdPath;
use crate::ctx::Ctx;
use crate::error::ApiError;
use crate::fields::{Cursor, Int, Utc, limit_or};
use crate::input::{Nothing, Req};
use crate::links::{Links, PersonaSigner, PersonaVariant};
use crate::op::bind;
use crate::op::{ErasedOp, Reply};
use fleetdesk_accounts::AvatarError;
use fleetdesk_accounts::wire::CodePathRef;
use fleetdesk_kernel::ErrorCode;
use fleetdesk_personas::ports::{
    CastRow, CreatedPersona, ImageRow, NewPersona, OrgPersonaQuery, Proposed,
};
use fleetdesk_personas::service::{ImageUpload, PersonaError};
pub use fleetdesk_personas::wire::{
    CastEntryOut, CastImageOut, CastList, CreatePersonaBody, FactOut, GetPersonaQuery,
    OrgPersonaQueryIn, PersonFactOut, PersonImageOut, PersonaImageList, PersonaImageOut,
    PersonaImagesQuery, PersonaInclude, PersonaListOut, PersonaOut, PersonaRead, PersonaViewOut,
    ProposeFactBody, UploadPersonaImageBody, UploadedImageOut, UploadedPersonaImage,
};
use fleetdesk_personas::wire::{agent, personal};
pub use fleetdesk_personas::wire::{create_persona_rules, proposal_rules};
use fleetdesk_personas::{
    ImageCategory, ImageLock, PersonaFields, PersonaRefusal, Proposal, RECENT_POSTS_DEFAULT,
};
use fleetdesk_tenancy::{AgentCaller, MemberCaller};
use uuid::Uuid;

pub fn register(all: &mut Vec<Box<dyn ErasedOp>>) {
    all.push(bind::<agent::GetPersona, _, _, _>(get_persona));
    all.push(bind::<agent::CreatePersona, _, _, _>(create_persona));
    all.push(bind::<agent::ListPersonaImages, _, _, _>(
        list_persona_images,
    ));
    all.push(bind::<agent::UploadPersonaImage, _, _, _>(
        upload_persona_image,
    ));
    all.push(bind::<agent::ProposeFact, _, _, _>(propose_fact));
    all.push(bind::<agent::ListCast, _, _, _>(list_cast));
}

/// The Personal API's reads of personas: an organization's people see its personas, their
/// facts (drafts too), images (drafts too) and cast.
pub fn register_personal(all: &mut Vec<Box<dyn ErasedOp>>) {
    all.push(bind::<personal::ListPersonas, _, _, _>(list_personas));
    all.push(bind::<personal::ViewPersona, _, _, _>(view_persona));
}

// ---------------------------------------------------------------------------------------------
// Refusals

impl From<PersonaError> for ApiError {
    fn from(e: PersonaError) -> ApiError {
        match e {
            PersonaError::Lookup(l) => l.into(),
            PersonaError::Refused(r) => {
                let field = r.field();
                if r.is_input() {
                    return ApiError::invalid(field, r);
                }
                let message = format!("{field}: {r}");
                match r {
                    r if r.is_not_found() => ApiError::not_found(message),
                    PersonaRefusal::PostNotYours => ApiError::forbidden(message),
                    _ => ApiError::rejected(message),
                }
                .with_field(field)
            }
            PersonaError::Image(AvatarError::TooLarge) => ApiError::new(
                ErrorCode::PayloadTooLarge,
                "data: the image is larger than 5 MB",
            )
            .with_field("data"),
            PersonaError::Image(i @ AvatarError::NotAnImage) => {
                ApiError::rejected(format!("data: {i}")).with_field("data")
            }
            PersonaError::Image(i) => ApiError::invalid("data", i),
            PersonaError::Unreadable(why) => {
                ApiError::rejected(format!("data: the image cannot be read: {why}"))
                    .with_field("data")
            }
            PersonaError::Unexpected(e) => e.into(),
        }
    }
}

maybe_lookup!(PersonaError, PersonaError::Lookup(l) => l);

// ---------------------------------------------------------------------------------------------
// Records

/// Signs the links of one answer (one expiry for all).
struct Signer<'a>(PersonaSigner<'a>);

impl<'a> Signer<'a> {
    fn new(ctx: &'a Ctx) -> Self {
        Signer(PersonaSigner::new(
            &ctx.links,
            ctx.base_url(),
            jiff::Timestamp::now(),
        ))
    }

    fn url(&self, id: Uuid, v: PersonaVariant) -> String {
        self.0.url(id, v)
    }

    fn image(&self, i: ImageRow, code: &str) -> PersonaImageOut {
        PersonaImageOut {
            url: self.url(i.id, PersonaVariant::File),
            thumb_url: self.url(i.id, PersonaVariant::Thumb),
            id: i.id,
            category: i.category,
            caption: i.caption,
            mime_type: i.mime_type,
            lock: i.lock,
            code: code.to_owned(),
            character: i.character,
        }
    }

    fn cast(&self, cast: Vec<(CastRow, Vec<ImageRow>)>) -> Vec<CastEntryOut> {
        cast.into_iter()
            .map(|(c, images)| CastEntryOut {
                code: c.code,
                name: c.name,
                summary: c.summary,
                wiki_entry_id: c.wiki.as_ref().map(|w| w.0),
                wiki_title: c.wiki.map(|w| w.1),
                images: images
                    .into_iter()
                    .map(|i| CastImageOut {
                        url: self.url(i.id, PersonaVariant::File),
                        id: i.id,
                        category: i.category,
                        caption: i.caption,
                        mime_type: i.mime_type,
                    })
                    .collect(),
            })
            .collect()
    }
}

// ---------------------------------------------------------------------------------------------
// GET /personas/{code}

async fn get_persona(
    ctx: Ctx,
    agent: AgentCaller,
    req: Req<CodePath, GetPersonaQuery, Nothing>,
) -> Result<Reply<PersonaRead>, ApiError> {
    let q = req.query;
    let code = req.path.code_ref(q.platform);
    let posts = q.posts.map_or(RECENT_POSTS_DEFAULT, Int::get);
    let r = ctx
        .personas
        .get(agent.agent_ref(), &code, posts, q.include.is_some())
        .await
        .map_err(naming(code.code.as_str()))?;
    let sign = Signer::new(&ctx);
    let p = r.persona;
    Ok(Reply::ok(PersonaRead {
        persona: PersonaOut {
            setup_complete: fleetdesk_personas::setup_complete(
                p.bio.as_deref(),
                p.voice.as_deref(),
            ),
            id: p.id,
            name: p.name,
            project: p.project,
            track: p.track,
            background: p.background,
            bio: p.bio,
            voice: p.voice,
            status: p.status,
        },
        accounts: r.accounts.into_iter().map(Account::from).collect(),
        facts: r
            .facts
            .into_iter()
            .map(|f| FactOut {
                by_decision: f.by_decision(),
                id: f.id,
                category: f.category,
                label: f.label,
                value: f.value,
                detail: f.detail,
                post_id: f.post_id,
                created_at: Utc(f.created_at),
            })
            .collect(),
        speech_rules: r.speech_rules,
        forbidden: p.forbidden,
        images: r
            .images
            .into_iter()
            .map(|i| sign.image(i, &r.account.code))
            .collect(),
        recent_posts: r.recent_posts,
        cast: sign.cast(r.cast),
        images_expire_in_seconds: Links::PERSONA_LIFETIME_SECONDS,
    }))
}

// ---------------------------------------------------------------------------------------------
// POST /personas

async fn create_persona(
    ctx: Ctx,
    agent: AgentCaller,
    req: Req<Nothing, Nothing, CreatePersonaBody>,
) -> Result<Reply<CreatedPersona>, ApiError> {
    let b = req.body;
    let new = NewPersona {
        fields: PersonaFields {
            name: b.name.into_string(),
            track: b.track.map(String::from),
            background: b.background.map(String::from),
            bio: b.bio.map(String::from),
            voice: b.voice.map(String::from),
        },
        project: b.project.map(String::from),
    };
    let made = ctx
        .personas
        .create_persona(agent.agent_ref(), &new)
        .await?
        .map_err(PersonaError::Refused)?;
    Ok(Reply::created_if(made.created, made))
}

// ---------------------------------------------------------------------------------------------
// GET /personas/{code}/images

async fn list_persona_images(
    ctx: Ctx,
    agent: AgentCaller,
    req: Req<CodePath, PersonaImagesQuery, Nothing>,
) -> Result<Reply<PersonaImageList>, ApiError> {
    let code = req.path.code_ref(req.query.platform);
    let (account, images) = ctx
        .personas
        .images(agent.agent_ref(), &code, req.query.category)
        .await
        .map_err(naming(code.code.as_str()))?;
    let sign = Signer::new(&ctx);
    Ok(Reply::ok(PersonaImageList {
        images: images
            .into_iter()
            .map(|i| sign.image(i, &account.code))
            .collect(),
        code: account.code,
        images_expire_in_seconds: Links::PERSONA_LIFETIME_SECONDS,
    }))
}

// ---------------------------------------------------------------------------------------------
// POST /personas/{code}/images

async fn upload_persona_image(
    ctx: Ctx,
    agent: AgentCaller,
    req: Req<CodePath, PlatformQuery, UploadPersonaImageBody>,
) -> Result<Reply<UploadedPersonaImage>, ApiError> {
    let code = req.path.code_ref(req.query.platform);
    let b = req.body;
    let upload = ImageUpload {
        data: b.data.0,
        category: b.category.unwrap_or(ImageCategory::Other),
        caption: b.caption.map(String::from),
        prompt: b.prompt.map(String::from),
        character: b.character.map(String::from),
    };
    let (account, added) = ctx
        .personas
        .upload(agent.agent_ref(), &code, upload)
        .await
        .map_err(naming(code.code.as_str()))?;
    let body = UploadedPersonaImage {
        image: UploadedImageOut {
            id: added.id,
            created: added.created,
            lock: added.lock,
            code: account.code,
            character: added.character,
        },
    };
    Ok(Reply::created_if(added.created, body))
}

// ---------------------------------------------------------------------------------------------
// POST /personas/{code}/proposals

async fn propose_fact(
    ctx: Ctx,
    agent: AgentCaller,
    req: Req<CodePath, PlatformQuery, ProposeFactBody>,
) -> Result<Reply<Proposed>, ApiError> {
    let code = req.path.code_ref(req.query.platform);
    let b = req.body;
    let proposal = Proposal::new(
        b.kind,
        b.category,
        b.label.into_string(),
        b.value.into_string(),
        b.detail.map(String::from),
        b.post_id,
    )
    .map_err(PersonaError::Refused)?;
    let (_, p) = ctx
        .personas
        .propose(agent.agent_ref(), &code, &proposal)
        .await
        .map_err(naming(code.code.as_str()))?;
    Ok(Reply::created_if(p.created, p))
}

// ---------------------------------------------------------------------------------------------
// GET /personas/{code}/cast

async fn list_cast(
    ctx: Ctx,
    agent: AgentCaller,
    req: Req<CodePath, PlatformQuery, Nothing>,
) -> Result<Reply<CastList>, ApiError> {
    let code = req.path.code_ref(req.query.platform);
    let r = ctx
        .personas
        .cast(agent.agent_ref(), &code)
        .await
        .map_err(naming(code.code.as_str()))?;
    let sign = Signer::new(&ctx);
    Ok(Reply::ok(CastList {
        code: r.account.code,
        persona: r.persona.name,
        cast: sign.cast(r.cast),
        images_expire_in_seconds: Links::PERSONA_LIFETIME_SECONDS,
    }))
}

// ---------------------------------------------------------------------------------------------
// GET /api/user/v1/personas

async fn list_personas(
    ctx: Ctx,
    m: MemberCaller,
    req: Req<Nothing, OrgPersonaQueryIn, Nothing>,
) -> Result<Reply<PersonaListOut>, ApiError> {
    let q = req.query;
    let query = OrgPersonaQuery {
        workspace: q.workspace,
        after: q.cursor.map(|c| c.0),
        limit: limit_or(q.limit, 50),
    };
    let page = ctx.personas.org_personas(m.organization_id, &query).await?;
    Ok(Reply::ok(PersonaListOut {
        personas: page.items,
        next_cursor: page.next.map(Cursor),
    }))
}

// ---------------------------------------------------------------------------------------------
// GET /api/user/v1/personas/{id}

async fn view_persona(
    ctx: Ctx,
    m: MemberCaller,
    req: Req<IdPath, Nothing, Nothing>,
) -> Result<Reply<PersonaViewOut>, ApiError> {
    let v = ctx
        .personas
        .view(m.organization_id, req.path.id)
        .await?
        .ok_or_else(|| ApiError::not_found("no such persona in this organization"))?;
    let sign = Signer::new(&ctx);
    let p = v.persona;
    Ok(Reply::ok(PersonaViewOut {
        persona: v.summary,
        track: p.track,
        background: p.background,
        bio: p.bio,
        voice: p.voice,
        facts: v
            .facts
            .into_iter()
            .map(|f| PersonFactOut {
                id: f.id,
                category: f.category,
                label: f.label,
                value: f.value,
                detail: f.detail,
                status: f.status,
                post_id: f.post_id,
                created_at: Utc(f.created_at),
            })
            .collect(),
        speech_rules: v.speech_rules,
        forbidden: p.forbidden,
        images: v
            .images
            .into_iter()
            .map(|i| {
                let served = i.lock != ImageLock::Refused;
                PersonImageOut {
                    url: served.then(|| sign.url(i.id, PersonaVariant::File)),
                    thumb_url: served.then(|| sign.url(i.id, PersonaVariant::Thumb)),
                    id: i.id,
                    category: i.category,
                    caption: i.caption,
                    mime_type: i.mime_type,
                    lock: i.lock,
                    character: i.character,
                    created_at: Utc(i.created_at),
                }
            })
            .collect(),
        cast: sign.cast(v.cast),
        images_expire_in_seconds: Links::PERSONA_LIFETIME_SECONDS,
    }))
}
