//! What the decision use cases need from storage.

use crate::rules::{DecisionRefusal, Move};
use crate::{DecisionKind, DecisionStatus};
use fleetdesk_kernel::{AgentRef, BoxFuture, Page, Position};
use jiff::Timestamp;
use serde_json::Value;
use uuid::Uuid;

/// Whose decisions a call sees: a member's organization (`None`: a platform admin outside any,
/// who sees every organization), or an agent's own personas.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DecisionScope {
    Organization(Option<Uuid>),
    Agent(AgentRef),
}

#[derive(Debug, Clone, PartialEq)]
pub struct ListQuery {
    pub statuses: Vec<DecisionStatus>,
    pub kind: Option<DecisionKind>,
    /// Newest first: the page starts after this position.
    pub after: Option<Position>,
    pub limit: i64,
}

/// A decision as a person reads it.
#[derive(Debug, Clone, PartialEq)]
pub struct DecisionRecord {
    pub id: Uuid,
    /// The workspace the decision is of: its id and name.
    pub workspace: (Uuid, String),
    pub kind: DecisionKind,
    pub status: DecisionStatus,
    pub title: String,
    pub question: Option<String>,
    pub options: Value,
    pub persona: Option<(Uuid, String)>,
    /// The account's code and platform.
    pub account: Option<(String, String)>,
    pub post_id: Option<Uuid>,
    /// Per kind; for `persona_images` the images are read at list time into `images`.
    pub detail: Value,
    pub images: Vec<DecisionImage>,
    pub task_id: Option<Uuid>,
    /// agent, person or service, and the name.
    pub opened_by: (String, String),
    pub notes: Value,
    pub result: Option<String>,
    pub evidence: Value,
    pub created_at: Timestamp,
    pub updated_at: Timestamp,
    pub decided_by: Option<Value>,
    pub decided_at: Option<Timestamp>,
}

/// An image of a `persona_images` decision.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DecisionImage {
    pub id: Uuid,
    pub category: String,
    pub caption: Option<String>,
    pub character: Option<String>,
    pub lock: String,
}

/// A person's move, directly or through an agent's relay.
#[derive(Debug, Clone, PartialEq)]
pub struct MoveRequest {
    pub id: Uuid,
    pub mv: Move,
    pub note: Option<String>,
    /// The person's name: the note's author and the follow-up's opener.
    pub person: String,
    /// What `decided_by` records.
    pub decided_by: fleetdesk_kernel::decision::DecidedBy,
    /// When the note was written.
    pub now: Timestamp,
}

/// The outcome of a move or a report: the decision afterwards, and whether anything changed.
#[derive(Debug, Clone, PartialEq)]
pub struct Moved {
    pub decision: DecisionRecord,
    pub unchanged: bool,
    /// The follow-up the move opened.
    pub follow_up: Option<Uuid>,
}

/// An agent's report that a follow-up is done.
#[derive(Debug, Clone, PartialEq)]
pub struct DoneReport {
    pub id: Uuid,
    pub result: String,
    /// `[{type: link, url, label} | {type: asset, asset_id}]`.
    pub evidence: Value,
    /// Evidence asset ids: each must be a media library item of the card's workspace.
    pub asset_ids: Vec<Uuid>,
}

/// An open follow-up in an agent's day.
#[derive(Debug, Clone, PartialEq)]
pub struct FollowUp {
    pub id: Uuid,
    pub task_id: Option<Uuid>,
    pub kind: DecisionKind,
    pub title: String,
    pub persona: Option<(Uuid, String)>,
    /// The persona's first account: code and platform.
    pub account: Option<(String, String)>,
    /// What the agent is asked to do (the card's detail).
    pub instruction: Option<String>,
}

/// Decisions in storage: every move is one transaction with its effect.
pub trait DecisionsRepo: Send + Sync {
    /// An organization's decisions (`None`: every organization, for a platform admin outside
    /// any), newest first.
    fn list<'a>(
        &'a self,
        organization: Option<Uuid>,
        query: &'a ListQuery,
    ) -> BoxFuture<'a, anyhow::Result<Page<DecisionRecord>>>;

    /// Locks the decision, plans the move and applies it with its effect.
    fn decide<'a>(
        &'a self,
        scope: DecisionScope,
        request: &'a MoveRequest,
    ) -> BoxFuture<'a, anyhow::Result<Result<Moved, DecisionRefusal>>>;

    /// An agent reports one of its follow-ups done.
    fn complete<'a>(
        &'a self,
        agent: AgentRef,
        report: &'a DoneReport,
    ) -> BoxFuture<'a, anyhow::Result<Result<Moved, DecisionRefusal>>>;

    /// The agent's open follow-ups, oldest first.
    fn follow_ups(&self, agent: AgentRef) -> BoxFuture<'_, anyhow::Result<Vec<FollowUp>>>;
}
