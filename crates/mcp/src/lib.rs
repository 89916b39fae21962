//! MCP over Streamable HTTP, JSON responses only (protocol 2025-06-18).
//!
//! Every tool is one catalogue operation, or several routed by the `action` argument
//! (`OpSpec::tool_action`; listed once, the values as an enum): `tools/call` picks the
//! operation, splits the arguments into path, query and body by name and runs the very pipeline the REST route runs (authentication, rate
//! limit, access, validation, idempotency with `request_id` as the Idempotency-Key). The
//! protocol types come from `rmcp`'s model; the transport is this small, stateless function so
//! the HTTP adapter can mount it next to the REST routes.

use bytes::Bytes;
use fleetdesk_api::describe::{query_kinds, tool_input_schema, tool_output_schema};
use fleetdesk_api::pipeline::{REQUEST_ID, check_idempotency_key, execute_as};
use fleetdesk_api::telemetry::{Call, Transport, route};
use fleetdesk_api::{Api, ApiError, Args, Ctx, ErasedOp, Invocation, OpSpec};
use fleetdesk_kernel::ErrorCode;
use fleetdesk_tenancy::{Caller, KeyKind, ParsedKey};
use rmcp::model::{
    CallToolResult, ContentBlock, ErrorCode as RpcCode, ErrorData, Implementation,
    InitializeResult, ListToolsResult, PromptsCapability, ProtocolVersion, ResourcesCapability,
    ServerCapabilities, Tool, ToolAnnotations, ToolsCapability,
};
use serde_json::{Map, Value, json};
use std::sync::Arc;

/// The protocol version this server speaks.
pub const PROTOCOL_VERSION: &str = "2025-06-18";
/// Versions accepted in the `MCP-Protocol-Version` header.
pub const ACCEPTED_VERSIONS: &[&str] = &["2025-06-18", "2025-03-26"];
/// Largest MCP request body (an avatar fits).
pub const MAX_BODY: usize = 8 * 1024 * 1024;

/// The JSON-RPC error code of a call refused by the rate limit (implementation-defined
/// server error range). Its `data` is the REST error body, with `retry_after` in seconds.
pub const RATE_LIMITED: RpcCode = RpcCode(-32029);

/// One POST to `/api/mcp`.
pub struct HttpCall {
    /// The `X-Request-Id` of the HTTP response, for error bodies.
    pub request_id: String,
    /// The key's caller, admitted by the pipeline before the body was read; a refusal by the
    /// rate limit is answered as a JSON-RPC error of the message (its body is read for its
    /// id), any other refusal never gets here.
    pub caller: Result<Caller, ApiError>,
    /// The bearer key as sent: its prefix says which API a refused call was for.
    pub bearer: Option<String>,
    pub protocol_version: Option<String>,
    pub body: Bytes,
    /// The service's address as the client reached it, for links in results.
    pub base_url: Option<String>,
}

/// What to answer over HTTP.
pub enum HttpAnswer {
    /// A JSON-RPC response (status 200, or 400 for a malformed message or header).
    Json(u16, Value),
    /// A notification or a response from the client: 202, no body.
    Accepted,
    /// A transport-level failure (401, or 429 for a notification) with the service's error
    /// body.
    Error(ApiError),
    /// A JSON-RPC error answering a request the rate limit refused (status 200, so every SDK
    /// hands the error and its `data.retry_after` to the caller), with `Retry-After`.
    Limited(Value, u64),
}

/// What a message did, for the metrics: the operation a `tools/call` ran, and its result's
/// status, error code and replay.
#[derive(Default)]
struct Seen {
    operation: Option<String>,
    result: Option<(u16, Option<ErrorCode>)>,
    replayed: bool,
}

