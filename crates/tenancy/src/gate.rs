//! The admission port: presenting a key (a read), leasing rate-limit tokens (a write now and
//! then, see [`crate::rate`]), claiming an Idempotency-Key and settling that claim afterwards.
//! The pipeline of the application layer calls it; the PostgreSQL adapter implements it.

use crate::caller::Caller;
use crate::keys::ParsedKey;
use crate::rate::{Ask, Lease};
use fleetdesk_kernel::BoxFuture;
use jiff::{SignedDuration, Timestamp};
use serde_json::Value;

/// A request to hold an Idempotency-Key for this call.
#[derive(Debug, Clone)]
pub struct ClaimRequest {
    pub key: String,
    /// SHA-256 of the operation and its canonical arguments.
    pub request_hash: [u8; 32],
}

/// Where the Idempotency-Key stood when the request asked for it.
#[derive(Debug, Clone, PartialEq)]
pub enum Claim {
    /// This request holds the key now; settle it when done.
    Claimed,
    /// A finished request with the same content: answer its result again.
    Replay { status: u16, body: Value },
    /// The key was used with other content within 24 hours.
    Mismatch,
    /// The first request with this key is still running.
    InProgress,
}

/// What a claimed request leaves under its Idempotency-Key.
#[derive(Debug)]
pub enum Settlement {
    /// A success: its status and body answer the key for 24 hours.
    Store {
        status: u16,
        body: Box<serde_json::value::RawValue>,
    },
    /// Anything else frees the key: only 2xx results occupy it.
    Release,
}

/// How long a finished result answers its key.
pub const RECORD_LIFETIME: SignedDuration = SignedDuration::from_hours(24);

/// A claim still running after this long is taken over even when its instance lives: its
/// request finished but storing the result failed.
pub const STALE_CLAIM: SignedDuration = SignedDuration::from_mins(10);

/// The record an earlier request left under the key, as the adapter loaded it.
#[derive(Debug, Clone, PartialEq)]
pub struct PriorClaim {
    pub request_hash: Vec<u8>,
    /// `None` while the request runs; its status and body once it succeeded.
    pub result: Option<(u16, Value)>,
    pub created_at: Timestamp,
    /// Whether the instance that runs the request still holds its lock in the database.
    /// `false` when it crashed, or when it is unknown (a claim made without an instance).
    pub holder_alive: bool,
}

/// What to do about a prior record.
#[derive(Debug, Clone, PartialEq)]
pub enum Judgement {
    /// Answer with this claim state.
    Answer(Claim),
    /// The record is free: an expired result, or a claim whose request died. Take it over.
    TakeOver,
}

impl PriorClaim {
    /// Decides what a request with `asked` finds at `now` (the database's clock).
    pub fn judge(&self, asked: &[u8; 32], now: Timestamp) -> Judgement {
        let age = now.duration_since(self.created_at);
        if age >= RECORD_LIFETIME {
            return Judgement::TakeOver;
        }
        if self.result.is_none() && (!self.holder_alive || age >= STALE_CLAIM) {
            return Judgement::TakeOver;
        }
        if self.request_hash.as_slice() != asked.as_slice() {
            return Judgement::Answer(Claim::Mismatch);
        }
        Judgement::Answer(match &self.result {
            Some((status, body)) => Claim::Replay {
                status: *status,
                body: body.clone(),
            },
            None => Claim::InProgress,
        })
    }
}

