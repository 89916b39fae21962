//! The accounts ports over PostgreSQL.

use crate::db::{PgStore, column};
use crate::rows::Stored;
use crate::schema::{account_generations, account_slots, decisions, personas};
use diesel::pg::Pg;
use diesel::prelude::*;
use diesel_async::{AsyncPgConnection, RunQueryDsl};
use fleetdesk_accounts::models::add::answering_account;
use fleetdesk_accounts::models::work::{DayCount, RotationAccount};
use fleetdesk_accounts::ports::*;
use fleetdesk_accounts::{
    AccountState, AccountSubject, AvatarImage, BAN_DECISION_KIND, BAN_OPTIONS, BanDecision,
    HeartbeatInput, StateMove, answers_with_open_decision, apply_report, ban_decision,
    check_existing, check_persona,
};
use fleetdesk_accounts::{SlotName, choose};
use fleetdesk_inventory::plan::rotation_stocked;
use fleetdesk_kernel::decision::DecisionStatus;
use fleetdesk_kernel::persona::PersonaStatus;
use fleetdesk_kernel::{AgentRef, BoxFuture, Market, Platform};
use fleetdesk_posts::post::{DayTime, PostStatus};
use serde_json::Value;
use uuid::Uuid;

row! {
    /// The columns of a slot a `{code}` is matched on, loaded (`#[diesel(embed)]`) with every slot
    /// it may name.
    #[derive(Clone)]
    pub(crate) struct SlotCodes {
        pub slot_id: Uuid,
        pub code: String,
        pub legacy_code: Option<String>,
        pub platform: String,
        /// Under one of the caller's personas.
        pub mine: bool,
    }
}

impl SlotCodes {
    /// The typed name of the slot; `None` for a platform the service does not know.
    pub(crate) fn name(&self) -> Option<SlotName> {
        Some(SlotName {
            slot_id: self.slot_id,
            code: self.code.clone(),
            legacy_code: self.legacy_code.clone(),
            platform: self.platform.parse().ok()?,
            mine: self.mine,
        })
    }
}

/// The caller's account that `code` (on `platform`, when given) names among loaded slots
/// ([`fleetdesk_accounts::choose`] decides).
pub(crate) fn pick_slot<R>(
    rows: impl IntoIterator<Item = R>,
    code: &str,
    platform: Option<Platform>,
    slot: impl Fn(&R) -> &SlotCodes,
) -> Result<R, LookupError> {
    let named: Vec<(SlotName, R)> = rows
        .into_iter()
        .filter_map(|row| Some((slot(&row).name()?, row)))
        .collect();
    choose(named, code, platform, |(name, _)| name).map(|(_, row)| row)
}

pub(crate) fn platform(s: &str) -> anyhow::Result<Platform> {
    s.parse()
        .map_err(|e| anyhow::anyhow!("stored platform: {e}"))
}

row! {
    struct AccountRow {
        #[diesel(embed)]
        view: AccountViewRow,
        inventory: i64,
    }
}

row! {
    struct AccountViewRow into AccountView {
        slot_id: Uuid,
        account_id: Option<Uuid>,
        code: String,
        legacy_code: Option<String>,
        platform: Stored<Platform>,
        market: Stored<Market>,
        timezone: String,
        persona: String,
        handle: Option<String>,
        generation: Option<i32>,
        state: Option<Stored<AccountState>>,
        daily_target: i32,
        publishing: String,
    }
}

/// The agent's accounts: slots under personas assigned to it in its workspace, each with its
/// live generation.
const AGENT_ACCOUNTS: &str = r#"
SELECT s.id AS slot_id, g.id AS account_id, s.code, s.legacy_code, s.platform, s.market, s.timezone,
       p.name AS persona, s.handle, g.generation, g.state, s.daily_target, s.publishing,
       CASE WHEN $4 THEN (SELECT count(*) FROM posts WHERE slot_id = s.id AND status = $3)
            ELSE 0 END AS inventory
FROM account_slots s
JOIN personas p ON p.id = s.persona_id
LEFT JOIN account_generations g ON g.slot_id = s.id AND g.closed_at IS NULL
WHERE s.workspace_id = $1 AND p.agent_id = $2
ORDER BY s.code, s.platform
"#;

