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

pub use fleetdesk_kernel::op::{Nothing, Req};

/// The `field` of an error about the request body as a whole. Parenthesized, so it cannot be
/// mistaken for a field called `body` (a draft has one).
pub const REQUEST_BODY: &str = "(request body)";

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

/// The body fields of `B` that are batches read item by item ([`crate::fields::Items`]): a NUL
/// inside one of their items is that item's answer, not the request's. Read off `B`'s schema
/// once per body type (a batch is an array whose items are the item or any other value).
fn batch_fields<B: ToSchema>() -> std::sync::Arc<[String]> {
    use std::collections::HashMap;
    use std::sync::{Arc, OnceLock, RwLock};
    type Seen = RwLock<HashMap<String, Arc<[String]>>>;
    static SEEN: OnceLock<Seen> = OnceLock::new();
    let seen = SEEN.get_or_init(Default::default);
    let name = B::name();
    if let Some(fields) = seen
        .read()
        .unwrap_or_else(|e| e.into_inner())
        .get(name.as_ref())
    {
        return fields.clone();
    }
    let (schema, deps) = doc_of::<B>();
    let schema = serde_json::to_value(schema).unwrap_or_default();
    let deps: HashMap<String, Value> = deps
        .into_iter()
        .map(|(name, s)| (name, serde_json::to_value(s).unwrap_or_default()))
        .collect();
    let props = schema["properties"]
        .as_object()
        .cloned()
        .unwrap_or_default();
    let fields: Arc<[String]> = props
        .into_iter()
        .filter(|(_, p)| {
            // The field's schema, or the component it names.
            let p = p["$ref"]
                .as_str()
                .and_then(|r| r.strip_prefix("#/components/schemas/"))
                .and_then(|name| deps.get(name))
                .unwrap_or(p);
            p["type"] == "array"
                && p["items"]["anyOf"]
                    .get(1)
                    .is_some_and(|other| other.get("type").is_none())
        })
        .map(|(name, _)| name)
        .collect();
    seen.write()
        .unwrap_or_else(|e| e.into_inner())
        .entry(name.into_owned())
        .or_insert(fields)
        .clone()
}

/// [`find_nul`] over a body, leaving out the items of its batch fields (each item is checked
/// as it is read, [`crate::fields::Items::read`]).
fn find_nul_in_body(body: &Value, batches: &[String]) -> Option<String> {
    let Value::Object(map) = body else {
        return find_nul(body, "");
    };
    map.iter().find_map(|(k, v)| {
        if k.contains('\0') {
            Some(k.clone())
        } else if batches.contains(k) && v.is_array() {
            None
        } else {
            find_nul(v, k)
        }
    })
}

