//! This instance's mark in the database: a session advisory lock on a number of its own, held
//! on a connection of its own for as long as the process lives. An Idempotency-Key claim
//! records the instance that runs its request; when that process dies, PostgreSQL ends its
//! session and frees the lock, and a retry finds the claim free at once
//! (`fleetdesk_tenancy::gate::PriorClaim::judge`).

use crate::db::PgStore;
use diesel_async::{AsyncConnection, AsyncPgConnection, RunQueryDsl};
use std::time::Duration;

/// The first key of the two-key advisory locks that mark instances ("fdki"). Two-key locks
/// never meet the one-key locks the other statements take.
pub(crate) const INSTANCE_LOCK_CLASS: i32 = 0x6664_6b69;

const NEXT_INSTANCE: &str = "SELECT nextval('instance_ids')::integer AS id";
const LOCK_INSTANCE: &str = "SELECT pg_try_advisory_lock($1, $2) AS locked";
const STILL_THERE: &str = "SELECT true AS locked";

statements!(NEXT_INSTANCE => Id, LOCK_INSTANCE => Locked, STILL_THERE => Locked);

/// How often the lock's connection is checked, and a lost one opened again.
const CHECK_EVERY: Duration = Duration::from_secs(2);

row! {
    struct Id {
        id: i32,
    }
}

row! {
    struct Locked {
        locked: bool,
    }
}

/// Opens a connection and locks `id` on it; `false` when another session holds `id`.
async fn lock(url: &str, id: i32) -> anyhow::Result<Option<AsyncPgConnection>> {
    let mut conn = AsyncPgConnection::establish(url).await?;
    let locked: Locked = sql!(LOCK_INSTANCE, INSTANCE_LOCK_CLASS, id)
        .get_result(&mut conn)
        .await?;
    Ok(locked.locked.then_some(conn))
}

impl PgStore {
    /// Takes an instance number and holds its lock from now on; the claims this store makes
    /// carry the number. A task keeps the lock's connection and opens it again if it is lost
    /// (the claims made meanwhile are free to take over, as a crashed instance's).
    pub async fn hold_instance_lock(mut self, url: &str) -> anyhow::Result<PgStore> {
        let (id, conn) = loop {
            let mut conn = self.conn().await?;
            let Id { id } = sql!(NEXT_INSTANCE).get_result(&mut *conn).await?;
            // A number still held by a live instance (the sequence went round) is skipped.
            if let Some(locked) = lock(url, id).await? {
                break (id, locked);
            }
        };
        let url = url.to_owned();
        tokio::spawn(async move {
            let mut conn = Some(conn);
            loop {
                tokio::time::sleep(CHECK_EVERY).await;
                let alive = match conn.as_mut() {
                    Some(c) => sql!(STILL_THERE).get_result::<Locked>(c).await.is_ok(),
                    None => false,
                };
                if alive {
                    continue;
                }
                conn = match lock(&url, id).await {
                    Ok(Some(c)) => {
                        tracing::info!(instance = id, "holding the instance lock again");
                        Some(c)
                    }
                    Ok(None) => {
                        tracing::error!(
                            instance = id,
                            "another session holds this instance's lock"
                        );
                        None
                    }
                    Err(e) => {
                        tracing::warn!(
                            instance = id,
                            error = format!("{e:#}"),
                            "the instance lock's connection is lost; its claims are free to take over"
                        );
                        None
                    }
                };
            }
        });
        tracing::debug!(instance = id, "holding the instance lock");
        self.instance = Some(id);
        Ok(self)
    }
}
