//! The drafts port over PostgreSQL: one transaction per submit, rewrite, attach or note.

use crate::accounts::SlotCodes;
use crate::db::md5;
use crate::db::{PgStore, Tx, column};
use crate::record::Entry;
use crate::rows::{Json, JsonOrDefault, Stored};
use crate::schema::{ad_picks, media, persona_cast, posts};
use diesel::dsl::{self, case_when};
use diesel::prelude::*;
use diesel::sql_types::{Bool, Nullable, Text, Timestamptz};
use diesel_async::RunQueryDsl;
use fleetdesk_accounts::AccountState;
use fleetdesk_ads::pick::{PickNumber, PickState, PickStatus};
use fleetdesk_drafts::draft::{CastMember, Character, MediaRef};
use fleetdesk_drafts::plan::{
    self, AccountFact, ChangeFacts, Event, ItemFact, NewPost, PickFact, PostChange, PostFact,
    SubmitFacts, SubmitPlan,
};
use fleetdesk_drafts::ports::*;
use fleetdesk_kernel::media::MediaKind;
use fleetdesk_kernel::{AgentRef, BoxFuture, Platform};
use fleetdesk_posts::post::PostStatus;
use futures_util::FutureExt;
use jiff::Timestamp;
use serde_json::{Value, json};
use uuid::Uuid;

/// Accounts a code may name, the slots locked so that submits to one account run one at a time
/// (the duplicate rule must see the previous one).
const DRAFT_ACCOUNT: &str = r#"
SELECT s.id AS slot_id, s.code, s.legacy_code, s.platform, s.timezone, s.workspace_id,
       s.persona_id, pe.agent_id AS persona_agent, pe.project_id, g.id AS generation_id, g.state,
       (pe.agent_id IS NOT DISTINCT FROM $2) AS mine
FROM account_slots s
JOIN personas pe ON pe.id = s.persona_id
LEFT JOIN account_generations g ON g.slot_id = s.id AND g.closed_at IS NULL
WHERE s.workspace_id = $1 AND (s.code = $3 OR s.legacy_code = $3)
  AND ($4::text IS NULL OR s.platform = $4)
FOR UPDATE OF s
"#;

row! {
    struct AccountRow {
        #[diesel(embed)]
        slot: SlotCodes,
        timezone: String,
        workspace_id: Uuid,
        persona_id: Uuid,
        persona_agent: Option<Uuid>,
        project_id: Uuid,
        generation_id: Option<Uuid>,
        state: Option<Stored<AccountState>>,
    }
}

/// A post with its account and its media in order, read once it is locked ([`post_fact`]).
const POST_FOR_CHANGE: &str = r#"
SELECT p.id, p.status, p.body, p.returned_body, p.awaiting_rewrite, p.rewrite_answered,
       p.project_id, p.workspace_id, p.persona_id, pe.agent_id AS persona_agent, p.slot_id,
       p.planned_at, p.characters,
       s.code, s.platform, g.state,
       (pe.agent_id IS NOT DISTINCT FROM $2) AS mine,
       (SELECT COALESCE(jsonb_agg(jsonb_build_object('id', m.id, 'kind', m.kind)
                                  ORDER BY pm.position), '[]'::jsonb)
          FROM post_media pm JOIN media m ON m.id = pm.media_id
         WHERE pm.post_id = p.id) AS media
FROM posts p
JOIN account_slots s ON s.id = p.slot_id
JOIN personas pe ON pe.id = p.persona_id
LEFT JOIN account_generations g ON g.slot_id = s.id AND g.closed_at IS NULL
WHERE p.id = $1
"#;

row! {
    struct PostRow into PostFact {
        id: Uuid,
        status: Stored<PostStatus>,
        body: String,
        returned_body: Option<String>,
        awaiting_rewrite: bool,
        rewrite_answered: bool,
        project_id: Uuid,
        workspace_id: Uuid,
        persona_id: Uuid,
        persona_agent: Option<Uuid>,
        slot_id: Uuid,
        planned_at: Option<jiff_diesel::Timestamp>,
        characters: JsonOrDefault<Vec<Character>>,
        code: String,
        platform: Stored<Platform>,
        state: Option<Stored<AccountState>>,
        mine: bool,
        media: Json<Vec<MediaRef>>,
    }
}

