use serde::{Deserialize, Serialize};
use std::fmt;

/// An account code as stored: 1-40 characters, trimmed and upper-cased.
///
/// The usual shape is `<MARKET>-<platform letter><3 digits>`, but legacy codes follow no
/// shape, so any printable code of the right length is accepted, except characters that cannot
/// be addressed as one path segment (`/`, `%`, `?`, `#`) and characters that spoof how a code
/// is displayed: spaces, controls, bidirectional overrides and isolates, zero-width and other
/// invisible format characters. Letters of any script are fine (`{code}` in a path is
/// percent-decoded).
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct AccountCode(String);

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CodeError {
    #[error("must be 1-40 characters")]
    Length,
    #[error(
        "must not contain spaces, control or invisible characters, bidirectional overrides or any of / % ? #, and must not be . or .."
    )]
    Characters,
}

impl AccountCode {
    pub const MAX_CHARS: usize = 40;

    pub fn parse(raw: &str) -> Result<AccountCode, CodeError> {
        let trimmed = raw.trim();
        let n = trimmed.chars().count();
        if n == 0 || n > Self::MAX_CHARS {
            return Err(CodeError::Length);
        }
        // `.` and `..` are dot segments: clients resolve them away before a request is sent.
        if trimmed.chars().any(refused) || trimmed == "." || trimmed == ".." {
            return Err(CodeError::Characters);
        }
        Ok(AccountCode(trimmed.to_uppercase()))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

/// A character no code may hold: path syntax, controls, whitespace, and invisible characters
/// that change how the code is displayed (bidirectional overrides and isolates U+202A-202E,
/// U+2066-2069, marks, zero-width characters, the byte-order mark).
fn refused(c: char) -> bool {
    matches!(c, '/' | '%' | '?' | '#')
        || c.is_control()
        || c.is_whitespace()
        || matches!(
            c,
            '\u{00AD}'
                | '\u{034F}'
                | '\u{061C}'
                | '\u{115F}'
                | '\u{1160}'
                | '\u{180E}'
                | '\u{200B}'..='\u{200F}'
                | '\u{202A}'..='\u{202E}'
                | '\u{2060}'..='\u{206F}'
                | '\u{3164}'
                | '\u{FE00}'..='\u{FE0F}'
                | '\u{FEFF}'
                | '\u{FFA0}'
                | '\u{FFF9}'..='\u{FFFB}'
        )
}

impl TryFrom<String> for AccountCode {
    type Error = CodeError;
    fn try_from(value: String) -> Result<Self, Self::Error> {
        AccountCode::parse(&value)
    }
}

impl From<AccountCode> for String {
    fn from(value: AccountCode) -> Self {
        value.0
    }
}

impl fmt::Display for AccountCode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn upper_cases_and_trims() {
        assert_eq!(AccountCode::parse(" tw-t001 ").unwrap().as_str(), "TW-T001");
        assert_eq!(AccountCode::parse("mia_old").unwrap().as_str(), "MIA_OLD");
    }

    #[test]
    fn enforces_length_at_the_limit_and_one_past() {
        assert!(AccountCode::parse(&"A".repeat(40)).is_ok());
        assert_eq!(AccountCode::parse(&"A".repeat(41)), Err(CodeError::Length));
        assert_eq!(AccountCode::parse("  "), Err(CodeError::Length));
        assert_eq!(AccountCode::parse("A B"), Err(CodeError::Characters));
    }

    #[test]
    fn refuses_path_syntax_and_display_spoofing() {
        for bad in [
            "TW/T001",
            "TW%2F1",
            "TW?1",
            "TW#1",
            "TW\u{7}1",
            "TW\u{85}1",
            "TW-\u{202E}100T",
            "TW\u{202A}1",
            "TW\u{2066}1",
            "TW\u{2069}1",
            "TW\u{200B}1",
            "TW\u{200D}1",
            "TW\u{200F}1",
            "TW\u{2060}1",
            "TW\u{FEFF}1",
            "TW\u{00A0}1",
            "TW\u{3000}1",
            ".",
            "..",
        ] {
            assert_eq!(
                AccountCode::parse(bad),
                Err(CodeError::Characters),
                "{bad:?}"
            );
        }
    }

    #[test]
    fn letters_of_any_script_are_accepted() {
        assert_eq!(AccountCode::parse("tw-測試1").unwrap().as_str(), "TW-測試1");
        assert_eq!(AccountCode::parse("café.old").unwrap().as_str(), "CAFÉ.OLD");
        assert_eq!(AccountCode::parse("a+b=c&d").unwrap().as_str(), "A+B=C&D");
    }
}
