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

pub use pick::{PickNumber, PickStatus};
pub use product::{Marketplace, Product};
pub use research::{ResearchKind, ResearchStatus};

/// Why an ads call is refused: the API answers 400, 404 or 422.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AdsRefusal {
    /// 400 naming `field`.
    #[error("{field}: {message}")]
    Invalid { field: String, message: String },
    /// 403: the workspace has ads disabled; the message says where to enable them.
    #[error("{0}")]
    Forbidden(String),
    /// 404: unknown, or of another organization or workspace.
    #[error("{0}")]
    NotFound(String),
    /// 404 naming `field`: an object the body names that is not there (unknown, or of another
    /// organization or workspace), like any object a request names.
    #[error("{field}: {message}")]
    NotFoundField { field: String, message: String },
    /// 422 with the reason.
    #[error("{0}")]
    Rejected(String),
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
