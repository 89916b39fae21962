//! Deliveries: which endpoints receive an event ([`fan_out`]), what one attempt sends
//! ([`Claimed::request`]), and what its outcome writes on the delivery and on its endpoint
//! ([`settle`]).

use fleetdesk_kernel::events::EventKind;
use jiff::Timestamp;
use serde_json::Value;
use uuid::Uuid;

use crate::attempt::{Outcome, Verdict, headers, judge, message_id};
use crate::endpoint::{EndpointUrl, UrlRefusal};
use crate::schedule::should_disable;
use crate::secret::{WebhookSecret, signature_header};

fleetdesk_kernel::text_enum! {
    /// Where a delivery stands.
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
    #[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
    #[serde(rename_all = "snake_case")]
    pub enum DeliveryStatus {
        /// Waiting for its next attempt (or for an earlier event of the same object).
        Pending => "pending",
        Delivered => "delivered",
        /// Its schedule is spent.
        Failed => "failed",
    }
}

/// Why the service disabled an endpoint.
pub const DISABLED_FAILING: &str = "its deliveries failed without a success for 5 days";

/// Whether an endpoint subscribed to `types` (none: every type) receives an event of `kind`.
pub fn receives(types: &[EventKind], kind: EventKind) -> bool {
    types.is_empty() || types.contains(&kind)
}

/// An event to hand on, numbered.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NumberedEvent {
    pub seq: i64,
    pub id: Uuid,
    pub workspace_id: Uuid,
    pub object_id: Uuid,
    pub kind: EventKind,
    /// When its change was made.
    pub occurred_at: Timestamp,
}

/// An enabled endpoint, as routing needs it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Route {
    pub endpoint_id: Uuid,
    pub workspace_id: Uuid,
    pub types: Vec<EventKind>,
    /// When it was registered: it receives the changes made since.
    pub since: Timestamp,
}

/// A delivery to write: one endpoint, one event.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewDelivery {
    pub endpoint_id: Uuid,
    pub event_id: Uuid,
    pub seq: i64,
    pub object_id: Uuid,
}

/// The deliveries of `events` to the enabled endpoints of their workspaces that receive
/// their kinds and were registered when the event's change was made (an older event reaches
/// a new endpoint only by a replay), in event order.
pub fn fan_out(events: &[NumberedEvent], routes: &[Route]) -> Vec<NewDelivery> {
    events
        .iter()
        .flat_map(|event| {
            routes
                .iter()
                .filter(move |r| {
                    r.workspace_id == event.workspace_id
                        && receives(&r.types, event.kind)
                        && event.occurred_at >= r.since
                })
                .map(move |r| NewDelivery {
                    endpoint_id: r.endpoint_id,
                    event_id: event.id,
                    seq: event.seq,
                    object_id: event.object_id,
                })
        })
        .collect()
}

/// The event a delivery carries, as stored.
#[derive(Debug, Clone, PartialEq)]
pub struct StoredEvent {
    pub id: Uuid,
    pub kind: String,
    pub occurred_at: Timestamp,
    pub workspace_id: Uuid,
    pub object_id: Uuid,
    pub data: Value,
}

impl StoredEvent {
    /// The JSON a receiver gets: the Standard Webhooks payload shape (`type`, `timestamp`,
    /// `data`) with the event's id, workspace and object.
    pub fn payload(&self) -> Vec<u8> {
        let body = serde_json::json!({
            "id": self.id,
            "type": self.kind,
            "timestamp": fleetdesk_kernel::format_utc(self.occurred_at),
            "workspace_id": self.workspace_id,
            "object_id": self.object_id,
            "data": self.data,
        });
        serde_json::to_vec(&body).expect("an event is plain JSON")
    }
}

/// A delivery an instance took for one attempt.
#[derive(Debug, Clone, PartialEq)]
pub struct Claimed {
    pub delivery_id: Uuid,
    /// Attempts of the series, this one counted: the lease's token.
    pub attempt: i32,
    pub url: String,
    pub secret: String,
    /// The secret a rotation replaced, while it still signs.
    pub previous_secret: Option<String>,
    pub failing_since: Option<Timestamp>,
    pub event: StoredEvent,
}

