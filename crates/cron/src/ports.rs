//! The port the PostgreSQL adapter implements: each method is one use case in one
//! transaction.

use crate::job::{Job, JobInvalid};
use crate::run::RawRun;
use fleetdesk_kernel::{AgentRef, BoxFuture};
use serde::{Deserialize, Serialize};

/// The answer to `report_cron_jobs`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct JobsOutcome {
    /// Jobs not reported before by this agent.
    pub inserted: i64,
    /// Jobs whose fields changed.
    pub updated: i64,
    /// Jobs reported again as they were.
    pub unchanged: i64,
    /// Items not stored, each with its reason.
    pub invalid: Vec<JobInvalid>,
}

/// One run not stored, with why.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct RunRefusal {
    /// The item's position in `runs` (from 0).
    pub index: usize,
    pub job_id: String,
    /// The run_id as given (null when absent).
    pub run_id: Option<String>,
    pub field: String,
    pub reason: String,
}

impl RunRefusal {
    /// The answer to the item at `index` that could not be read.
    pub fn unreadable(index: usize, u: &crate::job::Unreadable) -> RunRefusal {
        RunRefusal {
            index,
            job_id: u.job_id.clone(),
            run_id: u.run_id.clone(),
            field: u.field.clone(),
            reason: u.reason.clone(),
        }
    }
}

/// The answer to `report_cron_run`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct RunsOutcome {
    /// New runs.
    pub inserted: i64,
    /// Runs already stored under the same run_id whose report changed them (a `running`
    /// run's result, a longer log).
    pub updated: i64,
    /// Runs resent as they are stored, and a late `running` for a run that already has its
    /// result (the result is kept).
    pub skipped: i64,
    /// Items breaking a rule other than time format.
    pub invalid: Vec<RunRefusal>,
    /// job_ids this agent never reported with report_cron_jobs (their runs are not stored).
    pub unknown_jobs: Vec<String>,
    /// Items whose started_at or finished_at cannot be read.
    pub refused: Vec<RunRefusal>,
}

pub trait CronRepo: Send + Sync {
    /// Upserts the agent's jobs by job_id (the jobs already checked), never deleting others.
    fn report_jobs<'a>(
        &'a self,
        agent: AgentRef,
        jobs: &'a [Job],
    ) -> BoxFuture<'a, anyhow::Result<(i64, i64, i64)>>;

    /// Loads the agent's jobs named by the runs, reads each run in its job's zone
    /// ([`crate::run::Run::read`]) and writes the readable ones by (job, run_id); an item that
    /// could not be read at all is `invalid` ([`RunRefusal::unreadable`]).
    fn report_runs<'a>(
        &'a self,
        agent: AgentRef,
        runs: &'a [Result<RawRun, crate::job::Unreadable>],
        now: jiff::Timestamp,
    ) -> BoxFuture<'a, anyhow::Result<RunsOutcome>>;
}

// ---------------------------------------------------------------------------------------------
// The person's day (GET /today): the rows it reads, all at once.
//
// The port sits here because the day's agent part (heartbeats, cron health) is this crate's;
// the coverage rules stay in fleetdesk_accounts and the use case (`fleetdesk_api::today`)
// composes them. The adapter reads everything in a fixed number of statements whatever the
// number of accounts, agents or jobs.

/// A workspace with its counts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DayWorkspace {
    pub id: uuid::Uuid,
    pub name: String,
    pub organization_id: uuid::Uuid,
    pub organization: String,
    /// Posts in internal_review.
    pub internal_review: i64,
    /// Posts in client_review.
    pub client_review: i64,
    /// Task cards in pending_confirmation.
    pub cards_pending_confirmation: i64,
    /// Of those, pending confirmation for over 24 hours.
    pub cards_confirm_overdue: i64,
    /// Decisions waiting for a person (open or handled) by kind, kinds in name order.
    pub decisions: Vec<(String, i64)>,
}

/// An account slot with what is reported for its market date.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DayAccount {
    pub workspace_id: uuid::Uuid,
    pub slot_id: uuid::Uuid,
    pub code: String,
    pub platform: String,
    pub market: String,
    pub persona: String,
    /// The live generation's state; None without one.
    pub state: Option<String>,
    pub daily_target: i32,
    pub published: i64,
    pub scheduled: i64,
    /// Stocked posts waiting in the account's inventory.
    pub inventory: i64,
}

/// An agent and its last heartbeat.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DayAgent {
    pub workspace_id: uuid::Uuid,
    pub id: uuid::Uuid,
    pub name: String,
    pub last_heartbeat_at: Option<jiff::Timestamp>,
    /// Hours without a heartbeat before it is silent (the tenant file's, 24 by default).
    pub silent_after_hours: i16,
}

/// A cron job and its latest run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DayJob {
    pub agent_id: uuid::Uuid,
    pub job_id: String,
    pub name: String,
    pub schedule: String,
    pub timezone: String,
    pub enabled: bool,
    pub reported_at: jiff::Timestamp,
    /// The latest run's status and time (started_at, else finished_at, else reported).
    pub latest: Option<(String, jiff::Timestamp)>,
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DayRows {
    pub workspaces: Vec<DayWorkspace>,
    pub accounts: Vec<DayAccount>,
    pub agents: Vec<DayAgent>,
    pub jobs: Vec<DayJob>,
    pub differing: Vec<DayDiffering>,
    pub webhooks: Vec<DayWebhook>,
}

/// A post recently reported published with another body than the approved one, or that
/// nobody approved (`fleetdesk_posts::approval::PublishedDiffers`, read apart).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DayDiffering {
    pub workspace_id: uuid::Uuid,
    pub post_id: uuid::Uuid,
    pub code: String,
    pub platform: String,
    pub permalink: Option<String>,
    pub reason: String,
    pub approved_body: Option<String>,
    pub published_body: String,
    pub reported_at: jiff::Timestamp,
}

/// A webhook endpoint of a workspace, as `GET /today` judges it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DayWebhook {
    pub workspace_id: uuid::Uuid,
    pub id: uuid::Uuid,
    pub url: String,
    pub enabled: bool,
    /// Why the service disabled it (failing for days).
    pub disabled_reason: Option<String>,
    /// Since when its deliveries fail without a success.
    pub failing_since: Option<jiff::Timestamp>,
}

pub trait PersonDayRepo: Send + Sync {
    /// The organization's workspaces (every organization's when `organization` is None), not
    /// archived, with their accounts counted on `dates` (one market date per market code) and
    /// their cards' confirmation read at `now`.
    fn person_day<'a>(
        &'a self,
        organization: Option<uuid::Uuid>,
        dates: &'a [(String, jiff::civil::Date)],
        now: jiff::Timestamp,
    ) -> BoxFuture<'a, anyhow::Result<DayRows>>;
}
