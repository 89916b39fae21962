//! The knowledge base: the index, one entry, search ranked by PostgreSQL (`ts_rank` over the
//! generated `search` tsvector, GIN-indexed), a proposal landing in one transaction, a person's
//! move on a `wiki_draft` decision, and the wiki entries a persona's cast links to.
//!
//! Scope: an agent sees its organization's entries that are shared (no project) or of a
//! project of its workspace.

use crate::db::{PgStore, Ts, Tx, column};
use crate::rows::{Json, Stored};
use crate::schema::{decisions, organizations, projects, wiki_entries, wiki_versions, workspaces};
use diesel::prelude::*;
use diesel_async::RunQueryDsl;
use fleetdesk_decisions::rules::{Action, Move as DecisionMove};
use fleetdesk_decisions::rules::{DecisionRefusal, dismissed_by_service};
use fleetdesk_decisions::{DecisionStatus, NewDecision};
use fleetdesk_kernel::{AgentRef, BoxFuture, Page};
use fleetdesk_tenancy::tenant_file::WikiReview;
use fleetdesk_wiki::entry;
use fleetdesk_wiki::entry::{
    CastCandidate, Category, DraftVersion, EntryChange, EntryStatus, Existing, Landing, Pending,
    Proposal, Shown, Source, Superseded, TitleMatch, VERSIONS_LISTED, VersionStatus, WikiRefusal,
    cast_links, check_rename, decide, find_project, land, pick_by_title,
};
use fleetdesk_wiki::meaning::Embedding;
use fleetdesk_wiki::ports::*;
use fleetdesk_wiki::query::{CANDIDATES, Counts, RERANKED};
use fleetdesk_wiki::search::{RANK_NORMALIZATION, RANK_WEIGHTS, title_key};
use jiff::Timestamp;
use serde_json::Value;
use uuid::Uuid;

macro_rules! head_sql {
    ($($tail:expr),*) => {
        concat!(
            "SELECT e.id, e.title, e.category, e.summary, e.tags, e.version, e.status, \
                    pr.name AS project, e.created_at, e.updated_at",
            $($tail),*
        )
    };
}

/// The entries an agent sees: its organization's (`$1`), shared or of a project of its
/// workspace (`$2`); the one place this scope is written. An optional join goes before the
/// `WHERE`; the statement goes on with `AND …`.
macro_rules! visible {
    ($($join:expr)?) => {
        concat!(
            " FROM wiki_entries e LEFT JOIN projects pr ON pr.id = e.project_id ",
            $($join, " ",)?
            "WHERE e.organization_id = $1 AND (e.project_id IS NULL OR pr.workspace_id = $2) "
        )
    };
}

/// The project filter `$3` (a project of the workspace, or null for none): that project's
/// entries plus the shared ones.
macro_rules! in_project {
    () => {
        "AND ($3::uuid IS NULL OR e.project_id IS NULL OR e.project_id = $3) "
    };
}

/// A page of the index: statuses `$4`, the project `$3` (with the shared entries), newest
/// first after `($5, $6)`. With `$8` (the filter lists waiting revisions), an entry with a
/// draft version (`$9`) waiting is listed too, shown as that draft (its title, category, summary,
/// tags, version and status draft): one row per entry, so paging stays by the entry's
/// `(created_at, id)`.
const INDEX: &str = concat!(
    "SELECT e.id, coalesce(d.title, e.title) AS title, \
            coalesce(d.category, e.category) AS category, \
            coalesce(d.summary, e.summary) AS summary, coalesce(d.tags, e.tags) AS tags, \
            coalesce(d.version, e.version) AS version, coalesce(d.status, e.status) AS status, \
            pr.name AS project, e.created_at, e.updated_at",
    visible!(
        "LEFT JOIN LATERAL ( \
             SELECT v.title, v.category, v.summary, v.tags, v.version, v.status \
             FROM wiki_versions v \
             WHERE $8::bool AND v.entry_id = e.id AND v.status = $9 \
             ORDER BY v.version DESC LIMIT 1 \
         ) d ON true"
    ),
    in_project!(),
    "AND (e.status = ANY($4) OR d.version IS NOT NULL) \
     AND ($5::timestamptz IS NULL OR (e.created_at, e.id) < ($5, $6)) \
     ORDER BY e.created_at DESC, e.id DESC \
     LIMIT $7"
);

/// One entry by id (`$3`), any status but retired (`$4`).
const ONE: &str = head_sql!(
    ", e.body, e.sources",
    visible!(),
    "AND e.id = $3 AND e.status <> $4"
);

/// The entries of a title (`$3`, as matched), any status but retired (`$4`).
const BY_TITLE: &str = concat!(
    "SELECT e.id, pr.name AS project",
    visible!(),
    "AND e.title_key = $3 AND e.status <> $4"
);

/// An entry's latest versions, newest first.
const VERSIONS: &str = r#"
SELECT v.version, v.status, v.category, v.title, v.summary, v.note, a.name AS proposed_by,
       v.decision_id, v.created_at, v.decided_at
FROM wiki_versions v LEFT JOIN agents a ON a.id = v.proposed_by_agent
WHERE v.entry_id = $1
ORDER BY v.version DESC
LIMIT $2
"#;

