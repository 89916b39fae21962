//! What the knowledge-base use cases need from storage: one method per atomic use case.
//!
//! Scope: an agent sees the entries of its organization that are shared (no project) or of a
//! project of its workspace.

use crate::entry::{Category, EntryStatus, Proposal, Source, VersionStatus, WikiRefusal};
use crate::meaning::Embedding;
use crate::query::{Counts, Plan};
use fleetdesk_kernel::{AgentRef, BoxFuture, Page, Position};
use jiff::Timestamp;
use uuid::Uuid;

/// Whose knowledge base a read looks at: an organization's entries that are shared (no project)
/// or of a project of one workspace. An agent reads its own workspace's; a person names a
/// workspace of their organization.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WikiScope {
    pub organization_id: Uuid,
    pub workspace_id: Uuid,
}

impl From<AgentRef> for WikiScope {
    fn from(agent: AgentRef) -> WikiScope {
        WikiScope {
            organization_id: agent.organization_id,
            workspace_id: agent.workspace_id,
        }
    }
}

/// A page of the index.
#[derive(Debug, Clone, PartialEq)]
pub struct IndexQuery {
    pub statuses: Vec<EntryStatus>,
    /// Also list the canon entries with a draft revision waiting, shown as that draft
    /// ([`crate::entry::StatusFilter::lists_waiting_revisions`]).
    pub waiting_revisions: bool,
    /// A project name of the agent's workspace: that project's entries and the shared ones.
    pub project: Option<String>,
    /// Newest first: the page starts after this position.
    pub after: Option<Position>,
    pub limit: i64,
}

/// An entry without its body: what the index and search list.
#[derive(Debug, Clone, PartialEq)]
pub struct EntryHead {
    pub id: Uuid,
    pub title: String,
    pub category: Category,
    pub summary: String,
    pub tags: Vec<String>,
    pub version: i32,
    pub status: EntryStatus,
    /// The project's name; none for a shared entry.
    pub project: Option<String>,
    pub created_at: Timestamp,
    pub updated_at: Timestamp,
}

/// One version of an entry, newest first in [`Entry::versions`].
#[derive(Debug, Clone, PartialEq)]
pub struct VersionRecord {
    pub version: i32,
    pub status: VersionStatus,
    pub category: Category,
    pub title: String,
    pub summary: String,
    pub note: Option<String>,
    /// The proposing agent's name.
    pub proposed_by: Option<String>,
    /// The `wiki_draft` decision a draft waits for (or was decided by).
    pub decision_id: Option<Uuid>,
    pub created_at: Timestamp,
    pub decided_at: Option<Timestamp>,
}

/// A whole entry, as `wiki_get` answers.
#[derive(Debug, Clone, PartialEq)]
pub struct Entry {
    pub head: EntryHead,
    pub body: String,
    pub sources: Vec<Source>,
    /// The latest versions, newest first (at most [`crate::entry::VERSIONS_LISTED`]).
    pub versions: Vec<VersionRecord>,
}

/// How `wiki_get` names an entry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum EntryRef {
    Id(Uuid),
    /// A title (matched as titles are), in `project` or shared.
    Title {
        title: String,
        project: Option<String>,
    },
}

/// A search: how storage ranks it ([`Plan`]; none when the query has no word: nothing is
/// found, but the project filter is still checked), the statuses searched
/// ([`EntryStatus::SEARCHED`]) and the agent's optional project filter.
#[derive(Debug, Clone, PartialEq)]
pub struct SearchQuery {
    pub plan: Option<Plan>,
    pub statuses: &'static [EntryStatus],
    pub project: Option<String>,
    pub limit: i64,
    /// The model whose vectors come with what is found ([`Found::embedding`]); none: no
    /// vectors.
    pub model: Option<String>,
}

/// What a search's plan is made from, among the entries the agent sees in the statuses
/// searched: the synonym groups of glossary entries that share a term with the query (as
/// [`crate::aliases::encode`] stored them) and the [`Counts`] of the query's words.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct SearchFacts {
    pub synonyms: Vec<String>,
    pub counts: Counts,
}

