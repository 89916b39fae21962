//! The feed's part of the interface (feature `wire`): its handle and its types.

use fleetdesk_kernel::events::{EventData, EventKind};
use fleetdesk_kernel::wire::fields::{Int, Limit, Utc, inline_schema};
use serde::{Deserialize, Serialize};
use std::borrow::Cow;
use utoipa::openapi::{RefOr, Schema};
use utoipa::{PartialSchema, ToSchema};
use uuid::Uuid;
use validator::Validate;

/// The position of an event in the log, as `next_cursor` gives it and `after` takes it: a
/// decimal number of at most 18 digits.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EventCursor(pub i64);

impl EventCursor {
    const RULE: &'static str = "must be a cursor this feed gave (digits only, at most 18)";
}

impl<'de> Deserialize<'de> for EventCursor {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let text = String::deserialize(d)?;
        let digits =
            !text.is_empty() && text.len() <= 18 && text.bytes().all(|b| b.is_ascii_digit());
        match text.parse() {
            Ok(n) if digits => Ok(EventCursor(n)),
            _ => Err(serde::de::Error::custom(Self::RULE)),
        }
    }
}

impl Serialize for EventCursor {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(&self.0)
    }
}

impl PartialSchema for EventCursor {
    fn schema() -> RefOr<Schema> {
        inline_schema(serde_json::json!({"type": "string", "pattern": "^[0-9]{1,18}$"}))
    }
}

impl ToSchema for EventCursor {
    fn name() -> Cow<'static, str> {
        Cow::Borrowed("EventCursor")
    }
}

/// Event types, comma-separated (`post.moved,task.reopened`): each one a type of the
/// catalogue, at least one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EventTypes(pub Vec<EventKind>);

impl EventTypes {
    /// The alternatives of one type in a pattern.
    fn one() -> String {
        let kinds: Vec<String> = EventKind::ALL
            .into_iter()
            .map(|k| k.as_str().replace('.', "\\."))
            .collect();
        format!("({})", kinds.join("|"))
    }
}

impl<'de> Deserialize<'de> for EventTypes {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let text = String::deserialize(d)?;
        text.split(',')
            .map(|t| {
                EventKind::parse(t).ok_or_else(|| {
                    serde::de::Error::custom(format!(
                        "{t:?} is not an event type (comma-separated types of the catalogue)"
                    ))
                })
            })
            .collect::<Result<_, _>>()
            .map(EventTypes)
    }
}

impl Serialize for EventTypes {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let texts: Vec<&str> = self.0.iter().map(|k| k.as_str()).collect();
        s.serialize_str(&texts.join(","))
    }
}

impl PartialSchema for EventTypes {
    fn schema() -> RefOr<Schema> {
        let one = EventTypes::one();
        inline_schema(serde_json::json!({
            "type": "string",
            "pattern": format!("^{one}(,{one})*$"),
        }))
    }
}

impl ToSchema for EventTypes {
    fn name() -> Cow<'static, str> {
        Cow::Borrowed("EventTypes")
    }
}

#[derive(Debug, Serialize, Deserialize, Validate, ToSchema)]
pub struct EventsQuery {
    /// `next_cursor` of the previous read; absent: from the oldest event kept (30 days).
    pub after: Option<EventCursor>,
    /// Only these types, comma-separated; default every type the key may read.
    pub types: Option<EventTypes>,
    /// Seconds to hold the request while there is no event to answer, 0-30 (default 0).
    pub wait: Option<Int<0, 30>>,
    /// 1-200, default 100.
    pub limit: Option<Limit<200>>,
}

