//! Field types that state their rule once: the parser enforces it while deserializing (a 400
//! naming the field) and the description states it. Their schemas are plain values marked
//! [`INLINE`]: the describer writes them where the field is, as if the field had spelled out
//! the keywords itself, so a `Text<1, 200>` field reads `{"type": "string", "minLength": 1,
//! "maxLength": 200}` in the description and no component is added.
//!
//! Input: [`Text`] (bounded text), [`Int`] (a bounded integer; [`Limit`] for a page size),
//! [`List`] (a bounded list).
//! Output: [`Utc`] (an instant as ISO UTC, what `format_utc` writes) and [`Cursor`] (the
//! position of the next page).

use crate::{Position, format_utc};
use jiff::Timestamp;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use std::borrow::Cow;
use utoipa::openapi::{RefOr, Schema};
use utoipa::{PartialSchema, ToSchema};
use uuid::Uuid;

/// The extension that marks a schema to be written where it is used, not as a component.
pub const INLINE: &str = "x-inline";

/// A plain value's schema, marked [`INLINE`]. The schemas are literals of this crate: one that
/// is not a valid schema is a bug that must not describe its field as `{}` (the rule would still
/// be enforced but no longer stated), so it panics while the catalogue is described.
pub fn inline_schema(mut schema: Value) -> RefOr<Schema> {
    schema[INLINE] = Value::Bool(true);
    match serde_json::from_value::<Schema>(schema.clone()) {
        Ok(parsed) => RefOr::T(parsed),
        Err(e) => panic!("a field type's schema is not a JSON Schema ({e}): {schema}"),
    }
}

/// Implements `ToSchema` for a field type from its JSON Schema (marked [`INLINE`]) and a name.
macro_rules! inline_to_schema {
    (impl [$($generics:tt)*] $ty:ty, name = $name:expr, schema = $schema:expr) => {
        impl<$($generics)*> PartialSchema for $ty {
            fn schema() -> RefOr<Schema> {
                inline_schema($schema)
            }
        }

        impl<$($generics)*> ToSchema for $ty {
            fn name() -> Cow<'static, str> {
                $name
            }
        }
    };
}

// ---------------------------------------------------------------------------------------------
// Input

/// Text of `MIN` to `MAX` characters (NUL is refused for all text, by the parser).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Text<const MIN: usize, const MAX: usize>(pub String);

impl<const MIN: usize, const MAX: usize> Text<MIN, MAX> {
    /// What the field must be, as a 400 says it.
    pub fn rule() -> String {
        if MIN == 0 {
            format!("must have at most {MAX} characters")
        } else {
            format!("must be {MIN}-{MAX} characters long")
        }
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }

    pub fn into_string(self) -> String {
        self.0
    }
}

impl<const MIN: usize, const MAX: usize> std::ops::Deref for Text<MIN, MAX> {
    type Target = str;

    fn deref(&self) -> &str {
        &self.0
    }
}

impl<const MIN: usize, const MAX: usize> std::fmt::Display for Text<MIN, MAX> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl<const MIN: usize, const MAX: usize> From<Text<MIN, MAX>> for String {
    fn from(t: Text<MIN, MAX>) -> String {
        t.0
    }
}

impl<'de, const MIN: usize, const MAX: usize> Deserialize<'de> for Text<MIN, MAX> {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let text = String::deserialize(d)?;
        let n = text.chars().count();
        if n < MIN || n > MAX {
            return Err(serde::de::Error::custom(Self::rule()));
        }
        Ok(Text(text))
    }
}

impl<const MIN: usize, const MAX: usize> Serialize for Text<MIN, MAX> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        self.0.serialize(s)
    }
}

inline_to_schema!(
    impl [const MIN: usize, const MAX: usize] Text<MIN, MAX>,
    name = Cow::Owned(format!("Text{MIN}_{MAX}")),
    schema = if MIN == 0 {
        json!({"type": "string", "maxLength": MAX})
    } else {
        json!({"type": "string", "minLength": MIN, "maxLength": MAX})
    }
);

