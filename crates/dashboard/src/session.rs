//! Signing in and out, the session cookie, and the checks every form post passes: the
//! session's CSRF token and a same-origin request.

use crate::Dashboard;
use crate::layout::{self, see_other};
use actix_web::http::header;
use actix_web::{HttpRequest, HttpResponse, web};
use fleetdesk_api::ApiError;
use fleetdesk_api::pipeline::admit_session;
use fleetdesk_kernel::ErrorCode;
use fleetdesk_tenancy::session::{COOKIE, SESSION_HOURS, SessionToken};
use fleetdesk_tenancy::{Caller, KeyKind, MemberCaller, ParsedKey};
use std::collections::HashMap;

/// The signed-in person of a request.
pub(crate) struct Session {
    pub token: SessionToken,
    pub member: MemberCaller,
}

impl Session {
    pub fn csrf(&self) -> String {
        self.token.csrf()
    }

    /// Agency members and platform admins: everything but the admin pages.
    pub fn agency(&self) -> bool {
        self.member.is_staff()
    }

    /// Whether the person may move posts in review (an agency person, an admin, or a client
    /// with the review right).
    pub fn reviews(&self) -> bool {
        self.agency() || self.member.review
    }
}

/// A value of the request's `Cookie` header.
pub(crate) fn cookie(req: &HttpRequest, name: &str) -> Option<String> {
    req.headers()
        .get_all(header::COOKIE)
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .filter_map(|pair| pair.trim().split_once('='))
        .find(|(k, _)| *k == name)
        .map(|(_, v)| v.to_owned())
}

/// Whether the page was reached over HTTPS (directly, or as a trusted proxy in front says).
fn secure(req: &HttpRequest, dash: &Dashboard) -> bool {
    crate::request_origin(req, &dash.ctx.config).starts_with("https://")
        || dash
            .ctx
            .config
            .base_url
            .as_deref()
            .is_some_and(|b| b.starts_with("https://"))
}

/// A `Set-Cookie` value for the dashboard's path: HttpOnly, SameSite=Strict, Secure over
/// HTTPS; `max_age` 0 removes it.
pub(crate) fn set_cookie(
    req: &HttpRequest,
    dash: &Dashboard,
    name: &str,
    value: &str,
    max_age: i64,
) -> String {
    let secure = if secure(req, dash) { "; Secure" } else { "" };
    format!(
        "{name}={value}; Path={}; Max-Age={max_age}; HttpOnly; SameSite=Strict{secure}",
        crate::PREFIX
    )
}

/// The request's session, or the answer to give instead: the sign-in page for a browser
/// without a usable session (the cookie cleared), an error page otherwise.
pub(crate) async fn current(req: &HttpRequest, dash: &Dashboard) -> Result<Session, HttpResponse> {
    let Some(token) = cookie(req, COOKIE).and_then(|v| SessionToken::parse(&v)) else {
        return Err(to_sign_in(req, dash));
    };
    match admit_session(&dash.ctx, &token.hash()).await {
        Ok(Caller::Member(member)) => Ok(Session { token, member }),
        Ok(Caller::Agent(_)) => Err(to_sign_in(req, dash)),
        Err(e) if e.code == ErrorCode::Unauthorized => Err(to_sign_in(req, dash)),
        Err(e) => Err(layout::error_page(&e)),
    }
}

/// Back to the sign-in page, coming back here after it.
fn to_sign_in(req: &HttpRequest, dash: &Dashboard) -> HttpResponse {
    let next = req.uri().path_and_query().map(|p| p.as_str()).unwrap_or("");
    let target = match safe_next(next) {
        Some(next) if req.method() == actix_web::http::Method::GET => format!(
            "{}/sign-in?{}",
            crate::PREFIX,
            serde_urlencoded::to_string([("next", next)]).unwrap_or_default()
        ),
        _ => format!("{}/sign-in", crate::PREFIX),
    };
    let mut res = see_other(&target);
    if cookie(req, COOKIE).is_some() {
        let clear = set_cookie(req, dash, COOKIE, "", 0);
        res.headers_mut().append(
            header::SET_COOKIE,
            header::HeaderValue::from_str(&clear).expect("a cookie header is ASCII"),
        );
    }
    res
}

/// A page of the dashboard to go to after signing in; anything else (another site, a path
/// outside the dashboard) is ignored.
pub(crate) fn safe_next(next: &str) -> Option<&str> {
    (next.starts_with(&format!("{}/", crate::PREFIX))
        && !next.contains("//")
        && !next.contains('\\')
        && next.bytes().all(|b| (0x21..=0x7e).contains(&b)))
    .then_some(next)
}

/// Whether a form post came from one of the service's own pages: an `Origin` (or, without
/// one, `Sec-Fetch-Site`) that says another site is refused. Requests without either (not
/// from a browser) still need the CSRF token.
pub(crate) fn same_origin(req: &HttpRequest, dash: &Dashboard) -> bool {
    if let Some(origin) = req.headers().get(header::ORIGIN) {
        let own = crate::request_origin(req, &dash.ctx.config);
        let origin = origin.to_str().unwrap_or("");
        return origin.eq_ignore_ascii_case(&own)
            || dash
                .ctx
                .config
                .base_url
                .as_deref()
                .is_some_and(|b| b.trim_end_matches('/').eq_ignore_ascii_case(origin));
    }
    match req.headers().get("sec-fetch-site").map(|v| v.as_bytes()) {
        Some(b"same-origin") | Some(b"none") | None => true,
        Some(_) => false,
    }
}

