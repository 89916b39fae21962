//! Turning a call's arguments into typed input, the same way for REST and MCP.
//!
//! A call's arguments are three JSON parts: path parameters, query parameters and the body.
//! REST fills them from the URL and the body; MCP splits one `arguments` object by name.
//! Each part is deserialized into its own type, with the path of a failing field reported,
//! then checked with `validator`.

use crate::error::ApiError;
use serde::de::DeserializeOwned;
use serde_json::{Map, Value};
use std::borrow::Cow;
use utoipa::ToSchema;
use utoipa::openapi::{RefOr, Schema};
use validator::{Validate, ValidationErrors, ValidationErrorsKind};

/// The raw arguments of one call.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Args {
    pub path: Map<String, Value>,
    pub query: Map<String, Value>,
    pub body: Value,
}

impl Args {
    /// Canonical JSON of the whole call, for idempotency hashing: keys sorted at every level.
    pub fn canonical(&self) -> String {
        let whole = serde_json::json!({
            "path": Value::Object(self.path.clone()),
            "query": Value::Object(self.query.clone()),
            "body": self.body,
        });
        let mut out = String::new();
        write_canonical(&whole, &mut out);
        out
    }
}

fn write_canonical(v: &Value, out: &mut String) {
    match v {
        Value::Object(map) => {
            let mut keys: Vec<_> = map.keys().collect();
            keys.sort();
            out.push('{');
            for (i, k) in keys.into_iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                out.push_str(&Value::String(k.clone()).to_string());
                out.push(':');
                write_canonical(&map[k], out);
            }
            out.push('}');
        }
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_canonical(item, out);
            }
            out.push(']');
        }
        other => out.push_str(&other.to_string()),
    }
}

/// One part of a call's input (path, query or body).
pub trait Part: DeserializeOwned + Validate + ToSchema + Send + 'static {
    /// True for [`Nothing`]: the part is absent from the description.
    fn absent() -> bool {
        std::any::TypeId::of::<Self>() == std::any::TypeId::of::<Nothing>()
    }
}

impl<T: DeserializeOwned + Validate + ToSchema + Send + 'static> Part for T {}

/// A part an operation does not have. Accepts and ignores anything.
#[derive(Debug, Clone, Copy, Default)]
pub struct Nothing;

impl<'de> serde::Deserialize<'de> for Nothing {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        serde::de::IgnoredAny::deserialize(d).map(|_| Nothing)
    }
}

impl Validate for Nothing {
    fn validate(&self) -> Result<(), ValidationErrors> {
        Ok(())
    }
}

impl utoipa::PartialSchema for Nothing {
    fn schema() -> RefOr<Schema> {
        utoipa::openapi::ObjectBuilder::new().build().into()
    }
}

impl ToSchema for Nothing {
    fn name() -> Cow<'static, str> {
        Cow::Borrowed("Nothing")
    }
}

/// The typed input of an operation.
#[derive(Debug, Clone)]
pub struct Req<P, Q, B> {
    pub path: P,
    pub query: Q,
    pub body: B,
}

/// Something that can be built from [`Args`].
pub trait Input: Sized + Send + 'static {
    fn parse(args: &Args) -> Result<Self, ApiError>;
    fn describe() -> InputDoc;
}

/// A schema with the component schemas it refers to.
pub type SchemaWithDeps = (RefOr<Schema>, Vec<(String, RefOr<Schema>)>);

