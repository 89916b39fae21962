//! The drafts port over PostgreSQL: one transaction per submit, rewrite, attach or note.

use crate::accounts::{SlotCodes, pick_slot, platform};
use crate::db::{PgStore, prepared};
use crate::record::Entry;
use crate::schema::{media, persona_cast};
use diesel::prelude::*;
use diesel::sql_types::{
    Array, BigInt, Bool, Integer, Jsonb, Nullable, Text, Timestamptz, Uuid as SqlUuid,
};
use diesel_async::{AsyncPgConnection, RunQueryDsl};
use fleetdesk_accounts::AccountState;
use fleetdesk_ads::pick::{PickNumber, PickProblem, PickState, PickStatus, judge_draft};
use fleetdesk_drafts::draft::{CastMember, Character, MediaRef, check_characters, plan_media};
use fleetdesk_drafts::ports::*;
use fleetdesk_kernel::media::MediaKind;
use fleetdesk_kernel::{AgentRef, BoxFuture, Platform, parse_time_input};
use fleetdesk_posts::post::{PostStatus, body_key, landing_status};
use futures_util::FutureExt;
use jiff::Timestamp;
use serde_json::{Value, json};
use uuid::Uuid;

type Tx<'c> = &'c mut AsyncPgConnection;

/// Accounts a code may name, the slots locked so that submits to one account run one at a time
/// (the duplicate rule must see the previous one).
const DRAFT_ACCOUNT: &str = r#"
SELECT s.id AS slot_id, s.code, s.legacy_code, s.platform, s.timezone, s.persona_id,
       pe.project_id, g.id AS generation_id, g.state, (pe.agent_id IS NOT DISTINCT FROM $2) AS mine
FROM account_slots s
JOIN personas pe ON pe.id = s.persona_id
LEFT JOIN account_generations g ON g.slot_id = s.id AND g.closed_at IS NULL
WHERE s.workspace_id = $1 AND (s.code = $3 OR s.legacy_code = $3)
  AND ($4::text IS NULL OR s.platform = $4)
FOR UPDATE OF s
"#;

#[derive(QueryableByName)]
struct AccountRow {
    #[diesel(embed)]
    slot: SlotCodes,
    #[diesel(sql_type = Text)]
    timezone: String,
    #[diesel(sql_type = SqlUuid)]
    persona_id: Uuid,
    #[diesel(sql_type = SqlUuid)]
    project_id: Uuid,
    #[diesel(sql_type = Nullable<SqlUuid>)]
    generation_id: Option<Uuid>,
    #[diesel(sql_type = Nullable<Text>)]
    state: Option<String>,
}

/// A post with its account, locked for the change.
const POST_FOR_CHANGE: &str = r#"
SELECT p.id, p.status, p.body, p.returned_body, p.awaiting_rewrite, p.rewrite_answered,
       p.project_id, p.persona_id, p.slot_id, p.planned_at, p.characters,
       s.code, s.platform, g.state,
       (pe.agent_id IS NOT DISTINCT FROM $2) AS mine
FROM posts p
JOIN account_slots s ON s.id = p.slot_id
JOIN personas pe ON pe.id = p.persona_id
LEFT JOIN account_generations g ON g.slot_id = s.id AND g.closed_at IS NULL
WHERE p.id = $1 AND p.workspace_id = $3
FOR UPDATE OF p
"#;

#[derive(QueryableByName)]
struct PostRow {
    #[diesel(sql_type = SqlUuid)]
    id: Uuid,
    #[diesel(sql_type = Text)]
    status: String,
    #[diesel(sql_type = Text)]
    body: String,
    #[diesel(sql_type = Nullable<Text>)]
    returned_body: Option<String>,
    #[diesel(sql_type = Bool)]
    awaiting_rewrite: bool,
    #[diesel(sql_type = Bool)]
    rewrite_answered: bool,
    #[diesel(sql_type = SqlUuid)]
    project_id: Uuid,
    #[diesel(sql_type = SqlUuid)]
    persona_id: Uuid,
    #[diesel(sql_type = SqlUuid)]
    slot_id: Uuid,
    #[diesel(sql_type = Nullable<Timestamptz>)]
    planned_at: Option<jiff_diesel::Timestamp>,
    #[diesel(sql_type = Jsonb)]
    characters: Value,
    #[diesel(sql_type = Text)]
    code: String,
    #[diesel(sql_type = Text)]
    platform: String,
    #[diesel(sql_type = Nullable<Text>)]
    state: Option<String>,
    #[diesel(sql_type = Bool)]
    mine: bool,
}

impl PostRow {
    fn status(&self) -> anyhow::Result<PostStatus> {
        status(&self.status)
    }
}

fn status(s: &str) -> anyhow::Result<PostStatus> {
    PostStatus::parse(s).ok_or_else(|| anyhow::anyhow!("stored post status {s}"))
}

fn is_active(state: Option<&str>) -> bool {
    state.and_then(AccountState::parse) == Some(AccountState::Active)
}

/// Uploads named by id, with the library item each ended in.
const UPLOAD_REFS: &str = r#"
SELECT u.id AS ref_id, m.id AS media_id, m.kind, m.project_id, (m.archived_at IS NOT NULL) AS archived
FROM uploads u
LEFT JOIN media m ON m.id = u.media_id
WHERE u.workspace_id = $1 AND u.id = ANY($2)
"#;

