//! More events through the agent feed (`GET /api/agent/v1/events`): a cron run reported
//! failed (`cron.run_failed`), told to the agent that reported it, about the job's row, once
//! per run; a report issued (`report.issued`), written for people and webhooks and shown in no
//! agent's feed; a wiki draft a person decides (`wiki.draft_decided`), told to every agent of
//! the decision's workspace that reads the wiki. Over the standard tenant: op1 and op2 are
//! agents of Taiwan, jp1 of Japan (Acme both). A paid research request the worker finishes
//! (`research.done`), told to the agent that asked. An agent quiet past its stated interval
//! (`agent.silent`), for people and webhooks, once per silence.

use fleetdesk_tests::assert::ok;
use fleetdesk_tests::{Response, TestApp, spawn_app};
use serde_json::{Value, json};

const AGENT: &str = "/api/agent/v1";
const USER: &str = "/api/user/v1";
const ANN: &str = "ann@acme.test";

async fn agent_post(app: &TestApp, agent: &str, path: &str, body: Value) -> Response {
    app.client
        .post(&format!("{AGENT}{path}"), &app.agent_key(agent), &body)
        .await
}

/// Every event of `agent`'s feed of type `kind`, oldest first, as (object_id, data).
async fn told(app: &TestApp, agent: &str, kind: &str) -> Vec<(String, Value)> {
    let events = app.feed(agent, &format!("types={kind}")).await;
    events
        .into_iter()
        .map(|e| {
            assert_eq!(e["type"], kind, "{e}");
            let object = e["object_id"].as_str().expect("object_id").to_owned();
            (object, e["data"].clone())
        })
        .collect()
}

fn cron_job(id: &str) -> Value {
    json!({"job_id": id, "name": format!("Job {id}"), "schedule": "30 2 * * *",
           "timezone": "Asia/Taipei", "enabled": true})
}

fn run(job: &str, run: &str, status: &str, summary: Option<&str>) -> Value {
    json!({"job_id": job, "run_id": run, "started_at": "2026-11-25T02:30:00Z",
           "status": status, "summary": summary})
}

fn failed(job: &str, run: &str, summary: Option<&str>) -> Value {
    json!({"job_id": job, "job_name": format!("Job {job}"), "run_id": run, "summary": summary})
}

#[tokio::test(flavor = "multi_thread")]
async fn a_cron_run_stored_or_updated_as_failed_tells_its_agent_once() {
    let app = spawn_app().await;
    let jobs = json!({"jobs": [cron_job("backup"), cron_job("sync")]});
    ok(&agent_post(&app, "op1", "/cron/jobs", jobs).await);

    // One batch: a new failed run, a success and a run still going.
    let batch = json!({"runs": [
        run("backup", "r1", "failed", Some("disk full")),
        run("backup", "r2", "success", None),
        run("sync", "s1", "running", Some("started")),
    ]});
    let v = ok(&agent_post(&app, "op1", "/cron/runs", batch).await);
    assert_eq!(v["inserted"], 3, "{v}");
    let events = told(&app, "op1", "cron.run_failed").await;
    let data: Vec<&Value> = events.iter().map(|(_, d)| d).collect();
    assert_eq!(data, [&failed("backup", "r1", Some("disk full"))]);
    let backup = &events[0].0;
    let object_is = |object: &str, job: &str| {
        format!("SELECT count(*) AS n FROM cron_jobs WHERE id = '{object}' AND job_id = '{job}'")
    };
    assert_eq!(app.count(&object_is(backup, "backup")).await, 1);

    // The run going fails (its summary kept), the failed one is reported failed again with a
    // new summary, the success resent: one more event, none for the run failed before.
    let batch = json!({"runs": [
        run("sync", "s1", "failed", None),
        run("backup", "r1", "failed", Some("still full")),
        run("backup", "r2", "success", None),
    ]});
    let v = ok(&agent_post(&app, "op1", "/cron/runs", batch).await);
    assert_eq!(
        (&v["updated"], &v["skipped"]),
        (&json!(2), &json!(1)),
        "{v}"
    );
    let events = told(&app, "op1", "cron.run_failed").await;
    let data: Vec<&Value> = events.iter().map(|(_, d)| d).collect();
    assert_eq!(
        data,
        [
            &failed("backup", "r1", Some("disk full")),
            &failed("sync", "s1", Some("started")),
        ]
    );
    assert_eq!(app.count(&object_is(&events[1].0, "sync")).await, 1);

    // Another agent of the workspace reads none of them.
    assert_eq!(told(&app, "op2", "cron.run_failed").await, []);
}

