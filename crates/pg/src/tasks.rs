//! Task cards: lists, opening (or joining the open card of the same kind on the same target),
//! and every move in one transaction that locks the card, with a follow-up's decision.

use crate::accounts::{SlotCodes, pick_slot};
use crate::db::{PgStore, Ts, Tx};
use crate::rows::Stored;
use crate::schema::{agents, decisions, media, personas, task_cards};
use diesel::dsl::now;
use diesel::prelude::*;
use diesel_async::RunQueryDsl;
use fleetdesk_decisions::effects::card_moved;
use fleetdesk_kernel::decision::DecidedBy;
use fleetdesk_kernel::persona::PersonaStatus;
use fleetdesk_kernel::{AgentRef, BoxFuture, Page, Platform};
use fleetdesk_tasks::plan::{
    AccountFact, AgentFact, CardFacts, CardWrite, FollowUpWrite, MoveOutcome, MovePlan,
    OpenCardFact, OwnerFact, TargetFacts, joins, place, plan_move, plan_open,
};
use fleetdesk_tasks::ports::*;
use fleetdesk_tasks::rules::{Card, Move, TaskRefusal, also_wanted};
use fleetdesk_tasks::{TargetType, TaskKind, TaskStatus};
use fleetdesk_tenancy::{AgentRole, Scope};
use serde_json::Value;
use uuid::Uuid;

/// A card's record; `$notes` is the notes it carries (`"c.notes"`: all; [`latest_notes!`]: the
/// latest few).
macro_rules! record_sql {
    (notes: $notes:expr, $($tail:expr),*) => {
        concat!(
            "SELECT c.id, c.kind, c.title, c.detail, c.status, c.target_type, c.target_code, \
                    c.target_id, c.persona_id, pe.name AS persona_name, c.assignee_agent, \
                    ag.name AS assignee_name, c.opened_by_type, c.opened_by_name, \
                    c.also_wanted_by, c.due_at, ", $notes, " AS notes, \
                    jsonb_array_length(c.notes)::bigint AS notes_count, c.result, c.evidence, \
                    c.decision_id, c.last_progress_at, c.confirmation_since, c.created_at, \
                    c.updated_at, c.finished_at \
             FROM task_cards c \
             LEFT JOIN personas pe ON pe.id = c.persona_id \
             LEFT JOIN agents ag ON ag.id = c.assignee_agent ",
            $($tail),*
        )
    };
}

/// A page of an organization's cards (every organization for `$1` null), newest first.
const LIST_ORG: &str = record_sql!(
    notes: latest_notes!("c.notes", "$7"),
    "WHERE ($1::uuid IS NULL OR c.organization_id = $1) AND c.status = ANY($2) \
       AND ($3::text IS NULL OR c.kind = $3) \
       AND ($4::timestamptz IS NULL OR (c.created_at, c.id) < ($4, $5)) \
     ORDER BY c.created_at DESC, c.id DESC \
     LIMIT $6"
);

/// A page of an agent's cards: assigned to it, or unassigned on its personas; newest first.
const LIST_AGENT: &str = record_sql!(
    notes: latest_notes!("c.notes", "$8"),
    "WHERE c.workspace_id = $1 \
       AND (c.assignee_agent = $7 OR (c.assignee_agent IS NULL AND pe.agent_id = $7)) \
       AND c.status = ANY($2) AND ($3::text IS NULL OR c.kind = $3) \
       AND ($4::timestamptz IS NULL OR (c.created_at, c.id) < ($4, $5)) \
     ORDER BY c.created_at DESC, c.id DESC \
     LIMIT $6"
);

/// An agent's open cards, oldest first.
const OPEN_CARDS: &str = record_sql!(
    notes: latest_notes!("c.notes", "$5"),
    "WHERE c.workspace_id = $1 \
       AND (c.assignee_agent = $2 OR (c.assignee_agent IS NULL AND pe.agent_id = $2)) \
       AND c.status = ANY($3) \
     ORDER BY c.created_at, c.id \
     LIMIT $4"
);

const ONE: &str = record_sql!(notes: "c.notes", "WHERE c.id = $1");

/// A card of an organization (any for `$2` null), with all its notes.
const ONE_OF_ORG: &str = record_sql!(
    notes: "c.notes",
    "WHERE c.id = $1 AND ($2::uuid IS NULL OR c.organization_id = $2)"
);

