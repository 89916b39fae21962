//! The page shell (navigation, the flash line, the sign-out form), the forms every action
//! uses, and the error and sign-in pages.

use crate::session::{Session, cookie, set_cookie};
use crate::{Dashboard, PREFIX};
use actix_web::http::header::{self, HeaderValue};
use actix_web::{HttpRequest, HttpResponse, HttpResponseBuilder};
use fleetdesk_api::ApiError;
use fleetdesk_kernel::wire::fields::Utc;
use jiff::tz::TimeZone;
use maud::{DOCTYPE, Markup, PreEscaped, html};

/// The cookie that carries one message to the next page.
const FLASH: &str = "fleetdesk_flash";

/// Every dashboard answer is private and not to be framed or sniffed; pages load only their own
/// stylesheet, script and the service's media.
pub(crate) fn secured(mut res: HttpResponseBuilder) -> HttpResponseBuilder {
    res.insert_header((header::CACHE_CONTROL, "no-store"))
        .insert_header((header::X_CONTENT_TYPE_OPTIONS, "nosniff"))
        .insert_header((header::X_FRAME_OPTIONS, "DENY"))
        .insert_header((header::REFERRER_POLICY, "same-origin"))
        .insert_header((
            header::CONTENT_SECURITY_POLICY,
            "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; \
             media-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'",
        ));
    res
}

pub(crate) fn html_response(status: u16, markup: Markup) -> HttpResponse {
    let status = actix_web::http::StatusCode::from_u16(status)
        .unwrap_or(actix_web::http::StatusCode::INTERNAL_SERVER_ERROR);
    secured(HttpResponse::build(status))
        .content_type("text/html; charset=utf-8")
        .body(markup.into_string())
}

/// A 303 to `location` (a form post's answer: the browser then gets the page).
pub(crate) fn see_other(location: &str) -> HttpResponse {
    secured(HttpResponse::SeeOther())
        .insert_header((header::LOCATION, location))
        .finish()
}

/// One line for the next page: what an action did, or why it was refused.
pub(crate) struct Flash {
    ok: bool,
    message: String,
}

impl Flash {
    pub fn ok(message: impl Into<String>) -> Flash {
        Flash {
            ok: true,
            message: message.into(),
        }
    }

    pub fn error(message: impl Into<String>) -> Flash {
        Flash {
            ok: false,
            message: message.into(),
        }
    }

    /// Stores the flash in its cookie on `res`: the message cut so the cookie stays under
    /// [`FLASH_BYTES`] once encoded (a Chinese character takes 9), ending with … when cut.
    pub fn set(&self, req: &HttpRequest, dash: &Dashboard, res: &mut HttpResponse) {
        let value = encoded_flash(self.ok, &self.message);
        let cookie = set_cookie(req, dash, FLASH, &value, 60);
        if let Ok(v) = HeaderValue::from_str(&cookie) {
            res.headers_mut().append(header::SET_COOKIE, v);
        }
    }

    fn take(req: &HttpRequest) -> Option<Flash> {
        let raw = cookie(req, FLASH)?;
        let (kind, message) = serde_urlencoded::from_str::<Vec<(String, String)>>(&raw)
            .ok()?
            .into_iter()
            .next()?;
        Some(Flash {
            ok: kind == "ok",
            message,
        })
    }
}

/// The most bytes a flash's encoded value takes, well under the 4 KB a browser keeps.
const FLASH_BYTES: usize = 3000;

fn encoded_flash(ok: bool, message: &str) -> String {
    let kind = if ok { "ok" } else { "error" };
    let mut chars: Vec<char> = message.chars().collect();
    let mut cut = false;
    loop {
        let text: String = chars.iter().collect::<String>() + if cut { "…" } else { "" };
        let value = serde_urlencoded::to_string([(kind, text)]).unwrap_or_default();
        if value.len() <= FLASH_BYTES || chars.is_empty() {
            return value;
        }
        let keep = chars.len() * FLASH_BYTES / value.len();
        chars.truncate(keep.min(chars.len() - 1));
        cut = true;
    }
}

