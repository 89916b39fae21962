//! Agent API: the approved list, the planning view, reports, metrics and the relay of a
//! person's review decision.

use super::common::{CodeInput, DateInput, IsoTimeInput, LinkInput, TimeInput};
use super::drafts::IdPath;
use super::relay::{OnBehalfOf, OnBehalfRoleIn, Origin, RelayRecord};
use crate::ctx::Ctx;
use crate::error::ApiError;
use crate::fields::{Count, Int, ItemFault, Items, ReadItems, Text, Utc, component_items};
use crate::input::{Nothing, Req};
use crate::links::{Links, Variant};
use crate::op::{ErasedOp, HttpMethod, OpSpec, Reply, operation};
use fleetdesk_accounts::models::work::{AccountInventory, PlannedDay};
use fleetdesk_kernel::Platform;
use fleetdesk_kernel::media::MediaKind;
use fleetdesk_posts::metrics::PostCounters;
use fleetdesk_posts::ports::{
    LatestMetrics, MetricsOutcome, MetricsRefusal, MetricsReport, PostCard, RawAccountMetrics,
    RawPostMetrics, RawReportItem, Reported, ReviewScope, Reviewer, TransitionRefusal,
    TransitionRequest, Transitioned,
};
use fleetdesk_posts::post::Character;
use fleetdesk_posts::post::PostStatus;
use fleetdesk_posts::report::{Action, ItemError, MatchedBy, ReportedStatus};
use fleetdesk_posts::review::{MoveRefusal, ReviewTarget, ReviewerRole};
use fleetdesk_tenancy::{AgentCaller, Scope};
use jiff::Timestamp;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use utoipa::ToSchema;
use uuid::Uuid;
use validator::Validate;

/// A report batch: 200 posts with long bodies.
const REPORT_MAX_BODY: usize = 4 * 1024 * 1024;
/// Metrics items per request (the specification leaves it open).
pub const METRICS_MAX_ITEMS: u64 = 500;

component_items!(PostMetricsIn, AccountMetricsIn, ReportItemIn);

pub fn register(all: &mut Vec<Box<dyn ErasedOp>>) {
    use HttpMethod::{Get, Post};
    all.push(operation(
        OpSpec::agent(Get, "/posts/approved", Scope::DraftsRead)
            .tool("list_approved")
            .summary("Approved posts to schedule in your publishing tool, earliest planned first")
            .description(
                "At most 200. Media come in publishing order: upload them in that order. Links are \
                 signed and expire (links_expire_in_seconds); fetch the list again when they do. \
                 Reporting a post scheduled with its post_id takes it off this list.",
            ),
        list_approved,
    ));
    all.push(operation(
        OpSpec::agent(Get, "/posts/planned", Scope::DraftsRead)
            .tool("planned_posts")
            .summary("Days ahead that still need posts, per active account, and each account's inventory")
            .description(
                "For each active account and each of the next `days` market dates (default 7): the \
                 target, what is reported published or scheduled, what is approved or in review for \
                 the day, and what is still missing; only days with something missing are listed. \
                 inventory_available says how many stocked posts could be unstocked instead.",
            ),
        planned_posts,
    ));
    all.push(operation(
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
            ),
        report_posts,
    ));
    all.push(operation(
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
            ),
        report_metrics,
    ));
    all.push(operation(
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
            ),
        relay_post_status,
    ));
}

// ---------------------------------------------------------------------------------------------
// Post cards, shared with the Personal API

/// A media item on a post, with signed links.
#[derive(Debug, Serialize, ToSchema)]
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

/// Signs the links of a post's media.
pub struct LinkSigner<'a> {
    links: &'a Links,
    base: String,
    expires: i64,
}

