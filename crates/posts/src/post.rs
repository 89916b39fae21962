//! Post statuses (decisions.md) and which of them a draft move may start from.

use fleetdesk_kernel::Platform;
use fleetdesk_kernel::events::{EventBody, NewEvent, PostChange};
use serde::{Deserialize, Serialize};
use uuid::Uuid;

fleetdesk_kernel::text_enum! {
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
    #[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
    #[serde(rename_all = "snake_case")]
    pub enum PostStatus {
        Draft => "draft",
        InternalReview => "internal_review",
        ClientReview => "client_review",
        Approved => "approved",
        RewriteRequested => "rewrite_requested",
        SentBack => "sent_back",
        Stocked => "stocked",
        Scheduled => "scheduled",
        Publishing => "publishing",
        Published => "published",
        Failed => "failed",
        Cancelled => "cancelled",
        Deleted => "deleted",
    }
}

impl PostStatus {
    /// Still a draft: `PUT /drafts/{id}` may rewrite it.
    pub fn is_draft(self) -> bool {
        matches!(
            self,
            PostStatus::Draft | PostStatus::RewriteRequested | PostStatus::SentBack
        )
    }

    /// Media may still be attached: a draft or a post in internal review.
    pub fn takes_media(self) -> bool {
        self.is_draft() || self == PostStatus::InternalReview
    }

    /// Not yet published, for the duplicate rule of `POST /drafts`: anything on its way to the
    /// platform. Published, failed, cancelled and deleted posts are finished.
    pub fn is_unpublished(self) -> bool {
        !matches!(
            self,
            PostStatus::Published
                | PostStatus::Failed
                | PostStatus::Cancelled
                | PostStatus::Deleted
        )
    }

    /// The statuses the duplicate rule looks at, for SQL.
    pub fn unpublished() -> Vec<&'static str> {
        PostStatus::texts(PostStatus::is_unpublished)
    }

    /// Went out on the platform: published, or deleted after it was (a report counts both).
    pub fn went_out(self) -> bool {
        matches!(self, PostStatus::Published | PostStatus::Deleted)
    }

    /// Which of its times places a post on an account's market date, when its status counts
    /// toward the day at all: published posts by when they were published, scheduled and
    /// publishing ones by their slot, approved ones and those in review by their planned time.
    /// Drafts, stock and finished posts hold no day.
    pub fn day_time(self) -> Option<DayTime> {
        match self {
            PostStatus::Published => Some(DayTime::Published),
            PostStatus::Scheduled | PostStatus::Publishing => Some(DayTime::Scheduled),
            PostStatus::Approved | PostStatus::InternalReview | PostStatus::ClientReview => {
                Some(DayTime::Planned)
            }
            _ => None,
        }
    }
}

/// The time by which a post holds an account's day ([`PostStatus::day_time`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DayTime {
    /// `published_at`
    Published,
    /// `scheduled_for`
    Scheduled,
    /// `planned_at`
    Planned,
}

impl DayTime {
    /// The statuses counted by this time, for SQL.
    pub fn statuses(self) -> Vec<&'static str> {
        PostStatus::texts(|s| s.day_time() == Some(self))
    }
}

/// A character as stored on the post, main character first.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Character {
    pub code: String,
    pub name: String,
    pub pov: bool,
}

/// A body as report matching compares it: trimmed, every run of whitespace one space.
pub fn normalize_body(body: &str) -> String {
    body.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// The stored key of a body for matching reports without ids: SHA-256 (hex) of the normalized
/// body.
pub fn body_key(body: &str) -> String {
    fleetdesk_kernel::digest::sha256_hex(normalize_body(body).as_bytes())
}

impl PostStatus {
    /// Not through review yet: reports about it are refused.
    pub fn before_review(self) -> bool {
        matches!(
            self,
            PostStatus::Draft
                | PostStatus::InternalReview
                | PostStatus::ClientReview
                | PostStatus::RewriteRequested
                | PostStatus::SentBack
        )
    }

    /// May go to inventory (by a stock call or an account leaving rotation): anything not yet
    /// on its way out. Published, failed, cancelled, deleted and service-publishing posts may
    /// not.
    pub fn stockable(self) -> bool {
        self.before_review() || matches!(self, PostStatus::Approved | PostStatus::Scheduled)
    }

    /// The statuses [`PostStatus::stockable`] accepts, for SQL.
    pub fn stockable_all() -> Vec<&'static str> {
        PostStatus::texts(PostStatus::stockable)
    }
}

/// Where a submitted or rewritten draft goes.
pub fn landing_status(submit: bool, account_active: bool) -> PostStatus {
    match (submit, account_active) {
        (false, _) => PostStatus::Draft,
        (true, true) => PostStatus::InternalReview,
        (true, false) => PostStatus::Stocked,
    }
}

/// A post as its events name it: its workspace, the agent told (the one its persona is
/// assigned to), its id and its account.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PostSubject<'a> {
    pub workspace_id: Uuid,
    pub agent_id: Option<Uuid>,
    pub id: Uuid,
    pub code: &'a str,
    pub platform: Platform,
}

