//! An async, typed client of fleetdesk's Agent API and Personal API.
//!
//! Every operation is a handle type of the domain crate that owns it (`fleetdesk_tasks::wire`,
//! ...), with the request and response types the server itself parses and answers: a call
//! names the handle, passes its typed input and gets its typed output. A renamed field fails
//! to compile here as it does in the server.
//!
//! - Each call of an idempotent operation carries an `Idempotency-Key`, made per call
//!   ([`Call::idempotency_key`] sets one of your own); its retries carry the same key.
//! - A 429 or 503 is retried after the `Retry-After` the server gives (at most
//!   [`Client::retries`] times, 3 by default).
//! - A list reads as a stream of its items across pages ([`Client::pages`]).
//!
//! ```no_run
//! use fleetdesk_client::{Client, Req};
//! use fleetdesk_kernel::op::Nothing;
//! use fleetdesk_tasks::wire::{TaskQueryIn, agent::ListTasks};
//! use futures_util::TryStreamExt;
//!
//! # async fn run() -> Result<(), fleetdesk_client::Error> {
//! let client = Client::new("http://127.0.0.1:8080", "fda_...")?;
//! let first = client
//!     .call::<ListTasks>(Req { path: Nothing, query: TaskQueryIn::default(), body: Nothing })
//!     .await?;
//! println!("{} cards on the first page", first.tasks.len());
//! // Or every card, page after page.
//! let all: Vec<_> = client.pages::<ListTasks>(TaskQueryIn::default()).try_collect().await?;
//! # Ok(()) }
//! ```

use fleetdesk_kernel::op::{Nothing, Operation};
use fleetdesk_kernel::wire::Paged;
use futures_core::Stream;
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;
use std::time::Duration;

pub use fleetdesk_kernel::op::Req;