/// Uploads (`$3` false) or library items (`$3` true) named by id in the workspace, each with
/// the library item it is (none for an upload whose file has not arrived).
const ITEMS: &str = r#"
SELECT r.id, CASE WHEN m.id IS NOT NULL THEN jsonb_build_object('id', m.id, 'kind', m.kind) END
           AS media,
       (m.archived_at IS NOT NULL) AS archived, m.project_id
FROM (SELECT id, media_id FROM uploads WHERE NOT $3 AND workspace_id = $1 AND id = ANY($2)
      UNION ALL
      SELECT id, id FROM media WHERE $3 AND workspace_id = $1 AND id = ANY($2)) r
LEFT JOIN media m ON m.id = r.media_id
"#;

row! {
    struct ItemRow into ItemFact {
        id: Uuid,
        media: Option<Json<MediaRef>>,
        archived: bool,
        project_id: Option<Uuid>,
    }
}

/// Inline images enter the library once per workspace and project, with their thumbnails; a
/// file already there is reused, and gains the thumbnail if it had none. The same image twice
/// in one batch enters once (its first occurrence), as an upsert may touch a row only once.
const INSERT_INLINE: &str = r#"
INSERT INTO media (workspace_id, project_id, persona_id, kind, mime_type, bytes, width, height,
                   caption, sha256, storage_key, parts, part_bytes, source, created_by_agent,
                   thumb_key, thumb_mime)
SELECT DISTINCT ON (t.sha256)
       $1, $2, $3, $12, t.mime, t.bytes, t.width, t.height, t.caption, t.sha256, t.key, 1,
       t.bytes, 'inline', $4, t.thumb_key, t.thumb_mime
FROM unnest($5::text[], $6::bigint[], $7::int[], $8::int[], $9::text[], $10::text[], $11::text[],
            $13::text[], $14::text[])
     WITH ORDINALITY AS t(mime, bytes, width, height, caption, sha256, key, thumb_key, thumb_mime,
                          n)
ORDER BY t.sha256, t.n
ON CONFLICT (workspace_id, COALESCE(project_id, '00000000-0000-0000-0000-000000000000'::uuid),
             sha256)
    WHERE archived_at IS NULL
    DO UPDATE SET thumb_key = EXCLUDED.thumb_key, thumb_mime = EXCLUDED.thumb_mime
    WHERE media.thumb_key IS NULL AND EXCLUDED.thumb_key IS NOT NULL
"#;

const APPEND_MEDIA: &str = r#"
INSERT INTO post_media (post_id, media_id, position)
SELECT $1, t.id, COALESCE((SELECT max(position) FROM post_media WHERE post_id = $1), -1) + t.ord
FROM unnest($2::uuid[]) WITH ORDINALITY AS t(id, ord)
"#;

/// The review moves a draft's history records, by the agent.
async fn record(conn: Tx<'_>, post_id: Uuid, agent: AgentRef, events: &[Event]) -> QueryResult<()> {
    let details: Vec<Value> = events.iter().map(Event::detail).collect();
    let entries: Vec<Entry> = events
        .iter()
        .zip(&details)
        .map(|(event, detail)| Entry {
            post_id,
            action: event.action(),
            reason: event.reason(),
            detail,
        })
        .collect();
    crate::record::by_agent(conn, agent.agent_id, &entries).await
}

/// The persona's cast, when the request names characters (an empty list clears them and
/// needs none).
async fn cast_for(
    conn: Tx<'_>,
    persona_id: Uuid,
    picks: Option<&Vec<fleetdesk_drafts::draft::CharacterPick>>,
) -> QueryResult<Vec<CastMember>> {
    if picks.is_none_or(|p| p.is_empty()) {
        return Ok(Vec::new());
    }
    let rows: Vec<(String, String)> = persona_cast::table
        .filter(persona_cast::persona_id.eq(persona_id))
        .order(persona_cast::code)
        .select((persona_cast::code, persona_cast::name))
        .load(conn)
        .await?;
    Ok(rows
        .into_iter()
        .map(|(code, name)| CastMember { code, name })
        .collect())
}

