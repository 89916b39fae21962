//! The reports part of the interface (feature `wire`): each operation's handle with its
//! description, and the request and response types the server parses and a client sends.
//! The person's operations (reports and metrics) are in [`personal`].

use crate::metrics::{DayValues, Group, MetricsAccount, MetricsPostInfo};
use crate::ports::{ReportRecord, ReportSummary};
use crate::report::{AccountLine, TopPost, Totals};
use fleetdesk_kernel::Platform;
use fleetdesk_kernel::wire::fields::{Cursor, Limit, MoveResult, Text, Utc};
use fleetdesk_kernel::wire::strings::{CodeInput, CursorInput, DateInput};
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

// ---------------------------------------------------------------------------------------------
// The records

#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct ReportWorkspace {
    pub id: Uuid,
    pub name: String,
}

/// A report as the list shows it.
#[derive(Debug, Serialize, Deserialize, ToSchema)]
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
#[derive(Debug, Serialize, Deserialize, ToSchema)]
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

impl ReportOut {
    /// A report as the list shows it.
    pub fn of(s: ReportSummary) -> ReportOut {
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
}

impl ReportDetail {
    /// A report with what it says.
    pub fn of(r: ReportRecord) -> ReportDetail {
        let out = ReportOut::of(r.summary);
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
}

// ---------------------------------------------------------------------------------------------
// GET /reports, GET /reports/{id}

#[derive(Debug, Clone, Default, Serialize, Deserialize, Validate, ToSchema)]
pub struct ReportQueryIn {
    /// 1-200, default 50.
    pub limit: Option<Limit<200>>,
    /// `next_cursor` of the previous page.
    pub cursor: Option<CursorInput>,
}

#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct ReportPage {
    pub reports: Vec<ReportOut>,
    /// Pass as `cursor` for the next page; null on the last page.
    pub next_cursor: Option<Cursor>,
}

impl fleetdesk_kernel::wire::Paged for personal::ListReports {
    type Item = ReportOut;

    fn page(out: ReportPage) -> (Vec<ReportOut>, Option<Cursor>) {
        (out.reports, out.next_cursor)
    }

    fn after(query: &mut ReportQueryIn, cursor: Cursor) {
        query.cursor = Some(cursor.input());
    }
}

// ---------------------------------------------------------------------------------------------
// POST /reports, POST /reports/{id}/issue

#[derive(Debug, Serialize, Deserialize, Validate, ToSchema)]
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

#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct IssueReportReply {
    pub report: ReportOut,
    /// `changed`, or `unchanged` when the report was issued already.
    pub result: MoveResult,
}

// ---------------------------------------------------------------------------------------------
// GET /metrics

#[derive(Debug, Serialize, Deserialize, Validate, ToSchema)]
pub struct MetricsQueryIn {
    /// First day, `YYYY-MM-DD`; default six days before `to`.
    pub from: Option<DateInput>,
    /// Last day, `YYYY-MM-DD`; default today (Asia/Taipei). At most 92 days from `from`, both
    /// included.
    pub to: Option<DateInput>,
    /// Only this workspace's accounts.
    pub workspace: Option<Uuid>,
    /// Only this account (current or legacy code).
    pub code: Option<CodeInput>,
    /// Only accounts of this platform.
    pub platform: Option<Platform>,
    /// `day` (default), `account` or `post`.
    pub group: Option<Group>,
    /// Platform admins: only this organization. Others: their own organization only.
    pub organization: Option<Uuid>,
}

#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct MetricsPage {
    /// The first day, `YYYY-MM-DD`.
    #[schema(format = Date)]
    pub from: String,
    /// The last day, `YYYY-MM-DD`.
    #[schema(format = Date)]
    pub to: String,
    pub group: Group,
    /// `day`: exactly one series; `account`, `post`: one per account or post with data.
    pub series: Vec<MetricsSeriesOut>,
}

#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct MetricsSeriesOut {
    /// The series' account (`account` and `post` groups); null for `day`.
    pub account: Option<MetricsAccountOut>,
    /// The series' post (`post` group); null otherwise.
    pub post: Option<MetricsPostOut>,
    /// Days with a capture or a publication, oldest first.
    pub days: Vec<MetricsDayOut>,
}

#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct MetricsAccountOut {
    pub code: String,
    pub platform: String,
    /// The zone its days are counted in.
    pub timezone: String,
    pub workspace: MetricsWorkspaceOut,
}

impl MetricsAccountOut {
    /// A series' account as the answer names it.
    pub fn of(a: &MetricsAccount) -> MetricsAccountOut {
        MetricsAccountOut {
            code: a.code.clone(),
            platform: a.platform.clone(),
            timezone: a.timezone.clone(),
            workspace: MetricsWorkspaceOut {
                id: a.workspace_id,
                name: a.workspace_name.clone(),
            },
        }
    }
}

#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct MetricsWorkspaceOut {
    pub id: Uuid,
    pub name: String,
}

#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct MetricsPostOut {
    pub id: Uuid,
    pub status: String,
    pub platform_post_id: Option<String>,
    pub permalink: Option<String>,
    pub published_at: Option<Utc>,
}

