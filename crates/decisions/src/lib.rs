//! Human decisions: whatever an agent cannot decide alone waits here for a person (a banned
//! account, a new persona, a new fact, a contradiction, draft images), together with the
//! follow-ups a person's choice opens for an agent.

pub mod effects;
pub mod ports;
pub mod rules;
pub mod service;

use serde::{Deserialize, Serialize};

fleetdesk_kernel::text_enum! {
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

fleetdesk_kernel::text_enum! {
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

fleetdesk_kernel::text_enum! {
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
}
