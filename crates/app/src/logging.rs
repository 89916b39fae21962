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
use tracing::{Event, Level, Metadata, Subscriber};
use tracing_subscriber::filter::{EnvFilter, Targets};
use tracing_subscriber::fmt::format::Writer;
use tracing_subscriber::fmt::{FmtContext, FormatEvent, FormatFields, MakeWriter};
use tracing_subscriber::layer::SubscriberExt;
use tracing_subscriber::registry::LookupSpan;
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

/// An error actix-http logs about one connection: what a client sent or did (a malformed
/// header, a request line it never finished, a connection it dropped mid-answer), at error
/// level although nothing of the service failed.
fn connection_error(m: &Metadata<'_>) -> bool {
    *m.level() == Level::ERROR && m.target().starts_with("actix_http::h1::dispatcher")
}

/// The output format, with `connection_error`s written at warn: a client's mistake is no
/// error of the service, and an alert on error lines must not fire for a port scanner. The
/// line keeps its target and message; everything else is the inner format's.
pub struct ClientErrorsAsWarnings<F> {
    inner: F,
    json: bool,
}

impl<S, N, F> FormatEvent<S, N> for ClientErrorsAsWarnings<F>
where
    S: Subscriber + for<'a> LookupSpan<'a>,
    N: for<'a> FormatFields<'a> + 'static,
    F: FormatEvent<S, N>,
{
    fn format_event(
        &self,
        ctx: &FmtContext<'_, S, N>,
        mut writer: Writer<'_>,
        event: &Event<'_>,
    ) -> std::fmt::Result {
        if !connection_error(event.metadata()) {
            return self.inner.format_event(ctx, writer, event);
        }
        struct Message(String);
        impl tracing::field::Visit for Message {
            fn record_debug(&mut self, field: &tracing::field::Field, v: &dyn std::fmt::Debug) {
                if field.name() == "message" {
                    self.0 = format!("{v:?}");
                }
            }
        }
        let mut message = Message(String::new());
        event.record(&mut message);
        let (now, target) = (jiff::Timestamp::now(), event.metadata().target());
        if self.json {
            let line = serde_json::json!({
                "timestamp": now.to_string(), "level": "WARN",
                "fields": {"message": message.0}, "target": target,
            });
            writeln!(writer, "{line}")
        } else {
            writeln!(writer, "{now}  WARN {target}: {}", message.0)
        }
    }
}

/// The subscriber `init` installs, writing to `writer`.
pub fn subscriber<W>(json: bool, colour: bool, writer: W) -> Box<dyn Subscriber + Send + Sync>
where
    W: for<'w> MakeWriter<'w> + Send + Sync + 'static,
{
    let registry = tracing_subscriber::registry()
        .with(env_filter())
        .with(caps());
    let layer = tracing_subscriber::fmt::layer()
        .with_writer(writer)
        .with_ansi(colour);
    if json {
        let format = ClientErrorsAsWarnings {
            inner: tracing_subscriber::fmt::format().json(),
            json,
        };
        Box::new(registry.with(layer.json().event_format(format)))
    } else {
        let format = ClientErrorsAsWarnings {
            inner: tracing_subscriber::fmt::format()
                .compact()
                .with_ansi(colour),
            json,
        };
        Box::new(registry.with(layer.compact().event_format(format)))
    }
}

/// Installs the subscriber (and the bridge for crates that log through `log`).
pub fn init() {
    let json = std::env::var("FLEETDESK_LOG_FORMAT").as_deref() == Ok("json");
    subscriber(json, use_colour(), std::io::stderr).init();
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

    /// What actix-http logs at error for a client's malformed request reaches the log at
    /// warn; the service's own errors stay errors.
    #[test]
    fn a_clients_malformed_request_is_a_warning_not_an_error() {
        #[derive(Clone, Default)]
        struct Captured(std::sync::Arc<std::sync::Mutex<Vec<u8>>>);
        impl std::io::Write for Captured {
            fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
                self.0.lock().unwrap().extend_from_slice(buf);
                Ok(buf.len())
            }
            fn flush(&mut self) -> std::io::Result<()> {
                Ok(())
            }
        }
        let out = Captured::default();
        let writer = out.clone();
        let subscriber = subscriber(true, false, move || writer.clone());
        tracing::subscriber::with_default(subscriber, || {
            tracing::error!(
                target: "actix_http::h1::dispatcher",
                "stream error: {}",
                "Parse error: invalid Header provided"
            );
            tracing::error!(target: "fleetdesk_http::routes", "the service's own failure");
        });
        let text = String::from_utf8(out.0.lock().unwrap().clone()).unwrap();
        let lines: Vec<serde_json::Value> = text
            .lines()
            .map(|l| serde_json::from_str(l).expect("a JSON line"))
            .collect();
        assert_eq!(lines.len(), 2, "{text}");
        assert_eq!(lines[0]["level"], "WARN", "{text}");
        assert_eq!(lines[0]["target"], "actix_http::h1::dispatcher");
        assert!(
            lines[0]["fields"]["message"]
                .as_str()
                .is_some_and(|e| e.contains("invalid Header provided")),
            "{text}"
        );
        assert_eq!(lines[1]["level"], "ERROR", "{text}");
        assert_eq!(lines[1]["target"], "fleetdesk_http::routes");
    }
}
