//! Research results (`GET /ad-research`): the cards of the organization's finished research,
//! each with a form that makes a pick of it for one of the workspace's accounts
//! (`POST /ad-picks`).

use super::{list, plain, query, read_or_answer, s, session_or_answer};
use crate::Dashboard;
use crate::layout::{act, form_fields, local_time, page};
use crate::pages::decisions::HOME_ZONE;
use crate::session::Session;
use actix_web::{HttpRequest, HttpResponse, web};
use maud::{Markup, html};
use serde_json::{Map, Value, json};

/// A card's fields a person reads, in order (the rest stay in the data).
const CARD_FIELDS: &[&str] = &["price", "currency", "sales", "rating", "shop", "url"];

pub(crate) async fn results(req: HttpRequest, dash: web::Data<Dashboard>) -> HttpResponse {
    let session = session_or_answer!(&req, &dash);
    let mut q = query(&req);
    q.retain(|k, _| k == "cursor");
    q.insert("status".into(), json!("done"));
    let answer = read_or_answer!(dash, &req, &session, "/ad-research", Map::new(), q);
    let mut personas_query = Map::new();
    personas_query.insert("limit".into(), json!(200));
    let personas = read_or_answer!(
        dash,
        &req,
        &session,
        "/personas",
        Map::new(),
        personas_query
    );
    let back = format!("{}/research", crate::PREFIX);
    let research = list(&answer, "research");
    let body = html! {
        p.muted { "Research material is marketplace text: read it as data." }
        @if research.is_empty() { p.muted { "No finished research yet." } }
        @for r in research {
            section.card aria-labelledby={"research-" (s(r, "id"))} {
                h2 #{"research-" (s(r, "id"))} {
                    (r.pointer("/workspace/name").and_then(Value::as_str).unwrap_or(""))
                    " · " (s(r, "kind").replace('_', " "))
                }
                p.meta {
                    @if let Some(at) = r.get("finished_at").and_then(Value::as_str) { span { "Finished " (local_time(at, HOME_ZONE)) } }
                    span { (r.pointer("/credits/charged").and_then(Value::as_i64).unwrap_or(0)) " credits" }
                    span { (r.pointer("/progress/total").and_then(Value::as_i64).unwrap_or(0)) " items" }
                }
                @let cards = r.pointer("/result/items").and_then(Value::as_array).map(Vec::as_slice).unwrap_or(&[]);
                @if cards.is_empty() { p.muted { "Nothing was found." } }
                div.cards {
                    @for c in cards {
                        (card(&session, r, c, &accounts_of(&personas, r), &back))
                    }
                }
            }
        }
        @if let Some(next) = answer.get("next_cursor").and_then(Value::as_str) {
            p { a href={ "?" (serde_urlencoded::to_string([("cursor", next)]).unwrap_or_default()) } { "Next page" } }
        }
    };
    page(&req, &dash, &session, "Research", "/research", body)
}

/// The account codes of the research's workspace, from the personas list.
fn accounts_of(personas: &Value, research: &Value) -> Vec<String> {
    let workspace = research.pointer("/workspace/id").and_then(Value::as_str);
    list(personas, "personas")
        .iter()
        .filter(|p| p.pointer("/workspace/id").and_then(Value::as_str) == workspace)
        .flat_map(|p| list(p, "accounts"))
        .map(|a| s(a, "code").to_owned())
        .collect()
}

fn card(session: &Session, research: &Value, c: &Value, codes: &[String], back: &str) -> Markup {
    let item = s(c, "item");
    html! {
        article.card {
            h3 lang="und" { (if s(c, "title").is_empty() { item } else { s(c, "title") }) }
            dl.facts {
                dt { "Item" } dd { (item) }
                @for key in CARD_FIELDS {
                    @if let Some(v) = c.get(*key).filter(|v| !v.is_null()) {
                        dt { (key) } dd lang="und" { (plain(v)) }
                    }
                }
            }
            @if session.agency() && !codes.is_empty() {
                form.actions method="post" action=(act("/ad-picks")) {
                    (form_fields(session, back, "Picked: the account's agent can draft a sponsored post of it."))
                    input type="hidden" name="research_id" value=(s(research, "id"));
                    input type="hidden" name="item" value=(item);
                    label { "For the account"
                        select name="code" required {
                            @for code in codes { option value=(code) { (code) } }
                        }
                    }
                    label.inline-field { "Note (optional)" input type="text" name="note" maxlength="2000"; }
                    button.primary type="submit" { "Pick" }
                }
            }
        }
    }
}
