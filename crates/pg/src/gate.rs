//! The pipeline's port: admit (key, rate window, idempotency claim) in one statement.
//!
//! Idempotency-Keys are stored as their SHA-256 (`key_hash`), never in plain text.

use crate::db::{PgStore, prepared};
use crate::schema::{idempotency_keys, rate_windows};
use diesel::dsl::IntervalDsl;
use diesel::prelude::*;
use diesel::sql_types::{
    BigInt, Bool, Bytea, Jsonb, Nullable, SmallInt, Text, Timestamptz, Uuid as SqlUuid,
};
use diesel_async::RunQueryDsl;
use fleetdesk_kernel::BoxFuture;
use fleetdesk_tenancy::gate::{Admission, Claim, ClaimRequest, Gatekeeper};
use fleetdesk_tenancy::ports::{Authentication, RateWindow};
use fleetdesk_tenancy::{
    AgentCaller, AgentRole, Caller, KeyKind, MemberCaller, MemberRole, ParsedKey,
};
use futures_util::FutureExt;
use serde_json::Value;
use uuid::Uuid;

/// Keys are usable when: an agent key whose workspace is not archived; a personal key whose
/// person finished setup and is still a member of the key's organization (or a platform admin).
const ADMIT: &str = r#"
WITH usable AS (
    SELECT k.id AS key_id, k.kind,
           ag.id AS agent_id, ag.name AS agent_name, ag.role AS agent_role,
           w.id AS workspace_id, COALESCE(w.organization_id, k.organization_id) AS organization_id,
           p.id AS person_id, p.name AS person_name, p.email AS person_email,
           COALESCE(p.platform_admin, false) AS platform_admin,
           m.id AS member_id, m.role AS member_role, COALESCE(m.review, false) AS review,
           COALESCE(ag.id, p.id) AS owner_id
    FROM api_keys k
    LEFT JOIN agents ag ON ag.id = k.agent_id
    LEFT JOIN workspaces w ON w.id = ag.workspace_id
    LEFT JOIN people p ON p.id = k.person_id
    LEFT JOIN members m ON m.person_id = k.person_id AND m.organization_id = k.organization_id
                       AND m.left_at IS NULL
    WHERE k.lookup = $1 AND k.secret_hash = $2 AND k.revoked_at IS NULL
      AND ((k.kind = $6 AND w.archived_at IS NULL)
        OR (k.kind = $7 AND p.setup_complete AND (m.id IS NOT NULL OR p.platform_admin)))
),
hit AS (
    INSERT INTO rate_windows (key_id, window_start, hits)
    SELECT key_id, date_trunc('minute', now()), 1 FROM usable
    ON CONFLICT (key_id, window_start) DO UPDATE SET hits = rate_windows.hits + 1
    RETURNING hits, window_start
),
claim AS (
    INSERT INTO idempotency_keys (owner_id, key_hash, request_hash, state)
    SELECT usable.owner_id, $3, $4, $8 FROM usable, hit
    WHERE $3::bytea IS NOT NULL AND hit.hits <= $5
    ON CONFLICT (owner_id, key_hash) DO NOTHING
    RETURNING owner_id
),
takeover AS (
    -- A record past its 24 hours, or a claim abandoned by a crashed request, is taken over.
    -- Only such rows are locked: a replay or a conflict writes nothing.
    UPDATE idempotency_keys k
    SET request_hash = $4, state = $8, status = NULL, response = NULL, created_at = now()
    FROM usable, hit
    WHERE $3::bytea IS NOT NULL AND hit.hits <= $5
      AND k.owner_id = usable.owner_id AND k.key_hash = $3
      AND (k.created_at < now() - interval '24 hours'
           OR (k.state = $8 AND k.created_at < now() - interval '10 minutes'))
    RETURNING k.owner_id
),
touch AS (
    UPDATE api_keys SET last_used_at = now()
    WHERE id = (SELECT key_id FROM usable)
      AND (last_used_at IS NULL OR last_used_at < now() - interval '1 minute')
)
SELECT u.key_id, u.kind, u.agent_id, u.agent_name, u.agent_role, u.workspace_id, u.organization_id,
       u.person_id, u.person_name, u.person_email, u.platform_admin, u.member_id, u.member_role,
       u.review, u.owner_id,
       h.hits::bigint AS hits,
       CEIL(EXTRACT(EPOCH FROM (h.window_start + interval '1 minute' - now())))::bigint AS resets_in,
       (EXISTS (SELECT 1 FROM claim) OR EXISTS (SELECT 1 FROM takeover)) AS claimed,
       (prior.created_at >= now() - interval '24 hours'
        AND NOT (prior.state = $8 AND prior.created_at < now() - interval '10 minutes')) AS prior_live,
       prior.request_hash AS prior_hash, prior.state AS prior_state, prior.status AS prior_status,
       prior.response AS prior_response