/// The facts a search is planned by (`fleetdesk_wiki::query`), among the entries the agent
/// sees in the statuses `$3`: how many there are, and how many have each of the words `$5`
/// (tsquery texts, in order), each count stopping at `$6`; and the synonym groups of the
/// entries whose synonyms share a term with `$4`, with the organization's own (its tenant
/// file's `wiki_synonyms`) when one of them does.
const SEARCH_FACTS: &str = concat!(
    "SELECT (SELECT count(*) FROM (SELECT 1",
    visible!(),
    "AND e.status = ANY($3) LIMIT $6) n) AS entries, \
     ARRAY(SELECT (SELECT count(*) FROM (SELECT 1",
    visible!(),
    "AND e.status = ANY($3) AND e.search @@ to_tsquery('simple', w.q) LIMIT $6) c) \
           FROM unnest($5::text[]) WITH ORDINALITY AS w(q, i) ORDER BY w.i) AS having, \
     ARRAY(SELECT DISTINCT g FROM (SELECT g",
    visible!("CROSS JOIN unnest(e.aliases) AS g"),
    "AND e.status = ANY($3) AND e.alias_terms <> '{}' AND e.alias_terms && $4::text[] \
           UNION ALL \
           SELECT unnest(o.wiki_aliases) FROM organizations o \
           WHERE o.id = $1 AND o.wiki_alias_terms && $4::text[]) AS s(g)) AS synonyms"
);

/// A search by its plan (`fleetdesk_wiki::query::Plan`): in the statuses `$4`, the project
/// `$3` (with the shared entries), the candidates are at most `$12` entries that have every
/// word (`$7`), and when those are fewer than the page (`$9`) at most `$12` more that have
/// one of the rarest (`$8`), each ranked at once by `ts_rank` (weights `$10`, normalization
/// `$11`) of all the words (`$16`); the best `$17` of them are scored by the sum over the
/// words `$5` of its weight (`$6`) times the better `ts_rank` of its own term (`$13`) and of
/// its other names (`$14`, empty for none) times their scale (`$15`), with the places of the
/// words it has (from 1); best first, at most `$9`.
const SEARCH: &str = concat!(
    "WITH every_match AS MATERIALIZED (SELECT e.id, \
                         ts_rank($10::float4[], e.search, to_tsquery('simple', $16), $11) AS r",
    visible!(),
    in_project!(),
    "AND e.status = ANY($4) AND e.search @@ to_tsquery('simple', $7)), \
     with_every AS (SELECT * FROM every_match LIMIT $12), \
     rarest_match AS MATERIALIZED (SELECT e.id, \
                     ts_rank($10::float4[], e.search, to_tsquery('simple', $16), $11) AS r",
    visible!(),
    in_project!(),
    "AND e.status = ANY($4) AND e.search @@ to_tsquery('simple', $8) \
          AND (SELECT count(*) FROM with_every) < $9), \
     with_rarest AS (SELECT * FROM rarest_match LIMIT $12), \
     best AS (SELECT id FROM (SELECT * FROM with_every UNION ALL SELECT * FROM with_rarest) c \
              GROUP BY id ORDER BY max(r) DESC, id LIMIT $17), \
     w AS (SELECT to_tsquery('simple', q) AS q, weight, to_tsquery('simple', own) AS own, \
                  CASE WHEN others <> '' THEN to_tsquery('simple', others) END AS others, \
                  scale, i \
           FROM unnest($5::text[], $6::float4[], $13::text[], $14::text[], $15::float4[]) \
                WITH ORDINALITY AS w(q, weight, own, others, scale, i)) ",
    head_sql!(
        ", e.body, s.score, s.matched, \
         CASE WHEN e.embedded_version = e.version AND e.embedding_model = $18 \
              THEN e.embedding END AS embedding \
         FROM best c \
         JOIN wiki_entries e ON e.id = c.id LEFT JOIN projects pr ON pr.id = e.project_id \
         CROSS JOIN LATERAL ( \
             SELECT coalesce(sum(w.weight * greatest( \
                        ts_rank($10::float4[], e.search, w.own, $11), \
                        w.scale * ts_rank($10::float4[], e.search, w.others, $11))) \
                        FILTER (WHERE e.search @@ w.q), 0)::float4 AS score, \
                    coalesce(array_agg(w.i::int4 ORDER BY w.i) FILTER (WHERE e.search @@ w.q), \
                             '{}') AS matched \
             FROM w) s \
         ORDER BY s.score DESC, e.updated_at DESC, e.id \
         LIMIT $9"
    )
);

/// An entry as a proposal needs it, any status but retired, found by the condition `$tail`
/// adds: whether it has a canon version (`$3`), its latest version, and its waiting draft
/// version (`$4`) if any. Each finder's condition is one an index answers exactly whatever the
/// plan, so `retired` is written as the title index's predicate writes it (a bound status does
/// not prove the partial index's `status <> 'retired'`): the generic plan a cached statement
/// falls back to read every entry of the organization with one `id = $6 OR title …` condition
/// and a bound status (28 ms per call over 25,000 entries, twice per proposal, so the write
/// slowed as the knowledge base grew).
macro_rules! existing_sql {
    ($tail:expr) => {
        concat!(
            "SELECT e.id, e.status, e.title, e.title_key, e.project_id, pr.name AS project, \
                    EXISTS (SELECT 1 FROM wiki_versions c \
                            WHERE c.entry_id = e.id AND c.status = $3) AS has_canon, \
                    coalesce((SELECT max(m.version) FROM wiki_versions m \
                              WHERE m.entry_id = e.id), 0) AS last_version, \
                    pend.version, pend.decision_id",
            visible!(
                "LEFT JOIN LATERAL ( \
                     SELECT v.version, v.decision_id FROM wiki_versions v \
                     WHERE v.entry_id = e.id AND v.status = $4 \
                     ORDER BY v.version DESC LIMIT 1 \
                 ) pend ON true"
            ),
            "AND e.status <> 'retired' AND ",
            $tail
        )
    };
}

/// The entry of id `$5` (the one `revises` names).
const EXISTING_BY_ID: &str = existing_sql!("e.id = $5");

