use super::*;

fn raw() -> RawProposal {
    RawProposal {
        category: Category::Voice,
        title: "  Mia 的語氣  ".to_owned(),
        summary: Some("How Mia talks".to_owned()),
        body: "Short, warm, playful.".to_owned(),
        tags: vec!["voice".to_owned()],
        sources: vec![Source {
            kind: SourceKind::Notion,
            reference: "https://notion.so/acme/voice".to_owned(),
            title: Some("Voice notes".to_owned()),
        }],
        project: None,
        revises: None,
        note: None,
    }
}

fn invalid_field(r: RawProposal) -> String {
    match Proposal::parse(r) {
        Err(ProposalError::Invalid { field, .. }) => field,
        other => panic!("expected a 400, got {other:?}"),
    }
}

fn n(c: char, count: usize) -> String {
    std::iter::repeat_n(c, count).collect()
}

#[test]
fn a_proposal_is_trimmed_and_its_title_matched_across_scripts() {
    let p = Proposal::parse(raw()).unwrap();
    assert_eq!(p.title, "Mia 的語氣");
    assert_eq!(p.title_key, search::title_key("mia 的语气"));
    assert_eq!(p.summary, "How Mia talks");
}

#[test]
fn every_limit_holds_at_the_limit_and_refuses_one_past() {
    // title 80
    let mut r = raw();
    r.title = n('貓', TITLE_MAX);
    assert!(Proposal::parse(r.clone()).is_ok());
    r.title = n('貓', TITLE_MAX + 1);
    assert_eq!(invalid_field(r), "title");
    // blank title and body
    let mut r = raw();
    r.title = "   ".to_owned();
    assert_eq!(invalid_field(r), "title");
    let mut r = raw();
    r.body = " \n ".to_owned();
    assert_eq!(invalid_field(r), "body");
    // summary 200
    let mut r = raw();
    r.summary = Some(n('a', SUMMARY_MAX));
    assert!(Proposal::parse(r.clone()).is_ok());
    r.summary = Some(n('a', SUMMARY_MAX + 1));
    assert_eq!(invalid_field(r), "summary");
    // body 6000
    let mut r = raw();
    r.body = n('字', BODY_MAX);
    assert!(Proposal::parse(r.clone()).is_ok());
    r.body = n('字', BODY_MAX + 1);
    assert_eq!(invalid_field(r), "body");
    // tags 12, each 1-100
    let mut r = raw();
    r.tags = (0..TAGS_MAX).map(|i| format!("t{i}")).collect();
    assert_eq!(Proposal::parse(r.clone()).unwrap().tags.len(), TAGS_MAX);
    r.tags.push("one more".to_owned());
    assert_eq!(invalid_field(r), "tags");
    let mut r = raw();
    r.tags = vec!["ok".to_owned(), n('x', TAG_MAX + 1)];
    assert_eq!(invalid_field(r.clone()), "tags[1]");
    r.tags = vec![" ".to_owned()];
    assert_eq!(invalid_field(r), "tags[0]");
    // sources 1-20
    let mut r = raw();
    r.sources = Vec::new();
    assert_eq!(invalid_field(r.clone()), "sources");
    r.sources = vec![raw().sources[0].clone(); SOURCES_MAX];
    assert!(Proposal::parse(r.clone()).is_ok());
    r.sources.push(raw().sources[0].clone());
    assert_eq!(invalid_field(r), "sources");
    let mut r = raw();
    r.sources[0].reference = n('r', SOURCE_REF_MAX + 1);
    assert_eq!(invalid_field(r.clone()), "sources[0].ref");
    r.sources[0].reference = n('r', SOURCE_REF_MAX);
    r.sources[0].title = Some(n('t', SOURCE_TITLE_MAX + 1));
    assert_eq!(invalid_field(r), "sources[0].title");
    // note 1000
    let mut r = raw();
    r.note = Some(n('n', NOTE_MAX));
    assert!(Proposal::parse(r.clone()).is_ok());
    r.note = Some(n('n', NOTE_MAX + 1));
    assert_eq!(invalid_field(r), "note");
}

