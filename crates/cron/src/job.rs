//! A reported cron job: its limits, its schedule and its zone.

use croner::Cron;
use croner::parser::{CronParser, Seconds, Year};
use jiff::tz::TimeZone;
use jiff::{Timestamp, Zoned};
use serde::{Deserialize, Serialize};

/// Jobs per `report_cron_jobs` request.
pub const MAX_JOBS: usize = 200;
/// `job_id`: 1-120 characters, not only spaces.
pub const JOB_ID_MAX: usize = 120;
/// `name`: 1-200 characters.
pub const NAME_MAX: usize = 200;
/// `schedule`: 1-120 characters.
pub const SCHEDULE_MAX: usize = 120;
/// `timezone`: 1-64 characters.
pub const TIMEZONE_MAX: usize = 64;
/// `gateway`: up to 120 characters.
pub const GATEWAY_MAX: usize = 120;
/// `description`: up to 2000 characters.
pub const DESCRIPTION_MAX: usize = 2000;

/// A job as reported, before its rules are checked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RawJob {
    pub job_id: String,
    pub name: String,
    pub schedule: String,
    pub timezone: String,
    pub gateway: Option<String>,
    pub enabled: bool,
    pub description: Option<String>,
}

/// A job whose every rule holds: what is stored.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Job {
    pub job_id: String,
    pub name: String,
    /// The expression as reported, white space around it removed.
    pub schedule: String,
    /// The IANA name as reported (jiff's database knows it).
    pub timezone: String,
    pub gateway: Option<String>,
    pub enabled: bool,
    pub description: Option<String>,
}

/// Why one job of a report is not stored: the field at fault and the reason.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct JobInvalid {
    /// The item's position in `jobs` (from 0).
    pub index: usize,
    /// The job_id as reported (may itself be the fault).
    pub job_id: String,
    pub field: String,
    pub reason: String,
}

/// An item of a report that cannot be read as a job or a run at all (a field missing, of the
/// wrong type or past its length, a status that is not one of the five, an item that is not an
/// object): what it says of itself, the field at fault and the reason. It is that item's answer
/// (`invalid`), never the request's: one bad item does not refuse the others.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Unreadable {
    /// The item's job_id when it sent one as text (else empty).
    pub job_id: String,
    /// The item's run_id when it sent one as text.
    pub run_id: Option<String>,
    pub field: String,
    pub reason: String,
}

impl JobInvalid {
    /// The answer to the item at `index` that could not be read.
    pub fn unreadable(index: usize, u: &Unreadable) -> JobInvalid {
        JobInvalid {
            index,
            job_id: u.job_id.clone(),
            field: u.field.clone(),
            reason: u.reason.clone(),
        }
    }
}

fn text(
    field: &str,
    raw: &str,
    min: usize,
    max: usize,
) -> Result<Option<String>, (String, String)> {
    let t = raw.trim();
    let n = t.chars().count();
    if n < min || raw.chars().count() > max {
        return Err((
            field.to_owned(),
            if min > 0 {
                format!("must be {min}-{max} characters and not only spaces")
            } else {
                format!("must be at most {max} characters")
            },
        ));
    }
    Ok((n > 0).then(|| t.to_owned()))
}

impl Job {
    /// Checks every rule of a reported job; `index` names the item in the answer.
    pub fn parse(raw: &RawJob, index: usize) -> Result<Job, JobInvalid> {
        Job::check(raw).map_err(|(field, reason)| JobInvalid {
            index,
            job_id: raw.job_id.clone(),
            field,
            reason,
        })
    }

    fn check(raw: &RawJob) -> Result<Job, (String, String)> {
        let job_id = text("job_id", &raw.job_id, 1, JOB_ID_MAX)?.unwrap_or_default();
        let name = text("name", &raw.name, 1, NAME_MAX)?.unwrap_or_default();
        let schedule = text("schedule", &raw.schedule, 1, SCHEDULE_MAX)?.unwrap_or_default();
        let timezone = text("timezone", &raw.timezone, 1, TIMEZONE_MAX)?.unwrap_or_default();
        let parsed = Schedule::parse(&schedule, &timezone).map_err(|(f, r)| (f.to_owned(), r))?;
        if !parsed.ever_fires() {
            return Err(("schedule".to_owned(), "never fires".to_owned()));
        }
        // The database's spelling (`asia/taipei` is stored as `Asia/Taipei`), so one zone is
        // one text in storage and answers.
        let timezone = parsed.zone().iana_name().map_or(timezone, str::to_owned);
        let gateway = match &raw.gateway {
            Some(g) => text("gateway", g, 0, GATEWAY_MAX)?,
            None => None,
        };
        let description = match &raw.description {
            Some(d) => text("description", d, 0, DESCRIPTION_MAX)?,
            None => None,
        };
        Ok(Job {
            job_id,
            name,
            schedule,
            timezone,
            gateway,
            enabled: raw.enabled,
            description,
        })
    }
}

