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

/// What one test's isolation costs, made and dropped: `cargo nextest run -p fleetdesk_tests
/// --run-ignored only -E 'test(isolation_cost)' --no-capture`.
#[tokio::test(flavor = "multi_thread")]
#[ignore = "a measurement, not a check"]
async fn isolation_cost() {
    use fleetdesk_pg::testing::{Isolation, TestDb};
    use std::time::Instant;
    let runs = 10;
    for isolation in [Isolation::Database, Isolation::Schema] {
        // A first one outside the timing, so the template and shared database exist.
        drop(TestDb::isolated(isolation).await.expect("a test database"));
        let (mut made, mut dropped) = (Vec::new(), Vec::new());
        for _ in 0..runs {
            let start = Instant::now();
            let db = TestDb::isolated(isolation).await.expect("a test database");
            made.push(start.elapsed().as_millis());
            let start = Instant::now();
            drop(db);
            dropped.push(start.elapsed().as_millis());
        }
        made.sort();
        dropped.sort();
        println!(
            "{isolation:?}: made median {} ms {made:?}, dropped median {} ms {dropped:?}",
            made[runs / 2],
            dropped[runs / 2]
        );
    }
}
