//! All integration tests in one target: real PostgreSQL (a database per test), real HTTP.

mod accounts;
mod binary;
mod mcp;
mod migrations;
mod openapi_parity;
mod pipeline;
mod tenancy;
