//! The matching order and the post state table, without a database.

use super::*;
use crate::approval::ApprovalPin;

const WORKSPACE: Uuid = Uuid::from_u128(90);
const AGENT: Uuid = Uuid::from_u128(91);

fn slot() -> ReportSlot {
    ReportSlot {
        slot_id: Uuid::from_u128(1),
        code: "TW-T001".into(),
        platform: Platform::Threads,
        workspace_id: WORKSPACE,
        persona_id: Uuid::from_u128(2),
        persona_agent: Some(AGENT),
        project_id: Uuid::from_u128(3),
        generation_id: None,
    }
}

fn item(status: ReportedStatus) -> ReportItem {
    ReportItem {
        slot: slot(),
        status,
        scheduled_for: None,
        published_at: None,
        platform_post_id: None,
        permalink: None,
        body: None,
        topic: None,
        has_media: None,
        sponsored: None,
        post_id: None,
        failure_reason: None,
    }
}

fn post(id: u128, status: PostStatus, body: &str) -> KnownPost {
    KnownPost {
        id: Uuid::from_u128(id),
        slot_id: slot().slot_id,
        platform: Platform::Threads,
        in_workspace: true,
        mine: true,
        from_report: false,
        discarded: false,
        planned_at: None,
        persona_agent: Some(AGENT),
        fields: PostFields {
            status,
            body: body.into(),
            body_key: body_key(body),
            topic: None,
            sponsored: false,
            scheduled_for: None,
            published_at: None,
            platform_post_id: None,
            scheduler_ref: None,
            permalink: None,
            has_media: None,
            failure_reason: None,
            unschedule_pending: false,
        },
        approved: Some(ApprovalPin::of(body, Vec::new(), &[])),
        marked: false,
    }
}

fn now() -> Timestamp {
    "2026-11-21T10:00:00Z".parse().unwrap()
}

#[test]
fn an_approved_post_reported_scheduled_by_id_is_scheduled() {
    let mut i = item(ReportedStatus::Scheduled);
    i.post_id = Some(Uuid::from_u128(7));
    i.scheduled_for = Some("2026-11-21T12:00:00Z".parse().unwrap());
    let plan = plan_report(
        vec![Ok(i)],
        vec![post(7, PostStatus::Approved, "hi")],
        now(),
    );
    let r = &plan.results[0];
    assert_eq!(r.action, Some(Action::Updated));
    assert_eq!(r.status, Some(PostStatus::Scheduled));
    assert_eq!(r.matched_by, Some(MatchedBy::PostId));
    assert_eq!(plan.updates.len(), 1);
    assert_eq!(
        plan.updates[0].1.scheduled_for,
        i_time("2026-11-21T12:00:00Z")
    );
}

fn i_time(s: &str) -> Option<Timestamp> {
    Some(s.parse().unwrap())
}

// ---------------------------------------------------------------------------------------------
// More helpers
// ---------------------------------------------------------------------------------------------

fn id(n: u128) -> Uuid {
    Uuid::from_u128(n)
}

/// `now()` shifted by a number of hours (negative: in the past).
fn at(hours: i64) -> Timestamp {
    now() + SignedDuration::from_hours(hours)
}

/// Another account of the same agent, on the same platform.
fn other_slot() -> ReportSlot {
    ReportSlot {
        slot_id: Uuid::from_u128(11),
        code: "TW-T002".into(),
        ..slot()
    }
}

fn by_id(status: ReportedStatus, post: u128) -> ReportItem {
    let mut i = item(status);
    i.post_id = Some(id(post));
    i
}

fn published_item(permalink: &str) -> ReportItem {
    let mut i = item(ReportedStatus::Published);
    i.permalink = Some(permalink.into());
    i
}

fn scheduled_item(body: &str, when: Timestamp) -> ReportItem {
    let mut i = item(ReportedStatus::Scheduled);
    i.body = Some(body.into());
    i.scheduled_for = Some(when);
    i
}

fn scheduled_post(n: u128, body: &str, when: Timestamp) -> KnownPost {
    let mut p = post(n, PostStatus::Scheduled, body);
    p.fields.scheduled_for = Some(when);
    p
}

fn published_post(n: u128, body: &str, when: Timestamp) -> KnownPost {
    let mut p = post(n, PostStatus::Published, body);
    p.fields.published_at = Some(when);
    p.fields.permalink = Some(format!("https://threads.example/p/{n}"));
    p
}

fn run(items: Vec<ReportItem>, known: Vec<KnownPost>) -> ReportPlan {
    plan_report(items.into_iter().map(Ok).collect(), known, now())
}

fn code(r: &ItemResult) -> Option<&'static str> {
    r.error.as_ref().map(ItemError::code)
}

/// Nothing is written for the batch.
fn assert_nothing_written(plan: &ReportPlan) {
    assert!(plan.inserts.is_empty(), "inserts: {:?}", plan.inserts);
    assert!(plan.updates.is_empty(), "updates: {:?}", plan.updates);
    assert!(plan.events.is_empty(), "events: {:?}", plan.events);
}

// ---------------------------------------------------------------------------------------------
// Matching order (rule 3)
// ---------------------------------------------------------------------------------------------

#[test]
fn post_id_match_wins_over_platform_post_id_and_body() {
    // Post 7 is named by id; post 8 has the same body at exactly the reported time.
    let mut target = post(7, PostStatus::Approved, "hello world");
    target.planned_at = Some(at(48));
    let decoy = scheduled_post(8, "hello world", at(2));
    let mut i = by_id(ReportedStatus::Scheduled, 7);
    i.scheduled_for = Some(at(2));
    i.body = Some("hello world".into());
    i.platform_post_id = Some("th-new".into());

    let plan = run(vec![i], vec![target, decoy]);

    let r = &plan.results[0];
    assert!(r.ok(), "{r:?}");
    assert_eq!(r.post_id, Some(id(7)));
    assert_eq!(r.matched_by, Some(MatchedBy::PostId));
    assert_eq!(r.action, Some(Action::Updated));
    assert_eq!(plan.updates.len(), 1);
    assert_eq!(plan.updates[0].0, id(7));
    assert_eq!(
        plan.updates[0].1.platform_post_id.as_deref(),
        Some("th-new")
    );
    assert!(plan.inserts.is_empty());
}

#[test]
fn platform_post_id_match_wins_over_a_nearer_body_match() {
    let mut by_pid = scheduled_post(9, "hello world", at(20));
    by_pid.fields.platform_post_id = Some("th-9".into());
    let nearer = scheduled_post(8, "hello world", at(1));
    let mut i = published_item("https://threads.example/p/9");
    i.platform_post_id = Some("th-9".into());
    i.body = Some("hello world".into());

    let plan = run(vec![i], vec![nearer, by_pid]);

    let r = &plan.results[0];
    assert_eq!(r.post_id, Some(id(9)));
    assert_eq!(r.matched_by, Some(MatchedBy::PlatformPostId));
    assert_eq!(r.status, Some(PostStatus::Published));
    assert_eq!(plan.updates.len(), 1);
    assert_eq!(plan.updates[0].0, id(9));
}

#[test]
fn platform_post_id_is_matched_only_on_the_same_platform() {
    // The same platform id on an X post of mine must not be taken for the Threads post.
    let mut on_x = scheduled_post(9, "hello world", at(1));
    on_x.platform = Platform::X;
    on_x.slot_id = id(12);
    on_x.fields.platform_post_id = Some("shared-1".into());
    let threads = scheduled_post(8, "hello world", at(3));
    let mut i = published_item("https://threads.example/p/8");
    i.platform_post_id = Some("shared-1".into());
    i.body = Some("hello world".into());

    let plan = run(vec![i], vec![on_x, threads]);

    let r = &plan.results[0];
    assert!(r.ok(), "{r:?}");
    assert_eq!(r.post_id, Some(id(8)));
    assert_eq!(r.matched_by, Some(MatchedBy::Body));
    assert_eq!(plan.updates.len(), 1);
    assert_eq!(plan.updates[0].0, id(8));
    assert_eq!(
        plan.updates[0].1.platform_post_id.as_deref(),
        Some("shared-1")
    );
}

#[test]
fn platform_post_id_on_another_platform_neither_matches_nor_conflicts() {
    let mut on_x = scheduled_post(9, "something else", at(1));
    on_x.platform = Platform::X;
    on_x.slot_id = id(12);
    on_x.fields.platform_post_id = Some("shared-1".into());
    let mut i = scheduled_item("a brand new post", at(2));
    i.platform_post_id = Some("shared-1".into());

    let plan = run(vec![i], vec![on_x]);

    let r = &plan.results[0];
    assert!(r.ok(), "{r:?}");
    assert_eq!(r.action, Some(Action::Inserted));
    assert_eq!(plan.inserts.len(), 1);
    assert_eq!(
        plan.inserts[0].fields.platform_post_id.as_deref(),
        Some("shared-1")
    );
    assert!(plan.updates.is_empty());
}

#[test]
fn body_matching_trims_and_collapses_whitespace_including_ideographic_space() {
    let stored = scheduled_post(7, "早安 台北\n今天 晴", at(2));
    let mut i = scheduled_item("  早安\u{3000}\u{3000}台北 \t 今天\r\n晴  ", at(3));
    i.platform_post_id = Some("th-7".into());

    let plan = run(vec![i], vec![stored]);

    let r = &plan.results[0];
    assert_eq!(r.post_id, Some(id(7)));
    assert_eq!(r.matched_by, Some(MatchedBy::Body));
    assert_eq!(r.action, Some(Action::Updated));
    assert!(plan.inserts.is_empty());
    let (pid, fields) = &plan.updates[0];
    assert_eq!(*pid, id(7));
    assert_eq!(fields.scheduled_for, Some(at(3)));
    assert_eq!(fields.platform_post_id.as_deref(), Some("th-7"));
    // A service post keeps its reviewed text; whitespace alone is no difference worth a note.
    assert_eq!(fields.body, "早安 台北\n今天 晴");
    assert_eq!(r.note, None);
}

