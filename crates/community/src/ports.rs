//! The port the PostgreSQL adapter implements: each method is one use case in one
//! transaction (or one read). Spaces are always looked up within the agent's workspace and
//! only when active: any other space is [`CommunityRefusal::SpaceNotFound`].

use crate::CommunityRefusal;
use crate::digest::{DigestReport, TagCount};
use crate::space::{Channel, Space};
use crate::ticket::{Handling, NewTicket, TicketCategory, TicketMove, TicketStatus};
use fleetdesk_kernel::{AgentRef, BoxFuture, Page, Position};
use jiff::Timestamp;

/// A knowledge-base entry as the community assistant quotes it.
#[derive(Debug, Clone, PartialEq)]
pub struct WikiHit {
    pub id: uuid::Uuid,
    pub title: String,
    pub summary: String,
    pub body: String,
    /// Its vector, when the query's model made it from the entry's version (for
    /// `fleetdesk_wiki::meaning::fuse`).
    pub embedding: Option<fleetdesk_wiki::meaning::Embedding>,
}

/// What a wiki search asks: the plan of `fleetdesk_wiki::query`, the knowledge base's own
/// (None: the query has no word, the most recently updated entries) and how many.
#[derive(Debug, Clone, PartialEq)]
pub struct WikiQuery {
    pub plan: Option<fleetdesk_wiki::query::Plan>,
    pub limit: i64,
    /// The model whose vectors come with each hit; none: no vectors.
    pub model: Option<String>,
}

/// A product on sale.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProductHit {
    pub id: uuid::Uuid,
    pub name: String,
    pub summary: Option<String>,
    pub price: Option<String>,
    pub url: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DigestOutcome {
    pub space_id: uuid::Uuid,
    pub day: jiff::civil::Date,
    /// Members stored.
    pub members: i64,
    /// Repeated listings not stored.
    pub skipped: i64,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TicketOutcome {
    pub ticket_id: uuid::Uuid,
    /// An open ticket of the same member and category took the report as its note.
    pub reused: bool,
}

/// Whose tickets a read sees: an organization's people (every organization's for None), or
/// the agent that opened them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TicketScope {
    Organization(Option<uuid::Uuid>),
    Agent(AgentRef),
}

/// A page of tickets: newest first, of the statuses asked, of one workspace and category
/// when given.
#[derive(Debug, Clone, PartialEq)]
pub struct TicketQuery {
    pub workspace: Option<uuid::Uuid>,
    pub statuses: Vec<TicketStatus>,
    pub category: Option<TicketCategory>,
    pub after: Option<Position>,
    pub limit: i64,
}

/// A ticket as people and the agent that opened it read it.
#[derive(Debug, Clone, PartialEq)]
pub struct TicketRecord {
    pub id: uuid::Uuid,
    pub workspace: (uuid::Uuid, String),
    pub space: (uuid::Uuid, String, Channel),
    pub member_external_id: Option<String>,
    pub category: TicketCategory,
    pub status: TicketStatus,
    pub summary: String,
    /// `[{text, at}]`: the summaries of later reports of the matter, oldest first; all of them
    /// when the ticket is read alone, the latest [`crate::ticket::LISTED_NOTES`] in a list.
    pub notes: serde_json::Value,
    pub notes_count: i64,
    /// The agent that opened it: id and name.
    pub opened_by: (uuid::Uuid, String),
    pub created_at: Timestamp,
    pub updated_at: Timestamp,
    /// How a person handled it; none while open.
    pub handled: Option<Handling>,
}

/// A move made: the ticket after it, and whether it changed.
#[derive(Debug, Clone, PartialEq)]
pub struct TicketMoved {
    pub ticket: TicketRecord,
    pub changed: bool,
}

/// An active space of a workspace with its latest digest, for the person's day.
#[derive(Debug, Clone, PartialEq)]
pub struct SpaceDay {
    pub workspace_id: uuid::Uuid,
    pub space_id: uuid::Uuid,
    pub name: String,
    pub channel: Channel,
    pub latest: Option<LatestDigest>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct LatestDigest {
    pub day: jiff::civil::Date,
    pub members: i64,
    pub reported_at: Timestamp,
    /// Every tag value of the digest with the members that carry it.
    pub tags: Vec<TagCount>,
}

/// Open tickets of a workspace in one category.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OpenTickets {
    pub workspace_id: uuid::Uuid,
    pub category: String,
    pub count: i64,
}

