//! Background work: a tokio task per instance that, every few seconds, enqueues what the
//! calendar makes due (the weekly build of the reports, due six hours after its week ends, and
//! the three weeks before it in case every instance missed one) and runs the due jobs of the
//! queue (`fleetdesk_kernel::jobs`): the weekly reports, and the paid research an approval
//! queued (item by item: each lookup counted against the provider's quota before it is made,
//! its result and charge recorded after, so a restart goes on from the first unsettled
//! item), looking between jobs whether it should stop. Every instance runs one; the queue makes each job run
//! once: the same `(kind, key)` enqueued by every instance is one job, and a job is taken by
//! one instance at a time under a lease. A job queued before a restart is taken after it; a
//! job whose instance died is taken again once its lease passed.

use fleetdesk_ads::platform::{
    AdAccountRef, AdPlatform, CHANGE_JOB, EXPIRE_JOB, PlatformError, SYNC_DAYS, SYNC_JOB,
};
use fleetdesk_ads::ports::{AdWorkRepo, ChangeStep, NextStep, ResearchRepo};
use fleetdesk_ads::provider::{ProviderError, ResearchProvider, settle};
use fleetdesk_ads::research::RESEARCH_JOB;
use fleetdesk_api::Telemetry;
use fleetdesk_kernel::jobs::{Job, JobQueue, LEASE, NewJob, Retention, renew_every};
use fleetdesk_media::service::MediaService;
use fleetdesk_pg::PgStore;
use fleetdesk_reports::period::Period;
use fleetdesk_reports::ports::ReportsRepo;
use fleetdesk_reports::{WEEKLY_GRACE, WEEKLY_REPORTS_JOB, WEEKLY_WEEKS_BACK};
use fleetdesk_wiki::meaning::Embedder;
use fleetdesk_wiki::ports::EmbeddingsRepo;
use jiff::civil::Date;
use jiff::{SignedDuration, Timestamp};
use serde_json::json;
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// The upkeep of the service's own tables and storage, once a minute: spent rate grants, old
/// idempotency records and ended sessions, the chunks of abandoned uploads, half-written blobs.
pub const SWEEP_JOB: &str = "sweep";

/// The vectors of the knowledge base's new and changed entries, once a minute when an embedding
/// model is set (`fleetdesk_wiki::meaning`): one instance at a time makes them, a batch after
/// another, for at most [`EMBED_BUDGET`], and the next minute's job goes on.
pub const EMBED_JOB: &str = "wiki_embed";

/// How long one minute's embedding job makes vectors before it finishes (the batch in hand
/// ends first): under the minute, so the next minute's job rarely starts beside it.
pub const EMBED_BUDGET: Duration = Duration::from_secs(45);

/// The kinds of job this worker runs.
pub const KINDS: &[&str] = &[
    SWEEP_JOB,
    WEEKLY_REPORTS_JOB,
    RESEARCH_JOB,
    EXPIRE_JOB,
    SYNC_JOB,
    CHANGE_JOB,
    EMBED_JOB,
];

/// How long the finished jobs of each kind are kept; the hourly expiry job prunes the rest
/// (so a row may outlive its time by up to an hour). A done job's effect is recorded where it
/// belongs (reports, research items, proposals, vectors), its row only says when it ran; a
/// failed one is the record of what went wrong, kept longer to be read. The weekly builds are
/// kept past the [`WEEKLY_WEEKS_BACK`] weeks every instance enqueues again, else a pruned week
/// would be enqueued and run again.
pub const RETENTION: &[Retention] = &[
    // One a minute.
    kept(SWEEP_JOB, hours(1), days(7)),
    kept(EMBED_JOB, hours(1), days(7)),
    // One an hour, and one an hour per ad account.
    kept(EXPIRE_JOB, days(7), days(30)),
    kept(SYNC_JOB, days(7), days(30)),
    // One a week.
    kept(WEEKLY_REPORTS_JOB, days(90), days(90)),
    // One per approved research request or ad change.
    kept(RESEARCH_JOB, days(30), days(90)),
    kept(CHANGE_JOB, days(30), days(90)),
];

const fn kept(kind: &'static str, done: SignedDuration, failed: SignedDuration) -> Retention {
    Retention { kind, done, failed }
}

const fn hours(n: i64) -> SignedDuration {
    SignedDuration::from_hours(n)
}

const fn days(n: i64) -> SignedDuration {
    SignedDuration::from_hours(n * 24)
}

/// How long one call to the ad platform (a sync of one account, or one change) may take.
pub const PLATFORM_TIMEOUT: Duration = Duration::from_secs(120);

