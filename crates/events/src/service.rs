//! An agent's feed: its visible events after a cursor, waiting for the next commit when
//! there are none yet.

use crate::ports::{EventLog, FeedRead, StoredEvent, Wakeup};
use fleetdesk_kernel::AgentRef;
use fleetdesk_kernel::access::Scope;
use fleetdesk_kernel::events::{EventKind, FeedKinds};
use jiff::{SignedDuration, Timestamp};
use std::sync::Arc;

/// The longest a feed read may wait for an event, in seconds.
pub const MAX_WAIT_SECONDS: i64 = 30;

/// What an agent asks its feed for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FeedQuery {
    /// The cursor of the last event read (none: from the oldest event kept).
    pub after: Option<i64>,
    /// The kinds wanted (empty: every kind the agent may read).
    pub kinds: Vec<EventKind>,
    /// How long to hold the request while there is nothing to answer, 0 to
    /// [`MAX_WAIT_SECONDS`].
    pub wait_seconds: i64,
    pub limit: i64,
}

/// One page of a feed and where the next read resumes.
#[derive(Debug, Clone, PartialEq)]
pub struct Feed {
    pub events: Vec<StoredEvent>,
    /// The cursor to pass as `after` next time.
    pub next: i64,
}

impl Feed {
    /// The page of `events` read after `after` with `limit`, in a snapshot whose last number
    /// was `head`: a full page resumes after its last event; a short one read everything up to
    /// `head`, so it resumes there (events the agent may not see are not read again).
    pub fn page(events: Vec<StoredEvent>, after: i64, limit: i64, head: i64) -> Feed {
        let last = events.last().map(|e| e.seq);
        let full = i64::try_from(events.len()).is_ok_and(|n| n >= limit);
        let next = match last {
            Some(last) if full => last,
            _ => after.max(head).max(last.unwrap_or(0)),
        };
        Feed { events, next }
    }
}

/// The feed's use case.
#[derive(Clone)]
pub struct EventsService {
    log: Arc<dyn EventLog>,
    wakeup: Arc<dyn Wakeup>,
}

impl EventsService {
    pub fn new(log: Arc<dyn EventLog>, wakeup: Arc<dyn Wakeup>) -> Self {
        EventsService { log, wakeup }
    }

    /// The events `agent` (holding `scopes`) may see after the query's cursor, oldest first.
    /// With a wait, a read that finds none waits for the workspace's next commit and reads
    /// again, until an event the agent may see arrives or the wait ends at `now` plus it.
    pub async fn feed(
        &self,
        agent: AgentRef,
        scopes: &[Scope],
        query: &FeedQuery,
        now: Timestamp,
    ) -> anyhow::Result<Feed> {
        let kinds = FeedKinds::for_agent(scopes, &query.kinds);
        let mut after = query.after.unwrap_or(0);
        let wait = query.wait_seconds.clamp(0, MAX_WAIT_SECONDS);
        let until = now + SignedDuration::from_secs(wait);
        // Taken before the first read: a commit between the read and the wait wakes it. No
        // wait when no kind may be shown: nothing the agent may see can arrive.
        let mut waiter =
            (wait > 0 && !kinds.is_empty()).then(|| self.wakeup.watch(agent.workspace_id));
        loop {
            let read = FeedRead {
                workspace_id: agent.workspace_id,
                agent_id: agent.agent_id,
                kinds: &kinds,
                after,
                limit: query.limit,
            };
            let (events, head) = if kinds.is_empty() {
                (Vec::new(), 0)
            } else {
                self.log.feed(read).await?
            };
            let feed = Feed::page(events, after, query.limit, head);
            let Some(waiting) = waiter.as_mut().filter(|_| feed.events.is_empty()) else {
                return Ok(feed);
            };
            after = feed.next;
            if !waiting.wait(until).await {
                return Ok(feed);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ports::Waiter;
    use fleetdesk_kernel::BoxFuture;
    use fleetdesk_kernel::events::{EventBody, TaskChange};
    use std::sync::Mutex;
    use uuid::Uuid;

    fn event(seq: i64) -> StoredEvent {
        StoredEvent {
            seq,
            id: Uuid::nil(),
            occurred_at: Timestamp::UNIX_EPOCH,
            workspace_id: Uuid::nil(),
            object_id: Uuid::nil(),
            body: EventBody::TaskClaimed(TaskChange {
                kind: "reply".into(),
                title: "t".into(),
                status: "claimed".into(),
                note: None,
            }),
        }
    }

    #[test]
    fn a_full_page_resumes_after_its_last_event() {
        let feed = Feed::page(vec![event(4), event(9)], 2, 2, 20);
        assert_eq!(feed.next, 9);
    }

    #[test]
    fn a_short_page_resumes_at_the_snapshots_head() {
        assert_eq!(Feed::page(vec![event(4)], 2, 3, 20).next, 20);
        assert_eq!(Feed::page(vec![], 2, 3, 20).next, 20);
        // A cursor past the head is kept; an empty log keeps the cursor.
        assert_eq!(Feed::page(vec![], 30, 3, 20).next, 30);
        assert_eq!(Feed::page(vec![], 0, 3, 0).next, 0);
    }

    /// A log that answers the pages it was given, one per read, and records each read's
    /// cursor.
    struct Pages {
        pages: Mutex<Vec<(Vec<StoredEvent>, i64)>>,
        reads: Mutex<Vec<i64>>,
    }

    impl EventLog for Pages {
        fn feed<'a>(
            &'a self,
            read: FeedRead<'a>,
        ) -> BoxFuture<'a, anyhow::Result<(Vec<StoredEvent>, i64)>> {
            self.reads.lock().unwrap().push(read.after);
            let page = self.pages.lock().unwrap().remove(0);
            Box::pin(async move { Ok(page) })
        }
    }

    /// Wakes as many times as it was told to, then times out.
    struct Wakes(Mutex<usize>);

    struct CountedWaiter(usize);

    impl Wakeup for Wakes {
        fn watch(&self, _: Uuid) -> Box<dyn Waiter> {
            Box::new(CountedWaiter(*self.0.lock().unwrap()))
        }
    }

    impl Waiter for CountedWaiter {
        fn wait(&mut self, _: Timestamp) -> BoxFuture<'_, bool> {
            let woke = self.0 > 0;
            self.0 = self.0.saturating_sub(1);
            Box::pin(async move { woke })
        }
    }

