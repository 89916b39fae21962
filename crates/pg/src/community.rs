//! The community port over PostgreSQL: spaces looked up in the agent's workspace (active
//! only), the knowledge base and the catalog searched with the wiki's terms and `ts_rank`,
//! digests stored with their members in one statement, tickets joined under a per-matter
//! lock. Each request is one transaction (or one read) of a fixed number of statements.

use crate::db::{PgStore, Ts};
use crate::rows::{Json, Stored};
use crate::schema::{community_spaces, community_tickets};
use diesel::prelude::*;
use diesel_async::{AsyncPgConnection, RunQueryDsl};
use fleetdesk_community::CommunityRefusal;
use fleetdesk_community::digest::{self, DigestReport, TagCount};
use fleetdesk_community::ports::{
    CommunityDay, CommunityRepo, DigestOutcome, LatestDigest, OpenTickets, ProductHit, SpaceDay,
    TicketMoved, TicketOutcome, TicketQuery, TicketRecord, TicketScope, WikiHit, WikiQuery,
};
use fleetdesk_community::space::{Channel, Space, SpaceStatus};
use fleetdesk_community::ticket::{
    self, Handling, LISTED_NOTES, MovePlan, NewTicket, OpenTicket, TicketCategory, TicketMove,
    TicketPlan, TicketStatus, matter_key, plan_ticket, reuse_since,
};
use fleetdesk_kernel::{AgentRef, BoxFuture, Page};
use fleetdesk_wiki::entry::EntryStatus;
use fleetdesk_wiki::meaning::Embedding;
use fleetdesk_wiki::ports::{SearchFacts, WikiRepo, WikiScope};
use fleetdesk_wiki::query::{CANDIDATES, RERANKED};
use fleetdesk_wiki::search::{RANK_NORMALIZATION, RANK_WEIGHTS};
use jiff::Timestamp;
use uuid::Uuid;

statements!(
    WIKI_RECENT => WikiRow,
    WIKI_SEARCH => WikiRow,
    PRODUCTS_SEARCH => ProductRow,
    INSERT_DIGEST => IdRow,
    INSERT_MEMBERS,
    TICKET_LOCK,
    MATTER_NOW => NowRow,
    DAY_SPACES => DaySpaceRow,
    DAY_TICKETS => DayTicketRow,
    TICKETS_OF_ORG => TicketRecordRow,
    TICKETS_OF_AGENT => TicketRecordRow,
    TICKET_OF_ORG => TicketRecordRow,
    TICKET_OF_AGENT => TicketRecordRow,
    LOCK_TICKET => StatusRow,
    HANDLE_TICKET,
);

/// A ticket as people read it, with its workspace, space and agent; `$notes` is the notes it
/// carries (`"t.notes"`: all; [`latest_notes!`]: the latest few). Tickets of archived spaces
/// are listed (the matter still waits for a person); of archived workspaces not.
macro_rules! ticket_sql {
    (notes: $notes:expr, $($tail:expr),*) => {
        concat!(
            "SELECT t.id, w.id AS workspace_id, w.name AS workspace_name, s.id AS space_id, \
                    s.name AS space_name, s.channel, t.member_external_id, t.category, \
                    t.status, t.summary, ", $notes, " AS notes, \
                    jsonb_array_length(t.notes)::bigint AS notes_count, t.opened_by_agent, \
                    a.name AS agent_name, t.created_at, t.updated_at, t.handled_note, \
                    t.handled_by, t.handled_at \
             FROM community_tickets t \
             JOIN community_spaces s ON s.id = t.space_id \
             JOIN workspaces w ON w.id = s.workspace_id \
             JOIN agents a ON a.id = t.opened_by_agent \
             WHERE w.archived_at IS NULL ",
            $($tail),*
        )
    };
}

