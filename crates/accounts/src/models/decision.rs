//! The pending decision a ban opens (spec: "A pending decision asking a human whether to open
//! a new generation is created; no new generation opens automatically"): one open decision per
//! generation, what it asks, and when a state report answers with it.

use crate::models::state::{AccountState, StateMove};

/// The kind of the decision a ban opens.
pub const BAN_DECISION_KIND: &str = "account_banned";
/// The answers a person may give.
pub const BAN_OPTIONS: [&str; 2] = ["open_new_generation", "keep_closed"];

/// What a ban decision says to the person who answers it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BanDecision {
    pub title: String,
    pub question: String,
}

/// The decision a ban of `code` on `platform` (generation `generation`) opens.
pub fn ban_decision(code: &str, platform: &str, generation: i32) -> BanDecision {
    BanDecision {
        title: format!("{code} on {platform} was banned (generation {generation})"),
        question: format!("Open a new generation of {code} on {platform}?"),
    }
}

/// Whether an unchanged report answers with the ban decision still waiting for a person: a
/// repeated ban does (a changed report carries its decision when it opens one).
pub fn answers_with_open_decision(current: AccountState, movement: StateMove) -> bool {
    movement == StateMove::Unchanged && current == AccountState::Banned
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::models::state::{ReportedState, apply_report};

    #[test]
    fn a_ban_decision_names_the_code_platform_and_generation() {
        assert_eq!(
            ban_decision("TW-T001", "threads", 2),
            BanDecision {
                title: "TW-T001 on threads was banned (generation 2)".into(),
                question: "Open a new generation of TW-T001 on threads?".into(),
            }
        );
        assert_eq!(BAN_OPTIONS, ["open_new_generation", "keep_closed"]);
    }

    #[test]
    fn only_a_repeated_ban_answers_with_the_waiting_decision() {
        let banned = AccountState::Banned;
        assert!(answers_with_open_decision(
            banned,
            apply_report(banned, ReportedState::Banned)
        ));
        for s in [
            AccountState::Active,
            AccountState::Warming,
            AccountState::Paused,
            AccountState::Quarantined,
        ] {
            for r in ReportedState::ALL {
                let movement = apply_report(s, r);
                assert!(!answers_with_open_decision(s, movement), "{s:?} {r:?}");
            }
        }
        // A banned account reported otherwise changes; the change says what it opens.
        assert!(!answers_with_open_decision(
            banned,
            apply_report(banned, ReportedState::Restored)
        ));
    }
}
