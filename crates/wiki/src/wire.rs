//! The wiki part of the interface (feature `wire`): each operation's handle with its
//! description, and the request and response types the server parses and a client sends.
//! The agent's operations (the knowledge base, its sources and their syncs) are in [`agent`],
//! the person's reads of a workspace's knowledge base in [`personal`].

use crate::entry::{Category, EntryStatus, Source, SourceKind, StatusFilter, VersionStatus};
use crate::ports::{Entry, EntryHead, Proposed};
use crate::service::Hit;
use crate::sources::{RETRY_AFTER_FAILED_HOURS, Source as SyncSource, SyncStatus};
use fleetdesk_kernel::wire::fields::{Cursor, Int, Limit, List, Text, Utc};
use fleetdesk_kernel::wire::strings::{CursorInput, WHITE_SPACE_CLASS, not_blank_pattern};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use std::borrow::Cow;
use utoipa::ToSchema;
use utoipa::openapi::{RefOr, Schema};
use uuid::Uuid;
use validator::Validate;

fleetdesk_kernel::component_items!(WikiSourceIn, WikiTagIn);

const _: () = assert!(
    RETRY_AFTER_FAILED_HOURS == 1,
    "the descriptions say one hour"
);

/// Who may read a workspace's knowledge base through the Personal API, and which entries.
macro_rules! person_scope_rules {
    () => {
        "Agency people and platform admins (clients: 403). `workspace` (an id, required) names \
         a workspace of the member's organization (a platform admin outside any organization: \
         any workspace); another organization's, an archived or an unknown one is 404 naming \
         workspace. The entries are those an agent of that workspace sees: the organization's \
         shared entries and those of the workspace's projects; `project` is a project name of \
         that workspace (else 404 naming project). "
    };
}

// ---------------------------------------------------------------------------------------------
// The records

#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct WikiHeadOut {
    pub id: Uuid,
    pub title: String,
    pub category: Category,
    pub summary: String,
    pub tags: Vec<String>,
    /// The version the entry shows (with `status=draft`, the waiting draft's version).
    pub version: i32,
    /// canon, draft or rejected (draft also for a canon entry listed by `status=draft` as its
    /// waiting draft revision).
    pub status: EntryStatus,
    /// The project's name; null for an entry shared by the organization.
    pub project: Option<String>,
    pub created_at: Utc,
    pub updated_at: Utc,
}

impl WikiHeadOut {
    /// An entry's head as the index lists it.
    pub fn of(h: EntryHead) -> WikiHeadOut {
        WikiHeadOut {
            id: h.id,
            title: h.title,
            category: h.category,
            summary: h.summary,
            tags: h.tags,
            version: h.version,
            status: h.status,
            project: h.project,
            created_at: Utc(h.created_at),
            updated_at: Utc(h.updated_at),
        }
    }
}

// ---------------------------------------------------------------------------------------------
// GET /wiki

#[derive(Debug, Clone, Default, Serialize, Deserialize, Validate, ToSchema)]
pub struct WikiIndexQuery {
    /// canon (default), draft (also canon entries with a draft revision waiting, shown as
    /// that draft), rejected, or all (every status but retired).
    pub status: Option<StatusFilter>,
    /// A project name of your workspace: that project's entries plus the shared ones.
    pub project: Option<Text<1, 200>>,
    /// 1-200, default 50.
    pub limit: Option<Limit<200>>,
    /// `next_cursor` of the previous page.
    pub cursor: Option<CursorInput>,
}

#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct WikiIndexPage {
    /// Newest first.
    pub entries: Vec<WikiHeadOut>,
    /// Pass as `cursor` for the next page; null on the last page.
    pub next_cursor: Option<Cursor>,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize, Validate, ToSchema)]
