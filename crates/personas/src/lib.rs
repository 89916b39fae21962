//! Personas: who an account speaks as. The facts people decided (and the drafts agents
//! propose), the speech rules and forbidden items people set, reference images that wait for a
//! person's approval, and the cast of characters an account may feature.

pub mod plan;
pub mod ports;
pub mod rules;
pub mod service;
#[cfg(feature = "wire")]
pub mod wire;

pub use rules::*;
