use super::*;

/// An ask with nothing to give back.
fn ask(want: i64, limit: i64) -> Ask {
    Ask {
        want,
        limit,
        unspent: None,
    }
}

#[test]
fn a_burst_is_cut_at_the_limit() {
    let mut grants = Grants::empty(1_000);
    let mut passed = 0;
    for _ in 0..300 {
        let (next, lease) = grants.lease(1_000_500, ask(1, 120));
        grants = next;
        passed += lease.granted;
    }
    assert_eq!(passed, 120);
    let (_, lease) = grants.lease(1_000_500, ask(1, 120));
    assert_eq!(lease.granted, 0);
    // The burst's second leaves the 59 seconds at 1 059: 58.5 s from now.
    assert_eq!(lease.retry_after_ms, 58_500);
    assert_eq!(lease.retry_after_seconds(), 59);
}

#[test]
fn a_lease_is_half_the_room_at_most_and_lasts_to_the_end_of_its_second() {
    let (grants, lease) = Grants::empty(5).lease(5_250, ask(100, 120));
    assert_eq!(
        (lease.granted, lease.second, lease.lifetime_ms),
        (60, 5, 750)
    );
    let (grants, lease) = grants.lease(6_999, ask(100, 120));
    assert_eq!((lease.granted, lease.second, lease.lifetime_ms), (30, 6, 1));
    // Near the limit one token at a time, and the last one too.
    let (grants, lease) = grants.lease(7_000, ask(100, 92));
    assert_eq!(lease.granted, 1);
    let (_, lease) = grants.lease(7_000, ask(100, 91));
    assert_eq!(lease.granted, 0);
}

#[test]
fn unspent_tokens_are_given_back_with_the_next_lease() {
    let limit = 120;
    // A lease at 12 s that gives back `tokens` of the lease of `second`.
    let give_back = |grants: &Grants, want: i64, second: i64, tokens: i64| {
        let unspent = Some(Unspent { second, tokens });
        grants
            .lease(
                12_000,
                Ask {
                    want,
                    limit,
                    unspent,
                },
            )
            .0
    };
    let (grants, lease) = Grants::empty(10).lease(10_000, ask(7, limit));
    assert_eq!(lease.granted, 7);
    // Two were spent; the next lease gives five back and is counted with them.
    let grants = give_back(&grants, 3, 10, 5);
    assert_eq!(grants.counts[..3], [3, 0, 2]);
    // More than were granted, or tokens of a second no longer counted, change nothing below
    // zero.
    assert_eq!(give_back(&grants, 1, 10, 50).counts[..3], [4, 0, 0]);
    let gone = give_back(&grants, 1, 10 - COUNTED_SECONDS as i64, 5);
    assert_eq!(gone.counts[..3], [4, 0, 2]);
}

#[test]
fn a_minute_boundary_passes_no_second_limit() {
    // The fixed windows this replaced passed 2 × limit across 12:00:59 → 12:01:00.
    let limit = 120;
    let mut grants = Grants::empty(59);
    let mut first = 0;
    let mut second = 0;
    for _ in 0..limit {
        let (next, lease) = grants.lease(59_900, ask(limit, limit));
        grants = next;
        first += lease.granted;
        let (next, lease) = grants.lease(60_000, ask(limit, limit));
        grants = next;
        second += lease.granted;
    }
    assert_eq!(first + second, limit);
}

#[test]
fn the_counted_seconds_hold_the_limit_and_its_slack_at_most() {
    // A burst at the end of second 0; 59 seconds later it left the burst window but is still
    // counted: the next minute may add the slack only.
    let limit = 120;
    let mut grants = Grants::empty(0);
    let mut passed = 0;
    for now_ms in [999, 59_000, 59_999, 60_000, 60_999] {
        loop {
            let (next, lease) = grants.lease(now_ms, ask(limit, limit));
            grants = next;
            if lease.granted == 0 {
                break;
            }
            passed += lease.granted;
        }
    }
    assert_eq!(passed, bound(limit));
    assert_eq!(slack(limit), 3);
    // At 61 the burst's second is no longer counted.
    let (_, lease) = grants.lease(61_000, ask(limit, limit));
    assert!(lease.granted > 0);
}

#[test]
fn a_token_is_free_again_when_its_second_leaves_the_window() {
    let mut grants = Grants::empty(10);
    for now_ms in [10_000, 10_000, 30_000] {
        let (next, lease) = grants.lease(now_ms, ask(1, 3));
        assert_eq!(lease.granted, 1);
        grants = next;
    }
    let (_, lease) = grants.lease(30_250, ask(1, 3));
    assert_eq!(lease.granted, 0);
    // The two of second 10 leave the burst window at 10 + 59.
    let free_at = 10 + BURST_SECONDS as i64;
    assert_eq!(lease.retry_after_ms, free_at * 1000 - 30_250);
    let (_, lease) = grants.lease(free_at * 1000 - 1, ask(1, 3));
    assert_eq!(lease.granted, 0);
    let (_, lease) = grants.lease(free_at * 1000, ask(1, 3));
    assert_eq!(lease.granted, 1);
}

