//! Agent API: wiki sources (GET /wiki/sources) and their sync runs (POST
//! /wiki/sources/{id}/runs). The rules (when a source is due, who reports it, what a report may
//! carry) are `fleetdesk_wiki::sources`; a run is recorded in the adapter's transaction.

use super::drafts::IdPath;
use crate::ctx::Ctx;
use crate::error::ApiError;
use crate::fields::{Int, Text, Utc};
use crate::input::{Nothing, Req};
use crate::op::{ErasedOp, HttpMethod, OpSpec, Reply, operation};
use fleetdesk_tenancy::{AgentCaller, Scope};
use fleetdesk_wiki::sources::{
    RETRY_AFTER_FAILED_HOURS, Source, SyncCounts, SyncRefusal, SyncReport, SyncStatus, listing,
};
use jiff::Timestamp;
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;
use uuid::Uuid;
use validator::Validate;

const _: () = assert!(
    RETRY_AFTER_FAILED_HOURS == 1,
    "the descriptions say one hour"
);

pub fn register(all: &mut Vec<Box<dyn ErasedOp>>) {
    use HttpMethod::{Get, Post};
    all.push(operation(
        OpSpec::agent(Get, "/wiki/sources", Scope::WikiRead)
            .tool("wiki_sources")
            .summary("Wiki sources of your workspace, or only those due for you to sync")
            .description(
                "Every source of your workspace (its projects' and the workspace-wide ones), in \
                 name order, each with its sync state and `due`. With due_only true: only the \
                 due sources that are assigned to you or to no agent, never-synced first, then \
                 the longest overdue. A source never synced is due at once (next_due_at null); \
                 after a success or partial run it is due every_hours after that run; after a \
                 failed run it is retried sooner, 1 hour after it (or every_hours when \
                 shorter). Sync skips drafts, brainstorms, to-dos, meeting logs, post status, \
                 prices, contracts, accounting, staff data and personal data, and never puts \
                 share links with access tokens in an entry's sources.",
            ),
        list_sources,
    ));
    all.push(operation(
        OpSpec::agent(Post, "/wiki/sources/{id}/runs", Scope::WikiWrite)
            .tool("report_wiki_sync")
            .tool_path_arg("id", "source_id")
            .idempotent()
            .created_always()
            .summary("Report a sync run of a wiki source")
            .description(
                "status success, partial or failed; summary up to 2000 characters; counts \
                 read, created, revised, unchanged, skipped (each 0-2147483647, absent 0); \
                 cursor up to 2000 characters, where the next run goes on (absent keeps the \
                 stored cursor, an empty string clears it); a field past its limit is 400 \
                 naming it. A summary or cursor carrying a credential is 422 rejected naming \
                 the field: a fleetdesk key, a link with an access-token parameter (`token`, \
                 `access_token`, `key`, `sig`, `signature`, `auth`, `code`, `pwd`, cloud \
                 signing parameters and similar) or a password (`https://user:pw@host`), or \
                 such a parameter in a bare query string whose value looks like a token (12 or \
                 more letters and digits); prose such as `error code=429` passes. These checks \
                 of the body come first; then the source must be of your workspace (else 404) \
                 and assigned to you or to no agent (another agent's source: 403). The run is \
                 recorded and the source's last_run_at (now), last_status and cursor updated; \
                 the answer (201) carries the run's id and the source with its next_due_at.",
            ),
        report_sync,
    ));
}

// ---------------------------------------------------------------------------------------------
// Output

/// A wiki source with its sync state.
#[derive(Debug, Serialize, ToSchema)]
pub struct WikiSyncSourceOut {
    pub id: Uuid,
    /// vault, notion, post, review, agent, person or other.
    pub kind: String,
    pub name: String,
    /// Where the source is (a path or a link without access tokens).
    pub locator: String,
    /// What to take from it.
    pub scope_note: Option<String>,
    /// The project's name; null for a workspace-wide source.
    pub project: Option<String>,
    /// The agent it is assigned to; null when any agent of the workspace may sync it.
    pub agent: Option<String>,
    pub every_hours: i32,
    /// null when never synced.
    pub last_run_at: Option<Utc>,
    pub last_status: Option<SyncStatus>,
    /// Where the next run goes on, as the last run reported it.
    pub cursor: Option<String>,
    /// Due now.
    pub due: bool,
    /// When it is due next; null when never synced (due at once).
    pub next_due_at: Option<Utc>,
}

