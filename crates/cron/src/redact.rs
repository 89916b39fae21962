//! Credentials in a run's summary and log: bearer tokens, cookie headers and token-like
//! parameters are replaced before anything is stored. Fleetdesk keys are already replaced for
//! every field by the pipeline (`fleetdesk_kernel::secrets`); this adds what logs of other
//! tools carry.

/// What replaces a credential.
pub const REDACTED: &str = "[redacted]";

/// Parameter names whose value is a credential (`name=value` or `name: value`, any case).
const SECRET_NAMES: &[&str] = &[
    "token",
    "access_token",
    "refresh_token",
    "id_token",
    "auth_token",
    "api_key",
    "apikey",
    "api-key",
    "x-api-key",
    "client_secret",
    "password",
    "passwd",
    "secret",
    "sessionid",
    "session_id",
];

/// Short, common words that name a credential only as a URL query parameter (`?code=...`,
/// `&sid=...`): `exit code: 1` or `"code": 404` are left alone.
const QUERY_ONLY_NAMES: &[&str] = &["code", "sid", "session", "otp"];

/// Whether what follows `Bearer ` / `Basic ` looks like a credential rather than a word
/// (`basic idea`, `Basic Authentication`): 8 or more token characters with a digit, a symbol
/// or an upper-case letter after the first.
fn token_shaped(value: &str) -> bool {
    value.len() >= 8
        && value.chars().all(|c| {
            c.is_ascii_alphanumeric() || matches!(c, '-' | '.' | '_' | '~' | '+' | '/' | '=')
        })
        && value.char_indices().any(|(i, c)| {
            c.is_ascii_digit() || !c.is_ascii_alphanumeric() || (i > 0 && c.is_ascii_uppercase())
        })
}

fn is_name_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_' || c == '-'
}

fn value_end(s: &str) -> usize {
    s.find(|c: char| c.is_whitespace() || matches!(c, '&' | ';' | ',' | '"' | '\'' | '<' | '>'))
        .unwrap_or(s.len())
}

/// Replaces the credentials of one line.
fn redact_line(line: &str) -> String {
    let lower = line.to_ascii_lowercase();
    // Cookie headers: the whole value.
    for header in ["set-cookie:", "cookie:"] {
        if let Some(i) = lower.find(header) {
            let (before, name) = line[..i + header.len()].split_at(i);
            return format!("{}{name} {REDACTED}", redact_line(before));
        }
    }
    let mut out = String::with_capacity(line.len());
    let mut rest = line;
    let mut lower_rest = lower.as_str();
    while !rest.is_empty() {
        // `Bearer <token>` / `Basic <token>`.
        let scheme = ["bearer ", "basic "]
            .iter()
            .filter_map(|s| lower_rest.find(s).map(|i| (i, s.len())))
            .min();
        // `name=value` or `name: value` of a secret name.
        let param = find_param(lower_rest);
        let (next, is_scheme) = match (scheme, param) {
            (Some(a), Some(b)) if a <= b => (Some(a), true),
            (Some(a), None) => (Some(a), true),
            (_, b) => (b, false),
        };
        let Some((at, len)) = next else {
            out.push_str(rest);
            break;
        };
        out.push_str(&rest[..at + len]);
        let after = &rest[at + len..];
        let skip = after.len() - after.trim_start().len();
        let value = &after[skip..];
        let end = value_end(value);
        out.push_str(&after[..skip]);
        if is_scheme && !token_shaped(&value[..end]) {
            // A word after `bearer`/`basic`: kept, and read on for other credentials.
            let consumed = at + len + skip;
            rest = &rest[consumed..];
            lower_rest = &lower_rest[consumed..];
            continue;
        }
        if end > 0 {
            out.push_str(REDACTED);
        }
        let consumed = at + len + skip + end;
        rest = &rest[consumed..];
        lower_rest = &lower_rest[consumed..];
    }
    out
}

/// The first `name=` / `name:` (`name` in [`SECRET_NAMES`], whole word) in a lower-cased text:
/// its position and the length up to the value.
fn find_param(lower: &str) -> Option<(usize, usize)> {
    let mut best: Option<(usize, usize)> = None;
    let names = SECRET_NAMES.iter().map(|n| (n, false));
    for (name, query_only) in names.chain(QUERY_ONLY_NAMES.iter().map(|n| (n, true))) {
        let mut from = 0;
        while let Some(i) = lower[from..].find(name) {
            let at = from + i;
            from = at + name.len();
            let before_ok = lower[..at]
                .chars()
                .next_back()
                .is_none_or(|c| !is_name_char(c));
            let tail = &lower[at + name.len()..];
            let sep = tail.len() - tail.trim_start_matches(['"', '\'']).len();
            let tail2 = &tail[sep..];
            let Some(op) = tail2.chars().next().filter(|c| *c == '=' || *c == ':') else {
                continue;
            };
            let mut len = name.len() + sep + op.len_utf8();
            let after = &tail2[op.len_utf8()..];
            let ws = after.len() - after.trim_start().len();
            let quote = after[ws..].starts_with(['"', '\'']) as usize;
            len += ws + quote;
            if !before_ok {
                continue;
            }
            if query_only && !(op == '=' && sep == 0 && lower[..at].ends_with(['?', '&'])) {
                continue;
            }
            if best.is_none_or(|(b, _)| at < b) {
                best = Some((at, len));
            }
            break;
        }
    }
    best
}

/// Replaces credentials in a free text, line by line.
pub fn redact_secrets(text: &str) -> String {
    text.split_inclusive('\n')
        .map(|l| {
            let (body, nl) = match l.strip_suffix('\n') {
                Some(b) => (b, "\n"),
                None => (l, ""),
            };
            format!("{}{nl}", redact_line(body))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn redacts_what_logs_carry() {
        let cases = [
            ("Authorization: Bearer eyJabc.def", "abc.def"),
            (
                "curl -H 'authorization: basic dXNlcjpwYXNz'",
                "dXNlcjpwYXNz",
            ),
            ("Cookie: a=1; b=2", "a=1"),
            ("< Set-Cookie: sid=xyz; HttpOnly", "xyz"),
            ("GET /cb?code=4242&state=ok", "4242"),
            ("url?access_token=AAA&x=1", "AAA"),
            ("token=abc123", "abc123"),
            ("\"api_key\": \"k-999\"", "k-999"),
            ("password: hunter2", "hunter2"),
            ("GET /login?otp=918273", "918273"),
            ("cb?x=1&session=s3ss10n", "s3ss10n"),
            (
                "Authorization: Basic dXNlcjpwYXNz and Bearer of-9f8e7d6c",
                "of-9f8e7d6c",
            ),
            ("token: x; basic words then Bearer abcdefgh1", "abcdefgh1"),
        ];
        for (text, secret) in cases {
            let out = redact_secrets(text);
            assert!(!out.contains(secret), "{text} -> {out}");
            assert!(out.contains(REDACTED), "{text} -> {out}");
        }
    }

    #[test]
    fn leaves_ordinary_text() {
        for text in [
            "posted 3 items, 0 failed",
            "exit status 0",
            "tokens used: 1200",
            "encode=utf8",
            "process exited, exit code: 1",
            "{\"code\": 404, \"error\": \"not found\"}",
            "session: 12 posts, sid: 3",
            "otp=disabled in config",
            "a basic idea for the bearer of news",
            "Basic Authentication is off",
        ] {
            assert_eq!(redact_secrets(text), text);
        }
        assert_eq!(redact_secrets("a\nb\n"), "a\nb\n");
    }
}