/// What an attempt sends.
#[derive(Debug, Clone, PartialEq)]
pub struct Request {
    pub url: EndpointUrl,
    pub headers: [(&'static str, String); 3],
    pub body: Vec<u8>,
}

impl Claimed {
    /// The request of this attempt at `now`, signed by the endpoint's secret (and the one a
    /// rotation replaced, while it signs); a URL the server may no longer call (http once
    /// `allow_http` is off) is refused, and the attempt fails with that reason.
    pub fn request(&self, now: Timestamp, allow_http: bool) -> Result<Request, String> {
        let url =
            EndpointUrl::parse(&self.url, allow_http).map_err(|e: UrlRefusal| e.to_string())?;
        let secrets: Vec<WebhookSecret> = std::iter::once(&self.secret)
            .chain(self.previous_secret.as_ref())
            .filter_map(|s| WebhookSecret::parse(s).ok())
            .collect();
        let body = self.event.payload();
        let id = message_id(self.event.id);
        let signing: Vec<&WebhookSecret> = secrets.iter().collect();
        let signature = signature_header(&signing, &id, now.as_second(), &body);
        Ok(Request {
            url,
            headers: headers(&id, now.as_second(), signature),
            body,
        })
    }
}

/// What an attempt writes on its endpoint.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum EndpointChange {
    /// Delivered: no longer failing.
    Healthy,
    /// Failing since then (kept when it was failing already).
    Failing { since: Timestamp },
    /// Failing too long: disabled, with why.
    Disabled {
        since: Timestamp,
        reason: &'static str,
    },
}

/// What an attempt's outcome writes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Settlement {
    pub status: DeliveryStatus,
    /// The next attempt, while pending.
    pub next_at: Option<Timestamp>,
    pub endpoint: EndpointChange,
}

