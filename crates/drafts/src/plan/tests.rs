use super::*;
use crate::ports::DraftContent;
use fleetdesk_accounts::ports::{CodeRef, LookupError};
use fleetdesk_ads::pick::PickStatus;
use fleetdesk_kernel::code::AccountCode;
use fleetdesk_kernel::media::CapError;

fn id(n: u128) -> Uuid {
    Uuid::from_u128(n)
}

const PROJECT: u128 = 100;
const SLOT: u128 = 200;
const WORKSPACE: u128 = 600;
const AGENT: u128 = 700;

fn account(state: Option<AccountState>) -> AccountFact {
    AccountFact {
        slot: SlotName {
            slot_id: id(SLOT),
            code: "TW-T001".into(),
            legacy_code: None,
            platform: Platform::Threads,
            mine: true,
        },
        zone: TimeZone::get("Asia/Taipei").unwrap(),
        workspace_id: id(WORKSPACE),
        persona_id: id(300),
        persona_agent: Some(id(AGENT)),
        project_id: id(PROJECT),
        generation_id: Some(id(400)),
        state,
    }
}

fn draft(submit: bool) -> NewDraft {
    NewDraft {
        code: CodeRef {
            code: AccountCode::parse("TW-T001").unwrap(),
            platform: None,
        },
        body: "hello".into(),
        topic: None,
        sponsored: false,
        planned_at: None,
        submit,
        content: DraftContent::default(),
        pick: None,
    }
}

fn facts(state: Option<AccountState>) -> SubmitFacts {
    SubmitFacts {
        account: account(state),
        cast: vec![CastMember {
            code: "momo".into(),
            name: "Momo".into(),
        }],
        uploads: Vec::new(),
        library: Vec::new(),
        inline: Vec::new(),
        duplicate: None,
        pick: None,
    }
}

fn image(n: u128) -> MediaRef {
    MediaRef {
        id: id(n),
        kind: MediaKind::Image,
    }
}

fn item(n: u128, project: Option<u128>) -> ItemFact {
    ItemFact {
        id: id(n),
        media: Some(image(n)),
        archived: false,
        project_id: project.map(id),
    }
}

fn post(status: PostStatus) -> PostFact {
    PostFact {
        id: id(500),
        status,
        body: "hello".into(),
        returned_body: None,
        awaiting_rewrite: false,
        rewrite_answered: false,
        project_id: id(PROJECT),
        workspace_id: id(WORKSPACE),
        persona_id: id(300),
        persona_agent: Some(id(AGENT)),
        slot_id: id(SLOT),
        planned_at: None,
        characters: Vec::new(),
        code: "TW-T001".into(),
        platform: Platform::Threads,
        state: Some(AccountState::Active),
        mine: true,
        media: vec![image(1)],
    }
}

fn new_post(plan: Result<SubmitPlan, DraftRefusal>) -> NewPost {
    match plan {
        Ok(SubmitPlan::New(p)) => *p,
        other => panic!("expected a new post, got {other:?}"),
    }
}

fn resend(plan: Result<SubmitPlan, DraftRefusal>) -> PostChange {
    match plan {
        Ok(SubmitPlan::Resend(c)) => *c,
        other => panic!("expected a resend, got {other:?}"),
    }
}

fn refusal<T: std::fmt::Debug>(plan: Result<T, DraftRefusal>) -> DraftRefusal {
    plan.expect_err("expected a refusal")
}

#[test]
fn a_submit_to_an_active_account_goes_to_internal_review_and_a_save_stays_a_draft() {
    let mut d = draft(true);
    d.content.note = Some("see the photo".into());
    let mut f = facts(Some(AccountState::Active));
    f.inline = vec![image(7)];
    let p = new_post(plan_submit(&d, f));
    assert_eq!(p.status, PostStatus::InternalReview);
    assert_eq!(p.stocked, None);
    assert_eq!(p.media, vec![image(7)]);
    assert_eq!(p.body_key, body_key("hello"));
    assert_eq!(
        p.events,
        vec![
            Event::Landed {
                status: PostStatus::InternalReview,
                reason: None,
                media: vec![id(7)],
            },
            Event::Note("see the photo".into()),
        ]
    );
    assert_eq!(p.events[0].action(), "submitted");
    assert_eq!(p.events[0].detail(), json!({"media": [id(7)]}));
    assert_eq!(p.events[1].action(), "added note");
    assert_eq!(p.events[1].reason(), Some("see the photo"));
    assert_eq!((p.view.images, p.view.videos), (1, 0));
    assert_eq!(p.view.stocked_because, None);

    let saved = new_post(plan_submit(&draft(false), facts(None)));
    assert_eq!(saved.status, PostStatus::Draft);
    assert_eq!(saved.events[0].action(), "saved_draft");
}

