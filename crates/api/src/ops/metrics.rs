//! `GET /metrics`: the series a person reads from the metrics agents reported. The window and
//! the series rules are `fleetdesk_reports::metrics`; the adapter loads the captures of the
//! accounts in scope with a fixed number of statements.

use super::common::{CodeInput, DateInput};
use crate::ctx::Ctx;
use crate::error::ApiError;
use crate::fields::Utc;
use crate::input::{Nothing, Req};
use crate::op::{ErasedOp, HttpMethod, OpSpec, Reply, operation};
use fleetdesk_kernel::{ErrorCode, Platform};
use fleetdesk_reports::metrics::{
    self as rules, DayValues, Group, MAX_DAYS, MetricsPostInfo, MetricsQuery, MetricsRefusal,
    Series, SeriesKey, Window, WindowError,
};
use fleetdesk_tenancy::{MemberCaller, PersonalAccess};
use jiff::Timestamp;
use serde::{Deserialize, Serialize};
use std::collections::HashMap;
use utoipa::ToSchema;
use uuid::Uuid;
use validator::Validate;

pub fn register(all: &mut Vec<Box<dyn ErasedOp>>) {
    all.push(operation(
        OpSpec::personal(HttpMethod::Get, "/metrics", PersonalAccess::Agency)
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
            .also_answers(&[404, 409, 422]),
        metrics,
    ));
}

#[derive(Debug, Deserialize, Validate, ToSchema)]
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

#[derive(Debug, Serialize, ToSchema)]
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

#[derive(Debug, Serialize, ToSchema)]
pub struct MetricsSeriesOut {
    /// The series' account (`account` and `post` groups); null for `day`.
    pub account: Option<MetricsAccountOut>,
    /// The series' post (`post` group); null otherwise.
    pub post: Option<MetricsPostOut>,
    /// Days with a capture or a publication, oldest first.
    pub days: Vec<MetricsDayOut>,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct MetricsAccountOut {
    pub code: String,
    pub platform: String,
    /// The zone its days are counted in.
    pub timezone: String,
    pub workspace: MetricsWorkspaceOut,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct MetricsWorkspaceOut {
    pub id: Uuid,
    pub name: String,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct MetricsPostOut {
    pub id: Uuid,
    pub status: String,
    pub platform_post_id: Option<String>,
    pub permalink: Option<String>,
    pub published_at: Option<Utc>,
}

#[derive(Debug, Serialize, ToSchema)]
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

impl From<WindowError> for ApiError {
    fn from(e: WindowError) -> ApiError {
        ApiError::rejected(e.to_string()).with_field("from")
    }
}

impl From<MetricsRefusal> for ApiError {
    fn from(r: MetricsRefusal) -> ApiError {
        let field = match r {
            MetricsRefusal::UnknownOrganization => "organization",
            MetricsRefusal::UnknownWorkspace => "workspace",
            MetricsRefusal::UnknownCode => "code",
            MetricsRefusal::AmbiguousCode => {
                return ApiError::new(ErrorCode::AmbiguousCode, r.to_string())
                    .with_field("platform");
            }
        };
        ApiError::not_found(r.to_string()).with_field(field)
    }
}

async fn metrics(
    ctx: Ctx,
    m: MemberCaller,
    req: Req<Nothing, MetricsQueryIn, Nothing>,
) -> Result<Reply<MetricsPage>, ApiError> {
    let q = req.query;
    let window = Window::resolve(
        q.from.map(|d| d.0),
        q.to.map(|d| d.0),
        rules::today(Timestamp::now()),
    )?;
    debug_assert!(window.days() <= MAX_DAYS);
    let group = q.group.unwrap_or_default();
    let query = MetricsQuery {
        organization: m.organization_in_view(q.organization)?,
        workspace: q.workspace,
        code: q.code.map(|c| c.0.as_str().to_owned()),
        platform: q.platform.map(|p| p.as_str().to_owned()),
        window,
    };
    let data = ctx.metrics.load(&query).await??;
    let series = rules::series(&data, window, group);
    let accounts: HashMap<Uuid, &rules::MetricsAccount> =
        data.accounts.iter().map(|a| (a.slot_id, a)).collect();
    let posts: HashMap<Uuid, &MetricsPostInfo> =
        data.posts.iter().map(|p| (p.post_id, p)).collect();
    let account_out = |slot: Uuid| {
        accounts.get(&slot).map(|a| MetricsAccountOut {
            code: a.code.clone(),
            platform: a.platform.clone(),
            timezone: a.timezone.clone(),
            workspace: MetricsWorkspaceOut {
                id: a.workspace_id,
                name: a.workspace_name.clone(),
            },
        })
    };
    let series_out = |s: Series| {
        let (account, post) = match s.key {
            SeriesKey::All => (None, None),
            SeriesKey::Account(slot) => (account_out(slot), None),
            SeriesKey::Post { slot_id, post_id } => (
                account_out(slot_id),
                posts.get(&post_id).map(|p| MetricsPostOut {
                    id: p.post_id,
                    status: p.status.clone(),
                    platform_post_id: p.platform_post_id.clone(),
                    permalink: p.permalink.clone(),
                    published_at: p.published_at.map(Utc),
                }),
            ),
        };
        MetricsSeriesOut {
            account,
            post,
            days: s.days.into_iter().map(Into::into).collect(),
        }
    };
    Ok(Reply::ok(MetricsPage {
        from: window.from.to_string(),
        to: window.to.to_string(),
        group,
        series: series.into_iter().map(series_out).collect(),
    }))
}
