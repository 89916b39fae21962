//! The person's day (`GET /today`): an application use case, because it reads several areas at
//! once (accounts and their day counts, the review queue, decisions, task cards, agents'
//! heartbeats, cron jobs). The rows come from one port in a fixed number of statements; the
//! coverage is `fleetdesk_accounts`' rule of the agent's day (`work_accounts`), the cron
//! health `fleetdesk_cron::health`. The community part (each space's latest digest with its
//! tag counts, open tickets) is read in the same snapshot (two more statements), its top tags
//! picked by `fleetdesk_community::digest::top_tags`.

use crate::fields::Utc;
use fleetdesk_accounts::AccountState;
use fleetdesk_accounts::models::work::{DayCount, RotationAccount, market_dates, work_accounts};
use fleetdesk_community::digest::{TagCount, top_tags};
use fleetdesk_community::ports::{CommunityDay, PersonDayWithCommunity};
use fleetdesk_community::space::Channel;
use fleetdesk_cron::job::Schedule;
use fleetdesk_cron::ports::DayRows;
use fleetdesk_cron::run::RunStatus;
use fleetdesk_cron::{LatestRun, health};
use fleetdesk_events::silence;
use fleetdesk_kernel::market::MARKETS;
use fleetdesk_kernel::{Market, Platform};
use fleetdesk_posts::approval::DiffersReason;
use jiff::Timestamp;
use serde::Serialize;
use std::collections::HashMap;
use utoipa::ToSchema;
use uuid::Uuid;

#[derive(Debug, Serialize, ToSchema)]
pub struct Today {
    pub generated_at: Utc,
    /// One per workspace of the organization (a platform admin: of every organization, or of
    /// the one named by `organization`), not archived.
    pub workspaces: Vec<TodayWorkspace>,
    /// Paid research: per organization in view, the credits charged this month (Taipei) and
    /// the ledger's lines, each charge with its reason.
    pub credits: Vec<TodayCredits>,
}

