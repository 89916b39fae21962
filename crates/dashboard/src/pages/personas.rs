//! Personas (`GET /personas`, `GET /personas/{id}`): the organization's personas with their
//! accounts, and one persona's facts, speech rules, images and cast.

use super::{id_path, list, plain, query, read_or_answer, s, session_or_answer, words};
use crate::Dashboard;
use crate::layout::page;
use actix_web::{HttpRequest, HttpResponse, web};
use maud::{Markup, html};
use serde_json::{Map, Value};

pub(crate) async fn list_page(req: HttpRequest, dash: web::Data<Dashboard>) -> HttpResponse {
    let session = session_or_answer!(&req, &dash);
    let mut q = query(&req);
    q.retain(|k, _| k == "cursor");
    let answer = read_or_answer!(dash, &req, &session, "/personas", Map::new(), q);
    let personas = list(&answer, "personas");
    let body = html! {
        @if personas.is_empty() { p.muted { "No persona yet." } }
        div.scroll tabindex="0" {
            table {
                thead { tr { th { "Persona" } th { "Workspace" } th { "Project" } th { "Agent" } th { "Accounts" } th { "Status" } } }
                tbody {
                    @for p in personas {
                        tr {
                            td { a href={(crate::PREFIX) "/personas/" (s(p, "id"))} { (s(p, "name")) } }
                            td { (p.pointer("/workspace/name").and_then(Value::as_str).unwrap_or("")) }
                            td { (s(p, "project")) }
                            td { (s(p, "agent")) }
                            td { (accounts(p)) }
                            td {
                                (s(p, "status"))
                                @if p.get("setup_complete").and_then(Value::as_bool) == Some(false) { " " span.tag.warn { "setup incomplete" } }
                            }
                        }
                    }
                }
            }
        }
        @if let Some(next) = answer.get("next_cursor").and_then(Value::as_str) {
            p { a href={ "?" (serde_urlencoded::to_string([("cursor", next)]).unwrap_or_default()) } { "Next page" } }
        }
    };
    page(&req, &dash, &session, "Personas", "/personas", body)
}

fn accounts(p: &Value) -> Markup {
    html! {
        @for (i, a) in list(p, "accounts").iter().enumerate() {
            @if i > 0 { ", " }
            (s(a, "code")) " "
            span.muted { (s(a, "platform")) }
            @if s(a, "state") != "active" { " " span.tag.warn { (s(a, "state")) } }
        }
    }
}

pub(crate) async fn persona(
    req: HttpRequest,
    dash: web::Data<Dashboard>,
    id: web::Path<String>,
) -> HttpResponse {
    let session = session_or_answer!(&req, &dash);
    let v = read_or_answer!(
        dash,
        &req,
        &session,
        "/personas/{id}",
        id_path(id),
        Map::new()
    );
    let p = v.get("persona").cloned().unwrap_or(Value::Null);
    let body = html! {
        p.meta {
            span { (p.pointer("/workspace/name").and_then(Value::as_str).unwrap_or("")) " · " (s(&p, "project")) }
            span { "Agent " (s(&p, "agent")) }
            span { (s(&p, "status")) }
        }
        p { (accounts(&p)) }
        (fields(&v))
        h2 { "Facts" }
        (facts(&v))
        h2 { "Speech rules" }
        @let rules = list(&v, "speech_rules");
        @if rules.is_empty() { p.muted { "None." } }
        ul { @for r in rules { li lang="und" { (plain(r)) } } }
        @let forbidden = list(&v, "forbidden");
        @if !forbidden.is_empty() {
            h2 { "Never" }
            ul { @for f in forbidden { li lang="und" { (plain(f)) } } }
        }
        h2 { "Images" }
        @let images = list(&v, "images");
        @if images.is_empty() { p.muted { "No image yet." } }
        (image_grid(images))
        h2 { "Cast" }
        @let cast = list(&v, "cast");
        @if cast.is_empty() { p.muted { "No character." } }
        ul {
            @for c in cast {
                li { strong { (s(c, "name")) } " (" code { (s(c, "code")) } ")"
                    @if !s(c, "summary").is_empty() { ": " (s(c, "summary")) }
                    " · " (list(c, "images").len()) " images"
                }
            }
        }
    };
    page(&req, &dash, &session, s(&p, "name"), "/personas", body)
}

/// A persona's own fields (bio, voice, track, background), as a new persona is confirmed on
/// them.
pub(crate) fn fields(v: &Value) -> Markup {
    html! {
        dl.facts {
            dt { "project" } dd { (v.pointer("/persona/project").and_then(Value::as_str).unwrap_or("")) }
            @for key in ["bio", "voice", "track", "background"] {
                dt { (key) }
                dd lang="und" {
                    @match v.get(key).and_then(Value::as_str) {
                        Some(text) => (text),
                        None => span.muted { "none yet" },
                    }
                }
            }
        }
    }
}

/// A persona's facts: decided ones, then the drafts waiting for a person.
pub(crate) fn facts(v: &Value) -> Markup {
    let facts = list(v, "facts");
    html! {
        @if facts.is_empty() { p.muted { "No fact yet." } }
        @else {
            div.scroll tabindex="0" {
                table {
                    thead { tr { th { "Category" } th { "Label" } th { "Value" } th { "Status" } } }
                    tbody {
                        @for f in facts {
                            tr {
                                td { (words(s(f, "category"))) }
                                td lang="und" { (s(f, "label")) }
                                td lang="und" { (s(f, "value")) }
                                td { @if s(f, "status") == "draft" { span.tag.warn { "draft" } } @else { (s(f, "status")) } }
                            }
                        }
                    }
                }
            }
        }
    }
}

/// Persona images as a grid: each thumbnail (none for a refused image) with its category,
/// caption and lock.
pub(crate) fn image_grid(images: &[Value]) -> Markup {
    html! {
        div.grid-images {
            @for img in images {
                figure {
                    @if let Some(thumb) = img.get("thumb_url").and_then(Value::as_str) {
                        img src=(thumb) loading="lazy" alt={(words(s(img, "category"))) " image" @if !s(img, "caption").is_empty() { ": " (s(img, "caption")) }};
                    }
                    figcaption {
                        (words(s(img, "category")))
                        @if !s(img, "caption").is_empty() { " · " (s(img, "caption")) }
                        " · " span.muted { (s(img, "lock")) }
                    }
                }
            }
        }
    }
}
