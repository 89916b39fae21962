//! `GET /metrics`: the series a person reads from the metrics agents reported. The window and
//! the series rules are `fleetdesk_reports::metrics`; the adapter loads the captures of the
//! accounts in scope with a fixed number of statements. The operation and its types are
//! `fleetdesk_reports::wire`.

use crate::ctx::Ctx;
use crate::error::ApiError;
use crate::input::{Nothing, Req};
use crate::op::{ErasedOp, Reply, bind};
use fleetdesk_kernel::ErrorCode;
use fleetdesk_reports::metrics::{
    self as rules, MAX_DAYS, MetricsPostInfo, MetricsQuery, MetricsRefusal, Series, SeriesKey,
    Window, WindowError,
};
use fleetdesk_reports::wire::{
    MetricsAccountOut, MetricsPage, MetricsPostOut, MetricsQueryIn, MetricsSeriesOut, personal,
};
use fleetdesk_tenancy::MemberCaller;
use jiff::Timestamp;
use std::collections::HashMap;
use uuid::Uuid;

pub fn register(all: &mut Vec<Box<dyn ErasedOp>>) {
    all.push(bind::<personal::Metrics, _, _, _>(metrics));
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
    let account_out = |slot: Uuid| accounts.get(&slot).map(|a| MetricsAccountOut::of(a));
    let series_out = |s: Series| {
        let (account, post) = match s.key {
            SeriesKey::All => (None, None),
            SeriesKey::Account(slot) => (account_out(slot), None),
            SeriesKey::Post { slot_id, post_id } => (
                account_out(slot_id),
                posts.get(&post_id).map(|p| MetricsPostOut::of(p)),
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
