//! A banned account replaced by a person's decision: the slot keeps its code and history, the
//! banned generation closes and the next one starts warming up.

use crate::models::state::{AccountState, AccountSubject};
use fleetdesk_kernel::events::NewEvent;
use uuid::Uuid;

/// A slot's live (not closed) generation, as loaded and locked for a decision about it, with
/// its account as events name it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LiveGeneration {
    pub id: Uuid,
    pub slot_id: Uuid,
    pub generation: i32,
    pub state: AccountState,
    pub account: AccountSubject,
}

/// What replacing a banned account writes.
#[derive(Debug, Clone, PartialEq)]
pub struct Replacement {
    /// The banned generation, closed now in `closed_as`.
    pub close: Uuid,
    pub closed_as: AccountState,
    /// The next generation of the slot, opened in `opens_as`.
    pub slot_id: Uuid,
    pub next: i32,
    pub opens_as: AccountState,
    /// What it tells: the account's live state went from banned to `opens_as`.
    pub event: NewEvent,
}

/// Replaces the banned generation a decision names; `None` when it is no longer live and
/// banned (closed meanwhile, or reported in another state since): the decision's account is
/// gone.
pub fn replace_banned(live: Option<LiveGeneration>) -> Option<Replacement> {
    let live = live.filter(|g| g.state == AccountState::Banned)?;
    let next = live.generation + 1;
    let opens_as = AccountState::Warming;
    let reason = format!("generation {next} opened by a person's decision");
    Some(Replacement {
        close: live.id,
        closed_as: AccountState::Replaced,
        slot_id: live.slot_id,
        next,
        opens_as,
        event: live
            .account
            .state_changed(live.state, opens_as, Some(&reason)),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_banned_generation_closes_as_replaced_and_the_next_opens_warming() {
        let account = AccountSubject {
            workspace_id: Uuid::from_u128(5),
            slot_id: Uuid::from_u128(2),
            code: "TW-T001".into(),
            platform: fleetdesk_kernel::Platform::Threads,
            persona_agent: Some(Uuid::from_u128(6)),
        };
        let live = |state| LiveGeneration {
            id: Uuid::from_u128(1),
            slot_id: Uuid::from_u128(2),
            generation: 3,
            state,
            account: account.clone(),
        };
        assert_eq!(
            replace_banned(Some(live(AccountState::Banned))),
            Some(Replacement {
                close: Uuid::from_u128(1),
                closed_as: AccountState::Replaced,
                slot_id: Uuid::from_u128(2),
                next: 4,
                opens_as: AccountState::Warming,
                // The account's live state: banned, now warming; told to its persona's agent.
                event: account.state_changed(
                    AccountState::Banned,
                    AccountState::Warming,
                    Some("generation 4 opened by a person's decision")
                ),
            })
        );
        assert_eq!(replace_banned(Some(live(AccountState::Active))), None);
        assert_eq!(replace_banned(None), None);
    }
}
