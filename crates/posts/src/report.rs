//! `report_posts`: which post a reported item is (the matching order of the specification)
//! and what the report does to it (the post state table). Pure: the adapter loads the posts a
//! batch may touch in a few bulk statements, [`plan_report`] decides every item, and the
//! adapter writes the plan back in bulk.

use crate::approval::{ApprovalPin, PublishedDiffers, published_differs};
use crate::metrics::CLOCK_SKEW;
use crate::ports::RawReportItem;
use crate::post::{PostStatus, PostSubject, body_key, normalize_body};
use fleetdesk_kernel::events::{EventBody, NewEvent};
use fleetdesk_kernel::{Platform, TimeInput};
use jiff::tz::TimeZone;
use jiff::{SignedDuration, Timestamp};
use serde::{Deserialize, Serialize};
use std::collections::HashMap;
use uuid::Uuid;

/// Published posts this recent are still matched by body.
pub const PUBLISHED_MATCH_WINDOW: SignedDuration = SignedDuration::from_hours(12);
/// A published report adopts an unpublished post scheduled this close to it (rule 4).
pub const ADOPT_WINDOW: SignedDuration = SignedDuration::from_hours(24);

fleetdesk_kernel::text_enum! {
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
    #[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
    #[serde(rename_all = "snake_case")]
    pub enum ReportedStatus {
        Scheduled => "scheduled",
        Published => "published",
        Failed => "failed",
        Cancelled => "cancelled",
    }
}

impl ReportedStatus {
    fn status(self) -> PostStatus {
        match self {
            ReportedStatus::Scheduled => PostStatus::Scheduled,
            ReportedStatus::Published => PostStatus::Published,
            ReportedStatus::Failed => PostStatus::Failed,
            ReportedStatus::Cancelled => PostStatus::Cancelled,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "snake_case")]
pub enum Action {
    Inserted,
    Updated,
    Unchanged,
    Ignored,
    Unscheduled,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "snake_case")]
pub enum MatchedBy {
    PostId,
    PlatformPostId,
    Body,
}

/// Why one item was refused (`error.code` of its result): each refusal a rule with the facts
/// it speaks of; [`ItemError::message`] words it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ItemError {
    /// What the item names is not in the workspace.
    NotFound(ItemMissing),
    /// The code names accounts on several platforms.
    AmbiguousCode { code: String },
    /// What the item names is another agent's.
    Forbidden(NotYours),
    /// The item contradicts the post or the report it is in.
    Rejected(ItemRejection),
    /// A field of the item is malformed or missing.
    Invalid { field: String, message: String },
    /// The platform id is already on another post.
    Conflict(IdTaken),
}

/// What an item names that is not there.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ItemMissing {
    Account {
        code: String,
    },
    Post {
        id: Uuid,
    },
    /// A metrics item's post, named by its account and platform id.
    PlatformPost {
        code: String,
        platform_post_id: String,
    },
}

/// What an item names that is another agent's.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NotYours {
    Account {
        code: String,
    },
    Post {
        id: Uuid,
    },
    PlatformPost {
        platform_post_id: String,
    },
    /// The post a metrics item measures.
    MeasuredPost,
}

/// A platform id that is already on another post.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum IdTaken {
    /// On a post of another account (matched by the platform id).
    OnAnotherAccount { platform_post_id: String },
    /// On another post than the one its post_id names.
    OnAnotherPost { platform_post_id: String },
}

/// The rules an item breaks against its post or its report.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ItemRejection {
    /// A published report gives no permalink.
    PermalinkMissing,
    /// The post_id names a post of another account than the item's code.
    OtherAccountsPost { id: Uuid, code: String },
    /// The post has not been through review.
    NotReviewed { status: PostStatus },
    /// The post was deleted from inventory: it cannot be scheduled.
    DeletedFromInventory,
    /// The post is in inventory: it cannot be scheduled until unstocked.
    InInventory,
    /// The same post is measured earlier in the report.
    SamePostEarlier,
    /// The same account is measured earlier in the report.
    SameAccountEarlier,
    /// The item holds no value.
    NoValues,
    /// Every value given fell from a positive number to 0 (they are kept back).
    ZerosKeptBack { counters: Vec<&'static str> },
    /// The followers fell from a positive number to 0 (kept back).
    FollowersKeptBack,
    /// Metrics for a post that is not published.
    NotPublished { status: PostStatus },
}

