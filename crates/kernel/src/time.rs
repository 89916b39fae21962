//! Time input as the Conventions say: ISO 8601 with a zone, or market-local
//! `YYYY-MM-DD HH:MM[:SS]` read in the account market's zone. Output is always ISO UTC.

use jiff::Timestamp;
use jiff::civil::DateTime;
use jiff::tz::TimeZone;

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TimeInputError {
    #[error("must be 1-40 characters")]
    Length,
    #[error(
        "must be ISO 8601 with a zone (2026-10-07T09:30:00+08:00) or market-local time (2026-10-07 09:30)"
    )]
    Format,
    #[error("names a local time that does not exist or is ambiguous in {0}")]
    Gap(String),
}

/// Parses a time input. `zone` is the market zone used when the input carries none.
pub fn parse_time_input(raw: &str, zone: &TimeZone) -> Result<Timestamp, TimeInputError> {
    let raw = raw.trim();
    if raw.is_empty() || raw.chars().count() > 40 {
        return Err(TimeInputError::Length);
    }
    if raw.contains('T') || raw.contains('t') {
        // A zone is mandatory in the ISO form: RFC 3339 offsets or Z.
        return raw.parse::<Timestamp>().map_err(|_| TimeInputError::Format);
    }
    let local = parse_market_local(raw).ok_or(TimeInputError::Format)?;
    zone.to_ambiguous_zoned(local)
        .unambiguous()
        .map(|z| z.timestamp())
        .map_err(|_| TimeInputError::Gap(zone.iana_name().unwrap_or("the market zone").to_owned()))
}

fn parse_market_local(raw: &str) -> Option<DateTime> {
    let (date, time) = raw.split_once(' ')?;
    let bytes = time.as_bytes();
    let valid_time = match bytes.len() {
        5 => bytes[2] == b':',
        8 => bytes[2] == b':' && bytes[5] == b':',
        _ => false,
    };
    if date.len() != 10 || !valid_time {
        return None;
    }
    let full = if time.len() == 5 {
        format!("{date}T{time}:00")
    } else {
        format!("{date}T{time}")
    };
    full.parse::<DateTime>().ok()
}

/// ISO UTC with whole seconds, the output format of every time field.
pub fn format_utc(ts: Timestamp) -> String {
    let secs = Timestamp::from_second(ts.as_second()).unwrap_or(ts);
    secs.to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn taipei() -> TimeZone {
        TimeZone::get("Asia/Taipei").unwrap()
    }

    #[test]
    fn iso_with_offset_is_absolute() {
        let ts = parse_time_input("2026-10-07T09:30:00+08:00", &TimeZone::UTC).unwrap();
        assert_eq!(format_utc(ts), "2026-10-07T01:30:00Z");
        let z = parse_time_input("2026-10-07T01:30:00Z", &taipei()).unwrap();
        assert_eq!(z, ts);
    }

    #[test]
    fn market_local_uses_the_market_zone() {
        let ts = parse_time_input("2026-10-07 09:30", &taipei()).unwrap();
        assert_eq!(format_utc(ts), "2026-10-07T01:30:00Z");
        let ts = parse_time_input("2026-10-07 09:30:15", &taipei()).unwrap();
        assert_eq!(format_utc(ts), "2026-10-07T01:30:15Z");
    }

    #[test]
    fn iso_without_zone_is_refused() {
        assert_eq!(
            parse_time_input("2026-10-07T09:30:00", &taipei()),
            Err(TimeInputError::Format)
        );
        assert_eq!(
            parse_time_input("2026-10-07", &taipei()),
            Err(TimeInputError::Format)
        );
        assert_eq!(
            parse_time_input("tomorrow 9am", &taipei()),
            Err(TimeInputError::Format)
        );
        assert_eq!(parse_time_input("", &taipei()), Err(TimeInputError::Length));
    }

    #[test]
    fn a_local_time_in_a_dst_gap_is_refused() {
        let ny = TimeZone::get("America/New_York").unwrap();
        assert!(matches!(
            parse_time_input("2026-03-08 02:30", &ny),
            Err(TimeInputError::Gap(_))
        ));
    }
}