/// An integer from `MIN` to `MAX` (`i64::MAX`: no upper bound of its own).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Int<const MIN: i64, const MAX: i64>(pub i64);

impl<const MIN: i64, const MAX: i64> Int<MIN, MAX> {
    pub fn rule() -> String {
        if MAX == i64::MAX {
            format!("must be at least {MIN}")
        } else {
            format!("must be between {MIN} and {MAX}")
        }
    }

    pub fn get(self) -> i64 {
        self.0
    }
}

impl<'de, const MIN: i64, const MAX: i64> Deserialize<'de> for Int<MIN, MAX> {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let n = i64::deserialize(d)?;
        if !(MIN..=MAX).contains(&n) {
            return Err(serde::de::Error::custom(Self::rule()));
        }
        Ok(Int(n))
    }
}

impl<const MIN: i64, const MAX: i64> Serialize for Int<MIN, MAX> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        self.0.serialize(s)
    }
}

inline_to_schema!(
    impl [const MIN: i64, const MAX: i64] Int<MIN, MAX>,
    name = Cow::Owned(format!("Int{MIN}_{MAX}")),
    schema = if MAX == i64::MAX {
        json!({"type": "integer", "format": "int64", "minimum": MIN})
    } else {
        json!({"type": "integer", "format": "int64", "minimum": MIN, "maximum": MAX})
    }
);

/// A list of `MIN` to `MAX` items; each item is checked as it is parsed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct List<T, const MIN: usize, const MAX: usize>(pub Vec<T>);

impl<T, const MIN: usize, const MAX: usize> List<T, MIN, MAX> {
    pub fn rule() -> String {
        if MIN == 0 {
            format!("must have at most {MAX} items")
        } else {
            format!("must have {MIN}-{MAX} items")
        }
    }

    pub fn into_vec(self) -> Vec<T> {
        self.0
    }
}

impl<T, const MIN: usize, const MAX: usize> Default for List<T, MIN, MAX> {
    fn default() -> Self {
        List(Vec::new())
    }
}

impl<T, const MIN: usize, const MAX: usize> std::ops::Deref for List<T, MIN, MAX> {
    type Target = [T];

    fn deref(&self) -> &[T] {
        &self.0
    }
}

impl<T, const MIN: usize, const MAX: usize> IntoIterator for List<T, MIN, MAX> {
    type Item = T;
    type IntoIter = std::vec::IntoIter<T>;

    fn into_iter(self) -> Self::IntoIter {
        self.0.into_iter()
    }
}

impl<'de, T: Deserialize<'de>, const MIN: usize, const MAX: usize> Deserialize<'de>
    for List<T, MIN, MAX>
{
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let items = Vec::<T>::deserialize(d)?;
        if items.len() < MIN || items.len() > MAX {
            return Err(serde::de::Error::custom(Self::rule()));
        }
        Ok(List(items))
    }
}

impl<T: Serialize, const MIN: usize, const MAX: usize> Serialize for List<T, MIN, MAX> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        self.0.serialize(s)
    }
}

/// How an item type of a [`List`] reads in the description: a component by reference, or a
/// plain value written in place (`Uuid`).
pub trait ListItem {
    fn item_schema() -> Value;
    fn item_components(out: &mut Vec<(String, RefOr<Schema>)>);
}

impl ListItem for Uuid {
    fn item_schema() -> Value {
        json!({"type": "string", "format": "uuid"})
    }

    fn item_components(_: &mut Vec<(String, RefOr<Schema>)>) {}
}

/// Item types described by their component.
#[macro_export]
macro_rules! component_items {
    ($($ty:ty),* $(,)?) => {$(
        impl $crate::wire::fields::ListItem for $ty {
            fn item_schema() -> serde_json::Value {
                let name = <$ty as utoipa::ToSchema>::name();
                serde_json::json!({"$ref": format!("#/components/schemas/{name}")})
            }

            fn item_components(
                out: &mut Vec<(String, utoipa::openapi::RefOr<utoipa::openapi::Schema>)>,
            ) {
                use utoipa::PartialSchema;
                out.push((<$ty as utoipa::ToSchema>::name().into_owned(), <$ty>::schema()));
                <$ty as utoipa::ToSchema>::schemas(out);
            }
        }
    )*};
}
pub use component_items;