pub trait Gatekeeper: Send + Sync + 'static {
    /// The caller of a usable key, or `None` (unknown, revoked, archived workspace, a member
    /// who left): one read, on every request, so a revocation holds on every instance at once.
    fn authenticate<'a>(
        &'a self,
        key: &'a ParsedKey,
    ) -> BoxFuture<'a, anyhow::Result<Option<Caller>>>;

    /// Gives back what the instance's last lease of the key left unspent and leases tokens of
    /// the key's window ([`crate::rate::Grants::lease`] on the database's clock), in one write.
    fn lease(&self, key_id: uuid::Uuid, ask: Ask) -> BoxFuture<'_, anyhow::Result<Lease>>;

    /// Claims the Idempotency-Key of `owner` for a request of this instance, or tells where it
    /// stands.
    fn claim<'a>(
        &'a self,
        owner: uuid::Uuid,
        claim: &'a ClaimRequest,
    ) -> BoxFuture<'a, anyhow::Result<Claim>>;

    /// Runs the request that claimed `owner`'s `key` so that what it writes and what
    /// `work`'s [`Settlement`] leaves under the key commit together, in one transaction: a
    /// crash before the commit leaves neither (the retry runs the request), after it both (the
    /// retry replays the result); never the effect without its result. An error means
    /// nothing of it was committed.
    fn run_claimed<'a>(
        &'a self,
        owner: uuid::Uuid,
        key: &'a str,
        work: BoxFuture<'a, Settlement>,
    ) -> BoxFuture<'a, anyhow::Result<()>>;

    /// Frees a key whose request did not succeed: only 2xx results occupy a key.
    fn release<'a>(&'a self, owner: uuid::Uuid, key: &'a str) -> BoxFuture<'a, anyhow::Result<()>>;

    /// Signs in: the caller of a usable personal key, with a session stored under `session`
    /// (a token's SHA-256) for [`crate::session::SESSION_HOURS`]; `None`, and nothing
    /// stored, when the key would be refused. The key's expired sessions, and those past the
    /// newest [`crate::session::SESSIONS_KEPT`], are dropped.
    fn open_session<'a>(
        &'a self,
        key: &'a ParsedKey,
        session: &'a [u8; 32],
    ) -> BoxFuture<'a, anyhow::Result<Option<Caller>>>;

    /// The caller of a session that has not expired and whose key is still usable, as
    /// [`Gatekeeper::authenticate`] would find it: one read on every request.
    fn session<'a>(
        &'a self,
        session: &'a [u8; 32],
    ) -> BoxFuture<'a, anyhow::Result<Option<Caller>>>;

    /// Signs out: the session is gone.
    fn close_session<'a>(&'a self, session: &'a [u8; 32]) -> BoxFuture<'a, anyhow::Result<()>>;
}

#[cfg(test)]
mod tests {
    use super::*;

    const NOW: &str = "2026-11-27T10:00:00Z";

    fn prior(result: Option<(u16, Value)>, age_secs: i64, holder_alive: bool) -> PriorClaim {
        let now: Timestamp = NOW.parse().unwrap();
        PriorClaim {
            request_hash: vec![1; 32],
            result,
            created_at: now - SignedDuration::from_secs(age_secs),
            holder_alive,
        }
    }

    fn judge(p: &PriorClaim, hash: u8) -> Judgement {
        p.judge(&[hash; 32], NOW.parse().unwrap())
    }

    #[test]
    fn a_running_claim_of_a_live_instance_is_in_progress() {
        let running = prior(None, 5, true);
        assert_eq!(judge(&running, 1), Judgement::Answer(Claim::InProgress));
        assert_eq!(judge(&running, 2), Judgement::Answer(Claim::Mismatch));
    }

    #[test]
    fn a_claim_whose_instance_died_is_free_at_once() {
        assert_eq!(judge(&prior(None, 1, false), 1), Judgement::TakeOver);
        assert_eq!(judge(&prior(None, 1, false), 2), Judgement::TakeOver);
    }

    #[test]
    fn a_claim_left_running_for_ten_minutes_is_free_even_on_a_live_instance() {
        assert_eq!(
            judge(&prior(None, 599, true), 1),
            Judgement::Answer(Claim::InProgress)
        );
        assert_eq!(judge(&prior(None, 600, true), 1), Judgement::TakeOver);
    }

    #[test]
    fn a_result_answers_for_24_hours_whatever_became_of_its_instance() {
        let body = serde_json::json!({"ok": true});
        let done = prior(Some((201, body.clone())), 3_600, false);
        assert_eq!(
            judge(&done, 1),
            Judgement::Answer(Claim::Replay { status: 201, body })
        );
        assert_eq!(judge(&done, 2), Judgement::Answer(Claim::Mismatch));
        let old = prior(Some((200, Value::Null)), 24 * 3_600, true);
        assert_eq!(judge(&old, 2), Judgement::TakeOver);
    }
}
