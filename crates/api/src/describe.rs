//! Machine-readable descriptions generated from the catalogue: JSON Schemas of inputs and
//! outputs for MCP tools, and the pieces of the OpenAPI document.

use crate::fields::INLINE;
use crate::op::{ErasedOp, OpDoc};
use serde_json::{Map, Value, json};
use utoipa::openapi::{RefOr, Schema};

/// Component schemas by name, as collected from the types.
pub type Components = Map<String, Value>;

pub fn to_json(schema: &RefOr<Schema>) -> Value {
    serde_json::to_value(schema).unwrap_or(Value::Null)
}

/// Adds collected `(name, schema)` pairs to the components.
pub fn collect(components: &mut Components, deps: &[(String, RefOr<Schema>)]) {
    for (name, schema) in deps {
        components
            .entry(name.clone())
            .or_insert_with(|| to_json(schema));
    }
}

/// Replaces `{"$ref": "#/components/schemas/X"}` by X itself, recursively (a type that refers
/// to itself keeps its reference after the first level).
pub fn inline_refs(value: &Value, components: &Components) -> Value {
    inline(value, components, &mut Vec::new())
}

fn inline(value: &Value, components: &Components, seen: &mut Vec<String>) -> Value {
    match value {
        Value::Object(map) => {
            if let Some(Value::String(r)) = map.get("$ref")
                && let Some(name) = r.strip_prefix("#/components/schemas/")
                && !seen.iter().any(|s| s == name)
                && let Some(target) = components.get(name)
            {
                seen.push(name.to_owned());
                let mut out = inline(target, components, seen);
                seen.pop();
                // Keep sibling keywords (a description next to the reference).
                if let Value::Object(o) = &mut out {
                    for (k, v) in map {
                        if k != "$ref" {
                            o.insert(k.clone(), inline(v, components, seen));
                        }
                    }
                }
                return out;
            }
            Value::Object(
                map.iter()
                    .map(|(k, v)| (k.clone(), inline(v, components, seen)))
                    .collect(),
            )
        }
        Value::Array(items) => {
            Value::Array(items.iter().map(|v| inline(v, components, seen)).collect())
        }
        other => other.clone(),
    }
}

/// The properties and required names of an object schema (after inlining).
pub fn object_parts(schema: &Value) -> (Map<String, Value>, Vec<String>) {
    let props = schema
        .get("properties")
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or_default();
    let required = schema
        .get("required")
        .and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(|v| v.as_str().map(str::to_owned))
                .collect()
        })
        .unwrap_or_default();
    (props, required)
}

/// Everything about one operation's schemas, resolved.
pub struct Described {
    pub path: Option<Value>,
    pub query: Option<Value>,
    pub body: Option<(String, Value)>,
    pub output_name: String,
    pub output: Value,
    pub components: Components,
}

/// Text never holds NUL (no text column stores it; the parser refuses it up front).
pub const NO_NUL_PATTERN: &str = "^[^\\x00]*$";

/// Refines an input schema with what its types cannot say: the rules its operation's module
/// declares for the component (conditional requirements, merged as `allOf`), and what holds
/// for every input: text holds no NUL, and an integer stays within its Rust type.
pub fn refine_input(name: Option<&str>, schema: &mut Value) {
    refine_node(schema);
    if let Some(Value::Object(rules)) = name.and_then(crate::ops::schema_rules)
        && let Value::Object(target) = schema
    {
        for (key, value) in rules {
            match (key.as_str(), target.get_mut(&key), value) {
                ("allOf", Some(Value::Array(existing)), Value::Array(more)) => {
                    existing.extend(more)
                }
                // A property the rules spell out replaces the derived one.
                ("properties", Some(Value::Object(existing)), Value::Object(more)) => {
                    existing.extend(more)
                }
                (_, _, value) => {
                    target.insert(key, value);
                }
            }
        }
    }
}

