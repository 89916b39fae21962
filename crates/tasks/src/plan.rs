//! Opening and moving a card as plans over loaded facts: where a new card goes and who works it
//! ([`place`], [`assignee`], [`joins`], [`plan_open`]), and what a move writes on the card and
//! on a follow-up's decision ([`plan_move`]). The adapter loads the facts, calls the plan and
//! writes it in one transaction.

use fleetdesk_accounts::ports::LookupError;
use fleetdesk_kernel::decision::DecidedBy;
use fleetdesk_kernel::events::{EventBody, NewEvent, TaskChange};
use jiff::Timestamp;
use serde_json::{Value, json};
use uuid::Uuid;

use crate::ports::{Actor, MoveRequest, OpenRequest, Opener, TargetRef};
use crate::rules::{Card, DEFAULT_ZONE, Move, Plan, TaskRefusal, Who, plan, read_due_at};
use crate::{TargetType, TaskKind, TaskStatus};

// ---------------------------------------------------------------------------------------------
// Opening

/// The account a slot or persona target's code names, among those the opener may see.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AccountFact {
    pub slot_id: Uuid,
    pub code: String,
    pub persona_id: Uuid,
    pub workspace_id: Uuid,
    pub organization_id: Uuid,
    pub zone: String,
}

/// A post's or a decision's owner: its workspace, persona (not retired) and zone.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OwnerFact {
    pub organization_id: Uuid,
    pub workspace_id: Uuid,
    pub persona_id: Option<Uuid>,
    /// The agent the persona is assigned to.
    pub persona_agent: Option<Uuid>,
    pub zone: Option<String>,
}

/// What the target names, as loaded for the opener.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TargetFacts {
    /// The account the code names, chosen among the opener's ([`fleetdesk_accounts::choose`]);
    /// `several_organizations` when the code named accounts of more than one organization.
    Account {
        chosen: Result<AccountFact, LookupError>,
        several_organizations: bool,
    },
    /// A post's or a decision's owner; `None` when there is no such post or decision.
    Owner(Option<OwnerFact>),
}

/// Where a new card goes: its organization, workspace and persona, what its target stores,
/// and the zone its due_at is read in.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Placed {
    pub organization_id: Uuid,
    pub workspace_id: Uuid,
    pub persona_id: Uuid,
    pub target_code: Option<String>,
    pub target_id: Uuid,
    pub zone: String,
}

/// How a refusal names the target.
fn target_name(t: TargetType) -> &'static str {
    match t {
        TargetType::Slot => "account",
        TargetType::Persona => "persona",
        TargetType::Post => "post",
        TargetType::Issue => "decision",
    }
}

/// The target placed for the opener: an agent sees its workspace and its own personas
/// (another agent's: 403), a person the organization. A platform admin outside any
/// organization whose code names accounts in several is refused, never given one at random.
pub fn place(
    opener: &Opener,
    target: &TargetRef,
    facts: TargetFacts,
) -> Result<Placed, TaskRefusal> {
    let what = target_name(target.kind());
    let (row, target_id) = match facts {
        TargetFacts::Account {
            chosen,
            several_organizations,
        } => {
            if several_organizations
                && matches!(
                    opener,
                    Opener::Person {
                        organization: None,
                        ..
                    }
                )
            {
                return Err(TaskRefusal::TargetInSeveralOrganizations);
            }
            let account = chosen.map_err(|e| match e {
                LookupError::NotFound => TaskRefusal::TargetNotFound(what),
                LookupError::NotYours => TaskRefusal::TargetNotYours(what),
                LookupError::Ambiguous => TaskRefusal::TargetAmbiguous,
            })?;
            return Ok(Placed {
                organization_id: account.organization_id,
                workspace_id: account.workspace_id,
                persona_id: account.persona_id,
                target_id: match target {
                    TargetRef::Slot { .. } => account.slot_id,
                    _ => account.persona_id,
                },
                target_code: Some(account.code),
                zone: account.zone,
            });
        }
        TargetFacts::Owner(row) => match (row, target) {
            (Some(row), TargetRef::Post(id) | TargetRef::Issue(id)) => (row, *id),
            _ => return Err(TaskRefusal::TargetNotFound(what)),
        },
    };
    let visible = match opener {
        Opener::Agent { agent, .. } => row.workspace_id == agent.workspace_id,
        Opener::Person { organization, .. } => {
            organization.is_none_or(|o| o == row.organization_id)
        }
    };
    if !visible {
        return Err(TaskRefusal::TargetNotFound(what));
    }
    let Some(persona_id) = row.persona_id else {
        return Err(match opener {
            Opener::Agent { .. } => TaskRefusal::TargetNotFound(what),
            Opener::Person { .. } => TaskRefusal::TargetWithoutPersona(what),
        });
    };
    if let Opener::Agent { agent, .. } = opener
        && row.persona_agent != Some(agent.agent_id)
    {
        return Err(TaskRefusal::TargetNotYours(what));
    }
    Ok(Placed {
        organization_id: row.organization_id,
        workspace_id: row.workspace_id,
        persona_id,
        target_code: None,
        target_id,
        zone: row.zone.unwrap_or_else(|| DEFAULT_ZONE.to_owned()),
    })
}

