//! A registered group and the knowledge-base entries that suit it.

use serde::{Deserialize, Serialize};

fleetdesk_kernel::text_enum! {
    /// The platform a group lives on.
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
    #[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
    #[serde(rename_all = "lowercase")]
    pub enum Channel {
        Whatsapp => "whatsapp",
        Discord => "discord",
    }
}

fleetdesk_kernel::text_enum! {
    /// Archived spaces answer 404 to every community call.
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
    #[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
    #[serde(rename_all = "lowercase")]
    pub enum SpaceStatus {
        Active => "active",
        Archived => "archived",
    }
}

/// A group registered by the tenant file, as community_space answers it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Space {
    #[serde(rename = "space_id")]
    pub id: uuid::Uuid,
    #[serde(skip)]
    pub workspace_id: uuid::Uuid,
    pub name: String,
    pub channel: Channel,
    pub space_type: Option<String>,
    /// A market code (TW, JP, ...); the space's days are read in its market's zone.
    pub market: String,
    pub track: Option<String>,
    pub location: Option<String>,
    pub status: SpaceStatus,
    pub language: Option<String>,
}

impl Space {
    /// The space's time zone: its market's.
    pub fn zone(&self) -> jiff::tz::TimeZone {
        fleetdesk_kernel::Market::parse(&self.market)
            .unwrap_or(fleetdesk_kernel::Market::DEFAULT)
            .zone()
    }

    /// The space's axis tags: for each axis its name and the tag an entry of that axis must
    /// carry to suit the space (None when the space has no value on that axis: then only
    /// entries without the axis suit it). Folded as [`fold_tag`] folds entry tags.
    pub fn axes(&self) -> [(&'static str, Option<String>); 3] {
        let tag = |axis: &str, value: Option<&str>| {
            value
                .map(str::trim)
                .filter(|v| !v.is_empty())
                .map(|v| fold_tag(&format!("{axis}:{v}")))
        };
        [
            ("market", tag("market", Some(&self.market))),
            ("track", tag("track", self.track.as_deref())),
            ("location", tag("location", self.location.as_deref())),
        ]
    }
}

/// The tag every knowledge-base entry the community assistant may quote carries.
pub const COMMUNITY_TAG: &str = "community";

pub use fleetdesk_wiki::entry::fold_tag;

/// Whether an entry with `tags` suits the space: it carries the `community` tag, and for each
/// axis (market, track, location) it either has no tag of that axis (general) or has the
/// space's value among its tags of that axis.
pub fn entry_suits_space(tags: &[String], space: &Space) -> bool {
    let folded: Vec<String> = tags.iter().map(|t| fold_tag(t)).collect();
    if !folded.iter().any(|t| t == COMMUNITY_TAG) {
        return false;
    }
    space.axes().iter().all(|(axis, wanted)| {
        let prefix = format!("{axis}:");
        let mut of_axis = folded.iter().filter(|t| t.starts_with(&prefix)).peekable();
        of_axis.peek().is_none() || wanted.as_ref().is_some_and(|w| of_axis.any(|t| t == w))
    })
}

/// A TW WhatsApp space for tests.
#[cfg(test)]
pub(crate) fn test_space(track: Option<&str>, location: Option<&str>) -> Space {
    Space {
        id: uuid::Uuid::nil(),
        workspace_id: uuid::Uuid::nil(),
        name: "Mia fans".into(),
        channel: Channel::Whatsapp,
        space_type: None,
        market: "TW".into(),
        track: track.map(Into::into),
        location: location.map(Into::into),
        status: SpaceStatus::Active,
        language: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn space(track: Option<&str>, location: Option<&str>) -> Space {
        test_space(track, location)
    }

    fn tags(list: &[&str]) -> Vec<String> {
        list.iter().map(|t| t.to_string()).collect()
    }

    #[test]
    fn only_entries_tagged_community_suit_a_space() {
        let s = space(Some("beauty"), Some("taipei"));
        assert!(entry_suits_space(&tags(&["community"]), &s));
        assert!(entry_suits_space(&tags(&["Community ", "faq"]), &s));
        assert!(!entry_suits_space(&tags(&["faq", "market:TW"]), &s));
        assert!(!entry_suits_space(&[], &s));
    }

    #[test]
    fn an_axis_tag_must_match_the_space_and_entries_without_the_axis_are_general() {
        let s = space(Some("beauty"), Some("taipei"));
        assert!(entry_suits_space(&tags(&["community", "market:TW"]), &s));
        assert!(entry_suits_space(&tags(&["community", "Market: tw"]), &s));
        assert!(!entry_suits_space(&tags(&["community", "market:JP"]), &s));
        assert!(entry_suits_space(&tags(&["community", "track:beauty"]), &s));
        assert!(!entry_suits_space(&tags(&["community", "track:food"]), &s));
        assert!(entry_suits_space(
            &tags(&["community", "location:Taipei"]),
            &s
        ));
        assert!(!entry_suits_space(
            &tags(&["community", "location:tainan"]),
            &s
        ));
        // Every axis must hold.
        assert!(!entry_suits_space(
            &tags(&["community", "market:TW", "track:food"]),
            &s
        ));
        assert!(entry_suits_space(
            &tags(&["community", "market:TW", "track:beauty", "location:taipei"]),
            &s
        ));
        // One of several values of an axis is enough.
        assert!(entry_suits_space(
            &tags(&["community", "market:JP", "market:TW"]),
            &s
        ));
    }

    #[test]
    fn a_space_without_a_value_on_an_axis_gets_only_entries_without_that_axis() {
        let s = space(None, None);
        assert!(entry_suits_space(&tags(&["community", "market:TW"]), &s));
        assert!(!entry_suits_space(
            &tags(&["community", "track:beauty"]),
            &s
        ));
        assert!(!entry_suits_space(
            &tags(&["community", "location:taipei"]),
            &s
        ));
        assert_eq!(
            s.axes(),
            [
                ("market", Some("market:tw".into())),
                ("track", None),
                ("location", None)
            ]
        );
    }

    #[test]
    fn a_space_reads_days_in_its_market_zone() {
        let mut s = space(None, None);
        assert_eq!(s.zone().iana_name(), Some("Asia/Taipei"));
        s.market = "JP".into();
        assert_eq!(s.zone().iana_name(), Some("Asia/Tokyo"));
    }
}
