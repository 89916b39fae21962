//! The rules of a person's move on a decision and of an agent's report that a follow-up is
//! done: which move is allowed on which kind and status, what it does, and when a move resent
//! changes nothing. Pure functions: the adapter loads the decision, asks here, and applies the
//! plan in the same transaction.

use crate::{DecisionKind, DecisionStatus};
use fleetdesk_tasks::TaskStatus;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use uuid::Uuid;

/// The option of a `persona_images` choice that approves some images and refuses the rest.
pub const APPROVE_SOME: &str = "approve_some";
/// The options of an `account_banned` decision.
pub const OPEN_NEW_GENERATION: &str = "open_new_generation";
pub const KEEP_CLOSED: &str = "keep_closed";
/// The options of a `contradiction` decision.
pub const CHANGE_BIO: &str = "change_bio";
pub const DELETE_POST: &str = "delete_post";
pub const KEEP: &str = "keep";

/// A person's move.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[cfg_attr(feature = "openapi", schema(as = DecisionAction))]
#[serde(rename_all = "snake_case")]
pub enum Action {
    Resolve,
    Dismiss,
    Choose,
}

impl Action {
    pub fn as_str(self) -> &'static str {
        match self {
            Action::Resolve => "resolve",
            Action::Dismiss => "dismiss",
            Action::Choose => "choose",
        }
    }
}

/// A move as a person makes it (directly or through an agent's relay). Stored with the
/// decision, so that the same move resent is recognised.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Move {
    pub action: Action,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub option: Option<String>,
    /// With `approve_some` on `persona_images`: the images approved (kept sorted).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub image_ids: Option<Vec<Uuid>>,
    /// On `persona_images`: the approved avatar image to use as the new avatar.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub set_avatar: Option<Uuid>,
}

impl Move {
    /// The event of this move deciding decision `id` (of `kind`, titled `title`) into
    /// `status`: told to the agent of the decision's persona (`persona_agent`), else to the
    /// agent that opened it.
    pub fn decided_event(
        &self,
        id: Uuid,
        workspace: Uuid,
        (kind, title): (crate::DecisionKind, &str),
        status: crate::DecisionStatus,
        (persona_agent, opened_by_agent): (Option<Uuid>, Option<Uuid>),
    ) -> fleetdesk_kernel::events::NewEvent {
        fleetdesk_kernel::decision::decision_event(
            workspace,
            persona_agent.or(opened_by_agent),
            id,
            fleetdesk_kernel::events::EventBody::DecisionDecided,
            fleetdesk_kernel::events::DecisionChange {
                kind,
                title: title.to_owned(),
                status,
                choice: self.option.clone(),
            },
        )
    }

    pub fn new(
        action: Action,
        option: Option<String>,
        image_ids: Option<Vec<Uuid>>,
        set_avatar: Option<Uuid>,
    ) -> Move {
        let image_ids = image_ids.map(|mut ids| {
            ids.sort();
            ids.dedup();
            ids
        });
        Move {
            action,
            option,
            image_ids,
            set_avatar,
        }
    }

    pub fn to_json(&self) -> Value {
        serde_json::to_value(self).expect("a move is plain JSON")
    }
}

/// An image gathered by a `persona_images` decision.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ImageRef {
    pub id: Uuid,
    pub category: String,
}

/// The decision as the rules need it.
#[derive(Debug, Clone, PartialEq)]
pub struct Current {
    pub kind: DecisionKind,
    pub status: DecisionStatus,
    pub options: Vec<String>,
    /// The move that decided it, when it is decided.
    pub decided_move: Option<Value>,
    /// The post a contradiction is about.
    pub post_id: Option<Uuid>,
    /// The images of a `persona_images` decision.
    pub images: Vec<ImageRef>,
    /// A follow-up's task card status, when it has a card.
    pub card: Option<TaskStatus>,
    /// The move is relayed by the agent the follow-up's card is assigned to.
    pub relayed_by_assignee: bool,
    /// The move is relayed by an agent (not a person's own key).
    pub relayed: bool,
}

