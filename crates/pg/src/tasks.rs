//! Task cards: lists, opening (or joining the open card of the same kind on the same target),
//! and every move in one transaction that locks the card, with a follow-up's decision.

use crate::accounts::{SlotCodes, pick_slot};
use crate::db::{PgStore, prepared};
use crate::schema::{agents, decisions, media, personas, task_cards};
use diesel::dsl::now;
use diesel::prelude::*;
use diesel::sql_types::{Array, BigInt, Bool, Jsonb, Nullable, Text, Timestamptz, Uuid as SqlUuid};
use diesel_async::{AsyncPgConnection, RunQueryDsl};
use fleetdesk_accounts::ports::LookupError;
use fleetdesk_decisions::DecisionStatus;
use fleetdesk_decisions::rules::{Action, Move as DecisionMove};
use fleetdesk_kernel::persona::PersonaStatus;
use fleetdesk_kernel::{AgentRef, BoxFuture, Page, Platform, format_utc};
use fleetdesk_tasks::ports::*;
use fleetdesk_tasks::rules::{
    Card, DEFAULT_ZONE, Move, Plan, TaskRefusal, Who, also_wanted, plan, read_due_at,
};
use fleetdesk_tasks::{TargetType, TaskKind, TaskStatus};
use fleetdesk_tenancy::{AgentRole, Scope};
use jiff::Timestamp;
use serde_json::{Value, json};
use uuid::Uuid;

type Tx<'c> = &'c mut AsyncPgConnection;
type Ts = jiff_diesel::Timestamp;

macro_rules! record_sql {
    ($($tail:expr),*) => {
        concat!(
            "SELECT c.id, c.kind, c.title, c.detail, c.status, c.target_type, c.target_code, \
                    c.target_id, c.persona_id, pe.name AS persona_name, c.assignee_agent, \
                    ag.name AS assignee_name, c.opened_by_type, c.opened_by_name, \
                    c.also_wanted_by, c.due_at, c.notes, c.result, c.evidence, c.decision_id, \
                    c.last_progress_at, c.confirmation_since, c.created_at, c.updated_at, \
                    c.finished_at \
             FROM task_cards c \
             LEFT JOIN personas pe ON pe.id = c.persona_id \
             LEFT JOIN agents ag ON ag.id = c.assignee_agent ",
            $($tail),*
        )
    };
}

/// A page of an organization's cards (every organization for `$1` null), newest first.
const LIST_ORG: &str = record_sql!(
    "WHERE ($1::uuid IS NULL OR c.organization_id = $1) AND c.status = ANY($2) \
       AND ($3::text IS NULL OR c.kind = $3) \
       AND ($4::timestamptz IS NULL OR (c.created_at, c.id) < ($4, $5)) \
     ORDER BY c.created_at DESC, c.id DESC \
     LIMIT $6"
);

/// A page of an agent's cards: assigned to it, or unassigned on its personas; newest first.
const LIST_AGENT: &str = record_sql!(
    "WHERE c.workspace_id = $1 \
       AND (c.assignee_agent = $7 OR (c.assignee_agent IS NULL AND pe.agent_id = $7)) \
       AND c.status = ANY($2) AND ($3::text IS NULL OR c.kind = $3) \
       AND ($4::timestamptz IS NULL OR (c.created_at, c.id) < ($4, $5)) \
     ORDER BY c.created_at DESC, c.id DESC \
     LIMIT $6"
);

/// An agent's open cards, oldest first.
const OPEN_CARDS: &str = record_sql!(
    "WHERE c.workspace_id = $1 \
       AND (c.assignee_agent = $2 OR (c.assignee_agent IS NULL AND pe.agent_id = $2)) \
       AND c.status = ANY($3) \
     ORDER BY c.created_at, c.id \
     LIMIT $4"
);

const ONE: &str = record_sql!("WHERE c.id = $1");

/// The card a move needs, locked, with the agent of its persona.
const LOCK: &str = r#"
SELECT c.id, c.organization_id, c.workspace_id, c.status, c.assignee_agent, c.result,
       c.fail_reason, c.decision_id, pe.agent_id AS persona_agent
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
       s.timezone
FROM posts p
JOIN account_slots s ON s.id = p.slot_id
JOIN personas pe ON pe.id = p.persona_id
WHERE p.id = $1 AND pe.status <> $2
"#;

