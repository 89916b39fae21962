//! One delivery attempt: the request's Standard Webhooks headers, what came back
//! ([`Outcome`]) and what it means ([`judge`]). A 2xx answer delivers; any other status
//! (redirects too: they are never followed, the endpoint's URL is to be corrected instead) or
//! no answer is a failure, tried again on the [`crate::schedule`].

use jiff::Timestamp;
use uuid::Uuid;

use crate::schedule::next_try;

/// The header of the message id, the same on every attempt (receivers deduplicate by it).
pub const ID_HEADER: &str = "webhook-id";
/// The header of the attempt's time, in unix seconds.
pub const TIMESTAMP_HEADER: &str = "webhook-timestamp";
/// The header of the signatures ([`crate::signature_header`]).
pub const SIGNATURE_HEADER: &str = "webhook-signature";

/// What one attempt came to, as the sender saw it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Outcome {
    /// The answer's status; `None` when none came (refused, unreachable, timed out).
    pub status: Option<u16>,
    /// What went wrong, without the request's body or headers.
    pub error: Option<String>,
    pub latency_ms: u32,
    /// The start of the answer's body, for the endpoint's owner to read.
    pub body_excerpt: String,
}

impl Outcome {
    /// No answer: `error` says why.
    pub fn failed(error: impl Into<String>, latency_ms: u32) -> Outcome {
        Outcome {
            status: None,
            error: Some(error.into()),
            latency_ms,
            body_excerpt: String::new(),
        }
    }

    /// Whether the receiver took the message: it answered 2xx.
    pub fn delivered(&self) -> bool {
        self.status.is_some_and(|s| (200..300).contains(&s))
    }
}

/// What to do after an attempt.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    Delivered,
    /// Try again at `at`.
    Retry {
        at: Timestamp,
    },
    /// The schedule is spent.
    GaveUp,
}

/// What `outcome` means after `attempts_made` attempts (this one counted), at `now`;
/// `jitter_permille` as [`next_try`] reads it. A 2xx status delivers even when reading the
/// body then failed.
pub fn judge(
    outcome: &Outcome,
    attempts_made: u32,
    now: Timestamp,
    jitter_permille: u16,
) -> Verdict {
    if outcome.delivered() {
        return Verdict::Delivered;
    }
    match next_try(attempts_made.max(1), now, jitter_permille) {
        Some(at) => Verdict::Retry { at },
        None => Verdict::GaveUp,
    }
}

/// The three Standard Webhooks headers of an attempt.
pub fn headers(
    msg_id: &str,
    timestamp_secs: i64,
    signature: String,
) -> [(&'static str, String); 3] {
    [
        (ID_HEADER, msg_id.to_owned()),
        (TIMESTAMP_HEADER, timestamp_secs.to_string()),
        (SIGNATURE_HEADER, signature),
    ]
}

/// The message id of an event: `msg_` and its uuid's 32 hex digits (no `.`, which the signed
/// content uses as its separator).
pub fn message_id(event: Uuid) -> String {
    format!("msg_{}", event.simple())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::schedule::MAX_ATTEMPTS;
    use jiff::SignedDuration;

    fn now() -> Timestamp {
        "2026-11-21T09:00:00Z".parse().unwrap()
    }

    fn answered(status: u16) -> Outcome {
        Outcome {
            status: Some(status),
            error: None,
            latency_ms: 12,
            body_excerpt: "ok".into(),
        }
    }

    fn retry_after(outcome: &Outcome, attempts_made: u32) -> Option<SignedDuration> {
        match judge(outcome, attempts_made, now(), 500) {
            Verdict::Retry { at } => Some(at.duration_since(now())),
            _ => None,
        }
    }

    #[test]
    fn a_2xx_answer_delivers() {
        for status in [200, 201, 204, 299] {
            assert_eq!(
                judge(&answered(status), 1, now(), 0),
                Verdict::Delivered,
                "{status}"
            );
            assert_eq!(
                judge(&answered(status), MAX_ATTEMPTS, now(), 0),
                Verdict::Delivered
            );
        }
        let mut late_error = answered(200);
        late_error.error = Some("the body broke off".into());
        assert_eq!(judge(&late_error, 1, now(), 0), Verdict::Delivered);
    }

    #[test]
    fn any_other_status_fails_redirects_included() {
        for status in [
            100, 199, 300, 301, 302, 304, 307, 308, 400, 404, 410, 429, 500, 503,
        ] {
            assert_eq!(
                retry_after(&answered(status), 1),
                Some(SignedDuration::from_secs(5)),
                "{status}"
            );
        }
    }

    #[test]
    fn no_answer_fails() {
        let refused = Outcome::failed("refused: the host resolves to a private address", 3);
        assert!(!refused.delivered());
        assert_eq!(retry_after(&refused, 2), Some(SignedDuration::from_mins(5)));
        let nothing = Outcome {
            status: None,
            error: None,
            latency_ms: 0,
            body_excerpt: String::new(),
        };
        assert_eq!(retry_after(&nothing, 1), Some(SignedDuration::from_secs(5)));
    }

    #[test]
    fn the_tenth_failure_gives_up() {
        assert_eq!(
            retry_after(&answered(500), 9),
            Some(SignedDuration::from_hours(20))
        );
        assert_eq!(judge(&answered(500), 10, now(), 500), Verdict::GaveUp);
        assert_eq!(judge(&answered(500), 11, now(), 500), Verdict::GaveUp);
        // Zero attempts made reads as one: a failure is never retried at once.
        assert_eq!(
            retry_after(&answered(500), 0),
            Some(SignedDuration::from_secs(5))
        );
    }

    #[test]
    fn the_three_headers_and_the_message_id() {
        let id = Uuid::parse_str("0195f3a4-7b2c-7d4e-9f00-112233445566").unwrap();
        assert_eq!(message_id(id), "msg_0195f3a47b2c7d4e9f00112233445566");
        assert!(!message_id(id).contains('.'));
        let [(n1, v1), (n2, v2), (n3, v3)] = headers(&message_id(id), 1614265330, "v1,x".into());
        assert_eq!(
            (n1, v1.as_str()),
            ("webhook-id", "msg_0195f3a47b2c7d4e9f00112233445566")
        );
        assert_eq!((n2, v2.as_str()), ("webhook-timestamp", "1614265330"));
        assert_eq!((n3, v3.as_str()), ("webhook-signature", "v1,x"));
    }
}