/// One event of the feed.
#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct Event {
    /// The event's id (the same in webhook deliveries).
    pub id: Uuid,
    #[serde(rename = "type")]
    pub kind: EventKind,
    /// Its place in the log: pass the last one read as `after`.
    pub cursor: EventCursor,
    /// ISO UTC, when the change was made.
    pub occurred_at: Utc,
    pub workspace_id: Uuid,
    /// The post, card, decision or account it is about.
    pub object_id: Uuid,
    /// The body of its type: post.* a post's change (code, platform, from, status, note;
    /// post.published_differs: code, platform, reason and the two bodies' fingerprints),
    /// decision.* a decision's (kind, title, status, choice), account.state_changed an
    /// account's (code, platform, from, to, reason), task.* a card's (kind, title, status,
    /// note), ad_change.* a proposal's (kind, ad_id, post_id, status, error); the others as
    /// their schemas say.
    pub data: EventData,
}

#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct EventList {
    /// Oldest first.
    pub events: Vec<Event>,
    /// Pass as `after` next time, also when `events` is empty.
    pub next_cursor: EventCursor,
}

/// The agent's operations (`/api/agent/v1`).
pub mod agent {
    use super::*;
    use fleetdesk_kernel::access::Scope;
    use fleetdesk_kernel::op::{HttpMethod::Get, Nothing, OpSpec};

    fleetdesk_kernel::operations! {
        /// What changed for this agent: its feed of events, oldest first.
        pub ListEvents(Nothing, EventsQuery, Nothing) -> EventList =
            OpSpec::agent(Get, "/events", Scope::AccountsRead)
                .tool("wait_events")
                .summary("What changed for this agent: its feed of events, oldest first")
                .description(
                    "The events of the key's workspace the agent may see: those about its own \
                     accounts, posts, cards, decisions, cron jobs, research requests and ad \
                     changes, of the types its scopes read (post.* and research.done need \
                     drafts:read, the rest accounts:read), and the wiki drafts decided in the \
                     workspace (wiki.draft_decided, wiki:read). Pass the last `next_cursor` as \
                     `after`. With `wait`, a read that finds nothing holds until an event \
                     arrives or the seconds run out, then answers (an empty list at the end of \
                     the wait). Events are kept 30 days; they are numbered in the order their \
                     changes committed, so nothing committed is skipped. \
                     Types: decision.opened, decision.decided, post.submitted, post.moved, \
                     post.reported, post.published_differs, account.state_changed, \
                     task.opened, task.claimed, task.finished, task.failed, task.reopened, \
                     task.confirmed, cron.run_failed, agent.silent, wiki.draft_decided, \
                     research.done, ad_change.executed, ad_change.failed (report.issued goes \
                     to webhooks only).",
                );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cursor_is_digits_only_up_to_18() {
        let parse = |v: &str| serde_json::from_value::<EventCursor>(serde_json::json!(v));
        assert_eq!(parse("0").unwrap(), EventCursor(0));
        assert_eq!(
            parse("999999999999999999").unwrap().0,
            999_999_999_999_999_999
        );
        for bad in ["", "1234567890123456789", "-1", "+1", "1.0", "abc", " 1"] {
            assert!(parse(bad).is_err(), "{bad:?}");
        }
        assert_eq!(serde_json::to_value(EventCursor(42)).unwrap(), "42");
    }

    #[test]
    fn types_are_a_comma_list_of_known_types() {
        let parse = |v: &str| serde_json::from_value::<EventTypes>(serde_json::json!(v));
        assert_eq!(
            parse("post.moved,task.reopened").unwrap().0,
            [EventKind::PostMoved, EventKind::TaskReopened]
        );
        let err = parse("post.moved,post.eaten").unwrap_err().to_string();
        assert!(err.contains("\"post.eaten\" is not an event type"), "{err}");
        assert!(parse("").is_err());
        assert!(parse("post.moved,").is_err());
    }

    #[test]
    fn the_types_pattern_accepts_what_the_parser_does() {
        let one = EventTypes::one();
        let pattern = regex::Regex::new(&format!("^{one}(,{one})*$")).unwrap();
        assert!(pattern.is_match("post.moved"));
        assert!(pattern.is_match("post.moved,task.reopened"));
        assert!(!pattern.is_match("post.moved,"));
        assert!(!pattern.is_match("postXmoved"));
    }
}
