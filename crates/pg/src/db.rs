use diesel::connection::{Instrumentation, InstrumentationEvent};
use diesel_async::pooled_connection::deadpool::{Object, Pool};
use diesel_async::pooled_connection::{
    AsyncDieselConnectionManager, ManagerConfig, RecyclingMethod,
};
use diesel_async::{AsyncConnection, AsyncMigrationHarness, AsyncPgConnection, TransactionManager};
use diesel_migrations::{EmbeddedMigrations, MigrationHarness, embed_migrations};
use fleetdesk_kernel::BoxFuture;
use futures_util::FutureExt;

pub type PgPool = Pool<AsyncPgConnection>;
pub type Conn = Object<AsyncPgConnection>;

pub(crate) const MIGRATIONS: EmbeddedMigrations = embed_migrations!("../../migrations");

diesel::define_sql_function! {
    /// SQL's `COALESCE` of two values of one type: `x` unless it is NULL, else `y`.
    fn coalesce<T: diesel::sql_types::SingleValue>(
        x: diesel::sql_types::Nullable<T>,
        y: diesel::sql_types::Nullable<T>,
    ) -> diesel::sql_types::Nullable<T>;
}

diesel::define_sql_function! {
    /// SQL's `md5` of a text: what the `(slot_id, md5(body))` index of posts is built on.
    fn md5(x: diesel::sql_types::Text) -> diesel::sql_types::Text;
}

/// A statement whose SQL text is a constant, so it is safe to keep prepared on the connection.
///
/// diesel never caches `sql_query` statements (their text could be built at run time), which
/// costs a prepare round trip and a fresh plan on every execution. Wrapping a constant
/// statement in `Prepared` lets diesel-async's per-connection statement cache reuse it: one
/// round trip per statement. Never wrap SQL built with `format!`.
pub(crate) struct Prepared<Q>(pub Q);

/// The connection a use case's statements run on, inside its transaction.
pub(crate) type Tx<'c> = &'c mut AsyncPgConnection;

/// A time as it is stored and bound (`timestamptz`).
pub(crate) type Ts = jiff_diesel::Timestamp;

pub(crate) fn prepared<Q>(query: Q) -> Prepared<Q> {
    Prepared(query)
}

/// One column of a batch a statement reads with `unnest`: each item's `value`, in order.
pub(crate) fn column<'a, T, U>(items: &'a [T], value: impl Fn(&'a T) -> U) -> Vec<U> {
    items.iter().map(value).collect()
}

impl<Q> diesel::query_builder::QueryId for Prepared<Q> {
    type QueryId = ();
    const HAS_STATIC_QUERY_ID: bool = false;
}

impl<Q: diesel::query_builder::QueryFragment<diesel::pg::Pg>>
    diesel::query_builder::QueryFragment<diesel::pg::Pg> for Prepared<Q>
{
    fn walk_ast<'b>(
        &'b self,
        pass: diesel::query_builder::AstPass<'_, 'b, diesel::pg::Pg>,
    ) -> diesel::QueryResult<()> {
        self.0.walk_ast(pass)
    }

    fn is_safe_to_cache_prepared(&self, _backend: &diesel::pg::Pg) -> diesel::QueryResult<bool> {
        Ok(true)
    }
}

impl<Q: diesel::query_builder::Query> diesel::query_builder::Query for Prepared<Q> {
    type SqlType = Q::SqlType;
}

/// `err` with a constraint violation the statements did not expect (a unique or foreign key
/// violation past their `ON CONFLICT`s and checks: another request changed the rows in
/// between) turned into [`Conflict`](fleetdesk_kernel::error::Conflict), which the API answers
/// 422; anything else as it is. The constraint's name goes to the log, not to the caller.
pub(crate) fn mapped(err: anyhow::Error) -> anyhow::Error {
    use diesel::result::{DatabaseErrorKind, Error};
    use fleetdesk_kernel::error::Conflict;
    let Some(Error::DatabaseError(kind, info)) = err.downcast_ref::<Error>() else {
        return err;
    };
    let conflict = match kind {
        DatabaseErrorKind::UniqueViolation => Conflict::Exists,
        DatabaseErrorKind::ForeignKeyViolation => Conflict::Gone,
        _ => return err,
    };
    tracing::warn!(
        table = info.table_name(),
        constraint = info.constraint_name(),
        error = %conflict,
        "a write met a constraint its checks did not foresee"
    );
    anyhow::Error::new(conflict)
}

/// The adapter: implements every port over one pool.
#[derive(Clone)]
pub struct PgStore {
    pub(crate) pool: PgPool,
    /// The number whose advisory lock this process holds (`instance.rs`); claims carry it.
    /// `None` in a store that runs no requests (`migrate`, `admin apply`).
    pub(crate) instance: Option<i32>,
    /// The feeds waiting for events to commit ([`PgStore::listen_for_events`]).
    pub(crate) wakeups: std::sync::Arc<crate::events::Wakeups>,
}

