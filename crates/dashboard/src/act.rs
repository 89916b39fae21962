//! The forms' actions: each a Personal API write named by its handle in [`actions!`], mounted
//! at `POST /dashboard/act<the operation's path>` and run by [`act`] through the pipeline for
//! the session's person ([`fleetdesk_api::pipeline::call_write`]): the same access check,
//! parsing into the operation's typed input (a bad field is the operation's 400, naming it),
//! Idempotency-Key and transaction as a call with the person's key. A page builds a form's
//! address from the handle and its typed path ([`action_url`]).

use crate::Dashboard;
use crate::call::base;
use crate::layout::{self, Flash, see_other};
use crate::session::{self, Session};
use actix_web::{HttpRequest, HttpResponse, web};
use fleetdesk_api::input::Part;
use fleetdesk_api::op::Operation;
use fleetdesk_api::{ApiError, Args, Invocation, pipeline};
use fleetdesk_kernel::ErrorCode;
use fleetdesk_tenancy::Caller;
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::{Map, Value};

/// What an action answered that its flash tells: whether it was already so.
pub(crate) trait Acted {
    /// The move had been made already (`result: unchanged`): nothing changed.
    fn unchanged(&self) -> bool {
        false
    }

    /// A secret the answer shows once (where it goes, the secret): the form leads to a page
    /// that shows it instead of back to where it was.
    fn shown_once(&self) -> Option<(&str, &str)> {
        None
    }
}

/// The actions: every form of the dashboard posts to one of these, by its handle.
macro_rules! actions {
    ($($handle:ty),+ $(,)?) => {
        /// Mounts one route per action on the dashboard's scope.
        pub(crate) fn routes(scope: actix_web::Scope) -> actix_web::Scope {
            scope$(.route(
                &format!("/act{}", <$handle as Operation>::SPEC.path),
                web::post().to(act::<$handle>),
            ))+
        }

        /// Every action's operation, for the tests.
        #[cfg(test)]
        pub(crate) const ACTIONS: &[fleetdesk_api::OpSpec] = &[$(<$handle as Operation>::SPEC),+];
    };
}

use fleetdesk_ads::wire::personal::CreateAdPick;
use fleetdesk_community::wire::personal::{DismissTicket, ResolveTicket};
use fleetdesk_decisions::wire::personal::{ChooseIssue, DismissIssue, ResolveIssue};
use fleetdesk_posts::wire::personal::ReviewPost;
use fleetdesk_reports::wire::personal::{CreateReport, IssueReport};
use fleetdesk_tasks::wire::personal::{ConfirmTask, ReopenTask};
use fleetdesk_tenancy::wire::personal::RevokeKey;
use fleetdesk_webhooks::wire::personal::{
    CreateWebhook, DeleteWebhook, ReplayWebhook, RotateWebhookSecret, UpdateWebhook,
};

actions! {
    ReviewPost,
    ChooseIssue,
    ResolveIssue,
    DismissIssue,
    ConfirmTask,
    ReopenTask,
    ResolveTicket,
    DismissTicket,
    CreateReport,
    IssueReport,
    CreateAdPick,
    RevokeKey,
    CreateWebhook,
    UpdateWebhook,
    DeleteWebhook,
    RotateWebhookSecret,
    ReplayWebhook,
}

impl Acted for fleetdesk_posts::wire::TransitionReply {}
impl Acted for fleetdesk_reports::wire::ReportDetail {}
impl Acted for fleetdesk_ads::wire::PickOut {}
impl Acted for fleetdesk_webhooks::wire::WebhookOut {}
impl Acted for fleetdesk_webhooks::wire::DeletedReply {}
impl Acted for fleetdesk_webhooks::wire::ReplayReply {}

impl Acted for fleetdesk_webhooks::wire::WebhookWithSecret {
    fn shown_once(&self) -> Option<(&str, &str)> {
        Some((&self.endpoint.url, &self.secret))
    }
}

impl Acted for fleetdesk_decisions::wire::DecisionMoveReply {
    fn unchanged(&self) -> bool {
        self.result == "unchanged"
    }
}

impl Acted for fleetdesk_tasks::wire::TaskMoveReply {
    fn unchanged(&self) -> bool {
        self.result == "unchanged"
    }
}

impl Acted for fleetdesk_community::wire::TicketMoveReply {
    fn unchanged(&self) -> bool {
        self.result == fleetdesk_kernel::wire::fields::MoveResult::Unchanged
    }
}

impl Acted for fleetdesk_tenancy::wire::RevokeReply {
    fn unchanged(&self) -> bool {
        self.result == "unchanged"
    }
}

impl Acted for fleetdesk_reports::wire::IssueReportReply {
    fn unchanged(&self) -> bool {
        self.result == fleetdesk_kernel::wire::fields::MoveResult::Unchanged
    }
}

/// The address an action's form posts to: `/dashboard/act` and the operation's path with
/// `path`'s parameters in it.
pub(crate) fn action_url<H: Operation>(path: &H::Path) -> String
where
    H::Path: Serialize,
{
    let params = match serde_json::to_value(path) {
        Ok(Value::Object(params)) => params,
        _ => Map::new(),
    };
    let mut url = format!("{}/act", crate::PREFIX);
    for seg in H::SPEC.path.split('/').filter(|s| !s.is_empty()) {
        url.push('/');
        match seg.strip_prefix('{').and_then(|s| s.strip_suffix('}')) {
            Some(name) => url.push_str(&segment(params.get(name).unwrap_or(&Value::Null))),
            None => url.push_str(seg),
        }
    }
    url
}

