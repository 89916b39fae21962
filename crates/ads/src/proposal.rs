//! Ad changes an agent proposes and a person approves: what each kind asks, when a proposal
//! is a duplicate of one waiting, when it expires, and the monthly cap an approval must keep.
//!
//! A proposal changes nothing by itself. It opens an `ad_change` decision; a person's resolve
//! executes it through the ad platform as that person, a dismiss refuses it, and one nobody
//! handled expires after 7 days.

use fleetdesk_kernel::money::Cents;
use jiff::{SignedDuration, Timestamp};

use crate::{AdsRefusal, AdsRejection};

fleetdesk_kernel::text_enum! {
    /// What a proposal changes.
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
    #[serde(rename_all = "snake_case")]
    #[cfg_attr(feature = "openapi", derive(utoipa::ToSchema), schema(as = AdProposalKind))]
    pub enum ProposalKind {
        /// Pause a running ad.
        Pause => "pause",
        /// Resume a paused ad (subject to the monthly cap).
        Resume => "resume",
        /// Set an ad's budget (a raise on a running ad is subject to the monthly cap).
        Budget => "budget",
        /// Boost a published Facebook or Instagram post: a paused ad a person must enable.
        Boost => "boost",
    }
}

fleetdesk_kernel::text_enum! {
    /// Where a proposal stands.
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
    #[serde(rename_all = "snake_case")]
    #[cfg_attr(feature = "openapi", derive(utoipa::ToSchema), schema(as = AdProposalStatus))]
    pub enum ProposalStatus {
        /// Waiting for a person.
        Waiting => "waiting",
        /// Approved; the platform call is under way.
        Approved => "approved",
        /// The platform made the change.
        Executed => "executed",
        /// The platform refused or failed; `result` says why.
        Failed => "failed",
        /// A person dismissed it.
        Refused => "refused",
        /// Nobody handled it within 7 days.
        Expired => "expired",
    }
}

fleetdesk_kernel::text_enum! {
    /// How a boost's budget is spent.
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
    #[serde(rename_all = "snake_case")]
    #[cfg_attr(feature = "openapi", derive(utoipa::ToSchema), schema(as = AdBudgetType))]
    pub enum BudgetType {
        Daily => "daily",
        Lifetime => "lifetime",
    }
}

fleetdesk_kernel::text_enum! {
    /// An ad's state on the platform, as the last sync saw it.
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
    #[serde(rename_all = "snake_case")]
    #[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
    pub enum AdStatus {
        Running => "running",
        Paused => "paused",
    }
}

/// How long a proposal waits for a person.
pub const PROPOSAL_VALIDITY: SignedDuration = SignedDuration::from_hours(7 * 24);
/// A boost's days.
pub const BOOST_DAYS: std::ops::RangeInclusive<i64> = 2..=90;
/// Countries a boost may target.
pub const MAX_COUNTRIES: usize = 25;
/// Characters of a reason.
pub const MAX_REASON_CHARS: usize = 2000;

/// What a proposal asks, checked: the ad or post it names and the numbers it sets.
#[derive(Debug, Clone, PartialEq)]
pub enum Change {
    Pause {
        ad_id: String,
    },
    Resume {
        ad_id: String,
    },
    Budget {
        ad_id: String,
        amount: Cents,
    },
    Boost {
        post_id: uuid::Uuid,
        ad_account_id: String,
        budget_type: BudgetType,
        amount: Cents,
        days: i64,
        countries: Vec<String>,
    },
}

impl Change {
    pub fn kind(&self) -> ProposalKind {
        match self {
            Change::Pause { .. } => ProposalKind::Pause,
            Change::Resume { .. } => ProposalKind::Resume,
            Change::Budget { .. } => ProposalKind::Budget,
            Change::Boost { .. } => ProposalKind::Boost,
        }
    }

    /// What a waiting proposal is the same as: the kind and the ad (or, for a boost, the post).
    pub fn target(&self) -> String {
        match self {
            Change::Pause { ad_id } | Change::Resume { ad_id } | Change::Budget { ad_id, .. } => {
                format!("ad:{ad_id}")
            }
            Change::Boost { post_id, .. } => format!("post:{post_id}"),
        }
    }
}

