//! The ports the adapters implement: the research and pick repositories (PostgreSQL).

use fleetdesk_kernel::jobs::Job;
use fleetdesk_kernel::money::Cents;
use fleetdesk_kernel::{AgentRef, BoxFuture};
use jiff::Timestamp;
use serde_json::Value;
use uuid::Uuid;

use crate::AdsRefusal;
use crate::pick::{PickFilter, PickNumber, PickStatus};
use crate::research::{ItemOutcome, Quote, ResearchKind, ResearchStatus};
use std::collections::HashMap;

/// A quote an agent asks for.
#[derive(Debug, Clone)]
pub struct NewQuote {
    pub kind: ResearchKind,
    /// As given: product links or ids, or keywords ([`crate::research::check_items`]).
    pub items: Vec<String>,
    /// Names the request only.
    pub lane: Option<String>,
}

/// A stored quote: the request's id and what it would cost.
#[derive(Debug, Clone)]
pub struct QuotedRequest {
    pub id: Uuid,
    pub quote: Quote,
}

/// A person's approval, relayed by an agent.
#[derive(Debug, Clone)]
pub struct Approval {
    pub id: Uuid,
    /// Who agreed (through which agent, where, when), stored with the request.
    pub approved_by: fleetdesk_kernel::decision::DecidedBy,
    /// `origin.message_ref`: a resend with the same one answers the request as it stands.
    pub message_ref: Option<String>,
    /// The provider's lookups per day; `None` without a quota.
    pub daily_quota: Option<i64>,
    pub now: Timestamp,
}

/// What one item came to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ItemState {
    pub item: String,
    pub searched: String,
    /// Free at the quote: the organization found it recently.
    pub cached_at_quote: bool,
    /// `None` until the work reached it.
    pub outcome: Option<ItemOutcome>,
    /// The card when found (or cached).
    pub card: Option<Value>,
}

/// A credit charged, with its reason.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Charge {
    pub item: String,
    pub credits: i64,
    pub reason: String,
    pub charged_at: Timestamp,
}

/// A request as it stands.
#[derive(Debug, Clone)]
pub struct ResearchRecord {
    pub id: Uuid,
    /// The workspace of the agent that asked: its id and name.
    pub workspace: (Uuid, String),
    pub kind: ResearchKind,
    pub lane: Option<String>,
    pub status: ResearchStatus,
    pub price: i64,
    pub credits_quoted: i64,
    pub created_at: Timestamp,
    pub expires_at: Timestamp,
    pub approved_at: Option<Timestamp>,
    pub approved_by: Option<Value>,
    pub finished_at: Option<Timestamp>,
    pub items: Vec<ItemState>,
    pub charges: Vec<Charge>,
}

/// A request as stored, before its items and charges are put under it
/// ([`ResearchRecord::assemble`]).
#[derive(Debug, Clone)]
pub struct StoredResearch {
    pub id: Uuid,
    pub workspace_id: Uuid,
    /// The workspace's name.
    pub workspace: String,
    pub kind: ResearchKind,
    pub lane: Option<String>,
    pub status: ResearchStatus,
    pub price: i64,
    pub credits_quoted: i64,
    pub created_at: Timestamp,
    pub expires_at: Timestamp,
    pub approved_at: Option<Timestamp>,
    pub approved_by: Option<Value>,
    pub finished_at: Option<Timestamp>,
}

impl ResearchRecord {
    /// Each request with its items (keyed by the request's id) and its ledger lines, both in
    /// the order given.
    pub fn assemble(
        requests: impl IntoIterator<Item = impl Into<StoredResearch>>,
        items: impl IntoIterator<Item = (Uuid, impl Into<ItemState>)>,
        lines: impl IntoIterator<Item = impl Into<LedgerLine>>,
    ) -> Vec<ResearchRecord> {
        let mut items = grouped(items.into_iter().map(|(id, i)| (id, i.into())));
        let mut charges = grouped(lines.into_iter().map(|l| {
            let line: LedgerLine = l.into();
            (line.research_id, Charge::from(line))
        }));
        let mut record = |r: StoredResearch| ResearchRecord {
            items: items.remove(&r.id).unwrap_or_default(),
            charges: charges.remove(&r.id).unwrap_or_default(),
            id: r.id,
            workspace: (r.workspace_id, r.workspace),
            kind: r.kind,
            lane: r.lane,
            status: r.status,
            price: r.price,
            credits_quoted: r.credits_quoted,
            created_at: r.created_at,
            expires_at: r.expires_at,
            approved_at: r.approved_at,
            approved_by: r.approved_by,
            finished_at: r.finished_at,
        };
        requests.into_iter().map(|r| record(r.into())).collect()
    }
}

