//! `GET /metrics`: the series a person reads from the metrics agents reported.
//!
//! The rules live here, pure: which days a window covers ([`Window::resolve`]), which day a
//! capture belongs to (the account's own zone, [`local_day`]), which value of a post counts for
//! a day (per counter, the latest capture of that day that carries it), and how the values are
//! summed per group ([`series`]). The adapter loads the captures and published posts of the
//! accounts in scope with a fixed number of statements and hands them over.

use fleetdesk_kernel::{BoxFuture, market};
use jiff::civil::Date;
use jiff::tz::TimeZone;
use jiff::{Timestamp, ToSpan};
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, HashMap};
use uuid::Uuid;

/// A window covers at most this many days, both ends counted.
pub const MAX_DAYS: i64 = 92;
/// Without `from`, a window covers this many days ending with `to`.
pub const DEFAULT_DAYS: i64 = 7;
/// The zone whose date is "today" when `to` is not given (the service's default zone).
pub const DEFAULT_ZONE: &str = "Asia/Taipei";

fleetdesk_kernel::text_enum! {
    /// What one series of the answer covers.
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, Default)]
    #[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
    #[serde(rename_all = "snake_case")]
    pub enum Group {
        /// One series: every account in scope summed per day.
        #[default]
        Day => "day",
        /// One series per account.
        Account => "account",
        /// One series per post.
        Post => "post",
    }
}

/// The days a request covers, both ends included.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Window {
    pub from: Date,
    pub to: Date,
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum WindowError {
    #[error("from {from} is after to {to}")]
    FromAfterTo { from: Date, to: Date },
    #[error("from {from} to {to} covers {days} days; at most {MAX_DAYS}")]
    TooLong { from: Date, to: Date, days: i64 },
}

impl Window {
    /// `to` defaults to `today` (the date in [`DEFAULT_ZONE`]), `from` to six days before
    /// `to` (the last 7 days); `from` after `to`, or more than [`MAX_DAYS`] days, is refused.
    pub fn resolve(
        from: Option<Date>,
        to: Option<Date>,
        today: Date,
    ) -> Result<Window, WindowError> {
        let to = to.unwrap_or(today);
        let from = match from {
            Some(f) => f,
            None => to
                .checked_sub((DEFAULT_DAYS - 1).days())
                .unwrap_or(Date::MIN),
        };
        if from > to {
            return Err(WindowError::FromAfterTo { from, to });
        }
        let window = Window { from, to };
        let days = window.days();
        if days > MAX_DAYS {
            return Err(WindowError::TooLong { from, to, days });
        }
        Ok(window)
    }

    /// How many days the window covers, both ends counted.
    pub fn days(&self) -> i64 {
        let span = self.from.until(self.to).map(|s| s.get_days()).unwrap_or(0);
        i64::from(span) + 1
    }

    pub fn contains(&self, day: Date) -> bool {
        self.from <= day && day <= self.to
    }

    /// Instants that hold every zone's days of the window (zones lie within UTC-12 and
    /// UTC+14): from the day before `from` to two days after `to`, at UTC midnight. The
    /// adapter loads what lies within; [`local_day`] decides what counts.
    pub fn utc_bounds(&self) -> (Timestamp, Timestamp) {
        let at = |d: Date| {
            d.to_zoned(TimeZone::UTC)
                .map(|z| z.timestamp())
                .unwrap_or(Timestamp::UNIX_EPOCH)
        };
        let start = self.from.checked_sub(1.day()).unwrap_or(self.from);
        let end = self.to.checked_add(2.days()).unwrap_or(self.to);
        (at(start), at(end))
    }
}

/// Today's date where the service counts days by default.
pub fn today(now: Timestamp) -> Date {
    local_day(now, &market::zone(DEFAULT_ZONE))
}

/// The day an instant falls on in a zone.
pub fn local_day(at: Timestamp, zone: &TimeZone) -> Date {
    at.to_zoned(zone.clone()).date()
}

