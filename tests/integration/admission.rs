//! Admission across instances: the rate limit as a sliding window shared by every instance
//! without a write per request, revocation seen by every instance at once, and Idempotency-Key
//! claims that follow their request's life (a killed process frees its claims; a caller that
//! goes away does not stop its request).

use diesel_async::SimpleAsyncConnection;
use fleetdesk_tenancy::rate::{COUNTED_SECONDS, bound};
use fleetdesk_tests::assert::assert_error;
use fleetdesk_tests::binary::{fleetdesk_over, fresh_dir, serve};
use fleetdesk_tests::client::Request;
use fleetdesk_tests::{
    AppOptions, Client, Response, TestApp, spawn_app, spawn_app_in_own_database, spawn_app_with,
};
use serde_json::{Value, json};
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::io::AsyncWriteExt;

const ACCOUNTS: &str = "/api/agent/v1/accounts";
const HEARTBEAT: &str = "/api/agent/v1/heartbeat";
const KEYS: &str = "/api/user/v1/admin/keys";

async fn limited(per_minute: i64) -> TestApp {
    spawn_app_with(AppOptions {
        rate_limit_per_minute: per_minute,
        ..Default::default()
    })
    .await
}

fn heartbeat(run_id: &str) -> Value {
    json!({"run_id": run_id, "summary": "round done", "counts": {"drafts": 2}})
}

fn replayed(res: &Response) -> bool {
    res.header("idempotent-replayed") == Some("true")
}

/// A 429 with its Retry-After in whole seconds, in the header and the body alike.
#[track_caller]
fn retry_after(res: &Response) -> u64 {
    let body = assert_error(res, 429, "rate_limited");
    let header: u64 = res
        .header("retry-after")
        .expect("Retry-After")
        .parse()
        .expect("whole seconds");
    assert_eq!(body["retry_after"].as_u64(), Some(header));
    assert!(
        (1..=COUNTED_SECONDS as u64).contains(&header),
        "Retry-After {header}"
    );
    header
}

/// Sends `n` GET /accounts at once with one key, spread round-robin over `clients`; the
/// number that passed.
async fn burst(clients: &[Client], key: &str, n: usize) -> usize {
    let barrier = Arc::new(tokio::sync::Barrier::new(n));
    let tasks: Vec<_> = (0..n)
        .map(|i| {
            let (client, key, barrier) = (
                clients[i % clients.len()].clone(),
                key.to_owned(),
                barrier.clone(),
            );
            tokio::spawn(async move {
                barrier.wait().await;
                client.get(ACCOUNTS, &key).await
            })
        })
        .collect();
    let mut passed = 0;
    for task in tasks {
        let res = task.await.expect("request");
        if res.status == 200 {
            passed += 1;
        } else {
            retry_after(&res);
        }
    }
    passed
}

