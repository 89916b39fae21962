//! Drafts: what an agent writes before review.
//!
//! The rules live here as plain functions and types: which statuses a draft may be edited in,
//! how characters and inline images are checked, which media a post ends up with. Storage and
//! SQL are reached through the ports in [`ports`].

pub mod draft;
pub mod plan;
pub mod ports;
pub mod service;
#[cfg(feature = "wire")]
pub mod wire;
