//! Events: what changed, told to agents (their feed) and to an agency's own systems
//! (webhooks). An area's plan names the events its change produces as [`NewEvent`]s; the
//! adapter writes them in the change's own transaction (an outbox), where they are numbered
//! in the order their transactions commit. Who may read an event is its kind's
//! [`Reach`]: the agent that owns the object, every agent of the workspace, or people only.

use crate::Platform;
use crate::access::Scope;
use crate::decision::{DecisionKind, DecisionStatus};
use serde::{Deserialize, Serialize};
use uuid::Uuid;

crate::text_enum! {
    /// What an event tells.
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
    #[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
    pub enum EventKind {
        /// A decision was opened for a person.
        #[serde(rename = "decision.opened")]
        DecisionOpened => "decision.opened",
        /// A person (or an agent relaying one) decided.
        #[serde(rename = "decision.decided")]
        DecisionDecided => "decision.decided",
        /// An agent's draft reached review.
        #[serde(rename = "post.submitted")]
        PostSubmitted => "post.submitted",
        /// A post moved in review or inventory: approved, client review, sent back, rewrite
        /// requested, stocked, unstocked.
        #[serde(rename = "post.moved")]
        PostMoved => "post.moved",
        /// An agent reported a post scheduled, published, failed or cancelled.
        #[serde(rename = "post.reported")]
        PostReported => "post.reported",
        /// A post was reported published with another body than the one approved, or
        /// published without anyone approving it.
        #[serde(rename = "post.published_differs")]
        PostPublishedDiffers => "post.published_differs",
        /// An account's state changed (banned, quarantined, paused, restored, warming, ...).
        #[serde(rename = "account.state_changed")]
        AccountStateChanged => "account.state_changed",
        /// A task card was opened.
        #[serde(rename = "task.opened")]
        TaskOpened => "task.opened",
        /// An agent claimed a card.
        #[serde(rename = "task.claimed")]
        TaskClaimed => "task.claimed",
        /// An agent finished a card (it may wait for a person's confirmation).
        #[serde(rename = "task.finished")]
        TaskFinished => "task.finished",
        /// An agent failed a card.
        #[serde(rename = "task.failed")]
        TaskFailed => "task.failed",
        /// A person reopened a card.
        #[serde(rename = "task.reopened")]
        TaskReopened => "task.reopened",
        /// A person confirmed a finished card.
        #[serde(rename = "task.confirmed")]
        TaskConfirmed => "task.confirmed",
        /// A reported cron run was stored or updated as failed (and was not failed before).
        #[serde(rename = "cron.run_failed")]
        CronRunFailed => "cron.run_failed",
        /// An agent sent no heartbeat for its stated interval (people and webhooks only).
        #[serde(rename = "agent.silent")]
        AgentSilent => "agent.silent",
        /// A person issued a report to the clients (people and webhooks only).
        #[serde(rename = "report.issued")]
        ReportIssued => "report.issued",
        /// A person decided a wiki draft: made it canon, or dismissed it.
        #[serde(rename = "wiki.draft_decided")]
        WikiDraftDecided => "wiki.draft_decided",
        /// A paid ad research request the agent asked for finished.
        #[serde(rename = "research.done")]
        ResearchDone => "research.done",
        /// An ad change a person approved was made on the ad platform.
        #[serde(rename = "ad_change.executed")]
        AdChangeExecuted => "ad_change.executed",
        /// An ad change a person approved could not be made (the platform refused, the ad or
        /// account left the workspace, or the service gave up retrying).
        #[serde(rename = "ad_change.failed")]
        AdChangeFailed => "ad_change.failed",
    }
}

#[cfg(feature = "wire")]
crate::component_items!(EventKind);

/// Who may read an event of a kind through the agent feed. Webhooks get every kind their
/// endpoint subscribes to; people read every event of their workspaces.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reach {
    /// The agent the object belongs to (an account's persona's agent, a card's assignee),
    /// when it holds the scope: what its own reads would show.
    Owner(Scope),
    /// Every agent of the workspace that holds the scope.
    Workspace(Scope),
    /// No agent: people and webhooks only (what no agent's reads show, like reports).
    People,
}

