//! Wiki entries and proposals, as pure rules: the vocabulary (categories, statuses, source
//! kinds), what a proposal must be (every limit), how a proposal's title finds its entry, and
//! how a proposal lands (canon at once, or a draft a person reviews through a `wiki_draft`
//! decision). The adapter loads what a rule needs, asks here, and writes the answer in the
//! same transaction.

use crate::ports::Proposed;
use crate::{aliases, search};
use fleetdesk_kernel::decision::{DecisionKind, NewDecision};
use fleetdesk_kernel::events::{EventBody, NewEvent, WikiDraftDecided};
use fleetdesk_kernel::project::ProjectMiss;
use serde::{Deserialize, Serialize};
use uuid::Uuid;

/// `title`: 1-80 characters, not only spaces.
pub const TITLE_MAX: usize = 80;
/// `summary`: up to 200 characters.
pub const SUMMARY_MAX: usize = 200;
/// `body`: 1-6000 characters, not only spaces.
pub const BODY_MAX: usize = 6000;
/// The body length the specification advises (longer is accepted).
pub const BODY_ADVISED: usize = 2500;
/// `tags`: at most 12, each 1-100 characters (room for the community axes `market:`, `track:`
/// and `location:` with their values).
pub const TAGS_MAX: usize = 12;
pub const TAG_MAX: usize = 100;
/// `sources`: 1-20; `ref` 1-2000 characters, `title` up to 200.
pub const SOURCES_MIN: usize = 1;
pub const SOURCES_MAX: usize = 20;
pub const SOURCE_REF_MAX: usize = 2000;
pub const SOURCE_TITLE_MAX: usize = 200;
/// `note`: up to 1000 characters.
pub const NOTE_MAX: usize = 1000;
/// Search: `limit` default and maximum; `q` up to 200 characters.
pub const SEARCH_DEFAULT: i64 = 8;
pub const SEARCH_MAX: i64 = 30;
pub const QUERY_MAX: usize = 200;
/// Versions listed by `wiki_get`, newest first.
pub const VERSIONS_LISTED: i64 = 50;

fleetdesk_kernel::text_enum! {
    /// What an entry is about.
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
    #[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
    #[cfg_attr(feature = "openapi", schema(as = WikiCategory))]
    #[serde(rename_all = "snake_case")]
    pub enum Category {
        Worldview => "worldview",
        Character => "character",
        Voice => "voice",
        Format => "format",
        Audience => "audience",
        Strategy => "strategy",
        Playbook => "playbook",
        Lesson => "lesson",
        Glossary => "glossary",
        Other => "other",
    }
}

fleetdesk_kernel::text_enum! {
    /// Where an entry stands: `canon` (agents write from it; the only status search finds),
    /// `draft` (waiting for a person under manual review), `rejected` (a person dismissed it),
    /// `retired` (gone: never listed).
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
    #[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
    #[cfg_attr(feature = "openapi", schema(as = WikiStatus))]
    #[serde(rename_all = "snake_case")]
    pub enum EntryStatus {
        Canon => "canon",
        Draft => "draft",
        Rejected => "rejected",
        Retired => "retired",
    }
}

impl EntryStatus {
    /// The statuses search finds: canon only (drafts and rejected entries are never results).
    pub const SEARCHED: &'static [EntryStatus] = &[EntryStatus::Canon];
}

fleetdesk_kernel::text_enum! {
    /// Where one version stands: canon (the entry shows it), draft (waiting for its
    /// `wiki_draft` decision), rejected (dismissed), superseded (a later version replaced it).
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
    #[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
    #[cfg_attr(feature = "openapi", schema(as = WikiVersionStatus))]
    #[serde(rename_all = "snake_case")]
    pub enum VersionStatus {
        Canon => "canon",
        Draft => "draft",
        Rejected => "rejected",
        Superseded => "superseded",
    }
}

fleetdesk_kernel::text_enum! {
    /// The index's `status` filter: one status, or `all` (every status but retired).
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
    #[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
    #[cfg_attr(feature = "openapi", schema(as = WikiStatusFilter))]
    #[serde(rename_all = "snake_case")]
    pub enum StatusFilter {
        Canon => "canon",
        Draft => "draft",
        Rejected => "rejected",
        All => "all",
    }
}

impl StatusFilter {
    /// The entry statuses the filter lists.
    pub fn statuses(self) -> &'static [EntryStatus] {
        match self {
            StatusFilter::Canon => &[EntryStatus::Canon],
            StatusFilter::Draft => &[EntryStatus::Draft],
            StatusFilter::Rejected => &[EntryStatus::Rejected],
            StatusFilter::All => &[
                EntryStatus::Canon,
                EntryStatus::Draft,
                EntryStatus::Rejected,
            ],
        }
    }

    /// Whether the filter lists, besides the entries in its statuses, the canon entries with
    /// a draft revision waiting, shown as that draft (title, category, summary, tags and
    /// version of the draft; status draft): `draft` lists everything waiting for a person.
    pub fn lists_waiting_revisions(self) -> bool {
        self == StatusFilter::Draft
    }
}

