//! A reported run: its status, its times read in the job's zone, its default run_id, its
//! summary and log.

use crate::redact::redact_secrets;
use fleetdesk_kernel::time::{format_utc, parse_time_input};
use jiff::Timestamp;
use jiff::civil::DateTime;
use jiff::tz::TimeZone;
use serde::{Deserialize, Serialize};

/// Runs per `report_cron_run` request.
pub const MAX_RUNS: usize = 100;
/// A run_id given by the agent: 1-200 characters.
pub const RUN_ID_MAX: usize = 200;
/// `summary`: up to 2000 characters (the heartbeat's limit).
pub const SUMMARY_MAX: usize = 2000;
/// The log is stored up to this many characters: its last ones, where a failure shows.
pub const LOG_MAX: usize = 20_000;
/// A time field as sent: at most this many characters (longer is refused).
pub const TIME_MAX: usize = 40;

fleetdesk_kernel::text_enum! {
    /// What a run reports.
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
    #[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
    #[serde(rename_all = "lowercase")]
    pub enum RunStatus {
        Success => "success",
        Failed => "failed",
        Skipped => "skipped",
        Running => "running",
        Unknown => "unknown",
    }
}

impl RunStatus {
    /// A run still going: a later report of the same run_id gives its result.
    pub fn is_final(self) -> bool {
        self != RunStatus::Running
    }
}

/// A run as reported.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RawRun {
    pub job_id: String,
    pub run_id: Option<String>,
    pub started_at: Option<String>,
    pub finished_at: Option<String>,
    pub status: RunStatus,
    pub summary: Option<String>,
    pub log: Option<String>,
}

/// A run read and checked: what is stored.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Run {
    pub job_id: String,
    pub run_id: String,
    pub started_at: Option<Timestamp>,
    pub finished_at: Option<Timestamp>,
    pub status: RunStatus,
    pub summary: Option<String>,
    pub log: Option<String>,
}

