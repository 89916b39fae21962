//! The inventory's use cases that need more than its own port. A use case that runs whole in
//! one transaction of the adapter is the port's own method, reached through
//! [`InventoryService::repo`]: the service adds nothing to it.

use crate::{InventoryPage, InventoryQuery, InventoryRepo, Sponsored};
use fleetdesk_accounts::ports::{AccountsRepo, CodeRef, LookupError};
use fleetdesk_kernel::{AgentRef, Position};
use std::sync::Arc;

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

impl InventoryService {
    /// A use case that runs whole in one call of the port is the port's own method: callers
    /// reach it through `repo()`, so a call names whether the service's rules run
    /// (`inventory.list`) or the port's one transaction alone (`inventory.repo().stock`).
    pub fn repo(&self) -> &dyn InventoryRepo {
        &*self.repo
    }
}
