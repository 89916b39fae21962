//! The person's day benchmark of the real binary: `cargo xtask bench today [--help]`.
//!
//! 1. builds `fleetdesk` in release mode and creates a fresh database (dropped at the end);
//! 2. applies a tenant of two organizations, each with one agency member and 20 operator
//!    agents: `Big` whose accounts number `--accounts` (500), `Small` with `--small-accounts`
//!    (50), spread over one persona per agent (TW and JP, threads and instagram);
//! 3. starts `fleetdesk serve --expose-round-trips` and, not measured, has every agent send a
//!    heartbeat, report 5 cron jobs and a run of each (one in five failed), and publish a post
//!    on a few accounts; then writes history straight to the database: 200 older runs per job
//!    and 500 older heartbeats per agent;
//! 4. one client sends GET /api/user/v1/today as each organization's member, one request at a
//!    time, and a wire check counts what reaches PostgreSQL through the counting proxy.
//!
//! Latency p50/p99 and the `X-Db-Round-Trips` header (SQL statements per request) go to
//! standard output and, under `today`, to `target/bench/results.json`. The statements must be
//! the same for 500 and for 50 accounts.

use crate::harness::{self, Flags, ServeFlags, Server, WireCounters, excerpt, iso_utc};
use crate::http::{Connection, api_request};
use anyhow::{Context, bail};
use serde_json::{Value, json};
use std::io::{self, Write};
use std::sync::Arc;
use std::time::{Duration, Instant};

const HELP: &str = "\
cargo xtask bench today: GET /api/user/v1/today on the release binary.

Creates a database fleetdesk_today_<pid> (dropped at the end), applies two organizations with
20 operator agents each, one with --accounts accounts and one with --small-accounts, starts
`fleetdesk serve --expose-round-trips`, has every agent send a heartbeat and report 5 cron jobs
with a run each, plus 200 older runs per job and 500 older heartbeats per agent (not measured),
then measures GET /today as each organization's agency member,
one request at a time. Prints p50/p99/max latency and SQL round trips per request
(X-Db-Round-Trips), and the PostgreSQL protocol messages per request through a counting proxy;
writes `today` in target/bench/results.json.

USAGE:
    cargo xtask bench today [OPTIONS]

OPTIONS:
    --accounts N        accounts of the big organization (default 500)
    --small-accounts N  accounts of the small organization (default 50)
    --agents N          agents per organization (default 20)
    --requests N        measured requests per organization (default 300)
    --wire-requests N   sequential requests per organization in the wire check (default 10)
    --no-build          do not run cargo build; use target/release/fleetdesk as it is
    -h, --help          print this help
";

const TODAY: &str = "/api/user/v1/today";
const CLIENT_TIMEOUT: Duration = Duration::from_secs(60);
const JOBS_PER_AGENT: usize = 5;
/// History before the measured day: older runs per cron job and older heartbeats per agent, so
/// the reads of the latest run and heartbeat are measured against a table that has grown.
const HISTORY_RUNS_PER_JOB: usize = 200;
const HISTORY_HEARTBEATS_PER_AGENT: usize = 500;

/// Older runs and heartbeats, written straight to the database (not measured): every one
/// before the ones `fill` reported, so the day reads the same latest ones.
fn seed_history(db_url: &str) -> anyhow::Result<()> {
    harness::psql(
        db_url,
        &format!(
            "INSERT INTO cron_runs (job, run_id, started_at, finished_at, status, created_at, \
             updated_at) SELECT j.id, 'hist-' || n, now() - n * interval '1 hour', \
             now() - n * interval '1 hour' + interval '1 minute', \
             CASE WHEN n % 7 = 0 THEN 'failed' ELSE 'success' END, \
             now() - n * interval '1 hour', now() - n * interval '1 hour' \
             FROM cron_jobs j, generate_series(1, {HISTORY_RUNS_PER_JOB}) n"
        ),
    )?;
    harness::psql(
        db_url,
        &format!(
            "INSERT INTO agent_runs (agent_id, run_id, recorded_at, created_at) \
             SELECT a.id, 'hist-' || n, now() - n * interval '10 minutes', \
             now() - n * interval '10 minutes' \
             FROM agents a, generate_series(1, {HISTORY_HEARTBEATS_PER_AGENT}) n"
        ),
    )?;
    harness::psql(db_url, "ANALYZE cron_runs; ANALYZE agent_runs")?;
    Ok(())
}