row! {
    struct ResolveRow {
        #[diesel(embed)]
        slot: SlotCodes,
        timezone: String,
        generation_id: Option<Uuid>,
        generation: Option<i32>,
        state: Option<Stored<AccountState>>,
        avatar_sha256: Option<String>,
    }
}

/// The slots a code names in the workspace (current or legacy, on the asked platform), with
/// whether they are the agent's; a retired persona's are hidden from agents (`$5`).
const RESOLVE: &str = r#"
SELECT s.id AS slot_id, s.code, s.legacy_code, s.platform, s.timezone, g.id AS generation_id,
       g.generation, g.state, g.avatar_sha256, (p.agent_id IS NOT DISTINCT FROM $2) AS mine
FROM account_slots s
JOIN personas p ON p.id = s.persona_id
LEFT JOIN account_generations g ON g.slot_id = s.id AND g.closed_at IS NULL
WHERE s.workspace_id = $1 AND (s.code = $3 OR s.legacy_code = $3)
  AND ($4::text IS NULL OR s.platform = $4) AND p.status <> $5
"#;

row! {
    struct ExistingSlot {
        slot_id: Uuid,
        persona_id: Uuid,
        generation_id: Option<Uuid>,
        market: Stored<Market>,
    }
}

row! {
    struct LockedGeneration {
        state: Stored<AccountState>,
        slot_id: Uuid,
        persona_id: Uuid,
        workspace_id: Uuid,
        organization_id: Uuid,
        code: String,
        platform: String,
        generation: i32,
        persona_agent: Option<Uuid>,
    }
}

#[derive(Queryable, Selectable)]
#[diesel(table_name = decisions, check_for_backend(Pg))]
struct DecisionRow {
    id: Uuid,
    status: String,
    question: Option<String>,
    options: Value,
}

row! {
    struct AvatarRow into StoredAvatar {
        sha256: String,
        mime_type: String,
        bytes: i64,
        width: Option<i32>,
        height: Option<i32>,
        updated_at: jiff_diesel::Timestamp,
    }
}

row! {
    struct SetAvatarRow {
        #[diesel(embed)]
        avatar: AvatarRow,
        changed: bool,
    }
}

row! {
    struct RunRow into HeartbeatRecord {
        id: Uuid,
        run_id: String,
        recorded_at: jiff_diesel::Timestamp,
    }
}

/// A heartbeat: the same run_id updates the same record, its summary replaced unless absent,
/// its counts merged. A constant statement, so it stays prepared on the connection.
///
/// It commits asynchronously: `set_config(..., true)` turns `synchronous_commit` off for the
/// statement's own transaction only, so the answer does not wait for the WAL flush, and the
/// pooled connection's next transaction is durable again. A crash of PostgreSQL can lose the
/// heartbeats of its last moments (at most three `wal_writer_delay`s), never half of one and
/// never a later write; the agent sends the next at the end of its next round
/// (docs/decisions.md, "Heartbeats commit asynchronously").
const RECORD_HEARTBEAT: &str = r#"
WITH async_commit AS (SELECT set_config('synchronous_commit', 'off', true))
INSERT INTO agent_runs AS r (agent_id, run_id, summary, counts)
SELECT $1, $2, $3, $4 FROM async_commit
ON CONFLICT (agent_id, run_id) DO UPDATE
SET summary = COALESCE(EXCLUDED.summary, r.summary), counts = r.counts || EXCLUDED.counts,
    recorded_at = now()
RETURNING r.id, r.run_id, r.recorded_at
"#;

/// A code that already exists, with its persona and live generation.
const EXISTING_SLOT: &str = r#"
SELECT s.id AS slot_id, s.persona_id, g.id AS generation_id, s.market
FROM account_slots s LEFT JOIN account_generations g ON g.slot_id = s.id AND g.closed_at IS NULL
WHERE s.organization_id = $1 AND s.platform = $2 AND s.code = $3
"#;

/// The live generation to change, locked for the transaction.
const LOCK_GENERATION: &str = r#"
SELECT g.state, s.id AS slot_id, s.persona_id, s.workspace_id, s.organization_id, s.code,
       s.platform, g.generation, pe.agent_id AS persona_agent