/// A job's schedule: a standard 5-field cron expression (minute hour day-of-month month
/// day-of-week; names like `MON` and `JAN`, `L`, `W`, `#` and the `@daily`-style nicknames as
/// croner reads them), read in an IANA zone.
#[derive(Debug, Clone)]
pub struct Schedule {
    cron: Cron,
    zone: TimeZone,
}

/// Why a job's zone is refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ZoneError {
    /// Empty, or not a name at all (white space, non-ASCII).
    #[error("must be an IANA time zone name such as Asia/Taipei")]
    NotAName,
    /// A name the time zone database does not know (a bare offset or abbreviation included).
    #[error("{0:?} is not an IANA time zone name (such as Asia/Taipei or UTC)")]
    Unknown(String),
}

/// Reads an IANA zone name with jiff's time zone database.
pub fn parse_zone(name: &str) -> Result<TimeZone, ZoneError> {
    let name = name.trim();
    // A bare offset or abbreviation is not a zone of the database.
    if name.is_empty() || !name.chars().all(|c| c.is_ascii_graphic()) {
        return Err(ZoneError::NotAName);
    }
    jiff::tz::db()
        .get(name)
        .map_err(|_| ZoneError::Unknown(name.to_owned()))
}

impl Schedule {
    /// Parses an expression and a zone; the error names the field at fault.
    pub fn parse(expression: &str, zone: &str) -> Result<Schedule, (&'static str, String)> {
        let parser = CronParser::builder()
            .seconds(Seconds::Disallowed)
            .year(Year::Disallowed)
            .build();
        let cron = parser.parse(expression.trim()).map_err(|e| {
            (
                "schedule",
                format!("is not a 5-field cron expression (minute hour day month weekday): {e}"),
            )
        })?;
        let zone = parse_zone(zone).map_err(|e| ("timezone", e.to_string()))?;
        Ok(Schedule { cron, zone })
    }

    /// The zone the expression is read in.
    pub fn zone(&self) -> &TimeZone {
        &self.zone
    }

    /// Whether the expression has any due time (`0 0 31 2 *` has none). Any day of month,
    /// month and weekday that can meet do so within 28 years (the calendar's cycle), so one
    /// search forward from 2000-01-01 answers for every year.
    pub fn ever_fires(&self) -> bool {
        self.next_after(jiff::Timestamp::constant(946_684_800, 0))
            .is_some()
    }

    /// The first due time strictly after `t`, if the expression has one.
    pub fn next_after(&self, t: Timestamp) -> Option<Timestamp> {
        let z = t.to_zoned(self.zone.clone());
        self.cron
            .find_next_occurrence(&z, false)
            .ok()
            .map(|z: Zoned| z.timestamp())
    }

    /// The last due time at or before `t`, if the expression has one.
    pub fn last_at_or_before(&self, t: Timestamp) -> Option<Timestamp> {
        let z = t.to_zoned(self.zone.clone());
        self.cron
            .find_previous_occurrence(&z, true)
            .ok()
            .map(|z: Zoned| z.timestamp())
    }

