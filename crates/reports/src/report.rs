//! What a report says, built from reported rows: per account the posts published in the
//! period, followers at its start and end, and the latest captured values of its posts; the
//! totals; and the ten posts with the most views.
//!
//! A post counts when it was published within the period (Taipei days), also when it was
//! reported deleted since (as the metrics count it). Every account of the workspace is listed,
//! whatever its state (a replaced one too). Its values are the
//! latest captured value of each counter up to the period's end (a capture leaves a counter
//! unreported when the agent did not send it, so each counter takes its own latest), as GET
//! /metrics reads them: a report built later says the same about the same period. Followers
//! at the start are the latest capture before the period (else the first within it); at the
//! end, the latest within it, and null without a capture within the period (a client must not
//! read zero growth from no data).

use crate::period::Period;
use fleetdesk_kernel::format_utc;
use jiff::Timestamp;
use serde::{Deserialize, Serialize};
use std::collections::HashMap;
use uuid::Uuid;

/// How many posts the top list holds.
pub const TOP_POSTS: usize = 10;

/// Characters of a post's body the top list shows.
pub const EXCERPT_CHARS: usize = 80;

/// An account of the workspace.
#[derive(Debug, Clone, PartialEq)]
pub struct AccountRow {
    pub slot_id: Uuid,
    pub code: String,
    pub platform: String,
}

/// A post published in the period.
#[derive(Debug, Clone, PartialEq)]
pub struct PostRow {
    pub id: Uuid,
    pub slot_id: Uuid,
    pub published_at: Timestamp,
    pub permalink: Option<String>,
    pub body: String,
}

/// One capture of a post's counters (views, likes, replies, reposts, shares); `None` is not
/// reported in that capture.
#[derive(Debug, Clone, PartialEq)]
pub struct PostCapture {
    pub post_id: Uuid,
    pub captured_at: Timestamp,
    pub values: [Option<i64>; 5],
}

/// One capture of an account's followers.
#[derive(Debug, Clone, PartialEq)]
pub struct FollowerCapture {
    pub slot_id: Uuid,
    pub captured_at: Timestamp,
    pub followers: i64,
}

/// What a report of one workspace is built from. Captures later than the period's end are
/// ignored; follower captures need only reach back to the last one before the period.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Inputs {
    pub accounts: Vec<AccountRow>,
    pub posts: Vec<PostRow>,
    pub captures: Vec<PostCapture>,
    pub followers: Vec<FollowerCapture>,
}

impl Inputs {
    /// The inputs of each of `workspaces` from rows loaded for all of them at once: an account
    /// (with its workspace's id) goes to its workspace, a post and a follower capture to their
    /// account's, a post capture to its post's. A row of no listed workspace is left out.
    pub fn per_workspace(
        workspaces: &[Uuid],
        accounts: Vec<(Uuid, AccountRow)>,
        posts: Vec<PostRow>,
        captures: Vec<PostCapture>,
        followers: Vec<FollowerCapture>,
    ) -> HashMap<Uuid, Inputs> {
        let mut inputs: HashMap<Uuid, Inputs> =
            workspaces.iter().map(|w| (*w, Inputs::default())).collect();
        let workspace_of: HashMap<Uuid, Uuid> =
            accounts.iter().map(|(w, a)| (a.slot_id, *w)).collect();
        let post_workspace: HashMap<Uuid, Uuid> = posts
            .iter()
            .filter_map(|p| Some((p.id, *workspace_of.get(&p.slot_id)?)))
            .collect();
        for (w, a) in accounts {
            if let Some(i) = inputs.get_mut(&w) {
                i.accounts.push(a);
            }
        }
        for p in posts {
            if let Some(i) = workspace_of.get(&p.slot_id).and_then(|w| inputs.get_mut(w)) {
                i.posts.push(p);
            }
        }
        for c in captures {
            if let Some(i) = post_workspace
                .get(&c.post_id)
                .and_then(|w| inputs.get_mut(w))
            {
                i.captures.push(c);
            }
        }
        for f in followers {
            if let Some(i) = workspace_of.get(&f.slot_id).and_then(|w| inputs.get_mut(w)) {
                i.followers.push(f);
            }
        }
        inputs
    }
}

