//! The platform admins' keys: `GET /admin/keys` and `POST /admin/keys/{kind}/{id}/revoke`.
//! Records never carry a key's value or hash; a revocation holds from the next request on.

use super::common::CursorInput;
use crate::ctx::Ctx;
use crate::error::ApiError;
use crate::fields::{Cursor, Limit, Utc, limit_or};
use crate::input::{Nothing, Req};
use crate::op::{ErasedOp, HttpMethod, OpSpec, Reply, operation};
use fleetdesk_tenancy::ports::{KeyQuery, KeyRecord};
use fleetdesk_tenancy::{KeyKind, MemberCaller, PersonalAccess};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;
use uuid::Uuid;
use validator::Validate;

pub fn register(all: &mut Vec<Box<dyn ErasedOp>>) {
    use HttpMethod::{Get, Post};
    all.push(operation(
        OpSpec::personal(Get, "/admin/keys", PersonalAccess::PlatformAdmin)
            .tool("list_keys")
            .summary("Every API key, newest first, never its value")
            .description(
                "Platform admins only (anyone else: 403). Each record: id, kind (user or \
                 agent), owner {id, name} (the person or the agent), lookup (the leading 8 \
                 characters after the prefix), created_at, last_used_at (kept to the \
                 minute), revoked_at. Neither the key nor its hash is ever returned. Filters: \
                 kind, revoked (true: only revoked keys; false: only keys not revoked; absent: \
                 both). Pages with limit 1-200 (default 50) and cursor, newest first.",
            ),
        list_keys,
    ));
    all.push(operation(
        OpSpec::personal(
            Post,
            "/admin/keys/{kind}/{id}/revoke",
            PersonalAccess::PlatformAdmin,
        )
        .tool("revoke_key")
        .summary("Revoke an API key: immediate and irreversible")
        .description(
            "Platform admins only (anyone else: 403). `kind` is `user` or `agent` (anything \
             else: 400 naming kind); `id` is the record's id from list_keys. No key of that \
             kind with that id: 404. The next request with the key is refused (401); nothing \
             makes it valid again. Revoking a key already revoked answers `result: unchanged` \
             with the key as it stands (its first revoked_at).",
        ),
        revoke_key,
    ));
}

/// `user` (a personal key) or `agent`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum KeyKindIn {
    User,
    Agent,
}

impl From<KeyKindIn> for KeyKind {
    fn from(k: KeyKindIn) -> KeyKind {
        match k {
            KeyKindIn::User => KeyKind::Personal,
            KeyKindIn::Agent => KeyKind::Agent,
        }
    }
}

impl From<KeyKind> for KeyKindIn {
    fn from(k: KeyKind) -> KeyKindIn {
        match k {
            KeyKind::Personal => KeyKindIn::User,
            KeyKind::Agent => KeyKindIn::Agent,
        }
    }
}

#[derive(Debug, Serialize, ToSchema)]
pub struct KeyOut {
    pub id: Uuid,
    pub kind: KeyKindIn,
    pub owner: KeyOwnerOut,
    /// The leading 8 characters after the prefix (the lookup id).
    pub lookup: String,
    pub created_at: Utc,
    /// Kept to the minute; null when never used.
    pub last_used_at: Option<Utc>,
    pub revoked_at: Option<Utc>,
}

/// The person (a user key) or the agent (an agent key).
#[derive(Debug, Serialize, ToSchema)]
pub struct KeyOwnerOut {
    pub id: Uuid,
    pub name: String,
}

impl From<KeyRecord> for KeyOut {
    fn from(k: KeyRecord) -> KeyOut {
        KeyOut {
            id: k.id,
            kind: k.kind.into(),
            owner: KeyOwnerOut {
                id: k.owner_id,
                name: k.owner_name,
            },
            lookup: k.lookup,
            created_at: Utc(k.created_at),
            last_used_at: k.last_used_at.map(Utc),
            revoked_at: k.revoked_at.map(Utc),
        }
    }
}

// ---------------------------------------------------------------------------------------------
// GET /admin/keys

#[derive(Debug, Deserialize, Validate, ToSchema)]
pub struct KeyQueryIn {
    pub kind: Option<KeyKindIn>,
    /// true: only revoked keys; false: only keys not revoked; absent: both.
    pub revoked: Option<bool>,
    /// 1-200, default 50.
    pub limit: Option<Limit<200>>,
    /// `next_cursor` of the previous page.
    pub cursor: Option<CursorInput>,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct KeyPage {
    pub keys: Vec<KeyOut>,
    /// Pass as `cursor` for the next page; null on the last page.
    pub next_cursor: Option<Cursor>,
}

async fn list_keys(
    ctx: Ctx,
    _admin: MemberCaller,
    req: Req<Nothing, KeyQueryIn, Nothing>,
) -> Result<Reply<KeyPage>, ApiError> {
    let q = req.query;
    let query = KeyQuery {
        kind: q.kind.map(Into::into),
        revoked: q.revoked,
        after: q.cursor.map(|c| c.0),
        limit: limit_or(q.limit, 50),
    };
    let page = ctx.keys.list_keys(&query).await?;
    Ok(Reply::ok(KeyPage {
        keys: page.items.into_iter().map(Into::into).collect(),
        next_cursor: page.next.map(Cursor),
    }))
}

// ---------------------------------------------------------------------------------------------
// POST /admin/keys/{kind}/{id}/revoke

#[derive(Debug, Clone, Deserialize, Validate, ToSchema)]
pub struct KeyPath {
    /// `user` or `agent`.
    pub kind: KeyKindIn,
    pub id: Uuid,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct RevokeReply {
    pub key: KeyOut,
    /// `changed`, or `unchanged` when the key was already revoked.
    pub result: String,
}

async fn revoke_key(
    ctx: Ctx,
    _admin: MemberCaller,
    req: Req<KeyPath, Nothing, Nothing>,
) -> Result<Reply<RevokeReply>, ApiError> {
    let revoked = ctx
        .keys
        .revoke_key(req.path.kind.into(), req.path.id)
        .await?
        .ok_or_else(|| ApiError::not_found("no such key"))?;
    Ok(Reply::ok(RevokeReply {
        result: if revoked.unchanged {
            "unchanged"
        } else {
            "changed"
        }
        .to_owned(),
        key: revoked.key.into(),
    }))
}
