//! Benchmarks of the real binary, each against a database of its own on the machine's
//! PostgreSQL: `cargo xtask bench [upload|lifecycle|today|wiki|events] [--help]` (xtask
//! forwards to this binary).
//!
//! - no subcommand: the load benchmark (load.rs, beside pgbench: pgbench.rs), then the upload
//!   benchmark;
//! - `upload`: only the upload benchmark (upload.rs);
//! - `lifecycle`: report_posts and work_today (lifecycle.rs);
//! - `today`: the person's day, GET /today (today.rs);
//! - `wiki`: knowledge-base search, GET /wiki/search over 10,000 entries (wiki.rs);
//! - `events`: the event log's cost on POST /drafts, its long-poll feed and webhook delivery
//!   (events.rs).
//!
//! harness.rs holds what they share (database, server, tenant, CPU counters, the counting
//! PostgreSQL proxy, flags), http.rs the one HTTP/1.1 client, and wrk.rs drives `wrk`, a second,
//! independent one.

mod events;
mod harness;
mod http;
mod lifecycle;
mod load;
mod pgbench;
mod today;
mod upload;
mod wiki;
mod wrk;

fn main() -> anyhow::Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match args.first().map(String::as_str) {
        Some("upload") => upload::main(&args[1..]),
        Some("lifecycle") => lifecycle::main(&args[1..]),
        Some("today") => today::main(&args[1..]),
        Some("wiki") => wiki::main(&args[1..]),
        Some("events") => events::main(&args[1..]),
        _ => load::main(&args),
    }
}
