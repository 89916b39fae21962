//! The persona rules, as pure functions: what a persona's fields must be, when it is
//! setup-complete, which project a new persona goes to, which facts and images an agent sees
//! and in what order, what a proposal is and when a resent one is the same, and how an
//! uploaded image joins the persona's images decision.

use fleetdesk_kernel::persona::{FactCategory, FactStatus, PersonaStatus};
use fleetdesk_kernel::project::ProjectMiss;
use jiff::Timestamp;
use serde::{Deserialize, Serialize};
use std::collections::HashMap;
use uuid::Uuid;

/// What a person's decision about a new persona writes on it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PersonaUpdate {
    pub persona_id: Uuid,
    pub status: PersonaStatus,
    /// Retired now: hidden from agents, its name free again, and unassigned from its agent,
    /// which drops it from every agent's reads at once (its creator stays recorded).
    pub retire: bool,
}

/// A new persona confirmed.
pub fn confirm_persona(persona_id: Uuid) -> PersonaUpdate {
    PersonaUpdate {
        persona_id,
        status: PersonaStatus::Confirmed,
        retire: false,
    }
}

/// A new persona refused: retired.
pub fn retire_persona(persona_id: Uuid) -> PersonaUpdate {
    PersonaUpdate {
        persona_id,
        status: PersonaStatus::Retired,
        retire: true,
    }
}

/// The draft fact a fact decision is about, as loaded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DraftFact {
    pub id: Uuid,
    pub persona_id: Uuid,
    pub category: String,
    pub label: String,
}

/// What deciding a draft fact writes: the persona's decided fact of the same category and
/// label (if any) becomes `replaced`, then the draft becomes `decided`. The persona is locked
/// first, so two facts of one label decided at once replace in turn.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FactDecision {
    pub fact: DraftFact,
    /// The status of the fact it replaces, and what that one becomes.
    pub replaces: FactStatus,
    pub replaced_as: FactStatus,
    pub decided_as: FactStatus,
}

/// A draft fact decided; nothing when the draft is no longer there.
pub fn decide_fact(draft: Option<DraftFact>) -> Option<FactDecision> {
    Some(FactDecision {
        fact: draft?,
        replaces: FactStatus::Decided,
        replaced_as: FactStatus::Replaced,
        decided_as: FactStatus::Decided,
    })
}

/// A refused fact proposal: its draft fact (`from`) becomes `to`.
pub const FACT_REFUSED: (FactStatus, FactStatus) = (FactStatus::Draft, FactStatus::Refused);

/// How long a persona image link stays valid (`images_expire_in_seconds`).
pub const IMAGE_LINK_SECONDS: i64 = 900;
/// Images listed per character of the cast.
pub const CAST_IMAGES: usize = 6;
/// Recent published posts in `get_persona`: default and maximum.
pub const RECENT_POSTS_DEFAULT: i64 = 10;
pub const RECENT_POSTS_MAX: i64 = 30;

fleetdesk_kernel::text_enum! {
    /// What a persona image shows.
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
    #[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
    #[serde(rename_all = "snake_case")]
    pub enum ImageCategory {
        Turnaround => "turnaround",
        Portrait => "portrait",
        Avatar => "avatar",
        Pet => "pet",
        Home => "home",
        Workplace => "workplace",
        Belongings => "belongings",
        PhotoStyle => "photo_style",
        Other => "other",
    }
}

fleetdesk_kernel::text_enum! {
    /// A persona image is a draft until a person approves (or refuses) it.
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
    #[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
    #[serde(rename_all = "snake_case")]
    pub enum ImageLock {
        Draft => "draft",
        Approved => "approved",
        Refused => "refused",
    }
}

fleetdesk_kernel::text_enum! {
    /// What an agent proposes: a fact (a draft fact a person decides) or a contradiction (a
    /// decision asking a person what should change).
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
    #[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
    #[serde(rename_all = "snake_case")]
    pub enum ProposalKind {
        Fact => "fact",
        Contradiction => "contradiction",
    }
}

