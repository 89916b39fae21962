//! Applying a tenant file: every object upserted by name, in one transaction.
//!
//! Attributes given in the file are set to the file's values (so a changed role or archived
//! flag takes effect); applying the same file again changes nothing. An account's `state`
//! applies only when the account is created: later states come from agents' reports.

use crate::db::PgStore;
use diesel::prelude::*;
use diesel::sql_types::{BigInt, Bool, Bytea, Integer, Nullable, Text, Uuid as SqlUuid};
use diesel_async::{AsyncPgConnection, RunQueryDsl};
use fleetdesk_kernel::{BoxFuture, Market};
use fleetdesk_tenancy::ports::TenantStore;
use fleetdesk_tenancy::tenant_file::*;
use fleetdesk_tenancy::{IssuedKey, KeyKind};
use uuid::Uuid;

#[derive(QueryableByName)]
struct IdRow {
    #[diesel(sql_type = SqlUuid)]
    id: Uuid,
}

#[derive(QueryableByName)]
struct CountRow {
    #[diesel(sql_type = BigInt)]
    n: i64,
}

#[derive(QueryableByName)]
struct ArchivedRow {
    #[diesel(sql_type = SqlUuid)]
    id: Uuid,
    #[diesel(sql_type = Bool)]
    archived: bool,
}

#[derive(QueryableByName)]
struct AccountIds {
    #[diesel(sql_type = SqlUuid)]
    slot_id: Uuid,
    #[diesel(sql_type = SqlUuid)]
    account_id: Uuid,
}

// The statements, matched by name as the module comment says.

const COUNT_AGENT_KEYS: &str = r#"
SELECT count(*) AS n FROM api_keys WHERE agent_id = $1 AND revoked_at IS NULL
"#;

const COUNT_PERSONAL_KEYS: &str = r#"
SELECT count(*) AS n FROM api_keys WHERE person_id = $1 AND organization_id IS NOT DISTINCT FROM $2 AND revoked_at IS NULL
"#;

const INSERT_KEY: &str = r#"
INSERT INTO api_keys (kind, lookup, secret_hash, agent_id, person_id, organization_id) VALUES ($1, $2, $3, $4, $5, $6)
"#;

const UPSERT_PERSON: &str = r#"
INSERT INTO people (email, name, platform_admin) VALUES ($1, $2, $3)
ON CONFLICT (email) DO UPDATE SET name = EXCLUDED.name,
platform_admin = people.platform_admin OR EXCLUDED.platform_admin
RETURNING id
"#;

const UPSERT_WORKSPACE: &str = r#"
INSERT INTO workspaces (organization_id, name, client_review, ads_enabled, archived_at)
VALUES ($1, $2, $3, $4, CASE WHEN $5 THEN now() END)
ON CONFLICT (organization_id, name) DO UPDATE SET client_review = EXCLUDED.client_review,
ads_enabled = EXCLUDED.ads_enabled,
archived_at = CASE WHEN $6::boolean IS NULL THEN workspaces.archived_at
WHEN $6 THEN COALESCE(workspaces.archived_at, now()) ELSE NULL END
RETURNING id, archived_at IS NOT NULL AS archived
"#;

const UPSERT_PROJECT: &str = r#"
INSERT INTO projects (workspace_id, name) VALUES ($1, $2)
ON CONFLICT (workspace_id, name) DO UPDATE SET name = EXCLUDED.name RETURNING id
"#;

const UPSERT_AGENT: &str = r#"
INSERT INTO agents (workspace_id, name, role) VALUES ($1, $2, $3)
ON CONFLICT (workspace_id, name) DO UPDATE SET role = EXCLUDED.role RETURNING id
"#;

const UPSERT_PERSONA: &str = r#"
INSERT INTO personas (workspace_id, project_id, agent_id, name, bio, voice, track, background)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8)
ON CONFLICT (project_id, name) DO UPDATE SET agent_id = COALESCE(EXCLUDED.agent_id, personas.agent_id),
bio = COALESCE(EXCLUDED.bio, personas.bio), voice = COALESCE(EXCLUDED.voice, personas.voice),
track = COALESCE(EXCLUDED.track, personas.track),
background = COALESCE(EXCLUDED.background, personas.background)
RETURNING id
"#;