/// A path parameter's value as one path segment, percent-encoded.
fn segment(value: &Value) -> String {
    let text = match value {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    };
    let mut out = String::new();
    for b in text.bytes() {
        if b.is_ascii_alphanumeric() || b"-._~".contains(&b) {
            out.push(char::from(b));
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// What a form's fields become: `_csrf`, `_idem` (the form's one-time Idempotency-Key),
/// `_back` (the page to return to) and `_done` (what to tell on success) steer; a name ending
/// in `[]` is a list of every value given; a name ending in `:bool` is a boolean (`true` when
/// its value is `true`); an empty value is left out; every other field is a string of the
/// body, which the operation's own parser reads into its typed body.
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
                    if let Some(flag) = name.strip_suffix(":bool") {
                        form.body
                            .insert(flag.to_owned(), Value::Bool(value == "true"));
                    } else if let Some(list) = name.strip_suffix("[]") {
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

/// `POST /dashboard/act<path of H>`: the Personal API's write `H` for the session's person,
/// with the path's parameters and the form's fields as its arguments, then back to the page
/// the form was on with what happened.
pub(crate) async fn act<H>(
    req: HttpRequest,
    dash: web::Data<Dashboard>,
    body: web::Bytes,
) -> HttpResponse
where
    H: Operation,
    H::Path: Part,
    H::Query: Part,
    H::Body: Part,
    H::Output: Acted + Serialize + DeserializeOwned + Send + 'static,
{
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
    let path = crate::pages::path_args::<H>(&req);
    let inv = Invocation {
        idempotency_key: form.idempotency_key,
        args: Args {
            path,
            query: Map::new(),
            body: Value::Object(form.body),
        },
        base_url: Some(base(&req, &dash)),
        ..Invocation::default()
    };
    let flash = match run::<H>(&dash, &session, inv).await {
        Ok(answer) if answer.shown_once().is_some() => {
            let shown = answer.shown_once().unwrap_or_default();
            return crate::pages::webhooks::secret_page(&req, &dash, &session, shown);
        }
        Ok(answer) => {
            let done = form.done.unwrap_or_else(|| "Done.".to_owned());
            Flash::ok(if answer.unchanged() {
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

/// Runs the write `H` for the session's person.
async fn run<H>(dash: &Dashboard, session: &Session, inv: Invocation) -> Result<H::Output, ApiError>
where
    H: Operation,
    H::Path: Part,
    H::Query: Part,
    H::Body: Part,
    H::Output: Serialize + DeserializeOwned + Send + 'static,
{
    let op = dash.ops.get::<H>()?;
    let caller = Caller::Member(session.member.clone());
    pipeline::call_write::<H>(&dash.ctx, op.as_ref(), caller, inv).await
}

#[cfg(test)]
mod tests {
    use super::*;
    use fleetdesk_kernel::wire::fields::IdPath;

    #[test]
    fn every_action_is_a_personal_write_the_catalogue_binds() {
        let ops = crate::call::PersonalOps::new(&fleetdesk_api::catalogue());
        assert!(ACTIONS.len() >= 10);
        for spec in ACTIONS {
            assert_eq!(spec.api, fleetdesk_api::Api::Personal, "{}", spec.id());
            assert!(!spec.reads_only(), "{} reads", spec.id());
        }
        // Each handle finds its own operation.
        assert!(ops.get::<ReviewPost>().is_ok());
        assert!(ops.get::<RevokeKey>().is_ok());
    }

    #[test]
    fn an_action_url_is_the_operations_path_with_the_typed_parameters() {
        let id = uuid::Uuid::nil();
        assert_eq!(
            action_url::<ReviewPost>(&IdPath { id }),
            format!("/dashboard/act/posts/{id}/transition")
        );
        assert_eq!(
            action_url::<CreateReport>(&fleetdesk_api::Nothing),
            "/dashboard/act/reports"
        );
        let key = fleetdesk_tenancy::wire::KeyPath {
            kind: fleetdesk_tenancy::wire::KeyKindIn::Agent,
            id,
        };
        assert_eq!(
            action_url::<RevokeKey>(&key),
            format!("/dashboard/act/admin/keys/agent/{id}/revoke")
        );
        assert_eq!(segment(&Value::String("a b/c".into())), "a%20b%2Fc");
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
            ("enabled:bool", "false"),
            ("on:bool", "true"),
        ]));
        assert_eq!(form.csrf.as_deref(), Some("c"));
        assert_eq!(form.idempotency_key.as_deref(), Some("k"));
        assert_eq!(form.back.as_deref(), Some("/dashboard/review"));
        assert_eq!(form.done.as_deref(), Some("Approved."));
        assert_eq!(
            Value::Object(form.body),
            serde_json::json!({"to": "approved", "image_ids": ["a", "b"], "empty": [],
                               "enabled": false, "on": true})
        );
    }
}
