use crate::roles::{AgentRole, MemberRole, PersonalAccess, Scope};
use serde::Serialize;
use uuid::Uuid;

/// An agent acting through one of its keys. Bound to one workspace.
#[derive(Debug, Clone, Serialize)]
pub struct AgentCaller {
    pub key_id: Uuid,
    pub agent_id: Uuid,
    pub agent_name: String,
    pub role: AgentRole,
    pub workspace_id: Uuid,
    pub organization_id: Uuid,
    /// The revision of the workspace's account list (`GET /accounts`) as the key was
    /// authenticated: it rises with every committed change to what the list shows, so a list
    /// built at this revision or later is as new as this request's snapshot.
    pub accounts_revision: i64,
    /// The revision of the workspace's open task cards as the key was authenticated (the
    /// cards a heartbeat answers with), in the same way.
    pub tasks_revision: i64,
}

/// A person acting through a personal key. Bound to one organization (platform admins may
/// hold keys bound to none).
#[derive(Debug, Clone, Serialize)]
pub struct MemberCaller {
    pub key_id: Uuid,
    pub person_id: Uuid,
    pub name: String,
    pub email: String,
    pub organization_id: Option<Uuid>,
    pub member_id: Option<Uuid>,
    pub role: Option<MemberRole>,
    pub review: bool,
    pub platform_admin: bool,
}

#[derive(Debug, Clone, Serialize)]
pub enum Caller {
    Agent(AgentCaller),
    Member(MemberCaller),
}

impl Caller {
    pub fn key_id(&self) -> Uuid {
        match self {
            Caller::Agent(a) => a.key_id,
            Caller::Member(m) => m.key_id,
        }
    }

    /// Whose idempotency keys these are: the agent, or the person's membership of the
    /// organization the key is bound to (a person in two organizations holds two sets, so a
    /// result stored in one is never replayed in the other); a platform admin's key bound to
    /// no organization, the person.
    pub fn idempotency_owner(&self) -> Uuid {
        match self {
            Caller::Agent(a) => a.agent_id,
            Caller::Member(m) => m.member_id.unwrap_or(m.person_id),
        }
    }

    /// Whether this caller may call an operation open to `access` (a link token's operations
    /// take no key, so no caller may).
    pub fn may(&self, access: fleetdesk_kernel::op::Access) -> bool {
        use fleetdesk_kernel::op::Access;
        match access {
            Access::Agent(scope) => self.has_scope(scope),
            Access::Personal(access) => self.has_personal_access(access),
            Access::Token => false,
        }
    }

    pub fn has_scope(&self, scope: Scope) -> bool {
        matches!(self, Caller::Agent(a) if a.role.has(scope))
    }

    pub fn has_personal_access(&self, access: PersonalAccess) -> bool {
        let Caller::Member(m) = self else {
            return false;
        };
        if m.platform_admin {
            return true;
        }
        match (access, m.role) {
            (PersonalAccess::PlatformAdmin, _) => false,
            (_, None) => false,
            (PersonalAccess::Member, Some(_)) => true,
            (PersonalAccess::Review, Some(MemberRole::Agency)) => true,
            (PersonalAccess::Review, Some(MemberRole::Client)) => m.review,
            (PersonalAccess::Agency, Some(role)) => role == MemberRole::Agency,
        }
    }
}

/// Why a person may not read the organization they asked for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum OrganizationRefusal {
    /// The key is bound to no organization and the person is no platform admin (403).
    #[error("a member of an organization only")]
    NoOrganization,
    /// Someone who is no platform admin named an organization other than their key's; it is
    /// answered as one that does not exist (404 naming `organization`).
    #[error("no such organization")]
    NotInView,
}

impl MemberCaller {
    /// The person, as what they decide records who decided.
    pub fn decided_by(&self) -> fleetdesk_kernel::decision::DecidedBy {
        fleetdesk_kernel::decision::DecidedBy::Person {
            id: self.person_id,
            name: self.name.clone(),
        }
    }

    /// Whether the person acts for the agency: an agency member or a platform admin. Clients
    /// never decide, approve or confirm.
    pub fn is_staff(&self) -> bool {
        self.platform_admin || self.role == Some(MemberRole::Agency)
    }

    /// Whether the person reads as a client (a platform admin never does).
    pub fn is_client(&self) -> bool {
        !self.platform_admin && self.role == Some(MemberRole::Client)
    }

    /// The organization the person reads when asking for `asked`; `None` is every
    /// organization. A platform admin reads the one asked, else the one the key is bound to,
    /// else every one; anyone else reads only their key's organization.
    pub fn organization_in_view(
        &self,
        asked: Option<Uuid>,
    ) -> Result<Option<Uuid>, OrganizationRefusal> {
        if self.platform_admin {
            return Ok(asked.or(self.organization_id));
        }
        let own = self
            .organization_id
            .ok_or(OrganizationRefusal::NoOrganization)?;
        match asked {
            Some(other) if other != own => Err(OrganizationRefusal::NotInView),
            _ => Ok(Some(own)),
        }
    }
}

