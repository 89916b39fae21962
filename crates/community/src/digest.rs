//! A day's digest of a space's members: who spoke, how much, what they are interested in and
//! what they intend. One per space and day, in the space's zone.

use crate::CommunityRefusal;
use crate::personal::find_personal_data;
use crate::space::{Channel, Space};
use jiff::civil::Date;
use jiff::{Timestamp, ToSpan};
use serde::{Deserialize, Serialize};

pub const MEMBERS_MAX: usize = 500;
pub const EXTERNAL_ID_MAX: usize = 200;
pub const DISPLAY_NAME_MAX: usize = 80;
pub const MESSAGE_COUNT_MAX: i64 = 10_000;
pub const SUMMARY_MAX: usize = 200;
pub const TAGS_MAX: usize = 12;
pub const TAG_VALUE_MAX: usize = 40;
/// The oldest day a digest may be reported for: this many days before the space's today.
pub const DAYS_BACK: i64 = 30;
/// How many interests and intents the person's day shows per space.
pub const TOP_TAGS: usize = 5;

fleetdesk_kernel::text_enum! {
    /// What a member tag says: something the member likes or asks about (`interest`), or
    /// something the member means to do (`intent`: buy, return, join an event, ...).
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
    #[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
    #[serde(rename_all = "lowercase")]
    pub enum TagKind {
        Interest => "interest",
        Intent => "intent",
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MemberTag {
    pub kind: TagKind,
    pub value: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub confidence: Option<f64>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct DigestMember {
    pub external_id: String,
    pub display_name: Option<String>,
    pub message_count: i64,
    pub summary: Option<String>,
    pub tags: Vec<MemberTag>,
}

/// A digest as reported.
#[derive(Debug, Clone, PartialEq)]
pub struct DigestReport {
    pub space_id: uuid::Uuid,
    pub channel: Channel,
    pub day: Date,
    pub members: Vec<DigestMember>,
}

/// A digest that passed its own rules: the members to store (the first listing of each
/// external_id, trimmed) and how many repeats were skipped.
#[derive(Debug, Clone, PartialEq)]
pub struct CheckedDigest {
    pub space_id: uuid::Uuid,
    pub channel: Channel,
    pub day: Date,
    pub members: Vec<DigestMember>,
    pub skipped: i64,
}

fn chars(s: &str) -> usize {
    s.chars().count()
}

/// Trimmed text, None when nothing is left.
fn text(raw: Option<&str>) -> Option<String> {
    raw.map(str::trim)
        .filter(|s| !s.is_empty())
        .map(str::to_owned)
}

/// Whether a display name is a name: one that holds personal data (a phone number or an
/// e-mail address, what WhatsApp shows in place of the name of a member it has no name for) is
/// not stored (the member is stored with no display name; the digest is not refused, since the
/// platform, not the bot, chose it).
pub fn is_a_name(display_name: &str) -> bool {
    find_personal_data(display_name).is_none()
}

impl DigestReport {
    /// The rules the report holds on its own (every limit, no personal data in a summary or
    /// a tag value; each failure names its field, `members[3].summary`,
    /// `members[3].tags[0].value`; a display name holding personal data is dropped, see
    /// [`is_a_name`]). A member listed twice is kept once, its first listing; the repeats are
    /// counted as skipped. `external_id` is kept as given (trimmed): it is the platform's id,
    /// which tickets of the member name too (to merge them and to act on a data_deletion
    /// ticket), and a WhatsApp id is a phone number by nature.
    pub fn check(self) -> Result<CheckedDigest, CommunityRefusal> {
        if self.members.len() > MEMBERS_MAX {
            return Err(CommunityRefusal::invalid(
                "members",
                format!("must have at most {MEMBERS_MAX} items"),
            ));
        }
        let mut seen = std::collections::HashSet::new();
        let mut members = Vec::with_capacity(self.members.len());
        let mut skipped = 0;
        for (i, m) in self.members.into_iter().enumerate() {
            let at = |field: &str| format!("members[{i}].{field}");
            let external_id = m.external_id.trim().to_owned();
            if external_id.is_empty() || chars(&external_id) > EXTERNAL_ID_MAX {
                return Err(CommunityRefusal::invalid(
                    at("external_id"),
                    format!("must be 1-{EXTERNAL_ID_MAX} characters long"),
                ));
            }
            let display_name = text(m.display_name.as_deref());
            if display_name
                .as_deref()
                .is_some_and(|d| chars(d) > DISPLAY_NAME_MAX)
            {
                return Err(CommunityRefusal::invalid(
                    at("display_name"),
                    format!("must have at most {DISPLAY_NAME_MAX} characters"),
                ));
            }
            let display_name = display_name.filter(|d| is_a_name(d));
            if !(0..=MESSAGE_COUNT_MAX).contains(&m.message_count) {
                return Err(CommunityRefusal::invalid(
                    at("message_count"),
                    format!("must be between 0 and {MESSAGE_COUNT_MAX}"),
                ));
            }
            let summary = text(m.summary.as_deref());
            if let Some(s) = &summary {
                if chars(s) > SUMMARY_MAX {
                    return Err(CommunityRefusal::invalid(
                        at("summary"),
                        format!("must have at most {SUMMARY_MAX} characters"),
                    ));
                }
                if let Some(found) = find_personal_data(s) {
                    return Err(CommunityRefusal::invalid(at("summary"), found.message()));
                }
            }
            if m.tags.len() > TAGS_MAX {
                return Err(CommunityRefusal::invalid(
                    at("tags"),
                    format!("must have at most {TAGS_MAX} items"),
                ));
            }
            let mut tags = Vec::with_capacity(m.tags.len());
            for (k, t) in m.tags.into_iter().enumerate() {
                let value = t.value.trim().to_owned();
                if value.is_empty() || chars(&value) > TAG_VALUE_MAX {
                    return Err(CommunityRefusal::invalid(
                        format!("members[{i}].tags[{k}].value"),
                        format!("must be 1-{TAG_VALUE_MAX} characters long"),
                    ));
                }
                if let Some(found) = find_personal_data(&value) {
                    return Err(CommunityRefusal::invalid(
                        format!("members[{i}].tags[{k}].value"),
                        found.message(),
                    ));
                }
                if t.confidence.is_some_and(|c| !(0.0..=1.0).contains(&c)) {
                    return Err(CommunityRefusal::invalid(
                        format!("members[{i}].tags[{k}].confidence"),
                        "must be between 0 and 1",
                    ));
                }
                tags.push(MemberTag {
                    kind: t.kind,
                    value,
                    confidence: t.confidence,
                });
            }
            if !seen.insert(external_id.clone()) {
                skipped += 1;
                continue;
            }
            members.push(DigestMember {
                external_id,
                display_name,
                message_count: m.message_count,
                summary,
                tags,
            });
        }
        Ok(CheckedDigest {
            space_id: self.space_id,
            channel: self.channel,
            day: self.day,
            members,
            skipped,
        })
    }
}

/// The channel a call names must be the space's registration.
pub fn check_channel(space: &Space, channel: Channel) -> Result<(), CommunityRefusal> {
    if space.channel == channel {
        Ok(())
    } else {
        Err(CommunityRefusal::OtherChannel {
            given: channel,
            space: space.channel,
        })
    }
}

/// The day must be a day of the space's zone that has begun (not after its today there) and
/// at most [`DAYS_BACK`] days before it.
pub fn check_day(space: &Space, day: Date, now: Timestamp) -> Result<(), CommunityRefusal> {
    let zone = space.zone();
    let today = now.to_zoned(zone.clone()).date();
    let oldest = today.checked_sub(DAYS_BACK.days()).unwrap_or(today);
    let zone_name = zone.iana_name().unwrap_or("UTC").to_owned();
    if day > today {
        return Err(CommunityRefusal::DayNotBegun {
            day,
            zone: zone_name,
            today,
        });
    }
    if day < oldest {
        return Err(CommunityRefusal::DayTooOld {
            day,
            zone: zone_name,
            today,
        });
    }
    Ok(())
}

/// A digest as its space takes it, in the order a caller is answered: the report's own rules
/// (400, [`DigestReport::check`]), then the space's channel and day (422). The space was
/// found first (an unknown space is 404 whatever the report's content holds; the body's shape
/// and limits were checked before, when it was parsed).
pub fn accept(
    space: &Space,
    report: DigestReport,
    now: Timestamp,
) -> Result<CheckedDigest, CommunityRefusal> {
    let digest = report.check()?;
    check_channel(space, digest.channel)?;
    check_day(space, digest.day, now)?;
    Ok(digest)
}

impl CheckedDigest {
    /// The answer once the digest is stored in `space_id`: what was stored and skipped.
    pub fn outcome(&self, space_id: uuid::Uuid) -> crate::ports::DigestOutcome {
        crate::ports::DigestOutcome {
            space_id,
            day: self.day,
            members: self.members.len() as i64,
            skipped: self.skipped,
        }
    }

    /// The members as stored with the digest: each tag with its [`fold_tag_value`] beside it
    /// as `folded`, which the person's day counts by.
    pub fn stored_members(&self) -> serde_json::Value {
        serde_json::Value::Array(
            self.members
                .iter()
                .map(|m| {
                    serde_json::json!({
                        "external_id": m.external_id,
                        "display_name": m.display_name,
                        "message_count": m.message_count,
                        "summary": m.summary,
                        "tags": m.tags.iter().map(|t| {
                            let mut tag = serde_json::json!(t);
                            tag["folded"] = serde_json::json!(fold_tag_value(&t.value));
                            tag
                        }).collect::<Vec<_>>(),
                    })
                })
                .collect(),
        )
    }
}

/// Why a digest is refused when the space has one for its day already (one per space and
/// day).
pub fn already_reported(day: Date) -> CommunityRefusal {
    CommunityRefusal::DigestExists(day)
}

/// A tag value as the person's day counts it (stored beside the value as `folded` when the
/// digest is written): white space around it dropped, lower case, so `Serum ` and `serum`
/// count as one.
pub fn fold_tag_value(value: &str) -> String {
    value.trim().to_lowercase()
}

/// A tag value as the person's day counts it: the members of a digest that carry it. Read
/// from storage as `[kind, value, members]`.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct TagCount {
    pub kind: TagKind,
    pub value: String,
    pub members: i64,
}

/// The [`TOP_TAGS`] most common interests and intents: most members first, then by value.
pub fn top_tags(counts: &[TagCount]) -> (Vec<TagCount>, Vec<TagCount>) {
    let top = |kind: TagKind| {
        let mut of: Vec<TagCount> = counts.iter().filter(|c| c.kind == kind).cloned().collect();
        of.sort_by(|a, b| {
            b.members
                .cmp(&a.members)
                .then_with(|| a.value.cmp(&b.value))
        });
        of.truncate(TOP_TAGS);
        of
    };
    (top(TagKind::Interest), top(TagKind::Intent))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_tag_count_is_read_from_its_stored_triple() {
        let stored = serde_json::json!([["intent", "buy", 3]]);
        let counts: Vec<TagCount> = serde_json::from_value(stored).unwrap();
        assert_eq!(
            counts,
            [TagCount {
                kind: TagKind::Intent,
                value: "buy".into(),
                members: 3,
            }]
        );
        assert!(serde_json::from_value::<TagCount>(serde_json::json!(["like", "x", 1])).is_err());
    }

    fn member(id: &str, summary: Option<&str>) -> DigestMember {
        DigestMember {
            external_id: id.into(),
            display_name: Some("Amy".into()),
            message_count: 3,
            summary: summary.map(Into::into),
            tags: vec![MemberTag {
                kind: TagKind::Interest,
                value: "serum".into(),
                confidence: Some(0.8),
            }],
        }
    }

    fn report(members: Vec<DigestMember>) -> DigestReport {
        DigestReport {
            space_id: uuid::Uuid::nil(),
            channel: Channel::Whatsapp,
            day: jiff::civil::date(2026, 11, 25),
            members,
        }
    }

    fn field(r: Result<CheckedDigest, CommunityRefusal>) -> String {
        match r {
            Err(CommunityRefusal::Invalid { field, .. }) => field,
            other => panic!("not invalid: {other:?}"),
        }
    }

    #[test]
    fn a_digest_stores_each_tag_with_its_folded_value() {
        let mut m = member("a", None);
        m.tags[0].value = " Serum ".into();
        let stored = report(vec![m]).check().unwrap().stored_members();
        assert_eq!(stored[0]["external_id"], "a");
        assert_eq!(
            stored[0]["tags"][0]["value"], "Serum",
            "trimmed when checked"
        );
        assert_eq!(stored[0]["tags"][0]["folded"], "serum");
        assert_eq!(
            already_reported(jiff::civil::date(2026, 11, 25)).to_string(),
            "a digest of this space for 2026-11-25 is already reported (one per space and day)"
        );
    }

    #[test]
    fn members_are_checked_at_their_limits() {
        let ok = report(vec![member("a", Some(&"x".repeat(SUMMARY_MAX)))]).check();
        assert_eq!(ok.unwrap().members.len(), 1);
        let long = report(vec![
            member("a", None),
            member("b", Some(&"x".repeat(SUMMARY_MAX + 1))),
        ]);
        assert_eq!(field(long.check()), "members[1].summary");

        let mut m = member("a", None);
        m.message_count = MESSAGE_COUNT_MAX;
        assert!(report(vec![m.clone()]).check().is_ok());
        m.message_count = MESSAGE_COUNT_MAX + 1;
        assert_eq!(
            field(report(vec![m.clone()]).check()),
            "members[0].message_count"
        );
        m.message_count = -1;
        assert_eq!(field(report(vec![m]).check()), "members[0].message_count");

        let mut m = member("a", None);
        m.tags = vec![m.tags[0].clone(); TAGS_MAX];
        assert!(report(vec![m.clone()]).check().is_ok());
        m.tags.push(m.tags[0].clone());
        assert_eq!(field(report(vec![m]).check()), "members[0].tags");

        let mut m = member("a", None);
        m.tags[0].value = "v".repeat(TAG_VALUE_MAX + 1);
        assert_eq!(
            field(report(vec![m.clone()]).check()),
            "members[0].tags[0].value"
        );
        m.tags[0].value = "  ".into();
        assert_eq!(field(report(vec![m]).check()), "members[0].tags[0].value");

        let mut m = member("a", None);
        m.tags[0].confidence = Some(1.0);
        assert!(report(vec![m.clone()]).check().is_ok());
        m.tags[0].confidence = Some(1.01);
        assert_eq!(
            field(report(vec![m]).check()),
            "members[0].tags[0].confidence"
        );

        assert_eq!(
            field(report(vec![member(" ", None)]).check()),
            "members[0].external_id"
        );
        let many: Vec<DigestMember> = (0..=MEMBERS_MAX)
            .map(|i| member(&i.to_string(), None))
            .collect();
        assert_eq!(
            report(many[..MEMBERS_MAX].to_vec())
                .check()
                .unwrap()
                .members
                .len(),
            MEMBERS_MAX
        );
        assert_eq!(field(report(many).check()), "members");
    }

    #[test]
    fn a_summary_with_personal_data_is_refused_naming_the_member() {
        for s in ["call 0912-345-678", "mail amy@example.com", "order #45210"] {
            let r = report(vec![member("a", Some("fine")), member("b", Some(s))]).check();
            match r {
                Err(CommunityRefusal::Invalid { field, message }) => {
                    assert_eq!(field, "members[1].summary");
                    assert!(message.contains("personal data"), "{message}");
                }
                other => panic!("{s}: {other:?}"),
            }
        }
    }

    #[test]
    fn a_tag_value_with_personal_data_is_refused_and_such_a_display_name_is_not_stored() {
        for v in ["call 0912345678", "amy@example.com", "訂單 55210"] {
            let mut m = member("b", None);
            m.tags.push(MemberTag {
                kind: TagKind::Intent,
                value: v.into(),
                confidence: None,
            });
            match report(vec![member("a", None), m]).check() {
                Err(CommunityRefusal::Invalid { field, message }) => {
                    assert_eq!(field, "members[1].tags[1].value");
                    assert!(message.contains("personal data"), "{message}");
                }
                other => panic!("{v}: {other:?}"),
            }
        }
        let named = |name: &str| {
            let mut m = member("a", None);
            m.display_name = Some(name.into());
            report(vec![m]).check().unwrap().members[0]
                .display_name
                .clone()
        };
        assert_eq!(named("+886 912 345 678"), None);
        assert_eq!(named("amy@example.com"), None);
        assert_eq!(named(" Amy 🌸 "), Some("Amy 🌸".into()));
        assert_eq!(named("小美 2024"), Some("小美 2024".into()));
    }

    #[test]
    fn a_member_listed_twice_is_kept_once_and_counted_skipped() {
        let d = report(vec![
            member(" a ", Some("first")),
            member("b", None),
            member("a", Some("again")),
        ])
        .check()
        .unwrap();
        assert_eq!(d.members.len(), 2);
        assert_eq!(d.members[0].external_id, "a");
        assert_eq!(d.members[0].summary.as_deref(), Some("first"));
        assert_eq!(d.skipped, 1);
        let outcome = d.outcome(uuid::Uuid::from_u128(5));
        assert_eq!(
            (
                outcome.space_id,
                outcome.day,
                outcome.members,
                outcome.skipped
            ),
            (uuid::Uuid::from_u128(5), d.day, 2, 1),
            "the answer counts what is stored, not what was listed"
        );
        assert!(report(vec![]).check().unwrap().members.is_empty());
    }

    fn space() -> Space {
        crate::space::test_space(None, None)
    }

    #[test]
    fn the_day_is_read_in_the_space_zone() {
        // 20:00 UTC on the 25th is already the 26th in Taipei.
        let now: Timestamp = "2026-11-25T20:00:00Z".parse().unwrap();
        let s = space();
        assert!(check_day(&s, jiff::civil::date(2026, 11, 26), now).is_ok());
        let ahead = check_day(&s, jiff::civil::date(2026, 11, 27), now).unwrap_err();
        assert_eq!(
            ahead.to_string(),
            "day 2026-11-27 has not begun in the space's zone (Asia/Taipei, today 2026-11-26)"
        );
        assert!(check_day(&s, jiff::civil::date(2026, 10, 27), now).is_ok());
        let old = check_day(&s, jiff::civil::date(2026, 10, 26), now).unwrap_err();
        assert_eq!(
            old.to_string(),
            format!(
                "day 2026-10-26 is more than {DAYS_BACK} days before the space's today \
                 (2026-11-26, Asia/Taipei)"
            )
        );
        assert_eq!(
            already_reported(jiff::civil::date(2026, 11, 26)).to_string(),
            "a digest of this space for 2026-11-26 is already reported (one per space and day)"
        );
        let mut jp = s.clone();
        jp.market = "JP".into();
        assert!(check_day(&jp, jiff::civil::date(2026, 11, 26), now).is_ok());
    }

    #[test]
    fn the_channel_must_be_the_space_registration() {
        assert!(check_channel(&space(), Channel::Whatsapp).is_ok());
        let refused = check_channel(&space(), Channel::Discord).unwrap_err();
        assert_eq!(
            refused.to_string(),
            "channel discord is not the space's channel (whatsapp)"
        );
    }

    #[test]
    fn tag_values_are_counted_folded() {
        assert_eq!(fold_tag_value(" Serum "), "serum");
        assert_eq!(fold_tag_value("精華液"), "精華液");
        assert_eq!(fold_tag_value("SPF50"), fold_tag_value("spf50 "));
    }

    #[test]
    fn top_tags_are_the_most_common_of_each_kind() {
        let c = |kind, value: &str, members| TagCount {
            kind,
            value: value.into(),
            members,
        };
        let mut counts: Vec<TagCount> = (0..7)
            .map(|i| c(TagKind::Interest, &format!("i{i}"), i))
            .collect();
        counts.push(c(TagKind::Intent, "buy", 2));
        counts.push(c(TagKind::Intent, "attend", 2));
        let (interests, intents) = top_tags(&counts);
        assert_eq!(interests.len(), TOP_TAGS);
        assert_eq!(interests[0].value, "i6");
        assert_eq!(
            intents.iter().map(|t| t.value.as_str()).collect::<Vec<_>>(),
            ["attend", "buy"]
        );
    }
}