async fn user_post(app: &TestApp, path: &str, body: Value) -> Response {
    app.client
        .post(&format!("{USER}{path}"), &app.personal_key(ANN), &body)
        .await
}

#[tokio::test(flavor = "multi_thread")]
async fn a_report_issued_is_written_once_for_people_and_shown_to_no_agent() {
    let app = spawn_app().await;
    let body = json!({"workspace": "Taiwan", "from": "2026-11-30", "to": "2026-12-02",
                      "title": "Three days"});
    let r = user_post(&app, "/reports", body).await;
    assert_eq!(r.status, 201, "{}", r.text());
    let id = r.json()["id"].as_str().expect("id").to_owned();
    let written = format!(
        "SELECT count(*) AS n FROM events WHERE kind = 'report.issued' AND object_id = '{id}' \
         AND agent_id IS NULL AND workspace_id = '{}' AND data = '{}'::jsonb",
        app.workspace_id("Taiwan"),
        json!({"period_from": "2026-11-30", "period_to": "2026-12-02", "title": "Three days"})
    );
    // Created: nothing told yet.
    assert_eq!(app.count(&written).await, 0);
    ok(&user_post(&app, &format!("/reports/{id}/issue"), json!({})).await);
    assert_eq!(app.count(&written).await, 1);
    // Issued again: unchanged, nothing more.
    ok(&user_post(&app, &format!("/reports/{id}/issue"), json!({})).await);
    assert_eq!(
        app.count("SELECT count(*) AS n FROM events WHERE kind = 'report.issued'")
            .await,
        1
    );
    // No agent reads it, asked for or not.
    for agent in ["op1", "op2"] {
        assert_eq!(told(&app, agent, "report.issued").await, []);
        let v = ok(&app
            .client
            .get(&format!("{AGENT}/events?limit=200"), &app.agent_key(agent))
            .await);
        let types: Vec<&Value> = v["events"]
            .as_array()
            .unwrap()
            .iter()
            .map(|e| &e["type"])
            .collect();
        assert!(!types.contains(&&json!("report.issued")), "{v}");
    }
}

fn wiki_entry(title: &str) -> Value {
    json!({"category": "lesson", "title": title, "summary": "", "body": "Mask before sleep.",
           "sources": [{"kind": "agent", "ref": "tests", "title": "the test suite"}]})
}

/// op1 proposes an entry under manual review: (entry id, decision id).
async fn wiki_draft(app: &TestApp, title: &str) -> (String, String) {
    let r = agent_post(app, "op1", "/wiki", wiki_entry(title)).await;
    assert_eq!(r.status, 201, "{}", r.text());
    let v = r.json();
    assert_eq!(v["status"], "draft", "{v}");
    let id = |k: &str| v[k].as_str().expect(k).to_owned();
    (id("id"), id("decision_id"))
}

