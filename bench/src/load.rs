//! Load benchmark of the real binary: `cargo xtask bench [--help]`.
//!
//! 1. builds `fleetdesk` in release mode;
//! 2. creates a fresh database on the machine's PostgreSQL (dropped at the end, also on error);
//! 3. applies a tenant file: one operator agent with as many keys as the largest `--keys`,
//!    whose persona holds N active accounts;
//! 4. starts `fleetdesk serve --expose-round-trips` on a free port;
//! 5. measures `pgbench -S` and `pgbench -N` on a scratch database of the same server, with
//!    the clients and duration of the HTTP scenarios (pgbench.rs), unless `--no-pgbench`;
//! 6. for each key count of `--keys` (1 and 16 by default), drives four scenarios with C
//!    client threads, each on one keep-alive HTTP/1.1 connection, using the first K keys
//!    round-robin: GET /accounts, POST /heartbeat, POST /heartbeat with a fresh
//!    Idempotency-Key, and the replay of one Idempotency-Key;
//!    Then `wrk` (wrk.rs), an independent load generator, drives GET /accounts with the first
//!    key, the same connections and duration, unless `--no-wrk`;
//! 7. reports requests per second, p50/p99/max latency and the SQL statements per request
//!    (the `X-Db-Round-Trips` header), and the pipeline's share of them; what PostgreSQL
//!    counted around each scenario (`pg_stat_database`: transactions and rows written, and
//!    the server's WAL bytes), per request; and each scenario's requests/s against pgbench's
//!    tps, with the targets (GET /accounts ≥ 40% of `-S`, POST /heartbeat ≥ 100% of `-N`);
//! 8. a wire check: a second server reaches PostgreSQL through a counting proxy, and a few
//!    sequential requests show what each statement costs on the wire (Parse, Bind/Execute,
//!    Close, Sync, and how many times the service waited for PostgreSQL).
//!
//! Results go to standard output and to `target/bench/results.json`. Then the upload
//! benchmark runs (upload.rs), unless `--no-upload`.

use crate::harness::{
    CpuShare, CpuTicks, Database, DbCounters, Flags, STATS_FLUSH, ServeFlags, Server, TempDir,
    WalHold, WireCounters, WireSnapshot, apply_tenant, build, excerpt, machine, merge_results,
    percentile, print_machine, start_proxy, unix_millis, workspace_dirs,
};
use crate::http::{Connection, Request, api_request};
use anyhow::{Context, anyhow, bail};
use serde_json::{Value, json};
use std::collections::BTreeMap;
use std::io::{self, Write};
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Barrier};
use std::thread;
use std::time::{Duration, Instant};

const HELP: &str = "\
cargo xtask bench: load benchmark of the release binary against the machine's PostgreSQL.

Creates a database fleetdesk_bench_<pid> (dropped at the end), applies a tenant file with one
operator agent and N accounts, starts `fleetdesk serve --expose-round-trips`, and measures
GET /api/agent/v1/accounts and POST /api/agent/v1/heartbeat (plain, with a fresh
Idempotency-Key, and replaying one Idempotency-Key) with C keep-alive HTTP/1.1 clients, once
for each key count of --keys. Beside it, pgbench -S and -N on a scratch database of the same
server with the same clients and duration. Prints requests/s, p50/p99/max latency, SQL round
trips per request, the database's transactions, row writes and WAL bytes per request
(pg_stat_database and pg_current_wal_lsn() before and after each scenario) and requests/s as
a share of pgbench's tps against the targets (GET /accounts >= 40% of -S, POST /heartbeat >=
100% of -N); writes target/bench/results.json. Then runs the upload benchmark (see below).

USAGE:
    cargo xtask bench [OPTIONS]

