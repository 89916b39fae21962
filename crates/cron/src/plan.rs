//! Reporting runs as a plan. The adapter loads the agent's jobs the batch names
//! ([`job_names`]), [`plan_runs`] reads every item against its job, the adapter inserts the
//! runs no row has yet, loads the others locked, and [`RunsPlan::settle`] merges them into
//! the updates it writes. The runs it stores or updates as failed, not failed before, tell
//! `cron.run_failed` ([`RunsPlan::events`]), written with them.

use crate::job::{Unreadable, parse_zone};
use crate::ports::{RunRefusal, RunsOutcome};
use crate::run::{Merge, RawRun, Run, RunProblem, RunStatus, merge, winner};
use fleetdesk_kernel::AgentRef;
use fleetdesk_kernel::events::{CronRunFailed, EventBody, NewEvent};
use jiff::Timestamp;
use std::collections::{HashMap, HashSet};
use uuid::Uuid;

/// One of the agent's jobs that a run names, as stored.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoredJob {
    pub id: Uuid,
    pub job_id: String,
    pub name: String,
    pub timezone: String,
}

/// A run's key: its job's row and its run_id.
pub type RunKey = (Uuid, String);

/// The job_ids a batch names, trimmed, sorted and once each: what the adapter loads.
pub fn job_names(items: &[Result<RawRun, Unreadable>]) -> Vec<String> {
    let mut names: Vec<String> = items
        .iter()
        .filter_map(|r| r.as_ref().ok())
        .map(|r| r.job_id.trim().to_owned())
        .collect();
    names.sort_unstable();
    names.dedup();
    names
}

/// What a batch of runs comes to before the stored runs are known.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RunsPlan {
    /// The answer so far: the refusals, the unknown jobs, the repeats within the batch.
    pub outcome: RunsOutcome,
    /// The run that stands for each key, in key order: inserted when no row has it yet.
    pub runs: Vec<(Uuid, Run)>,
    /// The runs stored or updated as failed that were not failed before, as written.
    pub failed: Vec<(Uuid, Run)>,
}

fn refusal(index: usize, raw: &RawRun, field: &str, reason: String) -> RunRefusal {
    RunRefusal {
        index,
        job_id: raw.job_id.clone(),
        run_id: raw.run_id.clone(),
        field: field.to_owned(),
        reason,
    }
}

/// Reads every item in its job's zone at `now`. An item that could not be read is `invalid`,
/// one naming a job the agent never reported is an unknown job (named once), one whose time
/// cannot be read is `refused`; of several reports of one run, the [`winner`] stands and the
/// others are skipped.
pub fn plan_runs(
    items: &[Result<RawRun, Unreadable>],
    jobs: &[StoredJob],
    now: Timestamp,
) -> RunsPlan {
    let jobs: HashMap<&str, &StoredJob> = jobs.iter().map(|j| (j.job_id.as_str(), j)).collect();
    let mut out = RunsOutcome::default();
    let mut by_key: HashMap<RunKey, Vec<Run>> = HashMap::new();
    for (i, item) in items.iter().enumerate() {
        let r = match item {
            Ok(r) => r,
            Err(u) => {
                out.invalid.push(RunRefusal::unreadable(i, u));
                continue;
            }
        };
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
                let reason = format!("the job's timezone: {e}");
                out.invalid.push(refusal(i, r, "job_id", reason));
                continue;
            }
        };
        match Run::read(r, &zone, now) {
            Ok(run) => by_key
                .entry((job.id, run.run_id.clone()))
                .or_default()
                .push(run),
            Err(RunProblem::Refused { field, reason }) => {
                out.refused.push(refusal(i, r, field, reason))
            }
            Err(RunProblem::Invalid { field, reason }) => {
                out.invalid.push(refusal(i, r, field, reason))
            }
        }
    }
    let mut keys: Vec<RunKey> = by_key.keys().cloned().collect();
    keys.sort_unstable();
    let runs = keys
        .into_iter()
        .map(|key| {
            let reports = &by_key[&key];
            out.skipped += (reports.len() - 1) as i64;
            let refs: Vec<&Run> = reports.iter().collect();
            let mut run = reports[winner(&refs)].clone();
            run.job_id = String::new();
            (key.0, run)
        })
        .collect();
    RunsPlan {
        outcome: out,
        runs,
        failed: Vec::new(),
    }
}

impl RunsPlan {
    /// The runs the insert left alone, given the keys it inserted (counted as `inserted`):
    /// stored already, so the adapter loads them locked.
    pub fn stored_already(&mut self, inserted: &[RunKey]) -> Vec<(Uuid, Run)> {
        self.outcome.inserted = inserted.len() as i64;
        let inserted: HashSet<(&Uuid, &str)> =
            inserted.iter().map(|(j, r)| (j, r.as_str())).collect();
        let (new, rest): (Vec<_>, Vec<_>) = self
            .runs
            .iter()
            .cloned()
            .partition(|(job, run)| inserted.contains(&(job, run.run_id.as_str())));
        self.failed.extend(
            new.into_iter()
                .filter(|(_, r)| r.status == RunStatus::Failed),
        );
        rest
    }

