//! The accounts use cases. Handlers call these; they hold the rules, the ports hold the I/O.

use crate::models::avatar::{AvatarError, AvatarImage};
use crate::models::heartbeat::HeartbeatInput;
use crate::models::state::{AccountState, ReportedState};
use crate::models::work::{WorkAccounts, work_accounts};
use crate::ports::*;
use fleetdesk_kernel::blob::BlobStore;
use fleetdesk_kernel::{AgentRef, TimeInputError, parse_time_input};
use jiff::Timestamp;
use jiff::civil::Date;
use std::collections::HashMap;
use std::sync::Arc;

#[derive(Clone)]
pub struct AccountsService {
    repo: Arc<dyn AccountsRepo>,
    blobs: Arc<dyn BlobStore>,
}

/// A state report as the agent sent it, before the account's zone is known.
#[derive(Debug, Clone)]
pub struct StateReportRequest {
    pub code: CodeRef,
    pub state: ReportedState,
    pub reason: Option<String>,
    pub occurred_at: String,
    pub origin: Option<serde_json::Value>,
}

#[derive(Debug, thiserror::Error)]
pub enum StateReportError {
    #[error("account lookup failed: {0:?}")]
    Lookup(LookupError),
    #[error("reason is required for {0}")]
    ReasonRequired(&'static str),
    #[error("occurred_at {0}")]
    OccurredAt(TimeInputError),
    #[error("the account has no live generation to report on")]
    NoLiveAccount,
    #[error(transparent)]
    Unexpected(#[from] anyhow::Error),
}

#[derive(Debug, thiserror::Error)]
pub enum AvatarSetError {
    #[error("account lookup failed: {0:?}")]
    Lookup(LookupError),
    #[error("data {0}")]
    Image(AvatarError),
    #[error("the account has no live generation")]
    NoLiveAccount,
    #[error(transparent)]
    Unexpected(#[from] anyhow::Error),
}

#[derive(Debug, thiserror::Error)]
pub enum AddAccountError {
    #[error("{0:?}")]
    Refused(AddRefusal),
    #[error("state must be warming or active")]
    InitialState,
    #[error(transparent)]
    Unexpected(#[from] anyhow::Error),
}

impl AccountsService {
    pub fn new(repo: Arc<dyn AccountsRepo>, blobs: Arc<dyn BlobStore>) -> Self {
        AccountsService { repo, blobs }
    }

    pub async fn list(&self, agent: AgentRef) -> anyhow::Result<Vec<AccountView>> {
        self.repo.list_accounts(agent).await
    }

    pub async fn add(
        &self,
        agent: AgentRef,
        account: NewAccount,
    ) -> Result<AddedAccount, AddAccountError> {
        if !matches!(account.state, AccountState::Warming | AccountState::Active) {
            return Err(AddAccountError::InitialState);
        }
        self.repo
            .add_account(agent, &account)
            .await?
            .map_err(AddAccountError::Refused)
    }

    pub async fn report_state(
        &self,
        agent: AgentRef,
        req: StateReportRequest,
    ) -> Result<(ResolvedAccount, StateOutcome), StateReportError> {
        let reason = req.reason.filter(|r| !r.trim().is_empty());
        if req.state.needs_reason() && reason.is_none() {
            return Err(StateReportError::ReasonRequired(req.state.as_str()));
        }
        let account = self
            .repo
            .resolve(agent, &req.code)
            .await?
            .map_err(StateReportError::Lookup)?;
        let zone = fleetdesk_kernel::market::zone(&account.timezone);
        let occurred_at =
            parse_time_input(&req.occurred_at, &zone).map_err(StateReportError::OccurredAt)?;
        let generation_id = account
            .generation_id
            .ok_or(StateReportError::NoLiveAccount)?;
        let change = StateChange {
            generation_id,
            report: req.state,
            reason,
            occurred_at,
            origin: req.origin,
        };
        let outcome = self.repo.change_state(agent, &change).await?;
        Ok((account, outcome))
    }

    pub async fn set_avatar(
        &self,
        agent: AgentRef,
        code: CodeRef,
        data: &str,
    ) -> Result<(ResolvedAccount, StoredAvatar, bool), AvatarSetError> {
        let image = AvatarImage::decode(data).map_err(AvatarSetError::Image)?;
        let account = self
            .repo
            .resolve(agent, &code)
            .await?
            .map_err(AvatarSetError::Lookup)?;
        let generation_id = account.generation_id.ok_or(AvatarSetError::NoLiveAccount)?;
        let key = image.storage_key();
        if account.avatar_sha256.as_deref() != Some(image.sha256.as_str()) {
            // Content-addressed: storing before the row is written leaves, at worst, an
            // unreferenced copy of an image, never a row pointing at nothing.
            self.blobs
                .put(&key, bytes::Bytes::from(image.bytes.clone()))
                .await
                .map_err(|e| anyhow::anyhow!(e))?;
        }
        let (stored, changed) = self.repo.set_avatar(generation_id, &image, &key).await?;
        Ok((account, stored, changed))
    }

    pub async fn heartbeat(
        &self,
        agent: AgentRef,
        input: HeartbeatInput,
    ) -> anyhow::Result<HeartbeatRecord> {
        self.repo.record_heartbeat(agent, &input).await
    }

    /// The accounts part of the agent's day. Post counts come from reported posts, which
    /// arrive with the post lifecycle; until then nothing is counted as covered.
    pub async fn work_accounts(
        &self,
        agent: AgentRef,
        date: Option<Date>,
        now: Timestamp,
    ) -> anyhow::Result<WorkAccounts> {
        let accounts = self.repo.rotation(agent).await?;
        Ok(work_accounts(&accounts, &HashMap::new(), date, now))
    }
}