OPTIONS:
    --accounts N        accounts under the agent's persona (default 50)
    --concurrency C     client threads, one keep-alive connection each (default 16)
    --seconds D         measured seconds per scenario (default 10)
    --requests N        measure a fixed number of requests per scenario instead of --seconds
    --warmup S          warm-up seconds per scenario, same clients and connections (default 2)
    --keys K[,K...]     key counts to run the scenarios with, one after another; the clients
                        use the first K keys of the agent round-robin (default 1,16; each key
                        leases its rate-limit tokens on its own, about once a second)
    --workers W         fleetdesk serve --workers (default: the server's, one per core)
    --db-pool P         fleetdesk serve --db-pool (default: the server's, 16)
    --wire-requests N   sequential requests per scenario in the wire check (default 20)
    --no-wire-check     skip the wire check (PostgreSQL messages per request, via a proxy)
    --pgbench-scale S   pgbench -i -s S for the comparison (default 10)
    --no-pgbench        skip the pgbench comparison
    --no-wrk            skip the second measurement of GET /accounts (1 key) with wrk, an
                        independent load generator (Debian package `wrk`)
    --no-db-counters    skip the database counters around each scenario (they wait 11 s after
                        each one, until every idle connection reported its counts)
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

#[derive(Debug, Clone)]
struct Options {
    accounts: usize,
    concurrency: usize,
    seconds: f64,
    requests: Option<u64>,
    warmup: f64,
    /// Key counts, each run in turn.
    keys: Vec<usize>,
    workers: Option<usize>,
    db_pool: Option<usize>,
    wire_requests: usize,
    wire_check: bool,
    pgbench: bool,
    /// GET /accounts is measured with wrk too.
    wrk: bool,
    pgbench_scale: u32,
    db_counters: bool,
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
            keys: vec![1, 16],
            workers: None,
            db_pool: None,
            wire_requests: 20,
            wire_check: true,
            pgbench: true,
            wrk: true,
            pgbench_scale: 10,
            db_counters: true,
            build: true,
            uploads: true,
            server_url: crate::harness::server_url(),
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
                "--keys" => o.keys = parse_key_counts(&flags.value(flag)?)?,
                "--workers" => o.workers = Some(flags.num(flag)?),
                "--db-pool" => o.db_pool = Some(flags.num(flag)?),
                "--wire-requests" => o.wire_requests = flags.num(flag)?,
                "--no-wire-check" => o.wire_check = false,
                "--pgbench-scale" => o.pgbench_scale = flags.num(flag)?,
                "--no-pgbench" => o.pgbench = false,
                "--no-wrk" => o.wrk = false,
                "--no-db-counters" => o.db_counters = false,
                "--no-build" => o.build = false,
                "--no-upload" => o.uploads = false,
                other => bail!("unknown option `{other}`; see cargo xtask bench --help"),
            }
        }
        if o.concurrency == 0 || o.pgbench_scale == 0 {
            bail!("--concurrency and --pgbench-scale must be at least 1");
        }
        if o.requests.is_none() && o.seconds <= 0.0 {
            bail!("--seconds must be positive");
        }
        if o.warmup < 0.0 || !o.warmup.is_finite() || !o.seconds.is_finite() {
            bail!("--warmup and --seconds must be finite and not negative");
        }
        Ok(Some(o))
    }

    /// The most keys a run uses: the agent's keys.
    fn max_keys(&self) -> usize {
        self.keys.iter().copied().max().unwrap_or(1)
    }

    fn pgbench(&self) -> crate::pgbench::Options {
        crate::pgbench::Options {
            scale: self.pgbench_scale,
            clients: self.concurrency,
            seconds: self.seconds.ceil() as u64,
            transactions_per_client: self
                .requests
                .map(|n| n.div_ceil(self.concurrency as u64).max(1)),
            warmup_seconds: self.warmup.ceil() as u64,
        }
    }

    fn serve_flags(&self) -> ServeFlags {
        ServeFlags {
            workers: self.workers,
            db_pool: self.db_pool,
            json_log: false,
            local_webhooks: false,
            embeddings_url: None,
        }
    }
}