#[tokio::test(flavor = "multi_thread")]
async fn a_wiki_draft_a_person_decides_tells_every_wiki_reader_of_the_workspace() {
    let app = spawn_app().await;
    app.sql("UPDATE organizations SET wiki_review = 'manual' WHERE name = 'Acme'")
        .await;
    let (canon, canon_decision) = wiki_draft(&app, "Night routine").await;
    let (dismissed, dismissed_decision) = wiki_draft(&app, "Day routine").await;
    // Proposed: nothing told yet.
    assert_eq!(told(&app, "op1", "wiki.draft_decided").await, []);
    let path = format!("/decisions/{canon_decision}/resolve");
    ok(&user_post(&app, &path, json!({"note": "good"})).await);
    let path = format!("/decisions/{dismissed_decision}/dismiss");
    ok(&user_post(&app, &path, json!({})).await);
    // The same move again: unchanged, nothing more.
    let path = format!("/decisions/{canon_decision}/resolve");
    ok(&user_post(&app, &path, json!({})).await);
    let expected = vec![
        (
            canon.clone(),
            json!({"entry_id": canon, "title": "Night routine", "status": "canon"}),
        ),
        (
            dismissed.clone(),
            json!({"entry_id": dismissed, "title": "Day routine", "status": "rejected"}),
        ),
    ];
    for agent in ["op1", "op2"] {
        assert_eq!(
            told(&app, agent, "wiki.draft_decided").await,
            expected,
            "{agent}"
        );
    }
    // An agent of another workspace does not hear of it.
    assert_eq!(told(&app, "jp1", "wiki.draft_decided").await, []);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_research_request_the_work_finishes_tells_the_agent_that_asked_once() {
    let app = spawn_app().await;
    let body = json!({"kind": "product_brief", "items": ["111111", "222404", "333500"]});
    let r = agent_post(&app, "op1", "/ad-research/quote", body).await;
    assert_eq!(r.status, 201, "{}", r.text());
    let id = r.json()["request_id"]
        .as_str()
        .expect("request_id")
        .to_owned();
    let by_ann = json!({
        "on_behalf_of": {"name": "Ann", "role": "agency"},
        "origin": {"platform": "telegram", "message_ref": "m1"},
        "effective_at": "2026-11-27T10:00:00+08:00",
    });
    ok(&agent_post(&app, "op1", &format!("/ad-research/{id}/approve"), by_ann).await);
    // Approved, not finished: nothing told.
    assert_eq!(told(&app, "op1", "research.done").await, []);
    let worker = || {
        fleetdesk::worker::Worker::new(app.store.clone()).research_provider(
            std::sync::Arc::new(fleetdesk_vendors::sandbox::SandboxResearch),
            None,
        )
    };
    assert_eq!(worker().run_due().await.unwrap(), 1);
    let v = ok(&app
        .client
        .get(&format!("{AGENT}/ad-research/{id}"), &app.agent_key("op1"))
        .await);
    assert_eq!(v["status"], "done", "{v}");
    // Nothing more to run: still one event.
    assert_eq!(worker().run_due().await.unwrap(), 0);
    assert_eq!(
        told(&app, "op1", "research.done").await,
        [(id, json!({"status": "done", "items": 3}))]
    );
    assert_eq!(told(&app, "op2", "research.done").await, []);
}

/// The `agent.silent` events written, as (agent, data), oldest first.
async fn silent_told(app: &TestApp) -> Vec<(String, Value)> {
    let mut conn = app.connect().await;
    use diesel::prelude::*;
    use diesel_async::RunQueryDsl;
    #[derive(QueryableByName)]
    struct Row {
        #[diesel(sql_type = diesel::sql_types::Text)]
        object: String,
        #[diesel(sql_type = diesel::sql_types::Jsonb)]
        data: Value,
    }
    let rows: Vec<Row> = diesel::sql_query(
        "SELECT object_id::text AS object, data FROM events WHERE kind = 'agent.silent' \
         ORDER BY seq",
    )
    .load(&mut conn)
    .await
    .expect("events");
    rows.into_iter().map(|r| (r.object, r.data)).collect()
}

#[tokio::test(flavor = "multi_thread")]
async fn an_agent_quiet_past_its_stated_interval_is_told_silent_once_per_silence() {
    let app = spawn_app().await;
    // The tenant file states op1's interval: 6 hours.
    let six = fleetdesk_tests::TEST_TENANT.replace(
        r#"{"name": "op1", "role": "operator", "keys": 2}"#,
        r#"{"name": "op1", "role": "operator", "keys": 2, "silent_after_hours": 6}"#,
    );
    assert_ne!(six, fleetdesk_tests::TEST_TENANT);
    app.apply(&six).await;
    let op1 = app.agent_id("op1");
    // Applying a file that states none keeps it.
    app.apply(fleetdesk_tests::TEST_TENANT).await;
    let hours = |agent| {
        format!("SELECT count(*) AS n FROM agents WHERE id = '{agent}' AND silent_after_hours = 6")
    };
    assert_eq!(app.count(&hours(op1)).await, 1);

    let beat = ok(&agent_post(&app, "op1", "/heartbeat", json!({"run_id": "r1"})).await);
    let heard: jiff::Timestamp = beat["run"]["recorded_at"]
        .as_str()
        .unwrap()
        .parse()
        .unwrap();
    let hours = |h: i64| heard + jiff::SignedDuration::from_hours(h);
    let tell = async |at: jiff::Timestamp| app.store.tell_silent_agents(at).await.unwrap();
    // At six hours: not yet. One second past: told once, and not again on later sweeps.
    assert_eq!(tell(hours(6)).await, 0);
    assert_eq!(silent_told(&app).await, []);
    let past = hours(6) + jiff::SignedDuration::from_secs(1);
    assert_eq!(tell(past).await, 1);
    let told = silent_told(&app).await;
    assert_eq!(told.len(), 1, "{told:?}");
    assert_eq!(told[0].0, op1.to_string());
    assert_eq!(
        told[0].1,
        json!({"name": "op1", "silent_after_hours": 6,
               "last_heartbeat_at": fleetdesk_kernel::time::format_utc(heard)})
    );
    assert_eq!(tell(hours(7)).await, 0);
    // A heartbeat starts a new silence.
    app.sql(&format!(
        "INSERT INTO agent_runs (agent_id, run_id, counts, recorded_at) \
         VALUES ('{op1}', 'r2', '{{}}', '{}')",
        hours(8)
    ))
    .await;
    assert_eq!(tell(hours(14)).await, 0);
    assert_eq!(
        tell(hours(14) + jiff::SignedDuration::from_secs(1)).await,
        1
    );

    // The minute's sweep does it: op2 never sent a heartbeat and was made over 24 hours ago;
    // so was the community agent, which sends none.
    let (op2, bot) = (app.agent_id("op2"), app.agent_id("bot"));
    app.sql(&format!(
        "UPDATE agents SET created_at = now() - interval '25 hours' \
         WHERE id IN ('{op2}', '{bot}')"
    ))
    .await;
    let worker = fleetdesk::worker::Worker::new(app.store.clone());
    worker.schedule_sweep().await.expect("enqueue the sweep");
    assert!(worker.run_due().await.expect("sweep") >= 1);
    let later = silent_told(&app).await;
    let op2_told: Vec<_> = later
        .iter()
        .filter(|(a, _)| *a == op2.to_string())
        .collect();
    assert_eq!(op2_told.len(), 1, "{later:?}");
    assert_eq!(op2_told[0].1["last_heartbeat_at"], Value::Null);
    assert_eq!(op2_told[0].1["silent_after_hours"], 24);
    assert!(
        later.iter().all(|(a, _)| *a != bot.to_string()),
        "{later:?}"
    );
    // People and webhooks only: no agent's feed shows it.
    assert_eq!(told_feed(&app, "op1").await, 0);
}

/// How many `agent.silent` events `agent`'s feed shows.
async fn told_feed(app: &TestApp, agent: &str) -> usize {
    app.feed(agent, "types=agent.silent").await.len()
}
