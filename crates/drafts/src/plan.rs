//! The draft use cases as plans. The adapter loads what a request names, under the locks its
//! port describes ([`crate::ports::DraftsRepo`]); these functions decide: the order of the
//! checks, where a post lands, why it was stocked, what its history records and what the call
//! answers. The adapter writes the plan in the same transaction. Nothing here reads storage, so
//! every rule is tested without it, and another service linking this crate submits a draft by
//! the same rules.

use crate::draft::{CastMember, Character, CharacterPick, MediaRef, check_characters, plan_media};
use crate::ports::{
    Attach, DraftEdit, DraftRefusal, DraftView, ItemProblem, NewDraft, StoredImage,
};
use fleetdesk_accounts::{AccountState, SlotName, choose};
use fleetdesk_ads::pick::{PickNumber, PickProblem, PickState, judge_draft};
use fleetdesk_kernel::Platform;
use fleetdesk_kernel::events::{EventBody, NewEvent};
use fleetdesk_kernel::media::MediaKind;
use fleetdesk_posts::post::{PostStatus, PostSubject, body_key, landing_status};
use jiff::Timestamp;
use jiff::tz::TimeZone;
use serde_json::{Value, json};
use uuid::Uuid;

/// An account a code may name, as loaded for a submit (its slot locked, so that submits to one
/// account run one at a time and the duplicate rule sees the previous one).
#[derive(Debug, Clone)]
pub struct AccountFact {
    pub slot: SlotName,
    /// The market's zone, for a planned time given without one.
    pub zone: TimeZone,
    pub workspace_id: Uuid,
    pub persona_id: Uuid,
    /// The agent the persona is assigned to: told of the post's submit.
    pub persona_agent: Option<Uuid>,
    pub project_id: Uuid,
    /// The slot's live account; none when it has none.
    pub generation_id: Option<Uuid>,
    /// The live account's state.
    pub state: Option<AccountState>,
}

/// An upload or library item a request names, as found in the workspace.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ItemFact {
    /// The id the request named: the upload's, or the library item's.
    pub id: Uuid,
    /// The library item it is; none for an upload whose file has not arrived.
    pub media: Option<MediaRef>,
    pub archived: bool,
    /// The project the item belongs to; none for one shared by the workspace.
    pub project_id: Option<Uuid>,
}

/// A post as loaded for a change (locked), with its account's state and its media.
#[derive(Debug, Clone, PartialEq)]
pub struct PostFact {
    pub id: Uuid,
    pub status: PostStatus,
    pub body: String,
    /// The body a person sent back or asked to rewrite.
    pub returned_body: Option<String>,
    pub awaiting_rewrite: bool,
    pub rewrite_answered: bool,
    pub project_id: Uuid,
    pub workspace_id: Uuid,
    pub persona_id: Uuid,
    /// The agent the persona is assigned to: told of the post's moves.
    pub persona_agent: Option<Uuid>,
    pub slot_id: Uuid,
    pub planned_at: Option<Timestamp>,
    pub characters: Vec<Character>,
    pub code: String,
    pub platform: Platform,
    pub state: Option<AccountState>,
    /// The asking agent runs the post's persona.
    pub mine: bool,
    /// The media on the post, in order.
    pub media: Vec<MediaRef>,
}

/// The ad pick a submit names, as loaded (locked) in the agent's workspace.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PickFact {
    pub id: Uuid,
    pub state: PickState,
    /// Another pick the post a resend found drafted already.
    pub other_on_duplicate: Option<PickNumber>,
}

/// What a submit needs once its account is chosen ([`choose_account`]).
#[derive(Debug, Clone)]
pub struct SubmitFacts {
    pub account: AccountFact,
    /// The persona's cast; loaded when the request names characters.
    pub cast: Vec<CastMember>,
    /// The uploads and library items the request names, as found (in any order).
    pub uploads: Vec<ItemFact>,
    pub library: Vec<ItemFact>,
    /// The request's inline images as entered in the library, in order.
    pub inline: Vec<MediaRef>,
    /// The oldest unpublished post of the account with the same body.
    pub duplicate: Option<PostFact>,
    /// The pick the request names, when it exists.
    pub pick: Option<PickFact>,
}