/// `--keys`: key counts separated by commas, each at least 1, in the order given, without
/// repeats.
fn parse_key_counts(list: &str) -> anyhow::Result<Vec<usize>> {
    let mut counts = Vec::new();
    for part in list.split(',').map(str::trim) {
        let n: usize = part
            .parse()
            .map_err(|_| anyhow!("--keys: `{part}` is not a key count"))?;
        if n == 0 {
            bail!("--keys: a key count must be at least 1");
        }
        if !counts.contains(&n) {
            counts.push(n);
        }
    }
    Ok(counts)
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

    let keys = apply_tenant(&bin, &db.url, &tmp.path, opts.accounts, opts.max_keys())?;
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
    let tag = format!("{}-{}", std::process::id(), unix_millis());
    let target_with = |n: usize| {
        Arc::new(Target {
            addr: server.addr.clone(),
            keys: keys[..n].to_vec(),
            // Idempotency-Keys are the agent's, whichever key sends them: unique per key count.
            tag: format!("{tag}-k{n}"),
        })
    };
    sanity_check(&target_with(1), opts.accounts)?;

    let pgbench = if opts.pgbench {
        match crate::pgbench::run(&opts.server_url, &opts.pgbench(), server.child.id()) {
            Ok(runs) => runs,
            Err(e) => {
                eprintln!("warning: the pgbench comparison failed: {e:#}");
                Vec::new()
            }
        }
    } else {
        Vec::new()
    };

    let mut counters = DbWatch::start(&db.url, opts.db_counters)?;
    let mut results = Vec::new();
    for &n in &opts.keys {
        let target = target_with(n);
        println!("\n{n} key(s):");
        for scenario in Scenario::ALL {
            prime(&target, scenario)?;
            print!("running {:<38} ", scenario.label());
            io::stdout().flush().ok();
            let mut r = run_scenario(&target, scenario, &opts, server.child.id())?;
            r.db = counters.next()?;
            println!(
                "{} requests in {:.1} s, {} errors",
                r.requests, r.elapsed_s, r.errors
            );
            results.push(r);
        }
    }
    let wrk = if opts.wrk {
        measure_with_wrk(&server.addr, &keys[0], &opts)
    } else {
        None
    };
    drop(server);

    let wire = if opts.wire_check {
        match wire_check(&bin, &db, &tmp.path, &opts, &keys[..1]) {
            Ok(w) => Some(w),
            Err(e) => {
                eprintln!("warning: the wire check failed: {e:#}");
                None
            }
        }
    } else {
        None
    };

    let elapsed = started.elapsed().as_secs_f64();
    let mut overheads = Vec::new();
    for &n in &opts.keys {
        let of_n: Vec<&ScenarioResult> = results.iter().filter(|r| r.keys == n).collect();
        let overhead = Overhead::infer(&of_n);
        print_report(&opts, n, &of_n, &overhead);
        overheads.push(json!({"keys": n, "overhead": overhead.json()}));
    }
    print_db_counters(&results, counters.idle.as_ref());
    let comparisons = compare(&results, wrk.as_ref(), &pgbench);
    print_comparison(&opts, &pgbench, &comparisons);
    if let Some(w) = wire.as_deref() {
        print_wire(w);
    }

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
            "pgbench_scale": opts.pgbench.then_some(opts.pgbench_scale),
        },
        "scenarios": results.iter().map(ScenarioResult::json).collect::<Vec<_>>(),
        "pipeline_overhead": overheads,
        "idle_database_counters": counters.idle.as_ref().map(|d| json!({
            "seconds": STATS_FLUSH.as_secs(),
            "counters": d.json(1),
        })),
        "pgbench": pgbench.iter().map(crate::pgbench::Run::json).collect::<Vec<_>>(),
        "wrk": wrk.as_ref().map(crate::wrk::Run::json),
        "targets": comparisons.iter().map(Comparison::json).collect::<Vec<_>>(),
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
        crate::upload::run(
            &crate::upload::Options::defaults(opts.server_url.clone()),
            &bin,
            &target_dir,
        )?;
    }
    Ok(())
}

// ---------------------------------------------------------------------------------------------
// What PostgreSQL counted

/// The benchmark database's counters, read between scenarios once every connection of the
/// server has reported its counts ([`STATS_FLUSH`] after the last request).
struct DbWatch {
    url: String,
    last: Option<DbCounters>,
    /// What moved while the server stood idle for [`STATS_FLUSH`] before the first scenario:
    /// the background (the instance lock's ping, other databases' WAL).
    idle: Option<DbCounters>,
    /// pg_walinspect is installed and the WAL held: the database's own WAL is read too.
    own_wal: Option<WalHold>,
}

