//! Decisions: the inbox, each move with its effect in one transaction, follow-ups and their
//! task cards.

use crate::db::{PgStore, Ts, Tx};
use crate::rows::Stored;
use crate::schema::{
    account_generations, decisions, media, persona_facts, persona_images, personas, task_cards,
};
use diesel::dsl::now;
use diesel::pg::Pg;
use diesel::prelude::*;
use diesel_async::RunQueryDsl;
use fleetdesk_accounts::{AccountState, AccountSubject, LiveGeneration};
use fleetdesk_decisions::effects::{
    EffectFacts, FollowUpPersona, NewFollowUp, Parent, Write, plan_effect,
};
use fleetdesk_decisions::ports::*;
use fleetdesk_decisions::rules::{
    Current, DecisionRefusal, DonePlan, Effect, ImageRef, Plan, Whereabouts, follow_up_kinds,
    notes, plan, plan_done,
};
use fleetdesk_decisions::{DecisionKind, DecisionStatus, NewDecision, Opener};
use fleetdesk_kernel::persona::FactStatus;
use fleetdesk_kernel::{AgentRef, BoxFuture, Page, Platform};
use fleetdesk_personas::rules::DraftFact;
use fleetdesk_tasks::TaskStatus;
use serde_json::{Value, json};
use std::collections::HashMap;
use uuid::Uuid;

macro_rules! record_sql {
    ($($tail:expr),*) => {
        concat!(
            "SELECT d.id, d.workspace_id, w.name AS workspace_name, d.kind, d.status, d.title, \
                    d.question, d.options, d.persona_id, \
                    pe.name AS persona_name, s.code, s.platform, d.post_id, d.detail, d.task_id, \
                    d.opened_by_type, a.name AS opened_by_agent, d.opened_by_person, \
                    d.notes, d.result, d.evidence, d.created_at, d.updated_at, d.decided_by, \
                    d.decided_at \
             FROM decisions d \
             JOIN workspaces w ON w.id = d.workspace_id \
             LEFT JOIN personas pe ON pe.id = d.persona_id \
             LEFT JOIN account_slots s ON s.id = d.slot_id \
             LEFT JOIN agents a ON a.id = d.opened_by_agent ",
            $($tail),*
        )
    };
}

/// A page of an organization's decisions (every organization for `$1` null), newest first.
const LIST: &str = record_sql!(
    "WHERE ($1::uuid IS NULL OR d.organization_id = $1) AND d.status = ANY($2) \
       AND ($3::text IS NULL OR d.kind = $3) \
       AND ($4::timestamptz IS NULL OR (d.created_at, d.id) < ($4, $5)) \
     ORDER BY d.created_at DESC, d.id DESC \
     LIMIT $6"
);

const ONE: &str = record_sql!("WHERE d.id = $1");

/// An agent's open follow-ups: the persona, its first account (the post's for delete_post) and
/// the card's instruction.
const FOLLOW_UPS: &str = r#"
SELECT d.id, d.task_id, d.kind, d.title, d.persona_id, pe.name AS persona_name,
       COALESCE(ps.code, acc.code) AS code, COALESCE(ps.platform, acc.platform) AS platform,
       c.detail AS instruction
FROM decisions d
JOIN personas pe ON pe.id = d.persona_id
LEFT JOIN task_cards c ON c.id = d.task_id
LEFT JOIN posts p ON p.id = d.post_id
LEFT JOIN account_slots ps ON ps.id = p.slot_id
LEFT JOIN LATERAL (
    SELECT s.code, s.platform FROM account_slots s WHERE s.persona_id = pe.id
    ORDER BY s.created_at, s.code LIMIT 1
) acc ON true
WHERE d.workspace_id = $1 AND pe.agent_id = $2 AND d.status = $3 AND d.kind = ANY($4)
ORDER BY d.created_at, d.id
"#;

/// A decision's generation while it is live, locked, with its account as events name it.
const LIVE_GENERATION: &str = r#"
SELECT g.id, g.slot_id, g.generation, g.state, s.workspace_id, s.code, s.platform,
       pe.agent_id AS persona_agent
FROM account_generations g
JOIN account_slots s ON s.id = g.slot_id
JOIN personas pe ON pe.id = s.persona_id
WHERE g.id = $1 AND g.closed_at IS NULL
FOR UPDATE OF g
"#;

