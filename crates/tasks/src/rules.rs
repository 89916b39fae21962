//! The rules of a task card: who may move it where (`plan`), when a request joins an open card
//! instead of opening another (`also_wanted`), how `due_at` is read, and the flags a card
//! carries (`flags`). Pure functions: the adapter loads and locks the card, asks here, and
//! writes the plan in the same transaction.

use crate::TaskStatus;
use fleetdesk_kernel::TimeInput;
use jiff::{SignedDuration, Timestamp};
use uuid::Uuid;

/// An in-progress card without progress for longer is stale.
pub const STALE_AFTER: SignedDuration = SignedDuration::from_hours(2);
/// The zone a market-local due_at is read in when the target has no account (the default
/// market's, TW).
pub const DEFAULT_ZONE: &str = "Asia/Taipei";
/// A card waiting for confirmation for longer is confirm_overdue.
pub const CONFIRM_WITHIN: SignedDuration = SignedDuration::from_hours(24);

/// What a card says besides its status: computed when it is read, never stored.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Flags {
    /// In progress with no progress for over [`STALE_AFTER`].
    pub stale: bool,
    /// Past its due time and not done, failed or cancelled.
    pub overdue: bool,
    /// Waiting for a person's confirmation for over [`CONFIRM_WITHIN`].
    pub confirm_overdue: bool,
}

/// The times the flags are read from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Clock {
    pub status: TaskStatus,
    /// The last claim, progress note or finish; the card's creation before any.
    pub last_progress_at: Option<Timestamp>,
    pub created_at: Timestamp,
    pub due_at: Option<Timestamp>,
    /// Since when the card waits for confirmation.
    pub confirmation_since: Option<Timestamp>,
}

/// The flags of a card at `now`.
pub fn flags(c: &Clock, now: Timestamp) -> Flags {
    use TaskStatus as S;
    let since_progress = c.last_progress_at.unwrap_or(c.created_at);
    Flags {
        stale: c.status == S::InProgress && now.duration_since(since_progress) > STALE_AFTER,
        overdue: !matches!(c.status, S::Done | S::Failed | S::Cancelled)
            && c.due_at.is_some_and(|due| now > due),
        confirm_overdue: c.status == S::PendingConfirmation
            && now.duration_since(c.confirmation_since.unwrap_or(since_progress)) > CONFIRM_WITHIN,
    }
}

/// Who moves a card.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Who {
    /// An agent working cards (claim, progress, finish, fail).
    Agent(Uuid),
    /// A person (confirm, reopen).
    Person,
    /// An agent relaying a person's confirm or send-back.
    Relay(Uuid),
}

/// A move on a card.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Move {
    Claim,
    Progress,
    Finish {
        result: String,
    },
    Fail {
        reason: String,
    },
    Confirm,
    /// A person's reopen, or a relayed send-back: back to in_progress with a note.
    Reopen,
}

/// The card as the rules need it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Card {
    pub status: TaskStatus,
    pub assignee: Option<Uuid>,
    /// The agent the card's persona is assigned to.
    pub persona_agent: Option<Uuid>,
    pub result: Option<String>,
    pub fail_reason: Option<String>,
    /// A follow-up's card: its decision says how it ends (complete_issue or a person).
    pub follow_up: bool,
}

impl Card {
    /// A working agent sees the cards assigned to it and those on its own personas.
    pub fn visible_to(&self, agent: Uuid) -> bool {
        self.assignee == Some(agent) || self.persona_agent == Some(agent)
    }
}

/// What the adapter writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Plan {
    /// The same move already made: nothing is written.
    Unchanged,
    /// The card moves to `status`; `assign` makes the agent its assignee.
    Apply {
        status: TaskStatus,
        assign: Option<Uuid>,
    },
}

