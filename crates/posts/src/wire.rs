//! The posts part of the interface (feature `wire`): each operation's handle with its
//! description, and the request and response types the server parses and a client sends.

use crate::approval::{ApprovalPin, DiffersReason, PublishedDiffers};
use crate::ports::{LatestMetrics, MetricsOutcome, RecordEntry, Reported, Transitioned};
use crate::post::Character;
use crate::post::PostStatus;
use crate::report::{Action, MatchedBy, ReportedStatus};
use crate::review::ReviewTarget;
use fleetdesk_accounts::models::work::{AccountInventory, PlannedDay};
use fleetdesk_kernel::Platform;
use fleetdesk_kernel::media::MediaKind;
use fleetdesk_kernel::wire::fields::{Count, Cursor, Items, Limit, Text, Utc};
use fleetdesk_kernel::wire::relay::{OnBehalfOf, Origin};
use fleetdesk_kernel::wire::strings::{
    CodeInput, CursorInput, DateInput, IsoTimeInput, LinkInput, TimeInput,
};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use utoipa::ToSchema;
use uuid::Uuid;
use validator::Validate;

/// A report batch: 200 posts with long bodies.
const REPORT_MAX_BODY: usize = 4 * 1024 * 1024;

fleetdesk_kernel::component_items!(PostMetricsIn, AccountMetricsIn, ReportItemIn);

// ---------------------------------------------------------------------------------------------
// Post cards, shared with the Personal API

/// A media item on a post, with signed links.
#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct PostMediaOut {
    pub id: Uuid,
    pub kind: MediaKind,
    pub url: String,
    pub thumb_url: String,
    pub mime_type: String,
    pub caption: Option<String>,
    /// Null for images.
    pub duration_ms: Option<i64>,
}

/// A post as the Personal API lists it.
#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct PostOut {
    pub id: Uuid,
    pub status: PostStatus,
    pub workspace: String,
    pub project: String,
    pub code: String,
    pub platform: Platform,
    pub persona: String,
    pub handle: Option<String>,
    /// The account's IANA zone (its market's): where its people read `planned_at`.
    pub timezone: String,
    pub body: String,
    pub topic: Option<String>,
    pub sponsored: bool,
    pub planned_at: Option<Utc>,
    pub characters: Vec<Character>,
    /// In publishing order, with signed links.
    pub media: Vec<PostMediaOut>,
    /// The agent that wrote or reported it.
    pub agent: Option<String>,
    pub created_at: Utc,
    pub reported: Reported,
    pub metrics: Option<LatestMetrics>,
    /// What its last approval (internal or client) pinned: the body's fingerprint (SHA-256
    /// of the body as report matching normalizes it), the body, its media's content hashes
    /// in publishing order and its characters' codes. Null: never approved.
    pub approved: Option<ApprovalPin>,
    /// Set when an agent reported the post published with another body than the approved
    /// one (`changed`), or published a post nobody approved (`never_approved`): both texts.
    /// Nothing is refused; people are told.
    pub published_differs: Option<PublishedDiffersOut>,
}

/// A published post that differs from what was approved.
#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct PublishedDiffersOut {
    pub reason: DiffersReason,
    /// Null when nobody approved the post.
    pub approved_body: Option<String>,
    /// What the report says went out.
    pub published_body: String,
    /// When the report marked it.
    pub reported_at: Utc,
}

impl From<PublishedDiffers> for PublishedDiffersOut {
    fn from(d: PublishedDiffers) -> Self {
        PublishedDiffersOut {
            reason: d.reason,
            approved_body: d.approved_body,
            published_body: d.published_body,
            reported_at: Utc(d.reported_at),
        }
    }
}

// ---------------------------------------------------------------------------------------------
// GET /posts/approved

#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct ApprovedList {
    pub posts: Vec<ApprovedPost>,
    pub links_expire_in_seconds: i64,
}

#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct ApprovedPost {
    pub id: Uuid,
    pub code: String,
    pub platform: Platform,
    pub persona: String,
    pub handle: Option<String>,
    pub body: String,
    pub topic: Option<String>,
    pub sponsored: bool,
    pub planned_at: Option<Utc>,
    pub characters: Vec<Character>,
    /// Images and videos in publishing order.
    pub images: Vec<PostMediaOut>,
}

// ---------------------------------------------------------------------------------------------
// GET /posts/planned

