//! A persona's writes as plans over loaded facts: the decisions an agent's call opens for a
//! person ([`new_persona_decision`], [`images_decision_for`]) and what a fact or contradiction
//! proposal comes to ([`plan_proposal`]). The adapter loads the facts, calls the plan and
//! writes it in one transaction.

use fleetdesk_kernel::decision::{DecisionKind, DecisionStatus, NewDecision};
use fleetdesk_kernel::persona::{FactCategory, FactStatus, PersonaStatus};
use serde_json::json;
use uuid::Uuid;

use crate::ports::{AddedImage, CreatedPersona, NewImage, NewPersona, Proposed};
use crate::rules::ImageLock;
use crate::rules::PersonaRefusal;
use crate::rules::{
    CONTRADICTION_OPTIONS, CONTRADICTION_QUESTION, Earlier, Proposal, ProposalKind, images_title,
    matching_proposal, new_persona_title, setup_complete,
};

/// The `persona_new` decision a new persona waits on.
pub fn new_persona_decision(persona_id: Uuid, name: &str, project: &str) -> NewDecision {
    NewDecision {
        persona_id: Some(persona_id),
        ..NewDecision::new(
            DecisionKind::PersonaNew,
            new_persona_title(name),
            json!({"project": project}),
        )
    }
}

impl NewPersona {
    /// A persona an agent creates waits for a person's `persona_new` decision.
    pub const STATUS: PersonaStatus = PersonaStatus::Pending;

    /// The answer for this persona created as `id` in `project`, waiting on its `persona_new`
    /// decision `issue`.
    pub fn created(&self, id: Uuid, project: String, issue: Uuid) -> CreatedPersona {
        CreatedPersona {
            id,
            created: true,
            project,
            setup_complete: self.fields.setup_complete(),
            issue_id: Some(issue),
        }
    }
}

/// The live persona of the same name in the project, as loaded when a create inserted
/// nothing (the name is unique per project among live personas).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SameName {
    pub id: Uuid,
    /// The agent the persona is assigned to.
    pub owner: Option<Uuid>,
    pub bio: Option<String>,
    pub voice: Option<String>,
    /// Its latest `persona_new` decision.
    pub issue_id: Option<Uuid>,
}

/// A create that finds the name taken: the calling agent's own persona answers unchanged
/// (a resent create), anyone else's is [`PersonaRefusal::NameTaken`].
pub fn answer_same_name(
    agent_id: Uuid,
    same: SameName,
    project: String,
) -> Result<CreatedPersona, PersonaRefusal> {
    if same.owner != Some(agent_id) {
        return Err(PersonaRefusal::NameTaken);
    }
    Ok(CreatedPersona {
        id: same.id,
        created: false,
        project,
        setup_complete: setup_complete(same.bio.as_deref(), same.voice.as_deref()),
        issue_id: same.issue_id,
    })
}

/// The `persona_images` decision an uploaded image opens when none is open.
pub fn images_decision_for(persona_id: Uuid, name: &str) -> NewDecision {
    NewDecision {
        persona_id: Some(persona_id),
        ..NewDecision::new(DecisionKind::PersonaImages, images_title(name), json!({}))
    }
}

/// How an uploaded image joins the persona's images decision: the open one, or a new one
/// opened with it (one open per persona).
#[derive(Debug, Clone, PartialEq)]
pub enum ImagesDecision {
    Join(Uuid),
    Open(NewDecision),
}

/// The images decision a new image of the persona (`persona_id`, named `name`) waits in,
/// given the open one the adapter found under the persona's lock.
pub fn images_decision(open: Option<Uuid>, persona_id: Uuid, name: &str) -> ImagesDecision {
    match open {
        Some(id) => ImagesDecision::Join(id),
        None => ImagesDecision::Open(images_decision_for(persona_id, name)),
    }
}

impl NewImage {
    /// An uploaded image waits as a draft until a person decides the persona's images.
    pub const LOCK: ImageLock = ImageLock::Draft;

    /// The answer for this image stored as `id`.
    pub fn added(&self, id: Uuid) -> AddedImage {
        AddedImage {
            id,
            created: true,
            lock: NewImage::LOCK,
            character: self.character.clone(),
        }
    }
}

impl AddedImage {
    /// The answer for bytes the persona already has: its stored image `id`, as it stands.
    pub fn found(id: Uuid, lock: ImageLock, character: Option<String>) -> AddedImage {
        AddedImage {
            id,
            created: false,
            lock,
            character,
        }
    }
}