/// The decimals of `amount` as written: the shortest decimal that reads back as the same
/// number (what a client that sent `12.5` wrote), so no rounding of binary fractions decides.
pub fn decimals(amount: f64) -> usize {
    // `Display` for f64 writes that shortest form, never in exponent notation.
    let text = amount.to_string();
    text.split_once('.')
        .map_or(0, |(_, fraction)| fraction.len())
}

/// An amount in the ad account's currency: above zero and below a billion, a whole number of
/// cents (the schema's range and `multipleOf: 0.01`: 400 naming the field). The answer is the
/// cent the amount names. A JSON Schema engine checks and makes multiples of 0.01 in binary
/// floating point (57 × 0.01 is 0.5700000000000001), so an amount within a few units in the
/// last place of a cent is that cent; anything further off (0.005, 12.345) is refused.
pub fn check_amount(field: &str, amount: f64) -> Result<Cents, AdsRefusal> {
    if !amount.is_finite() || amount <= 0.0 || amount >= MAX_AMOUNT {
        return Err(AdsRefusal::invalid(
            field,
            "an amount above 0 and below 1000000000, in the ad account's currency",
        ));
    }
    let cents = amount * 100.0;
    let whole = cents.round();
    if whole < 1.0 || (cents - whole).abs() > 8.0 * f64::EPSILON * whole {
        return Err(AdsRefusal::invalid(
            field,
            "at most two decimals: a whole number of cents, at least 0.01",
        ));
    }
    // The cent it names stays in the range too (999999999.999999 names 1000000000.00).
    if whole / 100.0 >= MAX_AMOUNT {
        return Err(AdsRefusal::invalid(
            field,
            "an amount above 0 and below 1000000000, in the ad account's currency",
        ));
    }
    Ok(Cents(whole as i64))
}

/// Amounts stay below this.
pub const MAX_AMOUNT: f64 = 1e9;

/// The JSON Schema pattern of a country code (any case).
pub const COUNTRY_PATTERN: &str = "^[A-Za-z]{2}$";

/// Country codes: ISO 3166 alpha-2 ([`COUNTRY_PATTERN`], stored upper case), at most
/// [`MAX_COUNTRIES`] (400); one given twice in any case is 422 naming it.
pub fn check_countries(countries: &[String]) -> Result<Vec<String>, AdsRefusal> {
    if countries.len() > MAX_COUNTRIES {
        return Err(AdsRefusal::invalid(
            "countries",
            format!("at most {MAX_COUNTRIES} countries"),
        ));
    }
    let mut out: Vec<String> = Vec::with_capacity(countries.len());
    for (i, c) in countries.iter().enumerate() {
        let code = c.to_ascii_uppercase();
        if code.len() != 2 || !code.bytes().all(|b| b.is_ascii_uppercase()) {
            return Err(AdsRefusal::invalid(
                format!("countries[{i}]"),
                "a two-letter country code (ISO 3166-1 alpha-2)",
            ));
        }
        if out.contains(&code) {
            return Err(AdsRefusal::RejectedField {
                field: format!("countries[{i}]"),
                message: format!("{code} is listed twice"),
            });
        }
        out.push(code);
    }
    Ok(out)
}

/// A campaign's click-through rate (percent) and cost per click: none without impressions or
/// clicks.
pub fn ratios(spend: Cents, impressions: i64, clicks: i64) -> (Option<f64>, Option<f64>) {
    let round = |x: f64| (x * 100.0).round() / 100.0;
    let ctr = (impressions > 0).then(|| round(clicks as f64 * 100.0 / impressions as f64));
    let cpc = (clicks > 0).then(|| round(spend.units() / clicks as f64));
    (ctr, cpc)
}

/// A boost's days: 2 to 90.
pub fn check_days(days: i64) -> Result<i64, AdsRefusal> {
    if !BOOST_DAYS.contains(&days) {
        return Err(AdsRefusal::invalid("days", "a boost runs 2 to 90 days"));
    }
    Ok(days)
}

