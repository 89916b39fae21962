//! The research provider over HTTP: one `POST {base}/v1/lookups` per item, with the key as a
//! bearer token. Its address and key come from the environment (`FLEETDESK_AD_RESEARCH_URL`,
//! `FLEETDESK_AD_RESEARCH_KEY`): never stored, never logged, never in an error message.
//!
//! The request: `{"kind": "product_brief", "marketplace": "shopee", "item_id": "…"}` or
//! `{"kind": "topic_scout", "keyword": "…"}`. The answer: 200 `{"found": true, "item":
//! {title, price, currency, sales, rating, shop, url, selling_points}}` or `{"found": false}`
//! (a 404 is not found too). Anything else, a body that does not read, or no answer within the
//! timeout fails the item (not charged).

use crate::capped::read_capped;
use std::fmt;
use std::time::Duration;

use fleetdesk_ads::provider::{Finding, Lookup, ProviderError, ResearchProvider};
use fleetdesk_ads::research::ResearchKind;
use fleetdesk_kernel::BoxFuture;
use serde::Deserialize;
use serde_json::json;

/// How long one lookup may take.
pub const TIMEOUT: Duration = Duration::from_secs(20);
/// The largest answer read.
const MAX_ANSWER: usize = 256 * 1024;

/// The provider's address and key.
#[derive(Clone)]
pub struct HttpResearch {
    client: reqwest::Client,
    endpoint: String,
    key: String,
}

/// Never shows the key.
impl fmt::Debug for HttpResearch {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("HttpResearch")
            .field("endpoint", &self.endpoint)
            .field("key", &"<redacted>")
            .finish()
    }
}

#[derive(Deserialize)]
struct Answer {
    found: bool,
    #[serde(default)]
    item: Option<Item>,
}

/// What the provider sends of an item; anything else it sends (reviews, buyers) is ignored.
#[derive(Deserialize)]
struct Item {
    title: Option<String>,
    price: Option<f64>,
    currency: Option<String>,
    sales: Option<i64>,
    rating: Option<f64>,
    shop: Option<String>,
    url: Option<String>,
    #[serde(default)]
    selling_points: Vec<String>,
}

impl HttpResearch {
    /// The provider at `base` (`http` or `https`) with `key`; lookups time out after
    /// `timeout`.
    pub fn new(base: &str, key: String, timeout: Duration) -> anyhow::Result<HttpResearch> {
        let url = url::Url::parse(base)
            .map_err(|_| anyhow::anyhow!("FLEETDESK_AD_RESEARCH_URL is not a URL"))?;
        if !matches!(url.scheme(), "http" | "https") || !url.username().is_empty() {
            anyhow::bail!("FLEETDESK_AD_RESEARCH_URL must be http(s) without credentials");
        }
        let client = reqwest::Client::builder()
            .timeout(timeout)
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .map_err(|e| anyhow::anyhow!("the research provider's client: {}", e.without_url()))?;
        Ok(HttpResearch {
            client,
            endpoint: format!("{}/v1/lookups", base.trim_end_matches('/')),
            key,
        })
    }

    /// From `FLEETDESK_AD_RESEARCH_URL` and `FLEETDESK_AD_RESEARCH_KEY`; `None` when no URL is
    /// set (the sandbox answers then).
    pub fn from_env() -> anyhow::Result<Option<HttpResearch>> {
        let Some(base) = std::env::var("FLEETDESK_AD_RESEARCH_URL")
            .ok()
            .filter(|u| !u.is_empty())
        else {
            return Ok(None);
        };
        let key = std::env::var("FLEETDESK_AD_RESEARCH_KEY").unwrap_or_default();
        if key.is_empty() {
            anyhow::bail!("FLEETDESK_AD_RESEARCH_URL is set without FLEETDESK_AD_RESEARCH_KEY");
        }
        Self::new(&base, key, TIMEOUT).map(Some)
    }

