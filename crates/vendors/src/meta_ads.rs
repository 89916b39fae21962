//! Meta's Marketing API (the Graph API) as the ad platform. Requests follow Meta's
//! documentation: an ad account is read with `GET /act_<id>` (`account_status`), its
//! campaigns with `GET /act_<id>/campaigns`, their numbers per day with `GET
//! /act_<id>/insights` (`level=campaign`, `time_increment=1`), its ads with `GET
//! /act_<id>/ads` (with each ad's creative and ad set); a pause or resume is `POST /<ad id>`
//! with `status`, a budget `POST /<ad set id>` with `daily_budget` or `lifetime_budget`, and a
//! boost creates a paused campaign, ad set, ad creative and ad on the account. Budgets travel
//! in the currency's minor units (Meta's offset: 1 for JPY, TWD and the like, else 100).
//!
//! The access token goes in the `Authorization` header only (never in a URL, a log or an
//! error). Lists are followed page by page with the `after` cursor on the same address, never
//! the `next` link Meta sends.

use crate::capped::read_capped;
use fleetdesk_kernel::money::Cents;
use std::time::Duration;

use fleetdesk_ads::platform::{
    AccountSnapshot, AdAccountRef, AdPlatform, AdSnapshot, CampaignDay, CampaignSnapshot,
    CreatedAd, Executed, Execution, PlatformError,
};
use fleetdesk_ads::proposal::{AdStatus, BudgetType};
use fleetdesk_kernel::BoxFuture;
use jiff::Timestamp;
use jiff::civil::Date;
use serde::Deserialize;
use serde::de::DeserializeOwned;
use serde_json::{Value, json};

/// The Graph API's address unless `FLEETDESK_META_GRAPH_URL` says another.
pub const GRAPH_URL: &str = "https://graph.facebook.com/v25.0";
/// How long one request may take.
pub const TIMEOUT: Duration = Duration::from_secs(30);
/// The most pages one list is followed for.
const MAX_PAGES: usize = 50;
/// The largest answer read.
const MAX_ANSWER: usize = 8 * 1024 * 1024;

/// Currencies Meta writes in whole units (offset 1); every other in hundredths.
const WHOLE_UNITS: &[&str] = &[
    "CLP", "COP", "CRC", "HUF", "ISK", "IDR", "JPY", "KRW", "PYG", "TWD", "VND",
];

/// The minor units of `currency` in one ordinary unit.
pub fn offset(currency: &str) -> i64 {
    if WHOLE_UNITS.contains(&currency) {
        1
    } else {
        100
    }
}

/// An amount in minor units, as Meta takes it; refused when the currency has no such
/// fraction (12.50 TWD).
pub fn to_minor(amount: Cents, currency: &str) -> Result<i64, PlatformError> {
    if offset(currency) == 1 {
        if amount.has_cents() {
            return Err(PlatformError(format!(
                "{amount} {currency}: Meta takes {currency} in whole units"
            )));
        }
        return Ok(amount.0 / 100);
    }
    Ok(amount.0)
}

/// Meta's ad platform at `base`.
#[derive(Debug, Clone)]
pub struct MetaAds {
    client: reqwest::Client,
    base: String,
}

#[derive(Deserialize)]
struct Page<T> {
    #[serde(default = "Vec::new")]
    data: Vec<T>,
    #[serde(default)]
    paging: Option<Paging>,
}

#[derive(Deserialize)]
struct Paging {
    #[serde(default)]
    cursors: Option<Cursors>,
    #[serde(default)]
    next: Option<String>,
}

#[derive(Deserialize)]
struct Cursors {
    after: Option<String>,
}

#[derive(Deserialize)]
struct Account {
    account_status: Option<i64>,
}

#[derive(Deserialize)]
struct Campaign {
    id: String,
    #[serde(default)]
    name: String,
    #[serde(default)]
    effective_status: String,
}

#[derive(Deserialize)]
struct Insight {
    campaign_id: String,
    #[serde(default)]
    campaign_name: Option<String>,
    date_start: String,
    #[serde(default)]
    spend: Option<String>,
    #[serde(default)]
    impressions: Option<String>,
    #[serde(default)]
    reach: Option<String>,
    #[serde(default)]
    clicks: Option<String>,
    #[serde(default)]
    actions: Vec<Action>,
}

