//! The knowledge base: the index, one entry, search and proposals (Agent API). The operations
//! and their types are `fleetdesk_wiki::wire`, the rules `fleetdesk_wiki::entry`; search terms
//! and snippets are `fleetdesk_wiki::search`; a proposal runs whole in the adapter's
//! transaction.

use crate::ctx::Ctx;
use crate::error::ApiError;
use crate::fields::{Cursor, Int, List, limit_or};
use crate::input::{Nothing, Req};
use crate::op::{ErasedOp, Reply, bind};
use fleetdesk_tenancy::{AgentCaller, MemberCaller};
use fleetdesk_wiki::entry::{
    Proposal, ProposalError, RawProposal, SEARCH_DEFAULT, Source, StatusFilter, WikiRefusal,
};
use fleetdesk_wiki::ports::{EntryRef, IndexQuery, Proposed, WikiScope};
use fleetdesk_wiki::wire::{
    PersonWikiGetQuery, PersonWikiIndexQuery, PersonWikiSearchQuery, ProposeWikiBody,
    ProposeWikiReply, WikiEntryOut, WikiGetQuery, WikiHeadOut, WikiHitOut, WikiIndexPage,
    WikiIndexQuery, WikiSearchQuery, WikiSearchReply, agent, personal,
};
use uuid::Uuid;

pub use fleetdesk_wiki::wire::{get_rules, propose_rules, source_rules};

pub fn register(all: &mut Vec<Box<dyn ErasedOp>>) {
    all.push(bind::<agent::WikiIndex, _, _, _>(index));
    all.push(bind::<agent::GetWikiEntry, _, _, _>(get));
    all.push(bind::<agent::SearchWiki, _, _, _>(search));
    all.push(bind::<agent::ProposeWiki, _, _, _>(propose));
}

/// The Personal API's reads of the knowledge base: the same index, entry and search over the
/// entries of a workspace the person names.
pub fn register_personal(all: &mut Vec<Box<dyn ErasedOp>>) {
    all.push(bind::<personal::WikiIndex, _, _, _>(person_index));
    all.push(bind::<personal::GetWikiEntry, _, _, _>(person_get));
    all.push(bind::<personal::SearchWiki, _, _, _>(person_search));
}

/// The scope of the workspace a person named: 404 naming workspace outside their reach.
async fn person_scope(ctx: &Ctx, m: &MemberCaller, workspace: Uuid) -> Result<WikiScope, ApiError> {
    ctx.wiki
        .workspace_scope(m.organization_id, workspace)
        .await?
        .ok_or_else(|| {
            ApiError::not_found("workspace: no such workspace in this organization")
                .with_field("workspace")
        })
}

impl From<WikiRefusal> for ApiError {
    fn from(r: WikiRefusal) -> ApiError {
        let message = r.to_string();
        let e = if r.is_not_found() {
            ApiError::not_found(message)
        } else {
            ApiError::rejected(message)
        };
        match r.field() {
            Some(f) => e.with_field(f),
            None => e,
        }
    }
}

// ---------------------------------------------------------------------------------------------
// GET /wiki

async fn index(
    ctx: Ctx,
    agent: AgentCaller,
    req: Req<Nothing, WikiIndexQuery, Nothing>,
) -> Result<Reply<WikiIndexPage>, ApiError> {
    index_of(&ctx, agent.agent_ref().into(), req.query).await
}

async fn person_index(
    ctx: Ctx,
    m: MemberCaller,
    req: Req<Nothing, PersonWikiIndexQuery, Nothing>,
) -> Result<Reply<WikiIndexPage>, ApiError> {
    let q = req.query;
    let scope = person_scope(&ctx, &m, q.workspace).await?;
    index_of(&ctx, scope, q.into()).await
}

async fn index_of(
    ctx: &Ctx,
    scope: WikiScope,
    q: WikiIndexQuery,
) -> Result<Reply<WikiIndexPage>, ApiError> {
    let filter = q.status.unwrap_or(StatusFilter::Canon);
    let query = IndexQuery {
        statuses: filter.statuses().to_vec(),
        waiting_revisions: filter.lists_waiting_revisions(),
        project: q.project.map(String::from),
        after: q.cursor.map(|c| c.0),
        limit: limit_or(q.limit, 50),
    };
    let page = ctx.wiki.index(scope, &query).await??;
    Ok(Reply::ok(WikiIndexPage {
        entries: page.items.into_iter().map(WikiHeadOut::of).collect(),
        next_cursor: page.next.map(Cursor),
    }))
}

