//! When an agent is silent: no heartbeat for its stated interval (`silent_after_hours`, set in
//! the tenant file, 24 by default). People's `GET /today` flags it ([`silent`]); the minute's
//! sweep tells `agent.silent` once per silence ([`newly_silent`]).

use fleetdesk_kernel::events::{AgentSilent, EventBody, NewEvent};
use jiff::{SignedDuration, Timestamp};
use uuid::Uuid;

pub use fleetdesk_kernel::events::{DEFAULT_SILENT_AFTER_HOURS, SILENT_AFTER_HOURS};

/// An interval in hours as a duration.
pub fn interval(hours: i16) -> SignedDuration {
    SignedDuration::from_hours(i64::from(hours))
}

/// Whether an agent whose last heartbeat was `last` (none: never) is silent at `now`.
pub fn silent(last: Option<Timestamp>, after: SignedDuration, now: Timestamp) -> bool {
    last.is_none_or(|t| now.duration_since(t) > after)
}

/// An agent that reports runs, as the sweep finds it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Watched {
    pub agent_id: Uuid,
    pub workspace_id: Uuid,
    pub name: String,
    pub created_at: Timestamp,
    pub last_heartbeat_at: Option<Timestamp>,
    pub silent_after_hours: i16,
    /// When it was last told silent (none: never).
    pub told_at: Option<Timestamp>,
}

impl Watched {
    /// Since when it has been quiet: its last heartbeat, or its creation when it never sent
    /// one.
    fn quiet_since(&self) -> Timestamp {
        self.last_heartbeat_at.unwrap_or(self.created_at)
    }

    /// `agent.silent` when its interval has run out since it was last heard of and it was not
    /// told so since: once per silence (a heartbeat starts a new one).
    pub fn newly_silent(&self, now: Timestamp) -> Option<NewEvent> {
        let since = self.quiet_since();
        let after = interval(self.silent_after_hours);
        if now.duration_since(since) <= after || self.told_at.is_some_and(|t| t >= since) {
            return None;
        }
        Some(NewEvent {
            workspace_id: self.workspace_id,
            agent_id: Some(self.agent_id),
            object_id: self.agent_id,
            body: EventBody::AgentSilent(AgentSilent {
                name: self.name.clone(),
                last_heartbeat_at: self
                    .last_heartbeat_at
                    .map(fleetdesk_kernel::time::format_utc),
                silent_after_hours: self.silent_after_hours,
            }),
        })
    }
}

/// The events of the watched agents that fell silent by `now`, each with its agent.
pub fn newly_silent(watched: &[Watched], now: Timestamp) -> Vec<(Uuid, NewEvent)> {
    watched
        .iter()
        .filter_map(|w| Some((w.agent_id, w.newly_silent(now)?)))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(t: &str) -> Timestamp {
        t.parse().unwrap()
    }

    fn agent(last: Option<&str>, told: Option<&str>) -> Watched {
        Watched {
            agent_id: Uuid::from_u128(1),
            workspace_id: Uuid::from_u128(2),
            name: "op1".into(),
            created_at: at("2026-12-01T00:00:00Z"),
            last_heartbeat_at: last.map(at),
            silent_after_hours: 6,
            told_at: told.map(at),
        }
    }

    #[test]
    fn silent_is_past_the_interval_and_never_heard_of() {
        let six = interval(6);
        let last = at("2026-12-07T00:00:00Z");
        assert!(!silent(Some(last), six, at("2026-12-07T06:00:00Z")));
        assert!(silent(Some(last), six, at("2026-12-07T06:00:01Z")));
        assert!(silent(None, six, last));
    }

    #[test]
    fn an_agent_is_told_silent_once_per_silence() {
        let quiet = agent(Some("2026-12-07T00:00:00Z"), None);
        assert_eq!(
            quiet.newly_silent(at("2026-12-07T06:00:00Z")),
            None,
            "at the limit"
        );
        let event = quiet
            .newly_silent(at("2026-12-07T06:00:01Z"))
            .expect("one past");
        assert_eq!(
            (event.object_id, event.agent_id),
            (quiet.agent_id, Some(quiet.agent_id))
        );
        let EventBody::AgentSilent(body) = event.body else {
            panic!("{:?}", event.body)
        };
        assert_eq!(
            body.last_heartbeat_at.as_deref(),
            Some("2026-12-07T00:00:00Z")
        );
        assert_eq!((body.name.as_str(), body.silent_after_hours), ("op1", 6));
        // Told after its last heartbeat: not again.
        let told = agent(Some("2026-12-07T00:00:00Z"), Some("2026-12-07T06:01:00Z"));
        assert_eq!(told.newly_silent(at("2026-12-08T00:00:00Z")), None);
        // A heartbeat after the telling starts a new silence.
        let back = agent(Some("2026-12-07T08:00:00Z"), Some("2026-12-07T06:01:00Z"));
        assert_eq!(back.newly_silent(at("2026-12-07T13:00:00Z")), None);
        assert!(back.newly_silent(at("2026-12-07T14:00:01Z")).is_some());
    }

    #[test]
    fn an_agent_that_never_sent_a_heartbeat_is_silent_from_its_creation() {
        let never = agent(None, None);
        assert_eq!(never.newly_silent(at("2026-12-01T06:00:00Z")), None);
        let told = newly_silent(
            &[never.clone(), agent(Some("2026-12-01T05:00:00Z"), None)],
            at("2026-12-01T06:00:01Z"),
        );
        assert_eq!(told.len(), 1);
        assert_eq!(told[0].0, never.agent_id);
        let EventBody::AgentSilent(body) = &told[0].1.body else {
            panic!("{told:?}")
        };
        assert_eq!(body.last_heartbeat_at, None);
    }
}