impl ItemError {
    pub fn code(&self) -> &'static str {
        match self {
            ItemError::NotFound(_) => "not_found",
            ItemError::AmbiguousCode { .. } => "ambiguous_code",
            ItemError::Forbidden(_) => "forbidden",
            ItemError::Rejected(_) => "rejected",
            ItemError::Invalid { .. } => "invalid",
            ItemError::Conflict(_) => "conflict",
        }
    }

    /// The refusal in words, as the item's `error.message` gives it.
    pub fn message(&self) -> String {
        match self {
            ItemError::NotFound(missing) => match missing {
                ItemMissing::Account { code } => format!("no account {code} in this workspace"),
                ItemMissing::Post { id } => format!("no post {id} in this workspace"),
                ItemMissing::PlatformPost {
                    code,
                    platform_post_id,
                } => format!(
                    "no post with platform_post_id {platform_post_id} on {code}: report it as \
                     published first"
                ),
            },
            ItemError::AmbiguousCode { code } => {
                format!("{code} names accounts on several platforms; add platform")
            }
            ItemError::Forbidden(theirs) => match theirs {
                NotYours::Account { code } => {
                    format!("account {code} belongs to another agent's persona")
                }
                NotYours::Post { id } => format!("post {id} belongs to another agent's account"),
                NotYours::PlatformPost { platform_post_id } => format!(
                    "platform_post_id {platform_post_id} is a post of another agent's account"
                ),
                NotYours::MeasuredPost => "the post belongs to another agent's account".to_owned(),
            },
            ItemError::Rejected(rule) => rule.message(),
            ItemError::Invalid { field, message } => format!("{field}: {message}"),
            ItemError::Conflict(taken) => match taken {
                IdTaken::OnAnotherAccount { platform_post_id } => format!(
                    "platform_post_id {platform_post_id} is already on a post of another account"
                ),
                IdTaken::OnAnotherPost { platform_post_id } => {
                    format!("platform_post_id {platform_post_id} is already on another post")
                }
            },
        }
    }

    pub fn field(&self) -> Option<&str> {
        match self {
            ItemError::Invalid { field, .. } => Some(field),
            _ => None,
        }
    }
}

impl ItemRejection {
    fn message(&self) -> String {
        match self {
            ItemRejection::PermalinkMissing => {
                "permalink is required when status is published: give the post's link".to_owned()
            }
            ItemRejection::OtherAccountsPost { id, code } => {
                format!("post {id} is a post of another account, not {code}")
            }
            ItemRejection::NotReviewed { status } => format!(
                "the post is {status} and has not been through review; only approved posts can \
                 be reported"
            ),
            ItemRejection::DeletedFromInventory => {
                "the post was deleted from inventory and can no longer be scheduled".to_owned()
            }
            ItemRejection::InInventory => {
                "the post is in inventory and cannot be scheduled; unstock it first".to_owned()
            }
            ItemRejection::SamePostEarlier => {
                "the same post appears earlier in this report".to_owned()
            }
            ItemRejection::SameAccountEarlier => {
                "the same account appears earlier in this report".to_owned()
            }
            ItemRejection::NoValues => "no values to record".to_owned(),
            ItemRejection::ZerosKeptBack { counters } => format!(
                "{} fell from a positive number to 0 and were not recorded",
                counters.join(", ")
            ),
            ItemRejection::FollowersKeptBack => {
                "followers fell from a positive number to 0 and was not recorded".to_owned()
            }
            ItemRejection::NotPublished { status } => format!(
                "the post is {status}: report it as published (with its platform_post_id) first"
            ),
        }
    }
}

/// The account an item names, resolved to one of the caller's slots.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReportSlot {
    pub slot_id: Uuid,
    pub code: String,
    pub platform: Platform,
    pub workspace_id: Uuid,
    pub persona_id: Uuid,
    /// The agent the persona is assigned to: told of the posts the report creates.
    pub persona_agent: Option<Uuid>,
    pub project_id: Uuid,
    pub generation_id: Option<Uuid>,
}

/// One reported post after its own checks: account resolved, times read in its zone.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReportItem {
    pub slot: ReportSlot,
    pub status: ReportedStatus,
    pub scheduled_for: Option<Timestamp>,
    /// For published: when; the report's time when not given.
    pub published_at: Option<Timestamp>,
    pub platform_post_id: Option<String>,
    pub permalink: Option<String>,
    pub body: Option<String>,
    pub topic: Option<String>,
    pub has_media: Option<bool>,
    pub sponsored: Option<bool>,
    pub post_id: Option<Uuid>,
    pub failure_reason: Option<String>,
}

