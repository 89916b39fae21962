//! What the benchmarks share: the workspace's directories and results file, the release
//! build, the machine's description, a temporary directory, a database and a server that
//! clean up when dropped, the tenant file, CPU counters from /proc, the counting PostgreSQL
//! proxy of the wire checks, and the flag parser.

use anyhow::{Context, anyhow, bail};
use serde_json::{Value, json};
use std::collections::BTreeMap;
use std::fs::File;
use std::io::{self, BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, mpsc};
use std::thread;
use std::time::{Duration, Instant};

pub(crate) const DEFAULT_SERVER_URL: &str = "postgres://postgres@127.0.0.1:5432";

/// The PostgreSQL server the benchmark database is made on: `FLEETDESK_BENCH_SERVER_URL` when
/// set and not empty, else [`DEFAULT_SERVER_URL`].
pub(crate) fn server_url() -> String {
    std::env::var("FLEETDESK_BENCH_SERVER_URL")
        .ok()
        .filter(|u| !u.is_empty())
        .unwrap_or_else(|| DEFAULT_SERVER_URL.to_owned())
}

/// What every benchmark of the release binary starts from: the clock, the binary (built
/// unless `--no-build`), a temporary directory and a fresh database named after it, and the
/// machine it runs on, printed under its title.
pub(crate) struct Run {
    pub(crate) started: Instant,
    pub(crate) target_dir: PathBuf,
    pub(crate) bin: PathBuf,
    pub(crate) tmp: TempDir,
    pub(crate) db: Database,
    pub(crate) machine: Machine,
}

pub(crate) fn begin(
    name: &str,
    title: &str,
    server_url: &str,
    run_cargo: bool,
) -> anyhow::Result<Run> {
    let started = Instant::now();
    let (root, target_dir) = workspace_dirs()?;
    let bin = build(&root, &target_dir, run_cargo)?;
    let tmp = TempDir::create_named(name)?;
    let db = Database::create_named(server_url, name)?;
    let machine = machine(server_url);
    println!("{title}");
    print_machine(&machine);
    Ok(Run {
        started,
        target_dir,
        bin,
        tmp,
        db,
        machine,
    })
}

/// The workspace root and the target directory (`CARGO_TARGET_DIR` when set).
pub(crate) fn workspace_dirs() -> anyhow::Result<(PathBuf, PathBuf)> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .context("the bench crate has no parent directory")?
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

/// `YYYY-MM-DDTHH:MM:SSZ` of a Unix time in seconds (clamped to jiff's range, years -9999
/// to 9999).
pub(crate) fn iso_utc(secs: i64) -> String {
    let secs = secs.clamp(
        jiff::Timestamp::MIN.as_second(),
        jiff::Timestamp::MAX.as_second(),
    );
    jiff::Timestamp::from_second(secs)
        .expect("clamped to the range")
        .strftime("%Y-%m-%dT%H:%M:%SZ")
        .to_string()
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

/// What a database has written, from PostgreSQL's own counters: `pg_stat_database` (the
/// database's transactions and rows written) and the server's WAL position. Backends report
/// their counts to `pg_stat_database` at most once a second while busy and within
/// [`STATS_FLUSH`] once idle; the WAL position is the whole server's (every database on it).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct DbCounters {
    pub(crate) xact_commit: i64,
    pub(crate) xact_rollback: i64,
    pub(crate) tup_inserted: i64,
    pub(crate) tup_updated: i64,
    pub(crate) tup_deleted: i64,
    /// `pg_wal_lsn_diff(pg_current_wal_lsn(), '0/0')`: WAL bytes the server ever wrote.
    pub(crate) wal_bytes: i64,
    /// `pg_stat_wal.wal_sync`: the times the server flushed WAL to disk (the whole server's, the
    /// WAL writer's included). A durable commit waits for one, shared by the commits it covers.
    pub(crate) wal_syncs: i64,
    /// Rows inserted, updated and deleted per table (`pg_stat_user_tables`).
    pub(crate) tables: BTreeMap<String, i64>,
    /// In a difference: the WAL records of this database's own blocks ([`DbCounters::own_wal`]).
    pub(crate) own_wal: Option<OwnWal>,
}

