//! Post inventory: finished posts of accounts that may not post are held ("stocked") until
//! a person or the agent releases them for a day that still needs posts.
//!
//! The rules are plain functions ([`movable`], [`stock`], [`market_day`], [`check_unstock`],
//! [`unstock_status`], [`confirm_unscheduled`], [`check_delete`]); storage is reached through
//! [`InventoryRepo`], whose adapter runs each use case in one transaction and calls these rules
//! inside it.

use fleetdesk_accounts::AccountState;
/// The page of the inventory list.
pub use fleetdesk_kernel::Page;
use fleetdesk_kernel::time::utc;
use fleetdesk_kernel::{AgentRef, BoxFuture, Platform, Position, TimeInput, TimeInputError};
use fleetdesk_posts::post::PostStatus;
use jiff::Timestamp;
use jiff::civil::Date;
use jiff::tz::TimeZone;
use serde_json::Value;
use uuid::Uuid;

pub mod plan;
pub mod service;
#[cfg(feature = "wire")]
pub mod wire;

/// The post an inventory move names, as the adapter loaded it from the caller's workspace
/// (`None`: no such post there): the caller moves only posts under its own personas (`mine`);
/// another agent's post is as good as absent (404).
pub fn movable<P>(loaded: Option<P>, mine: impl FnOnce(&P) -> bool) -> Result<P, Lookup> {
    loaded.filter(|p| mine(p)).ok_or(Lookup::NotFound)
}

/// What stocking does to a post.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Stocking {
    /// The agent scheduled it in its own tool: it must remove it there and confirm
    /// (`unschedule_stocked` until then). A post scheduled on the service side is simply
    /// cancelled there.
    pub unschedule_pending: bool,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StockRefusal {
    /// Published, failed, cancelled, deleted, or being published by the service.
    Finished(PostStatus),
    /// Deleted from inventory on a person's behalf.
    Discarded,
}

/// May this post go to inventory, and what does it leave behind? `Ok(None)`: it already is.
pub fn stock(
    status: PostStatus,
    discarded: bool,
    agent_publishes: bool,
) -> Result<Option<Stocking>, StockRefusal> {
    if discarded {
        return Err(StockRefusal::Discarded);
    }
    if status == PostStatus::Stocked {
        return Ok(None);
    }
    if !status.stockable() {
        return Err(StockRefusal::Finished(status));
    }
    Ok(Some(Stocking {
        unschedule_pending: agent_publishes && status == PostStatus::Scheduled,
    }))
}

/// The statuses stocking leaves for the agent to unschedule in its own tool, when the agent
/// publishes the account's posts: for SQL that stocks many posts at once.
pub fn unschedule_statuses() -> Vec<&'static str> {
    PostStatus::texts(|s| {
        matches!(
            stock(s, false, true),
            Ok(Some(Stocking {
                unschedule_pending: true
            }))
        )
    })
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum UnstockRefusal {
    NotInStock(PostStatus),
    AccountNotActive(Option<String>),
    NotFuture(Timestamp),
    /// The day already has its posts (409 already_covered); `extra` when an extra post was
    /// asked for and even that is taken.
    AlreadyCovered {
        extra: bool,
        committed: i64,
        target: i64,
    },
}

/// The day a post is released to: what it already holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Day {
    /// Posts published, scheduled, approved or in review for that market date.
    pub committed: i64,
    pub target: i64,
}

impl Day {
    /// The day of an account whose daily target is `daily_target`, already holding `committed`
    /// posts; a target below 0 asks for none.
    pub fn of(committed: i64, daily_target: i32) -> Day {
        Day {
            committed,
            target: i64::from(daily_target.max(0)),
        }
    }
}

/// The market date a post is released to: the date of its planned time in the account's zone,
/// and the instants that date starts and ends at there (`start..end`, the range whose posts
/// [`Day::committed`] counts).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MarketDay {
    pub date: Date,
    pub start: Timestamp,
    pub end: Timestamp,
}

/// The market date of `planned_at` in `zone` (errors only at the ends of the calendar).
pub fn market_day(planned_at: Timestamp, zone: &TimeZone) -> Result<MarketDay, jiff::Error> {
    let date = planned_at.to_zoned(zone.clone()).date();
    Ok(MarketDay {
        date,
        start: date.to_zoned(zone.clone())?.timestamp(),
        end: date.tomorrow()?.to_zoned(zone.clone())?.timestamp(),
    })
}

