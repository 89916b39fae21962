//! The actix-web adapter: mounts the operation catalogue as REST routes, serves the MCP
//! endpoint and the OpenAPI descriptions, and gives every response an `X-Request-Id`; a
//! second listener serves the Prometheus metrics ([`metrics_server`]).

mod body;
mod docs;
mod files;
mod metrics;
mod openapi;
mod request_id;
mod routes;

pub use metrics::metrics_server;
pub use openapi::{openapi_agent, openapi_all};
pub use request_id::RequestId;

use actix_web::dev::Server;
use actix_web::{App, HttpServer, web};
use fleetdesk_api::{Ctx, ErasedOp};
use serde_json::Value;
use std::net::TcpListener;
use std::sync::Arc;

/// Everything the routes share.
#[derive(Clone)]
pub struct HttpState {
    pub ctx: Ctx,
    pub ops: Arc<Vec<Arc<dyn ErasedOp>>>,
    pub openapi_agent: Arc<Value>,
    pub openapi_all: Arc<Value>,
    pub mcp: fleetdesk_mcp::Mcp,
    /// Adds `X-Db-Round-Trips` to every response (benchmarks and tests).
    pub expose_round_trips: bool,
}

impl HttpState {
    pub fn new(ctx: Ctx, expose_round_trips: bool) -> HttpState {
        let ops: Arc<Vec<Arc<dyn ErasedOp>>> = Arc::new(fleetdesk_api::catalogue());
        HttpState {
            openapi_agent: Arc::new(openapi_agent(&ops)),
            openapi_all: Arc::new(openapi_all(&ops)),
            mcp: fleetdesk_mcp::Mcp::new(ops.clone()),
            ops,
            ctx,
            expose_round_trips,
        }
    }
}

/// Registers every route on an actix `App`.
pub fn configure(state: HttpState) -> impl FnOnce(&mut web::ServiceConfig) {
    move |cfg| routes::configure(cfg, state)
}

/// Starts the HTTP server on a bound listener. Stops gracefully on SIGINT/SIGTERM, finishing
/// requests in flight (up to 30 seconds).
pub fn server(state: HttpState, listener: TcpListener, workers: usize) -> std::io::Result<Server> {
    let expose = state.expose_round_trips;
    let telemetry = state.ctx.telemetry.clone();
    Ok(HttpServer::new(move || {
        let telemetry = telemetry.clone();
        App::new()
            .wrap(actix_web::middleware::from_fn(move |req, next| {
                request_id::middleware(req, next, expose, telemetry.clone())
            }))
            .configure(configure(state.clone()))
    })
    .workers(workers.max(1))
    // actix answers 408 when a request's head has not arrived within this time (5 s by
    // default); a client on a slow or busy link is given 30 s, as it has to finish a request.
    .client_request_timeout(std::time::Duration::from_secs(30))
    .shutdown_timeout(30)
    .listen(listener)?
    .run())
}