/// How long one research lookup may take before the item is marked failed (not charged).
pub const LOOKUP_TIMEOUT: Duration = Duration::from_secs(30);

/// How often an instance looks for due work.
pub const EVERY: Duration = Duration::from_secs(5);

/// How long [`WorkerHandle::stop`] waits for the job in hand before it aborts the task (an
/// aborted build rolls back, and its job is taken again once its lease passed).
pub const STOP_WAIT: Duration = Duration::from_secs(10);

type Clock = Arc<dyn Fn() -> Timestamp + Send + Sync>;
/// Where an ad account's access token is read, by the name of its variable: the process's
/// environment unless set.
type Tokens = Arc<dyn Fn(&str) -> Option<String> + Send + Sync>;

/// One instance's background worker.
#[derive(Clone)]
pub struct Worker {
    queue: Arc<dyn JobQueue>,
    reports: Arc<dyn ReportsRepo>,
    research: Arc<dyn ResearchRepo>,
    ad_work: Arc<dyn AdWorkRepo>,
    /// The ad platform (the sandbox unless set).
    platform: Arc<dyn AdPlatform>,
    tokens: Tokens,
    /// The research provider (the sandbox unless set).
    provider: Arc<dyn ResearchProvider>,
    /// The provider's lookups per day; none when absent.
    daily_quota: Option<i64>,
    clock: Clock,
    every: Duration,
    /// The key of the last weekly job this instance enqueued (no need to ask again).
    enqueued: Arc<Mutex<Option<String>>>,
    /// The key of the last ad sync this instance enqueued.
    synced: Arc<Mutex<Option<String>>>,
    /// The key of the last sweep this instance enqueued.
    swept: Arc<Mutex<Option<String>>>,
    /// Where the runs and failures of jobs are counted.
    telemetry: Telemetry,
    /// The store swept of spent rows.
    store: PgStore,
    /// The media whose abandoned uploads and half-written blobs are swept, when set.
    media: Option<MediaService>,
    /// The embedding model the knowledge base's vectors are made with, when set.
    embedder: Option<Arc<dyn Embedder>>,
    /// Whether this instance forgot the vectors of other models yet (once, at its first
    /// embedding job).
    forgot_other_models: Arc<std::sync::atomic::AtomicBool>,
    /// The key of the last embedding job this instance enqueued.
    embedded: Arc<Mutex<Option<String>>>,
    /// The lease a take holds, renewed every third of it while the job works.
    lease: SignedDuration,
}

/// A running worker: [`WorkerHandle::stop`] ends it after the job in hand.
pub struct WorkerHandle {
    stop: tokio::sync::watch::Sender<bool>,
    task: tokio::task::JoinHandle<()>,
}

/// How a worker ended when asked to stop.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stopped {
    /// Between jobs, as asked.
    AsAsked,
    /// Its task had panicked (logged).
    Panicked,
    /// It did not stop in time and was aborted (logged).
    Aborted,
}

impl WorkerHandle {
    /// Asks the worker to stop and waits for it: it stops between jobs, so at most the job in
    /// hand finishes; after [`STOP_WAIT`] the task is aborted. A panic of the task is logged.
    pub async fn stop(self) -> Stopped {
        self.stop_within(STOP_WAIT).await
    }

    /// [`WorkerHandle::stop`], aborting the task after `wait`.
    pub async fn stop_within(mut self, wait: Duration) -> Stopped {
        let _ = self.stop.send(true);
        match tokio::time::timeout(wait, &mut self.task).await {
            Ok(Ok(())) => Stopped::AsAsked,
            Ok(Err(e)) => {
                tracing::error!(error = %e, "the background worker ended abnormally");
                Stopped::Panicked
            }
            Err(_) => {
                tracing::warn!(
                    wait_ms = wait.as_millis() as u64,
                    "the background worker did not stop in time; aborted"
                );
                self.task.abort();
                Stopped::Aborted
            }
        }
    }
}

const WEEK: SignedDuration = SignedDuration::from_hours(7 * 24);

/// The weekly job of `week`: keyed by its Monday, due [`WEEKLY_GRACE`] after it ends (Monday
/// midnight, Taipei).
fn week_job(week: Period) -> NewJob {
    NewJob {
        kind: WEEKLY_REPORTS_JOB.to_owned(),
        key: week.from().to_string(),
        payload: json!({"from": week.from().to_string(), "to": week.to().to_string()}),
        run_at: week.end() + WEEKLY_GRACE,
    }
}