/// Checks an unstock: that the post is in stock first (the other checks mean nothing for a post
/// that is not), then the rejections in the order the specification lists them (decisions.md).
pub fn check_unstock(
    status: PostStatus,
    account_state: Option<AccountState>,
    planned_at: Timestamp,
    now: Timestamp,
    day: Day,
    extra: bool,
) -> Result<(), UnstockRefusal> {
    if status != PostStatus::Stocked {
        return Err(UnstockRefusal::NotInStock(status));
    }
    if account_state != Some(AccountState::Active) {
        return Err(UnstockRefusal::AccountNotActive(
            account_state.map(|s| s.as_str().to_owned()),
        ));
    }
    if planned_at <= now {
        return Err(UnstockRefusal::NotFuture(planned_at));
    }
    if day.committed >= day.target + i64::from(extra) {
        return Err(UnstockRefusal::AlreadyCovered {
            extra,
            committed: day.committed,
            target: day.target,
        });
    }
    Ok(())
}

/// Where an unstocked post goes: back to review, or, if it was waiting for a rewrite, back to
/// the agent's redo list.
pub fn unstock_status(awaiting_rewrite: bool, from_status: Option<PostStatus>) -> PostStatus {
    match (awaiting_rewrite, from_status) {
        (true, Some(s @ (PostStatus::SentBack | PostStatus::RewriteRequested))) => s,
        (true, _) => PostStatus::RewriteRequested,
        (false, _) => PostStatus::InternalReview,
    }
}

/// What confirming that a stocked post was removed from the agent's tool does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Confirmation {
    /// The post waited for it: the wait is cleared (and recorded).
    Clear,
    /// Nothing waited: a stocked post answers as it stands.
    Unchanged,
}

/// Confirms an unschedule: a post waiting for one is cleared whatever its status; otherwise a
/// stocked post is unchanged and anything else is not in stock.
pub fn confirm_unscheduled(
    status: PostStatus,
    unschedule_pending: bool,
) -> Result<Confirmation, InventoryRefusal> {
    if unschedule_pending {
        Ok(Confirmation::Clear)
    } else if status == PostStatus::Stocked {
        Ok(Confirmation::Unchanged)
    } else {
        Err(InventoryRefusal::NotStocked(status))
    }
}

/// The role named in a relayed delete; only agency people (and admins) may delete stock.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OnBehalfRole {
    Agency,
    Client,
    Admin,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DeleteRefusal {
    /// A client may not delete stock (403).
    Client,
    NotInStock(PostStatus),
}

pub fn check_delete(role: OnBehalfRole, status: PostStatus) -> Result<(), DeleteRefusal> {
    if role == OnBehalfRole::Client {
        return Err(DeleteRefusal::Client);
    }
    if status != PostStatus::Stocked {
        return Err(DeleteRefusal::NotInStock(status));
    }
    Ok(())
}