/// The shared entry of title key `$5`.
const EXISTING_SHARED: &str = existing_sql!("e.project_id IS NULL AND e.title_key = $5");

/// The entry of title key `$5` in the project `$6`.
const EXISTING_IN_PROJECT: &str = existing_sql!("e.project_id = $6 AND e.title_key = $5");

/// Serializes the proposals of one title in one scope (a new entry has no row to lock yet).
const TITLE_LOCK: &str = "SELECT pg_advisory_xact_lock(hashtextextended($1, 0))";

/// The same lock without waiting (a person's move, which holds the decision a proposal may be
/// waiting for, must never wait for a title).
const TITLE_TRY_LOCK: &str = "SELECT pg_try_advisory_xact_lock(hashtextextended($1, 0)) AS locked";

/// Locks the entry of the version a `wiki_draft` decision (`$1`) decides.
const LOCK_DRAFT_ENTRY: &str = r#"
SELECT e.id FROM wiki_entries e
WHERE e.id = (SELECT v.entry_id FROM wiki_versions v WHERE v.decision_id = $1
              ORDER BY v.version DESC LIMIT 1)
FOR UPDATE
"#;

/// The version a `wiki_draft` decision decides, whatever its status, with its entry's status
/// and whether the entry has a canon version (`$2`).
const DRAFT_OF: &str = r#"
SELECT v.entry_id, v.version, v.status, v.category, v.title, v.summary, v.body, v.tags,
       v.sources, e.status AS entry_status, e.organization_id, e.project_id, e.title_key,
       EXISTS (SELECT 1 FROM wiki_versions c
               WHERE c.entry_id = v.entry_id AND c.status = $2) AS has_canon
FROM wiki_versions v JOIN wiki_entries e ON e.id = v.entry_id
WHERE v.decision_id = $1
ORDER BY v.version DESC
LIMIT 1
"#;

/// The entries a persona's cast may link to: those its scope sees (shared, or of the
/// persona's project) titled (as matched) one of `$2`; `fleetdesk_wiki::entry::cast_link`
/// chooses among them.
const CAST_CANDIDATES: &str = r#"
SELECT e.id, e.title, e.title_key, e.category, e.status,
       e.project_id IS NOT NULL AS in_project
FROM personas pe
JOIN workspaces w ON w.id = pe.workspace_id
JOIN wiki_entries e ON e.organization_id = w.organization_id
WHERE pe.id = $1 AND e.title_key = ANY($2)
  AND (e.project_id IS NULL OR e.project_id = pe.project_id)
"#;

/// Up to `$2` entries whose terms an earlier pipeline wrote (`terms_version` under `$1`), locked
/// without waiting: another instance starting at once indexes the others.
const STALE_TERMS: &str = r#"
SELECT id, category, title, summary, tags, body FROM wiki_entries
WHERE terms_version < $1
ORDER BY id
LIMIT $2
FOR UPDATE SKIP LOCKED
"#;

/// Writes the terms of the entries `$1` (`$2`-`$5` in the same order) and the version `$6` of
/// the pipeline that made them; the entries' own fields, `updated_at` included, stay.
const WRITE_TERMS: &str = r#"
UPDATE wiki_entries e
SET terms_title = t.title, terms_summary = t.summary, terms_pivot = t.pivot,
    terms_body = t.body, terms_version = $6,
    aliases = coalesce(string_to_array(t.aliases, E'\n'), '{}'),
    alias_terms = coalesce(string_to_array(t.alias_terms, ' '), '{}')
FROM unnest($1::uuid[], $2::text[], $3::text[], $4::text[], $5::text[], $7::text[], $8::text[])
    AS t(id, title, summary, pivot, body, aliases, alias_terms)
WHERE e.id = t.id
"#;

/// Up to `$1` entries, any status but retired, without a vector of their version (the
/// `wiki_entries_unembedded` index, whose predicate this writes as it does), the least recently
/// changed first.
const UNEMBEDDED: &str = r#"
SELECT id, version, title, summary, tags, body FROM wiki_entries
WHERE embedded_version IS DISTINCT FROM version AND status <> 'retired'
ORDER BY updated_at, id
LIMIT $1
"#;

/// Stores the vectors `$4` of the entries `$2` made from their versions `$3` by the model `$1`,
/// where the entry is still at that version; `updated_at` stays.
const STORE_EMBEDDINGS: &str = r#"
UPDATE wiki_entries e
SET embedding = m.embedding, embedded_version = m.version, embedding_model = $1
FROM unnest($2::uuid[], $3::int4[], $4::bytea[]) AS m(id, version, embedding)
WHERE e.id = m.id AND e.version = m.version
"#;

/// Forgets the vectors another model than `$1` made.
const FORGET_OTHER_MODELS: &str = r#"
UPDATE wiki_entries
SET embedding = NULL, embedded_version = NULL, embedding_model = NULL
WHERE embedding_model <> $1
"#;

/// How many entries one transaction of [`PgStore::index_wiki_again`] indexes.
const REINDEX_BATCH: i64 = 200;

statements!(
    STALE_TERMS => StaleRow,
    WRITE_TERMS,
    UNEMBEDDED => EntryTextRow,
    STORE_EMBEDDINGS,
    FORGET_OTHER_MODELS,
    TITLE_TRY_LOCK => LockedRow,
    INDEX => HeadRow,
    ONE => OneRow,
    BY_TITLE => TitleRow,
    VERSIONS => VersionRow,
    SEARCH => FoundRow,
    SEARCH_FACTS => FactsRow,
    EXISTING_BY_ID => ExistingRow,
    EXISTING_SHARED => ExistingRow,
    EXISTING_IN_PROJECT => ExistingRow,
    TITLE_LOCK,
    LOCK_DRAFT_ENTRY,
    DRAFT_OF => DraftRow,
    CAST_CANDIDATES => CandidateRow,
);