/// A page of an organization's tickets (`$1`; every organization's for null), of one workspace
/// (`$2`) and category (`$4`) when given, of the statuses `$3`, newest first after `($5, $6)`.
const TICKETS_OF_ORG: &str = ticket_sql!(
    notes: latest_notes!("t.notes", "$8"),
    "AND ($1::uuid IS NULL OR w.organization_id = $1) AND ($2::uuid IS NULL OR w.id = $2) \
     AND t.status = ANY($3) AND ($4::text IS NULL OR t.category = $4) \
     AND ($5::timestamptz IS NULL OR (t.created_at, t.id) < ($5, $6)) \
     ORDER BY t.created_at DESC, t.id DESC LIMIT $7"
);

/// A page of the tickets an agent (`$1`) opened in its workspace (`$2`), as above.
const TICKETS_OF_AGENT: &str = ticket_sql!(
    notes: latest_notes!("t.notes", "$8"),
    "AND t.opened_by_agent = $1 AND w.id = $2 \
     AND t.status = ANY($3) AND ($4::text IS NULL OR t.category = $4) \
     AND ($5::timestamptz IS NULL OR (t.created_at, t.id) < ($5, $6)) \
     ORDER BY t.created_at DESC, t.id DESC LIMIT $7"
);

/// One ticket (`$1`) of an organization (`$2`; any for null) with every note.
const TICKET_OF_ORG: &str = ticket_sql!(
    notes: "t.notes",
    "AND t.id = $1 AND ($2::uuid IS NULL OR w.organization_id = $2)"
);

/// One ticket (`$1`) an agent (`$2`) opened in its workspace (`$3`), with every note.
const TICKET_OF_AGENT: &str = ticket_sql!(
    notes: "t.notes",
    "AND t.id = $1 AND t.opened_by_agent = $2 AND w.id = $3"
);

/// The status of a ticket (`$1`) of an organization (`$2`; any for null), locked for a move.
const LOCK_TICKET: &str = r#"
SELECT t.status FROM community_tickets t
JOIN community_spaces s ON s.id = t.space_id
JOIN workspaces w ON w.id = s.workspace_id
WHERE t.id = $1 AND ($2::uuid IS NULL OR w.organization_id = $2) AND w.archived_at IS NULL
FOR UPDATE OF t
"#;

/// A ticket handled: its status, the person's note, who and when.
const HANDLE_TICKET: &str = r#"
UPDATE community_tickets
SET status = $2, handled_note = $3, handled_by = $4, handled_at = $5, updated_at = $5
WHERE id = $1
"#;

/// Canon entries of the organization (`$1`), shared or of a project of the workspace (`$2`),
/// that suit the space by the parameters of `fleetdesk_community::space::SpaceTagFilter`,
/// applied to `folded_tags` with exact comparisons: the entry carries `$3` (`community`), and
/// for each axis — its folded tags begin with `$4[i]` (`market:`) — it has none of the axis or
/// carries `$5[i]` (null: the space has no value there, so no entry of the axis suits it).
/// The one place this scope is written; the statement goes on with `AND …`.
macro_rules! suits_space {
    () => {
        " FROM wiki_entries e \
         WHERE e.organization_id = $1 AND e.status = 'canon' \
           AND (e.project_id IS NULL \
                OR e.project_id IN (SELECT p.id FROM projects p WHERE p.workspace_id = $2)) \
           AND e.folded_tags @> ARRAY[$3::text] \
           AND NOT EXISTS ( \
               SELECT 1 FROM unnest($4::text[], $5::text[]) AS a(prefix, wanted) \
               WHERE EXISTS (SELECT 1 FROM unnest(e.folded_tags) t \
                             WHERE starts_with(t, a.prefix)) \
                 AND (a.wanted IS NULL OR NOT e.folded_tags @> ARRAY[a.wanted])) "
    };
}

/// The entries that suit the space (`suits_space!`), the most recently updated first; at
/// most `$6`: what a query without words lists.
const WIKI_RECENT: &str = concat!(
    "SELECT e.id, e.title, e.summary, e.body, e.folded_tags, 0::float4 AS score, \
            NULL::bytea AS embedding",
    suits_space!(),
    "ORDER BY e.updated_at DESC, e.id LIMIT $6"
);

