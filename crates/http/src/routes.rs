//! Routes: one per catalogue operation, plus health, OpenAPI, MCP, and JSON 404/405s.

use crate::HttpState;
use crate::request_id::RequestId;
use actix_web::http::header::{self, HeaderValue};
use actix_web::http::{Method, StatusCode};
use actix_web::web::{self, Bytes};
use actix_web::{HttpMessage, HttpRequest, HttpResponse};
use fleetdesk_api::describe::query_kinds;
use fleetdesk_api::pipeline::execute_raw;
use fleetdesk_api::{Access, ApiError, Args, ErasedOp, HttpMethod, Invocation, execute};
use fleetdesk_kernel::ErrorCode;
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

/// Answers an error with the single error body.
pub fn error_response(req: &HttpRequest, err: &ApiError) -> HttpResponse {
    let status = StatusCode::from_u16(err.status()).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    let mut res = HttpResponse::build(status);
    if let Some(wait) = err.retry_after() {
        res.insert_header((header::RETRY_AFTER, wait.to_string()));
    }
    res.json(err.body(&request_id(req)))
}

fn method(m: HttpMethod) -> Method {
    match m {
        HttpMethod::Get => Method::GET,
        HttpMethod::Post => Method::POST,
        HttpMethod::Put => Method::PUT,
    }
}

/// The service's address as this request reached it: scheme and Host.
pub fn request_base(req: &HttpRequest) -> String {
    let info = req.connection_info();
    format!("{}://{}", info.scheme(), info.host())
}

pub fn bearer(req: &HttpRequest) -> Option<String> {
    let value = req.headers().get(header::AUTHORIZATION)?.to_str().ok()?;
    let (scheme, token) = value.split_once(' ')?;
    scheme
        .eq_ignore_ascii_case("bearer")
        .then(|| token.trim().to_owned())
}

/// Reads a body up to `limit` bytes; past it, 413 without reading the rest.
pub async fn read_body(
    mut payload: web::Payload,
    req: &HttpRequest,
    limit: usize,
) -> Result<Bytes, ApiError> {
    let too_large = || {
        ApiError::new(
            ErrorCode::PayloadTooLarge,
            format!("the request body is larger than {limit} bytes"),
        )
    };
    let declared = req
        .headers()
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<usize>().ok());
    if declared.is_some_and(|len| len > limit) {
        return Err(too_large());
    }
    // One allocation of the declared size: a 3 MiB chunk never doubles its buffer on the way.
    let mut body = web::BytesMut::with_capacity(declared.unwrap_or(0));
    while let Some(chunk) = payload.next().await {
        let chunk =
            chunk.map_err(|e| ApiError::invalid("body", format!("could not be read: {e}")))?;
        if body.len() + chunk.len() > limit {
            return Err(too_large());
        }
        body.extend_from_slice(&chunk);
    }
    Ok(body.freeze())
}

pub fn parse_json_body(bytes: &[u8]) -> Result<Value, ApiError> {
    if bytes.iter().all(u8::is_ascii_whitespace) {
        return Ok(Value::Null);
    }
    serde_json::from_slice(bytes)
        .map_err(|e| ApiError::invalid("body", format!("is not valid JSON ({e})")))
}

