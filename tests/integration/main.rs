//! All integration tests in one target: real PostgreSQL (a schema or a database per test), real
//! HTTP.

mod accounts;
mod agent_day;
mod binary;
mod cli;
mod decisions;
mod drafts;
mod edge;
mod generated_client;
mod inventory;
mod mcp;
mod media;
mod media_thumbs;
mod migrations;
mod openapi_parity;
mod persona_scenario;
mod personas;
mod pipeline;
mod readme;
mod reports;
mod review;
mod schemathesis;
mod secrets;
mod tenancy;
mod uploads;
mod uploads_s3;
