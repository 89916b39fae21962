//! A proposal's way through the service as plans over loaded facts: what a new proposal
//! writes or why it is refused ([`plan_proposal`]), whether a person's approval stands
//! against the monthly cap ([`plan_approval`]), and what the ad work does next for an approved
//! proposal ([`plan_step`], [`made_boost`]). The adapter loads the facts, calls the plan and
//! writes it in one transaction.

use fleetdesk_kernel::decision::{DecisionKind, NewDecision};
use fleetdesk_kernel::events::{AdChangeSettled, EventBody, NewEvent};
use fleetdesk_kernel::jobs::{Job, NewJob};
use fleetdesk_kernel::money::Cents;
use jiff::Timestamp;
use serde_json::{Value, json};
use uuid::Uuid;

use crate::platform::{AdAccountRef, CHANGE_JOB, CreatedAd, Execution};
use crate::ports::NewProposal;
use crate::proposal::{
    AdStatus, BudgetType, CapState, Change, KnownAd, PROPOSAL_VALIDITY, ProposalKind,
    ProposalStatus, boost_period, check_ad_state, check_boost_account, check_boost_post, check_cap,
    committed, days_left_in_month, decision_title, expired,
};
use crate::{AdsRefusal, AdsRejection};

// ---------------------------------------------------------------------------------------------
// Proposing

/// An ad as the last sync stored it, with its account's currency.
#[derive(Debug, Clone, PartialEq)]
pub struct SyncedAd {
    pub ad: KnownAd,
    pub currency: String,
}

/// The post a boost names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BoostPost {
    pub platform: String,
    pub status: String,
    pub platform_post_id: Option<String>,
}

/// The ad account a boost names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BoostAccount {
    pub currency: String,
    pub instagram_user_id: Option<String>,
}

/// What the proposal names, as the workspace holds it (`None`: not the workspace's).
#[derive(Debug, Clone, PartialEq)]
pub enum TargetFacts {
    /// The synced ad a pause, resume or budget names.
    Ad(Option<SyncedAd>),
    /// The post and the ad account of a boost.
    Boost {
        post: Option<BoostPost>,
        account: Option<BoostAccount>,
    },
}

/// What a proposal is judged on: the workspace's switch, its target, and the decision of a
/// proposal of the same kind for the same target still waiting within its 7 days.
#[derive(Debug, Clone, PartialEq)]
pub struct ProposalFacts {
    pub ads_enabled: bool,
    pub target: TargetFacts,
    pub waiting: Option<Uuid>,
}

/// A workspace without ads enabled is refused (403) what `GET /ads` and a proposal ask.
pub fn check_enabled(ads_enabled: bool) -> Result<(), AdsRefusal> {
    if ads_enabled {
        Ok(())
    } else {
        Err(AdsRefusal::AdsDisabled)
    }
}

/// Proposals of the same kind and target created after this are still waiting at `now`.
pub fn waiting_since(now: Timestamp) -> Timestamp {
    now - PROPOSAL_VALIDITY
}

/// A proposal's columns as the change names them.
#[derive(Debug, Clone, PartialEq)]
pub struct ProposalColumns {
    pub ad_id: Option<String>,
    pub post_id: Option<Uuid>,
    pub ad_account_id: Option<String>,
    pub budget_type: Option<BudgetType>,
    pub amount: Option<Cents>,
    pub days: Option<i32>,
    pub countries: Vec<String>,
}

impl ProposalColumns {
    pub fn of(change: &Change) -> Self {
        let ad = |ad_id: &String, amount: Option<Cents>| ProposalColumns {
            ad_id: Some(ad_id.clone()),
            post_id: None,
            ad_account_id: None,
            budget_type: None,
            amount,
            days: None,
            countries: Vec::new(),
        };
        match change {
            Change::Pause { ad_id } | Change::Resume { ad_id } => ad(ad_id, None),
            Change::Budget { ad_id, amount } => ad(ad_id, Some(*amount)),
            Change::Boost {
                post_id,
                ad_account_id,
                budget_type,
                amount,
                days,
                countries,
            } => ProposalColumns {
                ad_id: None,
                post_id: Some(*post_id),
                ad_account_id: Some(ad_account_id.clone()),
                budget_type: Some(*budget_type),
                amount: Some(*amount),
                days: Some(i32::try_from(*days).unwrap_or(i32::MAX)),
                countries: countries.clone(),
            },
        }
    }
}

