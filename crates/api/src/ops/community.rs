//! Agent API: the community assistant (role `community`) of WhatsApp and Discord groups, and
//! the tickets it opened; Personal API: people list, read, resolve and dismiss the tickets. The
//! operations and their types are `fleetdesk_community::wire`, the rules `fleetdesk_community`;
//! each request runs whole in the adapter's transaction (or one read). Operators have no
//! community scope (403).

use crate::ctx::Ctx;
use crate::error::ApiError;
use crate::fields::{Cursor, Int, List, limit_or};
use crate::input::{Nothing, Req};
use crate::op::{ErasedOp, Reply, bind};
use fleetdesk_community::CommunityRefusal;
use fleetdesk_community::digest::{DigestMember, DigestReport, MemberTag};
use fleetdesk_community::ports::{TicketQuery, TicketScope};
use fleetdesk_community::space::Space;
use fleetdesk_community::ticket::{NewTicket, TicketMove};
use fleetdesk_community::wire::{
    CommunityProduct, CommunityProductsBody, CommunityProductsOut, CommunityWikiBody,
    CommunityWikiEntry, CommunityWikiOut, DigestBody, DigestOut, OwnTicketQueryIn, SpaceBody,
    TicketBody, TicketMoveBody, TicketMoveReply, TicketOut, TicketPage, TicketQueryIn,
    TicketStatusFilter, TicketView, agent, personal,
};
use fleetdesk_kernel::decision::DecidedBy;
use fleetdesk_kernel::wire::fields::IdPath;
use fleetdesk_tenancy::{AgentCaller, MemberCaller};
use jiff::Timestamp;

pub use fleetdesk_community::wire::Filled;

pub fn register(all: &mut Vec<Box<dyn ErasedOp>>) {
    all.push(bind::<agent::GetSpace, _, _, _>(space));
    all.push(bind::<agent::SearchCommunityWiki, _, _, _>(wiki));
    all.push(bind::<agent::SearchProducts, _, _, _>(products));
    all.push(bind::<agent::ReportDigest, _, _, _>(digest));
    all.push(bind::<agent::OpenTicket, _, _, _>(ticket));
    all.push(bind::<agent::ListOwnTickets, _, _, _>(own_tickets));
    all.push(bind::<personal::ListTickets, _, _, _>(list_tickets));
    all.push(bind::<personal::GetTicket, _, _, _>(get_ticket));
    all.push(bind::<personal::ResolveTicket, _, _, _>(resolve_ticket));
    all.push(bind::<personal::DismissTicket, _, _, _>(dismiss_ticket));
}

impl From<CommunityRefusal> for ApiError {
    fn from(r: CommunityRefusal) -> ApiError {
        match &r {
            CommunityRefusal::Invalid { field, message } => ApiError::invalid(field, message),
            CommunityRefusal::SpaceNotFound => ApiError::not_found(
                "no such community space: unknown, archived, or not of your workspace",
            ),
            CommunityRefusal::TicketNotFound => {
                ApiError::not_found("no such ticket: unknown, or not of your organization")
            }
            CommunityRefusal::OtherChannel { .. }
            | CommunityRefusal::DayNotBegun { .. }
            | CommunityRefusal::DayTooOld { .. }
            | CommunityRefusal::DigestExists(_)
            | CommunityRefusal::TicketHandled(_) => ApiError::rejected(r.to_string()),
        }
    }
}

// ---------------------------------------------------------------------------------------------
// POST /community/space

async fn space(
    ctx: Ctx,
    agent: AgentCaller,
    req: Req<Nothing, Nothing, SpaceBody>,
) -> Result<Reply<Space>, ApiError> {
    let s = ctx
        .community
        .space(agent.agent_ref(), req.body.channel, &req.body.external_id.0)
        .await??;
    Ok(Reply::ok(s))
}

// ---------------------------------------------------------------------------------------------
// POST /community/wiki

async fn wiki(
    ctx: Ctx,
    agent: AgentCaller,
    req: Req<Nothing, Nothing, CommunityWikiBody>,
) -> Result<Reply<CommunityWikiOut>, ApiError> {
    let b = req.body;
    let hits = ctx
        .community
        .wiki(
            agent.agent_ref(),
            b.space_id,
            b.query.as_deref(),
            b.limit.map(Int::get),
        )
        .await??;
    Ok(Reply::ok(CommunityWikiOut {
        entries: hits.into_iter().map(CommunityWikiEntry::of).collect(),
    }))
}

// ---------------------------------------------------------------------------------------------
// POST /community/products

async fn products(
    ctx: Ctx,
    agent: AgentCaller,
    req: Req<Nothing, Nothing, CommunityProductsBody>,
) -> Result<Reply<CommunityProductsOut>, ApiError> {
    let b = req.body;
    let hits = ctx
        .community
        .products(
            agent.agent_ref(),
            b.space_id,
            b.query.as_deref(),
            b.limit.map(Int::get),
        )
        .await??;
    Ok(Reply::ok(CommunityProductsOut {
        products: hits.into_iter().map(CommunityProduct::of).collect(),
    }))
}

// ---------------------------------------------------------------------------------------------
// POST /community/digest

