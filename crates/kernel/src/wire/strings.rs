//! String field types: what an input field accepts, stated once for the description (a JSON
//! Schema pattern) and for the parser (a check of the same rule while deserializing, so a bad
//! value is a 400 naming the field). The description and the server cannot disagree about
//! them. Each writes back as the text it was read from, so a client sends them as they are.

use crate::AccountCode;
use serde::Serialize;
use utoipa::openapi::{RefOr, Schema};
use uuid::Uuid;

/// The characters `char::is_whitespace` (and so `str::trim`) treats as white space, as a
/// regular-expression class body.
pub use crate::time::WHITE_SPACE_CLASS;

/// A string schema as JSON, turned into utoipa's type.
pub fn string_schema(schema: serde_json::Value) -> RefOr<Schema> {
    serde_json::from_value::<Schema>(schema)
        .map(RefOr::T)
        .unwrap_or_else(|_| RefOr::T(Schema::default()))
}

/// Declares a string field type: its schema, and the check its value passes while
/// deserializing (the error message names what is wrong; the parser names the field).
#[macro_export]
macro_rules! checked_string {
    ($(#[$meta:meta])* $ty:ident($inner:ty) as $name:literal,
     check = |$raw:ident| $check:expr,
     schema = $schema:expr $(,)?) => {
        $(#[$meta])*
        #[derive(Debug, Clone, PartialEq)]
        pub struct $ty(pub $inner);

        impl<'de> ::serde::Deserialize<'de> for $ty {
            fn deserialize<D: ::serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                let $raw = <String as ::serde::Deserialize>::deserialize(d)?;
                let checked: Result<$inner, String> = $check;
                checked.map($ty).map_err(::serde::de::Error::custom)
            }
        }

        impl utoipa::PartialSchema for $ty {
            fn schema() -> utoipa::openapi::RefOr<utoipa::openapi::Schema> {
                $crate::wire::strings::string_schema($schema)
            }
        }

        impl ::utoipa::ToSchema for $ty {
            fn name() -> std::borrow::Cow<'static, str> {
                std::borrow::Cow::Borrowed($name)
            }
        }
    };
}
pub use checked_string;

checked_string! {
    /// A time input: ISO 8601 with a zone, or market-local `YYYY-MM-DD HH:MM[:SS]` read in the
    /// account market's zone (years 2000-2099).
    TimeInput(crate::TimeInput) as "TimeInput",
    check = |raw| crate::TimeInput::parse(&raw).map_err(|e| e.to_string()),
    schema = serde_json::json!({
        "type": "string",
        "minLength": 1,
        "maxLength": 40,
        "pattern": crate::time::TIME_INPUT_PATTERN,
        "description": "ISO 8601 with a zone (`2026-10-07T09:30:00+08:00`, `2026-10-07T01:30:00Z`, up to 9 fractional digits) or market-local `YYYY-MM-DD HH:MM` / `YYYY-MM-DD HH:MM:SS`, read in the account market's zone; years 2000-2099.",
        "examples": ["2026-10-07T09:30:00+08:00", "2026-10-07 09:30"],
    }),
}

checked_string! {
    /// An absolute time: ISO 8601 with a zone (no market-local form).
    IsoTimeInput(jiff::Timestamp) as "IsoTimeInput",
    check = |raw| crate::time::parse_iso_input(&raw).map_err(|e| e.to_string()),
    schema = serde_json::json!({
        "type": "string",
        "minLength": 1,
        "maxLength": 40,
        "pattern": crate::time::ISO_TIME_PATTERN,
        "description": "ISO 8601 with a zone, e.g. `2026-10-07T09:30:00+08:00` or `2026-10-07T01:30:00Z` (up to 9 fractional digits); years 2000-2099.",
        "examples": ["2026-10-07T09:30:00+08:00"],
    }),
}

checked_string! {
    /// A calendar date `YYYY-MM-DD` (years 2000-2099).
    DateInput(jiff::civil::Date) as "DateInput",
    check = |raw| crate::time::parse_date_input(&raw)
        .ok_or_else(|| "must be a date YYYY-MM-DD of the years 2000-2099".to_owned()),
    schema = serde_json::json!({
        "type": "string",
        "format": "date",
        "minLength": 10,
        "maxLength": 10,
        "pattern": crate::time::DATE_INPUT_PATTERN,
        "description": "A date `YYYY-MM-DD` of the years 2000-2099.",
        "examples": ["2026-10-07"],
    }),
}

