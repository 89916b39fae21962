//! What the accounts domain needs from the outside: one method per atomic use case.
//! Errors are infrastructure failures (`anyhow::Error`); expected outcomes are values.

use crate::models::avatar::AvatarImage;
use crate::models::heartbeat::HeartbeatInput;
use crate::models::state::{AccountState, ReportedState, StateMove};
use crate::models::work::{DayCount, RotationAccount};
use fleetdesk_kernel::{AccountCode, AgentRef, BoxFuture, Market, Platform};
use jiff::Timestamp;
use jiff::civil::Date;
use serde_json::Value;
use uuid::Uuid;

/// A `{code}` path parameter with its optional `platform` query.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CodeRef {
    pub code: AccountCode,
    pub platform: Option<Platform>,
}

/// Why a `{code}` did not resolve to one of the caller's accounts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LookupError {
    /// No account in the caller's workspace has this current or legacy code.
    NotFound,
    /// A legacy code repeated across platforms: `platform` is needed.
    Ambiguous,
    /// The account exists in the workspace but under another agent's persona.
    NotYours,
}

/// An account as `GET /accounts` shows it.
#[derive(Debug, Clone, PartialEq)]
pub struct AccountView {
    pub slot_id: Uuid,
    pub account_id: Option<Uuid>,
    pub code: String,
    pub legacy_code: Option<String>,
    pub platform: Platform,
    pub market: Market,
    pub timezone: String,
    pub persona: String,
    pub handle: Option<String>,
    pub generation: Option<i32>,
    pub state: Option<AccountState>,
    pub daily_target: i32,
    pub publishing: String,
}

/// A resolved `{code}`: the slot and its live generation, if any.
#[derive(Debug, Clone, PartialEq)]
pub struct ResolvedAccount {
    pub slot_id: Uuid,
    pub code: String,
    pub platform: Platform,
    pub timezone: String,
    pub generation_id: Option<Uuid>,
    pub generation: Option<i32>,
    pub state: Option<AccountState>,
    pub avatar_sha256: Option<String>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct NewAccount {
    pub persona_id: Uuid,
    pub platform: Platform,
    pub code: AccountCode,
    pub market: Market,
    pub handle: Option<String>,
    pub state: AccountState,
    pub onboarded_at: Option<Date>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct AddedAccount {
    pub slot_id: Uuid,
    pub account_id: Uuid,
    pub code: String,
    pub platform: Platform,
    pub market: Market,
    pub created: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AddRefusal {
    /// No such persona in the caller's workspace.
    PersonaNotFound,
    /// The persona belongs to another agent.
    PersonaNotYours,
    /// The code is already owned by another persona.
    CodeTaken,
}

#[derive(Debug, Clone, PartialEq)]
pub struct StateChange {
    pub generation_id: Uuid,
    pub report: ReportedState,
    pub reason: Option<String>,
    pub occurred_at: Timestamp,
    pub origin: Option<Value>,
}

/// A pending decision opened by a state report.
#[derive(Debug, Clone, PartialEq)]
pub struct OpenedDecision {
    pub id: Uuid,
    pub kind: String,
    pub status: String,
    pub question: String,
    pub options: Vec<String>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct StateOutcome {
    pub movement: StateMove,
    pub state: AccountState,
    pub decision: Option<OpenedDecision>,
    /// Not-yet-published posts moved to inventory by this change.
    pub stocked_posts: i64,
}

#[derive(Debug, Clone, PartialEq)]
pub struct StoredAvatar {
    pub sha256: String,
    pub mime_type: String,
    pub bytes: i64,
    pub width: Option<i32>,
    pub height: Option<i32>,
    pub updated_at: Timestamp,
}

#[derive(Debug, Clone, PartialEq)]
pub struct HeartbeatRecord {
    pub id: Uuid,
    pub run_id: String,
    pub recorded_at: Timestamp,
}

pub trait AccountsRepo: Send + Sync + 'static {
    fn list_accounts(&self, agent: AgentRef) -> BoxFuture<'_, anyhow::Result<Vec<AccountView>>>;

    fn resolve<'a>(
        &'a self,
        agent: AgentRef,
        code: &'a CodeRef,
    ) -> BoxFuture<'a, anyhow::Result<Result<ResolvedAccount, LookupError>>>;

    fn add_account<'a>(
        &'a self,
        agent: AgentRef,
        account: &'a NewAccount,
    ) -> BoxFuture<'a, anyhow::Result<Result<AddedAccount, AddRefusal>>>;

    /// Applies a state report to a live generation in one transaction: the move of the
    /// account state table, the ban decision, and the stocking of posts that comes with it.
    fn change_state<'a>(
        &'a self,
        agent: AgentRef,
        change: &'a StateChange,
    ) -> BoxFuture<'a, anyhow::Result<StateOutcome>>;

    /// Records the avatar of a generation; answers whether it differed from the stored one.
    fn set_avatar<'a>(
        &'a self,
        generation_id: Uuid,
        image: &'a AvatarImage,
        storage_key: &'a str,
    ) -> BoxFuture<'a, anyhow::Result<(StoredAvatar, bool)>>;

    fn record_heartbeat<'a>(
        &'a self,
        agent: AgentRef,
        input: &'a HeartbeatInput,
    ) -> BoxFuture<'a, anyhow::Result<HeartbeatRecord>>;

    /// The agent's accounts with their states, targets and inventory counts.
    fn rotation(&self, agent: AgentRef) -> BoxFuture<'_, anyhow::Result<Vec<RotationAccount>>>;

    /// What each of the agent's accounts holds on the given market dates (dates apply to the
    /// accounts of their market, read in each account's zone). One statement whatever the
    /// number of accounts.
    fn day_counts<'a>(
        &'a self,
        agent: AgentRef,
        dates: &'a [(Market, Date)],
    ) -> BoxFuture<'a, anyhow::Result<Vec<(Uuid, Date, DayCount)>>>;
}