/// What a rewrite or an attach needs: the post (none when not in the workspace), the cast
/// when characters are named, the items named. The default is a post not found.
#[derive(Debug, Clone, Default)]
pub struct ChangeFacts {
    pub post: Option<PostFact>,
    pub cast: Vec<CastMember>,
    pub uploads: Vec<ItemFact>,
    pub library: Vec<ItemFact>,
}

/// An entry of a post's history ("review events").
#[derive(Debug, Clone, PartialEq)]
pub enum Event {
    /// Saved as a draft, submitted to review, or stocked (`reason`: the account's state), with
    /// the media the call added.
    Landed {
        status: PostStatus,
        reason: Option<String>,
        media: Vec<Uuid>,
    },
    /// The same body sent again: the original answered, with the media the resend added.
    ResubmittedDuplicate {
        media: Vec<Uuid>,
    },
    CharactersSet(Vec<Character>),
    /// A rewrite a person asked for, from the status it was asked in.
    RewriteAnswered {
        from: PostStatus,
    },
    /// A draft's body changed.
    Rewritten,
    /// Items attached after the submit (`POST /drafts/{id}/images` or `/media`).
    Attached {
        uploads: bool,
        media: Vec<Uuid>,
    },
    /// A note for the reviewers.
    Note(String),
}

impl Event {
    /// The stored action.
    pub fn action(&self) -> &'static str {
        match self {
            Event::Landed { status, .. } => match status {
                PostStatus::Draft => "saved_draft",
                PostStatus::Stocked => "stocked",
                _ => "submitted",
            },
            Event::ResubmittedDuplicate { .. } => "resubmitted_duplicate",
            Event::CharactersSet(_) => "characters_set",
            Event::RewriteAnswered { .. } => "rewrite_answered",
            Event::Rewritten => "rewritten",
            Event::Attached { uploads: true, .. } => "images_attached",
            Event::Attached { uploads: false, .. } => "media_attached",
            Event::Note(_) => "added note",
        }
    }

    /// The stored reason: why a post was stocked, or the note.
    pub fn reason(&self) -> Option<&str> {
        match self {
            Event::Landed { reason, .. } => reason.as_deref(),
            Event::Note(note) => Some(note),
            _ => None,
        }
    }

    /// The stored detail, which the service keeps for the record and never reads.
    pub fn detail(&self) -> Value {
        match self {
            Event::Landed { media, .. }
            | Event::ResubmittedDuplicate { media }
            | Event::Attached { media, .. } => json!({ "media": media }),
            Event::CharactersSet(characters) => json!(characters),
            Event::RewriteAnswered { from } => json!({ "from": from }),
            Event::Rewritten | Event::Note(_) => json!({}),
        }
    }
}

/// Why a submit was stocked instead of going to review.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Stocked {
    /// The account's state, as the post's history and answer say it.
    pub reason: String,
    /// Where the post goes back to once the account is active again.
    pub from: PostStatus,
}

/// A new post: its row, its media in order, the pick it drafts and its history. The answer is
/// `view` with the id the insert gave and the account's stock counted after it.
#[derive(Debug, Clone)]
pub struct NewPost {
    pub account: AccountFact,
    pub status: PostStatus,
    pub body_key: String,
    pub planned_at: Option<Timestamp>,
    pub characters: Vec<Character>,
    pub sponsored: bool,
    pub stocked: Option<Stocked>,
    pub media: Vec<MediaRef>,
    /// The pick drafted by the post, which becomes sponsored.
    pub pick: Option<Uuid>,
    pub events: Vec<Event>,
    /// The agent's note for the reviewers (in `events` too), told with the submit.
    pub note: Option<String>,
    pub view: DraftView,
}