/// Why a persona request is refused by a rule of the personas (the field it concerns is
/// [`PersonaRefusal::field`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum PersonaRefusal {
    #[error("must not be only spaces")]
    BlankName,
    #[error("is required: the workspace has several projects (or none); name one")]
    ProjectRequired,
    /// 404: no workspace of the organization has a project of that name.
    #[error("is not a project of your organization")]
    ProjectUnknown,
    /// 422: a project of another workspace of the organization (the specification's
    /// decision).
    #[error("is a project of another workspace, not of yours")]
    ProjectOfOtherWorkspace,
    #[error("a live persona of this name in this project belongs to another agent")]
    NameTaken,
    #[error("is required for a fact")]
    CategoryRequired,
    #[error("is only for a fact; a contradiction takes none")]
    CategoryNotAllowed,
    #[error("must not be only spaces")]
    BlankLabel,
    #[error("must not be only spaces")]
    BlankValue,
    #[error("is not a post of this workspace")]
    PostUnknown,
    #[error("is a post of another agent's persona")]
    PostNotYours,
    #[error("is a post of another of your personas, not of this one")]
    PostOfOtherPersona,
    #[error("is not a code of this persona's cast")]
    CharacterUnknown,
}

impl PersonaRefusal {
    /// The field the refusal names.
    pub fn field(self) -> &'static str {
        use PersonaRefusal::*;
        match self {
            BlankName | NameTaken => "name",
            ProjectRequired | ProjectUnknown | ProjectOfOtherWorkspace => "project",
            CategoryRequired | CategoryNotAllowed => "category",
            BlankLabel => "label",
            BlankValue => "value",
            PostUnknown | PostNotYours | PostOfOtherPersona => "post_id",
            CharacterUnknown => "character",
        }
    }

    /// A named project that is not one of the workspace's: another workspace's (422) or
    /// none of the organization's (404).
    pub fn project_miss(miss: ProjectMiss) -> PersonaRefusal {
        match miss {
            ProjectMiss::OtherWorkspace => PersonaRefusal::ProjectOfOtherWorkspace,
            ProjectMiss::Unknown => PersonaRefusal::ProjectUnknown,
        }
    }

    /// 404 rather than 422 (or 400).
    pub fn is_not_found(self) -> bool {
        matches!(
            self,
            PersonaRefusal::ProjectUnknown | PersonaRefusal::PostUnknown
        )
    }

    /// True for a bad input the description states (400); false for a rule that depends on
    /// what is stored (404 or 422): a schema-valid request is never answered 400.
    pub fn is_input(self) -> bool {
        use PersonaRefusal::*;
        matches!(
            self,
            BlankName | CategoryRequired | CategoryNotAllowed | BlankLabel | BlankValue
        )
    }
}

fn blank(s: &str) -> bool {
    s.trim().is_empty()
}

/// A text that holds more than white space, or nothing.
fn present(s: Option<&str>) -> Option<&str> {
    s.filter(|s| !blank(s))
}

/// A persona's own fields as an agent gives them (lengths are checked by the API's field
/// types).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct PersonaFields {
    pub name: String,
    pub track: Option<String>,
    pub background: Option<String>,
    pub bio: Option<String>,
    pub voice: Option<String>,
}

impl PersonaFields {
    /// The fields as stored and matched: the name trimmed (the tenant file stores names
    /// trimmed, so `"Mia "` is Mia), and it must name someone; the other fields are kept as
    /// given.
    pub fn checked(&self) -> Result<PersonaFields, PersonaRefusal> {
        let name = self.name.trim();
        if name.is_empty() {
            return Err(PersonaRefusal::BlankName);
        }
        Ok(PersonaFields {
            name: name.to_owned(),
            ..self.clone()
        })
    }

    pub fn setup_complete(&self) -> bool {
        setup_complete(self.bio.as_deref(), self.voice.as_deref())
    }
}