/// The agent a person's `assign` names in the target's workspace, as loaded: whether its role
/// works cards (has tasks:write).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AgentFact {
    pub id: Uuid,
    pub works_cards: bool,
}

/// Who the card is assigned to: an agent opens it for itself; a person assigns it to the
/// agent `assign` names (which must work cards) or to nobody.
pub fn assignee(opener: &Opener, named: Option<AgentFact>) -> Result<Option<Uuid>, TaskRefusal> {
    match opener {
        Opener::Agent { agent, .. } => Ok(Some(agent.agent_id)),
        Opener::Person { assign: None, .. } => Ok(None),
        Opener::Person {
            assign: Some(who), ..
        } => match named {
            Some(a) if a.works_cards => Ok(Some(a.id)),
            Some(_) => Err(TaskRefusal::AgentCannotWork(who.clone())),
            None => Err(TaskRefusal::UnknownAgent(who.clone())),
        },
    }
}

/// An open card of the same kind on the same target and persona, oldest first.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OpenCardFact {
    pub id: Uuid,
    pub opened_by_agent: Option<Uuid>,
    pub assignee: Option<Uuid>,
    pub opened_by_name: String,
    pub also_wanted_by: Vec<String>,
}

/// The open card a request joins rather than opening a second: for an agent, the first it
/// opened or works; for a person, the first with the same assignee (or unassigned, as asked).
pub fn joins<'a>(
    opener: &Opener,
    assignee: Option<Uuid>,
    open: &'a [OpenCardFact],
) -> Option<&'a OpenCardFact> {
    open.iter().find(|c| match opener {
        Opener::Agent { agent, .. } => {
            c.opened_by_agent == Some(agent.agent_id) || c.assignee == Some(agent.agent_id)
        }
        Opener::Person { .. } => c.assignee == assignee,
    })
}

/// Who opened a card, as stored.
fn opened_by(opener: &Opener) -> (&'static str, &str, Option<Uuid>) {
    match opener {
        Opener::Agent { agent, name } => ("agent", name, Some(agent.agent_id)),
        Opener::Person { name, .. } => ("person", name, None),
    }
}

/// A new card's row.
#[derive(Debug, Clone, PartialEq)]
pub struct NewCard<'a> {
    pub placed: Placed,
    pub kind: TaskKind,
    pub title: &'a str,
    pub detail: Option<&'a str>,
    pub status: TaskStatus,
    pub target_type: TargetType,
    pub assignee: Option<Uuid>,
    /// `agent` or `person`.
    pub opened_by_type: &'static str,
    pub opened_by_name: &'a str,
    pub opened_by_agent: Option<Uuid>,
    pub due_at: Option<Timestamp>,
    pub origin: Option<&'a Value>,
}

impl NewCard<'_> {
    /// The event of the card opened as `id`: told to the agent that works it (its assignee,
    /// else its persona's agent, `persona_agent`).
    pub fn opened(&self, id: Uuid, persona_agent: Option<Uuid>) -> NewEvent {
        NewEvent {
            workspace_id: self.placed.workspace_id,
            agent_id: self.assignee.or(persona_agent),
            object_id: id,
            body: EventBody::TaskOpened(TaskChange {
                kind: self.kind.as_str().to_owned(),
                title: self.title.to_owned(),
                status: self.status.as_str().to_owned(),
                note: None,
            }),
        }
    }
}

