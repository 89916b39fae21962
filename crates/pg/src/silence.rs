//! Silent agents: the sweep loads every agent that reports runs with its last heartbeat (the
//! statement `GET /today` reads them with, [`crate::today::DAY_AGENTS`]), the domain decides
//! which fell silent ([`fleetdesk_events::silence`]), and this writes their `agent.silent`
//! events and when they were told, in one transaction. Only the sweep reads them (one instance
//! at a time, as a job), so nothing is locked.

use crate::db::{PgStore, Ts, column};
use crate::schema::agents;
use crate::today::{AgentRow, DAY_AGENTS, reporting_roles};
use diesel::prelude::*;
use diesel_async::RunQueryDsl;
use fleetdesk_events::silence::{Watched, newly_silent};
use jiff::Timestamp;
use uuid::Uuid;

impl From<AgentRow> for Watched {
    fn from(a: AgentRow) -> Watched {
        Watched {
            agent_id: a.id,
            workspace_id: a.workspace_id,
            name: a.name,
            created_at: a.created_at.to_jiff(),
            last_heartbeat_at: a.last_heartbeat_at.map(|t| t.to_jiff()),
            silent_after_hours: a.silent_after_hours,
            told_at: a.silent_told_at.map(|t| t.to_jiff()),
        }
    }
}

impl PgStore {
    /// Tells `agent.silent` of each agent of a live workspace that fell silent by `now` and
    /// was not told since it was last heard of: how many.
    pub async fn tell_silent_agents(&self, now: Timestamp) -> anyhow::Result<usize> {
        self.tx(async move |conn| {
            let rows: Vec<AgentRow> = sql!(DAY_AGENTS, None::<Uuid>, reporting_roles())
                .load(conn)
                .await?;
            let watched: Vec<Watched> = rows.into_iter().map(Into::into).collect();
            let told = newly_silent(&watched, now);
            if told.is_empty() {
                return Ok(0);
            }
            diesel::update(agents::table.filter(agents::id.eq_any(column(&told, |(id, _)| *id))))
                .set(agents::silent_told_at.eq(Ts::from(now)))
                .execute(conn)
                .await?;
            let events: Vec<_> = told.into_iter().map(|(_, e)| e).collect();
            crate::events::write(conn, &events).await?;
            Ok(events.len())
        })
        .await
    }
}
