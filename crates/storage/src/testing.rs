//! A real S3-compatible server for tests: moto in server mode, started as a child process
//! on a free port (`pip install 'moto[server]'`). Behind the `testing` feature.

use std::io::{Read as _, Write as _};
use std::net::{TcpListener, TcpStream};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

/// A directory removed on drop: moto's log.
struct LogDir(PathBuf);

impl LogDir {
    fn new() -> Self {
        let nanos = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|d| d.as_nanos())
            .unwrap_or_default();
        LogDir(std::env::temp_dir().join(format!("fleetdesk-moto-{}-{nanos}", std::process::id())))
    }
}

impl Drop for LogDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// A moto server on a free local port, killed on drop.
pub struct Moto {
    child: Child,
    port: u16,
    _log_dir: LogDir,
}

impl Moto {
    /// Starts `python3 -m moto.server` of the tests' Python environment (`target/peers/venv`,
    /// installed by `cargo xtask test`; never the machine's own) and waits until it answers.
    pub fn start() -> Moto {
        let exe = std::env::current_exe().expect("the test executable's path");
        // The test executable sits in <target>/<profile>/deps.
        let python = exe
            .ancestors()
            .nth(3)
            .map(|target| target.join("peers/venv/bin/python3"))
            .filter(|p| p.is_file())
            .unwrap_or_else(|| {
                panic!(
                    "target/peers/venv/bin/python3 is missing: run `cargo xtask test`, which \
                     installs moto (tests/requirements.txt), or set FLEETDESK_SKIP_S3_TESTS=1 to \
                     skip the S3 test"
                )
            });
        let python = python.to_string_lossy().into_owned();
        Moto::try_start(&[&python, "-m", "moto.server"])
            .unwrap_or_else(|why| panic!("could not start moto with {python}: {why}"))
    }

    fn try_start(argv: &[&str]) -> Result<Moto, String> {
        let port = TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .map_err(|e| e.to_string())?
            .port();
        let log_dir = LogDir::new();
        std::fs::create_dir_all(&log_dir.0).map_err(|e| e.to_string())?;
        let log_path = log_dir.0.join("moto.log");
        let log = std::fs::File::create(&log_path).map_err(|e| e.to_string())?;
        let child = Command::new(argv[0])
            .args(&argv[1..])
            .args(["-H", "127.0.0.1", "-p", &port.to_string()])
            .stdin(Stdio::null())
            .stdout(log.try_clone().map_err(|e| e.to_string())?)
            .stderr(log)
            .spawn()
            .map_err(|e| e.to_string())?;
        let mut moto = Moto {
            child,
            port,
            _log_dir: log_dir,
        };
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            if let Ok(Some(status)) = moto.child.try_wait() {
                let log = std::fs::read_to_string(&log_path).unwrap_or_default();
                return Err(format!("exited with {status}: {}", log.trim()));
            }
            if TcpStream::connect(("127.0.0.1", port)).is_ok()
                && moto.try_request("GET", "/").is_ok()
            {
                return Ok(moto);
            }
            if Instant::now() > deadline {
                return Err(format!("no answer on port {port} within 30s"));
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    pub fn endpoint(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    /// Buckets cannot be created through object_store; moto accepts an unsigned `PUT /<bucket>`.
    pub fn create_bucket(&self, bucket: &str) {
        let (status, body) = self.request("PUT", &format!("/{bucket}"));
        assert_eq!(
            status,
            200,
            "creating bucket: {}",
            String::from_utf8_lossy(&body)
        );
    }

    pub fn request(&self, method: &str, path: &str) -> (u16, Vec<u8>) {
        self.try_request(method, path)
            .unwrap_or_else(|e| panic!("{method} {path}: {e}"))
    }

    /// A minimal HTTP/1.1 request without body; returns the status and the raw body.
    fn try_request(&self, method: &str, path: &str) -> std::io::Result<(u16, Vec<u8>)> {
        let mut stream = TcpStream::connect(("127.0.0.1", self.port))?;
        stream.set_read_timeout(Some(Duration::from_secs(10)))?;
        write!(
            stream,
            "{method} {path} HTTP/1.1\r\nHost: 127.0.0.1:{}\r\nContent-Length: 0\r\nConnection: close\r\n\r\n",
            self.port
        )?;
        let mut response = Vec::new();
        stream.read_to_end(&mut response)?;
        let invalid =
            || std::io::Error::new(std::io::ErrorKind::InvalidData, "malformed HTTP response");
        let head_end = response
            .windows(4)
            .position(|w| w == b"\r\n\r\n")
            .ok_or_else(invalid)?;
        let head = String::from_utf8_lossy(&response[..head_end]);
        let status = head
            .split_whitespace()
            .nth(1)
            .and_then(|s| s.parse().ok())
            .ok_or_else(invalid)?;
        if head
            .to_ascii_lowercase()
            .contains("transfer-encoding: chunked")
        {
            return Err(std::io::Error::other("chunked responses are not supported"));
        }
        Ok((status, response[head_end + 4..].to_vec()))
    }
}

impl Drop for Moto {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