    async fn ask(
        &self,
        kind: ResearchKind,
        key: &str,
        searched: &str,
    ) -> Result<Lookup, ProviderError> {
        let body = match kind {
            ResearchKind::ProductBrief => {
                let (marketplace, item_id) = key.split_once(':').unwrap_or(("", key));
                json!({"kind": kind.as_str(), "marketplace": marketplace, "item_id": item_id})
            }
            ResearchKind::TopicScout => json!({"kind": kind.as_str(), "keyword": searched}),
        };
        let failed = |e: reqwest::Error| {
            let what = if e.is_timeout() {
                "no answer in time".to_owned()
            } else {
                format!("{}", e.without_url())
            };
            ProviderError(format!("the research provider: {what}"))
        };
        let answer = self
            .client
            .post(&self.endpoint)
            .bearer_auth(&self.key)
            .header("content-type", "application/json")
            .body(body.to_string())
            .send()
            .await
            .map_err(failed)?;
        let status = answer.status();
        if status == reqwest::StatusCode::NOT_FOUND {
            return Ok(Lookup::NotFound);
        }
        if !status.is_success() {
            return Err(ProviderError(format!(
                "the research provider answered {}",
                status.as_u16()
            )));
        }
        let Some(bytes) = read_capped(answer, MAX_ANSWER).await.map_err(failed)? else {
            return Err(ProviderError(format!(
                "the research provider's answer is over {MAX_ANSWER} bytes"
            )));
        };
        let answer: Answer = serde_json::from_slice(&bytes).map_err(|e| {
            ProviderError(format!("the research provider's answer does not read: {e}"))
        })?;
        Ok(match (answer.found, answer.item) {
            (true, Some(item)) => Lookup::Found(Finding {
                title: item.title,
                price: item.price,
                currency: item.currency,
                sales: item.sales,
                rating: item.rating,
                shop: item.shop,
                url: item.url,
                angles: item.selling_points,
            }),
            (true, None) => Lookup::Found(Finding::default()),
            (false, _) => Lookup::NotFound,
        })
    }
}

impl ResearchProvider for HttpResearch {
    fn lookup<'a>(
        &'a self,
        kind: ResearchKind,
        key: &'a str,
        searched: &'a str,
    ) -> BoxFuture<'a, Result<Lookup, ProviderError>> {
        Box::pin(self.ask(kind, key, searched))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::capped::fake::{Body, serve};

    /// `{"found": false}` padded with spaces to `size` bytes.
    fn padded(size: usize) -> Vec<u8> {
        let mut body = br#"{"found": false}"#.to_vec();
        body.resize(size, b' ');
        body
    }

    #[tokio::test]
    async fn an_answer_at_the_cap_is_read_and_one_byte_past_it_is_refused_unread() {
        for body in [Body::Sized as fn(Vec<u8>) -> Body, Body::Chunked] {
            let (base, _) = serve(200, body(padded(MAX_ANSWER))).await;
            let provider = HttpResearch::new(&base, "k".into(), TIMEOUT).unwrap();
            let found = provider.lookup(ResearchKind::TopicScout, "", "serum").await;
            assert!(matches!(found, Ok(Lookup::NotFound)), "{found:?}");

            let (base, _) = serve(200, body(padded(MAX_ANSWER + 1))).await;
            let provider = HttpResearch::new(&base, "k".into(), TIMEOUT).unwrap();
            let e = provider
                .lookup(ResearchKind::TopicScout, "", "serum")
                .await
                .unwrap_err();
            assert_eq!(e.0, "the research provider's answer is over 262144 bytes");
        }
        // An answer without end is refused, not read forever.
        let (base, _) = serve(200, Body::Endless(8192)).await;
        let provider = HttpResearch::new(&base, "k".into(), TIMEOUT).unwrap();
        let e = provider
            .lookup(ResearchKind::TopicScout, "", "serum")
            .await
            .unwrap_err();
        assert!(e.0.contains("over 262144 bytes"), "{}", e.0);
    }
}
