//! Wiki sources: the places an agent syncs into the knowledge base (a vault folder, a Notion
//! page, ...), when each is due, and what a sync run may report.
//!
//! - A source belongs to a workspace, optionally to one of its projects, and is optionally
//!   assigned to one agent; unassigned sources are any agent's of the workspace.
//! - [`next_due_at`]: a source never synced is due at once; after a `success` or `partial`
//!   run it is due `every_hours` later; after a `failed` run it is retried sooner, after
//!   [`RETRY_AFTER_FAILED_HOURS`] (or `every_hours` when that is shorter).
//! - [`listing`]: every source of the workspace, or with `due_only` the due ones that are the
//!   caller's own or unassigned, the longest overdue first.
//! - [`SyncReport::check`]: a run's summary and cursor must not carry an access token or a key
//!   (a share link's `?token=`, a bare `sig=...`), since both are shown to every agent.
//! - [`may_report`]: only the assignee (or anyone, for an unassigned source) reports a run.

use fleetdesk_kernel::secrets::{access_token_param, has_key, is_token_param};
use fleetdesk_kernel::{AgentRef, BoxFuture};
use jiff::{SignedDuration, Timestamp};
use serde::{Deserialize, Serialize};
use uuid::Uuid;

/// After a failed run, a source is due again this many hours later (or after its own period
/// when that is shorter): a passing outage should not cost a whole period (a week for some
/// sources), and an hour keeps a source that keeps failing from being retried on every poll.
pub const RETRY_AFTER_FAILED_HOURS: i64 = 1;
/// The longest run summary, in characters.
pub const SUMMARY_MAX: usize = 2000;
/// The longest cursor, in characters.
pub const CURSOR_MAX: usize = 2000;

fleetdesk_kernel::text_enum! {
    /// How a sync run ended.
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
    #[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
    #[serde(rename_all = "lowercase")]
    pub enum SyncStatus {
        /// Everything read.
        Success => "success",
        /// Stopped part way (the cursor says where to go on).
        Partial => "partial",
        /// Nothing usable read.
        Failed => "failed",
    }
}

/// A source as stored.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SourceRow {
    pub id: Uuid,
    pub kind: String,
    pub name: String,
    pub locator: String,
    pub scope_note: Option<String>,
    /// The project's name; None for a source of the whole workspace.
    pub project: Option<String>,
    /// The assigned agent; None when any agent of the workspace may sync it.
    pub agent_id: Option<Uuid>,
    pub agent: Option<String>,
    pub every_hours: i32,
    pub last_run_at: Option<Timestamp>,
    pub last_status: Option<SyncStatus>,
    pub cursor: Option<String>,
}

/// A source with when it is due, as listed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Source {
    pub row: SourceRow,
    /// None: never synced, due at once.
    pub next_due_at: Option<Timestamp>,
    pub due: bool,
}

/// When a source is due next: None when it was never synced (due at once).
pub fn next_due_at(
    every_hours: i32,
    last_run_at: Option<Timestamp>,
    last_status: Option<SyncStatus>,
) -> Option<Timestamp> {
    let last = last_run_at?;
    let period = i64::from(every_hours.max(1));
    let hours = match last_status {
        Some(SyncStatus::Failed) => period.min(RETRY_AFTER_FAILED_HOURS),
        _ => period,
    };
    Some(
        last.checked_add(SignedDuration::from_hours(hours))
            .unwrap_or(Timestamp::MAX),
    )
}

impl Source {
    pub fn at(row: SourceRow, now: Timestamp) -> Source {
        let next_due_at = next_due_at(row.every_hours, row.last_run_at, row.last_status);
        let due = next_due_at.is_none_or(|t| t <= now);
        Source {
            row,
            next_due_at,
            due,
        }
    }
}

/// What GET /wiki/sources lists for `caller`: with `due_only`, the due sources that are the
/// caller's or unassigned, never-synced and longest overdue first; otherwise every source of
/// the workspace (`rows`), in name order.
pub fn listing(rows: Vec<SourceRow>, caller: Uuid, due_only: bool, now: Timestamp) -> Vec<Source> {
    let mut out: Vec<Source> = rows
        .into_iter()
        .map(|row| Source::at(row, now))
        .filter(|s| !due_only || (s.due && s.row.agent_id.is_none_or(|a| a == caller)))
        .collect();
    if due_only {
        out.sort_by(|a, b| {
            (a.next_due_at, &a.row.name, a.row.id).cmp(&(b.next_due_at, &b.row.name, b.row.id))
        });
    } else {
        out.sort_by(|a, b| (&a.row.name, a.row.id).cmp(&(&b.row.name, b.row.id)));
    }
    out
}

