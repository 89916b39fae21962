//! Event log and webhooks benchmark of the real binary: `cargo xtask bench events [--help]`.
//!
//! 1. builds `fleetdesk` in release mode and creates a fresh database (dropped at the end);
//! 2. applies a tenant: an agency member with a personal key and one operator agent whose
//!    persona holds `--accounts` (100) active threads accounts, without client review;
//! 3. starts `fleetdesk serve --expose-round-trips --allow-http-webhooks
//!    --allow-private-webhooks` (the receiver is on 127.0.0.1, over http);
//! 4. the outbox's cost: one client sends `--draft-requests` (2,000) POST /api/agent/v1/drafts
//!    one after another, each a new body that lands in internal review and so writes one
//!    `post.submitted` event: latency and statements (`X-Db-Round-Trips`). With
//!    `--before-binary`, the same is measured at the end against that binary (built from the
//!    commit before the event log) on a database and tenant of its own;
//! 5. the long-poll feed: a client holds
//!    `GET /api/agent/v1/events?after=<cursor>&wait=30&types=post.submitted` with the agent's
//!    key while another writes one draft; the delay is
//!    the feed's answer minus the draft's answer (and minus when the draft was sent), `--polls`
//!    (200) times one after another;
//! 6. webhooks: a receiver in this process (a std TcpListener answering 204, recording when
//!    each request arrived, its `webhook-id` and its body's `id`, `object_id` and
//!    `timestamp`), one endpoint registered through POST /api/user/v1/webhooks for
//!    `post.submitted`, then `--events` (10,000) drafts written by `--clients` (8) clients.
//!    Deliveries per second (first to last delivery), the delay from commit to delivery, and
//!    whether every event was delivered exactly once.
//!
//! Every time is read on this process's monotonic clock (`std::time::Instant`), shared by the
//! client threads and the receiver. A commit's time is taken as when its POST /drafts answer
//! arrived (the commit happened before the answer), matched to the delivery by the post id
//! (the event's `object_id`). Results go to standard output and, under `events`, to
//! `target/bench/results.json`.

use crate::harness::{self, Database, Flags, ServeFlags, Server, excerpt, iso_utc, percentile};
use crate::http::{Connection, Response, api_request, read_request_head_with};
use anyhow::{Context, bail};
use serde_json::{Value, json};
use std::collections::{HashMap, HashSet};
use std::io::{self, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, mpsc};
use std::thread;
use std::time::{Duration, Instant};

const HELP: &str = "\
cargo xtask bench events: the event log, its long-poll feed and webhooks on the release binary.

Creates a database fleetdesk_events_<pid> (dropped at the end), applies a tenant with an agency
member and an operator agent with --accounts active accounts, starts `fleetdesk serve
--expose-round-trips --allow-http-webhooks --allow-private-webhooks`, then measures:
  - POST /api/agent/v1/drafts, one client, one request at a time (each draft lands in internal
    review and writes one post.submitted event): p50/p99 latency and SQL statements
    (X-Db-Round-Trips); with --before-binary also against that binary (the commit before the
    event log), on a database of its own, printed side by side;
  - the long-poll feed: GET /api/agent/v1/events?after=<cursor>&wait=30&types=post.submitted
    held while another client writes one draft; delay from the draft's answer (and from its
    sending) to the feed's answer, p50/p99;
  - webhooks: a local receiver (answers 204), one endpoint registered through
    POST /api/user/v1/webhooks for post.submitted, --events drafts written by --clients
    clients; deliveries per second, p50/p99/max delay from commit (the client's time of the
    POST /drafts answer) to delivery, and whether every event arrived exactly once.
All times are this process's monotonic clock. Writes `events` in target/bench/results.json.

USAGE:
    cargo xtask bench events [OPTIONS]

OPTIONS:
    --events N            drafts (so post.submitted events and deliveries) of the webhook
                          line (default 10000)
    --clients C           clients writing those drafts at once (default 8)
    --accounts N          active accounts the drafts are spread over (default 100)
    --polls N             measured long-poll rounds (default 200)
    --draft-requests N    measured sequential POST /drafts of the outbox line (default 2000)
    --warmup N            POST /drafts sent first in the outbox line, not measured (default 50)
    --before-binary PATH  also measure the outbox line against this fleetdesk binary (built at
                          the commit before the event log), on a database of its own
    --drain-timeout S     give up waiting for deliveries after S seconds without a new one
                          (default 60)
    --no-build            do not run cargo build; use target/release/fleetdesk as it is
    -h, --help            print this help