/// What the description needs to know of an input.
pub struct InputDoc {
    pub path: Option<SchemaWithDeps>,
    pub query: Option<SchemaWithDeps>,
    /// The body schema, its components and its type's name.
    pub body: Option<(SchemaWithDeps, Cow<'static, str>)>,
}

fn doc_of<T: ToSchema>() -> SchemaWithDeps {
    let mut deps = Vec::new();
    T::schemas(&mut deps);
    (T::schema(), deps)
}

/// The path of the first string (or object key) holding a NUL character, which no text
/// column can store: such input is refused up front, naming the field.
fn find_nul(value: &Value, path: &str) -> Option<String> {
    match value {
        Value::String(s) if s.contains('\0') => Some(if path.is_empty() {
            "body".into()
        } else {
            path.to_owned()
        }),
        Value::Array(items) => items
            .iter()
            .enumerate()
            .find_map(|(i, v)| find_nul(v, &format!("{path}[{i}]"))),
        Value::Object(map) => map.iter().find_map(|(k, v)| {
            let here = join(path, k);
            if k.contains('\0') {
                Some(here)
            } else {
                find_nul(v, &here)
            }
        }),
        _ => None,
    }
}

impl<P: Part, Q: Part, B: Part> Input for Req<P, Q, B> {
    fn parse(args: &Args) -> Result<Self, ApiError> {
        for part in [
            &Value::Object(args.path.clone()),
            &Value::Object(args.query.clone()),
            &args.body,
        ] {
            if let Some(field) = find_nul(part, "") {
                return Err(ApiError::invalid(field, "must not contain NUL characters"));
            }
        }
        let path = parse_part::<P>(Value::Object(args.path.clone()), "")?;
        let query = parse_part::<Q>(Value::Object(args.query.clone()), "")?;
        let body = if B::absent() {
            parse_part::<B>(Value::Null, "")?
        } else {
            let body = match &args.body {
                Value::Null => Value::Object(Map::new()),
                v @ Value::Object(_) => v.clone(),
                _ => return Err(ApiError::invalid("body", "must be a JSON object")),
            };
            parse_part::<B>(body, "")?
        };
        Ok(Req { path, query, body })
    }

