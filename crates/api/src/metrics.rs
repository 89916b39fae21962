//! Per-request counters: how many SQL round trips one request made.
//!
//! The PostgreSQL adapter calls [`record_round_trip`] for every statement it sends; a transport
//! wraps each request in [`counting`] to read the total (the benchmark and the tests read it
//! from the `X-Db-Round-Trips` header when the server is started with it enabled).

use std::cell::Cell;
use std::future::Future;

tokio::task_local! {
    static ROUND_TRIPS: Cell<u32>;
}

/// Counts one round trip for the request running on this task, if any.
pub fn record_round_trip() {
    let _ = ROUND_TRIPS.try_with(|c| c.set(c.get() + 1));
}

/// Runs `f`, returning its output and the round trips it made.
pub async fn counting<F: Future>(f: F) -> (u32, F::Output) {
    ROUND_TRIPS
        .scope(Cell::new(0), async move {
            let out = f.await;
            (ROUND_TRIPS.with(Cell::get), out)
        })
        .await
}