/// Children under the key of their parent, each list in the order given.
fn grouped<C>(children: impl IntoIterator<Item = (Uuid, C)>) -> HashMap<Uuid, Vec<C>> {
    let mut by_parent: HashMap<Uuid, Vec<C>> = HashMap::new();
    for (parent, child) in children {
        by_parent.entry(parent).or_default().push(child);
    }
    by_parent
}

/// Which research requests a person lists.
#[derive(Debug, Clone, PartialEq)]
pub struct ResearchListQuery {
    /// Only this workspace's.
    pub workspace: Option<Uuid>,
    /// Only requests in this status.
    pub status: Option<ResearchStatus>,
    /// Newest first: the page starts after this position.
    pub after: Option<fleetdesk_kernel::Position>,
    pub limit: i64,
}

/// A line of the credit ledger.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LedgerLine {
    pub research_id: Uuid,
    pub item: String,
    pub credits: i64,
    pub reason: String,
    pub charged_at: Timestamp,
}

/// A ledger line is a charge of its request.
impl From<LedgerLine> for Charge {
    fn from(line: LedgerLine) -> Self {
        Charge {
            item: line.item,
            credits: line.credits,
            reason: line.reason,
            charged_at: line.charged_at,
        }
    }
}

/// An organization's credits as loaded, before its ledger lines
/// ([`OrganizationCredits::assemble`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CreditTotals {
    pub organization_id: Uuid,
    pub organization_name: String,
    pub monthly_credit_limit: i64,
    pub suspended: bool,
    pub charged: i64,
}

/// An organization's credits since a time (the month's start).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OrganizationCredits {
    pub organization_id: Uuid,
    pub organization_name: String,
    pub monthly_credit_limit: i64,
    pub suspended: bool,
    /// Every credit charged since then.
    pub charged: i64,
    /// The lines, newest first, at most [`LEDGER_LINES`].
    pub lines: Vec<LedgerLine>,
}

impl OrganizationCredits {
    /// Each organization with its ledger lines (keyed by the organization's id), in the order
    /// given.
    pub fn assemble(
        totals: impl IntoIterator<Item = impl Into<CreditTotals>>,
        lines: impl IntoIterator<Item = (Uuid, impl Into<LedgerLine>)>,
    ) -> Vec<OrganizationCredits> {
        let mut lines = grouped(lines.into_iter().map(|(id, l)| (id, l.into())));
        let mut credits = |t: CreditTotals| OrganizationCredits {
            lines: lines.remove(&t.organization_id).unwrap_or_default(),
            organization_id: t.organization_id,
            organization_name: t.organization_name,
            monthly_credit_limit: t.monthly_credit_limit,
            suspended: t.suspended,
            charged: t.charged,
        };
        totals.into_iter().map(|t| credits(t.into())).collect()
    }
}

/// The most ledger lines shown per organization.
pub const LEDGER_LINES: i64 = 200;

/// What the research work does next for a request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NextStep {
    /// Look this item up (its lookup was counted against the provider's quota).
    Query {
        position: i16,
        kind: ResearchKind,
        item: String,
        key: String,
        searched: String,
        /// The request's price per item found, fixed at its quote.
        price: i64,
    },
    /// An item was settled without a lookup (cached, or the quota ran out): go on.
    Continue,
    /// Every item is settled: the request is done and its job finished.
    Done,
}

/// What one lookup came to.
#[derive(Debug, Clone, PartialEq)]
pub enum LookupOutcome {
    /// Found: the card, and the credits it charges with their reason.
    Found {
        card: Value,
        credits: i64,
        reason: String,
    },
    NotFound,
    /// The provider failed: not charged.
    Failed(String),
}

/// What settles an item: its outcome with the card or the error stored, and what it charges
/// (credits and the ledger's reason: a find only).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Settlement<'a> {
    pub outcome: ItemOutcome,
    pub card: Option<&'a Value>,
    pub error: Option<&'a str>,
    pub charge: Option<(i64, &'a str)>,
}

impl Settlement<'_> {
    /// An item settled from the organization's cache: its card, free.
    pub fn cached(card: &Value) -> Settlement<'_> {
        Settlement {
            outcome: ItemOutcome::Cached,
            card: Some(card),
            error: None,
            charge: None,
        }
    }
}