// ---------------------------------------------------------------------------------------------
// Rows

row! {
    struct StaleRow {
        id: Uuid,
        category: Stored<Category>,
        title: String,
        summary: String,
        tags: Vec<String>,
        body: String,
    }
}

row! {
    struct HeadRow into EntryHead {
        id: Uuid,
        title: String,
        category: Stored<Category>,
        summary: String,
        tags: Vec<String>,
        version: i32,
        status: Stored<EntryStatus>,
        project: Option<String>,
        created_at: Ts,
        updated_at: Ts,
    }
}

row! {
    struct OneRow {
        #[diesel(embed)]
        head: HeadRow,
        body: String,
        sources: Json<Vec<Source>>,
    }
}

row! {
    struct FoundRow into Found {
        #[diesel(embed)]
        head: HeadRow,
        body: String,
        score: f32,
        matched: Vec<i32>,
        embedding: Option<Vec<u8>>,
    }
}

row! {
    struct EntryTextRow into EntryText {
        id: Uuid,
        version: i32,
        title: String,
        summary: String,
        tags: Vec<String>,
        body: String,
    }
}

row! {
    struct FactsRow {
        entries: i64,
        having: Vec<i64>,
        synonyms: Vec<String>,
    }
}

impl From<FactsRow> for SearchFacts {
    fn from(r: FactsRow) -> SearchFacts {
        SearchFacts {
            synonyms: r.synonyms,
            counts: Counts {
                entries: r.entries,
                having: r.having,
            },
        }
    }
}

row! {
    struct TitleRow into TitleMatch {
        id: Uuid,
        project: Option<String>,
    }
}

row! {
    struct VersionRow into VersionRecord {
        version: i32,
        status: Stored<VersionStatus>,
        category: Stored<Category>,
        title: String,
        summary: String,
        note: Option<String>,
        proposed_by: Option<String>,
        decision_id: Option<Uuid>,
        created_at: Ts,
        decided_at: Option<Ts>,
    }
}

row! {
    struct ExistingRow into Existing {
        id: Uuid,
        status: Stored<EntryStatus>,
        title: String,
        title_key: String,
        project_id: Option<Uuid>,
        project: Option<String>,
        has_canon: bool,
        last_version: i32,
        /// None when no draft version waits.
        #[diesel(embed)]
        pending: Option<PendingRow>,
    }
}

row! {
    struct PendingRow into Pending {
        version: i32,
        decision_id: Option<Uuid>,
    }
}

row! {
    struct DraftRow into DraftVersion {
        entry_id: Uuid,
        version: i32,
        status: Stored<VersionStatus>,
        category: Stored<Category>,
        title: String,
        summary: String,
        body: String,
        tags: Vec<String>,
        sources: Json<Vec<Source>>,
        entry_status: Stored<EntryStatus>,
        organization_id: Uuid,
        project_id: Option<Uuid>,
        title_key: String,
        has_canon: bool,
    }
}

row! {
    struct CandidateRow into CastCandidate {
        id: Uuid,
        title: String,
        title_key: String,
        category: Stored<Category>,
        status: Stored<EntryStatus>,
        in_project: bool,
    }
}

selectable! {
    #[diesel(table_name = workspaces)]
    struct ScopeRow into WikiScope {
        organization_id: Uuid,
        #[diesel(column_name = id)]
        workspace_id: Uuid,
    }
}

fn sources_json(s: &[Source]) -> Value {
    serde_json::to_value(s).expect("sources are plain JSON")
}

/// The project a filter names, among the agent's workspace's projects.
async fn project_of(
    conn: Tx<'_>,
    scope: WikiScope,
    named: Option<&str>,
) -> anyhow::Result<Result<Option<Uuid>, WikiRefusal>> {
    let Some(name) = named else {
        return Ok(Ok(None));
    };
    let projects: Vec<(Uuid, String)> = projects::table
        .filter(projects::workspace_id.eq(scope.workspace_id))
        .select((projects::id, projects::name))
        .load(conn)
        .await?;
    Ok(find_project(Some(name), &projects))
}

// ---------------------------------------------------------------------------------------------
// A proposal

async fn existing(
    conn: Tx<'_>,
    scope: WikiScope,
    by: Result<Uuid, (&str, Option<Uuid>)>,
) -> anyhow::Result<Option<Existing>> {
    let (org, workspace) = (scope.organization_id, scope.workspace_id);
    let canon = VersionStatus::Canon.as_str();
    let draft = VersionStatus::Draft.as_str();
    let found = match by {
        Ok(id) => sql!(EXISTING_BY_ID, org, workspace, canon, draft, id),
        Err((key, None)) => sql!(EXISTING_SHARED, org, workspace, canon, draft, key),
        Err((key, Some(project))) => {
            sql!(
                EXISTING_IN_PROJECT,
                org,
                workspace,
                canon,
                draft,
                key,
                project
            )
        }
    };
    let row: Option<ExistingRow> = found.get_result(conn).await.optional()?;
    Ok(row.map(Into::into))
}

row! {
    struct LockedRow {
        locked: bool,
    }
}