/// The checks of an item that need no stored post: what each status requires.
pub fn check_requirements(
    status: ReportedStatus,
    has_scheduled_for: bool,
    has_permalink: bool,
    has_failure_reason: bool,
) -> Result<(), ItemError> {
    let missing = |field: &str, why: &str| {
        Err(ItemError::Invalid {
            field: field.to_owned(),
            message: why.to_owned(),
        })
    };
    match status {
        ReportedStatus::Scheduled if !has_scheduled_for => {
            missing("scheduled_for", "is required when status is scheduled")
        }
        ReportedStatus::Published if !has_permalink => {
            Err(ItemError::Rejected(ItemRejection::PermalinkMissing))
        }
        ReportedStatus::Failed if !has_failure_reason => {
            missing("failure_reason", "is required when status is failed")
        }
        _ => Ok(()),
    }
}

/// PostgreSQL keeps times to the microsecond: a time compared with a stored one (the report's
/// own time too) must be cut the same way.
pub fn to_stored_precision(t: Timestamp) -> Timestamp {
    t.round(jiff::Unit::Microsecond).unwrap_or(t)
}

/// An item's own checks once its account is known: its times read in the account's zone (and
/// cut to [`to_stored_precision`]), a publication time not ahead of `now` by more than the
/// clock skew, then what its status requires ([`check_requirements`]).
pub fn ready_item(
    raw: RawReportItem,
    slot: ReportSlot,
    zone: &TimeZone,
    now: Timestamp,
) -> Result<ReportItem, ItemError> {
    let time = |field: &str, v: &Option<TimeInput>| -> Result<Option<Timestamp>, ItemError> {
        v.map(|input| {
            input
                .resolve(zone)
                .map(to_stored_precision)
                .map_err(|e| ItemError::Invalid {
                    field: field.to_owned(),
                    message: e.to_string(),
                })
        })
        .transpose()
    };
    let scheduled_for = time("scheduled_for", &raw.scheduled_for)?;
    let published_at = time("published_at", &raw.published_at)?;
    if published_at.is_some_and(|t| t.duration_since(now) > CLOCK_SKEW) {
        return Err(ItemError::Invalid {
            field: "published_at".into(),
            message: "is in the future".into(),
        });
    }
    check_requirements(
        raw.status,
        scheduled_for.is_some(),
        raw.permalink.is_some(),
        raw.failure_reason.is_some(),
    )?;
    Ok(ReportItem {
        slot,
        status: raw.status,
        scheduled_for,
        published_at,
        platform_post_id: raw.platform_post_id,
        permalink: raw.permalink,
        body: raw.body,
        topic: raw.topic,
        has_media: raw.has_media,
        sponsored: raw.sponsored,
        post_id: raw.post_id,
        failure_reason: raw.failure_reason,
    })
}

/// The columns a report may change.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PostFields {
    pub status: PostStatus,
    pub body: String,
    /// [`body_key`] of `body`; empty as loaded for a post stored without one, whose key
    /// [`plan_report`] reads from its body.
    pub body_key: String,
    pub topic: Option<String>,
    pub sponsored: bool,
    pub scheduled_for: Option<Timestamp>,
    pub published_at: Option<Timestamp>,
    pub platform_post_id: Option<String>,
    pub scheduler_ref: Option<String>,
    pub permalink: Option<String>,
    pub has_media: Option<bool>,
    pub failure_reason: Option<String>,
    pub unschedule_pending: bool,
}

/// A post a batch may touch, as stored (or as an earlier item of the batch left it).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KnownPost {
    pub id: Uuid,
    pub slot_id: Uuid,
    pub platform: Platform,
    /// In the caller's workspace.
    pub in_workspace: bool,
    /// Under one of the caller's personas.
    pub mine: bool,
    /// First seen in a report: follows platform edits.
    pub from_report: bool,
    /// Deleted from inventory: never scheduled again.
    pub discarded: bool,
    pub planned_at: Option<Timestamp>,
    /// The agent its persona is assigned to: told of the report's changes.
    pub persona_agent: Option<Uuid>,
    pub fields: PostFields,
    /// What its last approval pinned (none: never approved).
    pub approved: Option<ApprovalPin>,
    /// Already marked published differing from its approval (a mark is made once).
    pub marked: bool,
}

impl KnownPost {
    /// The post with its body's [`body_key`] when it was stored without one.
    fn keyed(mut self) -> KnownPost {
        if self.fields.body_key.is_empty() {
            self.fields.body_key = body_key(&self.fields.body);
        }
        self
    }

