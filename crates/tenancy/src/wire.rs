//! The keys' and the person's own part of the interface (feature `wire`): each operation's
//! handle with its description, and the request and response types the server parses and a
//! client sends.

use crate::AgentCaller;
use fleetdesk_kernel::wire::fields::AgentBrief;

impl From<&AgentCaller> for AgentBrief {
    fn from(a: &AgentCaller) -> Self {
        AgentBrief {
            id: a.agent_id,
            name: a.agent_name.clone(),
        }
    }
}
