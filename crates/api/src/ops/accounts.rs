//! Agent API: work and accounts. The account operations and their types are
//! `fleetdesk_accounts::wire`; the day (`GET /work/today`) is described here.

use super::common::{DateInput, maybe_lookup, naming};
use crate::ctx::Ctx;
use crate::error::ApiError;
use crate::fields::{AgentBrief, Utc};
use crate::input::{Nothing, Req};
use crate::op::{ErasedOp, HttpMethod, OpSpec, Reply, bind};
use fleetdesk_accounts::models::work::{MarketDate, MissingRow, NotInRotation};
use fleetdesk_accounts::ports::NewAccount;
use fleetdesk_accounts::service::{
    AddAccountError, AvatarSetError, StateReportError, StateReportRequest,
};
use fleetdesk_accounts::wire::{
    AccountList, AddAccountBody, AddedAccount, Avatar, AvatarBody, AvatarResult, CodePathRef,
    HeartbeatBody, HeartbeatResult, HeartbeatRun, KeptJson, StateReportBody, StateReportResult,
    TaskItem, agent,
};
use fleetdesk_accounts::{AvatarError, HeartbeatInput};
use fleetdesk_kernel::wire::fields::{CodePath, PlatformQuery};
use fleetdesk_kernel::{ErrorCode, Market, Platform};
use fleetdesk_tasks::ports::TaskRecord;
use fleetdesk_tenancy::{AgentCaller, Scope};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use serde_json::value::RawValue;
use std::sync::Arc;
use utoipa::ToSchema;
use uuid::Uuid;
use validator::Validate;

pub use fleetdesk_accounts::wire::{Account, state_report_rules};

pub fn register(all: &mut Vec<Box<dyn ErasedOp>>) {
    all.push(bind::<GetWorkToday, _, _, _>(work_today));
    all.push(bind::<agent::ListAccounts, _, _, _>(list_accounts));
    all.push(bind::<agent::AddAccount, _, _, _>(add_account));
    all.push(bind::<agent::ReportAccountState, _, _, _>(
        report_account_state,
    ));
    all.push(bind::<agent::SetAccountAvatar, _, _, _>(set_account_avatar));
    all.push(bind::<agent::Heartbeat, _, _, _>(heartbeat));
}

// ---------------------------------------------------------------------------------------------
// Refusals: how the API answers each refusal of the accounts

impl From<AddAccountError> for ApiError {
    fn from(e: AddAccountError) -> ApiError {
        match e {
            AddAccountError::Refused(r) => {
                use fleetdesk_accounts::ports::AddRefusal::*;
                match r {
                    PersonaNotFound => ApiError::not_found("no such persona in this workspace")
                        .with_field("persona_id"),
                    PersonaNotYours => {
                        ApiError::forbidden("the persona is assigned to another agent")
                            .with_field("persona_id")
                    }
                    CodeTaken => {
                        ApiError::rejected("this code is already owned by another persona")
                            .with_field("code")
                    }
                }
            }
            AddAccountError::InitialState => {
                ApiError::invalid("state", "must be warming or active")
            }
            AddAccountError::Unexpected(e) => e.into(),
        }
    }
}

impl From<StateReportError> for ApiError {
    fn from(e: StateReportError) -> ApiError {
        match e {
            StateReportError::Lookup(l) => l.into(),
            StateReportError::ReasonRequired(s) => {
                ApiError::invalid("reason", format!("is required when the state is {s}"))
            }
            StateReportError::OccurredAt(t) => ApiError::invalid("occurred_at", t),
            StateReportError::NoLiveAccount => ApiError::rejected(
                "the account has no live generation; a person must open one first",
            ),
            StateReportError::Unexpected(e) => e.into(),
        }
    }
}

maybe_lookup!(StateReportError, StateReportError::Lookup(l) => l);

impl From<AvatarSetError> for ApiError {
    fn from(e: AvatarSetError) -> ApiError {
        match e {
            AvatarSetError::Lookup(l) => l.into(),
            AvatarSetError::Image(AvatarError::TooLarge) => ApiError::new(
                ErrorCode::PayloadTooLarge,
                "data: the image is larger than 5 MB",
            )
            .with_field("data"),
            // Well-formed base64 of something else: the rule of the field, not its shape.
            AvatarSetError::Image(i @ AvatarError::NotAnImage) => {
                ApiError::rejected(format!("data: {i}")).with_field("data")
            }
            AvatarSetError::Image(i) => ApiError::invalid("data", i),
            AvatarSetError::NoLiveAccount => {
                ApiError::rejected("the account has no live generation")
            }
            AvatarSetError::Unexpected(e) => e.into(),
        }
    }
}