impl NewPost {
    /// The rest of the post once its row is inserted as `id`: its media appended, its pick
    /// linked, its history recorded and its submit told ([`landed_event`]), as a change to it;
    /// it answers `view` with its id.
    pub fn inserted(self, id: Uuid) -> PostChange {
        let subject = PostSubject {
            workspace_id: self.account.workspace_id,
            agent_id: self.account.persona_agent,
            id,
            code: &self.account.slot.code,
            platform: self.account.slot.platform,
        };
        let told = landed_event(subject, None, self.status, self.note.as_deref(), None);
        PostChange {
            post_id: id,
            slot_id: self.account.slot.slot_id,
            rewrite: None,
            characters: None,
            added: self.media,
            pick: self.pick,
            events: self.events,
            told,
            view: DraftView { id, ..self.view },
        }
    }
}

/// What a draft landing in `to` tells, to the agent of its persona: `post.submitted` when it
/// reached internal review (from `from`, none for a new post, with the agent's `note`);
/// `post.moved` when a post that was a draft is stocked instead (with why, `stocked`). Nothing
/// for a draft saved, nor for a new post stocked at once: it never was anywhere else, and
/// reaches review only once it is unstocked.
pub fn landed_event(
    subject: PostSubject,
    from: Option<PostStatus>,
    to: PostStatus,
    note: Option<&str>,
    stocked: Option<&str>,
) -> Option<NewEvent> {
    match (from, to) {
        (_, PostStatus::InternalReview) => {
            Some(subject.event(EventBody::PostSubmitted, (from, to), note))
        }
        (Some(_), PostStatus::Stocked) => {
            Some(subject.event(EventBody::PostMoved, (from, to), stocked))
        }
        _ => None,
    }
}

/// A rewrite's new columns (`PUT /drafts/{id}`).
#[derive(Debug, Clone, PartialEq)]
pub struct Rewrite {
    pub body: String,
    pub body_key: String,
    pub topic: Option<String>,
    pub status: PostStatus,
    /// Still waiting for a rewrite: the body did not change.
    pub awaiting_rewrite: bool,
    pub rewrite_answered: bool,
    /// The account's state when this rewrite stocked the post.
    pub stock_reason: Option<String>,
}

/// A change to a post that exists. The answer is `view` with the account's stock counted
/// after it.
#[derive(Debug, Clone, PartialEq)]
pub struct PostChange {
    pub post_id: Uuid,
    pub slot_id: Uuid,
    pub rewrite: Option<Rewrite>,
    /// Characters that replace the post's.
    pub characters: Option<Vec<Character>>,
    /// Media appended after the post's.
    pub added: Vec<MediaRef>,
    /// The pick drafted by the post, which becomes sponsored.
    pub pick: Option<Uuid>,
    /// The post's history entries.
    pub events: Vec<Event>,
    /// What the change tells the event log ([`landed_event`]); none for a resend, an attach.
    pub told: Option<NewEvent>,
    pub view: DraftView,
}

/// What a submit does.
#[derive(Debug, Clone)]
pub enum SubmitPlan {
    New(Box<NewPost>),
    /// The same body again for a post not yet published: the original answers, and what the
    /// resend adds (media, characters, note) is applied to it.
    Resend(Box<PostChange>),
}

/// The account of a submit among those its code may name.
pub fn choose_account(
    candidates: Vec<AccountFact>,
    draft: &NewDraft,
) -> Result<AccountFact, DraftRefusal> {
    choose(
        candidates,
        draft.code.code.as_str(),
        draft.code.platform,
        |a| &a.slot,
    )
    .map_err(DraftRefusal::Account)
}

