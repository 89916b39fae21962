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
    /// The account, the generation and the report: `code`, `platform`, `generation`,
    /// `reason` and `occurred_at` (UTC).
    pub detail: serde_json::Value,
}

impl BanDecision {
    /// The event of this decision opened as `id` in `workspace`: told to the agent of the
    /// account's persona (`persona_agent`).
    pub fn opened(
        &self,
        id: uuid::Uuid,
        workspace: uuid::Uuid,
        persona_agent: Option<uuid::Uuid>,
    ) -> fleetdesk_kernel::events::NewEvent {
        use fleetdesk_kernel::decision::{DecisionKind, DecisionStatus, decision_event};
        use fleetdesk_kernel::events::{DecisionChange, EventBody};
        decision_event(
            workspace,
            persona_agent,
            id,
            EventBody::DecisionOpened,
            DecisionChange {
                kind: DecisionKind::AccountBanned,
                title: self.title.clone(),
                status: DecisionStatus::Open,
                choice: None,
            },
        )
    }
}

/// The decision a ban of `code` on `platform` (generation `generation`) opens, reported with
/// `reason` as of `occurred_at`.
pub fn ban_decision(
    code: &str,
    platform: &str,
    generation: i32,
    reason: Option<&str>,
    occurred_at: jiff::Timestamp,
) -> BanDecision {
    BanDecision {
        title: format!("{code} on {platform} was banned (generation {generation})"),
        question: format!("Open a new generation of {code} on {platform}?"),
        detail: serde_json::json!({
            "code": code,
            "platform": platform,
            "generation": generation,
            "reason": reason,
            "occurred_at": fleetdesk_kernel::format_utc(occurred_at),
        }),
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
    fn an_opened_ban_decision_tells_the_persona_s_agent() {
        let at: jiff::Timestamp = "2026-03-02T08:30:00Z".parse().unwrap();
        let decision = ban_decision("TW-T001", "threads", 2, None, at);
        let (id, ws, agent) = (
            uuid::Uuid::from_u128(1),
            uuid::Uuid::from_u128(2),
            uuid::Uuid::from_u128(3),
        );
        let event = decision.opened(id, ws, Some(agent));
        assert_eq!(
            (event.object_id, event.workspace_id, event.agent_id),
            (id, ws, Some(agent))
        );
        let fleetdesk_kernel::events::EventBody::DecisionOpened(change) = event.body else {
            panic!("{event:?}");
        };
        assert_eq!(change.kind.as_str(), BAN_DECISION_KIND);
        assert_eq!(change.title, "TW-T001 on threads was banned (generation 2)");
        assert_eq!(
            change.status,
            fleetdesk_kernel::decision::DecisionStatus::Open
        );
    }

    #[test]
    fn a_ban_decision_names_the_code_platform_and_generation() {
        let at: jiff::Timestamp = "2026-03-02T08:30:00Z".parse().unwrap();
        assert_eq!(
            ban_decision("TW-T001", "threads", 2, Some("flagged"), at),
            BanDecision {
                title: "TW-T001 on threads was banned (generation 2)".into(),
                question: "Open a new generation of TW-T001 on threads?".into(),
                detail: serde_json::json!({
                    "code": "TW-T001",
                    "platform": "threads",
                    "generation": 2,
                    "reason": "flagged",
                    "occurred_at": "2026-03-02T08:30:00Z",
                }),
            }
        );
        let unexplained = ban_decision("TW-T001", "threads", 2, None, at);
        assert_eq!(unexplained.detail["reason"], serde_json::Value::Null);
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
