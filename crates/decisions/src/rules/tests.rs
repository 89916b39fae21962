use super::*;
use DecisionKind as K;

fn current(kind: K, options: &[&str]) -> Current {
    Current {
        kind,
        status: DecisionStatus::Open,
        options: options.iter().map(|s| s.to_string()).collect(),
        decided_move: None,
        post_id: None,
        images: Vec::new(),
        card: None,
        relayed_by_assignee: false,
        relayed: false,
    }
}

fn mv(action: Action, option: Option<&str>) -> Move {
    Move::new(action, option.map(str::to_owned), None, None)
}

fn applied(status: DecisionStatus, effect: Effect) -> Result<Plan, DecisionRefusal> {
    Ok(Plan::Apply { status, effect })
}

const BAN: &[&str] = &[OPEN_NEW_GENERATION, KEEP_CLOSED];
const CONTRA: &[&str] = &[CHANGE_BIO, DELETE_POST, KEEP];

#[test]
fn a_ban_is_chosen_never_resolved() {
    let c = current(K::AccountBanned, BAN);
    assert_eq!(
        plan(&c, &mv(Action::Choose, Some(OPEN_NEW_GENERATION))),
        applied(DecisionStatus::Resolved, Effect::OpenGeneration)
    );
    assert_eq!(
        plan(&c, &mv(Action::Choose, Some(KEEP_CLOSED))),
        applied(DecisionStatus::Resolved, Effect::Nothing)
    );
    assert_eq!(
        plan(&c, &mv(Action::Resolve, None)),
        Err(DecisionRefusal::AsksQuestion(K::AccountBanned))
    );
    assert!(matches!(
        plan(&c, &mv(Action::Choose, Some("reopen"))),
        Err(DecisionRefusal::UnknownOption { .. })
    ));
    assert_eq!(
        plan(&c, &mv(Action::Dismiss, None)),
        applied(DecisionStatus::Dismissed, Effect::Nothing)
    );
}

#[test]
fn kinds_without_options_refuse_choose_and_options() {
    let c = current(K::PersonaNew, &[]);
    assert_eq!(
        plan(&c, &mv(Action::Choose, Some("x"))),
        Err(DecisionRefusal::NoOptions(K::PersonaNew))
    );
    assert_eq!(
        plan(&c, &mv(Action::Resolve, Some("x"))),
        Err(DecisionRefusal::OptionWithoutChoose)
    );
    assert_eq!(
        plan(&c, &mv(Action::Resolve, None)),
        applied(DecisionStatus::Resolved, Effect::ConfirmPersona)
    );
    assert_eq!(
        plan(&c, &mv(Action::Dismiss, None)),
        applied(DecisionStatus::Dismissed, Effect::RetirePersona)
    );
    let f = current(K::FactProposal, &[]);
    assert_eq!(
        plan(&f, &mv(Action::Resolve, None)),
        applied(DecisionStatus::Resolved, Effect::DecideFact)
    );
    assert_eq!(
        plan(&f, &mv(Action::Dismiss, None)),
        applied(DecisionStatus::Dismissed, Effect::RefuseFact)
    );
}

#[test]
fn a_decided_decision_answers_only_the_same_move() {
    let mut c = current(K::AccountBanned, BAN);
    let m = mv(Action::Choose, Some(KEEP_CLOSED));
    c.status = DecisionStatus::Resolved;
    c.decided_move = Some(m.to_json());
    assert_eq!(plan(&c, &m), Ok(Plan::Unchanged));
    assert_eq!(
        plan(&c, &mv(Action::Choose, Some(OPEN_NEW_GENERATION))),
        Err(DecisionRefusal::AlreadyDecided(DecisionStatus::Resolved))
    );
    assert_eq!(
        plan(&c, &mv(Action::Dismiss, None)),
        Err(DecisionRefusal::AlreadyDecided(DecisionStatus::Resolved))
    );
}