/// A decision target: its persona (not retired, `$2`) and the zone of its account (or the
/// persona's first).
const TARGET_ISSUE: &str = r#"
SELECT d.persona_id, pe.agent_id AS persona_agent, d.workspace_id, d.organization_id,
       COALESCE(s.timezone, first.timezone) AS timezone
FROM decisions d
LEFT JOIN personas pe ON pe.id = d.persona_id
LEFT JOIN account_slots s ON s.id = d.slot_id
LEFT JOIN LATERAL (
    SELECT f.timezone FROM account_slots f WHERE f.persona_id = d.persona_id
    ORDER BY f.created_at, f.code LIMIT 1
) first ON true
WHERE d.id = $1 AND (pe.id IS NULL OR pe.status <> $2)
"#;

/// The open card of the same kind on the same target that a request joins: the same agent's
/// (opened by or assigned to it) for an agent; the same assignee's (or unassigned) for a person.
const SAME_OPEN: &str = r#"
SELECT c.id, c.opened_by_name, c.also_wanted_by
FROM task_cards c
WHERE c.persona_id = $1 AND c.kind = $2 AND c.target_type = $3 AND c.target_id = $4
  AND c.status = ANY($5)
  AND CASE WHEN $6 THEN (c.opened_by_agent = $7 OR c.assignee_agent = $7)
           ELSE c.assignee_agent IS NOT DISTINCT FROM $7 END
ORDER BY c.created_at, c.id
LIMIT 1
FOR UPDATE
"#;

statements!(
    LIST_ORG,
    LIST_AGENT,
    OPEN_CARDS,
    ONE,
    LOCK,
    TARGET_SLOTS,
    TARGET_POST,
    TARGET_ISSUE,
    SAME_OPEN
);

#[derive(QueryableByName)]
struct RecordRow {
    #[diesel(sql_type = SqlUuid)]
    id: Uuid,
    #[diesel(sql_type = Text)]
    kind: String,
    #[diesel(sql_type = Text)]
    title: String,
    #[diesel(sql_type = Nullable<Text>)]
    detail: Option<String>,
    #[diesel(sql_type = Text)]
    status: String,
    #[diesel(sql_type = Text)]
    target_type: String,
    #[diesel(sql_type = Nullable<Text>)]
    target_code: Option<String>,
    #[diesel(sql_type = Nullable<SqlUuid>)]
    target_id: Option<Uuid>,
    #[diesel(sql_type = Nullable<SqlUuid>)]
    persona_id: Option<Uuid>,
    #[diesel(sql_type = Nullable<Text>)]
    persona_name: Option<String>,
    #[diesel(sql_type = Nullable<SqlUuid>)]
    assignee_agent: Option<Uuid>,
    #[diesel(sql_type = Nullable<Text>)]
    assignee_name: Option<String>,
    #[diesel(sql_type = Text)]
    opened_by_type: String,
    #[diesel(sql_type = Text)]
    opened_by_name: String,
    #[diesel(sql_type = Array<Text>)]
    also_wanted_by: Vec<String>,
    #[diesel(sql_type = Nullable<Timestamptz>)]
    due_at: Option<Ts>,
    #[diesel(sql_type = Jsonb)]
    notes: Value,
    #[diesel(sql_type = Nullable<Text>)]
    result: Option<String>,
    #[diesel(sql_type = Jsonb)]
    evidence: Value,
    #[diesel(sql_type = Nullable<SqlUuid>)]
    decision_id: Option<Uuid>,
    #[diesel(sql_type = Nullable<Timestamptz>)]
    last_progress_at: Option<Ts>,
    #[diesel(sql_type = Nullable<Timestamptz>)]
    confirmation_since: Option<Ts>,
    #[diesel(sql_type = Timestamptz)]
    created_at: Ts,
    #[diesel(sql_type = Timestamptz)]
    updated_at: Ts,
    #[diesel(sql_type = Nullable<Timestamptz>)]
    finished_at: Option<Ts>,
}

fn status(s: &str) -> anyhow::Result<TaskStatus> {
    TaskStatus::parse(s).ok_or_else(|| anyhow::anyhow!("stored card status {s}"))
}

