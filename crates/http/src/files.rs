//! Signed links to stored files: `GET /files/{id}/{variant}?e=&s=`, with HTTP Range.
//!
//! The body streams piece by piece from storage (a video stored in 3 MiB parts is read one part
//! at a time), so serving a large file holds at most one part in memory.
//!
//! Files are what agents uploaded, served on the service's own origin: every answer carries
//! `X-Content-Type-Options: nosniff` (the declared type is the only one a browser may use) and
//! a sandboxing `Content-Security-Policy`, so a file opened in a browser runs no script and
//! reaches nothing of the service.

use crate::HttpState;
use crate::routes::error_response;
use actix_web::http::StatusCode;
use actix_web::http::header::{self, HeaderValue};
use actix_web::web::Bytes;
use actix_web::{HttpRequest, HttpResponse, HttpResponseBuilder, web};
use fleetdesk_api::ApiError;
use fleetdesk_api::links::{PersonaVariant, Variant};
use fleetdesk_kernel::ErrorCode;
use fleetdesk_media::ports::{Layout, StoredFile};
use fleetdesk_media::service::ThumbBody;
use futures_util::StreamExt;
use uuid::Uuid;

/// What a `Range` header asks for, against a file of `size` bytes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RangeAsk {
    /// No usable range: the whole file.
    Whole,
    /// One satisfiable range, end exclusive.
    Part(std::ops::Range<u64>),
    /// A range that starts past the end: 416.
    Unsatisfiable,
}

/// Reads one `bytes=` range. Several ranges, other units or malformed headers are ignored
/// (the whole file is sent), as HTTP allows.
pub fn parse_range(header: Option<&str>, size: u64) -> RangeAsk {
    let Some(spec) = header.and_then(|h| h.trim().strip_prefix("bytes=")) else {
        return RangeAsk::Whole;
    };
    if spec.contains(',') {
        return RangeAsk::Whole;
    }
    let Some((start, end)) = spec.trim().split_once('-') else {
        return RangeAsk::Whole;
    };
    let (start, end) = (start.trim(), end.trim());
    let range = match (start.is_empty(), end.is_empty()) {
        // bytes=-N: the last N bytes.
        (true, false) => match end.parse::<u64>() {
            Ok(0) => return RangeAsk::Unsatisfiable,
            Ok(n) => size.saturating_sub(n)..size,
            Err(_) => return RangeAsk::Whole,
        },
        (false, _) => {
            let Ok(a) = start.parse::<u64>() else {
                return RangeAsk::Whole;
            };
            let b = if end.is_empty() {
                size.saturating_sub(1)
            } else {
                match end.parse::<u64>() {
                    Ok(b) if b >= a => b.min(size.saturating_sub(1)),
                    _ => return RangeAsk::Whole,
                }
            };
            if a >= size {
                return RangeAsk::Unsatisfiable;
            }
            a..b + 1
        }
        (true, true) => return RangeAsk::Whole,
    };
    if range.is_empty() {
        RangeAsk::Unsatisfiable
    } else {
        RangeAsk::Part(range)
    }
}

fn refused(req: &HttpRequest) -> HttpResponse {
    error_response(
        req,
        &ApiError::forbidden("this link is invalid or has expired; list the media again"),
    )
}

/// The policy every file answer carries: a sandbox (unique origin, no script, no forms, no
/// plugins) that loads nothing; the file itself still displays.
pub const FILE_CSP: &str = "sandbox; default-src 'none'";

pub async fn serve(req: HttpRequest, state: web::Data<HttpState>) -> HttpResponse {
    sandboxed(answer(&req, &state).await)
}

/// Adds the headers every file answer carries: no type sniffing, and [`FILE_CSP`].
fn sandboxed(mut res: HttpResponse) -> HttpResponse {
    let headers = res.headers_mut();
    headers.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    headers.insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static(FILE_CSP),
    );
    res
}

/// What a link asks for: the file and variant of its path, and its signed expiry.
struct LinkAsk<V> {
    id: Uuid,
    variant: V,
    expires: i64,
    sig: String,
}

/// Why a link is not even checked: its path names no file (404), or its query lacks a
/// readable expiry and signature (refused as an invalid link).
enum Unreadable {
    NoSuchFile,
    Unsigned,
}

