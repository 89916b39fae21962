//! Personas: the persona record, facts, reference images and the cast. Reads are one statement
//! each (the service runs the independent ones at once); each writing method is one
//! transaction that locks the persona row first, so a proposal or an image resent at the same
//! moment finds the first one, and the persona's images decision is opened once.

use crate::db::{PgStore, Ts, Tx};
use crate::decisions::{open_decision, open_decision_once};
use crate::rows::{Json, Stored};
use crate::schema::{decisions, persona_cast, persona_facts, persona_images, personas, projects};
use diesel::prelude::*;
use diesel_async::RunQueryDsl;
use fleetdesk_decisions::{DecisionKind, DecisionStatus};
use fleetdesk_kernel::persona::{FactCategory, FactStatus, PersonaStatus};
use fleetdesk_kernel::{AgentRef, BoxFuture, Platform};
use fleetdesk_personas::plan::{
    EarlierContradiction, EarlierFact, EarlierProposals, ImagesDecision, ProposalPlan, SameName,
    answer_same_name, contradiction_proposed, images_decision, new_persona_decision, plan_proposal,
};
use fleetdesk_personas::ports::*;
use fleetdesk_personas::*;
use uuid::Uuid;

/// The live persona of a slot of the workspace, with its project's name and every slot.
const PERSONA_OF_SLOT: &str = r#"
SELECT pe.id, pe.name, pr.name AS project, pe.track, pe.background, pe.bio, pe.voice, pe.status,
       pe.speech_rules, pe.forbidden,
       ARRAY(SELECT s2.id FROM account_slots s2 WHERE s2.persona_id = pe.id
             ORDER BY s2.code, s2.platform) AS slot_ids
FROM account_slots s
JOIN personas pe ON pe.id = s.persona_id
JOIN projects pr ON pr.id = pe.project_id
WHERE s.id = $1 AND s.workspace_id = $2 AND pe.status <> $3
"#;

row! {
    struct HeadRow into PersonaHead {
        id: Uuid,
        name: String,
        project: String,
        track: Option<String>,
        background: Option<String>,
        bio: Option<String>,
        voice: Option<String>,
        status: Stored<PersonaStatus>,
        speech_rules: Vec<String>,
        forbidden: Vec<String>,
        slot_ids: Vec<Uuid>,
    }
}

/// The columns of an organization's persona for its people: the head's, its workspace, agent,
/// accounts (each with its latest generation's state) and creation time.
macro_rules! org_persona_sql {
    ($($where:tt)+) => {
        concat!(
            "SELECT pe.id, pe.name, pr.name AS project, pe.track, pe.background, pe.bio, pe.voice, \
                    pe.status, pe.speech_rules, pe.forbidden, \
                    ARRAY(SELECT s2.id FROM account_slots s2 WHERE s2.persona_id = pe.id \
                          ORDER BY s2.code, s2.platform) AS slot_ids, \
                    w.id AS workspace_id, w.name AS workspace_name, ag.name AS agent, \
                    pe.created_at, \
                    COALESCE((SELECT jsonb_agg(jsonb_build_object('code', s.code, \
                                'platform', s.platform, 'state', COALESCE(g.state, '')) \
                                ORDER BY s.code, s.platform) \
                              FROM account_slots s \
                              LEFT JOIN LATERAL (SELECT state FROM account_generations \
                                  WHERE slot_id = s.id ORDER BY generation DESC LIMIT 1) g ON true \
                              WHERE s.persona_id = pe.id), '[]'::jsonb) AS accounts \
             FROM personas pe \
             JOIN workspaces w ON w.id = pe.workspace_id \
             JOIN projects pr ON pr.id = pe.project_id \
             LEFT JOIN agents ag ON ag.id = pe.agent_id ",
            $($where)+
        )
    };
}

/// An organization's personas (`$1` null: every organization's), of one workspace (`$2`),
/// newest first after `($3, $4)`.
const ORG_PERSONAS: &str = org_persona_sql!(
    "WHERE ($1::uuid IS NULL OR w.organization_id = $1) AND ($2::uuid IS NULL OR w.id = $2) \
       AND w.archived_at IS NULL \
       AND ($3::timestamptz IS NULL OR (pe.created_at, pe.id) < ($3, $4)) \
     ORDER BY pe.created_at DESC, pe.id DESC \
     LIMIT $5"
);

