//! The served descriptions agree with the specification and with themselves.
//!
//! `docs/endpoints.tsv` (the project's copy of the specification's table) lists every endpoint with
//! its scope, MCP tool and idempotency. Each row the catalogue implements must agree with it in
//! the catalogue, in the OpenAPI document and in MCP `tools/list`; the catalogue must not serve
//! anything the table does not list. Rows not implemented yet are printed, never failed.

use fleetdesk_api::{ErasedOp, HttpMethod};
use fleetdesk_tests::client::Request;
use fleetdesk_tests::{Client, TestApp, spawn_app};
use serde_json::{Value, json};
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// The column names of endpoints.tsv, in order.
const COLUMNS: [&str; 8] = [
    "api",
    "method",
    "path",
    "scope",
    "mcp_tool",
    "idempotency_key",
    "mcp_request_id",
    "source",
];

/// One row of endpoints.tsv.
#[derive(Debug, Clone)]
struct Row {
    line: usize,
    api: String,
    method: String,
    path: String,
    scope: String,
    tool: Option<String>,
    idempotent: bool,
    request_id: bool,
}

impl Row {
    fn key(&self) -> (String, String, String) {
        (self.api.clone(), self.method.clone(), self.path.clone())
    }

    fn prefix(&self) -> &'static str {
        match self.api.as_str() {
            "agent" => "/api/agent/v1",
            _ => "/api/user/v1",
        }
    }

    fn full_path(&self) -> String {
        format!("{}{}", self.prefix(), self.path)
    }

    fn describe(&self) -> String {
        format!(
            "{} {} {} ({})",
            self.api,
            self.method,
            self.path,
            self.tool.as_deref().unwrap_or("-")
        )
    }
}

fn spec_path() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../docs/endpoints.tsv")
}

fn yes_no(value: &str, column: &str, line: usize) -> bool {
    match value {
        "yes" => true,
        "no" => false,
        other => panic!("endpoints.tsv line {line}: {column} is {other:?}, expected yes or no"),
    }
}

/// Reads endpoints.tsv, failing clearly when it is missing or malformed.
fn spec_rows() -> Vec<Row> {
    let path = spec_path();
    let text = std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("cannot read the endpoint table {} ({e})", path.display()));
    let mut lines = text.lines().enumerate();
    let (_, header) = lines.next().expect("endpoints.tsv is empty");
    let header: Vec<&str> = header.trim_end_matches('\r').split('\t').collect();
    assert_eq!(header, COLUMNS, "endpoints.tsv header changed");
    let mut rows = Vec::new();
    for (i, line) in lines {
        let line_no = i + 1;
        let line = line.trim_end_matches('\r');
        if line.trim().is_empty() {
            continue;
        }
        let cols: Vec<&str> = line.split('\t').collect();
        assert_eq!(
            cols.len(),
            COLUMNS.len(),
            "endpoints.tsv line {line_no} has {} columns: {line:?}",
            cols.len()
        );
        assert!(
            matches!(cols[0], "agent" | "personal"),
            "endpoints.tsv line {line_no}: unknown api {:?}",
            cols[0]
        );
        assert!(
            matches!(cols[1], "GET" | "POST" | "PUT"),
            "endpoints.tsv line {line_no}: unknown method {:?}",
            cols[1]
        );
        assert!(
            cols[2].starts_with('/'),
            "endpoints.tsv line {line_no}: path {:?}",
            cols[2]
        );
        rows.push(Row {
            line: line_no,
            api: cols[0].to_owned(),
            method: cols[1].to_owned(),
            path: cols[2].to_owned(),
            scope: cols[3].to_owned(),
            tool: (cols[4] != "-").then(|| cols[4].to_owned()),
            idempotent: yes_no(cols[5], "idempotency_key", line_no),
            request_id: yes_no(cols[6], "mcp_request_id", line_no),
        });
    }
    assert!(!rows.is_empty(), "endpoints.tsv has no rows");
    let mut seen = BTreeSet::new();
    for r in &rows {
        assert!(
            seen.insert(r.key()),
            "endpoints.tsv line {}: {} listed twice",
            r.line,
            r.describe()
        );
    }
    rows
}

