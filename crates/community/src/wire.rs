//! The community part of the interface (feature `wire`): each operation's handle with its
//! description, and the request and response types the server parses and a client sends.
//! The operations are the agent's, in [`agent`], and the people's tickets, in [`personal`]. community_space answers the domain's
//! [`crate::space::Space`], which only writes (no `Deserialize`).

use crate::digest;
use crate::digest::TagKind;
use crate::ports::{DigestOutcome, ProductHit, TicketMoved, TicketOutcome, TicketRecord, WikiHit};
use crate::space::Channel;
use crate::ticket::{TicketCategory, TicketStatus};
use fleetdesk_kernel::wire::fields::{
    Cursor, Int, Limit, List, MoveResult, Text, Utc, inline_schema,
};
use fleetdesk_kernel::wire::strings::{CursorInput, DateInput};
use serde::{Deserialize, Serialize};
use serde_json::json;
use std::borrow::Cow;
use utoipa::openapi::{RefOr, Schema};
use utoipa::{PartialSchema, ToSchema};
use uuid::Uuid;
use validator::Validate;

fleetdesk_kernel::component_items!(DigestMemberIn, MemberTagIn);

/// The largest digest body: every member (500) with every text at its limit (external_id
/// 200, display_name 80, summary 200, 12 tag values of 40: 960 characters) sent with each
/// character escaped as a UTF-16 surrogate pair (`\ud83d\ude00`, 12 bytes, the longest
/// form JSON has for one character), plus 2 KiB a member for names, numbers, punctuation and
/// indentation, plus 4 KiB for the envelope: 500 × (960 × 12 + 2048) + 4096 = 6 788 096 bytes
/// (6.5 MiB). A Chinese digest escaped as `\uXXXX` (6 bytes a character) is about half of it.
const DIGEST_MAX_BODY: usize = digest::MEMBERS_MAX
    * ((digest::EXTERNAL_ID_MAX
        + digest::DISPLAY_NAME_MAX
        + digest::SUMMARY_MAX
        + digest::TAGS_MAX * digest::TAG_VALUE_MAX)
        * 12
        + 2048)
    + 4096;

/// The personal-data rule of digest and ticket summaries (`fleetdesk_community::personal`).
macro_rules! personal_data {
    () => {
        " No personal data: a summary (or a digest tag value) holding an e-mail address \
(`name@domain.tld`), a phone number (8-15 digits in one run, spaces, `-`, `.`, `(`, `)` \
allowed between them, optionally after `+`; dates like 2026-11-25 are not numbers) or an \
order number (`#` and 4+ digits, a code of letters and 5+ digits such as TW20261125001, 4+ \
digits shortly after the word order/訂單/订单/單號/单号/編號/编号, or a bare run of 8+ digits) is \
400 invalid_request naming the field (full-width digits and @ count as ASCII)."
    };
}

pub use fleetdesk_kernel::wire::fields::Filled;

// ---------------------------------------------------------------------------------------------
// POST /community/space

#[derive(Debug, Serialize, Deserialize, Validate, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct SpaceBody {
    pub channel: Channel,
    /// The platform's group id (a WhatsApp group jid, a Discord channel id).
    pub external_id: Filled<200>,
}

// ---------------------------------------------------------------------------------------------
// POST /community/wiki

#[derive(Debug, Serialize, Deserialize, Validate, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct CommunityWikiBody {
    pub space_id: Uuid,
    /// Words to look for; empty lists the most recently updated entries.
    pub query: Option<Text<0, 200>>,
    /// 1-20, default 5.
    pub limit: Option<Int<1, 20>>,
}

#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct CommunityWikiOut {
    pub entries: Vec<CommunityWikiEntry>,
}

#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct CommunityWikiEntry {
    pub id: Uuid,
    pub title: String,
    pub summary: String,
    pub body: String,
}

impl CommunityWikiEntry {
    /// An entry the assistant may answer from.
    pub fn of(h: WikiHit) -> CommunityWikiEntry {
        CommunityWikiEntry {
            id: h.id,
            title: h.title,
            summary: h.summary,
            body: h.body,
        }
    }
}

// ---------------------------------------------------------------------------------------------
// POST /community/products

