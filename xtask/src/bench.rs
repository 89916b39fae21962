//! Load benchmark of the real binary: `cargo xtask bench [--help]`.
//!
//! 1. builds `fleetdesk` in release mode;
//! 2. creates a fresh database on the machine's PostgreSQL (dropped at the end, also on error);
//! 3. applies a tenant file: one operator agent whose persona holds N active accounts;
//! 4. starts `fleetdesk serve --expose-round-trips` on a free port;
//! 5. drives four scenarios with C client threads, each on one keep-alive HTTP/1.1 connection:
//!    GET /accounts, POST /heartbeat, POST /heartbeat with a fresh Idempotency-Key, and the
//!    replay of one Idempotency-Key;
//! 6. reports requests per second, p50/p99/max latency and the SQL statements per request
//!    (the `X-Db-Round-Trips` header), and the pipeline's share of them;
//! 7. a wire check: a second server reaches PostgreSQL through a counting proxy, and a few
//!    sequential requests show what each statement costs on the wire (Parse, Bind/Execute,
//!    Close, Sync, and how many times the service waited for PostgreSQL).
//!
//! Results go to standard output and to `target/bench/results.json`. Then the upload
//! benchmark runs (bench_upload.rs), unless `--no-upload`.

use anyhow::{Context, anyhow, bail};
use serde_json::{Value, json};
use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::fs::File;
use std::io::{self, BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Barrier, mpsc};
use std::thread;
use std::time::{Duration, Instant};

const HELP: &str = "\
cargo xtask bench: load benchmark of the release binary against the machine's PostgreSQL.

Creates a database fleetdesk_bench_<pid> (dropped at the end), applies a tenant file with one
operator agent and N accounts, starts `fleetdesk serve --expose-round-trips`, and measures
GET /api/agent/v1/accounts and POST /api/agent/v1/heartbeat (plain, with a fresh
Idempotency-Key, and replaying one Idempotency-Key) with C keep-alive HTTP/1.1 clients.
Prints requests/s, p50/p99/max latency and SQL round trips per request; writes
target/bench/results.json. Then runs the upload benchmark (see below).

USAGE:
    cargo xtask bench [OPTIONS]

OPTIONS:
    --accounts N        accounts under the agent's persona (default 50)
    --concurrency C     client threads, one keep-alive connection each (default 16)
    --seconds D         measured seconds per scenario (default 10)
    --requests N        measure a fixed number of requests per scenario instead of --seconds
    --warmup S          warm-up seconds per scenario, same clients and connections (default 2)
    --keys K            agent keys, clients use them round-robin (default 1; the rate-limit
                        window is one row per key and minute)
    --workers W         fleetdesk serve --workers (default: the server's, one per core)
    --db-pool P         fleetdesk serve --db-pool (default: the server's, 16)
    --wire-requests N   sequential requests per scenario in the wire check (default 20)
    --no-wire-check     skip the wire check (PostgreSQL messages per request, via a proxy)
    --no-build          do not run cargo build; use target/release/fleetdesk as it is
    --no-upload         skip the upload benchmark that runs afterwards
    -h, --help          print this help

Afterwards the upload benchmark runs with its defaults (`cargo xtask bench upload --help`);
`cargo xtask bench upload` runs only that one. `cargo xtask bench lifecycle` is the post
lifecycle benchmark (report_posts and work_today; `cargo xtask bench lifecycle --help`).

ENVIRONMENT:
    FLEETDESK_BENCH_SERVER_URL   PostgreSQL server to create the database on
                                 (default postgres://postgres@127.0.0.1:5432)
";

pub(crate) const DEFAULT_SERVER_URL: &str = "postgres://postgres@127.0.0.1:5432";

#[derive(Debug, Clone)]
struct Options {
    accounts: usize,
    concurrency: usize,
    seconds: f64,
    requests: Option<u64>,
    warmup: f64,
    keys: usize,
    workers: Option<usize>,
    db_pool: Option<usize>,
    wire_requests: usize,
    wire_check: bool,
    build: bool,
    /// Runs the upload benchmark after the load benchmark.
    uploads: bool,
    server_url: String,
}

impl Options {
    /// `None` when help was asked for.
    fn parse(args: &[String]) -> anyhow::Result<Option<Options>> {
        let mut o = Options {
            accounts: 50,
            concurrency: 16,
            seconds: 10.0,
            requests: None,
            warmup: 2.0,
            keys: 1,
            workers: None,
            db_pool: None,
            wire_requests: 20,
            wire_check: true,
            build: true,
            uploads: true,
            server_url: std::env::var("FLEETDESK_BENCH_SERVER_URL")
                .ok()
                .filter(|u| !u.is_empty())
                .unwrap_or_else(|| DEFAULT_SERVER_URL.to_owned()),
        };
        let mut flags = Flags::new(args);
        while let Some(flag) = flags.next_flag() {
            let flag = flag.as_str();
            match flag {
                "-h" | "--help" => return Ok(None),
                "--accounts" => o.accounts = flags.num(flag)?,
                "--concurrency" => o.concurrency = flags.num(flag)?,
                "--seconds" => o.seconds = flags.num(flag)?,
                "--requests" => o.requests = Some(flags.num(flag)?),
                "--warmup" => o.warmup = flags.num(flag)?,
                "--keys" => o.keys = flags.num(flag)?,
                "--workers" => o.workers = Some(flags.num(flag)?),
                "--db-pool" => o.db_pool = Some(flags.num(flag)?),
                "--wire-requests" => o.wire_requests = flags.num(flag)?,
                "--no-wire-check" => o.wire_check = false,
                "--no-build" => o.build = false,
                "--no-upload" => o.uploads = false,
                other => bail!("unknown option `{other}`; see cargo xtask bench --help"),
            }
        }
        if o.concurrency == 0 || o.keys == 0 {
            bail!("--concurrency and --keys must be at least 1");
        }
        if o.requests.is_none() && o.seconds <= 0.0 {
            bail!("--seconds must be positive");
        }
        if o.warmup < 0.0 || !o.warmup.is_finite() || !o.seconds.is_finite() {
            bail!("--warmup and --seconds must be finite and not negative");
        }
        Ok(Some(o))
    }

    fn serve_flags(&self) -> ServeFlags {
        ServeFlags {
            workers: self.workers,
            db_pool: self.db_pool,
            json_log: false,
        }
    }
}

pub fn main(args: &[String]) -> anyhow::Result<()> {
    let Some(opts) = Options::parse(args)? else {
        print!("{HELP}");
        return Ok(());
    };
    let started = Instant::now();
    let (root, target_dir) = workspace_dirs()?;

    let bin = build(&root, &target_dir, opts.build)?;
    let tmp = TempDir::create()?;
    let db = Database::create(&opts.server_url)?;
    let machine = machine(&opts.server_url);
    print_machine(&machine);
    println!("database: {} (dropped at the end)", db.name);

    let keys = apply_tenant(&bin, &db.url, &tmp.path, opts.accounts, opts.keys)?;
    println!(
        "tenant: 1 organization, 1 workspace, 1 operator agent with {} key(s), 1 persona with {} active threads accounts",
        keys.len(),
        opts.accounts
    );

    let server = Server::start(
        &bin,
        &db.url,
        &tmp.path,
        &opts.serve_flags(),
        &tmp.path.join("serve.log"),
    )?;
    println!("server: fleetdesk listening on http://{}", server.addr);
    let target = Arc::new(Target {
        addr: server.addr.clone(),
        keys,
        tag: format!("{}-{}", std::process::id(), unix_millis()),
    });
    sanity_check(&target, opts.accounts)?;

    let mut results = Vec::new();
    for scenario in Scenario::ALL {
        prime(&target, scenario)?;
        print!("running {:<38} ", scenario.label());
        io::stdout().flush().ok();
        let r = run_scenario(&target, scenario, &opts, server.child.id())?;
        println!(
            "{} requests in {:.1} s, {} errors",
            r.requests, r.elapsed_s, r.errors
        );
        results.push(r);
    }
    drop(server);

    let wire = if opts.wire_check {
        match wire_check(&bin, &db, &tmp.path, &opts, &target.keys) {
            Ok(w) => Some(w),
            Err(e) => {
                eprintln!("warning: the wire check failed: {e:#}");
                None
            }
        }
    } else {
        None
    };

    let overhead = Overhead::infer(&results);
    let elapsed = started.elapsed().as_secs_f64();
    print_report(&opts, &results, &overhead, wire.as_deref());

    let doc = json!({
        "machine": machine.json(),
        "options": {
            "accounts": opts.accounts,
            "concurrency": opts.concurrency,
            "seconds": opts.requests.map_or(Some(opts.seconds), |_| None),
            "requests": opts.requests,
            "warmup_seconds": opts.warmup,
            "keys": opts.keys,
            "workers": opts.workers,
            "db_pool": opts.db_pool,
        },
        "scenarios": results.iter().map(ScenarioResult::json).collect::<Vec<_>>(),
        "pipeline_overhead": overhead.json(),
        "wire_check": wire.as_ref().map(|w| w.iter().map(WireResult::json).collect::<Vec<_>>()),
        "total_seconds": elapsed,
    });
    let out = merge_results(&target_dir, doc)?;
    println!("\nwrote {}", out.display());
    println!("the benchmark took {elapsed:.0} s (build included)");
    drop(tmp);
    drop(db);
    if opts.uploads {
        println!("\n---------------------------------------------------------------------------");
        crate::bench_upload::run(
            &crate::bench_upload::Options::defaults(opts.server_url.clone()),
            &bin,
            &target_dir,
        )?;
    }
    Ok(())
}

/// The workspace root and the target directory (`CARGO_TARGET_DIR` when set).
pub(crate) fn workspace_dirs() -> anyhow::Result<(PathBuf, PathBuf)> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .context("the xtask crate has no parent directory")?
        .to_path_buf();
    let target_dir = std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .map(|p| if p.is_absolute() { p } else { root.join(p) })
        .unwrap_or_else(|| root.join("target"));
    Ok((root, target_dir))
}

/// Writes the top-level keys of `doc` into `target/bench/results.json`, keeping the keys a
/// previous run of another benchmark wrote there (the load benchmark owns `machine`,
/// `options`, `scenarios`, ...; the upload benchmark owns `uploads`).
pub(crate) fn merge_results(target_dir: &Path, doc: Value) -> anyhow::Result<PathBuf> {
    let out_dir = target_dir.join("bench");
    std::fs::create_dir_all(&out_dir).with_context(|| format!("creating {}", out_dir.display()))?;
    let out = out_dir.join("results.json");
    let mut merged = std::fs::read(&out)
        .ok()
        .and_then(|b| serde_json::from_slice::<Value>(&b).ok())
        .and_then(|v| match v {
            Value::Object(m) => Some(m),
            _ => None,
        })
        .unwrap_or_default();
    if let Value::Object(new) = doc {
        merged.extend(new);
    }
    std::fs::write(
        &out,
        serde_json::to_string_pretty(&Value::Object(merged))? + "\n",
    )
    .with_context(|| format!("writing {}", out.display()))?;
    Ok(out)
}

// ---------------------------------------------------------------------------------------------
// Build, machine

pub(crate) fn build(root: &Path, target_dir: &Path, run_cargo: bool) -> anyhow::Result<PathBuf> {
    let fallback = target_dir.join("release").join("fleetdesk");
    if !run_cargo {
        if !fallback.is_file() {
            bail!(
                "{} does not exist; run without --no-build",
                fallback.display()
            );
        }
        return Ok(fallback);
    }
    println!("building: cargo build --release -p fleetdesk (a few minutes the first time)");
    let out = Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".into()))
        .current_dir(root)
        .args([
            "build",
            "--release",
            "-p",
            "fleetdesk",
            "--message-format=json-render-diagnostics",
        ])
        .stderr(Stdio::inherit())
        .output()
        .context("running cargo build")?;
    if !out.status.success() {
        bail!(
            "cargo build --release -p fleetdesk failed with {}",
            out.status
        );
    }
    let stdout = String::from_utf8_lossy(&out.stdout);
    let exe = stdout
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|m| m["reason"] == "compiler-artifact" && m["target"]["name"] == "fleetdesk")
        .find_map(|m| m["executable"].as_str().map(PathBuf::from))
        .unwrap_or(fallback);
    if !exe.is_file() {
        bail!("cargo built no {}", exe.display());
    }
    Ok(exe)
}

pub(crate) struct Machine {
    cpus: usize,
    cpu_model: String,
    memory: String,
    postgres: String,
    synchronous_commit: String,
    /// /proc/loadavg's 1-minute figure before the load: other work on the machine.
    load_before: String,
}

impl Machine {
    pub(crate) fn json(&self) -> Value {
        json!({
            "cpus": self.cpus,
            "cpu_model": self.cpu_model,
            "memory": self.memory,
            "postgres": self.postgres,
            "synchronous_commit": self.synchronous_commit,
            "load_average_before": self.load_before,
            "shared": "the load clients, the fleetdesk server and PostgreSQL run on the same cores",
        })
    }
}

pub(crate) fn machine(server_url: &str) -> Machine {
    let cpus = thread::available_parallelism().map_or(1, |n| n.get());
    let field = |file: &str, name: &str| {
        std::fs::read_to_string(file)
            .ok()
            .and_then(|s| {
                s.lines()
                    .find(|l| l.starts_with(name))
                    .and_then(|l| l.split_once(':'))
                    .map(|(_, v)| v.trim().to_owned())
            })
            .unwrap_or_else(|| "unknown".into())
    };
    let show = |sql: &str| {
        psql(server_url, sql)
            .map(|s| s.trim().to_owned())
            .unwrap_or_else(|_| "unknown".into())
    };
    Machine {
        cpus,
        cpu_model: field("/proc/cpuinfo", "model name"),
        memory: field("/proc/meminfo", "MemTotal")
            .strip_suffix(" kB")
            .and_then(|kb| kb.trim().parse::<f64>().ok())
            .map_or_else(
                || "unknown".into(),
                |kb| format!("{:.1} GiB", kb / 1048576.0),
            ),
        postgres: show("SHOW server_version"),
        synchronous_commit: show("SHOW synchronous_commit"),
        load_before: std::fs::read_to_string("/proc/loadavg")
            .ok()
            .and_then(|l| l.split_whitespace().next().map(str::to_owned))
            .unwrap_or_else(|| "unknown".into()),
    }
}

pub(crate) fn print_machine(m: &Machine) {
    println!(
        "machine: {} logical CPU(s) ({}), {} RAM; PostgreSQL {} (synchronous_commit {})",
        m.cpus, m.cpu_model, m.memory, m.postgres, m.synchronous_commit
    );
    println!(
        "         the load clients (this process), the fleetdesk server and PostgreSQL all share these {} core(s); load average before: {}",
        m.cpus, m.load_before
    );
}

pub(crate) fn unix_millis() -> u128 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis())
}

