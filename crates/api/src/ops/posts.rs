//! Agent API: the approved list, the planning view, reports, metrics and the relay of a
//! person's review decision.

use super::drafts::IdPath;
use super::relay::{OnBehalfRoleIn, RelayRecord};
use crate::ctx::Ctx;
use crate::error::ApiError;
use crate::fields::{Int, ItemFault, ReadItems, Utc};
use crate::input::{Nothing, Req};
use crate::links::{Links, Variant};
use crate::op::bind;
use crate::op::{ErasedOp, Reply};
use fleetdesk_posts::metrics::PostCounters;
use fleetdesk_posts::ports::{
    MetricsOutcome, MetricsRefusal, MetricsReport, PostCard, RawAccountMetrics, RawPostMetrics,
    RawReportItem, ReviewScope, Reviewer, TransitionRefusal, TransitionRequest,
};
use fleetdesk_posts::report::ItemError;
use fleetdesk_posts::review::{MoveRefusal, ReviewerRole};
pub use fleetdesk_posts::wire::{
    AccountMetricsIn, ApprovedList, ApprovedPost, ItemErrorOut, ItemResultOut, MetricsBody,
    PlannedPosts, PlannedQuery, PostMediaOut, PostMetricsIn, PostOut, RelayTransitionBody,
    ReportBody, ReportItemIn, ReportResult, TransitionReply, agent,
};
pub use fleetdesk_posts::wire::{
    comment_rules, metrics_rules, post_metrics_rules, report_item_rules,
};
use fleetdesk_tenancy::AgentCaller;
use jiff::Timestamp;
use serde_json::{Value, json};

pub fn register(all: &mut Vec<Box<dyn ErasedOp>>) {
    all.push(bind::<agent::ListApproved, _, _, _>(list_approved));
    all.push(bind::<agent::GetPlannedPosts, _, _, _>(planned_posts));
    all.push(bind::<agent::ReportPosts, _, _, _>(report_posts));
    all.push(bind::<agent::ReportMetrics, _, _, _>(report_metrics));
    all.push(bind::<agent::RelayPostStatus, _, _, _>(relay_post_status));
}

/// Metrics items per request (the specification leaves it open).
pub const METRICS_MAX_ITEMS: u64 = 500;

// ---------------------------------------------------------------------------------------------
// Post cards, shared with the Personal API

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
        approved: card.approved,
        published_differs: card.published_differs.map(Into::into),
    }
}

// ---------------------------------------------------------------------------------------------
// GET /posts/approved

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
