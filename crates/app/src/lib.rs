//! Composition: builds the adapters, wires them to the domain services, and runs the
//! `fleetdesk` subcommands. Nothing here holds a business rule.

pub mod local_pg;

use anyhow::Context;
use fleetdesk_accounts::service::AccountsService;
use fleetdesk_api::links::Links;
use fleetdesk_api::{Config, Ctx};
use fleetdesk_drafts::service::{DraftsService, MediaService};
use fleetdesk_http::HttpState;
use fleetdesk_pg::PgStore;
use fleetdesk_storage::{ObjectBlobStore, S3Config};
use fleetdesk_tenancy::ports::TenantStore;
use fleetdesk_tenancy::tenant_file::{ApplyReport, TenantFile};
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// The demo tenant loaded into an empty database by `fleetdesk serve`.
pub const DEMO_TENANT: &str = include_str!("demo_tenant.json");

/// What `fleetdesk serve` needs to know.
#[derive(Debug, Clone)]
pub struct Settings {
    pub bind: String,
    pub base_url: Option<String>,
    pub data_dir: PathBuf,
    pub rate_limit_per_minute: i64,
    pub database_url: Option<String>,
    pub expose_round_trips: bool,
    pub workers: usize,
    pub pool_size: usize,
    pub demo: bool,
}

/// `DATABASE_URL` when set; otherwise the service's own PostgreSQL under the data dir.
pub async fn database_url(explicit: Option<&str>, data_dir: &Path) -> anyhow::Result<String> {
    if let Some(url) = explicit.filter(|u| !u.is_empty()) {
        return Ok(url.to_owned());
    }
    let local = local_pg::ensure_local_postgres(data_dir)
        .await
        .context("starting the local PostgreSQL")?;
    tracing::info!(pgdata = %local.pgdata.display(), log = %local.log_file.display(), action = ?local.action, "using the local PostgreSQL under the data dir");
    Ok(local.url)
}

/// Blob storage: S3-compatible when `FLEETDESK_S3_BUCKET` is set, else files under the data dir.
pub fn blob_store(data_dir: &Path) -> anyhow::Result<ObjectBlobStore> {
    match S3Config::from_env() {
        Some(cfg) => ObjectBlobStore::s3(cfg),
        None => ObjectBlobStore::local(&data_dir.join("media")),
    }
}

/// The services over a migrated database.
pub fn context(store: PgStore, blobs: ObjectBlobStore, config: Config, link_key: &[u8]) -> Ctx {
    let store = Arc::new(store);
    let blobs = Arc::new(blobs);
    Ctx {
        config: Arc::new(config),
        gate: store.clone(),
        accounts: AccountsService::new(store.clone(), blobs.clone()),
        drafts: DraftsService::new(store.clone(), blobs.clone()),
        posts: store.clone(),
        inventory: store.clone(),
        media: MediaService::new(store, blobs),
        links: Links::new(link_key),
        request_base: None,
    }
}

/// The key that signs media links, shared by every instance through the database.
pub async fn link_key(store: &PgStore) -> anyhow::Result<Vec<u8>> {
    let mut fresh = [0u8; 32];
    getrandom::fill(&mut fresh).map_err(|e| anyhow::anyhow!("no random source: {e}"))?;
    store.service_secret("link_signing", &fresh).await
}

/// Migrates, connects and composes everything `serve` runs.
pub async fn compose(
    url: &str,
    data_dir: &Path,
    config: Config,
    pool_size: usize,
    expose_round_trips: bool,
) -> anyhow::Result<(HttpState, PgStore)> {
    let ran = fleetdesk_pg::migrate(url).await?;
    if ran > 0 {
        tracing::info!(migrations = ran, "migrated the database");
    }
    let store = PgStore::new(fleetdesk_pg::connect(url, pool_size)?);
    let blobs = blob_store(data_dir)?;
    let key = link_key(&store).await?;
    let ctx = context(store.clone(), blobs, config, &key);
    Ok((HttpState::new(ctx, expose_round_trips), store))
}

/// `fleetdesk admin apply FILE`.
pub async fn apply_tenant_file(url: &str, json: &str) -> anyhow::Result<ApplyReport> {
    let file =
        TenantFile::parse(json).map_err(|e| anyhow::anyhow!("the tenant file is invalid: {e}"))?;
    fleetdesk_pg::migrate(url).await?;
    let store = PgStore::new(fleetdesk_pg::connect(url, 2)?);
    store.apply(&file).await
}

/// `fleetdesk serve`: runs until SIGINT/SIGTERM, then finishes requests in flight.
pub async fn serve(settings: Settings) -> anyhow::Result<()> {
    std::fs::create_dir_all(&settings.data_dir)
        .with_context(|| format!("creating {}", settings.data_dir.display()))?;
    let url = database_url(settings.database_url.as_deref(), &settings.data_dir).await?;
    let config = Config {
        rate_limit_per_minute: settings.rate_limit_per_minute,
        base_url: settings.base_url.clone(),
    };
    let (state, store) = compose(
        &url,
        &settings.data_dir,
        config,
        settings.pool_size,
        settings.expose_round_trips,
    )
    .await?;
    let listener =
        TcpListener::bind(&settings.bind).with_context(|| format!("binding {}", settings.bind))?;
    let addr = listener.local_addr()?;
    if settings.demo && store.is_empty().await? {
        let report = store
            .apply(&TenantFile::parse(DEMO_TENANT).map_err(|e| anyhow::anyhow!("{e}"))?)
            .await?;
        print_demo(&report, &format!("http://{addr}"));
    }
    let sweeper = store.clone();
    let media = state.ctx.media.clone();
    tokio::spawn(async move {
        let mut every = tokio::time::interval(std::time::Duration::from_secs(60));
        loop {
            every.tick().await;
            if let Err(e) = sweeper.sweep().await {
                tracing::warn!(
                    error = format!("{e:#}"),
                    "sweeping rate windows and idempotency keys failed"
                );
            }
            match media.sweep_abandoned_uploads().await {
                Ok(0) => {}
                Ok(n) => tracing::info!(uploads = n, "removed the chunks of abandoned uploads"),
                Err(e) => tracing::warn!(
                    error = format!("{e:#}"),
                    "removing the chunks of abandoned uploads failed"
                ),
            }
        }
    });
    tracing::info!(%addr, "fleetdesk listening");
    println!("fleetdesk listening on http://{addr}");
    fleetdesk_http::server(state, listener, settings.workers)?.await?;
    tracing::info!("fleetdesk stopped");
    Ok(())
}

/// Keys are shown once, here, on standard output (never in the logs).
fn print_demo(report: &ApplyReport, base: &str) {
    let agent_key = report
        .organizations
        .first()
        .and_then(|o| o.workspaces.first())
        .and_then(|w| w.agents.first())
        .and_then(|a| a.keys.first());
    let person_key = report
        .organizations
        .first()
        .and_then(|o| o.members.first())
        .and_then(|m| m.keys.first());
    println!("Loaded the demo tenant into the empty database. These keys are shown only now:");
    println!(
        "{}",
        serde_json::to_string_pretty(report).unwrap_or_default()
    );
    if let Some(key) = agent_key {
        println!(
            "\nTry it:\n  export FLEETDESK_AGENT_KEY={key}\n  curl -s {base}/api/agent/v1/accounts -H \"Authorization: Bearer $FLEETDESK_AGENT_KEY\""
        );
    }
    if let Some(key) = person_key {
        println!("  export FLEETDESK_PERSONAL_KEY={key}");
    }
}
