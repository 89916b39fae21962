//! PostgreSQL adapter: the connection pool, embedded migrations, and every repository port.
//!
//! One transaction per use case lives here, never in domain code. Expected outcomes (a code
//! taken, a refused key) are values; `anyhow::Error` means the database failed.

/// Lists a module's SQL constants: `statements!(A, B)` defines `statements()`, the
/// `("fleetdesk_pg::module::NAME", sql)` pairs that [`all_statements`] collects.
macro_rules! statements {
    ($($name:ident),* $(,)?) => {
        pub(crate) fn statements() -> Vec<(&'static str, &'static str)> {
            vec![$((concat!(module_path!(), "::", stringify!($name)), $name)),*]
        }
    };
}

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