/// What an accepted proposal writes: the proposal and the `ad_change` decision it opens for
/// a person.
#[derive(Debug, Clone, PartialEq)]
pub struct ProposalPlan {
    pub id: Uuid,
    pub kind: ProposalKind,
    /// What a later proposal is the same as ([`Change::target`]).
    pub target: String,
    pub columns: ProposalColumns,
    /// The `ad_change` decision: its detail is what a person approves, in the currency the
    /// amounts are in.
    pub decision: NewDecision,
}

/// The target checked: the currency the proposal's amounts are in, or why it is refused.
fn check_target(change: &Change, target: TargetFacts) -> Result<String, AdsRefusal> {
    match (change, target) {
        (
            Change::Pause { ad_id } | Change::Resume { ad_id } | Change::Budget { ad_id, .. },
            TargetFacts::Ad(ad),
        ) => {
            let Some(ad) = ad else {
                return Err(AdsRefusal::not_there(
                    "ad_id",
                    format!("no ad {ad_id} in this workspace's ad accounts (as last synced)"),
                ));
            };
            check_ad_state(change, &ad.ad).map(|()| ad.currency)
        }
        (
            Change::Boost {
                post_id,
                ad_account_id,
                ..
            },
            TargetFacts::Boost { post, account },
        ) => {
            let Some(post) = post else {
                return Err(AdsRefusal::not_there(
                    "post_id",
                    format!("no post {post_id} in this workspace"),
                ));
            };
            check_boost_post(
                &post.platform,
                &post.status,
                post.platform_post_id.as_deref(),
            )?;
            let Some(account) = account else {
                return Err(AdsRefusal::not_there(
                    "ad_account_id",
                    format!("{ad_account_id} is not an ad account of this workspace"),
                ));
            };
            check_boost_account(&post.platform, account.instagram_user_id.as_deref())
                .map(|()| account.currency)
        }
        (_, target) => unreachable!("the adapter loads the target the change names: {target:?}"),
    }
}

/// A new proposal judged, in order: the workspace has ads enabled, the target is the
/// workspace's and in a state the change applies to, and no proposal of the same kind for the
/// same target is waiting for a person.
pub fn plan_proposal(
    p: &NewProposal,
    facts: ProposalFacts,
    id: Uuid,
) -> Result<ProposalPlan, AdsRefusal> {
    check_enabled(facts.ads_enabled)?;
    let currency = check_target(&p.change, facts.target)?;
    let kind = p.change.kind();
    let target = p.change.target();
    if let Some(decision) = facts.waiting {
        let target = if matches!(p.change, Change::Boost { .. }) {
            "post"
        } else {
            "ad"
        };
        return Err(AdsRefusal::Rejected(AdsRejection::Waiting {
            kind,
            target,
            decision,
        }));
    }
    let columns = ProposalColumns::of(&p.change);
    let detail = json!({
        "proposal_id": id, "kind": kind, "ad_id": columns.ad_id, "post_id": columns.post_id,
        "ad_account_id": columns.ad_account_id,
        "budget_type": columns.budget_type.map(BudgetType::as_str),
        "amount": columns.amount, "currency": currency, "days": columns.days,
        "countries": columns.countries, "reason": p.reason,
    });
    let decision = NewDecision {
        post_id: columns.post_id,
        ..NewDecision::new(
            DecisionKind::AdChange,
            decision_title(&p.change, Some(&currency)),
            detail,
        )
    };
    Ok(ProposalPlan {
        id,
        kind,
        target,
        columns,
        decision,
    })
}

// ---------------------------------------------------------------------------------------------
// Approving

/// The proposal an `ad_change` decision opened, locked.
#[derive(Debug, Clone, PartialEq)]
pub struct LockedProposal {
    pub id: Uuid,
    pub kind: ProposalKind,
    pub status: ProposalStatus,
    pub ad_id: Option<String>,
    pub amount: Option<Cents>,
    pub created_at: Timestamp,
}