/// What a move does besides deciding the decision.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Effect {
    Nothing,
    /// The banned generation closes (replaced) and the next opens in warming.
    OpenGeneration,
    ConfirmPersona,
    /// Hidden from agents, its name free again.
    RetirePersona,
    /// The draft fact becomes decided (one decided of the same category and label is replaced).
    DecideFact,
    RefuseFact,
    /// A follow-up of this kind opens, with its task card.
    OpenFollowUp {
        kind: DecisionKind,
    },
    /// Images approved and refused; with `avatar`, a change_avatar follow-up opens for it.
    Images {
        approved: Vec<Uuid>,
        refused: Vec<Uuid>,
        avatar: Option<Uuid>,
    },
    /// A follow-up decided by a person: its card ends in this status (only from
    /// [`card_moves_from`]).
    FinishCard(TaskStatus),
    /// A `wiki_draft` resolved: the draft version becomes canon and the entry shows it.
    CanonizeWiki,
    /// A `wiki_draft` dismissed: the draft version is rejected (an entry without a canon
    /// version becomes rejected; one with it keeps showing it).
    RejectWiki,
    /// An `ad_change` resolved: the proposal is approved (if the monthly cap allows) and its
    /// change queued, to be executed through the ad platform as the approving person.
    ApproveAdChange,
    /// An `ad_change` dismissed: the proposal is refused; nothing reaches the platform.
    RefuseAdChange,
}

/// What the adapter does.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Plan {
    /// The same move was already made: nothing is written.
    Unchanged,
    Apply {
        status: DecisionStatus,
        effect: Effect,
    },
}

/// Why a move or a report is refused (422 unless said otherwise).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DecisionRefusal {
    /// 404: not found, or another organization's or agent's.
    #[error("no such decision")]
    NotFound,
    #[error("the decision is already {0}; only the same move resent is accepted")]
    AlreadyDecided(DecisionStatus),
    #[error("a {0} decision asks a question: choose one of its options instead")]
    AsksQuestion(DecisionKind),
    #[error("a {0} decision has no options: resolve or dismiss it")]
    NoOptions(DecisionKind),
    #[error("option {option} is not one of the decision's options ({})", options.join(", "))]
    UnknownOption {
        option: String,
        options: Vec<String>,
    },
    #[error("option is given only with choose")]
    OptionWithoutChoose,
    #[error("image_ids are given only with choose approve_some on a persona_images decision")]
    ImageIdsNotExpected,
    #[error("approve_some needs image_ids")]
    ImageIdsMissing,
    #[error("image {0} is not one of this decision's images")]
    UnknownImage(Uuid),
    #[error("set_avatar is given only when resolving or choosing on a persona_images decision")]
    SetAvatarNotExpected,
    #[error("set_avatar {0} is not an image of category avatar approved by this move")]
    AvatarNotApproved(Uuid),
    #[error("the contradiction names no post to delete")]
    NoPost,
    #[error(
        "an ad change spends money: a person approves it in the service with their own key (decide_issue), never through an agent's relay"
    )]
    ApprovedInPerson,
    /// An `ad_change` that cannot be approved: the reason (its 7 days passed, the monthly cap).
    #[error("{0}")]
    AdChangeRefused(fleetdesk_ads::change::ApprovalRefusal),
    #[error("the account is no longer in the banned generation this decision is about")]
    GenerationGone,
    /// A `wiki_draft` whose version no longer waits, or whose entry is gone: the reason
    /// (`fleetdesk_wiki::entry::DraftRefusal`).
    #[error("{0}")]
    WikiDraftGone(fleetdesk_wiki::entry::DraftRefusal),
    #[error(
        "only follow-ups (change_avatar, change_bio, delete_post) are completed by an agent; this is {0}"
    )]
    NotFollowUp(DecisionKind),
    #[error("the follow-up was already reported done with another result")]
    OtherResult,
    #[error(
        "the agent has not reported this follow-up done yet: resolve confirms a handled follow-up; dismiss it to cancel"
    )]
    NotReportedYet,
    #[error(
        "an agent never relays the confirmation of a card assigned to itself: a person confirms it, directly or through another agent's relay"
    )]
    OwnCard,
    #[error("the follow-up's task card is {0}; it cannot become {1}")]
    CardIs(TaskStatus, TaskStatus),
    /// An evidence asset that is not a media library item of the card's workspace.
    #[error("evidence asset {0} is not a media library item of this workspace")]
    UnknownAsset(Uuid),
}

