//! The webhooks' part of the interface (feature `wire`): the Personal API operations that
//! manage endpoints, read their delivery log and replay deliveries.

use crate::delivery::DeliveryStatus;
use crate::endpoints::{AttemptRecord, DeliveryRecord, EndpointRecord};
use fleetdesk_kernel::events::EventKind;
use fleetdesk_kernel::wire::fields::{Cursor, Limit, List, Text, Utc};
use fleetdesk_kernel::wire::strings::{CursorInput, IsoTimeInput, LinkInput};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;
use uuid::Uuid;
use validator::Validate;

/// The most event types an endpoint names: every type of the catalogue.
const MAX_TYPES: usize = EventKind::ALL.len();

/// An endpoint as the Personal API answers it (never its secret).
#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct WebhookOut {
    pub id: Uuid,
    pub workspace_id: Uuid,
    pub url: String,
    pub description: Option<String>,
    /// The event types it receives; empty: every type.
    pub types: Vec<EventKind>,
    pub enabled: bool,
    /// Why the service disabled it (its deliveries failed for 5 days); null otherwise.
    pub disabled_reason: Option<String>,
    /// Since when its deliveries fail without a success (ISO UTC).
    pub failing_since: Option<Utc>,
    /// Until when the secret the last rotation replaced still signs (ISO UTC).
    pub previous_secret_until: Option<Utc>,
    pub created_at: Utc,
    pub updated_at: Utc,
}

impl From<EndpointRecord> for WebhookOut {
    fn from(e: EndpointRecord) -> WebhookOut {
        WebhookOut {
            id: e.id,
            workspace_id: e.workspace_id,
            url: e.url,
            description: e.description,
            types: e.types,
            enabled: e.enabled,
            disabled_reason: e.disabled_reason,
            failing_since: e.failing_since.map(Utc),
            previous_secret_until: e.previous_secret_until.map(Utc),
            created_at: Utc(e.created_at),
            updated_at: Utc(e.updated_at),
        }
    }
}

/// An endpoint with its secret: the only answer that shows it.
#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct WebhookWithSecret {
    pub endpoint: WebhookOut,
    /// `whsec_` and the base64 of 32 random bytes: verify deliveries with it (any Standard
    /// Webhooks library). Shown only in this answer.
    pub secret: String,
}

#[derive(Debug, Serialize, Deserialize, Validate, ToSchema)]
pub struct WebhooksQuery {
    /// Only this workspace's endpoints.
    pub workspace: Option<Uuid>,
}

#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct WebhooksReply {
    /// Oldest first.
    pub endpoints: Vec<WebhookOut>,
}

#[derive(Debug, Serialize, Deserialize, Validate, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct CreateWebhookBody {
    /// A workspace of your organization.
    pub workspace_id: Uuid,
    /// An http(s) link of at most 2000 characters; https unless the server allows http, with
    /// no user name or password and no fragment (422 naming url otherwise). Addresses that
    /// resolve to loopback, private, link-local or metadata networks are never called.
    pub url: LinkInput,
    pub description: Option<Text<0, 500>>,
    /// The event types to receive; absent or empty: every type.
    pub types: Option<List<EventKind, 0, { MAX_TYPES }>>,
    /// Default true.
    pub enabled: Option<bool>,
}

#[derive(Debug, Serialize, Deserialize, Validate, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct UpdateWebhookBody {
    /// As when it was registered.
    pub url: Option<LinkInput>,
    pub description: Option<Text<0, 500>>,
    /// Empty: every type.
    pub types: Option<List<EventKind, 0, { MAX_TYPES }>>,
    /// true turns on an endpoint the service disabled, afresh.
    pub enabled: Option<bool>,
}

#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct DeletedReply {
    pub deleted: bool,
}

#[derive(Debug, Serialize, Deserialize, Validate, ToSchema)]
pub struct DeliveriesQuery {
    /// 1-200, default 50.
    pub limit: Option<Limit<200>>,
    /// `next_cursor` of the previous page.
    pub cursor: Option<CursorInput>,
}

/// One attempt of a delivery.
#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct AttemptOut {
    pub at: Utc,
    /// The receiver's status; null when none came.
    pub status_code: Option<i32>,
    /// Why no answer came (refused address, timeout, connection).
    pub error: Option<String>,
    pub latency_ms: i32,
    /// The start of the receiver's answer (at most 4 KiB read).
    pub body_excerpt: String,
}

