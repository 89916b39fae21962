//! What a decided move writes beyond the decision itself: [`crate::rules::plan`] names the
//! [`Effect`]; [`plan_effect`] turns it, over the facts the adapter loaded, into a list of
//! [`Write`]s, each planned by the area that owns it (accounts replace a banned generation,
//! personas confirm, retire and decide facts, this crate opens follow-ups with their task
//! cards, tasks finish a card; ads and wiki plan their own changes where their adapter runs
//! them). The adapter writes the list in the move's transaction.

use crate::DecisionKind;
use crate::Opener;
use crate::rules::{DecisionRefusal, Effect, KindRules, card_moves_from};
use fleetdesk_accounts::{LiveGeneration, Replacement, replace_banned};
use fleetdesk_kernel::persona::FactStatus;
use fleetdesk_personas::rules::{
    DraftFact, FACT_REFUSED, FactDecision, ImageLock, PersonaUpdate, confirm_persona, decide_fact,
    retire_persona,
};
use fleetdesk_tasks::plan::FollowUpWrite;
use fleetdesk_tasks::{TargetType, TaskKind, TaskStatus};
use serde_json::{Value, json};
use uuid::Uuid;

/// The decision a move is made on, as loaded (locked).
#[derive(Debug, Clone, PartialEq)]
pub struct Parent {
    pub id: Uuid,
    pub organization_id: Uuid,
    pub workspace_id: Uuid,
    pub persona_id: Option<Uuid>,
    pub post_id: Option<Uuid>,
    pub task_id: Option<Uuid>,
    /// What the opener wrote about it (a contradiction's `label`, `value`, `detail`).
    pub detail: Value,
}

/// The persona a follow-up is about, and the agent that runs it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FollowUpPersona {
    pub id: Uuid,
    pub name: String,
    pub agent: Option<Uuid>,
}

/// What an effect needs besides the decision, loaded by the adapter for that effect.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct EffectFacts {
    /// `OpenGeneration`: the decision's generation if it is still live.
    pub generation: Option<LiveGeneration>,
    /// Follow-ups: the decision's persona.
    pub persona: Option<FollowUpPersona>,
    /// `DecideFact`: the decision's draft fact if it is still a draft.
    pub draft_fact: Option<DraftFact>,
}

/// A follow-up decision and its task card, opened by the person who decided the parent and
/// assigned to the persona's agent.
#[derive(Debug, Clone, PartialEq)]
pub struct NewFollowUp {
    pub kind: DecisionKind,
    pub parent: Uuid,
    pub organization_id: Uuid,
    pub workspace_id: Uuid,
    pub persona_id: Uuid,
    pub post_id: Option<Uuid>,
    pub title: String,
    pub detail: Value,
    pub opened_by: Opener,
    pub card: NewFollowUpCard,
}

/// The task card of a follow-up.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewFollowUpCard {
    pub kind: TaskKind,
    /// What the agent is to do.
    pub instruction: String,
    pub status: TaskStatus,
    pub target_type: TargetType,
    pub target_id: Uuid,
    pub assignee: Option<Uuid>,
}

/// One write of a move's effect.
#[derive(Debug, Clone, PartialEq)]
pub enum Write {
    Generation(Replacement),
    Persona(PersonaUpdate),
    Fact(FactDecision),
    /// The decision's draft facts go from `.0` to `.1`.
    RefuseFacts(FactStatus, FactStatus),
    /// The decision's images locked as each list says.
    ImageLocks(Vec<(ImageLock, Vec<Uuid>)>),
    FollowUp(Box<NewFollowUp>),
    /// The follow-up's card ends in `to`, only from one of `from`.
    FinishCard {
        task: Uuid,
        to: TaskStatus,
        from: &'static [TaskStatus],
    },
    /// The ad proposal approved (if the monthly cap allows) or refused: planned and written by
    /// the ads adapter, which may refuse the move.
    AdChange {
        approve: bool,
    },
    /// The wiki draft canonized or rejected: planned and written by the wiki adapter.
    Wiki {
        canonize: bool,
    },
}

