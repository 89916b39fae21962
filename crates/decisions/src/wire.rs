//! The decisions part of the interface (feature `wire`): each operation's handle with its
//! description, and the request and response types the server parses and a client sends.

use crate::rules::Action;
use crate::{DecisionKind, DecisionStatus};
use fleetdesk_kernel::wire::fields::{Cursor, Ids, Limit, List, Text, Utc};
use fleetdesk_kernel::wire::relay::{OnBehalfOf, Origin, StaffOnBehalfOf};
use fleetdesk_kernel::wire::strings::CursorInput;
use fleetdesk_kernel::wire::strings::IsoTimeInput;
use fleetdesk_tasks::wire::EvidenceIn;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use utoipa::ToSchema;
use uuid::Uuid;
use validator::Validate;

const MOVE_RULES: &str = "A decision already resolved or dismissed answers any other move with \
422 rejected; the same move resent answers `result: unchanged` and changes nothing. Effects, in \
the same transaction as the move: account_banned choose open_new_generation closes the banned \
generation (replaced) and opens the next one in warming, keep_closed does nothing more; \
persona_new resolve confirms the persona, dismiss retires it (hidden from agents, its name free \
again); fact_proposal resolve makes the draft fact decided (replacing a decided fact of the same \
category and label), dismiss refuses it; contradiction choose change_bio or delete_post opens \
that follow-up with its task card for the persona's agent (delete_post needs the \
contradiction's post), keep does nothing more; persona_images resolve approves every image of \
the decision, dismiss refuses them all, choose approve_some with image_ids approves those and \
refuses the rest (an id not of this decision is 422 naming image_ids); set_avatar (with resolve \
or approve_some) names an image of category avatar this move approves, else 422, and opens a \
change_avatar follow-up; a follow-up (change_avatar, change_bio, delete_post) is resolved \
(confirmed: its card pending_confirmation becomes done) only once its agent reported it done \
(handled; open is 422), and dismissed (cancelled: its card pending_pickup, in_progress or \
pending_confirmation becomes cancelled) whether open or handled; a card already elsewhere is \
422. Resolve on a \
kind that asks a question (account_banned, contradiction) is 422: choose instead; choose on a \
kind without options, or an option not among the decision's, is 422. wiki_draft (a wiki \
proposal under manual review; no options) resolve makes the proposed version canon (the entry \
shows it, its former canon version is superseded), dismiss rejects it (an entry that has a \
canon version keeps showing it; a new entry becomes rejected); each decides exactly its own \
version: one whose version no longer waits (a later proposal superseded it, and the service \
dismissed the decision) or whose entry was retired is 422. ad_change (an agent's ad \
proposal; no options) resolve approves the change, which the service then makes through the ad \
platform as this person (the proposal becomes executed, or failed with the platform's error): \
a resume, or a raise on a running ad, that takes the month's spend (synced spend plus what \
the running ads will spend) past the workspace's monthly cap is 422 and the decision stays \
open; a proposal past its 7 days is 422; an agent's relay of the resolve is 422 (a person \
approves money with their own key). Dismiss refuses the proposal. `note` is appended to the \
decision's notes.";

// ---------------------------------------------------------------------------------------------
// The record

#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct DecisionOut {
    pub id: Uuid,
    /// The workspace the decision is of.
    pub workspace: DecisionWorkspace,
    pub kind: DecisionKind,
    pub status: DecisionStatus,
    /// A sentence a person reads in an inbox.
    pub title: String,
    /// The question a decision with options asks; null otherwise.
    pub question: Option<String>,
    /// What choose may name; empty when the decision asks no question (persona_images takes
    /// `approve_some`).
    pub options: Vec<String>,
    pub persona: Option<DecisionPersona>,
    pub account: Option<DecisionAccount>,
    pub post_id: Option<Uuid>,
    /// Per kind; a persona_images decision lists its `images`, each (but a refused one) with
    /// signed `url` and `thumb_url` valid 15 minutes.
    pub detail: Value,
    /// The linked task card (follow-ups only).
    pub task_id: Option<Uuid>,
    pub opened_by: DecisionOpener,
    pub notes: Vec<DecisionNote>,
    /// What the agent reported when it handled a follow-up.
    pub result: Option<String>,
    pub evidence: Value,
    pub created_at: Utc,
    pub updated_at: Utc,
    /// `{type: person, id, name}`, or for a relay `{type: relay, name, role, agent, origin,
    /// effective_at}`; null until decided.
    pub decided_by: Option<Value>,
    pub decided_at: Option<Utc>,
}

