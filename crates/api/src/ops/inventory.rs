//! Agent API: post inventory.

use super::common::{CodeInput, CursorInput, IsoTimeInput, TimeInput, naming};
use super::drafts::IdPath;
use super::relay::{OnBehalfOf, OnBehalfRoleIn, Origin, RelayRecord, StaffOnBehalfOf, StaffOnly};
use crate::ctx::Ctx;
use crate::error::ApiError;
use crate::fields::{Cursor, Limit, Text, Utc, limit_or};
use crate::input::{Nothing, Req};
use crate::op::{ErasedOp, HttpMethod, OpSpec, Reply, operation};
use fleetdesk_accounts::ports::CodeRef;
use fleetdesk_inventory::service::InventoryFilter;
use fleetdesk_inventory::{
    DeleteRefusal, InventoryRefusal, Moved, OnBehalfRole, Sponsored, StockRefusal, StockedPost,
    UnstockRefusal,
};
use fleetdesk_kernel::{ErrorCode, Platform};
use fleetdesk_tenancy::{AgentCaller, Scope};
use jiff::Timestamp;
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;
use validator::Validate;

pub fn register(all: &mut Vec<Box<dyn ErasedOp>>) {
    use HttpMethod::{Get, Post};
    all.push(operation(
        OpSpec::agent(Get, "/posts/inventory", Scope::DraftsRead)
            .tool("list_inventory")
            .also_answers(&[404, 409])
            .summary("Finished posts held in inventory, per account")
            .description(
                "Accounts with stocked posts, each with its state, whether it is active, how many it \
                 holds and this page's posts (oldest stocked first). Unstock a post for a day that \
                 still needs one instead of writing new.",
            ),
        list_inventory,
    ));
    all.push(operation(
        OpSpec::agent(Post, "/posts/{id}/stock", Scope::DraftsWrite)
            .tool("stock_post")
            .idempotent()
            .summary("Move one of your posts to inventory")
            .description(
                "From draft, review, approved or scheduled. Published, failed, cancelled, deleted \
                 posts and posts the service is publishing are 422. A post you scheduled in your own \
                 tool is listed in work_today's unschedule_stocked until you remove it there and \
                 confirm. Stocking a post already in stock answers unchanged.",
            ),
        stock_post,
    ));
    all.push(operation(
        OpSpec::agent(Post, "/posts/{id}/unstock", Scope::DraftsWrite)
            .tool("unstock_post")
            .idempotent()
            .summary("Release a stocked post for a day that still needs posts")
            .description(
                "The account must be active and planned_at in the future. A day that already has its \
                 target is 409 already_covered (extra: true when this call asked for an extra post \
                 and even that is taken). The post goes back to internal review, or to the redo list \
                 if it was waiting for a rewrite.",
            ),
        unstock_post,
    ));
    all.push(operation(
        OpSpec::agent(Post, "/posts/{id}/unscheduled", Scope::PostsWrite)
            .tool("confirm_unscheduled")
            .summary("Confirm a stocked post was removed from your publishing tool")
            .description(
                "Takes it off unschedule_stocked; the post stays in inventory. Safe to resend.",
            ),
        confirm_unscheduled,
    ));
    all.push(operation(
        OpSpec::agent(Post, "/posts/{id}/delete-stocked", Scope::RelayWrite)
            .tool("delete_stocked_post")
            .summary("Delete a post from inventory on behalf of an agency person")
            .description(
                "Only when the person explicitly said so; on_behalf_of and origin are required, a \
                 client may not delete stock (403), and on_behalf_of naming this agent is 422. The \
                 post and its review record remain; it can no longer be scheduled.",
            ),
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

#[derive(Debug, Serialize, ToSchema)]
pub struct MovedReply {
    pub post: Moved,
}

impl From<Moved> for MovedReply {
    fn from(post: Moved) -> MovedReply {
        MovedReply { post }
    }
}

// ---------------------------------------------------------------------------------------------
// GET /posts/inventory

#[derive(Debug, Clone, Copy, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum SponsoredFilter {
    Only,
    Exclude,
}

#[derive(Debug, Deserialize, Validate, ToSchema)]
pub struct InventoryQueryIn {
    /// `only` sponsored posts, or `exclude` them.
    pub sponsored: Option<SponsoredFilter>,
    /// One account (current or legacy code).
    pub code: Option<CodeInput>,
    pub platform: Option<Platform>,
    /// 1-200, default 50.
    pub limit: Option<Limit<200>>,
    /// `next_cursor` of the previous page.
    pub cursor: Option<CursorInput>,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct InventoryList {
    pub accounts: Vec<InventoryAccountOut>,
    pub next_cursor: Option<Cursor>,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct InventoryAccountOut {
    pub code: String,
    pub platform: Platform,
    pub state: Option<String>,
    pub active: bool,
    /// Stocked posts of the account (every page).
    pub count: i64,
    /// This page's posts of the account.
    pub posts: Vec<StockedPost>,
}

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

#[derive(Debug, Deserialize, Validate, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct StockBody {
    /// Why the post is held.
    pub reason: Option<Text<1, 1000>>,
}

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

#[derive(Debug, Deserialize, Validate, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct UnstockBody {
    /// The new planned time, in the future: ISO with zone or market-local.
    pub planned_at: TimeInput,
    /// A person asked for an extra post that day: one post beyond the target is allowed.
    pub extra: Option<bool>,
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

#[derive(Debug, Deserialize, Validate, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct DeleteStockedBody {
    pub reason: Option<Text<1, 1000>>,
    /// The person who decided; role agency (or admin). A client is 403.
    #[schema(value_type = StaffOnBehalfOf)]
    pub on_behalf_of: OnBehalfOf,
    pub origin: Origin,
    /// When the person decided (ISO with zone); default now.
    pub effective_at: Option<IsoTimeInput>,
}

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
