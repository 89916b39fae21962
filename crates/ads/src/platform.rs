//! The ad platform port: what a sync reads of an ad account, and the changes a person's
//! approval executes. The service never queries the platform for an agent: `GET /ads` reads
//! what the last sync stored, and only an approved proposal writes to the platform.

use fleetdesk_kernel::BoxFuture;
use fleetdesk_kernel::money::Cents;
use jiff::Timestamp;
use jiff::civil::Date;
use serde_json::Value;

use crate::proposal::{AdStatus, BudgetType};

/// The background job that syncs one ad account (keyed by the hour, UTC, and the account).
pub const SYNC_JOB: &str = "ad_sync";
/// The background job that expires the proposals past their 7 days (keyed by the hour, UTC).
pub const EXPIRE_JOB: &str = "ad_expire";
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

impl AccountSnapshot {
    /// Each campaign, day and ad once (the first seen): a platform's pages may repeat an item
    /// when the list changes between two pages.
    pub fn deduped(mut self) -> AccountSnapshot {
        let mut seen = std::collections::HashSet::new();
        self.campaigns.retain(|c| seen.insert(c.id.clone()));
        for c in &mut self.campaigns {
            let mut days = std::collections::HashSet::new();
            c.days.retain(|d| days.insert(d.day));
        }
        let mut ads = std::collections::HashSet::new();
        self.ads.retain(|a| ads.insert(a.id.clone()));
        self
    }

    /// Each campaign's days from `since` on, with the campaign's id: what a sync stores anew.
    pub fn days_from(&self, since: Date) -> Vec<(&str, &CampaignDay)> {
        self.campaigns
            .iter()
            .flat_map(|c| {
                c.days
                    .iter()
                    .filter(move |d| d.day >= since)
                    .map(move |d| (c.id.as_str(), d))
            })
            .collect()
    }
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
    pub spend: Cents,
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
    /// In the account's currency.
    pub budget: Cents,
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
    /// The ad runs again: its ad set and campaign are set active too (a boost is made with
    /// all three paused).
    Resume {
        ad_id: String,
        adset_id: String,
        campaign_id: String,
    },
    /// The ad's ad set gets the budget.
    Budget {
        adset_id: String,
        budget_type: BudgetType,
        amount: Cents,
    },
    /// A paused campaign, ad set and ad promoting the post, which a person enables.
    Boost {
        /// `facebook` or `instagram`.
        platform: String,
        /// The platform's id of the post.
        story_id: String,
        /// The Instagram account an Instagram post's boost runs as.
        instagram_user_id: Option<String>,
        name: String,
        budget_type: BudgetType,
        amount: Cents,
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

    /// Whether an ad account's calls need its access token (a real platform's do; a sandbox
    /// takes an empty token when its account's variable is not set).
    fn needs_token(&self) -> bool {
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_snapshot_keeps_each_campaign_day_and_ad_once() {
        let day = |d: i8| CampaignDay {
            day: Date::constant(2026, 11, d),
            spend: Cents(i64::from(d) * 100),
            impressions: 1,
            reach: 1,
            clicks: 0,
            results: 0,
        };
        let campaign = |id: &str, days: Vec<CampaignDay>| CampaignSnapshot {
            id: id.into(),
            name: id.into(),
            status: "active".into(),
            days,
        };
        let ad = |id: &str| AdSnapshot {
            id: id.into(),
            campaign_id: "c".into(),
            adset_id: "s".into(),
            name: id.into(),
            status: AdStatus::Running,
            budget_type: BudgetType::Daily,
            budget: Cents(100),
            starts_at: None,
            ends_at: None,
            story_id: None,
        };
        let snapshot = AccountSnapshot {
            status: "active".into(),
            campaigns: vec![
                campaign("c", vec![day(1), day(2), day(1)]),
                campaign("c", vec![]),
                campaign("d", vec![day(1)]),
            ],
            ads: vec![ad("1"), ad("2"), ad("1")],
        }
        .deduped();
        assert_eq!(snapshot.campaigns.len(), 2);
        assert_eq!(snapshot.campaigns[0].days.len(), 2);
        assert_eq!(snapshot.campaigns[0].days[1].spend, Cents(200));
        assert_eq!(snapshot.ads.len(), 2);
        let from_2nd: Vec<(&str, i8)> = snapshot
            .days_from(Date::constant(2026, 11, 2))
            .into_iter()
            .map(|(c, d)| (c, d.day.day()))
            .collect();
        assert_eq!(from_2nd, [("c", 2)]);
        assert_eq!(snapshot.days_from(Date::constant(2026, 11, 1)).len(), 3);
    }
}