/// Characters an account code never holds (see `crate::code`): path syntax,
/// controls, white space and invisible characters that change how a code is displayed.
pub const CODE_REFUSED: &[(char, char)] = &[
    ('\u{0}', ' '),
    ('#', '#'),
    ('%', '%'),
    ('/', '/'),
    ('?', '?'),
    ('\u{7f}', '\u{a0}'),
    ('\u{ad}', '\u{ad}'),
    ('\u{34f}', '\u{34f}'),
    ('\u{61c}', '\u{61c}'),
    ('\u{115f}', '\u{1160}'),
    ('\u{1680}', '\u{1680}'),
    ('\u{180e}', '\u{180e}'),
    ('\u{2000}', '\u{200f}'),
    ('\u{2028}', '\u{202f}'),
    ('\u{205f}', '\u{206f}'),
    ('\u{3000}', '\u{3000}'),
    ('\u{3164}', '\u{3164}'),
    ('\u{fe00}', '\u{fe0f}'),
    ('\u{feff}', '\u{feff}'),
    ('\u{ffa0}', '\u{ffa0}'),
    ('\u{fff9}', '\u{fffb}'),
];

fn class_escape(c: char) -> String {
    match c {
        '0'..='9' | 'A'..='Z' | 'a'..='z' => c.to_string(),
        c if (c as u32) < 0x100 => format!("\\x{:02x}", c as u32),
        c => format!("\\u{:04x}", c as u32),
    }
}

/// The pattern of an account code: 1-40 characters in all, of which none is refused and which
/// are not `.` or `..` (dot segments a client resolves away) once the white space around them
/// is dropped. No lookahead, which not every engine has.
pub fn code_pattern() -> String {
    let refused: String = CODE_REFUSED
        .iter()
        .map(|&(a, b)| {
            if a == b {
                class_escape(a)
            } else {
                format!("{}-{}", class_escape(a), class_escape(b))
            }
        })
        .collect();
    let any = format!("[^{refused}]");
    let not_dot = format!("[^.{refused}]");
    format!(
        "^[{WHITE_SPACE_CLASS}]*(?:{not_dot}|{not_dot}{any}|\\.{not_dot}|{any}{{3,40}})[{WHITE_SPACE_CLASS}]*$"
    )
}

checked_string! {
    /// An account code as input: current or legacy, 1-40 characters, no spaces, controls,
    /// invisible characters or any of `/ % ? #`; stored upper-cased.
    CodeInput(AccountCode) as "AccountCodeInput",
    check = |raw| {
        if raw.chars().count() > AccountCode::MAX_CHARS {
            Err("must be 1-40 characters".to_owned())
        } else {
            AccountCode::parse(&raw).map_err(|e| e.to_string())
        }
    },
    schema = serde_json::json!({
        "type": "string",
        "minLength": 1,
        "maxLength": 40,
        "pattern": code_pattern(),
        "description": "An account code (current or legacy), 1-40 characters with any white space around it (dropped); any letter case.",
        "examples": ["TW-T001"],
    }),
}

checked_string! {
    /// A market code: one of the known markets, any letter case.
    MarketInput(crate::Market) as "MarketInput",
    check = |raw| {
        if raw.len() != 2 {
            Err("must be 2 letters".to_owned())
        } else {
            crate::Market::parse(&raw).map_err(|e| e.to_string())
        }
    },
    schema = serde_json::json!({
        "type": "string",
        "minLength": 2,
        "maxLength": 2,
        "pattern": crate::market::market_pattern(),
        "description": "A 2-letter market code of the markets table (TW, HK, JP, ...), any letter case.",
        "examples": ["TW"],
    }),
}

/// A base64 quantum group, and a last group of 2 or 3 characters with padding whose unused
/// bits are zero (what every encoder writes; decoders refuse other last characters).
const BASE64_BODY: &str = "(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{4}|[A-Za-z0-9+/][AQgw]==|[A-Za-z0-9+/]{2}[AEIMQUYcgkosw048]=)";

/// Canonical padded base64 of at least one byte, optionally after a `data:<type>;base64,`
/// prefix.
pub fn base64_pattern() -> String {
    format!("^(?:data:[a-z]+/[a-z0-9.+-]+;base64,)?{BASE64_BODY}$")
}