#[derive(Deserialize)]
struct Action {
    action_type: String,
    value: String,
}

#[derive(Deserialize)]
struct Ad {
    id: String,
    #[serde(default)]
    name: String,
    campaign_id: String,
    adset_id: String,
    #[serde(default)]
    effective_status: String,
    #[serde(default)]
    creative: Option<Creative>,
    #[serde(default)]
    adset: Option<AdSet>,
}

#[derive(Deserialize)]
struct Creative {
    effective_object_story_id: Option<String>,
    object_story_id: Option<String>,
    source_instagram_media_id: Option<String>,
}

#[derive(Deserialize)]
struct AdSet {
    daily_budget: Option<String>,
    lifetime_budget: Option<String>,
    start_time: Option<String>,
    end_time: Option<String>,
}

#[derive(Deserialize)]
struct Created {
    id: String,
}

/// What Meta says went wrong: `{"error": {"message", "code", ...}}`.
fn meta_error(status: u16, body: &[u8]) -> PlatformError {
    let parsed: Option<Value> = serde_json::from_slice(body).ok();
    let error = parsed.as_ref().and_then(|v| v.get("error"));
    match error {
        Some(e) => {
            let message = e
                .get("message")
                .and_then(Value::as_str)
                .unwrap_or("no message");
            let code = e.get("code").and_then(Value::as_i64).unwrap_or_default();
            PlatformError(format!("Meta answered {status}: {message} (code {code})"))
        }
        None => PlatformError(format!("Meta answered {status}")),
    }
}

/// Meta's account statuses (`account_status`) by name.
fn account_status(code: Option<i64>) -> String {
    match code {
        Some(1) => "active",
        Some(2) => "disabled",
        Some(3) => "unsettled",
        Some(7) => "pending_risk_review",
        Some(8) => "pending_settlement",
        Some(9) => "in_grace_period",
        Some(100) => "pending_closure",
        Some(101) => "closed",
        Some(201) => "any_active",
        Some(202) => "any_closed",
        _ => "unknown",
    }
    .to_owned()
}

/// Running or paused: the statuses the service keeps; others (deleted, archived, in review,
/// disapproved) are left out.
fn ad_status(effective: &str) -> Option<AdStatus> {
    match effective {
        "ACTIVE" => Some(AdStatus::Running),
        "PAUSED" | "CAMPAIGN_PAUSED" | "ADSET_PAUSED" => Some(AdStatus::Paused),
        _ => None,
    }
}

fn count(text: &Option<String>) -> i64 {
    text.as_deref().and_then(|t| t.parse().ok()).unwrap_or(0)
}

/// What a boost optimises for (engagement with the post), else link clicks.
fn results(actions: &[Action]) -> i64 {
    let of = |kind: &str| {
        actions
            .iter()
            .filter(|a| a.action_type == kind)
            .filter_map(|a| a.value.parse::<f64>().ok())
            .sum::<f64>() as i64
    };
    match of("post_engagement") {
        0 => of("link_click"),
        n => n,
    }
}

fn meta_time(text: &Option<String>) -> Option<Timestamp> {
    let text = text.as_deref()?;
    text.parse::<Timestamp>().ok().or_else(|| {
        // Meta writes `2026-11-27T10:00:00+0800`, without the colon of the offset.
        jiff::fmt::strtime::parse("%Y-%m-%dT%H:%M:%S%z", text)
            .ok()?
            .to_timestamp()
            .ok()
    })
}

/// A boost that failed after some of its parts were made: the error names them (all paused),
/// so a person can delete them or finish the boost on the platform.
fn left_behind(e: PlatformError, made: &[(&str, &String)]) -> PlatformError {
    let parts: Vec<String> = made
        .iter()
        .map(|(what, id)| format!("{what} {id}"))
        .collect();
    PlatformError(format!(
        "{}; made before it, paused: {}",
        e.0,
        parts.join(", ")
    ))
}