impl LookupOutcome {
    /// What the lookup settles its item with: a find its card and charge, a failure its error.
    pub fn settlement(&self) -> Settlement<'_> {
        let nothing = Settlement {
            outcome: ItemOutcome::NotFound,
            card: None,
            error: None,
            charge: None,
        };
        match self {
            LookupOutcome::Found {
                card,
                credits,
                reason,
            } => Settlement {
                outcome: ItemOutcome::Found,
                card: Some(card),
                charge: Some((*credits, reason)),
                ..nothing
            },
            LookupOutcome::NotFound => nothing,
            LookupOutcome::Failed(error) => Settlement {
                outcome: ItemOutcome::Failed,
                error: Some(error),
                ..nothing
            },
        }
    }
}

/// The research requests of an organization in PostgreSQL. Every method is one transaction
/// (or one snapshot); a request of another organization is [`AdsRefusal::NotFound`].
pub trait ResearchRepo: Send + Sync {
    /// Reads the workspace's marketplace and the organization's price, checks the items
    /// ([`crate::research::check_items`]), finds which the organization has cached, and stores
    /// the quote.
    fn quote<'a>(
        &'a self,
        agent: AgentRef,
        request: &'a NewQuote,
        now: Timestamp,
    ) -> BoxFuture<'a, anyhow::Result<Result<QuotedRequest, AdsRefusal>>>;

    /// Locks the request, judges the approval ([`crate::research::judge_approval`]) and, when
    /// approved, records it and queues the work.
    fn approve<'a>(
        &'a self,
        agent: AgentRef,
        approval: &'a Approval,
    ) -> BoxFuture<'a, anyhow::Result<Result<ResearchRecord, AdsRefusal>>>;

    /// The organization's requests (`None`: every organization's, for a platform admin) with
    /// their items and charges, newest first: three statements whatever the page's size.
    fn list<'a>(
        &'a self,
        organization: Option<Uuid>,
        query: &'a ResearchListQuery,
    ) -> BoxFuture<'a, anyhow::Result<fleetdesk_kernel::Page<ResearchRecord>>>;

    /// The request with its items and charges.
    fn get(
        &self,
        agent: AgentRef,
        id: Uuid,
    ) -> BoxFuture<'_, anyhow::Result<Result<ResearchRecord, AdsRefusal>>>;

    /// The credits charged since `since` to the organization (every organization when
    /// `None`), with their ledger lines: what a person reads in their day. One snapshot.
    fn credits(
        &self,
        organization: Option<Uuid>,
        since: Timestamp,
    ) -> BoxFuture<'_, anyhow::Result<Vec<OrganizationCredits>>>;

    /// The work's next step on the request `job` names, under the job's lease (`None` when
    /// another instance holds it now): the first unsettled item settled from the
    /// organization's cache, or counted against the provider's quota of the day and handed
    /// out for a lookup (`daily_quota`; once it is used up every unsettled item is left
    /// unqueried), or, with none left, the request done and the job finished. One
    /// transaction.
    fn next_step<'a>(
        &'a self,
        job: &'a Job,
        daily_quota: Option<i64>,
        now: Timestamp,
    ) -> BoxFuture<'a, anyhow::Result<Option<NextStep>>>;

    /// Records an item's lookup, and its charge in the ledger when found, under the job's
    /// lease (`false` when lost). An item already settled is left as it is, so a lookup
    /// repeated after a restart charges once. One transaction.
    fn record_lookup<'a>(
        &'a self,
        job: &'a Job,
        position: i16,
        outcome: &'a LookupOutcome,
        now: Timestamp,
    ) -> BoxFuture<'a, anyhow::Result<bool>>;
}

/// A person making or cancelling picks: a member of an organization (agency), or a platform
/// admin, who outside any organization reaches every organization's.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PickPerson {
    pub person_id: Uuid,
    /// `None`: a platform admin outside any organization.
    pub organization_id: Option<Uuid>,
}

/// A pick a person makes from a research card.
#[derive(Debug, Clone)]
pub struct NewPick {
    pub research_id: Uuid,
    /// The item as the request gave it.
    pub item: String,
    /// The account's current or legacy code, in the research's workspace.
    pub code: String,
    /// Only when a legacy code is repeated across platforms.
    pub platform: Option<fleetdesk_kernel::Platform>,
    pub note: Option<String>,
    pub now: Timestamp,
}

