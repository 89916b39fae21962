//! Who holds keys, and revoking one: each is one transaction of the [`KeysRepo`].

use crate::ports::*;
use std::sync::Arc;

/// Keys as operators list and revoke them.
#[derive(Clone)]
pub struct KeysService {
    repo: Arc<dyn KeysRepo>,
}

impl KeysService {
    pub fn new(repo: Arc<dyn KeysRepo>) -> Self {
        KeysService { repo }
    }

    pub async fn list_keys(
        &self,
        query: &KeyQuery,
    ) -> anyhow::Result<fleetdesk_kernel::Page<KeyRecord>> {
        self.repo.list_keys(query).await
    }
    /// `None` when no key of that kind has that id.
    pub async fn revoke_key(
        &self,
        kind: crate::KeyKind,
        id: uuid::Uuid,
    ) -> anyhow::Result<Option<Revoked>> {
        self.repo.revoke_key(kind, id).await
    }
}