/// The path of the first string (or object key) holding a NUL character, which no text
/// column can store: such input is refused up front, naming the field.
pub(crate) fn find_nul(value: &Value, path: &str) -> Option<String> {
    match value {
        Value::String(s) if s.contains('\0') => Some(if path.is_empty() {
            REQUEST_BODY.into()
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
        let nul = find_nul(&Value::Object(args.path.clone()), "")
            .or_else(|| find_nul(&Value::Object(args.query.clone()), ""))
            .or_else(|| find_nul_in_body(&args.body, &batch_fields::<B>()));
        if let Some(field) = nul {
            return Err(ApiError::invalid(field, "must not contain NUL characters"));
        }
        let path = parse_part::<P>(Value::Object(args.path.clone()), "")?;
        let query = parse_part::<Q>(Value::Object(args.query.clone()), "")?;
        let body = if B::absent() {
            // A call without a body takes no body fields: anything named is unknown.
            match &args.body {
                Value::Null => {}
                Value::Object(map) => {
                    if let Some(name) = map.keys().next() {
                        return Err(ApiError::invalid(
                            fleetdesk_kernel::secrets::redact_keys(name).0,
                            "is not a field of this call (it takes no body)",
                        ));
                    }
                }
                _ => return Err(ApiError::invalid(REQUEST_BODY, "this call takes no body")),
            }
            parse_part::<B>(Value::Null, "")?
        } else {
            let body = match &args.body {
                Value::Null => Value::Object(Map::new()),
                v @ Value::Object(_) => v.clone(),
                _ => return Err(ApiError::invalid(REQUEST_BODY, "must be a JSON object")),
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

/// JSON Schema counts a number with a zero fraction as an integer (`193.0`); so does the
/// parser: such a number becomes an integer before typed fields read it (a float field reads
/// an integer as well).
fn integral_numbers(value: &mut Value) {
    match value {
        Value::Number(n) if !n.is_i64() && !n.is_u64() => {
            if let Some(f) = n.as_f64()
                && f.fract() == 0.0
            {
                // Within range the cast is exact: such floats are whole numbers.
                if f >= -(2f64.powi(63)) && f < 2f64.powi(63) {
                    *value = Value::from(f as i64);
                } else if f >= 0.0 && f < 2f64.powi(64) {
                    *value = Value::from(f as u64);
                }
            }
        }
        Value::Array(items) => items.iter_mut().for_each(integral_numbers),
        Value::Object(map) => map.values_mut().for_each(integral_numbers),
        _ => {}
    }
}

/// Deserializes one part, naming the failing field, then validates it.
pub fn parse_part<T: DeserializeOwned + Validate>(
    mut value: Value,
    prefix: &str,
) -> Result<T, ApiError> {
    integral_numbers(&mut value);
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

/// serde reports a missing or unknown field at its parent; name the field itself (a name
/// shaped like a key is not echoed).
fn field_of(prefix: &str, path: &str, message: &str) -> String {
    let base = join(prefix, path);
    if let Some(rest) = message.strip_prefix("missing field `")
        && let Some(name) = rest.split('`').next()
    {
        return join(&base, name);
    }
    // The path of an unknown field already ends with its name.
    if message.starts_with("unknown field `") {
        return fleetdesk_kernel::secrets::redact_keys(&base).0;
    }
    if base.is_empty() {
        REQUEST_BODY.to_owned()
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
    } else if m.starts_with("unknown field `") {
        // serde: "unknown field `x`, expected one of `a`, `b`" (or "expected `a`", or "there
        // are no fields"); the known names are the type's own.
        match m.split_once(", expected ") {
            Some((_, known)) => {
                format!("is not a known field; expected {}", known.replace('`', ""))
            }
            None => "is not a known field".to_owned(),
        }
    } else {
        // Never echo the value sent: it may be a credential in the wrong field.
        crate::error::serde_message(m)
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
    // A length on a list counts items; on text, characters.
    let unit = match e.params.get("value") {
        Some(Value::Array(_)) => "items",
        _ => "characters",
    };
    match e.code.as_ref() {
        "length" => match (p("min"), p("max"), p("equal")) {
            (_, _, Some(n)) => format!("must have exactly {n} {unit}"),
            (Some(min), Some(max), None) if unit == "items" => {
                format!("must have {min}-{max} items")
            }
            (Some(min), Some(max), None) => format!("must be {min}-{max} characters long"),
            (None, Some(max), None) => format!("must have at most {max} {unit}"),
            (Some(min), None, None) => format!("must have at least {min} {unit}"),
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

    /// A batch's items are checked as they are read, not with the request.
    #[test]
    fn the_batches_of_a_body_are_found_by_their_schema() {
        use crate::ops::cron::{CronJobsBody, CronRunsBody};
        use crate::ops::posts::{MetricsBody, ReportBody};
        assert_eq!(&*super::batch_fields::<CronJobsBody>(), ["jobs"]);
        assert_eq!(&*super::batch_fields::<CronRunsBody>(), ["runs"]);
        assert_eq!(&*super::batch_fields::<ReportBody>(), ["posts"]);
        let mut metrics = super::batch_fields::<MetricsBody>().to_vec();
        metrics.sort();
        assert_eq!(metrics, ["accounts", "posts"]);
        // A list is not a batch.
        assert!(super::batch_fields::<crate::ops::drafts::SubmitDraftBody>().is_empty());
    }

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

    #[derive(Debug, Deserialize, Validate, utoipa::ToSchema)]
    #[serde(deny_unknown_fields)]
    struct Strict {
        #[validate(length(min = 1, max = 200))]
        posts: Vec<u8>,
        #[validate(nested)]
        inner: Option<StrictInner>,
    }

    #[derive(Debug, Deserialize, Validate, utoipa::ToSchema)]
    #[serde(deny_unknown_fields)]
    struct StrictInner {
        #[allow(dead_code)]
        name: Option<String>,
    }

    #[test]
    fn an_unknown_field_is_named_with_the_known_ones() {
        let e = parse_part::<Strict>(json!({"posts": [1], "plannedAt": "x"}), "").unwrap_err();
        assert_eq!(e.status(), 400);
        assert_eq!(e.field.as_deref(), Some("plannedAt"));
        assert!(
            e.message
                .ends_with("is not a known field; expected posts or inner"),
            "{}",
            e.message
        );
        let e =
            parse_part::<Strict>(json!({"posts": [1], "inner": {"nmae": "x"}}), "").unwrap_err();
        assert_eq!(e.field.as_deref(), Some("inner.nmae"), "{}", e.message);
    }

    #[test]
    fn a_body_field_on_a_call_without_a_body_is_unknown() {
        let args = Args {
            body: json!({"request_id": "r1"}),
            ..Default::default()
        };
        let e = <Req<Nothing, Nothing, Nothing> as Input>::parse(&args).unwrap_err();
        assert_eq!(e.field.as_deref(), Some("request_id"));
        for fine in [json!(null), json!({})] {
            let args = Args {
                body: fine,
                ..Default::default()
            };
            assert!(<Req<Nothing, Nothing, Nothing> as Input>::parse(&args).is_ok());
        }
    }

    #[test]
    fn a_whole_number_written_with_a_fraction_is_an_integer() {
        let b = parse_part::<Body>(json!({"code": "a", "n": 7.0}), "").unwrap();
        assert_eq!(b.n, Some(7));
        let e = parse_part::<Body>(json!({"code": "a", "n": 7.5}), "").unwrap_err();
        assert_eq!(e.field.as_deref(), Some("n"));
        let mut big = json!([4305012984.0, 1.5e19, -2.0, 0.5]);
        integral_numbers(&mut big);
        assert_eq!(
            big,
            json!([4305012984_i64, 15_000_000_000_000_000_000_u64, -2, 0.5])
        );
    }

    #[test]
    fn a_list_length_counts_items_not_characters() {
        let e = parse_part::<Strict>(json!({"posts": []}), "").unwrap_err();
        assert_eq!(e.field.as_deref(), Some("posts"));
        assert!(e.message.contains("1-200 items"), "{}", e.message);
        assert!(!e.message.contains("characters"), "{}", e.message);
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