impl From<AttemptRecord> for AttemptOut {
    fn from(a: AttemptRecord) -> AttemptOut {
        AttemptOut {
            at: Utc(a.at),
            status_code: a.status_code,
            error: a.error,
            latency_ms: a.latency_ms,
            body_excerpt: a.body_excerpt,
        }
    }
}

/// A delivery of one event to the endpoint.
#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct DeliveryOut {
    pub id: Uuid,
    pub event_id: Uuid,
    pub event_type: String,
    pub status: DeliveryStatus,
    /// Attempts of the current series (a replay starts a new one).
    pub attempts: i32,
    /// The next attempt, while pending.
    pub next_attempt_at: Option<Utc>,
    pub created_at: Utc,
    pub delivered_at: Option<Utc>,
    /// Every attempt, oldest first.
    pub log: Vec<AttemptOut>,
}

impl From<DeliveryRecord> for DeliveryOut {
    fn from(d: DeliveryRecord) -> DeliveryOut {
        DeliveryOut {
            id: d.id,
            event_id: d.event_id,
            event_type: d.event_type,
            status: d.status,
            attempts: d.attempts,
            next_attempt_at: d.next_at.map(Utc),
            created_at: Utc(d.created_at),
            delivered_at: d.delivered_at.map(Utc),
            log: d.log.into_iter().map(AttemptOut::from).collect(),
        }
    }
}

#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct DeliveriesReply {
    /// Newest first.
    pub deliveries: Vec<DeliveryOut>,
    /// Pass as `cursor` for the next page; null on the last page.
    pub next_cursor: Option<Cursor>,
}

#[derive(Debug, Serialize, Deserialize, Validate, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ReplayBody {
    /// One delivery of this endpoint to send again. At most one of delivery_id and since;
    /// neither: every delivery that failed.
    pub delivery_id: Option<Uuid>,
    /// Every event the endpoint receives since then (events are kept 30 days).
    pub since: Option<IsoTimeInput>,
}

#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct ReplayReply {
    /// Deliveries due again now.
    pub replayed: i64,
}

/// The people's operations (`/api/user/v1`).
pub mod personal {
    use super::*;
    use fleetdesk_kernel::access::PersonalAccess;
    use fleetdesk_kernel::op::{
        HttpMethod::{Get, Post, Put},
        Nothing, OpSpec,
    };
    use fleetdesk_kernel::wire::fields::IdPath;

