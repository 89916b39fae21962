//! Webhook attempts over HTTP: [`HttpWebhookSender`] implements the
//! [`fleetdesk_webhooks::WebhookSender`] port with reqwest.
//!
//! Against SSRF, every address a host resolves to is judged when the connection is made
//! ([`fleetdesk_webhooks::forbidden`], in the client's own resolver), so a name that resolves
//! to a public address when the endpoint is registered and to a private one later is still
//! refused; a URL naming an address is judged before connecting. No proxy is used (it would
//! resolve the name itself) and no redirect is followed (a 3xx is a failed status). Only the
//! first [`EXCERPT_BYTES`] of an answer are read. Nothing of a request's body or headers is
//! logged.

use fleetdesk_kernel::BoxFuture;
use fleetdesk_webhooks::{ForbiddenKind, Outcome, Outgoing, WebhookSender, forbidden};
use reqwest::dns::{Addrs, Name, Resolve, Resolving};
use std::fmt;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// How long an attempt may take, connecting and reading included, unless told otherwise.
pub const TIMEOUT: Duration = Duration::from_secs(10);

/// The most of an answer's body read and kept.
pub const EXCERPT_BYTES: usize = 4096;

/// The `user-agent` of every attempt.
pub const USER_AGENT: &str = "fleetdesk-webhooks/1";

/// Sends webhook attempts; one client (and its connection pool) for all endpoints.
#[derive(Debug, Clone)]
pub struct HttpWebhookSender {
    client: reqwest::Client,
    allow_private: bool,
    timeout: Duration,
}

impl HttpWebhookSender {
    /// A sender whose attempts give up after `timeout` ([`TIMEOUT`] is a fair default);
    /// `allow_private` lets endpoints reach the addresses [`forbidden`] names (local
    /// development and tests only).
    pub fn new(allow_private: bool, timeout: Duration) -> anyhow::Result<HttpWebhookSender> {
        let client = reqwest::Client::builder()
            .dns_resolver(Arc::new(GuardedResolver { allow_private }))
            .no_proxy()
            .redirect(reqwest::redirect::Policy::none())
            .connect_timeout(timeout)
            .timeout(timeout)
            .user_agent(USER_AGENT)
            .build()
            .map_err(|e| anyhow::anyhow!("the webhook client: {}", e.without_url()))?;
        Ok(HttpWebhookSender {
            client,
            allow_private,
            timeout,
        })
    }

    async fn attempt(&self, request: Outgoing<'_>) -> Outcome {
        let started = Instant::now();
        let elapsed = || u32::try_from(started.elapsed().as_millis()).unwrap_or(u32::MAX);
        if !self.allow_private
            && let Some(kind) = request.url.ip().and_then(forbidden)
        {
            return Outcome::failed(format!("refused: the address is {kind}"), elapsed());
        }
        let mut post = self
            .client
            .post(request.url.url().clone())
            .header(reqwest::header::CONTENT_TYPE, "application/json");
        for (name, value) in request.headers {
            post = post.header(name, value);
        }
        let mut answer = match post.body(request.body.to_vec()).send().await {
            Ok(answer) => answer,
            Err(e) => return Outcome::failed(self.describe(e), elapsed()),
        };
        let status = answer.status().as_u16();
        let mut kept = Vec::new();
        let mut error = None;
        while kept.len() < EXCERPT_BYTES {
            match answer.chunk().await {
                Ok(Some(chunk)) => {
                    let room = EXCERPT_BYTES - kept.len();
                    kept.extend_from_slice(&chunk[..chunk.len().min(room)]);
                }
                Ok(None) => break,
                Err(e) => {
                    error = Some(self.describe(e));
                    break;
                }
            }
        }
        // The rest of the body is never read: dropping the answer closes the connection.
        drop(answer);
        Outcome {
            status: Some(status),
            error,
            latency_ms: elapsed(),
            body_excerpt: excerpt(&kept),
        }
    }

