//! All integration tests in one target: real PostgreSQL (a database per test), real HTTP.

mod accounts;
mod agent_day;
mod binary;
mod drafts;
mod generated_client;
mod inventory;
mod mcp;
mod media;
mod migrations;
mod openapi_parity;
mod pipeline;
mod reports;
mod review;
mod tenancy;
mod uploads;
mod uploads_s3;