/// The zone of an account's days: its market's zone as stored with the account (an unknown
/// name falls back to [`DEFAULT_ZONE`]).
pub fn account_zone(name: &str) -> TimeZone {
    TimeZone::get(name).unwrap_or_else(|_| market::zone(DEFAULT_ZONE))
}

// ---------------------------------------------------------------------------------------------
// What the adapter loads

/// An account in scope, in the order the answer lists accounts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MetricsAccount {
    pub slot_id: Uuid,
    pub code: String,
    /// The code it had before, when it was renamed.
    pub legacy_code: Option<String>,
    pub platform: String,
    /// IANA name of the account's market zone.
    pub timezone: String,
    pub workspace_id: Uuid,
    pub workspace_name: String,
}

/// A post of one of those accounts that has a capture or was published within the bounds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MetricsPostInfo {
    pub post_id: Uuid,
    pub slot_id: Uuid,
    pub status: String,
    pub platform_post_id: Option<String>,
    pub permalink: Option<String>,
    pub published_at: Option<Timestamp>,
}

/// One stored capture of a post: views, likes, replies, reposts, shares (`None`: not
/// reported in that capture).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PostCapture {
    pub post_id: Uuid,
    pub captured_at: Timestamp,
    pub counters: [Option<i64>; 5],
}

/// One stored capture of an account's followers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AccountCapture {
    pub slot_id: Uuid,
    pub captured_at: Timestamp,
    pub followers: i64,
}

/// Everything [`series`] reads, loaded for the window's [`Window::utc_bounds`].
#[derive(Debug, Clone, Default, PartialEq)]
pub struct MetricsData {
    pub accounts: Vec<MetricsAccount>,
    /// Posts with a capture or a publication within the bounds, in a stable order.
    pub posts: Vec<MetricsPostInfo>,
    pub post_captures: Vec<PostCapture>,
    pub account_captures: Vec<AccountCapture>,
}

/// Whose metrics a call reads.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MetricsQuery {
    /// The organization; `None` only for a platform admin reading every organization.
    pub organization: Option<Uuid>,
    pub workspace: Option<Uuid>,
    /// An account code (upper-case), with the platform when given.
    pub code: Option<String>,
    pub platform: Option<String>,
    pub window: Window,
}

/// A filter that names nothing in scope (answered 404 naming the field), or a code that
/// names several accounts (409 `ambiguous_code`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum MetricsRefusal {
    #[error("no such organization")]
    UnknownOrganization,
    #[error("no such workspace")]
    UnknownWorkspace,
    #[error("no such account")]
    UnknownCode,
    #[error("the code names several accounts; narrow it with platform, workspace or organization")]
    AmbiguousCode,
}

/// The account `code` names among the accounts in scope that answer to it (by current or
/// legacy code, on the asked platform when one was given), as the account lookup decides
/// (`fleetdesk_accounts::models::lookup::pick`) without its "mine" rule, since a member reads
/// the whole organization: those matched by their current code come first, then those matched
/// by a legacy code; none is [`MetricsRefusal::UnknownCode`], more than one in the chosen group
/// [`MetricsRefusal::AmbiguousCode`]. Without `code`, every account stays.
pub fn narrow_to_code(
    accounts: Vec<MetricsAccount>,
    code: Option<&str>,
) -> Result<Vec<MetricsAccount>, MetricsRefusal> {
    let Some(code) = code else {
        return Ok(accounts);
    };
    let (current, legacy): (Vec<_>, Vec<_>) = accounts
        .into_iter()
        .filter(|a| a.code == code || a.legacy_code.as_deref() == Some(code))
        .partition(|a| a.code == code);
    let group = if current.is_empty() { legacy } else { current };
    match group.len() {
        0 => Err(MetricsRefusal::UnknownCode),
        1 => Ok(group),
        _ => Err(MetricsRefusal::AmbiguousCode),
    }
}

/// The statuses of a post that was published: still up, or reported deleted since (its
/// publication still happened on its day). Mirrors `fleetdesk_posts::PostStatus::Published`
/// and `Deleted`; the adapter binds these into its statement.
pub const PUBLISHED_STATUSES: [&str; 2] = ["published", "deleted"];

