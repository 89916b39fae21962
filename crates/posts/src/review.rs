//! Review moves (decisions.md): who may move a post where, with client review on or off.
//! The Personal API's `POST /posts/{id}/transition` and the agent's relay of a person's
//! decision both come here.

use crate::approval::ApprovalPin;
use crate::ports::{RecordEntry, ReviewScope, TransitionRefusal, TransitionRequest};
use crate::post::{Character, PostStatus, PostSubject};
use fleetdesk_kernel::Platform;
use fleetdesk_kernel::events::{EventBody, NewEvent};
use jiff::Timestamp;
use jiff::tz::TimeZone;
use serde::{Deserialize, Serialize};
use std::fmt;
use uuid::Uuid;

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

impl ReviewerRole {
    /// The role as a move's record entry names it.
    pub fn as_str(self) -> &'static str {
        match self {
            ReviewerRole::Agency => "agency",
            ReviewerRole::Client { .. } => "client",
            ReviewerRole::Admin => "admin",
        }
    }
}

/// What a permitted move does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Move {
    /// The post takes this status.
    To(PostStatus),
    /// An approved post gets a new planned time and stays approved.
    Reschedule,
}

impl Move {
    /// The status the post takes from `from`.
    pub fn status(self, from: PostStatus) -> PostStatus {
        match self {
            Move::To(s) => s,
            Move::Reschedule => from,
        }
    }

    /// The action of the move's review-record entry: the new status, or `rescheduled`.
    pub fn action(self) -> &'static str {
        match self {
            Move::To(s) => s.as_str(),
            Move::Reschedule => "rescheduled",
        }
    }

    /// What the move does to the post's rewrite state.
    pub fn rewrite(self) -> Rewrite {
        match self {
            Move::To(PostStatus::SentBack | PostStatus::RewriteRequested) => Rewrite::Returned,
            _ => Rewrite::Kept,
        }
    }
}

/// A post's rewrite state after a move: a send-back or a rewrite request returns the post to
/// its agent, who owes a rewrite; every other move leaves that state as it was.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Rewrite {
    Kept,
    /// Awaiting a rewrite, not yet answered, with the current body kept as the one returned
    /// (and the time it was returned).
    Returned,
}

impl Rewrite {
    /// `awaiting_rewrite` after the move; `None` keeps the stored value.
    pub fn awaiting_rewrite(self) -> Option<bool> {
        (self == Rewrite::Returned).then_some(true)
    }

    /// `rewrite_answered` after the move; `None` keeps the stored value.
    pub fn rewrite_answered(self) -> Option<bool> {
        (self == Rewrite::Returned).then_some(false)
    }

    /// Whether the current body and time are kept as `returned_body` and `returned_at`.
    pub fn keeps_returned_body(self) -> bool {
        self == Rewrite::Returned
    }
}

/// Which posts a client sees: those in client review, and those that went through it (their
/// record holds one of these entries). Agency people and admins see every post.
pub const CLIENT_VISIBLE_STATUSES: [PostStatus; 1] = [PostStatus::ClientReview];
/// The review-record actions that make a post visible to a client for good.
pub const CLIENT_VISIBLE_ACTIONS: [PostStatus; 1] = [PostStatus::ClientReview];

/// Whether a viewer sees a post; `went_through` tells whether the post's record holds one of
/// [`CLIENT_VISIBLE_ACTIONS`].
pub fn visible(client: bool, status: PostStatus, went_through: bool) -> bool {
    !client || CLIENT_VISIBLE_STATUSES.contains(&status) || went_through
}

/// [`CLIENT_VISIBLE_STATUSES`] and [`CLIENT_VISIBLE_ACTIONS`] as stored text, for SQL.
pub fn client_visible_texts() -> (Vec<&'static str>, Vec<&'static str>) {
    let text = |set: &[PostStatus]| set.iter().map(|s| s.as_str()).collect();
    (
        text(&CLIENT_VISIBLE_STATUSES),
        text(&CLIENT_VISIBLE_ACTIONS),
    )
}

