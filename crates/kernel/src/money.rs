//! Money: an amount in hundredths of its currency's ordinary unit, an integer. Every amount the
//! service keeps (budgets, spend, the monthly cap, what the running ads commit) is stored with
//! two decimals, so cents hold it exactly; sums and products are integer arithmetic. A float
//! appears only at the edges: a JSON number read from a request or a platform is rounded to
//! the cent once ([`Cents::from_units`]), and an answer writes the amount as a JSON number
//! ([`Cents::units`]: the nearest double to a two-decimal amount prints as that amount).
//! Ratios (ctr, cpc) are not money and stay floats.

use serde::{Serialize, Serializer};
use std::fmt;
use std::iter::Sum;
use std::ops::{Add, Sub};

/// An amount in cents (hundredths of the currency's ordinary unit). Serialized as a JSON
/// number of ordinary units (`1234.5`), as the interface writes amounts.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Cents(pub i64);

impl Cents {
    pub const ZERO: Cents = Cents(0);

    /// The amount `units` names, rounded to the cent; `None` when it is not a finite number or
    /// is too large for cents.
    pub fn from_units(units: f64) -> Option<Cents> {
        let cents = (units * 100.0).round();
        (cents.is_finite() && cents.abs() < 9.0e15).then_some(Cents(cents as i64))
    }

    /// The amount a decimal text names (`12.34`, `-3`, `0.5`), read without a float; `None`
    /// for anything else or more than two decimals.
    pub fn parse_units(text: &str) -> Option<Cents> {
        let (negative, digits) = match text.strip_prefix('-') {
            Some(rest) => (true, rest),
            None => (false, text),
        };
        let (whole, fraction) = digits.split_once('.').unwrap_or((digits, ""));
        let all_digits = |s: &str| s.bytes().all(|b| b.is_ascii_digit());
        if whole.is_empty() || !all_digits(whole) || !all_digits(fraction) || fraction.len() > 2 {
            return None;
        }
        let cents = whole
            .parse::<i64>()
            .ok()?
            .checked_mul(100)?
            .checked_add(format!("{fraction:0<2}").parse::<i64>().ok()?)?;
        Some(Cents(if negative { -cents } else { cents }))
    }

    /// The amount in ordinary units, for a JSON answer or a comparison with a float.
    pub fn units(self) -> f64 {
        self.0 as f64 / 100.0
    }

    /// The amount `n` times (a daily budget over `n` days), saturating.
    pub fn times(self, n: i64) -> Cents {
        Cents(self.0.saturating_mul(n))
    }

    /// Whether the amount has cents (`12.30`), as a currency without them refuses.
    pub fn has_cents(self) -> bool {
        self.0 % 100 != 0
    }
}

impl Add for Cents {
    type Output = Cents;
    fn add(self, other: Cents) -> Cents {
        Cents(self.0.saturating_add(other.0))
    }
}

impl Sub for Cents {
    type Output = Cents;
    fn sub(self, other: Cents) -> Cents {
        Cents(self.0.saturating_sub(other.0))
    }
}

impl Sum for Cents {
    fn sum<I: Iterator<Item = Cents>>(iter: I) -> Cents {
        iter.fold(Cents::ZERO, Add::add)
    }
}

/// Two decimals: `1234.50`, `-0.05`.
impl fmt::Display for Cents {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let sign = if self.0 < 0 { "-" } else { "" };
        let abs = self.0.unsigned_abs();
        write!(f, "{sign}{}.{:02}", abs / 100, abs % 100)
    }
}

impl Serialize for Cents {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_f64(self.units())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn units_round_to_the_cent_and_sums_are_exact() {
        assert_eq!(Cents::from_units(0.1), Some(Cents(10)));
        assert_eq!(Cents::from_units(1234.505), Some(Cents(123451)));
        assert_eq!(Cents::from_units(f64::NAN), None);
        assert_eq!(Cents::from_units(f64::INFINITY), None);
        assert_eq!(Cents::from_units(1e20), None);
        // 0.1 + 0.2 in floats is 0.30000000000000004; in cents it is 30.
        let sum: Cents = [0.1, 0.2]
            .iter()
            .filter_map(|u| Cents::from_units(*u))
            .sum();
        assert_eq!(sum, Cents(30));
        assert_eq!(sum.units(), 0.3);
        assert_eq!(Cents(1500).times(31), Cents(46500));
        assert_eq!(Cents(i64::MAX).times(2), Cents(i64::MAX));
        assert!(Cents(1230).has_cents() && !Cents(1200).has_cents());
    }

    #[test]
    fn decimal_texts_are_read_exactly() {
        assert_eq!(Cents::parse_units("12.34"), Some(Cents(1234)));
        assert_eq!(Cents::parse_units("12.3"), Some(Cents(1230)));
        assert_eq!(Cents::parse_units("12"), Some(Cents(1200)));
        assert_eq!(Cents::parse_units("-0.05"), Some(Cents(-5)));
        for bad in [
            "",
            ".5",
            "1.234",
            "1e3",
            "12,3",
            "abc",
            "99999999999999999999",
        ] {
            assert_eq!(Cents::parse_units(bad), None, "{bad}");
        }
    }

    #[test]
    fn amounts_print_with_two_decimals_and_serialize_as_numbers() {
        assert_eq!(Cents(123450).to_string(), "1234.50");
        assert_eq!(Cents(-5).to_string(), "-0.05");
        assert_eq!(Cents(0).to_string(), "0.00");
        assert_eq!(serde_json::to_string(&Cents(123450)).unwrap(), "1234.5");
        assert_eq!(serde_json::to_string(&Cents(29)).unwrap(), "0.29");
        assert_eq!(serde_json::to_string(&Cents(100)).unwrap(), "1.0");
    }
}