/// The ad a pause, resume or budget proposal names, as the last sync saw it.
#[derive(Debug, Clone, PartialEq)]
pub struct KnownAd {
    pub status: AdStatus,
    pub budget_type: BudgetType,
    /// The budget in the ad account's currency.
    pub budget: Cents,
}

/// Whether the named ad may be proposed for: a pause needs a running ad, a resume a paused one.
pub fn check_ad_state(change: &Change, ad: &KnownAd) -> Result<(), AdsRefusal> {
    match (change, ad.status) {
        (Change::Pause { .. }, AdStatus::Paused) => {
            Err(AdsRefusal::Rejected(AdsRejection::AlreadyPaused))
        }
        (Change::Resume { .. }, AdStatus::Running) => {
            Err(AdsRefusal::Rejected(AdsRejection::AlreadyRunning))
        }
        (Change::Budget { amount, .. }, _) if *amount == ad.budget => {
            Err(AdsRefusal::Rejected(AdsRejection::SameBudget))
        }
        _ => Ok(()),
    }
}

/// The workspace's spend against its monthly cap when a person approves.
#[derive(Debug, Clone, PartialEq)]
pub struct CapState {
    /// The workspace's monthly ad budget; `None` when the tenant file sets none.
    pub cap: Option<Cents>,
    /// Spent this month so far, as synced.
    pub spent: Cents,
    /// What the running ads will spend for the rest of the month at their budgets.
    pub committed: Cents,
    /// Whole days left in the month, today included.
    pub days_left: i64,
}

/// What the change adds to this month's spend: a resumed ad's budget for the rest of the month,
/// a raised budget's difference; a pause, a lowered budget and a boost (created paused) add
/// nothing.
pub fn added_spend(change: &Change, ad: Option<&KnownAd>, days_left: i64) -> Cents {
    let month = |budget_type: BudgetType, amount: Cents| match budget_type {
        BudgetType::Daily => amount.times(days_left),
        BudgetType::Lifetime => amount,
    };
    match (change, ad) {
        (Change::Resume { .. }, Some(ad)) => month(ad.budget_type, ad.budget),
        (Change::Budget { amount, .. }, Some(ad))
            if ad.status == AdStatus::Running && *amount > ad.budget =>
        {
            month(ad.budget_type, *amount - ad.budget)
        }
        _ => Cents::ZERO,
    }
}

/// A resume or a raise on a running ad may not take the month's spend (spent, plus what the
/// running ads will spend, plus the change) past the cap.
pub fn check_cap(change: &Change, ad: Option<&KnownAd>, cap: &CapState) -> Result<(), AdsRefusal> {
    let added = added_spend(change, ad, cap.days_left);
    let Some(limit) = cap.cap else {
        return Ok(());
    };
    if added > Cents::ZERO && cap.spent + cap.committed + added > limit {
        return Err(AdsRefusal::Rejected(AdsRejection::OverCap {
            spent: cap.spent,
            committed: cap.committed,
            added,
            cap: limit,
        }));
    }
    Ok(())
}

/// Whether a waiting proposal created at `created_at` has expired at `now`.
pub fn expired(created_at: Timestamp, now: Timestamp) -> bool {
    now >= created_at + PROPOSAL_VALIDITY
}

impl ProposalStatus {
    /// The status a proposal created at `created_at` shows at `now`: a waiting one past its
    /// 7 days shows expired before the hourly expiry marks it so.
    pub fn shown(self, created_at: Timestamp, now: Timestamp) -> ProposalStatus {
        if self == ProposalStatus::Waiting && expired(created_at, now) {
            ProposalStatus::Expired
        } else {
            self
        }
    }
}

/// The note the service leaves on the decision of a proposal that expired.
pub const EXPIRED_NOTE: &str = "expired: nobody handled the proposal within 7 days";

/// What the hourly expiry does at `now`: proposals still `from` (waiting) and created at or
/// before `created_by` become `to` (expired); their decisions are dismissed by the service with
/// [`EXPIRED_NOTE`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Expiry {
    pub created_by: Timestamp,
    pub from: ProposalStatus,
    pub to: ProposalStatus,
}