const UPSERT_CAST: &str = r#"
INSERT INTO persona_cast (persona_id, code, name, summary) VALUES ($1, $2, $3, $4)
ON CONFLICT (persona_id, code) DO UPDATE SET name = EXCLUDED.name,
summary = COALESCE(EXCLUDED.summary, persona_cast.summary)
"#;

const UPSERT_FACT: &str = r#"
INSERT INTO persona_facts (persona_id, category, label, value, by_decision) VALUES ($1, $2, $3, $4, true)
ON CONFLICT (persona_id, category, label) DO UPDATE SET value = EXCLUDED.value
"#;

const UPSERT_SPACE: &str = r#"
INSERT INTO community_spaces (workspace_id, name, channel, external_id, market, space_type, track, location, language)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)
ON CONFLICT (channel, external_id) DO UPDATE SET name = EXCLUDED.name, market = EXCLUDED.market,
space_type = EXCLUDED.space_type, track = EXCLUDED.track, location = EXCLUDED.location,
language = EXCLUDED.language
WHERE community_spaces.workspace_id = EXCLUDED.workspace_id
RETURNING id
"#;

const UPSERT_PRODUCT: &str = r#"
INSERT INTO products (workspace_id, name, on_sale) VALUES ($1, $2, $3)
ON CONFLICT (workspace_id, name) DO UPDATE SET on_sale = EXCLUDED.on_sale
"#;

const UPSERT_WIKI_SOURCE: &str = r#"
INSERT INTO wiki_sources (workspace_id, kind, name, locator, every_hours) VALUES ($1, $2, $3, $4, $5)
ON CONFLICT (workspace_id, name) DO UPDATE SET kind = EXCLUDED.kind, locator = EXCLUDED.locator,
every_hours = EXCLUDED.every_hours
"#;

const UPSERT_ACCOUNT: &str = r#"
WITH slot AS (
INSERT INTO account_slots (organization_id, workspace_id, persona_id, code, legacy_code, platform, market, timezone, handle, daily_target, publishing)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)
ON CONFLICT (organization_id, platform, code) DO UPDATE SET
legacy_code = COALESCE(EXCLUDED.legacy_code, account_slots.legacy_code),
market = EXCLUDED.market, timezone = EXCLUDED.timezone,
handle = COALESCE(EXCLUDED.handle, account_slots.handle),
daily_target = EXCLUDED.daily_target, publishing = EXCLUDED.publishing
WHERE account_slots.persona_id = EXCLUDED.persona_id
RETURNING id),
gen AS (
INSERT INTO account_generations (slot_id, generation, state, onboarded_at)
SELECT id, 1, $12, $13 FROM slot
ON CONFLICT (slot_id, generation) DO NOTHING RETURNING id, slot_id)
SELECT slot.id AS slot_id, COALESCE(
(SELECT id FROM gen),
(SELECT g.id FROM account_generations g WHERE g.slot_id = slot.id ORDER BY g.generation DESC LIMIT 1)) AS account_id
FROM slot
"#;

const UPSERT_ORGANIZATION: &str = r#"
INSERT INTO organizations (name, monthly_credit_limit) VALUES ($1, $2)
ON CONFLICT (name) DO UPDATE SET monthly_credit_limit = EXCLUDED.monthly_credit_limit RETURNING id
"#;

const UPSERT_MEMBER: &str = r#"
INSERT INTO members (organization_id, person_id, role, review, left_at)
VALUES ($1, $2, $3, $4, CASE WHEN $5 THEN now() END)
ON CONFLICT (organization_id, person_id) DO UPDATE SET role = EXCLUDED.role,
review = EXCLUDED.review,
left_at = CASE WHEN $5 THEN COALESCE(members.left_at, now()) ELSE NULL END
"#;

const COUNT_ORGANIZATIONS: &str = r#"
SELECT count(*) AS n FROM organizations
"#;

type Tx<'c> = &'c mut AsyncPgConnection;

async fn id(
    q: diesel::query_builder::BoxedSqlQuery<'_, diesel::pg::Pg, diesel::query_builder::SqlQuery>,
    conn: Tx<'_>,
) -> anyhow::Result<Uuid> {
    let row: IdRow = q.get_result(conn).await?;
    Ok(row.id)
}