fn record(r: RecordRow) -> anyhow::Result<TaskRecord> {
    Ok(TaskRecord {
        id: r.id,
        kind: TaskKind::parse(&r.kind).ok_or_else(|| anyhow::anyhow!("card kind {}", r.kind))?,
        title: r.title,
        detail: r.detail,
        status: status(&r.status)?,
        target_type: TargetType::parse(&r.target_type)
            .ok_or_else(|| anyhow::anyhow!("card target {}", r.target_type))?,
        target_code: r.target_code,
        target_id: r.target_id,
        persona: r.persona_id.zip(r.persona_name),
        assignee: r.assignee_agent.zip(r.assignee_name),
        opened_by: (r.opened_by_type, r.opened_by_name),
        also_wanted_by: r.also_wanted_by,
        due_at: r.due_at.map(Into::into),
        notes: r.notes,
        result: r.result,
        evidence: r.evidence,
        decision_id: r.decision_id,
        last_progress_at: r.last_progress_at.map(Into::into),
        confirmation_since: r.confirmation_since.map(Into::into),
        created_at: r.created_at.into(),
        updated_at: r.updated_at.into(),
        finished_at: r.finished_at.map(Into::into),
    })
}

async fn one(conn: Tx<'_>, id: Uuid) -> anyhow::Result<TaskRecord> {
    let row: RecordRow = prepared(diesel::sql_query(ONE).bind::<SqlUuid, _>(id))
        .get_result(conn)
        .await?;
    record(row)
}

fn open_statuses() -> Vec<&'static str> {
    TaskStatus::OPEN.iter().map(|s| s.as_str()).collect()
}

// ---------------------------------------------------------------------------------------------
// Opening

#[derive(QueryableByName)]
struct SlotRow {
    #[diesel(embed)]
    slot: SlotCodes,
    #[diesel(sql_type = SqlUuid)]
    persona_id: Uuid,
    #[diesel(sql_type = SqlUuid)]
    workspace_id: Uuid,
    #[diesel(sql_type = SqlUuid)]
    organization_id: Uuid,
    #[diesel(sql_type = Text)]
    timezone: String,
}

#[derive(QueryableByName)]
struct OwnerRow {
    #[diesel(sql_type = Nullable<SqlUuid>)]
    persona_id: Option<Uuid>,
    #[diesel(sql_type = Nullable<SqlUuid>)]
    persona_agent: Option<Uuid>,
    #[diesel(sql_type = SqlUuid)]
    workspace_id: Uuid,
    #[diesel(sql_type = SqlUuid)]
    organization_id: Uuid,
    #[diesel(sql_type = Nullable<Text>)]
    timezone: Option<String>,
}

/// Where a new card goes: its organization, workspace and persona, what its target stores,
/// and the zone its due_at is read in.
struct Placed {
    organization_id: Uuid,
    workspace_id: Uuid,
    persona_id: Uuid,
    target_code: Option<String>,
    target_id: Uuid,
    zone: String,
}

fn target_name(t: TargetType) -> &'static str {
    match t {
        TargetType::Slot => "account",
        TargetType::Persona => "persona",
        TargetType::Post => "post",
        TargetType::Issue => "decision",
    }
}

