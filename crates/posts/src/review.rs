//! Review moves (decisions.md): who may move a post where, with client review on or off.
//! The Personal API's `POST /posts/{id}/transition` and the agent's relay of a person's
//! decision both come here.

use crate::post::PostStatus;
use serde::{Deserialize, Serialize};
use std::fmt;

/// Where a review move may take a post.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "snake_case")]
pub enum ReviewTarget {
    Approved,
    ClientReview,
    SentBack,
    RewriteRequested,
    Cancelled,
}

impl ReviewTarget {
    pub fn status(self) -> PostStatus {
        match self {
            ReviewTarget::Approved => PostStatus::Approved,
            ReviewTarget::ClientReview => PostStatus::ClientReview,
            ReviewTarget::SentBack => PostStatus::SentBack,
            ReviewTarget::RewriteRequested => PostStatus::RewriteRequested,
            ReviewTarget::Cancelled => PostStatus::Cancelled,
        }
    }

    /// Sent back and rewrite requests carry the comment or instruction the agent answers.
    pub fn needs_comment(self) -> bool {
        matches!(
            self,
            ReviewTarget::SentBack | ReviewTarget::RewriteRequested
        )
    }
}

impl fmt::Display for ReviewTarget {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.status().as_str())
    }
}

/// The person a move is made by (or relayed for), as far as the rules care.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReviewerRole {
    Agency,
    /// A client person; `review` is the review right.
    Client {
        review: bool,
    },
    /// A platform admin.
    Admin,
}

/// What a permitted move does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Move {
    /// The post takes this status.
    To(PostStatus),
    /// An approved post gets a new planned time and stays approved.
    Reschedule,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum MoveRefusal {
    /// `comment` is missing for a move that needs one (400).
    CommentRequired(ReviewTarget),
    /// A client without the review right (403).
    NoReviewRight,
    /// The move breaks a rule; the text says which (422).
    Rule(String),
}

