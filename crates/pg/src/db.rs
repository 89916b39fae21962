use diesel::connection::{Instrumentation, InstrumentationEvent};
use diesel_async::pooled_connection::deadpool::{Object, Pool};
use diesel_async::pooled_connection::{
    AsyncDieselConnectionManager, ManagerConfig, RecyclingMethod,
};
use diesel_async::{AsyncConnection, AsyncMigrationHarness, AsyncPgConnection};
use diesel_migrations::{EmbeddedMigrations, MigrationHarness, embed_migrations};
use futures_util::FutureExt;

pub type PgPool = Pool<AsyncPgConnection>;
pub type Conn = Object<AsyncPgConnection>;

pub(crate) const MIGRATIONS: EmbeddedMigrations = embed_migrations!("../../migrations");

/// The adapter: implements every port over one pool.
#[derive(Clone)]
pub struct PgStore {
    pub(crate) pool: PgPool,
}

impl PgStore {
    pub fn new(pool: PgPool) -> Self {
        PgStore { pool }
    }

    pub fn pool(&self) -> &PgPool {
        &self.pool
    }

    pub(crate) async fn conn(&self) -> anyhow::Result<Conn> {
        self.pool
            .get()
            .await
            .map_err(|e| anyhow::anyhow!("pool timed out: {e}"))
    }
}

/// Counts every statement sent as one round trip of the current request.
struct RoundTripCounter;

impl Instrumentation for RoundTripCounter {
    fn on_connection_event(&mut self, event: InstrumentationEvent<'_>) {
        if let InstrumentationEvent::StartQuery { .. } = event {
            fleetdesk_api::metrics::record_round_trip();
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
