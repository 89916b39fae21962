//! Agent API: the agent's feed of events. The operation and its types are
//! `fleetdesk_events::wire`, which events an agent sees `fleetdesk_kernel::events`, the wait
//! `fleetdesk_events::service`.

use crate::ctx::Ctx;
use crate::error::ApiError;
use crate::input::{Nothing, Req};
use crate::op::{ErasedOp, Reply, bind};
use fleetdesk_events::service::FeedQuery;
use fleetdesk_events::wire::{Event, EventCursor, EventList, EventsQuery, agent};
use fleetdesk_kernel::wire::fields::limit_or;
use fleetdesk_tenancy::AgentCaller;
use jiff::Timestamp;

pub fn register(all: &mut Vec<Box<dyn ErasedOp>>) {
    all.push(bind::<agent::ListEvents, _, _, _>(list_events));
}

// ---------------------------------------------------------------------------------------------
// GET /events

async fn list_events(
    ctx: Ctx,
    agent: AgentCaller,
    req: Req<Nothing, EventsQuery, Nothing>,
) -> Result<Reply<EventList>, ApiError> {
    let query = FeedQuery {
        after: req.query.after.map(|c| c.0),
        kinds: req.query.types.map(|t| t.0).unwrap_or_default(),
        wait_seconds: req.query.wait.map_or(0, |w| w.get()),
        limit: limit_or(req.query.limit, 100),
    };
    let feed = ctx
        .events
        .feed(
            agent.agent_ref(),
            agent.role.scopes(),
            &query,
            Timestamp::now(),
        )
        .await?;
    Ok(Reply::ok(EventList {
        events: feed
            .events
            .into_iter()
            .map(|e| Event {
                id: e.id,
                kind: e.body.kind(),
                cursor: EventCursor(e.seq),
                occurred_at: e.occurred_at.into(),
                workspace_id: e.workspace_id,
                object_id: e.object_id,
                data: e.body.into(),
            })
            .collect(),
        next_cursor: EventCursor(feed.next),
    }))
}