/// Checks one move. `client_review` is the workspace's setting now; `planned` tells whether the
/// request carries a planned time.
pub fn review_move(
    from: PostStatus,
    to: ReviewTarget,
    role: ReviewerRole,
    client_review: bool,
    comment: Option<&str>,
    planned: bool,
) -> Result<Move, MoveRefusal> {
    if to.needs_comment() && comment.is_none_or(|c| c.trim().is_empty()) {
        return Err(MoveRefusal::CommentRequired(to));
    }
    let client = matches!(role, ReviewerRole::Client { .. });
    if role == (ReviewerRole::Client { review: false }) {
        return Err(MoveRefusal::NoReviewRight);
    }
    let rule = |why: String| Err(MoveRefusal::Rule(why));
    match (from, to) {
        (PostStatus::InternalReview, _) if client => rule(
            "the post is in internal review; a client reviews it once it reaches client_review"
                .to_owned(),
        ),
        (PostStatus::InternalReview, ReviewTarget::Approved) if client_review => rule(
            "client review is on for this workspace: move the post to client_review; the client \
             approves it"
                .to_owned(),
        ),
        (PostStatus::InternalReview, ReviewTarget::ClientReview) if !client_review => {
            rule("client review is off for this workspace: approve the post directly".to_owned())
        }
        (PostStatus::InternalReview, t) => Ok(Move::To(t.status())),
        (PostStatus::ClientReview, ReviewTarget::Approved) => match role {
            ReviewerRole::Agency if client_review => rule(
                "client review is on: an agency person cannot approve on behalf of the client"
                    .to_owned(),
            ),
            _ => Ok(Move::To(PostStatus::Approved)),
        },
        (
            PostStatus::ClientReview,
            t @ (ReviewTarget::SentBack | ReviewTarget::RewriteRequested),
        ) => Ok(Move::To(t.status())),
        (PostStatus::Approved, ReviewTarget::Approved) if planned && !client => {
            Ok(Move::Reschedule)
        }
        (PostStatus::Approved, ReviewTarget::Approved) if !client => {
            rule("the post is already approved; give planned_at to reschedule it".to_owned())
        }
        (from, to) => rule(format!("a post in {from} cannot move to {to}")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use PostStatus as S;
    use ReviewTarget as T;

    const AGENCY: ReviewerRole = ReviewerRole::Agency;
    const CLIENT: ReviewerRole = ReviewerRole::Client { review: true };
    const ADMIN: ReviewerRole = ReviewerRole::Admin;

    fn go(from: S, to: T, role: ReviewerRole, client_review: bool) -> Result<Move, MoveRefusal> {
        review_move(from, to, role, client_review, Some("why"), false)
    }

    fn is_rule(r: Result<Move, MoveRefusal>) -> bool {
        matches!(r, Err(MoveRefusal::Rule(_)))
    }

    #[test]
    fn internal_review_moves_follow_the_client_review_setting() {
        assert_eq!(
            go(S::InternalReview, T::Approved, AGENCY, false),
            Ok(Move::To(S::Approved))
        );
        assert!(is_rule(go(S::InternalReview, T::Approved, AGENCY, true)));
        assert_eq!(
            go(S::InternalReview, T::ClientReview, AGENCY, true),
            Ok(Move::To(S::ClientReview))
        );
        assert!(is_rule(go(
            S::InternalReview,
            T::ClientReview,
            AGENCY,
            false
        )));
        for t in [T::SentBack, T::RewriteRequested, T::Cancelled] {
            assert_eq!(
                go(S::InternalReview, t, AGENCY, true),
                Ok(Move::To(t.status()))
            );
        }
    }

    #[test]
    fn only_the_client_or_an_admin_approves_in_client_review_while_it_is_on() {
        assert!(is_rule(go(S::ClientReview, T::Approved, AGENCY, true)));
        assert_eq!(
            go(S::ClientReview, T::Approved, CLIENT, true),
            Ok(Move::To(S::Approved))
        );
        assert_eq!(
            go(S::ClientReview, T::Approved, ADMIN, true),
            Ok(Move::To(S::Approved))
        );
        // Turned off while the post waited: the agency may approve it.
        assert_eq!(
            go(S::ClientReview, T::Approved, AGENCY, false),
            Ok(Move::To(S::Approved))
        );
        assert_eq!(
            go(S::ClientReview, T::SentBack, AGENCY, true),
            Ok(Move::To(S::SentBack))
        );
        assert!(is_rule(go(S::ClientReview, T::Cancelled, AGENCY, true)));
    }

    #[test]
    fn clients_need_the_review_right_and_act_only_in_client_review() {
        assert_eq!(
            go(
                S::ClientReview,
                T::Approved,
                ReviewerRole::Client { review: false },
                true
            ),
            Err(MoveRefusal::NoReviewRight)
        );
        assert!(is_rule(go(S::InternalReview, T::SentBack, CLIENT, true)));
        assert!(is_rule(review_move(
            S::Approved,
            T::Approved,
            CLIENT,
            true,
            None,
            true
        )));
    }

    #[test]
    fn sending_back_needs_a_comment() {
        for t in [T::SentBack, T::RewriteRequested] {
            assert_eq!(
                review_move(S::InternalReview, t, AGENCY, false, None, false),
                Err(MoveRefusal::CommentRequired(t))
            );
            assert_eq!(
                review_move(S::InternalReview, t, AGENCY, false, Some("  "), false),
                Err(MoveRefusal::CommentRequired(t))
            );
        }
    }

    #[test]
    fn an_approved_post_is_only_rescheduled() {
        assert_eq!(
            review_move(S::Approved, T::Approved, AGENCY, false, None, true),
            Ok(Move::Reschedule)
        );
        assert!(is_rule(review_move(
            S::Approved,
            T::Approved,
            AGENCY,
            false,
            None,
            false
        )));
        for from in [
            S::Scheduled,
            S::Published,
            S::Stocked,
            S::Draft,
            S::Cancelled,
        ] {
            for to in [T::Approved, T::SentBack, T::Cancelled] {
                assert!(is_rule(go(from, to, ADMIN, false)), "{from} -> {to}");
            }
        }
    }
}