/// A fact of the persona with the proposal's category and label, oldest first.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EarlierFact {
    pub id: Uuid,
    pub value: String,
    pub status: FactStatus,
    pub decision_id: Option<Uuid>,
}

/// An open contradiction decision of the persona with the proposal's label, oldest first.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EarlierContradiction {
    pub decision_id: Uuid,
    pub value: Option<String>,
}

/// What the persona holds that a proposal may repeat.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum EarlierProposals {
    Facts(Vec<EarlierFact>),
    Contradictions(Vec<EarlierContradiction>),
}

/// A new draft fact.
#[derive(Debug, Clone, PartialEq)]
pub struct NewFact {
    pub id: Uuid,
    pub category: FactCategory,
    pub label: String,
    pub value: String,
    pub status: FactStatus,
    pub detail: Option<String>,
    pub post_id: Option<Uuid>,
}

/// What a proposal comes to.
#[derive(Debug, Clone, PartialEq)]
pub enum ProposalPlan {
    /// The same proposal still stands: answered as it is, nothing written.
    Existing(Proposed),
    /// A draft fact and the `fact_proposal` decision a person decides it with (the fact names
    /// the decision once it is opened).
    Fact {
        decision: NewDecision,
        fact: NewFact,
    },
    /// A `contradiction` decision asking what should change.
    Contradiction { decision: NewDecision },
}

impl NewFact {
    /// The answer once the fact and its decision `issue` are written.
    pub fn proposed(&self, issue: Uuid) -> Proposed {
        Proposed {
            id: self.id,
            kind: ProposalKind::Fact,
            created: true,
            issue_id: Some(issue),
            status: self.status.as_str().to_owned(),
        }
    }
}

/// The answer once a contradiction's decision `issue` is opened: the decision is the
/// proposal.
pub fn contradiction_proposed(issue: Uuid) -> Proposed {
    Proposed {
        id: issue,
        kind: ProposalKind::Contradiction,
        created: true,
        issue_id: Some(issue),
        status: DecisionStatus::Open.as_str().to_owned(),
    }
}