impl MetaAds {
    /// Meta at `base` (`FLEETDESK_META_GRAPH_URL` or [`GRAPH_URL`]), each request timing out
    /// after `timeout`.
    pub fn new(base: &str, timeout: Duration) -> anyhow::Result<MetaAds> {
        let url = url::Url::parse(base)
            .map_err(|_| anyhow::anyhow!("FLEETDESK_META_GRAPH_URL is not a URL"))?;
        if !matches!(url.scheme(), "http" | "https") || !url.username().is_empty() {
            anyhow::bail!("FLEETDESK_META_GRAPH_URL must be http(s) without credentials");
        }
        let client = reqwest::Client::builder()
            .timeout(timeout)
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .map_err(|e| anyhow::anyhow!("the Meta client: {}", e.without_url()))?;
        Ok(MetaAds {
            client,
            base: base.trim_end_matches('/').to_owned(),
        })
    }

    /// From `FLEETDESK_META_GRAPH_URL`, else Meta's own address.
    pub fn from_env() -> anyhow::Result<MetaAds> {
        let base = std::env::var("FLEETDESK_META_GRAPH_URL")
            .ok()
            .filter(|u| !u.is_empty())
            .unwrap_or_else(|| GRAPH_URL.to_owned());
        MetaAds::new(&base, TIMEOUT)
    }

    async fn send<T: DeserializeOwned>(
        &self,
        request: reqwest::RequestBuilder,
        token: &str,
    ) -> Result<T, PlatformError> {
        let failed = |e: reqwest::Error| {
            PlatformError(if e.is_timeout() {
                "Meta did not answer in time".to_owned()
            } else {
                format!("Meta: {}", e.without_url())
            })
        };
        let answer = request.bearer_auth(token).send().await.map_err(failed)?;
        let status = answer.status().as_u16();
        let Some(body) = read_capped(answer, MAX_ANSWER).await.map_err(failed)? else {
            return Err(PlatformError(format!(
                "Meta's answer is over {MAX_ANSWER} bytes"
            )));
        };
        if !(200..300).contains(&status) {
            return Err(meta_error(status, &body));
        }
        serde_json::from_slice(&body)
            .map_err(|e| PlatformError(format!("Meta's answer does not read: {e}")))
    }

    async fn get<T: DeserializeOwned>(
        &self,
        path: &str,
        query: &[(&str, String)],
        token: &str,
    ) -> Result<T, PlatformError> {
        let mut url = url::Url::parse(&format!("{}/{path}", self.base))
            .map_err(|_| PlatformError(format!("no Meta address for {path}")))?;
        url.query_pairs_mut()
            .extend_pairs(query.iter().map(|(k, v)| (*k, v.as_str())));
        self.send(self.client.get(url), token).await
    }

    /// Every page of a list.
    async fn list<T: DeserializeOwned>(
        &self,
        path: &str,
        query: &[(&str, String)],
        token: &str,
    ) -> Result<Vec<T>, PlatformError> {
        let mut all = Vec::new();
        let mut after: Option<String> = None;
        for _ in 0..MAX_PAGES {
            let mut q = query.to_vec();
            if let Some(a) = &after {
                q.push(("after", a.clone()));
            }
            let page: Page<T> = self.get(path, &q, token).await?;
            all.extend(page.data);
            let next = page
                .paging
                .filter(|p| p.next.is_some())
                .and_then(|p| p.cursors)
                .and_then(|c| c.after);
            match next {
                Some(a) => after = Some(a),
                None => return Ok(all),
            }
        }
        Err(PlatformError(format!(
            "Meta's list {path} runs past {MAX_PAGES} pages"
        )))
    }

    async fn post(
        &self,
        path: &str,
        form: &[(&str, String)],
        token: &str,
    ) -> Result<Value, PlatformError> {
        let url = format!("{}/{path}", self.base);
        let body = url::form_urlencoded::Serializer::new(String::new())
            .extend_pairs(form.iter().map(|(k, v)| (*k, v.as_str())))
            .finish();
        let request = self
            .client
            .post(url)
            .header("content-type", "application/x-www-form-urlencoded")
            .body(body);
        self.send(request, token).await
    }

    async fn create(
        &self,
        path: &str,
        form: &[(&str, String)],
        token: &str,
    ) -> Result<String, PlatformError> {
        let made: Value = self.post(path, form, token).await?;
        serde_json::from_value::<Created>(made)
            .map(|c| c.id)
            .map_err(|_| PlatformError(format!("Meta's answer to {path} has no id")))
    }

