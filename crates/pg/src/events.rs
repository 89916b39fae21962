//! The event log over PostgreSQL: events written in their change's transaction, numbered at
//! commit by the `events_number` trigger (see the migration), read by the agents' feeds, and
//! the wake-up: one connection per instance listens on `fleetdesk_events` and wakes the
//! feeds waiting on the workspace a commit names.

use crate::db::{PgStore, Ts, Tx};
use crate::schema::events;
use diesel::dsl::max;
use diesel::prelude::*;
use diesel_async::{AsyncConnection, AsyncPgConnection, RunQueryDsl};
use fleetdesk_events::ports::{EventLog, FeedRead, StoredEvent, Waiter, Wakeup};
use fleetdesk_kernel::BoxFuture;
use fleetdesk_kernel::events::{EventBody, NewEvent};
use futures_util::StreamExt;
use jiff::Timestamp;
use serde_json::Value;
use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;
use tokio::sync::watch;
use uuid::Uuid;

statements!();

/// The channel the numbering trigger notifies, with the workspace's id as the payload.
const CHANNEL: &str = "fleetdesk_events";

/// How long a lost listening connection waits before it is opened again.
const RECONNECT_AFTER: Duration = Duration::from_secs(1);

/// Writes `events` in the transaction `conn` is in, in one statement, at the transaction's
/// time; nothing when there are none. They are numbered when the transaction commits.
pub(crate) async fn write(conn: Tx<'_>, events: &[NewEvent]) -> anyhow::Result<()> {
    if events.is_empty() {
        return Ok(());
    }
    let rows: Vec<_> = events
        .iter()
        .map(|e| {
            (
                events::id.eq(Uuid::now_v7()),
                events::kind.eq(e.body.kind().as_str()),
                events::workspace_id.eq(e.workspace_id),
                events::agent_id.eq(e.agent_id),
                events::object_id.eq(e.object_id),
                events::data.eq(e.body.data()),
            )
        })
        .collect();
    diesel::insert_into(events::table)
        .values(rows)
        .execute(conn)
        .await?;
    Ok(())
}

type EventRow = (i64, Uuid, String, Ts, Uuid, Uuid, Value);

impl EventLog for PgStore {
    fn feed<'a>(
        &'a self,
        read: FeedRead<'a>,
    ) -> BoxFuture<'a, anyhow::Result<(Vec<StoredEvent>, i64)>> {
        let (owned, workspace) = read.kinds.texts();
        self.snapshot(async move |conn| {
            // The head first: every event up to it is committed, and the page below sees them.
            let head: Option<i64> = events::table
                .filter(events::workspace_id.eq(read.workspace_id))
                .select(max(events::seq))
                .get_result(conn)
                .await?;
            let rows: Vec<EventRow> = events::table
                .filter(events::workspace_id.eq(read.workspace_id))
                .filter(events::seq.gt(read.after))
                .filter(
                    events::kind.eq_any(workspace).or(events::kind
                        .eq_any(owned)
                        .and(events::agent_id.eq(read.agent_id))),
                )
                .order(events::seq.asc())
                .limit(read.limit)
                .select((
                    events::seq.assume_not_null(),
                    events::id,
                    events::kind,
                    events::occurred_at,
                    events::workspace_id,
                    events::object_id,
                    events::data,
                ))
                .load(conn)
                .await?;
            let events = rows
                .into_iter()
                .filter_map(|(seq, id, kind, at, workspace_id, object_id, data)| {
                    // A body this version cannot read (written by a newer one) is skipped.
                    let body = EventBody::stored(&kind, data)?;
                    Some(StoredEvent {
                        seq,
                        id,
                        occurred_at: at.to_jiff(),
                        workspace_id,
                        object_id,
                        body,
                    })
                })
                .collect();
            Ok((events, head.unwrap_or(0)))
        })
    }
}

impl PgStore {
    /// Deletes events older than `before` (events are kept
    /// [`EVENTS_KEPT`](fleetdesk_kernel::events::EVENTS_KEPT)): how many.
    pub async fn prune_events(&self, before: Timestamp) -> anyhow::Result<usize> {
        let mut conn = self.conn().await?;
        let pruned = diesel::delete(events::table.filter(events::occurred_at.lt(Ts::from(before))))
            .execute(&mut conn)
            .await?;
        Ok(pruned)
    }