/// The counters summed (unreported counts as 0).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[cfg_attr(feature = "openapi", schema(as = ReportTotals))]
pub struct Totals {
    pub posts_published: i64,
    /// Sum over the accounts that have a capture; null when none has.
    pub followers_start: Option<i64>,
    pub followers_end: Option<i64>,
    pub views: i64,
    pub likes: i64,
    pub replies: i64,
    pub reposts: i64,
    pub shares: i64,
}

/// One account's line.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[cfg_attr(feature = "openapi", schema(as = ReportAccount))]
pub struct AccountLine {
    pub code: String,
    pub platform: String,
    pub posts_published: i64,
    /// Null when no capture of followers reaches the period.
    pub followers_start: Option<i64>,
    pub followers_end: Option<i64>,
    pub views: i64,
    pub likes: i64,
    pub replies: i64,
    pub reposts: i64,
    pub shares: i64,
}

/// One of the posts with the most views.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[cfg_attr(feature = "openapi", schema(as = ReportTopPost))]
pub struct TopPost {
    pub id: Uuid,
    pub code: String,
    pub platform: String,
    /// ISO 8601 UTC.
    pub published_at: String,
    pub permalink: Option<String>,
    /// The body's first 80 characters.
    pub excerpt: String,
    pub views: i64,
    pub likes: i64,
    pub replies: i64,
    pub reposts: i64,
    pub shares: i64,
}

/// What a report says (stored as built; it does not change when later metrics arrive).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReportBody {
    pub totals: Totals,
    pub accounts: Vec<AccountLine>,
    pub top_posts: Vec<TopPost>,
}

/// The latest captured value of each counter of each post, up to `end` (excluded).
pub fn latest_values(captures: &[PostCapture], end: Timestamp) -> HashMap<Uuid, [i64; 5]> {
    let mut latest: HashMap<Uuid, [Option<(Timestamp, i64)>; 5]> = HashMap::new();
    for c in captures.iter().filter(|c| c.captured_at < end) {
        let slot = latest.entry(c.post_id).or_default();
        for (kept, value) in slot.iter_mut().zip(c.values) {
            if let Some(v) = value
                && kept.is_none_or(|(at, _)| at < c.captured_at)
            {
                *kept = Some((c.captured_at, v));
            }
        }
    }
    latest
        .into_iter()
        .map(|(id, v)| (id, v.map(|x| x.map_or(0, |(_, n)| n))))
        .collect()
}

/// An account's followers at the period's start and end: the end is `None` without a
/// capture within the period, whatever was captured before it.
pub fn followers(
    captures: &[FollowerCapture],
    slot: Uuid,
    period: &Period,
) -> (Option<i64>, Option<i64>) {
    let (start, end) = (period.start(), period.end());
    let mine = || captures.iter().filter(move |c| c.slot_id == slot);
    let before = mine()
        .filter(|c| c.captured_at <= start)
        .max_by_key(|c| c.captured_at);
    let within = || mine().filter(move |c| c.captured_at >= start && c.captured_at < end);
    let first_within = within().min_by_key(|c| c.captured_at);
    let last_within = within().max_by_key(|c| c.captured_at);
    (
        before.or(first_within).map(|c| c.followers),
        last_within.map(|c| c.followers),
    )
}

fn excerpt(body: &str) -> String {
    let flat = body.split_whitespace().collect::<Vec<_>>().join(" ");
    flat.chars().take(EXCERPT_CHARS).collect()
}

