use clap::{Parser, Subcommand};
use std::path::PathBuf;

/// fleetdesk: the back office where an agency's AI agents and its people run a fleet of
/// social-media accounts.
#[derive(Parser)]
#[command(version)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Run the HTTP service (Agent API, Personal API, MCP, OpenAPI).
    Serve {
        #[arg(long, env = "FLEETDESK_BIND", default_value = "127.0.0.1:8080")]
        bind: String,
        /// Base URL for links; absent: built from the request's Host.
        #[arg(long, env = "FLEETDESK_BASE_URL")]
        base_url: Option<String>,
        #[arg(long, env = "FLEETDESK_DATA_DIR", default_value = "./.fleetdesk")]
        data_dir: PathBuf,
        #[arg(long, env = "FLEETDESK_RATE_LIMIT_PER_MINUTE", default_value_t = 120)]
        rate_limit_per_minute: i64,
        /// HTTP worker threads (default: one per core).
        #[arg(long, env = "FLEETDESK_WORKERS")]
        workers: Option<usize>,
        #[arg(long, env = "FLEETDESK_DB_POOL", default_value_t = 16)]
        db_pool: usize,
        /// Add X-Db-Round-Trips to every response (benchmarks, tests).
        #[arg(long, env = "FLEETDESK_EXPOSE_ROUND_TRIPS", default_value_t = false)]
        expose_round_trips: bool,
        /// Do not load the demo tenant into an empty database.
        #[arg(long, env = "FLEETDESK_NO_DEMO", default_value_t = false)]
        no_demo: bool,
    },
    /// Run pending database migrations and exit.
    Migrate {
        #[arg(long, env = "FLEETDESK_DATA_DIR", default_value = "./.fleetdesk")]
        data_dir: PathBuf,
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
    Apply {
        file: PathBuf,
        #[arg(long, env = "FLEETDESK_DATA_DIR", default_value = "./.fleetdesk")]
        data_dir: PathBuf,
    },
}

fn init_logging() {
    use tracing_subscriber::EnvFilter;
    let filter = EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| EnvFilter::new("info,actix_server=warn"));
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr);
    if std::env::var("FLEETDESK_LOG_FORMAT").as_deref() == Ok("json") {
        builder.json().init();
    } else {
        builder.compact().init();
    }
}

fn main() -> anyhow::Result<()> {
    init_logging();
    let cli = Cli::parse();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    let database_url = std::env::var("DATABASE_URL").ok();
    runtime.block_on(async move {
        match cli.command {
            Command::Serve {
                bind,
                base_url,
                data_dir,
                rate_limit_per_minute,
                workers,
                db_pool,
                expose_round_trips,
                no_demo,
            } => {
                fleetdesk::serve(fleetdesk::Settings {
                    bind,
                    base_url,
                    data_dir,
                    rate_limit_per_minute,
                    database_url,
                    expose_round_trips,
                    workers: workers.unwrap_or_else(|| {
                        std::thread::available_parallelism()
                            .map(|n| n.get())
                            .unwrap_or(2)
                    }),
                    pool_size: db_pool,
                    demo: !no_demo,
                })
                .await
            }
            Command::Migrate { data_dir } => {
                let url = fleetdesk::database_url(database_url.as_deref(), &data_dir).await?;
                let ran = fleetdesk_pg::migrate(&url).await?;
                println!("{}", serde_json::json!({"migrations_run": ran}));
                Ok(())
            }
            Command::Admin {
                command: AdminCommand::Apply { file, data_dir },
            } => {
                let json = std::fs::read_to_string(&file)
                    .map_err(|e| anyhow::anyhow!("reading {}: {e}", file.display()))?;
                let url = fleetdesk::database_url(database_url.as_deref(), &data_dir).await?;
                let report = fleetdesk::apply_tenant_file(&url, &json).await?;
                println!("{}", serde_json::to_string_pretty(&report)?);
                Ok(())
            }
        }
    })
}