impl MetricsPostOut {
    /// A series' post as the answer names it.
    pub fn of(p: &MetricsPostInfo) -> MetricsPostOut {
        MetricsPostOut {
            id: p.post_id,
            status: p.status.clone(),
            platform_post_id: p.platform_post_id.clone(),
            permalink: p.permalink.clone(),
            published_at: p.published_at.map(Utc),
        }
    }
}

#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct MetricsDayOut {
    /// `YYYY-MM-DD` in the account's zone.
    #[schema(format = Date)]
    pub date: String,
    pub views: Option<i64>,
    pub likes: Option<i64>,
    pub replies: Option<i64>,
    pub reposts: Option<i64>,
    pub shares: Option<i64>,
    pub posts_published: i64,
    /// Sum of each account's latest followers of the day; null when none was captured (and
    /// always in a post series).
    pub followers: Option<i64>,
}

impl From<DayValues> for MetricsDayOut {
    fn from(d: DayValues) -> MetricsDayOut {
        let [views, likes, replies, reposts, shares] = d.counters;
        MetricsDayOut {
            date: d.date.to_string(),
            views,
            likes,
            replies,
            reposts,
            shares,
            posts_published: d.posts_published,
            followers: d.followers,
        }
    }
}

/// The person's report and metrics operations (`/api/user/v1`).
pub mod personal {
    use super::*;
    use fleetdesk_kernel::access::PersonalAccess;
    use fleetdesk_kernel::op::{
        HttpMethod::{Get, Post},
        Nothing, OpSpec,
    };
    use fleetdesk_kernel::wire::fields::IdPath;

    fleetdesk_kernel::operations! {
        /// The organization's reports.
        pub ListReports(Nothing, ReportQueryIn, Nothing) -> ReportPage =
            OpSpec::personal(Get, "/reports", PersonalAccess::Member)
                .tool("list_reports")
                .summary("Reports of the organization, newest first")
                .description(
                    "Agency people and platform admins see every report of their organization \
                     (a platform admin outside any organization: every organization's), issued \
                     or not; clients only the reports issued to them (issued reports of their \
                     organization). Newest first by creation; pages with limit 1-200 (default \
                     50) and cursor (`next_cursor` of the previous page, null on the last).",
                );

        /// One report with what it says.
        pub GetReport(IdPath, Nothing, Nothing) -> ReportDetail =
            OpSpec::personal(Get, "/reports/{id}", PersonalAccess::Member)
                .tool("get_report")
                .summary("One report with its totals, accounts and top posts")
                .description(WHAT_A_REPORT_SAYS);

        /// Build a report of a workspace now.
        pub CreateReport(Nothing, Nothing, CreateReportBody) -> ReportDetail =
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
                );

        /// Issue a report to the clients.
        pub IssueReport(IdPath, Nothing, Nothing) -> IssueReportReply =
            OpSpec::personal(Post, "/reports/{id}/issue", PersonalAccess::Agency)
                .tool("issue_report")
                .idempotent()
                .summary("Issue a report to the organization's clients")
                .description(
                    "Agency people and platform admins; clients are refused (403). From now on \
                     the organization's clients see the report. Issuing an issued report answers \
                     `result: unchanged` and changes nothing; a report of another organization \
                     is 404.",
                );

        /// Reported metrics as series.
        pub Metrics(Nothing, MetricsQueryIn, Nothing) -> MetricsPage =
            OpSpec::personal(Get, "/metrics", PersonalAccess::Agency)
                .tool("metrics")
                .summary("Reported metrics as series per day, account or post")
                .description(
                    "Agency people and platform admins; clients are refused (403). Only the \
                     member's organization's accounts; a platform admin reads the one named by \
                     `organization`, else the one the key is bound to, else every organization; a \
                     member naming another organization gets 404. `from` and `to` are dates (both included): `to` \
                     defaults to today in Asia/Taipei, `from` to six days before `to` (the last 7 \
                     days); `from` after `to`, or a window of more than 92 days, is 422 naming \
                     `from` (a malformed date is 400). `organization` naming none is 404 naming it. `workspace` (an id; not in \
                     scope: 404 naming workspace), `code` (the account's current or legacy code; \
                     none in scope: 404 naming code; an account whose current code it is wins over \
                     legacy ones, and several left, as a code repeated across platforms without \
                     `platform`, is 409 ambiguous_code naming platform, the field that settles it) and `platform` narrow the \
                     accounts. Each capture counts on its account's own day \
                     (the account market's zone). Per post and day, each counter (views, likes, \
                     replies, reposts, shares) is the value of the latest capture of that day that \
                     carries it (a day without a capture adds nothing); these are summed over the \
                     posts of the series. `posts_published` counts posts published that day (a post \
                     reported deleted since still counts); \
                     `followers` sums each account's latest capture of the day. `group`: `day` \
                     (default; one series over every account in scope), `account` (one series per \
                     account with data) or `post` (one series per post with data; followers null). \
                     A series lists only days with a capture or a publication; a counter no post \
                     reported that day is null.",
                )
                .also_answers(&[404, 409, 422]);
    }
}