/// Builds the report of `period` from `inputs`: accounts in the order given, the top posts by
/// views (then the earlier published, then id).
pub fn build(period: &Period, inputs: &Inputs) -> ReportBody {
    let (start, end) = (period.start(), period.end());
    let values = latest_values(&inputs.captures, end);
    let posts: Vec<&PostRow> = inputs
        .posts
        .iter()
        .filter(|p| p.published_at >= start && p.published_at < end)
        .collect();
    let value_of = |p: &PostRow| values.get(&p.id).copied().unwrap_or_default();
    let mut totals = Totals::default();
    let mut accounts = Vec::with_capacity(inputs.accounts.len());
    for a in &inputs.accounts {
        let (followers_start, followers_end) = followers(&inputs.followers, a.slot_id, period);
        let mut sums = [0i64; 5];
        let mut published = 0;
        for p in posts.iter().filter(|p| p.slot_id == a.slot_id) {
            published += 1;
            for (s, v) in sums.iter_mut().zip(value_of(p)) {
                *s = s.saturating_add(v);
            }
        }
        totals.posts_published += published;
        totals.followers_start = add(totals.followers_start, followers_start);
        totals.followers_end = add(totals.followers_end, followers_end);
        totals.views = totals.views.saturating_add(sums[0]);
        totals.likes = totals.likes.saturating_add(sums[1]);
        totals.replies = totals.replies.saturating_add(sums[2]);
        totals.reposts = totals.reposts.saturating_add(sums[3]);
        totals.shares = totals.shares.saturating_add(sums[4]);
        accounts.push(AccountLine {
            code: a.code.clone(),
            platform: a.platform.clone(),
            posts_published: published,
            followers_start,
            followers_end,
            views: sums[0],
            likes: sums[1],
            replies: sums[2],
            reposts: sums[3],
            shares: sums[4],
        });
    }
    let account_of: HashMap<Uuid, &AccountRow> =
        inputs.accounts.iter().map(|a| (a.slot_id, a)).collect();
    let mut ranked: Vec<(&PostRow, [i64; 5])> = posts
        .iter()
        .filter(|p| account_of.contains_key(&p.slot_id))
        .map(|p| (*p, value_of(p)))
        .collect();
    ranked.sort_by(|(a, av), (b, bv)| {
        bv[0]
            .cmp(&av[0])
            .then(a.published_at.cmp(&b.published_at))
            .then(a.id.cmp(&b.id))
    });
    let top_posts = ranked
        .into_iter()
        .take(TOP_POSTS)
        .map(|(p, v)| {
            let a = account_of[&p.slot_id];
            TopPost {
                id: p.id,
                code: a.code.clone(),
                platform: a.platform.clone(),
                published_at: format_utc(p.published_at),
                permalink: p.permalink.clone(),
                excerpt: excerpt(&p.body),
                views: v[0],
                likes: v[1],
                replies: v[2],
                reposts: v[3],
                shares: v[4],
            }
        })
        .collect();
    ReportBody {
        totals,
        accounts,
        top_posts,
    }
}

fn add(sum: Option<i64>, one: Option<i64>) -> Option<i64> {
    match (sum, one) {
        (None, x) | (x, None) => x,
        (Some(a), Some(b)) => Some(a.saturating_add(b)),
    }
}

