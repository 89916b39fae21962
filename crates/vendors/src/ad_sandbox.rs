//! The built-in ad platform for demos and tests: every ad account has two campaigns with
//! made-up daily numbers (the same for the same account and day, every time) and two ads, one
//! running and one paused. Changes made through it (pauses, budgets, boosts) are kept in
//! memory, so the next sync shows them; a restart forgets them. It talks to nothing.

use fleetdesk_kernel::money::Cents;
use std::collections::BTreeMap;
use std::sync::Mutex;

use fleetdesk_ads::platform::{
    AccountSnapshot, AdAccountRef, AdPlatform, AdSnapshot, CampaignDay, CampaignSnapshot,
    CreatedAd, Executed, Execution, PlatformError,
};
use fleetdesk_ads::proposal::{AdStatus, BudgetType};
use fleetdesk_kernel::BoxFuture;
use jiff::civil::Date;
use serde_json::json;
use sha2::{Digest, Sha256};

/// The sandbox; it needs no token (an account's token variable may be unset), and the token
/// `fail` makes every call fail (to show an error).
#[derive(Debug, Default)]
pub struct SandboxAds {
    /// Ads by id: those changed or made through the sandbox, with their account.
    changed: Mutex<BTreeMap<String, (String, AdSnapshot)>>,
}

/// A number from the account, the campaign and the day: the same every time.
fn roll(parts: &[&str], modulo: u64) -> u64 {
    let digest = Sha256::digest(parts.join("|").as_bytes());
    let mut first = [0u8; 8];
    first.copy_from_slice(&digest[..8]);
    u64::from_be_bytes(first) % modulo
}

fn digits(account: &AdAccountRef) -> &str {
    account.id.strip_prefix("act_").unwrap_or(&account.id)
}

/// The account's two standing ads: `<digits>11` running on 300 a day, `<digits>12` paused on
/// 200 a day.
fn standing_ads(account: &AdAccountRef) -> Vec<AdSnapshot> {
    let d = digits(account);
    let ad = |n: u8, status: AdStatus, budget: Cents| AdSnapshot {
        id: format!("{d}1{n}"),
        campaign_id: format!("{d}0{n}"),
        adset_id: format!("{d}2{n}"),
        name: format!("Sandbox ad {n}"),
        status,
        budget_type: BudgetType::Daily,
        budget,
        starts_at: None,
        ends_at: None,
        story_id: None,
    };
    vec![
        ad(1, AdStatus::Running, Cents(30000)),
        ad(2, AdStatus::Paused, Cents(20000)),
    ]
}

impl SandboxAds {
    fn check(token: &str) -> Result<(), PlatformError> {
        if token == "fail" {
            return Err(PlatformError(
                "the sandbox refuses the access token \"fail\" (it takes any other, or none)"
                    .into(),
            ));
        }
        Ok(())
    }

    fn snapshot(&self, account: &AdAccountRef, since: Date, until: Date) -> AccountSnapshot {
        let d = digits(account);
        let campaigns = (1..=2u8)
            .map(|n| {
                let id = format!("{d}0{n}");
                let mut days = Vec::new();
                let mut day = since;
                while day <= until {
                    let key = day.to_string();
                    let impressions = 500 + roll(&[&id, &key, "i"], 5000) as i64;
                    let clicks = roll(&[&id, &key, "c"], 200) as i64;
                    days.push(CampaignDay {
                        day,
                        spend: Cents(roll(&[&id, &key, "s"], 30000) as i64),
                        impressions,
                        reach: impressions * 4 / 5,
                        clicks,
                        results: clicks / 2,
                    });
                    match day.tomorrow() {
                        Ok(next) => day = next,
                        Err(_) => break,
                    }
                }
                CampaignSnapshot {
                    id,
                    name: format!("Sandbox campaign {n}"),
                    status: "active".into(),
                    days,
                }
            })
            .collect();
        let changed = self.changed.lock().map(|c| c.clone()).unwrap_or_default();
        let mut ads: BTreeMap<String, AdSnapshot> = standing_ads(account)
            .into_iter()
            .map(|a| (a.id.clone(), a))
            .collect();
        for (id, (owner, ad)) in changed {
            if owner == account.id {
                ads.insert(id, ad);
            }
        }
        AccountSnapshot {
            status: "active".into(),
            campaigns,
            ads: ads.into_values().collect(),
        }
    }

