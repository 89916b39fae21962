//! The pages. Each reads a Personal API operation for the signed-in person by its handle
//! ([`crate::Dashboard::call`], input from the page's address by [`page_input`]) and renders
//! its typed answer; a refusal (a client on an agency page: 403) is answered as the operation
//! answered it. No page reads JSON: only the free-form values an operation itself answers as
//! JSON (a task's `evidence`, a decision's `detail` with a persona_images decision's images and
//! an ad change's ad, a research card) are rendered from `Value`, by [`plain`] and
//! [`free_text`].

pub(crate) mod decisions;
pub(crate) mod keys;
pub(crate) mod knowledge;
pub(crate) mod metrics;
pub(crate) mod personas;
pub(crate) mod reports;
pub(crate) mod research;
pub(crate) mod review;
pub(crate) mod tasks;
pub(crate) mod tickets;
pub(crate) mod today;
pub(crate) mod webhooks;

use crate::Dashboard;
use crate::layout::see_other;
use crate::session::current;
use actix_web::{HttpRequest, HttpResponse, web};
use fleetdesk_api::input::{Part, Req};
use fleetdesk_api::op::Operation;
use fleetdesk_api::{ApiError, Args, pipeline};
use fleetdesk_kernel::wire::fields::Cursor;
use serde_json::{Map, Value};

/// `/dashboard/`: an agency person starts the day on Today, anyone else on the review queue.
pub(crate) async fn home(req: HttpRequest, dash: web::Data<Dashboard>) -> HttpResponse {
    match current(&req, &dash).await {
        Ok(s) if s.agency() => see_other(&format!("{}/today", crate::PREFIX)),
        Ok(_) => see_other(&format!("{}/review", crate::PREFIX)),
        Err(res) => res,
    }
}

/// The typed input of the operation `H`.
pub(crate) type Input<H> =
    Req<<H as Operation>::Path, <H as Operation>::Query, <H as Operation>::Body>;

/// The path parameters `H` names, as the matched route holds them (`/posts/{id}`): text the
/// operation's own parser reads.
pub(crate) fn path_args<H: Operation>(req: &HttpRequest) -> Map<String, Value> {
    H::SPEC
        .path_params()
        .into_iter()
        .filter_map(|name| {
            let value = req.match_info().get(name)?;
            Some((name.to_owned(), Value::String(value.to_owned())))
        })
        .collect()
}

/// The typed input of the read `H` from the page's own address: the path parameters `H`
/// names (`/dashboard/posts/{id}`) and the query fields in `keep` (empty values left out),
/// with `set` over them: fields the page settles itself (the workspace it picked, a search as
/// typed). All are cleaned of key-shaped text and read into `H`'s types by the operation's own
/// parser. A bad value is the operation's refusal: its 403 when the person may not call `H`
/// at all, else its 400 naming the field (a `q` past its bound: 400 naming `q`).
pub(crate) fn page_input<H: Operation>(
    req: &HttpRequest,
    session: &crate::session::Session,
    keep: &[&str],
    set: &[(&str, &str)],
) -> Result<Input<H>, ApiError>
where
    H::Path: Part,
    H::Query: Part,
    H::Body: Part,
{
    let path = path_args::<H>(req);
    let mut query = Map::new();
    for (k, v) in
        serde_urlencoded::from_str::<Vec<(String, String)>>(req.query_string()).unwrap_or_default()
    {
        if !v.is_empty() && keep.contains(&k.as_str()) {
            query.insert(k, Value::String(v));
        }
    }
    for (k, v) in set {
        query.insert((*k).to_owned(), Value::String((*v).to_owned()));
    }
    let mut args = Args {
        path,
        query,
        body: Value::Null,
    };
    pipeline::redact_args(&mut args);
    <Input<H> as fleetdesk_api::input::Input>::parse(&args).map_err(|e| {
        let caller = fleetdesk_tenancy::Caller::Member(session.member.clone());
        pipeline::allowed(&H::SPEC, &caller).err().unwrap_or(e)
    })
}

/// The typed input of a page's read ([`page_input`]), or the page that says why not.
macro_rules! input_or_answer {
    ($dash:expr, $req:expr, $session:expr, $handle:ty, $keep:expr) => {
        crate::pages::input_or_answer!($dash, $req, $session, $handle, $keep, &[])
    };
    ($dash:expr, $req:expr, $session:expr, $handle:ty, $keep:expr, $set:expr) => {
        match crate::pages::page_input::<$handle>($req, $session, $keep, $set) {
            Ok(input) => input,
            Err(e) => return crate::layout::refusal($req, &$dash, $session, &e),
        }
    };
}
pub(crate) use input_or_answer;

/// A text member of a free-form JSON field of a typed answer (a decision's `detail`, a
/// research card), "" when absent or not text. A typed answer's own fields are read as
/// fields, never through this.
pub(crate) fn free_text<'a>(v: &'a Value, key: &str) -> &'a str {
    v.get(key).and_then(Value::as_str).unwrap_or("")
}

/// A next page's cursor as the page's link passes it back.
pub(crate) fn cursor(next: &Cursor) -> String {
    let (at, id) = next.0;
    fleetdesk_kernel::wire::strings::encode_cursor(at, id)
}

/// Words for an identifier (`client_review` → `client review`).
pub(crate) fn words(id: &str) -> String {
    id.replace('_', " ")
}

/// A value of an answer's free-form detail, as one line.
pub(crate) fn plain(v: &Value) -> String {
    match v {
        Value::Null => "—".to_owned(),
        Value::String(s) => s.clone(),
        Value::Array(items) => items.iter().map(plain).collect::<Vec<_>>().join(", "),
        other => other.to_string(),
    }
}

/// The typed answer of a Personal API read bound to its handle, or the page that says why
/// not.
macro_rules! call_or_answer {
    ($dash:expr, $req:expr, $session:expr, $handle:ty, $input:expr) => {
        match $dash.call::<$handle>($req, $session, $input).await {
            Ok(v) => v,
            Err(e) => return crate::layout::refusal($req, &$dash, $session, &e),
        }
    };
}
pub(crate) use call_or_answer;

/// The session of a page, or the answer to give instead.
macro_rules! session_or_answer {
    ($req:expr, $dash:expr) => {
        match crate::session::current($req, $dash).await {
            Ok(s) => s,
            Err(res) => return res,
        }
    };
}
pub(crate) use session_or_answer;