/// One operation behind a tool.
struct Route {
    /// The value of [`OpSpec::TOOL_ROUTE_ARG`] that selects it, when the tool stands for
    /// several operations.
    action: Option<&'static str>,
    op: Arc<dyn ErasedOp>,
    /// `(argument, path parameter)`: the argument names as the tool takes them.
    path_params: Vec<(&'static str, &'static str)>,
    query_params: Vec<String>,
}

impl Route {
    /// The arguments split by name into path, query and body, and `request_id` (when the
    /// operation takes it) as the Idempotency-Key.
    fn split(&self, arguments: Map<String, Value>) -> Result<(Args, Option<String>), ApiError> {
        let mut args = Args::default();
        let mut body = Map::new();
        let mut request_id = None;
        for (k, v) in arguments {
            if let Some((_, param)) = self.path_params.iter().find(|(arg, _)| *arg == k) {
                let as_text = match v {
                    Value::String(s) => Value::String(s),
                    other => Value::String(other.to_string()),
                };
                args.path.insert((*param).to_owned(), as_text);
            } else if self.query_params.contains(&k) {
                args.query.insert(k, v);
            } else if k == REQUEST_ID && self.op.spec().request_id {
                match v {
                    Value::String(s) if check_idempotency_key(&s).is_ok() => request_id = Some(s),
                    _ => {
                        return Err(ApiError::invalid(
                            "request_id",
                            "must be 1-200 visible ASCII characters",
                        ));
                    }
                }
            } else {
                body.insert(k, v);
            }
        }
        // A missing path argument is named as the tool names it (`source_id`, not `{id}`).
        if let Some((arg, _)) = (self.path_params.iter())
            .find(|(arg, param)| arg != param && !args.path.contains_key(*param))
        {
            return Err(ApiError::invalid(*arg, "is required"));
        }
        args.body = Value::Object(body);
        Ok((args, request_id))
    }
}

/// A listed tool: one operation, or several routed by [`OpSpec::TOOL_ROUTE_ARG`].
struct ToolEntry {
    api: Api,
    tool: Tool,
    routes: Vec<Route>,
}

impl ToolEntry {
    /// The operation an `arguments` object selects; the routing argument is taken out, so
    /// the operation parses only its own arguments.
    fn route(&self, arguments: &mut Map<String, Value>) -> Result<&Route, ApiError> {
        if let [only] = self.routes.as_slice()
            && only.action.is_none()
        {
            return Ok(only);
        }
        let arg = OpSpec::TOOL_ROUTE_ARG;
        let values = self
            .routes
            .iter()
            .filter_map(|r| r.action)
            .collect::<Vec<_>>()
            .join(", ");
        match arguments.remove(arg) {
            None | Some(Value::Null) => Err(ApiError::invalid(
                arg,
                format!("is required: one of {values}"),
            )),
            Some(Value::String(v)) => self
                .routes
                .iter()
                .find(|r| r.action == Some(v.as_str()))
                .ok_or_else(|| ApiError::invalid(arg, format!("must be one of {values}"))),
            Some(_) => Err(ApiError::invalid(
                arg,
                format!("must be a string, one of {values}"),
            )),
        }
    }
}

/// A tool's description: the operation's summary and description, and the rules between its
/// arguments that the flat `inputSchema` leaves out, as JSON Schema.
fn describe_op(op: &dyn ErasedOp) -> String {
    let spec = op.spec();
    let mut text = if spec.description.is_empty() {
        spec.summary.to_owned()
    } else {
        format!("{}. {}", spec.summary, spec.description)
    };
    if let Some(rules) = fleetdesk_api::describe::tool_input_rules(op) {
        text.push_str(&format!(
            " Rules between the arguments, as JSON Schema (the server checks them: a call that \
             breaks one is refused as invalid params naming the argument): {rules}"
        ));
    }
    text
}