/// A report's title: the one given, else `<workspace> weekly report <from> to <to>` for the
/// Monday build and `<workspace> report <from> to <to>` for one built on request.
pub fn title(given: Option<&str>, workspace: &str, period: &Period, weekly: bool) -> String {
    match given.map(str::trim).filter(|t| !t.is_empty()) {
        Some(t) => t.to_owned(),
        None => format!(
            "{workspace} {} {} to {}",
            if weekly { "weekly report" } else { "report" },
            period.from(),
            period.to()
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use jiff::civil::date;

    fn at(s: &str) -> Timestamp {
        s.parse().unwrap()
    }

    fn week() -> Period {
        // Taipei 2026-11-16 00:00 is 2026-11-15T16:00Z; the end 2026-11-22T16:00Z.
        Period::new(date(2026, 11, 16), date(2026, 11, 22)).unwrap()
    }

    fn id(n: u128) -> Uuid {
        Uuid::from_u128(n)
    }

    fn account(n: u128, code: &str) -> AccountRow {
        AccountRow {
            slot_id: id(n),
            code: code.to_owned(),
            platform: "threads".to_owned(),
        }
    }

    fn post(n: u128, slot: u128, published: &str) -> PostRow {
        PostRow {
            id: id(n),
            slot_id: id(slot),
            published_at: at(published),
            permalink: Some(format!("https://threads.net/p/{n}")),
            body: format!("post  {n}\nbody"),
        }
    }

    fn capture(n: u128, when: &str, values: [Option<i64>; 5]) -> PostCapture {
        PostCapture {
            post_id: id(n),
            captured_at: at(when),
            values,
        }
    }

    fn fc(slot: u128, when: &str, followers: i64) -> FollowerCapture {
        FollowerCapture {
            slot_id: id(slot),
            captured_at: at(when),
            followers,
        }
    }

    #[test]
    fn rows_loaded_for_several_workspaces_go_to_their_accounts_workspace() {
        let (a, b, archived) = (id(100), id(200), id(300));
        let inputs = Inputs::per_workspace(
            &[a, b],
            vec![
                (a, account(1, "TW-T001")),
                (b, account(2, "TW-T002")),
                (archived, account(3, "TW-T003")),
            ],
            vec![
                post(10, 1, "2026-11-17T01:00:00Z"),
                post(20, 2, "2026-11-17T02:00:00Z"),
                post(30, 3, "2026-11-17T03:00:00Z"),
                post(40, 9, "2026-11-17T04:00:00Z"),
            ],
            vec![
                capture(10, "2026-11-18T00:00:00Z", [Some(5); 5]),
                capture(20, "2026-11-18T00:00:00Z", [Some(6); 5]),
                capture(40, "2026-11-18T00:00:00Z", [Some(7); 5]),
            ],
            vec![
                fc(1, "2026-11-18T00:00:00Z", 50),
                fc(3, "2026-11-18T00:00:00Z", 70),
            ],
        );
        assert_eq!(inputs.len(), 2);
        assert_eq!(
            inputs[&a],
            Inputs {
                accounts: vec![account(1, "TW-T001")],
                posts: vec![post(10, 1, "2026-11-17T01:00:00Z")],
                captures: vec![capture(10, "2026-11-18T00:00:00Z", [Some(5); 5])],
                followers: vec![fc(1, "2026-11-18T00:00:00Z", 50)],
            }
        );
        assert_eq!(inputs[&b].accounts, [account(2, "TW-T002")]);
        assert_eq!(inputs[&b].posts, [post(20, 2, "2026-11-17T02:00:00Z")]);
        assert_eq!(inputs[&b].captures.len(), 1);
        assert!(inputs[&b].followers.is_empty());
        // A workspace with nothing loaded still has its (empty) inputs.
        let empty = Inputs::per_workspace(&[a], Vec::new(), Vec::new(), Vec::new(), Vec::new());
        assert_eq!(empty[&a], Inputs::default());
    }

    #[test]
    fn each_counter_takes_its_own_latest_capture_before_the_end() {
        let end = at("2026-11-22T16:00:00Z");
        let captures = vec![
            capture(
                1,
                "2026-11-17T00:00:00Z",
                [Some(10), Some(1), None, None, None],
            ),
            capture(
                1,
                "2026-11-18T00:00:00Z",
                [Some(20), None, None, None, None],
            ),
            // After the period: ignored.
            capture(
                1,
                "2026-11-23T00:00:00Z",
                [Some(99), Some(99), None, None, None],
            ),
        ];
        let v = latest_values(&captures, end);
        assert_eq!(v[&id(1)], [20, 1, 0, 0, 0]);
    }

    #[test]
    fn followers_start_before_the_period_else_its_first_capture_and_end_at_its_last() {
        let p = week();
        let caps = vec![
            fc(1, "2026-11-10T00:00:00Z", 100),
            fc(1, "2026-11-14T00:00:00Z", 110),
            fc(1, "2026-11-20T00:00:00Z", 130),
            fc(1, "2026-11-23T00:00:00Z", 999),
            fc(2, "2026-11-18T00:00:00Z", 50),
            fc(2, "2026-11-21T00:00:00Z", 55),
        ];
        assert_eq!(followers(&caps, id(1), &p), (Some(110), Some(130)));
        assert_eq!(followers(&caps, id(2), &p), (Some(50), Some(55)));
        assert_eq!(followers(&caps, id(3), &p), (None, None));
        // Only a capture before the period: the start, and no end (no data within it).
        let before = vec![fc(4, "2026-11-01T00:00:00Z", 7)];
        assert_eq!(followers(&before, id(4), &p), (Some(7), None));
    }

    #[test]
    fn a_report_sums_per_account_and_ranks_the_top_ten_by_views() {
        let p = week();
        let mut inputs = Inputs {
            accounts: vec![account(100, "TW-T001"), account(200, "TW-T002")],
            ..Default::default()
        };
        // Twelve posts on TW-T001 inside the week, views 1..=12.
        for n in 1..=12u128 {
            inputs.posts.push(post(n, 100, "2026-11-17T02:00:00Z"));
            inputs.captures.push(capture(
                n,
                "2026-11-20T00:00:00Z",
                [Some(n as i64), Some(1), Some(1), Some(0), None],
            ));
        }
        // One on TW-T002 published Sunday 23:59 Taipei (inside), one Monday 00:00 (outside).
        inputs.posts.push(post(50, 200, "2026-11-22T15:59:00Z"));
        inputs.posts.push(post(51, 200, "2026-11-22T16:00:00Z"));
        inputs.captures.push(capture(
            50,
            "2026-11-22T15:59:30Z",
            [Some(100), None, None, None, Some(3)],
        ));
        inputs.followers = vec![
            fc(100, "2026-11-15T00:00:00Z", 1000),
            fc(100, "2026-11-21T00:00:00Z", 1200),
        ];
        let r = build(&p, &inputs);
        assert_eq!(r.accounts[0].posts_published, 12);
        assert_eq!(r.accounts[0].views, 78);
        assert_eq!(r.accounts[0].likes, 12);
        assert_eq!(
            (r.accounts[0].followers_start, r.accounts[0].followers_end),
            (Some(1000), Some(1200))
        );
        assert_eq!(r.accounts[1].posts_published, 1);
        assert_eq!(r.accounts[1].views, 100);
        assert_eq!(r.accounts[1].shares, 3);
        assert_eq!(
            (r.accounts[1].followers_start, r.accounts[1].followers_end),
            (None, None)
        );
        assert_eq!(r.totals.posts_published, 13);
        assert_eq!(r.totals.views, 178);
        assert_eq!(r.totals.followers_start, Some(1000));
        assert_eq!(r.top_posts.len(), TOP_POSTS);
        let views: Vec<i64> = r.top_posts.iter().map(|t| t.views).collect();
        assert_eq!(views, [100, 12, 11, 10, 9, 8, 7, 6, 5, 4]);
        assert_eq!(r.top_posts[0].code, "TW-T002");
        assert_eq!(r.top_posts[1].excerpt, "post 12 body");
        assert_eq!(r.top_posts[0].published_at, "2026-11-22T15:59:00Z");
    }

    #[test]
    fn an_empty_workspace_has_zero_totals_and_no_posts() {
        let r = build(&week(), &Inputs::default());
        assert_eq!(r, ReportBody::default());
        let r = build(
            &week(),
            &Inputs {
                accounts: vec![account(1, "TW-T001")],
                ..Default::default()
            },
        );
        assert_eq!(r.accounts.len(), 1);
        assert_eq!(r.accounts[0].views, 0);
        assert!(r.top_posts.is_empty());
    }

    #[test]
    fn ties_rank_the_earlier_post_first() {
        let mut inputs = Inputs {
            accounts: vec![account(100, "TW-T001")],
            ..Default::default()
        };
        inputs.posts.push(post(2, 100, "2026-11-18T00:00:00Z"));
        inputs.posts.push(post(1, 100, "2026-11-19T00:00:00Z"));
        let r = build(&week(), &inputs);
        let ids: Vec<Uuid> = r.top_posts.iter().map(|t| t.id).collect();
        assert_eq!(ids, [id(2), id(1)]);
    }

    #[test]
    fn a_title_defaults_to_the_workspace_and_the_days() {
        let p = week();
        assert_eq!(
            title(None, "Taiwan", &p, true),
            "Taiwan weekly report 2026-11-16 to 2026-11-22"
        );
        assert_eq!(
            title(Some("  "), "Taiwan", &p, false),
            "Taiwan report 2026-11-16 to 2026-11-22"
        );
        assert_eq!(title(Some(" November "), "Taiwan", &p, false), "November");
    }
}