ENVIRONMENT:
    FLEETDESK_BENCH_SERVER_URL   PostgreSQL server to create the databases on
                                 (default postgres://postgres@127.0.0.1:5432)
";

const DRAFTS: &str = "/api/agent/v1/drafts";
const FEED: &str = "/api/agent/v1/events";
const WEBHOOKS: &str = "/api/user/v1/webhooks";
/// The one kind the drafts write, and the one the endpoint and the feed ask for.
const KIND: &str = "post.submitted";
const CLIENT_TIMEOUT: Duration = Duration::from_secs(60);
/// Long-poll rounds before the measured ones (the first wait opens the server's LISTEN
/// connection).
const WARMUP_POLLS: usize = 5;
/// How long the feed's request is left alone before the draft is written, so that the server
/// holds it.
const HOLD_BEFORE_WRITE: Duration = Duration::from_millis(100);
/// How long the receiver keeps listening after the last expected delivery, to see duplicates
/// (the first retry of an attempt the server took for failed comes 5 s after it).
const DUPLICATE_GRACE: Duration = Duration::from_secs(7);

struct Options {
    events: usize,
    clients: usize,
    accounts: usize,
    polls: usize,
    draft_requests: usize,
    warmup: usize,
    before_binary: Option<PathBuf>,
    drain_timeout: u64,
    build: bool,
    server_url: String,
}

impl Options {
    fn parse(args: &[String]) -> anyhow::Result<Option<Options>> {
        let mut o = Options {
            events: 10_000,
            clients: 8,
            accounts: 100,
            polls: 200,
            draft_requests: 2_000,
            warmup: 50,
            before_binary: None,
            drain_timeout: 60,
            build: true,
            server_url: harness::server_url(),
        };
        let mut flags = Flags::new(args);
        while let Some(flag) = flags.next_flag() {
            let flag = flag.as_str();
            match flag {
                "-h" | "--help" => return Ok(None),
                "--events" => o.events = flags.num(flag)?,
                "--clients" => o.clients = flags.num(flag)?,
                "--accounts" => o.accounts = flags.num(flag)?,
                "--polls" => o.polls = flags.num(flag)?,
                "--draft-requests" => o.draft_requests = flags.num(flag)?,
                "--warmup" => o.warmup = flags.num(flag)?,
                "--before-binary" => o.before_binary = Some(PathBuf::from(flags.value(flag)?)),
                "--drain-timeout" => o.drain_timeout = flags.num(flag)?,
                "--no-build" => o.build = false,
                other => bail!("unknown option `{other}`; see cargo xtask bench events --help"),
            }
        }
        if o.events == 0 || o.clients == 0 || o.accounts == 0 {
            bail!("--events, --clients and --accounts must be at least 1");
        }
        if o.polls == 0 || o.draft_requests == 0 {
            bail!("--polls and --draft-requests must be at least 1");
        }
        if let Some(b) = &o.before_binary
            && !b.is_file()
        {
            bail!("--before-binary {}: no such file", b.display());
        }
        Ok(Some(o))
    }
}

// ---------------------------------------------------------------------------------------------
// Tenant and drafts

struct Tenant {
    agent_key: String,
    member_key: String,
    workspace_id: String,
    codes: Vec<String>,
}

/// One organization, one workspace without client review, one operator agent and one persona
/// holding `accounts` active threads accounts. Nothing in it is newer than the event log, so
/// the binary before it applies the same file.
fn apply_tenant(bin: &Path, url: &str, dir: &Path, accounts: usize) -> anyhow::Result<Tenant> {
    let codes: Vec<String> = (0..accounts).map(harness::account_code).collect();
    let accounts: Vec<Value> = codes
        .iter()
        .map(|code| {
            json!({"code": code, "platform": "threads", "market": "TW", "state": "active",
                   "daily_target": 2, "handle": format!("@bench.{}", code.to_ascii_lowercase()),
                   "publishing": "agent"})
        })
        .collect();
    let tenant = json!({
        "organizations": [{
            "name": "Bench Agency",
            "members": [
                {"email": "reviewer@bench.test", "name": "Rita Reviewer", "role": "agency",
                 "keys": 1},
            ],
            "workspaces": [{
                "name": "Bench",
                "client_review": false,
                "projects": [{"name": "bench"}],
                "agents": [{"name": "bench-operator", "role": "operator", "keys": 1}],
                "personas": [{
                    "name": "Bench Persona",
                    "project": "bench",
                    "agent": "bench-operator",
                    "accounts": accounts,
                }],
            }],
        }],
    });
    std::fs::create_dir_all(dir)?;
    let report = harness::admin_apply(bin, url, dir, &tenant)?;
    let org = &report["organizations"][0];
    let workspace = &org["workspaces"][0];
    let key = |v: &Value, what: &str| {
        v["keys"][0]
            .as_str()
            .map(str::to_owned)
            .with_context(|| format!("no key for {what} in the apply report"))
    };
    Ok(Tenant {
        agent_key: key(&workspace["agents"][0], "the agent")?,
        member_key: key(&org["members"][0], "the member")?,
        workspace_id: workspace["id"]
            .as_str()
            .context("no workspace id in the apply report")?
            .to_owned(),
        codes,
    })
}

const SENTENCES: &[&str] = &[
    "Morning coffee on the balcony before the rain comes in, and the street is still quiet.",
    "Tried the new serum for a week now: my skin feels calmer, although the smell is strong.",
    "Momo found the sunny spot on the sofa again and refuses to share it with anyone today.",
    "Lunch at the little noodle place near the station, the queue was worth every minute.",
];

/// The n-th draft of the line `tag`: its account's code and a body no other draft has.
fn draft(tenant: &Tenant, tag: &str, n: usize) -> String {
    let code = &tenant.codes[n % tenant.codes.len()];
    let body = format!("{} ({code} {tag}-{n})", SENTENCES[n % SENTENCES.len()]);
    json!({"code": code, "body": body, "topic": "daily life"}).to_string()
}

/// Sends one draft and returns the answer and the new post's id; refuses an answer that is
/// not a new post in internal review (which would write no `post.submitted`).
fn post_draft(
    c: &mut Connection,
    addr: &str,
    key: &str,
    body: &str,
) -> anyhow::Result<(Response, String)> {
    let r = c.send(&api_request(addr, "POST", DRAFTS, key, None, Some(body)))?;
    if !(200..300).contains(&r.status) {
        bail!("POST /drafts answered {}: {}", r.status, excerpt(&r.body));
    }
    let v: Value = serde_json::from_slice(&r.body).context("POST /drafts: not JSON")?;
    let d = &v["draft"];
    if d["status"] != "internal_review" || d["duplicate"] == true {
        bail!(
            "POST /drafts landed {} (duplicate {}), not a new post in internal review",
            d["status"],
            d["duplicate"]
        );
    }
    let id = d["id"]
        .as_str()
        .context("POST /drafts answered no draft id")?
        .to_owned();
    Ok((r, id))
}

fn json_ok(r: &Response, what: &str) -> anyhow::Result<Value> {
    if !(200..300).contains(&r.status) {
        bail!("{what} answered {}: {}", r.status, excerpt(&r.body));
    }
    serde_json::from_slice(&r.body).with_context(|| format!("{what}: not JSON"))
}

/// Signed microseconds from `a` to `b`.
fn micros_between(a: Instant, b: Instant) -> i64 {
    if b >= a {
        (b - a).as_micros() as i64
    } else {
        -((a - b).as_micros() as i64)
    }
}

/// The nearest-rank percentile `p` of signed microseconds, in milliseconds.
fn signed_ms(values_us: &[i64], p: f64) -> f64 {
    let mut sorted = values_us.to_vec();
    sorted.sort_unstable();
    if sorted.is_empty() {
        return 0.0;
    }
    let rank = (p * sorted.len() as f64).ceil() as usize;
    sorted[rank.clamp(1, sorted.len()) - 1] as f64 / 1000.0
}

// ---------------------------------------------------------------------------------------------
// The outbox's cost on POST /drafts

struct DraftCost {
    label: String,
    binary: String,
    latencies_us: Vec<u64>,
    trips: Vec<u32>,
}

impl DraftCost {
    fn ms(&self, p: f64) -> f64 {
        harness::percentile_ms(&self.latencies_us, p)
    }

    fn trips_median(&self) -> u64 {
        let mut t: Vec<u64> = self.trips.iter().map(|&x| u64::from(x)).collect();
        t.sort_unstable();
        percentile(&t, 0.5)
    }

    /// `lo-hi (median m)`, or `-` without the header.
    fn trips(&self) -> String {
        let (lo, hi) = harness::min_max(&self.trips);
        if self.trips.is_empty() {
            "-".into()
        } else if lo == hi {
            lo.to_string()
        } else {
            format!("{lo}-{hi} (median {})", self.trips_median())
        }
    }

    fn json(&self) -> Value {
        json!({
            "line": self.label,
            "binary": self.binary,
            "requests": self.latencies_us.len(),
            "p50_ms": self.ms(0.5),
            "p99_ms": self.ms(0.99),
            "max_ms": self.ms(1.0),
            "round_trips_min_max": harness::min_max(&self.trips),
            "round_trips_median": self.trips_median(),
        })
    }
}

/// `warmup` then `requests` drafts, one client, one after another.
fn measure_drafts(
    label: &str,
    bin: &Path,
    addr: &str,
    tenant: &Tenant,
    warmup: usize,
    requests: usize,
) -> anyhow::Result<DraftCost> {
    print!("running POST /drafts ({label}), {requests} sequential requests... ");
    io::stdout().flush().ok();
    let mut c = Connection::new(addr, CLIENT_TIMEOUT);
    for n in 0..warmup {
        post_draft(&mut c, addr, &tenant.agent_key, &draft(tenant, "warm", n))?;
    }
    let mut cost = DraftCost {
        label: label.to_owned(),
        binary: bin.display().to_string(),
        latencies_us: Vec::with_capacity(requests),
        trips: Vec::with_capacity(requests),
    };
    let started = Instant::now();
    for n in 0..requests {
        let request = api_request(
            addr,
            "POST",
            DRAFTS,
            &tenant.agent_key,
            None,
            Some(&draft(tenant, "cost", n)),
        );
        let t0 = Instant::now();
        let r = c.send(&request)?;
        cost.latencies_us.push(t0.elapsed().as_micros() as u64);
        let v = json_ok(&r, "POST /drafts")?;
        if v["draft"]["status"] != "internal_review" {
            bail!("POST /drafts landed {}", v["draft"]["status"]);
        }
        if let Some(t) = r.round_trips {
            cost.trips.push(t);
        }
    }
    println!("{:.1} s", started.elapsed().as_secs_f64());
    Ok(cost)
}

// ---------------------------------------------------------------------------------------------
// The long-poll feed

fn feed_path(after: &str, wait: u32) -> String {
    format!("{FEED}?after={after}&types={KIND}&limit=200&wait={wait}")
}

/// The feed's cursor now: pages of 200 from the oldest until a short one.
fn current_cursor(c: &mut Connection, addr: &str, key: &str) -> anyhow::Result<String> {
    let mut path = format!("{FEED}?types={KIND}&limit=200&wait=0");
    loop {
        let r = c.send(&api_request(addr, "GET", &path, key, None, None))?;
        let v = json_ok(&r, "GET /events")?;
        let cursor = v["next_cursor"]
            .as_str()
            .context("GET /events answered no next_cursor")?
            .to_owned();
        let n = v["events"].as_array().map_or(0, Vec::len);
        if n < 200 {
            return Ok(cursor);
        }
        path = feed_path(&cursor, 0);
    }
}

struct PollLine {
    /// Feed answer minus the draft's answer (negative: the feed answered first).
    after_answer_us: Vec<i64>,
    /// Feed answer minus when the draft was sent.
    after_sent_us: Vec<i64>,
    /// POST /drafts latency in the same rounds.
    post_us: Vec<u64>,
}

/// What the feed thread sends back: the answer (or the error) and when it arrived.
type FeedAnswer = (io::Result<Response>, Instant);

fn long_poll(addr: &str, tenant: &Tenant, polls: usize) -> anyhow::Result<PollLine> {
    print!("running the long-poll feed, {polls} rounds (+{WARMUP_POLLS} warm-up)... ");
    io::stdout().flush().ok();
    let mut writer = Connection::new(addr, CLIENT_TIMEOUT);
    let mut cursor = current_cursor(&mut writer, addr, &tenant.agent_key)?;
    let (ask_tx, ask_rx) = mpsc::channel::<String>();
    let (ans_tx, ans_rx) = mpsc::channel::<FeedAnswer>();
    let feed = {
        let (addr, key) = (addr.to_owned(), tenant.agent_key.clone());
        thread::spawn(move || {
            let mut c = Connection::new(&addr, CLIENT_TIMEOUT);
            for path in ask_rx {
                let r = c.send(&api_request(&addr, "GET", &path, &key, None, None));
                let at = Instant::now();
                if ans_tx.send((r, at)).is_err() {
                    return;
                }
            }
        })
    };
    let mut line = PollLine {
        after_answer_us: Vec::with_capacity(polls),
        after_sent_us: Vec::with_capacity(polls),
        post_us: Vec::with_capacity(polls),
    };
    let started = Instant::now();
    for round in 0..WARMUP_POLLS + polls {
        ask_tx
            .send(feed_path(&cursor, 30))
            .context("the feed thread ended")?;
        thread::sleep(HOLD_BEFORE_WRITE);
        if let Ok((r, _)) = ans_rx.try_recv() {
            let what = match r {
                Ok(r) => format!("{}: {}", r.status, excerpt(&r.body)),
                Err(e) => e.to_string(),
            };
            bail!("the feed answered before the draft was written ({what})");
        }
        let body = draft(tenant, "poll", round);
        let sent = Instant::now();
        let (_, id) = post_draft(&mut writer, addr, &tenant.agent_key, &body)?;
        let answered = Instant::now();
        let (r, fed) = ans_rx
            .recv_timeout(Duration::from_secs(40))
            .context("the feed did not answer within 40 s")?;
        let v = json_ok(&r?, "GET /events?wait=30")?;
        let events = v["events"].as_array().cloned().unwrap_or_default();
        if events.len() != 1 || events[0]["object_id"] != id.as_str() {
            bail!(
                "the feed answered {} event(s), not the one post.submitted of post {id}: {v}",
                events.len()
            );
        }
        cursor = v["next_cursor"]
            .as_str()
            .context("GET /events answered no next_cursor")?
            .to_owned();
        if round >= WARMUP_POLLS {
            line.after_answer_us.push(micros_between(answered, fed));
            line.after_sent_us.push(micros_between(sent, fed));
            line.post_us.push((answered - sent).as_micros() as u64);
        }
    }
    drop(ask_tx);
    let _ = feed.join();
    println!("{:.1} s", started.elapsed().as_secs_f64());
    Ok(line)
}

// ---------------------------------------------------------------------------------------------
// Webhooks: the receiver

/// One request the receiver got.
struct Delivery {
    at: Instant,
    webhook_id: String,
    signed: bool,
    event_id: String,
    kind: String,
    object_id: String,
    timestamp: String,
}

#[derive(Default)]
struct Received {
    deliveries: Vec<Delivery>,
    /// Requests whose body was not the JSON of an event.
    unreadable: usize,
}

/// A plain HTTP/1.1 server on 127.0.0.1 answering 204 to every request (keep-alive, a thread
/// per connection), recording each; it runs until the process ends.
fn start_receiver() -> anyhow::Result<(String, Arc<Mutex<Received>>)> {
    let listener = TcpListener::bind("127.0.0.1:0").context("binding the webhook receiver")?;
    let addr = listener.local_addr()?.to_string();
    let got = Arc::new(Mutex::new(Received::default()));
    let shared = got.clone();
    thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(stream) = stream else { continue };
            let got = shared.clone();
            thread::spawn(move || {
                let _ = receive(stream, &got);
            });
        }
    });
    Ok((addr, got))
}

