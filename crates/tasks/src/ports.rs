//! What the task card use cases need from storage: one method per atomic use case.

use crate::rules::{Clock, Flags, Move, TaskRefusal, flags};
use crate::{TargetType, TaskKind, TaskStatus};
use fleetdesk_kernel::decision::DecidedBy;
use fleetdesk_kernel::{AccountCode, AgentRef, BoxFuture, Page, Platform, Position, TimeInput};
use jiff::Timestamp;
use serde_json::Value;
use uuid::Uuid;

/// Whose cards a list shows: a member's organization (`None`: a platform admin outside any,
/// every organization), or an agent's (assigned to it, or unassigned on its personas).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TaskScope {
    Organization(Option<Uuid>),
    Agent(AgentRef),
}

#[derive(Debug, Clone, PartialEq)]
pub struct ListQuery {
    pub statuses: Vec<TaskStatus>,
    pub kind: Option<TaskKind>,
    /// Newest first: the page starts after this position.
    pub after: Option<Position>,
    pub limit: i64,
}

/// A card as people and agents read it.
#[derive(Debug, Clone, PartialEq)]
pub struct TaskRecord {
    pub id: Uuid,
    pub kind: TaskKind,
    pub title: String,
    pub detail: Option<String>,
    pub status: TaskStatus,
    pub target_type: TargetType,
    /// The account code of a slot or persona target.
    pub target_code: Option<String>,
    /// The slot, persona, post or decision id.
    pub target_id: Option<Uuid>,
    pub persona: Option<(Uuid, String)>,
    pub assignee: Option<(Uuid, String)>,
    /// agent, person or service, and the name.
    pub opened_by: (String, String),
    pub also_wanted_by: Vec<String>,
    pub due_at: Option<Timestamp>,
    /// `[{by, text, at}]`, oldest first: all of them when the card is read alone, the latest
    /// [`LISTED_NOTES`] in a list.
    pub notes: Value,
    /// How many notes the card has.
    pub notes_count: i64,
    pub result: Option<String>,
    pub evidence: Value,
    /// The decision whose follow-up this card is.
    pub decision_id: Option<Uuid>,
    pub last_progress_at: Option<Timestamp>,
    pub confirmation_since: Option<Timestamp>,
    pub created_at: Timestamp,
    pub updated_at: Timestamp,
    pub finished_at: Option<Timestamp>,
}

impl TaskRecord {
    /// The card's flags at `now`.
    pub fn flags(&self, now: Timestamp) -> Flags {
        flags(
            &Clock {
                status: self.status,
                last_progress_at: self.last_progress_at,
                created_at: self.created_at,
                due_at: self.due_at,
                confirmation_since: self.confirmation_since,
            },
            now,
        )
    }
}

/// What a card is about, as the request names it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TargetRef {
    /// An account by its current or legacy code.
    Slot {
        code: AccountCode,
        platform: Option<Platform>,
    },
    /// The persona of the account with this code.
    Persona {
        code: AccountCode,
        platform: Option<Platform>,
    },
    Post(Uuid),
    Issue(Uuid),
}

impl TargetRef {
    pub fn kind(&self) -> TargetType {
        match self {
            TargetRef::Slot { .. } => TargetType::Slot,
            TargetRef::Persona { .. } => TargetType::Persona,
            TargetRef::Post(_) => TargetType::Post,
            TargetRef::Issue(_) => TargetType::Issue,
        }
    }
}

/// Who opens a card.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Opener {
    /// An agent, on its own personas; the card is assigned to it.
    Agent { agent: AgentRef, name: String },
    /// A person of `organization` (`None`: a platform admin outside any), assigning the card
    /// to `assign` (an agent's name or id in the target's workspace) or to nobody.
    Person {
        organization: Option<Uuid>,
        name: String,
        assign: Option<String>,
    },
}

#[derive(Debug, Clone, PartialEq)]
pub struct OpenRequest {
    pub kind: TaskKind,
    pub title: String,
    pub detail: Option<String>,
    pub target: TargetRef,
    /// As given: read in the target account's market zone when it has none.
    pub due_at: Option<TimeInput>,
    pub origin: Option<Value>,
    /// Who asked for it: recorded in `also_wanted_by` when the request joins an open card.
    pub requester: String,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Opened {
    pub card: TaskRecord,
    /// False when the request joined an open card of the same kind on the same target.
    pub created: bool,
}

/// Who moves a card.
#[derive(Debug, Clone, PartialEq)]
pub enum Actor {
    /// A working agent and its name (the author of its notes).
    Agent { agent: AgentRef, name: String },
    /// A person; `record` is what a follow-up's decision records as `decided_by`.
    Person {
        organization: Option<Uuid>,
        name: String,
        record: DecidedBy,
    },
    /// An agent relaying a person's move: `record` is stored with the note.
    Relay {
        agent: AgentRef,
        person: String,
        record: DecidedBy,
    },
}

#[derive(Debug, Clone, PartialEq)]
pub struct MoveRequest {
    pub id: Uuid,
    pub mv: Move,
    /// A progress, reopen or send-back note; a confirm's optional note.
    pub note: Option<String>,
    /// With finish: `[{type: link, url, label} | {type: asset, asset_id}]`.
    pub evidence: Value,
    /// Evidence asset ids: each must be a media library item of the card's workspace.
    pub asset_ids: Vec<Uuid>,
    pub now: Timestamp,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Moved {
    pub card: TaskRecord,
    /// The same move was already made: nothing changed.
    pub unchanged: bool,
}

/// How many of a card's notes a list carries: the latest, with the count of all (a card's notes
/// grow without bound; a page of 200 cards would carry them all). The card read alone carries
/// every note.
pub const LISTED_NOTES: i32 = 3;

/// Task cards in storage: every write is one transaction that locks the card (or, opening, the
/// persona).
pub trait TasksRepo: Send + Sync {
    /// One card of the scope with all its notes; `None` when it is not the scope's (an agent's
    /// scope: assigned to it, or unassigned on its personas).
    fn get(&self, scope: TaskScope, id: Uuid) -> BoxFuture<'_, anyhow::Result<Option<TaskRecord>>>;

    /// A page of cards, newest first, each with its latest [`LISTED_NOTES`] notes.
    fn list<'a>(
        &'a self,
        scope: TaskScope,
        query: &'a ListQuery,
    ) -> BoxFuture<'a, anyhow::Result<Page<TaskRecord>>>;

    /// Opens a card, or joins the open card of the same kind on the same target.
    fn open<'a>(
        &'a self,
        opener: &'a Opener,
        request: &'a OpenRequest,
    ) -> BoxFuture<'a, anyhow::Result<Result<Opened, TaskRefusal>>>;

    /// Locks the card, plans the move and writes it (a follow-up's decision with it).
    fn act<'a>(
        &'a self,
        actor: &'a Actor,
        request: &'a MoveRequest,
    ) -> BoxFuture<'a, anyhow::Result<Result<Moved, TaskRefusal>>>;

    /// The agent's open cards (at most `limit`), oldest first: for its heartbeat and its day,
    /// each with its latest [`LISTED_NOTES`] notes.
    fn open_cards(
        &self,
        agent: AgentRef,
        limit: i64,
    ) -> BoxFuture<'_, anyhow::Result<Vec<TaskRecord>>>;
}