impl LockedProposal {
    /// The synced ad an approval reads, and whose spend the monthly cap judges: a resume's or
    /// a budget's. A pause and a boost (made paused) add no spend.
    pub fn ad_to_check(&self) -> Option<&str> {
        matches!(self.kind, ProposalKind::Resume | ProposalKind::Budget)
            .then(|| self.ad_id.as_deref().unwrap_or_default())
    }
}

/// The workspace's monthly cap with what it is judged on, read in the cap's currency: the
/// month's spend as synced and the running ads (one per ad set).
#[derive(Debug, Clone, PartialEq)]
pub struct CapFacts {
    pub limit: Cents,
    pub currency: String,
    pub spent: Cents,
    pub running: Vec<KnownAd>,
}

/// An approval that stands: the proposal's new status and the job that makes the change.
#[derive(Debug, Clone, PartialEq)]
pub struct Approved {
    pub status: ProposalStatus,
    pub job: NewJob,
}

/// Why a person's approval of a proposal does not stand (the decision's move answers 422
/// with it).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ApprovalRefusal {
    #[error("the proposal is {0}")]
    Settled(ProposalStatus),
    #[error(
        "the proposal expired: nobody approved it within 7 days; the agent may propose it again"
    )]
    Expired,
    #[error("ad {0} is no longer among the synced ads of the workspace")]
    AdGone(String),
    #[error("the ad spends {ad} but the monthly cap is in {cap}: they cannot be compared")]
    Currency { ad: String, cap: String },
    /// [`check_cap`]'s refusal.
    #[error("{0}")]
    OverCap(AdsRefusal),
}

/// A person's approval judged, in order: the proposal still waits within its 7 days; a resume
/// or a budget names an ad still synced, in the cap's currency, and does not take the month's
/// spend past the cap (`cap` is `None` when the tenant file sets none, and is read only for a
/// resume or a budget). `Err` says why it cannot be approved.
pub fn plan_approval(
    p: &LockedProposal,
    ad: Option<SyncedAd>,
    cap: Option<CapFacts>,
    now: Timestamp,
) -> Result<Approved, ApprovalRefusal> {
    if p.status != ProposalStatus::Waiting {
        return Err(ApprovalRefusal::Settled(p.status));
    }
    if expired(p.created_at, now) {
        return Err(ApprovalRefusal::Expired);
    }
    if let Some(ad_id) = p.ad_to_check() {
        let Some(ad) = ad else {
            return Err(ApprovalRefusal::AdGone(ad_id.to_owned()));
        };
        let change = if p.kind == ProposalKind::Resume {
            Change::Resume {
                ad_id: ad_id.to_owned(),
            }
        } else {
            Change::Budget {
                ad_id: ad_id.to_owned(),
                amount: p.amount.unwrap_or_default(),
            }
        };
        if let Some(cap) = cap {
            if ad.currency != cap.currency {
                return Err(ApprovalRefusal::Currency {
                    ad: ad.currency,
                    cap: cap.currency,
                });
            }
            let days_left = days_left_in_month(now);
            let state = CapState {
                cap: Some(cap.limit),
                spent: cap.spent,
                committed: committed(&cap.running, days_left),
                days_left,
            };
            check_cap(&change, Some(&ad.ad), &state).map_err(ApprovalRefusal::OverCap)?;
        }
    }
    Ok(Approved {
        status: ProposalStatus::Approved,
        job: NewJob {
            kind: CHANGE_JOB.to_owned(),
            key: p.id.to_string(),
            payload: json!({"proposal_id": p.id}),
            run_at: now,
        },
    })
}

/// The proposal a change job ([`Approved::job`]) executes.
pub fn proposal_of(job: &Job) -> anyhow::Result<Uuid> {
    job.key
        .parse()
        .map_err(|e| anyhow::anyhow!("ad change job {}: {e}", job.key))
}

// ---------------------------------------------------------------------------------------------
// Executing

