//! Who may call what: the scopes of agent keys and what a Personal API operation asks of the
//! member. The vocabulary every operation's description names; the roles that grant them are
//! `fleetdesk_tenancy`'s.

use serde::{Deserialize, Serialize};

crate::text_enum! {
    /// Scopes of agent keys, computed on every request from the agent's current role.
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
    pub enum Scope {
        #[serde(rename = "accounts:read")]
        AccountsRead => "accounts:read",
        #[serde(rename = "accounts:write")]
        AccountsWrite => "accounts:write",
        #[serde(rename = "personas:read")]
        PersonasRead => "personas:read",
        #[serde(rename = "personas:write")]
        PersonasWrite => "personas:write",
        #[serde(rename = "drafts:read")]
        DraftsRead => "drafts:read",
        #[serde(rename = "drafts:write")]
        DraftsWrite => "drafts:write",
        #[serde(rename = "runs:write")]
        RunsWrite => "runs:write",
        #[serde(rename = "cron:write")]
        CronWrite => "cron:write",
        #[serde(rename = "posts:write")]
        PostsWrite => "posts:write",
        #[serde(rename = "tasks:write")]
        TasksWrite => "tasks:write",
        #[serde(rename = "metrics:write")]
        MetricsWrite => "metrics:write",
        #[serde(rename = "issues:write")]
        IssuesWrite => "issues:write",
        #[serde(rename = "wiki:read")]
        WikiRead => "wiki:read",
        #[serde(rename = "wiki:write")]
        WikiWrite => "wiki:write",
        #[serde(rename = "relay:write")]
        RelayWrite => "relay:write",
        #[serde(rename = "community:read")]
        CommunityRead => "community:read",
        #[serde(rename = "community:write")]
        CommunityWrite => "community:write",
    }
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
}

crate::text_enum! {
    /// What a Personal API operation requires of the member (the `scope` column of
    /// endpoints.tsv for the personal rows).
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
    pub enum PersonalAccess {
        /// Any member of the organization, and platform admins.
        Member => "member",
        /// A member who may review: agency, platform admin, or a client with the review right.
        Review => "member:review",
        /// Agency members and platform admins.
        Agency => "agency",
        /// Platform admins only.
        PlatformAdmin => "platform_admin",
    }
}