#[derive(Debug, Serialize, Deserialize, Validate, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct CommunityProductsBody {
    pub space_id: Uuid,
    /// Words to look for in name and summary; empty lists every product on sale.
    pub query: Option<Text<0, 200>>,
    /// 1-10, default 3.
    pub limit: Option<Int<1, 10>>,
}

#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct CommunityProductsOut {
    pub products: Vec<CommunityProduct>,
}

#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct CommunityProduct {
    pub id: Uuid,
    pub name: String,
    pub summary: Option<String>,
    /// As shown to members, e.g. `NT$590`.
    pub price: Option<String>,
    pub url: Option<String>,
}

impl CommunityProduct {
    /// A product on sale.
    pub fn of(p: ProductHit) -> CommunityProduct {
        CommunityProduct {
            id: p.id,
            name: p.name,
            summary: p.summary,
            price: p.price,
            url: p.url,
        }
    }
}

// ---------------------------------------------------------------------------------------------
// POST /community/digest

/// A confidence from 0 to 1.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Confidence(pub f64);

impl<'de> Deserialize<'de> for Confidence {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let n = f64::deserialize(d)?;
        if !(0.0..=1.0).contains(&n) {
            return Err(serde::de::Error::custom("must be between 0 and 1"));
        }
        Ok(Confidence(n))
    }
}

impl Serialize for Confidence {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        self.0.serialize(s)
    }
}

impl PartialSchema for Confidence {
    fn schema() -> RefOr<Schema> {
        inline_schema(json!({"type": "number", "minimum": 0, "maximum": 1}))
    }
}

impl ToSchema for Confidence {
    fn name() -> Cow<'static, str> {
        Cow::Borrowed("Confidence")
    }
}

#[derive(Debug, Serialize, Deserialize, Validate, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct DigestBody {
    /// Must be the space's registered channel (else 422).
    pub channel: Channel,
    pub space_id: Uuid,
    /// A day of the space's zone, from 30 days before its today up to today.
    pub day: DateInput,
    /// 0-500 members.
    pub members: List<DigestMemberIn, 0, 500>,
}

#[derive(Debug, Serialize, Deserialize, Validate, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct DigestMemberIn {
    /// The member's id on the platform.
    pub external_id: Filled<200>,
    /// Up to 80 characters; one that is a phone number or e-mail address is not stored.
    pub display_name: Option<Text<0, 80>>,
    /// Messages the member sent that day.
    pub message_count: Int<0, 10000>,
    /// Up to 200 characters; no phone numbers, e-mail addresses or order numbers (400).
    pub summary: Option<Text<0, 200>>,
    /// Up to 12.
    pub tags: Option<List<MemberTagIn, 0, 12>>,
}

#[derive(Debug, Serialize, Deserialize, Validate, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct MemberTagIn {
    pub kind: TagKind,
    /// 1-40 characters; no phone numbers, e-mail addresses or order numbers (400).
    pub value: Filled<40>,
    pub confidence: Option<Confidence>,
}

#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct DigestOut {
    pub space_id: Uuid,
    /// `YYYY-MM-DD`.
    pub day: String,
    /// Members stored.
    pub members: i64,
    /// Repeated listings of a member, not stored.
    pub skipped: i64,
}

impl DigestOut {
    /// What a digest stored.
    pub fn of(done: DigestOutcome) -> DigestOut {
        DigestOut {
            space_id: done.space_id,
            day: done.day.to_string(),
            members: done.members,
            skipped: done.skipped,
        }
    }
}

// ---------------------------------------------------------------------------------------------
// POST /community/tickets

#[derive(Debug, Serialize, Deserialize, Validate, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct TicketBody {
    /// Must be the space's registered channel (else 422).
    pub channel: Channel,
    pub space_id: Uuid,
    /// The member the ticket concerns; without it the ticket never merges.
    pub member_external_id: Option<Filled<200>>,
    pub category: TicketCategory,
    /// 1-500 characters, not only white space; no phone numbers, e-mail addresses or order
    /// numbers (400).
    pub summary: Filled<500>,
}

#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct TicketOut {
    pub ticket_id: Uuid,
    /// The member's open ticket of the category took the summary as a note.
    pub reused: bool,
}

