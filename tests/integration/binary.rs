//! The real `fleetdesk` binary, end to end: `serve` (with DATABASE_URL and with its own local
//! PostgreSQL), graceful shutdown on SIGTERM, restarts, `migrate` and `admin apply`.
//!
//! The tests belong to another package than the binary, so `CARGO_BIN_EXE_fleetdesk` does not
//! exist here: [`fleetdesk_bin`] runs `cargo build -p fleetdesk --bin fleetdesk` once per test
//! process (a no-op when it is fresh) so the binary tested is never stale, and falls back to the
//! `fleetdesk` next to the test executable when cargo cannot be run.

use fleetdesk_pg::testing::TestDb;
use fleetdesk_tests::Client;
use serde_json::Value;
use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::mpsc::{Receiver, TryRecvError};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

const LISTENING: &str = "fleetdesk listening on http://";
const DEMO_BANNER: &str = "Loaded the demo tenant";

// ---------------------------------------------------------------------------------------------
// Locating (and building) the binary

/// `target/<profile>` of the running test executable (`target/<profile>/deps/integration-…`).
fn profile_dir() -> Option<PathBuf> {
    let exe = std::env::current_exe().ok()?;
    let mut dir = exe.parent()?;
    if dir.file_name().is_some_and(|n| n == "deps") {
        dir = dir.parent()?;
    }
    Some(dir.to_path_buf())
}

/// Why no freshly built binary: cargo could not be run at all, or the build failed.
enum BuildError {
    NoCargo(String),
    Failed(String),
}

fn build_binary() -> Result<PathBuf, BuildError> {
    let cargo = std::env::var("CARGO")
        .ok()
        .or_else(|| option_env!("CARGO").map(str::to_owned))
        .unwrap_or_else(|| "cargo".to_owned());
    let mut cmd = Command::new(&cargo);
    cmd.args([
        "build",
        "-p",
        "fleetdesk",
        "--bin",
        "fleetdesk",
        "--message-format=json-render-diagnostics",
    ]);
    match profile_dir()
        .as_deref()
        .and_then(Path::file_name)
        .and_then(|n| n.to_str())
    {
        Some("debug") | None => {}
        Some("release") => {
            cmd.arg("--release");
        }
        Some(other) => {
            cmd.args(["--profile", other]);
        }
    }
    cmd.current_dir(env!("CARGO_MANIFEST_DIR"))
        .stdin(Stdio::null())
        .stderr(Stdio::piped())
        .stdout(Stdio::piped());
    let out = cmd
        .output()
        .map_err(|e| BuildError::NoCargo(format!("could not run {cargo}: {e}")))?;
    if !out.status.success() {
        return Err(BuildError::Failed(format!(
            "`cargo build -p fleetdesk` failed ({}):\n{}",
            out.status,
            String::from_utf8_lossy(&out.stderr)
        )));
    }
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|m| m["reason"] == "compiler-artifact" && m["target"]["name"] == "fleetdesk")
        .find_map(|m| m["executable"].as_str().map(PathBuf::from))
        .ok_or_else(|| {
            BuildError::Failed("`cargo build -p fleetdesk` reported no fleetdesk executable".into())
        })
}

/// The `fleetdesk` binary of this build, built first when needed.
fn fleetdesk_bin() -> PathBuf {
    static BIN: OnceLock<PathBuf> = OnceLock::new();
    BIN.get_or_init(|| {
        let beside = profile_dir().map(|d| d.join("fleetdesk"));
        match build_binary() {
            Ok(path) if path.is_file() => path,
            Ok(path) => panic!("cargo built {} but it is not there", path.display()),
            // A build that fails is a failure: never test a stale binary instead.
            Err(BuildError::Failed(e)) => panic!("{e}"),
            Err(BuildError::NoCargo(e)) => match beside {
                Some(path) if path.is_file() => {
                    eprintln!("warning: {e}; testing the existing {}", path.display());
                    path
                }
                _ => panic!(
                    "no fleetdesk binary: {e}; build it with `cargo build -p fleetdesk` (expected it at {})",
                    beside.map(|p| p.display().to_string()).unwrap_or_default()
                ),
            },
        }
    })
    .clone()
}

