//! The pages for people: `GET /`, a short page of links, and `GET /docs`, the interactive API
//! reference (Scalar) over `/openapi.json`. Scalar's script is bundled into the binary from
//! the `scalar_api_reference` crate (MIT, by Scalar): the page loads nothing from elsewhere,
//! and its Content-Security-Policy lets it reach only this service. The script (4.9 MB) is
//! gzipped once, in the background when the routes are set up, and sent so to a browser that
//! accepts gzip. `/favicon.svg` (also answered at `/favicon.ico`) is the pages' icon.

use actix_web::http::header;
use actix_web::web::{self, Bytes};
use actix_web::{HttpRequest, HttpResponse};
use std::io::Write;
use std::sync::{LazyLock, Once};

/// Where the interactive documentation is served.
pub const DOCS_PATH: &str = "/docs";
/// Where its bundled script is served.
pub const SCRIPT_PATH: &str = "/docs/scalar.js";

/// The standalone Scalar API reference bundle, read once from the binary.
static SCRIPT: LazyLock<Bytes> = LazyLock::new(|| {
    scalar_api_reference::get_asset("scalar.js")
        .map(Bytes::from)
        .unwrap_or_default()
});

/// The script gzipped (best compression: made once per process).
static SCRIPT_GZIP: LazyLock<Bytes> = LazyLock::new(|| {
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::best());
    let _ = gz.write_all(&SCRIPT);
    gz.finish().map(Bytes::from).unwrap_or_default()
});

/// Where the icon is served; browsers that ask `/favicon.ico` on their own get it there too.
pub const FAVICON_PATH: &str = "/favicon.svg";

/// The icon: an "f" on the dashboard's blue, bundled.
const FAVICON: &str = r##"<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 32 32"><rect width="32" height="32" rx="6" fill="#1d4ed8"/><path d="M13 26V14h-3v-3h3V9.5C13 6.5 14.8 5 17.6 5c1.2 0 2.2.1 2.4.1v3h-1.7c-1.3 0-1.7.7-1.7 1.7V11h3.4l-.5 3h-2.9v12z" fill="#fff"/></svg>
"##;

/// `/docs`: the configuration travels in `data-configuration`, so the page runs no inline
/// script. Fonts come from the system (no font host); telemetry, the developer toolbar and the
/// AI agent (all of which talk to Scalar's own servers) are off.
const DOCS_HTML: &str = r#"<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>fleetdesk API</title>
<link rel="icon" href="/favicon.svg" type="image/svg+xml">
</head>
<body>
<noscript>The interactive documentation needs JavaScript. The OpenAPI descriptions:
<a href="/openapi.json">/openapi.json</a> (Agent API and Personal API),
<a href="/openapi-agent.json">/openapi-agent.json</a> (Agent API).</noscript>
<script id="api-reference" data-url="/openapi.json" data-configuration='{"url": "/openapi.json", "telemetry": false, "withDefaultFonts": false, "showDeveloperTools": "never", "agent": {"disabled": true}}'></script>
<script src="/docs/scalar.js"></script>
</body>
</html>
"#;

/// `/`: where to go from here.
const INDEX_HTML: &str = r#"<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>fleetdesk</title>
<link rel="icon" href="/favicon.svg" type="image/svg+xml">
<style>body{font:16px/1.5 system-ui,sans-serif;max-width:42rem;margin:3rem auto;padding:0 1rem}</style>
</head>
<body>
<h1>fleetdesk</h1>
<p>The back office where an agency's AI agents and its people run a fleet of social-media
accounts.</p>
<ul>
<li><a href="/dashboard/">/dashboard</a>: the dashboard, for people (sign in with a personal key)</li>
<li><a href="/docs">/docs</a>: the interactive API documentation</li>
<li><a href="/openapi.json">/openapi.json</a>: the OpenAPI 3.1 description of the Agent API and
the Personal API</li>
<li><a href="/openapi-agent.json">/openapi-agent.json</a>: the Agent API alone</li>
<li><code>/api/mcp</code>: the MCP endpoint (Streamable HTTP: POST JSON-RPC with an agent
key)</li>
<li><a href="/healthz">/healthz</a> and <a href="/readyz">/readyz</a>: health, without a key</li>
</ul>
<p>Every API call carries a key: <code>Authorization: Bearer fda_...</code> for an agent,
<code>fdp_...</code> for a person.</p>
</body>
</html>
"#;

/// The script and the OpenAPI description come from here; styles are injected by the script.
const DOCS_CSP: &str = "default-src 'none'; script-src 'self'; style-src 'self' 'unsafe-inline'; \
     img-src 'self' data: blob:; font-src 'self' data:; connect-src 'self'; \
     worker-src 'self' blob:; base-uri 'none'; form-action 'none'; frame-ancestors 'none'";