/// Under the title's advisory lock, the locks that follow it, in the one order every writer of
/// an entry takes them: the waiting draft's open decision (as a person's move locks it first),
/// then the entry's row, of the entry the title names; answers the entry as it stands under
/// them.
async fn lock_found(
    conn: Tx<'_>,
    scope: WikiScope,
    key: &str,
    project: Option<Uuid>,
) -> anyhow::Result<Option<Existing>> {
    let Some(seen) = existing(conn, scope, Err((key, project))).await? else {
        return Ok(None);
    };
    if let Some(d) = seen.waiting_decision() {
        decisions::table
            .filter(decisions::id.eq(d))
            .for_update()
            .select(decisions::id)
            .first::<Uuid>(conn)
            .await?;
    }
    wiki_entries::table
        .filter(wiki_entries::id.eq(seen.id))
        .for_update()
        .select(wiki_entries::id)
        .first::<Uuid>(conn)
        .await?;
    existing(conn, scope, Ok(seen.id)).await
}

async fn propose(
    conn: Tx<'_>,
    agent: AgentRef,
    p: &Proposal,
    now: Timestamp,
) -> anyhow::Result<Result<Proposed, WikiRefusal>> {
    let review: Stored<WikiReview> = organizations::table
        .find(agent.organization_id)
        .select(organizations::wiki_review)
        .first(conn)
        .await?;
    let manual = review.0 == WikiReview::Manual;
    let wiki = WikiScope::from(agent);
    let project_id = match project_of(conn, wiki, p.project.as_deref()).await? {
        Ok(id) => id,
        Err(WikiRefusal::ProjectUnknown(name)) => {
            let miss = crate::projects::miss(conn, agent.organization_id, &name).await?;
            return Ok(Err(WikiRefusal::project_miss(name, miss)));
        }
        Err(r) => return Ok(Err(r)),
    };
    // The scope a proposal lands in: the revised entry's, else the one it names.
    let revised = match p.revises {
        Some(id) => match existing(conn, wiki, Ok(id)).await? {
            Some(e) => Some(e),
            None => return Ok(Err(WikiRefusal::RevisesNotFound)),
        },
        None => None,
    };
    let (scope, project_name) = p.scope(project_id, revised.as_ref());
    // The entry's title and the proposal's are locked (in one order); a revision under a new
    // title renames its entry, and the new one must name no other entry of the scope.
    let key = p.found_by(revised.as_ref());
    for lock in entry::title_locks(agent.organization_id, scope, &[key, &p.title_key]) {
        sql!(TITLE_LOCK, lock).execute(conn).await?;
    }
    if let Some(e) = p.renames(revised.as_ref()) {
        let holder = existing(conn, wiki, Err((&p.title_key, scope))).await?;
        if let Err(r) = check_rename(e, holder.as_ref()) {
            return Ok(Err(r));
        }
    }
    let found = lock_found(conn, wiki, key, scope).await?;
    if let Err(r) = entry::check_revised_found(p.revises, found.as_ref()) {
        return Ok(Err(r));
    }
    let landing = match land(p, project_id, found.as_ref(), manual) {
        Ok(l) => l,
        Err(r) => return Ok(Err(r)),
    };
    let entry_id = write_landing(conn, agent, p, scope, found.as_ref(), &landing, now).await?;
    let opening = landing.opening(entry_id, p, found.as_ref(), project_name.as_deref());
    let decision_id = write_decision(conn, agent, &landing, opening, now).await?;
    diesel::insert_into(wiki_versions::table)
        .values((
            wiki_versions::entry_id.eq(entry_id),
            wiki_versions::version.eq(landing.version),
            wiki_versions::category.eq(p.category.as_str()),
            wiki_versions::title.eq(&p.title),
            wiki_versions::summary.eq(&p.summary),
            wiki_versions::body.eq(&p.body),
            wiki_versions::tags.eq(&p.tags),
            wiki_versions::sources.eq(sources_json(&p.sources)),
            wiki_versions::note.eq(&p.note),
            wiki_versions::status.eq(landing.status.as_str()),
            wiki_versions::proposed_by_agent.eq(agent.agent_id),
            wiki_versions::decision_id.eq(decision_id),
            wiki_versions::decided_at.eq(landing.decided_at(now).map(Ts::from)),
        ))
        .execute(conn)
        .await?;
    Ok(Ok(landing.proposed(entry_id, &p.title, decision_id)))
}

/// Writes the entry's row and retires the versions the new one replaces; answers the entry's
/// id.
async fn write_landing(
    conn: Tx<'_>,
    agent: AgentRef,
    p: &Proposal,
    scope: Option<Uuid>,
    found: Option<&Existing>,
    landing: &Landing,
    now: Timestamp,
) -> anyhow::Result<Uuid> {
    let entry_id = match (found, landing.show) {
        (None, show) => {
            let shown = p.shown(landing.version, show.unwrap_or(EntryStatus::Draft));
            diesel::insert_into(wiki_entries::table)
                .values((
                    ShownRow::of(&shown),
                    wiki_entries::organization_id.eq(agent.organization_id),
                    wiki_entries::project_id.eq(scope),
                    wiki_entries::created_by_agent.eq(agent.agent_id),
                ))
                .returning(wiki_entries::id)
                .get_result(conn)
                .await?
        }
        (Some(e), Some(status)) => {
            show_version(conn, e.id, &p.shown(landing.version, status), now).await?;
            e.id
        }
        (Some(e), None) => e.id,
    };
    for superseded in landing.superseded() {
        supersede(conn, entry_id, superseded).await?;
    }
    Ok(entry_id)
}

/// The versions of `entry` a write supersedes become superseded.
async fn supersede(conn: Tx<'_>, entry: Uuid, superseded: Superseded) -> anyhow::Result<()> {
    let mut q = diesel::update(wiki_versions::table)
        .filter(wiki_versions::entry_id.eq(entry))
        .filter(wiki_versions::status.eq(superseded.status.as_str()))
        .into_boxed();
    if let Some(v) = superseded.version {
        q = q.filter(wiki_versions::version.eq(v));
    }
    q.set(wiki_versions::status.eq(VersionStatus::Superseded.as_str()))
        .execute(conn)
        .await?;
    Ok(())
}