impl TicketOut {
    /// The ticket opened, or the member's open one that took the summary.
    pub fn of(done: TicketOutcome) -> TicketOut {
        TicketOut {
            ticket_id: done.ticket_id,
            reused: done.reused,
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Tickets as people and the agent that opened them read them

#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct TicketView {
    pub id: Uuid,
    pub workspace: TicketNamed,
    pub space: TicketSpace,
    /// The member the ticket concerns, as the platform names them; null without one.
    pub member_external_id: Option<String>,
    pub category: TicketCategory,
    /// open, resolved (a person handled the matter) or dismissed (nothing to do).
    pub status: TicketStatus,
    /// The first report's summary.
    pub summary: String,
    /// The summaries of later reports of the matter, oldest first: every one when the ticket
    /// is read alone or answers a move, the latest 3 in a list.
    pub notes: Vec<TicketNoteOut>,
    /// How many notes the ticket has (a list's `notes` may be fewer).
    pub notes_count: i64,
    /// The community agent that opened it.
    pub opened_by: TicketNamed,
    pub created_at: Utc,
    pub updated_at: Utc,
    /// How a person handled it; null while open.
    pub handled: Option<TicketHandled>,
}

#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct TicketNamed {
    pub id: Uuid,
    pub name: String,
}

#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct TicketSpace {
    pub id: Uuid,
    pub name: String,
    pub channel: Channel,
}

#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct TicketNoteOut {
    pub text: String,
    pub at: String,
}

#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct TicketHandled {
    /// The person's note: what was done, or why nothing is.
    pub note: String,
    /// `{type: person, id, name}`.
    pub by: serde_json::Value,
    pub at: Utc,
}

impl TicketView {
    pub fn of(t: TicketRecord) -> TicketView {
        TicketView {
            id: t.id,
            workspace: TicketNamed {
                id: t.workspace.0,
                name: t.workspace.1,
            },
            space: TicketSpace {
                id: t.space.0,
                name: t.space.1,
                channel: t.space.2,
            },
            member_external_id: t.member_external_id,
            category: t.category,
            status: t.status,
            summary: t.summary,
            notes: serde_json::from_value(t.notes).unwrap_or_default(),
            notes_count: t.notes_count,
            opened_by: TicketNamed {
                id: t.opened_by.0,
                name: t.opened_by.1,
            },
            created_at: Utc(t.created_at),
            updated_at: Utc(t.updated_at),
            handled: t.handled.map(|h| TicketHandled {
                note: h.note,
                by: h.by,
                at: Utc(h.at),
            }),
        }
    }
}

/// Which tickets a list shows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum TicketStatusFilter {
    Open,
    Resolved,
    Dismissed,
    /// Resolved or dismissed.
    Handled,
    All,
}

impl TicketStatusFilter {
    /// The statuses the filter shows.
    pub fn statuses(self) -> Vec<TicketStatus> {
        use TicketStatus::*;
        match self {
            TicketStatusFilter::Open => vec![Open],
            TicketStatusFilter::Resolved => vec![Resolved],
            TicketStatusFilter::Dismissed => vec![Dismissed],
            TicketStatusFilter::Handled => vec![Resolved, Dismissed],
            TicketStatusFilter::All => vec![Open, Resolved, Dismissed],
        }
    }
}

#[derive(Debug, Serialize, Deserialize, Validate, ToSchema)]
pub struct TicketQueryIn {
    /// Only this workspace's tickets.
    pub workspace: Option<Uuid>,
    /// open (the default), resolved, dismissed, handled (resolved or dismissed) or all.
    pub status: Option<TicketStatusFilter>,
    pub category: Option<TicketCategory>,
    /// 1-200, default 50.
    pub limit: Option<Limit<200>>,
    /// `next_cursor` of the previous page.
    pub cursor: Option<CursorInput>,
}

#[derive(Debug, Serialize, Deserialize, Validate, ToSchema)]
pub struct OwnTicketQueryIn {
    /// open, resolved, dismissed, handled (resolved or dismissed) or all (the default).
    pub status: Option<TicketStatusFilter>,
    pub category: Option<TicketCategory>,
    /// 1-200, default 50.
    pub limit: Option<Limit<200>>,
    /// `next_cursor` of the previous page.
    pub cursor: Option<CursorInput>,
}

#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct TicketPage {
    pub tickets: Vec<TicketView>,
    /// Pass as `cursor` for the next page; null on the last page.
    pub next_cursor: Option<Cursor>,
}