/// The derive asks a generic field type to compose its schema from its arguments' schemas;
/// a list's schema is its own.
impl<T: ListItem, const MIN: usize, const MAX: usize> utoipa::__dev::ComposeSchema
    for List<T, MIN, MAX>
{
    fn compose(_: Vec<RefOr<Schema>>) -> RefOr<Schema> {
        let mut schema = json!({"type": "array", "items": T::item_schema(), "maxItems": MAX});
        if MIN > 0 {
            schema["minItems"] = json!(MIN);
        }
        inline_schema(schema)
    }
}

/// A batch of `MIN` to `MAX` items each read on its own: the request is refused (400) only
/// when the batch is not an array of that size; an item that cannot be read as a `T` (a field
/// missing, of the wrong type, past its limit or not a known value, or not an object at all)
/// is that item's own answer, and the rest of the batch goes on. The description says so: an
/// item is a `T` or any other value, so a schema-valid request is never refused for one item,
/// and the operation answers such an item in its result.
#[derive(Debug, Clone, PartialEq)]
pub struct Items<T, const MIN: usize, const MAX: usize> {
    raw: Vec<Value>,
    item: std::marker::PhantomData<T>,
}

/// Why one item of a batch cannot be read: the field at fault within the item (empty for
/// the item as a whole) and the reason.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ItemFault {
    pub field: String,
    pub reason: String,
}

impl<T, const MIN: usize, const MAX: usize> Default for Items<T, MIN, MAX> {
    /// No items (for a batch that may be left out).
    fn default() -> Self {
        Items {
            raw: Vec::new(),
            item: std::marker::PhantomData,
        }
    }
}

impl<T, const MIN: usize, const MAX: usize> Items<T, MIN, MAX> {
    pub fn len(&self) -> usize {
        self.raw.len()
    }

    pub fn is_empty(&self) -> bool {
        self.raw.is_empty()
    }

    /// The items as sent, each to be read on its own.
    pub fn into_raw(self) -> Vec<Value> {
        self.raw
    }
}

impl<T: Serialize, const MIN: usize, const MAX: usize> Items<T, MIN, MAX> {
    /// A batch of these items (a client's request).
    pub fn of(items: &[T]) -> Result<Self, serde_json::Error> {
        let raw = items
            .iter()
            .map(serde_json::to_value)
            .collect::<Result<_, _>>()?;
        Ok(Items {
            raw,
            item: std::marker::PhantomData,
        })
    }
}

impl<T, const MIN: usize, const MAX: usize> Serialize for Items<T, MIN, MAX> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        self.raw.serialize(s)
    }
}

impl<'de, T, const MIN: usize, const MAX: usize> Deserialize<'de> for Items<T, MIN, MAX> {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let raw = Vec::<Value>::deserialize(d)?;
        if raw.len() < MIN || raw.len() > MAX {
            return Err(serde::de::Error::custom(List::<T, MIN, MAX>::rule()));
        }
        Ok(Items {
            raw,
            item: std::marker::PhantomData,
        })
    }
}

/// An item of a batch as the description states it: a `T`, or any other value, which the
/// operation answers on its own.
fn batch_item<T: ListItem>() -> Value {
    json!({"anyOf": [
        T::item_schema(),
        // Typed here only so that it parses; the type is taken off below (any value).
        {"type": "object",
         "description": "Any other item is not refused with the request: the answer names it \
                         with its index, the field at fault and the reason."},
    ]})
}

