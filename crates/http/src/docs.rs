//! The pages for people: `GET /`, a short page of links, and `GET /docs`, the interactive API
//! reference (Scalar) over `/openapi.json`. Scalar's script is bundled into the binary from
//! the `scalar_api_reference` crate (MIT, by Scalar): the page loads nothing from elsewhere,
//! and its Content-Security-Policy lets it reach only this service.

use actix_web::http::header;
use actix_web::web::{self, Bytes};
use actix_web::{HttpResponse, Responder};
use std::sync::LazyLock;

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

/// `/docs`: the configuration travels in `data-configuration`, so the page runs no inline
/// script. Fonts come from the system (no font host); telemetry, the developer toolbar and the
/// AI agent (all of which talk to Scalar's own servers) are off.
const DOCS_HTML: &str = r#"<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>fleetdesk API</title>
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
const INDEX_CSP: &str =
    "default-src 'none'; style-src 'unsafe-inline'; base-uri 'none'; frame-ancestors 'none'";

/// Registers `/`, `/docs` and the script (GET and HEAD).
pub fn configure(cfg: &mut web::ServiceConfig) {
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

async fn script() -> impl Responder {
    HttpResponse::Ok()
        .content_type("text/javascript; charset=utf-8")
        .insert_header((header::X_CONTENT_TYPE_OPTIONS, "nosniff"))
        .insert_header((header::CACHE_CONTROL, "public, max-age=3600"))
        .body(SCRIPT.clone())
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
    fn the_docs_page_loads_the_bundled_script_and_the_description() {
        assert!(DOCS_HTML.contains(&format!("<script src=\"{SCRIPT_PATH}\">")));
        assert!(DOCS_HTML.contains("data-url=\"/openapi.json\""));
        assert!(
            !DOCS_HTML.contains("https://"),
            "the page must not load from a CDN"
        );
    }
}
