//! Human decisions: whatever an agent cannot decide alone waits here for a person (a banned
//! account, a new persona, a new fact, a contradiction, draft images), together with the
//! follow-ups a person's choice opens for an agent.

pub mod effects;
pub mod ports;
pub mod rules;
pub mod service;
#[cfg(feature = "wire")]
pub mod wire;

pub use fleetdesk_kernel::decision::{DecisionKind, DecisionStatus, NewDecision, Opener};