pub struct PersonWikiIndexQuery {
    /// The workspace whose knowledge base is read.
    pub workspace: Uuid,
    /// canon (default), draft (also canon entries with a draft revision waiting, shown as
    /// that draft), rejected, or all (every status but retired).
    pub status: Option<StatusFilter>,
    /// A project name of the workspace: that project's entries plus the shared ones.
    pub project: Option<Text<1, 200>>,
    /// 1-200, default 50.
    pub limit: Option<Limit<200>>,
    /// `next_cursor` of the previous page.
    pub cursor: Option<CursorInput>,
}

impl From<PersonWikiIndexQuery> for WikiIndexQuery {
    /// A person's query of a workspace's index, the workspace aside.
    fn from(q: PersonWikiIndexQuery) -> WikiIndexQuery {
        WikiIndexQuery {
            status: q.status,
            project: q.project,
            limit: q.limit,
            cursor: q.cursor,
        }
    }
}

/// Both indexes page the same way.
macro_rules! paged_index {
    ($($op:ty => $query:ty),*) => {$(
        impl fleetdesk_kernel::wire::Paged for $op {
            type Item = WikiHeadOut;

            fn page(out: WikiIndexPage) -> (Vec<WikiHeadOut>, Option<Cursor>) {
                (out.entries, out.next_cursor)
            }

            fn after(query: &mut $query, cursor: Cursor) {
                query.cursor = Some(cursor.input());
            }
        }
    )*};
}

paged_index!(agent::WikiIndex => WikiIndexQuery, personal::WikiIndex => PersonWikiIndexQuery);

// ---------------------------------------------------------------------------------------------
// GET /wiki/entry

#[derive(Debug, Serialize, Deserialize, Validate, ToSchema)]
pub struct WikiGetQuery {
    /// The entry's id (or give `title`).
    pub id: Option<Uuid>,
    /// The entry's title, 1-80 characters, matched as titles are (or give `id`).
    pub title: Option<Text<1, 80>>,
    /// With `title`: a project name of your workspace (else 404); its entry before the shared
    /// one.
    pub project: Option<Text<1, 200>>,
}

#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct WikiSourceOut {
    pub kind: SourceKind,
    #[serde(rename = "ref")]
    pub reference: String,
    pub title: Option<String>,
}

#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct WikiVersionOut {
    pub version: i32,
    /// canon (shown), draft (waiting for its wiki_draft decision), rejected, superseded.
    pub status: VersionStatus,
    pub category: Category,
    pub title: String,
    pub summary: String,
    pub note: Option<String>,
    /// The proposing agent's name.
    pub proposed_by: Option<String>,
    /// The wiki_draft decision this version waits for or was decided by; null when it landed
    /// canon at once.
    pub decision_id: Option<Uuid>,
    pub created_at: Utc,
    pub decided_at: Option<Utc>,
}

#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct WikiEntryOut {
    pub id: Uuid,
    pub title: String,
    pub category: Category,
    pub summary: String,
    /// The shown version's full text.
    pub body: String,
    pub tags: Vec<String>,
    /// 1-20 sources.
    pub sources: Vec<WikiSourceOut>,
    pub version: i32,
    pub status: EntryStatus,
    /// The project's name; null for an entry shared by the organization.
    pub project: Option<String>,
    pub created_at: Utc,
    pub updated_at: Utc,
    /// The latest 50 versions, newest first.
    pub versions: Vec<WikiVersionOut>,
}

impl WikiSourceOut {
    pub fn of(s: Source) -> WikiSourceOut {
        WikiSourceOut {
            kind: s.kind,
            reference: s.reference,
            title: s.title,
        }
    }
}

impl WikiEntryOut {
    /// A whole entry: its shown version, sources and latest versions.
    pub fn of(e: Entry) -> WikiEntryOut {
        let h = e.head;
        WikiEntryOut {
            id: h.id,
            title: h.title,
            category: h.category,
            summary: h.summary,
            body: e.body,
            tags: h.tags,
            sources: e.sources.into_iter().map(WikiSourceOut::of).collect(),
            version: h.version,
            status: h.status,
            project: h.project,
            created_at: Utc(h.created_at),
            updated_at: Utc(h.updated_at),
            versions: e
                .versions
                .into_iter()
                .map(|v| WikiVersionOut {
                    version: v.version,
                    status: v.status,
                    category: v.category,
                    title: v.title,
                    summary: v.summary,
                    note: v.note,
                    proposed_by: v.proposed_by,
                    decision_id: v.decision_id,
                    created_at: Utc(v.created_at),
                    decided_at: v.decided_at.map(Utc),
                })
                .collect(),
        }
    }
}