#[test]
fn a_post_stored_without_a_body_key_is_matched_and_written_with_its_bodys() {
    let mut stored = scheduled_post(7, "hello world", at(2));
    stored.fields.body_key = String::new();
    let mut i = scheduled_item("hello  world", at(3));
    i.platform_post_id = Some("th-7".into());

    let plan = run(vec![i], vec![stored]);

    let r = &plan.results[0];
    assert_eq!(r.post_id, Some(id(7)));
    assert_eq!(r.matched_by, Some(MatchedBy::Body));
    let (_, fields) = &plan.updates[0];
    assert_eq!(fields.body_key, body_key("hello world"));
}

#[test]
fn body_matching_does_not_ignore_missing_whitespace() {
    let stored = scheduled_post(7, "早安 台北", at(2));
    let plan = run(vec![scheduled_item("早安台北", at(2))], vec![stored]);

    let r = &plan.results[0];
    assert_eq!(r.action, Some(Action::Inserted));
    assert_eq!(r.matched_by, None);
    assert_ne!(r.post_id, Some(id(7)));
    assert!(plan.updates.is_empty());
}

#[test]
fn body_matching_picks_the_in_flight_post_nearest_in_time() {
    let early = scheduled_post(1, "same text", at(-6));
    let mut failed = post(2, PostStatus::Failed, "same text");
    failed.fields.scheduled_for = Some(at(1));
    failed.fields.failure_reason = Some("token expired".into());
    let mut approved = post(3, PostStatus::Approved, "same text");
    approved.planned_at = Some(at(5));
    let late = scheduled_post(4, "same text", at(30));

    // Nearest to +2h is the failed post at +1h.
    let plan = run(
        vec![scheduled_item("same text", at(2))],
        vec![
            early.clone(),
            failed.clone(),
            approved.clone(),
            late.clone(),
        ],
    );
    assert_eq!(plan.results[0].post_id, Some(id(2)));
    assert_eq!(plan.results[0].matched_by, Some(MatchedBy::Body));
    assert_eq!(plan.results[0].status, Some(PostStatus::Scheduled));

    // Nearest to +4h is the approved post, by its planned time.
    let plan = run(
        vec![scheduled_item("same text", at(4))],
        vec![
            early.clone(),
            failed.clone(),
            approved.clone(),
            late.clone(),
        ],
    );
    assert_eq!(plan.results[0].post_id, Some(id(3)));

    // Nearest to +20h is the late scheduled post.
    let plan = run(
        vec![scheduled_item("same text", at(20))],
        vec![early, failed, approved, late],
    );
    assert_eq!(plan.results[0].post_id, Some(id(4)));
    assert_eq!(plan.updates.len(), 1);
    assert_eq!(plan.updates[0].0, id(4));
}

#[test]
fn body_matching_skips_posts_that_are_neither_in_flight_nor_recently_published() {
    let mut cancelled = post(1, PostStatus::Cancelled, "same text");
    cancelled.fields.scheduled_for = Some(at(2));
    let mut deleted = post(2, PostStatus::Deleted, "same text");
    deleted.fields.scheduled_for = Some(at(2));
    let mut stocked = post(3, PostStatus::Stocked, "same text");
    stocked.fields.scheduled_for = Some(at(2));
    let mut review = post(4, PostStatus::InternalReview, "same text");
    review.planned_at = Some(at(2));
    let old = published_post(5, "same text", at(-13));
    let mut publishing = post(6, PostStatus::Publishing, "same text");
    publishing.planned_at = Some(at(2));

    let plan = run(
        vec![scheduled_item("same text", at(2))],
        vec![cancelled, deleted, stocked, review, old, publishing],
    );

    let r = &plan.results[0];
    assert_eq!(r.action, Some(Action::Inserted), "{r:?}");
    assert_eq!(r.matched_by, None);
    assert_eq!(plan.inserts.len(), 1);
    assert!(plan.updates.is_empty());
}

#[test]
fn body_matching_only_looks_at_the_reported_account() {
    let mut elsewhere = scheduled_post(7, "same text", at(2));
    elsewhere.slot_id = other_slot().slot_id;

    let plan = run(vec![scheduled_item("same text", at(2))], vec![elsewhere]);

    assert_eq!(plan.results[0].action, Some(Action::Inserted));
    assert!(plan.updates.is_empty());
}

#[test]
fn a_post_published_within_12_hours_is_matched_by_body() {
    let stored = published_post(7, "launch day", at(-11));
    let mut i = published_item("https://threads.example/p/7-edited");
    i.body = Some("launch day".into());
    i.published_at = Some(at(-11));

    let plan = run(vec![i], vec![stored]);

    let r = &plan.results[0];
    assert_eq!(r.post_id, Some(id(7)));
    assert_eq!(r.matched_by, Some(MatchedBy::Body));
    assert_eq!(r.action, Some(Action::Updated));
    assert!(plan.inserts.is_empty());
    assert_eq!(
        plan.updates[0].1.permalink.as_deref(),
        Some("https://threads.example/p/7-edited")
    );
}

#[test]
fn a_post_published_exactly_12_hours_ago_is_still_matched_by_body() {
    let stored = published_post(7, "launch day", at(-12));
    let mut i = published_item("https://threads.example/p/7");
    i.body = Some("launch day".into());

    let plan = run(vec![i], vec![stored]);

    assert_eq!(plan.results[0].post_id, Some(id(7)));
    assert_eq!(plan.results[0].matched_by, Some(MatchedBy::Body));
    assert_eq!(plan.results[0].action, Some(Action::Unchanged));
    assert_nothing_written(&plan);
}

#[test]
fn a_post_published_13_hours_ago_is_not_matched_and_a_new_post_is_inserted() {
    let stored = published_post(7, "launch day", at(-13));
    let mut i = published_item("https://threads.example/p/new");
    i.body = Some("launch day".into());
    i.platform_post_id = Some("th-new".into());

    let plan = run(vec![i], vec![stored]);

    let r = &plan.results[0];
    assert_eq!(r.action, Some(Action::Inserted));
    assert_eq!(r.matched_by, None);
    assert_ne!(r.post_id, Some(id(7)));
    assert!(plan.updates.is_empty());
    assert_eq!(plan.inserts.len(), 1);
    let new = &plan.inserts[0];
    assert_eq!(Some(new.id), r.post_id);
    assert_eq!(new.fields.status, PostStatus::Published);
    assert_eq!(new.fields.published_at, Some(now()));
    assert_eq!(new.fields.platform_post_id.as_deref(), Some("th-new"));
}

// ---------------------------------------------------------------------------------------------
// Rule 4: a published report adopts an unpublished post of the same body
// ---------------------------------------------------------------------------------------------

#[test]
fn published_report_adopts_a_post_scheduled_within_a_day_despite_the_tools_own_id() {
    let mut stored = scheduled_post(7, "spring sale", at(20));
    stored.fields.platform_post_id = Some("buffer-123".into());
    let mut i = published_item("https://threads.example/p/th-999");
    i.body = Some("spring  sale ".into());
    i.platform_post_id = Some("th-999".into());

    let plan = run(vec![i], vec![stored]);

    let r = &plan.results[0];
    assert!(r.ok(), "{r:?}");
    assert_eq!(r.post_id, Some(id(7)));
    assert_eq!(r.matched_by, Some(MatchedBy::Body));
    assert_eq!(r.action, Some(Action::Updated));
    assert_eq!(r.status, Some(PostStatus::Published));
    let note = r.note.as_deref().expect("a note explains the new id");
    assert!(note.contains("th-999"), "{note}");
    assert!(note.contains("buffer-123"), "{note}");
    assert!(plan.inserts.is_empty());

    assert_eq!(plan.updates.len(), 1);
    let (pid, f) = &plan.updates[0];
    assert_eq!(*pid, id(7));
    assert_eq!(f.status, PostStatus::Published);
    assert_eq!(f.platform_post_id.as_deref(), Some("th-999"));
    assert_eq!(f.scheduler_ref.as_deref(), Some("buffer-123"));
    assert_eq!(
        f.permalink.as_deref(),
        Some("https://threads.example/p/th-999")
    );
    assert_eq!(f.published_at, Some(now()));
    assert_eq!(f.scheduled_for, Some(at(20)));

    assert_eq!(plan.events.len(), 1);
    let e = &plan.events[0];
    assert_eq!(e.post_id, id(7));
    assert_eq!(e.action, "reported published");
    assert_eq!(e.detail["note"].as_str(), Some(note));
    assert_eq!(e.detail["platform_post_id"].as_str(), Some("th-999"));
}

#[test]
fn published_report_adopts_a_post_scheduled_within_a_day_before_it() {
    let mut stored = scheduled_post(7, "spring sale", at(-30));
    stored.fields.platform_post_id = Some("buffer-123".into());
    let mut i = published_item("https://threads.example/p/th-999");
    i.body = Some("spring sale".into());
    i.platform_post_id = Some("th-999".into());
    i.published_at = Some(at(-8));

    let plan = run(vec![i], vec![stored]);

    assert_eq!(plan.results[0].post_id, Some(id(7)));
    assert!(plan.results[0].note.is_some());
    assert_eq!(plan.updates[0].1.published_at, Some(at(-8)));
    assert_eq!(
        plan.updates[0].1.scheduler_ref.as_deref(),
        Some("buffer-123")
    );
}

