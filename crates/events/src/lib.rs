//! The event log's reads. What an event is, which kinds there are and who may read each is
//! the kernel's (`fleetdesk_kernel::events`), because every area's plan produces them; this
//! crate holds the agent's feed: which of the log's events an agent sees, where a page
//! resumes, and how a feed waits for the next commit without polling the database; and when an
//! agent is silent ([`silence`]).

pub mod ports;
pub mod service;
pub mod silence;
#[cfg(feature = "wire")]
pub mod wire;

pub use ports::{EventLog, FeedRead, StoredEvent, Waiter, Wakeup};
pub use service::{EventsService, Feed, FeedQuery, MAX_WAIT_SECONDS};
