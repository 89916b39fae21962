//! The dashboard: the people's side of fleetdesk in a browser, served by the binary under
//! `/dashboard`.
//!
//! Pages are rendered on the server (maud) with a small stylesheet and script bundled into the
//! binary. Every read and every action is a Personal API operation run through the pipeline
//! ([`fleetdesk_api::pipeline::execute_as`]) for the signed-in person: the same handlers, rules,
//! idempotency and audit entries as a call with the person's key. An action's form posts to
//! `/dashboard/act/<the operation's Personal API path>`.
//!
//! A person signs in with a personal key, which is exchanged for a session cookie
//! (`fleetdesk_tenancy::session`): HttpOnly, SameSite=Strict, Secure over HTTPS. Every form
//! carries the session's CSRF token and a one-time Idempotency-Key; a post without the token,
//! or from another origin, is refused before anything runs.

mod assets;
mod call;
mod chart;
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
pub fn configure(cfg: &mut web::ServiceConfig, ctx: Ctx, ops: &[Arc<dyn ErasedOp>]) {
    let dashboard = Dashboard {
        ctx,
        ops: Arc::new(call::PersonalOps::new(ops)),
    };
    cfg.app_data(web::Data::new(dashboard));
    cfg.service(
        web::scope(PREFIX)
            .route("", web::get().to(pages::home))
            .route("/", web::get().to(pages::home))
            .route("/sign-in", web::get().to(session::sign_in_page))
            .route("/sign-in", web::post().to(session::sign_in))
            .route("/sign-out", web::post().to(session::sign_out))
            .route("/assets/{name}", web::get().to(assets::serve))
            .route("/review", web::get().to(pages::review::queue))
            .route("/posts/{id}", web::get().to(pages::review::post))
            .route("/decisions", web::get().to(pages::decisions::inbox))
            .route("/tasks", web::get().to(pages::tasks::board))
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
            .route("/act/{path:.+}", web::post().to(call::act))
            .default_service(web::to(|| async {
                layout::html_response(404, layout::bare("Not found", "There is no such page."))
            })),
    );
}
