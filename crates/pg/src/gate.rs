//! The pipeline's port: authenticate (one read), lease rate-limit tokens, claim and settle an
//! Idempotency-Key.
//!
//! Idempotency-Keys are stored as their SHA-256 (`key_hash`), never in plain text.

use crate::db::PgStore;
use crate::instance::INSTANCE_LOCK_CLASS;
use crate::rows::Stored;
use crate::schema::{dashboard_sessions, idempotency_keys};
use diesel::dsl::{self, IntervalDsl};
use diesel::prelude::*;
use diesel::sql_types::{Jsonb, Text, Timestamptz};
use diesel_async::RunQueryDsl;
use fleetdesk_kernel::BoxFuture;
use fleetdesk_tenancy::gate::{Claim, ClaimRequest, Gatekeeper, Judgement, PriorClaim, Settlement};
use fleetdesk_tenancy::rate::{Ask, COUNTED_SECONDS, Grants, Lease};
use fleetdesk_tenancy::session::{SESSION_HOURS, SESSIONS_KEPT};
use fleetdesk_tenancy::{
    AgentCaller, AgentRole, Caller, KeyKind, MemberCaller, MemberRole, ParsedKey,
};
use jiff_diesel::Timestamp as DbTimestamp;
use serde_json::Value;
use uuid::Uuid;

/// An agent key is usable while its workspace is not archived. The key's kind is in its
/// prefix, so each kind has a statement of its own, with the joins only it needs.
const AUTHENTICATE_AGENT: &str = r#"
SELECT k.id AS key_id, ag.id AS agent_id, ag.name AS agent_name, ag.role,
       w.id AS workspace_id, w.organization_id, w.accounts_revision, w.tasks_revision
FROM api_keys k
JOIN agents ag ON ag.id = k.agent_id
JOIN workspaces w ON w.id = ag.workspace_id
WHERE k.lookup = $1 AND k.secret_hash = $2 AND k.revoked_at IS NULL AND k.kind = $3
  AND w.archived_at IS NULL
"#;

/// The columns of a person's caller, over `api_keys k`, `people p` and `members m`.
macro_rules! person_columns {
    () => {
        "SELECT k.id AS key_id, k.organization_id,
       p.id AS person_id, p.name, p.email, p.platform_admin,
       m.id AS member_id, m.role, COALESCE(m.review, false) AS review"
    };
}

/// A person's key usable while its person has finished setup and is still a member of the
/// key's organization (or is a platform admin), joined after `api_keys k`.
macro_rules! person_of_key {
    () => {
        "JOIN people p ON p.id = k.person_id
LEFT JOIN members m ON m.person_id = k.person_id AND m.organization_id = k.organization_id
                   AND m.left_at IS NULL
WHERE k.revoked_at IS NULL AND p.setup_complete AND (m.id IS NOT NULL OR p.platform_admin)"
    };
}

/// A personal key is usable while its person has finished setup and is still a member of the
/// key's organization (or is a platform admin).
const AUTHENTICATE_PERSON: &str = concat!(
    person_columns!(),
    "\nFROM api_keys k\n",
    person_of_key!(),
    "\n  AND k.lookup = $1 AND k.secret_hash = $2 AND k.kind = $3"
);

/// Signs in: the person of a usable key, with a new session of `$5` hours under the token hash
/// `$4`; the key's expired sessions, and all but its newest `$6` others, are dropped on the
/// way. No row, nothing written.
const OPEN_SESSION: &str = concat!(
    "WITH person AS (",
    person_columns!(),
    "\nFROM api_keys k\n",
    person_of_key!(),
    "\n  AND k.lookup = $1 AND k.secret_hash = $2 AND k.kind = $3),
dropped AS (
    DELETE FROM dashboard_sessions d
    WHERE d.key_id IN (SELECT key_id FROM person)
      AND (d.expires_at <= now()
           OR d.token_hash IN (SELECT o.token_hash FROM dashboard_sessions o
                               WHERE o.key_id = d.key_id
                               ORDER BY o.created_at DESC, o.token_hash OFFSET $6))
),
opened AS (
    INSERT INTO dashboard_sessions (token_hash, key_id, expires_at)
    SELECT $4, key_id, now() + make_interval(hours => $5) FROM person
)
SELECT * FROM person"
);

