//! The decisions inbox (`GET /decisions`): each kind shown as a person decides it, with its
//! moves (`POST /decisions/{id}/resolve|dismiss|choose`).

use super::{list, n, plain, query, read_or_answer, s, session_or_answer, words};
use crate::Dashboard;
use crate::chart::count;
use crate::layout::{act, form_fields, local_time, page};
use crate::session::Session;
use actix_web::{HttpRequest, HttpResponse, web};
use fleetdesk_api::ApiError;
use fleetdesk_api::input::{Nothing, Req};
use fleetdesk_kernel::wire::fields::IdPath;
use fleetdesk_personas::wire::PersonaViewOut;
use fleetdesk_personas::wire::personal::ViewPersona;
use maud::{Markup, html};
use serde_json::{Map, Value};
use std::collections::HashMap;
use uuid::Uuid;

/// What the people of the dashboard read times in: the organization works from Taipei.
pub(crate) const HOME_ZONE: &str = "Asia/Taipei";

pub(crate) async fn inbox(req: HttpRequest, dash: web::Data<Dashboard>) -> HttpResponse {
    let session = session_or_answer!(&req, &dash);
    let mut q = query(&req);
    q.retain(|k, _| k == "status" || k == "kind" || k == "cursor");
    let status = q
        .get("status")
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_owned();
    let answer = read_or_answer!(dash, &req, &session, "/decisions", Map::new(), q);
    let back = req
        .uri()
        .path_and_query()
        .map(|p| p.as_str().to_owned())
        .unwrap_or_default();
    let decisions = list(&answer, "decisions");
    let facts = match persona_facts(&dash, &req, &session, decisions).await {
        Ok(f) => f,
        Err(e) => return crate::layout::error_page(&e),
    };
    let ads = match ad_views(&dash, &req, &session, decisions).await {
        Ok(a) => a,
        Err(e) => return crate::layout::error_page(&e),
    };
    let body = html! {
        form.filters method="get" {
            label { "Status"
                select name="status" {
                    option value="" selected[status.is_empty()] { "Waiting (open and handled)" }
                    @for st in ["open", "handled", "resolved", "dismissed", "all"] {
                        option value=(st) selected[status == st] { (st) }
                    }
                }
            }
            button type="submit" { "Show" }
        }
        @if decisions.is_empty() { p.muted { "No decision waits." } }
        div.cards {
            @for d in decisions { (decision(&session, d, &back, &facts, &ads)) }
        }
        @if let Some(next) = answer.get("next_cursor").and_then(Value::as_str) {
            p { a href={ "?" (serde_urlencoded::to_string([("status", status.as_str()), ("cursor", next)]).unwrap_or_default()) } { "Next page" } }
        }
    };
    page(&req, &dash, &session, "Decisions", "/decisions", body)
}

fn decision(
    session: &Session,
    d: &Value,
    back: &str,
    facts: &HashMap<String, PersonaViewOut>,
    ads: &HashMap<String, Value>,
) -> Markup {
    let id = s(d, "id");
    let kind = s(d, "kind");
    let status = s(d, "status");
    let waiting = matches!(status, "open" | "handled");
    let detail = d.get("detail").cloned().unwrap_or(Value::Null);
    html! {
        article.card data-card tabindex="-1" aria-labelledby={"decision-" (id)} {
            h2 #{"decision-" (id)} { (s(d, "title")) }
            p.meta {
                span.tag.warn { (words(kind)) }
                span.tag[!waiting] { (status) }
                span { (d.pointer("/workspace/name").and_then(Value::as_str).unwrap_or("")) }
                @if let Some(p) = d.get("persona").filter(|p| !p.is_null()) { span { "Persona " (s(p, "name")) } }
                @if let Some(a) = d.get("account").filter(|a| !a.is_null()) { span { (s(a, "code")) " (" (s(a, "platform")) ")" } }
                span { "Opened by " (plain(d.pointer("/opened_by/name").unwrap_or(&Value::Null))) }
                span { (local_time(s(d, "created_at"), HOME_ZONE)) }
            }
            @if let Some(q) = d.get("question").and_then(Value::as_str) { p { strong { (q) } } }
            (details(kind, &detail))
            @if let Some(persona) = d.pointer("/persona/id").and_then(Value::as_str).and_then(|p| facts.get(p)) {
                @if ABOUT_FACTS.contains(&kind) {
                    details open[kind == "contradiction"] {
                        summary { "The persona's facts" }
                        (crate::pages::personas::facts(persona))
                    }
                } @else if kind == "persona_new" {
                    (crate::pages::personas::fields(persona))
                }
            }
            @if kind == "ad_change" { (ad_numbers(d, &detail, ads)) }
            @if let Some(result) = d.get("result").and_then(Value::as_str) {
                p { "The agent reported: " (result) }
            }
            @let notes = list(d, "notes");
            @if !notes.is_empty() {
                ul { @for note in notes { li { (s(note, "by")) ": " (s(note, "text")) } } }
            }
            @if waiting && session.agency() {
                (moves(session, d, kind, &detail, back))
            }
        }
    }
}