#[test]
fn published_report_adopts_an_unscheduled_post_whatever_its_planned_time() {
    let mut stored = post(7, PostStatus::Approved, "spring sale");
    stored.planned_at = Some(at(72));
    stored.fields.platform_post_id = Some("tool-1".into());
    let mut i = published_item("https://threads.example/p/th-5");
    i.body = Some("spring sale".into());
    i.platform_post_id = Some("th-5".into());

    let plan = run(vec![i], vec![stored]);

    let r = &plan.results[0];
    assert_eq!(r.post_id, Some(id(7)));
    assert_eq!(r.matched_by, Some(MatchedBy::Body));
    assert!(r.note.as_deref().unwrap().contains("tool-1"));
    let f = &plan.updates[0].1;
    assert_eq!(f.status, PostStatus::Published);
    assert_eq!(f.platform_post_id.as_deref(), Some("th-5"));
    assert_eq!(f.scheduler_ref.as_deref(), Some("tool-1"));
}

#[test]
fn published_report_does_not_adopt_a_post_scheduled_more_than_a_day_away() {
    let mut stored = scheduled_post(7, "spring sale", at(25));
    stored.fields.platform_post_id = Some("buffer-123".into());
    let mut i = published_item("https://threads.example/p/th-999");
    i.body = Some("spring sale".into());
    i.platform_post_id = Some("th-999".into());

    let plan = run(vec![i], vec![stored]);

    let r = &plan.results[0];
    assert_eq!(r.action, Some(Action::Inserted));
    assert_eq!(r.matched_by, None);
    assert_eq!(r.note, None);
    assert_ne!(r.post_id, Some(id(7)));
    assert!(plan.updates.is_empty());
    assert_eq!(plan.inserts.len(), 1);
    assert_eq!(
        plan.inserts[0].fields.platform_post_id.as_deref(),
        Some("th-999")
    );
    assert_eq!(plan.inserts[0].fields.scheduler_ref, None);
}

#[test]
fn a_scheduled_report_with_another_id_does_not_adopt_a_same_body_post() {
    let mut stored = scheduled_post(7, "spring sale", at(2));
    stored.fields.platform_post_id = Some("buffer-123".into());
    let mut i = scheduled_item("spring sale", at(2));
    i.platform_post_id = Some("buffer-456".into());

    let plan = run(vec![i], vec![stored]);

    assert_eq!(plan.results[0].action, Some(Action::Inserted));
    assert!(plan.updates.is_empty());
    assert_eq!(plan.inserts.len(), 1);
}

#[test]
fn published_report_adopts_a_stocked_post_by_body_and_flags_it_as_from_stock() {
    let mut stored = post(7, PostStatus::Stocked, "spring sale");
    stored.fields.unschedule_pending = true;
    let mut i = published_item("https://threads.example/p/th-5");
    i.body = Some("spring sale".into());
    i.platform_post_id = Some("th-5".into());

    let plan = run(vec![i], vec![stored]);

    let r = &plan.results[0];
    assert_eq!(r.post_id, Some(id(7)));
    assert_eq!(r.matched_by, Some(MatchedBy::Body));
    assert_eq!(r.status, Some(PostStatus::Published));
    assert!(r.published_from_stock);
    assert!(r.warning.is_some());
    let f = &plan.updates[0].1;
    assert_eq!(f.status, PostStatus::Published);
    assert!(!f.unschedule_pending);
}

// ---------------------------------------------------------------------------------------------
// Ownership and conflicts (rule 5)
// ---------------------------------------------------------------------------------------------

#[test]
fn post_id_of_another_workspace_is_not_found() {
    let mut foreign = post(7, PostStatus::Approved, "hi");
    foreign.in_workspace = false;
    let mut i = by_id(ReportedStatus::Scheduled, 7);
    i.scheduled_for = Some(at(1));

    let plan = run(vec![i.clone()], vec![foreign]);

    let r = &plan.results[0];
    assert_eq!(code(r), Some("not_found"));
    assert_eq!(r.post_id, None);
    assert_eq!(r.action, None);
    assert_nothing_written(&plan);
    assert!(plan.all_rejected());

    // An id nobody has is not found either.
    i.post_id = Some(id(99));
    let plan = run(vec![i], vec![]);
    assert_eq!(code(&plan.results[0]), Some("not_found"));
}

#[test]
fn post_id_of_another_agents_post_is_forbidden() {
    let mut theirs = post(7, PostStatus::Approved, "hi");
    theirs.mine = false;
    let mut i = by_id(ReportedStatus::Scheduled, 7);
    i.scheduled_for = Some(at(1));

    let plan = run(vec![i], vec![theirs]);

    let r = &plan.results[0];
    assert_eq!(code(r), Some("forbidden"));
    assert_eq!(r.action, None);
    assert_nothing_written(&plan);
}

#[test]
fn platform_post_id_of_another_agents_post_is_forbidden() {
    let mut theirs = scheduled_post(7, "hi", at(1));
    theirs.mine = false;
    theirs.slot_id = id(40);
    theirs.fields.platform_post_id = Some("th-7".into());
    let mut i = published_item("https://threads.example/p/7");
    i.platform_post_id = Some("th-7".into());
    i.body = Some("hi".into());

    let plan = run(vec![i], vec![theirs]);

    let r = &plan.results[0];
    assert_eq!(code(r), Some("forbidden"));
    assert!(r.error.as_ref().unwrap().message().contains("th-7"));
    assert_nothing_written(&plan);
}

#[test]
fn post_id_of_another_account_of_mine_is_rejected() {
    let mut other = post(7, PostStatus::Approved, "hi");
    other.slot_id = other_slot().slot_id;
    let mut i = by_id(ReportedStatus::Scheduled, 7);
    i.scheduled_for = Some(at(1));

    let plan = run(vec![i], vec![other]);

    let r = &plan.results[0];
    assert_eq!(code(r), Some("rejected"));
    assert!(r.error.as_ref().unwrap().message().contains("TW-T001"));
    assert_nothing_written(&plan);
}

#[test]
fn platform_post_id_on_a_post_of_another_account_of_mine_is_a_conflict() {
    let mut other = scheduled_post(7, "hi", at(1));
    other.slot_id = other_slot().slot_id;
    other.fields.platform_post_id = Some("th-7".into());
    let mut i = published_item("https://threads.example/p/7");
    i.platform_post_id = Some("th-7".into());
    i.body = Some("hi".into());

    let plan = run(vec![i], vec![other]);

    assert_eq!(code(&plan.results[0]), Some("conflict"));
    assert_nothing_written(&plan);
}

#[test]
fn platform_post_id_with_a_post_id_match_is_a_conflict_when_another_post_holds_it() {
    let target = post(7, PostStatus::Approved, "hi");
    let mut holder = published_post(8, "other", at(-2));
    holder.fields.platform_post_id = Some("th-8".into());
    let mut i = by_id(ReportedStatus::Scheduled, 7);
    i.scheduled_for = Some(at(1));
    i.platform_post_id = Some("th-8".into());

    let plan = run(vec![i], vec![target, holder]);

    let r = &plan.results[0];
    assert_eq!(code(r), Some("conflict"));
    assert!(r.error.as_ref().unwrap().message().contains("th-8"));
    assert_eq!(r.post_id, None);
    assert_nothing_written(&plan);
}

#[test]
fn platform_post_id_with_a_post_id_match_is_fine_when_the_same_post_holds_it() {
    let mut target = scheduled_post(7, "hi", at(1));
    target.fields.platform_post_id = Some("th-7".into());
    let mut i = by_id(ReportedStatus::Published, 7);
    i.permalink = Some("https://threads.example/p/7".into());
    i.platform_post_id = Some("th-7".into());

    let plan = run(vec![i], vec![target]);

    let r = &plan.results[0];
    assert!(r.ok(), "{r:?}");
    assert_eq!(r.matched_by, Some(MatchedBy::PostId));
    assert_eq!(r.status, Some(PostStatus::Published));
}

// ---------------------------------------------------------------------------------------------
// The post state table
// ---------------------------------------------------------------------------------------------

#[test]
fn approved_reported_scheduled_records_the_schedule_and_an_event() {
    let mut i = by_id(ReportedStatus::Scheduled, 7);
    i.scheduled_for = Some(at(3));
    i.platform_post_id = Some("buffer-1".into());
    i.has_media = Some(true);

    let plan = run(vec![i], vec![post(7, PostStatus::Approved, "hi")]);

    let r = &plan.results[0];
    assert_eq!(r.action, Some(Action::Updated));
    assert_eq!(r.status, Some(PostStatus::Scheduled));
    assert_eq!(r.note, None);
    assert_eq!(r.warning, None);
    assert!(!r.published_from_stock);
    let f = &plan.updates[0].1;
    assert_eq!(f.status, PostStatus::Scheduled);
    assert_eq!(f.scheduled_for, Some(at(3)));
    assert_eq!(f.platform_post_id.as_deref(), Some("buffer-1"));
    assert_eq!(f.has_media, Some(true));
    assert_eq!(f.published_at, None);
    assert_eq!(plan.events.len(), 1);
    assert_eq!(plan.events[0].action, "reported scheduled");
    assert_eq!(plan.events[0].detail["status"].as_str(), Some("scheduled"));
    assert_eq!(plan.count(Action::Updated), 1);
}