FROM account_generations g JOIN account_slots s ON s.id = g.slot_id
JOIN personas pe ON pe.id = s.persona_id
WHERE g.id = $1 FOR UPDATE OF g
"#;

/// Sets the new state and records the change with its reason and origin.
const RECORD_STATE_CHANGE: &str = r#"
WITH upd AS (UPDATE account_generations SET state = $2 WHERE id = $1)
INSERT INTO account_state_changes (generation_id, from_state, to_state, reported, reason, occurred_at, agent_id, origin)
VALUES ($1, $3, $2, $4, $5, $6, $7, $8)
"#;

/// Stores the avatar and says whether it differs from the previous one.
const SET_AVATAR: &str = r#"
WITH old AS (SELECT avatar_sha256 FROM account_generations WHERE id = $1 FOR UPDATE)
UPDATE account_generations g SET avatar_sha256 = $2, avatar_mime = $3, avatar_bytes = $4,
avatar_width = $5, avatar_height = $6, avatar_key = $7,
avatar_updated_at = CASE WHEN old.avatar_sha256 IS DISTINCT FROM $2 OR g.avatar_updated_at IS NULL
THEN now() ELSE g.avatar_updated_at END
FROM old WHERE g.id = $1
RETURNING g.avatar_sha256 AS sha256, g.avatar_mime AS mime_type, g.avatar_bytes AS bytes,
g.avatar_width AS width, g.avatar_height AS height, g.avatar_updated_at AS updated_at,
(old.avatar_sha256 IS DISTINCT FROM $2) AS changed
"#;

