//! What a person reads about the fleet: metrics series and reports.
//!
//! Reports: [`period`] (Taipei days and weeks), [`report`] (what a report says, built from
//! reported rows), [`ports`] (who sees which report, and the storage port).

pub mod metrics;
pub mod period;
pub mod ports;
pub mod report;
pub mod service;
#[cfg(feature = "wire")]
pub mod wire;

/// The kind of the job queue's weekly build (`fleetdesk_kernel::jobs`): its key is the Monday
/// of the week it covers.
pub const WEEKLY_REPORTS_JOB: &str = "weekly_reports";

/// How long after its week ends (Monday 00:00, Asia/Taipei) the weekly build is due: captures
/// of the week's last hours arrive late (an agent's Sunday-night round reports after
/// midnight), and a report does not change once built.
pub const WEEKLY_GRACE: jiff::SignedDuration = jiff::SignedDuration::from_hours(6);

/// How many weeks back the weekly build is enqueued: a week every instance missed (all were
/// down through its due time) is still built, later; enqueuing a built week again is a no-op.
pub const WEEKLY_WEEKS_BACK: i32 = 4;