/// The columns of what an entry's row shows ([`Shown`]): a new entry is inserted with them,
/// and a version shown later is written over them.
#[derive(Insertable, AsChangeset)]
#[diesel(table_name = wiki_entries)]
struct ShownRow<'a> {
    title: &'a str,
    title_key: &'a str,
    category: &'static str,
    summary: &'a str,
    body: &'a str,
    tags: &'a [String],
    sources: Value,
    version: i32,
    status: &'static str,
    terms_title: &'a str,
    terms_summary: &'a str,
    terms_pivot: &'a str,
    terms_body: &'a str,
    terms_version: i16,
    folded_tags: &'a [String],
    aliases: &'a [String],
    alias_terms: &'a [String],
}

impl<'a> ShownRow<'a> {
    fn of(s: &'a Shown<'a>) -> Self {
        ShownRow {
            title: s.title,
            title_key: &s.title_key,
            category: s.category.as_str(),
            summary: s.summary,
            body: s.body,
            tags: s.tags,
            sources: sources_json(s.sources),
            version: s.version,
            status: s.status.as_str(),
            terms_title: &s.terms.title,
            terms_summary: &s.terms.summary,
            terms_pivot: &s.terms.pivot,
            terms_body: &s.terms.body,
            terms_version: fleetdesk_wiki::entry::TERMS_VERSION,
            folded_tags: &s.terms.folded_tags,
            aliases: &s.terms.aliases,
            alias_terms: &s.terms.alias_terms,
        }
    }
}

async fn show_version(conn: Tx<'_>, entry: Uuid, s: &Shown<'_>, now: Timestamp) -> QueryResult<()> {
    diesel::update(wiki_entries::table.filter(wiki_entries::id.eq(entry)))
        .set((ShownRow::of(s), wiki_entries::updated_at.eq(Ts::from(now))))
        .execute(conn)
        .await?;
    Ok(())
}

/// The decision of the draft a proposal supersedes is dismissed (with a note naming the new
/// version); a manual proposal opens its own `wiki_draft` decision, opened by the proposing
/// agent in its workspace: each decision decides exactly its own version.
async fn write_decision(
    conn: Tx<'_>,
    agent: AgentRef,
    landing: &Landing,
    opening: Option<NewDecision>,
    now: Timestamp,
) -> anyhow::Result<Option<Uuid>> {
    if let Some((d, text)) = landing.dismissed() {
        let mv = DecisionMove::new(Action::Dismiss, None, None, None);
        // Only a draft's decision still open is superseded: one handled waits for a person.
        let close = dismissed_by_service(&text, now);
        let at = jiff_diesel::Timestamp::from(close.at);
        diesel::update(
            decisions::table
                .filter(decisions::id.eq(d))
                .filter(decisions::status.eq(DecisionStatus::Open.as_str())),
        )
        .set((
            decisions::status.eq(close.status.as_str()),
            decisions::decided_move.eq(mv.to_json()),
            decisions::decided_by.eq(close.decided_by.to_json()),
            decisions::decided_at.eq(at),
            decisions::notes.eq(decisions::notes.concat(&close.notes)),
            decisions::updated_at.eq(at),
        ))
        .execute(conn)
        .await?;
    }
    let Some(opening) = opening else {
        return Ok(None);
    };
    let id = crate::decisions::open_decision(conn, agent, &opening).await?;
    Ok(Some(id))
}

// ---------------------------------------------------------------------------------------------
// A person's move on a wiki_draft decision (the decisions adapter calls this in its
// transaction, the decision already locked)

/// Resolve makes the decision's draft version canon (the entry shows it; the former canon
/// version is superseded); dismiss rejects it (the entry keeps its canon version, or becomes
/// rejected without one). A version that no longer waits, or a retired entry, is refused
/// (`fleetdesk_wiki::entry::decide`). Tells `wiki.draft_decided` to the decision's workspace.
pub(crate) async fn decide_draft(
    conn: Tx<'_>,
    decision: Uuid,
    workspace_id: Uuid,
    resolve: bool,
    now: Timestamp,
) -> anyhow::Result<Result<(), DecisionRefusal>> {
    // The decision is locked; then its entry, as a proposal locks them.
    sql!(LOCK_DRAFT_ENTRY, decision).execute(conn).await?;
    let draft: Option<DraftVersion> = sql!(DRAFT_OF, decision, VersionStatus::Canon.as_str())
        .get_result::<DraftRow>(conn)
        .await
        .optional()?
        .map(Into::into);
    // Resolving a draft that renames its entry: the new title's lock, tried (a proposal holding
    // it may wait for this decision), and the entry holding the title now.
    let mut title_taken = None;
    let mut title_busy = false;
    let renames = draft.as_ref().filter(|_| resolve);
    if let Some((d, key)) = renames.and_then(|d| Some((d, d.renamed_key()?))) {
        let lock = entry::title_lock_key(d.organization_id, d.project_id, &key);
        let row: LockedRow = sql!(TITLE_TRY_LOCK, lock).get_result(conn).await?;
        title_busy = !row.locked;
        if !title_busy {
            title_taken = wiki_entries::table
                .filter(wiki_entries::organization_id.eq(d.organization_id))
                .filter(wiki_entries::project_id.is_not_distinct_from(d.project_id))
                .filter(wiki_entries::title_key.eq(&key))
                .filter(wiki_entries::status.ne(EntryStatus::Retired.as_str()))
                .filter(wiki_entries::id.ne(d.entry_id))
                .select(wiki_entries::title)
                .first::<String>(conn)
                .await
                .optional()?;
        }
    }
    let state = draft.as_ref().map(|d| d.state(title_taken, title_busy));
    let decided = match decide(resolve, state.as_ref()) {
        Ok(d) => d,
        Err(r) => return Ok(Err(DecisionRefusal::WikiDraftGone(r))),
    };
    let Some(d) = draft else {
        anyhow::bail!("decide answered for a decision without a version");
    };
    if decided.supersede_canon {
        supersede(conn, d.entry_id, Superseded::CANON).await?;
    }
    diesel::update(
        wiki_versions::table
            .filter(wiki_versions::entry_id.eq(d.entry_id))
            .filter(wiki_versions::version.eq(d.version)),
    )
    .set((
        wiki_versions::status.eq(decided.version_status.as_str()),
        wiki_versions::decided_at.eq(Ts::from(now)),
    ))
    .execute(conn)
    .await?;
    match decided.entry {
        EntryChange::ShowCanon => show_version(conn, d.entry_id, &d.shown(), now).await?,
        EntryChange::Reject => {
            diesel::update(wiki_entries::table.find(d.entry_id))
                .set((
                    wiki_entries::status.eq(EntryStatus::Rejected.as_str()),
                    wiki_entries::updated_at.eq(Ts::from(now)),
                ))
                .execute(conn)
                .await?;
        }
        EntryChange::Keep => {}
    }
    crate::events::write(conn, &[d.decided_event(workspace_id, &decided)]).await?;
    Ok(Ok(()))
}