fn receive(stream: TcpStream, got: &Mutex<Received>) -> io::Result<()> {
    stream.set_nodelay(true)?;
    let mut writer = stream.try_clone()?;
    let mut reader = BufReader::new(stream);
    loop {
        let (mut id, mut signed) = (String::new(), false);
        let head = read_request_head_with(&mut reader, |name, value| {
            if name.eq_ignore_ascii_case("webhook-id") {
                id = value.to_owned();
            } else if name.eq_ignore_ascii_case("webhook-signature") {
                signed = value.starts_with("v1,");
            }
        })?;
        let Some(length) = head else { return Ok(()) };
        let mut body = vec![0; length as usize];
        reader.read_exact(&mut body)?;
        let at = Instant::now();
        let parsed = serde_json::from_slice::<Value>(&body).ok();
        {
            let mut g = got.lock().expect("receiver lock");
            match parsed {
                Some(v) if v["id"].is_string() => {
                    let text = |k: &str| v[k].as_str().unwrap_or_default().to_owned();
                    g.deliveries.push(Delivery {
                        at,
                        webhook_id: id,
                        signed,
                        event_id: text("id"),
                        kind: text("type"),
                        object_id: text("object_id"),
                        timestamp: text("timestamp"),
                    });
                }
                _ => g.unreadable += 1,
            }
        }
        writer.write_all(b"HTTP/1.1 204 No Content\r\n\r\n")?;
    }
}