/// The WAL records between two positions that touch blocks of one database's relations, read
/// back with pg_walinspect: the database's own writes, without other databases' and without
/// records of no block (commit records, a few dozen bytes per writing transaction).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct OwnWal {
    pub(crate) records: i64,
    pub(crate) bytes: i64,
}

/// The schema pg_walinspect is installed in, apart from the service's tables.
const WALINSPECT_SCHEMA: &str = "bench_wal";

/// How long after its last statement an idle backend has surely reported its counts (it
/// reports within 10 s, PostgreSQL's `PGSTAT_IDLE_INTERVAL`, or when it exits).
pub(crate) const STATS_FLUSH: Duration = Duration::from_secs(11);

const DB_COUNTERS: &str = "\
SELECT d.xact_commit, d.xact_rollback, d.tup_inserted, d.tup_updated, d.tup_deleted, \
       pg_wal_lsn_diff(pg_current_wal_lsn(), '0/0')::bigint, (SELECT wal_sync FROM pg_stat_wal), \
       (SELECT coalesce(string_agg(t.relname || '=' || (t.n_tup_ins + t.n_tup_upd + t.n_tup_del), ',' \
                                   ORDER BY t.relname), '') \
        FROM pg_stat_user_tables t) \
FROM pg_stat_database d WHERE d.datname = current_database()";

impl DbCounters {
    /// The counters of the database `url` names (the query's own transaction counts too: one
    /// commit).
    pub(crate) fn read(url: &str) -> anyhow::Result<DbCounters> {
        let out = psql(url, DB_COUNTERS)?;
        Self::parse(out.trim()).with_context(|| format!("reading the counters: `{}`", out.trim()))
    }

    /// One line of `psql -A -t`: the seven numbers and `table=rows,...`, separated by `|`.
    fn parse(line: &str) -> anyhow::Result<DbCounters> {
        let f: Vec<&str> = line.split('|').collect();
        if f.len() != 8 {
            bail!("expected 8 fields, found {}", f.len());
        }
        let n = |i: usize| -> anyhow::Result<i64> {
            f[i].trim()
                .parse()
                .map_err(|_| anyhow!("`{}` is not a number", f[i]))
        };
        let tables = f[7]
            .split(',')
            .filter(|t| !t.is_empty())
            .map(|t| {
                let (name, rows) = t.rsplit_once('=').ok_or_else(|| anyhow!("`{t}`"))?;
                Ok((name.to_owned(), rows.parse()?))
            })
            .collect::<anyhow::Result<_>>()?;
        Ok(DbCounters {
            xact_commit: n(0)?,
            xact_rollback: n(1)?,
            tup_inserted: n(2)?,
            tup_updated: n(3)?,
            tup_deleted: n(4)?,
            wal_bytes: n(5)?,
            wal_syncs: n(6)?,
            tables,
            own_wal: None,
        })
    }

    /// Installs pg_walinspect in a schema of its own in the database `url` names (it goes with
    /// the database); false when the server does not have it (`postgresql-contrib`).
    pub(crate) fn enable_own_wal(url: &str) -> bool {
        let sql = format!(
            "CREATE SCHEMA IF NOT EXISTS {WALINSPECT_SCHEMA}; \
             CREATE EXTENSION IF NOT EXISTS pg_walinspect SCHEMA {WALINSPECT_SCHEMA}"
        );
        psql(url, &sql).is_ok()
    }

    /// The WAL records of the database `url` names between two readings of its counters.
    pub(crate) fn own_wal(
        url: &str,
        before: &DbCounters,
        after: &DbCounters,
    ) -> anyhow::Result<OwnWal> {
        let lsn = |b: i64| format!("{:X}/{:X}", b >> 32, b & 0xffff_ffff);
        let sql = format!(
            "SELECT count(*), coalesce(sum(w.record_length), 0) \
             FROM {WALINSPECT_SCHEMA}.pg_get_wal_records_info('{}', '{}') w \
             WHERE w.block_ref ~ ('rel \\d+/' || \
                   (SELECT oid FROM pg_database WHERE datname = current_database()) || '/')",
            lsn(before.wal_bytes),
            lsn(after.wal_bytes)
        );
        let out = psql(url, &sql)?;
        let (records, bytes) = out
            .trim()
            .split_once('|')
            .ok_or_else(|| anyhow!("pg_walinspect answered `{}`", out.trim()))?;
        Ok(OwnWal {
            records: records.parse()?,
            bytes: bytes.parse()?,
        })
    }