impl<T: ListItem, const MIN: usize, const MAX: usize> utoipa::__dev::ComposeSchema
    for Items<T, MIN, MAX>
{
    fn compose(_: Vec<RefOr<Schema>>) -> RefOr<Schema> {
        use utoipa::openapi::schema::{ArrayItems, SchemaType};
        let mut schema = json!({"type": "array", "items": batch_item::<T>(), "maxItems": MAX});
        if MIN > 0 {
            schema["minItems"] = json!(MIN);
        }
        let mut schema = inline_schema(schema);
        // The second item schema is any value: no type at all (utoipa reads no schema without
        // a type, so it is made typeless after parsing). Generators read it as "any"
        // (openapi-python-client: `list[Any | CronJobIn]`).
        if let RefOr::T(Schema::Array(array)) = &mut schema
            && let ArrayItems::RefOrSchema(items) = &mut array.items
            && let RefOr::T(Schema::AnyOf(any)) = items.as_mut()
            && let Some(RefOr::T(Schema::Object(other))) = any.items.get_mut(1)
        {
            other.schema_type = SchemaType::AnyValue;
        } else {
            panic!("a batch's schema is an array of anyOf");
        }
        schema
    }
}

impl<T: ListItem, const MIN: usize, const MAX: usize> ToSchema for Items<T, MIN, MAX> {
    fn name() -> Cow<'static, str> {
        Cow::Owned(format!("Items{}", &List::<T, MIN, MAX>::name()[4..]))
    }

    fn schemas(out: &mut Vec<(String, RefOr<Schema>)>) {
        T::item_components(out);
    }
}

/// A list of ids (an alias: the derive would read `Uuid` as text inside a generic type).
pub type Ids<const MIN: usize, const MAX: usize> = List<Uuid, MIN, MAX>;

impl<T: ListItem, const MIN: usize, const MAX: usize> ToSchema for List<T, MIN, MAX> {
    fn name() -> Cow<'static, str> {
        let item = T::item_schema();
        let item = item["$ref"]
            .as_str()
            .unwrap_or("uuid")
            .rsplit('/')
            .next()
            .unwrap_or("");
        Cow::Owned(format!("List{MIN}_{MAX}_{item}"))
    }

    fn schemas(out: &mut Vec<(String, RefOr<Schema>)>) {
        T::item_components(out);
    }
}

/// Text of 1 to `MAX` characters that is not only white space (white space around it is
/// dropped by the domain). Refused when parsed (400 naming the field), before the space is
/// looked up; the schema says it with the pattern of text that names something
/// ([`not_blank_pattern`](super::strings::not_blank_pattern)), so a client generating from the description never sends one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Filled<const MAX: usize>(pub String);

impl<const MAX: usize> Filled<MAX> {
    fn rule() -> String {
        format!("must be 1-{MAX} characters long and not only white space")
    }
}

impl<const MAX: usize> From<Filled<MAX>> for String {
    fn from(t: Filled<MAX>) -> String {
        t.0
    }
}

impl<'de, const MAX: usize> Deserialize<'de> for Filled<MAX> {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let text = String::deserialize(d)?;
        let n = text.chars().count();
        if n == 0 || n > MAX || super::strings::is_blank(&text) {
            return Err(serde::de::Error::custom(Self::rule()));
        }
        Ok(Filled(text))
    }
}

impl<const MAX: usize> Serialize for Filled<MAX> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        self.0.serialize(s)
    }
}

impl<const MAX: usize> PartialSchema for Filled<MAX> {
    fn schema() -> RefOr<Schema> {
        inline_schema(<Self as ListItem>::item_schema())
    }
}

impl<const MAX: usize> ToSchema for Filled<MAX> {
    fn name() -> Cow<'static, str> {
        Cow::Owned(format!("Filled{MAX}"))
    }
}

/// In a [`List`], written in place (ad research items).
impl<const MAX: usize> ListItem for Filled<MAX> {
    fn item_schema() -> serde_json::Value {
        json!({
            "type": "string",
            "minLength": 1,
            "maxLength": MAX,
            "pattern": super::strings::not_blank_pattern(),
        })
    }

    fn item_components(_: &mut Vec<(String, RefOr<Schema>)>) {}
}

/// A count that cannot be negative (a counter read off a platform).
pub type Count = Int<0, { i64::MAX }>;

/// A page size of at most `MAX` items.
pub type Limit<const MAX: i64> = Int<1, MAX>;