/// A card of an agent's (assigned to it, or unassigned on its personas), with all its notes.
const ONE_OF_AGENT: &str = record_sql!(
    notes: "c.notes",
    "WHERE c.id = $1 AND c.workspace_id = $2 \
       AND (c.assignee_agent = $3 OR (c.assignee_agent IS NULL AND pe.agent_id = $3))"
);

/// The card a move needs, locked, with the agent of its persona.
const LOCK: &str = r#"
SELECT c.id, c.organization_id, c.workspace_id, c.status, c.assignee_agent, c.result,
       c.fail_reason, c.decision_id, pe.agent_id AS persona_agent, c.kind, c.title
FROM task_cards c
LEFT JOIN personas pe ON pe.id = c.persona_id
WHERE c.id = $1
FOR UPDATE OF c
"#;

/// The accounts a target code may name: in the agent's workspace (`$1`) or the person's
/// organization (`$3`; both null for a platform admin outside any), with their persona.
const TARGET_SLOTS: &str = r#"
SELECT s.id AS slot_id, s.code, s.legacy_code, s.platform,
       COALESCE($2::uuid IS NULL OR p.agent_id = $2, false) AS mine,
       s.persona_id, s.workspace_id, w.organization_id, s.timezone
FROM account_slots s
JOIN personas p ON p.id = s.persona_id
JOIN workspaces w ON w.id = s.workspace_id
WHERE ($1::uuid IS NULL OR s.workspace_id = $1) AND ($3::uuid IS NULL OR w.organization_id = $3)
  AND (s.code = $4 OR s.legacy_code = $4) AND ($5::text IS NULL OR s.platform = $5)
  AND p.status <> $6
"#;

/// A post target: its account's persona (not retired, `$2`) and zone.
const TARGET_POST: &str = r#"
SELECT p.persona_id, pe.agent_id AS persona_agent, p.workspace_id, p.organization_id,
       s.timezone AS zone
FROM posts p
JOIN account_slots s ON s.id = p.slot_id
JOIN personas pe ON pe.id = p.persona_id
WHERE p.id = $1 AND pe.status <> $2
"#;

/// A decision target: its persona (not retired, `$2`) and the zone of its account (or the
/// persona's first).
const TARGET_ISSUE: &str = r#"
SELECT d.persona_id, pe.agent_id AS persona_agent, d.workspace_id, d.organization_id,
       COALESCE(s.timezone, first.timezone) AS zone
FROM decisions d
LEFT JOIN personas pe ON pe.id = d.persona_id
LEFT JOIN account_slots s ON s.id = d.slot_id
LEFT JOIN LATERAL (
    SELECT f.timezone FROM account_slots f WHERE f.persona_id = d.persona_id
    ORDER BY f.created_at, f.code LIMIT 1
) first ON true
WHERE d.id = $1 AND (pe.id IS NULL OR pe.status <> $2)
"#;

/// The open cards of the same kind on the same target, oldest first, locked: the one a
/// request joins is [`joins`]'s choice.
const SAME_OPEN: &str = r#"
SELECT c.id, c.opened_by_agent, c.assignee_agent AS assignee, c.opened_by_name,
       c.also_wanted_by
FROM task_cards c
WHERE c.persona_id = $1 AND c.kind = $2 AND c.target_type = $3 AND c.target_id = $4
  AND c.status = ANY($5)
ORDER BY c.created_at, c.id
FOR UPDATE
"#;

statements!(
    LIST_ORG => RecordRow,
    LIST_AGENT => RecordRow,
    OPEN_CARDS => RecordRow,
    ONE => RecordRow,
    ONE_OF_ORG => RecordRow,
    ONE_OF_AGENT => RecordRow,
    LOCK => LockedRow,
    TARGET_SLOTS => SlotRow,
    TARGET_POST => OwnerRow,
    TARGET_ISSUE => OwnerRow,
    SAME_OPEN => SameRow,
);

row! {
    struct RecordRow {
        id: Uuid,
        kind: Stored<TaskKind>,
        title: String,
        detail: Option<String>,
        status: Stored<TaskStatus>,
        target_type: Stored<TargetType>,
        target_code: Option<String>,
        target_id: Option<Uuid>,
        persona_id: Option<Uuid>,
        persona_name: Option<String>,
        assignee_agent: Option<Uuid>,
        assignee_name: Option<String>,
        opened_by_type: String,
        opened_by_name: String,
        also_wanted_by: Vec<String>,
        due_at: Option<Ts>,
        notes: Value,
        notes_count: i64,
        result: Option<String>,
        evidence: Value,
        decision_id: Option<Uuid>,
        last_progress_at: Option<Ts>,
        confirmation_since: Option<Ts>,
        created_at: Ts,
        updated_at: Ts,
        finished_at: Option<Ts>,
    }
}

