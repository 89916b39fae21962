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
//! - [`ports`]: the sender port.

pub mod address;
pub mod attempt;
pub mod endpoint;
pub mod ports;
pub mod schedule;
pub mod secret;

pub use address::{ForbiddenKind, forbidden};
pub use attempt::{Outcome, Verdict, headers, judge, message_id};
pub use endpoint::{ALLOW_HTTP_FLAG, EndpointUrl, UrlRefusal};
pub use ports::{Outgoing, WebhookSender};
pub use schedule::{DISABLE_AFTER, next_try, should_disable};
pub use secret::{SecretRefusal, WebhookSecret, signature_header, verify};
