//! Keys must never be stored in free text (heartbeat summaries, reasons): anything shaped like
//! a fleetdesk key is replaced before it is written.

/// What replaces a key found in free text.
pub const REDACTED: &str = "[redacted key]";

fn is_key_at(bytes: &[u8], i: usize) -> bool {
    let body = |b: u8| b.is_ascii_alphanumeric() || b == b'-' || b == b'_';
    let n = bytes.len();
    if i + 56 > n
        || bytes[i] != b'f'
        || bytes[i + 1] != b'd'
        || !(bytes[i + 2] == b'a' || bytes[i + 2] == b'p')
        || bytes[i + 3] != b'_'
    {
        return false;
    }
    bytes[i + 4..i + 12].iter().all(u8::is_ascii_alphanumeric)
        && bytes[i + 12] == b'_'
        && bytes[i + 13..i + 56].iter().all(|&b| body(b))
}

/// Replaces every `fda_<8>_<43>` / `fdp_<8>_<43>` in `text`; says whether any was found.
pub fn redact_keys(text: &str) -> (String, bool) {
    let bytes = text.as_bytes();
    let mut out = String::with_capacity(text.len());
    let mut found = false;
    let mut i = 0;
    let mut copied = 0;
    while i < bytes.len() {
        if is_key_at(bytes, i) {
            out.push_str(&text[copied..i]);
            out.push_str(REDACTED);
            i += 56;
            copied = i;
            found = true;
        } else {
            i += 1;
        }
    }
    out.push_str(&text[copied..]);
    (out, found)
}

#[cfg(test)]
mod tests {
    use super::*;

    const KEY: &str = "fda_AbCd1234_abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQ";

    #[test]
    fn keys_in_text_are_replaced() {
        assert_eq!(KEY.len(), 56);
        let (out, found) = redact_keys(&format!("done; key={KEY}, 完成"));
        assert!(found);
        assert_eq!(out, format!("done; key={REDACTED}, 完成"));
        let personal = KEY.replacen("fda", "fdp", 1);
        assert_eq!(
            redact_keys(&format!("{personal}{KEY}")).0,
            format!("{REDACTED}{REDACTED}")
        );
    }

    #[test]
    fn ordinary_text_is_untouched() {
        for t in [
            "",
            "fda_",
            "fda_short_x and more",
            "plain 中文 text",
            &KEY[..55],
        ] {
            assert_eq!(redact_keys(t), (t.to_owned(), false));
        }
    }
}
