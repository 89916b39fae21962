//! Agent API: post inventory.

use super::common::naming;
use super::drafts::IdPath;
use super::relay::{OnBehalfRoleIn, RelayRecord, StaffOnly};
use crate::ctx::Ctx;
use crate::error::ApiError;
use crate::fields::{Cursor, Utc, limit_or};
use crate::input::{Nothing, Req};
use crate::op::bind;
use crate::op::{ErasedOp, Reply};
use fleetdesk_accounts::ports::CodeRef;
use fleetdesk_inventory::service::InventoryFilter;
use fleetdesk_inventory::wire::agent;
pub use fleetdesk_inventory::wire::{
    DeleteStockedBody, InventoryAccountOut, InventoryList, InventoryQueryIn, MovedReply,
    SponsoredFilter, StockBody, UnstockBody,
};
use fleetdesk_inventory::{
    DeleteRefusal, InventoryRefusal, OnBehalfRole, Sponsored, StockRefusal, UnstockRefusal,
};
use fleetdesk_kernel::ErrorCode;
use fleetdesk_tenancy::AgentCaller;
use jiff::Timestamp;

pub fn register(all: &mut Vec<Box<dyn ErasedOp>>) {
    all.push(bind::<agent::ListInventory, _, _, _>(list_inventory));
    all.push(bind::<agent::StockPost, _, _, _>(stock_post));
    all.push(bind::<agent::UnstockPost, _, _, _>(unstock_post));
    all.push(bind::<agent::ConfirmUnscheduled, _, _, _>(
        confirm_unscheduled,
    ));
    all.push(bind::<agent::DeleteStockedPost, _, _, _>(
        delete_stocked_post,
    ));
}

/// How the API answers each refusal of the inventory.
impl From<InventoryRefusal> for ApiError {
    fn from(r: InventoryRefusal) -> ApiError {
        match r {
            InventoryRefusal::Lookup(_) => ApiError::not_found("no such post among your accounts"),
            InventoryRefusal::Stock(StockRefusal::Finished(s)) => ApiError::rejected(format!(
                "the post is {s}; only posts not yet published (draft, review, approved, scheduled) \
             can be stocked"
            )),
            InventoryRefusal::Stock(StockRefusal::Discarded) => {
                ApiError::rejected("the post was deleted from inventory")
            }
            InventoryRefusal::Unstock(UnstockRefusal::NotInStock(s)) => {
                ApiError::rejected(format!("the post is {s}, not in inventory"))
            }
            InventoryRefusal::Unstock(UnstockRefusal::AccountNotActive(state)) => {
                ApiError::rejected(format!(
                    "the account is {}, not active; stocked posts are released only to active \
                 accounts",
                    state.as_deref().unwrap_or("without a live account")
                ))
            }
            InventoryRefusal::Unstock(UnstockRefusal::NotFuture(t)) => {
                ApiError::rejected(format!("planned_at {} is not in the future", Utc(t)))
                    .with_field("planned_at")
            }
            InventoryRefusal::Unstock(UnstockRefusal::AlreadyCovered {
                extra,
                committed,
                target,
            }) => ApiError::new(
                ErrorCode::AlreadyCovered,
                format!(
                    "that day already has {committed} post(s) for a target of {target}{}",
                    if extra { " and its extra" } else { "" }
                ),
            )
            .with_extra("extra", extra),
            InventoryRefusal::PlannedAt(e) => ApiError::invalid("planned_at", e),
            InventoryRefusal::NotStocked(s) => ApiError::rejected(format!(
                "the post is {s}, not in inventory, and has nothing to unschedule"
            )),
            InventoryRefusal::Delete(DeleteRefusal::Client) => {
                ApiError::forbidden("a client may not delete posts from inventory")
                    .with_field("on_behalf_of.role")
                    .breaking_schema()
            }
            InventoryRefusal::Delete(DeleteRefusal::NotInStock(s)) => {
                ApiError::rejected(format!("the post is {s}, not in inventory"))
            }
        }
    }
}

// ---------------------------------------------------------------------------------------------
// GET /posts/inventory