fleetdesk_kernel::text_enum! {
    /// Where an entry's knowledge comes from.
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
    #[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
    #[cfg_attr(feature = "openapi", schema(as = WikiSourceKind))]
    #[serde(rename_all = "snake_case")]
    pub enum SourceKind {
        Vault => "vault",
        Notion => "notion",
        Post => "post",
        Review => "review",
        Agent => "agent",
        Person => "person",
        Other => "other",
    }
}

/// One source of an entry, as stored (`{kind, ref, title}` in JSON).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Source {
    pub kind: SourceKind,
    #[serde(rename = "ref")]
    pub reference: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
}

/// A proposal as an agent sends it, before its rules are checked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RawProposal {
    pub category: Category,
    pub title: String,
    pub summary: Option<String>,
    pub body: String,
    pub tags: Vec<String>,
    pub sources: Vec<Source>,
    /// A project name of the agent's workspace; none for a shared entry.
    pub project: Option<String>,
    /// The id of the canon entry this revises.
    pub revises: Option<Uuid>,
    pub note: Option<String>,
}

/// A proposal whose every rule holds: trimmed, tags without repeats.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Proposal {
    pub category: Category,
    pub title: String,
    /// The title as it is matched ([`search::title_key`]).
    pub title_key: String,
    pub summary: String,
    pub body: String,
    pub tags: Vec<String>,
    pub sources: Vec<Source>,
    pub project: Option<String>,
    pub revises: Option<Uuid>,
    pub note: Option<String>,
}

/// Why a proposal is refused: a field breaks a limit (400, `Invalid`) or a rule (422,
/// `Refused`). `field` names it as the request does (`sources[2].ref`).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ProposalError {
    #[error("{field} {reason}")]
    Invalid { field: String, reason: String },
    #[error("{field} {reason}")]
    Refused { field: String, reason: String },
}

impl ProposalError {
    fn invalid(field: impl Into<String>, reason: impl Into<String>) -> Self {
        ProposalError::Invalid {
            field: field.into(),
            reason: reason.into(),
        }
    }

    pub fn field(&self) -> &str {
        match self {
            ProposalError::Invalid { field, .. } | ProposalError::Refused { field, .. } => field,
        }
    }
}

fn chars(s: &str) -> usize {
    s.chars().count()
}

/// A tag as it is matched (stored beside the tags as `folded_tags`): lower case, white space
/// around it and around an axis value ignored (`Market: TW` is `market:tw`), so the community
/// assistant's axis filter compares exactly.
pub fn fold_tag(tag: &str) -> String {
    match tag.split_once(':') {
        Some((axis, value)) => format!(
            "{}:{}",
            axis.trim().to_lowercase(),
            value.trim().to_lowercase()
        ),
        None => tag.trim().to_lowercase(),
    }
}

/// Every tag as matched, in the tags' order: what the adapter stores in `folded_tags`.
pub fn fold_tags(tags: &[String]) -> Vec<String> {
    tags.iter().map(|t| fold_tag(t)).collect()
}

/// Text of `min..=max` characters once trimmed (`min` 1 also refuses only spaces).
fn text(field: &str, raw: &str, min: usize, max: usize) -> Result<String, ProposalError> {
    let t = raw.trim();
    let n = chars(t);
    if n < min || n > max {
        let reason = if min == 0 {
            format!("must have at most {max} characters")
        } else {
            format!("must be {min}-{max} characters long and not only spaces")
        };
        return Err(ProposalError::invalid(field, reason));
    }
    Ok(t.to_owned())
}