#[test]
fn approved_reported_published_becomes_published() {
    let mut i = by_id(ReportedStatus::Published, 7);
    i.permalink = Some("https://threads.example/p/7".into());
    i.published_at = Some(at(-1));
    i.platform_post_id = Some("th-7".into());

    let plan = run(vec![i], vec![post(7, PostStatus::Approved, "hi")]);

    let r = &plan.results[0];
    assert_eq!(r.action, Some(Action::Updated));
    assert_eq!(r.status, Some(PostStatus::Published));
    assert!(!r.published_from_stock);
    let f = &plan.updates[0].1;
    assert_eq!(f.status, PostStatus::Published);
    assert_eq!(f.published_at, Some(at(-1)));
    assert_eq!(f.permalink.as_deref(), Some("https://threads.example/p/7"));
    assert_eq!(f.platform_post_id.as_deref(), Some("th-7"));
    assert_eq!(plan.events[0].action, "reported published");
}

#[test]
fn published_at_defaults_to_the_time_of_the_report() {
    let mut i = by_id(ReportedStatus::Published, 7);
    i.permalink = Some("https://threads.example/p/7".into());

    let plan = run(vec![i], vec![post(7, PostStatus::Approved, "hi")]);

    assert_eq!(plan.updates[0].1.published_at, Some(now()));
}

#[test]
fn approved_reported_failed_becomes_failed_with_its_reason() {
    let mut i = by_id(ReportedStatus::Failed, 7);
    i.failure_reason = Some("media rejected by the platform".into());

    let plan = run(vec![i], vec![post(7, PostStatus::Approved, "hi")]);

    let r = &plan.results[0];
    assert_eq!(r.action, Some(Action::Updated));
    assert_eq!(r.status, Some(PostStatus::Failed));
    let f = &plan.updates[0].1;
    assert_eq!(f.status, PostStatus::Failed);
    assert_eq!(
        f.failure_reason.as_deref(),
        Some("media rejected by the platform")
    );
    assert_eq!(plan.events[0].action, "reported failed");
    assert_eq!(
        plan.events[0].reason.as_deref(),
        Some("media rejected by the platform")
    );
}

#[test]
fn approved_reported_cancelled_is_ignored_and_stays_approved() {
    let mut i = by_id(ReportedStatus::Cancelled, 7);
    i.failure_reason = Some("changed our mind".into());

    let plan = run(vec![i], vec![post(7, PostStatus::Approved, "hi")]);

    let r = &plan.results[0];
    assert!(r.ok());
    assert_eq!(r.action, Some(Action::Ignored));
    assert_eq!(r.status, Some(PostStatus::Approved));
    assert_eq!(r.post_id, Some(id(7)));
    assert_eq!(r.matched_by, Some(MatchedBy::PostId));
    assert!(r.note.is_some());
    assert_nothing_written(&plan);
    assert_eq!(plan.count(Action::Ignored), 1);
}

#[test]
fn scheduled_reported_published_keeps_the_schedule_and_sets_the_publication() {
    let mut stored = scheduled_post(7, "hi", at(-1));
    stored.fields.platform_post_id = Some("th-7".into());
    let mut i = published_item("https://threads.example/p/7");
    i.platform_post_id = Some("th-7".into());

    let plan = run(vec![i], vec![stored]);

    let r = &plan.results[0];
    assert_eq!(r.matched_by, Some(MatchedBy::PlatformPostId));
    assert_eq!(r.action, Some(Action::Updated));
    assert_eq!(r.status, Some(PostStatus::Published));
    let f = &plan.updates[0].1;
    assert_eq!(f.status, PostStatus::Published);
    assert_eq!(f.scheduled_for, Some(at(-1)));
    assert_eq!(f.published_at, Some(now()));
    assert_eq!(f.scheduler_ref, None);
}

#[test]
fn scheduled_reported_failed_becomes_failed() {
    let mut i = by_id(ReportedStatus::Failed, 7);
    i.failure_reason = Some("account locked".into());

    let plan = run(vec![i], vec![scheduled_post(7, "hi", at(-1))]);

    assert_eq!(plan.results[0].action, Some(Action::Updated));
    assert_eq!(plan.results[0].status, Some(PostStatus::Failed));
    let f = &plan.updates[0].1;
    assert_eq!(f.status, PostStatus::Failed);
    assert_eq!(f.failure_reason.as_deref(), Some("account locked"));
}

#[test]
fn scheduled_reported_cancelled_becomes_cancelled() {
    let mut i = by_id(ReportedStatus::Cancelled, 7);
    i.failure_reason = Some("client asked to hold".into());

    let plan = run(vec![i], vec![scheduled_post(7, "hi", at(5))]);

    let r = &plan.results[0];
    assert_eq!(r.action, Some(Action::Updated));
    assert_eq!(r.status, Some(PostStatus::Cancelled));
    assert_eq!(plan.updates.len(), 1);
    let f = &plan.updates[0].1;
    assert_eq!(f.status, PostStatus::Cancelled);
    assert_eq!(f.failure_reason.as_deref(), Some("client asked to hold"));
    assert_eq!(plan.events[0].action, "reported cancelled");
}

#[test]
fn published_stays_published_when_reported_scheduled_failed_or_cancelled() {
    for status in [
        ReportedStatus::Scheduled,
        ReportedStatus::Failed,
        ReportedStatus::Cancelled,
    ] {
        let mut i = by_id(status, 7);
        i.scheduled_for = Some(at(3));
        i.failure_reason = Some("whatever".into());

        let plan = run(vec![i], vec![published_post(7, "hi", at(-1))]);

        let r = &plan.results[0];
        assert!(r.ok(), "{status:?}: {r:?}");
        assert_eq!(r.action, Some(Action::Ignored), "{status:?}");
        assert_eq!(r.status, Some(PostStatus::Published), "{status:?}");
        assert!(
            r.note.as_deref().unwrap().contains(status.as_str()),
            "{status:?}: {:?}",
            r.note
        );
        assert_nothing_written(&plan);
    }
}

#[test]
fn published_reported_published_with_a_new_permalink_is_updated() {
    let mut stored = published_post(7, "hi", at(-30));
    stored.fields.platform_post_id = Some("th-7".into());
    let mut i = published_item("https://threads.example/p/7?canonical");
    i.platform_post_id = Some("th-7".into());

    let plan = run(vec![i], vec![stored]);

    let r = &plan.results[0];
    assert_eq!(r.action, Some(Action::Updated));
    assert_eq!(r.status, Some(PostStatus::Published));
    let f = &plan.updates[0].1;
    assert_eq!(
        f.permalink.as_deref(),
        Some("https://threads.example/p/7?canonical")
    );
    // The first publication time is kept when none is given.
    assert_eq!(f.published_at, Some(at(-30)));
    assert_eq!(plan.events.len(), 1);
}

#[test]
fn published_reported_published_identically_is_unchanged() {
    let mut stored = published_post(7, "hi", at(-30));
    stored.fields.platform_post_id = Some("th-7".into());
    let mut i = published_item("https://threads.example/p/7");
    i.platform_post_id = Some("th-7".into());

    let plan = run(vec![i], vec![stored]);

    let r = &plan.results[0];
    assert!(r.ok());
    assert_eq!(r.action, Some(Action::Unchanged));
    assert_eq!(r.status, Some(PostStatus::Published));
    assert_eq!(r.post_id, Some(id(7)));
    assert_eq!(r.matched_by, Some(MatchedBy::PlatformPostId));
    assert_nothing_written(&plan);
    assert_eq!(plan.count(Action::Unchanged), 1);
}

#[test]
fn posts_not_yet_through_review_are_rejected_for_every_reported_status() {
    for stored in [
        PostStatus::Draft,
        PostStatus::InternalReview,
        PostStatus::ClientReview,
        PostStatus::SentBack,
        PostStatus::RewriteRequested,
    ] {
        for reported in [
            ReportedStatus::Scheduled,
            ReportedStatus::Published,
            ReportedStatus::Failed,
            ReportedStatus::Cancelled,
        ] {
            let mut i = by_id(reported, 7);
            i.scheduled_for = Some(at(2));
            i.permalink = Some("https://threads.example/p/7".into());
            i.failure_reason = Some("x".into());

            let plan = run(vec![i], vec![post(7, stored, "hi")]);

            let r = &plan.results[0];
            assert_eq!(
                code(r),
                Some("rejected"),
                "{stored:?} + {reported:?}: {r:?}"
            );
            assert!(
                r.error
                    .as_ref()
                    .unwrap()
                    .message()
                    .contains(stored.as_str()),
                "{stored:?}"
            );
            assert_eq!(r.action, None);
            assert_nothing_written(&plan);
            assert!(plan.all_rejected());
        }
    }
}

#[test]
fn stocked_reported_cancelled_is_unscheduled_and_clears_unschedule_pending() {
    let mut stored = post(7, PostStatus::Stocked, "hi");
    stored.fields.unschedule_pending = true;
    stored.fields.platform_post_id = Some("buffer-1".into());
    let mut i = by_id(ReportedStatus::Cancelled, 7);
    i.failure_reason = Some("removed from Buffer".into());

    let plan = run(vec![i], vec![stored]);

    let r = &plan.results[0];
    assert!(r.ok(), "{r:?}");
    assert_eq!(r.action, Some(Action::Unscheduled));
    assert_eq!(r.status, Some(PostStatus::Stocked));
    assert!(r.note.is_some());
    assert_eq!(plan.updates.len(), 1);
    let f = &plan.updates[0].1;
    assert_eq!(f.status, PostStatus::Stocked);
    assert!(!f.unschedule_pending);
    assert_eq!(f.failure_reason.as_deref(), Some("removed from Buffer"));
    assert_eq!(f.platform_post_id.as_deref(), Some("buffer-1"));
    assert_eq!(plan.events.len(), 1);
    assert_eq!(plan.events[0].action, "unscheduled");
    assert_eq!(plan.count(Action::Unscheduled), 1);
}

