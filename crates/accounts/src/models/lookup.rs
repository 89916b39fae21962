//! Which account a `{code}` names (spec: "`{code}` accepts current and legacy codes; query
//! `platform` disambiguates"). The adapter loads every slot of the workspace whose current or
//! legacy code is the code (on the given platform, when one is given) in one statement; these
//! functions decide among them.

use crate::ports::LookupError;
use fleetdesk_kernel::Platform;

/// A loaded row that may be the account a `{code}` names.
pub trait Candidate {
    /// Under one of the caller's personas.
    fn mine(&self) -> bool;
    /// Matched by its current code rather than a legacy one.
    fn by_current(&self) -> bool;
}

/// Whether a slot answers to `code` (and `platform`, when given): `Some(true)` by its current
/// code, `Some(false)` by its legacy code only, `None` not at all.
pub fn answers_to(
    code: &str,
    platform: Option<Platform>,
    slot_code: &str,
    slot_legacy_code: Option<&str>,
    slot_platform: Platform,
) -> Option<bool> {
    if platform.is_some_and(|p| p != slot_platform) {
        return None;
    }
    if slot_code == code {
        Some(true)
    } else if slot_legacy_code == Some(code) {
        Some(false)
    } else {
        None
    }
}

/// Picks the account a `{code}` names among the rows that answer to it: nothing is
/// [`LookupError::NotFound`]; rows only under other agents' personas are
/// [`LookupError::NotYours`]; among the caller's own, those matched by current code come first,
/// then those matched by legacy code; more than one in the chosen group (a code repeated across
/// platforms without `platform`) is [`LookupError::Ambiguous`].
pub fn pick<R: Candidate>(rows: Vec<R>) -> Result<R, LookupError> {
    if rows.is_empty() {
        return Err(LookupError::NotFound);
    }
    if !rows.iter().any(|r| r.mine()) {
        return Err(LookupError::NotYours);
    }
    let (current, legacy): (Vec<_>, Vec<_>) = rows
        .into_iter()
        .filter(|r| r.mine())
        .partition(|r| r.by_current());
    let mut group = if current.is_empty() { legacy } else { current };
    if group.len() > 1 {
        return Err(LookupError::Ambiguous);
    }
    Ok(group.remove(0))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A candidate named by its test label.
    #[derive(Debug, PartialEq)]
    struct Row(&'static str, bool, bool);

    impl Candidate for Row {
        fn mine(&self) -> bool {
            self.1
        }
        fn by_current(&self) -> bool {
            self.2
        }
    }

    const MINE: bool = true;
    const THEIRS: bool = false;
    const CURRENT: bool = true;
    const LEGACY: bool = false;

    #[test]
    fn no_row_is_not_found() {
        assert_eq!(pick(Vec::<Row>::new()), Err(LookupError::NotFound));
    }

    #[test]
    fn only_other_agents_rows_are_not_yours() {
        assert_eq!(
            pick(vec![Row("a", THEIRS, CURRENT)]),
            Err(LookupError::NotYours)
        );
        assert_eq!(
            pick(vec![Row("a", THEIRS, CURRENT), Row("b", THEIRS, LEGACY)]),
            Err(LookupError::NotYours)
        );
    }

    #[test]
    fn one_own_row_is_picked_whichever_code_matched() {
        assert_eq!(
            pick(vec![Row("a", MINE, CURRENT)]),
            Ok(Row("a", MINE, CURRENT))
        );
        assert_eq!(
            pick(vec![Row("a", MINE, LEGACY)]),
            Ok(Row("a", MINE, LEGACY))
        );
    }

    #[test]
    fn the_current_code_wins_over_a_legacy_one() {
        assert_eq!(
            pick(vec![Row("old", MINE, LEGACY), Row("new", MINE, CURRENT)]),
            Ok(Row("new", MINE, CURRENT))
        );
        // Two legacy matches do not make it ambiguous when one current code matches.
        assert_eq!(
            pick(vec![
                Row("old1", MINE, LEGACY),
                Row("new", MINE, CURRENT),
                Row("old2", MINE, LEGACY),
            ]),
            Ok(Row("new", MINE, CURRENT))
        );
    }

    #[test]
    fn other_agents_rows_are_passed_over_when_one_is_mine() {
        assert_eq!(
            pick(vec![
                Row("theirs", THEIRS, CURRENT),
                Row("mine", MINE, LEGACY)
            ]),
            Ok(Row("mine", MINE, LEGACY))
        );
        assert_eq!(
            pick(vec![
                Row("theirs", THEIRS, LEGACY),
                Row("mine", MINE, LEGACY)
            ]),
            Ok(Row("mine", MINE, LEGACY))
        );
    }

    #[test]
    fn several_own_rows_in_the_chosen_group_are_ambiguous() {
        assert_eq!(
            pick(vec![
                Row("threads", MINE, LEGACY),
                Row("tiktok", MINE, LEGACY)
            ]),
            Err(LookupError::Ambiguous)
        );
        assert_eq!(
            pick(vec![
                Row("threads", MINE, CURRENT),
                Row("tiktok", MINE, CURRENT)
            ]),
            Err(LookupError::Ambiguous)
        );
        // Another agent's row does not count toward the ambiguity.
        assert_eq!(
            pick(vec![
                Row("mine", MINE, LEGACY),
                Row("theirs", THEIRS, LEGACY)
            ]),
            Ok(Row("mine", MINE, LEGACY))
        );
    }

    #[test]
    fn a_slot_answers_to_its_current_or_legacy_code_on_the_asked_platform() {
        use Platform::{Threads, Tiktok};
        assert_eq!(
            answers_to("TW-T001", None, "TW-T001", None, Threads),
            Some(true)
        );
        assert_eq!(
            answers_to("T001", None, "TW-T001", Some("T001"), Threads),
            Some(false)
        );
        // The current code is what it answers to when both are the same.
        assert_eq!(
            answers_to("TW-T001", None, "TW-T001", Some("TW-T001"), Threads),
            Some(true)
        );
        assert_eq!(
            answers_to("TW-T002", None, "TW-T001", Some("T001"), Threads),
            None
        );
        assert_eq!(
            answers_to("T001", Some(Threads), "TW-T001", Some("T001"), Threads),
            Some(false)
        );
        assert_eq!(
            answers_to("T001", Some(Tiktok), "TW-T001", Some("T001"), Threads),
            None
        );
        assert_eq!(
            answers_to("TW-T001", Some(Tiktok), "TW-T001", None, Threads),
            None
        );
    }
}
