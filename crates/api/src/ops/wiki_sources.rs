//! Agent API: wiki sources (GET /wiki/sources) and their sync runs (POST
//! /wiki/sources/{id}/runs). The operations and their types are `fleetdesk_wiki::wire`; the
//! rules (when a source is due, who reports it, what a report may carry) are
//! `fleetdesk_wiki::sources`; a run is recorded in the adapter's transaction.

use crate::ctx::Ctx;
use crate::error::ApiError;
use crate::fields::Int;
use crate::input::{Nothing, Req};
use crate::op::{ErasedOp, Reply, bind};
use fleetdesk_kernel::wire::fields::IdPath;
use fleetdesk_tenancy::AgentCaller;
use fleetdesk_wiki::sources::{Source, SyncCounts, SyncRefusal, SyncReport, listing};
use fleetdesk_wiki::wire::{
    RunCount, WikiSourcesQuery, WikiSourcesReply, WikiSyncBody, WikiSyncReply, WikiSyncSourceOut,
    agent,
};
use jiff::Timestamp;

pub fn register(all: &mut Vec<Box<dyn ErasedOp>>) {
    all.push(bind::<agent::ListWikiSources, _, _, _>(list_sources));
    all.push(bind::<agent::ReportWikiSync, _, _, _>(report_sync));
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
