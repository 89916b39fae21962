//! The row types of raw SQL. A statement that must stay SQL (a CTE, `unnest`) is loaded into
//! a struct declared with [`row!`]: the struct derives `QueryableByName` as before and, in test
//! builds, also says which columns it reads ([`Row::columns`]). Each module pairs its
//! statements with their row types (`statements!(LIST => ListRow, ..)`), and
//! `crates/pg/tests/statements.rs` compares every pair with the columns PostgreSQL describes for
//! the statement: names and types, not nullability.

/// Declares the row type of a raw SQL statement: the struct as written, with
/// `#[derive(QueryableByName)]` added, and (in test builds) an implementation of [`Row`] that
/// names each field's column and its PostgreSQL type, read from the field's
/// `#[diesel(sql_type = ..)]` (`Nullable<T>` is `T`); an `#[diesel(embed)]` field contributes
/// its own row's columns. A field's column is its name: `column_name` is not read (no row
/// uses it), and `sql_type` must be the only key of its `diesel` attribute.
///
/// ```ignore
/// row! {
///     #[derive(Clone)]
///     struct KeyRow {
///         #[diesel(sql_type = SqlUuid)]
///         id: Uuid,
///         #[diesel(sql_type = Nullable<Text>)]
///         label: Option<String>,
///     }
/// }
/// ```
macro_rules! row {
    (
        $(#[$($attr:tt)*])*
        $vis:vis struct $name:ident {
            $(
                $(#[$($field_attr:tt)*])*
                $field_vis:vis $field:ident : $field_ty:ty
            ),* $(,)?
        }
    ) => {
        #[derive(diesel::QueryableByName)]
        $(#[$($attr)*])*
        $vis struct $name {
            $(
                $(#[$($field_attr)*])*
                $field_vis $field: $field_ty,
            )*
        }

        #[cfg(any(test, feature = "testing"))]
        impl $crate::rows::Row for $name {
            fn columns() -> Vec<$crate::rows::Column> {
                [$( row!(@column $field, $field_ty; $(#[$($field_attr)*])*) ),*].concat()
            }
        }
    };
    (@column $field:ident, $ty:ty; #[diesel(sql_type = $sql_type:ty)] $($rest:tt)*) => {
        vec![$crate::rows::Column::of::<$sql_type>(stringify!($field))]
    };
    (@column $field:ident, $ty:ty; #[diesel(embed)] $($rest:tt)*) => {
        <$ty as $crate::rows::Row>::columns()
    };
    (@column $field:ident, $ty:ty; #[$($other:tt)*] $($rest:tt)*) => {
        row!(@column $field, $ty; $($rest)*)
    };
    (@column $field:ident, $ty:ty;) => {
        compile_error!(concat!(
            "row!: the field `",
            stringify!($field),
            "` needs #[diesel(sql_type = ..)] or #[diesel(embed)]"
        ))
    };
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
                #[diesel(sql_type = Text)]
                code: String,
            }
        }

        row! {
            /// Documented, with another derive.
            #[derive(Debug)]
            #[allow(dead_code)]
            struct Outer {
                /// A field's own documentation comes first.
                #[diesel(sql_type = Nullable<BigInt>)]
                pub(crate) count: Option<i64>,
                #[diesel(embed)]
                inner: Inner,
            }
        }

        #[test]
        fn a_row_reads_its_fields_and_its_embedded_rows_columns() {
            let names: Vec<_> = Outer::columns()
                .into_iter()
                .map(|c| (c.name, c.oid))
                .collect();
            assert_eq!(names, [("count", Some(20)), ("code", Some(25))]);
        }
    }
}
