//! The task board (`GET /tasks`) by status, with confirm and reopen
//! (`POST /tasks/{id}/confirm|reopen`), and the agents' heartbeats and cron health as
//! `GET /today` reports them.

use super::{call_or_answer, plain, session_or_answer, words};
use crate::Dashboard;
use crate::act::action_url;
use crate::layout::{form_fields, local, page};
use crate::pages::decisions::HOME_ZONE;
use crate::session::Session;
use actix_web::{HttpRequest, HttpResponse, web};
use fleetdesk_api::input::{Nothing, Req};
use fleetdesk_api::ops::today::{GetToday, TodayQueryIn};
use fleetdesk_api::today::{MissedJob, Today};
use fleetdesk_kernel::wire::fields::{IdPath, Int};
use fleetdesk_tasks::TaskStatus;
use fleetdesk_tasks::wire::personal::{ConfirmTask, ListTasks, ReopenTask};
use fleetdesk_tasks::wire::{StatusList, TaskOut, TaskQueryIn};
use maud::{Markup, html};
use serde_json::Value;

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
    let today = call_or_answer!(dash, &req, &session, GetToday, today_input());
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
    let id = IdPath { id: card.id };
    let status = card.status;
    html! {
        article.card data-card tabindex="-1" {
            h3 { (card.title) }
            p.meta {
                span { (words(card.kind.as_str())) }
                @if let Some(a) = &card.assignee { span { "Agent " (a.name) } }
                @if let Some(due) = card.due_at { span { "Due " (local(due, HOME_ZONE)) } }
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
                form method="post" action=(action_url::<ConfirmTask>(&id)) {
                    (form_fields(session, back, "Confirmed."))
                    button.primary type="submit" { "Confirm" }
                }
            }
            @if matches!(status, TaskStatus::PendingConfirmation | TaskStatus::Done) {
                details {
                    summary { "Reopen" }
                    form.actions method="post" action=(action_url::<ReopenTask>(&id)) {
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

/// The input of `GET /today` as the dashboard reads it: the person's own organization.
pub(crate) fn today_input() -> Req<Nothing, TodayQueryIn, Nothing> {
    Req {
        path: Nothing,
        query: TodayQueryIn { organization: None },
        body: Nothing,
    }
}

/// Every workspace's agents: the last heartbeat, silence, and each agent's failed and missed
/// cron jobs.
fn agents(today: &Today) -> Markup {
    html! {
        div.scroll tabindex="0" {
            table {
                thead { tr { th { "Workspace" } th { "Agent" } th { "Last heartbeat" } th { "Cron jobs" } th { "Failed" } th { "Missed" } } }
                tbody {
                    @for ws in &today.workspaces {
                        @for agent in &ws.agents {
                            tr {
                                td { (ws.name) }
                                td { (agent.name) }
                                td {
                                    @match agent.last_heartbeat_at {
                                        Some(at) => (local(at, HOME_ZONE)),
                                        None => "never",
                                    }
                                    @if agent.silent { " " span.tag.bad { "silent" } }
                                }
                                td.num { (agent.cron.enabled) " / " (agent.cron.jobs) }
                                td { (names(agent.cron.failed.iter().map(|j| j.name.as_str()))) }
                                td { (names(agent.cron.missed.iter().map(|j: &MissedJob| j.name.as_str()))) }
                            }
                        }
                    }
                }
            }
        }
    }
}

/// Job names, comma-separated ("—" when none).
fn names<'a>(jobs: impl Iterator<Item = &'a str>) -> String {
    let names: Vec<&str> = jobs.collect();
    if names.is_empty() {
        "—".to_owned()
    } else {
        names.join(", ")
    }
}
