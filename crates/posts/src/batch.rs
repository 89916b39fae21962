//! What a `report_posts` batch loads before [`crate::report::plan_report`] decides it: the
//! accounts its codes name, each item read against its account ([`read_items`]), and the
//! stored posts it may match ([`Lookups`]).

use crate::ports::RawReportItem;
use crate::post::body_key;
use crate::report::{ItemError, ItemMissing, NotYours, ReportItem, ReportSlot, ready_item};
use fleetdesk_accounts::models::lookup::{SlotName, choose};
use fleetdesk_accounts::ports::LookupError;
use fleetdesk_kernel::Platform;
use jiff::Timestamp;
use jiff::tz::TimeZone;
use uuid::Uuid;

/// An account a batch names, as the adapter loads it (locked, so reports, metrics and drafts
/// of one account run one at a time).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LoadedSlot {
    pub name: SlotName,
    /// The account's IANA zone: the item's local times are read in it.
    pub timezone: String,
    pub workspace_id: Uuid,
    pub persona_id: Uuid,
    /// The agent the persona is assigned to.
    pub persona_agent: Option<Uuid>,
    pub project_id: Uuid,
    /// The open generation, if any.
    pub generation_id: Option<Uuid>,
}

/// The codes a batch names, sorted and once each: the accounts the adapter loads.
pub fn report_codes(raw: &[Result<RawReportItem, ItemError>]) -> Vec<&str> {
    let mut codes: Vec<&str> = raw
        .iter()
        .filter_map(|r| r.as_ref().ok().map(|i| i.code.as_str()))
        .collect();
    codes.sort_unstable();
    codes.dedup();
    codes
}

/// The caller's account a code (on a platform, when given) names among the loaded ones, or
/// the item's refusal: for posts and metrics alike.
pub fn resolve<'a>(
    slots: &'a [LoadedSlot],
    code: &str,
    platform: Option<Platform>,
) -> Result<&'a LoadedSlot, ItemError> {
    choose(slots, code, platform, |s| &s.name).map_err(|e| match e {
        LookupError::NotFound => ItemError::NotFound(ItemMissing::Account {
            code: code.to_owned(),
        }),
        LookupError::Ambiguous => ItemError::AmbiguousCode {
            code: code.to_owned(),
        },
        LookupError::NotYours => ItemError::Forbidden(NotYours::Account {
            code: code.to_owned(),
        }),
    })
}

/// Every item read against its account: the account resolved, then the item's own checks in
/// the account's zone ([`ready_item`]). An item refused before (`Err`) stays refused.
pub fn read_items(
    raw: Vec<Result<RawReportItem, ItemError>>,
    slots: &[LoadedSlot],
    now: Timestamp,
) -> Vec<Result<ReportItem, ItemError>> {
    raw.into_iter()
        .map(|r| {
            let raw = r?;
            let loaded = resolve(slots, raw.code.as_str(), raw.platform)?;
            let zone = TimeZone::get(&loaded.timezone).map_err(|e| ItemError::Invalid {
                field: "code".into(),
                message: format!("the account's zone {} is unknown: {e}", loaded.timezone),
            })?;
            let slot = ReportSlot {
                slot_id: loaded.name.slot_id,
                code: loaded.name.code.clone(),
                platform: loaded.name.platform,
                workspace_id: loaded.workspace_id,
                persona_id: loaded.persona_id,
                persona_agent: loaded.persona_agent,
                project_id: loaded.project_id,
                generation_id: loaded.generation_id,
            };
            ready_item(raw, slot, &zone, now)
        })
        .collect()
}

/// The stored posts a batch may match, as the adapter looks them up: by id, by exact
/// (platform, platform id) pairs, and by exact (account, body key) pairs.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Lookups {
    pub post_ids: Vec<Uuid>,
    /// The platforms of `platform_ids`, pair by pair.
    pub id_platforms: Vec<&'static str>,
    pub platform_ids: Vec<String>,
    /// The accounts of `body_keys`, pair by pair.
    pub body_slots: Vec<Uuid>,
    pub body_keys: Vec<String>,
}