// ---------------------------------------------------------------------------------------------
// Webhooks: the line

struct WebhookLine {
    events: usize,
    clients: usize,
    generation_s: f64,
    received: usize,
    distinct_ids: usize,
    duplicates: usize,
    missing: usize,
    unexpected: usize,
    unreadable: usize,
    id_mismatches: usize,
    unsigned: usize,
    other_kinds: usize,
    delivery_span_s: f64,
    /// Deliveries per second over each tenth of the deliveries, in arrival order (the later
    /// tenths find a shorter queue).
    tenths_per_s: Vec<f64>,
    /// Delivery minus the commit (the POST answer), per post delivered.
    delays_us: Vec<i64>,
    first_delivery_after_first_post_s: f64,
    last_delivery_after_last_post_s: f64,
    /// The body's `timestamp` of the first delivery (for the record).
    sample_timestamp: String,
    server_view: String,
}

impl WebhookLine {
    fn deliveries_per_s(&self) -> f64 {
        if self.delivery_span_s > 0.0 {
            (self.received.saturating_sub(1)) as f64 / self.delivery_span_s
        } else {
            0.0
        }
    }

    fn exactly_once(&self) -> bool {
        self.received == self.events
            && self.distinct_ids == self.events
            && self.duplicates == 0
            && self.missing == 0
            && self.unexpected == 0
            && self.unreadable == 0
            && self.id_mismatches == 0
    }
}

