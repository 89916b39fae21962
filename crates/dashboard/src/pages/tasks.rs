//! The task board (`GET /tasks`) by status, with confirm and reopen
//! (`POST /tasks/{id}/confirm|reopen`), and the agents' heartbeats and cron health as
//! `GET /today` reports them.

use super::{call_or_answer, list, plain, read_or_answer, s, session_or_answer, words};
use crate::Dashboard;
use crate::layout::{act, form_fields, local_time, page};
use crate::pages::decisions::HOME_ZONE;
use crate::session::Session;
use actix_web::{HttpRequest, HttpResponse, web};
use fleetdesk_api::input::{Nothing, Req};
use fleetdesk_kernel::wire::fields::Int;
use fleetdesk_tasks::TaskStatus;
use fleetdesk_tasks::wire::{StatusList, TaskOut, TaskQueryIn, personal::ListTasks};
use maud::{Markup, html};
use serde_json::{Map, Value};

/// The board's columns, in the order a card moves through them.
const COLUMNS: &[TaskStatus] = &[
    TaskStatus::PendingPickup,
    TaskStatus::InProgress,
    TaskStatus::PendingConfirmation,
    TaskStatus::Done,
    TaskStatus::Failed,
];

pub(crate) async fn board(req: HttpRequest, dash: web::Data<Dashboard>) -> HttpResponse {
    let session = session_or_answer!(&req, &dash);
    let query = TaskQueryIn {
        status: Some(StatusList(COLUMNS.to_vec())),
        limit: Some(Int(200)),
        ..TaskQueryIn::default()
    };
    let input = Req {
        path: Nothing,
        query,
        body: Nothing,
    };
    let tasks = call_or_answer!(dash, &req, &session, ListTasks, input);
    let today = read_or_answer!(dash, &req, &session, "/today", Map::new(), Map::new());
    let back = format!("{}/tasks", crate::PREFIX);
    let body = html! {
        div.board {
            @for column in COLUMNS {
                section aria-labelledby={"col-" (column.as_str())} {
                    @let here: Vec<&TaskOut> = tasks.tasks.iter().filter(|c| c.status == *column).collect();
                    h2 #{"col-" (column.as_str())} { (words(column.as_str())) " (" (here.len()) ")" }
                    @for card in here { (task(&session, card, &back)) }
                }
            }
        }
        h2 { "Agents" }
        (agents(&today))
    };
    page(&req, &dash, &session, "Tasks", "/tasks", body)
}

fn task(session: &Session, card: &TaskOut, back: &str) -> Markup {
    let id = card.id;
    let status = card.status;
    html! {
        article.card data-card tabindex="-1" {
            h3 { (card.title) }
            p.meta {
                span { (words(card.kind.as_str())) }
                @if let Some(a) = &card.assignee { span { "Agent " (a.name) } }
                @if let Some(due) = card.due_at { span { "Due " (local_time(&due.to_string(), HOME_ZONE)) } }
                @if card.overdue { span.tag.bad { "overdue" } }
                @if card.stale { span.tag.warn { "stale" } }
                @if card.confirm_overdue { span.tag.bad { "confirm overdue" } }
            }
            @if let Some(detail) = &card.detail { p.body { (detail) } }
            @if let Some(result) = &card.result { p { "Result: " (result) } }
            // What the agent sent as evidence, as stored: links and library items.
            @let evidence = card.evidence.as_array().map(Vec::as_slice).unwrap_or_default();
            @if !evidence.is_empty() {
                ul {
                    @for e in evidence {
                        li {
                            @if let Some(url) = e.get("url").and_then(Value::as_str).filter(|u| u.starts_with("https://") || u.starts_with("http://")) {
                                a href=(url) rel="noopener noreferrer" { (plain(e.get("label").unwrap_or(&Value::Null))) }
                            } @else { (plain(e)) }
                        }
                    }
                }
            }
            @if status == TaskStatus::PendingConfirmation {
                form method="post" action=(act(&format!("/tasks/{id}/confirm"))) {
                    (form_fields(session, back, "Confirmed."))
                    button.primary type="submit" { "Confirm" }
                }
            }
            @if matches!(status, TaskStatus::PendingConfirmation | TaskStatus::Done) {
                details {
                    summary { "Reopen" }
                    form.actions method="post" action=(act(&format!("/tasks/{id}/reopen"))) {
                        (form_fields(session, back, "Reopened."))
                        label.inline-field { "What still needs doing"
                            input type="text" name="note" required maxlength="1000";
                        }
                        button type="submit" { "Reopen" }
                    }
                }
            }
        }
    }
}

/// Every workspace's agents: the last heartbeat, silence, and each agent's failed and missed
/// cron jobs.
fn agents(today: &Value) -> Markup {
    html! {
        div.scroll tabindex="0" {
            table {
                thead { tr { th { "Workspace" } th { "Agent" } th { "Last heartbeat" } th { "Cron jobs" } th { "Failed" } th { "Missed" } } }
                tbody {
                    @for ws in list(today, "workspaces") {
                        @for agent in list(ws, "agents") {
                            tr {
                                td { (s(ws, "name")) }
                                td { (s(agent, "name")) }
                                td {
                                    @match agent.get("last_heartbeat_at").and_then(Value::as_str) {
                                        Some(at) => (local_time(at, HOME_ZONE)),
                                        None => "never",
                                    }
                                    @if agent.get("silent").and_then(Value::as_bool) == Some(true) { " " span.tag.bad { "silent" } }
                                }
                                td.num { (agent.pointer("/cron/enabled").and_then(Value::as_i64).unwrap_or(0)) " / " (agent.pointer("/cron/jobs").and_then(Value::as_i64).unwrap_or(0)) }
                                td { (names(agent.pointer("/cron/failed"))) }
                                td { (names(agent.pointer("/cron/missed"))) }
                            }
                        }
                    }
                }
            }
        }
    }
}

fn names(jobs: Option<&Value>) -> String {
    let names: Vec<&str> = jobs
        .and_then(Value::as_array)
        .map(|j| j.iter().map(|j| s(j, "name")).collect())
        .unwrap_or_default();
    if names.is_empty() {
        "—".to_owned()
    } else {
        names.join(", ")
    }
}