struct Options {
    accounts: usize,
    small_accounts: usize,
    agents: usize,
    requests: usize,
    wire_requests: usize,
    build: bool,
    server_url: String,
}

impl Options {
    fn parse(args: &[String]) -> anyhow::Result<Option<Options>> {
        let mut o = Options {
            accounts: 500,
            small_accounts: 50,
            agents: 20,
            requests: 300,
            wire_requests: 10,
            build: true,
            server_url: harness::server_url(),
        };
        let mut flags = Flags::new(args);
        while let Some(flag) = flags.next_flag() {
            let flag = flag.as_str();
            match flag {
                "-h" | "--help" => return Ok(None),
                "--accounts" => o.accounts = flags.num(flag)?,
                "--small-accounts" => o.small_accounts = flags.num(flag)?,
                "--agents" => o.agents = flags.num(flag)?,
                "--requests" => o.requests = flags.num(flag)?,
                "--wire-requests" => o.wire_requests = flags.num(flag)?,
                "--no-build" => o.build = false,
                other => bail!("unknown option `{other}`; see cargo xtask bench today --help"),
            }
        }
        if o.accounts == 0 || o.small_accounts == 0 || o.agents == 0 || o.requests == 0 {
            bail!("--accounts, --small-accounts, --agents and --requests must be at least 1");
        }
        Ok(Some(o))
    }
}

/// One organization of the tenant.
struct Org {
    label: &'static str,
    accounts: usize,
    member_key: String,
    agent_keys: Vec<String>,
    codes: Vec<Vec<String>>,
}

fn organization(name: &str, prefix: &str, accounts: usize, agents: usize) -> Value {
    let per = accounts.div_ceil(agents);
    let personas: Vec<Value> = (0..agents)
        .map(|a| {
            let accs: Vec<Value> = (a * per..((a + 1) * per).min(accounts))
                .map(|i| {
                    let market = if i % 5 < 3 { "TW" } else { "JP" };
                    let (platform, letter) = if i % 4 == 3 {
                        ("instagram", 'I')
                    } else {
                        ("threads", 'T')
                    };
                    json!({"code": format!("{prefix}{market}-{letter}{i:04}"), "platform": platform,
                           "market": market, "state": "active", "daily_target": 2,
                           "publishing": "agent"})
                })
                .collect();
            json!({"name": format!("{name} Persona {a}"), "project": "bench",
                   "agent": format!("agent{a}"), "accounts": accs})
        })
        .collect();
    json!({
        "name": name,
        "members": [{"email": format!("member@{}.test", prefix.to_lowercase()), "name": "Member",
                     "role": "agency", "keys": 1}],
        "workspaces": [{
            "name": "Main",
            "projects": [{"name": "bench"}],
            "agents": (0..agents).map(|a| json!({"name": format!("agent{a}"), "role": "operator",
                                                  "keys": 1})).collect::<Vec<_>>(),
            "personas": personas,
        }],
    })
}

fn org_of(report: &Value, i: usize, label: &'static str, tenant: &Value) -> anyhow::Result<Org> {
    let org = &report["organizations"][i];
    let key = |v: &Value| v["keys"][0].as_str().map(str::to_owned).context("no key");
    let agent_keys = org["workspaces"][0]["agents"]
        .as_array()
        .context("no agents")?
        .iter()
        .map(key)
        .collect::<anyhow::Result<Vec<_>>>()?;
    let personas = tenant["organizations"][i]["workspaces"][0]["personas"]
        .as_array()
        .context("no personas")?;
    let codes = personas
        .iter()
        .map(|p| {
            p["accounts"]
                .as_array()
                .map(|a| {
                    a.iter()
                        .filter_map(|x| x["code"].as_str().map(str::to_owned))
                        .collect()
                })
                .unwrap_or_default()
        })
        .collect();
    Ok(Org {
        label,
        accounts: 0,
        member_key: key(&org["members"][0])?,
        agent_keys,
        codes,
    })
}

fn post_ok(
    client: &mut Connection,
    addr: &str,
    key: &str,
    path: &str,
    body: &Value,
) -> anyhow::Result<Value> {
    let r = client.send(&api_request(
        addr,
        "POST",
        path,
        key,
        None,
        Some(&body.to_string()),
    ))?;
    if r.status != 200 && r.status != 201 {
        bail!("POST {path} answered {}: {}", r.status, excerpt(&r.body));
    }
    Ok(serde_json::from_slice(&r.body)?)
}

