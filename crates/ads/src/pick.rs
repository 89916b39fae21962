//! Ad picks: a person's choice of a research card for an account, numbered `SP-<n>` per
//! organization, which an agent drafts a sponsored post with.

use serde_json::Value;
use std::fmt;
use uuid::Uuid;

use crate::research::ItemOutcome;
use crate::{AdsMissing, AdsRefusal, AdsRejection};

fleetdesk_kernel::text_enum! {
    /// Where a pick stands: `open` until a draft names it, then `drafted`; `cancelled` by a
    /// person.
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
    #[serde(rename_all = "snake_case")]
    #[cfg_attr(feature = "openapi", derive(utoipa::ToSchema), schema(as = AdPickStatus))]
    pub enum PickStatus {
        Open => "open",
        Drafted => "drafted",
        Cancelled => "cancelled",
    }
}

fleetdesk_kernel::text_enum! {
    /// Which picks a list shows: `open` (the default: the ones still to draft), one other
    /// status, or `all`.
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, serde::Deserialize)]
    #[serde(rename_all = "snake_case")]
    #[cfg_attr(feature = "openapi", derive(utoipa::ToSchema), schema(as = AdPickFilter))]
    pub enum PickFilter {
        #[default]
        Open => "open",
        Drafted => "drafted",
        Cancelled => "cancelled",
        All => "all",
    }
}

impl PickFilter {
    /// The statuses the filter lets through.
    pub fn statuses(self) -> &'static [&'static str] {
        match self {
            PickFilter::Open => &["open"],
            PickFilter::Drafted => &["drafted"],
            PickFilter::Cancelled => &["cancelled"],
            PickFilter::All => &["open", "drafted", "cancelled"],
        }
    }
}

/// The longest pick number a request may write, prefix and leading zeros included.
pub const MAX_PICK_CHARS: usize = 40;

/// The JSON Schema pattern of a pick number (with `maxLength` [`MAX_PICK_CHARS`]): exactly
/// what [`PickNumber::parse`] reads. ASCII only, no lookahead.
pub const PICK_PATTERN: &str = "^([Ss][Pp]-)?0*[1-9][0-9]{0,14}$";

/// A pick's number within its organization: written `SP-<n>`, read as that or the bare `<n>`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct PickNumber(pub i64);

impl PickNumber {
    /// `SP-12`, `sp-12`, `12` or `SP-012`: above zero, at most 15 significant digits and
    /// [`MAX_PICK_CHARS`] characters in all ([`PICK_PATTERN`]).
    pub fn parse(text: &str) -> Option<PickNumber> {
        if text.len() > MAX_PICK_CHARS {
            return None;
        }
        let digits = match text.get(..3) {
            Some(prefix) if prefix.eq_ignore_ascii_case("SP-") => &text[3..],
            _ => text,
        };
        if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
            return None;
        }
        let significant = digits.trim_start_matches('0');
        if significant.is_empty() || significant.len() > 15 {
            return None;
        }
        significant.parse().ok().map(PickNumber)
    }
}

impl fmt::Display for PickNumber {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "SP-{}", self.0)
    }
}

/// The longest direction a person writes on a pick.
pub const MAX_NOTE_CHARS: usize = 2000;

/// A pick as a draft finds it, locked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PickState {
    pub number: PickNumber,
    pub status: PickStatus,
    /// The account (slot) the pick is for, and its code.
    pub account_id: Uuid,
    pub code: String,
    /// The post that drafted it.
    pub post_id: Option<Uuid>,
}

/// Why a draft cannot name a pick.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PickProblem {
    /// No such pick in the agent's workspace: 404.
    Unknown(PickNumber),
    /// The pick is for another account: 400.
    OtherAccount { number: PickNumber, code: String },
    /// Cancelled by a person: 400.
    Cancelled(PickNumber),
    /// Another post drafted it already: 422.
    DraftedBy { number: PickNumber, post_id: Uuid },
    /// The post a resend found carries another pick: one pick per post, 422.
    PostHasPick { post_id: Uuid, other: PickNumber },
}

