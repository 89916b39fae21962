//! Which jobs a person should look at: a job whose last run failed, and a job that missed its
//! schedule.
//!
//! Missed schedule: the job is enabled, and for the last due time `d` whose whole period has
//! passed (the next due time after `d` is at or before now), no run started at or after
//! `d - SKEW` — and the job was already reported at `d` (a job reported later has not had the
//! chance). Due times come from the expression in the job's zone, so daylight saving changes
//! move them as the job's own scheduler would. A run's time is its `started_at`, else
//! `finished_at`, else when it was reported.

use crate::job::Schedule;
use crate::run::RunStatus;
use jiff::{SignedDuration, Timestamp};
use serde::Serialize;

/// A run started this long before its due time still counts for it (clocks differ).
pub const SKEW: SignedDuration = SignedDuration::from_secs(60);

/// The latest run of a job.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LatestRun {
    pub status: RunStatus,
    /// started_at, else finished_at, else when it was reported.
    pub at: Timestamp,
}

/// A job's health.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct JobHealth {
    /// Its latest run failed.
    pub failed: bool,
    /// The due time that passed without a run (ISO UTC); null when none was missed.
    #[serde(with = "fleetdesk_kernel::time::utc::option")]
    #[cfg_attr(feature = "openapi", schema(value_type = Option<String>))]
    pub missed_due_at: Option<Timestamp>,
}

impl JobHealth {
    pub fn needs_attention(&self) -> bool {
        self.failed || self.missed_due_at.is_some()
    }
}

/// The health of one job at `now`. `reported_at` is when the job was first reported;
/// `latest` its latest run (by time), if any. A schedule that does not parse (stored before a
/// rule changed) is never called missed.
pub fn health(
    schedule: Option<&Schedule>,
    enabled: bool,
    reported_at: Timestamp,
    latest: Option<LatestRun>,
    now: Timestamp,
) -> JobHealth {
    let failed = latest.is_some_and(|r| r.status == RunStatus::Failed);
    let missed_due_at = schedule
        .filter(|_| enabled)
        .and_then(|s| missed(s, reported_at, latest.map(|r| r.at), now));
    JobHealth {
        failed,
        missed_due_at,
    }
}