row! {
    struct LiveRow {
        id: Uuid,
        slot_id: Uuid,
        generation: i32,
        state: Stored<AccountState>,
        workspace_id: Uuid,
        code: String,
        platform: Stored<Platform>,
        persona_agent: Option<Uuid>,
    }
}

statements!(
    LIST => RecordRow,
    ONE => RecordRow,
    FOLLOW_UPS => FollowUpRow,
    LIVE_GENERATION => LiveRow,
);

row! {
    struct RecordRow {
        id: Uuid,
        workspace_id: Uuid,
        workspace_name: String,
        kind: Stored<DecisionKind>,
        status: Stored<DecisionStatus>,
        title: String,
        question: Option<String>,
        options: Value,
        persona_id: Option<Uuid>,
        persona_name: Option<String>,
        code: Option<String>,
        platform: Option<String>,
        post_id: Option<Uuid>,
        detail: Value,
        task_id: Option<Uuid>,
        opened_by_type: Stored<Opener>,
        opened_by_agent: Option<String>,
        opened_by_person: Option<String>,
        notes: Value,
        result: Option<String>,
        evidence: Value,
        created_at: Ts,
        updated_at: Ts,
        decided_by: Option<Value>,
        decided_at: Option<Ts>,
    }
}

selectable! {
    #[diesel(table_name = persona_images)]
    struct ImageRow into DecisionImage {
        id: Uuid,
        category: String,
        caption: Option<String>,
        character: Option<String>,
        lock: String,
    }
}

/// The records of `rows`, with the images of their `persona_images` decisions read at once.
async fn records(conn: Tx<'_>, rows: Vec<RecordRow>) -> anyhow::Result<Vec<DecisionRecord>> {
    let image_decisions: Vec<Uuid> = rows
        .iter()
        .filter(|r| r.kind.0 == DecisionKind::PersonaImages)
        .map(|r| r.id)
        .collect();
    let images: Vec<(Option<Uuid>, ImageRow)> = if image_decisions.is_empty() {
        Vec::new()
    } else {
        persona_images::table
            .filter(persona_images::decision_id.eq_any(&image_decisions))
            .order((persona_images::created_at, persona_images::id))
            .select((persona_images::decision_id, ImageRow::as_select()))
            .load(conn)
            .await?
    };
    let mut images_of: HashMap<Option<Uuid>, Vec<DecisionImage>> = HashMap::new();
    for (decision, image) in images {
        images_of.entry(decision).or_default().push(image.into());
    }
    Ok(rows
        .into_iter()
        .map(|r| {
            let opener = r.opened_by_type.0;
            DecisionRecord {
                images: images_of.remove(&Some(r.id)).unwrap_or_default(),
                id: r.id,
                kind: r.kind.0,
                status: r.status.0,
                title: r.title,
                question: r.question,
                options: r.options,
                workspace: (r.workspace_id, r.workspace_name),
                persona: r.persona_id.zip(r.persona_name),
                account: r.code.zip(r.platform),
                post_id: r.post_id,
                detail: r.detail,
                task_id: r.task_id,
                opened_by: (
                    opener.as_str().to_owned(),
                    opener.name(r.opened_by_agent, r.opened_by_person),
                ),
                notes: r.notes,
                result: r.result,
                evidence: r.evidence,
                created_at: r.created_at.into(),
                updated_at: r.updated_at.into(),
                decided_by: r.decided_by,
                decided_at: r.decided_at.map(Into::into),
            }
        })
        .collect())
}

async fn one(conn: Tx<'_>, id: Uuid) -> anyhow::Result<DecisionRecord> {
    let row: RecordRow = sql!(ONE, id).get_result(conn).await?;
    records(conn, vec![row])
        .await?
        .pop()
        .ok_or_else(|| anyhow::anyhow!("decision {id} read back"))
}

/// The decision as a move needs it, locked for the transaction.
#[derive(Queryable, Selectable)]
#[diesel(table_name = decisions, check_for_backend(Pg))]
struct Locked {
    id: Uuid,
    organization_id: Uuid,
    workspace_id: Uuid,
    kind: Stored<DecisionKind>,
    status: Stored<DecisionStatus>,
    persona_id: Option<Uuid>,
    generation_id: Option<Uuid>,
    options: Value,
    detail: Value,
    post_id: Option<Uuid>,
    task_id: Option<Uuid>,
    decided_move: Option<Value>,
    result: Option<String>,
    opened_by_agent: Option<Uuid>,
    title: String,
}

