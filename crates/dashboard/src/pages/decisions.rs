//! The decisions inbox (`GET /decisions`): each kind shown as a person decides it, with its
//! moves (`POST /decisions/{id}/resolve|dismiss|choose`).

use super::{call_or_answer, cursor, free_text, input_or_answer, plain, session_or_answer, words};
use crate::Dashboard;
use crate::act::action_url;
use crate::chart::count;
use crate::layout::{form_fields, local, page};
use crate::session::Session;
use actix_web::{HttpRequest, HttpResponse, web};
use fleetdesk_ads::wire::personal::ViewAds;
use fleetdesk_ads::wire::{AdsOut, PersonAdsQuery};
use fleetdesk_api::ApiError;
use fleetdesk_api::input::{Nothing, Req};
use fleetdesk_decisions::wire::personal::{ChooseIssue, DismissIssue, ListDecisions, ResolveIssue};
use fleetdesk_decisions::wire::{DecisionOut, DecisionStatusFilter};
use fleetdesk_decisions::{DecisionKind, DecisionStatus};
use fleetdesk_kernel::money::Cents;
use fleetdesk_kernel::wire::fields::IdPath;
use fleetdesk_personas::wire::PersonaViewOut;
use fleetdesk_personas::wire::personal::ViewPersona;
use maud::{Markup, html};
use serde_json::Value;
use std::collections::HashMap;
use uuid::Uuid;

/// What the people of the dashboard read times in: the organization works from Taipei.
pub(crate) const HOME_ZONE: &str = "Asia/Taipei";

/// The statuses the filter offers, after the default (open and handled).
const FILTERS: [DecisionStatusFilter; 5] = [
    DecisionStatusFilter::Open,
    DecisionStatusFilter::Handled,
    DecisionStatusFilter::Resolved,
    DecisionStatusFilter::Dismissed,
    DecisionStatusFilter::All,
];

/// A status filter as the address and the filter's options write it.
fn filter_text(filter: DecisionStatusFilter) -> &'static str {
    match filter {
        DecisionStatusFilter::Open => "open",
        DecisionStatusFilter::Handled => "handled",
        DecisionStatusFilter::Resolved => "resolved",
        DecisionStatusFilter::Dismissed => "dismissed",
        DecisionStatusFilter::All => "all",
    }
}

pub(crate) async fn inbox(req: HttpRequest, dash: web::Data<Dashboard>) -> HttpResponse {
    let session = session_or_answer!(&req, &dash);
    let input = input_or_answer!(
        dash,
        &req,
        &session,
        ListDecisions,
        &["status", "kind", "cursor"]
    );
    let status = input.query.status.map_or("", filter_text);
    let answer = call_or_answer!(dash, &req, &session, ListDecisions, input);
    let back = req
        .uri()
        .path_and_query()
        .map(|p| p.as_str().to_owned())
        .unwrap_or_default();
    let decisions = &answer.decisions;
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
                    @for st in FILTERS {
                        option value=(filter_text(st)) selected[status == filter_text(st)] { (filter_text(st)) }
                    }
                }
            }
            button type="submit" { "Show" }
        }
        @if decisions.is_empty() { p.muted { "No decision waits." } }
        div.cards {
            @for d in decisions { (decision(&session, d, &back, &facts, &ads)) }
        }
        @if let Some(next) = &answer.next_cursor {
            p { a href={ "?" (serde_urlencoded::to_string([("status", status), ("cursor", &cursor(next))]).unwrap_or_default()) } { "Next page" } }
        }
    };
    page(&req, &dash, &session, "Decisions", "/decisions", body)
}

fn decision(
    session: &Session,
    d: &DecisionOut,
    back: &str,
    facts: &HashMap<Uuid, PersonaViewOut>,
    ads: &HashMap<Uuid, AdsOut>,
) -> Markup {
    let id = d.id;
    let kind = d.kind;
    let waiting = matches!(d.status, DecisionStatus::Open | DecisionStatus::Handled);
    html! {
        article.card data-card tabindex="-1" aria-labelledby={"decision-" (id)} {
            h2 #{"decision-" (id)} { (d.title) }
            p.meta {
                span.tag.warn { (words(kind.as_str())) }
                span.tag[!waiting] { (d.status.as_str()) }
                span { (d.workspace.name) }
                @if let Some(p) = &d.persona { span { "Persona " (p.name) } }
                @if let Some(a) = &d.account { span { (a.code) " (" (a.platform) ")" } }
                span { "Opened by " (d.opened_by.name) }
                span { (local(d.created_at, HOME_ZONE)) }
            }
            @if let Some(q) = &d.question { p { strong { (q) } } }
            (details(kind, &d.detail))
            @if let Some(persona) = d.persona.as_ref().and_then(|p| facts.get(&p.id)) {
                @if ABOUT_FACTS.contains(&kind) {
                    details open[kind == DecisionKind::Contradiction] {
                        summary { "The persona's facts" }
                        (crate::pages::personas::facts(persona))
                    }
                } @else if kind == DecisionKind::PersonaNew {
                    (crate::pages::personas::fields(persona))
                }
            }
            @if kind == DecisionKind::AdChange { (ad_numbers(d, ads)) }
            @if let Some(result) = &d.result {
                p { "The agent reported: " (result) }
            }
            @if !d.notes.is_empty() {
                ul { @for note in &d.notes { li { (note.by) ": " (note.text) } } }
            }
            @if waiting && session.agency() {
                (moves(session, d, back))
            }
        }
    }
}

