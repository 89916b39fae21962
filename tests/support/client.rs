//! The tests' HTTP client: reqwest (already in the build through object_store), one pool of
//! keep-alive connections per server, HTTP/1.1 only, no proxy, no redirects, no decompression.
//! Requests keep their headers as written (duplicates included); responses keep raw bodies.
//! What a conforming client cannot send (an early answer while a body is still being written,
//! `Expect: 100-continue` by hand, a hand-made chunked body) goes through [`crate::raw`].

use serde_json::Value;
use std::collections::BTreeMap;

pub use crate::raw::read_response;

#[derive(Debug, Clone)]
pub struct Client {
    host: String,
    http: reqwest::Client,
}

#[derive(Debug, Clone)]
pub struct Response {
    pub status: u16,
    /// Header names lower-cased; a header sent twice keeps its last value.
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
}

impl Client {
    pub fn new(base: &str) -> Client {
        let http = reqwest::Client::builder()
            .http1_only()
            .no_proxy()
            .redirect(reqwest::redirect::Policy::none())
            // Below the server's keep-alive (5 s): an idle connection is let go before the
            // server closes it, so a request never races a closing connection.
            .pool_idle_timeout(std::time::Duration::from_secs(2))
            .build()
            .expect("an HTTP client");
        Client {
            host: base
                .trim_start_matches("http://")
                .trim_end_matches('/')
                .to_owned(),
            http,
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

    /// Sends one request (on a kept-alive connection when one is idle).
    pub async fn send(&self, req: Request) -> Response {
        let method = reqwest::Method::from_bytes(req.method.as_bytes())
            .unwrap_or_else(|e| panic!("method {:?}: {e}", req.method));
        let url = format!("http://{}{}", self.host, req.path);
        let mut headers = reqwest::header::HeaderMap::new();
        for (name, value) in &req.headers {
            headers.append(
                reqwest::header::HeaderName::from_bytes(name.as_bytes())
                    .unwrap_or_else(|e| panic!("header name {name:?}: {e}")),
                // From bytes: any value a server must judge (obs-text included) is sent.
                reqwest::header::HeaderValue::from_bytes(value.as_bytes())
                    .unwrap_or_else(|e| panic!("header {name} value {value:?}: {e}")),
            );
        }
        let res = self
            .http
            .request(method, &url)
            .headers(headers)
            .body(req.body)
            .send()
            .await
            .unwrap_or_else(|e| panic!("{} {url}: {e:?}", req.method));
        let status = res.status().as_u16();
        let headers = res
            .headers()
            .iter()
            .map(|(k, v)| {
                (
                    k.as_str().to_owned(),
                    String::from_utf8_lossy(v.as_bytes()).trim().to_owned(),
                )
            })
            .collect();
        let body = res
            .bytes()
            .await
            .unwrap_or_else(|e| panic!("{} {url}: reading the body: {e:?}", req.method))
            .to_vec();
        Response {
            status,
            headers,
            body,
        }
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
