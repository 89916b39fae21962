//! A reported run: its status, its times read in the job's zone, its default run_id, its
//! summary and log.

use crate::redact::redact_secrets;
use fleetdesk_kernel::TimeInputError;
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
/// How far ahead of the service's clock a run time may be: clocks drift and zones get
/// misread, but a run a day ahead is a wrong time, refused rather than shown as the latest run
/// (the day view orders runs by their time) for days.
pub const FUTURE_SKEW: jiff::SignedDuration = jiff::SignedDuration::from_hours(24);
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

/// `YYYY-MM-DD[T ]HH:MM(:SS(.f{1,9})?)?` and nothing after: a wall-clock time without zone.
/// Anything else (an offset, a `[zone]`, a date alone) is not one.
fn is_civil_shape(t: &str) -> bool {
    let b = t.as_bytes();
    let digits = |r: &[u8]| r.iter().all(u8::is_ascii_digit);
    if b.len() < 16
        || !digits(&b[..4])
        || b[4] != b'-'
        || !digits(&b[5..7])
        || b[7] != b'-'
        || !digits(&b[8..10])
        || !matches!(b[10], b'T' | b' ')
        || !digits(&b[11..13])
        || b[13] != b':'
        || !digits(&b[14..16])
    {
        return false;
    }
    let rest = &b[16..];
    if rest.is_empty() {
        return true;
    }
    if rest.len() < 3 || rest[0] != b':' || !digits(&rest[1..3]) {
        return false;
    }
    match &rest[3..] {
        [] => true,
        [b'.', frac @ ..] => (1..=9).contains(&frac.len()) && digits(frac),
        _ => false,
    }
}

/// Why a run's time is refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RunTimeError {
    #[error("must be at most {TIME_MAX} characters")]
    TooLong,
    /// Neither a time input nor a time without zone.
    #[error("{0}")]
    Unreadable(TimeInputError),
    /// A time without zone that the job's zone skips or repeats.
    #[error("names a local time that does not exist or is ambiguous in {0}")]
    Gap(String),
}

/// Reads a run time: ISO 8601 with a zone (what the kernel's time input reads), or exactly
/// `YYYY-MM-DD[T ]HH:MM[:SS[.f]]` without zone, read in the job's zone; null or an empty
/// string means none. A time with an offset the kernel refuses (`+0800`, `[Asia/Tokyo]`, a
/// space before the offset) is refused, never read as the job's wall clock.
pub fn read_time(raw: Option<&str>, zone: &TimeZone) -> Result<Option<Timestamp>, RunTimeError> {
    let Some(raw) = raw else { return Ok(None) };
    let t = raw.trim();
    if t.is_empty() {
        return Ok(None);
    }
    if raw.chars().count() > TIME_MAX {
        return Err(RunTimeError::TooLong);
    }
    match parse_time_input(t, zone) {
        Ok(ts) => Ok(Some(ts)),
        Err(first) => {
            if !is_civil_shape(t) {
                return Err(RunTimeError::Unreadable(first));
            }
            // ISO without zone: the job's wall clock.
            let civil: DateTime = t
                .replacen(' ', "T", 1)
                .parse()
                .map_err(|_| RunTimeError::Unreadable(first.clone()))?;
            if !(2000..=2099).contains(&civil.year()) {
                return Err(RunTimeError::Unreadable(first));
            }
            zone.to_ambiguous_zoned(civil)
                .unambiguous()
                .map(|z| Some(z.timestamp()))
                .map_err(|_| {
                    RunTimeError::Gap(zone.iana_name().unwrap_or("the job's zone").to_owned())
                })
        }
    }
}