/// The kinds a person decides next to the persona's facts.
const ABOUT_FACTS: &[DecisionKind] = &[DecisionKind::FactProposal, DecisionKind::Contradiction];

/// The kinds that read the persona they are about: its facts, or a new persona's fields.
const ABOUT_PERSONA: &[DecisionKind] = &[
    DecisionKind::FactProposal,
    DecisionKind::Contradiction,
    DecisionKind::PersonaNew,
];

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
    decisions: &[DecisionOut],
) -> Result<HashMap<Uuid, PersonaViewOut>, ApiError> {
    let mut ids: Vec<Uuid> = decisions
        .iter()
        .filter(|d| ABOUT_PERSONA.contains(&d.kind))
        .filter_map(|d| d.persona.as_ref().map(|p| p.id))
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
            found.insert(id, v);
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
    decisions: &[DecisionOut],
) -> Result<HashMap<Uuid, AdsOut>, ApiError> {
    let mut ids: Vec<Uuid> = decisions
        .iter()
        .filter(|d| d.kind == DecisionKind::AdChange)
        .map(|d| d.workspace.id)
        .collect();
    ids.sort_unstable();
    ids.dedup();
    ids.truncate(PERSONAS_READ);
    let mut views = HashMap::new();
    for workspace in ids {
        let input = Req {
            path: Nothing,
            query: PersonAdsQuery {
                workspace,
                days: None,
            },
            body: Nothing,
        };
        if let Some(v) = kept(dash.call::<ViewAds>(req, session, input).await)? {
            views.insert(workspace, v);
        }
    }
    Ok(views)
}

/// An amount as the answer writes it (`1234.5`, `1.0`).
fn amount(c: Cents) -> String {
    serde_json::Number::from_f64(c.units()).map_or_else(|| "—".to_owned(), |n| n.to_string())
}

/// What a person weighs an ad change against: the month's spend against the cap, the ad when
/// the service lists it, and the campaigns of its ad account over the last 30 days. The ad
/// and its account are named by the decision's free-form detail.
fn ad_numbers(d: &DecisionOut, ads: &HashMap<Uuid, AdsOut>) -> Markup {
    let account = free_text(&d.detail, "ad_account_id");
    let ad_id = free_text(&d.detail, "ad_id");
    let Some(view) = ads.get(&d.workspace.id) else {
        return html! { p.muted { "The ad's numbers are not synced yet." } };
    };
    let ad = view.ads.iter().find(|a| a.id == ad_id);
    let account = if account.is_empty() {
        ad.map(|a| a.ad_account_id.as_str()).unwrap_or("")
    } else {
        account
    };
    // The ad account's campaigns; every campaign of the workspace when the change names none.
    let campaigns: Vec<_> = (view.campaigns.iter())
        .filter(|c| account.is_empty() || c.ad_account_id == account)
        .collect();
    html! {
        @if let Some(cap) = &view.cap {
            p.meta {
                span { "This month: " strong { (count(cap.spent_this_month.units())) " of " (count(cap.monthly_limit.units())) " " (cap.currency) } " spent" }
            }
        }
        @if let Some(ad) = ad {
            p.meta { span { "The ad: " (ad.status.as_str()) } span { "budget " (amount(ad.budget.amount)) " (" (ad.budget.budget_type.as_str()) ")" } }
        }
        @if !campaigns.is_empty() {
            div.scroll tabindex="0" {
                table {
                    caption.muted { "The campaigns, last 30 days" }
                    thead { tr { th { "Campaign" } th { "Status" } th.num { "Spend" } th.num { "Impressions" } th.num { "Clicks" } th.num { "CTR %" } th.num { "CPC" } } }
                    tbody {
                        @for c in campaigns {
                            tr {
                                td lang="und" { (c.name) }
                                td { (c.status) }
                                td.num { (count(c.spend.units())) }
                                td.num { (count(c.impressions as f64)) }
                                td.num { (count(c.clicks as f64)) }
                                td.num { (two_places(c.ctr)) }
                                td.num { (two_places(c.cpc)) }
                            }
                        }
                    }
                }
            }
        }
    }
}

