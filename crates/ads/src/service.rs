//! The ads' use cases: paid research, ad picks, and ad changes; each is one transaction of its
//! port, which loads the facts the rules of this crate decide on and writes their plans.

use crate::AdsRefusal;
use crate::pick::{PickFilter, PickNumber};
use crate::ports::*;
use fleetdesk_kernel::AgentRef;
use jiff::Timestamp;
use std::sync::Arc;
use uuid::Uuid;

/// Paid ad research: quote, approval, and what people read of it.
#[derive(Clone)]
pub struct ResearchService {
    repo: Arc<dyn ResearchRepo>,
}

impl ResearchService {
    pub fn new(repo: Arc<dyn ResearchRepo>) -> Self {
        ResearchService { repo }
    }
    /// Reads the workspace's marketplace and the organization's price, checks the items
    /// ([`crate::research::check_items`]), finds which the organization has cached, and stores
    /// the quote.
    pub async fn quote(
        &self,
        agent: AgentRef,
        request: &NewQuote,
        now: Timestamp,
    ) -> anyhow::Result<Result<QuotedRequest, AdsRefusal>> {
        self.repo.quote(agent, request, now).await
    }
    /// Locks the request, judges the approval ([`crate::research::judge_approval`]) and, when
    /// approved, records it and queues the work.
    pub async fn approve(
        &self,
        agent: AgentRef,
        approval: &Approval,
    ) -> anyhow::Result<Result<ResearchRecord, AdsRefusal>> {
        self.repo.approve(agent, approval).await
    }
    /// The organization's requests (`None`: every organization's, for a platform admin) with
    /// their items and charges, newest first: three statements whatever the page's size.
    pub async fn list(
        &self,
        organization: Option<Uuid>,
        query: &ResearchListQuery,
    ) -> anyhow::Result<fleetdesk_kernel::Page<ResearchRecord>> {
        self.repo.list(organization, query).await
    }
    /// The request with its items and charges.
    pub async fn get(
        &self,
        agent: AgentRef,
        id: Uuid,
    ) -> anyhow::Result<Result<ResearchRecord, AdsRefusal>> {
        self.repo.get(agent, id).await
    }
    /// The credits charged since `since` to the organization (every organization when
    /// `None`), with their ledger lines: what a person reads in their day. One snapshot.
    pub async fn credits(
        &self,
        organization: Option<Uuid>,
        since: Timestamp,
    ) -> anyhow::Result<Vec<OrganizationCredits>> {
        self.repo.credits(organization, since).await
    }
}

/// Ad picks.
#[derive(Clone)]
pub struct PicksService {
    repo: Arc<dyn PickRepo>,
}

impl PicksService {
    pub fn new(repo: Arc<dyn PickRepo>) -> Self {
        PicksService { repo }
    }
    /// Numbers the pick in its organization and stores it with the item's card
    /// ([`crate::pick::check_pickable`]), for an account of the research's workspace. A
    /// research request the person cannot reach, an item it did not ask for, or an account
    /// not in its workspace is 422 naming `research_id`, `item` or `code`.
    pub async fn create(
        &self,
        person: PickPerson,
        pick: &NewPick,
    ) -> anyhow::Result<Result<PickRecord, AdsRefusal>> {
        self.repo.create(person, pick).await
    }
    /// Cancels the pick ([`crate::pick::judge_cancel`]); `false` when it was cancelled
    /// already (nothing changed). Unknown in reach: 404.
    pub async fn cancel(
        &self,
        person: PickPerson,
        number: PickNumber,
        now: Timestamp,
    ) -> anyhow::Result<Result<(PickRecord, bool), AdsRefusal>> {
        self.repo.cancel(person, number, now).await
    }
    /// A pick on one of the agent's accounts; any other is 404.
    pub async fn get(
        &self,
        agent: AgentRef,
        number: PickNumber,
    ) -> anyhow::Result<Result<PickRecord, AdsRefusal>> {
        self.repo.get(agent, number).await
    }
    /// The picks on the agent's accounts the filter lets through, newest first, at most
    /// [`PICKS_LISTED`].
    pub async fn list(
        &self,
        agent: AgentRef,
        filter: PickFilter,
    ) -> anyhow::Result<Vec<PickRecord>> {
        self.repo.list(agent, filter).await
    }
}

/// Ads as synced, and the changes agents propose.
#[derive(Clone)]
pub struct AdsService {
    repo: Arc<dyn AdsRepo>,
}

impl AdsService {
    pub fn new(repo: Arc<dyn AdsRepo>) -> Self {
        AdsService { repo }
    }
    /// The synced ad data of `workspace`, a workspace of `organization` (`None`: any, for a
    /// platform admin; another organization's, archived or unknown is
    /// [`AdsRefusal::NotFound`]), campaigns summed over the `days` before `now`.
    pub async fn view(
        &self,
        organization: Option<Uuid>,
        workspace: Uuid,
        days: i64,
        now: Timestamp,
    ) -> anyhow::Result<Result<AdsView, AdsRefusal>> {
        self.repo.view(organization, workspace, days, now).await
    }
    /// Checks the proposal against the synced ads and the workspace's posts
    /// ([`crate::proposal::check_ad_state`]), refuses a duplicate of a waiting one (a waiting
    /// one past its 7 days is expired first), opens its `ad_change` decision and stores it.
    pub async fn propose(
        &self,
        agent: AgentRef,
        proposal: &NewProposal,
    ) -> anyhow::Result<Result<ProposalRecord, AdsRefusal>> {
        self.repo.propose(agent, proposal).await
    }
}