/// An entry a search found: its head, body (for the snippet), score, and which words of the
/// plan it has (their places in [`Plan::words`], from 1).
#[derive(Debug, Clone, PartialEq)]
pub struct Found {
    pub head: EntryHead,
    pub body: String,
    pub score: f32,
    pub matched: Vec<i32>,
    /// The entry's vector, when the query's model made it from the entry's version.
    pub embedding: Option<Embedding>,
}

/// What of an entry is embedded ([`crate::meaning::passage`]), and its version.
#[derive(Debug, Clone, PartialEq)]
pub struct EntryText {
    pub id: Uuid,
    pub version: i32,
    pub title: String,
    pub summary: String,
    pub tags: Vec<String>,
    pub body: String,
}

/// The entries' vectors in storage, which the background job keeps made
/// ([`crate::service::embed_pending`]).
pub trait EmbeddingsRepo: Send + Sync {
    /// Forgets the vectors another model than `model` made (they are made again); how many.
    fn forget_other_models<'a>(&'a self, model: &'a str) -> BoxFuture<'a, anyhow::Result<u64>>;

    /// Up to `limit` entries of any organization, any status but retired, with no vector of
    /// their version, the least recently changed first.
    fn unembedded(&self, limit: i64) -> BoxFuture<'_, anyhow::Result<Vec<EntryText>>>;

    /// Stores each vector, made by `model`, where its entry is still at the version it was
    /// made from (one statement); how many were stored.
    fn store_embeddings<'a>(
        &'a self,
        model: &'a str,
        made: &'a [(Uuid, i32, Embedding)],
    ) -> BoxFuture<'a, anyhow::Result<u64>>;
}

/// What a proposal did.
#[derive(Debug, Clone, PartialEq)]
pub struct Proposed {
    pub id: Uuid,
    pub title: String,
    pub version: i32,
    /// The new version's status: canon or draft.
    pub status: VersionStatus,
    pub auto: bool,
    /// A new entry.
    pub created: bool,
    /// The `wiki_draft` decision it waits for (manual review).
    pub decision_id: Option<Uuid>,
}

/// The knowledge base in storage.
pub trait WikiRepo: Send + Sync {
    /// A page of the entries of the scope, newest first.
    fn index<'a>(
        &'a self,
        scope: WikiScope,
        query: &'a IndexQuery,
    ) -> BoxFuture<'a, anyhow::Result<Result<Page<EntryHead>, WikiRefusal>>>;

    /// One entry of the scope, with its sources and versions.
    fn get<'a>(
        &'a self,
        scope: WikiScope,
        entry: &'a EntryRef,
    ) -> BoxFuture<'a, anyhow::Result<Result<Entry, WikiRefusal>>>;

    /// The entries in the query's statuses the agent sees that match, best first (at most
    /// `limit`).
    fn search<'a>(
        &'a self,
        scope: WikiScope,
        query: &'a SearchQuery,
    ) -> BoxFuture<'a, anyhow::Result<Result<Vec<Found>, WikiRefusal>>>;

    /// The facts a search is planned by: synonyms sharing a term with `terms`, how many entries
    /// there are and how many have each of `words` (tsqueries), each count up to
    /// [`crate::query::CANDIDATES`].
    fn search_facts<'a>(
        &'a self,
        scope: WikiScope,
        terms: &'a [String],
        words: &'a [String],
        statuses: &'static [EntryStatus],
    ) -> BoxFuture<'a, anyhow::Result<SearchFacts>>;

    /// The scope of a workspace of `organization` (`None`: any, for a platform admin), not
    /// archived; `None` when there is no such workspace.
    fn workspace_scope(
        &self,
        organization: Option<Uuid>,
        workspace: Uuid,
    ) -> BoxFuture<'_, anyhow::Result<Option<WikiScope>>>;

    /// Lands a proposal in one transaction: a new entry or a new version of one, canon or a
    /// draft with its `wiki_draft` decision, by the organization's review setting.
    fn propose<'a>(
        &'a self,
        agent: AgentRef,
        proposal: &'a Proposal,
        now: Timestamp,
    ) -> BoxFuture<'a, anyhow::Result<Result<Proposed, WikiRefusal>>>;
}
