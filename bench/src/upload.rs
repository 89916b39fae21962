//! Upload benchmark of the real binary: `cargo xtask bench upload [--help]`.
//!
//! 1. builds `fleetdesk` in release mode (skipped when `cargo xtask bench` has just built it);
//! 2. creates a fresh database (dropped at the end) and applies a tenant with one operator
//!    agent and one account;
//! 3. starts `fleetdesk serve` with local storage under a temporary data directory;
//! 4. warm-up: one small chunked upload;
//! 5. uploads a 200 MiB MP4 R times, one after another, each by one client that sends the
//!    chunks in order on one keep-alive HTTP/1.1 connection (as an agent does); then N uploads
//!    at once, one client each;
//! 6. meanwhile samples the server's resident memory (`/proc/<pid>/status`) every 20 ms, and
//!    resets the kernel's peak (`VmHWM`, via `/proc/<pid>/clear_refs`) before each line so
//!    that a spike between two samples is not missed.
//!
//! The file is `crates/media/tests/fixtures/moov_at_end.mp4` with a `free` box inserted
//! after its `ftyp` box, generated piece by piece: the client holds one chunk, never the file.
//! Every upload writes its own marker into the `free` box, so no upload is a duplicate of
//! another (a duplicate would be answered with the existing item and its parts removed).
//!
//! Results go to standard output and, under `uploads`, to `target/bench/results.json`.

use crate::harness::{
    self, CpuShare, CpuTicks, Database, Flags, ServeFlags, Server, TempDir, percentile,
};
use crate::http::{self, Connection, Request, Response, api_request};
use anyhow::{Context, anyhow, bail};
use serde_json::{Value, json};
use std::collections::BTreeMap;
use std::io::{self, BufReader, Read, Write};
use std::net::TcpListener;
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Barrier};
use std::thread;
use std::time::{Duration, Instant};

const HELP: &str = "\
cargo xtask bench upload: chunked video uploads to the release binary, with its memory.

Creates a database fleetdesk_upload_<pid> (dropped at the end), applies a tenant with one
operator agent and one account, starts `fleetdesk serve` with local storage in a temporary
data directory, and uploads a generated MP4 through POST /api/agent/v1/uploads and the
chunk PUTs: R times one upload at a time, then N uploads at once. Prints MB/s (10^6 bytes),
per-chunk p50/p99 latency and the server's resident memory before, at its peak and after;
writes the `uploads` entry of target/bench/results.json.

`cargo xtask bench` runs this benchmark with its defaults after the load benchmark.

USAGE:
    cargo xtask bench upload [OPTIONS]

