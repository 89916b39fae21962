//! Paid third-party research, quote then approve: what a request may ask for, what its quote
//! says, when a person's approval is refused, and what a finished item charges.
//!
//! A quote is free and queries nothing. The work runs only after a person agreed (relayed by
//! the agent), and charges per item found: an item not found, failed or left unqueried is
//! free, and so is one the same organization found recently (a product within 30 days, a
//! keyword the same day in Taipei).

use std::collections::{HashMap, HashSet};

use jiff::{SignedDuration, Timestamp, ToSpan};
use serde::{Deserialize, Serialize};

use fleetdesk_kernel::events::{EventBody, NewEvent, ResearchDone};
use fleetdesk_kernel::jobs::{Job, NewJob};
use uuid::Uuid;

use crate::product::{Marketplace, ProductError, parse_product};
use crate::{AdsRefusal, AdsRejection};

fleetdesk_kernel::text_enum! {
    /// What a research request looks into.
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
    #[serde(rename_all = "snake_case")]
    #[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
    pub enum ResearchKind {
        /// Up to 20 marketplace products (links or item ids).
        ProductBrief => "product_brief",
        /// Up to 10 keywords of at most 40 characters.
        TopicScout => "topic_scout",
    }
}

fleetdesk_kernel::text_enum! {
    /// Where a request stands.
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
    #[serde(rename_all = "snake_case")]
    #[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
    pub enum ResearchStatus {
        /// Quoted, waiting for a person's approval (or past its expiry).
        Quoted => "quoted",
        /// Approved; the work is queued or running.
        Running => "running",
        /// Every item was looked up, found cached, or left unqueried.
        Done => "done",
    }
}

fleetdesk_kernel::text_enum! {
    /// What became of one item of a request (none until the work reaches it).
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
    #[serde(rename_all = "snake_case")]
    pub enum ItemOutcome {
        /// The provider found it: a card, charged.
        Found => "found",
        /// The organization had found it recently: the cached card, free.
        Cached => "cached",
        /// The provider has no such item (free).
        NotFound => "not_found",
        /// The lookup failed for good (free).
        Failed => "failed",
        /// The request ended before the work reached it (free).
        Unqueried => "unqueried",
    }
}

/// The job kind of the research work, keyed by the request's id.
pub const RESEARCH_JOB: &str = "ad_research";

/// Products per request.
pub const MAX_PRODUCTS: usize = 20;
/// Keywords per request.
pub const MAX_KEYWORDS: usize = 10;
/// Characters per keyword.
pub const MAX_KEYWORD_CHARS: usize = 40;
/// Characters of a lane's name.
pub const MAX_LANE_CHARS: usize = 80;
/// How long a quote may be approved.
pub const QUOTE_VALIDITY: SignedDuration = SignedDuration::from_mins(30);
/// How long a product found answers for free.
pub const PRODUCT_CACHE_DAYS: i64 = 30;
/// The zone whose day a keyword's cache lasts, and whose month the credit limit counts.
pub const ZONE: &str = "Asia/Taipei";
/// The organization's limit may be passed up to this many times over in a month; at it,
/// approvals are refused.
pub const LIMIT_MULTIPLE: i64 = 3;

impl ResearchKind {
    /// The key of the organization's price per item found (tenant file `prices`).
    pub fn price_key(self) -> &'static str {
        match self {
            ResearchKind::ProductBrief => "ad_product_brief",
            ResearchKind::TopicScout => "ad_topic_keyword",
        }
    }

    /// The organization's price per item found of this kind, of its two prices.
    pub fn price(self, product_brief: i64, topic_keyword: i64) -> i64 {
        match self {
            ResearchKind::ProductBrief => product_brief,
            ResearchKind::TopicScout => topic_keyword,
        }
    }

    fn max_items(self) -> usize {
        match self {
            ResearchKind::ProductBrief => MAX_PRODUCTS,
            ResearchKind::TopicScout => MAX_KEYWORDS,
        }
    }

    /// The earliest time a found result of this kind still answers for free at `now`: 30 days
    /// back for a product, the start of Taipei's day for a keyword.
    pub fn cache_since(self, now: Timestamp) -> Timestamp {
        match self {
            ResearchKind::ProductBrief => now - (PRODUCT_CACHE_DAYS * 24).hours(),
            ResearchKind::TopicScout => {
                let zone = fleetdesk_kernel::market::zone(ZONE);
                now.to_zoned(zone)
                    .start_of_day()
                    .map(|d| d.timestamp())
                    .unwrap_or(now)
            }
        }
    }
}

