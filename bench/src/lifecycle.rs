//! Post lifecycle benchmark of the real binary: `cargo xtask bench lifecycle [--help]`.
//!
//! 1. builds `fleetdesk` in release mode and creates a fresh database (dropped at the end);
//! 2. applies a tenant: an agency member with a personal key, one operator agent whose five
//!    personas hold 500 active accounts in two markets (TW and JP, threads and instagram), and
//!    a second operator agent with 50 accounts;
//! 3. starts `fleetdesk serve --expose-round-trips` and, not measured, writes drafts for the
//!    big agent's accounts (POST /api/agent/v1/drafts) and has the member approve them
//!    (POST /api/user/v1/posts/{id}/transition), several clients at once;
//! 4. report benchmark: one client sends POST /api/agent/v1/posts/report batches one after
//!    another, each a mix of items: approved posts scheduled by post_id, posts scheduled in
//!    the previous batch published by post_id, new posts created by body, posts created in
//!    the previous batch published by platform_post_id, approved posts published and matched
//!    by body. Batches of 200 items, then batches of 20 with the same mix;
//! 5. work_today benchmark: one client sends GET /api/agent/v1/work/today, for the agent with
//!    500 accounts and then for the agent with 50 (which reported posts of its own first);
//! 6. a wire check: a second server reaches PostgreSQL through the counting proxy of harness.rs,
//!    and a few sequential requests of each line show the network round trips.
//!
//! Latency p50/p99, the `X-Db-Round-Trips` header (SQL statements per request) and where the
//! CPU went go to standard output and, under `lifecycle`, to `target/bench/results.json`.

use crate::harness::{
    self, CpuShare, CpuTicks, Database, Flags, ServeFlags, Server, WireCounters, WireSnapshot,
    excerpt, iso_utc, percentile,
};
use crate::http::{Connection, Response, api_request};
use anyhow::{Context, bail};
use serde_json::{Value, json};
use std::collections::{BTreeMap, VecDeque};
use std::io::{self, Write};
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::thread;
use std::time::Instant;

const HELP: &str = "\
cargo xtask bench lifecycle: report_posts and work_today on the release binary.

Creates a database fleetdesk_lifecycle_<pid> (dropped at the end), applies a tenant with an
agency member, an operator agent with 500 accounts (five personas, TW and JP) and an operator
agent with 50, starts `fleetdesk serve --expose-round-trips`, writes and approves drafts (not
measured), then measures with one client, one request at a time:
  - POST /api/agent/v1/posts/report, batches of 200 items and of 20 items, each a mix of
    scheduled-by-post_id, published-by-post_id, new-by-body, published-by-platform_post_id and
    published-matched-by-body items;
  - GET /api/agent/v1/work/today for the agent with 500 accounts and the one with 50.
Prints p50/p99/max latency, SQL round trips per request (X-Db-Round-Trips) and CPU per request;
writes `lifecycle` in target/bench/results.json. Targets: report of 200 p50 < 50 ms,
work_today of 500 accounts p50 < 30 ms.

USAGE:
    cargo xtask bench lifecycle [OPTIONS]