/// The writes of `effect` on `parent`, over `facts`.
pub fn plan_effect(
    effect: &Effect,
    parent: &Parent,
    facts: EffectFacts,
) -> Result<Vec<Write>, DecisionRefusal> {
    let follow_up = |kind, image| -> Result<Write, DecisionRefusal> {
        facts
            .persona
            .as_ref()
            .and_then(|persona| follow_up(kind, parent, persona, image))
            .map(|f| Write::FollowUp(Box::new(f)))
            .ok_or(DecisionRefusal::NotFound)
    };
    Ok(match effect {
        Effect::Nothing => Vec::new(),
        Effect::OpenGeneration => vec![Write::Generation(
            replace_banned(facts.generation).ok_or(DecisionRefusal::GenerationGone)?,
        )],
        Effect::ConfirmPersona => parent
            .persona_id
            .map(|p| Write::Persona(confirm_persona(p)))
            .into_iter()
            .collect(),
        Effect::RetirePersona => parent
            .persona_id
            .map(|p| Write::Persona(retire_persona(p)))
            .into_iter()
            .collect(),
        Effect::DecideFact => decide_fact(facts.draft_fact.clone())
            .map(Write::Fact)
            .into_iter()
            .collect(),
        Effect::RefuseFact => vec![Write::RefuseFacts(FACT_REFUSED.0, FACT_REFUSED.1)],
        Effect::OpenFollowUp { kind } => vec![follow_up(*kind, None)?],
        Effect::Images {
            approved,
            refused,
            avatar,
        } => {
            let locks = [
                (ImageLock::Approved, approved),
                (ImageLock::Refused, refused),
            ]
            .into_iter()
            .filter(|(_, ids)| !ids.is_empty())
            .map(|(lock, ids)| (lock, ids.clone()))
            .collect();
            let mut writes = vec![Write::ImageLocks(locks)];
            if let Some(image) = avatar {
                writes.push(follow_up(DecisionKind::ChangeAvatar, Some(*image))?);
            }
            writes
        }
        Effect::FinishCard(to) => parent
            .task_id
            .map(|task| Write::FinishCard {
                task,
                to: *to,
                from: card_moves_from(*to),
            })
            .into_iter()
            .collect(),
        Effect::ApproveAdChange => vec![Write::AdChange { approve: true }],
        Effect::RefuseAdChange => vec![Write::AdChange { approve: false }],
        Effect::CanonizeWiki => vec![Write::Wiki { canonize: true }],
        Effect::RejectWiki => vec![Write::Wiki { canonize: false }],
    })
}

/// The follow-up of `kind` a decided `parent` opens: its title, what the agent is told, and
/// its card's target (the post to delete, else the persona). `None` for a kind that is no
/// follow-up.
pub fn follow_up(
    kind: DecisionKind,
    parent: &Parent,
    persona: &FollowUpPersona,
    image: Option<Uuid>,
) -> Option<NewFollowUp> {
    let name = &persona.name;
    let text = |key: &str| {
        parent
            .detail
            .get(key)
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned()
    };
    let (title, instruction, detail, post_id) = match kind {
        DecisionKind::ChangeAvatar => (
            format!("Change the avatar of {name}"),
            format!(
                "Set the approved persona image {} as {name}'s avatar on its accounts, then \
                 report it done.",
                image.unwrap_or_default()
            ),
            json!({"image_id": image}),
            None,
        ),
        DecisionKind::ChangeBio => (
            format!("Change the bio of {name}"),
            format!(
                "Change {name}'s bio so that it no longer contradicts: {}: {}",
                text("label"),
                text("value")
            ),
            json!({"label": text("label"), "value": text("value"),
                   "detail": parent.detail.get("detail"), "post_id": parent.post_id}),
            None,
        ),
        DecisionKind::DeletePost => (
            format!("Delete a post of {name}"),
            format!(
                "Delete post {} on the platform: it contradicts {}: {}",
                parent.post_id.unwrap_or_default(),
                text("label"),
                text("value")
            ),
            json!({"label": text("label"), "value": text("value"), "post_id": parent.post_id}),
            parent.post_id,
        ),
        _ => return None,
    };
    let (target_type, target_id) = match post_id {
        Some(p) => (TargetType::Post, p),
        None => (TargetType::Persona, persona.id),
    };
    Some(NewFollowUp {
        kind,
        parent: parent.id,
        organization_id: parent.organization_id,
        workspace_id: parent.workspace_id,
        persona_id: persona.id,
        post_id,
        detail,
        opened_by: Opener::Person,
        card: NewFollowUpCard {
            kind: kind.task_kind()?,
            instruction,
            status: TaskStatus::PendingPickup,
            target_type,
            target_id,
            assignee: persona.agent,
        },
        title,
    })
}