/// Locks decision `id` when `scope` may see it: an agent sees the decisions about its personas
/// and the `ad_change` decisions its proposals opened. Answers it with its persona's agent.
async fn lock(
    conn: Tx<'_>,
    scope: DecisionScope,
    id: Uuid,
) -> anyhow::Result<Option<(Locked, Option<Uuid>)>> {
    let Some(row) = decisions::table
        .filter(decisions::id.eq(id))
        .for_update()
        .select(Locked::as_select())
        .first(conn)
        .await
        .optional()?
    else {
        return Ok(None);
    };
    // Read for every scope: the decided event is told to the persona's agent.
    let persona_agent = match row.persona_id {
        Some(p) => Some(
            personas::table
                .filter(personas::id.eq(p))
                .select(personas::agent_id)
                .first::<Option<Uuid>>(conn)
                .await?,
        ),
        None => None,
    };
    let visible = scope.sees(&Whereabouts {
        organization_id: row.organization_id,
        workspace_id: row.workspace_id,
        kind: row.kind.0,
        persona_agent,
        opened_by_agent: row.opened_by_agent,
    });
    Ok(visible.then_some((row, persona_agent.flatten())))
}

async fn decide(
    conn: Tx<'_>,
    scope: DecisionScope,
    req: &MoveRequest,
) -> anyhow::Result<Result<Moved, DecisionRefusal>> {
    let Some((row, persona_agent)) = lock(conn, scope, req.id).await? else {
        return Ok(Err(DecisionRefusal::NotFound));
    };
    let k = row.kind.0;
    let images: Vec<ImageRef> = if k == DecisionKind::PersonaImages {
        persona_images::table
            .filter(persona_images::decision_id.eq(row.id))
            .select((persona_images::id, persona_images::category))
            .load::<(Uuid, String)>(conn)
            .await?
            .into_iter()
            .map(|(id, category)| ImageRef { id, category })
            .collect()
    } else {
        Vec::new()
    };
    // The follow-up's card, locked: a person's move finishes it only from where it may.
    let card: Option<(Stored<TaskStatus>, Option<Uuid>)> = match row.task_id {
        Some(task) => task_cards::table
            .filter(task_cards::id.eq(task))
            .for_update()
            .select((task_cards::status, task_cards::assignee_agent))
            .first(conn)
            .await
            .optional()?,
        None => None,
    };
    let current = Current {
        relayed_by_assignee: scope.relays_as_assignee(card.and_then(|(_, assignee)| assignee)),
        card: card.map(|(status, _)| status.0),
        relayed: matches!(scope, DecisionScope::Agent(_)),
        kind: k,
        status: row.status.0,
        options: serde_json::from_value(row.options.clone()).unwrap_or_default(),
        decided_move: row.decided_move.clone(),
        post_id: row.post_id,
        images,
    };
    let (new_status, effect) = match plan(&current, &req.mv) {
        Err(refusal) => return Ok(Err(refusal)),
        Ok(Plan::Unchanged) => {
            return Ok(Ok(Moved {
                decision: one(conn, row.id).await?,
                unchanged: true,
                follow_up: None,
            }));
        }
        Ok(Plan::Apply { status, effect }) => (status, effect),
    };
    let follow_up = match apply(conn, &row, &effect, req).await? {
        Ok(f) => f,
        Err(refusal) => return Ok(Err(refusal)),
    };
    // One clock for the move: the note's time is its decided_at.
    let at = Ts::from(req.now);
    let notes = req
        .note
        .as_deref()
        .map(|t| notes(&req.person, t, req.now))
        .unwrap_or_else(|| json!([]));
    diesel::update(decisions::table.filter(decisions::id.eq(row.id)))
        .set((
            decisions::status.eq(new_status.as_str()),
            decisions::decided_move.eq(req.mv.to_json()),
            decisions::decided_by.eq(req.decided_by.to_json()),
            decisions::decided_at.eq(at),
            decisions::updated_at.eq(at),
            decisions::notes.eq(decisions::notes.concat(notes)),
        ))
        .execute(conn)
        .await?;
    let event = req.mv.decided_event(
        row.id,
        row.workspace_id,
        (k, &row.title),
        new_status,
        (persona_agent, row.opened_by_agent),
    );
    crate::events::write(conn, &[event]).await?;
    Ok(Ok(Moved {
        decision: one(conn, row.id).await?,
        unchanged: false,
        follow_up,
    }))
}