#[derive(Debug, Serialize, Deserialize, Validate, ToSchema)]
pub struct PersonWikiGetQuery {
    /// The workspace whose knowledge base is read.
    pub workspace: Uuid,
    /// The entry's id (or give `title`).
    pub id: Option<Uuid>,
    /// The entry's title, 1-80 characters, matched as titles are (or give `id`).
    pub title: Option<Text<1, 80>>,
    /// With `title`: a project name of the workspace (else 404); its entry before the shared
    /// one.
    pub project: Option<Text<1, 200>>,
}

impl From<PersonWikiGetQuery> for WikiGetQuery {
    /// A person's query of a workspace's entry, the workspace aside.
    fn from(q: PersonWikiGetQuery) -> WikiGetQuery {
        WikiGetQuery {
            id: q.id,
            title: q.title,
            project: q.project,
        }
    }
}

// ---------------------------------------------------------------------------------------------
// GET /wiki/search

#[derive(Debug, Serialize, Deserialize, Validate, ToSchema)]
pub struct WikiSearchQuery {
    /// What to look for, 1-200 characters: Chinese (either script), English or mixed.
    pub q: Text<1, 200>,
    /// 1-30, default 8.
    pub limit: Option<Limit<30>>,
    /// A project name of your workspace: that project's entries plus the shared ones.
    pub project: Option<Text<1, 200>>,
}

#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct WikiHitOut {
    pub id: Uuid,
    pub title: String,
    pub category: Category,
    pub summary: String,
    pub tags: Vec<String>,
    pub version: i32,
    /// The project's name; null for a shared entry.
    pub project: Option<String>,
    /// Relevance, higher is better: over the query's words the entry has, each word's rarity
    /// (BM25's IDF) times its PostgreSQL ts_rank, summed; where the service runs an embedding
    /// model, the fused rank score instead (1/(1 + rank by words) + 0.5/(1 + rank by meaning)).
    pub score: f32,
    /// Up to 160 characters of the body around the best hit.
    #[schema(max_length = 160)]
    pub snippet: String,
    /// The words of the query this entry has, as the query wrote them: found as written, by
    /// their English (a Chinese word) or Chinese (an English word), in the other script or
    /// wording, or through a synonym the knowledge base declares.
    pub matched: Vec<String>,
}

#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct WikiSearchReply {
    /// Best first; at most `limit`.
    pub results: Vec<WikiHitOut>,
}

impl WikiHitOut {
    /// A search hit with its score and snippet.
    pub fn of(h: Hit) -> WikiHitOut {
        WikiHitOut {
            id: h.head.id,
            title: h.head.title,
            category: h.head.category,
            summary: h.head.summary,
            tags: h.head.tags,
            version: h.head.version,
            project: h.head.project,
            score: h.score,
            snippet: h.snippet,
            matched: h.matched,
        }
    }
}

#[derive(Debug, Serialize, Deserialize, Validate, ToSchema)]
pub struct PersonWikiSearchQuery {
    /// The workspace whose knowledge base is searched.
    pub workspace: Uuid,
    /// What to look for, 1-200 characters: Chinese (either script), English or mixed.
    pub q: Text<1, 200>,
    /// 1-30, default 8.
    pub limit: Option<Limit<30>>,
    /// A project name of the workspace: that project's entries plus the shared ones.
    pub project: Option<Text<1, 200>>,
}

impl From<PersonWikiSearchQuery> for WikiSearchQuery {
    /// A person's search of a workspace's entries, the workspace aside.
    fn from(q: PersonWikiSearchQuery) -> WikiSearchQuery {
        WikiSearchQuery {
            q: q.q,
            limit: q.limit,
            project: q.project,
        }
    }
}