/// The entries that suit the space (`suits_space!`) ranked by the plan of
/// `fleetdesk_wiki::query`, as the wiki's own search ranks: at most `$13` candidates that have
/// every word (`$8`), and when fewer than `$6`, at most `$13` more with one of the rarest
/// (`$9`); scored by the sum over the words `$10` of its weight (`$11`) times the better
/// `ts_rank` (the wiki's weights `$7` and normalization `$12`) of its own term (`$14`) and of
/// its other names (`$15`, empty for none) times their scale (`$16`), for the best `$18` of the
/// candidates by `ts_rank` of all the words (`$17`); best first, at most `$6`; each with its
/// vector when the model `$19` made it from its version.
const WIKI_SEARCH: &str = concat!(
    "WITH every_match AS MATERIALIZED (SELECT e.id, \
                         ts_rank($7::float4[], e.search, to_tsquery('simple', $17), $12) AS r",
    suits_space!(),
    "AND e.search @@ to_tsquery('simple', $8)), \
     with_every AS (SELECT * FROM every_match LIMIT $13), \
     rarest_match AS MATERIALIZED (SELECT e.id, \
                     ts_rank($7::float4[], e.search, to_tsquery('simple', $17), $12) AS r",
    suits_space!(),
    "AND e.search @@ to_tsquery('simple', $9) \
          AND (SELECT count(*) FROM with_every) < $6), \
     with_rarest AS (SELECT * FROM rarest_match LIMIT $13), \
     best AS (SELECT id FROM (SELECT * FROM with_every UNION ALL SELECT * FROM with_rarest) c \
              GROUP BY id ORDER BY max(r) DESC, id LIMIT $18), \
     w AS (SELECT to_tsquery('simple', q) AS q, weight, to_tsquery('simple', own) AS own, \
                  CASE WHEN others <> '' THEN to_tsquery('simple', others) END AS others, \
                  scale \
           FROM unnest($10::text[], $11::float4[], $14::text[], $15::text[], $16::float4[]) \
                AS w(q, weight, own, others, scale)) \
     SELECT e.id, e.title, e.summary, e.body, e.folded_tags, \
            CASE WHEN e.embedded_version = e.version AND e.embedding_model = $19 \
                 THEN e.embedding END AS embedding, \
            (SELECT coalesce(sum(w.weight * greatest( \
                        ts_rank($7::float4[], e.search, w.own, $12), \
                        w.scale * ts_rank($7::float4[], e.search, w.others, $12))) \
                        FILTER (WHERE e.search @@ w.q), 0) \
             FROM w)::float4 AS score \
     FROM best c \
     JOIN wiki_entries e ON e.id = c.id \
     ORDER BY score DESC, e.updated_at DESC, e.id \
     LIMIT $6"
);

/// Products on sale in the workspace (`$1`) matching the tsquery `$2` (null: all), best
/// match first, then by name; at most `$3`.
const PRODUCTS_SEARCH: &str = r#"
SELECT id, name, summary, price, url
FROM products
WHERE workspace_id = $1 AND on_sale
  AND ($2::text IS NULL OR search @@ to_tsquery('simple', $2::text))
ORDER BY COALESCE(ts_rank(search, to_tsquery('simple', $2::text)), 0) DESC, name, id
LIMIT $3
"#;

/// The digest of a space and day; nothing when one is there (a concurrent one waits for the
/// first to commit, then finds it).
const INSERT_DIGEST: &str = r#"
INSERT INTO community_digests (space_id, day, agent_id, members, skipped)
VALUES ($1, $2::date, $3, $4, $5)
ON CONFLICT (space_id, day) DO NOTHING
RETURNING id
"#;

/// Every member of a digest in one statement, from one JSON array.
const INSERT_MEMBERS: &str = r#"
INSERT INTO community_digest_members (digest_id, external_id, display_name, message_count,
                                      summary, tags)
SELECT $1, m.external_id, m.display_name, m.message_count, m.summary, m.tags
FROM jsonb_to_recordset($2::jsonb)
     AS m(external_id text, display_name text, message_count int, summary text, tags jsonb)
