//! The job queue (`fleetdesk_kernel::jobs`) over the `jobs` table: `(kind, key)` unique, taken
//! with `FOR UPDATE SKIP LOCKED` under a lease, retaken once the lease passed. Times are the
//! database's `now()`, so instances whose clocks differ agree on what is due.

use crate::db::{PgStore, Ts};
use crate::instance::INSTANCE_LOCK_CLASS;
use crate::schema::jobs;
use diesel::dsl::{self, IntervalDsl};
use diesel::prelude::*;
use diesel::sql_types::Timestamptz;
use diesel_async::{AsyncPgConnection, RunQueryDsl};
use fleetdesk_kernel::BoxFuture;
use fleetdesk_kernel::jobs::{
    Job, JobQueue, JobStatus, MAX_ATTEMPTS, NewJob, Retention, backoff, kept_error,
};
use jiff::SignedDuration;
use serde_json::Value;
use uuid::Uuid;

const ENQUEUE: &str = "INSERT INTO jobs (kind, key, payload, run_at) VALUES ($1, $2, $3, $4) \
                       ON CONFLICT (kind, key) DO NOTHING";

/// Running jobs whose lease ended (it passed, or the instance that took the job died: its
/// advisory lock of class `$3` is free) after their last attempt (`$2`, `MAX_ATTEMPTS`): given
/// up (`$4`, failed) rather than taken again, so a job that kills its instance every time ends.
const GIVE_UP: &str = r#"
UPDATE jobs SET status = $4, finished_at = now(), locked_until = NULL,
       last_error = 'lease expired ' || attempts || ' times'
WHERE kind = ANY($1) AND status = $5 AND attempts >= $2
  AND (locked_until < now()
       OR (instance IS NOT NULL AND pg_try_advisory_xact_lock($3, instance)))
"#;

/// The next due job: queued and due, or running with attempts left (`$3`) and its lease
/// ended: passed, or held by an instance that died (the advisory lock of class `$5` on its
/// number is free, as for an Idempotency-Key's claim), so a dead instance's job is taken over
/// at once. Each take counts an attempt, the lease's token, and records the taking instance
/// (`$4`, none for a store that runs no requests). `$6` and `$7` are the queued and running
/// statuses.
const TAKE: &str = r#"
UPDATE jobs SET status = $7, attempts = attempts + 1,
       locked_until = now() + make_interval(secs => $2), instance = $4
WHERE id = (
    SELECT id FROM jobs
    WHERE kind = ANY($1)
      AND ((status = $6 AND run_at <= now())
           OR (status = $7 AND attempts < $3
               AND (locked_until < now()
                    OR (instance IS NOT NULL AND pg_try_advisory_xact_lock($5, instance)))))
    ORDER BY run_at, id
    FOR UPDATE SKIP LOCKED
    LIMIT 1
)
RETURNING id, kind, key, payload, attempts AS attempt
"#;

/// The job's row, locked, when its lease is still this take's.
const HOLD: &str = "SELECT id FROM jobs WHERE id = $1 AND status = $3 AND attempts = $2 \
                    FOR UPDATE";

/// The finished jobs their kind's retention no longer keeps: per kind (`$1`), the done ones
/// (`$4`) finished before `$2`, the failed ones (`$5`) before `$3`.
const PRUNE: &str = r#"
DELETE FROM jobs j
USING unnest($1::text[], $2::timestamptz[], $3::timestamptz[]) AS t(kind, done_before, failed_before)
WHERE j.kind = t.kind
  AND ((j.status = $4 AND j.finished_at < t.done_before)
       OR (j.status = $5 AND j.finished_at < t.failed_before))
"#;

/// The lease of a working job pushed to `$3` seconds from now, when it is still this take's.
const RENEW: &str = "UPDATE jobs SET locked_until = now() + make_interval(secs => $3) \
                     WHERE id = $1 AND attempts = $2 AND status = $4";

statements!(ENQUEUE, GIVE_UP, TAKE => Taken, HOLD, PRUNE, RENEW);

row! {
    struct Taken into Job {
        id: Uuid,
        kind: String,
        key: String,
        payload: Value,
        attempt: i32,
    }
}

/// Marks `job` done inside the transaction of its effect; `false` when its lease was lost
/// (the caller then rolls the effect back).
pub(crate) async fn finish_in(conn: &mut AsyncPgConnection, job: &Job) -> anyhow::Result<bool> {
    // Done, when the lease is still this take's.
    let n = diesel::update(
        jobs::table
            .filter(jobs::id.eq(job.id))
            .filter(jobs::status.eq(JobStatus::Running.as_str()))
            .filter(jobs::attempts.eq(job.attempt)),
    )
    .set((
        jobs::status.eq(JobStatus::Done.as_str()),
        jobs::finished_at.eq(dsl::now),
        jobs::locked_until.eq(None::<Ts>),
    ))
    .execute(conn)
    .await?;
    Ok(n == 1)
}