// ---------------------------------------------------------------------------------------------
// POST /wiki

/// A tag: 1-100 characters once the white space around it is dropped.
#[derive(Debug, Clone, PartialEq)]
pub struct WikiTagIn(pub String);

impl<'de> Deserialize<'de> for WikiTagIn {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let raw = String::deserialize(d)?;
        let n = raw.trim().chars().count();
        if n == 0 || n > crate::entry::TAG_MAX {
            return Err(serde::de::Error::custom(
                "each tag must be 1-100 characters (spaces around it are dropped)",
            ));
        }
        Ok(WikiTagIn(raw))
    }
}

impl Serialize for WikiTagIn {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        self.0.serialize(s)
    }
}

impl utoipa::PartialSchema for WikiTagIn {
    fn schema() -> RefOr<Schema> {
        let ws = WHITE_SPACE_CLASS;
        let schema = json!({
            "type": "string",
            "minLength": 1,
            "pattern": format!("^[{ws}]*[^\\x00{ws}](?:[^\\x00]{{0,98}}[^\\x00{ws}])?[{ws}]*$"),
            "description": "1-100 characters; white space around the tag is dropped. Community \
                            axes: market:<MARKET>, track:<track>, location:<location>.",
        });
        serde_json::from_value::<Schema>(schema)
            .map(RefOr::T)
            .expect("the tag schema is a schema")
    }
}

impl ToSchema for WikiTagIn {
    fn name() -> Cow<'static, str> {
        Cow::Borrowed("WikiTagInput")
    }
}

#[derive(Debug, Clone, Serialize, Deserialize, Validate, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct WikiSourceIn {
    pub kind: SourceKind,
    /// Where the knowledge comes from (a link, a path, a name), 1-2000 characters, not only
    /// spaces; never a link carrying an access token (422).
    #[serde(rename = "ref")]
    pub reference: Text<1, 2000>,
    /// Up to 200 characters.
    pub title: Option<Text<0, 200>>,
}

/// `ref` must not be only spaces.
pub fn source_rules() -> Value {
    json!({"allOf": [{"properties": {
        "ref": {"type": "string", "pattern": not_blank_pattern()},
    }}]})
}

#[derive(Debug, Serialize, Deserialize, Validate, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ProposeWikiBody {
    pub category: Category,
    /// 1-80 characters, not only spaces; the same title (matched as titles are) in the same
    /// scope is the same entry.
    pub title: Text<1, 80>,
    /// Up to 200 characters.
    pub summary: Option<Text<0, 200>>,
    /// 1-6000 characters (2500 advised), not only spaces.
    pub body: Text<1, 6000>,
    /// At most 12.
    pub tags: Option<List<WikiTagIn, 0, 12>>,
    /// 1-20.
    pub sources: List<WikiSourceIn, 1, 20>,
    /// A project name of your workspace; omit for an entry shared by the organization.
    pub project: Option<Text<1, 200>>,
    /// The id of the canon entry this revises.
    pub revises: Option<Uuid>,
    /// Why, for the reviewer; up to 1000 characters.
    pub note: Option<Text<0, 1000>>,
}

/// `title` and `body` must not be only spaces.
/// wiki_get and kb_entry name the entry by exactly one of `id` and `title`.
pub fn get_rules() -> Value {
    json!({"oneOf": [{"required": ["id"]}, {"required": ["title"]}]})
}

pub fn propose_rules() -> Value {
    json!({"allOf": [{"properties": {
        "title": {"type": "string", "pattern": not_blank_pattern()},
        "body": {"type": "string", "pattern": not_blank_pattern()},
    }}]})
}

#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct ProposeWikiReply {
    /// The entry's id.
    pub id: Uuid,
    pub title: String,
    /// The new version's number.
    pub version: i32,
    /// The new version's status: canon (auto review) or draft (manual review).
    pub status: VersionStatus,
    /// True when the version became canon without a person.
    pub auto: bool,
    /// A new entry.
    pub created: bool,
    /// A new version of an entry already there.
    pub revised: bool,
    /// The wiki_draft decision a person decides (manual review); null otherwise.
    pub decision_id: Option<Uuid>,
}

