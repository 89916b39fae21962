//! The inventory moves as plans: the adapter loads the post (locked) and, for an unstock, what
//! the market day already holds; these functions decide whether the move happens, what it
//! writes, what the post's history records and what the call answers; the adapter writes it in
//! the same transaction.

use crate::{
    Confirmation, Day, InventoryRefusal, MarketDay, Moved, OnBehalfRole, check_delete,
    check_unstock, confirm_unscheduled, market_day, movable, stock, unstock_status,
};
use fleetdesk_accounts::{AccountState, AccountSubject};
use fleetdesk_kernel::events::{EventBody, NewEvent};
use fleetdesk_kernel::{Platform, TimeInput};
use fleetdesk_posts::post::{PostStatus, PostSubject};
use jiff::Timestamp;
use jiff::tz::TimeZone;
use serde_json::{Value, json};
use uuid::Uuid;

/// A post of the caller's workspace with its account, as loaded (locked) for a move.
#[derive(Debug, Clone)]
pub struct PostFact {
    pub id: Uuid,
    pub status: PostStatus,
    pub workspace_id: Uuid,
    pub slot_id: Uuid,
    /// The account's code and platform.
    pub code: String,
    pub platform: Platform,
    /// The agent its persona is assigned to: told of its moves.
    pub persona_agent: Option<Uuid>,
    pub planned_at: Option<Timestamp>,
    /// Deleted from inventory on a person's behalf.
    pub discarded: bool,
    pub awaiting_rewrite: bool,
    /// The status it was stocked from.
    pub from_status: Option<PostStatus>,
    pub unschedule_pending: bool,
    /// The agent schedules and publishes the account's posts in its own tool
    /// (`Publishing::by_agent`).
    pub agent_publishes: bool,
    /// The account's market zone.
    pub zone: TimeZone,
    pub daily_target: i32,
    /// The live account's state.
    pub state: Option<AccountState>,
    /// Under one of the caller's personas.
    pub mine: bool,
}

/// What a move writes on the post.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PostWrite {
    /// Into stock, remembering where it was.
    Stock {
        status: PostStatus,
        reason: Option<String>,
        unschedule_pending: bool,
    },
    /// Out of stock, to `status`, planned at `planned_at`.
    Unstock {
        status: PostStatus,
        planned_at: Timestamp,
    },
    /// The agent removed it from its tool.
    ClearUnschedule,
    /// Deleted from inventory: `status`, marked discarded.
    Discard { status: PostStatus },
}

/// Who a history entry is by.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum By {
    /// The calling agent.
    Agent,
    /// A person an agent relayed for, by name.
    Person(String),
}

/// The post's history entry for a move.
#[derive(Debug, Clone, PartialEq)]
pub struct Entry {
    pub action: &'static str,
    pub reason: Option<String>,
    pub detail: Value,
    pub by: By,
}

/// A move: nothing to write (`write: None`, answered unchanged), or what to write and record.
#[derive(Debug, Clone, PartialEq)]
pub struct MovePlan {
    pub post_id: Uuid,
    pub write: Option<(PostWrite, Entry)>,
    pub moved: Moved,
    /// What the move tells: `post.moved` when the post's status changed.
    pub event: Option<NewEvent>,
}

impl PostFact {
    /// The event of this post moved to `to` with `note`, told to the agent of its persona.
    fn moved_event(&self, to: PostStatus, note: Option<&str>) -> NewEvent {
        let subject = PostSubject {
            workspace_id: self.workspace_id,
            agent_id: self.persona_agent,
            id: self.id,
            code: &self.code,
            platform: self.platform,
        };
        subject.event(EventBody::PostMoved, (Some(self.status), to), note)
    }

    fn moved(&self, status: PostStatus, unchanged: bool) -> Moved {
        Moved {
            id: self.id,
            status,
            planned_at: self.planned_at,
            unchanged,
            unschedule_pending: self.unschedule_pending,
        }
    }

    fn unchanged(&self, status: PostStatus) -> MovePlan {
        MovePlan {
            post_id: self.id,
            write: None,
            moved: self.moved(status, true),
            event: None,
        }
    }
}

fn own(post: Option<PostFact>) -> Result<PostFact, InventoryRefusal> {
    movable(post, |p| p.mine).map_err(InventoryRefusal::Lookup)
}

