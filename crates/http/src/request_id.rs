//! `X-Request-Id` on every response, a tracing span per request, one "handled" line per
//! request (status, the error code of an error answer, latency rounded to 0.1 ms, round
//! trips), the round-trip count, and the call's metrics (`fleetdesk_api::telemetry`).

use actix_web::body::MessageBody;
use actix_web::dev::{ServiceRequest, ServiceResponse};
use actix_web::http::header::{HeaderName, HeaderValue};
use actix_web::middleware::Next;
use actix_web::{Error, HttpMessage};
use fleetdesk_api::telemetry::{Call, Telemetry, Transport};
use tracing::Instrument;

/// The request id of the request being handled, in its extensions.
#[derive(Debug, Clone)]
pub struct RequestId(pub String);

/// The error code of an error answer, in the response's extensions (set by `error_response`),
/// so the "handled" line can say which error it was.
#[derive(Debug, Clone, Copy)]
pub struct ErrorCodeTag(pub &'static str);

/// The catalogue operation a route ran (its id), in the response's extensions, for the
/// metrics. Answers without it are named by their route ([`operation_of`]).
#[derive(Debug, Clone)]
pub struct OperationTag(pub std::sync::Arc<str>);

/// In the response's extensions of `/api/mcp` once the MCP adapter recorded the message itself
/// (by the tool's operation and the status of its result), so it is not counted twice.
#[derive(Debug, Clone, Copy)]
pub struct RecordedByMcp;

pub const REQUEST_ID: HeaderName = HeaderName::from_static("x-request-id");
pub const ROUND_TRIPS: HeaderName = HeaderName::from_static("x-db-round-trips");

/// A caller's own request id is kept when it is short and plain: 1-64 characters of
/// `[A-Za-z0-9._:-]`. Anything else (spaces, quotes, `=`, escapes, a key) is replaced with a
/// new one, so what a caller sends can neither forge log fields nor carry a secret into them
/// (a key-shaped id is replaced too).
pub fn plain_request_id(v: &str) -> bool {
    (1..=64).contains(&v.len())
        && v.bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b':' | b'-'))
        && !fleetdesk_kernel::secrets::redact_keys(v).1
}

fn request_id(req: &ServiceRequest) -> String {
    let mut given = req.headers().get_all(&REQUEST_ID);
    match (given.next(), given.next()) {
        (Some(v), None) => v.to_str().ok().filter(|v| plain_request_id(v)),
        _ => None,
    }
    .map(str::to_owned)
    .unwrap_or_else(|| uuid::Uuid::new_v4().to_string())
}

/// Milliseconds rounded to 0.1.
fn rounded_ms(elapsed: std::time::Duration) -> f64 {
    (elapsed.as_secs_f64() * 10_000.0).round() / 10.0
}

/// What a request that ran no catalogue operation is counted as: a name of
/// [`route`](fleetdesk_api::telemetry::route) by the pattern it matched, never its path.
fn operation_of(pattern: Option<&str>) -> &'static str {
    use fleetdesk_api::telemetry::route;
    match pattern {
        Some("/healthz" | "/readyz") => route::HEALTH,
        Some("/openapi.json" | "/openapi-agent.json") => route::OPENAPI,
        Some("/" | "/docs") => route::DOCS,
        Some("/api/mcp") => route::MCP,
        Some(p) if p.starts_with("/docs/") => route::DOCS,
        Some(p) if p.starts_with("/files/") => route::FILES,
        _ => route::OTHER,
    }
}

/// Records the answered request in the metrics, unless the MCP adapter did.
fn record<B>(
    telemetry: &Telemetry,
    res: &ServiceResponse<B>,
    error_code: Option<&str>,
    elapsed: std::time::Duration,
) {
    let extensions = res.response().extensions();
    if extensions.get::<RecordedByMcp>().is_some() {
        return;
    }
    let pattern = res.request().match_pattern();
    let operation = match extensions.get::<OperationTag>() {
        Some(tag) => &*tag.0,
        None => operation_of(pattern.as_deref()),
    };
    telemetry.call(Call {
        transport: Transport::Http,
        operation,
        status: res.status().as_u16(),
        error_code,
        replayed: res.headers().contains_key(IDEMPOTENT_REPLAYED),
        elapsed,
    });
}