checked_string! {
    /// Base64 of a file (JPEG, PNG or WebP images; the type is judged from the bytes).
    Base64Data(String) as "Base64Image",
    check = |raw| {
        // What follows a `data:` prefix (its first comma), or the whole text.
        let payload = match raw.strip_prefix("data:") {
            Some(rest) => rest.split_once(',').map_or("", |(_, p)| p),
            None => raw.as_str(),
        };
        if payload.trim().is_empty() {
            Err("must not be empty: give the base64 of the image".to_owned())
        } else {
            Ok(raw)
        }
    },
    schema = serde_json::json!({
        "type": "string",
        "minLength": 4,
        "contentEncoding": "base64",
        "pattern": base64_pattern(),
        "description": "Base64 (standard alphabet, padded) of a JPEG, PNG or WebP image, optionally after a `data:image/png;base64,` prefix; the type is judged from the bytes (another file is 422). Avatars also take the URL-safe alphabet, no padding and line breaks.",
    }),
}

/// The pattern of text that names something: it holds a character that is not white space
/// (and, like all text, no NUL).
pub fn not_blank_pattern() -> String {
    format!("^[^\\x00]*[^\\x00{WHITE_SPACE_CLASS}][^\\x00]*$")
}

/// Text that holds more than white space (NUL is refused everywhere).
pub fn is_blank(text: &str) -> bool {
    text.trim().is_empty()
}

checked_string! {
    /// A run id: 1-120 characters, not only spaces (stored without the spaces around it).
    RunIdInput(String) as "RunIdInput",
    check = |raw| {
        let n = raw.chars().count();
        if n == 0 || n > 120 || is_blank(&raw) {
            Err("must be 1-120 characters and not only spaces".to_owned())
        } else {
            Ok(raw)
        }
    },
    schema = serde_json::json!({
        "type": "string",
        "minLength": 1,
        "maxLength": 120,
        "pattern": not_blank_pattern(),
        "description": "1-120 characters, not only spaces; the same run_id updates the same record.",
    }),
}

checked_string! {
    /// The name of the person a decision is relayed for: 1-80 characters, not only spaces.
    PersonNameInput(String) as "PersonNameInput",
    check = |raw| {
        let n = raw.chars().count();
        if n == 0 || n > 80 || is_blank(&raw) {
            Err("must name the person in 1-80 characters, not only spaces".to_owned())
        } else {
            Ok(raw)
        }
    },
    schema = serde_json::json!({
        "type": "string",
        "minLength": 1,
        "maxLength": 80,
        "pattern": not_blank_pattern(),
        "description": "The person's name, 1-80 characters, not only spaces.",
    }),
}

checked_string! {
    /// A handle on a platform: white space around it and a leading @ are dropped, and what is
    /// left is at most 100 characters (nothing left: no handle).
    HandleInput(Option<String>) as "HandleInput",
    check = |raw| {
        let handle = raw.trim().trim_start_matches('@').trim();
        if raw.chars().count() > 101 {
            Err("must have at most 101 characters".to_owned())
        } else if handle.chars().count() > 100 {
            Err("must be at most 100 characters".to_owned())
        } else {
            Ok((!handle.is_empty()).then(|| handle.to_owned()))
        }
    },
    // At most 101 characters in all, and a 101st only when a leading @ or white space around
    // the handle is dropped.
    schema = serde_json::json!({
        "type": "string",
        "maxLength": 101,
        "pattern": format!(
            "^(?:[^\\x00]{{0,100}}|[@{ws}][^\\x00]{{100}}|[^\\x00]{{100}}[{ws}])$",
            ws = WHITE_SPACE_CLASS
        ),
        "description": "Handle on the platform, up to 100 characters; a leading @ and white space around it are dropped.",
        super::fields::INLINE: true,
    }),
}

checked_string! {
    /// An http(s) link of at most 2000 characters, without white space.
    LinkInput(String) as "LinkInput",
    check = |raw| {
        let lower = raw.to_ascii_lowercase();
        let rest = lower.strip_prefix("https://").or_else(|| lower.strip_prefix("http://"));
        if raw.chars().count() > 2000 {
            Err("must have at most 2000 characters".to_owned())
        } else if rest.is_none_or(|r| r.is_empty() || r.contains(char::is_whitespace)) {
            Err("must be an http(s) link".to_owned())
        } else {
            Ok(raw)
        }
    },
    schema = serde_json::json!({
        "type": "string",
        "maxLength": 2000,
        "pattern": "^[Hh][Tt][Tt][Pp][Ss]?://[^\\x00\\t\\n\\x0b\\x0c\\r \\x85\\xa0\\u1680\\u2000-\\u200a\\u2028\\u2029\\u202f\\u205f\\u3000]+$",
        super::fields::INLINE: true,
    }),
}