/// Where a decision stands for who may see it: its organization and workspace, its kind, the
/// agent of the persona it is about (`Some(None)`: a persona no agent runs; `None`: it is about
/// no persona), and the agent that opened it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Whereabouts {
    pub organization_id: Uuid,
    pub workspace_id: Uuid,
    pub kind: DecisionKind,
    pub persona_agent: Option<Option<Uuid>>,
    pub opened_by_agent: Option<Uuid>,
}

impl crate::ports::DecisionScope {
    /// Whether this scope sees a decision: a platform admin outside any organization sees
    /// every one, a member those of the organization, an agent those of its workspace about a
    /// persona it runs, or about none when it opened one of a kind its opener sees.
    pub fn sees(self, d: &Whereabouts) -> bool {
        use crate::ports::DecisionScope as S;
        match self {
            S::Organization(None) => true,
            S::Organization(Some(org)) => d.organization_id == org,
            S::Agent(agent) => {
                d.workspace_id == agent.workspace_id
                    && match d.persona_agent {
                        Some(runs) => runs == Some(agent.agent_id),
                        None => {
                            d.kind.seen_by_its_opener() && d.opened_by_agent == Some(agent.agent_id)
                        }
                    }
            }
        }
    }

    /// Whether this scope relays a move as the agent the follow-up's card is assigned to
    /// (`assignee`, none without a card): only an agent relays.
    pub fn relays_as_assignee(self, assignee: Option<Uuid>) -> bool {
        matches!(self, crate::ports::DecisionScope::Agent(a) if assignee == Some(a.agent_id))
    }
}

/// The rules of deciding that depend on a decision's kind (the kind itself is the kernel's
/// vocabulary, [`DecisionKind`]).
pub trait KindRules: Copy {
    /// The kinds a person's choice opens for an agent to carry out.
    fn is_follow_up(self) -> bool;
    /// The options a choice may name: those of the decision, or `approve_some` on images.
    fn choices(self, stored: &[String]) -> Vec<String>;
    /// Whether an agent reaches a decision of this kind about no persona because it opened
    /// it: its ad proposals' `ad_change` decisions (to relay a dismiss; a resolve is the
    /// person's own). Other decisions an agent reaches only through its personas.
    fn seen_by_its_opener(self) -> bool;
    /// The card kind of a follow-up.
    fn task_kind(self) -> Option<fleetdesk_tasks::TaskKind>;
}

/// The follow-up kinds ([`KindRules::is_follow_up`]) as stored, for SQL
/// (`kind = ANY($n)`).
pub fn follow_up_kinds() -> Vec<&'static str> {
    DecisionKind::texts(KindRules::is_follow_up)
}

impl KindRules for DecisionKind {
    fn is_follow_up(self) -> bool {
        matches!(
            self,
            DecisionKind::ChangeAvatar | DecisionKind::ChangeBio | DecisionKind::DeletePost
        )
    }

    fn choices(self, stored: &[String]) -> Vec<String> {
        match self {
            DecisionKind::PersonaImages => vec![APPROVE_SOME.to_owned()],
            _ => stored.to_vec(),
        }
    }

    fn seen_by_its_opener(self) -> bool {
        self == DecisionKind::AdChange
    }

    fn task_kind(self) -> Option<fleetdesk_tasks::TaskKind> {
        use fleetdesk_tasks::TaskKind;
        match self {
            DecisionKind::ChangeAvatar => Some(TaskKind::ChangeAvatar),
            DecisionKind::ChangeBio => Some(TaskKind::ChangeBio),
            DecisionKind::DeletePost => Some(TaskKind::DeletePost),
            _ => None,
        }
    }
}

/// The name the service decides and writes notes under.
pub const SERVICE_NAME: &str = "fleetdesk";

