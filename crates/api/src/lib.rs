//! The application layer shared by every inbound adapter.
//!
//! Each endpoint of the specification is one operation (an [`OpSpec`] with its handler, an
//! [`ErasedOp`]) in the [`catalogue`]: its method, path, access rule, MCP tool name,
//! idempotency, input and output types, and its handler.
//! The HTTP adapter mounts the catalogue as routes, the MCP adapter exposes it as tools, and
//! the OpenAPI description is generated from it, so the three cannot drift apart. Both
//! adapters run every call through the same [`pipeline`]: authentication and rate limit,
//! access check, input parsing and validation, idempotency, then the handler.

pub mod ctx;
pub mod day;
pub mod describe;
pub mod error;
pub mod fields;
pub mod input;
pub mod limiter;
pub mod links;
pub mod op;
pub mod ops;
pub mod pipeline;
pub mod revisioned;
pub mod telemetry;
pub mod today;

pub use ctx::{Config, Ctx};
pub use error::ApiError;
pub use input::{Args, Nothing, Req};
pub use op::{Access, Api, ErasedOp, HttpMethod, OpSpec, Reply};
pub use pipeline::{Invocation, Outcome, execute};
pub use telemetry::Telemetry;

/// The version string of the served OpenAPI descriptions: the interface's date as a version
/// that PEP 440 and semver both read (a generated client installs it as it is).
pub const API_VERSION: &str = "2026.10.7";

/// Every operation this build serves, in the order of endpoints.tsv.
pub fn catalogue() -> Vec<std::sync::Arc<dyn ErasedOp>> {
    let mut all = Vec::new();
    ops::accounts::register(&mut all);
    ops::drafts::register(&mut all);
    ops::media::register(&mut all);
    ops::posts::register(&mut all);
    ops::inventory::register(&mut all);
    ops::personal::register(&mut all);
    ops::personas::register(&mut all);
    ops::personas::register_personal(&mut all);
    ops::decisions::register(&mut all);
    ops::tasks::register(&mut all);
    ops::cron::register(&mut all);
    ops::events::register(&mut all);
    ops::webhooks::register(&mut all);
    ops::today::register(&mut all);
    ops::reports::register(&mut all);
    ops::metrics::register(&mut all);
    ops::keys::register(&mut all);
    ops::wiki::register(&mut all);
    ops::wiki::register_personal(&mut all);
    ops::wiki_sources::register(&mut all);
    ops::community::register(&mut all);
    ops::ads::register(&mut all);
    ops::ads::register_personal(&mut all);
    ops::ad_picks::register(&mut all);
    ops::ad_changes::register(&mut all);
    ops::ad_changes::register_personal(&mut all);
    all.into_iter().map(std::sync::Arc::from).collect()
}
