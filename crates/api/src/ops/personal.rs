//! Personal API: who I am, the review queue, one post, review moves and published posts.
//! A member's role is read afresh on every request (the pipeline authenticates each call).
//! `GET /me` and its types are `fleetdesk_tenancy::wire`; the review and post operations and
//! their types are `fleetdesk_posts::wire::personal`, their handlers here.

use super::posts::{LinkSigner, post_out};
use crate::ctx::Ctx;
use crate::error::ApiError;
use crate::fields::{Cursor, IdPath, Utc, limit_or};
use crate::input::{Nothing, Req};
use crate::links::Links;
use crate::op::{ErasedOp, Reply, bind};
use fleetdesk_posts::ports::{
    PublishedQuery, ReviewQuery, ReviewScope, Reviewer, TransitionRequest, Viewer,
};
use fleetdesk_posts::review::ReviewerRole;
pub use fleetdesk_posts::wire::{
    Actor, PostDetailReply, PostOut, PostPage, PublishedQueryIn, RecordEntryOut, ReviewQueryIn,
    Stage, TransitionBody, TransitionReply,
};
use fleetdesk_tenancy::wire::{Me, personal};
use fleetdesk_tenancy::{MemberCaller, MemberRole};
use jiff::Timestamp;

pub fn register(all: &mut Vec<Box<dyn ErasedOp>>) {
    all.push(bind::<personal::Whoami, _, _, _>(whoami));
    all.push(bind::<fleetdesk_posts::wire::personal::ReviewQueue, _, _, _>(review_queue));
    all.push(bind::<fleetdesk_posts::wire::personal::GetPost, _, _, _>(
        get_post,
    ));
    all.push(bind::<fleetdesk_posts::wire::personal::ReviewPost, _, _, _>(review_post));
    all.push(bind::<
        fleetdesk_posts::wire::personal::ListPublished,
        _,
        _,
        _,
    >(published_posts));
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

async fn review_queue(
    ctx: Ctx,
    m: MemberCaller,
    req: Req<Nothing, ReviewQueryIn, Nothing>,
) -> Result<Reply<PostPage>, ApiError> {
    let query = ReviewQuery {
        stage: req.query.stage.map(Stage::status),
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
        record: detail.record.into_iter().map(Into::into).collect(),
        links_expire_in_seconds: Links::LIFETIME_SECONDS,
    }))
}

// ---------------------------------------------------------------------------------------------
// POST /posts/{id}/transition

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