#[test]
fn stocked_reported_published_is_published_from_stock_with_a_warning() {
    let mut stored = post(7, PostStatus::Stocked, "hi");
    stored.fields.unschedule_pending = true;
    let mut i = by_id(ReportedStatus::Published, 7);
    i.permalink = Some("https://threads.example/p/7".into());

    let plan = run(vec![i], vec![stored]);

    let r = &plan.results[0];
    assert!(r.ok(), "{r:?}");
    assert_eq!(r.action, Some(Action::Updated));
    assert_eq!(r.status, Some(PostStatus::Published));
    assert!(r.published_from_stock);
    assert!(r.warning.as_deref().unwrap().contains("inventory"));
    let f = &plan.updates[0].1;
    assert_eq!(f.status, PostStatus::Published);
    assert_eq!(f.published_at, Some(now()));
    assert!(!f.unschedule_pending);
}

#[test]
fn stocked_reported_scheduled_is_rejected() {
    let mut i = by_id(ReportedStatus::Scheduled, 7);
    i.scheduled_for = Some(at(2));

    let plan = run(vec![i], vec![post(7, PostStatus::Stocked, "hi")]);

    let r = &plan.results[0];
    assert_eq!(code(r), Some("rejected"));
    assert!(r.error.as_ref().unwrap().message().contains("inventory"));
    assert_nothing_written(&plan);
}

#[test]
fn stocked_reported_failed_is_unchanged() {
    let mut i = by_id(ReportedStatus::Failed, 7);
    i.failure_reason = Some("never went out".into());

    let plan = run(vec![i], vec![post(7, PostStatus::Stocked, "hi")]);

    let r = &plan.results[0];
    assert!(r.ok());
    assert_eq!(r.action, Some(Action::Unchanged));
    assert_eq!(r.status, Some(PostStatus::Stocked));
    assert!(!r.published_from_stock);
    assert_nothing_written(&plan);
}

#[test]
fn a_post_deleted_from_inventory_cannot_be_scheduled() {
    let mut stored = post(7, PostStatus::Stocked, "hi");
    stored.discarded = true;
    let mut i = by_id(ReportedStatus::Scheduled, 7);
    i.scheduled_for = Some(at(2));

    let plan = run(vec![i], vec![stored]);

    let r = &plan.results[0];
    assert_eq!(code(r), Some("rejected"));
    assert!(r.error.as_ref().unwrap().message().contains("deleted"));
    assert_nothing_written(&plan);
}

#[test]
fn a_post_deleted_from_inventory_reported_published_is_published_with_a_warning() {
    let mut stored = post(7, PostStatus::Stocked, "hi");
    stored.discarded = true;
    let mut i = by_id(ReportedStatus::Published, 7);
    i.permalink = Some("https://threads.example/p/7".into());

    let plan = run(vec![i], vec![stored]);

    let r = &plan.results[0];
    assert_eq!(r.action, Some(Action::Updated));
    assert_eq!(r.status, Some(PostStatus::Published));
    assert!(r.warning.is_some());
    assert_eq!(plan.updates[0].1.status, PostStatus::Published);
}

#[test]
fn a_post_deleted_on_the_platform_ignores_reports() {
    let mut i = by_id(ReportedStatus::Published, 7);
    i.permalink = Some("https://threads.example/p/7".into());

    let plan = run(vec![i], vec![post(7, PostStatus::Deleted, "hi")]);

    assert_eq!(plan.results[0].action, Some(Action::Ignored));
    assert_eq!(plan.results[0].status, Some(PostStatus::Deleted));
    assert_nothing_written(&plan);
}

#[test]
fn a_post_the_service_is_publishing_ignores_scheduled_and_cancelled() {
    for status in [ReportedStatus::Scheduled, ReportedStatus::Cancelled] {
        let mut i = by_id(status, 7);
        i.scheduled_for = Some(at(1));

        let plan = run(vec![i], vec![post(7, PostStatus::Publishing, "hi")]);

        assert_eq!(plan.results[0].action, Some(Action::Ignored), "{status:?}");
        assert_eq!(plan.results[0].status, Some(PostStatus::Publishing));
        assert_nothing_written(&plan);
    }
}

#[test]
fn cancelled_report_matching_no_post_is_ignored_and_inserts_nothing() {
    let mut i = item(ReportedStatus::Cancelled);
    i.body = Some("never seen before".into());
    i.platform_post_id = Some("buffer-77".into());
    i.failure_reason = Some("dropped".into());

    let plan = run(vec![i], vec![scheduled_post(7, "something else", at(1))]);

    let r = &plan.results[0];
    assert!(r.ok());
    assert_eq!(r.action, Some(Action::Ignored));
    assert_eq!(r.post_id, None);
    assert_eq!(r.status, None);
    assert_eq!(r.matched_by, None);
    assert!(r.note.is_some());
    assert_nothing_written(&plan);
    assert!(!plan.all_rejected());
}

// ---------------------------------------------------------------------------------------------
// Creation and rule 7
// ---------------------------------------------------------------------------------------------

#[test]
fn a_first_report_without_body_is_invalid_on_body() {
    let mut i = published_item("https://threads.example/p/1");
    i.platform_post_id = Some("th-unknown".into());

    let plan = run(vec![i], vec![]);

    let r = &plan.results[0];
    let e = r.error.as_ref().expect("refused");
    assert_eq!(e.code(), "invalid");
    assert_eq!(e.field(), Some("body"));
    assert!(e.message().starts_with("body: "));
    assert_eq!(r.action, None);
    assert_nothing_written(&plan);
    assert!(plan.all_rejected());
    assert_eq!(plan.rejected(), 1);
}

#[test]
fn a_first_report_with_body_inserts_a_post_created_by_the_report() {
    let mut i = scheduled_item("brand new", at(4));
    i.platform_post_id = Some("buffer-9".into());
    i.topic = Some("launch".into());
    i.sponsored = Some(true);
    i.has_media = Some(false);

    let plan = run(vec![i], vec![]);

    let r = &plan.results[0];
    assert!(r.ok());
    assert_eq!(r.action, Some(Action::Inserted));
    assert_eq!(r.status, Some(PostStatus::Scheduled));
    assert_eq!(r.matched_by, None);
    assert!(plan.updates.is_empty());
    assert_eq!(plan.inserts.len(), 1);
    let new = &plan.inserts[0];
    assert_eq!(Some(new.id), r.post_id);
    assert_eq!(new.slot, slot());
    let f = &new.fields;
    assert_eq!(f.status, PostStatus::Scheduled);
    assert_eq!(f.body, "brand new");
    assert_eq!(f.body_key, body_key("brand new"));
    assert_eq!(f.topic.as_deref(), Some("launch"));
    assert!(f.sponsored);
    assert_eq!(f.has_media, Some(false));
    assert_eq!(f.scheduled_for, Some(at(4)));
    assert_eq!(f.published_at, None);
    assert_eq!(f.platform_post_id.as_deref(), Some("buffer-9"));
    assert_eq!(f.scheduler_ref, None);
    assert!(!f.unschedule_pending);
    assert_eq!(plan.events.len(), 1);
    assert_eq!(plan.events[0].post_id, new.id);
    assert_eq!(plan.events[0].action, "reported scheduled");
    assert_eq!(plan.count(Action::Inserted), 1);
}

#[test]
fn a_post_created_by_a_report_follows_later_edits_in_the_same_batch() {
    let mut first = scheduled_item("draft text", at(2));
    first.platform_post_id = Some("th-1".into());
    first.topic = Some("old topic".into());
    let mut second = published_item("https://threads.example/p/th-1");
    second.platform_post_id = Some("th-1".into());
    second.body = Some("edited text".into());
    second.topic = Some("new topic".into());
    second.sponsored = Some(true);

    let plan = run(vec![first, second], vec![]);

    let (a, b) = (&plan.results[0], &plan.results[1]);
    assert_eq!(a.action, Some(Action::Inserted));
    assert_eq!(b.action, Some(Action::Updated));
    assert_eq!(b.matched_by, Some(MatchedBy::PlatformPostId));
    assert_eq!(a.post_id, b.post_id);
    assert_eq!(b.note, None);
    assert!(plan.updates.is_empty());
    assert_eq!(plan.inserts.len(), 1);
    let f = &plan.inserts[0].fields;
    assert_eq!(f.status, PostStatus::Published);
    assert_eq!(f.body, "edited text");
    assert_eq!(f.body_key, body_key("edited text"));
    assert_eq!(f.topic.as_deref(), Some("new topic"));
    assert!(f.sponsored);
    assert_eq!(f.scheduled_for, Some(at(2)));
    assert_eq!(f.published_at, Some(now()));
    assert_eq!(plan.events.len(), 2);
    assert!(plan.events.iter().all(|e| Some(e.post_id) == a.post_id));
}

#[test]
fn a_post_from_an_earlier_report_follows_platform_edits() {
    let mut stored = published_post(7, "old text", at(-30));
    stored.from_report = true;
    stored.fields.platform_post_id = Some("th-7".into());
    stored.fields.topic = Some("old topic".into());
    let mut i = published_item("https://threads.example/p/7");
    i.platform_post_id = Some("th-7".into());
    i.body = Some("edited  text".into());
    i.topic = Some("new topic".into());
    i.sponsored = Some(true);

    let plan = run(vec![i], vec![stored]);

    let r = &plan.results[0];
    assert_eq!(r.action, Some(Action::Updated));
    assert_eq!(r.note, None);
    let f = &plan.updates[0].1;
    assert_eq!(f.body, "edited  text");
    assert_eq!(f.body_key, body_key("edited text"));
    assert_eq!(f.topic.as_deref(), Some("new topic"));
    assert!(f.sponsored);
}

