//! Background work: a tokio task per instance that, every few seconds, enqueues what the
//! calendar makes due (the Monday build of the weekly reports) and runs the due jobs of the
//! queue (`fleetdesk_kernel::jobs`). Every instance runs one; the queue makes each job run
//! once: the same `(kind, key)` enqueued by every instance is one job, and a job is taken by
//! one instance at a time under a lease. A job queued before a restart is taken after it; a
//! job whose instance died is taken again once its lease passed.

use fleetdesk_kernel::jobs::{Job, JobQueue, LEASE, NewJob};
use fleetdesk_pg::PgStore;
use fleetdesk_reports::WEEKLY_REPORTS_JOB;
use fleetdesk_reports::period::Period;
use fleetdesk_reports::ports::ReportsRepo;
use jiff::Timestamp;
use jiff::civil::Date;
use serde_json::json;
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// The kinds of job this worker runs.
pub const KINDS: &[&str] = &[WEEKLY_REPORTS_JOB];

/// How often an instance looks for due work.
pub const EVERY: Duration = Duration::from_secs(5);

type Clock = Arc<dyn Fn() -> Timestamp + Send + Sync>;

/// One instance's background worker.
#[derive(Clone)]
pub struct Worker {
    queue: Arc<dyn JobQueue>,
    reports: Arc<dyn ReportsRepo>,
    clock: Clock,
    every: Duration,
    /// The key of the last weekly job this instance enqueued (no need to ask again).
    enqueued: Arc<Mutex<Option<String>>>,
}

/// A running worker: [`WorkerHandle::stop`] ends it after the job in hand.
pub struct WorkerHandle {
    stop: tokio::sync::watch::Sender<bool>,
    task: tokio::task::JoinHandle<()>,
}

impl WorkerHandle {
    pub async fn stop(self) {
        let _ = self.stop.send(true);
        let _ = self.task.await;
    }
}

/// The weekly job for the week before `now`: keyed by that week's Monday, due at midnight
/// (Taipei) of the Monday after it.
pub fn weekly_job(now: Timestamp) -> NewJob {
    let week = Period::week_before(now);
    NewJob {
        kind: WEEKLY_REPORTS_JOB.to_owned(),
        key: week.from().to_string(),
        payload: json!({"from": week.from().to_string(), "to": week.to().to_string()}),
        run_at: week.end(),
    }
}

/// The week a weekly job covers, from its payload.
fn week_of(job: &Job) -> anyhow::Result<Period> {
    let day = |name: &str| -> anyhow::Result<Date> {
        job.payload[name]
            .as_str()
            .ok_or_else(|| anyhow::anyhow!("weekly job {} has no {name}", job.key))?
            .parse()
            .map_err(|e| anyhow::anyhow!("weekly job {}: {name}: {e}", job.key))
    };
    Period::new(day("from")?, day("to")?).map_err(|e| anyhow::anyhow!("weekly job: {e}"))
}

impl Worker {
    pub fn new(store: PgStore) -> Worker {
        let store = Arc::new(store);
        Worker {
            queue: store.clone(),
            reports: store,
            clock: Arc::new(Timestamp::now),
            every: EVERY,
            enqueued: Arc::new(Mutex::new(None)),
        }
    }

    /// The same worker reading the time from `clock` (tests set the calendar).
    pub fn with_clock(mut self, clock: impl Fn() -> Timestamp + Send + Sync + 'static) -> Worker {
        self.clock = Arc::new(clock);
        self
    }

    /// The same worker looking for work every `every`.
    pub fn every(mut self, every: Duration) -> Worker {
        self.every = every;
        self
    }

    /// Enqueues the weekly build of the week before now, unless this instance did already.
    pub async fn schedule(&self) -> anyhow::Result<()> {
        let job = weekly_job((self.clock)());
        if self.enqueued.lock().ok().and_then(|k| k.clone()).as_deref() == Some(&job.key) {
            return Ok(());
        }
        if self.queue.enqueue(&job).await? {
            tracing::info!(kind = %job.kind, key = %job.key, "enqueued");
        }
        if let Ok(mut k) = self.enqueued.lock() {
            *k = Some(job.key);
        }
        Ok(())
    }

    /// Runs the due jobs one after another until none is left; returns how many ran.
    pub async fn run_due(&self) -> anyhow::Result<usize> {
        let mut ran = 0;
        while let Some(job) = self.queue.take(KINDS, LEASE).await? {
            ran += 1;
            match self.run(&job).await {
                Ok(()) => {}
                Err(e) => {
                    let error = format!("{e:#}");
                    tracing::warn!(kind = %job.kind, key = %job.key, attempt = job.attempt, error, "a job failed");
                    self.queue.fail(&job, &error).await?;
                }
            }
        }
        Ok(ran)
    }

    async fn run(&self, job: &Job) -> anyhow::Result<()> {
        match job.kind.as_str() {
            WEEKLY_REPORTS_JOB => {
                let week = week_of(job)?;
                match self.reports.build_weekly(job, week).await? {
                    Some(built) => {
                        tracing::info!(key = %job.key, reports = built, "built the weekly reports")
                    }
                    None => tracing::info!(key = %job.key, "another instance holds the job now"),
                }
                Ok(())
            }
            other => anyhow::bail!("no worker runs jobs of kind {other}"),
        }
    }

    /// One round: schedule, then run what is due. Errors are logged (the next round retries).
    pub async fn tick(&self) {
        if let Err(e) = self.schedule().await {
            tracing::warn!(
                error = format!("{e:#}"),
                "enqueuing the weekly reports failed"
            );
        }
        if let Err(e) = self.run_due().await {
            tracing::warn!(error = format!("{e:#}"), "running background jobs failed");
        }
    }

    /// Runs rounds every `every` until stopped.
    pub fn spawn(self) -> WorkerHandle {
        let (stop, mut stopped) = tokio::sync::watch::channel(false);
        let task = tokio::spawn(async move {
            let mut every = tokio::time::interval(self.every);
            every.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            loop {
                tokio::select! {
                    _ = every.tick() => self.tick().await,
                    _ = stopped.changed() => break,
                }
            }
        });
        WorkerHandle { stop, task }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_weekly_job_is_keyed_by_the_monday_of_the_week_before_and_due_after_it() {
        let job = weekly_job("2026-11-25T10:00:00Z".parse().unwrap());
        assert_eq!(job.kind, "weekly_reports");
        assert_eq!(job.key, "2026-11-16");
        assert_eq!(
            job.payload,
            json!({"from": "2026-11-16", "to": "2026-11-22"})
        );
        assert_eq!(job.run_at, "2026-11-22T16:00:00Z".parse().unwrap());
        // Any time of the same Taipei week gives the same job.
        let later = weekly_job("2026-11-29T15:59:00Z".parse().unwrap());
        assert_eq!(later, job);
    }
}
