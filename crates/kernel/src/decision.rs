//! The decision vocabulary every area speaks: what a decision is about, where it stands, who
//! opened it, and the row of a decision an area's use case opens. The rules of deciding are
//! `fleetdesk_decisions`'; an area that opens a decision (personas, wiki, ads) plans it as a
//! [`NewDecision`] here without depending on them.

use serde::{Deserialize, Serialize};
use serde_json::Value;
use uuid::Uuid;

crate::text_enum! {
    /// What a decision is about; each kind has its own options and effect.
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
    #[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
    #[serde(rename_all = "snake_case")]
    pub enum DecisionKind {
        AccountBanned => "account_banned",
        PersonaNew => "persona_new",
        FactProposal => "fact_proposal",
        Contradiction => "contradiction",
        PersonaImages => "persona_images",
        ChangeAvatar => "change_avatar",
        ChangeBio => "change_bio",
        DeletePost => "delete_post",
        WikiDraft => "wiki_draft",
        AdChange => "ad_change",
    }
}

crate::text_enum! {
    /// Where a decision stands: waiting, handled by an agent (a person still confirms), or
    /// decided.
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
    #[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
    #[serde(rename_all = "snake_case")]
    pub enum DecisionStatus {
        Open => "open",
        Handled => "handled",
        Resolved => "resolved",
        Dismissed => "dismissed",
    }
}

crate::text_enum! {
    /// Who opened a decision: an agent's call, a person's move (a follow-up), or the service.
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
    #[serde(rename_all = "snake_case")]
    pub enum Opener {
        Agent => "agent",
        Person => "person",
        Service => "service",
    }
}

impl Opener {
    /// The name a decision shows for who opened it: the agent's or the person's, and the
    /// service's own for what the service opened (or when the name is gone).
    pub fn name(self, agent: Option<String>, person: Option<String>) -> String {
        match self {
            Opener::Agent => agent,
            Opener::Person => person,
            Opener::Service => None,
        }
        .unwrap_or_else(|| "fleetdesk".to_owned())
    }
}

/// A decision an agent's use case opens for a person, in the one shape of decision rows: it
/// opens `open`, by the agent, in the agent's workspace.
#[derive(Debug, Clone, PartialEq)]
pub struct NewDecision {
    pub kind: DecisionKind,
    pub persona_id: Option<Uuid>,
    pub title: String,
    pub question: Option<String>,
    /// The options a person picks from (`[]` when the kind has none of its own).
    pub options: Value,
    /// What the opener wrote about it, for the person to read.
    pub detail: Value,
    pub post_id: Option<Uuid>,
}

impl NewDecision {
    /// A decision of `kind` with no question or options of its own.
    pub fn new(kind: DecisionKind, title: String, detail: Value) -> NewDecision {
        NewDecision {
            kind,
            persona_id: None,
            title,
            question: None,
            options: Value::Array(Vec::new()),
            detail,
            post_id: None,
        }
    }

    /// The status it opens in.
    pub fn status(&self) -> DecisionStatus {
        DecisionStatus::Open
    }

    /// The event of this decision opened as `id` by `agent`'s use case: told to that agent.
    pub fn opened(&self, id: Uuid, agent: crate::AgentRef) -> crate::events::NewEvent {
        decision_event(
            agent.workspace_id,
            Some(agent.agent_id),
            id,
            crate::events::EventBody::DecisionOpened,
            crate::events::DecisionChange {
                kind: self.kind,
                title: self.title.clone(),
                status: self.status(),
                choice: None,
            },
        )
    }
}

/// The event of a decision's change: `body` of `change`, in `workspace`, told to `agent` (the
/// agent the decision's persona is assigned to, or the one that opened it).
pub fn decision_event(
    workspace: Uuid,
    agent: Option<Uuid>,
    id: Uuid,
    body: fn(crate::events::DecisionChange) -> crate::events::EventBody,
    change: crate::events::DecisionChange,
) -> crate::events::NewEvent {
    crate::events::NewEvent {
        workspace_id: workspace,
        agent_id: agent,
        object_id: id,
        body: body(change),
    }
}

/// Who decided, as stored with what they decided (a decision's `decided_by`, a research
/// approval's `approved_by`, a relayed card confirmation's note).
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum DecidedBy {
    /// A person, through the Personal API or the dashboard.
    Person { id: Uuid, name: String },
    /// An agent relaying a person's decision.
    Relay(Relayed),
    /// The service itself (a proposal that expired, a draft a newer one superseded).
    Service { name: String },
}

/// A person's decision an agent relayed: who the person is, the agent, where the instruction
/// came from and when the person decided.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Relayed {
    /// The person's name and role (`agency`, `client` or `admin`).
    pub name: String,
    pub role: String,
    pub agent: RelayingAgent,
    /// The instruction's origin as the agent gave it (platform, gateway, channel, thread,
    /// requester, message_ref): stored, never read.
    pub origin: Value,
    #[serde(with = "crate::time::utc::option")]
    pub effective_at: Option<jiff::Timestamp>,
}

/// The agent that relayed a decision.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct RelayingAgent {
    pub id: Uuid,
    pub name: String,
}

impl DecidedBy {
    /// The record as stored (JSON).
    pub fn to_json(&self) -> Value {
        serde_json::to_value(self).expect("who decided is plain JSON")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_opener_is_named_by_its_kind() {
        let (agent, person) = (Some("op1".to_owned()), Some("Ann".to_owned()));
        assert_eq!(Opener::Agent.name(agent.clone(), person.clone()), "op1");
        assert_eq!(Opener::Person.name(agent.clone(), person.clone()), "Ann");
        assert_eq!(Opener::Service.name(agent, person), "fleetdesk");
        assert_eq!(Opener::Person.name(None, None), "fleetdesk");
    }

    #[test]
    fn who_decided_is_stored_with_its_type() {
        let person = DecidedBy::Person {
            id: Uuid::nil(),
            name: "Ann".into(),
        };
        assert_eq!(
            person.to_json(),
            serde_json::json!({"type": "person", "id": Uuid::nil(), "name": "Ann"})
        );
        let relay = DecidedBy::Relay(Relayed {
            name: "Ann".into(),
            role: "agency".into(),
            agent: RelayingAgent {
                id: Uuid::nil(),
                name: "op1".into(),
            },
            origin: serde_json::json!({"platform": "cli"}),
            effective_at: Some("2026-11-29T10:00:00.5Z".parse().unwrap()),
        });
        assert_eq!(
            relay.to_json(),
            serde_json::json!({
                "type": "relay", "name": "Ann", "role": "agency",
                "agent": {"id": Uuid::nil(), "name": "op1"},
                "origin": {"platform": "cli"}, "effective_at": "2026-11-29T10:00:00Z",
            })
        );
        assert_eq!(
            DecidedBy::Service {
                name: "fleetdesk".into()
            }
            .to_json(),
            serde_json::json!({"type": "service", "name": "fleetdesk"})
        );
    }
}