/// A fact or contradiction proposed about the persona `persona_name`: the same proposal still
/// standing (a draft or decided fact, an open contradiction) is answered as it is; otherwise a
/// draft fact `fact_id` with its decision, or a contradiction decision.
pub fn plan_proposal(
    p: &Proposal,
    persona_id: Uuid,
    persona_name: &str,
    earlier: EarlierProposals,
    fact_id: Uuid,
) -> ProposalPlan {
    let decision = |kind, detail| NewDecision {
        persona_id: Some(persona_id),
        post_id: p.post_id,
        ..NewDecision::new(kind, p.title(persona_name), detail)
    };
    match earlier {
        EarlierProposals::Facts(rows) => {
            let category = p.fact_category();
            let seen: Vec<Earlier> = rows
                .iter()
                .map(|r| Earlier {
                    kind: ProposalKind::Fact,
                    category: Some(category),
                    label: p.label.clone(),
                    value: r.value.clone(),
                    standing: matches!(r.status, FactStatus::Draft | FactStatus::Decided),
                })
                .collect();
            if let Some(at) = matching_proposal(p, &seen)
                .and_then(|e| seen.iter().position(|x| std::ptr::eq(x, e)))
            {
                let r = &rows[at];
                return ProposalPlan::Existing(Proposed {
                    id: r.id,
                    kind: ProposalKind::Fact,
                    created: false,
                    issue_id: r.decision_id,
                    status: r.status.as_str().to_owned(),
                });
            }
            ProposalPlan::Fact {
                decision: decision(
                    DecisionKind::FactProposal,
                    json!({
                        "fact_id": fact_id, "category": category, "label": p.label,
                        "value": p.value, "detail": p.detail, "post_id": p.post_id,
                    }),
                ),
                fact: NewFact {
                    id: fact_id,
                    category,
                    label: p.label.clone(),
                    value: p.value.clone(),
                    status: FactStatus::Draft,
                    detail: p.detail.clone(),
                    post_id: p.post_id,
                },
            }
        }
        EarlierProposals::Contradictions(rows) => {
            let seen: Vec<Earlier> = rows
                .iter()
                .map(|r| Earlier {
                    kind: ProposalKind::Contradiction,
                    category: None,
                    label: p.label.clone(),
                    value: r.value.clone().unwrap_or_default(),
                    standing: true,
                })
                .collect();
            if let Some(at) = matching_proposal(p, &seen)
                .and_then(|e| seen.iter().position(|x| std::ptr::eq(x, e)))
            {
                let id = rows[at].decision_id;
                return ProposalPlan::Existing(Proposed {
                    id,
                    kind: ProposalKind::Contradiction,
                    created: false,
                    issue_id: Some(id),
                    status: DecisionStatus::Open.as_str().to_owned(),
                });
            }
            ProposalPlan::Contradiction {
                decision: NewDecision {
                    question: Some(CONTRADICTION_QUESTION.to_owned()),
                    options: json!(CONTRADICTION_OPTIONS),
                    ..decision(
                        DecisionKind::Contradiction,
                        json!({
                            "label": p.label, "value": p.value, "detail": p.detail,
                            "post_id": p.post_id,
                        }),
                    )
                },
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const PERSONA: Uuid = Uuid::from_u128(1);
    const FACT: Uuid = Uuid::from_u128(2);

    #[test]
    fn a_created_persona_is_pending_and_answers_its_decision() {
        assert_eq!(NewPersona::STATUS, PersonaStatus::Pending);
        let mut new = NewPersona {
            fields: crate::rules::PersonaFields {
                name: "Mia".into(),
                bio: Some("Taipei skincare".into()),
                ..Default::default()
            },
            project: None,
        };
        let issue = Uuid::from_u128(3);
        assert_eq!(
            new.created(PERSONA, "beauty".into(), issue),
            CreatedPersona {
                id: PERSONA,
                created: true,
                project: "beauty".into(),
                setup_complete: false,
                issue_id: Some(issue),
            }
        );
        new.fields.voice = Some("warm".into());
        assert!(new.created(PERSONA, "beauty".into(), issue).setup_complete);
    }

    #[test]
    fn bytes_already_stored_answer_the_stored_image_as_it_stands() {
        let id = Uuid::from_u128(4);
        let found = AddedImage::found(id, ImageLock::Approved, Some("momo".into()));
        assert_eq!(
            found,
            AddedImage {
                id,
                created: false,
                lock: ImageLock::Approved,
                character: Some("momo".into()),
            }
        );
    }

    #[test]
    fn a_resent_create_answers_the_agents_own_persona_and_refuses_anothers() {
        let agent = Uuid::from_u128(7);
        let same = SameName {
            id: PERSONA,
            owner: Some(agent),
            bio: Some("Taipei skincare".into()),
            voice: None,
            issue_id: Some(Uuid::from_u128(3)),
        };
        assert_eq!(
            answer_same_name(agent, same.clone(), "beauty".into()),
            Ok(CreatedPersona {
                id: PERSONA,
                created: false,
                project: "beauty".into(),
                setup_complete: false,
                issue_id: Some(Uuid::from_u128(3)),
            })
        );
        let unassigned = SameName {
            owner: None,
            ..same.clone()
        };
        for other in [same, unassigned] {
            assert_eq!(
                answer_same_name(Uuid::from_u128(8), other, "beauty".into()),
                Err(PersonaRefusal::NameTaken)
            );
        }
    }

    fn fact(value: &str) -> Proposal {
        Proposal::new(
            ProposalKind::Fact,
            Some(FactCategory::Home),
            "hometown".into(),
            value.into(),
            None,
            Some(Uuid::from_u128(9)),
        )
        .unwrap()
    }

    #[test]
    fn a_new_fact_is_a_draft_with_its_decision() {
        let plan = plan_proposal(
            &fact("Mei"),
            PERSONA,
            "Lin",
            EarlierProposals::Facts(vec![]),
            FACT,
        );
        let ProposalPlan::Fact { decision, fact } = &plan else {
            panic!("a new fact");
        };
        assert_eq!(decision.kind, DecisionKind::FactProposal);
        assert_eq!(decision.persona_id, Some(PERSONA));
        assert_eq!(decision.post_id, Some(Uuid::from_u128(9)));
        assert_eq!(decision.title, "New fact about Lin to decide: hometown");
        assert_eq!(decision.detail["fact_id"], FACT.to_string());
        assert_eq!(decision.detail["category"], "home");
        assert_eq!(decision.options, json!([]));
        assert_eq!((fact.id, fact.status), (FACT, FactStatus::Draft));
        let proposed = fact.proposed(Uuid::from_u128(5));
        assert!(proposed.created);
        assert_eq!(proposed.issue_id, Some(Uuid::from_u128(5)));
        assert_eq!(proposed.status, "draft");
    }

    #[test]
    fn a_fact_still_standing_answers_the_resend_and_a_refused_one_does_not() {
        let earlier = |status| {
            EarlierProposals::Facts(vec![EarlierFact {
                id: Uuid::from_u128(7),
                value: "Mei".into(),
                status,
                decision_id: Some(Uuid::from_u128(8)),
            }])
        };
        let plan = plan_proposal(
            &fact(" Mei "),
            PERSONA,
            "Lin",
            earlier(FactStatus::Decided),
            FACT,
        );
        assert_eq!(
            plan,
            ProposalPlan::Existing(Proposed {
                id: Uuid::from_u128(7),
                kind: ProposalKind::Fact,
                created: false,
                issue_id: Some(Uuid::from_u128(8)),
                status: "decided".into(),
            })
        );
        let plan = plan_proposal(
            &fact("Mei"),
            PERSONA,
            "Lin",
            earlier(FactStatus::Refused),
            FACT,
        );
        assert!(matches!(plan, ProposalPlan::Fact { .. }));
    }

    #[test]
    fn a_contradiction_asks_what_should_change_unless_the_same_one_is_open() {
        let p = Proposal::new(
            ProposalKind::Contradiction,
            None,
            "age".into(),
            "the post says 30".into(),
            None,
            None,
        )
        .unwrap();
        let plan = plan_proposal(
            &p,
            PERSONA,
            "Lin",
            EarlierProposals::Contradictions(vec![]),
            FACT,
        );
        let ProposalPlan::Contradiction { decision } = &plan else {
            panic!("a new contradiction");
        };
        assert_eq!(decision.kind, DecisionKind::Contradiction);
        assert_eq!(decision.question.as_deref(), Some(CONTRADICTION_QUESTION));
        assert_eq!(
            decision.options,
            json!(["change_bio", "delete_post", "keep"])
        );
        let proposed = contradiction_proposed(Uuid::from_u128(6));
        assert_eq!(
            (proposed.id, proposed.status.as_str()),
            (Uuid::from_u128(6), "open")
        );
        let open = EarlierProposals::Contradictions(vec![EarlierContradiction {
            decision_id: Uuid::from_u128(6),
            value: Some("the post says 30".into()),
        }]);
        let again = plan_proposal(&p, PERSONA, "Lin", open, FACT);
        assert!(matches!(
            again,
            ProposalPlan::Existing(Proposed { created: false, .. })
        ));
    }

    #[test]
    fn a_new_persona_and_its_images_open_their_decisions() {
        let d = new_persona_decision(PERSONA, "Lin", "Tea");
        assert_eq!(d.kind, DecisionKind::PersonaNew);
        assert_eq!(d.title, "New persona to confirm: Lin");
        assert_eq!(d.detail, json!({"project": "Tea"}));
        let d = images_decision_for(PERSONA, "Lin");
        assert_eq!(d.kind, DecisionKind::PersonaImages);
        assert_eq!(d.title, "Images of Lin awaiting approval");
        assert_eq!(d.status(), DecisionStatus::Open);
    }

    #[test]
    fn an_image_joins_the_open_decision_or_opens_one_and_waits_as_a_draft() {
        let open = Uuid::from_u128(9);
        assert_eq!(
            images_decision(Some(open), PERSONA, "Lin"),
            ImagesDecision::Join(open)
        );
        assert_eq!(
            images_decision(None, PERSONA, "Lin"),
            ImagesDecision::Open(images_decision_for(PERSONA, "Lin"))
        );
        let image = NewImage {
            sha256: "ab".into(),
            mime_type: "image/png".into(),
            bytes: 3,
            width: 1,
            height: 1,
            storage_key: "k".into(),
            thumb_key: "t".into(),
            thumb_mime: "image/webp".into(),
            category: crate::rules::ImageCategory::Portrait,
            caption: None,
            prompt: None,
            character: Some("A".into()),
        };
        let added = image.added(open);
        assert_eq!(added.id, open);
        assert!(added.created);
        assert_eq!(added.lock, crate::rules::ImageLock::Draft);
        assert_eq!(added.character.as_deref(), Some("A"));
    }
}