/// Builds the tool `name` of one API from its operations (in catalogue order). Panics, at
/// startup, on a catalogue that cannot be listed unambiguously: several operations without
/// distinct routing values, an operation with its own argument called like the routing
/// argument, or a shared argument whose schema differs between the operations.
fn build_tool(name: &'static str, ops: &[Arc<dyn ErasedOp>]) -> ToolEntry {
    let api = ops[0].spec().api;
    let ids = || {
        ops.iter()
            .map(|o| o.spec().id())
            .collect::<Vec<_>>()
            .join(", ")
    };
    let routed = ops.iter().any(|o| o.spec().tool_action.is_some());
    if ops.len() > 1 || routed {
        assert!(
            ops.iter().all(|o| o.spec().tool_action.is_some()),
            "MCP tool {name} stands for several operations ({}) but not every one names its \
             tool_action: give each a distinct value of the `{}` argument",
            ids(),
            OpSpec::TOOL_ROUTE_ARG
        );
        let mut seen = std::collections::BTreeSet::new();
        for o in ops {
            let action = o.spec().tool_action.unwrap_or_default();
            assert!(
                seen.insert(action),
                "MCP tool {name}: two of its operations ({}) have tool_action {action:?}",
                ids()
            );
        }
    }
    let routes = ops
        .iter()
        .map(|op| Route {
            action: op.spec().tool_action,
            path_params: (op.spec().path_params().into_iter())
                .map(|p| (op.spec().tool_arg_of(p), p))
                .collect(),
            query_params: query_kinds(op.as_ref()).keys().cloned().collect(),
            op: op.clone(),
        })
        .collect();
    let tool = if routed {
        let (input, output) = routed_schemas(name, ops);
        let arg = OpSpec::TOOL_ROUTE_ARG;
        let mut description = format!("One tool for {} operations; `{arg}` picks one.", ops.len());
        for o in ops {
            let spec = o.spec();
            description.push_str(&format!(
                "\n- `{arg}: {}` ({} {}): {}",
                spec.tool_action.unwrap_or_default(),
                spec.method.as_str(),
                spec.full_path(),
                describe_op(o.as_ref())
            ));
        }
        Tool::new(name, description, object(input)).with_raw_output_schema(object(output))
    } else {
        let op = ops[0].as_ref();
        Tool::new(name, describe_op(op), object(tool_input_schema(op)))
            .with_raw_output_schema(object(tool_output_schema(op)))
    };
    // Hints for clients that ask before a write: a tool whose operations only read, and one
    // whose every call takes request_id (resent with it, a call acts once).
    let read_only = ops.iter().all(|o| o.spec().reads_only());
    let mut hints = ToolAnnotations::new().read_only(read_only);
    if !read_only && ops.iter().all(|o| o.spec().request_id) {
        hints = hints.idempotent(true);
    }
    let tool = tool.with_annotations(hints);
    ToolEntry { api, tool, routes }
}