    fn time(&self) -> Option<Timestamp> {
        self.fields
            .scheduled_for
            .or(self.fields.published_at)
            .or(self.planned_at)
    }
}

/// The result of one item, in the response.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ItemResult {
    pub index: usize,
    pub action: Option<Action>,
    pub post_id: Option<Uuid>,
    pub status: Option<PostStatus>,
    pub matched_by: Option<MatchedBy>,
    pub note: Option<String>,
    pub error: Option<ItemError>,
    pub published_from_stock: bool,
    pub warning: Option<String>,
}

impl ItemResult {
    fn refused(index: usize, error: ItemError) -> ItemResult {
        ItemResult {
            index,
            action: None,
            post_id: None,
            status: None,
            matched_by: None,
            note: None,
            error: Some(error),
            published_from_stock: false,
            warning: None,
        }
    }

    pub fn ok(&self) -> bool {
        self.error.is_none()
    }
}

/// A post the report creates.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewReportedPost {
    pub id: Uuid,
    pub slot: ReportSlot,
    pub fields: PostFields,
}

/// A review-record entry a report writes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReportEvent {
    pub post_id: Uuid,
    pub action: String,
    pub reason: Option<String>,
    pub detail: serde_json::Value,
}

/// What a batch does, ready to be written.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ReportPlan {
    pub results: Vec<ItemResult>,
    /// Posts the report creates, with their final columns.
    pub inserts: Vec<NewReportedPost>,
    /// Existing posts whose columns change, with their final columns.
    pub updates: Vec<(Uuid, PostFields)>,
    /// The posts' review-record entries.
    pub events: Vec<ReportEvent>,
    /// What the batch tells the event log, in item order: a `post.reported` for each item that
    /// created a post or changed its status (`reported_event`), and a
    /// `post.published_differs` for each mark.
    pub told: Vec<NewEvent>,
    /// Posts a published report marks as differing from their approval (or never approved).
    pub marks: Vec<(Uuid, PublishedDiffers)>,
}

impl ReportPlan {
    pub fn count(&self, action: Action) -> usize {
        self.results
            .iter()
            .filter(|r| r.action == Some(action))
            .count()
    }

    pub fn rejected(&self) -> usize {
        self.results.iter().filter(|r| !r.ok()).count()
    }

    /// Every item was refused: nothing may be written.
    pub fn all_rejected(&self) -> bool {
        self.results.iter().all(|r| !r.ok())
    }

    /// What the batch did, as its report row and its answer count it.
    pub fn counts(&self) -> ReportCounts {
        ReportCounts {
            inserted: self.count(Action::Inserted),
            updated: self.count(Action::Updated) + self.count(Action::Unscheduled),
            unchanged: self.count(Action::Unchanged),
            ignored: self.count(Action::Ignored),
            rejected: self.rejected(),
        }
    }
}

/// A batch's counts: an unscheduled post counts as updated.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ReportCounts {
    pub inserted: usize,
    pub updated: usize,
    pub unchanged: usize,
    pub ignored: usize,
    pub rejected: usize,
}

/// What the state table says a report does to a post. Short-lived, one per item: the size of
/// the `Change` variant costs nothing worth a box.
#[allow(clippy::large_enum_variant)]
enum Step {
    Reject(ItemRejection),
    Ignore(String),
    Unchanged,
    Change {
        fields: PostFields,
        action: Action,
        from_stock: bool,
        warning: Option<String>,
        note: Option<String>,
    },
}

