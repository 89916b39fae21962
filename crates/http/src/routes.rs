//! Routes: one per catalogue operation, plus health, OpenAPI, MCP, and JSON 404/405s.

use crate::HttpState;
use crate::request_id::{ErrorCodeTag, OperationTag, RecordedByMcp, RequestId};
use actix_web::http::header::{self, HeaderValue};
use actix_web::http::{Method, StatusCode};
use actix_web::web::{self, Bytes};
use actix_web::{HttpMessage, HttpRequest, HttpResponse};
use fleetdesk_api::describe::query_kinds;
use fleetdesk_api::input::REQUEST_BODY;
use fleetdesk_api::pipeline::{authenticate, execute_as, execute_raw};
use fleetdesk_api::{Access, ApiError, Args, ErasedOp, HttpMethod, Invocation, Outcome};
use fleetdesk_kernel::ErrorCode;
use fleetdesk_kernel::health::NotReady;
use futures_util::StreamExt;
use serde_json::{Map, Value};
use std::collections::BTreeMap;
use std::sync::Arc;

pub fn request_id(req: &HttpRequest) -> String {
    req.extensions()
        .get::<RequestId>()
        .map(|r| r.0.clone())
        .unwrap_or_default()
}

/// Answers an error with the single error body. A 401 says how to authenticate
/// (`WWW-Authenticate: Bearer`); the error code is left in the response's extensions for the
/// request's log line.
pub fn error_response(req: &HttpRequest, err: &ApiError) -> HttpResponse {
    let status = StatusCode::from_u16(err.status()).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    let mut res = HttpResponse::build(status);
    if let Some(wait) = err.retry_after() {
        res.insert_header((header::RETRY_AFTER, wait.to_string()));
    }
    if err.code == ErrorCode::Unauthorized {
        res.insert_header((header::WWW_AUTHENTICATE, "Bearer"));
    }
    let mut res = res.json(err.body(&request_id(req)));
    res.extensions_mut().insert(ErrorCodeTag(err.code.as_str()));
    res
}

/// A successful outcome as sent: its JSON text as it is.
fn answer(outcome: Outcome) -> HttpResponse {
    let mut res =
        HttpResponse::build(StatusCode::from_u16(outcome.status).unwrap_or(StatusCode::OK));
    res.insert_header(header::ContentType::json());
    if outcome.replayed {
        res.insert_header(("Idempotent-Replayed", "true"));
    }
    let error = (outcome.status >= 400)
        .then(|| serde_json::from_str::<Value>(outcome.body.get()).unwrap_or_default());
    let mut res = res.body(String::from(Box::<str>::from(outcome.body)));
    if let Some(body) = error {
        tag_error(&mut res, &body);
    }
    res
}

/// Tags a JSON answer that is an error body (`code` among the error codes) for the log line.
fn tag_error(res: &mut HttpResponse, body: &Value) {
    if res.status().as_u16() >= 400 {
        let code = body
            .get("code")
            .and_then(Value::as_str)
            .and_then(known_code)
            .unwrap_or("unknown");
        res.extensions_mut().insert(ErrorCodeTag(code));
    }
}

fn known_code(code: &str) -> Option<&'static str> {
    serde_json::from_value::<ErrorCode>(Value::String(code.to_owned()))
        .ok()
        .map(ErrorCode::as_str)
}

fn method(m: HttpMethod) -> Method {
    match m {
        HttpMethod::Get => Method::GET,
        HttpMethod::Post => Method::POST,
        HttpMethod::Put => Method::PUT,
    }
}

/// The service's address as this request reached it: scheme and Host, as a trusted proxy
/// forwarded them or as the connection carries them (`fleetdesk_dashboard::request_origin`).
pub fn request_base(req: &HttpRequest) -> String {
    let config = req
        .app_data::<web::Data<HttpState>>()
        .map(|state| state.ctx.config.clone())
        .unwrap_or_default();
    fleetdesk_dashboard::request_origin(req, &config)
}