/// A `fleetdesk` command with a clean environment: none of the settings of the machine leak in.
fn fleetdesk(args: &[&str]) -> Command {
    let mut cmd = Command::new(fleetdesk_bin());
    cmd.args(args);
    for var in [
        "DATABASE_URL",
        "FLEETDESK_BIND",
        "FLEETDESK_BASE_URL",
        "FLEETDESK_DATA_DIR",
        "FLEETDESK_NO_DEMO",
        "FLEETDESK_S3_BUCKET",
        "FLEETDESK_S3_ENDPOINT",
        "FLEETDESK_LOG_FORMAT",
        "FLEETDESK_RATE_LIMIT_PER_MINUTE",
        "FLEETDESK_EXPOSE_ROUND_TRIPS",
    ] {
        cmd.env_remove(var);
    }
    cmd.env("FLEETDESK_WORKERS", "2")
        .env("FLEETDESK_DB_POOL", "4")
        .stdin(Stdio::null());
    cmd
}

/// A fresh directory under the temp dir.
fn temp_dir(tag: &str) -> PathBuf {
    fresh_dir(&std::env::temp_dir(), tag)
}

fn fresh_dir(parent: &Path, tag: &str) -> PathBuf {
    let id = uuid::Uuid::new_v4().simple().to_string();
    let dir = parent.join(format!("fd{tag}-{}", &id[..10]));
    std::fs::create_dir_all(&dir).expect("create a temp dir");
    dir
}

/// Removes a temp dir when dropped.
struct TempDir(PathBuf);

impl TempDir {
    fn new(tag: &str) -> TempDir {
        TempDir(temp_dir(tag))
    }