#[test]
fn a_contradiction_opens_its_follow_up() {
    let mut c = current(K::Contradiction, CONTRA);
    assert_eq!(
        plan(&c, &mv(Action::Choose, Some(CHANGE_BIO))),
        applied(
            DecisionStatus::Resolved,
            Effect::OpenFollowUp { kind: K::ChangeBio }
        )
    );
    assert_eq!(
        plan(&c, &mv(Action::Choose, Some(DELETE_POST))),
        Err(DecisionRefusal::NoPost)
    );
    c.post_id = Some(Uuid::nil());
    assert_eq!(
        plan(&c, &mv(Action::Choose, Some(DELETE_POST))),
        applied(
            DecisionStatus::Resolved,
            Effect::OpenFollowUp {
                kind: K::DeletePost
            }
        )
    );
    assert_eq!(
        plan(&c, &mv(Action::Choose, Some(KEEP))),
        applied(DecisionStatus::Resolved, Effect::Nothing)
    );
}

#[test]
fn images_are_approved_refused_or_some() {
    let (a, b) = (Uuid::from_u128(1), Uuid::from_u128(2));
    let mut c = current(K::PersonaImages, &[]);
    c.images = vec![
        ImageRef {
            id: a,
            category: "avatar".into(),
        },
        ImageRef {
            id: b,
            category: "pet".into(),
        },
    ];
    let with = |action, option: Option<&str>, ids: Option<Vec<Uuid>>, avatar| {
        Move::new(action, option.map(str::to_owned), ids, avatar)
    };
    assert_eq!(
        plan(&c, &with(Action::Resolve, None, None, Some(a))),
        applied(
            DecisionStatus::Resolved,
            Effect::Images {
                approved: vec![a, b],
                refused: vec![],
                avatar: Some(a)
            }
        )
    );
    assert_eq!(
        plan(&c, &with(Action::Resolve, None, None, Some(b))),
        Err(DecisionRefusal::AvatarNotApproved(b))
    );
    assert_eq!(
        plan(&c, &with(Action::Dismiss, None, None, None)),
        applied(
            DecisionStatus::Dismissed,
            Effect::Images {
                approved: vec![],
                refused: vec![a, b],
                avatar: None
            }
        )
    );
    assert_eq!(
        plan(&c, &with(Action::Dismiss, None, None, Some(a))),
        Err(DecisionRefusal::SetAvatarNotExpected)
    );
    assert_eq!(
        plan(
            &c,
            &with(Action::Choose, Some(APPROVE_SOME), Some(vec![b]), None)
        ),
        applied(
            DecisionStatus::Resolved,
            Effect::Images {
                approved: vec![b],
                refused: vec![a],
                avatar: None
            }
        )
    );
    assert_eq!(
        plan(
            &c,
            &with(Action::Choose, Some(APPROVE_SOME), Some(vec![b]), Some(a))
        ),
        Err(DecisionRefusal::AvatarNotApproved(a))
    );
    assert_eq!(
        plan(&c, &with(Action::Choose, Some(APPROVE_SOME), None, None)),
        Err(DecisionRefusal::ImageIdsMissing)
    );
    let other = Uuid::from_u128(9);
    assert_eq!(
        plan(
            &c,
            &with(Action::Choose, Some(APPROVE_SOME), Some(vec![other]), None)
        ),
        Err(DecisionRefusal::UnknownImage(other))
    );
    assert_eq!(
        plan(&c, &with(Action::Resolve, None, Some(vec![a]), None)),
        Err(DecisionRefusal::ImageIdsNotExpected)
    );
    // The same images in another order are the same move.
    let first = with(Action::Choose, Some(APPROVE_SOME), Some(vec![b, a]), None);
    c.status = DecisionStatus::Resolved;
    c.decided_move = Some(first.to_json());
    assert_eq!(
        plan(
            &c,
            &with(Action::Choose, Some(APPROVE_SOME), Some(vec![a, b]), None)
        ),
        Ok(Plan::Unchanged)
    );
}

