//! Tenancy and keys: organizations, workspaces, projects, members, agents, their roles and
//! scopes, API keys, the authenticated caller, and the declarative tenant file.

pub mod caller;
pub mod gate;
pub mod keys;
pub mod ports;
pub mod rate;
pub mod roles;
pub mod service;
pub mod session;
pub mod tenant_file;
#[cfg(feature = "wire")]
pub mod wire;

pub use caller::{AgentCaller, Caller, MemberCaller};
pub use keys::{IssuedKey, KeyKind, KeyParseError, ParsedKey};
pub use roles::{AgentRole, MemberRole, PersonalAccess, Scope};
