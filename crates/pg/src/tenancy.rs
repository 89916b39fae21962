//! Applying a tenant file: every object upserted by name, in one transaction.
//!
//! Attributes given in the file are set to the file's values (so a changed role or archived
//! flag takes effect); applying the same file again changes nothing. An account's `state`
//! applies only when the account is created: later states come from agents' reports.

use crate::db::{PgStore, Tx, coalesce, column};
use crate::schema::{
    agents, api_keys, community_spaces, members, organizations, people, persona_cast,
    persona_facts, personas, products, projects, webhook_endpoints, wiki_sources, workspaces,
};
use diesel::dsl::{AsExprOf, case_when, now};
use diesel::prelude::*;
use diesel::sql_types::{Bool, Nullable, Text, Timestamptz};
use diesel::upsert::{DecoratableTarget, excluded};
use diesel_async::RunQueryDsl;
use fleetdesk_kernel::BoxFuture;
use fleetdesk_kernel::persona::{FactStatus, PersonaStatus};
use fleetdesk_tenancy::keys::KeyHolder;
use fleetdesk_tenancy::ports::TenantStore;
use fleetdesk_tenancy::tenant_file::*;
use fleetdesk_tenancy::{IssuedKey, KeyKind};
use fleetdesk_webhooks::WebhookSecret;
use fleetdesk_webhooks::endpoints::{MAX_PER_WORKSPACE, normalized_types};
use fleetdesk_wiki::aliases;
use uuid::Uuid;

row! {
    struct AccountIds {
        slot_id: Uuid,
        account_id: Uuid,
    }
}

// The statements, matched by name as the module comment says.

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

/// `now()` when `yes`, else NULL: when a workspace was archived or a member left.
fn since_now(yes: bool) -> diesel::dsl::case_when<AsExprOf<bool, Bool>, now, Timestamptz> {
    case_when::<_, _, Timestamptz>(yes.into_sql::<Bool>(), now)
}

/// Issues keys until the principal holds `wanted` valid ones; returns the new full keys.
async fn ensure_keys(
    conn: Tx<'_>,
    kind: KeyKind,
    owner: Uuid,
    organization: Option<Uuid>,
    wanted: u32,
) -> anyhow::Result<Vec<String>> {
    let unrevoked = api_keys::table.filter(api_keys::revoked_at.is_null());
    let valid: i64 = match kind {
        KeyKind::Agent => {
            unrevoked
                .filter(api_keys::agent_id.eq(owner))
                .count()
                .get_result(conn)
                .await?
        }
        KeyKind::Personal => {
            unrevoked
                .filter(api_keys::person_id.eq(owner))
                .filter(api_keys::organization_id.is_not_distinct_from(organization))
                .count()
                .get_result(conn)
                .await?
        }
    };
    let missing = i64::from(wanted).saturating_sub(valid).max(0);
    let mut issued = Vec::new();
    for _ in 0..missing {
        issued.push(insert_key(conn, kind, owner, organization).await?);
    }
    Ok(issued)
}

/// Issues one key of `kind` to `owner` (bound to `organization` for a person): the key, which
/// only its hash outlives.
async fn insert_key(
    conn: Tx<'_>,
    kind: KeyKind,
    owner: Uuid,
    organization: Option<Uuid>,
) -> anyhow::Result<String> {
    let key = IssuedKey::generate(kind);
    let (agent_id, person_id) = match kind {
        KeyKind::Agent => (Some(owner), None),
        KeyKind::Personal => (None, Some(owner)),
    };
    diesel::insert_into(api_keys::table)
        .values((
            api_keys::kind.eq(kind.as_str()),
            api_keys::lookup.eq(&key.lookup),
            api_keys::secret_hash.eq(key.hash.as_slice()),
            api_keys::agent_id.eq(agent_id),
            api_keys::person_id.eq(person_id),
            api_keys::organization_id.eq(organization),
        ))
        .execute(conn)
        .await?;
    Ok(key.full)
}