#[test]
fn a_submit_to_an_account_not_active_is_stocked_with_the_state_as_its_reason() {
    let p = new_post(plan_submit(&draft(true), facts(Some(AccountState::Banned))));
    assert_eq!(p.status, PostStatus::Stocked);
    let stocked = p.stocked.clone().expect("stocked");
    assert_eq!(stocked.reason, "account TW-T001 is banned, not active");
    assert_eq!(stocked.from, PostStatus::InternalReview);
    assert_eq!(p.events[0].action(), "stocked");
    assert_eq!(p.events[0].reason(), Some(stocked.reason.as_str()));
    assert_eq!(p.view.stocked_because, Some(Some(stocked.reason)));

    let p = new_post(plan_submit(&draft(true), facts(None)));
    assert_eq!(
        p.stocked.map(|s| s.reason),
        Some("account TW-T001 has no live account".into())
    );
}

#[test]
fn a_planned_time_without_a_zone_is_read_in_the_markets_zone() {
    let mut d = draft(true);
    d.planned_at = Some("2026-12-01 09:30".parse().unwrap());
    let p = new_post(plan_submit(&d, facts(Some(AccountState::Active))));
    let expected: Timestamp = "2026-12-01T01:30:00Z".parse().unwrap();
    assert_eq!(p.planned_at, Some(expected));
    assert_eq!(p.view.planned_at, Some(expected));
}

#[test]
fn the_checks_run_in_order_planned_time_characters_items_pick_caps() {
    let mut d = draft(true);
    // 02:30 does not exist in New York on the day its clocks go forward.
    d.planned_at = Some("2026-03-08 02:30".parse().unwrap());
    d.content.characters = Some(vec![CharacterPick {
        code: "nobody".into(),
        pov: false,
    }]);
    d.content.upload_ids = vec![id(9)];
    d.pick = Some(PickNumber(3));
    let f = || facts(Some(AccountState::Active));
    let mut in_new_york = f();
    in_new_york.account.zone = TimeZone::get("America/New_York").unwrap();
    assert!(matches!(
        refusal(plan_submit(&d, in_new_york)),
        DraftRefusal::PlannedAt(_)
    ));
    d.planned_at = None;
    assert!(matches!(
        refusal(plan_submit(&d, f())),
        DraftRefusal::Character(Some(0), _)
    ));
    d.content.characters = Some(Vec::new());
    assert_eq!(
        refusal(plan_submit(&d, f())),
        DraftRefusal::Item {
            field: "upload_ids",
            index: 0,
            id: id(9),
            problem: ItemProblem::Unknown,
        }
    );
    d.content.upload_ids.clear();
    assert_eq!(
        refusal(plan_submit(&d, f())),
        DraftRefusal::Pick(PickProblem::Unknown(PickNumber(3)))
    );
    d.pick = None;
    let mut five = f();
    five.inline = (1..=5).map(image).collect();
    assert!(matches!(
        refusal(plan_submit(&d, five)),
        DraftRefusal::Caps(CapError::TooMany { cap: 4, .. })
    ));
}

#[test]
fn items_are_refused_unknown_unfinished_archived_or_of_another_project() {
    let project = id(PROJECT);
    let ids = [id(1), id(2)];
    let found = [item(1, None), item(2, Some(PROJECT))];
    assert_eq!(
        resolve_items(project, (&ids, &found), (&[], &[])),
        Ok(vec![image(1), image(2)])
    );
    let problem =
        |found: ItemFact| match resolve_items(project, (&[], &[]), (&[found.id], &[found])) {
            Err(DraftRefusal::Item { field, problem, .. }) => {
                assert_eq!(field, "media_ids");
                Some(problem)
            }
            Ok(_) => None,
            Err(other) => panic!("{other:?}"),
        };
    assert_eq!(
        problem(ItemFact {
            media: None,
            ..item(3, None)
        }),
        Some(ItemProblem::NotFinished)
    );
    assert_eq!(
        problem(ItemFact {
            archived: true,
            ..item(3, None)
        }),
        Some(ItemProblem::Archived)
    );
    assert_eq!(problem(item(3, Some(999))), Some(ItemProblem::OtherProject));
    // The first bad one refuses, with its index.
    let refused = resolve_items(project, (&[id(1), id(8)], &found), (&[], &[]));
    assert!(matches!(
        refused,
        Err(DraftRefusal::Item {
            field: "upload_ids",
            index: 1,
            ..
        })
    ));
}