/// The weekly job for the week before `now`: keyed by that week's Monday, due
/// [`WEEKLY_GRACE`] after midnight (Taipei) of the Monday after it.
pub fn weekly_job(now: Timestamp) -> NewJob {
    week_job(Period::week_before(now))
}

/// The weekly jobs of the [`WEEKLY_WEEKS_BACK`] weeks before `now`, newest first: a week
/// every instance missed is built late rather than never.
pub fn weekly_jobs(now: Timestamp) -> Vec<NewJob> {
    // Asia/Taipei keeps no daylight saving time: a week is always 168 hours.
    (0..WEEKLY_WEEKS_BACK)
        .map(|back| week_job(Period::week_before(now - WEEK * back)))
        .collect()
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
        let shared = Arc::new(store.clone());
        Worker {
            queue: shared.clone(),
            reports: shared.clone(),
            research: shared.clone(),
            ad_work: shared,
            platform: Arc::new(fleetdesk_vendors::ad_sandbox::SandboxAds::default()),
            tokens: Arc::new(|name: &str| std::env::var(name).ok()),
            provider: Arc::new(fleetdesk_vendors::sandbox::SandboxResearch),
            daily_quota: None,
            clock: Arc::new(Timestamp::now),
            every: EVERY,
            enqueued: Arc::new(Mutex::new(None)),
            synced: Arc::new(Mutex::new(None)),
            swept: Arc::new(Mutex::new(None)),
            telemetry: Telemetry::new(),
            store,
            media: None,
            embedder: None,
            forgot_other_models: Arc::new(std::sync::atomic::AtomicBool::new(false)),
            embedded: Arc::new(Mutex::new(None)),
            lease: LEASE,
        }
    }

    /// The same worker taking jobs under `lease` instead of [`LEASE`] (tests of renewal).
    pub fn lease(mut self, lease: SignedDuration) -> Worker {
        self.lease = lease;
        self
    }

    /// The same worker making the knowledge base's vectors with `embedder`, when set (without
    /// one it takes no embedding job: an instance that has none leaves them to one that has).
    pub fn embedder(mut self, embedder: Option<Arc<dyn Embedder>>) -> Worker {
        self.embedder = embedder;
        self
    }

    /// The kinds of job this instance takes: [`KINDS`], the embedding job only with a model.
    fn kinds(&self) -> Vec<&'static str> {
        KINDS
            .iter()
            .copied()
            .filter(|k| *k != EMBED_JOB || self.embedder.is_some())
            .collect()
    }

    /// The same worker sweeping `media`'s abandoned uploads and half-written blobs too.
    pub fn media(mut self, media: MediaService) -> Worker {
        self.media = Some(media);
        self
    }

    /// The same worker looking research items up with `provider`, at most `daily_quota`
    /// lookups a day (Taipei's) when set.
    pub fn research_provider(
        mut self,
        provider: Arc<dyn ResearchProvider>,
        daily_quota: Option<i64>,
    ) -> Worker {
        self.provider = provider;
        self.daily_quota = daily_quota;
        self
    }

    /// The same worker syncing and changing ads through `platform`.
    pub fn ad_platform(mut self, platform: Arc<dyn AdPlatform>) -> Worker {
        self.platform = platform;
        self
    }

    /// The same worker reading access tokens from `tokens` (by variable name) instead of the
    /// environment (tests).
    pub fn tokens(
        mut self,
        tokens: impl Fn(&str) -> Option<String> + Send + Sync + 'static,
    ) -> Worker {
        self.tokens = Arc::new(tokens);
        self
    }

    /// The same worker counting its job runs into `telemetry` (the service's metrics).
    pub fn telemetry(mut self, telemetry: Telemetry) -> Worker {
        self.telemetry = telemetry;
        self
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

    /// Enqueues this hour's expiry of ad proposals and one sync per ad account of the
    /// workspaces with ads enabled (each once however many instances ask), unless this
    /// instance did already this hour.
    pub async fn schedule_ad_sync(&self) -> anyhow::Result<()> {
        let now = (self.clock)();
        let expire = ad_expire_job(now);
        if self.synced.lock().ok().and_then(|k| k.clone()).as_deref() == Some(&expire.key) {
            return Ok(());
        }
        let mut jobs = vec![expire.clone()];
        for (workspace, account) in self.ad_work.sync_targets().await? {
            jobs.push(ad_sync_job(now, workspace, &account));
        }
        for job in &jobs {
            if self.queue.enqueue(job).await? {
                tracing::info!(kind = %job.kind, key = %job.key, "enqueued");
            }
        }
        if let Ok(mut k) = self.synced.lock() {
            *k = Some(expire.key);
        }
        Ok(())
    }

    /// Enqueues this minute's sweep (once however many instances ask), unless this instance
    /// did already this minute.
    pub async fn schedule_sweep(&self) -> anyhow::Result<()> {
        let job = sweep_job((self.clock)());
        if self.swept.lock().ok().and_then(|k| k.clone()).as_deref() == Some(&job.key) {
            return Ok(());
        }
        self.queue.enqueue(&job).await?;
        if let Ok(mut k) = self.swept.lock() {
            *k = Some(job.key);
        }
        Ok(())
    }

    /// Enqueues this minute's embedding job (once however many instances ask) when this
    /// instance has a model, unless it did already this minute.
    pub async fn schedule_embedding(&self) -> anyhow::Result<()> {
        if self.embedder.is_none() {
            return Ok(());
        }
        let job = NewJob {
            kind: EMBED_JOB.to_owned(),
            ..sweep_job((self.clock)())
        };
        if self.embedded.lock().ok().and_then(|k| k.clone()).as_deref() == Some(&job.key) {
            return Ok(());
        }
        self.queue.enqueue(&job).await?;
        if let Ok(mut k) = self.embedded.lock() {
            *k = Some(job.key);
        }
        Ok(())
    }

    /// Enqueues the weekly builds of the last [`WEEKLY_WEEKS_BACK`] weeks (those already
    /// enqueued are left as they are), unless this instance did for the same last week.
    pub async fn schedule(&self) -> anyhow::Result<()> {
        let jobs = weekly_jobs((self.clock)());
        let Some(last) = jobs.first().map(|j| j.key.clone()) else {
            return Ok(());
        };
        if self.enqueued.lock().ok().and_then(|k| k.clone()).as_deref() == Some(&last) {
            return Ok(());
        }
        for job in &jobs {
            if self.queue.enqueue(job).await? {
                tracing::info!(kind = %job.kind, key = %job.key, "enqueued");
            }
        }
        if let Ok(mut k) = self.enqueued.lock() {
            *k = Some(last);
        }
        Ok(())
    }

    /// Runs the due jobs one after another until none is left; returns how many ran.
    pub async fn run_due(&self) -> anyhow::Result<usize> {
        self.run_due_until(&never_stopped()).await
    }

    /// Runs the due jobs one after another until none is left or `stop` says true (looked at
    /// before each job); returns how many ran.
    pub async fn run_due_until(
        &self,
        stop: &tokio::sync::watch::Receiver<bool>,
    ) -> anyhow::Result<usize> {
        let mut ran = 0;
        while !*stop.borrow() {
            let Some(job) = self.queue.take(&self.kinds(), self.lease).await? else {
                break;
            };
            ran += 1;
            let result = self.run_leased(&job).await;
            self.telemetry.job_ran(&job.kind, result.is_err());
            match result {
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

    /// Runs `job`, renewing its lease every [`renew_every`] while it works: a job that takes
    /// longer than its lease (twenty lookups of 30 s) stays this instance's until it ends. An
    /// instance that dies stops renewing, and the job is taken over once the lease passes (at
    /// once, when the store knows the instance is gone).
    async fn run_leased(&self, job: &Job) -> anyhow::Result<()> {
        let every = renew_every(self.lease).unsigned_abs();
        let work = self.run(job);
        tokio::pin!(work);
        let mut renewals = tokio::time::interval_at(tokio::time::Instant::now() + every, every);
        renewals.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            tokio::select! {
                result = &mut work => return result,
                _ = renewals.tick() => match self.queue.renew(job, self.lease).await {
                    Ok(true) => {}
                    // The job just finished, or another instance took it (its writes will
                    // find the lease lost and write nothing).
                    Ok(false) => tracing::info!(
                        kind = %job.kind,
                        key = %job.key,
                        "a job's lease is no longer this take's: it finished, or another \
                         instance took it"
                    ),
                    Err(e) => tracing::warn!(
                        kind = %job.kind,
                        key = %job.key,
                        error = format!("{e:#}"),
                        "renewing a job's lease failed"
                    ),
                },
            }
        }
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
            RESEARCH_JOB => self.research(job).await,
            SWEEP_JOB => self.sweep(job).await,
            EXPIRE_JOB => self.expire_ads(job).await,
            SYNC_JOB => self.sync_ads(job).await,
            CHANGE_JOB => self.change_ad(job).await,
            EMBED_JOB => self.embed(job).await,
            other => anyhow::bail!("no worker runs jobs of kind {other}"),
        }
    }

    /// Sweeps what the service keeps only for a while, then finishes the job.
    async fn sweep(&self, job: &Job) -> anyhow::Result<()> {
        let (grants, keys, sessions) = self.store.sweep().await?;
        if grants + keys + sessions > 0 {
            tracing::debug!(
                grants,
                keys,
                sessions,
                "swept spent rate grants, idempotency records and sessions"
            );
        }
        let now = (self.clock)();
        let events = self
            .store
            .prune_events(now - fleetdesk_kernel::events::EVENTS_KEPT)
            .await?;
        if events > 0 {
            tracing::debug!(events, "pruned events past their keeping");
        }
        let silent = self.store.tell_silent_agents(now).await?;
        if silent > 0 {
            tracing::info!(agents = silent, "told of agents gone silent");
        }
        if let Some(media) = &self.media {
            let uploads = media.sweep_abandoned_uploads().await?;
            if uploads > 0 {
                tracing::info!(uploads, "removed the chunks of abandoned uploads");
            }
            let files = media.sweep_unfinished_writes().await?;
            if files > 0 {
                tracing::info!(files, "removed blobs a crash left half written");
            }
        }
        if !self.queue.finish(job).await? {
            tracing::info!(key = %job.key, "another instance holds the sweep now");
        }
        Ok(())
    }

    /// Makes the vectors of the entries that have none of their version, for at most
    /// [`EMBED_BUDGET`] (the first time, after forgetting those of other models), then
    /// finishes the job.
    async fn embed(&self, job: &Job) -> anyhow::Result<()> {
        let Some(embedder) = &self.embedder else {
            anyhow::bail!("this instance has no embedding model");
        };
        use std::sync::atomic::Ordering;
        if !self.forgot_other_models.load(Ordering::Relaxed) {
            let forgot = self.store.forget_other_models(embedder.model()).await?;
            if forgot > 0 {
                tracing::info!(
                    entries = forgot,
                    model = embedder.model(),
                    "forgot the vectors another embedding model made"
                );
            }
            self.forgot_other_models.store(true, Ordering::Relaxed);
        }
        let started = std::time::Instant::now();
        let made = fleetdesk_wiki::service::embed_pending(&self.store, embedder.as_ref(), || {
            started.elapsed() < EMBED_BUDGET
        })
        .await?;
        if made > 0 {
            tracing::info!(
                entries = made,
                ms = started.elapsed().as_millis() as u64,
                "embedded knowledge-base entries"
            );
        }
        if !self.queue.finish(job).await? {
            tracing::info!(key = %job.key, "another instance holds the embedding job now");
        }
        Ok(())
    }

    /// Works a research request item by item until every item is settled (or another
    /// instance holds the job now).
    async fn research(&self, job: &Job) -> anyhow::Result<()> {
        loop {
            let now = (self.clock)();
            let Some(step) = self.research.next_step(job, self.daily_quota, now).await? else {
                tracing::info!(key = %job.key, "another instance holds the research job now");
                return Ok(());
            };
            let (position, item, searched, price, answer) = match step {
                NextStep::Done => {
                    tracing::info!(key = %job.key, "research done");
                    return Ok(());
                }
                NextStep::Continue => continue,
                NextStep::Query {
                    position,
                    kind,
                    item,
                    key,
                    searched,
                    price,
                } => {
                    let answer = tokio::time::timeout(
                        LOOKUP_TIMEOUT,
                        self.provider.lookup(kind, &key, &searched),
                    )
                    .await
                    .unwrap_or_else(|_| {
                        Err(ProviderError(format!(
                            "no answer within {} s",
                            LOOKUP_TIMEOUT.as_secs()
                        )))
                    });
                    (position, item, searched, price, answer)
                }
            };
            let outcome = settle(&item, &searched, answer, price);
            if !self
                .research
                .record_lookup(job, position, &outcome, (self.clock)())
                .await?
            {
                tracing::info!(key = %job.key, "another instance holds the research job now");
                return Ok(());
            }
        }
    }

    /// Expires the proposals past their 7 days (their decisions dismissed), prunes the finished
    /// jobs past their [`RETENTION`], then finishes the job.
    async fn expire_ads(&self, job: &Job) -> anyhow::Result<()> {
        let now = (self.clock)();
        let expired = self.ad_work.expire_proposals(now).await?;
        if expired > 0 {
            tracing::info!(expired, "ad proposals expired");
        }
        let pruned = self.queue.prune(RETENTION, now).await?;
        if pruned > 0 {
            tracing::info!(pruned, "finished jobs past their retention pruned");
        }
        if !self.queue.finish(job).await? {
            tracing::info!(key = %job.key, "another instance holds the ad expiry now");
        }
        Ok(())
    }

    /// Syncs the ad account the job names through the platform (outside any transaction) and
    /// stores what it saw, or why it failed (its data stays), in one transaction; then finishes
    /// the job. A database error fails the job (retried after a backoff); the platform's does
    /// not, it is recorded on the account.
    async fn sync_ads(&self, job: &Job) -> anyhow::Result<()> {
        let (workspace, account) = sync_target_of(job)?;
        let now = (self.clock)();
        let today = fleetdesk_ads::research::quota_day(now);
        let since = today
            .checked_sub(jiff::Span::new().days(SYNC_DAYS - 1))
            .unwrap_or(today);
        let outcome = match self.access_token(&account.token_env) {
            Err(e) => Err(e),
            Ok(token) => tokio::time::timeout(
                PLATFORM_TIMEOUT,
                self.platform.sync(&account, &token, since, today),
            )
            .await
            .unwrap_or_else(|_| {
                Err(PlatformError(
                    "the ad platform did not answer in time".into(),
                ))
            })
            .map(|snapshot| snapshot.deduped()),
        };
        if let Err(error) = &outcome {
            tracing::warn!(account = %account.id, error = error.0.as_str(), "an ad account's sync failed");
        }
        self.ad_work
            .store_sync(workspace, &account.id, since, &outcome, (self.clock)())
            .await?;
        if !self.queue.finish(job).await? {
            tracing::info!(key = %job.key, "another instance holds the ad sync now");
        }
        Ok(())
    }

    /// The access token an ad account's `token_env` names, read when it is needed (never
    /// stored, never logged); none (empty) when the platform needs none and it is unset.
    fn access_token(&self, token_env: &str) -> Result<String, PlatformError> {
        let token = (self.tokens)(token_env).filter(|t| !t.is_empty());
        if token.is_none() && !self.platform.needs_token() {
            return Ok(String::new());
        }
        token.ok_or_else(|| {
                PlatformError(format!(
                    "the environment variable {token_env}, which holds the ad account's access token, is not set"
                ))
            })
    }

    /// Executes an approved ad change through the platform and records what it did.
    async fn change_ad(&self, job: &Job) -> anyhow::Result<()> {
        let Some(step) = self.ad_work.change_step(job, (self.clock)()).await? else {
            tracing::info!(key = %job.key, "another instance holds the ad change now");
            return Ok(());
        };
        let ChangeStep::Execute {
            proposal_id,
            account,
            change,
        } = step
        else {
            return Ok(());
        };
        let outcome = match self.access_token(&account.token_env) {
            Err(e) => Err(e),
            Ok(token) => tokio::time::timeout(
                PLATFORM_TIMEOUT,
                self.platform.execute(&account, &token, &change),
            )
            .await
            .unwrap_or_else(|_| {
                Err(PlatformError(
                    "the ad platform did not answer in time".into(),
                ))
            }),
        };
        match &outcome {
            Ok(_) => tracing::info!(%proposal_id, "ad change executed"),
            Err(error) => {
                tracing::warn!(%proposal_id, error = error.0.as_str(), "ad change failed")
            }
        }
        if !self
            .ad_work
            .record_execution(job, proposal_id, &outcome, (self.clock)())
            .await?
        {
            tracing::info!(key = %job.key, "another instance holds the ad change now");
        }
        Ok(())
    }

    /// One round: schedule, then run what is due. Errors are logged (the next round retries).
    pub async fn tick(&self) {
        self.tick_until(&never_stopped()).await
    }

    /// One round that stops between jobs once `stop` says true.
    pub async fn tick_until(&self, stop: &tokio::sync::watch::Receiver<bool>) {
        if let Err(e) = self.schedule().await {
            tracing::warn!(
                error = format!("{e:#}"),
                "enqueuing the weekly reports failed"
            );
        }
        if let Err(e) = self.schedule_sweep().await {
            tracing::warn!(error = format!("{e:#}"), "enqueuing the sweep failed");
        }
        if let Err(e) = self.schedule_ad_sync().await {
            tracing::warn!(error = format!("{e:#}"), "enqueuing the ad sync failed");
        }
        if let Err(e) = self.schedule_embedding().await {
            tracing::warn!(
                error = format!("{e:#}"),
                "enqueuing the embedding job failed"
            );
        }
        if let Err(e) = self.run_due_until(stop).await {
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
                    _ = every.tick() => self.tick_until(&stopped).await,
                    _ = stopped.changed() => break,
                }
            }
        });
        WorkerHandle { stop, task }
    }
}

