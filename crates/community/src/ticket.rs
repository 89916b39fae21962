//! Tickets: a matter a person must handle (a complaint, a refund, a deletion request, ...).
//! A new report of the same matter joins the open ticket instead of opening another.

use crate::CommunityRefusal;
use crate::personal::find_personal_data;
use crate::space::Channel;
use jiff::{SignedDuration, Timestamp};
use serde::{Deserialize, Serialize};

pub const SUMMARY_MAX: usize = 500;
pub const MEMBER_ID_MAX: usize = 200;
/// An open ticket of the same member and category opened this recently takes a new report
/// as its note.
pub const REUSE_WITHIN: SignedDuration = SignedDuration::from_hours(24);

fleetdesk_kernel::text_enum! {
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
    #[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
    #[serde(rename_all = "snake_case")]
    pub enum TicketCategory {
        Complaint => "complaint",
        Refund => "refund",
        Order => "order",
        DataDeletion => "data_deletion",
        Abuse => "abuse",
        Unanswered => "unanswered",
        Other => "other",
    }
}

fleetdesk_kernel::text_enum! {
    /// Where a ticket stands: open until a person resolves it (the matter was handled) or
    /// dismisses it (nothing to do). A handled ticket leaves the person's day and no later
    /// report joins it.
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
    #[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
    #[serde(rename_all = "snake_case")]
    pub enum TicketStatus {
        Open => "open",
        Resolved => "resolved",
        Dismissed => "dismissed",
    }
}

/// The most characters of a person's note on a move.
pub const NOTE_MAX: usize = 1000;

/// How many of a ticket's notes a list carries: the latest, with the count of all (a ticket
/// read alone carries every note).
pub const LISTED_NOTES: i32 = 3;

/// A person's move on an open ticket.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TicketMove {
    /// The matter was handled.
    Resolve,
    /// Nothing to do (spam, a duplicate, settled elsewhere).
    Dismiss,
}

impl TicketMove {
    /// The status the move leaves the ticket in.
    pub fn status(self) -> TicketStatus {
        match self {
            TicketMove::Resolve => TicketStatus::Resolved,
            TicketMove::Dismiss => TicketStatus::Dismissed,
        }
    }
}

/// How a person handled a ticket: the status, their note, who (`{type: person, id, name}`)
/// and when.
#[derive(Debug, Clone, PartialEq)]
pub struct Handling {
    pub status: TicketStatus,
    pub note: String,
    pub by: serde_json::Value,
    pub at: Timestamp,
}

/// What a move does to a ticket.
#[derive(Debug, Clone, PartialEq)]
pub enum MovePlan {
    /// The open ticket is handled so.
    Handle(Handling),
    /// The same move was made already: nothing changes (the first note stays).
    Unchanged,
}

/// The plan of `mv` on a ticket now `current`, by the person `by` at `now` with `note` (1-1000
/// characters, white space around it dropped, no personal data: 400 naming `note`). An open
/// ticket is handled; the same move again is unchanged; the other move on a handled ticket is
/// refused (422).
pub fn plan_move(
    current: TicketStatus,
    mv: TicketMove,
    note: &str,
    by: serde_json::Value,
    now: Timestamp,
) -> Result<MovePlan, CommunityRefusal> {
    let note = note.trim();
    if note.is_empty() || note.chars().count() > NOTE_MAX {
        return Err(CommunityRefusal::invalid(
            "note",
            format!("must be 1-{NOTE_MAX} characters long"),
        ));
    }
    if let Some(found) = find_personal_data(note) {
        return Err(CommunityRefusal::invalid("note", found.message()));
    }
    match current {
        TicketStatus::Open => Ok(MovePlan::Handle(Handling {
            status: mv.status(),
            note: note.to_owned(),
            by,
            at: now,
        })),
        s if s == mv.status() => Ok(MovePlan::Unchanged),
        s => Err(CommunityRefusal::TicketHandled(s)),
    }
}

