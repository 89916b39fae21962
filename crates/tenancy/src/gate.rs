//! The admission port: presenting a key, counting it in its per-minute window and claiming an
//! Idempotency-Key in one round trip, and settling that claim afterwards. The pipeline of the
//! application layer calls it; the PostgreSQL adapter implements it.

use crate::keys::ParsedKey;
use crate::ports::Authentication;
use fleetdesk_kernel::BoxFuture;
use serde_json::Value;

/// A request to hold an Idempotency-Key for this call.
#[derive(Debug, Clone)]
pub struct ClaimRequest {
    pub key: String,
    /// SHA-256 of the operation and its canonical arguments.
    pub request_hash: [u8; 32],
}

/// Where the Idempotency-Key stood when the request was admitted.
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

#[derive(Debug, Clone)]
pub struct Admission {
    pub authentication: Authentication,
    /// Present when a claim was asked for and the key was accepted and within its limit.
    pub claim: Option<Claim>,
}

pub trait Gatekeeper: Send + Sync + 'static {
    /// Authenticates the key, counts the request in its per-minute window and, when asked
    /// and the request is within the limit, claims the Idempotency-Key: one round trip.
    fn admit<'a>(
        &'a self,
        key: &'a ParsedKey,
        limit_per_minute: i64,
        claim: Option<&'a ClaimRequest>,
    ) -> BoxFuture<'a, anyhow::Result<Admission>>;

    /// Stores the successful result under the key held by `owner`.
    fn complete<'a>(
        &'a self,
        owner: uuid::Uuid,
        key: &'a str,
        status: u16,
        body: &'a Value,
    ) -> BoxFuture<'a, anyhow::Result<()>>;

    /// Frees a key whose request did not succeed: only 2xx results occupy a key.
    fn release<'a>(&'a self, owner: uuid::Uuid, key: &'a str) -> BoxFuture<'a, anyhow::Result<()>>;

    /// True when the database answers.
    fn ready(&self) -> BoxFuture<'_, bool>;
}