/// The start of the hour `now` is in (UTC) and its key.
fn hour_of(now: Timestamp) -> (Timestamp, String) {
    let hour = now
        .round(
            jiff::TimestampRound::new()
                .smallest(jiff::Unit::Hour)
                .mode(jiff::RoundMode::Trunc),
        )
        .unwrap_or(now);
    (hour, hour.strftime("%Y-%m-%dT%H").to_string())
}

/// The sweep of the minute `now` is in (UTC), due at the minute's start.
pub fn sweep_job(now: Timestamp) -> NewJob {
    let minute = now
        .round(
            jiff::TimestampRound::new()
                .smallest(jiff::Unit::Minute)
                .mode(jiff::RoundMode::Trunc),
        )
        .unwrap_or(now);
    NewJob {
        kind: SWEEP_JOB.to_owned(),
        key: minute.strftime("%Y-%m-%dT%H:%M").to_string(),
        payload: json!({}),
        run_at: minute,
    }
}

/// The expiry of ad proposals in the hour `now` is in (UTC): due at the hour's start.
pub fn ad_expire_job(now: Timestamp) -> NewJob {
    let (hour, key) = hour_of(now);
    NewJob {
        kind: EXPIRE_JOB.to_owned(),
        key,
        payload: json!({}),
        run_at: hour,
    }
}