/// Loads what a move's effect needs, plans its writes (`fleetdesk_decisions::effects`) and
/// writes them; a follow-up it opens is returned.
async fn apply(
    conn: Tx<'_>,
    row: &Locked,
    effect: &Effect,
    req: &MoveRequest,
) -> anyhow::Result<Result<Option<Uuid>, DecisionRefusal>> {
    let parent = Parent {
        id: row.id,
        organization_id: row.organization_id,
        workspace_id: row.workspace_id,
        persona_id: row.persona_id,
        post_id: row.post_id,
        task_id: row.task_id,
        detail: row.detail.clone(),
    };
    let facts = effect_facts(conn, row, effect).await?;
    let writes = match plan_effect(effect, &parent, facts) {
        Ok(writes) => writes,
        Err(refusal) => return Ok(Err(refusal)),
    };
    let at = Ts::from(req.now);
    let mut follow_up = None;
    for write in writes {
        match write {
            Write::Generation(r) => {
                diesel::update(
                    account_generations::table.filter(account_generations::id.eq(r.close)),
                )
                .set((
                    account_generations::closed_at.eq(at),
                    account_generations::state.eq(r.closed_as.as_str()),
                ))
                .execute(conn)
                .await?;
                diesel::insert_into(account_generations::table)
                    .values((
                        account_generations::slot_id.eq(r.slot_id),
                        account_generations::generation.eq(r.next),
                        account_generations::state.eq(r.opens_as.as_str()),
                    ))
                    .execute(conn)
                    .await?;
                crate::events::write(conn, &[r.event]).await?;
            }
            Write::Persona(u) => {
                let target = personas::table.filter(personas::id.eq(u.persona_id));
                if u.retire {
                    diesel::update(target)
                        .set((
                            personas::status.eq(u.status.as_str()),
                            personas::retired_at.eq(at),
                            personas::agent_id.eq(None::<Uuid>),
                        ))
                        .execute(conn)
                        .await?;
                } else {
                    diesel::update(target)
                        .set(personas::status.eq(u.status.as_str()))
                        .execute(conn)
                        .await?;
                }
            }
            Write::Fact(d) => {
                personas::table
                    .filter(personas::id.eq(d.fact.persona_id))
                    .for_no_key_update()
                    .select(personas::id)
                    .first::<Uuid>(conn)
                    .await?;
                diesel::update(
                    persona_facts::table
                        .filter(persona_facts::persona_id.eq(d.fact.persona_id))
                        .filter(persona_facts::category.eq(&d.fact.category))
                        .filter(persona_facts::label.eq(&d.fact.label))
                        .filter(persona_facts::status.eq(d.replaces.as_str())),
                )
                .set(persona_facts::status.eq(d.replaced_as.as_str()))
                .execute(conn)
                .await?;
                diesel::update(persona_facts::table.filter(persona_facts::id.eq(d.fact.id)))
                    .set((
                        persona_facts::status.eq(d.decided_as.as_str()),
                        persona_facts::decided_at.eq(at),
                    ))
                    .execute(conn)
                    .await?;
            }
            Write::RefuseFacts(from, to) => {
                diesel::update(
                    persona_facts::table
                        .filter(persona_facts::decision_id.eq(row.id))
                        .filter(persona_facts::status.eq(from.as_str())),
                )
                .set((
                    persona_facts::status.eq(to.as_str()),
                    persona_facts::decided_at.eq(at),
                ))
                .execute(conn)
                .await?;
            }
            Write::ImageLocks(locks) => {
                for (lock, ids) in locks {
                    diesel::update(
                        persona_images::table
                            .filter(persona_images::decision_id.eq(row.id))
                            .filter(persona_images::id.eq_any(ids)),
                    )
                    .set((
                        persona_images::lock.eq(lock.as_str()),
                        persona_images::decided_at.eq(at),
                    ))
                    .execute(conn)
                    .await?;
                }
            }
            Write::FollowUp(f) => {
                follow_up = Some(open_follow_up(conn, &f, &req.person).await?);
            }
            Write::FinishCard { task, to, from } => {
                let from: Vec<&str> = from.iter().map(|s| s.as_str()).collect();
                diesel::update(
                    task_cards::table
                        .filter(task_cards::id.eq(task))
                        .filter(task_cards::status.eq_any(from)),
                )
                .set((
                    task_cards::status.eq(to.as_str()),
                    task_cards::finished_at.eq(at),
                    task_cards::updated_at.eq(at),
                ))
                .execute(conn)
                .await?;
            }
            Write::AdChange { approve: true } => {
                if let Err(refusal) = crate::ad_changes::approve_change(
                    conn,
                    row.id,
                    &req.decided_by.to_json(),
                    req.now,
                )
                .await?
                {
                    return Ok(Err(DecisionRefusal::AdChangeRefused(refusal)));
                }
            }
            Write::AdChange { approve: false } => {
                crate::ad_changes::refuse_change(conn, row.id, &req.decided_by.to_json(), req.now)
                    .await?;
            }
            Write::Wiki { canonize } => {
                if let Err(refusal) =
                    crate::wiki::decide_draft(conn, row.id, row.workspace_id, canonize, req.now)
                        .await?
                {
                    return Ok(Err(refusal));
                }
            }
        }
    }
    Ok(Ok(follow_up))
}

