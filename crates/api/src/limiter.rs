//! This instance's side of the rate limit: the tokens it leased from each key's shared window
//! (`fleetdesk_tenancy::rate`), spent in memory. A request that finds tokens writes nothing;
//! the first one that finds none leases more for every request of that key waiting behind it.

use fleetdesk_tenancy::gate::Gatekeeper;
use fleetdesk_tenancy::rate::{Holding, Step};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Instant;
use uuid::Uuid;

pub use fleetdesk_tenancy::rate::Admit;

/// Held keys past which idle ones are dropped when another key arrives.
const KEEP_IDLE: usize = 1024;

#[derive(Debug)]
pub struct Limiter {
    /// The origin of this instance's clock for [`Holding`] (milliseconds since).
    origin: Instant,
    keys: Mutex<HashMap<Uuid, Arc<tokio::sync::Mutex<Holding>>>>,
}

impl Default for Limiter {
    fn default() -> Limiter {
        Limiter::new()
    }
}

impl Limiter {
    pub fn new() -> Limiter {
        Limiter {
            origin: Instant::now(),
            keys: Mutex::default(),
        }
    }

    /// This instance's clock, in milliseconds since the limiter was made.
    fn now(&self) -> i64 {
        i64::try_from(self.origin.elapsed().as_millis()).unwrap_or(i64::MAX)
    }

    fn held(&self, key_id: Uuid) -> Arc<tokio::sync::Mutex<Holding>> {
        let mut keys = self.keys.lock().unwrap_or_else(|e| e.into_inner());
        if !keys.contains_key(&key_id) && keys.len() >= KEEP_IDLE {
            let now = self.now();
            keys.retain(|_, held| held.try_lock().map_or(true, |h| !h.idle(now)));
        }
        keys.entry(key_id).or_default().clone()
    }