/// An approved proposal with what executing it needs, as loaded under its job's lease.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct ChangeFacts {
    pub id: Uuid,
    pub kind: Option<ProposalKind>,
    pub status: Option<ProposalStatus>,
    pub ad_id: Option<String>,
    pub post_id: Option<Uuid>,
    pub amount: Option<Cents>,
    pub proposed_budget_type: Option<BudgetType>,
    pub days: Option<i32>,
    pub countries: Vec<String>,
    /// The proposal's stored result: an earlier attempt's start ([`started`]) when one may
    /// have reached the platform.
    pub result: Option<Value>,
    pub decided_at: Option<Timestamp>,
    /// The ad account the change runs on: the synced ad's, or the one a boost names.
    pub ad_account_id: Option<String>,
    /// That account's currency and token ([`ChangeFacts::account`]); `None` when it is no
    /// longer the workspace's.
    pub currency: Option<String>,
    pub token_env: Option<String>,
    pub instagram_user_id: Option<String>,
    /// The synced ad's ad set, campaign and budget type.
    pub adset_id: Option<String>,
    pub campaign_id: Option<String>,
    pub ad_budget_type: Option<BudgetType>,
    /// The boosted post's platform, its platform id and market (the countries of a boost
    /// that names none).
    pub platform: Option<String>,
    pub platform_post_id: Option<String>,
    pub market: Option<String>,
}

impl ChangeFacts {
    /// The ad account the change runs on, with its token; `None` when it is no longer the
    /// workspace's.
    pub fn account(&self) -> Option<AdAccountRef> {
        Some(AdAccountRef {
            id: self.ad_account_id.clone()?,
            currency: self.currency.clone()?,
            token_env: self.token_env.clone()?,
        })
    }
}

/// What the ad work does with an approved proposal's job.
#[derive(Debug, Clone, PartialEq)]
pub enum StepPlan {
    /// Nothing to do: the proposal is gone or no longer approved. The job is finished.
    Done,
    /// The proposal fails with this result and the job is finished.
    Fail(Value),
    /// The change is made on the account; `started` is recorded first, so that a boost cut
    /// short after reaching the platform is never made twice.
    Execute {
        account: AdAccountRef,
        change: Box<Execution>,
        started: Value,
    },
}

/// The name a boost's campaign, ad set and ad carry: a person finds them by it.
pub fn boost_name(proposal: Uuid) -> String {
    format!("fleetdesk boost {proposal}")
}

/// The result recorded on a proposal that failed.
pub fn failure(message: impl Into<String>) -> Value {
    json!({"error": message.into()})
}

/// A boost runs from its approval for its days (2 when none is stored).
fn period(f: &ChangeFacts, now: Timestamp) -> (Timestamp, Timestamp) {
    boost_period(f.decided_at.unwrap_or(now), i64::from(f.days.unwrap_or(2)))
}

/// The next step of an approved proposal's job: a boost whose earlier attempt started fails
/// rather than risk a second boost; a change whose ad or account left the workspace fails;
/// otherwise the change the platform makes.
pub fn plan_step(f: &ChangeFacts, now: Timestamp) -> StepPlan {
    let (Some(kind), Some(ProposalStatus::Approved)) = (f.kind, f.status) else {
        return StepPlan::Done;
    };
    if kind == ProposalKind::Boost && started(f.result.as_ref()) {
        return StepPlan::Fail(failure(format!(
            "an earlier attempt was cut short after it reached the ad platform: look in the ad \
             account for a paused campaign named \"{}\" before proposing the boost again",
            boost_name(f.id)
        )));
    }
    let Some(account) = f.account() else {
        return StepPlan::Fail(failure(match &f.ad_id {
            Some(ad) => ApprovalRefusal::AdGone(ad.clone()).to_string(),
            None => "the ad account is no longer the workspace's".to_owned(),
        }));
    };
    let ad_id = f.ad_id.clone().unwrap_or_default();
    let text = |s: &Option<String>| s.clone().unwrap_or_default();
    let change = match kind {
        ProposalKind::Pause => Execution::Pause { ad_id },
        ProposalKind::Resume => Execution::Resume {
            ad_id,
            adset_id: text(&f.adset_id),
            campaign_id: text(&f.campaign_id),
        },
        ProposalKind::Budget => Execution::Budget {
            adset_id: text(&f.adset_id),
            budget_type: f.ad_budget_type.unwrap_or(BudgetType::Daily),
            amount: f.amount.unwrap_or_default(),
        },
        ProposalKind::Boost => {
            let (starts_at, ends_at) = period(f, now);
            Execution::Boost {
                platform: text(&f.platform),
                story_id: text(&f.platform_post_id),
                instagram_user_id: f.instagram_user_id.clone(),
                name: boost_name(f.id),
                budget_type: f.proposed_budget_type.unwrap_or(BudgetType::Daily),
                amount: f.amount.unwrap_or_default(),
                starts_at,
                ends_at,
                countries: if f.countries.is_empty() {
                    f.market.iter().cloned().collect()
                } else {
                    f.countries.clone()
                },
            }
        }
    };
    StepPlan::Execute {
        account,
        change: Box::new(change),
        started: json!({"started_at": fleetdesk_kernel::time::format_utc(now)}),
    }
}

