//! Ad picks: a person's choice of a research card for an account, numbered `SP-<n>` per
//! organization, which an agent drafts a sponsored post with.

use std::fmt;

fleetdesk_kernel::text_enum! {
    /// Where a pick stands: `open` until a draft names it, then `drafted`; `cancelled` by a
    /// person.
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
    #[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
    pub enum PickStatus {
        Open => "open",
        Drafted => "drafted",
        Cancelled => "cancelled",
    }
}

/// A pick's number within its organization: written `SP-<n>`, read as that or the bare `<n>`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct PickNumber(pub i64);

impl PickNumber {
    /// `SP-12`, `sp-12` or `12`; digits only, at most 15 of them, above zero.
    pub fn parse(text: &str) -> Option<PickNumber> {
        let text = text.trim();
        let digits = match text.get(..3) {
            Some(prefix) if prefix.eq_ignore_ascii_case("SP-") => &text[3..],
            _ => text,
        };
        if digits.is_empty() || digits.len() > 15 || !digits.bytes().all(|b| b.is_ascii_digit()) {
            return None;
        }
        digits.parse().ok().filter(|n| *n > 0).map(PickNumber)
    }
}

impl fmt::Display for PickNumber {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "SP-{}", self.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_pick_is_sp_dash_digits_or_the_bare_integer() {
        assert_eq!(PickNumber::parse("SP-12"), Some(PickNumber(12)));
        assert_eq!(PickNumber::parse("sp-12"), Some(PickNumber(12)));
        assert_eq!(PickNumber::parse(" 7 "), Some(PickNumber(7)));
        assert_eq!(
            PickNumber::parse(&"9".repeat(15)),
            Some(PickNumber(999_999_999_999_999))
        );
        for bad in [
            "",
            "SP-",
            "SP-0",
            "0",
            "SP-1a",
            "SP--1",
            "-1",
            "1.5",
            "PS-1",
            &"9".repeat(16),
        ] {
            assert_eq!(PickNumber::parse(bad), None, "{bad}");
        }
        assert_eq!(PickNumber(42).to_string(), "SP-42");
    }
}