/// The person of a session that has not expired, through its key.
const SESSION_PERSON: &str = concat!(
    person_columns!(),
    "\nFROM dashboard_sessions s\nJOIN api_keys k ON k.id = s.key_id\n",
    person_of_key!(),
    "\n  AND s.token_hash = $1 AND s.expires_at > now()"
);

/// A key's grants as stored (absent before its first lease), and the database's clock in
/// epoch milliseconds.
const LOAD_GRANTS: &str = r#"
SELECT g.second, g.counts, g.version, floor(EXTRACT(EPOCH FROM now()) * 1000)::bigint AS now_ms
FROM (SELECT 1) AS one LEFT JOIN rate_grants g ON g.key_id = $1
"#;

/// Writes a lease's grants, with what the instance gave back, if nobody leased since they were
/// read (`version`, -1 when there was no row), and marks the key used (at most once a minute).
const SAVE_GRANTS: &str = r#"
WITH saved AS (
    INSERT INTO rate_grants AS g (key_id, second, counts, version) VALUES ($1, $2, $3, 0)
    ON CONFLICT (key_id) DO UPDATE
    SET second = EXCLUDED.second, counts = EXCLUDED.counts, version = g.version + 1
    WHERE g.version = $4
    RETURNING g.key_id
),
touch AS (
    UPDATE api_keys SET last_used_at = now()
    WHERE id IN (SELECT key_id FROM saved)
      AND (last_used_at IS NULL OR last_used_at < now() - interval '1 minute')
)
SELECT count(*) AS n FROM saved
"#;

/// Claims a key, or reads the record already under it (the outer query sees the table as it
/// was before the insert) and whether the instance running its request still holds its lock
/// (trying the lock holds it only for this statement's own transaction).
const CLAIM: &str = r#"
WITH inserted AS (
    INSERT INTO idempotency_keys (owner_id, key_hash, request_hash, state, instance)
    VALUES ($1, $2, $3, $4, $5)
    ON CONFLICT (owner_id, key_hash) DO NOTHING
    RETURNING owner_id
)
SELECT EXISTS (SELECT 1 FROM inserted) AS claimed,
       prior.request_hash, prior.status, prior.response, prior.created_at, now() AS now,
       CASE WHEN prior.state = $4 AND prior.instance IS NOT NULL
            THEN NOT pg_try_advisory_xact_lock($6, prior.instance)
            ELSE false END AS holder_alive
FROM (SELECT 1) AS one
LEFT JOIN idempotency_keys prior ON prior.owner_id = $1 AND prior.key_hash = $2
"#;

/// What is stored of an Idempotency-Key: its SHA-256.
fn key_hash(key: &str) -> [u8; 32] {
    use sha2::{Digest, Sha256};
    Sha256::digest(key.as_bytes()).into()
}

row! {
    struct AgentAuthRow into AgentCaller {
        key_id: Uuid,
        agent_id: Uuid,
        agent_name: String,
        role: Stored<AgentRole>,
        workspace_id: Uuid,
        organization_id: Uuid,
        accounts_revision: i64,
        tasks_revision: i64,
    }
}

row! {
    struct PersonAuthRow into MemberCaller {
        key_id: Uuid,
        organization_id: Option<Uuid>,
        person_id: Uuid,
        name: String,
        email: String,
        platform_admin: bool,
        member_id: Option<Uuid>,
        role: Option<Stored<MemberRole>>,
        review: bool,
    }
}

row! {
    struct GrantsRow {
        second: Option<i64>,
        counts: Option<Vec<i64>>,
        version: Option<i64>,
        now_ms: i64,
    }
}

row! {
    struct Saved {
        n: i64,
    }
}

row! {
    struct ClaimRow {
        claimed: bool,
        request_hash: Option<Vec<u8>>,
        status: Option<i16>,
        response: Option<Value>,
        created_at: Option<DbTimestamp>,
        now: DbTimestamp,
        holder_alive: bool,
    }
}

impl ClaimRow {
    /// The record found under the key, if any.
    fn prior(self) -> Option<PriorClaim> {
        Some(PriorClaim {
            request_hash: self.request_hash?,
            result: self
                .status
                .map(|status| (status as u16, self.response.unwrap_or(Value::Null))),
            created_at: self.created_at?.to_jiff(),
            holder_alive: self.holder_alive,
        })
    }
}

/// A lease that found its grants changed by another instance reads them again, this many
/// times at most.
const LEASE_ATTEMPTS: usize = 32;

/// The caller a person's row names.
fn member(row: PersonAuthRow) -> Caller {
    Caller::Member(row.into())
}

