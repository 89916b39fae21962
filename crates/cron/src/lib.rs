//! Agents' cron jobs and their runs, as the agents report them: the service never runs them.
//!
//! - [`job`]: what a reported job must be (limits, a real 5-field cron expression parsed by
//!   `croner`, a real IANA zone from jiff's database).
//! - [`run`]: how a reported run is read (its times in the job's zone, the default run_id, the
//!   log kept to its last [`run::LOG_MAX`] characters, credentials taken out of free text).
//! - [`mod@health`]: which jobs a person should look at (a failed last run, a missed schedule).
//! - [`plan`]: a batch of runs as a plan: read against their jobs, then merged into the
//!   stored runs.
//! - [`ports`]: the repository port the PostgreSQL adapter implements.

pub mod health;
pub mod job;
pub mod plan;
pub mod ports;
pub mod redact;
pub mod run;
pub mod service;
#[cfg(feature = "wire")]
pub mod wire;

pub use health::{JobHealth, LatestRun, health};
pub use job::{Job, JobInvalid, RawJob, Schedule};
pub use run::{RawRun, Run, RunProblem, RunStatus};