#[derive(Debug, Serialize, Deserialize, Validate, ToSchema)]
pub struct PlannedQuery {
    /// Market dates to look at, 1-14, default 7.
    #[validate(range(min = 1, max = 14))]
    #[schema(minimum = 1, maximum = 14)]
    pub days: Option<u32>,
    /// The first date (`YYYY-MM-DD`); default today in each market.
    pub date: Option<DateInput>,
}

#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct PlannedPosts {
    pub days: Vec<PlannedDay>,
    pub inventory: Vec<AccountInventory>,
}

// ---------------------------------------------------------------------------------------------
// POST /posts/report

#[derive(Debug, Serialize, Deserialize, Validate, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ReportBody {
    /// 1-200 reported posts; each is read and checked on its own.
    pub posts: Items<ReportItemIn, 1, 200>,
}

/// One reported post.
#[derive(Debug, Serialize, Deserialize, Validate, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ReportItemIn {
    pub code: CodeInput,
    /// Only when the code is ambiguous.
    pub platform: Option<Platform>,
    pub status: ReportedStatus,
    /// Required when scheduled: ISO with zone or market-local time.
    pub scheduled_for: Option<TimeInput>,
    /// When published; default the time of the report.
    pub published_at: Option<TimeInput>,
    /// Always give it when known: later reports match on it.
    pub platform_post_id: Option<Text<1, 200>>,
    /// http(s) link, required when published.
    pub permalink: Option<LinkInput>,
    /// Required the first time a post is reported.
    pub body: Option<Text<1, 10000>>,
    pub topic: Option<Text<0, 200>>,
    pub has_media: Option<bool>,
    pub sponsored: Option<bool>,
    /// The service's post id, for posts from the approved list.
    pub post_id: Option<Uuid>,
    /// Required for failed, recommended for cancelled; no credentials or internal links.
    pub failure_reason: Option<Text<1, 2000>>,
}

/// What each reported status requires of its item (`report::check_requirements`).
pub fn report_item_rules() -> Value {
    let requires = |status: ReportedStatus, field: &str| {
        json!({
            "if": {"properties": {"status": {"const": status.as_str()}}, "required": ["status"]},
            "then": {"required": [field], "properties": {field: {"type": "string"}}},
        })
    };
    json!({"allOf": [
        requires(ReportedStatus::Scheduled, "scheduled_for"),
        requires(ReportedStatus::Published, "permalink"),
        requires(ReportedStatus::Failed, "failure_reason"),
    ]})
}

/// A metrics report names at least one post or account.
pub fn metrics_rules() -> Value {
    json!({"allOf": [{"anyOf": [
        {"required": ["posts"], "properties": {"posts": {"minItems": 1}}},
        {"required": ["accounts"], "properties": {"accounts": {"minItems": 1}}},
    ]}]})
}

/// A post's counters name it by post_id, or by code with platform_post_id.
pub fn post_metrics_rules() -> Value {
    json!({"allOf": [{"anyOf": [
        {"required": ["post_id"], "properties": {"post_id": {"type": "string"}}},
        {
            "required": ["code", "platform_post_id"],
            "properties": {"code": {"type": "string"}, "platform_post_id": {"type": "string"}},
        },
    ]}]})
}

/// A review move to sent_back or rewrite_requested carries a comment that is more than spaces
/// (`review::check_move`).
pub fn comment_rules() -> Value {
    let needs: Vec<&str> = [
        ReviewTarget::Approved,
        ReviewTarget::ClientReview,
        ReviewTarget::SentBack,
        ReviewTarget::RewriteRequested,
        ReviewTarget::Cancelled,
    ]
    .into_iter()
    .filter(|t| t.needs_comment())
    .map(|t| t.status().as_str())
    .collect();
    json!({"allOf": [{
        "if": {"properties": {"to": {"enum": needs}}, "required": ["to"]},
        "then": {
            "required": ["comment"],
            "properties": {"comment": {"type": "string", "pattern": fleetdesk_kernel::wire::strings::not_blank_pattern()}},
        },
    }]})
}

#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct ReportResult {
    pub report_id: Option<Uuid>,
    pub received_at: Utc,
    pub inserted: usize,
    pub updated: usize,
    pub unchanged: usize,
    pub ignored: usize,
    pub rejected: usize,
    pub results: Vec<ItemResultOut>,
}

#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct ItemResultOut {
    pub index: usize,
    pub ok: bool,
    /// inserted, updated, unchanged, ignored or unscheduled; null when refused.
    pub action: Option<Action>,
    pub post_id: Option<Uuid>,
    pub status: Option<PostStatus>,
    /// post_id, platform_post_id or body; null for a new post.
    pub matched_by: Option<MatchedBy>,
    pub note: Option<String>,
    pub error: Option<ItemErrorOut>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub published_from_stock: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub warning: Option<String>,
}

