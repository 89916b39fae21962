//! All integration tests in one target: real PostgreSQL (a schema or a database per test), real
//! HTTP.

mod accounts;
mod agent_day;
mod binary;
mod cli;
mod drafts;
mod edge;
mod generated_client;
mod inventory;
mod mcp;
mod media;
mod migrations;
mod openapi_parity;
mod pipeline;
mod readme;
mod reports;
mod review;
mod schemathesis;
mod secrets;
mod tenancy;
mod uploads;
mod uploads_s3;