pub const IDEMPOTENT_REPLAYED: HeaderName = HeaderName::from_static("idempotent-replayed");

pub async fn middleware(
    req: ServiceRequest,
    next: Next<impl MessageBody + 'static>,
    expose_round_trips: bool,
    telemetry: Telemetry,
) -> Result<ServiceResponse<impl MessageBody>, Error> {
    let id = request_id(&req);
    req.extensions_mut().insert(RequestId(id.clone()));
    // A key pasted into a path is not written to the log.
    let path = fleetdesk_kernel::secrets::redact_keys(req.path()).0;
    let span = tracing::info_span!("request", request_id = %id, method = %req.method(), path = %path, key_id = tracing::field::Empty);
    let started = std::time::Instant::now();
    let (trips, result) =
        fleetdesk_kernel::round_trips::counting(next.call(req).instrument(span.clone())).await;
    let mut res = result?;
    let status = res.status().as_u16();
    let elapsed = started.elapsed();
    let elapsed_ms = rounded_ms(elapsed);
    let error_code = res
        .response()
        .extensions()
        .get::<ErrorCodeTag>()
        .map(|t| t.0)
        .or_else(|| (status >= 400).then_some("unknown"));
    span.in_scope(|| match error_code {
        Some(error_code) => tracing::info!(
            status,
            error_code = %error_code,
            elapsed_ms,
            round_trips = trips,
            "handled"
        ),
        None => tracing::info!(status, elapsed_ms, round_trips = trips, "handled"),
    });
    record(&telemetry, &res, error_code, elapsed);
    let headers = res.headers_mut();
    if let Ok(v) = HeaderValue::from_str(&id) {
        headers.insert(REQUEST_ID, v);
    }
    if expose_round_trips {
        headers.insert(ROUND_TRIPS, HeaderValue::from(trips));
    }
    Ok(res)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_short_plain_request_ids_are_kept() {
        for ok in [
            "a",
            "req-1",
            "2026-11-24T10:00:00.5Z",
            "A_b.c:d-e",
            &"x".repeat(64),
        ] {
            assert!(plain_request_id(ok), "{ok:?}");
        }
        for bad in [
            "",
            &"x".repeat(65),
            "a b",
            "a=b",
            "a\"b",
            "a/b",
            "%41",
            "id\u{7}",
            "測試",
            "fda_AbCd1234_abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQ",
        ] {
            assert!(!plain_request_id(bad), "{bad:?}");
        }
    }

    #[test]
    fn requests_outside_the_catalogue_are_named_by_their_route_never_their_path() {
        assert_eq!(operation_of(Some("/healthz")), "health");
        assert_eq!(operation_of(Some("/readyz")), "health");
        assert_eq!(operation_of(Some("/openapi-agent.json")), "openapi");
        assert_eq!(operation_of(Some("/")), "docs");
        assert_eq!(operation_of(Some("/docs/scalar.js")), "docs");
        assert_eq!(operation_of(Some("/files/{id}/{variant}")), "files");
        assert_eq!(operation_of(Some("/files/persona/{id}/{variant}")), "files");
        assert_eq!(operation_of(Some("/api/mcp")), "mcp");
        assert_eq!(operation_of(Some("/api/agent/v1/accounts")), "other");
        assert_eq!(operation_of(None), "other");
    }

    #[test]
    fn latency_is_rounded_to_a_tenth_of_a_millisecond() {
        use std::time::Duration;
        assert_eq!(rounded_ms(Duration::from_nanos(1_234_567)), 1.2);
        assert_eq!(rounded_ms(Duration::from_nanos(1_250_001)), 1.3);
        assert_eq!(rounded_ms(Duration::from_micros(7)), 0.0);
        assert_eq!(
            format!("{}", rounded_ms(Duration::from_nanos(12_345_678_901))),
            "12345.7"
        );
    }
}
