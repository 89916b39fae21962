//! The cron port over PostgreSQL: an agent's jobs upserted by job_id, and its runs by (job,
//! run_id). Each request is one transaction of a fixed number of statements whatever its size.

use crate::db::{PgStore, prepared};
use diesel::sql_types::{Array, BigInt, Bool, Nullable, Text, Timestamptz, Uuid as SqlUuid};
use diesel::{QueryableByName, pg::Pg};
use diesel_async::{AsyncPgConnection, RunQueryDsl};
use fleetdesk_cron::job::{Job, Unreadable, parse_zone};
use fleetdesk_cron::ports::{CronRepo, RunRefusal, RunsOutcome};
use fleetdesk_cron::run::{Merge, RawRun, Run, RunProblem, RunStatus, merge, winner};
use fleetdesk_kernel::{AgentRef, BoxFuture};
use jiff::Timestamp;
use std::collections::HashMap;
use uuid::Uuid;

type Ts = jiff_diesel::Timestamp;

statements!(UPSERT_JOBS, AGENT_JOBS, INSERT_RUNS, LOCK_RUNS, UPDATE_RUNS);

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

/// The agent's jobs the runs name, with their zones.
const AGENT_JOBS: &str = r#"
SELECT id, job_id, timezone FROM cron_jobs WHERE agent_id = $1 AND job_id = ANY($2)
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

#[derive(QueryableByName)]
struct Counts {
    #[diesel(sql_type = BigInt)]
    inserted: i64,
    #[diesel(sql_type = BigInt)]
    updated: i64,
    #[diesel(sql_type = BigInt)]
    unchanged: i64,
}

#[derive(QueryableByName)]
struct JobRow {
    #[diesel(sql_type = SqlUuid)]
    id: Uuid,
    #[diesel(sql_type = Text)]
    job_id: String,
    #[diesel(sql_type = Text)]
    timezone: String,
}

#[derive(QueryableByName)]
struct Key {
    #[diesel(sql_type = SqlUuid)]
    job: Uuid,
    #[diesel(sql_type = Text)]
    run_id: String,
}

#[derive(QueryableByName)]
#[diesel(check_for_backend(Pg))]
struct RunRow {
    #[diesel(sql_type = SqlUuid)]
    job: Uuid,
    #[diesel(sql_type = Text)]
    run_id: String,
    #[diesel(sql_type = Nullable<Timestamptz>)]
    started_at: Option<Ts>,
    #[diesel(sql_type = Nullable<Timestamptz>)]
    finished_at: Option<Ts>,
    #[diesel(sql_type = Text)]
    status: String,
    #[diesel(sql_type = Nullable<Text>)]
    summary: Option<String>,
    #[diesel(sql_type = Nullable<Text>)]
    log: Option<String>,
}

fn refusal(i: usize, raw: &RawRun, field: &str, reason: String) -> RunRefusal {
    RunRefusal {
        index: i,
        job_id: raw.job_id.clone(),
        run_id: raw.run_id.clone(),
        field: field.to_owned(),
        reason,
    }
}