pub fn bearer(req: &HttpRequest) -> Option<String> {
    let value = req.headers().get(header::AUTHORIZATION)?.to_str().ok()?;
    let (scheme, token) = value.split_once(' ')?;
    scheme
        .eq_ignore_ascii_case("bearer")
        .then(|| token.trim().to_owned())
}

/// Reads a body up to `limit` bytes within the time [`crate::body::deadline`] gives it; past
/// the limit, 413 without reading the rest, past the time 408. The buffer grows as bytes
/// arrive, whatever `Content-Length` claims. Called only once the caller's key was admitted.
pub async fn read_body(
    mut payload: web::Payload,
    req: &HttpRequest,
    limit: usize,
) -> Result<Bytes, ApiError> {
    let too_large = || crate::body::too_large(limit);
    let declared = crate::body::declared_within(req, limit)?;
    let read = async {
        let mut body = web::BytesMut::new();
        while let Some(chunk) = payload.next().await {
            let chunk = chunk.map_err(|e| {
                ApiError::new(
                    ErrorCode::InvalidRequest,
                    format!("the request body could not be read: {e}"),
                )
                .with_field(REQUEST_BODY)
            })?;
            if body.len() + chunk.len() > limit {
                return Err(too_large());
            }
            body.extend_from_slice(&chunk);
        }
        Ok(body.freeze())
    };
    let allowed = crate::body::deadline(declared.unwrap_or(limit));
    tokio::time::timeout(allowed, read)
        .await
        .unwrap_or_else(|_| Err(crate::body::too_slow(allowed)))
}

/// 415 when a request carrying a body names a media type other than JSON
/// (`application/json`, or any `application/*+json`, with parameters). A body without a
/// `Content-Type` is read as JSON.
pub fn json_content_type(req: &HttpRequest) -> Result<(), ApiError> {
    let Some(value) = req.headers().get(header::CONTENT_TYPE) else {
        return Ok(());
    };
    let has_body = crate::body::declared_within(req, usize::MAX)?.is_some_and(|n| n > 0)
        || req.headers().contains_key(header::TRANSFER_ENCODING);
    let essence = value
        .to_str()
        .unwrap_or("")
        .split(';')
        .next()
        .unwrap_or("")
        .trim()
        .to_ascii_lowercase();
    let json = essence == "application/json"
        || essence
            .strip_prefix("application/")
            .is_some_and(|sub| sub.ends_with("+json"));
    if !has_body || json {
        return Ok(());
    }
    Err(ApiError::new(
        ErrorCode::UnsupportedMediaType,
        "the request body must be JSON: send it with Content-Type: application/json",
    )
    .with_field("Content-Type"))
}

/// The request body as JSON. A syntax error is about the whole body, not a field: it is named
/// `(request body)`, which no field of any operation can be called.
pub fn parse_json_body(bytes: &[u8]) -> Result<Value, ApiError> {
    if bytes.iter().all(u8::is_ascii_whitespace) {
        return Ok(Value::Null);
    }
    serde_json::from_slice(bytes).map_err(|e| {
        ApiError::new(
            ErrorCode::InvalidRequest,
            format!("the request body is not valid JSON: {e}"),
        )
        .with_field(REQUEST_BODY)
    })
}

/// Reads the query string into JSON, typing each parameter as the operation's schema says. No
/// parameter of any operation is a list, so one given twice is refused rather than one of the
/// values silently winning.
fn parse_query(qs: &str, kinds: &Map<String, Value>) -> Result<Map<String, Value>, ApiError> {
    let pairs: Vec<(String, String)> =
        serde_urlencoded::from_str(qs).map_err(|e| ApiError::invalid("query", e))?;
    let mut out = Map::new();
    for (name, raw) in pairs {
        if out.contains_key(&name) {
            return Err(ApiError::invalid(name, "is given more than once"));
        }
        let value = match kinds.get(&name).and_then(Value::as_str) {
            Some("integer") => raw
                .parse::<i64>()
                .map(Value::from)
                .map_err(|_| ApiError::invalid(name.clone(), "must be an integer"))?,
            Some("number") => raw
                .parse::<f64>()
                .ok()
                .and_then(serde_json::Number::from_f64)
                .map(Value::Number)
                .ok_or_else(|| ApiError::invalid(name.clone(), "must be a number"))?,
            Some("boolean") => match raw.as_str() {
                "true" | "1" => Value::Bool(true),
                "false" | "0" => Value::Bool(false),
                _ => return Err(ApiError::invalid(name, "must be true or false")),
            },
            _ => Value::String(raw),
        };
        out.insert(name, value);
    }
    Ok(out)
}