fn refine_node(node: &mut Value) {
    let Value::Object(map) = node else { return };
    let types: Vec<String> = match map.get("type") {
        Some(Value::String(t)) => vec![t.clone()],
        Some(Value::Array(ts)) => ts
            .iter()
            .filter_map(|t| t.as_str().map(str::to_owned))
            .collect(),
        _ => Vec::new(),
    };
    let plain = !map.contains_key("enum") && !map.contains_key("const");
    if plain
        && types.iter().any(|t| t == "string")
        && !map.contains_key("pattern")
        && !map.contains_key("format")
    {
        map.insert("pattern".into(), Value::String(NO_NUL_PATTERN.into()));
    }
    if plain && types.iter().any(|t| t == "integer") {
        let bounds = match map.get("format").and_then(Value::as_str) {
            Some("int32") => Some((json!(i32::MIN), json!(i32::MAX))),
            Some("uint32") => Some((json!(0), json!(u32::MAX))),
            Some("uint64") => Some((json!(0), json!(u64::MAX))),
            Some("int64") | None => Some((json!(i64::MIN), json!(i64::MAX))),
            _ => None,
        };
        if let Some((min, max)) = bounds {
            map.entry("minimum").or_insert(min);
            map.entry("maximum").or_insert(max);
        }
    }
    for key in [
        "items",
        "additionalProperties",
        "propertyNames",
        "contains",
        "not",
        "if",
        "then",
        "else",
    ] {
        if let Some(child) = map.get_mut(key) {
            refine_node(child);
        }
    }
    for key in ["oneOf", "anyOf", "allOf", "prefixItems"] {
        if let Some(Value::Array(items)) = map.get_mut(key) {
            items.iter_mut().for_each(refine_node);
        }
    }
    if let Some(Value::Object(props)) = map.get_mut("properties") {
        props.values_mut().for_each(refine_node);
    }
}

pub fn describe(op: &dyn ErasedOp) -> Described {
    let OpDoc {
        input,
        output,
        output_name,
        output_components,
    } = op.doc();
    let mut components = Components::new();
    collect(&mut components, &output_components);
    let mut inputs = Components::new();
    let mut part = |(s, deps): crate::input::SchemaWithDeps| {
        collect(&mut inputs, &deps);
        to_json(&s)
    };
    let mut path = input.path.map(&mut part);
    let mut query = input.query.map(&mut part);
    let mut body = input.body.map(|(b, name)| (name.to_string(), part(b)));
    let mut output = to_json(&output);
    // Plain values (bounded text, a UTC time) are written where they are used.
    let marked: Components = components
        .iter()
        .chain(inputs.iter())
        .filter(|(_, s)| s.get(INLINE).is_some())
        .map(|(name, s)| (name.clone(), s.clone()))
        .collect();
    components.retain(|name, _| !marked.contains_key(name));
    inputs.retain(|name, _| !marked.contains_key(name));
    for schema in path
        .iter_mut()
        .chain(query.iter_mut())
        .chain(body.iter_mut().map(|(_, b)| b))
        .chain([&mut output])
        .chain(components.values_mut())
        .chain(inputs.values_mut())
    {
        inline_marked(schema, &marked);
    }
    // Input components are refined; one shared with the output takes the refined form (what
    // it adds holds for stored values too).
    for schema in path.iter_mut().chain(query.iter_mut()) {
        refine_input(None, schema);
    }
    if let Some((name, schema)) = &mut body {
        refine_input(Some(name), schema);
    }
    for (name, schema) in inputs.iter_mut() {
        refine_input(Some(name), schema);
    }
    components.extend(inputs);
    Described {
        path,
        query,
        body,
        output_name: output_name.to_string(),
        output,
        components,
    }
}

/// The marked component a `$ref` names.
fn marked_target<'a>(node: &Map<String, Value>, marked: &'a Components) -> Option<&'a Value> {
    let name = node
        .get("$ref")?
        .as_str()?
        .strip_prefix("#/components/schemas/")?;
    marked.get(name)
}