async fn digest(
    ctx: Ctx,
    agent: AgentCaller,
    req: Req<Nothing, Nothing, DigestBody>,
) -> Result<Reply<DigestOut>, ApiError> {
    let b = req.body;
    let report = DigestReport {
        space_id: b.space_id,
        channel: b.channel,
        day: b.day.0,
        members: b
            .members
            .into_iter()
            .map(|m| DigestMember {
                external_id: m.external_id.into(),
                display_name: m.display_name.map(String::from),
                message_count: m.message_count.get(),
                summary: m.summary.map(String::from),
                tags: m
                    .tags
                    .map(List::into_vec)
                    .unwrap_or_default()
                    .into_iter()
                    .map(|t| MemberTag {
                        kind: t.kind,
                        value: t.value.into(),
                        confidence: t.confidence.map(|c| c.0),
                    })
                    .collect(),
            })
            .collect(),
    };
    let done = ctx
        .community
        .report_digest(agent.agent_ref(), report, Timestamp::now())
        .await??;
    Ok(Reply::created(DigestOut::of(done)))
}

// ---------------------------------------------------------------------------------------------
// POST /community/tickets

async fn ticket(
    ctx: Ctx,
    agent: AgentCaller,
    req: Req<Nothing, Nothing, TicketBody>,
) -> Result<Reply<TicketOut>, ApiError> {
    let b = req.body;
    let new = NewTicket {
        space_id: b.space_id,
        channel: b.channel,
        member_external_id: b.member_external_id.map(String::from),
        category: b.category,
        summary: b.summary.into(),
    };
    let done = ctx
        .community
        .open_ticket(agent.agent_ref(), new, Timestamp::now())
        .await??;
    Ok(Reply::created_if(!done.reused, TicketOut::of(done)))
}

// ---------------------------------------------------------------------------------------------
// GET /community/tickets (the agent's own; the Personal API's of the organization)

async fn ticket_page(
    ctx: Ctx,
    scope: TicketScope,
    query: TicketQuery,
) -> Result<Reply<TicketPage>, ApiError> {
    let page = ctx.community.tickets(scope, &query).await?;
    Ok(Reply::ok(TicketPage {
        tickets: page.items.into_iter().map(TicketView::of).collect(),
        next_cursor: page.next.map(Cursor),
    }))
}

async fn own_tickets(
    ctx: Ctx,
    agent: AgentCaller,
    req: Req<Nothing, OwnTicketQueryIn, Nothing>,
) -> Result<Reply<TicketPage>, ApiError> {
    let q = req.query;
    let query = TicketQuery {
        workspace: None,
        statuses: q.status.unwrap_or(TicketStatusFilter::All).statuses(),
        category: q.category,
        after: q.cursor.map(|c| c.0),
        limit: limit_or(q.limit, 50),
    };
    ticket_page(ctx, TicketScope::Agent(agent.agent_ref()), query).await
}

async fn list_tickets(
    ctx: Ctx,
    m: MemberCaller,
    req: Req<Nothing, TicketQueryIn, Nothing>,
) -> Result<Reply<TicketPage>, ApiError> {
    let q = req.query;
    let query = TicketQuery {
        workspace: q.workspace,
        statuses: q.status.unwrap_or(TicketStatusFilter::Open).statuses(),
        category: q.category,
        after: q.cursor.map(|c| c.0),
        limit: limit_or(q.limit, 50),
    };
    ticket_page(ctx, TicketScope::Organization(m.organization_id), query).await
}

// ---------------------------------------------------------------------------------------------
// GET /community/tickets/{id}, POST /community/tickets/{id}/resolve|dismiss

async fn get_ticket(
    ctx: Ctx,
    m: MemberCaller,
    req: Req<IdPath, Nothing, Nothing>,
) -> Result<Reply<TicketView>, ApiError> {
    let scope = TicketScope::Organization(m.organization_id);
    let ticket = ctx.community.ticket(scope, req.path.id).await??;
    Ok(Reply::ok(TicketView::of(ticket)))
}

async fn move_ticket(
    ctx: Ctx,
    m: MemberCaller,
    req: Req<IdPath, Nothing, TicketMoveBody>,
    mv: TicketMove,
) -> Result<Reply<TicketMoveReply>, ApiError> {
    let by = DecidedBy::Person {
        id: m.person_id,
        name: m.name.clone(),
    };
    let moved = ctx
        .community
        .move_ticket(
            m.organization_id,
            req.path.id,
            mv,
            &req.body.note,
            by.to_json(),
            Timestamp::now(),
        )
        .await??;
    Ok(Reply::ok(TicketMoveReply::of(moved)))
}

async fn resolve_ticket(
    ctx: Ctx,
    m: MemberCaller,
    req: Req<IdPath, Nothing, TicketMoveBody>,
) -> Result<Reply<TicketMoveReply>, ApiError> {
    move_ticket(ctx, m, req, TicketMove::Resolve).await
}

async fn dismiss_ticket(
    ctx: Ctx,
    m: MemberCaller,
    req: Req<IdPath, Nothing, TicketMoveBody>,
) -> Result<Reply<TicketMoveReply>, ApiError> {
    move_ticket(ctx, m, req, TicketMove::Dismiss).await
}