impl Lookups {
    /// What the readable items name; `None` when no item is readable (nothing to look up).
    pub fn of(items: &[Result<ReportItem, ItemError>]) -> Option<Lookups> {
        let mut l = Lookups::default();
        for i in items.iter().filter_map(|i| i.as_ref().ok()) {
            l.post_ids.extend(i.post_id);
            if let Some(pid) = &i.platform_post_id {
                l.id_platforms.push(i.slot.platform.as_str());
                l.platform_ids.push(pid.clone());
            }
            if let Some(body) = &i.body {
                l.body_slots.push(i.slot.slot_id);
                l.body_keys.push(body_key(body));
            }
        }
        items.iter().any(Result::is_ok).then_some(l)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::ItemRejection;
    use crate::report::ReportedStatus;
    use fleetdesk_kernel::AccountCode;

    fn slot(id: u128, code: &str, platform: Platform, mine: bool) -> LoadedSlot {
        LoadedSlot {
            name: SlotName {
                slot_id: Uuid::from_u128(id),
                code: code.into(),
                legacy_code: None,
                platform,
                mine,
            },
            timezone: "Asia/Taipei".into(),
            workspace_id: Uuid::from_u128(90),
            persona_id: Uuid::from_u128(100),
            persona_agent: Some(Uuid::from_u128(91)),
            project_id: Uuid::from_u128(200),
            generation_id: None,
        }
    }

    fn item(code: &str, platform: Option<Platform>, body: Option<&str>) -> RawReportItem {
        RawReportItem {
            code: AccountCode::parse(code).unwrap(),
            platform,
            status: ReportedStatus::Scheduled,
            scheduled_for: Some("2026-12-01 09:00".parse().unwrap()),
            published_at: None,
            platform_post_id: Some("pid-1".into()),
            permalink: None,
            body: body.map(str::to_owned),
            topic: None,
            has_media: None,
            sponsored: None,
            post_id: None,
            failure_reason: None,
        }
    }

    fn now() -> Timestamp {
        "2026-11-30T00:00:00Z".parse().unwrap()
    }

    #[test]
    fn codes_are_sorted_once_and_refused_items_name_none() {
        let raw = vec![
            Ok(item("tw02", None, None)),
            Err(ItemError::Rejected(ItemRejection::NoValues)),
            Ok(item("tw01", None, None)),
            Ok(item("tw02", None, None)),
        ];
        assert_eq!(report_codes(&raw), vec!["TW01", "TW02"]);
    }

    #[test]
    fn each_item_is_read_in_its_accounts_zone_or_refused_with_the_lookups_text() {
        let slots = vec![
            slot(1, "TW01", Platform::Threads, true),
            slot(2, "TW02", Platform::Threads, true),
            slot(3, "TW02", Platform::Instagram, true),
            slot(4, "TW03", Platform::Threads, false),
        ];
        let raw = vec![
            Ok(item("tw01", None, Some("Hello"))),
            Ok(item("tw02", None, None)),
            Ok(item("tw09", None, None)),
            Ok(item("tw03", None, None)),
            Err(ItemError::Rejected(ItemRejection::NoValues)),
        ];
        let items = read_items(raw, &slots, now());
        let first = items[0].as_ref().unwrap();
        assert_eq!(first.slot.slot_id, Uuid::from_u128(1));
        // What its events need: the account's workspace and its persona's agent.
        assert_eq!(
            (first.slot.workspace_id, first.slot.persona_agent),
            (Uuid::from_u128(90), Some(Uuid::from_u128(91)))
        );
        // 09:00 in Taipei (UTC+8).
        assert_eq!(
            first.scheduled_for,
            Some("2026-12-01T01:00:00Z".parse().unwrap())
        );
        let err = |i: usize| items[i].as_ref().unwrap_err().message();
        assert_eq!(
            err(1),
            "TW02 names accounts on several platforms; add platform"
        );
        assert_eq!(err(2), "no account TW09 in this workspace");
        assert_eq!(err(3), "account TW03 belongs to another agent's persona");
        assert_eq!(err(4), "no values to record");

        let l = Lookups::of(&items).unwrap();
        assert_eq!(l.id_platforms, vec!["threads"]);
        assert_eq!(l.platform_ids, vec!["pid-1"]);
        assert_eq!(l.body_slots, vec![Uuid::from_u128(1)]);
        assert_eq!(l.body_keys, vec![body_key("Hello")]);
    }

    #[test]
    fn an_unknown_zone_refuses_the_item_on_its_code_and_nothing_is_looked_up() {
        let mut s = slot(1, "TW01", Platform::Threads, true);
        s.timezone = "Mars/Olympus".into();
        let items = read_items(vec![Ok(item("tw01", None, None))], &[s], now());
        match &items[0] {
            Err(ItemError::Invalid { field, message }) => {
                assert_eq!(field, "code");
                assert!(message.starts_with("the account's zone Mars/Olympus is unknown"));
            }
            other => panic!("{other:?}"),
        }
        assert_eq!(Lookups::of(&items), None);
    }
}
