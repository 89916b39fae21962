//! The accounts use cases. Handlers call these; they hold the rules, the ports hold the I/O.

use crate::HeartbeatInput;
use crate::models::avatar::{AvatarError, AvatarImage};
use crate::models::state::{AccountState, ReportedState};
use crate::models::work::{
    AccountInventory, DayCount, PlannedDay, WorkAccounts, market_dates, planned_days,
    planning_dates, work_accounts,
};
use crate::ports::*;
use fleetdesk_kernel::blob::BlobStore;
use fleetdesk_kernel::{AgentRef, TimeInput, TimeInputError};
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
    pub occurred_at: TimeInput,
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
        let occurred_at = req
            .occurred_at
            .resolve(&zone)
            .map_err(StateReportError::OccurredAt)?;
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

    /// The accounts part of the agent's day: posts count once they were reported published
    /// or scheduled for the market date.
    pub async fn work_accounts(
        &self,
        agent: AgentRef,
        date: Option<Date>,
        now: Timestamp,
    ) -> anyhow::Result<WorkAccounts> {
        let accounts = self.repo.rotation(agent).await?;
        let dates: Vec<_> = market_dates(accounts.iter().map(|a| a.market), date, now)
            .into_iter()
            .collect();
        let counts = self.counts(agent, &dates).await?;
        Ok(work_accounts(&accounts, &counts, date, now))
    }

    /// The planning view (`planned_posts`): the next `days` market dates of every active
    /// account that still need posts, and each account's inventory.
    pub async fn planned(
        &self,
        agent: AgentRef,
        start: Option<Date>,
        days: u32,
        now: Timestamp,
    ) -> anyhow::Result<(Vec<PlannedDay>, Vec<AccountInventory>)> {
        let accounts = self.repo.rotation(agent).await?;
        let dates = planning_dates(accounts.iter().map(|a| a.market), start, days, now);
        let counts = self.counts(agent, &dates).await?;
        Ok(planned_days(&accounts, &counts, &dates))
    }

    async fn counts(
        &self,
        agent: AgentRef,
        dates: &[(fleetdesk_kernel::Market, Date)],
    ) -> anyhow::Result<HashMap<(uuid::Uuid, Date), DayCount>> {
        if dates.is_empty() {
            return Ok(HashMap::new());
        }
        Ok(self
            .repo
            .day_counts(agent, dates)
            .await?
            .into_iter()
            .map(|(slot, day, c)| ((slot, day), c))
            .collect())
    }
}

impl AccountsService {}

/// The use cases that are one transaction of the port as they stand: it loads the facts the
/// rules of this crate decide on and writes their plan.
impl AccountsService {
    pub async fn list_accounts(&self, agent: AgentRef) -> anyhow::Result<Vec<AccountView>> {
        self.repo.list_accounts(agent).await
    }

    pub async fn record_heartbeat(
        &self,
        agent: AgentRef,
        input: &HeartbeatInput,
    ) -> anyhow::Result<HeartbeatRecord> {
        self.repo.record_heartbeat(agent, input).await
    }
}

#[cfg(test)]
mod tests {
    //! The service's rules with in-memory fakes: no database.

    use super::*;
    use crate::models::heartbeat::HeartbeatInput;
    use crate::models::state::StateMove;
    use crate::models::work::RotationAccount;
    use fleetdesk_kernel::blob::BlobError;
    use fleetdesk_kernel::{AccountCode, BoxFuture, Platform};
    use std::sync::Mutex;
    use uuid::Uuid;

    #[derive(Default)]
    struct FakeRepo {
        resolved: Mutex<Option<Result<ResolvedAccount, LookupError>>>,
        changes: Mutex<Vec<StateChange>>,
        avatars: Mutex<Vec<String>>,
    }

