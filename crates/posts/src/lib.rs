//! Posts after they are drafted: their statuses and the status sets the rules speak of, review
//! moves, the report planner, the metrics rules, who sees which post, and which posts count
//! toward an account's day.
//!
//! The rules live here as plain functions over loaded rows; the adapter loads, calls them and
//! writes what they decided. The I/O is reached through the ports in [`ports`].

pub mod approval;
pub mod batch;
pub mod metrics;
pub mod ports;
pub mod post;
pub mod report;
pub mod review;
pub mod service;
#[cfg(feature = "wire")]
pub mod wire;