/// Resolves the target for the opener: an agent sees its workspace and its own personas
/// (another agent's: 403), a person the organization.
async fn place(
    conn: Tx<'_>,
    opener: &Opener,
    target: &TargetRef,
) -> anyhow::Result<Result<Placed, TaskRefusal>> {
    let what = target_name(target.kind());
    let (workspace, agent, organization) = match opener {
        Opener::Agent { agent, .. } => (Some(agent.workspace_id), Some(agent.agent_id), None),
        Opener::Person { organization, .. } => (None, None, *organization),
    };
    let owner = match target {
        TargetRef::Slot { code, platform } | TargetRef::Persona { code, platform } => {
            let rows: Vec<SlotRow> = prepared(
                diesel::sql_query(TARGET_SLOTS)
                    .bind::<Nullable<SqlUuid>, _>(workspace)
                    .bind::<Nullable<SqlUuid>, _>(agent)
                    .bind::<Nullable<SqlUuid>, _>(organization)
                    .bind::<Text, _>(code.as_str())
                    .bind::<Nullable<Text>, _>(platform.map(Platform::as_str))
                    .bind::<Text, _>(PersonaStatus::Retired.as_str()),
            )
            .load(conn)
            .await?;
            // Codes are unique per organization: a platform admin outside any organization
            // whose code names accounts in several is refused, never given one at random.
            if matches!(
                opener,
                Opener::Person {
                    organization: None,
                    ..
                }
            ) && rows
                .iter()
                .any(|r| r.organization_id != rows[0].organization_id)
            {
                return Ok(Err(TaskRefusal::TargetInSeveralOrganizations));
            }
            let row = match pick_slot(rows, code.as_str(), *platform, |r| &r.slot) {
                Ok(r) => r,
                Err(LookupError::NotFound) => return Ok(Err(TaskRefusal::TargetNotFound(what))),
                Err(LookupError::NotYours) => {
                    return Ok(Err(TaskRefusal::TargetNotYours(what)));
                }
                Err(LookupError::Ambiguous) => return Ok(Err(TaskRefusal::TargetAmbiguous)),
            };
            let target_id = match target {
                TargetRef::Slot { .. } => row.slot.slot_id,
                _ => row.persona_id,
            };
            return Ok(Ok(Placed {
                organization_id: row.organization_id,
                workspace_id: row.workspace_id,
                persona_id: row.persona_id,
                target_code: Some(row.slot.code),
                target_id,
                zone: row.timezone,
            }));
        }
        TargetRef::Post(id) | TargetRef::Issue(id) => {
            let sql = if matches!(target, TargetRef::Post(_)) {
                TARGET_POST
            } else {
                TARGET_ISSUE
            };
            let row: Option<OwnerRow> = prepared(
                diesel::sql_query(sql)
                    .bind::<SqlUuid, _>(*id)
                    .bind::<Text, _>(PersonaStatus::Retired.as_str()),
            )
            .get_result(conn)
            .await
            .optional()?;
            match row {
                Some(r) => (r, *id),
                None => return Ok(Err(TaskRefusal::TargetNotFound(what))),
            }
        }
    };
    let (row, target_id) = owner;
    let visible = match opener {
        Opener::Agent { agent, .. } => row.workspace_id == agent.workspace_id,
        Opener::Person { organization, .. } => {
            organization.is_none_or(|o| o == row.organization_id)
        }
    };
    if !visible {
        return Ok(Err(TaskRefusal::TargetNotFound(what)));
    }
    let Some(persona_id) = row.persona_id else {
        return Ok(Err(match opener {
            Opener::Agent { .. } => TaskRefusal::TargetNotFound(what),
            Opener::Person { .. } => TaskRefusal::TargetWithoutPersona(what),
        }));
    };
    if let Opener::Agent { agent, .. } = opener
        && row.persona_agent != Some(agent.agent_id)
    {
        return Ok(Err(TaskRefusal::TargetNotYours(what)));
    }
    Ok(Ok(Placed {
        organization_id: row.organization_id,
        workspace_id: row.workspace_id,
        persona_id,
        target_code: None,
        target_id,
        zone: row.timezone.unwrap_or_else(|| DEFAULT_ZONE.to_owned()),
    }))
}

#[derive(QueryableByName)]
struct SameRow {
    #[diesel(sql_type = SqlUuid)]
    id: Uuid,
    #[diesel(sql_type = Text)]
    opened_by_name: String,
    #[diesel(sql_type = Array<Text>)]
    also_wanted_by: Vec<String>,
}

