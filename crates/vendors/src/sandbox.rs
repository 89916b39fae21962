//! The sandbox research provider: answers every lookup from the item's key alone, the same
//! way every time, without a network. For demos, tests, and trying the quote-approve flow
//! without spending.
//!
//! What it answers, by the item's key (`<marketplace>:<id>` or `keyword:<term>`):
//! - ending in `404` (an id) or containing `notfound` (a keyword): not found;
//! - ending in `500` or containing `fail`: a provider failure (not charged);
//! - anything else: found, with a title, price, sales, rating and shop derived from the key's
//!   SHA-256, and a link for products.

use fleetdesk_ads::provider::{Finding, Lookup, ProviderError, ResearchProvider};
use fleetdesk_ads::research::ResearchKind;
use fleetdesk_kernel::BoxFuture;
use sha2::{Digest, Sha256};

#[derive(Debug, Clone, Copy, Default)]
pub struct SandboxResearch;

impl SandboxResearch {
    /// The answer for `key`.
    pub fn answer(kind: ResearchKind, key: &str, searched: &str) -> Result<Lookup, ProviderError> {
        if key.ends_with("500") || key.contains("fail") {
            return Err(ProviderError(
                "sandbox: the provider failed (the item asked for it)".into(),
            ));
        }
        if key.ends_with("404") || key.contains("notfound") {
            return Ok(Lookup::NotFound);
        }
        let digest = Sha256::digest(key.as_bytes());
        let n = |i: usize| u64::from(digest[i]) << 8 | u64::from(digest[i + 1]);
        let (title, url) = match kind {
            ResearchKind::ProductBrief => (
                format!("Sandbox product {searched}"),
                key.split_once(':')
                    .map(|(m, id)| format!("https://sandbox.fleetdesk.invalid/{m}/{id}")),
            ),
            ResearchKind::TopicScout => (format!("Top seller for {searched}"), None),
        };
        Ok(Lookup::Found(Finding {
            title: Some(title),
            price: Some((100 + n(0) % 1900) as f64),
            currency: Some("TWD".into()),
            sales: Some((n(2) % 5000) as i64),
            rating: Some(3.5 + (n(4) % 16) as f64 / 10.0),
            shop: Some(format!("Sandbox shop {}", n(6) % 100)),
            url,
            angles: vec!["long-lasting".into(), "gift-ready".into()],
        }))
    }
}

impl ResearchProvider for SandboxResearch {
    fn lookup<'a>(
        &'a self,
        kind: ResearchKind,
        key: &'a str,
        searched: &'a str,
    ) -> BoxFuture<'a, Result<Lookup, ProviderError>> {
        Box::pin(async move { Self::answer(kind, key, searched) })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_key_decides_the_answer_the_same_way_every_time() {
        let p = ResearchKind::ProductBrief;
        assert_eq!(
            SandboxResearch::answer(p, "shopee:111404", "x"),
            Ok(Lookup::NotFound)
        );
        assert!(SandboxResearch::answer(p, "shopee:111500", "x").is_err());
        let found = SandboxResearch::answer(p, "shopee:111111", "shopee:111111").unwrap();
        assert_eq!(
            found,
            SandboxResearch::answer(p, "shopee:111111", "shopee:111111").unwrap()
        );
        let Lookup::Found(f) = found else {
            panic!("{found:?}")
        };
        assert_eq!(
            f.url.as_deref(),
            Some("https://sandbox.fleetdesk.invalid/shopee/111111")
        );
        assert!((3.5..=5.0).contains(&f.rating.unwrap()));
        let k = ResearchKind::TopicScout;
        assert_eq!(
            SandboxResearch::answer(k, "keyword:notfound serum", "x"),
            Ok(Lookup::NotFound)
        );
    }
}