/// `POST /posts/{id}/stock`: into stock ([`stock`] decides), unchanged when it is.
pub fn plan_stock(
    post: Option<PostFact>,
    reason: Option<&str>,
) -> Result<MovePlan, InventoryRefusal> {
    let post = own(post)?;
    let stocking = match stock(post.status, post.discarded, post.agent_publishes) {
        Ok(None) => return Ok(post.unchanged(PostStatus::Stocked)),
        Ok(Some(s)) => s,
        Err(e) => return Err(InventoryRefusal::Stock(e)),
    };
    let mut moved = post.moved(PostStatus::Stocked, false);
    moved.unschedule_pending |= stocking.unschedule_pending;
    Ok(MovePlan {
        post_id: post.id,
        write: Some((
            PostWrite::Stock {
                status: PostStatus::Stocked,
                reason: reason.map(str::to_owned),
                unschedule_pending: stocking.unschedule_pending,
            },
            Entry {
                action: "stocked",
                reason: reason.map(str::to_owned),
                detail: json!({"from": post.status,
                               "unschedule_pending": stocking.unschedule_pending}),
                by: By::Agent,
            },
        )),
        moved,
        event: Some(post.moved_event(PostStatus::Stocked, reason)),
    })
}

/// The first half of `POST /posts/{id}/unstock`: the post, the planned time read in the
/// account's zone, and the market date it falls on (whose committed posts the adapter counts
/// next).
pub fn unstock_day(
    post: Option<PostFact>,
    planned: TimeInput,
) -> Result<Result<(PostFact, Timestamp, MarketDay), InventoryRefusal>, jiff::Error> {
    let post = match own(post) {
        Ok(p) => p,
        Err(r) => return Ok(Err(r)),
    };
    let planned_at = match planned.resolve(&post.zone) {
        Ok(t) => t,
        Err(e) => return Ok(Err(InventoryRefusal::PlannedAt(e))),
    };
    let market = market_day(planned_at, &post.zone)?;
    Ok(Ok((post, planned_at, market)))
}

/// The second half: out of stock when the checks pass ([`check_unstock`]), back to review or
/// to the redo list ([`unstock_status`]).
pub fn plan_unstock(
    post: PostFact,
    planned_at: Timestamp,
    market: &MarketDay,
    committed: i64,
    now: Timestamp,
    extra: bool,
) -> Result<MovePlan, InventoryRefusal> {
    let day = Day::of(committed, post.daily_target);
    check_unstock(post.status, post.state, planned_at, now, day, extra)
        .map_err(InventoryRefusal::Unstock)?;
    let to = unstock_status(post.awaiting_rewrite, post.from_status);
    Ok(MovePlan {
        post_id: post.id,
        write: Some((
            PostWrite::Unstock {
                status: to,
                planned_at,
            },
            Entry {
                action: "unstocked",
                reason: None,
                detail: json!({"to": to, "planned_at": planned_at.to_string(), "extra": extra,
                               "date": market.date.to_string()}),
                by: By::Agent,
            },
        )),
        moved: Moved {
            id: post.id,
            status: to,
            planned_at: Some(planned_at),
            unchanged: false,
            unschedule_pending: post.unschedule_pending,
        },
        event: Some(post.moved_event(to, None)),
    })
}

/// `POST /posts/{id}/unscheduled`: the agent removed the stocked post from its tool.
pub fn plan_confirm_unscheduled(post: Option<PostFact>) -> Result<MovePlan, InventoryRefusal> {
    let post = own(post)?;
    match confirm_unscheduled(post.status, post.unschedule_pending)? {
        Confirmation::Unchanged => Ok(post.unchanged(post.status)),
        Confirmation::Clear => {
            let mut moved = post.moved(post.status, false);
            moved.unschedule_pending = false;
            Ok(MovePlan {
                post_id: post.id,
                write: Some((
                    PostWrite::ClearUnschedule,
                    Entry {
                        action: "unscheduled",
                        reason: None,
                        detail: json!({}),
                        by: By::Agent,
                    },
                )),
                moved,
                // Still stocked: nothing to tell.
                event: None,
            })
        }
    }
}

/// A relayed delete of a stocked post: cancelled and discarded, recorded as the person's.
pub fn plan_delete(
    post: Option<PostFact>,
    role: OnBehalfRole,
    person: &str,
    reason: Option<&str>,
    relay: &Value,
) -> Result<MovePlan, InventoryRefusal> {
    let post = own(post)?;
    check_delete(role, post.status).map_err(InventoryRefusal::Delete)?;
    Ok(MovePlan {
        post_id: post.id,
        write: Some((
            PostWrite::Discard {
                status: PostStatus::Cancelled,
            },
            Entry {
                action: "deleted from inventory",
                reason: reason.map(str::to_owned),
                detail: json!({ "relayed": relay }),
                by: By::Person(person.to_owned()),
            },
        )),
        moved: post.moved(PostStatus::Cancelled, false),
        event: Some(post.moved_event(PostStatus::Cancelled, reason)),
    })
}

/// A post an account leaving rotation moved to inventory, as the move returns it: the status
/// it left and the agent its persona is assigned to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LeftRotation {
    pub id: Uuid,
    pub from: PostStatus,
    pub persona_agent: Option<Uuid>,
}