#[test]
fn set_avatar_belongs_to_images_only() {
    let c = current(K::PersonaNew, &[]);
    let m = Move::new(Action::Resolve, None, None, Some(Uuid::nil()));
    assert_eq!(plan(&c, &m), Err(DecisionRefusal::SetAvatarNotExpected));
}

#[test]
fn a_person_confirms_a_handled_follow_up_or_cancels_it() {
    use TaskStatus as T;
    for k in [K::ChangeAvatar, K::ChangeBio, K::DeletePost] {
        let mut c = current(k, &[]);
        c.card = Some(T::PendingConfirmation);
        c.status = DecisionStatus::Handled;
        assert_eq!(
            plan(&c, &mv(Action::Resolve, None)),
            applied(DecisionStatus::Resolved, Effect::FinishCard(T::Done))
        );
        assert_eq!(
            plan(&c, &mv(Action::Dismiss, None)),
            applied(DecisionStatus::Dismissed, Effect::FinishCard(T::Cancelled))
        );
        // Nobody reported it done yet: it cannot be confirmed, only cancelled.
        c.status = DecisionStatus::Open;
        c.card = Some(T::PendingPickup);
        assert_eq!(
            plan(&c, &mv(Action::Resolve, None)),
            Err(DecisionRefusal::NotReportedYet)
        );
        assert_eq!(
            plan(&c, &mv(Action::Dismiss, None)),
            applied(DecisionStatus::Dismissed, Effect::FinishCard(T::Cancelled))
        );
        c.card = Some(T::InProgress);
        assert_eq!(
            plan(&c, &mv(Action::Dismiss, None)),
            applied(DecisionStatus::Dismissed, Effect::FinishCard(T::Cancelled))
        );
    }
}

#[test]
fn only_an_ad_change_is_reached_by_the_agent_that_opened_it() {
    for kind in K::ALL {
        assert_eq!(kind.seen_by_its_opener(), kind == K::AdChange, "{kind}");
    }
}

#[test]
fn who_sees_a_decision() {
    use crate::ports::DecisionScope as S;
    use fleetdesk_kernel::AgentRef;
    let (org, ws, me, other) = (
        Uuid::from_u128(1),
        Uuid::from_u128(2),
        Uuid::from_u128(3),
        Uuid::from_u128(4),
    );
    let agent = S::Agent(AgentRef {
        agent_id: me,
        workspace_id: ws,
        organization_id: org,
    });
    let about = |persona_agent, kind, opened_by_agent| Whereabouts {
        organization_id: org,
        workspace_id: ws,
        kind,
        persona_agent,
        opened_by_agent,
    };
    let mine = about(Some(Some(me)), K::ChangeBio, None);
    assert!(S::Organization(None).sees(&mine));
    assert!(S::Organization(Some(org)).sees(&mine));
    assert!(!S::Organization(Some(other)).sees(&mine));
    assert!(agent.sees(&mine));
    // Another agent's persona, a persona nobody runs, another workspace.
    assert!(!agent.sees(&about(Some(Some(other)), K::ChangeBio, None)));
    assert!(!agent.sees(&about(Some(None), K::ChangeBio, None)));
    assert!(!agent.sees(&Whereabouts {
        workspace_id: other,
        ..mine
    }));
    // About no persona: only an ad change, and only by the agent that opened it.
    assert!(agent.sees(&about(None, K::AdChange, Some(me))));
    assert!(!agent.sees(&about(None, K::AdChange, Some(other))));
    assert!(!agent.sees(&about(None, K::AdChange, None)));
    assert!(!agent.sees(&about(None, K::Contradiction, Some(me))));
    // A persona's decision the agent opened is still seen through the persona only.
    assert!(!agent.sees(&about(Some(Some(other)), K::AdChange, Some(me))));
    // A move relayed by the agent the card is assigned to; a person's never is.
    assert!(agent.relays_as_assignee(Some(me)));
    assert!(!agent.relays_as_assignee(Some(other)));
    assert!(!agent.relays_as_assignee(None));
    assert!(!S::Organization(Some(org)).relays_as_assignee(Some(me)));
}

