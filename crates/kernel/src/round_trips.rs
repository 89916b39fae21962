//! Per-request counters: how many SQL round trips one request made.
//!
//! The PostgreSQL adapter calls [`record_round_trip`] for every statement it sends; a transport
//! wraps each request in [`counting`] to read the total (the benchmark and the tests read it
//! from the `X-Db-Round-Trips` header when the server is started with it enabled). It lives in
//! the kernel, behind the `round-trips` feature, so the adapter that counts and the one that
//! reads share it without depending on each other or on the application layer.

use std::cell::Cell;
use std::future::Future;

tokio::task_local! {
    static ROUND_TRIPS: Cell<u32>;
}

/// Counts one round trip for the request running on this task, if any.
pub fn record_round_trip() {
    let _ = ROUND_TRIPS.try_with(|c| c.set(c.get() + 1));
}

/// Counts round trips another task made for the request running on this task.
pub fn record_round_trips(n: u32) {
    let _ = ROUND_TRIPS.try_with(|c| c.set(c.get() + n));
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

#[cfg(test)]
mod tests {
    use super::*;

    fn block_on<F: Future>(f: F) -> F::Output {
        tokio::runtime::Builder::new_current_thread()
            .build()
            .expect("runtime")
            .block_on(f)
    }

    #[test]
    fn counts_the_round_trips_of_its_own_task_only() {
        let (trips, out) = block_on(counting(async {
            record_round_trip();
            record_round_trip();
            "done"
        }));
        assert_eq!((trips, out), (2, "done"));
        let (outer, inner) = block_on(counting(async {
            record_round_trip();
            counting(async { record_round_trip() }).await.0
        }));
        assert_eq!((outer, inner), (1, 1), "a nested scope counts apart");
    }

    #[test]
    fn outside_a_request_nothing_is_counted() {
        record_round_trip();
        let (trips, ()) = block_on(counting(async {}));
        assert_eq!(trips, 0);
    }
}
