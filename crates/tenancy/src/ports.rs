use crate::caller::Caller;
use crate::tenant_file::{ApplyReport, TenantFile};
use fleetdesk_kernel::BoxFuture;

/// The outcome of presenting a key: who is calling, and where its per-minute window stands.
#[derive(Debug, Clone)]
pub enum Authentication {
    /// Unknown, revoked, archived workspace, left organization: all answered 401 alike.
    Refused,
    Accepted {
        caller: Caller,
        window: RateWindow,
    },
}

/// The per-key per-minute counter after this request was counted.
#[derive(Debug, Clone, Copy)]
pub struct RateWindow {
    pub hits: i64,
    /// Seconds until the current window closes, rounded up.
    pub resets_in_seconds: i64,
}

/// Applies a validated tenant file in one transaction.
pub trait TenantStore: Send + Sync + 'static {
    fn apply<'a>(&'a self, file: &'a TenantFile) -> BoxFuture<'a, anyhow::Result<ApplyReport>>;
    /// True when no organization exists yet (used to load the demo tenant once).
    fn is_empty(&self) -> BoxFuture<'_, anyhow::Result<bool>>;
}