OPTIONS:
    --mib M             size of the video in MiB (default 200; at most 500)
    --runs R            uploads one after another (default 3)
    --concurrent N      uploads at once in the second line, one client each (default 4; 0: skip)
    --sample-ms S       memory sampling period in milliseconds (default 20)
    --workers W         fleetdesk serve --workers (default: the server's, one per core)
    --db-pool P         fleetdesk serve --db-pool (default: the server's, 16)
    --perf              profile the server with `perf record` during the one-at-a-time line
                        and print where its CPU time went (needs perf)
    --no-build          do not run cargo build; use target/release/fleetdesk as it is
    -h, --help          print this help

ENVIRONMENT:
    FLEETDESK_BENCH_SERVER_URL   PostgreSQL server to create the database on
                                 (default postgres://postgres@127.0.0.1:5432)
";

/// The fixture the video is made from: mdat before moov, so the probe seeks to the end.
const FIXTURE: &str = "crates/media/tests/fixtures/moov_at_end.mp4";
/// The fixture's duration in milliseconds (see the fixtures' generate.sh).
const FIXTURE_DURATION_MS: i64 = 1520;
const MIB: u64 = 1024 * 1024;
/// The targets of the issue.
const TARGET_MB_PER_S: f64 = 100.0;
const TARGET_GROWTH_MIB: f64 = 64.0;

#[derive(Debug, Clone)]
pub(crate) struct Options {
    mib: u64,
    runs: usize,
    concurrent: usize,
    sample: Duration,
    workers: Option<usize>,
    db_pool: Option<usize>,
    build: bool,
    /// Profiles the server with `perf record` during the one-at-a-time line.
    perf: bool,
    server_url: String,
}

impl Options {
    pub(crate) fn defaults(server_url: String) -> Options {
        Options {
            mib: 200,
            runs: 3,
            concurrent: 4,
            sample: Duration::from_millis(20),
            workers: None,
            db_pool: None,
            build: true,
            perf: false,
            server_url,
        }
    }

    /// `None` when help was asked for.
    fn parse(args: &[String]) -> anyhow::Result<Option<Options>> {
        let mut o = Options::defaults(harness::server_url());
        let mut flags = Flags::new(args);
        while let Some(flag) = flags.next_flag() {
            let flag = flag.as_str();
            match flag {
                "-h" | "--help" => return Ok(None),
                "--mib" => o.mib = flags.num(flag)?,
                "--runs" => o.runs = flags.num(flag)?,
                "--concurrent" => o.concurrent = flags.num(flag)?,
                "--sample-ms" => o.sample = Duration::from_millis(flags.num(flag)?),
                "--workers" => o.workers = Some(flags.num(flag)?),
                "--db-pool" => o.db_pool = Some(flags.num(flag)?),
                "--no-build" => o.build = false,
                "--perf" => o.perf = true,
                other => bail!("unknown option `{other}`; see cargo xtask bench upload --help"),
            }
        }
        // The server takes videos over 4 MB in chunks, up to 500 MB (decimal).
        if o.mib < 5 || o.mib * MIB > 500_000_000 {
            bail!("--mib must be between 5 and 476 (the server takes chunked videos up to 500 MB)");
        }
        if o.runs == 0 || o.sample.is_zero() {
            bail!("--runs and --sample-ms must be at least 1");
        }
        Ok(Some(o))
    }
}

pub fn main(args: &[String]) -> anyhow::Result<()> {
    let Some(opts) = Options::parse(args)? else {
        print!("{HELP}");
        return Ok(());
    };
    let (root, target_dir) = harness::workspace_dirs()?;
    let bin = harness::build(&root, &target_dir, opts.build)?;
    run(&opts, &bin, &target_dir)
}

/// Runs the benchmark against the binary `bin`.
pub(crate) fn run(opts: &Options, bin: &Path, target_dir: &Path) -> anyhow::Result<()> {
    let started = Instant::now();
    let (root, _) = harness::workspace_dirs()?;
    let fixture_path = root.join(FIXTURE);
    let fixture = std::fs::read(&fixture_path)
        .with_context(|| format!("reading {}", fixture_path.display()))?;
    let file_bytes = opts.mib * MIB;

    let tmp = TempDir::create_named("upload")?;
    let db = Database::create_named(&opts.server_url, "upload")?;
    let machine = harness::machine(&opts.server_url);
    println!("upload benchmark");
    harness::print_machine(&machine);
    let storage = Storage::of(&tmp.path);
    println!(
        "storage: local file system under {} ({}, no fsync: object_store's LocalFileSystem default)",
        tmp.path.display(),
        storage.filesystem
    );
    println!("database: {} (dropped at the end)", db.name);

    let keys = harness::apply_tenant(bin, &db.url, &tmp.path, 1, 1)?;
    let log = tmp.path.join("serve.log");
    let flags = ServeFlags {
        workers: opts.workers,
        db_pool: opts.db_pool,
        json_log: true,
        local_webhooks: false,
        embeddings_url: None,
    };
    let server = Server::start(bin, &db.url, &tmp.path, &flags, &log)?;
    let pid = server.child.id();
    println!(
        "server: fleetdesk listening on http://{} (pid {pid})",
        server.addr
    );
    let target = Arc::new(Target {
        addr: server.addr.clone(),
        key: keys[0].clone(),
        code: harness::account_code(0),
        fixture,
        tag: format!("{}-{}", std::process::id(), harness::unix_millis()),
        log,
    });

    let rss_at_start = read_status(pid).map(|s| s.rss_kb);
    let warm_bytes = 4 * CHUNK_BYTES;
    let warm = upload(&target, &target.video(warm_bytes, "warm-up")?)
        .context("the warm-up upload failed")?;
    thread::sleep(Duration::from_millis(500));
    let baseline = read_status(pid).context("reading the server's /proc status")?;
    println!(
        "warm-up: one upload of {} MiB ({} chunks) in {:.2} s; server RSS {} at start, {} after warm-up",
        warm_bytes / MIB,
        warm.chunk_us.len(),
        warm.seconds(),
        rss_at_start.map_or("n/a".into(), mib),
        mib(baseline.rss_kb),
    );

    let ceiling = client_ceiling(&target, file_bytes)?;
    println!(
        "client ceiling: the same client sends the {} MiB to a sink that discards them: {:.0} MB/s",
        opts.mib, ceiling
    );

    let mut lines = Vec::new();
    print!(
        "running {} upload(s) of {} MiB one after another... ",
        opts.runs, opts.mib
    );
    io::stdout().flush().ok();
    let line = measure(&target, pid, opts, Line::Sequential, file_bytes)?;
    println!("{:.1} s", line.seconds);
    lines.push(line);
    if opts.concurrent > 0 {
        print!(
            "running {} uploads of {} MiB at once... ",
            opts.concurrent, opts.mib
        );
        io::stdout().flush().ok();
        let line = measure(&target, pid, opts, Line::Concurrent, file_bytes)?;
        println!("{:.1} s", line.seconds);
        lines.push(line);
    }
    let checked = check_media(&target, &lines[0].media_ids[0], file_bytes)?;
    drop(server);

    print_report(opts, file_bytes, &baseline, &lines);
    println!("check: {checked}");

    let doc = json!({
        "uploads": {
            "measured_at": utc_now(),
            "machine": machine.json(),
            "storage": storage.json(&tmp.path),
            "options": {
                "file_bytes": file_bytes,
                "chunk_bytes": CHUNK_BYTES,
                "chunks": file_bytes.div_ceil(CHUNK_BYTES),
                "runs": opts.runs,
                "concurrent": opts.concurrent,
                "sample_ms": opts.sample.as_millis() as u64,
                "workers": opts.workers,
                "db_pool": opts.db_pool,
                "file": format!("{FIXTURE} with a free box after ftyp"),
            },
            "units": "MB = 10^6 bytes (throughput); memory in MiB of VmRSS",
            "targets": {"throughput_mb_per_s": TARGET_MB_PER_S, "rss_growth_mib": TARGET_GROWTH_MIB},
            "rss_mib": {
                "at_start": rss_at_start.map(to_mib),
                "after_warmup": to_mib(baseline.rss_kb),
            },
            "warmup": {"file_bytes": warm_bytes, "seconds": warm.seconds()},
            "client_ceiling_mb_per_s": ceiling,
            "lines": lines.iter().map(LineResult::json).collect::<Vec<_>>(),
            "media_check": checked,
            "total_seconds": started.elapsed().as_secs_f64(),
        }
    });
    let out = harness::merge_results(target_dir, doc)?;
    println!("\nwrote {}", out.display());
    println!(
        "the upload benchmark took {:.0} s",
        started.elapsed().as_secs_f64()
    );
    drop(tmp);
    drop(db);
    Ok(())
}

// ---------------------------------------------------------------------------------------------
// The video

/// What the server expects of every chunk but the last (`chunk_bytes` in the answer to
/// POST /uploads); checked against the answer.
const CHUNK_BYTES: u64 = 3_145_728;

/// An MP4 of `len` bytes made from a small one by a `free` box after its `ftyp` box; read piece
/// by piece, never held whole.
struct Video {
    /// `ftyp`, the `free` box header and a marker at the start of its body.
    head: Vec<u8>,
    /// The rest of the small MP4 (`mdat`, `moov`), at the end of the file.
    tail: Vec<u8>,
    len: u64,
}

impl Video {
    fn new(mp4: &[u8], len: u64, marker: &str) -> anyhow::Result<Video> {
        if mp4.len() < 8 || &mp4[4..8] != b"ftyp" {
            bail!("the fixture does not start with an ftyp box");
        }
        let ftyp = u32::from_be_bytes([mp4[0], mp4[1], mp4[2], mp4[3]]) as usize;
        if ftyp < 8 || ftyp > mp4.len() {
            bail!("the fixture's ftyp box has a bad size");
        }
        let free = len
            .checked_sub(mp4.len() as u64)
            .filter(|&n| n >= 8 + marker.len() as u64)
            .and_then(|n| u32::try_from(n).ok())
            .ok_or_else(|| anyhow!("a video of {len} bytes cannot be made from the fixture"))?;
        let mut head = mp4[..ftyp].to_vec();
        head.extend_from_slice(&free.to_be_bytes());
        head.extend_from_slice(b"free");
        head.extend_from_slice(marker.as_bytes());
        Ok(Video {
            head,
            tail: mp4[ftyp..].to_vec(),
            len,
        })
    }

    /// Fills `buf` with the bytes from `offset` on.
    fn read_at(&self, offset: u64, buf: &mut [u8]) {
        buf.fill(0);
        copy_overlap(buf, offset, &self.head, 0);
        copy_overlap(buf, offset, &self.tail, self.len - self.tail.len() as u64);
    }
}

/// Copies into `buf` (which holds the bytes from `at` on) the part of `src` (which sits at
/// `src_at`) that falls inside it.
fn copy_overlap(buf: &mut [u8], at: u64, src: &[u8], src_at: u64) {
    let start = at.max(src_at);
    let end = (at + buf.len() as u64).min(src_at + src.len() as u64);
    if start < end {
        buf[(start - at) as usize..(end - at) as usize]
            .copy_from_slice(&src[(start - src_at) as usize..(end - src_at) as usize]);
    }
}

// ---------------------------------------------------------------------------------------------
// HTTP

/// How long a client waits for an answer (the last chunk's answer waits for the probe).
const CLIENT_TIMEOUT: Duration = Duration::from_secs(120);

/// The path and query of an absolute `http://host/...` URL.
fn url_path(url: &str) -> anyhow::Result<&str> {
    let rest = url
        .split_once("://")
        .map(|(_, r)| r)
        .ok_or_else(|| anyhow!("`{url}` is not an absolute URL"))?;
    rest.find('/')
        .map(|i| &rest[i..])
        .ok_or_else(|| anyhow!("`{url}` has no path"))
}

// ---------------------------------------------------------------------------------------------
// One upload

struct Target {
    addr: String,
    key: String,
    code: String,
    fixture: Vec<u8>,
    /// Makes the markers unique to this run.
    tag: String,
    log: std::path::PathBuf,
}

impl Target {
    fn video(&self, len: u64, name: &str) -> anyhow::Result<Video> {
        Video::new(
            &self.fixture,
            len,
            &format!("fleetdesk upload bench {} {name}", self.tag),
        )
    }
}

struct UploadRun {
    started: Instant,
    ended: Instant,
    create_us: u64,
    /// Each chunk's latency in order: from the first byte written to the whole answer read.
    chunk_us: Vec<u64>,
    /// `X-Db-Round-Trips` of each chunk's answer.
    statements: Vec<u32>,
    /// Time spent making the chunks' bytes (client side, inside the wall-clock time).
    generate_us: u64,
    media_id: String,
    connects: u32,
}

impl UploadRun {
    fn seconds(&self) -> f64 {
        self.ended.duration_since(self.started).as_secs_f64()
    }
}

fn answer_json(r: &Response, what: &str, want: u16) -> anyhow::Result<Value> {
    if r.status != want {
        bail!(
            "{what} answered {} (expected {want}): {}",
            r.status,
            harness::excerpt(&r.body)
        );
    }
    serde_json::from_slice(&r.body).with_context(|| format!("{what}: the answer is not JSON"))
}

/// POST /uploads, then every chunk in order on the same connection.
fn upload(t: &Target, video: &Video) -> anyhow::Result<UploadRun> {
    let mut conn = Connection::new(&t.addr, CLIENT_TIMEOUT);
    let body = json!({"code": t.code, "mime_type": "video/mp4", "bytes": video.len}).to_string();
    let create = api_request(
        &t.addr,
        "POST",
        "/api/agent/v1/uploads",
        &t.key,
        None,
        Some(&body),
    );
    let started = Instant::now();
    let created = answer_json(&conn.send(&create)?, "POST /api/agent/v1/uploads", 201)?;
    let create_us = started.elapsed().as_micros() as u64;
    if created["mode"] != "chunked" || created["chunk_bytes"] != CHUNK_BYTES {
        bail!("POST /api/agent/v1/uploads did not plan chunks of {CHUNK_BYTES} bytes: {created}");
    }
    let chunks = created["chunks"].as_u64().unwrap_or(0);
    if chunks != video.len.div_ceil(CHUNK_BYTES) {
        bail!(
            "POST /api/agent/v1/uploads planned {chunks} chunks for {} bytes",
            video.len
        );
    }
    let chunk_url = created["chunk_url"]
        .as_str()
        .context("the upload has no chunk_url")?;
    let path = url_path(chunk_url)?;

    let mut buf = vec![0u8; CHUNK_BYTES as usize];
    let mut chunk_us = Vec::with_capacity(chunks as usize);
    let mut statements = Vec::with_capacity(chunks as usize);
    let mut generate_us = 0;
    let mut media_id = None;
    for n in 0..chunks {
        let offset = n * CHUNK_BYTES;
        let piece = &mut buf[..(video.len - offset).min(CHUNK_BYTES) as usize];
        let g = Instant::now();
        video.read_at(offset, piece);
        generate_us += g.elapsed().as_micros() as u64;
        let put = Request::builder("PUT", &format!("{path}{n}"), &t.addr)
            .body("application/octet-stream", piece);
        let t0 = Instant::now();
        let r = conn.send(&put)?;
        chunk_us.push(t0.elapsed().as_micros() as u64);
        statements.extend(r.round_trips);
        let what = format!("PUT chunk {n} of {chunks}");
        let v = answer_json(&r, &what, 200)?;
        let last = n + 1 == chunks;
        if v["done"] != last || (!last && v["next_chunk"] != n + 1) {
            bail!("{what}: unexpected progress {v}");
        }
        if last {
            media_id = v["media_id"].as_str().map(str::to_owned);
        }
    }
    Ok(UploadRun {
        started,
        ended: Instant::now(),
        create_us,
        chunk_us,
        statements,
        generate_us,
        media_id: media_id.context("the last chunk answered no media_id")?,
        connects: conn.connects(),
    })
}

/// MB/s of the same client against a sink in this process that reads each PUT and answers a
/// tiny 200: what the client and the loopback allow on these cores, without the server.
fn client_ceiling(t: &Target, len: u64) -> anyhow::Result<f64> {
    let listener = TcpListener::bind("127.0.0.1:0").context("binding the sink")?;
    let addr = listener.local_addr()?.to_string();
    let sink = thread::spawn(move || -> io::Result<()> {
        let (stream, _) = listener.accept()?;
        let mut reader = BufReader::with_capacity(256 * 1024, stream.try_clone()?);
        let mut writer = stream;
        let mut scratch = vec![0u8; 256 * 1024];
        while let Some(length) = http::read_request_head(&mut reader)? {
            let mut left = length;
            while left > 0 {
                let n = reader.read(&mut scratch[..left.min(256 * 1024) as usize])?;
                if n == 0 {
                    return Ok(());
                }
                left -= n as u64;
            }
            writer.write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n{}")?;
        }
        Ok(())
    });
    let video = t.video(len, "ceiling")?;
    let mut conn = Connection::new(&addr, CLIENT_TIMEOUT);
    let mut buf = vec![0u8; CHUNK_BYTES as usize];
    let started = Instant::now();
    for n in 0..len.div_ceil(CHUNK_BYTES) {
        let offset = n * CHUNK_BYTES;
        let piece = &mut buf[..(len - offset).min(CHUNK_BYTES) as usize];
        video.read_at(offset, piece);
        let put = Request::builder("PUT", &format!("/sink?n={n}"), &addr)
            .body("application/octet-stream", piece);
        let r = conn.send(&put)?;
        if r.status != 200 {
            bail!("the sink answered {}", r.status);
        }
    }
    let seconds = started.elapsed().as_secs_f64();
    drop(conn);
    sink.join()
        .map_err(|_| anyhow!("the sink thread panicked"))?
        .context("the sink failed")?;
    Ok(len as f64 / seconds / 1e6)
}

/// Lists the media and checks the first measured upload: its size and the duration the
/// server read from the container.
fn check_media(t: &Target, media_id: &str, len: u64) -> anyhow::Result<String> {
    let mut conn = Connection::new(&t.addr, CLIENT_TIMEOUT);
    let list = api_request(
        &t.addr,
        "GET",
        "/api/agent/v1/media?kind=video&limit=100",
        &t.key,
        None,
        None,
    );
    let v = answer_json(&conn.send(&list)?, "GET /api/agent/v1/media", 200)?;
    let item = v["media"]
        .as_array()
        .and_then(|a| a.iter().find(|m| m["id"] == media_id))
        .with_context(|| format!("media {media_id} is not in the library"))?;
    if item["bytes"] != len || item["duration_ms"] != FIXTURE_DURATION_MS {
        bail!(
            "media {media_id} is stored as {item}; expected {len} bytes and {FIXTURE_DURATION_MS} ms"
        );
    }
    Ok(format!(
        "media {media_id}: {} bytes, {} ms, {}x{} as the server read them from the container",
        item["bytes"], item["duration_ms"], item["width"], item["height"]
    ))
}

// ---------------------------------------------------------------------------------------------
// Memory of the server

#[derive(Debug, Clone, Copy)]
struct Status {
    /// VmRSS
    rss_kb: u64,
    /// RssAnon: the heap and stacks, without the mapped binary.
    anon_kb: u64,
    /// VmHWM: the kernel's peak of VmRSS since the last reset.
    hwm_kb: u64,
}

fn read_status(pid: u32) -> Option<Status> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let field = |name: &str| {
        text.lines()
            .find_map(|l| l.strip_prefix(name))
            .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
    };
    Some(Status {
        rss_kb: field("VmRSS:")?,
        anon_kb: field("RssAnon:").unwrap_or(0),
        hwm_kb: field("VmHWM:").unwrap_or(0),
    })
}

/// Resets VmHWM to the current RSS; false when the kernel refuses.
fn reset_peak(pid: u32) -> bool {
    std::fs::write(format!("/proc/{pid}/clear_refs"), "5").is_ok()
}

struct Sampler {
    stop: Arc<AtomicBool>,
    handle: thread::JoinHandle<Vec<Status>>,
}

impl Sampler {
    fn start(pid: u32, every: Duration) -> Sampler {
        let stop = Arc::new(AtomicBool::new(false));
        let flag = stop.clone();
        let handle = thread::spawn(move || {
            let mut samples = Vec::new();
            let mut next = Instant::now();
            while !flag.load(Ordering::Relaxed) {
                if let Some(s) = read_status(pid) {
                    samples.push(s);
                }
                next += every;
                thread::sleep(next.saturating_duration_since(Instant::now()));
            }
            samples
        });
        Sampler { stop, handle }
    }

    fn finish(self) -> Vec<Status> {
        self.stop.store(true, Ordering::Relaxed);
        self.handle.join().unwrap_or_default()
    }
}

struct Memory {
    before_kb: u64,
    /// The largest sampled VmRSS.
    peak_kb: u64,
    /// RssAnon of that sample.
    peak_anon_kb: u64,
    /// VmHWM after the line, reset before it; `None` when the reset was refused.
    kernel_peak_kb: Option<u64>,
    /// One second after the line.
    after_kb: u64,
    samples: usize,
}

impl Memory {
    /// The larger of the sampled and the kernel's peak.
    fn peak(&self) -> u64 {
        self.peak_kb.max(self.kernel_peak_kb.unwrap_or(0))
    }

    fn growth_kb(&self) -> u64 {
        self.peak().saturating_sub(self.before_kb)
    }

    fn json(&self) -> Value {
        json!({
            "before": to_mib(self.before_kb),
            "peak_sampled": to_mib(self.peak_kb),
            "peak_sampled_anon": to_mib(self.peak_anon_kb),
            "peak_kernel_vmhwm": self.kernel_peak_kb.map(to_mib),
            "peak": to_mib(self.peak()),
            "growth": to_mib(self.growth_kb()),
            "after_1s": to_mib(self.after_kb),
            "samples": self.samples,
        })
    }
}

fn to_mib(kb: u64) -> f64 {
    (kb as f64 / 1024.0 * 10.0).round() / 10.0
}

fn mib(kb: u64) -> String {
    format!("{:.1} MiB", kb as f64 / 1024.0)
}

// ---------------------------------------------------------------------------------------------
// A line: uploads measured together

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Line {
    /// `runs` uploads one after another, one client.
    Sequential,
    /// `concurrent` uploads at once, one client each.
    Concurrent,
}

impl Line {
    fn id(self) -> &'static str {
        match self {
            Line::Sequential => "one_at_a_time",
            Line::Concurrent => "concurrent",
        }
    }

    /// (clients, uploads per client)
    fn shape(self, opts: &Options) -> (usize, usize) {
        match self {
            Line::Sequential => (1, opts.runs),
            Line::Concurrent => (opts.concurrent, 1),
        }
    }
}

struct LineResult {
    line: Line,
    label: String,
    clients: usize,
    uploads: usize,
    file_bytes: u64,
    seconds: f64,
    /// Each upload's MB/s, create + chunks.
    per_upload: Vec<f64>,
    /// All bytes of the line over its wall-clock time.
    aggregate: f64,
    create_ms: Vec<f64>,
    /// All chunks but the last of each upload (the last also probes and completes).
    chunk_us: Vec<u64>,
    last_chunk_ms: Vec<f64>,
    statements: Vec<u32>,
    /// Server-side `elapsed_ms` of the chunk PUTs, from its log (body reading included).
    server_ms: Vec<u64>,
    generate_ms: f64,
    connects: u32,
    media_ids: Vec<String>,
    memory: Memory,
    cpu: Option<CpuShare>,
    /// The busiest other processes: (name, % of all cores).
    others: Vec<(String, f64)>,
    /// With --perf: the server's top symbols (% of its samples, thread, symbol).
    profile: Option<Vec<(f64, String, String)>>,
}

fn median_f(v: &[f64]) -> f64 {
    let mut v = v.to_vec();
    v.sort_by(f64::total_cmp);
    v.get(v.len() / 2).copied().unwrap_or(0.0)
}

impl LineResult {
    /// The line's throughput: the median upload for one client, all bytes over the wall
    /// clock for several.
    fn throughput(&self) -> f64 {
        if self.clients == 1 {
            median_f(&self.per_upload)
        } else {
            self.aggregate
        }
    }

    fn chunk_ms(&self, p: f64) -> f64 {
        percentile(&self.chunk_us, p) as f64 / 1000.0
    }

    fn server_p(&self, p: f64) -> Option<f64> {
        (!self.server_ms.is_empty()).then(|| percentile(&self.server_ms, p) as f64 / 1000.0)
    }

    fn json(&self) -> Value {
        let mut statements = self.statements.clone();
        statements.sort_unstable();
        let cores = thread::available_parallelism().map_or(1, |n| n.get()) as f64;
        json!({
            "line": self.line.id(),
            "label": self.label,
            "clients": self.clients,
            "uploads": self.uploads,
            "file_bytes": self.file_bytes,
            "seconds": self.seconds,
            "throughput_mb_per_s": self.throughput(),
            "throughput_mib_per_s": self.throughput() * 1e6 / MIB as f64,
            "per_upload_mb_per_s": self.per_upload,
            "aggregate_mb_per_s": self.aggregate,
            "create_ms": self.create_ms,
            "chunk_latency_ms": {
                "chunks": self.chunk_us.len(),
                "p50": self.chunk_ms(0.50),
                "p99": self.chunk_ms(0.99),
                "max": self.chunk_ms(1.0),
                "excludes": "the last chunk of each upload, which also probes the container and completes",
            },
            "last_chunk_ms": self.last_chunk_ms,
            "server_handled_ms": {
                "p50": self.server_p(0.50),
                "p99": self.server_p(0.99),
                "from": "elapsed_ms of the server's `handled` log lines for the chunk PUTs (body reading included)",
            },
            "statements_per_chunk": {
                "median": statements.get(statements.len() / 2),
                "max": statements.last(),
            },
            "client_generate_ms": self.generate_ms,
            "connections": self.connects,
            "rss_mib": self.memory.json(),
            "cpu_percent_of_all_cores": self.cpu.map(|c| json!({
                "cores": cores,
                "machine_busy": c.machine_busy_pct,
                "server": c.server_pct,
                "clients": c.client_pct,
                "postgres": c.postgres_pct,
                "other": c.other_pct,
                "other_processes": self.others.iter().map(|(n, p)| json!({"name": n, "percent": p})).collect::<Vec<_>>(),
            })),
            "server_profile": self.profile.as_ref().map(|p| p.iter().map(|(pct, comm, sym)| json!({
                "percent": pct, "thread": comm, "symbol": sym,
            })).collect::<Vec<_>>()),
            "within_targets": {
                "throughput": self.throughput() >= TARGET_MB_PER_S,
                "rss_growth": (self.memory.growth_kb() as f64) < TARGET_GROWTH_MIB * 1024.0,
            },
        })
    }
}

fn measure(
    t: &Arc<Target>,
    pid: u32,
    opts: &Options,
    line: Line,
    file_bytes: u64,
) -> anyhow::Result<LineResult> {
    let (clients, each) = line.shape(opts);
    let log_from = std::fs::metadata(&t.log).map_or(0, |m| m.len());
    thread::sleep(Duration::from_millis(300));
    let before = read_status(pid).context("reading the server's /proc status")?;
    let hwm_reset = reset_peak(pid);
    let cpu_before = CpuTicks::read(pid);
    let procs_before = process_ticks();
    let profiler = if opts.perf && line == Line::Sequential {
        Some(Profiler::start(pid, &t.log.with_file_name("perf.data"))?)
    } else {
        None
    };
    let sampler = Sampler::start(pid, opts.sample);
    let barrier = Arc::new(Barrier::new(clients));
    let handles: Vec<_> = (0..clients)
        .map(|c| {
            let (t, barrier) = (t.clone(), barrier.clone());
            let line_id = line.id();
            thread::Builder::new()
                .name(format!("upload-client-{c}"))
                .spawn(move || -> anyhow::Result<Vec<UploadRun>> {
                    let videos = (0..each)
                        .map(|i| t.video(file_bytes, &format!("{line_id} {c}.{i}")))
                        .collect::<anyhow::Result<Vec<_>>>()?;
                    barrier.wait();
                    videos.iter().map(|v| upload(&t, v)).collect()
                })
        })
        .collect::<Result<_, _>>()
        .context("starting client threads")?;
    let mut runs = Vec::new();
    let mut failure = None;
    for h in handles {
        match h.join().map_err(|_| anyhow!("a client thread panicked"))? {
            Ok(r) => runs.extend(r),
            Err(e) => failure = Some(e),
        }
    }
    let samples = sampler.finish();
    let cpu_after = CpuTicks::read(pid);
    let others = busy_others(&procs_before, &process_ticks(), pid);
    let profile = profiler.map(Profiler::finish).transpose()?;
    let kernel_peak = read_status(pid).filter(|_| hwm_reset).map(|s| s.hwm_kb);
    if let Some(e) = failure {
        return Err(e.context(format!("an upload of the {} line failed", line.id())));
    }
    thread::sleep(Duration::from_secs(1));
    let after = read_status(pid).map_or(0, |s| s.rss_kb);

    let started = runs.iter().map(|r| r.started).min().context("no uploads")?;
    let ended = runs.iter().map(|r| r.ended).max().context("no uploads")?;
    let seconds = ended.duration_since(started).as_secs_f64();
    let mut chunk_us: Vec<u64> = runs
        .iter()
        .flat_map(|r| r.chunk_us[..r.chunk_us.len() - 1].iter().copied())
        .collect();
    chunk_us.sort_unstable();
    let peak = samples.iter().max_by_key(|s| s.rss_kb).copied();
    let chunks: u64 = runs.iter().map(|r| r.chunk_us.len() as u64).sum();
    Ok(LineResult {
        line,
        label: match line {
            Line::Sequential => format!("1 client, {} upload(s) in a row", runs.len()),
            Line::Concurrent => format!("{clients} clients, 1 upload each, at once"),
        },
        clients,
        uploads: runs.len(),
        file_bytes,
        seconds,
        per_upload: runs
            .iter()
            .map(|r| file_bytes as f64 / r.seconds() / 1e6)
            .collect(),
        aggregate: file_bytes as f64 * runs.len() as f64 / seconds / 1e6,
        create_ms: runs.iter().map(|r| r.create_us as f64 / 1000.0).collect(),
        chunk_us,
        last_chunk_ms: runs
            .iter()
            .filter_map(|r| r.chunk_us.last())
            .map(|&us| us as f64 / 1000.0)
            .collect(),
        statements: runs.iter().flat_map(|r| r.statements.clone()).collect(),
        server_ms: server_chunk_times(&t.log, log_from),
        generate_ms: runs.iter().map(|r| r.generate_us as f64 / 1000.0).sum(),
        connects: runs.iter().map(|r| r.connects).sum(),
        media_ids: runs.iter().map(|r| r.media_id.clone()).collect(),
        memory: Memory {
            before_kb: before.rss_kb,
            peak_kb: peak.map_or(before.rss_kb, |s| s.rss_kb),
            peak_anon_kb: peak.map_or(before.anon_kb, |s| s.anon_kb),
            kernel_peak_kb: kernel_peak,
            after_kb: after,
            samples: samples.len(),
        },
        cpu: cpu_before
            .zip(cpu_after)
            .map(|(a, b)| b.share_since(&a, chunks)),
        others,
        profile,
    })
}

/// CPU ticks of the whole machine and of every process on it.
struct Procs {
    machine_total: u64,
    /// irq + softirq, and steal (time the hypervisor gave to others), of the whole machine.
    irq: u64,
    steal: u64,
    /// pid -> (name, utime + stime)
    by_pid: BTreeMap<u32, (String, u64)>,
}

fn process_ticks() -> Procs {
    // user nice system idle iowait irq softirq steal
    let cpu: Vec<u64> = std::fs::read_to_string("/proc/stat")
        .ok()
        .and_then(|s| {
            s.lines().next().map(|l| {
                l.split_whitespace()
                    .skip(1)
                    .take(8)
                    .filter_map(|v| v.parse::<u64>().ok())
                    .collect()
            })
        })
        .unwrap_or_default();
    let at = |i: usize| cpu.get(i).copied().unwrap_or(0);
    let by_pid = std::fs::read_dir("/proc")
        .map(|dir| {
            dir.filter_map(Result::ok)
                .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
                .filter_map(|pid| {
                    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
                    let (open, close) = (stat.find('(')?, stat.rfind(')')?);
                    let f: Vec<&str> = stat[close + 1..].split_whitespace().collect();
                    let ticks = f.get(11)?.parse::<u64>().ok()? + f.get(12)?.parse::<u64>().ok()?;
                    Some((pid, (stat[open + 1..close].to_owned(), ticks)))
                })
                .collect()
        })
        .unwrap_or_default();
    Procs {
        machine_total: cpu.iter().sum(),
        irq: at(5) + at(6),
        steal: at(7),
        by_pid,
    }
}

/// The busiest processes other than the server, this process and PostgreSQL between two
/// snapshots, by name (kernel worker threads together), in % of all cores: the top three
/// above 2%, then irq + softirq and steal when above 2%. Processes that started and exited
/// in between are missed.
fn busy_others(before: &Procs, after: &Procs, server: u32) -> Vec<(String, f64)> {
    let me = std::process::id();
    let total = after
        .machine_total
        .saturating_sub(before.machine_total)
        .max(1) as f64;
    let mut by_name: BTreeMap<String, u64> = BTreeMap::new();
    for (pid, (name, ticks)) in &after.by_pid {
        if *pid == server || *pid == me || name == "postgres" {
            continue;
        }
        let spent = ticks.saturating_sub(before.by_pid.get(pid).map_or(0, |(_, t)| *t));
        let name = match name.split_once('/') {
            Some((kernel, _)) if kernel.starts_with("kworker") => "kworker".to_owned(),
            _ => name.clone(),
        };
        *by_name.entry(name).or_default() += spent;
    }
    let mut busy: Vec<(String, f64)> = by_name
        .into_iter()
        .map(|(name, t)| (name, 100.0 * t as f64 / total))
        .filter(|(_, pct)| *pct >= 2.0)
        .collect();
    busy.sort_by(|a, b| b.1.total_cmp(&a.1));
    busy.truncate(3);
    for (name, ticks) in [
        ("(irq + softirq)", after.irq.saturating_sub(before.irq)),
        ("(steal)", after.steal.saturating_sub(before.steal)),
    ] {
        let pct = 100.0 * ticks as f64 / total;
        if pct >= 2.0 {
            busy.push((name.to_owned(), pct));
        }
    }
    busy
}

/// `perf record` of the server, stopped with SIGINT.
struct Profiler {
    child: std::process::Child,
    data: std::path::PathBuf,
}

impl Profiler {
    fn start(pid: u32, data: &Path) -> anyhow::Result<Profiler> {
        let child = Command::new("perf")
            .args([
                "record",
                "--quiet",
                "-F",
                "999",
                "-g",
                "-p",
                &pid.to_string(),
                "-o",
            ])
            .arg(data)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .context("starting perf record (is perf installed?)")?;
        // perf needs a moment to attach to every thread.
        thread::sleep(Duration::from_millis(500));
        Ok(Profiler {
            child,
            data: data.to_owned(),
        })
    }

    /// Stops the recording and returns the top symbols by self time: (% of the server's
    /// samples, thread name, symbol).
    fn finish(mut self) -> anyhow::Result<Vec<(f64, String, String)>> {
        let _ = Command::new("kill")
            .args(["-INT", &self.child.id().to_string()])
            .status();
        self.child.wait().context("waiting for perf record")?;
        let out = Command::new("perf")
            .args([
                "report",
                "--no-children",
                "--sort",
                "comm,symbol",
                "--stdio",
                "-g",
                "none",
                "-i",
            ])
            .arg(&self.data)
            .stderr(Stdio::null())
            .output()
            .context("running perf report")?;
        let text = String::from_utf8_lossy(&out.stdout);
        Ok(text
            .lines()
            .filter_map(|l| {
                let l = l.trim();
                let (pct, rest) = l.split_once('%')?;
                let pct: f64 = pct.trim().parse().ok()?;
                let mut parts = rest.split_whitespace();
                let comm = parts.next()?.to_owned();
                // The rest: the thread name may hold a space ("actix-server wo"), then
                // [k] or [.] and the symbol.
                let rest: Vec<&str> = parts.collect();
                let at = rest.iter().position(|p| *p == "[k]" || *p == "[.]")?;
                let comm = std::iter::once(comm.as_str())
                    .chain(rest[..at].iter().copied())
                    .collect::<Vec<_>>()
                    .join(" ");
                let kind = if rest[at] == "[k]" { "kernel " } else { "" };
                Some((
                    pct,
                    comm,
                    format!(
                        "{kind}{}",
                        rest[at + 1..]
                            .iter()
                            .filter(|w| **w != "-")
                            .copied()
                            .collect::<Vec<_>>()
                            .join(" ")
                    ),
                ))
            })
            .take(8)
            .collect())
    }
}

/// The server's own time for the chunk PUTs logged after `from` (microseconds, sorted), read
/// from its JSON log: `elapsed_ms` of each `handled` line whose span path ends in /chunks.
fn server_chunk_times(log: &Path, from: u64) -> Vec<u64> {
    let Ok(text) = std::fs::read(log) else {
        return Vec::new();
    };
    let text = String::from_utf8_lossy(text.get(from as usize..).unwrap_or_default());
    let mut out: Vec<u64> = text
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|v| v["fields"]["message"] == "handled")
        .filter(|v| {
            v["span"]["path"]
                .as_str()
                .is_some_and(|p| p.ends_with("/chunks"))
        })
        .filter_map(|v| v["fields"]["elapsed_ms"].as_f64())
        .map(|ms| (ms * 1000.0) as u64)
        .collect();
    out.sort_unstable();
    out
}