/// The input and output schemas of a tool that stands for several operations.
///
/// Input: the routing argument (a required string enum of the values) and the union of the
/// operations' arguments. An argument several operations take must have the same schema in
/// each (else a startup panic, see docs/decisions.md, MCP). What is required by every
/// operation is required; what only some require is said in the routing argument's
/// description (the root stays one flat object, [`fleetdesk_api::describe::TOOL_INPUT_ROOT`],
/// and the server refuses a missing argument with -32602 naming it).
/// Output: the common schema, or `anyOf` the distinct ones.
fn routed_schemas(name: &str, ops: &[Arc<dyn ErasedOp>]) -> (Value, Value) {
    let arg = OpSpec::TOOL_ROUTE_ARG;
    let values: Vec<&str> = ops.iter().filter_map(|o| o.spec().tool_action).collect();
    let mut properties = Map::new();
    let mut owner: Map<String, Value> = Map::new();
    let mut per_op: Vec<(&'static str, Vec<String>)> = Vec::new();
    for o in ops {
        let spec = o.spec();
        let schema = tool_input_schema(o.as_ref());
        let props = schema["properties"]
            .as_object()
            .cloned()
            .unwrap_or_default();
        for (prop, s) in props {
            assert!(
                prop != arg,
                "MCP tool {name}: {} has its own argument `{arg}`, which is the tool's routing \
                 argument",
                spec.id()
            );
            match properties.get(&prop) {
                Some(existing) => assert!(
                    *existing == s,
                    "MCP tool {name}: argument `{prop}` has different schemas in {} and {}; \
                     the operations of one tool must agree on a shared argument\n{existing}\n{s}",
                    owner[&prop].as_str().unwrap_or_default(),
                    spec.id()
                ),
                None => {
                    owner.insert(prop.clone(), Value::String(spec.id()));
                    properties.insert(prop, s);
                }
            }
        }
        let required: Vec<String> = schema["required"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|v| v.as_str().map(str::to_owned))
            .collect();
        per_op.push((spec.tool_action.unwrap_or_default(), required));
    }
    // Required by every operation.
    let common: Vec<String> = per_op[0]
        .1
        .iter()
        .filter(|r| per_op.iter().all(|(_, req)| req.contains(r)))
        .cloned()
        .collect();
    let mut route =
        String::from("Which of the tool's operations to run (see the tool's description).");
    for (action, required) in &per_op {
        let extra: Vec<String> = required
            .iter()
            .filter(|r| !common.contains(r))
            .map(|r| format!("`{r}`"))
            .collect();
        if !extra.is_empty() {
            route.push_str(&format!(" `{action}` also needs {}.", extra.join(", ")));
        }
    }
    let mut all_properties = Map::new();
    all_properties.insert(
        arg.to_owned(),
        json!({"type": "string", "enum": values, "description": route}),
    );
    all_properties.extend(properties);
    let mut required = vec![arg.to_owned()];
    required.extend(common);
    let input = json!({
        "type": "object",
        "properties": all_properties,
        "required": required,
        "additionalProperties": false,
    });

    let mut outputs: Vec<Value> = Vec::new();
    for o in ops {
        let out = tool_output_schema(o.as_ref());
        if !outputs.contains(&out) {
            outputs.push(out);
        }
    }
    let output = if outputs.len() == 1 {
        outputs.remove(0)
    } else {
        // anyOf, not oneOf: two success bodies may both fit each other's schema (extra fields
        // are allowed), and a client checking oneOf would then refuse a correct result.
        json!({"type": "object", "anyOf": outputs})
    };
    (input, output)
}

/// The MCP endpoint over a catalogue.
#[derive(Clone)]
pub struct Mcp {
    tools: Arc<Vec<ToolEntry>>,
}

fn object(v: Value) -> Arc<Map<String, Value>> {
    Arc::new(match v {
        Value::Object(m) => m,
        _ => Map::new(),
    })
}

/// A JSON-RPC error. Messages that name what the caller sent (a method, a tool, a version) go
/// through the key redaction like every error message of the service.
fn rpc_error(id: Value, code: RpcCode, message: impl Into<String>, data: Option<Value>) -> Value {
    let (message, _) = fleetdesk_kernel::secrets::redact_keys(&message.into());
    let err = ErrorData::new(code, message, data);
    json!({"jsonrpc": "2.0", "id": id, "error": err})
}

fn rpc_result(id: Value, result: impl serde::Serialize) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "result": result})
}