#[tokio::test(flavor = "multi_thread")]
async fn a_burst_of_300_passes_the_limit_of_120_on_one_two_and_three_instances() {
    for instances in 1..=3 {
        let app = limited(120).await;
        let mut clients = vec![app.client.clone()];
        let mut handles = Vec::new();
        for _ in 1..instances {
            let (client, handle) = app.another_instance(120).await;
            clients.push(client);
            handles.push(handle);
        }
        let key = app.agent_key("op1");
        let passed = burst(&clients, &key, 300).await;
        eprintln!(
            "measured: a burst of 300 with limit 120 over {instances} instance(s): {passed} passed"
        );
        assert!(
            (114..=126).contains(&passed),
            "{passed} of 300 passed over {instances} instance(s); the limit is 120 ± 5%"
        );
        // The window stays full on every instance. A burst that passed fewer than the limit
        // left room (a lease that lapsed unspent is given back with the instance's next one):
        // a probe may take it, but never past the limit's 5%.
        let mut admitted = passed;
        for client in &clients {
            loop {
                let res = client.get(ACCOUNTS, &key).await;
                if res.status != 200 {
                    retry_after(&res);
                    break;
                }
                admitted += 1;
                assert!(
                    admitted <= 126,
                    "{admitted} admitted in one window over {instances} instance(s)"
                );
            }
        }
        for handle in handles {
            handle.stop(true).await;
        }
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_full_window_stays_full_across_a_minute_boundary() {
    let app = limited(5).await;
    let (second, handle) = app.another_instance(5).await;
    let key = app.agent_key("op1");
    // Start a few seconds before the database clock's next minute: fixed one-minute windows
    // would open a new budget at the boundary.
    let now = app
        .count("SELECT floor(EXTRACT(SECOND FROM clock_timestamp()) * 1000)::bigint AS n")
        .await;
    let until_minute = Duration::from_millis((60_000 - now) as u64);
    if until_minute > Duration::from_secs(4) {
        tokio::time::sleep(until_minute - Duration::from_secs(4)).await;
    }
    let clients = [app.client.clone(), second];
    for i in 0..5 {
        let res = clients[i % 2].get(ACCOUNTS, &key).await;
        assert_eq!(res.status, 200, "request {} of 5: {}", i + 1, res.text());
    }
    // Eight seconds of requests on both instances, the minute's boundary among them.
    let started = Instant::now();
    let mut waits = Vec::new();
    while started.elapsed() < Duration::from_secs(8) {
        for client in &clients {
            waits.push(retry_after(&client.get(ACCOUNTS, &key).await));
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
    let crossed = app
        .count("SELECT floor(EXTRACT(SECOND FROM clock_timestamp()))::bigint AS n")
        .await;
    assert!(
        crossed < 30,
        "the requests went past a minute's boundary (now at :{crossed})"
    );
    // Retry-After counts down to when the first of the five leaves the window (each instance
    // rounds up to whole seconds of its own: they may differ by one).
    assert!(waits.windows(2).all(|w| w[1] <= w[0] + 1), "{waits:?}");
    assert!(
        waits[0] >= 50,
        "the window frees in about a minute, not at :00: {waits:?}"
    );
    handle.stop(true).await;
}

/// A key that has sent 10 requests a second for the last minute (written into its window as
/// the instances would have) keeps that pace, its limit of 600 a minute, through the pipeline
/// of three instances for four seconds: nothing is refused. The instances lease several
/// tokens at a time at this pace, let the unspent ones lapse at the end of their second and
/// give them back with their next lease; unspent tokens that kept counting would fill the
/// window within a second or two. A burst afterwards is cut so that the window, the minute of
/// history with it, never passed more than the bound.
#[tokio::test(flavor = "multi_thread")]
async fn a_key_paced_at_its_limit_over_three_instances_is_never_refused() {
    let limit = 600;
    let app = limited(limit).await;
    let (second, first_handle) = app.another_instance(limit).await;
    let (third, second_handle) = app.another_instance(limit).await;
    let clients = [app.client.clone(), second, third];
    let key = app.agent_key("op1");
    let id = key_id(&app, &key).await;
    let per_second = limit / 60;
    // The seconds before the current one each hold what a paced key spent in them.
    app.connect()
        .await
        .batch_execute(&format!(
            "INSERT INTO rate_grants (key_id, second, counts, version)
             VALUES ('{id}', floor(EXTRACT(EPOCH FROM now()))::bigint,
                     ARRAY[0::bigint] || array_fill({per_second}::bigint, ARRAY[60]), 0)"
        ))
        .await
        .expect("a minute of history");
    let seeded_at = app
        .count("SELECT floor(EXTRACT(EPOCH FROM now()))::bigint AS n")
        .await;

    let started = tokio::time::Instant::now();
    let interval = Duration::from_millis(1000 / per_second as u64);
    let mut refused = Vec::new();
    let paced = 4 * per_second as u32;
    for k in 0..paced {
        tokio::time::sleep_until(started + interval * k).await;
        let res = clients[k as usize % clients.len()]
            .get(ACCOUNTS, &key)
            .await;
        if res.status != 200 {
            refused.push((k, retry_after(&res)));
        }
    }
    eprintln!(
        "measured: {paced} requests at {limit}/min over 3 instances after a minute at that \
         pace: {} refused",
        refused.len()
    );
    assert!(
        refused.is_empty(),
        "refused (request, Retry-After): {refused:?}"
    );

    let passed = burst(&clients, &key, 60).await as i64;
    eprintln!("measured: then a burst of 60: {passed} passed");
    assert!(
        passed < 60,
        "the window was full, yet all of the burst passed"
    );
    // The window counts every token spent since it was seeded (and at most the unspent ones
    // of the instances' last leases beside them), and its 61 seconds never hold more than the
    // bound.
    let counted = |seconds: &str| {
        format!(
            "SELECT COALESCE(sum(c), 0)::bigint AS n FROM rate_grants,
             unnest(counts) WITH ORDINALITY AS u(c, age)
             WHERE key_id = '{id}' AND age <= {seconds}"
        )
    };
    let since_seeded = app
        .count(&counted(&format!("second - {seeded_at} + 1")))
        .await;
    assert!(
        (paced as i64 + passed..=paced as i64 + passed + 3 * limit / 16).contains(&since_seeded),
        "{since_seeded} counted for {paced} + {passed} spent"
    );
    let window = app.count(&counted(&COUNTED_SECONDS.to_string())).await;
    assert!(window <= bound(limit), "{window} counted in 61 seconds");
    first_handle.stop(true).await;
    second_handle.stop(true).await;
}

/// The id of a key, for the admin's revoke call.
async fn key_id(app: &TestApp, key: &str) -> String {
    use diesel_async::RunQueryDsl;
    #[derive(diesel::QueryableByName)]
    struct Id {
        #[diesel(sql_type = diesel::sql_types::Text)]
        id: String,
    }
    let row: Id = diesel::sql_query("SELECT id::text AS id FROM api_keys WHERE lookup = $1")
        .bind::<diesel::sql_types::Text, _>(&key[4..12])
        .get_result(&mut app.connect().await)
        .await
        .expect("the key's id");
    row.id
}

#[tokio::test(flavor = "multi_thread")]
async fn a_revoked_key_is_refused_on_every_instance_at_its_next_request() {
    let app = spawn_app().await;
    let (b, b_handle) = app.another_instance(10_000).await;
    let (c, c_handle) = app.another_instance(10_000).await;
    let key = app.agent_key("op1");
    // Every instance holds leased tokens for the key.
    let clients = [app.client.clone(), b, c];
    for _ in 0..3 {
        for client in &clients {
            assert_eq!(client.get(ACCOUNTS, &key).await.status, 200);
        }
    }
    let root = app.personal_key("root@example.com");
    let id = key_id(&app, &key).await;
    let revoked = app
        .client
        .post(&format!("{KEYS}/agent/{id}/revoke"), &root, &json!({}))
        .await;
    assert_eq!(revoked.status, 200, "{}", revoked.text());
    for client in &clients {
        let res = client.get(ACCOUNTS, &key).await;
        assert_error(&res, 401, "unauthorized");
    }
    b_handle.stop(true).await;
    c_handle.stop(true).await;
}

/// Holds an exclusive lock on `agent_runs` (heartbeats block on it) until the connection
/// rolls back or closes.
async fn block_heartbeats(app: &TestApp) -> diesel_async::AsyncPgConnection {
    let mut conn = app.connect().await;
    conn.batch_execute("BEGIN; LOCK TABLE agent_runs IN ACCESS EXCLUSIVE MODE")
        .await
        .expect("lock agent_runs");
    conn
}

/// Waits until a claim is running (its request is past admission).
async fn claim_running(app: &TestApp) {
    let deadline = Instant::now() + Duration::from_secs(30);
    while app
        .count("SELECT count(*) AS n FROM idempotency_keys WHERE state = 'running'")
        .await
        == 0
    {
        assert!(Instant::now() < deadline, "no claim within 30 s");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_claim_of_a_killed_process_is_free_for_the_retry_within_seconds() {
    let app = spawn_app_in_own_database().await;
    let key = app.agent_key("op1");
    let dir = fresh_dir(&app.data_dir, "killed");
    let mut killed = serve(
        fleetdesk_over(
            &["serve", "--bind", "127.0.0.1:0", "--no-demo"],
            &app.db,
            &dir,
        ),
        Duration::from_secs(60),
    )
    .await;
    let mut lock = block_heartbeats(&app).await;
    let client = killed.client.clone();
    let (k, body) = (key.clone(), heartbeat("r1"));
    // The client panics when its server dies: the task ends in error.
    let first = tokio::spawn(async move { client.post_idem(HEARTBEAT, &k, "crash", &body).await });
    claim_running(&app).await;
    // kill -9 between the claim and the completion.
    let status = std::process::Command::new("kill")
        .args(["-KILL", &killed.proc.pid().to_string()])
        .status()
        .expect("run kill");
    assert!(status.success());
    let killed_at = Instant::now();
    killed
        .proc
        .wait_exit(Duration::from_secs(10))
        .await
        .expect("the process ended");
    assert!(first.await.is_err(), "the killed process answered nothing");
    lock.batch_execute("ROLLBACK").await.expect("unlock");

    let retry = app
        .client
        .post_idem(HEARTBEAT, &key, "crash", &heartbeat("r1"))
        .await;
    let freed_in = killed_at.elapsed();
    eprintln!("measured: the retry after kill -9 ran {freed_in:?} after the kill");
    assert_eq!(retry.status, 200, "the retry runs: {}", retry.text());
    assert!(!replayed(&retry));
    assert!(freed_in < Duration::from_secs(5), "{freed_in:?}");
    assert_eq!(
        app.count("SELECT count(*) AS n FROM agent_runs WHERE run_id = 'r1'")
            .await,
        1,
        "one effect: the killed request's transaction never committed"
    );
    let again = app
        .client
        .post_idem(HEARTBEAT, &key, "crash", &heartbeat("r1"))
        .await;
    assert!(replayed(&again), "the retry's success occupies the key");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_live_instance_keeps_its_claim_while_its_request_runs() {
    let app = spawn_app().await;
    let (other, handle) = app.another_instance(10_000).await;
    let key = app.agent_key("op1");
    let mut lock = block_heartbeats(&app).await;
    let (client, k) = (app.client.clone(), key.clone());
    let first = tokio::spawn(async move {
        client
            .post_idem(HEARTBEAT, &k, "live", &heartbeat("r1"))
            .await
    });
    claim_running(&app).await;
    for client in [&app.client, &other] {
        let res = client
            .post_idem(HEARTBEAT, &key, "live", &heartbeat("r1"))
            .await;
        assert_error(&res, 409, "idempotency_in_progress");
    }
    lock.batch_execute("ROLLBACK").await.expect("unlock");
    let first = first.await.expect("task");
    assert_eq!(first.status, 200, "{}", first.text());
    let again = other
        .post_idem(HEARTBEAT, &key, "live", &heartbeat("r1"))
        .await;
    assert!(replayed(&again));
    assert_eq!(app.count("SELECT count(*) AS n FROM agent_runs").await, 1);
    handle.stop(true).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_request_whose_caller_went_away_finishes_and_its_retry_is_a_replay() {
    let app = spawn_app().await;
    let key = app.agent_key("op1");
    let mut lock = block_heartbeats(&app).await;
    let request = Request::new("POST", HEARTBEAT)
        .bearer(&key)
        .header("Idempotency-Key", "gone")
        .json(&heartbeat("r1"));
    let mut conn = tokio::net::TcpStream::connect(app.client.host())
        .await
        .expect("connect");
    conn.write_all(&request.encode(app.client.host()))
        .await
        .expect("send");
    claim_running(&app).await;
    drop(conn);
    lock.batch_execute("ROLLBACK").await.expect("unlock");
    let deadline = Instant::now() + Duration::from_secs(30);
    while app
        .count("SELECT count(*) AS n FROM idempotency_keys WHERE state = 'done'")
        .await
        == 0
    {
        assert!(
            Instant::now() < deadline,
            "the request did not finish within 30 s"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let retry = app
        .client
        .post_idem(HEARTBEAT, &key, "gone", &heartbeat("r1"))
        .await;
    assert_eq!(retry.status, 200, "{}", retry.text());
    assert!(
        replayed(&retry),
        "the request ran to its end; the retry is its replay"
    );
    assert_eq!(app.count("SELECT count(*) AS n FROM agent_runs").await, 1);
}