/// Decides every item of a batch. `items` come in request order, each already checked on its
/// own (`Err` for the ones refused before matching); `known` holds every stored post the batch
/// may match. Items see the effect of earlier items of the same batch.
pub fn plan_report(
    items: Vec<Result<ReportItem, ItemError>>,
    known: Vec<KnownPost>,
    now: Timestamp,
) -> ReportPlan {
    let mut posts: Vec<KnownPost> = known.into_iter().map(KnownPost::keyed).collect();
    let mut inserted: HashMap<Uuid, ReportSlot> = HashMap::new();
    let mut touched: Vec<Uuid> = Vec::new();
    let mut plan = ReportPlan::default();

    for (index, item) in items.into_iter().enumerate() {
        let item = match item {
            Ok(i) => i,
            Err(e) => {
                plan.results.push(ItemResult::refused(index, e));
                continue;
            }
        };
        let result = match find(&posts, &item, now) {
            Err(e) => ItemResult::refused(index, e),
            Ok(None) => create(index, &item, now, &mut posts, &mut inserted, &mut plan),
            Ok(Some((at, matched_by, adopt_note))) => {
                let post = &posts[at];
                match step(post, &item, now) {
                    Step::Reject(m) => ItemResult::refused(index, ItemError::Rejected(m)),
                    Step::Ignore(note) => ItemResult {
                        index,
                        action: Some(Action::Ignored),
                        post_id: Some(post.id),
                        status: Some(post.fields.status),
                        matched_by: Some(matched_by),
                        note: Some(note),
                        error: None,
                        published_from_stock: false,
                        warning: None,
                    },
                    Step::Unchanged => {
                        let result = ItemResult {
                            index,
                            action: Some(Action::Unchanged),
                            post_id: Some(post.id),
                            status: Some(post.fields.status),
                            matched_by: Some(matched_by),
                            note: adopt_note,
                            error: None,
                            published_from_stock: false,
                            warning: None,
                        };
                        mark(&mut posts[at], &item, now, &mut plan);
                        result
                    }
                    Step::Change {
                        fields,
                        action,
                        from_stock,
                        warning,
                        note,
                    } => {
                        let id = post.id;
                        let note = join_notes(adopt_note, note);
                        plan.events
                            .push(event(id, &item, action, &fields, note.as_deref()));
                        let from = Some(post.fields.status);
                        plan.told.extend(reported_event(
                            (id, post.persona_agent),
                            &item,
                            from,
                            &fields,
                        ));
                        let status = fields.status;
                        posts[at].fields = fields;
                        mark(&mut posts[at], &item, now, &mut plan);
                        if !touched.contains(&id) {
                            touched.push(id);
                        }
                        ItemResult {
                            index,
                            action: Some(action),
                            post_id: Some(id),
                            status: Some(status),
                            matched_by: Some(matched_by),
                            note,
                            error: None,
                            published_from_stock: from_stock,
                            warning,
                        }
                    }
                }
            }
        };
        plan.results.push(result);
    }

    for id in touched {
        let post = posts.iter().find(|p| p.id == id).expect("touched post");
        match inserted.remove(&id) {
            Some(slot) => {
                if let Some(new) = plan.inserts.iter_mut().find(|n| n.id == id) {
                    new.fields = post.fields.clone();
                    new.slot = slot;
                }
            }
            None => plan.updates.push((id, post.fields.clone())),
        }
    }
    plan
}

/// A published report about `post` (as the item left it) marks it when its body differs from
/// the approved one or nobody approved it ([`published_differs`]); once per post.
fn mark(post: &mut KnownPost, item: &ReportItem, now: Timestamp, plan: &mut ReportPlan) {
    if item.status != ReportedStatus::Published
        || post.fields.status != PostStatus::Published
        || post.marked
    {
        return;
    }
    let Some(differs) = published_differs(
        post.approved.as_ref(),
        item.body.as_deref(),
        &post.fields.body,
        now,
    ) else {
        return;
    };
    let subject = PostSubject {
        workspace_id: item.slot.workspace_id,
        agent_id: post.persona_agent,
        id: post.id,
        code: &item.slot.code,
        platform: item.slot.platform,
    };
    plan.told.push(differs.event(&subject));
    plan.marks.push((post.id, differs));
    post.marked = true;
}

fn join_notes(a: Option<String>, b: Option<String>) -> Option<String> {
    match (a, b) {
        (Some(a), Some(b)) => Some(format!("{a}; {b}")),
        (a, b) => a.or(b),
    }
}

/// Not yet published, for rule 4: a published report may adopt a post in these statuses, and a
/// report may match one by body whatever its age (published posts match by body only within
/// [`PUBLISHED_MATCH_WINDOW`]). The in-flight statuses are among them.
pub fn adoptable(s: PostStatus) -> bool {
    matches!(
        s,
        PostStatus::Approved | PostStatus::Scheduled | PostStatus::Failed | PostStatus::Stocked
    )
}