OPTIONS:
    --accounts N          accounts of the big agent (default 500)
    --small-accounts N    accounts of the second agent (default 50)
    --batch N             items per report in the big line (default 200, at most 200)
    --small-batch N       items per report in the small line (default 20)
    --batches N           measured reports of --batch items (default 100)
    --small-batches N     measured reports of --small-batch items (default 100)
    --warmup-batches N    reports of --batch items sent first, not measured (default 3)
    --today-requests N    measured GET /work/today per agent (default 500)
    --setup-clients C     clients writing and approving drafts at once (default 8)
    --idempotency-key     send a fresh Idempotency-Key with every report (stores the answer)
    --history-days D      first report 2 posts per account published on each of the D days
                          before today, for both agents (not measured; default 0)
    --vacuum-analyze      VACUUM ANALYZE the database after the setup and before the work_today
                          lines, as autovacuum would (it may be off on a development server)
    --wire-requests N     sequential requests per line in the wire check (default 10)
    --no-wire-check       skip the wire check (network round trips, via a proxy)
    --workers W           fleetdesk serve --workers (default: the server's, one per core)
    --db-pool P           fleetdesk serve --db-pool (default: the server's, 16)
    --keep-db             do not drop the database at the end (to EXPLAIN its statements)
    --auto-explain MS     log the plan (EXPLAIN ANALYZE, BUFFERS) of every statement slower than
                          MS milliseconds to PostgreSQL's server log, through auto_explain set on
                          the database (needs a superuser); slows the statements it times
    --no-build            do not run cargo build; use target/release/fleetdesk as it is
    -h, --help            print this help

ENVIRONMENT:
    FLEETDESK_BENCH_SERVER_URL   PostgreSQL server to create the database on
                                 (default postgres://postgres@127.0.0.1:5432)
";

/// How long a client waits for an answer.
const CLIENT_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(60);

const DRAFTS: &str = "/api/agent/v1/drafts";
const REPORT: &str = "/api/agent/v1/posts/report";
const WORK_TODAY: &str = "/api/agent/v1/work/today";
/// The targets of the issue, for the big lines.
const TARGET_REPORT_P50_MS: f64 = 50.0;
const TARGET_TODAY_P50_MS: f64 = 30.0;
/// Personas of the big agent; its accounts are spread over them.
const PERSONAS: usize = 5;

#[derive(Debug, Clone)]
struct Options {
    accounts: usize,
    small_accounts: usize,
    batch: usize,
    small_batch: usize,
    batches: usize,
    small_batches: usize,
    warmup_batches: usize,
    today_requests: usize,
    setup_clients: usize,
    idempotency_key: bool,
    wire_requests: usize,
    wire_check: bool,
    workers: Option<usize>,
    db_pool: Option<usize>,
    keep_db: bool,
    auto_explain: Option<f64>,
    history_days: usize,
    vacuum_analyze: bool,
    build: bool,
    server_url: String,
}

impl Options {
    /// `None` when help was asked for.
    fn parse(args: &[String]) -> anyhow::Result<Option<Options>> {
        let mut o = Options {
            accounts: 500,
            small_accounts: 50,
            batch: 200,
            small_batch: 20,
            batches: 100,
            small_batches: 100,
            warmup_batches: 3,
            today_requests: 500,
            setup_clients: 8,
            idempotency_key: false,
            wire_requests: 10,
            wire_check: true,
            workers: None,
            db_pool: None,
            keep_db: false,
            auto_explain: None,
            history_days: 0,
            vacuum_analyze: false,
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
                "--batch" => o.batch = flags.num(flag)?,
                "--small-batch" => o.small_batch = flags.num(flag)?,
                "--batches" => o.batches = flags.num(flag)?,
                "--small-batches" => o.small_batches = flags.num(flag)?,
                "--warmup-batches" => o.warmup_batches = flags.num(flag)?,
                "--today-requests" => o.today_requests = flags.num(flag)?,
                "--setup-clients" => o.setup_clients = flags.num(flag)?,
                "--idempotency-key" => o.idempotency_key = true,
                "--wire-requests" => o.wire_requests = flags.num(flag)?,
                "--no-wire-check" => o.wire_check = false,
                "--workers" => o.workers = Some(flags.num(flag)?),
                "--db-pool" => o.db_pool = Some(flags.num(flag)?),
                "--keep-db" => o.keep_db = true,
                "--auto-explain" => o.auto_explain = Some(flags.num(flag)?),
                "--history-days" => o.history_days = flags.num(flag)?,
                "--vacuum-analyze" => o.vacuum_analyze = true,
                "--no-build" => o.build = false,
                other => bail!("unknown option `{other}`; see cargo xtask bench lifecycle --help"),
            }
        }
        if o.accounts == 0 || o.small_accounts == 0 || o.accounts + o.small_accounts > 10_000 {
            bail!("--accounts and --small-accounts must be at least 1, and 10000 at most together");
        }
        // The mix needs at least one item of each kind: 10% is the smallest share.
        if !(10..=200).contains(&o.batch) || !(10..=200).contains(&o.small_batch) {
            bail!("--batch and --small-batch must be between 10 and 200 (the report's limit)");
        }
        if o.batches == 0 || o.small_batches == 0 || o.today_requests == 0 {
            bail!("--batches, --small-batches and --today-requests must be at least 1");
        }
        if o.setup_clients == 0 {
            bail!("--setup-clients must be at least 1");
        }
        Ok(Some(o))
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
        "lifecycle",
        "post lifecycle benchmark",
        &opts.server_url,
        opts.build,
    )?;
    println!(
        "database: {} ({})",
        db.name,
        if opts.keep_db {
            "kept at the end: --keep-db"
        } else {
            "dropped at the end"
        }
    );

    if let Some(ms) = opts.auto_explain {
        for setting in [
            "session_preload_libraries = 'auto_explain'".to_owned(),
            format!("auto_explain.log_min_duration = '{ms}ms'"),
            "auto_explain.log_analyze = on".to_owned(),
            "auto_explain.log_buffers = on".to_owned(),
        ] {
            harness::psql(
                &opts.server_url,
                &format!("ALTER DATABASE {} SET {setting}", db.name),
            )
            .context("--auto-explain")?;
        }
        println!(
            "auto_explain: plans of statements over {ms} ms go to PostgreSQL's server log (the timings it adds slow the lines)"
        );
    }
    let tenant = Tenant::apply(&bin, &db.url, &tmp.path, &opts)?;
    println!(
        "tenant: 1 agency member; agent `big` with {} active accounts over {PERSONAS} personas, agent `small` with {}; markets TW and JP, threads and instagram",
        opts.accounts, opts.small_accounts
    );
    let server = Server::start(
        &bin,
        &db.url,
        &tmp.path,
        &opts.serve_flags(),
        &tmp.path.join("serve.log"),
    )?;
    let pid = server.child.id();
    println!(
        "server: fleetdesk listening on http://{} (pid {pid})",
        server.addr
    );
    let tag = std::process::id().to_string();
    let mut big = Workload::new(
        "big",
        tenant.big_key.clone(),
        tenant.big_codes.clone(),
        &tag,
    );
    let mut small = Workload::new(
        "small",
        tenant.small_key.clone(),
        tenant.small_codes.clone(),
        &tag,
    );

    // Setup, not measured: approved posts for every report the big agent will send.
    let mix = Mix::of(opts.batch);
    let small_mix = Mix::of(opts.small_batch);
    let wire_batches = if opts.wire_check {
        opts.wire_requests + 1
    } else {
        0
    };
    let needed = (opts.warmup_batches + opts.batches + wire_batches) * mix.approved_per_batch()
        + (opts.small_batches + wire_batches) * small_mix.approved_per_batch();
    let setup_started = Instant::now();
    let approved = approve_drafts(&server.addr, &tenant, &big, needed, opts.setup_clients)?;
    println!(
        "setup: {} drafts written and approved by the member in {:.1} s ({} clients; not measured)",
        approved.len(),
        setup_started.elapsed().as_secs_f64(),
        opts.setup_clients
    );
    big.posts_made += approved.len();
    big.approved.extend(approved);

    let mut client = Connection::new(&server.addr, CLIENT_TIMEOUT);
    if opts.history_days > 0 {
        let history_started = Instant::now();
        let mut sent = 0;
        for w in [&mut big, &mut small] {
            for (body, kinds) in w.history(opts.history_days, 2, opts.batch) {
                check_report(
                    &w.send_report(&mut client, &server.addr, &body, None)?.0,
                    &kinds,
                )?;
                sent += kinds.len();
            }
        }
        println!(
            "history: {sent} posts published over the {} days before today, 2 per account and day, in {:.1} s (not measured)",
            opts.history_days,
            history_started.elapsed().as_secs_f64()
        );
    }
    let vacuum = |when: &str| -> anyhow::Result<()> {
        if opts.vacuum_analyze {
            let t0 = Instant::now();
            harness::psql(&db.url, "VACUUM ANALYZE")?;
            println!(
                "VACUUM ANALYZE {when} in {:.1} s",
                t0.elapsed().as_secs_f64()
            );
        }
        Ok(())
    };
    vacuum("after the setup")?;
    print!(
        "warm-up: {} report(s) of {} items... ",
        opts.warmup_batches, opts.batch
    );
    io::stdout().flush().ok();
    for _ in 0..opts.warmup_batches {
        let (body, kinds) = big.batch(&mix);
        check_report(
            &big.send_report(&mut client, &server.addr, &body, None)?.0,
            &kinds,
        )?;
    }
    println!("done");

    let mut lines = Vec::new();
    let idem = opts.idempotency_key.then_some(&tag);
    let target = Target {
        addr: &server.addr,
        pid,
        db: &db.name,
    };
    lines.push(report_line(
        &mut client,
        &target,
        &mut big,
        &mix,
        opts.batches,
        idem,
    )?);
    lines.push(report_line(
        &mut client,
        &target,
        &mut big,
        &small_mix,
        opts.small_batches,
        idem,
    )?);

    // The small agent's posts, so that its day has something to count: about as many per
    // account as the big agent has. Not measured.
    let per_account = big.posts_made.div_ceil(opts.accounts);
    let fill = (per_account * opts.small_accounts)
        .div_ceil(opts.batch)
        .max(1);
    for _ in 0..fill {
        let (body, kinds) = small.batch(&mix);
        check_report(
            &small.send_report(&mut client, &server.addr, &body, None)?.0,
            &kinds,
        )?;
    }
    println!(
        "posts of today and in flight: the big agent {} ({per_account} per account), the small agent {} (reported in {fill} batches); before today: {} and {}",
        big.posts_made, small.posts_made, big.posts_made_history, small.posts_made_history
    );

    vacuum("after the reports")?;
    let big_day = check_day(&mut client, &server.addr, &big)?;
    let small_day = check_day(&mut client, &server.addr, &small)?;
    lines.push(today_line(&mut client, &target, &big, opts.today_requests)?);
    lines.push(today_line(
        &mut client,
        &target,
        &small,
        opts.today_requests,
    )?);
    drop(server);

    let wire = if opts.wire_check {
        match wire_check(
            &bin,
            &db,
            &tmp.path,
            &opts,
            &mut big,
            &small,
            [&mix, &small_mix],
        ) {
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
    print_report(&opts, &lines, &[&big_day, &small_day], wire.as_deref());
    let verdict = Verdict::of(&lines);
    verdict.print();

    let doc = json!({
        "lifecycle": {
            "measured_at": iso_utc(harness::unix_millis() as i64 / 1000),
            "machine": machine.json(),
            "options": {
                "accounts": opts.accounts,
                "small_accounts": opts.small_accounts,
                "personas": PERSONAS,
                "markets": ["TW", "JP"],
                "batch": opts.batch,
                "small_batch": opts.small_batch,
                "batches": opts.batches,
                "small_batches": opts.small_batches,
                "warmup_batches": opts.warmup_batches,
                "today_requests": opts.today_requests,
                "idempotency_key": opts.idempotency_key,
                "auto_explain_ms": opts.auto_explain,
                "history_days": opts.history_days,
                "vacuum_analyze": opts.vacuum_analyze,
                "workers": opts.workers,
                "db_pool": opts.db_pool,
                "clients": 1,
            },
            "mix": {
                "big": mix.json(),
                "small": small_mix.json(),
            },
            "days": {"big": big_day.json(), "small": small_day.json()},
            "posts": {
                "big": {"today_and_in_flight": big.posts_made, "before_today": big.posts_made_history},
                "small": {"today_and_in_flight": small.posts_made, "before_today": small.posts_made_history},
            },
            "lines": lines.iter().map(LineResult::json).collect::<Vec<_>>(),
            "wire_check": wire.as_ref().map(|w| w.iter().map(WireLine::json).collect::<Vec<_>>()),
            "targets": verdict.json(),
            "total_seconds": elapsed,
        }
    });
    let out = harness::merge_results(&target_dir, doc)?;
    println!("\nwrote {}", out.display());
    println!("the lifecycle benchmark took {elapsed:.0} s (build included)");
    drop(tmp);
    if opts.keep_db {
        println!(
            "kept database {} ({}); drop it with: psql {} -c 'DROP DATABASE {} WITH (FORCE)'",
            db.name, db.url, opts.server_url, db.name
        );
        std::mem::forget(db);
    }
    Ok(())
}

// ---------------------------------------------------------------------------------------------
// Tenant

struct Tenant {
    big_key: String,
    big_codes: Vec<String>,
    small_key: String,
    small_codes: Vec<String>,
    member_key: String,
}

/// The i-th account of the tenant: its code, market and platform. Three in five are in TW, two
/// in JP; one in four is on instagram.
fn account(i: usize) -> (String, &'static str, &'static str) {
    let market = if i % 5 < 3 { "TW" } else { "JP" };
    let (platform, letter) = if i % 4 == 3 {
        ("instagram", 'I')
    } else {
        ("threads", 'T')
    };
    (format!("{market}-{letter}{i:03}"), market, platform)
}

fn accounts_json(range: std::ops::Range<usize>) -> (Vec<Value>, Vec<String>) {
    let mut codes = Vec::new();
    let accounts = range
        .map(|i| {
            let (code, market, platform) = account(i);
            codes.push(code.clone());
            json!({
                "code": code,
                "platform": platform,
                "market": market,
                "state": "active",
                "daily_target": 2,
                "handle": format!("@bench.{}", code.to_ascii_lowercase()),
                "publishing": "agent",
            })
        })
        .collect();
    (accounts, codes)
}

impl Tenant {
    fn apply(bin: &Path, url: &str, dir: &Path, opts: &Options) -> anyhow::Result<Tenant> {
        let mut big_codes = Vec::new();
        let mut personas = Vec::new();
        let per = opts.accounts.div_ceil(PERSONAS);
        for p in 0..PERSONAS {
            let range = (p * per).min(opts.accounts)..((p + 1) * per).min(opts.accounts);
            if range.is_empty() {
                continue;
            }
            let (accounts, codes) = accounts_json(range);
            big_codes.extend(codes);
            personas.push(json!({
                "name": format!("Bench Persona {}", p + 1),
                "project": "bench",
                "agent": "big",
                "accounts": accounts,
            }));
        }
        let (accounts, small_codes) =
            accounts_json(opts.accounts..opts.accounts + opts.small_accounts);
        personas.push(json!({
            "name": "Bench Small Persona",
            "project": "bench",
            "agent": "small",
            "accounts": accounts,
        }));
        let tenant = json!({
            "organizations": [{
                "name": "Bench Agency",
                "members": [
                    {"email": "reviewer@bench.test", "name": "Rita Reviewer", "role": "agency", "keys": 1},
                ],
                "workspaces": [{
                    "name": "Bench",
                    "client_review": false,
                    "projects": [{"name": "bench"}],
                    "agents": [
                        {"name": "big", "role": "operator", "keys": 1},
                        {"name": "small", "role": "operator", "keys": 1},
                    ],
                    "personas": personas,
                }],
            }],
        });
        let report = harness::admin_apply(bin, url, dir, &tenant)?;
        let first_key = |v: &Value, what: &str| {
            v["keys"][0]
                .as_str()
                .map(str::to_owned)
                .with_context(|| format!("no key for {what} in the apply report"))
        };
        let org = &report["organizations"][0];
        let agents = &org["workspaces"][0]["agents"];
        let agent_key = |name: &str| {
            agents
                .as_array()
                .and_then(|a| a.iter().find(|x| x["name"] == name))
                .with_context(|| format!("no agent {name} in the apply report"))
                .and_then(|a| first_key(a, name))
        };
        Ok(Tenant {
            big_key: agent_key("big")?,
            small_key: agent_key("small")?,
            member_key: first_key(&org["members"][0], "the member")?,
            big_codes,
            small_codes,
        })
    }
}

// ---------------------------------------------------------------------------------------------
// Setup: approved posts

/// An approved post of the big agent.
#[derive(Debug, Clone)]
struct Approved {
    code: String,
    id: String,
    body: String,
}

const SENTENCES: &[&str] = &[
    "Morning coffee on the balcony before the rain comes in, and the street is still quiet.",
    "Tried the new serum for a week now: my skin feels calmer, although the smell is strong.",
    "Momo found the sunny spot on the sofa again and refuses to share it with anyone today.",
    "Lunch at the little noodle place near the station, the queue was worth every minute.",
    "Packing for the weekend trip and, as always, the shoes take more room than the clothes.",
    "Evening walk by the river; the lights on the bridge make everything look like a film.",
];

/// A post body of about 200-250 characters, unique by `n`.
fn post_body(tag: &str, n: usize, code: &str) -> String {
    let a = SENTENCES[n % SENTENCES.len()];
    let b = SENTENCES[(n / SENTENCES.len() + 1) % SENTENCES.len()];
    format!("{a} {b} ({code} note {tag}-{n})")
}

/// Writes `count` drafts over the agent's accounts and has the member approve each, with
/// `clients` clients at once. Returns them in account order.
fn approve_drafts(
    addr: &str,
    tenant: &Tenant,
    w: &Workload,
    count: usize,
    clients: usize,
) -> anyhow::Result<Vec<Approved>> {
    let next = Arc::new(AtomicUsize::new(0));
    let done = Arc::new(AtomicUsize::new(0));
    let handles: Vec<_> = (0..clients)
        .map(|_| {
            let (next, done) = (next.clone(), done.clone());
            let addr = addr.to_owned();
            let (agent_key, member_key) = (w.key.clone(), tenant.member_key.clone());
            let (codes, tag) = (w.codes.clone(), w.tag.clone());
            thread::spawn(move || -> anyhow::Result<Vec<(usize, Approved)>> {
                let mut c = Connection::new(&addr, CLIENT_TIMEOUT);
                let mut out = Vec::new();
                loop {
                    let n = next.fetch_add(1, Ordering::Relaxed);
                    if n >= count {
                        return Ok(out);
                    }
                    let code = &codes[n % codes.len()];
                    let body = post_body(&tag, n, code);
                    let draft = json!({"code": code, "body": body, "topic": "daily life"});
                    let r = c.send(&api_request(
                        &addr,
                        "POST",
                        DRAFTS,
                        &agent_key,
                        None,
                        Some(&draft.to_string()),
                    ))?;
                    let v = ok_json(&r, "POST /drafts")?;
                    let id = v["draft"]["id"]
                        .as_str()
                        .context("POST /drafts answered no draft id")?
                        .to_owned();
                    let r = c.send(&api_request(
                        &addr,
                        "POST",
                        &format!("/api/user/v1/posts/{id}/transition"),
                        &member_key,
                        None,
                        Some(r#"{"to":"approved"}"#),
                    ))?;
                    let v = ok_json(&r, "POST /posts/{id}/transition")?;
                    if v["post"]["status"] != "approved" {
                        bail!("the approval left the post {}", v["post"]["status"]);
                    }
                    out.push((
                        n,
                        Approved {
                            code: code.clone(),
                            id,
                            body,
                        },
                    ));
                    let d = done.fetch_add(1, Ordering::Relaxed) + 1;
                    if d % 500 == 0 {
                        println!("setup: {d}/{count} drafts approved");
                    }
                }
            })
        })
        .collect();
    let mut all = Vec::with_capacity(count);
    for h in handles {
        all.extend(
            h.join()
                .map_err(|_| anyhow::anyhow!("a setup thread panicked"))??,
        );
    }
    all.sort_by_key(|(n, _)| *n);
    Ok(all.into_iter().map(|(_, a)| a).collect())
}

fn ok_json(r: &Response, what: &str) -> anyhow::Result<Value> {
    if !(200..300).contains(&r.status) {
        bail!("{what} answered {}: {}", r.status, excerpt(&r.body));
    }
    serde_json::from_slice(&r.body).with_context(|| format!("{what}: not JSON"))
}

// ---------------------------------------------------------------------------------------------
// Report batches

/// How many items of each kind a batch holds.
#[derive(Debug, Clone, Copy)]
struct Mix {
    /// Approved posts reported scheduled with their post_id (and the tool's own id).
    schedule: usize,
    /// Posts scheduled by an earlier batch, reported published with their post_id.
    publish_by_id: usize,
    /// New posts, scheduled, known by body only (plus the platform id they will keep).
    new_by_body: usize,
    /// Posts created by an earlier batch, reported published by platform_post_id alone.
    publish_by_platform_id: usize,
    /// Approved posts reported published without post_id: matched by account and body.
    publish_by_body: usize,
}

impl Mix {
    /// 25% / 25% / 20% / 20% / 10% of `n`.
    fn of(n: usize) -> Mix {
        let schedule = n / 4;
        let publish_by_id = n / 4;
        let new_by_body = n / 5;
        let publish_by_platform_id = n / 5;
        Mix {
            schedule,
            publish_by_id,
            new_by_body,
            publish_by_platform_id,
            publish_by_body: n - schedule - publish_by_id - new_by_body - publish_by_platform_id,
        }
    }

    fn approved_per_batch(&self) -> usize {
        self.schedule + self.publish_by_body
    }

    fn total(&self) -> usize {
        self.schedule
            + self.publish_by_id
            + self.new_by_body
            + self.publish_by_platform_id
            + self.publish_by_body
    }

    fn json(&self) -> Value {
        json!({
            "items": self.total(),
            "schedule_by_post_id": self.schedule,
            "publish_by_post_id": self.publish_by_id,
            "new_by_body": self.new_by_body,
            "publish_by_platform_post_id": self.publish_by_platform_id,
            "publish_matched_by_body": self.publish_by_body,
        })
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Kind {
    Schedule,
    PublishById,
    NewByBody,
    PublishByPlatformId,
    PublishByBody,
    /// A post published days ago, reported once (history, not measured).
    History,
}

impl Kind {
    fn id(self) -> &'static str {
        match self {
            Kind::Schedule => "schedule_by_post_id",
            Kind::PublishById => "publish_by_post_id",
            Kind::NewByBody => "new_by_body",
            Kind::PublishByPlatformId => "publish_by_platform_post_id",
            Kind::PublishByBody => "publish_matched_by_body",
            Kind::History => "history",
        }
    }

    /// The answer an item of this kind must get: action and matched_by.
    fn expected(self) -> (&'static str, Option<&'static str>) {
        match self {
            Kind::Schedule | Kind::PublishById => ("updated", Some("post_id")),
            Kind::NewByBody => ("inserted", None),
            Kind::PublishByPlatformId => ("updated", Some("platform_post_id")),
            Kind::PublishByBody => ("updated", Some("body")),
            Kind::History => ("inserted", None),
        }
    }
}

/// One agent's posts as the benchmark drives them through their lifecycle.
struct Workload {
    name: &'static str,
    key: String,
    codes: Vec<String>,
    tag: String,
    approved: VecDeque<Approved>,
    /// (code, post id) scheduled by post_id, waiting to be published.
    scheduled: VecDeque<(String, String)>,
    /// (code, platform id) created by a report, waiting to be published.
    created: VecDeque<(String, String)>,
    /// Counter for new bodies and platform ids.
    serial: usize,
    /// Round robin over the accounts for new posts.
    next_account: usize,
    /// Posts that exist for this agent: approved drafts and report-created posts.
    posts_made: usize,
    /// Posts published before today.
    posts_made_history: usize,
}

/// A batch's items with the kind of each, in order.
type Batch = (Value, Vec<Kind>);

impl Workload {
    fn new(name: &'static str, key: String, codes: Vec<String>, tag: &str) -> Workload {
        Workload {
            name,
            key,
            codes,
            tag: tag.to_owned(),
            approved: VecDeque::new(),
            scheduled: VecDeque::new(),
            created: VecDeque::new(),
            serial: 0,
            next_account: 0,
            posts_made: 0,
            posts_made_history: 0,
        }
    }

    /// Wall clock in ISO UTC, `offset_s` from now.
    fn at(offset_s: i64) -> String {
        iso_utc(harness::unix_millis() as i64 / 1000 + offset_s)
    }

    fn permalink(code: &str, platform_id: &str) -> String {
        format!(
            "https://www.threads.net/@bench.{}/post/{platform_id}",
            code.to_ascii_lowercase()
        )
    }

    fn new_item(&mut self) -> (Value, Kind) {
        let code = self.codes[self.next_account % self.codes.len()].clone();
        self.next_account += 1;
        self.serial += 1;
        let n = self.serial;
        let platform_id = format!("ext-{}-{}-{n}", self.tag, self.name);
        let item = json!({
            "code": code,
            "status": "scheduled",
            "scheduled_for": Self::at(1800),
            "platform_post_id": platform_id,
            "body": post_body(&self.tag, 1_000_000 + n, &code),
            "topic": "daily life",
            "has_media": false,
        });
        self.created.push_back((code, platform_id));
        self.posts_made += 1;
        (item, Kind::NewByBody)
    }

    /// The next batch of `mix`: an item whose pool is empty (the first batches, the small
    /// agent without approved posts) becomes a new post.
    fn batch(&mut self, mix: &Mix) -> Batch {
        // Published items take what earlier batches left, before this batch adds to the pools.
        let mut to_publish: Vec<(String, String)> = Vec::new();
        for _ in 0..mix.publish_by_id {
            match self.scheduled.pop_front() {
                Some(p) => to_publish.push(p),
                None => break,
            }
        }
        let mut by_platform: Vec<(String, String)> = Vec::new();
        for _ in 0..mix.publish_by_platform_id {
            match self.created.pop_front() {
                Some(p) => by_platform.push(p),
                None => break,
            }
        }
        let mut items = Vec::with_capacity(mix.total());
        let mut kinds = Vec::with_capacity(mix.total());
        let mut push = |(v, k): (Value, Kind)| {
            items.push(v);
            kinds.push(k);
        };
        for _ in 0..mix.schedule {
            match self.approved.pop_front() {
                Some(a) => {
                    self.serial += 1;
                    push((
                        json!({
                            "code": a.code,
                            "status": "scheduled",
                            "post_id": a.id,
                            "scheduled_for": Self::at(1800),
                            "platform_post_id": format!("tool-{}-{}", self.tag, self.serial),
                        }),
                        Kind::Schedule,
                    ));
                    self.scheduled.push_back((a.code, a.id));
                }
                None => push(self.new_item()),
            }
        }
        let published = to_publish.len();
        for (code, id) in to_publish {
            self.serial += 1;
            let platform_id = format!("thr-{}-{}", self.tag, self.serial);
            push((
                json!({
                    "code": code,
                    "status": "published",
                    "post_id": id,
                    "platform_post_id": platform_id,
                    "permalink": Self::permalink(&code, &platform_id),
                }),
                Kind::PublishById,
            ));
        }
        for _ in published..mix.publish_by_id {
            push(self.new_item());
        }
        for _ in 0..mix.new_by_body {
            push(self.new_item());
        }
        let by_platform_len = by_platform.len();
        for (code, platform_id) in by_platform {
            push((
                json!({
                    "code": code,
                    "status": "published",
                    "platform_post_id": platform_id,
                    "permalink": Self::permalink(&code, &platform_id),
                }),
                Kind::PublishByPlatformId,
            ));
        }
        for _ in by_platform_len..mix.publish_by_platform_id {
            push(self.new_item());
        }
        for _ in 0..mix.publish_by_body {
            match self.approved.pop_front() {
                Some(a) => {
                    self.serial += 1;
                    let platform_id = format!("thr-{}-{}", self.tag, self.serial);
                    // Spacing differs from the draft: matching collapses whitespace.
                    push((
                        json!({
                            "code": a.code,
                            "status": "published",
                            "body": format!("  {}  ", a.body.replacen(' ', "   ", 3)),
                            "platform_post_id": platform_id,
                            "permalink": Self::permalink(&a.code, &platform_id),
                        }),
                        Kind::PublishByBody,
                    ));
                }
                None => push(self.new_item()),
            }
        }
        (json!({ "posts": items }), kinds)
    }

    /// Reports of `per_day` posts per account published on each of the `days` days before
    /// today, `batch` items each.
    fn history(&mut self, days: usize, per_day: usize, batch: usize) -> Vec<Batch> {
        let now = harness::unix_millis() as i64 / 1000;
        let mut items = Vec::new();
        for d in 1..=days as i64 {
            for code in &self.codes {
                for k in 0..per_day as i64 {
                    self.serial += 1;
                    let n = self.serial;
                    let platform_id = format!("hist-{}-{}-{n}", self.tag, self.name);
                    items.push(json!({
                        "code": code,
                        "status": "published",
                        "published_at": iso_utc(now - d * 86_400 + k * 3600),
                        "platform_post_id": platform_id,
                        "permalink": Self::permalink(code, &platform_id),
                        "body": post_body(&self.tag, 2_000_000 + n, code),
                        "topic": "daily life",
                    }));
                }
            }
        }
        self.posts_made_history += items.len();
        items
            .chunks(batch)
            .map(|c| (json!({ "posts": c }), vec![Kind::History; c.len()]))
            .collect()
    }

    /// Sends a report and checks every item got the answer its kind expects.
    fn send_report(
        &self,
        client: &mut Connection,
        addr: &str,
        body: &Value,
        idempotency_key: Option<&str>,
    ) -> anyhow::Result<(Response, u64)> {
        let request = api_request(
            addr,
            "POST",
            REPORT,
            &self.key,
            idempotency_key,
            Some(&body.to_string()),
        );
        let t0 = Instant::now();
        let r = client.send(&request)?;
        let micros = t0.elapsed().as_micros() as u64;
        Ok((r, micros))
    }
}

/// Checks a report's answer item by item.
fn check_report(r: &Response, kinds: &[Kind]) -> anyhow::Result<()> {
    let v = ok_json(r, "POST /posts/report")?;
    let results = v["results"]
        .as_array()
        .context("the report answered no results")?;
    if results.len() != kinds.len() {
        bail!(
            "the report answered {} results for {} items",
            results.len(),
            kinds.len()
        );
    }
    for (res, kind) in results.iter().zip(kinds) {
        let (action, matched) = kind.expected();
        let got_matched = res["matched_by"].as_str();
        if res["ok"] != true || res["action"] != action || got_matched != matched {
            bail!(
                "a {} item was answered {} (expected action {action}, matched_by {})",
                kind.id(),
                res,
                matched.unwrap_or("null")
            );
        }
    }
    Ok(())
}

// ---------------------------------------------------------------------------------------------
// Measured lines

struct LineResult {
    id: String,
    label: String,
    requests: usize,
    latencies_us: Vec<u64>,
    trips: Vec<u32>,
    body_bytes_in: f64,
    body_bytes_out: f64,
    /// Items of each kind over the measured requests (reports only).
    kinds: BTreeMap<&'static str, usize>,
    cpu: Option<Cpu>,
    load_after: String,
    seconds: f64,
}

impl LineResult {
    fn ms(&self, p: f64) -> f64 {
        harness::percentile_ms(&self.latencies_us, p)
    }

    /// The p50 of each tenth of the line, in order: a drift (the table grows) or a disturbance
    /// (other work on the machine) shows here.
    fn p50_by_tenth(&self) -> Vec<f64> {
        let n = self.latencies_us.len();
        (0..10)
            .filter_map(|i| {
                let mut part = self.latencies_us[i * n / 10..(i + 1) * n / 10].to_vec();
                part.sort_unstable();
                (!part.is_empty()).then(|| percentile(&part, 0.5) as f64 / 1000.0)
            })
            .collect()
    }

    fn max_ms(&self) -> f64 {
        self.latencies_us.iter().copied().max().unwrap_or(0) as f64 / 1000.0
    }

    fn mean_ms(&self) -> f64 {
        self.latencies_us.iter().sum::<u64>() as f64 / self.requests.max(1) as f64 / 1000.0
    }

    fn trips(&self) -> (u32, u32, u32) {
        let mut t = self.trips.clone();
        t.sort_unstable();
        (
            t.first().copied().unwrap_or(0),
            t.get(t.len() / 2).copied().unwrap_or(0),
            t.last().copied().unwrap_or(0),
        )
    }

    fn json(&self) -> Value {
        let (lo, med, hi) = self.trips();
        json!({
            "line": self.id,
            "label": self.label,
            "requests": self.requests,
            "seconds": self.seconds,
            "latency_ms": {
                "p50": self.ms(0.50),
                "p99": self.ms(0.99),
                "max": self.max_ms(),
                "mean": self.mean_ms(),
            },
            "round_trips": {"min": lo, "median": med, "max": hi},
            "p50_ms_by_tenth": self.p50_by_tenth(),
            "latencies_ms": self.latencies_us.iter().map(|&u| (u as f64 / 10.0).round() / 100.0).collect::<Vec<_>>(),
            "responses_without_round_trips": self.requests - self.trips.len(),
            "mean_request_body_bytes": self.body_bytes_in,
            "mean_response_body_bytes": self.body_bytes_out,
            "items": (!self.kinds.is_empty()).then(|| json!(self.kinds)),
            "cpu_percent_of_all_cores": self.cpu.map(|c| json!({
                "machine_busy": c.share.machine_busy_pct,
                "server": c.share.server_pct,
                "client": c.share.client_pct,
                "database_backends": c.db_pct,
                "all_postgres": c.share.postgres_pct,
                "noise": c.noise_pct,
            })),
            "server_cpu_ms_per_request": self.cpu.map(|c| c.share.server_us_per_request / 1000.0),
            "database_backends_cpu_ms_per_request": self.cpu.map(|c| c.db_ms_per_request),
            "load_average_after": self.load_after,
        })
    }
}

fn load_average() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .ok()
        .and_then(|l| l.split_whitespace().next().map(str::to_owned))
        .unwrap_or_else(|| "unknown".into())
}

/// Where the CPU went while a line ran.
#[derive(Debug, Clone, Copy)]
struct Cpu {
    share: CpuShare,
    /// The PostgreSQL backends of the benchmark's database, in % of all cores and per request.
    db_pct: f64,
    db_ms_per_request: f64,
    /// Busy time outside the server, this process and the database's backends, in % of all
    /// cores: other work on the machine, other databases' backends included.
    noise_pct: f64,
}

/// CPU counters at the start of a line.
struct Meter {
    ticks: Option<CpuTicks>,
    backends: BTreeMap<String, u64>,
    started: Instant,
}

impl Meter {
    fn start(server_pid: u32, db: &str) -> Meter {
        Meter {
            ticks: CpuTicks::read(server_pid),
            backends: backend_ticks(db),
            started: Instant::now(),
        }
    }

    fn stop(self, server_pid: u32, db: &str, requests: usize) -> Option<Cpu> {
        let share = self
            .ticks
            .zip(CpuTicks::read(server_pid))
            .map(|(a, b)| b.share_since(&a, requests as u64))?;
        // Backends that exited during the line are missed; those started are counted whole.
        let db_ticks: u64 = backend_ticks(db)
            .iter()
            .map(|(pid, t)| t.saturating_sub(self.backends.get(pid).copied().unwrap_or(0)))
            .sum();
        let tck = harness::clock_ticks_per_second();
        let cores = thread::available_parallelism().map_or(1, |n| n.get()) as f64;
        let wall = self.started.elapsed().as_secs_f64().max(1e-3);
        let db_pct = 100.0 * db_ticks as f64 / tck / (wall * cores);
        Some(Cpu {
            share,
            db_pct,
            db_ms_per_request: db_ticks as f64 * 1000.0 / tck / requests.max(1) as f64,
            noise_pct: (share.machine_busy_pct - share.server_pct - share.client_pct - db_pct)
                .max(0.0),
        })
    }
}

/// CPU ticks of the PostgreSQL backends connected to database `db`, by pid: their process
/// title names the database.
fn backend_ticks(db: &str) -> BTreeMap<String, u64> {
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return BTreeMap::new();
    };
    let needle = format!(" {db} ");
    dir.filter_map(Result::ok)
        .filter_map(|e| e.file_name().into_string().ok())
        .filter(|pid| pid.bytes().all(|b| b.is_ascii_digit()))
        .filter(|pid| {
            std::fs::read(format!("/proc/{pid}/cmdline")).is_ok_and(|c| {
                let title = String::from_utf8_lossy(&c).replace('\0', " ");
                title.starts_with("postgres:") && title.contains(&needle)
            })
        })
        .filter_map(|pid| CpuTicks::process(&pid).map(|t| (pid, t)))
        .collect()
}

/// The running server, for the measured lines.
struct Target<'a> {
    addr: &'a str,
    pid: u32,
    db: &'a str,
}

/// `batches` reports of `mix`, one after another on one connection.
fn report_line(
    client: &mut Connection,
    t: &Target<'_>,
    w: &mut Workload,
    mix: &Mix,
    batches: usize,
    idempotency_tag: Option<&String>,
) -> anyhow::Result<LineResult> {
    let n = mix.total();
    print!("running POST /posts/report, {batches} reports of {n} items... ");
    io::stdout().flush().ok();
    let mut latencies = Vec::with_capacity(batches);
    let mut trips = Vec::with_capacity(batches);
    let mut kinds_count: BTreeMap<&'static str, usize> = BTreeMap::new();
    let (mut bytes_in, mut bytes_out) = (0usize, 0usize);
    let started = Instant::now();
    let meter = Meter::start(t.pid, t.db);
    for i in 0..batches {
        let (body, kinds) = w.batch(mix);
        for k in &kinds {
            *kinds_count.entry(k.id()).or_default() += 1;
        }
        let key = idempotency_tag.map(|t| format!("lifecycle-{t}-{n}-{i}"));
        let text_len = body.to_string().len();
        let (r, micros) = w.send_report(client, t.addr, &body, key.as_deref())?;
        check_report(&r, &kinds)?;
        latencies.push(micros);
        if let Some(t) = r.round_trips {
            trips.push(t);
        }
        bytes_in += text_len;
        bytes_out += r.body.len();
    }
    let cpu = meter.stop(t.pid, t.db, batches);
    let seconds = started.elapsed().as_secs_f64();
    println!("{seconds:.1} s");
    if kinds_count.len() < 5 {
        println!("note: the mix lacked some kinds (pools ran dry): {kinds_count:?}");
    }
    Ok(LineResult {
        id: format!("report_{n}"),
        label: format!("POST /posts/report, {n} items"),
        requests: batches,
        latencies_us: latencies,
        trips,
        body_bytes_in: bytes_in as f64 / batches as f64,
        body_bytes_out: bytes_out as f64 / batches as f64,
        kinds: kinds_count,
        cpu,
        load_after: load_average(),
        seconds,
    })
}

/// What GET /work/today says for an agent once the reports are in.
struct Day {
    agent: &'static str,
    accounts: usize,
    expected: i64,
    covered: i64,
    missing_accounts: i64,
    dates: Vec<String>,
    body_bytes: usize,
}

impl Day {
    fn json(&self) -> Value {
        json!({
            "agent": self.agent,
            "accounts": self.accounts,
            "expected": self.expected,
            "covered": self.covered,
            "missing_accounts": self.missing_accounts,
            "dates": self.dates,
            "body_bytes": self.body_bytes,
        })
    }
}

fn check_day(client: &mut Connection, addr: &str, w: &Workload) -> anyhow::Result<Day> {
    let r = client.send(&api_request(addr, "GET", WORK_TODAY, &w.key, None, None))?;
    let v = ok_json(&r, "GET /work/today")?;
    let day = Day {
        agent: w.name,
        accounts: w.codes.len(),
        expected: v["summary"]["expected"].as_i64().unwrap_or(-1),
        covered: v["summary"]["covered"].as_i64().unwrap_or(-1),
        missing_accounts: v["summary"]["missing_accounts"].as_i64().unwrap_or(-1),
        dates: v["dates"]
            .as_array()
            .map(|d| {
                d.iter()
                    .map(|x| {
                        format!(
                            "{} {}",
                            x["market"].as_str().unwrap_or("?"),
                            x["date"].as_str().unwrap_or("?")
                        )
                    })
                    .collect()
            })
            .unwrap_or_default(),
        body_bytes: r.body.len(),
    };
    if day.expected != 2 * w.codes.len() as i64 {
        bail!(
            "GET /work/today of agent {} expects {} posts, not 2 for each of its {} accounts",
            w.name,
            day.expected,
            w.codes.len()
        );
    }
    if day.covered <= 0 {
        bail!(
            "GET /work/today of agent {} counts no post for today: {}",
            w.name,
            excerpt(&r.body)
        );
    }
    Ok(day)
}

fn today_line(
    client: &mut Connection,
    t: &Target<'_>,
    w: &Workload,
    requests: usize,
) -> anyhow::Result<LineResult> {
    let accounts = w.codes.len();
    print!("running GET /work/today, agent with {accounts} accounts, {requests} requests... ");
    io::stdout().flush().ok();
    let request = api_request(t.addr, "GET", WORK_TODAY, &w.key, None, None);
    for _ in 0..5 {
        client.send(&request)?;
    }
    let mut latencies = Vec::with_capacity(requests);
    let mut trips = Vec::with_capacity(requests);
    let mut bytes_out = 0usize;
    let started = Instant::now();
    let meter = Meter::start(t.pid, t.db);
    for _ in 0..requests {
        let t0 = Instant::now();
        let r = client.send(&request)?;
        let micros = t0.elapsed().as_micros() as u64;
        if r.status != 200 {
            bail!(
                "GET /work/today answered {}: {}",
                r.status,
                excerpt(&r.body)
            );
        }
        latencies.push(micros);
        if let Some(t) = r.round_trips {
            trips.push(t);
        }
        bytes_out += r.body.len();
    }
    let cpu = meter.stop(t.pid, t.db, requests);
    let seconds = started.elapsed().as_secs_f64();
    println!("{seconds:.1} s");
    Ok(LineResult {
        id: format!("work_today_{accounts}"),
        label: format!("GET /work/today, {accounts} accounts"),
        requests,
        latencies_us: latencies,
        trips,
        body_bytes_in: 0.0,
        body_bytes_out: bytes_out as f64 / requests as f64,
        kinds: BTreeMap::new(),
        cpu,
        load_after: load_average(),
        seconds,
    })
}

// ---------------------------------------------------------------------------------------------
// Wire check

struct WireLine {
    label: String,
    statements: Vec<u32>,
    wire: Vec<WireSnapshot>,
}

impl WireLine {
    fn median(mut v: Vec<u64>) -> u64 {
        v.sort_unstable();
        v.get(v.len() / 2).copied().unwrap_or(0)
    }

    fn med(&self, f: impl Fn(&WireSnapshot) -> u64) -> u64 {
        Self::median(self.wire.iter().map(f).collect())
    }

    fn statements(&self) -> u64 {
        Self::median(self.statements.iter().map(|&s| u64::from(s)).collect())
    }

    fn json(&self) -> Value {
        json!({
            "line": self.label,
            "requests": self.wire.len(),
            "statements_median": self.statements(),
            "median_per_request": {
                "parse": self.med(|w| w.parse),
                "bind": self.med(|w| w.bind),
                "execute": self.med(|w| w.execute),
                "sync": self.med(|w| w.sync),
                "simple_query": self.med(|w| w.simple),
                "waits": self.med(|w| w.waits),
            },
            "waits_min_max": [
                self.wire.iter().map(|w| w.waits).min().unwrap_or(0),
                self.wire.iter().map(|w| w.waits).max().unwrap_or(0),
            ],
        })
    }
}

fn wire_check(
    bin: &Path,
    db: &Database,
    data_dir: &Path,
    opts: &Options,
    big: &mut Workload,
    small: &Workload,
    mixes: [&Mix; 2],
) -> anyhow::Result<Vec<WireLine>> {
    let counters = Arc::new(WireCounters::default());
    let proxy = harness::start_proxy(db.socket_addr()?, counters.clone())?;
    println!(
        "\nwire check: a second server reaches PostgreSQL through a counting proxy; {} sequential requests per line",
        opts.wire_requests
    );
    let server = Server::start(
        bin,
        &db.url_via(&proxy),
        data_dir,
        &opts.serve_flags(),
        &data_dir.join("serve-wire.log"),
    )?;
    let addr = server.addr.clone();
    let mut client = Connection::new(&addr, CLIENT_TIMEOUT);
    let mut lines = Vec::new();
    for mix in mixes {
        // One report first: opens the pool's connection and prepares the statements.
        let (body, kinds) = big.batch(mix);
        check_report(&big.send_report(&mut client, &addr, &body, None)?.0, &kinds)?;
        let mut line = WireLine {
            label: format!("POST /posts/report, {} items", mix.total()),
            statements: Vec::new(),
            wire: Vec::new(),
        };
        let mut before = counters.settle();
        for _ in 0..opts.wire_requests {
            let (body, kinds) = big.batch(mix);
            let (r, _) = big.send_report(&mut client, &addr, &body, None)?;
            check_report(&r, &kinds)?;
            let after = counters.settle();
            line.statements.push(r.round_trips.unwrap_or(0));
            line.wire.push(after.minus(before));
            before = after;
        }
        lines.push(line);
    }
    for w in [&*big, small] {
        let request = api_request(&addr, "GET", WORK_TODAY, &w.key, None, None);
        // Its reads run on several pooled connections at once: let every connection of the
        // pool prepare them before counting.
        for _ in 0..30 {
            client.send(&request)?;
        }
        let mut line = WireLine {
            label: format!("GET /work/today, {} accounts", w.codes.len()),
            statements: Vec::new(),
            wire: Vec::new(),
        };
        let mut before = counters.settle();
        for _ in 0..opts.wire_requests {
            let r = client.send(&request)?;
            if r.status != 200 {
                bail!("GET /work/today answered {}", r.status);
            }
            let after = counters.settle();
            line.statements.push(r.round_trips.unwrap_or(0));
            line.wire.push(after.minus(before));
            before = after;
        }
        lines.push(line);
    }
    drop(server);
    Ok(lines)
}

// ---------------------------------------------------------------------------------------------
// Report

fn print_report(opts: &Options, lines: &[LineResult], days: &[&Day], wire: Option<&[WireLine]>) {
    println!();
    println!(
        "one client, one request at a time on one keep-alive connection{}",
        if opts.idempotency_key {
            "; every report with a fresh Idempotency-Key"
        } else {
            "; reports without Idempotency-Key"
        }
    );
    println!(
        "{:<34} {:>8} {:>8} {:>8} {:>8} {:>8} {:>17} {:>10} {:>10}",
        "line",
        "requests",
        "p50 ms",
        "p99 ms",
        "max ms",
        "mean ms",
        "trips min/med/max",
        "resp KB",
        "req KB"
    );
    for l in lines {
        let (lo, med, hi) = l.trips();
        println!(
            "{:<34} {:>8} {:>8.2} {:>8.2} {:>8.2} {:>8.2} {:>17} {:>10.1} {:>10.1}",
            l.label,
            l.requests,
            l.ms(0.50),
            l.ms(0.99),
            l.max_ms(),
            l.mean_ms(),
            format!("{lo}/{med}/{hi}"),
            l.body_bytes_out / 1000.0,
            l.body_bytes_in / 1000.0,
        );
    }
    println!("p50 ms of each tenth of the line, in order (a drift or a disturbance shows here):");
    for l in lines {
        let t: Vec<String> = l.p50_by_tenth().iter().map(|v| format!("{v:.1}")).collect();
        println!("  {:<32} {}", l.label, t.join(" "));
    }
    for l in lines.iter().filter(|l| !l.kinds.is_empty()) {
        let k: Vec<String> = l.kinds.iter().map(|(k, v)| format!("{k} {v}")).collect();
        println!("items of {}: {}", l.label, k.join(", "));
    }
    for d in days {
        println!(
            "work_today of agent {} ({} accounts, dates {}): expected {}, covered {}, {} accounts missing posts",
            d.agent,
            d.accounts,
            d.dates.join(", "),
            d.expected,
            d.covered,
            d.missing_accounts
        );
    }
    if lines.iter().any(|l| l.cpu.is_some()) {
        println!(
            "\nCPU while measuring, in % of all {} core(s), and per request:",
            thread::available_parallelism().map_or(1, |n| n.get())
        );
        println!(
            "{:<34} {:>8} {:>8} {:>8} {:>9} {:>7} {:>15} {:>13} {:>9}",
            "line",
            "machine",
            "server",
            "client",
            "database",
            "noise",
            "server ms/req",
            "db ms/req",
            "load avg"
        );
        for l in lines {
            if let Some(c) = l.cpu {
                println!(
                    "{:<34} {:>7.0}% {:>7.0}% {:>7.0}% {:>8.0}% {:>6.0}% {:>15.2} {:>13.2} {:>9}",
                    l.label,
                    c.share.machine_busy_pct,
                    c.share.server_pct,
                    c.share.client_pct,
                    c.db_pct,
                    c.noise_pct,
                    c.share.server_us_per_request / 1000.0,
                    c.db_ms_per_request,
                    l.load_after
                );
            }
        }
        println!(
            "database = the PostgreSQL backends of the benchmark's database; noise = the rest of the busy time:\n\
             other work on the machine (other databases' backends included). One client waits on each\n\
             request, so server + database time per request is most of the latency."
        );
    }
    println!(
        "\nround trips = the X-Db-Round-Trips header: SQL statements the request sent (BEGIN and COMMIT included)."
    );
    if let Some(w) = wire {
        println!(
            "\nwire check: PostgreSQL protocol messages per request (median of sequential requests through the proxy)"
        );
        println!(
            "{:<34} {:>10} {:>6} {:>5} {:>8} {:>5} {:>7} {:>6} {:>14}",
            "line",
            "statements",
            "Parse",
            "Bind",
            "Execute",
            "Sync",
            "Query",
            "waits",
            "Parse min-max"
        );
        for l in w {
            let parse = l.wire.iter().map(|s| s.parse);
            println!(
                "{:<34} {:>10} {:>6} {:>5} {:>8} {:>5} {:>7} {:>6} {:>14}",
                l.label,
                l.statements(),
                l.med(|s| s.parse),
                l.med(|s| s.bind),
                l.med(|s| s.execute),
                l.med(|s| s.sync),
                l.med(|s| s.simple),
                l.med(|s| s.waits),
                format!(
                    "{}-{}",
                    parse.clone().min().unwrap_or(0),
                    parse.max().unwrap_or(0)
                ),
            );
        }
        println!(
            "waits = batches sent and waited on: the network round trips to PostgreSQL (Parse > 0: a statement prepared again)."
        );
    }
}

/// The targets and the round-trip claims.
struct Verdict {
    report_p50: Option<f64>,
    today_p50: Option<f64>,
    /// Median round trips of the big and the small report line.
    report_trips: Option<(u32, u32)>,
    /// Median round trips of work_today with many and with few accounts.
    today_trips: Option<(u32, u32)>,
}

impl Verdict {
    fn of(lines: &[LineResult]) -> Verdict {
        let reports: Vec<&LineResult> = lines
            .iter()
            .filter(|l| l.id.starts_with("report_"))
            .collect();
        let days: Vec<&LineResult> = lines
            .iter()
            .filter(|l| l.id.starts_with("work_today_"))
            .collect();
        Verdict {
            report_p50: reports.first().map(|l| l.ms(0.5)),
            today_p50: days.first().map(|l| l.ms(0.5)),
            report_trips: (reports.len() == 2)
                .then(|| (reports[0].trips().1, reports[1].trips().1)),
            today_trips: (days.len() == 2).then(|| (days[0].trips().1, days[1].trips().1)),
        }
    }

    fn print(&self) {
        let met = |v: Option<f64>, t: f64| match v {
            Some(v) if v < t => format!("{v:.1} ms: met"),
            Some(v) => format!("{v:.1} ms: NOT met"),
            None => "n/a".into(),
        };
        let same = |t: Option<(u32, u32)>| match t {
            Some((a, b)) if a == b => format!("{a} and {b}: constant"),
            Some((a, b)) => format!("{a} and {b}: NOT constant"),
            None => "n/a".into(),
        };
        println!("\ntargets");
        println!(
            "  report, big batch, p50 < {TARGET_REPORT_P50_MS} ms: {}",
            met(self.report_p50, TARGET_REPORT_P50_MS)
        );
        println!(
            "  work_today, big agent, p50 < {TARGET_TODAY_P50_MS} ms: {}",
            met(self.today_p50, TARGET_TODAY_P50_MS)
        );
        println!(
            "  round trips of a report, big and small batch: {}",
            same(self.report_trips)
        );
        println!(
            "  round trips of work_today, many and few accounts: {}",
            same(self.today_trips)
        );
    }

    fn json(&self) -> Value {
        json!({
            "report_p50_ms": {"target_below": TARGET_REPORT_P50_MS, "measured": self.report_p50,
                              "met": self.report_p50.map(|v| v < TARGET_REPORT_P50_MS)},
            "work_today_p50_ms": {"target_below": TARGET_TODAY_P50_MS, "measured": self.today_p50,
                                  "met": self.today_p50.map(|v| v < TARGET_TODAY_P50_MS)},
            "report_round_trips_big_small": self.report_trips,
            "work_today_round_trips_many_few": self.today_trips,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_mix_adds_up_and_holds_every_kind() {
        for n in [10, 20, 37, 200] {
            let m = Mix::of(n);
            assert_eq!(m.total(), n);
            assert!(m.schedule > 0 && m.publish_by_id > 0 && m.new_by_body > 0);
            assert!(m.publish_by_platform_id > 0 && m.publish_by_body > 0);
        }
        let m = Mix::of(200);
        assert_eq!(
            (
                m.schedule,
                m.publish_by_id,
                m.new_by_body,
                m.publish_by_platform_id,
                m.publish_by_body
            ),
            (50, 50, 40, 40, 20)
        );
    }

    #[test]
    fn a_batch_falls_back_to_new_posts_when_pools_are_empty() {
        let mut w = Workload::new("t", "k".into(), vec!["TW-T000".into()], "x");
        let (_, kinds) = w.batch(&Mix::of(20));
        assert!(kinds.iter().all(|k| *k == Kind::NewByBody));
        w.approved.extend((0..10).map(|i| Approved {
            code: "TW-T000".into(),
            id: format!("id-{i}"),
            body: format!("body {i}"),
        }));
        let (_, kinds) = w.batch(&Mix::of(20));
        let count = |k: Kind| kinds.iter().filter(|x| **x == k).count();
        assert_eq!(count(Kind::Schedule), 5);
        assert_eq!(count(Kind::PublishByBody), 2);
        assert_eq!(count(Kind::PublishByPlatformId), 4);
        assert_eq!(count(Kind::PublishById), 0);
        let (_, kinds) = w.batch(&Mix::of(20));
        assert_eq!(kinds.iter().filter(|x| **x == Kind::PublishById).count(), 5);
    }
}