    impl AccountsRepo for FakeRepo {
        fn list_accounts(&self, _: AgentRef) -> BoxFuture<'_, anyhow::Result<Vec<AccountView>>> {
            Box::pin(async { Ok(Vec::new()) })
        }
        fn resolve<'a>(
            &'a self,
            _: AgentRef,
            _: &'a CodeRef,
        ) -> BoxFuture<'a, anyhow::Result<Result<ResolvedAccount, LookupError>>> {
            Box::pin(async move {
                Ok(self
                    .resolved
                    .lock()
                    .unwrap()
                    .clone()
                    .expect("resolve not set up"))
            })
        }
        fn add_account<'a>(
            &'a self,
            _: AgentRef,
            _: &'a NewAccount,
        ) -> BoxFuture<'a, anyhow::Result<Result<AddedAccount, AddRefusal>>> {
            Box::pin(async { Ok(Err(AddRefusal::CodeTaken)) })
        }
        fn change_state<'a>(
            &'a self,
            _: AgentRef,
            change: &'a StateChange,
        ) -> BoxFuture<'a, anyhow::Result<StateOutcome>> {
            Box::pin(async move {
                self.changes.lock().unwrap().push(change.clone());
                Ok(StateOutcome {
                    movement: StateMove::Unchanged,
                    state: change.report.target(),
                    decision: None,
                    stocked_posts: 0,
                })
            })
        }
        fn set_avatar<'a>(
            &'a self,
            _: Uuid,
            image: &'a AvatarImage,
            _: &'a str,
        ) -> BoxFuture<'a, anyhow::Result<(StoredAvatar, bool)>> {
            Box::pin(async move {
                self.avatars.lock().unwrap().push(image.sha256.clone());
                let stored = StoredAvatar {
                    sha256: image.sha256.clone(),
                    mime_type: image.kind.mime_type().into(),
                    bytes: image.bytes.len() as i64,
                    width: None,
                    height: None,
                    updated_at: Timestamp::UNIX_EPOCH,
                };
                Ok((stored, true))
            })
        }
        fn record_heartbeat<'a>(
            &'a self,
            _: AgentRef,
            _: &'a HeartbeatInput,
        ) -> BoxFuture<'a, anyhow::Result<HeartbeatRecord>> {
            Box::pin(async { anyhow::bail!("not used") })
        }
        fn rotation(&self, _: AgentRef) -> BoxFuture<'_, anyhow::Result<Vec<RotationAccount>>> {
            Box::pin(async { Ok(Vec::new()) })
        }

        fn day_counts<'a>(
            &'a self,
            _: AgentRef,
            _: &'a [(fleetdesk_kernel::Market, Date)],
        ) -> BoxFuture<'a, anyhow::Result<Vec<(Uuid, Date, DayCount)>>> {
            Box::pin(async { Ok(Vec::new()) })
        }
    }

    #[derive(Default)]
    struct FakeBlobs {
        puts: Mutex<Vec<String>>,
    }

    impl BlobStore for FakeBlobs {
        fn put(&self, key: &str, _: bytes::Bytes) -> BoxFuture<'_, Result<(), BlobError>> {
            self.puts.lock().unwrap().push(key.to_owned());
            Box::pin(async { Ok(()) })
        }
        fn put_stream(
            &self,
            _: &str,
        ) -> Result<Box<dyn fleetdesk_kernel::blob::BlobWriter>, BlobError> {
            Err(BlobError::Backend("avatars are not streamed".into()))
        }
        fn get(&self, key: &str) -> BoxFuture<'_, Result<bytes::Bytes, BlobError>> {
            let key = key.to_owned();
            Box::pin(async move { Err(BlobError::NotFound(key)) })
        }
        fn get_range(
            &self,
            key: &str,
            _: std::ops::Range<u64>,
        ) -> BoxFuture<'_, Result<bytes::Bytes, BlobError>> {
            self.get(key)
        }
        fn delete(&self, _: &str) -> BoxFuture<'_, Result<(), BlobError>> {
            Box::pin(async { Ok(()) })
        }
    }

    fn agent() -> AgentRef {
        AgentRef {
            agent_id: Uuid::nil(),
            workspace_id: Uuid::nil(),
            organization_id: Uuid::nil(),
        }
    }

    fn account(avatar: Option<&str>) -> ResolvedAccount {
        ResolvedAccount {
            slot_id: Uuid::nil(),
            code: "TW-T001".into(),
            platform: Platform::Threads,
            timezone: "Asia/Taipei".into(),
            generation_id: Some(Uuid::nil()),
            generation: Some(1),
            state: Some(AccountState::Active),
            avatar_sha256: avatar.map(str::to_owned),
        }
    }

    fn service() -> (AccountsService, Arc<FakeRepo>, Arc<FakeBlobs>) {
        let repo = Arc::new(FakeRepo::default());
        let blobs = Arc::new(FakeBlobs::default());
        (
            AccountsService::new(repo.clone(), blobs.clone()),
            repo,
            blobs,
        )
    }

    fn request(state: ReportedState, reason: Option<&str>, at: &str) -> StateReportRequest {
        StateReportRequest {
            code: CodeRef {
                code: AccountCode::parse("TW-T001").unwrap(),
                platform: None,
            },
            state,
            reason: reason.map(str::to_owned),
            occurred_at: at.parse().unwrap(),
            origin: None,
        }
    }

    #[tokio::test]
    async fn a_ban_without_a_reason_is_refused_before_any_lookup() {
        let (svc, repo, _) = service();
        let err = svc
            .report_state(
                agent(),
                request(ReportedState::Banned, Some("  "), "2026-11-21 10:00"),
            )
            .await
            .unwrap_err();
        assert!(matches!(err, StateReportError::ReasonRequired("banned")));
        assert!(repo.changes.lock().unwrap().is_empty());
    }

    #[tokio::test]
    async fn market_local_times_are_read_in_the_accounts_zone() {
        let (svc, repo, _) = service();
        *repo.resolved.lock().unwrap() = Some(Ok(account(None)));
        svc.report_state(
            agent(),
            request(ReportedState::Paused, Some("limit"), "2026-11-21 10:00"),
        )
        .await
        .unwrap();
        let changes = repo.changes.lock().unwrap();
        assert_eq!(
            fleetdesk_kernel::format_utc(changes[0].occurred_at),
            "2026-11-21T02:00:00Z"
        );
    }

    #[tokio::test]
    async fn lookup_failures_and_bad_times_reach_the_caller() {
        let (svc, repo, _) = service();
        *repo.resolved.lock().unwrap() = Some(Err(LookupError::Ambiguous));
        let err = svc
            .report_state(
                agent(),
                request(ReportedState::Restored, None, "2026-11-21 10:00"),
            )
            .await
            .unwrap_err();
        assert!(matches!(
            err,
            StateReportError::Lookup(LookupError::Ambiguous)
        ));
        // 02:30 does not exist in New York on the day its clocks go forward.
        let mut new_york = account(None);
        new_york.timezone = "America/New_York".into();
        *repo.resolved.lock().unwrap() = Some(Ok(new_york));
        let err = svc
            .report_state(
                agent(),
                request(ReportedState::Restored, None, "2026-03-08 02:30"),
            )
            .await
            .unwrap_err();
        assert!(matches!(err, StateReportError::OccurredAt(_)));
        let mut dead = account(None);
        dead.generation_id = None;
        *repo.resolved.lock().unwrap() = Some(Ok(dead));
        let err = svc
            .report_state(
                agent(),
                request(ReportedState::Restored, None, "2026-11-21 10:00"),
            )
            .await
            .unwrap_err();
        assert!(matches!(err, StateReportError::NoLiveAccount));
    }

    #[tokio::test]
    async fn the_same_avatar_is_not_stored_again() {
        use base64::Engine;
        let png = crate::models::avatar::tests::PNG_1X1;
        let data = base64::engine::general_purpose::STANDARD.encode(png);
        let sha = AvatarImage::decode(&data).unwrap().sha256;
        let code = CodeRef {
            code: AccountCode::parse("TW-T001").unwrap(),
            platform: None,
        };

        let (svc, repo, blobs) = service();
        *repo.resolved.lock().unwrap() = Some(Ok(account(Some(&sha))));
        svc.set_avatar(agent(), code.clone(), &data).await.unwrap();
        assert!(
            blobs.puts.lock().unwrap().is_empty(),
            "an unchanged avatar is not written to storage"
        );

        *repo.resolved.lock().unwrap() = Some(Ok(account(Some("other"))));
        svc.set_avatar(agent(), code, &data).await.unwrap();
        assert_eq!(
            blobs.puts.lock().unwrap().as_slice(),
            [format!("avatars/{sha}.png")]
        );
    }

    #[tokio::test]
    async fn only_warming_or_active_accounts_can_be_added() {
        let (svc, _, _) = service();
        let new = NewAccount {
            persona_id: Uuid::nil(),
            platform: Platform::Threads,
            code: AccountCode::parse("TW-T009").unwrap(),
            market: fleetdesk_kernel::Market::DEFAULT,
            handle: None,
            state: AccountState::Banned,
            onboarded_at: None,
        };
        assert!(matches!(
            svc.add(agent(), new).await,
            Err(AddAccountError::InitialState)
        ));
    }
}
