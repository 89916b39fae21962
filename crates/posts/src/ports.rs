//! What the post lifecycle needs from the outside: review (Personal API and the agent's relay),
//! the approved list, reports and metrics. As with drafts, the adapter runs each use case in
//! one transaction and calls this crate's rule functions ([`crate::review`],
//! [`crate::report`], [`crate::metrics`]) inside it.

use crate::post::{Character, PostStatus};
use crate::report::{ItemError, ReportPlan, ReportedStatus};
use crate::review::{MoveRefusal, ReviewTarget, ReviewerRole};
/// The page of the review queue and the published list.
pub use fleetdesk_kernel::Page;
use fleetdesk_kernel::media::{MediaKind, MediaType};
use fleetdesk_kernel::time::utc;
use fleetdesk_kernel::{
    AccountCode, AgentRef, BoxFuture, Platform, Position, TimeInput, TimeInputError,
};
use jiff::Timestamp;
use serde_json::Value;
use uuid::Uuid;

/// Who reads posts through the Personal API.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Viewer {
    /// The member's organization; `None` for a platform admin bound to none (every
    /// organization).
    pub organization_id: Option<Uuid>,
    /// A client sees only posts in client review, or that went through it.
    pub client: bool,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReviewQuery {
    /// `None`: every review stage (internal and client review).
    pub stage: Option<PostStatus>,
    pub after: Option<Position>,
    pub limit: i64,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PublishedQuery {
    pub code: Option<AccountCode>,
    pub since: Option<Timestamp>,
    pub after: Option<Position>,
    pub limit: i64,
}

/// A media item on a post, in publishing order.
#[derive(Debug, Clone, PartialEq, Eq, serde::Deserialize)]
pub struct PostMedia {
    pub id: Uuid,
    pub kind: MediaKind,
    pub mime_type: MediaType,
    pub caption: Option<String>,
    pub duration_ms: Option<i64>,
}

/// What agents reported about a post.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema), schema(as = ReportedOut))]
pub struct Reported {
    #[serde(with = "utc::option")]
    #[cfg_attr(feature = "openapi", schema(value_type = Option<String>))]
    pub scheduled_for: Option<Timestamp>,
    #[serde(with = "utc::option")]
    #[cfg_attr(feature = "openapi", schema(value_type = Option<String>))]
    pub published_at: Option<Timestamp>,
    pub platform_post_id: Option<String>,
    pub permalink: Option<String>,
    pub failure_reason: Option<String>,
    #[serde(with = "utc::option")]
    #[cfg_attr(feature = "openapi", schema(value_type = Option<String>))]
    pub last_reported_at: Option<Timestamp>,
}

/// A post's latest metrics.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema), schema(as = MetricsOut))]
pub struct LatestMetrics {
    #[serde(with = "utc")]
    #[cfg_attr(feature = "openapi", schema(value_type = String))]
    pub captured_at: Timestamp,
    pub views: Option<i64>,
    pub likes: Option<i64>,
    pub replies: Option<i64>,
    pub reposts: Option<i64>,
    pub shares: Option<i64>,
}

/// A post as lists show it.
#[derive(Debug, Clone, PartialEq)]
pub struct PostCard {
    pub id: Uuid,
    pub status: PostStatus,
    pub workspace: String,
    pub project: String,
    pub code: String,
    pub platform: Platform,
    pub persona: String,
    pub handle: Option<String>,
    /// The account's IANA zone: its people read `planned_at` there.
    pub timezone: String,
    pub body: String,
    pub topic: Option<String>,
    pub sponsored: bool,
    pub planned_at: Option<Timestamp>,
    pub characters: Vec<Character>,
    pub media: Vec<PostMedia>,
    pub agent: Option<String>,
    pub created_at: Timestamp,
    pub reported: Reported,
    pub metrics: Option<LatestMetrics>,
    /// The list's order key (planned or creation time in review, published time after).
    pub sort_at: Timestamp,
    /// What its last approval pinned (none: never approved).
    pub approved: Option<crate::approval::ApprovalPin>,
    /// Set when it was reported published with another body than the approved one, or
    /// published without anyone approving it.
    pub published_differs: Option<crate::approval::PublishedDiffers>,
}

/// One entry of a post's review record.
#[derive(Debug, Clone, PartialEq)]
pub struct RecordEntry {
    pub action: String,
    pub reason: Option<String>,
    pub actor_kind: String,
    pub actor_name: String,
    pub detail: Value,
    pub at: Timestamp,
}

#[derive(Debug, Clone, PartialEq)]
pub struct PostDetail {
    pub card: PostCard,
    pub client_review: bool,
    pub stocked_at: Option<Timestamp>,
    pub stock_reason: Option<String>,
    pub record: Vec<RecordEntry>,
}

/// The person a review move is made by, directly or relayed by an agent.
#[derive(Debug, Clone, PartialEq)]
pub struct Reviewer {
    pub role: ReviewerRole,
    pub name: String,
    pub person_id: Option<Uuid>,
    /// Set when an agent relays the decision: the agent, origin and effective time.
    pub relay: Option<Value>,
}

/// Whose posts a move may touch.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReviewScope {
    Member(Viewer),
    Agent(AgentRef),
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TransitionRequest {
    pub post_id: Uuid,
    pub to: ReviewTarget,
    pub comment: Option<String>,
    /// Read in the account market's zone when it has none.
    pub planned_at: Option<TimeInput>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TransitionRefusal {
    NotFound,
    /// The post is under another agent's persona (relay).
    NotYours,
    Move(MoveRefusal),
    PlannedAt(TimeInputError),
    /// planned_at must be in the future.
    PlannedInPast,
}

#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema), schema(as = TransitionedOut))]
pub struct Transitioned {
    pub id: Uuid,
    pub from: PostStatus,
    pub status: PostStatus,
    #[serde(with = "utc::option")]
    #[cfg_attr(feature = "openapi", schema(value_type = Option<String>))]
    pub planned_at: Option<Timestamp>,
}

/// One reported post as the request gave it, before its account is known.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RawReportItem {
    pub code: AccountCode,
    pub platform: Option<Platform>,
    pub status: ReportedStatus,
    pub scheduled_for: Option<TimeInput>,
    pub published_at: Option<TimeInput>,
    pub platform_post_id: Option<String>,
    pub permalink: Option<String>,
    pub body: Option<String>,
    pub topic: Option<String>,
    pub has_media: Option<bool>,
    pub sponsored: Option<bool>,
    pub post_id: Option<Uuid>,
    pub failure_reason: Option<String>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct ReportOutcome {
    /// `None` when every item was refused and nothing was written.
    pub report_id: Option<Uuid>,
    pub received_at: Timestamp,
    pub plan: ReportPlan,
}

/// One post's metrics as the request gave them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RawPostMetrics {
    pub post_id: Option<Uuid>,
    pub code: Option<AccountCode>,
    pub platform: Option<Platform>,
    pub platform_post_id: Option<String>,
    pub counters: crate::metrics::PostCounters,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RawAccountMetrics {
    pub code: AccountCode,
    pub platform: Option<Platform>,
    pub followers: Option<i64>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MetricsReport {
    /// Time input; read in the market's zone when the agent's accounts share one market,
    /// otherwise Asia/Taipei.
    pub captured_at: TimeInput,
    /// Each post item as read, or why it could not be read (its answer in `refused`).
    pub posts: Vec<Result<RawPostMetrics, crate::report::ItemError>>,
    /// Each account item as read, or why it could not be read.
    pub accounts: Vec<Result<RawAccountMetrics, crate::report::ItemError>>,
}

impl MetricsReport {
    /// The post items that could be read.
    pub fn readable_posts(&self) -> impl Iterator<Item = &RawPostMetrics> {
        self.posts.iter().filter_map(|p| p.as_ref().ok())
    }

    /// The account items that could be read.
    pub fn readable_accounts(&self) -> impl Iterator<Item = &RawAccountMetrics> {
        self.accounts.iter().filter_map(|a| a.as_ref().ok())
    }

    /// The codes the readable items name (posts by code, and accounts), sorted and once each:
    /// the accounts the adapter loads.
    pub fn codes(&self) -> Vec<&str> {
        let mut codes: Vec<&str> = self
            .readable_posts()
            .filter_map(|p| p.code.as_ref().map(|c| c.as_str()))
            .chain(self.readable_accounts().map(|a| a.code.as_str()))
            .collect();
        codes.sort_unstable();
        codes.dedup();
        codes
    }
}

// Why one metrics item was not written (a plain comment: the description of RefusedOut, the
// component's name before it serialized directly, has none).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema), schema(as = RefusedOut))]
pub struct Refused {
    /// `posts` or `accounts`.
    pub list: &'static str,
    pub index: usize,
    pub code: &'static str,
    /// The field of the item at fault, when one is (an item that could not be read).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub field: Option<String>,
    pub reason: String,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum MetricsRefusal {
    CapturedAt(CapturedAtProblem),
}

/// Why a batch's `captured_at` is refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CapturedAtProblem {
    #[error("{0}")]
    Unreadable(fleetdesk_kernel::TimeInputError),
    #[error("{0} is in the future")]
    Future(Timestamp),
    #[error("{0} is older than 60 days")]
    TooOld(Timestamp),
}

#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema), schema(as = MetricsResult))]
pub struct MetricsOutcome {
    #[serde(with = "utc")]
    #[cfg_attr(feature = "openapi", schema(value_type = String))]
    pub captured_at: Timestamp,
    pub posts_written: usize,
    pub accounts_written: usize,
    /// Values that fell from a positive number to 0 and were not written.
    pub zeros_kept_back: usize,
    pub refused: Vec<Refused>,
}

pub trait LifecycleRepo: Send + Sync + 'static {
    fn review_queue<'a>(
        &'a self,
        viewer: Viewer,
        query: &'a ReviewQuery,
    ) -> BoxFuture<'a, anyhow::Result<Page<PostCard>>>;

    fn post(&self, viewer: Viewer, id: Uuid) -> BoxFuture<'_, anyhow::Result<Option<PostDetail>>>;

    fn published<'a>(
        &'a self,
        viewer: Viewer,
        query: &'a PublishedQuery,
    ) -> BoxFuture<'a, anyhow::Result<Page<PostCard>>>;

    /// Applies a review move in one transaction, with its review-record entry.
    fn transition<'a>(
        &'a self,
        scope: ReviewScope,
        reviewer: &'a Reviewer,
        request: &'a TransitionRequest,
        now: Timestamp,
    ) -> BoxFuture<'a, anyhow::Result<Result<Transitioned, TransitionRefusal>>>;

    /// Approved posts of the agent's accounts not yet scheduled, earliest planned first.
    fn approved(&self, agent: AgentRef, limit: i64)
    -> BoxFuture<'_, anyhow::Result<Vec<PostCard>>>;

    /// Plans and writes a report batch in one transaction; writes nothing when every item is
    /// refused.
    fn report(
        &self,
        agent: AgentRef,
        items: Vec<Result<RawReportItem, ItemError>>,
        now: Timestamp,
    ) -> BoxFuture<'_, anyhow::Result<ReportOutcome>>;

    fn report_metrics<'a>(
        &'a self,
        agent: AgentRef,
        report: &'a MetricsReport,
        now: Timestamp,
    ) -> BoxFuture<'a, anyhow::Result<Result<MetricsOutcome, MetricsRefusal>>>;

    /// When the agent last reported posts.
    fn last_report_at(&self, agent: AgentRef) -> BoxFuture<'_, anyhow::Result<Option<Timestamp>>>;
}