impl AgentCaller {
    pub fn agent_ref(&self) -> fleetdesk_kernel::AgentRef {
        fleetdesk_kernel::AgentRef {
            agent_id: self.agent_id,
            workspace_id: self.workspace_id,
            organization_id: self.organization_id,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn member(role: Option<MemberRole>, review: bool, admin: bool) -> Caller {
        Caller::Member(MemberCaller {
            key_id: Uuid::nil(),
            person_id: Uuid::nil(),
            name: "n".into(),
            email: "e@x".into(),
            organization_id: Some(Uuid::nil()),
            member_id: role.map(|_| Uuid::nil()),
            role,
            review,
            platform_admin: admin,
        })
    }

    fn person(role: Option<MemberRole>, org: Option<u128>, admin: bool) -> MemberCaller {
        let Caller::Member(mut m) = member(role, false, admin) else {
            unreachable!()
        };
        m.organization_id = org.map(Uuid::from_u128);
        m
    }

    #[test]
    fn a_member_reads_their_own_organization_and_an_admin_any() {
        use OrganizationRefusal::*;
        let (own, other) = (Some(Uuid::from_u128(1)), Some(Uuid::from_u128(2)));
        for role in [MemberRole::Agency, MemberRole::Client] {
            let m = person(Some(role), Some(1), false);
            assert_eq!(m.organization_in_view(None), Ok(own));
            assert_eq!(m.organization_in_view(own), Ok(own));
            assert_eq!(m.organization_in_view(other), Err(NotInView));
            let unbound = person(Some(role), None, false);
            assert_eq!(unbound.organization_in_view(None), Err(NoOrganization));
            assert_eq!(unbound.organization_in_view(own), Err(NoOrganization));
        }
        // A platform admin: the one named, else the key's, else every organization.
        let bound = person(Some(MemberRole::Agency), Some(1), true);
        assert_eq!(bound.organization_in_view(None), Ok(own));
        assert_eq!(bound.organization_in_view(other), Ok(other));
        let unbound = person(None, None, true);
        assert_eq!(unbound.organization_in_view(None), Ok(None));
        assert_eq!(unbound.organization_in_view(other), Ok(other));
    }

    #[test]
    fn agency_people_and_admins_are_staff_and_only_clients_read_as_clients() {
        let client = person(Some(MemberRole::Client), Some(1), false);
        let agency = person(Some(MemberRole::Agency), Some(1), false);
        let admin_client = person(Some(MemberRole::Client), Some(1), true);
        let admin = person(None, None, true);
        assert!(!client.is_staff() && client.is_client());
        assert!(agency.is_staff() && !agency.is_client());
        assert!(admin_client.is_staff() && !admin_client.is_client());
        assert!(admin.is_staff() && !admin.is_client());
    }

    #[test]
    fn personal_access_follows_the_role_table() {
        let client = member(Some(MemberRole::Client), false, false);
        let reviewer = member(Some(MemberRole::Client), true, false);
        let agency = member(Some(MemberRole::Agency), false, false);
        let admin = member(None, false, true);
        assert!(client.has_personal_access(PersonalAccess::Member));
        assert!(!client.has_personal_access(PersonalAccess::Review));
        assert!(reviewer.has_personal_access(PersonalAccess::Review));
        assert!(!reviewer.has_personal_access(PersonalAccess::Agency));
        assert!(agency.has_personal_access(PersonalAccess::Agency));
        assert!(!agency.has_personal_access(PersonalAccess::PlatformAdmin));
        assert!(admin.has_personal_access(PersonalAccess::PlatformAdmin));
        assert!(!member(None, false, false).has_personal_access(PersonalAccess::Member));
    }

    #[test]
    fn a_persons_idempotency_keys_are_their_membership_s() {
        let in_org = |org: u128, member: u128| {
            Caller::Member(MemberCaller {
                person_id: Uuid::from_u128(1),
                organization_id: Some(Uuid::from_u128(org)),
                member_id: Some(Uuid::from_u128(member)),
                ..match member_fields() {
                    Caller::Member(m) => m,
                    Caller::Agent(_) => unreachable!(),
                }
            })
        };
        let (a, b) = (in_org(10, 11), in_org(20, 21));
        assert_ne!(a.idempotency_owner(), b.idempotency_owner());
        assert_eq!(a.idempotency_owner(), in_org(10, 11).idempotency_owner());
        // A platform admin's key of no organization: the person.
        let admin = member(None, false, true);
        assert_eq!(admin.idempotency_owner(), Uuid::nil());
    }

    fn member_fields() -> Caller {
        member(Some(MemberRole::Agency), false, false)
    }

    #[test]
    fn members_have_no_agent_scopes() {
        let agency = member(Some(MemberRole::Agency), true, false);
        assert!(!agency.has_scope(Scope::AccountsRead));
    }
}