/// The settlement of `outcome`, the `attempt`-th of its series, at `now`, for an endpoint
/// failing since `failing_since`; `jitter_permille` moves the next attempt as
/// [`crate::next_try`] reads it.
pub fn settle(
    outcome: &Outcome,
    attempt: i32,
    failing_since: Option<Timestamp>,
    now: Timestamp,
    jitter_permille: u16,
) -> Settlement {
    let attempts = u32::try_from(attempt).unwrap_or(1).max(1);
    let (status, next_at) = match judge(outcome, attempts, now, jitter_permille) {
        Verdict::Delivered => (DeliveryStatus::Delivered, None),
        Verdict::Retry { at } => (DeliveryStatus::Pending, Some(at)),
        Verdict::GaveUp => (DeliveryStatus::Failed, None),
    };
    let endpoint = if status == DeliveryStatus::Delivered {
        EndpointChange::Healthy
    } else {
        let since = failing_since.unwrap_or(now);
        if should_disable(since, now) {
            EndpointChange::Disabled {
                since,
                reason: DISABLED_FAILING,
            }
        } else {
            EndpointChange::Failing { since }
        }
    };
    Settlement {
        status,
        next_at,
        endpoint,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::secret::verify;
    use jiff::SignedDuration;

    fn id(n: u128) -> Uuid {
        Uuid::from_u128(n)
    }

    fn at(t: &str) -> Timestamp {
        t.parse().unwrap()
    }

    #[test]
    fn an_event_goes_to_the_endpoints_of_its_workspace_that_take_its_type() {
        let events = [
            NumberedEvent {
                seq: 1,
                id: id(1),
                workspace_id: id(10),
                object_id: id(100),
                kind: EventKind::PostMoved,
                occurred_at: at("2026-12-07T10:00:00Z"),
            },
            NumberedEvent {
                seq: 2,
                id: id(2),
                workspace_id: id(20),
                object_id: id(200),
                kind: EventKind::TaskClaimed,
                occurred_at: at("2026-12-07T10:00:00Z"),
            },
        ];
        let since = at("2026-12-07T09:00:00Z");
        let routes = [
            Route {
                endpoint_id: id(7),
                workspace_id: id(10),
                types: vec![],
                since,
            },
            Route {
                endpoint_id: id(8),
                workspace_id: id(10),
                types: vec![EventKind::TaskClaimed],
                since,
            },
            Route {
                endpoint_id: id(9),
                workspace_id: id(20),
                types: vec![EventKind::TaskClaimed, EventKind::PostMoved],
                since,
            },
            // Registered after the changes were made: nothing of them.
            Route {
                endpoint_id: id(6),
                workspace_id: id(10),
                types: vec![],
                since: at("2026-12-07T10:00:00.000001Z"),
            },
        ];
        let deliveries = fan_out(&events, &routes);
        let pairs: Vec<(Uuid, Uuid)> = deliveries
            .iter()
            .map(|d| (d.endpoint_id, d.event_id))
            .collect();
        assert_eq!(pairs, [(id(7), id(1)), (id(9), id(2))]);
        assert_eq!((deliveries[1].seq, deliveries[1].object_id), (2, id(200)));
        assert!(fan_out(&events, &[]).is_empty());
    }

    fn claimed(url: &str, previous: Option<&str>) -> Claimed {
        Claimed {
            delivery_id: id(1),
            attempt: 1,
            url: url.into(),
            secret: "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw".into(),
            previous_secret: previous.map(str::to_owned),
            failing_since: None,
            event: StoredEvent {
                id: id(5),
                kind: "task.claimed".into(),
                occurred_at: "2026-12-07T01:02:03Z".parse().unwrap(),
                workspace_id: id(10),
                object_id: id(100),
                data: serde_json::json!({"status": "in_progress"}),
            },
        }
    }

    #[test]
    fn a_request_is_signed_by_each_signing_secret_and_carries_the_event() {
        let now: Timestamp = "2026-12-07T01:02:04Z".parse().unwrap();
        let old = "whsec_QUFBQUFBQUFBQUFBQUFBQUFBQUFBQUFB";
        let request = claimed("https://hooks.example.com/in", Some(old))
            .request(now, false)
            .unwrap();
        let [(_, msg_id), (_, ts), (_, signature)] = &request.headers;
        assert_eq!(msg_id, &format!("msg_{}", id(5).simple()));
        assert_eq!(ts, &now.as_second().to_string());
        let new = WebhookSecret::parse("whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw").unwrap();
        let old = WebhookSecret::parse(old).unwrap();
        for secret in [&new, &old] {
            assert!(verify(
                signature,
                &[secret],
                msg_id,
                now.as_second(),
                &request.body
            ));
        }
        assert_eq!(signature.split(' ').count(), 2);
        let body: Value = serde_json::from_slice(&request.body).unwrap();
        assert_eq!(body["type"], "task.claimed");
        assert_eq!(body["timestamp"], "2026-12-07T01:02:03Z");
        assert_eq!(body["data"]["status"], "in_progress");
        assert_eq!(body["object_id"], id(100).to_string());
        // An http URL is sent only while the server allows it.
        let http = claimed("http://hooks.example.com/in", None);
        assert!(http.request(now, true).is_ok());
        let refused = http.request(now, false).unwrap_err();
        assert!(refused.contains("https"), "{refused}");
    }

    #[test]
    fn an_outcome_settles_the_delivery_and_the_endpoint() {
        let now: Timestamp = "2026-12-07T00:00:00Z".parse().unwrap();
        let ok = Outcome {
            status: Some(204),
            error: None,
            latency_ms: 3,
            body_excerpt: String::new(),
        };
        let delivered = settle(&ok, 3, Some(now - SignedDuration::from_hours(1)), now, 0);
        assert_eq!(delivered.status, DeliveryStatus::Delivered);
        assert_eq!(delivered.next_at, None);
        assert_eq!(delivered.endpoint, EndpointChange::Healthy);

        let refused = Outcome::failed("connection refused", 1);
        let first = settle(&refused, 1, None, now, 500);
        assert_eq!(first.status, DeliveryStatus::Pending);
        assert_eq!(first.next_at, Some(now + SignedDuration::from_secs(5)));
        assert_eq!(first.endpoint, EndpointChange::Failing { since: now });

        let last = settle(&refused, 10, Some(now), now, 500);
        assert_eq!((last.status, last.next_at), (DeliveryStatus::Failed, None));

        // Failing for 5 days disables it; a second less does not.
        let five_days = now - SignedDuration::from_hours(120);
        assert_eq!(
            settle(&refused, 2, Some(five_days), now, 0).endpoint,
            EndpointChange::Disabled {
                since: five_days,
                reason: DISABLED_FAILING
            }
        );
        let almost = five_days + SignedDuration::from_secs(1);
        assert_eq!(
            settle(&refused, 2, Some(almost), now, 0).endpoint,
            EndpointChange::Failing { since: almost }
        );
    }
}