/// An upload or library item named by id (`ref_id`), with the library item it is.
#[derive(QueryableByName, Queryable)]
struct RefRow {
    #[diesel(sql_type = SqlUuid)]
    ref_id: Uuid,
    #[diesel(sql_type = Nullable<SqlUuid>)]
    media_id: Option<Uuid>,
    #[diesel(sql_type = Nullable<Text>)]
    kind: Option<String>,
    #[diesel(sql_type = Nullable<SqlUuid>)]
    project_id: Option<Uuid>,
    #[diesel(sql_type = Nullable<Bool>)]
    archived: Option<bool>,
}

const POST_MEDIA: &str = r#"
SELECT pm.media_id, m.kind
FROM post_media pm JOIN media m ON m.id = pm.media_id
WHERE pm.post_id = $1
ORDER BY pm.position
"#;

#[derive(QueryableByName)]
struct PostMediaRow {
    #[diesel(sql_type = SqlUuid)]
    media_id: Uuid,
    #[diesel(sql_type = Text)]
    kind: String,
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
ON CONFLICT (workspace_id, COALESCE(project_id, '00000000-0000-0000-0000-000000000000'::uuid), sha256)
    WHERE archived_at IS NULL
    DO UPDATE SET thumb_key = EXCLUDED.thumb_key, thumb_mime = EXCLUDED.thumb_mime
    WHERE media.thumb_key IS NULL AND EXCLUDED.thumb_key IS NOT NULL
"#;

const DUPLICATE: &str = r#"
SELECT id FROM posts
WHERE slot_id = $1 AND md5(body) = md5($2) AND body = $2 AND status = ANY($3)
ORDER BY created_at
LIMIT 1
FOR UPDATE
"#;

#[derive(QueryableByName)]
struct IdRow {
    #[diesel(sql_type = SqlUuid)]
    id: Uuid,
}

const INSERT_POST: &str = r#"
INSERT INTO posts (organization_id, workspace_id, project_id, persona_id, slot_id, generation_id,
                   agent_id, status, body, topic, sponsored, planned_at, characters,
                   stocked_at, stock_reason, from_status, platform, body_key)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13,
        CASE WHEN $17 THEN now() END, $14, $18, $15, $16)
RETURNING id
"#;

const APPEND_MEDIA: &str = r#"
INSERT INTO post_media (post_id, media_id, position)
SELECT $1, t.id, COALESCE((SELECT max(position) FROM post_media WHERE post_id = $1), -1) + t.ord
FROM unnest($2::uuid[]) WITH ORDINALITY AS t(id, ord)
"#;

const SET_CHARACTERS: &str = "UPDATE posts SET characters = $2, updated_at = now() WHERE id = $1";

const UPDATE_DRAFT: &str = r#"
UPDATE posts
SET body = $2, topic = COALESCE($3, topic), status = $4, characters = COALESCE($5, characters),
    awaiting_rewrite = $6, rewrite_answered = $7,
    stocked_at = CASE WHEN $10 THEN now() END,
    stock_reason = CASE WHEN $10 THEN $8 END,
    from_status = CASE WHEN $10 THEN status END,
    planned_was = CASE WHEN $10 THEN planned_at END,
    body_key = $9,
    updated_at = now()
WHERE id = $1
"#;

const INVENTORY: &str =
    "SELECT count(*) AS n FROM posts WHERE slot_id = $1 AND status = $3 AND id <> $2";

#[derive(QueryableByName)]
struct CountRow {
    #[diesel(sql_type = BigInt)]
    n: i64,
}

