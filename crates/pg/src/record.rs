//! The review record: every entry a write logs on a post goes through here, by an agent (any
//! number of entries on any number of posts in one statement) or by a person.

use crate::db::column;
use crate::schema::review_events;
use diesel::prelude::*;
use diesel_async::{AsyncPgConnection, RunQueryDsl};
use serde_json::Value;
use uuid::Uuid;

/// One entry: the post, what happened, the reason or comment, and details.
pub(crate) struct Entry<'a> {
    pub post_id: Uuid,
    pub action: &'a str,
    pub reason: Option<&'a str>,
    pub detail: &'a Value,
}

const BY_AGENT: &str = r#"
INSERT INTO review_events (post_id, action, reason, actor_kind, actor_id, actor_name, detail)
SELECT t.post_id, t.action, t.reason, 'agent', a.id, a.name, t.detail
FROM unnest($2::uuid[], $3::text[], $4::text[], $5::jsonb[]) WITH ORDINALITY
     AS t(post_id, action, reason, detail, ord)
CROSS JOIN agents a
WHERE a.id = $1
ORDER BY t.ord
"#;

/// Entries by an agent, in the order given.
pub(crate) async fn by_agent(
    conn: &mut AsyncPgConnection,
    agent_id: Uuid,
    entries: &[Entry<'_>],
) -> QueryResult<()> {
    if entries.is_empty() {
        return Ok(());
    }
    sql!(
        BY_AGENT,
        agent_id,
        column(entries, |e| e.post_id),
        column(entries, |e| e.action),
        column(entries, |e| e.reason),
        column(entries, |e| e.detail)
    )
    .execute(conn)
    .await?;
    Ok(())
}

/// An entry by a person: a review move, or a decision an agent relays (`person_id` is then
/// unknown and `detail` names the agent).
pub(crate) async fn by_member(
    conn: &mut AsyncPgConnection,
    entry: Entry<'_>,
    person_id: Option<Uuid>,
    name: &str,
) -> QueryResult<()> {
    diesel::insert_into(review_events::table)
        .values((
            review_events::post_id.eq(entry.post_id),
            review_events::action.eq(entry.action),
            review_events::reason.eq(entry.reason),
            review_events::actor_kind.eq(fleetdesk_posts::review::MEMBER_ACTOR),
            review_events::actor_id.eq(person_id),
            review_events::actor_name.eq(name),
            review_events::detail.eq(entry.detail),
        ))
        .execute(conn)
        .await?;
    Ok(())
}

statements!(BY_AGENT);