pub fn expiry(now: Timestamp) -> Expiry {
    Expiry {
        created_by: now - PROPOSAL_VALIDITY,
        from: ProposalStatus::Waiting,
        to: ProposalStatus::Expired,
    }
}

/// What a person's dismissal makes of a waiting proposal created at `created_at`: refused, or
/// expired when its 7 days had passed already.
pub fn dismissed(created_at: Timestamp, now: Timestamp) -> ProposalStatus {
    if expired(created_at, now) {
        ProposalStatus::Expired
    } else {
        ProposalStatus::Refused
    }
}

/// An approved proposal whose change the job queue gave up on: `(from, to)`, approved to
/// failed, with [`given_up_result`] as its result.
pub const GIVEN_UP: (ProposalStatus, ProposalStatus) =
    (ProposalStatus::Approved, ProposalStatus::Failed);

/// The result of a proposal given up on: the queue's last error.
pub fn given_up_result(last_error: Option<&str>) -> serde_json::Value {
    crate::change::failure(format!(
        "the service gave up making the change: {}",
        last_error.unwrap_or("no error recorded")
    ))
}

/// Why `GET /ads` and `POST /ads/proposals` answer 403, and where to enable ads.
pub const ADS_DISABLED: &str = "ads are not enabled for this workspace: an operator enables \
them with `\"ads_enabled\": true` on the workspace in the tenant file (fleetdesk admin apply), \
with its `ad_accounts` and `monthly_ad_cap`";

/// The proposals `GET /ads` lists: those of the last 30 days.
pub const PROPOSALS_SHOWN: SignedDuration = SignedDuration::from_hours(30 * 24);

/// Whole days left in `now`'s month in Taipei, today included.
pub fn days_left_in_month(now: Timestamp) -> i64 {
    let today = crate::research::quota_day(now);
    i64::from(today.days_in_month() - today.day()) + 1
}

/// The first of the `days` days (Taipei) up to `now`, today included: what `GET /ads` sums
/// campaigns from.
pub fn first_day(now: Timestamp, days: i64) -> jiff::civil::Date {
    crate::research::quota_day(now - SignedDuration::from_hours(24 * (days - 1)))
}

/// The first moment of `now`'s month in Taipei: what the cap counts spend from.
pub fn month_start(now: Timestamp) -> Timestamp {
    crate::research::month_start(now)
}

/// What the running ads will spend for the rest of the month at their budgets: a daily
/// budget times the days left, a lifetime budget whole (the service does not know how much of
/// it is spent).
pub fn committed(ads: &[KnownAd], days_left: i64) -> Cents {
    ads.iter()
        .filter(|a| a.status == AdStatus::Running)
        .map(|a| match a.budget_type {
            BudgetType::Daily => a.budget.times(days_left),
            BudgetType::Lifetime => a.budget,
        })
        .sum()
}

/// The title of the `ad_change` decision a proposal opens.
pub fn decision_title(change: &Change, currency: Option<&str>) -> String {
    let money = |amount: Cents| match currency {
        Some(c) => format!("{amount} {c}"),
        None => format!("{amount}"),
    };
    match change {
        Change::Pause { ad_id } => format!("Pause ad {ad_id}"),
        Change::Resume { ad_id } => format!("Resume ad {ad_id}"),
        Change::Budget { ad_id, amount } => {
            format!("Set the budget of ad {ad_id} to {}", money(*amount))
        }
        Change::Boost {
            budget_type,
            amount,
            days,
            ..
        } => format!(
            "Boost a post: {} {budget_type} for {days} days",
            money(*amount)
        ),
    }
}

