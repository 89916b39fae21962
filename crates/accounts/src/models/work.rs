//! The accounts part of `GET /work/today`: which market dates apply, what is missing per
//! active account, and which accounts are out of rotation.

use crate::models::state::AccountState;
use fleetdesk_kernel::{Market, Platform};
use jiff::Timestamp;
use jiff::civil::Date;
use serde::Serialize;
use std::collections::{BTreeMap, HashMap};
use uuid::Uuid;

/// One account slot as the agent's day sees it.
#[derive(Debug, Clone)]
pub struct RotationAccount {
    pub slot_id: Uuid,
    pub code: String,
    pub platform: Platform,
    pub market: Market,
    pub persona: String,
    /// None when the slot has no live generation.
    pub state: Option<AccountState>,
    pub daily_target: i32,
    /// Stocked posts waiting in this account's inventory.
    pub inventory: i64,
}

/// Posts reported for one account on one market date. Only what agents reported counts.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct DayCount {
    pub published: i64,
    pub scheduled: i64,
    /// Approved or in review and planned for the day (not counted by the day view, which
    /// knows only what was reported; the planning view counts them).
    pub planned: i64,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct MarketDate {
    pub market: String,
    pub date: String,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct MissingRow {
    pub code: String,
    pub platform: Platform,
    pub market: String,
    pub date: String,
    pub persona: String,
    pub target: i64,
    pub published: i64,
    pub scheduled: i64,
    pub missing: i64,
    pub inventory_available: i64,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct NotInRotation {
    pub code: String,
    pub platform: Platform,
    pub state: Option<AccountState>,
    pub inventory: i64,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WorkAccounts {
    pub dates: Vec<MarketDate>,
    /// Posts wanted today by active accounts (the sum of their daily targets).
    pub expected: i64,
    /// Of those, how many are published or scheduled (each account counted up to its target).
    pub covered: i64,
    pub missing_accounts: i64,
    pub missing_posts: i64,
    /// Stocked posts across all the accounts.
    pub inventory: i64,
    pub missing: Vec<MissingRow>,
    pub not_in_rotation: Vec<NotInRotation>,
}

/// The market date each account's day is counted on: `date` when given, else today in the
/// market's zone.
pub fn market_dates(
    markets: impl IntoIterator<Item = Market>,
    date: Option<Date>,
    now: Timestamp,
) -> BTreeMap<Market, Date> {
    markets
        .into_iter()
        .map(|m| (m, date.unwrap_or_else(|| now.to_zoned(m.zone()).date())))
        .collect()
}

/// Computes the accounts part of the day. `counts` holds what was reported per slot and date.
pub fn work_accounts(
    accounts: &[RotationAccount],
    counts: &HashMap<(Uuid, Date), DayCount>,
    date: Option<Date>,
    now: Timestamp,
) -> WorkAccounts {
    let dates = market_dates(accounts.iter().map(|a| a.market), date, now);
    let mut out = WorkAccounts {
        dates: dates
            .iter()
            .map(|(m, d)| MarketDate {
                market: m.to_string(),
                date: d.to_string(),
            })
            .collect(),
        expected: 0,
        covered: 0,
        missing_accounts: 0,
        missing_posts: 0,
        inventory: accounts.iter().map(|a| a.inventory).sum(),
        missing: Vec::new(),
        not_in_rotation: Vec::new(),
    };
    for a in accounts {
        if !a.state.is_some_and(AccountState::in_rotation) {
            out.not_in_rotation.push(NotInRotation {
                code: a.code.clone(),
                platform: a.platform,
                state: a.state,
                inventory: a.inventory,
            });
            continue;
        }
        let day = dates[&a.market];
        let c = counts.get(&(a.slot_id, day)).copied().unwrap_or_default();
        let target = i64::from(a.daily_target.max(0));
        let covered = (c.published + c.scheduled).min(target);
        let missing = target - covered;
        out.expected += target;
        out.covered += covered;
        if missing > 0 {
            out.missing_accounts += 1;
            out.missing_posts += missing;
            out.missing.push(MissingRow {
                code: a.code.clone(),
                platform: a.platform,
                market: a.market.to_string(),
                date: day.to_string(),
                persona: a.persona.clone(),
                target,
                published: c.published,
                scheduled: c.scheduled,
                missing,
                inventory_available: a.inventory,
            });
        }
    }
    out
}

/// A day of an active account that still needs posts, for `planned_posts`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, serde::Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct PlannedDay {
    pub code: String,
    pub platform: Platform,
    pub market: String,
    pub date: String,
    pub persona: String,
    pub target: i64,
    /// Reported published on that day.
    pub published: i64,
    /// Reported scheduled for that day.
    pub scheduled: i64,
    /// Approved or in review and planned for that day.
    pub planned: i64,
    /// Posts still to write: target minus all of the above, never below 0.
    pub missing: i64,
    /// Stocked posts of the account that could be unstocked for this day instead.
    pub inventory_available: i64,
}

/// An account's inventory for `planned_posts`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, serde::Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct AccountInventory {
    pub code: String,
    pub platform: Platform,
    pub state: Option<AccountState>,
    /// Only active accounts may post (and have stocked posts released to them).
    pub active: bool,
    pub count: i64,
}

/// The market dates `planned_posts` looks at: `days` consecutive dates from each market's
/// today (or from `start`).
pub fn planning_dates(
    markets: impl IntoIterator<Item = Market>,
    start: Option<Date>,
    days: u32,
    now: Timestamp,
) -> Vec<(Market, Date)> {
    let mut out = Vec::new();
    for (market, first) in market_dates(markets, start, now) {
        let mut d = first;
        for _ in 0..days {
            out.push((market, d));
            match d.tomorrow() {
                Ok(next) => d = next,
                Err(_) => break,
            }
        }
    }
    out
}

/// Days of active accounts that still need posts, and every account's inventory.
pub fn planned_days(
    accounts: &[RotationAccount],
    counts: &HashMap<(Uuid, Date), DayCount>,
    dates: &[(Market, Date)],
) -> (Vec<PlannedDay>, Vec<AccountInventory>) {
    let mut days = Vec::new();
    for a in accounts {
        if !a.state.is_some_and(AccountState::in_rotation) {
            continue;
        }
        for (_, day) in dates.iter().filter(|(m, _)| *m == a.market) {
            let c = counts.get(&(a.slot_id, *day)).copied().unwrap_or_default();
            let target = i64::from(a.daily_target.max(0));
            let missing = (target - c.published - c.scheduled - c.planned).max(0);
            if missing > 0 {
                days.push(PlannedDay {
                    code: a.code.clone(),
                    platform: a.platform,
                    market: a.market.to_string(),
                    date: day.to_string(),
                    persona: a.persona.clone(),
                    target,
                    published: c.published,
                    scheduled: c.scheduled,
                    planned: c.planned,
                    missing,
                    inventory_available: a.inventory,
                });
            }
        }
    }
    let inventory = accounts
        .iter()
        .map(|a| AccountInventory {
            code: a.code.clone(),
            platform: a.platform,
            state: a.state,
            active: a.state.is_some_and(AccountState::in_rotation),
            count: a.inventory,
        })
        .collect();
    (days, inventory)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn account(
        code: &str,
        market: &str,
        state: Option<AccountState>,
        target: i32,
    ) -> RotationAccount {
        RotationAccount {
            slot_id: Uuid::new_v4(),
            code: code.into(),
            platform: Platform::Threads,
            market: Market::parse(market).unwrap(),
            persona: "Mia".into(),
            state,
            daily_target: target,
            inventory: 0,
        }
    }

    #[test]
    fn each_market_gets_its_own_today() {
        // 2026-11-21 17:30 UTC is already the 22nd in Tokyo but still the 21st in New York.
        let now: Timestamp = "2026-11-21T17:30:00Z".parse().unwrap();
        let accounts = [
            account("JP-T001", "JP", Some(AccountState::Active), 1),
            account("US-T001", "US", Some(AccountState::Active), 1),
        ];
        let w = work_accounts(&accounts, &HashMap::new(), None, now);
        assert_eq!(
            w.dates,
            vec![
                MarketDate {
                    market: "JP".into(),
                    date: "2026-11-22".into()
                },
                MarketDate {
                    market: "US".into(),
                    date: "2026-11-21".into()
                },
            ]
        );
    }

    #[test]
    fn only_active_accounts_get_missing_counts() {
        let now: Timestamp = "2026-11-21T02:00:00Z".parse().unwrap();
        let active = account("TW-T001", "TW", Some(AccountState::Active), 3);
        let banned = account("TW-T002", "TW", Some(AccountState::Banned), 2);
        let warming = account("TW-T003", "TW", Some(AccountState::Warming), 2);
        let mut counts = HashMap::new();
        counts.insert(
            (active.slot_id, "2026-11-21".parse().unwrap()),
            DayCount {
                published: 1,
                scheduled: 1,
                planned: 0,
            },
        );
        let w = work_accounts(&[active, banned, warming], &counts, None, now);
        assert_eq!(
            (w.expected, w.covered, w.missing_posts, w.missing_accounts),
            (3, 2, 1, 1)
        );
        assert_eq!(w.missing.len(), 1);
        assert_eq!(w.missing[0].missing, 1);
        assert_eq!(w.missing[0].date, "2026-11-21");
        let out: Vec<_> = w.not_in_rotation.iter().map(|n| n.code.as_str()).collect();
        assert_eq!(out, ["TW-T002", "TW-T003"]);
    }

    #[test]
    fn an_account_over_its_target_covers_only_its_target() {
        let now: Timestamp = "2026-11-21T02:00:00Z".parse().unwrap();
        let a = account("TW-T001", "TW", Some(AccountState::Active), 1);
        let b = account("TW-T002", "TW", Some(AccountState::Active), 2);
        let day: Date = "2026-11-21".parse().unwrap();
        let mut counts = HashMap::new();
        counts.insert(
            (a.slot_id, day),
            DayCount {
                published: 3,
                scheduled: 0,
                planned: 0,
            },
        );
        let w = work_accounts(&[a, b], &counts, Some(day), now);
        assert_eq!(
            (w.expected, w.covered, w.missing_posts, w.missing_accounts),
            (3, 1, 2, 1)
        );
    }

    #[test]
    fn planning_counts_posts_in_review_and_lists_only_days_that_need_posts() {
        let now: Timestamp = "2026-11-21T02:00:00Z".parse().unwrap();
        let mut a = account("TW-T001", "TW", Some(AccountState::Active), 2);
        a.inventory = 3;
        let paused = account("TW-T002", "TW", Some(AccountState::Paused), 2);
        let dates = planning_dates([a.market], None, 3, now);
        assert_eq!(dates.len(), 3);
        assert_eq!(dates[0].1.to_string(), "2026-11-21");
        assert_eq!(dates[2].1.to_string(), "2026-11-23");
        let mut counts = HashMap::new();
        counts.insert(
            (a.slot_id, dates[0].1),
            DayCount {
                published: 1,
                scheduled: 0,
                planned: 1,
            },
        );
        counts.insert(
            (a.slot_id, dates[1].1),
            DayCount {
                published: 0,
                scheduled: 0,
                planned: 1,
            },
        );
        let (days, inventory) = planned_days(&[a, paused], &counts, &dates);
        let got: Vec<_> = days.iter().map(|d| (d.date.as_str(), d.missing)).collect();
        assert_eq!(got, [("2026-11-22", 1), ("2026-11-23", 2)]);
        assert_eq!(days[0].inventory_available, 3);
        assert_eq!(inventory.len(), 2);
        assert!(inventory[0].active);
        assert!(!inventory[1].active);
    }

    #[test]
    fn an_explicit_date_applies_to_every_market() {
        let now: Timestamp = "2026-11-21T02:00:00Z".parse().unwrap();
        let w = work_accounts(
            &[account("JP-T001", "JP", Some(AccountState::Active), 1)],
            &HashMap::new(),
            Some("2026-12-01".parse().unwrap()),
            now,
        );
        assert_eq!(w.dates[0].date, "2026-12-01");
        assert_eq!(w.missing[0].date, "2026-12-01");
    }
}
