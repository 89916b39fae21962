//! The Rust client (`fleetdesk_client`) against the real server: a card's whole way through
//! the typed task operations of both APIs, an Idempotency-Key per call and one of the
//! caller's own, the list read across pages as a stream, the server's errors as typed errors;
//! and, against a local fake server, retries of 429 and 503 after their Retry-After with the
//! call's one key.

use fleetdesk_client::{Call, Client, Error, Req};
use fleetdesk_kernel::AccountCode;
use fleetdesk_kernel::op::Nothing;
use fleetdesk_kernel::wire::fields::{IdPath, Int, List, Text};
use fleetdesk_kernel::wire::strings::{CodeInput, LinkInput};
use fleetdesk_tasks::wire::{
    EvidenceIn, OpenTaskBody, PersonOpenTaskBody, StatusList, TaskConfirmBody, TaskFinishBody,
    TaskProgressBody, TaskQueryIn, TaskTargetIn, agent, personal,
};
use fleetdesk_tasks::{TargetType, TaskKind, TaskStatus};
use fleetdesk_tests::{TestApp, spawn_app};
use futures_util::TryStreamExt;
use std::collections::HashSet;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use uuid::Uuid;

const ANN: &str = "ann@acme.test";

fn text<const MIN: usize, const MAX: usize>(s: &str) -> Text<MIN, MAX> {
    Text(s.to_owned())
}

fn slot(code: &str) -> TaskTargetIn {
    TaskTargetIn {
        kind: TargetType::Slot,
        code: Some(CodeInput(AccountCode::parse(code).expect("a code"))),
        platform: None,
        id: None,
    }
}

fn open(kind: TaskKind, title: &str) -> Req<Nothing, Nothing, OpenTaskBody> {
    Req {
        path: Nothing,
        query: Nothing,
        body: OpenTaskBody {
            kind,
            title: text(title),
            detail: None,
            target: slot("TW-T001"),
            due_at: None,
            origin: None,
        },
    }
}

fn on<B>(id: Uuid, body: B) -> Req<IdPath, Nothing, B> {
    Req {
        path: IdPath { id },
        query: Nothing,
        body,
    }
}

fn clients(app: &TestApp) -> (Client, Client) {
    (
        Client::new(&app.base, app.agent_key("op1")).expect("a client"),
        Client::new(&app.base, app.personal_key(ANN)).expect("a client"),
    )
}