// ---------------------------------------------------------------------------------------------
// Temporary directory, database, server: each cleans up when dropped.

pub(crate) struct TempDir {
    pub(crate) path: PathBuf,
}

impl TempDir {
    pub(crate) fn create() -> anyhow::Result<TempDir> {
        Self::create_named("bench")
    }

    /// `<temp dir>/fleetdesk-<what>-<pid>`.
    pub(crate) fn create_named(what: &str) -> anyhow::Result<TempDir> {
        let path = std::env::temp_dir().join(format!("fleetdesk-{what}-{}", std::process::id()));
        if path.exists() {
            std::fs::remove_dir_all(&path).ok();
        }
        std::fs::create_dir_all(&path).with_context(|| format!("creating {}", path.display()))?;
        Ok(TempDir { path })
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        std::fs::remove_dir_all(&self.path).ok();
    }
}

/// Runs one SQL command with psql and returns its unaligned output.
pub(crate) fn psql(url: &str, sql: &str) -> anyhow::Result<String> {
    let out = Command::new("psql")
        .args([
            "-X",
            "-q",
            "-t",
            "-A",
            "-v",
            "ON_ERROR_STOP=1",
            "-d",
            url,
            "-c",
            sql,
        ])
        .env("PGCONNECT_TIMEOUT", "10")
        .stdin(Stdio::null())
        .output()
        .context("running psql (is the PostgreSQL client installed?)")?;
    if !out.status.success() {
        bail!(
            "psql -c \"{sql}\" on {url} failed: {}",
            String::from_utf8_lossy(&out.stderr).trim()
        );
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// The parts of a `postgres://user@host:port/db?query` URL the benchmark rewrites.
struct PgUrl {
    scheme: String,
    userinfo: Option<String>,
    hostport: String,
    query: Option<String>,
}

impl PgUrl {
    fn parse(url: &str) -> anyhow::Result<PgUrl> {
        let (scheme, rest) = url
            .split_once("://")
            .ok_or_else(|| anyhow!("`{url}` is not a postgres:// URL"))?;
        let (rest, query) = match rest.split_once('?') {
            Some((r, q)) => (r, Some(q.to_owned())),
            None => (rest, None),
        };
        let authority = rest.split('/').next().unwrap_or("");
        let (userinfo, hostport) = match authority.rsplit_once('@') {
            Some((u, h)) => (Some(u.to_owned()), h.to_owned()),
            None => (None, authority.to_owned()),
        };
        Ok(PgUrl {
            scheme: scheme.to_owned(),
            userinfo,
            hostport,
            query,
        })
    }

    fn with(&self, hostport: &str, database: &str) -> String {
        let mut s = format!("{}://", self.scheme);
        if let Some(u) = &self.userinfo {
            s.push_str(u);
            s.push('@');
        }
        s.push_str(hostport);
        s.push('/');
        s.push_str(database);
        if let Some(q) = &self.query {
            s.push('?');
            s.push_str(q);
        }
        s
    }

    /// host:port for a TCP connection (port 5432 when absent).
    fn socket_addr(&self) -> anyhow::Result<String> {
        let hp = &self.hostport;
        if hp.is_empty() || hp.contains(',') {
            bail!("the server URL names no single TCP host");
        }
        let has_port = match hp.rfind(']') {
            Some(end) => hp[end..].contains(':'),
            None => hp.contains(':'),
        };
        Ok(if has_port {
            hp.clone()
        } else {
            format!("{hp}:5432")
        })
    }
}

pub(crate) struct Database {
    server_url: String,
    pub(crate) name: String,
    pub(crate) url: String,
    parsed: PgUrl,
}

impl Database {
    pub(crate) fn create(server_url: &str) -> anyhow::Result<Database> {
        Self::create_named(server_url, "bench")
    }

    /// A database `fleetdesk_<what>_<pid>`.
    pub(crate) fn create_named(server_url: &str, what: &str) -> anyhow::Result<Database> {
        let parsed = PgUrl::parse(server_url)?;
        let name = format!("fleetdesk_{what}_{}", std::process::id());
        psql(server_url, &format!("CREATE DATABASE {name}"))
            .context("creating the benchmark database (set FLEETDESK_BENCH_SERVER_URL?)")?;
        Ok(Database {
            server_url: server_url.to_owned(),
            url: parsed.with(&parsed.hostport, &name),
            name,
            parsed,
        })
    }

    /// host:port of the PostgreSQL server, for a proxy in front of it.
    pub(crate) fn socket_addr(&self) -> anyhow::Result<String> {
        self.parsed.socket_addr()
    }

    /// The database's URL through another host:port (a proxy).
    pub(crate) fn url_via(&self, hostport: &str) -> String {
        self.parsed.with(hostport, &self.name)
    }
}

impl Drop for Database {
    fn drop(&mut self) {
        let sql = format!("DROP DATABASE IF EXISTS {} WITH (FORCE)", self.name);
        match psql(&self.server_url, &sql) {
            Ok(_) => println!("dropped database {}", self.name),
            Err(e) => eprintln!("warning: could not drop database {}: {e:#}", self.name),
        }
    }
}

/// How `fleetdesk serve` is started.
pub(crate) struct ServeFlags {
    pub(crate) workers: Option<usize>,
    pub(crate) db_pool: Option<usize>,
    /// `FLEETDESK_LOG_FORMAT=json`: one JSON object per log line, for reading the log back.
    pub(crate) json_log: bool,
}

pub(crate) struct Server {
    pub(crate) child: Child,
    pub(crate) addr: String,
}

impl Server {
    pub(crate) fn start(
        bin: &Path,
        database_url: &str,
        data_dir: &Path,
        flags: &ServeFlags,
        log: &Path,
    ) -> anyhow::Result<Server> {
        let log_file = File::create(log).with_context(|| format!("creating {}", log.display()))?;
        let mut cmd = Command::new(bin);
        cmd.args([
            "serve",
            "--bind",
            "127.0.0.1:0",
            "--no-demo",
            "--expose-round-trips",
            "--rate-limit-per-minute",
            "1000000000",
            "--data-dir",
        ])
        .arg(data_dir);
        if let Some(w) = flags.workers {
            cmd.args(["--workers", &w.to_string()]);
        }
        if let Some(p) = flags.db_pool {
            cmd.args(["--db-pool", &p.to_string()]);
        }
        if flags.json_log {
            cmd.env("FLEETDESK_LOG_FORMAT", "json");
        }
        cmd.env("DATABASE_URL", database_url)
            .env_remove("FLEETDESK_BASE_URL")
            .env_remove("FLEETDESK_S3_BUCKET")
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::from(log_file));
        let mut child = cmd
            .spawn()
            .with_context(|| format!("starting {}", bin.display()))?;
        let stdout = child.stdout.take().context("no stdout")?;
        // From here on the guard stops the server, whatever happens.
        let mut server = Server {
            child,
            addr: String::new(),
        };
        let (tx, rx) = mpsc::channel();
        thread::spawn(move || {
            // Keeps reading until the server exits so that it never blocks on a full pipe.
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                if let Some(addr) = line.trim().strip_prefix("fleetdesk listening on http://") {
                    let _ = tx.send(addr.to_owned());
                }
            }
        });
        match rx.recv_timeout(Duration::from_secs(120)) {
            Ok(addr) => {
                server.addr = addr;
                Ok(server)
            }
            Err(_) => {
                let mut status = None;
                for _ in 0..40 {
                    status = server.child.try_wait().ok().flatten();
                    if status.is_some() {
                        break;
                    }
                    thread::sleep(Duration::from_millis(50));
                }
                let text = std::fs::read_to_string(log).unwrap_or_default();
                let tail: Vec<&str> = text.lines().rev().take(30).collect();
                let tail: Vec<&str> = tail.into_iter().rev().collect();
                bail!(
                    "fleetdesk serve did not report its address ({}); its log ends with:\n{}",
                    status.map_or("still running after 120 s".into(), |s| format!(
                        "exited with {s}"
                    )),
                    tail.join("\n")
                )
            }
        }
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        if matches!(self.child.try_wait(), Ok(Some(_))) {
            return;
        }
        // SIGTERM first: the server finishes what is in flight and closes its pool.
        let _ = Command::new("kill")
            .args(["-TERM", &self.child.id().to_string()])
            .status();
        let until = Instant::now() + Duration::from_secs(10);
        while Instant::now() < until {
            if matches!(self.child.try_wait(), Ok(Some(_))) {
                return;
            }
            thread::sleep(Duration::from_millis(50));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

// ---------------------------------------------------------------------------------------------
// Tenant

/// The code of the i-th account of the tenant file.
pub(crate) fn account_code(i: usize) -> String {
    format!("TW-T{i:03}")
}

fn tenant_file(accounts: usize, keys: usize) -> Value {
    let accounts: Vec<Value> = (0..accounts)
        .map(|i| {
            json!({
                "code": account_code(i),
                "platform": "threads",
                "state": "active",
                "daily_target": 2,
                "handle": format!("@bench{i}"),
                "publishing": "agent",
            })
        })
        .collect();
    json!({
        "organizations": [{
            "name": "Bench Agency",
            "workspaces": [{
                "name": "Bench",
                "projects": [{"name": "bench"}],
                "agents": [{"name": "bench-operator", "role": "operator", "keys": keys}],
                "personas": [{
                    "name": "Bench Persona",
                    "project": "bench",
                    "agent": "bench-operator",
                    "accounts": accounts,
                }],
            }],
        }],
    })
}

/// Applies the tenant file and returns the agent's keys.
pub(crate) fn apply_tenant(
    bin: &Path,
    database_url: &str,
    dir: &Path,
    accounts: usize,
    keys: usize,
) -> anyhow::Result<Vec<String>> {
    let report = admin_apply(bin, database_url, dir, &tenant_file(accounts, keys))?;
    let issued: Vec<String> = report["organizations"][0]["workspaces"][0]["agents"][0]["keys"]
        .as_array()
        .map(|a| {
            a.iter()
                .filter_map(|k| k.as_str().map(str::to_owned))
                .collect()
        })
        .unwrap_or_default();
    if issued.len() != keys {
        bail!(
            "expected {keys} agent key(s) in the apply report, found {}",
            issued.len()
        );
    }
    Ok(issued)
}

/// `fleetdesk admin apply` of a tenant file (written to `dir/tenant.json`); returns its JSON
/// report, which holds every id and every newly issued key.
pub(crate) fn admin_apply(
    bin: &Path,
    database_url: &str,
    dir: &Path,
    tenant: &Value,
) -> anyhow::Result<Value> {
    let file = dir.join("tenant.json");
    std::fs::write(&file, serde_json::to_string_pretty(tenant)?)?;
    let out = Command::new(bin)
        .args(["admin", "apply"])
        .arg(&file)
        .arg("--data-dir")
        .arg(dir)
        .env("DATABASE_URL", database_url)
        .stdin(Stdio::null())
        .output()
        .context("running fleetdesk admin apply")?;
    if !out.status.success() {
        bail!(
            "fleetdesk admin apply failed with {}:\n{}",
            out.status,
            String::from_utf8_lossy(&out.stderr)
        );
    }
    serde_json::from_slice(&out.stdout).context("fleetdesk admin apply printed no JSON report")
}

// ---------------------------------------------------------------------------------------------
// HTTP/1.1 client: one keep-alive connection.

pub(crate) struct Response {
    pub(crate) status: u16,
    pub(crate) round_trips: Option<u32>,
    replayed: bool,
    pub(crate) body: Vec<u8>,
    pub(crate) close: bool,
}

pub(crate) struct Client {
    addr: String,
    conn: Option<(BufReader<TcpStream>, TcpStream)>,
    connects: u32,
}

impl Client {
    pub(crate) fn new(addr: &str) -> Client {
        Client {
            addr: addr.to_owned(),
            conn: None,
            connects: 0,
        }
    }

    pub(crate) fn send(&mut self, request: &[u8]) -> io::Result<Response> {
        if self.conn.is_none() {
            let stream = TcpStream::connect(&self.addr)?;
            stream.set_nodelay(true)?;
            stream.set_read_timeout(Some(Duration::from_secs(60)))?;
            let reader = BufReader::with_capacity(64 * 1024, stream.try_clone()?);
            self.conn = Some((reader, stream));
            self.connects += 1;
        }
        let (reader, writer) = self.conn.as_mut().expect("connected above");
        let result = writer
            .write_all(request)
            .and_then(|()| read_response(reader));
        if !matches!(&result, Ok(r) if !r.close) {
            self.conn = None;
        }
        result
    }
}

pub(crate) fn bad(what: &str) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, what.to_owned())
}

fn read_line(r: &mut impl BufRead, line: &mut String) -> io::Result<()> {
    line.clear();
    if r.read_line(line)? == 0 {
        return Err(io::Error::new(
            io::ErrorKind::UnexpectedEof,
            "the server closed the connection",
        ));
    }
    Ok(())
}

pub(crate) fn read_response(r: &mut impl BufRead) -> io::Result<Response> {
    let mut line = String::new();
    read_line(r, &mut line)?;
    let mut parts = line.split_whitespace();
    let version = parts.next().unwrap_or("");
    if !version.starts_with("HTTP/1.") {
        return Err(bad("not an HTTP/1.x status line"));
    }
    let status: u16 = parts
        .next()
        .and_then(|s| s.parse().ok())
        .ok_or_else(|| bad("no status code"))?;
    let mut length: Option<usize> = None;
    let mut chunked = false;
    let mut round_trips = None;
    let mut replayed = false;
    let mut close = version == "HTTP/1.0";
    loop {
        read_line(r, &mut line)?;
        let l = line.trim_end();
        if l.is_empty() {
            break;
        }
        let Some((name, value)) = l.split_once(':') else {
            return Err(bad("malformed header"));
        };
        let (name, value) = (name.trim(), value.trim());
        if name.eq_ignore_ascii_case("content-length") {
            length = Some(value.parse().map_err(|_| bad("bad Content-Length"))?);
        } else if name.eq_ignore_ascii_case("transfer-encoding") {
            chunked = value.to_ascii_lowercase().contains("chunked");
        } else if name.eq_ignore_ascii_case("x-db-round-trips") {
            round_trips = value.parse().ok();
        } else if name.eq_ignore_ascii_case("idempotent-replayed") {
            replayed = value.eq_ignore_ascii_case("true");
        } else if name.eq_ignore_ascii_case("connection") {
            close = value.eq_ignore_ascii_case("close");
        }
    }
    let body = if chunked {
        let mut body = Vec::new();
        loop {
            read_line(r, &mut line)?;
            let size = line.trim().split(';').next().unwrap_or("");
            let size = usize::from_str_radix(size, 16).map_err(|_| bad("bad chunk size"))?;
            if size == 0 {
                // Trailers, then the empty line.
                loop {
                    read_line(r, &mut line)?;
                    if line.trim_end().is_empty() {
                        break;
                    }
                }
                break;
            }
            let start = body.len();
            body.resize(start + size, 0);
            r.read_exact(&mut body[start..])?;
            read_line(r, &mut line)?;
        }
        body
    } else if let Some(n) = length {
        let mut body = vec![0; n];
        r.read_exact(&mut body)?;
        body
    } else if status == 204 || status == 304 || status < 200 {
        Vec::new()
    } else {
        close = true;
        let mut body = Vec::new();
        r.read_to_end(&mut body)?;
        body
    };
    Ok(Response {
        status,
        round_trips,
        replayed,
        body,
        close,
    })
}

// ---------------------------------------------------------------------------------------------
// Scenarios

/// What the clients talk to.
struct Target {
    addr: String,
    keys: Vec<String>,
    /// Makes run ids and Idempotency-Keys unique to this run.
    tag: String,
}

impl Target {
    fn key(&self, client: usize) -> &str {
        &self.keys[client % self.keys.len()]
    }

    fn request(
        &self,
        method: &str,
        path: &str,
        key: &str,
        idempotency_key: Option<&str>,
        body: Option<&str>,
    ) -> Vec<u8> {
        http_request(&self.addr, method, path, key, idempotency_key, body)
    }
}

/// An HTTP/1.1 request to `host` with a bearer key and, when given, a JSON body.
pub(crate) fn http_request(
    host: &str,
    method: &str,
    path: &str,
    key: &str,
    idempotency_key: Option<&str>,
    body: Option<&str>,
) -> Vec<u8> {
    let mut s = format!(
        "{method} {path} HTTP/1.1\r\nHost: {host}\r\nAuthorization: Bearer {key}\r\nAccept: application/json\r\n"
    );
    if let Some(k) = idempotency_key {
        let _ = write!(s, "Idempotency-Key: {k}\r\n");
    }
    match body {
        Some(b) => {
            let _ = write!(
                s,
                "Content-Type: application/json\r\nContent-Length: {}\r\n\r\n{b}",
                b.len()
            );
        }
        None => s.push_str("\r\n"),
    }
    s.into_bytes()
}

const ACCOUNTS: &str = "/api/agent/v1/accounts";
const HEARTBEAT: &str = "/api/agent/v1/heartbeat";

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Scenario {
    Accounts,
    Heartbeat,
    HeartbeatKeyed,
    Replay,
}

impl Scenario {
    const ALL: [Scenario; 4] = [
        Scenario::Accounts,
        Scenario::Heartbeat,
        Scenario::HeartbeatKeyed,
        Scenario::Replay,
    ];

    fn id(self) -> &'static str {
        match self {
            Scenario::Accounts => "accounts",
            Scenario::Heartbeat => "heartbeat",
            Scenario::HeartbeatKeyed => "heartbeat_idempotency_key",
            Scenario::Replay => "heartbeat_replay",
        }
    }

    fn label(self) -> &'static str {
        match self {
            Scenario::Accounts => "GET /accounts",
            Scenario::Heartbeat => "POST /heartbeat",
            Scenario::HeartbeatKeyed => "POST /heartbeat, new Idempotency-Key",
            Scenario::Replay => "POST /heartbeat, replayed key",
        }
    }

    /// Statements the operation itself sends, read from the PostgreSQL adapter
    /// (crates/pg/src/accounts.rs): `list_accounts` is one SELECT, `record_heartbeat` one
    /// INSERT .. ON CONFLICT; a replay runs no handler.
    fn own_statements(self) -> u32 {
        match self {
            Scenario::Accounts | Scenario::Heartbeat | Scenario::HeartbeatKeyed => 1,
            Scenario::Replay => 0,
        }
    }

    fn heartbeat_body(run_id: &str) -> String {
        json!({
            "run_id": run_id,
            "summary": "load benchmark round",
            "counts": {"posts": 1, "replies": 2},
        })
        .to_string()
    }

    /// The request number `seq` of client `client`.
    fn request(self, t: &Target, client: usize, seq: u64) -> Vec<u8> {
        let key = t.key(client);
        match self {
            Scenario::Accounts => t.request("GET", ACCOUNTS, key, None, None),
            Scenario::Heartbeat => {
                let body = Self::heartbeat_body(&format!("bench-{}-plain-{client}-{seq}", t.tag));
                t.request("POST", HEARTBEAT, key, None, Some(&body))
            }
            Scenario::HeartbeatKeyed => {
                let id = format!("bench-{}-keyed-{client}-{seq}", t.tag);
                let body = Self::heartbeat_body(&id);
                t.request("POST", HEARTBEAT, key, Some(&id), Some(&body))
            }
            Scenario::Replay => {
                let id = format!("bench-{}-replay", t.tag);
                let body = Self::heartbeat_body(&id);
                t.request("POST", HEARTBEAT, key, Some(&id), Some(&body))
            }
        }
    }
}

