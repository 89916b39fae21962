//! The cron reports' use cases: each is one transaction of the [`CronRepo`].

use crate::job::Job;
use crate::ports::*;
use crate::run::RawRun;
use fleetdesk_kernel::AgentRef;
use std::sync::Arc;

/// What agents report of their scheduled jobs and runs.
#[derive(Clone)]
pub struct CronService {
    repo: Arc<dyn CronRepo>,
}

impl CronService {
    pub fn new(repo: Arc<dyn CronRepo>) -> Self {
        CronService { repo }
    }
    /// Upserts the agent's jobs by job_id (the jobs already checked), never deleting others.
    pub async fn report_jobs(
        &self,
        agent: AgentRef,
        jobs: &[Job],
    ) -> anyhow::Result<(i64, i64, i64)> {
        self.repo.report_jobs(agent, jobs).await
    }
    /// Loads the agent's jobs named by the runs, reads each run in its job's zone
    /// ([`crate::run::Run::read`]) and writes the readable ones by (job, run_id); an item that
    /// could not be read at all is `invalid` ([`RunRefusal::unreadable`]).
    pub async fn report_runs(
        &self,
        agent: AgentRef,
        runs: &[Result<RawRun, crate::job::Unreadable>],
        now: jiff::Timestamp,
    ) -> anyhow::Result<RunsOutcome> {
        self.repo.report_runs(agent, runs, now).await
    }
}