/// The card a request opens, waiting for pickup, judged in order: its due_at read in the
/// target's zone, then its [`assignee`] (`named`: the agent a person's `assign` names).
pub fn plan_open<'a>(
    opener: &'a Opener,
    req: &'a OpenRequest,
    placed: Placed,
    named: Option<AgentFact>,
) -> Result<NewCard<'a>, TaskRefusal> {
    let due_at = req
        .due_at
        .map(|input| read_due_at(input, &placed.zone))
        .transpose()?;
    let assignee = assignee(opener, named)?;
    let (opened_by_type, opened_by_name, opened_by_agent) = opened_by(opener);
    Ok(NewCard {
        placed,
        kind: req.kind,
        title: &req.title,
        detail: req.detail.as_deref(),
        status: TaskStatus::PendingPickup,
        target_type: req.target.kind(),
        assignee,
        opened_by_type,
        opened_by_name,
        opened_by_agent,
        due_at,
        origin: req.origin.as_ref(),
    })
}

// ---------------------------------------------------------------------------------------------
// Moving

/// A card as locked for a move.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CardFacts {
    pub organization_id: Uuid,
    pub workspace_id: Uuid,
    pub card: Card,
    pub kind: TaskKind,
    pub title: String,
    /// The decision whose follow-up this card is.
    pub decision_id: Option<Uuid>,
}

/// What a move writes on the card beyond its status and notes.
#[derive(Debug, Clone, PartialEq)]
pub enum CardWrite {
    /// Assigned (to the claiming agent, or kept), progress now.
    Claim { assignee: Option<Uuid> },
    /// Progress now.
    Progress,
    /// The result and evidence; waiting for confirmation from now.
    Finish { result: String, evidence: Value },
    /// The reason; finished now.
    Fail { reason: String },
    /// Nothing more.
    Confirm,
    /// Back at work: no longer waiting for confirmation nor finished, progress now.
    Reopen,
}

/// What a follow-up's decision becomes when its card moves.
#[derive(Debug, Clone, PartialEq)]
pub enum FollowUpWrite {
    /// The card finished: the decision is handled, as by complete_issue.
    Handled { result: String, evidence: Value },
    /// The card confirmed: the decision is resolved, decided by `decided_by` (none when an
    /// agent confirms its own card's decision, which no route lets it do).
    Resolved { decided_by: Option<DecidedBy> },
    /// The card back at work: the decision waits again.
    Reopened,
}

/// A move that changes the card.
#[derive(Debug, Clone, PartialEq)]
pub struct MovePlan {
    pub status: TaskStatus,
    /// Appended to the card's notes: `[{by, text, at, via?}]`, or `[]`.
    pub notes: Value,
    pub write: CardWrite,
    /// The follow-up's decision and what it becomes.
    pub follow_up: Option<(Uuid, FollowUpWrite)>,
    /// What the move tells (a progress report tells nothing).
    pub event: Option<NewEvent>,
}

/// What a move comes to.
#[derive(Debug, Clone, PartialEq)]
pub enum MoveOutcome {
    /// The same move was made already: nothing is written.
    Unchanged,
    Apply(Box<MovePlan>),
}

/// A note on the card, as a one-entry list to append.
fn note(by: &str, text: &str, at: Timestamp, via: Option<&DecidedBy>) -> Value {
    let mut n = json!({"by": by, "text": text, "at": fleetdesk_kernel::format_utc(at)});
    if let Some(v) = via {
        n["via"] = v.to_json();
    }
    json!([n])
}

