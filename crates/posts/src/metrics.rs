//! `report_metrics`: the capture window, which post or account each item names, and which
//! values are kept. Pure: the adapter loads the accounts and posts a batch names with their
//! latest values in bulk, [`plan_metrics`] decides every item, and the adapter writes the plan
//! with one statement per table.

use crate::ports::{CapturedAtProblem, MetricsRefusal, MetricsReport, RawPostMetrics, Refused};
use crate::post::PostStatus;
use crate::report::{ItemError, ItemMissing, ItemRejection, NotYours};
use fleetdesk_kernel::{AccountCode, Market, Platform, TimeInput};
use jiff::tz::TimeZone;
use jiff::{SignedDuration, Timestamp};
use uuid::Uuid;

/// Captures older than this are refused.
pub const MAX_AGE: SignedDuration = SignedDuration::from_hours(60 * 24);
/// Clocks disagree a little: a capture this far ahead of ours still counts as now.
pub const CLOCK_SKEW: SignedDuration = SignedDuration::from_mins(5);

/// `captured_at` must be neither in the future nor older than 60 days.
pub fn check_captured_at(at: Timestamp, now: Timestamp) -> Result<(), CapturedAtProblem> {
    if at.duration_since(now) > CLOCK_SKEW {
        return Err(CapturedAtProblem::Future(at));
    }
    if now.duration_since(at) > MAX_AGE {
        return Err(CapturedAtProblem::TooOld(at));
    }
    Ok(())
}

/// The counters of one post at one capture; `None` is "not reported".
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct PostCounters {
    pub views: Option<i64>,
    pub likes: Option<i64>,
    pub replies: Option<i64>,
    pub reposts: Option<i64>,
    pub shares: Option<i64>,
}

impl PostCounters {
    pub const NAMES: [&'static str; 5] = ["views", "likes", "replies", "reposts", "shares"];

    pub fn values(&self) -> [Option<i64>; 5] {
        [
            self.views,
            self.likes,
            self.replies,
            self.reposts,
            self.shares,
        ]
    }

    pub fn from_values(v: [Option<i64>; 5]) -> PostCounters {
        PostCounters {
            views: v[0],
            likes: v[1],
            replies: v[2],
            reposts: v[3],
            shares: v[4],
        }
    }

    pub fn is_empty(&self) -> bool {
        self.values().iter().all(Option::is_none)
    }
}

/// Drops values that fell from a positive number to 0 (a platform that hides a counter reads
/// as 0): they are not written. Returns what is kept and the names of the dropped values.
pub fn keep_back_zeros(
    new: PostCounters,
    latest: PostCounters,
) -> (PostCounters, Vec<&'static str>) {
    let mut kept = new.values();
    let mut dropped = Vec::new();
    for (i, (n, l)) in new.values().into_iter().zip(latest.values()).enumerate() {
        if n == Some(0) && l.is_some_and(|l| l > 0) {
            kept[i] = None;
            dropped.push(PostCounters::NAMES[i]);
        }
    }
    (PostCounters::from_values(kept), dropped)
}

/// The same rule for one value (an account's followers).
pub fn keep_back_zero(new: i64, latest: Option<i64>) -> Option<i64> {
    (new != 0 || latest.is_none_or(|l| l <= 0)).then_some(new)
}

/// The zone local capture times are read in: the market's when the agent's accounts share one,
/// otherwise Taipei.
pub fn capture_zone(markets: &[impl AsRef<str>]) -> TimeZone {
    let taipei = || fleetdesk_kernel::market::zone("Asia/Taipei");
    match markets {
        [one] => Market::parse(one.as_ref())
            .map(|m| m.zone())
            .unwrap_or_else(|_| taipei()),
        _ => taipei(),
    }
}

/// Reads a batch's `captured_at` (time input, local times in [`capture_zone`] of the markets of
/// the agent's accounts) and checks the capture window.
pub fn read_captured_at(
    input: TimeInput,
    markets: &[impl AsRef<str>],
    now: Timestamp,
) -> Result<Timestamp, MetricsRefusal> {
    let at = input
        .resolve(&capture_zone(markets))
        .map_err(|e| MetricsRefusal::CapturedAt(CapturedAtProblem::Unreadable(e)))?;
    check_captured_at(at, now).map_err(MetricsRefusal::CapturedAt)?;
    Ok(at)
}

/// A post a metrics batch may name (by id in the organization, or by platform id), as loaded,
/// with its latest counters at or before the capture.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MetricsPost {
    pub id: Uuid,
    pub slot_id: Uuid,
    pub platform_post_id: Option<String>,
    pub status: PostStatus,
    /// In the caller's workspace.
    pub in_workspace: bool,
    /// Under one of the caller's personas.
    pub mine: bool,
    /// The latest value of each counter at or before the capture.
    pub latest: PostCounters,
}