#[test]
fn a_service_post_keeps_its_reviewed_body_topic_and_sponsored_and_gets_a_note() {
    let mut stored = published_post(7, "reviewed text", at(-30));
    stored.fields.platform_post_id = Some("th-7".into());
    stored.fields.topic = Some("reviewed topic".into());
    let mut i = published_item("https://threads.example/p/7-new");
    i.platform_post_id = Some("th-7".into());
    i.body = Some("edited on the platform".into());
    i.topic = Some("new topic".into());
    i.sponsored = Some(true);

    let plan = run(vec![i], vec![stored]);

    let r = &plan.results[0];
    assert_eq!(r.action, Some(Action::Updated));
    assert!(r.note.as_deref().unwrap().contains("body"), "{:?}", r.note);
    let f = &plan.updates[0].1;
    assert_eq!(f.body, "reviewed text");
    assert_eq!(f.body_key, body_key("reviewed text"));
    assert_eq!(f.topic.as_deref(), Some("reviewed topic"));
    assert!(!f.sponsored);
    assert_eq!(
        f.permalink.as_deref(),
        Some("https://threads.example/p/7-new")
    );
    assert_eq!(plan.events[0].detail["note"].as_str(), r.note.as_deref());
}

// ---------------------------------------------------------------------------------------------
// Batches
// ---------------------------------------------------------------------------------------------

#[test]
fn two_items_on_the_same_stored_post_give_one_update_with_final_fields_and_two_events() {
    let mut scheduled = by_id(ReportedStatus::Scheduled, 7);
    scheduled.scheduled_for = Some(at(-1));
    scheduled.platform_post_id = Some("th-7".into());
    let mut published = published_item("https://threads.example/p/7");
    published.platform_post_id = Some("th-7".into());
    published.has_media = Some(true);

    let plan = run(
        vec![scheduled, published],
        vec![post(7, PostStatus::Approved, "hi")],
    );

    assert_eq!(plan.results[0].action, Some(Action::Updated));
    assert_eq!(plan.results[0].status, Some(PostStatus::Scheduled));
    assert_eq!(plan.results[0].matched_by, Some(MatchedBy::PostId));
    assert_eq!(plan.results[1].action, Some(Action::Updated));
    assert_eq!(plan.results[1].status, Some(PostStatus::Published));
    assert_eq!(plan.results[1].matched_by, Some(MatchedBy::PlatformPostId));
    assert_eq!(plan.results[1].post_id, Some(id(7)));
    assert!(plan.inserts.is_empty());
    assert_eq!(plan.updates.len(), 1);
    let (pid, f) = &plan.updates[0];
    assert_eq!(*pid, id(7));
    assert_eq!(f.status, PostStatus::Published);
    assert_eq!(f.scheduled_for, Some(at(-1)));
    assert_eq!(f.published_at, Some(now()));
    assert_eq!(f.platform_post_id.as_deref(), Some("th-7"));
    assert_eq!(f.permalink.as_deref(), Some("https://threads.example/p/7"));
    assert_eq!(f.has_media, Some(true));
    let actions: Vec<&str> = plan.events.iter().map(|e| e.action.as_str()).collect();
    assert_eq!(actions, ["reported scheduled", "reported published"]);
    assert!(plan.events.iter().all(|e| e.post_id == id(7)));
    assert_eq!(plan.count(Action::Updated), 2);
}

#[test]
fn a_later_item_sees_the_effect_of_an_earlier_one() {
    // Once published by the first item, the post ignores a late "scheduled" report.
    let mut published = by_id(ReportedStatus::Published, 7);
    published.permalink = Some("https://threads.example/p/7".into());
    let mut scheduled = by_id(ReportedStatus::Scheduled, 7);
    scheduled.scheduled_for = Some(at(3));

    let plan = run(
        vec![published, scheduled],
        vec![post(7, PostStatus::Approved, "hi")],
    );

    assert_eq!(plan.results[0].action, Some(Action::Updated));
    assert_eq!(plan.results[1].action, Some(Action::Ignored));
    assert_eq!(plan.results[1].status, Some(PostStatus::Published));
    assert_eq!(plan.updates.len(), 1);
    assert_eq!(plan.updates[0].1.status, PostStatus::Published);
    assert_eq!(plan.updates[0].1.scheduled_for, None);
    assert_eq!(plan.events.len(), 1);
}

#[test]
fn two_items_on_a_new_post_give_one_insert_with_final_fields_and_two_events() {
    let first = scheduled_item("new post", at(1));
    let mut second = item(ReportedStatus::Failed);
    second.body = Some("new  post".into());
    second.failure_reason = Some("rate limited".into());

    let plan = run(vec![first, second], vec![]);

    assert_eq!(plan.results[0].action, Some(Action::Inserted));
    assert_eq!(plan.results[1].action, Some(Action::Updated));
    assert_eq!(plan.results[1].matched_by, Some(MatchedBy::Body));
    assert_eq!(plan.results[0].post_id, plan.results[1].post_id);
    assert!(plan.updates.is_empty());
    assert_eq!(plan.inserts.len(), 1);
    let new = &plan.inserts[0];
    assert_eq!(Some(new.id), plan.results[0].post_id);
    assert_eq!(new.fields.status, PostStatus::Failed);
    assert_eq!(new.fields.scheduled_for, Some(at(1)));
    assert_eq!(new.fields.failure_reason.as_deref(), Some("rate limited"));
    assert_eq!(plan.events.len(), 2);
    assert_eq!(plan.events[1].action, "reported failed");
    assert_eq!(plan.events[1].reason.as_deref(), Some("rate limited"));
}

#[test]
fn items_refused_before_matching_keep_their_index() {
    let bad = ItemError::Invalid {
        field: "scheduled_for".into(),
        message: "is required when status is scheduled".into(),
    };
    let unknown = ItemError::NotFound(ItemMissing::Account {
        code: "XX-1".into(),
    });
    let mut good = by_id(ReportedStatus::Scheduled, 7);
    good.scheduled_for = Some(at(1));

    let plan = plan_report(
        vec![Err(bad.clone()), Ok(good), Err(unknown.clone())],
        vec![post(7, PostStatus::Approved, "hi")],
        now(),
    );

    assert_eq!(plan.results.len(), 3);
    let indexes: Vec<usize> = plan.results.iter().map(|r| r.index).collect();
    assert_eq!(indexes, [0, 1, 2]);
    assert_eq!(plan.results[0].error, Some(bad));
    assert_eq!(plan.results[0].action, None);
    assert_eq!(plan.results[1].action, Some(Action::Updated));
    assert_eq!(plan.results[1].post_id, Some(id(7)));
    assert_eq!(plan.results[2].error, Some(unknown));
    assert_eq!(plan.rejected(), 2);
    assert!(!plan.all_rejected());
    assert_eq!(plan.updates.len(), 1);
}

#[test]
fn all_rejected_only_when_every_item_is_refused() {
    let refused = || Err(ItemError::Rejected(ItemRejection::NoValues));
    let mut stocked_scheduled = by_id(ReportedStatus::Scheduled, 7);
    stocked_scheduled.scheduled_for = Some(at(1));
    let stocked = || vec![post(7, PostStatus::Stocked, "hi")];

    // Refused before matching and refused by the state table: all rejected.
    let plan = plan_report(
        vec![refused(), Ok(stocked_scheduled.clone())],
        stocked(),
        now(),
    );
    assert!(plan.all_rejected());
    assert_eq!(plan.rejected(), 2);
    assert_nothing_written(&plan);

    // An ignored item is not a refusal.
    let mut cancelled = item(ReportedStatus::Cancelled);
    cancelled.body = Some("unknown".into());
    let plan = plan_report(vec![refused(), Ok(cancelled)], stocked(), now());
    assert!(!plan.all_rejected());
    assert_eq!(plan.rejected(), 1);
    assert_eq!(plan.count(Action::Ignored), 1);

    // An unchanged item is not a refusal either.
    let mut failed = by_id(ReportedStatus::Failed, 7);
    failed.failure_reason = Some("x".into());
    let plan = plan_report(vec![Ok(stocked_scheduled), Ok(failed)], stocked(), now());
    assert!(!plan.all_rejected());
    assert_eq!(plan.rejected(), 1);
    assert_eq!(plan.count(Action::Unchanged), 1);
}

// ---------------------------------------------------------------------------------------------
// check_requirements
// ---------------------------------------------------------------------------------------------

#[test]
fn scheduled_without_scheduled_for_is_invalid_on_scheduled_for() {
    let e = check_requirements(ReportedStatus::Scheduled, false, true, true).unwrap_err();
    assert_eq!(e.code(), "invalid");
    assert_eq!(e.field(), Some("scheduled_for"));
    assert!(e.message().starts_with("scheduled_for: "));
    assert_eq!(
        check_requirements(ReportedStatus::Scheduled, true, false, false),
        Ok(())
    );
}

#[test]
fn published_without_permalink_is_rejected() {
    let e = check_requirements(ReportedStatus::Published, true, false, true).unwrap_err();
    assert_eq!(e.code(), "rejected");
    assert_eq!(e.field(), None);
    assert!(e.message().contains("permalink"));
    assert_eq!(
        check_requirements(ReportedStatus::Published, false, true, false),
        Ok(())
    );
}

