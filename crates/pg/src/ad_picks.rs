//! The ad pick port over PostgreSQL: a person's pick numbered in its organization (a counter
//! row on the organization, so numbers never repeat) and stored with the research card in one
//! transaction; an agent reads the picks on the accounts of its personas.

use crate::accounts::{SlotCodes, pick_slot};
use crate::db::{PgStore, prepared};
use diesel::sql_types::{
    Array, BigInt, Jsonb, Nullable, SmallInt, Text, Timestamptz, Uuid as SqlUuid,
};
use diesel::{OptionalExtension, QueryableByName};
use diesel_async::{AsyncPgConnection, RunQueryDsl};
use fleetdesk_accounts::ports::LookupError;
use fleetdesk_ads::AdsRefusal;
use fleetdesk_ads::pick::{PickFilter, PickNumber, PickStatus, check_pickable, judge_cancel};
use fleetdesk_ads::ports::{Named, NewPick, PICKS_LISTED, PickPerson, PickRecord, PickRepo};
use fleetdesk_kernel::{AgentRef, BoxFuture};
use jiff::Timestamp;
use serde_json::Value;
use uuid::Uuid;

type Ts = jiff_diesel::Timestamp;

statements!(
    SOURCE,
    SLOTS,
    NUMBER,
    INSERT_PICK,
    LOCK_PICK,
    CANCEL_PICK,
    PICK_BY_ID,
    AGENT_PICK,
    AGENT_PICKS,
);

/// The research request in reach (`$2`: the organization, null for every one) and the item
/// `$3` of it, if it asked for that item.
const SOURCE: &str = r#"
SELECT r.organization_id, r.workspace_id, i.position, i.outcome, i.card
FROM ad_research r
LEFT JOIN ad_research_items i ON i.research_id = r.id AND i.item = $3
WHERE r.id = $1 AND ($2::uuid IS NULL OR r.organization_id = $2)
ORDER BY i.position
LIMIT 1
"#;

/// The accounts of the workspace answering to the code, current or legacy.
const SLOTS: &str = r#"
SELECT s.id AS slot_id, s.code, s.legacy_code, s.platform, true AS mine
FROM account_slots s
WHERE s.workspace_id = $1 AND (s.code = $2 OR s.legacy_code = $2)
"#;

/// The organization's next pick number, taken.
const NUMBER: &str = r#"
UPDATE organizations SET next_pick = next_pick + 1 WHERE id = $1
RETURNING next_pick - 1 AS number
"#;

const INSERT_PICK: &str = r#"
INSERT INTO ad_picks (organization_id, number, workspace_id, slot_id, research_id, position,
                      note, card, created_at, created_by)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)
RETURNING id
"#;

/// The picks numbered `$1` in reach (`$2`: the organization, null for every one), locked.
const LOCK_PICK: &str = r#"
SELECT id, status FROM ad_picks
WHERE number = $1 AND ($2::uuid IS NULL OR organization_id = $2)
ORDER BY organization_id
LIMIT 2
FOR UPDATE
"#;

const CANCEL_PICK: &str = r#"
UPDATE ad_picks SET status = 'cancelled', cancelled_at = $2, cancelled_by = $3 WHERE id = $1
"#;

/// A pick with its account, persona, item and the people named on it.
macro_rules! pick_select {
    () => {
        r#"
SELECT p.number, p.status, p.organization_id, s.code, s.platform, pe.id AS persona_id,
       pe.name AS persona_name, p.note, p.card, p.research_id, i.item, p.post_id, p.created_at,
       cb.id AS created_by_id, cb.name AS created_by_name, p.drafted_at, p.cancelled_at,
       xb.id AS cancelled_by_id, xb.name AS cancelled_by_name
FROM ad_picks p
JOIN account_slots s ON s.id = p.slot_id
JOIN personas pe ON pe.id = s.persona_id
JOIN ad_research_items i ON i.research_id = p.research_id AND i.position = p.position
JOIN people cb ON cb.id = p.created_by
LEFT JOIN people xb ON xb.id = p.cancelled_by
"#
    };
}

const PICK_BY_ID: &str = concat!(pick_select!(), "WHERE p.id = $1");

/// The pick numbered `$3` on an account of a persona of the agent (`$2`) in its workspace.
const AGENT_PICK: &str = concat!(
    pick_select!(),
    "WHERE p.workspace_id = $1 AND pe.agent_id = $2 AND p.number = $3"
);

/// The agent's picks of the statuses `$3`, newest first, at most `$4`.
const AGENT_PICKS: &str = concat!(
    pick_select!(),
    "WHERE p.workspace_id = $1 AND pe.agent_id = $2 AND p.status = ANY($3)
ORDER BY p.number DESC
LIMIT $4"
);

#[derive(QueryableByName)]
struct SourceRow {
    #[diesel(sql_type = SqlUuid)]
    organization_id: Uuid,
    #[diesel(sql_type = SqlUuid)]
    workspace_id: Uuid,
    #[diesel(sql_type = Nullable<SmallInt>)]
    position: Option<i16>,
    #[diesel(sql_type = Nullable<Text>)]
    outcome: Option<String>,
    #[diesel(sql_type = Nullable<Jsonb>)]
    card: Option<Value>,
}

