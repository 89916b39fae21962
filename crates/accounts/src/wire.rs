//! The accounts part of the interface (feature `wire`): each operation's handle with its
//! description, and the request and response types the server parses and a client sends.
//! The agent's operations are in [`agent`].

use crate::models::state::StateMove;
use crate::ports::{
    AccountView, CodeRef, HeartbeatRecord, ResolvedAccount, StateOutcome, StoredAvatar,
};
use crate::{AccountState, ReportedState};
use fleetdesk_kernel::Platform;
use fleetdesk_kernel::wire::fields::{AgentBrief, CodePath, Text, Utc};
use fleetdesk_kernel::wire::relay::Origin;
use fleetdesk_kernel::wire::strings::{
    Base64Data, CodeInput, DateInput, HandleInput, MarketInput, RunIdInput, TimeInput,
    not_blank_pattern,
};
use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;
use serde_json::{Map, Value};
use std::sync::Arc;
use utoipa::ToSchema;
use uuid::Uuid;
use validator::Validate;

/// The account a `{code}` path names, with the `platform` that tells a legacy code's accounts
/// apart.
pub trait CodePathRef {
    fn code_ref(&self, platform: Option<Platform>) -> CodeRef;
}

impl CodePathRef for CodePath {
    fn code_ref(&self, platform: Option<Platform>) -> CodeRef {
        CodeRef {
            code: self.code.0.clone(),
            platform,
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Open task cards, as the day and a heartbeat list them

/// An open task card assigned to the agent or unassigned on its personas.
#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct TaskItem {
    pub id: Uuid,
    pub kind: String,
    pub title: String,
    pub status: String,
    /// In progress with no progress for over 2 hours.
    pub stale: bool,
    /// Past due_at.
    pub overdue: bool,
    /// Waiting for a person's confirmation for over 24 hours.
    pub confirm_overdue: bool,
}

// ---------------------------------------------------------------------------------------------
// GET /accounts

#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct AccountList {
    pub agent: AgentBrief,
    #[schema(value_type = Vec<Account>)]
    pub accounts: KeptJson,
}

impl AccountList {
    /// The accounts, read from the JSON as it was sent.
    pub fn read_accounts(&self) -> Result<Vec<Account>, serde_json::Error> {
        serde_json::from_str(self.accounts.0.get())
    }
}

/// JSON kept from an earlier answer, sent as it is.
#[derive(Debug, Clone)]
pub struct KeptJson(pub Arc<RawValue>);

impl Serialize for KeptJson {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        self.0.serialize(s)
    }
}

impl<'de> Deserialize<'de> for KeptJson {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        Box::<RawValue>::deserialize(d).map(|raw| KeptJson(raw.into()))
    }
}

#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct Account {
    pub code: String,
    pub legacy_code: Option<String>,
    pub platform: Platform,
    /// 2-letter market code.
    pub market: String,
    /// IANA zone of the market.
    pub timezone: String,
    /// Persona display name.
    pub persona: String,
    pub handle: Option<String>,
    /// Generation number of the live account; null when there is none.
    pub generation: Option<i32>,
    /// State of the live generation; null means no live account.
    pub state: Option<AccountState>,
    pub daily_target: i32,
    /// `agent` (the agent publishes with its own tool) or `fleetdesk`.
    pub publishing: String,
    pub slot_id: Uuid,
    pub account_id: Option<Uuid>,
}

impl From<AccountView> for Account {
    fn from(v: AccountView) -> Self {
        Account {
            code: v.code,
            legacy_code: v.legacy_code,
            platform: v.platform,
            market: v.market.to_string(),
            timezone: v.timezone,
            persona: v.persona,
            handle: v.handle,
            generation: v.generation,
            state: v.state,
            daily_target: v.daily_target,
            publishing: v.publishing,
            slot_id: v.slot_id,
            account_id: v.account_id,
        }
    }
}

// ---------------------------------------------------------------------------------------------
// POST /accounts

#[derive(Debug, Clone, Copy, Default, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum InitialState {
    #[default]
    Warming,
    Active,
}

impl From<InitialState> for AccountState {
    fn from(s: InitialState) -> AccountState {
        match s {
            InitialState::Warming => AccountState::Warming,
            InitialState::Active => AccountState::Active,
        }
    }
}

#[derive(Debug, Serialize, Deserialize, Validate, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct AddAccountBody {
    /// One of this agent's personas.
    pub persona_id: Uuid,
    pub platform: Platform,
    /// 1-40 characters, stored upper-cased.
    pub code: CodeInput,
    /// 2-letter market, default TW.
    pub market: Option<MarketInput>,
    pub handle: Option<HandleInput>,
    /// warming (default) or active.
    pub state: Option<InitialState>,
    /// `YYYY-MM-DD`.
    pub onboarded_at: Option<DateInput>,
}