#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct ItemErrorOut {
    /// not_found, ambiguous_code, forbidden, rejected, invalid, invalid_request or conflict.
    pub code: String,
    pub message: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub field: Option<String>,
}

// ---------------------------------------------------------------------------------------------
// POST /metrics

#[derive(Debug, Serialize, Deserialize, Validate, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct MetricsBody {
    /// ISO with zone, or local `YYYY-MM-DD HH:MM[:SS]`; not in the future, not older than 60
    /// days.
    pub captured_at: TimeInput,
    /// Post counters; each post by post_id, or code with platform_post_id. Each item is read
    /// and checked on its own.
    #[serde(default)]
    pub posts: Items<PostMetricsIn, 0, 500>,
    /// Followers per account; each item is read and checked on its own.
    #[serde(default)]
    pub accounts: Items<AccountMetricsIn, 0, 500>,
}

#[derive(Debug, Serialize, Deserialize, Validate, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct PostMetricsIn {
    pub post_id: Option<Uuid>,
    pub code: Option<CodeInput>,
    pub platform: Option<Platform>,
    pub platform_post_id: Option<Text<1, 200>>,
    pub views: Option<Count>,
    pub likes: Option<Count>,
    pub replies: Option<Count>,
    pub reposts: Option<Count>,
    pub shares: Option<Count>,
}

#[derive(Debug, Serialize, Deserialize, Validate, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct AccountMetricsIn {
    pub code: CodeInput,
    pub platform: Option<Platform>,
    pub followers: Option<Count>,
}

// ---------------------------------------------------------------------------------------------
// POST /posts/{id}/transition (relay)

#[derive(Debug, Serialize, Deserialize, Validate, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct RelayTransitionBody {
    pub to: ReviewTarget,
    /// Required for sent_back (the send-back comment) and rewrite_requested (the instruction).
    pub comment: Option<Text<1, 2000>>,
    /// With `to: approved`: the planned time (ISO with zone or market-local); on an approved
    /// post it reschedules.
    pub planned_at: Option<TimeInput>,
    pub on_behalf_of: OnBehalfOf,
    pub origin: Origin,
    /// When the person decided (ISO with zone); default now.
    pub effective_at: Option<IsoTimeInput>,
}

#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct TransitionReply {
    pub post: Transitioned,
}

impl From<Transitioned> for TransitionReply {
    fn from(post: Transitioned) -> TransitionReply {
        TransitionReply { post }
    }
}

// ---------------------------------------------------------------------------------------------
// GET /review (Personal API)

#[derive(Debug, Clone, Copy, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum Stage {
    InternalReview,
    ClientReview,
}

impl Stage {
    /// The status of the posts in this stage.
    pub fn status(self) -> PostStatus {
        match self {
            Stage::InternalReview => PostStatus::InternalReview,
            Stage::ClientReview => PostStatus::ClientReview,
        }
    }
}

#[derive(Debug, Clone, Default, Serialize, Deserialize, Validate, ToSchema)]
pub struct ReviewQueryIn {
    /// internal_review or client_review; default both (a client always gets client_review).
    pub stage: Option<Stage>,
    /// 1-200, default 50.
    pub limit: Option<Limit<200>>,
    /// `next_cursor` of the previous page.
    pub cursor: Option<CursorInput>,
}

#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct PostPage {
    pub posts: Vec<PostOut>,
    /// Pass as `cursor` for the next page; null on the last page.
    pub next_cursor: Option<Cursor>,
    pub links_expire_in_seconds: i64,
}

/// The Personal API's lists of posts page by `cursor`.
macro_rules! paged_posts {
    ($($op:ty => $query:ty),*) => {$(
        impl fleetdesk_kernel::wire::Paged for $op {
            type Item = PostOut;

            fn page(out: PostPage) -> (Vec<PostOut>, Option<Cursor>) {
                (out.posts, out.next_cursor)
            }

            fn after(query: &mut $query, cursor: Cursor) {
                query.cursor = Some(cursor.input());
            }
        }
    )*};
}

paged_posts!(personal::ReviewQueue => ReviewQueryIn, personal::ListPublished => PublishedQueryIn);

// ---------------------------------------------------------------------------------------------
// GET /posts/{id} (Personal API)