pub(crate) fn excerpt(body: &[u8]) -> String {
    String::from_utf8_lossy(&body[..body.len().min(300)]).into_owned()
}

/// One GET /accounts and one heartbeat must succeed before any load.
fn sanity_check(t: &Target, accounts: usize) -> anyhow::Result<()> {
    let mut c = Client::new(&t.addr);
    let r = c.send(&Scenario::Accounts.request(t, 0, 0))?;
    if r.status != 200 {
        bail!("GET {ACCOUNTS} answered {}: {}", r.status, excerpt(&r.body));
    }
    let v: Value = serde_json::from_slice(&r.body).context("GET /accounts: not JSON")?;
    let n = v["accounts"].as_array().map_or(0, Vec::len);
    if n != accounts {
        bail!("GET {ACCOUNTS} listed {n} accounts, expected {accounts}");
    }
    if r.round_trips.is_none() {
        bail!("the server sent no X-Db-Round-Trips header");
    }
    let r = c.send(&t.request(
        "POST",
        HEARTBEAT,
        t.key(0),
        None,
        Some(&Scenario::heartbeat_body(&format!(
            "bench-{}-sanity",
            t.tag
        ))),
    ))?;
    if r.status != 200 {
        bail!(
            "POST {HEARTBEAT} answered {}: {}",
            r.status,
            excerpt(&r.body)
        );
    }
    Ok(())
}