/// The uploads (`library` false) or library items a request names, as found in the workspace.
async fn items(
    conn: Tx<'_>,
    workspace_id: Uuid,
    ids: &[Uuid],
    library: bool,
) -> QueryResult<Vec<ItemFact>> {
    if ids.is_empty() {
        return Ok(Vec::new());
    }
    let rows: Vec<ItemRow> = sql!(ITEMS, workspace_id, ids, library).load(conn).await?;
    Ok(rows.into_iter().map(Into::into).collect())
}

/// A post of the workspace with its account and media, locked for a change. It is read after
/// the lock is taken: a statement that waited for the lock would read the media another change
/// wrote meanwhile as they were before.
async fn post_fact(conn: Tx<'_>, agent: AgentRef, post_id: Uuid) -> QueryResult<Option<PostFact>> {
    let locked: Option<Uuid> = posts::table
        .find(post_id)
        .filter(posts::workspace_id.eq(agent.workspace_id))
        .select(posts::id)
        .for_update()
        .first(conn)
        .await
        .optional()?;
    if locked.is_none() {
        return Ok(None);
    }
    let row: PostRow = sql!(POST_FOR_CHANGE, post_id, agent.agent_id)
        .get_result(conn)
        .await?;
    Ok(Some(row.into()))
}

/// Enters inline images into the library of the account's project (or finds them there) and
/// returns them in order.
async fn inline_media(
    conn: Tx<'_>,
    agent: AgentRef,
    account: &AccountFact,
    images: &[StoredImage],
) -> anyhow::Result<Vec<MediaRef>> {
    if images.is_empty() {
        return Ok(Vec::new());
    }
    let shas = column(images, |i| i.sha256.as_str());
    sql!(
        INSERT_INLINE,
        agent.workspace_id,
        account.project_id,
        account.persona_id,
        agent.agent_id,
        column(images, |i| i.media_type.as_str()),
        column(images, |i| i.bytes),
        column(images, |i| i.width),
        column(images, |i| i.height),
        column(images, |i| i.caption.as_deref()),
        &shas,
        column(images, |i| i.storage_key.as_str()),
        MediaKind::Image.as_str(),
        column(images, |i| i.thumb.as_ref().map(|t| t.key.as_str())),
        column(images, |i| i.thumb.as_ref().map(|t| t.mime_type.as_str()))
    )
    .execute(conn)
    .await?;
    let entered: Vec<(Uuid, String)> = media::table
        .filter(media::workspace_id.eq(agent.workspace_id))
        .filter(media::project_id.eq(account.project_id))
        .filter(media::sha256.eq_any(&shas))
        .filter(media::archived_at.is_null())
        .select((media::id, media::sha256))
        .load(conn)
        .await?;
    plan::inline_refs(images, &entered)
        .map_err(|sha256| anyhow::anyhow!("inline image {sha256} not in the library"))
}

async fn append_media(conn: Tx<'_>, post_id: Uuid, added: &[MediaRef]) -> QueryResult<()> {
    if added.is_empty() {
        return Ok(());
    }
    sql!(APPEND_MEDIA, post_id, column(added, |m| m.id))
        .execute(conn)
        .await?;
    Ok(())
}

/// The account's other stocked posts.
async fn inventory(conn: Tx<'_>, slot_id: Uuid, post_id: Uuid) -> QueryResult<i64> {
    posts::table
        .filter(posts::slot_id.eq(slot_id))
        .filter(posts::status.eq(PostStatus::Stocked.as_str()))
        .filter(posts::id.ne(post_id))
        .count()
        .get_result(conn)
        .await
}