"#;

/// Serializes reports of one matter (space, member, category) until the transaction ends.
const TICKET_LOCK: &str = r#"
SELECT pg_advisory_xact_lock(hashtextextended($1, 0))
"#;

/// The database's clock once the matter's lock is held: reports of one matter read it one
/// after the other, so the times they store follow the order they apply in.
const MATTER_NOW: &str = r#"
SELECT clock_timestamp() AS now
"#;

/// The active spaces (`$2`) of the organization's (`$1`, or every) workspaces not archived,
/// each with its latest digest and that digest's tags counted in SQL by kind and folded value
/// (`[kind, folded, members]`; `folded` is written with each tag,
/// `fleetdesk_community::digest::fold_tag_value`), so only the counts reach the domain.
const DAY_SPACES: &str = r#"
SELECT s.workspace_id, s.id, s.name, s.channel, d.day, d.members, d.created_at,
       COALESCE((
           SELECT jsonb_agg(jsonb_build_array(c.kind, c.value, c.n))
           FROM (SELECT t->>'kind' AS kind, t->>'folded' AS value,
                        count(DISTINCT m.external_id) AS n
                 FROM community_digest_members m
                 CROSS JOIN LATERAL jsonb_array_elements(m.tags) t
                 WHERE m.digest_id = d.id
                 GROUP BY 1, 2) c
       ), '[]'::jsonb) AS tags
FROM community_spaces s
JOIN workspaces w ON w.id = s.workspace_id
LEFT JOIN LATERAL (
    SELECT g.id, g.day, g.members, g.created_at FROM community_digests g
    WHERE g.space_id = s.id ORDER BY g.day DESC LIMIT 1
) d ON true
WHERE ($1::uuid IS NULL OR w.organization_id = $1) AND w.archived_at IS NULL AND s.status = $2
ORDER BY s.name, s.id
"#;

/// Open tickets per workspace and category (of every space, archived ones too: the matter
/// still waits for a person).
const DAY_TICKETS: &str = r#"
SELECT s.workspace_id, t.category, count(*) AS count
FROM community_tickets t
JOIN community_spaces s ON s.id = t.space_id
JOIN workspaces w ON w.id = s.workspace_id
WHERE ($1::uuid IS NULL OR w.organization_id = $1) AND w.archived_at IS NULL
  AND t.status = $2
GROUP BY s.workspace_id, t.category
ORDER BY t.category
"#;

selectable! {
    /// A space as the lookups read it (by the platform's group id, by id, or by id for a write).
    #[diesel(table_name = community_spaces)]
    struct SpaceRow into Space {
        id: Uuid,
        workspace_id: Uuid,
        name: String,
        channel: Stored<Channel>,
        space_type: Option<String>,
        market: String,
        track: Option<String>,
        location: Option<String>,
        status: Stored<SpaceStatus>,
        language: Option<String>,
    }
}

/// The space of the first row (a lookup gives at most one).
fn first_space(rows: Vec<SpaceRow>) -> Option<Space> {
    rows.into_iter().next().map(Into::into)
}

row! {
    struct WikiRow {
        id: Uuid,
        title: String,
        summary: String,
        body: String,
        folded_tags: Vec<String>,
        embedding: Option<Vec<u8>>,
    }
}

row! {
    struct ProductRow into ProductHit {
        id: Uuid,
        name: String,
        summary: Option<String>,
        price: Option<String>,
        url: Option<String>,
    }
}

row! {
    struct IdRow {
        id: Uuid,
    }
}

selectable! {
    #[diesel(table_name = community_tickets)]
    struct TicketRow into OpenTicket {
        id: Uuid,
        member_external_id: Option<String>,
        category: Stored<TicketCategory>,
        created_at: Ts,
    }
}

row! {
    struct NowRow {
        now: Ts,
    }
}

row! {
    struct StatusRow {
        status: Stored<TicketStatus>,
    }
}

