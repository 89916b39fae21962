//! The community tickets (`GET /community/tickets`), open ones first, each with its moves
//! (`POST /community/tickets/{id}/resolve|dismiss`, with a note).

use super::{call_or_answer, cursor, input_or_answer, session_or_answer, words};
use crate::Dashboard;
use crate::act::action_url;
use crate::layout::{form_fields, local, page};
use crate::pages::decisions::HOME_ZONE;
use crate::session::Session;
use actix_web::{HttpRequest, HttpResponse, web};
use fleetdesk_community::ticket::TicketStatus;
use fleetdesk_community::wire::personal::{DismissTicket, ListTickets, ResolveTicket};
use fleetdesk_community::wire::{TicketStatusFilter, TicketView};
use fleetdesk_kernel::wire::fields::IdPath;
use maud::{Markup, html};

/// The statuses the filter offers after the default (open).
const FILTERS: [TicketStatusFilter; 4] = [
    TicketStatusFilter::Resolved,
    TicketStatusFilter::Dismissed,
    TicketStatusFilter::Handled,
    TicketStatusFilter::All,
];

/// A status filter as the address and the filter's options write it.
fn filter_text(filter: TicketStatusFilter) -> &'static str {
    match filter {
        TicketStatusFilter::Open => "open",
        TicketStatusFilter::Resolved => "resolved",
        TicketStatusFilter::Dismissed => "dismissed",
        TicketStatusFilter::Handled => "handled",
        TicketStatusFilter::All => "all",
    }
}

pub(crate) async fn list_page(req: HttpRequest, dash: web::Data<Dashboard>) -> HttpResponse {
    let session = session_or_answer!(&req, &dash);
    let input = input_or_answer!(
        dash,
        &req,
        &session,
        ListTickets,
        &["workspace", "status", "category", "cursor"]
    );
    let status = input.query.status.map_or("", filter_text);
    let answer = call_or_answer!(dash, &req, &session, ListTickets, input);
    let back = req
        .uri()
        .path_and_query()
        .map(|p| p.as_str().to_owned())
        .unwrap_or_default();
    let body = html! {
        form.filters method="get" {
            label { "Status"
                select name="status" {
                    option value="" selected[status.is_empty()] { "Open" }
                    @for st in FILTERS {
                        option value=(filter_text(st)) selected[status == filter_text(st)] { (filter_text(st)) }
                    }
                }
            }
            button type="submit" { "Show" }
        }
        @if answer.tickets.is_empty() { p.muted { "No ticket here." } }
        div.cards {
            @for t in &answer.tickets { (ticket(&session, t, &back)) }
        }
        @if let Some(next) = &answer.next_cursor {
            p { a href={ "?" (serde_urlencoded::to_string([("status", status), ("cursor", &cursor(next))]).unwrap_or_default()) } { "Next page" } }
        }
    };
    page(&req, &dash, &session, "Tickets", "/tickets", body)
}

fn ticket(session: &Session, t: &TicketView, back: &str) -> Markup {
    let id = IdPath { id: t.id };
    let open = t.status == TicketStatus::Open;
    html! {
        article.card data-card tabindex="-1" aria-labelledby={"ticket-" (t.id)} {
            h2 #{"ticket-" (t.id)} { (words(t.category.as_str())) ": " (t.summary) }
            p.meta {
                span.tag[!open] { (t.status.as_str()) }
                span { (t.workspace.name) " · " (t.space.name) " (" (t.space.channel.as_str()) ")" }
                @if let Some(member) = &t.member_external_id { span { "Member " (member) } }
                span { "Opened by " (t.opened_by.name) }
                span { (local(t.created_at, HOME_ZONE)) }
            }
            @if t.notes_count > 0 {
                p.muted { "Later reports (" (t.notes_count) "; the latest shown):" }
                ul { @for n in &t.notes { li lang="und" { (n.text) } } }
            }
            @if let Some(h) = &t.handled {
                p { (words(t.status.as_str())) " by "
                    (h.by.get("name").and_then(|n| n.as_str()).unwrap_or("—"))
                    ", " (local(h.at, HOME_ZONE)) ": " (h.note) }
            }
            @if open {
                form.actions method="post" action=(action_url::<ResolveTicket>(&id)) {
                    (form_fields(session, back, "Resolved."))
                    label.inline-field { "What was done"
                        input type="text" name="note" required maxlength="1000";
                    }
                    button.primary type="submit" { "Resolve" }
                }
                form.actions method="post" action=(action_url::<DismissTicket>(&id)) {
                    (form_fields(session, back, "Dismissed."))
                    label.inline-field { "Why nothing is to do"
                        input type="text" name="note" required maxlength="1000";
                    }
                    button type="submit" { "Dismiss" }
                }
            }
        }
    }
}
