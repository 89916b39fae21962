//! The port the PostgreSQL adapter implements: each method is one use case in one
//! transaction.

use crate::job::{Job, JobInvalid};
use crate::run::RawRun;
use fleetdesk_kernel::{AgentRef, BoxFuture};
use serde::Serialize;

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
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
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
    /// ([`crate::run::Run::read`]) and writes the readable ones by (job, run_id).
    fn report_runs<'a>(
        &'a self,
        agent: AgentRef,
        runs: &'a [RawRun],
    ) -> BoxFuture<'a, anyhow::Result<RunsOutcome>>;
}