/// Replaces references to marked plain values by their schema: `{"$ref": X}` becomes X, and
/// `{"oneOf": [{"$ref": X}, {"type": "null"}]}` (an optional field) becomes X with `null`
/// among its types, the way an optional field of a plain type reads. Keywords next to the
/// reference (a description) stay.
fn inline_marked(value: &mut Value, marked: &Components) {
    match value {
        Value::Object(map) => {
            let direct = marked_target(map, marked).map(|t| (t, None));
            let optional = || {
                let Some(Value::Array(items)) = map.get("oneOf") else {
                    return None;
                };
                let [a, b] = items.as_slice() else {
                    return None;
                };
                let null = json!({"type": "null"});
                let item = match (a == &null, b == &null) {
                    (false, true) => a,
                    (true, false) => b,
                    _ => return None,
                };
                marked_target(item.as_object()?, marked).map(|t| (t, Some(item)))
            };
            if let Some((target, nullable)) = direct.or_else(optional) {
                let mut out = target.clone();
                if let Value::Object(o) = &mut out {
                    o.remove(INLINE);
                    if nullable.is_some()
                        && let Some(Value::String(t)) = o.get("type")
                    {
                        let t = json!([t, "null"]);
                        o.insert("type".into(), t);
                    }
                    // Keywords next to the reference, in the field or in its non-null branch.
                    let siblings = map
                        .iter()
                        .chain(nullable.and_then(Value::as_object).into_iter().flatten());
                    for (k, v) in siblings {
                        if k != "$ref" && k != "oneOf" {
                            o.insert(k.clone(), v.clone());
                        }
                    }
                }
                *value = out;
                return;
            }
            map.values_mut().for_each(|v| inline_marked(v, marked));
        }
        Value::Array(items) => items.iter_mut().for_each(|v| inline_marked(v, marked)),
        _ => {}
    }
}

/// The MCP `inputSchema`: path, query and body properties merged into one object, plus
/// `request_id` where the tool takes it.
pub fn tool_input_schema(op: &dyn ErasedOp) -> Value {
    let d = describe(op);
    let mut properties = Map::new();
    let mut required: Vec<String> = Vec::new();
    for part in [
        d.path.as_ref(),
        d.query.as_ref(),
        d.body.as_ref().map(|(_, s)| s),
    ]
    .into_iter()
    .flatten()
    {
        let (props, req) = object_parts(&inline_refs(part, &d.components));
        properties.extend(props);
        required.extend(req);
    }
    // A path parameter the tool names otherwise (`{id}` as `source_id`).
    if let Some((param, arg)) = op.spec().tool_path_arg {
        if let Some(schema) = properties.remove(param) {
            properties.insert(arg.into(), schema);
        }
        for r in required.iter_mut().filter(|r| *r == param) {
            *r = arg.to_owned();
        }
    }
    if op.spec().request_id {
        properties.insert(crate::pipeline::REQUEST_ID.into(), request_id_schema());
    }
    // Unknown arguments are refused (400 naming them), as unknown body fields are.
    let mut schema =
        json!({"type": "object", "properties": properties, "additionalProperties": false});
    if !required.is_empty() {
        schema["required"] = json!(required);
    }
    // The body's own conditions (if/then, anyOf: which fields a kind needs, exactly one of
    // two) stay in the REST description and the tool's description, not at the root of the
    // inputSchema: MCP up to 2025-11-25 allows only type, properties and required there, and
    // Claude's API refuses a root allOf, anyOf or oneOf (Claude Code drops such tools). The
    // server enforces them all the same (-32602 naming the field).
    schema
}

/// The rules between a tool's arguments that its `inputSchema` leaves out (the body's `allOf`,
/// `anyOf`, `oneOf`, `if`/`then`/`else`, references inlined), for its description; `None` when
/// the body has none.
pub fn tool_input_rules(op: &dyn ErasedOp) -> Option<Value> {
    let d = describe(op);
    let mut rules: Map<String, Value> = match &d.body {
        Some((_, body)) => {
            let body = inline_refs(body, &d.components);
            ["allOf", "anyOf", "oneOf", "if", "then", "else"]
                .into_iter()
                .filter_map(|key| Some((key.to_owned(), body.get(key)?.clone())))
                .collect()
        }
        None => Map::new(),
    };
    if let Some(Value::Object(own)) = op.spec().tool.and_then(crate::ops::tool_rules) {
        if rules.is_empty() {
            rules = own;
        } else {
            rules = json!({"allOf": [rules, own]})
                .as_object()
                .cloned()
                .unwrap_or_default();
        }
    }
    (!rules.is_empty()).then_some(Value::Object(rules))
}