impl DbWatch {
    fn start(url: &str, enabled: bool) -> anyhow::Result<DbWatch> {
        let mut w = DbWatch {
            url: url.to_owned(),
            last: None,
            idle: None,
            own_wal: None,
        };
        if enabled {
            w.own_wal = if DbCounters::enable_own_wal(url) {
                WalHold::start(url)
                    .map_err(|e| eprintln!("warning: cannot hold the WAL: {e:#}"))
                    .ok()
            } else {
                None
            };
            if w.own_wal.is_none() {
                println!(
                    "note: no pg_walinspect or no replication slot: only the whole server's WAL is measured"
                );
            }
            println!(
                "\ndatabase counters: waiting {} s with the server idle (its connections report their counts)",
                STATS_FLUSH.as_secs()
            );
            thread::sleep(STATS_FLUSH);
            w.last = Some(DbCounters::read(url)?);
            w.idle = w.next()?;
        }
        Ok(w)
    }

    /// What moved since the last reading, once the connections reported it.
    fn next(&mut self) -> anyhow::Result<Option<DbCounters>> {
        let Some(before) = self.last.take() else {
            return Ok(None);
        };
        thread::sleep(STATS_FLUSH);
        let now = DbCounters::read(&self.url)?;
        let mut moved = now.minus(&before);
        if self.own_wal.is_some() {
            moved.own_wal = DbCounters::own_wal(&self.url, &before, &now)
                .map_err(|e| eprintln!("warning: reading the database's own WAL: {e:#}"))
                .ok();
        }
        self.last = Some(now);
        Ok(Some(moved))
    }
}

fn print_db_counters(results: &[ScenarioResult], idle: Option<&DbCounters>) {
    if results.iter().all(|r| r.db.is_none()) {
        return;
    }
    println!(
        "\nwhat PostgreSQL counted around each scenario (pg_stat_database of the benchmark's database; WAL of the whole server),\n\
         divided by every request the scenario sent, warm-up included:"
    );
    println!(
        "{:>4} {:<38} {:>8} {:>8} {:>9} {:>8} {:>11} {:>11} {:>10} {:>10} {:>12} {:>11}  row writes by table",
        "keys",
        "scenario",
        "requests",
        "commits",
        "rollbacks",
        "xact/req",
        "row wr/req",
        "WAL B/req",
        "WAL bytes",
        "syncs/req",
        "own WAL B/req",
        "own WAL B"
    );
    for r in results {
        let Some(d) = &r.db else { continue };
        let n = r.sent().max(1) as f64;
        let tables: Vec<String> = d.tables.iter().map(|(t, n)| format!("{t} {n}")).collect();
        println!(
            "{:>4} {:<38} {:>8} {:>8} {:>9} {:>8.3} {:>11.4} {:>11.1} {:>10} {:>10.4} {:>12} {:>11}  {}",
            r.keys,
            r.scenario.label(),
            r.sent(),
            d.xact_commit,
            d.xact_rollback,
            (d.xact_commit + d.xact_rollback) as f64 / n,
            d.row_writes() as f64 / n,
            d.wal_bytes as f64 / n,
            d.wal_bytes,
            d.wal_syncs as f64 / n,
            opt(d.own_wal.map(|w| format!("{:.2}", w.bytes as f64 / n))),
            opt(d.own_wal.map(|w| w.bytes)),
            if tables.is_empty() {
                "none".to_owned()
            } else {
                tables.join(", ")
            }
        );
    }
    if let Some(d) = idle {
        println!(
            "idle, {} s before the first scenario: {} commits, {} row writes, {} WAL bytes of the server (other databases'), {} of this database",
            STATS_FLUSH.as_secs(),
            d.xact_commit + d.xact_rollback,
            d.row_writes(),
            d.wal_bytes,
            opt(d.own_wal.map(|w| w.bytes))
        );
    }
    println!(
        "each span runs from the end of the scenario before (or the idle reading) to {} s after the scenario's last request;\n\
         it includes the counter query itself (1 commit), the instance lock's ping every 2 s and the rate-limit leases\n\
         (rate_grants: one write per lease; api_keys: last_used_at, at most once a minute per key). WAL is the server's:\n\
         other databases written meanwhile count too; own WAL = the records on this database's blocks (pg_walinspect),\n\
         without commit records (a few dozen bytes per transaction that wrote); syncs = the server's WAL flushes to disk\n\
         (pg_stat_wal.wal_sync, the WAL writer's included), one shared by the durable commits it covers.",
        STATS_FLUSH.as_secs()
    );
}

