//! Composition: builds the adapters, wires them to the domain services, and runs the
//! `fleetdesk` subcommands. Nothing here holds a business rule.

pub mod deliveries;
pub mod logging;
pub mod upload;
pub mod worker;

use anyhow::Context;
use fleetdesk_accounts::service::AccountsService;
use fleetdesk_api::day::DayService;
use fleetdesk_api::links::Links;
use fleetdesk_api::{Config, Ctx};
use fleetdesk_decisions::service::DecisionsService;
use fleetdesk_drafts::service::DraftsService;
use fleetdesk_http::HttpState;
use fleetdesk_inventory::service::InventoryService;
use fleetdesk_media::service::MediaService;
use fleetdesk_personas::service::PersonasService;
use fleetdesk_pg::PgStore;
use fleetdesk_storage::{ObjectBlobStore, S3Config};
use fleetdesk_tenancy::ports::TenantStore;
use fleetdesk_tenancy::tenant_file::{ApplyReport, TenantFile};
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// The demo tenant loaded into an empty database by `fleetdesk serve`.
pub const DEMO_TENANT: &str = include_str!("demo_tenant.json");

/// What `serve` prints, before its address, when it serves metrics (`--metrics-bind`).
pub const METRICS_AT: &str = "fleetdesk metrics on http://";

/// What `fleetdesk serve` needs to know.
#[derive(Debug, Clone)]
pub struct Settings {
    pub bind: String,
    /// `--metrics-bind`: where the metrics listener answers GET /metrics; none when absent.
    pub metrics_bind: Option<String>,
    pub base_url: Option<String>,
    /// `--trusted-proxy`: the proxies whose forwarding headers are believed.
    pub trusted_proxies: Vec<std::net::IpAddr>,
    pub data_dir: PathBuf,
    pub rate_limit_per_minute: i64,
    pub database_url: Option<String>,
    pub expose_round_trips: bool,
    pub workers: usize,
    pub pool_size: usize,
    pub demo: bool,
    /// `--ad-research-daily-quota`: the research provider's lookups per day.
    pub ad_research_daily_quota: Option<i64>,
    /// `--allow-http-webhooks`.
    pub allow_http_webhooks: bool,
    /// `--allow-private-webhooks`.
    pub allow_private_webhooks: bool,
}

