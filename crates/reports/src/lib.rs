//! What a person reads about the fleet: metrics series and reports.
//!
//! Reports: [`period`] (Taipei days and weeks), [`report`] (what a report says, built from
//! reported rows), [`ports`] (who sees which report, and the storage port).

pub mod metrics;
pub mod period;
pub mod ports;
pub mod report;

/// The kind of the job queue's Monday build (`fleetdesk_kernel::jobs`): its key is the Monday
/// of the week it covers.
pub const WEEKLY_REPORTS_JOB: &str = "weekly_reports";
