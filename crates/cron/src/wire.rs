//! The cron part of the interface (feature `wire`): each operation's handle with its
//! description, and the request and response types the server parses and a client sends.
//! The agent's operations are in [`agent`].

use crate::job::JobInvalid;
use crate::ports::{RunRefusal, RunsOutcome};
use crate::run::RunStatus;
use fleetdesk_kernel::wire::fields::{Items, Text};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;
use validator::Validate;

fleetdesk_kernel::component_items!(CronJobIn, CronRunIn);

/// 100 runs, each with a log that may be long before it is cut to 20000 characters.
const RUNS_MAX_BODY: usize = 8 * 1024 * 1024;

// ---------------------------------------------------------------------------------------------
// POST /cron/jobs

#[derive(Debug, Serialize, Deserialize, Validate, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct CronJobsBody {
    /// 1-200 jobs; each is read and checked on its own.
    pub jobs: Items<CronJobIn, 1, 200>,
}

#[derive(Debug, Serialize, Deserialize, Validate, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct CronJobIn {
    /// Your own id of the job; 1-120 characters.
    pub job_id: Text<1, 120>,
    pub name: Text<1, 200>,
    /// A 5-field cron expression, e.g. `30 2 * * *`.
    pub schedule: Text<1, 120>,
    /// An IANA time zone name, e.g. `Asia/Taipei`.
    pub timezone: Text<1, 64>,
    /// The tool or gateway that runs the job.
    pub gateway: Option<Text<0, 120>>,
    /// Default true.
    pub enabled: Option<bool>,
    pub description: Option<Text<0, 2000>>,
}

#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct CronJobsReply {
    pub inserted: i64,
    pub updated: i64,
    pub unchanged: i64,
    /// Items not stored, each with its index, field and reason.
    pub invalid: Vec<JobInvalid>,
}

// ---------------------------------------------------------------------------------------------
// POST /cron/runs

#[derive(Debug, Serialize, Deserialize, Validate, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct CronRunsBody {
    /// 1-100 runs; each is read and checked on its own.
    pub runs: Items<CronRunIn, 1, 100>,
}

#[derive(Debug, Serialize, Deserialize, Validate, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct CronRunIn {
    /// A job_id you reported with report_cron_jobs.
    pub job_id: Text<1, 120>,
    /// Default `<job_id>@<started_at in UTC>`.
    pub run_id: Option<Text<1, 200>>,
    /// ISO 8601 with a zone, or a time without zone read in the job's timezone; a time that
    /// cannot be read puts the item in `refused`.
    pub started_at: Option<String>,
    /// As started_at; null or an empty string means none.
    pub finished_at: Option<String>,
    pub status: RunStatus,
    /// Up to 2000 characters; credentials are taken out.
    pub summary: Option<Text<0, 2000>>,
    /// Trimmed and stored up to its last 20000 characters; credentials are taken out.
    pub log: Option<String>,
}

#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct CronRunsReply {
    pub inserted: i64,
    pub updated: i64,
    pub skipped: i64,
    /// Items breaking a rule other than a time's format, with index, field and reason.
    pub invalid: Vec<RunRefusal>,
    /// job_ids you never reported (their runs are not stored).
    pub unknown_jobs: Vec<String>,
    /// Items whose started_at or finished_at cannot be read.
    pub refused: Vec<RunRefusal>,
}

impl From<RunsOutcome> for CronRunsReply {
    fn from(o: RunsOutcome) -> CronRunsReply {
        CronRunsReply {
            inserted: o.inserted,
            updated: o.updated,
            skipped: o.skipped,
            invalid: o.invalid,
            unknown_jobs: o.unknown_jobs,
            refused: o.refused,
        }
    }
}

/// The agent's cron operations (`/api/agent/v1`).
pub mod agent {
    use super::*;
    use fleetdesk_kernel::access::Scope;
    use fleetdesk_kernel::op::{HttpMethod::Post, Nothing, OpSpec};

    fleetdesk_kernel::operations! {
        /// Report your cron jobs.
        pub ReportCronJobs(Nothing, Nothing, CronJobsBody) -> CronJobsReply =
            OpSpec::agent(Post, "/cron/jobs", Scope::CronWrite)
                .tool("report_cron_jobs")
                .summary("Report your cron jobs: upserted by job_id, never deleting unlisted ones")
                .description(
                    "1-200 jobs. Each job is upserted by its job_id among your own jobs (another \
                     agent's job_id is another job); jobs you do not list are kept (disable one \
                     with enabled false). job_id 1-120 characters, name 1-200, schedule 1-120, \
                     timezone 1-64, gateway up to 120, description up to 2000 (white space around \
                     them removed; job_id and name not only spaces). schedule must be a standard \
                     5-field cron expression (minute hour day-of-month month day-of-week; names \
                     like MON and JAN, L, W, # and the nicknames @hourly, @daily, @weekly, \
                     @monthly, @yearly allowed; no seconds field), timezone an IANA zone name \
                     (Asia/Taipei, UTC). A job breaking a rule (a field missing, of the wrong type \
                     or past its length included) is not stored and comes back in `invalid` with \
                     its index, field and reason; the others are stored. Only a `jobs` that is not \
                     an array of 1-200 refuses the request (400). A job_id \
                     listed twice keeps its last listing (the earlier one is in invalid). Counts: \
                     inserted (new), updated (a field changed), unchanged (resent as stored). Safe \
                     to resend.",
                );

        /// Report runs of your cron jobs.
        pub ReportCronRun(Nothing, Nothing, CronRunsBody) -> CronRunsReply =
            OpSpec::agent(Post, "/cron/runs", Scope::CronWrite)
                .tool("report_cron_run")
                .max_body(RUNS_MAX_BODY)
                .summary("Report runs of your cron jobs")
                .description(
                    "1-100 runs. job_id must be one of your jobs reported with report_cron_jobs \
                     (else it is listed in unknown_jobs and its runs are not stored). run_id 1-200 \
                     characters; when absent it is `<job_id>@<started_at in UTC>` (e.g. \
                     `backup@2026-11-25T02:30:00Z`), so started_at is then required. started_at \
                     and finished_at: ISO 8601 with a zone, or without zone (`2026-11-25 10:30`, \
                     `2026-11-25T10:30:00`) read in the job's timezone; null or an empty string \
                     means none; a time that cannot be read (or a local time the zone skips or \
                     repeats) puts the item in `refused` and the other items are still stored. \
                     finished_at before started_at is invalid. status success, failed, skipped, \
                     running or unknown. A run that cannot be read (job_id or status missing, \
                     another status, a field of the wrong type or past its length) is in \
                     `invalid` with its index, field and reason, and the others are stored; only \
                     a `runs` that is not an array of 1-100 refuses the request (400). The same run_id never makes a second row: a long job \
                     sends running first and its result later; fields a later report leaves out \
                     keep their stored value, and running after a result is skipped. summary up \
                     to 2000 characters; log trimmed and stored up to its last 20000 characters. \
                     Credentials are taken out of summary and log before they are stored \
                     (fleetdesk keys, Bearer and Basic tokens, Cookie and Set-Cookie values, \
                     token=, access_token=, api_key=, password=, code= and similar). Counts: \
                     inserted, updated (a stored run changed), skipped (resent as stored, a \
                     running after the result, or an earlier report of a run_id repeated in the \
                     same request). Safe to resend.",
                );
    }
}