/// Whether a post of the workspace may be boosted: published on Facebook or Instagram, with
/// the platform's id an agent reported. Answers that id.
pub fn check_boost_post(
    platform: &str,
    status: &str,
    platform_post_id: Option<&str>,
) -> Result<String, AdsRefusal> {
    let refuse = |message: String| AdsRefusal::RejectedField {
        field: "post_id".into(),
        message,
    };
    if !matches!(platform, "facebook" | "instagram") {
        return Err(refuse(format!(
            "a {platform} post cannot be boosted: only facebook and instagram posts"
        )));
    }
    if status != "published" {
        return Err(refuse(format!(
            "the post is {status}: only a published post can be boosted"
        )));
    }
    match platform_post_id {
        Some(id) if !id.is_empty() => Ok(id.to_owned()),
        _ => Err(refuse(
            "the post has no platform id: report it published with its platform_post_id first"
                .into(),
        )),
    }
}

/// Whether the ad account can boost a post of `platform`: an Instagram post needs the
/// Instagram account the boost runs as (`instagram_user_id` in the tenant file).
pub fn check_boost_account(
    platform: &str,
    instagram_user_id: Option<&str>,
) -> Result<(), AdsRefusal> {
    if platform == "instagram" && instagram_user_id.is_none() {
        return Err(AdsRefusal::RejectedField {
            field: "ad_account_id".into(),
            message: "the ad account names no instagram_user_id (tenant file): it cannot boost an instagram post".into(),
        });
    }
    Ok(())
}