/// One item of a request as checked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResearchItem {
    /// As the agent gave it (trimmed).
    pub item: String,
    /// What the cache and the provider know it by: `<marketplace>:<id>` for a product,
    /// `keyword:<the searched term in lower case>` for a keyword (no marketplace is named
    /// `keyword`, so the two never meet).
    pub key: String,
    /// The term used: the keyword in simplified Chinese; the product's key for a product.
    pub searched: String,
}

/// Checks a request's items: 1 to 20 products or 1 to 10 keywords, each readable, none twice.
/// A bare item id is read on `home`, the workspace's marketplace. Keywords are searched in
/// simplified Chinese (traditional characters converted).
pub fn check_items(
    kind: ResearchKind,
    items: &[String],
    home: Marketplace,
) -> Result<Vec<ResearchItem>, AdsRefusal> {
    if items.is_empty() || items.len() > kind.max_items() {
        return Err(AdsRefusal::invalid(
            "items",
            format!(
                "{} takes 1 to {} items, not {}",
                kind,
                kind.max_items(),
                items.len()
            ),
        ));
    }
    let mut seen: HashMap<String, usize> = HashMap::new();
    let mut checked = Vec::with_capacity(items.len());
    for (i, raw) in items.iter().enumerate() {
        let field = format!("items[{i}]");
        let (item, key, searched) = match kind {
            ResearchKind::ProductBrief => {
                let product = parse_product(raw, home).map_err(|e| match e {
                    ProductError::NotMarketplace => AdsRefusal::invalid(&field, e.message()),
                    ProductError::NoProduct(_) => AdsRefusal::RejectedField {
                        field: field.clone(),
                        message: e.message(),
                    },
                })?;
                (raw.clone(), product.key(), product.key())
            }
            ResearchKind::TopicScout => {
                let chars = raw.chars().count();
                let item = raw.trim();
                if item.is_empty() || chars > MAX_KEYWORD_CHARS {
                    return Err(AdsRefusal::invalid(
                        &field,
                        format!(
                            "a keyword has 1 to {MAX_KEYWORD_CHARS} characters, white space \
                             included, and is not only white space"
                        ),
                    ));
                }
                let searched = hanconv::t2s(item);
                let key = format!("keyword:{}", searched.to_lowercase());
                (item.to_owned(), key, searched)
            }
        };
        if let Some(first) = seen.insert(key.clone(), i) {
            return Err(AdsRefusal::RejectedField {
                field,
                message: format!("the same item as items[{first}]"),
            });
        }
        checked.push(ResearchItem {
            item,
            key,
            searched,
        });
    }
    Ok(checked)
}

/// One item of a quote.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct QuotedItem {
    /// As given.
    pub item: String,
    /// The term the research uses.
    pub searched: String,
    /// The organization found it recently: free.
    pub cached: bool,
}

/// What an approval would cost at most: every uncached item found, at the organization's price.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Quote {
    pub items: Vec<QuotedItem>,
    /// The most the work charges: uncached items times the price per item found.
    pub credits: i64,
    pub price_per_item: i64,
    #[serde(serialize_with = "fleetdesk_kernel::time::utc::serialize")]
    #[cfg_attr(feature = "openapi", schema(value_type = String, format = DateTime))]
    pub expires_at: Timestamp,
}

/// The quote for checked items: `cached` holds the keys the organization found since
/// [`ResearchKind::cache_since`].
pub fn quote(
    items: &[ResearchItem],
    cached: &HashSet<String>,
    price: i64,
    now: Timestamp,
) -> Quote {
    let items: Vec<QuotedItem> = items
        .iter()
        .map(|i| QuotedItem {
            item: i.item.clone(),
            searched: i.searched.clone(),
            cached: cached.contains(&i.key),
        })
        .collect();
    let uncached = items.iter().filter(|i| !i.cached).count() as i64;
    Quote {
        credits: uncached * price,
        price_per_item: price,
        items,
        expires_at: now + QUOTE_VALIDITY,
    }
}