/// The replay scenario replays a first request made here, once per key.
fn prime(t: &Target, scenario: Scenario) -> anyhow::Result<()> {
    if scenario != Scenario::Replay {
        return Ok(());
    }
    let mut c = Client::new(&t.addr);
    for client in 0..t.keys.len() {
        let r = c.send(&scenario.request(t, client, 0))?;
        if r.status != 200 {
            bail!(
                "the first request of the replay answered {}: {}",
                r.status,
                excerpt(&r.body)
            );
        }
    }
    Ok(())
}

#[derive(Clone, Copy)]
struct Sample {
    micros: u64,
    /// 0: the connection failed.
    status: u16,
    round_trips: Option<u32>,
    replayed: bool,
    body_bytes: u32,
}

struct ClientRun {
    samples: Vec<Sample>,
    started: Instant,
    ended: Instant,
    warmup_requests: u64,
    connects: u32,
    error_examples: Vec<String>,
}

enum Plan {
    For(Duration),
    Count(Arc<AtomicU64>),
}

fn run_client(
    t: &Target,
    scenario: Scenario,
    client_no: usize,
    warm_until: Instant,
    barrier: &Barrier,
    plan: &Plan,
) -> ClientRun {
    let mut client = Client::new(&t.addr);
    let mut seq = 0u64;
    let mut warmup_requests = 0u64;
    while Instant::now() < warm_until {
        seq += 1;
        let _ = client.send(&scenario.request(t, client_no, seq));
        warmup_requests += 1;
    }
    barrier.wait();
    let started = Instant::now();
    let mut samples = Vec::with_capacity(16 * 1024);
    let mut error_examples = Vec::new();
    loop {
        match plan {
            Plan::For(d) => {
                if started.elapsed() >= *d {
                    break;
                }
            }
            Plan::Count(left) => {
                if left
                    .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |n| n.checked_sub(1))
                    .is_err()
                {
                    break;
                }
            }
        }
        seq += 1;
        let request = scenario.request(t, client_no, seq);
        let t0 = Instant::now();
        let result = client.send(&request);
        let micros = t0.elapsed().as_micros() as u64;
        let sample = match result {
            Ok(r) => {
                if !(200..300).contains(&r.status) && error_examples.len() < 3 {
                    error_examples.push(format!("{}: {}", r.status, excerpt(&r.body)));
                }
                Sample {
                    micros,
                    status: r.status,
                    round_trips: r.round_trips,
                    replayed: r.replayed,
                    body_bytes: r.body.len() as u32,
                }
            }
            Err(e) => {
                if error_examples.len() < 3 {
                    error_examples.push(format!("connection: {e}"));
                }
                Sample {
                    micros,
                    status: 0,
                    round_trips: None,
                    replayed: false,
                    body_bytes: 0,
                }
            }
        };
        samples.push(sample);
    }
    ClientRun {
        samples,
        started,
        ended: Instant::now(),
        warmup_requests,
        connects: client.connects,
        error_examples,
    }
}

