//! Webhooks, for agency people: each workspace's endpoints (`GET /webhooks`) with the forms
//! that register one (`POST /webhooks`: its secret is shown once, on the page the form leads
//! to), turn one off or on (`PUT /webhooks/{id}`), rotate its secret and delete it; and an
//! endpoint's delivery log (`GET /webhooks/{id}/deliveries`) with replay of one delivery, of
//! every failed one or of everything since a time (`POST /webhooks/{id}/replay`).

use super::{call_or_answer, cursor, input_or_answer, session_or_answer, words};
use crate::Dashboard;
use crate::act::action_url;
use crate::layout::{form_fields, local, page};
use crate::pages::decisions::HOME_ZONE;
use crate::pages::tasks::today_input;
use crate::session::Session;
use actix_web::{HttpRequest, HttpResponse, web};
use fleetdesk_api::ops::today::GetToday;
use fleetdesk_kernel::events::EventKind;
use fleetdesk_kernel::wire::fields::{IdPath, Int};
use fleetdesk_webhooks::delivery::DeliveryStatus;
use fleetdesk_webhooks::wire::WebhookOut;
use fleetdesk_webhooks::wire::personal::{
    CreateWebhook, DeleteWebhook, ListWebhookDeliveries, ListWebhooks, ReplayWebhook,
    RotateWebhookSecret, UpdateWebhook,
};
use maud::{Markup, html};
use std::collections::HashMap;
use uuid::Uuid;

/// Where the list is.
fn list_path() -> String {
    format!("{}/webhooks", crate::PREFIX)
}

/// `/dashboard/webhooks`: every endpoint of the person's workspaces, and the form that adds one.
pub(crate) async fn list_page(req: HttpRequest, dash: web::Data<Dashboard>) -> HttpResponse {
    let session = session_or_answer!(&req, &dash);
    let input = input_or_answer!(dash, &req, &session, ListWebhooks, &["workspace"]);
    let answer = call_or_answer!(dash, &req, &session, ListWebhooks, input);
    let day = call_or_answer!(dash, &req, &session, GetToday, today_input());
    let names: HashMap<Uuid, &str> = day
        .workspaces
        .iter()
        .map(|w| (w.id, w.name.as_str()))
        .collect();
    let back = list_path();
    let body = html! {
        @if answer.endpoints.is_empty() { p.muted { "No endpoint yet." } }
        @if !answer.endpoints.is_empty() {
            div.scroll tabindex="0" {
                table {
                    thead { tr {
                        th { "Endpoint" } th { "Workspace" } th { "Types" } th { "State" } th { "Actions" }
                    } }
                    tbody {
                        @for e in &answer.endpoints {
                            (row(&session, e, names.get(&e.workspace_id).copied(), &back))
                        }
                    }
                }
            }
        }
        h2 { "Add an endpoint" }
        form.stack method="post" action=(action_url::<CreateWebhook>(&fleetdesk_kernel::op::Nothing)) {
            (form_fields(&session, &back, "Endpoint added."))
            label { "Workspace"
                select name="workspace_id" required {
                    @for w in &day.workspaces { option value=(w.id) { (w.name) } }
                }
            }
            label { "URL (https)" input type="url" name="url" required maxlength="2000" placeholder="https://hooks.example.com/fleetdesk"; }
            label { "Description" input type="text" name="description" maxlength="500"; }
            fieldset {
                legend { "Event types (none ticked: every type)" }
                @for kind in EventKind::ALL {
                    label.check { input type="checkbox" name="types[]" value=(kind.as_str()); " " (kind.as_str()) }
                }
            }
            button.primary type="submit" { "Add the endpoint" }
        }
    };
    page(&req, &dash, &session, "Webhooks", "/webhooks", body)
}

/// One endpoint's row: where it goes, what it receives, its state and its actions.
fn row(session: &Session, e: &WebhookOut, workspace: Option<&str>, back: &str) -> Markup {
    let path = IdPath { id: e.id };
    let deliveries = format!("{}/webhooks/{}", crate::PREFIX, e.id);
    html! {
        tr {
            td {
                code { (e.url) }
                @if let Some(d) = &e.description { br; span.muted { (d) } }
            }
            td { (workspace.unwrap_or("")) }
            td {
                @if e.types.is_empty() { "every type" }
                @else { @for (i, t) in e.types.iter().enumerate() { @if i > 0 { ", " } (t.as_str()) } }
            }
            td {
                @if let Some(reason) = &e.disabled_reason {
                    span.tag.bad { "disabled by the service" } " " (reason)
                } @else if !e.enabled {
                    span.tag { "off" }
                } @else if let Some(since) = e.failing_since {
                    span.tag.warn { "failing" } " since " (local(since, HOME_ZONE))
                } @else {
                    span.tag.ok { "on" }
                }
            }
            td {
                p { a href=(deliveries) { "Delivery log" } }
                form method="post" action=(action_url::<UpdateWebhook>(&path)) {
                    (form_fields(session, back, if e.enabled { "Turned off." } else { "Turned on." }))
                    input type="hidden" name="enabled:bool" value=(if e.enabled { "false" } else { "true" });
                    button type="submit" { @if e.enabled { "Turn off" } @else { "Turn on" } }
                }
                form method="post" action=(action_url::<RotateWebhookSecret>(&path))
                    data-confirm="Rotate the secret? The old one keeps signing beside the new one for 24 hours." {
                    (form_fields(session, back, "Secret rotated."))
                    button type="submit" { "Rotate the secret" }
                }
                form method="post" action=(action_url::<DeleteWebhook>(&path))
                    data-confirm="Delete this endpoint? Its deliveries stop and its log is removed." {
                    (form_fields(session, back, "Endpoint deleted."))
                    button.danger type="submit" { "Delete" }
                }
            }
        }
    }
}