/// One persona of an organization (`$1` null: any).
const ORG_PERSONA: &str = org_persona_sql!(
    "WHERE ($1::uuid IS NULL OR w.organization_id = $1) AND w.archived_at IS NULL AND pe.id = $2"
);

row! {
    struct OrgPersonaRow {
        #[diesel(embed)]
        head: HeadRow,
        workspace_id: Uuid,
        workspace_name: String,
        agent: Option<String>,
        created_at: Ts,
        accounts: Json<Vec<PersonaAccount>>,
    }
}

impl OrgPersonaRow {
    fn persona(self) -> (PersonaSummary, PersonaHead) {
        let head: PersonaHead = self.head.into();
        let workspace = WorkspaceName {
            id: self.workspace_id,
            name: self.workspace_name,
        };
        let (accounts, at) = (self.accounts.0, self.created_at.into());
        let summary = PersonaSummary::of(&head, workspace, self.agent, accounts, at);
        (summary, head)
    }
}

/// The live persona of a name (`$2`) in a project (`$1`; live: not `$3`), with its latest
/// decision of kind `$4` (`persona_new`): what a create that inserted nothing answers.
const SAME_NAME: &str = r#"
SELECT pe.id, pe.agent_id AS owner, pe.bio, pe.voice,
       (SELECT d.id FROM decisions d WHERE d.persona_id = pe.id AND d.kind = $4
        ORDER BY d.created_at DESC LIMIT 1) AS issue_id
FROM personas pe
WHERE pe.project_id = $1 AND pe.name = $2 AND pe.status <> $3
"#;

row! {
    struct SameNameRow into SameName {
        id: Uuid,
        owner: Option<Uuid>,
        bio: Option<String>,
        voice: Option<String>,
        issue_id: Option<Uuid>,
    }
}

/// The newest published posts of a persona's accounts.
const RECENT_POSTS: &str = r#"
SELECT p.id, s.code, s.platform, p.body, p.published_at, p.permalink
FROM posts p
JOIN account_slots s ON s.id = p.slot_id
WHERE p.persona_id = $1 AND p.status = $2
ORDER BY p.published_at DESC NULLS LAST, p.id DESC
LIMIT $3
"#;

row! {
    struct PostRow into RecentPost {
        id: Uuid,
        code: String,
        platform: Stored<Platform>,
        body: String,
        published_at: Option<Ts>,
        permalink: Option<String>,
    }
}

/// A post of the workspace: its persona and the agent that persona is assigned to.
const POST_OWNER: &str = r#"
SELECT p.persona_id, pe.agent_id
FROM posts p
JOIN personas pe ON pe.id = p.persona_id
WHERE p.id = $1 AND p.workspace_id = $2
"#;

row! {
    struct PostOwnerRow into PostOwner {
        persona_id: Uuid,
        agent_id: Option<Uuid>,
    }
}

statements!(
    PERSONA_OF_SLOT => HeadRow,
    ORG_PERSONAS => OrgPersonaRow,
    ORG_PERSONA => OrgPersonaRow,
    RECENT_POSTS => PostRow,
    POST_OWNER => PostOwnerRow,
    SAME_NAME => SameNameRow,
);

selectable! {
    #[diesel(table_name = persona_facts)]
    struct FactRow into Fact {
        id: Uuid,
        category: Stored<FactCategory>,
        label: String,
        value: String,
        detail: Option<String>,
        status: Stored<FactStatus>,
        post_id: Option<Uuid>,
        created_at: Ts,
    }
}

selectable! {
    #[diesel(table_name = persona_facts)]
    struct EarlierFactRow into EarlierFact {
        id: Uuid,
        value: String,
        status: Stored<FactStatus>,
        decision_id: Option<Uuid>,
    }
}

selectable! {
    #[diesel(table_name = persona_images)]
    struct FileRow into ImageFile {
        storage_key: String,
        mime_type: String,
        thumb_key: String,
        thumb_mime: String,
        lock: Stored<ImageLock>,
    }
}

