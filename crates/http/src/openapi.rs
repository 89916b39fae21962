//! The OpenAPI 3.1 descriptions, generated from the catalogue at start-up.

use fleetdesk_api::describe::{Components, collect, describe, object_parts};
use fleetdesk_api::error::ErrorBody;
use fleetdesk_api::{Access, Api, ErasedOp};
use serde_json::{Map, Value, json};
use std::sync::Arc;
use utoipa::{PartialSchema, ToSchema};

fn parameters(schema: Option<&Value>, components: &Components, location: &str) -> Vec<Value> {
    let Some(schema) = schema else {
        return Vec::new();
    };
    let (props, required) = object_parts(&fleetdesk_api::describe::inline_refs(schema, components));
    props
        .into_iter()
        .map(|(name, mut s)| {
            let description = s.as_object_mut().and_then(|o| o.remove("description"));
            let mut p = json!({
                "name": name,
                "in": location,
                "required": location == "path" || required.contains(&name),
                "schema": s,
            });
            if let Some(d) = description {
                p["description"] = d;
            }
            p
        })
        .collect()
}

/// The errors of an upload PUT, whose credential is the link's token.
const TOKEN_ERRORS: [(&str, &str); 8] = [
    (
        "400",
        "invalid_request: a bad file, chunk size or parameter; `field` names it",
    ),
    (
        "401",
        "unauthorized: no upload has this id and token (an unknown id answers the same), or the link expired",
    ),
    (
        "404",
        "not_found: the upload went away while this request ran (its token had matched)",
    ),
    (
        "408",
        "request_timeout: the body did not arrive in the time its size allows; send it again",
    ),
    (
        "413",
        "payload_too_large: the body is larger than the link takes",
    ),
    (
        "422",
        "rejected: a rule forbids it (a used link, a skipped chunk with `next_chunk`)",
    ),
    ("500", "internal"),
    (
        "503",
        "unavailable: the database does not answer; retry shortly",
    ),
];

/// What each status means when an operation answers it.
fn meaning(code: u16, spec: &fleetdesk_api::OpSpec) -> &'static str {
    match code {
        400 => {
            "invalid_request: a bad parameter, body or Idempotency-Key, or an unknown body field; `field` names it"
        }
        401 => {
            "unauthorized: no key, a malformed, unknown or revoked key, or an archived workspace"
        }
        403 => "forbidden: the key's role lacks the access, or the object is not the caller's",
        404 if spec.path_params().is_empty() => {
            "not_found: the body or query names an object (account, persona, project) the caller's workspace does not have"
        }
        404 => "not_found: no such object in the caller's workspace",
        409 if spec.idempotent => {
            "ambiguous_code (add `platform`), already_covered, or idempotency_in_progress: the first request with this key is still running"
        }
        409 => "ambiguous_code: the code names accounts on several platforms; add `platform`",
        408 => {
            "request_timeout: the body did not arrive in the time its size allows (10 s and 1 s per 16 KiB); send it again"
        }
        413 => "payload_too_large: the body (or a file it carries) is larger than this call takes",
        415 => {
            "unsupported_media_type: a body was sent with a Content-Type other than application/json"
        }
        422 if spec.idempotent => {
            "rejected: a rule forbids it (the message says which); idempotency_mismatch: the key was used with other content"
        }
        422 => "rejected: a rule forbids it (the message says which)",
        429 => "rate_limited: too many requests this minute; see Retry-After",
        500 => "internal: retry with the same Idempotency-Key",
        503 => "unavailable: the database does not answer; retry shortly",
        _ => "an error; see the body",
    }
}

/// Every status an operation can answer besides success: what every keyed call can answer,
/// what its shape implies, and what it declares.
fn error_responses(op: &dyn ErasedOp) -> Map<String, Value> {
    let spec = op.spec();
    if spec.access == Access::Token {
        return responses(TOKEN_ERRORS.to_vec());
    }
    let mut codes: Vec<u16> = vec![400, 401, 403, 408, 413, 429, 500, 503];
    if op.doc().input.body.is_some() {
        codes.push(415);
    }
    if !spec.path_params().is_empty() {
        codes.push(404);
    }
    if spec.idempotent || spec.path_params().contains(&"code") {
        codes.push(409);
    }
    if spec.idempotent || spec.method != fleetdesk_api::HttpMethod::Get {
        codes.push(422);
    }
    codes.extend_from_slice(spec.also_answers);
    codes.sort_unstable();
    codes.dedup();
    let described: Vec<(String, &str)> = codes
        .into_iter()
        .map(|c| (c.to_string(), meaning(c, spec)))
        .collect();
    responses(described.iter().map(|(c, d)| (c.as_str(), *d)).collect())
}

fn responses(mut codes: Vec<(&str, &str)>) -> Map<String, Value> {
    codes.sort();
    codes
        .into_iter()
        .map(|(code, description)| {
            let mut headers = json!({"X-Request-Id": {"schema": {"type": "string"}}});
            if code == "429" {
                headers["Retry-After"] = json!({"description": "Seconds until the window closes.", "schema": {"type": "integer", "minimum": 1}});
            }
            let response = json!({
                "description": description,
                "headers": headers,
                "content": {"application/json": {"schema": {"$ref": "#/components/schemas/ErrorBody"}}},
            });
            (code.to_owned(), response)
        })
        .collect()
}