/// Whether a proposal's stored result records an attempt's start (the `started` of
/// [`StepPlan::Execute`]).
pub fn started(result: Option<&Value>) -> bool {
    result.is_some_and(|r| r.get("started_at").is_some())
}

/// A proposal as it settled (executed or failed), as the adapter's update answered it.
#[derive(Debug, Clone, PartialEq)]
pub struct Settled {
    pub id: Uuid,
    pub workspace_id: Uuid,
    /// The agent that proposed it.
    pub agent_id: Uuid,
    pub kind: String,
    pub ad_id: Option<String>,
    pub post_id: Option<Uuid>,
    pub status: ProposalStatus,
    /// The result stored: a failure's `error`, or what the platform answered.
    pub result: Value,
}

impl Settled {
    /// `ad_change.executed` or `ad_change.failed` (with the failure's reason), told to the
    /// agent that proposed the change, about the proposal; nothing for any other status.
    pub fn event(&self) -> Option<NewEvent> {
        let change = AdChangeSettled {
            kind: self.kind.clone(),
            ad_id: self.ad_id.clone(),
            post_id: self.post_id,
            status: self.status.as_str().to_owned(),
            error: None,
        };
        let body = match self.status {
            ProposalStatus::Executed => EventBody::AdChangeExecuted(change),
            ProposalStatus::Failed => EventBody::AdChangeFailed(AdChangeSettled {
                error: Some(match self.result.get("error").and_then(Value::as_str) {
                    Some(error) => error.to_owned(),
                    None => "the change failed".to_owned(),
                }),
                ..change
            }),
            _ => return None,
        };
        Some(NewEvent {
            workspace_id: self.workspace_id,
            agent_id: Some(self.agent_id),
            object_id: self.id,
            body,
        })
    }
}

/// What the kind column of an ad the service made says.
pub const BOOST_KIND: &str = "boost";

/// A boost the platform made, as the service lists it until the next sync: its campaign and
/// ad, paused, marked as the service's.
#[derive(Debug, Clone, PartialEq)]
pub struct MadeBoost {
    pub campaign_id: String,
    pub adset_id: String,
    pub ad_id: String,
    pub ad_account_id: String,
    pub name: String,
    pub kind: &'static str,
    pub status: AdStatus,
    pub budget_type: BudgetType,
    pub budget: Cents,
    pub starts_at: Timestamp,
    pub ends_at: Timestamp,
    pub story_id: Option<String>,
    pub post_id: Option<Uuid>,
}