impl ProposeWikiReply {
    /// The answer to a proposal: the entry and its new version.
    pub fn of(p: Proposed) -> ProposeWikiReply {
        ProposeWikiReply {
            id: p.id,
            title: p.title,
            version: p.version,
            status: p.status,
            auto: p.auto,
            created: p.created,
            revised: !p.created,
            decision_id: p.decision_id,
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Wiki sources and their syncs

/// A wiki source with its sync state.
#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct WikiSyncSourceOut {
    pub id: Uuid,
    /// vault, notion, post, review, agent, person or other.
    pub kind: String,
    pub name: String,
    /// Where the source is (a path or a link without access tokens).
    pub locator: String,
    /// What to take from it.
    pub scope_note: Option<String>,
    /// The project's name; null for a workspace-wide source.
    pub project: Option<String>,
    /// The agent it is assigned to; null when any agent of the workspace may sync it.
    pub agent: Option<String>,
    pub every_hours: i32,
    /// null when never synced.
    pub last_run_at: Option<Utc>,
    pub last_status: Option<SyncStatus>,
    /// Where the next run goes on, as the last run reported it.
    pub cursor: Option<String>,
    /// Due now.
    pub due: bool,
    /// When it is due next; null when never synced (due at once).
    pub next_due_at: Option<Utc>,
}

impl From<SyncSource> for WikiSyncSourceOut {
    fn from(s: SyncSource) -> WikiSyncSourceOut {
        let r = s.row;
        WikiSyncSourceOut {
            id: r.id,
            kind: r.kind,
            name: r.name,
            locator: r.locator,
            scope_note: r.scope_note,
            project: r.project,
            agent: r.agent,
            every_hours: r.every_hours,
            last_run_at: r.last_run_at.map(Utc),
            last_status: r.last_status,
            cursor: r.cursor,
            due: s.due,
            next_due_at: s.next_due_at.map(Utc),
        }
    }
}

#[derive(Debug, Serialize, Deserialize, Validate, ToSchema)]
pub struct WikiSourcesQuery {
    /// true: only the due sources assigned to you or to no agent.
    pub due_only: Option<bool>,
}

#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct WikiSourcesReply {
    pub sources: Vec<WikiSyncSourceOut>,
}

/// A stored count: 0-2147483647.
pub type RunCount = Int<0, 2147483647>;

/// What the run did with the items it read; absent counts are 0.
#[derive(Debug, Default, Serialize, Deserialize, Validate, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct SyncCountsIn {
    pub read: Option<RunCount>,
    pub created: Option<RunCount>,
    pub revised: Option<RunCount>,
    pub unchanged: Option<RunCount>,
    pub skipped: Option<RunCount>,
}

#[derive(Debug, Serialize, Deserialize, Validate, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct WikiSyncBody {
    pub status: SyncStatus,
    /// What the run did, up to 2000 characters; no credentials.
    pub summary: Option<Text<0, 2000>>,
    pub counts: Option<SyncCountsIn>,
    /// Where the next run goes on, up to 2000 characters; absent keeps the stored one, an
    /// empty string clears it; no access tokens.
    pub cursor: Option<Text<0, 2000>>,
}

#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct WikiSyncReply {
    /// The recorded run.
    pub run_id: Uuid,
    pub source: WikiSyncSourceOut,
}

/// The agent's knowledge-base operations (`/api/agent/v1`).
pub mod agent {
    use super::*;
    use fleetdesk_kernel::access::Scope;
    use fleetdesk_kernel::op::{
        HttpMethod::{Get, Post},
        Nothing, OpSpec,
    };
    use fleetdesk_kernel::wire::fields::IdPath;