impl EventKind {
    /// Who may read events of this kind in the agent feed: each kind is shown to the agents
    /// whose reads would show its object (posts through `drafts:read`, accounts, cards and
    /// decisions through `accounts:read`, as `GET /work/today` and `GET /tasks` do).
    pub fn reach(self) -> Reach {
        use EventKind::*;
        match self {
            PostSubmitted | PostMoved | PostReported | PostPublishedDiffers | ResearchDone => {
                Reach::Owner(Scope::DraftsRead)
            }
            DecisionOpened | DecisionDecided | AccountStateChanged | TaskOpened | TaskClaimed
            | TaskFinished | TaskFailed | TaskReopened | TaskConfirmed | CronRunFailed
            | AdChangeExecuted | AdChangeFailed => Reach::Owner(Scope::AccountsRead),
            ReportIssued | AgentSilent => Reach::People,
            WikiDraftDecided => Reach::Workspace(Scope::WikiRead),
        }
    }
}

/// What an agent's feed may show of the kinds it asked for: the kinds shown when the agent
/// owns the object, and those shown to every agent of the workspace.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct FeedKinds {
    pub owned: Vec<EventKind>,
    pub workspace: Vec<EventKind>,
}

impl FeedKinds {
    /// The kinds an agent with `scopes` may read, narrowed to `wanted` when it names any.
    pub fn for_agent(scopes: &[Scope], wanted: &[EventKind]) -> FeedKinds {
        let mut kinds = FeedKinds::default();
        let asked = |kind: &EventKind| wanted.is_empty() || wanted.contains(kind);
        for kind in EventKind::ALL.into_iter().filter(asked) {
            match kind.reach() {
                Reach::Owner(scope) if scopes.contains(&scope) => kinds.owned.push(kind),
                Reach::Workspace(scope) if scopes.contains(&scope) => kinds.workspace.push(kind),
                Reach::People | Reach::Owner(_) | Reach::Workspace(_) => {}
            }
        }
        kinds
    }

    /// No kind may be shown: the feed answers nothing without reading.
    pub fn is_empty(&self) -> bool {
        self.owned.is_empty() && self.workspace.is_empty()
    }

    /// The texts of the owned kinds and of the workspace kinds, bound into the feed's read.
    pub fn texts(&self) -> (Vec<&'static str>, Vec<&'static str>) {
        let texts = |kinds: &[EventKind]| kinds.iter().map(|k| k.as_str()).collect();
        (texts(&self.owned), texts(&self.workspace))
    }
}

/// What an event says, by kind: its `type` and its `data`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(tag = "type", content = "data")]
pub enum EventBody {
    #[serde(rename = "decision.opened")]
    DecisionOpened(DecisionChange),
    #[serde(rename = "decision.decided")]
    DecisionDecided(DecisionChange),
    #[serde(rename = "post.submitted")]
    PostSubmitted(PostChange),
    #[serde(rename = "post.moved")]
    PostMoved(PostChange),
    #[serde(rename = "post.reported")]
    PostReported(PostChange),
    #[serde(rename = "post.published_differs")]
    PostPublishedDiffers(PublishedDiffersChange),
    #[serde(rename = "account.state_changed")]
    AccountStateChanged(AccountChange),
    #[serde(rename = "task.opened")]
    TaskOpened(TaskChange),
    #[serde(rename = "task.claimed")]
    TaskClaimed(TaskChange),
    #[serde(rename = "task.finished")]
    TaskFinished(TaskChange),
    #[serde(rename = "task.failed")]
    TaskFailed(TaskChange),
    #[serde(rename = "task.reopened")]
    TaskReopened(TaskChange),
    #[serde(rename = "task.confirmed")]
    TaskConfirmed(TaskChange),
    #[serde(rename = "cron.run_failed")]
    CronRunFailed(CronRunFailed),
    #[serde(rename = "agent.silent")]
    AgentSilent(AgentSilent),
    #[serde(rename = "report.issued")]
    ReportIssued(ReportIssued),
    #[serde(rename = "wiki.draft_decided")]
    WikiDraftDecided(WikiDraftDecided),
    #[serde(rename = "research.done")]
    ResearchDone(ResearchDone),
    #[serde(rename = "ad_change.executed")]
    AdChangeExecuted(AdChangeSettled),
    #[serde(rename = "ad_change.failed")]
    AdChangeFailed(AdChangeSettled),
}

