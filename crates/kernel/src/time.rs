//! Time input as the Conventions say: ISO 8601 with a zone, or market-local
//! `YYYY-MM-DD HH:MM[:SS]` read in the account market's zone. Output is always ISO UTC.
//!
//! What is accepted is exactly [`TIME_INPUT_PATTERN`] (the pattern the API descriptions
//! publish), checked by [`check_time_shape`]: a real calendar date of the years 2000-2099, a
//! real time of day, and in the ISO form seconds (optionally with up to 9 fractional digits)
//! and `Z` or an offset up to ±14:59; white space around it is allowed within the 40
//! characters.

use jiff::Timestamp;
use jiff::civil::DateTime;
use jiff::tz::TimeZone;

/// A calendar date `YYYY-MM-DD` of the years 2000-2099 that exists (leap days included), as a
/// regular expression without anchors. ASCII digits are spelled out: `\d` matches other
/// scripts' digits in some engines.
macro_rules! date_re {
    () => {
        "(?:20[0-9]{2}-(?:(?:0[13578]|1[02])-(?:0[1-9]|[12][0-9]|3[01])|(?:0[469]|11)-(?:0[1-9]|[12][0-9]|30)|02-(?:0[1-9]|1[0-9]|2[0-8]))|20(?:[02468][048]|[13579][26])-02-29)"
    };
}

/// The characters `char::is_whitespace` (and so `str::trim`) treats as white space, as the
/// body of a regular-expression class.
macro_rules! ws_class {
    () => {
        "\\t\\n\\x0b\\x0c\\r \\x85\\xa0\\u1680\\u2000-\\u200a\\u2028-\\u2029\\u202f\\u205f\\u3000"
    };
}

/// `ws_class` as a constant, for patterns built at run time.
pub const WHITE_SPACE_CLASS: &str = ws_class!();

/// The ranges of [`WHITE_SPACE_CLASS`].
pub const WHITE_SPACE: &[(char, char)] = &[
    ('\t', '\r'),
    (' ', ' '),
    ('\u{85}', '\u{85}'),
    ('\u{a0}', '\u{a0}'),
    ('\u{1680}', '\u{1680}'),
    ('\u{2000}', '\u{200a}'),
    ('\u{2028}', '\u{2029}'),
    ('\u{202f}', '\u{202f}'),
    ('\u{205f}', '\u{205f}'),
    ('\u{3000}', '\u{3000}'),
];

/// `HH:MM`, 00:00-23:59.
macro_rules! hm_re {
    () => {
        "(?:[01][0-9]|2[0-3]):[0-5][0-9]"
    };
}

/// The JSON Schema pattern of a time input: ISO with zone
/// (`2026-10-07T09:30:00+08:00`, `2026-10-07T01:30:00.250Z`) or market-local
/// (`2026-10-07 09:30`, `2026-10-07 09:30:15`).
pub const TIME_INPUT_PATTERN: &str = concat!(
    "^[",
    ws_class!(),
    "]*",
    date_re!(),
    "(?:T",
    hm_re!(),
    ":[0-5][0-9](?:\\.[0-9]{1,9})?(?:Z|[+-](?:0[0-9]|1[0-4]):[0-5][0-9])| ",
    hm_re!(),
    "(?::[0-5][0-9])?)[",
    ws_class!(),
    "]*$"
);

/// The JSON Schema pattern of an absolute time: the ISO form of [`TIME_INPUT_PATTERN`] only.
pub const ISO_TIME_PATTERN: &str = concat!(
    "^[",
    ws_class!(),
    "]*",
    date_re!(),
    "T",
    hm_re!(),
    ":[0-5][0-9](?:\\.[0-9]{1,9})?(?:Z|[+-](?:0[0-9]|1[0-4]):[0-5][0-9])[",
    ws_class!(),
    "]*$"
);

/// The JSON Schema pattern of a date input `YYYY-MM-DD` (a real date of 2000-2099).
pub const DATE_INPUT_PATTERN: &str = concat!("^", date_re!(), "$");

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TimeInputError {
    #[error("must be 1-40 characters")]
    Length,
    #[error(
        "must be ISO 8601 with a zone (2026-10-07T09:30:00+08:00) or market-local time (2026-10-07 09:30) of the years 2000-2099"
    )]
    Format,
    #[error("must be ISO 8601 with a zone (2026-10-07T09:30:00+08:00 or 2026-10-07T01:30:00Z)")]
    Zone,
    #[error("names a local time that does not exist or is ambiguous in {0}")]
    Gap(String),
}