impl Proposal {
    /// Checks every rule of a proposal: title 1-80, summary up to 200, body 1-6000 (none only
    /// spaces), tags at most 12 of 1-100 characters (repeats dropped, matched as titles are),
    /// sources 1-20 with ref 1-2000 and title up to 200, note up to 1000, the project name
    /// 1-200; a source ref that carries an access token (`?token=…`) is refused.
    pub fn parse(raw: RawProposal) -> Result<Proposal, ProposalError> {
        let title = text("title", &raw.title, 1, TITLE_MAX)?;
        let summary = text(
            "summary",
            raw.summary.as_deref().unwrap_or(""),
            0,
            SUMMARY_MAX,
        )?;
        let body = text("body", &raw.body, 1, BODY_MAX)?;
        if raw.tags.len() > TAGS_MAX {
            return Err(ProposalError::invalid(
                "tags",
                format!("must have at most {TAGS_MAX} items"),
            ));
        }
        let mut tags: Vec<String> = Vec::new();
        let mut keys: Vec<String> = Vec::new();
        for (i, tag) in raw.tags.iter().enumerate() {
            let tag = text(&format!("tags[{i}]"), tag, 1, TAG_MAX)?;
            let key = search::title_key(&tag);
            if !keys.contains(&key) {
                keys.push(key);
                tags.push(tag);
            }
        }
        if raw.sources.len() < SOURCES_MIN || raw.sources.len() > SOURCES_MAX {
            return Err(ProposalError::invalid(
                "sources",
                format!("must have {SOURCES_MIN}-{SOURCES_MAX} items"),
            ));
        }
        let mut sources = Vec::with_capacity(raw.sources.len());
        for (i, s) in raw.sources.iter().enumerate() {
            let reference = text(
                &format!("sources[{i}].ref"),
                &s.reference,
                1,
                SOURCE_REF_MAX,
            )?;
            if let Some(param) = fleetdesk_kernel::secrets::access_token_param(&reference) {
                return Err(ProposalError::Refused {
                    field: format!("sources[{i}].ref"),
                    reason: format!(
                        "carries an access token (query parameter {param}): give the link \
                         without it"
                    ),
                });
            }
            let title = match &s.title {
                Some(t) => Some(text(
                    &format!("sources[{i}].title"),
                    t,
                    0,
                    SOURCE_TITLE_MAX,
                )?)
                .filter(|t| !t.is_empty()),
                None => None,
            };
            sources.push(Source {
                kind: s.kind,
                reference,
                title,
            });
        }
        let project = match &raw.project {
            Some(p) => Some(text("project", p, 1, 200)?),
            None => None,
        };
        let note = match &raw.note {
            Some(n) => Some(text("note", n, 0, NOTE_MAX)?).filter(|n| !n.is_empty()),
            None => None,
        };
        Ok(Proposal {
            category: raw.category,
            title_key: search::title_key(&title),
            title,
            summary,
            body,
            tags,
            sources,
            project,
            revises: raw.revises,
            note,
        })
    }

    /// The search terms stored for the entry: title (weight A), summary and tags (B), body
    /// (D), each through [`search::index_text`].
    pub fn terms(&self) -> Terms {
        Terms::of(
            self.category,
            &self.title,
            &self.summary,
            &self.tags,
            &self.body,
        )
    }

    /// The proposal's text as its entry's row shows it, as version `version` in `status`.
    pub fn shown(&self, version: i32, status: EntryStatus) -> Shown<'_> {
        Shown {
            category: self.category,
            title: &self.title,
            title_key: self.title_key.clone(),
            summary: &self.summary,
            body: &self.body,
            tags: &self.tags,
            sources: &self.sources,
            version,
            status,
            terms: self.terms(),
        }
    }

    /// The scope the proposal lands in, as its project's id and name: the revised entry's
    /// (`revised`), else the one it names (`project_id`).
    pub fn scope(
        &self,
        project_id: Option<Uuid>,
        revised: Option<&Existing>,
    ) -> (Option<Uuid>, Option<String>) {
        match revised {
            Some(e) => (e.project_id, e.project.clone()),
            None => (project_id, self.project.clone()),
        }
    }

    /// The title (by key) the entry a proposal lands on is found by under the locks: the
    /// revised entry's own (`revised`; a revision may rename it), else the proposal's. The
    /// adapter locks it with the proposal's title ([`title_locks`]: once each, in order).
    pub fn found_by<'a>(&'a self, revised: Option<&'a Existing>) -> &'a str {
        revised.map_or(&self.title_key, |e| &e.title_key)
    }

    /// The revised entry when the proposal renames it (a title matched otherwise): the new
    /// title must then name no other entry of the scope ([`check_rename`]).
    pub fn renames<'a>(&self, revised: Option<&'a Existing>) -> Option<&'a Existing> {
        revised.filter(|e| e.title_key != self.title_key)
    }
}

/// What an entry's row shows: one version's text and number, the entry's status, the title as
/// matched and the search terms ([`Terms`]). A new entry is inserted with it; a version shown
/// later (a canon proposal, a resolved draft) is written over it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Shown<'a> {
    pub category: Category,
    pub title: &'a str,
    /// The title as matched ([`search::title_key`]).
    pub title_key: String,
    pub summary: &'a str,
    pub body: &'a str,
    pub tags: &'a [String],
    pub sources: &'a [Source],
    pub version: i32,
    pub status: EntryStatus,
    pub terms: Terms,
}