/// The kinds a person decides next to the persona's facts.
const ABOUT_FACTS: &[&str] = &["fact_proposal", "contradiction"];

/// The kinds that read the persona they are about: its facts, or a new persona's fields.
const ABOUT_PERSONA: &[&str] = &["fact_proposal", "contradiction", "persona_new"];

/// At most this many personas, and workspaces' ads, are read for one page.
const PERSONAS_READ: usize = 10;

/// The personas the page's fact, contradiction and new-persona decisions are about
/// (`GET /personas/{id}` each, at most [`PERSONAS_READ`], one after another: each read runs
/// its own statements at once), by persona id. A persona the person may not read is left out
/// (its decisions show without it); a failure of the service is the page's.
async fn persona_facts(
    dash: &Dashboard,
    req: &HttpRequest,
    session: &Session,
    decisions: &[Value],
) -> Result<HashMap<String, PersonaViewOut>, ApiError> {
    let mut ids: Vec<Uuid> = decisions
        .iter()
        .filter(|d| ABOUT_PERSONA.contains(&s(d, "kind")))
        .filter_map(|d| d.pointer("/persona/id").and_then(Value::as_str))
        .filter_map(|id| id.parse().ok())
        .collect();
    ids.sort();
    ids.dedup();
    ids.truncate(PERSONAS_READ);
    let mut found = HashMap::new();
    for id in ids {
        let input = Req {
            path: IdPath { id },
            query: Nothing,
            body: Nothing,
        };
        if let Some(v) = kept(dash.call::<ViewPersona>(req, session, input).await)? {
            found.insert(id.to_string(), v);
        }
    }
    Ok(found)
}

/// A read's answer; `None` for a refusal the page does without, the error for a failure of
/// the service.
fn kept<T>(answer: Result<T, ApiError>) -> Result<Option<T>, ApiError> {
    match answer {
        Ok(v) => Ok(Some(v)),
        Err(e) if e.status() >= 500 => Err(e),
        Err(_) => Ok(None),
    }
}

/// The ads of the workspaces the page's ad changes are of (`GET /ads`, at most
/// [`PERSONAS_READ`] workspaces, one after another), by workspace id; a workspace whose ads
/// the person may not read is left out.
async fn ad_views(
    dash: &Dashboard,
    req: &HttpRequest,
    session: &Session,
    decisions: &[Value],
) -> Result<HashMap<String, Value>, ApiError> {
    let mut ids: Vec<&str> = decisions
        .iter()
        .filter(|d| s(d, "kind") == "ad_change")
        .filter_map(|d| d.pointer("/workspace/id").and_then(Value::as_str))
        .collect();
    ids.sort_unstable();
    ids.dedup();
    ids.truncate(PERSONAS_READ);
    let mut views = HashMap::new();
    for id in ids {
        let mut q = Map::new();
        q.insert("workspace".into(), Value::String(id.to_owned()));
        if let Some(v) = kept(dash.read(req, session, "/ads", Map::new(), q).await)? {
            views.insert(id.to_owned(), v);
        }
    }
    Ok(views)
}

/// What a person weighs an ad change against: the month's spend against the cap, the ad when
/// the service lists it, and the campaigns of its ad account over the last 30 days.
fn ad_numbers(d: &Value, detail: &Value, ads: &HashMap<String, Value>) -> Markup {
    let account = s(detail, "ad_account_id");
    let ad_id = s(detail, "ad_id");
    let view = d
        .pointer("/workspace/id")
        .and_then(Value::as_str)
        .and_then(|w| ads.get(w));
    let Some(view) = view else {
        return html! { p.muted { "The ad's numbers are not synced yet." } };
    };
    let ad = list(view, "ads").iter().find(|a| s(a, "id") == ad_id);
    let account = if account.is_empty() {
        ad.map(|a| s(a, "ad_account_id")).unwrap_or("")
    } else {
        account
    };
    // The ad account's campaigns; every campaign of the workspace when the change names none.
    let campaigns: Vec<&Value> = list(view, "campaigns")
        .iter()
        .filter(|c| account.is_empty() || s(c, "ad_account_id") == account)
        .collect();
    html! {
        @if let Some(cap) = view.get("cap").filter(|c| !c.is_null()) {
            p.meta {
                span { "This month: " strong { (count(n(cap, "spent_this_month"))) " of " (count(n(cap, "monthly_limit"))) " " (s(cap, "currency")) } " spent" }
            }
        }
        @if let Some(ad) = ad {
            p.meta { span { "The ad: " (s(ad, "status")) } span { "budget " (plain(ad.pointer("/budget/amount").unwrap_or(&Value::Null))) " (" (plain(ad.pointer("/budget/type").unwrap_or(&Value::Null))) ")" } }
        }
        @if !campaigns.is_empty() {
            div.scroll tabindex="0" {
                table {
                    caption.muted { "The campaigns, last 30 days" }
                    thead { tr { th { "Campaign" } th { "Status" } th.num { "Spend" } th.num { "Impressions" } th.num { "Clicks" } th.num { "CTR %" } th.num { "CPC" } } }
                    tbody {
                        @for c in campaigns {
                            tr {
                                td lang="und" { (s(c, "name")) }
                                td { (s(c, "status")) }
                                td.num { (count(n(c, "spend"))) }
                                td.num { (count(n(c, "impressions"))) }
                                td.num { (count(n(c, "clicks"))) }
                                td.num { (two_places(c.get("ctr"))) }
                                td.num { (two_places(c.get("cpc"))) }
                            }
                        }
                    }
                }
            }
        }
    }
}