/// `POST /drafts`. Checked in this order: the planned time, the characters, the uploads then
/// the library items, the pick, then the per-post caps on the post the media go on.
pub fn plan_submit(draft: &NewDraft, facts: SubmitFacts) -> Result<SubmitPlan, DraftRefusal> {
    let SubmitFacts {
        account,
        cast,
        uploads,
        library,
        inline,
        duplicate,
        pick,
    } = facts;
    let planned_at = draft
        .planned_at
        .map(|t| t.resolve(&account.zone))
        .transpose()
        .map_err(DraftRefusal::PlannedAt)?;
    let characters = picked_characters(draft.content.characters.as_deref(), &cast)?;
    let named = resolve_items(
        account.project_id,
        (&draft.content.upload_ids, &uploads),
        (&draft.content.media_ids, &library),
    )?;
    let incoming: Vec<MediaRef> = inline.into_iter().chain(named).collect();

    // The pick is judged against the post a resend found: the one that drafted it already.
    let link = match (draft.pick, &pick) {
        (None, _) => None,
        (Some(number), None) => return Err(DraftRefusal::Pick(PickProblem::Unknown(number))),
        (Some(_), Some(p)) => judge_draft(
            &p.state,
            account.slot.slot_id,
            duplicate.as_ref().map(|d| d.id),
        )
        .map_err(DraftRefusal::Pick)?
        .then_some(p.id),
    };

    if let Some(original) = duplicate {
        if link.is_some()
            && let Some(other) = pick.and_then(|p| p.other_on_duplicate)
        {
            return Err(DraftRefusal::Pick(PickProblem::PostHasPick {
                post_id: original.id,
                other,
            }));
        }
        return plan_resend(draft, original, characters, &incoming, link)
            .map(|change| SubmitPlan::Resend(Box::new(change)));
    }

    let platform = account.slot.platform;
    let media = plan_media(platform, &[], &incoming).map_err(DraftRefusal::Caps)?;
    let active = account.state == Some(AccountState::Active);
    let status = landing_status(draft.submit, active);
    let stocked = (status == PostStatus::Stocked).then(|| Stocked {
        reason: stock_reason(&account.slot.code, account.state),
        // A stocked submission goes back where it would have landed on an active account.
        from: landing_status(draft.submit, true),
    });
    let reason = stocked.as_ref().map(|s| s.reason.clone());
    let characters = characters.unwrap_or_default();
    let mut events = vec![Event::Landed {
        status,
        reason: reason.clone(),
        media: ids(&media),
    }];
    events.extend(draft.content.note.clone().map(Event::Note));
    let (images, videos) = counts(&media);
    let view = DraftView {
        id: Uuid::nil(),
        status,
        code: account.slot.code.clone(),
        platform,
        planned_at,
        images,
        videos,
        duplicate: false,
        characters: characters.clone(),
        rewrite_answered: false,
        stocked_because: stocked.is_some().then_some(reason),
        inventory: 0,
    };
    Ok(SubmitPlan::New(Box::new(NewPost {
        status,
        body_key: body_key(&draft.body),
        planned_at,
        characters,
        sponsored: draft.sponsored || link.is_some(),
        stocked,
        media,
        pick: link,
        events,
        note: draft.content.note.clone(),
        view,
        account,
    })))
}

/// A resend of an unpublished post's body: its media grow by what the resend brings (closed
/// once the post left internal review), its characters are replaced when named.
fn plan_resend(
    draft: &NewDraft,
    post: PostFact,
    characters: Option<Vec<Character>>,
    incoming: &[MediaRef],
    pick: Option<Uuid>,
) -> Result<PostChange, DraftRefusal> {
    let added = plan_media(post.platform, &post.media, incoming).map_err(DraftRefusal::Caps)?;
    if !added.is_empty() && !post.status.takes_media() {
        return Err(DraftRefusal::MediaClosed(post.status));
    }
    let mut events = vec![Event::ResubmittedDuplicate { media: ids(&added) }];
    events.extend(characters.clone().map(Event::CharactersSet));
    events.extend(draft.content.note.clone().map(Event::Note));
    let view = DraftView {
        duplicate: true,
        ..answer(&post, post.status, &added, characters.as_ref())
    };
    Ok(PostChange {
        post_id: post.id,
        slot_id: post.slot_id,
        rewrite: None,
        characters,
        added,
        pick,
        events,
        told: None,
        view,
    })
}