/// Counts of what a run did with the items it read; each at least 0.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct SyncCounts {
    pub read: i64,
    pub created: i64,
    pub revised: i64,
    pub unchanged: i64,
    pub skipped: i64,
}

/// A sync run as reported.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SyncReport {
    pub status: SyncStatus,
    pub summary: Option<String>,
    pub counts: SyncCounts,
    /// Where the next run goes on; None keeps the stored cursor.
    pub cursor: Option<String>,
}

/// Why a run is not recorded.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SyncRefusal {
    #[error("no such wiki source in your workspace")]
    NotFound,
    #[error("the wiki source is assigned to another agent")]
    NotYours,
    #[error("{field}: {reason}")]
    Invalid { field: &'static str, reason: String },
    #[error("{field} carries an access token or key ({what}); leave credentials out")]
    Token { field: &'static str, what: String },
}

/// The first credential `text` carries: a fleetdesk key, an access-token parameter or a
/// password in a link (`https://x/y?token=...`, `https://user:pw@x/`), or a token-shaped value
/// of such a parameter in a bare query string (`page=2&sig=3f9a...`). Prose that merely names
/// one (`error code=429`, `auth=expired`) passes: a bare value counts only when it looks like
/// a secret ([`looks_secret`]).
pub fn carried_token(text: &str) -> Option<String> {
    if has_key(text) {
        return Some("a fleetdesk key".to_owned());
    }
    text.split(|c: char| c.is_whitespace() || matches!(c, '"' | '\'' | '<' | '>' | '(' | ')'))
        .find_map(|w| {
            if w.contains("://") {
                return access_token_param(w).map(str::to_owned);
            }
            w.trim_start_matches(['?', '#'])
                .split(['&', ';'])
                .filter_map(|pair| pair.split_once('='))
                .find(|(name, value)| is_token_param(name.trim()) && looks_secret(value))
                .map(|(name, _)| name.trim().to_owned())
        })
        .map(|name| format!("parameter `{name}`"))
}

/// A value shaped like a token or signature: at least 12 characters of the alphabets tokens
/// use (letters, digits, `-_.~+/=%`), with both letters and digits.
pub fn looks_secret(value: &str) -> bool {
    value.chars().count() >= 12
        && value
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_.~+/=%".contains(c))
        && value.chars().any(|c| c.is_ascii_digit())
        && value.chars().any(|c| c.is_ascii_alphabetic())
}

impl SyncReport {
    /// The source's cursor after this run: a report without cursor keeps the stored one (a
    /// failed run does not lose the position), an empty cursor clears it.
    pub fn cursor_after(&self, stored: Option<String>) -> Option<String> {
        match self.cursor.as_deref() {
            None => stored,
            Some("") => None,
            Some(c) => Some(c.to_owned()),
        }
    }

    /// The source as this run, recorded at `at`, leaves it: run then, with the run's status
    /// and the cursor it keeps ([`SyncReport::cursor_after`]).
    pub fn applied(&self, source: SourceRow, at: Timestamp) -> SourceRow {
        SourceRow {
            last_run_at: Some(at),
            last_status: Some(self.status),
            cursor: self.cursor_after(source.cursor.clone()),
            ..source
        }
    }

    /// The report's own rules: counts at least 0, summary and cursor within their lengths and
    /// free of credentials.
    pub fn check(&self) -> Result<(), SyncRefusal> {
        let c = &self.counts;
        for (field, n) in [
            ("counts.read", c.read),
            ("counts.created", c.created),
            ("counts.revised", c.revised),
            ("counts.unchanged", c.unchanged),
            ("counts.skipped", c.skipped),
        ] {
            if n < 0 {
                return Err(SyncRefusal::Invalid {
                    field,
                    reason: "must be at least 0".to_owned(),
                });
            }
        }
        for (field, text, max) in [
            ("summary", &self.summary, SUMMARY_MAX),
            ("cursor", &self.cursor, CURSOR_MAX),
        ] {
            let Some(text) = text else { continue };
            if text.chars().count() > max {
                return Err(SyncRefusal::Invalid {
                    field,
                    reason: format!("at most {max} characters"),
                });
            }
            if let Some(what) = carried_token(text) {
                return Err(SyncRefusal::Token { field, what });
            }
        }
        Ok(())
    }
}

/// Whether `caller` may report a run of a source assigned to `assignee`.
pub fn may_report(assignee: Option<Uuid>, caller: Uuid) -> Result<(), SyncRefusal> {
    match assignee {
        Some(a) if a != caller => Err(SyncRefusal::NotYours),
        _ => Ok(()),
    }
}

/// A recorded run: its id and the source as it is now.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Recorded {
    pub run_id: Uuid,
    pub source: SourceRow,
}

