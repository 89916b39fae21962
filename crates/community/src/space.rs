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

    /// What an entry's tags must hold to suit the space ([`SpaceTagFilter`]).
    pub fn tag_filter(&self) -> SpaceTagFilter {
        let axis = |name: &str, value: Option<&str>| AxisFilter {
            prefix: format!("{name}:"),
            wanted: value
                .map(str::trim)
                .filter(|v| !v.is_empty())
                .map(|v| fold_tag(&format!("{name}:{v}"))),
        };
        SpaceTagFilter {
            required: fold_tag(COMMUNITY_TAG),
            axes: vec![
                axis("market", Some(&self.market)),
                axis("track", self.track.as_deref()),
                axis("location", self.location.as_deref()),
            ],
        }
    }
}

/// The tag every knowledge-base entry the community assistant may quote carries.
pub const COMMUNITY_TAG: &str = "community";

pub use fleetdesk_wiki::entry::fold_tag;

/// One axis of [`SpaceTagFilter`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AxisFilter {
    /// How the folded tags of the axis begin (`market:`).
    pub prefix: String,
    /// The folded tag an entry with tags of the axis must carry (`market:tw`); None when the
    /// space has no value on the axis (then no entry with tags of the axis suits it).
    pub wanted: Option<String>,
}

/// Which entries suit a space, over the entries' folded tags ([`fold_tag`], stored as
/// `folded_tags`): an entry carries `required` (`community`), and for each axis either no tag
/// beginning with its prefix (general) or its `wanted` tag. Every comparison is exact on
/// folded text, so a store applies the same parameters with `=` and a prefix test.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SpaceTagFilter {
    pub required: String,
    pub axes: Vec<AxisFilter>,
}

impl SpaceTagFilter {
    /// Whether an entry with these folded tags suits the space.
    pub fn admits(&self, folded: &[String]) -> bool {
        folded.contains(&self.required)
            && self.axes.iter().all(|a| {
                !folded.iter().any(|t| t.starts_with(&a.prefix))
                    || a.wanted.as_ref().is_some_and(|w| folded.contains(w))
            })
    }

    /// The axes' prefixes, in order (for a store's array parameter).
    pub fn prefixes(&self) -> Vec<String> {
        self.axes.iter().map(|a| a.prefix.clone()).collect()
    }

    /// The axes' wanted tags, in the order of [`SpaceTagFilter::prefixes`].
    pub fn wanted(&self) -> Vec<Option<String>> {
        self.axes.iter().map(|a| a.wanted.clone()).collect()
    }
}

/// Whether an entry with `tags` (as written; folded here) suits the space: it carries the
/// `community` tag, and for each axis (market, track, location) it either has no tag of that
/// axis (general) or has the space's value among its tags of that axis.
pub fn entry_suits_space(tags: &[String], space: &Space) -> bool {
    let folded: Vec<String> = tags.iter().map(|t| fold_tag(t)).collect();
    space.tag_filter().admits(&folded)
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
        let f = s.tag_filter();
        assert_eq!(f.required, "community");
        assert_eq!(f.prefixes(), ["market:", "track:", "location:"]);
        assert_eq!(f.wanted(), [Some("market:tw".into()), None, None]);
        let mut odd = space(Some(" Beauty "), Some("  "));
        odd.market = " tw ".into();
        assert_eq!(
            odd.tag_filter().wanted(),
            [Some("market:tw".into()), Some("track:beauty".into()), None]
        );
    }

    #[test]
    fn the_filter_compares_folded_tags_exactly() {
        let f = space(Some("beauty"), Some("taipei")).tag_filter();
        let folded = |list: &[&str]| list.iter().map(|t| t.to_string()).collect::<Vec<_>>();
        assert!(f.admits(&folded(&["community", "market:tw", "track:beauty"])));
        // Folded tags only: the filter itself does not fold.
        assert!(!f.admits(&folded(&["Community"])));
        assert!(!f.admits(&folded(&["community", "market:TW"])));
        // A tag of the axis with no value is of the axis and is not the space's value.
        assert!(!f.admits(&folded(&["community", "location:"])));
        // A tag merely containing an axis name is not of the axis.
        assert!(f.admits(&folded(&["community", "supermarket:jp"])));
    }

    #[test]
    fn a_space_reads_days_in_its_market_zone() {
        let mut s = space(None, None);
        assert_eq!(s.zone().iana_name(), Some("Asia/Taipei"));
        s.market = "JP".into();
        assert_eq!(s.zone().iana_name(), Some("Asia/Tokyo"));
    }
}