#[test]
fn repeated_tags_are_dropped_as_titles_match() {
    let mut r = raw();
    r.tags = vec![
        "貓咪".into(),
        "猫咪".into(),
        " Voice ".into(),
        "voice".into(),
    ];
    assert_eq!(Proposal::parse(r).unwrap().tags, vec!["貓咪", "Voice"]);
}

#[test]
fn a_source_ref_with_an_access_token_is_refused() {
    let mut r = raw();
    r.sources.push(Source {
        kind: SourceKind::Vault,
        reference: "https://drive.test/file?id=1&access_token=abc".to_owned(),
        title: None,
    });
    match Proposal::parse(r) {
        Err(e @ ProposalError::Refused { .. }) => {
            assert_eq!(e.field(), "sources[1].ref");
            assert!(e.to_string().contains("access_token"), "{e}");
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn terms_weigh_title_summary_with_tags_and_body() {
    let mut r = raw();
    r.tags = vec!["貓咪".into()];
    let t = Proposal::parse(r).unwrap().terms();
    assert!(t.title.contains("语气"), "{t:?}");
    assert!(
        t.summary.contains("猫咪") && t.summary.contains("talk"),
        "{t:?}"
    );
    assert!(t.body.contains("play"), "{t:?}");
}

#[test]
fn a_project_is_found_by_name_in_the_workspace() {
    let (a, b) = (Uuid::new_v4(), Uuid::new_v4());
    let projects = vec![(a, "beauty".to_owned()), (b, "food".to_owned())];
    assert_eq!(find_project(None, &projects), Ok(None));
    assert_eq!(find_project(Some(" food "), &projects), Ok(Some(b)));
    assert_eq!(
        find_project(Some("cars"), &projects),
        Err(WikiRefusal::ProjectUnknown("cars".to_owned()))
    );
}

#[test]
fn a_project_nowhere_is_404_and_another_workspaces_is_refused() {
    use fleetdesk_kernel::project::ProjectMiss;
    let unknown = WikiRefusal::project_miss("cars".into(), ProjectMiss::Unknown);
    assert!(unknown.is_not_found());
    assert_eq!(unknown.field(), Some("project"));
    let other = WikiRefusal::project_miss("cars".into(), ProjectMiss::OtherWorkspace);
    assert_eq!(other, WikiRefusal::ProjectOfOtherWorkspace("cars".into()));
    assert!(!other.is_not_found());
    assert_eq!(other.field(), Some("project"));
}

#[test]
fn a_title_lookup_prefers_the_named_project_then_shared() {
    let (s, b, f) = (Uuid::new_v4(), Uuid::new_v4(), Uuid::new_v4());
    let m = |id, p: Option<&str>| TitleMatch {
        id,
        project: p.map(str::to_owned),
    };
    let all = vec![m(s, None), m(b, Some("beauty")), m(f, Some("food"))];
    assert_eq!(pick_by_title(&all, Some("beauty")), Ok(b));
    assert_eq!(pick_by_title(&all, Some("cars")), Ok(s));
    assert_eq!(pick_by_title(&all, None), Ok(s));
    assert_eq!(pick_by_title(&all[1..2], None), Ok(b));
    assert_eq!(
        pick_by_title(&all[1..], None),
        Err(WikiRefusal::TitleInSeveralProjects(vec![
            "beauty".into(),
            "food".into()
        ]))
    );
    assert_eq!(pick_by_title(&[], None), Err(WikiRefusal::NotFound));
    assert_eq!(
        pick_by_title(&all[1..2], Some("food")),
        Err(WikiRefusal::NotFound)
    );
}

fn existing(status: EntryStatus, has_canon: bool, pending: Option<Pending>) -> Existing {
    Existing {
        id: Uuid::new_v4(),
        status,
        title: "Mia 的語氣".to_owned(),
        title_key: search::title_key("mia 的语气"),
        project_id: None,
        project: None,
        has_canon,
        last_version: 3,
        pending,
    }
}

#[test]
fn a_new_title_creates_an_entry_canon_or_draft() {
    let p = Proposal::parse(raw()).unwrap();
    let auto = land(&p, None, None, false).unwrap();
    assert_eq!(
        (auto.version, auto.status, auto.auto, auto.created),
        (1, VersionStatus::Canon, true, true)
    );
    assert_eq!(auto.show, Some(EntryStatus::Canon));
    assert!(!auto.open_decision);
    let manual = land(&p, None, None, true).unwrap();
    assert_eq!(
        (
            manual.status,
            manual.auto,
            manual.show,
            manual.open_decision
        ),
        (VersionStatus::Draft, false, Some(EntryStatus::Draft), true)
    );
}

#[test]
fn a_revision_of_a_canon_entry_is_canon_at_once_or_waits_while_the_entry_stays_canon() {
    let p = Proposal::parse(raw()).unwrap();
    let e = existing(EntryStatus::Canon, true, None);
    let auto = land(&p, None, Some(&e), false).unwrap();
    assert_eq!((auto.version, auto.created), (4, false));
    assert_eq!(auto.show, Some(EntryStatus::Canon));
    assert!(auto.supersede_canon);
    let manual = land(&p, None, Some(&e), true).unwrap();
    assert_eq!(manual.status, VersionStatus::Draft);
    assert_eq!(manual.show, None, "the entry keeps its canon text");
    assert!(!manual.supersede_canon && manual.open_decision);
}

#[test]
fn a_waiting_draft_is_superseded_and_a_new_decision_opens_for_the_new_version() {
    let p = Proposal::parse(raw()).unwrap();
    let d = Uuid::new_v4();
    let pending = Some(Pending {
        version: 3,
        decision_id: Some(d),
    });
    let e = existing(EntryStatus::Draft, false, pending);
    let manual = land(&p, None, Some(&e), true).unwrap();
    assert_eq!(
        manual.waiting,
        Waiting::Supersede {
            version: 3,
            decision_id: Some(d)
        },
        "the waiting version's decision is dismissed"
    );
    assert!(
        manual.open_decision,
        "each decision decides exactly its own version"
    );
    assert_eq!((manual.version, manual.status), (4, VersionStatus::Draft));
    assert_eq!(manual.show, Some(EntryStatus::Draft));
    // A draft revision of a canon entry superseded by another one: the entry stays canon.
    let e = existing(EntryStatus::Canon, true, pending);
    let manual = land(&p, None, Some(&e), true).unwrap();
    assert!(manual.open_decision && manual.show.is_none() && !manual.supersede_canon);
    assert!(matches!(
        manual.waiting,
        Waiting::Supersede { version: 3, .. }
    ));
    let e = existing(EntryStatus::Draft, false, pending);
    let auto = land(&p, None, Some(&e), false).unwrap();
    assert_eq!(
        auto.waiting,
        Waiting::Supersede {
            version: 3,
            decision_id: Some(d)
        }
    );
    assert_eq!(auto.show, Some(EntryStatus::Canon));
    assert!(!auto.supersede_canon && !auto.open_decision);
}

#[test]
fn a_landing_dismisses_the_superseded_drafts_decision_with_a_note() {
    let p = Proposal::parse(raw()).unwrap();
    let d = Uuid::from_u128(7);
    let waiting = |decision_id| {
        existing(
            EntryStatus::Canon,
            true,
            Some(Pending {
                version: 3,
                decision_id,
            }),
        )
    };
    let e = waiting(Some(d));
    assert_eq!(e.waiting_decision(), Some(d));
    assert_eq!(
        land(&p, None, Some(&e), true).unwrap().dismissed(),
        Some((d, superseded_note(3, 4, false)))
    );
    assert_eq!(
        land(&p, None, Some(&e), false).unwrap().dismissed(),
        Some((d, superseded_note(3, 4, true)))
    );
    // A draft without a decision, or none waiting: nothing to dismiss.
    let without = waiting(None);
    assert_eq!(without.waiting_decision(), None);
    assert_eq!(
        land(&p, None, Some(&without), true).unwrap().dismissed(),
        None
    );
    let none = existing(EntryStatus::Canon, true, None);
    assert_eq!(none.waiting_decision(), None);
    assert_eq!(land(&p, None, Some(&none), true).unwrap().dismissed(), None);
}

#[test]
fn the_dismissal_note_names_the_superseding_version() {
    let manual = superseded_note(3, 4, false);
    assert!(
        manual.contains("version 3") && manual.contains("version 4"),
        "{manual}"
    );
    assert!(manual.contains("its own wiki_draft decision"), "{manual}");
    assert!(superseded_note(1, 2, true).contains("canon at once"));
}

#[test]
fn a_rejected_entry_comes_back_with_a_new_proposal() {
    let p = Proposal::parse(raw()).unwrap();
    let e = existing(EntryStatus::Rejected, false, None);
    assert_eq!(
        land(&p, None, Some(&e), false).unwrap().show,
        Some(EntryStatus::Canon)
    );
    let manual = land(&p, None, Some(&e), true).unwrap();
    assert_eq!(manual.show, Some(EntryStatus::Draft));
    assert!(manual.open_decision);
}

#[test]
fn revises_names_a_canon_entry_of_the_same_title_and_project() {
    let mut r = raw();
    let e = existing(EntryStatus::Draft, false, None);
    r.revises = Some(e.id);
    let p = Proposal::parse(r.clone()).unwrap();
    assert_eq!(
        land(&p, None, Some(&e), false),
        Err(WikiRefusal::RevisesNotCanon(EntryStatus::Draft))
    );
    let canon = existing(EntryStatus::Canon, true, None);
    r.revises = Some(canon.id);
    // A new title renames the entry: the next version of the same entry.
    r.title = "Another title".to_owned();
    let p = Proposal::parse(r.clone()).unwrap();
    let renamed = land(&p, None, Some(&canon), false).unwrap();
    assert_eq!((renamed.version, renamed.created), (4, false));
    r.title = "MIA 的语气".to_owned();
    r.project = Some("beauty".to_owned());
    let p = Proposal::parse(r.clone()).unwrap();
    assert_eq!(
        land(&p, Some(Uuid::new_v4()), Some(&canon), false),
        Err(WikiRefusal::RevisesOtherProject(None))
    );
    r.project = None;
    let p = Proposal::parse(r).unwrap();
    assert_eq!(land(&p, None, Some(&canon), false).unwrap().version, 4);
}

fn draft(version_status: VersionStatus, entry_status: EntryStatus, has_canon: bool) -> DraftState {
    DraftState {
        version: 2,
        version_status,
        entry_status,
        has_canon,
        title_taken: None,
        title_busy: false,
    }
}

#[test]
fn a_revision_renames_its_entry_but_never_onto_another_entrys_title() {
    let revised = existing(EntryStatus::Canon, true, None);
    // No entry holds the new title, or the revised entry itself does (the same key).
    assert_eq!(check_rename(&revised, None), Ok(()));
    assert_eq!(check_rename(&revised, Some(&revised)), Ok(()));
    let mut other = existing(EntryStatus::Rejected, false, None);
    other.title = "Dog Guide".to_owned();
    let refused = check_rename(&revised, Some(&other)).unwrap_err();
    assert_eq!(refused, WikiRefusal::TitleTaken("Dog Guide".to_owned()));
    assert_eq!(refused.field(), Some("title"));
    assert!(!refused.is_not_found());
    assert!(refused.to_string().contains("\"Dog Guide\""), "{refused}");
}

#[test]
fn a_draft_renaming_onto_a_title_taken_since_cannot_be_resolved_but_can_be_dismissed() {
    let mut d = draft(VersionStatus::Draft, EntryStatus::Canon, true);
    d.title_taken = Some("Dog Guide".to_owned());
    let refused = decide(true, Some(&d)).unwrap_err();
    assert_eq!(
        refused,
        DraftRefusal::TitleTaken {
            version: 2,
            title: "Dog Guide".to_owned()
        }
    );
    assert!(refused.to_string().contains("\"Dog Guide\""), "{refused}");
    assert_eq!(decide(false, Some(&d)).unwrap().entry, EntryChange::Keep);
    // A title another proposal is writing now: resolving waits for nothing, it is refused.
    let mut d = draft(VersionStatus::Draft, EntryStatus::Canon, true);
    d.title_busy = true;
    assert_eq!(decide(true, Some(&d)), Err(DraftRefusal::TitleBusy(2)));
    assert!(decide(false, Some(&d)).is_ok());
}

#[test]
fn a_persons_move_makes_the_draft_canon_or_rejects_it() {
    let waiting = |has_canon| {
        draft(
            VersionStatus::Draft,
            if has_canon {
                EntryStatus::Canon
            } else {
                EntryStatus::Draft
            },
            has_canon,
        )
    };
    assert_eq!(
        decide(true, Some(&waiting(true))),
        Ok(Decided {
            version_status: VersionStatus::Canon,
            entry: EntryChange::ShowCanon,
            supersede_canon: true
        })
    );
    let resolved = decide(true, Some(&waiting(false))).unwrap();
    assert_eq!(resolved.entry, EntryChange::ShowCanon);
    assert!(!resolved.supersede_canon);
    assert_eq!(
        decide(false, Some(&waiting(true))).unwrap().entry,
        EntryChange::Keep
    );
    let rejected = decide(false, Some(&waiting(false))).unwrap();
    assert_eq!(rejected.entry, EntryChange::Reject);
    assert_eq!(rejected.version_status, VersionStatus::Rejected);
}

#[test]
fn a_decision_whose_version_no_longer_waits_or_whose_entry_is_retired_is_refused() {
    for resolve in [true, false] {
        for status in [
            VersionStatus::Canon,
            VersionStatus::Rejected,
            VersionStatus::Superseded,
        ] {
            let refused = decide(resolve, Some(&draft(status, EntryStatus::Canon, true)));
            assert_eq!(
                refused,
                Err(DraftRefusal::NotWaiting { version: 2, status })
            );
            let message = refused.unwrap_err().to_string();
            assert!(
                message.contains("version 2") && message.contains(status.as_str()),
                "{message}"
            );
        }
        assert_eq!(
            decide(
                resolve,
                Some(&draft(VersionStatus::Draft, EntryStatus::Retired, false))
            ),
            Err(DraftRefusal::EntryRetired(2))
        );
        assert_eq!(decide(resolve, None), Err(DraftRefusal::NoVersion));
    }
}

#[test]
fn a_cast_member_links_to_a_canon_character_entry_of_the_project_before_a_shared_one() {
    let c = |title: &str, category, status, in_project| CastCandidate {
        id: Uuid::new_v4(),
        title: title.to_owned(),
        title_key: search::title_key(title),
        category,
        status,
        in_project,
    };
    let shared = c("Momo", Category::Character, EntryStatus::Canon, false);
    let project = c("ＭＯＭＯ", Category::Character, EntryStatus::Canon, true);
    let lesson = c("Momo", Category::Lesson, EntryStatus::Canon, true);
    let draft = c("momo", Category::Character, EntryStatus::Draft, true);
    let retired = c("momo", Category::Character, EntryStatus::Retired, true);
    let other = c("Chef", Category::Character, EntryStatus::Canon, true);
    let all = vec![
        lesson.clone(),
        shared.clone(),
        draft.clone(),
        project.clone(),
        retired.clone(),
        other.clone(),
    ];
    assert_eq!(cast_link("momo", &all), Some(&project), "project first");
    assert_eq!(
        cast_link(" MOMO ", &[shared.clone(), lesson.clone(), draft.clone()]),
        Some(&shared),
        "else the shared one"
    );
    assert_eq!(
        cast_link("Momo", &[lesson, draft, retired, other.clone()]),
        None,
        "only canon character entries"
    );
    assert_eq!(cast_link("Chef", &all), Some(&other));
    assert_eq!(cast_link("Lulu", &all), None);
}

#[test]
fn folded_tags_keep_the_tags_order_as_matched() {
    let tags = vec![
        " Market: TW ".to_owned(),
        "Community".to_owned(),
        "track:Beauty".to_owned(),
    ];
    assert_eq!(
        fold_tags(&tags),
        vec!["market:tw", "community", "track:beauty"]
    );
    assert_eq!(
        Terms::of(Category::Other, "t", "s", &tags, "b").folded_tags,
        fold_tags(&tags)
    );
    let mut r = raw();
    r.tags = tags;
    assert_eq!(
        Proposal::parse(r).unwrap().terms().folded_tags,
        vec!["market:tw", "community", "track:beauty"]
    );
}

#[test]
fn the_status_filter_all_excludes_retired() {
    assert!(!StatusFilter::All.statuses().contains(&EntryStatus::Retired));
    assert_eq!(StatusFilter::All.statuses().len(), 3);
    assert_eq!(StatusFilter::Draft.statuses(), &[EntryStatus::Draft]);
}

#[test]
fn only_the_draft_filter_lists_waiting_revisions_and_search_finds_canon_only() {
    assert!(StatusFilter::Draft.lists_waiting_revisions());
    for f in [
        StatusFilter::Canon,
        StatusFilter::Rejected,
        StatusFilter::All,
    ] {
        assert!(!f.lists_waiting_revisions(), "{f:?}");
    }
    assert_eq!(EntryStatus::SEARCHED, &[EntryStatus::Canon]);
}

#[test]
fn title_locks_are_sorted_once_each_and_scoped() {
    let org = Uuid::from_u128(1);
    let project = Uuid::from_u128(2);
    assert_eq!(
        title_locks(org, Some(project), &["b", "a", "b"]),
        vec![
            format!("wiki:{org}:{project}:a"),
            format!("wiki:{org}:{project}:b"),
        ]
    );
    // The organization's shared entries lock apart from any project's.
    assert_eq!(title_lock_key(org, None, "a"), format!("wiki:{org}::a"));
}

#[test]
fn a_revision_whose_entry_was_renamed_meanwhile_is_refused() {
    let e = existing(EntryStatus::Canon, true, None);
    assert_eq!(check_revised_found(Some(e.id), Some(&e)), Ok(()));
    assert_eq!(check_revised_found(None, None), Ok(()));
    assert_eq!(
        check_revised_found(Some(Uuid::from_u128(99)), Some(&e)),
        Err(WikiRefusal::RevisesRenamed)
    );
    assert_eq!(
        check_revised_found(Some(e.id), None),
        Err(WikiRefusal::RevisesRenamed)
    );
}

#[test]
fn a_manual_proposal_opens_a_decision_that_shows_the_version_and_an_auto_one_none() {
    let p = Proposal::parse(raw()).unwrap();
    let entry = Uuid::from_u128(3);
    let auto = land(&p, None, None, false).unwrap();
    assert_eq!(auto.opening(entry, &p, None, None), None);

    let manual = land(&p, None, None, true).unwrap();
    let new = manual.opening(entry, &p, None, Some("Tea")).unwrap();
    assert_eq!(new.kind, DecisionKind::WikiDraft);
    assert_eq!(new.title, "New wiki entry: Mia 的語氣");
    assert_eq!(
        new.detail,
        serde_json::json!({
            "entry_id": entry, "version": 1, "revision": false, "project": "Tea",
            "category": "voice", "title": "Mia 的語氣", "summary": "How Mia talks",
            "body": "Short, warm, playful.", "tags": ["voice"],
            "sources": [{"kind": "notion", "ref": "https://notion.so/acme/voice",
                         "title": "Voice notes"}],
            "note": null,
        })
    );

    let e = existing(EntryStatus::Canon, true, None);
    let revision = land(&p, None, Some(&e), true).unwrap();
    let opened = revision.opening(entry, &p, Some(&e), None).unwrap();
    assert_eq!(opened.title, "Wiki revision: Mia 的語氣 (version 4)");
    assert_eq!(opened.detail["revision"], true);
    assert_eq!(opened.detail["project"], serde_json::Value::Null);
}

#[test]
fn a_proposal_is_shown_as_its_version_with_its_terms() {
    let p = Proposal::parse(raw()).unwrap();
    let shown = p.shown(4, EntryStatus::Draft);
    assert_eq!((shown.version, shown.status), (4, EntryStatus::Draft));
    assert_eq!(
        (shown.title, shown.body),
        ("Mia 的語氣", "Short, warm, playful.")
    );
    assert_eq!(shown.title_key, p.title_key);
    assert_eq!(shown.sources, p.sources.as_slice());
    assert_eq!(shown.terms, p.terms());
}

#[test]
fn a_revision_lands_in_its_entrys_scope_found_by_the_entrys_title() {
    let mut r = raw();
    r.project = Some("food".to_owned());
    let p = Proposal::parse(r).unwrap();
    let named = Some(Uuid::from_u128(5));
    assert_eq!(p.scope(named, None), (named, Some("food".to_owned())));
    assert_eq!(p.found_by(None), p.title_key);
    assert_eq!(p.renames(None), None);
    let mut revised = existing(EntryStatus::Canon, true, None);
    revised.project_id = Some(Uuid::from_u128(6));
    revised.project = Some("beauty".to_owned());
    assert_eq!(
        p.scope(named, Some(&revised)),
        (revised.project_id, Some("beauty".to_owned()))
    );
    // The same title (as matched): no rename.
    assert_eq!(p.found_by(Some(&revised)), p.title_key);
    assert_eq!(p.renames(Some(&revised)), None);
    // A new title: the entry is still found by its own, and the revision renames it.
    revised.title_key = search::title_key("Dog Guide");
    assert_eq!(p.found_by(Some(&revised)), revised.title_key);
    assert_eq!(p.renames(Some(&revised)), Some(&revised));
}

#[test]
fn a_landing_answers_what_the_proposal_did() {
    let p = Proposal::parse(raw()).unwrap();
    let entry = Uuid::from_u128(8);
    let decision = Some(Uuid::from_u128(9));
    let manual = land(&p, None, None, true).unwrap();
    assert_eq!(
        manual.proposed(entry, &p.title, decision),
        Proposed {
            id: entry,
            title: "Mia 的語氣".to_owned(),
            version: 1,
            status: VersionStatus::Draft,
            auto: false,
            created: true,
            decision_id: decision,
        }
    );
    let now = jiff::Timestamp::from_second(1_800_000_000).unwrap();
    assert_eq!(
        manual.decided_at(now),
        None,
        "a draft is decided by its decision"
    );
    let e = existing(EntryStatus::Canon, true, None);
    let landed = land(&p, None, Some(&e), false).unwrap();
    assert_eq!(landed.decided_at(now), Some(now));
    let auto = landed.proposed(e.id, "t", None);
    assert_eq!((auto.version, auto.status), (4, VersionStatus::Canon));
    assert!(auto.auto && !auto.created);
}

fn draft_version(title: &str) -> DraftVersion {
    DraftVersion {
        entry_id: Uuid::from_u128(1),
        version: 3,
        status: VersionStatus::Draft,
        category: Category::Character,
        title: title.to_owned(),
        summary: "s".to_owned(),
        body: "b".to_owned(),
        tags: vec!["Market: TW".to_owned()],
        sources: raw().sources,
        entry_status: EntryStatus::Canon,
        organization_id: Uuid::from_u128(2),
        project_id: None,
        title_key: search::title_key("Momo"),
        has_canon: true,
    }
}

#[test]
fn a_draft_renames_its_entry_only_with_a_title_matched_otherwise() {
    assert_eq!(draft_version(" MOMO ").renamed_key(), None);
    assert_eq!(
        draft_version("Lulu").renamed_key(),
        Some(search::title_key("lulu"))
    );
}

#[test]
fn a_draft_is_judged_with_what_was_found_of_its_title_and_shown_canon() {
    let d = draft_version("Lulu");
    let state = d.state(Some("LULU".to_owned()), true);
    assert_eq!(
        state,
        DraftState {
            version: 3,
            version_status: VersionStatus::Draft,
            entry_status: EntryStatus::Canon,
            has_canon: true,
            title_taken: Some("LULU".to_owned()),
            title_busy: true,
        }
    );
    let shown = d.shown();
    assert_eq!((shown.version, shown.status), (3, EntryStatus::Canon));
    assert_eq!(shown.title_key, search::title_key("lulu"));
    assert_eq!(
        shown.terms,
        Terms::of(d.category, "Lulu", "s", &d.tags, "b")
    );
    assert_eq!(shown.terms.folded_tags, vec!["market:tw"]);
    assert_eq!(shown.sources, d.sources.as_slice());
}

#[test]
fn each_cast_name_links_in_order() {
    let momo = CastCandidate {
        id: Uuid::from_u128(4),
        title: "Momo".to_owned(),
        title_key: search::title_key("Momo"),
        category: Category::Character,
        status: EntryStatus::Canon,
        in_project: false,
    };
    let names = vec!["Lulu".to_owned(), "momo".to_owned()];
    assert_eq!(
        cast_links(&names, std::slice::from_ref(&momo)),
        vec![None, Some((momo.id, "Momo".to_owned()))]
    );
    assert!(cast_links(&[], &[momo]).is_empty());
}

#[test]
fn a_landing_supersedes_the_canon_version_then_the_waiting_draft() {
    let p = Proposal::parse(raw()).unwrap();
    assert_eq!(land(&p, None, None, false).unwrap().superseded(), vec![]);
    let waiting = Some(Pending {
        version: 3,
        decision_id: None,
    });
    let draft = Superseded {
        status: VersionStatus::Draft,
        version: Some(3),
    };
    let canon = existing(EntryStatus::Canon, true, waiting);
    assert_eq!(
        land(&p, None, Some(&canon), false).unwrap().superseded(),
        vec![Superseded::CANON, draft]
    );
    // A manual revision keeps the canon version until a person resolves it.
    assert_eq!(
        land(&p, None, Some(&canon), true).unwrap().superseded(),
        vec![draft]
    );
    let plain = existing(EntryStatus::Canon, true, None);
    assert_eq!(
        land(&p, None, Some(&plain), false).unwrap().superseded(),
        vec![Superseded::CANON]
    );
}

#[test]
fn a_decided_draft_tells_its_entry_title_and_status_to_the_workspace() {
    let version = DraftVersion {
        entry_id: Uuid::from_u128(1),
        version: 2,
        status: VersionStatus::Draft,
        category: Category::Character,
        title: "Dog Guide".to_owned(),
        summary: String::new(),
        body: String::new(),
        tags: Vec::new(),
        sources: Vec::new(),
        entry_status: EntryStatus::Canon,
        organization_id: Uuid::from_u128(2),
        project_id: None,
        title_key: "dog guide".to_owned(),
        has_canon: true,
    };
    let workspace = Uuid::from_u128(3);
    for (resolve, status) in [(true, "canon"), (false, "rejected")] {
        let decided = decide(resolve, Some(&version.state(None, false))).unwrap();
        let event = version.decided_event(workspace, &decided);
        assert_eq!(
            (event.workspace_id, event.agent_id, event.object_id),
            (workspace, None, version.entry_id)
        );
        assert_eq!(
            event.body,
            EventBody::WikiDraftDecided(WikiDraftDecided {
                entry_id: version.entry_id,
                title: "Dog Guide".to_owned(),
                status: status.to_owned(),
            })
        );
    }
}

#[test]
fn a_glossary_s_terms_carry_its_synonyms_and_every_entry_the_english_of_its_chinese() {
    let tags = vec!["夜市".to_owned()];
    let t = Terms::of(
        Category::Glossary,
        "小吃",
        "",
        &tags,
        "A醇 = 視黃醇\n限動：限時動態",
    );
    assert_eq!(t.aliases, ["醇|视黄醇"]);
    assert_eq!(t.alias_terms, ["醇", "视黄醇"]);
    // The title's, summary's and tags' English is kept apart (weight C); the body's follows
    // the body's own terms.
    assert!(
        t.pivot.contains("snack") && t.pivot.contains("night"),
        "{t:?}"
    );
    assert!(!t.title.contains("snack"), "{t:?}");
    // Other categories declare no synonyms.
    let t = Terms::of(Category::Lesson, "小吃", "", &[], "A醇 = 視黃醇");
    assert!(t.aliases.is_empty() && t.alias_terms.is_empty());
    assert!(t.body.starts_with("醇 视黄醇"), "{t:?}");
}