impl<'a> LinkSigner<'a> {
    pub fn new(ctx: &'a Ctx) -> LinkSigner<'a> {
        LinkSigner {
            links: &ctx.links,
            base: ctx.base_url(),
            expires: Links::expiry(Timestamp::now()),
        }
    }

    pub fn media(&self, card: &PostCard) -> Vec<PostMediaOut> {
        card.media
            .iter()
            .map(|m| PostMediaOut {
                id: m.id,
                kind: m.kind,
                url: self
                    .links
                    .url(&self.base, m.id, Variant::File, self.expires),
                thumb_url: self
                    .links
                    .url(&self.base, m.id, Variant::Thumb, self.expires),
                mime_type: m.mime_type.mime().to_owned(),
                caption: m.caption.clone(),
                duration_ms: m.duration_ms,
            })
            .collect()
    }
}

/// A post as the Personal API lists it.
#[derive(Debug, Serialize, ToSchema)]
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
}

pub fn post_out(card: PostCard, signer: &LinkSigner<'_>) -> PostOut {
    let media = signer.media(&card);
    PostOut {
        id: card.id,
        status: card.status,
        workspace: card.workspace,
        project: card.project,
        code: card.code,
        platform: card.platform,
        persona: card.persona,
        handle: card.handle,
        timezone: card.timezone,
        body: card.body,
        topic: card.topic,
        sponsored: card.sponsored,
        planned_at: card.planned_at.map(Utc),
        characters: card.characters,
        media,
        agent: card.agent,
        created_at: Utc(card.created_at),
        reported: card.reported,
        metrics: card.metrics,
    }
}

// ---------------------------------------------------------------------------------------------
// GET /posts/approved

#[derive(Debug, Serialize, ToSchema)]
pub struct ApprovedList {
    pub posts: Vec<ApprovedPost>,
    pub links_expire_in_seconds: i64,
}

#[derive(Debug, Serialize, ToSchema)]
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

/// The approved list's limit in the specification.
const APPROVED_MAX: i64 = 200;

async fn list_approved(
    ctx: Ctx,
    agent: AgentCaller,
    _req: Req<Nothing, Nothing, Nothing>,
) -> Result<Reply<ApprovedList>, ApiError> {
    let cards = ctx.posts.approved(agent.agent_ref(), APPROVED_MAX).await?;
    let signer = LinkSigner::new(&ctx);
    Ok(Reply::ok(ApprovedList {
        posts: cards
            .into_iter()
            .map(|c| ApprovedPost {
                images: signer.media(&c),
                id: c.id,
                code: c.code,
                platform: c.platform,
                persona: c.persona,
                handle: c.handle,
                body: c.body,
                topic: c.topic,
                sponsored: c.sponsored,
                planned_at: c.planned_at.map(Utc),
                characters: c.characters,
            })
            .collect(),
        links_expire_in_seconds: Links::LIFETIME_SECONDS,
    }))
}

// ---------------------------------------------------------------------------------------------
// GET /posts/planned

#[derive(Debug, Deserialize, Validate, ToSchema)]
pub struct PlannedQuery {
    /// Market dates to look at, 1-14, default 7.
    #[validate(range(min = 1, max = 14))]
    #[schema(minimum = 1, maximum = 14)]
    pub days: Option<u32>,
    /// The first date (`YYYY-MM-DD`); default today in each market.
    pub date: Option<DateInput>,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct PlannedPosts {
    pub days: Vec<PlannedDay>,
    pub inventory: Vec<AccountInventory>,
}

async fn planned_posts(
    ctx: Ctx,
    agent: AgentCaller,
    req: Req<Nothing, PlannedQuery, Nothing>,
) -> Result<Reply<PlannedPosts>, ApiError> {
    let start = req.query.date.as_ref().map(|d| d.0);
    let (days, inventory) = ctx
        .accounts
        .planned(
            agent.agent_ref(),
            start,
            req.query.days.unwrap_or(7),
            Timestamp::now(),
        )
        .await?;
    Ok(Reply::ok(PlannedPosts { days, inventory }))
}

// ---------------------------------------------------------------------------------------------
// POST /posts/report

#[derive(Debug, Deserialize, Validate, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ReportBody {
    /// 1-200 reported posts; each is read and checked on its own.
    pub posts: Items<ReportItemIn, 1, 200>,
}

/// One reported post.
#[derive(Debug, Deserialize, Validate, ToSchema)]
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
            "properties": {"comment": {"type": "string", "pattern": super::common::not_blank_pattern()}},
        },
    }]})
}

#[derive(Debug, Serialize, ToSchema)]
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