/// The page size asked for, or `default`.
pub fn limit_or<const MAX: i64>(limit: Option<Limit<MAX>>, default: i64) -> i64 {
    limit.map_or(default, Int::get)
}

/// `{id}`: the path of an object named by its id.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, validator::Validate, ToSchema,
)]
pub struct IdPath {
    pub id: Uuid,
}

impl From<Uuid> for IdPath {
    fn from(id: Uuid) -> IdPath {
        IdPath { id }
    }
}

/// A field that breaks a rule the types cannot state (one field given where another belongs):
/// the field, and what is wrong with it. The server answers it as a 400 naming the field.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Invalid {
    pub field: &'static str,
    pub message: String,
}

impl Invalid {
    pub fn new(field: &'static str, message: impl Into<String>) -> Invalid {
        Invalid {
            field,
            message: message.into(),
        }
    }
}

/// `{code}`: a current or legacy account code.
#[derive(Debug, Clone, Serialize, Deserialize, validator::Validate, ToSchema)]
pub struct CodePath {
    /// Current or legacy account code, 1-40 characters.
    pub code: super::strings::CodeInput,
}

/// `platform`: only needed when a legacy code is repeated across platforms.
#[derive(Debug, Clone, Default, Serialize, Deserialize, validator::Validate, ToSchema)]
pub struct PlatformQuery {
    pub platform: Option<crate::Platform>,
}

/// What a move did: `changed`, or `unchanged` when the object was there already (a report
/// issued, a pick cancelled); a move resent changes nothing.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum MoveResult {
    Changed,
    Unchanged,
}

impl MoveResult {
    pub fn of(changed: bool) -> MoveResult {
        if changed {
            MoveResult::Changed
        } else {
            MoveResult::Unchanged
        }
    }
}

/// The agent a response speaks for.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct AgentBrief {
    pub id: Uuid,
    pub name: String,
}

// ---------------------------------------------------------------------------------------------
// Output

/// An instant as ISO 8601 UTC in whole seconds (`format_utc`), the form of every time the
/// API answers; in a message it displays the same way.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct Utc(pub Timestamp);

impl From<Timestamp> for Utc {
    fn from(t: Timestamp) -> Utc {
        Utc(t)
    }
}

impl Serialize for Utc {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for Utc {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let raw = String::deserialize(d)?;
        raw.parse().map(Utc).map_err(serde::de::Error::custom)
    }
}

impl std::fmt::Display for Utc {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&format_utc(self.0))
    }
}

inline_to_schema!(impl [] Utc, name = Cow::Borrowed("Utc"), schema = json!({"type": "string"}));

/// The position after a page's last item: pass it back as `cursor` for the next page.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Cursor(pub Position);

impl Serialize for Cursor {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let (at, id) = self.0;
        s.serialize_str(&super::strings::encode_cursor(at, id))
    }
}

impl<'de> Deserialize<'de> for Cursor {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let raw = String::deserialize(d)?;
        super::strings::decode_cursor(&raw)
            .map(Cursor)
            .ok_or_else(|| serde::de::Error::custom("is not a cursor (48 hex digits)"))
    }
}

impl Cursor {
    /// The cursor as the next call's `cursor` input.
    pub fn input(self) -> super::strings::CursorInput {
        super::strings::CursorInput(self.0)
    }
}

