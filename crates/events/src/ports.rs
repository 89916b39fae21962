//! The ports: the log the adapter reads, and the wake-up it sends when events commit.

use fleetdesk_kernel::BoxFuture;
use fleetdesk_kernel::events::{EventBody, FeedKinds};
use jiff::Timestamp;
use uuid::Uuid;

/// An event as the log keeps it, numbered in commit order.
#[derive(Debug, Clone, PartialEq)]
pub struct StoredEvent {
    /// Its place in the log: every event committed before it has a smaller one.
    pub seq: i64,
    pub id: Uuid,
    pub occurred_at: Timestamp,
    pub workspace_id: Uuid,
    pub object_id: Uuid,
    pub body: EventBody,
}

/// One read of an agent's feed: the events of `workspace_id` after `after` whose kind is in
/// `kinds` (its owned kinds only when the object is `agent_id`'s), oldest first, at most
/// `limit`.
#[derive(Debug, Clone)]
pub struct FeedRead<'a> {
    pub workspace_id: Uuid,
    pub agent_id: Uuid,
    pub kinds: &'a FeedKinds,
    pub after: i64,
    pub limit: i64,
}

/// The log's read side.
pub trait EventLog: Send + Sync {
    /// The events `read` names, and the workspace's last number as of the same snapshot (0
    /// when it has none): every event up to it is committed, so a reader may resume there.
    fn feed<'a>(
        &'a self,
        read: FeedRead<'a>,
    ) -> BoxFuture<'a, anyhow::Result<(Vec<StoredEvent>, i64)>>;
}

/// What wakes a waiting feed: a signal each time events of a workspace commit, on any
/// instance.
pub trait Wakeup: Send + Sync {
    /// A waiter for `workspace_id`'s next commit, taken before the read it follows, so a
    /// commit between that read and the wait still wakes it.
    fn watch(&self, workspace_id: Uuid) -> Box<dyn Waiter>;
}

/// One feed's wait.
pub trait Waiter: Send {
    /// Resolves `true` when events of the workspace committed since the waiter was taken or
    /// last woke, `false` when `until` came first.
    fn wait(&mut self, until: Timestamp) -> BoxFuture<'_, bool>;
}
