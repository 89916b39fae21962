//! Cron jobs and runs through HTTP and MCP over the standard tenant: POST /cron/jobs
//! (report_cron_jobs) and POST /cron/runs (report_cron_run).

use fleetdesk_tests::assert::{assert_error, ok};
use fleetdesk_tests::client::Request;
use fleetdesk_tests::{Response, TestApp, spawn_app};
use serde_json::{Value, json};

const AGENT: &str = "/api/agent/v1";

async fn jobs(app: &TestApp, agent: &str, jobs: Value) -> Response {
    app.client
        .post(
            &format!("{AGENT}/cron/jobs"),
            &app.agent_key(agent),
            &json!({ "jobs": jobs }),
        )
        .await
}

async fn runs(app: &TestApp, agent: &str, runs: Value) -> Response {
    app.client
        .post(
            &format!("{AGENT}/cron/runs"),
            &app.agent_key(agent),
            &json!({ "runs": runs }),
        )
        .await
}

fn job(id: &str) -> Value {
    json!({"job_id": id, "name": format!("Job {id}"), "schedule": "30 2 * * *",
           "timezone": "Asia/Taipei", "gateway": "openclaw", "enabled": true,
           "description": "nightly"})
}

async fn call_tool(app: &TestApp, key: &str, name: &str, arguments: Value) -> Value {
    let res = app
        .client
        .send(
            Request::mcp(&json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                              "params": {"name": name, "arguments": arguments}}))
            .bearer(key),
        )
        .await;
    assert_eq!(res.status, 200, "{name}: {}", res.text());
    fleetdesk_tests::assert::tool_result(name, &res.json())
}

#[tokio::test(flavor = "multi_thread")]
async fn jobs_are_upserted_by_job_id_and_never_deleted() {
    let app = spawn_app().await;
    let v = ok(&jobs(&app, "op1", json!([job("a"), job("b")])).await);
    assert_eq!(
        (&v["inserted"], &v["updated"], &v["unchanged"]),
        (&json!(2), &json!(0), &json!(0)),
        "{v}"
    );
    assert_eq!(v["invalid"], json!([]));
    // Resent: unchanged. One changed, one disabled, b unlisted (kept).
    let v = ok(&jobs(&app, "op1", json!([job("a")])).await);
    assert_eq!(v["unchanged"], 1, "{v}");
    let mut a = job("a");
    a["enabled"] = json!(false);
    let v = ok(&jobs(&app, "op1", json!([a, job("c")])).await);
    assert_eq!(
        (&v["inserted"], &v["updated"]),
        (&json!(1), &json!(1)),
        "{v}"
    );
    let agent = app.agent_id("op1");
    assert_eq!(
        app.count(&format!(
            "SELECT count(*) AS n FROM cron_jobs WHERE agent_id = '{agent}'"
        ))
        .await,
        3
    );
    assert_eq!(
        app.count("SELECT count(*) AS n FROM cron_jobs WHERE job_id = 'a' AND NOT enabled")
            .await,
        1
    );
    // Another agent's job_id "a" is its own job.
    let v = ok(&jobs(&app, "op2", json!([job("a")])).await);
    assert_eq!(v["inserted"], 1, "{v}");
    // The same through MCP.
    let r = call_tool(
        &app,
        &app.agent_key("jp1"),
        "report_cron_jobs",
        json!({"jobs": [job("x")]}),
    )
    .await;
    assert_eq!(r["body"]["inserted"], 1, "{r}");
}

