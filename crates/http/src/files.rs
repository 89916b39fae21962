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
use actix_web::{HttpRequest, HttpResponse, web};
use fleetdesk_api::ApiError;
use fleetdesk_api::links::Variant;
use fleetdesk_kernel::ErrorCode;
use fleetdesk_kernel::media::MediaKind;
use fleetdesk_media::ports::Layout;
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
    let mut res = answer(&req, &state).await;
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

async fn answer(req: &HttpRequest, state: &HttpState) -> HttpResponse {
    let info = req.match_info();
    let (Some(id), Some(variant)) = (
        info.get("id").and_then(|v| v.parse::<Uuid>().ok()),
        info.get("variant").and_then(Variant::parse),
    ) else {
        return error_response(req, &ApiError::not_found("no such file"));
    };
    let params: Vec<(String, String)> =
        serde_urlencoded::from_str(req.query_string()).unwrap_or_default();
    let param = |name: &str| {
        params
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    };
    let (Some(expires), Some(sig)) = (param("e").and_then(|e| e.parse::<i64>().ok()), param("s"))
    else {
        return refused(req);
    };
    let ctx = &state.ctx;
    if !ctx
        .links
        .verify(id, variant, expires, sig, jiff::Timestamp::now())
    {
        return refused(req);
    }
    let file = match ctx.media.repo().file(id).await {
        Ok(Some(f)) => f,
        Ok(None) => return error_response(req, &ApiError::not_found("no such file")),
        Err(e) => return error_response(req, &e.into()),
    };
    let (layout, mime) = match variant {
        Variant::File => (file.layout, file.mime_type),
        Variant::Thumb if file.mime_type.kind() == MediaKind::Image => {
            (file.layout, file.mime_type)
        }
        Variant::Thumb => match file.poster {
            Some((key, mime)) => match ctx.media.read_whole(&key).await {
                Ok(bytes) => {
                    return HttpResponse::Ok()
                        .insert_header((header::CONTENT_TYPE, mime.mime()))
                        .insert_header((header::CACHE_CONTROL, "private, max-age=3600"))
                        .body(bytes);
                }
                Err(e) => return error_response(req, &e.into()),
            },
            None => return error_response(req, &ApiError::not_found("this video has no poster")),
        },
    };
    stream(req, state, layout, mime.mime())
}

fn stream(req: &HttpRequest, state: &HttpState, layout: Layout, mime: &str) -> HttpResponse {
    let size = layout.bytes as u64;
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
    let len = range.end - range.start;
    let media = state.ctx.media.clone();
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