/// A persona is setup-complete only when both bio and voice are present (not only spaces).
pub fn setup_complete(bio: Option<&str>, voice: Option<&str>) -> bool {
    present(bio).is_some() && present(voice).is_some()
}

/// The project a new persona goes to: the one named (by name, trimmed like the tenant file
/// stores it, among the workspace's projects), or the workspace's only project when none is
/// named.
pub fn choose_project<'a>(
    named: Option<&str>,
    projects: &'a [(Uuid, String)],
) -> Result<&'a (Uuid, String), PersonaRefusal> {
    match named {
        Some(name) => projects
            .iter()
            .find(|(_, n)| n == name.trim())
            .ok_or(PersonaRefusal::ProjectUnknown),
        None => match projects {
            [only] => Ok(only),
            _ => Err(PersonaRefusal::ProjectRequired),
        },
    }
}

/// A fact as stored.
#[derive(Debug, Clone, PartialEq)]
pub struct Fact {
    pub id: Uuid,
    pub category: FactCategory,
    pub label: String,
    pub value: String,
    pub detail: Option<String>,
    pub status: FactStatus,
    pub post_id: Option<Uuid>,
    pub created_at: Timestamp,
}

impl Fact {
    pub fn by_decision(&self) -> bool {
        self.status == FactStatus::Decided
    }
}

/// The facts an agent sees, in order: facts by decision first, then (only with
/// `include_drafts`) draft facts; refused and replaced facts never. Within each group by
/// category, label, then oldest first.
pub fn visible_facts(mut facts: Vec<Fact>, include_drafts: bool) -> Vec<Fact> {
    facts.retain(|f| match f.status {
        FactStatus::Decided => true,
        FactStatus::Draft => include_drafts,
        FactStatus::Refused | FactStatus::Replaced => false,
    });
    facts.sort_by(|a, b| {
        (
            !a.by_decision(),
            a.category.as_str(),
            &a.label,
            a.created_at,
            a.id,
        )
            .cmp(&(
                !b.by_decision(),
                b.category.as_str(),
                &b.label,
                b.created_at,
                b.id,
            ))
    });
    facts
}

/// The speech rules an agent follows: the persona's own list, then the values of the facts by
/// decision of category speech (each once).
pub fn speech_rules(own: &[String], facts: &[Fact]) -> Vec<String> {
    let mut rules: Vec<String> = own.to_vec();
    for f in facts {
        if f.by_decision() && f.category == FactCategory::Speech && !rules.contains(&f.value) {
            rules.push(f.value.clone());
        }
    }
    rules
}

/// Only approved images are shown to agents; drafts wait for a person, refused ones never
/// show.
pub fn image_visible(lock: ImageLock) -> bool {
    lock == ImageLock::Approved
}

/// What a signed link serves: approved images, and draft images for the person deciding on
/// them (only the decision list signs a draft's link); a refused image is never served, so a
/// link made before the refusal stops working.
pub fn image_served(lock: ImageLock) -> bool {
    lock != ImageLock::Refused
}

/// What the adapter knows of the post a proposal names: its persona and that persona's agent.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PostOwner {
    pub persona_id: Uuid,
    /// The agent the post's persona is assigned to (none when unassigned).
    pub agent_id: Option<Uuid>,
}

/// A proposal's `post_id` must be a post of the persona proposed about. `post` is the post
/// found in the caller's workspace (none: unknown, or another workspace's or organization's:
/// 404); a post of another agent's persona is not the caller's (403); the caller's own post of
/// another of its personas is a rule (422).
pub fn check_post(
    post: Option<PostOwner>,
    persona_id: Uuid,
    caller: Uuid,
) -> Result<(), PersonaRefusal> {
    match post {
        None => Err(PersonaRefusal::PostUnknown),
        Some(p) if p.persona_id == persona_id => Ok(()),
        Some(p) if p.agent_id == Some(caller) => Err(PersonaRefusal::PostOfOtherPersona),
        Some(_) => Err(PersonaRefusal::PostNotYours),
    }
}