/// The operation's path parameters as matched, percent-decoded, so a code of any script can
/// be addressed. A segment that does not decode to UTF-8 is a 400 naming the parameter.
fn path_args(
    req: &HttpRequest,
    spec: &fleetdesk_api::OpSpec,
) -> Result<Map<String, Value>, ApiError> {
    let mut out = Map::new();
    for name in spec.path_params() {
        // actix-router has already decoded every escape but `%25`, `%2F` and `%2B`, which
        // this decodes (no code holds `%`, so nothing is decoded twice).
        let Some(matched) = req.match_info().get(name) else {
            continue;
        };
        let value = fleetdesk_kernel::percent::decode(matched)
            .ok_or_else(|| ApiError::invalid(name, "is not valid percent-encoded UTF-8"))?;
        out.insert(name.to_owned(), Value::String(value));
    }
    Ok(out)
}

/// 400 when an Idempotency-Key header is sent more than once: which one counts is ambiguous.
fn idempotency_key(req: &HttpRequest) -> Result<Option<String>, ApiError> {
    let mut given = req.headers().get_all("idempotency-key");
    match (given.next(), given.next()) {
        (None, _) => Ok(None),
        (Some(v), None) => Ok(Some(v.to_str().map(str::to_owned).unwrap_or_default())),
        (Some(_), Some(_)) => Err(ApiError::invalid(
            "Idempotency-Key",
            "must be sent once; this request carries the header more than once",
        )),
    }
}

struct Route {
    op: Arc<dyn ErasedOp>,
    /// The operation's id, its name in the metrics (shared: every answer is tagged with it).
    id: Arc<str>,
    query_kinds: Map<String, Value>,
    /// The operation reads a JSON body (a body sent as anything else is 415).
    json_body: bool,
}

/// Answers with a route's handler and tags the answer with the operation it ran, for the
/// metrics (`request_id::middleware` records it).
async fn tagged(answer: impl Future<Output = HttpResponse>, route: &Route) -> HttpResponse {
    let mut res = answer.await;
    res.extensions_mut().insert(OperationTag(route.id.clone()));
    res
}

async fn run(
    req: HttpRequest,
    payload: web::Payload,
    state: web::Data<HttpState>,
    route: Arc<Route>,
) -> HttpResponse {
    let spec = route.op.spec();
    let result = async {
        // The key first: the body of a caller the service does not know is never read.
        crate::body::declared_within(&req, spec.max_body)?;
        let caller = authenticate(&state.ctx, bearer(&req).as_deref()).await?;
        if route.json_body {
            json_content_type(&req)?;
        }
        let body = read_body(payload, &req, spec.max_body).await?;
        // Reading errors are answered by the pipeline with the other input errors.
        let mut input_error = None;
        let idempotency_key = idempotency_key(&req).unwrap_or_else(|e| {
            input_error = Some(e);
            None
        });
        let path = path_args(&req, spec).unwrap_or_else(|e| {
            input_error.get_or_insert(e);
            Map::new()
        });
        let query = parse_query(req.query_string(), &route.query_kinds).unwrap_or_else(|e| {
            input_error.get_or_insert(e);
            Map::new()
        });
        let body = parse_json_body(&body).unwrap_or_else(|e| {
            input_error.get_or_insert(e);
            Value::Null
        });
        let args = Args { path, query, body };
        execute_as(
            &state.ctx,
            route.op.as_ref(),
            caller,
            Invocation {
                bearer: None,
                idempotency_key,
                args,
                input_error,
                base_url: Some(request_base(&req)),
            },
        )
        .await
    }
    .await;
    match result {
        Ok(outcome) => answer(outcome),
        Err(e) => error_response(&req, &e),
    }
}