/// One of the caller's accounts an item names, with its latest followers at or before the
/// capture.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MetricsSlot {
    pub slot_id: Uuid,
    pub latest_followers: Option<i64>,
}

/// What a metrics batch writes, and why the other items were not written.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct MetricsPlan {
    /// The values kept per post, one entry per post.
    pub posts: Vec<(Uuid, PostCounters)>,
    /// Followers per account, one entry per account.
    pub accounts: Vec<(Uuid, i64)>,
    /// Values that fell from a positive number to 0 and were kept back.
    pub zeros_kept_back: usize,
    /// In list then index order.
    pub refused: Vec<Refused>,
}

fn refuse(list: &'static str, index: usize, e: ItemError) -> Refused {
    let code = e.code();
    let (field, reason) = match e {
        // The item is malformed: the field at fault (none when it is the item as a whole).
        ItemError::Invalid { field, message } => ((field != list).then_some(field), message),
        e => (None, e.message()),
    };
    Refused {
        list,
        index,
        code,
        field,
        reason,
    }
}

/// Decides every item of a metrics batch: which post or account it names (`resolve` finds the
/// caller's account a code names, among those the adapter loaded), what is written, and what is
/// kept back. Items are decided in request order; a post or account named twice is written
/// once, for its first item.
pub fn plan_metrics(
    report: &MetricsReport,
    resolve: impl Fn(&AccountCode, Option<Platform>) -> Result<MetricsSlot, ItemError>,
    loaded: &[MetricsPost],
) -> MetricsPlan {
    let mut plan = MetricsPlan::default();
    let mut accounts_seen = Vec::new();
    for (index, item) in report.posts.iter().enumerate() {
        let target = item
            .as_ref()
            .map_err(Clone::clone)
            .and_then(|item| Ok((post_target(item, &resolve, loaded)?, item.counters)));
        match target {
            Ok((post, counters)) => plan.post(index, post, counters),
            Err(e) => plan.refused.push(refuse("posts", index, e)),
        }
    }
    for (index, item) in report.accounts.iter().enumerate() {
        let target = item
            .as_ref()
            .map_err(Clone::clone)
            .and_then(|item| Ok((resolve(&item.code, item.platform)?, item.followers)));
        match target {
            Ok((slot, followers)) => plan.account(index, slot, followers, &mut accounts_seen),
            Err(e) => plan.refused.push(refuse("accounts", index, e)),
        }
    }
    plan.refused.sort_by_key(|r| (r.list, r.index));
    plan
}

/// The post an item names, when it is the caller's and published.
fn post_target<'a>(
    item: &RawPostMetrics,
    resolve: impl Fn(&AccountCode, Option<Platform>) -> Result<MetricsSlot, ItemError>,
    loaded: &'a [MetricsPost],
) -> Result<&'a MetricsPost, ItemError> {
    let post = match (item.post_id, &item.code, &item.platform_post_id) {
        (Some(id), _, _) => loaded
            .iter()
            .find(|p| p.id == id && p.in_workspace)
            .ok_or(ItemError::NotFound(ItemMissing::Post { id }))?,
        (None, Some(code), Some(pid)) => {
            let slot = resolve(code, item.platform)?;
            loaded
                .iter()
                .find(|p| {
                    p.slot_id == slot.slot_id && p.platform_post_id.as_deref() == Some(pid.as_str())
                })
                .ok_or_else(|| {
                    ItemError::NotFound(ItemMissing::PlatformPost {
                        code: code.to_string(),
                        platform_post_id: pid.to_string(),
                    })
                })?
        }
        _ => {
            return Err(ItemError::Invalid {
                field: "posts".into(),
                message: "give post_id, or code with platform_post_id".into(),
            });
        }
    };
    if !post.mine {
        return Err(ItemError::Forbidden(NotYours::MeasuredPost));
    }
    if post.status != PostStatus::Published {
        return Err(ItemError::Rejected(ItemRejection::NotPublished {
            status: post.status,
        }));
    }
    Ok(post)
}