row! {
    struct TicketRecordRow {
        id: Uuid,
        workspace_id: Uuid,
        workspace_name: String,
        space_id: Uuid,
        space_name: String,
        channel: Stored<Channel>,
        member_external_id: Option<String>,
        category: Stored<TicketCategory>,
        status: Stored<TicketStatus>,
        summary: String,
        notes: serde_json::Value,
        notes_count: i64,
        opened_by_agent: Uuid,
        agent_name: String,
        created_at: Ts,
        updated_at: Ts,
        handled_note: Option<String>,
        handled_by: Option<serde_json::Value>,
        handled_at: Option<Ts>,
    }
}

impl From<TicketRecordRow> for TicketRecord {
    fn from(r: TicketRecordRow) -> TicketRecord {
        let handled = match (r.handled_note, r.handled_at) {
            (Some(note), Some(at)) => Some(Handling {
                status: r.status.0,
                note,
                by: r.handled_by.unwrap_or_default(),
                at: at.into(),
            }),
            _ => None,
        };
        TicketRecord {
            id: r.id,
            workspace: (r.workspace_id, r.workspace_name),
            space: (r.space_id, r.space_name, r.channel.0),
            member_external_id: r.member_external_id,
            category: r.category.0,
            status: r.status.0,
            summary: r.summary,
            notes: r.notes,
            notes_count: r.notes_count,
            opened_by: (r.opened_by_agent, r.agent_name),
            created_at: r.created_at.into(),
            updated_at: r.updated_at.into(),
            handled,
        }
    }
}

row! {
    struct DaySpaceRow {
        workspace_id: Uuid,
        id: Uuid,
        name: String,
        channel: Stored<Channel>,
        day: Option<jiff_diesel::Date>,
        members: Option<i32>,
        created_at: Option<Ts>,
        tags: Json<Vec<TagCount>>,
    }
}

row! {
    struct DayTicketRow into OpenTickets {
        workspace_id: Uuid,
        category: String,
        count: i64,
    }
}

/// The active space `id` of the agent's workspace; `lock` holds it until the write commits.
async fn space_of(
    conn: &mut AsyncPgConnection,
    agent: AgentRef,
    id: Uuid,
    lock: bool,
) -> anyhow::Result<Option<Space>> {
    let query = community_spaces::table
        .filter(community_spaces::id.eq(id))
        .filter(community_spaces::workspace_id.eq(agent.workspace_id))
        .filter(community_spaces::status.eq(SpaceStatus::Active.as_str()))
        .select(SpaceRow::as_select());
    let rows: Vec<SpaceRow> = if lock {
        // Held until the write commits (an archival waits for it).
        query.for_share().load(conn).await?
    } else {
        query.load(conn).await?
    };
    Ok(first_space(rows))
}

async fn report_digest_tx(
    conn: &mut AsyncPgConnection,
    agent: AgentRef,
    report: &DigestReport,
    now: Timestamp,
) -> anyhow::Result<Result<DigestOutcome, CommunityRefusal>> {
    let Some(space) = space_of(conn, agent, report.space_id, true).await? else {
        return Ok(Err(CommunityRefusal::SpaceNotFound));
    };
    let digest = match digest::accept(&space, report.clone(), now) {
        Ok(d) => d,
        Err(e) => return Ok(Err(e)),
    };
    let digest = &digest;
    let outcome = digest.outcome(space.id);
    let inserted: Vec<IdRow> = sql!(
        INSERT_DIGEST,
        space.id,
        jiff_diesel::Date::from(digest.day),
        agent.agent_id,
        i32::try_from(outcome.members)?,
        i32::try_from(digest.skipped)?
    )
    .load(conn)
    .await?;
    let Some(row) = inserted.into_iter().next() else {
        return Ok(Err(digest::already_reported(digest.day)));
    };
    if !digest.members.is_empty() {
        sql!(INSERT_MEMBERS, row.id, digest.stored_members())
            .execute(conn)
            .await?;
    }
    Ok(Ok(outcome))
}

