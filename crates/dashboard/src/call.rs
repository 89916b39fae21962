//! Reads and actions as Personal API operations, run through the pipeline for the session's
//! person. A page reads with [`Dashboard::read`]; a form posts to `/dashboard/act/<path>`,
//! which finds the Personal API operation of that path, turns the form into its arguments and
//! runs it ([`act`]).

use crate::Dashboard;
use crate::layout::{self, Flash, see_other};
use crate::session::{self, Session};
use actix_web::{HttpRequest, HttpResponse, web};
use fleetdesk_api::input::Req;
use fleetdesk_api::op::Api;
use fleetdesk_api::op::Operation;
use fleetdesk_api::pipeline::{self, execute_as};
use fleetdesk_api::{ApiError, Args, ErasedOp, HttpMethod, Invocation};
use fleetdesk_kernel::ErrorCode;
use fleetdesk_tenancy::Caller;
use serde_json::{Map, Value};
use std::collections::HashMap;
use std::sync::Arc;

/// An operation a path names, with the path's parameters.
type Matched<'a> = (&'a Arc<dyn ErasedOp>, Map<String, Value>);

/// The Personal API's operations by method and path template.
pub(crate) struct PersonalOps {
    by_route: HashMap<(HttpMethod, &'static str), Arc<dyn ErasedOp>>,
}

impl PersonalOps {
    pub fn new(ops: &[Arc<dyn ErasedOp>]) -> PersonalOps {
        PersonalOps {
            by_route: ops
                .iter()
                .filter(|op| op.spec().api == Api::Personal)
                .map(|op| ((op.spec().method, op.spec().path), op.clone()))
                .collect(),
        }
    }

    fn get(&self, method: HttpMethod, path: &'static str) -> Option<&Arc<dyn ErasedOp>> {
        self.by_route.get(&(method, path))
    }

    /// The POST operation whose template matches `path` (`/posts/<id>/transition`), with its
    /// path parameters; of several, the one with the most fixed segments (`/posts/bulk` before
    /// `/posts/{id}`), as the REST routes order them.
    fn post_matching(&self, path: &str) -> Option<Matched<'_>> {
        let asked: Vec<&str> = path.split('/').collect();
        self.by_route
            .iter()
            .filter(|((method, _), _)| *method == HttpMethod::Post)
            .filter_map(|((_, template), op)| {
                let parts: Vec<&str> = template.split('/').collect();
                if parts.len() != asked.len() {
                    return None;
                }
                let mut params = Map::new();
                for (t, a) in parts.iter().zip(&asked) {
                    match t.strip_prefix('{').and_then(|t| t.strip_suffix('}')) {
                        Some(name) if !a.is_empty() => {
                            params.insert(name.to_owned(), Value::String((*a).to_owned()));
                        }
                        Some(_) => return None,
                        None if t == a => {}
                        None => return None,
                    }
                }
                Some((parts.len() - params.len(), (op, params)))
            })
            .max_by_key(|(fixed, _)| *fixed)
            .map(|(_, matched)| matched)
    }
}

/// The address links in answers are made on: the one the browser used.
fn base(req: &HttpRequest, dash: &crate::Dashboard) -> String {
    crate::request_origin(req, &dash.ctx.config)
}

/// An answer of an operation as JSON, or its error (a non-2xx answer read as one).
fn answer(outcome: fleetdesk_api::Outcome) -> Result<Value, ApiError> {
    let value: Value = serde_json::from_str(outcome.body.get())
        .map_err(|e| ApiError::internal(anyhow::Error::from(e)))?;
    if outcome.status >= 400 {
        let message = value
            .get("message")
            .and_then(Value::as_str)
            .unwrap_or("the operation was refused");
        return Err(ApiError::new(ErrorCode::Rejected, message));
    }
    Ok(value)
}

impl Dashboard {
    /// Runs the Personal API read `H` for the session's person with typed input: its typed
    /// answer.
    pub(crate) async fn call<H: Operation>(
        &self,
        req: &HttpRequest,
        session: &Session,
        input: Req<H::Path, H::Query, H::Body>,
    ) -> Result<H::Output, ApiError> {
        let op = self
            .ops
            .get(H::SPEC.method, H::SPEC.path)
            .filter(|op| op.spec().api == H::SPEC.api)
            .ok_or_else(|| ApiError::internal(anyhow::anyhow!("no operation {}", H::SPEC.id())))?;
        let caller = Caller::Member(session.member.clone());
        pipeline::call::<H>(&self.ctx, op.as_ref(), caller, input, Some(base(req, self))).await
    }

    /// Runs the Personal API's `GET <path>` for the session's person with `query` (typed as
    /// the operation takes it): its JSON answer.
    pub(crate) async fn read(
        &self,
        req: &HttpRequest,
        session: &Session,
        path: &'static str,
        path_args: Map<String, Value>,
        query: Map<String, Value>,
    ) -> Result<Value, ApiError> {
        let op = self
            .ops
            .get(HttpMethod::Get, path)
            .ok_or_else(|| ApiError::internal(anyhow::anyhow!("no operation GET {path}")))?;
        let inv = Invocation {
            args: Args {
                path: path_args,
                query,
                body: Value::Null,
            },
            base_url: Some(base(req, self)),
            ..Invocation::default()
        };
        let caller = Caller::Member(session.member.clone());
        answer(execute_as(&self.ctx, op.as_ref(), caller, inv).await?)
    }
}