/// What the adapter stores in `terms_title`, `terms_summary`, `terms_pivot` and `terms_body`,
/// and the tags as matched in `folded_tags` ([`fold_tags`]): every write of an entry's shown
/// text writes them, with [`TERMS_VERSION`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Terms {
    pub title: String,
    pub summary: String,
    /// The English of the title's, summary's and tags' Chinese words ([`search::pivot`]).
    pub pivot: String,
    /// The body's terms, then the English of its Chinese words.
    pub body: String,
    pub folded_tags: Vec<String>,
    /// A glossary entry's synonyms ([`aliases::declared`] of its body), each group as
    /// [`aliases::encode`] stores it, and their terms; none for other categories.
    pub aliases: Vec<String>,
    pub alias_terms: Vec<String>,
}

/// The version of the pipeline [`Terms::of`] runs: an entry stored by an earlier one is indexed
/// again when the service starts (1: words; 2: words and their English; 3: the trade's words
/// in English by `search::AGENCY_SENSES`; 4: its senses without hyphens).
pub const TERMS_VERSION: i16 = 4;

impl Terms {
    pub fn of(
        category: Category,
        title: &str,
        summary: &str,
        tags: &[String],
        body: &str,
    ) -> Terms {
        let mut summary_and_tags = summary.to_owned();
        for t in tags {
            summary_and_tags.push('\n');
            summary_and_tags.push_str(t);
        }
        let title = search::terms(title);
        let summary = search::terms(&summary_and_tags);
        let mut pivot = search::pivot_terms(&title);
        pivot.extend(search::pivot_terms(&summary));
        let groups = match category {
            Category::Glossary => aliases::declared(body),
            _ => Vec::new(),
        };
        let mut body = search::terms(body);
        let english = search::pivot_terms(&body);
        body.extend(english);
        Terms {
            title: title.join(" "),
            summary: summary.join(" "),
            pivot: pivot.join(" "),
            body: body.join(" "),
            folded_tags: fold_tags(tags),
            aliases: groups.iter().map(aliases::encode).collect(),
            alias_terms: aliases::alias_terms(&groups),
        }
    }
}

/// Why a wiki request is refused by a rule (422 unless said otherwise).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum WikiRefusal {
    /// 404: no entry the agent may see (another organization's, another workspace's project).
    #[error("no such wiki entry")]
    NotFound,
    /// 404 naming `revises`.
    #[error("revises names no wiki entry you can see")]
    RevisesNotFound,
    #[error("revises must name a canon entry; this one is {0}")]
    RevisesNotCanon(EntryStatus),
    /// The revised entry was renamed while the proposal was read (a race with another
    /// revision): nothing is written.
    #[error(
        "the entry revises names was renamed by another revision while this one was read: read \
         it again (wiki_get) and send the revision again"
    )]
    RevisesRenamed,
    /// A revision renames its entry onto the title of another entry of the same scope.
    #[error(
        "another entry of this scope is titled {0:?}: revise that entry, or choose another \
         title"
    )]
    TitleTaken(String),
    #[error(
        "a revision stays in its entry's project ({}); omit project or name that one",
        .0.as_deref().unwrap_or("shared")
    )]
    RevisesOtherProject(Option<String>),
    /// 404 naming `project`: no project of that name in the workspace (a filter), or in the
    /// organization (a proposal).
    #[error("{0:?} is not a project of your workspace")]
    ProjectUnknown(String),
    /// A proposal names a project of another workspace of the organization (the
    /// specification's decision: 422).
    #[error(
        "{0:?} is a project of another workspace; name one of yours, or omit project for a \
         shared entry"
    )]
    ProjectOfOtherWorkspace(String),
    #[error(
        "the title is used by entries of several projects ({}): name the project",
        .0.join(", ")
    )]
    TitleInSeveralProjects(Vec<String>),
}

impl WikiRefusal {
    /// The request field the refusal is about.
    pub fn field(&self) -> Option<&'static str> {
        match self {
            WikiRefusal::NotFound => None,
            WikiRefusal::RevisesNotFound
            | WikiRefusal::RevisesNotCanon(_)
            | WikiRefusal::RevisesRenamed => Some("revises"),
            WikiRefusal::TitleTaken(_) => Some("title"),
            WikiRefusal::RevisesOtherProject(_)
            | WikiRefusal::ProjectUnknown(_)
            | WikiRefusal::ProjectOfOtherWorkspace(_)
            | WikiRefusal::TitleInSeveralProjects(_) => Some("project"),
        }
    }

    /// 404 rather than 422.
    pub fn is_not_found(&self) -> bool {
        matches!(
            self,
            WikiRefusal::NotFound | WikiRefusal::RevisesNotFound | WikiRefusal::ProjectUnknown(_)
        )
    }

    /// A proposal's project that is not one of the workspace's: another workspace's (422) or
    /// none of the organization's (404).
    pub fn project_miss(name: String, miss: ProjectMiss) -> WikiRefusal {
        match miss {
            ProjectMiss::OtherWorkspace => WikiRefusal::ProjectOfOtherWorkspace(name),
            ProjectMiss::Unknown => WikiRefusal::ProjectUnknown(name),
        }
    }
}