#[test]
fn a_resend_of_the_same_body_answers_the_original_with_what_it_adds() {
    let mut d = draft(true);
    d.content.characters = Some(vec![CharacterPick {
        code: "momo".into(),
        pov: true,
    }]);
    let mut f = facts(Some(AccountState::Active));
    f.duplicate = Some(post(PostStatus::InternalReview));
    f.inline = vec![image(1), image(2)];
    let c = resend(plan_submit(&d, f));
    assert_eq!(c.post_id, id(500));
    // Image 1 is on the post already.
    assert_eq!(c.added, vec![image(2)]);
    assert!(c.view.duplicate);
    assert_eq!(
        (c.view.images, c.view.status),
        (2, PostStatus::InternalReview)
    );
    let set = vec![Character {
        code: "momo".into(),
        name: "Momo".into(),
        pov: true,
    }];
    assert_eq!(c.characters, Some(set.clone()));
    assert_eq!(c.view.characters, set);
    assert_eq!(
        c.events.iter().map(Event::action).collect::<Vec<_>>(),
        ["resubmitted_duplicate", "characters_set"]
    );

    // Past internal review the media are closed; the same resend without media is fine.
    let mut f = facts(Some(AccountState::Active));
    f.duplicate = Some(post(PostStatus::Scheduled));
    f.inline = vec![image(2)];
    assert_eq!(
        refusal(plan_submit(&draft(true), f.clone())),
        DraftRefusal::MediaClosed(PostStatus::Scheduled)
    );
    f.inline.clear();
    assert!(resend(plan_submit(&draft(true), f)).added.is_empty());
}

fn pick(status: PickStatus, post: Option<u128>) -> PickFact {
    PickFact {
        id: id(600),
        state: PickState {
            number: PickNumber(3),
            status,
            account_id: id(SLOT),
            code: "TW-T001".into(),
            post_id: post.map(id),
        },
        other_on_duplicate: None,
    }
}

#[test]
fn a_pick_is_linked_once_and_judged_against_the_post_a_resend_found() {
    let mut d = draft(true);
    d.pick = Some(PickNumber(3));
    let mut f = facts(Some(AccountState::Active));
    f.pick = Some(pick(PickStatus::Open, None));
    let p = new_post(plan_submit(&d, f.clone()));
    assert_eq!(p.pick, Some(id(600)));
    assert!(p.sponsored);

    // Drafted by the post the resend found: nothing to link again.
    f.pick = Some(pick(PickStatus::Drafted, Some(500)));
    f.duplicate = Some(post(PostStatus::Draft));
    assert_eq!(resend(plan_submit(&d, f.clone())).pick, None);
    // Drafted by another post.
    f.duplicate = None;
    assert!(matches!(
        refusal(plan_submit(&d, f.clone())),
        DraftRefusal::Pick(PickProblem::DraftedBy { .. })
    ));
    // An open pick for a post that carries another one.
    let mut open = pick(PickStatus::Open, None);
    open.other_on_duplicate = Some(PickNumber(2));
    f.pick = Some(open);
    f.duplicate = Some(post(PostStatus::Draft));
    assert_eq!(
        refusal(plan_submit(&d, f)),
        DraftRefusal::Pick(PickProblem::PostHasPick {
            post_id: id(500),
            other: PickNumber(2),
        })
    );
}

#[test]
fn the_account_is_chosen_among_the_candidates_by_code() {
    let d = draft(true);
    assert_eq!(
        choose_account(vec![account(None)], &d).map(|a| a.slot.slot_id),
        Ok(id(SLOT))
    );
    assert!(matches!(
        choose_account(Vec::new(), &d),
        Err(DraftRefusal::Account(LookupError::NotFound))
    ));
}

fn edit(body: &str, submit: bool) -> DraftEdit {
    DraftEdit {
        post_id: id(500),
        body: body.into(),
        topic: Some("t".into()),
        submit,
        content: DraftContent::default(),
    }
}

fn change(post: PostFact) -> ChangeFacts {
    ChangeFacts {
        post: Some(post),
        cast: Vec::new(),
        uploads: Vec::new(),
        library: Vec::new(),
    }
}