FROM usable u CROSS JOIN hit h
LEFT JOIN idempotency_keys prior
       ON $3::bytea IS NOT NULL AND prior.owner_id = u.owner_id AND prior.key_hash = $3
"#;

/// What is stored of an Idempotency-Key: its SHA-256.
fn key_hash(key: &str) -> [u8; 32] {
    use sha2::{Digest, Sha256};
    Sha256::digest(key.as_bytes()).into()
}

#[derive(QueryableByName)]
struct AdmitRow {
    #[diesel(sql_type = SqlUuid)]
    key_id: Uuid,
    #[diesel(sql_type = Text)]
    kind: String,
    #[diesel(sql_type = Nullable<SqlUuid>)]
    agent_id: Option<Uuid>,
    #[diesel(sql_type = Nullable<Text>)]
    agent_name: Option<String>,
    #[diesel(sql_type = Nullable<Text>)]
    agent_role: Option<String>,
    #[diesel(sql_type = Nullable<SqlUuid>)]
    workspace_id: Option<Uuid>,
    #[diesel(sql_type = Nullable<SqlUuid>)]
    organization_id: Option<Uuid>,
    #[diesel(sql_type = Nullable<SqlUuid>)]
    person_id: Option<Uuid>,
    #[diesel(sql_type = Nullable<Text>)]
    person_name: Option<String>,
    #[diesel(sql_type = Nullable<Text>)]
    person_email: Option<String>,
    #[diesel(sql_type = Bool)]
    platform_admin: bool,
    #[diesel(sql_type = Nullable<SqlUuid>)]
    member_id: Option<Uuid>,
    #[diesel(sql_type = Nullable<Text>)]
    member_role: Option<String>,
    #[diesel(sql_type = Bool)]
    review: bool,
    #[diesel(sql_type = SqlUuid)]
    #[allow(dead_code)]
    owner_id: Uuid,
    #[diesel(sql_type = BigInt)]
    hits: i64,
    #[diesel(sql_type = BigInt)]
    resets_in: i64,
    #[diesel(sql_type = Bool)]
    claimed: bool,
    #[diesel(sql_type = Nullable<Bool>)]
    prior_live: Option<bool>,
    #[diesel(sql_type = Nullable<Bytea>)]
    prior_hash: Option<Vec<u8>>,
    #[diesel(sql_type = Nullable<Text>)]
    prior_state: Option<String>,
    #[diesel(sql_type = Nullable<SmallInt>)]
    prior_status: Option<i16>,
    #[diesel(sql_type = Nullable<Jsonb>)]
    prior_response: Option<Value>,
}

impl AdmitRow {
    fn caller(&self) -> anyhow::Result<Caller> {
        let missing = |what: &str| anyhow::anyhow!("key {} has no {what}", self.key_id);
        Ok(if self.kind == KeyKind::Agent.as_str() {
            Caller::Agent(AgentCaller {
                key_id: self.key_id,
                agent_id: self.agent_id.ok_or_else(|| missing("agent"))?,
                agent_name: self.agent_name.clone().unwrap_or_default(),
                role: self
                    .agent_role
                    .as_deref()
                    .and_then(AgentRole::parse)
                    .ok_or_else(|| missing("role"))?,
                workspace_id: self.workspace_id.ok_or_else(|| missing("workspace"))?,
                organization_id: self
                    .organization_id
                    .ok_or_else(|| missing("organization"))?,
            })
        } else {
            Caller::Member(MemberCaller {
                key_id: self.key_id,
                person_id: self.person_id.ok_or_else(|| missing("person"))?,
                name: self.person_name.clone().unwrap_or_default(),
                email: self.person_email.clone().unwrap_or_default(),
                organization_id: self.organization_id,
                member_id: self.member_id,
                role: self.member_role.as_deref().and_then(MemberRole::parse),
                review: self.review,
                platform_admin: self.platform_admin,
            })
        })
    }

    fn claim(&self, asked: &ClaimRequest) -> Claim {
        if self.claimed {
            return Claim::Claimed;
        }
        if self.prior_live != Some(true) {
            // No record, or an expired one that a concurrent request just took over.
            return Claim::InProgress;
        }
        let state = self.prior_state.as_deref().and_then(ClaimState::parse);
        match (&self.prior_hash, state) {
            (Some(hash), _) if hash.as_slice() != asked.request_hash.as_slice() => Claim::Mismatch,
            (Some(_), Some(ClaimState::Done)) => Claim::Replay {
                status: self.prior_status.unwrap_or(200) as u16,
                body: self.prior_response.clone().unwrap_or(Value::Null),
            },
            // Running, or claimed by a request that committed after this statement began.
            _ => Claim::InProgress,
        }
    }
}