fn op_key(op: &dyn ErasedOp) -> (String, String, String) {
    let s = op.spec();
    (
        s.api.as_str().to_owned(),
        s.method.as_str().to_owned(),
        s.path.to_owned(),
    )
}

async fn get_json(client: &Client, path: &str) -> Value {
    let res = client.send(Request::new("GET", path)).await;
    assert_eq!(
        res.status,
        200,
        "GET {path}: {}",
        String::from_utf8_lossy(&res.body)
    );
    assert!(
        res.header("content-type")
            .is_some_and(|t| t.starts_with("application/json")),
        "GET {path}: content-type {:?}",
        res.header("content-type")
    );
    res.json()
}

/// The tool names `tools/list` shows to this key.
async fn mcp_tools(client: &Client, key: &str) -> BTreeMap<String, Value> {
    let res = client
        .send(
            Request::new("POST", "/api/mcp")
                .bearer(key)
                .header("MCP-Protocol-Version", "2025-06-18")
                .header("Accept", "application/json, text/event-stream")
                .json(&json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}})),
        )
        .await;
    assert_eq!(
        res.status,
        200,
        "tools/list: {}",
        String::from_utf8_lossy(&res.body)
    );
    let body = res.json();
    assert!(body.get("error").is_none(), "tools/list failed: {body}");
    let tools = body["result"]["tools"]
        .as_array()
        .unwrap_or_else(|| panic!("tools/list without result.tools: {body}"));
    tools
        .iter()
        .map(|t| {
            let name = t["name"]
                .as_str()
                .unwrap_or_else(|| panic!("a tool without a name: {t}"))
                .to_owned();
            (name, t.clone())
        })
        .collect()
}

/// Which tenant key may see the tool of a row: the standard tenant's holder of that access.
fn key_for_scope(app: &TestApp, row: &Row) -> (String, String) {
    match (row.api.as_str(), row.scope.as_str()) {
        ("agent", s) if s.starts_with("community:") => ("bot".into(), app.agent_key("bot")),
        ("agent", _) => ("op1".into(), app.agent_key("op1")),
        (_, "platform_admin") => (
            "root@example.com".into(),
            app.personal_key("root@example.com"),
        ),
        _ => ("ann@acme.test".into(), app.personal_key("ann@acme.test")),
    }
}

/// Follows a local `$ref` to its component schema.
fn resolve<'a>(doc: &'a Value, reference: &str) -> Option<&'a Value> {
    let name = reference.strip_prefix("#/components/schemas/")?;
    let name = name.replace("~1", "/").replace("~0", "~");
    doc["components"]["schemas"].get(name)
}