impl fmt::Display for PickProblem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PickProblem::Unknown(n) => write!(f, "no ad pick {n} in this workspace"),
            PickProblem::OtherAccount { number, code } => {
                write!(f, "ad pick {number} is for account {code}, not this one")
            }
            PickProblem::Cancelled(n) => write!(f, "ad pick {n} was cancelled"),
            PickProblem::DraftedBy { number, post_id } => {
                write!(f, "ad pick {number} is drafted already, as post {post_id}")
            }
            PickProblem::PostHasPick { post_id, other } => {
                write!(
                    f,
                    "post {post_id} carries ad pick {other} already: one pick per post"
                )
            }
        }
    }
}

/// Whether a draft of `account_id` may name `pick`: an open pick of that account, or one the
/// same post drafted already (`post_id`: the post a resent draft found). `Ok(true)` when the
/// pick is to be linked now.
pub fn judge_draft(
    pick: &PickState,
    account_id: Uuid,
    post_id: Option<Uuid>,
) -> Result<bool, PickProblem> {
    if pick.account_id != account_id {
        return Err(PickProblem::OtherAccount {
            number: pick.number,
            code: pick.code.clone(),
        });
    }
    match pick.status {
        PickStatus::Cancelled => Err(PickProblem::Cancelled(pick.number)),
        PickStatus::Open => Ok(true),
        PickStatus::Drafted if pick.post_id.is_some() && pick.post_id == post_id => Ok(false),
        PickStatus::Drafted => Err(PickProblem::DraftedBy {
            number: pick.number,
            post_id: pick.post_id.unwrap_or_default(),
        }),
    }
}

/// What cancelling a pick in `status` does: `true` when it changes it; a cancelled pick
/// answers unchanged. A drafted pick can be cancelled: its post stays as it is.
pub fn judge_cancel(status: PickStatus) -> bool {
    status != PickStatus::Cancelled
}

/// What a research item must have become for a person to pick it: a card (found, or cached).
pub fn check_pickable(
    item: &str,
    outcome: Option<ItemOutcome>,
    has_card: bool,
) -> Result<(), AdsRefusal> {
    if has_card {
        return Ok(());
    }
    let why = match outcome {
        None => "has not been looked up yet",
        Some(ItemOutcome::NotFound) => "was not found",
        Some(ItemOutcome::Failed) => "failed to be looked up",
        Some(ItemOutcome::Unqueried) => "was left unqueried",
        Some(ItemOutcome::Found | ItemOutcome::Cached) => "has no card",
    };
    Err(AdsRefusal::RejectedField {
        field: "item".to_owned(),
        message: format!("{item} {why}: only a card can be picked"),
    })
}

/// The research item a pick names, as loaded from the request in reach: the request's
/// organization and workspace, and the item's position, outcome and card (`None` each when
/// the request did not ask for the item).
#[derive(Debug, Clone, PartialEq)]
pub struct PickSource {
    pub organization_id: Uuid,
    pub workspace_id: Uuid,
    pub position: Option<i16>,
    pub outcome: Option<ItemOutcome>,
    pub card: Option<Value>,
}

/// What a pick is made from: the request's organization and workspace, the item's position
/// in it and its card.
#[derive(Debug, Clone, PartialEq)]
pub struct Picked {
    pub organization_id: Uuid,
    pub workspace_id: Uuid,
    pub position: i16,
    pub card: Value,
}

/// A pick of `item` of the research request `research_id` judged, in order: the request is in
/// reach (`source`), it asked for the item, and the item has a card ([`check_pickable`]).
pub fn check_source(
    research_id: Uuid,
    item: &str,
    source: Option<PickSource>,
) -> Result<Picked, AdsRefusal> {
    let Some(source) = source else {
        return Err(AdsRefusal::not_there(
            "research_id",
            format!("no research request {research_id} in this organization"),
        ));
    };
    let Some(position) = source.position else {
        return Err(AdsRefusal::RejectedField {
            field: "item".to_owned(),
            message: format!("research request {research_id} did not ask for {item}"),
        });
    };
    check_pickable(item, source.outcome, source.card.is_some())?;
    Ok(Picked {
        organization_id: source.organization_id,
        workspace_id: source.workspace_id,
        position,
        card: source.card.unwrap_or_default(),
    })
}