// ---------------------------------------------------------------------------------------------
// Against pgbench

/// The targets: requests/s of a scenario as a share of pgbench's tps.
const TARGETS: [(Scenario, crate::pgbench::Mode, f64); 2] = [
    (Scenario::Accounts, crate::pgbench::Mode::SelectOnly, 40.0),
    (
        Scenario::Heartbeat,
        crate::pgbench::Mode::SimpleUpdate,
        100.0,
    ),
];

struct Comparison {
    scenario: Scenario,
    keys: usize,
    /// The load generator: ours, or wrk.
    client: &'static str,
    mode: crate::pgbench::Mode,
    rps: f64,
    tps: f64,
    target_pct: f64,
}

impl Comparison {
    fn pct(&self) -> f64 {
        100.0 * self.rps / self.tps
    }

    fn met(&self) -> bool {
        self.pct() >= self.target_pct
    }

    fn json(&self) -> Value {
        json!({
            "scenario": self.scenario.id(),
            "keys": self.keys,
            "client": self.client,
            "pgbench": self.mode.flag(),
            "requests_per_second": self.rps,
            "pgbench_tps": self.tps,
            "percent_of_pgbench": self.pct(),
            "target_percent": self.target_pct,
            "met": self.met(),
        })
    }
}

/// The scenarios with a target against pgbench, ours and wrk's run (GET /accounts, 1 key).
fn compare(
    results: &[ScenarioResult],
    wrk: Option<&crate::wrk::Run>,
    pgbench: &[crate::pgbench::Run],
) -> Vec<Comparison> {
    let ours = results.iter().map(|r| (r.scenario, r.keys, "ours", r.rps));
    let by_wrk = wrk.map(|w| (Scenario::Accounts, 1, "wrk", w.rps));
    let mut out = Vec::new();
    for (scenario, keys, client, rps) in ours.chain(by_wrk) {
        for (target, mode, target_pct) in TARGETS {
            let Some(p) = pgbench.iter().find(|p| p.mode == mode) else {
                continue;
            };
            if scenario == target && p.figures.tps > 0.0 {
                out.push(Comparison {
                    scenario,
                    keys,
                    client,
                    mode,
                    rps,
                    tps: p.figures.tps,
                    target_pct,
                });
            }
        }
    }
    out
}

/// GET /accounts with `key` through wrk, the same connections and duration as the scenarios;
/// `None` (with a warning) when wrk is missing or fails.
fn measure_with_wrk(addr: &str, key: &str, opts: &Options) -> Option<crate::wrk::Run> {
    if !crate::wrk::available() {
        eprintln!(
            "warning: wrk is not installed (apt-get install --no-install-recommends wrk): GET /accounts is measured by our client only"
        );
        return None;
    }
    print!("\nrunning GET /accounts with wrk, 1 key           ");
    io::stdout().flush().ok();
    let url = format!("http://{addr}{ACCOUNTS}");
    let seconds = opts.seconds.ceil() as u64;
    match crate::wrk::get(
        &url,
        key,
        opts.concurrency,
        seconds,
        opts.warmup.ceil() as u64,
    ) {
        Ok(run) => {
            println!(
                "{} requests in {:.1} s, {} not 2xx: {:.1} req/s, p50 {:.2} ms, p90 {:.2} ms, p99 {:.2} ms, max {:.1} ms",
                run.requests,
                run.seconds,
                run.non_2xx,
                run.rps,
                run.p50_ms,
                run.p90_ms,
                run.p99_ms,
                run.max_ms
            );
            Some(run)
        }
        Err(e) => {
            eprintln!("warning: the wrk run failed: {e:#}");
            None
        }
    }
}