/// A tag: white space around it is dropped, and what is left is 1-30 characters.
pub fn tag_pattern() -> String {
    let ws = WHITE_SPACE_CLASS;
    format!("^[{ws}]*[^\\x00{ws}](?:[^\\x00]{{0,28}}[^\\x00{ws}])?[{ws}]*$")
}

checked_string! {
    /// A media tag: 1-30 characters once the white space around it is dropped.
    TagInput(String) as "TagInput",
    check = |raw| {
        let tag = raw.trim();
        let n = tag.chars().count();
        if n == 0 || n > 30 {
            Err("each tag must be 1-30 characters (spaces around it are dropped)".to_owned())
        } else {
            Ok(tag.to_owned())
        }
    },
    schema = serde_json::json!({
        "type": "string",
        "minLength": 1,
        "pattern": tag_pattern(),
        "description": "1-30 characters; white space around the tag is dropped.",
    }),
}

checked_string! {
    /// An opaque page cursor, as `next_cursor` returned it.
    CursorInput((jiff::Timestamp, Uuid)) as "CursorInput",
    check = |raw| decode_cursor(&raw).ok_or_else(|| "is not a cursor a list returned (48 hex digits)".to_owned()),
    schema = serde_json::json!({
        "type": "string",
        "minLength": 48,
        "maxLength": 48,
        "pattern": "^[0-9a-f]{48}$",
        "description": "`next_cursor` of the previous page.",
    }),
}

/// An opaque page cursor: the last item's time (nanoseconds, 16 hex digits) and id (32).
pub fn encode_cursor(at: jiff::Timestamp, id: Uuid) -> String {
    let nanos = i64::try_from(at.as_nanosecond()).unwrap_or(i64::MAX);
    format!("{:016x}{}", nanos as u64, id.simple())
}

/// A cursor back into its time and id. Any 48 lower-case hex digits are a position.
pub fn decode_cursor(raw: &str) -> Option<(jiff::Timestamp, Uuid)> {
    if raw.len() != 48 || !raw.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f')) {
        return None;
    }
    let nanos = u64::from_str_radix(&raw[..16], 16).ok()? as i64;
    let at = jiff::Timestamp::from_nanosecond(i128::from(nanos)).ok()?;
    let id = Uuid::parse_str(&raw[16..]).ok()?;
    Some((at, id))
}

crate::component_items!(TagInput);

/// Text field types serialize as the text they hold (relay records, validation values).
macro_rules! serialize_as_text {
    ($($ty:ident),*) => {$(
        impl Serialize for $ty {
            fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                self.0.serialize(s)
            }
        }
    )*};
}

serialize_as_text!(
    CodeInput,
    Base64Data,
    RunIdInput,
    PersonNameInput,
    TagInput,
    LinkInput
);

/// Field types whose value writes back as text in its own way.
macro_rules! serialize_with {
    ($($ty:ident => |$v:ident| $text:expr),* $(,)?) => {$(
        impl Serialize for $ty {
            fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                let $v = &self.0;
                s.collect_str(&$text)
            }
        }
    )*};
}

serialize_with!(
    TimeInput => |t| match t {
        crate::TimeInput::At(at) => at.to_string(),
        crate::TimeInput::Local(local) => local.strftime("%Y-%m-%d %H:%M:%S").to_string(),
    },
    IsoTimeInput => |at| at,
    DateInput => |date| date,
    MarketInput => |market| market,
    HandleInput => |handle| handle.as_deref().unwrap_or(""),
    CursorInput => |position| encode_cursor(position.0, position.1),
);

#[cfg(test)]
mod tests {
    use super::*;

    fn in_refused(c: char) -> bool {
        CODE_REFUSED.iter().any(|&(a, b)| (a..=b).contains(&c))
    }