    /// Wakes this store's waiting feeds when events commit, on any instance: from the first
    /// wait on, a connection of its own to `url` listens for the commits' notifications.
    pub fn listen_for_events(mut self, url: &str) -> PgStore {
        self.wakeups = Arc::new(Wakeups {
            url: Some(url.to_owned()),
            ..Wakeups::default()
        });
        self
    }
}

/// The feeds waiting on each workspace, and the task that wakes them.
#[derive(Default)]
pub(crate) struct Wakeups {
    /// Where to listen; none: waits only run out (a store that serves no feeds).
    url: Option<String>,
    /// Each workspace's count of commits seen, watched by its waiters.
    workspaces: Mutex<HashMap<Uuid, watch::Sender<u64>>>,
    /// The count of commits of any workspace seen.
    any: watch::Sender<u64>,
    listening: OnceLock<()>,
}

impl Wakeups {
    /// Counts a commit of `workspace`, waking its waiters; forgets a workspace nobody waits on.
    fn commit(&self, workspace: Uuid) {
        self.any.send_modify(|n| *n += 1);
        let mut workspaces = self.workspaces.lock().expect("not poisoned");
        if let Some(sender) = workspaces.get(&workspace) {
            if sender.receiver_count() == 0 {
                workspaces.remove(&workspace);
            } else {
                sender.send_modify(|n| *n += 1);
            }
        }
    }

    /// Wakes every waiter: notifications may have been lost with a connection.
    fn all(&self) {
        self.any.send_modify(|n| *n += 1);
        let workspaces = self.workspaces.lock().expect("not poisoned");
        for sender in workspaces.values() {
            sender.send_modify(|n| *n += 1);
        }
    }

    fn subscribe(&self, workspace: Uuid) -> watch::Receiver<u64> {
        let mut workspaces = self.workspaces.lock().expect("not poisoned");
        workspaces
            .entry(workspace)
            .or_insert_with(|| watch::channel(0).0)
            .subscribe()
    }
}

/// Listens on [`CHANNEL`] for as long as the process runs, opening the connection again
/// when it is lost.
async fn listen(wakeups: Arc<Wakeups>, url: String) {
    loop {
        match listen_once(&wakeups, &url).await {
            Ok(()) => tracing::warn!("the events listener's connection ended"),
            Err(e) => tracing::warn!(error = %e, "the events listener's connection failed"),
        }
        tokio::time::sleep(RECONNECT_AFTER).await;
    }
}

async fn listen_once(wakeups: &Wakeups, url: &str) -> anyhow::Result<()> {
    let mut conn = AsyncPgConnection::establish(url).await?;
    diesel::sql_query(format!("LISTEN {CHANNEL}"))
        .execute(&mut conn)
        .await?;
    // Whatever committed while no connection listened.
    wakeups.all();
    let mut notifications = std::pin::pin!(conn.notifications_stream());
    while let Some(notification) = notifications.next().await {
        let notification = notification?;
        match notification.payload.parse() {
            Ok(workspace) => wakeups.commit(workspace),
            Err(_) => wakeups.all(),
        }
    }
    Ok(())
}

impl PgStore {
    /// Starts listening for commits, once.
    fn listening(&self) -> &Arc<Wakeups> {
        let wakeups = &self.wakeups;
        if let Some(url) = &wakeups.url {
            wakeups.listening.get_or_init(|| {
                tokio::spawn(listen(wakeups.clone(), url.clone()));
            });
        }
        wakeups
    }

    /// A count that rises whenever events of any workspace commit (on any instance): what
    /// the webhook deliveries wait on between rounds.
    pub fn commits(&self) -> watch::Receiver<u64> {
        self.listening().any.subscribe()
    }
}

impl Wakeup for PgStore {
    fn watch(&self, workspace_id: Uuid) -> Box<dyn Waiter> {
        let receiver = self.listening().subscribe(workspace_id);
        Box::new(CommitWaiter(receiver))
    }
}

/// A feed's wait on its workspace's commits.
struct CommitWaiter(watch::Receiver<u64>);

impl Waiter for CommitWaiter {
    fn wait(&mut self, until: Timestamp) -> BoxFuture<'_, bool> {
        Box::pin(async move {
            let left = until.duration_since(Timestamp::now());
            let Ok(left) = Duration::try_from(left) else {
                return false;
            };
            matches!(
                tokio::time::timeout(left, self.0.changed()).await,
                Ok(Ok(()))
            )
        })
    }
}