/// A schema under `content.application/json.schema`, resolved when it is a reference.
fn json_schema<'a>(doc: &'a Value, holder: &'a Value) -> Option<&'a Value> {
    let schema = holder
        .get("content")?
        .get("application/json")?
        .get("schema")?;
    match schema.get("$ref").and_then(Value::as_str) {
        Some(r) => resolve(doc, r),
        None => schema.is_object().then_some(schema),
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn the_catalogue_openapi_and_mcp_agree_with_endpoints_tsv() {
    let rows = spec_rows();
    let catalogue: Vec<Arc<dyn ErasedOp>> = fleetdesk_api::catalogue();
    let mut ops: BTreeMap<(String, String, String), Arc<dyn ErasedOp>> = BTreeMap::new();
    for op in &catalogue {
        assert!(
            ops.insert(op_key(op.as_ref()), op.clone()).is_none(),
            "the catalogue has {} twice",
            op.spec().id()
        );
    }
    let rows_by_key: BTreeMap<_, _> = rows.iter().map(|r| (r.key(), r)).collect();
    // How many rows share a tool name: a shared name cannot be the operationId of each.
    let mut tool_uses: BTreeMap<&str, usize> = BTreeMap::new();
    for r in &rows {
        if let Some(t) = &r.tool {
            *tool_uses.entry(t.as_str()).or_default() += 1;
        }
    }

    let app = spawn_app().await;
    let doc = get_json(&app.client, "/openapi.json").await;
    let mut tools_by_key: BTreeMap<String, BTreeMap<String, Value>> = BTreeMap::new();

    let mut problems: Vec<String> = Vec::new();
    let mut missing: Vec<&Row> = Vec::new();
    let mut implemented = 0;
    for row in &rows {
        let Some(op) = ops.get(&row.key()) else {
            missing.push(row);
            continue;
        };
        implemented += 1;
        let spec = op.spec();
        let id = row.describe();
        let mut check = |ok: bool, what: String| {
            if !ok {
                problems.push(format!("{id}: {what}"));
            }
        };

        // The catalogue.
        check(
            spec.access.as_str() == row.scope,
            format!(
                "catalogue scope {:?}, endpoints.tsv {:?}",
                spec.access.as_str(),
                row.scope
            ),
        );
        check(
            spec.tool == row.tool.as_deref(),
            format!(
                "catalogue tool {:?}, endpoints.tsv {:?}",
                spec.tool, row.tool
            ),
        );
        check(
            spec.idempotent == row.idempotent,
            format!(
                "catalogue idempotent {}, endpoints.tsv idempotency_key {}",
                spec.idempotent, row.idempotent
            ),
        );
        check(
            spec.request_id == row.request_id,
            format!(
                "catalogue request_id {}, endpoints.tsv mcp_request_id {}",
                spec.request_id, row.request_id
            ),
        );
        check(
            spec.full_path() == row.full_path(),
            format!("full path {} != {}", spec.full_path(), row.full_path()),
        );

        // The OpenAPI document.
        let method = row.method.to_ascii_lowercase();
        let Some(o) = doc["paths"]
            .get(row.full_path())
            .and_then(|p| p.get(&method))
        else {
            check(
                false,
                format!("/openapi.json has no {method} {}", row.full_path()),
            );
            continue;
        };
        let x_tool = o.get("x-mcp-tool").cloned().unwrap_or(Value::Null);
        check(
            x_tool == json!(row.tool),
            format!("x-mcp-tool {x_tool}, expected {:?}", row.tool),
        );
        let operation_id = o["operationId"].as_str().unwrap_or_default();
        match &row.tool {
            Some(tool) if tool_uses[tool.as_str()] == 1 => check(
                operation_id == tool,
                format!("operationId {operation_id:?}, expected the tool {tool:?}"),
            ),
            Some(tool) => check(
                operation_id.contains(tool.as_str()),
                format!("operationId {operation_id:?} does not name the shared tool {tool:?}"),
            ),
            None => check(!operation_id.is_empty(), "no operationId".into()),
        }
        check(
            o["x-scope"] == json!(row.scope),
            format!("x-scope {}, expected {:?}", o["x-scope"], row.scope),
        );
        check(
            o["x-idempotent"] == json!(row.idempotent),
            format!(
                "x-idempotent {}, expected {}",
                o["x-idempotent"], row.idempotent
            ),
        );
        let responses = o["responses"].as_object().cloned().unwrap_or_default();
        let success: Vec<(&String, &Value)> = responses
            .iter()
            .filter(|(code, _)| code.starts_with('2'))
            .collect();
        check(!success.is_empty(), "no 2xx response".into());
        for (code, response) in &success {
            check(
                json_schema(&doc, response).is_some(),
                format!("response {code} has no application/json schema (or its $ref is dangling)"),
            );
        }
        let takes_body = fleetdesk_api::describe::describe(op.as_ref())
            .body
            .is_some();
        if spec.access == fleetdesk_api::Access::Token {
            // The upload PUTs take the raw file, described as an octet stream.
            let raw = &o["requestBody"]["content"]["application/octet-stream"]["schema"];
            check(
                raw["contentMediaType"] == "application/octet-stream",
                "a token upload must describe an application/octet-stream body".into(),
            );
            check(
                o["security"] == json!([]),
                "a token upload takes no key: security must be []".into(),
            );
        } else if matches!(spec.method, HttpMethod::Post | HttpMethod::Put) && takes_body {
            let body = o.get("requestBody");
            check(body.is_some(), "takes a body but has no requestBody".into());
            if let Some(body) = body {
                check(
                    json_schema(&doc, body).is_some(),
                    "requestBody has no application/json schema (or its $ref is dangling)".into(),
                );
            }
        } else {
            check(
                o.get("requestBody").is_none(),
                "has a requestBody but takes no body".into(),
            );
        }
        let params = o["parameters"].as_array().cloned().unwrap_or_default();
        let has_idem_header = params.iter().any(|p| {
            p["in"] == "header"
                && p["name"]
                    .as_str()
                    .is_some_and(|n| n.eq_ignore_ascii_case("Idempotency-Key"))
        });
        check(
            has_idem_header == row.idempotent,
            format!(
                "Idempotency-Key header parameter present {has_idem_header}, idempotency_key {}",
                row.idempotent
            ),
        );
        let path_params: BTreeSet<String> = params
            .iter()
            .filter(|p| p["in"] == "path")
            .filter_map(|p| p["name"].as_str().map(str::to_owned))
            .collect();
        let expected: BTreeSet<String> =
            spec.path_params().into_iter().map(str::to_owned).collect();
        check(
            path_params == expected,
            format!("path parameters {path_params:?}, the path has {expected:?}"),
        );

        // MCP tools/list, with a key of the tenant that has the access.
        if let Some(tool) = &row.tool {
            let (who, key) = key_for_scope(&app, row);
            if !tools_by_key.contains_key(&who) {
                let listed = mcp_tools(&app.client, &key).await;
                tools_by_key.insert(who.clone(), listed);
            }
            match tools_by_key[&who].get(tool) {
                None => problems.push(format!("{id}: tools/list for {who} lacks {tool}")),
                Some(t) => {
                    let has_request_id = t["inputSchema"]["properties"].get("request_id").is_some();
                    if has_request_id != row.request_id {
                        problems.push(format!(
                            "{id}: the tool's inputSchema has request_id {has_request_id}, mcp_request_id {}",
                            row.request_id
                        ));
                    }
                }
            }
        }
    }

    // The reverse: nothing served that the table does not list.
    for (key, op) in &ops {
        if !rows_by_key.contains_key(key) {
            problems.push(format!(
                "the catalogue serves {} which endpoints.tsv does not list",
                op.spec().id()
            ));
        }
    }
    let served: BTreeSet<(String, String)> = doc["paths"]
        .as_object()
        .expect("paths")
        .iter()
        .flat_map(|(p, item)| {
            item.as_object()
                .into_iter()
                .flat_map(|m| m.keys())
                .map(move |m| (p.clone(), m.to_ascii_uppercase()))
        })
        .collect();
    let listed: BTreeSet<(String, String)> = ops
        .values()
        .map(|op| (op.spec().full_path(), op.spec().method.as_str().to_owned()))
        .collect();
    for extra in served.difference(&listed) {
        problems.push(format!(
            "/openapi.json describes {} {} which the catalogue does not serve",
            extra.1, extra.0
        ));
    }

    for row in &missing {
        println!("missing: {}", row.describe());
    }
    println!("implemented {implemented} of {}", rows.len());
    assert!(
        implemented > 0,
        "the catalogue implements no row of endpoints.tsv"
    );
    assert!(
        problems.is_empty(),
        "{} disagreement(s) with endpoints.tsv:\n{}",
        problems.len(),
        problems.join("\n")
    );
    app.stop().await;
}

/// Every `$ref` under `value`, with the JSON path where it sits.
fn refs(value: &Value, at: String, out: &mut Vec<(String, String)>) {
    match value {
        Value::Object(map) => {
            for (k, v) in map {
                if k == "$ref" {
                    if let Value::String(r) = v {
                        out.push((at.clone(), r.clone()));
                    } else {
                        out.push((at.clone(), v.to_string()));
                    }
                } else {
                    refs(v, format!("{at}/{k}"), out);
                }
            }
        }
        Value::Array(items) => {
            for (i, v) in items.iter().enumerate() {
                refs(v, format!("{at}/{i}"), out);
            }
        }
        _ => {}
    }
}

const HTTP_METHODS: [&str; 8] = [
    "get", "put", "post", "delete", "options", "head", "patch", "trace",
];

/// Checks one served document; returns the problems found.
fn check_document(name: &str, doc: &Value) -> Vec<String> {
    let mut problems = Vec::new();
    let mut check = |ok: bool, what: String| {
        if !ok {
            problems.push(format!("{name}: {what}"));
        }
    };
    check(
        doc["openapi"] == "3.1.0",
        format!("openapi is {}", doc["openapi"]),
    );
    // MAJOR.MINOR.PATCH without leading zeros: a version semver and PEP 440 both read, so a
    // generated client installs under it as it is.
    let release = doc["info"]["version"].as_str().is_some_and(|v| {
        let parts: Vec<&str> = v.split('.').collect();
        parts.len() == 3
            && parts.iter().all(|p| {
                !p.is_empty()
                    && p.bytes().all(|b| b.is_ascii_digit())
                    && (*p == "0" || !p.starts_with('0'))
            })
    });
    check(
        release,
        format!(
            "info.version {} is not MAJOR.MINOR.PATCH",
            doc["info"]["version"]
        ),
    );
    check(
        doc["info"]["version"] == fleetdesk_api::API_VERSION,
        "info.version is not API_VERSION".into(),
    );
    check(
        doc["info"]["title"].as_str().is_some_and(|t| !t.is_empty()),
        "no info.title".into(),
    );

    let mut all_refs = Vec::new();
    refs(doc, String::new(), &mut all_refs);
    check(!all_refs.is_empty(), "no $ref at all".into());
    for (at, r) in &all_refs {
        check(
            resolve(doc, r).is_some(),
            format!("$ref {r} at {at} does not resolve to a components.schemas entry"),
        );
    }

    let schemes = doc["components"]["securitySchemes"]
        .as_object()
        .cloned()
        .unwrap_or_default();
    let error_body = resolve(doc, "#/components/schemas/ErrorBody");
    check(error_body.is_some(), "no ErrorBody schema".into());
    if let Some(e) = error_body {
        for field in ["code", "message", "request_id"] {
            check(
                e["properties"].get(field).is_some(),
                format!("ErrorBody lacks {field}"),
            );
        }
    }

    let mut operation_ids: BTreeMap<String, Vec<String>> = BTreeMap::new();
    let paths = doc["paths"].as_object().cloned().unwrap_or_default();
    check(!paths.is_empty(), "no paths".into());
    for (path, item) in &paths {
        let item = item.as_object().cloned().unwrap_or_default();
        for (method, o) in &item {
            let here = format!("{} {path}", method.to_ascii_uppercase());
            check(
                HTTP_METHODS.contains(&method.as_str()),
                format!("{here}: {method} is not an HTTP method"),
            );
            match o["operationId"].as_str() {
                Some(id) if !id.is_empty() => operation_ids
                    .entry(id.to_owned())
                    .or_default()
                    .push(here.clone()),
                _ => check(false, format!("{here}: no operationId")),
            }
            let responses = o["responses"].as_object().cloned().unwrap_or_default();
            check(!responses.is_empty(), format!("{here}: no responses"));
            let client_errors: Vec<_> = responses
                .iter()
                .filter(|(code, _)| code.starts_with('4'))
                .collect();
            check(
                responses.contains_key("401") || o["security"] == json!([]),
                format!("{here}: a keyed operation without a 401 response"),
            );
            check(
                !client_errors.is_empty(),
                format!("{here}: no 4xx response"),
            );
            for (code, response) in client_errors {
                let schema_ref = &response["content"]["application/json"]["schema"]["$ref"];
                check(
                    schema_ref == "#/components/schemas/ErrorBody",
                    format!(
                        "{here}: response {code} is not an ErrorBody (schema $ref {schema_ref})"
                    ),
                );
            }
            for requirement in o["security"].as_array().cloned().unwrap_or_default() {
                for scheme in requirement.as_object().cloned().unwrap_or_default().keys() {
                    check(
                        schemes.contains_key(scheme),
                        format!(
                            "{here}: security scheme {scheme} is not in components.securitySchemes"
                        ),
                    );
                }
            }
        }
    }
    for (id, places) in &operation_ids {
        check(
            places.len() == 1,
            format!("operationId {id} is used by {}", places.join(", ")),
        );
    }
    problems
}

/// Validates with openapi-spec-validator (PyPI) as OpenAPI 3.1.
fn validate_with_python(name: &str, doc: &Value) -> Option<String> {
    let probe = std::process::Command::new(fleetdesk_tests::peers::python())
        .args(["-c", "import openapi_spec_validator"])
        .output();
    match probe {
        Ok(out) if out.status.success() => {}
        Ok(out) => panic!(
            "the OpenAPI validator is missing: pip install openapi-spec-validator ({})",
            String::from_utf8_lossy(&out.stderr).trim()
        ),
        Err(e) => panic!(
            "python3 is needed to validate the OpenAPI documents ({e}): install python3, then \
             pip install openapi-spec-validator"
        ),
    }
    let file = std::env::temp_dir().join(format!(
        "fleetdesk-{}-{}-{name}",
        std::process::id(),
        uuid::Uuid::new_v4().simple()
    ));
    std::fs::write(&file, serde_json::to_vec_pretty(doc).expect("json"))
        .expect("write the document");
    let out = std::process::Command::new(fleetdesk_tests::peers::python())
        .args(["-m", "openapi_spec_validator", "--schema", "3.1"])
        .arg(&file)
        .output()
        .expect("run openapi_spec_validator");
    let _ = std::fs::remove_file(&file);
    (!out.status.success()).then(|| {
        format!(
            "{name} is not valid OpenAPI 3.1:\n{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        )
    })
}

#[tokio::test(flavor = "multi_thread")]
async fn the_openapi_documents_are_complete_and_consistent() {
    let app = spawn_app().await;
    let all = get_json(&app.client, "/openapi.json").await;
    let agent = get_json(&app.client, "/openapi-agent.json").await;

    let mut problems = check_document("/openapi.json", &all);
    problems.extend(check_document("/openapi-agent.json", &agent));

    // The agent document holds exactly the agent part of the merged one.
    let agent_paths: BTreeSet<String> = agent["paths"]
        .as_object()
        .map(|p| p.keys().cloned().collect())
        .unwrap_or_default();
    for p in &agent_paths {
        if !p.starts_with("/api/agent/v1/") {
            problems.push(format!(
                "/openapi-agent.json describes {p}, not an Agent API path"
            ));
        }
    }
    let merged_agent_paths: BTreeSet<String> = all["paths"]
        .as_object()
        .map(|p| {
            p.keys()
                .filter(|k| k.starts_with("/api/agent/v1/"))
                .cloned()
                .collect()
        })
        .unwrap_or_default();
    if agent_paths != merged_agent_paths {
        problems.push(format!(
            "the Agent API paths differ between the documents: agent-only {agent_paths:?}, merged {merged_agent_paths:?}"
        ));
    }
    for p in agent_paths.intersection(&merged_agent_paths) {
        if agent["paths"][p] != all["paths"][p] {
            problems.push(format!("{p} is described differently in the two documents"));
        }
    }
    for p in all["paths"]
        .as_object()
        .map(|m| m.keys().cloned().collect::<Vec<_>>())
        .unwrap_or_default()
    {
        if !p.starts_with("/api/agent/v1/") && !p.starts_with("/api/user/v1/") {
            problems.push(format!("/openapi.json describes {p}, outside both APIs"));
        }
    }
    // Every operation of the catalogue is in the merged document.
    for op in fleetdesk_api::catalogue() {
        let s = op.spec();
        let method = s.method.as_str().to_ascii_lowercase();
        if all["paths"]
            .get(s.full_path())
            .and_then(|p| p.get(&method))
            .is_none()
        {
            problems.push(format!("/openapi.json lacks {}", s.id()));
        }
    }

    // The documents need no key and are the same on every request.
    let again = get_json(&app.client, "/openapi.json").await;
    if again != all {
        problems.push("/openapi.json changed between two requests".into());
    }

    for (name, doc) in [("openapi.json", &all), ("openapi-agent.json", &agent)] {
        if let Some(p) = validate_with_python(name, doc) {
            problems.push(p);
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
    app.stop().await;
}

#[test]
fn the_endpoint_table_reads_and_covers_both_apis() {
    let rows = spec_rows();
    assert!(rows.iter().any(|r| r.api == "agent"));
    assert!(rows.iter().any(|r| r.api == "personal"));
    // Every tool that takes request_id is idempotent: request_id plays the Idempotency-Key.
    for r in &rows {
        assert!(
            !r.request_id || r.idempotent,
            "endpoints.tsv line {}: {} takes request_id without an Idempotency-Key",
            r.line,
            r.describe()
        );
        assert!(
            !r.request_id || r.tool.is_some(),
            "endpoints.tsv line {}: request_id without a tool",
            r.line
        );
    }
}

#[test]
fn the_document_checks_catch_a_broken_document() {
    let ops = fleetdesk_api::catalogue();
    let good = fleetdesk_http::openapi_all(&ops);
    assert!(
        check_document("good", &good).is_empty(),
        "{:?}",
        check_document("good", &good)
    );
    let mut bad = good.clone();
    bad["openapi"] = json!("3.0.3");
    bad["info"]["version"] = json!("2026-10-07");
    let (path, item) = good["paths"]
        .as_object()
        .and_then(|p| p.iter().next())
        .map(|(p, i)| (p.clone(), i.clone()))
        .expect("a path");
    let method = item
        .as_object()
        .and_then(|m| m.keys().next().cloned())
        .expect("a method");
    let o = &mut bad["paths"][&path][&method];
    o["responses"]["401"]["content"]["application/json"]["schema"]["$ref"] =
        json!("#/components/schemas/Nowhere");
    // A second path with the same operationId.
    let copy = bad["paths"][&path].clone();
    bad["paths"]["/api/agent/v1/copy"] = copy;
    let problems = check_document("bad", &bad).join("\n");
    assert!(problems.contains("openapi is"), "{problems}");
    assert!(problems.contains("is not MAJOR.MINOR.PATCH"), "{problems}");
    assert!(problems.contains("Nowhere"), "{problems}");
    assert!(problems.contains("is not an ErrorBody"), "{problems}");
    assert!(problems.contains("is used by"), "{problems}");
    // The external validator rejects a structurally broken document.
    let mut invalid = good.clone();
    invalid.as_object_mut().expect("object").remove("info");
    assert!(validate_with_python("invalid.json", &invalid).is_some());
}
