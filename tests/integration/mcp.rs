//! MCP over Streamable HTTP at `POST /api/mcp` (protocol 2025-06-18): the handshake, the tool
//! list per role, tool calls running the REST pipeline, JSON-RPC errors, the transport's HTTP
//! rules, and the real clients driving the endpoint: the official MCP Python SDK
//! (tests/mcp_sdk/smoke.py, and tests/mcp_sdk/every_tool.py over every tool), the TypeScript
//! SDK 1.x (tests/mcp_sdk_ts/every_tool.mjs over every tool) and MCP Inspector's CLI mode. The
//! per-tool arguments of the every-tool runs are tests/mcp_sdk/cases.json.

use crate::uploads::png;
use base64::Engine;
use fleetdesk_tests::client::{MCP_PROTOCOL as PROTOCOL, Request};
use fleetdesk_tests::{Response, TestApp, spawn_app};
use jiff::tz::TimeZone;
use jiff::{SignedDuration, Timestamp};
use serde_json::{Value, json};
use std::path::Path;
use std::time::{Duration, Instant};

/// A POST to /api/mcp with the headers the spec lists.
fn mcp_request(key: &str, body: &Value) -> Request {
    Request::mcp(body).bearer(key)
}

async fn post(app: &TestApp, key: &str, body: &Value) -> Response {
    app.client.send(mcp_request(key, body)).await
}

/// One JSON-RPC request (id 1); asserts HTTP 200 and a JSON body, returns the message.
async fn rpc(app: &TestApp, key: &str, method: &str, params: Value) -> Value {
    let res = post(
        app,
        key,
        &json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params}),
    )
    .await;
    assert_eq!(res.status, 200, "{method}: {}", res.text());
    assert!(
        res.header("content-type")
            .is_some_and(|v| v.starts_with("application/json")),
        "{method}: content-type {:?}",
        res.header("content-type")
    );
    let msg = res.json();
    assert_eq!(msg["jsonrpc"], "2.0", "{msg}");
    assert_eq!(msg["id"], 1, "{msg}");
    msg
}

/// `initialize` as a client opens a session; returns the whole JSON-RPC message.
async fn initialize(app: &TestApp, key: &str) -> Value {
    rpc(
        app,
        key,
        "initialize",
        json!({"protocolVersion": PROTOCOL, "capabilities": {},
               "clientInfo": {"name": "tests", "version": "1"}}),
    )
    .await
}

/// `tools/call`; returns the whole JSON-RPC message.
async fn call(app: &TestApp, key: &str, name: &str, arguments: Value) -> Value {
    rpc(
        app,
        key,
        "tools/call",
        json!({"name": name, "arguments": arguments}),
    )
    .await
}

/// `tools/call` that must answer a tool result (not a JSON-RPC error); returns `result`.
///
/// The REST body travels as JSON text; a success carries it as structured content too, an
/// error (`isError`) does not, since the error body does not match the tool's outputSchema.
async fn call_result(app: &TestApp, key: &str, name: &str, arguments: Value) -> Value {
    let msg = call(app, key, name, arguments).await;
    assert!(msg.get("error").is_none(), "{name}: JSON-RPC error {msg}");
    let result = msg["result"].clone();
    assert_eq!(result["content"][0]["type"], "text", "{result}");
    let parsed = text_body(&result);
    if result["isError"] == true {
        assert!(
            result.get("structuredContent").is_none(),
            "{name}: an error result carries structuredContent: {result}"
        );
    } else {
        assert_eq!(
            parsed, result["structuredContent"],
            "{name}: text and structuredContent differ"
        );
    }
    result
}

/// The JSON in a tool result's (only) text content: the REST body, error or not.
fn text_body(result: &Value) -> Value {
    let content = result["content"].as_array().expect("content");
    assert_eq!(content.len(), 1, "one content block: {result}");
    let text = content[0]["text"]
        .as_str()
        .unwrap_or_else(|| panic!("no text content: {result}"));
    serde_json::from_str(text).unwrap_or_else(|e| panic!("text content is not JSON ({e}): {text}"))
}

/// `report_account_state` that must succeed as a tool result; returns `result`.
async fn report_state(app: &TestApp, key: &str, arguments: Value) -> Value {
    call_result(app, key, "report_account_state", arguments).await
}

/// A JSON-RPC error answer: checks the code and that there is no result.
fn assert_rpc_error(msg: &Value, code: i64) {
    assert_rpc_error_in("", msg, code);
}

/// [`assert_rpc_error`] for one case of a table: every failure message starts with `case`.
fn assert_rpc_error_in(case: &str, msg: &Value, code: i64) {
    let at = if case.is_empty() {
        String::new()
    } else {
        format!("{case}: ")
    };
    assert!(msg.get("result").is_none(), "{at}expected an error: {msg}");
    assert_eq!(msg["error"]["code"], code, "{at}{msg}");
    assert!(
        msg["error"]["message"]
            .as_str()
            .is_some_and(|m| !m.is_empty()),
        "{at}{msg}"
    );
}

/// Tool names in a `tools/list` answer, sorted.
fn tool_names(msg: &Value) -> Vec<String> {
    result_tool_names(&msg["result"])
}

/// Tool names in a `tools/list` result (`{"tools": [...]}`), sorted.
fn result_tool_names(result: &Value) -> Vec<String> {
    let mut names: Vec<String> = result["tools"]
        .as_array()
        .unwrap_or_else(|| panic!("no tools array: {result}"))
        .iter()
        .map(|t| t["name"].as_str().expect("tool name").to_owned())
        .collect();
    names.sort();
    names
}

/// Whether `key` occurs anywhere in a JSON value (to look for `$ref` and `resultType`).
fn has_key(v: &Value, key: &str) -> bool {
    match v {
        Value::Object(m) => m.contains_key(key) || m.values().any(|x| has_key(x, key)),
        Value::Array(a) => a.iter().any(|x| has_key(x, key)),
        _ => false,
    }
}

fn report(code: &str, state: &str, reason: &str, request_id: &str) -> Value {
    json!({"code": code, "state": state, "reason": reason,
           "occurred_at": "2026-11-21 10:00", "request_id": request_id})
}

/// Rows of account_state_changes for a reason text.
async fn state_changes(app: &TestApp, reason: &str) -> i64 {
    app.count(&format!(
        "SELECT count(*)::bigint AS n FROM account_state_changes WHERE reason = '{reason}'"
    ))
    .await
}

/// Every tool an operator's key may call so far, sorted.
const SLICE_TOOLS: [&str; 56] = [
    "ad_research_approve",
    "ad_research_get",
    "ad_research_quote",
    "add_account",
    "add_note",
    "attach_images",
    "attach_media",
    "claim_task",
    "complete_issue",
    "confirm_unscheduled",
    "create_persona",
    "create_upload",
    "delete_stocked_post",
    "fail_task",
    "finish_task",
    "get_ad_pick",
    "get_persona",
    "get_task",
    "heartbeat",
    "list_accounts",
    "list_ad_picks",
    "list_ads",
    "list_approved",
    "list_cast",
    "list_inventory",
    "list_media",
    "list_persona_images",
    "list_redo",
    "list_tasks",
    "open_task",
    "planned_posts",
    "propose_ad_change",
    "propose_fact",
    "propose_wiki",
    "relay_issue",
    "relay_post_status",
    "relay_task",
    "report_account_state",
    "report_cron_jobs",
    "report_cron_run",
    "report_metrics",
    "report_posts",
    "report_task",
    "report_wiki_sync",
    "set_account_avatar",
    "stock_post",
    "submit_draft",
    "unstock_post",
    "update_draft",
    "upload_persona_image",
    "wait_events",
    "wiki_get",
    "wiki_index",
    "wiki_search",
    "wiki_sources",
    "work_today",
];

// ---------------------------------------------------------------------------------------------
// Handshake

#[tokio::test(flavor = "multi_thread")]
async fn initialize_answers_2025_06_18_with_tools_and_server_info() {
    let app = spawn_app().await;
    let key = app.agent_key("op1");
    let msg = initialize(&app, &key).await;
    assert!(msg.get("error").is_none(), "{msg}");
    let result = &msg["result"];
    assert_eq!(result["protocolVersion"], PROTOCOL, "{msg}");
    assert!(result["capabilities"]["tools"].is_object(), "{msg}");
    assert_eq!(result["serverInfo"]["name"], "fleetdesk", "{msg}");
    assert!(result["serverInfo"]["version"].is_string(), "{msg}");
    // resultType belongs to a later protocol version.
    assert!(!has_key(&msg, "resultType"), "{msg}");
}

