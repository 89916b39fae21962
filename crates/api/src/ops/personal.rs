//! Personal API: who I am, the review queue, one post, review moves and published posts.
//! A member's role is read afresh on every request (the pipeline authenticates each call).
//! `GET /me` and its types are `fleetdesk_tenancy::wire`; the review and post operations stay
//! here, their types being the posts' (`super::posts`).

use super::common::{CodeInput, CursorInput, IsoTimeInput, TimeInput};
use super::drafts::IdPath;
use super::posts::{LinkSigner, PostOut, TransitionReply, post_out};
use crate::ctx::Ctx;
use crate::error::ApiError;
use crate::fields::{Cursor, Limit, Text, Utc, limit_or};
use crate::input::{Nothing, Req};
use crate::links::Links;
use crate::op::{ErasedOp, HttpMethod, OpSpec, Reply, bind, operation};
use fleetdesk_posts::ports::{
    PublishedQuery, ReviewQuery, ReviewScope, Reviewer, TransitionRequest, Viewer,
};
use fleetdesk_posts::post::PostStatus;
use fleetdesk_posts::review::{ReviewTarget, ReviewerRole};
use fleetdesk_tenancy::wire::{Me, personal};
use fleetdesk_tenancy::{MemberCaller, MemberRole, PersonalAccess};
use jiff::Timestamp;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use utoipa::ToSchema;
use validator::Validate;

pub fn register(all: &mut Vec<Box<dyn ErasedOp>>) {
    use HttpMethod::{Get, Post};
    use PersonalAccess::{Member, Review};
    all.push(bind::<personal::Whoami, _, _, _>(whoami));
    all.push(operation(
        OpSpec::personal(Get, "/review", Member)
            .tool("review_queue")
            .summary("Posts waiting for review, oldest planned first")
            .description(
                "Agency people and admins see internal and client review (filter with stage); a \
                 client sees only posts in client review. Media links are signed and expire.",
            ),
        review_queue,
    ));
    all.push(operation(
        OpSpec::personal(Get, "/posts/{id}", Member)
            .tool("get_post")
            .summary("One post with its media links, what agents reported and its review record")
            .description("A client sees posts in client review or that went through it."),
        get_post,
    ));
    all.push(operation(
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
            ),
        review_post,
    ));
    all.push(operation(
        OpSpec::personal(Get, "/posts/published", Member)
            .tool("published_posts")
            .summary("Published posts, newest first, with their links and latest metrics")
            .description(
                "As agents reported them. A client sees posts that went through client review.",
            ),
        published_posts,
    ));
}

fn viewer(m: &MemberCaller) -> Viewer {
    Viewer {
        organization_id: m.organization_id,
        client: m.is_client(),
    }
}

// ---------------------------------------------------------------------------------------------
// GET /me

async fn whoami(
    _ctx: Ctx,
    m: MemberCaller,
    _req: Req<Nothing, Nothing, Nothing>,
) -> Result<Reply<Me>, ApiError> {
    Ok(Reply::ok(Me::of(&m)))
}

// ---------------------------------------------------------------------------------------------
// GET /review

#[derive(Debug, Clone, Copy, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum Stage {
    InternalReview,
    ClientReview,
}

