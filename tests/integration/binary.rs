//! The real `fleetdesk` binary, end to end: `serve` (with DATABASE_URL and with its own local
//! PostgreSQL), graceful shutdown on SIGTERM, restarts, `migrate` and `admin apply`.
//!
//! The binary is built, started and watched by [`fleetdesk_tests::binary`]: built once per test
//! process (never a stale one), started with a clean environment, killed when a test fails.

use fleetdesk_pg::testing::TestDb;
use fleetdesk_tests::Client;
use fleetdesk_tests::binary::{
    DEMO_BANNER, SERVE, Served, TempDir, all_keys, demo_agent_key, demo_report, fleetdesk,
    fleetdesk_over, fresh_dir, is_key, run, serve,
};
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

/// The demo accounts answer with this key, and the service is ready.
async fn assert_demo_accounts(client: &Client, key: &str) {
    let res = client.get("/api/agent/v1/accounts", key).await;
    assert_eq!(
        res.status,
        200,
        "GET /api/agent/v1/accounts: {}",
        String::from_utf8_lossy(&res.body)
    );
    let body = res.json();
    let codes: Vec<&str> = body["accounts"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|a| a["code"].as_str())
        .collect();
    for code in ["TW-T001", "TW-I001", "TW-K001"] {
        assert!(codes.contains(&code), "{code} missing from {body}");
    }
    let ready = client
        .send(fleetdesk_tests::client::Request::new("GET", "/readyz"))
        .await;
    assert_eq!(
        ready.status,
        200,
        "/readyz: {}",
        String::from_utf8_lossy(&ready.body)
    );
    assert_eq!(ready.json()["status"], "ready");
}

/// First start on an empty database: the demo tenant and its keys; returns the agent key.
async fn first_start(served: &Served) -> String {
    let report = demo_report(&served.banner).unwrap_or_else(|| {
        panic!(
            "the first start on an empty database printed no demo tenant report\n{}",
            served.proc.output()
        )
    });
    let key = demo_agent_key(&report);
    for k in all_keys(&report) {
        assert!(
            is_key(&k, "fda_") || is_key(&k, "fdp_"),
            "a printed key has the wrong shape: {k}"
        );
    }
    assert!(
        served
            .banner
            .contains(&format!("FLEETDESK_AGENT_KEY={key}")),
        "the try-it hint does not show the agent key\n{}",
        served.banner
    );
    assert!(
        served.banner.contains(&format!(
            "http://{}/api/agent/v1/accounts",
            served.client.host()
        )),
        "the try-it hint does not show the bound address\n{}",
        served.banner
    );
    assert_demo_accounts(&served.client, &key).await;
    key
}

/// A later start on the same data: no demo keys, and the earlier key still works.
async fn restart(served: &Served, key: &str) {
    assert!(
        !served.banner.contains(DEMO_BANNER)
            && !served.banner.contains("fda_")
            && !served.banner.contains("fdp_"),
        "a restart on a non-empty database printed keys again:\n{}",
        served.banner
    );
    assert_demo_accounts(&served.client, key).await;
}

