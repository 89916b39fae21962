//! Reports: GET /reports and /reports/{id} (clients only issued reports of their
//! organization), POST /reports (build one now) and POST /reports/{id}/issue. What a report
//! says is `fleetdesk_reports::report`; who sees which is `fleetdesk_reports::ports::Viewer`.

use super::common::{CursorInput, DateInput, MoveResult};
use super::drafts::IdPath;
use crate::ctx::Ctx;
use crate::error::ApiError;
use crate::fields::{Cursor, Limit, Text, Utc, limit_or};
use crate::input::{Nothing, Req};
use crate::op::{ErasedOp, HttpMethod, OpSpec, Reply, operation};
use fleetdesk_reports::period::{MAX_DAYS, Period, PeriodError};
use fleetdesk_reports::ports::{
    CreateRefusal, NewReport, ReportRecord, ReportSummary, Viewer, WorkspaceRef,
};
use fleetdesk_reports::report::{AccountLine, TopPost, Totals};
use fleetdesk_tenancy::{MemberCaller, PersonalAccess};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;
use uuid::Uuid;
use validator::Validate;

const WHAT_A_REPORT_SAYS: &str = "The list's record plus totals, accounts and top_posts. A \
report of another organization, or (for a client) one not issued yet, is 404 not_found. A report covers a workspace and whole days of Asia/Taipei \
(`from` to `to`, both included) and is built from reported posts and metrics when it is \
created; it does not change afterwards. `totals` and each of `accounts` (every account of the \
workspace by code, whatever its state: a replaced account is listed) count the posts published \
in the period (posts_published; a post deleted since still counts, also in top_posts) and sum the \
latest captured value of each counter (views, likes, replies, reposts, shares) of those posts \
up to the period's end; followers_start is the account's latest follower capture before the \
period (else its first within it), null without any; followers_end its latest capture within \
the period, null without one (a capture before the period does not stand in: no data is not \
zero growth). \
`top_posts` are the ten posts of the period with the most views. The service builds one for \
every workspace each Monday at 06:00 Asia/Taipei for the week before (Monday to Sunday; six \
hours after the week ends, so captures of its last hours count), once however many instances \
run; a week every instance missed is built later, up to four weeks back.";

pub fn register(all: &mut Vec<Box<dyn ErasedOp>>) {
    use HttpMethod::{Get, Post};
    all.push(operation(
        OpSpec::personal(Get, "/reports", PersonalAccess::Member)
            .tool("list_reports")
            .summary("Reports of the organization, newest first")
            .description(
                "Agency people and platform admins see every report of their organization \
                 (a platform admin outside any organization: every organization's), issued \
                 or not; clients only the reports issued to them (issued reports of their \
                 organization). Newest first by creation; pages with limit 1-200 (default \
                 50) and cursor (`next_cursor` of the previous page, null on the last).",
            ),
        list_reports,
    ));
    all.push(operation(
        OpSpec::personal(Get, "/reports/{id}", PersonalAccess::Member)
            .tool("get_report")
            .summary("One report with its totals, accounts and top posts")
            .description(WHAT_A_REPORT_SAYS),
        get_report,
    ));
    all.push(operation(
        OpSpec::personal(Post, "/reports", PersonalAccess::Agency)
            .tool("create_report")
            .idempotent()
            .created()
            .also_answers(&[404])
            .summary("Build a report of a workspace now")
            .description(
                "Agency people and platform admins; clients are refused (403). `workspace` \
                 is a workspace of the member's organization by id or by name (a platform \
                 admin outside any organization: any organization's, by id or by a name only \
                 one organization uses); a workspace not there is 404 naming workspace, a name \
                 several organizations use 422. from and to are \
                 dates YYYY-MM-DD with from on or before to and at most 92 days (422 naming \
                 to otherwise). title 1-200 characters, default `<workspace> report <from> \
                 to <to>`. Answers 201 with the report, internal until issued. Accepts \
                 Idempotency-Key (request_id in MCP).",
            ),
        create_report,
    ));
    all.push(operation(
        OpSpec::personal(Post, "/reports/{id}/issue", PersonalAccess::Agency)
            .tool("issue_report")
            .idempotent()
            .summary("Issue a report to the organization's clients")
            .description(
                "Agency people and platform admins; clients are refused (403). From now on \
                 the organization's clients see the report. Issuing an issued report answers \
                 `result: unchanged` and changes nothing; a report of another organization \
                 is 404.",
            ),
        issue_report,
    ));
}