#[test]
fn a_long_pause_forgets_everything_and_a_clock_going_back_forgets_nothing() {
    let (grants, _) = Grants::empty(100).lease(100_000, ask(5, 10));
    assert_eq!(
        grants.at(100 + COUNTED_SECONDS as i64).sum(COUNTED_SECONDS),
        0
    );
    assert_eq!(grants.at(1_000_000).sum(COUNTED_SECONDS), 0);
    let back = grants.at(90);
    assert_eq!((back.second, back.sum(COUNTED_SECONDS)), (100, 5));
}

#[test]
fn a_stored_ring_of_another_length_is_read_safely() {
    let stored = Grants {
        second: 7,
        counts: vec![1; 200],
    };
    assert_eq!(stored.at(7).sum(COUNTED_SECONDS), COUNTED_SECONDS as i64);
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

#[test]
fn a_holding_spends_until_its_second_ends_then_gives_the_rest_back() {
    let limit = 1_000;
    let mut grants = Grants::empty(0);
    let mut holding = Holding::default();
    let mut lease_at = |holding: &mut Holding, now: i64| match holding.admit(now, limit) {
        Step::Lease(ask) => {
            let (next, lease) = grants.lease(now, ask);
            grants = next;
            (Some(ask), holding.leased(now, &lease))
        }
        Step::Answer(admit) => (None, admit),
    };
    // 1, then 2, then 4 tokens: each lease spent before its second ended.
    let (first, _) = lease_at(&mut holding, 100);
    assert_eq!(first.map(|a| a.want), Some(1));
    let (second, _) = lease_at(&mut holding, 200);
    assert_eq!(second.map(|a| a.want), Some(2));
    assert_eq!(lease_at(&mut holding, 300), (None, Admit::Pass));
    let (third, _) = lease_at(&mut holding, 400);
    assert_eq!(third.map(|a| a.want), Some(4));
    // One of the four spent; at 1 000 the second ended and three lapse.
    assert_eq!(lease_at(&mut holding, 999), (None, Admit::Pass));
    let (fourth, admit) = lease_at(&mut holding, 1_000);
    assert_eq!(admit, Admit::Pass);
    assert_eq!(
        fourth,
        Some(Ask {
            want: 2,
            limit,
            unspent: Some(Unspent {
                second: 0,
                tokens: 2,
            }),
        })
    );
    assert_eq!(grants.counts[..2], [2, 5]);
}

#[test]
fn a_refused_holding_answers_from_memory_until_the_window_has_room() {
    let limit = 3;
    let mut grants = Grants::empty(0);
    let mut holding = Holding::default();
    let mut leases = 0;
    let mut admit = |now: i64| match holding.admit(now, limit) {
        Step::Lease(ask) => {
            leases += 1;
            let (next, lease) = grants.lease(now, ask);
            grants = next;
            holding.leased(now, &lease)
        }
        Step::Answer(admit) => admit,
    };
    for now in [0, 10, 20] {
        assert_eq!(admit(now), Admit::Pass);
    }
    let refused = admit(500);
    assert_eq!(
        refused,
        Admit::Refused {
            retry_after_seconds: 59
        }
    );
    for now in [600, 30_000, 58_999] {
        assert!(matches!(admit(now), Admit::Refused { .. }));
    }
    assert_eq!(admit(59_000), Admit::Pass);
    assert_eq!(leases, 5, "refusals answered from memory");
}

/// Where a lease meets the database, after the instance asked.
const LATENCY_MS: i64 = 2;

/// A key's requests over simulated time at `per_minute` under `limit`, evenly paced (each
/// `late_ms(k)` late), sent round-robin to `instances` instances that share one window; each
/// instance's clock has an origin of its own. Returns when requests passed (database
/// milliseconds) and how many were refused.
fn paced(
    per_minute: i64,
    limit: i64,
    instances: usize,
    minutes: i64,
    late_ms: impl Fn(i64) -> i64,
) -> (Vec<i64>, usize) {
    let start = 1_700_000_000_123;
    let mut grants = Grants::empty(start / 1000);
    let mut holdings = vec![Holding::default(); instances];
    let mut passed = Vec::new();
    let mut refused = 0;
    for k in 0..per_minute * minutes {
        let at = start + k * 60_000 / per_minute + late_ms(k);
        let i = k as usize % instances;
        let clock = |db_ms: i64| db_ms - 1_000_000 * (i as i64 + 3) + 17 * i as i64;
        let holding = &mut holdings[i];
        let admit = match holding.admit(clock(at), limit) {
            Step::Answer(admit) => admit,
            Step::Lease(ask) => {
                let (next, lease) = grants.lease(at + LATENCY_MS, ask);
                grants = next;
                holding.leased(clock(at), &lease)
            }
        };
        match admit {
            Admit::Pass => passed.push(at),
            Admit::Refused { .. } => refused += 1,
        }
    }
    (passed, refused)
}

/// The most and the fewest passed requests in any 60-second span `[a, a + 60 s)` with `a` from
/// `from` on (ending by `to`).
fn per_minute_span(passed: &[i64], from: i64, to: i64) -> (usize, usize) {
    let in_span = |a: i64| passed.iter().filter(|&&t| a <= t && t < a + 60_000).count();
    // The count changes only where a span starts just at, or just after, a passed request.
    let starts = passed
        .iter()
        .flat_map(|&t| [t, t + 1])
        .chain([from])
        .filter(|&a| a >= from && a + 60_000 <= to);
    let counts: Vec<usize> = starts.map(in_span).collect();
    (
        counts.iter().copied().max().unwrap_or(0),
        counts.iter().copied().min().unwrap_or(0),
    )
}

/// Deterministic lateness of up to `max` ms (a linear congruential sequence).
fn jitter(max: i64) -> impl Fn(i64) -> i64 {
    move |k| {
        let x = (k as u64)
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        ((x >> 33) % (max as u64 + 1)) as i64
    }
}

#[test]
fn a_key_paced_at_or_under_its_limit_is_never_refused_on_one_and_three_instances() {
    let limit = 120;
    for per_minute in [90, 108, 120] {
        for instances in [1, 3] {
            for late in [0, 40, 400] {
                let (passed, refused) = paced(per_minute, limit, instances, 10, jitter(late));
                let (most, _) = per_minute_span(&passed, 0, i64::MAX);
                eprintln!(
                    "{per_minute}/min, {instances} instance(s), up to {late} ms late: \
                     {} passed, {refused} refused, at most {most} in 60 s",
                    passed.len()
                );
                assert_eq!(
                    refused, 0,
                    "{per_minute}/min on {instances}, {late} ms late"
                );
                assert!(most as i64 <= bound(limit), "{most} in 60 s");
            }
        }
    }
}

#[test]
fn a_key_over_its_limit_passes_the_limit_in_every_minute_and_never_more_than_the_bound() {
    for (limit, per_minute) in [(120, 180), (120, 1_200), (6, 9), (600, 900)] {
        for instances in [1, 3] {
            let minutes = 10;
            let (passed, refused) = paced(per_minute, limit, instances, minutes, jitter(20));
            let start = passed[0];
            let end = start + minutes * 60_000;
            let (most, fewest) = per_minute_span(&passed, start, end);
            eprintln!(
                "limit {limit}, {per_minute}/min, {instances} instance(s): {} passed, \
                 {refused} refused, {fewest}-{most} in any 60 s",
                passed.len()
            );
            assert!(most as i64 <= bound(limit), "{most} in 60 s");
            // Every minute passes the limit, less at most a second's worth of the key's
            // requests (a key far over its limit passes its limit in bursts a little more than
            // a minute apart).
            assert!(
                fewest as i64 >= limit - ceil_div(per_minute, WINDOW_SECONDS),
                "{fewest} in some 60 s under {limit}"
            );
        }
    }
}

#[test]
fn a_burst_passes_the_limit_exactly_on_one_and_three_instances() {
    for instances in [1, 3] {
        // 300 requests within 0.3 s.
        let (passed, refused) = paced(60_000, 120, instances, 1, |_| 0);
        let (first, _) = passed.split_at(passed.partition_point(|&t| t < passed[0] + 300));
        assert_eq!(first.len(), 120, "{instances} instance(s)");
        assert!(refused > 0);
        let (most, _) = per_minute_span(&passed, 0, i64::MAX);
        assert!(most as i64 <= bound(120));
    }
}

#[test]
fn a_key_without_stored_grants_has_none_counted_as_of_now() {
    let stored = Grants::stored(Some(5), Some(vec![1, 2]), 9_000);
    assert_eq!(
        stored,
        Grants {
            second: 5,
            counts: vec![1, 2]
        }
    );
    assert_eq!(Grants::stored(None, None, 9_999), Grants::empty(9));
    assert_eq!(Grants::stored(None, None, -1), Grants::empty(-1));
}