fn record(r: RecordRow) -> TaskRecord {
    TaskRecord {
        id: r.id,
        kind: r.kind.0,
        title: r.title,
        detail: r.detail,
        status: r.status.0,
        target_type: r.target_type.0,
        target_code: r.target_code,
        target_id: r.target_id,
        persona: r.persona_id.zip(r.persona_name),
        assignee: r.assignee_agent.zip(r.assignee_name),
        opened_by: (r.opened_by_type, r.opened_by_name),
        also_wanted_by: r.also_wanted_by,
        due_at: r.due_at.map(Into::into),
        notes: r.notes,
        notes_count: r.notes_count,
        result: r.result,
        evidence: r.evidence,
        decision_id: r.decision_id,
        last_progress_at: r.last_progress_at.map(Into::into),
        confirmation_since: r.confirmation_since.map(Into::into),
        created_at: r.created_at.into(),
        updated_at: r.updated_at.into(),
        finished_at: r.finished_at.map(Into::into),
    }
}

async fn one(conn: Tx<'_>, id: Uuid) -> anyhow::Result<TaskRecord> {
    let row: RecordRow = sql!(ONE, id).get_result(conn).await?;
    Ok(record(row))
}

// ---------------------------------------------------------------------------------------------
// Opening

row! {
    struct SlotRow {
        #[diesel(embed)]
        slot: SlotCodes,
        persona_id: Uuid,
        workspace_id: Uuid,
        organization_id: Uuid,
        timezone: String,
    }
}

row! {
    struct OwnerRow into OwnerFact {
        persona_id: Option<Uuid>,
        persona_agent: Option<Uuid>,
        workspace_id: Uuid,
        organization_id: Uuid,
        zone: Option<String>,
    }
}

/// What the target names, loaded for the opener: the accounts its code names (in the agent's
/// workspace or the person's organization), or a post's or decision's owner.
async fn target_facts(
    conn: Tx<'_>,
    opener: &Opener,
    target: &TargetRef,
) -> anyhow::Result<TargetFacts> {
    let (workspace, agent, organization) = match opener {
        Opener::Agent { agent, .. } => (Some(agent.workspace_id), Some(agent.agent_id), None),
        Opener::Person { organization, .. } => (None, None, *organization),
    };
    match target {
        TargetRef::Slot { code, platform } | TargetRef::Persona { code, platform } => {
            let rows: Vec<SlotRow> = sql!(
                TARGET_SLOTS,
                workspace,
                agent,
                organization,
                code.as_str(),
                platform.map(Platform::as_str),
                PersonaStatus::Retired.as_str()
            )
            .load(conn)
            .await?;
            let several_organizations = rows
                .iter()
                .any(|r| r.organization_id != rows[0].organization_id);
            let chosen =
                pick_slot(rows, code.as_str(), *platform, |r| &r.slot).map(|r| AccountFact {
                    slot_id: r.slot.slot_id,
                    code: r.slot.code,
                    persona_id: r.persona_id,
                    workspace_id: r.workspace_id,
                    organization_id: r.organization_id,
                    zone: r.timezone,
                });
            Ok(TargetFacts::Account {
                chosen,
                several_organizations,
            })
        }
        TargetRef::Post(id) | TargetRef::Issue(id) => {
            let sql = if matches!(target, TargetRef::Post(_)) {
                TARGET_POST
            } else {
                TARGET_ISSUE
            };
            let row: Option<OwnerRow> = sql!(sql, *id, PersonaStatus::Retired.as_str())
                .get_result(conn)
                .await
                .optional()?;
            Ok(TargetFacts::Owner(row.map(Into::into)))
        }
    }
}

/// The agent a person's `assign` names in the workspace (by name or id), and whether its role
/// works cards.
async fn named_agent(
    conn: Tx<'_>,
    workspace: Uuid,
    who: &str,
) -> anyhow::Result<Option<AgentFact>> {
    let as_id = who.parse::<Uuid>().ok();
    let found: Option<(Uuid, Stored<AgentRole>)> = agents::table
        .filter(agents::workspace_id.eq(workspace))
        .filter(agents::name.eq(who).or(agents::id.nullable().eq(as_id)))
        .select((agents::id, agents::role))
        .first(conn)
        .await
        .optional()?;
    Ok(found.map(|(id, role)| AgentFact {
        id,
        works_cards: role.0.has(Scope::TasksWrite),
    }))
}