#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct AddedAccount {
    pub slot_id: Uuid,
    pub account_id: Uuid,
    pub code: String,
    pub platform: Platform,
    pub market: String,
    pub created: bool,
}

impl AddedAccount {
    /// The account added, or found already there (`created` false).
    pub fn of(added: crate::ports::AddedAccount) -> AddedAccount {
        AddedAccount {
            slot_id: added.slot_id,
            account_id: added.account_id,
            code: added.code,
            platform: added.platform,
            market: added.market.to_string(),
            created: added.created,
        }
    }
}

// ---------------------------------------------------------------------------------------------
// POST /accounts/{code}/state

#[derive(Debug, Serialize, Deserialize, Validate, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct StateReportBody {
    pub state: ReportedState,
    /// What the platform said; required (and not only spaces) for banned, quarantined and
    /// paused.
    pub reason: Option<Text<0, 1000>>,
    /// When it happened: ISO with zone, or market-local `YYYY-MM-DD HH:MM[:SS]`.
    pub occurred_at: TimeInput,
    pub origin: Option<Origin>,
}

/// `reason` is required, and more than spaces, when the state is banned, quarantined or paused
/// (`AccountsService::report_state` checks the same).
pub fn state_report_rules() -> Value {
    let needs_reason: Vec<&str> = [
        ReportedState::Banned,
        ReportedState::Quarantined,
        ReportedState::Paused,
    ]
    .iter()
    .filter(|s| s.needs_reason())
    .map(|s| s.as_str())
    .collect();
    serde_json::json!({"allOf": [{
        "if": {"properties": {"state": {"enum": needs_reason}}, "required": ["state"]},
        "then": {
            "required": ["reason"],
            "properties": {"reason": {"type": "string", "pattern": not_blank_pattern()}},
        },
    }]})
}

#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct StateReportResult {
    pub code: String,
    pub platform: Platform,
    pub generation: Option<i32>,
    pub previous_state: Option<AccountState>,
    pub state: AccountState,
    /// `changed`, or `unchanged` when the account already had this state.
    pub result: String,
    /// The pending decision a ban opened: whether to open a new generation.
    pub decision: Option<DecisionBrief>,
    /// Not-yet-published posts moved to inventory by this change.
    pub stocked_posts: i64,
}

#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct DecisionBrief {
    pub id: Uuid,
    pub kind: String,
    pub status: String,
    pub question: String,
    pub options: Vec<String>,
}

impl StateReportResult {
    /// The answer to a state report: the account, the move and what it opened or stocked.
    pub fn of(account: ResolvedAccount, outcome: StateOutcome) -> StateReportResult {
        let (previous, result) = match outcome.movement {
            StateMove::Unchanged => (Some(outcome.state), "unchanged"),
            StateMove::Changed { from, .. } => (Some(from), "changed"),
        };
        StateReportResult {
            code: account.code,
            platform: account.platform,
            generation: account.generation,
            previous_state: previous,
            state: outcome.state,
            result: result.into(),
            decision: outcome.decision.map(|d| DecisionBrief {
                id: d.id,
                kind: d.kind,
                status: d.status,
                question: d.question,
                options: d.options,
            }),
            stocked_posts: outcome.stocked_posts,
        }
    }
}

// ---------------------------------------------------------------------------------------------
// POST /accounts/{code}/avatar

#[derive(Debug, Serialize, Deserialize, Validate, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct AvatarBody {
    /// Base64 of the image, optional `data:` prefix; JPEG, PNG or WebP up to 5 MB.
    pub data: Base64Data,
}

#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct AvatarResult {
    pub avatar: Avatar,
    /// False when the same image was sent again.
    pub changed: bool,
}

#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct Avatar {
    pub code: String,
    pub platform: Platform,
    pub generation: Option<i32>,
    pub mime_type: String,
    pub bytes: i64,
    pub width: Option<i32>,
    pub height: Option<i32>,
    pub sha256: String,
    pub updated_at: Utc,
}

impl Avatar {
    /// The avatar stored for the account's live generation.
    pub fn of(account: ResolvedAccount, stored: StoredAvatar) -> Avatar {
        Avatar {
            code: account.code,
            platform: account.platform,
            generation: account.generation,
            mime_type: stored.mime_type,
            bytes: stored.bytes,
            width: stored.width,
            height: stored.height,
            sha256: stored.sha256,
            updated_at: Utc(stored.updated_at),
        }
    }
}

// ---------------------------------------------------------------------------------------------
// POST /heartbeat