/// Why a request on a card is refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TaskRefusal {
    /// 404: no such card, or another organization's, workspace's or agent's.
    #[error("no such task card")]
    NotFound,
    /// 403: the card is assigned to another agent.
    #[error("the task card is assigned to another agent")]
    NotYours,
    /// 403: only the assignee reports progress, finishes or fails a card.
    #[error("only the card's assignee may do this: claim it first")]
    NotAssignee,
    /// 422: the move is not allowed from the card's status.
    #[error("the task card is {0}; {1} is not possible from there")]
    CardIs(TaskStatus, &'static str),
    /// 422: finished already with another result.
    #[error("the task card was already finished with another result")]
    OtherResult,
    /// 422: failed already with another reason.
    #[error("the task card already failed with another reason")]
    OtherReason,
    /// 422: an agent relaying the confirmation of its own card.
    #[error(
        "an agent never relays the confirmation of a card assigned to itself: a person confirms it, directly or through another agent's relay"
    )]
    OwnCard,
    /// 422: a follow-up's card is never failed: its decision is reported or dismissed.
    #[error(
        "a follow-up's card is not failed: report it with complete_issue, or a person dismisses its decision"
    )]
    FollowUpFail,
    /// 404: the target names nothing the caller may see.
    #[error("no such {0} to open a card on")]
    TargetNotFound(&'static str),
    /// 403: the target is under another agent's persona.
    #[error("the {0} belongs to another agent's persona")]
    TargetNotYours(&'static str),
    /// 409: a legacy code repeated across platforms.
    #[error("the code names accounts on several platforms: add target.platform")]
    TargetAmbiguous,
    /// 409: a platform admin outside any organization names a code used in several.
    #[error(
        "the code names accounts in several organizations: open the card on the account's post or decision, or as a member of its organization"
    )]
    TargetInSeveralOrganizations,
    /// 422: the target names no persona (a decision about none).
    #[error("the {0} is about no persona: a card needs one")]
    TargetWithoutPersona(&'static str),
    /// 422: `agent` names no agent of the target's workspace.
    #[error("no agent {0} in the target's workspace")]
    UnknownAgent(String),
    /// 422: `agent` names an agent whose role does not work cards (no tasks:write).
    #[error("agent {0} cannot work task cards: its role has no tasks:write")]
    AgentCannotWork(String),
    /// 422: an evidence asset that is not a media item of the card's workspace.
    #[error("evidence asset {0} is not a media library item of this workspace")]
    UnknownAsset(Uuid),
    /// 400: due_at names a local time the market's zone skips or repeats.
    #[error("{0}")]
    BadDueAt(fleetdesk_kernel::time::TimeInputError),
    /// 400: the target's market zone is not in the time zone database, so a local due_at
    /// cannot be read (markets carry real zones: a stored zone this fails on is a fault).
    #[error("the market zone {0} is not in the time zone database")]
    UnknownZone(String),
}

impl Move {
    fn name(&self) -> &'static str {
        match self {
            Move::Claim => "claim",
            Move::Progress => "progress",
            Move::Finish { .. } => "finish",
            Move::Fail { .. } => "fail",
            Move::Confirm => "confirm",
            Move::Reopen => "reopen",
        }
    }
}

/// What `mv` by `who` does to `card`.
pub fn plan(card: &Card, who: Who, mv: &Move) -> Result<Plan, TaskRefusal> {
    use TaskStatus as S;
    let refuse = || Err(TaskRefusal::CardIs(card.status, mv.name()));
    let apply = |status| {
        Ok(Plan::Apply {
            status,
            assign: None,
        })
    };
    match who {
        Who::Agent(agent) => {
            if !card.visible_to(agent) {
                return Err(TaskRefusal::NotFound);
            }
            if card.assignee.is_some_and(|a| a != agent) {
                return Err(TaskRefusal::NotYours);
            }
            if *mv != Move::Claim && card.assignee != Some(agent) {
                return Err(TaskRefusal::NotAssignee);
            }
        }
        Who::Relay(agent) => {
            // A relaying agent reaches only the cards its other task reads show it.
            if !card.visible_to(agent) {
                return Err(TaskRefusal::NotFound);
            }
            if *mv == Move::Confirm && card.assignee == Some(agent) {
                return Err(TaskRefusal::OwnCard);
            }
        }
        Who::Person => {}
    }
    if card.follow_up && matches!(mv, Move::Fail { .. }) {
        return Err(TaskRefusal::FollowUpFail);
    }
    match (mv, card.status) {
        (Move::Claim, S::PendingPickup) => Ok(Plan::Apply {
            status: S::InProgress,
            assign: match who {
                Who::Agent(a) => Some(a),
                _ => None,
            },
        }),
        (Move::Claim, S::InProgress) => Ok(Plan::Unchanged),
        (Move::Progress, S::InProgress) => apply(S::InProgress),
        (Move::Finish { .. }, S::InProgress) => apply(S::PendingConfirmation),
        (Move::Finish { result }, S::PendingConfirmation | S::Done) => {
            if card.result.as_deref() == Some(result.as_str()) {
                Ok(Plan::Unchanged)
            } else {
                Err(TaskRefusal::OtherResult)
            }
        }
        (Move::Fail { .. }, S::PendingPickup | S::InProgress) => apply(S::Failed),
        (Move::Fail { reason }, S::Failed) => {
            if card.fail_reason.as_deref() == Some(reason.as_str()) {
                Ok(Plan::Unchanged)
            } else {
                Err(TaskRefusal::OtherReason)
            }
        }
        (Move::Confirm, S::PendingConfirmation) => apply(S::Done),
        (Move::Confirm, S::Done) => Ok(Plan::Unchanged),
        (Move::Reopen, S::PendingConfirmation | S::Done) => apply(S::InProgress),
        _ => refuse(),
    }
}