impl PgStore {
    /// Issues one more key to `holder`, beside the keys it holds (a lost printout's way back;
    /// revoke the lost key through the admin API): the key, or `None` when no such member,
    /// agent or admin is there.
    pub async fn issue_key(&self, holder: &KeyHolder) -> anyhow::Result<Option<String>> {
        let holder = holder.normalized();
        self.tx(async move |conn| {
            let (owner, organization) = match &holder {
                KeyHolder::Member {
                    organization,
                    email,
                } => {
                    let found: Option<(Uuid, Uuid)> = members::table
                        .inner_join(organizations::table)
                        .inner_join(people::table)
                        .filter(organizations::name.eq(organization))
                        .filter(people::email.eq(email))
                        .filter(members::left_at.is_null())
                        .select((people::id, organizations::id))
                        .first(conn)
                        .await
                        .optional()?;
                    let Some((person, org)) = found else {
                        return Ok(None);
                    };
                    (person, Some(org))
                }
                KeyHolder::Agent {
                    organization,
                    workspace,
                    agent,
                } => {
                    let found: Option<Uuid> = agents::table
                        .inner_join(workspaces::table.inner_join(organizations::table))
                        .filter(organizations::name.eq(organization))
                        .filter(workspaces::name.eq(workspace))
                        .filter(workspaces::archived_at.is_null())
                        .filter(agents::name.eq(agent))
                        .select(agents::id)
                        .first(conn)
                        .await
                        .optional()?;
                    let Some(agent) = found else {
                        return Ok(None);
                    };
                    (agent, None)
                }
                KeyHolder::PlatformAdmin { email } => {
                    let found: Option<Uuid> = people::table
                        .filter(people::email.eq(email))
                        .filter(people::platform_admin)
                        .select(people::id)
                        .first(conn)
                        .await
                        .optional()?;
                    let Some(person) = found else {
                        return Ok(None);
                    };
                    (person, None)
                }
            };
            Ok(Some(
                insert_key(conn, holder.kind(), owner, organization).await?,
            ))
        })
        .await
    }
}

async fn upsert_person(
    conn: Tx<'_>,
    email: &str,
    name: &str,
    platform_admin: bool,
) -> anyhow::Result<Uuid> {
    Ok(diesel::insert_into(people::table)
        .values((
            people::email.eq(email),
            people::name.eq(name),
            people::platform_admin.eq(platform_admin),
        ))
        .on_conflict(people::email)
        .do_update()
        .set((
            people::name.eq(excluded(people::name)),
            people::platform_admin.eq(people::platform_admin.or(excluded(people::platform_admin))),
        ))
        .returning(people::id)
        .get_result(conn)
        .await?)
}

/// The workspace's monthly ad cap as the file says (none when absent), and its ad accounts
/// added or updated by id (an account the file no longer lists stays, with its data).
const SET_AD_CAP: &str = "UPDATE workspaces SET monthly_ad_cap = ($2::int8 / 100.0)::numeric(14, 2), ad_cap_currency = $3 WHERE id = $1";

const UPSERT_AD_ACCOUNTS: &str = r#"
INSERT INTO ad_accounts (workspace_id, id, name, currency, token_env, instagram_user_id)
SELECT $1, a.id, a.name, a.currency, a.token_env, a.instagram_user_id
FROM unnest($2::text[], $3::text[], $4::text[], $5::text[], $6::text[])
     AS a(id, name, currency, token_env, instagram_user_id)
ON CONFLICT (workspace_id, id) DO UPDATE
SET name = EXCLUDED.name, currency = EXCLUDED.currency, token_env = EXCLUDED.token_env,
    instagram_user_id = EXCLUDED.instagram_user_id
"#;

async fn apply_ads(conn: Tx<'_>, ws_id: Uuid, w: &WorkspaceSpec) -> QueryResult<()> {
    let cap = w.monthly_ad_cap.as_ref();
    sql!(
        SET_AD_CAP,
        ws_id,
        cap.map(|c| c.cents().0),
        cap.map(|c| c.currency.as_str())
    )
    .execute(conn)
    .await?;
    if w.ad_accounts.is_empty() {
        return Ok(());
    }
    let a = &w.ad_accounts;
    sql!(
        UPSERT_AD_ACCOUNTS,
        ws_id,
        column(a, |a| a.id.as_str()),
        column(a, |a| a.name.as_str()),
        column(a, |a| a.currency.as_str()),
        column(a, |a| a.token_env.as_str()),
        column(a, |a| a.instagram_user_id.as_deref())
    )
    .execute(conn)
    .await?;
    Ok(())
}