/// What `effect` needs loaded: the live generation it replaces, the persona a follow-up is
/// for, the draft fact it decides.
async fn effect_facts(conn: Tx<'_>, row: &Locked, effect: &Effect) -> anyhow::Result<EffectFacts> {
    let mut facts = EffectFacts::default();
    match effect {
        Effect::OpenGeneration => {
            if let Some(generation_id) = row.generation_id {
                let live: Option<LiveRow> = sql!(LIVE_GENERATION, generation_id)
                    .get_result(conn)
                    .await
                    .optional()?;
                facts.generation = live.map(|g| LiveGeneration {
                    id: g.id,
                    slot_id: g.slot_id,
                    generation: g.generation,
                    state: g.state.0,
                    account: AccountSubject {
                        workspace_id: g.workspace_id,
                        slot_id: g.slot_id,
                        code: g.code,
                        platform: g.platform.0,
                        persona_agent: g.persona_agent,
                    },
                });
            }
        }
        Effect::OpenFollowUp { .. }
        | Effect::Images {
            avatar: Some(_), ..
        } => {
            let persona_id = row
                .persona_id
                .ok_or_else(|| anyhow::anyhow!("decision {} has no persona", row.id))?;
            let (name, agent): (String, Option<Uuid>) = personas::table
                .filter(personas::id.eq(persona_id))
                .select((personas::name, personas::agent_id))
                .first(conn)
                .await?;
            facts.persona = Some(FollowUpPersona {
                id: persona_id,
                name,
                agent,
            });
        }
        Effect::DecideFact => {
            facts.draft_fact = persona_facts::table
                .filter(persona_facts::decision_id.eq(row.id))
                .filter(persona_facts::status.eq(FactStatus::Draft.as_str()))
                .select((
                    persona_facts::id,
                    persona_facts::persona_id,
                    persona_facts::category,
                    persona_facts::label,
                ))
                .first::<(Uuid, Uuid, String, String)>(conn)
                .await
                .optional()?
                .map(|(id, persona_id, category, label)| DraftFact {
                    id,
                    persona_id,
                    category,
                    label,
                });
        }
        _ => {}
    }
    Ok(facts)
}

