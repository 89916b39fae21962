//! Decisions an agent relays for a person: who the person is, where the instruction came from
//! and when the person decided. Every relay body carries `on_behalf_of`, `origin` and
//! `effective_at`; [`RelayRecord`] is what is stored with the decision.

use super::common::{AgentBrief, IsoTimeInput};
use crate::error::ApiError;
use crate::fields::Utc;
use fleetdesk_kernel::decision::{DecidedBy, Relayed, RelayingAgent};
use fleetdesk_tenancy::AgentCaller;
use serde::Serialize;
use serde_json::Value;

pub use fleetdesk_kernel::wire::relay::*;

/// Where only agency people and admins decide.
pub trait StaffOnly {
    /// A client is `refusal` (the relay's own status), marked as breaking the schema
    /// ([`StaffOnBehalfOf`]).
    fn staff_only(&self, refusal: impl FnOnce() -> ApiError) -> Result<(), ApiError>;
}

impl StaffOnly for OnBehalfOf {
    fn staff_only(&self, refusal: impl FnOnce() -> ApiError) -> Result<(), ApiError> {
        if self.role == OnBehalfRoleIn::Client {
            return Err(refusal().with_field("on_behalf_of.role").breaking_schema());
        }
        Ok(())
    }
}

/// The record stored with a relayed decision: the agent that relayed it, the person, the
/// instruction's origin and when the person decided.
#[derive(Debug, Serialize)]
pub struct RelayRecord<'a> {
    pub agent: AgentBrief,
    pub on_behalf_of: &'a OnBehalfOf,
    pub origin: &'a Origin,
    pub effective_at: Option<Utc>,
}

impl<'a> RelayRecord<'a> {
    /// The record of a decision relayed by `agent`: the three relay fields of the body. An
    /// agent relays only what a person decided, so a person named as the agent itself is
    /// refused (422), for every relay endpoint alike.
    pub fn new(
        agent: &AgentCaller,
        on_behalf_of: &'a OnBehalfOf,
        origin: &'a Origin,
        effective_at: Option<&IsoTimeInput>,
    ) -> Result<RelayRecord<'a>, ApiError> {
        if on_behalf_of
            .name
            .0
            .trim()
            .eq_ignore_ascii_case(agent.agent_name.trim())
        {
            return Err(ApiError::rejected(
                "on_behalf_of names this agent: relay only what a person decided",
            )
            .with_field("on_behalf_of.name"));
        }
        Ok(RelayRecord {
            agent: agent.into(),
            on_behalf_of,
            origin,
            effective_at: effective_at.map(|t| Utc(t.0)),
        })
    }

    /// The record as stored with the decision.
    pub fn to_json(&self) -> Value {
        serde_json::to_value(self).expect("a relay record is plain JSON")
    }

    /// Who decided when an agent relays the person's move, the same for relay_issue, a
    /// relayed task confirmation and a research approval: `{type: relay, name, role, agent,
    /// origin, effective_at}`.
    pub fn decided_by(&self) -> DecidedBy {
        DecidedBy::Relay(Relayed {
            name: self.on_behalf_of.name.0.clone(),
            role: self.on_behalf_of.role.as_str().to_owned(),
            agent: RelayingAgent {
                id: self.agent.id,
                name: self.agent.name.clone(),
            },
            origin: serde_json::to_value(self.origin).expect("an origin is plain JSON"),
            effective_at: self.effective_at.as_ref().map(|t| t.0),
        })
    }
}