/// Reads every run against its job, merges repeats and the stored rows, and writes the plan:
/// three statements whatever the batch.
async fn report_runs_tx(
    conn: &mut AsyncPgConnection,
    agent: AgentRef,
    items: &[Result<RawRun, Unreadable>],
    now: Timestamp,
) -> anyhow::Result<RunsOutcome> {
    let mut out = RunsOutcome::default();
    // The items read, with their index; the others are invalid as they are.
    let mut raw: Vec<(usize, &RawRun)> = Vec::with_capacity(items.len());
    for (i, item) in items.iter().enumerate() {
        match item {
            Ok(r) => raw.push((i, r)),
            Err(u) => out.invalid.push(RunRefusal::unreadable(i, u)),
        }
    }
    let mut names: Vec<String> = raw
        .iter()
        .map(|(_, r)| r.job_id.trim().to_owned())
        .collect();
    names.sort_unstable();
    names.dedup();
    let jobs: Vec<JobRow> = prepared(
        diesel::sql_query(AGENT_JOBS)
            .bind::<SqlUuid, _>(agent.agent_id)
            .bind::<Array<Text>, _>(&names),
    )
    .load(conn)
    .await?;
    let jobs: HashMap<&str, &JobRow> = jobs.iter().map(|j| (j.job_id.as_str(), j)).collect();

    // Readable runs by (job, run_id), in the order first seen.
    let mut keys: Vec<(Uuid, String)> = Vec::new();
    let mut by_key: HashMap<(Uuid, String), Vec<Run>> = HashMap::new();
    for &(i, r) in &raw {
        let Some(job) = jobs.get(r.job_id.trim()) else {
            let name = r.job_id.trim().to_owned();
            if !out.unknown_jobs.contains(&name) {
                out.unknown_jobs.push(name);
            }
            continue;
        };
        let zone = match parse_zone(&job.timezone) {
            Ok(z) => z,
            Err(e) => {
                out.invalid
                    .push(refusal(i, r, "job_id", format!("the job's timezone: {e}")));
                continue;
            }
        };
        match Run::read(r, &zone, now) {
            Ok(run) => {
                let key = (job.id, run.run_id.clone());
                let list = by_key.entry(key.clone()).or_default();
                if list.is_empty() {
                    keys.push(key);
                }
                list.push(run);
            }
            Err(RunProblem::Refused { field, reason }) => {
                out.refused.push(refusal(i, r, field, reason))
            }
            Err(RunProblem::Invalid { field, reason }) => {
                out.invalid.push(refusal(i, r, field, reason))
            }
        }
    }
    out.invalid.sort_by_key(|r| r.index);
    if keys.is_empty() {
        return Ok(out);
    }

    // The report that stands for each pair.
    keys.sort_unstable();
    let mut news: Vec<(Uuid, Run)> = Vec::with_capacity(keys.len());
    for key in &keys {
        let reports = &by_key[key];
        let refs: Vec<&Run> = reports.iter().collect();
        out.skipped += (reports.len() - 1) as i64;
        let mut new = reports[winner(&refs)].clone();
        new.job_id = String::new();
        news.push((key.0, new));
    }

    // New pairs are inserted as reported; the others are locked, merged and updated, so two
    // requests reporting one run_id at once apply one after the other.
    let inserted: Vec<Key> = prepared(runs_query(INSERT_RUNS, &news)).load(conn).await?;
    out.inserted = inserted.len() as i64;
    let inserted: std::collections::HashSet<(Uuid, String)> =
        inserted.into_iter().map(|k| (k.job, k.run_id)).collect();
    let rest: Vec<&(Uuid, Run)> = news
        .iter()
        .filter(|(job, run)| !inserted.contains(&(*job, run.run_id.clone())))
        .collect();
    if rest.is_empty() {
        return Ok(out);
    }
    let locked: Vec<RunRow> = prepared(
        diesel::sql_query(LOCK_RUNS)
            .bind::<Array<SqlUuid>, _>(rest.iter().map(|k| k.0).collect::<Vec<_>>())
            .bind::<Array<Text>, _>(rest.iter().map(|k| k.1.run_id.as_str()).collect::<Vec<_>>()),
    )
    .load(conn)
    .await?;
    let mut stored: HashMap<(Uuid, String), Run> = locked
        .into_iter()
        .map(|row| {
            let status = RunStatus::parse(&row.status)
                .ok_or_else(|| anyhow::anyhow!("unknown run status {}", row.status))?;
            Ok((
                (row.job, row.run_id.clone()),
                Run {
                    job_id: String::new(),
                    run_id: row.run_id,
                    started_at: row.started_at.map(|t| t.to_jiff()),
                    finished_at: row.finished_at.map(|t| t.to_jiff()),
                    status,
                    summary: row.summary,
                    log: row.log,
                },
            ))
        })
        .collect::<anyhow::Result<_>>()?;

    let mut write: Vec<(Uuid, Run)> = Vec::new();
    for (job, new) in rest {
        let old = stored.remove(&(*job, new.run_id.clone()));
        // A row that was there for the insert is there under the lock: runs are never deleted
        // while their job stands (a job's deletion cascades, and the job is gone then too).
        let Some(old) = old else {
            out.skipped += 1;
            continue;
        };
        match merge(Some(&old), new) {
            Merge::Update(run) => {
                out.updated += 1;
                write.push((*job, run));
            }
            Merge::Insert | Merge::Skip => out.skipped += 1,
        }
    }
    if !write.is_empty() {
        prepared(runs_query(UPDATE_RUNS, &write))
            .execute(conn)
            .await?;
    }
    Ok(out)
}

/// A statement over `unnest` of runs: (job, run_id, started_at, finished_at, status, summary,
/// log) as $1-$7.
fn runs_query(
    sql: &'static str,
    runs: &[(Uuid, Run)],
) -> diesel::query_builder::BoxedSqlQuery<'static, Pg, diesel::query_builder::SqlQuery> {
    let ts = |t: Option<Timestamp>| t.map(Ts::from);
    diesel::sql_query(sql)
        .into_boxed()
        .bind::<Array<SqlUuid>, _>(runs.iter().map(|w| w.0).collect::<Vec<_>>())
        .bind::<Array<Text>, _>(runs.iter().map(|w| w.1.run_id.clone()).collect::<Vec<_>>())
        .bind::<Array<Nullable<Timestamptz>>, _>(
            runs.iter().map(|w| ts(w.1.started_at)).collect::<Vec<_>>(),
        )
        .bind::<Array<Nullable<Timestamptz>>, _>(
            runs.iter().map(|w| ts(w.1.finished_at)).collect::<Vec<_>>(),
        )
        .bind::<Array<Text>, _>(runs.iter().map(|w| w.1.status.as_str()).collect::<Vec<_>>())
        .bind::<Array<Nullable<Text>>, _>(
            runs.iter().map(|w| w.1.summary.clone()).collect::<Vec<_>>(),
        )
        .bind::<Array<Nullable<Text>>, _>(runs.iter().map(|w| w.1.log.clone()).collect::<Vec<_>>())
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
            let col = |f: fn(&Job) -> Option<&str>| jobs.iter().map(f).collect::<Vec<_>>();
            let c: Counts = diesel::sql_query(UPSERT_JOBS)
                .bind::<SqlUuid, _>(agent.workspace_id)
                .bind::<SqlUuid, _>(agent.agent_id)
                .bind::<Array<Text>, _>(jobs.iter().map(|j| j.job_id.as_str()).collect::<Vec<_>>())
                .bind::<Array<Text>, _>(jobs.iter().map(|j| j.name.as_str()).collect::<Vec<_>>())
                .bind::<Array<Text>, _>(
                    jobs.iter().map(|j| j.schedule.as_str()).collect::<Vec<_>>(),
                )
                .bind::<Array<Text>, _>(
                    jobs.iter().map(|j| j.timezone.as_str()).collect::<Vec<_>>(),
                )
                .bind::<Array<Nullable<Text>>, _>(col(|j| j.gateway.as_deref()))
                .bind::<Array<Bool>, _>(jobs.iter().map(|j| j.enabled).collect::<Vec<_>>())
                .bind::<Array<Nullable<Text>>, _>(col(|j| j.description.as_deref()))
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