/// The workspace's webhook endpoints, matched by url: one that exists takes the file's types,
/// description and (when given) enabled; a new one gets a secret, reported once. The workspace
/// keeps at most [`MAX_PER_WORKSPACE`] endpoints (those made through the Personal API count).
async fn apply_webhooks(
    conn: Tx<'_>,
    ws_id: Uuid,
    w: &WorkspaceSpec,
) -> anyhow::Result<Vec<WebhookReport>> {
    use webhook_endpoints as we;
    if w.webhooks.is_empty() {
        return Ok(Vec::new());
    }
    let existing: Vec<(Uuid, String)> = we::table
        .filter(we::workspace_id.eq(ws_id))
        .select((we::id, we::url))
        .for_update()
        .load(conn)
        .await?;
    let mut count = existing.len() as i64;
    let mut report = Vec::with_capacity(w.webhooks.len());
    for h in &w.webhooks {
        let types: Vec<&str> = normalized_types(&h.types)
            .into_iter()
            .map(|k| k.as_str())
            .collect();
        if let Some((id, _)) = existing.iter().find(|(_, url)| *url == h.url) {
            // Turned on by the file when it was off: started afresh, as a person's enabling
            // through the API does (what the service noted when it disabled it is cleared).
            let revived = (h.enabled == Some(true)).then(|| {
                (
                    we::disabled_reason.eq(case_when::<_, _, Nullable<Text>>(
                        we::enabled,
                        we::disabled_reason,
                    )),
                    we::failing_since.eq(case_when::<_, _, Nullable<Timestamptz>>(
                        we::enabled,
                        we::failing_since,
                    )),
                )
            });
            diesel::update(we::table.find(id))
                .set((
                    we::types.eq(&types),
                    we::description.eq(h.description.as_deref()),
                    h.enabled.map(|on| we::enabled.eq(on)),
                    revived,
                ))
                .execute(conn)
                .await?;
            report.push(WebhookReport {
                id: *id,
                url: h.url.clone(),
                secret: None,
            });
            continue;
        }
        if count >= MAX_PER_WORKSPACE {
            anyhow::bail!(
                "workspace {}: webhooks: at most {MAX_PER_WORKSPACE} endpoints per workspace \
                 (counting those made through the Personal API)",
                w.name
            );
        }
        count += 1;
        let secret = WebhookSecret::generate()?.to_string();
        let id: Uuid = diesel::insert_into(we::table)
            .values((
                we::workspace_id.eq(ws_id),
                we::url.eq(&h.url),
                we::description.eq(h.description.as_deref()),
                we::types.eq(&types),
                we::enabled.eq(h.enabled.unwrap_or(true)),
                we::secret.eq(&secret),
            ))
            .returning(we::id)
            .get_result(conn)
            .await?;
        report.push(WebhookReport {
            id,
            url: h.url.clone(),
            secret: Some(secret),
        });
    }
    Ok(report)
}