    fn path(&self) -> &Path {
        &self.0
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

// ---------------------------------------------------------------------------------------------
// A running `fleetdesk serve`

/// A child process, killed when dropped (a failing test leaves nothing running).
struct Proc {
    child: Child,
    lines: Receiver<String>,
    stdout: Arc<Mutex<String>>,
    stderr: Arc<Mutex<String>>,
}

impl Proc {
    fn spawn(mut cmd: Command) -> Proc {
        cmd.stdout(Stdio::piped()).stderr(Stdio::piped());
        let mut child = cmd
            .spawn()
            .unwrap_or_else(|e| panic!("spawning {cmd:?}: {e}"));
        let (tx, lines) = std::sync::mpsc::channel();
        let stdout = Arc::new(Mutex::new(String::new()));
        let stderr = Arc::new(Mutex::new(String::new()));
        let out = child.stdout.take().expect("stdout");
        let sink = stdout.clone();
        std::thread::spawn(move || {
            for line in BufReader::new(out).lines() {
                let Ok(line) = line else { break };
                sink.lock().unwrap().push_str(&format!("{line}\n"));
                let _ = tx.send(line);
            }
        });
        let mut err = child.stderr.take().expect("stderr");
        let sink = stderr.clone();
        std::thread::spawn(move || {
            let mut buf = [0u8; 4096];
            while let Ok(n) = err.read(&mut buf) {
                if n == 0 {
                    break;
                }
                sink.lock()
                    .unwrap()
                    .push_str(&String::from_utf8_lossy(&buf[..n]));
            }
        });
        Proc {
            child,
            lines,
            stdout,
            stderr,
        }
    }

    fn pid(&self) -> u32 {
        self.child.id()
    }

    fn stdout(&self) -> String {
        self.stdout.lock().unwrap().clone()
    }

    /// What the process wrote, for failure messages (the end of stderr).
    fn output(&self) -> String {
        let err = self.stderr.lock().unwrap().clone();
        let tail: String = {
            let start = err.len().saturating_sub(6000);
            let start = (start..err.len())
                .find(|i| err.is_char_boundary(*i))
                .unwrap_or(err.len());
            err[start..].to_owned()
        };
        format!(
            "--- stdout ---\n{}--- stderr (end) ---\n{tail}",
            self.stdout()
        )
    }

    /// Waits for a stdout line starting with `prefix`; returns the rest of the line.
    async fn wait_for_line(&mut self, prefix: &str, timeout: Duration) -> String {
        let deadline = Instant::now() + timeout;
        loop {
            match self.lines.try_recv() {
                Ok(line) => {
                    if let Some(rest) = line.strip_prefix(prefix) {
                        return rest.trim().to_owned();
                    }
                    continue;
                }
                Err(TryRecvError::Disconnected) => {
                    let status = self.wait_exit(Duration::from_secs(5)).await;
                    panic!(
                        "fleetdesk closed stdout ({status:?}) before printing {prefix:?}\n{}",
                        self.output()
                    );
                }
                Err(TryRecvError::Empty) => {}
            }
            if let Ok(Some(status)) = self.child.try_wait() {
                // Let the reader thread pass on what is left before giving up.
                tokio::time::sleep(Duration::from_millis(200)).await;
                while let Ok(line) = self.lines.try_recv() {
                    if let Some(rest) = line.strip_prefix(prefix) {
                        return rest.trim().to_owned();
                    }
                }
                panic!(
                    "fleetdesk exited ({status}) before printing {prefix:?}\n{}",
                    self.output()
                );
            }
            if Instant::now() > deadline {
                panic!(
                    "fleetdesk did not print {prefix:?} within {timeout:?}\n{}",
                    self.output()
                );
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    async fn wait_exit(&mut self, timeout: Duration) -> Option<ExitStatus> {
        let deadline = Instant::now() + timeout;
        loop {
            if let Ok(Some(status)) = self.child.try_wait() {
                return Some(status);
            }
            if Instant::now() > deadline {
                return None;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    /// SIGTERM, then the exit status within 35 s (actix allows requests 30 s to finish).
    async fn terminate(&mut self) -> ExitStatus {
        let status = Command::new("kill")
            .args(["-TERM", &self.pid().to_string()])
            .status()
            .expect("run kill");
        assert!(status.success(), "kill -TERM {} failed", self.pid());
        let started = Instant::now();
        match self.wait_exit(Duration::from_secs(35)).await {
            Some(status) => {
                eprintln!("fleetdesk stopped {:?} after SIGTERM", started.elapsed());
                status
            }
            None => panic!(
                "fleetdesk did not exit within 35 s of SIGTERM\n{}",
                self.output()
            ),
        }
    }
}

impl Drop for Proc {
    fn drop(&mut self) {
        if let Ok(None) = self.child.try_wait() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

/// A started server: its address and what it printed before listening.
struct Served {
    proc: Proc,
    client: Client,
    /// Everything on stdout up to and including the "listening" line.
    banner: String,
}

/// `fleetdesk serve --bind 127.0.0.1:0`: the system picks a free port.
fn serve_cmd() -> Command {
    fleetdesk(&["serve", "--bind", "127.0.0.1:0"])
}

/// Starts a `fleetdesk serve` command and waits until it prints its address.
async fn serve(cmd: Command, startup: Duration) -> Served {
    let mut proc = Proc::spawn(cmd);
    let addr = proc.wait_for_line(LISTENING, startup).await;
    assert!(
        addr.parse::<std::net::SocketAddr>()
            .is_ok_and(|a| a.ip().is_loopback() && a.port() != 0),
        "fleetdesk printed {addr:?} as its address"
    );
    let banner = proc.stdout();
    Served {
        client: Client::new(&format!("http://{addr}")),
        proc,
        banner,
    }
}

/// The JSON report printed with the demo tenant, if any.
fn demo_report(banner: &str) -> Option<Value> {
    let start = banner.find(DEMO_BANNER)?;
    let json_start = start + banner[start..].find('{')?;
    serde_json::Deserializer::from_str(&banner[json_start..])
        .into_iter::<Value>()
        .next()?
        .ok()
}

/// `fda_<8>_<43>` / `fdp_<8>_<43>`: 8 alphanumerics, then 32 bytes of unpadded base64url.
fn is_key(key: &str, prefix: &str) -> bool {
    let Some(rest) = key.strip_prefix(prefix) else {
        return false;
    };
    let b = rest.as_bytes();
    b.len() == 8 + 1 + 43
        && b[..8].iter().all(u8::is_ascii_alphanumeric)
        && b[8] == b'_'
        && b[9..]
            .iter()
            .all(|c| c.is_ascii_alphanumeric() || *c == b'-' || *c == b'_')
}

/// Every key of a report (or of any JSON value) under a `keys` array.
fn all_keys(v: &Value) -> Vec<String> {
    let mut out = Vec::new();
    fn walk(v: &Value, out: &mut Vec<String>) {
        match v {
            Value::Object(m) => {
                for (k, v) in m {
                    if k == "keys" {
                        out.extend(
                            v.as_array()
                                .into_iter()
                                .flatten()
                                .filter_map(Value::as_str)
                                .map(str::to_owned),
                        );
                    } else {
                        walk(v, out);
                    }
                }
            }
            Value::Array(a) => a.iter().for_each(|v| walk(v, out)),
            _ => {}
        }
    }
    walk(v, &mut out);
    out
}

/// The first key of the demo agent `writer-1`, checked for shape.
fn demo_agent_key(report: &Value) -> String {
    let agent = report["organizations"]
        .as_array()
        .into_iter()
        .flatten()
        .flat_map(|o| o["workspaces"].as_array().into_iter().flatten())
        .flat_map(|w| w["agents"].as_array().into_iter().flatten())
        .find(|a| a["name"] == "writer-1")
        .unwrap_or_else(|| panic!("the demo report has no agent writer-1: {report}"));
    let key = agent["keys"][0]
        .as_str()
        .unwrap_or_else(|| panic!("writer-1 got no key: {agent}"))
        .to_owned();
    assert!(is_key(&key, "fda_"), "not an agent key: {key}");
    key
}

/// The demo accounts answer with this key, and the service is ready.
async fn assert_demo_accounts(client: &Client, key: &str) {
    let res = client.get("/api/agent/v1/accounts", key).await;
    assert_eq!(
        res.status,
        200,
        "GET /api/agent/v1/accounts: {}",
        String::from_utf8_lossy(&res.body)
    );
    let body = res.json();
    let codes: Vec<&str> = body["accounts"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|a| a["code"].as_str())
        .collect();
    for code in ["TW-T001", "TW-I001", "TW-K001"] {
        assert!(codes.contains(&code), "{code} missing from {body}");
    }
    let ready = client
        .send(fleetdesk_tests::client::Request::new("GET", "/readyz"))
        .await;
    assert_eq!(
        ready.status,
        200,
        "/readyz: {}",
        String::from_utf8_lossy(&ready.body)
    );
    assert_eq!(ready.json()["status"], "ready");
}

/// First start on an empty database: the demo tenant and its keys; returns the agent key.
async fn first_start(served: &Served) -> String {
    let report = demo_report(&served.banner).unwrap_or_else(|| {
        panic!(
            "the first start on an empty database printed no demo tenant report\n{}",
            served.proc.output()
        )
    });
    let key = demo_agent_key(&report);
    for k in all_keys(&report) {
        assert!(
            is_key(&k, "fda_") || is_key(&k, "fdp_"),
            "a printed key has the wrong shape: {k}"
        );
    }
    assert!(
        served
            .banner
            .contains(&format!("FLEETDESK_AGENT_KEY={key}")),
        "the try-it hint does not show the agent key\n{}",
        served.banner
    );
    assert!(
        served.banner.contains(&format!(
            "http://{}/api/agent/v1/accounts",
            served.client.host()
        )),
        "the try-it hint does not show the bound address\n{}",
        served.banner
    );
    assert_demo_accounts(&served.client, &key).await;
    key
}

/// A later start on the same data: no demo keys, and the earlier key still works.
async fn restart(served: &Served, key: &str) {
    assert!(
        !served.banner.contains(DEMO_BANNER)
            && !served.banner.contains("fda_")
            && !served.banner.contains("fdp_"),
        "a restart on a non-empty database printed keys again:\n{}",
        served.banner
    );
    assert_demo_accounts(&served.client, key).await;
}

async fn stop(served: &mut Served) {
    let status = served.proc.terminate().await;
    assert!(
        status.success(),
        "fleetdesk exited with {status} after SIGTERM, expected 0\n{}",
        served.proc.output()
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn serve_loads_the_demo_stops_on_sigterm_and_keeps_its_data() {
    let db = TestDb::new().await.expect("a test database");
    let data = TempDir::new("srv");
    let start = || {
        let mut cmd = serve_cmd();
        cmd.env("DATABASE_URL", &db.url)
            .env("FLEETDESK_DATA_DIR", data.path());
        cmd
    };

    let mut first = serve(start(), Duration::from_secs(60)).await;
    let key = first_start(&first).await;
    let health = first
        .client
        .send(fleetdesk_tests::client::Request::new("GET", "/healthz"))
        .await;
    assert_eq!(health.status, 200);
    stop(&mut first).await;
    // The port is free again: the server really stopped.
    let gone = std::net::TcpStream::connect(first.client.host());
    assert!(
        gone.is_err(),
        "the stopped server still accepts connections"
    );

    let mut second = serve(start(), Duration::from_secs(60)).await;
    restart(&second, &key).await;
    stop(&mut second).await;
}

// ---------------------------------------------------------------------------------------------
// The zero-set-up start: no DATABASE_URL, fleetdesk's own PostgreSQL under the data dir

fn running_as_root() -> bool {
    use std::os::unix::fs::MetadataExt;
    std::fs::metadata("/proc/self").is_ok_and(|m| m.uid() == 0)
}

/// pg_ctl of the cluster's major version (as `local_pg` finds it), else the one on PATH.
fn pg_ctl_for(pgdata: &Path) -> PathBuf {
    let major = std::fs::read_to_string(pgdata.join("PG_VERSION")).unwrap_or_default();
    let versioned = PathBuf::from(format!("/usr/lib/postgresql/{}/bin/pg_ctl", major.trim()));
    if !major.trim().is_empty() && versioned.is_file() {
        versioned
    } else {
        PathBuf::from("pg_ctl")
    }
}

/// The local cluster under a data dir: stopped (`pg_ctl stop -m fast`, as the `postgres` user
/// when root) and the dir removed when dropped.
struct LocalCluster {
    dir: PathBuf,
}

impl LocalCluster {
    fn pgdata(&self) -> PathBuf {
        self.dir.join("postgres").join("data")
    }

    fn is_running(&self) -> bool {
        self.pgdata().join("postmaster.pid").is_file()
    }

    /// Stops the cluster; Ok when it was stopped or not running.
    fn stop(&self) -> Result<(), String> {
        if !self.pgdata().join("PG_VERSION").is_file() {
            return Ok(());
        }
        let pg_ctl = pg_ctl_for(&self.pgdata());
        let mut cmd = if running_as_root() {
            let mut c = Command::new("runuser");
            c.args(["-u", "postgres", "--"]).arg(&pg_ctl);
            c
        } else {
            Command::new(&pg_ctl)
        };
        cmd.arg("-D")
            .arg(self.pgdata())
            .args(["stop", "-m", "fast", "-w", "-t", "60"])
            .current_dir("/")
            .stdin(Stdio::null());
        let out = cmd
            .output()
            .map_err(|e| format!("running {}: {e}", pg_ctl.display()))?;
        let text = format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        if out.status.success() || text.contains("Is server running?") {
            Ok(())
        } else {
            Err(format!("pg_ctl stop failed ({}): {text}", out.status))
        }
    }
}

impl Drop for LocalCluster {
    fn drop(&mut self) {
        if let Err(e) = self.stop() {
            eprintln!("{e}");
        }
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn serve_without_database_url_runs_its_own_postgres_and_keeps_its_data() {
    // Short and under /tmp (not $TMPDIR): the postgres user can reach it when the test runs as
    // root, and the socket path stays short.
    let cluster = LocalCluster {
        dir: fresh_dir(Path::new("/tmp"), "z"),
    };
    let dir = cluster.dir.to_str().expect("utf-8").to_owned();
    let start = || {
        let mut cmd = serve_cmd();
        cmd.args(["--data-dir", &dir]);
        cmd
    };
    let mut first = serve(start(), Duration::from_secs(180)).await;
    assert!(
        cluster.pgdata().join("PG_VERSION").is_file(),
        "no PostgreSQL cluster under {dir}/postgres/data"
    );
    let key = first_start(&first).await;
    stop(&mut first).await;
    assert!(
        cluster.is_running(),
        "the local PostgreSQL should outlive `fleetdesk serve` (it is reused on the next start)"
    );

    let mut second = serve(start(), Duration::from_secs(120)).await;
    restart(&second, &key).await;
    stop(&mut second).await;

    cluster.stop().expect("stop the local PostgreSQL");
    assert!(
        !cluster.is_running(),
        "the local PostgreSQL still runs after pg_ctl stop"
    );
}

// ---------------------------------------------------------------------------------------------
// migrate and admin apply

/// Runs a one-shot subcommand to its end (at most two minutes).
async fn run(cmd: Command) -> (ExitStatus, String, String) {
    let mut proc = Proc::spawn(cmd);
    let status = proc
        .wait_exit(Duration::from_secs(120))
        .await
        .unwrap_or_else(|| panic!("fleetdesk did not finish\n{}", proc.output()));
    // The reader threads see end-of-file once the process is gone.
    tokio::time::sleep(Duration::from_millis(100)).await;
    let out = proc.stdout();
    let err = proc.stderr.lock().unwrap().clone();
    (status, out, err)
}

#[tokio::test(flavor = "multi_thread")]
async fn migrate_on_a_migrated_database_runs_nothing() {
    let db = TestDb::new().await.expect("a test database");
    let data = TempDir::new("mig");
    let mut cmd = fleetdesk(&["migrate"]);
    cmd.env("DATABASE_URL", &db.url)
        .env("FLEETDESK_DATA_DIR", data.path());
    let (status, out, err) = run(cmd).await;
    assert!(status.success(), "migrate failed ({status}):\n{out}\n{err}");
    let last = out
        .lines()
        .rev()
        .find(|l| !l.trim().is_empty())
        .unwrap_or_default();
    let printed: Value = serde_json::from_str(last)
        .unwrap_or_else(|e| panic!("migrate printed no JSON ({e}): {out:?}"));
    assert_eq!(printed, serde_json::json!({"migrations_run": 0}));
}

const TENANT: &str = r#"{
  "platform_admins": [{"email": "ops@bin.test", "name": "Ops", "keys": 1}],
  "organizations": [{
    "name": "Binary Agency",
    "members": [{"email": "bea@bin.test", "name": "Bea", "role": "agency", "keys": 2}],
    "workspaces": [{
      "name": "Taiwan",
      "projects": [{"name": "beauty"}],
      "agents": [{"name": "runner", "role": "operator", "keys": 1}],
      "personas": [{"name": "Ivy", "agent": "runner",
                    "accounts": [{"code": "tw-t042", "platform": "threads", "state": "active"}]}]
    }]
  }]
}"#;

fn apply_cmd(db: &TestDb, data: &TempDir, file: &Path) -> Command {
    let mut cmd = fleetdesk(&["admin", "apply"]);
    cmd.arg(file)
        .env("DATABASE_URL", &db.url)
        .env("FLEETDESK_DATA_DIR", data.path());
    cmd
}

fn is_uuid(v: &Value) -> bool {
    v.as_str().is_some_and(|s| uuid::Uuid::parse_str(s).is_ok())
}

#[tokio::test(flavor = "multi_thread")]
async fn admin_apply_issues_keys_once_and_rejects_an_invalid_file() {
    let db = TestDb::new().await.expect("a test database");
    let data = TempDir::new("adm");
    let file = data.path().join("tenant.json");
    std::fs::write(&file, TENANT).expect("write the tenant file");

    let (status, out, err) = run(apply_cmd(&db, &data, &file)).await;
    assert!(status.success(), "apply failed ({status}):\n{out}\n{err}");
    let first: Value =
        serde_json::from_str(&out).unwrap_or_else(|e| panic!("apply printed no JSON ({e}): {out}"));
    assert!(is_uuid(&first["platform_admins"][0]["id"]), "{first}");
    let org = &first["organizations"][0];
    assert!(is_uuid(&org["id"]), "{first}");
    let ws = &org["workspaces"][0];
    assert!(is_uuid(&ws["id"]), "{first}");
    assert!(is_uuid(&ws["projects"][0]["id"]), "{first}");
    assert!(is_uuid(&ws["agents"][0]["id"]), "{first}");
    assert!(is_uuid(&ws["personas"][0]["id"]), "{first}");
    assert_eq!(
        ws["personas"][0]["accounts"][0]["code"], "TW-T042",
        "account codes are stored upper-cased: {first}"
    );
    assert_eq!(ws["personas"][0]["accounts"][0]["platform"], "threads");

    let admin_keys = first["platform_admins"][0]["keys"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    let member_keys = org["members"][0]["keys"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    let agent_keys = ws["agents"][0]["keys"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    assert_eq!(admin_keys.len(), 1, "{first}");
    assert_eq!(member_keys.len(), 2, "{first}");
    assert_eq!(agent_keys.len(), 1, "{first}");
    for k in admin_keys.iter().chain(&member_keys) {
        assert!(
            is_key(k.as_str().unwrap_or_default(), "fdp_"),
            "personal key shape: {k}"
        );
    }
    let agent_key = agent_keys[0].as_str().unwrap_or_default().to_owned();
    assert!(is_key(&agent_key, "fda_"), "agent key shape: {agent_key}");
    assert_ne!(member_keys[0], member_keys[1], "two keys are the same");
    // Keys are shown on stdout only, never in the logs.
    assert!(!err.contains(&agent_key), "the key leaked to stderr");

    // Again: the same ids, no new keys.
    let (status, out, err) = run(apply_cmd(&db, &data, &file)).await;
    assert!(
        status.success(),
        "second apply failed ({status}):\n{out}\n{err}"
    );
    let second: Value = serde_json::from_str(&out)
        .unwrap_or_else(|e| panic!("the second apply printed no JSON ({e}): {out}"));
    assert!(
        all_keys(&second).is_empty(),
        "the second apply issued keys again: {second}"
    );
    assert_eq!(second["organizations"][0]["id"], org["id"]);
    assert_eq!(second["organizations"][0]["workspaces"][0]["id"], ws["id"]);
    assert_eq!(
        second["organizations"][0]["workspaces"][0]["agents"][0]["id"],
        ws["agents"][0]["id"]
    );
    assert_eq!(
        second["platform_admins"][0]["id"],
        first["platform_admins"][0]["id"]
    );
    for keys in [
        &second["platform_admins"][0]["keys"],
        &second["organizations"][0]["members"][0]["keys"],
        &second["organizations"][0]["workspaces"][0]["agents"][0]["keys"],
    ] {
        assert_eq!(keys, &serde_json::json!([]), "{second}");
    }

    // The issued agent key authenticates against the service over that database.
    let mut served = {
        let mut cmd = serve_cmd();
        cmd.env("DATABASE_URL", &db.url)
            .env("FLEETDESK_DATA_DIR", data.path());
        serve(cmd, Duration::from_secs(60)).await
    };
    assert!(
        !served.banner.contains(DEMO_BANNER),
        "the demo was loaded into a database that has a tenant"
    );
    let res = served
        .client
        .get("/api/agent/v1/accounts", &agent_key)
        .await;
    assert_eq!(res.status, 200, "{}", String::from_utf8_lossy(&res.body));
    assert_eq!(res.json()["accounts"][0]["code"], "TW-T042");
    stop(&mut served).await;

    // A rule broken deep in the file: the message names where.
    let broken = data.path().join("broken.json");
    std::fs::write(
        &broken,
        TENANT.replace(r#""agent": "runner""#, r#""agent": "nobody""#),
    )
    .expect("write");
    let (status, out, err) = run(apply_cmd(&db, &data, &broken)).await;
    assert!(!status.success(), "an invalid file was applied:\n{out}");
    assert!(
        err.contains("organizations[0].workspaces[0].personas[0].agent"),
        "the error does not name the path of the problem:\n{err}"
    );
    assert!(!out.contains("fda_") && !out.contains("fdp_"), "{out}");

    // An unknown field: refused, naming the field and where it is; nothing applied.
    let unknown = data.path().join("unknown.json");
    std::fs::write(
        &unknown,
        TENANT
            .replace("Binary Agency", "Unknown Field Agency")
            .replace(
                r#""name": "runner", "role": "operator""#,
                r#""name": "runner", "colour": "blue", "role": "operator""#,
            ),
    )
    .expect("write");
    let (status, out, err) = run(apply_cmd(&db, &data, &unknown)).await;
    assert!(
        !status.success(),
        "a file with an unknown field was applied:\n{out}"
    );
    assert!(!out.contains("fda_") && !out.contains("fdp_"), "{out}");
    assert!(
        err.contains("colour"),
        "the error does not name the unknown field:\n{err}"
    );
    assert!(
        err.contains("organizations[0].workspaces[0].agents[0]"),
        "the error does not name the path of the unknown field \
         (organizations[0].workspaces[0].agents[0]):\n{err}"
    );
}
