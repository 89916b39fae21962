//! Today (`GET /today`): per workspace, the coverage of each account (target, published,
//! scheduled, missing) and its inventory, what waits for people (webhook endpoints failing or
//! disabled, posts published otherwise than approved, side by side), and the month's research
//! credits.

use super::{call_or_answer, session_or_answer, words};
use crate::Dashboard;
use crate::chart::count;
use crate::diff::side_by_side;
use crate::layout::{local, page};
use crate::pages::decisions::HOME_ZONE;
use crate::pages::tasks::today_input;
use actix_web::{HttpRequest, HttpResponse, web};
use fleetdesk_api::ops::today::GetToday;
use maud::html;

/// A count as the page shows it.
fn n(v: i64) -> String {
    count(v as f64)
}

pub(crate) async fn today(req: HttpRequest, dash: web::Data<Dashboard>) -> HttpResponse {
    let session = session_or_answer!(&req, &dash);
    let day = call_or_answer!(dash, &req, &session, GetToday, today_input());
    let review = format!("{}/review", crate::PREFIX);
    let decisions = format!("{}/decisions", crate::PREFIX);
    let tasks = format!("{}/tasks", crate::PREFIX);
    let body = html! {
        @let workspaces = &day.workspaces;
        @if workspaces.is_empty() { p.muted { "No workspace yet." } }
        @for ws in workspaces {
            section aria-labelledby={"ws-" (ws.id)} {
                h2 #{"ws-" (ws.id)} { (ws.name) }
                @let coverage = &ws.coverage;
                p.meta {
                    span { strong { (n(coverage.covered)) " of " (n(coverage.expected)) } " posts covered today" }
                    span { (n(coverage.missing_posts)) " missing on " (n(coverage.missing_accounts)) " accounts" }
                    span { (n(coverage.inventory)) " in inventory" }
                    span { a href=(review) { (n(ws.review_queue.total)) " in review" } }
                    span { a href=(decisions) { (n(ws.decisions.total)) " decisions open" } }
                    span { a href=(tasks) { (n(ws.cards.pending_confirmation)) " cards to confirm" } }
                }
                @let accounts = &coverage.accounts;
                @if !accounts.is_empty() {
                    div.scroll tabindex="0" {
                        table {
                            caption.muted { "Coverage of each account on its market's day" }
                            thead { tr {
                                th { "Account" } th { "Persona" } th { "Day" }
                                th.num { "Target" } th.num { "Published" } th.num { "Scheduled" } th.num { "Missing" } th.num { "Inventory" }
                            } }
                            tbody {
                                @for a in accounts {
                                    tr {
                                        td { (a.code) " " span.muted { (a.platform.as_str()) } }
                                        td { (a.persona) }
                                        td { (a.date) }
                                        td.num { (n(a.target)) }
                                        td.num { (n(a.published)) }
                                        td.num { (n(a.scheduled)) }
                                        td.num {
                                            @if a.missing > 0 { span.tag.bad { (n(a.missing)) } } @else { "0" }
                                        }
                                        td.num { (n(a.inventory)) }
                                    }
                                }
                            }
                        }
                    }
                }
                @let kinds = &ws.decisions.by_kind;
                @if !kinds.is_empty() {
                    p.meta { "Open decisions: "
                        @for k in kinds { span { (words(&k.kind)) " " (n(k.count)) } }
                    }
                }
                @if !ws.webhooks.is_empty() {
                    h3 { "Webhook endpoints that need you" }
                    ul {
                        @for h in &ws.webhooks {
                            li {
                                code { (h.url) } " "
                                @if let Some(reason) = &h.disabled_reason {
                                    span.tag.bad { "disabled" } " " (reason)
                                } @else if let Some(since) = h.failing_since {
                                    span.tag.warn { "failing" } " since " (local(since, HOME_ZONE))
                                }
                                " · " a href={(crate::PREFIX) "/webhooks/" (h.id)} { "delivery log" }
                            }
                        }
                    }
                }
                @if !ws.published_differs.is_empty() {
                    h3 { "Published otherwise than approved" }
                    @for d in &ws.published_differs {
                        article.card aria-label={"Post " (d.post_id)} {
                            p.meta {
                                span { (d.code) " " span.muted { (d.platform.as_str()) } }
                                span.tag.bad { (words(d.reason.as_str())) }
                                span { "reported " (local(d.reported_at, HOME_ZONE)) }
                                @if let Some(link) = &d.permalink { span { a href=(link) rel="noopener noreferrer" { "on the platform" } } }
                                span { a href={(crate::PREFIX) "/posts/" (d.post_id)} { "the post" } }
                            }
                            (side_by_side(d.approved_body.as_deref(), &d.published_body))
                        }
                    }
                }
            }
        }
        @let credits = &day.credits;
        @if !credits.is_empty() {
            h2 { "Research credits this month" }
            div.scroll tabindex="0" {
                table {
                    thead { tr { th { "Organization" } th.num { "Charged" } th.num { "Monthly limit" } th { "State" } } }
                    tbody {
                        @for c in credits {
                            tr {
                                td { (c.organization.name) }
                                td.num { (n(c.charged)) }
                                td.num { (n(c.monthly_credit_limit)) }
                                td { @if c.suspended { span.tag.bad { "suspended" } } @else { "active" } }
                            }
                        }
                    }
                }
            }
        }
    };
    page(&req, &dash, &session, "Today", "/today", body)
}