fn print_comparison(opts: &Options, pgbench: &[crate::pgbench::Run], c: &[Comparison]) {
    if pgbench.is_empty() {
        if opts.pgbench {
            println!("\npgbench: no figures (see the warning above)");
        }
        return;
    }
    println!(
        "\npgbench on a scratch database of the same server, {} clients, the fleetdesk server idle beside it:",
        opts.concurrency
    );
    println!(
        "{:<48} {:>10} {:>11} {:>8} {:>9} {:>17} {:>18}",
        "command",
        "tps",
        "latency ms",
        "machine",
        "postgres",
        "pgbench + other",
        "WAL B/xact (own)"
    );
    for p in pgbench {
        let wal = p.db.as_ref().map_or("n/a".into(), |d| {
            let n = p.figures.transactions.unwrap_or(0).max(1) as f64;
            format!(
                "{:.1} ({})",
                d.wal_bytes as f64 / n,
                opt(d.own_wal.map(|w| format!("{:.1}", w.bytes as f64 / n)))
            )
        });
        let pct = |f: fn(&CpuShare) -> f64| {
            p.cpu
                .as_ref()
                .map_or("n/a".into(), |c| format!("{:.0}%", f(c)))
        };
        println!(
            "{:<48} {:>10.1} {:>11} {:>8} {:>9} {:>17} {:>18}",
            p.command,
            p.figures.tps,
            opt(p.figures.latency_ms),
            pct(|c| c.machine_busy_pct),
            pct(|c| c.postgres_pct),
            pct(|c| c.other_pct),
            wal
        );
    }
    println!("\ntargets: requests/s as a share of pgbench's tps");
    for x in c {
        println!(
            "  {:>2} key(s)  {:<16} {:<5} {:>9.1} req/s = {:>6.1}% of pgbench {} ({:.1} tps); target >= {:.0}%: {}",
            x.keys,
            x.scenario.label(),
            x.client,
            x.rps,
            x.pct(),
            x.mode.flag(),
            x.tps,
            x.target_pct,
            if x.met() { "met" } else { "MISSED" }
        );
    }
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
    ) -> Request<'static> {
        api_request(&self.addr, method, path, key, idempotency_key, body)
    }
}

/// How long a client waits for an answer.
const CLIENT_TIMEOUT: Duration = Duration::from_secs(60);

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
    /// (crates/pg/src/accounts.rs) and counted by the `X-Db-Round-Trips` header, once the
    /// instance keeps the agent's answers (api/src/revisioned.rs; nothing changes accounts or
    /// cards during the benchmark): `GET /accounts` sends the kept list and reads nothing; a
    /// heartbeat is `record_heartbeat`, one INSERT .. ON CONFLICT, with the kept open task
    /// cards. A claimed request (a new Idempotency-Key) runs the same handler and then stores
    /// its result (one UPDATE), on a task of its own whose statements the header counts too; a
    /// replay runs no handler.
    fn own_statements(self) -> u32 {
        match self {
            Scenario::Accounts => 0,
            Scenario::Heartbeat => 1,
            Scenario::HeartbeatKeyed => 2,
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
    fn request(self, t: &Target, client: usize, seq: u64) -> Request<'static> {
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

/// One GET /accounts and one heartbeat must succeed before any load.
fn sanity_check(t: &Target, accounts: usize) -> anyhow::Result<()> {
    let mut c = Connection::new(&t.addr, CLIENT_TIMEOUT);
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
    let mut c = Connection::new(&t.addr, CLIENT_TIMEOUT);
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
    let mut client = Connection::new(&t.addr, CLIENT_TIMEOUT);
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
        connects: client.connects(),
        error_examples,
    }
}

struct ScenarioResult {
    scenario: Scenario,
    /// The keys the clients used.
    keys: usize,
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
    /// What the database counted from the end of the scenario before to the reports of this
    /// one's last requests.
    db: Option<DbCounters>,
}

impl ScenarioResult {
    /// Every request the clients sent, the warm-up's included: what the database counted.
    fn sent(&self) -> u64 {
        self.requests + self.warmup_requests
    }

    fn json(&self) -> Value {
        json!({
            "scenario": self.scenario.id(),
            "keys": self.keys,
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
            "database_counters": self.db.as_ref().map(|d| d.json(self.sent())),
        })
    }
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
        keys: t.keys.len(),
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
        db: None,
    })
}

// ---------------------------------------------------------------------------------------------
// The pipeline's share of the round trips

