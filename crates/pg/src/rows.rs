//! The row types of raw SQL. A statement that must stay SQL (a CTE, `unnest`) is loaded into
//! a struct declared with [`row!`]: the struct derives `QueryableByName` as before and, in test
//! builds, also says which columns it reads ([`Row::columns`]). Each module pairs its
//! statements with their row types (`statements!(LIST => ListRow, ..)`), and
//! `crates/pg/tests/statements.rs` compares every pair with the columns PostgreSQL describes for
//! the statement: names and types, not nullability.

use diesel::deserialize::{self, FromSql, Queryable};
use diesel::pg::{Pg, PgValue};
use diesel::query_builder::{BoxedSqlQuery, SqlQuery};
use diesel::serialize::ToSql;
use diesel::sql_types::HasSqlType;
use diesel::sql_types::{
    Array, BigInt, Bool, Bytea, Float, Integer, Jsonb, Nullable, SmallInt, Text, Timestamptz,
};
use fleetdesk_kernel::TextValue;

/// Declares the row type of a raw SQL statement: the struct as written, with
/// `#[derive(QueryableByName)]` added, each field read as the SQL type its Rust type is stored
/// as ([`SqlOf`]: a `String` from `text`, an `Option<T>` from a nullable `T`, a [`Stored`]
/// enum from `text`), and (in test builds) an implementation of [`Row`] that names each
/// field's column and its PostgreSQL type. A field may state its type instead
/// (`#[diesel(sql_type = ..)]`, the only key of its attribute); an `#[diesel(embed)]` field
/// contributes its own row's columns. A field's column is its name, and a field's own
/// attributes are its documentation and these. An embedded row may be optional
/// (`#[diesel(embed)] pending: Option<PendingRow>`): none when a column it reads as not null
/// is null.
///
/// `struct ARow into A { .. }` also reads the row straight into the domain type `A`, whose
/// fields are the row's: `From<ARow> for A` converts each field ([`Field`]) and each embedded
/// row (`From`, inside its `Option`), so the field list is written once.
///
/// ```ignore
/// row! {
///     #[derive(Clone)]
///     struct KeyRow {
///         id: Uuid,
///         label: Option<String>,
///     }
/// }
/// ```
macro_rules! row {
    (
        $(#[$($attr:tt)*])*
        $vis:vis struct $name:ident into $domain:ty { $($fields:tt)* }
    ) => {
        row!($(#[$($attr)*])* $vis struct $name { $($fields)* });

        impl From<$name> for $domain {
            fn from(row: $name) -> Self {
                row!(@into row [] $($fields)*)
            }
        }
    };
    (
        $(#[$($attr:tt)*])*
        $vis:vis struct $name:ident { $($fields:tt)* }
    ) => {
        row!(@struct [$(#[$($attr)*])* $vis struct $name] [] $($fields)*);

        #[cfg(any(test, feature = "testing"))]
        impl $crate::rows::Row for $name {
            fn columns() -> Vec<$crate::rows::Column> {
                row!(@columns [] $($fields)*)
            }
        }
    };
    (@struct [$($head:tt)*] [$($out:tt)*]
        $(#[doc = $doc:literal])* #[diesel(embed)] $fvis:vis $field:ident : $ty:ty
        $(, $($rest:tt)*)?
    ) => {
        row!(@struct [$($head)*] [$($out)* $(#[doc = $doc])* #[diesel(embed)] $fvis $field: $ty,]
            $($($rest)*)?);
    };
    (@struct [$($head:tt)*] [$($out:tt)*]
        $(#[doc = $doc:literal])* #[diesel(sql_type = $sql:ty)] $fvis:vis $field:ident : $ty:ty
        $(, $($rest:tt)*)?
    ) => {
        row!(@struct [$($head)*]
            [$($out)* $(#[doc = $doc])* #[diesel(sql_type = $sql)] $fvis $field: $ty,]
            $($($rest)*)?);
    };
    (@struct [$($head:tt)*] [$($out:tt)*]
        $(#[doc = $doc:literal])* $fvis:vis $field:ident : $ty:ty
        $(, $($rest:tt)*)?
    ) => {
        row!(@struct [$($head)*]
            [$($out)* $(#[doc = $doc])*
                #[diesel(sql_type = <$ty as $crate::rows::SqlOf>::Sql)] $fvis $field: $ty,]
            $($($rest)*)?);
    };
    (@struct [$($head:tt)*] [$($out:tt)*]) => {
        #[derive(diesel::QueryableByName)]
        $($head)* { $($out)* }
    };
    (@columns [$($out:expr),*]
        $(#[doc = $doc:literal])* #[diesel(embed)] $fvis:vis $field:ident : $ty:ty
        $(, $($rest:tt)*)?
    ) => {
        row!(@columns [$($out,)* <$ty as $crate::rows::Row>::columns()] $($($rest)*)?)
    };
    (@columns [$($out:expr),*]
        $(#[doc = $doc:literal])* #[diesel(sql_type = $sql:ty)] $fvis:vis $field:ident : $ty:ty
        $(, $($rest:tt)*)?
    ) => {
        row!(@columns
            [$($out,)* vec![$crate::rows::Column::of::<$sql>(stringify!($field))]]
            $($($rest)*)?)
    };
    (@columns [$($out:expr),*]
        $(#[doc = $doc:literal])* $fvis:vis $field:ident : $ty:ty
        $(, $($rest:tt)*)?
    ) => {
        row!(@columns
            [$($out,)* vec![$crate::rows::Column::of::<<$ty as $crate::rows::SqlOf>::Sql>(
                stringify!($field),
            )]]
            $($($rest)*)?)
    };
    (@columns [$($out:expr),*]) => {
        [$($out),*].concat()
    };
    (@into $row:ident [$($out:tt)*]
        $(#[doc = $doc:literal])* #[diesel(embed)] $fvis:vis $field:ident : Option<$ty:ty>
        $(, $($rest:tt)*)?
    ) => {
        row!(@into $row [$($out)* $field: $row.$field.map(Into::into),] $($($rest)*)?)
    };
    (@into $row:ident [$($out:tt)*]
        $(#[doc = $doc:literal])* #[diesel(embed)] $fvis:vis $field:ident : $ty:ty
        $(, $($rest:tt)*)?
    ) => {
        row!(@into $row [$($out)* $field: $row.$field.into(),] $($($rest)*)?)
    };
    (@into $row:ident [$($out:tt)*]
        $(#[$($fattr:tt)*])* $fvis:vis $field:ident : $ty:ty
        $(, $($rest:tt)*)?
    ) => {
        row!(@into $row [$($out)* $field: $crate::rows::Field::field($row.$field),]
            $($($rest)*)?)
    };
    (@into $row:ident [$($out:tt)*]) => {
        Self { $($out)* }
    };
}

/// A struct diesel's query builder selects from one table (`Queryable` and `Selectable`
/// derived), read straight into its domain type as [`row!`]'s `into` reads a raw row:
/// `selectable! { #[diesel(table_name = t)] struct ARow into A { .. } }`. A field may name
/// its column (`#[diesel(column_name = c)]`) where the domain's name differs.
macro_rules! selectable {
    (
        $(#[doc = $doc:literal])*
        #[diesel(table_name = $table:path)]
        $vis:vis struct $name:ident into $domain:ty { $($fields:tt)* }
    ) => {
        $(#[doc = $doc])*
        #[derive(diesel::Queryable, diesel::Selectable)]
        #[diesel(table_name = $table, check_for_backend(diesel::pg::Pg))]
        $vis struct $name { $($fields)* }

        impl From<$name> for $domain {
            fn from(row: $name) -> Self {
                row!(@into row [] $($fields)*)
            }
        }
    };
}

/// The SQL type a row field of this Rust type is read as, and a value of it is bound as: each
/// Rust type is stored one way, so a [`row!`] field and a [`sql!`] argument name no SQL type.
pub(crate) trait SqlOf {
    type Sql: Send + 'static;
}

/// A statement [`sql!`] binds its arguments to. Boxed, so that each bind keeps its type (diesel
/// names the unboxed one only inside itself); a constant one is still kept prepared
/// ([`crate::db::prepared`]).
pub(crate) type Statement<'f> = BoxedSqlQuery<'f, Pg, SqlQuery>;

/// `query` with `value` bound as its next parameter, as the SQL type its Rust type is stored as.
pub(crate) fn bind<'f, V>(query: Statement<'f>, value: V) -> Statement<'f>
where
    V: SqlOf + ToSql<V::Sql, Pg> + Send + 'f,
    Pg: HasSqlType<V::Sql>,
{
    query.bind::<V::Sql, V>(value)
}

/// `Rust => SQL` pairs of [`SqlOf`]; each Rust type is also its own domain [`Field`].
macro_rules! sql_of {
    ($($rust:ty => $sql:ty),* $(,)?) => {
        $(impl SqlOf for $rust {
            type Sql = $sql;
        }

        impl Field<$rust> for $rust {
            fn field(self) -> $rust {
                self
            }
        })*
    };
}

/// How a row field becomes the field of the domain type a row is read into
/// (`row! { struct ARow into A { .. } }`): a plain value is itself, a stored time is a
/// `jiff::Timestamp` (a date a `jiff::civil::Date`), a [`Stored`] text is its enum, a [`Json`] document its value.
pub(crate) trait Field<T> {
    fn field(self) -> T;
}

impl Field<jiff::Timestamp> for jiff_diesel::Timestamp {
    fn field(self) -> jiff::Timestamp {
        self.into()
    }
}

impl Field<jiff::civil::Date> for jiff_diesel::Date {
    fn field(self) -> jiff::civil::Date {
        self.into()
    }
}

impl<T: TextValue> Field<T> for Stored<T> {
    fn field(self) -> T {
        self.0
    }
}

impl<T> Field<T> for Json<T> {
    fn field(self) -> T {
        self.0
    }
}

/// An amount of money read as its cents (`(amount * 100)::int8`).
impl Field<fleetdesk_kernel::money::Cents> for i64 {
    fn field(self) -> fleetdesk_kernel::money::Cents {
        fleetdesk_kernel::money::Cents(self)
    }
}

/// A knowledge-base entry's vector, as stored: a byte per component.
impl Field<fleetdesk_wiki::meaning::Embedding> for Vec<u8> {
    fn field(self) -> fleetdesk_wiki::meaning::Embedding {
        fleetdesk_wiki::meaning::Embedding::from_bytes(&self)
    }
}

impl<A: Field<B>, B> Field<Option<B>> for Option<A> {
    fn field(self) -> Option<B> {
        self.map(Field::field)
    }
}

sql_of! {
    String => Text,
    bool => Bool,
    i16 => SmallInt,
    i32 => Integer,
    i64 => BigInt,
    f32 => Float,
    f64 => diesel::sql_types::Double,
    uuid::Uuid => diesel::sql_types::Uuid,
    jiff_diesel::Timestamp => Timestamptz,
    jiff_diesel::Date => diesel::sql_types::Date,
    jiff_diesel::NullableDate => Nullable<diesel::sql_types::Date>,
    serde_json::Value => Jsonb,
    Vec<u8> => Bytea,
}

/// Values that are bound, never read into a row: a borrowed value is bound as its owner, a list
/// as an array of its items' type.
impl SqlOf for str {
    type Sql = Text;
}

impl SqlOf for [u8] {
    type Sql = Bytea;
}

impl<T: SqlOf + ?Sized> SqlOf for &T {
    type Sql = T::Sql;
}

impl<T: SqlOf> SqlOf for [T] {
    type Sql = Array<T::Sql>;
}

impl<T: SqlOf, const N: usize> SqlOf for [T; N] {
    type Sql = Array<T::Sql>;
}

impl<T: SqlOf> SqlOf for Vec<T> {
    type Sql = Array<T::Sql>;
}

impl<T: Field<T>> Field<Vec<T>> for Vec<T> {
    fn field(self) -> Vec<T> {
        self
    }
}

impl<T: SqlOf> SqlOf for Option<T> {
    type Sql = Nullable<T::Sql>;
}

impl<T: TextValue> SqlOf for Stored<T> {
    type Sql = Text;
}

impl<T> SqlOf for Json<T> {
    type Sql = Jsonb;
}

/// A text column holding one of `T`'s texts (a status, a kind), read as `T` itself: a row
/// field of this type needs no parsing after the load, and a text no variant has fails the
/// load naming the type and the text.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Stored<T>(pub T);

impl<T: TextValue> FromSql<Text, Pg> for Stored<T> {
    fn from_sql(value: PgValue<'_>) -> deserialize::Result<Self> {
        let text = <String as FromSql<Text, Pg>>::from_sql(value)?;
        T::from_text(&text)
            .map(Stored)
            .ok_or_else(|| format!("stored {} {text:?}", std::any::type_name::<T>()).into())
    }
}

impl<T: TextValue> Queryable<Text, Pg> for Stored<T> {
    type Row = Self;

    fn build(row: Self) -> deserialize::Result<Self> {
        Ok(row)
    }
}

/// A `jsonb` column holding a `T` as serde writes it, read as `T` itself; a document that is
/// not one fails the load naming the type.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Json<T>(pub T);

impl<T: serde::de::DeserializeOwned> FromSql<Jsonb, Pg> for Json<T> {
    fn from_sql(value: PgValue<'_>) -> deserialize::Result<Self> {
        let json = <serde_json::Value as FromSql<Jsonb, Pg>>::from_sql(value)?;
        serde_json::from_value(json)
            .map(Json)
            .map_err(|e| format!("stored {}: {e}", std::any::type_name::<T>()).into())
    }
}

impl<T: serde::de::DeserializeOwned> Queryable<Jsonb, Pg> for Json<T> {
    type Row = Self;

    fn build(row: Self) -> deserialize::Result<Self> {
        Ok(row)
    }
}

#[cfg(any(test, feature = "testing"))]
pub use check::{Column, Row, RowCheck};

#[cfg(any(test, feature = "testing"))]
mod check {
    use diesel::pg::{Pg, PgMetadataLookup, PgTypeMetadata};
    use diesel::sql_types::HasSqlType;

    /// A struct declared with [`row!`]: the columns it reads, in field order.
    pub trait Row {
        fn columns() -> Vec<Column>;
    }

    /// An optional embedded row reads its row's columns.
    impl<T: Row> Row for Option<T> {
        fn columns() -> Vec<Column> {
            T::columns()
        }
    }

    /// One column a row type reads.
    #[derive(Debug, Clone, PartialEq, Eq)]
    pub struct Column {
        /// The field's name, which is the column's.
        pub name: &'static str,
        /// The OID of the field's SQL type as diesel sends it to PostgreSQL (`Nullable<T>`'s
        /// is `T`'s); `None` for a type diesel has to look up by name (none of the row types'
        /// so far), which a test cannot check without a connection.
        pub oid: Option<u32>,
        /// The field's diesel SQL type, for messages.
        pub sql_type: &'static str,
    }

    impl Column {
        pub fn of<ST>(name: &'static str) -> Column
        where
            Pg: HasSqlType<ST>,
        {
            let mut lookup = BuiltIn { asked: false };
            let metadata = <Pg as HasSqlType<ST>>::metadata(&mut lookup);
            Column {
                name,
                oid: if lookup.asked {
                    None
                } else {
                    metadata.oid().ok()
                },
                sql_type: std::any::type_name::<ST>(),
            }
        }
    }

    /// A lookup for built-in types only: their OIDs are constants of their diesel types, so
    /// diesel never asks; a type it asks about is one defined in the database.
    struct BuiltIn {
        asked: bool,
    }

    impl PgMetadataLookup for BuiltIn {
        fn lookup_type(&mut self, _type_name: &str, _schema: Option<&str>) -> PgTypeMetadata {
            self.asked = true;
            PgTypeMetadata::new(0, 0)
        }
    }

    /// A statement paired with the row type it is loaded into.
    #[derive(Debug, Clone)]
    pub struct RowCheck {
        /// `fleetdesk_pg::module::NAME`, as [`crate::all_statements`] names it.
        pub statement: &'static str,
        pub sql: &'static str,
        /// The row type's name, for messages.
        pub row: &'static str,
        pub columns: Vec<Column>,
    }

    impl RowCheck {
        pub fn new<R: Row>(statement: &'static str, sql: &'static str) -> RowCheck {
            RowCheck {
                statement,
                sql,
                row: std::any::type_name::<R>(),
                columns: R::columns(),
            }
        }
    }

    #[cfg(test)]
    mod tests {
        use super::*;
        // The derive's code for an `#[diesel(embed)]` field names the trait unqualified.
        use diesel::QueryableByName;
        use diesel::sql_types::{Array, BigInt, Jsonb, Nullable, Text, Uuid};

        #[test]
        fn a_columns_oid_is_its_sql_types() {
            assert_eq!(Column::of::<Text>("a").oid, Some(25));
            assert_eq!(Column::of::<BigInt>("a").oid, Some(20));
            assert_eq!(Column::of::<Uuid>("a").oid, Some(2950));
            assert_eq!(Column::of::<Jsonb>("a").oid, Some(3802));
            // text[] and uuid[]
            assert_eq!(Column::of::<Array<Text>>("a").oid, Some(1009));
            assert_eq!(Column::of::<Nullable<Array<Uuid>>>("a").oid, Some(2951));
            assert_eq!(Column::of::<Nullable<Text>>("a").oid, Some(25));
            assert_eq!(
                Column::of::<crate::schema::sql_types::Tsvector>("a").oid,
                None
            );
        }

        row! {
            #[derive(Debug)]
            #[allow(dead_code)]
            struct Inner {
                code: String,
                /// A field may state its SQL type rather than have its Rust type's.
                #[diesel(sql_type = diesel::sql_types::Jsonb)]
                detail: serde_json::Value,
            }
        }

        row! {
            /// Documented, with another derive.
            #[derive(Debug)]
            #[allow(dead_code)]
            struct Outer {
                /// A field's own documentation comes first.
                pub(crate) count: Option<i64>,
                #[diesel(embed)]
                inner: Inner,
            }
        }

        #[test]
        fn a_row_reads_its_fields_and_its_embedded_rows_columns() {
            // Fields without an attribute are read as their Rust type's SQL type.
            let names: Vec<_> = Outer::columns()
                .into_iter()
                .map(|c| (c.name, c.oid))
                .collect();
            // bigint, text, jsonb
            assert_eq!(
                names,
                [
                    ("count", Some(20)),
                    ("code", Some(25)),
                    ("detail", Some(3802))
                ]
            );
        }
    }
}

/// A `jsonb` column read as [`Json`] does, except that a document that is not a `T` reads as
/// `T::default()` rather than failing the load (a post's `characters`).
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct JsonOrDefault<T>(pub T);

impl<T: serde::de::DeserializeOwned + Default> FromSql<Jsonb, Pg> for JsonOrDefault<T> {
    fn from_sql(value: PgValue<'_>) -> deserialize::Result<Self> {
        let json = <serde_json::Value as FromSql<Jsonb, Pg>>::from_sql(value)?;
        Ok(JsonOrDefault(
            serde_json::from_value(json).unwrap_or_default(),
        ))
    }
}

impl<T: serde::de::DeserializeOwned + Default> Queryable<Jsonb, Pg> for JsonOrDefault<T> {
    type Row = Self;

    fn build(row: Self) -> deserialize::Result<Self> {
        Ok(row)
    }
}

impl<T> SqlOf for JsonOrDefault<T> {
    type Sql = Jsonb;
}

impl<T> Field<T> for JsonOrDefault<T> {
    fn field(self) -> T {
        self.0
    }
}