selectable! {
    #[diesel(table_name = persona_images)]
    struct ImageDbRow into ImageRow {
        id: Uuid,
        category: Stored<ImageCategory>,
        caption: Option<String>,
        mime_type: String,
        lock: Stored<ImageLock>,
        character: Option<String>,
        created_at: Ts,
    }
}

/// Locks the persona row; answers its name. `FOR NO KEY UPDATE`, not `FOR UPDATE`: it still
/// serialises uploads and proposals of one persona against each other (the lock conflicts with
/// itself), but not with the `FOR KEY SHARE` that foreign-key checks take on the persona when
/// another transaction inserts a row referencing it. A person's decision move locks the
/// decision and then inserts such rows (task cards, follow-ups, facts), while an upload here
/// locks the persona and then the open images decision: with `FOR UPDATE` the two orders
/// deadlock and one request fails with a 500.
async fn lock_persona(conn: Tx<'_>, persona_id: Uuid) -> QueryResult<String> {
    personas::table
        .find(persona_id)
        .select(personas::name)
        .for_no_key_update()
        .get_result(conn)
        .await
}

async fn create_tx(
    conn: Tx<'_>,
    agent: AgentRef,
    new: &NewPersona,
) -> anyhow::Result<Result<CreatedPersona, PersonaRefusal>> {
    let f = &new.fields;
    let projects: Vec<(Uuid, String)> = projects::table
        .filter(projects::workspace_id.eq(agent.workspace_id))
        .select((projects::id, projects::name))
        .order(projects::name)
        .load(conn)
        .await?;
    let (project_id, project) = match choose_project(new.project.as_deref(), &projects) {
        Ok(p) => p.clone(),
        Err(PersonaRefusal::ProjectUnknown) => {
            let name = new.project.as_deref().unwrap_or_default().trim();
            let miss = crate::projects::miss(conn, agent.organization_id, name).await?;
            return Ok(Err(PersonaRefusal::project_miss(miss)));
        }
        Err(e) => return Ok(Err(e)),
    };
    // The live name is unique per project (a partial index): a conflict inserts nothing.
    let inserted: Option<Uuid> = diesel::insert_into(personas::table)
        .values((
            personas::workspace_id.eq(agent.workspace_id),
            personas::project_id.eq(project_id),
            personas::agent_id.eq(Some(agent.agent_id)),
            personas::created_by_agent.eq(Some(agent.agent_id)),
            personas::name.eq(&f.name),
            personas::track.eq(f.track.as_deref()),
            personas::background.eq(f.background.as_deref()),
            personas::bio.eq(f.bio.as_deref()),
            personas::voice.eq(f.voice.as_deref()),
            personas::status.eq(NewPersona::STATUS.as_str()),
        ))
        .on_conflict_do_nothing()
        .returning(personas::id)
        .get_result(conn)
        .await
        .optional()?;
    if let Some(id) = inserted {
        let issue =
            open_decision(conn, agent, &new_persona_decision(id, &f.name, &project)).await?;
        return Ok(Ok(new.created(id, project, issue)));
    }
    let same: SameNameRow = sql!(
        SAME_NAME,
        project_id,
        &f.name,
        PersonaStatus::Retired.as_str(),
        DecisionKind::PersonaNew.as_str()
    )
    .get_result(conn)
    .await?;
    Ok(answer_same_name(agent.agent_id, same.into(), project))
}

/// The persona's image of these bytes, if any.
async fn image_of_sha(
    conn: Tx<'_>,
    persona_id: Uuid,
    sha256: &str,
) -> anyhow::Result<Option<AddedImage>> {
    let existing: Option<(Uuid, Stored<ImageLock>, Option<String>)> = persona_images::table
        .filter(persona_images::persona_id.eq(persona_id))
        .filter(persona_images::sha256.eq(sha256))
        .select((
            persona_images::id,
            persona_images::lock,
            persona_images::character,
        ))
        .get_result(conn)
        .await
        .optional()?;
    Ok(existing.map(|(id, lock, character)| AddedImage::found(id, lock.0, character)))
}

/// The persona's open images decision, locked: a person deciding it at this moment waits for
/// the image being added.
async fn open_images_decision(conn: Tx<'_>, persona_id: Uuid) -> QueryResult<Option<Uuid>> {
    decisions::table
        .filter(decisions::persona_id.eq(persona_id))
        .filter(decisions::kind.eq(DecisionKind::PersonaImages.as_str()))
        .filter(decisions::status.eq(DecisionStatus::Open.as_str()))
        .select(decisions::id)
        .for_update()
        .get_result(conn)
        .await
        .optional()
}

