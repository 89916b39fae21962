//! PostgreSQL adapter: the connection pool, embedded migrations, and every repository port.
//!
//! One transaction per use case lives here, never in domain code. Expected outcomes (a code
//! taken, a refused key) are values; `anyhow::Error` means the database failed.

mod accounts;
mod db;
mod drafts;
mod gate;
mod inventory;
mod lifecycle;
mod media;
mod record;
mod tenancy;
#[cfg(feature = "testing")]
pub mod testing;

pub use db::{PgPool, PgStore, connect, migrate};