async fn open(
    conn: Tx<'_>,
    opener: &Opener,
    req: &OpenRequest,
) -> anyhow::Result<Result<Opened, TaskRefusal>> {
    let placed = match place(conn, opener, &req.target).await? {
        Ok(p) => p,
        Err(refusal) => return Ok(Err(refusal)),
    };
    // due_at is read before a join: a request with a bad one is refused either way.
    let due_at = match req
        .due_at
        .as_deref()
        .map(|raw| read_due_at(raw, &placed.zone))
    {
        None => None,
        Some(Ok(t)) => Some(Ts::from(t)),
        Some(Err(refusal)) => return Ok(Err(refusal)),
    };
    // Two requests for the same matter at once: the second waits and joins the first.
    personas::table
        .filter(personas::id.eq(placed.persona_id))
        .for_no_key_update()
        .select(personas::id)
        .first::<Uuid>(conn)
        .await?;
    let (assignee, opened_by_agent, opener_type, opener_name) = match opener {
        Opener::Agent { agent, name } => {
            (Some(agent.agent_id), Some(agent.agent_id), "agent", name)
        }
        Opener::Person { assign, name, .. } => {
            let assignee = match assign {
                None => None,
                Some(who) => {
                    let as_id = who.parse::<Uuid>().ok();
                    let found: Option<(Uuid, String)> = agents::table
                        .filter(agents::workspace_id.eq(placed.workspace_id))
                        .filter(
                            agents::name
                                .eq(who.as_str())
                                .or(agents::id.nullable().eq(as_id)),
                        )
                        .select((agents::id, agents::role))
                        .first(conn)
                        .await
                        .optional()?;
                    match found {
                        // Only an agent whose role works cards (tasks:write) is assigned one.
                        Some((a, role)) => {
                            let role = AgentRole::parse(&role)
                                .ok_or_else(|| anyhow::anyhow!("stored agent role {role}"))?;
                            if !role.has(Scope::TasksWrite) {
                                return Ok(Err(TaskRefusal::AgentCannotWork(who.clone())));
                            }
                            Some(a)
                        }
                        None => return Ok(Err(TaskRefusal::UnknownAgent(who.clone()))),
                    }
                }
            };
            (assignee, None, "person", name)
        }
    };
    let same: Option<SameRow> = prepared(
        diesel::sql_query(SAME_OPEN)
            .bind::<SqlUuid, _>(placed.persona_id)
            .bind::<Text, _>(req.kind.as_str())
            .bind::<Text, _>(req.target.kind().as_str())
            .bind::<SqlUuid, _>(placed.target_id)
            .bind::<Array<Text>, _>(open_statuses())
            .bind::<Bool, _>(opened_by_agent.is_some())
            .bind::<Nullable<SqlUuid>, _>(assignee),
    )
    .get_result(conn)
    .await
    .optional()?;
    if let Some(card) = same {
        if let Some(all) = also_wanted(&card.opened_by_name, &card.also_wanted_by, &req.requester) {
            diesel::update(task_cards::table.filter(task_cards::id.eq(card.id)))
                .set((
                    task_cards::also_wanted_by.eq(all),
                    task_cards::updated_at.eq(now),
                ))
                .execute(conn)
                .await?;
        }
        return Ok(Ok(Opened {
            card: one(conn, card.id).await?,
            created: false,
        }));
    }
    let id: Uuid = diesel::insert_into(task_cards::table)
        .values((
            task_cards::organization_id.eq(placed.organization_id),
            task_cards::workspace_id.eq(placed.workspace_id),
            task_cards::persona_id.eq(placed.persona_id),
            task_cards::kind.eq(req.kind.as_str()),
            task_cards::title.eq(&req.title),
            task_cards::detail.eq(&req.detail),
            task_cards::status.eq(TaskStatus::PendingPickup.as_str()),
            task_cards::target_type.eq(req.target.kind().as_str()),
            task_cards::target_code.eq(&placed.target_code),
            task_cards::target_id.eq(placed.target_id),
            task_cards::assignee_agent.eq(assignee),
            task_cards::opened_by_type.eq(opener_type),
            task_cards::opened_by_name.eq(opener_name),
            task_cards::opened_by_agent.eq(opened_by_agent),
            task_cards::due_at.eq(due_at),
            task_cards::origin.eq(&req.origin),
        ))
        .returning(task_cards::id)
        .get_result(conn)
        .await?;
    Ok(Ok(Opened {
        card: one(conn, id).await?,
        created: true,
    }))
}

// ---------------------------------------------------------------------------------------------
// Moves

#[derive(QueryableByName)]
struct LockedRow {
    #[diesel(sql_type = SqlUuid)]
    id: Uuid,
    #[diesel(sql_type = SqlUuid)]
    organization_id: Uuid,
    #[diesel(sql_type = SqlUuid)]
    workspace_id: Uuid,
    #[diesel(sql_type = Text)]
    status: String,
    #[diesel(sql_type = Nullable<SqlUuid>)]
    assignee_agent: Option<Uuid>,
    #[diesel(sql_type = Nullable<Text>)]
    result: Option<String>,
    #[diesel(sql_type = Nullable<Text>)]
    fail_reason: Option<String>,
    #[diesel(sql_type = Nullable<SqlUuid>)]
    decision_id: Option<Uuid>,
    #[diesel(sql_type = Nullable<SqlUuid>)]
    persona_agent: Option<Uuid>,
}