async fn list_inventory(
    ctx: Ctx,
    agent: AgentCaller,
    req: Req<Nothing, InventoryQueryIn, Nothing>,
) -> Result<Reply<InventoryList>, ApiError> {
    let q = req.query;
    let code = q.code.as_ref().map(|c| CodeRef {
        code: c.0.clone(),
        platform: q.platform,
    });
    let filter = InventoryFilter {
        code,
        sponsored: q.sponsored.map(|s| match s {
            SponsoredFilter::Only => Sponsored::Only,
            SponsoredFilter::Exclude => Sponsored::Exclude,
        }),
        after: q.cursor.map(|c| c.0),
        limit: limit_or(q.limit, 50),
    };
    let page = ctx
        .inventory
        .list(agent.agent_ref(), filter)
        .await?
        .map_err(naming(q.code.as_ref().map_or("", |c| c.0.as_str())))?;
    let accounts = page
        .accounts
        .into_iter()
        .map(|a| InventoryAccountOut {
            posts: page
                .posts
                .items
                .iter()
                .filter(|p| p.slot_id == a.slot_id)
                .cloned()
                .collect(),
            code: a.code,
            platform: a.platform,
            state: a.state,
            active: a.active,
            count: a.count,
        })
        .collect();
    Ok(Reply::ok(InventoryList {
        accounts,
        next_cursor: page.posts.next.map(Cursor),
    }))
}

// ---------------------------------------------------------------------------------------------
// POST /posts/{id}/stock, /unstock, /unscheduled

async fn stock_post(
    ctx: Ctx,
    agent: AgentCaller,
    req: Req<IdPath, Nothing, StockBody>,
) -> Result<Reply<MovedReply>, ApiError> {
    let moved = ctx
        .inventory
        .stock(agent.agent_ref(), req.path.id, req.body.reason.as_deref())
        .await??;
    Ok(Reply::ok(moved.into()))
}

async fn unstock_post(
    ctx: Ctx,
    agent: AgentCaller,
    req: Req<IdPath, Nothing, UnstockBody>,
) -> Result<Reply<MovedReply>, ApiError> {
    let moved = ctx
        .inventory
        .unstock(
            agent.agent_ref(),
            req.path.id,
            req.body.planned_at.0,
            req.body.extra.unwrap_or(false),
            Timestamp::now(),
        )
        .await??;
    Ok(Reply::ok(moved.into()))
}

async fn confirm_unscheduled(
    ctx: Ctx,
    agent: AgentCaller,
    req: Req<IdPath, Nothing, Nothing>,
) -> Result<Reply<MovedReply>, ApiError> {
    let moved = ctx
        .inventory
        .confirm_unscheduled(agent.agent_ref(), req.path.id)
        .await??;
    Ok(Reply::ok(moved.into()))
}

// ---------------------------------------------------------------------------------------------
// POST /posts/{id}/delete-stocked

async fn delete_stocked_post(
    ctx: Ctx,
    agent: AgentCaller,
    req: Req<IdPath, Nothing, DeleteStockedBody>,
) -> Result<Reply<MovedReply>, ApiError> {
    let b = req.body;
    // The role the schema states before the post is loaded (the domain refuses it too).
    b.on_behalf_of
        .staff_only(|| ApiError::forbidden("a client may not delete posts from inventory"))?;
    let role = match b.on_behalf_of.role {
        OnBehalfRoleIn::Agency => OnBehalfRole::Agency,
        OnBehalfRoleIn::Client => OnBehalfRole::Client,
        OnBehalfRoleIn::Admin => OnBehalfRole::Admin,
    };
    let relay =
        RelayRecord::new(&agent, &b.on_behalf_of, &b.origin, b.effective_at.as_ref())?.to_json();
    let moved = ctx
        .inventory
        .delete_stocked(
            agent.agent_ref(),
            req.path.id,
            role,
            b.on_behalf_of.name.0.trim(),
            b.reason.as_deref(),
            &relay,
        )
        .await??;
    Ok(Reply::ok(moved.into()))
}