/// The accounts a submit's code may name, their slots locked.
async fn account_candidates(
    conn: Tx<'_>,
    agent: AgentRef,
    d: &NewDraft,
) -> anyhow::Result<Vec<AccountFact>> {
    let rows: Vec<AccountRow> = sql!(
        DRAFT_ACCOUNT,
        agent.workspace_id,
        agent.agent_id,
        d.code.code.as_str(),
        d.code.platform.map(Platform::as_str)
    )
    .load(conn)
    .await?;
    rows.into_iter()
        .filter_map(|row| Some((row.slot.name()?, row)))
        .map(|(slot, row)| {
            Ok(AccountFact {
                slot,
                zone: jiff::tz::TimeZone::get(&row.timezone)?,
                workspace_id: row.workspace_id,
                persona_id: row.persona_id,
                persona_agent: row.persona_agent,
                project_id: row.project_id,
                generation_id: row.generation_id,
                state: row.state.map(|s| s.0),
            })
        })
        .collect()
}

/// The pick a submit names in the agent's workspace (locked), and whether the post a resend
/// found carries another.
async fn pick_fact(
    conn: Tx<'_>,
    agent: AgentRef,
    number: PickNumber,
    duplicate: Option<Uuid>,
) -> anyhow::Result<Option<PickFact>> {
    let row: Option<PickRow> = sql!(PICK_FOR_DRAFT, agent.workspace_id, number.0)
        .get_result(conn)
        .await
        .optional()?;
    let Some(row) = row else {
        return Ok(None);
    };
    // Another pick the post drafted (not the one the resend names), read once this one is
    // locked.
    let other_on_duplicate = match duplicate {
        Some(post) => ad_picks::table
            .filter(ad_picks::post_id.eq(post))
            .filter(ad_picks::status.eq(PickStatus::Drafted.as_str()))
            .filter(ad_picks::id.ne(row.id))
            .select(ad_picks::number)
            .first(conn)
            .await
            .optional()?
            .map(PickNumber),
        None => None,
    };
    Ok(Some(PickFact {
        id: row.id,
        state: PickState {
            number,
            status: row.status.0,
            account_id: row.slot_id,
            code: row.code,
            post_id: row.post_id,
        },
        other_on_duplicate,
    }))
}

/// Loads what a submit names once its account is chosen (inline images are entered into the
/// library here: a refusal rolls them back with the rest), plans it and writes the plan.
async fn submit_tx(
    conn: Tx<'_>,
    agent: AgentRef,
    d: &NewDraft,
) -> anyhow::Result<Result<DraftView, DraftRefusal>> {
    let candidates = account_candidates(conn, agent, d).await?;
    let account = match plan::choose_account(candidates, d) {
        Ok(account) => account,
        Err(refusal) => return Ok(Err(refusal)),
    };
    let cast = cast_for(conn, account.persona_id, d.content.characters.as_ref()).await?;
    let uploads = items(conn, agent.workspace_id, &d.content.upload_ids, false).await?;
    let library = items(conn, agent.workspace_id, &d.content.media_ids, true).await?;
    let inline = inline_media(conn, agent, &account, &d.content.images).await?;
    // md5(body) first: the (slot_id, md5(body)) index finds the candidates.
    let original: Option<Uuid> = posts::table
        .filter(posts::slot_id.eq(account.slot.slot_id))
        .filter(md5(posts::body).eq(md5(&d.body)))
        .filter(posts::body.eq(&d.body))
        .filter(posts::status.eq_any(PostStatus::unpublished()))
        .order(posts::created_at)
        .select(posts::id)
        .for_update()
        .first(conn)
        .await
        .optional()?;
    let duplicate = match original {
        Some(id) => post_fact(conn, agent, id).await?,
        None => None,
    };
    let pick = match d.pick {
        Some(number) => pick_fact(conn, agent, number, original).await?,
        None => None,
    };
    let facts = SubmitFacts {
        account,
        cast,
        uploads,
        library,
        inline,
        duplicate,
        pick,
    };
    Ok(match plan::plan_submit(d, facts) {
        Ok(SubmitPlan::New(post)) => Ok(write_new(conn, agent, d, *post).await?),
        Ok(SubmitPlan::Resend(change)) => Ok(write_change(conn, agent, *change).await?),
        Err(refusal) => Err(refusal),
    })
}

