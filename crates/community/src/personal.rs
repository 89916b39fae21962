//! Personal data in free text: digest and ticket summaries carry no phone numbers, e-mail
//! addresses or order numbers (such a summary is refused, naming the field).
//!
//! What counts, after full-width forms are read as ASCII (`０９１２` is `0912`, `＠` is `@`):
//!
//! - an e-mail address: `local@domain.tld` (a top-level domain of two or more letters);
//! - a phone number: 8-15 digits in one run that may hold spaces, `-`, `.`, `(`, `)` between
//!   them (at most two in a row) and may start with `+` (`0912-345-678`, `+886 912 345 678`,
//!   `(02) 2345-6789`); dates such as `2026-11-25` or `2026.11.25` are not numbers;
//! - an order number: `#` with four or more digits (`#4521`); a code of letters and five or
//!   more digits (`TW20261125001`, `ORD-1234-5`); four or more digits shortly after the word
//!   order, 訂單, 订单, 單號, 单号, 編號 or 编号 (`order no. 4521`, `訂單 5521`); a bare run of 8
//!   or more digits that is not shaped like a phone number (`20261125001`).
//!
//! Shorter numbers (prices, counts, times, a 3-digit model number) pass.

use serde::Serialize;

/// What kind of personal data a text carries.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum PersonalData {
    Phone,
    Email,
    OrderNumber,
}

impl PersonalData {
    /// How a refusal names it.
    pub fn describe(self) -> &'static str {
        match self {
            PersonalData::Phone => "a phone number",
            PersonalData::Email => "an e-mail address",
            PersonalData::OrderNumber => "an order number",
        }
    }

    /// The refusal's message.
    pub fn message(self) -> String {
        format!(
            "must not carry personal data (it holds {}); leave out phone numbers, e-mail \
             addresses and order numbers",
            self.describe()
        )
    }
}

/// The words after which a number is an order number.
const ORDER_WORDS: &[&str] = &["order", "訂單", "订单", "單號", "单号", "編號", "编号"];
/// How many characters after an order word its number may start.
const ORDER_WORD_REACH: usize = 12;
const PHONE_MIN: usize = 8;
const PHONE_MAX: usize = 15;
const SEPARATORS: &[char] = &[' ', '-', '.', '(', ')'];

/// The first kind of personal data found in `text` (e-mail addresses, then order numbers, then
/// phone numbers), or None.
pub fn find_personal_data(text: &str) -> Option<PersonalData> {
    let chars: Vec<char> = text.chars().map(narrow).collect();
    if has_email(&chars) {
        return Some(PersonalData::Email);
    }
    if has_order_code(&chars) {
        return Some(PersonalData::OrderNumber);
    }
    let chars = blank_dates(chars);
    long_number(&chars)
}

/// Full-width ASCII forms to ASCII, the ideographic space to a space.
fn narrow(c: char) -> char {
    match c {
        '\u{FF01}'..='\u{FF5E}' => char::from_u32(c as u32 - 0xFEE0).unwrap_or(c),
        '\u{3000}' => ' ',
        _ => c,
    }
}

fn has_email(chars: &[char]) -> bool {
    let local = |c: char| c.is_ascii_alphanumeric() || "._%+-".contains(c);
    let domain = |c: char| c.is_ascii_alphanumeric() || ".-".contains(c);
    chars.iter().enumerate().any(|(at, c)| {
        if *c != '@' || at == 0 || !local(chars[at - 1]) {
            return false;
        }
        let host: String = chars[at + 1..].iter().take_while(|c| domain(**c)).collect();
        let host = host.trim_end_matches(['.', '-']);
        match host.rsplit_once('.') {
            Some((name, tld)) => {
                !name.is_empty() && tld.len() >= 2 && tld.chars().all(|c| c.is_ascii_alphabetic())
            }
            None => false,
        }
    })
}

/// `#4521`, a code of letters and five or more digits, or a number after an order word.
fn has_order_code(chars: &[char]) -> bool {
    let code_char = |c: char| c.is_ascii_alphanumeric() || c == '-' || c == '_';
    let digits = |s: &[char]| s.iter().filter(|c| c.is_ascii_digit()).count();
    // Tokens of letters, digits, - and _.
    let mut i = 0;
    while i < chars.len() {
        if !code_char(chars[i]) {
            i += 1;
            continue;
        }
        let start = i;
        while i < chars.len() && code_char(chars[i]) {
            i += 1;
        }
        let token = &chars[start..i];
        let hashed = start > 0 && chars[start - 1] == '#';
        let lettered = token.iter().any(|c| c.is_ascii_alphabetic());
        if (hashed && digits(token) >= 4) || (lettered && digits(token) >= 5) {
            return true;
        }
    }
    let lower: Vec<char> = chars.iter().flat_map(|c| c.to_lowercase()).collect();
    ORDER_WORDS.iter().any(|word| {
        let word: Vec<char> = word.chars().collect();
        (0..lower.len().saturating_sub(word.len() - 1))
            .filter(|&at| lower[at..].starts_with(&word))
            .any(|at| {
                let after = &lower[at + word.len()..];
                let reach = &after[..after.len().min(ORDER_WORD_REACH + 8)];
                // A run of four or more digits starting within reach.
                let mut run = 0;
                reach.iter().enumerate().any(|(k, c)| {
                    if c.is_ascii_digit() {
                        run += 1;
                        run >= 4 && k + 1 - run <= ORDER_WORD_REACH
                    } else {
                        run = 0;
                        false
                    }
                })
            })
    })
}