/// Whether a post counts toward `posts_published` on the day of its `published_at`.
pub fn was_published(post: &MetricsPostInfo) -> bool {
    post.published_at.is_some() && PUBLISHED_STATUSES.contains(&post.status.as_str())
}

/// The metrics reads: one call, a fixed number of statements.
pub trait MetricsRepo: Send + Sync + 'static {
    fn load<'a>(
        &'a self,
        query: &'a MetricsQuery,
    ) -> BoxFuture<'a, anyhow::Result<Result<MetricsData, MetricsRefusal>>>;
}

// ---------------------------------------------------------------------------------------------
// The rules

/// The counters' names, in the order of [`PostCapture::counters`].
pub const COUNTERS: [&str; 5] = ["views", "likes", "replies", "reposts", "shares"];

/// One day of a series. A counter nobody reported that day is `None`; `followers` is `None`
/// when no account of the series reported followers that day (and always in a post series).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DayValues {
    pub date: Date,
    pub counters: [Option<i64>; 5],
    pub posts_published: i64,
    pub followers: Option<i64>,
}

impl DayValues {
    fn new(date: Date) -> DayValues {
        DayValues {
            date,
            counters: [None; 5],
            posts_published: 0,
            followers: None,
        }
    }
}

/// What a series covers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum SeriesKey {
    All,
    Account(Uuid),
    Post { slot_id: Uuid, post_id: Uuid },
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Series {
    pub key: SeriesKey,
    /// Only days with a capture or a publication, oldest first.
    pub days: Vec<DayValues>,
}

fn add(sum: Option<i64>, v: Option<i64>) -> Option<i64> {
    match (sum, v) {
        (Some(a), Some(b)) => Some(a.saturating_add(b)),
        (a, None) => a,
        (None, b) => b,
    }
}

/// Per post and day (in its account's zone): for each counter, the value of the latest
/// capture of that day that carries it. Days outside the window are dropped; captures of a
/// post not among `posts` (or of an account not in scope) are ignored.
pub fn latest_per_day(
    data: &MetricsData,
    window: Window,
) -> BTreeMap<(Uuid, Date), [Option<i64>; 5]> {
    let zones = zones(data);
    let slot_of: HashMap<Uuid, Uuid> = data.posts.iter().map(|p| (p.post_id, p.slot_id)).collect();
    /// Per counter: the capture time and value that counts so far.
    type Latest = [Option<(Timestamp, i64)>; 5];
    let mut latest: BTreeMap<(Uuid, Date), Latest> = BTreeMap::new();
    for c in &data.post_captures {
        let Some(zone) = slot_of.get(&c.post_id).and_then(|s| zones.get(s)) else {
            continue;
        };
        let day = local_day(c.captured_at, zone);
        if !window.contains(day) {
            continue;
        }
        let entry = latest.entry((c.post_id, day)).or_default();
        for (slot, value) in entry.iter_mut().zip(c.counters) {
            if let Some(v) = value
                && slot.is_none_or(|(at, _)| c.captured_at > at)
            {
                *slot = Some((c.captured_at, v));
            }
        }
    }
    latest
        .into_iter()
        .map(|(k, v)| (k, v.map(|s| s.map(|(_, v)| v))))
        .collect()
}

/// Per account and day (in its zone): the followers of the latest capture of that day.
pub fn followers_per_day(data: &MetricsData, window: Window) -> BTreeMap<(Uuid, Date), i64> {
    let zones = zones(data);
    let mut latest: BTreeMap<(Uuid, Date), (Timestamp, i64)> = BTreeMap::new();
    for c in &data.account_captures {
        let Some(zone) = zones.get(&c.slot_id) else {
            continue;
        };
        let day = local_day(c.captured_at, zone);
        if !window.contains(day) {
            continue;
        }
        let entry = latest
            .entry((c.slot_id, day))
            .or_insert((c.captured_at, c.followers));
        if c.captured_at > entry.0 {
            *entry = (c.captured_at, c.followers);
        }
    }
    latest.into_iter().map(|(k, (_, f))| (k, f)).collect()
}