struct ScenarioResult {
    scenario: Scenario,
    requests: u64,
    errors: u64,
    elapsed_s: f64,
    rps: f64,
    p50_ms: f64,
    p99_ms: f64,
    max_ms: f64,
    mean_ms: f64,
    mean_body_bytes: f64,
    /// Over the requests that carried the header.
    trips_min: u32,
    trips_median: u32,
    trips_max: u32,
    trips_histogram: BTreeMap<u32, u64>,
    without_trips: u64,
    not_replayed: u64,
    connects: u32,
    warmup_requests: u64,
    error_examples: Vec<String>,
    cpu: Option<CpuShare>,
}

impl ScenarioResult {
    fn json(&self) -> Value {
        json!({
            "scenario": self.scenario.id(),
            "label": self.scenario.label(),
            "requests": self.requests,
            "errors": self.errors,
            "seconds": self.elapsed_s,
            "requests_per_second": self.rps,
            "latency_ms": {"p50": self.p50_ms, "p99": self.p99_ms, "max": self.max_ms, "mean": self.mean_ms},
            "mean_response_body_bytes": self.mean_body_bytes,
            "round_trips": {
                "min": self.trips_min,
                "median": self.trips_median,
                "max": self.trips_max,
                "histogram": self.trips_histogram.iter().map(|(k, v)| (k.to_string(), json!(v))).collect::<serde_json::Map<_, _>>(),
                "responses_without_header": self.without_trips,
            },
            "operation_statements": self.scenario.own_statements(),
            "pipeline_statements": self.trips_median.saturating_sub(self.scenario.own_statements()),
            "not_replayed": (self.scenario == Scenario::Replay).then_some(self.not_replayed),
            "connections": self.connects,
            "warmup_requests": self.warmup_requests,
            "error_examples": self.error_examples,
            "cpu_percent_of_all_cores": self.cpu.map(|c| json!({
                "machine_busy": c.machine_busy_pct,
                "server": c.server_pct,
                "clients": c.client_pct,
                "postgres": c.postgres_pct,
                "other": c.other_pct,
            })),
            "server_cpu_us_per_request": self.cpu.map(|c| c.server_us_per_request),
            "postgres_cpu_us_per_request": self.cpu.map(|c| c.postgres_us_per_request),
        })
    }
}

/// Nearest-rank percentile of sorted values.
pub(crate) fn percentile(sorted: &[u64], p: f64) -> u64 {
    if sorted.is_empty() {
        return 0;
    }
    let rank = (p * sorted.len() as f64).ceil() as usize;
    sorted[rank.clamp(1, sorted.len()) - 1]
}

