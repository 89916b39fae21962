use crate::tenant_file::{ApplyReport, TenantFile};
use fleetdesk_kernel::BoxFuture;

/// Applies a validated tenant file in one transaction.
pub trait TenantStore: Send + Sync + 'static {
    fn apply<'a>(&'a self, file: &'a TenantFile) -> BoxFuture<'a, anyhow::Result<ApplyReport>>;
    /// True when no organization exists yet (used to load the demo tenant once).
    fn is_empty(&self) -> BoxFuture<'_, anyhow::Result<bool>>;
}

/// An API key as a platform admin lists it: never its value or hash.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeyRecord {
    pub id: uuid::Uuid,
    pub kind: crate::KeyKind,
    /// The agent or the person (not the member: a person's keys are per organization).
    pub owner_id: uuid::Uuid,
    pub owner_name: String,
    /// The leading 8 characters after the prefix: the lookup id.
    pub lookup: String,
    pub created_at: jiff::Timestamp,
    pub last_used_at: Option<jiff::Timestamp>,
    pub revoked_at: Option<jiff::Timestamp>,
}

/// The filters of list_keys; newest first, a page after `after`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeyQuery {
    pub kind: Option<crate::KeyKind>,
    /// `Some(true)`: only revoked keys; `Some(false)`: only keys not revoked.
    pub revoked: Option<bool>,
    pub after: Option<fleetdesk_kernel::Position>,
    pub limit: i64,
}

/// What revoking did: the key as it stands, and whether it was already revoked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Revoked {
    pub key: KeyRecord,
    pub unchanged: bool,
}

/// The platform admins' view of every key; revocation is immediate (the gate reads
/// `revoked_at` on every request) and irreversible.
pub trait KeysRepo: Send + Sync + 'static {
    fn list_keys<'a>(
        &'a self,
        query: &'a KeyQuery,
    ) -> BoxFuture<'a, anyhow::Result<fleetdesk_kernel::Page<KeyRecord>>>;

    /// `None` when no key of that kind has that id.
    fn revoke_key(
        &self,
        kind: crate::KeyKind,
        id: uuid::Uuid,
    ) -> BoxFuture<'_, anyhow::Result<Option<Revoked>>>;
}