async fn stop(served: &mut Served) {
    // Within 35 s: actix allows requests 30 s to finish.
    let status = served.proc.terminate(Duration::from_secs(35)).await;
    assert!(
        status.success(),
        "fleetdesk exited with {status} after SIGTERM, expected 0\n{}",
        served.proc.output()
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn serve_loads_the_demo_stops_on_sigterm_and_keeps_its_data() {
    let db = TestDb::new().await.expect("a test database");
    let data = TempDir::new("srv");
    let start = || fleetdesk_over(SERVE, &db, data.path());

    let mut first = serve(start(), Duration::from_secs(60)).await;
    let key = first_start(&first).await;
    let health = first
        .client
        .send(fleetdesk_tests::client::Request::new("GET", "/healthz"))
        .await;
    assert_eq!(health.status, 200);
    stop(&mut first).await;
    // The port is free again: the server really stopped.
    let gone = std::net::TcpStream::connect(first.client.host());
    assert!(
        gone.is_err(),
        "the stopped server still accepts connections"
    );

    let mut second = serve(start(), Duration::from_secs(60)).await;
    restart(&second, &key).await;
    stop(&mut second).await;
}

// ---------------------------------------------------------------------------------------------
// The zero-set-up start: no DATABASE_URL, fleetdesk's own PostgreSQL under the data dir

fn running_as_root() -> bool {
    use std::os::unix::fs::MetadataExt;
    std::fs::metadata("/proc/self").is_ok_and(|m| m.uid() == 0)
}

/// pg_ctl of the cluster's major version (as `local_pg` finds it), else the one on PATH.
fn pg_ctl_for(pgdata: &Path) -> PathBuf {
    let major = std::fs::read_to_string(pgdata.join("PG_VERSION")).unwrap_or_default();
    let versioned = PathBuf::from(format!("/usr/lib/postgresql/{}/bin/pg_ctl", major.trim()));
    if !major.trim().is_empty() && versioned.is_file() {
        versioned
    } else {
        PathBuf::from("pg_ctl")
    }
}

/// The local cluster under a data dir: stopped (`pg_ctl stop -m fast`, as the `postgres` user
/// when root) and the dir removed when dropped.
struct LocalCluster {
    dir: PathBuf,
}

impl LocalCluster {
    fn pgdata(&self) -> PathBuf {
        self.dir.join("postgres").join("data")
    }

    fn is_running(&self) -> bool {
        self.pgdata().join("postmaster.pid").is_file()
    }

    /// Stops the cluster; Ok when it was stopped or not running.
    fn stop(&self) -> Result<(), String> {
        if !self.pgdata().join("PG_VERSION").is_file() {
            return Ok(());
        }
        let pg_ctl = pg_ctl_for(&self.pgdata());
        let mut cmd = if running_as_root() {
            let mut c = Command::new("runuser");
            c.args(["-u", "postgres", "--"]).arg(&pg_ctl);
            c
        } else {
            Command::new(&pg_ctl)
        };
        cmd.arg("-D")
            .arg(self.pgdata())
            .args(["stop", "-m", "fast", "-w", "-t", "60"])
            .current_dir("/")
            .stdin(Stdio::null());
        let out = cmd
            .output()
            .map_err(|e| format!("running {}: {e}", pg_ctl.display()))?;
        let text = format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        if out.status.success() || text.contains("Is server running?") {
            Ok(())
        } else {
            Err(format!("pg_ctl stop failed ({}): {text}", out.status))
        }
    }
}

impl Drop for LocalCluster {
    fn drop(&mut self) {
        if let Err(e) = self.stop() {
            eprintln!("{e}");
        }
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn serve_without_database_url_runs_its_own_postgres_and_keeps_its_data() {
    // Short and under /tmp (not $TMPDIR): the postgres user can reach it when the test runs as
    // root, and the socket path stays short.
    let cluster = LocalCluster {
        dir: fresh_dir(Path::new("/tmp"), "z"),
    };
    let dir = cluster.dir.to_str().expect("utf-8").to_owned();
    let start = || {
        let mut cmd = fleetdesk(SERVE);
        cmd.args(["--data-dir", &dir]);
        cmd
    };
    let mut first = serve(start(), Duration::from_secs(180)).await;
    assert!(
        cluster.pgdata().join("PG_VERSION").is_file(),
        "no PostgreSQL cluster under {dir}/postgres/data"
    );
    let key = first_start(&first).await;
    stop(&mut first).await;
    assert!(
        cluster.is_running(),
        "the local PostgreSQL should outlive `fleetdesk serve` (it is reused on the next start)"
    );

    let mut second = serve(start(), Duration::from_secs(120)).await;
    restart(&second, &key).await;
    stop(&mut second).await;

    cluster.stop().expect("stop the local PostgreSQL");
    assert!(
        !cluster.is_running(),
        "the local PostgreSQL still runs after pg_ctl stop"
    );
}

// ---------------------------------------------------------------------------------------------
// migrate and admin apply

/// How long a one-shot subcommand may take.
const ONE_SHOT: Duration = Duration::from_secs(120);

#[tokio::test(flavor = "multi_thread")]
async fn migrate_on_a_migrated_database_runs_nothing() {
    let db = TestDb::new().await.expect("a test database");
    let data = TempDir::new("mig");
    let cmd = fleetdesk_over(&["migrate"], &db, data.path());
    let (status, out, err) = run(cmd, ONE_SHOT).await;
    assert!(status.success(), "migrate failed ({status}):\n{out}\n{err}");
    let last = out
        .lines()
        .rev()
        .find(|l| !l.trim().is_empty())
        .unwrap_or_default();
    let printed: Value = serde_json::from_str(last)
        .unwrap_or_else(|e| panic!("migrate printed no JSON ({e}): {out:?}"));
    assert_eq!(printed, serde_json::json!({"migrations_run": 0}));
}

const TENANT: &str = r#"{
  "platform_admins": [{"email": "ops@bin.test", "name": "Ops", "keys": 1}],
  "organizations": [{
    "name": "Binary Agency",
    "members": [{"email": "bea@bin.test", "name": "Bea", "role": "agency", "keys": 2}],
    "workspaces": [{
      "name": "Taiwan",
      "projects": [{"name": "beauty"}],
      "agents": [{"name": "runner", "role": "operator", "keys": 1}],
      "personas": [{"name": "Ivy", "agent": "runner",
                    "accounts": [{"code": "tw-t042", "platform": "threads", "state": "active"}]}]
    }]
  }]
}"#;

fn apply_cmd(db: &TestDb, data: &TempDir, file: &Path) -> Command {
    let mut cmd = fleetdesk_over(&["admin", "apply"], db, data.path());
    cmd.arg(file);
    cmd
}

fn is_uuid(v: &Value) -> bool {
    v.as_str().is_some_and(|s| uuid::Uuid::parse_str(s).is_ok())
}

#[tokio::test(flavor = "multi_thread")]
async fn admin_apply_issues_keys_once_and_rejects_an_invalid_file() {
    let db = TestDb::new().await.expect("a test database");
    let data = TempDir::new("adm");
    let file = data.path().join("tenant.json");
    std::fs::write(&file, TENANT).expect("write the tenant file");

    let (status, out, err) = run(apply_cmd(&db, &data, &file), ONE_SHOT).await;
    assert!(status.success(), "apply failed ({status}):\n{out}\n{err}");
    let first: Value =
        serde_json::from_str(&out).unwrap_or_else(|e| panic!("apply printed no JSON ({e}): {out}"));
    assert!(is_uuid(&first["platform_admins"][0]["id"]), "{first}");
    let org = &first["organizations"][0];
    assert!(is_uuid(&org["id"]), "{first}");
    let ws = &org["workspaces"][0];
    assert!(is_uuid(&ws["id"]), "{first}");
    assert!(is_uuid(&ws["projects"][0]["id"]), "{first}");
    assert!(is_uuid(&ws["agents"][0]["id"]), "{first}");
    assert!(is_uuid(&ws["personas"][0]["id"]), "{first}");
    assert_eq!(
        ws["personas"][0]["accounts"][0]["code"], "TW-T042",
        "account codes are stored upper-cased: {first}"
    );
    assert_eq!(ws["personas"][0]["accounts"][0]["platform"], "threads");

    let admin_keys = first["platform_admins"][0]["keys"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    let member_keys = org["members"][0]["keys"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    let agent_keys = ws["agents"][0]["keys"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    assert_eq!(admin_keys.len(), 1, "{first}");
    assert_eq!(member_keys.len(), 2, "{first}");
    assert_eq!(agent_keys.len(), 1, "{first}");
    for k in admin_keys.iter().chain(&member_keys) {
        assert!(
            is_key(k.as_str().unwrap_or_default(), "fdp_"),
            "personal key shape: {k}"
        );
    }
    let agent_key = agent_keys[0].as_str().unwrap_or_default().to_owned();
    assert!(is_key(&agent_key, "fda_"), "agent key shape: {agent_key}");
    assert_ne!(member_keys[0], member_keys[1], "two keys are the same");
    // Keys are shown on stdout only, never in the logs.
    assert!(!err.contains(&agent_key), "the key leaked to stderr");

    // Again: the same ids, no new keys.
    let (status, out, err) = run(apply_cmd(&db, &data, &file), ONE_SHOT).await;
    assert!(
        status.success(),
        "second apply failed ({status}):\n{out}\n{err}"
    );
    let second: Value = serde_json::from_str(&out)
        .unwrap_or_else(|e| panic!("the second apply printed no JSON ({e}): {out}"));
    assert!(
        all_keys(&second).is_empty(),
        "the second apply issued keys again: {second}"
    );
    assert_eq!(second["organizations"][0]["id"], org["id"]);
    assert_eq!(second["organizations"][0]["workspaces"][0]["id"], ws["id"]);
    assert_eq!(
        second["organizations"][0]["workspaces"][0]["agents"][0]["id"],
        ws["agents"][0]["id"]
    );
    assert_eq!(
        second["platform_admins"][0]["id"],
        first["platform_admins"][0]["id"]
    );
    for keys in [
        &second["platform_admins"][0]["keys"],
        &second["organizations"][0]["members"][0]["keys"],
        &second["organizations"][0]["workspaces"][0]["agents"][0]["keys"],
    ] {
        assert_eq!(keys, &serde_json::json!([]), "{second}");
    }

    // The issued agent key authenticates against the service over that database.
    let mut served = serve(
        fleetdesk_over(SERVE, &db, data.path()),
        Duration::from_secs(60),
    )
    .await;
    assert!(
        !served.banner.contains(DEMO_BANNER),
        "the demo was loaded into a database that has a tenant"
    );
    let res = served
        .client
        .get("/api/agent/v1/accounts", &agent_key)
        .await;
    assert_eq!(res.status, 200, "{}", String::from_utf8_lossy(&res.body));
    assert_eq!(res.json()["accounts"][0]["code"], "TW-T042");
    stop(&mut served).await;

    // A rule broken deep in the file: the message names where.
    let broken = data.path().join("broken.json");
    std::fs::write(
        &broken,
        TENANT.replace(r#""agent": "runner""#, r#""agent": "nobody""#),
    )
    .expect("write");
    let (status, out, err) = run(apply_cmd(&db, &data, &broken), ONE_SHOT).await;
    assert!(!status.success(), "an invalid file was applied:\n{out}");
    assert!(
        err.contains("organizations[0].workspaces[0].personas[0].agent"),
        "the error does not name the path of the problem:\n{err}"
    );
    assert!(!out.contains("fda_") && !out.contains("fdp_"), "{out}");

    // An unknown field: refused, naming the field and where it is; nothing applied.
    let unknown = data.path().join("unknown.json");
    std::fs::write(
        &unknown,
        TENANT
            .replace("Binary Agency", "Unknown Field Agency")
            .replace(
                r#""name": "runner", "role": "operator""#,
                r#""name": "runner", "colour": "blue", "role": "operator""#,
            ),
    )
    .expect("write");
    let (status, out, err) = run(apply_cmd(&db, &data, &unknown), ONE_SHOT).await;
    assert!(
        !status.success(),
        "a file with an unknown field was applied:\n{out}"
    );
    assert!(!out.contains("fda_") && !out.contains("fdp_"), "{out}");
    assert!(
        err.contains("colour"),
        "the error does not name the unknown field:\n{err}"
    );
    assert!(
        err.contains("organizations[0].workspaces[0].agents[0]"),
        "the error does not name the path of the unknown field \
         (organizations[0].workspaces[0].agents[0]):\n{err}"
    );
}

/// `fleetdesk admin issue-key`: one more key for a member, an agent or a platform admin,
/// printed once; it authenticates as its holder, and nobody else's keys change.
#[tokio::test(flavor = "multi_thread")]
async fn admin_issue_key_gives_a_lost_key_back() {
    use fleetdesk_tenancy::gate::Gatekeeper;
    let db = TestDb::new().await.expect("a test database");
    let data = TempDir::new("issue");
    let file = data.path().join("tenant.json");
    std::fs::write(&file, TENANT).expect("write the tenant file");
    let (status, out, err) = run(apply_cmd(&db, &data, &file), ONE_SHOT).await;
    assert!(status.success(), "apply failed ({status}):\n{out}\n{err}");

    let issue = |args: &[&str]| {
        let mut cmd = fleetdesk_over(&["admin", "issue-key"], &db, data.path());
        cmd.args(args);
        cmd
    };
    let store = fleetdesk_pg::PgStore::new(fleetdesk_pg::connect(&db.url, 2).expect("pool"));
    for (args, who) in [
        (
            &[
                "--organization",
                "Binary Agency",
                "--member",
                "BEA@bin.test",
            ][..],
            "bea@bin.test",
        ),
        (
            &[
                "--organization",
                "Binary Agency",
                "--workspace",
                "Taiwan",
                "--agent",
                "runner",
            ][..],
            "runner",
        ),
        (&["--platform-admin", "ops@bin.test"][..], "ops@bin.test"),
    ] {
        let (status, out, err) = run(issue(args), ONE_SHOT).await;
        assert!(status.success(), "{args:?} ({status}):\n{out}\n{err}");
        let printed: Value = serde_json::from_str(&out).expect("JSON");
        let key = printed["key"].as_str().expect("a key").to_owned();
        assert!(!err.contains(&key), "the key leaked to stderr");
        let parsed = fleetdesk_tenancy::ParsedKey::parse(&key).expect("a key's shape");
        let caller = store.authenticate(&parsed).await.expect("read");
        let holder = match caller.expect("the key authenticates") {
            fleetdesk_tenancy::Caller::Member(m) => m.email,
            fleetdesk_tenancy::Caller::Agent(a) => a.agent_name,
        };
        assert_eq!(holder, who, "{args:?}");
    }
    // Bea now holds three keys; the others two each.
    assert_eq!(
        fleetdesk_tests::count_at(
            &db.url,
            "SELECT count(*) AS n FROM api_keys WHERE revoked_at IS NULL"
        )
        .await,
        3 + 2 + 2
    );
    // Nobody by those names: one line, exit 1, nothing issued.
    for args in [
        &[
            "--organization",
            "Binary Agency",
            "--member",
            "nobody@bin.test",
        ][..],
        &[
            "--organization",
            "Other",
            "--workspace",
            "Taiwan",
            "--agent",
            "runner",
        ][..],
        &["--platform-admin", "bea@bin.test"][..],
    ] {
        let (status, out, err) = run(issue(args), ONE_SHOT).await;
        assert_eq!(status.code(), Some(1), "{args:?}:\n{out}\n{err}");
        assert!(err.contains("no such key holder"), "{args:?}: {err}");
    }
    // One holder at a time, and an agent needs its workspace.
    for args in [
        &["--organization", "Binary Agency"][..],
        &["--organization", "Binary Agency", "--agent", "runner"][..],
        &["--member", "bea@bin.test"][..],
    ] {
        let (status, _, err) = run(issue(args), ONE_SHOT).await;
        assert_eq!(status.code(), Some(2), "{args:?}: {err}");
    }
    assert_eq!(
        fleetdesk_tests::count_at(
            &db.url,
            "SELECT count(*) AS n FROM api_keys WHERE revoked_at IS NULL"
        )
        .await,
        7
    );
}
