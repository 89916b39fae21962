//! The cron port over PostgreSQL: an agent's jobs upserted by job_id, and its runs by (job,
//! run_id). Each request is one transaction of a fixed number of statements whatever its size.

use crate::db::{PgStore, Prepared, Ts, column};
use crate::rows::Statement;
use crate::rows::Stored;
use crate::schema::cron_jobs;
use diesel::pg::Pg;
use diesel::prelude::*;
use diesel_async::{AsyncPgConnection, RunQueryDsl};
use fleetdesk_cron::job::{Job, Unreadable};
use fleetdesk_cron::plan::{RunKey, StoredJob, job_names, plan_runs};
use fleetdesk_cron::ports::{CronRepo, RunsOutcome};
use fleetdesk_cron::run::{RawRun, Run, RunStatus};
use fleetdesk_kernel::{AgentRef, BoxFuture};
use jiff::Timestamp;
use uuid::Uuid;

statements!(UPSERT_JOBS => Counts, INSERT_RUNS => Key, LOCK_RUNS => RunRow, UPDATE_RUNS);

/// Upserts the jobs and counts what happened: a row whose fields are all the same is left
/// alone (`unchanged`).
const UPSERT_JOBS: &str = r#"
WITH input AS (
    SELECT * FROM unnest($3::text[], $4::text[], $5::text[], $6::text[], $7::text[], $8::bool[],
                         $9::text[])
        AS t(job_id, name, schedule, timezone, gateway, enabled, description)
), before AS (
    SELECT c.job_id,
           (c.workspace_id, c.name, c.schedule, c.timezone, c.gateway, c.enabled, c.description)
             IS NOT DISTINCT FROM
           ($1::uuid, i.name, i.schedule, i.timezone, i.gateway, i.enabled, i.description) AS same
    FROM cron_jobs c JOIN input i ON i.job_id = c.job_id
    WHERE c.agent_id = $2
), up AS (
    INSERT INTO cron_jobs (workspace_id, agent_id, job_id, name, schedule, timezone, gateway,
                           enabled, description)
    SELECT $1, $2, i.job_id, i.name, i.schedule, i.timezone, i.gateway, i.enabled, i.description
    FROM input i
    ON CONFLICT (agent_id, job_id) DO UPDATE
    SET workspace_id = EXCLUDED.workspace_id, name = EXCLUDED.name,
        schedule = EXCLUDED.schedule, timezone = EXCLUDED.timezone, gateway = EXCLUDED.gateway,
        enabled = EXCLUDED.enabled, description = EXCLUDED.description, updated_at = now()
    WHERE (cron_jobs.workspace_id, cron_jobs.name, cron_jobs.schedule, cron_jobs.timezone,
           cron_jobs.gateway, cron_jobs.enabled, cron_jobs.description)
          IS DISTINCT FROM
          (EXCLUDED.workspace_id, EXCLUDED.name, EXCLUDED.schedule, EXCLUDED.timezone,
           EXCLUDED.gateway, EXCLUDED.enabled, EXCLUDED.description)
    RETURNING 1
)
SELECT (SELECT count(*) FROM input) - (SELECT count(*) FROM before) AS inserted,
       (SELECT count(*) FROM before WHERE NOT same) AS updated,
       (SELECT count(*) FROM before WHERE same) AS unchanged
"#;

/// Inserts the runs no row has yet; a pair already stored (or stored meanwhile by a request
/// that commits first: the insert waits for it) is left alone and not returned.
const INSERT_RUNS: &str = r#"
INSERT INTO cron_runs (job, run_id, started_at, finished_at, status, summary, log)
SELECT * FROM unnest($1::uuid[], $2::text[], $3::timestamptz[], $4::timestamptz[], $5::text[],
                     $6::text[], $7::text[])
ON CONFLICT (job, run_id) DO NOTHING
RETURNING job, run_id
"#;

/// The stored runs of the pairs the insert left alone, locked until the transaction ends, in
/// one order so two requests naming the same pairs cannot deadlock.
const LOCK_RUNS: &str = r#"
SELECT r.job, r.run_id, r.started_at, r.finished_at, r.status, r.summary, r.log
FROM cron_runs r
JOIN unnest($1::uuid[], $2::text[]) AS k(job, run_id) ON k.job = r.job AND k.run_id = r.run_id
ORDER BY r.job, r.run_id
FOR UPDATE OF r
"#;

/// Replaces locked runs by their merge with the report (merged in the domain under the lock).
const UPDATE_RUNS: &str = r#"
UPDATE cron_runs r
SET started_at = u.started_at, finished_at = u.finished_at, status = u.status,
    summary = u.summary, log = u.log, updated_at = now()
FROM unnest($1::uuid[], $2::text[], $3::timestamptz[], $4::timestamptz[], $5::text[],
            $6::text[], $7::text[])
     AS u(job, run_id, started_at, finished_at, status, summary, log)
WHERE r.job = u.job AND r.run_id = u.run_id
"#;

