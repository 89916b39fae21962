//! Percent-encoding of one path segment or URI part (RFC 3986): what a `{code}` or `{id}`
//! looks like in a path, and in a resource URI of MCP.

/// Decodes `%XX` escapes into UTF-8 (`+` stays `+`, as in any path); `None` for a malformed
/// escape or bytes that are not UTF-8.
pub fn decode(segment: &str) -> Option<String> {
    let bytes = segment.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let hex = bytes.get(i + 1..i + 3)?;
            let hex = std::str::from_utf8(hex).ok()?;
            out.push(u8::from_str_radix(hex, 16).ok()?);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8(out).ok()
}

/// Encodes every byte but the unreserved characters (letters, digits, `-._~`).
pub fn encode(value: &str) -> String {
    let mut out = String::with_capacity(value.len());
    for b in value.bytes() {
        if b.is_ascii_alphanumeric() || b"-._~".contains(&b) {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn path_segments_are_decoded_once() {
        assert_eq!(decode("TW-T001").as_deref(), Some("TW-T001"));
        assert_eq!(decode("A%20B").as_deref(), Some("A B"));
        assert_eq!(decode("%E6%B8%AC").as_deref(), Some("測"));
        assert_eq!(decode("a%2Bb+c").as_deref(), Some("a+b+c"));
        assert_eq!(decode("%2541").as_deref(), Some("%41"));
        assert_eq!(decode("%zz"), None);
        assert_eq!(decode("%E6"), None);
        assert_eq!(decode("%4"), None);
    }

    #[test]
    fn what_is_encoded_decodes_to_itself() {
        for value in ["TW-T001", "TW 測1", "a/b?c#d%e+f", "~._-"] {
            assert_eq!(decode(&encode(value)).as_deref(), Some(value), "{value}");
        }
        assert_eq!(encode("TW 測"), "TW%20%E6%B8%AC");
    }
}