impl EventBody {
    /// The kind of event this body belongs to.
    pub fn kind(&self) -> EventKind {
        use EventBody as B;
        use EventKind as K;
        match self {
            B::DecisionOpened(_) => K::DecisionOpened,
            B::DecisionDecided(_) => K::DecisionDecided,
            B::PostSubmitted(_) => K::PostSubmitted,
            B::PostMoved(_) => K::PostMoved,
            B::PostReported(_) => K::PostReported,
            B::PostPublishedDiffers(_) => K::PostPublishedDiffers,
            B::AccountStateChanged(_) => K::AccountStateChanged,
            B::TaskOpened(_) => K::TaskOpened,
            B::TaskClaimed(_) => K::TaskClaimed,
            B::TaskFinished(_) => K::TaskFinished,
            B::TaskFailed(_) => K::TaskFailed,
            B::TaskReopened(_) => K::TaskReopened,
            B::TaskConfirmed(_) => K::TaskConfirmed,
            B::CronRunFailed(_) => K::CronRunFailed,
            B::AgentSilent(_) => K::AgentSilent,
            B::ReportIssued(_) => K::ReportIssued,
            B::WikiDraftDecided(_) => K::WikiDraftDecided,
            B::ResearchDone(_) => K::ResearchDone,
            B::AdChangeExecuted(_) => K::AdChangeExecuted,
            B::AdChangeFailed(_) => K::AdChangeFailed,
        }
    }

    /// The `data` part as stored (JSON).
    pub fn data(&self) -> serde_json::Value {
        match serde_json::to_value(self).expect("an event body is plain JSON") {
            serde_json::Value::Object(mut body) => body.remove("data").unwrap_or_default(),
            _ => unreachable!("an adjacently tagged enum serializes to an object"),
        }
    }

    /// The body of a stored event: its kind's text and its `data`. `None` when they do not
    /// make a body this version knows.
    pub fn stored(kind: &str, data: serde_json::Value) -> Option<EventBody> {
        serde_json::from_value(serde_json::json!({"type": kind, "data": data})).ok()
    }
}

/// An event's `data` as the feed answers it: the body of its `type` (each kind's body is one
/// of these; see [`EventBody`] for which).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(untagged)]
pub enum EventData {
    /// post.submitted, post.moved, post.reported.
    Post(PostChange),
    /// post.published_differs.
    PublishedDiffers(PublishedDiffersChange),
    /// decision.opened, decision.decided.
    Decision(DecisionChange),
    /// account.state_changed.
    Account(AccountChange),
    /// task.opened, task.claimed, task.finished, task.failed, task.reopened, task.confirmed.
    Task(TaskChange),
    /// cron.run_failed.
    CronRun(CronRunFailed),
    /// agent.silent (webhooks only).
    Silent(AgentSilent),
    /// report.issued (webhooks only).
    Report(ReportIssued),
    /// wiki.draft_decided.
    WikiDraft(WikiDraftDecided),
    /// research.done.
    Research(ResearchDone),
    /// ad_change.executed, ad_change.failed.
    AdChange(AdChangeSettled),
}