async fn open_ticket_tx(
    conn: &mut AsyncPgConnection,
    agent: AgentRef,
    raw: &NewTicket,
    now: Timestamp,
) -> anyhow::Result<Result<TicketOutcome, CommunityRefusal>> {
    let Some(space) = space_of(conn, agent, raw.space_id, true).await? else {
        return Ok(Err(CommunityRefusal::SpaceNotFound));
    };
    let ticket = match ticket::accept(&space, raw.clone()) {
        Ok(t) => t,
        Err(e) => return Ok(Err(e)),
    };
    let ticket = &ticket;
    let mut now = now;
    let mut open = Vec::new();
    if let Some(member) = ticket.member_external_id.as_deref() {
        let matter = matter_key(space.id, member, ticket.category);
        sql!(TICKET_LOCK, matter).execute(conn).await?;
        // The request's clock was read before it waited for the lock; a report that held the
        // lock first may have stored a later time. The time of this report is read now.
        let read: NowRow = sql!(MATTER_NOW).get_result(conn).await?;
        now = read.now.to_jiff();
        // The open tickets of the member and category in the space opened after
        // `reuse_since`, locked.
        let rows: Vec<TicketRow> = community_tickets::table
            .filter(community_tickets::space_id.eq(space.id))
            .filter(community_tickets::member_external_id.eq(member))
            .filter(community_tickets::category.eq(ticket.category.as_str()))
            .filter(community_tickets::status.eq(TicketStatus::Open.as_str()))
            .filter(community_tickets::created_at.gt(Ts::from(reuse_since(now))))
            .order((
                community_tickets::created_at.desc(),
                community_tickets::id.desc(),
            ))
            .select(TicketRow::as_select())
            .for_update()
            .load(conn)
            .await?;
        open = rows.into_iter().map(Into::into).collect();
    }
    let plan = plan_ticket(ticket, &open, now);
    let ticket_id = match &plan {
        TicketPlan::Join { id, note } => {
            diesel::update(community_tickets::table.find(id))
                .set((
                    community_tickets::notes.eq(community_tickets::notes.concat(note.appended())),
                    community_tickets::updated_at.eq(Ts::from(note.at)),
                ))
                .execute(conn)
                .await?;
            *id
        }
        TicketPlan::Open { at } => {
            diesel::insert_into(community_tickets::table)
                .values((
                    community_tickets::space_id.eq(space.id),
                    community_tickets::member_external_id.eq(ticket.member_external_id.as_deref()),
                    community_tickets::category.eq(ticket.category.as_str()),
                    community_tickets::summary.eq(&ticket.summary),
                    community_tickets::opened_by_agent.eq(agent.agent_id),
                    community_tickets::created_at.eq(Ts::from(*at)),
                    community_tickets::updated_at.eq(Ts::from(*at)),
                ))
                .returning(community_tickets::id)
                .get_result(conn)
                .await?
        }
    };
    Ok(Ok(plan.outcome(ticket_id)))
}

