use serde::{Deserialize, Serialize};

pub use fleetdesk_kernel::access::{PersonalAccess, Scope};

fleetdesk_kernel::text_enum! {
    /// An agent's role. `operator` has every scope but the community ones; `community` has only
    /// those.
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
    #[serde(rename_all = "lowercase")]
    pub enum AgentRole {
        Operator => "operator",
        Community => "community",
    }
}

impl AgentRole {
    pub fn scopes(self) -> &'static [Scope] {
        match self {
            AgentRole::Operator => Scope::OPERATOR,
            AgentRole::Community => Scope::COMMUNITY,
        }
    }

    pub fn has(self, scope: Scope) -> bool {
        self.scopes().contains(&scope)
    }
}

fleetdesk_kernel::text_enum! {
    /// A member's role in one organization.
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
    #[serde(rename_all = "lowercase")]
    pub enum MemberRole {
        Client => "client",
        Agency => "agency",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn operator_has_every_non_community_scope() {
        assert!(AgentRole::Operator.has(Scope::RelayWrite));
        assert!(AgentRole::Operator.has(Scope::AccountsRead));
        assert!(!AgentRole::Operator.has(Scope::CommunityRead));
    }

    #[test]
    fn community_has_only_community_scopes() {
        assert_eq!(AgentRole::Community.scopes(), Scope::COMMUNITY);
        assert!(!AgentRole::Community.has(Scope::AccountsRead));
    }

    #[test]
    fn scope_names_match_their_serde_form() {
        for s in Scope::OPERATOR.iter().chain(Scope::COMMUNITY) {
            assert_eq!(serde_json::to_value(s).unwrap(), s.as_str());
        }
    }
}
