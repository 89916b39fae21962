//! Reports: GET /reports and /reports/{id} (clients only issued reports of their
//! organization), POST /reports (build one now) and POST /reports/{id}/issue. What a report
//! says is `fleetdesk_reports::report`; who sees which is `fleetdesk_reports::ports::Viewer`.
//! The operations and their types are `fleetdesk_reports::wire`.

use crate::ctx::Ctx;
use crate::error::ApiError;
use crate::fields::{Cursor, MoveResult, limit_or};
use crate::input::{Nothing, Req};
use crate::op::{ErasedOp, Reply, bind};
use fleetdesk_kernel::wire::fields::IdPath;
use fleetdesk_reports::period::{MAX_DAYS, Period, PeriodError};
use fleetdesk_reports::ports::{CreateRefusal, NewReport, Viewer, WorkspaceRef};
use fleetdesk_reports::wire::{
    CreateReportBody, IssueReportReply, ReportDetail, ReportOut, ReportPage, ReportQueryIn,
    personal,
};
use fleetdesk_tenancy::MemberCaller;

pub fn register(all: &mut Vec<Box<dyn ErasedOp>>) {
    all.push(bind::<personal::ListReports, _, _, _>(list_reports));
    all.push(bind::<personal::GetReport, _, _, _>(get_report));
    all.push(bind::<personal::CreateReport, _, _, _>(create_report));
    all.push(bind::<personal::IssueReport, _, _, _>(issue_report));
}

/// What the caller sees: clients only issued reports of their organization.
pub fn viewer(m: &MemberCaller) -> Result<Viewer, ApiError> {
    match (m.is_staff(), m.organization_id) {
        (true, org) => Ok(Viewer::Agency(org)),
        (false, Some(org)) => Ok(Viewer::Client(org)),
        (false, None) => Err(ApiError::forbidden("a member of an organization only")),
    }
}

fn not_found() -> ApiError {
    ApiError::not_found("no such report")
}

// ---------------------------------------------------------------------------------------------
// GET /reports, GET /reports/{id}

async fn list_reports(
    ctx: Ctx,
    m: MemberCaller,
    req: Req<Nothing, ReportQueryIn, Nothing>,
) -> Result<Reply<ReportPage>, ApiError> {
    let q = req.query;
    let page = ctx
        .reports
        .list(viewer(&m)?, q.cursor.map(|c| c.0), limit_or(q.limit, 50))
        .await?;
    Ok(Reply::ok(ReportPage {
        reports: page.items.into_iter().map(ReportOut::of).collect(),
        next_cursor: page.next.map(Cursor),
    }))
}

async fn get_report(
    ctx: Ctx,
    m: MemberCaller,
    req: Req<IdPath, Nothing, Nothing>,
) -> Result<Reply<ReportDetail>, ApiError> {
    let report = ctx
        .reports
        .get(viewer(&m)?, req.path.id)
        .await?
        .ok_or_else(not_found)?;
    Ok(Reply::ok(ReportDetail::of(report)))
}

// ---------------------------------------------------------------------------------------------
// POST /reports, POST /reports/{id}/issue

impl From<PeriodError> for ApiError {
    fn from(e: PeriodError) -> ApiError {
        let message = match e {
            PeriodError::Reversed { .. } => format!("to must be on or after from: {e}"),
            PeriodError::TooLong { .. } => format!("{e} (a report covers at most {MAX_DAYS} days)"),
        };
        ApiError::rejected(message).with_field("to")
    }
}

impl From<CreateRefusal> for ApiError {
    fn from(r: CreateRefusal) -> ApiError {
        let e = if r.is_not_found() {
            ApiError::not_found(r.to_string())
        } else {
            ApiError::rejected(r.to_string())
        };
        e.with_field("workspace")
    }
}

async fn create_report(
    ctx: Ctx,
    m: MemberCaller,
    req: Req<Nothing, Nothing, CreateReportBody>,
) -> Result<Reply<ReportDetail>, ApiError> {
    let b = req.body;
    let period = Period::new(b.from.0, b.to.0)?;
    let request = NewReport {
        workspace: WorkspaceRef::parse(b.workspace.as_str()),
        period,
        title: b.title.map(String::from),
        created_by: m.name.clone(),
    };
    let report = ctx.reports.create(viewer(&m)?, &request).await??;
    Ok(Reply::created(ReportDetail::of(report)))
}

async fn issue_report(
    ctx: Ctx,
    m: MemberCaller,
    req: Req<IdPath, Nothing, Nothing>,
) -> Result<Reply<IssueReportReply>, ApiError> {
    let issued = ctx
        .reports
        .issue(viewer(&m)?, req.path.id, &m.name)
        .await?
        .ok_or_else(not_found)?;
    Ok(Reply::ok(IssueReportReply {
        result: MoveResult::of(!issued.unchanged),
        report: ReportOut::of(issued.report.summary),
    }))
}