#[tokio::test(flavor = "multi_thread")]
async fn bad_schedules_and_zones_are_invalid_items() {
    let app = spawn_app().await;
    let mut bad_cron = job("bad1");
    bad_cron["schedule"] = json!("every day at noon");
    let mut six = job("bad2");
    six["schedule"] = json!("0 0 2 * * *");
    let mut bad_zone = job("bad3");
    bad_zone["timezone"] = json!("Mars/Olympus");
    let mut offset = job("bad4");
    offset["timezone"] = json!("+08:00");
    let mut blank = job("   ");
    blank["name"] = json!("blank id");
    let v = ok(&jobs(
        &app,
        "op1",
        json!([job("good"), bad_cron, six, bad_zone, offset, blank]),
    )
    .await);
    assert_eq!(v["inserted"], 1, "{v}");
    let invalid = v["invalid"].as_array().unwrap();
    let fields: Vec<(u64, &str)> = invalid
        .iter()
        .map(|i| (i["index"].as_u64().unwrap(), i["field"].as_str().unwrap()))
        .collect();
    assert_eq!(
        fields,
        [
            (1, "schedule"),
            (2, "schedule"),
            (3, "timezone"),
            (4, "timezone"),
            (5, "job_id")
        ],
        "{v}"
    );
    assert!(invalid[0]["reason"].as_str().unwrap().contains("cron"));
    assert_eq!(app.count("SELECT count(*) AS n FROM cron_jobs").await, 1);
}