    /// What moved since `before`; tables without writes in between are left out.
    pub(crate) fn minus(&self, before: &DbCounters) -> DbCounters {
        DbCounters {
            xact_commit: self.xact_commit - before.xact_commit,
            xact_rollback: self.xact_rollback - before.xact_rollback,
            tup_inserted: self.tup_inserted - before.tup_inserted,
            tup_updated: self.tup_updated - before.tup_updated,
            tup_deleted: self.tup_deleted - before.tup_deleted,
            wal_bytes: self.wal_bytes - before.wal_bytes,
            wal_syncs: self.wal_syncs - before.wal_syncs,
            tables: self
                .tables
                .iter()
                .map(|(t, n)| (t.clone(), n - before.tables.get(t).copied().unwrap_or(0)))
                .filter(|(_, n)| *n != 0)
                .collect(),
            own_wal: None,
        }
    }

    /// Rows inserted, updated and deleted.
    pub(crate) fn row_writes(&self) -> i64 {
        self.tup_inserted + self.tup_updated + self.tup_deleted
    }

    /// A difference ([`DbCounters::minus`]) in all and per request (or transaction) of `n`.
    pub(crate) fn json(&self, n: u64) -> Value {
        let per = |v: i64| v as f64 / n.max(1) as f64;
        json!({
            "xact_commit": self.xact_commit,
            "xact_rollback": self.xact_rollback,
            "tup_inserted": self.tup_inserted,
            "tup_updated": self.tup_updated,
            "tup_deleted": self.tup_deleted,
            "wal_bytes": self.wal_bytes,
            "wal_syncs": self.wal_syncs,
            "row_writes_by_table": self.tables,
            "own_wal": self.own_wal.map(|w| json!({
                "records": w.records,
                "bytes": w.bytes,
                "read_as": "pg_walinspect: the WAL records touching blocks of this database's relations (no commit records, no other database)",
            })),
            "divided_by": n,
            "per_request": {
                "xact": per(self.xact_commit + self.xact_rollback),
                "row_writes": per(self.row_writes()),
                "wal_bytes": per(self.wal_bytes),
                "wal_syncs": per(self.wal_syncs),
                "own_wal_bytes": self.own_wal.map(|w| per(w.bytes)),
                "own_wal_records": self.own_wal.map(|w| per(w.records)),
            },
        })
    }
}

/// Keeps the server's WAL from now on while it lives, so that [`DbCounters::own_wal`] can read
/// a span back after checkpoints (other databases' writes too) recycled its segments: a
/// temporary physical replication slot, held by a psql session of its own. The slot goes with
/// the session, when this is dropped or when the benchmark dies.
pub(crate) struct WalHold {
    child: Child,
}

impl WalHold {
    pub(crate) fn start(url: &str) -> anyhow::Result<WalHold> {
        let name = format!("fleetdesk_bench_wal_{}", std::process::id());
        let mut child = Command::new("psql")
            .args(["-X", "-q", "-v", "ON_ERROR_STOP=1", "-d", url])
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .context("running psql")?;
        let hold = WalHold {
            child: {
                let stdin = child.stdin.as_mut().context("no stdin")?;
                writeln!(
                    stdin,
                    "SELECT pg_create_physical_replication_slot('{name}', true, true);"
                )?;
                stdin.flush()?;
                child
            },
        };
        let exists =
            format!("SELECT count(*) FROM pg_replication_slots WHERE slot_name = '{name}'");
        for _ in 0..50 {
            if psql(url, &exists)?.trim() == "1" {
                return Ok(hold);
            }
            thread::sleep(Duration::from_millis(100));
        }
        bail!("the replication slot {name} did not appear")
    }
}

impl Drop for WalHold {
    fn drop(&mut self) {
        // psql ends its session at the end of its input.
        drop(self.child.stdin.take());
        end_within(&mut self.child, Duration::from_secs(5));
    }
}

