//! The media port over PostgreSQL: upload links, their progress, and the library.

use crate::accounts::{SlotCodes, pick_slot};
use crate::db::PgStore;
use crate::rows::Stored;
use crate::schema::{media, projects, uploads};
use diesel::dsl::{IntervalDsl, now};
use diesel::pg::Pg;
use diesel::prelude::*;
use diesel::sql_types::Timestamptz;
use diesel_async::RunQueryDsl;
use fleetdesk_kernel::media::{MediaKind, MediaType};
use fleetdesk_kernel::{AgentRef, BoxFuture, Platform};
use fleetdesk_media::ports::*;
use fleetdesk_media::thumbs::ThumbRef;
use fleetdesk_media::upload::UploadMode;
use futures_util::FutureExt;
use uuid::Uuid;

const UPLOAD_ACCOUNT: &str = r#"
SELECT s.id AS slot_id, s.code, s.legacy_code, s.platform, s.persona_id, pe.project_id,
       (pe.agent_id IS NOT DISTINCT FROM $2) AS mine
FROM account_slots s
JOIN personas pe ON pe.id = s.persona_id
WHERE s.workspace_id = $1 AND (s.code = $3 OR s.legacy_code = $3)
  AND ($4::text IS NULL OR s.platform = $4)
"#;

row! {
    struct UploadAccount {
        #[diesel(embed)]
        slot: SlotCodes,
        persona_id: Uuid,
        project_id: Uuid,
    }
}

const UPLOAD_CHECKS: &str = r#"
SELECT (SELECT id FROM projects WHERE workspace_id = $1 AND name = $2) AS project_id,
       ($4::text IS NULL OR EXISTS (SELECT 1 FROM persona_cast WHERE persona_id = $3 AND code = $4))
           AS in_cast
"#;

row! {
    struct UploadChecks {
        project_id: Option<Uuid>,
        in_cast: bool,
    }
}

row! {
    struct IdRow {
        id: Uuid,
    }
}

selectable! {
    #[diesel(table_name = uploads)]
    struct UploadRow into UploadState {
        id: Uuid,
        workspace_id: Uuid,
        project_id: Option<Uuid>,
        persona_id: Uuid,
        agent_id: Uuid,
        character: Option<String>,
        caption: Option<String>,
        tags: Vec<String>,
        mode: Stored<UploadMode>,
        mime_type: Option<Stored<MediaType>>,
        declared_bytes: Option<i64>,
        chunks: Option<i32>,
        token_hash: Vec<u8>,
        expires_at: jiff_diesel::Timestamp,
        next_chunk: i32,
        received_bytes: i64,
        hash_state: Option<Vec<u8>>,
        detected_mime: Option<Stored<MediaType>>,
        poster_key: Option<String>,
        poster_mime: Option<Stored<MediaType>>,
        media_id: Option<Uuid>,
    }
}

/// A poster or thumbnail is there when both its key and its type are stored.
fn file_ref(key: Option<String>, mime: Option<Stored<MediaType>>) -> Option<(String, MediaType)> {
    key.zip(mime).map(|(key, mime)| (key, mime.0))
}

/// The file enters the library with its thumbnail; an identical file already there (same
/// workspace and project, not archived) is found instead.
const INSERT_MEDIA: &str = r#"
INSERT INTO media (workspace_id, project_id, persona_id, character, kind, mime_type, bytes, width,
                   height, duration_ms, caption, tags, sha256, storage_key, parts, part_bytes,
                   poster_key, poster_mime, source, created_by_agent, thumb_key, thumb_mime)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18,
        'upload', $19, $20, $21)
ON CONFLICT (workspace_id, COALESCE(project_id, '00000000-0000-0000-0000-000000000000'::uuid),
             sha256)
    WHERE archived_at IS NULL DO NOTHING
RETURNING id
"#;

