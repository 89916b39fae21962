//! The rate limit: a sliding window over the tokens spent by a key, shared by every instance
//! of the service, and spent in each instance's memory.
//!
//! An instance does not write per request. When its tokens for a key run out it leases a few
//! more ([`Grants::lease`], stored by the adapter) and spends them in memory ([`Holding`]).
//! A lease lasts until the end of the database's second it was granted in, so every token is
//! spent (or not at all) in the second it is counted in. The instance's next lease of the key
//! gives the unspent tokens of the lapsed one back in the same statement ([`Unspent`]): what
//! the window counts is what was spent, by second, plus what the instances may still spend.
//!
//! The window holds two sums of those seconds (see [`BURST_SECONDS`], [`COUNTED_SECONDS`]):
//!
//! - the last 59 whole seconds never hold more than the limit, so a burst passes exactly the
//!   limit, and a key paced at its limit finds room even when a request comes a second late;
//! - the last 61 whole seconds never hold more than [`bound`]: the limit and a second's worth
//!   of it plus one ([`slack`]). Every 60-second span touches at most 61 whole seconds, so no
//!   60-second span passes more than [`bound`], on any number of instances. A key paced
//!   exactly at its limit puts at most the limit and a second's worth of it into 61 seconds,
//!   and one more when it jitters, so it is never refused.

/// The span the limit is stated for.
pub const WINDOW_SECONDS: i64 = 60;

/// The whole seconds, the current one with them, that never hold more than the limit.
pub const BURST_SECONDS: usize = WINDOW_SECONDS as usize - 1;

/// The whole seconds a token counts for, the current one with them: every 60-second span
/// touches at most 61 of them. Also the length of the stored ring.
pub const COUNTED_SECONDS: usize = WINDOW_SECONDS as usize + 1;

/// What [`COUNTED_SECONDS`] may hold above the limit: a second's worth of the limit (so a key
/// paced at its limit fits), and one more for a request that comes early or late.
pub fn slack(limit: i64) -> i64 {
    ceil_div(limit.max(0), WINDOW_SECONDS) + 1
}

/// The most requests of one key any 60-second span of the database's clock passes.
pub fn bound(limit: i64) -> i64 {
    limit.max(0) + slack(limit)
}

/// The tokens of one key still counted, by second: `counts[i]` tokens were granted in the
/// second `second - i` (UTC epoch seconds of the database's clock) and not given back.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Grants {
    pub second: i64,
    pub counts: Vec<i64>,
}

/// Tokens of a lapsed lease that were not spent, given back with the next lease.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Unspent {
    /// The second the lease was granted in ([`Lease::second`]).
    pub second: i64,
    pub tokens: i64,
}

/// What an instance asks of a key's window.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Ask {
    /// Tokens wanted (at least one is asked for).
    pub want: i64,
    /// Requests a minute.
    pub limit: i64,
    /// What the instance's last lease of the key left unspent.
    pub unspent: Option<Unspent>,
}

/// What one lease request got.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Lease {
    /// Tokens granted now, at most the number asked for; 0 when the window is full.
    pub granted: i64,
    /// The second they are counted in, and must be spent within.
    pub second: i64,
    /// Milliseconds from the database's now to the end of that second, when the tokens lapse.
    pub lifetime_ms: i64,
    /// When nothing was granted: milliseconds until a token can be granted again.
    pub retry_after_ms: i64,
}

impl Lease {
    /// Whole seconds until a token can be granted again, as `Retry-After` says it: at least 1,
    /// at most [`COUNTED_SECONDS`].
    pub fn retry_after_seconds(&self) -> i64 {
        whole_seconds(self.retry_after_ms)
    }
}

/// Milliseconds as whole seconds, rounded up, at least 1.
fn whole_seconds(ms: i64) -> i64 {
    ceil_div(ms, 1000).max(1)
}

/// `n / d` rounded up, for `d > 0`.
fn ceil_div(n: i64, d: i64) -> i64 {
    (n + d - 1).div_euclid(d)
}

impl Grants {
    /// Nothing counted yet, as of `second`.
    pub fn empty(second: i64) -> Grants {
        Grants {
            second,
            counts: vec![0; COUNTED_SECONDS],
        }
    }

