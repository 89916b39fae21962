//! The stylesheet and script, bundled into the binary: no page loads anything from elsewhere.

use actix_web::http::header;
use actix_web::{HttpRequest, HttpResponse, web};
use sha2::{Digest, Sha256};

pub(crate) const STYLE: &str = "app.css";
pub(crate) const SCRIPT: &str = "app.js";

const FILES: &[(&str, &str, &str)] = &[
    (
        STYLE,
        "text/css; charset=utf-8",
        include_str!("../assets/app.css"),
    ),
    (
        SCRIPT,
        "text/javascript; charset=utf-8",
        include_str!("../assets/app.js"),
    ),
];

/// Each file's entity tag: the start of its SHA-256, so a browser revalidates cheaply (304)
/// and sees a changed file at once.
fn etag(text: &str) -> String {
    let digest = Sha256::digest(text.as_bytes());
    let hex: String = digest[..8].iter().map(|b| format!("{b:02x}")).collect();
    format!("\"{hex}\"")
}

pub(crate) async fn serve(req: HttpRequest, name: web::Path<String>) -> HttpResponse {
    let Some((_, kind, text)) = FILES.iter().find(|(n, _, _)| *n == name.as_str()) else {
        return crate::layout::secured(HttpResponse::NotFound()).finish();
    };
    let tag = etag(text);
    let fresh = req
        .headers()
        .get(header::IF_NONE_MATCH)
        .is_some_and(|v| v.as_bytes() == tag.as_bytes());
    let mut res = if fresh {
        HttpResponse::NotModified()
    } else {
        HttpResponse::Ok()
    };
    res.insert_header((header::ETAG, tag))
        .insert_header((header::CACHE_CONTROL, "no-cache"))
        .insert_header((header::X_CONTENT_TYPE_OPTIONS, "nosniff"));
    if fresh {
        return res.finish();
    }
    res.content_type(*kind).body(*text)
}