#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct DecisionWorkspace {
    pub id: Uuid,
    pub name: String,
}

#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct DecisionPersona {
    pub id: Uuid,
    pub name: String,
}

#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct DecisionAccount {
    pub code: String,
    pub platform: String,
}

#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct DecisionOpener {
    /// agent, person or service.
    #[serde(rename = "type")]
    pub kind: String,
    pub name: String,
}

#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct DecisionNote {
    pub by: String,
    pub text: String,
    pub at: String,
}

// ---------------------------------------------------------------------------------------------
// GET /decisions

#[derive(Debug, Clone, Copy, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum DecisionStatusFilter {
    Open,
    Handled,
    Resolved,
    Dismissed,
    All,
}

#[derive(Debug, Serialize, Deserialize, Validate, ToSchema)]
pub struct DecisionQueryIn {
    /// One status, or `all`; default open and handled.
    pub status: Option<DecisionStatusFilter>,
    pub kind: Option<DecisionKind>,
    /// 1-200, default 50.
    pub limit: Option<Limit<200>>,
    /// `next_cursor` of the previous page.
    pub cursor: Option<CursorInput>,
}

#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct DecisionPage {
    pub decisions: Vec<DecisionOut>,
    /// Pass as `cursor` for the next page; null on the last page.
    pub next_cursor: Option<Cursor>,
}

// ---------------------------------------------------------------------------------------------
// The moves

#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct DecisionMoveReply {
    pub decision: DecisionOut,
    /// `changed`, or `unchanged` when the same move (or the same result) was already recorded.
    pub result: String,
    /// The follow-up this move opened (with its task card), if any.
    pub follow_up_id: Option<Uuid>,
}

#[derive(Debug, Serialize, Deserialize, Validate, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct DecisionResolveBody {
    /// Appended to the decision's notes.
    pub note: Option<Text<1, 1000>>,
    /// persona_images only: an image of category avatar (approved by this move) to use as the
    /// new avatar; opens a change_avatar follow-up.
    pub set_avatar: Option<Uuid>,
}

#[derive(Debug, Serialize, Deserialize, Validate, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct DecisionDismissBody {
    /// Appended to the decision's notes.
    pub note: Option<Text<1, 1000>>,
}

#[derive(Debug, Serialize, Deserialize, Validate, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct DecisionChooseBody {
    /// One of the decision's options (`approve_some` on persona_images).
    pub option: Text<1, 100>,
    /// Appended to the decision's notes.
    pub note: Option<Text<1, 1000>>,
    /// With approve_some: the images approved (1-100); the rest are refused.
    pub image_ids: Option<Ids<1, 100>>,
    /// persona_images only: an approved image of category avatar to use as the new avatar.
    pub set_avatar: Option<Uuid>,
}

// ---------------------------------------------------------------------------------------------
// POST /issues/{id}/done

#[derive(Debug, Serialize, Deserialize, Validate, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct IssueDoneBody {
    /// What was done, 1-2000 characters.
    pub result: Text<1, 2000>,
    /// At most 20 items.
    pub evidence: Option<List<EvidenceIn, 0, 20>>,
}

// ---------------------------------------------------------------------------------------------
// POST /issues/{id}/relay

#[derive(Debug, Serialize, Deserialize, Validate, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct RelayIssueBody {
    pub action: Action,
    /// With choose only: one of the decision's options.
    pub option: Option<Text<1, 100>>,
    /// Appended to the decision's notes.
    pub note: Option<Text<1, 1000>>,
    /// With choose approve_some on persona_images: the images approved (1-100).
    pub image_ids: Option<Ids<1, 100>>,
    /// persona_images only (resolve or approve_some): the new avatar.
    pub set_avatar: Option<Uuid>,
    #[schema(value_type = StaffOnBehalfOf)]
    pub on_behalf_of: OnBehalfOf,
    pub origin: Origin,
    /// When the person decided (ISO with zone); default now.
    pub effective_at: Option<IsoTimeInput>,
}

/// The agent's operations (`/api/agent/v1`).
pub mod agent {
    use super::*;
    use fleetdesk_kernel::access::Scope;
    use fleetdesk_kernel::op::{HttpMethod::Post, Nothing, OpSpec};
    use fleetdesk_kernel::wire::fields::IdPath;