/// Writes a new post's row, then its media, its pick and its history.
async fn write_new(
    conn: Tx<'_>,
    agent: AgentRef,
    d: &NewDraft,
    plan: NewPost,
) -> anyhow::Result<DraftView> {
    let account = &plan.account;
    let stocked = plan.stocked.is_some();
    let id: Uuid = diesel::insert_into(posts::table)
        .values((
            (
                posts::organization_id.eq(agent.organization_id),
                posts::workspace_id.eq(agent.workspace_id),
                posts::project_id.eq(account.project_id),
                posts::persona_id.eq(account.persona_id),
                posts::slot_id.eq(account.slot.slot_id),
                posts::generation_id.eq(account.generation_id),
                posts::agent_id.eq(agent.agent_id),
                posts::platform.eq(account.slot.platform.as_str()),
            ),
            (
                posts::status.eq(plan.status.as_str()),
                posts::body.eq(&d.body),
                posts::body_key.eq(&plan.body_key),
                posts::topic.eq(d.topic.as_deref()),
                posts::sponsored.eq(plan.sponsored),
                posts::planned_at.eq(plan.planned_at.map(jiff_diesel::Timestamp::from)),
                posts::characters.eq(json!(plan.characters)),
            ),
            (
                posts::stocked_at.eq(case_when::<_, _, Timestamptz>(
                    stocked.into_sql::<Bool>(),
                    dsl::now,
                )),
                posts::stock_reason.eq(plan.stocked.as_ref().map(|s| s.reason.as_str())),
                posts::from_status.eq(plan.stocked.as_ref().map(|s| s.from.as_str())),
            ),
        ))
        .returning(posts::id)
        .get_result(conn)
        .await?;
    write_change(conn, agent, plan.inserted(id)).await
}

/// Writes a change to a post: a rewrite's columns or the characters set, the media appended,
/// the pick linked, the history and what the change tells.
async fn write_change(
    conn: Tx<'_>,
    agent: AgentRef,
    change: PostChange,
) -> anyhow::Result<DraftView> {
    let characters = change.characters.as_ref().map(|c| json!(c));
    match (&change.rewrite, &characters) {
        (Some(r), _) => {
            // Stocking keeps where the post was: its status and plan before this write.
            let stocked = (r.status == PostStatus::Stocked).into_sql::<Bool>();
            diesel::update(posts::table.find(change.post_id))
                .set((
                    (
                        posts::body.eq(&r.body),
                        posts::body_key.eq(&r.body_key),
                        r.topic.as_deref().map(|t| posts::topic.eq(t)),
                        posts::status.eq(r.status.as_str()),
                        characters.as_ref().map(|c| posts::characters.eq(c)),
                        posts::awaiting_rewrite.eq(r.awaiting_rewrite),
                        posts::rewrite_answered.eq(r.rewrite_answered),
                    ),
                    (
                        posts::stocked_at.eq(case_when::<_, _, Timestamptz>(stocked, dsl::now)),
                        posts::stock_reason.eq(case_when::<_, _, Nullable<Text>>(
                            stocked,
                            r.stock_reason.as_deref(),
                        )),
                        posts::from_status.eq(case_when(stocked, posts::status)),
                        posts::planned_was.eq(case_when(stocked, posts::planned_at)),
                        posts::updated_at.eq(dsl::now),
                    ),
                ))
                .execute(conn)
                .await?;
        }
        (None, Some(characters)) => {
            diesel::update(posts::table.find(change.post_id))
                .set((
                    posts::characters.eq(characters),
                    posts::updated_at.eq(dsl::now),
                ))
                .execute(conn)
                .await?;
        }
        (None, None) => {}
    }
    append_media(conn, change.post_id, &change.added).await?;
    if let Some(pick) = change.pick {
        link_pick(conn, pick, change.post_id).await?;
    }
    record(conn, change.post_id, agent, &change.events).await?;
    crate::events::write(conn, change.told.as_slice()).await?;
    Ok(DraftView {
        inventory: inventory(conn, change.slot_id, change.post_id).await?,
        ..change.view
    })
}