#[derive(QueryableByName)]
struct SlotRow {
    #[diesel(embed)]
    slot: SlotCodes,
}

#[derive(QueryableByName)]
struct NumberRow {
    #[diesel(sql_type = BigInt)]
    number: i64,
}

#[derive(QueryableByName)]
struct IdRow {
    #[diesel(sql_type = SqlUuid)]
    id: Uuid,
}

#[derive(QueryableByName)]
struct LockRow {
    #[diesel(sql_type = SqlUuid)]
    id: Uuid,
    #[diesel(sql_type = Text)]
    status: String,
}

#[derive(QueryableByName)]
struct PickRow {
    #[diesel(sql_type = BigInt)]
    number: i64,
    #[diesel(sql_type = Text)]
    status: String,
    #[diesel(sql_type = SqlUuid)]
    organization_id: Uuid,
    #[diesel(sql_type = Text)]
    code: String,
    #[diesel(sql_type = Text)]
    platform: String,
    #[diesel(sql_type = SqlUuid)]
    persona_id: Uuid,
    #[diesel(sql_type = Text)]
    persona_name: String,
    #[diesel(sql_type = Nullable<Text>)]
    note: Option<String>,
    #[diesel(sql_type = Jsonb)]
    card: Value,
    #[diesel(sql_type = SqlUuid)]
    research_id: Uuid,
    #[diesel(sql_type = Text)]
    item: String,
    #[diesel(sql_type = Nullable<SqlUuid>)]
    post_id: Option<Uuid>,
    #[diesel(sql_type = Timestamptz)]
    created_at: Ts,
    #[diesel(sql_type = SqlUuid)]
    created_by_id: Uuid,
    #[diesel(sql_type = Text)]
    created_by_name: String,
    #[diesel(sql_type = Nullable<Timestamptz>)]
    drafted_at: Option<Ts>,
    #[diesel(sql_type = Nullable<Timestamptz>)]
    cancelled_at: Option<Ts>,
    #[diesel(sql_type = Nullable<SqlUuid>)]
    cancelled_by_id: Option<Uuid>,
    #[diesel(sql_type = Nullable<Text>)]
    cancelled_by_name: Option<String>,
}

impl PickRow {
    fn record(self) -> anyhow::Result<PickRecord> {
        Ok(PickRecord {
            number: PickNumber(self.number),
            status: PickStatus::parse(&self.status)
                .ok_or_else(|| anyhow::anyhow!("stored pick status {:?}", self.status))?,
            organization_id: self.organization_id,
            code: self.code,
            platform: self.platform,
            persona: Named {
                id: self.persona_id,
                name: self.persona_name,
            },
            note: self.note,
            card: self.card,
            research_id: self.research_id,
            item: self.item,
            post_id: self.post_id,
            created_at: self.created_at.to_jiff(),
            created_by: Named {
                id: self.created_by_id,
                name: self.created_by_name,
            },
            drafted_at: self.drafted_at.map(Ts::to_jiff),
            cancelled_at: self.cancelled_at.map(Ts::to_jiff),
            cancelled_by: self
                .cancelled_by_id
                .zip(self.cancelled_by_name)
                .map(|(id, name)| Named { id, name }),
        })
    }
}

fn rejected(field: &str, message: String) -> AdsRefusal {
    AdsRefusal::RejectedField {
        field: field.to_owned(),
        message,
    }
}

fn not_found(number: PickNumber) -> AdsRefusal {
    AdsRefusal::NotFound(format!("no ad pick {number}"))
}

async fn by_id(conn: &mut AsyncPgConnection, id: Uuid) -> anyhow::Result<PickRecord> {
    let row: PickRow = prepared(diesel::sql_query(PICK_BY_ID).bind::<SqlUuid, _>(id))
        .get_result(conn)
        .await?;
    row.record()
}