// ---------------------------------------------------------------------------------------------
// Ports

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Sponsored {
    Only,
    Exclude,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InventoryQuery {
    pub sponsored: Option<Sponsored>,
    /// One account's slot.
    pub slot: Option<Uuid>,
    pub after: Option<Position>,
    pub limit: i64,
}

#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema), schema(as = InventoryPostOut))]
pub struct StockedPost {
    pub id: Uuid,
    /// The account's slot (the list groups by it; not shown).
    #[serde(skip)]
    pub slot_id: Uuid,
    /// The full body.
    pub body: String,
    pub topic: Option<String>,
    pub sponsored: bool,
    /// The status before stocking.
    pub from_status: Option<PostStatus>,
    /// The planned time before stocking.
    #[serde(with = "utc::option")]
    #[cfg_attr(feature = "openapi", schema(value_type = Option<String>))]
    pub planned_was: Option<Timestamp>,
    pub reason: Option<String>,
    pub waiting_rewrite: bool,
    pub unschedule_pending: bool,
    #[serde(with = "utc")]
    #[cfg_attr(feature = "openapi", schema(value_type = String))]
    pub stocked_at: Timestamp,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InventoryAccount {
    pub slot_id: Uuid,
    pub code: String,
    pub platform: Platform,
    pub state: Option<String>,
    pub active: bool,
    /// Stocked posts of the account matching the filter (all pages).
    pub count: i64,
}

impl InventoryAccount {
    /// An account as the list heads it: its slot, code and platform, its live state as stored
    /// (`None`: no live account) and whether that is active ([`InventoryAccount::is_active`]),
    /// and its stocked posts matching the filter.
    pub fn listed(
        slot_id: Uuid,
        code: String,
        platform: Platform,
        state: Option<String>,
        count: i64,
    ) -> InventoryAccount {
        InventoryAccount {
            slot_id,
            code,
            platform,
            active: InventoryAccount::is_active(state.as_deref()),
            state,
            count,
        }
    }

    /// Whether an account whose live state is stored as `state` is active: its state is one
    /// in rotation. Without a live state, or with a text no state has, it is not.
    pub fn is_active(state: Option<&str>) -> bool {
        state
            .and_then(AccountState::parse)
            .is_some_and(AccountState::in_rotation)
    }
}

/// A page of stocked posts with the accounts they are listed under: the accounts are the
/// headers of every page (each with its count over all pages), so they stand beside the page.
#[derive(Debug, Clone, PartialEq)]
pub struct InventoryPage {
    pub accounts: Vec<InventoryAccount>,
    /// This page's posts, oldest stocked first; the next starts after the last one's
    /// (stocked_at, id).
    pub posts: Page<StockedPost>,
}

/// A stocked post the agent still has to remove from its publishing tool.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnscheduleItem {
    pub id: Uuid,
    pub code: String,
    pub legacy_code: Option<String>,
    pub platform: Platform,
    pub scheduled_for: Option<Timestamp>,
    pub scheduler_ref: Option<String>,
    pub external_id: Option<String>,
    pub stocked_at: Timestamp,
    pub reason: Option<String>,
    pub body: String,
}

/// A post that is not the caller's, or not there.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Lookup {
    NotFound,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum InventoryRefusal {
    Lookup(Lookup),
    Stock(StockRefusal),
    Unstock(UnstockRefusal),
    Delete(DeleteRefusal),
    PlannedAt(TimeInputError),
    /// confirm_unscheduled on a post not in stock.
    NotStocked(PostStatus),
}

// A post after an inventory move (a plain comment: the description of MovedPost has none).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema), schema(as = MovedPost))]
pub struct Moved {
    pub id: Uuid,
    pub status: PostStatus,
    #[serde(with = "utc::option")]
    #[cfg_attr(feature = "openapi", schema(value_type = Option<String>))]
    pub planned_at: Option<Timestamp>,
    /// The call changed nothing (already in stock, already confirmed).
    pub unchanged: bool,
    /// Still to be removed from your publishing tool.
    pub unschedule_pending: bool,
}

pub trait InventoryRepo: Send + Sync + 'static {
    fn list<'a>(
        &'a self,
        agent: AgentRef,
        query: &'a InventoryQuery,
    ) -> BoxFuture<'a, anyhow::Result<InventoryPage>>;

    fn stock<'a>(
        &'a self,
        agent: AgentRef,
        post_id: Uuid,
        reason: Option<&'a str>,
    ) -> BoxFuture<'a, anyhow::Result<Result<Moved, InventoryRefusal>>>;

    fn unstock<'a>(
        &'a self,
        agent: AgentRef,
        post_id: Uuid,
        planned_at: TimeInput,
        extra: bool,
        now: Timestamp,
    ) -> BoxFuture<'a, anyhow::Result<Result<Moved, InventoryRefusal>>>;

    fn confirm_unscheduled(
        &self,
        agent: AgentRef,
        post_id: Uuid,
    ) -> BoxFuture<'_, anyhow::Result<Result<Moved, InventoryRefusal>>>;

    /// Deletes a stocked post from inventory on behalf of a person (`person` is their name,
    /// the record entry's actor); `relay` records the agent, origin and time.
    fn delete_stocked<'a>(
        &'a self,
        agent: AgentRef,
        post_id: Uuid,
        role: OnBehalfRole,
        person: &'a str,
        reason: Option<&'a str>,
        relay: &'a Value,
    ) -> BoxFuture<'a, anyhow::Result<Result<Moved, InventoryRefusal>>>;

    /// Stocked posts waiting to be removed from the agent's publishing tool, oldest first.
    fn unschedule_list(
        &self,
        agent: AgentRef,
        limit: i64,
    ) -> BoxFuture<'_, anyhow::Result<Vec<UnscheduleItem>>>;
}

#[cfg(test)]
mod tests {
    use super::*;
    use PostStatus as S;

    fn now() -> Timestamp {
        "2026-11-21T10:00:00Z".parse().unwrap()
    }