/// A ticket as reported.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewTicket {
    pub space_id: uuid::Uuid,
    pub channel: Channel,
    /// The member the matter concerns; tickets without one never merge.
    pub member_external_id: Option<String>,
    pub category: TicketCategory,
    pub summary: String,
}

impl NewTicket {
    /// The rules the ticket holds on its own: member id 1-200 characters when given, summary
    /// 1-500 without personal data (white space around both dropped).
    pub fn check(self) -> Result<NewTicket, CommunityRefusal> {
        let member_external_id = match self.member_external_id.as_deref().map(str::trim) {
            None => None,
            Some(m) if m.is_empty() || m.chars().count() > MEMBER_ID_MAX => {
                return Err(CommunityRefusal::invalid(
                    "member_external_id",
                    format!("must be 1-{MEMBER_ID_MAX} characters long"),
                ));
            }
            Some(m) => Some(m.to_owned()),
        };
        let summary = self.summary.trim().to_owned();
        if summary.is_empty() || summary.chars().count() > SUMMARY_MAX {
            return Err(CommunityRefusal::invalid(
                "summary",
                format!("must be 1-{SUMMARY_MAX} characters long"),
            ));
        }
        if let Some(found) = find_personal_data(&summary) {
            return Err(CommunityRefusal::invalid("summary", found.message()));
        }
        Ok(NewTicket {
            member_external_id,
            summary,
            ..self
        })
    }
}

/// A ticket as its space takes it: its own rules (400, [`NewTicket::check`]), then the
/// space's channel (422). The space was found first (an unknown space is 404).
pub fn accept(space: &crate::Space, ticket: NewTicket) -> Result<NewTicket, CommunityRefusal> {
    let ticket = ticket.check()?;
    crate::digest::check_channel(space, ticket.channel)?;
    Ok(ticket)
}

/// An open ticket of the space that a new report might join.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OpenTicket {
    pub id: uuid::Uuid,
    pub member_external_id: Option<String>,
    pub category: TicketCategory,
    pub created_at: Timestamp,
}

/// The earliest creation time of an open ticket a report at `now` may join: the adapter
/// loads the open tickets of the matter created after it ([`REUSE_WITHIN`] before `now`).
pub fn reuse_since(now: Timestamp) -> Timestamp {
    now.checked_sub(REUSE_WITHIN).unwrap_or(Timestamp::MIN)
}

/// The open ticket a new report joins: of the same member (never without one) and category,
/// opened after [`reuse_since`]`(now)`; the newest when there are several. There is no upper
/// bound: a ticket a concurrent report of the matter opened a moment "after" `now` (its clock
/// read later, its transaction committed first) is joined, not doubled.
pub fn reusable(new: &NewTicket, open: &[OpenTicket], now: Timestamp) -> Option<uuid::Uuid> {
    let member = new.member_external_id.as_deref()?;
    let since = reuse_since(now);
    open.iter()
        .filter(|t| t.member_external_id.as_deref() == Some(member))
        .filter(|t| t.category == new.category)
        .filter(|t| t.created_at > since)
        .max_by_key(|t| (t.created_at, t.id))
        .map(|t| t.id)
}

/// The matter a report with a member speaks of, as the name of the lock that makes two
/// reports of it at once one ticket: the space, the member and the category.
pub fn matter_key(space_id: uuid::Uuid, member: &str, category: TicketCategory) -> String {
    format!("community ticket {space_id} {member} {category}")
}

/// What a report does: joins an open ticket of its matter as one more note, or opens one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TicketPlan {
    Join { id: uuid::Uuid, note: TicketNote },
    Open { at: Timestamp },
}

/// A note a later report of the matter adds to its open ticket.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct TicketNote {
    pub text: String,
    #[serde(with = "fleetdesk_kernel::time::utc")]
    pub at: Timestamp,
}

impl TicketNote {
    /// The notes to append to the ticket's list (a list of this one note).
    pub fn appended(&self) -> serde_json::Value {
        serde_json::json!([self])
    }
}

