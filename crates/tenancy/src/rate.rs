//! The rate limit: a sliding window over the tokens granted to a key, shared by every instance
//! of the service, and spent in each instance's memory.
//!
//! An instance does not write per request. When its tokens for a key run out it leases a few
//! more ([`Grants::grant`], stored by the adapter); it spends them within [`LEASE_LIFETIME`] and
//! lets the rest lapse. A grant is counted for [`COUNTED_SECONDS`] whole seconds: the minute,
//! the lease's lifetime, and the partial second at either end. So the requests passed in any
//! 60-second span were all granted within one counted window, whose grants never exceed the
//! limit: no minute passes more than the limit, on any number of instances, and a burst is cut
//! at the limit instead of twice the limit across a minute's boundary.

use std::time::Duration;

/// The span the limit is stated for.
pub const WINDOW_SECONDS: i64 = 60;

/// How long an instance may spend the tokens of one lease, counted from before it asked.
pub const LEASE_LIFETIME: Duration = Duration::from_secs(1);

/// The whole seconds a grant counts against the limit: the minute, the lease's lifetime, and
/// the second in which the grant fell.
pub const COUNTED_SECONDS: usize = WINDOW_SECONDS as usize + LEASE_LIFETIME.as_secs() as usize + 1;

/// The grants of one key, by second: `counts[i]` tokens were granted in the second
/// `second - i` (UTC epoch seconds of the database's clock).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Grants {
    pub second: i64,
    pub counts: Vec<i64>,
}

/// What one lease request got.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Lease {
    /// Tokens granted now, at most the number asked for; 0 when the window is full.
    pub granted: i64,
    /// When nothing was granted: whole seconds until a token is free again (at least 1).
    pub retry_after_seconds: i64,
}

impl Grants {
    /// No grants yet, as of `second`.
    pub fn empty(second: i64) -> Grants {
        Grants {
            second,
            counts: vec![0; COUNTED_SECONDS],
        }
    }

    /// The same grants seen from `now` (an epoch second): seconds that left the counted
    /// window are dropped. A clock that went back keeps the newer view.
    pub fn at(&self, now: i64) -> Grants {
        let shift = (now - self.second).max(0);
        let mut counts = vec![0; COUNTED_SECONDS];
        if let Ok(shift) = usize::try_from(shift) {
            for (age, n) in self.counts.iter().enumerate() {
                if let Some(slot) = counts.get_mut(age + shift) {
                    *slot += n.max(&0);
                }
            }
        }
        Grants {
            second: self.second.max(now),
            counts,
        }
    }

    /// Tokens granted within the counted window.
    pub fn used(&self) -> i64 {
        self.counts.iter().sum()
    }

    /// Grants up to `want` tokens at `now` under `limit`: the grants after this one, and the
    /// lease. Nothing is granted when the window already holds `limit`.
    pub fn grant(&self, now: i64, want: i64, limit: i64) -> (Grants, Lease) {
        let mut next = self.at(now);
        let free = (limit - next.used()).max(0);
        let granted = want.max(1).min(free);
        if granted > 0 {
            next.counts[0] += granted;
            return (
                next,
                Lease {
                    granted,
                    retry_after_seconds: 0,
                },
            );
        }
        let retry_after_seconds = next.seconds_until_free(limit);
        (
            next,
            Lease {
                granted: 0,
                retry_after_seconds,
            },
        )
    }

    /// Whole seconds until the window holds fewer than `limit` grants: the oldest seconds
    /// leave it first. At least 1.
    fn seconds_until_free(&self, limit: i64) -> i64 {
        let mut excess = self.used() - limit + 1;
        for (age, n) in self.counts.iter().enumerate().rev() {
            excess -= n;
            if excess <= 0 {
                return (COUNTED_SECONDS - age) as i64;
            }
        }
        1
    }
}