    /// Spends one token of `key_id`, leasing more through `gate` when none is left (the
    /// request that leases spends the first token; the key's other requests wait for it).
    pub async fn admit(
        &self,
        gate: &dyn Gatekeeper,
        key_id: Uuid,
        limit: i64,
    ) -> anyhow::Result<Admit> {
        let held = self.held(key_id);
        let mut held = held.lock().await;
        let asked_at = self.now();
        match held.admit(asked_at, limit) {
            Step::Answer(admit) => Ok(admit),
            Step::Lease(ask) => {
                let lease = gate.lease(key_id, ask).await?;
                Ok(held.leased(asked_at, &lease))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use fleetdesk_kernel::BoxFuture;
    use fleetdesk_tenancy::gate::{Claim, ClaimRequest};
    use fleetdesk_tenancy::rate::{Ask, Grants, Lease};
    use fleetdesk_tenancy::{Caller, ParsedKey};
    use std::sync::atomic::{AtomicI64, Ordering};
    use std::time::Duration;

    /// One key's shared window, as the database holds it, on a clock the test moves
    /// (milliseconds).
    struct Window {
        grants: Mutex<Grants>,
        now_ms: AtomicI64,
        leases: AtomicI64,
    }

    impl Window {
        fn new() -> Arc<Window> {
            Arc::new(Window {
                grants: Mutex::new(Grants::empty(0)),
                now_ms: AtomicI64::new(0),
                leases: AtomicI64::new(0),
            })
        }
    }

    impl Gatekeeper for Window {
        fn authenticate<'a>(
            &'a self,
            _: &'a ParsedKey,
        ) -> BoxFuture<'a, anyhow::Result<Option<Caller>>> {
            unimplemented!("the limiter never authenticates")
        }

        fn lease(&self, _: Uuid, ask: Ask) -> BoxFuture<'_, anyhow::Result<Lease>> {
            Box::pin(async move {
                self.leases.fetch_add(1, Ordering::Relaxed);
                let mut grants = self.grants.lock().unwrap();
                let (next, lease) = grants.lease(self.now_ms.load(Ordering::Relaxed), ask);
                *grants = next;
                Ok(lease)
            })
        }

        fn claim<'a>(
            &'a self,
            _: Uuid,
            _: &'a ClaimRequest,
        ) -> BoxFuture<'a, anyhow::Result<Claim>> {
            unimplemented!("the limiter never claims")
        }

        fn run_claimed<'a>(
            &'a self,
            _: Uuid,
            _: &'a str,
            _: BoxFuture<'a, fleetdesk_tenancy::gate::Settlement>,
        ) -> BoxFuture<'a, anyhow::Result<()>> {
            unimplemented!("the limiter never runs a claimed request")
        }

        fn release<'a>(&'a self, _: Uuid, _: &'a str) -> BoxFuture<'a, anyhow::Result<()>> {
            unimplemented!("the limiter never releases")
        }

        fn open_session<'a>(
            &'a self,
            _: &'a ParsedKey,
            _: &'a [u8; 32],
        ) -> BoxFuture<'a, anyhow::Result<Option<Caller>>> {
            unimplemented!("the limiter never signs in")
        }

        fn session<'a>(&'a self, _: &'a [u8; 32]) -> BoxFuture<'a, anyhow::Result<Option<Caller>>> {
            unimplemented!("the limiter never reads sessions")
        }

        fn close_session<'a>(&'a self, _: &'a [u8; 32]) -> BoxFuture<'a, anyhow::Result<()>> {
            unimplemented!("the limiter never signs out")
        }
    }

    /// Sends `requests` round-robin over `instances` limiters sharing one window.
    async fn burst(window: &Window, instances: usize, requests: usize, limit: i64) -> usize {
        let limiters: Vec<Limiter> = (0..instances).map(|_| Limiter::new()).collect();
        let key = Uuid::nil();
        let mut passed = 0;
        for i in 0..requests {
            if limiters[i % instances]
                .admit(window, key, limit)
                .await
                .unwrap()
                == Admit::Pass
            {
                passed += 1;
            }
        }
        passed
    }

    #[tokio::test]
    async fn a_burst_passes_the_limit_on_one_two_and_three_instances() {
        for instances in 1..=3 {
            let window = Window::new();
            assert_eq!(
                burst(&window, instances, 300, 120).await,
                120,
                "{instances} instances"
            );
        }
    }

    #[tokio::test]
    async fn a_busy_key_leases_rarely() {
        let window = Window::new();
        let passed = burst(&window, 1, 10_000, 1_000_000_000).await;
        assert_eq!(passed, 10_000);
        let leases = window.leases.load(Ordering::Relaxed);
        assert!(leases <= 14, "{leases} leases for 10000 requests");
    }

    #[tokio::test]
    async fn a_full_window_is_not_asked_again_before_its_retry_after() {
        let window = Window::new();
        let limiter = Limiter::new();
        let key = Uuid::nil();
        for _ in 0..3 {
            assert_eq!(
                limiter.admit(window.as_ref(), key, 3).await.unwrap(),
                Admit::Pass
            );
        }
        let refused = limiter.admit(window.as_ref(), key, 3).await.unwrap();
        let Admit::Refused {
            retry_after_seconds,
        } = refused
        else {
            panic!("the fourth of 3 passed");
        };
        assert!(
            (1..=62).contains(&retry_after_seconds),
            "{retry_after_seconds}"
        );
        let leases = window.leases.load(Ordering::Relaxed);
        for _ in 0..10 {
            assert!(matches!(
                limiter.admit(window.as_ref(), key, 3).await.unwrap(),
                Admit::Refused { .. }
            ));
        }
        assert_eq!(
            window.leases.load(Ordering::Relaxed),
            leases,
            "answered from memory"
        );
    }

    #[tokio::test]
    async fn unspent_tokens_lapse_when_their_second_ends_and_are_given_back() {
        let window = Window::new();
        window.now_ms.store(900, Ordering::Relaxed);
        let limiter = Limiter::new();
        let key = Uuid::nil();
        // Leases of 1, 2 and 4 tokens; three of the last are not spent.
        for _ in 0..4 {
            limiter.admit(window.as_ref(), key, 1_000).await.unwrap();
        }
        assert_eq!(window.leases.load(Ordering::Relaxed), 3);
        assert_eq!(window.grants.lock().unwrap().counts[0], 7);
        // The database's second ends 100 ms after it was read.
        tokio::time::sleep(Duration::from_millis(150)).await;
        window.now_ms.store(1_050, Ordering::Relaxed);
        limiter.admit(window.as_ref(), key, 1_000).await.unwrap();
        assert_eq!(
            window.leases.load(Ordering::Relaxed),
            4,
            "a lapsed lease is not spent"
        );
        // The next lease (half the last one) gave the three back.
        assert_eq!(window.grants.lock().unwrap().counts[..2], [2, 4]);
    }
}