    /// A key's grants as stored (`second` and `counts`), or nothing counted yet as of the
    /// second of `now_ms` (epoch milliseconds) when the key has none.
    pub fn stored(second: Option<i64>, counts: Option<Vec<i64>>, now_ms: i64) -> Grants {
        match (second, counts) {
            (Some(second), Some(counts)) => Grants { second, counts },
            _ => Grants::empty(now_ms.div_euclid(1000)),
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

    /// Tokens counted within the last `seconds` whole seconds.
    fn sum(&self, seconds: usize) -> i64 {
        self.counts.iter().take(seconds).sum()
    }

    /// Tokens that can be granted in the current second under `limit`.
    pub fn room(&self, limit: i64) -> i64 {
        let burst = limit - self.sum(BURST_SECONDS);
        let counted = bound(limit) - self.sum(COUNTED_SECONDS);
        burst.min(counted).max(0)
    }

    /// Takes back the tokens a lapsed lease left unspent, if their second is still counted.
    fn give_back(&mut self, unspent: Unspent) {
        let age = usize::try_from(self.second - unspent.second).ok();
        if let Some(slot) = age.and_then(|age| self.counts.get_mut(age)) {
            *slot -= unspent.tokens.clamp(0, *slot);
        }
    }

    /// Leases tokens at `now_ms` (the database's clock, epoch milliseconds): gives back what
    /// the asking instance left unspent, then grants up to what it wants of the room there is.
    /// Near the limit a lease is at most half the room (at least 1): a lease of one token is
    /// spent by the request that asked for it, so instances hold nothing unspent that other
    /// instances would have to count. Returns the grants after this lease, and the lease.
    pub fn lease(&self, now_ms: i64, ask: Ask) -> (Grants, Lease) {
        let mut next = self.at(now_ms.div_euclid(1000));
        if let Some(unspent) = ask.unspent {
            next.give_back(unspent);
        }
        let room = next.room(ask.limit);
        let granted = ask.want.max(1).min((room / 2).max(1)).min(room);
        next.counts[0] += granted;
        let retry_after_ms = if granted == 0 {
            next.ms_until_room(now_ms, ask.limit)
        } else {
            0
        };
        let lease = Lease {
            granted,
            second: next.second,
            lifetime_ms: 1000 - now_ms.rem_euclid(1000),
            retry_after_ms,
        };
        (next, lease)
    }

    /// Milliseconds from `now_ms` until the start of the first second with room, if nothing
    /// more is granted or given back meanwhile: the oldest seconds leave the window first.
    fn ms_until_room(&self, now_ms: i64, limit: i64) -> i64 {
        let free_at = (1..=COUNTED_SECONDS as i64)
            .map(|ahead| self.second + ahead)
            .find(|&second| self.at(second).room(limit) > 0)
            .unwrap_or(self.second + COUNTED_SECONDS as i64);
        (free_at * 1000 - now_ms).max(1)
    }
}

/// Whether a request may pass.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Admit {
    Pass,
    /// The key's window is full: retry after this many whole seconds (at least 1).
    Refused {
        retry_after_seconds: i64,
    },
}

/// What an instance does with a request of a key ([`Holding::admit`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Step {
    /// Answered from what the instance holds.
    Answer(Admit),
    /// Lease from the key's window, then [`Holding::leased`].
    Lease(Ask),
}

/// What one instance holds of one key's window, on the instance's own monotonic clock in
/// milliseconds (any origin).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Holding {
    tokens: i64,
    /// The second of the lease the tokens came from.
    second: i64,
    /// When the unspent tokens lapse; `None` before the first lease and after a refusal.
    lapses_at: Option<i64>,
    /// What the last lease asked for.
    want: i64,
    /// The window was full when last asked: no need to ask again before then.
    refused_until: Option<i64>,
}

impl Holding {
    /// Spends a held token, answers a known refusal, or says what to lease. A lease asks for
    /// twice what the last one asked after it was spent and half after it lapsed
    /// ([`next_want`]), and gives back what the lapsed one left.
    pub fn admit(&mut self, now: i64, limit: i64) -> Step {
        let live = self.lapses_at.is_some_and(|t| now < t);
        if self.tokens > 0 && live {
            self.tokens -= 1;
            return Step::Answer(Admit::Pass);
        }
        if let Some(until) = self.refused_until.filter(|&t| now < t) {
            return Step::Answer(Admit::Refused {
                retry_after_seconds: whole_seconds(until - now),
            });
        }
        self.want = match self.lapses_at {
            None => 1,
            Some(_) => next_want(self.want, self.tokens == 0, limit),
        };
        // Given back now: if the lease fails, they stay counted (never given back twice).
        let unspent = (self.tokens > 0).then_some(Unspent {
            second: self.second,
            tokens: self.tokens,
        });
        self.tokens = 0;
        Step::Lease(Ask {
            want: self.want,
            limit,
            unspent,
        })
    }

    /// Takes the lease asked for at `asked_at` (before the database's clock read its now, so
    /// the tokens lapse no later than their second ends) and answers the request that asked:
    /// it spends the first token.
    pub fn leased(&mut self, asked_at: i64, lease: &Lease) -> Admit {
        if lease.granted == 0 {
            self.lapses_at = None;
            self.refused_until = Some(asked_at + lease.retry_after_ms);
            return Admit::Refused {
                retry_after_seconds: lease.retry_after_seconds(),
            };
        }
        self.tokens = lease.granted - 1;
        self.second = lease.second;
        self.lapses_at = Some(asked_at + lease.lifetime_ms);
        self.refused_until = None;
        Admit::Pass
    }

    /// Holds nothing that matters at `now`: may be forgotten.
    pub fn idle(&self, now: i64) -> bool {
        self.lapses_at.is_none_or(|t| t <= now) && self.refused_until.is_none_or(|t| t <= now)
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
mod tests;