/// Opens a planned follow-up: the decision, then its task card, linked both ways.
async fn open_follow_up(conn: Tx<'_>, f: &NewFollowUp, person: &str) -> anyhow::Result<Uuid> {
    let id: Uuid = diesel::insert_into(decisions::table)
        .values((
            decisions::organization_id.eq(f.organization_id),
            decisions::workspace_id.eq(f.workspace_id),
            decisions::kind.eq(f.kind.as_str()),
            decisions::persona_id.eq(f.persona_id),
            decisions::title.eq(&f.title),
            decisions::options.eq(json!([])),
            decisions::detail.eq(&f.detail),
            decisions::opened_by_type.eq(f.opened_by.as_str()),
            decisions::opened_by_person.eq(person),
            decisions::parent_id.eq(f.parent),
            decisions::post_id.eq(f.post_id),
        ))
        .returning(decisions::id)
        .get_result(conn)
        .await?;
    let card = &f.card;
    let task: Uuid = diesel::insert_into(task_cards::table)
        .values((
            task_cards::organization_id.eq(f.organization_id),
            task_cards::workspace_id.eq(f.workspace_id),
            task_cards::persona_id.eq(f.persona_id),
            task_cards::kind.eq(card.kind.as_str()),
            task_cards::title.eq(&f.title),
            task_cards::detail.eq(&card.instruction),
            task_cards::status.eq(card.status.as_str()),
            task_cards::target_type.eq(card.target_type.as_str()),
            task_cards::target_id.eq(card.target_id),
            task_cards::assignee_agent.eq(card.assignee),
            task_cards::opened_by_type.eq(f.opened_by.as_str()),
            task_cards::opened_by_name.eq(person),
            task_cards::decision_id.eq(id),
        ))
        .returning(task_cards::id)
        .get_result(conn)
        .await?;
    diesel::update(decisions::table.filter(decisions::id.eq(id)))
        .set(decisions::task_id.eq(task))
        .execute(conn)
        .await?;
    Ok(id)
}

async fn complete(
    conn: Tx<'_>,
    agent: AgentRef,
    report: &DoneReport,
) -> anyhow::Result<Result<Moved, DecisionRefusal>> {
    let Some((row, _)) = lock(conn, DecisionScope::Agent(agent), report.id).await? else {
        return Ok(Err(DecisionRefusal::NotFound));
    };
    let planned = plan_done(
        row.kind.0,
        row.status.0,
        row.result.as_deref(),
        &report.result,
    );
    match planned {
        Err(refusal) => return Ok(Err(refusal)),
        Ok(DonePlan::Unchanged) => {
            return Ok(Ok(Moved {
                decision: one(conn, row.id).await?,
                unchanged: true,
                follow_up: None,
            }));
        }
        Ok(DonePlan::Handle) => {}
    }
    if !report.asset_ids.is_empty() {
        let seen: Vec<Uuid> = media::table
            .filter(media::id.eq_any(&report.asset_ids))
            .filter(media::workspace_id.eq(row.workspace_id))
            .filter(media::archived_at.is_null())
            .select(media::id)
            .load(conn)
            .await?;
        if let Some(missing) = report.asset_ids.iter().find(|id| !seen.contains(id)) {
            return Ok(Err(DecisionRefusal::UnknownAsset(*missing)));
        }
    }
    diesel::update(decisions::table.filter(decisions::id.eq(row.id)))
        .set((
            decisions::status.eq(DecisionStatus::Handled.as_str()),
            decisions::result.eq(&report.result),
            decisions::evidence.eq(&report.evidence),
            decisions::handled_at.eq(now),
            decisions::updated_at.eq(now),
        ))
        .execute(conn)
        .await?;
    if let Some(task) = row.task_id {
        // Only an open card moves: a failed or cancelled one stays as it ended.
        diesel::update(
            task_cards::table
                .filter(task_cards::id.eq(task))
                .filter(task_cards::status.eq_any(TaskStatus::open_texts())),
        )
        .set((
            task_cards::status.eq(TaskStatus::PendingConfirmation.as_str()),
            task_cards::result.eq(&report.result),
            task_cards::evidence.eq(&report.evidence),
            task_cards::confirmation_since.eq(now),
            task_cards::last_progress_at.eq(now),
            task_cards::updated_at.eq(now),
        ))
        .execute(conn)
        .await?;
    }
    Ok(Ok(Moved {
        decision: one(conn, row.id).await?,
        unchanged: false,
        follow_up: None,
    }))
}

row! {
    struct FollowUpRow {
        id: Uuid,
        task_id: Option<Uuid>,
        kind: Stored<DecisionKind>,
        title: String,
        persona_id: Option<Uuid>,
        persona_name: Option<String>,
        code: Option<String>,
        platform: Option<String>,
        instruction: Option<String>,
    }
}