    fn describe() -> InputDoc {
        InputDoc {
            path: (!P::absent()).then(doc_of::<P>),
            query: (!Q::absent()).then(doc_of::<Q>),
            body: (!B::absent()).then(|| (doc_of::<B>(), B::name())),
        }
    }
}

/// Deserializes one part, naming the failing field, then validates it.
pub fn parse_part<T: DeserializeOwned + Validate>(
    value: Value,
    prefix: &str,
) -> Result<T, ApiError> {
    let parsed: T = serde_path_to_error::deserialize(value).map_err(|e| {
        let path = e.path().to_string();
        let inner = e.into_inner().to_string();
        let field = field_of(prefix, &path, &inner);
        ApiError::invalid(field, clean_serde_message(&inner))
    })?;
    parsed
        .validate()
        .map_err(|errs| validation_error(prefix, &errs))?;
    Ok(parsed)
}

fn join(prefix: &str, rest: &str) -> String {
    match (prefix.is_empty(), rest.is_empty() || rest == ".") {
        (_, true) => prefix.to_owned(),
        (true, false) => rest.to_owned(),
        (false, false) => format!("{prefix}.{rest}"),
    }
}

/// serde reports a missing field at its parent; name the field itself.
fn field_of(prefix: &str, path: &str, message: &str) -> String {
    let base = join(prefix, path);
    if let Some(rest) = message.strip_prefix("missing field `")
        && let Some(name) = rest.split('`').next()
    {
        return join(&base, name);
    }
    if base.is_empty() {
        "body".to_owned()
    } else {
        base
    }
}

fn clean_serde_message(message: &str) -> String {
    let m = match message.find(" at line ") {
        Some(i) => &message[..i],
        None => message,
    };
    if m.starts_with("missing field") {
        "is required".to_owned()
    } else {
        m.to_owned()
    }
}

/// The first validation failure, deterministically (fields sorted), as a 400.
pub fn validation_error(prefix: &str, errs: &ValidationErrors) -> ApiError {
    let (field, message) =
        first_failure(errs).unwrap_or_else(|| (String::new(), "is invalid".into()));
    ApiError::invalid(join(prefix, &field), message)
}

fn first_failure(errs: &ValidationErrors) -> Option<(String, String)> {
    let mut fields: Vec<_> = errs.errors().iter().collect();
    fields.sort_by(|a, b| a.0.cmp(b.0));
    for (name, kind) in fields {
        match kind {
            ValidationErrorsKind::Field(list) => {
                if let Some(e) = list.first() {
                    return Some((name.to_string(), describe_failure(e)));
                }
            }
            ValidationErrorsKind::Struct(inner) => {
                if let Some((f, m)) = first_failure(inner) {
                    return Some((join(name, &f), m));
                }
            }
            ValidationErrorsKind::List(items) => {
                if let Some((i, inner)) = items.iter().min_by_key(|(i, _)| **i)
                    && let Some((f, m)) = first_failure(inner)
                {
                    return Some((join(&format!("{name}[{i}]"), &f), m));
                }
            }
        }
    }
    None
}

fn describe_failure(e: &validator::ValidationError) -> String {
    if let Some(m) = &e.message {
        return m.to_string();
    }
    let p = |k: &str| e.params.get(k).map(|v| v.to_string());
    match e.code.as_ref() {
        "length" => match (p("min"), p("max")) {
            (Some(min), Some(max)) => format!("must be {min}-{max} characters long"),
            (None, Some(max)) => format!("must be at most {max} long"),
            (Some(min), None) => format!("must be at least {min} long"),
            _ => "has the wrong length".into(),
        },
        "range" => match (p("min"), p("max")) {
            (Some(min), Some(max)) => format!("must be between {min} and {max}"),
            (None, Some(max)) => format!("must be at most {max}"),
            (Some(min), None) => format!("must be at least {min}"),
            _ => "is out of range".into(),
        },
        other => format!("is invalid ({other})"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde::Deserialize;
    use serde_json::json;

    #[derive(Debug, Deserialize, Validate, utoipa::ToSchema)]
    struct Body {
        #[validate(length(min = 1, max = 5))]
        code: String,
        #[validate(range(min = 1, max = 10))]
        n: Option<i64>,
        #[validate(nested)]
        #[serde(default)]
        items: Vec<Item>,
    }

    #[derive(Debug, Deserialize, Validate, utoipa::ToSchema)]
    struct Item {
        #[validate(length(max = 3))]
        label: String,
    }

    #[test]
    fn a_missing_field_is_named() {
        let e = parse_part::<Body>(json!({}), "").unwrap_err();
        assert_eq!(e.field.as_deref(), Some("code"));
        assert_eq!(e.status(), 400);
    }

    #[test]
    fn a_type_error_names_the_nested_field() {
        let e = parse_part::<Body>(
            json!({"code": "a", "items": [{"label": "x"}, {"label": 3}]}),
            "",
        )
        .unwrap_err();
        assert_eq!(e.field.as_deref(), Some("items[1].label"));
        assert!(!e.message.contains("line"), "{}", e.message);
    }

    #[test]
    fn validation_failures_name_the_field_and_the_limit() {
        let e = parse_part::<Body>(json!({"code": "toolong"}), "").unwrap_err();
        assert_eq!(e.field.as_deref(), Some("code"));
        assert!(e.message.contains("1-5"), "{}", e.message);
        let e = parse_part::<Body>(json!({"code": "a", "n": 11}), "").unwrap_err();
        assert_eq!(e.field.as_deref(), Some("n"));
        let e =
            parse_part::<Body>(json!({"code": "a", "items": [{"label": "abcd"}]}), "").unwrap_err();
        assert_eq!(e.field.as_deref(), Some("items[0].label"));
    }

    #[test]
    fn a_nul_character_is_refused_naming_the_field() {
        let args = Args {
            body: json!({"code": "a", "items": [{"label": "x\u{0}"}]}),
            ..Default::default()
        };
        let e = <Req<Nothing, Nothing, Body> as Input>::parse(&args).unwrap_err();
        assert_eq!(e.field.as_deref(), Some("items[0].label"));
        let args = Args {
            body: json!({"code": "a", "counts": {"k\u{0}": 1}}),
            ..Default::default()
        };
        let e = <Req<Nothing, Nothing, Body> as Input>::parse(&args).unwrap_err();
        assert_eq!(e.field.as_deref(), Some("counts.k\u{0}"));
    }

    #[test]
    fn canonical_form_ignores_key_order() {
        let a = Args {
            body: json!({"b": 1, "a": {"y": 2, "x": [1, {"q": 1, "p": 2}]}}),
            ..Default::default()
        };
        let b = Args {
            body: json!({"a": {"x": [1, {"p": 2, "q": 1}], "y": 2}, "b": 1}),
            ..Default::default()
        };
        assert_eq!(a.canonical(), b.canonical());
        let c = Args {
            body: json!({"a": {"x": [{"p": 2, "q": 1}, 1], "y": 2}, "b": 1}),
            ..Default::default()
        };
        assert_ne!(a.canonical(), c.canonical());
    }
}