const INDEX_CSP: &str = "default-src 'none'; style-src 'unsafe-inline'; img-src 'self'; \
     base-uri 'none'; frame-ancestors 'none'";

/// Registers `/`, `/docs`, the script and the icon (GET and HEAD), and starts gzipping the
/// script in the background (once per process).
pub fn configure(cfg: &mut web::ServiceConfig) {
    static GZIPPING: Once = Once::new();
    GZIPPING.call_once(|| {
        std::thread::spawn(|| LazyLock::force(&SCRIPT_GZIP));
    });
    for path in [FAVICON_PATH, "/favicon.ico"] {
        cfg.route(path, web::get().to(favicon));
        cfg.route(path, web::head().to(favicon));
    }
    cfg.route("/", web::get().to(index));
    cfg.route("/", web::head().to(index));
    cfg.route(DOCS_PATH, web::get().to(docs));
    cfg.route(DOCS_PATH, web::head().to(docs));
    cfg.route(SCRIPT_PATH, web::get().to(script));
    cfg.route(SCRIPT_PATH, web::head().to(script));
}

fn html(body: &'static str, csp: &'static str) -> HttpResponse {
    HttpResponse::Ok()
        .content_type("text/html; charset=utf-8")
        .insert_header((header::CONTENT_SECURITY_POLICY, csp))
        .insert_header((header::X_CONTENT_TYPE_OPTIONS, "nosniff"))
        .insert_header((header::REFERRER_POLICY, "no-referrer"))
        .body(body)
}

async fn index() -> HttpResponse {
    html(INDEX_HTML, INDEX_CSP)
}

async fn docs() -> HttpResponse {
    html(DOCS_HTML, DOCS_CSP)
}

/// True when the request's Accept-Encoding takes gzip (not with `q=0`).
fn accepts_gzip(req: &HttpRequest) -> bool {
    req.headers()
        .get_all(header::ACCEPT_ENCODING)
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .any(|coding| {
            let mut parts = coding.split(';').map(str::trim);
            let name = parts.next().unwrap_or_default();
            let q = parts
                .find_map(|p| p.strip_prefix("q="))
                .and_then(|q| q.parse::<f32>().ok())
                .unwrap_or(1.0);
            (name.eq_ignore_ascii_case("gzip") || name == "*") && q > 0.0
        })
}

async fn script(req: HttpRequest) -> HttpResponse {
    let mut res = HttpResponse::Ok();
    res.content_type("text/javascript; charset=utf-8")
        .insert_header((header::X_CONTENT_TYPE_OPTIONS, "nosniff"))
        .insert_header((header::CACHE_CONTROL, "public, max-age=3600"))
        .insert_header((header::VARY, "Accept-Encoding"));
    if accepts_gzip(&req) && !SCRIPT_GZIP.is_empty() {
        res.insert_header((header::CONTENT_ENCODING, "gzip"))
            .body(SCRIPT_GZIP.clone())
    } else {
        res.body(SCRIPT.clone())
    }
}

async fn favicon() -> HttpResponse {
    HttpResponse::Ok()
        .content_type("image/svg+xml")
        .insert_header((header::X_CONTENT_TYPE_OPTIONS, "nosniff"))
        .insert_header((header::CACHE_CONTROL, "public, max-age=86400"))
        .body(FAVICON)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_script_is_in_the_binary() {
        assert!(
            SCRIPT.len() > 1_000_000,
            "the bundled Scalar script is missing or truncated ({} bytes)",
            SCRIPT.len()
        );
        assert!(
            String::from_utf8_lossy(&SCRIPT).contains("createApiReference"),
            "the bundled script is not Scalar's API reference"
        );
    }

    #[test]
    fn the_gzipped_script_is_the_script() {
        let mut plain = Vec::new();
        std::io::Read::read_to_end(
            &mut flate2::read::GzDecoder::new(&SCRIPT_GZIP[..]),
            &mut plain,
        )
        .expect("gunzip");
        assert_eq!(plain, SCRIPT.as_ref());
        assert!(
            SCRIPT_GZIP.len() * 3 < SCRIPT.len(),
            "{}",
            SCRIPT_GZIP.len()
        );
    }

    #[test]
    fn the_docs_page_loads_the_bundled_script_and_the_description() {
        assert!(DOCS_HTML.contains(&format!("<script src=\"{SCRIPT_PATH}\">")));
        assert!(DOCS_HTML.contains("data-url=\"/openapi.json\""));
        assert!(
            !DOCS_HTML.contains("https://"),
            "the page must not load from a CDN"
        );
    }
}