    async fn read(
        &self,
        account: &AdAccountRef,
        token: &str,
        since: Date,
        until: Date,
    ) -> Result<AccountSnapshot, PlatformError> {
        let act = account.id.as_str();
        let about: Account = self
            .get(act, &[("fields", "account_status".into())], token)
            .await?;
        let campaigns: Vec<Campaign> = self
            .list(
                &format!("{act}/campaigns"),
                &[
                    ("fields", "id,name,effective_status".into()),
                    ("limit", "200".into()),
                ],
                token,
            )
            .await?;
        let insights: Vec<Insight> = self
            .list(
                &format!("{act}/insights"),
                &[
                    ("level", "campaign".into()),
                    (
                        "fields",
                        "campaign_id,campaign_name,spend,impressions,reach,clicks,actions".into(),
                    ),
                    ("time_increment", "1".into()),
                    (
                        "time_range",
                        json!({"since": since.to_string(), "until": until.to_string()}).to_string(),
                    ),
                    ("limit", "500".into()),
                ],
                token,
            )
            .await?;
        let ads: Vec<Ad> = self
            .list(
                &format!("{act}/ads"),
                &[
                    (
                        "fields",
                        "id,name,campaign_id,adset_id,effective_status,\
                         creative{effective_object_story_id,object_story_id,source_instagram_media_id},\
                         adset{daily_budget,lifetime_budget,start_time,end_time}"
                            .into(),
                    ),
                    ("limit", "200".into()),
                ],
                token,
            )
            .await?;
        let unit = offset(&account.currency);
        let mut snapshot = AccountSnapshot {
            status: account_status(about.account_status),
            campaigns: campaigns
                .into_iter()
                .map(|c| CampaignSnapshot {
                    id: c.id,
                    name: c.name,
                    status: c.effective_status.to_lowercase(),
                    days: Vec::new(),
                })
                .collect(),
            ads: Vec::new(),
        };
        for i in insights {
            let Ok(day) = i.date_start.parse::<Date>() else {
                continue;
            };
            // A campaign deleted since still spent on its days: it stays, so the month's spend
            // counts it.
            if !snapshot.campaigns.iter().any(|c| c.id == i.campaign_id) {
                snapshot.campaigns.push(CampaignSnapshot {
                    id: i.campaign_id.clone(),
                    name: i
                        .campaign_name
                        .clone()
                        .unwrap_or_else(|| i.campaign_id.clone()),
                    status: "deleted".into(),
                    days: Vec::new(),
                });
            }
            if let Some(c) = snapshot
                .campaigns
                .iter_mut()
                .find(|c| c.id == i.campaign_id)
            {
                c.days.push(CampaignDay {
                    day,
                    spend: i
                        .spend
                        .as_deref()
                        .and_then(Cents::parse_units)
                        .unwrap_or_default(),
                    impressions: count(&i.impressions),
                    reach: count(&i.reach),
                    clicks: count(&i.clicks),
                    results: results(&i.actions),
                });
            }
        }
        for ad in ads {
            let Some(status) = ad_status(&ad.effective_status) else {
                continue;
            };
            let set = ad.adset.as_ref();
            let (budget_type, minor) = match set.and_then(|s| s.lifetime_budget.as_ref()) {
                Some(l) if count(&Some(l.clone())) > 0 => {
                    (BudgetType::Lifetime, count(&Some(l.clone())))
                }
                _ => (
                    BudgetType::Daily,
                    set.map(|s| count(&s.daily_budget)).unwrap_or(0),
                ),
            };
            let story = ad.creative.as_ref().and_then(|c| {
                c.effective_object_story_id
                    .clone()
                    .or_else(|| c.object_story_id.clone())
                    .or_else(|| c.source_instagram_media_id.clone())
            });
            snapshot.ads.push(AdSnapshot {
                id: ad.id,
                campaign_id: ad.campaign_id,
                adset_id: ad.adset_id,
                name: ad.name,
                status,
                budget_type,
                budget: Cents(minor.saturating_mul(100 / unit)),
                starts_at: set.and_then(|s| meta_time(&s.start_time)),
                ends_at: set.and_then(|s| meta_time(&s.end_time)),
                story_id: story,
            });
        }
        Ok(snapshot)
    }

