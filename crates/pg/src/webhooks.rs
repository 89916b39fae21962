//! Webhook endpoints and their deliveries over PostgreSQL. Deliveries are a queue of their
//! own, taken like jobs (`jobs.rs`): under a lease, by an instance whose advisory lock says
//! whether it lives; the oldest pending delivery of each endpoint and object goes first, so a
//! receiver gets one object's events in the order they committed. Fanning events out is one
//! instance's at a time: the dispatch row is locked `SKIP LOCKED`.

use crate::db::{PgStore, Ts, Tx, column};
use crate::instance::INSTANCE_LOCK_CLASS;
use crate::rows::Stored;
use crate::schema::{webhook_attempts, webhook_deliveries, webhook_endpoints, workspaces};
use diesel::prelude::*;
use diesel_async::RunQueryDsl;
use fleetdesk_kernel::events::EventKind;
use fleetdesk_kernel::{BoxFuture, Page, Position};
use fleetdesk_webhooks::delivery::{
    Claimed, DeliveryStatus, EndpointChange, NumberedEvent, Route, Settlement, StoredEvent,
    fan_out, receives,
};
use fleetdesk_webhooks::endpoints::{
    AttemptRecord, DeliveryRecord, EndpointPatch, EndpointRecord, MAX_PER_WORKSPACE, NewEndpoint,
    Replay,
};
use fleetdesk_webhooks::{Manager, Outcome, WebhookRefusal, WebhookRepo};
use jiff::Timestamp;
use serde_json::Value;
use uuid::Uuid;

/// The events numbered after the last one handed on, oldest first (`$1`: the last; `$2`: how
/// many).
const NEW_EVENTS: &str = r#"
SELECT seq, id, workspace_id, object_id, kind, occurred_at
FROM events
WHERE seq > $1
ORDER BY seq
LIMIT $2
"#;

/// The deliveries a dispatch planned, left alone when one exists (a replay made it first).
/// Their ids (`$6`) rise in event order, so the log lists one dispatch's deliveries in it.
const INSERT_DELIVERIES: &str = r#"
INSERT INTO webhook_deliveries (id, endpoint_id, event_id, seq, object_id, status)
SELECT i, e, v, s, o, $5
FROM unnest($6::uuid[], $1::uuid[], $2::uuid[], $3::int8[], $4::uuid[]) AS t(i, e, v, s, o)
ON CONFLICT (endpoint_id, event_id) DO NOTHING
"#;

/// Takes up to `$5` due deliveries of enabled endpoints for an attempt each: pending (`$1`)
/// and due, not leased, or leased by an instance that died (its advisory lock of class `$4`
/// is free), and the oldest pending one of its endpoint and object. Each take counts an
/// attempt, the lease's token, under a lease of `$2` seconds by instance `$3`. It walks
/// `webhook_deliveries_queue` in event order and probes `webhook_deliveries_order` once per
/// candidate, so a claim costs the same whatever the queue's length (migration 22).
const CLAIM: &str = r#"
WITH taken AS (
    UPDATE webhook_deliveries d
    SET attempts = d.attempts + 1, locked_until = now() + make_interval(secs => $2),
        instance = $3
    WHERE d.id IN (
        SELECT c.id FROM webhook_deliveries c
        JOIN webhook_endpoints e ON e.id = c.endpoint_id AND e.enabled
        WHERE c.status = $1 AND c.next_at <= now()
          AND (c.locked_until IS NULL OR c.locked_until < now()
               OR (c.instance IS NOT NULL AND pg_try_advisory_xact_lock($4, c.instance)))
          AND NOT EXISTS (
              SELECT 1 FROM webhook_deliveries p
              WHERE p.endpoint_id = c.endpoint_id AND p.object_id = c.object_id
                AND p.status = $1 AND p.seq < c.seq)
        ORDER BY c.seq
        LIMIT $5
        FOR UPDATE OF c SKIP LOCKED
    )
    RETURNING d.id, d.endpoint_id, d.event_id, d.attempts
)
SELECT t.id AS delivery_id, t.attempts AS attempt, e.url, e.secret,
       CASE WHEN e.previous_until > now() THEN e.previous_secret END AS previous_secret,
       e.failing_since, v.id AS event_id, v.kind, v.occurred_at, v.workspace_id, v.object_id,
       v.data
