//! The metrics listener: a second, small HTTP server on its own address (`--metrics-bind`)
//! that answers only `GET /metrics` with the Prometheus exposition. The public listener never
//! mounts it, so the metrics are reachable only where operators bind them.

use actix_web::dev::Server;
use actix_web::{App, HttpResponse, HttpServer, web};
use fleetdesk_api::Ctx;
use std::net::TcpListener;

/// The exposition: the recorded families, with the pool and the job queue read now. A queue
/// that cannot be read (no free connection, no database) is left out; the rest still answers.
async fn metrics(ctx: web::Data<Ctx>) -> HttpResponse {
    let pool = ctx.health.pool_use();
    let jobs = match ctx.health.job_counts().await {
        Ok(jobs) => Some(jobs),
        Err(e) => {
            tracing::warn!(
                error = format!("{e:#}"),
                "metrics: the job queue was not read"
            );
            None
        }
    };
    HttpResponse::Ok()
        .content_type(fleetdesk_api::telemetry::CONTENT_TYPE)
        .body(ctx.telemetry.render(pool, jobs.as_deref()))
}

async fn not_found() -> HttpResponse {
    HttpResponse::NotFound()
        .content_type("text/plain; charset=utf-8")
        .body("the metrics listener serves only GET /metrics\n")
}

/// Starts the metrics listener on a bound listener (one worker: a scrape is small). Stops
/// with the process's signals, like the public server.
pub fn metrics_server(ctx: Ctx, listener: TcpListener) -> std::io::Result<Server> {
    let ctx = web::Data::new(ctx);
    Ok(HttpServer::new(move || {
        App::new()
            .app_data(ctx.clone())
            .route("/metrics", web::get().to(metrics))
            .default_service(web::to(not_found))
    })
    .workers(1)
    .shutdown_timeout(5)
    .listen(listener)?
    .run())
}