#[test]
fn a_rewrite_answers_the_request_and_lands_as_a_submit_would() {
    let mut asked = post(PostStatus::RewriteRequested);
    asked.awaiting_rewrite = true;
    asked.returned_body = Some("hello".into());
    assert_eq!(
        refusal(plan_rewrite(&edit("hello", true), change(asked.clone()))),
        DraftRefusal::SameAsReturned
    );
    let c = plan_rewrite(&edit("hello again", true), change(asked)).unwrap();
    let rewrite = c.rewrite.clone().unwrap();
    assert_eq!(rewrite.status, PostStatus::InternalReview);
    assert!(rewrite.rewrite_answered && !rewrite.awaiting_rewrite);
    assert_eq!(rewrite.body_key, body_key("hello again"));
    assert_eq!(
        c.events,
        vec![
            Event::RewriteAnswered {
                from: PostStatus::RewriteRequested
            },
            Event::Landed {
                status: PostStatus::InternalReview,
                reason: None,
                media: Vec::new()
            },
        ]
    );
    assert_eq!(
        c.events[0].detail(),
        json!({"from": PostStatus::RewriteRequested})
    );
    assert!(c.view.rewrite_answered);

    // A draft whose body changed is rewritten; the account paused stocks it.
    let mut paused = post(PostStatus::Draft);
    paused.state = Some(AccountState::Paused);
    let c = plan_rewrite(&edit("new", true), change(paused)).unwrap();
    assert_eq!(c.events[0], Event::Rewritten);
    assert_eq!(
        c.rewrite.unwrap().stock_reason.as_deref(),
        Some("account TW-T001 is paused, not active")
    );

    assert_eq!(
        refusal(plan_rewrite(
            &edit("x", true),
            change(post(PostStatus::InternalReview))
        )),
        DraftRefusal::NotEditable(PostStatus::InternalReview)
    );
    let mut theirs = post(PostStatus::Draft);
    theirs.mine = false;
    assert_eq!(
        refusal(plan_rewrite(&edit("x", true), change(theirs))),
        DraftRefusal::PostNotYours
    );
    let missing = ChangeFacts {
        post: None,
        ..change(post(PostStatus::Draft))
    };
    assert_eq!(
        refusal(plan_rewrite(&edit("x", true), missing)),
        DraftRefusal::PostNotFound
    );
}

#[test]
fn items_attach_while_the_post_takes_media() {
    let items = Attach::Media(vec![id(2)]);
    let mut f = change(post(PostStatus::InternalReview));
    f.library = vec![item(2, None)];
    let c = plan_attach(&items, Some("two"), f.clone()).unwrap();
    assert_eq!(c.added, vec![image(2)]);
    assert_eq!(
        c.events.iter().map(Event::action).collect::<Vec<_>>(),
        ["media_attached", "added note"]
    );
    assert_eq!(c.view.images, 2);
    f.post = Some(post(PostStatus::ClientReview));
    assert_eq!(
        refusal(plan_attach(&items, None, f)),
        DraftRefusal::MediaClosed(PostStatus::ClientReview)
    );
    let (post_id, note) = plan_note(Some(post(PostStatus::Published)), "n").unwrap();
    assert_eq!((post_id, note.action()), (id(500), "added note"));
}

#[test]
fn a_new_post_once_inserted_is_written_as_a_change_to_it() {
    let mut f = facts(Some(AccountState::Active));
    f.inline = vec![image(7)];
    let p = new_post(plan_submit(&draft(true), f));
    let events = p.events.clone();
    let c = p.inserted(id(900));
    assert_eq!((c.post_id, c.slot_id), (id(900), id(SLOT)));
    assert_eq!((c.rewrite, c.characters), (None, None));
    assert_eq!(c.added, vec![image(7)]);
    assert_eq!(c.events, events);
    assert_eq!(c.view.id, id(900));
    assert_eq!(c.view.status, PostStatus::InternalReview);
}

#[test]
fn a_change_whose_post_was_not_found_is_refused_404() {
    assert_eq!(
        refusal(plan_rewrite(&edit("x", true), ChangeFacts::default())),
        DraftRefusal::PostNotFound
    );
    let items = Attach::Uploads(vec![id(2)]);
    assert_eq!(items.ids(), (&[id(2)][..], &[][..]));
    assert_eq!(
        refusal(plan_attach(&items, None, ChangeFacts::default())),
        DraftRefusal::PostNotFound
    );
}

#[test]
fn a_posts_media_are_read_as_loaded() {
    let loaded: Vec<MediaRef> = serde_json::from_value(json!([
        {"id": id(1), "kind": "image"},
        {"id": id(2), "kind": "video"},
    ]))
    .unwrap();
    assert_eq!(
        loaded,
        [
            image(1),
            MediaRef {
                id: id(2),
                kind: MediaKind::Video
            }
        ]
    );
}

