use fleetdesk_kernel::Platform;
use fleetdesk_kernel::events::{AccountChange, EventBody, NewEvent};
use serde::{Deserialize, Serialize};
use uuid::Uuid;

fleetdesk_kernel::text_enum! {
    /// The state of one generation of an account.
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
    #[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
    #[serde(rename_all = "lowercase")]
    pub enum AccountState {
        Warming => "warming",
        Active => "active",
        Banned => "banned",
        Quarantined => "quarantined",
        Paused => "paused",
        /// A generation that a newer one replaced; never reported by agents.
        Replaced => "replaced",
    }
}

impl AccountState {
    /// Only active accounts count as needing posts.
    pub fn in_rotation(self) -> bool {
        self == AccountState::Active
    }
}

fleetdesk_kernel::text_enum! {
    /// What an agent may report with `POST /accounts/{code}/state`.
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
    #[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
    #[serde(rename_all = "lowercase")]
    pub enum ReportedState {
        Banned => "banned",
        Quarantined => "quarantined",
        Paused => "paused",
        Restored => "restored",
        Warming => "warming",
    }
}

impl ReportedState {
    /// banned, quarantined and paused need the platform's words as a reason.
    pub fn needs_reason(self) -> bool {
        matches!(
            self,
            ReportedState::Banned | ReportedState::Quarantined | ReportedState::Paused
        )
    }

    /// The state the generation ends in: `restored` leads to active.
    pub fn target(self) -> AccountState {
        match self {
            ReportedState::Banned => AccountState::Banned,
            ReportedState::Quarantined => AccountState::Quarantined,
            ReportedState::Paused => AccountState::Paused,
            ReportedState::Restored => AccountState::Active,
            ReportedState::Warming => AccountState::Warming,
        }
    }
}

/// The effect of a state report, per the account state table.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StateMove {
    /// The report names the state the account already has.
    Unchanged,
    Changed {
        from: AccountState,
        to: AccountState,
        /// A ban opens a pending decision asking whether to open a new generation; it opens
        /// no generation by itself.
        opens_ban_decision: bool,
        /// Leaving rotation moves not-yet-published posts to inventory. Restoring releases
        /// nothing automatically.
        stocks_posts: bool,
    },
}

/// Applies a report to the current state of the live generation.
pub fn apply_report(current: AccountState, report: ReportedState) -> StateMove {
    let to = report.target();
    if current == to {
        return StateMove::Unchanged;
    }
    StateMove::Changed {
        from: current,
        to,
        opens_ban_decision: to == AccountState::Banned,
        stocks_posts: !to.in_rotation(),
    }
}

impl StateMove {
    /// What this move of `account` tells, with the report's `reason`: `account.state_changed`,
    /// none when unchanged.
    pub fn event(self, account: &AccountSubject, reason: Option<&str>) -> Option<NewEvent> {
        match self {
            StateMove::Unchanged => None,
            StateMove::Changed { from, to, .. } => Some(account.state_changed(from, to, reason)),
        }
    }
}

/// An account as its events name it: its slot (the event's object, the same across
/// generations), code and platform, its workspace, and the agent its persona is assigned to
/// (told).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AccountSubject {
    pub workspace_id: Uuid,
    pub slot_id: Uuid,
    pub code: String,
    pub platform: Platform,
    pub persona_agent: Option<Uuid>,
}

impl AccountSubject {
    /// `account.state_changed`: this account's live state went from `from` to `to`, for
    /// `reason`.
    pub fn state_changed(
        &self,
        from: AccountState,
        to: AccountState,
        reason: Option<&str>,
    ) -> NewEvent {
        NewEvent {
            workspace_id: self.workspace_id,
            agent_id: self.persona_agent,
            object_id: self.slot_id,
            body: EventBody::AccountStateChanged(AccountChange {
                code: self.code.clone(),
                platform: self.platform,
                from: from.as_str().to_owned(),
                to: to.as_str().to_owned(),
                reason: reason.map(str::to_owned),
            }),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use AccountState as S;
    use ReportedState as R;

    #[test]
    fn stored_text_is_the_serde_form() {
        for s in S::ALL {
            assert_eq!(serde_json::to_value(s).unwrap(), s.as_str());
        }
        for r in R::ALL {
            assert_eq!(serde_json::to_value(r).unwrap(), r.as_str());
        }
    }

    #[test]
    fn a_ban_opens_a_decision_and_stocks_posts() {
        assert_eq!(
            apply_report(S::Active, R::Banned),
            StateMove::Changed {
                from: S::Active,
                to: S::Banned,
                opens_ban_decision: true,
                stocks_posts: true
            }
        );
    }

    #[test]
    fn quarantine_pause_and_warming_stock_posts_without_a_decision() {
        for r in [R::Quarantined, R::Paused, R::Warming] {
            match apply_report(S::Active, r) {
                StateMove::Changed {
                    to,
                    opens_ban_decision,
                    stocks_posts,
                    ..
                } => {
                    assert_eq!(to, r.target());
                    assert!(!opens_ban_decision);
                    assert!(stocks_posts);
                }
                other => panic!("{r:?}: {other:?}"),
            }
        }
    }

    #[test]
    fn restored_leads_to_active_and_releases_nothing() {
        assert_eq!(
            apply_report(S::Paused, R::Restored),
            StateMove::Changed {
                from: S::Paused,
                to: S::Active,
                opens_ban_decision: false,
                stocks_posts: false
            }
        );
    }

    #[test]
    fn the_state_it_already_has_is_unchanged() {
        assert_eq!(apply_report(S::Banned, R::Banned), StateMove::Unchanged);
        assert_eq!(apply_report(S::Active, R::Restored), StateMove::Unchanged);
        assert_eq!(apply_report(S::Warming, R::Warming), StateMove::Unchanged);
    }

    #[test]
    fn a_change_tells_the_persona_s_agent_and_an_unchanged_report_tells_nothing() {
        let account = AccountSubject {
            workspace_id: Uuid::from_u128(1),
            slot_id: Uuid::from_u128(2),
            code: "TW-T001".into(),
            platform: Platform::Threads,
            persona_agent: Some(Uuid::from_u128(3)),
        };
        let paused = apply_report(S::Active, R::Paused)
            .event(&account, Some("too many posts"))
            .expect("a change tells");
        assert_eq!(
            (paused.workspace_id, paused.agent_id, paused.object_id),
            (
                Uuid::from_u128(1),
                Some(Uuid::from_u128(3)),
                Uuid::from_u128(2)
            )
        );
        assert_eq!(
            paused.body,
            EventBody::AccountStateChanged(AccountChange {
                code: "TW-T001".into(),
                platform: Platform::Threads,
                from: "active".into(),
                to: "paused".into(),
                reason: Some("too many posts".into()),
            })
        );
        let restored = apply_report(S::Paused, R::Restored)
            .event(&account, None)
            .unwrap();
        assert_eq!(
            restored.body.data(),
            serde_json::json!({"code": "TW-T001", "platform": "threads", "from": "paused",
                               "to": "active", "reason": null})
        );
        assert_eq!(
            apply_report(S::Paused, R::Paused).event(&account, Some("again")),
            None
        );
    }

    #[test]
    fn reasons_are_required_for_the_three_stops() {
        assert!(R::Banned.needs_reason());
        assert!(R::Quarantined.needs_reason());
        assert!(R::Paused.needs_reason());
        assert!(!R::Restored.needs_reason());
        assert!(!R::Warming.needs_reason());
    }
}
