use crate::caller::Caller;
use crate::keys::ParsedKey;
use crate::tenant_file::{ApplyReport, TenantFile};
use fleetdesk_kernel::BoxFuture;

/// The outcome of presenting a key: who is calling, and where its per-minute window stands.
#[derive(Debug, Clone)]
pub enum Authentication {
    /// Unknown, revoked, archived workspace, left organization: all answered 401 alike.
    Refused,
    Accepted { caller: Caller, window: RateWindow },
}

/// The per-key per-minute counter after this request was counted.
#[derive(Debug, Clone, Copy)]
pub struct RateWindow {
    pub hits: i64,
    /// Seconds until the current window closes, rounded up.
    pub resets_in_seconds: i64,
}

/// Looks a key up and counts the request against its window, in one round trip.
/// Errors are infrastructure failures only; a refused key is a value.
pub trait Authenticator: Send + Sync + 'static {
    fn authenticate<'a>(&'a self, key: &'a ParsedKey) -> BoxFuture<'a, anyhow::Result<Authentication>>;
}

/// Applies a validated tenant file in one transaction.
pub trait TenantStore: Send + Sync + 'static {
    fn apply<'a>(&'a self, file: &'a TenantFile) -> BoxFuture<'a, anyhow::Result<ApplyReport>>;
    /// True when no organization exists yet (used to load the demo tenant once).
    fn is_empty(&self) -> BoxFuture<'_, anyhow::Result<bool>>;
}
