//! PostgreSQL adapter: the connection pool, embedded migrations, and every repository port.
//!
//! One transaction per use case lives here, never in domain code. Expected outcomes (a code
//! taken, a refused key) are values; `anyhow::Error` means the database failed.

/// Lists a module's SQL constants: `statements!(A, B => BRow)` defines `statements()`, the
/// `("fleetdesk_pg::module::NAME", sql)` pairs that [`all_statements`] collects, and, in test
/// builds, `row_checks()`: each statement loaded into a row type (declared with [`row!`]) paired
/// with it once, for [`all_row_checks`].
macro_rules! statements {
    ($($name:ident $(=> $row:ty)?),* $(,)?) => {
        pub(crate) fn statements() -> Vec<(&'static str, &'static str)> {
            vec![$((concat!(module_path!(), "::", stringify!($name)), $name)),*]
        }

        #[cfg(any(test, feature = "testing"))]
        pub(crate) fn row_checks() -> Vec<$crate::rows::RowCheck> {
            vec![$($($crate::rows::RowCheck::new::<$row>(
                concat!(module_path!(), "::", stringify!($name)),
                $name,
            ),)?)*]
        }
    };
}

/// A constant SQL statement ([`db::prepared`]) with its arguments bound in order, each as the
/// SQL type its Rust type is stored as ([`rows::SqlOf`]): `sql!(LIST, workspace, limit + 1)`.
/// An integer literal is typed (`1_i64`), as its SQL type follows from it. It is one
/// expression, so a temporary an argument borrows lives as long as the statement it is in.
///
/// `sql!(fresh CLAIM, ..)` is the same statement planned afresh on every execution (not kept
/// in the connection's statement cache): for a statement over a table whose size swings (a
/// queue), whose cached plan, made while the table was small, could stay long after it grew,
/// and for a ranking statement, whose best plan depends on how many entries its words are in
/// (a generic plan cannot know).
macro_rules! sql {
    (@bind $query:expr, $arg:expr $(, $rest:expr)*) => {
        sql!(@bind $crate::rows::bind($query, $arg) $(, $rest)*)
    };
    (@bind $query:expr) => {
        $query
    };
    (fresh $statement:expr $(, $arg:expr)* $(,)?) => {
        sql!(@bind diesel::sql_query($statement).into_boxed::<diesel::pg::Pg>() $(, $arg)*)
    };
    ($statement:expr $(, $arg:expr)* $(,)?) => {
        $crate::db::prepared(sql!(
            @bind diesel::sql_query($statement).into_boxed::<diesel::pg::Pg>() $(, $arg)*
        ))
    };
}

/// The latest elements of a JSON array column (`$column`, a list of notes oldest first), as
/// many as the parameter `$p` says, oldest first: in a list, only they leave the database.
macro_rules! latest_notes {
    ($column:literal, $p:literal) => {
        concat!(
            "jsonb_path_query_array(",
            $column,
            ", '$[last - $n + 1 to last]', jsonb_build_object('n', ",
            $p,
            "::int))"
        )
    };
}

#[macro_use]
mod rows;

mod db;
pub mod schema;
#[cfg(feature = "testing")]
pub mod testing;

/// Collects the `statements!` lists of the modules that implement ports: [`all_statements`]
/// and, in test builds, [`all_row_checks`]. (The modules are declared outside the macro, where
/// rustfmt finds them.)
macro_rules! port_modules {
    ($($module:ident),* $(,)?) => {

        /// Every constant SQL statement of the adapter as `("fleetdesk_pg::module::NAME", sql)`,
        /// so a test can prepare each against the migrated schema.
        #[doc(hidden)]
        pub fn all_statements() -> Vec<(&'static str, &'static str)> {
            [$($module::statements()),*].concat()
        }

        /// Every statement loaded into a row type, paired with it, so a test can compare the
        /// row's columns with what PostgreSQL describes for the statement.
        #[cfg(any(test, feature = "testing"))]
        #[doc(hidden)]
        pub fn all_row_checks() -> Vec<RowCheck> {
            [$($module::row_checks()),*].concat()
        }
    };
}

mod accounts;
mod ad_changes;
mod ad_picks;
mod ads;
mod community;
mod cron;
mod decisions;
mod drafts;
mod events;
mod gate;
mod health;
mod instance;
mod inventory;
mod jobs;
mod keys;
mod lifecycle;
mod media;
mod personas;
mod projects;
mod record;
mod reports;
mod reports_metrics;
mod silence;
mod tasks;
mod tenancy;
mod today;
mod webhooks;
mod wiki;
mod wiki_sources;

port_modules![
    accounts,
    ad_changes,
    ad_picks,
    ads,
    community,
    cron,
    decisions,
    drafts,
    events,
    gate,
    health,
    instance,
    inventory,
    jobs,
    keys,
    lifecycle,
    media,
    personas,
    projects,
    record,
    reports,
    reports_metrics,
    tasks,
    tenancy,
    today,
    webhooks,
    wiki,
    wiki_sources,
];

pub use db::{PgPool, PgStore, connect, migrate};

#[cfg(any(test, feature = "testing"))]
#[doc(hidden)]
pub use rows::{Column, RowCheck};