#[test]
fn failed_without_failure_reason_is_invalid_on_failure_reason() {
    let e = check_requirements(ReportedStatus::Failed, true, true, false).unwrap_err();
    assert_eq!(e.code(), "invalid");
    assert_eq!(e.field(), Some("failure_reason"));
    assert_eq!(
        check_requirements(ReportedStatus::Failed, false, false, true),
        Ok(())
    );
}

#[test]
fn cancelled_requires_nothing() {
    assert_eq!(
        check_requirements(ReportedStatus::Cancelled, false, false, false),
        Ok(())
    );
}

#[test]
fn a_cancellation_clears_a_post_still_in_the_tool_whatever_its_status() {
    // Stocked while scheduled, then released to review (or deleted from inventory) before the
    // agent removed it from its tool: cancelled says it is gone from there.
    for (status, discarded) in [
        (PostStatus::InternalReview, false),
        (PostStatus::Cancelled, true),
    ] {
        let mut stored = post(7, status, "hi");
        stored.discarded = discarded;
        stored.fields.unschedule_pending = true;
        let plan = run(vec![by_id(ReportedStatus::Cancelled, 7)], vec![stored]);
        let r = &plan.results[0];
        assert_eq!(r.action, Some(Action::Unscheduled), "{status}");
        assert_eq!(r.status, Some(status));
        assert!(!plan.updates[0].1.unschedule_pending);
        assert_eq!(plan.updates[0].1.status, status);
    }
    // Without a pending removal, a post before review still refuses reports.
    let plan = run(
        vec![by_id(ReportedStatus::Cancelled, 7)],
        vec![post(7, PostStatus::InternalReview, "hi")],
    );
    assert_eq!(code(&plan.results[0]), Some("rejected"));
}

#[test]
fn only_unpublished_posts_in_flight_or_stocked_are_adoptable() {
    let adoptable: Vec<_> = PostStatus::ALL
        .into_iter()
        .filter(|s| adoptable(*s))
        .collect();
    assert_eq!(
        adoptable,
        [
            PostStatus::Approved,
            PostStatus::Stocked,
            PostStatus::Scheduled,
            PostStatus::Failed,
        ]
    );
}

fn raw(status: ReportedStatus) -> RawReportItem {
    RawReportItem {
        code: fleetdesk_kernel::AccountCode::parse("TW-T001").unwrap(),
        platform: None,
        status,
        scheduled_for: None,
        published_at: None,
        platform_post_id: None,
        permalink: None,
        body: None,
        topic: None,
        has_media: None,
        sponsored: None,
        post_id: None,
        failure_reason: None,
    }
}

fn ready(raw: RawReportItem) -> Result<ReportItem, ItemError> {
    ready_item(
        raw,
        slot(),
        &fleetdesk_kernel::market::zone("Asia/Taipei"),
        now(),
    )
}

fn invalid_field(r: Result<ReportItem, ItemError>) -> Option<String> {
    match r {
        Err(ItemError::Invalid { field, .. }) => Some(field),
        _ => None,
    }
}

#[test]
fn an_items_times_are_read_in_its_accounts_zone_and_cut_to_microseconds() {
    let mut r = raw(ReportedStatus::Scheduled);
    r.scheduled_for = Some(time("2026-10-08 09:30"));
    r.body = Some("hi".into());
    let i = ready(r).unwrap();
    assert_eq!(i.slot, slot());
    assert_eq!(i.scheduled_for, i_time("2026-10-08T01:30:00Z"));
    assert_eq!(i.body.as_deref(), Some("hi"));

    let mut r = raw(ReportedStatus::Published);
    r.permalink = Some("https://example.com/p/1".into());
    r.published_at = Some(time("2026-10-07T00:00:00.123456789Z"));
    assert_eq!(
        ready(r).unwrap().published_at,
        i_time("2026-10-07T00:00:00.123457Z")
    );
    assert_eq!(
        to_stored_precision(i_time("2026-10-07T00:00:00.0000004Z").unwrap()),
        i_time("2026-10-07T00:00:00Z").unwrap()
    );
}

#[test]
fn a_time_the_accounts_zone_skips_names_its_field() {
    // 02:30 does not exist in New York on the day its clocks go forward.
    let new_york = fleetdesk_kernel::market::zone("America/New_York");
    let mut r = raw(ReportedStatus::Scheduled);
    r.scheduled_for = Some(time("2026-03-08 02:30"));
    let refused = ready_item(r, slot(), &new_york, now());
    assert_eq!(invalid_field(refused).as_deref(), Some("scheduled_for"));
    let mut r = raw(ReportedStatus::Published);
    r.permalink = Some("https://example.com/p/1".into());
    r.published_at = Some(time("2026-03-08 02:30"));
    let refused = ready_item(r, slot(), &new_york, now());
    assert_eq!(invalid_field(refused).as_deref(), Some("published_at"));
}

fn time(raw: &str) -> TimeInput {
    raw.parse().unwrap()
}

#[test]
fn a_publication_may_be_ahead_of_now_by_the_clock_skew_only() {
    let published = |at: Timestamp| {
        let mut r = raw(ReportedStatus::Published);
        r.permalink = Some("https://example.com/p/1".into());
        r.published_at = Some(TimeInput::At(at));
        ready(r)
    };
    let skew = crate::metrics::CLOCK_SKEW;
    assert!(published(now() + skew).is_ok());
    let late = published(now() + skew + SignedDuration::from_micros(1));
    assert_eq!(
        late,
        Err(ItemError::Invalid {
            field: "published_at".into(),
            message: "is in the future".into(),
        })
    );
    // The time is checked before what the status requires.
    let mut r = raw(ReportedStatus::Published);
    r.published_at = Some(TimeInput::At(now() + SignedDuration::from_hours(1)));
    assert_eq!(invalid_field(ready(r)).as_deref(), Some("published_at"));
}

#[test]
fn an_item_missing_what_its_status_requires_is_refused() {
    assert_eq!(
        invalid_field(ready(raw(ReportedStatus::Scheduled))).as_deref(),
        Some("scheduled_for")
    );
    assert_eq!(
        invalid_field(ready(raw(ReportedStatus::Failed))).as_deref(),
        Some("failure_reason")
    );
    assert!(matches!(
        ready(raw(ReportedStatus::Published)),
        Err(ItemError::Rejected(_))
    ));
    assert!(ready(raw(ReportedStatus::Cancelled)).is_ok());
}

#[test]
fn a_batch_counts_an_unscheduling_as_an_update() {
    let result = |index: usize, action: Option<Action>| ItemResult {
        action,
        error: action
            .is_none()
            .then_some(ItemError::Rejected(ItemRejection::NoValues)),
        ..ItemResult::refused(index, ItemError::Rejected(ItemRejection::NoValues))
    };
    let actions = [
        Some(Action::Inserted),
        Some(Action::Updated),
        Some(Action::Unscheduled),
        Some(Action::Unchanged),
        Some(Action::Ignored),
        Some(Action::Ignored),
        None,
    ];
    let plan = ReportPlan {
        results: actions
            .into_iter()
            .enumerate()
            .map(|(i, a)| result(i, a))
            .collect(),
        ..ReportPlan::default()
    };
    assert_eq!(
        plan.counts(),
        ReportCounts {
            inserted: 1,
            updated: 2,
            unchanged: 1,
            ignored: 2,
            rejected: 1,
        }
    );
}

#[test]
fn each_refusal_rule_is_worded_as_the_api_answered_it_before_it_was_typed() {
    let id = Uuid::from_u128(7);
    let pid = || "1789".to_owned();
    let texts = [
        (
            ItemError::NotFound(ItemMissing::Account {
                code: "TW01".into(),
            }),
            "not_found",
            "no account TW01 in this workspace".to_owned(),
        ),
        (
            ItemError::NotFound(ItemMissing::Post { id }),
            "not_found",
            format!("no post {id} in this workspace"),
        ),
        (
            ItemError::NotFound(ItemMissing::PlatformPost {
                code: "TW01".into(),
                platform_post_id: pid(),
            }),
            "not_found",
            "no post with platform_post_id 1789 on TW01: report it as published first".to_owned(),
        ),
        (
            ItemError::AmbiguousCode {
                code: "TW01".into(),
            },
            "ambiguous_code",
            "TW01 names accounts on several platforms; add platform".to_owned(),
        ),
        (
            ItemError::Forbidden(NotYours::Account {
                code: "TW01".into(),
            }),
            "forbidden",
            "account TW01 belongs to another agent's persona".to_owned(),
        ),
        (
            ItemError::Forbidden(NotYours::Post { id }),
            "forbidden",
            format!("post {id} belongs to another agent's account"),
        ),
        (
            ItemError::Forbidden(NotYours::PlatformPost {
                platform_post_id: pid(),
            }),
            "forbidden",
            "platform_post_id 1789 is a post of another agent's account".to_owned(),
        ),
        (
            ItemError::Forbidden(NotYours::MeasuredPost),
            "forbidden",
            "the post belongs to another agent's account".to_owned(),
        ),
        (
            ItemError::Conflict(IdTaken::OnAnotherAccount {
                platform_post_id: pid(),
            }),
            "conflict",
            "platform_post_id 1789 is already on a post of another account".to_owned(),
        ),
        (
            ItemError::Conflict(IdTaken::OnAnotherPost {
                platform_post_id: pid(),
            }),
            "conflict",
            "platform_post_id 1789 is already on another post".to_owned(),
        ),
    ];
    for (error, code, text) in texts {
        assert_eq!(error.code(), code, "{error:?}");
        assert_eq!(error.message(), text, "{error:?}");
        assert_eq!(error.field(), None);
    }
    let rules = [
        (
            ItemRejection::PermalinkMissing,
            "permalink is required when status is published: give the post's link".to_owned(),
        ),
        (
            ItemRejection::OtherAccountsPost {
                id,
                code: "TW02".into(),
            },
            format!("post {id} is a post of another account, not TW02"),
        ),
        (
            ItemRejection::NotReviewed {
                status: PostStatus::Draft,
            },
            "the post is draft and has not been through review; only approved posts can be \
             reported"
                .to_owned(),
        ),
        (
            ItemRejection::DeletedFromInventory,
            "the post was deleted from inventory and can no longer be scheduled".to_owned(),
        ),
        (
            ItemRejection::InInventory,
            "the post is in inventory and cannot be scheduled; unstock it first".to_owned(),
        ),
        (
            ItemRejection::SamePostEarlier,
            "the same post appears earlier in this report".to_owned(),
        ),
        (
            ItemRejection::SameAccountEarlier,
            "the same account appears earlier in this report".to_owned(),
        ),
        (ItemRejection::NoValues, "no values to record".to_owned()),
        (
            ItemRejection::ZerosKeptBack {
                counters: vec!["views", "likes"],
            },
            "views, likes fell from a positive number to 0 and were not recorded".to_owned(),
        ),
        (
            ItemRejection::FollowersKeptBack,
            "followers fell from a positive number to 0 and was not recorded".to_owned(),
        ),
        (
            ItemRejection::NotPublished {
                status: PostStatus::Scheduled,
            },
            "the post is scheduled: report it as published (with its platform_post_id) first"
                .to_owned(),
        ),
    ];
    for (rule, text) in rules {
        let error = ItemError::Rejected(rule);
        assert_eq!(error.code(), "rejected");
        assert_eq!(error.message(), text, "{error:?}");
    }
    let invalid = ItemError::Invalid {
        field: "permalink".into(),
        message: "is not a URL".into(),
    };
    assert_eq!(invalid.code(), "invalid");
    assert_eq!(invalid.message(), "permalink: is not a URL");
    assert_eq!(invalid.field(), Some("permalink"));
}