// ---------------------------------------------------------------------------------------------
// The cast's links

/// For each name of a persona's cast, the entry it links to: the candidates its scope sees,
/// chosen by `fleetdesk_wiki::entry::cast_link` (a canon character entry, the project's
/// before a shared one).
pub(crate) async fn character_links(
    conn: Tx<'_>,
    persona: Uuid,
    names: &[String],
) -> anyhow::Result<Vec<Option<(Uuid, String)>>> {
    let keys: Vec<String> = names.iter().map(|n| title_key(n)).collect();
    if keys.is_empty() {
        return Ok(Vec::new());
    }
    let rows: Vec<CandidateRow> = sql!(CAST_CANDIDATES, persona, &keys).load(conn).await?;
    let candidates: Vec<CastCandidate> = rows.into_iter().map(Into::into).collect();
    Ok(cast_links(names, &candidates))
}

impl PgStore {
    /// Indexes again, in transactions of `REINDEX_BATCH`, the entries whose terms an earlier
    /// search pipeline wrote ([`entry::TERMS_VERSION`]); returns how many it indexed. Run in
    /// the background when the service starts: until an entry is done, search finds it by the
    /// terms it had.
    pub async fn index_wiki_again(&self) -> anyhow::Result<usize> {
        let mut done = 0;
        loop {
            let n = self
                .tx(async move |conn| {
                    let rows: Vec<StaleRow> =
                        sql!(STALE_TERMS, entry::TERMS_VERSION, REINDEX_BATCH)
                            .load(conn)
                            .await?;
                    let terms: Vec<entry::Terms> = rows
                        .iter()
                        .map(|r| {
                            entry::Terms::of(r.category.0, &r.title, &r.summary, &r.tags, &r.body)
                        })
                        .collect();
                    sql!(
                        WRITE_TERMS,
                        column(&rows, |r| r.id),
                        column(&terms, |t| t.title.as_str()),
                        column(&terms, |t| t.summary.as_str()),
                        column(&terms, |t| t.pivot.as_str()),
                        column(&terms, |t| t.body.as_str()),
                        entry::TERMS_VERSION,
                        // Groups hold no line break, terms no space: one text each.
                        column(&terms, |t| t.aliases.join("\n")),
                        column(&terms, |t| t.alias_terms.join(" "))
                    )
                    .execute(conn)
                    .await?;
                    Ok(rows.len())
                })
                .await?;
            done += n;
            if n < REINDEX_BATCH as usize {
                return Ok(done);
            }
        }
    }
}

impl EmbeddingsRepo for PgStore {
    fn forget_other_models<'a>(&'a self, model: &'a str) -> BoxFuture<'a, anyhow::Result<u64>> {
        self.tx(async move |conn| Ok(sql!(FORGET_OTHER_MODELS, model).execute(conn).await? as u64))
    }

    fn unembedded(&self, limit: i64) -> BoxFuture<'_, anyhow::Result<Vec<EntryText>>> {
        self.read(async move |conn| {
            let rows: Vec<EntryTextRow> = sql!(UNEMBEDDED, limit).load(conn).await?;
            Ok(rows.into_iter().map(Into::into).collect())
        })
    }

    fn store_embeddings<'a>(
        &'a self,
        model: &'a str,
        made: &'a [(Uuid, i32, Embedding)],
    ) -> BoxFuture<'a, anyhow::Result<u64>> {
        self.tx(async move |conn| {
            let stored = sql!(
                STORE_EMBEDDINGS,
                model,
                column(made, |m| m.0),
                column(made, |m| m.1),
                column(made, |m| m.2.to_bytes())
            )
            .execute(conn)
            .await?;
            Ok(stored as u64)
        })
    }
}