impl CommunityRepo for PgStore {
    fn find_space<'a>(
        &'a self,
        agent: AgentRef,
        channel: Channel,
        external_id: &'a str,
    ) -> BoxFuture<'a, anyhow::Result<Option<Space>>> {
        self.read(async move |conn| {
            // The active space of the workspace by channel and the platform's group id.
            let rows: Vec<SpaceRow> = community_spaces::table
                .filter(community_spaces::channel.eq(channel.as_str()))
                .filter(community_spaces::external_id.eq(external_id))
                .filter(community_spaces::workspace_id.eq(agent.workspace_id))
                .filter(community_spaces::status.eq(SpaceStatus::Active.as_str()))
                .select(SpaceRow::as_select())
                .load(conn)
                .await?;
            Ok(first_space(rows))
        })
    }

    fn search_wiki<'a>(
        &'a self,
        agent: AgentRef,
        space_id: Uuid,
        query: &'a WikiQuery,
    ) -> BoxFuture<'a, anyhow::Result<Result<Vec<WikiHit>, CommunityRefusal>>> {
        self.snapshot(async move |conn| {
            let Some(space) = space_of(conn, agent, space_id, false).await? else {
                return Ok(Err(CommunityRefusal::SpaceNotFound));
            };
            let filter = space.tag_filter();
            let rows: Vec<WikiRow> = match &query.plan {
                None => {
                    sql!(
                        WIKI_RECENT,
                        agent.organization_id,
                        agent.workspace_id,
                        &filter.required,
                        filter.prefixes(),
                        filter.wanted(),
                        query.limit
                    )
                    .load(conn)
                    .await?
                }
                Some(plan) => {
                    sql!(
                        fresh WIKI_SEARCH,
                        agent.organization_id,
                        agent.workspace_id,
                        &filter.required,
                        filter.prefixes(),
                        filter.wanted(),
                        query.limit,
                        RANK_WEIGHTS.to_vec(),
                        &plan.every,
                        &plan.some,
                        &plan.words,
                        &plan.weights,
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
                    .await?
                }
            };
            let hits = rows
                .into_iter()
                .map(|r| {
                    debug_assert!(filter.admits(&r.folded_tags), "{:?}", r.folded_tags);
                    WikiHit {
                        id: r.id,
                        title: r.title,
                        summary: r.summary,
                        body: r.body,
                        embedding: r.embedding.map(|v| Embedding::from_bytes(&v)),
                    }
                })
                .collect();
            Ok(Ok(hits))
        })
    }

    fn wiki_facts<'a>(
        &'a self,
        agent: AgentRef,
        terms: &'a [String],
        words: &'a [String],
    ) -> BoxFuture<'a, anyhow::Result<SearchFacts>> {
        // The knowledge base's own facts, over what the agent's workspace sees.
        let scope = WikiScope {
            organization_id: agent.organization_id,
            workspace_id: agent.workspace_id,
        };
        WikiRepo::search_facts(self, scope, terms, words, EntryStatus::SEARCHED)
    }

    fn search_products<'a>(
        &'a self,
        agent: AgentRef,
        space_id: Uuid,
        ts_query: Option<&'a str>,
        limit: i64,
    ) -> BoxFuture<'a, anyhow::Result<Result<Vec<ProductHit>, CommunityRefusal>>> {
        self.snapshot(async move |conn| {
            let Some(space) = space_of(conn, agent, space_id, false).await? else {
                return Ok(Err(CommunityRefusal::SpaceNotFound));
            };
            let rows: Vec<ProductRow> =
                sql!(fresh PRODUCTS_SEARCH, space.workspace_id, ts_query, limit)
                    .load(conn)
                    .await?;
            Ok(Ok(rows.into_iter().map(Into::into).collect()))
        })
    }

    fn report_digest<'a>(
        &'a self,
        agent: AgentRef,
        digest: &'a DigestReport,
        now: Timestamp,
    ) -> BoxFuture<'a, anyhow::Result<Result<DigestOutcome, CommunityRefusal>>> {
        self.tx(async move |conn| report_digest_tx(conn, agent, digest, now).await)
    }

    fn open_ticket<'a>(
        &'a self,
        agent: AgentRef,
        ticket: &'a NewTicket,
        now: Timestamp,
    ) -> BoxFuture<'a, anyhow::Result<Result<TicketOutcome, CommunityRefusal>>> {
        self.tx(async move |conn| open_ticket_tx(conn, agent, ticket, now).await)
    }

    fn tickets<'a>(
        &'a self,
        scope: TicketScope,
        query: &'a TicketQuery,
    ) -> BoxFuture<'a, anyhow::Result<Page<TicketRecord>>> {
        self.read(async move |conn| {
            let statuses: Vec<&str> = query.statuses.iter().map(|s| s.as_str()).collect();
            let category = query.category.map(|c| c.as_str());
            let after_at = query.after.map(|a| Ts::from(a.0));
            let after_id = query.after.map(|a| a.1).unwrap_or_default();
            // The same parameters: who ($1, $2), then the filters and the page.
            let (statement, first, second) = match scope {
                TicketScope::Organization(org) => (TICKETS_OF_ORG, org, query.workspace),
                TicketScope::Agent(agent) => (
                    TICKETS_OF_AGENT,
                    Some(agent.agent_id),
                    Some(agent.workspace_id),
                ),
            };
            let rows: Vec<TicketRecordRow> = sql!(
                statement,
                first,
                second,
                &statuses,
                category,
                after_at,
                after_id,
                query.limit + 1,
                LISTED_NOTES
            )
            .load(conn)
            .await?;
            let items = rows.into_iter().map(TicketRecord::from).collect();
            Ok(Page::probed(items, query.limit, |t| (t.created_at, t.id)))
        })
    }

    fn ticket(
        &self,
        scope: TicketScope,
        id: Uuid,
    ) -> BoxFuture<'_, anyhow::Result<Option<TicketRecord>>> {
        self.read(async move |conn| Ok(ticket_in(conn, scope, id).await?))
    }

    fn move_ticket<'a>(
        &'a self,
        organization: Option<Uuid>,
        id: Uuid,
        mv: TicketMove,
        note: &'a str,
        by: serde_json::Value,
        now: Timestamp,
    ) -> BoxFuture<'a, anyhow::Result<Result<TicketMoved, CommunityRefusal>>> {
        self.tx(async move |conn| {
            let locked: Option<StatusRow> = sql!(LOCK_TICKET, id, organization)
                .get_result(conn)
                .await
                .optional()?;
            let Some(locked) = locked else {
                return Ok(Err(CommunityRefusal::TicketNotFound));
            };
            let plan = match ticket::plan_move(locked.status.0, mv, note, by, now) {
                Ok(plan) => plan,
                Err(refusal) => return Ok(Err(refusal)),
            };
            let changed = match plan {
                MovePlan::Unchanged => false,
                MovePlan::Handle(h) => {
                    sql!(
                        HANDLE_TICKET,
                        id,
                        h.status.as_str(),
                        &h.note,
                        &h.by,
                        Ts::from(h.at)
                    )
                    .execute(conn)
                    .await?;
                    true
                }
            };
            let ticket = ticket_in(conn, TicketScope::Organization(organization), id)
                .await?
                .ok_or_else(|| anyhow::anyhow!("ticket {id} read back"))?;
            Ok(Ok(TicketMoved { ticket, changed }))
        })
    }
}