/// What the root of a tool's `inputSchema` may hold: one flat object.
pub const TOOL_INPUT_ROOT: [&str; 4] = ["type", "properties", "required", "additionalProperties"];

/// The `request_id` argument (or body field): the Idempotency-Key by another name.
fn request_id_schema() -> Value {
    json!({"type": "string", "minLength": 1, "maxLength": 200, "pattern": IDEMPOTENCY_KEY_PATTERN,
           "description": "Plays the role of the Idempotency-Key: resending the same content with the same request_id within 24 hours returns the first result."})
}

/// A REST body's schema with what a client may repeat in it
/// ([`crate::pipeline::take_body_echoes`]): each path parameter, equal to the path's, and
/// `request_id` where the tool takes one, equal to the Idempotency-Key header when both are
/// sent. Both optional; the body stays closed to anything else.
pub fn with_body_echoes(op: &dyn ErasedOp, described: &Described, body: &mut Value) {
    let Some(Value::Object(props)) = body.get_mut("properties") else {
        return;
    };
    if let Some(path) = &described.path {
        let (params, _) = object_parts(&inline_refs(path, &described.components));
        for (name, mut schema) in params {
            if let Value::Object(s) = &mut schema {
                s.insert(
                    "description".into(),
                    json!(format!(
                        "Optional: the path's `{name}` again, as the specification writes the body. Another value is 400 naming `{name}`."
                    )),
                );
            }
            props.entry(name).or_insert(schema);
        }
    }
    if op.spec().request_id {
        let mut schema = request_id_schema();
        schema["description"] = json!(
            "Optional: plays the role of the Idempotency-Key header (the MCP tool's `request_id`). Sent with the header, both must be equal (400 naming `request_id` otherwise)."
        );
        props.entry(crate::pipeline::REQUEST_ID).or_insert(schema);
    }
}

/// An Idempotency-Key (or MCP `request_id`): 1-200 visible ASCII characters.
pub const IDEMPOTENCY_KEY_PATTERN: &str = "^[\\x21-\\x7e]{1,200}$";

/// The MCP `outputSchema`: the REST response body.
pub fn tool_output_schema(op: &dyn ErasedOp) -> Value {
    let d = describe(op);
    inline_refs(&d.output, &d.components)
}