FROM taken t
JOIN webhook_endpoints e ON e.id = t.endpoint_id
JOIN events v ON v.id = t.event_id
ORDER BY v.seq
"#;

/// The kept events of the endpoint's workspace (`$2`) of kinds `$3` since `$4`, made due now
/// for endpoint `$1` as a new series: created where missing, reset where they exist.
const REPLAY_SINCE: &str = r#"
INSERT INTO webhook_deliveries (endpoint_id, event_id, seq, object_id, status)
SELECT $1, v.id, v.seq, v.object_id, $5
FROM events v
WHERE v.workspace_id = $2 AND v.kind = ANY($3) AND v.occurred_at >= $4 AND v.seq IS NOT NULL
ON CONFLICT (endpoint_id, event_id) DO UPDATE
SET status = EXCLUDED.status, attempts = 0, next_at = now(), locked_until = NULL
"#;

statements!(
    NEW_EVENTS => NewEventRow,
    INSERT_DELIVERIES,
    CLAIM => ClaimedRow,
    REPLAY_SINCE
);

row! {
    struct NewEventRow {
        seq: i64,
        id: Uuid,
        workspace_id: Uuid,
        object_id: Uuid,
        kind: String,
        occurred_at: Ts,
    }
}

row! {
    struct ClaimedRow {
        delivery_id: Uuid,
        attempt: i32,
        url: String,
        secret: String,
        previous_secret: Option<String>,
        failing_since: Option<Ts>,
        event_id: Uuid,
        kind: String,
        occurred_at: Ts,
        workspace_id: Uuid,
        object_id: Uuid,
        data: Value,
    }
}

impl From<ClaimedRow> for Claimed {
    fn from(r: ClaimedRow) -> Claimed {
        Claimed {
            delivery_id: r.delivery_id,
            attempt: r.attempt,
            url: r.url,
            secret: r.secret,
            previous_secret: r.previous_secret,
            failing_since: r.failing_since.map(|t| t.to_jiff()),
            event: StoredEvent {
                id: r.event_id,
                kind: r.kind,
                occurred_at: r.occurred_at.to_jiff(),
                workspace_id: r.workspace_id,
                object_id: r.object_id,
                data: r.data,
            },
        }
    }
}

/// An endpoint's columns, as [`EndpointRecord`] shows them.
#[derive(Queryable, Selectable)]
#[diesel(table_name = webhook_endpoints, check_for_backend(diesel::pg::Pg))]
struct EndpointRow {
    id: Uuid,
    workspace_id: Uuid,
    url: String,
    description: Option<String>,
    types: Vec<String>,
    enabled: bool,
    disabled_reason: Option<String>,
    failing_since: Option<Ts>,
    previous_until: Option<Ts>,
    created_at: Ts,
    updated_at: Ts,
}

impl From<EndpointRow> for EndpointRecord {
    fn from(r: EndpointRow) -> EndpointRecord {
        EndpointRecord {
            id: r.id,
            workspace_id: r.workspace_id,
            url: r.url,
            description: r.description,
            types: r.types.iter().filter_map(|t| EventKind::parse(t)).collect(),
            enabled: r.enabled,
            disabled_reason: r.disabled_reason,
            failing_since: r.failing_since.map(|t| t.to_jiff()),
            previous_secret_until: r.previous_until.map(|t| t.to_jiff()),
            created_at: r.created_at.to_jiff(),
            updated_at: r.updated_at.to_jiff(),
        }
    }
}

/// One attempt of the delivery log, with its delivery.
#[derive(Queryable, Selectable)]
#[diesel(table_name = webhook_attempts, check_for_backend(diesel::pg::Pg))]
struct AttemptRow {
    delivery_id: Uuid,
    at: Ts,
    status_code: Option<i32>,
    error: Option<String>,
    latency_ms: i32,
    body_excerpt: String,
}