impl Mcp {
    /// The tools of a catalogue. Panics when the catalogue cannot be listed unambiguously
    /// (see `build_tool`): the service refuses to start rather than hide an operation.
    pub fn new(ops: Arc<Vec<Arc<dyn ErasedOp>>>) -> Mcp {
        // Tools by API and name, in catalogue order; each with all its operations.
        let mut keys: Vec<(Api, &'static str)> = Vec::new();
        for op in ops.iter() {
            if let Some(name) = op.spec().tool
                && !keys.contains(&(op.spec().api, name))
            {
                keys.push((op.spec().api, name));
            }
        }
        let tools = keys
            .into_iter()
            .map(|(api, name)| {
                let group: Vec<_> = ops
                    .iter()
                    .filter(|o| o.spec().api == api && o.spec().tool == Some(name))
                    .cloned()
                    .collect();
                build_tool(name, &group)
            })
            .collect();
        Mcp {
            tools: Arc::new(tools),
        }
    }

    fn find(&self, api: Api, name: &str) -> Option<&ToolEntry> {
        self.tools
            .iter()
            .find(|t| t.tool.name == name && t.api == api)
    }

    /// Answers one message and records it in the metrics: a `tools/call` that ran by its
    /// operation and the status of its result, anything else as `mcp` by the HTTP answer.
    pub async fn handle(&self, ctx: &Ctx, call: HttpCall) -> HttpAnswer {
        let started = std::time::Instant::now();
        let mut seen = Seen::default();
        let answer = self.answer(ctx, call, &mut seen).await;
        let (status, error_code) = seen.result.unwrap_or(match &answer {
            HttpAnswer::Json(status, _) => (*status, None),
            HttpAnswer::Accepted => (202, None),
            HttpAnswer::Error(e) => (e.status(), Some(e.code)),
            HttpAnswer::Limited(..) => (429, Some(ErrorCode::RateLimited)),
        });
        ctx.telemetry.call(Call {
            transport: Transport::Mcp,
            operation: seen.operation.as_deref().unwrap_or(route::MCP),
            status,
            error_code: error_code.map(ErrorCode::as_str),
            replayed: seen.replayed,
            elapsed: started.elapsed(),
        });
        answer
    }

    async fn answer(&self, ctx: &Ctx, call: HttpCall, seen: &mut Seen) -> HttpAnswer {
        let message: Value = match serde_json::from_slice(&call.body) {
            Ok(v) => v,
            Err(e) => {
                return HttpAnswer::Json(
                    400,
                    rpc_error(
                        Value::Null,
                        RpcCode::PARSE_ERROR,
                        format!("parse error: {e}"),
                        None,
                    ),
                );
            }
        };
        let Value::Object(msg) = message else {
            return HttpAnswer::Json(
                400,
                rpc_error(
                    Value::Null,
                    RpcCode::INVALID_REQUEST,
                    "expected one JSON-RPC message object (batches are not supported)",
                    None,
                ),
            );
        };
        let id = msg.get("id").cloned();
        if let Some(bad) = id
            .as_ref()
            .filter(|v| !(v.is_string() || v.is_i64() || v.is_u64()))
        {
            let kind = match bad {
                Value::Null => "null",
                Value::Bool(_) => "a boolean",
                Value::Number(_) => "a fraction",
                Value::String(_) => "a string",
                Value::Array(_) => "an array",
                Value::Object(_) => "an object",
            };
            let message = format!("id must be a string or an integer, not {kind}");
            return HttpAnswer::Json(
                400,
                rpc_error(Value::Null, RpcCode::INVALID_REQUEST, message, None),
            );
        }
        if let Some(v) = &call.protocol_version
            && !ACCEPTED_VERSIONS.contains(&v.as_str())
        {
            let message = format!(
                "unsupported MCP-Protocol-Version {v}; this server speaks {PROTOCOL_VERSION}"
            );
            return HttpAnswer::Json(
                400,
                rpc_error(
                    id.unwrap_or(Value::Null),
                    RpcCode::INVALID_REQUEST,
                    message,
                    Some(json!({"supported": ACCEPTED_VERSIONS})),
                ),
            );
        }
        if msg.get("jsonrpc").and_then(Value::as_str) != Some("2.0") {
            return HttpAnswer::Json(
                400,
                rpc_error(
                    id.unwrap_or(Value::Null),
                    RpcCode::INVALID_REQUEST,
                    "jsonrpc must be \"2.0\"",
                    None,
                ),
            );
        }
        let Some(method) = msg.get("method").and_then(Value::as_str) else {
            // A response from the client (result or error): nothing to answer.
            return if msg.contains_key("result") || msg.contains_key("error") {
                HttpAnswer::Accepted
            } else {
                HttpAnswer::Json(
                    400,
                    rpc_error(
                        id.unwrap_or(Value::Null),
                        RpcCode::INVALID_REQUEST,
                        "a request needs a method",
                        None,
                    ),
                )
            };
        };
        let caller = match (&call.caller, &id) {
            (Ok(caller), _) => caller.clone(),
            (Err(e), Some(id)) if e.code == ErrorCode::RateLimited => {
                if method == "tools/call" {
                    seen.operation = self.operation_named(call.bearer.as_deref(), &msg);
                }
                let wait = e.retry_after().unwrap_or(1);
                let data = e.body(&call.request_id);
                return HttpAnswer::Limited(
                    rpc_error(id.clone(), RATE_LIMITED, e.message.clone(), Some(data)),
                    wait,
                );
            }
            (Err(e), _) => return HttpAnswer::Error(e.clone()),
        };
        let Some(id) = id else {
            // Notifications (notifications/initialized, cancelled, ...) need no answer.
            return HttpAnswer::Accepted;
        };
        let params = msg.get("params").cloned().unwrap_or(Value::Null);
        // Every list answers in one page and gives no cursor, so any cursor is not one of ours
        // (MCP: an invalid cursor SHOULD be -32602).
        if matches!(
            method,
            "tools/list" | "prompts/list" | "resources/list" | "resources/templates/list"
        ) && params.get("cursor").is_some_and(|c| !c.is_null())
        {
            return HttpAnswer::Json(
                200,
                rpc_error(
                    id,
                    RpcCode::INVALID_PARAMS,
                    "params.cursor: this list answers in one page and gives no cursor",
                    None,
                ),
            );
        }
        match method {
            "initialize" | "ping" | "tools/list" => {
                let result = match method {
                    "initialize" => serde_json::to_value(self.initialize(&caller)),
                    "ping" => Ok(json!({})),
                    _ => serde_json::to_value(self.list(&caller)),
                };
                match result {
                    Ok(mut v) => {
                        strip_result_type(&mut v);
                        HttpAnswer::Json(200, rpc_result(id, v))
                    }
                    Err(e) => HttpAnswer::Json(
                        200,
                        rpc_error(id, RpcCode::INTERNAL_ERROR, e.to_string(), None),
                    ),
                }
            }
            "tools/call" => self.call_tool(ctx, id, params, caller, call, seen).await,
            "prompts/list" => HttpAnswer::Json(200, self.list_prompts(id, &caller)),
            "prompts/get" => HttpAnswer::Json(
                200,
                (self.get_prompt(ctx, id, &caller, &params, call.base_url, &call.request_id)).await,
            ),
            "resources/list" => HttpAnswer::Json(
                200,
                (self.list_resources(ctx, id, &caller, call.base_url, &call.request_id)).await,
            ),
            "resources/templates/list" => {
                HttpAnswer::Json(200, self.list_resource_templates(id, &caller))
            }
            "resources/read" => HttpAnswer::Json(
                200,
                (self.read_resource(ctx, id, &caller, &params, call.base_url, &call.request_id))
                    .await,
            ),
            other => HttpAnswer::Json(
                200,
                rpc_error(
                    id,
                    RpcCode::METHOD_NOT_FOUND,
                    format!("method not found: {other}"),
                    None,
                ),
            ),
        }
    }

    /// The operation a `tools/call` message names, for the metrics of a call refused before
    /// it ran.
    fn operation_named(&self, bearer: Option<&str>, msg: &Map<String, Value>) -> Option<String> {
        let api = match ParsedKey::parse(bearer?).ok()?.kind {
            KeyKind::Personal => Api::Personal,
            _ => Api::Agent,
        };
        let params = msg.get("params")?;
        let entry = self.find(api, params.get("name")?.as_str()?)?;
        let mut arguments = match params.get("arguments") {
            Some(Value::Object(m)) => m.clone(),
            _ => Map::new(),
        };
        let route = entry.route(&mut arguments).ok()?;
        Some(route.op.spec().id())
    }

    fn initialize(&self, caller: &Caller) -> InitializeResult {
        let who = match caller {
            Caller::Agent(a) => format!("agent {}", a.agent_name),
            Caller::Member(m) => format!("member {}", m.name),
        };
        let library = self.library_note(caller);
        let mut capabilities = ServerCapabilities::default();
        let mut tools = ToolsCapability::default();
        tools.list_changed = Some(false);
        capabilities.tools = Some(tools);
        let mut prompts = PromptsCapability::default();
        prompts.list_changed = Some(false);
        capabilities.prompts = Some(prompts);
        let mut resources = ResourcesCapability::default();
        resources.subscribe = Some(false);
        resources.list_changed = Some(false);
        capabilities.resources = Some(resources);
        InitializeResult::new(capabilities)
            .with_protocol_version(ProtocolVersion::V_2025_06_18)
            .with_server_info(Implementation::new("fleetdesk", env!("CARGO_PKG_VERSION")))
            .with_instructions(format!(
                "fleetdesk for {who}. Every tool is one REST endpoint (a few are several, picked by `action`) with the same parameters and rules; \
                 pass request_id on writes that take it so a resend never acts twice. {library}"
            ))
    }

    fn list(&self, caller: &Caller) -> ListToolsResult {
        let api = match caller {
            Caller::Agent(_) => Api::Agent,
            Caller::Member(_) => Api::Personal,
        };
        let tools = self
            .tools
            .iter()
            .filter(|t| t.api == api && t.routes.iter().any(|r| caller.may(r.op.spec().access)))
            .map(|t| t.tool.clone())
            .collect();
        ListToolsResult::with_all_items(tools)
    }

    async fn call_tool(
        &self,
        ctx: &Ctx,
        id: Value,
        params: Value,
        caller: Caller,
        call: HttpCall,
        seen: &mut Seen,
    ) -> HttpAnswer {
        let HttpCall {
            request_id: request_id_header,
            base_url,
            ..
        } = call;
        let Some(name) = params.get("name").and_then(Value::as_str) else {
            return HttpAnswer::Json(
                200,
                rpc_error(id, RpcCode::INVALID_PARAMS, "params.name is required", None),
            );
        };
        let mut arguments = match params.get("arguments") {
            None | Some(Value::Null) => Map::new(),
            Some(Value::Object(m)) => m.clone(),
            Some(_) => {
                return HttpAnswer::Json(
                    200,
                    rpc_error(
                        id,
                        RpcCode::INVALID_PARAMS,
                        "params.arguments must be an object",
                        None,
                    ),
                );
            }
        };
        // An agent key speaks the Agent API, a personal key the Personal API; the pipeline
        // checks the rest.
        let api = match caller {
            Caller::Agent(_) => Api::Agent,
            Caller::Member(_) => Api::Personal,
        };
        let Some(entry) = self.find(api, name) else {
            return HttpAnswer::Json(
                200,
                rpc_error(
                    id,
                    RpcCode::INVALID_PARAMS,
                    format!("unknown tool: {name}"),
                    None,
                ),
            );
        };
        let prepared = entry
            .route(&mut arguments)
            .and_then(|route| Ok((route, route.split(arguments)?)));
        let (entry, (args, request_id)) = match prepared {
            Ok(p) => p,
            Err(err) => {
                return HttpAnswer::Json(
                    200,
                    rpc_error(
                        id,
                        RpcCode::INVALID_PARAMS,
                        err.message.clone(),
                        Some(err.body(&request_id_header)),
                    ),
                );
            }
        };
        seen.operation = Some(entry.op.spec().id());
        let outcome = execute_as(
            ctx,
            entry.op.as_ref(),
            caller,
            Invocation {
                bearer: None,
                idempotency_key: request_id,
                args,
                input_error: None,
                base_url,
            },
        )
        .await;
        let request_id = request_id_header.as_str();
        seen.result = Some(match &outcome {
            Ok(o) => (o.status, None),
            Err(e) => (e.status(), Some(e.code)),
        });
        seen.replayed = outcome.as_ref().is_ok_and(|o| o.replayed);
        match outcome {
            Ok(o) => {
                // The structured content is the REST body as a value; the text is that body.
                let body = serde_json::from_str(o.body.get()).unwrap_or_default();
                HttpAnswer::Json(200, rpc_result(id, tool_result(body, false)))
            }
            // Every 400 is arguments the tool's inputSchema refuses (a schema-valid call is
            // never refused for its shape): its conditions and patterns as much as its types.
            Err(e) if e.from_input || e.code == ErrorCode::InvalidRequest => {
                let message = e.message.clone();
                HttpAnswer::Json(
                    200,
                    rpc_error(
                        id,
                        RpcCode::INVALID_PARAMS,
                        message,
                        Some(e.body(request_id)),
                    ),
                )
            }
            Err(e) => HttpAnswer::Json(200, rpc_result(id, tool_result(e.body(request_id), true))),
        }
    }
}

/// A tool result: the REST body as JSON text, and on success also as structured content.
///
/// An error result carries no `structuredContent`: the error body does not match the tool's
/// `outputSchema`, and clients that validate structured content (TypeScript SDK 1.x, MCP
/// Inspector) would then throw instead of showing the error (MCP 2025-06-18, Tools: a result
/// with an output schema must conform to it). The error body stays readable as the text.
fn tool_result(body: Value, is_error: bool) -> Value {
    let text = body.to_string();
    let result = if is_error {
        CallToolResult::error(vec![ContentBlock::text(text)])
    } else {
        let mut ok = CallToolResult::success(vec![ContentBlock::text(text)]);
        ok.structured_content = Some(body);
        ok
    };
    let mut v = serde_json::to_value(result).unwrap_or(Value::Null);
    strip_result_type(&mut v);
    v
}

/// `resultType` belongs to a newer protocol version than the one spoken here.
fn strip_result_type(v: &mut Value) {
    if let Value::Object(m) = v {
        m.remove("resultType");
    }
}

mod library;

#[cfg(test)]
mod routed_tests;

#[cfg(test)]
mod tests {
    use super::tool_result;
    use serde_json::json;