/// What `account` leaving rotation tells of the posts it moved to inventory: a `post.moved`
/// to stocked each, in the order given, with the state report's `reason`, told to the agent of
/// each post's persona.
pub fn rotation_stocked(
    account: &AccountSubject,
    posts: &[LeftRotation],
    reason: Option<&str>,
) -> Vec<NewEvent> {
    posts
        .iter()
        .map(|p| {
            let subject = PostSubject {
                workspace_id: account.workspace_id,
                agent_id: p.persona_agent,
                id: p.id,
                code: &account.code,
                platform: account.platform,
            };
            subject.event(
                EventBody::PostMoved,
                (Some(p.from), PostStatus::Stocked),
                reason,
            )
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{DeleteRefusal, Lookup, StockRefusal, UnstockRefusal};
    use fleetdesk_kernel::events::PostChange;

    fn post(status: PostStatus) -> PostFact {
        PostFact {
            id: Uuid::from_u128(1),
            status,
            workspace_id: Uuid::from_u128(5),
            slot_id: Uuid::from_u128(2),
            code: "TW-T001".into(),
            platform: Platform::Threads,
            persona_agent: Some(Uuid::from_u128(6)),
            planned_at: None,
            discarded: false,
            awaiting_rewrite: false,
            from_status: Some(PostStatus::Approved),
            unschedule_pending: false,
            agent_publishes: true,
            zone: TimeZone::get("Asia/Taipei").unwrap(),
            daily_target: 2,
            state: Some(AccountState::Active),
            mine: true,
        }
    }

    #[test]
    fn stocking_records_where_the_post_was_and_a_stocked_post_is_unchanged() {
        let plan = plan_stock(Some(post(PostStatus::Scheduled)), Some("paused")).unwrap();
        let (write, entry) = plan.write.expect("a write");
        assert!(matches!(
            write,
            PostWrite::Stock {
                status: PostStatus::Stocked,
                unschedule_pending: true,
                ..
            }
        ));
        assert_eq!(entry.action, "stocked");
        assert_eq!(entry.detail["from"], "scheduled");
        assert!(plan.moved.unschedule_pending);
        let same = plan_stock(Some(post(PostStatus::Stocked)), None).unwrap();
        assert!(same.write.is_none() && same.moved.unchanged);
        assert_eq!(
            plan_stock(Some(post(PostStatus::Published)), None),
            Err(InventoryRefusal::Stock(StockRefusal::Finished(
                PostStatus::Published
            )))
        );
        let mut theirs = post(PostStatus::Draft);
        theirs.mine = false;
        assert_eq!(
            plan_stock(Some(theirs), None),
            Err(InventoryRefusal::Lookup(Lookup::NotFound))
        );
    }

    fn time(raw: &str) -> TimeInput {
        raw.parse().unwrap()
    }

    #[test]
    fn an_unstock_reads_the_time_in_the_market_and_checks_the_day() {
        let now: Timestamp = "2026-11-29T00:00:00Z".parse().unwrap();
        let (p, at, market) =
            unstock_day(Some(post(PostStatus::Stocked)), time("2026-12-01 09:00"))
                .unwrap()
                .unwrap();
        assert_eq!(at, "2026-12-01T01:00:00Z".parse::<Timestamp>().unwrap());
        assert_eq!(market.date.to_string(), "2026-12-01");
        let plan = plan_unstock(p.clone(), at, &market, 1, now, false).unwrap();
        assert_eq!(plan.moved.status, PostStatus::InternalReview);
        let (_, entry) = plan.write.unwrap();
        assert_eq!(entry.detail["date"], "2026-12-01");
        assert!(matches!(
            plan_unstock(p.clone(), at, &market, 2, now, false),
            Err(InventoryRefusal::Unstock(
                UnstockRefusal::AlreadyCovered { .. }
            ))
        ));
        assert!(plan_unstock(p, at, &market, 2, now, true).is_ok());
        // 02:30 does not exist in New York on the day its clocks go forward.
        let mut new_york = post(PostStatus::Stocked);
        new_york.zone = jiff::tz::TimeZone::get("America/New_York").unwrap();
        assert!(matches!(
            unstock_day(Some(new_york), time("2026-03-08 02:30")).unwrap(),
            Err(InventoryRefusal::PlannedAt(_))
        ));
    }

    #[test]
    fn a_confirmation_clears_the_wait_and_a_delete_is_the_persons() {
        let mut waiting = post(PostStatus::Stocked);
        waiting.unschedule_pending = true;
        let plan = plan_confirm_unscheduled(Some(waiting)).unwrap();
        assert_eq!(plan.write.map(|w| w.0), Some(PostWrite::ClearUnschedule));
        assert!(!plan.moved.unschedule_pending);
        let plan = plan_delete(
            Some(post(PostStatus::Stocked)),
            OnBehalfRole::Agency,
            "Ann",
            None,
            &json!({}),
        )
        .unwrap();
        let (write, entry) = plan.write.unwrap();
        assert_eq!(
            write,
            PostWrite::Discard {
                status: PostStatus::Cancelled
            }
        );
        assert_eq!(entry.by, By::Person("Ann".into()));
        assert_eq!(
            plan_delete(
                Some(post(PostStatus::Stocked)),
                OnBehalfRole::Client,
                "C",
                None,
                &json!({})
            ),
            Err(InventoryRefusal::Delete(DeleteRefusal::Client))
        );
    }

    /// The move's event, checked to be a `post.moved` of post 1 in workspace 5 told to the
    /// persona's agent 6: its body.
    fn moved(plan: MovePlan) -> PostChange {
        let event = plan.event.expect("a move that changes the status tells");
        assert_eq!(
            (event.workspace_id, event.agent_id, event.object_id),
            (
                Uuid::from_u128(5),
                Some(Uuid::from_u128(6)),
                Uuid::from_u128(1)
            )
        );
        match event.body {
            EventBody::PostMoved(change) => change,
            other => panic!("{other:?}"),
        }
    }

    fn change(from: &str, status: &str, note: Option<&str>) -> PostChange {
        PostChange {
            code: Some("TW-T001".into()),
            platform: Some(Platform::Threads),
            from: Some(from.into()),
            status: status.into(),
            note: note.map(str::to_owned),
        }
    }

    #[test]
    fn stock_unstock_and_a_delete_tell_post_moved() {
        let stocked = plan_stock(Some(post(PostStatus::Approved)), Some("no ideas")).unwrap();
        assert_eq!(
            moved(stocked),
            change("approved", "stocked", Some("no ideas"))
        );

        let now: Timestamp = "2026-11-29T00:00:00Z".parse().unwrap();
        let planned: TimeInput = "2026-12-01 09:00".parse().unwrap();
        let (p, at, market) = unstock_day(Some(post(PostStatus::Stocked)), planned)
            .unwrap()
            .unwrap();
        let unstocked = plan_unstock(p, at, &market, 0, now, false).unwrap();
        assert_eq!(moved(unstocked), change("stocked", "internal_review", None));

        let relay = json!({});
        let deleted = plan_delete(
            Some(post(PostStatus::Stocked)),
            crate::OnBehalfRole::Agency,
            "Ann",
            Some("off brand"),
            &relay,
        )
        .unwrap();
        assert_eq!(
            moved(deleted),
            change("stocked", "cancelled", Some("off brand"))
        );
    }

    #[test]
    fn a_move_that_keeps_the_status_tells_nothing() {
        let same = plan_stock(Some(post(PostStatus::Stocked)), None).unwrap();
        assert_eq!(same.event, None);
        let mut waiting = post(PostStatus::Stocked);
        waiting.unschedule_pending = true;
        let cleared = plan_confirm_unscheduled(Some(waiting)).unwrap();
        assert!(cleared.write.is_some());
        assert_eq!(cleared.event, None);
    }

    #[test]
    fn an_account_leaving_rotation_tells_each_post_it_stocked_to_its_persona_s_agent() {
        let account = AccountSubject {
            workspace_id: Uuid::from_u128(5),
            slot_id: Uuid::from_u128(2),
            code: "TW-T001".into(),
            platform: Platform::Threads,
            persona_agent: Some(Uuid::from_u128(6)),
        };
        let left = [
            LeftRotation {
                id: Uuid::from_u128(1),
                from: PostStatus::Approved,
                persona_agent: Some(Uuid::from_u128(6)),
            },
            LeftRotation {
                id: Uuid::from_u128(3),
                from: PostStatus::Scheduled,
                persona_agent: None,
            },
        ];
        let events = rotation_stocked(&account, &left, Some("flagged"));
        let told: Vec<_> = events
            .iter()
            .map(|e| (e.object_id, e.agent_id, e.workspace_id, e.body.clone()))
            .collect();
        assert_eq!(
            told,
            [
                (
                    Uuid::from_u128(1),
                    Some(Uuid::from_u128(6)),
                    Uuid::from_u128(5),
                    EventBody::PostMoved(change("approved", "stocked", Some("flagged")))
                ),
                (
                    Uuid::from_u128(3),
                    None,
                    Uuid::from_u128(5),
                    EventBody::PostMoved(change("scheduled", "stocked", Some("flagged")))
                ),
            ]
        );
        assert!(rotation_stocked(&account, &[], None).is_empty());
    }
}