    /// The published pattern refuses exactly the characters `AccountCode::parse` refuses (or
    /// `CodeInput` refuses as white space), for every character there is.
    #[test]
    fn the_code_pattern_table_is_the_code_rule() {
        let mut disagree = Vec::new();
        for c in (0..=0x10ffff_u32).filter_map(char::from_u32) {
            let raw = format!("A{c}A");
            let refused = serde_json::from_value::<CodeInput>(serde_json::json!(raw)).is_err();
            if refused != in_refused(c) {
                disagree.push(format!("U+{:04X}", c as u32));
            }
        }
        assert!(
            disagree.is_empty(),
            "table and rule disagree on {disagree:?}"
        );
        let p = code_pattern();
        assert!(p.contains("]*(?:[^.\\x00-\\x20\\x23"), "{p}");
        for dots in [".", ".."] {
            assert!(serde_json::from_value::<CodeInput>(serde_json::json!(dots)).is_err());
        }
        assert!(serde_json::from_value::<CodeInput>(serde_json::json!("...")).is_ok());
        let spaced = serde_json::from_value::<CodeInput>(serde_json::json!(" tw-t001\t")).unwrap();
        assert_eq!(spaced.0.as_str(), "TW-T001");
        assert!(serde_json::from_value::<CodeInput>(serde_json::json!("TW T001")).is_err());
        assert!(serde_json::from_value::<CodeInput>(serde_json::json!(" ")).is_err());
        assert!(
            serde_json::from_value::<CodeInput>(serde_json::json!(format!(" {}", "A".repeat(40))))
                .is_err()
        );
    }

    #[test]
    fn cursors_round_trip_and_any_48_hex_digits_are_a_position() {
        let at: jiff::Timestamp = "2026-11-21T10:00:00.123456Z".parse().unwrap();
        let id = Uuid::from_u128(42);
        let c = encode_cursor(at, id);
        assert_eq!(c.len(), 48);
        assert_eq!(decode_cursor(&c), Some((at, id)));
        assert!(decode_cursor(&"f".repeat(48)).is_some());
        assert!(decode_cursor(&"F".repeat(48)).is_none());
        assert!(decode_cursor("nope").is_none());
    }

    #[test]
    fn tags_and_names_are_more_than_spaces() {
        let tag = |v: &str| serde_json::from_value::<TagInput>(serde_json::json!(v));
        assert_eq!(tag("  cat ").unwrap().0, "cat");
        assert!(tag("   ").is_err());
        assert!(tag(&"x".repeat(31)).is_err());
        assert!(tag(&format!("  {}  ", "x".repeat(30))).is_ok());
        assert!(tag(&format!(" {} ", "x".repeat(31))).is_err());
        let name = |v: &str| serde_json::from_value::<PersonNameInput>(serde_json::json!(v));
        assert!(name("\u{3000}").is_err());
        assert!(name("Ann").is_ok());
        assert!(not_blank_pattern().starts_with("^[^\\x00]*[^\\x00\\t"));
    }

    #[test]
    fn handles_drop_the_at_and_spaces_and_links_are_http() {
        let handle = |v: &str| serde_json::from_value::<HandleInput>(serde_json::json!(v));
        assert_eq!(handle(" @ann ").unwrap().0.as_deref(), Some("ann"));
        assert_eq!(handle("@").unwrap().0, None);
        assert!(handle(&format!("@{}", "a".repeat(100))).is_ok());
        assert!(handle(&"a".repeat(101)).is_err());
        let link = |v: &str| serde_json::from_value::<LinkInput>(serde_json::json!(v));
        assert!(link("HTTPS://x.test/p").is_ok());
        assert!(link("https://").is_err());
        assert!(link("ftp://x").is_err());
        assert!(link("https://x y").is_err());
    }

    /// What a client sends is what the server reads: every field type writes back as text
    /// that reads as the same value.
    #[test]
    fn field_types_write_back_what_reads_as_the_same_value() {
        fn round<T: serde::de::DeserializeOwned + Serialize + PartialEq + std::fmt::Debug>(
            raw: &str,
        ) {
            let read: T = serde_json::from_value(serde_json::json!(raw)).unwrap();
            let written = serde_json::to_value(&read).unwrap();
            let again: T = serde_json::from_value(written.clone()).unwrap();
            assert_eq!(again, read, "{raw} wrote {written}");
        }
        round::<TimeInput>("2026-10-07T09:30:00+08:00");
        round::<TimeInput>("2026-10-07 09:30");
        round::<IsoTimeInput>("2026-10-07T01:30:00.5Z");
        round::<DateInput>("2026-10-07");
        round::<MarketInput>("tw");
        round::<HandleInput>(" @ann ");
        round::<HandleInput>("@");
        round::<CodeInput>("tw-t001");
        round::<CursorInput>(&encode_cursor(
            "2026-11-21T10:00:00Z".parse().unwrap(),
            Uuid::nil(),
        ));
        round::<LinkInput>("https://x.test/p");
        round::<TagInput>(" cat ");
    }
}