    fn later() -> Timestamp {
        "2026-11-22T10:00:00Z".parse().unwrap()
    }

    #[test]
    fn a_listed_account_says_its_state_and_whether_it_is_active() {
        let slot = Uuid::from_u128(1);
        let listed = |state: Option<&str>| {
            InventoryAccount::listed(
                slot,
                "TW-T001".into(),
                Platform::Threads,
                state.map(Into::into),
                3,
            )
        };
        assert_eq!(
            listed(Some("active")),
            InventoryAccount {
                slot_id: slot,
                code: "TW-T001".into(),
                platform: Platform::Threads,
                state: Some("active".into()),
                active: true,
                count: 3,
            }
        );
        let paused = listed(Some("paused"));
        assert_eq!(
            (paused.state.as_deref(), paused.active),
            (Some("paused"), false)
        );
        assert!(!listed(None).active);
    }

    #[test]
    fn an_account_is_listed_active_only_in_a_state_in_rotation() {
        assert!(InventoryAccount::is_active(Some("active")));
        for state in [
            Some("paused"),
            Some("banned"),
            Some("warming"),
            Some("gone"),
            None,
        ] {
            assert!(!InventoryAccount::is_active(state), "{state:?}");
        }
    }

    #[test]
    fn stocking_follows_the_state_table() {
        for s in [
            S::Draft,
            S::InternalReview,
            S::ClientReview,
            S::Approved,
            S::RewriteRequested,
            S::SentBack,
        ] {
            assert_eq!(
                stock(s, false, true),
                Ok(Some(Stocking {
                    unschedule_pending: false
                }))
            );
        }
        assert_eq!(
            stock(S::Scheduled, false, true),
            Ok(Some(Stocking {
                unschedule_pending: true
            }))
        );
        // Scheduled on the service side: cancelled there, nothing for the agent to remove.
        assert_eq!(
            stock(S::Scheduled, false, false),
            Ok(Some(Stocking {
                unschedule_pending: false
            }))
        );
        for s in [
            S::Published,
            S::Failed,
            S::Cancelled,
            S::Deleted,
            S::Publishing,
        ] {
            assert_eq!(stock(s, false, true), Err(StockRefusal::Finished(s)));
        }
        assert_eq!(stock(S::Stocked, false, true), Ok(None));
        assert_eq!(
            stock(S::Cancelled, true, true),
            Err(StockRefusal::Discarded)
        );
    }

    #[test]
    fn unstock_rejections_come_in_order() {
        let room = Day {
            committed: 1,
            target: 2,
        };
        assert_eq!(
            check_unstock(
                S::Approved,
                Some(AccountState::Active),
                later(),
                now(),
                room,
                false
            ),
            Err(UnstockRefusal::NotInStock(S::Approved))
        );
        assert_eq!(
            check_unstock(
                S::Stocked,
                Some(AccountState::Paused),
                later(),
                now(),
                room,
                false
            ),
            Err(UnstockRefusal::AccountNotActive(Some("paused".into())))
        );
        assert_eq!(
            check_unstock(S::Stocked, None, later(), now(), room, false),
            Err(UnstockRefusal::AccountNotActive(None))
        );
        assert_eq!(
            check_unstock(
                S::Stocked,
                Some(AccountState::Active),
                now(),
                now(),
                room,
                false
            ),
            Err(UnstockRefusal::NotFuture(now()))
        );
        assert_eq!(
            check_unstock(
                S::Stocked,
                Some(AccountState::Active),
                later(),
                now(),
                room,
                false
            ),
            Ok(())
        );
        let full = Day {
            committed: 2,
            target: 2,
        };
        assert_eq!(
            check_unstock(
                S::Stocked,
                Some(AccountState::Active),
                later(),
                now(),
                full,
                false
            ),
            Err(UnstockRefusal::AlreadyCovered {
                extra: false,
                committed: 2,
                target: 2
            })
        );
        // An extra post asked for by a person makes room for one more, and no further.
        assert_eq!(
            check_unstock(
                S::Stocked,
                Some(AccountState::Active),
                later(),
                now(),
                full,
                true
            ),
            Ok(())
        );
        let over = Day {
            committed: 3,
            target: 2,
        };
        assert_eq!(
            check_unstock(
                S::Stocked,
                Some(AccountState::Active),
                later(),
                now(),
                over,
                true
            ),
            Err(UnstockRefusal::AlreadyCovered {
                extra: true,
                committed: 3,
                target: 2
            })
        );
    }