/// The most requesters a card records in `also_wanted_by`: past it a request still joins the
/// card, unrecorded, so a card's row cannot grow without bound.
pub const ALSO_WANTED_MAX: usize = 50;

/// Who also wants an open card a request joins: `requester` added unless it opened the card,
/// is listed already, or [`ALSO_WANTED_MAX`] are listed (then `None`: nothing to write).
pub fn also_wanted(opener: &str, listed: &[String], requester: &str) -> Option<Vec<String>> {
    let same = |a: &str| a.trim().eq_ignore_ascii_case(requester.trim());
    if same(opener) || listed.iter().any(|l| same(l)) || listed.len() >= ALSO_WANTED_MAX {
        return None;
    }
    let mut all = listed.to_vec();
    all.push(requester.trim().to_owned());
    Some(all)
}

/// `due_at` as given: ISO with a zone, or market-local read in `zone` (the target account's
/// market zone).
pub fn read_due_at(input: TimeInput, zone: &str) -> Result<Timestamp, TaskRefusal> {
    let tz =
        jiff::tz::TimeZone::get(zone).map_err(|_| TaskRefusal::UnknownZone(zone.to_owned()))?;
    input.resolve(&tz).map_err(TaskRefusal::BadDueAt)
}

#[cfg(test)]
mod tests {
    use super::*;
    use TaskStatus as S;

    const A: Uuid = Uuid::from_u128(1);
    const B: Uuid = Uuid::from_u128(2);

    fn card(status: TaskStatus, assignee: Option<Uuid>) -> Card {
        Card {
            status,
            assignee,
            persona_agent: Some(A),
            result: Some("done it".into()),
            fail_reason: Some("blocked".into()),
            follow_up: false,
        }
    }

    fn moved(status: TaskStatus) -> Result<Plan, TaskRefusal> {
        Ok(Plan::Apply {
            status,
            assign: None,
        })
    }

    #[test]
    fn a_claim_takes_an_unassigned_or_own_card_and_a_resend_is_unchanged() {
        let claimed = Ok(Plan::Apply {
            status: S::InProgress,
            assign: Some(A),
        });
        assert_eq!(
            plan(&card(S::PendingPickup, None), Who::Agent(A), &Move::Claim),
            claimed
        );
        assert_eq!(
            plan(
                &card(S::PendingPickup, Some(A)),
                Who::Agent(A),
                &Move::Claim
            ),
            claimed
        );
        assert_eq!(
            plan(&card(S::InProgress, Some(A)), Who::Agent(A), &Move::Claim),
            Ok(Plan::Unchanged)
        );
        assert_eq!(
            plan(
                &card(S::PendingPickup, Some(B)),
                Who::Agent(A),
                &Move::Claim
            ),
            Err(TaskRefusal::NotYours)
        );
        assert_eq!(
            plan(&card(S::Done, Some(A)), Who::Agent(A), &Move::Claim),
            Err(TaskRefusal::CardIs(S::Done, "claim"))
        );
    }

    #[test]
    fn another_agents_card_is_not_found() {
        let mut c = card(S::PendingPickup, None);
        c.persona_agent = Some(B);
        assert_eq!(
            plan(&c, Who::Agent(A), &Move::Claim),
            Err(TaskRefusal::NotFound)
        );
        // Assigned to A on B's persona: A sees it.
        c.assignee = Some(A);
        assert!(plan(&c, Who::Agent(A), &Move::Claim).is_ok());
    }

    #[test]
    fn only_the_assignee_works_a_card() {
        for mv in [
            Move::Progress,
            Move::Finish { result: "x".into() },
            Move::Fail { reason: "x".into() },
        ] {
            assert_eq!(
                plan(&card(S::InProgress, None), Who::Agent(A), &mv),
                Err(TaskRefusal::NotAssignee)
            );
            assert_eq!(
                plan(&card(S::InProgress, Some(B)), Who::Agent(A), &mv),
                Err(TaskRefusal::NotYours)
            );
        }
    }