/// Heartbeats, cron jobs and runs, and a published post on the first account of each agent.
fn fill(client: &mut Connection, addr: &str, org: &Org) -> anyhow::Result<()> {
    let now = iso_utc(harness::unix_millis() as i64 / 1000);
    for (a, key) in org.agent_keys.iter().enumerate() {
        post_ok(
            client,
            addr,
            key,
            "/api/agent/v1/heartbeat",
            &json!({"run_id": "bench-1"}),
        )?;
        let jobs: Vec<Value> = (0..JOBS_PER_AGENT)
            .map(|j| {
                json!({"job_id": format!("job{j}"), "name": format!("Job {j}"),
                            "schedule": if j % 2 == 0 { "0 * * * *" } else { "30 2 * * *" },
                            "timezone": "Asia/Taipei"})
            })
            .collect();
        post_ok(
            client,
            addr,
            key,
            "/api/agent/v1/cron/jobs",
            &json!({"jobs": jobs}),
        )?;
        let runs: Vec<Value> = (0..JOBS_PER_AGENT)
            .map(|j| {
                json!({"job_id": format!("job{j}"), "started_at": now,
                            "status": if (a + j) % 5 == 0 { "failed" } else { "success" }})
            })
            .collect();
        post_ok(
            client,
            addr,
            key,
            "/api/agent/v1/cron/runs",
            &json!({"runs": runs}),
        )?;
        if let Some(code) = org.codes.get(a).and_then(|c| c.first()) {
            post_ok(
                client,
                addr,
                key,
                "/api/agent/v1/posts/report",
                &json!({"posts": [{"code": code, "status": "published", "body": format!("Bench post {a}"),
                                   "platform_post_id": format!("bench-{a}-{code}"),
                                   "permalink": format!("https://example.com/{code}"),
                                   "published_at": now}]}),
            )?;
        }
    }
    Ok(())
}

struct Line {
    label: String,
    accounts: usize,
    latencies_us: Vec<u64>,
    trips: Vec<u32>,
    body_bytes: usize,
    wire_waits: Vec<u64>,
}

impl Line {
    fn ms(&self, p: f64) -> f64 {
        harness::percentile_ms(&self.latencies_us, p)
    }

    fn trips(&self) -> (u32, u32) {
        harness::min_max(&self.trips)
    }

    fn json(&self) -> Value {
        let (lo, hi) = self.trips();
        let mut waits = self.wire_waits.clone();
        waits.sort_unstable();
        json!({
            "line": self.label,
            "accounts": self.accounts,
            "requests": self.latencies_us.len(),
            "p50_ms": self.ms(0.5),
            "p99_ms": self.ms(0.99),
            "max_ms": self.ms(1.0),
            "round_trips_min_max": [lo, hi],
            "wire_waits_median": waits.get(waits.len() / 2).copied().unwrap_or(0),
            "body_bytes": self.body_bytes,
        })
    }
}

fn measure(
    client: &mut Connection,
    addr: &str,
    org: &Org,
    requests: usize,
) -> anyhow::Result<Line> {
    print!(
        "running GET /today, {} accounts, {requests} requests... ",
        org.accounts
    );
    io::stdout().flush().ok();
    let request = api_request(addr, "GET", TODAY, &org.member_key, None, None);
    for _ in 0..10 {
        client.send(&request)?;
    }
    let mut line = Line {
        label: format!("GET /today, {} ({} accounts)", org.label, org.accounts),
        accounts: org.accounts,
        latencies_us: Vec::with_capacity(requests),
        trips: Vec::new(),
        body_bytes: 0,
        wire_waits: Vec::new(),
    };
    let started = Instant::now();
    for _ in 0..requests {
        let t0 = Instant::now();
        let r = client.send(&request)?;
        line.latencies_us.push(t0.elapsed().as_micros() as u64);
        if r.status != 200 {
            bail!("GET /today answered {}: {}", r.status, excerpt(&r.body));
        }
        if let Some(t) = r.round_trips {
            line.trips.push(t);
        }
        line.body_bytes = r.body.len();
    }
    println!("{:.1} s", started.elapsed().as_secs_f64());
    Ok(line)
}