/// An identical file sent again: the item already there (same workspace `$1` and project `$2`,
/// same `sha256` `$3`, not archived) keeps what it has and gains what it lacks (caption,
/// character, poster, thumbnail: a video's only with the poster it was made from) and the new
/// tags (at most 20, first come first kept; a tag in another case is the same tag, as the tag
/// filter reads it). The right-hand sides read the row as it was.
const ENRICH_MEDIA: &str = r#"
UPDATE media
SET caption = COALESCE(caption, $4), character = COALESCE(character, $5),
    poster_key = COALESCE(poster_key, $7), poster_mime = COALESCE(poster_mime, $8),
    thumb_key = CASE WHEN thumb_key IS NULL AND (kind = 'image' OR poster_key IS NULL)
                     THEN $9 ELSE thumb_key END,
    thumb_mime = CASE WHEN thumb_key IS NULL AND (kind = 'image' OR poster_key IS NULL)
                      THEN $10 ELSE thumb_mime END,
    tags = ARRAY(SELECT (array_agg(t ORDER BY o))[1]
                 FROM unnest(tags || $6::text[]) WITH ORDINALITY AS u(t, o)
                 GROUP BY lower(t) ORDER BY min(o) LIMIT 20)
WHERE workspace_id = $1 AND project_id IS NOT DISTINCT FROM $2 AND sha256 = $3
  AND archived_at IS NULL
RETURNING id
"#;

/// The library as an agent sees it: items of every project of its workspace and unscoped ones
/// (specification, Authentication 6); `project` narrows to one project plus the unscoped items.
/// The search text `$6` is found in a caption or a tag in any case, each character as it is.
const LIST: &str = r#"
SELECT * FROM (
  SELECT m.id, m.kind, m.caption, m.tags, pr.name AS project, m.character, m.mime_type, m.bytes,
         m.width, m.height, m.duration_ms, m.created_at, (m.poster_key IS NOT NULL) AS has_poster,
         (SELECT count(*) FROM post_media pm WHERE pm.media_id = m.id) AS used_count
  FROM media m
  LEFT JOIN projects pr ON pr.id = m.project_id
  WHERE m.workspace_id = $1 AND m.archived_at IS NULL
    AND ($2::uuid IS NULL OR m.project_id IS NULL OR m.project_id = $2)
    AND ($3::text IS NULL OR m.character = $3)
    AND ($4::text IS NULL OR EXISTS (SELECT 1 FROM unnest(m.tags) t WHERE lower(t) = lower($4)))
    AND ($5::text IS NULL OR m.kind = $5)
    AND ($6::text IS NULL OR strpos(lower(m.caption), lower($6)) > 0
         OR EXISTS (SELECT 1 FROM unnest(m.tags) t WHERE strpos(lower(t), lower($6)) > 0))
) items
ORDER BY CASE WHEN $7 THEN used_count END DESC NULLS LAST, created_at DESC, id DESC
LIMIT $8
"#;

row! {
    struct ItemRow into MediaItem {
        id: Uuid,
        kind: Stored<MediaKind>,
        caption: Option<String>,
        tags: Vec<String>,
        project: Option<String>,
        character: Option<String>,
        mime_type: Stored<MediaType>,
        bytes: i64,
        width: Option<i32>,
        height: Option<i32>,
        duration_ms: Option<i64>,
        created_at: jiff_diesel::Timestamp,
        has_poster: bool,
        used_count: i64,
    }
}

#[derive(Queryable, Selectable)]
#[diesel(table_name = media, check_for_backend(Pg))]
struct FileRow {
    mime_type: Stored<MediaType>,
    storage_key: String,
    parts: i32,
    part_bytes: i64,
    bytes: i64,
    poster_key: Option<String>,
    poster_mime: Option<Stored<MediaType>>,
    thumb_key: Option<String>,
    thumb_mime: Option<Stored<MediaType>>,
}

