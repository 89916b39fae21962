//! Adding a code (`POST /accounts`): under the caller's own persona only; a code the
//! organization already has on the platform is answered as it stands when the same persona
//! resends it, and refused under any other persona. The adapter loads the persona's agent and,
//! when the insert finds the code taken, the code's persona; these functions decide.

use crate::ports::AddRefusal;
use uuid::Uuid;

/// Whether `agent_id` may add a code under a persona whose agent was loaded as `owner`:
/// `None` when the workspace has no such persona, `Some(None)` when it is assigned to nobody.
pub fn check_persona(owner: Option<Option<Uuid>>, agent_id: Uuid) -> Result<(), AddRefusal> {
    match owner {
        None => Err(AddRefusal::PersonaNotFound),
        Some(o) if o != Some(agent_id) => Err(AddRefusal::PersonaNotYours),
        Some(_) => Ok(()),
    }
}

/// A code the organization already has on the platform, held by `existing_persona`: resent
/// under the same persona it is answered as it stands (not created); under another it is taken.
pub fn check_existing(existing_persona: Uuid, persona: Uuid) -> Result<(), AddRefusal> {
    if existing_persona == persona {
        Ok(())
    } else {
        Err(AddRefusal::CodeTaken)
    }
}

/// The account id a code already there answers with: its live generation's, or, when no
/// generation of the slot is live, the slot's own id.
pub fn answering_account(slot_id: Uuid, live_generation: Option<Uuid>) -> Uuid {
    live_generation.unwrap_or(slot_id)
}

#[cfg(test)]
mod tests {
    use super::*;

    const ME: Uuid = Uuid::from_u128(1);
    const OTHER: Uuid = Uuid::from_u128(2);

    #[test]
    fn a_code_is_added_only_under_the_callers_own_persona() {
        assert_eq!(check_persona(None, ME), Err(AddRefusal::PersonaNotFound));
        assert_eq!(
            check_persona(Some(None), ME),
            Err(AddRefusal::PersonaNotYours)
        );
        assert_eq!(
            check_persona(Some(Some(OTHER)), ME),
            Err(AddRefusal::PersonaNotYours)
        );
        assert_eq!(check_persona(Some(Some(ME)), ME), Ok(()));
    }

    #[test]
    fn an_existing_code_is_the_same_personas_or_taken() {
        assert_eq!(check_existing(ME, ME), Ok(()));
        assert_eq!(check_existing(OTHER, ME), Err(AddRefusal::CodeTaken));
    }

    #[test]
    fn an_existing_code_answers_with_its_live_generation_else_its_slot() {
        const SLOT: Uuid = Uuid::from_u128(10);
        const LIVE: Uuid = Uuid::from_u128(11);
        assert_eq!(answering_account(SLOT, Some(LIVE)), LIVE);
        assert_eq!(answering_account(SLOT, None), SLOT);
    }
}