/// Reads the query string into JSON, typing each parameter as the operation's schema says.
fn parse_query(qs: &str, kinds: &Map<String, Value>) -> Result<Map<String, Value>, ApiError> {
    let pairs: Vec<(String, String)> =
        serde_urlencoded::from_str(qs).map_err(|e| ApiError::invalid("query", e))?;
    let mut out = Map::new();
    for (name, raw) in pairs {
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

/// The operation's path parameters as matched.
fn path_args(req: &HttpRequest, spec: &fleetdesk_api::OpSpec) -> Map<String, Value> {
    spec.path_params()
        .into_iter()
        .filter_map(|name| {
            let v = req.match_info().get(name)?;
            Some((name.to_owned(), Value::String(v.to_owned())))
        })
        .collect()
}

struct Route {
    op: Arc<dyn ErasedOp>,
    query_kinds: Map<String, Value>,
}

async fn run(
    req: HttpRequest,
    payload: web::Payload,
    state: web::Data<HttpState>,
    route: Arc<Route>,
) -> HttpResponse {
    let spec = route.op.spec();
    let result = async {
        let body = read_body(payload, &req, spec.max_body).await?;
        let path = path_args(&req, spec);
        // Reading errors are answered by the pipeline after authentication.
        let mut input_error = None;
        let query = parse_query(req.query_string(), &route.query_kinds).unwrap_or_else(|e| {
            input_error = Some(e);
            Map::new()
        });
        let body = parse_json_body(&body).unwrap_or_else(|e| {
            input_error.get_or_insert(e);
            Value::Null
        });
        let args = Args { path, query, body };
        let idempotency_key = req
            .headers()
            .get("idempotency-key")
            .map(|v| v.to_str().map(str::to_owned).unwrap_or_default());
        execute(
            &state.ctx,
            route.op.as_ref(),
            Invocation {
                bearer: bearer(&req),
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
        Ok(outcome) => {
            let mut res =
                HttpResponse::build(StatusCode::from_u16(outcome.status).unwrap_or(StatusCode::OK));
            if outcome.replayed {
                res.insert_header(("Idempotent-Replayed", "true"));
            }
            res.json(outcome.body)
        }
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
        let path = path_args(&req, spec);
        let query = parse_query(req.query_string(), &route.query_kinds)?;
        let args = Args {
            path,
            query,
            body: Value::Null,
        };
        let body = read_body(payload, &req, spec.max_body).await?;
        execute_raw(
            &state.ctx,
            route.op.as_ref(),
            &args,
            body,
            Some(request_base(&req)),
        )
        .await
    }
    .await;
    match result {
        Ok(outcome) => {
            HttpResponse::build(StatusCode::from_u16(outcome.status).unwrap_or(StatusCode::OK))
                .json(outcome.body)
        }
        Err(e) => error_response(&req, &e),
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

async fn readyz(req: HttpRequest, state: web::Data<HttpState>) -> HttpResponse {
    if state.ctx.gate.ready().await {
        HttpResponse::Ok().json(serde_json::json!({"status": "ready", "database": "ok"}))
    } else {
        error_response(
            &req,
            &ApiError::new(ErrorCode::Unavailable, "the database does not answer"),
        )
    }
}

async fn openapi_all(state: web::Data<HttpState>) -> HttpResponse {
    HttpResponse::Ok().json(state.openapi_all.as_ref())
}

async fn openapi_agent(state: web::Data<HttpState>) -> HttpResponse {
    HttpResponse::Ok().json(state.openapi_agent.as_ref())
}

/// The service's own origin: `--base-url` when set (then nothing else), else the origin of
/// the request's Host.
fn own_origins(req: &HttpRequest, state: &HttpState) -> Vec<String> {
    if let Some(base) = &state.ctx.config.base_url {
        return vec![base.trim_end_matches('/').to_ascii_lowercase()];
    }
    let info = req.connection_info();
    ["http", "https"]
        .iter()
        .map(|scheme| format!("{scheme}://{}", info.host()).to_ascii_lowercase())
        .collect()
}

async fn mcp_post(
    req: HttpRequest,
    payload: web::Payload,
    state: web::Data<HttpState>,
) -> HttpResponse {
    let origin = req
        .headers()
        .get(header::ORIGIN)
        .and_then(|v| v.to_str().ok())
        .map(|o| o.trim_end_matches('/').to_ascii_lowercase());
    if let Some(origin) = origin
        && !own_origins(&req, &state).contains(&origin)
    {
        return error_response(
            &req,
            &ApiError::forbidden(format!("origin {origin} is not this service's own")),
        );
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
        bearer: bearer(&req),
        protocol_version: header("mcp-protocol-version"),
        body,
        base_url: Some(request_base(&req)),
    };
    match state.mcp.handle(&state.ctx, call).await {
        fleetdesk_mcp::HttpAnswer::Json(status, value) => {
            HttpResponse::build(StatusCode::from_u16(status).unwrap_or(StatusCode::OK)).json(value)
        }
        fleetdesk_mcp::HttpAnswer::Accepted => HttpResponse::Accepted().finish(),
        fleetdesk_mcp::HttpAnswer::Error(e) => error_response(&req, &e),
    }
}

pub fn configure(cfg: &mut web::ServiceConfig, state: HttpState) {
    let mut by_path: BTreeMap<String, Vec<Arc<Route>>> = BTreeMap::new();
    for op in state.ops.iter() {
        let route = Arc::new(Route {
            query_kinds: query_kinds(op.as_ref()),
            op: op.clone(),
        });
        by_path
            .entry(op.spec().full_path())
            .or_default()
            .push(route);
    }
    cfg.app_data(web::Data::new(state));
    cfg.route("/healthz", web::get().to(healthz));
    cfg.route("/readyz", web::get().to(readyz));
    cfg.route("/openapi.json", web::get().to(openapi_all));
    cfg.route("/openapi-agent.json", web::get().to(openapi_agent));
    cfg.service(
        web::resource("/files/{id}/{variant}")
            .route(web::get().to(crate::files::serve))
            .route(web::head().to(crate::files::serve))
            .default_service(web::to(method_not_allowed("GET, HEAD".into()))),
    );
    cfg.service(
        web::resource("/api/mcp")
            .route(web::post().to(mcp_post))
            .default_service(web::to(method_not_allowed("POST".into()))),
    );
    for (path, routes) in by_path {
        let allowed = routes
            .iter()
            .map(|r| r.op.spec().method.as_str())
            .collect::<Vec<_>>()
            .join(", ");
        let mut resource = web::resource(path);
        for route in routes {
            let m = method(route.op.spec().method);
            resource = if route.op.spec().access == Access::Token {
                resource.route(web::method(m).to(
                    move |req: HttpRequest, payload: web::Payload, state: web::Data<HttpState>| {
                        run_raw(req, payload, state, route.clone())
                    },
                ))
            } else {
                resource.route(web::method(m).to(
                    move |req: HttpRequest, payload: web::Payload, state: web::Data<HttpState>| {
                        run(req, payload, state, route.clone())
                    },
                ))
            };
        }
        cfg.service(resource.default_service(web::to(method_not_allowed(allowed))));
    }
    cfg.default_service(web::to(not_found));
}