pub fn main(args: &[String]) -> anyhow::Result<()> {
    let Some(opts) = Options::parse(args)? else {
        print!("{HELP}");
        return Ok(());
    };
    let harness::Run {
        started,
        target_dir,
        bin,
        tmp,
        db,
        machine,
    } = harness::begin(
        "today",
        "person's day benchmark",
        &opts.server_url,
        opts.build,
    )?;
    let tenant = json!({"organizations": [
        organization("Big", "B", opts.accounts, opts.agents),
        organization("Small", "S", opts.small_accounts, opts.agents),
    ]});
    let report = harness::admin_apply(&bin, &db.url, &tmp.path, &tenant)?;
    let mut big = org_of(&report, 0, "Big", &tenant)?;
    big.accounts = opts.accounts;
    let mut small = org_of(&report, 1, "Small", &tenant)?;
    small.accounts = opts.small_accounts;
    println!(
        "tenant: organization Big with {} accounts, Small with {}; {} agents each",
        opts.accounts, opts.small_accounts, opts.agents
    );
    let flags = ServeFlags {
        workers: None,
        db_pool: None,
        json_log: false,
        local_webhooks: false,
        embeddings_url: None,
    };
    let server = Server::start(
        &bin,
        &db.url,
        &tmp.path,
        &flags,
        &tmp.path.join("serve.log"),
    )?;
    let mut client = Connection::new(&server.addr, CLIENT_TIMEOUT);
    let t0 = Instant::now();
    fill(&mut client, &server.addr, &big)?;
    fill(&mut client, &server.addr, &small)?;
    seed_history(&db.url)?;
    println!(
        "setup: heartbeats, {JOBS_PER_AGENT} cron jobs with a run each per agent, a published post per agent, \
         history of {HISTORY_RUNS_PER_JOB} older runs per job and {HISTORY_HEARTBEATS_PER_AGENT} older heartbeats per agent in {:.1} s (not measured)",
        t0.elapsed().as_secs_f64()
    );
    let mut lines = vec![
        measure(&mut client, &server.addr, &big, opts.requests)?,
        measure(&mut client, &server.addr, &small, opts.requests)?,
    ];
    drop(server);

    // Wire check: what reaches PostgreSQL per request.
    let counters = Arc::new(WireCounters::default());
    let proxy = harness::start_proxy(db.socket_addr()?, counters.clone())?;
    let server = Server::start(
        &bin,
        &db.url_via(&proxy),
        &tmp.path,
        &flags,
        &tmp.path.join("serve-wire.log"),
    )?;
    let mut client = Connection::new(&server.addr, CLIENT_TIMEOUT);
    for (line, org) in lines.iter_mut().zip([&big, &small]) {
        let request = api_request(&server.addr, "GET", TODAY, &org.member_key, None, None);
        for _ in 0..5 {
            client.send(&request)?;
        }
        let mut before = counters.settle();
        for _ in 0..opts.wire_requests {
            let r = client.send(&request)?;
            if r.status != 200 {
                bail!("GET /today answered {}", r.status);
            }
            let after = counters.settle();
            line.wire_waits.push(after.minus(before).waits);
            before = after;
        }
    }
    drop(server);

    println!(
        "\n{:<40} {:>9} {:>9} {:>9} {:>12} {:>11}",
        "line", "p50 ms", "p99 ms", "max ms", "round trips", "wire waits"
    );
    for l in &lines {
        let (lo, hi) = l.trips();
        let trips = if lo == hi {
            lo.to_string()
        } else {
            format!("{lo}-{hi}")
        };
        let mut w = l.wire_waits.clone();
        w.sort_unstable();
        println!(
            "{:<40} {:>9.2} {:>9.2} {:>9.2} {:>12} {:>11}",
            l.label,
            l.ms(0.5),
            l.ms(0.99),
            l.ms(1.0),
            trips,
            w.get(w.len() / 2).copied().unwrap_or(0)
        );
    }
    let same = lines[0].trips() == lines[1].trips();
    println!(
        "round trips {} with the number of accounts",
        if same { "do not grow" } else { "DIFFER" }
    );
    let elapsed = started.elapsed().as_secs_f64();
    let doc = json!({"today": {
        "measured_at": iso_utc(harness::unix_millis() as i64 / 1000),
        "machine": machine.json(),
        "options": {"accounts": opts.accounts, "small_accounts": opts.small_accounts,
                    "agents": opts.agents, "requests": opts.requests,
                    "jobs_per_agent": JOBS_PER_AGENT, "clients": 1},
        "lines": lines.iter().map(Line::json).collect::<Vec<_>>(),
        "round_trips_same_for_both": same,
        "total_seconds": elapsed,
    }});
    let out = harness::merge_results(&target_dir, doc)?;
    println!("\nwrote {}", out.display());
    println!("the today benchmark took {elapsed:.0} s (build included)");
    drop(tmp);
    drop(db);
    Ok(())
}
