use jiff::tz::TimeZone;
use std::fmt;

/// A market: two upper-case letters with the IANA zone its dates are counted in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Market {
    code: [u8; 2],
}

/// Markets the service knows, with the zone whose calendar decides "today" there.
/// TW is the default market.
pub const MARKETS: &[(&str, &str)] = &[
    ("TW", "Asia/Taipei"),
    ("HK", "Asia/Hong_Kong"),
    ("MO", "Asia/Macau"),
    ("CN", "Asia/Shanghai"),
    ("JP", "Asia/Tokyo"),
    ("KR", "Asia/Seoul"),
    ("SG", "Asia/Singapore"),
    ("MY", "Asia/Kuala_Lumpur"),
    ("TH", "Asia/Bangkok"),
    ("VN", "Asia/Ho_Chi_Minh"),
    ("PH", "Asia/Manila"),
    ("ID", "Asia/Jakarta"),
    ("IN", "Asia/Kolkata"),
    ("AU", "Australia/Sydney"),
    ("NZ", "Pacific/Auckland"),
    ("US", "America/New_York"),
    ("CA", "America/Toronto"),
    ("GB", "Europe/London"),
    ("DE", "Europe/Berlin"),
    ("FR", "Europe/Paris"),
];

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum MarketError {
    #[error("market must be 2 letters")]
    Shape,
    #[error("is not a known market; known markets: {known}", known = known_markets())]
    Unknown(String),
}

fn known_markets() -> String {
    MARKETS
        .iter()
        .map(|(c, _)| *c)
        .collect::<Vec<_>>()
        .join(", ")
}

/// The JSON Schema pattern of a market code as input: one of [`MARKETS`], in any letter case
/// (`^(?:[Tt][Ww]|[Hh][Kk]|...)$`).
pub fn market_pattern() -> String {
    let either = |c: char| format!("[{}{}]", c.to_ascii_uppercase(), c.to_ascii_lowercase());
    let codes: Vec<String> = MARKETS
        .iter()
        .map(|(code, _)| code.chars().map(either).collect())
        .collect();
    format!("^(?:{})$", codes.join("|"))
}

impl Market {
    pub const DEFAULT: Market = Market { code: *b"TW" };

    /// Parses a market code, upper-casing it; only markets of the table are accepted.
    pub fn parse(raw: &str) -> Result<Market, MarketError> {
        let raw = raw.trim();
        if raw.len() != 2 || !raw.bytes().all(|b| b.is_ascii_alphabetic()) {
            return Err(MarketError::Shape);
        }
        let upper = raw.to_ascii_uppercase();
        if !MARKETS.iter().any(|(c, _)| *c == upper) {
            return Err(MarketError::Unknown(upper));
        }
        let b = upper.as_bytes();
        Ok(Market { code: [b[0], b[1]] })
    }

    pub fn as_str(&self) -> &str {
        // Only ASCII letters are ever stored.
        std::str::from_utf8(&self.code).unwrap_or("TW")
    }

    /// The market's IANA zone name.
    pub fn zone_name(&self) -> &'static str {
        MARKETS
            .iter()
            .find(|(c, _)| *c == self.as_str())
            .map(|(_, z)| *z)
            .unwrap_or("Asia/Taipei")
    }

    pub fn zone(&self) -> TimeZone {
        zone(self.zone_name())
    }
}

/// Looks up an IANA zone; the markets table only names zones the bundled database has.
pub fn zone(name: &str) -> TimeZone {
    TimeZone::get(name).unwrap_or(TimeZone::UTC)
}

/// A market is stored as its code: a stored code the table does not hold fails the load.
impl crate::TextValue for Market {
    fn text(self) -> &'static str {
        MARKETS
            .iter()
            .find(|(c, _)| *c == self.as_str())
            .map_or("TW", |(c, _)| c)
    }

    fn from_text(s: &str) -> Option<Self> {
        let (code, _) = MARKETS.iter().find(|(c, _)| *c == s)?;
        Market::parse(code).ok()
    }
}

impl fmt::Display for Market {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_market_zone_exists() {
        for (code, name) in MARKETS {
            assert!(TimeZone::get(name).is_ok(), "{code}: {name}");
            assert_eq!(Market::parse(code).unwrap().zone_name(), *name);
        }
    }

    #[test]
    fn is_stored_as_its_code_and_read_back_only_from_a_known_one() {
        use crate::TextValue;
        for (code, _) in MARKETS {
            let market = Market::parse(code).unwrap();
            assert_eq!(market.text(), *code);
            assert_eq!(Market::from_text(code), Some(market));
        }
        assert_eq!(Market::from_text("tw"), None, "stored codes are upper-case");
        assert_eq!(Market::from_text("ZZ"), None);
        assert_eq!(Market::from_text(" TW"), None);
    }

    #[test]
    fn parses_case_insensitively_and_rejects_unknowns() {
        assert_eq!(Market::parse("tw").unwrap(), Market::DEFAULT);
        assert_eq!(Market::parse("HK").unwrap().zone_name(), "Asia/Hong_Kong");
        assert_eq!(Market::parse("TWN"), Err(MarketError::Shape));
        assert_eq!(Market::parse("T1"), Err(MarketError::Shape));
        assert_eq!(Market::parse("ZZ"), Err(MarketError::Unknown("ZZ".into())));
    }

    #[test]
    fn the_pattern_names_every_market_in_either_case() {
        let p = market_pattern();
        assert!(p.starts_with("^(?:[Tt][Ww]|[Hh][Kk]|"), "{p}");
        assert_eq!(p.matches('|').count(), MARKETS.len() - 1);
    }
}