#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct PostDetailReply {
    pub post: PostOut,
    /// Client review is on for the post's workspace.
    pub client_review: bool,
    pub stocked_at: Option<Utc>,
    pub stock_reason: Option<String>,
    /// Every review action, note, stocking, unstocking and report, oldest first.
    pub record: Vec<RecordEntryOut>,
    pub links_expire_in_seconds: i64,
}

#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct RecordEntryOut {
    pub action: String,
    /// The comment, instruction or reason.
    pub reason: Option<String>,
    pub actor: Actor,
    pub detail: Value,
    pub at: Utc,
}

#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct Actor {
    /// agent, member or service.
    pub kind: String,
    pub name: String,
}

impl From<RecordEntry> for RecordEntryOut {
    fn from(r: RecordEntry) -> RecordEntryOut {
        RecordEntryOut {
            action: r.action,
            reason: r.reason,
            actor: Actor {
                kind: r.actor_kind,
                name: r.actor_name,
            },
            detail: r.detail,
            at: Utc(r.at),
        }
    }
}

// ---------------------------------------------------------------------------------------------
// POST /posts/{id}/transition (Personal API)

#[derive(Debug, Serialize, Deserialize, Validate, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct TransitionBody {
    pub to: ReviewTarget,
    /// Required for sent_back (the send-back comment) and rewrite_requested (the instruction).
    pub comment: Option<Text<1, 2000>>,
    /// With `to: approved`: the planned time (ISO with zone or market-local, in the future);
    /// on an approved post it reschedules.
    pub planned_at: Option<TimeInput>,
}

// ---------------------------------------------------------------------------------------------
// GET /posts/published (Personal API)

#[derive(Debug, Clone, Default, Serialize, Deserialize, Validate, ToSchema)]
pub struct PublishedQueryIn {
    /// One account (current or legacy code).
    pub code: Option<CodeInput>,
    /// Only posts published at or after this time (ISO with zone).
    pub since: Option<IsoTimeInput>,
    /// 1-200, default 50.
    pub limit: Option<Limit<200>>,
    /// `next_cursor` of the previous page.
    pub cursor: Option<CursorInput>,
}

// ---------------------------------------------------------------------------------------------
// Refusals: how the API answers each refusal of the post lifecycle

/// The agent's operations (`/api/agent/v1`).
pub mod agent {
    use super::*;
    use fleetdesk_kernel::access::Scope;
    use fleetdesk_kernel::op::{
        HttpMethod::{Get, Post},
        Nothing, OpSpec,
    };
    use fleetdesk_kernel::wire::fields::IdPath;