// ---------------------------------------------------------------------------------------------
// What a batch tells the event log
// ---------------------------------------------------------------------------------------------

/// The batch's events as (post, from, status, note), after checking each is a `post.reported`
/// in the workspace, told to `AGENT`.
fn told(plan: &ReportPlan) -> Vec<(Uuid, Option<String>, String, Option<String>)> {
    plan.told
        .iter()
        .filter(|e| e.body.kind() == fleetdesk_kernel::events::EventKind::PostReported)
        .map(|e| {
            assert_eq!((e.workspace_id, e.agent_id), (WORKSPACE, Some(AGENT)));
            let fleetdesk_kernel::events::EventBody::PostReported(c) = &e.body else {
                panic!("{e:?}");
            };
            assert_eq!(
                (c.code.as_deref(), c.platform),
                (Some("TW-T001"), Some(Platform::Threads))
            );
            (
                e.object_id,
                c.from.clone(),
                c.status.clone(),
                c.note.clone(),
            )
        })
        .collect()
}

#[test]
fn a_status_change_tells_post_reported_with_the_link_or_the_failure() {
    let mut scheduled = by_id(ReportedStatus::Scheduled, 7);
    scheduled.scheduled_for = Some(at(2));
    let mut published = by_id(ReportedStatus::Published, 7);
    published.permalink = Some("https://threads.example/p/7".into());
    let mut failed = by_id(ReportedStatus::Failed, 8);
    failed.failure_reason = Some("rate limited".into());
    let plan = run(
        vec![scheduled, published, failed],
        vec![
            post(7, PostStatus::Approved, "a"),
            post(8, PostStatus::Scheduled, "b"),
        ],
    );
    assert_eq!(
        told(&plan),
        [
            (id(7), Some("approved".into()), "scheduled".into(), None),
            (
                id(7),
                Some("scheduled".into()),
                "published".into(),
                Some("https://threads.example/p/7".into())
            ),
            (
                id(8),
                Some("scheduled".into()),
                "failed".into(),
                Some("rate limited".into())
            ),
        ]
    );
}

#[test]
fn a_report_that_keeps_the_status_tells_nothing() {
    // The same schedule again: unchanged.
    let when = at(2);
    let mut again = by_id(ReportedStatus::Scheduled, 7);
    again.scheduled_for = Some(when);
    // A published post's link updated: changed, but still published.
    let mut relinked = by_id(ReportedStatus::Published, 8);
    relinked.permalink = Some("https://threads.example/p/new".into());
    // A stocked post removed from the agent's tool: unscheduled, still stocked.
    let mut stocked = post(9, PostStatus::Stocked, "c");
    stocked.fields.unschedule_pending = true;
    let removed = by_id(ReportedStatus::Cancelled, 9);
    // Refused and ignored items tell nothing either.
    let draft = by_id(ReportedStatus::Scheduled, 10);
    let plan = run(
        vec![again, relinked, removed, draft],
        vec![
            scheduled_post(7, "a", when),
            published_post(8, "b", at(-1)),
            stocked,
            post(10, PostStatus::Draft, "d"),
        ],
    );
    let actions: Vec<_> = plan.results.iter().map(|r| r.action).collect();
    assert_eq!(
        actions,
        [
            Some(Action::Unchanged),
            Some(Action::Updated),
            Some(Action::Unscheduled),
            None
        ]
    );
    assert_eq!(told(&plan), []);
}

#[test]
fn a_post_the_report_creates_tells_from_nothing() {
    let mut i = published_item("https://threads.example/p/1");
    i.body = Some("new".into());
    i.platform_post_id = Some("p1".into());
    let plan = run(vec![i], Vec::new());
    let created = plan.inserts[0].id;
    assert_eq!(
        told(&plan),
        [(
            created,
            None,
            "published".into(),
            Some("https://threads.example/p/1".into())
        )]
    );
}

/// The marks of a plan: post, reason, approved body, published body; each with its
/// `post.published_differs` event about the same post.
fn marks(plan: &ReportPlan) -> Vec<(Uuid, &'static str, Option<String>, String)> {
    use fleetdesk_kernel::events::EventBody;
    let told: Vec<_> = plan
        .told
        .iter()
        .filter_map(|e| match &e.body {
            EventBody::PostPublishedDiffers(d) => Some((e.object_id, d.reason.clone())),
            _ => None,
        })
        .collect();
    let marks: Vec<_> = plan
        .marks
        .iter()
        .map(|(id, m)| {
            (
                *id,
                m.reason.as_str(),
                m.approved_body.clone(),
                m.published_body.clone(),
            )
        })
        .collect();
    let said: Vec<_> = marks.iter().map(|m| (m.0, m.1.to_owned())).collect();
    assert_eq!(told, said, "each mark is told once");
    marks
}

#[test]
fn a_published_body_other_than_the_approved_one_marks_the_post_once() {
    let approved = post(1, PostStatus::Approved, "Hello world");
    let mut same = published_item("https://threads.example/p/1");
    same.post_id = Some(approved.id);
    same.body = Some(" Hello\n world ".into());
    assert_eq!(marks(&run(vec![same.clone()], vec![approved.clone()])), []);

    let mut changed = same.clone();
    changed.body = Some("Hello world, edited".into());
    let plan = run(
        vec![changed.clone(), changed.clone()],
        vec![approved.clone()],
    );
    assert_eq!(
        marks(&plan),
        [(
            approved.id,
            "changed",
            Some("Hello world".into()),
            "Hello world, edited".into()
        )]
    );
    assert_eq!(plan.marks[0].1.reported_at, now());
    // Nothing is refused: the post is published as reported.
    assert!(
        plan.results.iter().all(ItemResult::ok),
        "{:?}",
        plan.results
    );
    assert_eq!(plan.updates[0].1.status, PostStatus::Published);

    // A report without a body is taken as what was approved.
    let mut bare = same.clone();
    bare.body = None;
    assert_eq!(marks(&run(vec![bare], vec![approved.clone()])), []);

    // A post marked before is not marked again.
    let published = KnownPost {
        marked: true,
        ..post(1, PostStatus::Published, "Hello world")
    };
    assert_eq!(marks(&run(vec![changed], vec![published])), []);

    // Scheduling is not publishing: nothing is marked until the post goes out.
    let mut scheduled = item(ReportedStatus::Scheduled);
    scheduled.post_id = Some(approved.id);
    scheduled.scheduled_for = Some(now());
    scheduled.body = Some("other".into());
    assert_eq!(marks(&run(vec![scheduled], vec![approved])), []);
}

#[test]
fn a_post_nobody_approved_is_marked_when_it_is_published() {
    // Matched by nothing: the report makes the post, published.
    let mut new = published_item("https://threads.example/p/9");
    new.body = Some("went out".into());
    let plan = run(vec![new], Vec::new());
    let created = plan.inserts[0].id;
    assert_eq!(
        marks(&plan),
        [(created, "never_approved", None, "went out".into())]
    );

    // Made by an earlier report as scheduled, published now: marked with its stored body.
    let earlier = KnownPost {
        from_report: true,
        approved: None,
        ..post(2, PostStatus::Scheduled, "from the tool")
    };
    let mut out = published_item("https://threads.example/p/2");
    out.post_id = Some(earlier.id);
    let plan = run(vec![out], vec![earlier.clone()]);
    assert_eq!(
        marks(&plan),
        [(earlier.id, "never_approved", None, "from the tool".into())]
    );

    // Made as scheduled by this very report: not marked until published.
    let mut made = item(ReportedStatus::Scheduled);
    made.body = Some("later".into());
    made.scheduled_for = Some(now());
    assert_eq!(marks(&run(vec![made], Vec::new())), []);
}