/// What the approval of a request finds when it locks it.
#[derive(Debug, Clone)]
pub struct ApprovalState {
    pub status: ResearchStatus,
    pub expires_at: Timestamp,
    /// The `origin.message_ref` the request was approved with, when it was.
    pub approved_ref: Option<String>,
    /// The organization is suspended (tenant file).
    pub suspended: bool,
    /// Credits charged to the organization this month (Taipei).
    pub charged_this_month: i64,
    pub monthly_credit_limit: i64,
    /// The provider's lookups counted today.
    pub quota_used: i64,
}

/// What an approval does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Approval {
    /// Approve and queue the work.
    Approve,
    /// The same approval resent (the same `message_ref`): answer as it stands.
    Unchanged,
}

/// Decides an approval: a resend with the request's own `message_ref` is unchanged; otherwise
/// only a quoted request within its 30 minutes, of an organization neither suspended nor at
/// three times its monthly credit limit, while the provider has lookups left today of its
/// `daily_quota` (`None`: no quota).
pub fn judge_approval(
    state: &ApprovalState,
    message_ref: Option<&str>,
    daily_quota: Option<i64>,
    now: Timestamp,
) -> Result<Approval, AdsRefusal> {
    if state.status != ResearchStatus::Quoted {
        return match (&state.approved_ref, message_ref) {
            (Some(done), Some(resent)) if done == resent => Ok(Approval::Unchanged),
            _ => Err(AdsRefusal::Rejected(AdsRejection::AlreadyApproved)),
        };
    }
    if now >= state.expires_at {
        return Err(AdsRefusal::Rejected(AdsRejection::QuoteExpired(
            state.expires_at,
        )));
    }
    if state.suspended {
        return Err(AdsRefusal::Rejected(AdsRejection::Suspended));
    }
    let hard_stop = state.monthly_credit_limit.saturating_mul(LIMIT_MULTIPLE);
    if state.charged_this_month >= hard_stop {
        return Err(AdsRefusal::Rejected(AdsRejection::OverCreditLimit {
            used: state.charged_this_month,
            limit: state.monthly_credit_limit,
        }));
    }
    if daily_quota.is_some_and(|quota| quota - state.quota_used <= 0) {
        return Err(AdsRefusal::Rejected(AdsRejection::QuotaUsedUp));
    }
    Ok(Approval::Approve)
}

/// The job that works through an approved request, from `now`: keyed by the request.
pub fn work_job(research_id: Uuid, now: Timestamp) -> NewJob {
    NewJob {
        kind: RESEARCH_JOB.to_owned(),
        key: research_id.to_string(),
        payload: serde_json::json!({"research_id": research_id}),
        run_at: now,
    }
}

/// The request a research job ([`work_job`]) works on.
pub fn research_of(job: &Job) -> anyhow::Result<Uuid> {
    job.key
        .parse()
        .map_err(|e| anyhow::anyhow!("research job {}: {e}", job.key))
}

/// The cards rendered for a person: one section per card, its numbers and selling points,
/// the link last. Text from the marketplace is quoted as data (Markdown's own characters
/// escaped), never as markup.
pub fn markdown(cards: &[serde_json::Value]) -> String {
    let text = |card: &serde_json::Value, key: &str| -> Option<String> {
        match &card[key] {
            serde_json::Value::String(s) if !s.trim().is_empty() => Some(escape(s)),
            serde_json::Value::Number(n) => Some(n.to_string()),
            _ => None,
        }
    };
    let mut out = String::new();
    for card in cards {
        let title = text(card, "title").unwrap_or_else(|| "(untitled)".into());
        out.push_str(&format!("### {title}\n\n"));
        if let Some(searched) = text(card, "searched") {
            out.push_str(&format!("- searched: {searched}\n"));
        }
        if let Some(price) = text(card, "price") {
            let currency = text(card, "currency").unwrap_or_default();
            out.push_str(&format!("- price: {price} {currency}\n").replace(" \n", "\n"));
        }
        for (key, label) in [("sales", "sales"), ("rating", "rating"), ("shop", "shop")] {
            if let Some(v) = text(card, key) {
                out.push_str(&format!("- {label}: {v}\n"));
            }
        }
        if let Some(angles) = card["angles"].as_array().filter(|a| !a.is_empty()) {
            out.push_str("- angles:\n");
            for a in angles.iter().filter_map(|a| a.as_str()) {
                out.push_str(&format!("  - {}\n", escape(a)));
            }
        }
        if let Some(url) = card["url"].as_str() {
            out.push_str(&format!("- <{}>\n", url.replace(['<', '>', ' '], "")));
        }
        out.push_str("- third-party material\n\n");
    }
    out.trim_end().to_owned()
}

