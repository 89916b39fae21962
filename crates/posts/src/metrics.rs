//! `report_metrics`: the capture window and which values are kept.

use jiff::{SignedDuration, Timestamp};

/// Captures older than this are refused.
pub const MAX_AGE: SignedDuration = SignedDuration::from_hours(60 * 24);
/// Clocks disagree a little: a capture this far ahead of ours still counts as now.
pub const CLOCK_SKEW: SignedDuration = SignedDuration::from_mins(5);

/// `captured_at` must be neither in the future nor older than 60 days.
pub fn check_captured_at(at: Timestamp, now: Timestamp) -> Result<(), String> {
    if at.duration_since(now) > CLOCK_SKEW {
        return Err(format!("{at} is in the future"));
    }
    if now.duration_since(at) > MAX_AGE {
        return Err(format!("{at} is older than 60 days"));
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

#[cfg(test)]
mod tests {
    use super::*;

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