/// Issues keys until the principal holds `wanted` valid ones; returns the new full keys.
async fn ensure_keys(
    conn: Tx<'_>,
    kind: KeyKind,
    owner: Uuid,
    organization: Option<Uuid>,
    wanted: u32,
) -> anyhow::Result<Vec<String>> {
    let valid: CountRow = match kind {
        KeyKind::Agent => {
            diesel::sql_query(COUNT_AGENT_KEYS)
                .bind::<SqlUuid, _>(owner)
                .get_result(conn)
                .await?
        }
        KeyKind::Personal => {
            diesel::sql_query(COUNT_PERSONAL_KEYS)
                .bind::<SqlUuid, _>(owner)
                .bind::<Nullable<SqlUuid>, _>(organization)
                .get_result(conn)
                .await?
        }
    };
    let missing = i64::from(wanted).saturating_sub(valid.n).max(0);
    let mut issued = Vec::new();
    for _ in 0..missing {
        let key = IssuedKey::generate(kind);
        let (agent_id, person_id) = match kind {
            KeyKind::Agent => (Some(owner), None),
            KeyKind::Personal => (None, Some(owner)),
        };
        diesel::sql_query(INSERT_KEY)
            .bind::<Text, _>(kind.as_str())
            .bind::<Text, _>(&key.lookup)
            .bind::<Bytea, _>(key.hash.as_slice())
            .bind::<Nullable<SqlUuid>, _>(agent_id)
            .bind::<Nullable<SqlUuid>, _>(person_id)
            .bind::<Nullable<SqlUuid>, _>(organization)
            .execute(conn)
            .await?;
        issued.push(key.full);
    }
    Ok(issued)
}

async fn upsert_person(
    conn: Tx<'_>,
    email: &str,
    name: &str,
    platform_admin: bool,
) -> anyhow::Result<Uuid> {
    id(
        diesel::sql_query(UPSERT_PERSON)
            .into_boxed()
            .bind::<Text, _>(email.trim().to_lowercase())
            .bind::<Text, _>(name.trim().to_owned())
            .bind::<Bool, _>(platform_admin),
        conn,
    )
    .await
}

