//! The job queue: background work that runs once however many instances of the service run.
//!
//! Work is enqueued under a `(kind, key)`: enqueuing the same pair again is a no-op, so every
//! instance may enqueue what its clock says is due and the work still exists once. An
//! instance takes the next due job with a lease; a job whose lease passed, or whose instance
//! died (the adapter knows it from the instance's lock, at once), is taken again. Each take counts an attempt, and the attempt number is the lease's token:
//! finishing or failing a job whose lease another instance took since changes nothing. A job
//! finishes in the same transaction as its effect where the adapter can (see the port that
//! runs the job), else through [`JobQueue::finish`].

use crate::BoxFuture;
use jiff::{SignedDuration, Timestamp};
use serde_json::Value;
use uuid::Uuid;

/// How long a taken job is its instance's before another may take it again.
pub const LEASE: SignedDuration = SignedDuration::from_mins(10);

/// Attempts after which a job is given up (`failed`): one that failed its last attempt, or
/// whose lease expired after it (its instance died each time).
pub const MAX_ATTEMPTS: i32 = 8;

/// Work to enqueue: its kind, its key (unique within the kind), what it needs, and when it is
/// due.
#[derive(Debug, Clone, PartialEq)]
pub struct NewJob {
    pub kind: String,
    pub key: String,
    pub payload: Value,
    pub run_at: Timestamp,
}

/// A job an instance took: `attempt` is the number of this take (1 the first time), the token
/// of its lease.
#[derive(Debug, Clone, PartialEq)]
pub struct Job {
    pub id: Uuid,
    pub kind: String,
    pub key: String,
    pub payload: Value,
    pub attempt: i32,
}

crate::text_enum! {
    /// Where a job stands.
    #[derive(Debug, Clone, Copy, PartialEq, Eq)]
    pub enum JobStatus {
        Queued => "queued",
        Running => "running",
        Done => "done",
        Failed => "failed",
    }
}

/// The most characters of a failed job's error that are kept.
pub const ERROR_CHARS: usize = 2000;

/// A failed job's error as it is kept: its first [`ERROR_CHARS`] characters.
pub fn kept_error(error: &str) -> String {
    error.chars().take(ERROR_CHARS).collect()
}

/// When a job that failed on its `attempt` runs again: after 30 seconds, doubling per attempt
/// (30 s, 1, 2, 4, 8, 16, 32 min: the 7th failure waits 32 min), never more than an hour;
/// `None` once [`MAX_ATTEMPTS`] failed (the job is given up).
pub fn backoff(attempt: i32) -> Option<SignedDuration> {
    if attempt >= MAX_ATTEMPTS {
        return None;
    }
    let doublings = attempt.clamp(1, 16) - 1;
    let secs = 30i64.saturating_mul(1i64 << doublings).min(3600);
    Some(SignedDuration::from_secs(secs))
}

/// How long the finished jobs of a kind are kept: the done ones (their effect is recorded
/// where it belongs; the row only says when it ran), and the failed ones (the record of what
/// went wrong, kept longer to be read).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Retention {
    pub kind: &'static str,
    pub done: SignedDuration,
    pub failed: SignedDuration,
}

impl Retention {
    /// When the finished jobs of this kind were last kept at `now`: done ones finished before
    /// the first, failed ones before the second are pruned.
    pub fn cutoffs(&self, now: Timestamp) -> (Timestamp, Timestamp) {
        let before = |kept: SignedDuration| now.checked_sub(kept).unwrap_or(Timestamp::MIN);
        (before(self.done), before(self.failed))
    }
}

/// How often a working job's lease is renewed: a third of the lease, so two renewals can fail
/// (the database busy a moment) before another instance may take it.
pub fn renew_every(lease: SignedDuration) -> SignedDuration {
    lease / 3
}

/// The queue in storage. Times of leases and due jobs are the database's clock, so instances
/// with clocks apart agree.
pub trait JobQueue: Send + Sync {
    /// Enqueues `job`; `false` when a job of that kind and key exists already (whatever its
    /// status), which is left as it is.
    fn enqueue<'a>(&'a self, job: &'a NewJob) -> BoxFuture<'a, anyhow::Result<bool>>;

    /// Takes the next due job of one of `kinds` (oldest `run_at` first): a queued job whose
    /// time came, or a running one whose lease passed with fewer than [`MAX_ATTEMPTS`]
    /// attempts. A running job whose lease passed after its last attempt is marked `failed`
    /// (last error `lease expired N times`) instead of taken again. Jobs other instances are
    /// taking are skipped, never waited for (`FOR UPDATE SKIP LOCKED`).
    fn take<'a>(
        &'a self,
        kinds: &'a [&'a str],
        lease: SignedDuration,
    ) -> BoxFuture<'a, anyhow::Result<Option<Job>>>;

    /// Marks `job` done; `false` when its lease was lost (another take since), and nothing
    /// changed.
    fn finish<'a>(&'a self, job: &'a Job) -> BoxFuture<'a, anyhow::Result<bool>>;

    /// Records that `job` failed with `error`: queued again after [`backoff`], or `failed`
    /// for good after [`MAX_ATTEMPTS`]. Nothing changes when its lease was lost.
    fn fail<'a>(&'a self, job: &'a Job, error: &'a str) -> BoxFuture<'a, anyhow::Result<()>>;

    /// Deletes the finished jobs each [`Retention`] of `kept` no longer keeps at `now`: done
    /// ones finished over its `done` ago, failed ones over its `failed` ago; how many. Jobs of
    /// a kind `kept` does not name are left.
    fn prune<'a>(
        &'a self,
        kept: &'a [Retention],
        now: Timestamp,
    ) -> BoxFuture<'a, anyhow::Result<u64>>;

    /// Pushes the lease of `job` to `lease` from now (the database's) while it works: `false`
    /// when its lease was lost (another take since, or it finished), and nothing changed.
    fn renew<'a>(
        &'a self,
        job: &'a Job,
        lease: SignedDuration,
    ) -> BoxFuture<'a, anyhow::Result<bool>>;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_error_is_kept_to_its_first_2000_characters() {
        assert_eq!(kept_error("boom"), "boom");
        let long = "é".repeat(ERROR_CHARS + 1);
        assert_eq!(kept_error(&long).chars().count(), ERROR_CHARS);
        assert_eq!(
            kept_error(&long[..ERROR_CHARS * 2]),
            long[..ERROR_CHARS * 2]
        );
    }

    #[test]
    fn backoff_doubles_from_thirty_seconds_to_32_minutes_then_gives_up() {
        let secs = |a| backoff(a).map(|d| d.as_secs());
        assert_eq!(secs(0), Some(30));
        assert_eq!(secs(1), Some(30));
        assert_eq!(secs(2), Some(60));
        assert_eq!(secs(3), Some(120));
        assert_eq!(secs(7), Some(1920));
        assert_eq!(secs(MAX_ATTEMPTS - 1), Some(1920));
        assert_eq!(secs(MAX_ATTEMPTS), None);
        assert_eq!(secs(100), None);
    }

    #[test]
    fn statuses_are_the_tables_words() {
        let all = [
            JobStatus::Queued,
            JobStatus::Running,
            JobStatus::Done,
            JobStatus::Failed,
        ];
        let words: Vec<_> = all.iter().map(|s| s.as_str()).collect();
        assert_eq!(words, ["queued", "running", "done", "failed"]);
    }
}
