//! The knowledge base: the index, one entry, search and proposals (Agent API). The rules are
//! `fleetdesk_wiki::entry`; search terms and snippets are `fleetdesk_wiki::search`; a proposal
//! runs whole in the adapter's transaction.

use super::common::{CursorInput, WHITE_SPACE_CLASS, not_blank_pattern};
use crate::ctx::Ctx;
use crate::error::ApiError;
use crate::fields::{Cursor, Int, Limit, List, Text, Utc, component_items, limit_or};
use crate::input::{Nothing, Req};
use crate::op::{ErasedOp, HttpMethod, OpSpec, Reply, operation};
use fleetdesk_tenancy::{AgentCaller, MemberCaller, PersonalAccess, Scope};
use fleetdesk_wiki::entry::{
    Category, EntryStatus, Proposal, ProposalError, RawProposal, SEARCH_DEFAULT, Source,
    SourceKind, StatusFilter, VersionStatus, WikiRefusal,
};
use fleetdesk_wiki::ports::{Entry, EntryHead, EntryRef, IndexQuery, Proposed, WikiScope};
use fleetdesk_wiki::service::Hit;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use std::borrow::Cow;
use utoipa::ToSchema;
use utoipa::openapi::{RefOr, Schema};
use uuid::Uuid;
use validator::Validate;

component_items!(WikiSourceIn, WikiTagIn);

pub fn register(all: &mut Vec<Box<dyn ErasedOp>>) {
    use HttpMethod::{Get, Post};
    all.push(operation(
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
            ),
        index,
    ));
    all.push(operation(
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
            ),
        get,
    ));
    all.push(operation(
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
                 folded, English stemmed, a few stop words of either language dropped; an \
                 entry matches when it has any of the query's terms. Ranked by PostgreSQL \
                 full-text search (ts_rank; title weighs most, then summary and tags, then \
                 body); best first. Each result: id, title, category, summary, tags, version, \
                 project, `score` (relevance, higher is better) and `snippet` (up to 160 \
                 characters of the body around the best hit, … where the body goes on). A \
                 query without any term (only punctuation or stop words) finds nothing: an \
                 empty `results`.",
            ),
        search,
    ));
    all.push(operation(
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
            ),
        propose,
    ));
}

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

/// The Personal API's reads of the knowledge base: the same index, entry and search over the
/// entries of a workspace the person names.
pub fn register_personal(all: &mut Vec<Box<dyn ErasedOp>>) {
    use HttpMethod::Get;
    all.push(operation(
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
            )),
        person_index,
    ));
    all.push(operation(
        OpSpec::personal(Get, "/wiki/entry", PersonalAccess::Agency)
            .tool("kb_entry")
            .also_answers(&[404, 422])
            .summary("One knowledge-base entry of a workspace: full text, sources and versions")
            .description(concat!(
                person_scope_rules!(),
                "As wiki_get for an agent: name the entry by exactly one of `id` and \
                 `title` (else 422 naming id); an entry outside the workspace's view is 404."
            )),
        person_get,
    ));
    all.push(operation(
        OpSpec::personal(Get, "/wiki/search", PersonalAccess::Agency)
            .tool("kb_search")
            .also_answers(&[404])
            .summary("Search a workspace's canon knowledge base; Chinese in either script, English, mixed")
            .description(concat!(
                person_scope_rules!(),
                "As wiki_search for an agent: `q` 1-200 characters, `limit` 1-30 \
                 (default 8); traditional and simplified Chinese, full-width forms, case and \
                 English word forms meet; best first, each with `score` and `snippet`."
            )),
        person_search,
    ));
}

/// The scope of the workspace a person named: 404 naming workspace outside their reach.
async fn person_scope(ctx: &Ctx, m: &MemberCaller, workspace: Uuid) -> Result<WikiScope, ApiError> {
    ctx.wiki
        .workspace_scope(m.organization_id, workspace)
        .await?
        .ok_or_else(|| {
            ApiError::not_found("workspace: no such workspace in this organization")
                .with_field("workspace")
        })
}

impl From<WikiRefusal> for ApiError {
    fn from(r: WikiRefusal) -> ApiError {
        let message = r.to_string();
        let e = if r.is_not_found() {
            ApiError::not_found(message)
        } else {
            ApiError::rejected(message)
        };
        match r.field() {
            Some(f) => e.with_field(f),
            None => e,
        }
    }
}

// ---------------------------------------------------------------------------------------------
// The records

#[derive(Debug, Serialize, ToSchema)]
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

