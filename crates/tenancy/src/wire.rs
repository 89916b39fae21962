//! The keys' and the person's own part of the interface (feature `wire`): each operation's
//! handle with its description, and the request and response types the server parses and a
//! client sends. The person's operations are in [`personal`].

use crate::ports::KeyRecord;
use crate::{AgentCaller, KeyKind, MemberCaller, MemberRole};
use fleetdesk_kernel::wire::fields::{AgentBrief, Cursor, Limit, Utc};
use fleetdesk_kernel::wire::strings::CursorInput;
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;
use uuid::Uuid;
use validator::Validate;

impl From<&AgentCaller> for AgentBrief {
    fn from(a: &AgentCaller) -> Self {
        AgentBrief {
            id: a.agent_id,
            name: a.agent_name.clone(),
        }
    }
}

// ---------------------------------------------------------------------------------------------
// GET /me

#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct Me {
    pub person: Person,
    /// The organization the key is bound to; null for a platform admin's key bound to none.
    pub organization_id: Option<Uuid>,
    /// client or agency; null for a platform admin outside the organization.
    #[schema(value_type = Option<String>)]
    pub role: Option<MemberRole>,
    /// A client's right to approve in client review.
    pub review: bool,
    pub platform_admin: bool,
}

#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct Person {
    pub id: Uuid,
    pub name: String,
    pub email: String,
}

impl Me {
    /// Who a personal key acts as.
    pub fn of(m: &MemberCaller) -> Me {
        Me {
            person: Person {
                id: m.person_id,
                name: m.name.clone(),
                email: m.email.clone(),
            },
            organization_id: m.organization_id,
            role: m.role,
            review: m.review || m.is_staff(),
            platform_admin: m.platform_admin,
        }
    }
}

// ---------------------------------------------------------------------------------------------
// The keys

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

#[derive(Debug, Serialize, Deserialize, ToSchema)]
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
#[derive(Debug, Serialize, Deserialize, ToSchema)]
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

#[derive(Debug, Clone, Default, Serialize, Deserialize, Validate, ToSchema)]
pub struct KeyQueryIn {
    pub kind: Option<KeyKindIn>,
    /// true: only revoked keys; false: only keys not revoked; absent: both.
    pub revoked: Option<bool>,
    /// 1-200, default 50.
    pub limit: Option<Limit<200>>,
    /// `next_cursor` of the previous page.
    pub cursor: Option<CursorInput>,
}

#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct KeyPage {
    pub keys: Vec<KeyOut>,
    /// Pass as `cursor` for the next page; null on the last page.
    pub next_cursor: Option<Cursor>,
}

impl fleetdesk_kernel::wire::Paged for personal::ListKeys {
    type Item = KeyOut;

    fn page(out: KeyPage) -> (Vec<KeyOut>, Option<Cursor>) {
        (out.keys, out.next_cursor)
    }

    fn after(query: &mut KeyQueryIn, cursor: Cursor) {
        query.cursor = Some(cursor.input());
    }
}

// ---------------------------------------------------------------------------------------------
// POST /admin/keys/{kind}/{id}/revoke

#[derive(Debug, Clone, Serialize, Deserialize, Validate, ToSchema)]
pub struct KeyPath {
    /// `user` or `agent`.
    pub kind: KeyKindIn,
    pub id: Uuid,
}

#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct RevokeReply {
    pub key: KeyOut,
    /// `changed`, or `unchanged` when the key was already revoked.
    pub result: String,
}

/// The person's own operations and the platform admins' keys (`/api/user/v1`).
pub mod personal {
    use super::*;
    use fleetdesk_kernel::access::PersonalAccess;
    use fleetdesk_kernel::op::{
        HttpMethod::{Get, Post},
        Nothing, OpSpec,
    };

    fleetdesk_kernel::operations! {
        /// Who this personal key acts as.
        pub Whoami(Nothing, Nothing, Nothing) -> Me =
            OpSpec::personal(Get, "/me", PersonalAccess::Member)
                .tool("whoami")
                .summary("Who this personal key acts as: the person, organization and role")
                .description("The role is read afresh on every request.");

        /// Every API key.
        pub ListKeys(Nothing, KeyQueryIn, Nothing) -> KeyPage =
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
                );

        /// Revoke an API key.
        pub RevokeKey(KeyPath, Nothing, Nothing) -> RevokeReply =
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
            );
    }
}
