//! When a failed delivery is tried again. Attempt 1 goes at once; after each failed attempt
//! the next waits the [`DELAYS`] entry of its rank: 5 s, 5 min, 30 min, 2 h, 5 h, 10 h, 14 h,
//! 20 h, 20 h. Ten attempts in all, the last 71 h 35 min 5 s ([`TOTAL_SECS`], about three days)
//! after the first before jitter. Every delay but the first (5 s) is moved by up to ±20% so
//! that endpoints failing together are not retried together; the caller draws the jitter, so
//! the schedule itself is pure. Integers only.
//!
//! An endpoint whose deliveries have failed without a success for [`DISABLE_AFTER`] (5 days)
//! is disabled ([`should_disable`]).

use jiff::{SignedDuration, Timestamp};

/// The waits before attempts 2 to 10, in seconds.
pub const DELAYS: [i64; 9] = [
    5,
    5 * 60,
    30 * 60,
    2 * 3600,
    5 * 3600,
    10 * 3600,
    14 * 3600,
    20 * 3600,
    20 * 3600,
];

/// Attempts before giving up: the first and one per delay.
pub const MAX_ATTEMPTS: u32 = DELAYS.len() as u32 + 1;

/// The first attempt to the last, before jitter: 257,705 s = 71 h 35 min 5 s.
pub const TOTAL_SECS: i64 = {
    let mut total = 0;
    let mut i = 0;
    while i < DELAYS.len() {
        total += DELAYS[i];
        i += 1;
    }
    total
};

/// How far jitter moves a delay, in per mille of it: ±20%.
pub const JITTER_PERMILLE: i64 = 200;

/// Failing without a success this long disables an endpoint: 5 days.
pub const DISABLE_AFTER: SignedDuration = SignedDuration::from_hours(5 * 24);

/// When to make the next attempt after `attempts_made` attempts (0: the first, now); `None`
/// after the last. `jitter_permille` (0..1000, drawn at random by the caller; larger reads as
/// 999) scales every delay but the first between -20% (0) and almost +20% (999).
pub fn next_try(attempts_made: u32, now: Timestamp, jitter_permille: u16) -> Option<Timestamp> {
    let Some(rank) = attempts_made.checked_sub(1) else {
        return Some(now);
    };
    let delay_secs = *DELAYS.get(usize::try_from(rank).ok()?)?;
    let millis = if rank == 0 {
        delay_secs * 1000
    } else {
        let jitter = i64::from(jitter_permille.min(999));
        // delay * (1 - 20% + 40% * jitter / 1000), in milliseconds.
        delay_secs * (1_000_000 - JITTER_PERMILLE * 1000 + 2 * JITTER_PERMILLE * jitter) / 1000
    };
    // Adding a SignedDuration never fails; it saturates at the end of time.
    Some(
        now.saturating_add(SignedDuration::from_millis(millis))
            .unwrap_or(Timestamp::MAX),
    )
}

/// Whether an endpoint whose deliveries have failed since `failing_since` without a success
/// is disabled at `now`: after [`DISABLE_AFTER`] exactly.
pub fn should_disable(failing_since: Timestamp, now: Timestamp) -> bool {
    now.duration_since(failing_since) >= DISABLE_AFTER
}

#[cfg(test)]
mod tests {
    use super::*;

    fn now() -> Timestamp {
        "2026-11-21T09:00:00Z".parse().unwrap()
    }

    fn wait(attempts_made: u32, jitter: u16) -> Option<SignedDuration> {
        next_try(attempts_made, now(), jitter).map(|at| at.duration_since(now()))
    }

    #[test]
    fn the_schedule_spans_about_three_days() {
        assert_eq!(TOTAL_SECS, 257_705);
        assert_eq!(TOTAL_SECS, 71 * 3600 + 35 * 60 + 5);
        assert_eq!(MAX_ATTEMPTS, 10);
        let mut at = now();
        let mut attempts = 0;
        while let Some(next) = next_try(attempts, at, 500) {
            at = next;
            attempts += 1;
        }
        assert_eq!(attempts, MAX_ATTEMPTS);
        // Jitter 500 is the middle: no change.
        assert_eq!(
            at.duration_since(now()),
            SignedDuration::from_secs(TOTAL_SECS)
        );
    }

    #[test]
    fn the_first_attempt_is_now_and_the_tenth_is_the_last() {
        assert_eq!(next_try(0, now(), 0), Some(now()));
        assert_eq!(next_try(0, now(), 999), Some(now()));
        assert_eq!(wait(9, 500), Some(SignedDuration::from_hours(20)));
        assert_eq!(wait(10, 500), None);
        assert_eq!(wait(11, 500), None);
        assert_eq!(wait(u32::MAX, 500), None);
    }

    #[test]
    fn each_delay_in_turn() {
        let expected = [5, 300, 1800, 7200, 18000, 36000, 50400, 72000, 72000];
        for (i, secs) in expected.into_iter().enumerate() {
            let made = u32::try_from(i).unwrap() + 1;
            assert_eq!(
                wait(made, 500),
                Some(SignedDuration::from_secs(secs)),
                "{made}"
            );
        }
    }

    #[test]
    fn the_first_delay_has_no_jitter() {
        for jitter in [0, 500, 999, u16::MAX] {
            assert_eq!(wait(1, jitter), Some(SignedDuration::from_secs(5)));
        }
    }

    #[test]
    fn jitter_moves_a_delay_by_up_to_twenty_percent() {
        // 5 minutes: 240 s at 0, 300 s at 500, 359.76 s at 999 (0.4 per mille a step).
        assert_eq!(wait(2, 0), Some(SignedDuration::from_secs(240)));
        assert_eq!(wait(2, 1), Some(SignedDuration::from_millis(240_120)));
        assert_eq!(wait(2, 500), Some(SignedDuration::from_secs(300)));
        assert_eq!(wait(2, 999), Some(SignedDuration::from_millis(359_880)));
        // Past the range reads as 999.
        assert_eq!(wait(2, 1000), wait(2, 999));
        assert_eq!(wait(2, u16::MAX), wait(2, 999));
        // 20 hours: 16 h to just under 24 h.
        assert_eq!(wait(9, 0), Some(SignedDuration::from_hours(16)));
        let most = wait(9, 999).unwrap();
        assert!(most < SignedDuration::from_hours(24));
        assert!(most > SignedDuration::from_hours(23) + SignedDuration::from_mins(59));
    }

    #[test]
    fn the_end_of_time_saturates() {
        assert_eq!(next_try(5, Timestamp::MAX, 500), Some(Timestamp::MAX));
    }

    #[test]
    fn an_endpoint_failing_for_five_days_is_disabled() {
        assert_eq!(DISABLE_AFTER, SignedDuration::from_secs(5 * 86_400));
        let since = now();
        let at = |secs: i64| {
            since
                .saturating_add(SignedDuration::from_secs(secs))
                .unwrap()
        };
        assert!(!should_disable(since, since));
        assert!(!should_disable(since, at(5 * 86_400 - 1)));
        assert!(should_disable(since, at(5 * 86_400)));
        assert!(should_disable(since, at(5 * 86_400 + 1)));
        // A clock that went back is no reason to disable.
        assert!(!should_disable(since, at(-1)));
    }
}
