//! What a person reads about the fleet: metrics series and reports.
pub mod metrics;