/// Queues `job` on `conn`, inside the caller's transaction when there is one (the job then
/// exists exactly when the write that asks for it commits); `false` when `(kind, key)` is
/// already queued.
pub(crate) async fn enqueue_in(conn: &mut AsyncPgConnection, job: &NewJob) -> anyhow::Result<bool> {
    let n = sql!(
        ENQUEUE,
        &job.kind,
        &job.key,
        &job.payload,
        jiff_diesel::Timestamp::from(job.run_at)
    )
    .execute(conn)
    .await?;
    Ok(n == 1)
}

impl JobQueue for PgStore {
    fn enqueue<'a>(&'a self, job: &'a NewJob) -> BoxFuture<'a, anyhow::Result<bool>> {
        self.read(async move |conn| enqueue_in(conn, job).await)
    }

    fn take<'a>(
        &'a self,
        kinds: &'a [&'a str],
        lease: SignedDuration,
    ) -> BoxFuture<'a, anyhow::Result<Option<Job>>> {
        self.read(async move |conn| {
            let given_up = sql!(
                GIVE_UP,
                kinds,
                MAX_ATTEMPTS,
                INSTANCE_LOCK_CLASS,
                JobStatus::Failed.as_str(),
                JobStatus::Running.as_str()
            )
            .execute(conn)
            .await?;
            if given_up > 0 {
                tracing::warn!(
                    jobs = given_up,
                    "gave up jobs whose lease expired after their last attempt"
                );
            }
            let row: Option<Taken> = sql!(
                TAKE,
                kinds,
                lease.as_secs_f64(),
                MAX_ATTEMPTS,
                self.instance,
                INSTANCE_LOCK_CLASS,
                JobStatus::Queued.as_str(),
                JobStatus::Running.as_str()
            )
            .get_result(conn)
            .await
            .optional()?;
            Ok(row.map(Into::into))
        })
    }

    fn finish<'a>(&'a self, job: &'a Job) -> BoxFuture<'a, anyhow::Result<bool>> {
        self.read(async move |conn| finish_in(conn, job).await)
    }

    fn prune<'a>(
        &'a self,
        kept: &'a [Retention],
        now: jiff::Timestamp,
    ) -> BoxFuture<'a, anyhow::Result<u64>> {
        self.read(async move |conn| {
            let kinds: Vec<&str> = kept.iter().map(|r| r.kind).collect();
            let (done, failed): (Vec<Ts>, Vec<Ts>) = kept
                .iter()
                .map(|r| {
                    let (done, failed) = r.cutoffs(now);
                    (Ts::from(done), Ts::from(failed))
                })
                .unzip();
            let n = sql!(
                PRUNE,
                &kinds,
                &done,
                &failed,
                JobStatus::Done.as_str(),
                JobStatus::Failed.as_str()
            )
            .execute(conn)
            .await?;
            Ok(n as u64)
        })
    }

    fn renew<'a>(
        &'a self,
        job: &'a Job,
        lease: SignedDuration,
    ) -> BoxFuture<'a, anyhow::Result<bool>> {
        self.read(async move |conn| {
            let n = sql!(
                RENEW,
                job.id,
                job.attempt,
                lease.as_secs_f64(),
                JobStatus::Running.as_str()
            )
            .execute(conn)
            .await?;
            Ok(n == 1)
        })
    }

    fn fail<'a>(&'a self, job: &'a Job, error: &'a str) -> BoxFuture<'a, anyhow::Result<()>> {
        self.read(async move |conn| {
            // Only under this take's lease.
            let leased = jobs::table
                .filter(jobs::id.eq(job.id))
                .filter(jobs::status.eq(JobStatus::Running.as_str()))
                .filter(jobs::attempts.eq(job.attempt));
            let error = kept_error(error);
            match backoff(job.attempt).map(|d| d.as_secs()) {
                // Queued again that many seconds after the database's now.
                Some(secs) => {
                    diesel::update(leased)
                        .set((
                            jobs::status.eq(JobStatus::Queued.as_str()),
                            jobs::run_at.eq(dsl::now.into_sql::<Timestamptz>() + secs.seconds()),
                            jobs::finished_at.eq(None::<Ts>),
                            jobs::locked_until.eq(None::<Ts>),
                            jobs::last_error.eq(error),
                        ))
                        .execute(conn)
                        .await?
                }
                // Failed for good: its run_at stays.
                None => {
                    diesel::update(leased)
                        .set((
                            jobs::status.eq(JobStatus::Failed.as_str()),
                            jobs::finished_at.eq(dsl::now),
                            jobs::locked_until.eq(None::<Ts>),
                            jobs::last_error.eq(error),
                        ))
                        .execute(conn)
                        .await?
                }
            };
            Ok(())
        })
    }
}

/// Holds `job`'s row for the transaction of its effect when the lease is still this take's:
/// no other instance can retake it until the transaction ends (they skip locked rows).
pub(crate) async fn hold(conn: &mut AsyncPgConnection, job: &Job) -> anyhow::Result<bool> {
    let n = sql!(HOLD, job.id, job.attempt, JobStatus::Running.as_str())
        .execute(conn)
        .await?;
    Ok(n == 1)
}