async fn add_image_tx(
    conn: Tx<'_>,
    agent: AgentRef,
    persona_id: Uuid,
    img: &NewImage,
) -> anyhow::Result<Result<AddedImage, PersonaRefusal>> {
    let name = lock_persona(conn, persona_id).await?;
    if img.character.is_some() {
        let cast: Vec<String> = persona_cast::table
            .filter(persona_cast::persona_id.eq(persona_id))
            .select(persona_cast::code)
            .load(conn)
            .await?;
        if let Err(e) = check_character(img.character.as_deref(), &cast) {
            return Ok(Err(e));
        }
    }
    // Found before anything was stored by the service; looked up again under the lock for
    // an upload of the same bytes at the same moment.
    if let Some(existing) = image_of_sha(conn, persona_id, &img.sha256).await? {
        return Ok(Ok(existing));
    }
    let open = open_images_decision(conn, persona_id).await?;
    let decision_id = match images_decision(open, persona_id, &name) {
        ImagesDecision::Join(id) => id,
        // One open per persona (a unique index); the persona lock makes a conflict unlikely,
        // and a conflict still finds the one opened.
        ImagesDecision::Open(decision) => match open_decision_once(conn, agent, &decision).await? {
            Some(id) => id,
            None => open_images_decision(conn, persona_id)
                .await?
                .ok_or(diesel::NotFound)?,
        },
    };
    let id: Uuid = diesel::insert_into(persona_images::table)
        .values((
            persona_images::persona_id.eq(persona_id),
            persona_images::sha256.eq(&img.sha256),
            persona_images::mime_type.eq(&img.mime_type),
            persona_images::bytes.eq(img.bytes),
            persona_images::width.eq(img.width),
            persona_images::height.eq(img.height),
            persona_images::storage_key.eq(&img.storage_key),
            persona_images::thumb_key.eq(&img.thumb_key),
            persona_images::thumb_mime.eq(&img.thumb_mime),
            persona_images::category.eq(img.category.as_str()),
            persona_images::caption.eq(img.caption.as_deref()),
            persona_images::prompt.eq(img.prompt.as_deref()),
            persona_images::character.eq(img.character.as_deref()),
            persona_images::lock.eq(NewImage::LOCK.as_str()),
            persona_images::decision_id.eq(Some(decision_id)),
            persona_images::uploaded_by_agent.eq(Some(agent.agent_id)),
        ))
        .returning(persona_images::id)
        .get_result(conn)
        .await?;
    Ok(Ok(img.added(id)))
}

