//! A test's schema or database goes when the test fails: a panic unwinds through its
//! `TestDb`, which ends the connections still on it (a request left mid-transaction included)
//! and drops it.

use fleetdesk_pg::testing::server_url;
use fleetdesk_tests::{AppOptions, Isolation, count_at, spawn_app_with};
use std::sync::mpsc;
use std::time::Duration;

/// A failed test's database or schema: its name and a URL of the database that held it.
struct Failed {
    name: String,
    url: String,
}

/// Runs a test on a thread and runtime of its own that spawns an app with `isolation`, holds
/// a lock on one of its tables from a connection that never commits (as a request cut off by
/// the failure would), and panics. Answers once that thread is gone, which it is only after
/// its `TestDb` was dropped.
fn a_failed_test(isolation: Isolation) -> Failed {
    let (named, name) = mpsc::channel();
    let test = std::thread::spawn(move || {
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .expect("a runtime");
        rt.block_on(async move {
            let app = spawn_app_with(AppOptions {
                isolation,
                ..Default::default()
            })
            .await;
            let mut conn = app.connect().await;
            let (locked, held) = tokio::sync::oneshot::channel();
            tokio::spawn(async move {
                use diesel_async::SimpleAsyncConnection;
                conn.batch_execute("BEGIN; LOCK TABLE organizations IN ACCESS EXCLUSIVE MODE")
                    .await
                    .expect("lock a table");
                let _ = locked.send(());
                std::future::pending::<()>().await;
                drop(conn);
            });
            held.await.expect("the lock is held");
            let url = match isolation {
                Isolation::Schema => app.db.url.clone(),
                Isolation::Database => server_url(),
            };
            let name = app.db.name().to_owned();
            named.send(Failed { name, url }).expect("send the name");
            panic!("the test fails while a connection holds a lock on its tables");
        })
    });
    let (gone, ended) = mpsc::channel();
    std::thread::spawn(move || gone.send(test.join().is_err()));
    let panicked = ended
        .recv_timeout(Duration::from_secs(90))
        .expect("the failed test's thread ends: its drop does not wait behind the lock");
    assert!(panicked, "the test thread panics");
    name.recv().expect("the failed test named its database")
}

#[tokio::test(flavor = "multi_thread")]
async fn a_failed_tests_schema_is_dropped_though_a_connection_held_a_lock_on_it() {
    let failed = tokio::task::spawn_blocking(|| a_failed_test(Isolation::Schema))
        .await
        .expect("the failed test ran");
    assert!(
        failed.name.starts_with("fleetdesk_test_"),
        "{}",
        failed.name
    );
    let left = format!(
        "SELECT count(*) AS n FROM pg_namespace WHERE nspname = '{}'",
        failed.name
    );
    assert_eq!(count_at(&failed.url, &left).await, 0, "{}", failed.name);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_failed_tests_database_is_dropped_though_a_connection_held_a_lock_in_it() {
    let failed = tokio::task::spawn_blocking(|| a_failed_test(Isolation::Database))
        .await
        .expect("the failed test ran");
    let left = format!(
        "SELECT count(*) AS n FROM pg_database WHERE datname = '{}'",
        failed.name
    );
    assert_eq!(count_at(&failed.url, &left).await, 0, "{}", failed.name);
}