/// `DATABASE_URL` when set; otherwise the service's own PostgreSQL under the data dir.
pub async fn database_url(explicit: Option<&str>, data_dir: &Path) -> anyhow::Result<String> {
    if let Some(url) = explicit.filter(|u| !u.is_empty()) {
        return Ok(url.to_owned());
    }
    let local = fleetdesk_local_pg::ensure_local_postgres(data_dir)
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

/// The research provider: its HTTP API when `FLEETDESK_AD_RESEARCH_URL` is set (with
/// `FLEETDESK_AD_RESEARCH_KEY`), else the built-in sandbox.
pub fn research_provider() -> anyhow::Result<Arc<dyn fleetdesk_ads::provider::ResearchProvider>> {
    Ok(
        match fleetdesk_vendors::research_http::HttpResearch::from_env()? {
            Some(http) => {
                tracing::info!("ad research goes to the provider FLEETDESK_AD_RESEARCH_URL names");
                Arc::new(http)
            }
            None => {
                tracing::info!("ad research answers from the built-in sandbox provider");
                Arc::new(fleetdesk_vendors::sandbox::SandboxResearch)
            }
        },
    )
}

/// The embedding model search reorders by: the OpenAI-compatible embeddings API
/// `FLEETDESK_EMBEDDINGS_URL` names (with `FLEETDESK_EMBEDDINGS_MODEL` and, when it needs one,
/// `FLEETDESK_EMBEDDINGS_KEY`); none when unset (search ranks by words alone).
pub fn embedder() -> anyhow::Result<Option<Arc<dyn fleetdesk_wiki::meaning::Embedder>>> {
    Ok(
        match fleetdesk_vendors::embeddings_http::HttpEmbeddings::from_env()? {
            Some(http) => {
                use fleetdesk_wiki::meaning::Embedder;
                tracing::info!(
                    model = http.model(),
                    "search reorders by the embedding model FLEETDESK_EMBEDDINGS_URL names"
                );
                Some(Arc::new(http))
            }
            None => {
                tracing::info!("search ranks by words alone (no FLEETDESK_EMBEDDINGS_URL)");
                None
            }
        },
    )
}

/// The ad platform: Meta's Marketing API when `FLEETDESK_AD_PLATFORM` is `meta` (at
/// `FLEETDESK_META_GRAPH_URL`, else Meta's own address), else the built-in sandbox.
pub fn ad_platform() -> anyhow::Result<Arc<dyn fleetdesk_ads::platform::AdPlatform>> {
    match std::env::var("FLEETDESK_AD_PLATFORM").as_deref() {
        Ok("meta") => {
            tracing::info!("ads are synced from and changed on Meta's Marketing API");
            Ok(Arc::new(fleetdesk_vendors::meta_ads::MetaAds::from_env()?))
        }
        Ok("sandbox") | Ok("") | Err(_) => {
            tracing::info!("ads come from the built-in sandbox platform");
            Ok(Arc::new(
                fleetdesk_vendors::ad_sandbox::SandboxAds::default(),
            ))
        }
        Ok(other) => {
            anyhow::bail!("FLEETDESK_AD_PLATFORM is {other:?}: it is meta or sandbox (the default)")
        }
    }
}

/// How long a webhook receiver has to answer.
const WEBHOOK_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(10);

/// The services over a migrated database.
pub fn context(
    store: PgStore,
    blobs: ObjectBlobStore,
    config: Config,
    link_key: &[u8],
    embedder: Option<Arc<dyn fleetdesk_wiki::meaning::Embedder>>,
) -> anyhow::Result<Ctx> {
    let store = Arc::new(store);
    let blobs = Arc::new(blobs);
    let accounts = AccountsService::new(store.clone(), blobs.clone());
    let drafts = DraftsService::new(store.clone(), blobs.clone());
    let inventory = InventoryService::new(store.clone(), store.clone());
    let webhooks = fleetdesk_webhooks::WebhookService::new(
        store.clone(),
        Arc::new(fleetdesk_vendors::webhook::HttpWebhookSender::new(
            config.allow_private_webhooks,
            WEBHOOK_TIMEOUT,
        )?),
        config.allow_http_webhooks,
    );
    Ok(Ctx {
        config: Arc::new(config),
        gate: store.clone(),
        limiter: Arc::new(fleetdesk_api::limiter::Limiter::new()),
        account_lists: Arc::new(fleetdesk_api::revisioned::Revisioned::new(
            fleetdesk_api::ops::accounts::KEPT_LISTS_BYTES,
        )),
        open_cards: Arc::new(fleetdesk_api::revisioned::Revisioned::new(
            fleetdesk_api::ops::accounts::KEPT_CARDS_BYTES,
        )),
        day: DayService::new(
            accounts.clone(),
            drafts.clone(),
            inventory.clone(),
            store.clone(),
            store.clone(),
            store.clone(),
        ),
        accounts,
        drafts,
        posts: fleetdesk_posts::service::PostsService::new(store.clone()),
        metrics: fleetdesk_reports::service::MetricsService::new(store.clone()),
        wiki: fleetdesk_wiki::service::WikiService::new(store.clone())
            .with_embedder(embedder.clone()),
        keys: fleetdesk_tenancy::service::KeysService::new(store.clone()),
        health: store.clone(),
        telemetry: fleetdesk_api::Telemetry::new(),
        inventory,
        personas: PersonasService::new(store.clone(), store.clone(), blobs.clone()),
        decisions: DecisionsService::new(store.clone()),
        reports: fleetdesk_reports::service::ReportsService::new(store.clone()),
        tasks: fleetdesk_tasks::service::TasksService::new(store.clone()),
        cron: fleetdesk_cron::service::CronService::new(store.clone()),
        events: fleetdesk_events::EventsService::new(store.clone(), store.clone()),
        webhooks,
        person_day: fleetdesk_api::today::TodayService::new(store.clone()),
        community: fleetdesk_community::service::CommunityService::new(store.clone())
            .with_embedder(embedder),
        research: fleetdesk_ads::service::ResearchService::new(store.clone()),
        picks: fleetdesk_ads::service::PicksService::new(store.clone()),
        ads: fleetdesk_ads::service::AdsService::new(store.clone()),
        wiki_sources: fleetdesk_wiki::service::WikiSourcesService::new(store.clone()),
        media: MediaService::new(store, blobs),
        links: Links::new(link_key),
        request_base: None,
    })
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
    embedder: Option<Arc<dyn fleetdesk_wiki::meaning::Embedder>>,
) -> anyhow::Result<(HttpState, PgStore)> {
    let ran = fleetdesk_pg::migrate(url).await?;
    if ran > 0 {
        tracing::info!(migrations = ran, "migrated the database");
    }
    let store = PgStore::new(fleetdesk_pg::connect(url, pool_size)?)
        .listen_for_events(url)
        .hold_instance_lock(url)
        .await?;
    let blobs = blob_store(data_dir)?;
    let key = link_key(&store).await?;
    let ctx = context(store.clone(), blobs, config, &key, embedder)?;
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

/// `fleetdesk admin issue-key`: one more key for `holder`, shown only here.
pub async fn issue_key(
    url: &str,
    holder: &fleetdesk_tenancy::keys::KeyHolder,
) -> anyhow::Result<String> {
    fleetdesk_pg::migrate(url).await?;
    let store = PgStore::new(fleetdesk_pg::connect(url, 2)?);
    store.issue_key(holder).await?.ok_or_else(|| {
        anyhow::anyhow!(
            "no such key holder: {holder:?} (a member who left, an archived workspace's agent \
             and a person who is no platform admin get none)"
        )
    })
}

/// `fleetdesk serve`: runs until SIGINT/SIGTERM, then finishes requests in flight.
pub async fn serve(settings: Settings) -> anyhow::Result<()> {
    std::fs::create_dir_all(&settings.data_dir)
        .with_context(|| format!("creating {}", settings.data_dir.display()))?;
    let url = database_url(settings.database_url.as_deref(), &settings.data_dir).await?;
    let config = Config {
        rate_limit_per_minute: settings.rate_limit_per_minute,
        base_url: settings.base_url.clone(),
        ad_research_daily_quota: settings.ad_research_daily_quota,
        trusted_proxies: settings.trusted_proxies.clone(),
        allow_http_webhooks: settings.allow_http_webhooks,
        allow_private_webhooks: settings.allow_private_webhooks,
    };
    let embedder = embedder()?;
    let (state, store) = compose(
        &url,
        &settings.data_dir,
        config,
        settings.pool_size,
        settings.expose_round_trips,
        embedder.clone(),
    )
    .await?;
    // The segmenter's dictionary and the script tables load off the request path.
    tokio::task::spawn_blocking(fleetdesk_wiki::search::warm_up);
    // Entries indexed by an earlier search pipeline are indexed again, off the request path.
    let reindexing = store.clone();
    tokio::spawn(async move {
        match reindexing.index_wiki_again().await {
            Ok(0) => {}
            Ok(n) => tracing::info!(entries = n, "indexed wiki entries again"),
            Err(e) => tracing::error!(error = %e, "indexing wiki entries again failed"),
        }
    });
    let listener =
        TcpListener::bind(&settings.bind).with_context(|| format!("binding {}", settings.bind))?;
    let addr = listener.local_addr()?;
    if settings.demo && store.is_empty().await? {
        let demo = TenantFile::parse(DEMO_TENANT).map_err(|e| anyhow::anyhow!("{e}"))?;
        let report = store.apply(&demo).await?;
        print!(
            "{}",
            demo_printout(&demo, &report, &format!("http://{addr}"))
        );
    }
    // The metrics listener is bound before the address is printed, so a caller that waits for
    // the listening line finds the metrics line above it.
    let metrics = match &settings.metrics_bind {
        Some(bind) => {
            let listener = TcpListener::bind(bind)
                .with_context(|| format!("binding the metrics on {bind}"))?;
            let metrics_addr = listener.local_addr()?;
            tracing::info!(%metrics_addr, "fleetdesk metrics listening");
            println!("{METRICS_AT}{metrics_addr}/metrics");
            let server = fleetdesk_http::metrics_server(state.ctx.clone(), listener)?;
            let handle = server.handle();
            tokio::spawn(server);
            Some(handle)
        }
        None => None,
    };
    let worker = worker::Worker::new(store.clone())
        .media(state.ctx.media.clone())
        .telemetry(state.ctx.telemetry.clone())
        .research_provider(research_provider()?, settings.ad_research_daily_quota)
        .ad_platform(ad_platform()?)
        .embedder(embedder)
        .spawn();
    let deliveries = deliveries::Deliveries::spawn(state.ctx.webhooks.clone(), &store);
    tracing::info!(%addr, "fleetdesk listening");
    println!("fleetdesk listening on http://{addr}");
    let served = fleetdesk_http::server(state, listener, settings.workers)?.await;
    let stopped = worker.stop().await;
    tracing::debug!(?stopped, "the background worker stopped");
    deliveries.stop().await;
    if let Some(metrics) = metrics {
        metrics.stop(true).await;
    }
    served?;
    tracing::info!("fleetdesk stopped");
    Ok(())
}

/// What `serve` prints after loading the demo tenant into an empty database: the report of
/// applying it (every id and key), whose each key is (name, kind, role, where), and the first
/// commands to try. Keys are shown once, here, on standard output (never in the logs).
pub fn demo_printout(file: &TenantFile, report: &ApplyReport, base: &str) -> String {
    use std::fmt::Write as _;
    // (key, whose) for every key, and the first operator agent's and agency member's keys.
    let mut keys: Vec<(&str, String)> = Vec::new();
    let mut agent_key: Option<(&str, String)> = None;
    let mut person_key: Option<(&str, String)> = None;
    for (org, org_file) in report.organizations.iter().filter_map(|org| {
        let spec = file.organizations.iter().find(|o| o.name == org.name)?;
        Some((org, spec))
    }) {
        for ws in &org.workspaces {
            let ws_file = org_file.workspaces.iter().find(|w| w.name == ws.name);
            for agent in &ws.agents {
                let mut whose = format!(
                    "agent {}, role {} (Agent API, MCP), workspace {} of {}",
                    agent.name,
                    agent.role.as_str(),
                    ws.name,
                    org.name
                );
                let personas = ws_file
                    .into_iter()
                    .flat_map(|w| &w.personas)
                    .filter(|p| p.agent.as_deref() == Some(agent.name.as_str()));
                for persona in personas {
                    let codes: Vec<&str> =
                        persona.accounts.iter().map(|a| a.code.as_str()).collect();
                    let _ = write!(whose, "; persona {}: {}", persona.name, codes.join(", "));
                }
                for key in &agent.keys {
                    keys.push((key, whose.clone()));
                    if agent_key.is_none() && agent.role.as_str() == "operator" {
                        agent_key = Some((
                            key,
                            format!("{}, {} agent", agent.name, agent.role.as_str()),
                        ));
                    }
                }
            }
        }
        for member in &org.members {
            let spec = org_file
                .members
                .iter()
                .find(|m| m.email.eq_ignore_ascii_case(&member.email));
            let (name, role, review) = match spec {
                Some(m) => (m.name.as_str(), m.role.as_str(), m.review),
                None => ("?", "?", false),
            };
            let reviews = if review { ", reviews" } else { "" };
            let whose = format!(
                "member {name} <{}>, role {role}{reviews} (Personal API), {}",
                member.email, org.name
            );
            for key in &member.keys {
                keys.push((key, whose.clone()));
                if person_key.is_none() && role == "agency" {
                    person_key = Some((key, format!("{name} <{}>, {role} member", member.email)));
                }
            }
        }
    }
    for admin in &report.platform_admins {
        let name = file
            .platform_admins
            .iter()
            .find(|p| p.email.eq_ignore_ascii_case(&admin.email))
            .map_or("?", |p| p.name.as_str());
        for key in &admin.keys {
            keys.push((
                key,
                format!("platform admin {name} <{}> (Personal API)", admin.email),
            ));
        }
    }

    let mut out = String::new();
    let _ = writeln!(
        out,
        "Loaded the demo tenant into the empty database. These keys are shown only now:"
    );
    let _ = writeln!(
        out,
        "{}",
        serde_json::to_string_pretty(report).unwrap_or_default()
    );
    let _ = writeln!(out, "\nWhose keys these are:");
    for (key, whose) in &keys {
        let _ = writeln!(out, "  {key}  {whose}");
    }
    let _ = writeln!(
        out,
        "\nTry it (README.md, \"The first minutes\", goes on from here):"
    );
    if let Some((key, whose)) = &agent_key {
        let _ = writeln!(out, "  export FLEETDESK_AGENT_KEY={key}      # {whose}");
    }
    if let Some((key, whose)) = &person_key {
        let _ = writeln!(out, "  export FLEETDESK_PERSONAL_KEY={key}   # {whose}");
    }
    let _ = writeln!(out, "  export BASE={base}");
    if agent_key.is_some() {
        let _ = writeln!(
            out,
            "  curl -s {base}/api/agent/v1/accounts -H \"Authorization: Bearer $FLEETDESK_AGENT_KEY\""
        );
    }
    let _ = writeln!(out, "API documentation: {base}/docs");
    out
}
