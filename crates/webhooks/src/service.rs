//! The webhook use cases: managing endpoints (a secret is made here and shown once), and one
//! round of delivery ([`WebhookService::deliver_round`]), which the application runs in a
//! task of its own so a slow receiver holds no other work.

use std::sync::Arc;

use fleetdesk_kernel::{Page, Position};
use jiff::Timestamp;
use uuid::Uuid;

use crate::delivery::{Claimed, DeliveryStatus, settle};
use crate::endpoint::EndpointUrl;
use crate::endpoints::{
    DeliveryRecord, EndpointPatch, EndpointRecord, NewEndpoint, ROTATION_OVERLAP, Replay,
    WebhookRefusal, normalized_types,
};
use crate::ports::{Manager, Outgoing, WebhookRepo, WebhookSender};
use crate::secret::WebhookSecret;
use fleetdesk_kernel::events::EventKind;

/// Events handed on per round at most.
pub const DISPATCH_BATCH: i64 = 500;
/// Deliveries attempted at once per round at most.
pub const ATTEMPTS_PER_ROUND: i64 = 32;
/// How long a taken delivery is its instance's: well past the sender's timeout.
pub const LEASE_SECONDS: i64 = 60;

/// An endpoint a person asks for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EndpointInput {
    pub workspace_id: Uuid,
    pub url: String,
    pub description: Option<String>,
    pub types: Vec<EventKind>,
    pub enabled: bool,
}

/// A change a person asks for.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct PatchInput {
    pub url: Option<String>,
    pub description: Option<String>,
    pub types: Option<Vec<EventKind>>,
    pub enabled: Option<bool>,
}

/// What one round of delivery did.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Round {
    /// Events handed on to endpoints.
    pub dispatched: usize,
    /// Attempts made.
    pub attempted: usize,
    pub delivered: usize,
}

impl Round {
    /// Whether the round found nothing to do.
    pub fn idle(&self) -> bool {
        self.dispatched == 0 && self.attempted == 0
    }
}

#[derive(Clone)]
pub struct WebhookService {
    repo: Arc<dyn WebhookRepo>,
    sender: Arc<dyn WebhookSender>,
    allow_http: bool,
}

impl WebhookService {
    /// `allow_http`: the server runs with the flag that lets endpoints use plain http.
    pub fn new(
        repo: Arc<dyn WebhookRepo>,
        sender: Arc<dyn WebhookSender>,
        allow_http: bool,
    ) -> Self {
        WebhookService {
            repo,
            sender,
            allow_http,
        }
    }

    fn url(&self, text: &str) -> Result<EndpointUrl, WebhookRefusal> {
        EndpointUrl::parse(text, self.allow_http).map_err(WebhookRefusal::Url)
    }

    /// Registers an endpoint: the record and its secret, shown this once.
    pub async fn create(
        &self,
        manager: Manager,
        input: EndpointInput,
    ) -> anyhow::Result<Result<(EndpointRecord, String), WebhookRefusal>> {
        let url = match self.url(&input.url) {
            Ok(url) => url,
            Err(refusal) => return Ok(Err(refusal)),
        };
        let endpoint = NewEndpoint {
            workspace_id: input.workspace_id,
            url,
            description: input.description,
            types: normalized_types(&input.types),
            enabled: input.enabled,
        };
        let secret = WebhookSecret::generate()?.to_string();
        Ok(self
            .repo
            .create(manager, &endpoint, &secret)
            .await?
            .map(|record| (record, secret)))
    }

    pub async fn list(
        &self,
        manager: Manager,
        workspace: Option<Uuid>,
    ) -> anyhow::Result<Vec<EndpointRecord>> {
        self.repo.list(manager, workspace).await
    }

    pub async fn update(
        &self,
        manager: Manager,
        id: Uuid,
        input: PatchInput,
    ) -> anyhow::Result<Result<EndpointRecord, WebhookRefusal>> {
        let url = match input.url.as_deref().map(|u| self.url(u)).transpose() {
            Ok(url) => url,
            Err(refusal) => return Ok(Err(refusal)),
        };
        let patch = EndpointPatch {
            url,
            description: input.description,
            types: input.types.as_deref().map(normalized_types),
            enabled: input.enabled,
        };
        self.repo.update(manager, id, &patch).await
    }

    pub async fn delete(
        &self,
        manager: Manager,
        id: Uuid,
    ) -> anyhow::Result<Result<(), WebhookRefusal>> {
        self.repo.delete(manager, id).await
    }

    /// A new secret, shown this once; the current one signs beside it for
    /// [`ROTATION_OVERLAP`] from `now`.
    pub async fn rotate(
        &self,
        manager: Manager,
        id: Uuid,
        now: Timestamp,
    ) -> anyhow::Result<Result<(EndpointRecord, String), WebhookRefusal>> {
        let secret = WebhookSecret::generate()?.to_string();
        Ok(self
            .repo
            .rotate(manager, id, &secret, now + ROTATION_OVERLAP)
            .await?
            .map(|record| (record, secret)))
    }

    pub async fn deliveries(
        &self,
        manager: Manager,
        id: Uuid,
        after: Option<Position>,
        limit: i64,
    ) -> anyhow::Result<Result<Page<DeliveryRecord>, WebhookRefusal>> {
        self.repo.deliveries(manager, id, after, limit).await
    }

    pub async fn replay(
        &self,
        manager: Manager,
        id: Uuid,
        replay: Replay,
    ) -> anyhow::Result<Result<i64, WebhookRefusal>> {
        self.repo.replay(manager, id, replay).await
    }

    /// One round: hands new events on to their endpoints, then attempts the due deliveries
    /// at once, each signed at the clock's time, and settles each (`jitter` draws the
    /// per-mille jitter of a retry's delay).
    pub async fn deliver_round(
        &self,
        clock: impl Fn() -> Timestamp,
        mut jitter: impl FnMut() -> u16,
    ) -> anyhow::Result<Round> {
        let dispatched = self.repo.dispatch(DISPATCH_BATCH).await?;
        let claimed = self.repo.claim(ATTEMPTS_PER_ROUND, LEASE_SECONDS).await?;
        let attempts = claimed.iter().map(|c| self.attempt(c, clock()));
        let outcomes = futures_util::future::join_all(attempts).await;
        let mut round = Round {
            dispatched,
            attempted: claimed.len(),
            delivered: 0,
        };
        for (claimed, outcome) in claimed.iter().zip(outcomes) {
            let now = clock();
            let settlement = settle(
                &outcome,
                claimed.attempt,
                claimed.failing_since,
                now,
                jitter(),
            );
            if settlement.status == DeliveryStatus::Delivered {
                round.delivered += 1;
            }
            if !self
                .repo
                .settle(claimed, &outcome, &settlement, now)
                .await?
            {
                let delivery = claimed.delivery_id;
                tracing::info!(%delivery, "another instance took the delivery");
            }
        }
        Ok(round)
    }

    async fn attempt(&self, claimed: &Claimed, now: Timestamp) -> crate::Outcome {
        match claimed.request(now, self.allow_http) {
            Ok(request) => {
                self.sender
                    .send(Outgoing {
                        url: &request.url,
                        headers: request.headers.clone(),
                        body: &request.body,
                    })
                    .await
            }
            Err(reason) => crate::Outcome::failed(reason, 0),
        }
    }
}