/// The entries of a post's record a client sees: the moves of the client stage, made by
/// people: the move into client review and every move made from it (approved, sent back,
/// rewrite requested), with their comments and the name of the person who made them. Never
/// the internal review's moves and comments, the agents' entries (submissions, notes,
/// rewrites, media, reports, stocking) or the service's, and never which agent relayed a
/// person's move: a relayed entry loses `relayed` (the agent, the chat it came from), keeping
/// `from`, `role` and `planned_at`. The same for every client, with or without the review
/// right. Agency people and admins see the whole record.
pub fn client_record(record: Vec<RecordEntry>) -> Vec<RecordEntry> {
    let stage = PostStatus::ClientReview.as_str();
    record
        .into_iter()
        .filter(|e| {
            e.actor_kind == MEMBER_ACTOR
                && (e.action == stage
                    || e.detail.get("from").and_then(|f| f.as_str()) == Some(stage))
        })
        .map(|mut e| {
            e.detail = match e.detail {
                serde_json::Value::Object(m) => m
                    .into_iter()
                    .filter(|(k, _)| CLIENT_DETAIL.contains(&k.as_str()))
                    .collect(),
                _ => serde_json::Value::Object(Default::default()),
            };
            e
        })
        .collect()
}

/// The actor kind of a person's entry on the record (a review move, direct or relayed).
pub const MEMBER_ACTOR: &str = "member";
/// What a client sees of a move's detail.
const CLIENT_DETAIL: [&str; 4] = ["from", "role", "planned_at", "approved"];

/// The record a viewer sees: a client only [`client_record`], anyone else all of it.
pub fn record_for(client: bool, record: Vec<RecordEntry>) -> Vec<RecordEntry> {
    if client {
        client_record(record)
    } else {
        record
    }
}

/// The review stages a review queue lists: a client only client review; others the stage
/// asked for, or both stages.
pub fn review_stages(client: bool, stage: Option<PostStatus>) -> Vec<PostStatus> {
    match (client, stage) {
        (true, _) => CLIENT_VISIBLE_STATUSES.to_vec(),
        (false, Some(s)) => vec![s],
        (false, None) => vec![PostStatus::InternalReview, PostStatus::ClientReview],
    }
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

/// A post as a review move finds it (locked by the adapter).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MovingPost {
    pub status: PostStatus,
    pub organization_id: Uuid,
    pub workspace_id: Uuid,
    /// The workspace's client review setting now.
    pub client_review: bool,
    /// Under one of the relaying agent's personas (ignored for a person's own move).
    pub mine: bool,
    /// Its record holds one of [`CLIENT_VISIBLE_ACTIONS`].
    pub went_through_client: bool,
    /// The agent its persona is assigned to: told of the move.
    pub persona_agent: Option<Uuid>,
    /// Its account.
    pub code: String,
    pub platform: Platform,
    /// What an approval pins: the body, the media's content hashes in publishing order, the
    /// characters.
    pub body: String,
    pub media: Vec<String>,
    pub characters: Vec<Character>,
}

impl MovingPost {
    /// Whether moving from `from` to `to` approves the post: the agency's approval (into
    /// client review, or straight to approved) or the client's (client review to approved).
    fn approves(from: PostStatus, to: PostStatus) -> bool {
        matches!(
            (from, to),
            (
                PostStatus::InternalReview,
                PostStatus::ClientReview | PostStatus::Approved
            ) | (PostStatus::ClientReview, PostStatus::Approved)
        )
    }

    /// What approving it pins.
    fn pin(&self) -> ApprovalPin {
        ApprovalPin::of(&self.body, self.media.clone(), &self.characters)
    }
}

/// What a permitted review move writes.
#[derive(Debug, Clone, PartialEq)]
pub struct PlannedMove {
    pub from: PostStatus,
    pub the_move: Move,
    /// The post's status after the move.
    pub to: PostStatus,
    /// The new planned time; `None` keeps the stored plan.
    pub planned_at: Option<Timestamp>,
    /// What the move tells: `post.moved` when the status changed (a reschedule tells nothing).
    pub event: Option<NewEvent>,
    /// What an approving move pins ([`ApprovalPin`]): kept on the post and shown in the
    /// record's entry (without the body, which the post shows).
    pub pin: Option<ApprovalPin>,
}