/// The navigation: (path, label, who sees it).
const NAV: &[(&str, &str, Who)] = &[
    ("/today", "Today", Who::Agency),
    ("/review", "Review", Who::Everyone),
    ("/decisions", "Decisions", Who::Agency),
    ("/tasks", "Tasks", Who::Agency),
    ("/tickets", "Tickets", Who::Agency),
    ("/metrics", "Metrics", Who::Agency),
    ("/personas", "Personas", Who::Agency),
    ("/knowledge", "Knowledge", Who::Agency),
    ("/research", "Research", Who::Agency),
    ("/reports", "Reports", Who::Everyone),
    ("/webhooks", "Webhooks", Who::Agency),
    ("/keys", "Keys", Who::Admin),
];

#[derive(Clone, Copy, PartialEq)]
enum Who {
    Everyone,
    Agency,
    Admin,
}

fn sees(session: &Session, who: Who) -> bool {
    match who {
        Who::Everyone => true,
        Who::Agency => session.agency(),
        Who::Admin => session.member.platform_admin,
    }
}

/// A page of the dashboard: `current` is its navigation path (`/review`).
pub(crate) fn page(
    req: &HttpRequest,
    dash: &Dashboard,
    session: &Session,
    title: &str,
    current: &str,
    body: Markup,
) -> HttpResponse {
    page_with_status(req, dash, session, (title, current), body, 200)
}

/// A read the page needed was refused (a client on an agency page: 403): the refusal inside
/// the signed-in shell, with its status. A failure of the service is the bare error page.
pub(crate) fn refusal(
    req: &HttpRequest,
    dash: &Dashboard,
    session: &Session,
    e: &ApiError,
) -> HttpResponse {
    if e.status() >= 500 {
        return error_page(e);
    }
    let body = html! { p.flash.error role="alert" { (e.message) } };
    page_with_status(req, dash, session, (title_of(e), ""), body, e.status())
}

fn page_with_status(
    req: &HttpRequest,
    dash: &Dashboard,
    session: &Session,
    (title, current): (&str, &str),
    body: Markup,
    status: u16,
) -> HttpResponse {
    let flash = Flash::take(req);
    let markup = html! {
        (DOCTYPE)
        html lang="en" {
            (head(title))
            body {
                a.skip href="#main" { "Skip to content" }
                header.top {
                    nav aria-label="Main" {
                        a.brand href={(PREFIX) "/"} { "fleetdesk" }
                        ul {
                            @for (path, label, who) in NAV {
                                @if sees(session, *who) {
                                    li {
                                        a href={(PREFIX) (path)}
                                          aria-current=[(current == *path).then_some("page")] {
                                            (label)
                                        }
                                    }
                                }
                            }
                        }
                    }
                    form.signout method="post" action={(PREFIX) "/sign-out"} {
                        input type="hidden" name="_csrf" value=(session.csrf());
                        span.who { (session.member.name) }
                        button.link type="submit" { "Sign out" }
                    }
                }
                main #main {
                    @if let Some(f) = &flash {
                        p.flash.ok[f.ok].error[!f.ok] role=(if f.ok { "status" } else { "alert" }) {
                            (f.message)
                        }
                    }
                    h1 { (title) }
                    (body)
                }
                script src={(PREFIX) "/assets/" (crate::assets::SCRIPT)} defer {}
            }
        }
    };
    let mut res = html_response(status, markup);
    if flash.is_some() {
        let clear = set_cookie(req, dash, FLASH, "", 0);
        if let Ok(v) = HeaderValue::from_str(&clear) {
            res.headers_mut().append(header::SET_COOKIE, v);
        }
    }
    res
}

fn head(title: &str) -> Markup {
    html! {
        head {
            meta charset="utf-8";
            meta name="viewport" content="width=device-width, initial-scale=1";
            title { (title) " · fleetdesk" }
            link rel="icon" href="/favicon.svg" type="image/svg+xml";
            link rel="stylesheet" href={(PREFIX) "/assets/" (crate::assets::STYLE)};
        }
    }
}

