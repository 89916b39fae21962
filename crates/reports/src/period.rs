//! The period a report covers: whole days of Asia/Taipei, at most [`MAX_DAYS`], and the week
//! the Monday build covers.

use jiff::civil::{Date, Weekday};
use jiff::tz::TimeZone;
use jiff::{Timestamp, ToSpan};

/// The zone of report days and weeks: the service's home market.
pub const ZONE: &str = "Asia/Taipei";

/// The longest period a report covers, in days (as GET /metrics).
pub const MAX_DAYS: i32 = 92;

fn zone() -> TimeZone {
    TimeZone::get(ZONE).unwrap_or_else(|_| TimeZone::fixed(jiff::tz::offset(8)))
}

/// Why a period is refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PeriodError {
    #[error("from ({from}) is after to ({to})")]
    Reversed { from: Date, to: Date },
    #[error("the period is {days} days; at most {MAX_DAYS}")]
    TooLong { days: i32 },
}

/// Days `from` to `to`, both included, of Asia/Taipei.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Period {
    from: Date,
    to: Date,
}

impl Period {
    pub fn new(from: Date, to: Date) -> Result<Period, PeriodError> {
        if from > to {
            return Err(PeriodError::Reversed { from, to });
        }
        let period = Period { from, to };
        let days = period.days();
        if days > MAX_DAYS {
            return Err(PeriodError::TooLong { days });
        }
        Ok(period)
    }

    pub fn from(&self) -> Date {
        self.from
    }

    pub fn to(&self) -> Date {
        self.to
    }

    /// How many days the period covers, both ends included.
    pub fn days(&self) -> i32 {
        (self.to - self.from).get_days().saturating_add(1)
    }

    /// The first instant of the period: `from` at midnight in Taipei.
    pub fn start(&self) -> Timestamp {
        midnight(self.from)
    }

    /// The first instant after the period: the day after `to` at midnight in Taipei.
    pub fn end(&self) -> Timestamp {
        midnight(self.to.tomorrow().unwrap_or(self.to))
    }

    /// Whether the weekly build of this period reports a workspace created at `created_at`:
    /// only when the workspace existed before the period ended (a fresh install gets no empty
    /// reports of the weeks before it).
    pub fn reports_workspace_created(&self, created_at: Timestamp) -> bool {
        created_at < self.end()
    }

    /// The Monday-to-Sunday week of Taipei before the one `now` is in: what the Monday build
    /// covers.
    pub fn week_before(now: Timestamp) -> Period {
        let monday = monday_of(now);
        let from = monday.checked_sub(7.days()).unwrap_or(monday);
        let to = monday.yesterday().unwrap_or(monday);
        Period { from, to }
    }
}

/// The Monday of the Taipei week `now` is in.
pub fn monday_of(now: Timestamp) -> Date {
    let today = now.to_zoned(zone()).date();
    let back = today.weekday().to_monday_zero_offset();
    today.checked_sub(i64::from(back).days()).unwrap_or(today)
}

/// `day` at midnight in Taipei.
pub fn midnight(day: Date) -> Timestamp {
    day.to_zoned(zone())
        .map(|z| z.timestamp())
        .unwrap_or(Timestamp::UNIX_EPOCH)
}

/// Whether `day` is a Monday (weeks start on Mondays).
pub fn is_monday(day: Date) -> bool {
    day.weekday() == Weekday::Monday
}

#[cfg(test)]
mod tests {
    use super::*;
    use jiff::civil::date;

    fn at(s: &str) -> Timestamp {
        s.parse().unwrap()
    }

    #[test]
    fn a_week_is_reported_for_a_workspace_created_before_it_ended() {
        // The week of Monday 16 November ends at midnight of the 23rd in Taipei (16:00 UTC).
        let week = Period::new(date(2026, 11, 16), date(2026, 11, 22)).unwrap();
        assert!(week.reports_workspace_created(at("2026-11-01T00:00:00Z")));
        assert!(week.reports_workspace_created(at("2026-11-22T15:59:59Z")));
        assert!(!week.reports_workspace_created(at("2026-11-22T16:00:00Z")));
        assert!(!week.reports_workspace_created(at("2026-11-30T00:00:00Z")));
    }

    #[test]
    fn a_period_runs_from_to_to_both_included_and_at_most_92_days() {
        let p = Period::new(date(2026, 11, 16), date(2026, 11, 22)).unwrap();
        assert_eq!(p.days(), 7);
        assert_eq!(
            Period::new(date(2026, 11, 16), date(2026, 11, 16))
                .unwrap()
                .days(),
            1
        );
        let longest = Period::new(date(2026, 1, 1), date(2026, 4, 2)).unwrap();
        assert_eq!(longest.days(), 92);
        assert_eq!(
            Period::new(date(2026, 1, 1), date(2026, 4, 3)),
            Err(PeriodError::TooLong { days: 93 })
        );
        assert!(matches!(
            Period::new(date(2026, 1, 2), date(2026, 1, 1)),
            Err(PeriodError::Reversed { .. })
        ));
    }

    #[test]
    fn a_period_starts_and_ends_at_taipei_midnight() {
        let p = Period::new(date(2026, 11, 16), date(2026, 11, 22)).unwrap();
        assert_eq!(p.start(), at("2026-11-15T16:00:00Z"));
        assert_eq!(p.end(), at("2026-11-22T16:00:00Z"));
    }

    #[test]
    fn the_week_before_is_the_previous_taipei_monday_to_sunday() {
        // Wednesday 2026-11-25 in Taipei.
        let p = Period::week_before(at("2026-11-25T10:00:00Z"));
        assert_eq!((p.from(), p.to()), (date(2026, 11, 16), date(2026, 11, 22)));
        assert!(is_monday(p.from()));
        // Monday 00:30 in Taipei is still Sunday in UTC: Taipei decides.
        let p = Period::week_before(at("2026-11-22T16:30:00Z"));
        assert_eq!((p.from(), p.to()), (date(2026, 11, 16), date(2026, 11, 22)));
        // Sunday 23:30 in Taipei: the week before is the one before that.
        let p = Period::week_before(at("2026-11-22T15:30:00Z"));
        assert_eq!((p.from(), p.to()), (date(2026, 11, 9), date(2026, 11, 15)));
        // Across a year.
        let p = Period::week_before(at("2027-01-04T02:00:00Z"));
        assert_eq!((p.from(), p.to()), (date(2026, 12, 28), date(2027, 1, 3)));
    }

    #[test]
    fn the_monday_of_a_sunday_is_six_days_back() {
        assert_eq!(monday_of(at("2026-11-22T10:00:00Z")), date(2026, 11, 16));
        assert_eq!(monday_of(at("2026-11-23T10:00:00Z")), date(2026, 11, 23));
    }
}