/// Registers the receiver for [`KIND`]; returns the endpoint's id (its secret is not kept: the
/// signatures are not verified).
fn register_endpoint(addr: &str, tenant: &Tenant, receiver: &str) -> anyhow::Result<String> {
    let mut c = Connection::new(addr, CLIENT_TIMEOUT);
    let body = json!({
        "workspace_id": tenant.workspace_id,
        "url": format!("http://{receiver}/hook"),
        "types": [KIND],
        "description": "events benchmark receiver",
    });
    let r = c.send(&api_request(
        addr,
        "POST",
        WEBHOOKS,
        &tenant.member_key,
        None,
        Some(&body.to_string()),
    ))?;
    if r.status != 201 {
        bail!(
            "POST /webhooks answered {}, not 201: {}",
            r.status,
            excerpt(&r.body)
        );
    }
    let v: Value = serde_json::from_slice(&r.body)?;
    let id = v["endpoint"]["id"]
        .as_str()
        .context("POST /webhooks answered no endpoint id")?;
    if !v["secret"]
        .as_str()
        .is_some_and(|s| s.starts_with("whsec_"))
    {
        bail!("POST /webhooks answered no whsec_ secret");
    }
    Ok(id.to_owned())
}

/// (post id, when its POST was sent, when its answer arrived)
type Written = (String, Instant, Instant);