maybe_lookup!(AvatarSetError, AvatarSetError::Lookup(l) => l);

// ---------------------------------------------------------------------------------------------
// GET /work/today

fleetdesk_kernel::operations! {
    /// The agent's day, bound to [`work_today`]. It lists the agent's follow-ups with the
    /// decisions' persona and account (`super::decisions`), so it is declared here, not in
    /// `fleetdesk_accounts::wire`.
    pub GetWorkToday(Nothing, WorkTodayQuery, Nothing) -> WorkToday =
        OpSpec::agent(HttpMethod::Get, "/work/today", Scope::AccountsRead)
            .tool("work_today")
            .summary("The agent's day: what is missing per account and market date, and what to do first")
            .description("Call once at the start of a round. Only active accounts get missing counts; \
                posts count only once they were reported. `unschedule_stocked` is the highest-priority work.");
}

#[derive(Debug, Deserialize, Validate, ToSchema)]
pub struct WorkTodayQuery {
    /// The market date to look at (`YYYY-MM-DD`); default today in each market.
    pub date: Option<DateInput>,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct WorkToday {
    pub agent: AgentBrief,
    pub dates: Vec<MarketDate>,
    /// When this agent last reported posts; null before its first report.
    pub last_report_at: Option<Utc>,
    pub summary: WorkSummary,
    pub missing: Vec<MissingRow>,
    pub not_in_rotation: Vec<NotInRotation>,
    pub redo: Vec<DayRedoItem>,
    /// The agent's open task cards (assigned to it, or unassigned on its personas), oldest
    /// first, at most 200.
    pub tasks: Vec<TaskItem>,
    pub follow_ups: Vec<FollowUpItem>,
    pub unschedule_stocked: Vec<UnscheduleItem>,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct WorkSummary {
    /// Posts wanted today by active accounts: the sum of their daily targets.
    pub expected: i64,
    /// Of those, posts reported published or scheduled (each account up to its target).
    pub covered: i64,
    pub missing_accounts: i64,
    pub missing_posts: i64,
    pub redo: i64,
    /// The task cards listed in `tasks`: at most 200, not every open card beyond that.
    pub tasks: i64,
    pub follow_ups: i64,
    pub unschedule_stocked: i64,
    /// Stocked posts across the agent's accounts.
    pub inventory: i64,
}

/// A draft waiting for a rewrite or sent back.
#[derive(Debug, Serialize, ToSchema)]
pub struct DayRedoItem {
    pub id: Uuid,
    /// `rewrite_requested` or `sent_back`.
    pub kind: String,
    pub code: String,
    pub platform: Platform,
    pub instruction: Option<String>,
    pub requested_at: Utc,
    pub excerpt: String,
}

/// The agent's open cards with their flags at `now`.
fn task_items(cards: &[TaskRecord], now: jiff::Timestamp) -> Vec<TaskItem> {
    cards
        .iter()
        .map(|c| {
            let flags = c.flags(now);
            TaskItem {
                id: c.id,
                kind: c.kind.as_str().to_owned(),
                title: c.title.clone(),
                status: c.status.as_str().to_owned(),
                stale: flags.stale,
                overdue: flags.overdue,
                confirm_overdue: flags.confirm_overdue,
            }
        })
        .collect()
}

/// A decision the agent must follow up, with its linked task card.
#[derive(Debug, Serialize, ToSchema)]
pub struct FollowUpItem {
    pub id: Uuid,
    /// The linked task card.
    pub task_id: Option<Uuid>,
    /// change_avatar, change_bio or delete_post.
    pub kind: String,
    pub title: String,
    pub persona: Option<super::decisions::DecisionPersona>,
    /// The persona's account (the post's, for delete_post).
    pub account: Option<super::decisions::DecisionAccount>,
    /// What to do; report it with complete_issue.
    pub instruction: Option<String>,
}

/// A stocked post still scheduled in the agent's own publishing tool: remove it there first.
#[derive(Debug, Serialize, ToSchema)]
pub struct UnscheduleItem {
    pub id: Uuid,
    pub code: String,
    pub legacy_code: Option<String>,
    pub platform: Platform,
    pub scheduled_for: Option<Utc>,
    pub scheduler_ref: Option<String>,
    pub external_id: Option<String>,
    pub stocked_at: Utc,
    pub reason: Option<String>,
    pub excerpt: String,
    pub instruction: String,
}

/// The start of a body, for lists: at most 120 characters.
fn excerpt(body: &str) -> String {
    let mut chars = body.chars();
    let head: String = chars.by_ref().take(120).collect();
    if chars.next().is_some() {
        format!("{head}…")
    } else {
        head
    }
}

async fn work_today(
    ctx: Ctx,
    agent: AgentCaller,
    req: Req<Nothing, WorkTodayQuery, Nothing>,
) -> Result<Reply<WorkToday>, ApiError> {
    let date = req.query.date.as_ref().map(|d| d.0);
    let now = jiff::Timestamp::now();
    let day = ctx.day.today(agent.agent_ref(), date, now).await?;
    let tasks = task_items(&day.tasks, now);
    let w = day.accounts;
    let redo: Vec<DayRedoItem> = day
        .redo
        .into_iter()
        .map(|d| DayRedoItem {
            id: d.id,
            kind: d.status.as_str().to_owned(),
            code: d.code,
            platform: d.platform,
            instruction: d.instruction,
            requested_at: Utc(d.returned_at),
            excerpt: excerpt(&d.body),
        })
        .collect();
    let follow_ups: Vec<FollowUpItem> = day
        .follow_ups
        .into_iter()
        .map(|f| FollowUpItem {
            id: f.id,
            task_id: f.task_id,
            kind: f.kind.as_str().to_owned(),
            title: f.title,
            persona: f
                .persona
                .map(|(id, name)| super::decisions::DecisionPersona { id, name }),
            account: f
                .account
                .map(|(code, platform)| super::decisions::DecisionAccount { code, platform }),
            instruction: f.instruction,
        })
        .collect();
    let unschedule_stocked: Vec<UnscheduleItem> = day
        .unschedule
        .into_iter()
        .map(|u| UnscheduleItem {
            instruction: format!(
                "Remove this post from your publishing tool{}, then call confirm_unscheduled (or \
                 report it cancelled).",
                u.scheduler_ref
                    .as_deref()
                    .map(|r| format!(" (its id there: {r})"))
                    .unwrap_or_default()
            ),
            id: u.id,
            code: u.code,
            legacy_code: u.legacy_code,
            platform: u.platform,
            scheduled_for: u.scheduled_for.map(Utc),
            scheduler_ref: u.scheduler_ref,
            external_id: u.external_id,
            stocked_at: Utc(u.stocked_at),
            reason: u.reason,
            excerpt: excerpt(&u.body),
        })
        .collect();
    Ok(Reply::ok(WorkToday {
        agent: (&agent).into(),
        dates: w.dates,
        last_report_at: day.last_report_at.map(Utc),
        summary: WorkSummary {
            expected: w.expected,
            covered: w.covered,
            missing_accounts: w.missing_accounts,
            missing_posts: w.missing_posts,
            redo: redo.len() as i64,
            tasks: tasks.len() as i64,
            follow_ups: follow_ups.len() as i64,
            unschedule_stocked: unschedule_stocked.len() as i64,
            inventory: w.inventory,
        },
        missing: w.missing,
        not_in_rotation: w.not_in_rotation,
        redo,
        tasks,
        follow_ups,
        unschedule_stocked,
    }))
}

// ---------------------------------------------------------------------------------------------
// GET /accounts

/// How much of the agents' account lists an instance keeps serialized: about 2,000 lists of
/// 50 accounts (16 KB each).
pub const KEPT_LISTS_BYTES: usize = 32 << 20;

/// How much of the agents' open task cards an instance keeps, as `cards_size` counts them.
pub const KEPT_CARDS_BYTES: usize = 16 << 20;

/// The memory a list of cards holds, near enough for a budget: the records and their texts.
fn cards_size(cards: &[TaskRecord]) -> usize {
    cards
        .iter()
        .map(|c| {
            std::mem::size_of::<TaskRecord>()
                + c.title.len()
                + c.detail.as_ref().map_or(0, String::len)
                + c.notes.to_string().len()
                + c.evidence.to_string().len()
        })
        .sum()
}

async fn list_accounts(
    ctx: Ctx,
    agent: AgentCaller,
    _req: Req<Nothing, Nothing, Nothing>,
) -> Result<Reply<AccountList>, ApiError> {
    // The list as serialized for this agent at the revision its key was read with, or later
    // (see `Revisioned`); otherwise read and serialized now, and kept.
    let revision = agent.accounts_revision;
    let accounts = match ctx.account_lists.get(&agent.agent_id, revision) {
        Some(json) => json,
        None => {
            let views = ctx.accounts.list_accounts(agent.agent_ref()).await?;
            let list: Vec<Account> = views.into_iter().map(Account::from).collect();
            let json: Arc<RawValue> = serde_json::value::to_raw_value(&list)
                .map_err(|e| ApiError::internal(e.into()))?
                .into();
            let size = json.get().len();
            ctx.account_lists
                .put(agent.agent_id, revision, json.clone(), size);
            json
        }
    };
    Ok(Reply::ok(AccountList {
        agent: (&agent).into(),
        accounts: KeptJson(accounts),
    }))
}

// ---------------------------------------------------------------------------------------------
// POST /accounts

async fn add_account(
    ctx: Ctx,
    agent: AgentCaller,
    req: Req<Nothing, Nothing, AddAccountBody>,
) -> Result<Reply<AddedAccount>, ApiError> {
    let b = req.body;
    let code = b.code.0;
    let market = b.market.map_or(Market::DEFAULT, |m| m.0);
    let onboarded_at = b.onboarded_at.map(|d| d.0);
    let state = b.state.unwrap_or_default().into();
    let new = NewAccount {
        persona_id: b.persona_id,
        platform: b.platform,
        code,
        market,
        handle: b.handle.and_then(|h| h.0),
        state,
        onboarded_at,
    };
    let added = ctx.accounts.add(agent.agent_ref(), new).await?;
    let body = AddedAccount::of(added);
    Ok(Reply::created_if(body.created, body))
}

// ---------------------------------------------------------------------------------------------
// POST /accounts/{code}/state

async fn report_account_state(
    ctx: Ctx,
    agent: AgentCaller,
    req: Req<CodePath, PlatformQuery, StateReportBody>,
) -> Result<Reply<StateReportResult>, ApiError> {
    let code = req.path.code_ref(req.query.platform);
    let b = req.body;
    let origin = b
        .origin
        .map(|o| serde_json::to_value(o).unwrap_or(Value::Null));
    let request = StateReportRequest {
        code: code.clone(),
        state: b.state,
        reason: b.reason.map(String::from),
        occurred_at: b.occurred_at.0,
        origin,
    };
    let (account, outcome) = ctx
        .accounts
        .report_state(agent.agent_ref(), request)
        .await
        .map_err(naming(code.code.as_str()))?;
    Ok(Reply::ok(StateReportResult::of(account, outcome)))
}

// ---------------------------------------------------------------------------------------------
// POST /accounts/{code}/avatar

async fn set_account_avatar(
    ctx: Ctx,
    agent: AgentCaller,
    req: Req<CodePath, PlatformQuery, AvatarBody>,
) -> Result<Reply<AvatarResult>, ApiError> {
    let code = req.path.code_ref(req.query.platform);
    let (account, stored, changed) = ctx
        .accounts
        .set_avatar(agent.agent_ref(), code.clone(), &req.body.data.0)
        .await
        .map_err(naming(code.code.as_str()))?;
    Ok(Reply::ok(AvatarResult {
        avatar: Avatar::of(account, stored),
        changed,
    }))
}

// ---------------------------------------------------------------------------------------------
// POST /heartbeat

async fn heartbeat(
    ctx: Ctx,
    agent: AgentCaller,
    req: Req<Nothing, Nothing, HeartbeatBody>,
) -> Result<Reply<HeartbeatResult>, ApiError> {
    let b = req.body;
    let input = HeartbeatInput::new(&b.run_id.0, b.summary.map(String::from), b.counts)
        .map_err(|e| ApiError::invalid(e.field(), e))?;
    // The open cards as kept at the revision the key was read with, or later (see
    // `Revisioned`). Otherwise the round's record and the cards are read at once, each on its
    // own pooled connection, so listing the cards adds a statement but no wait.
    let revision = agent.tasks_revision;
    let record = ctx.accounts.record_heartbeat(agent.agent_ref(), &input);
    let (run, cards) = match ctx.open_cards.get(&agent.agent_id, revision) {
        Some(cards) => (record.await?, cards),
        None => {
            let (run, cards) = tokio::try_join!(
                record,
                ctx.tasks
                    .open_cards(agent.agent_ref(), crate::day::TASKS_IN_DAY),
            )?;
            let cards: Arc<[TaskRecord]> = cards.into();
            ctx.open_cards
                .put(agent.agent_id, revision, cards.clone(), cards_size(&cards));
            (run, cards)
        }
    };
    Ok(Reply::ok(HeartbeatResult {
        run: HeartbeatRun::of(run),
        tasks: task_items(&cards, jiff::Timestamp::now()),
    }))
}