fn run_scenario(
    t: &Arc<Target>,
    scenario: Scenario,
    opts: &Options,
    server_pid: u32,
) -> anyhow::Result<ScenarioResult> {
    // The main thread passes the barrier too, to read the CPU counters when the clients start.
    let barrier = Arc::new(Barrier::new(opts.concurrency + 1));
    let plan = Arc::new(match opts.requests {
        Some(n) => Plan::Count(Arc::new(AtomicU64::new(n))),
        None => Plan::For(Duration::from_secs_f64(opts.seconds)),
    });
    let warm_until = Instant::now() + Duration::from_secs_f64(opts.warmup);
    let handles: Vec<_> = (0..opts.concurrency)
        .map(|i| {
            let (t, barrier, plan) = (t.clone(), barrier.clone(), plan.clone());
            thread::Builder::new()
                .name(format!("bench-client-{i}"))
                .spawn(move || run_client(&t, scenario, i, warm_until, &barrier, &plan))
        })
        .collect::<Result<_, _>>()
        .context("starting client threads")?;
    barrier.wait();
    let cpu_before = CpuTicks::read(server_pid);
    let mut runs = Vec::new();
    for h in handles {
        runs.push(h.join().map_err(|_| anyhow!("a client thread panicked"))?);
    }
    let cpu = cpu_before
        .zip(CpuTicks::read(server_pid))
        .map(|(a, b)| b.share_since(&a, runs.iter().map(|r| r.samples.len() as u64).sum()));
    let started = runs.iter().map(|r| r.started).min().context("no clients")?;
    let ended = runs.iter().map(|r| r.ended).max().context("no clients")?;
    let elapsed_s = ended.duration_since(started).as_secs_f64();
    let samples: Vec<Sample> = runs
        .iter()
        .flat_map(|r| r.samples.iter().copied())
        .collect();
    let mut latencies: Vec<u64> = samples.iter().map(|s| s.micros).collect();
    latencies.sort_unstable();
    let mut trips: Vec<u32> = samples.iter().filter_map(|s| s.round_trips).collect();
    trips.sort_unstable();
    let mut trips_histogram = BTreeMap::new();
    for &n in &trips {
        *trips_histogram.entry(n).or_insert(0u64) += 1;
    }
    let requests = samples.len() as u64;
    let ms = |us: u64| us as f64 / 1000.0;
    Ok(ScenarioResult {
        scenario,
        requests,
        errors: samples
            .iter()
            .filter(|s| !(200..300).contains(&s.status))
            .count() as u64,
        elapsed_s,
        rps: if elapsed_s > 0.0 {
            requests as f64 / elapsed_s
        } else {
            0.0
        },
        p50_ms: ms(percentile(&latencies, 0.50)),
        p99_ms: ms(percentile(&latencies, 0.99)),
        max_ms: ms(latencies.last().copied().unwrap_or(0)),
        mean_ms: if requests > 0 {
            ms(latencies.iter().sum::<u64>()) / requests as f64
        } else {
            0.0
        },
        mean_body_bytes: samples.iter().map(|s| f64::from(s.body_bytes)).sum::<f64>()
            / requests.max(1) as f64,
        trips_min: trips.first().copied().unwrap_or(0),
        trips_median: trips.get(trips.len() / 2).copied().unwrap_or(0),
        trips_max: trips.last().copied().unwrap_or(0),
        trips_histogram,
        without_trips: requests - trips.len() as u64,
        not_replayed: samples
            .iter()
            .filter(|s| (200..300).contains(&s.status) && !s.replayed)
            .count() as u64,
        connects: runs.iter().map(|r| r.connects).sum(),
        warmup_requests: runs.iter().map(|r| r.warmup_requests).sum(),
        error_examples: runs
            .iter()
            .flat_map(|r| r.error_examples.iter().cloned())
            .take(5)
            .collect(),
        cpu,
    })
}

/// Jiffies from /proc: the whole machine's, the server process's and this process's.
#[derive(Debug, Clone)]
pub(crate) struct CpuTicks {
    machine_total: u64,
    machine_busy: u64,
    server: u64,
    client: u64,
    /// Every process named `postgres` on the machine (the backends and the server's helpers),
    /// by pid.
    postgres: BTreeMap<String, u64>,
}

/// Where the CPU went while a scenario ran, as shares of all cores.
#[derive(Debug, Clone, Copy)]
pub(crate) struct CpuShare {
    pub(crate) machine_busy_pct: f64,
    pub(crate) server_pct: f64,
    pub(crate) client_pct: f64,
    pub(crate) postgres_pct: f64,
    /// Anything else running on the machine.
    pub(crate) other_pct: f64,
    pub(crate) server_us_per_request: f64,
    pub(crate) postgres_us_per_request: f64,
}

impl CpuTicks {
    /// utime + stime of process `pid` (or `self`), in clock ticks.
    pub(crate) fn process(pid: &str) -> Option<u64> {
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
        // Fields after the command name (which may hold spaces): state is field 3,
        // utime 14 and stime 15.
        let rest = &stat[stat.rfind(')')? + 1..];
        let f: Vec<&str> = rest.split_whitespace().collect();
        Some(f.get(11)?.parse::<u64>().ok()? + f.get(12)?.parse::<u64>().ok()?)
    }

    pub(crate) fn read(server_pid: u32) -> Option<CpuTicks> {
        let stat = std::fs::read_to_string("/proc/stat").ok()?;
        let cpu: Vec<u64> = stat
            .lines()
            .next()?
            .split_whitespace()
            .skip(1)
            .take(8)
            .filter_map(|v| v.parse().ok())
            .collect();
        if cpu.len() < 5 {
            return None;
        }
        let total: u64 = cpu.iter().sum();
        Some(CpuTicks {
            machine_total: total,
            machine_busy: total - cpu[3] - cpu[4],
            server: Self::process(&server_pid.to_string())?,
            client: Self::process("self")?,
            postgres: Self::postgres(),
        })
    }

    fn postgres() -> BTreeMap<String, u64> {
        let Ok(dir) = std::fs::read_dir("/proc") else {
            return BTreeMap::new();
        };
        dir.filter_map(Result::ok)
            .filter_map(|e| e.file_name().into_string().ok())
            .filter(|pid| pid.bytes().all(|b| b.is_ascii_digit()))
            .filter(|pid| {
                std::fs::read_to_string(format!("/proc/{pid}/comm"))
                    .is_ok_and(|c| c.trim() == "postgres")
            })
            .filter_map(|pid| Self::process(&pid).map(|t| (pid, t)))
            .collect()
    }

    pub(crate) fn share_since(&self, before: &CpuTicks, requests: u64) -> CpuShare {
        let total = self
            .machine_total
            .saturating_sub(before.machine_total)
            .max(1) as f64;
        let busy = self.machine_busy.saturating_sub(before.machine_busy) as f64;
        let server = self.server.saturating_sub(before.server) as f64;
        let client = self.client.saturating_sub(before.client) as f64;
        // Backends that exited during the scenario are missed; those started are counted whole.
        let postgres = self
            .postgres
            .iter()
            .map(|(pid, t)| t.saturating_sub(before.postgres.get(pid).copied().unwrap_or(0)))
            .sum::<u64>() as f64;
        let pct = |t: f64| 100.0 * t / total;
        CpuShare {
            machine_busy_pct: pct(busy),
            server_pct: pct(server),
            client_pct: pct(client),
            postgres_pct: pct(postgres),
            other_pct: pct((busy - server - client - postgres).max(0.0)),
            server_us_per_request: server * 1e6 / clock_ticks_per_second() / requests.max(1) as f64,
            postgres_us_per_request: postgres * 1e6
                / clock_ticks_per_second()
                / requests.max(1) as f64,
        }
    }
}

pub(crate) fn clock_ticks_per_second() -> f64 {
    static TICKS: std::sync::OnceLock<f64> = std::sync::OnceLock::new();
    *TICKS.get_or_init(|| {
        Command::new("getconf")
            .arg("CLK_TCK")
            .output()
            .ok()
            .and_then(|o| String::from_utf8_lossy(&o.stdout).trim().parse().ok())
            .unwrap_or(100.0)
    })
}

// ---------------------------------------------------------------------------------------------
// The pipeline's share of the round trips

struct Overhead {
    /// GET /accounts minus its one list query.
    auth_rate_limit_get: Option<u32>,
    /// POST /heartbeat minus its one upsert.
    auth_rate_limit_post: Option<u32>,
    /// Heartbeat with a new Idempotency-Key minus the heartbeat without one.
    idempotency_key: Option<i64>,
    /// A replay runs no handler: all of it is the pipeline.
    replay: Option<u32>,
}

impl Overhead {
    fn infer(results: &[ScenarioResult]) -> Overhead {
        let median = |s: Scenario| {
            results
                .iter()
                .find(|r| r.scenario == s && r.requests > r.without_trips)
                .map(|r| r.trips_median)
        };
        let pipeline = |s: Scenario| median(s).map(|m| m.saturating_sub(s.own_statements()));
        Overhead {
            auth_rate_limit_get: pipeline(Scenario::Accounts),
            auth_rate_limit_post: pipeline(Scenario::Heartbeat),
            idempotency_key: median(Scenario::HeartbeatKeyed)
                .zip(median(Scenario::Heartbeat))
                .map(|(k, p)| i64::from(k) - i64::from(p)),
            replay: median(Scenario::Replay),
        }
    }

    fn within_budget(&self) -> bool {
        self.auth_rate_limit_get.is_some_and(|n| n <= 1)
            && self.auth_rate_limit_post.is_some_and(|n| n <= 1)
            && self.idempotency_key.is_some_and(|n| n <= 1)
    }