impl PgStore {
    pub fn new(pool: PgPool) -> Self {
        PgStore {
            pool,
            instance: None,
            wakeups: Default::default(),
        }
    }

    pub fn pool(&self) -> &PgPool {
        &self.pool
    }

    async fn pooled(&self) -> anyhow::Result<Conn> {
        self.pool.get().await.map_err(|e| {
            anyhow::Error::new(fleetdesk_kernel::error::Unavailable(format!(
                "no database connection: {e}"
            )))
        })
    }

    /// A connection for the current task: a pooled one of its own, or, inside
    /// [`PgStore::in_request_transaction`], the request's, whose transaction is opened by its
    /// first statement.
    pub(crate) async fn conn(&self) -> anyhow::Result<ConnRef> {
        let Ok(request) = REQUEST_TX.try_with(RequestTx::clone) else {
            return Ok(ConnRef::Own(self.pooled().await?));
        };
        let mut held = request.0.lock_owned().await;
        if held.is_none() {
            let mut conn = self.pooled().await?;
            <AsyncPgConnection as AsyncConnection>::TransactionManager::begin_transaction(
                &mut *conn,
            )
            .await?;
            *held = Some(conn);
        }
        Ok(ConnRef::Request(held))
    }

    /// Runs `work` so that every statement it makes through this store, on this task, joins
    /// one transaction, then `settle` in it, and commits: what the request wrote and what
    /// `settle` records of it commit together or not at all. Each [`PgStore::tx`] inside is a
    /// savepoint of it. A `settle` that fails rolls everything back.
    pub(crate) async fn in_request_transaction<T>(
        &self,
        work: impl Future<Output = T>,
        settle: impl AsyncFnOnce(T) -> anyhow::Result<()>,
    ) -> anyhow::Result<()> {
        let request = RequestTx::default();
        let settled = REQUEST_TX
            .scope(request.clone(), async move { settle(work.await).await })
            .await;
        let Some(mut conn) = request.0.lock().await.take() else {
            return settled;
        };
        type Manager = <AsyncPgConnection as AsyncConnection>::TransactionManager;
        let ended = match &settled {
            Ok(()) => Manager::commit_transaction(&mut *conn).await,
            Err(_) => Manager::rollback_transaction(&mut *conn).await,
        };
        settled.map_err(mapped)?;
        ended.map_err(|e| mapped(e.into()))
    }

    /// Runs `work` on one pooled connection, outside a transaction: for single statements
    /// and reads. Errors are the pool's [`Unavailable`](fleetdesk_kernel::error::Unavailable)
    /// or whatever `work` returns.
    pub(crate) fn read<'a, T, F>(&'a self, work: F) -> BoxFuture<'a, anyhow::Result<T>>
    where
        for<'c> F: AsyncFnOnce(&'c mut AsyncPgConnection) -> anyhow::Result<T>
            + ConnWork<'c, T, Fut: Send>
            + Send
            + 'a,
        T: Send + 'a,
    {
        Box::pin(async move {
            let mut conn = self.conn().await?;
            work(&mut conn).await.map_err(mapped)
        })
    }

    /// Runs `work` in one transaction on one pooled connection (a savepoint of the request's
    /// transaction inside [`PgStore::in_request_transaction`]): committed when `work` returns
    /// `Ok`, rolled back when it returns `Err` (an expected refusal is an `Ok` value, see
    /// [`crate::drafts`] for the ones that must undo writes).
    pub(crate) fn tx<'a, T, F>(&'a self, work: F) -> BoxFuture<'a, anyhow::Result<T>>
    where
        for<'c> F: AsyncFnOnce(&'c mut AsyncPgConnection) -> anyhow::Result<T>
            + ConnWork<'c, T, Fut: Send>
            + Send
            + 'a,
        T: Send + 'a,
    {
        Box::pin(async move {
            let mut conn = self.conn().await?;
            conn.transaction::<_, anyhow::Error, _>(async move |c| work(c).await)
                .await
                .map_err(mapped)
        })
    }

    /// Runs `work` in one `REPEATABLE READ READ ONLY` transaction: every statement of a read
    /// made of several sees the same snapshot, so writes committed between them cannot mix
    /// two states in one answer. Committed when `work` returns `Ok`, rolled back otherwise.
    pub(crate) fn snapshot<'a, T, F>(&'a self, work: F) -> BoxFuture<'a, anyhow::Result<T>>
    where
        for<'c> F: AsyncFnOnce(&'c mut AsyncPgConnection) -> anyhow::Result<T>
            + ConnWork<'c, T, Fut: Send>
            + Send
            + 'a,
        T: Send + 'a,
    {
        Box::pin(async move {
            match self.conn().await? {
                ConnRef::Own(mut conn) => {
                    conn.build_transaction()
                        .repeatable_read()
                        .read_only()
                        .run::<_, anyhow::Error, _>(async move |c| work(c).await)
                        .await
                }
                // Inside a request's transaction: its snapshot, as a savepoint.
                mut conn @ ConnRef::Request(_) => {
                    conn.transaction::<_, anyhow::Error, _>(async move |c| work(c).await)
                        .await
                }
            }
        })
    }
}