/// An event to record: action, reason, detail.
type Event = (&'static str, Option<String>, Value);

/// A note for the reviewers, shown as an "added note" entry.
fn note_event(note: &str) -> Event {
    ("added note", Some(note.to_owned()), json!({}))
}

async fn record(conn: Tx<'_>, post_id: Uuid, agent: AgentRef, events: &[Event]) -> QueryResult<()> {
    let entries: Vec<Entry> = events
        .iter()
        .map(|(action, reason, detail)| Entry {
            post_id,
            action,
            reason: reason.as_deref(),
            detail,
        })
        .collect();
    crate::record::by_agent(conn, agent.agent_id, &entries).await
}

fn kind(s: &str) -> anyhow::Result<MediaKind> {
    MediaKind::parse(s).ok_or_else(|| anyhow::anyhow!("stored media kind {s}"))
}

async fn cast(conn: Tx<'_>, persona_id: Uuid) -> QueryResult<Vec<CastMember>> {
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

/// Resolves upload and library ids to items usable on a post of `project_id`, in the order
/// given (uploads first); the first bad id refuses the whole request.
async fn resolve_refs(
    conn: Tx<'_>,
    workspace_id: Uuid,
    project_id: Uuid,
    upload_ids: &[Uuid],
    media_ids: &[Uuid],
) -> anyhow::Result<Result<Vec<MediaRef>, DraftRefusal>> {
    let mut out = Vec::with_capacity(upload_ids.len() + media_ids.len());
    for (field, ids, library) in [
        ("upload_ids", upload_ids, false),
        ("media_ids", media_ids, true),
    ] {
        if ids.is_empty() {
            continue;
        }
        let rows: Vec<RefRow> = if !library {
            prepared(
                diesel::sql_query(UPLOAD_REFS)
                    .bind::<SqlUuid, _>(workspace_id)
                    .bind::<Array<SqlUuid>, _>(ids),
            )
            .load(conn)
            .await?
        } else {
            media::table
                .filter(media::workspace_id.eq(workspace_id))
                .filter(media::id.eq_any(ids))
                .select((
                    media::id,
                    media::id.nullable(),
                    media::kind.nullable(),
                    media::project_id,
                    media::archived_at.is_not_null().nullable(),
                ))
                .load(conn)
                .await?
        };
        for (index, id) in ids.iter().enumerate() {
            let refuse = |problem| {
                Ok(Err(DraftRefusal::Item {
                    field,
                    index,
                    id: *id,
                    problem,
                }))
            };
            let Some(row) = rows.iter().find(|r| r.ref_id == *id) else {
                return refuse(ItemProblem::Unknown);
            };
            let (Some(media_id), Some(k)) = (row.media_id, row.kind.as_deref()) else {
                return refuse(ItemProblem::NotFinished);
            };
            if row.archived == Some(true) {
                return refuse(ItemProblem::Archived);
            }
            if row.project_id.is_some_and(|p| p != project_id) {
                return refuse(ItemProblem::OtherProject);
            }
            out.push(MediaRef {
                id: media_id,
                kind: kind(k)?,
            });
        }
    }
    Ok(Ok(out))
}

async fn post_media(conn: Tx<'_>, post_id: Uuid) -> anyhow::Result<Vec<MediaRef>> {
    let rows: Vec<PostMediaRow> =
        prepared(diesel::sql_query(POST_MEDIA).bind::<SqlUuid, _>(post_id))
            .load(conn)
            .await?;
    rows.into_iter()
        .map(|r| {
            Ok(MediaRef {
                id: r.media_id,
                kind: kind(&r.kind)?,
            })
        })
        .collect()
}

/// Enters inline images into the library (or finds them there) and returns them in order.
async fn inline_media(
    conn: Tx<'_>,
    agent: AgentRef,
    project_id: Uuid,
    persona_id: Uuid,
    images: &[StoredImage],
) -> anyhow::Result<Vec<MediaRef>> {
    if images.is_empty() {
        return Ok(Vec::new());
    }
    let shas: Vec<&str> = images.iter().map(|i| i.sha256.as_str()).collect();
    prepared(
        diesel::sql_query(INSERT_INLINE)
            .bind::<SqlUuid, _>(agent.workspace_id)
            .bind::<SqlUuid, _>(project_id)
            .bind::<SqlUuid, _>(persona_id)
            .bind::<SqlUuid, _>(agent.agent_id)
            .bind::<Array<Text>, _>(
                images
                    .iter()
                    .map(|i| i.media_type.as_str())
                    .collect::<Vec<_>>(),
            )
            .bind::<Array<BigInt>, _>(images.iter().map(|i| i.bytes).collect::<Vec<_>>())
            .bind::<Array<Nullable<Integer>>, _>(images.iter().map(|i| i.width).collect::<Vec<_>>())
            .bind::<Array<Nullable<Integer>>, _>(
                images.iter().map(|i| i.height).collect::<Vec<_>>(),
            )
            .bind::<Array<Nullable<Text>>, _>(
                images
                    .iter()
                    .map(|i| i.caption.as_deref())
                    .collect::<Vec<_>>(),
            )
            .bind::<Array<Text>, _>(&shas)
            .bind::<Array<Text>, _>(
                images
                    .iter()
                    .map(|i| i.storage_key.as_str())
                    .collect::<Vec<_>>(),
            )
            .bind::<Text, _>(MediaKind::Image.as_str())
            .bind::<Array<Nullable<Text>>, _>(
                images
                    .iter()
                    .map(|i| i.thumb.as_ref().map(|t| t.key.as_str()))
                    .collect::<Vec<_>>(),
            )
            .bind::<Array<Nullable<Text>>, _>(
                images
                    .iter()
                    .map(|i| i.thumb.as_ref().map(|t| t.mime_type.as_str()))
                    .collect::<Vec<_>>(),
            ),
    )
    .execute(conn)
    .await?;
    let rows: Vec<(Uuid, String)> = media::table
        .filter(media::workspace_id.eq(agent.workspace_id))
        .filter(media::project_id.eq(project_id))
        .filter(media::sha256.eq_any(&shas))
        .filter(media::archived_at.is_null())
        .select((media::id, media::sha256))
        .load(conn)
        .await?;
    images
        .iter()
        .map(|i| {
            rows.iter()
                .find(|(_, sha256)| *sha256 == i.sha256)
                .map(|(id, _)| MediaRef {
                    id: *id,
                    kind: MediaKind::Image,
                })
                .ok_or_else(|| anyhow::anyhow!("inline image {} not in the library", i.sha256))
        })
        .collect()
}

async fn append_media(conn: Tx<'_>, post_id: Uuid, added: &[MediaRef]) -> QueryResult<()> {
    if added.is_empty() {
        return Ok(());
    }
    let ids: Vec<Uuid> = added.iter().map(|m| m.id).collect();
    prepared(
        diesel::sql_query(APPEND_MEDIA)
            .bind::<SqlUuid, _>(post_id)
            .bind::<Array<SqlUuid>, _>(ids),
    )
    .execute(conn)
    .await?;
    Ok(())
}

async fn inventory(conn: Tx<'_>, slot_id: Uuid, post_id: Uuid) -> QueryResult<i64> {
    let row: CountRow = prepared(
        diesel::sql_query(INVENTORY)
            .bind::<SqlUuid, _>(slot_id)
            .bind::<SqlUuid, _>(post_id)
            .bind::<Text, _>(PostStatus::Stocked.as_str()),
    )
    .get_result(conn)
    .await?;
    Ok(row.n)
}

/// The answer for a post after a change, carrying `media` in all and the account's other
/// stocked posts.
async fn answer(
    conn: Tx<'_>,
    post: PostRow,
    status: PostStatus,
    platform: Platform,
    media: &[MediaRef],
    characters: Vec<Character>,
) -> QueryResult<DraftView> {
    let (images, videos) = counts(media);
    Ok(DraftView {
        inventory: inventory(conn, post.slot_id, post.id).await?,
        id: post.id,
        status,
        code: post.code,
        platform,
        planned_at: post.planned_at.map(Into::into),
        images,
        videos,
        duplicate: false,
        characters,
        rewrite_answered: post.rewrite_answered,
        stocked_because: None,
    })
}

fn counts(media: &[MediaRef]) -> (i64, i64) {
    let images = media.iter().filter(|m| m.kind == MediaKind::Image).count() as i64;
    (images, media.len() as i64 - images)
}

fn characters_json(c: &[Character]) -> Value {
    serde_json::to_value(c).unwrap_or_else(|_| json!([]))
}

fn characters_of(v: &Value) -> Vec<Character> {
    serde_json::from_value(v.clone()).unwrap_or_default()
}

fn ids_json(m: &[MediaRef]) -> Value {
    json!(m.iter().map(|m| m.id).collect::<Vec<_>>())
}

/// What the account's state says about a submitted post.
fn stock_reason(code: &str, state: Option<&str>) -> String {
    match state {
        Some(s) => format!("account {code} is {s}, not active"),
        None => format!("account {code} has no live account"),
    }
}

/// The characters a request sets, checked against the cast.
async fn picked_characters(
    conn: Tx<'_>,
    persona_id: Uuid,
    picks: Option<&Vec<fleetdesk_drafts::draft::CharacterPick>>,
) -> anyhow::Result<Result<Option<Vec<Character>>, DraftRefusal>> {
    let Some(picks) = picks else {
        return Ok(Ok(None));
    };
    if picks.is_empty() {
        return Ok(Ok(Some(Vec::new())));
    }
    let cast = cast(conn, persona_id).await?;
    Ok(check_characters(picks, &cast)
        .map(Some)
        .map_err(|(i, e)| DraftRefusal::Character(i, e)))
}

macro_rules! refuse {
    ($e:expr) => {
        match $e {
            Ok(v) => v,
            Err(r) => return Ok(Err(r)),
        }
    };
}

async fn submit_tx(
    conn: Tx<'_>,
    agent: AgentRef,
    d: &NewDraft,
) -> anyhow::Result<Result<DraftView, DraftRefusal>> {
    let rows: Vec<AccountRow> = prepared(
        diesel::sql_query(DRAFT_ACCOUNT)
            .bind::<SqlUuid, _>(agent.workspace_id)
            .bind::<SqlUuid, _>(agent.agent_id)
            .bind::<Text, _>(d.code.code.as_str())
            .bind::<Nullable<Text>, _>(d.code.platform.map(Platform::as_str)),
    )
    .load(conn)
    .await?;
    let account = refuse!(
        pick_slot(rows, d.code.code.as_str(), d.code.platform, |r| &r.slot)
            .map_err(DraftRefusal::Account)
    );
    let platform = platform(&account.slot.platform)?;
    let planned_at = match &d.planned_at {
        Some(raw) => {
            let zone = jiff::tz::TimeZone::get(&account.timezone)?;
            Some(refuse!(
                parse_time_input(raw, &zone).map_err(DraftRefusal::PlannedAt)
            ))
        }
        None => None,
    };
    let characters =
        refuse!(picked_characters(conn, account.persona_id, d.content.characters.as_ref()).await?);
    let refs = refuse!(
        resolve_refs(
            conn,
            agent.workspace_id,
            account.project_id,
            &d.content.upload_ids,
            &d.content.media_ids,
        )
        .await?
    );
    let inline = inline_media(
        conn,
        agent,
        account.project_id,
        account.persona_id,
        &d.content.images,
    )
    .await?;
    let incoming: Vec<MediaRef> = inline.into_iter().chain(refs).collect();

    let duplicate: Option<IdRow> = prepared(
        diesel::sql_query(DUPLICATE)
            .bind::<SqlUuid, _>(account.slot.slot_id)
            .bind::<Text, _>(&d.body)
            .bind::<Array<Text>, _>(PostStatus::unpublished()),
    )
    .get_result(conn)
    .await
    .optional()?;

    // The pick is judged against the post a resend found: the one that drafted it already.
    let pick = match d.pick {
        Some(number) => {
            let state = refuse!(pick_for_draft(conn, agent, number).await?);
            let post = duplicate.as_ref().map(|p| p.id);
            let link = refuse!(
                judge_draft(&state.pick, account.slot.slot_id, post).map_err(DraftRefusal::Pick)
            );
            link.then_some(state.id)
        }
        None => None,
    };

    if let Some(original) = duplicate {
        if let Some(pick) = pick {
            let other: Option<NumberRow> = prepared(
                diesel::sql_query(PICK_ON_POST)
                    .bind::<SqlUuid, _>(original.id)
                    .bind::<SqlUuid, _>(pick),
            )
            .get_result(conn)
            .await
            .optional()?;
            if let Some(other) = other {
                return Ok(Err(DraftRefusal::Pick(PickProblem::PostHasPick {
                    post_id: original.id,
                    other: PickNumber(other.number),
                })));
            }
            link_pick(conn, pick, original.id).await?;
        }
        return duplicate_tx(conn, agent, d, original.id, characters, &incoming).await;
    }

    let added = refuse!(plan_media(platform, &[], &incoming).map_err(DraftRefusal::Caps));
    let active = is_active(account.state.as_deref());
    let landing = landing_status(d.submit, active);
    let stocked = landing == PostStatus::Stocked;
    let reason = stocked.then(|| stock_reason(&account.slot.code, account.state.as_deref()));
    // A stocked submission goes back where it would have landed on an active account.
    let from_status = stocked.then(|| landing_status(d.submit, true).as_str());
    let characters = characters.unwrap_or_default();
    let post: IdRow = prepared(
        diesel::sql_query(INSERT_POST)
            .bind::<SqlUuid, _>(agent.organization_id)
            .bind::<SqlUuid, _>(agent.workspace_id)
            .bind::<SqlUuid, _>(account.project_id)
            .bind::<SqlUuid, _>(account.persona_id)
            .bind::<SqlUuid, _>(account.slot.slot_id)
            .bind::<Nullable<SqlUuid>, _>(account.generation_id)
            .bind::<SqlUuid, _>(agent.agent_id)
            .bind::<Text, _>(landing.as_str())
            .bind::<Text, _>(&d.body)
            .bind::<Nullable<Text>, _>(d.topic.as_deref())
            .bind::<Bool, _>(d.sponsored || pick.is_some())
            .bind::<Nullable<Timestamptz>, _>(planned_at.map(jiff_diesel::Timestamp::from))
            .bind::<Jsonb, _>(characters_json(&characters))
            .bind::<Nullable<Text>, _>(reason.as_deref())
            .bind::<Text, _>(platform.as_str())
            .bind::<Text, _>(body_key(&d.body))
            .bind::<Bool, _>(stocked)
            .bind::<Nullable<Text>, _>(from_status),
    )
    .get_result(conn)
    .await?;
    append_media(conn, post.id, &added).await?;
    if let Some(pick) = pick {
        link_pick(conn, pick, post.id).await?;
    }
    let mut events: Vec<Event> = vec![(
        match landing {
            PostStatus::Draft => "saved_draft",
            PostStatus::Stocked => "stocked",
            _ => "submitted",
        },
        reason.clone(),
        json!({"media": ids_json(&added)}),
    )];
    if let Some(note) = &d.content.note {
        events.push(note_event(note));
    }
    record(conn, post.id, agent, &events).await?;
    let (images, videos) = counts(&added);
    Ok(Ok(DraftView {
        id: post.id,
        status: landing,
        code: account.slot.code,
        platform,
        planned_at,
        images,
        videos,
        duplicate: false,
        characters,
        rewrite_answered: false,
        stocked_because: stocked.then_some(reason),
        inventory: inventory(conn, account.slot.slot_id, post.id).await?,
    }))
}

/// The same body again for a post not yet published: the original answers, and what the
/// resend adds (media, characters, note) is applied to it.
/// A pick as a draft finds it: its row, and its state for the rule.
struct DraftPick {
    id: Uuid,
    pick: PickState,
}

#[derive(QueryableByName)]
struct PickRow {
    #[diesel(sql_type = SqlUuid)]
    id: Uuid,
    #[diesel(sql_type = Text)]
    status: String,
    #[diesel(sql_type = SqlUuid)]
    slot_id: Uuid,
    #[diesel(sql_type = Text)]
    code: String,
    #[diesel(sql_type = Nullable<SqlUuid>)]
    post_id: Option<Uuid>,
}

/// The pick numbered `$2` in the agent's workspace (`$1`), locked.
const PICK_FOR_DRAFT: &str = r#"
SELECT p.id, p.status, p.slot_id, s.code, p.post_id
FROM ad_picks p JOIN account_slots s ON s.id = p.slot_id
WHERE p.workspace_id = $1 AND p.number = $2
FOR UPDATE OF p
"#;

/// Another pick the post drafted (`$2`: the one a resend names).
const PICK_ON_POST: &str = r#"
SELECT number FROM ad_picks WHERE post_id = $1 AND status = 'drafted' AND id <> $2 LIMIT 1
"#;

#[derive(QueryableByName)]
struct NumberRow {
    #[diesel(sql_type = BigInt)]
    number: i64,
}

/// The pick drafted by the post, which becomes sponsored.
const LINK_PICK: &str = r#"
WITH pick AS (
    UPDATE ad_picks SET status = 'drafted', post_id = $2, drafted_at = now() WHERE id = $1
)
UPDATE posts SET sponsored = true WHERE id = $2
"#;

async fn pick_for_draft(
    conn: Tx<'_>,
    agent: AgentRef,
    number: PickNumber,
) -> anyhow::Result<Result<DraftPick, DraftRefusal>> {
    let row: Option<PickRow> = prepared(
        diesel::sql_query(PICK_FOR_DRAFT)
            .bind::<SqlUuid, _>(agent.workspace_id)
            .bind::<BigInt, _>(number.0),
    )
    .get_result(conn)
    .await
    .optional()?;
    let Some(row) = row else {
        return Ok(Err(DraftRefusal::Pick(PickProblem::Unknown(number))));
    };
    Ok(Ok(DraftPick {
        id: row.id,
        pick: PickState {
            number,
            status: PickStatus::parse(&row.status)
                .ok_or_else(|| anyhow::anyhow!("stored pick status {:?}", row.status))?,
            account_id: row.slot_id,
            code: row.code,
            post_id: row.post_id,
        },
    }))
}

async fn link_pick(conn: Tx<'_>, pick: Uuid, post_id: Uuid) -> QueryResult<()> {
    prepared(
        diesel::sql_query(LINK_PICK)
            .bind::<SqlUuid, _>(pick)
            .bind::<SqlUuid, _>(post_id),
    )
    .execute(conn)
    .await
    .map(drop)
}

async fn duplicate_tx(
    conn: Tx<'_>,
    agent: AgentRef,
    d: &NewDraft,
    post_id: Uuid,
    characters: Option<Vec<Character>>,
    incoming: &[MediaRef],
) -> anyhow::Result<Result<DraftView, DraftRefusal>> {
    let post: PostRow = prepared(
        diesel::sql_query(POST_FOR_CHANGE)
            .bind::<SqlUuid, _>(post_id)
            .bind::<SqlUuid, _>(agent.agent_id)
            .bind::<SqlUuid, _>(agent.workspace_id),
    )
    .get_result(conn)
    .await?;
    let status = post.status()?;
    let platform = platform(&post.platform)?;
    let existing = post_media(conn, post.id).await?;
    let added = refuse!(plan_media(platform, &existing, incoming).map_err(DraftRefusal::Caps));
    if !added.is_empty() && !status.takes_media() {
        return Ok(Err(DraftRefusal::MediaClosed(status)));
    }
    append_media(conn, post.id, &added).await?;
    let mut events: Vec<Event> = vec![(
        "resubmitted_duplicate",
        None,
        json!({"media": ids_json(&added)}),
    )];
    let characters = match characters {
        Some(c) => {
            prepared(
                diesel::sql_query(SET_CHARACTERS)
                    .bind::<SqlUuid, _>(post.id)
                    .bind::<Jsonb, _>(characters_json(&c)),
            )
            .execute(conn)
            .await?;
            events.push(("characters_set", None, characters_json(&c)));
            c
        }
        None => characters_of(&post.characters),
    };
    if let Some(note) = &d.content.note {
        events.push(note_event(note));
    }
    record(conn, post.id, agent, &events).await?;
    let all: Vec<MediaRef> = existing.into_iter().chain(added).collect();
    let view = answer(conn, post, status, platform, &all, characters).await?;
    Ok(Ok(DraftView {
        duplicate: true,
        ..view
    }))
}

/// Loads a post for a change by its author: 404 outside the workspace, 403 another agent's.
async fn own_post(
    conn: Tx<'_>,
    agent: AgentRef,
    post_id: Uuid,
) -> anyhow::Result<Result<PostRow, DraftRefusal>> {
    let post: Option<PostRow> = prepared(
        diesel::sql_query(POST_FOR_CHANGE)
            .bind::<SqlUuid, _>(post_id)
            .bind::<SqlUuid, _>(agent.agent_id)
            .bind::<SqlUuid, _>(agent.workspace_id),
    )
    .get_result(conn)
    .await
    .optional()?;
    Ok(match post {
        None => Err(DraftRefusal::PostNotFound),
        Some(p) if !p.mine => Err(DraftRefusal::PostNotYours),
        Some(p) => Ok(p),
    })
}

async fn update_tx(
    conn: Tx<'_>,
    agent: AgentRef,
    e: &DraftEdit,
) -> anyhow::Result<Result<DraftView, DraftRefusal>> {
    let post = refuse!(own_post(conn, agent, e.post_id).await?);
    let status = post.status()?;
    if !status.is_draft() {
        return Ok(Err(DraftRefusal::NotEditable(status)));
    }
    if post.awaiting_rewrite && post.returned_body.as_deref() == Some(e.body.as_str()) {
        return Ok(Err(DraftRefusal::SameAsReturned));
    }
    let platform = platform(&post.platform)?;
    let characters =
        refuse!(picked_characters(conn, post.persona_id, e.content.characters.as_ref()).await?);
    let refs = refuse!(
        resolve_refs(
            conn,
            agent.workspace_id,
            post.project_id,
            &e.content.upload_ids,
            &e.content.media_ids,
        )
        .await?
    );
    let existing = post_media(conn, post.id).await?;
    let added = refuse!(plan_media(platform, &existing, &refs).map_err(DraftRefusal::Caps));

    let changed = e.body != post.body;
    let answered = post.awaiting_rewrite && changed;
    let awaiting = post.awaiting_rewrite && !changed;
    let rewrite_answered = post.rewrite_answered || answered;
    let landing = landing_status(e.submit, is_active(post.state.as_deref()));
    let reason =
        (landing == PostStatus::Stocked).then(|| stock_reason(&post.code, post.state.as_deref()));
    prepared(
        diesel::sql_query(UPDATE_DRAFT)
            .bind::<SqlUuid, _>(post.id)
            .bind::<Text, _>(&e.body)
            .bind::<Nullable<Text>, _>(e.topic.as_deref())
            .bind::<Text, _>(landing.as_str())
            .bind::<Nullable<Jsonb>, _>(characters.as_ref().map(|c| characters_json(c)))
            .bind::<Bool, _>(awaiting)
            .bind::<Bool, _>(rewrite_answered)
            .bind::<Nullable<Text>, _>(reason.as_deref())
            .bind::<Text, _>(body_key(&e.body))
            .bind::<Bool, _>(landing == PostStatus::Stocked),
    )
    .execute(conn)
    .await?;
    append_media(conn, post.id, &added).await?;
    let mut events: Vec<Event> = Vec::new();
    if answered {
        events.push(("rewrite_answered", None, json!({"from": status})));
    } else if changed {
        events.push(("rewritten", None, json!({})));
    }
    events.push((
        match landing {
            PostStatus::Draft => "saved_draft",
            PostStatus::Stocked => "stocked",
            _ => "submitted",
        },
        reason.clone(),
        json!({"media": ids_json(&added)}),
    ));
    if let Some(c) = &characters {
        events.push(("characters_set", None, characters_json(c)));
    }
    if let Some(note) = &e.content.note {
        events.push(note_event(note));
    }
    record(conn, post.id, agent, &events).await?;
    let all: Vec<MediaRef> = existing.into_iter().chain(added).collect();
    let characters = characters.unwrap_or_else(|| characters_of(&post.characters));
    let view = answer(conn, post, landing, platform, &all, characters).await?;
    Ok(Ok(DraftView {
        rewrite_answered,
        stocked_because: (landing == PostStatus::Stocked).then_some(reason),
        ..view
    }))
}

async fn attach_tx(
    conn: Tx<'_>,
    agent: AgentRef,
    post_id: Uuid,
    items: &Attach,
    note: Option<&str>,
) -> anyhow::Result<Result<DraftView, DraftRefusal>> {
    let post = refuse!(own_post(conn, agent, post_id).await?);
    let status = post.status()?;
    if !status.takes_media() {
        return Ok(Err(DraftRefusal::MediaClosed(status)));
    }
    let platform = platform(&post.platform)?;
    let (uploads, media, action): (&[Uuid], &[Uuid], &'static str) = match items {
        Attach::Uploads(ids) => (ids, &[], "images_attached"),
        Attach::Media(ids) => (&[], ids, "media_attached"),
    };
    let refs =
        refuse!(resolve_refs(conn, agent.workspace_id, post.project_id, uploads, media).await?);
    let existing = post_media(conn, post.id).await?;
    let added = refuse!(plan_media(platform, &existing, &refs).map_err(DraftRefusal::Caps));
    append_media(conn, post.id, &added).await?;
    let mut events: Vec<Event> = vec![(action, None, json!({"media": ids_json(&added)}))];
    if let Some(note) = note {
        events.push(note_event(note));
    }
    record(conn, post.id, agent, &events).await?;
    let all: Vec<MediaRef> = existing.into_iter().chain(added).collect();
    let characters = characters_of(&post.characters);
    Ok(Ok(
        answer(conn, post, status, platform, &all, characters).await?
    ))
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

#[derive(QueryableByName)]
struct RedoRow {
    #[diesel(sql_type = SqlUuid)]
    id: Uuid,
    #[diesel(sql_type = Text)]
    status: String,
    #[diesel(sql_type = Text)]
    code: String,
    #[diesel(sql_type = Text)]
    platform: String,
    #[diesel(sql_type = Text)]
    body: String,
    #[diesel(sql_type = Nullable<Text>)]
    topic: Option<String>,
    #[diesel(sql_type = Nullable<Timestamptz>)]
    planned_at: Option<jiff_diesel::Timestamp>,
    #[diesel(sql_type = Jsonb)]
    characters: Value,
    #[diesel(sql_type = Timestamptz)]
    returned_at: jiff_diesel::Timestamp,
    #[diesel(sql_type = BigInt)]
    media: i64,
    #[diesel(sql_type = Nullable<Text>)]
    instruction: Option<String>,
    #[diesel(sql_type = Jsonb)]
    comments: Value,
}

fn comments(v: &Value) -> anyhow::Result<Vec<ReviewComment>> {
    let Some(items) = v.as_array() else {
        return Ok(Vec::new());
    };
    items
        .iter()
        .map(|c| {
            let text = |k: &str| c.get(k).and_then(Value::as_str).unwrap_or_default();
            Ok(ReviewComment {
                action: text("action").to_owned(),
                comment: text("comment").to_owned(),
                by: text("by").to_owned(),
                at: text("at")
                    .parse::<Timestamp>()
                    .map_err(|e| anyhow::anyhow!("review event time: {e}"))?,
            })
        })
        .collect()
}

impl DraftsRepo for PgStore {
    fn submit<'a>(
        &'a self,
        agent: AgentRef,
        draft: &'a NewDraft,
    ) -> BoxFuture<'a, anyhow::Result<Result<DraftView, DraftRefusal>>> {
        self.tx(async move |conn| rollback_refusal(submit_tx(conn, agent, draft).await?))
            .map(|out| out.or_else(refusal_value))
            .boxed()
    }

    fn update<'a>(
        &'a self,
        agent: AgentRef,
        edit: &'a DraftEdit,
    ) -> BoxFuture<'a, anyhow::Result<Result<DraftView, DraftRefusal>>> {
        self.tx(async move |conn| rollback_refusal(update_tx(conn, agent, edit).await?))
            .map(|out| out.or_else(refusal_value))
            .boxed()
    }

    fn attach<'a>(
        &'a self,
        agent: AgentRef,
        post_id: Uuid,
        items: &'a Attach,
        note: Option<&'a str>,
    ) -> BoxFuture<'a, anyhow::Result<Result<DraftView, DraftRefusal>>> {
        self.tx(async move |conn| {
            rollback_refusal(attach_tx(conn, agent, post_id, items, note).await?)
        })
        .map(|out| out.or_else(refusal_value))
        .boxed()
    }

    fn add_note<'a>(
        &'a self,
        agent: AgentRef,
        post_id: Uuid,
        note: &'a str,
    ) -> BoxFuture<'a, anyhow::Result<Result<(), DraftRefusal>>> {
        self.tx(async move |conn| {
            let post = match own_post(conn, agent, post_id).await? {
                Ok(p) => p,
                Err(r) => return Ok(Err(r)),
            };
            record(conn, post.id, agent, &[note_event(note)]).await?;
            Ok(Ok(()))
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
            let names: Vec<&str> = statuses.iter().map(|s| s.as_str()).collect();
            let rows: Vec<RedoRow> = prepared(
                diesel::sql_query(REDO)
                    .bind::<SqlUuid, _>(agent.workspace_id)
                    .bind::<SqlUuid, _>(agent.agent_id)
                    .bind::<Array<Text>, _>(names)
                    .bind::<Nullable<Timestamptz>, _>(
                        after.map(|a| jiff_diesel::Timestamp::from(a.0)),
                    )
                    .bind::<Nullable<SqlUuid>, _>(after.map(|a| a.1))
                    .bind::<BigInt, _>(limit + 1)
                    .bind::<Array<Text>, _>(INSTRUCTIONS.map(PostStatus::as_str).to_vec()),
            )
            .load(conn)
            .await?;
            let more = rows.len() as i64 > limit;
            let items = rows
                .into_iter()
                .take(limit as usize)
                .map(|r| {
                    Ok(RedoDraft {
                        id: r.id,
                        status: status(&r.status)?,
                        platform: platform(&r.platform)?,
                        code: r.code,
                        body: r.body,
                        topic: r.topic,
                        planned_at: r.planned_at.map(Into::into),
                        instruction: r.instruction,
                        returned_at: r.returned_at.into(),
                        comments: comments(&r.comments)?,
                        characters: characters_of(&r.characters),
                        media: r.media,
                    })
                })
                .collect::<anyhow::Result<Vec<_>>>()?;
            Ok(Page::new(items, more, |i| (i.returned_at, i.id)))
        })
    }
}

/// A refusal found mid-transaction must undo what the transaction wrote so far (inline images
/// entered into the library): it travels as an error to roll back, then becomes a value again.
#[derive(Debug, thiserror::Error)]
#[error("refused")]
struct Refused(DraftRefusal);

fn rollback_refusal<T>(out: Result<T, DraftRefusal>) -> anyhow::Result<Result<T, DraftRefusal>> {
    match out {
        Ok(v) => Ok(Ok(v)),
        Err(r) => Err(anyhow::Error::new(Refused(r))),
    }
}

fn refusal_value<T>(e: anyhow::Error) -> anyhow::Result<Result<T, DraftRefusal>> {
    match e.downcast::<Refused>() {
        Ok(Refused(r)) => Ok(Err(r)),
        Err(e) => Err(e),
    }
}

statements!(
    DRAFT_ACCOUNT,
    POST_FOR_CHANGE,
    UPLOAD_REFS,
    POST_MEDIA,
    INSERT_INLINE,
    DUPLICATE,
    INSERT_POST,
    APPEND_MEDIA,
    SET_CHARACTERS,
    UPDATE_DRAFT,
    INVENTORY,
    REDO,
    PICK_FOR_DRAFT,
    PICK_ON_POST,
    LINK_PICK,
);
