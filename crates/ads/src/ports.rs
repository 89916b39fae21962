//! The ports the adapters implement: the research and pick repositories (PostgreSQL).

use fleetdesk_kernel::jobs::Job;
use fleetdesk_kernel::money::Cents;
use fleetdesk_kernel::{AgentRef, BoxFuture};
use jiff::Timestamp;
use serde_json::Value;
use uuid::Uuid;

use crate::AdsRefusal;
use crate::pick::{PickFilter, PickNumber, PickStatus};
use crate::research::{Quote, ResearchKind, ResearchStatus};

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
    pub outcome: Option<crate::research::ItemOutcome>,
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

/// The ads of a workspace in PostgreSQL, for agents and people. Every method is one transaction (or one
/// snapshot); a workspace without ads enabled is [`AdsRefusal::AdsDisabled`].
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