impl WikiRepo for PgStore {
    fn index<'a>(
        &'a self,
        scope: WikiScope,
        query: &'a IndexQuery,
    ) -> BoxFuture<'a, anyhow::Result<Result<Page<EntryHead>, WikiRefusal>>> {
        self.read(async move |conn| {
            let project = match project_of(conn, scope, query.project.as_deref()).await? {
                Ok(p) => p,
                Err(r) => return Ok(Err(r)),
            };
            let rows: Vec<HeadRow> = sql!(
                INDEX,
                scope.organization_id,
                scope.workspace_id,
                project,
                EntryStatus::texts(|s| query.statuses.contains(&s)),
                query.after.map(|a| Ts::from(a.0)),
                query.after.map(|a| a.1).unwrap_or_default(),
                query.limit + 1,
                query.waiting_revisions,
                VersionStatus::Draft.as_str()
            )
            .load(conn)
            .await?;
            let items: Vec<EntryHead> = rows.into_iter().map(Into::into).collect();
            Ok(Ok(Page::probed(items, query.limit, |e| {
                (e.created_at, e.id)
            })))
        })
    }

    fn get<'a>(
        &'a self,
        scope: WikiScope,
        entry: &'a EntryRef,
    ) -> BoxFuture<'a, anyhow::Result<Result<Entry, WikiRefusal>>> {
        self.snapshot(async move |conn| {
            let id = match entry {
                EntryRef::Id(id) => *id,
                EntryRef::Title { title, project } => {
                    if let Err(r) = project_of(conn, scope, project.as_deref()).await? {
                        return Ok(Err(r));
                    }
                    let rows: Vec<TitleRow> = sql!(
                        BY_TITLE,
                        scope.organization_id,
                        scope.workspace_id,
                        title_key(title),
                        EntryStatus::Retired.as_str()
                    )
                    .load(conn)
                    .await?;
                    let matches: Vec<TitleMatch> = rows.into_iter().map(Into::into).collect();
                    match pick_by_title(&matches, project.as_deref()) {
                        Ok(id) => id,
                        Err(r) => return Ok(Err(r)),
                    }
                }
            };
            let row: Option<OneRow> = sql!(
                ONE,
                scope.organization_id,
                scope.workspace_id,
                id,
                EntryStatus::Retired.as_str()
            )
            .get_result(conn)
            .await
            .optional()?;
            let Some(row) = row else {
                return Ok(Err(WikiRefusal::NotFound));
            };
            let versions: Vec<VersionRow> = sql!(VERSIONS, id, VERSIONS_LISTED).load(conn).await?;
            Ok(Ok(Entry {
                head: row.head.into(),
                body: row.body,
                sources: row.sources.0,
                versions: versions.into_iter().map(Into::into).collect(),
            }))
        })
    }

    fn search<'a>(
        &'a self,
        scope: WikiScope,
        query: &'a SearchQuery,
    ) -> BoxFuture<'a, anyhow::Result<Result<Vec<Found>, WikiRefusal>>> {
        self.read(async move |conn| {
            let project = match project_of(conn, scope, query.project.as_deref()).await? {
                Ok(p) => p,
                Err(r) => return Ok(Err(r)),
            };
            let Some(plan) = &query.plan else {
                return Ok(Ok(Vec::new()));
            };
            // Planned afresh each time, as every ranking statement is: the generic plan a
            // cached statement falls back to cannot see the words' rarity or the bound
            // `LIMIT $12`, and walked every entry (a sequential scan, p50 136 ms over 20,000
            // entries in `cargo xtask bench wiki`, where a bitmap scan of the index takes ms).
            let rows: Vec<FoundRow> = sql!(
                fresh SEARCH,
                scope.organization_id,
                scope.workspace_id,
                project,
                EntryStatus::texts(|s| query.statuses.contains(&s)),
                &plan.words,
                &plan.weights,
                &plan.every,
                &plan.some,
                query.limit,
                RANK_WEIGHTS.to_vec(),
                RANK_NORMALIZATION,
                CANDIDATES,
                &plan.own,
                &plan.others,
                &plan.others_scale,
                &plan.any,
                RERANKED,
                query.model.as_deref()
            )
            .load(conn)
            .await?;
            Ok(Ok(rows.into_iter().map(Into::into).collect()))
        })
    }

    fn search_facts<'a>(
        &'a self,
        scope: WikiScope,
        terms: &'a [String],
        words: &'a [String],
        statuses: &'static [EntryStatus],
    ) -> BoxFuture<'a, anyhow::Result<SearchFacts>> {
        self.read(async move |conn| {
            let row: FactsRow = sql!(
                fresh SEARCH_FACTS,
                scope.organization_id,
                scope.workspace_id,
                EntryStatus::texts(|s| statuses.contains(&s)),
                terms,
                words,
                CANDIDATES
            )
            .get_result(conn)
            .await?;
            Ok(row.into())
        })
    }

    fn workspace_scope(
        &self,
        organization: Option<Uuid>,
        workspace: Uuid,
    ) -> BoxFuture<'_, anyhow::Result<Option<WikiScope>>> {
        self.read(async move |conn| {
            let mut q = workspaces::table
                .filter(workspaces::id.eq(workspace))
                .filter(workspaces::archived_at.is_null())
                .into_boxed();
            if let Some(org) = organization {
                q = q.filter(workspaces::organization_id.eq(org));
            }
            let row: Option<ScopeRow> = q
                .select(ScopeRow::as_select())
                .first(conn)
                .await
                .optional()?;
            Ok(row.map(Into::into))
        })
    }

    fn propose<'a>(
        &'a self,
        agent: AgentRef,
        proposal: &'a Proposal,
        now: Timestamp,
    ) -> BoxFuture<'a, anyhow::Result<Result<Proposed, WikiRefusal>>> {
        self.tx(async move |conn| propose(conn, agent, proposal, now).await)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_finders_write_retired_as_the_domain_stores_it() {
        // The finders write the title index's predicate, not a bound status.
        let retired = format!("e.status <> '{}'", EntryStatus::Retired.as_str());
        for finder in [EXISTING_BY_ID, EXISTING_SHARED, EXISTING_IN_PROJECT] {
            assert!(finder.contains(&retired), "{finder}");
        }
    }
}