const PING: &str = "SELECT 1";

statements!(ADMIT, PING);

fleetdesk_kernel::text_enum! {
    /// Where an Idempotency-Key's request is (`idempotency_keys.state`).
    #[derive(Debug, Clone, Copy, PartialEq, Eq)]
    enum ClaimState {
        Running => "running",
        Done => "done",
    }
}

/// `now()` as the `timestamptz` the columns hold, to subtract intervals from.
fn db_now() -> diesel::dsl::AsExprOf<diesel::dsl::now, Timestamptz> {
    diesel::dsl::now.into_sql::<Timestamptz>()
}

impl Gatekeeper for PgStore {
    fn admit<'a>(
        &'a self,
        key: &'a ParsedKey,
        limit_per_minute: i64,
        claim: Option<&'a ClaimRequest>,
    ) -> BoxFuture<'a, anyhow::Result<Admission>> {
        self.read(async move |conn| {
            let key_hash = claim.map(|c| key_hash(&c.key));
            let row: Option<AdmitRow> = prepared(
                diesel::sql_query(ADMIT)
                    .bind::<Text, _>(&key.lookup)
                    .bind::<Bytea, _>(key.hash.as_slice())
                    .bind::<Nullable<Bytea>, _>(key_hash.as_ref().map(|h| h.as_slice()))
                    .bind::<Bytea, _>(claim.map(|c| c.request_hash.as_slice()).unwrap_or(&[]))
                    .bind::<BigInt, _>(limit_per_minute)
                    .bind::<Text, _>(KeyKind::Agent.as_str())
                    .bind::<Text, _>(KeyKind::Personal.as_str())
                    .bind::<Text, _>(ClaimState::Running.as_str()),
            )
            .get_result(conn)
            .await
            .optional()?;
            let Some(row) = row else {
                return Ok(Admission {
                    authentication: Authentication::Refused,
                    claim: None,
                });
            };
            let within_limit = row.hits <= limit_per_minute;
            let claim = claim.filter(|_| within_limit).map(|asked| row.claim(asked));
            Ok(Admission {
                authentication: Authentication::Accepted {
                    caller: row.caller()?,
                    window: RateWindow {
                        hits: row.hits,
                        resets_in_seconds: row.resets_in,
                    },
                },
                claim,
            })
        })
    }

    fn complete<'a>(
        &'a self,
        owner: Uuid,
        key: &'a str,
        status: u16,
        body: &'a Value,
    ) -> BoxFuture<'a, anyhow::Result<()>> {
        self.read(async move |conn| {
            let hash = key_hash(key);
            diesel::update(idempotency_keys::table.find((owner, hash.as_slice())))
                .set((
                    idempotency_keys::state.eq(ClaimState::Done.as_str()),
                    idempotency_keys::status.eq(status as i16),
                    idempotency_keys::response.eq(body),
                ))
                .execute(conn)
                .await?;
            Ok(())
        })
    }

    fn release<'a>(&'a self, owner: Uuid, key: &'a str) -> BoxFuture<'a, anyhow::Result<()>> {
        self.read(async move |conn| {
            let hash = key_hash(key);
            diesel::delete(
                idempotency_keys::table
                    .find((owner, hash.as_slice()))
                    .filter(idempotency_keys::state.eq(ClaimState::Running.as_str())),
            )
            .execute(conn)
            .await?;
            Ok(())
        })
    }

    fn ready(&self) -> BoxFuture<'_, bool> {
        self.read(async move |conn| {
            prepared(diesel::sql_query(PING)).execute(conn).await?;
            Ok(())
        })
        .map(|up| up.is_ok())
        .boxed()
    }
}

impl PgStore {
    /// Drops rate windows older than two minutes and idempotency records older than 24 hours.
    pub async fn sweep(&self) -> anyhow::Result<(usize, usize)> {
        let mut conn = self.conn().await?;
        let windows = diesel::delete(
            rate_windows::table.filter(rate_windows::window_start.lt(db_now() - 2.minutes())),
        )
        .execute(&mut conn)
        .await?;
        let keys = diesel::delete(
            idempotency_keys::table.filter(idempotency_keys::created_at.lt(db_now() - 24.hours())),
        )
        .execute(&mut conn)
        .await?;
        Ok((windows, keys))
    }
}