/// Someone named on a pick.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Named {
    pub id: Uuid,
    pub name: String,
}

/// A pick as it stands.
#[derive(Debug, Clone)]
pub struct PickRecord {
    pub number: PickNumber,
    pub status: PickStatus,
    pub organization_id: Uuid,
    pub code: String,
    pub platform: String,
    pub persona: Named,
    pub note: Option<String>,
    /// The research card, as the work stored it.
    pub card: Value,
    pub research_id: Uuid,
    pub item: String,
    /// The post that drafted it.
    pub post_id: Option<Uuid>,
    pub created_at: Timestamp,
    pub created_by: Named,
    pub drafted_at: Option<Timestamp>,
    pub cancelled_at: Option<Timestamp>,
    pub cancelled_by: Option<Named>,
}

/// The picks in PostgreSQL. People make and cancel them (one transaction each); an agent
/// reads those on its own accounts (the accounts of its personas).
pub trait PickRepo: Send + Sync {
    /// Numbers the pick in its organization and stores it with the item's card
    /// ([`crate::pick::check_pickable`]), for an account of the research's workspace. A
    /// research request the person cannot reach, an item it did not ask for, or an account
    /// not in its workspace is 422 naming `research_id`, `item` or `code`.
    fn create<'a>(
        &'a self,
        person: PickPerson,
        pick: &'a NewPick,
    ) -> BoxFuture<'a, anyhow::Result<Result<PickRecord, AdsRefusal>>>;

    /// Cancels the pick ([`crate::pick::judge_cancel`]); `false` when it was cancelled
    /// already (nothing changed). Unknown in reach: 404.
    fn cancel(
        &self,
        person: PickPerson,
        number: PickNumber,
        now: Timestamp,
    ) -> BoxFuture<'_, anyhow::Result<Result<(PickRecord, bool), AdsRefusal>>>;

    /// A pick on one of the agent's accounts; any other is 404.
    fn get(
        &self,
        agent: AgentRef,
        number: PickNumber,
    ) -> BoxFuture<'_, anyhow::Result<Result<PickRecord, AdsRefusal>>>;

    /// The picks on the agent's accounts the filter lets through, newest first, at most
    /// [`PICKS_LISTED`].
    fn list(
        &self,
        agent: AgentRef,
        filter: PickFilter,
    ) -> BoxFuture<'_, anyhow::Result<Vec<PickRecord>>>;
}

/// The most picks a list answers.
pub const PICKS_LISTED: i64 = 200;

/// A change an agent proposes, checked ([`crate::proposal`]).
#[derive(Debug, Clone)]
pub struct NewProposal {
    pub change: crate::proposal::Change,
    /// Which numbers, which period, what is expected.
    pub reason: String,
    pub now: Timestamp,
}

/// A proposal as it stands.
#[derive(Debug, Clone)]
pub struct ProposalRecord {
    pub id: Uuid,
    pub kind: crate::proposal::ProposalKind,
    pub status: crate::proposal::ProposalStatus,
    pub ad_id: Option<String>,
    pub post_id: Option<Uuid>,
    pub ad_account_id: Option<String>,
    pub budget_type: Option<crate::proposal::BudgetType>,
    pub amount: Option<Cents>,
    pub days: Option<i32>,
    pub countries: Vec<String>,
    pub reason: String,
    pub decision_id: Uuid,
    /// What the platform answered, or why it failed.
    pub result: Option<Value>,
    pub created_at: Timestamp,
    pub decided_by: Option<Value>,
    pub decided_at: Option<Timestamp>,
    pub executed_at: Option<Timestamp>,
}

impl ProposalRecord {
    /// The record as it stands at `now`: a waiting proposal past its 7 days shows expired
    /// ([`crate::proposal::ProposalStatus::shown`]).
    pub fn at(self, now: Timestamp) -> ProposalRecord {
        ProposalRecord {
            status: self.status.shown(self.created_at, now),
            ..self
        }
    }
}

/// The workspace's monthly ad budget and what was spent of it this month.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema), schema(as = AdCap))]
pub struct CapView {
    #[cfg_attr(feature = "openapi", schema(value_type = f64))]
    pub monthly_limit: Cents,
    pub currency: String,
    /// Synced spend this month (Taipei) of the ad accounts in the cap's currency.
    #[cfg_attr(feature = "openapi", schema(value_type = f64))]
    pub spent_this_month: Cents,
}

