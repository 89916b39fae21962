//! Agent API: the agent's cron jobs and their runs, as it reports them. The operations and
//! their types are `fleetdesk_cron::wire`, the rules `fleetdesk_cron`; each request runs whole
//! in the adapter's transaction.

use crate::ctx::Ctx;
use crate::error::ApiError;
use crate::fields::{ItemFault, ReadItems};
use crate::input::{Nothing, Req};
use crate::op::{ErasedOp, Reply, bind};
use fleetdesk_cron::job::{RawJob, Unreadable, check_jobs};
use fleetdesk_cron::run::RawRun;
use fleetdesk_cron::wire::{CronJobsReply, CronRunsReply, agent};
use fleetdesk_tenancy::AgentCaller;
use serde_json::Value;

pub use fleetdesk_cron::wire::{CronJobsBody, CronRunsBody};

pub fn register(all: &mut Vec<Box<dyn ErasedOp>>) {
    all.push(bind::<agent::ReportCronJobs, _, _, _>(report_cron_jobs));
    all.push(bind::<agent::ReportCronRun, _, _, _>(report_cron_run));
}

/// An item of `list` that cannot be read: what it says of itself (its job_id and run_id when
/// they are text), the field at fault (the list itself for an item that is not an object).
fn unreadable(item: &Value, fault: ItemFault, list: &str) -> Unreadable {
    // As every answer to an item: no NUL in what it names.
    let text = |name: &str| {
        item.get(name)
            .and_then(Value::as_str)
            .map(|s| s.replace('\0', "\u{FFFD}"))
    };
    Unreadable {
        job_id: text("job_id").unwrap_or_default(),
        run_id: text("run_id"),
        field: if fault.field.is_empty() {
            list.to_owned()
        } else {
            fault.field
        },
        reason: fault.reason,
    }
}

// ---------------------------------------------------------------------------------------------
// POST /cron/jobs

async fn report_cron_jobs(
    ctx: Ctx,
    agent: AgentCaller,
    req: Req<Nothing, Nothing, CronJobsBody>,
) -> Result<Reply<CronJobsReply>, ApiError> {
    let raw: Vec<Result<RawJob, Unreadable>> = req
        .body
        .jobs
        .read(|item, fault| unreadable(item, fault, "jobs"))
        .into_iter()
        .map(|j| {
            j.map(|j| RawJob {
                job_id: j.job_id.into(),
                name: j.name.into(),
                schedule: j.schedule.into(),
                timezone: j.timezone.into(),
                gateway: j.gateway.map(String::from),
                enabled: j.enabled.unwrap_or(true),
                description: j.description.map(String::from),
            })
        })
        .collect();
    let (jobs, invalid) = check_jobs(&raw);
    let (inserted, updated, unchanged) = ctx.cron.report_jobs(agent.agent_ref(), &jobs).await?;
    Ok(Reply::ok(CronJobsReply {
        inserted,
        updated,
        unchanged,
        invalid,
    }))
}

// ---------------------------------------------------------------------------------------------
// POST /cron/runs

async fn report_cron_run(
    ctx: Ctx,
    agent: AgentCaller,
    req: Req<Nothing, Nothing, CronRunsBody>,
) -> Result<Reply<CronRunsReply>, ApiError> {
    let raw: Vec<Result<RawRun, Unreadable>> = req
        .body
        .runs
        .read(|item, fault| unreadable(item, fault, "runs"))
        .into_iter()
        .map(|r| {
            r.map(|r| RawRun {
                job_id: r.job_id.into(),
                run_id: r.run_id.map(String::from),
                started_at: r.started_at,
                finished_at: r.finished_at,
                status: r.status,
                summary: r.summary.map(String::from),
                log: r.log,
            })
        })
        .collect();
    let outcome = ctx
        .cron
        .report_runs(agent.agent_ref(), &raw, jiff::Timestamp::now())
        .await?;
    Ok(Reply::ok(outcome.into()))
}