#[derive(Debug, Serialize, ToSchema)]
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

#[derive(Debug, Serialize, ToSchema)]
pub struct ItemErrorOut {
    /// not_found, ambiguous_code, forbidden, rejected, invalid, invalid_request or conflict.
    pub code: String,
    pub message: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub field: Option<String>,
}

/// One item, read (its shape, limits and code checked as it was parsed).
fn raw_item(i: ReportItemIn) -> RawReportItem {
    RawReportItem {
        code: i.code.0,
        platform: i.platform,
        status: i.status,
        scheduled_for: i.scheduled_for.map(|t| t.0),
        published_at: i.published_at.map(|t| t.0),
        platform_post_id: i.platform_post_id.map(String::from),
        permalink: i.permalink.map(|l| l.0),
        body: i.body.map(String::from),
        topic: i.topic.map(String::from),
        has_media: i.has_media,
        sponsored: i.sponsored,
        post_id: i.post_id,
        failure_reason: i.failure_reason.map(String::from),
    }
}

async fn report_posts(
    ctx: Ctx,
    agent: AgentCaller,
    req: Req<Nothing, Nothing, ReportBody>,
) -> Result<Reply<ReportResult>, ApiError> {
    let items: Vec<_> = req
        .body
        .posts
        .read(|_, f| ItemError::Invalid {
            field: if f.field.is_empty() {
                "posts".into()
            } else {
                f.field
            },
            message: f.reason,
        })
        .into_iter()
        .map(|i| i.map(raw_item))
        .collect();
    let outcome = ctx
        .posts
        .report(agent.agent_ref(), items, Timestamp::now())
        .await?;
    let plan = &outcome.plan;
    let counts = plan.counts();
    let result = ReportResult {
        report_id: outcome.report_id,
        received_at: Utc(outcome.received_at),
        inserted: counts.inserted,
        updated: counts.updated,
        unchanged: counts.unchanged,
        ignored: counts.ignored,
        rejected: counts.rejected,
        results: plan
            .results
            .iter()
            .map(|r| ItemResultOut {
                index: r.index,
                ok: r.ok(),
                action: r.action,
                post_id: r.post_id,
                status: r.status,
                matched_by: r.matched_by,
                note: r.note.clone(),
                error: r.error.as_ref().map(|e| ItemErrorOut {
                    code: e.code().to_owned(),
                    message: e.message(),
                    field: e.field().map(str::to_owned),
                }),
                published_from_stock: r.published_from_stock.then_some(true),
                warning: r.warning.clone(),
            })
            .collect(),
    };
    if plan.all_rejected() {
        let mut e = ApiError::rejected(format!(
            "all {} posts were refused; nothing was written (see results)",
            result.rejected
        ));
        if let Value::Object(m) = json!(result) {
            for (k, v) in m {
                e = e.with_extra(&k, v);
            }
        }
        return Err(e);
    }
    Ok(Reply::ok(result))
}

// ---------------------------------------------------------------------------------------------
// POST /metrics

#[derive(Debug, Deserialize, Validate, ToSchema)]
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

async fn report_metrics(
    ctx: Ctx,
    agent: AgentCaller,
    req: Req<Nothing, Nothing, MetricsBody>,
) -> Result<Reply<MetricsOutcome>, ApiError> {
    let b = req.body;
    if b.posts.is_empty() && b.accounts.is_empty() {
        return Err(ApiError::invalid(
            "posts",
            "give at least one item in posts or accounts",
        ));
    }
    // An item that cannot be read is refused on its own, naming the field at fault.
    let unreadable = |list: &str, f: ItemFault| ItemError::Invalid {
        field: if f.field.is_empty() {
            list.to_owned()
        } else {
            f.field
        },
        message: f.reason,
    };
    let report = MetricsReport {
        captured_at: b.captured_at.0,
        posts: b
            .posts
            .read(|_, f| unreadable("posts", f))
            .into_iter()
            .map(|p| {
                p.map(|p| RawPostMetrics {
                    post_id: p.post_id,
                    code: p.code.map(|c| c.0),
                    platform: p.platform,
                    platform_post_id: p.platform_post_id.map(String::from),
                    counters: PostCounters {
                        views: p.views.map(Int::get),
                        likes: p.likes.map(Int::get),
                        replies: p.replies.map(Int::get),
                        reposts: p.reposts.map(Int::get),
                        shares: p.shares.map(Int::get),
                    },
                })
            })
            .collect(),
        accounts: b
            .accounts
            .read(|_, f| unreadable("accounts", f))
            .into_iter()
            .map(|a| {
                a.map(|a| RawAccountMetrics {
                    code: a.code.0,
                    platform: a.platform,
                    followers: a.followers.map(Int::get),
                })
            })
            .collect(),
    };
    let result = ctx
        .posts
        .report_metrics(agent.agent_ref(), &report, Timestamp::now())
        .await??;
    if result.posts_written == 0 && result.accounts_written == 0 {
        let mut e = ApiError::rejected("nothing could be recorded; see refused");
        e = e.with_extra("refused", &result.refused);
        return Err(e);
    }
    Ok(Reply::ok(result))
}