/// Waits up to `grace` for `child` to exit, then kills it.
fn end_within(child: &mut Child, grace: Duration) {
    let until = Instant::now() + grace;
    while Instant::now() < until {
        if matches!(child.try_wait(), Ok(Some(_))) {
            return;
        }
        thread::sleep(Duration::from_millis(50));
    }
    let _ = child.kill();
    let _ = child.wait();
}

/// How `fleetdesk serve` is started.
pub(crate) struct ServeFlags {
    pub(crate) workers: Option<usize>,
    pub(crate) db_pool: Option<usize>,
    /// `FLEETDESK_LOG_FORMAT=json`: one JSON object per log line, for reading the log back.
    pub(crate) json_log: bool,
    /// `--allow-http-webhooks --allow-private-webhooks`: webhooks to a receiver on
    /// 127.0.0.1 over http (the events benchmark's; a binary older than the event log has no
    /// such flags).
    pub(crate) local_webhooks: bool,
    /// `FLEETDESK_EMBEDDINGS_URL`: the embedding model search reorders by (none: words alone).
    pub(crate) embeddings_url: Option<String>,
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
        if flags.local_webhooks {
            cmd.args(["--allow-http-webhooks", "--allow-private-webhooks"]);
        }
        match &flags.embeddings_url {
            Some(url) => cmd.env("FLEETDESK_EMBEDDINGS_URL", url),
            None => cmd.env_remove("FLEETDESK_EMBEDDINGS_URL"),
        };
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
        end_within(&mut self.child, Duration::from_secs(10));
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
// Wire check: what one statement costs between the service and PostgreSQL.

fn bad(what: &str) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, what.to_owned())
}

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

pub(crate) fn excerpt(body: &[u8]) -> String {
    String::from_utf8_lossy(&body[..body.len().min(300)]).into_owned()
}

/// The nearest-rank percentile `p` of latencies in microseconds (in any order), in
/// milliseconds.
pub(crate) fn percentile_ms(latencies_us: &[u64], p: f64) -> f64 {
    let mut sorted = latencies_us.to_vec();
    sorted.sort_unstable();
    percentile(&sorted, p) as f64 / 1000.0
}

/// The least and the most of some counts (round trips per request); (0, 0) without any.
pub(crate) fn min_max(values: &[u32]) -> (u32, u32) {
    (
        values.iter().copied().min().unwrap_or(0),
        values.iter().copied().max().unwrap_or(0),
    )
}

/// Nearest-rank percentile of sorted values.
pub(crate) fn percentile(sorted: &[u64], p: f64) -> u64 {
    if sorted.is_empty() {
        return 0;
    }
    let rank = (p * sorted.len() as f64).ceil() as usize;
    sorted[rank.clamp(1, sorted.len()) - 1]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn db_counters_parse_and_subtract() {
        let before = DbCounters::parse("10|1|5|6|0|1000|40|api_keys=2,rate_grants=7").unwrap();
        let after =
            DbCounters::parse("25|1|8|20|1|5096|52|api_keys=2,rate_grants=9,agent_runs=3").unwrap();
        let d = after.minus(&before);
        assert_eq!(
            (d.xact_commit, d.xact_rollback, d.wal_bytes, d.wal_syncs),
            (15, 0, 4096, 12)
        );
        assert_eq!(d.row_writes(), 3 + 14 + 1);
        assert_eq!(
            d.tables.into_iter().collect::<Vec<_>>(),
            [("agent_runs".to_owned(), 3), ("rate_grants".to_owned(), 2)]
        );
        assert_eq!(DbCounters::parse("1|2|3|4|5|6|7|").unwrap().tables.len(), 0);
        assert!(DbCounters::parse("1|2|3").is_err());
        assert!(DbCounters::parse("1|2|3|4|5|6|").is_err());
        assert!(DbCounters::parse("1|2|x|4|5|6|7|").is_err());
    }

    #[test]
    fn iso_utc_formats_unix_time() {
        assert_eq!(iso_utc(0), "1970-01-01T00:00:00Z");
        assert_eq!(iso_utc(1_795_000_000), "2026-11-18T11:06:40Z");
    }
}