/// The matching order: post_id, then platform_post_id (same organization and platform), then
/// same account and body at the nearest time. `Ok(None)`: no post matches.
fn find(
    posts: &[KnownPost],
    item: &ReportItem,
    now: Timestamp,
) -> Result<Option<(usize, MatchedBy, Option<String>)>, ItemError> {
    if let Some(id) = item.post_id {
        let at = posts
            .iter()
            .position(|p| p.id == id && p.in_workspace)
            .ok_or(ItemError::NotFound(ItemMissing::Post { id }))?;
        let post = &posts[at];
        if !post.mine {
            return Err(ItemError::Forbidden(NotYours::Post { id }));
        }
        if post.slot_id != item.slot.slot_id {
            return Err(ItemError::Rejected(ItemRejection::OtherAccountsPost {
                id,
                code: item.slot.code.clone(),
            }));
        }
        conflict(posts, item, post.id)?;
        return Ok(Some((at, MatchedBy::PostId, None)));
    }
    if let Some(pid) = &item.platform_post_id
        && let Some(at) = posts.iter().position(|p| {
            p.platform == item.slot.platform && p.fields.platform_post_id.as_ref() == Some(pid)
        })
    {
        let post = &posts[at];
        if !post.mine {
            return Err(ItemError::Forbidden(NotYours::PlatformPost {
                platform_post_id: pid.clone(),
            }));
        }
        if post.slot_id != item.slot.slot_id {
            return Err(ItemError::Conflict(IdTaken::OnAnotherAccount {
                platform_post_id: pid.clone(),
            }));
        }
        return Ok(Some((at, MatchedBy::PlatformPostId, None)));
    }
    let Some(body) = &item.body else {
        return Ok(None);
    };
    let key = body_key(body);
    let item_time = match item.status {
        ReportedStatus::Scheduled => item.scheduled_for,
        ReportedStatus::Published => item.published_at,
        _ => None,
    }
    .unwrap_or(now);
    let publishing = item.status == ReportedStatus::Published;
    let mut best: Option<(usize, SignedDuration, Option<String>)> = None;
    for (at, p) in posts.iter().enumerate() {
        if p.slot_id != item.slot.slot_id || !p.mine {
            continue;
        }
        if p.fields.body_key != key {
            continue;
        }
        let s = p.fields.status;
        let in_flight = matches!(
            s,
            PostStatus::Approved | PostStatus::Scheduled | PostStatus::Failed
        ) || (s == PostStatus::Published
            && p.fields
                .published_at
                .is_some_and(|t| now.duration_since(t) <= PUBLISHED_MATCH_WINDOW));
        let unpublished = adoptable(s);
        let other_id = match (&item.platform_post_id, &p.fields.platform_post_id) {
            (Some(mine), Some(theirs)) if mine != theirs => Some(theirs.clone()),
            _ => None,
        };
        // Rule 4: a published report adopts an unpublished post scheduled within a day of it
        // (or not scheduled at all), even when the earlier id was the publishing tool's own.
        let adopts = publishing
            && unpublished
            && p.fields
                .scheduled_for
                .is_none_or(|t| t.duration_since(item_time).abs() <= ADOPT_WINDOW);
        let note = match (&other_id, adopts) {
            (Some(old), true) => Some(format!(
                "matched by account and body; platform_post_id {} replaces the earlier id {old}",
                item.platform_post_id.as_deref().unwrap_or_default()
            )),
            (Some(_), false) => continue,
            (None, _) if in_flight || adopts => None,
            (None, _) => continue,
        };
        let distance = p
            .time()
            .map(|t| t.duration_since(item_time).abs())
            .unwrap_or(SignedDuration::MAX);
        if best.as_ref().is_none_or(|(_, d, _)| distance < *d) {
            best = Some((at, distance, note));
        }
    }
    Ok(best.map(|(at, _, note)| (at, MatchedBy::Body, note)))
}

/// A platform id given with a post_id match must not be on another post.
fn conflict(posts: &[KnownPost], item: &ReportItem, matched: Uuid) -> Result<(), ItemError> {
    if let Some(pid) = &item.platform_post_id
        && posts.iter().any(|p| {
            p.id != matched
                && p.platform == item.slot.platform
                && p.fields.platform_post_id.as_ref() == Some(pid)
        })
    {
        return Err(ItemError::Conflict(IdTaken::OnAnotherPost {
            platform_post_id: pid.clone(),
        }));
    }
    Ok(())
}