#[derive(Debug, Deserialize, Validate, ToSchema)]
pub struct ReviewQueryIn {
    /// internal_review or client_review; default both (a client always gets client_review).
    pub stage: Option<Stage>,
    /// 1-200, default 50.
    pub limit: Option<Limit<200>>,
    /// `next_cursor` of the previous page.
    pub cursor: Option<CursorInput>,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct PostPage {
    pub posts: Vec<PostOut>,
    /// Pass as `cursor` for the next page; null on the last page.
    pub next_cursor: Option<Cursor>,
    pub links_expire_in_seconds: i64,
}

async fn review_queue(
    ctx: Ctx,
    m: MemberCaller,
    req: Req<Nothing, ReviewQueryIn, Nothing>,
) -> Result<Reply<PostPage>, ApiError> {
    let query = ReviewQuery {
        stage: req.query.stage.map(|s| match s {
            Stage::InternalReview => PostStatus::InternalReview,
            Stage::ClientReview => PostStatus::ClientReview,
        }),
        after: req.query.cursor.map(|c| c.0),
        limit: limit_or(req.query.limit, 50),
    };
    let page = ctx.posts.review_queue(viewer(&m), &query).await?;
    let signer = LinkSigner::new(&ctx);
    Ok(Reply::ok(PostPage {
        posts: page
            .items
            .into_iter()
            .map(|c| post_out(c, &signer))
            .collect(),
        next_cursor: page.next.map(Cursor),
        links_expire_in_seconds: Links::LIFETIME_SECONDS,
    }))
}

// ---------------------------------------------------------------------------------------------
// GET /posts/{id}

#[derive(Debug, Serialize, ToSchema)]
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

#[derive(Debug, Serialize, ToSchema)]
pub struct RecordEntryOut {
    pub action: String,
    /// The comment, instruction or reason.
    pub reason: Option<String>,
    pub actor: Actor,
    pub detail: Value,
    pub at: Utc,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct Actor {
    /// agent, member or service.
    pub kind: String,
    pub name: String,
}

async fn get_post(
    ctx: Ctx,
    m: MemberCaller,
    req: Req<IdPath, Nothing, Nothing>,
) -> Result<Reply<PostDetailReply>, ApiError> {
    let detail = ctx
        .posts
        .post(viewer(&m), req.path.id)
        .await?
        .ok_or_else(|| ApiError::not_found("no such post"))?;
    let signer = LinkSigner::new(&ctx);
    Ok(Reply::ok(PostDetailReply {
        post: post_out(detail.card, &signer),
        client_review: detail.client_review,
        stocked_at: detail.stocked_at.map(Utc),
        stock_reason: detail.stock_reason,
        record: detail
            .record
            .into_iter()
            .map(|r| RecordEntryOut {
                action: r.action,
                reason: r.reason,
                actor: Actor {
                    kind: r.actor_kind,
                    name: r.actor_name,
                },
                detail: r.detail,
                at: Utc(r.at),
            })
            .collect(),
        links_expire_in_seconds: Links::LIFETIME_SECONDS,
    }))
}

// ---------------------------------------------------------------------------------------------
// POST /posts/{id}/transition

#[derive(Debug, Deserialize, Validate, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct TransitionBody {
    pub to: ReviewTarget,
    /// Required for sent_back (the send-back comment) and rewrite_requested (the instruction).
    pub comment: Option<Text<1, 2000>>,
    /// With `to: approved`: the planned time (ISO with zone or market-local, in the future);
    /// on an approved post it reschedules.
    pub planned_at: Option<TimeInput>,
}

async fn review_post(
    ctx: Ctx,
    m: MemberCaller,
    req: Req<IdPath, Nothing, TransitionBody>,
) -> Result<Reply<TransitionReply>, ApiError> {
    let role = if m.platform_admin {
        ReviewerRole::Admin
    } else {
        match m.role {
            Some(MemberRole::Agency) => ReviewerRole::Agency,
            Some(MemberRole::Client) => ReviewerRole::Client { review: m.review },
            None => return Err(ApiError::forbidden("not a member of an organization")),
        }
    };
    let reviewer = Reviewer {
        role,
        name: m.name.clone(),
        person_id: Some(m.person_id),
        relay: None,
    };
    let request = TransitionRequest {
        post_id: req.path.id,
        to: req.body.to,
        comment: req.body.comment.map(String::from),
        planned_at: req.body.planned_at.map(|t| t.0),
    };
    let transitioned = ctx
        .posts
        .transition(
            ReviewScope::Member(viewer(&m)),
            &reviewer,
            &request,
            Timestamp::now(),
        )
        .await??;
    Ok(Reply::ok(transitioned.into()))
}

// ---------------------------------------------------------------------------------------------
// GET /posts/published

#[derive(Debug, Deserialize, Validate, ToSchema)]
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

async fn published_posts(
    ctx: Ctx,
    m: MemberCaller,
    req: Req<Nothing, PublishedQueryIn, Nothing>,
) -> Result<Reply<PostPage>, ApiError> {
    let q = req.query;
    let query = PublishedQuery {
        code: q.code.map(|c| c.0),
        since: q.since.map(|t| t.0),
        after: q.cursor.map(|c| c.0),
        limit: limit_or(q.limit, 50),
    };
    let page = ctx.posts.published(viewer(&m), &query).await?;
    let signer = LinkSigner::new(&ctx);
    Ok(Reply::ok(PostPage {
        posts: page
            .items
            .into_iter()
            .map(|c| post_out(c, &signer))
            .collect(),
        next_cursor: page.next.map(Cursor),
        links_expire_in_seconds: Links::LIFETIME_SECONDS,
    }))
}