/// Frees `owner`'s claim of the key hashed `hash`.
async fn release(
    conn: &mut diesel_async::AsyncPgConnection,
    owner: Uuid,
    hash: &[u8],
) -> QueryResult<usize> {
    // Only a claim whose request did not succeed: a finished record stays.
    diesel::delete(
        idempotency_keys::table
            .find((owner, hash))
            .filter(idempotency_keys::state.eq(ClaimState::Running.as_str())),
    )
    .execute(conn)
    .await
}

/// Grants whose newest second left the counted window count nothing any more.
const SWEEP_GRANTS: &str =
    "DELETE FROM rate_grants WHERE second < floor(EXTRACT(EPOCH FROM now()))::bigint - $1";

statements!(
    AUTHENTICATE_AGENT => AgentAuthRow,
    AUTHENTICATE_PERSON => PersonAuthRow,
    LOAD_GRANTS => GrantsRow,
    SAVE_GRANTS => Saved,
    CLAIM => ClaimRow,
    SWEEP_GRANTS,
    OPEN_SESSION => PersonAuthRow,
    SESSION_PERSON => PersonAuthRow,
);

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
    fn authenticate<'a>(
        &'a self,
        key: &'a ParsedKey,
    ) -> BoxFuture<'a, anyhow::Result<Option<Caller>>> {
        self.read(async move |conn| {
            let statement = match key.kind {
                KeyKind::Agent => AUTHENTICATE_AGENT,
                KeyKind::Personal => AUTHENTICATE_PERSON,
            };
            let query = sql!(
                statement,
                &key.lookup,
                key.hash.as_slice(),
                key.kind.as_str()
            );
            Ok(match key.kind {
                KeyKind::Agent => query
                    .get_result::<AgentAuthRow>(conn)
                    .await
                    .optional()?
                    .map(|row| Caller::Agent(row.into())),
                KeyKind::Personal => query
                    .get_result::<PersonAuthRow>(conn)
                    .await
                    .optional()?
                    .map(member),
            })
        })
    }

    fn lease(&self, key_id: Uuid, ask: Ask) -> BoxFuture<'_, anyhow::Result<Lease>> {
        self.read(async move |conn| {
            for _ in 0..LEASE_ATTEMPTS {
                let row: GrantsRow = sql!(LOAD_GRANTS, key_id).get_result(conn).await?;
                let stored = Grants::stored(row.second, row.counts, row.now_ms);
                let (next, lease) = stored.lease(row.now_ms, ask);
                if lease.granted == 0 && ask.unspent.is_none() {
                    return Ok(lease);
                }
                debug_assert_eq!(next.counts.len(), COUNTED_SECONDS);
                let saved: Saved = sql!(
                    SAVE_GRANTS,
                    key_id,
                    next.second,
                    &next.counts,
                    row.version.unwrap_or(-1)
                )
                .get_result(conn)
                .await?;
                if saved.n == 1 {
                    return Ok(lease);
                }
            }
            anyhow::bail!("{LEASE_ATTEMPTS} leases of one key's tokens in a row met another's")
        })
    }

    fn claim<'a>(
        &'a self,
        owner: Uuid,
        claim: &'a ClaimRequest,
    ) -> BoxFuture<'a, anyhow::Result<Claim>> {
        self.read(async move |conn| {
            let hash = key_hash(&claim.key);
            let running = ClaimState::Running.as_str();
            for _ in 0..3 {
                let row: ClaimRow = sql!(
                    CLAIM,
                    owner,
                    hash.as_slice(),
                    claim.request_hash.as_slice(),
                    running,
                    self.instance,
                    INSTANCE_LOCK_CLASS
                )
                .get_result(conn)
                .await?;
                if row.claimed {
                    return Ok(Claim::Claimed);
                }
                let now = row.now.to_jiff();
                // Committed by another request after this statement began: read it again.
                let Some(prior) = row.prior() else { continue };
                match prior.judge(&claim.request_hash, now) {
                    Judgement::Answer(answer) => return Ok(answer),
                    Judgement::TakeOver => {
                        // Only the record as judged is taken over: of two retries, one wins.
                        let found = idempotency_keys::table
                            .find((owner, hash.as_slice()))
                            .filter(
                                idempotency_keys::created_at
                                    .eq(DbTimestamp::from(prior.created_at)),
                            )
                            .filter(
                                idempotency_keys::request_hash.eq(prior.request_hash.as_slice()),
                            );
                        let taken = diesel::update(found)
                            .set((
                                idempotency_keys::request_hash.eq(claim.request_hash.as_slice()),
                                idempotency_keys::state.eq(running),
                                idempotency_keys::status.eq(None::<i16>),
                                idempotency_keys::response.eq(None::<Value>),
                                idempotency_keys::created_at.eq(db_now()),
                                idempotency_keys::instance.eq(self.instance),
                            ))
                            .execute(conn)
                            .await?;
                        if taken == 1 {
                            return Ok(Claim::Claimed);
                        }
                    }
                }
            }
            // Claimed and released, or taken over, by others three times in a row.
            Ok(Claim::InProgress)
        })
    }

    fn run_claimed<'a>(
        &'a self,
        owner: Uuid,
        key: &'a str,
        work: BoxFuture<'a, Settlement>,
    ) -> BoxFuture<'a, anyhow::Result<()>> {
        Box::pin(self.in_request_transaction(work, async move |settlement| {
            let hash = key_hash(key);
            let mut conn = self.conn().await?;
            let statement = match &settlement {
                Settlement::Store { status, body } => {
                    // Stores the success under its claim; the body's text is cast to jsonb
                    // by the database, as it was written.
                    diesel::update(idempotency_keys::table.find((owner, hash.as_slice())))
                        .set((
                            idempotency_keys::state.eq(ClaimState::Done.as_str()),
                            idempotency_keys::status.eq(*status as i16),
                            idempotency_keys::response.eq(body
                                .get()
                                .into_sql::<Text>()
                                .fallible_cast::<Jsonb>()
                                .nullable()),
                        ))
                        .execute(&mut *conn)
                        .await
                }
                Settlement::Release => release(&mut conn, owner, &hash).await,
            };
            statement?;
            Ok(())
        }))
    }

    fn release<'a>(&'a self, owner: Uuid, key: &'a str) -> BoxFuture<'a, anyhow::Result<()>> {
        self.read(async move |conn| {
            release(conn, owner, &key_hash(key)).await?;
            Ok(())
        })
    }

    fn open_session<'a>(
        &'a self,
        key: &'a ParsedKey,
        session: &'a [u8; 32],
    ) -> BoxFuture<'a, anyhow::Result<Option<Caller>>> {
        self.read(async move |conn| {
            if key.kind != KeyKind::Personal {
                return Ok(None);
            }
            Ok(sql!(
                OPEN_SESSION,
                &key.lookup,
                key.hash.as_slice(),
                key.kind.as_str(),
                session.as_slice(),
                SESSION_HOURS as i32,
                SESSIONS_KEPT - 1
            )
            .get_result::<PersonAuthRow>(conn)
            .await
            .optional()?
            .map(member))
        })
    }

    fn session<'a>(
        &'a self,
        session: &'a [u8; 32],
    ) -> BoxFuture<'a, anyhow::Result<Option<Caller>>> {
        self.read(async move |conn| {
            Ok(sql!(SESSION_PERSON, session.as_slice())
                .get_result::<PersonAuthRow>(conn)
                .await
                .optional()?
                .map(member))
        })
    }

    fn close_session<'a>(&'a self, session: &'a [u8; 32]) -> BoxFuture<'a, anyhow::Result<()>> {
        self.read(async move |conn| {
            diesel::delete(dashboard_sessions::table.find(session.as_slice()))
                .execute(conn)
                .await?;
            Ok(())
        })
    }
}

impl PgStore {
    /// Drops the grants of keys idle for longer than the counted window, idempotency records
    /// older than 24 hours, and dashboard sessions past their end: how many of each.
    pub async fn sweep(&self) -> anyhow::Result<(usize, usize, usize)> {
        let mut conn = self.conn().await?;
        let grants = sql!(SWEEP_GRANTS, COUNTED_SECONDS as i64)
            .execute(&mut conn)
            .await?;
        let keys = diesel::delete(
            idempotency_keys::table.filter(idempotency_keys::created_at.lt(db_now() - 24.hours())),
        )
        .execute(&mut conn)
        .await?;
        // Sessions past their end.
        let sessions = diesel::delete(
            dashboard_sessions::table.filter(dashboard_sessions::expires_at.le(dsl::now)),
        )
        .execute(&mut conn)
        .await?;
        Ok((grants, keys, sessions))
    }
}