fn note(by: &str, text: &str, at: Timestamp, via: Option<&Value>) -> Value {
    let mut n = json!({"by": by, "text": text, "at": format_utc(at)});
    if let Some(v) = via {
        n["via"] = v.clone();
    }
    json!([n])
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
    let row: Option<LockedRow> = prepared(diesel::sql_query(LOCK).bind::<SqlUuid, _>(req.id))
        .get_result(conn)
        .await
        .optional()?;
    let Some(row) = row else {
        return Ok(Err(TaskRefusal::NotFound));
    };
    anyhow::ensure!(
        row.decision_id == decision,
        "card {} changed its decision while being moved",
        row.id
    );
    let (who, visible, by, via) = match actor {
        Actor::Agent { agent, name } => (
            Who::Agent(agent.agent_id),
            row.workspace_id == agent.workspace_id,
            name.as_str(),
            None,
        ),
        Actor::Person {
            organization, name, ..
        } => (
            Who::Person,
            organization.is_none_or(|o| o == row.organization_id),
            name.as_str(),
            None,
        ),
        Actor::Relay {
            agent,
            person,
            record,
        } => (
            Who::Relay(agent.agent_id),
            row.workspace_id == agent.workspace_id,
            person.as_str(),
            Some(record),
        ),
    };
    if !visible {
        return Ok(Err(TaskRefusal::NotFound));
    }
    let card = Card {
        status: status(&row.status)?,
        assignee: row.assignee_agent,
        persona_agent: row.persona_agent,
        result: row.result.clone(),
        fail_reason: row.fail_reason.clone(),
        follow_up: row.decision_id.is_some(),
    };
    let (new_status, assign) = match plan(&card, who, &req.mv) {
        Err(refusal) => return Ok(Err(refusal)),
        Ok(Plan::Unchanged) => {
            return Ok(Ok(Moved {
                card: one(conn, row.id).await?,
                unchanged: true,
            }));
        }
        Ok(Plan::Apply { status, assign }) => (status, assign),
    };
    if matches!(req.mv, Move::Finish { .. }) && !req.asset_ids.is_empty() {
        let seen: Vec<Uuid> = media::table
            .filter(media::id.eq_any(&req.asset_ids))
            .filter(media::workspace_id.eq(row.workspace_id))
            .filter(media::archived_at.is_null())
            .select(media::id)
            .load(conn)
            .await?;
        if let Some(missing) = req.asset_ids.iter().find(|id| !seen.contains(id)) {
            return Ok(Err(TaskRefusal::UnknownAsset(*missing)));
        }
    }
    let target = task_cards::table.filter(task_cards::id.eq(row.id));
    let notes = match (&req.mv, req.note.as_deref()) {
        (Move::Fail { reason }, _) => note(by, reason, req.now, via),
        (_, Some(text)) => note(by, text, req.now, via),
        // A relayed confirmation without a note still records who relayed it for whom.
        (Move::Confirm, None) if via.is_some() => note(by, "confirmed", req.now, via),
        _ => json!([]),
    };
    diesel::update(target)
        .set((
            task_cards::status.eq(new_status.as_str()),
            task_cards::notes.eq(task_cards::notes.concat(notes)),
            task_cards::updated_at.eq(now),
        ))
        .execute(conn)
        .await?;
    match &req.mv {
        Move::Claim => {
            diesel::update(target)
                .set((
                    task_cards::assignee_agent.eq(assign.or(row.assignee_agent)),
                    task_cards::last_progress_at.eq(now),
                ))
                .execute(conn)
                .await?;
        }
        Move::Progress => {
            diesel::update(target)
                .set(task_cards::last_progress_at.eq(now))
                .execute(conn)
                .await?;
        }
        Move::Finish { result } => {
            diesel::update(target)
                .set((
                    task_cards::result.eq(result),
                    task_cards::evidence.eq(&req.evidence),
                    task_cards::confirmation_since.eq(now),
                    task_cards::last_progress_at.eq(now),
                    task_cards::finished_at.eq(now),
                ))
                .execute(conn)
                .await?;
            // A follow-up's card finished: its decision is handled, as by complete_issue.
            if let Some(d) = row.decision_id {
                diesel::update(
                    decisions::table
                        .filter(decisions::id.eq(d))
                        .filter(decisions::status.eq(DecisionStatus::Open.as_str())),
                )
                .set((
                    decisions::status.eq(DecisionStatus::Handled.as_str()),
                    decisions::result.eq(result),
                    decisions::evidence.eq(&req.evidence),
                    decisions::handled_at.eq(now),
                    decisions::updated_at.eq(now),
                ))
                .execute(conn)
                .await?;
            }
        }
        Move::Fail { reason } => {
            diesel::update(target)
                .set((
                    task_cards::fail_reason.eq(reason),
                    task_cards::finished_at.eq(now),
                ))
                .execute(conn)
                .await?;
        }
        Move::Confirm => {
            // Confirming a follow-up's card resolves its decision.
            if let Some(d) = row.decision_id {
                let decided_by = match actor {
                    Actor::Person { record, .. } | Actor::Relay { record, .. } => record.clone(),
                    Actor::Agent { .. } => Value::Null,
                };
                let mv = DecisionMove::new(Action::Resolve, None, None, None);
                diesel::update(decisions::table.filter(decisions::id.eq(d)).filter(
                    decisions::status.eq_any([
                        DecisionStatus::Open.as_str(),
                        DecisionStatus::Handled.as_str(),
                    ]),
                ))
                .set((
                    decisions::status.eq(DecisionStatus::Resolved.as_str()),
                    decisions::decided_move.eq(mv.to_json()),
                    decisions::decided_by.eq(decided_by),
                    decisions::decided_at.eq(now),
                    decisions::updated_at.eq(now),
                ))
                .execute(conn)
                .await?;
            }
        }
        Move::Reopen => {
            diesel::update(target)
                .set((
                    task_cards::confirmation_since.eq(None::<Ts>),
                    task_cards::finished_at.eq(None::<Ts>),
                    task_cards::last_progress_at.eq(now),
                ))
                .execute(conn)
                .await?;
            // A follow-up's card back at work: its decision waits again.
            if let Some(d) = row.decision_id {
                diesel::update(decisions::table.filter(decisions::id.eq(d)).filter(
                    decisions::status.eq_any([
                        DecisionStatus::Handled.as_str(),
                        DecisionStatus::Resolved.as_str(),
                    ]),
                ))
                .set((
                    decisions::status.eq(DecisionStatus::Open.as_str()),
                    decisions::decided_move.eq(None::<Value>),
                    decisions::decided_by.eq(None::<Value>),
                    decisions::decided_at.eq(None::<Ts>),
                    decisions::updated_at.eq(now),
                ))
                .execute(conn)
                .await?;
            }
        }
    }
    Ok(Ok(Moved {
        card: one(conn, row.id).await?,
        unchanged: false,
    }))
}