/// Dates `YYYY-MM-DD`, `YYYY/MM/DD` and `YYYY.MM.DD` replaced by a character that breaks a
/// number, so a date and a time next to it are not read as one long number.
fn blank_dates(mut chars: Vec<char>) -> Vec<char> {
    let is_digit = |c: Option<&char>| c.is_some_and(char::is_ascii_digit);
    let mut i = 0;
    while i + 8 <= chars.len() {
        let year = (0..4).all(|k| chars[i + k].is_ascii_digit()) && !is_digit(chars.get(i + 4));
        let sep = chars.get(i + 4).copied();
        if year && !(i > 0 && chars[i - 1].is_ascii_digit()) && matches!(sep, Some('-' | '/' | '.'))
        {
            // month: 1-2 digits, the same separator, day: 1-2 digits.
            let mut j = i + 5;
            let month = chars[j..].iter().take_while(|c| c.is_ascii_digit()).count();
            j += month;
            if (1..=2).contains(&month) && chars.get(j).copied() == sep {
                j += 1;
                let day = chars[j..].iter().take_while(|c| c.is_ascii_digit()).count();
                if (1..=2).contains(&day) {
                    j += day;
                    for c in &mut chars[i..j] {
                        *c = '|';
                    }
                    i = j;
                    continue;
                }
            }
        }
        i += 1;
    }
    chars
}

/// A run of 8 or more digits (with separators between them, at most two in a row): a phone
/// number when it starts with `+`, `(` or `0` or holds separators, else an order number.
fn long_number(chars: &[char]) -> Option<PersonalData> {
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        let starts = c.is_ascii_digit()
            || ((c == '+' || c == '(') && chars.get(i + 1).is_some_and(char::is_ascii_digit));
        if !starts || (i > 0 && chars[i - 1].is_ascii_alphanumeric()) {
            i += 1;
            continue;
        }
        let start = i;
        let (mut digits, mut separated, mut run_of_seps) = (0usize, false, 0usize);
        let mut end = i;
        if c == '+' || c == '(' {
            i += 1;
        }
        while i < chars.len() {
            let c = chars[i];
            if c.is_ascii_digit() {
                separated = separated || (digits > 0 && run_of_seps > 0);
                digits += 1;
                run_of_seps = 0;
                end = i + 1;
            } else if SEPARATORS.contains(&c) && run_of_seps < 2 {
                run_of_seps += 1;
            } else {
                break;
            }
            i += 1;
        }
        if digits >= PHONE_MIN {
            let leading = chars[start];
            let phone = leading == '+'
                || leading == '('
                || leading == '0'
                || (separated && digits <= PHONE_MAX);
            return Some(if phone {
                PersonalData::Phone
            } else {
                PersonalData::OrderNumber
            });
        }
        i = end.max(start + 1);
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use PersonalData::*;

    fn found(text: &str) -> Option<PersonalData> {
        find_personal_data(text)
    }

    #[test]
    fn phone_numbers_are_found_in_their_usual_shapes() {
        for text in [
            "call me 0912-345-678",
            "0912345678",
            "+886 912 345 678",
            "手機 0912 345 678 謝謝",
            "(02) 2345-6789",
            "電話02-2345-6789",
            "office 2345 6789",
            "０９１２３４５６７８",
            "+1 (415) 555-0132",
            "tel: 03.1234.5678",
        ] {
            assert_eq!(found(text), Some(Phone), "{text}");
        }
    }

    #[test]
    fn e_mail_addresses_are_found() {
        for text in [
            "mail mia@example.com please",
            "寫信到mia.chen+shop@mail.example.com.tw",
            "ANN@EXAMPLE.ORG",
            "mia＠example．com",
        ] {
            assert_eq!(found(text), Some(Email), "{text}");
        }
    }

    #[test]
    fn order_numbers_are_found() {
        for text in [
            "order #4521 never came",
            "order no. 4521",
            "Order number: 98765",
            "訂單編號 TW20261125001",
            "订单 5521 还没到",
            "單號：88123",
            "ORD-1234-5 refund",
            "20261125001 is the one",
        ] {
            assert_eq!(found(text), Some(OrderNumber), "{text}");
        }
    }

    #[test]
    fn ordinary_text_with_numbers_passes() {
        for text in [
            "",
            "Loves the serum, asked about the NT$590 price and 3 colours",
            "meetup on 2026-11-25 10:30 at Taipei 101",
            "event 2026/12/01 and 2026.12.02",
            "bought 2 sets, 1,200,000 views, SPF50 sunscreen",
            "follow @mia_beauty on threads",
            "asked about TW-T001 posts, iPhone 15",
            "wants orders to ship faster",
            "1234567 is seven digits",
            "ordered 3 masks",
            "喜歡晚安面膜，問了價格",
        ] {
            assert_eq!(found(text), None, "{text}");
        }
    }

    #[test]
    fn the_message_names_what_was_found() {
        assert!(Phone.message().contains("a phone number"));
        assert!(Email.message().contains("an e-mail address"));
        assert!(OrderNumber.message().contains("an order number"));
    }
}