/// Why a run is not stored.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RunProblem {
    /// A time that cannot be read (`refused` in the answer).
    Refused { field: &'static str, reason: String },
    /// Any other rule (`invalid` in the answer).
    Invalid { field: &'static str, reason: String },
}

/// The run_id used when a run gives none: `<job_id>@<started_at in UTC, whole seconds>`, e.g.
/// `backup@2026-11-25T02:30:00Z`.
pub fn default_run_id(job_id: &str, started_at: Timestamp) -> String {
    format!("{job_id}@{}", format_utc(started_at))
}

/// Reads a run time: ISO 8601 with a zone, or a time without zone (`YYYY-MM-DD HH:MM[:SS]`
/// or `YYYY-MM-DDTHH:MM:SS[.fff]`) read in the job's zone; null or an empty string means none.
pub fn read_time(raw: Option<&str>, zone: &TimeZone) -> Result<Option<Timestamp>, String> {
    let Some(raw) = raw else { return Ok(None) };
    let t = raw.trim();
    if t.is_empty() {
        return Ok(None);
    }
    if raw.chars().count() > TIME_MAX {
        return Err(format!("must be at most {TIME_MAX} characters"));
    }
    match parse_time_input(t, zone) {
        Ok(ts) => Ok(Some(ts)),
        Err(first) => {
            // ISO without zone: the job's wall clock.
            let civil: DateTime = t.parse().map_err(|_| first.to_string())?;
            if !(2000..=2099).contains(&civil.year()) {
                return Err(first.to_string());
            }
            zone.to_ambiguous_zoned(civil)
                .unambiguous()
                .map(|z| Some(z.timestamp()))
                .map_err(|_| {
                    format!(
                        "names a local time that does not exist or is ambiguous in {}",
                        zone.iana_name().unwrap_or("the job's zone")
                    )
                })
        }
    }
}

/// Trims the log and keeps its last [`LOG_MAX`] characters.
pub fn keep_log(log: &str) -> String {
    let t = log.trim();
    let n = t.chars().count();
    if n <= LOG_MAX {
        return t.to_owned();
    }
    let skip = t
        .char_indices()
        .nth(n - LOG_MAX)
        .map_or(t.len(), |(i, _)| i);
    t[skip..].to_owned()
}

fn blank_to_none(s: Option<&str>) -> Option<&str> {
    s.map(str::trim).filter(|s| !s.is_empty())
}

impl Run {
    /// Reads a reported run whose job is in `zone`.
    pub fn read(raw: &RawRun, zone: &TimeZone) -> Result<Run, RunProblem> {
        let refused = |field, reason| RunProblem::Refused { field, reason };
        let invalid = |field, reason: &str| RunProblem::Invalid {
            field,
            reason: reason.to_owned(),
        };
        let started_at = read_time(raw.started_at.as_deref(), zone)
            .map_err(|r| refused("started_at", r))?;
        let finished_at = read_time(raw.finished_at.as_deref(), zone)
            .map_err(|r| refused("finished_at", r))?;
        if let (Some(s), Some(f)) = (started_at, finished_at)
            && f < s
        {
            return Err(invalid("finished_at", "is before started_at"));
        }
        let run_id = match blank_to_none(raw.run_id.as_deref()) {
            Some(id) if id.chars().count() > RUN_ID_MAX => {
                return Err(invalid("run_id", "must be at most 200 characters"));
            }
            Some(id) => id.to_owned(),
            None => match started_at {
                Some(s) => default_run_id(raw.job_id.trim(), s),
                None => {
                    return Err(invalid(
                        "run_id",
                        "is required when started_at is absent (it defaults to job_id@started_at)",
                    ));
                }
            },
        };
        let summary = match blank_to_none(raw.summary.as_deref()) {
            Some(s) if s.chars().count() > SUMMARY_MAX => {
                return Err(invalid("summary", "must be at most 2000 characters"));
            }
            s => s.map(redact_secrets),
        };
        let log = blank_to_none(raw.log.as_deref()).map(|l| redact_secrets(&keep_log(l)));
        Ok(Run {
            job_id: raw.job_id.trim().to_owned(),
            run_id,
            started_at,
            finished_at,
            status: raw.status,
            summary,
            log,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn taipei() -> TimeZone {
        jiff::tz::db().get("Asia/Taipei").unwrap()
    }

    fn raw() -> RawRun {
        RawRun {
            job_id: "backup".into(),
            run_id: None,
            started_at: Some("2026-11-25 10:00".into()),
            finished_at: Some("".into()),
            status: RunStatus::Running,
            summary: None,
            log: None,
        }
    }

    #[test]
    fn times_without_zone_are_read_in_the_jobs_zone() {
        let r = Run::read(&raw(), &taipei()).unwrap();
        assert_eq!(
            r.started_at.unwrap(),
            "2026-11-25T02:00:00Z".parse::<Timestamp>().unwrap()
        );
        assert_eq!(r.finished_at, None);
        assert_eq!(r.run_id, "backup@2026-11-25T02:00:00Z");
        let mut iso = raw();
        iso.started_at = Some("2026-11-25T10:00:00".into());
        assert_eq!(Run::read(&iso, &taipei()).unwrap().run_id, r.run_id);
        let mut zoned = raw();
        zoned.started_at = Some("2026-11-25T10:00:00+00:00".into());
        assert_eq!(
            Run::read(&zoned, &taipei()).unwrap().run_id,
            "backup@2026-11-25T10:00:00Z"
        );
    }

    #[test]
    fn bad_times_are_refused() {
        for bad in ["yesterday", "2026-13-01 10:00", "2026-11-25 25:00", "1999-01-01 10:00"] {
            let mut r = raw();
            r.started_at = Some(bad.into());
            assert!(
                matches!(
                    Run::read(&r, &taipei()),
                    Err(RunProblem::Refused {
                        field: "started_at",
                        ..
                    })
                ),
                "{bad}"
            );
        }
        // A wall-clock time the zone skips.
        let ny = jiff::tz::db().get("America/New_York").unwrap();
        let mut gap = raw();
        gap.started_at = Some("2026-03-08 02:30".into());
        assert!(matches!(
            Run::read(&gap, &ny),
            Err(RunProblem::Refused { .. })
        ));
    }

    #[test]
    fn run_id_needs_a_start_and_finish_follows_start() {
        let mut r = raw();
        r.started_at = None;
        assert!(matches!(
            Run::read(&r, &taipei()),
            Err(RunProblem::Invalid { field: "run_id", .. })
        ));
        r.run_id = Some("r1".into());
        assert_eq!(Run::read(&r, &taipei()).unwrap().run_id, "r1");
        let mut back = raw();
        back.finished_at = Some("2026-11-25 09:00".into());
        assert!(matches!(
            Run::read(&back, &taipei()),
            Err(RunProblem::Invalid {
                field: "finished_at",
                ..
            })
        ));
    }

    #[test]
    fn log_keeps_its_last_20000_characters() {
        let exact = "é".repeat(LOG_MAX);
        assert_eq!(keep_log(&exact), exact);
        let long = format!("X{}", "é".repeat(LOG_MAX));
        assert_eq!(keep_log(&long), exact);
        assert_eq!(keep_log("  a \n"), "a");
    }

    #[test]
    fn summary_limit_and_redaction() {
        let mut r = raw();
        r.summary = Some("s".repeat(SUMMARY_MAX));
        assert!(Run::read(&r, &taipei()).is_ok());
        r.summary = Some("s".repeat(SUMMARY_MAX + 1));
        assert!(matches!(
            Run::read(&r, &taipei()),
            Err(RunProblem::Invalid { field: "summary", .. })
        ));
        r.summary = Some("called with Authorization: Bearer abc.def".into());
        r.log = Some("Set-Cookie: sid=123; Path=/\nok".into());
        let run = Run::read(&r, &taipei()).unwrap();
        assert!(!run.summary.unwrap().contains("abc.def"));
        assert!(!run.log.unwrap().contains("sid=123"));
    }
}