inline_to_schema!(impl [] Cursor, name = Cow::Borrowed("Cursor"), schema = json!({"type": "string"}));

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_counts_characters_and_names_its_rule() {
        let t = |v: &str| serde_json::from_value::<Text<1, 3>>(json!(v));
        assert!(t("").is_err());
        assert_eq!(t("äöü").unwrap().as_str(), "äöü");
        let e = t("abcd").unwrap_err().to_string();
        assert_eq!(e, "must be 1-3 characters long");
        let e = serde_json::from_value::<Text<0, 2>>(json!("abc")).unwrap_err();
        assert_eq!(e.to_string(), "must have at most 2 characters");
    }

    #[test]
    fn schemas_are_marked_inline() {
        let s = serde_json::to_value(Text::<1, 200>::schema()).unwrap();
        assert_eq!(
            s,
            json!({"type": "string", "minLength": 1, "maxLength": 200, INLINE: true})
        );
        let s = serde_json::to_value(Count::schema()).unwrap();
        assert_eq!(s["minimum"], 0);
        assert!(s.get("maximum").is_none());
        assert_eq!(serde_json::to_value(Utc::schema()).unwrap()[INLINE], true);
    }

    #[test]
    fn ints_keep_their_bounds() {
        assert!(serde_json::from_value::<Limit<200>>(json!(0)).is_err());
        assert_eq!(
            limit_or(
                serde_json::from_value::<Option<Limit<200>>>(json!(200)).unwrap(),
                50
            ),
            200
        );
        assert_eq!(limit_or::<200>(None, 50), 50);
        assert!(serde_json::from_value::<Count>(json!(-1)).is_err());
    }

    /// A batch's schema keeps its size and its item, a `T` or any other value.
    #[test]
    fn a_batch_states_its_size_and_takes_any_item() {
        use utoipa::__dev::ComposeSchema;
        let schema = serde_json::to_value(Items::<Uuid, 1, 3>::compose(Vec::new())).unwrap();
        assert_eq!(
            (&schema["type"], &schema["minItems"], &schema["maxItems"]),
            (&json!("array"), &json!(1), &json!(3)),
            "{schema}"
        );
        let any_of = schema["items"]["anyOf"].as_array().expect("anyOf");
        assert_eq!(any_of[0], json!({"type": "string", "format": "uuid"}));
        // Any value: no type, only what becomes of it.
        let other = any_of[1].as_object().expect("a schema");
        assert_eq!(
            other.keys().collect::<Vec<_>>(),
            ["description"],
            "{schema}"
        );
        // And a list's.
        let schema = serde_json::to_value(List::<Uuid, 0, 3>::compose(Vec::new())).unwrap();
        assert_eq!(schema["maxItems"], 3, "{schema}");
        assert_eq!(schema["items"]["format"], "uuid", "{schema}");
    }

    #[test]
    fn times_answer_in_whole_seconds_and_lists_count_items() {
        let t: Timestamp = "2026-11-21T10:00:00.123456Z".parse().unwrap();
        assert_eq!(
            serde_json::to_value(Utc(t)).unwrap(),
            json!("2026-11-21T10:00:00Z")
        );
        assert_eq!(Utc(t).to_string(), "2026-11-21T10:00:00Z");
        let e = serde_json::from_value::<List<u8, 1, 2>>(json!([1, 2, 3])).unwrap_err();
        assert_eq!(e.to_string(), "must have 1-2 items");
        assert!(serde_json::from_value::<List<u8, 1, 2>>(json!([])).is_err());
        let s = serde_json::to_value(Ids::<1, 10>::schema()).unwrap();
        assert_eq!(s["items"], json!({"type": "string", "format": "uuid"}));
        assert_eq!(
            (s["minItems"].clone(), s["maxItems"].clone()),
            (json!(1), json!(10))
        );
    }

    #[test]
    fn answers_read_back_and_a_batch_writes_its_items() {
        let t: Timestamp = "2026-11-21T10:00:00Z".parse().unwrap();
        let utc: Utc = serde_json::from_value(serde_json::to_value(Utc(t)).unwrap()).unwrap();
        assert_eq!(utc, Utc(t));
        let cursor = Cursor((t, Uuid::from_u128(7)));
        let back: Cursor = serde_json::from_value(serde_json::to_value(cursor).unwrap()).unwrap();
        assert_eq!(back, cursor);
        assert!(serde_json::from_value::<Cursor>(json!("nope")).is_err());
        let batch = Items::<Uuid, 1, 3>::of(&[Uuid::nil()]).unwrap();
        assert_eq!(
            serde_json::to_value(&batch).unwrap(),
            json!(["00000000-0000-0000-0000-000000000000"])
        );
        assert_eq!(batch.into_raw().len(), 1);
    }
}
