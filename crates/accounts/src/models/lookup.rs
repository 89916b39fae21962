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

/// What a `{code}` is matched on: a slot's id, current and legacy codes and platform, and
/// whether the asking agent runs its persona.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SlotName {
    pub slot_id: uuid::Uuid,
    pub code: String,
    pub legacy_code: Option<String>,
    pub platform: Platform,
    /// Under one of the caller's personas.
    pub mine: bool,
}

/// A loaded row as one asked `{code}` sees it.
struct Named<R> {
    row: R,
    mine: bool,
    by_current: bool,
}

impl<R> Candidate for Named<R> {
    fn mine(&self) -> bool {
        self.mine
    }
    fn by_current(&self) -> bool {
        self.by_current
    }
}

/// The caller's account that `code` (on `platform`, when given) names among loaded rows, each
/// carrying its [`SlotName`]: [`answers_to`] says which rows answer to it and by which code,
/// [`pick`] decides among them.
pub fn choose<R>(
    rows: impl IntoIterator<Item = R>,
    code: &str,
    platform: Option<Platform>,
    name: impl Fn(&R) -> &SlotName,
) -> Result<R, LookupError> {
    let named: Vec<Named<R>> = rows
        .into_iter()
        .filter_map(|row| {
            let s = name(&row);
            let by_current = answers_to(
                code,
                platform,
                &s.code,
                s.legacy_code.as_deref(),
                s.platform,
            )?;
            let mine = s.mine;
            Some(Named {
                row,
                mine,
                by_current,
            })
        })
        .collect();
    pick(named).map(|n| n.row)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn slot(n: u128, code: &str, legacy: Option<&str>, platform: Platform, mine: bool) -> SlotName {
        SlotName {
            slot_id: uuid::Uuid::from_u128(n),
            code: code.into(),
            legacy_code: legacy.map(Into::into),
            platform,
            mine,
        }
    }

    #[test]
    fn choose_prefers_the_current_code_and_the_platform_settles_a_repeated_one() {
        let rows = [
            slot(1, "TW-A", None, Platform::Threads, true),
            slot(2, "TW-B", Some("TW-A"), Platform::Threads, true),
            slot(3, "TW-A", None, Platform::Instagram, true),
        ];
        let id = |r: Result<&SlotName, LookupError>| r.map(|s| s.slot_id.as_u128());
        assert_eq!(
            id(choose(&rows, "TW-A", None, |r| *r)),
            Err(LookupError::Ambiguous)
        );
        assert_eq!(
            id(choose(&rows, "TW-A", Some(Platform::Instagram), |r| *r)),
            Ok(3)
        );
        assert_eq!(
            id(choose(&rows, "TW-A", Some(Platform::Threads), |r| *r)),
            Ok(1)
        );
        assert_eq!(id(choose(&rows[1..2], "TW-A", None, |r| *r)), Ok(2));
        assert_eq!(
            id(choose(&rows, "TW-Z", None, |r| *r)),
            Err(LookupError::NotFound)
        );
        let theirs = [slot(4, "TW-A", None, Platform::Threads, false)];
        assert_eq!(
            id(choose(&theirs, "TW-A", None, |r| *r)),
            Err(LookupError::NotYours)
        );
    }

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