/// The sync of an ad account in the hour `now` is in (UTC), due at the hour's start; the
/// payload names the account (its token's variable, not the token).
pub fn ad_sync_job(now: Timestamp, workspace: uuid::Uuid, account: &AdAccountRef) -> NewJob {
    let (hour, key) = hour_of(now);
    NewJob {
        kind: SYNC_JOB.to_owned(),
        key: format!("{key} {workspace} {}", account.id),
        payload: json!({"workspace_id": workspace, "account_id": account.id,
                        "currency": account.currency, "token_env": account.token_env}),
        run_at: hour,
    }
}

/// The account a sync job names.
fn sync_target_of(job: &Job) -> anyhow::Result<(uuid::Uuid, AdAccountRef)> {
    let text = |name: &str| -> anyhow::Result<String> {
        job.payload[name]
            .as_str()
            .map(str::to_owned)
            .ok_or_else(|| anyhow::anyhow!("ad sync job {} has no {name}", job.key))
    };
    let workspace = text("workspace_id")?
        .parse()
        .map_err(|e| anyhow::anyhow!("ad sync job {}: {e}", job.key))?;
    Ok((
        workspace,
        AdAccountRef {
            id: text("account_id")?,
            currency: text("currency")?,
            token_env: text("token_env")?,
        },
    ))
}