fn write_drafts(
    addr: &str,
    tenant: &Arc<Tenant>,
    count: usize,
    clients: usize,
) -> anyhow::Result<Vec<Written>> {
    let next = Arc::new(AtomicUsize::new(0));
    let handles: Vec<_> = (0..clients)
        .map(|_| {
            let (next, tenant, addr) = (next.clone(), tenant.clone(), addr.to_owned());
            thread::spawn(move || -> anyhow::Result<Vec<Written>> {
                let mut c = Connection::new(&addr, CLIENT_TIMEOUT);
                let mut out = Vec::new();
                loop {
                    let n = next.fetch_add(1, Ordering::Relaxed);
                    if n >= count {
                        return Ok(out);
                    }
                    let body = draft(&tenant, "hook", n);
                    let sent = Instant::now();
                    let (_, id) = post_draft(&mut c, &addr, &tenant.agent_key, &body)?;
                    out.push((id, sent, Instant::now()));
                    if (n + 1) % 2_000 == 0 {
                        println!("  {} drafts written", n + 1);
                    }
                }
            })
        })
        .collect();
    let mut all = Vec::with_capacity(count);
    for h in handles {
        all.extend(
            h.join()
                .map_err(|_| anyhow::anyhow!("a client thread panicked"))??,
        );
    }
    Ok(all)
}

fn webhooks(
    addr: &str,
    db_url: &str,
    tenant: &Arc<Tenant>,
    opts: &Options,
) -> anyhow::Result<WebhookLine> {
    let (receiver, got) = start_receiver()?;
    let endpoint = register_endpoint(addr, tenant, &receiver)?;
    println!("webhooks: receiver on http://{receiver}/hook, endpoint {endpoint} for {KIND}");
    println!(
        "running webhooks: {} drafts by {} clients...",
        opts.events, opts.clients
    );
    let t0 = Instant::now();
    let written = write_drafts(addr, tenant, opts.events, opts.clients)?;
    let generation_s = t0.elapsed().as_secs_f64();
    println!(
        "  written in {generation_s:.1} s ({:.0} drafts/s); waiting for the deliveries...",
        opts.events as f64 / generation_s
    );
    let expected: HashMap<&str, Instant> = written
        .iter()
        .map(|(id, _, answered)| (id.as_str(), *answered))
        .collect();
    // Wait for every delivery, or until none came for --drain-timeout seconds.
    let (mut seen, mut last_change) = (0, Instant::now());
    loop {
        let n = got.lock().expect("receiver lock").deliveries.len();
        if n != seen {
            (seen, last_change) = (n, Instant::now());
        }
        if n >= opts.events || last_change.elapsed() > Duration::from_secs(opts.drain_timeout) {
            break;
        }
        thread::sleep(Duration::from_millis(50));
    }
    thread::sleep(DUPLICATE_GRACE);
    let server_view = harness::psql(
        db_url,
        "SELECT 'deliveries ' || coalesce(string_agg(status || '=' || n, ', '), 'none') || \
         '; attempts ' || (SELECT count(*) FROM webhook_attempts) \
         FROM (SELECT status, count(*) n FROM webhook_deliveries GROUP BY 1 ORDER BY 1) s",
    )
    .map(|s| s.trim().to_owned())
    .unwrap_or_else(|e| format!("(could not read: {e:#})"));

    let g = got.lock().expect("receiver lock");
    let ds = &g.deliveries;
    let ids: HashSet<&str> = ds.iter().map(|d| d.webhook_id.as_str()).collect();
    let mut first_of: HashMap<&str, Instant> = HashMap::new();
    let mut unexpected = 0;
    for d in ds {
        if expected.contains_key(d.object_id.as_str()) {
            let e = first_of.entry(d.object_id.as_str()).or_insert(d.at);
            *e = (*e).min(d.at);
        } else {
            unexpected += 1;
        }
    }
    let delays_us: Vec<i64> = first_of
        .iter()
        .map(|(id, at)| micros_between(expected[id], *at))
        .collect();
    let first = ds.iter().map(|d| d.at).min();
    let last = ds.iter().map(|d| d.at).max();
    let first_sent = written.iter().map(|w| w.1).min();
    let last_answer = written.iter().map(|w| w.2).max();
    let secs = |a: Option<Instant>, b: Option<Instant>| match (a, b) {
        (Some(a), Some(b)) => micros_between(a, b) as f64 / 1e6,
        _ => 0.0,
    };
    Ok(WebhookLine {
        events: opts.events,
        clients: opts.clients,
        generation_s,
        received: ds.len(),
        distinct_ids: ids.len(),
        duplicates: ds.len() - ids.len(),
        missing: expected.len() - first_of.len(),
        unexpected,
        unreadable: g.unreadable,
        id_mismatches: ds
            .iter()
            .filter(|d| d.webhook_id != format!("msg_{}", d.event_id.replace('-', "")))
            .count(),
        unsigned: ds.iter().filter(|d| !d.signed).count(),
        other_kinds: ds.iter().filter(|d| d.kind != KIND).count(),
        delivery_span_s: secs(first, last),
        tenths_per_s: tenths(ds),
        delays_us,
        first_delivery_after_first_post_s: secs(first_sent, first),
        last_delivery_after_last_post_s: secs(last_answer, last),
        sample_timestamp: ds.first().map(|d| d.timestamp.clone()).unwrap_or_default(),
        server_view,
    })
}