impl AccountsRepo for PgStore {
    fn list_accounts(&self, agent: AgentRef) -> BoxFuture<'_, anyhow::Result<Vec<AccountView>>> {
        self.read(async move |conn| {
            let accounts = agent_accounts(conn, agent, false).await?;
            Ok(accounts.into_iter().map(|(a, _)| a).collect())
        })
    }

    fn resolve<'a>(
        &'a self,
        agent: AgentRef,
        code: &'a CodeRef,
    ) -> BoxFuture<'a, anyhow::Result<Result<ResolvedAccount, LookupError>>> {
        self.read(async move |conn| {
            let rows: Vec<ResolveRow> = sql!(
                RESOLVE,
                agent.workspace_id,
                agent.agent_id,
                code.code.as_str(),
                code.platform.map(Platform::as_str),
                PersonaStatus::Retired.as_str()
            )
            .load(conn)
            .await?;
            let row = match pick_slot(rows, code.code.as_str(), code.platform, |r| &r.slot) {
                Ok(r) => r,
                Err(e) => return Ok(Err(e)),
            };
            Ok(Ok(ResolvedAccount {
                slot_id: row.slot.slot_id,
                platform: platform(&row.slot.platform)?,
                state: row.state.map(|s| s.0),
                code: row.slot.code,
                timezone: row.timezone,
                generation_id: row.generation_id,
                generation: row.generation,
                avatar_sha256: row.avatar_sha256,
            }))
        })
    }

    fn add_account<'a>(
        &'a self,
        agent: AgentRef,
        account: &'a NewAccount,
    ) -> BoxFuture<'a, anyhow::Result<Result<AddedAccount, AddRefusal>>> {
        self.tx(async move |conn| {
            // The agent the persona of the workspace is assigned to; a retired persona is
            // hidden from agents.
            let owner: Option<Option<Uuid>> = personas::table
                .filter(personas::id.eq(account.persona_id))
                .filter(personas::workspace_id.eq(agent.workspace_id))
                .filter(personas::status.ne(PersonaStatus::Retired.as_str()))
                .select(personas::agent_id)
                .get_result(conn)
                .await
                .optional()?;
            if let Err(refusal) = check_persona(owner, agent.agent_id) {
                return Ok(Err(refusal));
            }
            // A new code; nothing when the organization already has it on that platform.
            let inserted: Option<Uuid> = diesel::insert_into(account_slots::table)
                .values((
                    account_slots::organization_id.eq(agent.organization_id),
                    account_slots::workspace_id.eq(agent.workspace_id),
                    account_slots::persona_id.eq(account.persona_id),
                    account_slots::code.eq(account.code.as_str()),
                    account_slots::platform.eq(account.platform.as_str()),
                    account_slots::market.eq(account.market.as_str()),
                    account_slots::timezone.eq(account.market.zone_name()),
                    account_slots::handle.eq(account.handle.as_deref()),
                ))
                .on_conflict((
                    account_slots::organization_id,
                    account_slots::platform,
                    account_slots::code,
                ))
                .do_nothing()
                .returning(account_slots::id)
                .get_result(conn)
                .await
                .optional()?;
            if let Some(slot_id) = inserted {
                // The first live account behind a new code.
                let generation: Uuid = diesel::insert_into(account_generations::table)
                    .values((
                        account_generations::slot_id.eq(slot_id),
                        account_generations::generation.eq(1),
                        account_generations::state.eq(account.state.as_str()),
                        account_generations::onboarded_at
                            .eq(jiff_diesel::NullableDate::from(account.onboarded_at)),
                    ))
                    .returning(account_generations::id)
                    .get_result(conn)
                    .await?;
                return Ok(Ok(AddedAccount {
                    slot_id,
                    account_id: generation,
                    code: account.code.to_string(),
                    platform: account.platform,
                    market: account.market,
                    created: true,
                }));
            }
            let existing: ExistingSlot = sql!(
                EXISTING_SLOT,
                agent.organization_id,
                account.platform.as_str(),
                account.code.as_str()
            )
            .get_result(conn)
            .await?;
            if let Err(refusal) = check_existing(existing.persona_id, account.persona_id) {
                return Ok(Err(refusal));
            }
            Ok(Ok(AddedAccount {
                slot_id: existing.slot_id,
                account_id: answering_account(existing.slot_id, existing.generation_id),
                code: account.code.to_string(),
                platform: account.platform,
                market: existing.market.0,
                created: false,
            }))
        })
    }

    fn change_state<'a>(
        &'a self,
        agent: AgentRef,
        change: &'a StateChange,
    ) -> BoxFuture<'a, anyhow::Result<StateOutcome>> {
        self.tx(async move |conn| {
            let locked: LockedGeneration = sql!(LOCK_GENERATION, change.generation_id)
                .get_result(conn)
                .await?;
            let current = locked.state.0;
            let movement = apply_report(current, change.report);
            let StateMove::Changed {
                from,
                to,
                opens_ban_decision,
                stocks_posts,
            } = movement
            else {
                // A repeated ban answers with the decision still waiting for a person.
                let decision = if answers_with_open_decision(current, movement) {
                    open_decision_of(conn, change.generation_id)
                        .await?
                        .map(opened)
                } else {
                    None
                };
                return Ok(StateOutcome {
                    movement,
                    state: current,
                    decision,
                    stocked_posts: 0,
                });
            };
            sql!(
                RECORD_STATE_CHANGE,
                change.generation_id,
                to.as_str(),
                from.as_str(),
                change.report.as_str(),
                change.reason.as_deref(),
                jiff_diesel::Timestamp::from(change.occurred_at),
                agent.agent_id,
                change.origin.as_ref()
            )
            .execute(conn)
            .await?;
            let decision = if opens_ban_decision {
                Some(open_ban_decision(conn, agent, &locked, change).await?)
            } else {
                None
            };
            let stocked = if stocks_posts {
                crate::inventory::stock_slot_posts(
                    conn,
                    locked.slot_id,
                    agent.agent_id,
                    change.reason.as_deref(),
                    to.as_str(),
                )
                .await?
            } else {
                Vec::new()
            };
            // The change, then each post it stocked: one insert.
            let account = AccountSubject {
                workspace_id: locked.workspace_id,
                slot_id: locked.slot_id,
                code: locked.code.clone(),
                platform: platform(&locked.platform)?,
                persona_agent: locked.persona_agent,
            };
            let reason = change.reason.as_deref();
            let events: Vec<_> = movement
                .event(&account, reason)
                .into_iter()
                .chain(rotation_stocked(&account, &stocked, reason))
                .collect();
            crate::events::write(conn, &events).await?;
            Ok(StateOutcome {
                movement,
                state: to,
                decision,
                stocked_posts: stocked.len() as i64,
            })
        })
    }

    fn set_avatar<'a>(
        &'a self,
        generation_id: Uuid,
        image: &'a AvatarImage,
        storage_key: &'a str,
    ) -> BoxFuture<'a, anyhow::Result<(StoredAvatar, bool)>> {
        self.read(async move |conn| {
            let row: SetAvatarRow = sql!(
                SET_AVATAR,
                generation_id,
                &image.sha256,
                image.kind.mime_type(),
                image.bytes.len() as i64,
                image.width.map(|w| w as i32),
                image.height.map(|h| h as i32),
                storage_key
            )
            .get_result(conn)
            .await?;
            Ok((row.avatar.into(), row.changed))
        })
    }

    fn record_heartbeat<'a>(
        &'a self,
        agent: AgentRef,
        input: &'a HeartbeatInput,
    ) -> BoxFuture<'a, anyhow::Result<HeartbeatRecord>> {
        self.read(async move |conn| {
            let counts = Value::Object(input.counts.clone());
            let row: RunRow = sql!(
                RECORD_HEARTBEAT,
                agent.agent_id,
                &input.run_id,
                input.summary.as_deref(),
                &counts
            )
            .get_result(conn)
            .await?;
            Ok(row.into())
        })
    }

    fn rotation(&self, agent: AgentRef) -> BoxFuture<'_, anyhow::Result<Vec<RotationAccount>>> {
        self.read(async move |conn| {
            let accounts = agent_accounts(conn, agent, true).await?;
            Ok(accounts
                .into_iter()
                .map(|(a, inventory)| RotationAccount {
                    slot_id: a.slot_id,
                    code: a.code,
                    platform: a.platform,
                    market: a.market,
                    persona: a.persona,
                    state: a.state,
                    daily_target: a.daily_target,
                    inventory,
                })
                .collect())
        })
    }

    fn day_counts<'a>(
        &'a self,
        agent: AgentRef,
        dates: &'a [(Market, jiff::civil::Date)],
    ) -> BoxFuture<'a, anyhow::Result<Vec<(Uuid, jiff::civil::Date, DayCount)>>> {
        self.read(async move |conn| {
            let [published, scheduled, planned] = day_statuses();
            let rows: Vec<DayCountRow> = sql!(
                DAY_COUNTS,
                agent.workspace_id,
                agent.agent_id,
                column(dates, |(m, _)| m.as_str()),
                column(dates, |(_, d)| jiff_diesel::Date::from(*d)),
                published,
                scheduled,
                planned
            )
            .load(conn)
            .await?;
            Ok(rows
                .into_iter()
                .map(|r| (r.slot_id, r.day.into(), r.count.into()))
                .collect())
        })
    }
}