/// The refusal of a post that failed the CSRF or origin check.
pub(crate) fn forged() -> HttpResponse {
    layout::error_page(&ApiError::forbidden(
        "this form did not come from this session's page (its CSRF token is missing, stale or \
         another's); reload the page and try again",
    ))
}

/// A form's fields; a name given twice keeps every value in order.
pub(crate) fn form_fields(body: &[u8]) -> Result<Vec<(String, String)>, ApiError> {
    serde_urlencoded::from_bytes::<Vec<(String, String)>>(body).map_err(|_| {
        ApiError::invalid(
            "(request body)",
            "must be a form (application/x-www-form-urlencoded)",
        )
    })
}

pub(crate) async fn sign_in_page(req: HttpRequest, dash: web::Data<Dashboard>) -> HttpResponse {
    if current(&req, &dash).await.is_ok() {
        return see_other(&format!("{}/", crate::PREFIX));
    }
    let query: HashMap<String, String> =
        serde_urlencoded::from_str(req.query_string()).unwrap_or_default();
    let next = query.get("next").and_then(|n| safe_next(n)).unwrap_or("");
    layout::sign_in(next, None, 200)
}

pub(crate) async fn sign_in(
    req: HttpRequest,
    dash: web::Data<Dashboard>,
    body: web::Bytes,
) -> HttpResponse {
    if !same_origin(&req, &dash) {
        return forged();
    }
    let fields: HashMap<String, String> = match form_fields(&body) {
        Ok(f) => f.into_iter().collect(),
        Err(e) => return layout::error_page(&e),
    };
    let next = fields
        .get("next")
        .and_then(|n| safe_next(n))
        .unwrap_or("")
        .to_owned();
    let key = fields.get("key").map(|k| k.trim()).unwrap_or("");
    let refuse = |message: &str| layout::sign_in(&next, Some(message), 401);
    let key = match ParsedKey::parse(key) {
        Ok(key) if key.kind == KeyKind::Personal => key,
        Ok(_) => return refuse("This is an agent key. Sign in with your personal key (fdp_…)."),
        Err(_) => {
            return refuse(
                "That is not a personal key: it looks like fdp_, 8 characters, _, 43 more.",
            );
        }
    };
    // Signing in again ends the browser's session of before, whoever's it was.
    if let Some(old) = cookie(&req, COOKIE).and_then(|v| SessionToken::parse(&v))
        && let Err(e) = dash.ctx.gate.close_session(&old.hash()).await
    {
        return layout::error_page(&ApiError::from(e));
    }
    let token = SessionToken::generate();
    match dash.ctx.gate.open_session(&key, &token.hash()).await {
        Ok(Some(caller)) => {
            tracing::info!(key_id = %caller.key_id(), "dashboard session opened");
            let target = if next.is_empty() {
                format!("{}/", crate::PREFIX)
            } else {
                next
            };
            let mut res = see_other(&target);
            let cookie = set_cookie(&req, &dash, COOKIE, token.expose(), SESSION_HOURS * 3600);
            res.headers_mut().append(
                header::SET_COOKIE,
                header::HeaderValue::from_str(&cookie).expect("a cookie header is ASCII"),
            );
            res
        }
        Ok(None) => refuse(
            "This key is unknown or revoked, or its person is no longer a member. Ask an admin \
             for a new personal key.",
        ),
        Err(e) => layout::error_page(&ApiError::from(e)),
    }
}

pub(crate) async fn sign_out(
    req: HttpRequest,
    dash: web::Data<Dashboard>,
    body: web::Bytes,
) -> HttpResponse {
    let session = match current(&req, &dash).await {
        Ok(s) => s,
        Err(res) => return res,
    };
    let fields = match form_fields(&body) {
        Ok(f) => f,
        Err(e) => return layout::error_page(&e),
    };
    let csrf = fields.iter().find(|(k, _)| k == "_csrf").map(|(_, v)| v);
    if !same_origin(&req, &dash) || !csrf.is_some_and(|c| session.token.accepts_csrf(c)) {
        return forged();
    }
    if let Err(e) = dash.ctx.gate.close_session(&session.token.hash()).await {
        return layout::error_page(&ApiError::from(e));
    }
    let mut res = see_other(&format!("{}/sign-in", crate::PREFIX));
    let clear = set_cookie(&req, &dash, COOKIE, "", 0);
    res.headers_mut().append(
        header::SET_COOKIE,
        header::HeaderValue::from_str(&clear).expect("a cookie header is ASCII"),
    );
    res
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_dashboard_pages_are_gone_to_after_signing_in() {
        assert_eq!(safe_next("/dashboard/review"), Some("/dashboard/review"));
        assert_eq!(
            safe_next("/dashboard/review?stage=client_review"),
            Some("/dashboard/review?stage=client_review")
        );
        assert_eq!(safe_next("https://evil.test/dashboard/"), None);
        assert_eq!(safe_next("//evil.test/dashboard/"), None);
        assert_eq!(safe_next("/dashboard//evil.test"), None);
        assert_eq!(safe_next("/dashboard/\\evil"), None);
        assert_eq!(safe_next("/api/user/v1/me"), None);
        assert_eq!(safe_next("/dashboard"), None);
    }
}