/// The day (in its account's zone) each post of the window was published ([`was_published`]:
/// a post deleted since still counts on the day it went up).
pub fn published_days(data: &MetricsData, window: Window) -> Vec<(Uuid, Uuid, Date)> {
    let zones = zones(data);
    data.posts
        .iter()
        .filter(|p| was_published(p))
        .filter_map(|p| {
            let zone = zones.get(&p.slot_id)?;
            let day = local_day(p.published_at?, zone);
            window.contains(day).then_some((p.post_id, p.slot_id, day))
        })
        .collect()
}

fn zones(data: &MetricsData) -> HashMap<Uuid, TimeZone> {
    data.accounts
        .iter()
        .map(|a| (a.slot_id, account_zone(&a.timezone)))
        .collect()
}

/// The answer's series: per [`Group`], each post's latest values per day summed, posts
/// published that day counted, and each account's latest followers of the day summed (not in
/// post series). `day` gives exactly one series (its days may be empty); `account` one per
/// account with data, in the accounts' order; `post` one per post with data, in the posts'
/// order. Days without any capture or publication are left out.
pub fn series(data: &MetricsData, window: Window, group: Group) -> Vec<Series> {
    let slot_of: HashMap<Uuid, Uuid> = data.posts.iter().map(|p| (p.post_id, p.slot_id)).collect();
    let key = |slot_id: Uuid, post_id: Option<Uuid>| match (group, post_id) {
        (Group::Day, _) => Some(SeriesKey::All),
        (Group::Account, _) => Some(SeriesKey::Account(slot_id)),
        (Group::Post, Some(post_id)) => Some(SeriesKey::Post { slot_id, post_id }),
        (Group::Post, None) => None,
    };
    let mut by_key: HashMap<SeriesKey, BTreeMap<Date, DayValues>> = HashMap::new();
    fn day_of(
        by_key: &mut HashMap<SeriesKey, BTreeMap<Date, DayValues>>,
        k: SeriesKey,
        date: Date,
    ) -> &mut DayValues {
        by_key
            .entry(k)
            .or_default()
            .entry(date)
            .or_insert_with(|| DayValues::new(date))
    }
    for ((post_id, date), counters) in latest_per_day(data, window) {
        let Some(k) = slot_of.get(&post_id).and_then(|s| key(*s, Some(post_id))) else {
            continue;
        };
        let d = day_of(&mut by_key, k, date);
        for (sum, v) in d.counters.iter_mut().zip(counters) {
            *sum = add(*sum, v);
        }
    }
    for (post_id, slot_id, date) in published_days(data, window) {
        if let Some(k) = key(slot_id, Some(post_id)) {
            day_of(&mut by_key, k, date).posts_published += 1;
        }
    }
    for ((slot_id, date), followers) in followers_per_day(data, window) {
        if let Some(k) = key(slot_id, None) {
            let d = day_of(&mut by_key, k, date);
            d.followers = add(d.followers, Some(followers));
        }
    }
    let order: Vec<SeriesKey> = match group {
        Group::Day => vec![SeriesKey::All],
        Group::Account => data
            .accounts
            .iter()
            .map(|a| SeriesKey::Account(a.slot_id))
            .collect(),
        Group::Post => data
            .posts
            .iter()
            .map(|p| SeriesKey::Post {
                slot_id: p.slot_id,
                post_id: p.post_id,
            })
            .collect(),
    };
    order
        .into_iter()
        .filter_map(|k| {
            let days = by_key.remove(&k);
            if days.is_none() && group != Group::Day {
                return None;
            }
            Some(Series {
                key: k,
                days: days.unwrap_or_default().into_values().collect(),
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use jiff::civil::date;

    fn ts(s: &str) -> Timestamp {
        s.parse().unwrap()
    }

    fn window(from: Date, to: Date) -> Window {
        Window { from, to }
    }

    const TW: Uuid = Uuid::from_u128(1);
    const JP: Uuid = Uuid::from_u128(2);
    const P1: Uuid = Uuid::from_u128(11);
    const P2: Uuid = Uuid::from_u128(12);
    const P3: Uuid = Uuid::from_u128(13);

    fn account(slot_id: Uuid, tz: &str) -> MetricsAccount {
        MetricsAccount {
            slot_id,
            code: format!("C{slot_id}"),
            legacy_code: None,
            platform: "threads".into(),
            timezone: tz.into(),
            workspace_id: Uuid::nil(),
            workspace_name: "W".into(),
        }
    }

    fn post(post_id: Uuid, slot_id: Uuid, published_at: Option<&str>) -> MetricsPostInfo {
        MetricsPostInfo {
            post_id,
            slot_id,
            status: if published_at.is_some() {
                "published"
            } else {
                "scheduled"
            }
            .into(),
            platform_post_id: None,
            permalink: None,
            published_at: published_at.map(ts),
        }
    }

    fn capture(post_id: Uuid, at: &str, views: Option<i64>, likes: Option<i64>) -> PostCapture {
        PostCapture {
            post_id,
            captured_at: ts(at),
            counters: [views, likes, None, None, None],
        }
    }

    #[test]
    fn the_window_defaults_to_the_last_seven_days_and_holds_at_most_92() {
        let today = date(2026, 11, 25);
        let w = Window::resolve(None, None, today).unwrap();
        assert_eq!((w.from, w.to, w.days()), (date(2026, 11, 19), today, 7));
        let w = Window::resolve(None, Some(date(2026, 1, 3)), today).unwrap();
        assert_eq!(w.from, date(2025, 12, 28));
        let w = Window::resolve(Some(date(2026, 11, 1)), None, today).unwrap();
        assert_eq!((w.from, w.to), (date(2026, 11, 1), today));
        // 92 days both ends counted, and one past.
        let to = date(2026, 3, 31);
        let at_limit = to.checked_sub(91.days()).unwrap();
        assert_eq!(
            Window::resolve(Some(at_limit), Some(to), today)
                .unwrap()
                .days(),
            92
        );
        let past = to.checked_sub(92.days()).unwrap();
        assert_eq!(
            Window::resolve(Some(past), Some(to), today),
            Err(WindowError::TooLong {
                from: past,
                to,
                days: 93
            })
        );
        let one = Window::resolve(Some(to), Some(to), today).unwrap();
        assert_eq!(one.days(), 1);
        assert!(matches!(
            Window::resolve(Some(date(2026, 4, 1)), Some(to), today),
            Err(WindowError::FromAfterTo { .. })
        ));
    }

    #[test]
    fn the_bounds_hold_every_zone_of_the_window() {
        let w = window(date(2026, 11, 1), date(2026, 11, 2));
        let (start, end) = w.utc_bounds();
        // Kiritimati (UTC+14) starts Nov 1 on Oct 31 10:00 UTC; Baker Island (UTC-12) ends
        // Nov 2 on Nov 3 12:00 UTC.
        assert!(start <= ts("2026-10-31T10:00:00Z"));
        assert!(end >= ts("2026-11-03T12:00:00Z"));
    }

    #[test]
    fn a_capture_counts_on_its_accounts_own_day() {
        let at = ts("2026-11-01T16:30:00Z");
        assert_eq!(
            local_day(at, &account_zone("Asia/Taipei")),
            date(2026, 11, 2)
        );
        assert_eq!(local_day(at, &account_zone("UTC")), date(2026, 11, 1));
        assert_eq!(local_day(at, &account_zone("Not/AZone")), date(2026, 11, 2));
        let data = MetricsData {
            accounts: vec![account(TW, "Asia/Taipei"), account(JP, "UTC")],
            posts: vec![post(P1, TW, None), post(P2, JP, None)],
            post_captures: vec![
                capture(P1, "2026-11-01T16:30:00Z", Some(10), None),
                capture(P2, "2026-11-01T16:30:00Z", Some(20), None),
            ],
            ..MetricsData::default()
        };
        let w = window(date(2026, 11, 1), date(2026, 11, 2));
        let latest = latest_per_day(&data, w);
        assert_eq!(latest[&(P1, date(2026, 11, 2))][0], Some(10));
        assert_eq!(latest[&(P2, date(2026, 11, 1))][0], Some(20));
        // Outside the window: dropped.
        let latest = latest_per_day(&data, window(date(2026, 11, 1), date(2026, 11, 1)));
        assert_eq!(latest.len(), 1);
    }

    #[test]
    fn each_counter_takes_the_latest_capture_of_the_day_that_carries_it() {
        let data = MetricsData {
            accounts: vec![account(TW, "UTC")],
            posts: vec![post(P1, TW, None)],
            post_captures: vec![
                capture(P1, "2026-11-01T20:00:00Z", Some(50), None),
                capture(P1, "2026-11-01T08:00:00Z", Some(10), Some(3)),
                capture(P1, "2026-11-01T12:00:00Z", Some(30), None),
                capture(P1, "2026-11-02T01:00:00Z", Some(70), Some(9)),
            ],
            ..MetricsData::default()
        };
        let latest = latest_per_day(&data, window(date(2026, 11, 1), date(2026, 11, 2)));
        assert_eq!(
            latest[&(P1, date(2026, 11, 1))],
            [Some(50), Some(3), None, None, None]
        );
        assert_eq!(
            latest[&(P1, date(2026, 11, 2))],
            [Some(70), Some(9), None, None, None]
        );
    }

    #[test]
    fn series_sum_posts_per_day_and_the_latest_followers_per_account() {
        let data = MetricsData {
            accounts: vec![account(TW, "UTC"), account(JP, "UTC")],
            posts: vec![
                post(P1, TW, Some("2026-11-01T09:00:00Z")),
                post(P2, TW, Some("2026-11-02T09:00:00Z")),
                post(P3, JP, None),
            ],
            post_captures: vec![
                capture(P1, "2026-11-01T10:00:00Z", Some(5), None),
                capture(P1, "2026-11-01T22:00:00Z", Some(8), Some(1)),
                capture(P1, "2026-11-02T10:00:00Z", Some(12), None),
                capture(P2, "2026-11-02T10:00:00Z", Some(3), None),
                capture(P3, "2026-11-02T10:00:00Z", Some(100), None),
            ],
            account_captures: vec![
                AccountCapture {
                    slot_id: TW,
                    captured_at: ts("2026-11-02T01:00:00Z"),
                    followers: 90,
                },
                AccountCapture {
                    slot_id: TW,
                    captured_at: ts("2026-11-02T23:00:00Z"),
                    followers: 95,
                },
                AccountCapture {
                    slot_id: JP,
                    captured_at: ts("2026-11-02T05:00:00Z"),
                    followers: 10,
                },
            ],
        };
        let w = window(date(2026, 11, 1), date(2026, 11, 3));
        let day = series(&data, w, Group::Day);
        assert_eq!(day.len(), 1);
        assert_eq!(day[0].key, SeriesKey::All);
        let d = &day[0].days;
        assert_eq!(d.len(), 2, "days without data are left out");
        assert_eq!(
            (d[0].date, d[0].counters[0], d[0].counters[1]),
            (date(2026, 11, 1), Some(8), Some(1))
        );
        assert_eq!((d[0].posts_published, d[0].followers), (1, None));
        assert_eq!(d[1].counters, [Some(115), None, None, None, None]);
        assert_eq!((d[1].posts_published, d[1].followers), (1, Some(105)));

        let by_account = series(&data, w, Group::Account);
        assert_eq!(by_account.len(), 2);
        assert_eq!(by_account[0].key, SeriesKey::Account(TW));
        assert_eq!(by_account[0].days[1].counters[0], Some(15));
        assert_eq!(by_account[0].days[1].followers, Some(95));
        assert_eq!(by_account[1].days.len(), 1);
        assert_eq!(by_account[1].days[0].followers, Some(10));

        let by_post = series(&data, w, Group::Post);
        assert_eq!(by_post.len(), 3);
        assert_eq!(
            by_post[0].key,
            SeriesKey::Post {
                slot_id: TW,
                post_id: P1
            }
        );
        assert_eq!(by_post[0].days.len(), 2);
        assert_eq!(by_post[0].days[0].posts_published, 1);
        assert_eq!(by_post[0].days[1].posts_published, 0);
        assert!(
            by_post
                .iter()
                .flat_map(|s| &s.days)
                .all(|d| d.followers.is_none())
        );
    }

    #[test]
    fn a_post_deleted_since_still_counts_on_the_day_it_was_published() {
        let mut deleted = post(P1, TW, Some("2026-11-01T09:00:00Z"));
        deleted.status = "deleted".into();
        let mut failed = post(P2, TW, Some("2026-11-01T10:00:00Z"));
        failed.status = "failed".into();
        // Deleted before it was ever published: no publication to count.
        let mut never = post(P3, TW, None);
        never.status = "deleted".into();
        let data = MetricsData {
            accounts: vec![account(TW, "UTC")],
            posts: vec![deleted, failed, never],
            ..MetricsData::default()
        };
        let w = window(date(2026, 11, 1), date(2026, 11, 1));
        assert_eq!(published_days(&data, w), [(P1, TW, date(2026, 11, 1))]);
        assert_eq!(series(&data, w, Group::Day)[0].days[0].posts_published, 1);
    }

    fn coded(slot_id: Uuid, code: &str, legacy: Option<&str>) -> MetricsAccount {
        MetricsAccount {
            code: code.into(),
            legacy_code: legacy.map(Into::into),
            ..account(slot_id, "UTC")
        }
    }

    fn slots(r: Result<Vec<MetricsAccount>, MetricsRefusal>) -> Result<Vec<Uuid>, MetricsRefusal> {
        r.map(|v| v.into_iter().map(|a| a.slot_id).collect())
    }

    #[test]
    fn a_code_names_one_account_the_current_code_first() {
        let a = coded(TW, "TW-T001", Some("OLD1"));
        let b = coded(JP, "TW-T002", Some("OLD1"));
        let c = coded(Uuid::from_u128(3), "OLD1", None);
        let all = || vec![a.clone(), b.clone()];
        // Without a code every account stays.
        assert_eq!(slots(narrow_to_code(all(), None)), Ok(vec![TW, JP]));
        assert_eq!(slots(narrow_to_code(all(), Some("TW-T002"))), Ok(vec![JP]));
        // A legacy code on two accounts is ambiguous ...
        assert_eq!(
            narrow_to_code(all(), Some("OLD1")),
            Err(MetricsRefusal::AmbiguousCode)
        );
        // ... unless one account has it as its current code.
        assert_eq!(
            slots(narrow_to_code(
                vec![a.clone(), c.clone(), b.clone()],
                Some("OLD1")
            )),
            Ok(vec![c.slot_id])
        );
        // One legacy match is that account; none is unknown.
        assert_eq!(
            slots(narrow_to_code(vec![a.clone()], Some("OLD1"))),
            Ok(vec![TW])
        );
        assert_eq!(
            narrow_to_code(all(), Some("NOPE")),
            Err(MetricsRefusal::UnknownCode)
        );
        // The same current code on two platforms (no `platform` given) is ambiguous too.
        let d = coded(Uuid::from_u128(4), "TW-T001", None);
        assert_eq!(
            narrow_to_code(vec![a, d], Some("TW-T001")),
            Err(MetricsRefusal::AmbiguousCode)
        );
    }

    #[test]
    fn an_empty_scope_still_answers_the_one_day_series() {
        let w = window(date(2026, 11, 1), date(2026, 11, 3));
        let day = series(&MetricsData::default(), w, Group::Day);
        assert_eq!(
            day,
            vec![Series {
                key: SeriesKey::All,
                days: vec![]
            }]
        );
        assert!(series(&MetricsData::default(), w, Group::Account).is_empty());
        assert!(series(&MetricsData::default(), w, Group::Post).is_empty());
    }
}