    #[test]
    fn progress_finish_and_fail_move_from_where_they_may() {
        let c = |s| card(s, Some(A));
        let me = Who::Agent(A);
        assert_eq!(
            plan(&c(S::InProgress), me, &Move::Progress),
            moved(S::InProgress)
        );
        assert_eq!(
            plan(&c(S::PendingPickup), me, &Move::Progress),
            Err(TaskRefusal::CardIs(S::PendingPickup, "progress"))
        );
        let finish = |r: &str| Move::Finish { result: r.into() };
        assert_eq!(
            plan(&c(S::InProgress), me, &finish("x")),
            moved(S::PendingConfirmation)
        );
        assert_eq!(
            plan(&c(S::PendingConfirmation), me, &finish("done it")),
            Ok(Plan::Unchanged)
        );
        assert_eq!(
            plan(&c(S::Done), me, &finish("done it")),
            Ok(Plan::Unchanged)
        );
        assert_eq!(
            plan(&c(S::PendingConfirmation), me, &finish("other")),
            Err(TaskRefusal::OtherResult)
        );
        assert_eq!(
            plan(&c(S::Failed), me, &finish("x")),
            Err(TaskRefusal::CardIs(S::Failed, "finish"))
        );
        let fail = |r: &str| Move::Fail { reason: r.into() };
        assert_eq!(plan(&c(S::InProgress), me, &fail("x")), moved(S::Failed));
        assert_eq!(plan(&c(S::PendingPickup), me, &fail("x")), moved(S::Failed));
        assert_eq!(
            plan(&c(S::Failed), me, &fail("blocked")),
            Ok(Plan::Unchanged)
        );
        assert_eq!(
            plan(&c(S::Failed), me, &fail("other")),
            Err(TaskRefusal::OtherReason)
        );
        assert_eq!(
            plan(&c(S::PendingConfirmation), me, &fail("x")),
            Err(TaskRefusal::CardIs(S::PendingConfirmation, "fail"))
        );
    }

    #[test]
    fn a_person_confirms_and_reopens() {
        let c = |s| card(s, Some(A));
        assert_eq!(
            plan(&c(S::PendingConfirmation), Who::Person, &Move::Confirm),
            moved(S::Done)
        );
        assert_eq!(
            plan(&c(S::Done), Who::Person, &Move::Confirm),
            Ok(Plan::Unchanged)
        );
        assert_eq!(
            plan(&c(S::InProgress), Who::Person, &Move::Confirm),
            Err(TaskRefusal::CardIs(S::InProgress, "confirm"))
        );
        assert_eq!(
            plan(&c(S::PendingConfirmation), Who::Person, &Move::Reopen),
            moved(S::InProgress)
        );
        assert_eq!(
            plan(&c(S::Done), Who::Person, &Move::Reopen),
            moved(S::InProgress)
        );
        for s in [S::PendingPickup, S::InProgress, S::Failed, S::Cancelled] {
            assert_eq!(
                plan(&c(s), Who::Person, &Move::Reopen),
                Err(TaskRefusal::CardIs(s, "reopen"))
            );
        }
    }

    #[test]
    fn an_agent_never_relays_its_own_confirmation() {
        let c = card(S::PendingConfirmation, Some(A));
        assert_eq!(
            plan(&c, Who::Relay(A), &Move::Confirm),
            Err(TaskRefusal::OwnCard)
        );
        // Sending its own card back is not a confirmation.
        assert_eq!(plan(&c, Who::Relay(A), &Move::Reopen), moved(S::InProgress));
        // The persona's agent relays the confirmation of another agent's card on its persona.
        let other = card(S::PendingConfirmation, Some(B));
        assert_eq!(plan(&other, Who::Relay(A), &Move::Confirm), moved(S::Done));
        assert_eq!(
            plan(&other, Who::Relay(B), &Move::Confirm),
            Err(TaskRefusal::OwnCard)
        );
    }

    #[test]
    fn a_relaying_agent_reaches_only_the_cards_it_sees() {
        const C: Uuid = Uuid::from_u128(3);
        let c = card(S::PendingConfirmation, Some(A));
        for mv in [Move::Confirm, Move::Reopen] {
            assert_eq!(plan(&c, Who::Relay(B), &mv), Err(TaskRefusal::NotFound));
        }
        let other = card(S::PendingConfirmation, Some(B));
        assert_eq!(
            plan(&other, Who::Relay(C), &Move::Confirm),
            Err(TaskRefusal::NotFound)
        );
    }