    #[test]
    fn stocking_a_slot_leaves_only_the_agents_scheduled_posts_to_unschedule() {
        assert_eq!(unschedule_statuses(), ["scheduled"]);
    }

    #[test]
    fn a_post_waiting_for_a_rewrite_goes_back_to_redo() {
        assert_eq!(unstock_status(false, Some(S::Scheduled)), S::InternalReview);
        assert_eq!(unstock_status(true, Some(S::SentBack)), S::SentBack);
        assert_eq!(
            unstock_status(true, Some(S::RewriteRequested)),
            S::RewriteRequested
        );
        assert_eq!(unstock_status(true, Some(S::Draft)), S::RewriteRequested);
    }

    #[test]
    fn another_agents_post_is_not_found() {
        assert_eq!(movable(Some(("post", true)), |p| p.1), Ok(("post", true)));
        assert_eq!(
            movable(Some(("post", false)), |p| p.1),
            Err(Lookup::NotFound)
        );
        assert_eq!(
            movable(None::<(&str, bool)>, |p| p.1),
            Err(Lookup::NotFound)
        );
    }

    #[test]
    fn a_negative_daily_target_asks_for_no_post() {
        assert_eq!(
            Day::of(0, -3),
            Day {
                committed: 0,
                target: 0
            }
        );
        assert_eq!(
            Day::of(2, 3),
            Day {
                committed: 2,
                target: 3
            }
        );
        // Nothing may be released to such a day, and one extra post only when it is empty.
        let day = Day::of(0, -1);
        assert_eq!(
            check_unstock(
                S::Stocked,
                Some(AccountState::Active),
                later(),
                now(),
                day,
                false
            ),
            Err(UnstockRefusal::AlreadyCovered {
                extra: false,
                committed: 0,
                target: 0
            })
        );
        assert_eq!(
            check_unstock(
                S::Stocked,
                Some(AccountState::Active),
                later(),
                now(),
                day,
                true
            ),
            Ok(())
        );
    }

    #[test]
    fn the_market_day_is_the_planned_dates_in_the_accounts_zone() {
        let taipei = TimeZone::get("Asia/Taipei").unwrap();
        // 2026-11-21T17:30Z is already the 22nd in Taipei (UTC+8).
        let day = market_day("2026-11-21T17:30:00Z".parse().unwrap(), &taipei).unwrap();
        assert_eq!(day.date, jiff::civil::date(2026, 11, 22));
        assert_eq!(day.start, "2026-11-21T16:00:00Z".parse().unwrap());
        assert_eq!(day.end, "2026-11-22T16:00:00Z".parse().unwrap());
        let utc = market_day("2026-11-21T17:30:00Z".parse().unwrap(), &TimeZone::UTC).unwrap();
        assert_eq!(utc.date, jiff::civil::date(2026, 11, 21));
        // A day of a zone's DST change is 23 or 25 hours long.
        let new_york = TimeZone::get("America/New_York").unwrap();
        let fall = market_day("2026-11-01T12:00:00Z".parse().unwrap(), &new_york).unwrap();
        assert_eq!(fall.end.duration_since(fall.start).as_hours(), 25);
    }

    #[test]
    fn confirming_an_unschedule_clears_a_waiting_post_or_answers_a_stocked_one() {
        assert_eq!(
            confirm_unscheduled(S::Stocked, true),
            Ok(Confirmation::Clear)
        );
        // The wait is cleared even after the post left inventory.
        assert_eq!(
            confirm_unscheduled(S::InternalReview, true),
            Ok(Confirmation::Clear)
        );
        assert_eq!(
            confirm_unscheduled(S::Stocked, false),
            Ok(Confirmation::Unchanged)
        );
        assert_eq!(
            confirm_unscheduled(S::Approved, false),
            Err(InventoryRefusal::NotStocked(S::Approved))
        );
    }

    #[test]
    fn only_agency_people_delete_stock() {
        assert_eq!(
            check_delete(OnBehalfRole::Client, S::Stocked),
            Err(DeleteRefusal::Client)
        );
        assert_eq!(check_delete(OnBehalfRole::Agency, S::Stocked), Ok(()));
        assert_eq!(check_delete(OnBehalfRole::Admin, S::Stocked), Ok(()));
        assert_eq!(
            check_delete(OnBehalfRole::Agency, S::Approved),
            Err(DeleteRefusal::NotInStock(S::Approved))
        );
    }
}