#[derive(Debug, Serialize, Deserialize, Validate, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct HeartbeatBody {
    /// 1-120 characters, not only spaces; the same run_id updates the same record.
    pub run_id: RunIdInput,
    /// Up to 2000 characters; never keys or credentials.
    pub summary: Option<Text<0, 2000>>,
    /// Counters of the round: at most 100, each named by 1-64 characters, non-negative
    /// integers.
    #[schema(schema_with = counts_schema)]
    pub counts: Option<Map<String, Value>>,
}

/// The counters of a heartbeat, as `HeartbeatInput::new` checks them.
fn counts_schema() -> utoipa::openapi::RefOr<utoipa::openapi::Schema> {
    serde_json::from_value(serde_json::json!({
        "type": ["object", "null"],
        "maxProperties": crate::models::heartbeat::MAX_COUNTERS,
        "propertyNames": {"type": "string", "minLength": 1, "maxLength": 64, "pattern": "^[^\\x00]*$"},
        "additionalProperties": {"type": "integer", "minimum": 0, "maximum": u64::MAX},
        "description": "Counters of the round: at most 100, each named by 1-64 characters, non-negative integers.",
    }))
    .unwrap_or_default()
}

#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct HeartbeatResult {
    pub run: HeartbeatRun,
    /// The agent's open task cards (assigned to it, or unassigned on its personas), oldest
    /// first, at most 200.
    pub tasks: Vec<TaskItem>,
}

#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct HeartbeatRun {
    pub id: Uuid,
    pub run_id: String,
    pub recorded_at: Utc,
}

impl HeartbeatRun {
    /// The round's record as stored.
    pub fn of(run: HeartbeatRecord) -> HeartbeatRun {
        HeartbeatRun {
            id: run.id,
            run_id: run.run_id,
            recorded_at: Utc(run.recorded_at),
        }
    }
}

/// The agent's account operations (`/api/agent/v1`).
pub mod agent {
    use super::*;
    use fleetdesk_kernel::access::Scope;
    use fleetdesk_kernel::op::{
        HttpMethod::{Get, Post},
        Nothing, OpSpec,
    };
    use fleetdesk_kernel::wire::fields::PlatformQuery;

    fleetdesk_kernel::operations! {
        /// The accounts under your personas.
        pub ListAccounts(Nothing, Nothing, Nothing) -> AccountList =
            OpSpec::agent(Get, "/accounts", Scope::AccountsRead)
                .tool("list_accounts")
                .summary("The accounts under the personas assigned to this agent")
                .description(
                    "Each account with its live generation's state (null when there is none).",
                );

        /// Add an account under one of your personas.
        pub AddAccount(Nothing, Nothing, AddAccountBody) -> AddedAccount =
            OpSpec::agent(Post, "/accounts", Scope::AccountsWrite)
                .tool("add_account")
                .idempotent()
                .created()
                .also_answers(&[404])
                .summary(
                    "Add an account code and its first generation under one of the agent's personas",
                )
                .description(
                    "201 when created; the same persona and code again gives 200 with created false; \
                    a code owned by another persona is 422 rejected.",
                );

        /// Report what the platform did to an account.
        pub ReportAccountState(CodePath, PlatformQuery, StateReportBody) -> StateReportResult =
            OpSpec::agent(Post, "/accounts/{code}/state", Scope::AccountsWrite)
                .tool("report_account_state")
                .idempotent()
                .summary("Report what the platform did to an account: banned, quarantined, paused, restored, warming")
                .description("A ban opens a pending decision asking a person whether to open a new generation; \
                    it opens none by itself. Leaving rotation moves not-yet-published posts to inventory. \
                    Reporting the state the account already has answers `result: unchanged`.");

        /// Store an account's avatar.
        pub SetAccountAvatar(CodePath, PlatformQuery, AvatarBody) -> AvatarResult =
            OpSpec::agent(Post, "/accounts/{code}/avatar", Scope::AccountsWrite)
                .tool("set_account_avatar")
                .idempotency_key_only()
                .max_body(8 * 1024 * 1024)
                .summary("Store the account's current platform avatar")
                .description("Base64 (optional data: prefix) of a JPEG, PNG or WebP image up to 5 MB, the type judged \
                    from the bytes. `changed` is false when the same image is sent again. Send once on connecting \
                    or after a change, not every round.");

        /// Record the end of a round.
        pub Heartbeat(Nothing, Nothing, HeartbeatBody) -> HeartbeatResult =
            OpSpec::agent(Post, "/heartbeat", Scope::RunsWrite)
                .tool("heartbeat")
                .idempotency_key_only()
                .summary("Record the end of a round, even an empty one")
                .description("The same run_id updates the same record: the summary is replaced and the counts merged.");
    }
}
