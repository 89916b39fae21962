//! A small HTTP/1.1 client over tokio: enough for JSON APIs, raw bodies and keep-alive, with
//! no extra dependency (the server's own stack is actix).

use serde_json::Value;
use std::collections::BTreeMap;
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::TcpStream;

#[derive(Debug, Clone)]
pub struct Client {
    host: String,
}

#[derive(Debug, Clone)]
pub struct Response {
    pub status: u16,
    /// Header names lower-cased.
    pub headers: BTreeMap<String, String>,
    pub body: Vec<u8>,
}

impl Response {
    pub fn json(&self) -> Value {
        serde_json::from_slice(&self.body).unwrap_or_else(|e| {
            panic!(
                "status {}: body is not JSON ({e}): {}",
                self.status,
                String::from_utf8_lossy(&self.body)
            )
        })
    }

    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .get(&name.to_ascii_lowercase())
            .map(String::as_str)
    }

    /// The error code of an error body.
    pub fn code(&self) -> String {
        self.json()["code"].as_str().unwrap_or_default().to_owned()
    }

    /// The body as text for an assertion's message: lossy UTF-8, at most 1,500 characters.
    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.body)
            .chars()
            .take(1500)
            .collect()
    }
}

/// The MCP protocol version the service speaks.
pub const MCP_PROTOCOL: &str = "2025-06-18";

/// One request to send.
#[derive(Debug, Clone, Default)]
pub struct Request {
    pub method: String,
    pub path: String,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

impl Request {
    pub fn new(method: &str, path: &str) -> Request {
        Request {
            method: method.to_owned(),
            path: path.to_owned(),
            ..Default::default()
        }
    }

    pub fn bearer(self, key: &str) -> Request {
        self.header("Authorization", &format!("Bearer {key}"))
    }

    pub fn header(mut self, name: &str, value: &str) -> Request {
        self.headers.push((name.to_owned(), value.to_owned()));
        self
    }

    pub fn json(mut self, body: &Value) -> Request {
        self.body = serde_json::to_vec(body).expect("json");
        self.header("Content-Type", "application/json")
    }

    pub fn raw(mut self, body: Vec<u8>) -> Request {
        self.body = body;
        self
    }

    /// A JSON-RPC message POSTed to /api/mcp with the headers the MCP spec lists (no key: add
    /// one with [`Request::bearer`]).
    pub fn mcp(body: &Value) -> Request {
        Request::new("POST", "/api/mcp")
            .header("Accept", "application/json, text/event-stream")
            .header("MCP-Protocol-Version", MCP_PROTOCOL)
            .json(body)
    }

    pub fn encode(&self, host: &str) -> Vec<u8> {
        let mut head = format!(
            "{} {} HTTP/1.1\r\nHost: {host}\r\nContent-Length: {}\r\n",
            self.method,
            self.path,
            self.body.len()
        );
        for (k, v) in &self.headers {
            head.push_str(&format!("{k}: {v}\r\n"));
        }
        head.push_str("\r\n");
        let mut out = head.into_bytes();
        out.extend_from_slice(&self.body);
        out
    }
}

/// Reads one response from a connection (Content-Length or chunked).
pub async fn read_response<R: tokio::io::AsyncBufRead + Unpin>(
    reader: &mut R,
) -> std::io::Result<Response> {
    let mut line = String::new();
    reader.read_line(&mut line).await?;
    let status: u16 = line
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .ok_or_else(|| std::io::Error::other(format!("bad status line {line:?}")))?;
    let mut headers = BTreeMap::new();
    loop {
        line.clear();
        reader.read_line(&mut line).await?;
        let l = line.trim_end();
        if l.is_empty() {
            break;
        }
        if let Some((k, v)) = l.split_once(':') {
            headers.insert(k.trim().to_ascii_lowercase(), v.trim().to_owned());
        }
    }
    let mut body = Vec::new();
    if headers
        .get("transfer-encoding")
        .is_some_and(|v| v.eq_ignore_ascii_case("chunked"))
    {
        loop {
            line.clear();
            reader.read_line(&mut line).await?;
            let size = usize::from_str_radix(line.trim(), 16).map_err(std::io::Error::other)?;
            let mut chunk = vec![0; size + 2];
            reader.read_exact(&mut chunk).await?;
            if size == 0 {
                break;
            }
            body.extend_from_slice(&chunk[..size]);
        }
    } else if let Some(len) = headers
        .get("content-length")
        .and_then(|v| v.parse::<usize>().ok())
    {
        body.resize(len, 0);
        reader.read_exact(&mut body).await?;
    }
    Ok(Response {
        status,
        headers,
        body,
    })
}

impl Client {
    pub fn new(base: &str) -> Client {
        Client {
            host: base
                .trim_start_matches("http://")
                .trim_end_matches('/')
                .to_owned(),
        }
    }

    pub fn host(&self) -> &str {
        &self.host
    }

    /// The path and query of an absolute link to this server.
    pub fn path_of(&self, url: &str) -> String {
        url.strip_prefix(&format!("http://{}", self.host))
            .unwrap_or_else(|| panic!("{url} is not a link to http://{}", self.host))
            .to_owned()
    }

    /// Sends one request on a new connection.
    pub async fn send(&self, req: Request) -> Response {
        let stream = TcpStream::connect(&self.host).await.expect("connect");
        let (read, mut write) = stream.into_split();
        write
            .write_all(&req.encode(&self.host))
            .await
            .expect("write");
        let mut reader = BufReader::new(read);
        read_response(&mut reader).await.expect("response")
    }

    pub async fn get(&self, path: &str, key: &str) -> Response {
        self.send(Request::new("GET", path).bearer(key)).await
    }

    pub async fn post(&self, path: &str, key: &str, body: &Value) -> Response {
        self.send(Request::new("POST", path).bearer(key).json(body))
            .await
    }

    pub async fn post_idem(&self, path: &str, key: &str, idem: &str, body: &Value) -> Response {
        self.send(
            Request::new("POST", path)
                .bearer(key)
                .header("Idempotency-Key", idem)
                .json(body),
        )
        .await
    }
}
