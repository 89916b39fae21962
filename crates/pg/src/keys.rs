//! The platform admins' keys: list every key (never its value or hash) and revoke one. A
//! revocation is one transaction that locks the key row first, so of two at once one revokes
//! and the other waits and sees the `revoked_at` written; the gate reads `revoked_at` on every
//! request, with no cache, so the next request with that key is refused.

use crate::db::{PgStore, Ts};
use crate::rows::Stored;
use crate::schema::api_keys;
use diesel::dsl;
use diesel::prelude::*;
use diesel_async::RunQueryDsl;
use fleetdesk_kernel::{BoxFuture, Page};
use fleetdesk_tenancy::KeyKind;
use fleetdesk_tenancy::ports::{KeyQuery, KeyRecord, KeysRepo, Revoked};
use uuid::Uuid;

/// A key's columns, `$more` columns after them.
macro_rules! key_sql {
    ($more:literal, $tail:literal) => {
        concat!(
            "SELECT k.id, k.kind, COALESCE(k.agent_id, k.person_id) AS owner_id, \
                    COALESCE(ag.name, p.name) AS owner_name, k.lookup, k.created_at, \
                    k.last_used_at, k.revoked_at",
            $more,
            " FROM api_keys k \
              LEFT JOIN agents ag ON ag.id = k.agent_id \
              LEFT JOIN people p ON p.id = k.person_id ",
            $tail
        )
    };
}

/// Newest first, after the cursor; filtered by kind and by revoked or not.
const LIST_KEYS: &str = key_sql!(
    "",
    "WHERE ($1::text IS NULL OR k.kind = $1) \
       AND ($2::boolean IS NULL OR (k.revoked_at IS NOT NULL) = $2) \
       AND ($3::timestamptz IS NULL OR (k.created_at, k.id) < ($3, $4)) \
     ORDER BY k.created_at DESC, k.id DESC \
     LIMIT $5"
);

/// The key as it now stands; `changed` is whether this transaction revoked it.
const KEY_AFTER_REVOKE: &str = key_sql!(", $2::boolean AS changed", "WHERE k.id = $1");

statements!(LIST_KEYS => KeyRow, KEY_AFTER_REVOKE => RevokedRow);

row! {
    struct KeyRow into KeyRecord {
        id: Uuid,
        kind: Stored<KeyKind>,
        owner_id: Uuid,
        owner_name: String,
        lookup: String,
        created_at: Ts,
        last_used_at: Option<Ts>,
        revoked_at: Option<Ts>,
    }
}

row! {
    struct RevokedRow {
        #[diesel(embed)]
        key: KeyRow,
        changed: bool,
    }
}

impl KeysRepo for PgStore {
    fn list_keys<'a>(
        &'a self,
        query: &'a KeyQuery,
    ) -> BoxFuture<'a, anyhow::Result<Page<KeyRecord>>> {
        self.read(async move |conn| {
            let rows: Vec<KeyRow> = sql!(
                LIST_KEYS,
                query.kind.map(KeyKind::as_str),
                query.revoked,
                query.after.map(|a| Ts::from(a.0)),
                query.after.map(|a| a.1).unwrap_or_default(),
                query.limit + 1
            )
            .load(conn)
            .await?;
            let items = rows.into_iter().map(Into::into).collect();
            Ok(Page::probed(items, query.limit, |k: &KeyRecord| {
                (k.created_at, k.id)
            }))
        })
    }

    fn revoke_key(
        &self,
        kind: KeyKind,
        id: Uuid,
    ) -> BoxFuture<'_, anyhow::Result<Option<Revoked>>> {
        self.tx(async move |conn| {
            // Locks the key of that kind and id; whether it is revoked already.
            let revoked: Option<bool> = api_keys::table
                .filter(api_keys::id.eq(id))
                .filter(api_keys::kind.eq(kind.as_str()))
                .select(api_keys::revoked_at.is_not_null())
                .for_update()
                .get_result(conn)
                .await
                .optional()?;
            let Some(revoked) = revoked else {
                return Ok(None);
            };
            // Revokes the locked key unless it is revoked already (the first `revoked_at` is
            // kept).
            let changed = !revoked
                && diesel::update(
                    api_keys::table
                        .filter(api_keys::id.eq(id))
                        .filter(api_keys::revoked_at.is_null()),
                )
                .set(api_keys::revoked_at.eq(dsl::now))
                .execute(conn)
                .await?
                    == 1;
            let row: RevokedRow = sql!(KEY_AFTER_REVOKE, id, changed).get_result(conn).await?;
            Ok(Some(Revoked {
                key: row.key.into(),
                unchanged: !row.changed,
            }))
        })
    }
}
