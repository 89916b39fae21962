//! Adapters of the third-party services fleetdesk talks to, behind the domain's ports.
//!
//! - [`embeddings_http`]: an embedding model behind the OpenAI-compatible embeddings API
//!   (`FLEETDESK_EMBEDDINGS_URL`, `FLEETDESK_EMBEDDINGS_MODEL`, `FLEETDESK_EMBEDDINGS_KEY`),
//!   which search reorders by.
//! - [`meta_ads`]: Meta's Marketing API as the ad platform (`FLEETDESK_AD_PLATFORM=meta`,
//!   `FLEETDESK_META_GRAPH_URL`); the access token of each ad account comes from the
//!   environment variable the tenant file names.
//! - [`ad_sandbox`]: the built-in ad platform for demos and tests (the default).
//! - [`research_http`]: the research provider's HTTP API (`FLEETDESK_AD_RESEARCH_URL`,
//!   `FLEETDESK_AD_RESEARCH_KEY`).
//! - [`sandbox`]: the built-in research provider for demos and tests, deterministic, that
//!   queries nothing (the default when no provider URL is set).
//! - [`webhook`]: webhook attempts over HTTP, refusing private addresses at connect time.

pub mod ad_sandbox;
mod capped;
pub mod embeddings_http;
pub mod meta_ads;
pub mod research_http;
pub mod sandbox;
pub mod webhook;