/// The project a proposal or a filter names, among the workspace's `(id, name)` projects.
pub fn find_project(
    named: Option<&str>,
    projects: &[(Uuid, String)],
) -> Result<Option<Uuid>, WikiRefusal> {
    match named {
        None => Ok(None),
        Some(name) => projects
            .iter()
            .find(|(_, n)| n == name.trim())
            .map(|(id, _)| Some(*id))
            .ok_or_else(|| WikiRefusal::ProjectUnknown(name.trim().to_owned())),
    }
}

/// An entry the agent may see whose title matches a lookup: its id and project name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TitleMatch {
    pub id: Uuid,
    pub project: Option<String>,
}

/// Which of the entries with a title `wiki_get` returns: with `project`, that project's entry,
/// else the shared one; without, the shared entry, else the only project's entry (several
/// projects' entries of that title: 422 naming project).
pub fn pick_by_title(matches: &[TitleMatch], project: Option<&str>) -> Result<Uuid, WikiRefusal> {
    let shared = matches.iter().find(|m| m.project.is_none());
    if let Some(p) = project {
        return matches
            .iter()
            .find(|m| m.project.as_deref() == Some(p.trim()))
            .or(shared)
            .map(|m| m.id)
            .ok_or(WikiRefusal::NotFound);
    }
    if let Some(s) = shared {
        return Ok(s.id);
    }
    match matches {
        [] => Err(WikiRefusal::NotFound),
        [only] => Ok(only.id),
        several => {
            let mut names: Vec<String> = several.iter().filter_map(|m| m.project.clone()).collect();
            names.sort();
            Err(WikiRefusal::TitleInSeveralProjects(names))
        }
    }
}

/// The entry a proposal lands on, as stored.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Existing {
    pub id: Uuid,
    pub status: EntryStatus,
    /// The title the entry shows (refusals name it).
    pub title: String,
    pub title_key: String,
    pub project_id: Option<Uuid>,
    pub project: Option<String>,
    /// The entry has a canon version (its row shows it).
    pub has_canon: bool,
    /// The highest version number (0 when it has none).
    pub last_version: i32,
    /// The version waiting for a person, and its open `wiki_draft` decision.
    pub pending: Option<Pending>,
}

impl Existing {
    /// The open `wiki_draft` decision a waiting draft version of the entry waits for: a
    /// proposal locks it (as a person's move on it locks it first) before the entry's row.
    pub fn waiting_decision(&self) -> Option<Uuid> {
        self.pending.and_then(|p| p.decision_id)
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Pending {
    pub version: i32,
    pub decision_id: Option<Uuid>,
}

/// What becomes of a draft version already waiting when a new proposal lands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Waiting {
    /// Nothing was waiting.
    None,
    /// The waiting version is superseded and its decision (if still open) is dismissed by the
    /// service with [`superseded_note`]: each `wiki_draft` decision decides exactly its own
    /// version, so a person who reviewed one version never approves another one.
    Supersede {
        version: i32,
        decision_id: Option<Uuid>,
    },
}

/// How a proposal lands.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Landing {
    /// The new version's number.
    pub version: i32,
    /// canon (auto) or draft (manual review).
    pub status: VersionStatus,
    /// True when it became canon without a person.
    pub auto: bool,
    /// A new entry.
    pub created: bool,
    /// The entry's row takes the new version's text and this status; `None` keeps the row as
    /// it is (a draft revision of a canon entry: the entry stays canon until resolved).
    pub show: Option<EntryStatus>,
    /// The canon version the new one supersedes at once (auto).
    pub supersede_canon: bool,
    pub waiting: Waiting,
    /// A new `wiki_draft` decision opens for the version, opened by the proposing agent (in
    /// its workspace).
    pub open_decision: bool,
}

/// Versions of an entry a write supersedes: those in `status`, only `version` when given.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Superseded {
    pub status: VersionStatus,
    pub version: Option<i32>,
}

impl Superseded {
    /// The entry's canon version, which a version made canon replaces.
    pub const CANON: Superseded = Superseded {
        status: VersionStatus::Canon,
        version: None,
    };
}

