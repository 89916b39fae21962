//! The research provider: a third-party service behind a port. What it finds is someone
//! else's text; the card the service keeps holds only the fields below, so buyer nicknames,
//! avatars or anything else the provider sends never reach a card.

use fleetdesk_kernel::BoxFuture;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::ports::LookupOutcome;
use crate::research::ResearchKind;

/// What the provider found for one item, and what a card shows of it.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct Finding {
    pub title: Option<String>,
    pub price: Option<f64>,
    pub currency: Option<String>,
    pub sales: Option<i64>,
    pub rating: Option<f64>,
    pub shop: Option<String>,
    pub url: Option<String>,
    /// Selling points.
    #[serde(default)]
    pub angles: Vec<String>,
}

/// One lookup's answer.
#[derive(Debug, Clone, PartialEq)]
pub enum Lookup {
    Found(Finding),
    NotFound,
}

/// Why a lookup failed: the item is marked failed and not charged.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct ProviderError(pub String);

/// Looks one item up. `key` is what the item is known by (`<marketplace>:<id>` or
/// `keyword:<term>`), `searched` the term shown.
pub trait ResearchProvider: Send + Sync {
    fn lookup<'a>(
        &'a self,
        kind: ResearchKind,
        key: &'a str,
        searched: &'a str,
    ) -> BoxFuture<'a, Result<Lookup, ProviderError>>;
}

/// Characters kept of a card's text field; selling points kept.
const TEXT_MAX: usize = 300;
const ANGLES_MAX: usize = 10;

/// A card as the service keeps it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Card {
    pub item: String,
    pub searched: String,
    pub found: bool,
    #[serde(flatten)]
    pub finding: Finding,
    /// Always true: the text is the marketplace's, read as data.
    pub third_party: bool,
}

fn text(value: Option<String>) -> Option<String> {
    value
        .map(|v| {
            v.chars()
                .filter(|c| !c.is_control())
                .take(TEXT_MAX)
                .collect::<String>()
                .trim()
                .to_owned()
        })
        .filter(|v| !v.is_empty())
}

/// The card of a finding: only the card's own fields, text without control characters and
/// cut to 300 characters, at most 10 selling points, a link only when it is http(s), numbers
/// only when they are finite and not negative.
pub fn card(item: &str, searched: &str, finding: Finding) -> Card {
    let number = |n: Option<f64>| n.filter(|n| n.is_finite() && *n >= 0.0);
    Card {
        item: item.to_owned(),
        searched: searched.to_owned(),
        found: true,
        finding: Finding {
            title: text(finding.title),
            price: number(finding.price),
            currency: text(finding.currency).map(|c| c.chars().take(8).collect()),
            sales: finding.sales.filter(|s| *s >= 0),
            rating: number(finding.rating),
            shop: text(finding.shop),
            url: text(finding.url)
                .filter(|u| u.starts_with("https://") || u.starts_with("http://"))
                .filter(|u| !u.contains(char::is_whitespace)),
            angles: finding
                .angles
                .into_iter()
                .filter_map(|a| text(Some(a)))
                .take(ANGLES_MAX)
                .collect(),
        },
        third_party: true,
    }
}

impl Card {
    pub fn to_json(&self) -> Value {
        serde_json::to_value(self).expect("a card is plain JSON")
    }
}

/// The organization's earlier card of the same product or keyword, as this item asked for
/// it: the item and the term shown are this request's, the finding the cached one.
pub fn cached_card(mut card: Value, item: &str, searched: &str) -> Value {
    card["item"] = Value::String(item.to_owned());
    card["searched"] = Value::String(searched.to_owned());
    card
}

/// What a lookup comes to: found charges the price per item found (the request's, fixed at
/// its quote), with the reason the ledger shows; not found and a failure charge nothing.
pub fn settle(
    item: &str,
    searched: &str,
    answer: Result<Lookup, ProviderError>,
    price: i64,
) -> LookupOutcome {
    match answer {
        Ok(Lookup::Found(finding)) => LookupOutcome::Found {
            card: card(item, searched, finding).to_json(),
            credits: price,
            reason: format!("found: {item}"),
        },
        Ok(Lookup::NotFound) => LookupOutcome::NotFound,
        Err(ProviderError(e)) => LookupOutcome::Failed(e.chars().take(500).collect()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cached_card_is_relabelled_for_the_item_that_asked() {
        let earlier = card(
            "https://shopee.tw/x-i.1.2",
            "shopee:1.2",
            Finding::default(),
        );
        let now = cached_card(
            earlier.to_json(),
            "https://shopee.tw/product/1/2",
            "shopee:1.2",
        );
        assert_eq!(now["item"], "https://shopee.tw/product/1/2");
        assert_eq!(now["searched"], "shopee:1.2");
        assert_eq!(now["third_party"], true);
    }

    #[test]
    fn found_charges_the_price_and_the_rest_nothing() {
        let found = settle(
            "111111",
            "shopee:111111",
            Ok(Lookup::Found(Finding::default())),
            3,
        );
        assert!(matches!(
            found,
            LookupOutcome::Found { credits: 3, ref reason, .. } if reason == "found: 111111"
        ));
        assert_eq!(
            settle("1", "s", Ok(Lookup::NotFound), 3),
            LookupOutcome::NotFound
        );
        assert_eq!(
            settle("1", "s", Err(ProviderError("timed out".into())), 3),
            LookupOutcome::Failed("timed out".into())
        );
    }

    #[test]
    fn a_card_keeps_only_its_fields_cleaned() {
        let raw = serde_json::json!({
            "title": "  Serum\u{0007} 50ml ", "price": 399.0, "currency": "TWD", "sales": -3,
            "rating": f64::NAN, "shop": "", "url": "javascript:alert(1)",
            "angles": ["hydrating", "", "x".repeat(400)],
            "reviews": [{"nickname": "amy", "avatar": "https://img/amy.png"}]
        });
        let finding: Finding = serde_json::from_value(raw).unwrap();
        let card = card("111111", "shopee:111111", finding).to_json();
        assert_eq!(card["title"], "Serum 50ml");
        assert_eq!(card["price"], 399.0);
        assert_eq!(card["sales"], Value::Null);
        assert_eq!(card["shop"], Value::Null);
        assert_eq!(card["url"], Value::Null);
        assert_eq!(card["angles"].as_array().unwrap().len(), 2);
        assert_eq!(card["angles"][1].as_str().unwrap().chars().count(), 300);
        assert_eq!(card["third_party"], true);
        let text = card.to_string();
        assert!(!text.contains("amy") && !text.contains("avatar") && !text.contains("nickname"));
    }
}