row! {
    struct SameRow into OpenCardFact {
        id: Uuid,
        opened_by_agent: Option<Uuid>,
        assignee: Option<Uuid>,
        opened_by_name: String,
        also_wanted_by: Vec<String>,
    }
}

async fn open(
    conn: Tx<'_>,
    opener: &Opener,
    req: &OpenRequest,
) -> anyhow::Result<Result<Opened, TaskRefusal>> {
    let facts = target_facts(conn, opener, &req.target).await?;
    let placed = match place(opener, &req.target, facts) {
        Ok(p) => p,
        Err(refusal) => return Ok(Err(refusal)),
    };
    // Two requests for the same matter at once: the second waits and joins the first.
    let persona_agent: Option<Uuid> = personas::table
        .filter(personas::id.eq(placed.persona_id))
        .for_no_key_update()
        .select(personas::agent_id)
        .first(conn)
        .await?;
    let named = match opener {
        Opener::Person {
            assign: Some(who), ..
        } => named_agent(conn, placed.workspace_id, who).await?,
        _ => None,
    };
    let card = match plan_open(opener, req, placed, named) {
        Ok(card) => card,
        Err(refusal) => return Ok(Err(refusal)),
    };
    let open: Vec<SameRow> = sql!(
        SAME_OPEN,
        card.placed.persona_id,
        card.kind.as_str(),
        card.target_type.as_str(),
        card.placed.target_id,
        TaskStatus::open_texts()
    )
    .load(conn)
    .await?;
    let open: Vec<OpenCardFact> = open.into_iter().map(Into::into).collect();
    if let Some(same) = joins(opener, card.assignee, &open) {
        if let Some(all) = also_wanted(&same.opened_by_name, &same.also_wanted_by, &req.requester) {
            diesel::update(task_cards::table.filter(task_cards::id.eq(same.id)))
                .set((
                    task_cards::also_wanted_by.eq(all),
                    task_cards::updated_at.eq(now),
                ))
                .execute(conn)
                .await?;
        }
        return Ok(Ok(Opened {
            card: one(conn, same.id).await?,
            created: false,
        }));
    }
    let id: Uuid = diesel::insert_into(task_cards::table)
        .values((
            task_cards::organization_id.eq(card.placed.organization_id),
            task_cards::workspace_id.eq(card.placed.workspace_id),
            task_cards::persona_id.eq(card.placed.persona_id),
            task_cards::kind.eq(card.kind.as_str()),
            task_cards::title.eq(card.title),
            task_cards::detail.eq(card.detail),
            task_cards::status.eq(card.status.as_str()),
            task_cards::target_type.eq(card.target_type.as_str()),
            task_cards::target_code.eq(&card.placed.target_code),
            task_cards::target_id.eq(card.placed.target_id),
            task_cards::assignee_agent.eq(card.assignee),
            task_cards::opened_by_type.eq(card.opened_by_type),
            task_cards::opened_by_name.eq(card.opened_by_name),
            task_cards::opened_by_agent.eq(card.opened_by_agent),
            task_cards::due_at.eq(card.due_at.map(Ts::from)),
            task_cards::origin.eq(card.origin),
        ))
        .returning(task_cards::id)
        .get_result(conn)
        .await?;
    crate::events::write(conn, &[card.opened(id, persona_agent)]).await?;
    Ok(Ok(Opened {
        card: one(conn, id).await?,
        created: true,
    }))
}

// ---------------------------------------------------------------------------------------------
// Moves

row! {
    struct LockedRow {
        id: Uuid,
        organization_id: Uuid,
        workspace_id: Uuid,
        status: Stored<TaskStatus>,
        assignee_agent: Option<Uuid>,
        result: Option<String>,
        fail_reason: Option<String>,
        decision_id: Option<Uuid>,
        persona_agent: Option<Uuid>,
        kind: Stored<TaskKind>,
        title: String,
    }
}

