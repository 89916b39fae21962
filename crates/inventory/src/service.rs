//! The inventory's use cases: the list (an account code resolved first), and the moves that
//! are one transaction of the [`InventoryRepo`], which loads the facts [`crate::plan`] decides
//! on and writes its plan.

use crate::{
    InventoryPage, InventoryQuery, InventoryRefusal, InventoryRepo, Moved, OnBehalfRole, Sponsored,
    UnscheduleItem,
};
use fleetdesk_accounts::ports::{AccountsRepo, CodeRef, LookupError};
use fleetdesk_kernel::{AgentRef, Position, TimeInput};
use jiff::Timestamp;
use serde_json::Value;
use std::sync::Arc;
use uuid::Uuid;

/// What a caller asks of the inventory list: one account by code, or all of the agent's.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InventoryFilter {
    pub code: Option<CodeRef>,
    pub sponsored: Option<Sponsored>,
    pub after: Option<Position>,
    pub limit: i64,
}

#[derive(Clone)]
pub struct InventoryService {
    repo: Arc<dyn InventoryRepo>,
    accounts: Arc<dyn AccountsRepo>,
}

impl InventoryService {
    pub fn new(repo: Arc<dyn InventoryRepo>, accounts: Arc<dyn AccountsRepo>) -> Self {
        InventoryService { repo, accounts }
    }

    /// A page of the inventory; a code that names none of the agent's accounts is refused.
    pub async fn list(
        &self,
        agent: AgentRef,
        filter: InventoryFilter,
    ) -> anyhow::Result<Result<InventoryPage, LookupError>> {
        let slot = match &filter.code {
            Some(code) => match self.accounts.resolve(agent, code).await? {
                Ok(account) => Some(account.slot_id),
                Err(e) => return Ok(Err(e)),
            },
            None => None,
        };
        let query = InventoryQuery {
            sponsored: filter.sponsored,
            slot,
            after: filter.after,
            limit: filter.limit,
        };
        Ok(Ok(self.repo.list(agent, &query).await?))
    }
}

impl InventoryService {}

/// The use cases that are one transaction of the port as they stand: it loads the facts the
/// rules of this crate decide on and writes their plan.
impl InventoryService {
    pub async fn stock(
        &self,
        agent: AgentRef,
        post_id: Uuid,
        reason: Option<&str>,
    ) -> anyhow::Result<Result<Moved, InventoryRefusal>> {
        self.repo.stock(agent, post_id, reason).await
    }

    pub async fn unstock(
        &self,
        agent: AgentRef,
        post_id: Uuid,
        planned_at: TimeInput,
        extra: bool,
        now: Timestamp,
    ) -> anyhow::Result<Result<Moved, InventoryRefusal>> {
        self.repo
            .unstock(agent, post_id, planned_at, extra, now)
            .await
    }

    pub async fn confirm_unscheduled(
        &self,
        agent: AgentRef,
        post_id: Uuid,
    ) -> anyhow::Result<Result<Moved, InventoryRefusal>> {
        self.repo.confirm_unscheduled(agent, post_id).await
    }
    /// Deletes a stocked post from inventory on behalf of a person (`person` is their name,
    /// the record entry's actor); `relay` records the agent, origin and time.
    pub async fn delete_stocked(
        &self,
        agent: AgentRef,
        post_id: Uuid,
        role: OnBehalfRole,
        person: &str,
        reason: Option<&str>,
        relay: &Value,
    ) -> anyhow::Result<Result<Moved, InventoryRefusal>> {
        self.repo
            .delete_stocked(agent, post_id, role, person, reason, relay)
            .await
    }
    /// Stocked posts waiting to be removed from the agent's publishing tool, oldest first.
    pub async fn unschedule_list(
        &self,
        agent: AgentRef,
        limit: i64,
    ) -> anyhow::Result<Vec<UnscheduleItem>> {
        self.repo.unschedule_list(agent, limit).await
    }
}