#[derive(Debug, Serialize, Deserialize, Validate, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct TicketMoveBody {
    /// What was done, or why nothing is: 1-1000 characters, not only white space, no phone
    /// numbers, e-mail addresses or order numbers.
    pub note: Text<1, 1000>,
}

#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct TicketMoveReply {
    pub ticket: TicketView,
    /// `changed`, or `unchanged` when the ticket was handled so already (its first note
    /// stays).
    pub result: MoveResult,
}

impl TicketMoveReply {
    pub fn of(moved: TicketMoved) -> TicketMoveReply {
        TicketMoveReply {
            ticket: TicketView::of(moved.ticket),
            result: MoveResult::of(moved.changed),
        }
    }
}

const TICKET_MOVE_RULES: &str = "Agency people and platform admins; clients are refused (403). \
A ticket of the member's organization (another's or unknown: 404). Body: note (required, \
1-1000 characters, not only white space: 400 naming note; no phone numbers, e-mail addresses \
or order numbers: 400 naming note). An open ticket becomes resolved (the matter was handled) or \
dismissed (nothing to do) with the note, the person and the time: it leaves the person's day \
(`GET /today`), no later report of the matter joins it (a new one opens a ticket), and the \
agent that opened it reads the outcome (`GET /community/tickets` of the Agent API). The same \
move resent answers `result: unchanged` and keeps the first note; the other move on a handled \
ticket is 422 rejected. Answers `{ticket, result}` with every note.";

/// The community assistant's operations (`/api/agent/v1`).
pub mod agent {
    use super::*;
    use crate::space::Space;
    use fleetdesk_kernel::access::Scope;
    use fleetdesk_kernel::op::{
        HttpMethod::{Get, Post},
        Nothing, OpSpec,
    };

