//! Ads: paid third-party research, ad picks, and ad changes a person approves. Agents never
//! spend money on their own: research costs nothing until a person agrees, and an ad change
//! changes nothing until a person approves it in the service.
//!
//! - [`product`]: which marketplace product a research item names.
//! - [`research`]: quote then approve: the items a request may ask for, the quote, when an
//!   approval is refused, the cache and the credit month.
//! - [`ports`]: the research repository port.
//! - [`provider`]: the research provider port, and the card the service keeps of a finding.
//! - [`pick`]: ad pick numbers (`SP-<n>`) and statuses.
//! - [`platform`]: the ad platform port: what a sync reads, the changes an approval makes.
//! - [`change`]: a proposal proposed, approved and executed, as plans over loaded facts.
//! - [`proposal`]: ad changes: the kinds and what each names, duplicates, expiry, the monthly
//!   cap an approval keeps.

pub mod change;
pub mod pick;
pub mod platform;
pub mod ports;
pub mod product;
pub mod proposal;
pub mod provider;
pub mod research;
pub mod service;
#[cfg(feature = "wire")]
pub mod wire;

pub use pick::{PickNumber, PickStatus};
pub use product::{Marketplace, Product};
pub use research::{ResearchKind, ResearchStatus};

/// Why an ads request whose shape is right is refused (422): each a rule of this crate.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AdsRejection {
    /// A pause of an ad that is paused.
    #[error("the ad is already paused")]
    AlreadyPaused,
    /// A resume of an ad that runs.
    #[error("the ad is already running")]
    AlreadyRunning,
    /// A budget change to the budget the ad has.
    #[error("the ad's budget is already that amount")]
    SameBudget,
    /// The change would take the month's spend past the workspace's cap
    /// ([`proposal::check_cap`]).
    #[error(
        "over the monthly cap: spent {spent}, the running ads commit {committed} more, this change adds {added}, the cap is {cap}"
    )]
    OverCap {
        spent: fleetdesk_kernel::money::Cents,
        committed: fleetdesk_kernel::money::Cents,
        added: fleetdesk_kernel::money::Cents,
        cap: fleetdesk_kernel::money::Cents,
    },
    /// A proposal of the same kind for the same target waits for a person.
    #[error(
        "a {kind} proposal for the same {target} is already waiting for a person (decision {decision})"
    )]
    Waiting {
        kind: proposal::ProposalKind,
        /// `ad`, or `post` for a boost.
        target: &'static str,
        decision: uuid::Uuid,
    },
    /// A research request approved already, approved again under another message.
    #[error("the request is already approved (resend with the same origin.message_ref to read it)")]
    AlreadyApproved,
    /// The research quote's time ran out.
    #[error("the quote expired at {}; ask for a new quote", fleetdesk_kernel::time::format_utc(*.0))]
    QuoteExpired(jiff::Timestamp),
    /// A suspended organization asks for paid research.
    #[error("the organization is suspended: paid research is not available")]
    Suspended,
    /// The organization's charges this month reached [`research::LIMIT_MULTIPLE`] times its
    /// monthly limit.
    #[error(
        "the organization has used {used} credits this month, {} times its monthly limit of {limit}",
        research::LIMIT_MULTIPLE
    )]
    OverCreditLimit { used: i64, limit: i64 },
    /// The research provider's lookups of the day are spent.
    #[error("the research provider's daily lookup quota is used up; approve again tomorrow")]
    QuotaUsedUp,
    /// A pick number a platform admin names that several organizations use.
    #[error(
        "{0} is a pick number in several organizations: cancel it with a key of its organization"
    )]
    PickInSeveralOrganizations(pick::PickNumber),
}

/// What an ads request names that is not there: unknown, or of another organization or
/// workspace (the same answer, so nothing of another tenant shows).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AdsMissing {
    #[error("no such research request in this organization")]
    Research,
    #[error("no ad pick {0}")]
    Pick(pick::PickNumber),
    #[error("no such workspace in this organization")]
    Workspace,
}

/// Why an ads call is refused: the API answers 400, 403, 404 or 422.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AdsRefusal {
    /// 400 naming `field`.
    #[error("{field}: {message}")]
    Invalid { field: String, message: String },
    /// 403: the workspace has ads disabled; the message says where to enable them.
    #[error("{}", proposal::ADS_DISABLED)]
    AdsDisabled,
    /// 404: unknown, or of another organization or workspace.
    #[error("{0}")]
    NotFound(AdsMissing),
    /// 404 naming `field`: an object the body names that is not there (unknown, or of another
    /// organization or workspace), like any object a request names.
    #[error("{field}: {message}")]
    NotFoundField { field: String, message: String },
    /// 422: a rule of the domain refuses the request as it stands.
    #[error("{0}")]
    Rejected(AdsRejection),
    /// 422 naming the field at fault: a request whose shape is right but whose content the
    /// rules refuse (an item given twice, a marketplace link that names no product).
    #[error("{field}: {message}")]
    RejectedField { field: String, message: String },
}

impl AdsRefusal {
    pub fn invalid(field: impl Into<String>, message: impl Into<String>) -> Self {
        AdsRefusal::Invalid {
            field: field.into(),
            message: message.into(),
        }
    }

    /// 404 naming the field whose object is not there.
    pub fn not_there(field: impl Into<String>, message: impl Into<String>) -> Self {
        AdsRefusal::NotFoundField {
            field: field.into(),
            message: message.into(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use fleetdesk_kernel::money::Cents;

    /// The answers people and agents read: the same texts the rules gave as strings.
    #[test]
    fn each_rejection_says_what_the_rule_refused() {
        let cases = [
            (AdsRejection::AlreadyPaused, "the ad is already paused"),
            (
                AdsRejection::SameBudget,
                "the ad's budget is already that amount",
            ),
            (
                AdsRejection::OverCap {
                    spent: Cents(120_000),
                    committed: Cents(30_050),
                    added: Cents(5_000),
                    cap: Cents(150_000),
                },
                "over the monthly cap: spent 1200.00, the running ads commit 300.50 more, this \
                 change adds 50.00, the cap is 1500.00",
            ),
            (
                AdsRejection::Waiting {
                    kind: proposal::ProposalKind::Boost,
                    target: "post",
                    decision: uuid::Uuid::from_u128(9),
                },
                "a boost proposal for the same post is already waiting for a person (decision \
                 00000000-0000-0000-0000-000000000009)",
            ),
            (
                AdsRejection::QuoteExpired("2026-12-06T10:00:00.5Z".parse().unwrap()),
                "the quote expired at 2026-12-06T10:00:00Z; ask for a new quote",
            ),
            (
                AdsRejection::OverCreditLimit {
                    used: 300,
                    limit: 100,
                },
                "the organization has used 300 credits this month, 3 times its monthly limit \
                 of 100",
            ),
            (
                AdsRejection::PickInSeveralOrganizations(pick::PickNumber(7)),
                "SP-7 is a pick number in several organizations: cancel it with a key of its \
                 organization",
            ),
        ];
        for (rejection, text) in cases {
            assert_eq!(AdsRefusal::Rejected(rejection).to_string(), text);
        }
    }

    #[test]
    fn missing_objects_and_disabled_ads_say_so() {
        assert_eq!(
            AdsRefusal::NotFound(AdsMissing::Pick(pick::PickNumber(12))).to_string(),
            "no ad pick SP-12"
        );
        assert_eq!(
            AdsRefusal::NotFound(AdsMissing::Workspace).to_string(),
            "no such workspace in this organization"
        );
        assert_eq!(AdsRefusal::AdsDisabled.to_string(), proposal::ADS_DISABLED);
    }
}