/// One ticket of the scope with every note.
async fn ticket_in(
    conn: &mut AsyncPgConnection,
    scope: TicketScope,
    id: Uuid,
) -> anyhow::Result<Option<TicketRecord>> {
    let row: Option<TicketRecordRow> = match scope {
        TicketScope::Organization(org) => sql!(TICKET_OF_ORG, id, org)
            .get_result(conn)
            .await
            .optional()?,
        TicketScope::Agent(agent) => sql!(TICKET_OF_AGENT, id, agent.agent_id, agent.workspace_id)
            .get_result(conn)
            .await
            .optional()?,
    };
    Ok(row.map(Into::into))
}

/// The community part of the person's day, in the caller's snapshot: 2 statements.
pub(crate) async fn community_day(
    conn: &mut AsyncPgConnection,
    organization: Option<Uuid>,
) -> anyhow::Result<CommunityDay> {
    let spaces: Vec<DaySpaceRow> = sql!(DAY_SPACES, organization, SpaceStatus::Active.as_str())
        .load(conn)
        .await?;
    let tickets: Vec<DayTicketRow> = sql!(DAY_TICKETS, organization, TicketStatus::Open.as_str())
        .load(conn)
        .await?;
    let spaces = spaces
        .into_iter()
        .map(|s| SpaceDay {
            latest: match (s.day, s.members, s.created_at) {
                (Some(day), Some(members), Some(at)) => Some(LatestDigest {
                    day: day.into(),
                    members: i64::from(members),
                    reported_at: at.to_jiff(),
                    tags: s.tags.0,
                }),
                _ => None,
            },
            workspace_id: s.workspace_id,
            space_id: s.id,
            name: s.name,
            channel: s.channel.0,
        })
        .collect();
    Ok(CommunityDay {
        spaces,
        tickets: tickets.into_iter().map(Into::into).collect(),
    })
}