    fn budget_field(budget_type: BudgetType) -> &'static str {
        match budget_type {
            BudgetType::Daily => "daily_budget",
            BudgetType::Lifetime => "lifetime_budget",
        }
    }

    async fn make(
        &self,
        account: &AdAccountRef,
        token: &str,
        change: &Execution,
    ) -> Result<Executed, PlatformError> {
        let act = account.id.as_str();
        match change {
            Execution::Pause { ad_id } => {
                let answer = self
                    .post(ad_id, &[("status", "PAUSED".into())], token)
                    .await?;
                Ok(Executed {
                    result: json!({"ad_id": ad_id, "status": "PAUSED", "meta": answer}),
                    created: None,
                })
            }
            Execution::Resume {
                ad_id,
                adset_id,
                campaign_id,
            } => {
                // Outermost first: the ad delivers once all three are active.
                for parent in [campaign_id, adset_id] {
                    if !parent.is_empty() {
                        self.post(parent, &[("status", "ACTIVE".into())], token)
                            .await?;
                    }
                }
                let answer = self
                    .post(ad_id, &[("status", "ACTIVE".into())], token)
                    .await?;
                Ok(Executed {
                    result: json!({"ad_id": ad_id, "adset_id": adset_id,
                                   "campaign_id": campaign_id, "status": "ACTIVE",
                                   "meta": answer}),
                    created: None,
                })
            }
            Execution::Budget {
                adset_id,
                budget_type,
                amount,
            } => {
                let minor = to_minor(*amount, &account.currency)?;
                let field = Self::budget_field(*budget_type);
                let answer = self
                    .post(adset_id, &[(field, minor.to_string())], token)
                    .await?;
                Ok(Executed {
                    result: json!({"adset_id": adset_id, field: minor, "meta": answer}),
                    created: None,
                })
            }
            Execution::Boost {
                platform,
                story_id,
                instagram_user_id,
                name,
                budget_type,
                amount,
                starts_at,
                ends_at,
                countries,
            } => {
                let minor = to_minor(*amount, &account.currency)?;
                let campaign_id = self
                    .create(
                        &format!("{act}/campaigns"),
                        &[
                            ("name", name.clone()),
                            ("objective", "OUTCOME_ENGAGEMENT".into()),
                            ("status", "PAUSED".into()),
                            ("buying_type", "AUCTION".into()),
                            ("special_ad_categories", "[]".into()),
                        ],
                        token,
                    )
                    .await?;
                let adset_id = self
                    .create(
                        &format!("{act}/adsets"),
                        &[
                            ("name", name.clone()),
                            ("campaign_id", campaign_id.clone()),
                            (Self::budget_field(*budget_type), minor.to_string()),
                            ("billing_event", "IMPRESSIONS".into()),
                            ("optimization_goal", "POST_ENGAGEMENT".into()),
                            ("bid_strategy", "LOWEST_COST_WITHOUT_CAP".into()),
                            (
                                "targeting",
                                json!({"geo_locations": {"countries": countries}}).to_string(),
                            ),
                            ("start_time", starts_at.to_string()),
                            ("end_time", ends_at.to_string()),
                            ("status", "PAUSED".into()),
                        ],
                        token,
                    )
                    .await
                    .map_err(|e| left_behind(e, &[("campaign", &campaign_id)]))?;
                // A Facebook post by its story id; an Instagram post by its media id, run as the
                // account's Instagram user.
                let mut creative_form = vec![("name", name.clone())];
                match instagram_user_id
                    .as_ref()
                    .filter(|_| platform == "instagram")
                {
                    Some(ig) => {
                        creative_form.push(("source_instagram_media_id", story_id.clone()));
                        creative_form.push(("instagram_user_id", ig.clone()));
                    }
                    None => creative_form.push(("object_story_id", story_id.clone())),
                }
                let creative_id = self
                    .create(&format!("{act}/adcreatives"), &creative_form, token)
                    .await
                    .map_err(|e| {
                        left_behind(e, &[("campaign", &campaign_id), ("ad set", &adset_id)])
                    })?;
                let ad_id = self
                    .create(
                        &format!("{act}/ads"),
                        &[
                            ("name", name.clone()),
                            ("adset_id", adset_id.clone()),
                            ("creative", json!({"creative_id": creative_id}).to_string()),
                            ("status", "PAUSED".into()),
                        ],
                        token,
                    )
                    .await
                    .map_err(|e| {
                        left_behind(
                            e,
                            &[
                                ("campaign", &campaign_id),
                                ("ad set", &adset_id),
                                ("creative", &creative_id),
                            ],
                        )
                    })?;
                Ok(Executed {
                    result: json!({"campaign_id": campaign_id, "adset_id": adset_id,
                                   "creative_id": creative_id, "ad_id": ad_id,
                                   "status": "paused"}),
                    created: Some(CreatedAd {
                        campaign_id,
                        adset_id,
                        ad_id,
                    }),
                })
            }
        }
    }
}