/// Checks a time input against [`TIME_INPUT_PATTERN`] without parsing it: at most 40
/// characters, white space around the time allowed.
pub fn check_time_shape(raw: &str) -> Result<(), TimeInputError> {
    let t = raw.trim();
    if t.is_empty() || raw.chars().count() > 40 {
        return Err(TimeInputError::Length);
    }
    let b = t.as_bytes();
    let ok = b.len() > 10
        && date_ok(&b[..10])
        && match b[10] {
            b'T' => iso_rest_ok(&b[11..]),
            b' ' => hm_ok(&b[11..]) && (b.len() == 16 || (b.len() == 19 && sec_ok(&b[16..]))),
            _ => false,
        };
    if ok {
        Ok(())
    } else {
        Err(TimeInputError::Format)
    }
}

/// Parses an absolute time: the ISO form of a time input, with its zone.
pub fn parse_iso_input(raw: &str) -> Result<Timestamp, TimeInputError> {
    check_time_shape(raw)?;
    let t = raw.trim();
    if t.as_bytes()[10] != b'T' {
        return Err(TimeInputError::Zone);
    }
    t.parse::<Timestamp>().map_err(|_| TimeInputError::Format)
}

/// A date input `YYYY-MM-DD` as [`DATE_INPUT_PATTERN`] says.
pub fn parse_date_input(raw: &str) -> Option<jiff::civil::Date> {
    if raw.len() != 10 || !date_ok(raw.as_bytes()) {
        return None;
    }
    raw.parse().ok()
}

fn digit(c: u8) -> Option<u32> {
    c.is_ascii_digit().then(|| u32::from(c - b'0'))
}

fn two(b: &[u8]) -> Option<u32> {
    Some(digit(b[0])? * 10 + digit(b[1])?)
}

/// `20YY-MM-DD`, a date that exists.
fn date_ok(b: &[u8]) -> bool {
    if b.len() != 10 || &b[..2] != b"20" || b[4] != b'-' || b[7] != b'-' {
        return false;
    }
    let (Some(yy), Some(month), Some(day)) = (two(&b[2..4]), two(&b[5..7]), two(&b[8..10])) else {
        return false;
    };
    // Every year 2000-2099 divisible by 4 is a leap year (2000 is divisible by 400).
    let days = match month {
        1 | 3 | 5 | 7 | 8 | 10 | 12 => 31,
        4 | 6 | 9 | 11 => 30,
        2 if yy % 4 == 0 => 29,
        2 => 28,
        _ => return false,
    };
    (1..=days).contains(&day)
}

/// `HH:MM` and nothing else.
fn hm_ok(b: &[u8]) -> bool {
    b.len() >= 5
        && b[2] == b':'
        && two(&b[..2]).is_some_and(|h| h < 24)
        && two(&b[3..5]).is_some_and(|m| m < 60)
}

/// `:SS`, exactly.
fn sec_ok(b: &[u8]) -> bool {
    b.len() == 3 && b[0] == b':' && two(&b[1..3]).is_some_and(|s| s < 60)
}

/// After the `T`: `HH:MM:SS`, optional `.` and 1-9 digits, then `Z` or `±HH:MM` (hours 00-14).
fn iso_rest_ok(b: &[u8]) -> bool {
    if b.len() < 9 || !hm_ok(b) || !sec_ok(&b[5..8]) {
        return false;
    }
    let mut rest = &b[8..];
    if let Some(frac) = rest.strip_prefix(b".") {
        let n = frac.iter().take_while(|c| c.is_ascii_digit()).count();
        if !(1..=9).contains(&n) {
            return false;
        }
        rest = &frac[n..];
    }
    match rest {
        b"Z" => true,
        [b'+' | b'-', h1, h2, b':', m1, m2] => {
            two(&[*h1, *h2]).is_some_and(|h| h <= 14) && two(&[*m1, *m2]).is_some_and(|m| m < 60)
        }
        _ => false,
    }
}

/// A time input parsed at the boundary: an absolute time, or a market-local one that is read
/// in the zone of the account it is about once that account is known ([`TimeInput::resolve`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TimeInput {
    /// ISO 8601 with a zone.
    At(Timestamp),
    /// `YYYY-MM-DD HH:MM[:SS]`, in no zone yet.
    Local(DateTime),
}

impl TimeInput {
    /// Parses the input's shape ([`check_time_shape`]); the zone comes later.
    pub fn parse(raw: &str) -> Result<TimeInput, TimeInputError> {
        check_time_shape(raw)?;
        let t = raw.trim();
        if t.as_bytes()[10] == b'T' {
            return t
                .parse::<Timestamp>()
                .map(TimeInput::At)
                .map_err(|_| TimeInputError::Format);
        }
        parse_market_local(t)
            .map(TimeInput::Local)
            .ok_or(TimeInputError::Format)
    }