impl MetricsPlan {
    fn post(&mut self, index: usize, post: &MetricsPost, counters: PostCounters) {
        let (kept, dropped) = keep_back_zeros(counters, post.latest);
        self.zeros_kept_back += dropped.len();
        let refused = if self.posts.iter().any(|(id, _)| *id == post.id) {
            ItemRejection::SamePostEarlier
        } else if kept.is_empty() && dropped.is_empty() {
            ItemRejection::NoValues
        } else if kept.is_empty() {
            ItemRejection::ZerosKeptBack { counters: dropped }
        } else {
            self.posts.push((post.id, kept));
            return;
        };
        self.refused
            .push(refuse("posts", index, ItemError::Rejected(refused)));
    }

    /// `seen`: the accounts of earlier items with a value, written or kept back.
    fn account(
        &mut self,
        index: usize,
        slot: MetricsSlot,
        followers: Option<i64>,
        seen: &mut Vec<Uuid>,
    ) {
        let rejected = |rule| refuse("accounts", index, ItemError::Rejected(rule));
        let Some(followers) = followers else {
            self.refused.push(rejected(ItemRejection::NoValues));
            return;
        };
        if seen.contains(&slot.slot_id) {
            self.refused
                .push(rejected(ItemRejection::SameAccountEarlier));
            return;
        }
        seen.push(slot.slot_id);
        match keep_back_zero(followers, slot.latest_followers) {
            Some(v) => self.accounts.push((slot.slot_id, v)),
            None => {
                self.zeros_kept_back += 1;
                self.refused
                    .push(rejected(ItemRejection::FollowersKeptBack));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ports::RawAccountMetrics;

    fn id(n: u128) -> Uuid {
        Uuid::from_u128(n)
    }

    const MY_SLOT: u128 = 10;
    const MY_OTHER_SLOT: u128 = 11;

    /// TW-T001 and TW-T002 are mine, with 50 and no followers so far; TW-X is another agent's.
    fn resolve(code: &AccountCode, _: Option<Platform>) -> Result<MetricsSlot, ItemError> {
        match code.as_str() {
            "TW-T001" => Ok(MetricsSlot {
                slot_id: id(MY_SLOT),
                latest_followers: Some(50),
            }),
            "TW-T002" => Ok(MetricsSlot {
                slot_id: id(MY_OTHER_SLOT),
                latest_followers: None,
            }),
            "TW-X" => Err(ItemError::Forbidden(NotYours::Account {
                code: "TW-X".into(),
            })),
            other => Err(ItemError::NotFound(ItemMissing::Account {
                code: other.into(),
            })),
        }
    }

    fn code(s: &str) -> AccountCode {
        AccountCode::parse(s).unwrap()
    }

    fn published(n: u128, pid: &str, latest: PostCounters) -> MetricsPost {
        MetricsPost {
            id: id(n),
            slot_id: id(MY_SLOT),
            platform_post_id: Some(pid.into()),
            status: PostStatus::Published,
            in_workspace: true,
            mine: true,
            latest,
        }
    }

    fn views(v: i64) -> PostCounters {
        PostCounters {
            views: Some(v),
            ..Default::default()
        }
    }

    fn by_id(n: u128, counters: PostCounters) -> RawPostMetrics {
        RawPostMetrics {
            post_id: Some(id(n)),
            code: None,
            platform: None,
            platform_post_id: None,
            counters,
        }
    }

    fn by_pid(c: &str, pid: &str, counters: PostCounters) -> RawPostMetrics {
        RawPostMetrics {
            post_id: None,
            code: Some(code(c)),
            platform: None,
            platform_post_id: Some(pid.into()),
            counters,
        }
    }

    fn account(c: &str, followers: Option<i64>) -> RawAccountMetrics {
        RawAccountMetrics {
            code: code(c),
            platform: None,
            followers,
        }
    }

    fn plan(
        posts: Vec<RawPostMetrics>,
        accounts: Vec<RawAccountMetrics>,
        loaded: &[MetricsPost],
    ) -> MetricsPlan {
        let report = MetricsReport {
            captured_at: "2026-11-21T10:00:00Z".parse().unwrap(),
            posts: posts.into_iter().map(Ok).collect(),
            accounts: accounts.into_iter().map(Ok).collect(),
        };
        plan_metrics(&report, resolve, loaded)
    }

    fn refusals(p: &MetricsPlan) -> Vec<(&'static str, usize, &'static str, &str)> {
        p.refused
            .iter()
            .map(|r| (r.list, r.index, r.code, r.reason.as_str()))
            .collect()
    }

    fn time(raw: &str) -> fleetdesk_kernel::TimeInput {
        raw.parse().unwrap()
    }

    #[test]
    fn local_capture_times_read_in_the_one_market_of_the_agents_accounts() {
        let now: Timestamp = "2026-11-21T10:00:00Z".parse().unwrap();
        let at = |markets: &[&str]| read_captured_at(time("2026-11-21 17:00"), markets, now);
        // 17:00 in Tokyo is 08:00Z; in Taipei 09:00Z.
        assert_eq!(at(&["JP"]), Ok("2026-11-21T08:00:00Z".parse().unwrap()));
        assert_eq!(at(&["TW"]), Ok("2026-11-21T09:00:00Z".parse().unwrap()));
        assert_eq!(at(&["JP", "TW"]), at(&["TW"]));
        assert_eq!(at(&[]), at(&["TW"]));
        assert_eq!(
            capture_zone(&["JP"]),
            fleetdesk_kernel::market::zone("Asia/Tokyo")
        );
    }

    #[test]
    fn a_capture_outside_the_window_or_unreadable_refuses_the_batch() {
        let now: Timestamp = "2026-11-21T10:00:00Z".parse().unwrap();
        let tw = ["TW"];
        assert!(matches!(
            read_captured_at(time("2026-11-21T10:06:00Z"), &tw, now),
            Err(MetricsRefusal::CapturedAt(CapturedAtProblem::Future(_)))
        ));
        assert!(matches!(
            read_captured_at(time("2026-09-01T10:00:00Z"), &tw, now),
            Err(MetricsRefusal::CapturedAt(CapturedAtProblem::TooOld(_)))
        ));
        // 02:30 does not exist in New York on the day its clocks go forward.
        assert!(matches!(
            read_captured_at(time("2026-03-08 02:30"), &["US"], now),
            Err(MetricsRefusal::CapturedAt(CapturedAtProblem::Unreadable(_)))
        ));
        assert_eq!(
            read_captured_at(time("2026-11-21T10:04:00Z"), &tw, now),
            Ok("2026-11-21T10:04:00Z".parse().unwrap())
        );
    }

    #[test]
    fn a_post_is_named_by_id_in_the_workspace_or_by_account_and_platform_id() {
        let loaded = [
            published(1, "p1", PostCounters::default()),
            published(2, "p2", PostCounters::default()),
        ];
        let p = plan(
            vec![by_id(1, views(5)), by_pid("TW-T001", "p2", views(7))],
            vec![],
            &loaded,
        );
        assert!(p.refused.is_empty());
        assert_eq!(p.posts, [(id(1), views(5)), (id(2), views(7))]);
    }

    #[test]
    fn a_post_that_is_not_found_is_refused_with_the_reason() {
        let mut elsewhere = published(1, "p1", PostCounters::default());
        elsewhere.in_workspace = false;
        let mut on_my_other_account = published(2, "p2", PostCounters::default());
        on_my_other_account.slot_id = id(MY_OTHER_SLOT);
        let p = plan(
            vec![
                by_id(1, views(5)),
                by_pid("TW-T001", "p2", views(5)),
                by_pid("TW-NONE", "p2", views(5)),
                by_pid("TW-X", "p2", views(5)),
            ],
            vec![],
            &[elsewhere, on_my_other_account],
        );
        assert!(p.posts.is_empty());
        assert_eq!(
            refusals(&p),
            [
                (
                    "posts",
                    0,
                    "not_found",
                    &*format!("no post {} in this workspace", id(1))
                ),
                (
                    "posts",
                    1,
                    "not_found",
                    "no post with platform_post_id p2 on TW-T001: report it as published first"
                ),
                (
                    "posts",
                    2,
                    "not_found",
                    "no account TW-NONE in this workspace"
                ),
                (
                    "posts",
                    3,
                    "forbidden",
                    "account TW-X belongs to another agent's persona"
                ),
            ]
        );
    }

    #[test]
    fn an_item_naming_no_post_is_invalid() {
        let mut code_only = by_pid("TW-T001", "p1", views(1));
        code_only.platform_post_id = None;
        let p = plan(vec![code_only], vec![], &[]);
        assert_eq!(
            refusals(&p),
            [(
                "posts",
                0,
                "invalid",
                "give post_id, or code with platform_post_id"
            )]
        );
    }

    #[test]
    fn only_my_published_posts_take_metrics() {
        let mut theirs = published(1, "p1", PostCounters::default());
        theirs.mine = false;
        let mut scheduled = published(2, "p2", PostCounters::default());
        scheduled.status = PostStatus::Scheduled;
        let p = plan(
            vec![by_id(1, views(5)), by_id(2, views(5))],
            vec![],
            &[theirs, scheduled],
        );
        assert!(p.posts.is_empty());
        assert_eq!(
            refusals(&p),
            [
                (
                    "posts",
                    0,
                    "forbidden",
                    "the post belongs to another agent's account"
                ),
                (
                    "posts",
                    1,
                    "rejected",
                    "the post is scheduled: report it as published (with its platform_post_id) \
                     first"
                ),
            ]
        );
    }

    #[test]
    fn zeros_under_a_positive_value_are_kept_back_and_counted() {
        let latest = PostCounters {
            views: Some(100),
            likes: Some(4),
            ..Default::default()
        };
        let new = PostCounters {
            views: Some(0),
            likes: Some(6),
            replies: Some(0),
            ..Default::default()
        };
        let p = plan(vec![by_id(1, new)], vec![], &[published(1, "p1", latest)]);
        assert!(p.refused.is_empty());
        assert_eq!(p.zeros_kept_back, 1);
        assert_eq!(
            p.posts,
            [(
                id(1),
                PostCounters {
                    likes: Some(6),
                    replies: Some(0),
                    ..Default::default()
                }
            )]
        );
    }

    #[test]
    fn a_post_with_nothing_left_to_write_is_refused() {
        let latest = PostCounters {
            views: Some(100),
            likes: Some(4),
            ..Default::default()
        };
        let zeros = PostCounters {
            views: Some(0),
            likes: Some(0),
            ..Default::default()
        };
        let p = plan(
            vec![by_id(1, zeros), by_id(2, PostCounters::default())],
            vec![],
            &[published(1, "p1", latest), published(2, "p2", latest)],
        );
        assert!(p.posts.is_empty());
        assert_eq!(p.zeros_kept_back, 2);
        assert_eq!(
            refusals(&p),
            [
                (
                    "posts",
                    0,
                    "rejected",
                    "views, likes fell from a positive number to 0 and were not recorded"
                ),
                ("posts", 1, "rejected", "no values to record"),
            ]
        );
    }

    #[test]
    fn a_post_named_twice_is_written_once_and_its_zeros_still_count() {
        let loaded = [published(1, "p1", views(10))];
        let p = plan(
            vec![
                by_id(1, views(20)),
                by_pid("TW-T001", "p1", views(0)),
                by_id(1, views(30)),
            ],
            vec![],
            &loaded,
        );
        assert_eq!(p.posts, [(id(1), views(20))]);
        assert_eq!(p.zeros_kept_back, 1);
        let twice = "the same post appears earlier in this report";
        assert_eq!(
            refusals(&p),
            [
                ("posts", 1, "rejected", twice),
                ("posts", 2, "rejected", twice),
            ]
        );
        // A first item that wrote nothing does not make the next one a repeat.
        let p = plan(
            vec![by_id(1, views(0)), by_id(1, views(30))],
            vec![],
            &loaded,
        );
        assert_eq!(p.posts, [(id(1), views(30))]);
    }

    #[test]
    fn followers_are_written_once_per_account_and_a_zero_under_a_positive_count_is_kept_back() {
        let p = plan(
            vec![],
            vec![
                account("TW-T001", Some(60)),
                account("TW-T002", Some(0)),
                account("TW-T001", Some(70)),
                account("TW-NONE", Some(1)),
                account("TW-T002", None),
            ],
            &[],
        );
        assert_eq!(p.accounts, [(id(MY_SLOT), 60), (id(MY_OTHER_SLOT), 0)]);
        assert_eq!(p.zeros_kept_back, 0);
        assert_eq!(
            refusals(&p),
            [
                (
                    "accounts",
                    2,
                    "rejected",
                    "the same account appears earlier in this report"
                ),
                (
                    "accounts",
                    3,
                    "not_found",
                    "no account TW-NONE in this workspace"
                ),
                ("accounts", 4, "rejected", "no values to record"),
            ]
        );
        // Kept back, and the account still counts as named.
        let p = plan(
            vec![],
            vec![account("TW-T001", Some(0)), account("TW-T001", Some(80))],
            &[],
        );
        assert!(p.accounts.is_empty());
        assert_eq!(p.zeros_kept_back, 1);
        assert_eq!(
            refusals(&p),
            [
                (
                    "accounts",
                    0,
                    "rejected",
                    "followers fell from a positive number to 0 and was not recorded"
                ),
                (
                    "accounts",
                    1,
                    "rejected",
                    "the same account appears earlier in this report"
                ),
            ]
        );
    }

    #[test]
    fn refusals_come_accounts_first_then_posts_each_in_request_order() {
        let p = plan(
            vec![by_id(9, views(1)), by_id(8, views(1))],
            vec![account("TW-NONE", Some(1)), account("TW-T001", None)],
            &[],
        );
        let order: Vec<_> = p.refused.iter().map(|r| (r.list, r.index)).collect();
        assert_eq!(
            order,
            [("accounts", 0), ("accounts", 1), ("posts", 0), ("posts", 1)]
        );
    }

    #[test]
    fn captures_must_be_recent_and_not_ahead() {
        let now: Timestamp = "2026-11-21T10:00:00Z".parse().unwrap();
        assert!(check_captured_at(now, now).is_ok());
        assert!(check_captured_at("2026-11-21T10:04:00Z".parse().unwrap(), now).is_ok());
        assert!(check_captured_at("2026-11-21T10:06:00Z".parse().unwrap(), now).is_err());
        assert!(check_captured_at("2026-09-22T10:00:00Z".parse().unwrap(), now).is_ok());
        assert!(check_captured_at("2026-09-22T09:59:00Z".parse().unwrap(), now).is_err());
    }

    #[test]
    fn a_positive_value_is_never_overwritten_by_zero() {
        let latest = PostCounters {
            views: Some(120),
            likes: Some(0),
            ..Default::default()
        };
        let new = PostCounters {
            views: Some(0),
            likes: Some(0),
            replies: Some(0),
            shares: Some(3),
            ..Default::default()
        };
        let (kept, dropped) = keep_back_zeros(new, latest);
        assert_eq!(dropped, ["views"]);
        assert_eq!(kept.views, None);
        assert_eq!(kept.likes, Some(0));
        assert_eq!(kept.replies, Some(0));
        assert_eq!(kept.shares, Some(3));
        assert!(!kept.is_empty());
        let (kept, _) = keep_back_zeros(
            PostCounters {
                views: Some(0),
                ..Default::default()
            },
            latest,
        );
        assert!(kept.is_empty());
        assert_eq!(keep_back_zero(0, Some(10)), None);
        assert_eq!(keep_back_zero(0, None), Some(0));
        assert_eq!(keep_back_zero(12, Some(10)), Some(12));
    }
}
