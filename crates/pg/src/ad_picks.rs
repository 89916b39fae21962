//! The ad pick port over PostgreSQL: a person's pick numbered in its organization (a counter
//! row on the organization, so numbers never repeat) and stored with the research card in one
//! transaction; an agent reads the picks on the accounts of its personas.

use crate::accounts::{SlotCodes, pick_slot};
use crate::db::{PgStore, Ts};
use crate::rows::Stored;
use crate::schema::{account_slots, ad_picks, organizations};
use diesel::prelude::*;
use diesel::sql_types::{Nullable, Uuid as SqlUuid};
use diesel_async::{AsyncPgConnection, RunQueryDsl};
use fleetdesk_accounts::ports::LookupError;
use fleetdesk_ads::pick::{
    PickFilter, PickNumber, PickSource, PickStatus, account_refusal, check_source, judge_cancel,
    one_in_reach,
};
use fleetdesk_ads::ports::{Named, NewPick, PICKS_LISTED, PickPerson, PickRecord, PickRepo};
use fleetdesk_ads::research::ItemOutcome;
use fleetdesk_ads::{AdsMissing, AdsRefusal};
use fleetdesk_kernel::{AgentRef, BoxFuture};
use jiff::Timestamp;
use serde_json::Value;
use uuid::Uuid;

statements!(
    SOURCE => SourceRow,
    PICK_BY_ID => PickRow,
    AGENT_PICK => PickRow,
    AGENT_PICKS => PickRow,
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

row! {
    struct SourceRow into PickSource {
        organization_id: Uuid,
        workspace_id: Uuid,
        position: Option<i16>,
        outcome: Option<Stored<ItemOutcome>>,
        card: Option<Value>,
    }
}

row! {
    struct PickRow {
        number: i64,
        status: Stored<PickStatus>,
        organization_id: Uuid,
        code: String,
        platform: String,
        persona_id: Uuid,
        persona_name: String,
        note: Option<String>,
        card: Value,
        research_id: Uuid,
        item: String,
        post_id: Option<Uuid>,
        created_at: Ts,
        created_by_id: Uuid,
        created_by_name: String,
        drafted_at: Option<Ts>,
        cancelled_at: Option<Ts>,
        cancelled_by_id: Option<Uuid>,
        cancelled_by_name: Option<String>,
    }
}

impl PickRow {
    fn record(self) -> PickRecord {
        PickRecord {
            number: PickNumber(self.number),
            status: self.status.0,
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
            created_at: self.created_at.into(),
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
        }
    }
}

async fn by_id(conn: &mut AsyncPgConnection, id: Uuid) -> anyhow::Result<PickRecord> {
    let row: PickRow = sql!(PICK_BY_ID, id).get_result(conn).await?;
    Ok(row.record())
}

async fn create_tx(
    conn: &mut AsyncPgConnection,
    person: PickPerson,
    pick: &NewPick,
) -> anyhow::Result<Result<PickRecord, AdsRefusal>> {
    let source: Option<SourceRow> =
        sql!(SOURCE, pick.research_id, person.organization_id, &pick.item)
            .get_result(conn)
            .await
            .optional()?;
    let source = match check_source(pick.research_id, &pick.item, source.map(Into::into)) {
        Ok(source) => source,
        Err(refusal) => return Ok(Err(refusal)),
    };
    // The accounts of the workspace answering to the code, current or legacy.
    let slots: Vec<(Uuid, String, Option<String>, String)> = account_slots::table
        .filter(account_slots::workspace_id.eq(source.workspace_id))
        .filter(
            account_slots::code
                .eq(&pick.code)
                .or(account_slots::legacy_code.eq(&pick.code)),
        )
        .select((
            account_slots::id,
            account_slots::code,
            account_slots::legacy_code,
            account_slots::platform,
        ))
        .load(conn)
        .await?;
    let slots = slots
        .into_iter()
        .map(|(slot_id, code, legacy_code, platform)| SlotCodes {
            slot_id,
            code,
            legacy_code,
            platform,
            mine: true,
        });
    let slot = match pick_slot(slots, &pick.code, pick.platform, |s| s) {
        Ok(slot) => slot,
        Err(e) => {
            return Ok(Err(account_refusal(
                &pick.code,
                e == LookupError::Ambiguous,
            )));
        }
    };
    // The organization's next pick number, taken.
    let number: i64 = diesel::update(organizations::table.find(source.organization_id))
        .set(organizations::next_pick.eq(organizations::next_pick + 1_i64))
        .returning(organizations::next_pick - 1_i64)
        .get_result(conn)
        .await?;
    let id: Uuid = diesel::insert_into(ad_picks::table)
        .values((
            ad_picks::organization_id.eq(source.organization_id),
            ad_picks::number.eq(number),
            ad_picks::workspace_id.eq(source.workspace_id),
            ad_picks::slot_id.eq(slot.slot_id),
            ad_picks::research_id.eq(pick.research_id),
            ad_picks::position.eq(source.position),
            ad_picks::note.eq(pick.note.as_deref()),
            ad_picks::card.eq(&source.card),
            ad_picks::created_at.eq(Ts::from(pick.now)),
            ad_picks::created_by.eq(person.person_id),
        ))
        .returning(ad_picks::id)
        .get_result(conn)
        .await?;
    Ok(Ok(by_id(conn, id).await?))
}

async fn cancel_tx(
    conn: &mut AsyncPgConnection,
    person: PickPerson,
    number: PickNumber,
    now: Timestamp,
) -> anyhow::Result<Result<(PickRecord, bool), AdsRefusal>> {
    // The picks so numbered in reach (the person's organization, or every one when none),
    // locked.
    let in_reach = person.organization_id.into_sql::<Nullable<SqlUuid>>();
    let rows: Vec<(Uuid, Stored<PickStatus>)> = ad_picks::table
        .filter(ad_picks::number.eq(number.0))
        .filter(
            in_reach
                .is_null()
                .or(ad_picks::organization_id.nullable().eq(in_reach)),
        )
        .order(ad_picks::organization_id)
        .limit(2)
        .select((ad_picks::id, ad_picks::status))
        .for_update()
        .load(conn)
        .await?;
    let (id, status) = match one_in_reach(number, rows) {
        Ok(found) => found,
        Err(refusal) => return Ok(Err(refusal)),
    };
    let changed = judge_cancel(status.0);
    if changed {
        diesel::update(ad_picks::table.find(id))
            .set((
                ad_picks::status.eq(PickStatus::Cancelled.as_str()),
                ad_picks::cancelled_at.eq(Ts::from(now)),
                ad_picks::cancelled_by.eq(person.person_id),
            ))
            .execute(conn)
            .await?;
    }
    Ok(Ok((by_id(conn, id).await?, changed)))
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
            let row: Option<PickRow> =
                sql!(AGENT_PICK, agent.workspace_id, agent.agent_id, number.0)
                    .get_result(conn)
                    .await
                    .optional()?;
            let missing = AdsRefusal::NotFound(AdsMissing::Pick(number));
            Ok(row.map(PickRow::record).ok_or(missing))
        })
    }

    fn list(
        &self,
        agent: AgentRef,
        filter: PickFilter,
    ) -> BoxFuture<'_, anyhow::Result<Vec<PickRecord>>> {
        self.snapshot(async move |conn| {
            let rows: Vec<PickRow> = sql!(
                AGENT_PICKS,
                agent.workspace_id,
                agent.agent_id,
                filter.statuses(),
                PICKS_LISTED
            )
            .load(conn)
            .await?;
            Ok(rows.into_iter().map(PickRow::record).collect())
        })
    }
}