    fleetdesk_kernel::operations! {
        /// The tickets you opened, and how people handled them.
        pub ListOwnTickets(Nothing, OwnTicketQueryIn, Nothing) -> TicketPage =
            OpSpec::agent(Get, "/community/tickets", Scope::CommunityRead)
                .tool("community_list_tickets")
                .summary("The tickets you opened, and how people handled them")
                .description(concat!(
                    "Role community only (operators 403). Read only. The tickets you opened in \
                     your workspace, newest first: filter status (open, resolved, dismissed, \
                     handled: resolved or dismissed, all: the default) and category; pages with \
                     limit 1-200 (default 50) and cursor. A handled ticket carries the person's \
                     note (`handled.note`): tell the member what was done. ",
                    "Each ticket: id, workspace {id, name}, space {id, name, channel}, \
                     member_external_id, category, status, summary, notes (the latest 3, oldest \
                     first) and notes_count, opened_by {id, name}, created_at, updated_at, \
                     handled ({note, by: {type: person, id, name}, at}; null while open)."
                ));

        /// Look up a registered group.
        pub GetSpace(Nothing, Nothing, SpaceBody) -> Space =
            OpSpec::agent(Post, "/community/space", Scope::CommunityRead)
                .tool("community_space")
                .also_answers(&[404])
                .summary("Look up a registered group by channel and the platform's group id")
                .description(
                    "Role community only (operators and other roles 403). Read only. Body: \
                     channel (whatsapp or discord) and external_id (the platform's group id, \
                     1-200 characters; white space around it ignored, only white space is 400 \
                     naming external_id). Answers the space: \
                     space_id, name, channel, space_type, market (its zone is the market's), \
                     track, location, status (active), language. A group not registered in your \
                     workspace (unknown, registered in another workspace or organization, or \
                     archived) is 404 not_found. The other community calls take this space_id.",
                );

        /// Knowledge-base entries the assistant may answer a space from.
        pub SearchCommunityWiki(Nothing, Nothing, CommunityWikiBody) -> CommunityWikiOut =
            OpSpec::agent(Post, "/community/wiki", Scope::CommunityRead)
                .tool("community_wiki_search")
                .also_answers(&[404])
                .summary("Knowledge-base entries the assistant may answer the space from")
                .description(
                    "Role community only (operators 403). Body: space_id (required), query (up to \
                     200 characters), limit (1-20, default 5). Only canon entries tagged \
                     `community` of your organization, shared or of a project of your workspace. \
                     Axis tags `market:<MARKET>`, `track:<track>`, `location:<location>` \
                     (compared case-insensitively): an entry with tags of an axis suits the space \
                     only when one of them is the space's value (a space without a track or \
                     location gets only entries without that axis); entries without an axis tag \
                     are general. The query is searched and ranked as wiki_search does it \
                     (Chinese segmented, traditional and simplified alike, English stemmed, \
                     English and Chinese finding each other, glossary synonyms, rarer words \
                     weighing more, and reordered by meaning where the service runs an embedding \
                     model); an empty query, or one of only stop words and \
                     punctuation, lists the most recently updated entries. Answers \
                     `entries[{id, title, summary, body}]`; no match is an empty array. \
                     space_id must be an active space of your workspace: unknown, archived or \
                     another workspace's is 404.",
                );

        /// Products on sale for a space.
        pub SearchProducts(Nothing, Nothing, CommunityProductsBody) -> CommunityProductsOut =
            OpSpec::agent(Post, "/community/products", Scope::CommunityRead)
                .tool("community_products")
                .also_answers(&[404])
                .summary("Products on sale in the catalog of the space's workspace")
                .description(
                    "Role community only (operators 403). Body: space_id (required), query (up to \
                     200 characters), limit (1-10, default 3). Only products on sale; the query \
                     is searched in name and summary like the wiki (any term), best match first; \
                     an empty query lists them by name. Answers `products[{id, name, summary, \
                     price, url}]`, an empty array when none. space_id must be an active space \
                     of your workspace: unknown, archived or another workspace's is 404.",
                );

        /// Report a day's digest of a space's members.
        pub ReportDigest(Nothing, Nothing, DigestBody) -> DigestOut =
            OpSpec::agent(Post, "/community/digest", Scope::CommunityWrite)
                .tool("community_report_digest")
                .idempotent()
                .created_always()
                .max_body(DIGEST_MAX_BODY)
                .also_answers(&[404])
                .summary("Report a day's digest of a space's members (one per space and day)")
                .description(concat!(
                    "Role community only (operators 403). Body: channel (required; not the \
                     space's registered channel is 422 rejected), space_id (required; unknown, \
                     archived or another workspace's space is 404), day (required, YYYY-MM-DD, a \
                     day of the space's zone — its market's — from 30 days before its today up \
                     to today there; a later or older day is 422 rejected; not a date is 400), \
                     members (required, 0-500; each: external_id required 1-200 characters, \
                     display_name up to 80, message_count required integer 0-10000, summary up \
                     to 200, tags up to 12 each {kind: interest or intent, value 1-40 \
                     characters, confidence 0-1 optional}; white space around texts dropped; an \
                     external_id or tag value of only white space is 400). A display_name that \
                     is a phone number or e-mail address (what WhatsApp shows for a member \
                     without a name) is not stored: the member is stored without one. \
                     external_id is stored as given: it is the platform's id of the member. \
                     A member listed twice is stored once (its first listing); the repeats are \
                     counted in `skipped`. One digest per space and day: a second for the same \
                     day is 422 rejected whatever its content. Answers 201 `{space_id, day, \
                     members (stored), skipped}` (never 200: a repeat is either a replay or 422). \
                     Idempotency-Key (REST) or request_id (MCP): the same content resent within \
                     24 hours gives the first answer (201) again. \
                     Field format errors (over 12 tags, a count out of range) are 400 naming \
                     the field, e.g. `members[3].tags`.",
                    personal_data!(),
                    " A summary's or tag value's field is named with its member, e.g. \
                     `members[2].summary`, `members[2].tags[0].value`. Order of the answers: a \
                     body that does not parse or breaks a limit (texts of only white space \
                     included) is 400; then the space is looked up (404, whatever the summaries \
                     and tag values hold); then personal data (400), the channel, the day and \
                     one digest a day (422)."
                ));

        /// Open a ticket for a person, or add to the member's open one.
        pub OpenTicket(Nothing, Nothing, TicketBody) -> TicketOut =
            OpSpec::agent(Post, "/community/tickets", Scope::CommunityWrite)
                .tool("community_open_ticket")
                .idempotent()
                .created()
                .also_answers(&[404])
                .summary("Open a ticket for a person, or add to the member's open one")
                .description(concat!(
                    "Role community only (operators 403). Body: channel (required; not the \
                     space's registered channel is 422 rejected), space_id (required; unknown, \
                     archived or another workspace's space is 404), member_external_id (1-200 \
                     characters; give it when the ticket concerns a member), category (required: \
                     complaint, refund, order, data_deletion, abuse, unanswered, other), summary \
                     (required, 1-500 characters, not only white space: a \
                     summary of only white space is 400, as is a member_external_id of only \
                     white space). When the same space has an open ticket of the \
                     same member and category opened within the last 24 hours, the summary is \
                     added to it as a note and the answer is 200 `{ticket_id, reused: true}` \
                     (the newest such ticket); otherwise a ticket is opened, 201 `{ticket_id, \
                     reused: false}`. Tickets without member_external_id never merge. \
                     Idempotency-Key (REST) or request_id (MCP): the same content resent within \
                     24 hours gives the first answer again (no second note).",
                    personal_data!(),
                    " Order of the answers: a body that does not parse or breaks a limit (a \
                     summary or member_external_id of only white space included) is 400; then the \
                     space is looked up (404, whatever the summary holds); then personal data in \
                     the summary (400) and the channel (422)."
                ));
    }
}