impl MediaRepo for PgStore {
    fn create_upload<'a>(
        &'a self,
        agent: AgentRef,
        upload: &'a NewUpload,
    ) -> BoxFuture<'a, anyhow::Result<Result<Uuid, UploadRefusal>>> {
        self.read(async move |conn| {
            let (code, platform) = (upload.code.code.as_str(), upload.code.platform);
            let rows: Vec<UploadAccount> = sql!(
                UPLOAD_ACCOUNT,
                agent.workspace_id,
                agent.agent_id,
                code,
                platform.map(Platform::as_str)
            )
            .load(conn)
            .await?;
            let account = match pick_slot(rows, code, platform, |r| &r.slot) {
                Ok(a) => a,
                Err(e) => return Ok(Err(UploadRefusal::Account(e))),
            };
            let checks: UploadChecks = sql!(
                UPLOAD_CHECKS,
                agent.workspace_id,
                upload.project.as_deref(),
                account.persona_id,
                upload.character.as_deref()
            )
            .get_result(conn)
            .await?;
            let project_id =
                match upload.project_id(account.project_id, checks.project_id, checks.in_cast) {
                    Ok(id) => id,
                    Err(UploadMiss::Project(name)) => {
                        let miss =
                            crate::projects::miss(conn, agent.organization_id, &name).await?;
                        return Ok(Err(UploadRefusal::Project(name, miss)));
                    }
                    Err(UploadMiss::Character(name)) => {
                        return Ok(Err(UploadRefusal::Character(name)));
                    }
                };
            let id: Uuid = diesel::insert_into(uploads::table)
                .values((
                    uploads::workspace_id.eq(agent.workspace_id),
                    uploads::agent_id.eq(agent.agent_id),
                    uploads::slot_id.eq(account.slot.slot_id),
                    uploads::project_id.eq(project_id),
                    uploads::persona_id.eq(account.persona_id),
                    uploads::character.eq(upload.character.as_deref()),
                    uploads::caption.eq(upload.caption.as_deref()),
                    uploads::tags.eq(&upload.tags),
                    uploads::mode.eq(upload.mode.as_str()),
                    uploads::mime_type.eq(upload.mime_type.map(MediaType::as_str)),
                    uploads::declared_bytes.eq(upload.bytes),
                    uploads::chunks.eq(upload.chunks),
                    uploads::token_hash.eq(&upload.token_hash),
                    uploads::expires_at.eq(jiff_diesel::Timestamp::from(upload.expires_at)),
                ))
                .returning(uploads::id)
                .get_result(conn)
                .await?;
            Ok(Ok(id))
        })
    }

    fn upload(&self, id: Uuid) -> BoxFuture<'_, anyhow::Result<Option<UploadState>>> {
        self.read(async move |conn| {
            let row: Option<UploadRow> = uploads::table
                .find(id)
                .select(UploadRow::as_select())
                .get_result(conn)
                .await
                .optional()?;
            Ok(row.map(Into::into))
        })
    }

    fn chunk_received<'a>(
        &'a self,
        id: Uuid,
        n: i32,
        received_bytes: i64,
        hash_state: &'a [u8],
        detected: MediaType,
    ) -> BoxFuture<'a, anyhow::Result<bool>> {
        self.read(async move |conn| {
            let changed = diesel::update(
                uploads::table
                    .find(id)
                    .filter(uploads::next_chunk.eq(n))
                    .filter(uploads::completed_at.is_null()),
            )
            .set((
                uploads::next_chunk.eq(n + 1),
                uploads::received_bytes.eq(received_bytes),
                uploads::hash_state.eq(hash_state),
                uploads::detected_mime.eq(detected.as_str()),
            ))
            .execute(conn)
            .await?;
            Ok(changed == 1)
        })
    }

    fn complete<'a>(
        &'a self,
        upload: &'a UploadState,
        media: &'a NewMedia,
    ) -> BoxFuture<'a, anyhow::Result<Option<Completed>>> {
        self.tx(async move |conn| {
            // The poster as the upload holds it now: one sent while the file was on its way
            // counts. The lock makes a poster arriving meanwhile wait and then find the item.
            let (key, mime): (Option<String>, Option<String>) = uploads::table
                .find(upload.id)
                .select((uploads::poster_key, uploads::poster_mime))
                .for_update()
                .get_result(conn)
                .await?;
            let files = media.files(key.as_deref().zip(mime.as_deref()));
            let (poster_key, poster_mime) = (files.poster.map(|p| p.0), files.poster.map(|p| p.1));
            let (thumb_key, thumb_mime) = (
                files.thumb.map(|t| t.key.as_str()),
                files.thumb.map(|t| t.mime_type.as_str()),
            );
            let inserted: Option<IdRow> = sql!(
                INSERT_MEDIA,
                upload.workspace_id,
                upload.project_id,
                upload.persona_id,
                upload.character.as_deref(),
                media.media_type.kind().as_str(),
                media.media_type.as_str(),
                media.layout.bytes,
                media.width,
                media.height,
                media.duration_ms,
                upload.caption.as_deref(),
                &upload.tags,
                &media.sha256,
                &media.layout.key,
                media.layout.parts,
                media.layout.part_bytes,
                poster_key,
                poster_mime,
                upload.agent_id,
                thumb_key,
                thumb_mime
            )
            .get_result(conn)
            .await
            .optional()?;
            let (media_id, existing) = match inserted {
                Some(row) => (row.id, false),
                None => {
                    let same: IdRow = sql!(
                        ENRICH_MEDIA,
                        upload.workspace_id,
                        upload.project_id,
                        &media.sha256,
                        upload.caption.as_deref(),
                        upload.character.as_deref(),
                        &upload.tags,
                        poster_key,
                        poster_mime,
                        thumb_key,
                        thumb_mime
                    )
                    .get_result(conn)
                    .await?;
                    (same.id, true)
                }
            };
            let next = upload.completed_chunks();
            // Closes the upload on its item. The judged type is kept, so a later poster PUT
            // knows an image (no poster) from a video even when the type was never declared.
            let closed = diesel::update(
                uploads::table
                    .find(upload.id)
                    .filter(uploads::completed_at.is_null())
                    .filter(uploads::next_chunk.eq(upload.next_chunk)),
            )
            .set((
                uploads::media_id.eq(media_id),
                uploads::completed_at.eq(now),
                uploads::next_chunk.eq(next),
                uploads::received_bytes.eq(media.layout.bytes),
                uploads::hash_state.eq(None::<Vec<u8>>),
                uploads::detected_mime.eq(media.media_type.as_str()),
            ))
            .execute(conn)
            .await?;
            if closed != 1 {
                // Another request finished this upload first: undo this one's item.
                return Err(anyhow::Error::new(AlreadyClosed));
            }
            Ok(Some(Completed { media_id, existing }))
        })
        .map(|out| out.or_else(|e| e.downcast::<AlreadyClosed>().map(|_| None)))
        .boxed()
    }

    fn set_poster<'a>(
        &'a self,
        upload_id: Uuid,
        key: &'a str,
        media_type: MediaType,
        thumb: Option<&'a ThumbRef>,
    ) -> BoxFuture<'a, anyhow::Result<()>> {
        // Kept on the upload, and on its item once there is one. Two statements, not one with a
        // CTE: when the upload is closing, the first waits for it, and only a statement begun
        // after that sees the new item.
        self.tx(async move |conn| {
            let item: Option<Option<Uuid>> = diesel::update(uploads::table.find(upload_id))
                .set((
                    uploads::poster_key.eq(key),
                    uploads::poster_mime.eq(media_type.as_str()),
                ))
                .returning(uploads::media_id)
                .get_result(conn)
                .await
                .optional()?;
            if let Some(media_id) = item.flatten() {
                diesel::update(
                    media::table
                        .find(media_id)
                        .filter(media::kind.eq(MediaKind::Video.as_str())),
                )
                .set((
                    media::poster_key.eq(key),
                    media::poster_mime.eq(media_type.as_str()),
                    media::thumb_key.eq(thumb.map(|t| t.key.as_str())),
                    media::thumb_mime.eq(thumb.map(|t| t.mime_type.as_str())),
                ))
                .execute(conn)
                .await?;
            }
            Ok(())
        })
    }

    fn record_thumb<'a>(
        &'a self,
        media_id: Uuid,
        poster: Option<&'a str>,
        thumb: &'a ThumbRef,
    ) -> BoxFuture<'a, anyhow::Result<bool>> {
        self.read(async move |conn| {
            let changed = diesel::update(
                media::table
                    .find(media_id)
                    .filter(media::thumb_key.is_null())
                    .filter(media::poster_key.is_not_distinct_from(poster)),
            )
            .set((
                media::thumb_key.eq(&thumb.key),
                media::thumb_mime.eq(thumb.mime_type.as_str()),
            ))
            .execute(conn)
            .await?;
            Ok(changed == 1)
        })
    }

    fn list<'a>(
        &'a self,
        agent: AgentRef,
        q: &'a MediaQuery,
    ) -> BoxFuture<'a, anyhow::Result<Result<Vec<MediaItem>, ListRefusal>>> {
        self.read(async move |conn| {
            let project_id = match &q.project {
                Some(name) => match projects::table
                    .filter(projects::workspace_id.eq(agent.workspace_id))
                    .filter(projects::name.eq(name))
                    .select(projects::id)
                    .get_result::<Uuid>(conn)
                    .await
                    .optional()?
                {
                    Some(id) => Some(id),
                    None => return Ok(Err(ListRefusal::UnknownProject(name.clone()))),
                },
                None => None,
            };
            let rows: Vec<ItemRow> = sql!(
                LIST,
                agent.workspace_id,
                project_id,
                q.character.as_deref(),
                q.tag.as_deref(),
                q.kind.map(MediaKind::as_str),
                q.q.as_deref(),
                q.most_used,
                q.limit
            )
            .load(conn)
            .await?;
            Ok(Ok(rows.into_iter().map(Into::into).collect()))
        })
    }

    fn abandoned_uploads(&self, limit: i64) -> BoxFuture<'_, anyhow::Result<Vec<(Uuid, i32)>>> {
        self.read(async move |conn| {
            // Chunked uploads whose link expired an hour ago (so no chunk is still on its way)
            // with stored chunks and no library item.
            Ok(uploads::table
                .filter(uploads::mode.eq(UploadMode::Chunked.as_str()))
                .filter(uploads::completed_at.is_null())
                .filter(uploads::next_chunk.gt(0))
                .filter(uploads::expires_at.lt(now.into_sql::<Timestamptz>() - 1.hour()))
                .order(uploads::expires_at)
                .limit(limit)
                .select((uploads::id, uploads::next_chunk))
                .load(conn)
                .await?)
        })
    }

    fn forget_progress(&self, id: Uuid) -> BoxFuture<'_, anyhow::Result<()>> {
        self.read(async move |conn| {
            diesel::update(
                uploads::table
                    .find(id)
                    .filter(uploads::completed_at.is_null()),
            )
            .set((
                uploads::next_chunk.eq(0),
                uploads::received_bytes.eq(0),
                uploads::hash_state.eq(None::<Vec<u8>>),
            ))
            .execute(conn)
            .await?;
            Ok(())
        })
    }

    fn file(&self, id: Uuid) -> BoxFuture<'_, anyhow::Result<Option<StoredFile>>> {
        self.read(async move |conn| {
            let row: Option<FileRow> = media::table
                .find(id)
                .select(FileRow::as_select())
                .get_result(conn)
                .await
                .optional()?;
            Ok(row.map(|r| StoredFile {
                mime_type: r.mime_type.0,
                layout: Layout {
                    key: r.storage_key,
                    parts: r.parts,
                    part_bytes: r.part_bytes,
                    bytes: r.bytes,
                },
                poster: file_ref(r.poster_key, r.poster_mime),
                thumb: file_ref(r.thumb_key, r.thumb_mime)
                    .map(|(key, mime_type)| ThumbRef { key, mime_type }),
            }))
        })
    }
}

#[derive(Debug, thiserror::Error)]
#[error("the upload was already closed")]
struct AlreadyClosed;

const SECRET: &str = r#"
WITH fresh AS (
  INSERT INTO service_secrets (name, value) VALUES ($1, $2) ON CONFLICT (name) DO NOTHING
  RETURNING value
)
SELECT value FROM fresh
UNION ALL
SELECT value FROM service_secrets WHERE name = $1
LIMIT 1
"#;

row! {
    struct SecretRow {
        value: Vec<u8>,
    }
}

impl PgStore {
    /// A secret every instance shares, created from `fresh` by whichever instance asks first.
    pub async fn service_secret(&self, name: &str, fresh: &[u8]) -> anyhow::Result<Vec<u8>> {
        let mut conn = self.conn().await?;
        let row: SecretRow = sql!(SECRET, name, fresh).get_result(&mut conn).await?;
        Ok(row.value)
    }
}

statements!(
    UPLOAD_ACCOUNT => UploadAccount,
    UPLOAD_CHECKS => UploadChecks,
    INSERT_MEDIA => IdRow,
    ENRICH_MEDIA => IdRow,
    LIST => ItemRow,
    SECRET => SecretRow,
);
