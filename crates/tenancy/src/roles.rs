use serde::{Deserialize, Serialize};

/// Scopes of agent keys, computed on every request from the agent's current role.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Scope {
    #[serde(rename = "accounts:read")]
    AccountsRead,
    #[serde(rename = "accounts:write")]
    AccountsWrite,
    #[serde(rename = "personas:read")]
    PersonasRead,
    #[serde(rename = "personas:write")]
    PersonasWrite,
    #[serde(rename = "drafts:read")]
    DraftsRead,
    #[serde(rename = "drafts:write")]
    DraftsWrite,
    #[serde(rename = "runs:write")]
    RunsWrite,
    #[serde(rename = "cron:write")]
    CronWrite,
    #[serde(rename = "posts:write")]
    PostsWrite,
    #[serde(rename = "tasks:write")]
    TasksWrite,
    #[serde(rename = "metrics:write")]
    MetricsWrite,
    #[serde(rename = "issues:write")]
    IssuesWrite,
    #[serde(rename = "wiki:read")]
    WikiRead,
    #[serde(rename = "wiki:write")]
    WikiWrite,
    #[serde(rename = "relay:write")]
    RelayWrite,
    #[serde(rename = "community:read")]
    CommunityRead,
    #[serde(rename = "community:write")]
    CommunityWrite,
}

impl Scope {
    pub const OPERATOR: &'static [Scope] = &[
        Scope::AccountsRead,
        Scope::AccountsWrite,
        Scope::PersonasRead,
        Scope::PersonasWrite,
        Scope::DraftsRead,
        Scope::DraftsWrite,
        Scope::RunsWrite,
        Scope::CronWrite,
        Scope::PostsWrite,
        Scope::TasksWrite,
        Scope::MetricsWrite,
        Scope::IssuesWrite,
        Scope::WikiRead,
        Scope::WikiWrite,
        Scope::RelayWrite,
    ];
    pub const COMMUNITY: &'static [Scope] = &[Scope::CommunityRead, Scope::CommunityWrite];

    pub fn as_str(self) -> &'static str {
        match self {
            Scope::AccountsRead => "accounts:read",
            Scope::AccountsWrite => "accounts:write",
            Scope::PersonasRead => "personas:read",
            Scope::PersonasWrite => "personas:write",
            Scope::DraftsRead => "drafts:read",
            Scope::DraftsWrite => "drafts:write",
            Scope::RunsWrite => "runs:write",
            Scope::CronWrite => "cron:write",
            Scope::PostsWrite => "posts:write",
            Scope::TasksWrite => "tasks:write",
            Scope::MetricsWrite => "metrics:write",
            Scope::IssuesWrite => "issues:write",
            Scope::WikiRead => "wiki:read",
            Scope::WikiWrite => "wiki:write",
            Scope::RelayWrite => "relay:write",
            Scope::CommunityRead => "community:read",
            Scope::CommunityWrite => "community:write",
        }
    }
}

/// An agent's role. `operator` has every scope but the community ones; `community` has only
/// those.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum AgentRole {
    Operator,
    Community,
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

    pub fn as_str(self) -> &'static str {
        match self {
            AgentRole::Operator => "operator",
            AgentRole::Community => "community",
        }
    }

    pub fn parse(s: &str) -> Option<AgentRole> {
        match s {
            "operator" => Some(AgentRole::Operator),
            "community" => Some(AgentRole::Community),
            _ => None,
        }
    }
}

/// A member's role in one organization.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum MemberRole {
    Client,
    Agency,
}

impl MemberRole {
    pub fn as_str(self) -> &'static str {
        match self {
            MemberRole::Client => "client",
            MemberRole::Agency => "agency",
        }
    }

    pub fn parse(s: &str) -> Option<MemberRole> {
        match s {
            "client" => Some(MemberRole::Client),
            "agency" => Some(MemberRole::Agency),
            _ => None,
        }
    }
}

/// What a Personal API operation requires of the member (the `scope` column of
/// endpoints.tsv for the personal rows).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum PersonalAccess {
    /// Any member of the organization, and platform admins.
    Member,
    /// A member who may review: agency, platform admin, or a client with the review right.
    Review,
    /// Agency members and platform admins.
    Agency,
    /// Platform admins only.
    PlatformAdmin,
}

impl PersonalAccess {
    pub fn as_str(self) -> &'static str {
        match self {
            PersonalAccess::Member => "member",
            PersonalAccess::Review => "member:review",
            PersonalAccess::Agency => "agency",
            PersonalAccess::PlatformAdmin => "platform_admin",
        }
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