    /// An attempt's error without its URL (it may carry a token): the refusal, the timeout,
    /// or reqwest's error and its causes.
    fn describe(&self, e: reqwest::Error) -> String {
        let mut cause: Option<&(dyn std::error::Error + 'static)> = Some(&e);
        while let Some(c) = cause {
            if let Some(refused) = c.downcast_ref::<Refused>() {
                return refused.to_string();
            }
            cause = c.source();
        }
        if e.is_timeout() {
            return format!("no answer within {} ms", self.timeout.as_millis());
        }
        let e = e.without_url();
        let mut text = e.to_string();
        let mut cause = std::error::Error::source(&e);
        while let Some(c) = cause {
            text.push_str(": ");
            text.push_str(&c.to_string());
            cause = c.source();
        }
        text
    }
}

impl WebhookSender for HttpWebhookSender {
    fn send<'a>(&'a self, request: Outgoing<'a>) -> BoxFuture<'a, Outcome> {
        Box::pin(self.attempt(request))
    }
}

/// The kept bytes as text; a character cut at the cap is left out rather than replaced.
fn excerpt(kept: &[u8]) -> String {
    let end = match std::str::from_utf8(kept) {
        Err(e) if e.error_len().is_none() => e.valid_up_to(),
        _ => kept.len(),
    };
    String::from_utf8_lossy(&kept[..end]).into_owned()
}

/// Resolves with the system's resolver (tokio) and keeps only the addresses a webhook may
/// reach, unless `allow_private`.
struct GuardedResolver {
    allow_private: bool,
}

/// Every address the host resolves to is forbidden; the first one's kind.
#[derive(Debug)]
struct Refused(ForbiddenKind);

impl fmt::Display for Refused {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "refused: the host resolves to {}", self.0)
    }
}

impl std::error::Error for Refused {}