/// A ratio with two decimals ("—" when there is none).
fn two_places(v: Option<f64>) -> String {
    v.map_or_else(|| "—".to_owned(), |x| format!("{x:.2}"))
}

/// The images of a persona_images decision, as its free-form `detail` lists them.
fn images(detail: &Value) -> &[Value] {
    detail
        .get("images")
        .and_then(Value::as_array)
        .map_or(&[], Vec::as_slice)
}

/// What the decision is about, as its kind shows it: its free-form `detail`, field by field.
fn details(kind: DecisionKind, detail: &Value) -> Markup {
    if kind == DecisionKind::PersonaImages {
        return image_grid(images(detail));
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
fn moves(session: &Session, d: &DecisionOut, back: &str) -> Markup {
    let id = IdPath { id: d.id };
    let choose = action_url::<ChooseIssue>(&id);
    let resolve = action_url::<ResolveIssue>(&id);
    let dismiss = action_url::<DismissIssue>(&id);
    let note = html! {
        label.inline-field { "Note (optional)" input type="text" name="note" maxlength="1000"; }
    };
    if d.kind == DecisionKind::PersonaImages {
        let images = images(&d.detail);
        let avatars: Vec<&Value> = images
            .iter()
            .filter(|i| free_text(i, "category") == "avatar" && i.get("url").is_some())
            .collect();
        return html! {
            form method="post" action=(choose) {
                (form_fields(session, back, "The chosen images are approved; the rest refused."))
                input type="hidden" name="option" value="approve_some";
                fieldset {
                    legend { "Approve some" }
                    label { input type="checkbox" data-check-all; " All" }
                    @for img in images {
                        @if img.get("url").is_some() {
                            label {
                                input type="checkbox" name="image_ids[]" value=(free_text(img, "id"));
                                " " (words(free_text(img, "category")))
                                @if !free_text(img, "caption").is_empty() { ": " (free_text(img, "caption")) }
                            }
                        }
                    }
                    (avatar_choice(&avatars))
                    (note)
                    button.primary type="submit" { "Approve the chosen" }
                }
            }
            div.actions {
                form method="post" action=(resolve) {
                    (form_fields(session, back, "Every image is approved."))
                    (avatar_choice(&avatars))
                    button type="submit" { "Approve all" }
                }
                form method="post" action=(dismiss) data-confirm="Refuse every image of this decision?" {
                    (form_fields(session, back, "Every image is refused."))
                    button.danger type="submit" { "Refuse all" }
                }
            }
        };
    }
    if !d.options.is_empty() {
        return html! {
            div.actions {
                @for option in &d.options {
                    form method="post" action=(choose) {
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
            form method="post" action=(resolve) {
                (form_fields(session, back, "Resolved."))
                (note)
                button.primary type="submit" { "Resolve" }
            }
            form method="post" action=(dismiss) {
                (form_fields(session, back, "Dismissed."))
                button.danger type="submit" { "Dismiss" }
            }
        }
    }
}

/// The avatar a persona_images move may set: one of the decision's avatar images (from its
/// free-form `detail`).
fn avatar_choice(avatars: &[&Value]) -> Markup {
    html! {
        @if !avatars.is_empty() {
            label { "New avatar (optional)"
                select name="set_avatar" {
                    option value="" { "Keep the current avatar" }
                    @for a in avatars {
                        @let caption = free_text(a, "caption");
                        option value=(free_text(a, "id")) { (if caption.is_empty() { free_text(a, "id") } else { caption }) }
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
                @let category = words(free_text(img, "category"));
                @let caption = free_text(img, "caption");
                figure {
                    @if let Some(thumb) = img.get("thumb_url").and_then(Value::as_str) {
                        img src=(thumb) loading="lazy" alt={(category) " image" @if !caption.is_empty() { ": " (caption) }};
                    }
                    figcaption {
                        (category)
                        @if !caption.is_empty() { " · " (caption) }
                        " · " span.muted { (free_text(img, "lock")) }
                    }
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_amount_reads_as_the_answer_writes_it() {
        for cents in [Cents(100), Cents(123450), Cents(29), Cents(0), Cents(-5)] {
            let written = serde_json::to_string(&cents).expect("a number");
            assert_eq!(amount(cents), written);
        }
        assert_eq!(amount(Cents(100)), "1.0");
    }
}
