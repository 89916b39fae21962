//! The keys, for platform admins (`GET /admin/keys`), each revocable
//! (`POST /admin/keys/{kind}/{id}/revoke`). Never a key's value: only its lookup id.

use super::{list, read_or_answer, s, session_or_answer};
use crate::Dashboard;
use crate::layout::{act, form_fields, local_time, page};
use crate::pages::decisions::HOME_ZONE;
use actix_web::{HttpRequest, HttpResponse, web};
use maud::html;
use serde_json::{Map, Value, json};

pub(crate) async fn list_page(req: HttpRequest, dash: web::Data<Dashboard>) -> HttpResponse {
    let session = session_or_answer!(&req, &dash);
    let mut q = Map::new();
    q.insert("limit".into(), json!(200));
    if let Some(cursor) = super::query(&req).remove("cursor") {
        q.insert("cursor".into(), cursor);
    }
    let answer = read_or_answer!(dash, &req, &session, "/admin/keys", Map::new(), q);
    let back = format!("{}/keys", crate::PREFIX);
    let body = html! {
        div.scroll tabindex="0" {
            table {
                thead { tr { th { "Owner" } th { "Kind" } th { "Lookup id" } th { "Created" } th { "Last used" } th { "State" } } }
                tbody {
                    @for k in list(&answer, "keys") {
                        tr {
                            td { (k.pointer("/owner/name").and_then(Value::as_str).unwrap_or("")) }
                            td { (s(k, "kind")) }
                            td { code { (s(k, "lookup")) } }
                            td { (local_time(s(k, "created_at"), HOME_ZONE)) }
                            td { @match k.get("last_used_at").and_then(Value::as_str) { Some(at) => (local_time(at, HOME_ZONE)), None => "never" } }
                            td {
                                @if let Some(at) = k.get("revoked_at").and_then(Value::as_str) {
                                    "revoked " (local_time(at, HOME_ZONE))
                                } @else {
                                    form method="post" action=(act(&format!("/admin/keys/{}/{}/revoke", s(k, "kind"), s(k, "id"))))
                                        data-confirm="Revoke this key? Whoever uses it is refused from the next request on." {
                                        (form_fields(&session, &back, "Revoked."))
                                        button.danger type="submit" aria-label={"Revoke the key " (s(k, "lookup"))} { "Revoke" }
                                    }
                                }
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
    page(&req, &dash, &session, "Keys", "/keys", body)
}
