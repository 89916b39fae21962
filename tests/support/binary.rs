//! The real `fleetdesk` binary, for the tests that run it as a user would: built once per test
//! process, started with a clean environment, its output captured, killed when a test fails.
//!
//! The tests belong to another package than the binary, so `CARGO_BIN_EXE_fleetdesk` does not
//! exist here: [`fleetdesk_bin`] runs `cargo build -p fleetdesk --bin fleetdesk` once per test
//! process (a no-op when it is fresh) so the binary tested is never stale, and falls back to the
//! `fleetdesk` next to the test executable when cargo cannot be run.

use crate::Client;
use fleetdesk_pg::testing::TestDb;
use serde_json::Value;
use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::mpsc::{Receiver, TryRecvError};
use std::sync::{Arc, Mutex, OnceLock};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// The line `fleetdesk serve` prints once it listens, before its address.
pub const LISTENING: &str = "fleetdesk listening on http://";
/// The start of what a first start on an empty database prints before the demo tenant's report.
pub const DEMO_BANNER: &str = "Loaded the demo tenant";
/// `serve` on a free port the system picks (read back from the [`LISTENING`] line).
pub const SERVE: &[&str] = &["serve", "--bind", "127.0.0.1:0"];

// ---------------------------------------------------------------------------------------------
// Locating (and building) the binary

/// The workspace root (this package is `tests/`).
pub fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("tests/ sits in the workspace")
        .to_path_buf()
}

/// The cargo running these tests, else the one on PATH.
pub fn cargo() -> String {
    std::env::var("CARGO")
        .ok()
        .or_else(|| option_env!("CARGO").map(str::to_owned))
        .unwrap_or_else(|| "cargo".to_owned())
}

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