#[tokio::test(flavor = "multi_thread")]
async fn notifications_and_client_responses_get_202_without_a_body() {
    let app = spawn_app().await;
    let key = app.agent_key("op1");
    for message in [
        json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
        json!({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 9}}),
        json!({"jsonrpc": "2.0", "id": 7, "result": {}}),
        json!({"jsonrpc": "2.0", "id": 8, "error": {"code": -32601, "message": "no"}}),
    ] {
        let res = post(&app, &key, &message).await;
        assert_eq!(res.status, 202, "{message}: {}", res.text());
        assert!(res.body.is_empty(), "{message}: {:?}", res.text());
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn ping_answers_an_empty_object() {
    let app = spawn_app().await;
    let msg = rpc(&app, &app.agent_key("op1"), "ping", json!({})).await;
    assert_eq!(msg["result"], json!({}), "{msg}");
    assert!(msg.get("error").is_none(), "{msg}");
}

// ---------------------------------------------------------------------------------------------
// tools/list

#[tokio::test(flavor = "multi_thread")]
async fn an_operator_lists_its_tools_with_self_contained_schemas() {
    let app = spawn_app().await;
    let msg = rpc(&app, &app.agent_key("op1"), "tools/list", json!({})).await;
    assert_eq!(tool_names(&msg), SLICE_TOOLS, "{msg}");
    assert!(!has_key(&msg["result"], "resultType"), "{msg}");
    let tools = msg["result"]["tools"].as_array().expect("tools");
    let by_name = |name: &str| {
        tools
            .iter()
            .find(|t| t["name"] == name)
            .unwrap_or_else(|| panic!("no {name}"))
    };
    for tool in tools {
        let name = tool["name"].as_str().unwrap_or_default();
        assert!(
            tool["description"].as_str().is_some_and(|d| !d.is_empty()),
            "{name}: {tool}"
        );
        assert_eq!(tool["inputSchema"]["type"], "object", "{name}: {tool}");
        assert!(
            tool["inputSchema"]["properties"].is_object(),
            "{name}: {tool}"
        );
        assert!(tool["outputSchema"].is_object(), "{name}: {tool}");
        assert_eq!(tool["outputSchema"]["type"], "object", "{name}: {tool}");
        assert!(!has_key(tool, "$ref"), "{name} still has a $ref: {tool}");
        assert!(
            !tool.to_string().contains("#/components"),
            "{name} points into components: {tool}"
        );
    }
    let props = |name: &str| by_name(name)["inputSchema"]["properties"].clone();
    for with in ["add_account", "report_account_state"] {
        assert_eq!(props(with)["request_id"]["type"], "string", "{with}");
    }
    for without in [
        "heartbeat",
        "set_account_avatar",
        "list_accounts",
        "work_today",
    ] {
        assert!(
            props(without).get("request_id").is_none(),
            "{without}: {}",
            props(without)
        );
    }
    let state = &by_name("report_account_state")["inputSchema"];
    assert!(state["properties"]["code"].is_object(), "{state}");
    assert!(state["properties"]["platform"].is_object(), "{state}");
    assert!(state["properties"]["state"].is_object(), "{state}");
    let required: Vec<&str> = state["required"]
        .as_array()
        .expect("required")
        .iter()
        .filter_map(Value::as_str)
        .collect();
    for r in ["code", "state", "occurred_at"] {
        assert!(required.contains(&r), "{r} not required: {state}");
    }
    assert!(!required.contains(&"request_id"), "{state}");
    assert!(!required.contains(&"platform"), "{state}");
    // The query parameter of work_today is a tool argument too.
    assert!(
        props("work_today")["date"].is_object(),
        "{}",
        props("work_today")
    );
    // The root of every inputSchema is one flat object; a rule between arguments is in the
    // description as JSON Schema (a ban needs its reason).
    for tool in tools {
        let keys: Vec<&String> = tool["inputSchema"].as_object().unwrap().keys().collect();
        assert!(
            keys.iter().all(|k| {
                ["type", "properties", "required", "additionalProperties"].contains(&k.as_str())
            }),
            "{}: {keys:?}",
            tool["name"]
        );
    }
    let description = by_name("report_account_state")["description"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    assert!(
        description.contains("Rules between the arguments, as JSON Schema")
            && description.contains("\"reason\""),
        "{description}"
    );
    // Hints: reads are read-only; a write that takes request_id is idempotent.
    let hints = |name: &str| by_name(name)["annotations"].clone();
    assert_eq!(
        hints("work_today")["readOnlyHint"],
        true,
        "{}",
        hints("work_today")
    );
    assert_eq!(hints("add_account")["readOnlyHint"], false);
    assert_eq!(hints("add_account")["idempotentHint"], true);
    assert!(
        hints("heartbeat").get("idempotentHint").is_none(),
        "{}",
        hints("heartbeat")
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_community_agent_and_a_personal_key_see_none_of_the_account_tools() {
    let app = spawn_app().await;
    let ann = app.personal_key("ann@acme.test");
    for (who, key) in [
        ("community", app.agent_key("bot")),
        ("a personal key", ann.clone()),
    ] {
        let msg = rpc(&app, &key, "tools/list", json!({})).await;
        assert!(msg["result"]["tools"].is_array(), "{who}: {msg}");
        let names = tool_names(&msg);
        for t in SLICE_TOOLS {
            // get_task, list_tasks and open_task are tools of the Personal API too.
            if key == ann && ["get_task", "list_tasks", "open_task"].contains(&t) {
                continue;
            }
            assert!(!names.iter().any(|n| n == t), "{who} sees {t}: {names:?}");
        }
    }
    // Nor can a personal key call one: it is not a tool of its API.
    let called = call(&app, &ann, "list_accounts", json!({})).await;
    assert_rpc_error(&called, -32602);
}

// ---------------------------------------------------------------------------------------------
// tools/call

#[tokio::test(flavor = "multi_thread")]
async fn list_accounts_returns_the_rest_body() {
    let app = spawn_app().await;
    let key = app.agent_key("op1");
    let rest = app.client.get("/api/agent/v1/accounts", &key).await;
    assert_eq!(rest.status, 200);
    let result = call_result(&app, &key, "list_accounts", json!({})).await;
    assert_eq!(result["isError"], false, "{result}");
    assert_eq!(result["structuredContent"], rest.json(), "{result}");
    assert_eq!(
        result["structuredContent"]["accounts"]
            .as_array()
            .map(Vec::len),
        Some(5),
        "{result}"
    );
    assert!(!has_key(&result, "resultType"), "{result}");
}

#[tokio::test(flavor = "multi_thread")]
async fn request_id_plays_the_idempotency_key() {
    let app = spawn_app().await;
    let key = app.agent_key("op1");
    let first = report_state(&app, &key, report("TW-T001", "banned", "x", "r-1")).await;
    assert_eq!(first["isError"], false, "{first}");
    assert!(first["structuredContent"].is_object(), "{first}");
    assert_eq!(state_changes(&app, "x").await, 1);

    let again = report_state(&app, &key, report("TW-T001", "banned", "x", "r-1")).await;
    assert_eq!(again["isError"], false, "{again}");
    assert_eq!(again["structuredContent"], first["structuredContent"]);
    assert_eq!(state_changes(&app, "x").await, 1, "the resend acted twice");

    let other = report_state(&app, &key, report("TW-T001", "banned", "y", "r-1")).await;
    assert_eq!(other["isError"], true, "{other}");
    assert_eq!(text_body(&other)["code"], "idempotency_mismatch", "{other}");
    assert_eq!(state_changes(&app, "y").await, 0);

    // Under another request_id the same report is a new call, not a replay: the account is
    // already banned, so it answers `unchanged` (the replays above answered `changed`).
    let fresh = report_state(&app, &key, report("TW-T001", "banned", "x", "r-2")).await;
    assert_eq!(fresh["isError"], false, "{fresh}");
    assert_eq!(first["structuredContent"]["result"], "changed", "{first}");
    assert_eq!(fresh["structuredContent"]["result"], "unchanged", "{fresh}");
    assert_eq!(state_changes(&app, "x").await, 1);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_request_id_is_the_same_key_as_the_rest_idempotency_key() {
    let app = spawn_app().await;
    let key = app.agent_key("op1");
    let first = report_state(&app, &key, report("TW-I001", "paused", "p", "shared-1")).await;
    assert_eq!(first["isError"], false, "{first}");
    let rest = app
        .client
        .post_idem(
            "/api/agent/v1/accounts/TW-I001/state",
            &key,
            "shared-1",
            &json!({"state": "paused", "reason": "p", "occurred_at": "2026-11-21 10:00"}),
        )
        .await;
    assert_eq!(rest.status, 200, "{}", rest.text());
    assert_eq!(rest.header("idempotent-replayed"), Some("true"));
    assert_eq!(rest.json(), first["structuredContent"]);
    assert_eq!(state_changes(&app, "p").await, 1);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_rest_error_is_a_tool_result_with_the_same_error_body_as_text() {
    let app = spawn_app().await;
    let op1 = app.agent_key("op1");
    let missing = report_state(&app, &op1, report("NOPE", "paused", "n", "r-nope")).await;
    assert_eq!(missing["isError"], true, "{missing}");
    // No structuredContent: the error body would break the tool's outputSchema, and clients
    // that check it (TypeScript SDK 1.x, MCP Inspector) would throw instead of showing it.
    assert!(missing.get("structuredContent").is_none(), "{missing}");
    let body = text_body(&missing);
    assert_eq!(body["code"], "not_found", "{missing}");
    assert!(body["message"].is_string(), "{missing}");
    assert!(body["request_id"].is_string(), "{missing}");
    let rest = app
        .client
        .post(
            "/api/agent/v1/accounts/NOPE/state",
            &op1,
            &json!({"state": "paused", "reason": "n", "occurred_at": "2026-11-21 10:00"}),
        )
        .await;
    assert_eq!(rest.status, 404);
    let mut rest_body = rest.json();
    let mut mcp_body = body;
    rest_body["request_id"] = Value::Null;
    mcp_body["request_id"] = Value::Null;
    assert_eq!(mcp_body, rest_body);

    // TW-T001 belongs to op1's persona, not op2's.
    let op2 = app.agent_key("op2");
    let other = report_state(&app, &op2, report("TW-T001", "paused", "o", "r-op2")).await;
    assert_eq!(other["isError"], true, "{other}");
    assert_eq!(text_body(&other)["code"], "forbidden", "{other}");
    assert_eq!(state_changes(&app, "o").await, 0);
    assert_eq!(state_changes(&app, "n").await, 0);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_community_agent_calling_list_accounts_gets_forbidden() {
    let app = spawn_app().await;
    let result = call_result(&app, &app.agent_key("bot"), "list_accounts", json!({})).await;
    assert_eq!(result["isError"], true, "{result}");
    assert_eq!(text_body(&result)["code"], "forbidden", "{result}");
}

#[tokio::test(flavor = "multi_thread")]
async fn work_today_takes_its_query_parameter_as_an_argument() {
    let app = spawn_app().await;
    let key = app.agent_key("op1");
    let result = call_result(&app, &key, "work_today", json!({"date": "2026-12-01"})).await;
    assert_eq!(result["isError"], false, "{result}");
    assert_eq!(
        result["structuredContent"]["dates"][0]["date"], "2026-12-01",
        "{result}"
    );
    let rest = app
        .client
        .get("/api/agent/v1/work/today?date=2026-12-01", &key)
        .await;
    assert_eq!(rest.status, 200);
    assert_eq!(result["structuredContent"], rest.json());

    let wrong = call(&app, &key, "work_today", json!({"date": 5})).await;
    assert_rpc_error(&wrong, -32602);
}

// ---------------------------------------------------------------------------------------------
// Prompts and resources

#[tokio::test(flavor = "multi_thread")]
async fn prompts_and_resources_are_read_tools_answers_for_the_same_caller() {
    let app = spawn_app().await;
    let key = app.agent_key("op1");
    let init = initialize(&app, &key).await;
    let caps = &init["result"]["capabilities"];
    assert_eq!(caps["prompts"]["listChanged"], false, "{init}");
    assert_eq!(caps["resources"]["subscribe"], false, "{init}");
    // The instructions name what this key finds: an agent's prompt, not a person's.
    let instructions = init["result"]["instructions"].as_str().unwrap_or_default();
    assert!(
        instructions.contains("todays_work")
            && instructions.contains("fleetdesk://personas/{code}")
            && !instructions.contains("review_queue"),
        "{instructions}"
    );
    // Every list answers in one page: a cursor is not one of ours.
    for method in [
        "tools/list",
        "prompts/list",
        "resources/list",
        "resources/templates/list",
    ] {
        let msg = rpc(&app, &key, method, json!({"cursor": "zzz"})).await;
        assert_rpc_error_in(method, &msg, -32602);
        let msg = rpc(&app, &key, method, json!({"cursor": null})).await;
        assert!(msg["result"].is_object(), "{method}: {msg}");
    }

    // The day's work as a prompt: work_today's answer, with what to do with it.
    let prompts = rpc(&app, &key, "prompts/list", json!({})).await;
    let listed = &prompts["result"]["prompts"];
    assert_eq!(listed.as_array().map(Vec::len), Some(1), "{prompts}");
    assert_eq!(listed[0]["name"], "todays_work");
    assert!(listed[0]["description"].is_string(), "{prompts}");
    let date = "2026-12-01";
    let got = rpc(
        &app,
        &key,
        "prompts/get",
        json!({"name": "todays_work", "arguments": {"date": date}}),
    )
    .await;
    let message = &got["result"]["messages"][0];
    assert_eq!(message["role"], "user", "{got}");
    let text = message["content"]["text"].as_str().expect("text");
    let json_part = text
        .split("```json\n")
        .nth(1)
        .and_then(|rest| rest.split("\n```").next())
        .expect("the answer as JSON");
    let rest = app
        .client
        .get(&format!("/api/agent/v1/work/today?date={date}"), &key)
        .await;
    assert_eq!(
        serde_json::from_str::<Value>(json_part).expect("json"),
        rest.json()
    );
    assert!(
        text.contains("submit_draft") && text.contains("heartbeat"),
        "{text}"
    );
    for bad in [
        json!({"name": "no_such_prompt"}),
        json!({"name": "todays_work", "arguments": {"date": "tomorrow"}}),
        json!({"name": "todays_work", "arguments": {"when": "2026-12-01"}}),
    ] {
        let msg = rpc(&app, &key, "prompts/get", bad.clone()).await;
        assert_rpc_error_in(&bad.to_string(), &msg, -32602);
    }

    // Resources: a persona per account, and the knowledge base's entries.
    let listed = rpc(&app, &key, "resources/list", json!({})).await;
    let resources = listed["result"]["resources"].as_array().expect("resources");
    let uris: Vec<&str> = resources.iter().filter_map(|r| r["uri"].as_str()).collect();
    for code in ["TW-T001", "TW-I001", "TW-K001", "TW-L001", "TW-L002"] {
        assert!(
            uris.contains(&format!("fleetdesk://personas/{code}").as_str()),
            "{listed}"
        );
    }
    assert!(
        !uris.iter().any(|u| u.ends_with("TW-T002")),
        "op2's account is not op1's: {listed}"
    );
    assert!(resources.iter().all(|r| r["name"].is_string()), "{listed}");
    let templates = rpc(&app, &key, "resources/templates/list", json!({})).await;
    let templates: Vec<&str> = templates["result"]["resourceTemplates"]
        .as_array()
        .expect("templates")
        .iter()
        .filter_map(|t| t["uriTemplate"].as_str())
        .collect();
    assert_eq!(
        templates,
        ["fleetdesk://personas/{code}", "fleetdesk://wiki/{id}"]
    );
    let read = rpc(
        &app,
        &key,
        "resources/read",
        json!({"uri": "fleetdesk://personas/TW-T001"}),
    )
    .await;
    let contents = &read["result"]["contents"][0];
    assert_eq!(contents["uri"], "fleetdesk://personas/TW-T001", "{read}");
    assert_eq!(contents["mimeType"], "application/json");
    let persona = app.client.get("/api/agent/v1/personas/TW-T001", &key).await;
    assert_eq!(persona.status, 200, "{}", persona.text());
    assert_eq!(
        serde_json::from_str::<Value>(contents["text"].as_str().expect("text")).expect("json"),
        persona.json()
    );
    // Another agent's persona, an unknown one, a kind of another API, another scheme: not found.
    for uri in [
        "fleetdesk://personas/TW-T002",
        "fleetdesk://personas/NOPE-1",
        "fleetdesk://posts/00000000-0000-4000-8000-000000000000",
        "file:///etc/passwd",
    ] {
        let msg = rpc(&app, &key, "resources/read", json!({"uri": uri})).await;
        assert_rpc_error_in(uri, &msg, -32002);
    }

    // A person: the review queue as a prompt, posts as resources.
    let ann = app.personal_key("ann@acme.test");
    let init = initialize(&app, &ann).await;
    let instructions = init["result"]["instructions"].as_str().unwrap_or_default();
    assert!(
        instructions.contains("review_queue") && !instructions.contains("todays_work"),
        "{instructions}"
    );
    let prompts = rpc(&app, &ann, "prompts/list", json!({})).await;
    assert_eq!(
        prompts["result"]["prompts"][0]["name"], "review_queue",
        "{prompts}"
    );
    let got = rpc(&app, &ann, "prompts/get", json!({"name": "review_queue"})).await;
    assert!(
        got["result"]["messages"][0]["content"]["text"]
            .as_str()
            .is_some_and(|t| t.contains("review_post")),
        "{got}"
    );
    let listed = rpc(&app, &ann, "resources/list", json!({})).await;
    assert!(listed["result"]["resources"].is_array(), "{listed}");
    let msg = rpc(
        &app,
        &ann,
        "resources/read",
        json!({"uri": "fleetdesk://personas/TW-T001"}),
    )
    .await;
    assert_rpc_error(&msg, -32002);
}

// ---------------------------------------------------------------------------------------------
// JSON-RPC errors

#[tokio::test(flavor = "multi_thread")]
async fn malformed_arguments_are_invalid_params_and_change_nothing() {
    let app = spawn_app().await;
    let key = app.agent_key("op1");
    let at = "2026-11-21 10:00";
    let no_state = call(
        &app,
        &key,
        "report_account_state",
        json!({"code": "TW-T001", "reason": "m", "occurred_at": at}),
    )
    .await;
    assert_rpc_error(&no_state, -32602);
    assert!(
        no_state["error"]["message"]
            .as_str()
            .unwrap_or_default()
            .contains("state"),
        "{no_state}"
    );

    for arguments in [
        // A number for the time, a state outside the list, a number for request_id.
        json!({"code": "TW-T001", "state": "paused", "reason": "m", "occurred_at": 20261121}),
        json!({"code": "TW-T001", "state": "exploded", "reason": "m", "occurred_at": at}),
        json!({"code": "TW-T001", "state": "paused", "reason": "m", "occurred_at": at,
               "request_id": 5}),
        // The schema's conditions and patterns: a ban needs its reason; a code of no
        // account-code shape; a time of no time shape.
        json!({"code": "TW-T001", "state": "banned", "occurred_at": at}),
        json!({"code": "TW T001", "state": "paused", "reason": "m", "occurred_at": at}),
        json!({"code": "TW-T001", "state": "paused", "reason": "m", "occurred_at": "soon"}),
        // Arguments that are not an object.
        json!([1, 2]),
        json!("state=paused"),
        json!(7),
    ] {
        let msg = call(&app, &key, "report_account_state", arguments.clone()).await;
        assert_rpc_error_in(&format!("arguments {arguments}"), &msg, -32602);
    }
    let no_name = rpc(&app, &key, "tools/call", json!({"arguments": {}})).await;
    assert_rpc_error(&no_name, -32602);
    assert_eq!(state_changes(&app, "m").await, 0);
}

#[tokio::test(flavor = "multi_thread")]
async fn an_unknown_tool_is_invalid_params() {
    let app = spawn_app().await;
    let msg = call(&app, &app.agent_key("op1"), "delete_everything", json!({})).await;
    assert_rpc_error(&msg, -32602);
    assert!(
        msg["error"]["message"]
            .as_str()
            .unwrap_or_default()
            .contains("delete_everything"),
        "{msg}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn an_unknown_method_is_method_not_found_with_the_same_id() {
    let app = spawn_app().await;
    let key = app.agent_key("op1");
    for (id, method) in [
        (json!("probe-1"), "server/discover"),
        (json!(42), "completion/complete"),
        (json!("x"), "logging/setLevel"),
    ] {
        let res = post(
            &app,
            &key,
            &json!({"jsonrpc": "2.0", "id": id, "method": method, "params": {}}),
        )
        .await;
        assert_eq!(res.status, 200, "{method}");
        let msg = res.json();
        assert_eq!(msg["jsonrpc"], "2.0");
        assert_eq!(msg["id"], id, "{msg}");
        assert_rpc_error_in(method, &msg, -32601);
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn an_error_body_carries_the_request_id_of_its_response() {
    let app = spawn_app().await;
    let key = app.agent_key("op1");
    // As a tool result (isError) ...
    let res = post(
        &app,
        &key,
        &json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                "params": {"name": "report_account_state",
                           "arguments": report("NOPE", "paused", "n", "r-rid")}}),
    )
    .await;
    let header = res.header("x-request-id").expect("X-Request-Id").to_owned();
    let msg = res.json();
    assert_eq!(msg["result"]["isError"], true, "{msg}");
    assert_eq!(
        text_body(&msg["result"])["request_id"],
        header.as_str(),
        "{msg}"
    );
    // ... and as the data of an invalid-params error.
    let res = post(
        &app,
        &key,
        &json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                "params": {"name": "work_today", "arguments": {"date": 5}}}),
    )
    .await;
    let header = res.header("x-request-id").expect("X-Request-Id").to_owned();
    let msg = res.json();
    assert_rpc_error(&msg, -32602);
    assert_eq!(msg["error"]["data"]["request_id"], header.as_str(), "{msg}");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_request_id_outside_its_schema_is_invalid_params() {
    let app = spawn_app().await;
    let key = app.agent_key("op1");
    for request_id in [String::new(), "a".repeat(201), "has space".to_owned()] {
        let msg = call(
            &app,
            &key,
            "report_account_state",
            report("TW-T001", "paused", "rid", &request_id),
        )
        .await;
        assert_rpc_error_in(&format!("request_id {request_id:?}"), &msg, -32602);
    }
    assert_eq!(state_changes(&app, "rid").await, 0);
}

// ---------------------------------------------------------------------------------------------
// The HTTP transport

#[tokio::test(flavor = "multi_thread")]
async fn get_on_the_endpoint_is_405_with_the_error_body() {
    let app = spawn_app().await;
    let res = app
        .client
        .send(
            Request::new("GET", "/api/mcp")
                .bearer(&app.agent_key("op1"))
                .header("Accept", "text/event-stream"),
        )
        .await;
    assert_eq!(res.status, 405);
    assert_eq!(res.code(), "method_not_allowed");
    assert_eq!(res.header("allow"), Some("POST"));
    assert_eq!(
        res.json()["request_id"].as_str(),
        res.header("x-request-id")
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn an_unparsable_body_is_a_400_parse_error() {
    let app = spawn_app().await;
    let res = app
        .client
        .send(
            Request::new("POST", "/api/mcp")
                .bearer(&app.agent_key("op1"))
                .header("Content-Type", "application/json")
                .header("MCP-Protocol-Version", PROTOCOL)
                .raw(b"{\"jsonrpc\": \"2.0\", \"id\": 1, \"method\": ".to_vec()),
        )
        .await;
    assert_eq!(res.status, 400);
    let msg = res.json();
    assert_eq!(msg["jsonrpc"], "2.0", "{msg}");
    assert_eq!(msg["id"], Value::Null, "{msg}");
    assert_rpc_error(&msg, -32700);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_batch_is_a_400_json_rpc_error() {
    let app = spawn_app().await;
    let res = post(
        &app,
        &app.agent_key("op1"),
        &json!([{"jsonrpc": "2.0", "id": 1, "method": "ping"},
                {"jsonrpc": "2.0", "id": 2, "method": "ping"}]),
    )
    .await;
    assert_eq!(res.status, 400);
    let msg = res.json();
    assert!(msg.is_object(), "a batch answer: {msg}");
    assert_eq!(msg["jsonrpc"], "2.0", "{msg}");
    assert_rpc_error(&msg, -32600);
}

#[tokio::test(flavor = "multi_thread")]
async fn an_unsupported_protocol_version_header_is_a_400_json_rpc_error() {
    let app = spawn_app().await;
    let res = app
        .client
        .send(
            Request::new("POST", "/api/mcp")
                .bearer(&app.agent_key("op1"))
                .header("Accept", "application/json, text/event-stream")
                .header("MCP-Protocol-Version", "1999-01-01")
                .json(&json!({"jsonrpc": "2.0", "id": 3, "method": "ping"})),
        )
        .await;
    assert_eq!(res.status, 400);
    let msg = res.json();
    assert_eq!(msg["jsonrpc"], "2.0", "{msg}");
    assert_eq!(msg["id"], 3, "{msg}");
    assert!(msg["error"]["code"].is_i64(), "{msg}");
    assert!(msg.get("result").is_none(), "{msg}");
    assert!(
        msg["error"]["message"]
            .as_str()
            .unwrap_or_default()
            .contains("1999-01-01"),
        "{msg}"
    );
    // Without the header the server assumes its version (the spec's backwards-compatibility
    // rule); 2025-03-26, the previous version, is still accepted.
    let plain = Request::new("POST", "/api/mcp").bearer(&app.agent_key("op1"));
    for (version, id, req) in [
        ("no version header", 4, plain.clone()),
        (
            "2025-03-26",
            5,
            plain.header("MCP-Protocol-Version", "2025-03-26"),
        ),
    ] {
        let res = app
            .client
            .send(req.json(&json!({"jsonrpc": "2.0", "id": id, "method": "ping"})))
            .await;
        assert_eq!(res.status, 200, "{version}: {}", res.text());
        assert_eq!(res.json()["result"], json!({}), "{version}");
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_foreign_origin_is_refused_and_the_own_origin_accepted() {
    let app = spawn_app().await;
    let key = app.agent_key("op1");
    let ping = json!({"jsonrpc": "2.0", "id": 1, "method": "ping"});
    // A foreign host. Without --base-url only loopback pages are accepted (tests/integration/
    // edge.rs covers DNS rebinding and --base-url).
    for origin in ["http://evil.example", "http://localhost.evil.example"] {
        let res = app
            .client
            .send(mcp_request(&key, &ping).header("Origin", origin))
            .await;
        assert_eq!(res.status, 403, "{origin}: {}", res.text());
        assert_eq!(res.code(), "forbidden", "{origin}");
    }

    let own = app
        .client
        .send(mcp_request(&key, &ping).header("Origin", &app.base))
        .await;
    assert_eq!(own.status, 200, "{}", own.text());
    assert_eq!(own.json()["result"], json!({}));
}

#[tokio::test(flavor = "multi_thread")]
async fn a_missing_or_unknown_bearer_is_401_with_the_error_body() {
    let app = spawn_app().await;
    let no_key = Request::mcp;
    let list_accounts = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                               "params": {"name": "list_accounts", "arguments": {}}});
    let method = |method: &str| json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": {}});
    for (what, req) in [
        ("initialize", no_key(&method("initialize"))),
        ("tools/list", no_key(&method("tools/list"))),
        ("ping", no_key(&method("ping"))),
        ("tools/call without a key", no_key(&list_accounts)),
        (
            "tools/call with an unknown key",
            mcp_request("fd_agent_not_a_real_key", &list_accounts),
        ),
    ] {
        let res = app.client.send(req).await;
        assert_eq!(res.status, 401, "{what}: {}", res.text());
        assert_eq!(res.code(), "unauthorized", "{what}");
        assert_eq!(
            res.json()["request_id"].as_str(),
            res.header("x-request-id"),
            "{what}"
        );
    }
}

// ---------------------------------------------------------------------------------------------
// The official MCP Python SDK

#[tokio::test(flavor = "multi_thread")]
async fn the_official_python_sdk_connects_lists_and_calls_tools() {
    // A limit the run reaches at its end: the SDK must surface the refusal with its wait.
    const LIMIT: i64 = 30;
    let app = fleetdesk_tests::spawn_app_with(fleetdesk_tests::AppOptions {
        rate_limit_per_minute: LIMIT,
        ..Default::default()
    })
    .await;
    let key = app.agent_key("op1");
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/mcp_sdk/smoke.py");
    let output = tokio::process::Command::new(fleetdesk_tests::peers::python())
        .arg(script)
        .arg(&app.base)
        .arg(&key)
        .arg(LIMIT.to_string())
        .kill_on_drop(true)
        .output()
        .await
        .unwrap_or_else(|e| {
            panic!("could not run python3 {script} ({e}); it needs python3 and `pip install mcp==2.3.0`")
        });
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    eprintln!("smoke.py stdout:\n{stdout}\nsmoke.py stderr:\n{stderr}");
    if output.status.code() == Some(3) {
        panic!(
            "the MCP Python SDK is missing: pip install mcp==2.3.0 (tests/mcp_sdk/requirements.txt)\n{stdout}"
        );
    }
    assert!(
        output.status.success(),
        "smoke.py failed ({}):\n{stdout}\n{stderr}",
        output.status
    );
    let line = stdout
        .lines()
        .rev()
        .find(|l| l.trim_start().starts_with('{'))
        .expect("a JSON summary line");
    let summary: Value = serde_json::from_str(line).expect("summary is JSON");
    assert_eq!(summary["ok"], true, "{summary}");
    assert_eq!(summary["sdk"], "2.3.0", "{summary}");
    assert_eq!(summary["protocol_version"], PROTOCOL, "{summary}");
    assert_eq!(summary["server"], "fleetdesk", "{summary}");
    let tools: Vec<&str> = summary["tools"]
        .as_array()
        .expect("tools")
        .iter()
        .filter_map(Value::as_str)
        .collect();
    assert!(
        tools.contains(&"list_accounts") && tools.contains(&"report_account_state"),
        "{summary}"
    );
    assert_eq!(summary["list_accounts"]["is_error"], false, "{summary}");
    assert_eq!(summary["failing_call"]["is_error"], true, "{summary}");
    assert_eq!(summary["failing_call"]["code"], "not_found", "{summary}");
    assert_eq!(summary["work_today"]["is_error"], false, "{summary}");
    assert_eq!(summary["rate_limited"]["code"], -32029, "{summary}");
    assert_eq!(
        summary["rate_limited"]["data"]["code"], "rate_limited",
        "{summary}"
    );

    // What the SDK sent: whatever it tries before `initialize` (2.3.0 probes `server/discover`
    // at a newer protocol version) must be answered with a JSON-RPC error so it falls back;
    // after the handshake every request carries the negotiated version.
    let trace = summary["trace"].as_array().expect("trace");
    let init = trace
        .iter()
        .position(|e| e["method"] == "initialize")
        .unwrap_or_else(|| panic!("the SDK never sent initialize: {summary}"));
    assert_eq!(trace[init]["status"], 200, "{summary}");
    for e in trace {
        assert_eq!(
            e["http"], "POST",
            "only POSTs are expected (no session, no GET stream): {e}"
        );
        assert_eq!(e["authorization"], "bearer", "{e}");
        assert!(e["status"].as_u64().is_some_and(|s| s < 500), "{e}");
    }
    for probe in &trace[..init] {
        assert!(
            probe["rpc_error"].is_i64(),
            "a pre-handshake probe got no JSON-RPC error: {probe}"
        );
        assert!(
            probe["content_type"]
                .as_str()
                .is_some_and(|c| c.starts_with("application/json")),
            "{probe}"
        );
    }
    let after = &trace[init + 1..];
    assert_eq!(
        after.first().map(|e| &e["method"]),
        Some(&json!("notifications/initialized")),
        "{summary}"
    );
    assert_eq!(after[0]["status"], 202, "{summary}");
    for e in after {
        assert_eq!(e["protocol_version"], PROTOCOL, "{e}");
    }
    // Three calls, then list_accounts until one is refused: every request of the run counted
    // (the probe, initialize, the notification, tools/list and the calls), so the one past
    // the limit is the refused one.
    let calls: Vec<&Value> = after
        .iter()
        .filter(|e| e["method"] == "tools/call")
        .collect();
    let refused = calls.last().expect("calls");
    assert_eq!(refused["rpc_error"], -32029, "{summary}");
    assert_eq!(refused["status"], 200, "{summary}");
    assert_eq!(trace.len(), LIMIT as usize + 1, "{summary}");
}

// ---------------------------------------------------------------------------------------------
// Every tool through the real clients (cases in tests/mcp_sdk/cases.json)

const CASES: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/mcp_sdk/cases.json");
const PY_EVERY_TOOL: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/mcp_sdk/every_tool.py");
const TS_DIR: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/mcp_sdk_ts");

/// Tools whose case says no argument can make them refuse (they take none, or none that can
/// be wrong); every other tool is called once with arguments it refuses.
const UNREFUSABLE: [(&str, &[&str]); 2] = [
    ("agent", &["list_accounts", "list_approved"]),
    ("personal", &["whoami"]),
];

/// How long one client run may take before the test gives up on it.
const CLIENT_TIMEOUT: Duration = Duration::from_secs(300);

/// A 2xx JSON answer of a fixture request, or a panic naming the step.
fn fixture_ok(step: &str, res: Response) -> Value {
    assert!(
        (200..300).contains(&res.status),
        "fixture {step}: {} {}",
        res.status,
        res.text()
    );
    res.json()
}

/// A finished single upload of a small PNG: (upload id, library media id).
async fn fixture_upload(app: &TestApp, key: &str, salt: &str) -> (String, String) {
    let plan = fixture_ok(
        "create upload",
        app.client
            .post(
                "/api/agent/v1/uploads",
                key,
                &json!({"code": "TW-T001", "caption": salt}),
            )
            .await,
    );
    let url = plan["upload_url"].as_str().expect("upload_url");
    let path = url.strip_prefix(&app.base).unwrap_or(url);
    let done = fixture_ok(
        "PUT the file",
        app.client
            .send(Request::new("PUT", path).raw(png(2, 2, salt.as_bytes())))
            .await,
    );
    (
        plan["upload_id"].as_str().expect("upload_id").to_owned(),
        done["media_id"].as_str().expect("media_id").to_owned(),
    )
}

/// A post of TW-T001 from a draft: saved only (`submit` false) or sent to internal review.
async fn fixture_draft(app: &TestApp, key: &str, body: &str, submit: bool) -> String {
    let made = fixture_ok(
        "submit draft",
        app.client
            .post(
                "/api/agent/v1/drafts",
                key,
                &json!({"code": "TW-T001", "body": body, "submit": submit}),
            )
            .await,
    );
    made["draft"]["id"].as_str().expect("draft id").to_owned()
}

/// Stocks a post; returns the answer's `post`.
async fn fixture_stock(app: &TestApp, key: &str, id: &str) -> Value {
    fixture_ok(
        "stock",
        app.client
            .post(&format!("/api/agent/v1/posts/{id}/stock"), key, &json!({}))
            .await,
    )["post"]
        .clone()
}

/// The data the cases' `${name}` placeholders name, made over REST for op1 (persona Mia,
/// TW-T001) and Ann (agency): ids in the states the valid calls need, times relative to now,
/// a PNG in base64.
async fn every_tool_fixtures(app: &TestApp) -> Value {
    let op1 = app.agent_key("op1");
    let ann = app.personal_key("ann@acme.test");
    let tag = uuid::Uuid::new_v4().simple().to_string()[..8].to_owned();
    let (upload_id, _) = fixture_upload(app, &op1, &format!("attach {tag}")).await;
    let (_, media_id) = fixture_upload(app, &op1, &format!("library {tag}")).await;
    let draft = |what: &str| format!("{what} {tag}");
    let draft_id = fixture_draft(app, &op1, &draft("saved draft"), false).await;
    let relay_id = fixture_draft(app, &op1, &draft("relayed review"), true).await;
    let review_id = fixture_draft(app, &op1, &draft("personal review"), true).await;
    let stock_id = fixture_draft(app, &op1, &draft("to stock"), true).await;
    let stocked_id = fixture_draft(app, &op1, &draft("to unstock"), true).await;
    fixture_stock(app, &op1, &stocked_id).await;
    let stocked_delete_id = fixture_draft(app, &op1, &draft("to delete"), true).await;
    fixture_stock(app, &op1, &stocked_delete_id).await;

    // Approved, scheduled in the agent's own tool, then stocked: it waits in
    // unschedule_stocked until confirm_unscheduled.
    let now = Timestamp::now() - SignedDuration::from_mins(1);
    let iso = |t: Timestamp| {
        t.to_zoned(TimeZone::UTC)
            .strftime("%Y-%m-%dT%H:%M:%S+00:00")
            .to_string()
    };
    let day = SignedDuration::from_hours(24);
    let unschedule_id = fixture_draft(app, &op1, &draft("scheduled then stocked"), true).await;
    fixture_ok(
        "approve",
        app.client
            .post(
                &format!("/api/user/v1/posts/{unschedule_id}/transition"),
                &ann,
                &json!({"to": "approved"}),
            )
            .await,
    );
    fixture_ok(
        "report scheduled",
        app.client
            .post(
                "/api/agent/v1/posts/report",
                &op1,
                &json!({"posts": [{"code": "TW-T001", "post_id": unschedule_id,
                                   "status": "scheduled", "scheduled_for": iso(now + day * 2)}]}),
            )
            .await,
    );
    let stocked = fixture_stock(app, &op1, &unschedule_id).await;
    assert_eq!(stocked["unschedule_pending"], true, "{stocked}");

    let decisions = fixture_decisions(app).await;
    let spare_key_id = fixture_key_id(app, &app.personal_key("cid@brand.test")).await;
    let report = fixture_ok(
        "create report",
        app.client
            .post(
                "/api/user/v1/reports",
                &ann,
                &json!({"workspace": "Taiwan", "from": "2026-11-01", "to": "2026-11-07"}),
            )
            .await,
    );
    let tasks = fixture_tasks(app, &op1, &tag).await;
    let research = fixture_ok(
        "quote research",
        app.client
            .post(
                "/api/agent/v1/ad-research/quote",
                &op1,
                &json!({"kind": "product_brief", "items": ["123456", "https://shopee.tw/product/1/2"]}),
            )
            .await,
    );
    // Picks of a card found: one to read, one to cancel.
    let picked = app.finished_research("op1", &["123457"]).await;
    let pick = |note: &'static str| {
        let body =
            json!({"research_id": picked, "item": "123457", "code": "TW-T001", "note": note});
        let ann = ann.clone();
        async move {
            fixture_ok(
                "make a pick",
                app.client.post("/api/user/v1/ad-picks", &ann, &body).await,
            )["pick"]
                .clone()
        }
    };
    // The ads of act_1001 as the sandbox platform shows them (ad 100111 running).
    fleetdesk::worker::Worker::new(app.store.clone())
        .tokens(|name| (name == "ACME_META_TOKEN").then(|| "sandbox-token".to_owned()))
        .schedule_ad_sync()
        .await
        .expect("enqueue the ad sync");
    fleetdesk::worker::Worker::new(app.store.clone())
        .tokens(|name| (name == "ACME_META_TOKEN").then(|| "sandbox-token".to_owned()))
        .run_due()
        .await
        .expect("the ad sync");
    let read_pick = pick("to read").await;
    let cancel_pick = pick("to cancel").await;
    let sources = fixture_ok(
        "list wiki sources",
        app.client.get("/api/agent/v1/wiki/sources", &op1).await,
    );
    let source_id = |name: &str| {
        sources["sources"]
            .as_array()
            .and_then(|all| all.iter().find(|s| s["name"] == name))
            .map(|s| s["id"].clone())
            .unwrap_or_else(|| panic!("fixture: no wiki source {name}: {sources}"))
    };

    let webhook = |what: &'static str| {
        let body = json!({
            "workspace_id": app.workspace_id("Taiwan"),
            "url": format!("https://hooks.example.com/{what}/{tag}"),
            "types": ["task.opened"],
        });
        let ann = ann.clone();
        async move {
            let made = fixture_ok(
                "create a webhook",
                app.client.post("/api/user/v1/webhooks", &ann, &body).await,
            );
            made["endpoint"]["id"].clone()
        }
    };
    let webhook_id = webhook("kept").await;
    let webhook_delete_id = webhook("deleted").await;

    let taipei = TimeZone::get("Asia/Taipei").expect("Asia/Taipei");
    let in_five_days = (now + day * 5).to_zoned(taipei).date();
    json!({
        "tag": tag,
        "persona_id": app.persona_id("Mia").to_string(),
        "workspace_id": app.workspace_id("Taiwan"),
        "unknown_id": "00000000-0000-4000-8000-000000000000",
        "upload_id": upload_id,
        "media_id": media_id,
        "draft_id": draft_id,
        "relay_id": relay_id,
        "review_id": review_id,
        "stock_id": stock_id,
        "stocked_id": stocked_id,
        "stocked_delete_id": stocked_delete_id,
        "unschedule_id": unschedule_id,
        "now": iso(now),
        "past": iso(now - day),
        "tomorrow": iso(now + day),
        "future": format!("{in_five_days} 10:00"),
        "png_base64": base64::engine::general_purpose::STANDARD.encode(png(1, 1, tag.as_bytes())),
        "relay_decision_id": decisions[0],
        "follow_up_id": decisions[1],
        "dismiss_decision_id": decisions[2],
        "choose_decision_id": decisions[3],
        "spare_key_id": spare_key_id,
        "report_id": report["id"],
        "task_claim_id": tasks[0],
        "task_work_id": tasks[1],
        "task_confirm_id": tasks[2],
        "task_pickup_id": tasks[3],
        "wiki_source_id": source_id("Voice notes"),
        "research_id": research["request_id"],
        "picked_research_id": picked,
        "pick": read_pick,
        "cancel_pick": cancel_pick,
        "others_wiki_source_id": source_id("Food lore"),
        "webhook_id": webhook_id,
        "webhook_delete_id": webhook_delete_id,
    })
}

/// The list_keys id of a key no run uses (the admin run revokes it).
async fn fixture_key_id(app: &TestApp, key: &str) -> String {
    let root = app.personal_key("root@example.com");
    let page = fixture_ok(
        "list keys",
        app.client
            .get("/api/user/v1/admin/keys?kind=user&limit=200", &root)
            .await,
    );
    page["keys"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|k| k["lookup"] == key[4..12])
        .and_then(|k| k["id"].as_str())
        .expect("the key's record")
        .to_owned()
}

/// Task cards of op1 on Mia's accounts, opened and moved over REST: one to claim (then fail),
/// one claimed to work (progress, finish, relay), one finished for a person to confirm (then
/// reopen), and one left in pending_pickup.
async fn fixture_tasks(app: &TestApp, key: &str, tag: &str) -> [String; 4] {
    let mut ids = Vec::new();
    for (i, code) in ["TW-T001", "TW-I001", "TW-L001", "TW-K001"]
        .iter()
        .enumerate()
    {
        let made = fixture_ok(
            "open task",
            app.client
                .post(
                    "/api/agent/v1/tasks",
                    key,
                    &json!({"kind": "other", "title": format!("MCP card {i} {tag}"),
                            "target": {"type": "slot", "code": code}}),
                )
                .await,
        );
        ids.push(made["id"].as_str().expect("task id").to_owned());
    }
    for (id, moves) in [
        (&ids[1], &["claim"][..]),
        (&ids[2], &["claim", "finish"][..]),
    ] {
        for action in moves {
            let body = if *action == "finish" {
                json!({"result": "done"})
            } else {
                json!({})
            };
            fixture_ok(
                action,
                app.client
                    .post(&format!("/api/agent/v1/tasks/{id}/{action}"), key, &body)
                    .await,
            );
        }
    }
    [
        ids[0].clone(),
        ids[1].clone(),
        ids[2].clone(),
        ids[3].clone(),
    ]
}

/// Open decisions on Mia (op1), written as the personas area and a person's choice write them:
/// a new persona to relay, a change_bio follow-up with its card to complete, a fact proposal to
/// dismiss and a contradiction to choose on.
async fn fixture_decisions(app: &TestApp) -> [String; 4] {
    let mia = app.persona_id("Mia");
    let ids: [uuid::Uuid; 4] = std::array::from_fn(|_| uuid::Uuid::new_v4());
    for (id, kind, question, options) in [
        (ids[0], "persona_new", "NULL", "[]"),
        (ids[1], "change_bio", "NULL", "[]"),
        (ids[2], "fact_proposal", "NULL", "[]"),
        (
            ids[3],
            "contradiction",
            "'What should change?'",
            r#"["change_bio", "delete_post", "keep"]"#,
        ),
    ] {
        app.sql(&format!(
            "INSERT INTO decisions (id, organization_id, workspace_id, kind, persona_id, title, \
               question, options, opened_by_agent) \
             SELECT '{id}', w.organization_id, pe.workspace_id, '{kind}', pe.id, 'MCP {kind}', \
               {question}, '{options}'::jsonb, pe.agent_id \
             FROM personas pe JOIN workspaces w ON w.id = pe.workspace_id WHERE pe.id = '{mia}'"
        ))
        .await;
    }
    let card = uuid::Uuid::new_v4();
    app.sql(&format!(
        "INSERT INTO task_cards (id, organization_id, workspace_id, persona_id, kind, title, \
           target_type, target_id, assignee_agent, opened_by_type, opened_by_name, decision_id) \
         SELECT '{card}', organization_id, workspace_id, persona_id, 'change_bio', title, \
           'persona', persona_id, opened_by_agent, 'person', 'Ann', id \
         FROM decisions WHERE id = '{}'",
        ids[1]
    ))
    .await;
    app.sql(&format!(
        "UPDATE decisions SET task_id = '{card}', opened_by_type = 'person', \
           opened_by_person = 'Ann' WHERE id = '{}'",
        ids[1]
    ))
    .await;
    ids.map(|id| id.to_string())
}

/// Runs one client; returns its JSON summary (the last line of stdout starting with `{`, or
/// the whole of stdout) and its exit code. Prints the wall time.
async fn run_client(what: &str, cmd: &mut tokio::process::Command) -> (Value, Option<i32>) {
    let started = Instant::now();
    let output = tokio::time::timeout(CLIENT_TIMEOUT, cmd.kill_on_drop(true).output())
        .await
        .unwrap_or_else(|_| panic!("{what} did not finish within {CLIENT_TIMEOUT:?}"))
        .unwrap_or_else(|e| panic!("could not start {what}: {e}"));
    let took = started.elapsed();
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    eprintln!(
        "{what}: exit {:?} after {took:.1?}\nstderr:\n{stderr}",
        output.status.code()
    );
    // The scripts print one JSON line last; Inspector prints one pretty-printed JSON document.
    let summary = serde_json::from_str(&stdout)
        .ok()
        .or_else(|| {
            stdout
                .lines()
                .rev()
                .find(|l| l.trim_start().starts_with('{'))
                .and_then(|l| serde_json::from_str(l).ok())
        })
        .unwrap_or_else(|| panic!("{what} printed no JSON summary:\n{stdout}\n{stderr}"));
    (summary, output.status.code())
}

/// The case tools of a section of cases.json, in order.
fn case_tools(section: &str) -> Vec<String> {
    let cases: Value = serde_json::from_str(&std::fs::read_to_string(CASES).expect("cases.json"))
        .expect("cases.json is JSON");
    cases[section]
        .as_array()
        .unwrap_or_else(|| panic!("cases.json has no {section} list"))
        .iter()
        .map(|c| c["tool"].as_str().expect("tool").to_owned())
        .collect()
}

/// Checks an every-tool summary: every tool the key lists was called with valid arguments and
/// (unless unrefusable) refused ones, and every call passed.
fn assert_every_tool(client: &str, section: &str, listed: &[String], summary: &Value) {
    let at = format!("{client} ({section})");
    let failures = summary["failures"].as_array().cloned().unwrap_or_default();
    assert!(
        summary["ok"] == true && failures.is_empty(),
        "{at}: {}\n{summary}",
        if failures.is_empty() {
            summary["error"].to_string()
        } else {
            failures
                .iter()
                .map(|f| f.as_str().unwrap_or_default())
                .collect::<Vec<_>>()
                .join("\n")
        }
    );
    let tools: Vec<String> = summary["tools"]
        .as_array()
        .expect("tools")
        .iter()
        .map(|t| t.as_str().expect("tool").to_owned())
        .collect();
    assert_eq!(
        tools, listed,
        "{at}: the client listed other tools than tools/list"
    );
    let mut cased = case_tools(section);
    cased.sort();
    assert_eq!(
        cased, listed,
        "{at}: cases.json does not cover the listed tools"
    );
    let unrefusable = UNREFUSABLE
        .iter()
        .find(|(s, _)| *s == section)
        .map(|(_, t)| t.to_vec())
        .unwrap_or_default();
    assert_eq!(summary["unrefusable"], json!(unrefusable), "{at}");
    let calls = summary["calls"].as_array().expect("calls");
    for tool in listed {
        let phases: Vec<&str> = calls
            .iter()
            .filter(|c| c["tool"] == tool.as_str())
            .filter_map(|c| c["phase"].as_str())
            .collect();
        let want: &[&str] = if unrefusable.contains(&tool.as_str()) {
            &["valid"]
        } else {
            &["refused", "valid"]
        };
        assert_eq!(phases, want, "{at}: calls of {tool}");
    }
    for c in calls {
        match c["phase"].as_str() {
            Some("valid") => assert_eq!(c["outcome"], "ok", "{at}: {c}"),
            Some("refused") => assert!(
                (c["outcome"] == "is_error" || c["outcome"] == "rpc_error")
                    && c["code"].is_string(),
                "{at}: {c}"
            ),
            _ => panic!("{at}: a call without a phase: {c}"),
        }
    }
    let refused = listed.len() - unrefusable.len();
    assert_eq!(
        summary["counts"],
        json!({"valid": {"passed": listed.len(), "failed": 0},
               "refused": {"passed": refused, "failed": 0}}),
        "{at}"
    );
    eprintln!(
        "{at}: {} tools, {} valid and {refused} refused calls passed",
        listed.len(),
        listed.len()
    );
}

/// The community run's placeholders: the bot's space Mia fans, today in its zone, and a canon
/// entry tagged `community` (and the space's market) that community_wiki_search finds
/// (`community_entry_id`), written as the wiki writes it (terms and folded tags).
async fn community_fixtures(app: &TestApp, fixtures: &mut Value) {
    let space = app.space_id("Mia fans");
    let taipei = TimeZone::get("Asia/Taipei").expect("Asia/Taipei");
    fixtures["space_id"] = json!(space.to_string());
    fixtures["taipei_today"] = json!(Timestamp::now().to_zoned(taipei).date().to_string());
    let id = uuid::Uuid::new_v4();
    let (title, body) = ("社群退貨須知", "七天內可以退貨，請保留發票並私訊客服。");
    let terms = |t: &str| fleetdesk_wiki::search::index_text(t).replace('\'', "''");
    let tags = ["community", "market:TW"];
    let array = |list: Vec<String>| {
        list.iter()
            .map(|t| format!("'{t}'"))
            .collect::<Vec<_>>()
            .join(",")
    };
    app.sql(&format!(
        "INSERT INTO wiki_entries (id, organization_id, project_id, title_key, title, category, \
           summary, body, tags, folded_tags, version, status, terms_title, terms_summary, \
           terms_body) \
         SELECT '{id}', o.id, NULL, '{title}', '{title}', 'playbook', '退貨怎麼辦', '{body}', \
           ARRAY[{}]::text[], ARRAY[{}]::text[], 1, 'canon', '{}', '', '{}' \
         FROM organizations o WHERE o.name = 'Acme'",
        array(tags.iter().map(|t| t.to_string()).collect()),
        array(
            tags.iter()
                .map(|t| fleetdesk_wiki::entry::fold_tag(t))
                .collect()
        ),
        terms(title),
        terms(body),
    ))
    .await;
    fixtures["community_entry_id"] = json!(id.to_string());
    // A ticket the bot opened, for the personal run to read and resolve.
    let ticket = fixture_ok(
        "open a ticket",
        app.client
            .post(
                "/api/agent/v1/community/tickets",
                &app.agent_key("bot"),
                &json!({"channel": "whatsapp", "space_id": space, "category": "complaint",
                        "summary": "the serum leaked in the box"}),
            )
            .await,
    );
    fixtures["ticket_id"] = ticket["ticket_id"].clone();
}

/// Runs an every-tool script for op1 (agent), Ann (personal), root (admin: the tools only an
/// admin key lists) and bot (community: the community role's tools) against one app.
async fn every_tool_run(
    client: &str,
    command: impl Fn(&str, &str) -> tokio::process::Command,
    missing_hint: &str,
) {
    let app = spawn_app().await;
    let mut fixtures = every_tool_fixtures(&app).await;
    community_fixtures(&app, &mut fixtures).await;
    let fixtures = fixtures.to_string();
    let mut runs = Vec::new();
    for (section, key) in [
        ("agent", app.agent_key("op1")),
        ("personal", app.personal_key("ann@acme.test")),
        ("admin", app.personal_key("root@example.com")),
        ("community", app.agent_key("bot")),
    ] {
        let mut listed = tool_names(&rpc(&app, &key, "tools/list", json!({})).await);
        if section == "admin" {
            // An admin key lists every personal tool too: those are the personal run's.
            let personal = case_tools("personal");
            listed.retain(|t| !personal.contains(t));
        }
        let mut cmd = command(&app.base, section);
        cmd.env("FLEETDESK_KEY", &key)
            .env("FLEETDESK_FIXTURES", &fixtures);
        let (summary, code) = run_client(&format!("{client} {section}"), &mut cmd).await;
        if code == Some(3) {
            panic!("{missing_hint}\n{summary}");
        }
        runs.push((section, listed, summary, code));
    }
    // Every section ran before the first assertion, so one run shows every failure.
    for (section, _, summary, _) in &runs {
        for failure in summary["failures"].as_array().into_iter().flatten() {
            eprintln!(
                "{client} ({section}) failure: {}",
                failure.as_str().unwrap_or_default()
            );
        }
    }
    for (section, listed, summary, code) in &runs {
        assert_every_tool(client, section, listed, summary);
        assert_eq!(*code, Some(0), "{client} {section}: {summary}");
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn the_python_sdk_calls_every_tool_with_valid_and_refused_arguments() {
    every_tool_run(
        "python sdk",
        |base, section| {
            let mut cmd = tokio::process::Command::new(fleetdesk_tests::peers::python());
            cmd.arg(PY_EVERY_TOOL).arg(base).arg(section);
            cmd
        },
        "the MCP Python SDK is missing: run `cargo xtask test` (or pip install -r tests/requirements.txt)",
    )
    .await;
}

/// The TypeScript SDK and Inspector come from tests/mcp_sdk_ts/package-lock.json; `cargo xtask
/// test` installs them.
fn require_node_modules() {
    let sdk = Path::new(TS_DIR).join("node_modules/@modelcontextprotocol/sdk/package.json");
    let inspector = Path::new(TS_DIR).join("node_modules/.bin/mcp-inspector");
    if !sdk.exists() || !inspector.exists() {
        panic!(
            "tests/mcp_sdk_ts/node_modules is missing: run `cargo xtask test` or `npm ci --prefix tests/mcp_sdk_ts`"
        );
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn the_typescript_sdk_calls_every_tool_with_valid_and_refused_arguments() {
    require_node_modules();
    every_tool_run(
        "typescript sdk",
        |base, section| {
            let mut cmd = tokio::process::Command::new("node");
            cmd.arg(Path::new(TS_DIR).join("every_tool.mjs"))
                .arg(base)
                .arg(section);
            cmd
        },
        "tests/mcp_sdk_ts/node_modules is missing: run `cargo xtask test` or `npm ci --prefix tests/mcp_sdk_ts`",
    )
    .await;
}

/// `mcp-inspector --cli <url> --transport http --header "Authorization: Bearer <key>" ...`:
/// the binary `npx mcp-inspector` runs, started directly so nothing is fetched.
fn inspector(app: &TestApp, key: &str, rest: &[&str]) -> tokio::process::Command {
    let mut cmd =
        tokio::process::Command::new(Path::new(TS_DIR).join("node_modules/.bin/mcp-inspector"));
    cmd.current_dir(TS_DIR)
        .arg("--cli")
        .arg(format!("{}/api/mcp", app.base))
        .args(["--transport", "http", "--header"])
        .arg(format!("Authorization: Bearer {key}"))
        .args(rest);
    cmd
}

#[tokio::test(flavor = "multi_thread")]
async fn mcp_inspector_cli_lists_and_calls_tools_and_shows_a_tool_error() {
    require_node_modules();
    let app = spawn_app().await;
    let key = app.agent_key("op1");
    let started = Instant::now();

    let (listed, code) = run_client(
        "inspector tools/list",
        &mut inspector(&app, &key, &["--method", "tools/list"]),
    )
    .await;
    assert_eq!(code, Some(0), "{listed}");
    assert_eq!(result_tool_names(&listed), SLICE_TOOLS, "{listed}");

    let (accounts, code) = run_client(
        "inspector tools/call list_accounts",
        &mut inspector(
            &app,
            &key,
            &["--method", "tools/call", "--tool-name", "list_accounts"],
        ),
    )
    .await;
    assert_eq!(code, Some(0), "{accounts}");
    assert_ne!(accounts["isError"], true, "{accounts}");
    assert_eq!(
        accounts["structuredContent"]["accounts"]
            .as_array()
            .map(Vec::len),
        Some(5),
        "{accounts}"
    );

    // A refused call reaches the user as the error result, not as "Structured content does
    // not match the tool's output schema".
    let (refused, code) = run_client(
        "inspector tools/call report_account_state",
        &mut inspector(
            &app,
            &key,
            &[
                "--method",
                "tools/call",
                "--tool-name",
                "report_account_state",
                "--tool-arg",
                "code=NOPE",
                "state=paused",
                "reason=inspector",
                "occurred_at=2026-11-21 10:00",
            ],
        ),
    )
    .await;
    assert_eq!(code, Some(0), "{refused}");
    assert_eq!(refused["isError"], true, "{refused}");
    assert_eq!(text_body(&refused)["code"], "not_found", "{refused}");
    assert_eq!(state_changes(&app, "inspector").await, 0);
    eprintln!("inspector: 3 runs, wall time {:.1?}", started.elapsed());
}