/// The plan for a checked ticket ([`accept`]) reported at `now`, given the open tickets of its
/// matter the adapter loaded (none when the report names no member: [`matter_key`] is only
/// taken for a member).
pub fn plan_ticket(ticket: &NewTicket, open: &[OpenTicket], now: Timestamp) -> TicketPlan {
    match reusable(ticket, open, now) {
        Some(id) => TicketPlan::Join {
            id,
            note: TicketNote {
                text: ticket.summary.clone(),
                at: now,
            },
        },
        None => TicketPlan::Open { at: now },
    }
}

impl TicketPlan {
    /// The answer once the plan is written: `id` is the ticket the adapter opened, or joined.
    pub fn outcome(&self, id: uuid::Uuid) -> crate::ports::TicketOutcome {
        crate::ports::TicketOutcome {
            ticket_id: id,
            reused: matches!(self, TicketPlan::Join { .. }),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn new(member: Option<&str>, category: TicketCategory) -> NewTicket {
        NewTicket {
            space_id: uuid::Uuid::nil(),
            channel: Channel::Whatsapp,
            member_external_id: member.map(Into::into),
            category,
            summary: "the serum leaked".into(),
        }
    }

    #[test]
    fn a_move_handles_an_open_ticket_once_and_the_other_move_is_refused() {
        let now: Timestamp = "2026-12-08T01:00:00Z".parse().unwrap();
        let by = serde_json::json!({"type": "person", "name": "Ann"});
        let plan = |current, mv, note: &str| plan_move(current, mv, note, by.clone(), now);
        use TicketMove::*;
        use TicketStatus::*;
        assert_eq!(
            plan(Open, Resolve, "  refunded  "),
            Ok(MovePlan::Handle(Handling {
                status: Resolved,
                note: "refunded".into(),
                by: by.clone(),
                at: now
            }))
        );
        assert!(matches!(
            plan(Open, Dismiss, "spam"),
            Ok(MovePlan::Handle(Handling {
                status: Dismissed,
                ..
            }))
        ));
        assert_eq!(plan(Resolved, Resolve, "again"), Ok(MovePlan::Unchanged));
        assert_eq!(plan(Dismissed, Dismiss, "again"), Ok(MovePlan::Unchanged));
        assert_eq!(
            plan(Resolved, Dismiss, "no"),
            Err(CommunityRefusal::TicketHandled(Resolved))
        );
        assert_eq!(
            plan(Dismissed, Resolve, "no"),
            Err(CommunityRefusal::TicketHandled(Dismissed))
        );
        // The note: 1-1000 characters, no personal data; checked before the status.
        assert!(matches!(
            plan(Open, Resolve, &"n".repeat(1000)),
            Ok(MovePlan::Handle(_))
        ));
        for bad in ["", "   ", &"n".repeat(1001), "called +886 912 345 678"] {
            assert!(
                matches!(plan(Resolved, Dismiss, bad), Err(CommunityRefusal::Invalid { ref field, .. }) if field == "note"),
                "{bad}"
            );
        }
    }

    #[test]
    fn a_report_joins_the_open_ticket_of_its_member_and_category_within_24_hours() {
        let now: Timestamp = "2026-11-25T12:00:00Z".parse().unwrap();
        let ago = |h: i64| now - SignedDuration::from_hours(h);
        let ticket = |id: u128, member: Option<&str>, category, at| OpenTicket {
            id: uuid::Uuid::from_u128(id),
            member_external_id: member.map(Into::into),
            category,
            created_at: at,
        };
        use TicketCategory::*;
        let open = vec![
            ticket(1, Some("amy"), Refund, ago(30)),
            ticket(2, Some("amy"), Refund, ago(5)),
            ticket(3, Some("amy"), Refund, ago(2)),
            ticket(4, Some("bob"), Complaint, ago(1)),
            ticket(5, None, Refund, ago(1)),
        ];
        assert_eq!(
            reusable(&new(Some("amy"), Refund), &open, now),
            Some(uuid::Uuid::from_u128(3))
        );
        assert_eq!(reusable(&new(Some("amy"), Complaint), &open, now), None);
        assert_eq!(
            reusable(&new(Some("bob"), Complaint), &open, now),
            Some(uuid::Uuid::from_u128(4))
        );
        // Without a member, never.
        assert_eq!(reusable(&new(None, Refund), &open, now), None);
        // 24 hours is past the window; just under it is within.
        let edge = vec![ticket(6, Some("cid"), Order, ago(24))];
        assert_eq!(reusable(&new(Some("cid"), Order), &edge, now), None);
        let inside = vec![ticket(
            7,
            Some("cid"),
            Order,
            now - SignedDuration::from_mins(24 * 60 - 1),
        )];
        assert_eq!(
            reusable(&new(Some("cid"), Order), &inside, now),
            Some(uuid::Uuid::from_u128(7))
        );
        // Opened by a concurrent report whose clock was read later: joined, not doubled.
        let later = vec![ticket(
            8,
            Some("cid"),
            Order,
            now + SignedDuration::from_millis(30),
        )];
        assert_eq!(
            reusable(&new(Some("cid"), Order), &later, now),
            Some(uuid::Uuid::from_u128(8))
        );
        assert_eq!(reuse_since(now), ago(24));
    }

    #[test]
    fn the_summary_is_checked() {
        let mut t = new(Some(" amy "), TicketCategory::Refund);
        t.summary = "x".repeat(SUMMARY_MAX);
        let ok = t.clone().check().unwrap();
        assert_eq!(ok.member_external_id.as_deref(), Some("amy"));
        t.summary.push('x');
        assert!(
            matches!(t.clone().check(), Err(CommunityRefusal::Invalid { field, .. }) if field == "summary")
        );
        t.summary = "refund order TW20261125001 please".into();
        assert!(
            matches!(t.clone().check(), Err(CommunityRefusal::Invalid { field, .. }) if field == "summary")
        );
        t.summary = "  ".into();
        assert!(t.clone().check().is_err());
        let mut t = new(Some("  "), TicketCategory::Refund);
        assert!(
            matches!(t.clone().check(), Err(CommunityRefusal::Invalid { field, .. }) if field == "member_external_id")
        );
        t.member_external_id = None;
        assert!(t.check().is_ok());
    }

    #[test]
    fn a_report_of_an_open_matter_joins_it_as_a_note_and_any_other_opens_a_ticket() {
        let now: Timestamp = "2026-11-25T12:00:00Z".parse().unwrap();
        let open = vec![OpenTicket {
            id: uuid::Uuid::from_u128(9),
            member_external_id: Some("amy".into()),
            category: TicketCategory::Refund,
            created_at: now - SignedDuration::from_hours(1),
        }];
        let joined = plan_ticket(&new(Some("amy"), TicketCategory::Refund), &open, now);
        let TicketPlan::Join { id, note } = &joined else {
            panic!("{joined:?}");
        };
        assert_eq!(*id, uuid::Uuid::from_u128(9));
        assert_eq!(
            note.appended(),
            serde_json::json!([{"text": "the serum leaked", "at": "2026-11-25T12:00:00Z"}])
        );
        let outcome = joined.outcome(*id);
        assert!(outcome.reused);
        assert_eq!(outcome.ticket_id, uuid::Uuid::from_u128(9));

        let other = plan_ticket(&new(Some("amy"), TicketCategory::Abuse), &open, now);
        assert_eq!(other, TicketPlan::Open { at: now });
        assert!(!other.outcome(uuid::Uuid::from_u128(10)).reused);
        assert_eq!(
            plan_ticket(&new(None, TicketCategory::Refund), &open, now),
            TicketPlan::Open { at: now }
        );
        assert_eq!(
            matter_key(uuid::Uuid::nil(), "amy", TicketCategory::Refund),
            "community ticket 00000000-0000-0000-0000-000000000000 amy refund"
        );
    }
}