    #[test]
    fn a_follow_ups_card_is_never_failed() {
        let mut c = card(S::InProgress, Some(A));
        c.follow_up = true;
        let fail = Move::Fail {
            reason: "blocked".into(),
        };
        assert_eq!(
            plan(&c, Who::Agent(A), &fail),
            Err(TaskRefusal::FollowUpFail)
        );
        c.follow_up = false;
        assert_eq!(plan(&c, Who::Agent(A), &fail), moved(S::Failed));
    }

    #[test]
    fn a_requester_is_added_once_and_never_the_opener() {
        let listed = vec!["Bo".to_owned()];
        assert_eq!(also_wanted("op1", &listed, "op1"), None);
        assert_eq!(also_wanted("op1", &listed, " bo "), None);
        assert_eq!(
            also_wanted("op1", &listed, "Ann"),
            Some(vec!["Bo".to_owned(), "Ann".to_owned()])
        );
    }

    #[test]
    fn requesters_are_recorded_up_to_their_limit() {
        let mut listed: Vec<String> = (1..ALSO_WANTED_MAX).map(|i| format!("p{i}")).collect();
        let full = also_wanted("op1", &listed, "last").expect("the 50th is recorded");
        assert_eq!(full.len(), ALSO_WANTED_MAX);
        listed = full;
        assert_eq!(also_wanted("op1", &listed, "one more"), None);
    }

    #[test]
    fn flags_at_their_limits() {
        let t0: Timestamp = "2026-11-25T00:00:00Z".parse().unwrap();
        let clock = |status, progress: Option<Timestamp>| Clock {
            status,
            last_progress_at: progress,
            created_at: t0,
            due_at: Some(t0 + SignedDuration::from_hours(1)),
            confirmation_since: Some(t0),
        };
        let at = |h: i64, s: i64| t0 + SignedDuration::from_hours(h) + SignedDuration::from_secs(s);
        // Stale: only past two hours without progress, only in progress.
        assert!(!flags(&clock(S::InProgress, Some(t0)), at(2, 0)).stale);
        assert!(flags(&clock(S::InProgress, Some(t0)), at(2, 1)).stale);
        assert!(flags(&clock(S::InProgress, None), at(2, 1)).stale);
        assert!(!flags(&clock(S::PendingPickup, Some(t0)), at(3, 0)).stale);
        // Overdue: past due_at, not once done, failed or cancelled.
        assert!(!flags(&clock(S::InProgress, Some(t0)), at(1, 0)).overdue);
        assert!(flags(&clock(S::InProgress, Some(t0)), at(1, 1)).overdue);
        assert!(flags(&clock(S::PendingConfirmation, Some(t0)), at(1, 1)).overdue);
        for s in [S::Done, S::Failed, S::Cancelled] {
            assert!(!flags(&clock(s, Some(t0)), at(5, 0)).overdue);
        }
        // Confirm overdue: waiting for confirmation over 24 hours.
        assert!(!flags(&clock(S::PendingConfirmation, Some(t0)), at(24, 0)).confirm_overdue);
        assert!(flags(&clock(S::PendingConfirmation, Some(t0)), at(24, 1)).confirm_overdue);
        assert!(!flags(&clock(S::Done, Some(t0)), at(30, 0)).confirm_overdue);
        let mut no_due = clock(S::InProgress, Some(t0));
        no_due.due_at = None;
        assert!(!flags(&no_due, at(100, 0)).overdue);
    }

    #[test]
    fn due_at_reads_market_local_in_the_zone() {
        assert_eq!(
            read_due_at(TimeInput::parse("2026-11-25 10:00").unwrap(), "Asia/Taipei").unwrap(),
            "2026-11-25T02:00:00Z".parse::<Timestamp>().unwrap()
        );
        assert_eq!(
            read_due_at(
                TimeInput::parse("2026-11-25T10:00:00+00:00").unwrap(),
                "Asia/Taipei"
            )
            .unwrap(),
            "2026-11-25T10:00:00Z".parse::<Timestamp>().unwrap()
        );
        // 02:30 does not exist in New York on the day its clocks go forward.
        let gap = TimeInput::parse("2026-03-08 02:30").unwrap();
        assert_eq!(
            read_due_at(gap, "America/New_York"),
            Err(TaskRefusal::BadDueAt(
                fleetdesk_kernel::time::TimeInputError::Gap("America/New_York".into())
            ))
        );
        let refused = read_due_at(gap, "Mars/Olympus").unwrap_err();
        assert_eq!(refused, TaskRefusal::UnknownZone("Mars/Olympus".into()));
        assert_eq!(
            refused.to_string(),
            "the market zone Mars/Olympus is not in the time zone database"
        );
    }
}