/// The statuses that hold a market date by each of a post's times
/// ([`fleetdesk_posts::post::DayTime`]): published, scheduled, planned. Bound as `$5`, `$6`,
/// `$7` of [`DAY_COUNTS`] and of the inventory's `DAY_COMMITTED`.
pub(crate) fn day_statuses() -> [Vec<&'static str>; 3] {
    [DayTime::Published, DayTime::Scheduled, DayTime::Planned].map(DayTime::statuses)
}

/// Per account and market date: posts reported published or scheduled on it, and posts
/// approved or in review planned for it ([`day_statuses`]). Each date applies to the accounts of its market and
/// is read in the account's zone. Each count reads one day's range of its own partial index,
/// so the cost follows the accounts, not their history.
const DAY_COUNTS: &str = r#"
SELECT s.id AS slot_id, d.day,
       (SELECT count(*) FROM posts p
         WHERE p.slot_id = s.id AND p.status = ANY($5)
           AND p.published_at >= d.lo AND p.published_at < d.hi) AS published,
       (SELECT count(*) FROM posts p
         WHERE p.slot_id = s.id AND p.status = ANY($6)
           AND p.scheduled_for >= d.lo AND p.scheduled_for < d.hi) AS scheduled,
       (SELECT count(*) FROM posts p
         WHERE p.slot_id = s.id AND p.status = ANY($7)
           AND p.planned_at >= d.lo AND p.planned_at < d.hi) AS planned
