//! Keys must never be stored in free text or echoed: anything shaped like a fleetdesk key is
//! replaced before it is written. The pipeline applies [`redact_json`] to every string of a
//! call's arguments, so each free-text field (heartbeat summary and run_id, reasons, notes,
//! failure reasons, and every later one) is covered in one place; error messages go through
//! [`redact_keys`] when they are made. Two shapes are keys: fleetdesk's own (`fda_` and `fdp_`
//! keys) and webhook signing secrets (`whsec_` and at least 32 base64 characters, the
//! Standard Webhooks shape of 24 bytes or more).

/// What replaces a key found in free text.
pub const REDACTED: &str = "[redacted key]";

/// The length of the fleetdesk key (`fda_<8>_<43>`, `fdp_<8>_<43>`) starting at `i`, if any.
fn fleetdesk_key_at(bytes: &[u8], i: usize) -> Option<usize> {
    let body = |b: u8| b.is_ascii_alphanumeric() || b == b'-' || b == b'_';
    let n = bytes.len();
    if i + 56 > n
        || bytes[i] != b'f'
        || bytes[i + 1] != b'd'
        || !(bytes[i + 2] == b'a' || bytes[i + 2] == b'p')
        || bytes[i + 3] != b'_'
    {
        return None;
    }
    (bytes[i + 4..i + 12].iter().all(u8::is_ascii_alphanumeric)
        && bytes[i + 12] == b'_'
        && bytes[i + 13..i + 56].iter().all(|&b| body(b)))
    .then_some(56)
}

/// The fewest base64 characters after `whsec_` that make a webhook secret (24 bytes).
const WHSEC_MIN_CHARS: usize = 32;

/// The length of the webhook secret (`whsec_` and its whole base64 run) starting at `i`.
fn webhook_secret_at(bytes: &[u8], i: usize) -> Option<usize> {
    let rest = bytes.get(i..)?.strip_prefix(b"whsec_")?;
    let base64 = |b: &u8| b.is_ascii_alphanumeric() || matches!(b, b'+' | b'/' | b'=');
    let run = rest.iter().take_while(|b| base64(b)).count();
    (run >= WHSEC_MIN_CHARS).then_some(6 + run)
}

/// The length of the key of either shape starting at `i`, if any.
fn key_at(bytes: &[u8], i: usize) -> Option<usize> {
    match bytes[i] {
        b'f' => fleetdesk_key_at(bytes, i),
        b'w' => webhook_secret_at(bytes, i),
        _ => None,
    }
}

/// True when `text` holds something shaped like a key. Allocates nothing: the pipeline asks
/// this of every string of every call (an inline image's base64 included) and copies only
/// the rare string that holds a key.
pub fn has_key(text: &str) -> bool {
    let bytes = text.as_bytes();
    bytes
        .iter()
        .enumerate()
        .any(|(i, &b)| matches!(b, b'f' | b'w') && key_at(bytes, i).is_some())
}

/// Replaces every `fda_<8>_<43>` / `fdp_<8>_<43>` key and every `whsec_` secret in `text`;
/// says whether any was found.
pub fn redact_keys(text: &str) -> (String, bool) {
    let bytes = text.as_bytes();
    let mut out = String::with_capacity(text.len());
    let mut found = false;
    let mut i = 0;
    let mut copied = 0;
    while i < bytes.len() {
        if let Some(len) = key_at(bytes, i) {
            out.push_str(&text[copied..i]);
            out.push_str(REDACTED);
            i += len;
            copied = i;
            found = true;
        } else {
            i += 1;
        }
    }
    out.push_str(&text[copied..]);
    (out, found)
}