#[derive(Debug, Clone, Default, PartialEq)]
pub struct CommunityDay {
    pub spaces: Vec<SpaceDay>,
    pub tickets: Vec<OpenTickets>,
}

pub trait CommunityRepo: Send + Sync {
    /// The active space of the agent's workspace registered under `channel` and
    /// `external_id`.
    fn find_space<'a>(
        &'a self,
        agent: AgentRef,
        channel: Channel,
        external_id: &'a str,
    ) -> BoxFuture<'a, anyhow::Result<Option<Space>>>;

    /// Canon entries of the agent's organization (shared or of a project of its workspace)
    /// that suit the space (the parameters of [`crate::space::Space::tag_filter`] applied to
    /// the entries' folded tags), best first.
    fn search_wiki<'a>(
        &'a self,
        agent: AgentRef,
        space_id: uuid::Uuid,
        query: &'a WikiQuery,
    ) -> BoxFuture<'a, anyhow::Result<Result<Vec<WikiHit>, CommunityRefusal>>>;

    /// The facts the knowledge base's search plans by
    /// (`fleetdesk_wiki::ports::WikiRepo::search_facts`), among the canon entries the agent's
    /// workspace sees.
    fn wiki_facts<'a>(
        &'a self,
        agent: AgentRef,
        terms: &'a [String],
        words: &'a [String],
    ) -> BoxFuture<'a, anyhow::Result<fleetdesk_wiki::ports::SearchFacts>>;

    /// Products on sale in the space's workspace matching the tsquery (None: all, by name).
    fn search_products<'a>(
        &'a self,
        agent: AgentRef,
        space_id: uuid::Uuid,
        ts_query: Option<&'a str>,
        limit: i64,
    ) -> BoxFuture<'a, anyhow::Result<Result<Vec<ProductHit>, CommunityRefusal>>>;

    /// Finds the space, has it take the digest ([`crate::digest::accept`] at `now`) and
    /// stores it with its members; a second digest of the space and day is refused.
    fn report_digest<'a>(
        &'a self,
        agent: AgentRef,
        digest: &'a DigestReport,
        now: Timestamp,
    ) -> BoxFuture<'a, anyhow::Result<Result<DigestOutcome, CommunityRefusal>>>;

    /// Finds the space, has it take the ticket ([`crate::ticket::accept`]), then adds the
    /// summary as a note of the open ticket a report of this member and category joins
    /// ([`crate::ticket::reusable`]), or opens one.
    fn open_ticket<'a>(
        &'a self,
        agent: AgentRef,
        ticket: &'a NewTicket,
        now: Timestamp,
    ) -> BoxFuture<'a, anyhow::Result<Result<TicketOutcome, CommunityRefusal>>>;

    /// A page of the scope's tickets (of unarchived workspaces), newest first, each with its
    /// latest notes.
    fn tickets<'a>(
        &'a self,
        scope: TicketScope,
        query: &'a TicketQuery,
    ) -> BoxFuture<'a, anyhow::Result<Page<TicketRecord>>>;

    /// One ticket of the scope with every note; none when it is not the scope's.
    fn ticket(
        &self,
        scope: TicketScope,
        id: uuid::Uuid,
    ) -> BoxFuture<'_, anyhow::Result<Option<TicketRecord>>>;

    /// Locks the ticket of the organization (any for None; else
    /// [`CommunityRefusal::TicketNotFound`]), plans the move ([`crate::ticket::plan_move`])
    /// and writes it, in one transaction.
    fn move_ticket<'a>(
        &'a self,
        organization: Option<uuid::Uuid>,
        id: uuid::Uuid,
        mv: TicketMove,
        note: &'a str,
        by: serde_json::Value,
        now: Timestamp,
    ) -> BoxFuture<'a, anyhow::Result<Result<TicketMoved, CommunityRefusal>>>;
}

/// The person's day read whole in one snapshot, so every part shows the same moment: the rest
/// of the day's rows (`R`: the person-day port's, `fleetdesk_cron::ports::DayRows`, read for
/// `organization`, `dates` and `now` as that port reads them) and the community part: the active
/// spaces of the organization's workspaces (every organization's when None; archived
/// workspaces left out) with their latest digests and tag counts, and open tickets per
/// workspace and category.
pub trait PersonDayWithCommunity<R>: Send + Sync {
    fn person_day_with_community<'a>(
        &'a self,
        organization: Option<uuid::Uuid>,
        dates: &'a [(String, jiff::civil::Date)],
        now: Timestamp,
    ) -> BoxFuture<'a, anyhow::Result<(R, CommunityDay)>>;
}