    fleetdesk_kernel::operations! {
        /// The webhook endpoints of your organization's workspaces.
        pub ListWebhooks(Nothing, WebhooksQuery, Nothing) -> WebhooksReply =
            OpSpec::personal(Get, "/webhooks", PersonalAccess::Agency)
                .tool("list_webhooks")
                .summary("The webhook endpoints of your organization's workspaces")
                .description(concat!(
                    "Agency people and platform admins; clients are refused (403). ",
                    "Oldest first; `workspace` narrows to one workspace (one outside your \
                     organization lists nothing). Secrets are never shown here."
                ));

        /// Register a webhook endpoint for a workspace; its secret is shown once.
        pub CreateWebhook(Nothing, Nothing, CreateWebhookBody) -> WebhookWithSecret =
            OpSpec::personal(Post, "/webhooks", PersonalAccess::Agency)
                .tool("create_webhook")
                .created()
                .also_answers(&[404])
                .summary("Register a webhook endpoint for a workspace; its secret is shown once")
                .description(concat!(
                    "Agency people and platform admins; clients are refused (403). ",
                    "Events of the workspace (of `types`, default every type) are delivered to \
                     `url` as signed POSTs after the Standard Webhooks specification \
                     (webhook-id, webhook-timestamp, webhook-signature: HMAC-SHA256 with the \
                     `whsec_` secret this answer shows once), at least once, retried for \
                     about three days (5 s, 5 min, 30 min, 2 h, 5 h, 10 h, 14 h, 20 h, 20 h, \
                     with jitter); an endpoint failing for 5 days is disabled. url must be \
                     https (http only when the server allows it); addresses resolving to \
                     loopback, private, link-local or metadata networks are refused when \
                     called; redirects are not followed. A workspace outside your \
                     organization is 404; a url that is no http(s) link is 400, one the \
                     rules above refuse 422, each naming url; a workspace with 20 endpoints \
                     is 422. Not idempotent: the answer holds a secret, and no \
                     stored answer may."
                ));

        /// Change a webhook endpoint: url, description, types, enabled.
        pub UpdateWebhook(IdPath, Nothing, UpdateWebhookBody) -> WebhookOut =
            OpSpec::personal(Put, "/webhooks/{id}", PersonalAccess::Agency)
                .tool("update_webhook")
                .idempotent()
                .also_answers(&[404])
                .summary("Change a webhook endpoint: url, description, types, enabled")
                .description(concat!(
                    "Agency people and platform admins; clients are refused (403). ",
                    "Fields left out stay as they are; `types` empty means every type. \
                     enabled true turns on an endpoint the service disabled, afresh. An \
                     endpoint outside your organization is 404."
                ));

        /// Delete a webhook endpoint and its delivery log.
        pub DeleteWebhook(IdPath, Nothing, Nothing) -> DeletedReply =
            OpSpec::personal(Post, "/webhooks/{id}/delete", PersonalAccess::Agency)
                .tool("delete_webhook")
                .idempotent()
                .also_answers(&[404])
                .summary("Delete a webhook endpoint and its delivery log")
                .description(concat!(
                    "Agency people and platform admins; clients are refused (403). ",
                    "Pending deliveries are dropped. An endpoint outside your organization, or \
                     deleted already, is 404."
                ));

        /// A new secret for a webhook endpoint; the old one signs beside it for 24 hours.
        pub RotateWebhookSecret(IdPath, Nothing, Nothing) -> WebhookWithSecret =
            OpSpec::personal(Post, "/webhooks/{id}/rotate", PersonalAccess::Agency)
                .tool("rotate_webhook_secret")
                .also_answers(&[404])
                .summary(
                    "A new secret for a webhook endpoint; the old one signs beside it for 24 hours",
                )
                .description(concat!(
                    "Agency people and platform admins; clients are refused (403). ",
                    "The answer shows the new secret once. For 24 hours every delivery is \
                     signed by both (two `v1,` signatures in webhook-signature), so receivers \
                     switch without losing one; a second rotation within them drops the \
                     oldest. Not idempotent: the answer holds a secret. An endpoint outside \
                     your organization is 404."
                ));

        /// A webhook endpoint's delivery log: each delivery with its attempts, newest first.
        pub ListWebhookDeliveries(IdPath, DeliveriesQuery, Nothing) -> DeliveriesReply =
            OpSpec::personal(Get, "/webhooks/{id}/deliveries", PersonalAccess::Agency)
                .tool("list_webhook_deliveries")
                .also_answers(&[404])
                .summary(
                    "A webhook endpoint's delivery log: each delivery with its attempts, newest \
                     first",
                )
                .description(concat!(
                    "Agency people and platform admins; clients are refused (403). ",
                    "Each delivery: the event, its status (pending, delivered, failed), the \
                     attempts of its current series, the next attempt and every attempt's time, \
                     status code, latency, error and the start of the answer. Pages with limit \
                     1-200 (default 50) and cursor. An endpoint outside your organization is \
                     404."
                ));

        /// Deliver again: one delivery, or every event since a time.
        pub ReplayWebhook(IdPath, Nothing, ReplayBody) -> ReplayReply =
            OpSpec::personal(Post, "/webhooks/{id}/replay", PersonalAccess::Agency)
                .tool("replay_webhook")
                .idempotent()
                .also_answers(&[404])
                .summary("Deliver again: one delivery, or every event since a time")
                .description(concat!(
                    "Agency people and platform admins; clients are refused (403). ",
                    "At most one of `delivery_id` (a delivery of this endpoint, whatever it \
                     came to) and `since` (every kept event of the endpoint's workspace and \
                     types since then, kept 30 days, whether or not it was delivered); \
                     neither: every delivery of the endpoint that failed. Each is due now as \
                     a new series of attempts. Answers how many. An endpoint outside your \
                     organization is 404; a delivery of another endpoint is 404 naming \
                     delivery_id; both fields is 400."
                ));
    }
}

/// `ReplayBody`: not both delivery_id and since (a null one counts as absent).
pub fn replay_rules() -> serde_json::Value {
    serde_json::json!({"not": {
        "required": ["delivery_id", "since"],
        "properties": {"delivery_id": {"type": "string"}, "since": {"type": "string"}},
    }})
}