async fn act(
    conn: Tx<'_>,
    actor: &Actor,
    req: &MoveRequest,
) -> anyhow::Result<Result<Moved, TaskRefusal>> {
    // One lock order with the decision moves (decide, complete): a follow-up's decision
    // first, then its card. A card's decision_id is set when it is opened and never changes.
    let decision: Option<Option<Uuid>> = task_cards::table
        .filter(task_cards::id.eq(req.id))
        .select(task_cards::decision_id)
        .first(conn)
        .await
        .optional()?;
    let Some(decision) = decision else {
        return Ok(Err(TaskRefusal::NotFound));
    };
    if let Some(d) = decision {
        decisions::table
            .filter(decisions::id.eq(d))
            .for_update()
            .select(decisions::id)
            .first::<Uuid>(conn)
            .await
            .optional()?;
    }
    let row: Option<LockedRow> = sql!(LOCK, req.id).get_result(conn).await.optional()?;
    let Some(row) = row else {
        return Ok(Err(TaskRefusal::NotFound));
    };
    anyhow::ensure!(
        row.decision_id == decision,
        "card {} changed its decision while being moved",
        row.id
    );
    let facts = CardFacts {
        organization_id: row.organization_id,
        workspace_id: row.workspace_id,
        card: Card {
            status: row.status.0,
            assignee: row.assignee_agent,
            persona_agent: row.persona_agent,
            result: row.result,
            fail_reason: row.fail_reason,
            follow_up: row.decision_id.is_some(),
        },
        kind: row.kind.0,
        title: row.title,
        decision_id: row.decision_id,
    };
    let known_assets: Vec<Uuid> =
        if matches!(req.mv, Move::Finish { .. }) && !req.asset_ids.is_empty() {
            media::table
                .filter(media::id.eq_any(&req.asset_ids))
                .filter(media::workspace_id.eq(row.workspace_id))
                .filter(media::archived_at.is_null())
                .select(media::id)
                .load(conn)
                .await?
        } else {
            Vec::new()
        };
    let plan = match plan_move(actor, req, &facts, &known_assets) {
        Err(refusal) => return Ok(Err(refusal)),
        Ok(MoveOutcome::Unchanged) => {
            return Ok(Ok(Moved {
                card: one(conn, row.id).await?,
                unchanged: true,
            }));
        }
        Ok(MoveOutcome::Apply(plan)) => plan,
    };
    write_move(conn, row.id, &plan, req.now).await?;
    Ok(Ok(Moved {
        card: one(conn, row.id).await?,
        unchanged: false,
    }))
}

/// Writes a move's plan at `at` (the request's one clock, the time of its note too): the
/// card, and a follow-up's decision ([`card_moved`]).
async fn write_move(
    conn: Tx<'_>,
    id: Uuid,
    plan: &MovePlan,
    at: jiff::Timestamp,
) -> anyhow::Result<()> {
    crate::events::write(conn, plan.event.as_slice()).await?;
    let at = Ts::from(at);
    let target = task_cards::table.filter(task_cards::id.eq(id));
    diesel::update(target)
        .set((
            task_cards::status.eq(plan.status.as_str()),
            task_cards::notes.eq(task_cards::notes.concat(&plan.notes)),
            task_cards::updated_at.eq(at),
        ))
        .execute(conn)
        .await?;
    match &plan.write {
        CardWrite::Claim { assignee } => {
            diesel::update(target)
                .set((
                    task_cards::assignee_agent.eq(assignee),
                    task_cards::last_progress_at.eq(at),
                ))
                .execute(conn)
                .await?;
        }
        CardWrite::Progress => {
            diesel::update(target)
                .set(task_cards::last_progress_at.eq(at))
                .execute(conn)
                .await?;
        }
        CardWrite::Finish { result, evidence } => {
            diesel::update(target)
                .set((
                    task_cards::result.eq(result),
                    task_cards::evidence.eq(evidence),
                    task_cards::confirmation_since.eq(at),
                    task_cards::last_progress_at.eq(at),
                    task_cards::finished_at.eq(at),
                ))
                .execute(conn)
                .await?;
        }
        CardWrite::Fail { reason } => {
            diesel::update(target)
                .set((
                    task_cards::fail_reason.eq(reason),
                    task_cards::finished_at.eq(at),
                ))
                .execute(conn)
                .await?;
        }
        CardWrite::Confirm => {}
        CardWrite::Reopen => {
            diesel::update(target)
                .set((
                    task_cards::confirmation_since.eq(None::<Ts>),
                    task_cards::finished_at.eq(None::<Ts>),
                    task_cards::last_progress_at.eq(at),
                ))
                .execute(conn)
                .await?;
        }
    }
    let Some((decision, write)) = &plan.follow_up else {
        return Ok(());
    };
    let moved = card_moved(write);
    let from: Vec<&str> = moved.from.iter().map(|s| s.as_str()).collect();
    let target = decisions::table
        .filter(decisions::id.eq(decision))
        .filter(decisions::status.eq_any(from));
    let to = decisions::status.eq(moved.to.as_str());
    match write {
        FollowUpWrite::Handled { result, evidence } => {
            diesel::update(target)
                .set((
                    to,
                    decisions::result.eq(result),
                    decisions::evidence.eq(evidence),
                    decisions::handled_at.eq(at),
                    decisions::updated_at.eq(at),
                ))
                .execute(conn)
                .await?;
        }
        FollowUpWrite::Resolved { decided_by } => {
            diesel::update(target)
                .set((
                    to,
                    decisions::decided_move.eq(&moved.decided_move),
                    decisions::decided_by
                        .eq(decided_by.as_ref().map_or(Value::Null, DecidedBy::to_json)),
                    decisions::decided_at.eq(at),
                    decisions::updated_at.eq(at),
                ))
                .execute(conn)
                .await?;
        }
        FollowUpWrite::Reopened => {
            diesel::update(target)
                .set((
                    to,
                    decisions::decided_move.eq(None::<Value>),
                    decisions::decided_by.eq(None::<Value>),
                    decisions::decided_at.eq(None::<Ts>),
                    decisions::updated_at.eq(at),
                ))
                .execute(conn)
                .await?;
        }
    }
    Ok(())
}