fn head_out(h: EntryHead) -> WikiHeadOut {
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

#[derive(Debug, Deserialize, Validate, ToSchema)]
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

#[derive(Debug, Serialize, ToSchema)]
pub struct WikiIndexPage {
    /// Newest first.
    pub entries: Vec<WikiHeadOut>,
    /// Pass as `cursor` for the next page; null on the last page.
    pub next_cursor: Option<Cursor>,
}

async fn index(
    ctx: Ctx,
    agent: AgentCaller,
    req: Req<Nothing, WikiIndexQuery, Nothing>,
) -> Result<Reply<WikiIndexPage>, ApiError> {
    index_of(&ctx, agent.agent_ref().into(), req.query).await
}

#[derive(Debug, Deserialize, Validate, ToSchema)]
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

async fn person_index(
    ctx: Ctx,
    m: MemberCaller,
    req: Req<Nothing, PersonWikiIndexQuery, Nothing>,
) -> Result<Reply<WikiIndexPage>, ApiError> {
    let q = req.query;
    let scope = person_scope(&ctx, &m, q.workspace).await?;
    let query = WikiIndexQuery {
        status: q.status,
        project: q.project,
        limit: q.limit,
        cursor: q.cursor,
    };
    index_of(&ctx, scope, query).await
}

async fn index_of(
    ctx: &Ctx,
    scope: WikiScope,
    q: WikiIndexQuery,
) -> Result<Reply<WikiIndexPage>, ApiError> {
    let filter = q.status.unwrap_or(StatusFilter::Canon);
    let query = IndexQuery {
        statuses: filter.statuses().to_vec(),
        waiting_revisions: filter.lists_waiting_revisions(),
        project: q.project.map(String::from),
        after: q.cursor.map(|c| c.0),
        limit: limit_or(q.limit, 50),
    };
    let page = ctx.wiki.index(scope, &query).await??;
    Ok(Reply::ok(WikiIndexPage {
        entries: page.items.into_iter().map(head_out).collect(),
        next_cursor: page.next.map(Cursor),
    }))
}

// ---------------------------------------------------------------------------------------------
// GET /wiki/entry

#[derive(Debug, Deserialize, Validate, ToSchema)]
pub struct WikiGetQuery {
    /// The entry's id (or give `title`).
    pub id: Option<Uuid>,
    /// The entry's title, 1-80 characters, matched as titles are (or give `id`).
    pub title: Option<Text<1, 80>>,
    /// With `title`: a project name of your workspace (else 404); its entry before the shared
    /// one.
    pub project: Option<Text<1, 200>>,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct WikiSourceOut {
    pub kind: SourceKind,
    #[serde(rename = "ref")]
    pub reference: String,
    pub title: Option<String>,
}

#[derive(Debug, Serialize, ToSchema)]
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

#[derive(Debug, Serialize, ToSchema)]
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

fn source_out(s: Source) -> WikiSourceOut {
    WikiSourceOut {
        kind: s.kind,
        reference: s.reference,
        title: s.title,
    }
}

fn entry_out(e: Entry) -> WikiEntryOut {
    let h = e.head;
    WikiEntryOut {
        id: h.id,
        title: h.title,
        category: h.category,
        summary: h.summary,
        body: e.body,
        tags: h.tags,
        sources: e.sources.into_iter().map(source_out).collect(),
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

async fn get(
    ctx: Ctx,
    agent: AgentCaller,
    req: Req<Nothing, WikiGetQuery, Nothing>,
) -> Result<Reply<WikiEntryOut>, ApiError> {
    get_of(&ctx, agent.agent_ref().into(), req.query).await
}

#[derive(Debug, Deserialize, Validate, ToSchema)]
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

async fn person_get(
    ctx: Ctx,
    m: MemberCaller,
    req: Req<Nothing, PersonWikiGetQuery, Nothing>,
) -> Result<Reply<WikiEntryOut>, ApiError> {
    let q = req.query;
    // The rule between the arguments before any lookup, as for a schema.
    if q.id.is_some() == q.title.is_some() {
        return Err(id_or_title());
    }
    let scope = person_scope(&ctx, &m, q.workspace).await?;
    let query = WikiGetQuery {
        id: q.id,
        title: q.title,
        project: q.project,
    };
    get_of(&ctx, scope, query).await
}

/// Neither or both of id and title: 422 over REST (no parameter list states it); over MCP
/// invalid params, the tool stating it as a rule between its arguments ([`get_rules`]).
fn id_or_title() -> ApiError {
    ApiError::rejected("name the entry by exactly one of id and title")
        .with_field("id")
        .breaking_schema()
}

async fn get_of(
    ctx: &Ctx,
    scope: WikiScope,
    q: WikiGetQuery,
) -> Result<Reply<WikiEntryOut>, ApiError> {
    let entry = match (q.id, q.title) {
        (Some(id), None) => EntryRef::Id(id),
        (None, Some(title)) => EntryRef::Title {
            title: title.into(),
            project: q.project.map(String::from),
        },
        _ => return Err(id_or_title()),
    };
    let e = ctx.wiki.get(scope, &entry).await??;
    Ok(Reply::ok(entry_out(e)))
}

// ---------------------------------------------------------------------------------------------
// GET /wiki/search

#[derive(Debug, Deserialize, Validate, ToSchema)]
pub struct WikiSearchQuery {
    /// What to look for, 1-200 characters: Chinese (either script), English or mixed.
    pub q: Text<1, 200>,
    /// 1-30, default 8.
    pub limit: Option<Limit<30>>,
    /// A project name of your workspace: that project's entries plus the shared ones.
    pub project: Option<Text<1, 200>>,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct WikiHitOut {
    pub id: Uuid,
    pub title: String,
    pub category: Category,
    pub summary: String,
    pub tags: Vec<String>,
    pub version: i32,
    /// The project's name; null for a shared entry.
    pub project: Option<String>,
    /// Relevance (PostgreSQL ts_rank), higher is better.
    pub score: f32,
    /// Up to 160 characters of the body around the best hit.
    #[schema(max_length = 160)]
    pub snippet: String,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct WikiSearchReply {
    /// Best first; at most `limit`.
    pub results: Vec<WikiHitOut>,
}

fn hit_out(h: Hit) -> WikiHitOut {
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
    }
}

async fn search(
    ctx: Ctx,
    agent: AgentCaller,
    req: Req<Nothing, WikiSearchQuery, Nothing>,
) -> Result<Reply<WikiSearchReply>, ApiError> {
    search_of(&ctx, agent.agent_ref().into(), req.query).await
}

#[derive(Debug, Deserialize, Validate, ToSchema)]
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

async fn person_search(
    ctx: Ctx,
    m: MemberCaller,
    req: Req<Nothing, PersonWikiSearchQuery, Nothing>,
) -> Result<Reply<WikiSearchReply>, ApiError> {
    let q = req.query;
    let scope = person_scope(&ctx, &m, q.workspace).await?;
    let query = WikiSearchQuery {
        q: q.q,
        limit: q.limit,
        project: q.project,
    };
    search_of(&ctx, scope, query).await
}

async fn search_of(
    ctx: &Ctx,
    scope: WikiScope,
    q: WikiSearchQuery,
) -> Result<Reply<WikiSearchReply>, ApiError> {
    let hits = ctx
        .wiki
        .search(
            scope,
            q.q.as_str(),
            q.project.map(String::from),
            q.limit.map_or(SEARCH_DEFAULT, Int::get),
        )
        .await??;
    Ok(Reply::ok(WikiSearchReply {
        results: hits.into_iter().map(hit_out).collect(),
    }))
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
        if n == 0 || n > fleetdesk_wiki::entry::TAG_MAX {
            return Err(serde::de::Error::custom(
                "each tag must be 1-100 characters (spaces around it are dropped)",
            ));
        }
        Ok(WikiTagIn(raw))
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

#[derive(Debug, Clone, Deserialize, Validate, ToSchema)]
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

#[derive(Debug, Deserialize, Validate, ToSchema)]
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

#[derive(Debug, Serialize, ToSchema)]
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

fn proposal_error(e: ProposalError) -> ApiError {
    match e {
        ProposalError::Invalid { field, reason } => ApiError::invalid(field, reason),
        ProposalError::Refused { field, reason } => {
            ApiError::rejected(format!("{field} {reason}")).with_field(field)
        }
    }
}

async fn propose(
    ctx: Ctx,
    agent: AgentCaller,
    req: Req<Nothing, Nothing, ProposeWikiBody>,
) -> Result<Reply<ProposeWikiReply>, ApiError> {
    let b = req.body;
    let raw = RawProposal {
        category: b.category,
        title: b.title.into(),
        summary: b.summary.map(String::from),
        body: b.body.into(),
        tags: b
            .tags
            .map(List::into_vec)
            .unwrap_or_default()
            .into_iter()
            .map(|t| t.0)
            .collect(),
        sources: b
            .sources
            .into_iter()
            .map(|s| Source {
                kind: s.kind,
                reference: s.reference.into(),
                title: s.title.map(String::from),
            })
            .collect(),
        project: b.project.map(String::from),
        revises: b.revises,
        note: b.note.map(String::from),
    };
    let proposal = Proposal::parse(raw).map_err(proposal_error)?;
    let p: Proposed = ctx
        .wiki
        .propose(agent.agent_ref(), &proposal, jiff::Timestamp::now())
        .await??;
    Ok(Reply::created_if(
        p.created,
        ProposeWikiReply {
            id: p.id,
            title: p.title,
            version: p.version,
            status: p.status,
            auto: p.auto,
            created: p.created,
            revised: !p.created,
            decision_id: p.decision_id,
        },
    ))
}