/// A character of the cast an uploaded image marks must be one of the persona's cast codes.
pub fn check_character(character: Option<&str>, cast: &[String]) -> Result<(), PersonaRefusal> {
    match character {
        Some(c) if !cast.iter().any(|k| k == c) => Err(PersonaRefusal::CharacterUnknown),
        _ => Ok(()),
    }
}

/// An image as far as the cast needs it.
pub trait CastImage {
    fn character(&self) -> Option<&str>;
    fn lock(&self) -> ImageLock;
}

/// Each character's images: approved images marked with its code, at most [`CAST_IMAGES`]
/// each, in the order given (the adapter lists oldest first).
pub fn cast_images<I: CastImage + Clone>(images: &[I]) -> HashMap<String, Vec<I>> {
    let mut by: HashMap<String, Vec<I>> = HashMap::new();
    for i in images {
        if !image_visible(i.lock()) {
            continue;
        }
        if let Some(c) = i.character() {
            let list = by.entry(c.to_owned()).or_default();
            if list.len() < CAST_IMAGES {
                list.push(i.clone());
            }
        }
    }
    by
}

/// What an agent proposes about a persona, checked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Proposal {
    pub kind: ProposalKind,
    /// Set for a fact, never for a contradiction.
    pub category: Option<FactCategory>,
    pub label: String,
    pub value: String,
    pub detail: Option<String>,
    pub post_id: Option<Uuid>,
}

impl Proposal {
    /// A fact needs a category; a contradiction takes none. Label and value must say
    /// something; they are stored and matched trimmed, so a proposal resent with spaces around
    /// them is the same proposal.
    pub fn new(
        kind: ProposalKind,
        category: Option<FactCategory>,
        label: String,
        value: String,
        detail: Option<String>,
        post_id: Option<Uuid>,
    ) -> Result<Proposal, PersonaRefusal> {
        match (kind, category) {
            (ProposalKind::Fact, None) => return Err(PersonaRefusal::CategoryRequired),
            (ProposalKind::Contradiction, Some(_)) => {
                return Err(PersonaRefusal::CategoryNotAllowed);
            }
            _ => {}
        }
        let (label, value) = (label.trim(), value.trim());
        if label.is_empty() {
            return Err(PersonaRefusal::BlankLabel);
        }
        if value.is_empty() {
            return Err(PersonaRefusal::BlankValue);
        }
        Ok(Proposal {
            kind,
            category,
            label: label.to_owned(),
            value: value.to_owned(),
            detail,
            post_id,
        })
    }

    /// A resent proposal is the same when its kind, category, label and value are (detail and
    /// post are the basis, not the proposal).
    pub fn same_as(
        &self,
        kind: ProposalKind,
        category: Option<FactCategory>,
        label: &str,
        value: &str,
    ) -> bool {
        self.kind == kind && self.category == category && self.label == label && self.value == value
    }

    /// The category a fact is filed and matched under: its own, else `other`.
    pub fn fact_category(&self) -> FactCategory {
        self.category.unwrap_or(FactCategory::Other)
    }

    /// The decision's title, as a person reads it in an inbox.
    pub fn title(&self, persona: &str) -> String {
        match self.kind {
            ProposalKind::Fact => format!("New fact about {persona} to decide: {}", self.label),
            ProposalKind::Contradiction => format!("Contradiction about {persona}: {}", self.label),
        }
    }
}

/// An earlier proposal of a persona that a resent one may match: a draft or decided fact
/// (refused and replaced ones do not hold a proposal back), or an open contradiction.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Earlier {
    pub kind: ProposalKind,
    pub category: Option<FactCategory>,
    pub label: String,
    pub value: String,
    /// Draft or decided for a fact; for a contradiction, whether its decision is still open.
    pub standing: bool,
}

/// The earlier proposal a resent one is (the first that matches and still stands).
pub fn matching_proposal<'a, E: AsRef<Earlier>>(
    proposal: &Proposal,
    earlier: &'a [E],
) -> Option<&'a E> {
    earlier.iter().find(|e| {
        let e = e.as_ref();
        e.standing && proposal.same_as(e.kind, e.category, &e.label, &e.value)
    })
}