/// A report that matches no post creates one, except a cancellation of a post never reported.
fn create(
    index: usize,
    item: &ReportItem,
    now: Timestamp,
    posts: &mut Vec<KnownPost>,
    inserted: &mut HashMap<Uuid, ReportSlot>,
    plan: &mut ReportPlan,
) -> ItemResult {
    if item.status == ReportedStatus::Cancelled {
        return ItemResult {
            index,
            action: Some(Action::Ignored),
            post_id: None,
            status: None,
            matched_by: None,
            note: Some("no post matches and none was ever reported; nothing to cancel".to_owned()),
            error: None,
            published_from_stock: false,
            warning: None,
        };
    }
    let Some(body) = &item.body else {
        return ItemResult::refused(
            index,
            ItemError::Invalid {
                field: "body".to_owned(),
                message: "is required the first time a post is reported (no post_id, \
                          platform_post_id or same-body post matches)"
                    .to_owned(),
            },
        );
    };
    let status = item.status.status();
    let fields = PostFields {
        status,
        body: body.clone(),
        body_key: body_key(body),
        topic: item.topic.clone(),
        sponsored: item.sponsored.unwrap_or(false),
        scheduled_for: item.scheduled_for,
        published_at: (status == PostStatus::Published).then(|| item.published_at.unwrap_or(now)),
        platform_post_id: item.platform_post_id.clone(),
        scheduler_ref: None,
        permalink: item.permalink.clone(),
        has_media: item.has_media,
        failure_reason: item.failure_reason.clone(),
        unschedule_pending: false,
    };
    let id = Uuid::new_v4();
    plan.events
        .push(event(id, item, Action::Inserted, &fields, None));
    plan.told.extend(reported_event(
        (id, item.slot.persona_agent),
        item,
        None,
        &fields,
    ));
    plan.inserts.push(NewReportedPost {
        id,
        slot: item.slot.clone(),
        fields: fields.clone(),
    });
    inserted.insert(id, item.slot.clone());
    let mut post = KnownPost {
        id,
        slot_id: item.slot.slot_id,
        platform: item.slot.platform,
        in_workspace: true,
        mine: true,
        from_report: true,
        discarded: false,
        planned_at: None,
        persona_agent: item.slot.persona_agent,
        fields,
        approved: None,
        marked: false,
    };
    mark(&mut post, item, now, plan);
    posts.push(post);
    ItemResult {
        index,
        action: Some(Action::Inserted),
        post_id: Some(id),
        status: Some(status),
        matched_by: None,
        note: None,
        error: None,
        published_from_stock: false,
        warning: None,
    }
}

/// The post state table for one matched post.
fn step(post: &KnownPost, item: &ReportItem, now: Timestamp) -> Step {
    use ReportedStatus as R;
    let s = post.fields.status;
    // The agent still has the post in its own tool (it was stocked, then released or deleted
    // from inventory): a cancellation says it is gone from there, whatever the post's status.
    if item.status == R::Cancelled && post.fields.unschedule_pending && s != PostStatus::Stocked {
        let mut fields = post.fields.clone();
        fields.unschedule_pending = false;
        return Step::Change {
            fields,
            action: Action::Unscheduled,
            from_stock: false,
            warning: None,
            note: Some("removed from the publishing tool".to_owned()),
        };
    }
    if s.before_review() {
        return Step::Reject(ItemRejection::NotReviewed { status: s });
    }
    if post.discarded {
        return match item.status {
            R::Published => changed(post, item, now, Action::Updated).with_warning(
                "published although it was deleted from inventory on a person's behalf",
            ),
            R::Scheduled => Step::Reject(ItemRejection::DeletedFromInventory),
            _ => Step::Ignore("the post was deleted from inventory".to_owned()),
        };
    }
    match (s, item.status) {
        (PostStatus::Deleted, _) => Step::Ignore("the post was deleted on the platform".to_owned()),
        (PostStatus::Published, R::Published) => changed(post, item, now, Action::Updated),
        (PostStatus::Published, _) => Step::Ignore(format!(
            "the post is already published; a published post stays published ({} ignored)",
            item.status.as_str()
        )),
        (PostStatus::Stocked, R::Cancelled) => {
            let mut fields = post.fields.clone();
            fields.unschedule_pending = false;
            if let Some(reason) = &item.failure_reason {
                fields.failure_reason = Some(reason.clone());
            }
            Step::Change {
                fields,
                action: Action::Unscheduled,
                from_stock: false,
                warning: None,
                note: Some("removed from the publishing tool; the post stays in inventory".into()),
            }
        }
        (PostStatus::Stocked, R::Published) => changed(post, item, now, Action::Updated)
            .with_warning(
                "published from inventory: the account was not supposed to post it; the post \
                 leaves inventory and counts as published",
            )
            .marked_from_stock(),
        (PostStatus::Stocked, R::Scheduled) => Step::Reject(ItemRejection::InInventory),
        (PostStatus::Stocked, R::Failed) => Step::Unchanged,
        (PostStatus::Approved, R::Cancelled) => Step::Ignore(
            "the post was never reported scheduled; nothing to cancel, it stays approved"
                .to_owned(),
        ),
        (PostStatus::Publishing, R::Scheduled | R::Cancelled) => {
            Step::Ignore("the service is publishing this post".to_owned())
        }
        _ => changed(post, item, now, Action::Updated),
    }
}