    #[test]
    fn a_success_carries_the_body_as_structured_content_and_as_text() {
        let body = json!({"accounts": [{"code": "TW-T001"}]});
        let result = tool_result(body.clone(), false);
        assert_eq!(result["isError"], false, "{result}");
        assert_eq!(result["structuredContent"], body, "{result}");
        assert_eq!(result["content"][0]["type"], "text", "{result}");
        let text = result["content"][0]["text"].as_str().expect("text");
        assert_eq!(
            serde_json::from_str::<serde_json::Value>(text).ok(),
            Some(body)
        );
        assert!(result.get("resultType").is_none(), "{result}");
    }

    #[test]
    fn an_error_carries_the_body_only_as_text() {
        let body = json!({"code": "not_found", "message": "no account NOPE", "request_id": "r"});
        let result = tool_result(body.clone(), true);
        assert_eq!(result["isError"], true, "{result}");
        assert!(result.get("structuredContent").is_none(), "{result}");
        let content = result["content"].as_array().expect("content");
        assert_eq!(content.len(), 1, "{result}");
        let text = content[0]["text"].as_str().expect("text");
        assert_eq!(
            serde_json::from_str::<serde_json::Value>(text).ok(),
            Some(body)
        );
        assert!(result.get("resultType").is_none(), "{result}");
    }
}