async fn propose_tx(
    conn: Tx<'_>,
    agent: AgentRef,
    persona_id: Uuid,
    p: &Proposal,
) -> anyhow::Result<Result<Proposed, PersonaRefusal>> {
    let name = lock_persona(conn, persona_id).await?;
    if let Some(post_id) = p.post_id {
        let found: Option<PostOwnerRow> = sql!(POST_OWNER, post_id, agent.workspace_id)
            .get_result(conn)
            .await
            .optional()?;
        if let Err(e) = check_post(found.map(Into::into), persona_id, agent.agent_id) {
            return Ok(Err(e));
        }
    }
    let earlier = match p.kind {
        ProposalKind::Fact => {
            let category = p.fact_category();
            let rows: Vec<EarlierFactRow> = persona_facts::table
                .filter(persona_facts::persona_id.eq(persona_id))
                .filter(persona_facts::category.eq(category.as_str()))
                .filter(persona_facts::label.eq(&p.label))
                .order(persona_facts::created_at)
                .select(EarlierFactRow::as_select())
                .load(conn)
                .await?;
            EarlierProposals::Facts(rows.into_iter().map(Into::into).collect())
        }
        ProposalKind::Contradiction => {
            // The persona's open contradictions of one label (the rules match the value).
            // `->>` answers null for a key the detail lacks: diesel types it not null, so
            // the value is read as nullable.
            let rows: Vec<(Uuid, Option<String>)> = decisions::table
                .filter(decisions::persona_id.eq(persona_id))
                .filter(decisions::kind.eq(DecisionKind::Contradiction.as_str()))
                .filter(decisions::status.eq(DecisionStatus::Open.as_str()))
                .filter(decisions::detail.retrieve_as_text("label").eq(&p.label))
                .order(decisions::created_at)
                .select((
                    decisions::id,
                    decisions::detail.retrieve_as_text("value").nullable(),
                ))
                .load(conn)
                .await?;
            EarlierProposals::Contradictions(
                rows.into_iter()
                    .map(|(decision_id, value)| EarlierContradiction { decision_id, value })
                    .collect(),
            )
        }
    };
    let plan = plan_proposal(p, persona_id, &name, earlier, Uuid::new_v4());
    let proposed = match plan {
        ProposalPlan::Existing(proposed) => proposed,
        ProposalPlan::Fact { decision, fact } => {
            let issue = open_decision(conn, agent, &decision).await?;
            diesel::insert_into(persona_facts::table)
                .values((
                    persona_facts::id.eq(fact.id),
                    persona_facts::persona_id.eq(persona_id),
                    persona_facts::category.eq(fact.category.as_str()),
                    persona_facts::label.eq(&fact.label),
                    persona_facts::value.eq(&fact.value),
                    persona_facts::status.eq(fact.status.as_str()),
                    persona_facts::detail.eq(fact.detail.as_deref()),
                    persona_facts::post_id.eq(fact.post_id),
                    persona_facts::proposed_by_agent.eq(Some(agent.agent_id)),
                    persona_facts::decision_id.eq(Some(issue)),
                ))
                .execute(conn)
                .await?;
            fact.proposed(issue)
        }
        ProposalPlan::Contradiction { decision } => {
            contradiction_proposed(open_decision(conn, agent, &decision).await?)
        }
    };
    Ok(Ok(proposed))
}