    fleetdesk_kernel::operations! {
        /// Approved posts to schedule in your publishing tool, earliest planned first.
        pub ListApproved(Nothing, Nothing, Nothing) -> ApprovedList =
            OpSpec::agent(Get, "/posts/approved", Scope::DraftsRead)
                .tool("list_approved")
                .summary("Approved posts to schedule in your publishing tool, earliest planned first")
                .description(
                    "At most 200. Media come in publishing order: upload them in that order. Links are \
                     signed and expire (links_expire_in_seconds); fetch the list again when they do. \
                     Reporting a post scheduled with its post_id takes it off this list.",
                );

        /// Days ahead that still need posts, per active account, and each account's inventory.
        pub GetPlannedPosts(Nothing, PlannedQuery, Nothing) -> PlannedPosts =
            OpSpec::agent(Get, "/posts/planned", Scope::DraftsRead)
                .tool("planned_posts")
                .summary("Days ahead that still need posts, per active account, and each account's inventory")
                .description(
                    "For each active account and each of the next `days` market dates (default 7): the \
                     target, what is reported published or scheduled, what is approved or in review for \
                     the day, and what is still missing; only days with something missing are listed. \
                     inventory_available says how many stocked posts could be unstocked instead.",
                );

        /// Report what happened to posts in your publishing tool: scheduled, published, \ failed, cancelled.
        pub ReportPosts(Nothing, Nothing, ReportBody) -> ReportResult =
            OpSpec::agent(Post, "/posts/report", Scope::PostsWrite)
                .tool("report_posts")
                .idempotent()
                .max_body(REPORT_MAX_BODY)
                .summary(
                    "Report what happened to posts in your publishing tool: scheduled, published, \
                     failed, cancelled",
                )
                .description(
                    "1-200 posts. Each is handled on its own and answered in results[] by index. \
                     Matching: post_id, then platform_post_id (same organization and platform), then \
                     same account and body (whitespace collapsed) at the nearest time among approved, \
                     scheduled or failed posts and posts published within 12 hours. A published \
                     report adopts a same-body unpublished post scheduled within a day even if it \
                     carried the tool's own id, and says so in `note`. When every item is refused \
                     the answer is 422 with the results, nothing is written and the Idempotency-Key \
                     stays free.",
                );

        /// Report post counters and account followers read off the platforms.
        pub ReportMetrics(Nothing, Nothing, MetricsBody) -> MetricsOutcome =
            OpSpec::agent(Post, "/metrics", Scope::MetricsWrite)
                .tool("report_metrics")
                .idempotent()
                .summary("Report post counters and account followers read off the platforms")
                .description(
                    "captured_at must be neither in the future nor older than 60 days; without a zone it \
                     is read in your accounts' market zone (Taipei when they span several markets). The \
                     same captured_at overwrites. Items with nothing to record are not written, and a \
                     value that fell from a positive number to 0 is kept back. Each item is checked \
                     on its own: one that cannot be read (neither post_id nor code with \
                     platform_post_id, a counter that is negative or not a whole number, an unknown \
                     field) or names nothing of yours comes back in `refused` with its list, index, \
                     code, the field at fault and the reason, and the others are written. Only a \
                     `posts` or `accounts` that is not an array of up to 500 refuses the request \
                     (400); when nothing could be written the answer is 422.",
                );

        /// Record a person's review decision on their behalf.
        pub RelayPostStatus(IdPath, Nothing, RelayTransitionBody) -> TransitionReply =
            OpSpec::agent(Post, "/posts/{id}/transition", Scope::RelayWrite)
                .tool("relay_post_status")
                .idempotent()
                .summary("Record a person's review decision on their behalf")
                .description(
                    "Only when the person explicitly said so. on_behalf_of and origin are required. The \
                     same moves and rules as the Personal API's review: to approved, client_review, \
                     sent_back, rewrite_requested or cancelled; a comment for sent_back and \
                     rewrite_requested; while client review is on, an agency person cannot approve on \
                     behalf of the client.",
                );
    }
}

/// The person's review queue, one post, review moves and published posts (`/api/user/v1`).
pub mod personal {
    use super::*;
    use fleetdesk_kernel::access::PersonalAccess::{Member, Review};
    use fleetdesk_kernel::op::{
        HttpMethod::{Get, Post},
        Nothing, OpSpec,
    };
    use fleetdesk_kernel::wire::fields::IdPath;

    fleetdesk_kernel::operations! {
        /// Posts waiting for review, oldest planned first.
        pub ReviewQueue(Nothing, ReviewQueryIn, Nothing) -> PostPage =
            OpSpec::personal(Get, "/review", Member)
                .tool("review_queue")
                .summary("Posts waiting for review, oldest planned first")
                .description(
                    "Agency people and admins see internal and client review (filter with stage); a \
                     client sees only posts in client review. Media links are signed and expire.",
                );

        /// One post with its media links, what agents reported and its review record.
        pub GetPost(IdPath, Nothing, Nothing) -> PostDetailReply =
            OpSpec::personal(Get, "/posts/{id}", Member)
                .tool("get_post")
                .summary("One post with its media links, what agents reported and its review record")
                .description("A client sees posts in client review or that went through it.");

        /// Review a post: approve, move to client review, send back, ask for a rewrite, cancel.
        pub ReviewPost(IdPath, Nothing, TransitionBody) -> TransitionReply =
            OpSpec::personal(Post, "/posts/{id}/transition", Review)
                .tool("review_post")
                .idempotent()
                .summary(
                    "Review a post: approve, move to client review, send back, ask for a rewrite, cancel",
                )
                .description(
                    "From internal_review: approved (client review off), client_review (on), sent_back, \
                     rewrite_requested, cancelled. From client_review: approved (the client with the \
                     review right, or an admin; an agency person cannot approve on behalf of the client \
                     while client review is on), sent_back, rewrite_requested. planned_at with \
                     to: approved on an approved post reschedules it. comment is required for sent_back \
                     and rewrite_requested. Any other move is 422.",
                );

        /// Published posts, newest first, with their links and latest metrics.
        pub ListPublished(Nothing, PublishedQueryIn, Nothing) -> PostPage =
            OpSpec::personal(Get, "/posts/published", Member)
                .tool("published_posts")
                .summary("Published posts, newest first, with their links and latest metrics")
                .description(
                    "As agents reported them. A client sees posts that went through client review.",
                );
    }
}