impl AsRef<Earlier> for Earlier {
    fn as_ref(&self) -> &Earlier {
        self
    }
}

/// The title of the persona's images decision.
pub fn images_title(persona: &str) -> String {
    format!("Images of {persona} awaiting approval")
}

/// The title of a new persona's decision.
pub fn new_persona_title(name: &str) -> String {
    format!("New persona to confirm: {name}")
}

/// The question and options of a contradiction.
pub const CONTRADICTION_QUESTION: &str = "What should change?";
pub const CONTRADICTION_OPTIONS: [&str; 3] = ["change_bio", "delete_post", "keep"];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_fact_without_a_category_is_filed_under_other() {
        let fact = |category| Proposal {
            kind: ProposalKind::Fact,
            category,
            label: "city".into(),
            value: "Taipei".into(),
            detail: None,
            post_id: None,
        };
        assert_eq!(fact(None).fact_category(), FactCategory::Other);
        let own = fact(Some(FactCategory::Pet)).fact_category();
        assert_eq!(own, FactCategory::Pet);
    }

    fn fact(n: u128, category: FactCategory, label: &str, status: FactStatus, at: i64) -> Fact {
        Fact {
            id: Uuid::from_u128(n),
            category,
            label: label.into(),
            value: format!("v{n}"),
            detail: None,
            status,
            post_id: None,
            created_at: Timestamp::from_second(at).unwrap(),
        }
    }

    #[test]
    fn setup_complete_needs_bio_and_voice_that_say_something() {
        assert!(setup_complete(Some("b"), Some("v")));
        assert!(!setup_complete(Some("b"), None));
        assert!(!setup_complete(None, Some("v")));
        assert!(!setup_complete(Some("  "), Some("v")));
        assert!(!setup_complete(Some("b"), Some("\n\t")));
        let f = PersonaFields {
            name: "Ava".into(),
            bio: Some("b".into()),
            voice: Some("v".into()),
            ..Default::default()
        };
        assert!(f.setup_complete());
        assert_eq!(f.checked(), Ok(f.clone()));
        let blank = PersonaFields {
            name: "  ".into(),
            ..Default::default()
        };
        assert_eq!(blank.checked(), Err(PersonaRefusal::BlankName));
    }

    #[test]
    fn the_project_is_named_or_the_only_one() {
        let one = vec![(Uuid::from_u128(1), "beauty".to_owned())];
        let two = vec![
            (Uuid::from_u128(1), "beauty".to_owned()),
            (Uuid::from_u128(2), "food".to_owned()),
        ];
        assert_eq!(choose_project(None, &one).unwrap().0, Uuid::from_u128(1));
        assert_eq!(
            choose_project(None, &two),
            Err(PersonaRefusal::ProjectRequired)
        );
        assert_eq!(
            choose_project(None, &[]),
            Err(PersonaRefusal::ProjectRequired)
        );
        assert_eq!(
            choose_project(Some("food"), &two).unwrap().0,
            Uuid::from_u128(2)
        );
        assert_eq!(
            choose_project(Some("Food"), &two),
            Err(PersonaRefusal::ProjectUnknown)
        );
        assert_eq!(
            choose_project(Some("x"), &one),
            Err(PersonaRefusal::ProjectUnknown)
        );
        assert!(!PersonaRefusal::ProjectRequired.is_input());
        assert!(PersonaRefusal::CategoryRequired.is_input());
        assert!(!PersonaRefusal::ProjectUnknown.is_input());
    }

    #[test]
    fn a_named_project_of_no_workspace_is_404_and_of_another_422() {
        let unknown = PersonaRefusal::project_miss(ProjectMiss::Unknown);
        assert_eq!(unknown, PersonaRefusal::ProjectUnknown);
        assert!(unknown.is_not_found());
        let other = PersonaRefusal::project_miss(ProjectMiss::OtherWorkspace);
        assert_eq!(other, PersonaRefusal::ProjectOfOtherWorkspace);
        assert!(!other.is_not_found() && !other.is_input());
        assert_eq!(other.field(), "project");
    }

    #[test]
    fn facts_by_decision_first_drafts_only_when_asked_never_refused() {
        use FactCategory::*;
        use FactStatus::*;
        let all = vec![
            fact(1, Pet, "cat", Draft, 10),
            fact(2, Identity, "age", Decided, 20),
            fact(3, Home, "city", Refused, 5),
            fact(4, Home, "city", Replaced, 6),
            fact(5, Home, "city", Decided, 7),
            fact(6, Identity, "age", Draft, 1),
        ];
        let ids = |fs: Vec<Fact>| fs.iter().map(|f| f.id.as_u128()).collect::<Vec<_>>();
        assert_eq!(ids(visible_facts(all.clone(), false)), vec![5, 2]);
        assert_eq!(ids(visible_facts(all, true)), vec![5, 2, 6, 1]);
    }

    #[test]
    fn speech_rules_add_decided_speech_facts_once() {
        use FactCategory::*;
        use FactStatus::*;
        let mut said = fact(1, Speech, "tone", Decided, 1);
        said.value = "no slang".into();
        let mut dup = fact(2, Speech, "tone2", Decided, 2);
        dup.value = "short".into();
        let mut draft = fact(3, Speech, "tone3", Draft, 3);
        draft.value = "drafted".into();
        let mut other = fact(4, Pet, "cat", Decided, 4);
        other.value = "momo".into();
        let rules = speech_rules(&["short".to_owned()], &[said, dup, draft, other]);
        assert_eq!(rules, vec!["short".to_owned(), "no slang".to_owned()]);
    }

    #[derive(Clone, Debug, PartialEq)]
    struct Img(u8, Option<&'static str>, ImageLock);
    impl CastImage for Img {
        fn character(&self) -> Option<&str> {
            self.1
        }
        fn lock(&self) -> ImageLock {
            self.2
        }
    }

    #[test]
    fn cast_images_are_approved_marked_and_at_most_six() {
        let mut imgs: Vec<Img> = (0..8)
            .map(|n| Img(n, Some("momo"), ImageLock::Approved))
            .collect();
        imgs.push(Img(20, Some("lulu"), ImageLock::Draft));
        imgs.push(Img(21, Some("lulu"), ImageLock::Refused));
        imgs.push(Img(22, Some("lulu"), ImageLock::Approved));
        imgs.push(Img(23, None, ImageLock::Approved));
        let by = cast_images(&imgs);
        assert_eq!(by["momo"].len(), CAST_IMAGES);
        assert_eq!(by["momo"][0].0, 0);
        assert_eq!(by["lulu"], vec![Img(22, Some("lulu"), ImageLock::Approved)]);
        assert_eq!(by.len(), 2);
        assert!(!image_visible(ImageLock::Draft));
    }

    #[test]
    fn a_link_serves_approved_and_draft_images_never_refused_ones() {
        assert!(image_served(ImageLock::Approved));
        assert!(image_served(ImageLock::Draft));
        assert!(!image_served(ImageLock::Refused));
    }

    #[test]
    fn names_and_projects_are_trimmed() {
        let f = PersonaFields {
            name: " Mia ".into(),
            bio: Some(" b ".into()),
            ..Default::default()
        };
        let c = f.checked().unwrap();
        assert_eq!(c.name, "Mia");
        assert_eq!(c.bio.as_deref(), Some(" b "));
        let blank = PersonaFields {
            name: " \t".into(),
            ..Default::default()
        };
        assert_eq!(blank.checked(), Err(PersonaRefusal::BlankName));
        let projects = vec![(Uuid::from_u128(1), "beauty".to_owned())];
        assert_eq!(
            choose_project(Some(" beauty "), &projects),
            Ok(&projects[0])
        );
    }

    #[test]
    fn a_post_is_of_the_persona_else_unknown_not_yours_or_another_of_yours() {
        let (mia, leo, me, other) = (
            Uuid::from_u128(1),
            Uuid::from_u128(2),
            Uuid::from_u128(3),
            Uuid::from_u128(4),
        );
        let of = |persona_id, agent_id| {
            Some(PostOwner {
                persona_id,
                agent_id,
            })
        };
        assert_eq!(check_post(of(mia, Some(me)), mia, me), Ok(()));
        // The persona's own post even when the persona is someone else's (the lookup of
        // `{code}` already decided who may propose).
        assert_eq!(check_post(of(mia, Some(other)), mia, me), Ok(()));
        assert_eq!(check_post(None, mia, me), Err(PersonaRefusal::PostUnknown));
        assert_eq!(
            check_post(of(leo, Some(other)), mia, me),
            Err(PersonaRefusal::PostNotYours)
        );
        assert_eq!(
            check_post(of(leo, None), mia, me),
            Err(PersonaRefusal::PostNotYours)
        );
        assert_eq!(
            check_post(of(leo, Some(me)), mia, me),
            Err(PersonaRefusal::PostOfOtherPersona)
        );
    }

    #[test]
    fn a_character_must_be_of_the_cast() {
        let cast = vec!["momo".to_owned()];
        assert_eq!(check_character(None, &cast), Ok(()));
        assert_eq!(check_character(Some("momo"), &cast), Ok(()));
        assert_eq!(
            check_character(Some("Momo"), &cast),
            Err(PersonaRefusal::CharacterUnknown)
        );
    }

    #[test]
    fn proposals_need_a_category_only_for_facts() {
        use ProposalKind::*;
        let p = |k, c| Proposal::new(k, c, "l".into(), "v".into(), None, None);
        assert!(p(Fact, Some(FactCategory::Pet)).is_ok());
        assert_eq!(p(Fact, None), Err(PersonaRefusal::CategoryRequired));
        assert!(p(Contradiction, None).is_ok());
        assert_eq!(
            p(Contradiction, Some(FactCategory::Pet)),
            Err(PersonaRefusal::CategoryNotAllowed)
        );
        assert_eq!(
            Proposal::new(
                Fact,
                Some(FactCategory::Pet),
                " ".into(),
                "v".into(),
                None,
                None
            ),
            Err(PersonaRefusal::BlankLabel)
        );
        assert_eq!(
            Proposal::new(Contradiction, None, "l".into(), "\t".into(), None, None),
            Err(PersonaRefusal::BlankValue)
        );
        let spaced =
            Proposal::new(Contradiction, None, " l ".into(), "\tv ".into(), None, None).unwrap();
        assert_eq!((spaced.label.as_str(), spaced.value.as_str()), ("l", "v"));
    }

    #[test]
    fn a_resent_proposal_matches_a_standing_one_of_the_same_content() {
        use ProposalKind::*;
        let p = Proposal::new(
            Fact,
            Some(FactCategory::Pet),
            "cat".into(),
            "Momo".into(),
            Some("d".into()),
            None,
        )
        .unwrap();
        let e = |kind, category, value: &str, standing| Earlier {
            kind,
            category,
            label: "cat".into(),
            value: value.into(),
            standing,
        };
        let earlier = vec![
            e(Fact, Some(FactCategory::Pet), "Momo", false),
            e(Contradiction, None, "Momo", true),
            e(Fact, Some(FactCategory::Home), "Momo", true),
            e(Fact, Some(FactCategory::Pet), "Lulu", true),
        ];
        assert!(matching_proposal(&p, &earlier).is_none());
        let mut again = earlier.clone();
        again.push(e(Fact, Some(FactCategory::Pet), "Momo", true));
        assert_eq!(matching_proposal(&p, &again), again.last());
    }

    #[test]
    fn the_decisions_of_a_persona_are_titled_by_its_name() {
        assert_eq!(images_title("Mia"), "Images of Mia awaiting approval");
        assert_eq!(new_persona_title("Ava"), "New persona to confirm: Ava");
    }
}
