//! The knowledge base of a workspace: browse (`GET /wiki`), search (`GET /wiki/search`, Chinese
//! in either script) and read one entry (`GET /wiki/entry`).

use super::{list, query, read_or_answer, s, session_or_answer, words};
use crate::Dashboard;
use crate::layout::page;
use actix_web::{HttpRequest, HttpResponse, web};
use maud::{Markup, html};
use serde_json::{Map, Value, json};

/// The workspaces the person may pick, from `GET /today`, and the one picked (the first when
/// none or an unknown one is asked).
fn workspaces(today: &Value, asked: Option<&str>) -> (Vec<(String, String)>, Option<String>) {
    let all: Vec<(String, String)> = list(today, "workspaces")
        .iter()
        .map(|w| (s(w, "id").to_owned(), s(w, "name").to_owned()))
        .collect();
    let picked = asked
        .filter(|a| all.iter().any(|(id, _)| id == a))
        .map(str::to_owned)
        .or_else(|| all.first().map(|(id, _)| id.clone()));
    (all, picked)
}

fn picker(all: &[(String, String)], picked: Option<&str>, q: &str) -> Markup {
    html! {
        form.filters method="get" action={(crate::PREFIX) "/knowledge"} role="search" {
            label { "Workspace"
                select name="workspace" {
                    @for (id, name) in all {
                        option value=(id) selected[picked == Some(id.as_str())] { (name) }
                    }
                }
            }
            label.inline-field { "Search (Chinese in either script, English)"
                input type="search" name="q" value=(q) maxlength="200";
            }
            button type="submit" { "Search" }
        }
    }
}

pub(crate) async fn browse(req: HttpRequest, dash: web::Data<Dashboard>) -> HttpResponse {
    let session = session_or_answer!(&req, &dash);
    let asked = query(&req);
    let today = read_or_answer!(dash, &req, &session, "/today", Map::new(), Map::new());
    let (all, picked) = workspaces(&today, asked.get("workspace").and_then(Value::as_str));
    let q = asked
        .get("q")
        .and_then(Value::as_str)
        .unwrap_or("")
        .trim()
        .to_owned();
    let Some(workspace) = picked else {
        let body = html! { p.muted { "No workspace yet." } };
        return page(&req, &dash, &session, "Knowledge base", "/knowledge", body);
    };
    let mut args = Map::new();
    args.insert("workspace".into(), json!(workspace));
    let (found, searching) = if q.is_empty() {
        if let Some(cursor) = asked.get("cursor") {
            args.insert("cursor".into(), cursor.clone());
        }
        (
            read_or_answer!(dash, &req, &session, "/wiki", Map::new(), args),
            false,
        )
    } else {
        args.insert("q".into(), json!(q));
        args.insert("limit".into(), json!(30));
        (
            read_or_answer!(dash, &req, &session, "/wiki/search", Map::new(), args),
            true,
        )
    };
    let entries = list(&found, if searching { "results" } else { "entries" });
    let entry_link = |id: &str| {
        format!(
            "{}/knowledge/entry?{}",
            crate::PREFIX,
            serde_urlencoded::to_string([("workspace", workspace.as_str()), ("id", id)])
                .unwrap_or_default()
        )
    };
    let body = html! {
        (picker(&all, Some(&workspace), &q))
        @if entries.is_empty() {
            p.muted { @if searching { "Nothing found." } @else { "No entry yet." } }
        }
        ul.entries {
            @for e in entries {
                li {
                    a href=(entry_link(s(e, "id"))) lang="und" { (s(e, "title")) }
                    " " span.muted { (words(s(e, "category"))) @if !s(e, "project").is_empty() { " · " (s(e, "project")) } }
                    @if searching {
                        p.body lang="und" { (s(e, "snippet")) }
                    } @else if !s(e, "summary").is_empty() {
                        p.body lang="und" { (s(e, "summary")) }
                    }
                }
            }
        }
        @if let Some(next) = found.get("next_cursor").and_then(Value::as_str) {
            p { a href={ "?" (serde_urlencoded::to_string([("workspace", workspace.as_str()), ("cursor", next)]).unwrap_or_default()) } { "Next page" } }
        }
    };
    page(&req, &dash, &session, "Knowledge base", "/knowledge", body)
}

pub(crate) async fn entry(req: HttpRequest, dash: web::Data<Dashboard>) -> HttpResponse {
    let session = session_or_answer!(&req, &dash);
    let mut q = query(&req);
    q.retain(|k, _| k == "workspace" || k == "id");
    let workspace = q
        .get("workspace")
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_owned();
    let e = read_or_answer!(dash, &req, &session, "/wiki/entry", Map::new(), q);
    let body = html! {
        p.meta {
            span { (words(s(&e, "category"))) }
            @if !s(&e, "project").is_empty() { span { (s(&e, "project")) } }
            span { "version " (e.get("version").and_then(Value::as_i64).unwrap_or(0)) }
            span { (s(&e, "status")) }
        }
        @if !s(&e, "summary").is_empty() { p lang="und" { strong { (s(&e, "summary")) } } }
        p.body lang="und" { (s(&e, "body")) }
        @let tags = list(&e, "tags");
        @if !tags.is_empty() {
            p.meta { @for t in tags { span.tag { (t.as_str().unwrap_or("")) } } }
        }
        h2 { "Sources" }
        ul {
            @for src in list(&e, "sources") {
                li { (s(src, "kind")) ": " (s(src, "ref")) @if !s(src, "title").is_empty() { " (" (s(src, "title")) ")" } }
            }
        }
        p { a href={(crate::PREFIX) "/knowledge?" (serde_urlencoded::to_string([("workspace", workspace.as_str())]).unwrap_or_default())} { "Back to the knowledge base" } }
    };
    page(&req, &dash, &session, s(&e, "title"), "/knowledge", body)
}