    fn make(&self, account: &AdAccountRef, change: &Execution) -> Result<Executed, PlatformError> {
        let mut changed = self
            .changed
            .lock()
            .map_err(|_| PlatformError("the sandbox's state is poisoned".into()))?;
        let find = |changed: &BTreeMap<String, (String, AdSnapshot)>,
                    pick: &dyn Fn(&AdSnapshot) -> bool| {
            changed
                .values()
                .filter(|(owner, _)| *owner == account.id)
                .map(|(_, ad)| ad.clone())
                .chain(standing_ads(account))
                .find(|ad| pick(ad))
        };
        match change {
            Execution::Pause { ad_id } | Execution::Resume { ad_id, .. } => {
                let mut ad = find(&changed, &|a| a.id == *ad_id)
                    .ok_or_else(|| PlatformError(format!("the sandbox has no ad {ad_id}")))?;
                ad.status = if matches!(change, Execution::Pause { .. }) {
                    AdStatus::Paused
                } else {
                    AdStatus::Running
                };
                changed.insert(ad.id.clone(), (account.id.clone(), ad.clone()));
                Ok(Executed {
                    result: json!({"success": true, "ad_id": ad.id, "status": ad.status}),
                    created: None,
                })
            }
            Execution::Budget {
                adset_id,
                budget_type,
                amount,
            } => {
                let mut ad = find(&changed, &|a| a.adset_id == *adset_id).ok_or_else(|| {
                    PlatformError(format!("the sandbox has no ad set {adset_id}"))
                })?;
                ad.budget_type = *budget_type;
                ad.budget = *amount;
                changed.insert(ad.id.clone(), (account.id.clone(), ad.clone()));
                Ok(Executed {
                    result: json!({"success": true, "adset_id": adset_id, "budget": amount}),
                    created: None,
                })
            }
            Execution::Boost {
                story_id,
                name,
                budget_type,
                amount,
                starts_at,
                ends_at,
                ..
            } => {
                let n = roll(&[&account.id, story_id, name], 1_000_000_000);
                let created = CreatedAd {
                    campaign_id: format!("9{n:09}1"),
                    adset_id: format!("9{n:09}2"),
                    ad_id: format!("9{n:09}3"),
                };
                let ad = AdSnapshot {
                    id: created.ad_id.clone(),
                    campaign_id: created.campaign_id.clone(),
                    adset_id: created.adset_id.clone(),
                    name: name.clone(),
                    status: AdStatus::Paused,
                    budget_type: *budget_type,
                    budget: *amount,
                    starts_at: Some(*starts_at),
                    ends_at: Some(*ends_at),
                    story_id: Some(story_id.clone()),
                };
                changed.insert(ad.id.clone(), (account.id.clone(), ad));
                Ok(Executed {
                    result: json!({"campaign_id": created.campaign_id, "adset_id": created.adset_id,
                                   "ad_id": created.ad_id, "status": "paused"}),
                    created: Some(created),
                })
            }
        }
    }
}

impl AdPlatform for SandboxAds {
    fn sync<'a>(
        &'a self,
        account: &'a AdAccountRef,
        token: &'a str,
        since: Date,
        until: Date,
    ) -> BoxFuture<'a, Result<AccountSnapshot, PlatformError>> {
        Box::pin(async move {
            Self::check(token)?;
            Ok(self.snapshot(account, since, until))
        })
    }

    fn execute<'a>(
        &'a self,
        account: &'a AdAccountRef,
        token: &'a str,
        change: &'a Execution,
    ) -> BoxFuture<'a, Result<Executed, PlatformError>> {
        Box::pin(async move {
            Self::check(token)?;
            self.make(account, change)
        })
    }

    fn needs_token(&self) -> bool {
        false
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn account() -> AdAccountRef {
        AdAccountRef {
            id: "act_77".into(),
            currency: "TWD".into(),
            token_env: "T".into(),
        }
    }

    fn block_on<F: std::future::Future>(f: F) -> F::Output {
        // The sandbox never waits: its futures are ready when first polled.
        let waker = std::task::Waker::noop();
        let mut cx = std::task::Context::from_waker(waker);
        let mut f = std::pin::pin!(f);
        match f.as_mut().poll(&mut cx) {
            std::task::Poll::Ready(out) => out,
            std::task::Poll::Pending => panic!("the sandbox waited"),
        }
    }

    #[test]
    fn the_same_account_and_days_give_the_same_numbers_and_changes_stay() {
        let sandbox = SandboxAds::default();
        let (since, until) = (Date::constant(2026, 11, 1), Date::constant(2026, 11, 3));
        let one = block_on(sandbox.sync(&account(), "t", since, until)).unwrap();
        let two = block_on(SandboxAds::default().sync(&account(), "t", since, until)).unwrap();
        assert_eq!(one, two);
        assert_eq!(one.campaigns.len(), 2);
        assert_eq!(one.campaigns[0].days.len(), 3);
        assert_eq!(one.ads[0].id, "7711");
        assert_eq!(one.ads[0].status, AdStatus::Running);

        let pause = Execution::Pause {
            ad_id: "7711".into(),
        };
        block_on(sandbox.execute(&account(), "t", &pause)).unwrap();
        let after = block_on(sandbox.sync(&account(), "t", since, until)).unwrap();
        assert_eq!(after.ads[0].status, AdStatus::Paused);
        assert!(block_on(sandbox.sync(&account(), "fail", since, until)).is_err());
        // No token at all: an account whose variable is not set.
        assert!(!sandbox.needs_token());
        assert_eq!(
            block_on(sandbox.sync(&account(), "", since, until)).unwrap(),
            block_on(sandbox.sync(&account(), "t", since, until)).unwrap()
        );
        let unknown = Execution::Pause { ad_id: "1".into() };
        assert!(block_on(sandbox.execute(&account(), "t", &unknown)).is_err());
    }
}
