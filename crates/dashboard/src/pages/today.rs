//! Today (`GET /today`): per workspace, the coverage of each account (target, published,
//! scheduled, missing) and its inventory, what waits for people, and the month's research
//! credits.

use super::{list, n, read_or_answer, s, session_or_answer, words};
use crate::Dashboard;
use crate::chart::count;
use crate::layout::page;
use actix_web::{HttpRequest, HttpResponse, web};
use maud::html;
use serde_json::{Map, Value};

pub(crate) async fn today(req: HttpRequest, dash: web::Data<Dashboard>) -> HttpResponse {
    let session = session_or_answer!(&req, &dash);
    let day = read_or_answer!(dash, &req, &session, "/today", Map::new(), Map::new());
    let review = format!("{}/review", crate::PREFIX);
    let decisions = format!("{}/decisions", crate::PREFIX);
    let tasks = format!("{}/tasks", crate::PREFIX);
    let body = html! {
        @let workspaces = list(&day, "workspaces");
        @if workspaces.is_empty() { p.muted { "No workspace yet." } }
        @for ws in workspaces {
            section aria-labelledby={"ws-" (s(ws, "id"))} {
                h2 #{"ws-" (s(ws, "id"))} { (s(ws, "name")) }
                @let coverage = ws.get("coverage").unwrap_or(&Value::Null);
                p.meta {
                    span { strong { (count(n(coverage, "covered"))) " of " (count(n(coverage, "expected"))) } " posts covered today" }
                    span { (count(n(coverage, "missing_posts"))) " missing on " (count(n(coverage, "missing_accounts"))) " accounts" }
                    span { (count(n(coverage, "inventory"))) " in inventory" }
                    span { a href=(review) { (count(ws.pointer("/review_queue/total").and_then(Value::as_f64).unwrap_or(0.0))) " in review" } }
                    span { a href=(decisions) { (count(ws.pointer("/decisions/total").and_then(Value::as_f64).unwrap_or(0.0))) " decisions open" } }
                    span { a href=(tasks) { (count(ws.pointer("/cards/pending_confirmation").and_then(Value::as_f64).unwrap_or(0.0))) " cards to confirm" } }
                }
                @let accounts = list(coverage, "accounts");
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
                                        td { (s(a, "code")) " " span.muted { (s(a, "platform")) } }
                                        td { (s(a, "persona")) }
                                        td { (s(a, "date")) }
                                        td.num { (count(n(a, "target"))) }
                                        td.num { (count(n(a, "published"))) }
                                        td.num { (count(n(a, "scheduled"))) }
                                        td.num {
                                            @if n(a, "missing") > 0.0 { span.tag.bad { (count(n(a, "missing"))) } } @else { "0" }
                                        }
                                        td.num { (count(n(a, "inventory"))) }
                                    }
                                }
                            }
                        }
                    }
                }
                @let kinds = ws.pointer("/decisions/by_kind").and_then(Value::as_array);
                @if let Some(kinds) = kinds.filter(|k| !k.is_empty()) {
                    p.meta { "Open decisions: "
                        @for k in kinds { span { (words(s(k, "kind"))) " " (count(n(k, "count"))) } }
                    }
                }
            }
        }
        @let credits = list(&day, "credits");
        @if !credits.is_empty() {
            h2 { "Research credits this month" }
            div.scroll tabindex="0" {
                table {
                    thead { tr { th { "Organization" } th.num { "Charged" } th.num { "Monthly limit" } th { "State" } } }
                    tbody {
                        @for c in credits {
                            tr {
                                td { (c.pointer("/organization/name").and_then(Value::as_str).unwrap_or("")) }
                                td.num { (count(n(c, "charged"))) }
                                td.num { (count(n(c, "monthly_credit_limit"))) }
                                td { @if c.get("suspended").and_then(Value::as_bool) == Some(true) { span.tag.bad { "suspended" } } @else { "active" } }
                            }
                        }
                    }
                }
            }
        }
    };
    page(&req, &dash, &session, "Today", "/today", body)
}
