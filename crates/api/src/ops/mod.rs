//! The operations, one module per area of the specification.

pub mod accounts;
pub mod common;
pub mod drafts;
pub mod inventory;
pub mod media;
pub mod personal;
pub mod posts;