#[tokio::test(flavor = "multi_thread")]
async fn a_card_goes_its_whole_way_through_the_typed_operations() {
    let app = spawn_app().await;
    let (op1, ann) = clients(&app);

    let opened = op1
        .call::<agent::OpenTask>(open(TaskKind::ChangeBio, "Shorten the bio"))
        .await
        .expect("opened");
    assert!(opened.created);
    assert_eq!(opened.task.status, TaskStatus::PendingPickup);
    assert_eq!(opened.task.title, "Shorten the bio");
    assert_eq!(opened.task.target.code.as_deref(), Some("TW-T001"));
    let id = opened.id;

    let claimed = op1
        .call::<agent::ClaimTask>(on(id, Nothing))
        .await
        .expect("claimed");
    assert_eq!(
        (claimed.task.status, claimed.result.as_str()),
        (TaskStatus::InProgress, "changed")
    );
    let again = op1.call::<agent::ClaimTask>(on(id, Nothing)).await.unwrap();
    assert_eq!(again.result, "unchanged");

    let noted = op1
        .call::<agent::ReportTask>(on(
            id,
            TaskProgressBody {
                note: text("Drafted two options."),
            },
        ))
        .await
        .expect("progress");
    assert_eq!(
        noted.task.notes.last().map(|n| n.text.as_str()),
        Some("Drafted two options.")
    );

    let link = LinkInput("https://example.test/bio".to_owned());
    let finished = op1
        .call::<agent::FinishTask>(on(
            id,
            TaskFinishBody {
                result: text("The bio is 80 characters now."),
                evidence: Some(List(vec![EvidenceIn::Link {
                    url: link,
                    label: Some(text("the profile")),
                }])),
            },
        ))
        .await
        .expect("finished");
    assert_eq!(finished.task.status, TaskStatus::PendingConfirmation);
    assert_eq!(finished.task.evidence[0]["url"], "https://example.test/bio");

    let confirmed = ann
        .call::<personal::ConfirmTask>(on(id, TaskConfirmBody { note: None }))
        .await
        .expect("confirmed");
    assert_eq!(confirmed.task.status, TaskStatus::Done);

    let done = ann
        .call::<personal::ListTasks>(Req {
            path: Nothing,
            query: TaskQueryIn {
                status: Some(StatusList(vec![TaskStatus::Done])),
                ..TaskQueryIn::default()
            },
            body: Nothing,
        })
        .await
        .expect("listed");
    assert_eq!(
        done.tasks.iter().map(|t| t.id).collect::<Vec<_>>(),
        [id],
        "the organization's done cards"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn each_call_has_its_own_idempotency_key_unless_the_caller_gives_one() {
    let app = spawn_app().await;
    let (op1, ann) = clients(&app);
    // The caller's own key, twice: the second answer is the first one replayed.
    let call = || {
        Call::<agent::OpenTask>::new(open(TaskKind::Other, "Check the pinned post"))
            .idempotency_key("rust-client-1")
    };
    let first = call().send(&op1).await.expect("first");
    let replayed = call().send(&op1).await.expect("replayed");
    assert!(
        first.created && replayed.created,
        "a replay answers as the first call did"
    );
    assert_eq!(replayed.id, first.id);
    // Without a key of the caller's, the same request is a new call: it joins the open card.
    let joined = op1
        .call::<agent::OpenTask>(open(TaskKind::Other, "Check the pinned post"))
        .await
        .expect("joined");
    assert_eq!((joined.created, joined.id), (false, first.id));
    // The person's opening is idempotent too; the same key with another body is refused.
    let person_open = |title: &str| {
        Call::<personal::OpenTask>::new(Req {
            path: Nothing,
            query: Nothing,
            body: PersonOpenTaskBody {
                kind: TaskKind::WritePosts,
                title: text(title),
                detail: None,
                target: slot("TW-T001"),
                due_at: None,
                origin: None,
                agent: None,
            },
        })
        .idempotency_key("rust-client-2")
    };
    person_open("Three posts for the sale")
        .send(&ann)
        .await
        .expect("opened");
    let e = person_open("Four posts for the sale")
        .send(&ann)
        .await
        .unwrap_err();
    assert!(matches!(e, Error::Api { status: 422, .. }), "{e}");
    assert_eq!(e.code(), Some("idempotency_mismatch"));
}

#[tokio::test(flavor = "multi_thread")]
async fn a_list_reads_as_one_stream_across_its_pages() {
    let app = spawn_app().await;
    let (op1, _) = clients(&app);
    let mut opened = HashSet::new();
    for (kind, title) in [
        (TaskKind::ChangeBio, "Bio"),
        (TaskKind::ChangeAvatar, "Avatar"),
        (TaskKind::Other, "Other"),
    ] {
        let o = op1
            .call::<agent::OpenTask>(open(kind, title))
            .await
            .unwrap();
        opened.insert(o.id);
    }
    let one_by_one = TaskQueryIn {
        limit: Some(Int(1)),
        ..TaskQueryIn::default()
    };
    let streamed: Vec<Uuid> = op1
        .pages::<agent::ListTasks>(one_by_one)
        .map_ok(|t| t.id)
        .try_collect()
        .await
        .expect("every page");
    let whole = op1
        .call::<agent::ListTasks>(Req {
            path: Nothing,
            query: TaskQueryIn::default(),
            body: Nothing,
        })
        .await
        .unwrap();
    assert_eq!(
        streamed,
        whole.tasks.iter().map(|t| t.id).collect::<Vec<_>>(),
        "pages of one card each, in the list's order"
    );
    assert!(
        opened.iter().all(|id| streamed.contains(id)),
        "{streamed:?}"
    );
    assert!(whole.next_cursor.is_none());
}

#[tokio::test(flavor = "multi_thread")]
async fn the_servers_refusals_are_typed_errors_naming_their_field() {
    let app = spawn_app().await;
    let (op1, _) = clients(&app);
    let e = op1
        .call::<agent::ClaimTask>(on(Uuid::new_v4(), Nothing))
        .await
        .unwrap_err();
    assert!(matches!(e, Error::Api { status: 404, .. }), "{e}");
    assert_eq!(e.code(), Some("not_found"));
    // A value past its limit, built past the type's check: the server names the field.
    let e = op1
        .call::<agent::OpenTask>(open(TaskKind::Other, &"t".repeat(201)))
        .await
        .unwrap_err();
    assert!(
        matches!(&e, Error::Api { status: 400, field: Some(f), .. } if f == "title"),
        "{e}"
    );
    // An agent key on the Personal API.
    let wrong = Client::new(&app.base, app.agent_key("op1")).unwrap();
    let e = wrong
        .call::<personal::ConfirmTask>(on(Uuid::new_v4(), TaskConfirmBody { note: None }))
        .await
        .unwrap_err();
    assert!(
        matches!(
            e,
            Error::Api {
                status: 401 | 403,
                ..
            }
        ),
        "{e}"
    );
}

/// What a fake server saw: each request's Idempotency-Key and when it came.
type Seen = Arc<Mutex<Vec<(Option<String>, Instant)>>>;

/// A server that answers `busy` (with its Retry-After) to the first `busy_times` requests,
/// then 404 with an error body.
async fn busy_server(
    busy: u16,
    retry_after: &'static str,
    busy_times: usize,
) -> (String, Seen, actix_web::dev::ServerHandle) {
    use actix_web::{App, HttpRequest, HttpResponse, HttpServer, http::StatusCode, web};
    let seen: Seen = Arc::default();
    let data = web::Data::new((seen.clone(), busy, retry_after, busy_times));
    async fn answer(
        req: HttpRequest,
        data: web::Data<(Seen, u16, &'static str, usize)>,
    ) -> HttpResponse {
        let (seen, busy, retry_after, busy_times) = data.get_ref();
        let key = req
            .headers()
            .get("idempotency-key")
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned);
        let n = {
            let mut seen = seen.lock().unwrap();
            seen.push((key, Instant::now()));
            seen.len()
        };
        if n <= *busy_times {
            return HttpResponse::build(StatusCode::from_u16(*busy).unwrap())
                .insert_header(("Retry-After", *retry_after))
                .json(serde_json::json!({"code": "rate_limited", "message": "wait"}));
        }
        HttpResponse::NotFound()
            .json(serde_json::json!({"code": "not_found", "message": "no such card"}))
    }
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    let server = HttpServer::new(move || {
        App::new()
            .app_data(data.clone())
            .default_service(web::to(answer))
    })
    .workers(1)
    .listen(listener)
    .unwrap()
    .run();
    let handle = server.handle();
    tokio::spawn(server);
    (base, seen, handle)
}

fn progress(id: Uuid) -> Req<IdPath, Nothing, TaskProgressBody> {
    on(id, TaskProgressBody { note: text("n") })
}

#[tokio::test(flavor = "multi_thread")]
async fn a_busy_answer_is_retried_after_its_retry_after_with_the_same_key() {
    // 503 once, Retry-After 1: the retry comes a second later with the call's key.
    let (base, seen, server) = busy_server(503, "1", 1).await;
    let client = Client::new(&base, "fda_test").unwrap();
    let e = client
        .call::<agent::ReportTask>(progress(Uuid::nil()))
        .await
        .unwrap_err();
    assert_eq!(e.code(), Some("not_found"), "the answer after the retry");
    {
        let seen = seen.lock().unwrap();
        assert_eq!(seen.len(), 2, "the call and one retry");
        let key = seen[0].0.clone().expect("an idempotent call carries a key");
        assert_eq!(seen[1].0.as_deref(), Some(key.as_str()), "the retry's key");
        assert!(
            seen[1].1 - seen[0].1 >= Duration::from_secs(1),
            "waited Retry-After"
        );
    }
    server.stop(true).await;

    // 429 every time: the call gives up after its retries with the last answer.
    let (base, seen, server) = busy_server(429, "0", usize::MAX).await;
    let client = Client::new(&base, "fda_test").unwrap().retries(2);
    let e = client
        .call::<agent::ReportTask>(progress(Uuid::nil()))
        .await
        .unwrap_err();
    assert!(matches!(e, Error::Api { status: 429, .. }), "{e}");
    assert_eq!(seen.lock().unwrap().len(), 3, "the call and two retries");
    // No retries: the first answer is the call's. A call that is not idempotent has no key.
    let client = Client::new(&base, "fda_test").unwrap().retries(0);
    seen.lock().unwrap().clear();
    let e = client
        .call::<agent::ClaimTask>(on(Uuid::nil(), Nothing))
        .await
        .unwrap_err();
    assert!(matches!(e, Error::Api { status: 429, .. }), "{e}");
    let seen = seen.lock().unwrap().clone();
    assert_eq!(seen.len(), 1);
    assert_eq!(seen[0].0, None, "claim_task takes no Idempotency-Key");
    server.stop(true).await;
}