/// Deliveries per second over each tenth of `ds`, in arrival order (from the last arrival of
/// the tenth before).
fn tenths(ds: &[Delivery]) -> Vec<f64> {
    let mut at: Vec<Instant> = ds.iter().map(|d| d.at).collect();
    at.sort_unstable();
    if at.len() < 20 {
        return Vec::new();
    }
    let cut = |k: usize| at[(k * (at.len() - 1)) / 10];
    (0..10)
        .map(|k| {
            let (a, b) = (cut(k), cut(k + 1));
            let n = (((k + 1) * (at.len() - 1)) / 10 - (k * (at.len() - 1)) / 10) as f64;
            let s = (b - a).as_secs_f64();
            if s > 0.0 { n / s } else { 0.0 }
        })
        .collect()
}

// ---------------------------------------------------------------------------------------------
// Before the event log

/// The outbox line against the binary from before the event log: its own database, tenant and
/// server (without the webhook flags, which it does not know).
fn before_line(
    bin: &Path,
    opts: &Options,
    tmp: &Path,
    flags: &ServeFlags,
) -> anyhow::Result<DraftCost> {
    let db = Database::create_named(&opts.server_url, "events_before")?;
    let dir = tmp.join("before");
    let tenant = apply_tenant(bin, &db.url, &dir, opts.accounts)?;
    let server = Server::start(bin, &db.url, &dir, flags, &tmp.join("serve-before.log"))?;
    let cost = measure_drafts(
        "before the event log",
        bin,
        &server.addr,
        &tenant,
        opts.warmup,
        opts.draft_requests,
    );
    drop(server);
    drop(db);
    cost
}