    fn json(&self) -> Value {
        json!({
            "auth_and_rate_limit": {
                "from_get_accounts": self.auth_rate_limit_get,
                "from_heartbeat": self.auth_rate_limit_post,
                "inferred_as": "median statements of the request minus the operation's own (1: the list query, or the heartbeat upsert)",
            },
            "idempotency_key": {
                "extra": self.idempotency_key,
                "inferred_as": "median of POST /heartbeat with a new Idempotency-Key minus median without one",
            },
            "replay": {
                "total": self.replay,
                "inferred_as": "a replay runs no handler, so every statement it sends is the pipeline's",
            },
            "budget": "at most 1 for auth and rate limit together, 1 more for an Idempotency-Key",
            "within_budget": self.within_budget(),
        })
    }
}

fn opt<T: std::fmt::Display>(v: Option<T>) -> String {
    v.map_or("n/a".into(), |v| v.to_string())
}

fn print_report(
    opts: &Options,
    results: &[ScenarioResult],
    o: &Overhead,
    wire: Option<&[WireResult]>,
) {
    println!();
    let how = match opts.requests {
        Some(n) => format!("{n} requests per scenario"),
        None => format!("{} s per scenario", opts.seconds),
    };
    println!(
        "{} concurrent clients (one keep-alive connection each), {how} after {} s of warm-up; {} accounts; {} key(s)",
        opts.concurrency, opts.warmup, opts.accounts, opts.keys
    );
    println!(
        "{:<38} {:>8} {:>6} {:>9} {:>8} {:>8} {:>8} {:>17} {:>8}",
        "scenario",
        "requests",
        "errors",
        "req/s",
        "p50 ms",
        "p99 ms",
        "max ms",
        "trips min/med/max",
        "pipeline"
    );
    for r in results {
        println!(
            "{:<38} {:>8} {:>6} {:>9.1} {:>8.2} {:>8.2} {:>8.2} {:>17} {:>8}",
            r.scenario.label(),
            r.requests,
            r.errors,
            r.rps,
            r.p50_ms,
            r.p99_ms,
            r.max_ms,
            format!("{}/{}/{}", r.trips_min, r.trips_median, r.trips_max),
            r.trips_median.saturating_sub(r.scenario.own_statements()),
        );
    }
    for r in results {
        if r.trips_histogram.len() > 1 || r.without_trips > 0 {
            let h: Vec<String> = r
                .trips_histogram
                .iter()
                .map(|(k, v)| format!("{k} trips x{v}"))
                .collect();
            println!(
                "note: {}: round trips vary: {}; {} responses without the header",
                r.scenario.label(),
                h.join(", "),
                r.without_trips
            );
        }
        if r.errors > 0 {
            println!(
                "errors in {}: {} (e.g. {})",
                r.scenario.label(),
                r.errors,
                r.error_examples.join(" | ")
            );
        }
        if r.scenario == Scenario::Replay && r.not_replayed > 0 {
            println!(
                "note: {} successful replay requests lacked Idempotent-Replayed: true",
                r.not_replayed
            );
        }
        if r.connects as usize > opts.concurrency {
            println!(
                "note: {}: {} connections for {} clients (the server closed some)",
                r.scenario.label(),
                r.connects,
                opts.concurrency
            );
        }
    }
    if results.iter().any(|r| r.cpu.is_some()) {
        println!(
            "\nCPU while measuring, in % of all {} core(s): the clients and the server are separate processes on the same cores",
            thread::available_parallelism().map_or(1, |n| n.get())
        );
        println!(
            "{:<38} {:>8} {:>8} {:>8} {:>9} {:>7} {:>16} {:>16} {:>11}",
            "scenario",
            "machine",
            "server",
            "clients",
            "postgres",
            "other",
            "server CPU/req",
            "postgres CPU/req",
            "body bytes"
        );
        for r in results {
            if let Some(c) = r.cpu {
                println!(
                    "{:<38} {:>7.0}% {:>7.0}% {:>7.0}% {:>8.0}% {:>6.0}% {:>13.0} us {:>13.0} us {:>11.0}",
                    r.scenario.label(),
                    c.machine_busy_pct,
                    c.server_pct,
                    c.client_pct,
                    c.postgres_pct,
                    c.other_pct,
                    c.server_us_per_request,
                    c.postgres_us_per_request,
                    r.mean_body_bytes
                );
            }
        }
        println!(
            "postgres = every process named postgres on the machine; other = the rest of the busy time (kernel threads, other work)."
        );
    }
    println!(
        "\nround trips = the X-Db-Round-Trips header: SQL statements the request sent (median over all requests)."
    );
    println!(
        "pipeline = round trips minus the operation's own statements (1 list query for GET /accounts, \
         1 upsert for a heartbeat, 0 for a replay, which runs no handler)."
    );
    println!(
        "  auth + rate limit:  GET /accounts - 1 = {}   POST /heartbeat - 1 = {}   (budget 1)",
        opt(o.auth_rate_limit_get),
        opt(o.auth_rate_limit_post)
    );
    println!(
        "  Idempotency-Key:    heartbeat with key - heartbeat without = {}   (budget 1)",
        opt(o.idempotency_key)
    );
    println!(
        "  replay:             {} statement(s) in all (the claim check rides in the admission statement)",
        opt(o.replay)
    );
    println!(
        "  within budget: {}",
        if o.within_budget() { "yes" } else { "NO" }
    );
    if let Some(w) = wire {
        print_wire(w);
    }
}

// ---------------------------------------------------------------------------------------------
// Wire check: what one statement costs between the service and PostgreSQL.

/// Counts the frontend messages of the extended query protocol.
#[derive(Default)]
pub(crate) struct WireCounters {
    parse: AtomicU64,
    bind: AtomicU64,
    execute: AtomicU64,
    close: AtomicU64,
    sync: AtomicU64,
    simple: AtomicU64,
    /// Batches ended by Sync (or a simple Query) whose answer the client waits for:
    /// a batch holding Parse, Describe or Execute. A batch of only Close is fire-and-forget.
    waits: AtomicU64,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct WireSnapshot {
    pub(crate) parse: u64,
    pub(crate) bind: u64,
    pub(crate) execute: u64,
    pub(crate) close: u64,
    pub(crate) sync: u64,
    pub(crate) simple: u64,
    pub(crate) waits: u64,
}

impl WireCounters {
    pub(crate) fn snapshot(&self) -> WireSnapshot {
        WireSnapshot {
            parse: self.parse.load(Ordering::SeqCst),
            bind: self.bind.load(Ordering::SeqCst),
            execute: self.execute.load(Ordering::SeqCst),
            close: self.close.load(Ordering::SeqCst),
            sync: self.sync.load(Ordering::SeqCst),
            simple: self.simple.load(Ordering::SeqCst),
            waits: self.waits.load(Ordering::SeqCst),
        }
    }