impl AdPlatform for MetaAds {
    fn sync<'a>(
        &'a self,
        account: &'a AdAccountRef,
        token: &'a str,
        since: Date,
        until: Date,
    ) -> BoxFuture<'a, Result<AccountSnapshot, PlatformError>> {
        Box::pin(self.read(account, token, since, until))
    }

    fn execute<'a>(
        &'a self,
        account: &'a AdAccountRef,
        token: &'a str,
        change: &'a Execution,
    ) -> BoxFuture<'a, Result<Executed, PlatformError>> {
        Box::pin(self.make(account, token, change))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn an_answer_at_the_cap_is_read_and_one_byte_past_it_is_refused_unread() {
        use crate::capped::fake::{Body, serve};
        let padded = |size: usize| {
            let mut body = br#"{"id": "act_1"}"#.to_vec();
            body.resize(size, b' ');
            body
        };
        for body in [Body::Sized as fn(Vec<u8>) -> Body, Body::Chunked] {
            let (base, _) = serve(200, body(padded(MAX_ANSWER))).await;
            let meta = MetaAds::new(&base, TIMEOUT).unwrap();
            let read: Value = meta.get("act_1", &[], "token").await.unwrap();
            assert_eq!(read["id"], "act_1");

            let (base, _) = serve(200, body(padded(MAX_ANSWER + 1))).await;
            let meta = MetaAds::new(&base, TIMEOUT).unwrap();
            let e = meta.get::<Value>("act_1", &[], "token").await.unwrap_err();
            assert_eq!(e.0, "Meta's answer is over 8388608 bytes");
        }
        // An error answer is capped too, and an answer without end is not read forever.
        let (base, _) = serve(400, Body::Endless(64 * 1024)).await;
        let meta = MetaAds::new(&base, TIMEOUT).unwrap();
        let e = meta.get::<Value>("act_1", &[], "token").await.unwrap_err();
        assert_eq!(e.0, "Meta's answer is over 8388608 bytes");
    }

    #[test]
    fn budgets_go_in_the_currencys_minor_units() {
        assert_eq!(to_minor(Cents(1250), "USD"), Ok(1250));
        assert_eq!(to_minor(Cents(50000), "TWD"), Ok(500));
        assert!(to_minor(Cents(1250), "TWD").is_err());
        assert_eq!(to_minor(Cents(7), "EUR"), Ok(7));
        assert_eq!(to_minor(Cents(29157344791), "USD"), Ok(29157344791));
    }

    #[test]
    fn meta_times_read_with_or_without_the_offsets_colon() {
        let t = |s: &str| meta_time(&Some(s.to_owned()));
        assert_eq!(t("2026-11-27T10:00:00+0800"), t("2026-11-27T02:00:00Z"));
        assert!(t("2026-11-27T10:00:00+0800").is_some());
        assert_eq!(t("soon"), None);
    }

    #[test]
    fn statuses_and_results_read_as_the_service_keeps_them() {
        assert_eq!(ad_status("ACTIVE"), Some(AdStatus::Running));
        assert_eq!(ad_status("ADSET_PAUSED"), Some(AdStatus::Paused));
        assert_eq!(ad_status("DELETED"), None);
        assert_eq!(account_status(Some(2)), "disabled");
        let action = |t: &str, v: &str| Action {
            action_type: t.into(),
            value: v.into(),
        };
        assert_eq!(results(&[action("link_click", "3")]), 3);
        assert_eq!(
            results(&[action("link_click", "3"), action("post_engagement", "9")]),
            9
        );
        let e = meta_error(
            400,
            br#"{"error": {"message": "Invalid parameter", "code": 100}}"#,
        );
        assert_eq!(e.0, "Meta answered 400: Invalid parameter (code 100)");
    }
}
