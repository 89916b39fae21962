//! The inventory part of the interface (feature `wire`): each operation's handle with its
//! description, and the request and response types the server parses and a client sends.

use crate::{Moved, StockedPost};
use fleetdesk_kernel::Platform;
use fleetdesk_kernel::wire::fields::{Cursor, Limit, Text};
use fleetdesk_kernel::wire::relay::{OnBehalfOf, Origin, StaffOnBehalfOf};
use fleetdesk_kernel::wire::strings::{CodeInput, CursorInput, IsoTimeInput, TimeInput};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;
use validator::Validate;

#[derive(Debug, Serialize, Deserialize, ToSchema)]
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

#[derive(Debug, Clone, Copy, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum SponsoredFilter {
    Only,
    Exclude,
}

#[derive(Debug, Serialize, Deserialize, Validate, ToSchema)]
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

#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct InventoryList {
    pub accounts: Vec<InventoryAccountOut>,
    pub next_cursor: Option<Cursor>,
}

#[derive(Debug, Serialize, Deserialize, ToSchema)]
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

// ---------------------------------------------------------------------------------------------
// POST /posts/{id}/stock, /unstock, /unscheduled

#[derive(Debug, Serialize, Deserialize, Validate, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct StockBody {
    /// Why the post is held.
    pub reason: Option<Text<1, 1000>>,
}

#[derive(Debug, Serialize, Deserialize, Validate, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct UnstockBody {
    /// The new planned time, in the future: ISO with zone or market-local.
    pub planned_at: TimeInput,
    /// A person asked for an extra post that day: one post beyond the target is allowed.
    pub extra: Option<bool>,
}

// ---------------------------------------------------------------------------------------------
// POST /posts/{id}/delete-stocked

#[derive(Debug, Serialize, Deserialize, Validate, ToSchema)]
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

/// The agent's operations (`/api/agent/v1`).
pub mod agent {
    use super::*;
    use fleetdesk_kernel::access::Scope;
    use fleetdesk_kernel::op::{
        HttpMethod::{Get, Post},
        Nothing, OpSpec,
    };
    use fleetdesk_kernel::wire::fields::IdPath;

    fleetdesk_kernel::operations! {
        /// Finished posts held in inventory, per account.
        pub ListInventory(Nothing, InventoryQueryIn, Nothing) -> InventoryList =
            OpSpec::agent(Get, "/posts/inventory", Scope::DraftsRead)
                .tool("list_inventory")
                .also_answers(&[404, 409])
                .summary("Finished posts held in inventory, per account")
                .description(
                    "Accounts with stocked posts, each with its state, whether it is active, how many it \
                     holds and this page's posts (oldest stocked first). Unstock a post for a day that \
                     still needs one instead of writing new.",
                );

        /// Move one of your posts to inventory.
        pub StockPost(IdPath, Nothing, StockBody) -> MovedReply =
            OpSpec::agent(Post, "/posts/{id}/stock", Scope::DraftsWrite)
                .tool("stock_post")
                .idempotent()
                .summary("Move one of your posts to inventory")
                .description(
                    "From draft, review, approved or scheduled. Published, failed, cancelled, deleted \
                     posts and posts the service is publishing are 422. A post you scheduled in your own \
                     tool is listed in work_today's unschedule_stocked until you remove it there and \
                     confirm. Stocking a post already in stock answers unchanged.",
                );

        /// Release a stocked post for a day that still needs posts.
        pub UnstockPost(IdPath, Nothing, UnstockBody) -> MovedReply =
            OpSpec::agent(Post, "/posts/{id}/unstock", Scope::DraftsWrite)
                .tool("unstock_post")
                .idempotent()
                .summary("Release a stocked post for a day that still needs posts")
                .description(
                    "The account must be active and planned_at in the future. A day that already has its \
                     target is 409 already_covered (extra: true when this call asked for an extra post \
                     and even that is taken). The post goes back to internal review, or to the redo list \
                     if it was waiting for a rewrite.",
                );

        /// Confirm a stocked post was removed from your publishing tool.
        pub ConfirmUnscheduled(IdPath, Nothing, Nothing) -> MovedReply =
            OpSpec::agent(Post, "/posts/{id}/unscheduled", Scope::PostsWrite)
                .tool("confirm_unscheduled")
                .summary("Confirm a stocked post was removed from your publishing tool")
                .description(
                    "Takes it off unschedule_stocked; the post stays in inventory. Safe to resend.",
                );

        /// Delete a post from inventory on behalf of an agency person.
        pub DeleteStockedPost(IdPath, Nothing, DeleteStockedBody) -> MovedReply =
            OpSpec::agent(Post, "/posts/{id}/delete-stocked", Scope::RelayWrite)
                .tool("delete_stocked_post")
                .summary("Delete a post from inventory on behalf of an agency person")
                .description(
                    "Only when the person explicitly said so; on_behalf_of and origin are required, a \
                     client may not delete stock (403), and on_behalf_of naming this agent is 422. The \
                     post and its review record remain; it can no longer be scheduled.",
                );
    }
}