impl TasksRepo for PgStore {
    fn get(&self, scope: TaskScope, id: Uuid) -> BoxFuture<'_, anyhow::Result<Option<TaskRecord>>> {
        self.read(async move |conn| {
            let row: Option<RecordRow> = match scope {
                TaskScope::Organization(org) => sql!(ONE_OF_ORG, id, org).get_result(conn).await,
                TaskScope::Agent(agent) => {
                    sql!(ONE_OF_AGENT, id, agent.workspace_id, agent.agent_id)
                        .get_result(conn)
                        .await
                }
            }
            .optional()?;
            Ok(row.map(record))
        })
    }

    fn list<'a>(
        &'a self,
        scope: TaskScope,
        query: &'a ListQuery,
    ) -> BoxFuture<'a, anyhow::Result<Page<TaskRecord>>> {
        self.read(async move |conn| {
            let statuses: Vec<&str> = query.statuses.iter().map(|s| s.as_str()).collect();
            let after_at = query.after.map(|a| Ts::from(a.0));
            let after_id = query.after.map(|a| a.1).unwrap_or_default();
            let kind = query.kind.map(|k| k.as_str());
            let rows: Vec<RecordRow> = match scope {
                TaskScope::Organization(org) => {
                    sql!(
                        LIST_ORG,
                        org,
                        statuses,
                        kind,
                        after_at,
                        after_id,
                        query.limit + 1,
                        LISTED_NOTES
                    )
                    .load(conn)
                    .await?
                }
                TaskScope::Agent(agent) => {
                    sql!(
                        LIST_AGENT,
                        agent.workspace_id,
                        statuses,
                        kind,
                        after_at,
                        after_id,
                        query.limit + 1,
                        agent.agent_id,
                        LISTED_NOTES
                    )
                    .load(conn)
                    .await?
                }
            };
            let items = rows.into_iter().map(record).collect();
            Ok(Page::probed(items, query.limit, |c| (c.created_at, c.id)))
        })
    }

    fn open<'a>(
        &'a self,
        opener: &'a Opener,
        request: &'a OpenRequest,
    ) -> BoxFuture<'a, anyhow::Result<Result<Opened, TaskRefusal>>> {
        self.tx(async move |conn| open(conn, opener, request).await)
    }

    fn act<'a>(
        &'a self,
        actor: &'a Actor,
        request: &'a MoveRequest,
    ) -> BoxFuture<'a, anyhow::Result<Result<Moved, TaskRefusal>>> {
        self.tx(async move |conn| act(conn, actor, request).await)
    }

    fn open_cards(
        &self,
        agent: AgentRef,
        limit: i64,
    ) -> BoxFuture<'_, anyhow::Result<Vec<TaskRecord>>> {
        self.read(async move |conn| {
            let rows: Vec<RecordRow> = sql!(
                OPEN_CARDS,
                agent.workspace_id,
                agent.agent_id,
                TaskStatus::open_texts(),
                limit,
                LISTED_NOTES
            )
            .load(conn)
            .await?;
            Ok(rows.into_iter().map(record).collect())
        })
    }
}