async fn apply_workspace(
    conn: Tx<'_>,
    org_id: Uuid,
    w: &WorkspaceSpec,
) -> anyhow::Result<WorkspaceReport> {
    let archive = w.archived.into_sql::<Nullable<Bool>>();
    let (ws_id, archived): (Uuid, bool) = diesel::insert_into(workspaces::table)
        .values((
            workspaces::organization_id.eq(org_id),
            workspaces::name.eq(&w.name),
            workspaces::client_review.eq(w.client_review),
            workspaces::ads_enabled.eq(w.ads_enabled),
            workspaces::marketplace.eq(w.marketplace().as_str()),
            workspaces::archived_at.eq(since_now(w.archived.unwrap_or(false))),
        ))
        .on_conflict((workspaces::organization_id, workspaces::name))
        .do_update()
        .set((
            workspaces::client_review.eq(excluded(workspaces::client_review)),
            workspaces::ads_enabled.eq(excluded(workspaces::ads_enabled)),
            workspaces::marketplace.eq(excluded(workspaces::marketplace)),
            // Not in the file: as it was; archived: since it first was; else not archived.
            workspaces::archived_at.eq(case_when::<_, _, Nullable<Timestamptz>>(
                archive.is_null(),
                workspaces::archived_at,
            )
            .when(archive, coalesce(workspaces::archived_at, now))),
        ))
        .returning((workspaces::id, workspaces::archived_at.is_not_null()))
        .get_result(conn)
        .await?;
    let mut report = WorkspaceReport {
        id: ws_id,
        name: w.name.clone(),
        archived,
        projects: Vec::new(),
        agents: Vec::new(),
        personas: Vec::new(),
        community_spaces: Vec::new(),
        webhooks: Vec::new(),
    };
    for p in &w.projects {
        let pid: Uuid = diesel::insert_into(projects::table)
            .values((projects::workspace_id.eq(ws_id), projects::name.eq(&p.name)))
            .on_conflict((projects::workspace_id, projects::name))
            .do_update()
            .set(projects::name.eq(excluded(projects::name)))
            .returning(projects::id)
            .get_result(conn)
            .await?;
        report.projects.push(NamedReport {
            id: pid,
            name: p.name.clone(),
        });
    }
    for a in &w.agents {
        let aid: Uuid = diesel::insert_into(agents::table)
            .values((
                agents::workspace_id.eq(ws_id),
                agents::name.eq(&a.name),
                agents::role.eq(a.role.as_str()),
                a.silent_after_hours
                    .map(|h| agents::silent_after_hours.eq(h)),
            ))
            .on_conflict((agents::workspace_id, agents::name))
            .do_update()
            .set((
                agents::role.eq(excluded(agents::role)),
                a.silent_after_hours
                    .map(|_| agents::silent_after_hours.eq(excluded(agents::silent_after_hours))),
            ))
            .returning(agents::id)
            .get_result(conn)
            .await?;
        let keys = ensure_keys(conn, KeyKind::Agent, aid, None, a.keys).await?;
        report.agents.push(AgentReport {
            id: aid,
            name: a.name.clone(),
            role: a.role,
            keys,
        });
    }
    for p in &w.personas {
        let project = (p.project.as_deref())
            .and_then(|name| report.project_id(name))
            .ok_or_else(|| anyhow::anyhow!("persona {}: project not found", p.name))?;
        let agent = p.agent.as_deref().and_then(|name| report.agent_id(name));
        // What the file leaves out keeps its stored value.
        let persona_id: Uuid = diesel::insert_into(personas::table)
            .values((
                personas::workspace_id.eq(ws_id),
                personas::project_id.eq(project),
                personas::agent_id.eq(agent),
                personas::name.eq(&p.name),
                personas::bio.eq(p.bio.as_deref()),
                personas::voice.eq(p.voice.as_deref()),
                personas::track.eq(p.track.as_deref()),
                personas::background.eq(p.background.as_deref()),
                personas::speech_rules.eq(&p.speech_rules),
                personas::forbidden.eq(&p.forbidden),
            ))
            // A retired persona's name is free again: the file matches the live one.
            .on_conflict((personas::project_id, personas::name))
            .filter_target(personas::status.ne(PersonaStatus::Retired.as_str()))
            .do_update()
            .set((
                personas::agent_id.eq(coalesce(excluded(personas::agent_id), personas::agent_id)),
                personas::bio.eq(coalesce(excluded(personas::bio), personas::bio)),
                personas::voice.eq(coalesce(excluded(personas::voice), personas::voice)),
                personas::track.eq(coalesce(excluded(personas::track), personas::track)),
                personas::background.eq(coalesce(
                    excluded(personas::background),
                    personas::background,
                )),
                personas::speech_rules.eq(excluded(personas::speech_rules)),
                personas::forbidden.eq(excluded(personas::forbidden)),
            ))
            .returning(personas::id)
            .get_result(conn)
            .await?;
        for c in &p.cast {
            diesel::insert_into(persona_cast::table)
                .values((
                    persona_cast::persona_id.eq(persona_id),
                    persona_cast::code.eq(&c.code),
                    persona_cast::name.eq(&c.name),
                    persona_cast::summary.eq(c.summary.as_deref()),
                ))
                .on_conflict((persona_cast::persona_id, persona_cast::code))
                .do_update()
                .set((
                    persona_cast::name.eq(excluded(persona_cast::name)),
                    persona_cast::summary.eq(coalesce(
                        excluded(persona_cast::summary),
                        persona_cast::summary,
                    )),
                ))
                .execute(conn)
                .await?;
        }
        for f in &p.facts {
            diesel::insert_into(persona_facts::table)
                .values((
                    persona_facts::persona_id.eq(persona_id),
                    persona_facts::category.eq(&f.category),
                    persona_facts::label.eq(&f.label),
                    persona_facts::value.eq(&f.value),
                    persona_facts::status.eq(FactStatus::Decided.as_str()),
                ))
                // Facts of the file are decided by people: they replace the decided fact of
                // the same category and label.
                .on_conflict((
                    persona_facts::persona_id,
                    persona_facts::category,
                    persona_facts::label,
                ))
                .filter_target(persona_facts::status.eq(FactStatus::Decided.as_str()))
                .do_update()
                .set(persona_facts::value.eq(excluded(persona_facts::value)))
                .execute(conn)
                .await?;
        }
        let mut accounts = Vec::new();
        for acc in &p.accounts {
            accounts.push(apply_account(conn, org_id, ws_id, persona_id, acc).await?);
        }
        report.personas.push(PersonaReport {
            id: persona_id,
            name: p.name.clone(),
            accounts,
        });
    }
    for s in &w.community_spaces {
        use community_spaces as cs;
        let upsert = diesel::insert_into(cs::table)
            .values((
                cs::workspace_id.eq(ws_id),
                cs::name.eq(&s.name),
                cs::channel.eq(s.channel.as_str()),
                cs::external_id.eq(&s.external_id),
                cs::market.eq(s.market().as_str().to_owned()),
                cs::space_type.eq(s.space_type.as_deref()),
                cs::track.eq(s.track.as_deref()),
                cs::location.eq(s.location.as_deref()),
                cs::language.eq(s.language.as_deref()),
                cs::status.eq(s.status()),
            ))
            .on_conflict((cs::channel, cs::external_id))
            .do_update()
            .set((
                cs::name.eq(excluded(cs::name)),
                cs::market.eq(excluded(cs::market)),
                cs::space_type.eq(excluded(cs::space_type)),
                cs::track.eq(excluded(cs::track)),
                cs::location.eq(excluded(cs::location)),
                cs::language.eq(excluded(cs::language)),
                cs::status.eq(excluded(cs::status)),
            ));
        // A space registered in another workspace is not updated and returns no row.
        let mine = cs::workspace_id.eq(excluded(cs::workspace_id));
        let sid: Uuid = diesel::query_dsl::methods::FilterDsl::filter(upsert, mine)
            .returning(cs::id)
            .get_result(conn)
            .await
            .map_err(|e| {
                anyhow::anyhow!(
                    "community space {}: registered in another workspace ({e})",
                    s.external_id
                )
            })?;
        report.community_spaces.push(SpaceReport {
            space_id: sid,
            name: s.name.clone(),
        });
    }
    for p in &w.products {
        let terms = fleetdesk_wiki::search::index_text(&p.search_text());
        diesel::insert_into(products::table)
            .values((
                products::workspace_id.eq(ws_id),
                products::name.eq(&p.name),
                products::on_sale.eq(p.on_sale),
                products::summary.eq(p.summary.as_deref()),
                products::price.eq(p.price.as_deref()),
                products::url.eq(p.url.as_deref()),
                products::terms.eq(terms),
            ))
            .on_conflict((products::workspace_id, products::name))
            .do_update()
            .set((
                products::on_sale.eq(excluded(products::on_sale)),
                products::summary.eq(excluded(products::summary)),
                products::price.eq(excluded(products::price)),
                products::url.eq(excluded(products::url)),
                products::terms.eq(excluded(products::terms)),
            ))
            .execute(conn)
            .await?;
    }
    apply_ads(conn, ws_id, w).await?;
    report.webhooks = apply_webhooks(conn, ws_id, w).await?;
    for s in &w.wiki_sources {
        let project = s
            .project
            .as_deref()
            .and_then(|name| report.project_id(name));
        let agent = s.agent.as_deref().and_then(|name| report.agent_id(name));
        let same_place = wiki_sources::locator
            .eq(excluded(wiki_sources::locator))
            .and(wiki_sources::kind.eq(excluded(wiki_sources::kind)));
        diesel::insert_into(wiki_sources::table)
            .values((
                wiki_sources::project_id.eq(project),
                wiki_sources::agent_id.eq(agent),
                wiki_sources::scope_note.eq(s.scope_note.as_deref()),
                wiki_sources::workspace_id.eq(ws_id),
                wiki_sources::kind.eq(&s.kind),
                wiki_sources::name.eq(&s.name),
                wiki_sources::locator.eq(&s.locator),
                wiki_sources::every_hours.eq(s.every_hours),
            ))
            .on_conflict((wiki_sources::workspace_id, wiki_sources::name))
            .do_update()
            .set((
                wiki_sources::kind.eq(excluded(wiki_sources::kind)),
                wiki_sources::locator.eq(excluded(wiki_sources::locator)),
                wiki_sources::every_hours.eq(excluded(wiki_sources::every_hours)),
                wiki_sources::project_id.eq(excluded(wiki_sources::project_id)),
                wiki_sources::agent_id.eq(excluded(wiki_sources::agent_id)),
                wiki_sources::scope_note.eq(excluded(wiki_sources::scope_note)),
                // A source that now points elsewhere starts over: its cursor and last run
                // belonged to the old place.
                wiki_sources::cursor.eq(case_when::<_, _, Nullable<Text>>(
                    same_place,
                    wiki_sources::cursor,
                )),
                wiki_sources::last_run_at.eq(case_when::<_, _, Nullable<Timestamptz>>(
                    same_place,
                    wiki_sources::last_run_at,
                )),
                wiki_sources::last_status.eq(case_when::<_, _, Nullable<Text>>(
                    same_place,
                    wiki_sources::last_status,
                )),
            ))
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
    let ids: Option<AccountIds> = sql!(
        UPSERT_ACCOUNT,
        org_id,
        ws_id,
        persona_id,
        acc.code.as_str(),
        acc.legacy_code.as_ref().map(|c| c.as_str()),
        acc.platform.as_str(),
        acc.market().as_str(),
        acc.timezone(),
        acc.handle.as_deref(),
        acc.daily_target,
        acc.publishing.as_str(),
        acc.state.as_str(),
        jiff_diesel::NullableDate::from(acc.onboarded_at)
    )
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
                    email: admin.email.clone(),
                    keys,
                });
            }
            for o in &file.organizations {
                let org_id: Uuid = diesel::insert_into(organizations::table)
                    .values((
                        organizations::name.eq(&o.name),
                        organizations::monthly_credit_limit.eq(o.monthly_credit_limit),
                        organizations::suspended.eq(o.suspended),
                        organizations::price_product_brief.eq(o.prices.ad_product_brief),
                        organizations::price_topic_keyword.eq(o.prices.ad_topic_keyword),
                        organizations::wiki_review.eq(o.wiki_review.unwrap_or_default().as_str()),
                    ))
                    .on_conflict(organizations::name)
                    .do_update()
                    .set((
                        organizations::monthly_credit_limit
                            .eq(excluded(organizations::monthly_credit_limit)),
                        organizations::suspended.eq(excluded(organizations::suspended)),
                        organizations::price_product_brief
                            .eq(excluded(organizations::price_product_brief)),
                        organizations::price_topic_keyword
                            .eq(excluded(organizations::price_topic_keyword)),
                        // Absent from the file: the stored setting stays.
                        organizations::wiki_review.eq(case_when::<_, _, Text>(
                            o.wiki_review.is_some().into_sql::<Bool>(),
                            excluded(organizations::wiki_review),
                        )
                        .otherwise(organizations::wiki_review)),
                    ))
                    .returning(organizations::id)
                    .get_result(conn)
                    .await?;
                if let Some(lines) = &o.wiki_synonyms {
                    let groups = aliases::of_lines(lines);
                    let stored: Vec<String> = groups.iter().map(aliases::encode).collect();
                    diesel::update(organizations::table.filter(organizations::id.eq(org_id)))
                        .set((
                            organizations::wiki_aliases.eq(&stored),
                            organizations::wiki_alias_terms.eq(aliases::alias_terms(&groups)),
                        ))
                        .execute(conn)
                        .await?;
                }
                let mut org = OrganizationReport {
                    id: org_id,
                    name: o.name.clone(),
                    members: Vec::new(),
                    workspaces: Vec::new(),
                };
                for m in &o.members {
                    let pid = upsert_person(conn, &m.email, &m.name, false).await?;
                    diesel::insert_into(members::table)
                        .values((
                            members::organization_id.eq(org_id),
                            members::person_id.eq(pid),
                            members::role.eq(m.role.as_str()),
                            members::review.eq(m.review),
                            members::left_at.eq(since_now(m.left)),
                        ))
                        .on_conflict((members::organization_id, members::person_id))
                        .do_update()
                        .set((
                            members::role.eq(excluded(members::role)),
                            members::review.eq(excluded(members::review)),
                            // One who had left keeps the time they first left.
                            members::left_at.eq(case_when::<_, _, Nullable<Timestamptz>>(
                                m.left.into_sql::<Bool>(),
                                coalesce(members::left_at, now),
                            )),
                        ))
                        .execute(conn)
                        .await?;
                    let keys = if m.left {
                        Vec::new()
                    } else {
                        ensure_keys(conn, KeyKind::Personal, pid, Some(org_id), m.keys).await?
                    };
                    org.members.push(PersonReport {
                        id: pid,
                        email: m.email.clone(),
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
            let n: i64 = organizations::table.count().get_result(conn).await?;
            Ok(n == 0)
        })
    }
}

statements!(UPSERT_ACCOUNT => AccountIds, SET_AD_CAP, UPSERT_AD_ACCOUNTS);