/// The connection of a request that settles its Idempotency-Key in its own transaction
/// ([`PgStore::in_request_transaction`]): taken from the pool at its first statement, shared
/// by the statements of the request's task one at a time.
#[derive(Clone, Default)]
pub(crate) struct RequestTx(std::sync::Arc<tokio::sync::Mutex<Option<Conn>>>);

tokio::task_local! {
    static REQUEST_TX: RequestTx;
}

/// A connection as [`PgStore::conn`] lends it. It lives on the stack of one port call, so the
/// pooled connection is held inline rather than boxed for every call.
#[allow(clippy::large_enum_variant)]
pub(crate) enum ConnRef {
    /// A pooled connection of the caller's own.
    Own(Conn),
    /// The request's connection, inside its open transaction.
    Request(tokio::sync::OwnedMutexGuard<Option<Conn>>),
}

impl std::ops::Deref for ConnRef {
    type Target = AsyncPgConnection;

    fn deref(&self) -> &AsyncPgConnection {
        match self {
            ConnRef::Own(conn) => conn,
            ConnRef::Request(held) => held.as_ref().expect("opened before it is lent"),
        }
    }
}

impl std::ops::DerefMut for ConnRef {
    fn deref_mut(&mut self) -> &mut AsyncPgConnection {
        match self {
            ConnRef::Own(conn) => conn,
            ConnRef::Request(held) => held.as_mut().expect("opened before it is lent"),
        }
    }
}

/// The work [`PgStore::read`], [`PgStore::tx`] and [`PgStore::snapshot`] run: an async closure over the connection
/// whose future is nameable, so its `Send` bound can be stated (diesel-async's own
/// `AsyncFunc` helper is not exported).
pub(crate) trait ConnWork<'c, T>:
    AsyncFnOnce(&'c mut AsyncPgConnection) -> anyhow::Result<T>
    + FnOnce(&'c mut AsyncPgConnection) -> <Self as ConnWork<'c, T>>::Fut
{
    type Fut: Future<Output = anyhow::Result<T>>;
}

impl<'c, T, F, Fut> ConnWork<'c, T> for F
where
    F: AsyncFnOnce(&'c mut AsyncPgConnection) -> anyhow::Result<T>
        + FnOnce(&'c mut AsyncPgConnection) -> Fut,
    Fut: Future<Output = anyhow::Result<T>>,
{
    type Fut = Fut;
}

/// Counts every statement sent as one round trip of the current request.
struct RoundTripCounter;

impl Instrumentation for RoundTripCounter {
    fn on_connection_event(&mut self, event: InstrumentationEvent<'_>) {
        if let InstrumentationEvent::StartQuery { .. } = event {
            fleetdesk_kernel::round_trips::record_round_trip();
        }
    }
}

/// A pool whose connections count their round trips. Connections are recycled without a
/// test query: a checkout costs no round trip.
pub fn connect(url: &str, max_size: usize) -> anyhow::Result<PgPool> {
    let mut config = ManagerConfig::default();
    config.recycling_method = RecyclingMethod::Fast;
    config.custom_setup = Box::new(|url| {
        async move {
            let mut conn = AsyncPgConnection::establish(url).await?;
            conn.set_instrumentation(RoundTripCounter);
            Ok(conn)
        }
        .boxed()
    });
    let manager = AsyncDieselConnectionManager::<AsyncPgConnection>::new_with_config(url, config);
    Pool::builder(manager)
        .max_size(max_size)
        .wait_timeout(Some(std::time::Duration::from_secs(10)))
        .create_timeout(Some(std::time::Duration::from_secs(10)))
        .runtime(deadpool_runtime())
        .build()
        .map_err(|e| anyhow::anyhow!("building the connection pool: {e}"))
}

fn deadpool_runtime() -> deadpool::Runtime {
    deadpool::Runtime::Tokio1
}

/// Runs the embedded migrations that have not run yet; returns how many ran.
///
/// diesel's harness is synchronous and diesel-async bridges it with `block_in_place`, so this
/// must run on a multi-threaded tokio runtime.
pub async fn migrate(url: &str) -> anyhow::Result<usize> {
    let conn = AsyncPgConnection::establish(url).await?;
    let mut harness = AsyncMigrationHarness::new(conn);
    let ran = harness
        .run_pending_migrations(MIGRATIONS)
        .map_err(|e| anyhow::anyhow!("migrations failed: {e}"))?;
    Ok(ran.len())
}