FROM account_slots s
JOIN personas pe ON pe.id = s.persona_id
CROSS JOIN LATERAL (
    SELECT t.day, (t.day::timestamp AT TIME ZONE s.timezone) AS lo,
           ((t.day + 1)::timestamp AT TIME ZONE s.timezone) AS hi
    FROM unnest($3::text[], $4::date[]) AS t(market, day)
    WHERE t.market = s.market
) d
WHERE s.workspace_id = $1 AND pe.agent_id = $2
"#;

row! {
    struct DayCountRow {
        slot_id: Uuid,
        day: jiff_diesel::Date,
        #[diesel(embed)]
        count: CountRow,
    }
}

row! {
    struct CountRow into DayCount {
        published: i64,
        scheduled: i64,
        planned: i64,
    }
}

/// The agent's accounts, each with its stocked posts when asked (0 otherwise): one statement.
async fn agent_accounts(
    conn: &mut AsyncPgConnection,
    agent: AgentRef,
    with_inventory: bool,
) -> anyhow::Result<Vec<(AccountView, i64)>> {
    let rows: Vec<AccountRow> = sql!(
        AGENT_ACCOUNTS,
        agent.workspace_id,
        agent.agent_id,
        PostStatus::Stocked.as_str(),
        with_inventory
    )
    .load(conn)
    .await?;
    Ok(rows
        .into_iter()
        .map(|r| (r.view.into(), r.inventory))
        .collect())
}

/// The open ban decision of a generation, if any.
async fn open_decision_of(
    conn: &mut AsyncPgConnection,
    generation_id: Uuid,
) -> anyhow::Result<Option<DecisionRow>> {
    Ok(decisions::table
        .filter(decisions::generation_id.eq(generation_id))
        .filter(decisions::kind.eq(BAN_DECISION_KIND))
        // Still waiting for a person.
        .filter(decisions::status.eq(DecisionStatus::Open.as_str()))
        .select(DecisionRow::as_select())
        .first(conn)
        .await
        .optional()?)
}

fn opened(row: DecisionRow) -> OpenedDecision {
    OpenedDecision {
        id: row.id,
        kind: BAN_DECISION_KIND.to_owned(),
        status: row.status,
        question: row.question.unwrap_or_default(),
        options: serde_json::from_value(row.options).unwrap_or_default(),
    }
}

async fn open_ban_decision(
    conn: &mut AsyncPgConnection,
    agent: AgentRef,
    locked: &LockedGeneration,
    change: &StateChange,
) -> anyhow::Result<OpenedDecision> {
    // One open ban decision per generation: a repeated ban report reuses it.
    let row = match open_decision_of(conn, change.generation_id).await? {
        Some(row) => row,
        None => {
            let decision = ban_decision(
                &locked.code,
                &locked.platform,
                locked.generation,
                change.reason.as_deref(),
                change.occurred_at,
            );
            let BanDecision {
                title,
                question,
                detail,
            } = &decision;
            // A pending decision for a person.
            let row: DecisionRow = diesel::insert_into(decisions::table)
                .values((
                    decisions::organization_id.eq(locked.organization_id),
                    decisions::workspace_id.eq(locked.workspace_id),
                    decisions::kind.eq(BAN_DECISION_KIND),
                    decisions::persona_id.eq(locked.persona_id),
                    decisions::slot_id.eq(locked.slot_id),
                    decisions::generation_id.eq(change.generation_id),
                    decisions::title.eq(&title),
                    decisions::question.eq(&question),
                    decisions::options.eq(serde_json::json!(BAN_OPTIONS)),
                    decisions::detail.eq(&detail),
                    decisions::opened_by_agent.eq(agent.agent_id),
                ))
                .returning(DecisionRow::as_returning())
                .get_result(conn)
                .await?;
            let event = decision.opened(row.id, locked.workspace_id, locked.persona_agent);
            crate::events::write(conn, &[event]).await?;
            row
        }
    };
    Ok(opened(row))
}

statements!(
    AGENT_ACCOUNTS => AccountRow,
    RECORD_HEARTBEAT => RunRow,
    RESOLVE => ResolveRow,
    EXISTING_SLOT => ExistingSlot,
    LOCK_GENERATION => LockedGeneration,
    RECORD_STATE_CHANGE,
    SET_AVATAR => SetAvatarRow,
    DAY_COUNTS => DayCountRow,
);