impl Landing {
    /// The decision of the waiting draft this landing supersedes, which the service dismisses
    /// (if still open), with the note saying why ([`superseded_note`]).
    pub fn dismissed(&self) -> Option<(Uuid, String)> {
        match self.waiting {
            Waiting::Supersede {
                decision_id: Some(d),
                version,
            } => Some((d, superseded_note(version, self.version, self.auto))),
            _ => None,
        }
    }

    /// When the new version is decided: at once (`now`, the request's one clock) when it is
    /// canon at once; a draft is decided by its decision.
    pub fn decided_at(&self, now: jiff::Timestamp) -> Option<jiff::Timestamp> {
        self.auto.then_some(now)
    }

    /// The versions the new one supersedes: the canon one ([`Landing::supersede_canon`]),
    /// then the draft that was waiting ([`Waiting::Supersede`]).
    pub fn superseded(&self) -> Vec<Superseded> {
        let waiting = match self.waiting {
            Waiting::None => None,
            Waiting::Supersede { version, .. } => Some(Superseded {
                status: VersionStatus::Draft,
                version: Some(version),
            }),
        };
        let canon = self.supersede_canon.then_some(Superseded::CANON);
        canon.into_iter().chain(waiting).collect()
    }

    /// What the proposal did once it is written: the entry `id`, the proposal's `title`, and
    /// the `wiki_draft` decision the version waits for, if it opened one.
    pub fn proposed(&self, id: Uuid, title: &str, decision_id: Option<Uuid>) -> Proposed {
        Proposed {
            id,
            title: title.to_owned(),
            version: self.version,
            status: self.status,
            auto: self.auto,
            created: self.created,
            decision_id,
        }
    }

    /// A manual proposal's own `wiki_draft` decision, when it opens one: its title and what a
    /// person reads of the version (`found`: the entry it lands on, `project`: the scope's
    /// project name).
    pub fn opening(
        &self,
        entry_id: Uuid,
        p: &Proposal,
        found: Option<&Existing>,
        project: Option<&str>,
    ) -> Option<NewDecision> {
        if !self.open_decision {
            return None;
        }
        let revision = found.is_some_and(|e| e.has_canon);
        let detail = serde_json::json!({
            "entry_id": entry_id,
            "version": self.version,
            "revision": revision,
            "project": project,
            "category": p.category,
            "title": p.title,
            "summary": p.summary,
            "body": p.body,
            "tags": p.tags,
            "sources": p.sources,
            "note": p.note,
        });
        Some(NewDecision::new(
            DecisionKind::WikiDraft,
            decision_title(&p.title, self.version, revision),
            detail,
        ))
    }
}

/// A revision may give its entry a new title, never one another entry of the same scope holds:
/// `holder` is the entry that title names there, if any (the revised entry itself when the
/// title keeps its key).
pub fn check_rename(revised: &Existing, holder: Option<&Existing>) -> Result<(), WikiRefusal> {
    match holder {
        Some(h) if h.id != revised.id => Err(WikiRefusal::TitleTaken(h.title.clone())),
        _ => Ok(()),
    }
}

/// The advisory locks of titles (by key) in a scope, as the texts the adapter locks, in the
/// one order every writer takes them (sorted, once each), so two writers that need the same
/// two titles never wait on each other.
pub fn title_locks(organization: Uuid, project: Option<Uuid>, keys: &[&str]) -> Vec<String> {
    let mut keys = keys.to_vec();
    keys.sort_unstable();
    keys.dedup();
    keys.into_iter()
        .map(|key| title_lock_key(organization, project, key))
        .collect()
}

/// The advisory lock's key of a title in a scope: one per organization, project (none for
/// the organization's shared entries) and title key.
pub fn title_lock_key(organization: Uuid, project: Option<Uuid>, key: &str) -> String {
    format!(
        "wiki:{organization}:{}:{key}",
        project.map(|p| p.to_string()).unwrap_or_default()
    )
}

/// Under the locks, a revision's entry must still be the one it names: an entry renamed by
/// another revision between the first read and the locks is not the one the locks hold, so
/// nothing is written and the caller reads it again.
pub fn check_revised_found(
    revises: Option<Uuid>,
    found: Option<&Existing>,
) -> Result<(), WikiRefusal> {
    match revises {
        Some(id) if found.is_none_or(|e| e.id != id) => Err(WikiRefusal::RevisesRenamed),
        _ => Ok(()),
    }
}