/// Reads a link's path (`{id}`, `{variant}`, the variant read by `variant`) and query (`e`,
/// `s`).
fn read_link<V>(
    req: &HttpRequest,
    variant: fn(&str) -> Option<V>,
) -> Result<LinkAsk<V>, Unreadable> {
    let info = req.match_info();
    let (Some(id), Some(variant)) = (
        info.get("id").and_then(|v| v.parse::<Uuid>().ok()),
        info.get("variant").and_then(variant),
    ) else {
        return Err(Unreadable::NoSuchFile);
    };
    let params: Vec<(String, String)> =
        serde_urlencoded::from_str(req.query_string()).unwrap_or_default();
    let param = |name: &str| {
        params
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    };
    match (param("e").and_then(|e| e.parse::<i64>().ok()), param("s")) {
        (Some(expires), Some(sig)) => Ok(LinkAsk {
            id,
            variant,
            expires,
            sig: sig.to_owned(),
        }),
        _ => Err(Unreadable::Unsigned),
    }
}

async fn answer(req: &HttpRequest, state: &HttpState) -> HttpResponse {
    let LinkAsk {
        id,
        variant,
        expires,
        sig,
    } = match read_link(req, Variant::parse) {
        Ok(ask) => ask,
        Err(Unreadable::NoSuchFile) => {
            return error_response(req, &ApiError::not_found("no such file"));
        }
        Err(Unreadable::Unsigned) => return refused(req),
    };
    let ctx = &state.ctx;
    if !ctx
        .links
        .verify(id, variant, expires, &sig, jiff::Timestamp::now())
    {
        return refused(req);
    }
    let file = match ctx.media.file(id).await {
        Ok(Some(f)) => f,
        Ok(None) => return error_response(req, &ApiError::not_found("no such file")),
        Err(e) => return error_response(req, &e.into()),
    };
    match variant {
        Variant::File => stream(req, state, file.layout, file.mime_type.mime()),
        Variant::Thumb => media_thumb(req, state, id, file).await,
    }
}

/// A library item's thumbnail: the stored small image (made now when the item has none yet),
/// with the same Range, caching and sandboxing as its file.
async fn media_thumb(
    req: &HttpRequest,
    state: &HttpState,
    id: Uuid,
    file: StoredFile,
) -> HttpResponse {
    match state.ctx.media.thumbnail(id, file).await {
        Ok(Some(ThumbBody::Bytes(bytes, mime))) => send_bytes(req, bytes, mime.mime()),
        Ok(Some(ThumbBody::File(layout, mime))) => stream(req, state, layout, mime.mime()),
        Ok(None) => error_response(req, &ApiError::not_found("this video has no poster")),
        Err(e) => error_response(req, &e.into()),
    }
}

/// A small body already in memory, answered as [`stream`] answers a stored file.
fn send_bytes(req: &HttpRequest, bytes: Bytes, mime: &str) -> HttpResponse {
    ranged(req, bytes.len() as u64, mime, |mut res, range| {
        res.body(bytes.slice(range.start as usize..range.end as usize))
    })
}

fn stream(req: &HttpRequest, state: &HttpState, layout: Layout, mime: &str) -> HttpResponse {
    let media = state.ctx.media.clone();
    ranged(req, layout.bytes as u64, mime, move |mut res, range| {
        let len = range.end - range.start;
        let body = futures_util::stream::iter(layout.pieces(range)).then(move |(key, piece)| {
            let media = media.clone();
            async move {
                media
                    .read(&key, piece)
                    .await
                    .map_err(|e| std::io::Error::other(format!("{e:#}")))
            }
        });
        res.no_chunking(len).streaming(body)
    })
}