/// A call whose credential is the link token and whose body is raw bytes (the upload PUTs).
async fn run_raw(
    req: HttpRequest,
    payload: web::Payload,
    state: web::Data<HttpState>,
    route: Arc<Route>,
) -> HttpResponse {
    let spec = route.op.spec();
    let result = async {
        let path = path_args(&req, spec)?;
        let query = parse_query(req.query_string(), &route.query_kinds)?;
        let args = Args {
            path,
            query,
            body: Value::Null,
        };
        // The body is read as the operation takes it, the pump beside it.
        let (body, pump) = crate::body::streamed(payload, &req, spec.max_body)?;
        let call = execute_raw(
            &state.ctx,
            route.op.as_ref(),
            &args,
            body,
            Some(request_base(&req)),
        );
        let (result, received) = futures_util::future::join(call, pump).await;
        state.ctx.telemetry.upload_received(&route.id, received);
        result
    }
    .await;
    match result {
        Ok(outcome) => answer(outcome),
        Err(e) => {
            let mut res = error_response(&req, &e);
            if e.code == ErrorCode::Unauthorized {
                // The credential is the link's token `t` (a bearer token in the URI, RFC 6750
                // 2.3): the challenge says that token is what failed.
                res.headers_mut().insert(
                    header::WWW_AUTHENTICATE,
                    HeaderValue::from_static(r#"Bearer error="invalid_token""#),
                );
            }
            res
        }
    }
}

async fn not_found(req: HttpRequest) -> HttpResponse {
    error_response(
        &req,
        &ApiError::not_found(format!("no route for {} {}", req.method(), req.path())),
    )
}

fn method_not_allowed(
    allowed: String,
) -> impl Fn(HttpRequest) -> std::future::Ready<HttpResponse> + Clone {
    move |req: HttpRequest| {
        let err = ApiError::new(
            ErrorCode::MethodNotAllowed,
            format!("{} is not allowed here; allowed: {allowed}", req.method()),
        );
        let mut res = error_response(&req, &err);
        if let Ok(v) = HeaderValue::from_str(&allowed) {
            res.headers_mut().insert(header::ALLOW, v);
        }
        std::future::ready(res)
    }
}

async fn healthz() -> HttpResponse {
    HttpResponse::Ok().json(serde_json::json!({"status": "ok"}))
}

/// 200 when the instance can serve; otherwise 503 `unavailable` naming the failed `check`:
/// `pool` (every connection in use and requests waiting), `migrations` (the database lacks
/// migrations this binary embeds) or `database` (it does not answer).
async fn readyz(req: HttpRequest, state: web::Data<HttpState>) -> HttpResponse {
    let not_ready = match state.ctx.health.readiness().await {
        Ok(()) => {
            return HttpResponse::Ok().json(serde_json::json!({
                "status": "ready", "database": "ok", "migrations": "ok", "pool": "ok",
            }));
        }
        Err(not_ready) => not_ready,
    };
    let err = match &not_ready {
        NotReady::PoolExhausted(pool) => ApiError::new(
            ErrorCode::Unavailable,
            format!(
                "the database pool is exhausted: {} of {} connections in use, {} requests waiting",
                pool.size.saturating_sub(pool.available),
                pool.max_size,
                pool.waiting
            ),
        )
        .with_extra(
            "pool",
            serde_json::json!({
                "max_size": pool.max_size, "size": pool.size,
                "available": pool.available, "waiting": pool.waiting,
            }),
        ),
        NotReady::MigrationsBehind { missing } => ApiError::new(
            ErrorCode::Unavailable,
            format!(
                "the database lacks {} of this binary's migrations; run `fleetdesk migrate`",
                missing.len()
            ),
        )
        .with_extra("missing_migrations", missing),
        NotReady::Database => ApiError::new(ErrorCode::Unavailable, "the database does not answer"),
    };
    error_response(&req, &err.with_extra("check", not_ready.check()))
}

async fn openapi_all(state: web::Data<HttpState>) -> HttpResponse {
    HttpResponse::Ok().json(state.openapi_all.as_ref())
}

async fn openapi_agent(state: web::Data<HttpState>) -> HttpResponse {
    HttpResponse::Ok().json(state.openapi_agent.as_ref())
}

/// An origin `scheme://host[:port]`, lower-cased, without a default port or a path.
fn normalize_origin(origin: &str) -> Option<String> {
    let (scheme, rest) = origin.trim().split_once("://")?;
    let scheme = scheme.to_ascii_lowercase();
    if scheme != "http" && scheme != "https" {
        return None;
    }
    let authority = rest.split(['/', '?', '#']).next()?.to_ascii_lowercase();
    if authority.is_empty() || authority.contains('@') {
        return None;
    }
    let default_port = if scheme == "https" { ":443" } else { ":80" };
    let authority = authority.strip_suffix(default_port).unwrap_or(&authority);
    Some(format!("{scheme}://{authority}"))
}

/// The host of a normalized origin, brackets of an IPv6 literal removed, and its port.
fn origin_host(origin: &str) -> Option<(&str, Option<&str>)> {
    let (_, authority) = origin.split_once("://")?;
    if let Some(rest) = authority.strip_prefix('[') {
        let (host, after) = rest.split_once(']')?;
        let port = match after {
            "" => None,
            p => Some(p.strip_prefix(':')?),
        };
        return Some((host, port));
    }
    Some(match authority.split_once(':') {
        Some((host, port)) => (host, Some(port)),
        None => (authority, None),
    })
}

/// A browser page served from this machine: `localhost`, 127.0.0.0/8 or `[::1]`, any port.
pub fn is_loopback_origin(origin: &str) -> bool {
    let Some(origin) = normalize_origin(origin) else {
        return false;
    };
    let Some((host, port)) = origin_host(&origin) else {
        return false;
    };
    if port.is_some_and(|p| p.is_empty() || !p.bytes().all(|b| b.is_ascii_digit())) {
        return false;
    }
    host == "localhost"
        || host
            .parse::<std::net::Ipv4Addr>()
            .is_ok_and(|ip| ip.is_loopback())
        || host
            .parse::<std::net::Ipv6Addr>()
            .is_ok_and(|ip| ip.is_loopback())
}

/// Whether a browser page of `origin` may call MCP. With `--base-url`, only that origin; without
/// it, only loopback origins. The request's own Host is never trusted: a DNS-rebinding page
/// reaches a local service under its own name, so its Origin and Host agree.
pub fn mcp_origin_allowed(origin: &str, base_url: Option<&str>) -> bool {
    match base_url {
        Some(base) => {
            normalize_origin(base).is_some_and(|own| normalize_origin(origin) == Some(own))
        }
        None => is_loopback_origin(origin),
    }
}

async fn mcp_post(
    req: HttpRequest,
    payload: web::Payload,
    state: web::Data<HttpState>,
) -> HttpResponse {
    // Requests without Origin (not from a browser page) are unaffected.
    if let Some(origin) = req.headers().get(header::ORIGIN) {
        let base_url = state.ctx.config.base_url.as_deref();
        if !origin
            .to_str()
            .is_ok_and(|o| mcp_origin_allowed(o, base_url))
        {
            let message = match base_url {
                Some(base) => format!(
                    "this Origin may not call MCP; browser pages are accepted only from {}",
                    normalize_origin(base).unwrap_or_default()
                ),
                None => "this Origin may not call MCP; without --base-url only pages on \
                         localhost, 127.0.0.0/8 or [::1] are accepted"
                    .to_owned(),
            };
            return error_response(&req, &ApiError::forbidden(message));
        }
    }
    // The key first: the body of a caller the service does not know is never read. A call
    // the rate limit refuses is read (bounded) for its JSON-RPC id, so the refusal reaches the
    // client's SDK as an error of that call.
    if let Err(e) = crate::body::declared_within(&req, fleetdesk_mcp::MAX_BODY) {
        return error_response(&req, &e);
    }
    let caller = authenticate(&state.ctx, bearer(&req).as_deref()).await;
    if let Err(e) = &caller
        && e.code != ErrorCode::RateLimited
    {
        return error_response(&req, e);
    }
    if let Err(e) = json_content_type(&req) {
        return error_response(&req, &e);
    }
    let body = match read_body(payload, &req, fleetdesk_mcp::MAX_BODY).await {
        Ok(b) => b,
        Err(e) => return error_response(&req, &e),
    };
    let header = |name: &str| {
        req.headers()
            .get(name)
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned)
    };
    let call = fleetdesk_mcp::HttpCall {
        request_id: request_id(&req),
        caller,
        bearer: bearer(&req),
        protocol_version: header("mcp-protocol-version"),
        body,
        base_url: Some(request_base(&req)),
    };
    let mut res = match state.mcp.handle(&state.ctx, call).await {
        fleetdesk_mcp::HttpAnswer::Json(status, value) => {
            let mut res =
                HttpResponse::build(StatusCode::from_u16(status).unwrap_or(StatusCode::OK))
                    .json(&value);
            if status >= 400 {
                // A JSON-RPC message or header the endpoint cannot take.
                res.extensions_mut()
                    .insert(ErrorCodeTag(ErrorCode::InvalidRequest.as_str()));
            }
            res
        }
        fleetdesk_mcp::HttpAnswer::Accepted => HttpResponse::Accepted().finish(),
        fleetdesk_mcp::HttpAnswer::Error(e) => error_response(&req, &e),
        fleetdesk_mcp::HttpAnswer::Limited(value, wait) => {
            let mut res = HttpResponse::Ok()
                .insert_header((header::RETRY_AFTER, wait.to_string()))
                .json(&value);
            res.extensions_mut()
                .insert(ErrorCodeTag(ErrorCode::RateLimited.as_str()));
            res
        }
    };
    res.extensions_mut().insert(RecordedByMcp);
    res
}