    fleetdesk_kernel::operations! {
        /// Report a follow-up of one of your personas done.
        pub CompleteIssue(IdPath, Nothing, IssueDoneBody) -> DecisionMoveReply =
            OpSpec::agent(Post, "/issues/{id}/done", Scope::IssuesWrite)
                .tool("complete_issue")
                .idempotent()
                .summary("Report a follow-up of one of your personas done")
                .description(
                    "Only follow-ups (change_avatar, change_bio, delete_post) of your own \
                     personas (another agent's or workspace's: 404); any other kind is 422. result \
                     1-2000 characters; evidence at most 20 items, each {type: link, url, label} \
                     or {type: asset, asset_id} (a media library item of the card's workspace, \
                     else 422 naming evidence). The decision becomes handled and its task card \
                     pending_confirmation with the result and evidence; the same result resent \
                     answers `result: unchanged` (also once a person resolved it); another result \
                     once handled or resolved, or a decision dismissed, is 422.",
                );

        /// Record a person's decision made in a chat.
        pub RelayIssue(IdPath, Nothing, RelayIssueBody) -> DecisionMoveReply =
            OpSpec::agent(Post, "/issues/{id}/relay", Scope::RelayWrite)
                .tool("relay_issue")
                .idempotent()
                .summary("Record a person's decision made in a chat")
                .description(
                    "on_behalf_of and origin are required (400 without); the person's role must \
                     be agency or admin (else 422), and must not be this agent. Only decisions of \
                     your own personas (else 404). action resolve, dismiss or choose with the same \
                     rules as the Personal API's moves; option only with choose. A decision already \
                     resolved or dismissed answers any other move with 422 rejected; the same move \
                     resent answers `result: unchanged`. An agent never relays the confirmation \
                     (resolve) of a follow-up whose task card is assigned to itself (422): a \
                     person confirms it, directly or through another agent's relay. decided_by \
                     records the relay.",
                );
    }
}

/// The person's operations (`/api/user/v1`).
pub mod personal {
    use super::*;
    use fleetdesk_kernel::access::PersonalAccess;
    use fleetdesk_kernel::op::{
        HttpMethod::{Get, Post},
        Nothing, OpSpec,
    };
    use fleetdesk_kernel::wire::fields::IdPath;

    fleetdesk_kernel::operations! {
        /// Pending decisions of the organization, newest first.
        pub ListDecisions(Nothing, DecisionQueryIn, Nothing) -> DecisionPage =
            OpSpec::personal(Get, "/decisions", PersonalAccess::Agency)
                .tool("list_decisions")
                .summary("Pending decisions of the organization, newest first")
                .description(
                    "Agency people and platform admins; clients are refused (403). Only the \
                     member's organization's decisions (a platform admin outside any organization \
                     sees every organization's). Filter status (default open and handled; `all` \
                     for every status) and kind; pages with limit 1-200 (default 50) and cursor. \
                     A persona_images decision's detail lists its images {id, category, caption, \
                     character, lock, url, thumb_url} with links signed for 15 minutes \
                     (`images_expire_in_seconds`), so the person deciding sees the draft images; \
                     a refused image is listed without links {id, category, caption, character, \
                     lock}. A wiki_draft decision's detail is the proposal waiting: {entry_id, \
                     version, revision (true when the entry has a canon version it would replace), \
                     project, category, title, summary, body, tags, sources, note}.",
                );

        /// Resolve a decision: accept what it proposes.
        pub ResolveIssue(IdPath, Nothing, DecisionResolveBody) -> DecisionMoveReply =
            OpSpec::personal(Post, "/decisions/{id}/resolve", PersonalAccess::Agency)
                .tool("decide_issue")
                .tool_action("resolve")
                .idempotent()
                .summary("Resolve a decision: accept what it proposes")
                .description(MOVE_RULES);

        /// Dismiss a decision: refuse what it proposes.
        pub DismissIssue(IdPath, Nothing, DecisionDismissBody) -> DecisionMoveReply =
            OpSpec::personal(Post, "/decisions/{id}/dismiss", PersonalAccess::Agency)
                .tool("decide_issue")
                .tool_action("dismiss")
                .idempotent()
                .summary("Dismiss a decision: refuse what it proposes")
                .description(MOVE_RULES);

        /// Choose one of a decision's options.
        pub ChooseIssue(IdPath, Nothing, DecisionChooseBody) -> DecisionMoveReply =
            OpSpec::personal(Post, "/decisions/{id}/choose", PersonalAccess::Agency)
                .tool("choose_issue")
                .idempotent()
                .summary("Choose one of a decision's options")
                .description(MOVE_RULES);
    }
}
