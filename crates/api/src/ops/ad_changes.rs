//! Agent API: ads. `GET /ads` reads what the last sync of the workspace's ad accounts stored;
//! `POST /ads/proposals` asks a person for a change, which changes nothing until they approve
//! it (the `ad_change` decision). Disabled unless the workspace has ads enabled. The rules are
//! `fleetdesk_ads::proposal`; each request runs whole in the adapter's transaction.

use super::community::Filled;
use crate::ctx::Ctx;
use crate::error::ApiError;
use crate::fields::{Int, List, Utc, component_items};
use crate::input::{Nothing, Req};
use crate::op::{ErasedOp, HttpMethod, OpSpec, Reply, operation};
use fleetdesk_ads::ports::{
    AdAccountView, AdsView, CampaignView, CapView, NewProposal, ProposalRecord,
};
use fleetdesk_ads::proposal::{
    AdStatus, BudgetType, COUNTRY_PATTERN, Change, ProposalKind, ProposalStatus, check_amount,
    check_countries, check_days,
};
use fleetdesk_kernel::money::Cents;
use fleetdesk_tenancy::{AgentCaller, MemberCaller, PersonalAccess, Scope};
use jiff::Timestamp;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use utoipa::ToSchema;
use uuid::Uuid;
use validator::Validate;

component_items!(CountryInput);

/// The Personal API's read of a workspace's ads, for the people who approve changes.
pub fn register_personal(all: &mut Vec<Box<dyn ErasedOp>>) {
    all.push(operation(
        OpSpec::personal(HttpMethod::Get, "/ads", PersonalAccess::Agency)
            .tool("view_ads")
            .also_answers(&[404])
            .summary(
                "A workspace's ads as last synced: cap, ad accounts, campaigns, ads, proposals",
            )
            .description(
                "Agency people and platform admins (clients: 403). `workspace` (an id, \
                 required) names a workspace of the member's organization (a platform admin \
                 outside any organization: any); another organization's, an archived or an \
                 unknown one is 404 naming workspace; one without ads enabled is 403. Query \
                 days 1-90 (default 30). Answers as list_ads does for an agent of that \
                 workspace: `{cap, ad_accounts, campaigns, ads, proposals}`, the numbers a \
                 person weighs an ad change against.",
            ),
        view_ads,
    ));
}

