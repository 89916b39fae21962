//! Endpoints as people register them: what one is, what a change may set, rotation and
//! replay, and the refusals.

use fleetdesk_kernel::events::EventKind;
use jiff::{SignedDuration, Timestamp};
use uuid::Uuid;

use crate::delivery::DeliveryStatus;
use crate::endpoint::{EndpointUrl, UrlRefusal};

/// How long the secret a rotation replaces still signs, beside the new one.
pub const ROTATION_OVERLAP: SignedDuration = SignedDuration::from_hours(24);

/// The most endpoints a workspace may have.
pub const MAX_PER_WORKSPACE: i64 = 20;

/// An endpoint as stored (its secrets are not part of it: they are shown once).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EndpointRecord {
    pub id: Uuid,
    pub workspace_id: Uuid,
    pub url: String,
    pub description: Option<String>,
    /// The event types it receives; none: every type.
    pub types: Vec<EventKind>,
    pub enabled: bool,
    /// Why the service disabled it.
    pub disabled_reason: Option<String>,
    /// Since when its deliveries fail without a success.
    pub failing_since: Option<Timestamp>,
    /// Until when the secret a rotation replaced still signs.
    pub previous_secret_until: Option<Timestamp>,
    pub created_at: Timestamp,
    pub updated_at: Timestamp,
}

/// A new endpoint.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewEndpoint {
    pub workspace_id: Uuid,
    pub url: EndpointUrl,
    pub description: Option<String>,
    pub types: Vec<EventKind>,
    pub enabled: bool,
}

/// What a change sets; `None` leaves a field as it is.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct EndpointPatch {
    pub url: Option<EndpointUrl>,
    pub description: Option<String>,
    pub types: Option<Vec<EventKind>>,
    pub enabled: Option<bool>,
}

impl EndpointPatch {
    /// Whether turning the endpoint on clears what the service noted when it disabled it
    /// (a person enabling it again starts it afresh).
    pub fn revives(&self) -> bool {
        self.enabled == Some(true)
    }
}

/// The types an endpoint keeps: each once, in the catalogue's order (none: every type).
pub fn normalized_types(types: &[EventKind]) -> Vec<EventKind> {
    EventKind::ALL
        .into_iter()
        .filter(|k| types.contains(k))
        .collect()
}

/// What to deliver again.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Replay {
    /// One delivery, whatever it came to.
    Delivery(Uuid),
    /// Every event the endpoint receives since then (kept events only: 30 days).
    Since(Timestamp),
    /// Every delivery of the endpoint that failed.
    Failed,
}

/// One delivery as its log shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeliveryRecord {
    pub id: Uuid,
    pub event_id: Uuid,
    pub event_type: String,
    pub status: DeliveryStatus,
    pub attempts: i32,
    pub next_at: Option<Timestamp>,
    pub created_at: Timestamp,
    pub delivered_at: Option<Timestamp>,
    pub log: Vec<AttemptRecord>,
}

/// One attempt of the log.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AttemptRecord {
    pub at: Timestamp,
    pub status_code: Option<i32>,
    pub error: Option<String>,
    pub latency_ms: i32,
    pub body_excerpt: String,
}

/// Why an endpoint request is refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum WebhookRefusal {
    #[error("no such webhook endpoint in your organization")]
    NotFound,
    #[error("workspace_id: no such workspace in your organization")]
    UnknownWorkspace,
    #[error("{0}")]
    Url(UrlRefusal),
    #[error("a workspace has at most {MAX_PER_WORKSPACE} webhook endpoints")]
    TooMany,
    #[error("delivery_id: no such delivery of this endpoint")]
    UnknownDelivery,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn types_are_kept_once_in_catalogue_order() {
        let kept = normalized_types(&[
            EventKind::TaskClaimed,
            EventKind::PostMoved,
            EventKind::TaskClaimed,
        ]);
        assert_eq!(kept, [EventKind::PostMoved, EventKind::TaskClaimed]);
        assert!(normalized_types(&[]).is_empty());
    }

    #[test]
    fn only_enabling_revives_an_endpoint() {
        assert!(
            EndpointPatch {
                enabled: Some(true),
                ..Default::default()
            }
            .revives()
        );
        assert!(
            !EndpointPatch {
                enabled: Some(false),
                ..Default::default()
            }
            .revives()
        );
        assert!(!EndpointPatch::default().revives());
    }
}
