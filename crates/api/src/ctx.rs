use crate::ports::Gatekeeper;
use fleetdesk_accounts::service::AccountsService;
use std::sync::Arc;

/// Settings the pipeline and handlers read.
#[derive(Debug, Clone)]
pub struct Config {
    /// Requests per key per minute.
    pub rate_limit_per_minute: i64,
    /// `--base-url`; absent means links are built from the request's Host.
    pub base_url: Option<String>,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            rate_limit_per_minute: 120,
            base_url: None,
        }
    }
}

/// What every handler can reach: the domain services and the pipeline's port.
#[derive(Clone)]
pub struct Ctx {
    pub config: Arc<Config>,
    pub gate: Arc<dyn Gatekeeper>,
    pub accounts: AccountsService,
}