/// A move judged, in order: the card is the actor's to see (an agent's or a relay's workspace,
/// a person's organization), the move is allowed from where the card stands ([`plan`]), and a
/// finish's evidence assets are media items of the card's workspace (`known_assets`: those of
/// `req.asset_ids` that are).
pub fn plan_move(
    actor: &Actor,
    req: &MoveRequest,
    facts: &CardFacts,
    known_assets: &[Uuid],
) -> Result<MoveOutcome, TaskRefusal> {
    let (who, visible, by, via) = match actor {
        Actor::Agent { agent, name } => (
            Who::Agent(agent.agent_id),
            facts.workspace_id == agent.workspace_id,
            name.as_str(),
            None,
        ),
        Actor::Person {
            organization, name, ..
        } => (
            Who::Person,
            organization.is_none_or(|o| o == facts.organization_id),
            name.as_str(),
            None,
        ),
        Actor::Relay {
            agent,
            person,
            record,
        } => (
            Who::Relay(agent.agent_id),
            facts.workspace_id == agent.workspace_id,
            person.as_str(),
            Some(record),
        ),
    };
    if !visible {
        return Err(TaskRefusal::NotFound);
    }
    let (status, assign) = match plan(&facts.card, who, &req.mv)? {
        Plan::Unchanged => return Ok(MoveOutcome::Unchanged),
        Plan::Apply { status, assign } => (status, assign),
    };
    if matches!(req.mv, Move::Finish { .. })
        && let Some(missing) = req.asset_ids.iter().find(|id| !known_assets.contains(id))
    {
        return Err(TaskRefusal::UnknownAsset(*missing));
    }
    let notes = match (&req.mv, req.note.as_deref()) {
        (Move::Fail { reason }, _) => note(by, reason, req.now, via),
        (_, Some(text)) => note(by, text, req.now, via),
        // A relayed confirmation without a note still records who relayed it for whom.
        (Move::Confirm, None) if via.is_some() => note(by, "confirmed", req.now, via),
        _ => json!([]),
    };
    let write = match &req.mv {
        Move::Claim => CardWrite::Claim {
            assignee: assign.or(facts.card.assignee),
        },
        Move::Progress => CardWrite::Progress,
        Move::Finish { result } => CardWrite::Finish {
            result: result.clone(),
            evidence: req.evidence.clone(),
        },
        Move::Fail { reason } => CardWrite::Fail {
            reason: reason.clone(),
        },
        Move::Confirm => CardWrite::Confirm,
        Move::Reopen => CardWrite::Reopen,
    };
    let follow_up = facts.decision_id.and_then(|d| {
        let effect = match &write {
            CardWrite::Finish { result, evidence } => FollowUpWrite::Handled {
                result: result.clone(),
                evidence: evidence.clone(),
            },
            CardWrite::Confirm => FollowUpWrite::Resolved {
                decided_by: match actor {
                    Actor::Person { record, .. } | Actor::Relay { record, .. } => {
                        Some(record.clone())
                    }
                    Actor::Agent { .. } => None,
                },
            },
            CardWrite::Reopen => FollowUpWrite::Reopened,
            _ => return None,
        };
        Some((d, effect))
    });
    let event = moved_event(req, facts, status, &write);
    Ok(MoveOutcome::Apply(Box::new(MovePlan {
        status,
        notes,
        write,
        follow_up,
        event,
    })))
}

