//! The shared kernel: the small vocabulary every fleetdesk crate speaks.
//!
//! Nothing here knows about HTTP, SQL or object storage. Other Rust services link the domain
//! crates, so this crate stays dependency-light: serde, jiff, uuid, thiserror, bytes (and
//! tokio only with the `round-trips` feature, which the adapters turn on).

pub mod blob;
pub mod code;
pub mod digest;
pub mod error;
pub mod market;
pub mod media;
pub mod platform;
#[cfg(feature = "round-trips")]
pub mod round_trips;
pub mod secrets;
mod text_enum;
pub mod time;

pub use code::{AccountCode, CodeError};
pub use error::ErrorCode;
pub use market::{Market, MarketError};
pub use platform::Platform;
pub use time::{TimeInputError, format_utc, parse_time_input};

/// A boxed, sendable future: the shape of every port method that must stay object-safe.
pub type BoxFuture<'a, T> = std::pin::Pin<Box<dyn std::future::Future<Output = T> + Send + 'a>>;

/// The agent a domain call acts for: its id and the workspace and organization its key is
/// bound to. Every agent-side query is scoped by these.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AgentRef {
    pub agent_id: uuid::Uuid,
    pub workspace_id: uuid::Uuid,
    pub organization_id: uuid::Uuid,
}