/// `cargo build -p fleetdesk --bin fleetdesk` in the profile of the tests; the executable built.
fn build_binary() -> Result<PathBuf, BuildError> {
    let cargo = cargo();
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
    cmd.current_dir(workspace_root())
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
pub fn fleetdesk_bin() -> PathBuf {
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

/// Every variable fleetdesk reads (its flags' and the logging's), cleared so the machine's
/// settings never leak into a test.
const VARS: &[&str] = &[
    "DATABASE_URL",
    "FLEETDESK_BIND",
    "FLEETDESK_METRICS_BIND",
    "FLEETDESK_BASE_URL",
    "FLEETDESK_DATA_DIR",
    "FLEETDESK_NO_DEMO",
    "FLEETDESK_WORKERS",
    "FLEETDESK_DB_POOL",
    "FLEETDESK_URL",
    "FLEETDESK_AGENT_KEY",
    "FLEETDESK_UPLOAD_CODE",
    "FLEETDESK_UPLOAD_PLATFORM",
    "FLEETDESK_UPLOAD_CAPTION",
    "FLEETDESK_UPLOAD_LIMIT_RATE",
    "FLEETDESK_S3_BUCKET",
    "FLEETDESK_S3_ENDPOINT",
    "FLEETDESK_LOG_FORMAT",
    "FLEETDESK_RATE_LIMIT_PER_MINUTE",
    "FLEETDESK_EXPOSE_ROUND_TRIPS",
    "FLEETDESK_AD_RESEARCH_URL",
    "FLEETDESK_AD_RESEARCH_KEY",
    "FLEETDESK_AD_RESEARCH_DAILY_QUOTA",
    "FLEETDESK_AD_PLATFORM",
    "FLEETDESK_META_GRAPH_URL",
    "AWS_ACCESS_KEY_ID",
    "AWS_SECRET_ACCESS_KEY",
    "AWS_REGION",
    "RUST_LOG",
    "NO_COLOR",
];

/// A `fleetdesk` command with a clean environment (none of the settings of the machine leak
/// in), two workers and a pool of four connections, so tests running side by side fit.
pub fn fleetdesk(args: &[&str]) -> Command {
    let mut cmd = Command::new(fleetdesk_bin());
    cmd.args(args);
    for var in VARS {
        cmd.env_remove(var);
    }
    cmd.env("FLEETDESK_WORKERS", "2")
        .env("FLEETDESK_DB_POOL", "4")
        .stdin(Stdio::null());
    cmd
}

/// The `fleetdesk` binary over a test database and a data dir.
pub fn fleetdesk_over(args: &[&str], db: &TestDb, data_dir: &Path) -> Command {
    let mut cmd = fleetdesk(args);
    cmd.env("DATABASE_URL", &db.url)
        .env("FLEETDESK_DATA_DIR", data_dir);
    cmd
}

// ---------------------------------------------------------------------------------------------
// Temp dirs

/// A fresh directory `fd<tag>-<random>` under `parent`.
pub fn fresh_dir(parent: &Path, tag: &str) -> PathBuf {
    let id = uuid::Uuid::new_v4().simple().to_string();
    let dir = parent.join(format!("fd{tag}-{}", &id[..10]));
    std::fs::create_dir_all(&dir).expect("create a temp dir");
    dir
}

/// A fresh directory under the temp dir, removed when dropped.
pub struct TempDir(PathBuf);

impl TempDir {
    pub fn new(tag: &str) -> TempDir {
        TempDir(fresh_dir(&std::env::temp_dir(), tag))
    }

    pub fn path(&self) -> &Path {
        &self.0
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

// ---------------------------------------------------------------------------------------------
// A running process

/// A child process with its output collected (stdout also as lines), killed when dropped: a
/// failing test leaves nothing running.
pub struct Proc {
    /// The program's file name, for failure messages.
    name: String,
    child: Child,
    lines: Receiver<String>,
    stdout: Arc<Mutex<String>>,
    stderr: Arc<Mutex<Vec<u8>>>,
    readers: Vec<JoinHandle<()>>,
}

impl Proc {
    /// Starts `cmd` with stdout and stderr piped.
    pub fn spawn(mut cmd: Command) -> Proc {
        cmd.stdout(Stdio::piped()).stderr(Stdio::piped());
        let name = Path::new(cmd.get_program())
            .file_name()
            .map_or_else(String::new, |n| n.to_string_lossy().into_owned());
        let mut child = cmd
            .spawn()
            .unwrap_or_else(|e| panic!("spawning {cmd:?}: {e}"));
        let (tx, lines) = std::sync::mpsc::channel();
        let stdout = Arc::new(Mutex::new(String::new()));
        let stderr = Arc::new(Mutex::new(Vec::new()));
        let out = child.stdout.take().expect("stdout");
        let sink = stdout.clone();
        let out_reader = std::thread::spawn(move || {
            for line in BufReader::new(out).lines() {
                let Ok(line) = line else { break };
                sink.lock().unwrap().push_str(&format!("{line}\n"));
                let _ = tx.send(line);
            }
        });
        let mut err = child.stderr.take().expect("stderr");
        let sink = stderr.clone();
        let err_reader = std::thread::spawn(move || {
            let mut buf = [0u8; 8192];
            while let Ok(n) = err.read(&mut buf) {
                if n == 0 {
                    break;
                }
                sink.lock().unwrap().extend_from_slice(&buf[..n]);
            }
        });
        Proc {
            name,
            child,
            lines,
            stdout,
            stderr,
            readers: vec![out_reader, err_reader],
        }
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Everything on stdout so far.
    pub fn stdout(&self) -> String {
        self.stdout.lock().unwrap().clone()
    }

    /// Everything on stderr so far, as text.
    pub fn stderr(&self) -> String {
        String::from_utf8_lossy(&self.stderr_bytes()).into_owned()
    }

    /// Everything on stderr so far, byte for byte.
    pub fn stderr_bytes(&self) -> Vec<u8> {
        self.stderr.lock().unwrap().clone()
    }

    /// What the process wrote, for failure messages (the end of stderr).
    pub fn output(&self) -> String {
        let err = self.stderr();
        let start = err.len().saturating_sub(6000);
        let start = (start..err.len())
            .find(|i| err.is_char_boundary(*i))
            .unwrap_or(err.len());
        format!(
            "--- stdout ---\n{}--- stderr (end) ---\n{}",
            self.stdout(),
            &err[start..]
        )
    }

    /// Waits for a stdout line starting with `prefix`; returns the rest of the line.
    pub async fn wait_for_line(&mut self, prefix: &str, timeout: Duration) -> String {
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
                        "{} closed stdout ({status:?}) before printing {prefix:?}\n{}",
                        self.name,
                        self.output()
                    );
                }
                Err(TryRecvError::Empty) => {}
            }
            if let Ok(Some(status)) = self.child.try_wait() {
                // Let the reader thread pass on what is left before giving up.
                self.drain().await;
                while let Ok(line) = self.lines.try_recv() {
                    if let Some(rest) = line.strip_prefix(prefix) {
                        return rest.trim().to_owned();
                    }
                }
                panic!(
                    "{} exited ({status}) before printing {prefix:?}\n{}",
                    self.name,
                    self.output()
                );
            }
            if Instant::now() > deadline {
                panic!(
                    "{} did not print {prefix:?} within {timeout:?}\n{}",
                    self.name,
                    self.output()
                );
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    /// The exit status once the process ends, or None after `timeout`.
    pub async fn wait_exit(&mut self, timeout: Duration) -> Option<ExitStatus> {
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

    /// Waits for the process to end within `timeout` (a failure otherwise); its output is
    /// complete afterwards.
    pub async fn finish(&mut self, timeout: Duration) -> ExitStatus {
        let Some(status) = self.wait_exit(timeout).await else {
            panic!(
                "{} did not finish within {timeout:?}\n{}",
                self.name,
                self.output()
            );
        };
        self.drain().await;
        status
    }

    /// SIGKILL, as a crash: the process ends at once, in the middle of whatever it does.
    pub async fn kill(&mut self) {
        let status = Command::new("kill")
            .args(["-KILL", &self.pid().to_string()])
            .status()
            .expect("run kill");
        assert!(status.success(), "kill -KILL {} failed", self.pid());
        assert!(
            self.wait_exit(Duration::from_secs(10)).await.is_some(),
            "{} lived on after SIGKILL",
            self.name
        );
        self.drain().await;
    }

    /// SIGTERM, then the exit status within `timeout` (a failure otherwise); its output is
    /// complete afterwards.
    pub async fn terminate(&mut self, timeout: Duration) -> ExitStatus {
        let status = Command::new("kill")
            .args(["-TERM", &self.pid().to_string()])
            .status()
            .expect("run kill");
        assert!(status.success(), "kill -TERM {} failed", self.pid());
        let started = Instant::now();
        match self.wait_exit(timeout).await {
            Some(status) => {
                eprintln!(
                    "{} stopped {:?} after SIGTERM",
                    self.name,
                    started.elapsed()
                );
                self.drain().await;
                status
            }
            None => panic!(
                "{} did not exit within {timeout:?} of SIGTERM\n{}",
                self.name,
                self.output()
            ),
        }
    }

    /// Once the process is gone: lets the reader threads take the rest of its output (they see
    /// end-of-file unless a child of the process still holds the pipe; at most two seconds).
    async fn drain(&self) {
        let deadline = Instant::now() + Duration::from_secs(2);
        while !self.readers.iter().all(JoinHandle::is_finished) && Instant::now() < deadline {
            tokio::time::sleep(Duration::from_millis(20)).await;
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

/// Runs a one-shot command to its end within `timeout`: its status, stdout and stderr.
pub async fn run(cmd: Command, timeout: Duration) -> (ExitStatus, String, String) {
    let mut proc = Proc::spawn(cmd);
    let status = proc.finish(timeout).await;
    (status, proc.stdout(), proc.stderr())
}

// ---------------------------------------------------------------------------------------------
// A running `fleetdesk serve`

/// A started server: the process, a client for its address and what it printed before
/// listening.
pub struct Served {
    pub proc: Proc,
    pub client: Client,
    /// Everything on stdout up to and including the [`LISTENING`] line.
    pub banner: String,
}

/// Starts a `fleetdesk serve` command (see [`SERVE`]) and waits until it prints its address.
pub async fn serve(cmd: Command, startup: Duration) -> Served {
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

// ---------------------------------------------------------------------------------------------
// What the first start prints

/// The JSON report printed with the demo tenant, if any.
pub fn demo_report(banner: &str) -> Option<Value> {
    let start = banner.find(DEMO_BANNER)?;
    let json_start = start + banner[start..].find('{')?;
    serde_json::Deserializer::from_str(&banner[json_start..])
        .into_iter::<Value>()
        .next()?
        .ok()
}

/// `fda_<8>_<43>` / `fdp_<8>_<43>`: 8 alphanumerics, then 32 bytes of unpadded base64url.
pub fn is_key(key: &str, prefix: &str) -> bool {
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
pub fn all_keys(v: &Value) -> Vec<String> {
    match v {
        Value::Object(m) => m
            .iter()
            .flat_map(|(k, v)| {
                if k == "keys" {
                    v.as_array()
                        .into_iter()
                        .flatten()
                        .filter_map(Value::as_str)
                        .map(str::to_owned)
                        .collect()
                } else {
                    all_keys(v)
                }
            })
            .collect(),
        Value::Array(a) => a.iter().flat_map(all_keys).collect(),
        _ => Vec::new(),
    }
}

/// The first key of the demo agent `writer-1`, checked for shape.
pub fn demo_agent_key(report: &Value) -> String {
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