/// Why no account of the research's workspace is picked for: its `code` names accounts on
/// several platforms (`ambiguous`: the person must give the platform), or none.
pub fn account_refusal(code: &str, ambiguous: bool) -> AdsRefusal {
    if ambiguous {
        AdsRefusal::RejectedField {
            field: "platform".to_owned(),
            message: format!("{code} names accounts on several platforms: give platform"),
        }
    } else {
        AdsRefusal::not_there(
            "code",
            format!("no account {code} in the research request's workspace"),
        )
    }
}

/// The one pick numbered `number` in reach, of those `found`: none is unknown (404); several
/// are a number that several organizations use, which a platform admin outside them cannot
/// name (422).
pub fn one_in_reach<T>(number: PickNumber, found: Vec<T>) -> Result<T, AdsRefusal> {
    let mut found = found.into_iter();
    match (found.next(), found.next()) {
        (None, _) => Err(AdsRefusal::NotFound(AdsMissing::Pick(number))),
        (Some(one), None) => Ok(one),
        (Some(_), Some(_)) => Err(AdsRefusal::Rejected(
            AdsRejection::PickInSeveralOrganizations(number),
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_pick_is_sp_dash_digits_or_the_bare_integer() {
        assert_eq!(PickNumber::parse("SP-12"), Some(PickNumber(12)));
        assert_eq!(PickNumber::parse("sp-12"), Some(PickNumber(12)));
        assert_eq!(PickNumber::parse("7"), Some(PickNumber(7)));
        assert_eq!(PickNumber::parse("SP-007"), Some(PickNumber(7)));
        assert_eq!(
            PickNumber::parse(&"9".repeat(15)),
            Some(PickNumber(999_999_999_999_999))
        );
        let forty = format!("SP-{}1", "0".repeat(36));
        assert_eq!(forty.len(), MAX_PICK_CHARS);
        assert_eq!(PickNumber::parse(&forty), Some(PickNumber(1)));
        for bad in [
            "",
            "SP-",
            "SP-0",
            "0",
            "000",
            "SP-1a",
            "SP--1",
            "-1",
            "1.5",
            "PS-1",
            " 7",
            "7 ",
            &"9".repeat(16),
            &format!("SP-{}1", "0".repeat(37)),
        ] {
            assert_eq!(PickNumber::parse(bad), None, "{bad}");
        }
        assert_eq!(PickNumber(42).to_string(), "SP-42");
    }

    /// The pattern the API states accepts what `parse` reads and nothing else.
    #[test]
    fn the_pattern_says_what_is_read() {
        let pattern = regex::Regex::new(PICK_PATTERN).unwrap();
        let samples = [
            "SP-1",
            "sp-1",
            "Sp-12",
            "sP-3",
            "1",
            "007",
            "SP-000000000000000000001",
            "0",
            "SP-0",
            "SP-",
            "",
            "SP-1a",
            "SPX1",
            "SP1",
            "-1",
            "+1",
            " 1",
            "1 ",
            "١",
            "１",
            "999999999999999",
            "1000000000000000",
            "SP-999999999999999",
        ];
        for s in samples {
            assert_eq!(
                pattern.is_match(s) && s.len() <= MAX_PICK_CHARS,
                PickNumber::parse(s).is_some(),
                "{s:?}"
            );
        }
    }

    fn state(status: PickStatus, post_id: Option<Uuid>) -> PickState {
        PickState {
            number: PickNumber(3),
            status,
            account_id: Uuid::from_u128(1),
            code: "TW-T001".into(),
            post_id,
        }
    }

    #[test]
    fn a_draft_names_an_open_pick_of_its_own_account() {
        let mine = Uuid::from_u128(1);
        let post = Uuid::from_u128(9);
        assert_eq!(
            judge_draft(&state(PickStatus::Open, None), mine, None),
            Ok(true)
        );
        assert_eq!(
            judge_draft(&state(PickStatus::Open, None), Uuid::from_u128(2), None),
            Err(PickProblem::OtherAccount {
                number: PickNumber(3),
                code: "TW-T001".into()
            })
        );
        assert_eq!(
            judge_draft(&state(PickStatus::Cancelled, None), mine, None),
            Err(PickProblem::Cancelled(PickNumber(3)))
        );
        // A resent draft that found the post which drafted the pick links nothing new.
        assert_eq!(
            judge_draft(&state(PickStatus::Drafted, Some(post)), mine, Some(post)),
            Ok(false)
        );
        assert_eq!(
            judge_draft(&state(PickStatus::Drafted, Some(post)), mine, None),
            Err(PickProblem::DraftedBy {
                number: PickNumber(3),
                post_id: post
            })
        );
        assert!(judge_cancel(PickStatus::Open));
        assert!(judge_cancel(PickStatus::Drafted));
        assert!(!judge_cancel(PickStatus::Cancelled));
    }

    #[test]
    fn only_a_card_is_picked() {
        use ItemOutcome as O;
        assert!(check_pickable("123456", Some(O::Found), true).is_ok());
        assert!(check_pickable("123456", Some(O::Cached), true).is_ok());
        for (outcome, why) in [
            (None, "has not been looked up yet"),
            (Some(O::NotFound), "was not found"),
            (Some(O::Failed), "failed to be looked up"),
            (Some(O::Unqueried), "was left unqueried"),
        ] {
            let err = check_pickable("123456", outcome, false).unwrap_err();
            assert_eq!(
                err,
                AdsRefusal::RejectedField {
                    field: "item".into(),
                    message: format!("123456 {why}: only a card can be picked"),
                }
            );
        }
    }

    #[test]
    fn a_pick_needs_a_request_in_reach_that_asked_for_the_item_and_its_card() {
        let research = Uuid::from_u128(5);
        let found = PickSource {
            organization_id: Uuid::from_u128(1),
            workspace_id: Uuid::from_u128(2),
            position: Some(3),
            outcome: Some(ItemOutcome::Found),
            card: Some(serde_json::json!({"title": "Lamp"})),
        };
        let none = check_source(research, "123", None).unwrap_err();
        assert!(matches!(&none, AdsRefusal::NotFoundField { field, .. } if field == "research_id"));
        assert_eq!(
            none.to_string(),
            format!("research_id: no research request {research} in this organization")
        );
        let not_asked = PickSource {
            position: None,
            outcome: None,
            card: None,
            ..found.clone()
        };
        assert_eq!(
            check_source(research, "123", Some(not_asked)),
            Err(AdsRefusal::RejectedField {
                field: "item".into(),
                message: format!("research request {research} did not ask for 123"),
            })
        );
        let no_card = PickSource {
            outcome: Some(ItemOutcome::NotFound),
            card: None,
            ..found.clone()
        };
        assert_eq!(
            check_source(research, "123", Some(no_card))
                .unwrap_err()
                .to_string(),
            "item: 123 was not found: only a card can be picked"
        );
        let picked = check_source(research, "123", Some(found.clone())).unwrap();
        assert_eq!(
            (picked.position, picked.workspace_id),
            (3, found.workspace_id)
        );
        assert_eq!(Some(picked.card), found.card);
    }

    #[test]
    fn an_account_code_names_one_account_or_is_refused() {
        assert_eq!(
            account_refusal("TW-1", true).to_string(),
            "platform: TW-1 names accounts on several platforms: give platform"
        );
        let unknown = account_refusal("TW-1", false);
        assert!(matches!(&unknown, AdsRefusal::NotFoundField { field, .. } if field == "code"));
        assert_eq!(
            unknown.to_string(),
            "code: no account TW-1 in the research request's workspace"
        );
    }

    #[test]
    fn a_number_names_one_pick_in_reach() {
        let n = PickNumber(4);
        assert_eq!(one_in_reach(n, vec!['a']), Ok('a'));
        assert_eq!(
            one_in_reach(n, Vec::<char>::new()),
            Err(AdsRefusal::NotFound(AdsMissing::Pick(n)))
        );
        assert_eq!(
            one_in_reach(n, vec!['a', 'b']),
            Err(AdsRefusal::Rejected(
                AdsRejection::PickInSeveralOrganizations(n)
            ))
        );
    }
}
