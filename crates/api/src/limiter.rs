//! This instance's side of the rate limit: the tokens it leased from each key's shared window
//! (`fleetdesk_tenancy::rate`), spent in memory. A request that finds tokens writes nothing;
//! the first one that finds none leases more for every request of that key waiting behind it.

use fleetdesk_tenancy::gate::Gatekeeper;
use fleetdesk_tenancy::rate::{LEASE_LIFETIME, next_want};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use uuid::Uuid;

/// Whether a request may pass.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Admit {
    Pass,
    /// The key's window is full: retry after this many whole seconds (at least 1).
    Refused {
        retry_after_seconds: i64,
    },
}

/// What this instance holds of one key's window.
#[derive(Debug, Default)]
struct Held {
    tokens: i64,
    /// When the unspent tokens lapse; `None` before the first lease.
    lapses: Option<Instant>,
    /// What the last lease asked for.
    want: i64,
    /// The window was full when last asked: no need to ask again before then.
    refused_until: Option<Instant>,
}

impl Held {
    fn idle(&self, now: Instant) -> bool {
        self.lapses.is_none_or(|t| t <= now) && self.refused_until.is_none_or(|t| t <= now)
    }
}

/// Held keys past which idle ones are dropped when another key arrives.
const KEEP_IDLE: usize = 1024;

#[derive(Debug, Default)]
pub struct Limiter {
    keys: Mutex<HashMap<Uuid, Arc<tokio::sync::Mutex<Held>>>>,
}

impl Limiter {
    pub fn new() -> Limiter {
        Limiter::default()
    }

    fn held(&self, key_id: Uuid) -> Arc<tokio::sync::Mutex<Held>> {
        let mut keys = self.keys.lock().unwrap_or_else(|e| e.into_inner());
        if !keys.contains_key(&key_id) && keys.len() >= KEEP_IDLE {
            let now = Instant::now();
            keys.retain(|_, held| held.try_lock().map_or(true, |h| !h.idle(now)));
        }
        keys.entry(key_id).or_default().clone()
    }

    /// Spends one token of `key_id`, leasing more through `gate` when none is left.
    pub async fn admit(
        &self,
        gate: &dyn Gatekeeper,
        key_id: Uuid,
        limit: i64,
    ) -> anyhow::Result<Admit> {
        let held = self.held(key_id);
        let mut held = held.lock().await;
        let now = Instant::now();
        if held.tokens > 0 && held.lapses.is_some_and(|t| now < t) {
            held.tokens -= 1;
            return Ok(Admit::Pass);
        }
        if let Some(until) = held.refused_until.filter(|&t| now < t) {
            return Ok(Admit::Refused {
                retry_after_seconds: whole_seconds(until - now),
            });
        }
        held.want = match held.lapses {
            None => 1,
            Some(_) => next_want(held.want, held.tokens == 0, limit),
        };
        let asked_at = Instant::now();
        let lease = gate.lease(key_id, held.want, limit).await?;
        if lease.granted == 0 {
            let wait = Duration::from_secs(lease.retry_after_seconds.max(1) as u64);
            *held = Held {
                want: held.want,
                refused_until: Some(asked_at + wait),
                ..Held::default()
            };
            return Ok(Admit::Refused {
                retry_after_seconds: lease.retry_after_seconds.max(1),
            });
        }
        // The tokens lapse a lease's lifetime after the request left, so none is spent later
        // than the window counts it.
        held.tokens = lease.granted - 1;
        held.lapses = Some(asked_at + LEASE_LIFETIME);
        held.refused_until = None;
        Ok(Admit::Pass)
    }
}

fn whole_seconds(d: Duration) -> i64 {
    (d.as_millis().div_ceil(1000) as i64).max(1)
}

#[cfg(test)]
mod tests {
    use super::*;
    use fleetdesk_kernel::BoxFuture;
    use fleetdesk_tenancy::gate::{Claim, ClaimRequest};
    use fleetdesk_tenancy::rate::{Grants, Lease};
    use fleetdesk_tenancy::{Caller, ParsedKey};
    use std::sync::atomic::{AtomicI64, Ordering};

    /// One key's shared window, as the database holds it, on a clock the test moves.
    struct Window {
        grants: Mutex<Grants>,
        second: AtomicI64,
        leases: AtomicI64,
    }

    impl Window {
        fn new() -> Arc<Window> {
            Arc::new(Window {
                grants: Mutex::new(Grants::empty(0)),
                second: AtomicI64::new(0),
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

        fn lease(&self, _: Uuid, want: i64, limit: i64) -> BoxFuture<'_, anyhow::Result<Lease>> {
            Box::pin(async move {
                self.leases.fetch_add(1, Ordering::Relaxed);
                let mut grants = self.grants.lock().unwrap();
                let (next, lease) = grants.grant(self.second.load(Ordering::Relaxed), want, limit);
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
    async fn tokens_lapse_after_the_lease_lifetime() {
        let window = Window::new();
        let limiter = Limiter::new();
        let key = Uuid::nil();
        // Grow the lease past one token, then let the rest lapse.
        for _ in 0..4 {
            limiter.admit(window.as_ref(), key, 1_000).await.unwrap();
        }
        let leases = window.leases.load(Ordering::Relaxed);
        tokio::time::sleep(LEASE_LIFETIME + Duration::from_millis(50)).await;
        limiter.admit(window.as_ref(), key, 1_000).await.unwrap();
        assert_eq!(
            window.leases.load(Ordering::Relaxed),
            leases + 1,
            "a lapsed lease is not spent"
        );
    }
}