/// What a follow-up's decision becomes when its task card moves
/// ([`fleetdesk_tasks::plan::FollowUpWrite`]): `to`, only from one of `from`; a resolution
/// records the resolve move (a card's confirmation stands for the person's resolve).
#[derive(Debug, Clone, PartialEq)]
pub struct CardMoved {
    pub to: crate::DecisionStatus,
    pub from: &'static [crate::DecisionStatus],
    pub decided_move: Option<Value>,
}

/// The decision's side of a follow-up card's move: a finished card hands it in (handled, as
/// by complete_issue), a confirmed card resolves it, a reopened card makes it wait again.
pub fn card_moved(write: &FollowUpWrite) -> CardMoved {
    use crate::DecisionStatus as S;
    match write {
        FollowUpWrite::Handled { .. } => CardMoved {
            to: S::Handled,
            from: &[S::Open],
            decided_move: None,
        },
        FollowUpWrite::Resolved { .. } => CardMoved {
            to: S::Resolved,
            from: &[S::Open, S::Handled],
            decided_move: Some(
                crate::rules::Move::new(crate::rules::Action::Resolve, None, None, None).to_json(),
            ),
        },
        FollowUpWrite::Reopened => CardMoved {
            to: S::Open,
            from: &[S::Handled, S::Resolved],
            decided_move: None,
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use fleetdesk_accounts::AccountState;
    use fleetdesk_kernel::persona::PersonaStatus;

    fn id(n: u128) -> Uuid {
        Uuid::from_u128(n)
    }

    #[test]
    fn a_follow_up_card_hands_in_resolves_or_reopens_its_decision() {
        use crate::DecisionStatus as S;
        let handed = card_moved(&FollowUpWrite::Handled {
            result: "done".into(),
            evidence: json!([]),
        });
        assert_eq!((handed.to, handed.from), (S::Handled, &[S::Open][..]));
        let resolved = card_moved(&FollowUpWrite::Resolved { decided_by: None });
        assert_eq!(resolved.to, S::Resolved);
        assert_eq!(resolved.from, &[S::Open, S::Handled]);
        assert_eq!(resolved.decided_move, Some(json!({"action": "resolve"})));
        let reopened = card_moved(&FollowUpWrite::Reopened);
        assert_eq!(
            (reopened.to, reopened.from),
            (S::Open, &[S::Handled, S::Resolved][..])
        );
        assert_eq!(reopened.decided_move, None);
    }

    fn parent() -> Parent {
        Parent {
            id: id(1),
            organization_id: id(2),
            workspace_id: id(3),
            persona_id: Some(id(4)),
            post_id: Some(id(5)),
            task_id: Some(id(6)),
            detail: json!({"label": "age", "value": "29", "detail": "post says 31"}),
        }
    }

    fn persona() -> FollowUpPersona {
        FollowUpPersona {
            id: id(4),
            name: "Mika".into(),
            agent: Some(id(7)),
        }
    }

    #[test]
    fn a_contradiction_opens_a_follow_up_with_its_card_for_the_personas_agent() {
        let facts = EffectFacts {
            persona: Some(persona()),
            ..EffectFacts::default()
        };
        let writes = plan_effect(
            &Effect::OpenFollowUp {
                kind: DecisionKind::DeletePost,
            },
            &parent(),
            facts,
        )
        .unwrap();
        let [Write::FollowUp(f)] = writes.as_slice() else {
            panic!("{writes:?}")
        };
        assert_eq!(f.title, "Delete a post of Mika");
        assert_eq!(
            f.card.instruction,
            format!(
                "Delete post {} on the platform: it contradicts age: 29",
                id(5)
            )
        );
        assert_eq!(
            (f.card.kind, f.card.status),
            (TaskKind::DeletePost, TaskStatus::PendingPickup)
        );
        assert_eq!(
            (f.card.target_type, f.card.target_id),
            (TargetType::Post, id(5))
        );
        assert_eq!(
            (f.card.assignee, f.opened_by),
            (Some(id(7)), Opener::Person)
        );

        let bio = follow_up(DecisionKind::ChangeBio, &parent(), &persona(), None).unwrap();
        assert_eq!(bio.post_id, None);
        assert_eq!(
            (bio.card.target_type, bio.card.target_id),
            (TargetType::Persona, id(4))
        );
        assert_eq!(bio.detail["detail"], "post says 31");
        assert_eq!(
            follow_up(DecisionKind::FactProposal, &parent(), &persona(), None),
            None
        );
    }

    #[test]
    fn a_banned_account_is_replaced_only_while_its_generation_is_live_and_banned() {
        let live = |state| EffectFacts {
            generation: Some(LiveGeneration {
                id: id(8),
                slot_id: id(9),
                generation: 1,
                state,
                account: fleetdesk_accounts::AccountSubject {
                    workspace_id: id(2),
                    slot_id: id(9),
                    code: "TW-T001".into(),
                    platform: fleetdesk_kernel::Platform::Threads,
                    persona_agent: Some(id(7)),
                },
            }),
            ..EffectFacts::default()
        };
        let writes = plan_effect(
            &Effect::OpenGeneration,
            &parent(),
            live(AccountState::Banned),
        )
        .unwrap();
        let [Write::Generation(r @ Replacement { next: 2, .. })] = writes.as_slice() else {
            panic!("{writes:?}")
        };
        // The account's state change is told to its persona's agent.
        assert_eq!((r.event.agent_id, r.event.object_id), (Some(id(7)), id(9)));
        assert_eq!(
            r.event.body.kind(),
            fleetdesk_kernel::events::EventKind::AccountStateChanged
        );
        assert_eq!(
            plan_effect(
                &Effect::OpenGeneration,
                &parent(),
                live(AccountState::Warming)
            ),
            Err(DecisionRefusal::GenerationGone)
        );
    }

    #[test]
    fn persona_fact_and_image_effects_are_planned_by_their_areas() {
        let plan = |effect: Effect, facts| plan_effect(&effect, &parent(), facts).unwrap();
        assert_eq!(
            plan(Effect::RetirePersona, EffectFacts::default()),
            [Write::Persona(PersonaUpdate {
                persona_id: id(4),
                status: PersonaStatus::Retired,
                retire: true,
            })]
        );
        assert_eq!(plan(Effect::DecideFact, EffectFacts::default()), []);
        assert_eq!(
            plan(Effect::RefuseFact, EffectFacts::default()),
            [Write::RefuseFacts(FactStatus::Draft, FactStatus::Refused)]
        );
        let images = plan(
            Effect::Images {
                approved: vec![id(10)],
                refused: Vec::new(),
                avatar: Some(id(10)),
            },
            EffectFacts {
                persona: Some(persona()),
                ..EffectFacts::default()
            },
        );
        assert_eq!(
            images[0],
            Write::ImageLocks(vec![(ImageLock::Approved, vec![id(10)])])
        );
        assert!(matches!(&images[1], Write::FollowUp(f) if f.kind == DecisionKind::ChangeAvatar));
        assert_eq!(
            plan(Effect::FinishCard(TaskStatus::Done), EffectFacts::default()),
            [Write::FinishCard {
                task: id(6),
                to: TaskStatus::Done,
                from: &[TaskStatus::PendingConfirmation],
            }]
        );
    }
}
