//! Adapters of the third-party services fleetdesk talks to, behind the domain's ports.
//!
//! - [`sandbox`]: the built-in research provider for demos and tests, deterministic, that
//!   queries nothing (the default when no provider URL is set).

pub mod sandbox;