/// Whether the proposal `p`, under the organization's review (`manual`), lands on `existing`
/// (the entry `revises` names, else the entry of the same title in the same scope).
/// `project_id` is the project the proposal names.
pub fn land(
    p: &Proposal,
    project_id: Option<Uuid>,
    existing: Option<&Existing>,
    manual: bool,
) -> Result<Landing, WikiRefusal> {
    if let Some(e) = existing
        && p.revises == Some(e.id)
    {
        if e.status != EntryStatus::Canon {
            return Err(WikiRefusal::RevisesNotCanon(e.status));
        }
        if p.project.is_some() && project_id != e.project_id {
            return Err(WikiRefusal::RevisesOtherProject(e.project.clone()));
        }
    }
    let status = if manual {
        VersionStatus::Draft
    } else {
        VersionStatus::Canon
    };
    let Some(e) = existing else {
        return Ok(Landing {
            version: 1,
            status,
            auto: !manual,
            created: true,
            show: Some(if manual {
                EntryStatus::Draft
            } else {
                EntryStatus::Canon
            }),
            supersede_canon: false,
            waiting: Waiting::None,
            open_decision: manual,
        });
    };
    let waiting = match e.pending {
        None => Waiting::None,
        Some(Pending {
            version,
            decision_id,
        }) => Waiting::Supersede {
            version,
            decision_id,
        },
    };
    let show = match (manual, e.has_canon) {
        (false, _) => Some(EntryStatus::Canon),
        // A draft revision of a canon entry: the entry keeps showing its canon text.
        (true, true) => None,
        (true, false) => Some(EntryStatus::Draft),
    };
    Ok(Landing {
        version: e.last_version + 1,
        status,
        auto: !manual,
        created: false,
        show,
        supersede_canon: !manual && e.has_canon,
        open_decision: manual,
        waiting,
    })
}

/// The note the service adds to the decision of a draft version a later proposal
/// superseded, as it dismisses it.
pub fn superseded_note(superseded: i32, by: i32, auto: bool) -> String {
    if auto {
        format!(
            "version {superseded} is superseded by version {by}, which became canon at once \
             (review is auto); this decision is dismissed"
        )
    } else {
        format!(
            "version {superseded} is superseded by version {by}, which waits for its own \
             wiki_draft decision; this decision is dismissed"
        )
    }
}

/// The version a `wiki_draft` decision decides, whatever its status, as loaded when a person
/// moves the decision, with where its entry stands.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DraftVersion {
    pub entry_id: Uuid,
    pub version: i32,
    pub status: VersionStatus,
    pub category: Category,
    pub title: String,
    pub summary: String,
    pub body: String,
    pub tags: Vec<String>,
    pub sources: Vec<Source>,
    pub entry_status: EntryStatus,
    pub organization_id: Uuid,
    pub project_id: Option<Uuid>,
    /// The entry's title key as it stands.
    pub title_key: String,
    /// The entry has a canon version.
    pub has_canon: bool,
}

impl DraftVersion {
    /// The version's title (by key) when it renames its entry (its title matches otherwise
    /// than the entry's): resolving it takes that title's lock, without waiting, and finds
    /// whether another entry of the scope holds it.
    pub fn renamed_key(&self) -> Option<String> {
        Some(search::title_key(&self.title)).filter(|key| *key != self.title_key)
    }

    /// The version as [`decide`] judges it: `title_taken` and `title_busy` say what the
    /// adapter found of the title it renames its entry to ([`DraftVersion::renamed_key`]).
    pub fn state(&self, title_taken: Option<String>, title_busy: bool) -> DraftState {
        DraftState {
            version: self.version,
            version_status: self.status,
            entry_status: self.entry_status,
            has_canon: self.has_canon,
            title_taken,
            title_busy,
        }
    }

    /// `wiki.draft_decided` for the version `decided` (what [`decide`] answered), told to
    /// every agent of the decision's workspace that reads the wiki, about the entry.
    pub fn decided_event(&self, workspace_id: Uuid, decided: &Decided) -> NewEvent {
        NewEvent {
            workspace_id,
            agent_id: None,
            object_id: self.entry_id,
            body: EventBody::WikiDraftDecided(WikiDraftDecided {
                entry_id: self.entry_id,
                title: self.title.clone(),
                status: decided.version_status.as_str().to_owned(),
            }),
        }
    }

    /// The version as its entry's row shows it once resolved: canon.
    pub fn shown(&self) -> Shown<'_> {
        Shown {
            category: self.category,
            title: &self.title,
            title_key: search::title_key(&self.title),
            summary: &self.summary,
            body: &self.body,
            tags: &self.tags,
            sources: &self.sources,
            version: self.version,
            status: EntryStatus::Canon,
            terms: Terms::of(
                self.category,
                &self.title,
                &self.summary,
                &self.tags,
                &self.body,
            ),
        }
    }
}