/// Answers the `Range` the request asks of `size` bytes: `body` completes the answer (status
/// and headers set) with the range to send; a range past the end is answered 416.
fn ranged(
    req: &HttpRequest,
    size: u64,
    mime: &str,
    body: impl FnOnce(HttpResponseBuilder, std::ops::Range<u64>) -> HttpResponse,
) -> HttpResponse {
    let ask = parse_range(
        req.headers()
            .get(header::RANGE)
            .and_then(|v| v.to_str().ok()),
        size,
    );
    let (status, range) = match ask {
        RangeAsk::Whole => (StatusCode::OK, 0..size),
        RangeAsk::Part(r) => (StatusCode::PARTIAL_CONTENT, r),
        RangeAsk::Unsatisfiable => {
            let mut res = error_response(
                req,
                &ApiError::new(
                    ErrorCode::RangeNotSatisfiable,
                    format!("the range is outside the file's {size} bytes"),
                ),
            );
            if let Ok(v) = HeaderValue::from_str(&format!("bytes */{size}")) {
                res.headers_mut().insert(header::CONTENT_RANGE, v);
            }
            return res;
        }
    };
    let mut res = HttpResponse::build(status);
    res.insert_header((header::CONTENT_TYPE, mime))
        .insert_header((header::ACCEPT_RANGES, "bytes"))
        .insert_header((header::CACHE_CONTROL, "private, max-age=3600"));
    if status == StatusCode::PARTIAL_CONTENT {
        res.insert_header((
            header::CONTENT_RANGE,
            format!("bytes {}-{}/{size}", range.start, range.end - 1),
        ));
    }
    body(res, range)
}

// ---------------------------------------------------------------------------------------------
// Persona images: `GET /files/persona/{id}/{variant}?e=&s=`, links of 15 minutes signed apart
// from the media library's, answered with the same protective headers.

fn persona_refused(req: &HttpRequest) -> HttpResponse {
    error_response(
        req,
        &ApiError::forbidden("this link is invalid or has expired; list the persona images again"),
    )
}

pub async fn serve_persona(req: HttpRequest, state: web::Data<HttpState>) -> HttpResponse {
    sandboxed(persona_answer(&req, &state).await)
}

async fn persona_answer(req: &HttpRequest, state: &HttpState) -> HttpResponse {
    let LinkAsk {
        id,
        variant,
        expires,
        sig,
    } = match read_link(req, PersonaVariant::parse) {
        Ok(ask) => ask,
        Err(Unreadable::NoSuchFile) => {
            return error_response(req, &ApiError::not_found("no such file"));
        }
        Err(Unreadable::Unsigned) => return persona_refused(req),
    };
    let ctx = &state.ctx;
    if !ctx
        .links
        .verify_persona(id, variant, expires, &sig, jiff::Timestamp::now())
    {
        return persona_refused(req);
    }
    // Links serve approved images, and drafts to the person deciding; a refused one is gone.
    match ctx
        .personas
        .served_image(id, variant == PersonaVariant::Thumb)
        .await
    {
        Ok(Some((bytes, mime))) => {
            let mut res = send_bytes(req, bytes, &mime);
            res.headers_mut().insert(
                header::CACHE_CONTROL,
                HeaderValue::from_static("private, max-age=900"),
            );
            res
        }
        Ok(None) => error_response(req, &ApiError::not_found("no such file")),
        Err(e) => error_response(req, &e.into()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranges_as_http_reads_them() {
        assert_eq!(parse_range(None, 100), RangeAsk::Whole);
        assert_eq!(parse_range(Some("bytes=0-9"), 100), RangeAsk::Part(0..10));
        assert_eq!(parse_range(Some("bytes=90-"), 100), RangeAsk::Part(90..100));
        assert_eq!(parse_range(Some("bytes=-10"), 100), RangeAsk::Part(90..100));
        assert_eq!(parse_range(Some("bytes=-500"), 100), RangeAsk::Part(0..100));
        assert_eq!(
            parse_range(Some("bytes=50-500"), 100),
            RangeAsk::Part(50..100)
        );
        assert_eq!(
            parse_range(Some("bytes=99-99"), 100),
            RangeAsk::Part(99..100)
        );
        assert_eq!(
            parse_range(Some("bytes=100-"), 100),
            RangeAsk::Unsatisfiable
        );
        assert_eq!(
            parse_range(Some("bytes=100-200"), 100),
            RangeAsk::Unsatisfiable
        );
        assert_eq!(parse_range(Some("bytes=-0"), 100), RangeAsk::Unsatisfiable);
        assert_eq!(parse_range(Some("bytes=0-1,5-6"), 100), RangeAsk::Whole);
        assert_eq!(parse_range(Some("items=0-1"), 100), RangeAsk::Whole);
        assert_eq!(parse_range(Some("bytes=9-1"), 100), RangeAsk::Whole);
        assert_eq!(parse_range(Some("bytes=x-1"), 100), RangeAsk::Whole);
    }
}