/// A decision the service itself closes (an ad proposal that expired, a wiki draft a newer
/// one superseded): dismissed, by the service, from one of `from`, with a note saying why.
#[derive(Debug, Clone, PartialEq)]
pub struct ServiceDismissal {
    pub from: &'static [DecisionStatus],
    pub status: DecisionStatus,
    pub decided_by: fleetdesk_kernel::decision::DecidedBy,
    /// What is appended to the decision's notes.
    pub notes: Value,
    pub at: jiff::Timestamp,
}

/// The service dismisses a decision still waiting for a person (`open` or `handled`) at `at`.
pub fn dismissed_by_service(note: &str, at: jiff::Timestamp) -> ServiceDismissal {
    ServiceDismissal {
        from: &[DecisionStatus::Open, DecisionStatus::Handled],
        status: DecisionStatus::Dismissed,
        decided_by: fleetdesk_kernel::decision::DecidedBy::Service {
            name: SERVICE_NAME.to_owned(),
        },
        notes: notes(SERVICE_NAME, note, at),
        at,
    }
}

/// A note as a decision's notes store it, to append: `[{by, text, at}]`.
pub fn notes(by: &str, text: &str, at: jiff::Timestamp) -> Value {
    serde_json::json!([{"by": by, "text": text, "at": fleetdesk_kernel::format_utc(at)}])
}

/// What `mv` does on `current`.
pub fn plan(current: &Current, mv: &Move) -> Result<Plan, DecisionRefusal> {
    use DecisionKind as K;
    if matches!(
        current.status,
        DecisionStatus::Resolved | DecisionStatus::Dismissed
    ) {
        let same = current
            .decided_move
            .as_ref()
            .and_then(|v| serde_json::from_value::<Move>(v.clone()).ok())
            .is_some_and(|m| &m == mv);
        return if same {
            Ok(Plan::Unchanged)
        } else {
            Err(DecisionRefusal::AlreadyDecided(current.status))
        };
    }
    if current.kind == K::AdChange && current.relayed && mv.action != Action::Dismiss {
        return Err(DecisionRefusal::ApprovedInPerson);
    }
    if mv.action != Action::Choose && mv.option.is_some() {
        return Err(DecisionRefusal::OptionWithoutChoose);
    }
    let images = current.kind == K::PersonaImages;
    if mv.image_ids.is_some() && !(images && mv.option.as_deref() == Some(APPROVE_SOME)) {
        return Err(DecisionRefusal::ImageIdsNotExpected);
    }
    if mv.set_avatar.is_some() && (!images || mv.action == Action::Dismiss) {
        return Err(DecisionRefusal::SetAvatarNotExpected);
    }
    let asks = !current.kind.choices(&current.options).is_empty() && !images;
    let status = match mv.action {
        Action::Resolve | Action::Choose => DecisionStatus::Resolved,
        Action::Dismiss => DecisionStatus::Dismissed,
    };
    let effect = match mv.action {
        Action::Resolve if asks => return Err(DecisionRefusal::AsksQuestion(current.kind)),
        Action::Choose => {
            let choices = current.kind.choices(&current.options);
            if choices.is_empty() {
                return Err(DecisionRefusal::NoOptions(current.kind));
            }
            let option = mv.option.clone().unwrap_or_default();
            if !choices.contains(&option) {
                return Err(DecisionRefusal::UnknownOption {
                    option,
                    options: choices,
                });
            }
            match (current.kind, option.as_str()) {
                (K::AccountBanned, OPEN_NEW_GENERATION) => Effect::OpenGeneration,
                (K::Contradiction, CHANGE_BIO) => Effect::OpenFollowUp { kind: K::ChangeBio },
                (K::Contradiction, DELETE_POST) => {
                    if current.post_id.is_none() {
                        return Err(DecisionRefusal::NoPost);
                    }
                    Effect::OpenFollowUp {
                        kind: K::DeletePost,
                    }
                }
                (K::PersonaImages, _) => {
                    let Some(ids) = &mv.image_ids else {
                        return Err(DecisionRefusal::ImageIdsMissing);
                    };
                    if let Some(id) = ids
                        .iter()
                        .find(|id| !current.images.iter().any(|i| i.id == **id))
                    {
                        return Err(DecisionRefusal::UnknownImage(*id));
                    }
                    images_effect(current, ids, mv.set_avatar)?
                }
                _ => Effect::Nothing,
            }
        }
        Action::Resolve if current.kind.is_follow_up() => {
            if current.status != DecisionStatus::Handled {
                return Err(DecisionRefusal::NotReportedYet);
            }
            if current.relayed_by_assignee {
                return Err(DecisionRefusal::OwnCard);
            }
            finish_card(current, TaskStatus::Done)?
        }
        Action::Dismiss if current.kind.is_follow_up() => {
            finish_card(current, TaskStatus::Cancelled)?
        }
        Action::Resolve => match current.kind {
            K::PersonaNew => Effect::ConfirmPersona,
            K::FactProposal => Effect::DecideFact,
            K::WikiDraft => Effect::CanonizeWiki,
            K::AdChange => Effect::ApproveAdChange,
            K::PersonaImages => {
                let all: Vec<Uuid> = current.images.iter().map(|i| i.id).collect();
                images_effect(current, &all, mv.set_avatar)?
            }
            _ => Effect::Nothing,
        },
        Action::Dismiss => match current.kind {
            K::PersonaNew => Effect::RetirePersona,
            K::FactProposal => Effect::RefuseFact,
            K::WikiDraft => Effect::RejectWiki,
            K::AdChange => Effect::RefuseAdChange,
            K::PersonaImages => images_effect(current, &[], None)?,
            _ => Effect::Nothing,
        },
    };
    Ok(Plan::Apply { status, effect })
}

