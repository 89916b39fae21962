//! The port the HTTP adapter implements (`fleetdesk_vendors::webhook`).

use fleetdesk_kernel::BoxFuture;

use crate::attempt::Outcome;
use crate::endpoint::EndpointUrl;

/// One webhook request: a POST of `body` (JSON) to `url` with the Standard Webhooks headers.
#[derive(Debug, Clone)]
pub struct Outgoing<'a> {
    pub url: &'a EndpointUrl,
    /// [`crate::headers`].
    pub headers: [(&'static str, String); 3],
    pub body: &'a [u8],
}

/// Sends one attempt. Never fails: whatever happens is an [`Outcome`] (a status or an error),
/// for [`crate::judge`] to read. An implementation refuses addresses [`crate::forbidden`]
/// names, follows no redirect, keeps only the start of the answer's body and gives up after
/// its timeout.
pub trait WebhookSender: Send + Sync {
    fn send<'a>(&'a self, request: Outgoing<'a>) -> BoxFuture<'a, Outcome>;
}

/// Who manages endpoints: a member of an organization (none: a platform admin outside any,
/// who may manage every organization's).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Manager {
    pub organization_id: Option<uuid::Uuid>,
}

impl Manager {
    /// Whether the manager may manage what belongs to `organization`.
    pub fn sees(self, organization: uuid::Uuid) -> bool {
        self.organization_id.is_none_or(|o| o == organization)
    }
}

/// The endpoints and deliveries in storage; each method is one transaction.
pub trait WebhookRepo: Send + Sync {
    /// Stores `endpoint` with `secret` (`whsec_`), when its workspace is the manager's and
    /// has room.
    fn create<'a>(
        &'a self,
        manager: Manager,
        endpoint: &'a crate::endpoints::NewEndpoint,
        secret: &'a str,
    ) -> BoxFuture<
        'a,
        anyhow::Result<Result<crate::endpoints::EndpointRecord, crate::WebhookRefusal>>,
    >;

    /// The manager's endpoints (of one workspace when named), oldest first.
    fn list<'a>(
        &'a self,
        manager: Manager,
        workspace: Option<uuid::Uuid>,
    ) -> BoxFuture<'a, anyhow::Result<Vec<crate::endpoints::EndpointRecord>>>;

    /// Applies `patch` to endpoint `id`.
    fn update<'a>(
        &'a self,
        manager: Manager,
        id: uuid::Uuid,
        patch: &'a crate::endpoints::EndpointPatch,
    ) -> BoxFuture<
        'a,
        anyhow::Result<Result<crate::endpoints::EndpointRecord, crate::WebhookRefusal>>,
    >;

    /// Deletes endpoint `id` with its deliveries.
    fn delete(
        &self,
        manager: Manager,
        id: uuid::Uuid,
    ) -> BoxFuture<'_, anyhow::Result<Result<(), crate::WebhookRefusal>>>;

    /// Signs with `secret` from now on, the current secret alongside until `previous_until`.
    fn rotate<'a>(
        &'a self,
        manager: Manager,
        id: uuid::Uuid,
        secret: &'a str,
        previous_until: jiff::Timestamp,
    ) -> BoxFuture<
        'a,
        anyhow::Result<Result<crate::endpoints::EndpointRecord, crate::WebhookRefusal>>,
    >;

    /// Endpoint `id`'s deliveries, newest first, each with its attempts: a page after
    /// `after` (the last one's creation time and id).
    fn deliveries(
        &self,
        manager: Manager,
        id: uuid::Uuid,
        after: Option<fleetdesk_kernel::Position>,
        limit: i64,
    ) -> BoxFuture<
        '_,
        anyhow::Result<
            Result<fleetdesk_kernel::Page<crate::endpoints::DeliveryRecord>, crate::WebhookRefusal>,
        >,
    >;

    /// Makes the deliveries `replay` names due now as a new series of attempts (creating
    /// those of kept events the endpoint never had): how many.
    fn replay(
        &self,
        manager: Manager,
        id: uuid::Uuid,
        replay: crate::endpoints::Replay,
    ) -> BoxFuture<'_, anyhow::Result<Result<i64, crate::WebhookRefusal>>>;

    /// Hands the events numbered since the last dispatch to the endpoints that receive them
    /// ([`crate::fan_out`]), at most `limit` events, once however many instances dispatch:
    /// how many events it handed on.
    fn dispatch(&self, limit: i64) -> BoxFuture<'_, anyhow::Result<usize>>;

    /// Takes up to `limit` due deliveries for an attempt each, under a lease of `lease`
    /// seconds: the oldest pending one of each endpoint and object (a later event of the same
    /// object waits for the earlier one), of enabled endpoints.
    fn claim(
        &self,
        limit: i64,
        lease: i64,
    ) -> BoxFuture<'_, anyhow::Result<Vec<crate::delivery::Claimed>>>;

    /// Writes an attempt's outcome and its settlement, when the lease is still this
    /// attempt's: `false` otherwise (another instance took the delivery since).
    fn settle<'a>(
        &'a self,
        claimed: &'a crate::delivery::Claimed,
        outcome: &'a Outcome,
        settlement: &'a crate::delivery::Settlement,
        at: jiff::Timestamp,
    ) -> BoxFuture<'a, anyhow::Result<bool>>;
}