async fn create_tx(
    conn: &mut AsyncPgConnection,
    person: PickPerson,
    pick: &NewPick,
) -> anyhow::Result<Result<PickRecord, AdsRefusal>> {
    let source: Option<SourceRow> = prepared(
        diesel::sql_query(SOURCE)
            .bind::<SqlUuid, _>(pick.research_id)
            .bind::<Nullable<SqlUuid>, _>(person.organization_id)
            .bind::<Text, _>(&pick.item),
    )
    .get_result(conn)
    .await
    .optional()?;
    let Some(source) = source else {
        return Ok(Err(AdsRefusal::not_there(
            "research_id",
            format!(
                "no research request {} in this organization",
                pick.research_id
            ),
        )));
    };
    let Some(position) = source.position else {
        return Ok(Err(rejected(
            "item",
            format!(
                "research request {} did not ask for {}",
                pick.research_id, pick.item
            ),
        )));
    };
    let card = match check_pickable(&pick.item, source.outcome.as_deref(), source.card.is_some()) {
        Ok(()) => source.card.unwrap_or_default(),
        Err(refusal) => return Ok(Err(refusal)),
    };
    let slots: Vec<SlotRow> = prepared(
        diesel::sql_query(SLOTS)
            .bind::<SqlUuid, _>(source.workspace_id)
            .bind::<Text, _>(&pick.code),
    )
    .load(conn)
    .await?;
    let slot = match pick_slot(slots, &pick.code, pick.platform, |r| &r.slot) {
        Ok(row) => row.slot,
        Err(LookupError::Ambiguous) => {
            return Ok(Err(rejected(
                "platform",
                format!(
                    "{} names accounts on several platforms: give platform",
                    pick.code
                ),
            )));
        }
        Err(LookupError::NotFound | LookupError::NotYours) => {
            return Ok(Err(AdsRefusal::not_there(
                "code",
                format!(
                    "no account {} in the research request's workspace",
                    pick.code
                ),
            )));
        }
    };
    let number: NumberRow =
        prepared(diesel::sql_query(NUMBER).bind::<SqlUuid, _>(source.organization_id))
            .get_result(conn)
            .await?;
    let id: IdRow = prepared(
        diesel::sql_query(INSERT_PICK)
            .bind::<SqlUuid, _>(source.organization_id)
            .bind::<BigInt, _>(number.number)
            .bind::<SqlUuid, _>(source.workspace_id)
            .bind::<SqlUuid, _>(slot.slot_id)
            .bind::<SqlUuid, _>(pick.research_id)
            .bind::<SmallInt, _>(position)
            .bind::<Nullable<Text>, _>(pick.note.as_deref())
            .bind::<Jsonb, _>(&card)
            .bind::<Timestamptz, _>(Ts::from(pick.now))
            .bind::<SqlUuid, _>(person.person_id),
    )
    .get_result(conn)
    .await?;
    Ok(Ok(by_id(conn, id.id).await?))
}

async fn cancel_tx(
    conn: &mut AsyncPgConnection,
    person: PickPerson,
    number: PickNumber,
    now: Timestamp,
) -> anyhow::Result<Result<(PickRecord, bool), AdsRefusal>> {
    let rows: Vec<LockRow> = prepared(
        diesel::sql_query(LOCK_PICK)
            .bind::<BigInt, _>(number.0)
            .bind::<Nullable<SqlUuid>, _>(person.organization_id),
    )
    .load(conn)
    .await?;
    let row = match rows.as_slice() {
        [] => return Ok(Err(not_found(number))),
        [row] => row,
        _ => {
            return Ok(Err(AdsRefusal::Rejected(format!(
                "{number} is a pick number in several organizations: cancel it with a key of \
                 its organization"
            ))));
        }
    };
    let status = PickStatus::parse(&row.status)
        .ok_or_else(|| anyhow::anyhow!("stored pick status {:?}", row.status))?;
    let changed = judge_cancel(status);
    if changed {
        prepared(
            diesel::sql_query(CANCEL_PICK)
                .bind::<SqlUuid, _>(row.id)
                .bind::<Timestamptz, _>(Ts::from(now))
                .bind::<SqlUuid, _>(person.person_id),
        )
        .execute(conn)
        .await?;
    }
    Ok(Ok((by_id(conn, row.id).await?, changed)))
}

impl PickRepo for PgStore {
    fn create<'a>(
        &'a self,
        person: PickPerson,
        pick: &'a NewPick,
    ) -> BoxFuture<'a, anyhow::Result<Result<PickRecord, AdsRefusal>>> {
        self.tx(async move |conn| create_tx(conn, person, pick).await)
    }

    fn cancel(
        &self,
        person: PickPerson,
        number: PickNumber,
        now: Timestamp,
    ) -> BoxFuture<'_, anyhow::Result<Result<(PickRecord, bool), AdsRefusal>>> {
        self.tx(async move |conn| cancel_tx(conn, person, number, now).await)
    }

    fn get(
        &self,
        agent: AgentRef,
        number: PickNumber,
    ) -> BoxFuture<'_, anyhow::Result<Result<PickRecord, AdsRefusal>>> {
        self.snapshot(async move |conn| {
            let row: Option<PickRow> = prepared(
                diesel::sql_query(AGENT_PICK)
                    .bind::<SqlUuid, _>(agent.workspace_id)
                    .bind::<SqlUuid, _>(agent.agent_id)
                    .bind::<BigInt, _>(number.0),
            )
            .get_result(conn)
            .await
            .optional()?;
            match row {
                Some(row) => Ok(Ok(row.record()?)),
                None => Ok(Err(not_found(number))),
            }
        })
    }

    fn list(
        &self,
        agent: AgentRef,
        filter: PickFilter,
    ) -> BoxFuture<'_, anyhow::Result<Vec<PickRecord>>> {
        self.snapshot(async move |conn| {
            let rows: Vec<PickRow> = prepared(
                diesel::sql_query(AGENT_PICKS)
                    .bind::<SqlUuid, _>(agent.workspace_id)
                    .bind::<SqlUuid, _>(agent.agent_id)
                    .bind::<Array<Text>, _>(filter.statuses())
                    .bind::<BigInt, _>(PICKS_LISTED),
            )
            .load(conn)
            .await?;
            rows.into_iter().map(PickRow::record).collect()
        })
    }
}