row! {
    struct PickRow {
        id: Uuid,
        status: Stored<PickStatus>,
        slot_id: Uuid,
        code: String,
        post_id: Option<Uuid>,
    }
}

/// The pick numbered `$2` in the agent's workspace (`$1`), locked.
const PICK_FOR_DRAFT: &str = r#"
SELECT p.id, p.status, p.slot_id, s.code, p.post_id
FROM ad_picks p JOIN account_slots s ON s.id = p.slot_id
WHERE p.workspace_id = $1 AND p.number = $2
FOR UPDATE OF p
"#;

/// The pick drafted by the post, which becomes sponsored.
const LINK_PICK: &str = r#"
WITH pick AS (
    UPDATE ad_picks SET status = 'drafted', post_id = $2, drafted_at = now() WHERE id = $1
)
UPDATE posts SET sponsored = true WHERE id = $2
"#;

async fn link_pick(conn: Tx<'_>, pick: Uuid, post_id: Uuid) -> QueryResult<()> {
    sql!(LINK_PICK, pick, post_id).execute(conn).await.map(drop)
}

/// Loads what a change names (the post, locked, and when it is there the cast and the uploads
/// and library items the request names), plans it with `plan` and writes the plan.
async fn change_tx(
    conn: Tx<'_>,
    agent: AgentRef,
    post_id: Uuid,
    characters: Option<&Vec<fleetdesk_drafts::draft::CharacterPick>>,
    (uploads, library): (&[Uuid], &[Uuid]),
    plan: impl FnOnce(ChangeFacts) -> Result<PostChange, DraftRefusal>,
) -> anyhow::Result<Result<DraftView, DraftRefusal>> {
    let facts = match post_fact(conn, agent, post_id).await? {
        None => ChangeFacts::default(),
        Some(p) => ChangeFacts {
            cast: cast_for(conn, p.persona_id, characters).await?,
            uploads: items(conn, agent.workspace_id, uploads, false).await?,
            library: items(conn, agent.workspace_id, library, true).await?,
            post: Some(p),
        },
    };
    Ok(match plan(facts) {
        Ok(change) => Ok(write_change(conn, agent, change).await?),
        Err(refusal) => Err(refusal),
    })
}

const REDO: &str = r#"
SELECT p.id, p.status, s.code, s.platform, p.body, p.topic, p.planned_at, p.characters,
       COALESCE(p.returned_at, p.updated_at) AS returned_at,
       (SELECT count(*) FROM post_media pm WHERE pm.post_id = p.id) AS media,
       (SELECT e.reason FROM review_events e
         WHERE e.post_id = p.id AND e.action = ANY($7)
         ORDER BY e.id DESC LIMIT 1) AS instruction,
       (SELECT COALESCE(jsonb_agg(jsonb_build_object('action', e.action, 'comment', e.reason,
                                                     'by', e.actor_name, 'at', e.created_at)
                                  ORDER BY e.id), '[]'::jsonb)
          FROM review_events e
         WHERE e.post_id = p.id AND e.actor_kind = 'member' AND e.reason IS NOT NULL) AS comments
FROM posts p
JOIN account_slots s ON s.id = p.slot_id
JOIN personas pe ON pe.id = p.persona_id
WHERE p.workspace_id = $1 AND pe.agent_id = $2 AND p.status = ANY($3)
  AND ($4::timestamptz IS NULL OR (COALESCE(p.returned_at, p.updated_at), p.id) > ($4, $5))
ORDER BY COALESCE(p.returned_at, p.updated_at), p.id
LIMIT $6
"#;

/// The review moves whose comment is the instruction a returned draft carries.
const INSTRUCTIONS: [PostStatus; 2] = [PostStatus::SentBack, PostStatus::RewriteRequested];