impl TasksRepo for PgStore {
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
                    prepared(
                        diesel::sql_query(LIST_ORG)
                            .bind::<Nullable<SqlUuid>, _>(org)
                            .bind::<Array<Text>, _>(statuses)
                            .bind::<Nullable<Text>, _>(kind)
                            .bind::<Nullable<Timestamptz>, _>(after_at)
                            .bind::<SqlUuid, _>(after_id)
                            .bind::<BigInt, _>(query.limit + 1),
                    )
                    .load(conn)
                    .await?
                }
                TaskScope::Agent(agent) => {
                    prepared(
                        diesel::sql_query(LIST_AGENT)
                            .bind::<SqlUuid, _>(agent.workspace_id)
                            .bind::<Array<Text>, _>(statuses)
                            .bind::<Nullable<Text>, _>(kind)
                            .bind::<Nullable<Timestamptz>, _>(after_at)
                            .bind::<SqlUuid, _>(after_id)
                            .bind::<BigInt, _>(query.limit + 1)
                            .bind::<SqlUuid, _>(agent.agent_id),
                    )
                    .load(conn)
                    .await?
                }
            };
            let mut items = rows
                .into_iter()
                .map(record)
                .collect::<anyhow::Result<Vec<_>>>()?;
            let more = items.len() as i64 > query.limit;
            items.truncate(query.limit.max(0) as usize);
            Ok(Page::new(items, more, |c| (c.created_at, c.id)))
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
            let rows: Vec<RecordRow> = prepared(
                diesel::sql_query(OPEN_CARDS)
                    .bind::<SqlUuid, _>(agent.workspace_id)
                    .bind::<SqlUuid, _>(agent.agent_id)
                    .bind::<Array<Text>, _>(open_statuses())
                    .bind::<BigInt, _>(limit),
            )
            .load(conn)
            .await?;
            rows.into_iter().map(record).collect()
        })
    }
}