impl PlannedMove {
    /// The history entry's detail of the move: where the post came from, the reviewer's
    /// role, the new plan (when the move sets one), what an approval pinned (`approved`:
    /// fingerprint, media, characters) and the relay (when an agent relays a person's
    /// decision).
    pub fn detail(&self, reviewer: &crate::ports::Reviewer) -> serde_json::Value {
        let mut detail = serde_json::json!({
            "from": self.from,
            "role": reviewer.role.as_str(),
        });
        if let Some(p) = self.planned_at {
            detail["planned_at"] = serde_json::json!(p.to_string());
        }
        if let Some(pin) = &self.pin {
            detail["approved"] = serde_json::json!({
                "fingerprint": pin.fingerprint,
                "media": pin.media,
                "characters": pin.characters,
            });
        }
        if let Some(relay) = &reviewer.relay {
            detail["relayed"] = relay.clone();
        }
        detail
    }
}

/// Decides one review move on a loaded post, in this order:
/// 1. the post must be in the caller's reach: a person sees it ([`visible`], in their
///    organization), a relaying agent's workspace holds it (else not found) and one of its
///    personas owns it (else not yours);
/// 2. a planned time is read in the account's zone (`zone`, when the input has none) and must
///    be after `now`;
/// 3. the move itself ([`review_move`], which may need the planned time);
/// 4. a planned time is kept only with an approval: other moves keep the stored plan.
pub fn plan_move(
    scope: ReviewScope,
    role: ReviewerRole,
    post: &MovingPost,
    request: &TransitionRequest,
    zone: &TimeZone,
    now: Timestamp,
) -> Result<PlannedMove, TransitionRefusal> {
    match scope {
        ReviewScope::Member(v) => {
            let org_ok = v.organization_id.is_none_or(|o| o == post.organization_id);
            if !org_ok || !visible(v.client, post.status, post.went_through_client) {
                return Err(TransitionRefusal::NotFound);
            }
        }
        ReviewScope::Agent(a) => {
            if a.workspace_id != post.workspace_id {
                return Err(TransitionRefusal::NotFound);
            }
            if !post.mine {
                return Err(TransitionRefusal::NotYours);
            }
        }
    }
    let planned_at = match &request.planned_at {
        Some(input) => match input.resolve(zone) {
            Ok(t) if t <= now => return Err(TransitionRefusal::PlannedInPast),
            Ok(t) => Some(t),
            Err(e) => return Err(TransitionRefusal::PlannedAt(e)),
        },
        None => None,
    };
    let the_move = review_move(
        post.status,
        request.to,
        role,
        post.client_review,
        request.comment.as_deref(),
        planned_at.is_some(),
    )
    .map_err(TransitionRefusal::Move)?;
    let to = the_move.status(post.status);
    Ok(PlannedMove {
        from: post.status,
        the_move,
        to,
        planned_at: planned_at.filter(|_| request.to == ReviewTarget::Approved),
        event: moved_event(post, request, to),
        pin: MovingPost::approves(post.status, to).then(|| post.pin()),
    })
}