impl From<&AttemptRow> for AttemptRecord {
    fn from(a: &AttemptRow) -> AttemptRecord {
        AttemptRecord {
            at: a.at.to_jiff(),
            status_code: a.status_code,
            error: a.error.clone(),
            latency_ms: a.latency_ms,
            body_excerpt: a.body_excerpt.clone(),
        }
    }
}

fn texts(types: &[EventKind]) -> Vec<&'static str> {
    types.iter().map(|k| k.as_str()).collect()
}

/// Endpoint `id` when the manager may see it (its workspace is of the manager's
/// organization), locked for the transaction.
async fn visible(conn: Tx<'_>, manager: Manager, id: Uuid) -> anyhow::Result<Option<EndpointRow>> {
    let Some(organization) = organization_of(conn, id).await? else {
        return Ok(None);
    };
    if !manager.sees(organization) {
        return Ok(None);
    }
    Ok(webhook_endpoints::table
        .filter(webhook_endpoints::id.eq(id))
        .select(EndpointRow::as_select())
        .for_update()
        .first(conn)
        .await
        .optional()?)
}

/// The organization of endpoint `id`'s workspace.
async fn organization_of(conn: Tx<'_>, id: Uuid) -> anyhow::Result<Option<Uuid>> {
    Ok(webhook_endpoints::table
        .inner_join(workspaces::table)
        .filter(webhook_endpoints::id.eq(id))
        .select(workspaces::organization_id)
        .first(conn)
        .await
        .optional()?)
}

