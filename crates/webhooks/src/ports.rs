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