/// The event of `post` moved to `to` by `request`: `post.moved` with the move's comment,
/// told to the agent of the post's persona; none when its status stays (a reschedule).
fn moved_event(post: &MovingPost, request: &TransitionRequest, to: PostStatus) -> Option<NewEvent> {
    if to == post.status {
        return None;
    }
    let subject = PostSubject {
        workspace_id: post.workspace_id,
        agent_id: post.persona_agent,
        id: request.post_id,
        code: &post.code,
        platform: post.platform,
    };
    Some(subject.event(
        EventBody::PostMoved,
        (Some(post.status), to),
        request.comment.as_deref(),
    ))
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
    fn a_moves_history_detail_names_its_origin_role_plan_and_relay() {
        let reviewer = |relay| crate::ports::Reviewer {
            role: ReviewerRole::Agency,
            name: "Ann".into(),
            person_id: None,
            relay,
        };
        let mut planned = PlannedMove {
            from: S::InternalReview,
            the_move: Move::To(S::Approved),
            to: S::Approved,
            planned_at: None,
            event: None,
            pin: None,
        };
        assert_eq!(
            planned.detail(&reviewer(None)),
            serde_json::json!({"from": "internal_review", "role": "agency"})
        );
        let pin = ApprovalPin::of("Hi", vec!["ab".repeat(32)], &[]);
        let pinned = PlannedMove {
            pin: Some(pin.clone()),
            ..planned.clone()
        };
        assert_eq!(
            pinned.detail(&reviewer(None))["approved"],
            serde_json::json!({"fingerprint": pin.fingerprint, "media": pin.media,
                               "characters": []})
        );
        planned.planned_at = Some("2026-12-10T02:00:00Z".parse().unwrap());
        let relay = serde_json::json!({"agent": "op1"});
        assert_eq!(
            planned.detail(&reviewer(Some(relay.clone()))),
            serde_json::json!({"from": "internal_review", "role": "agency",
                               "planned_at": "2026-12-10T02:00:00Z", "relayed": relay})
        );
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
    fn a_send_back_or_rewrite_request_returns_the_post_for_a_rewrite() {
        for t in [T::SentBack, T::RewriteRequested] {
            let r = go(S::ClientReview, t, CLIENT, true).unwrap().rewrite();
            assert_eq!(r, Rewrite::Returned);
            assert_eq!(r.awaiting_rewrite(), Some(true));
            assert_eq!(r.rewrite_answered(), Some(false));
            assert!(r.keeps_returned_body());
        }
        for m in [
            Move::To(S::Approved),
            Move::To(S::ClientReview),
            Move::To(S::Cancelled),
            Move::Reschedule,
        ] {
            let r = m.rewrite();
            assert_eq!(r, Rewrite::Kept, "{m:?}");
            assert_eq!(r.awaiting_rewrite(), None);
            assert_eq!(r.rewrite_answered(), None);
            assert!(!r.keeps_returned_body());
        }
    }

    #[test]
    fn a_client_sees_posts_in_or_through_client_review() {
        for s in PostStatus::ALL {
            assert!(visible(false, s, false), "{s}");
        }
        assert!(visible(true, S::ClientReview, false));
        assert!(visible(true, S::Published, true));
        assert!(visible(true, S::SentBack, true));
        assert!(!visible(true, S::Published, false));
        assert!(!visible(true, S::InternalReview, false));
        assert_eq!(
            client_visible_texts(),
            (vec!["client_review"], vec!["client_review"])
        );
        // The record entry a move to client review writes is the action visibility looks for.
        assert_eq!(
            Move::To(T::ClientReview.status()).action(),
            CLIENT_VISIBLE_ACTIONS[0].as_str()
        );
    }

    fn entry(
        action: &str,
        kind: &str,
        name: &str,
        reason: Option<&str>,
        detail: serde_json::Value,
    ) -> RecordEntry {
        RecordEntry {
            action: action.to_owned(),
            reason: reason.map(str::to_owned),
            actor_kind: kind.to_owned(),
            actor_name: name.to_owned(),
            detail,
            at: Timestamp::UNIX_EPOCH,
        }
    }

    /// A post's whole life: submitted with a note, sent back internally, rewritten, moved to
    /// client review, sent back by the client, back through both stages, approved by the
    /// client through an agent's relay, rescheduled by the agency, reported published.
    fn whole_record() -> Vec<RecordEntry> {
        use serde_json::json;
        let member = |action, name, reason, from: &str| {
            entry(
                action,
                "member",
                name,
                reason,
                json!({"from": from, "role": "agency"}),
            )
        };
        vec![
            entry("submitted", "agent", "writer-1", None, json!({"media": []})),
            entry(
                "added note",
                "agent",
                "writer-1",
                Some("the client hates emoji"),
                json!({}),
            ),
            member(
                "sent_back",
                "Ann",
                Some("internal: too salesy"),
                "internal_review",
            ),
            entry(
                "rewrite_answered",
                "agent",
                "writer-1",
                None,
                json!({"from": "sent_back"}),
            ),
            entry("submitted", "agent", "writer-1", None, json!({})),
            member("client_review", "Ann", None, "internal_review"),
            entry(
                "sent_back",
                "member",
                "Cli",
                Some("not our tone"),
                json!({"from": "client_review", "role": "client"}),
            ),
            entry("submitted", "agent", "writer-1", None, json!({})),
            member(
                "client_review",
                "Ann",
                Some("second try, note for Cli"),
                "internal_review",
            ),
            entry(
                "approved",
                "member",
                "Cli",
                None,
                json!({"from": "client_review", "role": "client", "planned_at": "2026-11-25T02:00:00Z",
                       "relayed": {"agent": "writer-1", "origin": {"platform": "feishu"}}}),
            ),
            member(
                "rescheduled",
                "Ann",
                Some("moved for the launch"),
                "approved",
            ),
            entry(
                "reported published",
                "agent",
                "writer-1",
                None,
                json!({"status": "published"}),
            ),
            entry(
                "stocked",
                "service",
                "fleetdesk",
                Some("account paused"),
                json!({}),
            ),
        ]
    }

    #[test]
    fn a_client_reads_only_the_client_stage_of_the_record() {
        let seen = client_record(whole_record());
        let what: Vec<(&str, &str, Option<&str>)> = seen
            .iter()
            .map(|e| {
                (
                    e.action.as_str(),
                    e.actor_name.as_str(),
                    e.reason.as_deref(),
                )
            })
            .collect();
        assert_eq!(
            what,
            [
                ("client_review", "Ann", None),
                ("sent_back", "Cli", Some("not our tone")),
                ("client_review", "Ann", Some("second try, note for Cli")),
                ("approved", "Cli", None),
            ]
        );
        for e in &seen {
            assert_eq!(e.actor_kind, MEMBER_ACTOR);
            assert!(e.detail.get("relayed").is_none(), "{e:?}");
            assert!(!e.actor_name.contains("writer"), "{e:?}");
        }
        assert_eq!(seen[3].detail["planned_at"], "2026-11-25T02:00:00Z");
        assert_eq!(seen[3].detail["role"], "client");
        // Agency people and admins read the whole record, relay included.
        let all = record_for(false, whole_record());
        assert_eq!(all, whole_record());
        assert_eq!(record_for(true, whole_record()), seen);
    }

    #[test]
    fn a_record_without_a_client_stage_shows_a_client_nothing() {
        let internal: Vec<RecordEntry> = whole_record().into_iter().take(5).collect();
        assert!(client_record(internal).is_empty());
    }

    #[test]
    fn a_client_queue_lists_client_review_only() {
        assert_eq!(review_stages(true, None), [S::ClientReview]);
        assert_eq!(
            review_stages(true, Some(S::InternalReview)),
            [S::ClientReview]
        );
        assert_eq!(
            review_stages(false, Some(S::InternalReview)),
            [S::InternalReview]
        );
        assert_eq!(
            review_stages(false, None),
            [S::InternalReview, S::ClientReview]
        );
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

    mod plan {
        use super::*;
        use crate::ports::Viewer;
        use fleetdesk_kernel::{AgentRef, TimeInputError};

        const ORG: Uuid = Uuid::from_u128(1);
        const WORKSPACE: Uuid = Uuid::from_u128(2);
        const PERSONA_AGENT: Uuid = Uuid::from_u128(4);

        fn now() -> Timestamp {
            "2026-10-07T01:00:00Z".parse().unwrap()
        }

        fn taipei() -> TimeZone {
            fleetdesk_kernel::market::zone("Asia/Taipei")
        }

        fn post(status: S) -> MovingPost {
            MovingPost {
                status,
                organization_id: ORG,
                workspace_id: WORKSPACE,
                client_review: false,
                mine: true,
                went_through_client: false,
                persona_agent: Some(PERSONA_AGENT),
                code: "TW-T001".into(),
                platform: fleetdesk_kernel::Platform::Threads,
                body: "Hello  world".into(),
                media: vec!["cd".repeat(32)],
                characters: vec![Character {
                    code: "mia".into(),
                    name: "Mia".into(),
                    pov: true,
                }],
            }
        }

        #[test]
        fn an_approving_move_pins_the_body_media_and_characters() {
            let scope = member(Some(ORG), false);
            let approve = request(T::Approved, None);
            let p = plan(scope, &post(S::InternalReview), &approve).unwrap();
            let pin = p.pin.expect("pinned");
            assert_eq!(pin.fingerprint, crate::post::body_key("Hello world"));
            assert_eq!(
                (pin.media, pin.characters),
                (vec!["cd".repeat(32)], vec!["mia".into()])
            );
            let client_on = MovingPost {
                client_review: true,
                ..post(S::InternalReview)
            };
            let to_client = plan(scope, &client_on, &request(T::ClientReview, None)).unwrap();
            assert!(to_client.pin.is_some(), "the agency's approval pins");
            let client = member(Some(ORG), true);
            let by_client = plan_move(
                client,
                CLIENT,
                &MovingPost {
                    status: S::ClientReview,
                    ..client_on.clone()
                },
                &approve,
                &taipei(),
                now(),
            )
            .unwrap();
            assert!(by_client.pin.is_some(), "the client's approval pins");
            for (from, to) in [
                (S::InternalReview, T::SentBack),
                (S::ClientReview, T::RewriteRequested),
            ] {
                let moved = plan(scope, &post(from), &request(to, None));
                assert_eq!(moved.map(|m| m.pin), Ok(None), "{from} -> {to}");
            }
            let rescheduled = plan(
                scope,
                &post(S::Approved),
                &request(T::Approved, Some("2026-10-08 10:00")),
            );
            assert_eq!(rescheduled.map(|m| m.pin), Ok(None));
        }

        fn request(to: T, planned_at: Option<&str>) -> TransitionRequest {
            TransitionRequest {
                post_id: Uuid::from_u128(9),
                to,
                comment: Some("why".to_owned()),
                planned_at: planned_at.map(|raw| raw.parse().unwrap()),
            }
        }

        fn member(organization_id: Option<Uuid>, client: bool) -> ReviewScope {
            ReviewScope::Member(Viewer {
                organization_id,
                client,
            })
        }

        fn agent(workspace_id: Uuid) -> ReviewScope {
            ReviewScope::Agent(AgentRef {
                agent_id: Uuid::from_u128(3),
                workspace_id,
                organization_id: ORG,
            })
        }

        fn plan(
            scope: ReviewScope,
            post: &MovingPost,
            request: &TransitionRequest,
        ) -> Result<PlannedMove, TransitionRefusal> {
            plan_move(scope, AGENCY, post, request, &taipei(), now())
        }

        #[test]
        fn a_person_moves_only_posts_of_their_organization_they_see() {
            let approve = request(T::Approved, None);
            let ours = member(Some(ORG), false);
            assert!(plan(ours, &post(S::InternalReview), &approve).is_ok());
            assert!(plan(member(None, false), &post(S::InternalReview), &approve).is_ok());
            assert_eq!(
                plan(
                    member(Some(Uuid::from_u128(7)), false),
                    &post(S::InternalReview),
                    &approve
                ),
                Err(TransitionRefusal::NotFound)
            );
            // A client does not see a post that never reached client review.
            let client = member(Some(ORG), true);
            assert_eq!(
                plan_move(
                    client,
                    CLIENT,
                    &post(S::Approved),
                    &approve,
                    &taipei(),
                    now()
                ),
                Err(TransitionRefusal::NotFound)
            );
            // It sees one that went through it; the move rules then answer.
            let through = MovingPost {
                went_through_client: true,
                ..post(S::Approved)
            };
            assert!(matches!(
                plan_move(client, CLIENT, &through, &approve, &taipei(), now()),
                Err(TransitionRefusal::Move(MoveRefusal::Rule(_)))
            ));
        }

        #[test]
        fn a_relaying_agent_moves_only_its_own_personas_posts_in_its_workspace() {
            let approve = request(T::Approved, None);
            assert!(plan(agent(WORKSPACE), &post(S::InternalReview), &approve).is_ok());
            assert_eq!(
                plan(
                    agent(Uuid::from_u128(8)),
                    &post(S::InternalReview),
                    &approve
                ),
                Err(TransitionRefusal::NotFound)
            );
            let theirs = MovingPost {
                mine: false,
                ..post(S::InternalReview)
            };
            assert_eq!(
                plan(agent(WORKSPACE), &theirs, &approve),
                Err(TransitionRefusal::NotYours)
            );
            // Reach is checked before the planned time.
            let past = request(T::Approved, Some("2000-01-01T00:00:00Z"));
            assert_eq!(
                plan(agent(WORKSPACE), &theirs, &past),
                Err(TransitionRefusal::NotYours)
            );
            // A person's own move ignores `mine`.
            assert!(plan(member(Some(ORG), false), &theirs, &approve).is_ok());
        }

        #[test]
        fn a_planned_time_must_be_a_time_in_the_future() {
            let scope = member(Some(ORG), false);
            let from = post(S::InternalReview);
            // 02:30 does not exist in New York on the day its clocks go forward.
            let new_york = fleetdesk_kernel::market::zone("America/New_York");
            let skipped = request(T::Approved, Some("2027-03-14 02:30"));
            assert!(matches!(
                plan_move(scope, AGENCY, &from, &skipped, &new_york, now()),
                Err(TransitionRefusal::PlannedAt(TimeInputError::Gap(_)))
            ));
            assert_eq!(
                plan(
                    scope,
                    &from,
                    &request(T::Approved, Some("2026-10-07T01:00:00Z"))
                ),
                Err(TransitionRefusal::PlannedInPast)
            );
            // 09:00 in Taipei is 01:00 UTC: now, so not in the future; 09:01 is.
            assert_eq!(
                plan(
                    scope,
                    &from,
                    &request(T::Approved, Some("2026-10-07 09:00"))
                ),
                Err(TransitionRefusal::PlannedInPast)
            );
            assert_eq!(
                plan(
                    scope,
                    &from,
                    &request(T::Approved, Some("2026-10-07 09:01"))
                )
                .unwrap()
                .planned_at,
                Some("2026-10-07T01:01:00Z".parse().unwrap())
            );
            // The planned time is checked before the move rules.
            assert_eq!(
                plan(
                    scope,
                    &post(S::Published),
                    &request(T::Approved, Some("2026-10-06T00:00:00Z"))
                ),
                Err(TransitionRefusal::PlannedInPast)
            );
        }

        #[test]
        fn a_planned_time_is_kept_only_with_an_approval() {
            let scope = member(Some(ORG), false);
            let later = Some("2026-10-08T00:00:00Z");
            let approved = plan(
                scope,
                &post(S::InternalReview),
                &request(T::Approved, later),
            );
            let moved = PostSubject {
                workspace_id: WORKSPACE,
                agent_id: Some(PERSONA_AGENT),
                id: Uuid::from_u128(9),
                code: "TW-T001",
                platform: fleetdesk_kernel::Platform::Threads,
            }
            .event(
                EventBody::PostMoved,
                (Some(S::InternalReview), S::Approved),
                Some("why"),
            );
            assert_eq!(
                approved,
                Ok(PlannedMove {
                    from: S::InternalReview,
                    the_move: Move::To(S::Approved),
                    to: S::Approved,
                    planned_at: Some("2026-10-08T00:00:00Z".parse().unwrap()),
                    event: Some(moved),
                    pin: Some(post(S::InternalReview).pin()),
                })
            );
            for to in [T::SentBack, T::RewriteRequested, T::Cancelled] {
                let moved = plan(scope, &post(S::InternalReview), &request(to, later)).unwrap();
                assert_eq!(moved.to, to.status());
                assert_eq!(moved.planned_at, None, "{to}");
            }
            assert_eq!(
                plan(scope, &post(S::InternalReview), &request(T::Approved, None))
                    .unwrap()
                    .planned_at,
                None
            );
        }

        #[test]
        fn an_approved_post_with_a_planned_time_is_rescheduled_in_place() {
            let scope = member(Some(ORG), false);
            let moved = plan(
                scope,
                &post(S::Approved),
                &request(T::Approved, Some("2026-10-08 10:00")),
            )
            .unwrap();
            assert_eq!(moved.the_move, Move::Reschedule);
            assert_eq!(moved.to, S::Approved);
            assert_eq!(moved.the_move.action(), "rescheduled");
            assert_eq!(
                moved.planned_at,
                Some("2026-10-08T02:00:00Z".parse().unwrap())
            );
            // Without a planned time the move rules refuse it.
            assert!(matches!(
                plan(scope, &post(S::Approved), &request(T::Approved, None)),
                Err(TransitionRefusal::Move(MoveRefusal::Rule(_)))
            ));
            // A move the rules refuse whatever the time is still refused by them.
            let mut comment_less = request(T::SentBack, None);
            comment_less.comment = None;
            assert_eq!(
                plan(scope, &post(S::InternalReview), &comment_less),
                Err(TransitionRefusal::Move(MoveRefusal::CommentRequired(
                    T::SentBack
                )))
            );
        }

        #[test]
        fn a_move_names_its_record_entry_and_its_reviewer_role() {
            assert_eq!(Move::To(S::Approved).action(), "approved");
            assert_eq!(Move::To(S::SentBack).action(), "sent_back");
            assert_eq!(Move::Reschedule.status(S::Approved), S::Approved);
            assert_eq!(
                Move::To(S::Cancelled).status(S::InternalReview),
                S::Cancelled
            );
            assert_eq!(AGENCY.as_str(), "agency");
            assert_eq!(CLIENT.as_str(), "client");
            assert_eq!(ReviewerRole::Client { review: false }.as_str(), "client");
            assert_eq!(ADMIN.as_str(), "admin");
        }

        #[test]
        fn a_status_change_tells_the_persona_s_agent_and_a_reschedule_tells_nothing() {
            let scope = member(Some(ORG), false);
            let mut back = request(T::SentBack, None);
            back.comment = Some("too long".into());
            let event = plan(scope, &post(S::InternalReview), &back)
                .unwrap()
                .event
                .expect("a send-back tells");
            assert_eq!(
                (event.workspace_id, event.agent_id, event.object_id),
                (WORKSPACE, Some(PERSONA_AGENT), Uuid::from_u128(9))
            );
            assert_eq!(
                event.body,
                EventBody::PostMoved(fleetdesk_kernel::events::PostChange {
                    code: Some("TW-T001".into()),
                    platform: Some(fleetdesk_kernel::Platform::Threads),
                    from: Some("internal_review".into()),
                    status: "sent_back".into(),
                    note: Some("too long".into()),
                })
            );
            // A relayed move tells the persona's agent too; an approval without a comment has
            // no note.
            let mut approve = request(T::Approved, None);
            approve.comment = None;
            let relayed = plan(agent(WORKSPACE), &post(S::InternalReview), &approve)
                .unwrap()
                .event
                .unwrap();
            assert_eq!(relayed.agent_id, Some(PERSONA_AGENT));
            let EventBody::PostMoved(change) = relayed.body else {
                panic!("{relayed:?}");
            };
            assert_eq!((change.status.as_str(), change.note), ("approved", None));
            // A post whose persona has no agent is told to no one.
            let unassigned = MovingPost {
                persona_agent: None,
                ..post(S::InternalReview)
            };
            let cancelled = plan(scope, &unassigned, &request(T::Cancelled, None)).unwrap();
            assert_eq!(cancelled.event.unwrap().agent_id, None);
            // A reschedule keeps the status: nothing to tell.
            let rescheduled = plan(
                scope,
                &post(S::Approved),
                &request(T::Approved, Some("2026-10-08 10:00")),
            )
            .unwrap();
            assert_eq!(rescheduled.event, None);
        }
    }
}