impl Resolve for GuardedResolver {
    fn resolve(&self, name: Name) -> Resolving {
        let allow_private = self.allow_private;
        let host = name.as_str().to_owned();
        Box::pin(async move {
            let found: Vec<SocketAddr> =
                tokio::net::lookup_host((host.as_str(), 0)).await?.collect();
            if allow_private {
                return Ok(Box::new(found.into_iter()) as Addrs);
            }
            let mut refused = None;
            let kept: Vec<SocketAddr> = found
                .into_iter()
                .filter(|addr| match forbidden(addr.ip()) {
                    Some(kind) => {
                        refused.get_or_insert(kind);
                        false
                    }
                    None => true,
                })
                .collect();
            match refused {
                Some(kind) if kept.is_empty() => Err(Box::new(Refused(kind)) as _),
                _ => Ok(Box::new(kept.into_iter()) as Addrs),
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use fleetdesk_webhooks::{EndpointUrl, WebhookSecret, headers, signature_header, verify};
    use std::sync::Mutex;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    use tokio::net::{TcpListener, TcpStream};

    /// How the fake receiver answers.
    #[derive(Debug, Clone, Copy)]
    enum Answer {
        Ok,
        Redirect,
        Fail,
        /// 200 with a body of 1 MB.
        Huge,
        /// Reads the request and never answers.
        Silent,
    }

    /// A request as the fake receiver read it.
    #[derive(Debug, Clone)]
    struct Seen {
        head: String,
        body: Vec<u8>,
    }

    impl Seen {
        fn header(&self, name: &str) -> Option<&str> {
            self.head.lines().skip(1).find_map(|line| {
                let (n, v) = line.split_once(':')?;
                n.eq_ignore_ascii_case(name).then(|| v.trim())
            })
        }
    }

    type Log = Arc<Mutex<Vec<Seen>>>;

    const MB: usize = 1 << 20;

    /// A receiver on 127.0.0.1, a free port: its port and what it was sent.
    async fn receiver(answer: Answer) -> (u16, Log) {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        let log = Log::default();
        let seen = log.clone();
        tokio::spawn(async move {
            while let Ok((socket, _)) = listener.accept().await {
                tokio::spawn(serve(socket, answer, seen.clone()));
            }
        });
        (port, log)
    }

    async fn serve(mut socket: TcpStream, answer: Answer, log: Log) {
        let mut buf = Vec::new();
        let mut chunk = [0u8; 8192];
        let head_end = loop {
            if let Some(i) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
                break i + 4;
            }
            match socket.read(&mut chunk).await {
                Ok(0) | Err(_) => return,
                Ok(n) => buf.extend_from_slice(&chunk[..n]),
            }
        };
        let head = String::from_utf8_lossy(&buf[..head_end]).into_owned();
        let mut seen = Seen {
            head,
            body: Vec::new(),
        };
        let length: usize = seen
            .header("content-length")
            .and_then(|v| v.parse().ok())
            .unwrap_or(0);
        while buf.len() < head_end + length {
            match socket.read(&mut chunk).await {
                Ok(0) | Err(_) => return,
                Ok(n) => buf.extend_from_slice(&chunk[..n]),
            }
        }
        seen.body = buf[head_end..head_end + length].to_vec();
        log.lock().unwrap().push(seen);
        let reply = |status: &str, extra: &str, body: &[u8]| {
            let mut reply = format!(
                "HTTP/1.1 {status}\r\ncontent-length: {}\r\nconnection: close\r\n{extra}\r\n",
                body.len()
            )
            .into_bytes();
            reply.extend_from_slice(body);
            reply
        };
        let reply = match answer {
            Answer::Ok => reply("200 OK", "", b"thanks"),
            Answer::Redirect => reply("302 Found", "location: /elsewhere\r\n", b""),
            Answer::Fail => reply("500 Internal Server Error", "", b"{\"error\":\"down\"}"),
            Answer::Huge => reply("200 OK", "", &vec![b'a'; MB]),
            Answer::Silent => {
                tokio::time::sleep(Duration::from_secs(60)).await;
                return;
            }
        };
        // The sender may hang up before a huge answer is written.
        let _ = socket.write_all(&reply).await;
        let _ = socket.shutdown().await;
    }

    const BODY: &[u8] = br#"{"type":"post.published","data":{"id":"p1"}}"#;
    const MSG_ID: &str = "msg_0195f3a47b2c7d4e9f00112233445566";
    const TS: i64 = 1_795_000_000;

    fn secret() -> WebhookSecret {
        WebhookSecret::parse("whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw").unwrap()
    }

    async fn post(url: &str, allow_private: bool, timeout: Duration) -> Outcome {
        let sender = HttpWebhookSender::new(allow_private, timeout).unwrap();
        let url = EndpointUrl::parse(url, true).unwrap();
        let signature = signature_header(&[&secret()], MSG_ID, TS, BODY);
        let request = Outgoing {
            url: &url,
            headers: headers(MSG_ID, TS, signature),
            body: BODY,
        };
        sender.send(request).await
    }

    async fn post_local(port: u16) -> Outcome {
        let url = format!("http://127.0.0.1:{port}/hooks?x=1");
        post(&url, true, TIMEOUT).await
    }

    #[tokio::test]
    async fn a_2xx_is_delivered_signed_with_the_headers() {
        let (port, log) = receiver(Answer::Ok).await;
        let outcome = post_local(port).await;
        assert_eq!(outcome.status, Some(200), "{outcome:?}");
        assert!(outcome.delivered());
        assert_eq!(outcome.error, None);
        assert_eq!(outcome.body_excerpt, "thanks");
        let seen = log.lock().unwrap().clone();
        assert_eq!(seen.len(), 1);
        let seen = &seen[0];
        assert!(
            seen.head.starts_with("POST /hooks?x=1 HTTP/1.1\r\n"),
            "{}",
            seen.head
        );
        assert_eq!(seen.body, BODY);
        assert_eq!(seen.header("content-type"), Some("application/json"));
        assert_eq!(seen.header("user-agent"), Some(USER_AGENT));
        assert_eq!(seen.header("webhook-id"), Some(MSG_ID));
        assert_eq!(seen.header("webhook-timestamp"), Some("1795000000"));
        let signature = seen.header("webhook-signature").unwrap();
        let ts: i64 = seen.header("webhook-timestamp").unwrap().parse().unwrap();
        let id = seen.header("webhook-id").unwrap();
        assert!(verify(signature, &[&secret()], id, ts, &seen.body));
        let stranger = WebhookSecret::generate().unwrap();
        assert!(!verify(signature, &[&stranger], id, ts, &seen.body));
    }

    #[tokio::test]
    async fn loopback_is_refused_unless_private_addresses_are_allowed() {
        let (port, log) = receiver(Answer::Ok).await;
        let literal = format!("http://127.0.0.1:{port}/hooks");
        let outcome = post(&literal, false, TIMEOUT).await;
        assert_eq!(outcome.status, None);
        assert_eq!(
            outcome.error.as_deref(),
            Some("refused: the address is a loopback address")
        );
        let mapped = format!("http://[::ffff:127.0.0.1]:{port}/hooks");
        let outcome = post(&mapped, false, TIMEOUT).await;
        assert_eq!(
            outcome.error.as_deref(),
            Some("refused: the address is a loopback address")
        );
        let name = format!("http://localhost:{port}/hooks");
        let outcome = post(&name, false, TIMEOUT).await;
        assert_eq!(outcome.status, None);
        assert_eq!(
            outcome.error.as_deref(),
            Some("refused: the host resolves to a loopback address"),
            "{outcome:?}"
        );
        assert!(log.lock().unwrap().is_empty());

        let outcome = post(&literal, true, TIMEOUT).await;
        assert_eq!(outcome.status, Some(200), "{outcome:?}");
        let outcome = post(&name, true, TIMEOUT).await;
        assert_eq!(outcome.status, Some(200), "{outcome:?}");
        assert_eq!(log.lock().unwrap().len(), 2);
    }

    #[tokio::test]
    async fn a_redirect_is_not_followed() {
        let (port, log) = receiver(Answer::Redirect).await;
        let outcome = post_local(port).await;
        assert_eq!(outcome.status, Some(302), "{outcome:?}");
        assert!(!outcome.delivered());
        assert_eq!(log.lock().unwrap().len(), 1);
    }

    #[tokio::test]
    async fn a_500_is_a_failure_with_its_status_and_body() {
        let (port, _log) = receiver(Answer::Fail).await;
        let outcome = post_local(port).await;
        assert_eq!(outcome.status, Some(500));
        assert!(!outcome.delivered());
        assert_eq!(outcome.body_excerpt, r#"{"error":"down"}"#);
    }

    #[tokio::test]
    async fn a_huge_answer_is_read_only_up_to_the_cap() {
        let (port, _log) = receiver(Answer::Huge).await;
        let outcome = post_local(port).await;
        assert_eq!(outcome.status, Some(200), "{outcome:?}");
        assert_eq!(outcome.body_excerpt.len(), EXCERPT_BYTES);
        assert!(outcome.body_excerpt.bytes().all(|b| b == b'a'));
    }

    #[tokio::test]
    async fn a_silent_receiver_times_out_without_holding_up_others() {
        let (silent, _) = receiver(Answer::Silent).await;
        let (ok, _) = receiver(Answer::Ok).await;
        let timeout = Duration::from_millis(300);
        let silent = format!("http://127.0.0.1:{silent}/hooks");
        let ok = format!("http://127.0.0.1:{ok}/hooks");
        let (stuck, fine) = tokio::join!(post(&silent, true, timeout), post(&ok, true, timeout));
        assert_eq!(stuck.status, None);
        assert_eq!(stuck.error.as_deref(), Some("no answer within 300 ms"));
        assert_eq!(fine.status, Some(200), "{fine:?}");
    }

    #[test]
    fn an_excerpt_leaves_out_a_character_cut_at_the_cap() {
        assert_eq!(excerpt("héllo".as_bytes()), "héllo");
        assert_eq!(excerpt(&"hé".as_bytes()[..2]), "h");
        assert_eq!(excerpt(b"a\xffb"), "a\u{fffd}b");
    }
}