#[test]
fn an_ad_change_is_approved_by_a_person_and_refused_by_anyone() {
    let mut c = current(K::AdChange, &[]);
    assert_eq!(
        plan(&c, &mv(Action::Resolve, None)),
        applied(DecisionStatus::Resolved, Effect::ApproveAdChange)
    );
    assert_eq!(
        plan(&c, &mv(Action::Dismiss, None)),
        applied(DecisionStatus::Dismissed, Effect::RefuseAdChange)
    );
    assert_eq!(
        plan(&c, &mv(Action::Choose, Some("yes"))),
        Err(DecisionRefusal::NoOptions(K::AdChange))
    );
    c.relayed = true;
    assert_eq!(
        plan(&c, &mv(Action::Resolve, None)),
        Err(DecisionRefusal::ApprovedInPerson)
    );
    assert_eq!(
        plan(&c, &mv(Action::Dismiss, None)),
        applied(DecisionStatus::Dismissed, Effect::RefuseAdChange)
    );
}

#[test]
fn a_wiki_draft_resolved_becomes_canon_and_dismissed_rejected() {
    let c = current(K::WikiDraft, &[]);
    assert_eq!(
        plan(&c, &mv(Action::Resolve, None)),
        applied(DecisionStatus::Resolved, Effect::CanonizeWiki)
    );
    assert_eq!(
        plan(&c, &mv(Action::Dismiss, None)),
        applied(DecisionStatus::Dismissed, Effect::RejectWiki)
    );
    assert_eq!(
        plan(&c, &mv(Action::Choose, Some("keep"))),
        Err(DecisionRefusal::NoOptions(K::WikiDraft))
    );
    let mut done = c.clone();
    done.status = DecisionStatus::Resolved;
    done.decided_move = Some(mv(Action::Resolve, None).to_json());
    assert_eq!(plan(&done, &mv(Action::Resolve, None)), Ok(Plan::Unchanged));
    assert_eq!(
        plan(&done, &mv(Action::Dismiss, None)),
        Err(DecisionRefusal::AlreadyDecided(DecisionStatus::Resolved))
    );
}

#[test]
fn a_card_moves_only_from_where_it_may() {
    use TaskStatus as T;
    let mut c = current(K::ChangeBio, &[]);
    c.status = DecisionStatus::Handled;
    for card in [
        T::PendingPickup,
        T::InProgress,
        T::Done,
        T::Failed,
        T::Cancelled,
    ] {
        c.card = Some(card);
        assert_eq!(
            plan(&c, &mv(Action::Resolve, None)),
            Err(DecisionRefusal::CardIs(card, T::Done)),
            "{card}"
        );
    }
    for card in [T::Done, T::Failed, T::Cancelled] {
        c.card = Some(card);
        assert_eq!(
            plan(&c, &mv(Action::Dismiss, None)),
            Err(DecisionRefusal::CardIs(card, T::Cancelled)),
            "{card}"
        );
    }
    assert_eq!(card_moves_from(T::Done), &[T::PendingConfirmation]);
    assert_eq!(
        card_moves_from(T::Cancelled),
        &[T::PendingPickup, T::InProgress, T::PendingConfirmation]
    );
}

#[test]
fn the_assignee_never_relays_its_own_confirmation() {
    let mut c = current(K::ChangeAvatar, &[]);
    c.status = DecisionStatus::Handled;
    c.card = Some(TaskStatus::PendingConfirmation);
    c.relayed_by_assignee = true;
    assert_eq!(
        plan(&c, &mv(Action::Resolve, None)),
        Err(DecisionRefusal::OwnCard)
    );
    // Cancelling is not a confirmation.
    assert_eq!(
        plan(&c, &mv(Action::Dismiss, None)),
        applied(
            DecisionStatus::Dismissed,
            Effect::FinishCard(TaskStatus::Cancelled)
        )
    );
}