    /// The counters once they stay still: a statement's Close may trail its answer.
    pub(crate) fn settle(&self) -> WireSnapshot {
        let mut last = self.snapshot();
        loop {
            thread::sleep(Duration::from_millis(30));
            let now = self.snapshot();
            if now == last {
                return now;
            }
            last = now;
        }
    }
}

impl WireSnapshot {
    pub(crate) fn minus(self, b: WireSnapshot) -> WireSnapshot {
        WireSnapshot {
            parse: self.parse - b.parse,
            bind: self.bind - b.bind,
            execute: self.execute - b.execute,
            close: self.close - b.close,
            sync: self.sync - b.sync,
            simple: self.simple - b.simple,
            waits: self.waits - b.waits,
        }
    }
}

/// Forwards client-to-PostgreSQL bytes, counting the messages.
fn pump_frontend(from: TcpStream, mut to: TcpStream, c: &WireCounters) -> io::Result<()> {
    let mut from = BufReader::new(from);
    let mut startup = true;
    let mut waits_for_answer = false;
    let mut buf = Vec::new();
    loop {
        buf.clear();
        if startup {
            // Startup, SSLRequest and GSSENCRequest have no type byte.
            let mut len = [0u8; 4];
            from.read_exact(&mut len)?;
            let n = u32::from_be_bytes(len) as usize;
            if n < 8 {
                return Err(bad("short startup message"));
            }
            buf.extend_from_slice(&len);
            buf.resize(n, 0);
            from.read_exact(&mut buf[4..])?;
            let code = u32::from_be_bytes([buf[4], buf[5], buf[6], buf[7]]);
            startup = code == 80877103 || code == 80877104;
        } else {
            let mut head = [0u8; 5];
            from.read_exact(&mut head)?;
            let n = u32::from_be_bytes([head[1], head[2], head[3], head[4]]) as usize;
            if n < 4 {
                return Err(bad("bad message length"));
            }
            buf.extend_from_slice(&head);
            buf.resize(n + 1, 0);
            from.read_exact(&mut buf[5..])?;
            let count = |a: &AtomicU64| {
                a.fetch_add(1, Ordering::SeqCst);
            };
            match head[0] {
                b'P' => {
                    count(&c.parse);
                    waits_for_answer = true;
                }
                b'D' => waits_for_answer = true,
                b'B' => count(&c.bind),
                b'E' => {
                    count(&c.execute);
                    waits_for_answer = true;
                }
                b'C' => count(&c.close),
                b'Q' => {
                    count(&c.simple);
                    count(&c.waits);
                }
                b'S' => {
                    if waits_for_answer {
                        count(&c.waits);
                    }
                    count(&c.sync);
                    waits_for_answer = false;
                }
                _ => {}
            }
        }
        to.write_all(&buf)?;
    }
}

/// A TCP proxy to PostgreSQL on a free local port; lives until the process exits.
pub(crate) fn start_proxy(upstream: String, counters: Arc<WireCounters>) -> anyhow::Result<String> {
    let listener = TcpListener::bind("127.0.0.1:0").context("binding the wire-check proxy")?;
    let addr = listener.local_addr()?.to_string();
    thread::spawn(move || {
        for conn in listener.incoming() {
            let Ok(client) = conn else { continue };
            let (upstream, counters) = (upstream.clone(), counters.clone());
            thread::spawn(move || {
                let Ok(server) = TcpStream::connect(&upstream) else {
                    return;
                };
                let _ = client.set_nodelay(true);
                let _ = server.set_nodelay(true);
                let (Ok(mut s_read), Ok(mut c_write)) = (server.try_clone(), client.try_clone())
                else {
                    return;
                };
                let back = thread::spawn(move || {
                    let _ = io::copy(&mut s_read, &mut c_write);
                    let _ = c_write.shutdown(std::net::Shutdown::Both);
                });
                let server_side = server.try_clone();
                let _ = pump_frontend(client, server, &counters);
                if let Ok(s) = server_side {
                    let _ = s.shutdown(std::net::Shutdown::Both);
                }
                let _ = back.join();
            });
        }
    });
    Ok(addr)
}

struct WireResult {
    scenario: Scenario,
    requests: usize,
    statements: Vec<u32>,
    wire: Vec<WireSnapshot>,
}

impl WireResult {
    fn median<T: Ord + Copy + Default>(values: impl Iterator<Item = T>) -> T {
        let mut v: Vec<T> = values.collect();
        v.sort_unstable();
        v.get(v.len() / 2).copied().unwrap_or_default()
    }

    fn med(&self, f: impl Fn(&WireSnapshot) -> u64) -> u64 {
        Self::median(self.wire.iter().map(f))
    }

    fn range(&self, f: impl Fn(&WireSnapshot) -> u64) -> (u64, u64) {
        let v: Vec<u64> = self.wire.iter().map(f).collect();
        (
            v.iter().copied().min().unwrap_or(0),
            v.iter().copied().max().unwrap_or(0),
        )
    }

    fn json(&self) -> Value {
        json!({
            "scenario": self.scenario.id(),
            "requests": self.requests,
            "statements_median": Self::median(self.statements.iter().copied()),
            "median_per_request": {
                "parse": self.med(|w| w.parse),
                "bind": self.med(|w| w.bind),
                "execute": self.med(|w| w.execute),
                "close": self.med(|w| w.close),
                "sync": self.med(|w| w.sync),
                "simple_query": self.med(|w| w.simple),
                "waits": self.med(|w| w.waits),
            },
            "waits_min_max": self.range(|w| w.waits),
        })
    }
}

fn wire_check(
    bin: &Path,
    db: &Database,
    data_dir: &Path,
    opts: &Options,
    keys: &[String],
) -> anyhow::Result<Vec<WireResult>> {
    let upstream = db.socket_addr()?;
    let counters = Arc::new(WireCounters::default());
    let proxy = start_proxy(upstream, counters.clone())?;
    let url = db.url_via(&proxy);
    println!(
        "\nwire check: a second server reaches PostgreSQL through a counting proxy; {} sequential requests per scenario",
        opts.wire_requests
    );
    let server = Server::start(
        bin,
        &url,
        data_dir,
        &opts.serve_flags(),
        &data_dir.join("serve-wire.log"),
    )?;
    let target = Target {
        addr: server.addr.clone(),
        keys: keys.to_vec(),
        tag: format!("{}-wire-{}", std::process::id(), unix_millis()),
    };
    // Requests are sequential, so the counters move only for the request in flight.
    let settle = || counters.settle();
    let mut client = Client::new(&target.addr);
    let mut results = Vec::new();
    for scenario in Scenario::ALL {
        prime(&target, scenario)?;
        // Warm-up: opens the pool's connection and fills the driver's type cache.
        for seq in 1..=3 {
            client.send(&scenario.request(&target, 0, seq))?;
        }
        let mut before = settle();
        let mut statements = Vec::new();
        let mut wire = Vec::new();
        for i in 0..opts.wire_requests {
            let r = client.send(&scenario.request(&target, 0, 1000 + i as u64))?;
            if !(200..300).contains(&r.status) {
                bail!(
                    "{} answered {} in the wire check: {}",
                    scenario.label(),
                    r.status,
                    excerpt(&r.body)
                );
            }
            let after = settle();
            statements.push(r.round_trips.unwrap_or(0));
            wire.push(after.minus(before));
            before = after;
        }
        results.push(WireResult {
            scenario,
            requests: opts.wire_requests,
            statements,
            wire,
        });
    }
    drop(server);
    Ok(results)
}

fn print_wire(results: &[WireResult]) {
    println!(
        "\nwire check: PostgreSQL protocol messages per request (median of sequential requests through the proxy)"
    );
    println!(
        "{:<38} {:>10} {:>6} {:>5} {:>8} {:>6} {:>5} {:>7} {:>18}",
        "scenario",
        "statements",
        "Parse",
        "Bind",
        "Execute",
        "Close",
        "Sync",
        "Query",
        "waits med/min-max"
    );
    for w in results {
        let (lo, hi) = w.range(|s| s.waits);
        println!(
            "{:<38} {:>10} {:>6} {:>5} {:>8} {:>6} {:>5} {:>7} {:>18}",
            w.scenario.label(),
            WireResult::median(w.statements.iter().copied()),
            w.med(|s| s.parse),
            w.med(|s| s.bind),
            w.med(|s| s.execute),
            w.med(|s| s.close),
            w.med(|s| s.sync),
            w.med(|s| s.simple),
            format!("{}/{lo}-{hi}", w.med(|s| s.waits)),
        );
    }
    println!(
        "waits = batches the service sent and then waited on (Parse, Describe or Execute before a Sync, or a simple Query):\n\
         the network round trips to PostgreSQL. A batch of only Close + Sync is not waited on."
    );
    let doubled = results.iter().all(|w| {
        let st = u64::from(WireResult::median(w.statements.iter().copied()));
        st > 0 && w.med(|s| s.waits) == 2 * st && w.med(|s| s.parse) == st
    });
    if doubled {
        println!(
            "every statement is prepared (Parse/Describe/Sync: one wait), run (Bind/Execute/Sync: a second wait) and\n\
             closed: the header counts statements, and each statement costs 2 network round trips (diesel never\n\
             caches a sql_query as a prepared statement, so every execution prepares it again)."
        );
    }
}

/// Command-line flags, `--name value` or `--name=value`, for the benchmarks' option parsers.
pub(crate) struct Flags<'a> {
    args: std::slice::Iter<'a, String>,
    inline: Option<String>,
}

impl<'a> Flags<'a> {
    pub(crate) fn new(args: &'a [String]) -> Self {
        Flags {
            args: args.iter(),
            inline: None,
        }
    }

    /// The next flag's name; its `=value`, if any, is kept for [`Flags::value`].
    pub(crate) fn next_flag(&mut self) -> Option<String> {
        let arg = self.args.next()?;
        match arg.split_once('=') {
            Some((f, v)) if f.starts_with("--") => {
                self.inline = Some(v.to_owned());
                Some(f.to_owned())
            }
            _ => {
                self.inline = None;
                Some(arg.clone())
            }
        }
    }

    /// The value of flag `name`: after `=`, or the next argument.
    pub(crate) fn value(&mut self, name: &str) -> anyhow::Result<String> {
        match self.inline.take() {
            Some(v) => Ok(v),
            None => self
                .args
                .next()
                .cloned()
                .ok_or_else(|| anyhow!("{name} needs a value")),
        }
    }

    pub(crate) fn num<T: std::str::FromStr>(&mut self, name: &str) -> anyhow::Result<T> {
        let v = self.value(name)?;
        v.parse()
            .map_err(|_| anyhow!("{name}: `{v}` is not a valid number"))
    }
}