    /// The last due time strictly before `t`.
    pub fn last_before(&self, t: Timestamp) -> Option<Timestamp> {
        let z = t.to_zoned(self.zone.clone());
        self.cron
            .find_previous_occurrence(&z, false)
            .ok()
            .map(|z: Zoned| z.timestamp())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn raw() -> RawJob {
        RawJob {
            job_id: "backup".into(),
            name: "Nightly backup".into(),
            schedule: "30 2 * * *".into(),
            timezone: "Asia/Taipei".into(),
            gateway: Some("openclaw".into()),
            enabled: true,
            description: None,
        }
    }

    fn field_of(r: RawJob) -> String {
        Job::parse(&r, 0).unwrap_err().field
    }

    #[test]
    fn a_good_job_parses_and_is_trimmed() {
        let mut r = raw();
        r.job_id = "  backup ".into();
        r.gateway = Some("  ".into());
        let j = Job::parse(&r, 0).unwrap();
        assert_eq!(j.job_id, "backup");
        assert_eq!(j.gateway, None);
    }

    #[test]
    fn schedules_must_be_five_field_cron() {
        for bad in [
            "",
            "* * * *",
            "0 0 * * * *",
            "61 * * * *",
            "hello",
            "0 0 * * * * *",
        ] {
            let mut r = raw();
            r.schedule = bad.into();
            assert_eq!(field_of(r), "schedule", "{bad:?}");
        }
        for never in ["0 0 31 2 *", "0 0 30 2 *", "0 0 31 4,6,9,11 *"] {
            let mut r = raw();
            r.schedule = never.into();
            let e = Job::parse(&r, 0).unwrap_err();
            assert_eq!(
                (e.field.as_str(), e.reason.as_str()),
                ("schedule", "never fires"),
                "{never:?}"
            );
        }
        for good in [
            "*/5 * * * *",
            "0 9 * * MON-FRI",
            "@daily",
            "0 0 L * *",
            "0 0 29 2 *",
            "0 0 29 2 MON",
        ] {
            let mut r = raw();
            r.schedule = good.into();
            assert!(Job::parse(&r, 0).is_ok(), "{good:?}");
        }
    }

    #[test]
    fn zones_are_stored_as_the_database_spells_them() {
        let mut r = raw();
        r.timezone = "asia/taipei".into();
        assert_eq!(Job::parse(&r, 0).unwrap().timezone, "Asia/Taipei");
        r.timezone = "utc".into();
        assert_eq!(Job::parse(&r, 0).unwrap().timezone, "UTC");
    }

    #[test]
    fn zones_must_be_iana() {
        for bad in ["", "Mars/Olympus", "+08:00", "CST8", "Asia/Taipei "] {
            let mut r = raw();
            r.timezone = bad.into();
            // A name with spaces around it is trimmed first; only the first four are wrong.
            if bad == "Asia/Taipei " {
                assert!(Job::parse(&r, 0).is_ok());
                continue;
            }
            assert_eq!(field_of(r), "timezone", "{bad:?}");
        }
        for good in ["UTC", "America/New_York", "Europe/London"] {
            let mut r = raw();
            r.timezone = good.into();
            assert!(Job::parse(&r, 0).is_ok(), "{good:?}");
        }
    }

    #[test]
    fn limits_at_and_one_past() {
        let mut r = raw();
        r.job_id = "j".repeat(JOB_ID_MAX);
        r.name = "n".repeat(NAME_MAX);
        r.description = Some("d".repeat(DESCRIPTION_MAX));
        r.gateway = Some("g".repeat(GATEWAY_MAX));
        assert!(Job::parse(&r, 0).is_ok());
        let mut r1 = r.clone();
        r1.job_id.push('j');
        assert_eq!(field_of(r1), "job_id");
        let mut r2 = r.clone();
        r2.name.push('n');
        assert_eq!(field_of(r2), "name");
        let mut r3 = r.clone();
        r3.description = Some("d".repeat(DESCRIPTION_MAX + 1));
        assert_eq!(field_of(r3), "description");
        let mut r4 = r;
        r4.gateway = Some("g".repeat(GATEWAY_MAX + 1));
        assert_eq!(field_of(r4), "gateway");
        let mut r5 = raw();
        r5.job_id = "   ".into();
        assert_eq!(field_of(r5), "job_id");
    }
}

/// Checks every job of a report: the jobs to store and the invalid items. A job_id listed
/// twice keeps its last listing; the earlier ones are invalid (`job_id`: listed again).
/// An item that could not be read at all is invalid with its reason; the others are checked.
pub fn check_jobs(raw: &[Result<RawJob, Unreadable>]) -> (Vec<Job>, Vec<JobInvalid>) {
    let mut jobs: Vec<(usize, Job)> = Vec::new();
    let mut invalid = Vec::new();
    for (i, r) in raw.iter().enumerate() {
        let r = match r {
            Ok(r) => r,
            Err(u) => {
                invalid.push(JobInvalid::unreadable(i, u));
                continue;
            }
        };
        match Job::parse(r, i) {
            Ok(j) => {
                if let Some(pos) = jobs.iter().position(|(_, k)| k.job_id == j.job_id) {
                    let (earlier, _) = jobs.remove(pos);
                    invalid.push(JobInvalid {
                        index: earlier,
                        job_id: j.job_id.clone(),
                        field: "job_id".to_owned(),
                        reason: format!("listed again at index {i}; the last listing is stored"),
                    });
                }
                jobs.push((i, j));
            }
            Err(e) => invalid.push(e),
        }
    }
    invalid.sort_by_key(|e| e.index);
    (jobs.into_iter().map(|(_, j)| j).collect(), invalid)
}

#[cfg(test)]
mod batch_tests {
    use super::*;

    #[test]
    fn a_repeated_job_id_keeps_the_last() {
        let j = |id: &str, name: &str| RawJob {
            job_id: id.into(),
            name: name.into(),
            schedule: "@hourly".into(),
            timezone: "UTC".into(),
            gateway: None,
            enabled: true,
            description: None,
        };
        let (jobs, invalid) = check_jobs(&[Ok(j("a", "one")), Ok(j("b", "b")), Ok(j("a", "two"))]);
        assert_eq!(jobs.len(), 2);
        assert_eq!(jobs[1].name, "two");
        assert_eq!(invalid.len(), 1);
        assert_eq!(invalid[0].index, 0);
    }

    #[test]
    fn an_unreadable_item_is_invalid_and_the_others_are_stored() {
        let j = |id: &str| RawJob {
            job_id: id.into(),
            name: id.into(),
            schedule: "@hourly".into(),
            timezone: "UTC".into(),
            gateway: None,
            enabled: true,
            description: None,
        };
        let no_id = Unreadable {
            job_id: String::new(),
            run_id: None,
            field: "job_id".into(),
            reason: "is required".into(),
        };
        let (jobs, invalid) = check_jobs(&[Ok(j("a")), Err(no_id), Ok(j("b"))]);
        let ids: Vec<&str> = jobs.iter().map(|j| j.job_id.as_str()).collect();
        assert_eq!(ids, ["a", "b"]);
        assert_eq!(
            invalid,
            [JobInvalid {
                index: 1,
                job_id: String::new(),
                field: "job_id".into(),
                reason: "is required".into(),
            }]
        );
    }
}