// ---------------------------------------------------------------------------------------------
// Report

struct Storage {
    filesystem: String,
}

impl Storage {
    fn of(dir: &Path) -> Storage {
        let filesystem = Command::new("stat")
            .args(["-f", "-c", "%T"])
            .arg(dir)
            .output()
            .ok()
            .filter(|o| o.status.success())
            .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_owned())
            .unwrap_or_else(|| "unknown file system".into());
        Storage { filesystem }
    }

    fn json(&self, dir: &Path) -> Value {
        json!({
            "backend": "local file system (object_store LocalFileSystem, no fsync)",
            "data_dir": dir.display().to_string(),
            "filesystem": self.filesystem,
        })
    }
}

fn print_report(opts: &Options, file_bytes: u64, baseline: &Status, lines: &[LineResult]) {
    println!();
    println!(
        "{} MiB MP4 ({file_bytes} bytes) in {} chunks of {CHUNK_BYTES} bytes; MB = 10^6 bytes; \
         throughput = create + all chunks, wall clock",
        opts.mib,
        file_bytes.div_ceil(CHUNK_BYTES)
    );
    println!(
        "{:<36} {:>8} {:>8} {:>8} {:>8} {:>8} {:>9} {:>10} {:>10} {:>9} {:>10}",
        "line",
        "MB/s",
        "MiB/s",
        "p50 ms",
        "p99 ms",
        "last ms",
        "server p50",
        "RSS before",
        "RSS peak",
        "growth",
        "after 1 s"
    );
    for l in lines {
        let m = &l.memory;
        println!(
            "{:<36} {:>8.1} {:>8.1} {:>8.1} {:>8.1} {:>8.0} {:>9} {:>10} {:>10} {:>9} {:>10}",
            l.label,
            l.throughput(),
            l.throughput() * 1e6 / MIB as f64,
            l.chunk_ms(0.50),
            l.chunk_ms(0.99),
            l.last_chunk_ms.iter().copied().fold(0.0, f64::max),
            l.server_p(0.50).map_or("n/a".into(), |v| format!("{v:.1}")),
            mib(m.before_kb),
            mib(m.peak()),
            mib(m.growth_kb()),
            mib(m.after_kb),
        );
    }
    println!(
        "p50/p99 = chunk latency at the client (write + answer), all chunks but each upload's last;\n\
         last = the slowest last chunk (it also probes the container and completes the upload);\n\
         server p50 = the server's own elapsed_ms for a chunk PUT (from its log).\n\
         RSS peak = the larger of VmRSS sampled every {} ms and the kernel's VmHWM (reset before each line);\n\
         the server's RSS after warm-up was {}.",
        opts.sample.as_millis(),
        mib(baseline.rss_kb)
    );
    for l in lines {
        let per: Vec<String> = l.per_upload.iter().map(|v| format!("{v:.0}")).collect();
        let create: Vec<String> = l.create_ms.iter().map(|v| format!("{v:.1}")).collect();
        let mut statements = l.statements.clone();
        statements.sort_unstable();
        println!(
            "{}: per upload {} MB/s; all bytes over the wall clock {:.0} MB/s in {:.1} s; create {} ms; \
             {} SQL statement(s) per chunk (median); client spent {:.0} ms making bytes",
            l.label,
            per.join(", "),
            l.aggregate,
            l.seconds,
            create.join(", "),
            statements
                .get(statements.len() / 2)
                .map_or("?".into(), u32::to_string),
            l.generate_ms,
        );
        if let Some(c) = l.cpu {
            println!(
                "  CPU (% of all cores): machine {:.0}%, server {:.0}%, client {:.0}%, postgres {:.0}%, other {:.0}%",
                c.machine_busy_pct, c.server_pct, c.client_pct, c.postgres_pct, c.other_pct
            );
        }
        println!(
            "  memory: {} samples, sampled peak {} (anon {}), kernel peak {}",
            l.memory.samples,
            mib(l.memory.peak_kb),
            mib(l.memory.peak_anon_kb),
            l.memory.kernel_peak_kb.map_or("n/a".into(), mib)
        );
        if l.connects as usize > l.uploads {
            println!(
                "  note: {} connections for {} uploads (the server closed some)",
                l.connects, l.uploads
            );
        }
        if !l.others.is_empty() {
            let others: Vec<String> = l
                .others
                .iter()
                .map(|(name, pct)| format!("{name} {pct:.0}%"))
                .collect();
            println!(
                "  other busy processes (% of all cores; short-lived ones are missed): {}",
                others.join(", ")
            );
        }
        if let Some(p) = &l.profile {
            println!("  where the server's CPU time went (perf, self time, % of its samples):");
            for (pct, comm, sym) in p {
                println!("    {pct:5.1}%  {comm:<16} {sym}");
            }
        }
        let throughput_ok = l.throughput() >= TARGET_MB_PER_S;
        let memory_ok = (l.memory.growth_kb() as f64) < TARGET_GROWTH_MIB * 1024.0;
        println!(
            "  targets: >= {TARGET_MB_PER_S:.0} MB/s {}; RSS growth < {TARGET_GROWTH_MIB:.0} MiB {}",
            if throughput_ok { "met" } else { "MISSED" },
            if memory_ok { "met" } else { "MISSED" },
        );
    }
}