// ---------------------------------------------------------------------------------------------
// GET /wiki/entry

async fn get(
    ctx: Ctx,
    agent: AgentCaller,
    req: Req<Nothing, WikiGetQuery, Nothing>,
) -> Result<Reply<WikiEntryOut>, ApiError> {
    get_of(&ctx, agent.agent_ref().into(), req.query).await
}

async fn person_get(
    ctx: Ctx,
    m: MemberCaller,
    req: Req<Nothing, PersonWikiGetQuery, Nothing>,
) -> Result<Reply<WikiEntryOut>, ApiError> {
    let q = req.query;
    // The rule between the arguments before any lookup, as for a schema.
    if q.id.is_some() == q.title.is_some() {
        return Err(id_or_title());
    }
    let scope = person_scope(&ctx, &m, q.workspace).await?;
    get_of(&ctx, scope, q.into()).await
}

/// Neither or both of id and title: 422 over REST (no parameter list states it); over MCP
/// invalid params, the tool stating it as a rule between its arguments ([`get_rules`]).
fn id_or_title() -> ApiError {
    ApiError::rejected("name the entry by exactly one of id and title")
        .with_field("id")
        .breaking_schema()
}

async fn get_of(
    ctx: &Ctx,
    scope: WikiScope,
    q: WikiGetQuery,
) -> Result<Reply<WikiEntryOut>, ApiError> {
    let entry = match (q.id, q.title) {
        (Some(id), None) => EntryRef::Id(id),
        (None, Some(title)) => EntryRef::Title {
            title: title.into(),
            project: q.project.map(String::from),
        },
        _ => return Err(id_or_title()),
    };
    let e = ctx.wiki.get(scope, &entry).await??;
    Ok(Reply::ok(WikiEntryOut::of(e)))
}

// ---------------------------------------------------------------------------------------------
// GET /wiki/search

async fn search(
    ctx: Ctx,
    agent: AgentCaller,
    req: Req<Nothing, WikiSearchQuery, Nothing>,
) -> Result<Reply<WikiSearchReply>, ApiError> {
    search_of(&ctx, agent.agent_ref().into(), req.query).await
}

async fn person_search(
    ctx: Ctx,
    m: MemberCaller,
    req: Req<Nothing, PersonWikiSearchQuery, Nothing>,
) -> Result<Reply<WikiSearchReply>, ApiError> {
    let q = req.query;
    let scope = person_scope(&ctx, &m, q.workspace).await?;
    search_of(&ctx, scope, q.into()).await
}

async fn search_of(
    ctx: &Ctx,
    scope: WikiScope,
    q: WikiSearchQuery,
) -> Result<Reply<WikiSearchReply>, ApiError> {
    let hits = ctx
        .wiki
        .search(
            scope,
            q.q.as_str(),
            q.project.map(String::from),
            q.limit.map_or(SEARCH_DEFAULT, Int::get),
        )
        .await??;
    Ok(Reply::ok(WikiSearchReply {
        results: hits.into_iter().map(WikiHitOut::of).collect(),
    }))
}

// ---------------------------------------------------------------------------------------------
// POST /wiki

fn proposal_error(e: ProposalError) -> ApiError {
    match e {
        ProposalError::Invalid { field, reason } => ApiError::invalid(field, reason),
        ProposalError::Refused { field, reason } => {
            ApiError::rejected(format!("{field} {reason}")).with_field(field)
        }
    }
}

async fn propose(
    ctx: Ctx,
    agent: AgentCaller,
    req: Req<Nothing, Nothing, ProposeWikiBody>,
) -> Result<Reply<ProposeWikiReply>, ApiError> {
    let b = req.body;
    let raw = RawProposal {
        category: b.category,
        title: b.title.into(),
        summary: b.summary.map(String::from),
        body: b.body.into(),
        tags: b
            .tags
            .map(List::into_vec)
            .unwrap_or_default()
            .into_iter()
            .map(|t| t.0)
            .collect(),
        sources: b
            .sources
            .into_iter()
            .map(|s| Source {
                kind: s.kind,
                reference: s.reference.into(),
                title: s.title.map(String::from),
            })
            .collect(),
        project: b.project.map(String::from),
        revises: b.revises,
        note: b.note.map(String::from),
    };
    let proposal = Proposal::parse(raw).map_err(proposal_error)?;
    let p: Proposed = ctx
        .wiki
        .propose(agent.agent_ref(), &proposal, jiff::Timestamp::now())
        .await??;
    Ok(Reply::created_if(p.created, ProposeWikiReply::of(p)))
}