/// How to read each query parameter from a URL: its JSON type.
pub fn query_kinds(op: &dyn ErasedOp) -> Map<String, Value> {
    let d = describe(op);
    let Some(q) = d.query else { return Map::new() };
    let (props, _) = object_parts(&inline_refs(&q, &d.components));
    props
        .into_iter()
        .map(|(name, schema)| {
            let ty = match schema.get("type") {
                Some(Value::String(t)) => t.clone(),
                Some(Value::Array(ts)) => ts
                    .iter()
                    .filter_map(Value::as_str)
                    .find(|t| *t != "null")
                    .unwrap_or("string")
                    .to_owned(),
                _ => "string".to_owned(),
            };
            (name, Value::String(ty))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn inlines_nested_references() {
        let mut c = Components::new();
        c.insert(
            "A".into(),
            json!({"type": "object", "properties": {"b": {"$ref": "#/components/schemas/B"}}}),
        );
        c.insert("B".into(), json!({"type": "string", "enum": ["x"]}));
        let v = inline_refs(&json!({"$ref": "#/components/schemas/A"}), &c);
        assert_eq!(v["properties"]["b"]["enum"][0], "x");
    }

    #[test]
    fn a_self_reference_stops_after_one_level() {
        let mut c = Components::new();
        c.insert(
            "N".into(),
            json!({"type": "object", "properties": {"next": {"$ref": "#/components/schemas/N"}}}),
        );
        let v = inline_refs(&json!({"$ref": "#/components/schemas/N"}), &c);
        assert_eq!(v["properties"]["next"]["$ref"], "#/components/schemas/N");
    }

    #[test]
    fn no_two_types_share_a_component_name() {
        let mut seen: std::collections::BTreeMap<String, (String, Value)> = Default::default();
        for op in crate::catalogue() {
            let d = describe(op.as_ref());
            let mut all = d.components.clone();
            all.insert(d.output_name.clone(), d.output.clone());
            if let Some((name, body)) = &d.body {
                // As the OpenAPI description holds it: with the echoes of the path and
                // request_id, so two operations sharing a body must echo alike.
                let mut body = body.clone();
                with_body_echoes(op.as_ref(), &d, &mut body);
                all.insert(name.clone(), body);
            }
            for (name, schema) in all {
                match seen.get(&name) {
                    Some((first, earlier)) => assert_eq!(
                        earlier,
                        &schema,
                        "component {name} differs between {first} and {}",
                        op.spec().id()
                    ),
                    None => {
                        seen.insert(name, (op.spec().id(), schema));
                    }
                }
            }
        }
    }

    /// Every tool's inputSchema is one flat object at its root (no allOf, anyOf, oneOf,
    /// if/then/else there), so every MCP client and model API takes it.
    #[test]
    fn every_tool_input_schema_is_a_flat_object_at_its_root() {
        for op in crate::catalogue() {
            if op.spec().tool.is_none() {
                continue;
            }
            let schema = tool_input_schema(op.as_ref());
            assert_eq!(schema["type"], "object", "{}", op.spec().id());
            for key in schema.as_object().unwrap().keys() {
                assert!(
                    TOOL_INPUT_ROOT.contains(&key.as_str()),
                    "{}: `{key}` at the root of its inputSchema",
                    op.spec().id()
                );
            }
        }
    }

    /// A tool's body as its schema states it, references inlined.
    fn body_of(tool: &str) -> Value {
        let op = crate::catalogue()
            .into_iter()
            .find(|op| op.spec().tool == Some(tool))
            .unwrap_or_else(|| panic!("no tool {tool}"));
        let d = describe(op.as_ref());
        let (_, body) = d.body.as_ref().expect("a body");
        inline_refs(body, &d.components)
    }

    /// The schema states the rules the server enforces where JSON Schema can: the roles each
    /// relay accepts, amounts in whole cents.
    #[test]
    fn relays_state_the_roles_they_accept_and_amounts_their_cents() {
        for (tool, roles) in [
            ("relay_post_status", json!(["agency", "client", "admin"])),
            ("relay_issue", json!(["agency", "admin"])),
            ("relay_task", json!(["agency", "admin"])),
            ("ad_research_approve", json!(["agency", "admin"])),
            ("delete_stocked_post", json!(["agency", "admin"])),
        ] {
            let body = body_of(tool);
            let on_behalf_of = &body["properties"]["on_behalf_of"];
            assert_eq!(on_behalf_of["properties"]["role"]["enum"], roles, "{tool}");
            assert_eq!(on_behalf_of["additionalProperties"], json!(false), "{tool}");
            assert_eq!(on_behalf_of["required"], json!(["name", "role"]), "{tool}");
        }
        // A rule between query arguments is the tool's own.
        let get = crate::catalogue()
            .into_iter()
            .find(|op| op.spec().tool == Some("wiki_get"))
            .expect("wiki_get");
        assert_eq!(
            tool_input_rules(get.as_ref()),
            Some(json!({"oneOf": [{"required": ["id"]}, {"required": ["title"]}]}))
        );
        let amount = &body_of("propose_ad_change")["properties"]["amount"];
        assert_eq!(amount["multipleOf"], json!(0.01), "{amount}");
    }

    /// The pipeline takes a path parameter's name and `request_id` out of a body before the
    /// operation reads it, so no body may have a field of its own by either name.
    #[test]
    fn no_body_has_a_field_named_like_an_echo() {
        for op in crate::catalogue() {
            let d = describe(op.as_ref());
            let Some((name, body)) = &d.body else {
                continue;
            };
            let (props, _) = object_parts(&inline_refs(body, &d.components));
            let mut echoes = op.spec().path_params();
            if op.spec().request_id {
                echoes.push(crate::pipeline::REQUEST_ID);
            }
            for echo in echoes {
                assert!(
                    !props.contains_key(echo),
                    "{}: body {name} has a field `{echo}`",
                    op.spec().id()
                );
            }
        }
    }

    /// Every object of every input refuses unknown fields, as the parser does.
    #[test]
    fn every_input_object_refuses_unknown_fields() {
        fn objects(v: &Value, at: &str, out: &mut Vec<String>) {
            match v {
                Value::Object(m) => {
                    if m.contains_key("properties")
                        && m.get("additionalProperties") != Some(&json!(false))
                    {
                        out.push(at.to_owned());
                    }
                    for (k, child) in m {
                        // Conditions name properties of the object they sit on.
                        if !matches!(
                            k.as_str(),
                            "if" | "then" | "else" | "allOf" | "anyOf" | "not"
                        ) {
                            objects(child, &format!("{at}/{k}"), out);
                        }
                    }
                }
                Value::Array(items) => {
                    for (i, item) in items.iter().enumerate() {
                        objects(item, &format!("{at}/{i}"), out);
                    }
                }
                _ => {}
            }
        }
        let mut open = Vec::new();
        for op in crate::catalogue() {
            let d = describe(op.as_ref());
            if let Some((name, body)) = &d.body {
                let body = inline_refs(body, &d.components);
                objects(&body, &format!("{} {name}", op.spec().id()), &mut open);
            }
            let tool = tool_input_schema(op.as_ref());
            objects(&tool, &format!("{} tool", op.spec().id()), &mut open);
        }
        assert!(open.is_empty(), "open objects: {open:#?}");
    }

    #[test]
    fn input_text_never_admits_nul_and_integers_stay_in_range() {
        let mut schema = json!({"type": "object", "properties": {
            "a": {"type": ["string", "null"]},
            "b": {"type": "string", "format": "uuid"},
            "c": {"type": "integer", "format": "int64", "minimum": 0},
            "d": {"type": "array", "items": {"type": "string", "pattern": "^x$"}},
        }});
        refine_input(None, &mut schema);
        assert_eq!(schema["properties"]["a"]["pattern"], NO_NUL_PATTERN);
        assert!(schema["properties"]["b"].get("pattern").is_none());
        assert_eq!(schema["properties"]["c"]["minimum"], 0);
        assert_eq!(schema["properties"]["c"]["maximum"], i64::MAX);
        assert_eq!(schema["properties"]["d"]["items"]["pattern"], "^x$");
    }

    #[test]
    fn declared_rules_reach_the_body_and_the_tool() {
        let op = crate::catalogue()
            .into_iter()
            .find(|o| o.spec().tool == Some("report_account_state"))
            .expect("report_account_state");
        let d = describe(op.as_ref());
        let (_, body) = d.body.expect("a body");
        assert!(
            body["allOf"][0]["then"]["required"] == json!(["reason"]),
            "{body}"
        );
        // The tool states them beside its flat inputSchema.
        let tool = tool_input_schema(op.as_ref());
        assert!(tool.get("allOf").is_none(), "{tool}");
        assert_eq!(tool["additionalProperties"], false);
        assert_eq!(
            tool_input_rules(op.as_ref()),
            Some(json!({"allOf": body["allOf"]}))
        );
    }

    #[test]
    fn every_tool_has_an_object_input_schema() {
        for op in crate::catalogue() {
            let s = tool_input_schema(op.as_ref());
            assert_eq!(s["type"], "object", "{}", op.spec().id());
            assert!(
                s.to_string().find("#/components").is_none(),
                "{} still has refs: {s}",
                op.spec().id()
            );
        }
    }
}