impl From<EventBody> for EventData {
    fn from(body: EventBody) -> EventData {
        use EventBody as B;
        match body {
            B::DecisionOpened(d) | B::DecisionDecided(d) => EventData::Decision(d),
            B::PostSubmitted(p) | B::PostMoved(p) | B::PostReported(p) => EventData::Post(p),
            B::PostPublishedDiffers(d) => EventData::PublishedDiffers(d),
            B::AccountStateChanged(a) => EventData::Account(a),
            B::TaskOpened(t)
            | B::TaskClaimed(t)
            | B::TaskFinished(t)
            | B::TaskFailed(t)
            | B::TaskReopened(t)
            | B::TaskConfirmed(t) => EventData::Task(t),
            B::CronRunFailed(c) => EventData::CronRun(c),
            B::AgentSilent(a) => EventData::Silent(a),
            B::ReportIssued(r) => EventData::Report(r),
            B::WikiDraftDecided(w) => EventData::WikiDraft(w),
            B::ResearchDone(r) => EventData::Research(r),
            B::AdChangeExecuted(a) | B::AdChangeFailed(a) => EventData::AdChange(a),
        }
    }
}

/// A post's change: which account, the status it left and the one it is in, and why.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct PostChange {
    /// The account's code (absent when the post has none yet).
    pub code: Option<String>,
    pub platform: Option<Platform>,
    /// The status before (absent for a new post).
    pub from: Option<String>,
    /// The status after.
    pub status: String,
    /// The note, reason or instruction that came with the move (redacted like every stored
    /// text), or the published link of a report.
    pub note: Option<String>,
}

/// A post published with another body than the approved one (`reason` `changed`), or that
/// nobody approved (`never_approved`): its account, and the SHA-256 of each body normalized
/// as report matching normalizes it (the approved one absent when nobody approved). The texts
/// are in the post's reads. The event's object is the post.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct PublishedDiffersChange {
    pub code: String,
    pub platform: Platform,
    pub reason: String,
    pub approved_fingerprint: Option<String>,
    pub published_fingerprint: String,
}

/// A decision opened or decided.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct DecisionChange {
    pub kind: DecisionKind,
    pub title: String,
    pub status: DecisionStatus,
    /// The option chosen, when one was.
    pub choice: Option<String>,
}

/// An account's state change.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct AccountChange {
    pub code: String,
    pub platform: Platform,
    pub from: String,
    pub to: String,
    pub reason: Option<String>,
}

/// A task card's move.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct TaskChange {
    /// The card's kind.
    pub kind: String,
    pub title: String,
    /// Where the card stands now.
    pub status: String,
    /// The result, failure reason or person's note of the move.
    pub note: Option<String>,
}

/// A cron run that failed: its job (the agent's job_id and name), its run_id and the summary
/// it reported. The event's object is the job's row (`cron_jobs.id`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct CronRunFailed {
    pub job_id: String,
    pub job_name: String,
    pub run_id: String,
    pub summary: Option<String>,
}

/// An agent silent past its interval: its name, its last heartbeat (absent: it never sent
/// one) and the interval in hours. The event's object is the agent.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct AgentSilent {
    pub name: String,
    pub last_heartbeat_at: Option<String>,
    pub silent_after_hours: i16,
}

/// A report issued to the clients: its period (dates, YYYY-MM-DD) and title. The event's
/// object is the report.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct ReportIssued {
    pub period_from: String,
    pub period_to: String,
    pub title: String,
}

/// A wiki draft a person decided: its entry, the draft version's title, and the version's
/// status now (`canon`, or `rejected` when dismissed). The event's object is the entry.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct WikiDraftDecided {
    pub entry_id: Uuid,
    pub title: String,
    pub status: String,
}

/// A paid ad research request that finished: its status (`done`) and how many items it had
/// (their outcomes are in `GET /ad-research/{id}`). The event's object is the request.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct ResearchDone {
    pub status: String,
    pub items: i64,
}

/// An approved ad change that settled: its kind (`pause`, `resume`, `budget`, `boost`), the ad
/// it changed or the post it boosts, its status now (`executed` or `failed`) and, when it
/// failed, why. The event's object is the proposal.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct AdChangeSettled {
    pub kind: String,
    pub ad_id: Option<String>,
    pub post_id: Option<Uuid>,
    pub status: String,
    pub error: Option<String>,
}