row! {
    struct Counts {
        inserted: i64,
        updated: i64,
        unchanged: i64,
    }
}

row! {
    struct Key {
        job: Uuid,
        run_id: String,
    }
}

row! {
    #[diesel(check_for_backend(Pg))]
    struct RunRow {
        job: Uuid,
        run_id: String,
        started_at: Option<Ts>,
        finished_at: Option<Ts>,
        status: Stored<RunStatus>,
        summary: Option<String>,
        log: Option<String>,
    }
}

/// Loads the jobs the runs name, plans the batch, inserts the new runs, then loads the others
/// locked and writes their merge, and the `cron.run_failed` events of the runs that became
/// failed: at most five statements whatever the batch.
async fn report_runs_tx(
    conn: &mut AsyncPgConnection,
    agent: AgentRef,
    items: &[Result<RawRun, Unreadable>],
    now: Timestamp,
) -> anyhow::Result<RunsOutcome> {
    let jobs: Vec<(Uuid, String, String, String)> = cron_jobs::table
        .filter(cron_jobs::agent_id.eq(agent.agent_id))
        .filter(cron_jobs::job_id.eq_any(job_names(items)))
        .select((
            cron_jobs::id,
            cron_jobs::job_id,
            cron_jobs::name,
            cron_jobs::timezone,
        ))
        .load(conn)
        .await?;
    let jobs: Vec<StoredJob> = jobs
        .into_iter()
        .map(|(id, job_id, name, timezone)| StoredJob {
            id,
            job_id,
            name,
            timezone,
        })
        .collect();
    let mut plan = plan_runs(items, &jobs, now);
    if plan.runs.is_empty() {
        return Ok(plan.outcome);
    }

    // New pairs are inserted as reported; the others are locked, merged and updated, so two
    // requests reporting one run_id at once apply one after the other.
    let inserted: Vec<Key> = runs_query(INSERT_RUNS, &plan.runs).load(conn).await?;
    let inserted: Vec<RunKey> = inserted.into_iter().map(|k| (k.job, k.run_id)).collect();
    let rest = plan.stored_already(&inserted);
    if !rest.is_empty() {
        let locked: Vec<RunRow> = sql!(
            LOCK_RUNS,
            column(&rest, |k| k.0),
            column(&rest, |k| k.1.run_id.as_str())
        )
        .load(conn)
        .await?;
        let stored = locked
            .into_iter()
            .map(|row| {
                let run = Run {
                    job_id: String::new(),
                    run_id: row.run_id,
                    started_at: row.started_at.map(Into::into),
                    finished_at: row.finished_at.map(Into::into),
                    status: row.status.0,
                    summary: row.summary,
                    log: row.log,
                };
                (row.job, run)
            })
            .collect();
        let write = plan.settle(rest, stored);
        if !write.is_empty() {
            runs_query(UPDATE_RUNS, &write).execute(conn).await?;
        }
    }
    crate::events::write(conn, &plan.events(agent, &jobs)).await?;
    Ok(plan.outcome)
}

/// A statement over `unnest` of runs: (job, run_id, started_at, finished_at, status, summary,
/// log) as $1-$7.
fn runs_query(sql: &'static str, runs: &[(Uuid, Run)]) -> Prepared<Statement<'static>> {
    sql!(
        sql,
        column(runs, |w| w.0),
        column(runs, |w| w.1.run_id.clone()),
        column(runs, |w| w.1.started_at.map(Ts::from)),
        column(runs, |w| w.1.finished_at.map(Ts::from)),
        column(runs, |w| w.1.status.as_str()),
        column(runs, |w| w.1.summary.clone()),
        column(runs, |w| w.1.log.clone())
    )
}

impl CronRepo for PgStore {
    fn report_jobs<'a>(
        &'a self,
        agent: AgentRef,
        jobs: &'a [Job],
    ) -> BoxFuture<'a, anyhow::Result<(i64, i64, i64)>> {
        self.tx(async move |conn| {
            if jobs.is_empty() {
                return Ok((0, 0, 0));
            }
            let c: Counts = sql!(
                UPSERT_JOBS,
                agent.workspace_id,
                agent.agent_id,
                column(jobs, |j| j.job_id.as_str()),
                column(jobs, |j| j.name.as_str()),
                column(jobs, |j| j.schedule.as_str()),
                column(jobs, |j| j.timezone.as_str()),
                column(jobs, |j| j.gateway.as_deref()),
                column(jobs, |j| j.enabled),
                column(jobs, |j| j.description.as_deref())
            )
            .get_result(conn)
            .await?;
            Ok((c.inserted, c.updated, c.unchanged))
        })
    }

    fn report_runs<'a>(
        &'a self,
        agent: AgentRef,
        runs: &'a [Result<RawRun, Unreadable>],
        now: Timestamp,
    ) -> BoxFuture<'a, anyhow::Result<RunsOutcome>> {
        self.tx(async move |conn| report_runs_tx(conn, agent, runs, now).await)
    }
}