// ---------------------------------------------------------------------------------------------
// POST /posts/{id}/transition (relay)

#[derive(Debug, Deserialize, Validate, ToSchema)]
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

#[derive(Debug, Serialize, ToSchema)]
pub struct TransitionReply {
    pub post: Transitioned,
}

impl From<Transitioned> for TransitionReply {
    fn from(post: Transitioned) -> TransitionReply {
        TransitionReply { post }
    }
}

// ---------------------------------------------------------------------------------------------
// Refusals: how the API answers each refusal of the post lifecycle

impl From<TransitionRefusal> for ApiError {
    fn from(r: TransitionRefusal) -> ApiError {
        match r {
            TransitionRefusal::NotFound => ApiError::not_found("no such post"),
            TransitionRefusal::NotYours => {
                ApiError::forbidden("this post belongs to another agent's account")
            }
            TransitionRefusal::PlannedAt(e) => ApiError::invalid("planned_at", e),
            TransitionRefusal::PlannedInPast => {
                ApiError::rejected("planned_at: must be in the future").with_field("planned_at")
            }
            TransitionRefusal::Move(MoveRefusal::CommentRequired(to)) => {
                ApiError::invalid("comment", format!("is required to move a post to {to}"))
            }
            TransitionRefusal::Move(MoveRefusal::NoReviewRight) => {
                ApiError::forbidden("this client has no review right")
            }
            TransitionRefusal::Move(MoveRefusal::Rule(why)) => ApiError::rejected(why),
        }
    }
}

impl From<MetricsRefusal> for ApiError {
    fn from(MetricsRefusal::CapturedAt(why): MetricsRefusal) -> ApiError {
        ApiError::rejected(format!("captured_at: {why}")).with_field("captured_at")
    }
}

async fn relay_post_status(
    ctx: Ctx,
    agent: AgentCaller,
    req: Req<IdPath, Nothing, RelayTransitionBody>,
) -> Result<Reply<TransitionReply>, ApiError> {
    let b = req.body;
    let role = match b.on_behalf_of.role {
        OnBehalfRoleIn::Agency => ReviewerRole::Agency,
        // The agent relays a decision the client said they made; the client's review right is
        // theirs to have.
        OnBehalfRoleIn::Client => ReviewerRole::Client { review: true },
        OnBehalfRoleIn::Admin => ReviewerRole::Admin,
    };
    let relay = RelayRecord::new(&agent, &b.on_behalf_of, &b.origin, b.effective_at.as_ref())?;
    let reviewer = Reviewer {
        role,
        name: b.on_behalf_of.name.0.clone(),
        person_id: None,
        relay: Some(relay.to_json()),
    };
    let request = TransitionRequest {
        post_id: req.path.id,
        to: b.to,
        comment: b.comment.map(String::from),
        planned_at: b.planned_at.map(|t| t.0),
    };
    let transitioned = ctx
        .posts
        .transition(
            ReviewScope::Agent(agent.agent_ref()),
            &reviewer,
            &request,
            Timestamp::now(),
        )
        .await??;
    Ok(Reply::ok(transitioned.into()))
}