/// The boost the platform made for the proposal.
pub fn made_boost(f: &ChangeFacts, created: &CreatedAd, now: Timestamp) -> MadeBoost {
    let (starts_at, ends_at) = period(f, now);
    MadeBoost {
        campaign_id: created.campaign_id.clone(),
        adset_id: created.adset_id.clone(),
        ad_id: created.ad_id.clone(),
        ad_account_id: f.ad_account_id.clone().unwrap_or_default(),
        name: boost_name(f.id),
        kind: BOOST_KIND,
        status: AdStatus::Paused,
        budget_type: f.proposed_budget_type.unwrap_or(BudgetType::Daily),
        budget: f.amount.unwrap_or_default(),
        starts_at,
        ends_at,
        story_id: f.platform_post_id.clone(),
        post_id: f.post_id,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_settled_change_tells_the_agent_that_proposed_it() {
        let settled = Settled {
            id: Uuid::from_u128(1),
            workspace_id: Uuid::from_u128(2),
            agent_id: Uuid::from_u128(3),
            kind: "pause".into(),
            ad_id: Some("120".into()),
            post_id: None,
            status: ProposalStatus::Executed,
            result: json!({"success": true}),
        };
        let event = settled.event().unwrap();
        assert_eq!(
            (event.agent_id, event.object_id),
            (Some(settled.agent_id), settled.id)
        );
        assert_eq!(event.workspace_id, settled.workspace_id);
        let EventBody::AdChangeExecuted(told) = &event.body else {
            panic!("{:?}", event.body)
        };
        assert_eq!(
            (told.status.as_str(), told.error.as_deref()),
            ("executed", None)
        );
        assert_eq!(told.ad_id.as_deref(), Some("120"));

        let failed = Settled {
            status: ProposalStatus::Failed,
            result: failure("the ad platform refused: budget too low"),
            ..settled.clone()
        };
        let EventBody::AdChangeFailed(told) = failed.event().unwrap().body else {
            panic!("not failed")
        };
        assert_eq!(
            told.error.as_deref(),
            Some("the ad platform refused: budget too low")
        );
        assert_eq!(told.status, "failed");
        let bare = Settled {
            result: json!({}),
            ..failed
        };
        let EventBody::AdChangeFailed(told) = bare.event().unwrap().body else {
            panic!("not failed")
        };
        assert_eq!(told.error.as_deref(), Some("the change failed"));
        for status in [ProposalStatus::Approved, ProposalStatus::Waiting] {
            assert_eq!(
                Settled {
                    status,
                    ..settled.clone()
                }
                .event(),
                None
            );
        }
    }

    fn at(t: &str) -> Timestamp {
        t.parse().unwrap()
    }

    fn ad(status: AdStatus, budget: i64) -> SyncedAd {
        SyncedAd {
            ad: KnownAd {
                status,
                budget_type: BudgetType::Daily,
                budget: Cents(budget),
            },
            currency: "TWD".into(),
        }
    }

    fn proposal(change: Change) -> NewProposal {
        NewProposal {
            change,
            reason: "ctr fell".into(),
            now: at("2026-11-10T02:00:00Z"),
        }
    }

    fn pause() -> Change {
        Change::Pause { ad_id: "a1".into() }
    }

    fn facts(target: TargetFacts) -> ProposalFacts {
        ProposalFacts {
            ads_enabled: true,
            target,
            waiting: None,
        }
    }

    #[test]
    fn a_proposal_is_checked_switch_first_then_target_then_duplicates() {
        let id = Uuid::from_u128(7);
        let p = proposal(pause());
        let mut f = facts(TargetFacts::Ad(None));
        f.ads_enabled = false;
        f.waiting = Some(Uuid::from_u128(9));
        assert!(matches!(
            plan_proposal(&p, f.clone(), id),
            Err(AdsRefusal::AdsDisabled)
        ));
        f.ads_enabled = true;
        assert!(matches!(
            plan_proposal(&p, f.clone(), id),
            Err(AdsRefusal::NotFoundField { field, .. }) if field == "ad_id"
        ));
        f.target = TargetFacts::Ad(Some(ad(AdStatus::Paused, 100)));
        assert_eq!(
            plan_proposal(&p, f.clone(), id),
            Err(AdsRefusal::Rejected(AdsRejection::AlreadyPaused))
        );
        f.target = TargetFacts::Ad(Some(ad(AdStatus::Running, 100)));
        let Err(refused) = plan_proposal(&p, f.clone(), id) else {
            panic!("a waiting duplicate is refused");
        };
        let m = refused.to_string();
        assert!(m.contains("pause proposal for the same ad"), "{m}");
        assert!(m.contains(&Uuid::from_u128(9).to_string()), "{m}");
        f.waiting = None;
        let plan = plan_proposal(&p, f, id).unwrap();
        assert_eq!(plan.target, "ad:a1");
        assert_eq!(plan.decision.title, "Pause ad a1");
        assert_eq!(plan.decision.detail["currency"], "TWD");
        assert_eq!(plan.decision.detail["proposal_id"], id.to_string());
        assert_eq!(plan.columns.ad_id.as_deref(), Some("a1"));
    }

    #[test]
    fn a_boost_needs_a_published_post_and_an_account_of_the_workspace() {
        let post_id = Uuid::from_u128(3);
        let p = proposal(Change::Boost {
            post_id,
            ad_account_id: "act_1".into(),
            budget_type: BudgetType::Daily,
            amount: Cents(50_000),
            days: 3,
            countries: vec![],
        });
        let published = BoostPost {
            platform: "instagram".into(),
            status: "published".into(),
            platform_post_id: Some("178".into()),
        };
        let refused = |post, account| {
            plan_proposal(&p, facts(TargetFacts::Boost { post, account }), Uuid::nil())
        };
        assert!(matches!(
            refused(None, None),
            Err(AdsRefusal::NotFoundField { field, .. }) if field == "post_id"
        ));
        assert!(matches!(
            refused(Some(published.clone()), None),
            Err(AdsRefusal::NotFoundField { field, .. }) if field == "ad_account_id"
        ));
        let no_instagram = BoostAccount {
            currency: "TWD".into(),
            instagram_user_id: None,
        };
        assert!(matches!(
            refused(Some(published.clone()), Some(no_instagram.clone())),
            Err(AdsRefusal::RejectedField { field, .. }) if field == "ad_account_id"
        ));
        let account = BoostAccount {
            instagram_user_id: Some("1784".into()),
            ..no_instagram
        };
        let plan = refused(Some(published), Some(account)).unwrap();
        assert_eq!(plan.target, format!("post:{post_id}"));
        assert_eq!(plan.columns.days, Some(3));
        assert_eq!(plan.columns.budget_type, Some(BudgetType::Daily));
        assert_eq!(plan.decision.detail["amount"], 500.0);
        assert_eq!(
            plan.decision.title,
            "Boost a post: 500.00 TWD daily for 3 days"
        );
    }

    fn locked(kind: ProposalKind) -> LockedProposal {
        LockedProposal {
            id: Uuid::from_u128(1),
            kind,
            status: ProposalStatus::Waiting,
            ad_id: Some("a1".into()),
            amount: Some(Cents(20_000)),
            created_at: at("2026-11-10T02:00:00Z"),
        }
    }

    fn cap(spent: i64) -> Option<CapFacts> {
        Some(CapFacts {
            limit: Cents(1_000_000),
            currency: "TWD".into(),
            spent: Cents(spent),
            running: vec![],
        })
    }

    #[test]
    fn an_approval_reads_the_ad_of_a_resume_or_a_budget_only() {
        assert_eq!(locked(ProposalKind::Pause).ad_to_check(), None);
        assert_eq!(locked(ProposalKind::Boost).ad_to_check(), None);
        assert_eq!(locked(ProposalKind::Budget).ad_to_check(), Some("a1"));
        assert_eq!(locked(ProposalKind::Resume).ad_to_check(), Some("a1"));
    }

    #[test]
    fn an_approval_is_refused_when_settled_expired_gone_or_over_the_cap() {
        let now = at("2026-11-20T02:00:00Z");
        let mut p = locked(ProposalKind::Budget);
        p.status = ProposalStatus::Refused;
        let refused = plan_approval(&p, None, cap(0), now).unwrap_err();
        assert_eq!(refused, ApprovalRefusal::Settled(ProposalStatus::Refused));
        assert_eq!(refused.to_string(), "the proposal is refused");
        p.status = ProposalStatus::Waiting;
        assert_eq!(
            plan_approval(&p, None, cap(0), now),
            Err(ApprovalRefusal::Expired)
        );
        let now = at("2026-11-12T02:00:00Z");
        let gone = plan_approval(&p, None, cap(0), now).unwrap_err();
        assert_eq!(
            gone.to_string(),
            "ad a1 is no longer among the synced ads of the workspace"
        );
        let mut usd = ad(AdStatus::Running, 10_000);
        usd.currency = "USD".into();
        assert!(
            plan_approval(&p, Some(usd.clone()), cap(0), now)
                .unwrap_err()
                .to_string()
                .contains("cannot be compared")
        );
        assert!(
            plan_approval(&p, Some(usd), None, now).is_ok(),
            "no cap, nothing to compare"
        );
        // 100.00 a day raised to 200.00 on the 12th (Taipei): 19 days left add 1,900.00.
        let running = Some(ad(AdStatus::Running, 10_000));
        let over = plan_approval(&p, running.clone(), cap(900_000), now);
        assert!(
            over.unwrap_err()
                .to_string()
                .starts_with("over the monthly cap")
        );
        let approved = plan_approval(&p, running, cap(0), now).unwrap();
        assert_eq!(approved.status, ProposalStatus::Approved);
        assert_eq!(approved.job.kind, CHANGE_JOB);
        assert_eq!(approved.job.key, p.id.to_string());
        assert_eq!(approved.job.run_at, now);
        let job = Job {
            id: Uuid::nil(),
            kind: approved.job.kind,
            key: approved.job.key,
            payload: approved.job.payload,
            attempt: 1,
        };
        assert_eq!(
            proposal_of(&job).unwrap(),
            p.id,
            "the job names its proposal"
        );
    }

    #[test]
    fn a_pause_is_approved_without_reading_the_ad() {
        let p = locked(ProposalKind::Pause);
        let now = at("2026-11-12T02:00:00Z");
        assert!(plan_approval(&p, None, None, now).is_ok());
    }

    fn approved_boost() -> ChangeFacts {
        ChangeFacts {
            id: Uuid::from_u128(5),
            kind: Some(ProposalKind::Boost),
            status: Some(ProposalStatus::Approved),
            amount: Some(Cents(30_000)),
            days: Some(4),
            decided_at: Some(at("2026-11-12T02:00:00Z")),
            ad_account_id: Some("act_1".into()),
            currency: Some("TWD".into()),
            token_env: Some("META_TOKEN".into()),
            platform: Some("facebook".into()),
            platform_post_id: Some("123_456".into()),
            market: Some("TW".into()),
            post_id: Some(Uuid::from_u128(8)),
            ..ChangeFacts::default()
        }
    }

    #[test]
    fn a_step_executes_an_approved_change_and_fails_a_boost_that_started_before() {
        let now = at("2026-11-12T03:00:00Z");
        let mut f = approved_boost();
        let StepPlan::Execute {
            change,
            account,
            started,
        } = plan_step(&f, now)
        else {
            panic!("an approved boost executes");
        };
        assert_eq!(
            account,
            AdAccountRef {
                id: "act_1".into(),
                currency: "TWD".into(),
                token_env: "META_TOKEN".into(),
            }
        );
        assert!(started["started_at"].is_string());
        assert!(
            super::started(Some(&started)),
            "the start it records is read back"
        );
        assert!(!super::started(Some(&json!({"id": "1"}))));
        assert!(!super::started(None));
        let Execution::Boost {
            countries,
            starts_at,
            ends_at,
            name,
            budget_type,
            ..
        } = *change
        else {
            panic!("a boost");
        };
        assert_eq!(countries, vec!["TW".to_owned()], "the post's market");
        assert_eq!(starts_at, at("2026-11-12T02:00:00Z"), "from the approval");
        assert_eq!(ends_at, at("2026-11-16T02:00:00Z"));
        assert_eq!(name, "fleetdesk boost 00000000-0000-0000-0000-000000000005");
        assert_eq!(budget_type, BudgetType::Daily);
        f.result = Some(started);
        let StepPlan::Fail(result) = plan_step(&f, now) else {
            panic!("a boost that started fails");
        };
        assert!(
            result["error"]
                .as_str()
                .unwrap()
                .contains("paused campaign named")
        );
        f.result = Some(json!({"id": "1"}));
        f.currency = None;
        f.token_env = None;
        assert_eq!(f.account(), None, "the account left the workspace");
        assert_eq!(
            plan_step(&f, now),
            StepPlan::Fail(failure("the ad account is no longer the workspace's"))
        );
        f.status = Some(ProposalStatus::Executed);
        assert_eq!(plan_step(&f, now), StepPlan::Done);
        assert_eq!(plan_step(&ChangeFacts::default(), now), StepPlan::Done);
    }

    #[test]
    fn a_made_boost_is_listed_paused_as_the_service_s() {
        let f = approved_boost();
        let created = CreatedAd {
            campaign_id: "c1".into(),
            adset_id: "s1".into(),
            ad_id: "ad1".into(),
        };
        let made = made_boost(&f, &created, at("2026-11-12T03:00:00Z"));
        assert_eq!(made.status, AdStatus::Paused);
        assert_eq!(made.kind, BOOST_KIND);
        assert_eq!(made.ad_account_id, "act_1");
        assert_eq!(made.budget, Cents(30_000));
        assert_eq!(made.name, boost_name(f.id));
        assert_eq!(made.story_id.as_deref(), Some("123_456"));
    }
}
