//! Machine-readable descriptions generated from the catalogue: JSON Schemas of inputs and
//! outputs for MCP tools, and the pieces of the OpenAPI document.

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

pub fn describe(op: &dyn ErasedOp) -> Described {
    let OpDoc {
        input,
        output,
        output_name,
        output_components,
    } = op.doc();
    let mut components = Components::new();
    collect(&mut components, &output_components);
    let path = input.path.map(|(s, deps)| {
        collect(&mut components, &deps);
        to_json(&s)
    });
    let query = input.query.map(|(s, deps)| {
        collect(&mut components, &deps);
        to_json(&s)
    });
    let body = input.body.map(|((s, deps), name)| {
        collect(&mut components, &deps);
        (name.to_string(), to_json(&s))
    });
    Described {
        path,
        query,
        body,
        output_name: output_name.to_string(),
        output: to_json(&output),
        components,
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
    if op.spec().request_id {
        properties.insert(
            "request_id".into(),
            json!({"type": "string", "minLength": 1, "maxLength": 200, "pattern": "^[\\x21-\\x7e]+$",
                   "description": "Plays the role of the Idempotency-Key: resending the same content with the same request_id within 24 hours returns the first result."}),
        );
    }
    let mut schema = json!({"type": "object", "properties": properties});
    if !required.is_empty() {
        schema["required"] = json!(required);
    }
    schema
}

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