/// An ad account as the last sync saw it.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema), schema(as = AdAccount))]
pub struct AdAccountView {
    pub id: String,
    pub name: String,
    pub currency: String,
    /// As the last sync saw it; null before the first.
    pub status: Option<String>,
    /// When the last sync stored it (ISO UTC); null before the first.
    #[serde(with = "fleetdesk_kernel::time::utc::option")]
    #[cfg_attr(feature = "openapi", schema(value_type = Option<String>))]
    pub synced_at: Option<Timestamp>,
    /// Why the last sync of the account failed.
    pub sync_error: Option<String>,
}

/// A campaign's numbers summed over the days asked.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema), schema(as = AdCampaign))]
pub struct CampaignView {
    pub id: String,
    pub ad_account_id: String,
    pub name: String,
    pub status: String,
    #[cfg_attr(feature = "openapi", schema(value_type = f64))]
    pub spend: Cents,
    pub impressions: i64,
    /// Summed per day: a person reached on two days counts twice.
    pub reach: i64,
    pub clicks: i64,
    /// Clicks per impression, percent; null without impressions.
    pub ctr: Option<f64>,
    /// Spend per click; null without clicks.
    pub cpc: Option<f64>,
    pub results: i64,
    /// Made by the service.
    pub by_fleetdesk: bool,
}

/// A campaign's numbers as summed over the days asked, before their ratios.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CampaignTotals {
    pub id: String,
    pub ad_account_id: String,
    pub name: String,
    pub status: String,
    pub by_fleetdesk: bool,
    pub spend: Cents,
    pub impressions: i64,
    pub reach: i64,
    pub clicks: i64,
    pub results: i64,
}

/// A campaign's sums with their click-through rate and cost per click
/// ([`crate::proposal::ratios`]).
impl From<CampaignTotals> for CampaignView {
    fn from(c: CampaignTotals) -> Self {
        let (ctr, cpc) = crate::proposal::ratios(c.spend, c.impressions, c.clicks);
        CampaignView {
            id: c.id,
            ad_account_id: c.ad_account_id,
            name: c.name,
            status: c.status,
            spend: c.spend,
            impressions: c.impressions,
            reach: c.reach,
            clicks: c.clicks,
            ctr,
            cpc,
            results: c.results,
            by_fleetdesk: c.by_fleetdesk,
        }
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct AdView {
    pub id: String,
    pub ad_account_id: String,
    pub campaign_id: String,
    pub kind: String,
    pub status: crate::proposal::AdStatus,
    pub budget_type: crate::proposal::BudgetType,
    pub budget: Cents,
    pub starts_at: Option<Timestamp>,
    pub ends_at: Option<Timestamp>,
    pub post_id: Option<Uuid>,
    pub story_id: Option<String>,
}

/// What `GET /ads` reads: the last sync's data and the proposals of the last 30 days.
#[derive(Debug, Clone)]
pub struct AdsView {
    pub cap: Option<CapView>,
    pub ad_accounts: Vec<AdAccountView>,
    pub campaigns: Vec<CampaignView>,
    /// The ads the service made, paused or running.
    pub ads: Vec<AdView>,
    pub proposals: Vec<ProposalRecord>,
}

/// The ads of a workspace in PostgreSQL, for agents and people. Every method is one
/// transaction (or one snapshot); a workspace without ads enabled is
/// [`AdsRefusal::AdsDisabled`].
pub trait AdsRepo: Send + Sync {
    /// The synced ad data of `workspace`, a workspace of `organization` (`None`: any, for a
    /// platform admin; another organization's, archived or unknown is
    /// [`AdsRefusal::NotFound`]), campaigns summed over the `days` before `now`.
    fn view(
        &self,
        organization: Option<Uuid>,
        workspace: Uuid,
        days: i64,
        now: Timestamp,
    ) -> BoxFuture<'_, anyhow::Result<Result<AdsView, AdsRefusal>>>;

    /// Checks the proposal against the synced ads and the workspace's posts
    /// ([`crate::proposal::check_ad_state`]), refuses a duplicate of a waiting one (a waiting
    /// one past its 7 days is expired first), opens its `ad_change` decision and stores it.
    fn propose<'a>(
        &'a self,
        agent: AgentRef,
        proposal: &'a NewProposal,
    ) -> BoxFuture<'a, anyhow::Result<Result<ProposalRecord, AdsRefusal>>>;
}

/// What the ad work does next for an approved proposal.
#[derive(Debug, Clone, PartialEq)]
pub enum ChangeStep {
    /// Make the change on the account.
    Execute {
        proposal_id: Uuid,
        account: crate::platform::AdAccountRef,
        change: Box<crate::platform::Execution>,
    },
    /// The proposal was settled (executed, failed, or an earlier attempt of a boost was cut
    /// short and is failed rather than risk a second boost): the job is finished.
    Done,
}

/// The ad work in PostgreSQL: syncs, expiry, and executing approved proposals. Each method is
/// one transaction.
pub trait AdWorkRepo: Send + Sync {
    /// Every ad account of the workspaces with ads enabled (not archived).
    fn sync_targets(
        &self,
    ) -> BoxFuture<'_, anyhow::Result<Vec<(Uuid, crate::platform::AdAccountRef)>>>;