/// What went wrong with a call.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The server answered with an error (its body's code, message and field).
    #[error("{status} {code}: {message}")]
    Api {
        status: u16,
        /// One of the codes of the specification's Errors table (`invalid_request`, ...).
        code: String,
        message: String,
        /// The field at fault, for `invalid_request`.
        field: Option<String>,
        request_id: Option<String>,
    },
    /// The request did not reach the server, or its answer did not arrive.
    #[error("transport: {0}")]
    Transport(#[from] reqwest::Error),
    /// An input that does not write as its part (a path that is not an object, ...) or an
    /// answer that does not read as the operation's output.
    #[error("{0}")]
    Shape(String),
    /// The base URL given to [`Client::new`] is not one.
    #[error("base url: {0}")]
    BaseUrl(#[from] url::ParseError),
}

impl Error {
    /// The error code of an API error.
    pub fn code(&self) -> Option<&str> {
        match self {
            Error::Api { code, .. } => Some(code),
            _ => None,
        }
    }
}

/// A client of one fleetdesk service with one key: an agent key (`fda_...`) for the Agent API,
/// a personal key (`fdp_...`) for the Personal API.
#[derive(Debug, Clone)]
pub struct Client {
    http: reqwest::Client,
    base: url::Url,
    key: String,
    retries: u32,
}

/// The longest wait between retries, whatever `Retry-After` says.
const LONGEST_WAIT: Duration = Duration::from_secs(60);

impl Client {
    /// A client of the service at `base_url` (`http://host:port`, without the API prefix).
    pub fn new(base_url: &str, key: impl Into<String>) -> Result<Client, Error> {
        Ok(Client {
            http: reqwest::Client::new(),
            base: url::Url::parse(base_url)?,
            key: key.into(),
            retries: 3,
        })
    }

    /// How often a call answered 429 or 503 is sent again (0: never).
    pub fn retries(mut self, retries: u32) -> Client {
        self.retries = retries;
        self
    }

    /// Calls operation `O` with `req`.
    pub async fn call<O>(&self, req: Req<O::Path, O::Query, O::Body>) -> Result<O::Output, Error>
    where
        O: Operation,
        O::Path: Serialize,
        O::Query: Serialize,
        O::Body: Serialize,
        O::Output: DeserializeOwned,
    {
        Call::<O>::new(req).send(self).await
    }

    /// Every item of list `O` from `query` on, page after page, as a stream.
    pub fn pages<O>(&self, query: O::Query) -> impl Stream<Item = Result<O::Item, Error>> + '_
    where
        O: Paged<Path = Nothing, Body = Nothing>,
        O::Query: Serialize + Clone,
        O::Output: DeserializeOwned,
    {
        use futures_util::stream::{self, TryStreamExt};
        stream::try_unfold(Some(query), move |next| async move {
            let Some(query) = next else {
                return Ok(None);
            };
            let out = self
                .call::<O>(Req {
                    path: Nothing,
                    query: query.clone(),
                    body: Nothing,
                })
                .await?;
            let (items, cursor) = O::page(out);
            let next = cursor.map(|c| {
                let mut q = query;
                O::after(&mut q, c);
                q
            });
            Ok::<_, Error>(Some((stream::iter(items.into_iter().map(Ok)), next)))
        })
        .try_flatten()
    }
}

/// One call with its settings, for what [`Client::call`] does not set.
pub struct Call<O: Operation> {
    req: Req<O::Path, O::Query, O::Body>,
    idempotency_key: Option<String>,
}

impl<O> Call<O>
where
    O: Operation,
    O::Path: Serialize,
    O::Query: Serialize,
    O::Body: Serialize,
    O::Output: DeserializeOwned,
{
    pub fn new(req: Req<O::Path, O::Query, O::Body>) -> Call<O> {
        Call {
            req,
            idempotency_key: None,
        }
    }

    /// The `Idempotency-Key` of this call, in place of a new one (an idempotent operation
    /// only; resending a call with its key replays its first answer).
    pub fn idempotency_key(mut self, key: impl Into<String>) -> Call<O> {
        self.idempotency_key = Some(key.into());
        self
    }

    pub async fn send(self, client: &Client) -> Result<O::Output, Error> {
        let spec = &O::SPEC;
        let url = url_of(&client.base, spec, &self.req)?;
        let body = body_of(&self.req.body)?;
        let key = spec.idempotent.then(|| {
            self.idempotency_key
                .unwrap_or_else(|| uuid::Uuid::new_v4().to_string())
        });
        let method = match spec.method {
            fleetdesk_kernel::op::HttpMethod::Get => reqwest::Method::GET,
            fleetdesk_kernel::op::HttpMethod::Post => reqwest::Method::POST,
            fleetdesk_kernel::op::HttpMethod::Put => reqwest::Method::PUT,
        };
        let mut attempt = 0;
        loop {
            let mut request = client
                .http
                .request(method.clone(), url.clone())
                .bearer_auth(&client.key);
            if let Some(key) = &key {
                request = request.header("Idempotency-Key", key);
            }
            if let Some(body) = &body {
                request = request
                    .header(reqwest::header::CONTENT_TYPE, "application/json")
                    .body(body.clone());
            }
            let response = request.send().await?;
            let status = response.status().as_u16();
            if matches!(status, 429 | 503) && attempt < client.retries {
                attempt += 1;
                tokio::time::sleep(wait_before_retry(&response, attempt)).await;
                continue;
            }
            let bytes = response.bytes().await?;
            if !(200..300).contains(&status) {
                return Err(api_error(status, &bytes));
            }
            return serde_json::from_slice(&bytes).map_err(|e| {
                Error::Shape(format!("the answer of {} does not read: {e}", spec.id()))
            });
        }
    }
}

/// `Retry-After` in seconds, else a doubling wait from one second.
fn wait_before_retry(response: &reqwest::Response, attempt: u32) -> Duration {
    response
        .headers()
        .get(reqwest::header::RETRY_AFTER)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.trim().parse::<u64>().ok())
        .map(Duration::from_secs)
        .unwrap_or_else(|| Duration::from_secs(1 << (attempt - 1).min(5)))
        .min(LONGEST_WAIT)
}

fn api_error(status: u16, bytes: &[u8]) -> Error {
    let body: Value = serde_json::from_slice(bytes).unwrap_or(Value::Null);
    let text = |k: &str| body.get(k).and_then(Value::as_str).map(str::to_owned);
    Error::Api {
        status,
        code: text("code").unwrap_or_else(|| "unknown".to_owned()),
        message: text("message")
            .unwrap_or_else(|| String::from_utf8_lossy(bytes).chars().take(500).collect()),
        field: text("field"),
        request_id: text("request_id"),
    }
}