/// The current UTC time as `YYYY-MM-DDTHH:MM:SSZ`.
fn utc_now() -> String {
    harness::iso_utc(jiff::Timestamp::now().as_second())
}

#[cfg(test)]
mod tests {
    use super::*;

    const MP4: &[u8] = include_bytes!("../../crates/media/tests/fixtures/moov_at_end.mp4");

    fn whole(v: &Video, piece: usize) -> Vec<u8> {
        let mut out = Vec::new();
        let mut buf = vec![0; piece];
        let mut at = 0;
        while at < v.len {
            let n = (v.len - at).min(piece as u64) as usize;
            v.read_at(at, &mut buf[..n]);
            out.extend_from_slice(&buf[..n]);
            at += n as u64;
        }
        out
    }

    #[test]
    fn the_video_is_the_fixture_with_a_free_box_after_ftyp() {
        let len = 3 * 1024 * 1024 + 17;
        let v = Video::new(MP4, len, "marker").unwrap();
        // Pieces that cut the head, the zeros and the tail anywhere give the same bytes.
        let a = whole(&v, 1000);
        assert_eq!(a, whole(&v, 65_536));
        assert_eq!(a.len() as u64, len);
        // The top-level boxes chain exactly to the end: ftyp, free, then the fixture's own.
        let mut at = 0;
        let mut kinds = Vec::new();
        while at < a.len() {
            let size = u32::from_be_bytes(a[at..at + 4].try_into().unwrap()) as usize;
            kinds.push(String::from_utf8_lossy(&a[at + 4..at + 8]).into_owned());
            at += size;
        }
        assert_eq!(at, a.len());
        assert_eq!(kinds[..2], ["ftyp", "free"]);
        assert!(kinds.contains(&"moov".to_owned()) && kinds.contains(&"mdat".to_owned()));
        assert_eq!(&a[a.len() - (MP4.len() - 32)..], &MP4[32..]);
        assert!(Video::new(MP4, MP4.len() as u64 + 4, "marker").is_err());
    }

    #[test]
    fn paths_of_absolute_urls() {
        assert_eq!(
            url_path("http://127.0.0.1:1/api/x/chunks?t=a&n=").unwrap(),
            "/api/x/chunks?t=a&n="
        );
        assert!(url_path("/relative").is_err());
    }
}