/// An event a use case produces, written in its transaction.
#[derive(Debug, Clone, PartialEq)]
pub struct NewEvent {
    pub workspace_id: Uuid,
    /// The agent the object belongs to, for [`Reach::Owner`] kinds (none: no agent reads it).
    pub agent_id: Option<Uuid>,
    /// The post, card, decision or account the event is about.
    pub object_id: Uuid,
    pub body: EventBody,
}

/// The interval an agent may go without a heartbeat before it is silent, in hours, when the
/// tenant file states none (`silent_after_hours`).
pub const DEFAULT_SILENT_AFTER_HOURS: i16 = 24;

/// The intervals the tenant file may state, in hours (an hour to a week).
pub const SILENT_AFTER_HOURS: std::ops::RangeInclusive<i16> = 1..=168;

/// How long events are kept.
pub const EVENTS_KEPT: jiff::SignedDuration = jiff::SignedDuration::from_hours(30 * 24);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_body_says_its_kind_and_round_trips_through_storage() {
        let body = EventBody::TaskClaimed(TaskChange {
            kind: "reply".into(),
            title: "Answer".into(),
            status: "claimed".into(),
            note: None,
        });
        assert_eq!(body.kind(), EventKind::TaskClaimed);
        let data = body.data();
        assert_eq!(data["status"], "claimed");
        assert_eq!(EventBody::stored("task.claimed", data.clone()), Some(body));
        assert_eq!(
            EventBody::stored("task.opened", data.clone()).map(|b| b.kind()),
            Some(EventKind::TaskOpened)
        );
        assert_eq!(EventBody::stored("task.unknown", data), None);
        assert_eq!(
            EventBody::stored("task.claimed", serde_json::json!({})),
            None
        );
    }

    #[test]
    fn a_kind_is_sent_as_its_stored_text() {
        for kind in EventKind::ALL {
            let serialized = serde_json::to_value(kind).unwrap();
            assert_eq!(serialized, kind.as_str());
        }
    }

    #[test]
    fn an_agent_reads_the_kinds_its_scopes_reach() {
        let all = FeedKinds::for_agent(Scope::OPERATOR, &[]);
        let owned = EventKind::ALL
            .into_iter()
            .filter(|k| matches!(k.reach(), Reach::Owner(_)));
        assert_eq!(all.owned, owned.collect::<Vec<_>>());
        assert_eq!(all.workspace, [EventKind::WikiDraftDecided]);

        let community = FeedKinds::for_agent(Scope::COMMUNITY, &[]);
        assert!(community.is_empty());

        let drafts_only = FeedKinds::for_agent(&[Scope::DraftsRead], &[]);
        assert_eq!(
            drafts_only.owned,
            [
                EventKind::PostSubmitted,
                EventKind::PostMoved,
                EventKind::PostReported,
                EventKind::PostPublishedDiffers,
                EventKind::ResearchDone,
            ]
        );

        let wanted = FeedKinds::for_agent(
            &[Scope::DraftsRead],
            &[EventKind::PostMoved, EventKind::TaskClaimed],
        );
        assert_eq!(wanted.owned, [EventKind::PostMoved]);
        assert_eq!(wanted.texts().0, ["post.moved"]);
    }

    #[test]
    fn a_kind_for_people_reaches_no_agent_whatever_it_holds_or_asks() {
        assert_eq!(EventKind::ReportIssued.reach(), Reach::People);
        let every_scope: Vec<Scope> = Scope::ALL.to_vec();
        let asked = FeedKinds::for_agent(&every_scope, &[EventKind::ReportIssued]);
        assert!(asked.is_empty(), "{asked:?}");
        let all = FeedKinds::for_agent(&every_scope, &[]);
        assert!(!all.owned.contains(&EventKind::ReportIssued));
        assert!(!all.workspace.contains(&EventKind::ReportIssued));
    }
}