    fn service(pages: Vec<(Vec<StoredEvent>, i64)>, wakes: usize) -> (EventsService, Arc<Pages>) {
        let log = Arc::new(Pages {
            pages: Mutex::new(pages),
            reads: Mutex::new(Vec::new()),
        });
        let service = EventsService::new(log.clone(), Arc::new(Wakes(Mutex::new(wakes))));
        (service, log)
    }

    fn agent() -> AgentRef {
        AgentRef {
            agent_id: Uuid::nil(),
            workspace_id: Uuid::nil(),
            organization_id: Uuid::nil(),
        }
    }

    fn query(wait_seconds: i64) -> FeedQuery {
        FeedQuery {
            after: Some(3),
            kinds: Vec::new(),
            wait_seconds,
            limit: 10,
        }
    }

    #[tokio::test]
    async fn without_a_wait_an_empty_read_answers_at_once() {
        let (service, log) = service(vec![(vec![], 7)], 5);
        let feed = service
            .feed(agent(), Scope::OPERATOR, &query(0), Timestamp::UNIX_EPOCH)
            .await
            .unwrap();
        assert_eq!((feed.events.len(), feed.next), (0, 7));
        assert_eq!(*log.reads.lock().unwrap(), [3]);
    }

    #[tokio::test]
    async fn a_waiting_read_reads_again_from_the_head_after_each_wake() {
        // Two commits the agent may not see, then one it may.
        let pages = vec![(vec![], 7), (vec![], 8), (vec![event(9)], 9)];
        let (service, log) = service(pages, 5);
        let feed = service
            .feed(agent(), Scope::OPERATOR, &query(30), Timestamp::UNIX_EPOCH)
            .await
            .unwrap();
        assert_eq!((feed.events.len(), feed.next), (1, 9));
        assert_eq!(*log.reads.lock().unwrap(), [3, 7, 8]);
    }

    #[tokio::test]
    async fn a_wait_that_runs_out_answers_the_empty_page() {
        let (service, log) = service(vec![(vec![], 7), (vec![], 7)], 1);
        let feed = service
            .feed(agent(), Scope::OPERATOR, &query(1), Timestamp::UNIX_EPOCH)
            .await
            .unwrap();
        assert_eq!((feed.events.len(), feed.next), (0, 7));
        assert_eq!(log.reads.lock().unwrap().len(), 2);
    }

    #[tokio::test]
    async fn an_agent_that_may_read_no_kind_never_reads_the_log_nor_waits() {
        /// A wake-up no read may take.
        struct NoWaits;
        impl Wakeup for NoWaits {
            fn watch(&self, _: Uuid) -> Box<dyn Waiter> {
                panic!("a read that can show nothing waited")
            }
        }
        let log = Arc::new(Pages {
            pages: Mutex::new(Vec::new()),
            reads: Mutex::new(Vec::new()),
        });
        let service = EventsService::new(log.clone(), Arc::new(NoWaits));
        for wait in [0, 30] {
            let feed = service
                .feed(
                    agent(),
                    Scope::COMMUNITY,
                    &query(wait),
                    Timestamp::UNIX_EPOCH,
                )
                .await
                .unwrap();
            assert_eq!((feed.events.len(), feed.next), (0, 3));
        }
        assert!(log.reads.lock().unwrap().is_empty());
    }
}
