//! Personas (`GET /personas`, `GET /personas/{id}`): the organization's personas with their
//! accounts, and one persona's facts, speech rules, images and cast.

use super::{call_or_answer, cursor, input_or_answer, session_or_answer, words};
use crate::Dashboard;
use crate::layout::page;
use actix_web::{HttpRequest, HttpResponse, web};
use fleetdesk_personas::ports::PersonaSummary;
use fleetdesk_personas::wire::personal::{ListPersonas, ViewPersona};
use fleetdesk_personas::wire::{PersonImageOut, PersonaViewOut};
use maud::{Markup, html};

pub(crate) async fn list_page(req: HttpRequest, dash: web::Data<Dashboard>) -> HttpResponse {
    let session = session_or_answer!(&req, &dash);
    let input = input_or_answer!(dash, &req, &session, ListPersonas, &["cursor"]);
    let answer = call_or_answer!(dash, &req, &session, ListPersonas, input);
    let personas = &answer.personas;
    let body = html! {
        @if personas.is_empty() { p.muted { "No persona yet." } }
        div.scroll tabindex="0" {
            table {
                thead { tr { th { "Persona" } th { "Workspace" } th { "Project" } th { "Agent" } th { "Accounts" } th { "Status" } } }
                tbody {
                    @for p in personas {
                        tr {
                            td { a href={(crate::PREFIX) "/personas/" (p.id)} { (p.name) } }
                            td { (p.workspace.name) }
                            td { (p.project) }
                            td { (p.agent.as_deref().unwrap_or("")) }
                            td { (accounts(p)) }
                            td {
                                (p.status.as_str())
                                @if !p.setup_complete { " " span.tag.warn { "setup incomplete" } }
                            }
                        }
                    }
                }
            }
        }
        @if let Some(next) = &answer.next_cursor {
            p { a href={ "?" (serde_urlencoded::to_string([("cursor", cursor(next))]).unwrap_or_default()) } { "Next page" } }
        }
    };
    page(&req, &dash, &session, "Personas", "/personas", body)
}

fn accounts(p: &PersonaSummary) -> Markup {
    html! {
        @for (i, a) in p.accounts.iter().enumerate() {
            @if i > 0 { ", " }
            (a.code) " "
            span.muted { (a.platform.as_str()) }
            @if a.state != "active" { " " span.tag.warn { (a.state) } }
        }
    }
}

pub(crate) async fn persona(req: HttpRequest, dash: web::Data<Dashboard>) -> HttpResponse {
    let session = session_or_answer!(&req, &dash);
    let input = input_or_answer!(dash, &req, &session, ViewPersona, &[]);
    let v = call_or_answer!(dash, &req, &session, ViewPersona, input);
    let p = &v.persona;
    let body = html! {
        p.meta {
            span { (p.workspace.name) " · " (p.project) }
            span { "Agent " (p.agent.as_deref().unwrap_or("")) }
            span { (p.status.as_str()) }
        }
        p { (accounts(p)) }
        (fields(&v))
        h2 { "Facts" }
        (facts(&v))
        h2 { "Speech rules" }
        @if v.speech_rules.is_empty() { p.muted { "None." } }
        ul { @for r in &v.speech_rules { li lang="und" { (r) } } }
        @if !v.forbidden.is_empty() {
            h2 { "Never" }
            ul { @for f in &v.forbidden { li lang="und" { (f) } } }
        }
        h2 { "Images" }
        @if v.images.is_empty() { p.muted { "No image yet." } }
        (image_grid(&v.images))
        h2 { "Cast" }
        @if v.cast.is_empty() { p.muted { "No character." } }
        ul {
            @for c in &v.cast {
                li { strong { (c.name) } " (" code { (c.code) } ")"
                    @if let Some(summary) = c.summary.as_deref().filter(|s| !s.is_empty()) { ": " (summary) }
                    " · " (c.images.len()) " images"
                }
            }
        }
    };
    page(&req, &dash, &session, &p.name, "/personas", body)
}

/// A persona's own fields (bio, voice, track, background), as a new persona is confirmed on
/// them.
pub(crate) fn fields(v: &PersonaViewOut) -> Markup {
    let own = [
        ("bio", &v.bio),
        ("voice", &v.voice),
        ("track", &v.track),
        ("background", &v.background),
    ];
    html! {
        dl.facts {
            dt { "project" } dd { (v.persona.project) }
            @for (key, value) in own {
                dt { (key) }
                dd lang="und" {
                    @match value {
                        Some(text) => (text),
                        None => span.muted { "none yet" },
                    }
                }
            }
        }
    }
}

/// A persona's facts: decided ones, then the drafts waiting for a person.
pub(crate) fn facts(v: &PersonaViewOut) -> Markup {
    html! {
        @if v.facts.is_empty() { p.muted { "No fact yet." } }
        @else {
            div.scroll tabindex="0" {
                table {
                    thead { tr { th { "Category" } th { "Label" } th { "Value" } th { "Status" } } }
                    tbody {
                        @for f in &v.facts {
                            tr {
                                td { (words(f.category.as_str())) }
                                td lang="und" { (f.label) }
                                td lang="und" { (f.value) }
                                td { @if f.status.as_str() == "draft" { span.tag.warn { "draft" } } @else { (f.status.as_str()) } }
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
pub(crate) fn image_grid(images: &[PersonImageOut]) -> Markup {
    html! {
        div.grid-images {
            @for img in images {
                @let category = words(img.category.as_str());
                @let caption = img.caption.as_deref().unwrap_or("");
                figure {
                    @if let Some(thumb) = &img.thumb_url {
                        img src=(thumb) loading="lazy" alt={(category) " image" @if !caption.is_empty() { ": " (caption) }};
                    }
                    figcaption {
                        (category)
                        @if !caption.is_empty() { " · " (caption) }
                        " · " span.muted { (img.lock.as_str()) }
                    }
                }
            }
        }
    }
}
