//! The shared kernel: the small vocabulary every fleetdesk crate speaks.
//!
//! Nothing here knows about HTTP, SQL or object storage. Other Rust services link the domain
//! crates, so this crate stays dependency-light: serde, jiff, uuid, thiserror, bytes, futures-core (and
//! tokio only with the `round-trips` feature, which the adapters turn on).

pub mod access;
pub mod blob;
pub mod body;
pub mod code;
pub mod decision;
pub mod digest;
pub mod error;
pub mod events;
pub mod health;
pub mod jobs;
pub mod market;
pub mod media;
pub mod money;
pub mod op;
pub mod percent;
pub mod persona;
pub mod platform;
pub mod project;
#[cfg(feature = "round-trips")]
pub mod round_trips;
pub mod secrets;
mod text_enum;
pub mod time;
#[cfg(feature = "wire")]
pub mod wire;

pub use code::{AccountCode, CodeError};
pub use error::ErrorCode;
pub use market::{Market, MarketError};
pub use platform::Platform;
pub use text_enum::TextValue;
pub use time::{TimeInput, TimeInputError, format_utc, parse_time_input};

/// A boxed, sendable future: the shape of every port method that must stay object-safe.
pub type BoxFuture<'a, T> = std::pin::Pin<Box<dyn std::future::Future<Output = T> + Send + 'a>>;

/// Where a list ordered by (time, id) stands: the last item's time and id.
pub type Position = (jiff::Timestamp, uuid::Uuid);

/// One page of a list ordered by (time, id), the shape of every list port: the items, and
/// where the next page starts when there is one (the last item's [`Position`]).
#[derive(Debug, Clone, PartialEq)]
pub struct Page<T> {
    pub items: Vec<T>,
    pub next: Option<Position>,
}

impl<T> Page<T> {
    /// The page of `items`; when `more` follow, the next starts after the last item's
    /// `position`.
    pub fn new(items: Vec<T>, more: bool, position: impl Fn(&T) -> Position) -> Page<T> {
        let next = if more {
            items.last().map(position)
        } else {
            None
        };
        Page { items, next }
    }

    /// The page of the first `limit` of `items`, which were asked for with `limit + 1`: an
    /// item past the limit says more follow.
    pub fn probed(mut items: Vec<T>, limit: i64, position: impl Fn(&T) -> Position) -> Page<T> {
        let limit = usize::try_from(limit).unwrap_or(0);
        let more = items.len() > limit;
        items.truncate(limit);
        Page::new(items, more, position)
    }
}

/// The agent a domain call acts for: its id and the workspace and organization its key is
/// bound to. Every agent-side query is scoped by these.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AgentRef {
    pub agent_id: uuid::Uuid,
    pub workspace_id: uuid::Uuid,
    pub organization_id: uuid::Uuid,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_page_continues_after_its_last_item_only_when_more_follow() {
        let at = jiff::Timestamp::UNIX_EPOCH;
        let items = vec![(at, uuid::Uuid::nil()), (at, uuid::Uuid::max())];
        let page = Page::new(items.clone(), true, |i| *i);
        assert_eq!(page.next, Some((at, uuid::Uuid::max())));
        assert_eq!(Page::new(items, false, |i| *i).next, None);
        assert_eq!(Page::<Position>::new(Vec::new(), true, |i| *i).next, None);
    }

    #[test]
    fn a_probed_page_keeps_its_limit_and_continues_only_past_it() {
        let at = jiff::Timestamp::UNIX_EPOCH;
        let id = |n: u128| (at, uuid::Uuid::from_u128(n));
        let page = Page::probed(vec![id(1), id(2), id(3)], 2, |i| *i);
        assert_eq!(page.items, [id(1), id(2)]);
        assert_eq!(page.next, Some(id(2)));
        let whole = Page::probed(vec![id(1), id(2)], 2, |i| *i);
        assert_eq!((whole.items.len(), whole.next), (2, None));
        assert_eq!(Page::probed(vec![id(1)], -1, |i| *i).items, []);
    }
}