/// A page outside the signed-in shell (an error, not found).
pub(crate) fn bare(title: &str, message: &str) -> Markup {
    html! {
        (DOCTYPE)
        html lang="en" {
            (head(title))
            body {
                main #main .narrow {
                    h1 { (title) }
                    p { (message) }
                    p { a href={(PREFIX) "/"} { "Back to the dashboard" } }
                }
            }
        }
    }
}

fn title_of(e: &ApiError) -> &'static str {
    match e.status() {
        401 => "Signed out",
        403 => "Not allowed",
        404 => "Not found",
        429 => "Too many requests",
        s if s >= 500 => "Something went wrong",
        _ => "Refused",
    }
}

/// The page for an error outside a signed-in page (a forged form, a failure of the service):
/// its status and message.
pub(crate) fn error_page(e: &ApiError) -> HttpResponse {
    let title = title_of(e);
    let message = if e.status() >= 500 {
        "The service could not answer just now. Try again in a moment.".to_owned()
    } else {
        e.message.clone()
    };
    let mut res = html_response(e.status(), bare(title, &message));
    if let Some(wait) = e.retry_after() {
        res.headers_mut().insert(
            header::RETRY_AFTER,
            HeaderValue::from_str(&wait.to_string()).expect("a number is ASCII"),
        );
    }
    res
}

/// The sign-in page, with why the last attempt failed.
pub(crate) fn sign_in(next: &str, problem: Option<&str>, status: u16) -> HttpResponse {
    html_response(
        status,
        html! {
            (DOCTYPE)
            html lang="en" {
                (head("Sign in"))
                body {
                    main #main .narrow {
                        h1 { "Sign in to fleetdesk" }
                        p {
                            "Paste your personal key (it starts with " code { "fdp_" } "). It is \
                             exchanged for a session of this browser and is not kept in it."
                        }
                        @if let Some(problem) = problem {
                            p.flash.error role="alert" #key-problem { (problem) }
                        }
                        form method="post" action={(PREFIX) "/sign-in"} {
                            input type="hidden" name="next" value=(next);
                            label for="key" { "Personal key" }
                            input #key type="password" name="key" required autocomplete="off"
                                spellcheck="false" autocapitalize="off"
                                aria-describedby=[problem.map(|_| "key-problem")];
                            button.primary type="submit" { "Sign in" }
                        }
                    }
                }
            }
        },
    )
}

/// The hidden fields of an action's form: the session's CSRF token, a one-time
/// Idempotency-Key (a form sent twice acts once), the page to come back to and what to say.
pub(crate) fn form_fields(session: &Session, back: &str, done: &str) -> Markup {
    html! {
        input type="hidden" name="_csrf" value=(session.csrf());
        input type="hidden" name="_idem" value={"dashboard-" (uuid::Uuid::new_v4())};
        input type="hidden" name="_back" value=(back);
        input type="hidden" name="_done" value=(done);
    }
}

/// A time of an answer as the people of a zone read it: `2026-11-27 14:05 (Asia/Taipei)`.
pub(crate) fn local(at: Utc, zone: &str) -> String {
    let tz = TimeZone::get(zone).unwrap_or(TimeZone::UTC);
    format!("{} ({zone})", at.0.to_zoned(tz).strftime("%Y-%m-%d %H:%M"))
}

/// Markup for text that is already safe HTML (an inline SVG chart built from numbers).
pub(crate) fn trusted(svg: String) -> Markup {
    PreEscaped(svg)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_long_flash_is_cut_to_fit_a_cookie() {
        let short = encoded_flash(true, "Approved.");
        assert_eq!(short, "ok=Approved.");
        let long = encoded_flash(false, &"貓".repeat(600));
        assert!(long.len() <= FLASH_BYTES, "{}", long.len());
        assert!(long.starts_with("error=%E8%B2%93"));
        assert!(long.ends_with("%E2%80%A6"), "ends with …");
    }

    #[test]
    fn times_read_in_the_zone_asked() {
        let at = Utc("2026-11-27T06:05:00Z".parse().expect("a time"));
        assert_eq!(local(at, "Asia/Taipei"), "2026-11-27 14:05 (Asia/Taipei)");
        assert_eq!(local(at, "Not/A_Zone"), "2026-11-27 06:05 (Not/A_Zone)");
    }
}