/// How many tokens an instance asks for next, from what it asked last time and whether that
/// lease was spent before it lapsed: twice as many after a spent one, half after a lapsed one,
/// between 1 and a sixteenth of the limit (so the tokens one instance may leave unspent stay a
/// small part of the limit).
pub fn next_want(last: i64, spent: bool, limit: i64) -> i64 {
    let cap = (limit / 16).max(1);
    let want = if spent {
        last.saturating_mul(2)
    } else {
        last / 2
    };
    want.clamp(1, cap)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_burst_is_cut_at_the_limit() {
        let mut grants = Grants::empty(1_000);
        let mut passed = 0;
        for _ in 0..300 {
            let (next, lease) = grants.grant(1_000, 1, 120);
            grants = next;
            passed += lease.granted;
        }
        assert_eq!(passed, 120);
        let (_, lease) = grants.grant(1_000, 1, 120);
        assert_eq!(lease.granted, 0);
        assert_eq!(lease.retry_after_seconds, COUNTED_SECONDS as i64);
    }

    #[test]
    fn a_lease_takes_what_is_left_at_most() {
        let (grants, lease) = Grants::empty(5).grant(5, 100, 120);
        assert_eq!(lease.granted, 100);
        let (_, lease) = grants.grant(6, 100, 120);
        assert_eq!(lease.granted, 20);
    }

    #[test]
    fn a_minute_boundary_passes_no_second_limit() {
        // The fixed windows this replaces passed 2 × limit across 12:00:59 → 12:01:00.
        let limit = 120;
        let (grants, first) = Grants::empty(59).grant(59, limit, limit);
        let (_, second) = grants.grant(60, limit, limit);
        assert_eq!((first.granted, second.granted), (limit, 0));
    }

    #[test]
    fn no_sixty_second_span_passes_more_than_the_limit() {
        // One request every 100 ms for five minutes, each spending a lease of its own at the
        // moment it was granted; count every 60-second span of the passed requests.
        let limit = 120;
        let mut grants = Grants::empty(0);
        let mut passed_at = Vec::new();
        for tenth in 0..3_000 {
            let (next, lease) = grants.grant(tenth / 10, 1, limit);
            grants = next;
            if lease.granted == 1 {
                passed_at.push(tenth);
            }
        }
        for (i, &start) in passed_at.iter().enumerate() {
            let in_span = passed_at[i..]
                .iter()
                .take_while(|&&t| t < start + 600)
                .count();
            assert!(
                in_span <= limit as usize,
                "{in_span} within 60 s from {start}"
            );
        }
        // And the window is not starved either: over five minutes nearly five limits pass.
        assert!(passed_at.len() >= 5 * limit as usize * 60 / COUNTED_SECONDS);
    }

    #[test]
    fn a_token_is_free_again_when_its_second_leaves_the_window() {
        let (grants, _) = Grants::empty(10).grant(10, 2, 3);
        let (grants, _) = grants.grant(30, 1, 3);
        let (_, lease) = grants.grant(30, 1, 3);
        assert_eq!(lease.granted, 0);
        // The two of second 10 leave after COUNTED_SECONDS seconds from 10.
        assert_eq!(lease.retry_after_seconds, 10 + COUNTED_SECONDS as i64 - 30);
        let (_, lease) = grants.grant(10 + COUNTED_SECONDS as i64, 1, 3);
        assert_eq!(lease.granted, 1);
    }

    #[test]
    fn a_long_pause_forgets_everything_and_a_clock_going_back_forgets_nothing() {
        let (grants, _) = Grants::empty(100).grant(100, 5, 10);
        assert_eq!(grants.at(100 + COUNTED_SECONDS as i64).used(), 0);
        assert_eq!(grants.at(1_000_000).used(), 0);
        let back = grants.at(90);
        assert_eq!((back.second, back.used()), (100, 5));
    }

    #[test]
    fn a_stored_ring_of_another_length_is_read_safely() {
        let stored = Grants {
            second: 7,
            counts: vec![1; 200],
        };
        assert_eq!(stored.at(7).used(), COUNTED_SECONDS as i64);
        let short = Grants {
            second: 7,
            counts: vec![4],
        };
        assert_eq!(short.at(8).counts[1], 4);
    }

    #[test]
    fn leases_grow_while_spent_and_shrink_when_they_lapse() {
        assert_eq!(next_want(1, true, 1_000_000), 2);
        assert_eq!(next_want(4096, true, 1_000_000), 8192);
        assert_eq!(next_want(8192, false, 1_000_000), 4096);
        assert_eq!(next_want(1, false, 1_000_000), 1);
        // Small limits lease one token at a time: exact across instances.
        assert_eq!(next_want(1, true, 5), 1);
        assert_eq!(next_want(4, true, 120), 7);
    }
}
