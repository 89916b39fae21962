//! Logging: one line per event on stderr, text or JSON (`FLEETDESK_LOG_FORMAT=json`), coloured
//! only on a terminal, and a cap on the drivers of outside connections that no `RUST_LOG` can
//! lift.
//!
//! The cap exists because drivers log what they send: tokio-postgres writes every bind value at
//! debug (the link-signing key on a first start, key and upload-token hashes on every request),
//! and HTTP client stacks write wire traffic at trace. Their targets never log below info.
//! Nothing of fleetdesk's own logs a key, a hash, a token or a bind value; request lines carry
//! the request id, method, path (keys redacted), key id, status, error code and latency.

use std::io::IsTerminal;
use tracing::level_filters::LevelFilter;
use tracing_subscriber::filter::{EnvFilter, Targets};
use tracing_subscriber::layer::SubscriberExt;
use tracing_subscriber::util::SubscriberInitExt;

/// The drivers whose debug and trace output may carry secrets (bind values, wire bytes).
pub const DRIVER_TARGETS: &[&str] = &[
    "tokio_postgres",
    "postgres_protocol",
    "postgres_types",
    "diesel",
    "diesel_async",
    "diesel_migrations",
    "deadpool",
    "hyper",
    "hyper_util",
    "h2",
    "reqwest",
    "rustls",
    "object_store",
    "aws_config",
    "aws_sigv4",
];

/// The most a driver target may log.
pub const DRIVER_MAX: LevelFilter = LevelFilter::INFO;

/// The filter applied after `RUST_LOG`: drivers capped at [`DRIVER_MAX`], everything else as
/// `RUST_LOG` says.
pub fn caps() -> Targets {
    DRIVER_TARGETS.iter().fold(
        Targets::new().with_default(LevelFilter::TRACE),
        |targets, target| targets.with_target(*target, DRIVER_MAX),
    )
}

/// `RUST_LOG`, or `info` without it.
pub fn env_filter() -> EnvFilter {
    EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new("info,actix_server=warn"))
}

/// Colour codes only when stderr is a terminal and `NO_COLOR` is not set.
pub fn use_colour() -> bool {
    std::io::stderr().is_terminal() && std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty())
}

/// Installs the subscriber (and the bridge for crates that log through `log`).
pub fn init() {
    let json = std::env::var("FLEETDESK_LOG_FORMAT").as_deref() == Ok("json");
    let layer = tracing_subscriber::fmt::layer()
        .with_writer(std::io::stderr)
        .with_ansi(use_colour());
    let registry = tracing_subscriber::registry()
        .with(env_filter())
        .with(caps());
    if json {
        registry.with(layer.json()).init();
    } else {
        registry.with(layer.compact()).init();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tracing::Level;

    #[test]
    fn drivers_never_log_below_info() {
        let caps = caps();
        for target in [
            "tokio_postgres::query",
            "tokio_postgres",
            "hyper_util::client",
            "h2",
        ] {
            assert!(!caps.would_enable(target, &Level::DEBUG), "{target}");
            assert!(!caps.would_enable(target, &Level::TRACE), "{target}");
            assert!(caps.would_enable(target, &Level::INFO), "{target}");
        }
        assert!(caps.would_enable("fleetdesk_http::request_id", &Level::TRACE));
        assert!(caps.would_enable("actix_server", &Level::DEBUG));
    }
}