impl From<Source> for WikiSyncSourceOut {
    fn from(s: Source) -> WikiSyncSourceOut {
        let r = s.row;
        WikiSyncSourceOut {
            id: r.id,
            kind: r.kind,
            name: r.name,
            locator: r.locator,
            scope_note: r.scope_note,
            project: r.project,
            agent: r.agent,
            every_hours: r.every_hours,
            last_run_at: r.last_run_at.map(Utc),
            last_status: r.last_status,
            cursor: r.cursor,
            due: s.due,
            next_due_at: s.next_due_at.map(Utc),
        }
    }
}

impl From<SyncRefusal> for ApiError {
    fn from(r: SyncRefusal) -> ApiError {
        let message = r.to_string();
        match r {
            SyncRefusal::NotFound => ApiError::not_found(message),
            SyncRefusal::NotYours => ApiError::forbidden(message),
            SyncRefusal::Invalid { field, reason } => ApiError::invalid(field, reason),
            SyncRefusal::Token { field, .. } => ApiError::rejected(message).with_field(field),
        }
    }
}

// ---------------------------------------------------------------------------------------------
// GET /wiki/sources

#[derive(Debug, Deserialize, Validate, ToSchema)]
pub struct WikiSourcesQuery {
    /// true: only the due sources assigned to you or to no agent.
    pub due_only: Option<bool>,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct WikiSourcesReply {
    pub sources: Vec<WikiSyncSourceOut>,
}

async fn list_sources(
    ctx: Ctx,
    agent: AgentCaller,
    req: Req<Nothing, WikiSourcesQuery, Nothing>,
) -> Result<Reply<WikiSourcesReply>, ApiError> {
    let rows = ctx
        .wiki_sources
        .workspace_sources(agent.agent_ref())
        .await?;
    let due_only = req.query.due_only.unwrap_or(false);
    let sources = listing(rows, agent.agent_id, due_only, Timestamp::now());
    Ok(Reply::ok(WikiSourcesReply {
        sources: sources.into_iter().map(WikiSyncSourceOut::from).collect(),
    }))
}

// ---------------------------------------------------------------------------------------------
// POST /wiki/sources/{id}/runs

/// A stored count: 0-2147483647.
type RunCount = Int<0, 2147483647>;

/// What the run did with the items it read; absent counts are 0.
#[derive(Debug, Default, Serialize, Deserialize, Validate, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct SyncCountsIn {
    pub read: Option<RunCount>,
    pub created: Option<RunCount>,
    pub revised: Option<RunCount>,
    pub unchanged: Option<RunCount>,
    pub skipped: Option<RunCount>,
}

#[derive(Debug, Deserialize, Validate, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct WikiSyncBody {
    pub status: SyncStatus,
    /// What the run did, up to 2000 characters; no credentials.
    pub summary: Option<Text<0, 2000>>,
    pub counts: Option<SyncCountsIn>,
    /// Where the next run goes on, up to 2000 characters; absent keeps the stored one, an
    /// empty string clears it; no access tokens.
    pub cursor: Option<Text<0, 2000>>,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct WikiSyncReply {
    /// The recorded run.
    pub run_id: Uuid,
    pub source: WikiSyncSourceOut,
}

async fn report_sync(
    ctx: Ctx,
    agent: AgentCaller,
    req: Req<IdPath, Nothing, WikiSyncBody>,
) -> Result<Reply<WikiSyncReply>, ApiError> {
    let body = req.body;
    let c = body.counts.unwrap_or_default();
    let n = |v: Option<RunCount>| v.map_or(0, Int::get);
    let report = SyncReport {
        status: body.status,
        summary: body.summary.map(String::from),
        counts: SyncCounts {
            read: n(c.read),
            created: n(c.created),
            revised: n(c.revised),
            unchanged: n(c.unchanged),
            skipped: n(c.skipped),
        },
        cursor: body.cursor.map(String::from),
    };
    report.check()?;
    let recorded = ctx
        .wiki_sources
        .record_sync(agent.agent_ref(), req.path.id, &report)
        .await??;
    Ok(Reply::created(WikiSyncReply {
        run_id: recorded.run_id,
        source: Source::at(recorded.source, Timestamp::now()).into(),
    }))
}