fn missed(
    s: &Schedule,
    reported_at: Timestamp,
    latest: Option<Timestamp>,
    now: Timestamp,
) -> Option<Timestamp> {
    // The last due time at or before now closes the period of the one before it.
    let closing = s.last_at_or_before(now)?;
    let due = s.last_before(closing)?;
    if reported_at > due {
        return None;
    }
    let counted_from = due.checked_sub(SKEW).unwrap_or(due);
    match latest {
        Some(at) if at >= counted_from => None,
        _ => Some(due),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ts(s: &str) -> Timestamp {
        s.parse().unwrap()
    }

    fn sched(expr: &str, zone: &str) -> Schedule {
        Schedule::parse(expr, zone).unwrap()
    }

    fn run(at: &str, status: RunStatus) -> Option<LatestRun> {
        Some(LatestRun { status, at: ts(at) })
    }

    const LONG_AGO: &str = "2026-01-01T00:00:00Z";

    #[test]
    fn a_failed_last_run_is_flagged() {
        let s = sched("0 * * * *", "UTC");
        let h = health(
            Some(&s),
            true,
            ts(LONG_AGO),
            run("2026-11-25T10:00:05Z", RunStatus::Failed),
            ts("2026-11-25T10:30:00Z"),
        );
        assert!(h.failed);
        assert_eq!(h.missed_due_at, None);
        let ok = health(
            Some(&s),
            true,
            ts(LONG_AGO),
            run("2026-11-25T10:00:05Z", RunStatus::Success),
            ts("2026-11-25T10:30:00Z"),
        );
        assert!(!ok.needs_attention());
    }

    #[test]
    fn an_hourly_job_misses_when_a_whole_period_passes() {
        let s = sched("0 * * * *", "UTC");
        // Last ran at 09:00; at 10:30 the 10:00 period is not over yet.
        let last = run("2026-11-25T09:00:10Z", RunStatus::Success);
        let now = ts("2026-11-25T10:30:00Z");
        assert_eq!(
            health(Some(&s), true, ts(LONG_AGO), last, now).missed_due_at,
            None
        );
        // At 11:00 the 10:00 period is over without a run.
        let later = ts("2026-11-25T11:00:00Z");
        assert_eq!(
            health(Some(&s), true, ts(LONG_AGO), last, later).missed_due_at,
            Some(ts("2026-11-25T10:00:00Z"))
        );
        // A run a few seconds early still counts.
        let early = run("2026-11-25T09:59:30Z", RunStatus::Success);
        assert_eq!(
            health(Some(&s), true, ts(LONG_AGO), early, later).missed_due_at,
            None
        );
    }

    #[test]
    fn disabled_jobs_never_miss() {
        let s = sched("0 * * * *", "UTC");
        let h = health(
            Some(&s),
            false,
            ts(LONG_AGO),
            None,
            ts("2026-11-25T11:00:00Z"),
        );
        assert!(!h.needs_attention());
    }

    #[test]
    fn never_run_jobs_miss_once_a_period_passed_since_reported() {
        let s = sched("30 2 * * *", "Asia/Taipei");
        // Reported at 2026-11-25 10:00 Taipei; the next due is 11-26 02:30, its period ends
        // 11-27 02:30.
        let reported = ts("2026-11-25T02:00:00Z");
        let h = health(Some(&s), true, reported, None, ts("2026-11-26T12:00:00Z"));
        assert_eq!(h.missed_due_at, None);
        let h = health(Some(&s), true, reported, None, ts("2026-11-26T18:30:00Z"));
        assert_eq!(h.missed_due_at, Some(ts("2026-11-25T18:30:00Z")));
        // Unparseable schedules are never called missed.
        assert!(!health(None, true, reported, None, ts("2026-12-31T00:00:00Z")).needs_attention());
    }

    #[test]
    fn daylight_saving_moves_due_times_with_the_zone() {
        let s = sched("0 9 * * *", "America/New_York");
        // 2026-03-08: clocks spring forward; 09:00 is 13:00Z after, 14:00Z before.
        let before = run("2026-03-07T14:00:20Z", RunStatus::Success);
        let after = run("2026-03-08T13:00:20Z", RunStatus::Success);
        // 2026-03-09 10:00 local (14:00Z): the 03-08 09:00 period is over.
        let now = ts("2026-03-09T14:00:00Z");
        assert_eq!(
            health(Some(&s), true, ts(LONG_AGO), after, now).missed_due_at,
            None
        );
        assert_eq!(
            health(Some(&s), true, ts(LONG_AGO), before, now).missed_due_at,
            Some(ts("2026-03-08T13:00:00Z"))
        );
        // In UTC the run at 13:00:20Z on 03-08 would look an hour early for a 14:00Z job.
        let utc = sched("0 14 * * *", "UTC");
        assert_eq!(
            health(Some(&utc), true, ts(LONG_AGO), after, now).missed_due_at,
            Some(ts("2026-03-08T14:00:00Z"))
        );
    }

    #[test]
    fn a_due_time_in_a_skipped_hour_still_has_a_period() {
        // 02:30 does not exist on 2026-03-08 in New York; whatever croner picks for that day,
        // a run at each due time it computes is never called missed.
        let s = sched("30 2 * * *", "America/New_York");
        let mut t = ts("2026-03-05T00:00:00Z");
        for _ in 0..6 {
            let due = s.next_after(t).unwrap();
            let now = s.next_after(due).unwrap();
            let h = health(
                Some(&s),
                true,
                ts(LONG_AGO),
                Some(LatestRun {
                    status: RunStatus::Success,
                    at: due,
                }),
                now,
            );
            assert_eq!(h.missed_due_at, None, "due {due}");
            t = due;
        }
    }
}