struct Overhead {
    /// GET /accounts minus its own statements (none: the instance keeps the list).
    auth_rate_limit_get: Option<u32>,
    /// POST /heartbeat minus its upsert and its open-cards read.
    auth_rate_limit_post: Option<u32>,
    /// The pipeline's statements of a heartbeat with a new Idempotency-Key minus those without
    /// one: the claim.
    idempotency_key: Option<i64>,
    /// A replay runs no handler: all of it is the pipeline.
    replay: Option<u32>,
}

impl Overhead {
    fn infer(results: &[&ScenarioResult]) -> Overhead {
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
            idempotency_key: pipeline(Scenario::HeartbeatKeyed)
                .zip(pipeline(Scenario::Heartbeat))
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
                "inferred_as": "median statements of the request minus the operation's own (GET /accounts: none, its list kept; a heartbeat: 1, the upsert, its open task cards kept)",
            },
            "idempotency_key": {
                "extra": self.idempotency_key,
                "inferred_as": "pipeline statements of POST /heartbeat with a new Idempotency-Key (minus the upsert, the open task cards and the store of the result) minus those without one: the claim",
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

fn print_report(opts: &Options, keys: usize, results: &[&ScenarioResult], o: &Overhead) {
    println!();
    let how = match opts.requests {
        Some(n) => format!("{n} requests per scenario"),
        None => format!("{} s per scenario", opts.seconds),
    };
    println!(
        "{} concurrent clients (one keep-alive connection each), {how} after {} s of warm-up; {} accounts; {} key(s)",
        opts.concurrency, opts.warmup, opts.accounts, keys
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
        "pipeline = round trips minus the operation's own statements (none for GET /accounts, whose list is kept; \
         1 for a heartbeat: the upsert, its open task cards kept;\n\
         2 with a new Idempotency-Key: the upsert and the store of the result; 0 for a replay, which runs no handler)."
    );
    println!(
        "  auth + rate limit:  GET /accounts - 0 = {}   POST /heartbeat - 1 = {}   (budget 1)",
        opt(o.auth_rate_limit_get),
        opt(o.auth_rate_limit_post)
    );
    println!(
        "  Idempotency-Key:    pipeline with key - pipeline without = {} (the claim; the store is not in the header)   (budget 1)",
        opt(o.idempotency_key)
    );
    println!(
        "  replay:             {} statement(s) in all (authentication and the claim, which finds the stored result)",
        opt(o.replay)
    );
    println!(
        "  within budget: {}",
        if o.within_budget() { "yes" } else { "NO" }
    );
}

// ---------------------------------------------------------------------------------------------
// Wire check

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
    let mut client = Connection::new(&target.addr, CLIENT_TIMEOUT);
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

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(args: &[&str]) -> anyhow::Result<Options> {
        let args: Vec<String> = args.iter().map(|a| (*a).to_owned()).collect();
        Options::parse(&args).map(|o| o.expect("not --help"))
    }

    #[test]
    fn key_counts_are_a_list_in_order_without_repeats() {
        assert_eq!(parse_key_counts("1,16").unwrap(), [1, 16]);
        assert_eq!(parse_key_counts(" 4 ").unwrap(), [4]);
        assert_eq!(parse_key_counts("16, 1,16").unwrap(), [16, 1]);
        assert!(parse_key_counts("0").is_err());
        assert!(parse_key_counts("1,").is_err());
        assert!(parse_key_counts("one").is_err());
    }

    #[test]
    fn runs_one_and_sixteen_keys_beside_pgbench_by_default() {
        let o = parse(&[]).unwrap();
        assert_eq!(o.keys, [1, 16]);
        assert_eq!(o.max_keys(), 16);
        assert!(o.pgbench && o.db_counters && o.wrk);
        let p = o.pgbench();
        assert_eq!(
            (p.clients, p.seconds, p.warmup_seconds, p.scale),
            (16, 10, 2, 10)
        );
        let o = parse(&[
            "--keys=4",
            "--no-pgbench",
            "--no-db-counters",
            "--no-wrk",
            "--requests",
            "1000",
            "--concurrency",
            "8",
        ])
        .unwrap();
        assert_eq!(o.keys, [4]);
        assert!(!o.pgbench && !o.db_counters && !o.wrk);
        assert_eq!(o.pgbench().transactions_per_client, Some(125));
        assert!(parse(&["--keys", "0"]).is_err());
        assert!(parse(&["--pgbench-scale", "0"]).is_err());
    }
}