/// A ratio with two decimals ("—" when there is none).
fn two_places(v: Option<&Value>) -> String {
    v.and_then(Value::as_f64)
        .map_or_else(|| "—".to_owned(), |x| format!("{x:.2}"))
}

/// What the decision is about, as its kind shows it.
fn details(kind: &str, detail: &Value) -> Markup {
    if kind == "persona_images" {
        return image_grid(list(detail, "images"));
    }
    let Some(fields) = detail.as_object() else {
        return html! {};
    };
    html! {
        dl.facts {
            @for (key, value) in fields {
                @if !value.is_null() && value.as_array().is_none_or(|a| !a.is_empty()) && !key.ends_with("_id") && key != "images_expire_in_seconds" {
                    dt { (words(key)) }
                    dd lang="und" { (plain(value)) }
                }
            }
        }
    }
}

/// The forms of a waiting decision: its options, or resolve and dismiss; persona images as
/// a grid to approve some or all, with an avatar.
fn moves(session: &Session, d: &Value, kind: &str, detail: &Value, back: &str) -> Markup {
    let id = s(d, "id");
    let options = list(d, "options");
    let note = html! {
        label.inline-field { "Note (optional)" input type="text" name="note" maxlength="1000"; }
    };
    if kind == "persona_images" {
        let images = list(detail, "images");
        let avatars: Vec<&Value> = images
            .iter()
            .filter(|i| s(i, "category") == "avatar" && i.get("url").is_some())
            .collect();
        return html! {
            form method="post" action=(act(&format!("/decisions/{id}/choose"))) {
                (form_fields(session, back, "The chosen images are approved; the rest refused."))
                input type="hidden" name="option" value="approve_some";
                fieldset {
                    legend { "Approve some" }
                    label { input type="checkbox" data-check-all; " All" }
                    @for img in images {
                        @if img.get("url").is_some() {
                            label {
                                input type="checkbox" name="image_ids[]" value=(s(img, "id"));
                                " " (words(s(img, "category")))
                                @if !s(img, "caption").is_empty() { ": " (s(img, "caption")) }
                            }
                        }
                    }
                    (avatar_choice(&avatars))
                    (note)
                    button.primary type="submit" { "Approve the chosen" }
                }
            }
            div.actions {
                form method="post" action=(act(&format!("/decisions/{id}/resolve"))) {
                    (form_fields(session, back, "Every image is approved."))
                    (avatar_choice(&avatars))
                    button type="submit" { "Approve all" }
                }
                form method="post" action=(act(&format!("/decisions/{id}/dismiss"))) data-confirm="Refuse every image of this decision?" {
                    (form_fields(session, back, "Every image is refused."))
                    button.danger type="submit" { "Refuse all" }
                }
            }
        };
    }
    if !options.is_empty() {
        return html! {
            div.actions {
                @for option in options {
                    @let option = option.as_str().unwrap_or("");
                    form method="post" action=(act(&format!("/decisions/{id}/choose"))) {
                        (form_fields(session, back, &format!("Chosen: {}.", words(option))))
                        input type="hidden" name="option" value=(option);
                        button type="submit" { (words(option)) }
                    }
                }
            }
        };
    }
    html! {
        div.actions {
            form method="post" action=(act(&format!("/decisions/{id}/resolve"))) {
                (form_fields(session, back, "Resolved."))
                (note)
                button.primary type="submit" { "Resolve" }
            }
            form method="post" action=(act(&format!("/decisions/{id}/dismiss"))) {
                (form_fields(session, back, "Dismissed."))
                button.danger type="submit" { "Dismiss" }
            }
        }
    }
}

fn avatar_choice(avatars: &[&Value]) -> Markup {
    html! {
        @if !avatars.is_empty() {
            label { "New avatar (optional)"
                select name="set_avatar" {
                    option value="" { "Keep the current avatar" }
                    @for a in avatars {
                        option value=(s(a, "id")) { (if s(a, "caption").is_empty() { s(a, "id") } else { s(a, "caption") }) }
                    }
                }
            }
        }
    }
}

/// The images of a persona_images decision, as its free-form `detail` lists them: each
/// thumbnail (none for a refused image) with its category, caption and lock.
fn image_grid(images: &[Value]) -> Markup {
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