impl PostSubject<'_> {
    /// The event `body` tells of this post moved from `from` (none: a new post) to `to`, with
    /// the note, reason or link that came with the move.
    pub fn event(
        &self,
        body: fn(PostChange) -> EventBody,
        (from, to): (Option<PostStatus>, PostStatus),
        note: Option<&str>,
    ) -> NewEvent {
        NewEvent {
            workspace_id: self.workspace_id,
            agent_id: self.agent_id,
            object_id: self.id,
            body: body(PostChange {
                code: Some(self.code.to_owned()),
                platform: Some(self.platform),
                from: from.map(|s| s.as_str().to_owned()),
                status: to.as_str().to_owned(),
                note: note.map(str::to_owned),
            }),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn published_and_deleted_posts_went_out() {
        assert_eq!(
            PostStatus::texts(PostStatus::went_out),
            ["published", "deleted"]
        );
    }

    #[test]
    fn stored_text_is_the_serde_form() {
        fn check<T: Serialize>(all: &[T], text: fn(&T) -> &'static str) {
            for v in all {
                assert_eq!(serde_json::to_value(v).unwrap(), text(v));
            }
        }
        check(&PostStatus::ALL, |v| v.as_str());
        check(&crate::report::ReportedStatus::ALL, |v| v.as_str());
    }

    #[test]
    fn names_round_trip() {
        for s in PostStatus::ALL {
            assert_eq!(PostStatus::parse(s.as_str()), Some(s));
        }
        assert_eq!(PostStatus::parse("pending"), None);
    }

    #[test]
    fn only_draft_stages_are_editable() {
        let editable: Vec<_> = PostStatus::ALL
            .into_iter()
            .filter(|s| s.is_draft())
            .collect();
        assert_eq!(
            editable,
            [
                PostStatus::Draft,
                PostStatus::RewriteRequested,
                PostStatus::SentBack
            ]
        );
        assert!(PostStatus::InternalReview.takes_media());
        assert!(!PostStatus::Approved.takes_media());
    }

    #[test]
    fn finished_posts_are_not_duplicates() {
        assert!(PostStatus::Stocked.is_unpublished());
        assert!(PostStatus::Scheduled.is_unpublished());
        assert!(!PostStatus::Published.is_unpublished());
        assert!(!PostStatus::Cancelled.is_unpublished());
        assert_eq!(PostStatus::unpublished().len(), 9);
    }

    #[test]
    fn bodies_match_across_whitespace_differences() {
        assert_eq!(normalize_body("  hello \n\t world  "), "hello world");
        assert_eq!(normalize_body("早安\u{3000}台北"), "早安 台北");
        assert_eq!(body_key(" a  b "), body_key("a b"));
        assert_ne!(body_key("a b"), body_key("ab"));
    }

    #[test]
    fn only_unfinished_posts_can_be_stocked() {
        let stockable: Vec<_> = PostStatus::ALL
            .into_iter()
            .filter(|s| s.stockable())
            .collect();
        assert_eq!(
            stockable,
            [
                PostStatus::Draft,
                PostStatus::InternalReview,
                PostStatus::ClientReview,
                PostStatus::Approved,
                PostStatus::RewriteRequested,
                PostStatus::SentBack,
                PostStatus::Scheduled,
            ]
        );
        assert!(!PostStatus::Publishing.stockable());
        assert!(!PostStatus::Stocked.stockable());
    }

    #[test]
    fn posts_hold_a_day_by_the_time_their_status_speaks_of() {
        assert_eq!(DayTime::Published.statuses(), ["published"]);
        assert_eq!(DayTime::Scheduled.statuses(), ["scheduled", "publishing"]);
        assert_eq!(
            DayTime::Planned.statuses(),
            ["internal_review", "client_review", "approved"]
        );
        for s in [
            PostStatus::Draft,
            PostStatus::RewriteRequested,
            PostStatus::SentBack,
            PostStatus::Stocked,
            PostStatus::Failed,
            PostStatus::Cancelled,
            PostStatus::Deleted,
        ] {
            assert_eq!(s.day_time(), None, "{s}");
        }
    }

    #[test]
    fn status_sets_are_stored_texts_in_declaration_order() {
        assert_eq!(PostStatus::texts(|s| s == PostStatus::Stocked), ["stocked"]);
        assert_eq!(PostStatus::texts(|_| false), Vec::<&str>::new());
        assert_eq!(PostStatus::texts(|_| true).len(), PostStatus::ALL.len());
    }

    #[test]
    fn a_posts_event_names_its_account_both_statuses_and_the_agent_told() {
        let subject = PostSubject {
            workspace_id: Uuid::from_u128(1),
            agent_id: Some(Uuid::from_u128(2)),
            id: Uuid::from_u128(3),
            code: "TW-T001",
            platform: Platform::Threads,
        };
        let moved = subject.event(
            EventBody::PostMoved,
            (Some(PostStatus::InternalReview), PostStatus::Approved),
            Some("ok"),
        );
        assert_eq!(
            (moved.workspace_id, moved.agent_id, moved.object_id),
            (
                Uuid::from_u128(1),
                Some(Uuid::from_u128(2)),
                Uuid::from_u128(3)
            )
        );
        assert_eq!(
            moved.body,
            EventBody::PostMoved(PostChange {
                code: Some("TW-T001".into()),
                platform: Some(Platform::Threads),
                from: Some("internal_review".into()),
                status: "approved".into(),
                note: Some("ok".into()),
            })
        );
        let new = subject.event(
            EventBody::PostSubmitted,
            (None, PostStatus::InternalReview),
            None,
        );
        assert_eq!(
            new.body.data(),
            serde_json::json!({"code": "TW-T001", "platform": "threads", "from": null,
                               "status": "internal_review", "note": null})
        );
    }

    #[test]
    fn a_submitted_draft_of_an_account_that_may_not_post_is_stocked() {
        assert_eq!(landing_status(true, true), PostStatus::InternalReview);
        assert_eq!(landing_status(true, false), PostStatus::Stocked);
        assert_eq!(landing_status(false, false), PostStatus::Draft);
        assert_eq!(landing_status(false, true), PostStatus::Draft);
    }
}
