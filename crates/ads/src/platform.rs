//! The ad platform port: what a sync reads of an ad account, and the changes a person's
//! approval executes. The service never queries the platform for an agent: `GET /ads` reads
//! what the last sync stored, and only an approved proposal writes to the platform.

use fleetdesk_kernel::BoxFuture;
use jiff::Timestamp;
use jiff::civil::Date;
use serde_json::Value;

use crate::proposal::{AdStatus, BudgetType};

/// The background job that syncs every workspace's ad accounts (keyed by the hour, UTC).
pub const SYNC_JOB: &str = "ad_sync";
/// The background job that executes an approved proposal (keyed by the proposal).
pub const CHANGE_JOB: &str = "ad_change";
/// How many days of campaign numbers a sync reads: what `GET /ads` may show at most.
pub const SYNC_DAYS: i64 = 90;

/// An ad account as the tenant file names it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AdAccountRef {
    /// `act_<digits>`.
    pub id: String,
    pub currency: String,
    /// The environment variable that holds the access token.
    pub token_env: String,
}

/// What a sync saw of an ad account.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct AccountSnapshot {
    /// The account's status on the platform (`active`, `disabled`, ...).
    pub status: String,
    pub campaigns: Vec<CampaignSnapshot>,
    /// Ads that run or are paused; the platform's other states (deleted, archived, in review)
    /// are left out.
    pub ads: Vec<AdSnapshot>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct CampaignSnapshot {
    pub id: String,
    pub name: String,
    pub status: String,
    /// Its numbers per day over the days asked.
    pub days: Vec<CampaignDay>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct CampaignDay {
    pub day: Date,
    pub spend: f64,
    pub impressions: i64,
    pub reach: i64,
    pub clicks: i64,
    pub results: i64,
}

#[derive(Debug, Clone, PartialEq)]
pub struct AdSnapshot {
    pub id: String,
    pub campaign_id: String,
    pub adset_id: String,
    pub name: String,
    pub status: AdStatus,
    pub budget_type: BudgetType,
    /// Ordinary units of the account's currency.
    pub budget: f64,
    pub starts_at: Option<Timestamp>,
    pub ends_at: Option<Timestamp>,
    /// The platform's id of the post the ad promotes.
    pub story_id: Option<String>,
}

/// A change to make on the platform, as the approving person.
#[derive(Debug, Clone, PartialEq)]
pub enum Execution {
    Pause {
        ad_id: String,
    },
    Resume {
        ad_id: String,
    },
    /// The ad's ad set gets the budget.
    Budget {
        adset_id: String,
        budget_type: BudgetType,
        amount: f64,
    },
    /// A paused campaign, ad set and ad promoting the post, which a person enables.
    Boost {
        /// `facebook` or `instagram`.
        platform: String,
        /// The platform's id of the post.
        story_id: String,
        name: String,
        budget_type: BudgetType,
        amount: f64,
        starts_at: Timestamp,
        ends_at: Timestamp,
        countries: Vec<String>,
    },
}

/// What the platform did.
#[derive(Debug, Clone, PartialEq)]
pub struct Executed {
    /// What the platform answered, for the proposal's `result`.
    pub result: Value,
    /// A boost's new ad, paused.
    pub created: Option<CreatedAd>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CreatedAd {
    pub campaign_id: String,
    pub adset_id: String,
    pub ad_id: String,
}

/// The platform refused or failed: the message is the platform's (never the token).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct PlatformError(pub String);

/// The ad platform (Meta's Marketing API, or the sandbox).
pub trait AdPlatform: Send + Sync {
    /// Reads the account: its status, its campaigns with their numbers per day from `since`
    /// to `until` (both included), and its running or paused ads.
    fn sync<'a>(
        &'a self,
        account: &'a AdAccountRef,
        token: &'a str,
        since: Date,
        until: Date,
    ) -> BoxFuture<'a, Result<AccountSnapshot, PlatformError>>;

    /// Makes the change on the account.
    fn execute<'a>(
        &'a self,
        account: &'a AdAccountRef,
        token: &'a str,
        change: &'a Execution,
    ) -> BoxFuture<'a, Result<Executed, PlatformError>>;
}
