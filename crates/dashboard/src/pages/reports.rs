//! Reports (`GET /reports`, `GET /reports/{id}`): a client sees the reports issued to them;
//! agency people make one (`POST /reports`) and issue it to the client in one click
//! (`POST /reports/{id}/issue`).

use super::{call_or_answer, cursor, input_or_answer, session_or_answer};
use crate::Dashboard;
use crate::act::action_url;
use crate::chart::{bars, count};
use crate::layout::{form_fields, local, page, trusted};
use crate::pages::decisions::HOME_ZONE;
use crate::session::Session;
use actix_web::{HttpRequest, HttpResponse, web};
use fleetdesk_api::Nothing;
use fleetdesk_kernel::wire::fields::{IdPath, Utc};
use fleetdesk_reports::report::{AccountLine, Totals};
use fleetdesk_reports::wire::personal::{CreateReport, GetReport, IssueReport, ListReports};
use maud::{Markup, html};
use uuid::Uuid;

/// The counters a report shows, in order.
const COUNTERS: [&str; 6] = ["Posts", "Views", "Likes", "Replies", "Reposts", "Shares"];

/// The report's totals, as [`COUNTERS`] names them.
fn total_counts(t: &Totals) -> [i64; 6] {
    [
        t.posts_published,
        t.views,
        t.likes,
        t.replies,
        t.reposts,
        t.shares,
    ]
}

/// An account's counts, as [`COUNTERS`] names them.
fn account_counts(a: &AccountLine) -> [i64; 6] {
    [
        a.posts_published,
        a.views,
        a.likes,
        a.replies,
        a.reposts,
        a.shares,
    ]
}

pub(crate) async fn list_page(req: HttpRequest, dash: web::Data<Dashboard>) -> HttpResponse {
    let session = session_or_answer!(&req, &dash);
    let input = input_or_answer!(dash, &req, &session, ListReports, &["cursor"]);
    let answer = call_or_answer!(dash, &req, &session, ListReports, input);
    let back = format!("{}/reports", crate::PREFIX);
    let reports = &answer.reports;
    let body = html! {
        @if reports.is_empty() { p.muted { "No report yet." } }
        div.scroll tabindex="0" {
            table {
                thead { tr { th { "Report" } th { "Workspace" } th { "Period" } th { "Issued" } } }
                tbody {
                    @for r in reports {
                        tr {
                            td { a href={(crate::PREFIX) "/reports/" (r.id)} { (r.title) } }
                            td { (r.workspace.name) }
                            td { (r.from) " – " (r.to) }
                            td { (issue_cell(&session, r.id, r.issued_at, &back)) }
                        }
                    }
                }
            }
        }
        @if let Some(next) = &answer.next_cursor {
            p { a href={ "?" (serde_urlencoded::to_string([("cursor", cursor(next))]).unwrap_or_default()) } { "Next page" } }
        }
        @if session.agency() {
            h2 { "Make a report" }
            form.filters method="post" action=(action_url::<CreateReport>(&Nothing)) {
                (form_fields(&session, &back, "The report is made; issue it when it reads right."))
                label { "Workspace (name or id)" input type="text" name="workspace" required maxlength="200"; }
                label { "From" input type="date" name="from" required; }
                label { "To" input type="date" name="to" required; }
                label { "Title (optional)" input type="text" name="title" maxlength="200"; }
                button.primary type="submit" { "Make the report" }
            }
        }
    };
    page(&req, &dash, &session, "Reports", "/reports", body)
}

/// Whether it was issued, or for agency people the button that issues it.
fn issue_cell(session: &Session, id: Uuid, issued_at: Option<Utc>, back: &str) -> Markup {
    html! {
        @if let Some(at) = issued_at {
            (local(at, HOME_ZONE))
        } @else if session.agency() {
            form method="post" action=(action_url::<IssueReport>(&IdPath { id })) {
                (form_fields(session, back, "Issued: the client sees it now."))
                button type="submit" { "Issue to the client" }
            }
        } @else {
            "not yet"
        }
    }
}

pub(crate) async fn report(req: HttpRequest, dash: web::Data<Dashboard>) -> HttpResponse {
    let session = session_or_answer!(&req, &dash);
    let input = input_or_answer!(dash, &req, &session, GetReport, &[]);
    let r = call_or_answer!(dash, &req, &session, GetReport, input);
    let back = req.uri().path().to_owned();
    let totals = &r.totals;
    let accounts = &r.accounts;
    let views: Vec<(String, f64)> = accounts
        .iter()
        .map(|a| (format!("{} ({})", a.code, a.platform), a.views as f64))
        .collect();
    let body = html! {
        p.meta {
            span { (r.workspace.name) }
            span { (r.from) " – " (r.to) }
            span { "Issued: " (issue_cell(&session, r.id, r.issued_at, &back)) }
        }
        dl.facts {
            @for (label, n) in COUNTERS.iter().zip(total_counts(totals)) { dt { (label) } dd { (count(n as f64)) } }
            dt { "Followers" }
            dd {
                @match (totals.followers_start, totals.followers_end) {
                    (Some(a), Some(b)) => { (count(a as f64)) " → " (count(b as f64)) }
                    (None, Some(b)) => (count(b as f64)),
                    _ => "—",
                }
            }
        }
        @if !views.is_empty() {
            figure {
                figcaption { h2 { "Views per account" } }
                (trusted(bars("Views per account", &views)))
            }
        }
        h2 { "Accounts" }
        div.scroll tabindex="0" {
            table {
                thead { tr { th { "Account" } @for label in COUNTERS { th.num { (label) } } } }
                tbody {
                    @for a in accounts {
                        tr {
                            td { (a.code) " " span.muted { (a.platform) } }
                            @for n in account_counts(a) { td.num { (count(n as f64)) } }
                        }
                    }
                }
            }
        }
        h2 { "Top posts by views" }
        div.scroll tabindex="0" {
            table {
                thead { tr { th { "Post" } th { "Account" } th.num { "Views" } th.num { "Likes" } } }
                tbody {
                    @for p in &r.top_posts {
                        tr {
                            td lang="und" {
                                @if let Some(link) = p.permalink.as_deref().filter(|u| u.starts_with("https://")) {
                                    a href=(link) rel="noopener noreferrer" { (p.excerpt) }
                                } @else { (p.excerpt) }
                            }
                            td { (p.code) }
                            td.num { (count(p.views as f64)) }
                            td.num { (count(p.likes as f64)) }
                        }
                    }
                }
            }
        }
    };
    page(&req, &dash, &session, &r.title, "/reports", body)
}