/// Redacts every string of a JSON value, object keys included; says whether any key was found.
pub fn redact_json(value: &mut serde_json::Value) -> bool {
    use serde_json::Value;
    match value {
        Value::String(s) => {
            let found = has_key(s);
            if found {
                *s = redact_keys(s).0;
            }
            found
        }
        Value::Array(items) => items
            .iter_mut()
            .fold(false, |found, v| redact_json(v) | found),
        Value::Object(map) => {
            let mut found = false;
            if map.keys().any(|k| has_key(k)) {
                let old = std::mem::take(map);
                for (k, v) in old {
                    let (k, hit) = redact_keys(&k);
                    found |= hit;
                    map.insert(k, v);
                }
            }
            map.values_mut()
                .fold(found, |found, v| redact_json(v) | found)
        }
        _ => false,
    }
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

    #[test]
    fn has_key_finds_a_key_anywhere_and_nothing_else() {
        assert!(has_key(KEY));
        assert!(has_key(&format!("see {KEY} here")));
        assert!(!has_key(""));
        assert!(!has_key("fda_short_key and plain text"));
        assert!(!has_key(&KEY[..KEY.len() - 1]));
        for text in ["plain", "fda_", &KEY[1..]] {
            assert_eq!(has_key(text), redact_keys(text).1, "{text}");
        }
    }

    #[test]
    fn webhook_secrets_are_keys_from_32_base64_characters() {
        let secret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";
        assert_eq!(secret.len(), 6 + 32);
        let (out, found) = redact_keys(&format!("use {secret}, then {secret}=="));
        assert!(found);
        assert_eq!(out, format!("use {REDACTED}, then {REDACTED}"));
        let padded = "whsec_C2FVsBQIhrscChlQIMV+b5sSYspob7oD/+rMV5nlwNY=";
        assert_eq!(
            redact_keys(&format!("[{padded}]")).0,
            format!("[{REDACTED}]")
        );
        for text in [
            &secret[..secret.len() - 1],
            "whsec_",
            "whsec_ plain",
            "a whsec_x",
        ] {
            assert_eq!(redact_keys(text), (text.to_owned(), false), "{text}");
            assert!(!has_key(text), "{text}");
        }
        assert!(has_key(&format!("x{secret}")));
    }

    #[test]
    fn every_string_of_a_json_value_is_redacted() {
        let mut v = serde_json::json!({
            "note": format!("see {KEY}"),
            "items": [{"reason": KEY}, 3, null, "plain"],
            KEY: {"nested": [format!("a{KEY}b")]},
            "n": 1
        });
        assert!(redact_json(&mut v));
        assert_eq!(
            v,
            serde_json::json!({
                "note": format!("see {REDACTED}"),
                "items": [{"reason": REDACTED}, 3, null, "plain"],
                REDACTED: {"nested": [format!("a{REDACTED}b")]},
                "n": 1
            })
        );
        let mut clean = serde_json::json!({"a": ["b", {"c": "d"}]});
        let before = clean.clone();
        assert!(!redact_json(&mut clean));
        assert_eq!(clean, before);
    }
}

/// Query parameters that carry an access token in a share link (matched without case).
pub const TOKEN_PARAMS: &[&str] = &[
    "token",
    "access_token",
    "key",
    "api_key",
    "apikey",
    "sig",
    "signature",
    "auth",
    "x-amz-signature",
    "x-amz-credential",
    "x-goog-signature",
    "code",
    "secret",
    "client_secret",
    "x-goog-credential",
    // Share links' passwords and keys: Baidu Pan's extraction code, Dropbox, Google Drive.
    "pwd",
    "password",
    "passwd",
    "rlkey",
    "resourcekey",
];

/// Whether a query parameter's name is one of [`TOKEN_PARAMS`] (without case).
pub fn is_token_param(name: &str) -> bool {
    TOKEN_PARAMS.iter().any(|p| name.eq_ignore_ascii_case(p))
}

/// The first query parameter of `link` that carries an access token (`?token=…`, `&sig=…`,
/// `#access_token=…`), if any: a wiki source's locator or a source ref must not give away
/// access. A parameter named without a value is not a token.
pub fn access_token_param(link: &str) -> Option<&str> {
    if link_password(link) {
        return Some("password");
    }
    let query = link.split_once(['?', '#'])?.1;
    query
        .split(['&', ';', '?', '#'])
        .filter_map(|pair| pair.split_once('='))
        .filter(|(_, value)| !value.trim().is_empty())
        .map(|(name, _)| name.trim())
        .find(|name| is_token_param(name))
}

/// `scheme://user:password@host/...`: a link that carries its password.
fn link_password(link: &str) -> bool {
    let Some((_, rest)) = link.split_once("://") else {
        return false;
    };
    let authority = rest.split(['/', '?', '#']).next().unwrap_or_default();
    authority
        .rsplit_once('@')
        .is_some_and(|(user, _)| user.split_once(':').is_some_and(|(_, pw)| !pw.is_empty()))
}

#[cfg(test)]
mod access_token_tests {
    use super::access_token_param;

    #[test]
    fn finds_the_token_parameter_of_a_share_link() {
        assert_eq!(
            access_token_param("https://notion.so/page?v=1&token=abc"),
            Some("token")
        );
        assert_eq!(
            access_token_param("https://x.test/f#ACCESS_TOKEN=zz"),
            Some("ACCESS_TOKEN")
        );
        assert_eq!(
            access_token_param("https://s3.test/o?X-Amz-Signature=ab"),
            Some("X-Amz-Signature")
        );
        assert_eq!(access_token_param("https://notion.so/page?v=1&p=2"), None);
        assert_eq!(access_token_param("vault/notes/voice.md"), None);
        assert_eq!(access_token_param("https://x.test/?token="), None);
        assert_eq!(access_token_param("https://x.test/?tokens=1"), None);
        assert_eq!(
            access_token_param("https://ann:s3cret@files.test/notes"),
            Some("password")
        );
        assert_eq!(access_token_param("https://ann@files.test/notes"), None);
        assert_eq!(
            access_token_param("https://pan.baidu.com/s/1abc?pwd=x7k2"),
            Some("pwd")
        );
        assert_eq!(
            access_token_param("https://www.dropbox.com/scl/fi/a/b?rlkey=zz&dl=0"),
            Some("rlkey")
        );
        assert_eq!(
            access_token_param("https://x.test/a?next=https://y.test/@z"),
            None
        );
    }
}