    fleetdesk_kernel::operations! {
        /// The index of the knowledge base: entries without their body.
        pub WikiIndex(Nothing, WikiIndexQuery, Nothing) -> WikiIndexPage =
            OpSpec::agent(Get, "/wiki", Scope::WikiRead)
                .tool("wiki_index")
                .also_answers(&[404])
                .summary(
                    "The knowledge base's entries: title, category, summary, tags, version; no body",
                )
                .description(
                    "Entries you see (your organization's shared entries and those of your \
                     workspace's projects), newest first (by when the entry was created). `status` \
                     canon (default), draft, rejected, or all (every status but retired). draft \
                     lists everything waiting for a person under manual review: new entries that \
                     are drafts, and canon entries with a draft revision waiting, shown as that \
                     draft (the draft version's title, category, summary, tags and version, status \
                     draft), so you find your pending revisions; canon and all list such an entry \
                     as its canon version. `project` (a project name of your workspace, else 404 \
                     naming project) lists that project's entries plus the shared ones. Paged with \
                     limit 1-200 (default 50) and cursor (`next_cursor`, null on the last page).",
                );

        /// One entry, by id or title.
        pub GetWikiEntry(Nothing, WikiGetQuery, Nothing) -> WikiEntryOut =
            OpSpec::agent(Get, "/wiki/entry", Scope::WikiRead)
                .tool("wiki_get")
                .also_answers(&[404, 422])
                .summary("One knowledge-base entry: full text, sources and versions")
                .description(
                    "Name the entry by `id` or by `title`: exactly one of them, else 422 rejected \
                     naming id (a rule between two parameters, which no OpenAPI parameter list \
                     can state, so it is a rule's refusal, not a 400; the MCP tool states it as a \
                     rule between its arguments and answers invalid params). \
                     A title is matched as titles are (case, full-width forms, traditional or \
                     simplified Chinese and inner spaces aside): with `project` (a project name of \
                     your workspace, else 404 naming project) that project's entry, else the shared \
                     one; without it the shared entry, else the only project entry of that title \
                     (entries of several projects: 422 naming project). Any status but retired. An \
                     entry you do not see is 404. The answer has the entry's shown version (its canon \
                     text when it has one: a draft revision waiting for a person is only listed among \
                     the versions), its sources, and its latest 50 versions, newest first {version, \
                     status canon|draft|rejected|superseded, category, title, summary, note, \
                     proposed_by, decision_id, created_at, decided_at}.",
                );

        /// Search the canon entries.
        pub SearchWiki(Nothing, WikiSearchQuery, Nothing) -> WikiSearchReply =
            OpSpec::agent(Get, "/wiki/search", Scope::WikiRead)
                .tool("wiki_search")
                .also_answers(&[404])
                .summary("Search the canon knowledge base; Chinese in either script, English, mixed")
                .description(
                    "Only canon entries you see (your organization's shared entries and those of \
                     your workspace's projects; `project`, a project name of your workspace (else \
                     404 naming project), narrows to that project plus the shared ones). `q` 1-200 \
                     characters; `limit` 1-30, default 8. The query and the entries are cut into \
                     the same terms: Chinese segmented into words (jieba), traditional and \
                     simplified folded together (貓咪 finds 猫咪), full-width forms and case \
                     folded, English stemmed, stop and question words of either language dropped. \
                     Across languages: a Chinese word also means the English CC-CEDICT gives it, \
                     so an English query finds Chinese entries and a Chinese query English ones; a \
                     glossary entry's lines like `A醇 = 視黃醇` make synonyms. Ranked by the sum, \
                     over the query's words an entry has, of the word's rarity among your entries \
                     (BM25's IDF) times its PostgreSQL ts_rank (title weighs most, then the \
                     English of a Chinese title, then summary and tags, then body); at most 1,000 \
                     candidates per pass (entries with every word, then with the rarest ones); \
                     best first. Where the service runs an embedding model \
                     (FLEETDESK_EMBEDDINGS_URL), the best 30 by words are reordered by words and \
                     meaning together: each gains 1/(1 + its rank by words) and 0.5/(1 + its rank \
                     by the similarity of its vector to the query's), so a question asked in other \
                     words than the entry's finds it; every result still has a word of the query, \
                     and an entry written in the last minute or so ranks by words until its vector \
                     is made. Each result: id, title, category, summary, tags, version, \
                     project, `score` (relevance, higher is better), `snippet` (up to 160 \
                     characters of the body around the best hit, … where the body goes on) and \
                     `matched` (the query's words it has, as written). A \
                     query without any term (only punctuation or stop words) finds nothing: an \
                     empty `results`.",
                );

        /// Propose an entry or a new version of one.
        pub ProposeWiki(Nothing, Nothing, ProposeWikiBody) -> ProposeWikiReply =
            OpSpec::agent(Post, "/wiki", Scope::WikiWrite)
                .tool("propose_wiki")
                .idempotent()
                .created()
                .also_answers(&[404])
                .summary("Propose a knowledge-base entry, or a new version of one")
                .description(
                    "Rules: category (worldview, character, voice, format, audience, strategy, \
                     playbook, lesson, glossary, other); title 1-80 characters, not only spaces; \
                     summary up to 200; body 1-6000 (2500 advised), not only spaces; tags at most \
                     12, each 1-100 characters (spaces around dropped; repeats, matched as titles \
                     are, dropped); sources 1-20, each {kind (vault, notion, post, review, agent, \
                     person, other), ref 1-2000 characters, title up to 200}: a ref that carries \
                     an access token (a query parameter such as token, access_token, key, sig, \
                     signature, auth, code, secret) is 422 naming it; project: a project name of \
                     your workspace (another workspace's: 422; one no workspace of your organization \
                     has: 404), omitted for an \
                     entry shared by the organization; note up to 1000. Same title means same \
                     entry: the title is matched (case, full-width forms, traditional or \
                     simplified Chinese and inner spaces aside) within the scope, the project or \
                     shared, and a proposal with a title already there is a new version of that \
                     entry (whatever its status: a rejected entry comes back). `revises` names a \
                     canon entry you see (unknown: 404 naming revises; not canon: 422): the \
                     revision keeps its entry's project (a different project: 422), and a new \
                     title renames the entry with the new version (a title another entry of the \
                     scope holds: 422 naming title; under manual review the rename waits with \
                     the draft, and resolving it is refused while another entry holds the title). How it lands follows the organization's review: \
                     auto (default) makes the version canon at once (`auto: true`), the entry \
                     shows it and search finds it; manual makes it a draft (`auto: false`) with a \
                     `wiki_draft` decision a person resolves (the version becomes canon) or \
                     dismisses (rejected) through the Personal API decisions; while it waits, an \
                     entry that has a canon version keeps showing and finding that one, and a new \
                     entry is a draft. Each decision decides exactly its own version: a later \
                     proposal for an entry with a draft waiting supersedes that draft and its \
                     decision is dismissed (a note names the superseding version); under manual \
                     review the new version waits for a new decision of its own, opened by you. \
                     201 for a new entry, 200 for a new \
                     version: {id (the entry), title, version, status (canon or draft: the new \
                     version's), auto, created, revised, decision_id (manual review; else null)}. \
                     Do not propose single posts, one-off states, guesses, chat logs, whole \
                     originals or persona facts (use propose_fact).",
                );

        /// The workspace's wiki sources, or those due for you.
        pub ListWikiSources(Nothing, WikiSourcesQuery, Nothing) -> WikiSourcesReply =
            OpSpec::agent(Get, "/wiki/sources", Scope::WikiRead)
                .tool("wiki_sources")
                .summary("Wiki sources of your workspace, or only those due for you to sync")
                .description(
                    "Every source of your workspace (its projects' and the workspace-wide ones), in \
                     name order, each with its sync state and `due`. With due_only true: only the \
                     due sources that are assigned to you or to no agent, never-synced first, then \
                     the longest overdue. A source never synced is due at once (next_due_at null); \
                     after a success or partial run it is due every_hours after that run; after a \
                     failed run it is retried sooner, 1 hour after it (or every_hours when \
                     shorter). Sync skips drafts, brainstorms, to-dos, meeting logs, post status, \
                     prices, contracts, accounting, staff data and personal data, and never puts \
                     share links with access tokens in an entry's sources.",
                );

        /// Report a sync run of a wiki source.
        pub ReportWikiSync(IdPath, Nothing, WikiSyncBody) -> WikiSyncReply =
            OpSpec::agent(Post, "/wiki/sources/{id}/runs", Scope::WikiWrite)
                .tool("report_wiki_sync")
                .tool_path_arg("id", "source_id")
                .idempotent()
                .created_always()
                .summary("Report a sync run of a wiki source")
                .description(
                    "status success, partial or failed; summary up to 2000 characters; counts \
                     read, created, revised, unchanged, skipped (each 0-2147483647, absent 0); \
                     cursor up to 2000 characters, where the next run goes on (absent keeps the \
                     stored cursor, an empty string clears it); a field past its limit is 400 \
                     naming it. A summary or cursor carrying a credential is 422 rejected naming \
                     the field: a fleetdesk key, a link with an access-token parameter (`token`, \
                     `access_token`, `key`, `sig`, `signature`, `auth`, `code`, `pwd`, cloud \
                     signing parameters and similar) or a password (`https://user:pw@host`), or \
                     such a parameter in a bare query string whose value looks like a token (12 or \
                     more letters and digits); prose such as `error code=429` passes. These checks \
                     of the body come first; then the source must be of your workspace (else 404) \
                     and assigned to you or to no agent (another agent's source: 403). The run is \
                     recorded and the source's last_run_at (now), last_status and cursor updated; \
                     the answer (201) carries the run's id and the source with its next_due_at.",
                );
    }
}