    /// Merges each run the insert left alone into its stored row ([`merge`]): the updates to
    /// write, and the answer. A run whose row is gone under the lock is skipped (runs are
    /// never deleted while their job stands; a job's deletion takes its runs and the job).
    pub fn settle(&mut self, rest: Vec<(Uuid, Run)>, stored: Vec<(Uuid, Run)>) -> Vec<(Uuid, Run)> {
        let mut stored: HashMap<RunKey, Run> = stored
            .into_iter()
            .map(|(job, run)| ((job, run.run_id.clone()), run))
            .collect();
        let mut write = Vec::new();
        for (job, new) in rest {
            match stored.remove(&(job, new.run_id.clone())) {
                Some(old) => match merge(Some(&old), &new) {
                    Merge::Update(run) => {
                        self.outcome.updated += 1;
                        if run.status == RunStatus::Failed && old.status != RunStatus::Failed {
                            self.failed.push((job, run.clone()));
                        }
                        write.push((job, run));
                    }
                    Merge::Insert | Merge::Skip => self.outcome.skipped += 1,
                },
                None => self.outcome.skipped += 1,
            }
        }
        write
    }

    /// `cron.run_failed` for each run stored or updated as failed that was not failed before,
    /// told to the agent that reported it, about the job's row; in key order, inserted first.
    pub fn events(&self, agent: AgentRef, jobs: &[StoredJob]) -> Vec<NewEvent> {
        let jobs: HashMap<Uuid, &StoredJob> = jobs.iter().map(|j| (j.id, j)).collect();
        self.failed
            .iter()
            .filter_map(|(job, run)| {
                let stored = jobs.get(job)?;
                Some(NewEvent {
                    workspace_id: agent.workspace_id,
                    agent_id: Some(agent.agent_id),
                    object_id: *job,
                    body: EventBody::CronRunFailed(CronRunFailed {
                        job_id: stored.job_id.clone(),
                        job_name: stored.name.clone(),
                        run_id: run.run_id.clone(),
                        summary: run.summary.clone(),
                    }),
                })
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn raw(job: &str, run: &str, status: RunStatus, summary: Option<&str>) -> RawRun {
        RawRun {
            job_id: job.into(),
            run_id: Some(run.into()),
            started_at: Some("2026-11-25T02:00:00Z".into()),
            finished_at: None,
            status,
            summary: summary.map(str::to_owned),
            log: None,
        }
    }

    fn job(id: u128, name: &str, zone: &str) -> StoredJob {
        StoredJob {
            id: Uuid::from_u128(id),
            job_id: name.into(),
            name: format!("Job {name}"),
            timezone: zone.into(),
        }
    }

    fn now() -> Timestamp {
        "2026-11-25T03:00:00Z".parse().unwrap()
    }

    #[test]
    fn names_are_trimmed_sorted_and_once() {
        let items = vec![
            Ok(raw(" b ", "1", RunStatus::Success, None)),
            Ok(raw("a", "1", RunStatus::Success, None)),
            Ok(raw("b", "2", RunStatus::Success, None)),
        ];
        assert_eq!(job_names(&items), vec!["a".to_owned(), "b".to_owned()]);
    }

    #[test]
    fn unknown_jobs_are_named_once_and_repeats_keep_the_last_result() {
        let items = vec![
            Ok(raw("nightly", "r1", RunStatus::Running, None)),
            Ok(raw("ghost", "r1", RunStatus::Success, None)),
            Ok(raw("nightly", "r1", RunStatus::Success, Some("done"))),
            Ok(raw("nightly", "r1", RunStatus::Running, None)),
            Ok(raw("ghost", "r2", RunStatus::Success, None)),
        ];
        let plan = plan_runs(&items, &[job(1, "nightly", "UTC")], now());
        assert_eq!(plan.outcome.unknown_jobs, vec!["ghost".to_owned()]);
        assert_eq!(plan.outcome.skipped, 2);
        assert_eq!(plan.runs.len(), 1);
        let (job_row, run) = &plan.runs[0];
        assert_eq!(*job_row, Uuid::from_u128(1));
        assert_eq!(run.status, RunStatus::Success);
        assert_eq!(run.summary.as_deref(), Some("done"));
        assert_eq!(run.job_id, "", "the stored run is keyed by the job's row");
    }

    #[test]
    fn a_job_in_a_zone_no_longer_known_refuses_its_runs_by_index() {
        let items = vec![
            Ok(raw("a", "r", RunStatus::Success, None)),
            Ok(raw("b", "r", RunStatus::Success, None)),
        ];
        let jobs = [job(1, "a", "Mars/Olympus"), job(2, "b", "UTC")];
        let plan = plan_runs(&items, &jobs, now());
        let outcome = &plan.outcome;
        assert_eq!(outcome.invalid.len(), 1);
        assert_eq!(outcome.invalid[0].index, 0);
        assert_eq!(outcome.invalid[0].field, "job_id");
        assert!(
            outcome.invalid[0]
                .reason
                .starts_with("the job's timezone: ")
        );
        assert_eq!(plan.runs.len(), 1);
    }

    #[test]
    fn an_unreadable_time_is_refused_not_invalid() {
        let mut bad = raw("a", "r", RunStatus::Success, None);
        bad.started_at = Some("yesterday".into());
        let plan = plan_runs(&[Ok(bad)], &[job(1, "a", "UTC")], now());
        assert_eq!(plan.outcome.refused.len(), 1);
        assert_eq!(plan.outcome.refused[0].field, "started_at");
        assert!(plan.runs.is_empty());
    }

    #[test]
    fn settling_counts_inserted_updated_and_skipped() {
        let items = vec![
            Ok(raw("a", "new", RunStatus::Success, None)),
            Ok(raw("a", "changed", RunStatus::Success, Some("result"))),
            Ok(raw("a", "same", RunStatus::Success, None)),
            Ok(raw("a", "late", RunStatus::Running, None)),
        ];
        let mut plan = plan_runs(&items, &[job(1, "a", "UTC")], now());
        let id = Uuid::from_u128(1);
        let rest = plan.stored_already(&[(id, "new".into())]);
        assert_eq!(rest.len(), 3);
        let stored_as = |run_id: &str, status| {
            let mut r = rest
                .iter()
                .find(|(_, r)| r.run_id == run_id)
                .unwrap()
                .1
                .clone();
            r.status = status;
            r.summary = None;
            (id, r)
        };
        let stored = vec![
            stored_as("changed", RunStatus::Running),
            stored_as("same", RunStatus::Success),
            stored_as("late", RunStatus::Success),
        ];
        let write = plan.settle(rest, stored);
        let outcome = &plan.outcome;
        assert_eq!(
            (outcome.inserted, outcome.updated, outcome.skipped),
            (1, 1, 2)
        );
        assert_eq!(write.len(), 1);
        assert_eq!(write[0].1.run_id, "changed");
        assert_eq!(write[0].1.summary.as_deref(), Some("result"));
    }

    #[test]
    fn runs_that_become_failed_tell_cron_run_failed_once() {
        let items = vec![
            Ok(raw("a", "new-failed", RunStatus::Failed, Some("disk full"))),
            Ok(raw("a", "new-ok", RunStatus::Success, None)),
            Ok(raw("a", "now-failed", RunStatus::Failed, None)),
            Ok(raw("a", "again-failed", RunStatus::Failed, Some("still"))),
        ];
        let id = Uuid::from_u128(1);
        let jobs = [job(1, "a", "UTC")];
        let mut plan = plan_runs(&items, &jobs, now());
        let rest = plan.stored_already(&[(id, "new-failed".into()), (id, "new-ok".into())]);
        let stored_as = |run_id: &str, status, summary: Option<&str>| {
            let mut r = rest
                .iter()
                .find(|(_, r)| r.run_id == run_id)
                .unwrap()
                .1
                .clone();
            r.status = status;
            r.summary = summary.map(str::to_owned);
            (id, r)
        };
        let stored = vec![
            stored_as("now-failed", RunStatus::Running, Some("started")),
            stored_as("again-failed", RunStatus::Failed, None),
        ];
        let write = plan.settle(rest, stored);
        assert_eq!(write.len(), 2, "both stored runs change");
        let agent = AgentRef {
            agent_id: Uuid::from_u128(7),
            workspace_id: Uuid::from_u128(8),
            organization_id: Uuid::from_u128(9),
        };
        let events = plan.events(agent, &jobs);
        let told: Vec<(&str, Option<&str>)> = events
            .iter()
            .map(|e| match &e.body {
                EventBody::CronRunFailed(c) => (c.run_id.as_str(), c.summary.as_deref()),
                other => panic!("{other:?}"),
            })
            .collect();
        assert_eq!(
            told,
            [
                ("new-failed", Some("disk full")),
                ("now-failed", Some("started"))
            ],
            "a run failed before tells nothing again; the summary is the one written"
        );
        let e = &events[0];
        assert_eq!(
            (e.workspace_id, e.agent_id, e.object_id),
            (agent.workspace_id, Some(agent.agent_id), id)
        );
        assert_eq!(
            e.body,
            EventBody::CronRunFailed(CronRunFailed {
                job_id: "a".into(),
                job_name: "Job a".into(),
                run_id: "new-failed".into(),
                summary: Some("disk full".into()),
            })
        );
    }
}
