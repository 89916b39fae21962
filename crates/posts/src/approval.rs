//! What was approved is what went out. An approval (internal or client) pins what the person
//! saw: the body's fingerprint (normalized as report matching normalizes it), the body, the
//! media's content hashes in publishing order and the characters ([`ApprovalPin`]). A report
//! that says the post was published with another body, or publishes a post nobody approved,
//! marks it ([`PublishedDiffers`]): nothing is refused (the platform is the truth), people are
//! told.

use crate::post::{Character, PostSubject, body_key};
use fleetdesk_kernel::events::{EventBody, NewEvent, PublishedDiffersChange};
use jiff::Timestamp;
use serde::{Deserialize, Serialize};

/// How long a marked post stays in people's `GET /today` after it was published.
pub const DIFFERS_SHOWN: jiff::SignedDuration = jiff::SignedDuration::from_hours(7 * 24);

/// The most marked posts `GET /today` lists per workspace (the newest).
pub const DIFFERS_SHOWN_MAX: i64 = 50;

/// What an approval pinned, as the review record's approving entry and the post keep it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct ApprovalPin {
    /// SHA-256 (hex) of the body as report matching normalizes it (trimmed, every run of
    /// whitespace one space).
    pub fingerprint: String,
    /// The body approved.
    pub body: String,
    /// The SHA-256 (hex) of each medium's content, in publishing order.
    pub media: Vec<String>,
    /// The characters' codes, main character first.
    pub characters: Vec<String>,
}

impl ApprovalPin {
    /// The pin of a post approved as it stands: its body, media hashes and characters.
    pub fn of(body: &str, media: Vec<String>, characters: &[Character]) -> ApprovalPin {
        ApprovalPin {
            fingerprint: body_key(body),
            body: body.to_owned(),
            media,
            characters: characters.iter().map(|c| c.code.clone()).collect(),
        }
    }
}

fleetdesk_kernel::text_enum! {
    /// Why a published post is marked.
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
    #[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
    #[serde(rename_all = "snake_case")]
    pub enum DiffersReason {
        /// The published body is not the approved one (compared normalized).
        Changed => "changed",
        /// Nobody approved the post: the report matched no post (it made one), or a post
        /// that never went through approval (from inventory before review, or made by an
        /// earlier report).
        NeverApproved => "never_approved",
    }
}

/// A published post whose body differs from the approved one, or that nobody approved: both
/// texts (the approved one absent when nobody approved it), as the post's reads, `GET /today`
/// and the dashboard show it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PublishedDiffers {
    pub reason: DiffersReason,
    /// The body approved (absent when never approved).
    pub approved_body: Option<String>,
    /// The body the report says went out (the post's own body when the report gave none).
    pub published_body: String,
    /// When the report marked it.
    pub reported_at: Timestamp,
}

/// Whether a published report marks the post: `pin` is its approval (none: never approved),
/// `reported` the body the report carries, `stored` the post's body. A report without a body
/// of an approved post is taken as what was approved (there is nothing else to compare).
pub fn published_differs(
    pin: Option<&ApprovalPin>,
    reported: Option<&str>,
    stored: &str,
    now: Timestamp,
) -> Option<PublishedDiffers> {
    let published_body = reported.unwrap_or(stored).to_owned();
    let reason = match pin {
        None => DiffersReason::NeverApproved,
        Some(pin) if reported.is_some_and(|b| body_key(b) != pin.fingerprint) => {
            DiffersReason::Changed
        }
        Some(_) => return None,
    };
    Some(PublishedDiffers {
        reason,
        approved_body: pin.map(|p| p.body.clone()),
        published_body,
        reported_at: now,
    })
}

impl PublishedDiffers {
    /// `post.published_differs`, told to the agent of the post's persona: why, and the two
    /// fingerprints (the texts are in the post's reads).
    pub fn event(&self, post: &PostSubject<'_>) -> NewEvent {
        NewEvent {
            workspace_id: post.workspace_id,
            agent_id: post.agent_id,
            object_id: post.id,
            body: EventBody::PostPublishedDiffers(PublishedDiffersChange {
                code: post.code.to_owned(),
                platform: post.platform,
                reason: self.reason.as_str().to_owned(),
                approved_fingerprint: self.approved_body.as_deref().map(body_key),
                published_fingerprint: body_key(&self.published_body),
            }),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use uuid::Uuid;

    fn at() -> Timestamp {
        "2026-12-07T10:00:00Z".parse().unwrap()
    }

    fn pin(body: &str) -> ApprovalPin {
        let mia = Character {
            code: "mia".into(),
            name: "Mia".into(),
            pov: true,
        };
        ApprovalPin::of(body, vec!["ab".repeat(32)], &[mia])
    }

    #[test]
    fn a_pin_fingerprints_the_body_as_matching_normalizes_it() {
        let p = pin("  Hello\n\n world ");
        assert_eq!(p.fingerprint, body_key("Hello world"));
        assert_eq!(p.body, "  Hello\n\n world ");
        assert_eq!(p.characters, ["mia"]);
        assert_eq!(p.media, ["ab".repeat(32)]);
    }

    #[test]
    fn a_published_body_is_compared_with_the_approved_one_normalized() {
        let p = pin("Hello world");
        assert_eq!(
            published_differs(Some(&p), Some(" Hello\tworld\n"), "x", at()),
            None
        );
        assert_eq!(published_differs(Some(&p), None, "Hello world", at()), None);
        let changed = published_differs(Some(&p), Some("Hello world!"), "x", at()).unwrap();
        assert_eq!(changed.reason, DiffersReason::Changed);
        assert_eq!(changed.approved_body.as_deref(), Some("Hello world"));
        assert_eq!(changed.published_body, "Hello world!");
        assert_eq!(changed.reported_at, at());
    }

    #[test]
    fn a_post_nobody_approved_is_marked_with_what_went_out() {
        let never = published_differs(None, None, "stored body", at()).unwrap();
        assert_eq!(never.reason, DiffersReason::NeverApproved);
        assert_eq!(
            (never.approved_body, never.published_body.as_str()),
            (None, "stored body")
        );
        let given = published_differs(None, Some("reported"), "stored", at()).unwrap();
        assert_eq!(given.published_body, "reported");
    }

    #[test]
    fn the_event_tells_why_with_both_fingerprints() {
        let p = pin("Hello world");
        let changed = published_differs(Some(&p), Some("Hello there"), "x", at()).unwrap();
        let post = PostSubject {
            id: Uuid::from_u128(1),
            workspace_id: Uuid::from_u128(2),
            agent_id: Some(Uuid::from_u128(3)),
            code: "TW-T001",
            platform: fleetdesk_kernel::Platform::Threads,
        };
        let event = changed.event(&post);
        assert_eq!((event.object_id, event.agent_id), (post.id, post.agent_id));
        let EventBody::PostPublishedDiffers(told) = event.body else {
            panic!("{:?}", event.body)
        };
        assert_eq!(told.reason, "changed");
        assert_eq!(told.approved_fingerprint, Some(p.fingerprint));
        assert_eq!(told.published_fingerprint, body_key("Hello there"));
        assert_eq!(told.code, "TW-T001");
    }
}