/// What the caller sees: clients only issued reports of their organization.
pub fn viewer(m: &MemberCaller) -> Result<Viewer, ApiError> {
    match (m.is_staff(), m.organization_id) {
        (true, org) => Ok(Viewer::Agency(org)),
        (false, Some(org)) => Ok(Viewer::Client(org)),
        (false, None) => Err(ApiError::forbidden("a member of an organization only")),
    }
}

// ---------------------------------------------------------------------------------------------
// The records

#[derive(Debug, Serialize, ToSchema)]
pub struct ReportWorkspace {
    pub id: Uuid,
    pub name: String,
}

/// A report as the list shows it.
#[derive(Debug, Serialize, ToSchema)]
pub struct ReportOut {
    pub id: Uuid,
    pub title: String,
    pub workspace: ReportWorkspace,
    /// The first day, YYYY-MM-DD (Asia/Taipei).
    pub from: String,
    /// The last day, included.
    pub to: String,
    /// Whether the clients see it.
    pub issued: bool,
    pub issued_at: Option<Utc>,
    pub created_at: Utc,
}

/// A report with what it says.
#[derive(Debug, Serialize, ToSchema)]
pub struct ReportDetail {
    pub id: Uuid,
    pub title: String,
    pub workspace: ReportWorkspace,
    pub from: String,
    pub to: String,
    pub issued: bool,
    pub issued_at: Option<Utc>,
    pub created_at: Utc,
    pub totals: Totals,
    /// Every account of the workspace, by code.
    pub accounts: Vec<AccountLine>,
    /// At most 10, the most views first.
    pub top_posts: Vec<TopPost>,
}

fn report_out(s: ReportSummary) -> ReportOut {
    ReportOut {
        id: s.id,
        title: s.title,
        workspace: ReportWorkspace {
            id: s.workspace.0,
            name: s.workspace.1,
        },
        from: s.period.from().to_string(),
        to: s.period.to().to_string(),
        issued: s.issued_at.is_some(),
        issued_at: s.issued_at.map(Utc),
        created_at: Utc(s.created_at),
    }
}

fn report_detail(r: ReportRecord) -> ReportDetail {
    let out = report_out(r.summary);
    ReportDetail {
        id: out.id,
        title: out.title,
        workspace: out.workspace,
        from: out.from,
        to: out.to,
        issued: out.issued,
        issued_at: out.issued_at,
        created_at: out.created_at,
        totals: r.body.totals,
        accounts: r.body.accounts,
        top_posts: r.body.top_posts,
    }
}

fn not_found() -> ApiError {
    ApiError::not_found("no such report")
}

// ---------------------------------------------------------------------------------------------
// GET /reports, GET /reports/{id}

#[derive(Debug, Deserialize, Validate, ToSchema)]
pub struct ReportQueryIn {
    /// 1-200, default 50.
    pub limit: Option<Limit<200>>,
    /// `next_cursor` of the previous page.
    pub cursor: Option<CursorInput>,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct ReportPage {
    pub reports: Vec<ReportOut>,
    /// Pass as `cursor` for the next page; null on the last page.
    pub next_cursor: Option<Cursor>,
}

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
        reports: page.items.into_iter().map(report_out).collect(),
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
    Ok(Reply::ok(report_detail(report)))
}

// ---------------------------------------------------------------------------------------------
// POST /reports, POST /reports/{id}/issue

#[derive(Debug, Deserialize, Validate, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct CreateReportBody {
    /// A workspace of your organization: its id, or its name (names go to 200 characters).
    pub workspace: Text<1, 200>,
    /// The first day (Asia/Taipei).
    pub from: DateInput,
    /// The last day, included: on or after from, at most 92 days in all.
    pub to: DateInput,
    /// Default `<workspace> report <from> to <to>`.
    pub title: Option<Text<1, 200>>,
}

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
    Ok(Reply::created(report_detail(report)))
}

#[derive(Debug, Serialize, ToSchema)]
pub struct IssueReportReply {
    pub report: ReportOut,
    /// `changed`, or `unchanged` when the report was issued already.
    pub result: MoveResult,
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
        report: report_out(issued.report.summary),
    }))
}