/// The draft version a `wiki_draft` decision decides, as stored when a person moves it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DraftState {
    pub version: i32,
    /// The version's status (a decision is only decided while it is `draft`).
    pub version_status: VersionStatus,
    pub entry_status: EntryStatus,
    /// The entry has a canon version besides the draft.
    pub has_canon: bool,
    /// The title of another live entry of the entry's scope that holds the draft's title (a
    /// draft that renames its entry onto a title taken since it was proposed).
    pub title_taken: Option<String>,
    /// A proposal is writing the title the draft renames its entry to, right now.
    pub title_busy: bool,
}

/// What a person's move on a `wiki_draft` decision does to the entry: resolve makes the draft
/// canon (the entry shows it, the former canon version is superseded); dismiss rejects the
/// draft (an entry with a canon version keeps it; one without becomes rejected).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Decided {
    pub version_status: VersionStatus,
    /// The entry's row takes the draft's text with this status, or only this status, or
    /// stays.
    pub entry: EntryChange,
    pub supersede_canon: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EntryChange {
    /// The row shows the decided version, canon.
    ShowCanon,
    /// The row (which already shows the draft) becomes rejected.
    Reject,
    /// The row keeps its canon version.
    Keep,
}

/// Why a person's move on a `wiki_draft` decision is refused (422): its version no longer
/// waits, or its entry is gone.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DraftRefusal {
    #[error("no wiki version waits for this decision")]
    NoVersion,
    #[error("version {version} of the wiki entry no longer waits for a decision: it is {status}")]
    NotWaiting { version: i32, status: VersionStatus },
    #[error("the wiki entry of version {0} was retired: there is nothing left to decide")]
    EntryRetired(i32),
    #[error(
        "version {version} renames the entry to {title:?}, which another entry of its scope now \
         holds: dismiss this draft, or rename that entry first"
    )]
    TitleTaken { version: i32, title: String },
    #[error(
        "version {0} renames the entry to a title another proposal is writing right now: try \
         again in a moment"
    )]
    TitleBusy(i32),
}

/// What resolving (`resolve`) or dismissing a `wiki_draft` decision does, given its version
/// as stored (none: no version names the decision).
pub fn decide(resolve: bool, draft: Option<&DraftState>) -> Result<Decided, DraftRefusal> {
    let d = draft.ok_or(DraftRefusal::NoVersion)?;
    if d.version_status != VersionStatus::Draft {
        return Err(DraftRefusal::NotWaiting {
            version: d.version,
            status: d.version_status,
        });
    }
    if d.entry_status == EntryStatus::Retired {
        return Err(DraftRefusal::EntryRetired(d.version));
    }
    if resolve && d.title_busy {
        return Err(DraftRefusal::TitleBusy(d.version));
    }
    if let (true, Some(title)) = (resolve, &d.title_taken) {
        return Err(DraftRefusal::TitleTaken {
            version: d.version,
            title: title.clone(),
        });
    }
    Ok(match (resolve, d.has_canon) {
        (true, _) => Decided {
            version_status: VersionStatus::Canon,
            entry: EntryChange::ShowCanon,
            supersede_canon: d.has_canon,
        },
        (false, true) => Decided {
            version_status: VersionStatus::Rejected,
            entry: EntryChange::Keep,
            supersede_canon: false,
        },
        (false, false) => Decided {
            version_status: VersionStatus::Rejected,
            entry: EntryChange::Reject,
            supersede_canon: false,
        },
    })
}

/// The title of a proposal's `wiki_draft` decision.
pub fn decision_title(title: &str, version: i32, revision: bool) -> String {
    if revision {
        format!("Wiki revision: {title} (version {version})")
    } else {
        format!("New wiki entry: {title}")
    }
}

/// An entry a persona's cast member may link to: one the persona's scope sees (shared, or of
/// the persona's project) whose title matches the member's name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CastCandidate {
    pub id: Uuid,
    pub title: String,
    pub title_key: String,
    pub category: Category,
    pub status: EntryStatus,
    /// Of the persona's project (else shared).
    pub in_project: bool,
}

/// The entry a cast member named `name` links to: a canon `character` entry whose title
/// matches the name (as titles match), the persona's project's before a shared one.
pub fn cast_link<'a>(name: &str, candidates: &'a [CastCandidate]) -> Option<&'a CastCandidate> {
    let key = search::title_key(name);
    candidates
        .iter()
        .filter(|c| {
            c.title_key == key
                && c.status == EntryStatus::Canon
                && c.category == Category::Character
        })
        .max_by_key(|c| c.in_project)
}

/// For each name of a persona's cast, in order, the entry it links to ([`cast_link`]): its id
/// and title.
pub fn cast_links(names: &[String], candidates: &[CastCandidate]) -> Vec<Option<(Uuid, String)>> {
    names
        .iter()
        .map(|n| cast_link(n, candidates).map(|c| (c.id, c.title.clone())))
        .collect()
}

#[cfg(test)]
mod tests;
