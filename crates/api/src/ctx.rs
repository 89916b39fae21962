use crate::day::DayService;
use crate::links::Links;
use fleetdesk_accounts::service::AccountsService;
use fleetdesk_decisions::service::DecisionsService;
use fleetdesk_drafts::service::DraftsService;
use fleetdesk_inventory::service::InventoryService;
use fleetdesk_media::service::MediaService;
use fleetdesk_personas::service::PersonasService;
use fleetdesk_posts::service::PostsService;
use fleetdesk_tenancy::gate::Gatekeeper;
use std::sync::Arc;

/// Settings the pipeline and handlers read.
#[derive(Debug, Clone)]
pub struct Config {
    /// Requests per key per minute.
    pub rate_limit_per_minute: i64,
    /// `--base-url`; absent means links are built from the request's Host.
    pub base_url: Option<String>,
    /// The research provider's lookups per day (`FLEETDESK_AD_RESEARCH_DAILY_QUOTA`); none
    /// when absent.
    pub ad_research_daily_quota: Option<i64>,
    /// `--trusted-proxy`: the peers whose `Forwarded`/`X-Forwarded-Host`/`-Proto` headers say
    /// where a request was addressed (see [`crate::links::public_origin`]); from anyone else
    /// they are ignored.
    pub trusted_proxies: Vec<std::net::IpAddr>,
    /// `--allow-http-webhooks`: endpoints may use plain http.
    pub allow_http_webhooks: bool,
    /// `--allow-private-webhooks`: webhooks may reach loopback, private and link-local
    /// addresses.
    pub allow_private_webhooks: bool,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            rate_limit_per_minute: 120,
            base_url: None,
            ad_research_daily_quota: None,
            trusted_proxies: Vec::new(),
            allow_http_webhooks: false,
            allow_private_webhooks: false,
        }
    }
}

/// What every handler can reach: the domain services (each use case is a service method),
/// and the pipeline's ports: the gate, the limiter and operators' health.
#[derive(Clone)]
pub struct Ctx {
    pub config: Arc<Config>,
    pub gate: Arc<dyn Gatekeeper>,
    /// This instance's leased rate-limit tokens.
    pub limiter: Arc<crate::limiter::Limiter>,
    pub accounts: AccountsService,
    /// Each agent's account list as JSON, kept while its workspace's accounts revision stands.
    pub account_lists: Arc<crate::revisioned::Revisioned<Arc<serde_json::value::RawValue>>>,
    /// Each agent's open task cards, kept while its workspace's tasks revision stands.
    pub open_cards: Arc<crate::revisioned::Revisioned<Arc<[fleetdesk_tasks::ports::TaskRecord]>>>,
    pub drafts: DraftsService,
    pub media: MediaService,
    /// Review, the approved list, reports and metrics.
    pub posts: PostsService,
    pub inventory: InventoryService,
    pub personas: PersonasService,
    pub decisions: DecisionsService,
    pub reports: fleetdesk_reports::service::ReportsService,
    pub tasks: fleetdesk_tasks::service::TasksService,
    pub cron: fleetdesk_cron::service::CronService,
    /// The agents' feeds of events.
    pub events: fleetdesk_events::EventsService,
    /// Webhook endpoints and their deliveries.
    pub webhooks: fleetdesk_webhooks::WebhookService,
    /// The person's day with its community part, in one snapshot.
    pub person_day: crate::today::TodayService,
    /// The community assistant.
    pub community: fleetdesk_community::service::CommunityService,
    /// Paid ad research.
    pub research: fleetdesk_ads::service::ResearchService,
    /// Ad picks.
    pub picks: fleetdesk_ads::service::PicksService,
    /// Ads as synced, and the changes agents propose.
    pub ads: fleetdesk_ads::service::AdsService,
    /// Wiki sources and their sync runs.
    pub wiki_sources: fleetdesk_wiki::service::WikiSourcesService,
    /// The agent's day: the reads of several areas at once.
    pub day: DayService,
    pub metrics: fleetdesk_reports::service::MetricsService,
    /// The knowledge base.
    pub wiki: fleetdesk_wiki::service::WikiService,
    pub keys: fleetdesk_tenancy::service::KeysService,
    /// The pool's use, readiness and the job queue, as operators see them (`/readyz`, the
    /// metrics listener).
    pub health: Arc<dyn fleetdesk_kernel::health::Health>,
    /// The metrics both transports record into.
    pub telemetry: crate::telemetry::Telemetry,
    pub links: Links,
    /// The service's address as this request reached it (`--base-url`, else from the Host
    /// header): links in responses start with it.
    pub request_base: Option<String>,
}

impl Ctx {
    /// The base of links made for this request.
    pub fn base_url(&self) -> String {
        self.config
            .base_url
            .clone()
            .or_else(|| self.request_base.clone())
            .unwrap_or_else(|| "http://localhost".to_owned())
            .trim_end_matches('/')
            .to_owned()
    }
}
