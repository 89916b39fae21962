//! The platform admins' keys: `GET /admin/keys` and `POST /admin/keys/{kind}/{id}/revoke`.
//! Records never carry a key's value or hash; a revocation holds from the next request on.
//! The operations and their types are `fleetdesk_tenancy::wire`.

use crate::ctx::Ctx;
use crate::error::ApiError;
use crate::fields::{Cursor, limit_or};
use crate::input::{Nothing, Req};
use crate::op::{ErasedOp, Reply, bind};
use fleetdesk_tenancy::MemberCaller;
use fleetdesk_tenancy::ports::KeyQuery;
use fleetdesk_tenancy::wire::{KeyPage, KeyPath, KeyQueryIn, RevokeReply, personal};

pub fn register(all: &mut Vec<Box<dyn ErasedOp>>) {
    all.push(bind::<personal::ListKeys, _, _, _>(list_keys));
    all.push(bind::<personal::RevokeKey, _, _, _>(revoke_key));
}

// ---------------------------------------------------------------------------------------------
// GET /admin/keys

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
