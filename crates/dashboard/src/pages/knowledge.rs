//! The knowledge base of a workspace: browse (`GET /wiki`), search (`GET /wiki/search`, Chinese
//! in either script) and read one entry (`GET /wiki/entry`).

use super::{call_or_answer, input_or_answer, session_or_answer, words};
use crate::Dashboard;
use crate::layout::page;
use crate::pages::tasks::today_input;
use actix_web::{HttpRequest, HttpResponse, web};
use fleetdesk_api::ops::today::GetToday;
use fleetdesk_api::today::Today;
use fleetdesk_kernel::wire::fields::Int;
use fleetdesk_wiki::entry::Category;
use fleetdesk_wiki::wire::personal::{GetWikiEntry, SearchWiki, WikiIndex};
use fleetdesk_wiki::wire::{WikiIndexPage, WikiSearchReply};
use maud::{Markup, html};
use uuid::Uuid;

/// What the page's own address asks (the last value of a field given twice; an empty one is
/// none): the workspace to read and the search as typed. The index's `cursor` goes to the
/// read as it is.
#[derive(Debug, Default)]
struct Asked {
    workspace: Option<String>,
    q: Option<String>,
}

impl Asked {
    /// What `req`'s address asks.
    fn of(req: &HttpRequest) -> Asked {
        let mut asked = Asked::default();
        let fields: Vec<(String, String)> =
            serde_urlencoded::from_str(req.query_string()).unwrap_or_default();
        for (name, value) in fields.into_iter().filter(|(_, v)| !v.is_empty()) {
            match name.as_str() {
                "workspace" => asked.workspace = Some(value),
                "q" => asked.q = Some(value),
                _ => {}
            }
        }
        asked
    }
}

/// The workspaces the person may pick, from `GET /today`, and the one picked (the first when
/// none or an unknown one is asked).
fn workspaces(today: &Today, asked: Option<&str>) -> (Vec<(String, String)>, Option<String>) {
    let all: Vec<(String, String)> = (today.workspaces.iter())
        .map(|w| (w.id.to_string(), w.name.clone()))
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

/// What the page lists: the index, or the search's hits.
enum Found {
    Index(WikiIndexPage),
    Hits(WikiSearchReply),
}

/// An entry as the list shows it: an index head with its summary, or a search hit with its
/// snippet.
struct Listed<'a> {
    id: Uuid,
    title: &'a str,
    category: Category,
    project: Option<&'a str>,
    /// The summary (none when empty) or the snippet.
    text: Option<&'a str>,
    /// A hit's words of the query that it has, as the query wrote them.
    matched: &'a [String],
}

pub(crate) async fn browse(req: HttpRequest, dash: web::Data<Dashboard>) -> HttpResponse {
    let session = session_or_answer!(&req, &dash);
    let asked = Asked::of(&req);
    let today = call_or_answer!(dash, &req, &session, GetToday, today_input());
    let (all, picked) = workspaces(&today, asked.workspace.as_deref());
    let q = asked.q.as_deref().unwrap_or("").trim().to_owned();
    let Some(workspace) = picked else {
        let body = html! { p.muted { "No workspace yet." } };
        return page(&req, &dash, &session, "Knowledge base", "/knowledge", body);
    };
    let searching = !q.is_empty();
    let found = if searching {
        let set = [("workspace", workspace.as_str()), ("q", q.as_str())];
        let mut input = input_or_answer!(dash, &req, &session, SearchWiki, &[], &set);
        input.query.limit = Some(Int(30));
        Found::Hits(call_or_answer!(dash, &req, &session, SearchWiki, input))
    } else {
        let set = [("workspace", workspace.as_str())];
        let input = input_or_answer!(dash, &req, &session, WikiIndex, &["cursor"], &set);
        Found::Index(call_or_answer!(dash, &req, &session, WikiIndex, input))
    };
    let entries: Vec<Listed> = match &found {
        Found::Index(index) => (index.entries.iter())
            .map(|e| Listed {
                id: e.id,
                title: &e.title,
                category: e.category,
                project: e.project.as_deref(),
                text: Some(e.summary.as_str()).filter(|s| !s.is_empty()),
                matched: &[],
            })
            .collect(),
        Found::Hits(hits) => (hits.results.iter())
            .map(|h| Listed {
                id: h.id,
                title: &h.title,
                category: h.category,
                project: h.project.as_deref(),
                text: Some(&h.snippet),
                matched: &h.matched,
            })
            .collect(),
    };
    let entry_link = |id: Uuid| {
        format!(
            "{}/knowledge/entry?{}",
            crate::PREFIX,
            serde_urlencoded::to_string([("workspace", workspace.clone()), ("id", id.to_string())])
                .unwrap_or_default()
        )
    };
    let next = match &found {
        Found::Index(index) => index.next_cursor.as_ref(),
        Found::Hits(_) => None,
    };
    let body = html! {
        (picker(&all, Some(&workspace), &q))
        @if entries.is_empty() {
            p.muted { @if searching { "Nothing found." } @else { "No entry yet." } }
        }
        ul.entries {
            @for e in &entries {
                li {
                    a href=(entry_link(e.id)) lang="und" { (e.title) }
                    " " span.muted { (words(e.category.as_str())) @if let Some(project) = e.project.filter(|p| !p.is_empty()) { " · " (project) } }
                    @if let Some(text) = e.text {
                        p.body lang="und" { (text) }
                    }
                    @if !e.matched.is_empty() {
                        p.muted.matched {
                            "Matched: "
                            @for (i, w) in e.matched.iter().enumerate() {
                                @if i > 0 { ", " }
                                mark lang="und" { (w) }
                            }
                        }
                    }
                }
            }
        }
        @if searching {
            p.muted.attribution { (fleetdesk_wiki::search::DICTIONARY_ATTRIBUTION) }
        }
        @if let Some(next) = next {
            p { a href={ "?" (serde_urlencoded::to_string([("workspace", workspace.clone()), ("cursor", super::cursor(next))]).unwrap_or_default()) } { "Next page" } }
        }
    };
    page(&req, &dash, &session, "Knowledge base", "/knowledge", body)
}

pub(crate) async fn entry(req: HttpRequest, dash: web::Data<Dashboard>) -> HttpResponse {
    let session = session_or_answer!(&req, &dash);
    let input = input_or_answer!(dash, &req, &session, GetWikiEntry, &["workspace", "id"]);
    let workspace = input.query.workspace.to_string();
    let e = call_or_answer!(dash, &req, &session, GetWikiEntry, input);
    let project = e.project.as_deref().unwrap_or("");
    let body = html! {
        p.meta {
            span { (words(e.category.as_str())) }
            @if !project.is_empty() { span { (project) } }
            span { "version " (e.version) }
            span { (e.status.as_str()) }
        }
        @if !e.summary.is_empty() { p lang="und" { strong { (e.summary) } } }
        p.body lang="und" { (e.body) }
        @if !e.tags.is_empty() {
            p.meta { @for t in &e.tags { span.tag { (t) } } }
        }
        h2 { "Sources" }
        ul {
            @for src in &e.sources {
                @let title = src.title.as_deref().unwrap_or("");
                li { (src.kind.as_str()) ": " (src.reference) @if !title.is_empty() { " (" (title) ")" } }
            }
        }
        p { a href={(crate::PREFIX) "/knowledge?" (serde_urlencoded::to_string([("workspace", workspace.as_str())]).unwrap_or_default())} { "Back to the knowledge base" } }
    };
    page(&req, &dash, &session, &e.title, "/knowledge", body)
}