/// The repository port; each method is one use case in one transaction.
pub trait WikiSourcesRepo: Send + Sync {
    /// Every source of the agent's workspace.
    fn workspace_sources<'a>(
        &'a self,
        agent: AgentRef,
    ) -> BoxFuture<'a, anyhow::Result<Vec<SourceRow>>>;

    /// Locks the source (of the agent's workspace, else NotFound), checks [`may_report`],
    /// records the run in wiki_sync_runs and sets the source's last_run_at (now), last_status
    /// and cursor (kept when the report has none). The report is already checked.
    fn record_sync<'a>(
        &'a self,
        agent: AgentRef,
        source: Uuid,
        report: &'a SyncReport,
    ) -> BoxFuture<'a, anyhow::Result<Result<Recorded, SyncRefusal>>>;
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ts(s: &str) -> Timestamp {
        s.parse().unwrap()
    }

    fn row(name: &str, agent: Option<Uuid>, every: i32) -> SourceRow {
        SourceRow {
            id: Uuid::new_v4(),
            kind: "vault".into(),
            name: name.into(),
            locator: "vault/x".into(),
            scope_note: None,
            project: None,
            agent_id: agent,
            agent: None,
            every_hours: every,
            last_run_at: None,
            last_status: None,
            cursor: None,
        }
    }

    #[test]
    fn a_source_never_synced_is_due_at_once() {
        let s = Source::at(row("a", None, 24), ts("2026-11-25T10:00:00Z"));
        assert_eq!(s.next_due_at, None);
        assert!(s.due);
    }

    #[test]
    fn success_and_partial_wait_a_period_failed_retries_after_an_hour() {
        let last = Some(ts("2026-11-25T10:00:00Z"));
        let ok = next_due_at(24, last, Some(SyncStatus::Success));
        assert_eq!(ok, Some(ts("2026-11-26T10:00:00Z")));
        assert_eq!(next_due_at(24, last, Some(SyncStatus::Partial)), ok);
        assert_eq!(
            next_due_at(168, last, Some(SyncStatus::Failed)),
            Some(ts("2026-11-25T11:00:00Z"))
        );
        // A period shorter than the retry delay stays the period; nonsense periods count 1 h.
        assert_eq!(
            next_due_at(1, last, Some(SyncStatus::Failed)),
            Some(ts("2026-11-25T11:00:00Z"))
        );
        assert_eq!(
            next_due_at(0, last, Some(SyncStatus::Success)),
            Some(ts("2026-11-25T11:00:00Z"))
        );
    }

    #[test]
    fn due_at_the_exact_time_not_a_second_before() {
        let mut r = row("a", None, 24);
        r.last_run_at = Some(ts("2026-11-24T10:00:00Z"));
        r.last_status = Some(SyncStatus::Success);
        assert!(Source::at(r.clone(), ts("2026-11-25T10:00:00Z")).due);
        assert!(!Source::at(r, ts("2026-11-25T09:59:59Z")).due);
    }

    #[test]
    fn due_only_keeps_the_callers_and_unassigned_due_sources_oldest_first() {
        let me = Uuid::new_v4();
        let other = Uuid::new_v4();
        let now = ts("2026-11-25T10:00:00Z");
        let mut old = row("b old", Some(me), 24);
        old.last_run_at = Some(ts("2026-11-20T00:00:00Z"));
        old.last_status = Some(SyncStatus::Success);
        let mut fresh = row("c fresh", None, 24);
        fresh.last_run_at = Some(ts("2026-11-25T09:00:00Z"));
        fresh.last_status = Some(SyncStatus::Success);
        let never = row("z never", None, 24);
        let theirs = row("a theirs", Some(other), 24);
        let rows = vec![old, fresh, never, theirs];
        let names = |v: Vec<Source>| v.into_iter().map(|s| s.row.name).collect::<Vec<_>>();
        assert_eq!(
            names(listing(rows.clone(), me, true, now)),
            ["z never", "b old"]
        );
        assert_eq!(
            names(listing(rows, me, false, now)),
            ["a theirs", "b old", "c fresh", "z never"]
        );
    }

    #[test]
    fn only_the_assignee_reports_an_assigned_source() {
        let me = Uuid::new_v4();
        assert_eq!(may_report(None, me), Ok(()));
        assert_eq!(may_report(Some(me), me), Ok(()));
        assert_eq!(
            may_report(Some(Uuid::new_v4()), me),
            Err(SyncRefusal::NotYours)
        );
    }

    fn report(summary: Option<&str>, cursor: Option<&str>) -> SyncReport {
        SyncReport {
            status: SyncStatus::Success,
            summary: summary.map(str::to_owned),
            counts: SyncCounts::default(),
            cursor: cursor.map(str::to_owned),
        }
    }

    #[test]
    fn a_run_without_cursor_keeps_the_stored_one_and_an_empty_one_clears_it() {
        let stored = || Some("notes/k".to_owned());
        assert_eq!(report(None, None).cursor_after(stored()), stored());
        assert_eq!(report(None, Some("")).cursor_after(stored()), None);
        assert_eq!(
            report(None, Some("notes/m"))
                .cursor_after(stored())
                .as_deref(),
            Some("notes/m")
        );
    }

    #[test]
    fn a_recorded_run_leaves_its_time_status_and_kept_cursor_on_the_source() {
        let mut source = row("a", None, 24);
        source.cursor = Some("notes/k".to_owned());
        source.last_status = Some(SyncStatus::Success);
        let at = ts("2026-11-25T10:00:00Z");
        let mut failed = report(None, None);
        failed.status = SyncStatus::Failed;
        let after = failed.applied(source.clone(), at);
        assert_eq!(
            after,
            SourceRow {
                last_run_at: Some(at),
                last_status: Some(SyncStatus::Failed),
                ..source.clone()
            }
        );
        let moved = report(None, Some("notes/m")).applied(source, at);
        assert_eq!(moved.cursor.as_deref(), Some("notes/m"));
    }

    #[test]
    fn summary_and_cursor_carry_no_token() {
        assert_eq!(
            report(Some("Read 12 notes, 2 new."), Some("2026-11-25T10:00:00Z")).check(),
            Ok(())
        );
        assert_eq!(
            report(Some("see https://x.test/a?v=1"), None).check(),
            Ok(())
        );
        for (summary, cursor, field) in [
            (Some("from https://notion.so/p?token=abc"), None, "summary"),
            (None, Some("page=2&sig=3f9a8b7c6d5e4f3a"), "cursor"),
            (None, Some("https://s3.test/o?X-Amz-Signature=ab"), "cursor"),
            (None, Some("access_token=ya29.a0AfH6SMB1x9"), "cursor"),
            (
                None,
                Some("https://pan.baidu.com/s/1abc?pwd=x7k2"),
                "cursor",
            ),
            (
                Some("synced https://ann:pw@files.test/notes"),
                None,
                "summary",
            ),
        ] {
            match report(summary, cursor).check() {
                Err(SyncRefusal::Token { field: f, .. }) => assert_eq!(f, field),
                other => panic!("{summary:?} {cursor:?}: {other:?}"),
            }
        }
        let key = format!("fda_{}_{}", "a".repeat(8), "b".repeat(43));
        assert!(matches!(
            report(Some(&format!("used {key}")), None).check(),
            Err(SyncRefusal::Token {
                field: "summary",
                ..
            })
        ));
        // A parameter named token without a value, or tokens=, is not a credential; neither
        // is prose naming one with a value no token has.
        assert_eq!(report(None, Some("tokens=4&page=2")).check(), Ok(()));
        for prose in [
            "Notion API error code=429",
            "auth=expired, retried",
            "key=voice",
        ] {
            assert_eq!(report(Some(prose), None).check(), Ok(()), "{prose}");
        }
    }

    #[test]
    fn counts_at_least_zero_and_lengths_at_the_limit() {
        let mut r = report(
            Some(&"x".repeat(SUMMARY_MAX)),
            Some(&"y".repeat(CURSOR_MAX)),
        );
        assert_eq!(r.check(), Ok(()));
        r.summary = Some("x".repeat(SUMMARY_MAX + 1));
        assert!(matches!(
            r.check(),
            Err(SyncRefusal::Invalid {
                field: "summary",
                ..
            })
        ));
        r.summary = None;
        r.cursor = Some("y".repeat(CURSOR_MAX + 1));
        assert!(matches!(
            r.check(),
            Err(SyncRefusal::Invalid {
                field: "cursor",
                ..
            })
        ));
        r.cursor = None;
        r.counts.skipped = -1;
        assert!(matches!(
            r.check(),
            Err(SyncRefusal::Invalid {
                field: "counts.skipped",
                ..
            })
        ));
    }
}