/// The person's ticket operations (`/api/user/v1`).
pub mod personal {
    use super::*;
    use fleetdesk_kernel::access::PersonalAccess;
    use fleetdesk_kernel::op::{
        HttpMethod::{Get, Post},
        Nothing, OpSpec,
    };
    use fleetdesk_kernel::wire::fields::IdPath;

    fleetdesk_kernel::operations! {
        /// The community tickets of the organization, newest first.
        pub ListTickets(Nothing, TicketQueryIn, Nothing) -> TicketPage =
            OpSpec::personal(Get, "/community/tickets", PersonalAccess::Agency)
                .tool("list_tickets")
                .summary("The community tickets of the organization, newest first")
                .description(concat!(
                    "Agency people and platform admins; clients are refused (403). The tickets \
                     the community assistants opened in the member's organization's workspaces \
                     (a platform admin outside any organization sees every organization's; \
                     tickets of archived workspaces are not listed), newest first: filter \
                     workspace, status (open: the default, resolved, dismissed, handled: \
                     resolved or dismissed, all) and category; pages with limit 1-200 (default \
                     50) and cursor. ",
                    "Each ticket: id, workspace {id, name}, space {id, name, channel}, \
                     member_external_id, category, status (open, resolved, dismissed), summary, \
                     notes (the summaries of later reports of the matter, oldest first; a list \
                     carries the latest 3, a ticket read alone every one) and notes_count, \
                     opened_by (the agent) {id, name}, created_at, updated_at, handled ({note, \
                     by: {type: person, id, name}, at}; null while open)."
                ));

        /// One community ticket, with every note.
        pub GetTicket(IdPath, Nothing, Nothing) -> TicketView =
            OpSpec::personal(Get, "/community/tickets/{id}", PersonalAccess::Agency)
                .tool("get_ticket")
                .summary("One community ticket of the organization, with every note")
                .description(concat!(
                    "Agency people and platform admins; clients are refused (403). A ticket of \
                     the member's organization (another's or unknown: 404) with every note. ",
                    "Each ticket: id, workspace {id, name}, space {id, name, channel}, \
                     member_external_id, category, status (open, resolved, dismissed), summary, \
                     notes (every one, oldest first) and notes_count, opened_by (the agent) {id, \
                     name}, created_at, updated_at, handled ({note, by: {type: person, id, \
                     name}, at}; null while open)."
                ));

        /// Resolve a ticket: the matter was handled.
        pub ResolveTicket(IdPath, Nothing, TicketMoveBody) -> TicketMoveReply =
            OpSpec::personal(Post, "/community/tickets/{id}/resolve", PersonalAccess::Agency)
                .tool("handle_ticket")
                .tool_action("resolve")
                .idempotent()
                .summary("Resolve a community ticket: the matter was handled")
                .description(TICKET_MOVE_RULES);

        /// Dismiss a ticket: nothing to do.
        pub DismissTicket(IdPath, Nothing, TicketMoveBody) -> TicketMoveReply =
            OpSpec::personal(Post, "/community/tickets/{id}/dismiss", PersonalAccess::Agency)
                .tool("handle_ticket")
                .tool_action("dismiss")
                .idempotent()
                .summary("Dismiss a community ticket: nothing to do")
                .description(TICKET_MOVE_RULES);
    }
}
