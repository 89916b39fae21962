//! Signed webhooks after the Standard Webhooks specification (standardwebhooks.com): the pure
//! rules of delivering events to the endpoints agencies register. No I/O here; the HTTP sender
//! is an adapter (`fleetdesk_vendors::webhook`) behind [`ports::WebhookSender`].
//!
//! - [`secret`]: `whsec_` secrets, the `v1,` HMAC-SHA256 signatures of `{id}.{timestamp}.{body}`,
//!   the `webhook-signature` header (two secrets side by side during a rotation), verifying.
//! - [`endpoint`]: what an endpoint URL must be ([`EndpointUrl::parse`]).
//! - [`address`]: the addresses a webhook may never reach ([`forbidden`]), against SSRF.
//! - [`schedule`]: when a failed delivery is tried again, and when an endpoint is disabled.
//! - [`attempt`]: what one attempt's outcome means ([`judge`]), the three headers, message ids.
//! - [`delivery`]: which endpoints receive an event, what an attempt sends and what its
//!   outcome writes ([`fan_out`], [`delivery::settle`]).
//! - [`endpoints`]: endpoints as people register them, rotation, replay, the refusals.
//! - [`ports`]: the sender and the storage ports; [`service`]: the use cases and a round of
//!   delivery.

pub mod address;
pub mod attempt;
pub mod delivery;
pub mod endpoint;
pub mod endpoints;
pub mod ports;
pub mod schedule;
pub mod secret;
pub mod service;
#[cfg(feature = "wire")]
pub mod wire;

pub use address::{ForbiddenKind, forbidden};
pub use attempt::{Outcome, Verdict, headers, judge, message_id};
pub use delivery::fan_out;
pub use endpoint::{ALLOW_HTTP_FLAG, EndpointUrl, UrlRefusal};
pub use endpoints::WebhookRefusal;
pub use ports::{Manager, Outgoing, WebhookRepo, WebhookSender};
pub use schedule::{DISABLE_AFTER, next_try, should_disable};
pub use secret::{SecretRefusal, WebhookSecret, signature_header, verify};
pub use service::WebhookService;