impl WebhookRepo for PgStore {
    fn create<'a>(
        &'a self,
        manager: Manager,
        endpoint: &'a NewEndpoint,
        secret: &'a str,
    ) -> BoxFuture<'a, anyhow::Result<Result<EndpointRecord, WebhookRefusal>>> {
        self.tx(async move |conn| {
            // The workspace locked: two creations count one after the other.
            let organization: Option<Uuid> = workspaces::table
                .filter(workspaces::id.eq(endpoint.workspace_id))
                .select(workspaces::organization_id)
                .for_no_key_update()
                .first(conn)
                .await
                .optional()?;
            if !organization.is_some_and(|o| manager.sees(o)) {
                return Ok(Err(WebhookRefusal::UnknownWorkspace));
            }
            let count: i64 = webhook_endpoints::table
                .filter(webhook_endpoints::workspace_id.eq(endpoint.workspace_id))
                .count()
                .get_result(conn)
                .await?;
            if count >= MAX_PER_WORKSPACE {
                return Ok(Err(WebhookRefusal::TooMany));
            }
            let row: EndpointRow = diesel::insert_into(webhook_endpoints::table)
                .values((
                    webhook_endpoints::workspace_id.eq(endpoint.workspace_id),
                    webhook_endpoints::url.eq(endpoint.url.as_str()),
                    webhook_endpoints::description.eq(&endpoint.description),
                    webhook_endpoints::types.eq(texts(&endpoint.types)),
                    webhook_endpoints::enabled.eq(endpoint.enabled),
                    webhook_endpoints::secret.eq(secret),
                ))
                .returning(EndpointRow::as_returning())
                .get_result(conn)
                .await?;
            Ok(Ok(row.into()))
        })
    }

    fn list<'a>(
        &'a self,
        manager: Manager,
        workspace: Option<Uuid>,
    ) -> BoxFuture<'a, anyhow::Result<Vec<EndpointRecord>>> {
        self.read(async move |conn| {
            let mut query = webhook_endpoints::table
                .inner_join(workspaces::table)
                .select(EndpointRow::as_select())
                .order((webhook_endpoints::created_at, webhook_endpoints::id))
                .into_boxed();
            if let Some(org) = manager.organization_id {
                query = query.filter(workspaces::organization_id.eq(org));
            }
            if let Some(w) = workspace {
                query = query.filter(webhook_endpoints::workspace_id.eq(w));
            }
            let rows: Vec<EndpointRow> = query.load(conn).await?;
            Ok(rows.into_iter().map(Into::into).collect())
        })
    }

    fn update<'a>(
        &'a self,
        manager: Manager,
        id: Uuid,
        patch: &'a EndpointPatch,
    ) -> BoxFuture<'a, anyhow::Result<Result<EndpointRecord, WebhookRefusal>>> {
        self.tx(async move |conn| {
            let Some(row) = visible(conn, manager, id).await? else {
                return Ok(Err(WebhookRefusal::NotFound));
            };
            let target = webhook_endpoints::table.filter(webhook_endpoints::id.eq(row.id));
            diesel::update(target)
                .set((
                    patch
                        .url
                        .as_ref()
                        .map(|u| webhook_endpoints::url.eq(u.as_str().to_owned())),
                    patch
                        .description
                        .as_ref()
                        .map(|d| webhook_endpoints::description.eq(Some(d.clone()))),
                    patch
                        .types
                        .as_ref()
                        .map(|t| webhook_endpoints::types.eq(texts(t))),
                    patch.enabled.map(|e| webhook_endpoints::enabled.eq(e)),
                    webhook_endpoints::updated_at.eq(diesel::dsl::now),
                ))
                .execute(conn)
                .await?;
            if patch.revives() {
                diesel::update(target)
                    .set((
                        webhook_endpoints::disabled_reason.eq(None::<String>),
                        webhook_endpoints::failing_since.eq(None::<Ts>),
                    ))
                    .execute(conn)
                    .await?;
            }
            let row: EndpointRow = target.select(EndpointRow::as_select()).first(conn).await?;
            Ok(Ok(row.into()))
        })
    }

    fn delete(
        &self,
        manager: Manager,
        id: Uuid,
    ) -> BoxFuture<'_, anyhow::Result<Result<(), WebhookRefusal>>> {
        self.tx(async move |conn| {
            let Some(row) = visible(conn, manager, id).await? else {
                return Ok(Err(WebhookRefusal::NotFound));
            };
            diesel::delete(webhook_endpoints::table.filter(webhook_endpoints::id.eq(row.id)))
                .execute(conn)
                .await?;
            Ok(Ok(()))
        })
    }

    fn rotate<'a>(
        &'a self,
        manager: Manager,
        id: Uuid,
        secret: &'a str,
        previous_until: Timestamp,
    ) -> BoxFuture<'a, anyhow::Result<Result<EndpointRecord, WebhookRefusal>>> {
        self.tx(async move |conn| {
            let Some(row) = visible(conn, manager, id).await? else {
                return Ok(Err(WebhookRefusal::NotFound));
            };
            let row: EndpointRow =
                diesel::update(webhook_endpoints::table.filter(webhook_endpoints::id.eq(row.id)))
                    .set((
                        webhook_endpoints::previous_secret.eq(webhook_endpoints::secret.nullable()),
                        webhook_endpoints::previous_until.eq(Some(Ts::from(previous_until))),
                        webhook_endpoints::secret.eq(secret),
                        webhook_endpoints::updated_at.eq(diesel::dsl::now),
                    ))
                    .returning(EndpointRow::as_returning())
                    .get_result(conn)
                    .await?;
            Ok(Ok(row.into()))
        })
    }

    fn deliveries(
        &self,
        manager: Manager,
        id: Uuid,
        after: Option<Position>,
        limit: i64,
    ) -> BoxFuture<'_, anyhow::Result<Result<Page<DeliveryRecord>, WebhookRefusal>>> {
        self.snapshot(async move |conn| {
            if !organization_of(conn, id)
                .await?
                .is_some_and(|o| manager.sees(o))
            {
                return Ok(Err(WebhookRefusal::NotFound));
            }
            let mut query = webhook_deliveries::table
                .inner_join(crate::schema::events::table)
                .filter(webhook_deliveries::endpoint_id.eq(id))
                .select((
                    webhook_deliveries::id,
                    webhook_deliveries::event_id,
                    crate::schema::events::kind,
                    webhook_deliveries::status,
                    webhook_deliveries::attempts,
                    webhook_deliveries::next_at,
                    webhook_deliveries::created_at,
                    webhook_deliveries::delivered_at,
                ))
                .order((
                    webhook_deliveries::created_at.desc(),
                    webhook_deliveries::id.desc(),
                ))
                .limit(limit + 1)
                .into_boxed();
            if let Some((at, last)) = after {
                let at = Ts::from(at);
                query = query.filter(
                    webhook_deliveries::created_at
                        .lt(at)
                        .or(webhook_deliveries::created_at
                            .eq(at)
                            .and(webhook_deliveries::id.lt(last))),
                );
            }
            type DeliveryRow = (
                Uuid,
                Uuid,
                String,
                Stored<DeliveryStatus>,
                i32,
                Ts,
                Ts,
                Option<Ts>,
            );
            let rows: Vec<DeliveryRow> = query.load(conn).await?;
            let ids: Vec<Uuid> = column(&rows, |r| r.0);
            let attempts: Vec<AttemptRow> = webhook_attempts::table
                .filter(webhook_attempts::delivery_id.eq_any(&ids))
                .select(AttemptRow::as_select())
                .order((webhook_attempts::delivery_id, webhook_attempts::id))
                .load(conn)
                .await?;
            let items = rows
                .into_iter()
                .map(
                    |(
                        id,
                        event_id,
                        kind,
                        status,
                        attempts_made,
                        next_at,
                        created_at,
                        delivered_at,
                    )| {
                        let log = attempts
                            .iter()
                            .filter(|a| a.delivery_id == id)
                            .map(AttemptRecord::from)
                            .collect();
                        DeliveryRecord {
                            id,
                            event_id,
                            event_type: kind,
                            status: status.0,
                            attempts: attempts_made,
                            next_at: (status.0 == DeliveryStatus::Pending)
                                .then(|| next_at.to_jiff()),
                            created_at: created_at.to_jiff(),
                            delivered_at: delivered_at.map(|t| t.to_jiff()),
                            log,
                        }
                    },
                )
                .collect();
            Ok(Ok(Page::probed(items, limit, |d: &DeliveryRecord| {
                (d.created_at, d.id)
            })))
        })
    }

    fn replay(
        &self,
        manager: Manager,
        id: Uuid,
        replay: Replay,
    ) -> BoxFuture<'_, anyhow::Result<Result<i64, WebhookRefusal>>> {
        self.tx(async move |conn| {
            let Some(row) = visible(conn, manager, id).await? else {
                return Ok(Err(WebhookRefusal::NotFound));
            };
            let pending = DeliveryStatus::Pending.as_str();
            let n = match replay {
                Replay::Delivery(delivery) => {
                    diesel::update(
                        webhook_deliveries::table
                            .filter(webhook_deliveries::id.eq(delivery))
                            .filter(webhook_deliveries::endpoint_id.eq(row.id)),
                    )
                    .set((
                        webhook_deliveries::status.eq(pending),
                        webhook_deliveries::attempts.eq(0),
                        webhook_deliveries::next_at.eq(diesel::dsl::now),
                        webhook_deliveries::locked_until.eq(None::<Ts>),
                    ))
                    .execute(conn)
                    .await?
                }
                Replay::Failed => {
                    diesel::update(
                        webhook_deliveries::table
                            .filter(webhook_deliveries::endpoint_id.eq(row.id))
                            .filter(webhook_deliveries::status.eq(DeliveryStatus::Failed.as_str())),
                    )
                    .set((
                        webhook_deliveries::status.eq(pending),
                        webhook_deliveries::attempts.eq(0),
                        webhook_deliveries::next_at.eq(diesel::dsl::now),
                        webhook_deliveries::locked_until.eq(None::<Ts>),
                    ))
                    .execute(conn)
                    .await?
                }
                Replay::Since(since) => {
                    let types: Vec<EventKind> = row
                        .types
                        .iter()
                        .filter_map(|t| EventKind::parse(t))
                        .collect();
                    let kinds = EventKind::texts(|k| receives(&types, k));
                    sql!(
                        REPLAY_SINCE,
                        row.id,
                        row.workspace_id,
                        kinds,
                        Ts::from(since),
                        pending
                    )
                    .execute(conn)
                    .await?
                }
            };
            if n == 0 && matches!(replay, Replay::Delivery(_)) {
                return Ok(Err(WebhookRefusal::UnknownDelivery));
            }
            Ok(Ok(i64::try_from(n).unwrap_or(i64::MAX)))
        })
    }

    fn dispatch(&self, limit: i64) -> BoxFuture<'_, anyhow::Result<usize>> {
        use crate::schema::webhook_dispatch;
        self.tx(async move |conn| {
            // No endpoint is on: nothing to hand on, and no cursor write (a transaction to
            // flush) for every commit of events. The cursor may lag meanwhile: an endpoint
            // receives only changes made after it was registered, so catching up later hands
            // the older events to no one.
            let any_on: bool = diesel::select(diesel::dsl::exists(
                webhook_endpoints::table.filter(webhook_endpoints::enabled.eq(true)),
            ))
            .get_result(conn)
            .await?;
            if !any_on {
                return Ok(0);
            }
            // One instance dispatches at a time; the others find the row locked and go on.
            let last: Option<i64> = webhook_dispatch::table
                .select(webhook_dispatch::last_seq)
                .for_update()
                .skip_locked()
                .first(conn)
                .await
                .optional()?;
            let Some(last) = last else {
                return Ok(0);
            };
            let rows: Vec<NewEventRow> = sql!(NEW_EVENTS, last, limit).load(conn).await?;
            let Some(newest) = rows.last().map(|r| r.seq) else {
                return Ok(0);
            };
            let events: Vec<NumberedEvent> = rows
                .iter()
                .filter_map(|r| {
                    Some(NumberedEvent {
                        seq: r.seq,
                        id: r.id,
                        workspace_id: r.workspace_id,
                        object_id: r.object_id,
                        kind: EventKind::parse(&r.kind)?,
                        occurred_at: r.occurred_at.to_jiff(),
                    })
                })
                .collect();
            let workspaces: Vec<Uuid> = column(&events, |e| e.workspace_id);
            let routes: Vec<Route> = webhook_endpoints::table
                .filter(webhook_endpoints::workspace_id.eq_any(&workspaces))
                .filter(webhook_endpoints::enabled.eq(true))
                .select((
                    webhook_endpoints::id,
                    webhook_endpoints::workspace_id,
                    webhook_endpoints::types,
                    webhook_endpoints::created_at,
                ))
                .load::<(Uuid, Uuid, Vec<String>, Ts)>(conn)
                .await?
                .into_iter()
                .map(|(endpoint_id, workspace_id, types, since)| Route {
                    endpoint_id,
                    workspace_id,
                    types: types.iter().filter_map(|t| EventKind::parse(t)).collect(),
                    since: since.to_jiff(),
                })
                .collect();
            let deliveries = fan_out(&events, &routes);
            if !deliveries.is_empty() {
                sql!(
                    INSERT_DELIVERIES,
                    column(&deliveries, |d| d.endpoint_id),
                    column(&deliveries, |d| d.event_id),
                    column(&deliveries, |d| d.seq),
                    column(&deliveries, |d| d.object_id),
                    DeliveryStatus::Pending.as_str(),
                    column(&deliveries, |_| Uuid::now_v7())
                )
                .execute(conn)
                .await?;
            }
            diesel::update(webhook_dispatch::table)
                .set(webhook_dispatch::last_seq.eq(newest))
                .execute(conn)
                .await?;
            Ok(rows.len())
        })
    }

    fn claim(&self, limit: i64, lease: i64) -> BoxFuture<'_, anyhow::Result<Vec<Claimed>>> {
        self.read(async move |conn| {
            // Planned afresh each time: a plan cached while the queue was short would walk a
            // long one badly (a generic plan made over an empty table took over a second per
            // claim over 10,000 pending deliveries in the benchmark).
            let rows: Vec<ClaimedRow> = sql!(
                fresh CLAIM,
                DeliveryStatus::Pending.as_str(),
                lease as f64,
                self.instance,
                INSTANCE_LOCK_CLASS,
                limit
            )
            .load(conn)
            .await?;
            Ok(rows.into_iter().map(Into::into).collect())
        })
    }

    fn settle<'a>(
        &'a self,
        claimed: &'a Claimed,
        outcome: &'a Outcome,
        settlement: &'a Settlement,
        at: Timestamp,
    ) -> BoxFuture<'a, anyhow::Result<bool>> {
        self.tx(async move |conn| {
            let at = Ts::from(at);
            let (endpoint_id,): (Uuid,) = match diesel::update(
                webhook_deliveries::table
                    .filter(webhook_deliveries::id.eq(claimed.delivery_id))
                    .filter(webhook_deliveries::attempts.eq(claimed.attempt))
                    .filter(webhook_deliveries::status.eq(DeliveryStatus::Pending.as_str())),
            )
            .set((
                webhook_deliveries::status.eq(settlement.status.as_str()),
                webhook_deliveries::next_at.eq(settlement.next_at.map(Ts::from).unwrap_or(at)),
                webhook_deliveries::locked_until.eq(None::<Ts>),
                webhook_deliveries::last_status.eq(outcome.status.map(i32::from)),
                webhook_deliveries::last_error.eq(&outcome.error),
                webhook_deliveries::last_latency_ms.eq(latency(outcome)),
                webhook_deliveries::delivered_at
                    .eq((settlement.status == DeliveryStatus::Delivered).then_some(at)),
            ))
            .returning((webhook_deliveries::endpoint_id,))
            .get_result(conn)
            .await
            .optional()?
            {
                Some(row) => row,
                None => return Ok(false),
            };
            diesel::insert_into(webhook_attempts::table)
                .values((
                    webhook_attempts::delivery_id.eq(claimed.delivery_id),
                    webhook_attempts::at.eq(at),
                    webhook_attempts::status_code.eq(outcome.status.map(i32::from)),
                    webhook_attempts::error.eq(&outcome.error),
                    webhook_attempts::latency_ms.eq(latency(outcome)),
                    webhook_attempts::body_excerpt.eq(&outcome.body_excerpt),
                ))
                .execute(conn)
                .await?;
            let endpoint = webhook_endpoints::table.filter(webhook_endpoints::id.eq(endpoint_id));
            match settlement.endpoint {
                EndpointChange::Healthy => {
                    diesel::update(endpoint.filter(webhook_endpoints::failing_since.is_not_null()))
                        .set(webhook_endpoints::failing_since.eq(None::<Ts>))
                        .execute(conn)
                        .await?;
                }
                EndpointChange::Failing { since } => {
                    diesel::update(endpoint.filter(webhook_endpoints::failing_since.is_null()))
                        .set(webhook_endpoints::failing_since.eq(Some(Ts::from(since))))
                        .execute(conn)
                        .await?;
                }
                EndpointChange::Disabled { since, reason } => {
                    diesel::update(endpoint)
                        .set((
                            webhook_endpoints::enabled.eq(false),
                            webhook_endpoints::disabled_reason.eq(Some(reason)),
                            webhook_endpoints::failing_since.eq(Some(Ts::from(since))),
                            webhook_endpoints::updated_at.eq(at),
                        ))
                        .execute(conn)
                        .await?;
                }
            }
            Ok(true)
        })
    }
}

/// An outcome's latency as stored.
fn latency(outcome: &Outcome) -> i32 {
    i32::try_from(outcome.latency_ms).unwrap_or(i32::MAX)
}