pub fn register(all: &mut Vec<Box<dyn ErasedOp>>) {
    use HttpMethod::{Get, Post};
    all.push(operation(
        OpSpec::agent(Get, "/ads", Scope::AccountsRead)
            .tool("list_ads")
            .summary(
                "The workspace's ads as last synced: cap, ad accounts, campaigns, ads, proposals",
            )
            .description(
                "Disabled unless the workspace has ads enabled: 403 forbidden, the message \
                 saying where to enable them. The service never asks the ad platform for an \
                 agent: this reads what the last sync stored (every hour; each ad account has \
                 its `synced_at`, and `sync_error` when its last sync failed). Query days \
                 (1-90, default 30): campaigns' numbers are summed over that many days, today \
                 (Asia/Taipei) included. Answers `{cap, ad_accounts, campaigns, ads, \
                 proposals}`: cap `{monthly_limit, currency, spent_this_month}` (null without a \
                 cap; spend this month in Taipei of the ad accounts in the cap's currency), \
                 ad_accounts `[{id, name, currency, status, synced_at, sync_error}]`, campaigns \
                 `[{id, ad_account_id, name, status, spend, impressions, reach, clicks, ctr \
                 (percent, null without impressions), cpc (null without clicks), results, \
                 by_fleetdesk (made by the service)}]` (reach is summed per day), ads made by \
                 the service, paused or running `[{id, kind, status, budget {type, amount}, \
                 period {starts_at, ends_at}, post {id, platform_post_id}, campaign_id, \
                 ad_account_id}]`, proposals of the last 30 days (as propose_ad_change answers \
                 them), newest first. Amounts are ordinary units of the account's currency.",
            ),
        list_ads,
    ));
    all.push(operation(
        OpSpec::agent(Post, "/ads/proposals", Scope::AccountsWrite)
            .tool("propose_ad_change")
            .idempotent()
            .created()
            .also_answers(&[404])
            .summary("Propose an ad change: nothing changes until a person approves it")
            .description(
                "Disabled unless the workspace has ads enabled (403 forbidden, the message \
                 saying where). Body: kind and reason (required, 1-2000 characters: which \
                 numbers, which period, what is expected), and by kind: pause (ad_id of a \
                 running ad), resume (ad_id of a paused ad: the ad, its ad set and its \
                 campaign are set active), budget (ad_id, amount: the budget of the ad's ad \
                 set), boost (post_id of a published facebook or instagram post of the \
                 workspace, ad_account_id of the workspace (for an instagram post, one the \
                 tenant file gives an instagram_user_id), budget_type daily or lifetime, \
                 amount, days 2-90, countries: up to 25 two-letter codes, default the post's \
                 market; the boost is created paused and a person enables it). Fields of \
                 another kind are 400. Amounts are above 0 and below 1000000000, in ordinary \
                 units of the ad account's currency, at most two decimals (`multipleOf` 0.01; \
                 an amount within rounding of a cent is that cent; further off: 400). \
                 An ad is one the last sync saw in the workspace's ad accounts. An ad, post or \
                 ad account that is not the workspace's is 404 naming the field. Refused 422 \
                 naming the field: an instagram boost's ad account without the \
                 instagram_user_id it needs, a paused ad \
                 to pause, a running ad to resume, the budget the ad has, a post not \
                 published, not facebook or instagram, or without its platform id; 422 \
                 rejected: a proposal of the same kind for the same ad or post already \
                 waiting. Answers 201 with the proposal `{id, kind, status (waiting, approved, \
                 executed, failed, refused, expired), ad_id, post_id, ad_account_id, \
                 budget_type, amount, days, countries, reason, decision_id, result, \
                 created_at, decided_by, decided_at, executed_at}`. It opens an `ad_change` \
                 decision a person approves in the service with their own key: a resume, or a \
                 raise on a running ad, is then refused if it takes the month's spend \
                 (synced spend plus what the running ads will spend at their budgets) past \
                 the monthly cap. Approved, the change is made through the ad platform as \
                 that person (status executed, or failed with the platform's error in \
                 result); dismissed, it is refused; unhandled, it expires after 7 days. \
                 Accepts Idempotency-Key (request_id in MCP).",
            ),
        propose,
    ));
}

// ---------------------------------------------------------------------------------------------
// GET /ads