/// A stop signal that never says stop.
fn never_stopped() -> tokio::sync::watch::Receiver<bool> {
    tokio::sync::watch::channel(false).1
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_kind_has_one_retention_and_a_weekly_build_outlives_its_enqueuing() {
        for kind in KINDS {
            let named = RETENTION.iter().filter(|r| r.kind == *kind).count();
            assert_eq!(named, 1, "{kind}");
        }
        assert_eq!(RETENTION.len(), KINDS.len());
        for r in RETENTION {
            assert!(r.failed >= r.done, "{} keeps its failures as long", r.kind);
        }
        // The last week every instance enqueues again is due WEEKLY_WEEKS_BACK weeks and the
        // grace before now, done at the latest then: its row must still be there.
        let weekly = RETENTION
            .iter()
            .find(|r| r.kind == WEEKLY_REPORTS_JOB)
            .unwrap();
        assert!(weekly.done > WEEK * (WEEKLY_WEEKS_BACK + 1) + WEEKLY_GRACE);
    }

    #[test]
    fn the_weekly_job_is_keyed_by_the_monday_of_the_week_before_and_due_after_it() {
        let job = weekly_job("2026-11-25T10:00:00Z".parse().unwrap());
        assert_eq!(job.kind, "weekly_reports");
        assert_eq!(job.key, "2026-11-16");
        assert_eq!(
            job.payload,
            json!({"from": "2026-11-16", "to": "2026-11-22"})
        );
        // Monday 06:00 in Taipei: six hours after the week ended, for late captures.
        assert_eq!(job.run_at, "2026-11-22T22:00:00Z".parse().unwrap());
        // Any time of the same Taipei week gives the same job.
        let later = weekly_job("2026-11-29T15:59:00Z".parse().unwrap());
        assert_eq!(later, job);
    }

    #[test]
    fn the_last_four_weeks_are_enqueued_newest_first() {
        let jobs = weekly_jobs("2026-11-25T10:00:00Z".parse().unwrap());
        let keys: Vec<_> = jobs.iter().map(|j| j.key.as_str()).collect();
        assert_eq!(
            keys,
            ["2026-11-16", "2026-11-09", "2026-11-02", "2026-10-26"]
        );
        assert_eq!(jobs[0], weekly_job("2026-11-25T10:00:00Z".parse().unwrap()));
        assert_eq!(
            jobs[3].payload,
            json!({"from": "2026-10-26", "to": "2026-11-01"})
        );
        assert_eq!(jobs[3].run_at, "2026-11-01T22:00:00Z".parse().unwrap());
    }

    #[test]
    fn each_ad_account_is_synced_once_an_hour() {
        let at = |t: &str| t.parse::<Timestamp>().unwrap();
        let account = AdAccountRef {
            id: "act_7".into(),
            currency: "TWD".into(),
            token_env: "META_TW".into(),
        };
        let ws = uuid::Uuid::from_u128(5);
        let job = ad_sync_job(at("2026-11-27T15:42:10Z"), ws, &account);
        assert_eq!(job.kind, "ad_sync");
        assert_eq!(job.key, format!("2026-11-27T15 {ws} act_7"));
        assert_eq!(job.run_at, at("2026-11-27T15:00:00Z"));
        assert_eq!(ad_sync_job(at("2026-11-27T15:00:00Z"), ws, &account), job);
        assert_ne!(
            ad_sync_job(at("2026-11-27T16:00:00Z"), ws, &account).key,
            job.key
        );
        let read = Job {
            id: uuid::Uuid::from_u128(1),
            kind: job.kind.clone(),
            key: job.key.clone(),
            payload: job.payload.clone(),
            attempt: 1,
        };
        assert_eq!(sync_target_of(&read).unwrap(), (ws, account));
        let expire = ad_expire_job(at("2026-11-27T15:42:10Z"));
        assert_eq!(
            (expire.kind.as_str(), expire.key.as_str()),
            ("ad_expire", "2026-11-27T15")
        );
    }

    #[test]
    fn each_minute_has_one_sweep_due_at_its_start() {
        let at = |t: &str| t.parse::<Timestamp>().unwrap();
        let job = sweep_job(at("2026-11-27T15:42:10.5Z"));
        assert_eq!(
            (job.kind.as_str(), job.key.as_str()),
            ("sweep", "2026-11-27T15:42")
        );
        assert_eq!(job.run_at, at("2026-11-27T15:42:00Z"));
        assert_eq!(sweep_job(at("2026-11-27T15:42:59Z")), job);
        assert_eq!(
            sweep_job(at("2026-11-27T15:43:00Z")).key,
            "2026-11-27T15:43"
        );
        assert!(KINDS.contains(&SWEEP_JOB));
    }

    #[tokio::test]
    async fn stop_reports_a_task_that_stops_as_asked() {
        let (stop, mut stopped) = tokio::sync::watch::channel(false);
        let task = tokio::spawn(async move {
            let _ = stopped.changed().await;
        });
        assert_eq!(WorkerHandle { stop, task }.stop().await, Stopped::AsAsked);
    }

    #[tokio::test]
    async fn stop_logs_a_panicking_task_instead_of_hanging_or_panicking() {
        let (stop, _) = tokio::sync::watch::channel(false);
        let task = tokio::spawn(async { panic!("boom") });
        assert_eq!(WorkerHandle { stop, task }.stop().await, Stopped::Panicked);
    }

    #[tokio::test]
    async fn stop_aborts_a_task_that_does_not_end_in_time() {
        let (stop, _) = tokio::sync::watch::channel(false);
        let (dropped_tx, dropped_rx) = tokio::sync::oneshot::channel::<()>();
        let task = tokio::spawn(async move {
            // Dropped, and the receiver told, only when the task is aborted.
            let _guard = dropped_tx;
            tokio::time::sleep(Duration::from_secs(3600)).await;
        });
        let stopped = WorkerHandle { stop, task }
            .stop_within(Duration::from_millis(100))
            .await;
        assert_eq!(stopped, Stopped::Aborted);
        assert!(
            dropped_rx.await.is_err(),
            "the aborted task's state was dropped"
        );
    }
}