/// What a form's fields become: `_csrf`, `_idem` (the form's one-time Idempotency-Key),
/// `_back` (the page to return to) and `_done` (what to tell on success) steer; a name ending
/// in `[]` is a list of every value given; an empty value is left out; every other field is a
/// string of the body.
#[derive(Debug, Default, PartialEq)]
pub(crate) struct Form {
    pub csrf: Option<String>,
    pub idempotency_key: Option<String>,
    pub back: Option<String>,
    pub done: Option<String>,
    pub body: Map<String, Value>,
}

impl Form {
    pub fn read(fields: Vec<(String, String)>) -> Form {
        let mut form = Form::default();
        for (name, value) in fields {
            match name.as_str() {
                "_csrf" => form.csrf = Some(value),
                "_idem" => form.idempotency_key = Some(value),
                "_back" => form.back = Some(value),
                "_done" => form.done = Some(value),
                _ if name.starts_with('_') => {}
                _ => {
                    if let Some(list) = name.strip_suffix("[]") {
                        let entry = form
                            .body
                            .entry(list.to_owned())
                            .or_insert_with(|| Value::Array(Vec::new()));
                        if let (Value::Array(items), false) = (entry, value.is_empty()) {
                            items.push(Value::String(value));
                        }
                    } else if !value.trim().is_empty() {
                        form.body.insert(name, Value::String(value));
                    }
                }
            }
        }
        form
    }
}

/// `POST /dashboard/act/<path>`: the Personal API's POST of that path for the session's
/// person, then back to the page the form was on with what happened.
pub(crate) async fn act(
    req: HttpRequest,
    dash: web::Data<Dashboard>,
    path: web::Path<String>,
    body: web::Bytes,
) -> HttpResponse {
    let session = match session::current(&req, &dash).await {
        Ok(s) => s,
        Err(res) => return res,
    };
    let form = match session::form_fields(&body) {
        Ok(fields) => Form::read(fields),
        Err(e) => return layout::error_page(&e),
    };
    if !session::same_origin(&req, &dash)
        || !form
            .csrf
            .as_deref()
            .is_some_and(|c| session.token.accepts_csrf(c))
    {
        return session::forged();
    }
    let back = form
        .back
        .as_deref()
        .and_then(session::safe_next)
        .map(str::to_owned)
        .unwrap_or_else(|| format!("{}/", crate::PREFIX));
    let asked = format!("/{}", path.into_inner());
    let Some((op, path_args)) = dash.ops.post_matching(&asked) else {
        return layout::error_page(&ApiError::not_found(format!(
            "no Personal API action at POST {asked}"
        )));
    };
    let inv = Invocation {
        idempotency_key: form.idempotency_key,
        args: Args {
            path: path_args,
            query: Map::new(),
            body: Value::Object(form.body),
        },
        base_url: Some(base(&req, &dash)),
        ..Invocation::default()
    };
    let caller = Caller::Member(session.member.clone());
    let flash = match execute_as(&dash.ctx, op.as_ref(), caller, inv)
        .await
        .and_then(answer)
    {
        Ok(result) => {
            let unchanged = result.get("result").and_then(Value::as_str) == Some("unchanged");
            let done = form.done.unwrap_or_else(|| "Done.".to_owned());
            Flash::ok(if unchanged {
                format!("{done} (It was already so: nothing changed.)")
            } else {
                done
            })
        }
        Err(e) if e.code == ErrorCode::Unauthorized => {
            return see_other(&format!("{}/sign-in", crate::PREFIX));
        }
        // The same form sent again while the first is still running: the first one acts.
        Err(e) if e.code == ErrorCode::IdempotencyInProgress => Flash::ok(
            "This form is already being sent; reload the page in a moment to see what it did.",
        ),
        Err(e) if e.status() >= 500 => return layout::error_page(&e),
        Err(e) => Flash::error(e.message),
    };
    let mut res = see_other(&back);
    flash.set(&req, &dash, &mut res);
    res
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_personal_post_is_reached_by_its_own_path_and_no_other() {
        let ops = PersonalOps::new(&fleetdesk_api::catalogue());
        let posts: Vec<&'static str> = ops
            .by_route
            .keys()
            .filter(|(m, _)| *m == HttpMethod::Post)
            .map(|(_, p)| *p)
            .collect();
        assert!(posts.len() >= 10, "{posts:?}");
        for template in posts {
            let path: String = template
                .split('/')
                .map(|seg| if seg.starts_with('{') { "x1" } else { seg })
                .collect::<Vec<_>>()
                .join("/");
            let (op, params) = ops.post_matching(&path).expect(template);
            assert_eq!(op.spec().path, template, "{path}");
            assert!(params.values().all(|v| v == "x1"), "{params:?}");
        }
        assert!(ops.post_matching("/nowhere").is_none());
        assert!(
            ops.post_matching("/posts//transition").is_none(),
            "an empty segment names nothing"
        );
    }

    fn fields(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
        pairs
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect()
    }

    #[test]
    fn a_form_becomes_a_body_of_strings_and_lists_without_its_steering_fields() {
        let form = Form::read(fields(&[
            ("_csrf", "c"),
            ("_idem", "k"),
            ("_back", "/dashboard/review"),
            ("_done", "Approved."),
            ("_other", "ignored"),
            ("to", "approved"),
            ("comment", "  "),
            ("image_ids[]", "a"),
            ("image_ids[]", ""),
            ("image_ids[]", "b"),
            ("empty[]", ""),
        ]));
        assert_eq!(form.csrf.as_deref(), Some("c"));
        assert_eq!(form.idempotency_key.as_deref(), Some("k"));
        assert_eq!(form.back.as_deref(), Some("/dashboard/review"));
        assert_eq!(form.done.as_deref(), Some("Approved."));
        assert_eq!(
            Value::Object(form.body),
            serde_json::json!({"to": "approved", "image_ids": ["a", "b"], "empty": []})
        );
    }
}