// ---------------------------------------------------------------------------------------------

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
        "events",
        "event log and webhooks benchmark",
        &opts.server_url,
        opts.build,
    )?;
    let tenant = Arc::new(apply_tenant(&bin, &db.url, &tmp.path, opts.accounts)?);
    println!(
        "tenant: one operator agent with {} active threads accounts, an agency member",
        opts.accounts
    );
    let flags = ServeFlags {
        workers: None,
        db_pool: None,
        json_log: false,
        local_webhooks: true,
        embeddings_url: None,
    };
    let server = Server::start(
        &bin,
        &db.url,
        &tmp.path,
        &flags,
        &tmp.path.join("serve.log"),
    )?;
    let addr = server.addr.clone();
    let after = measure_drafts(
        "with the event log",
        &bin,
        &addr,
        &tenant,
        opts.warmup,
        opts.draft_requests,
    )?;
    let poll = long_poll(&addr, &tenant, opts.polls)?;
    let hooks = webhooks(&addr, &db.url, &tenant, &opts)?;
    drop(server);
    let before = match &opts.before_binary {
        Some(b) => {
            let old_flags = ServeFlags {
                local_webhooks: false,
                embeddings_url: None,
                ..flags
            };
            Some(before_line(b, &opts, &tmp.path, &old_flags)?)
        }
        None => None,
    };

    // Webhooks
    let clock = "this process's monotonic clock (std::time::Instant), for clients and receiver";
    println!("\nclock: {clock}; commit time = when the POST /drafts answer arrived");
    println!(
        "\nwebhooks: {} post.submitted events, written by {} clients in {:.1} s ({:.0}/s)",
        hooks.events,
        hooks.clients,
        hooks.generation_s,
        hooks.events as f64 / hooks.generation_s
    );
    println!(
        "  deliveries: {} in {:.2} s from the first to the last: {:.0} deliveries/s",
        hooks.received,
        hooks.delivery_span_s,
        hooks.deliveries_per_s()
    );
    println!(
        "  first delivery {:.2} s after the first POST was sent; last delivery {:.2} s after the \
         last POST answer",
        hooks.first_delivery_after_first_post_s, hooks.last_delivery_after_last_post_s
    );
    let tenths: Vec<String> = hooks
        .tenths_per_s
        .iter()
        .map(|r| format!("{r:.0}"))
        .collect();
    println!(
        "  deliveries/s over each tenth of them, in order: {}",
        tenths.join(" ")
    );
    if hooks.last_delivery_after_last_post_s > 1.0 {
        println!("  the writers outpaced the deliveries: the delays below are mostly the queue's");
    }
    println!(
        "  commit -> delivery ({} posts): p50 {:.1} ms, p99 {:.1} ms, max {:.1} ms",
        hooks.delays_us.len(),
        signed_ms(&hooks.delays_us, 0.5),
        signed_ms(&hooks.delays_us, 0.99),
        signed_ms(&hooks.delays_us, 1.0)
    );
    println!(
        "  exactly once: {} (requests {}, distinct webhook-ids {}, duplicates {}, posts never \
         delivered {}, deliveries of other posts {}, unreadable {}, webhook-id != msg_<body id> \
         {}, without a v1 signature {}, other types {})",
        if hooks.exactly_once() { "YES" } else { "NO" },
        hooks.received,
        hooks.distinct_ids,
        hooks.duplicates,
        hooks.missing,
        hooks.unexpected,
        hooks.unreadable,
        hooks.id_mismatches,
        hooks.unsigned,
        hooks.other_kinds
    );
    println!("  the server's tables: {}", hooks.server_view);
    println!(
        "  (signatures are not verified, only present; the body's timestamp is the event's \
         occurred_at, e.g. {})",
        hooks.sample_timestamp
    );

    // Long poll
    println!(
        "\nlong-poll feed, {} rounds: feed answer - draft answer p50 {:.2} ms, p99 {:.2} ms; \
         feed answer - draft sent p50 {:.2} ms, p99 {:.2} ms (POST /drafts itself p50 {:.2} ms)",
        poll.after_answer_us.len(),
        signed_ms(&poll.after_answer_us, 0.5),
        signed_ms(&poll.after_answer_us, 0.99),
        signed_ms(&poll.after_sent_us, 0.5),
        signed_ms(&poll.after_sent_us, 0.99),
        harness::percentile_ms(&poll.post_us, 0.5)
    );

    // Outbox cost
    println!(
        "\n{:<28} {:>9} {:>9} {:>9}  statements (X-Db-Round-Trips)",
        "POST /drafts, 1 client", "p50 ms", "p99 ms", "max ms"
    );
    let mut lines = Vec::new();
    match &before {
        Some(b) => lines.push(b),
        None => println!(
            "{:<28} not measured (no --before-binary)",
            "before the event log"
        ),
    }
    lines.push(&after);
    for l in &lines {
        println!(
            "{:<28} {:>9.2} {:>9.2} {:>9.2}  {}",
            l.label,
            l.ms(0.5),
            l.ms(0.99),
            l.ms(1.0),
            l.trips()
        );
    }

    let elapsed = started.elapsed().as_secs_f64();
    let doc = json!({"events": {
        "measured_at": iso_utc(harness::unix_millis() as i64 / 1000),
        "machine": machine.json(),
        "clock": clock,
        "commit_time": "the client's time when the POST /drafts answer arrived",
        "options": {"events": opts.events, "clients": opts.clients, "accounts": opts.accounts,
                    "polls": opts.polls, "draft_requests": opts.draft_requests,
                    "warmup": opts.warmup},
        "webhooks": {
            "events": hooks.events,
            "generation_seconds": hooks.generation_s,
            "deliveries": hooks.received,
            "delivery_span_seconds": hooks.delivery_span_s,
            "deliveries_per_second": hooks.deliveries_per_s(),
            "deliveries_per_second_by_tenth": hooks.tenths_per_s,
            "commit_to_delivery_ms": {"p50": signed_ms(&hooks.delays_us, 0.5),
                                      "p99": signed_ms(&hooks.delays_us, 0.99),
                                      "max": signed_ms(&hooks.delays_us, 1.0)},
            "exactly_once": hooks.exactly_once(),
            "distinct_webhook_ids": hooks.distinct_ids,
            "duplicates": hooks.duplicates,
            "missing": hooks.missing,
            "unexpected": hooks.unexpected,
            "server_tables": hooks.server_view,
        },
        "long_poll": {
            "rounds": poll.after_answer_us.len(),
            "after_post_answer_ms": {"p50": signed_ms(&poll.after_answer_us, 0.5),
                                     "p99": signed_ms(&poll.after_answer_us, 0.99)},
            "after_post_sent_ms": {"p50": signed_ms(&poll.after_sent_us, 0.5),
                                   "p99": signed_ms(&poll.after_sent_us, 0.99)},
        },
        "post_drafts": {
            "after": after.json(),
            "before": before.as_ref().map(DraftCost::json),
        },
        "total_seconds": elapsed,
    }});
    let out = harness::merge_results(&target_dir, doc)?;
    println!("\nwrote {}", out.display());
    println!("the events benchmark took {elapsed:.0} s (build included)");
    drop(tmp);
    drop(db);
    Ok(())
}
