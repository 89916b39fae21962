//! The community assistant of WhatsApp and Discord groups: which knowledge-base entries suit a
//! space, member digests, tickets, and the personal data their summaries must not carry.
//!
//! - [`space`]: a registered group (channel, axes market, track and location) and which
//!   knowledge-base entries suit it by their axis tags.
//! - [`personal`]: phone numbers, e-mail addresses and order numbers in free text.
//! - [`digest`]: a day's digest of a space's members, checked whole before it is stored.
//! - [`ticket`]: a matter for a person, and when a new report joins an open ticket.
//! - [`ports`]: the repository port the PostgreSQL adapter implements.
//! - [`service`]: the use cases: the request's own rules, then the port's transaction.

pub mod digest;
pub mod personal;
pub mod ports;
pub mod service;
pub mod space;
pub mod ticket;
#[cfg(feature = "wire")]
pub mod wire;

pub use digest::{DigestMember, DigestReport, MemberTag, TagKind};
pub use personal::{PersonalData, find_personal_data};
pub use space::{Channel, Space, SpaceStatus, entry_suits_space};
pub use ticket::{NewTicket, TicketCategory};

use jiff::civil::Date;

/// Why a community call is refused: the API answers 400, 404 or 422.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CommunityRefusal {
    /// 400 naming `field`.
    #[error("{field}: {message}")]
    Invalid { field: String, message: String },
    /// 404: the space is unknown, archived, or of another workspace.
    #[error("no such community space")]
    SpaceNotFound,
    /// 422: the call names another channel than the space's registration.
    #[error("channel {given} is not the space's channel ({space})")]
    OtherChannel { given: Channel, space: Channel },
    /// 422: the digest's day has not begun in the space's zone.
    #[error("day {day} has not begun in the space's zone ({zone}, today {today})")]
    DayNotBegun {
        day: Date,
        zone: String,
        today: Date,
    },
    /// 422: the digest's day is more than [`digest::DAYS_BACK`] days before the space's today.
    #[error(
        "day {day} is more than {days_back} days before the space's today ({today}, {zone})",
        days_back = digest::DAYS_BACK
    )]
    DayTooOld {
        day: Date,
        zone: String,
        today: Date,
    },
    /// 422: the space has a digest for the day already (one per space and day).
    #[error("a digest of this space for {0} is already reported (one per space and day)")]
    DigestExists(Date),
    /// 404: the ticket is unknown or not of the caller's organization.
    #[error("no such ticket")]
    TicketNotFound,
    /// 422: the ticket was handled otherwise already.
    #[error("the ticket is {0} already; a handled ticket takes no other move")]
    TicketHandled(crate::ticket::TicketStatus),
}

impl CommunityRefusal {
    pub fn invalid(field: impl Into<String>, message: impl Into<String>) -> Self {
        CommunityRefusal::Invalid {
            field: field.into(),
            message: message.into(),
        }
    }
}
