//! Reports (`GET /reports`, `GET /reports/{id}`): a client sees the reports issued to them;
//! agency people make one (`POST /reports`) and issue it to the client in one click
//! (`POST /reports/{id}/issue`).

use super::{id_path, list, n, read_or_answer, s, session_or_answer};
use crate::Dashboard;
use crate::chart::{bars, count};
use crate::layout::{act, form_fields, local_time, page, trusted};
use crate::pages::decisions::HOME_ZONE;
use crate::session::Session;
use actix_web::{HttpRequest, HttpResponse, web};
use maud::{Markup, html};
use serde_json::{Map, Value};

const COUNTERS: &[(&str, &str)] = &[
    ("posts_published", "Posts"),
    ("views", "Views"),
    ("likes", "Likes"),
    ("replies", "Replies"),
    ("reposts", "Reposts"),
    ("shares", "Shares"),
];

pub(crate) async fn list_page(req: HttpRequest, dash: web::Data<Dashboard>) -> HttpResponse {
    let session = session_or_answer!(&req, &dash);
    let mut q = Map::new();
    if let Some(cursor) = super::query(&req).remove("cursor") {
        q.insert("cursor".into(), cursor);
    }
    let answer = read_or_answer!(dash, &req, &session, "/reports", Map::new(), q);
    let back = format!("{}/reports", crate::PREFIX);
    let reports = list(&answer, "reports");
    let body = html! {
        @if reports.is_empty() { p.muted { "No report yet." } }
        div.scroll tabindex="0" {
            table {
                thead { tr { th { "Report" } th { "Workspace" } th { "Period" } th { "Issued" } } }
                tbody {
                    @for r in reports {
                        tr {
                            td { a href={(crate::PREFIX) "/reports/" (s(r, "id"))} { (s(r, "title")) } }
                            td { (r.pointer("/workspace/name").and_then(Value::as_str).unwrap_or("")) }
                            td { (s(r, "from")) " – " (s(r, "to")) }
                            td { (issue_cell(&session, r, &back)) }
                        }
                    }
                }
            }
        }
        @if let Some(next) = answer.get("next_cursor").and_then(Value::as_str) {
            p { a href={ "?" (serde_urlencoded::to_string([("cursor", next)]).unwrap_or_default()) } { "Next page" } }
        }
        @if session.agency() {
            h2 { "Make a report" }
            form.filters method="post" action=(act("/reports")) {
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
fn issue_cell(session: &Session, r: &Value, back: &str) -> Markup {
    html! {
        @if let Some(at) = r.get("issued_at").and_then(Value::as_str) {
            (local_time(at, HOME_ZONE))
        } @else if session.agency() {
            form method="post" action=(act(&format!("/reports/{}/issue", s(r, "id")))) {
                (form_fields(session, back, "Issued: the client sees it now."))
                button type="submit" { "Issue to the client" }
            }
        } @else {
            "not yet"
        }
    }
}

pub(crate) async fn report(
    req: HttpRequest,
    dash: web::Data<Dashboard>,
    id: web::Path<String>,
) -> HttpResponse {
    let session = session_or_answer!(&req, &dash);
    let r = read_or_answer!(
        dash,
        &req,
        &session,
        "/reports/{id}",
        id_path(id),
        Map::new()
    );
    let back = req.uri().path().to_owned();
    let totals = r.get("totals").cloned().unwrap_or(Value::Null);
    let accounts = list(&r, "accounts");
    let views: Vec<(String, f64)> = accounts
        .iter()
        .map(|a| {
            (
                format!("{} ({})", s(a, "code"), s(a, "platform")),
                n(a, "views"),
            )
        })
        .collect();
    let body = html! {
        p.meta {
            span { (r.pointer("/workspace/name").and_then(Value::as_str).unwrap_or("")) }
            span { (s(&r, "from")) " – " (s(&r, "to")) }
            span { "Issued: " (issue_cell(&session, &r, &back)) }
        }
        dl.facts {
            @for (key, label) in COUNTERS { dt { (label) } dd { (count(n(&totals, key))) } }
            dt { "Followers" }
            dd {
                @match (totals.get("followers_start").and_then(Value::as_f64), totals.get("followers_end").and_then(Value::as_f64)) {
                    (Some(a), Some(b)) => { (count(a)) " → " (count(b)) }
                    (None, Some(b)) => (count(b)),
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
                thead { tr { th { "Account" } @for (_, label) in COUNTERS { th.num { (label) } } } }
                tbody {
                    @for a in accounts {
                        tr {
                            td { (s(a, "code")) " " span.muted { (s(a, "platform")) } }
                            @for (key, _) in COUNTERS { td.num { (count(n(a, key))) } }
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
                    @for p in list(&r, "top_posts") {
                        tr {
                            td lang="und" {
                                @if let Some(link) = p.get("permalink").and_then(Value::as_str).filter(|u| u.starts_with("https://")) {
                                    a href=(link) rel="noopener noreferrer" { (s(p, "excerpt")) }
                                } @else { (s(p, "excerpt")) }
                            }
                            td { (s(p, "code")) }
                            td.num { (count(n(p, "views"))) }
                            td.num { (count(n(p, "likes"))) }
                        }
                    }
                }
            }
        }
    };
    page(&req, &dash, &session, s(&r, "title"), "/reports", body)
}
