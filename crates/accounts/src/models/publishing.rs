//! Who publishes an account's posts: the agent in its own publishing tool, or the service.
//! The approved list serves only accounts the agent publishes, and stocking a post the agent
//! scheduled in its own tool leaves it to be unscheduled there.

use serde::{Deserialize, Serialize};

fleetdesk_kernel::text_enum! {
    /// An account slot's publishing setting (stored text).
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
    #[serde(rename_all = "lowercase")]
    pub enum Publishing {
        /// The agent schedules and publishes the posts in its own tool.
        Agent => "agent",
        /// The service publishes the posts itself.
        Fleetdesk => "fleetdesk",
    }
}

impl Publishing {
    /// Whether the agent publishes, read from the stored text (unknown text: it does not).
    pub fn by_agent(stored: &str) -> bool {
        Publishing::parse(stored) == Some(Publishing::Agent)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_agent_setting_is_the_agent_publishing() {
        assert!(Publishing::by_agent("agent"));
        assert!(!Publishing::by_agent("fleetdesk"));
        assert!(!Publishing::by_agent("Agent"));
        assert_eq!(
            Publishing::ALL.map(Publishing::as_str),
            ["agent", "fleetdesk"]
        );
    }
}