    /// Stores what a sync of the account saw (campaigns, their days from `since`, its ads,
    /// replacing what the last sync stored), or the reason it failed (the data stays).
    fn store_sync<'a>(
        &'a self,
        workspace_id: Uuid,
        account_id: &'a str,
        since: jiff::civil::Date,
        outcome: &'a Result<crate::platform::AccountSnapshot, crate::platform::PlatformError>,
        now: Timestamp,
    ) -> BoxFuture<'a, anyhow::Result<()>>;

    /// Waiting proposals past their 7 days become expired and their decisions are dismissed
    /// by the service; approved proposals whose change the job queue gave up on (its last
    /// attempt failed, or its instance died on every attempt) become failed with the queue's
    /// last error. Answers how many proposals changed.
    fn expire_proposals(&self, now: Timestamp) -> BoxFuture<'_, anyhow::Result<u64>>;

    /// The next step of the change `job` names, under the job's lease (`None` when another
    /// instance holds it now).
    fn change_step<'a>(
        &'a self,
        job: &'a Job,
        now: Timestamp,
    ) -> BoxFuture<'a, anyhow::Result<Option<ChangeStep>>>;

    /// Records what the platform did (or why it failed) on the proposal, a boost's new ad
    /// among the workspace's ads (paused, made by the service), and finishes the job, under
    /// its lease (`false` when lost).
    fn record_execution<'a>(
        &'a self,
        job: &'a Job,
        proposal_id: Uuid,
        outcome: &'a Result<crate::platform::Executed, crate::platform::PlatformError>,
        now: Timestamp,
    ) -> BoxFuture<'a, anyhow::Result<bool>>;
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn at(t: &str) -> Timestamp {
        t.parse().unwrap()
    }

    fn stored(id: u128) -> StoredResearch {
        StoredResearch {
            id: Uuid::from_u128(id),
            workspace_id: Uuid::from_u128(100),
            workspace: "Main".into(),
            kind: ResearchKind::TopicScout,
            lane: None,
            status: ResearchStatus::Running,
            price: 2,
            credits_quoted: 4,
            created_at: at("2026-11-27T04:00:00Z"),
            expires_at: at("2026-11-27T04:30:00Z"),
            approved_at: None,
            approved_by: None,
            finished_at: None,
        }
    }

    fn item(name: &str) -> ItemState {
        ItemState {
            item: name.into(),
            searched: name.into(),
            cached_at_quote: false,
            outcome: None,
            card: None,
        }
    }

    fn line(research: u128, item: &str, credits: i64) -> LedgerLine {
        LedgerLine {
            research_id: Uuid::from_u128(research),
            item: item.into(),
            credits,
            reason: format!("found: {item}"),
            charged_at: at("2026-11-27T05:00:00Z"),
        }
    }

    #[test]
    fn each_request_gets_its_own_items_and_charges_in_order() {
        let (one, two) = (Uuid::from_u128(1), Uuid::from_u128(2));
        let records = ResearchRecord::assemble(
            [stored(1), stored(2), stored(3)],
            [(one, item("a")), (two, item("x")), (one, item("b"))],
            [line(2, "x", 2), line(1, "b", 2), line(1, "a", 2)],
        );
        assert_eq!(records.len(), 3);
        let names = |r: &ResearchRecord| -> Vec<String> {
            r.items.iter().map(|i| i.item.clone()).collect()
        };
        assert_eq!(names(&records[0]), ["a", "b"]);
        assert_eq!(names(&records[1]), ["x"]);
        assert!(records[2].items.is_empty() && records[2].charges.is_empty());
        assert_eq!(records[0].workspace, (Uuid::from_u128(100), "Main".into()));
        let charged: Vec<&str> = records[0].charges.iter().map(|c| c.item.as_str()).collect();
        assert_eq!(charged, ["b", "a"]);
        assert_eq!(records[1].charges[0].reason, "found: x");
    }

    #[test]
    fn each_organization_gets_its_own_ledger_lines() {
        let totals = |id: u128, name: &str| CreditTotals {
            organization_id: Uuid::from_u128(id),
            organization_name: name.into(),
            monthly_credit_limit: 100,
            suspended: false,
            charged: 4,
        };
        let org = Uuid::from_u128(7);
        let credits = OrganizationCredits::assemble(
            [totals(7, "Acme"), totals(8, "Bolt")],
            [(org, line(1, "a", 2)), (org, line(2, "b", 2))],
        );
        assert_eq!(credits[0].organization_name, "Acme");
        assert_eq!(credits[0].lines, [line(1, "a", 2), line(2, "b", 2)]);
        assert!(credits[1].lines.is_empty());
        assert_eq!(credits[1].charged, 4);
    }

    #[test]
    fn a_campaign_shows_its_sums_with_their_ratios() {
        let totals = CampaignTotals {
            id: "c1".into(),
            ad_account_id: "act_1".into(),
            name: "Spring".into(),
            status: "ACTIVE".into(),
            by_fleetdesk: true,
            spend: Cents(12_345),
            impressions: 1_000,
            reach: 800,
            clicks: 30,
            results: 4,
        };
        let view = CampaignView::from(totals.clone());
        assert_eq!((view.ctr, view.cpc), (Some(3.0), Some(4.12)));
        assert_eq!(
            (view.spend, view.reach, view.results),
            (Cents(12_345), 800, 4)
        );
        assert_eq!((view.id.as_str(), view.by_fleetdesk), ("c1", true));
        let none = CampaignView::from(CampaignTotals {
            impressions: 0,
            clicks: 0,
            ..totals
        });
        assert_eq!((none.ctr, none.cpc), (None, None));
    }

    #[test]
    fn a_proposal_shows_expired_past_its_7_days() {
        use crate::proposal::{ProposalKind, ProposalStatus};
        let record = |status| ProposalRecord {
            id: Uuid::from_u128(1),
            kind: ProposalKind::Pause,
            status,
            ad_id: Some("a1".into()),
            post_id: None,
            ad_account_id: None,
            budget_type: None,
            amount: None,
            days: None,
            countries: vec![],
            reason: "ctr fell".into(),
            decision_id: Uuid::from_u128(2),
            result: None,
            created_at: at("2026-11-10T02:00:00Z"),
            decided_by: None,
            decided_at: None,
            executed_at: None,
        };
        let waiting = || record(ProposalStatus::Waiting);
        let (before, after) = (at("2026-11-17T01:59:59Z"), at("2026-11-17T02:00:00Z"));
        assert_eq!(waiting().at(before).status, ProposalStatus::Waiting);
        assert_eq!(waiting().at(after).status, ProposalStatus::Expired);
        let approved = record(ProposalStatus::Approved).at(after);
        assert_eq!(approved.status, ProposalStatus::Approved);
        assert_eq!(approved.reason, "ctr fell");
    }

    #[test]
    fn a_find_settles_with_its_card_and_charge_a_failure_with_its_error() {
        let card = json!({"title": "Lamp"});
        let found = LookupOutcome::Found {
            card: card.clone(),
            credits: 5,
            reason: "found: 123".into(),
        };
        let s = found.settlement();
        assert_eq!(s.outcome, ItemOutcome::Found);
        assert_eq!(s.card, Some(&card));
        assert_eq!(s.charge, Some((5, "found: 123")));
        let failed = LookupOutcome::Failed("timeout".into());
        let s = failed.settlement();
        assert_eq!(
            (s.outcome, s.error, s.charge),
            (ItemOutcome::Failed, Some("timeout"), None)
        );
        let s = LookupOutcome::NotFound.settlement();
        assert_eq!(
            (s.outcome, s.card, s.error),
            (ItemOutcome::NotFound, None, None)
        );
        let cached = Settlement::cached(&card);
        assert_eq!((cached.outcome, cached.charge), (ItemOutcome::Cached, None));
    }
}