/// The post a change names: not in the workspace is 404, another agent's 403.
fn own_post(post: Option<PostFact>) -> Result<PostFact, DraftRefusal> {
    match post {
        None => Err(DraftRefusal::PostNotFound),
        Some(p) if !p.mine => Err(DraftRefusal::PostNotYours),
        Some(p) => Ok(p),
    }
}

/// `PUT /drafts/{id}`: only a draft is rewritten; a rewrite that repeats the body sent back
/// is refused; submitting lands it as a new submit would.
pub fn plan_rewrite(edit: &DraftEdit, facts: ChangeFacts) -> Result<PostChange, DraftRefusal> {
    let post = own_post(facts.post)?;
    if !post.status.is_draft() {
        return Err(DraftRefusal::NotEditable(post.status));
    }
    if post.awaiting_rewrite && post.returned_body.as_deref() == Some(edit.body.as_str()) {
        return Err(DraftRefusal::SameAsReturned);
    }
    let characters = picked_characters(edit.content.characters.as_deref(), &facts.cast)?;
    let named = resolve_items(
        post.project_id,
        (&edit.content.upload_ids, &facts.uploads),
        (&edit.content.media_ids, &facts.library),
    )?;
    let added = plan_media(post.platform, &post.media, &named).map_err(DraftRefusal::Caps)?;

    let changed = edit.body != post.body;
    let answered = post.awaiting_rewrite && changed;
    let rewrite_answered = post.rewrite_answered || answered;
    let status = landing_status(edit.submit, post.state == Some(AccountState::Active));
    let reason = (status == PostStatus::Stocked).then(|| stock_reason(&post.code, post.state));
    let mut events = Vec::new();
    if answered {
        events.push(Event::RewriteAnswered { from: post.status });
    } else if changed {
        events.push(Event::Rewritten);
    }
    events.push(Event::Landed {
        status,
        reason: reason.clone(),
        media: ids(&added),
    });
    events.extend(characters.clone().map(Event::CharactersSet));
    events.extend(edit.content.note.clone().map(Event::Note));
    let view = DraftView {
        rewrite_answered,
        stocked_because: (status == PostStatus::Stocked).then(|| reason.clone()),
        ..answer(&post, status, &added, characters.as_ref())
    };
    let subject = PostSubject {
        workspace_id: post.workspace_id,
        agent_id: post.persona_agent,
        id: post.id,
        code: &post.code,
        platform: post.platform,
    };
    let told = landed_event(
        subject,
        Some(post.status),
        status,
        edit.content.note.as_deref(),
        reason.as_deref(),
    );
    Ok(PostChange {
        post_id: post.id,
        slot_id: post.slot_id,
        rewrite: Some(Rewrite {
            body: edit.body.clone(),
            body_key: body_key(&edit.body),
            topic: edit.topic.clone(),
            status,
            awaiting_rewrite: post.awaiting_rewrite && !changed,
            rewrite_answered,
            stock_reason: reason,
        }),
        characters,
        added,
        pick: None,
        events,
        told,
        view,
    })
}

/// `POST /drafts/{id}/images` and `/media`: items appended while the post still takes media
/// (a draft, or in internal review).
pub fn plan_attach(
    items: &Attach,
    note: Option<&str>,
    facts: ChangeFacts,
) -> Result<PostChange, DraftRefusal> {
    let post = own_post(facts.post)?;
    if !post.status.takes_media() {
        return Err(DraftRefusal::MediaClosed(post.status));
    }
    let (uploads, library) = items.ids();
    let named = resolve_items(
        post.project_id,
        (uploads, &facts.uploads),
        (library, &facts.library),
    )?;
    let added = plan_media(post.platform, &post.media, &named).map_err(DraftRefusal::Caps)?;
    let mut events = vec![Event::Attached {
        uploads: matches!(items, Attach::Uploads(_)),
        media: ids(&added),
    }];
    events.extend(note.map(|n| Event::Note(n.to_owned())));
    Ok(PostChange {
        post_id: post.id,
        slot_id: post.slot_id,
        rewrite: None,
        characters: None,
        view: answer(&post, post.status, &added, None),
        added,
        pick: None,
        events,
        told: None,
    })
}