/// A part as the JSON object of its fields; `Nothing` is none.
fn fields_of(part: &impl Serialize, what: &str) -> Result<serde_json::Map<String, Value>, Error> {
    match serde_json::to_value(part).map_err(|e| Error::Shape(format!("{what}: {e}")))? {
        Value::Null => Ok(serde_json::Map::new()),
        Value::Object(map) => Ok(map),
        other => Err(Error::Shape(format!(
            "{what} must be an object, not {other}"
        ))),
    }
}

/// A value as it stands in a path or a query: text as it is, anything else as JSON.
fn text_of(value: &Value) -> String {
    match value {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// The operation's URL: the API prefix, the path with its parameters, the query.
fn url_of<P: Serialize, Q: Serialize, B>(
    base: &url::Url,
    spec: &fleetdesk_kernel::op::OpSpec,
    req: &Req<P, Q, B>,
) -> Result<url::Url, Error> {
    let params = fields_of(&req.path, "the path")?;
    let mut url = base.clone();
    {
        let mut segments = url
            .path_segments_mut()
            .map_err(|()| Error::Shape("the base url cannot take a path".to_owned()))?;
        segments.pop_if_empty();
        for seg in spec.full_path().split('/').filter(|s| !s.is_empty()) {
            match seg.strip_prefix('{').and_then(|s| s.strip_suffix('}')) {
                Some(name) => {
                    let value = params.get(name).ok_or_else(|| {
                        Error::Shape(format!("the path parameter {name} is missing"))
                    })?;
                    segments.push(&text_of(value));
                }
                None => {
                    segments.push(seg);
                }
            }
        }
    }
    let query = fields_of(&req.query, "the query")?;
    let pairs: Vec<(String, String)> = query
        .iter()
        .filter(|(_, v)| !v.is_null())
        .map(|(k, v)| (k.clone(), text_of(v)))
        .collect();
    if !pairs.is_empty() {
        url.query_pairs_mut().extend_pairs(pairs);
    }
    Ok(url)
}

/// The JSON body, or none for an operation without one ([`Nothing`] writes as null; a body is
/// an object).
fn body_of<B: Serialize>(body: &B) -> Result<Option<Vec<u8>>, Error> {
    let shape = |e: serde_json::Error| Error::Shape(format!("the body: {e}"));
    match serde_json::to_value(body).map_err(shape)? {
        Value::Null => Ok(None),
        value => serde_json::to_vec(&value).map(Some).map_err(shape),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use fleetdesk_kernel::wire::fields::IdPath;
    use fleetdesk_tasks::wire::{StatusList, TaskQueryIn, agent};

    #[test]
    fn a_url_takes_the_prefix_the_path_parameters_and_the_query() {
        let base = url::Url::parse("http://h:1/").unwrap();
        let id = uuid::Uuid::from_u128(5);
        let url = url_of(
            &base,
            &<agent::ClaimTask as Operation>::SPEC,
            &Req {
                path: IdPath { id },
                query: Nothing,
                body: Nothing,
            },
        )
        .unwrap();
        assert_eq!(
            url.as_str(),
            format!("http://h:1/api/agent/v1/tasks/{id}/claim")
        );
        let query = TaskQueryIn {
            status: Some(StatusList(vec![fleetdesk_tasks::TaskStatus::Done])),
            ..TaskQueryIn::default()
        };
        let url = url_of(
            &base,
            &<agent::ListTasks as Operation>::SPEC,
            &Req {
                path: Nothing,
                query,
                body: Nothing,
            },
        )
        .unwrap();
        assert_eq!(url.as_str(), "http://h:1/api/agent/v1/tasks?status=done");
    }

    #[test]
    fn an_error_answer_keeps_its_code_and_field() {
        let e = api_error(
            400,
            br#"{"code":"invalid_request","message":"title: is required","field":"title","request_id":"r1"}"#,
        );
        assert_eq!(e.code(), Some("invalid_request"));
        assert!(matches!(e, Error::Api { field: Some(ref f), .. } if f == "title"));
        let e = api_error(502, b"bad gateway");
        assert_eq!(e.code(), Some("unknown"));
        assert!(e.to_string().contains("bad gateway"));
    }

    #[test]
    fn only_a_call_with_a_body_sends_one() {
        assert_eq!(body_of(&Nothing).unwrap(), None);
        assert_eq!(
            body_of(&serde_json::json!({"a": 1})).unwrap().unwrap(),
            br#"{"a":1}"#
        );
    }
}
