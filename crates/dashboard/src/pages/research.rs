//! Research results (`GET /ad-research`): the cards of the organization's finished research,
//! each with a form that makes a pick of it for one of the workspace's accounts
//! (`POST /ad-picks`). The account is typed, any code of the workspace (the pick checks it),
//! with the codes of the newest 200 personas suggested: an organization with more personas
//! reaches every account all the same.

use super::{call_or_answer, cursor, free_text, input_or_answer, plain, session_or_answer, words};
use crate::Dashboard;
use crate::act::action_url;
use crate::layout::{form_fields, local, page};
use crate::pages::decisions::HOME_ZONE;
use crate::session::Session;
use actix_web::{HttpRequest, HttpResponse, web};
use fleetdesk_ads::research::ResearchStatus;
use fleetdesk_ads::wire::ResearchOut;
use fleetdesk_ads::wire::personal::{CreateAdPick, ListAdResearch};
use fleetdesk_api::input::{Nothing, Req};
use fleetdesk_kernel::wire::fields::Int;
use fleetdesk_personas::wire::personal::ListPersonas;
use fleetdesk_personas::wire::{OrgPersonaQueryIn, PersonaListOut};
use maud::{Markup, html};
use serde_json::Value;

/// A card's fields a person reads, in order (the rest stay in the data).
const CARD_FIELDS: &[&str] = &["price", "currency", "sales", "rating", "shop", "url"];

pub(crate) async fn results(req: HttpRequest, dash: web::Data<Dashboard>) -> HttpResponse {
    let session = session_or_answer!(&req, &dash);
    let mut input = input_or_answer!(dash, &req, &session, ListAdResearch, &["cursor"]);
    input.query.status = Some(ResearchStatus::Done);
    let answer = call_or_answer!(dash, &req, &session, ListAdResearch, input);
    let every_persona = Req {
        path: Nothing,
        query: OrgPersonaQueryIn {
            workspace: None,
            limit: Some(Int(200)),
            cursor: None,
        },
        body: Nothing,
    };
    let personas = call_or_answer!(dash, &req, &session, ListPersonas, every_persona);
    let back = format!("{}/research", crate::PREFIX);
    let research = &answer.research;
    // One list of suggested codes per workspace on the page.
    let mut workspaces: Vec<&ResearchOut> = research.iter().collect();
    workspaces.sort_by_key(|r| r.workspace.id);
    workspaces.dedup_by_key(|r| r.workspace.id);
    let body = html! {
        p.muted { "Research material is marketplace text: read it as data." }
        @if session.agency() && personas.next_cursor.is_some() {
            p.muted { "The accounts suggested are those of the newest 200 personas: type any other account's code." }
        }
        @for r in &workspaces {
            datalist id={"codes-" (r.workspace.id)} {
                @for code in accounts_of(&personas, r) { option value=(code) {} }
            }
        }
        @if research.is_empty() { p.muted { "No finished research yet." } }
        @for r in research {
            section.card aria-labelledby={"research-" (r.id)} {
                h2 #{"research-" (r.id)} {
                    (r.workspace.name)
                    " · " (words(r.kind.as_str()))
                }
                p.meta {
                    @if let Some(at) = r.finished_at { span { "Finished " (local(at, HOME_ZONE)) } }
                    span { (r.credits.charged) " credits" }
                    span { (r.progress.total) " items" }
                }
                @let cards = r.result.as_ref().map_or(&[][..], |result| result.items.as_slice());
                @if cards.is_empty() { p.muted { "Nothing was found." } }
                div.cards {
                    @for c in cards { (card(&session, r, c, &back)) }
                }
            }
        }
        @if let Some(next) = &answer.next_cursor {
            p { a href={ "?" (serde_urlencoded::to_string([("cursor", cursor(next))]).unwrap_or_default()) } { "Next page" } }
        }
    };
    page(&req, &dash, &session, "Research", "/research", body)
}

/// The account codes of the research's workspace, from the personas list.
fn accounts_of(personas: &PersonaListOut, research: &ResearchOut) -> Vec<String> {
    (personas.personas.iter())
        .filter(|p| p.workspace.id == research.workspace.id)
        .flat_map(|p| &p.accounts)
        .map(|a| a.code.clone())
        .collect()
}

/// One card of a finished research: its free-form fields (marketplace text, kept as the
/// research found it) and the form that picks it.
fn card(session: &Session, research: &ResearchOut, c: &Value, back: &str) -> Markup {
    let item = free_text(c, "item");
    let title = free_text(c, "title");
    html! {
        article.card {
            h3 lang="und" { (if title.is_empty() { item } else { title }) }
            dl.facts {
                dt { "Item" } dd { (item) }
                @for key in CARD_FIELDS {
                    @if let Some(v) = c.get(*key).filter(|v| !v.is_null()) {
                        dt { (key) } dd lang="und" { (plain(v)) }
                    }
                }
            }
            @if session.agency() {
                form.actions method="post" action=(action_url::<CreateAdPick>(&Nothing)) {
                    (form_fields(session, back, "Picked: the account's agent can draft a sponsored post of it."))
                    input type="hidden" name="research_id" value=(research.id);
                    input type="hidden" name="item" value=(item);
                    label { "For the account"
                        input type="text" name="code" required maxlength="40" autocomplete="off"
                            list={"codes-" (research.workspace.id)};
                    }
                    label.inline-field { "Note (optional)" input type="text" name="note" maxlength="2000"; }
                    button.primary type="submit" { "Pick" }
                }
            }
        }
    }
}
