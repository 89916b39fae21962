//! `X-Request-Id` on every response, a tracing span per request, and the round-trip count.

use actix_web::body::MessageBody;
use actix_web::dev::{ServiceRequest, ServiceResponse};
use actix_web::http::header::{HeaderName, HeaderValue};
use actix_web::middleware::Next;
use actix_web::{Error, HttpMessage};
use tracing::Instrument;

/// The request id of the request being handled, in its extensions.
#[derive(Debug, Clone)]
pub struct RequestId(pub String);

pub const REQUEST_ID: HeaderName = HeaderName::from_static("x-request-id");
pub const ROUND_TRIPS: HeaderName = HeaderName::from_static("x-db-round-trips");

/// A caller's own request id is kept when it is short and printable; otherwise a new one.
fn request_id(req: &ServiceRequest) -> String {
    req.headers()
        .get(&REQUEST_ID)
        .and_then(|v| v.to_str().ok())
        .filter(|v| {
            !v.is_empty() && v.len() <= 128 && v.bytes().all(|b| (0x21..=0x7e).contains(&b))
        })
        .map(str::to_owned)
        .unwrap_or_else(|| uuid::Uuid::new_v4().to_string())
}

pub async fn middleware(
    req: ServiceRequest,
    next: Next<impl MessageBody + 'static>,
    expose_round_trips: bool,
) -> Result<ServiceResponse<impl MessageBody>, Error> {
    let id = request_id(&req);
    req.extensions_mut().insert(RequestId(id.clone()));
    let span = tracing::info_span!("request", request_id = %id, method = %req.method(), path = %req.path(), key_id = tracing::field::Empty);
    let started = std::time::Instant::now();
    let (trips, result) =
        fleetdesk_api::metrics::counting(next.call(req).instrument(span.clone())).await;
    let mut res = result?;
    let status = res.status().as_u16();
    span.in_scope(|| {
        tracing::info!(
            status,
            elapsed_ms = started.elapsed().as_secs_f64() * 1000.0,
            round_trips = trips,
            "handled"
        );
    });
    let headers = res.headers_mut();
    if let Ok(v) = HeaderValue::from_str(&id) {
        headers.insert(REQUEST_ID, v);
    }
    if expose_round_trips {
        headers.insert(ROUND_TRIPS, HeaderValue::from(trips));
    }
    Ok(res)
}