/// The person's reads of a workspace's knowledge base (`/api/user/v1`).
pub mod personal {
    use super::*;
    use fleetdesk_kernel::access::PersonalAccess;
    use fleetdesk_kernel::op::{HttpMethod::Get, Nothing, OpSpec};

    fleetdesk_kernel::operations! {
        /// The index of a workspace's knowledge base.
        pub WikiIndex(Nothing, PersonWikiIndexQuery, Nothing) -> WikiIndexPage =
            OpSpec::personal(Get, "/wiki", PersonalAccess::Agency)
                .tool("kb_index")
                .also_answers(&[404])
                .summary(
                    "A workspace's knowledge base: title, category, summary, tags, version; no body",
                )
                .description(concat!(
                    person_scope_rules!(),
                    "As wiki_index for an agent: newest first, `status` canon (default), \
                     draft (waiting for a person, revisions shown as their draft), rejected or all; \
                     limit 1-200 (default 50) and cursor."
                ));

        /// One entry of a workspace's knowledge base.
        pub GetWikiEntry(Nothing, PersonWikiGetQuery, Nothing) -> WikiEntryOut =
            OpSpec::personal(Get, "/wiki/entry", PersonalAccess::Agency)
                .tool("kb_entry")
                .also_answers(&[404, 422])
                .summary("One knowledge-base entry of a workspace: full text, sources and versions")
                .description(concat!(
                    person_scope_rules!(),
                    "As wiki_get for an agent: name the entry by exactly one of `id` and \
                     `title` (else 422 naming id); an entry outside the workspace's view is 404."
                ));

        /// Search a workspace's canon entries.
        pub SearchWiki(Nothing, PersonWikiSearchQuery, Nothing) -> WikiSearchReply =
            OpSpec::personal(Get, "/wiki/search", PersonalAccess::Agency)
                .tool("kb_search")
                .also_answers(&[404])
                .summary("Search a workspace's canon knowledge base; Chinese in either script, English, mixed")
                .description(concat!(
                    person_scope_rules!(),
                    "As wiki_search for an agent: `q` 1-200 characters, `limit` 1-30 \
                     (default 8); traditional and simplified Chinese, full-width forms, case and \
                     English word forms meet, and English and Chinese find each other; best first \
                     (reordered by meaning too where the service runs an embedding model), each \
                     with `score`, `snippet` and `matched`."
                ));
    }
}
