//! The keys, for platform admins (`GET /admin/keys`), each revocable
//! (`POST /admin/keys/{kind}/{id}/revoke`). Never a key's value: only its lookup id.

use super::{call_or_answer, cursor, input_or_answer, session_or_answer};
use crate::Dashboard;
use crate::act::action_url;
use crate::layout::{form_fields, local, page};
use crate::pages::decisions::HOME_ZONE;
use actix_web::{HttpRequest, HttpResponse, web};
use fleetdesk_kernel::wire::fields::Int;
use fleetdesk_tenancy::wire::personal::{ListKeys, RevokeKey};
use fleetdesk_tenancy::wire::{KeyKindIn, KeyPath};
use maud::html;

/// A key's kind as the page shows it.
fn kind_text(kind: KeyKindIn) -> &'static str {
    match kind {
        KeyKindIn::User => "user",
        KeyKindIn::Agent => "agent",
    }
}

pub(crate) async fn list_page(req: HttpRequest, dash: web::Data<Dashboard>) -> HttpResponse {
    let session = session_or_answer!(&req, &dash);
    let mut input = input_or_answer!(dash, &req, &session, ListKeys, &["cursor"]);
    input.query.limit = Some(Int(200));
    let answer = call_or_answer!(dash, &req, &session, ListKeys, input);
    let back = format!("{}/keys", crate::PREFIX);
    let body = html! {
        div.scroll tabindex="0" {
            table {
                thead { tr { th { "Owner" } th { "Kind" } th { "Lookup id" } th { "Created" } th { "Last used" } th { "State" } } }
                tbody {
                    @for k in &answer.keys {
                        tr {
                            td { (k.owner.name) }
                            td { (kind_text(k.kind)) }
                            td { code { (k.lookup) } }
                            td { (local(k.created_at, HOME_ZONE)) }
                            td { @match k.last_used_at { Some(at) => (local(at, HOME_ZONE)), None => "never" } }
                            td {
                                @if let Some(at) = k.revoked_at {
                                    "revoked " (local(at, HOME_ZONE))
                                } @else {
                                    form method="post" action=(action_url::<RevokeKey>(&KeyPath { kind: k.kind, id: k.id }))
                                        data-confirm="Revoke this key? Whoever uses it is refused from the next request on." {
                                        (form_fields(&session, &back, "Revoked."))
                                        button.danger type="submit" aria-label={"Revoke the key " (k.lookup)} { "Revoke" }
                                    }
                                }
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
    page(&req, &dash, &session, "Keys", "/keys", body)
}