/// `POST /drafts/{id}/notes`: a note on the agent's own post.
pub fn plan_note(post: Option<PostFact>, note: &str) -> Result<(Uuid, Event), DraftRefusal> {
    own_post(post).map(|p| (p.id, Event::Note(note.to_owned())))
}

/// The request's inline images as the library holds them, in order: each the item `entered`
/// lists for its file (`(id, sha256)`). `Err` names the first file not there.
pub fn inline_refs<'a>(
    images: &'a [StoredImage],
    entered: &[(Uuid, String)],
) -> Result<Vec<MediaRef>, &'a str> {
    images
        .iter()
        .map(|i| {
            entered
                .iter()
                .find(|(_, sha256)| *sha256 == i.sha256)
                .map(|(id, _)| MediaRef {
                    id: *id,
                    kind: MediaKind::Image,
                })
                .ok_or(i.sha256.as_str())
        })
        .collect()
}

/// What a post answers after a change: its media with `added`, its characters or `set`.
fn answer(
    post: &PostFact,
    status: PostStatus,
    added: &[MediaRef],
    set: Option<&Vec<Character>>,
) -> DraftView {
    let all: Vec<MediaRef> = post.media.iter().chain(added).copied().collect();
    let (images, videos) = counts(&all);
    DraftView {
        id: post.id,
        status,
        code: post.code.clone(),
        platform: post.platform,
        planned_at: post.planned_at,
        images,
        videos,
        duplicate: false,
        characters: set.cloned().unwrap_or_else(|| post.characters.clone()),
        rewrite_answered: post.rewrite_answered,
        stocked_because: None,
        inventory: 0,
    }
}

/// The characters a request sets, checked against the cast: `None` leaves them as they are,
/// an empty list clears them.
fn picked_characters(
    picks: Option<&[CharacterPick]>,
    cast: &[CastMember],
) -> Result<Option<Vec<Character>>, DraftRefusal> {
    match picks {
        None => Ok(None),
        Some([]) => Ok(Some(Vec::new())),
        Some(picks) => check_characters(picks, cast)
            .map(Some)
            .map_err(|(i, e)| DraftRefusal::Character(i, e)),
    }
}

/// The items a request names for a post of `project_id`: uploads first, then library items,
/// each list in its order; the first that cannot go on the post refuses the whole request.
pub fn resolve_items(
    project_id: Uuid,
    uploads: (&[Uuid], &[ItemFact]),
    library: (&[Uuid], &[ItemFact]),
) -> Result<Vec<MediaRef>, DraftRefusal> {
    let mut out = Vec::with_capacity(uploads.0.len() + library.0.len());
    for (field, (ids, found)) in [("upload_ids", uploads), ("media_ids", library)] {
        for (index, id) in ids.iter().enumerate() {
            let refuse = |problem| DraftRefusal::Item {
                field,
                index,
                id: *id,
                problem,
            };
            let item = found
                .iter()
                .find(|f| f.id == *id)
                .ok_or(refuse(ItemProblem::Unknown))?;
            let media = item.media.ok_or(refuse(ItemProblem::NotFinished))?;
            if item.archived {
                return Err(refuse(ItemProblem::Archived));
            }
            if item.project_id.is_some_and(|p| p != project_id) {
                return Err(refuse(ItemProblem::OtherProject));
            }
            out.push(media);
        }
    }
    Ok(out)
}

/// What the account's state says about a stocked post.
fn stock_reason(code: &str, state: Option<AccountState>) -> String {
    match state {
        Some(s) => format!("account {code} is {}, not active", s.as_str()),
        None => format!("account {code} has no live account"),
    }
}

fn ids(media: &[MediaRef]) -> Vec<Uuid> {
    media.iter().map(|m| m.id).collect()
}

/// Images and videos among `media`.
fn counts(media: &[MediaRef]) -> (i64, i64) {
    let images = media.iter().filter(|m| m.kind == MediaKind::Image).count() as i64;
    (images, media.len() as i64 - images)
}

#[cfg(test)]
mod tests;