impl Step {
    fn with_warning(self, warning: &str) -> Step {
        match self {
            Step::Change {
                fields,
                action,
                from_stock,
                note,
                ..
            } => Step::Change {
                fields,
                action,
                from_stock,
                warning: Some(warning.to_owned()),
                note,
            },
            other => other,
        }
    }

    fn marked_from_stock(self) -> Step {
        match self {
            Step::Change {
                fields,
                action,
                warning,
                note,
                ..
            } => Step::Change {
                fields,
                action,
                from_stock: true,
                warning,
                note,
            },
            other => other,
        }
    }
}

/// The post's columns after the report; `Unchanged` when nothing differs.
fn changed(post: &KnownPost, item: &ReportItem, now: Timestamp, action: Action) -> Step {
    let mut f = post.fields.clone();
    let mut note = None;
    f.status = item.status.status();
    match item.status {
        ReportedStatus::Scheduled => f.scheduled_for = item.scheduled_for,
        ReportedStatus::Published => {
            f.published_at = item.published_at.or(f.published_at).or(Some(now));
            f.unschedule_pending = false;
        }
        ReportedStatus::Failed | ReportedStatus::Cancelled => {}
    }
    if item.permalink.is_some() {
        f.permalink = item.permalink.clone();
    }
    if item.failure_reason.is_some() {
        f.failure_reason = item.failure_reason.clone();
    }
    if item.has_media.is_some() {
        f.has_media = item.has_media;
    }
    if let Some(pid) = &item.platform_post_id
        && f.platform_post_id.as_ref() != Some(pid)
    {
        if let Some(old) = f.platform_post_id.take() {
            f.scheduler_ref.get_or_insert(old);
        }
        f.platform_post_id = Some(pid.clone());
    }
    if post.from_report {
        if let Some(body) = &item.body {
            f.body = body.clone();
            f.body_key = body_key(body);
        }
        if item.topic.is_some() {
            f.topic = item.topic.clone();
        }
        if let Some(s) = item.sponsored {
            f.sponsored = s;
        }
    } else if item
        .body
        .as_ref()
        .is_some_and(|b| normalize_body(b) != normalize_body(&f.body))
    {
        note = Some("the reported body differs; the reviewed body is kept".to_owned());
    }
    if f == post.fields {
        return Step::Unchanged;
    }
    Step::Change {
        fields: f,
        action,
        from_stock: false,
        warning: None,
        note,
    }
}

/// The event of an item that left post `id` (whose persona's agent is told) with `fields`:
/// `post.reported` when the post is new (`from` none) or its status changed, none when the
/// status stayed (a published post's link updated, an unscheduled one, a report of nothing
/// new). Its note is the published link, else the failure reason the item gave.
fn reported_event(
    (id, agent): (Uuid, Option<Uuid>),
    item: &ReportItem,
    from: Option<PostStatus>,
    fields: &PostFields,
) -> Option<NewEvent> {
    if from == Some(fields.status) {
        return None;
    }
    let note = match fields.status {
        PostStatus::Published => fields.permalink.as_deref(),
        _ => item.failure_reason.as_deref(),
    };
    let subject = PostSubject {
        workspace_id: item.slot.workspace_id,
        agent_id: agent,
        id,
        code: &item.slot.code,
        platform: item.slot.platform,
    };
    Some(subject.event(EventBody::PostReported, (from, fields.status), note))
}

fn event(
    post_id: Uuid,
    item: &ReportItem,
    action: Action,
    fields: &PostFields,
    note: Option<&str>,
) -> ReportEvent {
    let name = match action {
        Action::Unscheduled => "unscheduled".to_owned(),
        _ => format!("reported {}", item.status.as_str()),
    };
    ReportEvent {
        post_id,
        action: name,
        reason: item.failure_reason.clone(),
        detail: serde_json::json!({
            "status": fields.status,
            "platform_post_id": fields.platform_post_id,
            "permalink": fields.permalink,
            "scheduled_for": fields.scheduled_for.map(|t| t.to_string()),
            "published_at": fields.published_at.map(|t| t.to_string()),
            "note": note,
        }),
    }
}

#[cfg(test)]
mod tests;
