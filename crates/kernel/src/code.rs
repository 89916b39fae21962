use serde::{Deserialize, Serialize};
use std::fmt;

/// An account code as stored: 1-40 characters, trimmed and upper-cased.
///
/// The usual shape is `<MARKET>-<platform letter><3 digits>`, but legacy codes follow no
/// shape, so any printable code of the right length is accepted.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct AccountCode(String);

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CodeError {
    #[error("must be 1-40 characters")]
    Length,
    #[error("must not contain control characters or spaces")]
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
        if trimmed.chars().any(|c| c.is_control() || c.is_whitespace()) {
            return Err(CodeError::Characters);
        }
        Ok(AccountCode(trimmed.to_uppercase()))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
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
}