pub fn configure(cfg: &mut web::ServiceConfig, state: HttpState) {
    let (ctx, ops) = (state.ctx.clone(), state.ops.clone());
    let mut by_path: BTreeMap<String, Vec<Arc<Route>>> = BTreeMap::new();
    for op in state.ops.iter() {
        let route = Arc::new(Route {
            query_kinds: query_kinds(op.as_ref()),
            json_body: op.doc().input.body.is_some(),
            id: op.spec().id().into(),
            op: op.clone(),
        });
        by_path
            .entry(op.spec().full_path())
            .or_default()
            .push(route);
    }
    cfg.app_data(web::Data::new(state));
    // HEAD is answered wherever GET is, with the same headers and no body (actix sends no
    // body for HEAD).
    cfg.route("/healthz", web::get().to(healthz));
    cfg.route("/healthz", web::head().to(healthz));
    cfg.route("/readyz", web::get().to(readyz));
    cfg.route("/readyz", web::head().to(readyz));
    cfg.route("/openapi.json", web::get().to(openapi_all));
    cfg.route("/openapi.json", web::head().to(openapi_all));
    cfg.route("/openapi-agent.json", web::get().to(openapi_agent));
    cfg.route("/openapi-agent.json", web::head().to(openapi_agent));
    crate::docs::configure(cfg);
    cfg.service(
        web::resource("/api/mcp")
            .route(web::post().to(mcp_post))
            .default_service(web::to(method_not_allowed("POST".into()))),
    );
    // Paths without parameters first: actix tries resources in the order they were registered,
    // a fixed path is a string comparison and a path with parameters a regular expression, so
    // the hot fixed paths (`/accounts`, `/heartbeat`) never run one. A fixed path also wins
    // over a parameter that would match the same text (`/posts/approved`, `/posts/{id}`).
    let (fixed, with_params): (Vec<_>, Vec<_>) = by_path
        .into_iter()
        .partition(|(path, _)| !path.contains('{'));
    for (path, routes) in fixed {
        mount(cfg, path, routes);
    }
    cfg.service(
        web::resource("/files/{id}/{variant}")
            .route(web::get().to(crate::files::serve))
            .route(web::head().to(crate::files::serve))
            .default_service(web::to(method_not_allowed("GET, HEAD".into()))),
    );
    cfg.service(
        web::resource("/files/persona/{id}/{variant}")
            .route(web::get().to(crate::files::serve_persona))
            .route(web::head().to(crate::files::serve_persona))
            .default_service(web::to(method_not_allowed("GET, HEAD".into()))),
    );
    for (path, routes) in with_params {
        mount(cfg, path, routes);
    }
    fleetdesk_dashboard::configure(cfg, ctx, &ops);
    cfg.default_service(web::to(not_found));
}

