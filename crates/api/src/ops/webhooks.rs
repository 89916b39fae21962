//! Personal API: webhook endpoints (register, change, delete, rotate the secret), their
//! delivery log and replays. The operations and their types are `fleetdesk_webhooks::wire`,
//! the rules `fleetdesk_webhooks`; each request runs whole in the adapter's transaction.

use crate::ctx::Ctx;
use crate::error::ApiError;
use crate::input::{Nothing, Req};
use crate::op::{ErasedOp, Reply, bind};
use fleetdesk_kernel::wire::fields::{Cursor, IdPath, limit_or};
use fleetdesk_tenancy::MemberCaller;
use fleetdesk_webhooks::endpoints::Replay;
use fleetdesk_webhooks::service::{EndpointInput, PatchInput};
use fleetdesk_webhooks::wire::{
    CreateWebhookBody, DeletedReply, DeliveriesQuery, DeliveriesReply, DeliveryOut, ReplayBody,
    ReplayReply, UpdateWebhookBody, WebhookOut, WebhookWithSecret, WebhooksQuery, WebhooksReply,
    personal,
};
use fleetdesk_webhooks::{Manager, WebhookRefusal};
use jiff::Timestamp;

pub use fleetdesk_webhooks::wire::replay_rules;

pub fn register(all: &mut Vec<Box<dyn ErasedOp>>) {
    all.push(bind::<personal::ListWebhooks, _, _, _>(list));
    all.push(bind::<personal::CreateWebhook, _, _, _>(create));
    all.push(bind::<personal::UpdateWebhook, _, _, _>(update));
    all.push(bind::<personal::DeleteWebhook, _, _, _>(delete));
    all.push(bind::<personal::RotateWebhookSecret, _, _, _>(rotate));
    all.push(bind::<personal::ListWebhookDeliveries, _, _, _>(deliveries));
    all.push(bind::<personal::ReplayWebhook, _, _, _>(replay));
}

impl From<WebhookRefusal> for ApiError {
    fn from(r: WebhookRefusal) -> ApiError {
        let message = r.to_string();
        match r {
            WebhookRefusal::NotFound => ApiError::not_found(message),
            WebhookRefusal::UnknownWorkspace => {
                ApiError::not_found(message).with_field("workspace_id")
            }
            WebhookRefusal::Url(_) => ApiError::rejected(message).with_field("url"),
            WebhookRefusal::TooMany => ApiError::rejected(message),
            WebhookRefusal::UnknownDelivery => {
                ApiError::not_found(message).with_field("delivery_id")
            }
        }
    }
}

fn manager(m: &MemberCaller) -> Manager {
    Manager {
        organization_id: m.organization_id,
    }
}

async fn list(
    ctx: Ctx,
    m: MemberCaller,
    req: Req<Nothing, WebhooksQuery, Nothing>,
) -> Result<Reply<WebhooksReply>, ApiError> {
    let endpoints = ctx.webhooks.list(manager(&m), req.query.workspace).await?;
    Ok(Reply::ok(WebhooksReply {
        endpoints: endpoints.into_iter().map(WebhookOut::from).collect(),
    }))
}

async fn create(
    ctx: Ctx,
    m: MemberCaller,
    req: Req<Nothing, Nothing, CreateWebhookBody>,
) -> Result<Reply<WebhookWithSecret>, ApiError> {
    let b = req.body;
    let input = EndpointInput {
        workspace_id: b.workspace_id,
        url: b.url.0,
        description: b.description.map(|d| d.0.trim().to_owned()),
        types: b.types.map(|t| t.0).unwrap_or_default(),
        enabled: b.enabled.unwrap_or(true),
    };
    let (endpoint, secret) = ctx.webhooks.create(manager(&m), input).await??;
    Ok(Reply::created(WebhookWithSecret {
        endpoint: endpoint.into(),
        secret,
    }))
}

async fn update(
    ctx: Ctx,
    m: MemberCaller,
    req: Req<IdPath, Nothing, UpdateWebhookBody>,
) -> Result<Reply<WebhookOut>, ApiError> {
    let b = req.body;
    let input = PatchInput {
        url: b.url.map(|u| u.0),
        description: b.description.map(|d| d.0.trim().to_owned()),
        types: b.types.map(|t| t.0),
        enabled: b.enabled,
    };
    let endpoint = ctx
        .webhooks
        .update(manager(&m), req.path.id, input)
        .await??;
    Ok(Reply::ok(endpoint.into()))
}

async fn delete(
    ctx: Ctx,
    m: MemberCaller,
    req: Req<IdPath, Nothing, Nothing>,
) -> Result<Reply<DeletedReply>, ApiError> {
    ctx.webhooks.delete(manager(&m), req.path.id).await??;
    Ok(Reply::ok(DeletedReply { deleted: true }))
}

async fn rotate(
    ctx: Ctx,
    m: MemberCaller,
    req: Req<IdPath, Nothing, Nothing>,
) -> Result<Reply<WebhookWithSecret>, ApiError> {
    let (endpoint, secret) = ctx
        .webhooks
        .rotate(manager(&m), req.path.id, Timestamp::now())
        .await??;
    Ok(Reply::ok(WebhookWithSecret {
        endpoint: endpoint.into(),
        secret,
    }))
}

async fn deliveries(
    ctx: Ctx,
    m: MemberCaller,
    req: Req<IdPath, DeliveriesQuery, Nothing>,
) -> Result<Reply<DeliveriesReply>, ApiError> {
    let page = ctx
        .webhooks
        .deliveries(
            manager(&m),
            req.path.id,
            req.query.cursor.map(|c| c.0),
            limit_or(req.query.limit, 50),
        )
        .await??;
    Ok(Reply::ok(DeliveriesReply {
        deliveries: page.items.into_iter().map(DeliveryOut::from).collect(),
        next_cursor: page.next.map(Cursor),
    }))
}

async fn replay(
    ctx: Ctx,
    m: MemberCaller,
    req: Req<IdPath, Nothing, ReplayBody>,
) -> Result<Reply<ReplayReply>, ApiError> {
    let what = match (req.body.delivery_id, req.body.since) {
        (Some(delivery), None) => Replay::Delivery(delivery),
        (None, Some(since)) => Replay::Since(since.0),
        (None, None) => Replay::Failed,
        (Some(_), Some(_)) => {
            return Err(ApiError::invalid(
                "delivery_id",
                "give delivery_id or since, not both",
            ));
        }
    };
    let replayed = ctx
        .webhooks
        .replay(manager(&m), req.path.id, what)
        .await??;
    Ok(Reply::ok(ReplayReply { replayed }))
}