/// Marketplace text as plain text in Markdown: its markup characters escaped, one line.
fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '\\' | '`' | '*' | '_' | '[' | ']' | '<' | '>' | '#' | '|' | '!' => {
                out.push('\\');
                out.push(c);
            }
            '\n' | '\r' => out.push(' '),
            c => out.push(c),
        }
    }
    out.trim().to_owned()
}

/// The day the provider's daily quota counts in: Taipei's, like every other day of the service.
pub fn quota_day(now: Timestamp) -> jiff::civil::Date {
    now.to_zoned(fleetdesk_kernel::market::zone(ZONE)).date()
}

/// The start of the Taipei month `now` is in: credits charged since count against the limit.
pub fn month_start(now: Timestamp) -> Timestamp {
    let zone = fleetdesk_kernel::market::zone(ZONE);
    let here = now.to_zoned(zone.clone());
    here.date()
        .first_of_month()
        .to_zoned(zone)
        .map(|d| d.timestamp())
        .unwrap_or(now)
}

/// A request the work just finished (its last item settled), as the adapter marked it done.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Finished {
    pub id: Uuid,
    pub workspace_id: Uuid,
    /// The agent that asked for it.
    pub agent_id: Uuid,
    /// How many items it had.
    pub items: i64,
}

impl Finished {
    /// `research.done`, told to the agent that asked, about the request.
    pub fn event(&self) -> NewEvent {
        NewEvent {
            workspace_id: self.workspace_id,
            agent_id: Some(self.agent_id),
            object_id: self.id,
            body: EventBody::ResearchDone(ResearchDone {
                status: ResearchStatus::Done.as_str().to_owned(),
                items: self.items,
            }),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn strings(items: &[&str]) -> Vec<String> {
        items.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn each_kind_has_its_own_price() {
        assert_eq!(ResearchKind::ProductBrief.price(5, 2), 5);
        assert_eq!(ResearchKind::TopicScout.price(5, 2), 2);
    }

    /// The field a 400 names.
    fn field(r: Result<Vec<ResearchItem>, AdsRefusal>) -> String {
        match r {
            Err(AdsRefusal::Invalid { field, .. }) => field,
            other => panic!("{other:?}"),
        }
    }

    /// The field a 422 names.
    fn rejected_field(r: Result<Vec<ResearchItem>, AdsRefusal>) -> String {
        match r {
            Err(AdsRefusal::RejectedField { field, .. }) => field,
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn products_1_to_20_each_readable_none_twice() {
        let twenty: Vec<String> = (0..20).map(|i| format!("{}", 100_000 + i)).collect();
        assert_eq!(
            check_items(ResearchKind::ProductBrief, &twenty, Marketplace::Shopee)
                .unwrap()
                .len(),
            20
        );
        let mut over = twenty.clone();
        over.push("200000".into());
        assert_eq!(
            field(check_items(
                ResearchKind::ProductBrief,
                &over,
                Marketplace::Shopee
            )),
            "items"
        );
        assert_eq!(
            field(check_items(
                ResearchKind::ProductBrief,
                &[],
                Marketplace::Shopee
            )),
            "items"
        );
        let bad = strings(&["123456", "https://example.com/x"]);
        assert_eq!(
            field(check_items(
                ResearchKind::ProductBrief,
                &bad,
                Marketplace::Shopee
            )),
            "items[1]"
        );
        let twice = strings(&[
            "https://shopee.tw/product/1/2",
            "https://shopee.tw/x-i.1.2?utm=a",
        ]);
        assert_eq!(
            rejected_field(check_items(
                ResearchKind::ProductBrief,
                &twice,
                Marketplace::Shopee
            )),
            "items[1]"
        );
        let no_product = strings(&["https://shopee.tw/"]);
        assert_eq!(
            rejected_field(check_items(
                ResearchKind::ProductBrief,
                &no_product,
                Marketplace::Shopee
            )),
            "items[0]"
        );
    }

    #[test]
    fn keywords_are_searched_in_simplified_chinese_up_to_40_characters() {
        let checked = check_items(
            ResearchKind::TopicScout,
            &strings(&[" 保濕精華 ", "Serum"]),
            Marketplace::Shopee,
        )
        .unwrap();
        assert_eq!(checked[0].item, "保濕精華");
        assert_eq!(checked[0].searched, "保湿精华");
        assert_eq!(checked[1].key, "keyword:serum");
        let forty = "字".repeat(40);
        assert!(
            check_items(
                ResearchKind::TopicScout,
                std::slice::from_ref(&forty),
                Marketplace::Shopee
            )
            .is_ok()
        );
        assert_eq!(
            field(check_items(
                ResearchKind::TopicScout,
                &[forty + "字"],
                Marketplace::Shopee
            )),
            "items[0]"
        );
        assert_eq!(
            field(check_items(
                ResearchKind::TopicScout,
                &strings(&["  "]),
                Marketplace::Shopee
            )),
            "items[0]"
        );
        // Traditional and simplified spellings are the same keyword.
        assert_eq!(
            rejected_field(check_items(
                ResearchKind::TopicScout,
                &strings(&["保濕", "保湿"]),
                Marketplace::Shopee
            )),
            "items[1]"
        );
        let eleven: Vec<String> = (0..11).map(|i| format!("k{i}")).collect();
        assert_eq!(
            field(check_items(
                ResearchKind::TopicScout,
                &eleven,
                Marketplace::Shopee
            )),
            "items"
        );
        assert!(check_items(ResearchKind::TopicScout, &eleven[..10], Marketplace::Shopee).is_ok());
    }

    #[test]
    fn a_quote_charges_only_uncached_items_and_lasts_30_minutes() {
        let now: Timestamp = "2026-11-27T04:00:00Z".parse().unwrap();
        let items = check_items(
            ResearchKind::ProductBrief,
            &strings(&["111111", "222222", "333333"]),
            Marketplace::Shopee,
        )
        .unwrap();
        let cached = HashSet::from(["shopee:222222".to_owned()]);
        let q = quote(&items, &cached, 3, now);
        assert_eq!(
            q.items.iter().map(|i| i.cached).collect::<Vec<_>>(),
            [false, true, false]
        );
        assert_eq!(q.credits, 6);
        assert_eq!(q.expires_at, "2026-11-27T04:30:00Z".parse().unwrap());
    }

    #[test]
    fn the_cache_lasts_30_days_for_products_and_the_taipei_day_for_keywords() {
        // 01:30 in Taipei on the 28th.
        let now: Timestamp = "2026-11-27T17:30:00Z".parse().unwrap();
        assert_eq!(
            ResearchKind::ProductBrief.cache_since(now),
            "2026-10-28T17:30:00Z".parse().unwrap()
        );
        assert_eq!(
            ResearchKind::TopicScout.cache_since(now),
            "2026-11-27T16:00:00Z".parse().unwrap()
        );
        // The Taipei month: November began at 16:00 UTC on October 31.
        assert_eq!(month_start(now), "2026-10-31T16:00:00Z".parse().unwrap());
    }

    #[test]
    fn markdown_renders_cards_as_data_not_markup() {
        let cards = [serde_json::json!({
            "item": "111111", "searched": "shopee:111111", "found": true,
            "title": "Serum *50ml* [new](http://x)", "price": 399, "currency": "TWD",
            "sales": 1200, "rating": 4.8, "shop": "Glow_shop",
            "url": "https://shopee.tw/product/1/111111",
            "angles": ["hydrating\nall day", "no <script>"], "third_party": true
        })];
        let md = markdown(&cards);
        assert!(
            md.starts_with("### Serum \\*50ml\\* \\[new\\](http://x)\n"),
            "{md}"
        );
        assert!(md.contains("- price: 399 TWD\n"), "{md}");
        assert!(md.contains("- shop: Glow\\_shop\n"), "{md}");
        assert!(
            md.contains("  - hydrating all day\n  - no \\<script\\>\n"),
            "{md}"
        );
        assert!(
            md.contains("- <https://shopee.tw/product/1/111111>\n"),
            "{md}"
        );
        assert!(md.ends_with("- third-party material"), "{md}");
        assert_eq!(markdown(&[]), "");
    }

    #[test]
    fn the_work_job_is_keyed_by_its_request_and_read_back() {
        let id = Uuid::from_u128(42);
        let now: Timestamp = "2026-11-27T04:00:00Z".parse().unwrap();
        let new = work_job(id, now);
        assert_eq!((new.kind.as_str(), new.run_at), (RESEARCH_JOB, now));
        assert_eq!(new.payload["research_id"], id.to_string());
        let job = |key: String| Job {
            id: Uuid::nil(),
            kind: RESEARCH_JOB.into(),
            key,
            payload: new.payload.clone(),
            attempt: 1,
        };
        assert_eq!(research_of(&job(new.key.clone())).unwrap(), id);
        let bad = research_of(&job("nope".into())).unwrap_err().to_string();
        assert!(bad.starts_with("research job nope"), "{bad}");
    }

    fn state() -> ApprovalState {
        ApprovalState {
            status: ResearchStatus::Quoted,
            expires_at: "2026-11-27T04:30:00Z".parse().unwrap(),
            approved_ref: None,
            suspended: false,
            charged_this_month: 0,
            monthly_credit_limit: 100,
            quota_used: 0,
        }
    }

    /// The provider's lookups per day in these tests.
    const QUOTA: Option<i64> = Some(5);

    fn rejected(r: Result<Approval, AdsRefusal>) -> bool {
        matches!(r, Err(AdsRefusal::Rejected(_)))
    }

    #[test]
    fn approval_within_the_quote_below_three_times_the_limit_with_quota_left() {
        let at = |t: &str| t.parse::<Timestamp>().unwrap();
        let s = state();
        assert_eq!(
            judge_approval(&s, None, QUOTA, at("2026-11-27T04:29:59Z")),
            Ok(Approval::Approve)
        );
        assert!(rejected(judge_approval(
            &s,
            None,
            QUOTA,
            at("2026-11-27T04:30:00Z")
        )));
        let now = at("2026-11-27T04:00:00Z");
        let limit = |charged| ApprovalState {
            charged_this_month: charged,
            ..state()
        };
        assert_eq!(
            judge_approval(&limit(299), None, QUOTA, now),
            Ok(Approval::Approve)
        );
        assert!(rejected(judge_approval(&limit(300), None, QUOTA, now)));
        let suspended = ApprovalState {
            suspended: true,
            ..state()
        };
        assert!(rejected(judge_approval(&suspended, None, QUOTA, now)));
        let no_quota = ApprovalState {
            quota_used: 5,
            ..state()
        };
        assert!(rejected(judge_approval(&no_quota, None, QUOTA, now)));
        let one_left = ApprovalState {
            quota_used: 4,
            ..state()
        };
        assert_eq!(
            judge_approval(&one_left, None, QUOTA, now),
            Ok(Approval::Approve)
        );
        assert_eq!(
            judge_approval(&no_quota, None, None, now),
            Ok(Approval::Approve),
            "no quota"
        );
        let zero_limit = ApprovalState {
            monthly_credit_limit: 0,
            ..state()
        };
        assert!(rejected(judge_approval(&zero_limit, None, QUOTA, now)));
    }

    #[test]
    fn an_approved_request_answers_its_own_message_ref_unchanged_and_refuses_others() {
        let now: Timestamp = "2026-11-27T05:00:00Z".parse().unwrap();
        let approved = ApprovalState {
            status: ResearchStatus::Running,
            approved_ref: Some("msg-1".into()),
            ..state()
        };
        // Past the quote's expiry, the resend still answers.
        assert_eq!(
            judge_approval(&approved, Some("msg-1"), QUOTA, now),
            Ok(Approval::Unchanged)
        );
        assert!(rejected(judge_approval(
            &approved,
            Some("msg-2"),
            QUOTA,
            now
        )));
        assert!(rejected(judge_approval(&approved, None, QUOTA, now)));
        let without_ref = ApprovalState {
            approved_ref: None,
            status: ResearchStatus::Done,
            ..state()
        };
        assert!(rejected(judge_approval(&without_ref, None, QUOTA, now)));
    }

    #[test]
    fn a_finished_request_tells_research_done_to_the_agent_that_asked() {
        let finished = Finished {
            id: Uuid::from_u128(1),
            workspace_id: Uuid::from_u128(2),
            agent_id: Uuid::from_u128(3),
            items: 4,
        };
        let event = finished.event();
        assert_eq!(
            (event.workspace_id, event.agent_id, event.object_id),
            (finished.workspace_id, Some(finished.agent_id), finished.id)
        );
        assert_eq!(
            event.body,
            EventBody::ResearchDone(ResearchDone {
                status: "done".into(),
                items: 4,
            })
        );
    }
}