/// The operation's id: its MCP tool name when no other operation shares it; otherwise the API
/// and the tool (`user_list_tasks`), and the path's last segment when one API has the tool on
/// several routes (`user_decide_issue_resolve`).
fn operation_id(op: &dyn ErasedOp, all: &[Arc<dyn ErasedOp>]) -> String {
    let spec = op.spec();
    let Some(tool) = spec.tool else {
        return spec.id().replace([' ', '/', '{', '}', '-'], "_");
    };
    let sharing: Vec<_> = all.iter().filter(|o| o.spec().tool == Some(tool)).collect();
    if sharing.len() == 1 {
        return tool.to_owned();
    }
    let api = match spec.api {
        Api::Agent => "agent",
        Api::Personal => "user",
    };
    let same_api = sharing.iter().filter(|o| o.spec().api == spec.api).count();
    if same_api == 1 {
        return format!("{api}_{tool}");
    }
    let last = spec
        .path
        .rsplit('/')
        .find(|seg| !seg.starts_with('{'))
        .unwrap_or("")
        .replace('-', "_");
    format!("{api}_{tool}_{last}")
}

fn operation(op: &dyn ErasedOp, all: &[Arc<dyn ErasedOp>], components: &mut Components) -> Value {
    let spec = op.spec();
    let d = describe(op);
    components.extend(d.components.clone());
    let mut params = parameters(d.path.as_ref(), &d.components, "path");
    params.extend(parameters(d.query.as_ref(), &d.components, "query"));
    if spec.idempotent {
        params.push(json!({
            "name": "Idempotency-Key", "in": "header", "required": false,
            "description": "1-200 visible ASCII characters. Within 24 hours the same content returns the first result (Idempotent-Replayed: true); other content is 422 idempotency_mismatch; while the first is running, 409 idempotency_in_progress.",
            "schema": {"type": "string", "minLength": 1, "maxLength": 200, "pattern": fleetdesk_api::describe::IDEMPOTENCY_KEY_PATTERN},
        }));
    }
    let ok_status = if spec.created_status { "201" } else { "200" };
    components.insert(d.output_name.clone(), d.output.clone());
    let mut responses = Map::new();
    responses.insert(
        ok_status.to_owned(),
        json!({
            "description": "Success",
            "headers": {"X-Request-Id": {"schema": {"type": "string"}}},
            "content": {"application/json": {"schema": {"$ref": format!("#/components/schemas/{}", d.output_name)}}},
        }),
    );
    if spec.created_status && !spec.created_always {
        responses.insert("200".into(), json!({"description": "Already existed (created false)", "content": {"application/json": {"schema": {"$ref": format!("#/components/schemas/{}", d.output_name)}}}}));
    }
    responses.extend(error_responses(op));
    let security = match spec.access {
        Access::Agent(_) => json!([{"agentKey": []}]),
        Access::Personal(_) => json!([{"personalKey": []}]),
        Access::Token => json!([]),
    };
    let mut o = json!({
        "operationId": operation_id(op, all),
        "summary": spec.summary,
        "description": spec.description,
        "tags": [spec.path.trim_start_matches('/').split('/').next().unwrap_or("")],
        "security": security,
        "parameters": params,
        "responses": responses,
        "x-scope": spec.access.as_str(),
        "x-mcp-tool": spec.tool,
        "x-idempotent": spec.idempotent,
    });
    if spec.access == Access::Token {
        o["requestBody"] = json!({"required": true, "content": {"application/octet-stream": {"schema": {
            "type": "string", "contentMediaType": "application/octet-stream",
            "description": format!("The raw file, at most {} bytes.", spec.max_body),
        }}}});
    }
    if let Some((name, mut schema)) = d.body.clone() {
        fleetdesk_api::describe::with_body_echoes(op, &d, &mut schema);
        // A body whose fields are all optional may be left out (it reads as `{}`).
        let required = schema
            .get("required")
            .and_then(Value::as_array)
            .is_some_and(|r| !r.is_empty());
        components.insert(name.clone(), schema);
        o["requestBody"] = json!({"required": required, "content": {"application/json": {"schema": {"$ref": format!("#/components/schemas/{name}")}}}});
    }
    o
}

fn document(ops: &[Arc<dyn ErasedOp>], apis: &[Api], title: &str) -> Value {
    let mut components = Components::new();
    let mut deps = Vec::new();
    ErrorBody::schemas(&mut deps);
    deps.push((ErrorBody::name().to_string(), ErrorBody::schema()));
    collect(&mut components, &deps);
    let mut paths: Map<String, Value> = Map::new();
    for op in ops.iter().filter(|op| apis.contains(&op.spec().api)) {
        let spec = op.spec();
        let entry = paths.entry(spec.full_path()).or_insert_with(|| json!({}));
        entry[spec.method.as_str().to_ascii_lowercase()] =
            operation(op.as_ref(), ops, &mut components);
    }
    json!({
        "openapi": "3.1.0",
        "info": {
            "title": title,
            "version": fleetdesk_api::API_VERSION,
            "description": "fleetdesk: the back office where an agency's AI agents and its people run a fleet of social-media accounts. Every response carries X-Request-Id; every error is {code, message, request_id, field?}. MCP: POST /api/mcp (each tool is one operation here, named by x-mcp-tool).",
        },
        "paths": paths,
        "components": {
            "schemas": components,
            "securitySchemes": {
                "agentKey": {"type": "http", "scheme": "bearer", "description": "An agent key fda_<8>_<43>, bound to one workspace."},
                "personalKey": {"type": "http", "scheme": "bearer", "description": "A personal key fdp_<8>_<43>, bound to one organization."},
            },
        },
    })
}

/// The Agent API (community and ads included).
pub fn openapi_agent(ops: &[Arc<dyn ErasedOp>]) -> Value {
    document(ops, &[Api::Agent], "fleetdesk Agent API")
}

/// Agent and Personal APIs merged.
pub fn openapi_all(ops: &[Arc<dyn ErasedOp>]) -> Value {
    document(ops, &[Api::Agent, Api::Personal], "fleetdesk API")
}