#[test]
fn only_follow_ups_are_done_and_the_same_result_is_unchanged() {
    use DecisionStatus as S;
    assert_eq!(
        plan_done(K::ChangeBio, S::Open, None, "done"),
        Ok(DonePlan::Handle)
    );
    assert_eq!(
        plan_done(K::ChangeBio, S::Handled, Some("done"), "done"),
        Ok(DonePlan::Unchanged)
    );
    assert_eq!(
        plan_done(K::ChangeBio, S::Handled, Some("done"), "other"),
        Err(DecisionRefusal::OtherResult)
    );
    assert_eq!(
        plan_done(K::DeletePost, S::Resolved, None, "done"),
        Err(DecisionRefusal::AlreadyDecided(S::Resolved))
    );
    // Confirmed by a person: the same result resent is still unchanged, another refused.
    assert_eq!(
        plan_done(K::DeletePost, S::Resolved, Some("done"), "done"),
        Ok(DonePlan::Unchanged)
    );
    assert_eq!(
        plan_done(K::DeletePost, S::Resolved, Some("done"), "other"),
        Err(DecisionRefusal::AlreadyDecided(S::Resolved))
    );
    assert_eq!(
        plan_done(K::PersonaNew, S::Open, None, "done"),
        Err(DecisionRefusal::NotFollowUp(K::PersonaNew))
    );
}

#[test]
fn the_service_dismisses_a_waiting_decision_with_its_note_at_one_time() {
    let at: jiff::Timestamp = "2026-11-29T10:00:00.5Z".parse().unwrap();
    let d = dismissed_by_service("expired", at);
    assert_eq!(d.status, DecisionStatus::Dismissed);
    assert_eq!(d.from, [DecisionStatus::Open, DecisionStatus::Handled]);
    assert_eq!(
        d.decided_by.to_json(),
        serde_json::json!({"type": "service", "name": "fleetdesk"})
    );
    assert_eq!(
        d.notes,
        serde_json::json!([{"by": "fleetdesk", "text": "expired", "at": "2026-11-29T10:00:00Z"}])
    );
    assert_eq!(d.at, at);
}

#[test]
fn the_follow_up_kinds_are_the_changes_an_agent_carries_out() {
    assert_eq!(
        follow_up_kinds(),
        ["change_avatar", "change_bio", "delete_post"]
    );
}

#[test]
fn a_decided_move_tells_the_persona_s_agent_else_the_opener_and_names_the_choice() {
    use fleetdesk_kernel::events::EventBody;
    let (id, ws) = (Uuid::from_u128(1), Uuid::from_u128(2));
    let (persona_agent, opener) = (Uuid::from_u128(3), Uuid::from_u128(4));
    let chosen = mv(Action::Choose, Some(KEEP_CLOSED));
    let event = chosen.decided_event(
        id,
        ws,
        (K::AccountBanned, "TW-T001 banned"),
        DecisionStatus::Resolved,
        (Some(persona_agent), Some(opener)),
    );
    assert_eq!((event.workspace_id, event.object_id), (ws, id));
    assert_eq!(event.agent_id, Some(persona_agent));
    let EventBody::DecisionDecided(change) = &event.body else {
        panic!("{event:?}");
    };
    assert_eq!(change.kind, K::AccountBanned);
    assert_eq!(change.title, "TW-T001 banned");
    assert_eq!(change.status, DecisionStatus::Resolved);
    assert_eq!(change.choice.as_deref(), Some(KEEP_CLOSED));
    let by_opener = mv(Action::Dismiss, None).decided_event(
        id,
        ws,
        (K::AdChange, "Pause ad"),
        DecisionStatus::Dismissed,
        (None, Some(opener)),
    );
    assert_eq!(by_opener.agent_id, Some(opener));
    let EventBody::DecisionDecided(change) = by_opener.body else {
        unreachable!()
    };
    assert_eq!(change.choice, None);
}