/// An organization's paid research this month.
#[derive(Debug, Serialize, ToSchema)]
pub struct TodayCredits {
    pub organization: TodayOrganization,
    /// The start of the month counted (Asia/Taipei).
    pub month_start: Utc,
    pub monthly_credit_limit: i64,
    /// Approvals are refused once `charged` reaches this: three times the limit.
    pub stop_at: i64,
    /// Approvals are refused while the organization is suspended.
    pub suspended: bool,
    /// Credits charged this month.
    pub charged: i64,
    /// The ledger's lines this month, newest first (at most 200): one per research item found
    /// and not cached.
    pub charges: Vec<LedgerLineOut>,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct LedgerLineOut {
    pub research_id: Uuid,
    pub item: String,
    pub credits: i64,
    pub reason: String,
    pub charged_at: Utc,
}

impl TodayCredits {
    /// An organization's credits counted since `month_start`.
    pub fn new(c: fleetdesk_ads::ports::OrganizationCredits, month_start: Timestamp) -> Self {
        TodayCredits {
            organization: TodayOrganization {
                id: c.organization_id,
                name: c.organization_name,
            },
            month_start: Utc(month_start),
            stop_at: c
                .monthly_credit_limit
                .saturating_mul(fleetdesk_ads::research::LIMIT_MULTIPLE),
            monthly_credit_limit: c.monthly_credit_limit,
            suspended: c.suspended,
            charged: c.charged,
            charges: c
                .lines
                .into_iter()
                .map(|l| LedgerLineOut {
                    research_id: l.research_id,
                    item: l.item,
                    credits: l.credits,
                    reason: l.reason,
                    charged_at: Utc(l.charged_at),
                })
                .collect(),
        }
    }
}

#[derive(Debug, Serialize, ToSchema)]
pub struct TodayWorkspace {
    pub id: Uuid,
    pub name: String,
    pub organization: TodayOrganization,
    pub coverage: Coverage,
    pub review_queue: ReviewQueue,
    pub decisions: OpenDecisions,
    pub cards: Cards,
    pub agents: Vec<TodayAgent>,
    pub community: TodayCommunity,
    /// Posts reported published in the last 7 days with another body than the one approved
    /// (`changed`), or that nobody approved (`never_approved`): both texts, newest first, at
    /// most 50.
    pub published_differs: Vec<TodayDiffering>,
    /// Webhook endpoints that need a person: disabled by the service after failing for days,
    /// or failing now (deliveries without a success since `failing_since`).
    pub webhooks: Vec<TodayWebhook>,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct TodayDiffering {
    pub post_id: Uuid,
    pub code: String,
    pub platform: Platform,
    pub permalink: Option<String>,
    pub reason: DiffersReason,
    /// Null when nobody approved the post.
    pub approved_body: Option<String>,
    pub published_body: String,
    pub reported_at: Utc,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct TodayWebhook {
    pub id: Uuid,
    pub url: String,
    pub enabled: bool,
    /// Why the service disabled it; null while it is only failing.
    pub disabled_reason: Option<String>,
    pub failing_since: Option<Utc>,
}

/// The workspace's community groups: each active space's latest digest and the tickets
/// waiting for a person.
#[derive(Debug, Serialize, ToSchema)]
pub struct TodayCommunity {
    /// Active spaces by name.
    pub spaces: Vec<TodaySpace>,
    pub tickets: OpenTicketCounts,
}

impl TodayCommunity {
    fn empty() -> TodayCommunity {
        TodayCommunity {
            spaces: Vec::new(),
            tickets: OpenTicketCounts {
                open: 0,
                by_category: Vec::new(),
            },
        }
    }
}

#[derive(Debug, Serialize, ToSchema)]
pub struct TodaySpace {
    pub space_id: Uuid,
    pub name: String,
    pub channel: Channel,
    /// The digest of the latest day reported; null when none was.
    pub latest_digest: Option<TodayDigest>,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct TodayDigest {
    /// `YYYY-MM-DD` in the space's zone.
    pub day: String,
    /// Members in the digest.
    pub members: i64,
    pub reported_at: Utc,
    /// The 5 interests most members carry, most first (ties by value).
    pub interests: Vec<TagMembers>,
    /// The 5 intents most members carry, most first (ties by value).
    pub intents: Vec<TagMembers>,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct TagMembers {
    pub value: String,
    /// Members of the digest with this tag (values lower-cased: compared
    /// case-insensitively).
    pub members: i64,
}

/// Open tickets of the workspace's spaces.
#[derive(Debug, Serialize, ToSchema)]
pub struct OpenTicketCounts {
    pub open: i64,
    /// Per category, categories in name order; categories with none are left out.
    pub by_category: Vec<CategoryCount>,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct CategoryCount {
    pub category: String,
    pub count: i64,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct TodayOrganization {
    pub id: Uuid,
    pub name: String,
}

/// The market date's coverage of the active accounts, counted as the agent's work_today
/// counts it: what is reported published or scheduled on the account's market date, each
/// account counted up to its daily target.
#[derive(Debug, Serialize, ToSchema)]
pub struct Coverage {
    /// The market dates counted, one per market of the workspace's accounts.
    pub dates: Vec<fleetdesk_accounts::models::work::MarketDate>,
    /// Posts wanted today: the sum of the active accounts' targets.
    pub expected: i64,
    /// Of those, published or scheduled.
    pub covered: i64,
    pub missing_accounts: i64,
    pub missing_posts: i64,
    /// Stocked posts waiting in the inventory of every account of the workspace.
    pub inventory: i64,
    /// Every active account.
    pub accounts: Vec<AccountCoverage>,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct AccountCoverage {
    pub code: String,
    pub platform: Platform,
    pub market: String,
    pub date: String,
    pub persona: String,
    pub target: i64,
    pub published: i64,
    pub scheduled: i64,
    /// Target minus published and scheduled, never below 0.
    pub missing: i64,
    /// Stocked posts waiting in the account's inventory.
    pub inventory: i64,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct ReviewQueue {
    pub internal_review: i64,
    pub client_review: i64,
    pub total: i64,
}

/// Decisions waiting for a person: open, or handled by an agent and waiting for the
/// confirmation.
#[derive(Debug, Serialize, ToSchema)]
pub struct OpenDecisions {
    pub total: i64,
    /// Per kind, kinds in name order; kinds with none are left out.
    pub by_kind: Vec<KindCount>,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct KindCount {
    pub kind: String,
    pub count: i64,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct Cards {
    /// Task cards in pending_confirmation.
    pub pending_confirmation: i64,
    /// Of those, waiting for over 24 hours.
    pub confirm_overdue: i64,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct TodayAgent {
    pub id: Uuid,
    pub name: String,
    /// When its last heartbeat was recorded; null when it never sent one.
    pub last_heartbeat_at: Option<Utc>,
    /// No heartbeat for over its stated interval (the tenant file's `silent_after_hours`,
    /// 24 by default), or never.
    pub silent: bool,
    pub cron: CronHealth,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct CronHealth {
    /// Jobs the agent reported.
    pub jobs: i64,
    pub enabled: i64,
    /// Jobs whose latest run failed.
    pub failed: Vec<FailedJob>,
    /// Enabled jobs with no run within one period after a due time.
    pub missed: Vec<MissedJob>,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct FailedJob {
    pub job_id: String,
    pub name: String,
    pub last_run_at: Utc,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct MissedJob {
    pub job_id: String,
    pub name: String,
    pub schedule: String,
    pub timezone: String,
    /// The due time that passed without a run.
    pub due_at: Utc,
}

/// The market date of every known market at `now`, as the SQL counts them.
pub fn all_market_dates(now: Timestamp) -> Vec<(Market, jiff::civil::Date)> {
    let markets = MARKETS.iter().filter_map(|(c, _)| Market::parse(c).ok());
    market_dates(markets, None, now).into_iter().collect()
}

/// The person's day: its reads in one snapshot, assembled.
#[derive(Clone)]
pub struct TodayService {
    repo: std::sync::Arc<dyn PersonDayWithCommunity<DayRows>>,
}

impl TodayService {
    pub fn new(repo: std::sync::Arc<dyn PersonDayWithCommunity<DayRows>>) -> Self {
        TodayService { repo }
    }

    /// The person's day of `organization` (None: every organization), its community part in
    /// the same snapshot.
    pub async fn today(&self, organization: Option<Uuid>, now: Timestamp) -> anyhow::Result<Today> {
        today(&*self.repo, organization, now).await
    }
}

/// Reads the person's day of `organization` (None: every organization), its community part in
/// the same snapshot.
async fn today(
    repo: &dyn PersonDayWithCommunity<DayRows>,
    organization: Option<Uuid>,
    now: Timestamp,
) -> anyhow::Result<Today> {
    let dates = all_market_dates(now);
    let sql_dates: Vec<(String, jiff::civil::Date)> = dates
        .iter()
        .map(|(m, d)| (m.as_str().to_owned(), *d))
        .collect();
    let (rows, community) = repo
        .person_day_with_community(organization, &sql_dates, now)
        .await?;
    assemble(rows, community, now)
}

fn tag_members(tags: Vec<TagCount>) -> Vec<TagMembers> {
    tags.into_iter()
        .map(|t| TagMembers {
            value: t.value,
            members: t.members,
        })
        .collect()
}

/// Each workspace's community part.
fn community_by_workspace(day: CommunityDay) -> HashMap<Uuid, TodayCommunity> {
    let mut out: HashMap<Uuid, TodayCommunity> = HashMap::new();
    let empty = TodayCommunity::empty;
    for s in day.spaces {
        let latest_digest = s.latest.map(|d| {
            let (interests, intents) = top_tags(&d.tags);
            TodayDigest {
                day: d.day.to_string(),
                members: d.members,
                reported_at: Utc(d.reported_at),
                interests: tag_members(interests),
                intents: tag_members(intents),
            }
        });
        out.entry(s.workspace_id)
            .or_insert_with(empty)
            .spaces
            .push(TodaySpace {
                space_id: s.space_id,
                name: s.name,
                channel: s.channel,
                latest_digest,
            });
    }
    for t in day.tickets {
        let tickets = &mut out.entry(t.workspace_id).or_insert_with(empty).tickets;
        tickets.open += t.count;
        tickets.by_category.push(CategoryCount {
            category: t.category,
            count: t.count,
        });
    }
    out
}

/// Builds the day from its rows: pure, so the rules are tested without a database.
pub fn assemble(rows: DayRows, community: CommunityDay, now: Timestamp) -> anyhow::Result<Today> {
    let mut community = community_by_workspace(community);
    let mut accounts: HashMap<Uuid, Vec<RotationAccount>> = HashMap::new();
    let mut counts: HashMap<(Uuid, jiff::civil::Date), DayCount> = HashMap::new();
    let dates: HashMap<Market, jiff::civil::Date> = all_market_dates(now).into_iter().collect();
    for a in rows.accounts {
        let market = Market::parse(&a.market)?;
        let state = match a.state.as_deref() {
            Some(s) => {
                Some(AccountState::parse(s).ok_or_else(|| anyhow::anyhow!("unknown state {s}"))?)
            }
            None => None,
        };
        if let Some(day) = dates.get(&market) {
            counts.insert(
                (a.slot_id, *day),
                DayCount {
                    published: a.published,
                    scheduled: a.scheduled,
                    planned: 0,
                },
            );
        }
        accounts
            .entry(a.workspace_id)
            .or_default()
            .push(RotationAccount {
                slot_id: a.slot_id,
                code: a.code,
                platform: a.platform.parse().map_err(|e| anyhow::anyhow!("{e}"))?,
                market,
                persona: a.persona,
                state,
                daily_target: a.daily_target,
                inventory: a.inventory,
            });
    }
    let mut agents: HashMap<Uuid, Vec<TodayAgent>> = HashMap::new();
    let mut agent_index: HashMap<Uuid, (Uuid, usize)> = HashMap::new();
    for a in rows.agents {
        let list = agents.entry(a.workspace_id).or_default();
        agent_index.insert(a.id, (a.workspace_id, list.len()));
        list.push(TodayAgent {
            id: a.id,
            name: a.name,
            silent: silence::silent(
                a.last_heartbeat_at,
                silence::interval(a.silent_after_hours),
                now,
            ),
            last_heartbeat_at: a.last_heartbeat_at.map(Utc),
            cron: CronHealth {
                jobs: 0,
                enabled: 0,
                failed: Vec::new(),
                missed: Vec::new(),
            },
        });
    }
    for j in rows.jobs {
        let Some((ws, i)) = agent_index.get(&j.agent_id) else {
            continue;
        };
        let agent = &mut agents.get_mut(ws).expect("indexed")[*i];
        let schedule = Schedule::parse(&j.schedule, &j.timezone).ok();
        let latest = j.latest.as_ref().map(|(status, at)| LatestRun {
            status: RunStatus::parse(status).unwrap_or(RunStatus::Unknown),
            at: *at,
        });
        let h = health(schedule.as_ref(), j.enabled, j.reported_at, latest, now);
        agent.cron.jobs += 1;
        agent.cron.enabled += i64::from(j.enabled);
        if let (true, Some(l)) = (h.failed, latest) {
            agent.cron.failed.push(FailedJob {
                job_id: j.job_id.clone(),
                name: j.name.clone(),
                last_run_at: Utc(l.at),
            });
        }
        if let Some(due) = h.missed_due_at {
            agent.cron.missed.push(MissedJob {
                job_id: j.job_id,
                name: j.name,
                schedule: j.schedule,
                timezone: j.timezone,
                due_at: Utc(due),
            });
        }
    }
    let mut differing: HashMap<Uuid, Vec<TodayDiffering>> = HashMap::new();
    for d in rows.differing {
        differing
            .entry(d.workspace_id)
            .or_default()
            .push(TodayDiffering {
                post_id: d.post_id,
                code: d.code,
                platform: d.platform.parse().map_err(|e| anyhow::anyhow!("{e}"))?,
                permalink: d.permalink,
                reason: DiffersReason::parse(&d.reason).ok_or_else(|| {
                    anyhow::anyhow!("unknown published_differs reason {}", d.reason)
                })?,
                approved_body: d.approved_body,
                published_body: d.published_body,
                reported_at: Utc(d.reported_at),
            });
    }
    let mut webhooks: HashMap<Uuid, Vec<TodayWebhook>> = HashMap::new();
    for h in rows.webhooks {
        if h.disabled_reason.is_none() && h.failing_since.is_none() {
            continue;
        }
        webhooks
            .entry(h.workspace_id)
            .or_default()
            .push(TodayWebhook {
                id: h.id,
                url: h.url,
                enabled: h.enabled,
                disabled_reason: h.disabled_reason,
                failing_since: h.failing_since.map(Utc),
            });
    }
    let workspaces = rows
        .workspaces
        .into_iter()
        .map(|w| {
            let list = accounts.remove(&w.id).unwrap_or_default();
            let work = work_accounts(&list, &counts, None, now);
            let missing: HashMap<(&str, Platform), i64> = work
                .missing
                .iter()
                .map(|m| ((m.code.as_str(), m.platform), m.missing))
                .collect();
            let coverage_accounts = list
                .iter()
                .filter(|a| a.state.is_some_and(AccountState::in_rotation))
                .map(|a| {
                    let day = dates[&a.market];
                    let c = counts.get(&(a.slot_id, day)).copied().unwrap_or_default();
                    AccountCoverage {
                        code: a.code.clone(),
                        platform: a.platform,
                        market: a.market.to_string(),
                        date: day.to_string(),
                        persona: a.persona.clone(),
                        target: i64::from(a.daily_target.max(0)),
                        published: c.published,
                        scheduled: c.scheduled,
                        missing: missing
                            .get(&(a.code.as_str(), a.platform))
                            .copied()
                            .unwrap_or(0),
                        inventory: a.inventory,
                    }
                })
                .collect();
            let total: i64 = w.decisions.iter().map(|(_, n)| n).sum();
            TodayWorkspace {
                id: w.id,
                name: w.name,
                organization: TodayOrganization {
                    id: w.organization_id,
                    name: w.organization,
                },
                coverage: Coverage {
                    dates: work.dates,
                    expected: work.expected,
                    covered: work.covered,
                    missing_accounts: work.missing_accounts,
                    missing_posts: work.missing_posts,
                    inventory: work.inventory,
                    accounts: coverage_accounts,
                },
                review_queue: ReviewQueue {
                    internal_review: w.internal_review,
                    client_review: w.client_review,
                    total: w.internal_review + w.client_review,
                },
                decisions: OpenDecisions {
                    total,
                    by_kind: w
                        .decisions
                        .into_iter()
                        .map(|(kind, count)| KindCount { kind, count })
                        .collect(),
                },
                cards: Cards {
                    pending_confirmation: w.cards_pending_confirmation,
                    confirm_overdue: w.cards_confirm_overdue,
                },
                agents: agents.remove(&w.id).unwrap_or_default(),
                community: community
                    .remove(&w.id)
                    .unwrap_or_else(TodayCommunity::empty),
                published_differs: differing.remove(&w.id).unwrap_or_default(),
                webhooks: webhooks.remove(&w.id).unwrap_or_default(),
            }
        })
        .collect();
    Ok(Today {
        credits: Vec::new(),
        generated_at: Utc(now),
        workspaces,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use fleetdesk_community::digest::TagKind;
    use fleetdesk_community::ports::{LatestDigest, OpenTickets, SpaceDay};
    use fleetdesk_cron::ports::{
        DayAccount, DayAgent, DayDiffering, DayJob, DayWebhook, DayWorkspace,
    };
    use jiff::SignedDuration;

    fn workspace(id: Uuid, name: &str) -> DayWorkspace {
        DayWorkspace {
            id,
            name: name.into(),
            organization_id: Uuid::nil(),
            organization: "Acme".into(),
            internal_review: 0,
            client_review: 0,
            cards_pending_confirmation: 0,
            cards_confirm_overdue: 0,
            decisions: vec![],
        }
    }

    #[test]
    fn each_workspace_shows_its_spaces_latest_digests_and_open_tickets() {
        let now: Timestamp = "2026-11-25T06:00:00Z".parse().unwrap();
        let (ws, quiet) = (Uuid::new_v4(), Uuid::new_v4());
        let rows = DayRows {
            workspaces: vec![workspace(ws, "Taiwan"), workspace(quiet, "Japan")],
            ..DayRows::default()
        };
        let tag = |kind, value: &str, members| TagCount {
            kind,
            value: value.into(),
            members,
        };
        let mut tags: Vec<TagCount> = (1..=6)
            .map(|i| tag(TagKind::Interest, &format!("i{i}"), i))
            .collect();
        tags.push(tag(TagKind::Intent, "buy", 4));
        let community = CommunityDay {
            spaces: vec![
                SpaceDay {
                    workspace_id: ws,
                    space_id: Uuid::new_v4(),
                    name: "Mia fans".into(),
                    channel: Channel::Whatsapp,
                    latest: Some(LatestDigest {
                        day: jiff::civil::date(2026, 11, 25),
                        members: 9,
                        reported_at: now,
                        tags,
                    }),
                },
                SpaceDay {
                    workspace_id: ws,
                    space_id: Uuid::new_v4(),
                    name: "Quiet".into(),
                    channel: Channel::Discord,
                    latest: None,
                },
            ],
            tickets: vec![
                OpenTickets {
                    workspace_id: ws,
                    category: "abuse".into(),
                    count: 1,
                },
                OpenTickets {
                    workspace_id: ws,
                    category: "refund".into(),
                    count: 2,
                },
            ],
        };
        let day = assemble(rows, community, now).unwrap();
        let c = &day.workspaces[0].community;
        assert_eq!(c.spaces.len(), 2);
        let d = c.spaces[0].latest_digest.as_ref().expect("digest");
        assert_eq!((d.day.as_str(), d.members), ("2026-11-25", 9));
        assert_eq!(
            d.interests
                .iter()
                .map(|t| t.value.as_str())
                .collect::<Vec<_>>(),
            ["i6", "i5", "i4", "i3", "i2"]
        );
        assert_eq!(d.intents[0].members, 4);
        assert!(c.spaces[1].latest_digest.is_none());
        assert_eq!(c.tickets.open, 3);
        assert_eq!(c.tickets.by_category[1].category, "refund");
        let japan = &day.workspaces[1].community;
        assert!(japan.spaces.is_empty() && japan.tickets.open == 0);
    }

    #[test]
    fn the_day_counts_active_accounts_flags_silent_agents_and_cron_health() {
        let now: Timestamp = "2026-11-25T06:00:00Z".parse().unwrap();
        let ago = |h: i64| now - SignedDuration::from_hours(h);
        let (ws, agent, quiet) = (Uuid::new_v4(), Uuid::new_v4(), Uuid::new_v4());
        let account = |code: &str, state: &str, published| DayAccount {
            workspace_id: ws,
            slot_id: Uuid::new_v4(),
            code: code.into(),
            platform: "threads".into(),
            market: "TW".into(),
            persona: "Mia".into(),
            state: Some(state.into()),
            daily_target: 2,
            published,
            scheduled: 0,
            inventory: 1,
        };
        let job = |id: &str, schedule: &str, latest: Option<(&str, Timestamp)>| DayJob {
            agent_id: agent,
            job_id: id.into(),
            name: id.into(),
            schedule: schedule.into(),
            timezone: "UTC".into(),
            enabled: true,
            reported_at: ago(72),
            latest: latest.map(|(s, t)| (s.to_owned(), t)),
        };
        let rows = DayRows {
            workspaces: vec![DayWorkspace {
                id: ws,
                name: "Taiwan".into(),
                organization_id: Uuid::new_v4(),
                organization: "Acme".into(),
                internal_review: 2,
                client_review: 1,
                cards_pending_confirmation: 1,
                cards_confirm_overdue: 0,
                decisions: vec![("account_banned".into(), 2), ("persona_new".into(), 1)],
            }],
            accounts: vec![account("A", "active", 1), account("B", "banned", 0)],
            agents: vec![
                DayAgent {
                    workspace_id: ws,
                    id: agent,
                    name: "op1".into(),
                    last_heartbeat_at: Some(ago(23)),
                    silent_after_hours: 24,
                },
                DayAgent {
                    workspace_id: ws,
                    id: quiet,
                    name: "op2".into(),
                    last_heartbeat_at: Some(ago(25)),
                    silent_after_hours: 24,
                },
            ],
            jobs: vec![
                job("ok", "0 * * * *", Some(("success", ago(0)))),
                job("broken", "0 * * * *", Some(("failed", ago(0)))),
                job("late", "0 * * * *", Some(("success", ago(3)))),
            ],
            ..DayRows::default()
        };
        let day = assemble(rows, CommunityDay::default(), now).unwrap();
        let w = &day.workspaces[0];
        assert_eq!(w.coverage.accounts.len(), 1);
        assert_eq!(w.coverage.accounts[0].missing, 1);
        assert_eq!(w.coverage.accounts[0].inventory, 1);
        assert_eq!((w.coverage.expected, w.coverage.covered), (2, 1));
        assert_eq!(
            w.coverage.inventory, 2,
            "every account's stock, the banned one's too"
        );
        assert_eq!(w.review_queue.total, 3);
        assert_eq!(w.decisions.total, 3);
        assert!(!w.agents[0].silent);
        assert!(w.agents[1].silent);
        assert!(w.published_differs.is_empty() && w.webhooks.is_empty());
        let cron = &w.agents[0].cron;
        assert_eq!(cron.jobs, 3);
        assert_eq!(cron.failed.len(), 1);
        assert_eq!(cron.failed[0].job_id, "broken");
        assert_eq!(cron.missed.len(), 1);
        assert_eq!(cron.missed[0].job_id, "late");
    }

    #[test]
    fn the_day_lists_differing_posts_and_only_the_webhooks_that_need_a_person() {
        let now: Timestamp = "2026-12-07T06:00:00Z".parse().unwrap();
        let ws = Uuid::new_v4();
        let hook = |url: &str, enabled, reason: Option<&str>, failing: bool| DayWebhook {
            workspace_id: ws,
            id: Uuid::new_v4(),
            url: url.into(),
            enabled,
            disabled_reason: reason.map(Into::into),
            failing_since: failing.then_some(now),
        };
        let rows = DayRows {
            workspaces: vec![workspace(ws, "Taiwan")],
            differing: vec![DayDiffering {
                reason: "changed".into(),
                approved_body: Some("a".into()),
                published_body: "b".into(),
                ..rows_differing(ws, now)
            }],
            webhooks: vec![
                hook("https://fine.example/h", true, None, false),
                hook("https://flaky.example/h", true, None, true),
                hook(
                    "https://gone.example/h",
                    false,
                    Some("failing for 5 days"),
                    true,
                ),
                hook("https://off.example/h", false, None, false),
            ],
            ..DayRows::default()
        };
        let day = assemble(rows, CommunityDay::default(), now).unwrap();
        let w = &day.workspaces[0];
        let urls: Vec<&str> = w.webhooks.iter().map(|h| h.url.as_str()).collect();
        assert_eq!(urls, ["https://flaky.example/h", "https://gone.example/h"]);
        assert_eq!(
            w.webhooks[1].disabled_reason.as_deref(),
            Some("failing for 5 days")
        );
        assert_eq!(w.published_differs.len(), 1);
        let d = &w.published_differs[0];
        assert_eq!(
            (d.reason, d.platform),
            (DiffersReason::Changed, Platform::Threads)
        );
        assert_eq!(
            (d.approved_body.as_deref(), d.published_body.as_str()),
            (Some("a"), "b")
        );
        let unknown = DayRows {
            workspaces: vec![workspace(ws, "Taiwan")],
            differing: vec![DayDiffering {
                reason: "other".into(),
                ..rows_differing(ws, now)
            }],
            ..DayRows::default()
        };
        assert!(assemble(unknown, CommunityDay::default(), now).is_err());
    }

    fn rows_differing(ws: Uuid, now: Timestamp) -> DayDiffering {
        DayDiffering {
            workspace_id: ws,
            post_id: Uuid::from_u128(2),
            code: "TW-T001".into(),
            platform: "threads".into(),
            permalink: None,
            reason: "never_approved".into(),
            approved_body: None,
            published_body: "x".into(),
            reported_at: now,
        }
    }
}
