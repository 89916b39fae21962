//! The agent's day (`work_today`): an application use case, because it reads four areas (the
//! accounts with their day counts, drafts to redo, stocked posts to unschedule, the last report)
//! and the accounts crate, which owns the accounts part, sits below drafts and inventory: it
//! cannot own the day without a dependency cycle. The reads are independent, so they run at
//! once, each on its own pooled connection: the day costs its slowest read.
//!
//! A part of the day is a field of [`Day`] and one more future in [`DayService::today`]'s
//! `try_join!` (task cards joined this way, as decision follow-ups did).

use fleetdesk_accounts::models::work::WorkAccounts;
use fleetdesk_accounts::service::AccountsService;
use fleetdesk_decisions::ports::{DecisionsRepo, FollowUp};
use fleetdesk_drafts::ports::RedoDraft;
use fleetdesk_drafts::service::DraftsService;
use fleetdesk_inventory::UnscheduleItem;
use fleetdesk_inventory::service::InventoryService;
use fleetdesk_kernel::AgentRef;
use fleetdesk_posts::ports::LifecycleRepo;
use fleetdesk_posts::post::PostStatus;
use fleetdesk_tasks::ports::{TaskRecord, TasksRepo};
use jiff::Timestamp;
use jiff::civil::Date;
use std::sync::Arc;

/// Drafts to redo listed in the day, oldest returned first; `list_redo` pages through all.
pub const REDO_IN_DAY: i64 = 200;
/// Stocked posts to unschedule listed in the day, oldest stocked first.
pub const UNSCHEDULE_IN_DAY: i64 = 200;
/// Open task cards listed in the day (and a heartbeat's answer), oldest first; `list_tasks`
/// pages through all.
pub const TASKS_IN_DAY: i64 = 200;

/// What an agent's day is made of, as the domain gives it.
#[derive(Debug, Clone)]
pub struct Day {
    /// The accounts part: market dates, targets, what is missing, inventory.
    pub accounts: WorkAccounts,
    /// Drafts waiting for a rewrite or sent back (at most [`REDO_IN_DAY`]).
    pub redo: Vec<RedoDraft>,
    /// Stocked posts still scheduled in the agent's tool (at most [`UNSCHEDULE_IN_DAY`]).
    pub unschedule: Vec<UnscheduleItem>,
    /// When the agent last reported posts.
    pub last_report_at: Option<Timestamp>,
    /// Open follow-ups of decisions on the agent's personas, oldest first.
    pub follow_ups: Vec<FollowUp>,
    /// The agent's open task cards (at most [`TASKS_IN_DAY`]), oldest first.
    pub tasks: Vec<TaskRecord>,
}

/// The use cases that span the domain services.
#[derive(Clone)]
pub struct DayService {
    accounts: AccountsService,
    drafts: DraftsService,
    inventory: InventoryService,
    posts: Arc<dyn LifecycleRepo>,
    decisions: Arc<dyn DecisionsRepo>,
    tasks: Arc<dyn TasksRepo>,
}

impl DayService {
    pub fn new(
        accounts: AccountsService,
        drafts: DraftsService,
        inventory: InventoryService,
        posts: Arc<dyn LifecycleRepo>,
        decisions: Arc<dyn DecisionsRepo>,
        tasks: Arc<dyn TasksRepo>,
    ) -> DayService {
        DayService {
            accounts,
            drafts,
            inventory,
            posts,
            decisions,
            tasks,
        }
    }

    /// The agent's day on `date` (default today in each market).
    pub async fn today(
        &self,
        agent: AgentRef,
        date: Option<Date>,
        now: Timestamp,
    ) -> anyhow::Result<Day> {
        let (accounts, redo, unschedule, last_report_at, follow_ups, tasks) = tokio::try_join!(
            self.accounts.work_accounts(agent, date, now),
            self.drafts.redo(
                agent,
                &[PostStatus::RewriteRequested, PostStatus::SentBack],
                None,
                REDO_IN_DAY,
            ),
            self.inventory.unschedule_list(agent, UNSCHEDULE_IN_DAY),
            self.posts.last_report_at(agent),
            self.decisions.follow_ups(agent),
            self.tasks.open_cards(agent, TASKS_IN_DAY),
        )?;
        Ok(Day {
            accounts,
            redo: redo.items,
            unschedule,
            last_report_at,
            follow_ups,
            tasks,
        })
    }
}
