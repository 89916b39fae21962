//! The review queue (`GET /review`) and one post with its review record (`GET /posts/{id}`).
//! Each card's forms move the post (`POST /posts/{id}/transition`).

use super::{call_or_answer, cursor, input_or_answer, session_or_answer, words};
use crate::Dashboard;
use crate::act::action_url;
use crate::diff::side_by_side;
use crate::layout::{form_fields, local, page};
use crate::session::Session;
use actix_web::{HttpRequest, HttpResponse, web};
use fleetdesk_kernel::media::MediaKind;
use fleetdesk_kernel::wire::fields::IdPath;
use fleetdesk_posts::post::PostStatus;
use fleetdesk_posts::review::ReviewTarget;
use fleetdesk_posts::wire::personal::{GetPost, ReviewPost, ReviewQueue};
use fleetdesk_posts::wire::{PostOut, Stage};
use maud::{Markup, html};

/// A stage as the page's filter names it.
fn stage_text(stage: Option<Stage>) -> &'static str {
    match stage {
        None => "",
        Some(Stage::InternalReview) => "internal_review",
        Some(Stage::ClientReview) => "client_review",
    }
}

pub(crate) async fn queue(req: HttpRequest, dash: web::Data<Dashboard>) -> HttpResponse {
    let session = session_or_answer!(&req, &dash);
    let input = input_or_answer!(dash, &req, &session, ReviewQueue, &["stage", "cursor"]);
    let stage = stage_text(input.query.stage);
    let answer = call_or_answer!(dash, &req, &session, ReviewQueue, input);
    let back = match req.uri().path_and_query() {
        Some(pq) => pq.as_str().to_owned(),
        None => format!("{}/review", crate::PREFIX),
    };
    let posts = &answer.posts;
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
        @if let Some(next) = &answer.next_cursor {
            p { a href={ "?" (serde_urlencoded::to_string([("stage", stage), ("cursor", cursor(next).as_str())]).unwrap_or_default()) } { "Next page" } }
        }
    };
    page(&req, &dash, &session, "Review", "/review", body)
}

pub(crate) async fn post(req: HttpRequest, dash: web::Data<Dashboard>) -> HttpResponse {
    let session = session_or_answer!(&req, &dash);
    let input = input_or_answer!(dash, &req, &session, GetPost, &[]);
    let answer = call_or_answer!(dash, &req, &session, GetPost, input);
    let post = &answer.post;
    let back = req.uri().path().to_owned();
    let body = html! {
        div.cards { (card(&session, post, &back, true)) }
        @if let Some(d) = &post.published_differs {
            h2 { "Published otherwise than approved" }
            p.meta {
                span.tag.bad { (words(d.reason.as_str())) }
                span { "reported " (local(d.reported_at, &post.timezone)) }
            }
            (side_by_side(d.approved_body.as_deref(), &d.published_body))
        }
        @if let Some(pin) = &post.approved {
            details {
                summary { "What was approved" }
                dl.facts {
                    dt { "Body fingerprint" } dd { code { (pin.fingerprint) } }
                    dt { "Media (in order)" } dd {
                        @if pin.media.is_empty() { "none" }
                        @for m in &pin.media { code { (m) } br; }
                    }
                    dt { "Characters" } dd { (pin.characters.join(", ")) }
                }
            }
        }
        h2 { "Review record" }
        @let record = &answer.record;
        @if record.is_empty() { p.muted { "Nothing recorded yet." } }
        div.scroll tabindex="0" {
            table {
                thead { tr { th { "When" } th { "What" } th { "Who" } th { "Comment or reason" } } }
                tbody {
                    @for entry in record {
                        tr {
                            td { (local(entry.at, &post.timezone)) }
                            td { (words(&entry.action)) }
                            td { (entry.actor.name) }
                            td { (entry.reason.as_deref().unwrap_or("")) }
                        }
                    }
                }
            }
        }
    };
    page(&req, &dash, &session, "Post", "/review", body)
}

/// One post: where and when it goes, its text and media, and the moves the person may make.
fn card(session: &Session, post: &PostOut, back: &str, full: bool) -> Markup {
    let id = post.id;
    let status = post.status;
    let zone = post.timezone.as_str();
    let chars = post.body.chars().count();
    let movable = session.reviews()
        && matches!(
            status,
            PostStatus::InternalReview | PostStatus::ClientReview
        );
    let transition = action_url::<ReviewPost>(&IdPath { id });
    let topic = post.topic.as_deref().unwrap_or("");
    html! {
        article.card data-card tabindex="-1" aria-labelledby={"post-" (id)} {
            h2 #{"post-" (id)} {
                (post.code) " · " (post.persona)
                @if !topic.is_empty() { " · " (topic) }
            }
            p.meta {
                span.tag.warn { (words(status.as_str())) }
                span { (post.platform.as_str()) }
                span { (chars) " characters" }
                @if let Some(at) = post.planned_at {
                    span { "Planned " (local(at, zone)) }
                } @else {
                    span { "No planned time" }
                }
                @if post.sponsored {
                    span.tag { "sponsored" }
                }
            }
            @if !post.characters.is_empty() {
                p.meta { "Characters: " (post.characters.iter().map(|c| c.name.as_str()).collect::<Vec<_>>().join(", ")) }
            }
            p.body lang="und" { (post.body) }
            @if !post.media.is_empty() {
                div.media {
                    @for m in &post.media {
                        @let caption = m.caption.as_deref().unwrap_or("");
                        @if m.kind == MediaKind::Video {
                            video controls preload="none" poster=(m.thumb_url) src=(m.url)
                                aria-label={"Video" @if !caption.is_empty() { ": " (caption) }} {}
                        } @else {
                            a href=(m.url) {
                                img src=(m.thumb_url) loading="lazy"
                                    alt=(if caption.is_empty() { "Image of the post" } else { caption });
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
                        input type="hidden" name="to" value=(target(ReviewTarget::Approved));
                        button.primary type="submit" data-key="approve" { "Approve" }
                    }
                    @if status == PostStatus::InternalReview && session.agency() {
                        form method="post" action=(transition) {
                            (form_fields(session, back, "Moved to client review."))
                            input type="hidden" name="to" value=(target(ReviewTarget::ClientReview));
                            button type="submit" { "To client review" }
                        }
                    }
                }
                (with_comment(session, back, &transition, Move {
                    to: ReviewTarget::SentBack, done: "Sent back.", label: "Send back with a comment",
                    key: "send-back", button: "Send back",
                }))
                (with_comment(session, back, &transition, Move {
                    to: ReviewTarget::RewriteRequested, done: "Rewrite requested.",
                    label: "Ask for a rewrite: the instruction", key: "rewrite",
                    button: "Request rewrite",
                }))
            }
        }
    }
}

/// A review move's `to` as the form sends it: the status it moves the post to.
fn target(to: ReviewTarget) -> &'static str {
    to.status().as_str()
}

/// A move that needs a comment: its target, what to say when done, the field's label, its
/// keyboard shortcut's name and the button.
struct Move {
    to: ReviewTarget,
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
                input type="hidden" name="to" value=(target(m.to));
                label.inline-field { (m.label)
                    input type="text" name="comment" required maxlength="2000" data-key=(m.key);
                }
                button type="submit" { (m.button) }
            }
        }
    }
}