impl PersonasRepo for PgStore {
    fn persona_of_slot(
        &self,
        agent: AgentRef,
        slot_id: Uuid,
    ) -> BoxFuture<'_, anyhow::Result<Option<PersonaHead>>> {
        self.read(async move |conn| {
            let row: Option<HeadRow> = sql!(
                PERSONA_OF_SLOT,
                slot_id,
                agent.workspace_id,
                PersonaStatus::Retired.as_str()
            )
            .get_result(conn)
            .await
            .optional()?;
            Ok(row.map(Into::into))
        })
    }

    fn org_personas<'a>(
        &'a self,
        organization: Option<Uuid>,
        query: &'a OrgPersonaQuery,
    ) -> BoxFuture<'a, anyhow::Result<fleetdesk_kernel::Page<PersonaSummary>>> {
        self.read(async move |conn| {
            let rows: Vec<OrgPersonaRow> = sql!(
                ORG_PERSONAS,
                organization,
                query.workspace,
                query.after.map(|a| Ts::from(a.0)),
                query.after.map(|a| a.1).unwrap_or_default(),
                query.limit + 1
            )
            .load(conn)
            .await?;
            let items = rows.into_iter().map(|r| r.persona().0).collect();
            Ok(fleetdesk_kernel::Page::probed(items, query.limit, |p| {
                (p.created_at, p.id)
            }))
        })
    }

    fn org_persona(
        &self,
        organization: Option<Uuid>,
        id: Uuid,
    ) -> BoxFuture<'_, anyhow::Result<Option<(PersonaSummary, PersonaHead)>>> {
        self.read(async move |conn| {
            let row: Option<OrgPersonaRow> = sql!(ORG_PERSONA, organization, id)
                .get_result(conn)
                .await
                .optional()?;
            Ok(row.map(OrgPersonaRow::persona))
        })
    }

    fn all_images(&self, persona_id: Uuid) -> BoxFuture<'_, anyhow::Result<Vec<ImageRow>>> {
        self.read(async move |conn| {
            let rows: Vec<ImageDbRow> = persona_images::table
                .filter(persona_images::persona_id.eq(persona_id))
                .order((persona_images::created_at, persona_images::id))
                .select(ImageDbRow::as_select())
                .load(conn)
                .await?;
            Ok(rows.into_iter().map(Into::into).collect())
        })
    }

    fn shown_images(
        &self,
        persona_id: Uuid,
        category: Option<ImageCategory>,
    ) -> BoxFuture<'_, anyhow::Result<Vec<ImageRow>>> {
        self.read(async move |conn| {
            let mut q = persona_images::table
                .filter(persona_images::persona_id.eq(persona_id))
                .filter(persona_images::lock.eq_any(ImageLock::texts(rules::image_visible)))
                .into_boxed();
            if let Some(c) = category {
                q = q.filter(persona_images::category.eq(c.as_str()));
            }
            let rows: Vec<ImageDbRow> = q
                .order((persona_images::created_at, persona_images::id))
                .select(ImageDbRow::as_select())
                .load(conn)
                .await?;
            Ok(rows.into_iter().map(Into::into).collect())
        })
    }

    fn facts(&self, persona_id: Uuid) -> BoxFuture<'_, anyhow::Result<Vec<Fact>>> {
        self.read(async move |conn| {
            let rows: Vec<FactRow> = persona_facts::table
                .filter(persona_facts::persona_id.eq(persona_id))
                .select(FactRow::as_select())
                .load(conn)
                .await?;
            Ok(rows.into_iter().map(Into::into).collect())
        })
    }

    fn cast(&self, persona_id: Uuid) -> BoxFuture<'_, anyhow::Result<Vec<CastRow>>> {
        self.read(async move |conn| {
            let rows: Vec<(String, String, Option<String>)> = persona_cast::table
                .filter(persona_cast::persona_id.eq(persona_id))
                .order(persona_cast::code)
                .select((
                    persona_cast::code,
                    persona_cast::name,
                    persona_cast::summary,
                ))
                .load(conn)
                .await?;
            let names: Vec<String> = rows.iter().map(|(_, name, _)| name.clone()).collect();
            let links = crate::wiki::character_links(conn, persona_id, &names).await?;
            Ok(rows
                .into_iter()
                .zip(links)
                .map(|((code, name, summary), wiki)| CastRow {
                    code,
                    name,
                    summary,
                    wiki,
                })
                .collect())
        })
    }

    fn recent_posts(
        &self,
        persona_id: Uuid,
        limit: i64,
    ) -> BoxFuture<'_, anyhow::Result<Vec<RecentPost>>> {
        self.read(async move |conn| {
            let rows: Vec<PostRow> = sql!(
                RECENT_POSTS,
                persona_id,
                fleetdesk_posts::post::PostStatus::Published.as_str(),
                limit
            )
            .load(conn)
            .await?;
            Ok(rows.into_iter().map(Into::into).collect())
        })
    }

    fn image_file(&self, image_id: Uuid) -> BoxFuture<'_, anyhow::Result<Option<ImageFile>>> {
        self.read(async move |conn| {
            let row: Option<FileRow> = persona_images::table
                .find(image_id)
                .select(FileRow::as_select())
                .get_result(conn)
                .await
                .optional()?;
            Ok(row.map(Into::into))
        })
    }

    fn image_of_sha<'a>(
        &'a self,
        persona_id: Uuid,
        sha256: &'a str,
    ) -> BoxFuture<'a, anyhow::Result<Option<AddedImage>>> {
        self.read(async move |conn| image_of_sha(conn, persona_id, sha256).await)
    }

    fn create_persona<'a>(
        &'a self,
        agent: AgentRef,
        persona: &'a NewPersona,
    ) -> BoxFuture<'a, anyhow::Result<Result<CreatedPersona, PersonaRefusal>>> {
        self.tx(async move |conn| create_tx(conn, agent, persona).await)
    }

    fn add_image<'a>(
        &'a self,
        agent: AgentRef,
        persona_id: Uuid,
        image: &'a NewImage,
    ) -> BoxFuture<'a, anyhow::Result<Result<AddedImage, PersonaRefusal>>> {
        self.tx(async move |conn| add_image_tx(conn, agent, persona_id, image).await)
    }

    fn propose<'a>(
        &'a self,
        agent: AgentRef,
        persona_id: Uuid,
        proposal: &'a Proposal,
    ) -> BoxFuture<'a, anyhow::Result<Result<Proposed, PersonaRefusal>>> {
        self.tx(async move |conn| propose_tx(conn, agent, persona_id, proposal).await)
    }
}