/// The event a move of the card in `facts` to `status` tells, to the agent that works the
/// card after it (its assignee, else its persona's agent); none for a progress report.
fn moved_event(
    req: &MoveRequest,
    facts: &CardFacts,
    status: TaskStatus,
    write: &CardWrite,
) -> Option<NewEvent> {
    let (note, body): (Option<&str>, fn(TaskChange) -> EventBody) = match write {
        CardWrite::Progress => return None,
        CardWrite::Claim { .. } => (None, EventBody::TaskClaimed),
        CardWrite::Finish { result, .. } => (Some(result), EventBody::TaskFinished),
        CardWrite::Fail { reason } => (Some(reason), EventBody::TaskFailed),
        CardWrite::Confirm => (req.note.as_deref(), EventBody::TaskConfirmed),
        CardWrite::Reopen => (req.note.as_deref(), EventBody::TaskReopened),
    };
    let assignee = match write {
        CardWrite::Claim { assignee } => *assignee,
        _ => facts.card.assignee,
    };
    Some(NewEvent {
        workspace_id: facts.workspace_id,
        agent_id: assignee.or(facts.card.persona_agent),
        object_id: req.id,
        body: body(TaskChange {
            kind: facts.kind.as_str().to_owned(),
            title: facts.title.clone(),
            status: status.as_str().to_owned(),
            note: note.map(str::to_owned),
        }),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use fleetdesk_kernel::{AccountCode, AgentRef};

    const ORG: Uuid = Uuid::from_u128(10);
    const WS: Uuid = Uuid::from_u128(20);
    const AGENT: Uuid = Uuid::from_u128(1);
    const OTHER: Uuid = Uuid::from_u128(2);

    fn agent_ref(agent: Uuid) -> AgentRef {
        AgentRef {
            organization_id: ORG,
            workspace_id: WS,
            agent_id: agent,
        }
    }

    fn agent(id: Uuid) -> Opener {
        Opener::Agent {
            agent: agent_ref(id),
            name: "scout".into(),
        }
    }

    fn person(organization: Option<Uuid>, assign: Option<&str>) -> Opener {
        Opener::Person {
            organization,
            name: "Mei".into(),
            assign: assign.map(str::to_owned),
        }
    }

    fn owner(persona_agent: Option<Uuid>) -> OwnerFact {
        OwnerFact {
            organization_id: ORG,
            workspace_id: WS,
            persona_id: Some(Uuid::from_u128(30)),
            persona_agent,
            zone: None,
        }
    }

    fn slot() -> TargetRef {
        TargetRef::Slot {
            code: AccountCode::parse("tw-01").unwrap(),
            platform: None,
        }
    }

    #[test]
    fn a_post_target_is_placed_for_its_persona_s_agent_and_the_organization_s_people() {
        let post = TargetRef::Post(Uuid::from_u128(40));
        let placed = place(
            &agent(AGENT),
            &post,
            TargetFacts::Owner(Some(owner(Some(AGENT)))),
        )
        .unwrap();
        assert_eq!(placed.target_id, Uuid::from_u128(40));
        assert_eq!(placed.zone, DEFAULT_ZONE, "no zone stored: Taipei");
        assert_eq!(
            place(
                &agent(AGENT),
                &post,
                TargetFacts::Owner(Some(owner(Some(OTHER))))
            ),
            Err(TaskRefusal::TargetNotYours("post"))
        );
        assert_eq!(
            place(&agent(AGENT), &post, TargetFacts::Owner(None)),
            Err(TaskRefusal::TargetNotFound("post"))
        );
        let elsewhere = person(Some(Uuid::from_u128(99)), None);
        assert_eq!(
            place(&elsewhere, &post, TargetFacts::Owner(Some(owner(None)))),
            Err(TaskRefusal::TargetNotFound("post"))
        );
        let mut without = owner(None);
        without.persona_id = None;
        let issue = TargetRef::Issue(Uuid::from_u128(41));
        assert_eq!(
            place(
                &person(Some(ORG), None),
                &issue,
                TargetFacts::Owner(Some(without.clone()))
            ),
            Err(TaskRefusal::TargetWithoutPersona("decision"))
        );
        assert_eq!(
            place(&agent(AGENT), &issue, TargetFacts::Owner(Some(without))),
            Err(TaskRefusal::TargetNotFound("decision"))
        );
    }

    #[test]
    fn an_account_target_stores_its_code_and_names_the_lookup_s_refusal() {
        let account = AccountFact {
            slot_id: Uuid::from_u128(50),
            code: "tw-01".into(),
            persona_id: Uuid::from_u128(30),
            workspace_id: WS,
            organization_id: ORG,
            zone: "Asia/Tokyo".into(),
        };
        let facts = |chosen, several_organizations| TargetFacts::Account {
            chosen,
            several_organizations,
        };
        let placed = place(&agent(AGENT), &slot(), facts(Ok(account.clone()), false)).unwrap();
        assert_eq!(placed.target_id, account.slot_id);
        assert_eq!(placed.target_code.as_deref(), Some("tw-01"));
        assert_eq!(placed.zone, "Asia/Tokyo");
        let persona = TargetRef::Persona {
            code: AccountCode::parse("tw-01").unwrap(),
            platform: None,
        };
        let placed = place(&agent(AGENT), &persona, facts(Ok(account.clone()), false)).unwrap();
        assert_eq!(placed.target_id, account.persona_id);
        assert_eq!(
            place(
                &person(None, None),
                &slot(),
                facts(Ok(account.clone()), true)
            ),
            Err(TaskRefusal::TargetInSeveralOrganizations)
        );
        assert!(place(&person(Some(ORG), None), &slot(), facts(Ok(account), true)).is_ok());
        assert_eq!(
            place(
                &agent(AGENT),
                &slot(),
                facts(Err(LookupError::Ambiguous), false)
            ),
            Err(TaskRefusal::TargetAmbiguous)
        );
        assert_eq!(
            place(
                &agent(AGENT),
                &slot(),
                facts(Err(LookupError::NotYours), false)
            ),
            Err(TaskRefusal::TargetNotYours("account"))
        );
    }

    #[test]
    fn a_person_assigns_only_an_agent_that_works_cards() {
        let named = |works_cards| {
            Some(AgentFact {
                id: OTHER,
                works_cards,
            })
        };
        assert_eq!(assignee(&agent(AGENT), None), Ok(Some(AGENT)));
        assert_eq!(assignee(&person(Some(ORG), None), named(true)), Ok(None));
        let assigning = person(Some(ORG), Some("writer"));
        assert_eq!(assignee(&assigning, named(true)), Ok(Some(OTHER)));
        assert_eq!(
            assignee(&assigning, named(false)),
            Err(TaskRefusal::AgentCannotWork("writer".into()))
        );
        assert_eq!(
            assignee(&assigning, None),
            Err(TaskRefusal::UnknownAgent("writer".into()))
        );
    }

    #[test]
    fn a_request_joins_the_agent_s_own_open_card_or_a_person_s_with_the_same_assignee() {
        let card = |id, opened_by_agent, assignee| OpenCardFact {
            id: Uuid::from_u128(id),
            opened_by_agent,
            assignee,
            opened_by_name: "x".into(),
            also_wanted_by: vec![],
        };
        let open = [
            card(1, Some(OTHER), Some(OTHER)),
            card(2, None, None),
            card(3, None, Some(AGENT)),
        ];
        assert_eq!(
            joins(&agent(AGENT), Some(AGENT), &open).map(|c| c.id),
            Some(Uuid::from_u128(3))
        );
        assert_eq!(
            joins(&person(Some(ORG), None), None, &open).map(|c| c.id),
            Some(Uuid::from_u128(2))
        );
        assert_eq!(
            joins(&person(Some(ORG), None), Some(OTHER), &open).map(|c| c.id),
            Some(Uuid::from_u128(1))
        );
        assert_eq!(joins(&agent(Uuid::from_u128(7)), None, &open), None);
    }

    #[test]
    fn a_new_card_waits_for_pickup_with_its_due_at_read_in_the_target_s_zone() {
        let req = OpenRequest {
            kind: TaskKind::ChangeBio,
            title: "New bio".into(),
            detail: None,
            target: slot(),
            due_at: Some("2026-12-01 09:00".parse().unwrap()),
            origin: None,
            requester: "Mei".into(),
        };
        let placed = Placed {
            organization_id: ORG,
            workspace_id: WS,
            persona_id: Uuid::from_u128(30),
            target_code: Some("tw-01".into()),
            target_id: Uuid::from_u128(50),
            zone: "Asia/Taipei".into(),
        };
        let opener = person(Some(ORG), None);
        let card = plan_open(&opener, &req, placed.clone(), None).unwrap();
        assert_eq!(card.assignee, None);
        assert_eq!(card.status, TaskStatus::PendingPickup);
        assert_eq!(card.opened_by_type, "person");
        assert_eq!(card.opened_by_agent, None);
        assert_eq!(card.due_at, Some("2026-12-01T01:00:00Z".parse().unwrap()));
        // 02:30 does not exist in New York on the day its clocks go forward.
        let bad = OpenRequest {
            due_at: Some("2026-03-08 02:30".parse().unwrap()),
            ..req.clone()
        };
        let new_york = Placed {
            zone: "America/New_York".into(),
            ..placed.clone()
        };
        assert!(matches!(
            plan_open(&opener, &bad, new_york.clone(), None),
            Err(TaskRefusal::BadDueAt(_))
        ));
        let assigning = person(Some(ORG), Some("writer"));
        assert!(
            matches!(
                plan_open(&assigning, &bad, new_york, None),
                Err(TaskRefusal::BadDueAt(_))
            ),
            "a bad due_at is named before an unknown agent"
        );
        let by_agent = agent(AGENT);
        let card = plan_open(&by_agent, &req, placed, None).unwrap();
        assert_eq!(card.assignee, Some(AGENT));
        assert_eq!(
            (card.opened_by_type, card.opened_by_agent),
            ("agent", Some(AGENT))
        );
    }

    fn facts(status: TaskStatus, decision: Option<Uuid>) -> CardFacts {
        CardFacts {
            organization_id: ORG,
            workspace_id: WS,
            card: Card {
                status,
                assignee: Some(AGENT),
                persona_agent: Some(AGENT),
                result: None,
                fail_reason: None,
                follow_up: decision.is_some(),
            },
            kind: TaskKind::Other,
            title: "Card".into(),
            decision_id: decision,
        }
    }

    fn request(mv: Move, note: Option<&str>, asset_ids: Vec<Uuid>) -> MoveRequest {
        MoveRequest {
            id: Uuid::from_u128(60),
            mv,
            note: note.map(str::to_owned),
            evidence: json!([]),
            asset_ids,
            now: "2026-11-29T02:00:00Z".parse().unwrap(),
        }
    }

    #[test]
    fn a_finish_needs_its_assets_and_hands_a_follow_up_s_decision_its_result() {
        let worker = Actor::Agent {
            agent: agent_ref(AGENT),
            name: "scout".into(),
        };
        let decision = Uuid::from_u128(70);
        let asset = Uuid::from_u128(80);
        let finish = request(
            Move::Finish {
                result: "bio changed".into(),
            },
            None,
            vec![asset],
        );
        assert_eq!(
            plan_move(
                &worker,
                &finish,
                &facts(TaskStatus::InProgress, Some(decision)),
                &[]
            ),
            Err(TaskRefusal::UnknownAsset(asset))
        );
        let MoveOutcome::Apply(plan) = plan_move(
            &worker,
            &finish,
            &facts(TaskStatus::InProgress, Some(decision)),
            &[asset],
        )
        .unwrap() else {
            panic!("a finish applies");
        };
        assert_eq!(plan.status, TaskStatus::PendingConfirmation);
        assert_eq!(plan.notes, json!([]));
        assert!(matches!(
            plan.follow_up,
            Some((d, FollowUpWrite::Handled { ref result, .. })) if d == decision && result == "bio changed"
        ));
        let elsewhere = Actor::Agent {
            agent: AgentRef {
                workspace_id: Uuid::from_u128(21),
                ..agent_ref(AGENT)
            },
            name: "scout".into(),
        };
        assert_eq!(
            plan_move(
                &elsewhere,
                &finish,
                &facts(TaskStatus::InProgress, None),
                &[asset]
            ),
            Err(TaskRefusal::NotFound)
        );
    }

    #[test]
    fn a_relayed_confirmation_records_the_relay_and_resolves_the_decision_as_the_person() {
        let record = DecidedBy::Relay(fleetdesk_kernel::decision::Relayed {
            name: "Mei".into(),
            role: "agency".into(),
            agent: fleetdesk_kernel::decision::RelayingAgent {
                id: OTHER,
                name: "relay".into(),
            },
            origin: json!({"platform": "telegram"}),
            effective_at: None,
        });
        let relay = Actor::Relay {
            agent: agent_ref(OTHER),
            person: "Mei".into(),
            record: record.clone(),
        };
        let mut card = facts(TaskStatus::PendingConfirmation, Some(Uuid::from_u128(70)));
        card.card.persona_agent = Some(OTHER);
        let MoveOutcome::Apply(plan) =
            plan_move(&relay, &request(Move::Confirm, None, vec![]), &card, &[]).unwrap()
        else {
            panic!("a confirmation applies");
        };
        assert_eq!(plan.status, TaskStatus::Done);
        assert_eq!(plan.notes[0]["text"], "confirmed");
        assert_eq!(plan.notes[0]["by"], "Mei");
        assert_eq!(plan.notes[0]["via"], record.to_json());
        assert_eq!(plan.notes[0]["via"]["type"], "relay");
        assert_eq!(
            plan.follow_up,
            Some((
                Uuid::from_u128(70),
                FollowUpWrite::Resolved {
                    decided_by: Some(record)
                }
            ))
        );
        card.card.status = TaskStatus::Done;
        assert_eq!(
            plan_move(&relay, &request(Move::Confirm, None, vec![]), &card, &[]),
            Ok(MoveOutcome::Unchanged)
        );
    }

    #[test]
    fn a_claim_assigns_the_claiming_agent_and_a_fail_notes_its_reason() {
        let worker = Actor::Agent {
            agent: agent_ref(AGENT),
            name: "scout".into(),
        };
        let mut card = facts(TaskStatus::PendingPickup, None);
        card.card.assignee = None;
        let MoveOutcome::Apply(plan) =
            plan_move(&worker, &request(Move::Claim, None, vec![]), &card, &[]).unwrap()
        else {
            panic!("a claim applies");
        };
        assert_eq!(
            plan.write,
            CardWrite::Claim {
                assignee: Some(AGENT)
            }
        );
        assert_eq!(plan.follow_up, None);
        card.card.assignee = Some(AGENT);
        let MoveOutcome::Apply(plan) = plan_move(
            &worker,
            &request(
                Move::Fail {
                    reason: "locked out".into(),
                },
                Some("ignored"),
                vec![],
            ),
            &card,
            &[],
        )
        .unwrap() else {
            panic!("a fail applies");
        };
        assert_eq!(plan.status, TaskStatus::Failed);
        assert_eq!(plan.notes[0]["text"], "locked out");
        assert_eq!(plan.notes[0]["by"], "scout");
    }

    #[test]
    fn a_move_tells_the_agent_that_works_the_card_and_progress_tells_nothing() {
        let worker = Actor::Agent {
            agent: agent_ref(AGENT),
            name: "scout".into(),
        };
        let mut card = facts(TaskStatus::PendingPickup, None);
        // Unassigned on the agent's persona: the claiming agent is told.
        card.card.assignee = None;
        let apply = |mv, card: &CardFacts| match plan_move(
            &worker,
            &request(mv, None, vec![]),
            card,
            &[],
        ) {
            Ok(MoveOutcome::Apply(plan)) => plan.event,
            other => panic!("{other:?}"),
        };
        let claimed = apply(Move::Claim, &card).expect("a claim tells");
        assert_eq!(claimed.agent_id, Some(AGENT));
        assert_eq!(
            (claimed.workspace_id, claimed.object_id),
            (WS, Uuid::from_u128(60))
        );
        let EventBody::TaskClaimed(change) = &claimed.body else {
            panic!("{claimed:?}");
        };
        assert_eq!(
            (
                change.kind.as_str(),
                change.title.as_str(),
                change.status.as_str()
            ),
            ("other", "Card", "in_progress")
        );
        card.card.status = TaskStatus::InProgress;
        card.card.assignee = Some(AGENT);
        assert_eq!(apply(Move::Progress, &card), None);
        let failed = apply(
            Move::Fail {
                reason: "locked out".into(),
            },
            &card,
        )
        .unwrap();
        assert_eq!(
            failed.body.kind(),
            fleetdesk_kernel::events::EventKind::TaskFailed
        );
        let EventBody::TaskFailed(change) = failed.body else {
            unreachable!()
        };
        assert_eq!(change.note.as_deref(), Some("locked out"));
    }

    #[test]
    fn an_opened_card_tells_its_assignee_else_its_persona_s_agent() {
        let card = NewCard {
            placed: Placed {
                organization_id: ORG,
                workspace_id: WS,
                persona_id: Uuid::from_u128(3),
                target_code: None,
                target_id: Uuid::from_u128(3),
                zone: "Asia/Taipei".into(),
            },
            kind: TaskKind::Other,
            title: "Fix",
            detail: None,
            status: TaskStatus::PendingPickup,
            target_type: TargetType::Persona,
            assignee: None,
            opened_by_type: "person",
            opened_by_name: "Ann",
            opened_by_agent: None,
            due_at: None,
            origin: None,
        };
        let id = Uuid::from_u128(70);
        assert_eq!(card.opened(id, Some(OTHER)).agent_id, Some(OTHER));
        assert_eq!(card.opened(id, None).agent_id, None);
        let assigned = NewCard {
            assignee: Some(AGENT),
            ..card
        };
        let event = assigned.opened(id, Some(OTHER));
        assert_eq!((event.agent_id, event.object_id), (Some(AGENT), id));
        assert_eq!(
            event.body.kind(),
            fleetdesk_kernel::events::EventKind::TaskOpened
        );
    }
}
