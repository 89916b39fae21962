//! The review queue (`GET /review`) and one post with its review record (`GET /posts/{id}`).
//! Each card's forms move the post (`POST /posts/{id}/transition`).

use super::{id_path, list, plain, query, read_or_answer, s, session_or_answer, words};
use crate::Dashboard;
use crate::layout::{act, form_fields, local_time, page};
use crate::session::Session;
use actix_web::{HttpRequest, HttpResponse, web};
use maud::{Markup, html};
use serde_json::{Map, Value};

pub(crate) async fn queue(req: HttpRequest, dash: web::Data<Dashboard>) -> HttpResponse {
    let session = session_or_answer!(&req, &dash);
    let mut q = query(&req);
    q.retain(|k, _| k == "stage" || k == "cursor");
    let stage = q
        .get("stage")
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_owned();
    let answer = read_or_answer!(dash, &req, &session, "/review", Map::new(), q);
    let back = match req.uri().path_and_query() {
        Some(pq) => pq.as_str().to_owned(),
        None => format!("{}/review", crate::PREFIX),
    };
    let posts = list(&answer, "posts");
    let body = html! {
        @if session.agency() {
            form.filters method="get" {
                label { "Stage"
                    select name="stage" {
                        option value="" selected[stage.is_empty()] { "Internal and client review" }
                        option value="internal_review" selected[stage == "internal_review"] { "Internal review" }
                        option value="client_review" selected[stage == "client_review"] { "Client review" }
                    }
                }
                button type="submit" { "Show" }
            }
        }
        @if session.reviews() && !posts.is_empty() {
            p.keys-help {
                "Keys: " kbd { "j" } " / " kbd { "k" } " next and previous post, "
                kbd { "a" } " approve, " kbd { "s" } " send back, " kbd { "r" } " ask for a rewrite."
            }
        }
        @if posts.is_empty() {
            p.muted { "Nothing waits for review." }
        }
        div.cards {
            @for post in posts {
                (card(&session, post, &back, false))
            }
        }
        @if let Some(next) = answer.get("next_cursor").and_then(Value::as_str) {
            p { a href={ "?" (serde_urlencoded::to_string([("stage", stage.as_str()), ("cursor", next)]).unwrap_or_default()) } { "Next page" } }
        }
    };
    page(&req, &dash, &session, "Review", "/review", body)
}

pub(crate) async fn post(
    req: HttpRequest,
    dash: web::Data<Dashboard>,
    id: web::Path<String>,
) -> HttpResponse {
    let session = session_or_answer!(&req, &dash);
    let answer = read_or_answer!(dash, &req, &session, "/posts/{id}", id_path(id), Map::new());
    let post = answer.get("post").cloned().unwrap_or(Value::Null);
    let back = req.uri().path().to_owned();
    let body = html! {
        div.cards { (card(&session, &post, &back, true)) }
        h2 { "Review record" }
        @let record = list(&answer, "record");
        @if record.is_empty() { p.muted { "Nothing recorded yet." } }
        div.scroll tabindex="0" {
            table {
                thead { tr { th { "When" } th { "What" } th { "Who" } th { "Comment or reason" } } }
                tbody {
                    @for entry in record {
                        tr {
                            td { (local_time(s(entry, "at"), s(&post, "timezone"))) }
                            td { (words(s(entry, "action"))) }
                            td { (plain(entry.pointer("/actor/name").unwrap_or(&Value::Null))) }
                            td { (s(entry, "reason")) }
                        }
                    }
                }
            }
        }
    };
    page(&req, &dash, &session, "Post", "/review", body)
}

/// One post: where and when it goes, its text and media, and the moves the person may make.
fn card(session: &Session, post: &Value, back: &str, full: bool) -> Markup {
    let id = s(post, "id");
    let status = s(post, "status");
    let zone = s(post, "timezone");
    let chars = s(post, "body").chars().count();
    let movable = session.reviews() && matches!(status, "internal_review" | "client_review");
    let transition = act(&format!("/posts/{id}/transition"));
    html! {
        article.card data-card tabindex="-1" aria-labelledby={"post-" (id)} {
            h2 #{"post-" (id)} {
                (s(post, "code")) " · " (s(post, "persona"))
                @if !s(post, "topic").is_empty() { " · " (s(post, "topic")) }
            }
            p.meta {
                span.tag.warn { (words(status)) }
                span { (s(post, "platform")) }
                span { (chars) " characters" }
                @if let Some(at) = post.get("planned_at").and_then(Value::as_str) {
                    span { "Planned " (local_time(at, zone)) }
                } @else {
                    span { "No planned time" }
                }
                @if post.get("sponsored").and_then(Value::as_bool) == Some(true) {
                    span.tag { "sponsored" }
                }
            }
            @let characters = list(post, "characters");
            @if !characters.is_empty() {
                p.meta { "Characters: " (characters.iter().map(|c| plain(c.get("name").unwrap_or(c))).collect::<Vec<_>>().join(", ")) }
            }
            p.body lang="und" { (s(post, "body")) }
            @let media = list(post, "media");
            @if !media.is_empty() {
                div.media {
                    @for m in media {
                        @if s(m, "kind") == "video" {
                            video controls preload="none" poster=(s(m, "thumb_url")) src=(s(m, "url"))
                                aria-label={"Video" @if !s(m, "caption").is_empty() { ": " (s(m, "caption")) }} {}
                        } @else {
                            a href=(s(m, "url")) {
                                img src=(s(m, "thumb_url")) loading="lazy"
                                    alt=(if s(m, "caption").is_empty() { "Image of the post" } else { s(m, "caption") });
                            }
                        }
                    }
                }
            }
            @if !full {
                p { a href={(crate::PREFIX) "/posts/" (id)} { "Review record" } }
            }
            @if movable {
                div.actions {
                    form method="post" action=(transition) {
                        (form_fields(session, back, "Approved."))
                        input type="hidden" name="to" value="approved";
                        button.primary type="submit" data-key="approve" { "Approve" }
                    }
                    @if status == "internal_review" && session.agency() {
                        form method="post" action=(transition) {
                            (form_fields(session, back, "Moved to client review."))
                            input type="hidden" name="to" value="client_review";
                            button type="submit" { "To client review" }
                        }
                    }
                }
                (with_comment(session, back, &transition, Move {
                    to: "sent_back", done: "Sent back.", label: "Send back with a comment",
                    key: "send-back", button: "Send back",
                }))
                (with_comment(session, back, &transition, Move {
                    to: "rewrite_requested", done: "Rewrite requested.",
                    label: "Ask for a rewrite: the instruction", key: "rewrite",
                    button: "Request rewrite",
                }))
            }
        }
    }
}

/// A move that needs a comment: its target status, what to say when done, the field's label,
/// its keyboard shortcut's name and the button.
struct Move {
    to: &'static str,
    done: &'static str,
    label: &'static str,
    key: &'static str,
    button: &'static str,
}

fn with_comment(session: &Session, back: &str, transition: &str, m: Move) -> Markup {
    html! {
        div.actions {
            form method="post" action=(transition) {
                (form_fields(session, back, m.done))
                input type="hidden" name="to" value=(m.to);
                label.inline-field { (m.label)
                    input type="text" name="comment" required maxlength="2000" data-key=(m.key);
                }
                button type="submit" { (m.button) }
            }
        }
    }
}