#[test]
fn inline_images_are_the_library_items_of_their_files_in_order() {
    let stored = |sha256: &str| crate::ports::StoredImage {
        media_type: fleetdesk_kernel::media::MediaType::Png,
        sha256: sha256.into(),
        bytes: 3,
        width: None,
        height: None,
        caption: None,
        storage_key: format!("media/{sha256}.png"),
        thumb: None,
    };
    let images = [stored("bb"), stored("aa"), stored("bb")];
    let entered = [(id(1), "aa".to_owned()), (id(2), "bb".to_owned())];
    assert_eq!(
        inline_refs(&images, &entered),
        Ok(vec![image(2), image(1), image(2)])
    );
    assert_eq!(inline_refs(&images, &entered[..1]), Err("bb"));
}

/// A change's event: its kind's text and its body, after checking it is about `post` in the
/// workspace and told to the persona's agent.
fn told(
    event: Option<NewEvent>,
    post: Uuid,
) -> (&'static str, fleetdesk_kernel::events::PostChange) {
    let e = event.expect("an event");
    assert_eq!(
        (e.workspace_id, e.agent_id, e.object_id),
        (id(WORKSPACE), Some(id(AGENT)), post)
    );
    let kind = e.body.kind().as_str();
    match e.body {
        EventBody::PostSubmitted(c) | EventBody::PostMoved(c) => (kind, c),
        other => panic!("{other:?}"),
    }
}

#[test]
fn a_submit_to_review_tells_post_submitted_once_the_post_is_inserted() {
    let mut d = draft(true);
    d.content.note = Some("see the photo".into());
    let c = new_post(plan_submit(&d, facts(Some(AccountState::Active)))).inserted(id(900));
    let (kind, change) = told(c.told, id(900));
    assert_eq!(kind, "post.submitted");
    assert_eq!(
        change,
        fleetdesk_kernel::events::PostChange {
            code: Some("TW-T001".into()),
            platform: Some(Platform::Threads),
            from: None,
            status: "internal_review".into(),
            note: Some("see the photo".into()),
        }
    );
    // A draft saved, or a new post stocked at once, tells nothing.
    let saved = new_post(plan_submit(
        &draft(false),
        facts(Some(AccountState::Active)),
    ));
    assert_eq!(saved.inserted(id(901)).told, None);
    let stocked = new_post(plan_submit(&draft(true), facts(Some(AccountState::Paused))));
    assert_eq!(stocked.status, PostStatus::Stocked);
    assert_eq!(stocked.inserted(id(902)).told, None);
    // Nor does a resend of the same body: nothing changed.
    let mut f = facts(Some(AccountState::Active));
    f.duplicate = Some(post(PostStatus::InternalReview));
    assert_eq!(resend(plan_submit(&d, f)).told, None);
}

#[test]
fn a_rewrite_to_review_tells_post_submitted_and_one_stocked_instead_post_moved() {
    let mut returned = post(PostStatus::SentBack);
    returned.awaiting_rewrite = true;
    returned.returned_body = Some("hello".into());
    let mut e = edit("hello again", true);
    e.content.note = Some("shorter now".into());
    let c = plan_rewrite(&e, change(returned.clone())).unwrap();
    let (kind, change_) = told(c.told, id(500));
    assert_eq!(kind, "post.submitted");
    assert_eq!(
        (change_.from.as_deref(), change_.status.as_str()),
        (Some("sent_back"), "internal_review")
    );
    assert_eq!(change_.note.as_deref(), Some("shorter now"));

    // The account paused: stocked instead, with why.
    let mut paused = returned.clone();
    paused.state = Some(AccountState::Paused);
    let c = plan_rewrite(&edit("hello again", true), change(paused)).unwrap();
    let (kind, change_) = told(c.told, id(500));
    assert_eq!(kind, "post.moved");
    assert_eq!(
        (change_.from.as_deref(), change_.status.as_str()),
        (Some("sent_back"), "stocked")
    );
    assert_eq!(
        change_.note.as_deref(),
        Some("account TW-T001 is paused, not active")
    );

    // Saved without submit: still a draft, nothing told; an attach tells nothing either.
    let c = plan_rewrite(&edit("hello again", false), change(returned)).unwrap();
    assert_eq!(c.rewrite.map(|r| r.status), Some(PostStatus::Draft));
    assert_eq!(c.told, None);
    let mut f = change(post(PostStatus::InternalReview));
    f.library = vec![item(2, None)];
    let attached = plan_attach(&Attach::Media(vec![id(2)]), None, f).unwrap();
    assert_eq!(attached.told, None);
}
