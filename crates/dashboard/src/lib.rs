//! The dashboard: the people's side of fleetdesk in a browser, served by the binary under
//! `/dashboard`.
//!
//! Pages are rendered on the server (maud) with a small stylesheet and script bundled into the
//! binary. Every read and every action is a Personal API operation run through the pipeline
//! for the signed-in person: the same handlers, rules, idempotency and audit entries as a call
//! with the person's key. A page reads an operation by its handle and renders its typed answer
//! ([`fleetdesk_api::pipeline::call`]); an action's form posts to `/dashboard/act<the
//! operation's path>`, one route per handle of the `act` module's list, run by
//! [`fleetdesk_api::pipeline::call_write`].
//!
//! A person signs in with a personal key, which is exchanged for a session cookie
//! (`fleetdesk_tenancy::session`): HttpOnly, SameSite=Strict, Secure over HTTPS. Every form
//! carries the session's CSRF token and a one-time Idempotency-Key; a post without the token,
//! or from another origin, is refused before anything runs.

mod act;
mod assets;
mod call;
mod chart;
mod diff;
mod layout;
mod pages;
mod session;

use actix_web::web;
use fleetdesk_api::{Ctx, ErasedOp};
use std::sync::Arc;

/// Where the dashboard is mounted.
pub const PREFIX: &str = "/dashboard";

/// What the dashboard's handlers share.
#[derive(Clone)]
pub struct Dashboard {
    ctx: Ctx,
    ops: Arc<call::PersonalOps>,
}

/// Mounts the dashboard on an actix app.
/// Where the request was addressed, `scheme://host`, for links and the Origin check: what a
/// proxy named in `--trusted-proxy` forwarded (`Forwarded`, `X-Forwarded-Host`/`-Proto`), else
/// the connection's own scheme and `Host` (`fleetdesk_api::links::public_origin`). The REST
/// and MCP routes make their links with it too.
pub fn request_origin(req: &actix_web::HttpRequest, config: &fleetdesk_api::Config) -> String {
    let info = req.connection_info();
    let scheme = if req.app_config().secure() {
        "https"
    } else {
        "http"
    };
    let host = (req.headers().get(actix_web::http::header::HOST))
        .and_then(|h| h.to_str().ok())
        .or_else(|| req.uri().authority().map(|a| a.as_str()))
        .unwrap_or_else(|| req.app_config().host());
    fleetdesk_api::links::public_origin(
        req.peer_addr().map(|a| a.ip()),
        &config.trusted_proxies,
        (info.scheme(), info.host()),
        (scheme, host),
    )
}

/// The largest form the dashboard reads, in bytes.
const FORM_LIMIT: usize = 64 * 1024;
/// The largest sign-in form: a key, the page to go to next.
const SIGN_IN_LIMIT: usize = 4 * 1024;

pub fn configure(cfg: &mut web::ServiceConfig, ctx: Ctx, ops: &[Arc<dyn ErasedOp>]) {
    let dashboard = Dashboard {
        ctx,
        ops: Arc::new(call::PersonalOps::new(ops)),
    };
    cfg.app_data(web::Data::new(dashboard));
    let scope = web::scope(PREFIX)
        // A form is a few fields: 64 KiB at most (actix's default is 256 KiB), and the
        // sign-in form, read before anyone is known, 4 KiB.
        .app_data(web::PayloadConfig::new(FORM_LIMIT))
        .route("", web::get().to(pages::home))
        .route("/", web::get().to(pages::home))
        .service(
            web::resource("/sign-in")
                .app_data(web::PayloadConfig::new(SIGN_IN_LIMIT))
                .route(web::get().to(session::sign_in_page))
                .route(web::post().to(session::sign_in)),
        )
        .route("/sign-out", web::post().to(session::sign_out))
        .route("/assets/{name}", web::get().to(assets::serve))
        .route("/review", web::get().to(pages::review::queue))
        .route("/posts/{id}", web::get().to(pages::review::post))
        .route("/decisions", web::get().to(pages::decisions::inbox))
        .route("/tasks", web::get().to(pages::tasks::board))
        .route("/tickets", web::get().to(pages::tickets::list_page))
        .route("/today", web::get().to(pages::today::today))
        .route("/metrics", web::get().to(pages::metrics::charts))
        .route("/reports", web::get().to(pages::reports::list_page))
        .route("/reports/{id}", web::get().to(pages::reports::report))
        .route("/personas", web::get().to(pages::personas::list_page))
        .route("/personas/{id}", web::get().to(pages::personas::persona))
        .route("/knowledge", web::get().to(pages::knowledge::browse))
        .route("/knowledge/entry", web::get().to(pages::knowledge::entry))
        .route("/research", web::get().to(pages::research::results))
        .route("/keys", web::get().to(pages::keys::list_page))
        .route("/webhooks", web::get().to(pages::webhooks::list_page))
        .route("/webhooks/{id}", web::get().to(pages::webhooks::deliveries));
    cfg.service(act::routes(scope).default_service(web::to(|| async {
        layout::html_response(404, layout::bare("Not found", "There is no such page."))
    })));
}