/// The values of a [`NewDecision`] the agent opens (a macro: the tuple's type is diesel's to
/// name).
macro_rules! new_decision_values {
    ($agent:expr, $d:expr) => {
        (
            decisions::organization_id.eq($agent.organization_id),
            decisions::workspace_id.eq($agent.workspace_id),
            decisions::kind.eq($d.kind.as_str()),
            decisions::status.eq($d.status().as_str()),
            decisions::persona_id.eq($d.persona_id),
            decisions::title.eq(&$d.title),
            decisions::question.eq(&$d.question),
            decisions::options.eq(&$d.options),
            decisions::detail.eq(&$d.detail),
            decisions::post_id.eq($d.post_id),
            decisions::opened_by_type.eq(Opener::Agent.as_str()),
            decisions::opened_by_agent.eq(Some($agent.agent_id)),
        )
    };
}

/// Opens the decision an agent's use case planned, with its event; answers its id.
pub(crate) async fn open_decision(
    conn: Tx<'_>,
    agent: AgentRef,
    d: &NewDecision,
) -> anyhow::Result<Uuid> {
    let id = diesel::insert_into(decisions::table)
        .values(new_decision_values!(agent, d))
        .returning(decisions::id)
        .get_result(conn)
        .await?;
    crate::events::write(conn, &[d.opened(id, agent)]).await?;
    Ok(id)
}

/// Opens it unless a unique index admits only one open (a persona's images decision): `None`
/// when one is open already.
pub(crate) async fn open_decision_once(
    conn: Tx<'_>,
    agent: AgentRef,
    d: &NewDecision,
) -> anyhow::Result<Option<Uuid>> {
    let id = diesel::insert_into(decisions::table)
        .values(new_decision_values!(agent, d))
        .on_conflict_do_nothing()
        .returning(decisions::id)
        .get_result(conn)
        .await
        .optional()?;
    if let Some(id) = id {
        crate::events::write(conn, &[d.opened(id, agent)]).await?;
    }
    Ok(id)
}

impl DecisionsRepo for PgStore {
    fn list<'a>(
        &'a self,
        organization: Option<Uuid>,
        query: &'a ListQuery,
    ) -> BoxFuture<'a, anyhow::Result<Page<DecisionRecord>>> {
        self.read(async move |conn| {
            let statuses: Vec<&str> = query.statuses.iter().map(|s| s.as_str()).collect();
            let rows: Vec<RecordRow> = sql!(
                LIST,
                organization,
                statuses,
                query.kind.map(|k| k.as_str()),
                query.after.map(|a| Ts::from(a.0)),
                query.after.map(|a| a.1).unwrap_or_default(),
                query.limit + 1
            )
            .load(conn)
            .await?;
            let items = records(conn, rows).await?;
            Ok(Page::probed(items, query.limit, |d| (d.created_at, d.id)))
        })
    }

    fn decide<'a>(
        &'a self,
        scope: DecisionScope,
        request: &'a MoveRequest,
    ) -> BoxFuture<'a, anyhow::Result<Result<Moved, DecisionRefusal>>> {
        self.tx(async move |conn| decide(conn, scope, request).await)
    }

    fn complete<'a>(
        &'a self,
        agent: AgentRef,
        report: &'a DoneReport,
    ) -> BoxFuture<'a, anyhow::Result<Result<Moved, DecisionRefusal>>> {
        self.tx(async move |conn| complete(conn, agent, report).await)
    }

    fn follow_ups(&self, agent: AgentRef) -> BoxFuture<'_, anyhow::Result<Vec<FollowUp>>> {
        self.read(async move |conn| {
            let rows: Vec<FollowUpRow> = sql!(
                FOLLOW_UPS,
                agent.workspace_id,
                agent.agent_id,
                DecisionStatus::Open.as_str(),
                follow_up_kinds()
            )
            .load(conn)
            .await?;
            Ok(rows
                .into_iter()
                .map(|r| FollowUp {
                    id: r.id,
                    task_id: r.task_id,
                    kind: r.kind.0,
                    title: r.title,
                    persona: r.persona_id.zip(r.persona_name),
                    account: r.code.zip(r.platform),
                    instruction: r.instruction,
                })
                .collect())
        })
    }
}