/// When an approved boost runs: from the approval for its days.
pub fn boost_period(approved_at: Timestamp, days: i64) -> (Timestamp, Timestamp) {
    (
        approved_at,
        approved_at + SignedDuration::from_hours(24 * days),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_waiting_proposal_past_its_seven_days_shows_expired() {
        let at = |t: &str| t.parse::<Timestamp>().unwrap();
        let now = at("2026-11-29T10:00:00Z");
        let old = at("2026-11-22T10:00:00Z");
        assert_eq!(
            ProposalStatus::Waiting.shown(old, now),
            ProposalStatus::Expired
        );
        let recent = at("2026-11-22T10:00:01Z");
        assert_eq!(
            ProposalStatus::Waiting.shown(recent, now),
            ProposalStatus::Waiting
        );
        assert_eq!(
            ProposalStatus::Approved.shown(old, now),
            ProposalStatus::Approved
        );
    }

    #[test]
    fn a_proposal_expires_after_seven_days_and_a_late_dismissal_says_so() {
        let at = |t: &str| t.parse::<Timestamp>().unwrap();
        let now = at("2026-11-29T10:00:00Z");
        let e = expiry(now);
        assert_eq!(e.created_by, at("2026-11-22T10:00:00Z"));
        assert_eq!(
            (e.from, e.to),
            (ProposalStatus::Waiting, ProposalStatus::Expired)
        );
        assert_eq!(
            dismissed(at("2026-11-22T10:00:00Z"), now),
            ProposalStatus::Expired
        );
        assert_eq!(
            dismissed(at("2026-11-22T10:00:01Z"), now),
            ProposalStatus::Refused
        );
        assert_eq!(
            given_up_result(Some("timeout"))["error"],
            "the service gave up making the change: timeout"
        );
        assert_eq!(
            given_up_result(None)["error"],
            "the service gave up making the change: no error recorded"
        );
        assert_eq!(GIVEN_UP, (ProposalStatus::Approved, ProposalStatus::Failed));
    }

    fn c(units: f64) -> Cents {
        Cents::from_units(units).unwrap()
    }

    fn running(budget: f64) -> KnownAd {
        KnownAd {
            status: AdStatus::Running,
            budget_type: BudgetType::Daily,
            budget: c(budget),
        }
    }

    #[test]
    fn amounts_are_positive_with_at_most_two_decimals() {
        assert_eq!(check_amount("amount", 12.5), Ok(c(12.5)));
        assert_eq!(check_amount("amount", 0.01), Ok(c(0.01)));
        for bad in [0.0, -1.0, f64::NAN, f64::INFINITY, 1e9] {
            assert!(
                matches!(check_amount("amount", bad), Err(AdsRefusal::Invalid { .. })),
                "{bad}"
            );
        }
        assert_eq!(check_amount("amount", 0.07), Ok(c(0.07)));
        // A cent as a schema engine makes it (57 × 0.01) is that cent.
        assert_eq!(check_amount("amount", 57.0 * 0.01), Ok(c(0.57)));
        assert_eq!(check_amount("amount", 0.5700000000000001), Ok(c(0.57)));
        // Two decimals, however large; nothing below a cent.
        assert_eq!(check_amount("amount", 291573447.91), Ok(c(291573447.91)));
        assert_eq!(check_amount("amount", 999999999.99), Ok(c(999999999.99)));
        for bad in [
            1e-9,
            0.001,
            5.000000001,
            0.005,
            12.345,
            999999999.995,
            999999999.999999,
        ] {
            let refused = check_amount("amount", bad);
            assert!(
                matches!(&refused, Err(AdsRefusal::Invalid { field, .. }) if field == "amount"),
                "{bad}: {refused:?}"
            );
        }
        assert_eq!(
            (decimals(1500.0), decimals(12.5), decimals(1e-9)),
            (0, 1, 9)
        );
        assert_eq!(ratios(c(10.0), 1000, 4), (Some(0.4), Some(2.5)));
        assert_eq!(ratios(c(10.0), 0, 0), (None, None));
    }

    #[test]
    fn boost_days_2_to_90_and_countries_as_iso_codes() {
        assert!(check_days(1).is_err());
        assert_eq!(check_days(2), Ok(2));
        assert_eq!(check_days(90), Ok(90));
        assert!(check_days(91).is_err());
        assert_eq!(
            check_countries(&["tw".into(), "HK".into()]),
            Ok(vec!["TW".into(), "HK".into()])
        );
        assert!(matches!(
            check_countries(&["TW".into(), "tw".into()]),
            Err(AdsRefusal::RejectedField { field, .. }) if field == "countries[1]"
        ));
        assert!(check_countries(&[" HK".into()]).is_err());
        assert!(check_countries(&["TWN".into()]).is_err());
        let many: Vec<String> = (0..26)
            .map(|i| format!("A{}", (b'A' + i as u8) as char))
            .collect();
        assert!(check_countries(&many[..25]).is_ok());
        assert!(check_countries(&many).is_err());
    }

    #[test]
    fn a_pause_needs_a_running_ad_and_a_resume_a_paused_one() {
        let pause = Change::Pause { ad_id: "1".into() };
        let resume = Change::Resume { ad_id: "1".into() };
        let paused = KnownAd {
            status: AdStatus::Paused,
            ..running(10.0)
        };
        assert!(check_ad_state(&pause, &running(10.0)).is_ok());
        assert!(check_ad_state(&pause, &paused).is_err());
        assert!(check_ad_state(&resume, &paused).is_ok());
        assert!(check_ad_state(&resume, &running(10.0)).is_err());
        let same = Change::Budget {
            ad_id: "1".into(),
            amount: c(10.0),
        };
        assert!(check_ad_state(&same, &running(10.0)).is_err());
    }

    #[test]
    fn the_cap_counts_spent_committed_and_what_the_change_adds() {
        let cap = CapState {
            cap: Some(c(1000.0)),
            spent: c(600.0),
            committed: c(200.0),
            days_left: 10,
        };
        let raise = |amount| Change::Budget {
            ad_id: "1".into(),
            amount: c(amount),
        };
        // 20 a day more for 10 days: exactly the cap.
        assert_eq!(check_cap(&raise(30.0), Some(&running(10.0)), &cap), Ok(()));
        assert!(check_cap(&raise(30.01), Some(&running(10.0)), &cap).is_err());
        // Lowering, pausing and boosting never hit the cap.
        assert_eq!(check_cap(&raise(5.0), Some(&running(10.0)), &cap), Ok(()));
        let full = CapState {
            spent: c(1000.0),
            ..cap.clone()
        };
        assert_eq!(
            check_cap(
                &Change::Pause { ad_id: "1".into() },
                Some(&running(10.0)),
                &full
            ),
            Ok(())
        );
        // A raise on a paused ad spends nothing until it is resumed.
        let paused = KnownAd {
            status: AdStatus::Paused,
            ..running(10.0)
        };
        assert_eq!(check_cap(&raise(500.0), Some(&paused), &full), Ok(()));
        // A resume brings the ad's budget for the rest of the month.
        let resume = Change::Resume { ad_id: "1".into() };
        assert_eq!(check_cap(&resume, Some(&paused), &cap), Ok(()));
        let lifetime = KnownAd {
            budget_type: BudgetType::Lifetime,
            budget: c(200.01),
            ..paused
        };
        assert!(check_cap(&resume, Some(&lifetime), &cap).is_err());
        // Without a cap nothing is refused.
        let none = CapState { cap: None, ..full };
        assert_eq!(
            check_cap(&raise(500.0), Some(&running(10.0)), &none),
            Ok(())
        );
    }

    #[test]
    fn the_days_shown_end_today_in_taipei() {
        let at = |t: &str| t.parse::<Timestamp>().unwrap();
        let day = |d: &str| d.parse::<jiff::civil::Date>().unwrap();
        // 2026-11-30 00:30 in Taipei is still 29 November in UTC.
        assert_eq!(first_day(at("2026-11-29T16:30:00Z"), 1), day("2026-11-30"));
        assert_eq!(first_day(at("2026-11-29T16:30:00Z"), 7), day("2026-11-24"));
        assert_eq!(first_day(at("2026-11-29T15:59:59Z"), 7), day("2026-11-23"));
    }

    #[test]
    fn the_months_days_left_count_today_in_taipei() {
        let at = |t: &str| t.parse::<Timestamp>().unwrap();
        // 2026-11-30 00:30 in Taipei is still 29 November in UTC.
        assert_eq!(days_left_in_month(at("2026-11-29T16:30:00Z")), 1);
        assert_eq!(days_left_in_month(at("2026-11-29T15:59:59Z")), 2);
        assert_eq!(days_left_in_month(at("2026-11-30T16:00:00Z")), 31);
        let ads = [
            running(10.0),
            KnownAd {
                status: AdStatus::Paused,
                ..running(100.0)
            },
            KnownAd {
                budget_type: BudgetType::Lifetime,
                ..running(50.0)
            },
        ];
        assert_eq!(committed(&ads, 3), c(80.0));
        assert_eq!(
            decision_title(
                &Change::Budget {
                    ad_id: "42".into(),
                    amount: c(12.5)
                },
                Some("TWD")
            ),
            "Set the budget of ad 42 to 12.50 TWD"
        );
        let (from, to) = boost_period(at("2026-11-27T10:00:00Z"), 2);
        assert_eq!(
            (from, to),
            (at("2026-11-27T10:00:00Z"), at("2026-11-29T10:00:00Z"))
        );
    }

    #[test]
    fn only_a_published_facebook_or_instagram_post_with_its_id_is_boosted() {
        assert_eq!(
            check_boost_post("facebook", "published", Some("1_2")),
            Ok("1_2".into())
        );
        assert!(check_boost_post("instagram", "published", Some("9")).is_ok());
        for (platform, status, id) in [
            ("threads", "published", Some("1")),
            ("facebook", "approved", Some("1")),
            ("facebook", "published", None),
            ("instagram", "published", Some("")),
        ] {
            let e = check_boost_post(platform, status, id).unwrap_err();
            assert!(matches!(e, AdsRefusal::RejectedField { ref field, .. } if field == "post_id"));
        }
    }

    #[test]
    fn an_instagram_boost_needs_the_accounts_instagram_user() {
        assert!(check_boost_account("facebook", None).is_ok());
        assert!(check_boost_account("instagram", Some("178")).is_ok());
        assert!(check_boost_account("instagram", None).is_err());
    }

    #[test]
    fn a_waiting_proposal_expires_after_7_days() {
        let at = |t: &str| t.parse::<Timestamp>().unwrap();
        let created = at("2026-11-20T10:00:00Z");
        assert!(!expired(created, at("2026-11-27T09:59:59Z")));
        assert!(expired(created, at("2026-11-27T10:00:00Z")));
    }
}
