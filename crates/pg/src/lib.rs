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

#[macro_use]
mod rows;

mod accounts;
mod ad_changes;
mod ad_picks;
mod ads;
mod community;
mod cron;
mod db;
mod decisions;
mod drafts;
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
pub mod schema;
mod tasks;
mod tenancy;
#[cfg(feature = "testing")]
pub mod testing;
mod today;
mod wiki;
mod wiki_sources;

pub use db::{PgPool, PgStore, connect, migrate};
pub use tenancy::KeyHolder;

#[cfg(any(test, feature = "testing"))]
#[doc(hidden)]
pub use rows::{Column, RowCheck};

/// Every constant SQL statement of the adapter as `("fleetdesk_pg::module::NAME", sql)`, so a
/// test can prepare each against the migrated schema. Each module lists its own constants.
#[doc(hidden)]
pub fn all_statements() -> Vec<(&'static str, &'static str)> {
    [
        accounts::statements(),
        ad_changes::statements(),
        ad_picks::statements(),
        ads::statements(),
        community::statements(),
        cron::statements(),
        decisions::statements(),
        drafts::statements(),
        gate::statements(),
        health::statements(),
        instance::statements(),
        inventory::statements(),
        jobs::statements(),
        keys::statements(),
        lifecycle::statements(),
        media::statements(),
        personas::statements(),
        projects::statements(),
        record::statements(),
        reports::statements(),
        reports_metrics::statements(),
        tasks::statements(),
        tenancy::statements(),
        today::statements(),
        wiki::statements(),
        wiki_sources::statements(),
    ]
    .concat()
}

/// Every statement loaded into a row type, paired with it (each module's `statements!` list), so
/// a test can compare the row's columns with what PostgreSQL describes for the statement.
#[cfg(any(test, feature = "testing"))]
#[doc(hidden)]
pub fn all_row_checks() -> Vec<RowCheck> {
    [
        accounts::row_checks(),
        ad_changes::row_checks(),
        ad_picks::row_checks(),
        ads::row_checks(),
        community::row_checks(),
        cron::row_checks(),
        decisions::row_checks(),
        drafts::row_checks(),
        gate::row_checks(),
        health::row_checks(),
        instance::row_checks(),
        inventory::row_checks(),
        jobs::row_checks(),
        keys::row_checks(),
        lifecycle::row_checks(),
        media::row_checks(),
        personas::row_checks(),
        projects::row_checks(),
        record::row_checks(),
        reports::row_checks(),
        reports_metrics::row_checks(),
        tasks::row_checks(),
        tenancy::row_checks(),
        today::row_checks(),
        wiki::row_checks(),
        wiki_sources::row_checks(),
    ]
    .concat()
}