async fn apply_workspace(
    conn: Tx<'_>,
    org_id: Uuid,
    w: &WorkspaceSpec,
) -> anyhow::Result<WorkspaceReport> {
    let ws: ArchivedRow = diesel::sql_query(UPSERT_WORKSPACE)
        .bind::<SqlUuid, _>(org_id)
        .bind::<Text, _>(w.name.trim())
        .bind::<Bool, _>(w.client_review)
        .bind::<Bool, _>(w.ads_enabled)
        .bind::<Bool, _>(w.archived.unwrap_or(false))
        .bind::<Nullable<Bool>, _>(w.archived)
        .get_result(conn)
        .await?;
    let mut report = WorkspaceReport {
        id: ws.id,
        name: w.name.trim().to_owned(),
        archived: ws.archived,
        projects: Vec::new(),
        agents: Vec::new(),
        personas: Vec::new(),
        community_spaces: Vec::new(),
    };
    for p in &w.projects {
        let pid = id(
            diesel::sql_query(UPSERT_PROJECT)
                .into_boxed()
                .bind::<SqlUuid, _>(ws.id)
                .bind::<Text, _>(p.name.trim().to_owned()),
            conn,
        )
        .await?;
        report.projects.push(NamedReport {
            id: pid,
            name: p.name.trim().to_owned(),
        });
    }
    for a in &w.agents {
        let aid = id(
            diesel::sql_query(UPSERT_AGENT)
                .into_boxed()
                .bind::<SqlUuid, _>(ws.id)
                .bind::<Text, _>(a.name.trim().to_owned())
                .bind::<Text, _>(a.role.as_str()),
            conn,
        )
        .await?;
        let keys = ensure_keys(conn, KeyKind::Agent, aid, None, a.keys).await?;
        report.agents.push(AgentReport {
            id: aid,
            name: a.name.trim().to_owned(),
            role: a.role,
            keys,
        });
    }
    for p in &w.personas {
        let project = match &p.project {
            Some(name) => report.projects.iter().find(|x| x.name == name.trim()),
            None => report.projects.as_slice().first(),
        }
        .ok_or_else(|| anyhow::anyhow!("persona {}: project not found", p.name))?
        .id;
        let agent = p
            .agent
            .as_ref()
            .and_then(|name| report.agents.iter().find(|a| a.name == name.trim()))
            .map(|a| a.id);
        let persona_id = id(
            diesel::sql_query(UPSERT_PERSONA)
                .into_boxed()
                .bind::<SqlUuid, _>(ws.id)
                .bind::<SqlUuid, _>(project)
                .bind::<Nullable<SqlUuid>, _>(agent)
                .bind::<Text, _>(p.name.trim().to_owned())
                .bind::<Nullable<Text>, _>(p.bio.clone())
                .bind::<Nullable<Text>, _>(p.voice.clone())
                .bind::<Nullable<Text>, _>(p.track.clone())
                .bind::<Nullable<Text>, _>(p.background.clone()),
            conn,
        )
        .await?;
        for c in &p.cast {
            diesel::sql_query(UPSERT_CAST)
                .bind::<SqlUuid, _>(persona_id)
                .bind::<Text, _>(c.code.trim().to_lowercase())
                .bind::<Text, _>(c.name.trim())
                .bind::<Nullable<Text>, _>(c.summary.as_deref())
                .execute(conn)
                .await?;
        }
        for f in &p.facts {
            diesel::sql_query(UPSERT_FACT)
                .bind::<SqlUuid, _>(persona_id)
                .bind::<Text, _>(f.category.trim())
                .bind::<Text, _>(f.label.trim())
                .bind::<Text, _>(f.value.trim())
                .execute(conn)
                .await?;
        }
        let mut accounts = Vec::new();
        for acc in &p.accounts {
            accounts.push(apply_account(conn, org_id, ws.id, persona_id, acc).await?);
        }
        report.personas.push(PersonaReport {
            id: persona_id,
            name: p.name.trim().to_owned(),
            accounts,
        });
    }
    for s in &w.community_spaces {
        let market = s
            .market
            .as_deref()
            .map(Market::parse)
            .transpose()
            .map_err(|e| anyhow::anyhow!("{e}"))?
            .unwrap_or(Market::DEFAULT);
        let sid = id(
            diesel::sql_query(UPSERT_SPACE)
                .into_boxed()
                .bind::<SqlUuid, _>(ws.id)
                .bind::<Text, _>(s.name.trim().to_owned())
                .bind::<Text, _>(s.channel.as_str())
                .bind::<Text, _>(s.external_id.trim().to_owned())
                .bind::<Text, _>(market.as_str().to_owned())
                .bind::<Nullable<Text>, _>(s.space_type.clone())
                .bind::<Nullable<Text>, _>(s.track.clone())
                .bind::<Nullable<Text>, _>(s.location.clone())
                .bind::<Nullable<Text>, _>(s.language.clone()),
            conn,
        )
        .await
        .map_err(|e| {
            anyhow::anyhow!(
                "community space {}: registered in another workspace ({e})",
                s.external_id
            )
        })?;
        report.community_spaces.push(SpaceReport {
            space_id: sid,
            name: s.name.trim().to_owned(),
        });
    }
    for p in &w.products {
        diesel::sql_query(UPSERT_PRODUCT)
            .bind::<SqlUuid, _>(ws.id)
            .bind::<Text, _>(p.name.trim())
            .bind::<Bool, _>(p.on_sale)
            .execute(conn)
            .await?;
    }
    for s in &w.wiki_sources {
        diesel::sql_query(UPSERT_WIKI_SOURCE)
            .bind::<SqlUuid, _>(ws.id)
            .bind::<Text, _>(&s.kind)
            .bind::<Text, _>(s.name.trim())
            .bind::<Text, _>(s.locator.trim())
            .bind::<Integer, _>(s.every_hours)
            .execute(conn)
            .await?;
    }
    Ok(report)
}