/// Trims the log, replaces its credentials, then keeps its last [`LOG_MAX`] characters: in
/// that order, so a credential across the cut is still replaced and the stored log never
/// grows past the limit by the replacement.
pub fn keep_log(log: &str) -> String {
    let redacted = redact_secrets(log.trim());
    let t = redacted.trim();
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
    /// Reads a reported run whose job is in `zone`, at `now`.
    pub fn read(raw: &RawRun, zone: &TimeZone, now: Timestamp) -> Result<Run, RunProblem> {
        let refused = |field, reason| RunProblem::Refused { field, reason };
        let invalid = |field, reason: &str| RunProblem::Invalid {
            field,
            reason: reason.to_owned(),
        };
        let started_at = read_time(raw.started_at.as_deref(), zone)
            .map_err(|r| refused("started_at", r.to_string()))?;
        let finished_at = read_time(raw.finished_at.as_deref(), zone)
            .map_err(|r| refused("finished_at", r.to_string()))?;
        let latest = now.checked_add(FUTURE_SKEW).unwrap_or(now);
        for (field, t) in [("started_at", started_at), ("finished_at", finished_at)] {
            if t.is_some_and(|t| t > latest) {
                return Err(refused(field, "is more than 1 day ahead of now".to_owned()));
            }
        }
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
        let log = blank_to_none(raw.log.as_deref()).map(keep_log);
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
    use crate::redact::REDACTED;

    fn now() -> Timestamp {
        "2026-11-25T12:00:00Z".parse().unwrap()
    }

    #[test]
    fn times_over_a_day_ahead_are_refused() {
        let mut r = raw();
        r.started_at = Some("2026-11-26T12:00:00Z".into());
        assert!(Run::read(&r, &taipei(), now()).is_ok());
        r.started_at = Some("2026-11-26T12:00:01Z".into());
        assert!(matches!(
            Run::read(&r, &taipei(), now()),
            Err(RunProblem::Refused {
                field: "started_at",
                ..
            })
        ));
        let mut f = raw();
        f.finished_at = Some("2026-11-27 10:00".into());
        assert!(matches!(
            Run::read(&f, &taipei(), now()),
            Err(RunProblem::Refused {
                field: "finished_at",
                ..
            })
        ));
    }

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
        let r = Run::read(&raw(), &taipei(), now()).unwrap();
        assert_eq!(
            r.started_at.unwrap(),
            "2026-11-25T02:00:00Z".parse::<Timestamp>().unwrap()
        );
        assert_eq!(r.finished_at, None);
        assert_eq!(r.run_id, "backup@2026-11-25T02:00:00Z");
        let mut iso = raw();
        iso.started_at = Some("2026-11-25T10:00:00".into());
        assert_eq!(Run::read(&iso, &taipei(), now()).unwrap().run_id, r.run_id);
        let mut zoned = raw();
        zoned.started_at = Some("2026-11-25T10:00:00+00:00".into());
        assert_eq!(
            Run::read(&zoned, &taipei(), now()).unwrap().run_id,
            "backup@2026-11-25T10:00:00Z"
        );
        for civil in [
            "2026-11-25T10:00",
            "2026-11-25 10:00:00.5",
            "2026-11-25T10:00:00.123456789",
        ] {
            let mut r = raw();
            r.started_at = Some(civil.into());
            assert_eq!(
                Run::read(&r, &taipei(), now()).unwrap().run_id,
                "backup@2026-11-25T02:00:00Z",
                "{civil}"
            );
        }
    }

    #[test]
    fn bad_times_are_refused() {
        for bad in [
            "yesterday",
            "2026-13-01 10:00",
            "2026-11-25 25:00",
            "1999-01-01 10:00",
            // An offset or zone the kernel does not read is refused, not read as wall clock.
            "2026-11-25 10:00:00+08:00",
            "2026-11-25T10:00+08:00",
            "2026-11-25T10:00:00+0800",
            "2026-11-25T10:00:00[Asia/Tokyo]",
            "2026-11-25T10:00:00+09:00[Asia/Tokyo]",
            "2026-11-25 10:00 +08:00",
            "2026-11-25",
            "2026-11-25T10",
            "2026-11-25T10:00:00.",
            "2026-11-25T10:00:00.1234567890",
        ] {
            let mut r = raw();
            r.started_at = Some(bad.into());
            assert!(
                matches!(
                    Run::read(&r, &taipei(), now()),
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
            Run::read(&gap, &ny, now()),
            Err(RunProblem::Refused { .. })
        ));
    }

    #[test]
    fn run_id_needs_a_start_and_finish_follows_start() {
        let mut r = raw();
        r.started_at = None;
        assert!(matches!(
            Run::read(&r, &taipei(), now()),
            Err(RunProblem::Invalid {
                field: "run_id",
                ..
            })
        ));
        r.run_id = Some("r1".into());
        assert_eq!(Run::read(&r, &taipei(), now()).unwrap().run_id, "r1");
        let mut back = raw();
        back.finished_at = Some("2026-11-25 09:00".into());
        assert!(matches!(
            Run::read(&back, &taipei(), now()),
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
    fn log_is_redacted_before_it_is_cut() {
        // A secret straddling the cut: only its tail would be kept, unrecognised.
        let secret = "token=supersecretvalue123";
        let tail = "x".repeat(LOG_MAX - 10);
        let log = format!("start {secret}\n{tail}");
        let kept = keep_log(&log);
        assert!(!kept.contains("value123"), "{}", &kept[..40]);
        assert!(kept.chars().count() <= LOG_MAX);
        // Replacement longer than the value: the stored log still fits.
        let grows = "token=a\n".repeat(LOG_MAX / 8 + 1);
        let kept = keep_log(&grows);
        assert!(kept.chars().count() <= LOG_MAX, "{}", kept.chars().count());
        assert!(kept.ends_with(REDACTED));
    }

    #[test]
    fn summary_limit_and_redaction() {
        let mut r = raw();
        r.summary = Some("s".repeat(SUMMARY_MAX));
        assert!(Run::read(&r, &taipei(), now()).is_ok());
        r.summary = Some("s".repeat(SUMMARY_MAX + 1));
        assert!(matches!(
            Run::read(&r, &taipei(), now()),
            Err(RunProblem::Invalid {
                field: "summary",
                ..
            })
        ));
        r.summary = Some("called with Authorization: Bearer abc.def.ghi".into());
        r.log = Some("Set-Cookie: sid=123; Path=/\nok".into());
        let run = Run::read(&r, &taipei(), now()).unwrap();
        assert!(!run.summary.unwrap().contains("abc.def.ghi"));
        assert!(!run.log.unwrap().contains("sid=123"));
    }
}

/// What a reported run does to the stored one of the same run_id.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Merge {
    /// No run of that run_id yet.
    Insert,
    /// The stored run becomes this.
    Update(Run),
    /// Nothing changes: the same report again, or `running` after the run's result.
    Skip,
}

/// Merges a report into the stored run of the same run_id: a field the report leaves out
/// keeps its stored value; a `running` report never replaces a result.
pub fn merge(stored: Option<&Run>, new: &Run) -> Merge {
    let Some(old) = stored else {
        return Merge::Insert;
    };
    if old.status.is_final() && !new.status.is_final() {
        return Merge::Skip;
    }
    let merged = Run {
        job_id: old.job_id.clone(),
        run_id: old.run_id.clone(),
        started_at: new.started_at.or(old.started_at),
        finished_at: new.finished_at.or(old.finished_at),
        status: new.status,
        summary: new.summary.clone().or_else(|| old.summary.clone()),
        log: new.log.clone().or_else(|| old.log.clone()),
    };
    if &merged == old {
        Merge::Skip
    } else {
        Merge::Update(merged)
    }
}

/// Of several reports of one run_id in one request, the one that stands: the last with a
/// result, else the last. Positions into `runs`.
pub fn winner(runs: &[&Run]) -> usize {
    runs.iter()
        .rposition(|r| r.status.is_final())
        .unwrap_or(runs.len() - 1)
}

#[cfg(test)]
mod merge_tests {
    use super::*;

    fn run(status: RunStatus, summary: Option<&str>) -> Run {
        Run {
            job_id: "j".into(),
            run_id: "r".into(),
            started_at: Some("2026-11-25T02:00:00Z".parse().unwrap()),
            finished_at: None,
            status,
            summary: summary.map(str::to_owned),
            log: None,
        }
    }

    #[test]
    fn running_then_result() {
        let running = run(RunStatus::Running, None);
        assert_eq!(merge(None, &running), Merge::Insert);
        let done = run(RunStatus::Success, Some("ok"));
        assert_eq!(merge(Some(&running), &done), Merge::Update(done.clone()));
        assert_eq!(merge(Some(&done), &running), Merge::Skip);
        assert_eq!(merge(Some(&done), &done), Merge::Skip);
        // A report without summary keeps the stored one.
        let failed = run(RunStatus::Failed, None);
        let Merge::Update(m) = merge(Some(&done), &failed) else {
            panic!()
        };
        assert_eq!(m.summary.as_deref(), Some("ok"));
        assert_eq!(winner(&[&done, &running]), 0);
        assert_eq!(winner(&[&running, &running]), 1);
    }
}