#[tokio::test(flavor = "multi_thread")]
async fn job_limits_at_and_one_past() {
    let app = spawn_app().await;
    let many: Vec<Value> = (0..200).map(|i| job(&format!("j{i}"))).collect();
    let v = ok(&jobs(&app, "op1", json!(many)).await);
    assert_eq!(v["inserted"], 200, "{v}");
    let many: Vec<Value> = (0..201).map(|i| job(&format!("j{i}"))).collect();
    assert_error(
        &jobs(&app, "op1", json!(many)).await,
        400,
        "invalid_request",
    );
    assert_error(&jobs(&app, "op1", json!([])).await, 400, "invalid_request");
    for (field, max) in [
        ("job_id", 120),
        ("name", 200),
        ("schedule", 120),
        ("timezone", 64),
        ("gateway", 120),
        ("description", 2000),
    ] {
        let mut at = job("limits");
        at[field] = json!("x".repeat(max));
        if field == "schedule" || field == "timezone" {
            // At the limit the value is long but still read: a wrong one is an invalid item.
            let v = ok(&jobs(&app, "op1", json!([at])).await);
            assert_eq!(v["invalid"][0]["field"], field, "{v}");
        } else {
            let v = ok(&jobs(&app, "op1", json!([at])).await);
            assert_eq!(v["invalid"], json!([]), "{field}: {v}");
        }
        // One past its length is that item's answer; the rest of the batch is stored.
        let mut past = job("limits");
        past[field] = json!("x".repeat(max + 1));
        let v = ok(&jobs(&app, "op1", json!([job("kept"), past])).await);
        assert_eq!(v["invalid"].as_array().unwrap().len(), 1, "{field}: {v}");
        assert_eq!(v["invalid"][0]["index"], 1, "{v}");
        assert_eq!(v["invalid"][0]["field"], field, "{v}");
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_job_or_run_that_cannot_be_read_is_invalid_and_the_rest_is_stored() {
    let app = spawn_app().await;
    // A job without job_id, one with a number for a name, one that is no object: each is in
    // invalid with its index, field and reason; the two good jobs are stored.
    let mut no_id = job("x");
    no_id.as_object_mut().unwrap().remove("job_id");
    let mut typed = job("typed");
    typed["name"] = json!(7);
    let v = ok(&jobs(
        &app,
        "op1",
        json!([
            job("a"),
            no_id,
            typed,
            "not a job",
            job("b"),
            job("nul\u{0}")
        ]),
    )
    .await);
    assert_eq!(v["inserted"], 2, "{v}");
    let invalid: Vec<(i64, String, String)> = v["invalid"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| {
            assert!(!i["reason"].as_str().unwrap_or_default().is_empty(), "{i}");
            (
                i["index"].as_i64().unwrap(),
                i["job_id"].as_str().unwrap().to_owned(),
                i["field"].as_str().unwrap().to_owned(),
            )
        })
        .collect();
    assert_eq!(
        invalid,
        [
            (1, String::new(), "job_id".to_owned()),
            (2, "typed".to_owned(), "name".to_owned()),
            (3, String::new(), "jobs".to_owned()),
            (5, "nul\u{FFFD}".to_owned(), "job_id".to_owned()),
        ],
        "{v}"
    );
    assert_eq!(app.count("SELECT count(*) AS n FROM cron_jobs").await, 2);
    // A run with an unknown status, one without job_id: invalid; the good run is stored.
    let v = ok(&runs(
        &app,
        "op1",
        json!([
            {"job_id": "a", "run_id": "r1", "status": "exploded"},
            {"run_id": "r2", "status": "success"},
            {"job_id": "a", "run_id": "r3", "status": "success"},
        ]),
    )
    .await);
    assert_eq!(v["inserted"], 1, "{v}");
    let invalid: Vec<(i64, &str, &str)> = v["invalid"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| {
            (
                i["index"].as_i64().unwrap(),
                i["run_id"].as_str().unwrap(),
                i["field"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(invalid, [(0, "r1", "status"), (1, "r2", "job_id")], "{v}");
    assert_eq!(app.count("SELECT count(*) AS n FROM cron_runs").await, 1);
    // Only a batch that is not an array of 1-200 (1-100) refuses the request.
    for bad in [json!({"job_id": "a"}), json!("a"), json!([])] {
        assert_error(
            &jobs(&app, "op1", bad.clone()).await,
            400,
            "invalid_request",
        );
        assert_error(&runs(&app, "op1", bad).await, 400, "invalid_request");
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn runs_are_stored_once_per_run_id_and_read_in_the_jobs_zone() {
    let app = spawn_app().await;
    ok(&jobs(&app, "op1", json!([job("backup")])).await);
    // running first, without run_id: the default run_id is job_id@started_at (UTC).
    let v = ok(&runs(
        &app,
        "op1",
        json!([{"job_id": "backup", "started_at": "2026-11-25 10:30", "status": "running"}]),
    )
    .await);
    assert_eq!(v["inserted"], 1, "{v}");
    assert_eq!(
        app.count(
            "SELECT count(*) AS n FROM cron_runs WHERE run_id = 'backup@2026-11-25T02:30:00Z' \
             AND started_at = '2026-11-25T02:30:00Z'"
        )
        .await,
        1
    );
    // The result later under the same run_id (here implied by the same start).
    let done = json!([{"job_id": "backup", "started_at": "2026-11-25T02:30:00Z",
                       "finished_at": "2026-11-25 10:45:00", "status": "failed",
                       "summary": "disk full"}]);
    let v = ok(&runs(&app, "op1", done.clone()).await);
    assert_eq!(
        (&v["inserted"], &v["updated"]),
        (&json!(0), &json!(1)),
        "{v}"
    );
    // Resent: skipped; a late running: skipped, the result kept.
    let v = ok(&runs(&app, "op1", done).await);
    assert_eq!(v["skipped"], 1, "{v}");
    let v = ok(&runs(
        &app,
        "op1",
        json!([{"job_id": "backup", "run_id": "backup@2026-11-25T02:30:00Z",
                "status": "running"}]),
    )
    .await);
    assert_eq!(v["skipped"], 1, "{v}");
    assert_eq!(app.count("SELECT count(*) AS n FROM cron_runs").await, 1);
    assert_eq!(
        app.count(
            "SELECT count(*) AS n FROM cron_runs WHERE status = 'failed' AND summary = 'disk full' \
             AND finished_at = '2026-11-25T02:45:00Z'"
        )
        .await,
        1
    );
    // Through MCP.
    let r = call_tool(
        &app,
        &app.agent_key("op1"),
        "report_cron_run",
        json!({"runs": [{"job_id": "backup", "run_id": "r-mcp", "status": "success"}]}),
    )
    .await;
    assert_eq!(r["body"]["inserted"], 1, "{r}");
}

#[tokio::test(flavor = "multi_thread")]
async fn unknown_jobs_refused_times_and_invalid_items_leave_the_rest_stored() {
    let app = spawn_app().await;
    ok(&jobs(&app, "op1", json!([job("backup")])).await);
    ok(&jobs(&app, "op2", json!([job("theirs")])).await);
    let v = ok(&runs(
        &app,
        "op1",
        json!([
            {"job_id": "backup", "run_id": "ok1", "status": "success",
             "started_at": "2026-11-25T02:30:00+08:00", "finished_at": ""},
            {"job_id": "nope", "run_id": "x", "status": "success"},
            {"job_id": "theirs", "run_id": "x", "status": "success"},
            {"job_id": "backup", "run_id": "bad", "status": "success", "started_at": "yesterday"},
            {"job_id": "backup", "run_id": "bad2", "status": "failed",
             "finished_at": "2026-02-30 10:00"},
            {"job_id": "backup", "status": "success"},
            {"job_id": "backup", "run_id": "back", "status": "success",
             "started_at": "2026-11-25 10:00", "finished_at": "2026-11-25 09:00"}
        ]),
    )
    .await);
    assert_eq!(v["inserted"], 1, "{v}");
    assert_eq!(v["unknown_jobs"], json!(["nope", "theirs"]), "{v}");
    let refused: Vec<(u64, &str)> = v["refused"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| (i["index"].as_u64().unwrap(), i["field"].as_str().unwrap()))
        .collect();
    assert_eq!(refused, [(3, "started_at"), (4, "finished_at")], "{v}");
    let invalid: Vec<(u64, &str)> = v["invalid"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| (i["index"].as_u64().unwrap(), i["field"].as_str().unwrap()))
        .collect();
    assert_eq!(invalid, [(5, "run_id"), (6, "finished_at")], "{v}");
    assert_eq!(app.count("SELECT count(*) AS n FROM cron_runs").await, 1);
}

#[tokio::test(flavor = "multi_thread")]
async fn run_limits_log_trimming_and_redaction() {
    let app = spawn_app().await;
    ok(&jobs(&app, "op1", json!([job("backup")])).await);
    let many: Vec<Value> = (0..100)
        .map(|i| json!({"job_id": "backup", "run_id": format!("r{i}"), "status": "success"}))
        .collect();
    assert_eq!(ok(&runs(&app, "op1", json!(many)).await)["inserted"], 100);
    let many: Vec<Value> = (0..101)
        .map(|i| json!({"job_id": "backup", "run_id": format!("r{i}"), "status": "success"}))
        .collect();
    assert_error(
        &runs(&app, "op1", json!(many)).await,
        400,
        "invalid_request",
    );
    // summary 2000 / 2001; run_id 200 / 201.
    let v = ok(&runs(
        &app,
        "op1",
        json!([{"job_id": "backup", "run_id": "s", "status": "success",
                "summary": "s".repeat(2000)}]),
    )
    .await);
    assert_eq!(v["inserted"], 1, "{v}");
    let v = ok(&runs(
        &app,
        "op1",
        json!([{"job_id": "backup", "run_id": "s", "status": "success",
                "summary": "s".repeat(2001)}]),
    )
    .await);
    assert_eq!(v["invalid"][0]["field"], "summary", "{v}");
    ok(&runs(
        &app,
        "op1",
        json!([{"job_id": "backup", "run_id": "i".repeat(200), "status": "success"}]),
    )
    .await);
    let v = ok(&runs(
        &app,
        "op1",
        json!([{"job_id": "backup", "run_id": "i".repeat(201), "status": "success"}]),
    )
    .await);
    assert_eq!(v["invalid"][0]["field"], "run_id", "{v}");
    // A log of 20000 characters is kept whole; one more loses its first character.
    let exact = "L".repeat(20_000);
    let past = format!("X{exact}");
    ok(&runs(
        &app,
        "op1",
        json!([{"job_id": "backup", "run_id": "log1", "status": "success", "log": exact},
               {"job_id": "backup", "run_id": "log2", "status": "success",
                "log": format!("  {past}\n\n")}]),
    )
    .await);
    assert_eq!(
        app.count(
            "SELECT count(*) AS n FROM cron_runs WHERE run_id IN ('log1', 'log2') \
             AND char_length(log) = 20000 AND log NOT LIKE 'X%'"
        )
        .await,
        2
    );
    // Keys, bearer tokens and cookies never reach the database.
    let key = app.agent_key("op1");
    ok(&runs(
        &app,
        "op1",
        json!([{"job_id": "backup", "run_id": "secret", "status": "failed",
                "summary": format!("posted with {key}"),
                "log": "Authorization: Bearer abc.DEF-123\nSet-Cookie: sid=s3cr3t; Path=/\n\
                        GET /cb?access_token=tok999&x=1"}]),
    )
    .await);
    let lookup = &key[4..12];
    assert_eq!(
        app.count(&format!(
            "SELECT count(*) AS n FROM cron_runs WHERE run_id = 'secret' AND (summary LIKE '%{lookup}%' \
             OR log LIKE '%abc.DEF%' OR log LIKE '%s3cr3t%' OR log LIKE '%tok999%')"
        ))
        .await,
        0
    );
    assert_eq!(
        app.count("SELECT count(*) AS n FROM cron_runs WHERE run_id = 'secret' AND log LIKE '%[redacted]%'")
            .await,
        1
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn cron_needs_the_cron_scope_and_an_agent_key() {
    let app = spawn_app().await;
    // The community role has no cron:write.
    assert_error(
        &jobs(&app, "bot", json!([job("a")])).await,
        403,
        "forbidden",
    );
    let res = app
        .client
        .post(
            &format!("{AGENT}/cron/jobs"),
            &app.personal_key("ann@acme.test"),
            &json!({"jobs": [job("a")]}),
        )
        .await;
    assert!(res.status == 401 || res.status == 403, "{}", res.text());
}

#[tokio::test(flavor = "multi_thread")]
async fn concurrent_reports_of_one_run_make_one_row() {
    let app = spawn_app().await;
    let sent =
        futures_util::future::join_all((0..6).map(|_| jobs(&app, "op1", json!([job("j")])))).await;
    assert!(sent.iter().all(|r| r.status == 200), "a job upsert failed");
    // Each report carries one field: the stored run ends with every field of a result, none
    // lost to a report that read the row before another wrote it.
    let report = |i: usize| match i % 4 {
        0 => json!({"job_id": "j", "run_id": "same", "status": "running"}),
        1 => json!({"job_id": "j", "run_id": "same", "status": "success", "summary": "done"}),
        2 => json!({"job_id": "j", "run_id": "same", "status": "success", "log": "all ok"}),
        _ => json!({"job_id": "j", "run_id": "same", "status": "success",
                    "finished_at": "2026-11-25T02:05:00Z"}),
    };
    let sent =
        futures_util::future::join_all((0..8).map(|i| runs(&app, "op1", json!([report(i)])))).await;
    assert!(sent.iter().all(|r| r.status == 200), "a run report failed");
    let inserted: i64 = sent
        .iter()
        .map(|r| r.json()["inserted"].as_i64().unwrap())
        .sum();
    assert_eq!(inserted, 1, "one report inserts, the others merge");
    assert_eq!(app.count("SELECT count(*) AS n FROM cron_jobs").await, 1);
    assert_eq!(app.count("SELECT count(*) AS n FROM cron_runs").await, 1);
    assert_eq!(
        app.count(
            "SELECT count(*) AS n FROM cron_runs WHERE status = 'success' AND summary = 'done' \
             AND log = 'all ok' AND finished_at = '2026-11-25T02:05:00Z'"
        )
        .await,
        1,
        "a field was lost"
    );
}