/// One catalogue path with its operations, one per method, HEAD beside GET, and 405 for the
/// other methods.
fn mount(cfg: &mut web::ServiceConfig, path: String, routes: Vec<Arc<Route>>) {
    let mut allowed = routes
        .iter()
        .map(|r| r.op.spec().method.as_str())
        .collect::<Vec<_>>();
    if allowed.contains(&"GET") {
        allowed.push("HEAD");
    }
    let allowed = allowed.join(", ");
    let mut resource = web::resource(path);
    for route in routes {
        let m = method(route.op.spec().method);
        if m == Method::GET && route.op.spec().access != Access::Token {
            let route = route.clone();
            resource = resource.route(web::head().to(
                move |req: HttpRequest, payload: web::Payload, state: web::Data<HttpState>| {
                    let route = route.clone();
                    async move { tagged(run(req, payload, state, route.clone()), &route).await }
                },
            ));
        }
        resource = if route.op.spec().access == Access::Token {
            resource.route(web::method(m).to(
                move |req: HttpRequest, payload: web::Payload, state: web::Data<HttpState>| {
                    let route = route.clone();
                    async move { tagged(run_raw(req, payload, state, route.clone()), &route).await }
                },
            ))
        } else {
            resource.route(web::method(m).to(
                move |req: HttpRequest, payload: web::Payload, state: web::Data<HttpState>| {
                    let route = route.clone();
                    async move { tagged(run(req, payload, state, route.clone()), &route).await }
                },
            ))
        };
    }
    cfg.service(resource.default_service(web::to(method_not_allowed(allowed))));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_query_parameter_given_twice_is_refused_naming_it() {
        let kinds = serde_json::json!({"limit": "integer", "tag": "string"});
        let kinds = kinds.as_object().expect("object");
        let one = parse_query("limit=5&tag=cat", kinds).expect("one of each");
        assert_eq!(one["limit"], 5);
        assert_eq!(one["tag"], "cat");
        for qs in ["tag=cat&tag=dog", "limit=5&limit=5", "tag=&tag=cat"] {
            let e = parse_query(qs, kinds).expect_err(qs);
            assert_eq!(
                e.field.as_deref(),
                Some(qs.split('=').next().unwrap()),
                "{qs}"
            );
            assert!(e.message.contains("more than once"), "{qs}: {}", e.message);
        }
    }

    #[test]
    fn only_loopback_origins_without_a_base_url() {
        for ok in [
            "http://localhost",
            "http://localhost:6274",
            "https://LOCALHOST:8443",
            "http://127.0.0.1:8080",
            "http://127.9.8.7",
            "http://[::1]:3000",
            "http://[::1]",
        ] {
            assert!(mcp_origin_allowed(ok, None), "{ok}");
        }
        for bad in [
            "http://evil.example",
            "http://localhost.evil.example",
            "http://127.0.0.1.evil.example",
            "http://128.0.0.1",
            "http://0.0.0.0:8080",
            "http://[::2]",
            "http://user@localhost",
            "file://localhost",
            "null",
            "",
            "http://localhost:x",
        ] {
            assert!(!mcp_origin_allowed(bad, None), "{bad}");
        }
    }

    #[test]
    fn with_a_base_url_only_its_origin() {
        let base = Some("https://fleet.example.com/desk/");
        assert!(mcp_origin_allowed("https://fleet.example.com", base));
        assert!(mcp_origin_allowed("https://FLEET.example.com:443", base));
        assert!(!mcp_origin_allowed("http://fleet.example.com", base));
        assert!(!mcp_origin_allowed("https://fleet.example.com:8443", base));
        assert!(!mcp_origin_allowed("http://localhost:3000", base));
        assert!(!mcp_origin_allowed("https://evil.example", base));
    }
}