/// The card statuses a person's move on a follow-up takes its card from to `to`: confirmed
/// (done) only from pending_confirmation; cancelled from any status not yet finished.
pub fn card_moves_from(to: TaskStatus) -> &'static [TaskStatus] {
    use TaskStatus as T;
    match to {
        T::Done => &[T::PendingConfirmation],
        T::Cancelled => &[T::PendingPickup, T::InProgress, T::PendingConfirmation],
        _ => &[],
    }
}

fn finish_card(current: &Current, to: TaskStatus) -> Result<Effect, DecisionRefusal> {
    match current.card {
        Some(card) if !card_moves_from(to).contains(&card) => {
            Err(DecisionRefusal::CardIs(card, to))
        }
        _ => Ok(Effect::FinishCard(to)),
    }
}

fn images_effect(
    current: &Current,
    approved: &[Uuid],
    avatar: Option<Uuid>,
) -> Result<Effect, DecisionRefusal> {
    if let Some(a) = avatar {
        let ok = approved.contains(&a)
            && current
                .images
                .iter()
                .any(|i| i.id == a && i.category == "avatar");
        if !ok {
            return Err(DecisionRefusal::AvatarNotApproved(a));
        }
    }
    Ok(Effect::Images {
        approved: approved.to_vec(),
        refused: current
            .images
            .iter()
            .map(|i| i.id)
            .filter(|id| !approved.contains(id))
            .collect(),
        avatar,
    })
}

/// What an agent's report that a follow-up is done does.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DonePlan {
    /// The same result resent.
    Unchanged,
    /// The decision becomes handled, its card pending_confirmation.
    Handle,
}

/// May the agent report this decision done with `result`? `stored` is the result already
/// reported, when the decision is handled.
pub fn plan_done(
    kind: DecisionKind,
    status: DecisionStatus,
    stored: Option<&str>,
    result: &str,
) -> Result<DonePlan, DecisionRefusal> {
    if !kind.is_follow_up() {
        return Err(DecisionRefusal::NotFollowUp(kind));
    }
    match status {
        DecisionStatus::Open => Ok(DonePlan::Handle),
        DecisionStatus::Handled if stored == Some(result) => Ok(DonePlan::Unchanged),
        DecisionStatus::Handled => Err(DecisionRefusal::OtherResult),
        // A person already confirmed it: the same result resent changes nothing.
        DecisionStatus::Resolved if stored == Some(result) => Ok(DonePlan::Unchanged),
        s => Err(DecisionRefusal::AlreadyDecided(s)),
    }
}

#[cfg(test)]
mod tests;