/// `/dashboard/webhooks/{id}`: the endpoint's deliveries, newest first, with replay.
pub(crate) async fn deliveries(req: HttpRequest, dash: web::Data<Dashboard>) -> HttpResponse {
    let session = session_or_answer!(&req, &dash);
    let mut input = input_or_answer!(dash, &req, &session, ListWebhookDeliveries, &["cursor"]);
    input.query.limit = Some(Int(50));
    let id = input.path.id;
    let answer = call_or_answer!(dash, &req, &session, ListWebhookDeliveries, input);
    let back = req.uri().path().to_owned();
    let replay = action_url::<ReplayWebhook>(&IdPath { id });
    let body = html! {
        p { a href=(list_path()) { "Back to the endpoints" } }
        div.filters {
            form method="post" action=(replay) {
                (form_fields(&session, &back, "Failed deliveries sent again."))
                button type="submit" { "Replay every failed delivery" }
            }
            form method="post" action=(replay) {
                (form_fields(&session, &back, "Deliveries since then sent again."))
                label { "Everything since (ISO time, e.g. 2026-12-07T09:00:00Z)"
                    input type="text" name="since" required maxlength="40"; }
                button type="submit" { "Replay" }
            }
        }
        @if answer.deliveries.is_empty() { p.muted { "Nothing delivered yet." } }
        @if !answer.deliveries.is_empty() {
            div.scroll tabindex="0" {
                table {
                    thead { tr {
                        th { "Event" } th { "Status" } th.num { "Attempts" } th { "Made" }
                        th { "Delivered or next try" } th { "Attempts' answers" } th { "" }
                    } }
                    tbody {
                        @for d in &answer.deliveries {
                            tr {
                                td { (d.event_type) br; code.muted { (d.event_id) } }
                                td { (status_tag(d.status)) }
                                td.num { (d.attempts) }
                                td { (local(d.created_at, HOME_ZONE)) }
                                td {
                                    @if let Some(at) = d.delivered_at { (local(at, HOME_ZONE)) }
                                    @else if let Some(at) = d.next_attempt_at { "next " (local(at, HOME_ZONE)) }
                                }
                                td {
                                    @for a in &d.log {
                                        div {
                                            (local(a.at, HOME_ZONE)) ": "
                                            @match a.status_code { Some(code) => { (code) } None => { "no answer" } }
                                            " in " (a.latency_ms) " ms"
                                            @if let Some(e) = &a.error { " · " (e) }
                                        }
                                    }
                                }
                                td {
                                    form method="post" action=(replay) {
                                        (form_fields(&session, &back, "Delivery sent again."))
                                        input type="hidden" name="delivery_id" value=(d.id);
                                        button type="submit" { "Replay" }
                                    }
                                }
                            }
                        }
                    }
                }
            }
        }
        @if let Some(next) = &answer.next_cursor {
            p { a href={ "?" (serde_urlencoded::to_string([("cursor", cursor(next))]).unwrap_or_default()) } { "Older deliveries" } }
        }
    };
    page(&req, &dash, &session, "Delivery log", "/webhooks", body)
}

fn status_tag(status: DeliveryStatus) -> Markup {
    let text = words(status.as_str());
    html! {
        @match status {
            DeliveryStatus::Delivered => span.tag.ok { (text) },
            DeliveryStatus::Failed => span.tag.bad { (text) },
            _ => span.tag.warn { (text) },
        }
    }
}

/// The page a form that made a secret leads to: the secret, shown this once.
pub(crate) fn secret_page(
    req: &HttpRequest,
    dash: &Dashboard,
    session: &Session,
    (url, secret): (&str, &str),
) -> HttpResponse {
    let body = html! {
        p role="status" { "The endpoint " code { (url) } " signs its deliveries with this secret. "
            "Copy it now: it is not shown again." }
        pre.secret { (secret) }
        p.muted { "Verify deliveries with any Standard Webhooks library (the webhook-id, "
            "webhook-timestamp and webhook-signature headers)." }
        p { a href=(list_path()) { "Back to the endpoints" } }
    };
    page(req, dash, session, "Webhook secret", "/webhooks", body)
}