async fn apply_account(
    conn: Tx<'_>,
    org_id: Uuid,
    ws_id: Uuid,
    persona_id: Uuid,
    acc: &AccountSpec,
) -> anyhow::Result<AccountReport> {
    let market = acc
        .market
        .as_deref()
        .map(Market::parse)
        .transpose()
        .map_err(|e| anyhow::anyhow!("{e}"))?
        .unwrap_or(Market::DEFAULT);
    let timezone = acc
        .timezone
        .clone()
        .unwrap_or_else(|| market.zone_name().to_owned());
    let handle = acc
        .handle
        .as_deref()
        .map(|h| h.trim().trim_start_matches('@').to_owned())
        .filter(|h| !h.is_empty());
    let ids: Option<AccountIds> = diesel::sql_query(UPSERT_ACCOUNT)
        .bind::<SqlUuid, _>(org_id)
        .bind::<SqlUuid, _>(ws_id)
        .bind::<SqlUuid, _>(persona_id)
        .bind::<Text, _>(acc.code.as_str())
        .bind::<Nullable<Text>, _>(acc.legacy_code.as_ref().map(|c| c.as_str()))
        .bind::<Text, _>(acc.platform.as_str())
        .bind::<Text, _>(market.as_str())
        .bind::<Text, _>(&timezone)
        .bind::<Nullable<Text>, _>(handle.as_deref())
        .bind::<Integer, _>(acc.daily_target)
        .bind::<Text, _>(acc.publishing.as_str())
        .bind::<Text, _>(acc.state.as_str())
        .bind::<Nullable<diesel::sql_types::Date>, _>(jiff_diesel::NullableDate::from(
            acc.onboarded_at,
        ))
        .get_result(conn)
        .await
        .optional()?;
    let ids = ids.ok_or_else(|| {
        anyhow::anyhow!(
            "account {} on {} belongs to another persona",
            acc.code,
            acc.platform
        )
    })?;
    Ok(AccountReport {
        slot_id: ids.slot_id,
        account_id: ids.account_id,
        code: acc.code.to_string(),
        platform: acc.platform,
    })
}

impl TenantStore for PgStore {
    fn apply<'a>(&'a self, file: &'a TenantFile) -> BoxFuture<'a, anyhow::Result<ApplyReport>> {
        self.tx(async move |conn| {
            let mut report = ApplyReport::default();
            for admin in &file.platform_admins {
                let pid = upsert_person(conn, &admin.email, &admin.name, true).await?;
                let keys = ensure_keys(conn, KeyKind::Personal, pid, None, admin.keys).await?;
                report.platform_admins.push(PersonReport {
                    id: pid,
                    email: admin.email.trim().to_lowercase(),
                    keys,
                });
            }
            for o in &file.organizations {
                let org_id = id(
                    diesel::sql_query(UPSERT_ORGANIZATION)
                        .into_boxed()
                        .bind::<Text, _>(o.name.trim().to_owned())
                        .bind::<BigInt, _>(o.monthly_credit_limit),
                    conn,
                )
                .await?;
                let mut org = OrganizationReport {
                    id: org_id,
                    name: o.name.trim().to_owned(),
                    members: Vec::new(),
                    workspaces: Vec::new(),
                };
                for m in &o.members {
                    let pid = upsert_person(conn, &m.email, &m.name, false).await?;
                    diesel::sql_query(UPSERT_MEMBER)
                        .bind::<SqlUuid, _>(org_id)
                        .bind::<SqlUuid, _>(pid)
                        .bind::<Text, _>(m.role.as_str())
                        .bind::<Bool, _>(m.review)
                        .bind::<Bool, _>(m.left)
                        .execute(conn)
                        .await?;
                    let keys = if m.left {
                        Vec::new()
                    } else {
                        ensure_keys(conn, KeyKind::Personal, pid, Some(org_id), m.keys).await?
                    };
                    org.members.push(PersonReport {
                        id: pid,
                        email: m.email.trim().to_lowercase(),
                        keys,
                    });
                }
                for w in &o.workspaces {
                    org.workspaces.push(apply_workspace(conn, org_id, w).await?);
                }
                report.organizations.push(org);
            }
            Ok(report)
        })
    }

    fn is_empty(&self) -> BoxFuture<'_, anyhow::Result<bool>> {
        self.read(async move |conn| {
            let row: CountRow = diesel::sql_query(COUNT_ORGANIZATIONS)
                .get_result(conn)
                .await?;
            Ok(row.n == 0)
        })
    }
}

statements!(
    COUNT_AGENT_KEYS,
    COUNT_PERSONAL_KEYS,
    INSERT_KEY,
    UPSERT_PERSON,
    UPSERT_WORKSPACE,
    UPSERT_PROJECT,
    UPSERT_AGENT,
    UPSERT_PERSONA,
    UPSERT_CAST,
    UPSERT_FACT,
    UPSERT_SPACE,
    UPSERT_PRODUCT,
    UPSERT_WIKI_SOURCE,
    UPSERT_ACCOUNT,
    UPSERT_ORGANIZATION,
    UPSERT_MEMBER,
    COUNT_ORGANIZATIONS,
);
