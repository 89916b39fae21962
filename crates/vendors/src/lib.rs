//! Adapters of the third-party services fleetdesk talks to, behind the domain's ports.
//!
//! - [`research_http`]: the research provider's HTTP API (`FLEETDESK_AD_RESEARCH_URL`,
//!   `FLEETDESK_AD_RESEARCH_KEY`).
//! - [`sandbox`]: the built-in research provider for demos and tests, deterministic, that
//!   queries nothing (the default when no provider URL is set).

pub mod research_http;
pub mod sandbox;