row! {
    struct RedoRow into RedoDraft {
        id: Uuid,
        status: Stored<PostStatus>,
        code: String,
        platform: Stored<Platform>,
        body: String,
        topic: Option<String>,
        planned_at: Option<jiff_diesel::Timestamp>,
        characters: JsonOrDefault<Vec<Character>>,
        returned_at: jiff_diesel::Timestamp,
        media: i64,
        instruction: Option<String>,
        comments: Json<Vec<ReviewComment>>,
    }
}

impl DraftsRepo for PgStore {
    fn submit<'a>(
        &'a self,
        agent: AgentRef,
        draft: &'a NewDraft,
    ) -> BoxFuture<'a, anyhow::Result<Result<DraftView, DraftRefusal>>> {
        // A refusal must undo what loading its facts wrote (inline images entered into the
        // library, whose ids the plan needs): it rolls back as an error, then is a value again.
        self.tx(async move |conn| Ok(Ok(submit_tx(conn, agent, draft).await?.map_err(Refused)?)))
            .map(|out| out.or_else(|e| e.downcast().map(|Refused(refusal)| Err(refusal))))
            .boxed()
    }

    fn update<'a>(
        &'a self,
        agent: AgentRef,
        edit: &'a DraftEdit,
    ) -> BoxFuture<'a, anyhow::Result<Result<DraftView, DraftRefusal>>> {
        // The plan refuses before anything is written.
        self.tx(async move |conn| {
            let content = &edit.content;
            let ids = (&content.upload_ids[..], &content.media_ids[..]);
            let plan = |facts| plan::plan_rewrite(edit, facts);
            change_tx(
                conn,
                agent,
                edit.post_id,
                content.characters.as_ref(),
                ids,
                plan,
            )
            .await
        })
    }

    fn attach<'a>(
        &'a self,
        agent: AgentRef,
        post_id: Uuid,
        items: &'a Attach,
        note: Option<&'a str>,
    ) -> BoxFuture<'a, anyhow::Result<Result<DraftView, DraftRefusal>>> {
        self.tx(async move |conn| {
            let plan = |facts| plan::plan_attach(items, note, facts);
            change_tx(conn, agent, post_id, None, items.ids(), plan).await
        })
    }

    fn add_note<'a>(
        &'a self,
        agent: AgentRef,
        post_id: Uuid,
        note: &'a str,
    ) -> BoxFuture<'a, anyhow::Result<Result<(), DraftRefusal>>> {
        self.tx(async move |conn| {
            let post = post_fact(conn, agent, post_id).await?;
            Ok(match plan::plan_note(post, note) {
                Ok((post_id, event)) => Ok(record(conn, post_id, agent, &[event]).await?),
                Err(refusal) => Err(refusal),
            })
        })
    }

    fn redo<'a>(
        &'a self,
        agent: AgentRef,
        statuses: &'a [PostStatus],
        after: Option<(Timestamp, Uuid)>,
        limit: i64,
    ) -> BoxFuture<'a, anyhow::Result<RedoPage>> {
        self.read(async move |conn| {
            let rows: Vec<RedoRow> = sql!(
                REDO,
                agent.workspace_id,
                agent.agent_id,
                column(statuses, |s| s.as_str()),
                after.map(|a| jiff_diesel::Timestamp::from(a.0)),
                after.map(|a| a.1),
                limit + 1,
                INSTRUCTIONS.map(PostStatus::as_str).to_vec()
            )
            .load(conn)
            .await?;
            let items: Vec<RedoDraft> = rows.into_iter().map(Into::into).collect();
            Ok(Page::probed(items, limit, |i| (i.returned_at, i.id)))
        })
    }
}

/// A submit's refusal on its way to roll the transaction back.
#[derive(Debug, thiserror::Error)]
#[error("refused")]
struct Refused(DraftRefusal);

statements!(
    DRAFT_ACCOUNT => AccountRow,
    POST_FOR_CHANGE => PostRow,
    ITEMS => ItemRow,
    INSERT_INLINE,
    APPEND_MEDIA,
    REDO => RedoRow,
    PICK_FOR_DRAFT => PickRow,
    LINK_PICK,
);