    /// The time: a market-local input read in `zone` (a time the zone skips or repeats is
    /// refused).
    pub fn resolve(self, zone: &TimeZone) -> Result<Timestamp, TimeInputError> {
        match self {
            TimeInput::At(t) => Ok(t),
            TimeInput::Local(local) => zone
                .to_ambiguous_zoned(local)
                .unambiguous()
                .map(|z| z.timestamp())
                .map_err(|_| {
                    TimeInputError::Gap(zone.iana_name().unwrap_or("the market zone").to_owned())
                }),
        }
    }
}

impl std::str::FromStr for TimeInput {
    type Err = TimeInputError;

    fn from_str(raw: &str) -> Result<TimeInput, TimeInputError> {
        TimeInput::parse(raw)
    }
}

/// Parses a time input. `zone` is the market zone used when the input carries none.
pub fn parse_time_input(raw: &str, zone: &TimeZone) -> Result<Timestamp, TimeInputError> {
    TimeInput::parse(raw)?.resolve(zone)
}

fn parse_market_local(raw: &str) -> Option<DateTime> {
    let (date, time) = raw.split_once(' ')?;
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

/// Writes a time field as [`format_utc`] does, for read models that serialize directly:
/// `#[serde(with = "fleetdesk_kernel::time::utc")]` on a `Timestamp`,
/// `#[serde(with = "fleetdesk_kernel::time::utc::option")]` on an `Option<Timestamp>` (null
/// when absent). Describe such a field with
/// `#[cfg_attr(feature = "openapi", schema(value_type = String))]` (`Option<String>`), what the
/// api's output `Utc` says.
pub mod utc {
    use super::format_utc;
    use jiff::Timestamp;
    use serde::{Deserialize, Deserializer, Serializer};

    pub fn serialize<S: Serializer>(t: &Timestamp, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&format_utc(*t))
    }

    /// Reads back what [`serialize`] wrote (a client reading an answer).
    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Timestamp, D::Error> {
        let raw = String::deserialize(d)?;
        raw.parse().map_err(serde::de::Error::custom)
    }

    pub mod option {
        use jiff::Timestamp;
        use serde::{Deserialize, Deserializer, Serializer};

        pub fn serialize<S: Serializer>(t: &Option<Timestamp>, s: S) -> Result<S::Ok, S::Error> {
            match t {
                Some(t) => s.serialize_some(&super::super::format_utc(*t)),
                None => s.serialize_none(),
            }
        }

        pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Timestamp>, D::Error> {
            let raw = Option::<String>::deserialize(d)?;
            raw.map(|t| t.parse().map_err(serde::de::Error::custom))
                .transpose()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn utc_fields_serialize_as_format_utc() {
        #[derive(Debug, PartialEq, serde::Serialize, serde::Deserialize)]
        struct T {
            #[serde(with = "utc")]
            at: Timestamp,
            #[serde(with = "utc::option")]
            some: Option<Timestamp>,
            #[serde(with = "utc::option")]
            none: Option<Timestamp>,
        }
        let t: Timestamp = "2026-11-21T10:00:00.750Z".parse().unwrap();
        let json = serde_json::to_string(&T {
            at: t,
            some: Some(t),
            none: None,
        })
        .unwrap();
        assert_eq!(
            json,
            r#"{"at":"2026-11-21T10:00:00Z","some":"2026-11-21T10:00:00Z","none":null}"#
        );
        let whole: Timestamp = "2026-11-21T10:00:00Z".parse().unwrap();
        assert_eq!(
            serde_json::from_str::<T>(&json).unwrap(),
            T {
                at: whole,
                some: Some(whole),
                none: None
            }
        );
    }

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
    fn an_input_is_parsed_once_and_read_in_a_zone_later() {
        let local: TimeInput = "2026-10-07 09:30".parse().unwrap();
        assert!(matches!(local, TimeInput::Local(_)));
        assert_eq!(
            format_utc(local.resolve(&taipei()).unwrap()),
            "2026-10-07T01:30:00Z"
        );
        let tokyo = TimeZone::get("Asia/Tokyo").unwrap();
        assert_eq!(
            format_utc(local.resolve(&tokyo).unwrap()),
            "2026-10-07T00:30:00Z"
        );
        let at = TimeInput::parse("2026-10-07T09:30:00+08:00").unwrap();
        assert_eq!(
            at.resolve(&tokyo),
            at.resolve(&taipei()),
            "an absolute time has no zone to read"
        );
        assert_eq!(TimeInput::parse("tomorrow"), Err(TimeInputError::Format));
        let gap = TimeInput::parse("2026-03-08 02:30").unwrap();
        let new_york = TimeZone::get("America/New_York").unwrap();
        assert!(matches!(
            gap.resolve(&new_york),
            Err(TimeInputError::Gap(_))
        ));
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
        assert_eq!(
            parse_time_input("   ", &taipei()),
            Err(TimeInputError::Length)
        );
        let forty_one = "   2026-11-21T14:00:00.000000000+08:00   ";
        assert_eq!(
            parse_time_input(forty_one, &taipei()),
            Err(TimeInputError::Length)
        );
        for bad in [
            "2026-10-07t01:30:00z",
            "2026-10-07T01:30Z",
            "2026-10-07T01:30:00+08",
            "2026-10-07T01:30:00+0800",
            "2026-10-07T01:30:00+15:00",
            "2026-10-07T01:30:00.Z",
            "2026-10-07T01:30:00.1234567890Z",
            "2026-10-07T01:30:00Z[Asia/Taipei]",
            "2026-10-07 09:30:15.5",
            "2026-10-07 24:00",
            "2026-10-07 09:60",
            "2026-02-29 09:30",
            "2026-04-31 09:30",
            "2026-13-01 09:30",
            "1999-12-31 09:30",
            "2100-01-01 09:30",
            "2026-1-07 09:30",
            "\u{0662}026-10-07 09:30",
        ] {
            assert_eq!(
                parse_time_input(bad, &taipei()),
                Err(TimeInputError::Format),
                "{bad:?}"
            );
        }
    }

    #[test]
    fn every_shape_the_pattern_allows_parses() {
        for good in [
            "2000-01-01 00:00",
            "2099-12-31 23:59:59",
            "2024-02-29 12:00",
            "2000-02-29T12:00:00Z",
            "2026-10-07T01:30:00.250Z",
            "2026-10-07T01:30:00.123456789+14:59",
            "2026-10-07T01:30:00-00:00",
            "2099-12-31T23:59:59-14:59",
            "2000-01-01T00:00:00+14:00",
            " \u{3000}2026-10-07 09:30\t",
            "   2026-11-21T14:00:00.000000000+08:00  ",
        ] {
            assert!(parse_time_input(good, &taipei()).is_ok(), "{good}");
        }
        assert!(parse_iso_input("2026-10-07T01:30:00Z").is_ok());
        assert_eq!(
            parse_iso_input("2026-10-07 09:30"),
            Err(TimeInputError::Zone)
        );
        assert!(parse_date_input("2024-02-29").is_some());
        assert!(parse_date_input("2023-02-29").is_none());
        assert!(parse_date_input("2023-02-28 ").is_none());
    }

    #[test]
    fn the_white_space_class_is_what_trim_removes() {
        let listed = |c: char| WHITE_SPACE.iter().any(|&(a, b)| (a..=b).contains(&c));
        for c in (0..=0x10ffff_u32).filter_map(char::from_u32) {
            assert_eq!(listed(c), c.is_whitespace(), "U+{:04X}", c as u32);
        }
        let class: String = WHITE_SPACE
            .iter()
            .map(|&(a, b)| {
                let esc = |c: char| match c {
                    ' ' => " ".to_owned(),
                    '\t' => "\\t".to_owned(),
                    '\n' => "\\n".to_owned(),
                    '\r' => "\\r".to_owned(),
                    c if (c as u32) < 0x100 => format!("\\x{:02x}", c as u32),
                    c => format!("\\u{:04x}", c as u32),
                };
                if a == b {
                    esc(a)
                } else if a == '\t' {
                    // \t \n \v \f \r, spelled one by one.
                    "\\t\\n\\x0b\\x0c\\r".to_owned()
                } else {
                    format!("{}-{}", esc(a), esc(b))
                }
            })
            .collect();
        assert_eq!(class, WHITE_SPACE_CLASS);
    }

    #[test]
    fn the_published_pattern_is_well_formed() {
        assert!(
            TIME_INPUT_PATTERN.starts_with(&format!("^[{WHITE_SPACE_CLASS}]*(?:20[0-9]{{2}}-"))
        );
        assert!(TIME_INPUT_PATTERN.ends_with(&format!("(?::[0-5][0-9])?)[{WHITE_SPACE_CLASS}]*$")));
        assert!(TIME_INPUT_PATTERN.contains("(?:\\.[0-9]{1,9})?"));
        assert_eq!(
            TIME_INPUT_PATTERN.matches('(').count(),
            TIME_INPUT_PATTERN.matches(')').count()
        );
        assert!(DATE_INPUT_PATTERN.starts_with("^(?:20") && DATE_INPUT_PATTERN.ends_with(")$"));
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