#[derive(Debug, Deserialize, Validate, ToSchema)]
pub struct AdsQuery {
    /// 1-90, default 30: the days campaigns are summed over, today included.
    pub days: Option<Int<1, 90>>,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct BudgetOut {
    #[serde(rename = "type")]
    pub budget_type: BudgetType,
    #[schema(value_type = f64)]
    pub amount: Cents,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct PeriodOut {
    pub starts_at: Option<Utc>,
    pub ends_at: Option<Utc>,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct AdPostOut {
    /// The service's post, when it is one.
    pub id: Option<Uuid>,
    pub platform_post_id: Option<String>,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct AdOut {
    pub id: String,
    /// boost, partnership, catalog (or other).
    pub kind: String,
    pub status: AdStatus,
    pub budget: BudgetOut,
    pub period: PeriodOut,
    pub post: AdPostOut,
    pub campaign_id: String,
    pub ad_account_id: String,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct AdsOut {
    pub cap: Option<CapView>,
    pub ad_accounts: Vec<AdAccountView>,
    pub campaigns: Vec<CampaignView>,
    pub ads: Vec<AdOut>,
    pub proposals: Vec<ProposalOut>,
}

impl From<AdsView> for AdsOut {
    fn from(v: AdsView) -> AdsOut {
        AdsOut {
            cap: v.cap,
            ad_accounts: v.ad_accounts,
            campaigns: v.campaigns,
            ads: v
                .ads
                .into_iter()
                .map(|a| AdOut {
                    id: a.id,
                    kind: a.kind,
                    status: a.status,
                    budget: BudgetOut {
                        budget_type: a.budget_type,
                        amount: a.budget,
                    },
                    period: PeriodOut {
                        starts_at: a.starts_at.map(Utc),
                        ends_at: a.ends_at.map(Utc),
                    },
                    post: AdPostOut {
                        id: a.post_id,
                        platform_post_id: a.story_id,
                    },
                    campaign_id: a.campaign_id,
                    ad_account_id: a.ad_account_id,
                })
                .collect(),
            proposals: v.proposals.into_iter().map(ProposalOut::from).collect(),
        }
    }
}

async fn list_ads(
    ctx: Ctx,
    agent: AgentCaller,
    req: Req<Nothing, AdsQuery, Nothing>,
) -> Result<Reply<AdsOut>, ApiError> {
    let view = ads_of(
        &ctx,
        Some(agent.organization_id),
        agent.workspace_id,
        req.query.days,
    )
    .await??;
    Ok(Reply::ok(view.into()))
}

/// A workspace's ads over `days` (default 30) days to now.
async fn ads_of(
    ctx: &Ctx,
    organization: Option<Uuid>,
    workspace: Uuid,
    days: Option<Int<1, 90>>,
) -> anyhow::Result<Result<AdsView, fleetdesk_ads::AdsRefusal>> {
    let days = days.map_or(30, Int::get);
    ctx.ads
        .view(organization, workspace, days, Timestamp::now())
        .await
}

#[derive(Debug, Deserialize, Validate, ToSchema)]
pub struct PersonAdsQuery {
    /// The workspace whose ads are read.
    pub workspace: Uuid,
    /// Campaigns' numbers summed over this many days, today (Asia/Taipei) included: 1-90,
    /// default 30.
    pub days: Option<Int<1, 90>>,
}

async fn view_ads(
    ctx: Ctx,
    m: MemberCaller,
    req: Req<Nothing, PersonAdsQuery, Nothing>,
) -> Result<Reply<AdsOut>, ApiError> {
    let view = ads_of(&ctx, m.organization_id, req.query.workspace, req.query.days)
        .await?
        .map_err(|r| {
            let e = ApiError::from(r);
            if e.status() == 404 {
                e.with_field("workspace")
            } else {
                e
            }
        })?;
    Ok(Reply::ok(view.into()))
}

// ---------------------------------------------------------------------------------------------
// POST /ads/proposals

super::common::checked_string! {
    /// An ad's id on the platform: digits.
    AdIdInput(String) as "AdId",
    check = |raw| if !raw.is_empty() && raw.len() <= 30 && raw.bytes().all(|b| b.is_ascii_digit()) {
        Ok(raw)
    } else {
        Err("must be the ad's id: 1-30 digits".to_owned())
    },
    schema = json!({
        "type": "string", "minLength": 1, "maxLength": 30, "pattern": "^[0-9]{1,30}$",
        "description": "An ad's id on the platform, as list_ads shows it.",
    }),
}

super::common::checked_string! {
    /// An ad account's id: `act_` and digits.
    AdAccountInput(String) as "AdAccountId",
    check = |raw| match raw.strip_prefix("act_") {
        Some(d) if !d.is_empty() && d.len() <= 30 && d.bytes().all(|b| b.is_ascii_digit()) => Ok(raw),
        _ => Err("must be an ad account id: act_ and 1-30 digits".to_owned()),
    },
    schema = json!({
        "type": "string", "minLength": 5, "maxLength": 34, "pattern": "^act_[0-9]{1,30}$",
        "description": "An ad account of the workspace, as list_ads shows it.",
    }),
}

super::common::checked_string! {
    /// A two-letter country code (ISO 3166-1 alpha-2), any case.
    CountryInput(String) as "CountryCode",
    check = |raw| if raw.len() == 2 && raw.bytes().all(|b| b.is_ascii_alphabetic()) {
        Ok(raw)
    } else {
        Err("must be a two-letter country code".to_owned())
    },
    schema = json!({
        "type": "string", "minLength": 2, "maxLength": 2, "pattern": COUNTRY_PATTERN,
        "description": "A two-letter country code (ISO 3166-1 alpha-2), any case.",
    }),
}

#[derive(Debug, Deserialize, Validate, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ProposeBody {
    pub kind: ProposalKind,
    /// Which numbers, which period, what is expected.
    pub reason: Filled<2000>,
    /// pause, resume, budget: the ad.
    pub ad_id: Option<AdIdInput>,
    /// budget: the new budget; boost: its budget. Above 0, below 1000000000, a whole number of
    /// cents (at most two decimals).
    #[schema(
        exclusive_minimum = 0,
        exclusive_maximum = 1000000000,
        multiple_of = 0.01
    )]
    pub amount: Option<f64>,
    /// boost: a published facebook or instagram post of the workspace.
    pub post_id: Option<Uuid>,
    /// boost: the ad account to spend from.
    pub ad_account_id: Option<AdAccountInput>,
    /// boost: daily or lifetime.
    pub budget_type: Option<BudgetType>,
    /// boost: 2-90 days.
    pub days: Option<Int<2, 90>>,
    /// boost: up to 25 countries; default the post's market.
    pub countries: Option<List<CountryInput, 0, 25>>,
}

/// Which fields each kind needs, and that it takes no other kind's (400).
pub fn propose_rules() -> Value {
    let all = [
        "ad_id",
        "amount",
        "post_id",
        "ad_account_id",
        "budget_type",
        "days",
        "countries",
    ];
    let kind = |name: &str, required: &[&str], allowed: &[&str]| {
        // A field of another kind may be left out or null (as if left out); one the kind needs
        // must be given, not null.
        let properties: serde_json::Map<String, Value> = all
            .iter()
            .filter(|f| !allowed.contains(f) || required.contains(f))
            .map(|f| {
                let rule = if required.contains(f) {
                    json!({"not": {"type": "null"}})
                } else {
                    json!({"type": "null"})
                };
                ((*f).to_owned(), rule)
            })
            .collect();
        json!({
            "if": {"properties": {"kind": {"const": name}}, "required": ["kind"]},
            "then": {"required": required, "properties": properties},
        })
    };
    json!({"allOf": [
        kind("pause", &["ad_id"], &["ad_id"]),
        kind("resume", &["ad_id"], &["ad_id"]),
        kind("budget", &["ad_id", "amount"], &["ad_id", "amount"]),
        kind(
            "boost",
            &["post_id", "ad_account_id", "budget_type", "amount", "days"],
            &["post_id", "ad_account_id", "budget_type", "amount", "days", "countries"],
        ),
    ]})
}

/// The body read as a change: what each kind needs and takes ([`propose_rules`]), the amount,
/// days and countries checked.
fn change(b: ProposeBody) -> Result<Change, ApiError> {
    let kind = b.kind;
    let missing = |field: &str| ApiError::invalid(field, format!("required for a {kind} proposal"));
    let extra = |field: &str, given: bool| {
        if given {
            Err(ApiError::invalid(
                field,
                format!("not taken by a {kind} proposal"),
            ))
        } else {
            Ok(())
        }
    };
    let boost_only = [
        ("post_id", b.post_id.is_some()),
        ("ad_account_id", b.ad_account_id.is_some()),
        ("budget_type", b.budget_type.is_some()),
        ("days", b.days.is_some()),
        ("countries", b.countries.is_some()),
    ];
    let ad = || b.ad_id.clone().map(|a| a.0).ok_or_else(|| missing("ad_id"));
    let amount = || {
        let a = b.amount.ok_or_else(|| missing("amount"))?;
        Ok::<Cents, ApiError>(check_amount("amount", a)?)
    };
    match kind {
        ProposalKind::Pause | ProposalKind::Resume | ProposalKind::Budget => {
            for (field, given) in boost_only {
                extra(field, given)?;
            }
            match kind {
                ProposalKind::Budget => Ok(Change::Budget {
                    ad_id: ad()?,
                    amount: amount()?,
                }),
                _ => {
                    extra("amount", b.amount.is_some())?;
                    let ad_id = ad()?;
                    Ok(if kind == ProposalKind::Pause {
                        Change::Pause { ad_id }
                    } else {
                        Change::Resume { ad_id }
                    })
                }
            }
        }
        ProposalKind::Boost => {
            extra("ad_id", b.ad_id.is_some())?;
            let countries: Vec<String> = b
                .countries
                .clone()
                .map(|c| c.0.into_iter().map(|c| c.0).collect())
                .unwrap_or_default();
            Ok(Change::Boost {
                post_id: b.post_id.ok_or_else(|| missing("post_id"))?,
                ad_account_id: b
                    .ad_account_id
                    .clone()
                    .map(|a| a.0)
                    .ok_or_else(|| missing("ad_account_id"))?,
                budget_type: b.budget_type.ok_or_else(|| missing("budget_type"))?,
                amount: amount()?,
                days: check_days(b.days.map(Int::get).ok_or_else(|| missing("days"))?)?,
                countries: check_countries(&countries)?,
            })
        }
    }
}

/// A proposal as propose_ad_change and list_ads answer it.
#[derive(Debug, Serialize, ToSchema)]
pub struct ProposalOut {
    pub id: Uuid,
    pub kind: ProposalKind,
    /// waiting, approved, executed, failed, refused, expired.
    pub status: ProposalStatus,
    pub ad_id: Option<String>,
    pub post_id: Option<Uuid>,
    pub ad_account_id: Option<String>,
    pub budget_type: Option<BudgetType>,
    #[schema(value_type = Option<f64>)]
    pub amount: Option<Cents>,
    pub days: Option<i32>,
    pub countries: Vec<String>,
    pub reason: String,
    /// The `ad_change` decision a person approves or dismisses.
    pub decision_id: Uuid,
    /// What the platform answered, or `{error}` when it failed.
    #[schema(value_type = Option<Object>)]
    pub result: Option<Value>,
    pub created_at: Utc,
    /// The person who approved or dismissed it (or the service, when it expired).
    #[schema(value_type = Option<Object>)]
    pub decided_by: Option<Value>,
    pub decided_at: Option<Utc>,
    pub executed_at: Option<Utc>,
}

impl From<ProposalRecord> for ProposalOut {
    fn from(p: ProposalRecord) -> ProposalOut {
        ProposalOut {
            id: p.id,
            kind: p.kind,
            status: p.status,
            ad_id: p.ad_id,
            post_id: p.post_id,
            ad_account_id: p.ad_account_id,
            budget_type: p.budget_type,
            amount: p.amount,
            days: p.days,
            countries: p.countries,
            reason: p.reason,
            decision_id: p.decision_id,
            result: p.result,
            created_at: Utc(p.created_at),
            decided_by: p.decided_by,
            decided_at: p.decided_at.map(Utc),
            executed_at: p.executed_at.map(Utc),
        }
    }
}

async fn propose(
    ctx: Ctx,
    agent: AgentCaller,
    req: Req<Nothing, Nothing, ProposeBody>,
) -> Result<Reply<ProposalOut>, ApiError> {
    let reason = req.body.reason.0.trim().to_owned();
    let proposal = NewProposal {
        change: change(req.body)?,
        reason,
        now: Timestamp::now(),
    };
    let made = ctx.ads.propose(agent.agent_ref(), &proposal).await??;
    Ok(Reply::created(made.into()))
}
